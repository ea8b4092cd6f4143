//! A session's file, source and split come from the file it was read from,
//! whatever the walk skipped before it, and a `--test` path inside an input
//! path makes its sessions test sessions, read once.

use crate::util::{root, run};
use std::collections::BTreeMap;
use std::path::Path;

/// Copy the named fixture sessions into `dir`.
fn copy(dir: &Path, names: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    for n in names {
        let from = root().join("fixtures/sessions").join(n);
        std::fs::copy(from, dir.join(n)).unwrap();
    }
}

/// Each session's groups, by id, from a sweep's `summary.json`.
fn groups(out: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let g = s["groups"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                .collect();
            (s["id"].as_str().unwrap().to_string(), g)
        })
        .collect()
}

fn sweep(args: &[&str], out: &Path) {
    let labels = root().join("fixtures/labels.csv");
    let mut all: Vec<&str> = vec!["sweep", "-q", "--labels", labels.to_str().unwrap()];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", out.to_str().unwrap()]);
    let o = run(&all);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

const A: [&str; 2] = [
    "loop_identical_read.jsonl",
    "clean_batch_reads_20_files.jsonl",
];
const B: [&str; 2] = ["loop_chanting_stream.jsonl", "clean_markdown_list.jsonl"];

#[test]
fn a_skipped_file_shifts_no_session_into_another_folder_or_split() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    copy(&a, &A);
    copy(&b, &B);
    // Walked first, and skipped: no reader takes it.
    std::fs::write(a.join("0manifest.json"), r#"{"name":"manifest"}"#).unwrap();
    let out = d.path().join("out");
    sweep(
        &[
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            &format!("--test={}", b.display()),
        ],
        &out,
    );
    let g = groups(&out);
    assert_eq!(g.len(), 4, "{g:?}");
    for (names, source, split) in [(&A, "a", "train"), (&B, "b", "test")] {
        for n in names.iter() {
            let id = n.trim_end_matches(".jsonl");
            assert_eq!(g[id]["source"], source, "{id}: {g:?}");
            assert_eq!(g[id]["split"], split, "{id}: {g:?}");
        }
    }
}

#[test]
fn a_test_path_inside_an_input_path_is_read_once_as_test() {
    let d = tempfile::tempdir().unwrap();
    let logs = d.path().join("logs");
    copy(&logs.join("a"), &A);
    copy(&logs.join("b"), &B);
    let out = d.path().join("out");
    let test = logs.join("b");
    sweep(
        &[
            logs.to_str().unwrap(),
            &format!("--test={}", test.display()),
        ],
        &out,
    );
    let g = groups(&out);
    // Four sessions, under their own ids: nothing read twice.
    assert_eq!(
        g.keys().cloned().collect::<Vec<_>>(),
        [&A[..], &B[..]]
            .concat()
            .iter()
            .map(|n| n.trim_end_matches(".jsonl").to_string())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
    );
    for n in B {
        assert_eq!(g[n.trim_end_matches(".jsonl")]["split"], "test", "{g:?}");
    }
    for n in A {
        let id = n.trim_end_matches(".jsonl");
        assert_eq!(g[id]["split"], "train", "{g:?}");
        assert_eq!(g[id]["source"], "a", "{g:?}");
    }
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(v["test"]["sessions"], 2, "{}", v["test"]);
}

#[test]
fn allow_empty_accepts_an_empty_folder_and_an_empty_file() {
    let d = tempfile::tempdir().unwrap();
    let (empty, one) = (d.path().join("empty"), d.path().join("one"));
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::create_dir_all(&one).unwrap();
    std::fs::write(one.join("x.jsonl"), "").unwrap();
    for input in [&empty, &one] {
        let out = d.path().join("out");
        let args = [
            "sweep",
            "-q",
            input.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        let o = run(&[&args[..], &["--allow-empty"]].concat());
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(out.join("groups.csv").is_file());
        // Without it: exit 2 and why.
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2));
        assert!(
            String::from_utf8_lossy(&o.stderr)
                .contains("(pass --allow-empty to accept an empty input)"),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn a_free_text_column_is_no_group_key() {
    let d = tempfile::tempdir().unwrap();
    let labels = root().join("fixtures/labels.csv");
    let out = d.path().join("out");
    let o = run(&[
        "sweep",
        "-q",
        root().join("fixtures").to_str().unwrap(),
        "--labels",
        labels.to_str().unwrap(),
        "--group-by",
        "note",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--group-by `note`: no session can have this key"),
        "{err}"
    );
    assert!(!err.contains("`note`,"), "{err}");
}

#[test]
fn a_report_file_in_a_missing_folder_is_refused_before_any_work() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("afile"), "").unwrap();
    let fixtures = root().join("fixtures");
    for (target, why) in [
        (d.path().join("no/such/x.md"), "does not exist"),
        (d.path().join("afile/x.md"), "is not a folder"),
    ] {
        for flag in ["--markdown", "--junit"] {
            let o = run(&[
                "replay",
                "-q",
                fixtures.to_str().unwrap(),
                flag,
                target.to_str().unwrap(),
            ]);
            assert_eq!(o.status.code(), Some(2), "{flag} {}", target.display());
            let err = String::from_utf8_lossy(&o.stderr);
            let folder = target.parent().unwrap().display().to_string();
            assert!(
                err.contains(&format!(
                    "cannot write {}: {folder} {why}",
                    target.display()
                )),
                "{err}"
            );
        }
    }
    assert!(!d.path().join("no").exists(), "no folder is made");
}
