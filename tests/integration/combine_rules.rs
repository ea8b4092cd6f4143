//! `sweep --combine-rules`: the combined looptune configuration, its path of
//! additions, and its validation (issue 45 item 2).

use crate::util::{root, run, write};
use std::path::Path;

/// A small grid: the baseline's family and three looptune rules' axes.
const GRID: &str = "name = \"t\"\nstock_profiles = false\n\
[[grid]]\nprofile = \"gemini-latest\"\n[grid.axes]\ntool_call_threshold = [4, 5]\n\
[[grid]]\nprofile = \"looptune-default\"\n[grid.axes]\nrepeat_stop = [0, 3, 4]\n\
[[grid]]\nprofile = \"looptune-default\"\n[grid.axes]\nstall_stop = [3, 4]\n\
[[grid]]\nprofile = \"looptune-default\"\n[grid.axes]\nerror_stop = [0, 3]\n";

fn sweep(grid: &Path, out: &Path, extra: &[&str]) -> String {
    let fixtures = root().join("fixtures");
    sweep_on(&fixtures, &fixtures.join("labels.csv"), grid, out, extra)
}

fn sweep_on(logs: &Path, labels: &Path, grid: &Path, out: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "sweep",
        logs.to_str().unwrap(),
        "--labels",
        labels.to_str().unwrap(),
        "--grid",
        grid.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// `a/b loops ... c/d false positives` of a line of the block.
fn counts(line: &str) -> (u64, u64) {
    let num = |s: &str| s.split('/').next().unwrap().parse::<u64>().unwrap();
    let words: Vec<&str> = line.split_whitespace().collect();
    let tp = words.iter().position(|w| *w == "loops").unwrap() - 1;
    let fp = words
        .iter()
        .position(|w| w.starts_with("positives"))
        .unwrap()
        - 2;
    (num(words[tp]), num(words[fp]))
}

#[test]
fn the_combined_configuration_is_one_looptune_configuration_a_sweep_scores_alike() {
    let d = tempfile::tempdir().unwrap();
    let grid = write(d.path(), "grid.toml", GRID);
    let text = sweep(&grid, &d.path().join("a"), &["--combine-rules"]);
    let block = &text[text
        .find("Combined looptune configuration")
        .unwrap_or_else(|| panic!("{text}"))..];
    let lines: Vec<&str> = block.lines().collect();
    let label = lines[1].trim();
    assert!(label.starts_with("looptune-default"), "{block}");
    // The path, one addition a line, spells the label.
    let path: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.trim().split_once(". + ").map(|(_, s)| s))
        .collect();
    assert!(!path.is_empty(), "{block}");
    assert_eq!(
        label,
        std::iter::once("looptune-default")
            .chain(path.iter().copied())
            .collect::<Vec<_>>()
            .join(" + ")
    );
    // Each addition is one of the grid's settings, each parameter once.
    let keys: Vec<&str> = path.iter().map(|s| s.split('=').next().unwrap()).collect();
    for k in &keys {
        assert!(
            ["repeat_stop", "stall_stop", "error_stop"].contains(k),
            "{block}"
        );
        assert_eq!(keys.iter().filter(|x| *x == k).count(), 1, "{block}");
    }
    assert!(block.contains("-fold:"), "{block}");
    assert!(block.contains("out of agent:"), "{block}");
    assert!(block.contains("codex          caught"), "{block}");
    let in_sample = lines.iter().find(|l| l.contains("in sample:")).unwrap();
    let (tp, fp) = counts(in_sample);
    // The same configuration as a grid's [[extra]], replayed by the sweep
    // itself, has the same counts: the search's replay is the sweep's.
    let set: Vec<String> = path.iter().map(|s| s.replace('=', " = ")).collect();
    let again = write(
        d.path(),
        "again.toml",
        &format!(
            "name = \"again\"\nstock_profiles = false\n[[grid]]\nprofile = \"gemini-latest\"\n[grid.axes]\ntool_call_threshold = [5]\n\
             [[extra]]\nprofile = \"looptune-default\"\nset = {{ {} }}\n",
            set.join(", ")
        ),
    );
    let out = d.path().join("b");
    sweep(&again, &out, &[]);
    let mut r = csv::Reader::from_path(out.join("sweep.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|x| x == name).unwrap();
    let row = r
        .records()
        .map(Result::unwrap)
        .find(|rec| rec[col("family")] == *"looptune")
        .unwrap();
    assert_eq!(
        (
            row[col("true_positives")].parse::<u64>().unwrap(),
            row[col("false_positives")].parse::<u64>().unwrap()
        ),
        (tp, fp),
        "{block}"
    );
    // Without the flag, no search and no block.
    let plain = sweep(&grid, &d.path().join("c"), &[]);
    assert!(!plain.contains("Combined looptune configuration"));
}

/// A session of tool calls, one a turn: `(tool, path, content)`.
fn calls(calls: &[(&str, &str, &str)]) -> String {
    let mut s = String::from(
        "{\"type\":\"session\",\"agent\":\"gemini-cli\",\"model\":\"m\"}\n{\"type\":\"user\",\"text\":\"do it\"}\n",
    );
    for (i, (tool, path, content)) in calls.iter().enumerate() {
        let args = if content.is_empty() {
            serde_json::json!({ "file_path": path })
        } else {
            serde_json::json!({ "file_path": path, "content": content })
        };
        s.push_str("{\"type\":\"turn\"}\n");
        s.push_str(&format!(
            "{}\n{}\n",
            serde_json::json!({"type": "tool_call", "name": tool, "args": args, "id": format!("c{i}")}),
            serde_json::json!({"type": "tool_result", "name": tool, "id": format!("c{i}"), "output": format!("ok {i}"), "error": false}),
        ));
    }
    s
}

/// Two kinds of loop, each caught by one setting the default lacks: a file
/// rewritten with new content (`target_stop=4`), and four identical searches
/// (`repeat_stop=4`). Only both settings together catch every loop, a
/// configuration no row of the grid holds.
fn two_kinds(dir: &Path) -> std::path::PathBuf {
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let rewrite: Vec<(&str, &str, &str)> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|c| ("write_file", "solution.sh", *c))
        .collect();
    let reads = vec![("grep", "main.rs", ""); 4];
    let batch: Vec<(&str, &str, &str)> = ["a.rs", "b.rs", "c.rs", "d.rs", "e.rs"]
        .iter()
        .map(|p| ("write_file", *p, "x"))
        .collect();
    let mut labels = String::from("session,label,onset_turn,note\n");
    for i in 0..2 {
        write(&logs, &format!("rewrite{i}.jsonl"), &calls(&rewrite));
        write(&logs, &format!("reads{i}.jsonl"), &calls(&reads));
        labels.push_str(&format!("rewrite{i},loop,1,\nreads{i},loop,1,\n"));
    }
    for i in 0..3 {
        write(&logs, &format!("batch{i}.jsonl"), &calls(&batch));
        labels.push_str(&format!("batch{i},clean,,\n"));
    }
    write(dir, "labels.csv", &labels);
    logs
}

/// The combined configuration is a row of the sweep's own outputs (labelled
/// with its path), a candidate of `--across-families`, exportable, and the
/// record says which row the search added and what the search chose in each
/// fold, which the recommendation's folds offer in the row's place.
#[test]
fn the_combined_configuration_is_a_row_of_the_outputs_and_a_candidate() {
    let d = tempfile::tempdir().unwrap();
    let logs = two_kinds(d.path());
    let grid = write(
        d.path(),
        "grid.toml",
        "name = \"t\"\nstock_profiles = false\n\
[[grid]]\nprofile = \"gemini-latest\"\n[grid.axes]\ntool_call_threshold = [5]\n\
[[grid]]\nprofile = \"looptune-default\"\n[grid.axes]\nrepeat_stop = [4, 5]\n\
[[grid]]\nprofile = \"looptune-default\"\n[grid.axes]\ntarget_stop = [0, 4]\n",
    );
    let out = d.path().join("a");
    let text = sweep_on(
        &logs,
        &d.path().join("labels.csv"),
        &grid,
        &out,
        &["--combine-rules", "--across-families"],
    );
    let block = &text[text
        .find("Combined looptune configuration")
        .unwrap_or_else(|| panic!("{text}"))..];
    let label = block.lines().nth(1).unwrap().trim().to_string();
    let row_line = block
        .lines()
        .find(|l| l.trim_start().starts_with("row c"))
        .unwrap_or_else(|| panic!("{block}"));
    let id = row_line.split_whitespace().nth(1).unwrap().to_string();
    let mut r = csv::Reader::from_path(out.join("sweep.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|x| x == name).unwrap();
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    let row = rows
        .iter()
        .find(|rec| rec[col("config")] == *id)
        .unwrap_or_else(|| panic!("no row {id} in sweep.csv\n{block}"));
    assert_eq!(row[col("family")], *"looptune");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    // Two settings: no configuration of the grid. Its row carries the path
    // as its label, and the record names it.
    let mut path: Vec<&str> = label.split(" + ").collect();
    path.sort_unstable();
    assert_eq!(
        path,
        ["looptune-default", "repeat_stop=4", "target_stop=4"],
        "{block}"
    );
    assert!(row_line.contains("added to the grid"), "{block}");
    assert_eq!(row[col("label")], *label, "{block}");
    assert_eq!(summary["options"]["combined"], *id);
    // It catches all four loops, so across families it is the choice.
    assert_eq!(row[col("true_positives")], *"4", "{block}");
    assert!(
        text.contains(&format!("({id})")),
        "the recommendation is not the combined row:\n{text}"
    );
    // Searched on every labelled session, the row itself is no fold's
    // choice: each fold offers in its place the search re-run on the fold's
    // own sessions, which the record keeps (one per fold, then one per
    // group left out), under the row's id.
    let recorded = summary["options"]["combined_folds"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", summary["options"]));
    let k = summary["recommendation"]["cross_validation"]["folds"]
        .as_u64()
        .unwrap() as usize;
    assert!(k >= 2 && recorded.len() >= k, "{recorded:?}");
    for f in recorded {
        let seen = f["seen"].as_str().unwrap();
        assert_eq!(seen.len(), 7, "{f}");
        assert!(seen.contains('0') && seen.contains('1'), "{f}");
        assert_eq!(f["turns"].as_array().unwrap().len(), 7, "{f}");
    }
    // Each fold's search catches both kinds on its own sessions, so every
    // fold chooses it, and the held-out loops are caught.
    let cv = &summary["recommendation"]["cross_validation"];
    let chosen = cv["chosen"].as_object().unwrap_or_else(|| panic!("{cv}"));
    assert_eq!(chosen.keys().collect::<Vec<_>>(), [&id], "{cv}");
    assert_eq!(cv["true_positives"], 4, "{cv}");
    // Named as what it is there, not by the row's path.
    let there = "the --combine-rules search, re-run without the held-out sessions";
    assert!(
        text.contains(&format!("chosen in {k} of {k} folds: {there}")),
        "{text}"
    );
    // The report re-renders from the saved result, the row in it.
    let o = run(&["report", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains(&id), "report.html has no row {id}");
    assert!(html.contains(&format!("folds: {there}")), "report.html");
    // `export` rebuilds it from the grid the record keeps.
    let o = run(&["export", out.to_str().unwrap(), &id, "--for", "looptune"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let toml = String::from_utf8(o.stdout).unwrap();
    for step in label.split(" + ").skip(1) {
        let (k, v) = step.split_once('=').unwrap();
        assert!(
            toml.contains(&format!("{k} = {v}")),
            "{step} not in\n{toml}"
        );
    }
}
