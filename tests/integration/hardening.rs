//! Issue #16, hardening: limits checked before work, user text escaped in
//! every output, outputs that never clobber their inputs and are replaced
//! whole, pipes and empty inputs handled as a CI job and a shell user expect.

use crate::util::{looptune, root, write};
use assert_cmd::Command;
use predicates::prelude::*;
use std::path::Path;

/// Five identical tool calls in session `id`, with an inline label.
fn looping_session(id: &str, is_loop: bool) -> String {
    let id = serde_json::to_string(id).unwrap();
    let mut s = format!("{{\"type\":\"user\",\"text\":\"go\",\"session\":{id}}}\n");
    for _ in 0..6 {
        s.push_str(&format!(
            "{{\"type\":\"tool_call\",\"name\":\"t\",\"args\":{{\"a\":1}},\"session\":{id}}}\n"
        ));
    }
    s.push_str(&format!(
        "{{\"type\":\"label\",\"loop\":{is_loop},\"session\":{id}}}\n"
    ));
    s
}

fn calm_session(id: &str, is_loop: bool) -> String {
    let id = serde_json::to_string(id).unwrap();
    format!(
        "{{\"type\":\"user\",\"text\":\"go\",\"session\":{id}}}\n{{\"type\":\"content\",\"text\":\"hello\",\"session\":{id}}}\n{{\"type\":\"label\",\"loop\":{is_loop},\"session\":{id}}}\n"
    )
}

#[test]
fn a_grid_of_a_billion_configurations_is_refused_before_work() {
    let d = tempfile::tempdir().unwrap();
    let g = write(
        d.path(),
        "big.toml",
        "family = \"gemini\"\n[axes]\ntool_call_threshold = { start = 1, stop = 1000, step = 1 }\ncontent_chunk_size = { start = 1, stop = 1000, step = 1 }\ncontent_loop_threshold = { start = 2, stop = 1001, step = 1 }\n",
    );
    looptune()
        .current_dir(root())
        .args(["sweep", "fixtures/", "--quiet", "--grid"])
        .arg(&g)
        .arg("--out")
        .arg(d.path().join("o"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("1000000000 configurations"))
        .stderr(predicate::str::contains("--max-configs"));
    let g = write(
        d.path(),
        "over.toml",
        "family = \"gemini\"\n[axes]\ntool_call_threshold = { start = -1, stop = 9223372036854775807, step = 1 }\n",
    );
    looptune()
        .current_dir(root())
        .args(["sweep", "fixtures/", "--quiet", "--grid"])
        .arg(&g)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "range has 9223372036854775809 values",
        ));
    assert!(!d.path().join("o").exists());
}

#[test]
fn max_configs_is_honoured_and_names_itself() {
    let d = tempfile::tempdir().unwrap();
    let g = write(
        d.path(),
        "g.toml",
        "family = \"gemini\"\nstock_profiles = false\n[axes]\ntool_call_threshold = [3, 4, 5]\n",
    );
    looptune()
        .current_dir(root())
        .args([
            "sweep",
            "fixtures/",
            "--quiet",
            "--max-configs",
            "2",
            "--grid",
        ])
        .arg(&g)
        .arg("--out")
        .arg(d.path().join("o"))
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("3 configurations")
                .and(predicate::str::contains("--max-configs")),
        );
}

#[test]
fn jobs_beyond_the_cap_is_a_usage_error_naming_the_flag() {
    looptune()
        .current_dir(root())
        .args(["replay", "-j", "10000", "fixtures/"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--jobs 10000"));
}

#[test]
fn markdown_junit_and_terminal_keep_hostile_ids_inert() {
    let d = tempfile::tempdir().unwrap();
    let image = "a\n\n![x](http://evil.example/p.png)";
    let script = "</details><script>alert(1)</script>";
    let esc = "b\u{1b}]0;owned\u{7}";
    let body = format!(
        "{}{}{}",
        looping_session(image, false),
        calm_session(script, true),
        looping_session(esc, false)
    );
    let f = write(d.path(), "s.jsonl", &body);
    let md = d.path().join("s.md");
    let xml = d.path().join("s.xml");
    let out = looptune()
        .arg("replay")
        .arg(&f)
        .arg("--markdown")
        .arg(&md)
        .arg("--junit")
        .arg(&xml)
        .arg("--junit-sessions")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        !stdout.contains('\u{1b}') && !stdout.contains('\u{7}'),
        "{stdout:?}"
    );
    assert!(stdout.contains("\\u{1b}"), "{stdout}");
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("missed loop"), "{md}");
    assert!(!md.contains("\n![x]"), "{md}");
    assert!(!md.contains("<script>"), "{md}");
    assert_eq!(md.matches("</details>").count(), 1, "{md}");
    assert!(
        md.contains("- false positive: a\\\\n\\\\n\\!\\[x\\]"),
        "{md}"
    );
    let xml = std::fs::read_to_string(&xml).unwrap();
    assert!(
        !xml.contains("<script>") && !xml.contains('\u{1b}'),
        "{xml}"
    );
    assert!(xml.contains("a&#10;&#10;![x]"), "{xml}");
}

#[test]
fn import_from_stdin_never_overwrites_its_own_input() {
    let d = tempfile::tempdir().unwrap();
    let body = looping_session("s", true);
    let f = write(d.path(), "s.jsonl", &body);
    // The file itself as stdin (not a copy through a pipe), as a shell's `< F` gives it.
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("looptune"))
        .args(["import", "-", "-o"])
        .arg(&f)
        .stdin(std::fs::File::open(&f).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("standard input"));
    assert_eq!(std::fs::read_to_string(&f).unwrap(), body);
    // Another output from the same stdin is fine.
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("looptune"))
        .args(["import", "-", "-o"])
        .arg(d.path().join("copy.jsonl"))
        .stdin(std::fs::File::open(&f).unwrap())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

fn sweep_into(input: &Path, out: &Path, labels: Option<&Path>) -> Command {
    let mut c = looptune();
    c.arg("sweep")
        .arg(input)
        .args(["--quiet", "--out"])
        .arg(out);
    if let Some(l) = labels {
        c.arg("--labels").arg(l);
    }
    c
}

#[test]
fn out_inside_the_input_folder_works_the_second_time() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("in");
    std::fs::create_dir(&input).unwrap();
    write(&input, "a.jsonl", &looping_session("a", true));
    write(&input, "b.jsonl", &calm_session("b", false));
    let out = input.join("report");
    sweep_into(&input, &out, None).assert().success();
    let first = std::fs::read(out.join("sweep.csv")).unwrap();
    sweep_into(&input, &out, None).assert().success();
    assert_eq!(std::fs::read(out.join("sweep.csv")).unwrap(), first);
}

#[cfg(unix)]
#[test]
fn outputs_honour_the_umask_not_0600() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "s.jsonl", &looping_session("s", true));
    let o = d.path().join("o.jsonl");
    looptune()
        .arg("import")
        .arg(&f)
        .arg("-o")
        .arg(&o)
        .assert()
        .success();
    let mode = std::fs::metadata(&o).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        mode,
        std::fs::metadata(&f).unwrap().permissions().mode() & 0o777
    );
    assert_ne!(mode, 0o600);
}

/// SIGINT while a sweep stages its outputs: the previous set stays whole and
/// no temporary file or folder is left.
#[cfg(unix)]
#[test]
fn an_interrupted_sweep_leaves_the_previous_outputs_whole() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("in");
    std::fs::create_dir(&input).unwrap();
    write(&input, "a.jsonl", &looping_session("a", true));
    write(&input, "b.jsonl", &calm_session("b", false));
    let out = d.path().join("out");
    sweep_into(&input, &out, None).assert().success();
    let before: Vec<(std::ffi::OsString, Vec<u8>)> = {
        let mut v: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.file_name(), std::fs::read(e.path()).unwrap())
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(before.len(), 5);
    // Different labels: every new output would differ from the old one.
    let labels = write(
        d.path(),
        "labels.csv",
        "session,label,onset_turn\na,clean,\nb,loop,1\n",
    );
    let bin = assert_cmd::cargo::cargo_bin("looptune");
    let mut child = std::process::Command::new(bin)
        .arg("sweep")
        .arg(&input)
        .args(["--quiet", "--labels"])
        .arg(&labels)
        .arg("--out")
        .arg(&out)
        .env("LOOPTUNE_TEST_STAGE_DELAY_MS", "400")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the set is being staged, then interrupt.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let staging = std::fs::read_dir(&out).unwrap().any(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".looptune-stage-")
        });
        if staging {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never started staging"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out_status = child.wait().unwrap();
    assert_eq!(out_status.code(), Some(130));
    let mut after: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.file_name(), std::fs::read(e.path()).unwrap_or_default())
        })
        .collect();
    after.sort();
    assert_eq!(
        after, before,
        "the previous outputs, whole, and nothing else"
    );
}

/// `looptune detectors | head -1`: the reader went away; no "Broken pipe", exit 0.
#[test]
fn a_closed_pipe_ends_quietly_with_success() {
    for args in [
        vec!["detectors"],
        vec!["replay", "--quiet", "--all", "fixtures/"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("looptune"))
            .current_dir(root())
            .args(&args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        assert!(
            out.stderr.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn no_session_read_is_exit_2_with_the_reason_unless_allowed() {
    let d = tempfile::tempdir().unwrap();
    let junk = d.path().join("onlyjunk");
    std::fs::create_dir(&junk).unwrap();
    write(&junk, "notes.json", "{\"hello\": 1}\n");
    looptune()
        .args(["replay", "--fail-on-detection"])
        .arg(&junk)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no sessions read from"))
        .stderr(predicate::str::contains("--allow-empty"));
    looptune()
        .arg("sweep")
        .arg(&junk)
        .args(["--quiet", "--out"])
        .arg(d.path().join("o"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not recognised as a session log"));
    assert!(!d.path().join("o").exists());
    looptune()
        .args(["replay", "--allow-empty"])
        .arg(&junk)
        .assert()
        .success()
        .stdout(predicate::str::contains("0 sessions"));
}

#[test]
fn messages_use_the_right_plural_and_do_not_repeat_their_cause() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "s.jsonl",
        "{\"type\":\"user\",\"text\":\"go\"}\nnot json\n",
    );
    looptune()
        .args(["replay", "--lenient"])
        .arg(&f)
        .assert()
        .success()
        .stdout(predicate::str::contains("1 session, 0 turns, 1 event;"))
        .stderr(predicate::str::contains("skipped 1 bad line ("));
    let out = looptune()
        .args(["replay", "/nonexistent/looptune-input"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.matches("No such file").count(), 1, "{err}");
}

#[test]
fn gate_lines_name_the_configuration_they_checked() {
    looptune()
        .current_dir(root())
        .args([
            "replay",
            "fixtures/",
            "--quiet",
            "--labels",
            "fixtures/labels.csv",
            "--require",
            "sessions>=1",
        ])
        .assert()
        .success()
        .stderr(predicate::str::contains("(configuration gemini-latest)"));
}

#[test]
fn every_subcommand_help_has_examples_and_exit_codes() {
    for cmd in [
        "replay",
        "sweep",
        "report",
        "import",
        "detectors",
        "completions",
        "man",
    ] {
        looptune().args([cmd, "--help"]).assert().success().stdout(
            predicate::str::contains("Examples:").and(predicate::str::contains("Exit codes:")),
        );
    }
}

#[test]
fn allowed_values_are_listed_and_a_bad_input_format_is_rejected_before_reading() {
    looptune()
        .args(["replay", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("claude-code"))
        .stdout(predicate::str::contains("gemini-latest"))
        .stdout(predicate::str::contains("opencode"));
    looptune()
        .args([
            "replay",
            "--input-format",
            "bogus",
            "/nonexistent/looptune-input",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--input-format"))
        .stderr(predicate::str::contains("nonexistent").not());
}

#[test]
fn completions_and_man_page() {
    looptune()
        .args(["completions", "bash"])
        .assert()
        .success()
        .stdout(predicate::str::contains("_looptune()").and(predicate::str::contains("sweep")));
    looptune()
        .arg("man")
        .assert()
        .success()
        .stdout(predicate::str::contains(".TH looptune 1"));
}

#[test]
fn dash_o_is_the_output_in_every_command() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "s.jsonl", &looping_session("s", true));
    // import: -o, --output and --out.
    for flag in ["-o", "--output", "--out"] {
        let o = d.path().join(format!("i{}.jsonl", flag.len()));
        looptune()
            .arg("import")
            .arg(&f)
            .arg(flag)
            .arg(&o)
            .assert()
            .success();
        assert!(o.is_file(), "{flag}");
    }
    // sweep: -o, --out and --output.
    for flag in ["-o", "--out", "--output"] {
        let o = d.path().join(format!("s{}", flag.len()));
        looptune()
            .arg("sweep")
            .arg(&f)
            .arg("--quiet")
            .arg(flag)
            .arg(&o)
            .assert()
            .success();
        assert!(o.join("sweep.csv").is_file(), "{flag}");
    }
}

#[test]
fn without_paths_replay_and_sweep_read_the_agents_log_folders() {
    let home = tempfile::tempdir().unwrap();
    let isolate = |c: &mut Command| {
        c.env("HOME", home.path())
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("XDG_DATA_HOME");
    };
    let mut c = looptune();
    isolate(&mut c);
    c.arg("replay")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no PATHS given and no agent log folder found",
        ))
        .stderr(predicate::str::contains(".claude/projects"));
    let projects = home.path().join(".claude/projects/p");
    std::fs::create_dir_all(&projects).unwrap();
    write(&projects, "s1.jsonl", &looping_session("s1", true));
    let mut c = looptune();
    isolate(&mut c);
    c.args(["replay", "--quiet"])
        .assert()
        .success()
        .stderr(predicate::str::contains("no PATHS given: reading"))
        .stderr(predicate::str::contains("(claude-code)"))
        .stdout(predicate::str::contains("1 session,"));
    let out = home.path().join("o");
    let mut c = looptune();
    isolate(&mut c);
    c.args(["sweep", "--quiet", "--out"])
        .arg(&out)
        .assert()
        .success();
    assert!(out.join("sweep.csv").is_file());
    // `label --suggest` reads the same folders (s1 is labelled inline, so the queue is empty).
    let mut c = looptune();
    isolate(&mut c);
    c.args(["label", "--suggest"])
        .assert()
        .success()
        .stderr(predicate::str::contains("no PATHS given: reading"))
        .stdout(predicate::str::contains("session,file,reason"));
}

#[test]
fn a_sweep_without_out_says_before_replacing_its_previous_folder() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "s.jsonl", &looping_session("s", true));
    let run = || {
        looptune()
            .current_dir(d.path())
            .arg("sweep")
            .arg(&f)
            .arg("--quiet")
            .assert()
            .success()
    };
    run().stderr(predicate::str::contains("replacing the previous outputs").not());
    assert!(d.path().join("reports/sweep-default/sweep.csv").is_file());
    run().stderr(predicate::str::contains(
        "note: replacing the previous outputs in reports/sweep-default",
    ));
}
