//! The report as a person sees it: the fixture sweep's report.html opened in
//! headless Chromium (tests/browser/check_report.sh): no console error, no
//! network request, every chart kind drawn, the script payloads of
//! `loop_with_script_payload` shown as text and not run; a screenshot is saved.
//! The sections after the recommendation are folded: the folded page of the
//! corpus report is under 25 screens of 900 px, and unfolded nothing is lost
//! (every section there, every chart drawn).
//!
//! Chromium comes from Debian's `chromium` package (.ci/run installs it). On a
//! machine without it the test says so and passes, except under CI (`CI` set),
//! where a missing browser is a failure.

use std::process::Command;

fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Chromium and node are there (else the test says it is skipped, and CI fails).
fn browser_ready() -> bool {
    let browser =
        have("chromium") || have("chromium-browser") || std::env::var_os("CHROMIUM").is_some();
    if !browser || !have("node") {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the browser test: install Debian's chromium (see .ci/run) and node"
        );
        crate::util::skipped("no chromium or node on this machine (apt-get install -y chromium)");
        return false;
    }
    true
}

/// The folded page's bound: 25 screens of 900 px.
const MAX_FOLDED_PX: &str = "22500";

/// Run the browser check on `dir`; its log.
fn check(dir: &std::path::Path) -> String {
    let check = Command::new("bash")
        .arg(crate::util::root().join("tests/browser/check_report.sh"))
        .arg(dir)
        .env("MAX_FOLDED_PX", MAX_FOLDED_PX)
        .output()
        .unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(check.status.success(), "browser check failed:\n{log}");
    assert!(log.contains("folded: "), "{log}");
    log
}

#[test]
fn corpus_report_folds_under_25_screens_and_loses_nothing_unfolded() {
    if !browser_ready() {
        return;
    }
    let Some(corpus) = crate::util::shared_corpus() else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("sweep");
    // A small grid over the whole corpus (two axes, so every chart kind is
    // drawn, and every stock profile): the folded page is the decision and
    // the headings, whatever the grid's size.
    let grid = crate::util::write(
        out.path(),
        "grid.toml",
        "family = \"gemini\"\nprofile = \"gemini-latest\"\n[axes]\ntool_call_threshold = [3, 4]\ncontent_loop_threshold = [5, 10]\n",
    );
    let status = Command::new(env!("CARGO_BIN_EXE_looptune"))
        .arg("sweep")
        .arg(&corpus)
        .arg("--labels")
        .arg(corpus.join("labels.csv"))
        .args(["--lenient", "--combine", "2", "--quiet", "--grid"])
        .arg(&grid)
        .arg("--out")
        .arg(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0), "the corpus sweep succeeds");
    check(&dir);
}

#[test]
fn fixture_report_renders_in_headless_chromium() {
    if !browser_ready() {
        return;
    }
    let root = crate::util::root();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("sweep");
    let status = Command::new(env!("CARGO_BIN_EXE_looptune"))
        .current_dir(&root)
        .args([
            "sweep",
            "fixtures/",
            "--labels",
            "fixtures/labels.csv",
            "--quiet",
            "--out",
        ])
        .arg(&dir)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0), "the fixture sweep succeeds");
    check(&dir);
    let png = std::fs::metadata(dir.join("report.png")).expect("a screenshot was saved");
    assert!(png.len() > 10_000, "the screenshot is not empty");
}
