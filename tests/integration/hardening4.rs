//! Issue #42, hardening round four: the last write (the output set switches
//! at one rename, what a signal or a full disk says, modes, an interrupted
//! `import`), tampered results, and the readers.

use crate::util::{looptune, root, write};
use predicates::prelude::*;
use std::path::{Path, PathBuf};

/// A small grid (three thresholds and two profiles).
fn small_grid(dir: &Path) -> PathBuf {
    write(
        dir,
        "grid.toml",
        "family = \"gemini\"\nstock_profiles = false\n[axes]\ntool_call_threshold = [2, 3, 5]\n[[extra]]\nprofile = \"opencode\"\n[[extra]]\nprofile = \"goose\"\n",
    )
}

/// Another grid, so every output of a second sweep differs from the first's.
fn other_grid(dir: &Path) -> PathBuf {
    write(
        dir,
        "other.toml",
        "family = \"gemini\"\nstock_profiles = false\n[axes]\ntool_call_threshold = [4, 6]\n",
    )
}

/// `sweep fixtures/ --labels fixtures/labels.csv --grid G --out OUT EXTRA`.
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

/// Every file of a folder (not its hidden entries), by name.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| {
            (
                e.file_name().into_string().unwrap(),
                std::fs::read(e.path()).unwrap_or_default(),
            )
        })
        .collect();
    v.sort();
    v
}

/// The configuration ids `sweep.csv` and `summary.json` hold.
fn ids(out: &Path) -> (Vec<String>, Vec<String>) {
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let from_summary = summary["grid"]["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let from_csv = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().to_string())
        .collect();
    (from_csv, from_summary)
}

/// Item 8: `kill -9` half way through the moves. The commit's journal makes
/// the new set the one to finish: the next reader (`report`, `diff`) or
/// writer moves the rest in, so no command ever reads a mixed set.
#[cfg(unix)]
#[test]
fn a_sweep_killed_during_its_moves_is_finished_by_the_next_command() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    sweep_cmd(&small_grid(d.path()), &out, &[])
        .assert()
        .success();
    let killed = sweep_cmd(&other_grid(d.path()), &out, &[])
        .env("LOOPTUNE_TEST_KILL_AFTER_MOVES", "1")
        .assert()
        .failure();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&killed.get_output().status),
        Some(9),
        "killed half way"
    );
    let (csv, summary) = ids(&out);
    assert_ne!(csv, summary, "the kill left the set mixed on disk");
    // The next reader finishes the set before it reads.
    looptune()
        .arg("diff")
        .arg(&out)
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains("finished moving in the outputs"));
    let (csv, summary) = ids(&out);
    assert_eq!(csv, summary, "one set");
    assert_eq!(csv.len(), 2, "the new set, whole");
    let staging: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(staging.is_empty(), "{staging:?}");

    // And the next writer does the same before staging its own.
    let killed = sweep_cmd(&small_grid(d.path()), &out, &[])
        .env("LOOPTUNE_TEST_KILL_AFTER_MOVES", "2")
        .assert()
        .failure();
    assert!(killed.get_output().status.code().is_none());
    let finished = files(&out);
    sweep_cmd(&small_grid(d.path()), &out, &[])
        .env("LOOPTUNE_TEST_DISK_FULL", "report.html")
        .assert()
        .code(3);
    assert_eq!(ids(&out).0, ids(&out).1, "finished by the writer");
    assert_eq!(ids(&out).0.len(), 5);
    assert_ne!(files(&out), finished);
}

/// Item 9: SIGINT while the set is being moved in waits for the moves; it
/// must then say that the new outputs are in place, not the old.
#[cfg(unix)]
#[test]
fn a_signal_during_the_moves_says_the_new_outputs_are_in_place() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    sweep_cmd(&small_grid(d.path()), &out, &[])
        .assert()
        .success();
    let before = files(&out);
    let child = crate::util::process()
        .current_dir(root())
        .args([
            "sweep",
            "fixtures/",
            "--labels",
            "fixtures/labels.csv",
            "--quiet",
        ])
        .arg("--grid")
        .arg(other_grid(d.path()))
        .arg("--out")
        .arg(&out)
        .env("LOOPTUNE_TEST_MOVE_DELAY_MS", "300")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first file of the new set to be in place.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while std::fs::read(out.join("sweep.csv")).unwrap() == before[4].1 {
        assert!(std::time::Instant::now() < deadline, "never moved in");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(
        err.contains("the new outputs were already written whole"),
        "{err}"
    );
    assert!(!err.contains("previous outputs left as they were"), "{err}");
    let (csv, summary) = ids(&out);
    assert_eq!(csv, summary);
    assert_eq!(csv.len(), 2, "the new set");
}

/// Item 10: a report that cannot be written replaces nothing, and the
/// help no longer says results were written when it exits 3.
#[test]
fn exit_3_says_nothing_was_replaced() {
    for cmd in [&["sweep", "--help"][..], &["merge", "--help"], &["--help"]] {
        let help = looptune().args(cmd).assert().success();
        let text = String::from_utf8_lossy(&help.get_output().stdout).to_string();
        assert!(!text.contains("results were written"), "{cmd:?}: {text}");
        assert!(!text.contains("results written"), "{cmd:?}: {text}");
        assert!(text.contains("nothing of the set was replaced"), "{cmd:?}");
    }
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    sweep_cmd(&small_grid(d.path()), &out, &[])
        .assert()
        .success();
    let before = files(&out);
    sweep_cmd(&other_grid(d.path()), &out, &[])
        .env("LOOPTUNE_TEST_DISK_FULL", "report.html")
        .assert()
        .code(3)
        .stderr(predicate::str::contains("nothing was replaced"));
    assert_eq!(files(&out), before);
}

/// Item 7: `--markdown` or `--junit` naming one of the sweep's own outputs,
/// or each other: refused before any work, nothing written.
#[test]
fn a_ci_output_may_not_be_another_output_of_the_command() {
    let d = tempfile::tempdir().unwrap();
    let grid = small_grid(d.path());
    let out = d.path().join("o6");
    let twice = |a: assert_cmd::assert::Assert| {
        a.code(2)
            .stderr(predicate::str::contains("refusing to write"))
            .stderr(predicate::str::contains("twice"));
    };
    let summary = out.join("summary.json");
    twice(sweep_cmd(&grid, &out, &["--markdown", summary.to_str().unwrap()]).assert());
    assert!(!summary.exists());
    // Spelt differently: the same file.
    let dotted = format!("{}/./sweep.csv", out.display());
    twice(sweep_cmd(&grid, &out, &["--junit", &dotted]).assert());
    let x = d.path().join("x.md");
    twice(
        sweep_cmd(
            &grid,
            &out,
            &[
                "--junit",
                x.to_str().unwrap(),
                "--markdown",
                x.to_str().unwrap(),
            ],
        )
        .assert(),
    );
    assert!(!x.exists());
    // The outputs of an existing folder are refused too (report DIR works).
    sweep_cmd(&grid, &out, &[]).assert().success();
    twice(sweep_cmd(&grid, &out, &["--markdown", summary.to_str().unwrap()]).assert());
    looptune().arg("report").arg(&out).assert().success();
    let s = root().join("fixtures/sessions/loop_identical_read.jsonl");
    twice(
        looptune()
            .arg("replay")
            .arg(&s)
            .arg("--markdown")
            .arg(&x)
            .arg("--junit")
            .arg(&x)
            .assert(),
    );
}

/// Item 11: an output that replaces a link is a regular file with the
/// usual mode (a link's own mode is 0777), the link's target untouched.
#[cfg(unix)]
#[test]
fn an_output_replacing_a_link_gets_the_usual_mode() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let target = d.path().join("elsewhere.csv");
    std::fs::write(&target, b"keep").unwrap();
    std::os::unix::fs::symlink(&target, out.join("sweep.csv")).unwrap();
    let md = d.path().join("summary.md");
    std::os::unix::fs::symlink(&target, &md).unwrap();
    let plain = d.path().join("plain");
    std::fs::write(&plain, b"x").unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    sweep_cmd(
        &small_grid(d.path()),
        &out,
        &["--markdown", md.to_str().unwrap()],
    )
    .assert()
    .success();
    for p in [out.join("sweep.csv"), md] {
        assert!(std::fs::symlink_metadata(&p).unwrap().is_file(), "{p:?}");
        assert_eq!(mode(&p), mode(&plain), "{p:?}");
    }
    assert_eq!(std::fs::read(&target).unwrap(), b"keep");
}

/// Item 12: SIGINT during `import` exits 130 and leaves no temporary file
/// in the output folder.
#[cfg(unix)]
#[test]
fn an_interrupted_import_exits_130_and_leaves_nothing() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let child = crate::util::process()
        .current_dir(root())
        .args(["import", "fixtures/sessions", "-o"])
        .arg(out.join("all.jsonl"))
        .env("LOOPTUNE_TEST_STAGE_DELAY_MS", "3000")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let hidden = || -> Vec<String> {
        std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with(".looptune"))
            .collect()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while hidden().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the import never staged its output in the folder"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(hidden().is_empty(), "{:?}", hidden());
    assert!(!out.join("all.jsonl").exists());
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

/// `report`, `diff`, `merge` and `sweep --baseline` of a tampered result:
/// exit 2 naming the file and what is wrong, nothing written.
fn refused(good: &Path, bad: &Path, why: &str) {
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
    // A part of a merge is checked as `report` checks it.
    let merged = bad.with_extension("merged");
    named(
        looptune()
            .arg("merge")
            .arg(bad)
            .arg("--out")
            .arg(&merged)
            .arg("-q")
            .assert(),
    );
    assert!(!merged.exists());
    // So is the earlier run a sweep compares with; `--grid` as `good`'s.
    let again = bad.with_extension("again");
    named(
        sweep_cmd(&good.with_file_name("grid.toml"), &again, &[])
            .arg("--baseline")
            .arg(bad)
            .assert(),
    );
    assert!(!again.exists());
}

/// Item 13: detection turns, labels and scores edited by hand, and a
/// version after this one, are refused by `report`, `diff`, `merge` and
/// `sweep --baseline`.
#[test]
fn a_tampered_summary_is_refused_by_report_and_diff() {
    let d = tempfile::tempdir().unwrap();
    let good = d.path().join("good");
    sweep_cmd(&small_grid(d.path()), &good, &[])
        .assert()
        .success();
    // Unchanged but rewritten (keys reordered): still read.
    let same = tampered(&good, &d.path().join("same"), |_| {});
    looptune().arg("report").arg(&same).assert().success();
    looptune()
        .arg("diff")
        .arg(&good)
        .arg(&same)
        .assert()
        .success();

    let bad = tampered(&good, &d.path().join("turns"), |v| {
        for det in v["outcomes"]["detections"].as_array_mut().unwrap() {
            det["turn"] = 999999.into();
        }
        // Each session's rows: [detection, turn, ...].
        for session in v["outcomes"]["rows"].as_array_mut().unwrap() {
            for row in session.as_array_mut().unwrap() {
                let row = row.as_array_mut().unwrap();
                if row.len() > 2 && row[1].is_u64() {
                    row[1] = 999999.into();
                }
            }
        }
    });
    refused(&good, &bad, "the file was edited");
    let bad = tampered(&good, &d.path().join("label"), |v| {
        let s = v["sessions"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|s| s["label"] == "clean")
            .unwrap();
        s["label"] = "loop".into();
        s["onset_turn"] = 1.into();
    });
    refused(&good, &bad, "do not match the record");
    let bad = tampered(&good, &d.path().join("score"), |v| {
        v["scores"][0]["recall"] = 1.0.into();
    });
    refused(&good, &bad, "recall is 1.0");
    let bad = tampered(&good, &d.path().join("version"), |v| {
        v["looptune_version"] = "9.9.9".into();
    });
    refused(
        &good,
        &bad,
        "looptune_version 9.9.9 is not a version up to this one",
    );
}

/// An OpenCode database at `path`: one session whose assistant message has
/// one part per row of `parts` (SQL expressions for `data`), or with `part`
/// given as its own `CREATE TABLE` (generated columns).
fn opencode_db(path: &Path, part_table: &str, inserts: &str) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(&format!(
        r#"
CREATE TABLE session (id text PRIMARY KEY, title text, directory text, version text, parent_id text, time_created integer);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL, data text NOT NULL);
{part_table}
INSERT INTO session VALUES ('ses_1', 't', '/w', '1.2.0', NULL, 1);
INSERT INTO message VALUES ('msg_1', 'ses_1', 1, '{{"role":"user"}}');
INSERT INTO message VALUES ('msg_2', 'ses_1', 2, '{{"role":"assistant","modelID":"m"}}');
{inserts}
"#
    ))
    .unwrap();
}

fn replay_db(db: &Path, extra: &[&str]) -> assert_cmd::assert::Assert {
    looptune()
        .arg("replay")
        .arg(db)
        .args(extra)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
}

/// Item 1: a database cell SQLite computes (a generated column) may not
/// yield more than the database's cap, nor may all its cells together: a
/// 40 KB file made replay hold 1 GB a row.
#[test]
fn a_database_yields_no_more_than_its_cap() {
    let d = tempfile::tempdir().unwrap();
    // 20 MB in one cell of a file of a few KB: past the 16 MiB floor.
    let one = d.path().join("one").join("opencode.db");
    std::fs::create_dir_all(one.parent().unwrap()).unwrap();
    opencode_db(
        &one,
        "CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, n integer, data text GENERATED ALWAYS AS ('{\"type\":\"text\",\"text\":\"' || printf('%.*c', n, 'x') || '\"}') VIRTUAL);",
        "INSERT INTO part (id, message_id, n) VALUES ('prt_1', 'msg_2', 20000000);",
    );
    for lenient in [false, true] {
        let extra: &[&str] = if lenient { &["--lenient"] } else { &[] };
        replay_db(&one, extra)
            .code(2)
            .stderr(predicate::str::contains(one.display().to_string()))
            .stderr(predicate::str::contains("longer than the cap"));
    }
    // Five cells of 4 MB: each within the cap, together past it.
    let many = d.path().join("many").join("opencode.db");
    std::fs::create_dir_all(many.parent().unwrap()).unwrap();
    let rows: String = (1..=5)
        .map(|i| {
            format!("INSERT INTO part (id, message_id, n) VALUES ('prt_{i}', 'msg_2', 4000000);\n")
        })
        .collect();
    opencode_db(
        &many,
        "CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, n integer, data text GENERATED ALWAYS AS ('{\"type\":\"text\",\"text\":\"' || printf('%.*c', n, 'x') || '\"}') VIRTUAL);",
        &rows,
    );
    replay_db(&many, &[])
        .code(2)
        .stderr(predicate::str::contains("the database yields more than"));
    // A small one of the same shape is read.
    let small = d.path().join("small").join("opencode.db");
    std::fs::create_dir_all(small.parent().unwrap()).unwrap();
    opencode_db(
        &small,
        "CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, n integer, data text GENERATED ALWAYS AS ('{\"type\":\"text\",\"text\":\"' || printf('%.*c', n, 'x') || '\"}') VIRTUAL);",
        "INSERT INTO part (id, message_id, n) VALUES ('prt_1', 'msg_2', 1000);",
    );
    replay_db(&small, &[]).success();
}

/// Item 14: a cell of the wrong type stops the read naming table, row and
/// column; `--lenient` skips and counts the row and reads the rest.
#[test]
fn a_wrongly_typed_cell_is_named_or_skipped() {
    let d = tempfile::tempdir().unwrap();
    let cases = [
        (
            "blob",
            "X'00ff'",
            "prt_2",
            "column `data` holds a BLOB, not text",
        ),
        ("null", "NULL", "prt_2", "column `data` is NULL"),
        (
            "utf8",
            "CAST(X'7b22ff' AS TEXT)",
            "prt_2",
            "column `data` is not valid UTF-8",
        ),
    ];
    for (name, bad, row, why) in cases {
        let db = d.path().join(name).join("opencode.db");
        std::fs::create_dir_all(db.parent().unwrap()).unwrap();
        opencode_db(
            &db,
            "CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, data text);",
            &format!(
                "INSERT INTO part VALUES ('prt_1', 'msg_2', '{{\"type\":\"text\",\"text\":\"hi\"}}');\nINSERT INTO part VALUES ('prt_2', 'msg_2', {bad});"
            ),
        );
        replay_db(&db, &[])
            .code(2)
            .stderr(predicate::str::contains(format!(
                "table `part`, row {row}: {why}"
            )));
        replay_db(&db, &["--lenient"]).success();
    }
    // An INTEGER id: the row is named by its place.
    let db = d.path().join("int").join("opencode.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    opencode_db(
        &db,
        "CREATE TABLE part (id, message_id text NOT NULL, data text);",
        "INSERT INTO part VALUES (7, 'msg_2', '{\"type\":\"text\",\"text\":\"hi\"}');",
    );
    replay_db(&db, &[]).code(2).stderr(predicate::str::contains(
        "table `part`, row 7: column `id` holds an INTEGER, not text",
    ));
    replay_db(&db, &["--lenient"]).success();
}

/// Item 5: an OpenHands V1 event file that is a FIFO or a link to a device
/// is not read (the read would block, or grow without end): strict names
/// it, `--lenient` skips it.
#[cfg(unix)]
#[test]
fn openhands_v1_event_files_are_read_only_when_regular() {
    let d = tempfile::tempdir().unwrap();
    let from = root().join("tests/fixtures/import/openhands-v1/5f1c0e7a9b2d4c6e8f0a1b2c3d4e5f60");
    let conv = d.path().join("5f1c0e7a9b2d4c6e8f0a1b2c3d4e5f60");
    std::fs::create_dir_all(conv.join("events")).unwrap();
    std::fs::copy(from.join("base_state.json"), conv.join("base_state.json")).unwrap();
    let mut last = 0;
    for e in std::fs::read_dir(from.join("events")).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().into_string().unwrap();
        last = last.max(name[6..11].parse::<u32>().unwrap());
        std::fs::copy(e.path(), conv.join("events").join(&name)).unwrap();
    }
    let fifo = conv
        .join("events")
        .join(format!("event-{:05}-fifo.json", last + 1));
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let zero = conv
        .join("events")
        .join(format!("event-{:05}-zero.json", last + 2));
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    replay_db(&conv, &[])
        .code(2)
        .stderr(predicate::str::contains(fifo.display().to_string()))
        .stderr(predicate::str::contains("not a regular file"));
    replay_db(&conv, &["--lenient"]).success();
}

/// Item 4: an Inspect AI `.json` log is read in time linear in its samples
/// (each sample scanned every message's line entry: 10k samples took 44 s
/// in a debug build, 4 s after). The bound leaves four times the headroom.
#[test]
fn an_inspect_json_log_is_read_in_linear_time() {
    let d = tempfile::tempdir().unwrap();
    let samples: Vec<serde_json::Value> = (0..10_000)
        .map(|i| {
            serde_json::json!({"id": i, "epoch": 1, "uuid": format!("u{i}"), "input": "x", "target": "y",
                "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]})
        })
        .collect();
    let log = serde_json::json!({"version": 2, "status": "success",
        "eval": {"eval_id": "E1", "run_id": "R1", "created": "2026-06-04T10:00:00+00:00", "task": "t", "task_id": "T1", "model": "openai/gpt-5"},
        "samples": samples});
    let path = d.path().join("log.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&log).unwrap()).unwrap();
    looptune()
        .arg("replay")
        .arg(&path)
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .success();
}

/// Item 2: a `.eval` archive's members together expand at most
/// `--max-gzip-ratio` times the archive's size (past the 16 MiB floor),
/// not only each member: members each just under the floor added up to
/// gigabytes from a 26 KB file.
#[test]
fn an_eval_archives_members_together_obey_the_ratio() {
    use std::io::{Read, Write};
    let d = tempfile::tempdir().unwrap();
    let fixture = root().join("tests/fixtures/formats-2026/inspect/deflate.eval");
    let mut from = zip::ZipArchive::new(std::fs::File::open(&fixture).unwrap()).unwrap();
    let mut make = |path: &Path, members: usize, pad: usize| {
        let mut to = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        let mut sample = Vec::new();
        for i in 0..from.len() {
            let mut f = from.by_index(i).unwrap();
            let name = f.name().to_string();
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes).unwrap();
            if name == "samples/1_epoch_1.json" {
                sample = bytes.clone();
            }
            if name.starts_with("samples/") || to.start_file(&name, opts).is_err() {
                continue;
            }
            to.write_all(&bytes).unwrap();
        }
        // The same sample under other names, each padded with spaces.
        for m in 0..members {
            to.start_file(format!("samples/{m}_epoch_1.json"), opts)
                .unwrap();
            to.write_all(&sample).unwrap();
            to.write_all(&vec![b' '; pad]).unwrap();
        }
        to.finish().unwrap();
    };
    let big = d.path().join("big.eval");
    make(&big, 4, 6 << 20);
    assert!(std::fs::metadata(&big).unwrap().len() < 200_000);
    looptune()
        .arg("replay")
        .arg(&big)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "the archive's members expand past",
        ));
    let small = d.path().join("small.eval");
    make(&small, 4, 1 << 20);
    looptune().arg("replay").arg(&small).assert().success();
}

/// The part table of a one-session OpenCode database.
const PART: &str = "CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, data text);";
const ONE_PART: &str =
    "INSERT INTO part VALUES ('prt_1', 'msg_2', '{\"type\":\"text\",\"text\":\"hi\"}');";

/// The names in a folder, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// Item 15: reading a database writes nothing beside it (a WAL database
/// got `-shm` and `-wal` files), so a database on read-only media reads; a
/// WAL's commits not yet in the main file are read all the same; a hot
/// journal and a truncated file say so (both were "not a recognised
/// session log").
#[test]
fn a_database_is_read_without_writing_beside_it() {
    let d = tempfile::tempdir().unwrap();
    // A WAL database whose commits are all in the main file.
    let wal = d.path().join("wal");
    std::fs::create_dir_all(&wal).unwrap();
    let db = wal.join("opencode.db");
    opencode_db(&db, &format!("PRAGMA journal_mode=WAL;\n{PART}"), ONE_PART);
    assert_eq!(names(&wal), ["opencode.db"]);
    replay_db(&db, &[])
        .success()
        .stdout(predicate::str::contains("1 session,"));
    assert_eq!(
        names(&wal),
        ["opencode.db"],
        "files made beside the database"
    );

    // One whose commits are still in its `-wal` (no `-shm`: the agent
    // stopped, or the folder was copied while it ran).
    let live = d.path().join("live");
    let copied = d.path().join("copied");
    std::fs::create_dir_all(&live).unwrap();
    std::fs::create_dir_all(&copied).unwrap();
    {
        let conn = rusqlite::Connection::open(live.join("opencode.db")).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;")
            .unwrap();
        drop(conn);
        opencode_db(&live.join("opencode.db"), PART, "");
        let conn = rusqlite::Connection::open(live.join("opencode.db")).unwrap();
        conn.execute_batch("PRAGMA wal_autocheckpoint=0;").unwrap();
        conn.execute_batch(ONE_PART).unwrap();
        for f in ["opencode.db", "opencode.db-wal"] {
            std::fs::copy(live.join(f), copied.join(f)).unwrap();
        }
    }
    assert_eq!(names(&copied), ["opencode.db", "opencode.db-wal"]);
    // The part row is only in the `-wal`: four events with it, three without.
    replay_db(&copied.join("opencode.db"), &[])
        .success()
        .stdout(predicate::str::contains("1 session, 1 turn, 4 events"));
    assert_eq!(
        names(&copied),
        ["opencode.db", "opencode.db-wal"],
        "files made beside the database"
    );

    // The first on read-only media (a read-only bind mount, where a user
    // namespace allows one).
    let ro = d.path().join("ro");
    std::fs::create_dir_all(&ro).unwrap();
    let script = format!(
        "mount --bind '{w}' '{r}' && mount -o remount,ro,bind '{r}' && touch '{r}/x' 2>/dev/null && exit 99; exec '{bin}' replay '{r}/opencode.db'",
        w = wal.display(),
        r = ro.display(),
        bin = assert_cmd::cargo::cargo_bin("looptune").display(),
    );
    match std::process::Command::new("unshare")
        .args(["-rm", "sh", "-c", &script])
        .output()
    {
        Ok(o) if o.status.code() == Some(0) || o.status.code() == Some(2) => {
            assert!(
                o.status.success(),
                "read-only: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            assert!(String::from_utf8_lossy(&o.stdout).contains("1 session,"));
        }
        _ => crate::util::skipped("no read-only bind mount here (unshare -rm)"),
    }

    // A hot journal: a transaction's journal beside a file it half changed.
    let hot = d.path().join("hot");
    std::fs::create_dir_all(&hot).unwrap();
    {
        let src = d.path().join("src.db");
        opencode_db(
            &src,
            &format!("PRAGMA journal_mode=DELETE;\n{PART}"),
            ONE_PART,
        );
        let conn = rusqlite::Connection::open(&src).unwrap();
        // A one-page cache spills the change to the file before commit.
        conn.execute_batch("PRAGMA cache_size=1; BEGIN;").unwrap();
        for i in 0..2000 {
            conn.execute(
                "INSERT INTO part VALUES (?1, 'msg_2', ?2)",
                (format!("p{i}"), "x".repeat(200)),
            )
            .unwrap();
        }
        std::fs::copy(&src, hot.join("opencode.db")).unwrap();
        std::fs::copy(
            d.path().join("src.db-journal"),
            hot.join("opencode.db-journal"),
        )
        .unwrap();
    }
    replay_db(&hot.join("opencode.db"), &[])
        .code(2)
        .stderr(predicate::str::contains("hot journal"));

    // A truncated file, under its own name and another.
    let cut = d.path().join("cut");
    std::fs::create_dir_all(&cut).unwrap();
    let bytes = std::fs::read(&db).unwrap();
    for name in ["opencode.db", "other.db"] {
        std::fs::write(cut.join(name), &bytes[..bytes.len() - 5000]).unwrap();
        replay_db(&cut.join(name), &[])
            .code(2)
            .stderr(predicate::str::contains("the database is truncated"));
    }
}

/// `text` as one zstd frame asking for a window of 2^`log` (no content
/// size, so the window is written in the header, as `zstd --long` does).
fn zstd_window(text: &[u8], log: u32) -> Vec<u8> {
    use std::io::Write;
    let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    e.include_contentsize(false).unwrap();
    e.long_distance_matching(true).unwrap();
    e.window_log(log).unwrap();
    e.write_all(text).unwrap();
    e.finish().unwrap()
}

/// Item 16: `pzstd` output (a skippable frame first) and a `--long=28`
/// stream are read (they were "not a recognised session log" and "damaged
/// or truncated"); a window past 2^28, looptune's limit, is named.
#[test]
fn pzstd_and_long_window_zstd_are_read() {
    let d = tempfile::tempdir().unwrap();
    let text = std::fs::read(root().join("fixtures/sessions/clean_markdown_list.jsonl")).unwrap();
    let mut pz = vec![0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 0x10, 0, 0, 0];
    pz.extend(zstd::encode_all(&text[..], 3).unwrap());
    let cases = [
        ("pzstd.jsonl.zst", pz),
        ("long28.jsonl.zst", zstd_window(&text, 28)),
    ];
    for (name, bytes) in cases {
        let path = d.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        looptune()
            .arg("replay")
            .arg(&path)
            .assert()
            .success()
            .stdout(predicate::str::contains("1 session,"));
    }
    let past = d.path().join("long29.jsonl.zst");
    std::fs::write(&past, zstd_window(&text, 29)).unwrap();
    looptune()
        .arg("replay")
        .arg(&past)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "needs a window of 536870912 bytes, past looptune's limit of 268435456 (2^28",
        ));
}

/// Item 3: a gzip bomb inside the caps' reach is refused having held at
/// most the ratio's floor (16 MiB): past it the stream is read through
/// and dropped first. It inflated to its cap on every worker (two 4.4 MB
/// files of a 1 GB zero stream held 1.2 GB at `-j 2`); here the run's
/// budget of 18 MiB is what it passed on its way to a 20 MB cap.
#[test]
fn a_gzip_bomb_is_measured_before_it_is_held() {
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    let gz = |head: &[u8], zeros: usize| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(head).unwrap();
        let block = vec![0u8; 1 << 20];
        for _ in 0..zeros {
            e.write_all(&block).unwrap();
        }
        e.finish().unwrap()
    };
    // Whole: the zeros are no session log's first line.
    let whole = d.path().join("whole.jsonl.gz");
    std::fs::write(&whole, gz(b"", 200)).unwrap();
    // In batches: a canonical first line, then one line of zeros.
    let lines = d.path().join("lines.jsonl.gz");
    std::fs::write(&lines, gz(b"{\"type\":\"content\",\"text\":\"hi\"}\n", 200)).unwrap();
    for (f, extra) in [(&whole, None), (&lines, Some("--stream-above=1000"))] {
        looptune()
            .arg("replay")
            .arg(f)
            .args(extra)
            .env("LOOPTUNE_TEST_MEMORY_BUDGET", (18u32 << 20).to_string())
            .assert()
            .code(2)
            .stderr(predicate::str::contains(
                "gzip stream expands more than 100 times",
            ));
    }
    // A stream past the floor and within the caps takes its exact size.
    let text: String = (0..500_000)
        .map(|i| format!("{{\"type\":\"content\",\"text\":\"hello {i}\"}}\n"))
        .collect();
    assert!(text.len() > 18 << 20);
    let ok = d.path().join("ok.jsonl.gz");
    std::fs::write(&ok, gz(text.as_bytes(), 0)).unwrap();
    looptune()
        .arg("replay")
        .arg(&ok)
        .arg("--stream-above=1000000000")
        .env("LOOPTUNE_TEST_MEMORY_BUDGET", (24u32 << 20).to_string())
        .assert()
        .success();
}

/// Item 14, the Goose `sessions` table: a cell of the wrong type stopped
/// the read even under `--lenient` ("Invalid column type Blob at index: 5,
/// name: working_dir"); now it names table, row and column, and
/// `--lenient` skips and counts the row.
#[test]
fn a_wrongly_typed_goose_session_cell_is_named_or_skipped() {
    let d = tempfile::tempdir().unwrap();
    let cases = [
        (
            "blob",
            "X'00ff'",
            "column `working_dir` holds a BLOB, not text",
        ),
        (
            "int",
            "7",
            "column `working_dir` holds an INTEGER, not text",
        ),
    ];
    for (name, bad, why) in cases {
        let db = d.path().join(name).join("sessions.db");
        std::fs::create_dir_all(db.parent().unwrap()).unwrap();
        let conn = rusqlite::Connection::open(&db).unwrap();
        // No declared types, so SQLite keeps each cell as it is given.
        conn.execute_batch(&format!(
            r#"
CREATE TABLE schema_version (version INTEGER PRIMARY KEY);
INSERT INTO schema_version VALUES (9);
CREATE TABLE sessions (id, name, description, working_dir, created_at, provider_name, model_config_json);
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL, content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL);
INSERT INTO sessions VALUES ('s1', 'n', 'd', '/w', '2026-01-01 00:00:00', 'p', '{{"model_name":"m"}}');
INSERT INTO sessions VALUES ('s2', 'n', 'd', {bad}, '2026-01-01 00:00:01', 'p', NULL);
INSERT INTO messages (session_id, role, content_json, created_timestamp) VALUES ('s1', 'user', '[{{"type":"text","text":"hi"}}]', 1);
INSERT INTO messages (session_id, role, content_json, created_timestamp) VALUES ('s2', 'user', '[{{"type":"text","text":"hi"}}]', 2);
"#
        ))
        .unwrap();
        drop(conn);
        replay_db(&db, &[])
            .code(2)
            .stderr(predicate::str::contains(format!(
                "table `sessions`, row s2: {why}"
            )));
        replay_db(&db, &["--lenient"])
            .success()
            .stdout(predicate::str::contains("1 session,"));
    }
}
