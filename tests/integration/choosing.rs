//! Issue 45's choosing rule: `--objective fp-rate=R` (a false-positive
//! budget that scales with the clean sessions) and `--guard interval` (a
//! group vetoes only a loss beyond what its size allows), beside the rules
//! that were there (`per-group`, also named `strict`, and `pooled`).

use crate::util::{run, write};
use std::path::Path;

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap()
}

/// A canonical session of `agent`: one `run` call per entry, each answered.
fn session(id: &str, agent: &str, calls: &[(String, &str, bool)]) -> String {
    let mut s = format!(
        "{{\"type\":\"session\",\"session\":\"{id}\",\"agent\":\"{agent}\"}}\n{{\"type\":\"user\",\"text\":\"fix it\"}}\n"
    );
    for (args, output, error) in calls {
        s.push_str(&format!(
            "{{\"type\":\"turn\"}}\n{{\"type\":\"tool_call\",\"name\":\"run\",\"args\":{{\"cmd\":\"{args}\"}}}}\n\
             {{\"type\":\"tool_result\",\"name\":\"run\",\"output\":\"{output}\",\"error\":{error}}}\n"
        ));
    }
    s
}

/// agent-a: two error-streak loops the baseline (5 identical calls) misses
/// and goose catches. agent-b: three loops of 5 identical calls the baseline
/// catches; goose catches the two whose calls fail alike, not the one that
/// succeeds. Pooled goose is better (4 of 5 against 3);
/// strict, agent-b's lost loop vetoes it; by its interval (2 of 3 is within
/// 3 of 3's [0.44, 1]) it does not.
fn corpus(d: &Path) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let input = d.join("in");
    std::fs::create_dir(&input).unwrap();
    let streak: Vec<(String, &str, bool)> = (0..5)
        .map(|i| {
            (
                format!("npm install --flag{i}"),
                "Error: 403 Forbidden",
                true,
            )
        })
        .collect();
    write(&input, "a1.jsonl", &session("a1", "agent-a", &streak));
    write(&input, "a2.jsonl", &session("a2", "agent-a", &streak));
    let failing = vec![("npm test".to_string(), "Error: 403 Forbidden", true); 5];
    write(&input, "b1.jsonl", &session("b1", "agent-b", &failing));
    write(&input, "b2.jsonl", &session("b2", "agent-b", &failing));
    let same = vec![("cat notes.txt".to_string(), "same notes", false); 5];
    write(&input, "b3.jsonl", &session("b3", "agent-b", &same));
    let varied: Vec<(String, &str, bool)> = (0..7)
        .map(|i| (format!("cat file{i}.txt"), "ok", false))
        .collect();
    write(&input, "c1.jsonl", &session("c1", "agent-a", &varied));
    write(&input, "c2.jsonl", &session("c2", "agent-b", &varied));
    let labels = write(
        d,
        "labels.csv",
        "session,label,onset_turn\na1,loop,1\na2,loop,1\nb1,loop,1\nb2,loop,1\nb3,loop,1\nc1,clean,\nc2,clean,\n",
    );
    let grid = write(
        d,
        "grid.toml",
        "family = \"gemini\"\nprofile = \"gemini-latest\"\nstock_profiles = false\n[axes]\ntool_call_threshold = [5, 6]\n\
         [[extra]]\nprofile = \"goose\"\n",
    );
    (input, labels, grid)
}

fn sweep(d: &Path, out: &str, extra: &[&str]) -> (String, serde_json::Value) {
    let (input, labels, grid) = (d.join("in"), d.join("labels.csv"), d.join("grid.toml"));
    let out = d.join(out);
    let mut args = vec![
        "sweep",
        input.to_str().unwrap(),
        "--labels",
        labels.to_str().unwrap(),
        "--grid",
        grid.to_str().unwrap(),
        "--across-families",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (String::from_utf8(o.stdout).unwrap(), summary(&out))
}

#[test]
fn the_interval_guard_lets_a_loss_within_a_groups_interval_by_and_says_so() {
    let d = tempfile::tempdir().unwrap();
    corpus(d.path());
    let (text, s) = sweep(d.path(), "strict", &["--guard", "strict"]);
    assert_eq!(
        s["guard"], "per-group",
        "strict is the per-group rule's other name"
    );
    assert_eq!(s["recommendation"]["family"], "gemini", "{text}");
    let (text, s) = sweep(d.path(), "interval", &["--guard", "interval"]);
    assert_eq!(s["guard"], "interval");
    assert_eq!(s["recommendation"]["family"], "goose", "{text}");
    let note = s["guard_note"].as_str().unwrap_or_default();
    assert!(
        note.starts_with("the interval guard weighed 1 agent, where goose does worse than the baseline within what the group's size allows: agent-b (2/3 loops against 3, 0/1 false positives against 0)"),
        "{note}\n{text}"
    );
    assert!(text.contains("beyond what its size allows"), "{text}");
    // The record keeps the rule: `report DIR` chooses the same way.
    let out = d.path().join("interval");
    let o = run(&["report", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(summary(&out)["recommendation"]["family"], "goose");
}

#[test]
fn the_fp_rate_objective_is_a_budget_on_the_clean_sessions() {
    let d = tempfile::tempdir().unwrap();
    corpus(d.path());
    let (_, s) = sweep(
        d.path(),
        "r",
        &["--guard", "pooled", "--objective", "fp-rate=0.5"],
    );
    assert_eq!(s["options"]["objective"], "fp-rate=0.5");
    assert_eq!(s["recommendation"]["family"], "goose");
    let (text, _) = sweep(
        d.path(),
        "r0",
        &["--guard", "pooled", "--objective", "fp-rate=0"],
    );
    assert!(
        text.contains("rule: false positives on at most 0 of the labelled clean sessions"),
        "{text}"
    );
    for bad in ["fp-rate=1.5", "fp-rate=x"] {
        let o = run(&[
            "sweep",
            d.path().join("in").to_str().unwrap(),
            "--objective",
            bad,
        ]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("fp-rate=R with R from 0 to 1"), "{err}");
    }
}
