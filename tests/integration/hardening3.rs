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
fn sweep_cmd(grid: &Path, out: &Path, extra: &[&str]) -> assert_cmd::Command {
    let mut c = looptune();
    c.current_dir(root())
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
        .args(extra);
    c
}

fn sweep(grid: &Path, out: &Path, extra: &[&str]) -> assert_cmd::assert::Assert {
    sweep_cmd(grid, out, extra).assert()
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
    let flag = "--markdown";
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

/// A copy of the result in `from`, its `summary.json` changed by `edit`, in `to`.
fn tampered(from: &Path, to: &Path, edit: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    std::fs::create_dir_all(to).unwrap();
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(from.join("summary.json")).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(to.join("summary.json"), serde_json::to_vec(&v).unwrap()).unwrap();
    to.to_path_buf()
}

/// `report`, `diff` and `merge` of a tampered result: exit 2 naming the
/// file and what is wrong, never a panic, nothing written.
fn refused_everywhere(good: &Path, bad: &Path, why: &str) {
    let file = bad.join("summary.json");
    let named = |a: assert_cmd::assert::Assert| {
        a.code(2)
            .stderr(predicate::str::contains(file.display().to_string()))
            .stderr(predicate::str::contains(why))
            .stderr(predicate::str::contains("panicked").not());
    };
    named(looptune().arg("report").arg(bad).assert());
    assert!(!bad.join("report.html").exists());
    named(looptune().arg("diff").arg(good).arg(bad).assert());
    named(looptune().arg("diff").arg(bad).arg(good).assert());
    let merged = bad.with_extension("merged");
    named(
        looptune()
            .arg("merge")
            .arg(bad)
            .arg("--out")
            .arg(&merged)
            .assert(),
    );
    assert!(!merged.exists());
}

#[test]
fn a_hand_edited_result_is_refused_or_read_by_id() {
    let d = tempfile::tempdir().unwrap();
    let grid = small_grid(d.path());
    let good = d.path().join("good");
    sweep(&grid, &good, &[]).success();
    let configs = |v: &mut serde_json::Value| -> Vec<serde_json::Value> {
        v["outcomes"]["configs"].as_array().unwrap().clone()
    };

    // One configuration's outcomes removed.
    let bad = tampered(&good, &d.path().join("dropped"), |v| {
        let mut c = configs(v);
        c.remove(1);
        v["outcomes"]["configs"] = c.into();
    });
    refused_everywhere(&good, &bad, "has no outcomes");
    // One listed twice, or one the grid does not have.
    let bad = tampered(&good, &d.path().join("twice"), |v| {
        let mut c = configs(v);
        c[1] = c[0].clone();
        v["outcomes"]["configs"] = c.into();
    });
    refused_everywhere(&good, &bad, "is listed twice");
    let bad = tampered(&good, &d.path().join("stranger"), |v| {
        v["outcomes"]["configs"][0]["config"] = "c0000000000".into();
    });
    refused_everywhere(
        &good,
        &bad,
        "configuration c0000000000 is not one of the grid's",
    );

    // Swapped configurations keep their own scores: matched by id.
    let swapped = tampered(&good, &d.path().join("swapped"), |v| {
        let mut c = configs(v);
        c.swap(0, 2);
        c.swap(1, 3);
        v["outcomes"]["configs"] = c.into();
    });
    let merged = d.path().join("swapped-merged");
    looptune()
        .arg("merge")
        .arg(&swapped)
        .arg("--out")
        .arg(&merged)
        .assert()
        .success();
    assert_eq!(
        std::fs::read(merged.join("sweep.csv")).unwrap(),
        std::fs::read(good.join("sweep.csv")).unwrap(),
        "scores travel with their configuration's id"
    );
    looptune()
        .arg("diff")
        .arg(&good)
        .arg(&swapped)
        .args(["--require", "changed_verdicts==0"])
        .assert()
        .success();

    // Sessions out of order or repeated.
    let bad = tampered(&good, &d.path().join("reversed"), |v| {
        let mut s = v["sessions"].as_array().unwrap().clone();
        s.reverse();
        v["sessions"] = s.into();
    });
    refused_everywhere(&good, &bad, "sessions are sorted by id, each once");
    // A label that is not one.
    let bad = tampered(&good, &d.path().join("maybe"), |v| {
        v["sessions"][0]["label"] = "maybe".into();
    });
    refused_everywhere(&good, &bad, "has label `maybe` (expected loop or clean)");
    // Token counts whose sum would wrap.
    let bad = tampered(&good, &d.path().join("tokens"), |v| {
        for session in v["outcomes"]["rows"].as_array_mut().unwrap() {
            for row in session.as_array_mut().unwrap() {
                let row = row.as_array_mut().unwrap();
                if row.len() == 8 {
                    row[7] = u64::MAX.into();
                }
            }
        }
    });
    refused_everywhere(&good, &bad, "tokens after stop add up beyond");
}

#[test]
fn a_part_must_be_its_own_shard() {
    let d = tempfile::tempdir().unwrap();
    let grid = small_grid(d.path());
    let parts: Vec<PathBuf> = (1..=3)
        .map(|i| {
            let p = d.path().join(format!("part-{i}"));
            sweep(&grid, &p, &["--shard", &format!("{i}/3")]).success();
            p
        })
        .collect();
    // 9/3 cannot stand in for the missing 1/3.
    let nine = tampered(&parts[0], &d.path().join("nine"), |v| {
        v["shard"]["index"] = 9.into();
    });
    let out = d.path().join("merged");
    looptune()
        .arg("merge")
        .arg(&nine)
        .args(&parts[1..])
        .arg("--out")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("shard 9/3: need 1 <= I <= N"));
    // A part relabelled as another shard holds sessions that are not its own.
    let moved = tampered(&parts[1], &d.path().join("moved"), |v| {
        v["shard"]["index"] = 1.into();
    });
    looptune()
        .arg("merge")
        .arg(&moved)
        .args(&parts[1..])
        .arg("--out")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("does not belong to shard 1/3"));
    assert!(!out.exists());
    // The untampered parts merge.
    looptune()
        .arg("merge")
        .args(&parts)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
}

/// Every file of an output folder, by name.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().into_string().unwrap(),
                std::fs::read(e.path()).unwrap_or_default(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_full_disk_replaces_nothing() {
    let d = tempfile::tempdir().unwrap();
    let grid = small_grid(d.path());
    let out = d.path().join("out");
    let md = d.path().join("summary.md");
    sweep(&grid, &out, &["--markdown", md.to_str().unwrap()]).success();
    let before = snapshot(&out);
    let md_before = std::fs::read(&md).unwrap();
    let other = write(
        d.path(),
        "other.toml",
        "family = \"gemini\"\nstock_profiles = false\n[axes]\ntool_call_threshold = [4, 6]\n",
    );
    for (full, code) in [
        ("report.html", 3),
        ("summary.md", 3),
        ("summary.json", 2),
        ("detections.csv", 2),
    ] {
        sweep_cmd(&other, &out, &["--markdown", md.to_str().unwrap()])
            .env("LOOPTUNE_TEST_DISK_FULL", full)
            .assert()
            .code(code)
            .stderr(predicate::str::contains("No space left on device"));
        assert_eq!(
            snapshot(&out),
            before,
            "disk full on {full}: {}",
            out.display()
        );
        assert_eq!(
            std::fs::read(&md).unwrap(),
            md_before,
            "disk full on {full}"
        );
    }
    // replay: one CI output failing keeps the other out too.
    let junit = d.path().join("junit.xml");
    let s = root().join("fixtures/sessions/loop_identical_read.jsonl");
    looptune()
        .arg("replay")
        .arg(&s)
        .arg("--markdown")
        .arg(&md)
        .arg("--junit")
        .arg(&junit)
        .env("LOOPTUNE_TEST_DISK_FULL", "summary.md")
        .assert()
        .code(3);
    assert!(!junit.exists());
    assert_eq!(std::fs::read(&md).unwrap(), md_before);
}

/// A temporary folder that cannot be used (TMPDIR gone): the commands that
/// spill hits or explanations say which folder, exit 2, and replace nothing.
#[test]
fn an_unusable_tmpdir_is_named_and_replaces_nothing() {
    let d = tempfile::tempdir().unwrap();
    let grid = small_grid(d.path());
    let out = d.path().join("out");
    sweep(&grid, &out, &[]).success();
    let before = snapshot(&out);
    let gone = d.path().join("no-such-tmp");
    let named = |a: assert_cmd::assert::Assert| {
        a.code(2)
            .stderr(predicate::str::contains(gone.to_str().unwrap()))
            .stderr(predicate::str::contains("(TMPDIR)"));
    };
    named(sweep_cmd(&grid, &out, &[]).env("TMPDIR", &gone).assert());
    named(
        looptune()
            .arg("report")
            .arg(&out)
            .env("TMPDIR", &gone)
            .assert(),
    );
    named(
        looptune()
            .arg("diff")
            .arg(&out)
            .arg(&out)
            .env("TMPDIR", &gone)
            .assert(),
    );
    assert_eq!(snapshot(&out), before);
}

/// The configuration ids of each file of a sweep's folder agree: one set.
fn one_set(out: &Path) -> Vec<String> {
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let ids: Vec<String> = summary["grid"]["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let rows: Vec<String> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().to_string())
        .collect();
    assert_eq!(rows, ids, "sweep.csv and summary.json come from one run");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        ids.iter().all(|id| html.contains(id.as_str())),
        "report.html too"
    );
    ids
}

#[test]
fn two_sweeps_into_one_folder_take_turns() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    std::fs::create_dir(&out).unwrap();
    // What a killed run left behind.
    let stale = out.join(".looptune-stage-k9Xyz1");
    std::fs::create_dir(&stale).unwrap();
    std::fs::write(stale.join("summary.json"), b"{").unwrap();
    let grids = [
        write(d.path(), "a.toml", "family = \"gemini\"\nstock_profiles = false\n[axes]\ntool_call_threshold = [2, 3]\n"),
        write(d.path(), "b.toml", "family = \"gemini\"\nstock_profiles = false\n[axes]\ntool_call_threshold = [4, 5, 6]\n"),
    ];
    let children: Vec<std::process::Child> = grids
        .iter()
        .map(|g| {
            crate::util::process()
                .current_dir(root())
                .args([
                    "sweep",
                    "fixtures/",
                    "--labels",
                    "fixtures/labels.csv",
                    "--quiet",
                ])
                .arg("--grid")
                .arg(g)
                .arg("--out")
                .arg(&out)
                .env("LOOPTUNE_TEST_STAGE_DELAY_MS", "500")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut waited = false;
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        waited |= String::from_utf8_lossy(&o.stderr).contains("waiting: another looptune run");
    }
    assert!(waited, "one run waited for the other");
    let ids = one_set(&out);
    assert!(ids.len() == 2 || ids.len() == 3);
    assert!(!stale.exists(), "the killed run's staging folder is gone");
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

#[test]
fn replay_checks_every_input_before_it_prints() {
    let d = tempfile::tempdir().unwrap();
    let s = root().join("fixtures/sessions/loop_identical_read.jsonl");
    let bad = write(
        d.path(),
        "labels.csv",
        "session,label,onset_turn\nloop_identical_read,maybe,\n",
    );
    let absent = write(
        d.path(),
        "absent.csv",
        "session,label,onset_turn\nnot_here,clean,\n",
    );
    // Absent sessions are a warning in a nightly job, an error when strict.
    for (labels, strict) in [(&bad, false), (&absent, true)] {
        looptune()
            .arg("replay")
            .arg(&s)
            .arg("--labels")
            .arg(labels)
            .args(strict.then_some("--strict-labels"))
            .assert()
            .code(2)
            .stdout(predicate::str::is_empty());
    }
    for (flag, value) in [("--config", "opencode"), ("--require", "recall>=0.5")] {
        looptune()
            .arg("replay")
            .arg(&s)
            .arg(flag)
            .arg(value)
            .assert()
            .code(2)
            .stdout(predicate::str::is_empty());
    }
}

#[test]
fn max_configs_has_a_ceiling_from_memory() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("o");
    looptune()
        .current_dir(root())
        .args([
            "sweep",
            "fixtures/",
            "--quiet",
            "--max-configs",
            "18446744073709551615",
        ])
        .arg("--out")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--max-configs 18446744073709551615: more than the",
        ))
        .stderr(predicate::str::contains(
            "configurations this machine's memory holds",
        ));
    assert!(!out.exists());
}

#[test]
fn decompressed_input_is_held_within_one_budget_per_run() {
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    let line = "{\"type\":\"content\",\"text\":\"hello\"}\n".repeat(4 << 15);
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(line.as_bytes()).unwrap();
    let f = d.path().join("big.jsonl.gz");
    std::fs::write(&f, e.finish().unwrap()).unwrap();
    looptune()
        .arg("replay")
        .arg(&f)
        .env("LOOPTUNE_TEST_MEMORY_BUDGET", (1u32 << 20).to_string())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("big.jsonl.gz: decompressed input in memory at once would pass this run's budget of 1 MiB"));
    looptune().arg("replay").arg(&f).assert().success();
}

#[test]
fn a_walk_reads_every_canonical_shape_and_stops_on_unknown_json_lines() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("logs");
    std::fs::create_dir(&dir).unwrap();
    let big = "y".repeat(70 << 10);
    // Python's json.dumps spacing, a first line over 64 KiB, session key first.
    write(
        &dir,
        "python.jsonl",
        &format!("{{\"session\": \"py\", \"type\": \"content\", \"text\": \"{big}\"}}\n{{\"type\": \"turn\", \"session\": \"py\"}}\n"),
    );
    // A first record of a type newer than this build.
    write(
        &dir,
        "newer.jsonl",
        "{\"type\":\"plan_update\",\"session\":\"nw\",\"steps\":[1]}\n{\"type\":\"content\",\"text\":\"hi\",\"session\":\"nw\"}\n",
    );
    let out = looptune()
        .arg("replay")
        .arg(&dir)
        .args(["--format", "json"])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("\"session\":\"py\""), "{text}");
    assert!(text.contains("\"session\":\"nw\""), "{text}");

    // JSON Lines that no reader knows: the walk stops (exit 2) naming the
    // file, unless --lenient, which skips it with a warning.
    write(
        &dir,
        "mystery.jsonl",
        "{\"event\":\"a\"}\n{\"event\":\"b\"}\n",
    );
    looptune()
        .arg("replay")
        .arg(&dir)
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("mystery.jsonl"))
        .stderr(predicate::str::contains("--lenient skips it"));
    looptune()
        .arg("replay")
        .arg(&dir)
        .arg("--lenient")
        .assert()
        .success()
        .stderr(predicate::str::contains("mystery.jsonl: skipped file"));
    // A walked file that is not JSON Lines is still skipped with a note.
    std::fs::remove_file(dir.join("mystery.jsonl")).unwrap();
    write(&dir, "notes.json", "{\"total\": 3}");
    looptune().arg("replay").arg(&dir).assert().success();
}

/// `report DIR` writes `report.html` into DIR: a `report.html` that is a
/// link to the `summary.json` it reads, or to another file of the folder,
/// is refused (exit 2) and nothing is written.
#[cfg(unix)]
#[test]
fn report_refuses_a_report_html_that_is_one_of_its_inputs() {
    let d = tempfile::tempdir().unwrap();
    let grid = small_grid(d.path());
    let out = d.path().join("out");
    sweep(&grid, &out, &[]).success();
    let html = out.join("report.html");
    for target in ["summary.json", "sweep.csv"] {
        let file = out.join(target);
        let before = std::fs::read(&file).unwrap();
        std::fs::remove_file(&html).unwrap();
        std::os::unix::fs::symlink(&file, &html).unwrap();
        refused_unchanged(looptune().arg("report").arg(&out).assert(), &file, &before);
        assert!(std::fs::symlink_metadata(&html)
            .unwrap()
            .file_type()
            .is_symlink());
    }
    // A plain report.html is rewritten as before.
    std::fs::remove_file(&html).unwrap();
    std::fs::write(&html, "old").unwrap();
    looptune().arg("report").arg(&out).assert().success();
    assert!(std::fs::read_to_string(&html).unwrap().contains("<html"));
}

/// The guard protects the files the read reads: one walk serves both. With
/// --lenient, a folder holding an unreadable entry (a dangling link) is still
/// read, so its readable files may not be written over either.
#[cfg(unix)]
#[test]
fn a_lenient_walk_past_an_unreadable_entry_still_protects_what_it_reads() {
    let d = tempfile::tempdir().unwrap();
    let runs = d.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    let session = runs.join("s.jsonl");
    std::fs::copy(
        root().join("fixtures/sessions/loop_identical_read.jsonl"),
        &session,
    )
    .unwrap();
    std::os::unix::fs::symlink(d.path().join("nowhere"), runs.join("gone.jsonl")).unwrap();
    let before = std::fs::read(&session).unwrap();
    let a = looptune()
        .args(["replay", "--lenient", "-q"])
        .arg(&runs)
        .arg("--markdown")
        .arg(&session)
        .assert();
    refused_unchanged(a, &session, &before);
}
