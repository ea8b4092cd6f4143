//! Issue #31, hardening round three: no output may be one of the command's
//! inputs, a hand-edited result is refused on load, inputs are recognised
//! whatever their line shape, and a set is committed whole or not at all.

use crate::util::{looptune, root, write};
use predicates::prelude::*;
use std::path::{Path, PathBuf};

/// A small grid for the tests of this module (written once per test).
fn small_grid(dir: &Path) -> PathBuf {
    write(
        dir,
        "grid.toml",
        "family = \"gemini\"\nstock_profiles = false\n[axes]\ntool_call_threshold = [2, 3, 5]\n[[extra]]\nprofile = \"opencode\"\n[[extra]]\nprofile = \"goose\"\n",
    )
}

/// Sweep the fixtures under `grid` into `out`, with extra arguments.
fn sweep(grid: &Path, out: &Path, extra: &[&str]) -> assert_cmd::assert::Assert {
    looptune()
        .current_dir(root())
        .args([
            "sweep",
            "fixtures/",
            "--labels",
            "fixtures/labels.csv",
            "--quiet",
        ])
        .arg("--grid")
        .arg(grid)
        .arg("--out")
        .arg(out)
        .args(extra)
        .assert()
}

fn refused_unchanged(a: assert_cmd::assert::Assert, file: &Path, before: &[u8]) {
    a.code(2)
        .stderr(predicate::str::contains("refusing to overwrite"))
        .stderr(predicate::str::contains("it is one of the inputs"));
    assert_eq!(
        std::fs::read(file).unwrap(),
        before,
        "{} changed",
        file.display()
    );
}

#[test]
fn no_report_flag_overwrites_the_commands_own_input() {
    let d = tempfile::tempdir().unwrap();
    let grid = small_grid(d.path());
    // replay s.jsonl --markdown s.jsonl (and --junit, and a labels file).
    let s = root().join("fixtures/sessions/loop_identical_read.jsonl");
    let session = d.path().join("s.jsonl");
    std::fs::copy(&s, &session).unwrap();
    let before = std::fs::read(&session).unwrap();
    for flag in ["--markdown", "--junit"] {
        refused_unchanged(
            looptune()
                .arg("replay")
                .arg(&session)
                .arg(flag)
                .arg(&session)
                .assert(),
            &session,
            &before,
        );
    }
    let labels = write(
        d.path(),
        "labels.csv",
        "session,label,onset_turn\ns,clean,\n",
    );
    let lb = std::fs::read(&labels).unwrap();
    refused_unchanged(
        looptune()
            .arg("replay")
            .arg(&session)
            .arg("--labels")
            .arg(&labels)
            .arg("--markdown")
            .arg(&labels)
            .assert(),
        &labels,
        &lb,
    );
    // A link to the input is the input.
    #[cfg(unix)]
    {
        let link = d.path().join("link.md");
        std::os::unix::fs::symlink(&session, &link).unwrap();
        refused_unchanged(
            looptune()
                .arg("replay")
                .arg(&session)
                .arg("--markdown")
                .arg(&link)
                .assert(),
            &session,
            &before,
        );
    }

    // The results read by merge, diff and sweep --baseline.
    let part = d.path().join("part");
    sweep(&grid, &part, &[]).success();
    let summary = part.join("summary.json");
    let sb = std::fs::read(&summary).unwrap();
    refused_unchanged(
        looptune()
            .arg("merge")
            .arg(&part)
            .arg("--out")
            .arg(d.path().join("merged"))
            .arg("--markdown")
            .arg(&summary)
            .assert(),
        &summary,
        &sb,
    );
    assert!(!d.path().join("merged").exists());
    let other = d.path().join("other");
    sweep(&grid, &other, &[]).success();
    for flag in ["--markdown"] {
        refused_unchanged(
            looptune()
                .arg("diff")
                .arg(&part)
                .arg(&other)
                .arg(flag)
                .arg(&summary)
                .assert(),
            &summary,
            &sb,
        );
        refused_unchanged(
            looptune()
                .arg("diff")
                .arg(other.join("summary.json"))
                .arg(&summary)
                .arg(flag)
                .arg(&summary)
                .assert(),
            &summary,
            &sb,
        );
    }
    let tonight = d.path().join("tonight");
    for flag in ["--markdown", "--junit"] {
        refused_unchanged(
            sweep(
                &grid,
                &tonight,
                &[
                    "--baseline",
                    part.to_str().unwrap(),
                    flag,
                    summary.to_str().unwrap(),
                ],
            ),
            &summary,
            &sb,
        );
    }
    assert!(!tonight.exists());
}
