//! A nightly CI job: a labels file that runs ahead of (or behind) the logs,
//! and what `diff` / `sweep --baseline` print when a few verdicts change.

use crate::util::{assert_ok, root, run, write};
use std::path::Path;

fn fixtures() -> String {
    root().join("fixtures").display().to_string()
}

/// The fixtures' labels plus `extra` rows.
fn labels_with(dir: &Path, extra: &str) -> String {
    let text = std::fs::read_to_string(root().join("fixtures/labels.csv")).unwrap();
    write(dir, "labels.csv", &(text + extra))
        .display()
        .to_string()
}

#[test]
fn labels_for_absent_sessions_warn_once_and_are_stored_once() {
    let d = tempfile::tempdir().unwrap();
    // Many more labels than sessions, one of them a typo of a real id.
    let mut extra = String::from("loop_identical_raed,loop,2,\n");
    for i in 0..20_000 {
        extra.push_str(&format!("gone-{i:05},clean,,\n"));
    }
    let labels = labels_with(d.path(), &extra);
    let out = d.path().join("out").display().to_string();
    let r = run(&[
        "sweep",
        "--quiet",
        &fixtures(),
        "--labels",
        &labels,
        "--out",
        &out,
    ]);
    assert_ok(&r);
    let stderr = String::from_utf8_lossy(&r.stderr);
    let warned: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("not in the input"))
        .collect();
    assert_eq!(warned.len(), 1, "{stderr}");
    let w = warned[0];
    assert!(w.contains("names 20001 sessions not in the input"), "{w}");
    assert!(
        w.contains("`loop_identical_raed` (did you mean `loop_identical_read`?)"),
        "{w}"
    );
    assert!(w.contains("and 19991 more"), "{w}");
    // Stored once, in the record: not one entry per id, not twice.
    let summary = std::fs::read_to_string(Path::new(&out).join("summary.json")).unwrap();
    assert_eq!(summary.matches("not in the input").count(), 1);
    assert!(!summary.contains("gone-00011"));
    let v: serde_json::Value = serde_json::from_str(&summary).unwrap();
    assert_eq!(v["labels_file"]["warnings"].as_array().unwrap().len(), 1);
    let html = std::fs::read_to_string(Path::new(&out).join("report.html")).unwrap();
    assert_eq!(html.matches("not in the input").count(), 1);
}

#[test]
fn strict_labels_make_absent_sessions_an_error_and_lenient_does_not_hide_them() {
    let d = tempfile::tempdir().unwrap();
    let labels = labels_with(d.path(), "gone,clean,,\n");
    let out = d.path().join("out");
    let out = out.display().to_string();
    let r = run(&[
        "sweep",
        "--quiet",
        &fixtures(),
        "--labels",
        &labels,
        "--out",
        &out,
        "--strict-labels",
    ]);
    assert_eq!(r.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(
        stderr.contains("names 1 session not in the input: `gone` (--strict-labels)"),
        "{stderr}"
    );
    assert!(!Path::new(&out).exists(), "nothing written");
    // replay takes the same flag.
    let r = run(&[
        "replay",
        &fixtures(),
        "--labels",
        &labels,
        "--strict-labels",
    ]);
    assert_eq!(r.status.code(), Some(2));
    // --lenient is about input lines: the labels warning is the same with or without it.
    let r = run(&["replay", &fixtures(), "--labels", &labels, "--lenient"]);
    assert_ok(&r);
    assert!(String::from_utf8_lossy(&r.stderr).contains("warning: labels file"));
}

#[test]
fn an_onset_past_the_last_turn_is_an_error_naming_file_line_onset_and_last_turn() {
    let d = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("fixtures/labels.csv")).unwrap();
    let line = 1 + text
        .lines()
        .position(|l| l.starts_with("loop_identical_read,"))
        .unwrap();
    let bad = text.replace(
        "loop_identical_read,loop,1,",
        "loop_identical_read,loop,99,",
    );
    let labels = write(d.path(), "labels.csv", &bad).display().to_string();
    let want = format!(
        "{labels}:{line}: field `onset_turn` is 99, past the last turn of session `loop_identical_read` (turn 9)"
    );
    let out = d.path().join("out").display().to_string();
    let fx = fixtures();
    for args in [
        vec!["sweep", "--quiet", "--out", &out],
        vec!["replay"],
        vec!["sweep", "--quiet", "--out", &out, "--lenient"],
    ] {
        let mut args = args.clone();
        args.extend([fx.as_str(), "--labels", &labels]);
        let r = run(&args);
        assert_eq!(r.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert!(stderr.contains(&want), "{args:?}: {stderr}");
    }
}

/// The `looptune sweep` command of the README's "In CI" recipe, as written.
fn readme_ci_command() -> String {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = &readme[readme.find("\n## In CI\n").expect("an In CI section")..];
    let block = &section[section.find("```yaml\n").unwrap() + 8..];
    let block = &block[..block.find("```").unwrap()];
    let start = block
        .find("looptune sweep")
        .expect("a looptune sweep command");
    let mut cmd = String::new();
    for line in block[start..].lines() {
        let line = line.trim();
        match line.strip_suffix('\\') {
            Some(l) => cmd.push_str(l),
            None => {
                cmd.push_str(line);
                break;
            }
        }
    }
    cmd
}

/// Done when: the README's nightly recipe runs unchanged against a labels
/// file that names sessions missing from tonight's logs, and what changed
/// since last night is a summary under 60 lines (and the Markdown under 64 KB).
#[test]
fn the_readme_nightly_recipe_runs_unchanged_on_drifting_labels() {
    let cmd = readme_ci_command();
    assert!(cmd.contains("--baseline last-night"), "{cmd}");
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let logs = dir.join("nightly-logs");
    std::fs::create_dir(&logs).unwrap();
    for e in std::fs::read_dir(root().join("fixtures/sessions")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, logs.join(p.file_name().unwrap())).unwrap();
    }
    // Last night: every session, the fixtures' labels.
    let labels = std::fs::read_to_string(root().join("fixtures/labels.csv")).unwrap();
    write(dir, "labels.csv", &labels);
    let sweep = |args: &[&str]| {
        let mut c = crate::util::process();
        c.current_dir(dir).args(args);
        c.output().unwrap()
    };
    assert_ok(&sweep(&[
        "sweep",
        "nightly-logs",
        "--labels",
        "labels.csv",
        "--out",
        "last-night",
        "--quiet",
    ]));
    // Tonight: one session gone from the logs (its label stays), one
    // relabelled, and labels for sessions that were never in these logs.
    std::fs::remove_file(logs.join("clean_markdown_list.jsonl")).unwrap();
    let tonight = labels.replace(
        "clean_retry_then_fix,clean,,",
        "clean_retry_then_fix,loop,1,",
    ) + "from-another-machine-1,clean,,\nfrom-another-machine-2,loop,4,\n";
    write(dir, "labels.csv", &tonight);
    let bin = std::path::PathBuf::from(env!("CARGO_BIN_EXE_looptune"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let summary = dir.join("step-summary.md");
    let r = std::process::Command::new("sh")
        .arg("-c")
        .arg(&cmd)
        .current_dir(dir)
        .env("PATH", path)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&r.stdout),
        String::from_utf8_lossy(&r.stderr),
    );
    // Gates may trip (exit 1); bad input or usage (2) may not.
    assert!(matches!(r.status.code(), Some(0 | 1)), "{cmd}\n{stderr}");
    assert!(
        stderr.contains("names 3 sessions not in the input"),
        "{stderr}"
    );
    let changes = &stdout[stdout.find("Changes since last-night").expect(&stdout)..];
    let n = changes.lines().count();
    assert!(n < 60, "{n} lines:\n{changes}");
    assert!(changes.contains("gated gemini-latest"), "{changes}");
    assert!(changes.contains("clean_retry_then_fix"), "{changes}");
    assert!(
        changes.contains("1 removed (`clean_markdown_list`)"),
        "{changes}"
    );
    assert!(
        stderr.contains("gate FAIL new_missed_loops==0")
            || stderr.contains("gate ok   new_missed_loops==0"),
        "{stderr}"
    );
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.len() < 64 * 1024);
    assert!(md.contains("what changed since the baseline run"), "{md}");
    assert!(dir.join("report/junit.xml").is_file());
}

/// Last night's run (the fixtures, the default grid) and tonight's (one
/// clean session's log now holds a loop, one session gone), in `dir`.
fn two_nights(dir: &Path, tonight_grid: Option<&str>) -> (String, String) {
    let base = dir.join("base").display().to_string();
    let fx = root().join("fixtures/sessions");
    let fx = fx.to_str().unwrap();
    let labels = std::fs::read_to_string(root().join("fixtures/labels.csv")).unwrap();
    assert_ok(&run(&[
        "sweep",
        "--quiet",
        fx,
        "--labels",
        root().join("fixtures/labels.csv").to_str().unwrap(),
        "--out",
        &base,
    ]));
    let logs = dir.join("logs");
    std::fs::create_dir(&logs).unwrap();
    for e in std::fs::read_dir(fx).unwrap() {
        let p = e.unwrap().path();
        if !p.ends_with("clean_markdown_list.jsonl") {
            std::fs::copy(&p, logs.join(p.file_name().unwrap())).unwrap();
        }
    }
    // The same session, labelled alike, that the detectors now see loop:
    // their own change, unlike a new session or a new label.
    std::fs::copy(
        root().join("fixtures/sessions/loop_identical_read.jsonl"),
        logs.join("clean_retry_then_fix.jsonl"),
    )
    .unwrap();
    let lp = dir.join("tonight.csv").display().to_string();
    std::fs::write(&lp, labels).unwrap();
    let new = dir.join("new").display().to_string();
    let mut args = vec![
        "sweep",
        "--quiet",
        logs.to_str().unwrap(),
        "--labels",
        &lp,
        "--out",
        &new,
    ];
    let grid;
    if let Some(g) = tonight_grid {
        grid = write(dir, "grid.toml", g).display().to_string();
        args.extend(["--grid", &grid]);
    }
    let r = run(&args);
    assert_ok(&r);
    (base, new)
}

/// Rows of a CSV file.
fn csv_count(p: &Path) -> usize {
    csv::Reader::from_path(p).unwrap().records().count()
}

/// The lines of a diff summary that name a configuration.
fn config_lines(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && l.contains("  (c"))
        .collect()
}

#[test]
fn diff_prints_a_summary_first_and_selects_with_limit_config_and_verbose() {
    let d = tempfile::tempdir().unwrap();
    let (base, new) = two_nights(d.path(), None);
    let r = run(&["diff", &base, &new]);
    assert_ok(&r);
    let out = String::from_utf8_lossy(&r.stdout).to_string();
    assert!(out.lines().count() < 60, "{out}");
    assert!(
        out.contains("sessions: 0 added, 1 removed (`clean_markdown_list`)"),
        "{out}"
    );
    let lines = config_lines(&out);
    assert_eq!(lines.len(), 10, "{out}");
    assert!(lines[0].starts_with("  gated gemini-latest  ("), "{out}");
    assert!(out.contains("more changed (--limit N lists more"), "{out}");
    // The gated configuration's sessions, not every configuration's.
    assert_eq!(
        out.matches("sessions whose verdict changed under").count(),
        1,
        "{out}"
    );
    assert!(out.contains("clean_retry_then_fix"), "{out}");

    let r = run(&["diff", &base, &new, "--limit", "3", "--verbose"]);
    assert_ok(&r);
    let out = String::from_utf8_lossy(&r.stdout).to_string();
    assert_eq!(config_lines(&out).len(), 3, "{out}");
    assert_eq!(
        out.matches("sessions whose verdict changed under").count(),
        3,
        "{out}"
    );

    // --config: the one configuration listed, and the one the gates check.
    let id = "c4fe1a95896";
    let r = run(&[
        "diff",
        &base,
        &new,
        "--config",
        id,
        "--require",
        "changed_verdicts==0",
    ]);
    assert_eq!(r.status.code(), Some(1));
    let out = String::from_utf8_lossy(&r.stdout).to_string();
    let lines = config_lines(&out);
    assert_eq!(lines.len(), 1, "{out}");
    assert!(lines[0].contains(id), "{out}");
    assert!(String::from_utf8_lossy(&r.stderr).contains(&format!("configuration {id} ")));
    let r = run(&["diff", &base, &new, "--config", "nope"]);
    assert_eq!(r.status.code(), Some(2));

    // Markdown: the same shape, under 64 KB even when everything is asked for.
    let md = d.path().join("diff.md");
    // (Its stdout is long: read as it comes.)
    let r = crate::util::process()
        .args([
            "diff",
            &base,
            &new,
            "--limit",
            "0",
            "--verbose",
            "--markdown",
        ])
        .arg(&md)
        .output()
        .unwrap();
    assert_ok(&r);
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.len() < 64 * 1024, "{}", text.len());
    assert!(text.contains("| **gated** gemini\\-latest |"), "{text}");
    assert!(text.contains("more"), "something was left out to fit");
}

#[test]
fn runs_of_different_grids_are_counted_apart_with_a_warning() {
    let d = tempfile::tempdir().unwrap();
    let grid = "family = \"gemini\"\nprofile = \"gemini-latest\"\n[axes]\ntool_call_threshold = [2, 3, 99]\n";
    let (base, new) = two_nights(d.path(), Some(grid));
    let r = run(&["diff", &base, &new]);
    assert_ok(&r);
    let out = String::from_utf8_lossy(&r.stdout).to_string();
    let err = String::from_utf8_lossy(&r.stderr).to_string();
    let (b, n) = (
        csv_count(&Path::new(&base).join("sweep.csv")),
        csv_count(&Path::new(&new).join("sweep.csv")),
    );
    let line = out
        .lines()
        .find(|l| l.starts_with("configurations: "))
        .unwrap();
    let common: usize = line["configurations: ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(common > 0 && common < n, "{line}");
    assert_eq!(
        line,
        format!(
            "configurations: {common} in common; {} only in one run ({} in the base run, {} in the new run)",
            b + n - 2 * common,
            b - common,
            n - common
        )
    );
    assert!(
        out.contains(&format!(" of {common} configurations in both runs changed")),
        "{out}"
    );
    assert!(
        err.contains("warning: the two runs come from different grids"),
        "{err}"
    );
}

#[test]
fn json_prints_one_object_for_sweep_merge_and_diff() {
    let d = tempfile::tempdir().unwrap();
    let (base, new) = two_nights(d.path(), None);
    let one = |args: &[&str]| -> (serde_json::Value, Option<i32>) {
        let r = crate::util::process().args(args).output().unwrap();
        let text = String::from_utf8_lossy(&r.stdout).to_string();
        assert_eq!(text.lines().count(), 1, "one line: {text}");
        (serde_json::from_str(&text).unwrap(), r.status.code())
    };
    // diff: what changed, the gated configuration, the gates and their verdicts.
    let (v, code) = one(&[
        "diff",
        &base,
        &new,
        "--json",
        "--require",
        "new_false_positives==0",
    ]);
    assert_eq!(code, Some(1));
    assert_eq!(v["exit_code"], 1);
    assert_eq!(v["sessions_removed"][0], "clean_markdown_list");
    assert_eq!(v["gated"], v["listed"][0]["config"]);
    assert_eq!(v["gates"][0]["gate"], "new_false_positives==0");
    assert_eq!(v["gates"][0]["passed"], false);
    assert_eq!(
        v["gates"][0]["value"],
        v["listed"][0]["new_false_positives"]
    );
    // sweep --baseline: baseline, recommendation, gates, and the diff.
    let out = d.path().join("again").display().to_string();
    let logs = d.path().join("logs").display().to_string();
    let labels = d.path().join("tonight.csv").display().to_string();
    let (v, code) = one(&[
        "sweep",
        "--quiet",
        &logs,
        "--labels",
        &labels,
        "--out",
        &out,
        "--baseline",
        &base,
        "--json",
        "--require",
        "recall>=0",
        "--require",
        "new_false_positives==0",
    ]);
    assert_eq!(code, Some(1));
    assert_eq!(v["baseline"]["label"], "gemini-latest");
    assert!(v["baseline"]["scores"]["recall"].is_number());
    assert!(v["recommendation"].is_object() || v["recommendation_reason"].is_string());
    assert_eq!(v["gates"][0]["passed"], true);
    assert_eq!(v["diff"]["gates"][0]["passed"], false);
    assert_eq!(v["exit_code"], 1);
    // merge: the same object as the sweep's, of the merged result.
    let merged = d.path().join("merged").display().to_string();
    let (v, code) = one(&["merge", &new, "--out", &merged, "--json"]);
    assert_eq!(code, Some(0));
    assert_eq!(v["sessions"], 15);
    assert_eq!(v["exit_code"], 0);
    assert!(v["written"].as_array().unwrap().len() >= 4);
}

#[test]
fn a_dash_output_is_standard_output_not_a_file_named_dash() {
    let d = tempfile::tempdir().unwrap();
    let one = root().join("fixtures/sessions/loop_identical_read.jsonl");
    let r = crate::util::process()
        .current_dir(d.path())
        .args(["import", one.to_str().unwrap(), "-o", "-"])
        .output()
        .unwrap();
    assert_ok(&r);
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(
        out.starts_with("{\"type\":\"session\",\"session\":\"loop_identical_read\""),
        "{out}"
    );
    assert!(String::from_utf8_lossy(&r.stderr).contains("to standard output"));
    // --junit - and --markdown - the same.
    let r = crate::util::process()
        .current_dir(d.path())
        .args(["replay", &fixtures(), "--labels"])
        .arg(root().join("fixtures/labels.csv"))
        .args(["--junit", "-", "--markdown", "-"])
        .output()
        .unwrap();
    assert_ok(&r);
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(
        out.contains("<testsuites") && out.contains("## looptune: replay"),
        "{out}"
    );
    assert!(!d.path().join("-").exists(), "no file named `-`");
}

#[test]
fn man_out_dir_writes_every_page_the_top_page_names() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("man1");
    let r = run(&["man", "--out-dir", dir.to_str().unwrap()]);
    assert_ok(&r);
    let top = std::fs::read_to_string(dir.join("looptune.1")).unwrap();
    let mut named = 0;
    for sub in [
        "replay",
        "sweep",
        "diff",
        "merge",
        "import",
        "label",
        "report",
        "detectors",
    ] {
        assert!(top.contains(&format!("looptune\\-{sub}(1)")), "{sub}");
        let page = std::fs::read_to_string(dir.join(format!("looptune-{sub}.1"))).unwrap();
        assert!(page.starts_with(".ie") || page.contains(".TH"), "{sub}");
        named += 1;
    }
    assert_eq!(named, 8);
    assert!(
        !dir.join("looptune-synth.1").exists(),
        "hidden commands have no page"
    );
}

/// The README's CI recipe (`sweep --baseline --config --require ...
/// --markdown --junit`) over the nights given: `(logs, labels, config)`;
/// returns each night's exit code, Markdown and JUnit.
fn nights(dir: &Path, runs: &[(&Path, &str, &str)]) -> Vec<(i32, String, String)> {
    let mut last: Option<std::path::PathBuf> = None;
    let mut seen = Vec::new();
    for (i, (logs, labels, config)) in runs.iter().enumerate() {
        let out = dir.join(format!("night-{i}"));
        let (md, xml) = (dir.join(format!("{i}.md")), dir.join(format!("{i}.xml")));
        let mut args: Vec<String> = [
            "sweep",
            "-q",
            &logs.display().to_string(),
            "--labels",
            labels,
            "--out",
            &out.display().to_string(),
            "--config",
            config,
            "--markdown",
            &md.display().to_string(),
            "--junit",
            &xml.display().to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // The first night has nothing to compare with.
        if let Some(l) = &last {
            args.extend(
                [
                    "--baseline",
                    &l.display().to_string(),
                    "--require",
                    "new_missed_loops==0",
                    "--require",
                    "new_false_positives==0",
                ]
                .map(String::from),
            );
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = run(&args);
        let code = r.status.code().unwrap();
        assert!(code <= 1, "{}", String::from_utf8_lossy(&r.stderr));
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        // Markdown escapes punctuation: compared as a reader sees it.
        seen.push((code, read(&md).replace('\\', ""), read(&xml)));
        last = Some(out);
    }
    seen
}

/// The fixtures without `left_out`, as a folder of `dir`.
fn logs_without(dir: &Path, left_out: &[&str]) -> std::path::PathBuf {
    let to = dir.join("logs-first");
    std::fs::create_dir_all(&to).unwrap();
    for e in std::fs::read_dir(root().join("fixtures/sessions")).unwrap() {
        let p = e.unwrap().path();
        let stem = p.file_stem().unwrap().to_str().unwrap().to_string();
        if !left_out.contains(&stem.as_str()) {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
    to
}

#[test]
fn new_sessions_and_new_labels_are_no_regression_and_a_worse_setting_is() {
    let d = tempfile::tempdir().unwrap();
    // gemini-latest misses the first and fires on the second: both arrive
    // on the second night, with labels that already named them.
    let first = logs_without(
        d.path(),
        &["loop_varied_args_same_error", "clean_polling_process"],
    );
    let all = root().join("fixtures/sessions");
    let labels = root().join("fixtures/labels.csv").display().to_string();
    // The third night relabels a clean session that gemini-latest is quiet on.
    let relabelled = d.path().join("relabelled.csv").display().to_string();
    let text = std::fs::read_to_string(&labels).unwrap().replace(
        "clean_markdown_table,clean,,",
        "clean_markdown_table,loop,1,",
    );
    std::fs::write(&relabelled, text).unwrap();
    let ran = nights(
        d.path(),
        &[
            (&first, &labels, "gemini-latest"),
            (&all, &labels, "gemini-latest"),
            (&all, &relabelled, "gemini-latest"),
            // A worse setting shipped: it misses loops the last one caught.
            (&all, &relabelled, "gemini-latest tool_call_threshold=10"),
        ],
    );
    for (night, (code, md, xml)) in ran.iter().enumerate().take(3).skip(1) {
        assert_eq!(*code, 0, "night {night}:\n{md}\n{xml}");
        assert!(xml.contains("failures=\"0\""), "night {night}: {xml}");
        assert!(!xml.contains("<failure"), "night {night}: {xml}");
    }
    let (_, md, xml) = &ran[1];
    assert!(md.contains("✅ new_missed_loops==0: 0 (met)"), "{md}");
    assert!(md.contains("2 added"), "{md}");
    assert!(xml.contains("name=\"new_missed_loops==0\""), "{xml}");
    let (_, md, _) = &ran[2];
    assert!(md.contains("1 relabelled"), "{md}");
    assert!(md.contains("changed only through the sessions"), "{md}");
    let (code, md, xml) = &ran[3];
    assert_eq!(*code, 1, "{md}");
    assert!(md.contains("❌ new_missed_loops==0"), "{md}");
    assert!(
        md.contains("compared with the base run's gated gemini-latest"),
        "{md}"
    );
    assert!(
        xml.contains("<failure message=\"new_missed_loops==0"),
        "{xml}"
    );
    // One case per gate: no per-session cases unless asked for.
    assert_eq!(xml.matches("<testcase").count(), 2, "{xml}");
}

#[test]
fn junit_lists_sessions_only_when_asked() {
    let d = tempfile::tempdir().unwrap();
    let labels = root().join("fixtures/labels.csv").display().to_string();
    let xml = d.path().join("j.xml");
    let base = [
        "replay",
        "-q",
        &fixtures(),
        "--labels",
        &labels,
        "--profile",
        "gemini-latest",
        "--junit",
    ]
    .map(String::from)
    .to_vec();
    let mut plain = base.clone();
    plain.push(xml.display().to_string());
    let r = run(&plain.iter().map(String::as_str).collect::<Vec<_>>());
    assert_ok(&r);
    let text = std::fs::read_to_string(&xml).unwrap();
    assert_eq!(text.matches("<testcase").count(), 1, "{text}");
    assert!(!text.contains("<failure"), "{text}");
    let mut with = plain.clone();
    with.push("--junit-sessions".into());
    let r = run(&with.iter().map(String::as_str).collect::<Vec<_>>());
    assert_ok(&r);
    let text = std::fs::read_to_string(&xml).unwrap();
    assert_eq!(text.matches("<testcase").count(), 15, "{text}");
    assert!(text.contains("missed a loop"), "{text}");
}
