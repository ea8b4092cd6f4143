//! Hermes agent's `tests/agent/test_tool_guardrails.py` (@06c25ac9) ported
//! case by case to the port's controller, then the family driven by
//! canonical sessions. Left out: the config-mapping cases (`from_mapping`,
//! platforms, junk values), which the parameters' ranges replace, and the
//! file tools' own refusal bodies (replaced by a body with the marker).

use super::obj;
use crate::detect::peers::hermes::{
    classify_tool_failure, signature, Action, Controller, HermesSettings,
};
use crate::detect::{run_checks, DetectorConfig, ParamValue, Prepared};
use crate::event::{Origin, Record, Session};
use serde_json::{json, Value};
use std::sync::Arc;

fn cfg(f: impl FnOnce(&mut HermesSettings)) -> HermesSettings {
    let mut s = HermesSettings::default();
    f(&mut s);
    s
}

#[test]
fn tool_call_signature_hashes_canonical_nested_unicode_args() {
    let a = obj(json!({"z": [{"β": "☤", "a": 1}], "a": {"y": 2, "x": "secret-token-value"}}));
    let b = obj(json!({"a": {"x": "secret-token-value", "y": 2}, "z": [{"a": 1, "β": "☤"}]}));
    assert_eq!(signature("web_search", &a), signature("web_search", &b));
    // Python keeps 1 and 1.0 apart in the canonical text.
    assert_ne!(
        signature("t", &obj(json!({"n": 1}))),
        signature("t", &obj(json!({"n": 1.0})))
    );
}

#[test]
fn default_repeated_identical_failed_call_warns_without_blocking() {
    let s = HermesSettings::default();
    let mut c = Controller::new(&s);
    let args = obj(json!({"query": "same"}));
    let mut decisions = Vec::new();
    for _ in 0..5 {
        assert_eq!(c.before_call("web_search", &args).action, Action::Allow);
        decisions.push(c.after_call("web_search", &args, r#"{"error":"boom"}"#, true));
    }
    assert_eq!(decisions[0].action, Action::Allow);
    assert!(decisions[1..].iter().all(|d| d.action == Action::Warn));
    assert!(decisions[1..]
        .iter()
        .all(|d| d.code == "repeated_exact_failure_warning"));
    assert_eq!(c.before_call("web_search", &args).action, Action::Allow);
    assert!(c.halt.is_none());
}

#[test]
fn hard_stop_enabled_blocks_repeated_exact_failure_before_next_execution() {
    let s = cfg(|s| {
        s.hard_stop_enabled = true;
        s.exact_failure_warn_after = 2;
        s.exact_failure_block_after = 2;
        s.same_tool_failure_halt_after = 99;
    });
    let mut c = Controller::new(&s);
    let args = obj(json!({"query": "same"}));
    assert_eq!(c.before_call("web_search", &args).action, Action::Allow);
    assert_eq!(
        c.after_call("web_search", &args, r#"{"error":"boom"}"#, true)
            .action,
        Action::Allow
    );
    assert_eq!(c.before_call("web_search", &args).action, Action::Allow);
    let second = c.after_call("web_search", &args, r#"{"error":"boom"}"#, true);
    assert_eq!(second.action, Action::Warn);
    assert_eq!(second.code, "repeated_exact_failure_warning");
    let blocked = c.before_call("web_search", &args);
    assert_eq!(blocked.action, Action::Block);
    assert_eq!(blocked.code, "repeated_exact_failure_block");
    assert_eq!(blocked.count, 2);
}

#[test]
fn skill_read_tools_are_idempotent_and_block_repeated_identical_success_output() {
    let cases = [
        (
            "skill_view",
            json!({"name": "gui-agent-ml-operations"}),
            r#"{"success":true,"name":"gui-agent-ml-operations","content":"same"}"#,
        ),
        (
            "skills_list",
            json!({"category": "mlops"}),
            r#"{"success":true,"skills":[{"name":"gui-agent-ml-operations"}]}"#,
        ),
    ];
    for (tool, args, result) in cases {
        let s = cfg(|s| {
            s.hard_stop_enabled = true;
            s.no_progress_warn_after = 2;
            s.no_progress_block_after = 2;
        });
        let mut c = Controller::new(&s);
        let args = obj(args);
        assert_eq!(c.before_call(tool, &args).action, Action::Allow);
        assert_eq!(
            c.after_call(tool, &args, result, false).action,
            Action::Allow
        );
        assert_eq!(c.before_call(tool, &args).action, Action::Allow);
        let warn = c.after_call(tool, &args, result, false);
        assert_eq!(warn.action, Action::Warn);
        assert_eq!(warn.code, "idempotent_no_progress_warning");
        let blocked = c.before_call(tool, &args);
        assert_eq!(blocked.action, Action::Block);
        assert_eq!(blocked.code, "idempotent_no_progress_block");
    }
}

#[test]
fn mutating_or_unknown_tools_are_not_blocked_for_repeated_identical_success_output_by_default() {
    let s = cfg(|s| {
        s.no_progress_warn_after = 2;
        s.no_progress_block_after = 2;
    });
    let mut c = Controller::new(&s);
    let w = obj(json!({"path": "/tmp/x", "content": "x"}));
    let u = obj(json!({"x": 1}));
    for _ in 0..3 {
        assert_eq!(c.before_call("write_file", &w).action, Action::Allow);
        assert_eq!(
            c.after_call("write_file", &w, "ok", false).action,
            Action::Allow
        );
        assert_eq!(c.before_call("custom_tool", &u).action, Action::Allow);
        assert_eq!(
            c.after_call("custom_tool", &u, "ok", false).action,
            Action::Allow
        );
    }
}

#[test]
fn identical_call_streak_halts_any_tool_when_hard_stop_enabled() {
    let s = cfg(|s| {
        s.hard_stop_enabled = true;
        s.no_progress_block_after = 5;
    });
    let mut c = Controller::new(&s);
    let args = obj(json!({"command": "hermes config get memory.provider"}));
    for i in 1..5 {
        c.after_call("terminal", &args, "local\n", false);
        c.observe_call("terminal", &args, "local\n");
        assert!(c.halt.is_none(), "halted early at {i}");
    }
    c.after_call("terminal", &args, "local\n", false);
    c.observe_call("terminal", &args, "local\n");
    let halt = c.halt.clone().expect("halted");
    assert!(halt.should_halt());
    assert_eq!(halt.code, "identical_call_streak_halt");
    assert_eq!(halt.count, 5);
}

#[test]
fn identical_call_streak_never_halts_when_hard_stop_disabled_or_for_pollers() {
    let soft_s = cfg(|s| {
        s.hard_stop_enabled = false;
        s.no_progress_block_after = 2;
    });
    let mut soft = Controller::new(&soft_s);
    for _ in 0..6 {
        soft.observe_call("terminal", &obj(json!({"command": "ls"})), "a\nb\n");
    }
    assert!(soft.halt.is_none());

    let hard_s = cfg(|s| {
        s.hard_stop_enabled = true;
        s.no_progress_block_after = 2;
    });
    let mut hard = Controller::new(&hard_s);
    for _ in 0..6 {
        hard.observe_call(
            "process_manage",
            &obj(json!({"action": "poll", "session_id": "p1"})),
            "running",
        );
    }
    assert!(hard.halt.is_none());
    for i in 0..6 {
        hard.observe_call(
            "terminal",
            &obj(json!({"command": "date"})),
            &format!("t{i}"),
        );
    }
    assert!(hard.halt.is_none());
}

#[test]
fn web_search_cap_blocks_after_limit_regardless_of_hard_stop() {
    let s = cfg(|s| {
        s.hard_stop_enabled = false;
        s.max_web_searches = 3;
    });
    let mut c = Controller::new(&s);
    for i in 0..3 {
        let a = obj(json!({"query": format!("q{i}")}));
        assert_eq!(c.before_call("web_search", &a).action, Action::Allow);
    }
    let d = c.before_call("web_search", &obj(json!({"query": "q4"})));
    assert_eq!(d.action, Action::Block);
    assert_eq!(d.code, "loop_web_search_cap");
    assert!(d.should_halt());
}

#[test]
fn subagent_cap_uses_commit_model() {
    let s = cfg(|s| s.max_subagents = 5);
    let mut c = Controller::new(&s);
    let three = obj(json!({"tasks": [{"goal": "a"}, {"goal": "b"}, {"goal": "c"}]}));
    assert_eq!(c.before_call("delegate_task", &three).action, Action::Allow);
    assert_eq!(c.subagents(), 0);
    c.commit_subagents(3);
    assert_eq!(c.subagents(), 3);
    assert_eq!(
        c.before_call("delegate_task", &obj(json!({"goal": "d"})))
            .action,
        Action::Allow
    );
    c.commit_subagents(1);
    assert_eq!(c.subagents(), 4);
    assert_eq!(
        c.before_call("delegate_task", &obj(json!({"goal": "e"})))
            .action,
        Action::Allow
    );
    c.commit_subagents(1);
    assert_eq!(c.subagents(), 5);
    let d = c.before_call("delegate_task", &obj(json!({"goal": "f"})));
    assert_eq!(d.action, Action::Block);
    assert_eq!(d.code, "loop_subagent_cap");
}

#[test]
fn subagent_cap_resets_each_turn() {
    let s = cfg(|s| s.max_subagents = 1);
    let mut c = Controller::new(&s);
    assert_eq!(
        c.before_call("delegate_task", &obj(json!({"goal": "a"})))
            .action,
        Action::Allow
    );
    c.commit_subagents(1);
    assert_eq!(c.subagents(), 1);
    assert_eq!(
        c.before_call("delegate_task", &obj(json!({"goal": "b"})))
            .action,
        Action::Block
    );
    c.reset_for_turn();
    assert_eq!(c.subagents(), 0);
    assert_eq!(
        c.before_call("delegate_task", &obj(json!({"goal": "c"})))
            .action,
        Action::Allow
    );
}

const RED: &str = r#"{"output": "1 failed", "exit_code": 1}"#;

fn hard() -> HermesSettings {
    cfg(|s| s.hard_stop_enabled = true)
}

fn pytest() -> serde_json::Map<String, Value> {
    obj(json!({"command": "pytest tests/test_x.py -q"}))
}

fn run_red(c: &mut Controller) -> crate::detect::peers::hermes::Decision {
    let a = pytest();
    assert!(!c.before_call("terminal", &a).should_halt());
    c.after_call("terminal", &a, RED, true)
}

#[test]
fn fix_retest_loop_is_never_hard_stopped() {
    let s = hard();
    let mut c = Controller::new(&s);
    for i in 0..12 {
        let d = run_red(&mut c);
        assert!(!d.should_halt(), "halted on red run {}", i + 1);
        c.after_call(
            "patch",
            &obj(json!({"path": "x.py", "old_string": "a", "new_string": format!("b{i}")})),
            r#"{"success": true, "diff": "..."}"#,
            false,
        );
    }
    assert!(c.halt.is_none());
    assert!(!c.before_call("terminal", &pytest()).should_halt());
}

#[test]
fn pure_replay_with_no_intervening_change_is_still_blocked() {
    let s = hard();
    let mut c = Controller::new(&s);
    for _ in 0..5 {
        run_red(&mut c);
    }
    let d = c.before_call("terminal", &pytest());
    assert_eq!(d.action, Action::Block);
    assert_eq!(d.code, "repeated_exact_failure_block");
}

#[test]
fn intervening_mutation_resets_the_replay_streak_only_once() {
    let s = hard();
    let mut c = Controller::new(&s);
    for _ in 0..4 {
        run_red(&mut c);
    }
    c.after_call(
        "write_file",
        &obj(json!({"path": "x.py", "content": "y"})),
        r#"{"bytes_written": 1}"#,
        false,
    );
    for _ in 0..5 {
        assert!(!c.before_call("terminal", &pytest()).should_halt());
        c.after_call("terminal", &pytest(), RED, true);
    }
    assert_eq!(c.before_call("terminal", &pytest()).action, Action::Block);
}

#[test]
fn distinct_failing_terminal_commands_warn_but_never_halt() {
    let s = hard();
    let mut c = Controller::new(&s);
    for i in 0..12 {
        let a = obj(json!({"command": format!("grep -q needle{i} haystack.txt")}));
        let d = c.after_call("terminal", &a, RED, true);
        assert!(
            !d.should_halt(),
            "same_tool halt on distinct command #{}",
            i + 1
        );
    }
    assert!(c.halt.is_none());
    let mut c2 = Controller::new(&s);
    let mut last = None;
    for i in 0..8 {
        let a = obj(json!({"to": format!("u{i}")}));
        last = Some(c2.after_call("send_message", &a, r#"{"error": "no route"}"#, true));
    }
    let last = last.unwrap();
    assert!(last.should_halt());
    assert_eq!(last.code, "same_tool_failure_halt");
}

#[test]
fn browser_retry_after_action_is_not_a_replay() {
    let s = hard();
    let mut c = Controller::new(&s);
    let nav = obj(json!({"url": "https://example.test/app"}));
    for _ in 0..8 {
        assert!(!c.before_call("browser_navigate", &nav).should_halt());
        c.after_call("browser_navigate", &nav, r#"{"error": "timeout"}"#, true);
        c.after_call(
            "browser_click",
            &obj(json!({"selector": "#retry"})),
            r#"{"ok": true}"#,
            false,
        );
    }
    assert!(c.halt.is_none());
}

#[test]
fn harness_refusals_are_not_tool_failures() {
    // The file tools' refusal bodies: an "error" text with the marker.
    let refusal = r#"{"error": "BLOCKED: you already read this", "guardrail_refusal": true}"#;
    assert!(!classify_tool_failure("read_file", refusal));
}

#[test]
fn a_real_tool_error_is_still_a_failure() {
    assert!(classify_tool_failure(
        "read_file",
        r#"{"error": "ENOENT: no such file"}"#
    ));
    assert!(classify_tool_failure(
        "read_file",
        r#"{"error": "x", "guardrail_refusal": "yes"}"#
    ));
}

fn exec_result(n: u32) -> String {
    json!({
        "status": "success", "output": "", "exit_code": 0, "tool_calls_made": 0,
        "duration_seconds": 1.0 + n as f64 / 100.0,
        "kernel": {"mode": "session", "reused": true, "execution_count": 100 + n, "state_reset": false},
        "stdout_truncated": false, "stdout_bytes_captured": 0,
    })
    .to_string()
}

#[test]
fn identical_streak_ignores_volatile_execution_metadata() {
    let s = cfg(|s| {
        s.hard_stop_enabled = true;
        s.no_progress_block_after = 5;
    });
    let mut c = Controller::new(&s);
    let args = obj(json!({"code": "print(1) if False else None"}));
    for i in 0..4 {
        c.observe_call("execute_code", &args, &exec_result(i));
        assert!(c.halt.is_none(), "halted early at {i}");
    }
    c.observe_call("execute_code", &args, &exec_result(4));
    assert_eq!(c.halt.clone().unwrap().code, "identical_call_streak_halt");
}

#[test]
fn identical_streak_still_resets_when_real_output_changes() {
    let s = cfg(|s| {
        s.hard_stop_enabled = true;
        s.no_progress_block_after = 3;
    });
    let mut c = Controller::new(&s);
    let args = obj(json!({"code": "print(1)"}));
    for i in 0..6 {
        let out = json!({"status": "success", "output": format!("line {i}"), "duration_seconds": 1.0, "kernel": {"execution_count": i}});
        c.observe_call("execute_code", &args, &out.to_string());
    }
    assert!(c.halt.is_none());
}

#[test]
fn other_tools_keep_duration_and_execution_count_as_real_output() {
    let s = cfg(|s| {
        s.hard_stop_enabled = true;
        s.no_progress_block_after = 3;
    });
    let mut c = Controller::new(&s);
    let args = obj(json!({"job": "build-42"}));
    for i in 0..6 {
        let out = json!({"status": "done", "duration_seconds": 10 + i, "stats": {"execution_count": 100 + i}});
        c.observe_call("mcp_ci_job_status", &args, &out.to_string());
    }
    assert!(c.halt.is_none());
}

#[test]
fn execute_code_replay_streak_notice_fires_on_warn_only_config() {
    // Interactive (desktop) defaults: hard stops off.
    let s = HermesSettings::default();
    let mut c = Controller::new(&s);
    let args = obj(json!({"code": "print(\"...\")"}));
    let kinds: Vec<Option<&str>> = (1..7)
        .map(|i| c.observe_call("execute_code", &args, &exec_result(i)).kind)
        .collect();
    assert_eq!(kinds[..2], [None, None]);
    assert!(kinds[2..]
        .iter()
        .all(|k| *k == Some("identical_call_streak")));
    assert!(c.halt.is_none());
}

#[test]
fn cycle_of_two_calls_gives_the_notice_at_three_laps_and_halts_at_five() {
    let s = hard();
    let mut c = Controller::new(&s);
    let a = obj(json!({"path": "a"}));
    let b = obj(json!({"path": "b"}));
    let mut kinds = Vec::new();
    for _ in 0..5 {
        kinds.push(c.observe_call("custom", &a, "A"));
        kinds.push(c.observe_call("custom", &b, "B"));
    }
    // Laps complete at the 6th call (3 laps) ... the 10th (5 laps).
    let first = kinds.iter().position(|o| o.kind.is_some()).unwrap();
    assert_eq!(first, 5);
    assert_eq!(kinds[5].kind, Some("identical_cycle"));
    assert_eq!((kinds[5].period, kinds[5].count), (2, 3));
    assert_eq!(c.halt.clone().unwrap().code, "identical_cycle_halt");
    assert_eq!(c.halt.clone().unwrap().count, 5);
}

// The family on canonical sessions.

fn o() -> Origin {
    Origin::default()
}

fn user() -> Record {
    Record::User {
        text: "go".into(),
        prompt_id: None,
    }
}

fn call(name: &str, args: Value) -> Record {
    Record::ToolCall {
        name: name.into(),
        args: Box::new(obj(args)),
        id: None,
    }
}

fn result(output: &str) -> Record {
    Record::ToolResult {
        id: None,
        name: None,
        output: Some(output.into()),
        error: None,
    }
}

fn detections(profile: &str, recs: Vec<Record>) -> Vec<(&'static str, u32, u32)> {
    let s = Arc::new(Session::from_records(
        "s".into(),
        recs.into_iter().map(|r| (r, o())).collect(),
    ));
    let cfg = DetectorConfig::resolve(None, Some(profile), &[]).unwrap();
    run_checks(&cfg.checks().unwrap(), &Prepared::new(s), None)
        .iter()
        .map(|d| (d.kind, d.event, d.strike))
        .collect()
}

#[test]
fn session_identical_terminal_calls_notice_at_three_halt_at_five() {
    let mut r = vec![user()];
    for _ in 0..6 {
        r.push(Record::Turn);
        r.push(call("terminal", json!({"command": "ls"})));
        r.push(result("a\nb\n"));
    }
    // Results are records 4, 7, 10, 13, 16.
    assert_eq!(
        detections("hermes", r.clone()),
        vec![
            ("identical_call_streak", 10, 1),
            ("identical_call_streak_halt", 16, 2)
        ]
    );
    // Interactive: the notice only.
    assert_eq!(
        detections("hermes-interactive", r),
        vec![("identical_call_streak", 10, 1)]
    );
}

#[test]
fn session_state_resets_at_each_user_message() {
    let mut r = Vec::new();
    for _ in 0..2 {
        r.push(user());
        for _ in 0..2 {
            r.push(call("terminal", json!({"command": "ls"})));
            r.push(result("same"));
        }
    }
    assert!(detections("hermes", r).is_empty());
}

#[test]
fn session_cap_block_without_warning_stops_at_once() {
    let mut r = vec![user()];
    for i in 0..51 {
        r.push(call("web_search", json!({"query": format!("q{i}")})));
        r.push(result(&format!("r{i}")));
    }
    // The 51st call is record 1 + 2 * 50 + 1 = 102: strikes 1 and 2 there.
    assert_eq!(
        detections("hermes", r),
        vec![
            ("loop_web_search_cap", 102, 1),
            ("loop_web_search_cap", 102, 2)
        ]
    );
}

#[test]
fn session_failure_comes_from_the_result_text_or_the_flag() {
    let mut r = vec![user()];
    for _ in 0..3 {
        r.push(call("read_file", json!({"path": "x"})));
        r.push(Record::ToolResult {
            id: None,
            name: None,
            output: Some("no such file".into()),
            error: Some(true),
        });
    }
    // The text classifier sees no failure: the same result twice warns as
    // no progress on a read-only tool (record 5), then the streak notice.
    assert_eq!(
        detections("hermes", r.clone()),
        vec![("idempotent_no_progress_warning", 5, 1)]
    );
    let cfg = DetectorConfig::resolve(
        None,
        Some("hermes"),
        &[("failure".into(), ParamValue::word("record"))],
    )
    .unwrap();
    let s = Arc::new(Session::from_records(
        "s".into(),
        r.into_iter().map(|r| (r, o())).collect(),
    ));
    let got: Vec<_> = run_checks(&cfg.checks().unwrap(), &Prepared::new(s), None)
        .iter()
        .map(|d| (d.kind, d.event))
        .collect();
    assert_eq!(got, vec![("repeated_exact_failure_warning", 5)]);
}

/// Fed live, the controller keeps one prompt's state (reset at each `user`
/// record, the settings kept) and gives what the replay gives: notices,
/// halts, warnings, in both profiles.
#[test]
fn fed_live_equals_the_replay() {
    let mut r = Vec::new();
    for p in 0..3 {
        r.push(user());
        for k in 0..(4 + 2 * p) {
            r.push(Record::Turn);
            let cmd = if k % 3 == 2 && p == 1 { "pwd" } else { "ls" };
            r.push(call("terminal", json!({ "command": cmd })));
            r.push(result(if p == 2 { "Error: failed" } else { "same" }));
        }
    }
    let s = Arc::new(Session::from_records(
        "s".into(),
        r.into_iter().map(|r| (r, o())).collect(),
    ));
    let cfgs = [("hermes", vec![]), ("hermes-interactive", vec![])];
    assert!(super::stream_equals_run(&s, &cfgs) > 0);
}

proptest::proptest! {
    /// Strings are written as serde_json writes them, whatever they hold.
    #[test]
    fn json_strings_are_serde_jsons(s in "(\\PC|[\u{0}-\u{1f}\"\\\\\u{7f}])*") {
        let mut out = String::from("x");
        crate::detect::peers::common::push_json_str(&mut out, &s);
        proptest::prop_assert_eq!(&out[1..], serde_json::to_string(&s).unwrap());
    }
}
