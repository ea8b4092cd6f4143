//! The report as a person sees it: the fixture sweep's report.html opened in
//! headless Chromium (tests/browser/check_report.sh): no console error, no
//! network request, every chart kind drawn, the script payloads of
//! `loop_with_script_payload` shown as text and not run; a screenshot is saved.
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

#[test]
fn fixture_report_renders_in_headless_chromium() {
    let browser =
        have("chromium") || have("chromium-browser") || std::env::var_os("CHROMIUM").is_some();
    if !browser || !have("node") {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the browser test: install Debian's chromium (see .ci/run) and node"
        );
        crate::util::skipped("no chromium or node on this machine (apt-get install -y chromium)");
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
    let check = Command::new("bash")
        .arg(root.join("tests/browser/check_report.sh"))
        .arg(&dir)
        .output()
        .unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(check.status.success(), "browser check failed:\n{log}");
    let png = std::fs::metadata(dir.join("report.png")).expect("a screenshot was saved");
    assert!(png.len() > 10_000, "the screenshot is not empty");
}
