//! The logs people have in 2026 (issue #26): Inspect AI `.eval` and `.json`
//! logs, Harbor ATIF trajectories, Codex's archived rollouts and Inspect
//! Scout validation sets as labels, on the fixtures of
//! `fixtures/make_formats_2026.py` (`tests/fixtures/formats-2026/`).

use crate::util::{looptune, run};
use looptune::event::{Corpus, Record, Session};
use looptune::input::{read_corpus, ReadOptions};
use predicates::prelude::*;
use std::path::{Path, PathBuf};

fn fx(p: &str) -> PathBuf {
    PathBuf::from("tests/fixtures/formats-2026").join(p)
}

fn read(paths: &[PathBuf]) -> Corpus {
    read_corpus(paths, &ReadOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn session<'a>(c: &'a Corpus, id: &str) -> &'a Session {
    c.sessions
        .iter()
        .find(|s| s.id == id)
        .unwrap_or_else(|| panic!("no session {id}: {:?}", ids(c)))
}

fn ids(c: &Corpus) -> Vec<&str> {
    c.sessions.iter().map(|s| s.id.as_str()).collect()
}

/// Records as short words: `turn`, `call NAME`, `result NAME error`, ...
fn shape(s: &Session) -> Vec<String> {
    s.events
        .iter()
        .map(|e| match &e.record {
            Record::ToolCall { name, .. } => format!("call {name}"),
            Record::ToolResult { name, error, .. } => {
                format!("result {} {error:?}", name.as_deref().unwrap_or("?"))
            }
            other => other.type_name().to_string(),
        })
        .collect()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn inspect_eval_deflate_and_zstd_members_read_the_same() {
    let deflate = read(&[fx("inspect/deflate.eval")]);
    let zstd = read(&[fx("inspect/zstd.eval")]);
    assert_eq!(ids(&deflate), vec!["uuid-clean-2", "uuid-loop-1"]);
    assert_eq!(deflate.files[0].format, "inspect-ai");
    for (a, b) in deflate.sessions.iter().zip(&zstd.sessions) {
        assert_eq!(a.id, b.id);
        assert_eq!(a.turns, b.turns);
        assert_eq!(shape(a), shape(b));
    }
    let l = session(&deflate, "uuid-loop-1");
    // Six assistant messages = six turns; each a call, each tool message a failed result.
    assert_eq!(l.turns, 6);
    let sh = shape(l);
    assert_eq!(sh.iter().filter(|x| *x == "call read_file").count(), 6);
    assert_eq!(
        sh.iter()
            .filter(|x| *x == "result read_file Some(true)")
            .count(),
        6
    );
    assert_eq!(sh.iter().filter(|x| *x == "thought").count(), 1);
    // Grouping metadata and the cap the run hit.
    assert_eq!(l.meta.agent.as_deref(), Some("inspect-ai"));
    assert_eq!(l.meta.model.as_deref(), Some("openai/gpt-5"));
    assert_eq!(l.meta.meta["task"], "fix_port");
    assert_eq!(l.meta.meta["limit"]["type"], "message");
    assert_eq!(l.meta.meta["limit"]["limit"], 14);
}

/// A re-logged sample is two members with one name: the last one wins.
#[test]
fn inspect_a_sample_written_twice_reads_its_last_member() {
    let c = read(&[fx("inspect/deflate.eval")]);
    let s = session(&c, "uuid-clean-2");
    let texts: Vec<&str> = s
        .events
        .iter()
        .filter_map(|e| match &e.record {
            Record::Content { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, vec!["Listing.", "done"]);
}

/// A run still in progress has no `header.json`: `_journal/start.json` says
/// what the eval is.
#[test]
fn inspect_a_run_in_progress_reads_from_its_journal() {
    let c = read(&[fx("inspect/running.eval")]);
    assert_eq!(ids(&c), vec!["uuid-loop-1"]);
    assert_eq!(
        session(&c, "uuid-loop-1").meta.model.as_deref(),
        Some("openai/gpt-5")
    );
}

/// The single-object `.json`, with bare `NaN`, reads as the `.eval` does.
#[test]
fn inspect_json_with_bare_nan_reads() {
    let text = std::fs::read_to_string(fx("inspect/log.json")).unwrap();
    assert!(text.contains(": NaN"));
    let c = read(&[fx("inspect/log.json")]);
    assert_eq!(ids(&c), vec!["uuid-json-1", "uuid-json-2"]);
    let e = read(&[fx("inspect/deflate.eval")]);
    assert_eq!(
        shape(session(&c, "uuid-json-1")),
        shape(session(&e, "uuid-loop-1"))
    );
}

/// Provenance: the member, its line and the pointer hold the call.
#[test]
fn inspect_provenance_names_the_member_line_and_pointer() {
    let c = read(&[fx("inspect/zstd.eval")]);
    let si = c
        .sessions
        .iter()
        .position(|s| s.id == "uuid-loop-1")
        .unwrap();
    let s = &c.sessions[si];
    let ei = s
        .events
        .iter()
        .position(|e| matches!(e.record, Record::ToolCall { .. }))
        .unwrap();
    let p = c.provenance(si, ei as u32 + 1).unwrap();
    assert_eq!(
        p.file,
        "tests/fixtures/formats-2026/inspect/zstd.eval!samples/1_epoch_1.json"
    );
    let pointer = p.pointer.unwrap();
    // The member, decompressed independently: the line opens the message the pointer names.
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys,zipfile; sys.stdout.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]).decode())",
            "tests/fixtures/formats-2026/inspect/deflate.eval",
            "samples/1_epoch_1.json",
        ])
        .output();
    let Some(out) = out.ok().filter(|o| o.status.success()) else {
        crate::util::skipped("python3 is not available");
        return;
    };
    let text = String::from_utf8(out.stdout).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let msg = doc.pointer(pointer).unwrap();
    assert_eq!(msg["tool_calls"][0]["function"], "read_file");
    let line = text.lines().nth(p.line.unwrap() as usize - 1).unwrap();
    assert_eq!(line.trim(), "{");
    let from_line: String = text
        .lines()
        .skip(p.line.unwrap() as usize - 1)
        .take(3)
        .collect();
    assert!(from_line.contains("\"role\": \"assistant\""), "{from_line}");
}

#[test]
fn inspect_a_truncated_zip_is_a_clear_error() {
    let f = fx("inspect-bad/truncated.eval");
    let o = run(&["replay", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("truncated.eval: not a readable ZIP archive: damaged or truncated"),
        "{err}"
    );
    // Lenient: the file is skipped and counted.
    let o = run(&["replay", "--lenient", "--allow-empty", f.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("skipped 1 bad line"), "{}", stderr(&o));
}

/// A zstd member that expands 30,000 times is stopped by the ratio cap
/// before it is decompressed; the flag raises the cap.
#[test]
fn inspect_a_zstd_bomb_member_is_stopped_by_the_caps() {
    let f = fx("inspect-bad/bomb.eval");
    let o = run(&["replay", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("bomb.eval: ZIP member `samples/1_epoch_1.json` expands more than 100 times")
            && err.contains("--max-gzip-ratio"),
        "{err}"
    );
    let o = run(&["replay", "--max-gzip-bytes", "1000", f.to_str().unwrap()]);
    assert!(
        stderr(&o).contains("expands past 1000 bytes"),
        "{}",
        stderr(&o)
    );
    // Raised: the member decompresses, and 64 MiB of spaces is not a sample.
    let o = run(&["replay", "--max-gzip-ratio", "100000", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("bomb.eval!samples/1_epoch_1.json:"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn atif_continuation_follows_its_parent_and_subagents_are_sessions() {
    let c = read(&[fx("atif")]);
    assert_eq!(ids(&c), vec!["traj-42", "traj-42/sub-1"]);
    assert_eq!(c.files[0].format, "atif");
    let s = session(&c, "traj-42");
    // Three agent steps in the parent, three new ones in the continuation
    // (the copied ones skipped); `trajectory.cont-1.json` sorts before
    // `trajectory.json` but is merged after it.
    assert_eq!(s.turns, 6);
    let first_file = &c.files[s.events[0].origin.file as usize].path;
    let last_file = &c.files[s.events.last().unwrap().origin.file as usize].path;
    assert!(
        first_file.ends_with("agent/trajectory.json"),
        "{first_file}"
    );
    assert!(last_file.ends_with("trajectory.cont-1.json"), "{last_file}");
    let calls: Vec<String> = shape(s)
        .into_iter()
        .filter(|x| x.starts_with("call"))
        .collect();
    assert_eq!(calls.len(), 6);
    assert_eq!(s.meta.meta["agent_name"], "terminus-2");
    assert_eq!(s.meta.model.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(s.meta.meta["compactions"], 1);
    let sub = session(&c, "traj-42/sub-1");
    assert_eq!(sub.meta.meta["parent"], "traj-42");
    assert_eq!(shape(sub).iter().filter(|x| *x == "call grep").count(), 1);
    // The provenance of a subagent's call points inside the parent file.
    let si = c
        .sessions
        .iter()
        .position(|x| x.id == "traj-42/sub-1")
        .unwrap();
    let ei = sub
        .events
        .iter()
        .position(|e| matches!(e.record, Record::ToolCall { .. }))
        .unwrap();
    let p = c.provenance(si, ei as u32 + 1).unwrap();
    assert_eq!(p.pointer, Some("/subagent_trajectories/0/steps/1"));
}

/// A continuation whose parent is missing reads on its own, said so in its
/// metadata.
#[test]
fn atif_a_continuation_without_its_parent_reads_alone() {
    let c = read(&[fx("atif-orphan")]);
    assert_eq!(ids(&c), vec!["sess-7"]);
    let s = session(&c, "sess-7");
    assert_eq!(s.meta.meta["continuation"], 2);
    assert_eq!(s.turns, 3);
}

/// Codex's archive is a default place, read zstd-compressed, with the 2026
/// item types; a plain rollout beside its `.zst` twin wins.
#[test]
fn codex_archived_sessions_are_found_and_read() {
    let home = tempfile::tempdir().unwrap();
    let archive = home.path().join(".codex/archived_sessions");
    std::fs::create_dir_all(&archive).unwrap();
    let name = "rollout-2026-06-01T09-00-00-0199-arch.jsonl";
    let plain = std::fs::read(fx("codex").join(name)).unwrap();
    std::fs::write(
        archive.join(format!("{name}.zst")),
        zstd::encode_all(&plain[..], 3).unwrap(),
    )
    .unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let replay = || {
        looptune()
            .current_dir(cwd.path())
            .env("HOME", home.path())
            .env_remove("CODEX_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("XDG_DATA_HOME")
            .env_remove("INSPECT_LOG_DIR")
            .args(["replay", "--format", "json", "--profile", "gemini-latest"])
            .assert()
            .success()
            .stderr(predicate::str::contains("archived_sessions (codex)"))
    };
    let out = replay().get_output().stdout.clone();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains("\"session\":\"rollout-2026-06-01T09-00-00-0199-arch\""),
        "{out}"
    );
    assert!(out.contains("calendar.create_event"), "{out}");
    assert!(out.contains(&format!("{name}.zst")), "{out}");
    // The plain twin wins.
    std::fs::write(archive.join(name), &plain).unwrap();
    let out = String::from_utf8(replay().get_output().stdout.clone()).unwrap();
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(!out.contains(".zst"), "{out}");
}

/// Inspect AI's `./logs` and Harbor's `jobs/` of the current folder are
/// default places.
#[test]
fn inspect_logs_and_harbor_jobs_are_found_in_the_current_folder() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(cwd.path().join("logs")).unwrap();
    std::fs::copy(
        fx("inspect/zstd.eval"),
        cwd.path().join("logs/2026-06-04_fix-port_E1.eval"),
    )
    .unwrap();
    let trial = cwd.path().join("jobs/job-1/trial-1/agent");
    std::fs::create_dir_all(&trial).unwrap();
    std::fs::copy(
        fx("atif/jobs/job-1/trial-1/agent/trajectory.json"),
        trial.join("trajectory.json"),
    )
    .unwrap();
    let a = looptune()
        .current_dir(cwd.path())
        .env("HOME", home.path())
        .env_remove("INSPECT_LOG_DIR")
        .args(["replay", "--format", "json"])
        .assert()
        .success()
        .stderr(predicate::str::contains("logs (inspect-ai)"))
        .stderr(predicate::str::contains("jobs (atif)"));
    let out = String::from_utf8(a.get_output().stdout.clone()).unwrap();
    for id in ["uuid-loop-1", "uuid-clean-2", "traj-42", "traj-42/sub-1"] {
        assert!(
            out.contains(&format!("\"session\":\"{id}\"")),
            "{id}: {out}"
        );
    }
}

/// Every form of a validation set labels the same sessions; a loop has no
/// onset: scored for recall, its turns-to-detection unknown and said so.
#[test]
fn scout_validation_sets_are_labels() {
    let eval = fx("inspect/deflate.eval");
    let mut rows: Vec<String> = Vec::new();
    for v in [
        "validation.csv",
        "validation.yaml",
        "validation.json",
        "validation.jsonl",
        "labels-columns.csv",
    ] {
        let d = tempfile::tempdir().unwrap();
        let mut paths = vec![eval.clone()];
        if v == "validation.json" {
            // It names a session of the `.json` log too.
            paths.push(fx("inspect/log.json"));
        }
        let mut args: Vec<String> = vec!["sweep".into()];
        args.extend(paths.iter().map(|p| p.display().to_string()));
        args.extend(
            [
                "--labels",
                fx("scout").join(v).to_str().unwrap(),
                "--out",
                d.path().to_str().unwrap(),
                "--quiet",
            ]
            .map(String::from),
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run(&args);
        assert_eq!(o.status.code(), Some(0), "{v}: {}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            out.contains("labels: 1 loop (1 without an onset: turns-to-detection unknown)"),
            "{v}: {out}"
        );
        let csv = std::fs::read_to_string(d.path().join("sweep.csv")).unwrap();
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
        let col = |n: &str| row[header.iter().position(|h| *h == n).unwrap()];
        rows.push(format!(
            "{} {} {} {}",
            col("labeled_loops"),
            col("true_positives"),
            col("recall"),
            col("ttd_n")
        ));
    }
    assert!(rows.iter().all(|r| r == &rows[0]), "{rows:?}");
    assert!(rows[0].starts_with("1 1 1"), "{rows:?}");
    assert!(rows[0].ends_with(" 0"), "{rows:?}");
}

#[test]
fn labels_export_as_a_scout_validation_set_and_read_back() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("validation.csv");
    looptune()
        .args([
            "label",
            "--labels",
            "fixtures/labels.csv",
            "--export",
            "scout",
        ])
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains("onsets dropped"));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.starts_with("id,target\n"), "{text}");
    let own = std::fs::read_to_string("fixtures/labels.csv").unwrap();
    let loops_own = own.lines().filter(|l| l.contains(",loop,")).count();
    assert_eq!(
        text.lines().filter(|l| l.ends_with(",true")).count(),
        loops_own
    );
    // A sweep with the export scores the same loops and false positives.
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let sweep = |labels: &Path, dir: &Path| -> Vec<String> {
        let o = run(&[
            "sweep",
            "fixtures/",
            "--labels",
            labels.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
            "--quiet",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let csv = std::fs::read_to_string(dir.join("sweep.csv")).unwrap();
        let header: Vec<String> = csv
            .lines()
            .next()
            .unwrap()
            .split(',')
            .map(String::from)
            .collect();
        let pick = ["config", "true_positives", "false_positives", "recall"];
        csv.lines()
            .skip(1)
            .map(|l| {
                let row: Vec<&str> = l.split(',').collect();
                pick.iter()
                    .map(|n| row[header.iter().position(|h| h == n).unwrap()])
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    };
    assert_eq!(
        sweep(Path::new("fixtures/labels.csv"), a.path()),
        sweep(&out, b.path())
    );
    // Never over the labels file.
    looptune()
        .args([
            "label",
            "--labels",
            "fixtures/labels.csv",
            "--export",
            "scout",
            "fixtures/labels.csv",
        ])
        .assert()
        .code(2);
}

/// `detectors`, `--input-format` and the errors name the new formats.
#[test]
fn the_new_formats_are_listed() {
    let o = run(&["detectors"]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let last = text.lines().last().unwrap();
    assert!(
        last.starts_with("input formats (--input-format")
            && last.contains("codex")
            && last.contains("atif, harbor")
            && last.contains("inspect-ai, inspect"),
        "{last}"
    );
    let o = run(&["replay", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout).into_owned();
    for name in ["inspect-ai", "atif"] {
        assert!(help.contains(&format!("- {name}")), "{help}");
    }
    let o = run(&[
        "replay",
        "--input-format",
        "atif",
        fx("inspect/log.json").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("ATIF"), "{}", stderr(&o));
}

/// A copy of the `atif` fixture's trial folder at `to`, each file's JSON
/// changed by `edit(file name, document)`.
fn atif_trial(to: &Path, edit: impl Fn(&str, &mut serde_json::Value)) {
    let from = fx("atif/jobs/job-1/trial-1/agent");
    std::fs::create_dir_all(to).unwrap();
    for name in ["trajectory.json", "trajectory.cont-1.json"] {
        let mut v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(from.join(name)).unwrap()).unwrap();
        edit(name, &mut v);
        std::fs::write(to.join(name), serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    }
}

/// Sessions and their turns, as `replay` (the streamed read) reports them.
fn replayed(dir: &Path) -> Vec<(String, u64)> {
    let o = crate::util::looptune()
        .args(["replay", "--format", "json", "--profile", "gemini-latest"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let mut got: Vec<(String, u64)> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|s| {
            (
                s["session"].as_str().unwrap().to_string(),
                s["turns"].as_u64().unwrap(),
            )
        })
        .collect();
    got.sort();
    got
}

/// Issue #42 item 6: a copied job folder is read once; trajectories of other
/// folders that give the same id (or none) stay apart; a continuation joins
/// the trajectory whose `continued_trajectory_ref` names it, also under
/// another id; two trials' `cont-1` files each join their own parent.
#[test]
fn atif_copies_are_read_once_and_unrelated_trajectories_stay_apart() {
    let d = tempfile::tempdir().unwrap();
    let turns = |c: &Corpus| -> Vec<(String, u32)> {
        let mut v: Vec<(String, u32)> = c
            .sessions
            .iter()
            .filter(|s| !s.id.contains("sub-1"))
            .map(|s| (s.id.clone(), s.turns))
            .collect();
        v.sort();
        v
    };

    // A copied job folder: 6 turns, not 12.
    let copied = d.path().join("copied");
    atif_trial(&copied.join("job-1/trial-1/agent"), |_, _| {});
    atif_trial(&copied.join("job-1-copy/trial-1/agent"), |_, _| {});
    let c = read(std::slice::from_ref(&copied));
    assert_eq!(turns(&c), vec![("traj-42".to_string(), 6)]);
    assert_eq!(ids(&c), vec!["traj-42", "traj-42/sub-1"]);

    // Two jobs without ids, and two trials sharing a `session_id`: each
    // trajectory is a session of its own (with its continuation).
    for (name, keep_session) in [("no-ids", false), ("same-session", true)] {
        let dir = d.path().join(name);
        for (job, task) in [("job-a", "first task"), ("job-b", "second task")] {
            atif_trial(&dir.join(job).join("trial-1/agent"), |_, v| {
                let m = v.as_object_mut().unwrap();
                m.remove("trajectory_id");
                if !keep_session {
                    m.remove("session_id");
                }
                v["steps"][0]["message"] = task.into();
            });
        }
        let c = read(std::slice::from_ref(&dir));
        let got = turns(&c);
        assert_eq!(got.len(), 2, "{name}: {got:?}");
        assert!(got.iter().all(|(_, t)| *t == 6), "{name}: {got:?}");
        assert!(got[0].0.starts_with("job-a/"), "{name}: {got:?}");
        let streamed = replayed(&dir);
        assert_eq!(
            streamed,
            got.iter()
                .map(|(id, t)| (id.clone(), *t as u64))
                .chain(
                    c.sessions
                        .iter()
                        .filter(|s| s.id.contains("sub-1"))
                        .map(|s| (s.id.clone(), s.turns as u64))
                )
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect::<Vec<_>>(),
            "{name}"
        );
    }

    // The continuation gives another trajectory id; the parent's ref names it.
    let joined = d.path().join("joined");
    atif_trial(&joined.join("trial-1/agent"), |name, v| {
        if name == "trajectory.cont-1.json" {
            v["trajectory_id"] = "traj-99".into();
        }
    });
    let c = read(std::slice::from_ref(&joined));
    assert_eq!(turns(&c), vec![("traj-42".to_string(), 6)]);
    assert_eq!(ids(&c), vec!["traj-42", "traj-42/sub-1"]);
    assert!(replayed(&joined).contains(&("traj-42".to_string(), 6)));
    // Without the ref, another id is another trajectory.
    let apart = d.path().join("apart");
    atif_trial(&apart.join("trial-1/agent"), |name, v| {
        if name == "trajectory.cont-1.json" {
            v["trajectory_id"] = "traj-99".into();
        } else {
            v.as_object_mut()
                .unwrap()
                .remove("continued_trajectory_ref");
        }
    });
    let c = read(&[apart]);
    assert_eq!(
        turns(&c),
        vec![("traj-42".to_string(), 3), ("traj-99".to_string(), 3)]
    );

    // Two trials whose `cont-1` files differ: each joins its own parent.
    let trials = d.path().join("trials");
    for (trial, task) in [("trial-1", "first task"), ("trial-2", "second task")] {
        atif_trial(&trials.join(trial).join("agent"), |_, v| {
            v["steps"][0]["message"] = task.into();
            if let Some(step) = v["steps"].as_array_mut().unwrap().last_mut() {
                step["message"] = format!("{task}: last step").into();
            }
        });
    }
    let c = read(std::slice::from_ref(&trials));
    let got = turns(&c);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got.iter().all(|(_, t)| *t == 6), "{got:?}");
}
