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
