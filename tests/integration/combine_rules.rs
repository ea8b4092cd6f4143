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
    let labels = fixtures.join("labels.csv");
    let mut args = vec![
        "sweep",
        fixtures.to_str().unwrap(),
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
