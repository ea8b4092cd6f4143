//! Issue #45's rules on sessions made by hand, each with sessions of its
//! kind and sessions it must not flag (batch writes of different files,
//! polling, retries after a real change).

use super::actions::{shell_writes, BadEntry, ChangeTools, TargetKeys};
use super::tests::{call, result, session, user};
use crate::detect::{DetectorConfig, ParamValue};
use crate::event::Record;
use serde_json::{json, Value};

/// looptune-default's own rules off, then `sets`: (kind, 1-based event).
fn detect(records: &[Record], sets: &[(&str, i64)]) -> Vec<(&'static str, u32)> {
    let sets: Vec<(&str, ParamValue)> = sets
        .iter()
        .map(|(k, v)| (*k, ParamValue::Int(*v)))
        .collect();
    super::tests::detect(&session(records.to_vec()), &sets)
}

/// A call and its successful answer.
fn ok(r: &mut Vec<Record>, name: &str, args: Value, out: &str) {
    r.push(call(name, args));
    r.push(result(name, out, false));
}

#[test]
fn same_target_counts_rewrites_of_one_file_with_new_content() {
    let mut r = vec![user()];
    for i in 0..5 {
        ok(
            &mut r,
            "create_file",
            json!({"filePath": "solution.sh", "content": format!("echo {i}")}),
            "created",
        );
    }
    // Calls at events 2, 4, 6, 8, 10.
    assert_eq!(
        detect(&r, &[("target_stop", 4)]),
        [("same_target", 8), ("same_target", 10)]
    );
    assert_eq!(
        detect(&r, &[("target_warn", 3), ("target_stop", 5)]),
        [("same_target_warn", 6), ("same_target", 10)]
    );
    // No identical call among them: the repeat rule sees nothing.
    assert_eq!(detect(&r, &[("repeat_stop", 2)]), []);
    // Codex patches name their file in the patch text.
    let mut r = vec![user()];
    for i in 0..4 {
        let patch =
            format!("*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y{i}\n*** End Patch");
        ok(&mut r, "apply_patch", json!({ "input": patch }), "Success");
    }
    assert_eq!(detect(&r, &[("target_stop", 4)]), [("same_target", 8)]);
}

#[test]
fn same_target_leaves_batch_writes_edit_view_cycles_and_polling_alone() {
    // Batch writes of different files.
    let mut r = vec![user()];
    for f in ["a.py", "b.py", "c.py", "d.py", "e.py"] {
        ok(
            &mut r,
            "Write",
            json!({"file_path": f, "content": "x"}),
            "ok",
        );
    }
    assert_eq!(detect(&r, &[("target_stop", 3)]), []);
    // Viewing and editing one file in turn: the editor's sub-commands differ.
    let mut r = vec![user()];
    for i in 0..3 {
        ok(
            &mut r,
            "str_replace_editor",
            json!({"command": "view", "path": "/w/x.py"}),
            "text",
        );
        ok(
            &mut r,
            "str_replace_editor",
            json!({"command": "str_replace", "path": "/w/x.py", "old_str": i.to_string()}),
            "edited",
        );
    }
    assert_eq!(detect(&r, &[("target_stop", 3)]), []);
    // A status poll has no target.
    let mut r = vec![user()];
    for _ in 0..5 {
        ok(
            &mut r,
            "write_stdin",
            json!({"session_id": 3, "chars": ""}),
            "running",
        );
    }
    assert_eq!(detect(&r, &[("target_stop", 3)]), []);
    // The same file read in two prompts is not a run.
    let mut r = vec![user()];
    ok(&mut r, "Read", json!({"file_path": "a"}), "x");
    ok(&mut r, "Read", json!({"file_path": "a"}), "x");
    r.push(user());
    ok(&mut r, "Read", json!({"file_path": "a"}), "x");
    assert_eq!(detect(&r, &[("target_stop", 3)]), []);
}

#[test]
fn failure_ladder_counts_one_tool_failing_whatever_the_error() {
    // An edit fight: every attempt rejected with another message, reads between.
    let mut r = vec![user()];
    for i in 0..4 {
        r.push(call(
            "Edit",
            json!({"file_path": "a.rs", "old_string": i.to_string()}),
        ));
        r.push(result(
            "Edit",
            &format!("String {i} not found in file"),
            true,
        ));
        ok(&mut r, "Read", json!({"file_path": "a.rs"}), "fn main() {}");
    }
    // Edit results at events 3, 7, 11, 15.
    assert_eq!(detect(&r, &[("ladder_stop", 4)]), [("failure_ladder", 15)]);
    assert_eq!(
        detect(&r, &[("ladder_warn", 2), ("ladder_stop", 4)]),
        [("failure_ladder_warn", 7), ("failure_ladder", 15)]
    );
    // The error streak needs the same text: it sees nothing.
    assert_eq!(detect(&r, &[("error_stop", 2)]), []);
}

#[test]
fn failure_ladder_restarts_after_a_real_change_or_a_success() {
    let fail = |r: &mut Vec<Record>, i: usize| {
        r.push(call("Bash", json!({ "command": format!("make test{i}") })));
        r.push(result("Bash", &format!("error {i}"), true));
    };
    // A retry after a real change (a successful write) is a new attempt.
    let mut r = vec![user()];
    fail(&mut r, 0);
    fail(&mut r, 1);
    ok(
        &mut r,
        "Write",
        json!({"file_path": "Makefile", "content": "x"}),
        "ok",
    );
    fail(&mut r, 2);
    fail(&mut r, 3);
    assert_eq!(detect(&r, &[("ladder_stop", 3)]), []);
    // So is one after a shell command that writes.
    let mut r = vec![user()];
    fail(&mut r, 0);
    fail(&mut r, 1);
    ok(
        &mut r,
        "Bash",
        json!({"command": "sed -i 's/a/b/' Makefile"}),
        "",
    );
    fail(&mut r, 2);
    assert_eq!(detect(&r, &[("ladder_stop", 3)]), []);
    // A read-only success of another tool is no change; the tool's own
    // success ends its run.
    let mut r = vec![user()];
    fail(&mut r, 0);
    fail(&mut r, 1);
    ok(&mut r, "Read", json!({"file_path": "Makefile"}), "all:");
    fail(&mut r, 2);
    assert_eq!(detect(&r, &[("ladder_stop", 3)]), [("failure_ladder", 9)]);
    let mut r = vec![user()];
    fail(&mut r, 0);
    fail(&mut r, 1);
    ok(&mut r, "Bash", json!({"command": "ls"}), "Makefile");
    fail(&mut r, 2);
    assert_eq!(detect(&r, &[("ladder_stop", 3)]), []);
}

#[test]
fn repeated_edit_finds_the_restore_reapply_thrash() {
    let mut r = vec![user()];
    for _ in 0..3 {
        ok(
            &mut r,
            "bash",
            json!({"command": "git checkout src/f.py"}),
            "",
        );
        ok(
            &mut r,
            "bash",
            json!({"command": "sed -i 's/x/y/' src/f.py"}),
            "",
        );
        ok(
            &mut r,
            "bash",
            json!({"command": "python -m pytest"}),
            "1 failed",
        );
    }
    // Results: checkout 3, 9, 15; sed 5, 11, 17.
    assert_eq!(
        detect(&r, &[("same_edit_stop", 3)]),
        [("same_edit", 15), ("same_edit", 17)]
    );
    assert_eq!(
        detect(&r, &[("same_edit_warn", 2), ("same_edit_stop", 3)]),
        [
            ("same_edit_warn", 9),
            ("same_edit_warn", 11),
            ("same_edit", 15),
            ("same_edit", 17)
        ]
    );
    // Across prompts too: the session is what counts.
    let mut r = vec![user()];
    ok(
        &mut r,
        "Write",
        json!({"file_path": "a", "content": "1"}),
        "ok",
    );
    r.push(user());
    ok(
        &mut r,
        "Write",
        json!({"file_path": "a", "content": "1"}),
        "ok",
    );
    assert_eq!(detect(&r, &[("same_edit_stop", 2)]), [("same_edit", 6)]);
}

#[test]
fn repeated_edit_leaves_new_edits_reads_and_retried_failures_alone() {
    // Batch writes of different files, and new content for one file.
    let mut r = vec![user()];
    for f in ["a", "b", "c"] {
        ok(
            &mut r,
            "Write",
            json!({"file_path": f, "content": "x"}),
            "ok",
        );
    }
    for c in ["1", "2", "3"] {
        ok(
            &mut r,
            "Write",
            json!({"file_path": "a", "content": c}),
            "ok",
        );
    }
    // The same test run again is no edit.
    for _ in 0..3 {
        ok(&mut r, "bash", json!({"command": "pytest -q 2>&1"}), "ok");
    }
    assert_eq!(detect(&r, &[("same_edit_stop", 2)]), []);
    // An edit that failed, made again after a real change, is one edit.
    let mut r = vec![user()];
    let edit = json!({"file_path": "b", "old_string": "x", "new_string": "y"});
    r.push(call("Edit", edit.clone()));
    r.push(result("Edit", "File does not exist", true));
    ok(
        &mut r,
        "Write",
        json!({"file_path": "b", "content": "x"}),
        "ok",
    );
    ok(&mut r, "Edit", edit, "ok");
    assert_eq!(detect(&r, &[("same_edit_stop", 2)]), []);
}

#[test]
fn same_outcome_is_the_test_that_fails_alike_after_every_edit() {
    let mut r = vec![user()];
    for i in 0..3 {
        ok(
            &mut r,
            "Edit",
            json!({"file_path": "a.py", "old_string": i.to_string()}),
            "ok",
        );
        ok(
            &mut r,
            "Bash",
            json!({"command": "pytest"}),
            &format!("FAILED t1 t2 t3\n3 failed in 0.{i}1s"),
        );
    }
    // Test results at events 5, 9, 13; durations differ, normalised away.
    assert_eq!(detect(&r, &[("outcome_stop", 3)]), [("same_outcome", 13)]);
    assert_eq!(
        detect(&r, &[("outcome_warn", 2), ("outcome_stop", 3)]),
        [("same_outcome_warn", 9), ("same_outcome", 13)]
    );
    // An unchanged file re-viewed after edits of another counts by its target.
    let mut r = vec![user()];
    for i in 0..3 {
        ok(
            &mut r,
            "str_replace_editor",
            json!({"command": "view", "path": "/w/a.py", "view_range": [i, i + 20]}),
            "def f(): pass",
        );
        ok(
            &mut r,
            "str_replace_editor",
            json!({"command": "str_replace", "path": "/w/b.py", "old_str": i.to_string()}),
            "edited",
        );
    }
    assert_eq!(detect(&r, &[("outcome_stop", 3)]), [("same_outcome", 11)]);
}

#[test]
fn same_outcome_leaves_polling_and_retries_that_change_the_answer_alone() {
    // Polling: nothing changed between the asks.
    let mut r = vec![user()];
    for _ in 0..6 {
        ok(
            &mut r,
            "write_stdin",
            json!({"session_id": 1}),
            "still running",
        );
    }
    assert_eq!(detect(&r, &[("outcome_stop", 2)]), []);
    // A retry after a real change that gets a new answer.
    let mut r = vec![user()];
    for (i, out) in ["3 failed", "2 failed", "1 failed", "passed"]
        .iter()
        .enumerate()
    {
        ok(
            &mut r,
            "Edit",
            json!({"file_path": "a", "old_string": i.to_string()}),
            "ok",
        );
        ok(&mut r, "Bash", json!({"command": "pytest"}), out);
    }
    assert_eq!(detect(&r, &[("outcome_stop", 2)]), []);
    // The edits' own identical answers are no outcome.
    let mut r = vec![user()];
    for i in 0..4 {
        ok(
            &mut r,
            "Edit",
            json!({"file_path": "a", "old_string": i.to_string()}),
            "ok",
        );
    }
    assert_eq!(detect(&r, &[("outcome_stop", 2)]), []);
    // With the whole result compared, a difference past the head counts.
    let mut r = vec![user()];
    for i in 0..3 {
        ok(
            &mut r,
            "Write",
            json!({"file_path": "a", "content": i.to_string()}),
            "ok",
        );
        let out = format!("{}FAILED test_{i}", "=".repeat(300));
        ok(&mut r, "Bash", json!({"command": "pytest"}), &out);
    }
    assert_eq!(detect(&r, &[("outcome_stop", 3)]), [("same_outcome", 13)]);
    assert_eq!(detect(&r, &[("outcome_stop", 3), ("outcome_chars", 0)]), []);
}

fn turn(r: &mut Vec<Record>, text: &str) {
    r.push(Record::Turn);
    r.push(Record::Content { text: text.into() });
}

#[test]
fn turn_openings_repeat_across_turns() {
    let mut r = vec![user()];
    for i in 0..4 {
        turn(
            &mut r,
            &format!("I apologize, but I cannot   find the file.\nAttempt {i}."),
        );
        ok(&mut r, "view", json!({"path": "a"}), "x");
    }
    // Text at events 3, 7, 11, 15.
    assert_eq!(
        detect(&r, &[("opening_stop", 4), ("opening_chars", 30)]),
        [("turn_opening", 15)]
    );
    assert_eq!(
        detect(
            &r,
            &[
                ("opening_warn", 2),
                ("opening_stop", 4),
                ("opening_chars", 30)
            ]
        ),
        [("turn_opening_warn", 7), ("turn_opening", 15)]
    );
    // Past the common words they differ.
    assert_eq!(
        detect(&r, &[("opening_stop", 2), ("opening_chars", 60)]),
        []
    );
    // Streamed chunks join into one opening.
    let mut r = vec![user()];
    for _ in 0..3 {
        r.push(Record::Turn);
        for chunk in ["I apologize, ", "but I cannot ", "do that."] {
            r.push(Record::Content { text: chunk.into() });
        }
    }
    assert_eq!(
        detect(&r, &[("opening_stop", 3), ("opening_chars", 30)]),
        [("turn_opening", 13)]
    );
}

#[test]
fn turn_openings_leave_short_texts_and_new_prompts_alone() {
    let mut r = vec![user()];
    for _ in 0..5 {
        turn(&mut r, "Done.");
    }
    assert_eq!(
        detect(&r, &[("opening_stop", 2), ("opening_chars", 30)]),
        []
    );
    let mut r = Vec::new();
    for _ in 0..3 {
        r.push(user());
        turn(&mut r, "Let me look at the configuration file first.");
    }
    assert_eq!(
        detect(&r, &[("opening_stop", 2), ("opening_chars", 30)]),
        []
    );
}

#[test]
fn shell_writes_are_told_from_reads() {
    for w in [
        "sed -i 's/a/b/' f.py",
        "sed -n 1p x && sed -i.bak -e s/a/b/ f",
        "cat > f.py <<'EOF'\nx\nEOF",
        "echo x >> log.txt",
        "git checkout -- f.py",
        "python - <<EOF\nopen('f.py', 'w').write(s)\nEOF",
        "cd /w && rm -rf build",
        "tee out.txt < in",
    ] {
        assert!(shell_writes(w), "{w}");
    }
    for r in [
        "ls -la",
        "python -m pytest 2>&1 | tail -5",
        "grep -n 'a > b' f.py",
        "cat f.py > /dev/null",
        "test $x -ge 3 && echo ok >&2",
        "python -c 'print(1 >= 0)'",
        "git status",
    ] {
        assert!(!shell_writes(r), "{r}");
    }
}

#[test]
fn bad_list_entries_are_refused_by_name() {
    assert!(TargetKeys::parse(&["Write:file_path".into()]).is_ok());
    assert_eq!(
        TargetKeys::parse(&["Write".into()]),
        Err(BadEntry("Write".to_string()))
    );
    assert_eq!(
        ChangeTools::parse(&[":x".into()]),
        Err(BadEntry(":x".to_string()))
    );
    let cfg = DetectorConfig::resolve(
        None,
        Some("looptune-default"),
        &[(
            "target_keys".into(),
            ParamValue::words(&["Read:file_path", "nokey"]),
        )],
    )
    .unwrap();
    let e = cfg.checks().err().expect("refused").to_string();
    assert!(e.contains("`target_keys`") && e.contains("`nokey`"), "{e}");
}
