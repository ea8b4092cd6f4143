//! OpenClaw's `src/agents/tool-loop-detection.test.ts` ported case by case to
//! the port's `LoopState` (the detector at @00655306). Left out: the cases of
//! a later detector with an argument-churn breaker (`tool-loop-argument-churn.ts`:
//! "stable argument churn", "two-pass batch", "repeated variant makes
//! progress"), of hash shapes (digest length, timestamps, circular params,
//! non-object params: canonical arguments are always objects), and the
//! provider-docked `telegram` send, which needs a channel plugin (the test
//! mocks one). Then the family on canonical sessions.

use super::obj;
use crate::detect::peers::openclaw::{
    hash_outcome, hash_tool_call, LoopState, OpenClawSettings, Outcome, PostCompactionGuard,
    Verdict,
};
use crate::detect::{run_checks, DetectorConfig, Prepared};
use crate::event::{Origin, Record, Session};
use serde_json::{json, Map, Value};
use std::sync::Arc;

const WARNING: u32 = 10;
const CRITICAL: u32 = 20;
const GLOBAL: u32 = 30;

fn s() -> OpenClawSettings {
    OpenClawSettings::default()
}

fn args(v: Value) -> Map<String, Value> {
    obj(v)
}

/// `recordSuccessfulCall`: a call and its result `{content: [{text}], details}`.
fn success(st: &mut LoopState, tool: &str, params: &Value, text: &str, details: Value, i: usize) {
    let a = args(params.clone());
    let id = format!("{tool}-{i}");
    st.record_call(&s(), 0, tool, &a, Some(&id));
    let d = details.as_object().cloned();
    st.record_outcome(
        &s(),
        0,
        tool,
        &a,
        Some(&id),
        &Outcome::Result {
            text,
            details: d.as_ref(),
        },
    );
}

/// `recordFailedCall`: a call that threw `error`.
fn failed(st: &mut LoopState, tool: &str, params: &Value, error: &str, i: usize) {
    let a = args(params.clone());
    let id = format!("{tool}-error-{i}");
    st.record_call(&s(), 0, tool, &a, Some(&id));
    st.record_outcome(&s(), 0, tool, &a, Some(&id), &Outcome::Error(error));
}

fn detect(st: &LoopState, tool: &str, params: Value) -> Verdict {
    st.detect(&s(), 0, tool, &args(params))
}

fn level(v: &Verdict) -> Option<(&'static str, &'static str, u32)> {
    match v {
        Verdict::NotStuck => None,
        Verdict::Warning {
            detector, count, ..
        } => Some(("warning", detector, *count)),
        Verdict::Critical { detector, count } => Some(("critical", detector, *count)),
    }
}

#[test]
fn same_tool_and_params_hash_alike_and_key_order_is_ignored() {
    let a = args(json!({"path": "/file.txt"}));
    assert_eq!(hash_tool_call("read", &a), hash_tool_call("read", &a));
    assert_ne!(
        hash_tool_call("read", &args(json!({"path": "/file1.txt"}))),
        hash_tool_call("read", &args(json!({"path": "/file2.txt"})))
    );
    assert_ne!(hash_tool_call("read", &a), hash_tool_call("write", &a));
    assert_eq!(
        hash_tool_call("tool", &args(json!({"a": 1, "b": 2}))),
        hash_tool_call("tool", &args(json!({"b": 2, "a": 1})))
    );
}

#[test]
fn record_tool_call_keeps_a_sliding_window() {
    let mut st = LoopState::default();
    st.record_call(
        &s(),
        0,
        "read",
        &args(json!({"path": "/file.txt"})),
        Some("call-1"),
    );
    assert_eq!(st.history().len(), 1);
    assert_eq!(&*st.history()[0].tool, "read");
    assert_eq!(st.history()[0].call_id.as_deref(), Some("call-1"));
    let mut st = LoopState::default();
    for i in 0..40 {
        st.record_call(&s(), 0, "tool", &args(json!({"iteration": i})), None);
    }
    assert_eq!(st.history().len(), 30);
    assert_eq!(
        &*st.history()[0].args_hash,
        hash_tool_call("tool", &args(json!({"iteration": 10})))
    );
}

#[test]
fn does_not_flag_unique_tool_calls() {
    let mut st = LoopState::default();
    for i in 0..15 {
        st.record_call(
            &s(),
            0,
            "read",
            &args(json!({"path": format!("/file{i}.txt")})),
            None,
        );
    }
    assert_eq!(
        detect(&st, "read", json!({"path": "/new-file.txt"})),
        Verdict::NotStuck
    );
}

#[test]
fn ignores_repeated_history_from_other_runs_and_detects_within_the_run() {
    let p = args(json!({"path": "/same.txt"}));
    let mut st = LoopState::default();
    for _ in 0..WARNING {
        st.record_call(&s(), 1, "read", &p, None);
    }
    assert_eq!(st.detect(&s(), 2, "read", &p), Verdict::NotStuck);
    let v = st.detect(&s(), 1, "read", &p);
    assert_eq!(level(&v), Some(("warning", "generic_repeat", WARNING)));
}

#[test]
fn warns_on_generic_repeated_tool_args_calls() {
    let mut st = LoopState::default();
    for _ in 0..WARNING {
        st.record_call(&s(), 0, "read", &args(json!({"path": "/same.txt"})), None);
    }
    let v = detect(&st, "read", json!({"path": "/same.txt"}));
    assert_eq!(level(&v), Some(("warning", "generic_repeat", WARNING)));
}

fn repeated(tool: &str, params: &Value, text: &str, details: Value, n: u32) -> LoopState {
    let mut st = LoopState::default();
    for i in 0..n as usize {
        success(&mut st, tool, params, text, details.clone(), i);
    }
    st
}

#[test]
fn blocks_generic_no_progress_loops_at_critical_threshold() {
    let p = json!({"path": "/same.txt"});
    let st = repeated("read", &p, "same output", json!({"ok": true}), CRITICAL);
    assert_eq!(
        level(&detect(&st, "read", p)),
        Some(("critical", "generic_repeat", CRITICAL))
    );
}

#[test]
fn known_polling_no_progress_warns_then_blocks() {
    let p = json!({"action": "poll", "sessionId": "sess-1"});
    let text = "(no new output)\n\nProcess still running.";
    let details = json!({"status": "running", "aggregated": "steady"});
    let st = repeated("process", &p, text, details.clone(), WARNING);
    assert_eq!(
        level(&detect(&st, "process", p.clone())).map(|l| (l.0, l.1)),
        Some(("warning", "known_poll_no_progress"))
    );
    let st = repeated("process", &p, text, details, CRITICAL);
    assert_eq!(
        level(&detect(&st, "process", p)).map(|l| (l.0, l.1)),
        Some(("critical", "known_poll_no_progress"))
    );
}

#[test]
fn does_not_block_known_polling_when_output_progresses() {
    let p = json!({"action": "poll", "sessionId": "sess-1"});
    let mut st = LoopState::default();
    for i in 0..(CRITICAL + 5) as usize {
        success(
            &mut st,
            "process",
            &p,
            &format!("line {i}"),
            json!({"status": "running", "aggregated": format!("line {i}")}),
            i,
        );
    }
    assert_eq!(detect(&st, "process", p), Verdict::NotStuck);
}

#[test]
fn blocks_any_tool_with_global_no_progress_breaker_at_30() {
    let p = json!({"path": "/same.txt"});
    let st = repeated("read", &p, "same output", json!({"ok": true}), GLOBAL);
    assert_eq!(
        level(&detect(&st, "read", p)).map(|l| (l.0, l.1)),
        Some(("critical", "global_circuit_breaker"))
    );
}

#[test]
fn does_not_block_a_one_shot_batch_of_distinct_arguments() {
    let mut st = LoopState::default();
    for i in 0..GLOBAL as usize {
        success(
            &mut st,
            "write",
            &json!({"path": format!("/tmp/file-{i}.md"), "content": "same content"}),
            "write complete",
            json!({"ok": true}),
            i,
        );
    }
    assert_eq!(
        detect(
            &st,
            "write",
            json!({"path": "/tmp/next.md", "content": "same content"})
        ),
        Verdict::NotStuck
    );
}

#[test]
fn blocks_repeated_completed_exec_calls_despite_volatile_runtime_details() {
    let p = json!({"command": "grafana-api.sh datasources"});
    let mut st = LoopState::default();
    for i in 0..CRITICAL as usize {
        success(
            &mut st,
            "exec",
            &p,
            "Loki\nPrometheus",
            json!({"status": "completed", "exitCode": 0, "durationMs": 100 + i, "cwd": format!("/tmp/run-{i}"), "aggregated": "Loki\nPrometheus"}),
            i,
        );
    }
    assert_eq!(
        level(&detect(&st, "exec", p)).map(|l| (l.0, l.1)),
        Some(("critical", "generic_repeat"))
    );
}

#[test]
fn blocks_repeated_running_exec_calls_despite_volatile_session_details_and_text() {
    let p = json!({"command": "tail -f /var/log/app.log", "yieldMs": 1000});
    let mut st = LoopState::default();
    for i in 0..CRITICAL as usize {
        success(
            &mut st,
            "exec",
            &p,
            &format!("Command still running (session sess-{i}, pid {})", 1000 + i),
            json!({"status": "running", "sessionId": format!("sess-{i}"), "pid": 1000 + i, "cwd": format!("/tmp/run-{i}"), "tail": "(no new output)"}),
            i,
        );
    }
    assert_eq!(
        level(&detect(&st, "exec", p)).map(|l| (l.0, l.1)),
        Some(("critical", "generic_repeat"))
    );
}

#[test]
fn keeps_changing_exec_output_below_the_global_breaker() {
    let p = json!({"command": "date"});
    let mut st = LoopState::default();
    for i in 0..GLOBAL as usize {
        success(
            &mut st,
            "exec",
            &p,
            &format!("tick {i}"),
            json!({"status": "completed", "exitCode": 0, "durationMs": 100 + i, "aggregated": format!("tick {i}")}),
            i,
        );
    }
    assert_eq!(
        level(&detect(&st, "exec", p.clone())).map(|l| (l.0, l.1)),
        Some(("warning", "generic_repeat"))
    );
    // Empty aggregated output falls back to the (changing) text.
    let p = json!({"command": "openclaw flaky-helper"});
    let mut st = LoopState::default();
    for i in 0..GLOBAL as usize {
        success(
            &mut st,
            "exec",
            &p,
            &format!("Runtime failed before spawn: attempt {i}"),
            json!({"status": "failed", "exitCode": null, "durationMs": 100 + i, "aggregated": ""}),
            i,
        );
    }
    assert_eq!(
        level(&detect(&st, "exec", p)).map(|l| (l.0, l.1)),
        Some(("warning", "generic_repeat"))
    );
}

#[test]
fn unknown_tool_failures_block_at_the_threshold_even_when_args_change() {
    let mut st = LoopState::default();
    for i in 0..9 {
        failed(
            &mut st,
            "exec",
            &json!({"command": format!("echo {i}")}),
            "Tool exec not found",
            i,
        );
    }
    assert_eq!(
        detect(&st, "exec", json!({"command": "echo still allowed"})),
        Verdict::NotStuck
    );
    let attempts = [
        json!({"command": "ls"}),
        json!({"command": "pwd"}),
        json!({"input": "whoami"}),
        json!({"cmd": "env"}),
        json!({"shell": "bash -lc ls"}),
        json!({"command": "printf ok"}),
        json!({"cwd": "/tmp", "command": "ls"}),
        json!({"args": ["ls", "/tmp"]}),
        json!({"command": "find . -maxdepth 1"}),
        json!({"text": "run ls"}),
        json!({"command": "uname -a"}),
        json!({"command": "id"}),
    ];
    let mut st = LoopState::default();
    for (i, a) in attempts.iter().enumerate() {
        failed(&mut st, "exec", a, "Tool exec not found", i);
    }
    assert_eq!(
        level(&detect(
            &st,
            "exec",
            json!({"command": "echo still looping"})
        ))
        .map(|l| (l.0, l.1)),
        Some(("critical", "unknown_tool_repeat"))
    );
}

fn ping_pong(n: usize, text: impl Fn(&str, usize) -> String) -> LoopState {
    let mut st = LoopState::default();
    for i in 0..n {
        if i % 2 == 0 {
            success(
                &mut st,
                "read",
                &json!({"path": "/a.txt"}),
                &text("read", i),
                json!({"ok": true}),
                i,
            );
        } else {
            success(
                &mut st,
                "list",
                &json!({"dir": "/workspace"}),
                &text("list", i),
                json!({"ok": true}),
                i,
            );
        }
    }
    st
}

#[test]
fn warns_on_ping_pong_alternating_patterns() {
    let mut st = LoopState::default();
    for i in 0..WARNING - 1 {
        if i % 2 == 0 {
            st.record_call(&s(), 0, "read", &args(json!({"path": "/a.txt"})), None);
        } else {
            st.record_call(&s(), 0, "list", &args(json!({"dir": "/workspace"})), None);
        }
    }
    assert_eq!(
        level(&detect(&st, "list", json!({"dir": "/workspace"}))),
        Some(("warning", "ping_pong", WARNING))
    );
}

#[test]
fn blocks_ping_pong_at_critical_only_when_outcomes_are_stable() {
    let st = ping_pong(CRITICAL as usize - 1, |t, _| format!("{t} stable"));
    assert_eq!(
        level(&detect(&st, "list", json!({"dir": "/workspace"}))),
        Some(("critical", "ping_pong", CRITICAL))
    );
    let st = ping_pong(CRITICAL as usize - 1, |t, i| format!("{t} {i}"));
    assert_eq!(
        level(&detect(&st, "list", json!({"dir": "/workspace"}))),
        Some(("warning", "ping_pong", CRITICAL))
    );
}

#[test]
fn does_not_flag_ping_pong_when_alternation_is_broken() {
    let mut st = LoopState::default();
    st.record_call(&s(), 0, "read", &args(json!({"path": "/a.txt"})), None);
    st.record_call(&s(), 0, "list", &args(json!({"dir": "/workspace"})), None);
    st.record_call(&s(), 0, "read", &args(json!({"path": "/a.txt"})), None);
    st.record_call(
        &s(),
        0,
        "write",
        &args(json!({"path": "/tmp/out.txt"})),
        None,
    );
    assert_eq!(
        detect(&st, "list", json!({"dir": "/workspace"})),
        Verdict::NotStuck
    );
}

#[test]
fn outcomes_attach_to_the_recorded_call_and_trim_with_it() {
    let p = args(json!({"action": "lookup", "path": "cron.enabled"}));
    let mut st = LoopState::default();
    st.record_call(&s(), 0, "gateway", &p, Some("call-1"));
    st.record_outcome(
        &s(),
        0,
        "gateway",
        &p,
        Some("call-1"),
        &Outcome::Result {
            text: "same schema",
            details: None,
        },
    );
    assert_eq!(st.history().len(), 1);
    assert!(st.history()[0].result_hash.is_some());
    let mut st = LoopState::default();
    for i in 0..33 {
        let p = args(json!({"action": "lookup", "path": format!("config.{i}")}));
        let id = format!("call-{i}");
        st.record_call(&s(), 0, "gateway", &p, Some(&id));
        st.record_outcome(
            &s(),
            0,
            "gateway",
            &p,
            Some(&id),
            &Outcome::Result {
                text: "x",
                details: None,
            },
        );
    }
    assert_eq!(st.history().len(), 30);
    assert_eq!(st.history()[0].call_id.as_deref(), Some("call-3"));
}

#[test]
fn does_not_attach_outcomes_to_matching_calls_from_other_runs() {
    let p = args(json!({"path": "/same.txt"}));
    let mut st = LoopState::default();
    st.record_call(&s(), 1, "read", &p, Some("call-1"));
    st.record_outcome(
        &s(),
        2,
        "read",
        &p,
        Some("call-1"),
        &Outcome::Result {
            text: "same output",
            details: None,
        },
    );
    assert_eq!(st.history().len(), 2);
    assert!(st.history()[0].result_hash.is_none());
    assert_eq!(st.history()[1].run, 2);
    assert!(st.history()[1].result_hash.is_some());
}

#[test]
fn handles_empty_history() {
    assert_eq!(
        detect(&LoopState::default(), "tool", json!({"arg": 1})),
        Verdict::NotStuck
    );
}

fn send_hash(tool: &str, params: &Value, payload: Value) -> Option<String> {
    let text = serde_json::to_string_pretty(&payload).unwrap();
    let d = payload.as_object().cloned();
    hash_outcome(
        tool,
        &args(params.clone()),
        &Outcome::Result {
            text: &text,
            details: d.as_ref(),
        },
    )
    .0
}

fn send_payload(i: usize) -> Value {
    json!({"ok": true, "channel": "feishu", "chatId": "oc_chat", "runId": format!("run_{i}"), "messageId": format!("om_{i}"), "receipt": {"platformMessageId": format!("p_{i}")}})
}

#[test]
fn duplicate_sends_hash_alike_despite_per_call_ids() {
    let p = json!({"action": "send", "target": "feishu:oc_chat", "text": "ping"});
    assert_eq!(
        send_hash("message", &p, send_payload(0)),
        send_hash("message", &p, send_payload(1))
    );
    let p = json!({"action": "broadcast", "text": "ping"});
    let b = |i: usize| json!({"results": [{"channel": "feishu", "ok": true, "result": {"messageId": format!("om_{i}"), "receipt": i}}]});
    assert_eq!(
        send_hash("message", &p, b(0)),
        send_hash("message", &p, b(1))
    );
    let p = json!({"sessionKey": "agent:main:peer", "text": "ping"});
    assert_eq!(
        send_hash("sessions_send", &p, json!({"ok": true, "runId": "run_0"})),
        send_hash("sessions_send", &p, json!({"ok": true, "runId": "run_1"}))
    );
}

#[test]
fn send_loops_escalate_to_critical() {
    for (tool, p) in [
        (
            "message",
            json!({"action": "send", "target": "feishu:oc_chat", "text": "ping"}),
        ),
        (
            "message",
            json!({"action": "reply", "target": "feishu:oc_chat", "text": "ping"}),
        ),
    ] {
        let mut st = LoopState::default();
        for i in 0..CRITICAL as usize {
            let payload = send_payload(i);
            let text = serde_json::to_string_pretty(&payload).unwrap();
            success(&mut st, tool, &p, &text, payload, i);
        }
        assert!(matches!(detect(&st, tool, p), Verdict::Critical { .. }));
    }
}

#[test]
fn non_send_message_actions_keep_full_result_hashing() {
    for p in [
        json!({"action": "read", "target": "feishu:oc_chat"}),
        json!({"action": "channel-create", "name": "support"}),
    ] {
        assert_ne!(
            send_hash(
                "message",
                &p,
                json!({"ok": true, "messageId": "m_0", "ts": 1000})
            ),
            send_hash(
                "message",
                &p,
                json!({"ok": true, "messageId": "m_1", "ts": 2000})
            )
        );
    }
    let p = json!({"action": "send", "target": "feishu:oc_chat", "text": "ping"});
    assert_ne!(
        send_hash(
            "message",
            &p,
            json!({"ok": true, "messageId": "om_0", "route": {"id": "conv-A"}})
        ),
        send_hash(
            "message",
            &p,
            json!({"ok": true, "messageId": "om_1", "route": {"id": "conv-B"}})
        )
    );
}

#[test]
fn the_loop_veto_has_no_result_hash_but_other_vetoes_do() {
    let p = json!({"action": "send"});
    assert_eq!(
        hash_outcome(
            "message",
            &args(p.clone()),
            &Outcome::Result {
                text: "blocked",
                details: json!({"status": "blocked", "deniedReason": "tool-loop"}).as_object()
            }
        )
        .0,
        None
    );
    let p = json!({"action": "read", "target": "feishu:oc_chat"});
    let mut st = LoopState::default();
    for i in 0..CRITICAL as usize {
        success(
            &mut st,
            "message",
            &p,
            "blocked",
            json!({"status": "blocked", "deniedReason": "plugin-before-tool-call"}),
            i,
        );
    }
    assert!(matches!(
        detect(&st, "message", p),
        Verdict::Critical { .. }
    ));
}

#[test]
fn message_objects_lose_their_own_id_but_not_the_conversation_id() {
    let p = json!({"action": "send", "to": "feishu:chat-1", "content": "hello"});
    let m = |i: usize, room: &str| json!({"message": {"id": format!("qa_{i}"), "accountId": "default", "direction": "outbound", "conversation": {"id": room, "chatType": "channel"}, "senderId": "openclaw", "text": "hello", "timestamp": 1_800_000_000_000u64 + i as u64}});
    assert_eq!(
        send_hash("message", &p, m(0, "loop-room")),
        send_hash("message", &p, m(1, "loop-room"))
    );
    assert_ne!(
        send_hash("message", &p, m(0, "loop-room-0")),
        send_hash("message", &p, m(1, "loop-room-1"))
    );
}

// The family on canonical sessions.

fn user() -> Record {
    Record::User {
        text: "go".into(),
        prompt_id: None,
    }
}

fn call(name: &str, a: Value) -> Record {
    Record::ToolCall {
        name: name.into(),
        args: Box::new(obj(a)),
        id: None,
    }
}

fn result(output: &str, error: bool) -> Record {
    Record::ToolResult {
        id: None,
        name: None,
        output: Some(output.into()),
        error: error.then_some(true),
    }
}

fn detections(
    recs: Vec<Record>,
    sets: &[(&str, crate::detect::ParamValue)],
) -> Vec<(&'static str, u32)> {
    profile_detections("openclaw", recs, sets)
}

fn profile_detections(
    profile: &str,
    recs: Vec<Record>,
    sets: &[(&str, crate::detect::ParamValue)],
) -> Vec<(&'static str, u32)> {
    let s = Arc::new(Session::from_records(
        "s".into(),
        recs.into_iter().map(|r| (r, Origin::default())).collect(),
    ));
    let sets: Vec<(String, crate::detect::ParamValue)> = sets
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let cfg = DetectorConfig::resolve(None, Some(profile), &sets).unwrap();
    run_checks(&cfg.checks().unwrap(), &Prepared::new(s), None)
        .iter()
        .map(|d| (d.kind, d.event))
        .collect()
}

#[test]
fn session_same_call_and_result_blocks_the_21st_call() {
    let mut r = vec![user()];
    for _ in 0..22 {
        r.push(call("Read", json!({"path": "a"})));
        r.push(result("same", false));
    }
    // 20 outcomes recorded: the 21st call (record 1 + 2 * 20 + 1) is refused,
    // and so is the next (nothing was recorded for the refused one).
    assert_eq!(
        detections(r, &[]),
        vec![("generic_repeat", 42), ("generic_repeat", 44)]
    );
}

#[test]
fn session_changing_results_only_warn_and_warnings_are_logs() {
    let mut r = vec![user()];
    for i in 0..25 {
        r.push(call("read", json!({"path": "a"})));
        r.push(result(&format!("v{i}"), false));
    }
    assert!(detections(r.clone(), &[]).is_empty());
    // Logged at the 11th call (10 alike before it: bucket 1) and at the
    // 21st (20 before it: bucket 2); the calls between share bucket 1.
    assert_eq!(
        detections(
            r,
            &[("report_warnings", crate::detect::ParamValue::Bool(true))]
        ),
        vec![("generic_repeat", 22), ("generic_repeat", 42)]
    );
}

#[test]
fn session_history_is_scoped_per_prompt() {
    let mut r = Vec::new();
    for _ in 0..2 {
        r.push(user());
        for _ in 0..15 {
            r.push(call("read", json!({"path": "a"})));
            r.push(result("same", false));
        }
    }
    assert!(detections(r.clone(), &[]).is_empty());
    // One history: the 21st call (the 6th of the second prompt, record 43)
    // and every later one is refused.
    let got = detections(r, &[("scope", crate::detect::ParamValue::word("session"))]);
    assert_eq!(got.len(), 10);
    assert_eq!(got[0], ("generic_repeat", 43));
    assert_eq!(got[9], ("generic_repeat", 61));
}

#[test]
fn session_unknown_tool_errors_block_at_ten() {
    let mut r = vec![user()];
    for i in 0..11 {
        r.push(call("exec", json!({"command": format!("c{i}")})));
        r.push(result("Unknown tool: exec", true));
    }
    assert_eq!(detections(r, &[]), vec![("unknown_tool_repeat", 22)]);
}

// ---- PR #77555: `post-compaction-loop-guard.test.ts`, case by case ----
//
// `callOutcome(tool, args, result)`: the guard compares the three strings.
// Left out: the `PostCompactionLoopPersistedError` cases (an error class, no
// detection) and the arm log line.

fn outcome(tool: &str, a: Value, result: &str) -> (String, String, String) {
    (tool.into(), a.to_string(), result.into())
}

#[test]
fn guard_is_dormant_when_never_armed() {
    let mut g = PostCompactionGuard::default();
    assert_eq!(
        g.observe(3, outcome("read", json!({"path": "/x"}), "r1")),
        None
    );
    assert_eq!(g.remaining, 0);
}

#[test]
fn guard_arms_for_the_configured_window_after_compaction() {
    let mut g = PostCompactionGuard::default();
    g.arm(3);
    assert_eq!(g.remaining, 3);
}

#[test]
fn guard_decrements_remaining_attempts_on_each_observation() {
    let mut g = PostCompactionGuard::default();
    g.arm(3);
    g.observe(3, outcome("read", json!({"path": "/x"}), "r1"));
    assert_eq!(g.remaining, 2);
    g.observe(3, outcome("read", json!({"path": "/y"}), "r2"));
    assert_eq!(g.remaining, 1);
    g.observe(3, outcome("read", json!({"path": "/z"}), "r3"));
    assert_eq!(g.remaining, 0);
}

#[test]
fn guard_aborts_on_the_window_th_identical_call_within_the_window() {
    let mut g = PostCompactionGuard::default();
    g.arm(3);
    let c = || outcome("gateway", json!({"action": "lookup", "path": "x"}), "r1");
    assert_eq!(g.observe(3, c()), None);
    assert_eq!(g.observe(3, c()), None);
    assert_eq!(g.observe(3, c()), Some(3));
}

#[test]
fn guard_does_not_abort_when_the_result_changes() {
    let mut g = PostCompactionGuard::default();
    g.arm(3);
    g.observe(3, outcome("read", json!({"path": "/x"}), "r1"));
    g.observe(3, outcome("read", json!({"path": "/x"}), "r2"));
    assert_eq!(
        g.observe(3, outcome("read", json!({"path": "/x"}), "r3")),
        None
    );
}

#[test]
fn guard_does_not_abort_when_the_arguments_change() {
    let mut g = PostCompactionGuard::default();
    g.arm(3);
    g.observe(3, outcome("read", json!({"path": "/a"}), "r1"));
    g.observe(3, outcome("read", json!({"path": "/b"}), "r1"));
    assert_eq!(
        g.observe(3, outcome("read", json!({"path": "/c"}), "r1")),
        None
    );
}

#[test]
fn guard_does_not_abort_outside_the_window() {
    let mut g = PostCompactionGuard::default();
    g.arm(2);
    g.observe(2, outcome("read", json!({"path": "/x"}), "r1"));
    g.observe(2, outcome("read", json!({"path": "/y"}), "r1"));
    assert_eq!(g.remaining, 0);
    assert_eq!(
        g.observe(2, outcome("read", json!({"path": "/x"}), "r1")),
        None
    );
}

#[test]
fn guard_rearms_on_a_second_compaction() {
    let mut g = PostCompactionGuard::default();
    g.arm(2);
    g.observe(2, outcome("read", json!({"path": "/x"}), "r1"));
    g.observe(2, outcome("read", json!({"path": "/y"}), "r1"));
    assert_eq!(g.remaining, 0);
    g.arm(2);
    assert_eq!(g.remaining, 2);
}

#[test]
fn guard_disarms_after_window_observations_whatever_the_verdict() {
    let mut g = PostCompactionGuard::default();
    g.arm(3);
    g.observe(3, outcome("read", json!({"path": "/a"}), "r1"));
    g.observe(3, outcome("write", json!({"path": "/b"}), "r2"));
    g.observe(3, outcome("exec", json!({"cmd": "ls"}), "r3"));
    assert_eq!(g.remaining, 0);
}

// The guard on canonical sessions: a compaction is a `session` record that
// raises `meta.compactions`.

fn compacted(n: u64) -> Record {
    let mut m = Map::new();
    m.insert("compactions".into(), json!(n));
    Record::Session {
        agent: None,
        model: None,
        mode: None,
        meta: Some(Box::new(m)),
    }
}

fn after_compaction(results: &[&str]) -> Vec<Record> {
    let mut r = vec![user()];
    for _ in 0..2 {
        r.push(call("read", json!({"path": "a"})));
        r.push(result("same", false));
    }
    r.push(compacted(1));
    for out in results {
        r.push(call("read", json!({"path": "a"})));
        r.push(result(out, false));
    }
    r
}

#[test]
fn session_guard_aborts_at_the_third_identical_outcome_after_compaction() {
    let r = after_compaction(&["same", "same", "same", "same"]);
    // Records (1-based): 1 user, 2-5 before, 6 compaction, 7-14 after; the
    // third outcome after it is record 12. The aborted run takes nothing more.
    for p in ["openclaw-2026-05", "openclaw-off-2026-05"] {
        assert_eq!(
            profile_detections(p, r.clone(), &[]),
            vec![("compaction_loop_persisted", 12)],
            "{p}"
        );
    }
    // The guard is not in the openclaw profile (the version before the PR).
    assert!(detections(r, &[]).is_empty());
}

#[test]
fn session_guard_needs_identical_results_within_the_window() {
    let r = after_compaction(&["same", "other", "same", "same", "same"]);
    assert!(profile_detections("openclaw-2026-05", r, &[]).is_empty());
}

#[test]
fn session_guard_needs_a_compaction_in_the_run() {
    // The opening session record's count is the baseline, not a compaction,
    // and a new prompt builds a new, unarmed guard.
    let mut r = vec![compacted(4), user()];
    for _ in 0..5 {
        r.push(call("read", json!({"path": "a"})));
        r.push(result("same", false));
    }
    assert!(profile_detections("openclaw-off-2026-05", r, &[]).is_empty());
    let mut r = vec![user(), compacted(1), user()];
    for _ in 0..5 {
        r.push(call("read", json!({"path": "a"})));
        r.push(result("same", false));
    }
    assert!(profile_detections("openclaw-off-2026-05", r, &[]).is_empty());
}

#[test]
fn session_guard_window_is_a_parameter() {
    let r = after_compaction(&["same", "same", "same"]);
    let two = [("post_compaction_window", crate::detect::ParamValue::Int(2))];
    assert_eq!(
        profile_detections("openclaw-off-2026-05", r, &two),
        vec![("compaction_loop_persisted", 10)]
    );
}

/// Fed record by record (the live Detector's stream), the hook fires what a
/// replay fires: blocks, logged warnings, the guard's abort, per run and
/// per session. The calls awaiting an outcome are kept for the whole
/// session: a call of the first prompt never answered takes the next result
/// of its name in the second (the oldest unanswered), so the call made just
/// before that result keeps no outcome there.
#[test]
fn a_live_feed_fires_what_a_replay_fires() {
    use crate::detect::ParamValue;
    let named = |name: &str, output: &str, error: bool| Record::ToolResult {
        id: None,
        name: Some(name.into()),
        output: Some(output.into()),
        error: error.then_some(true),
    };
    let mut r = vec![user(), call("grep", json!({"q": "never answered"}))];
    for i in 0..14 {
        r.push(call("read", json!({"path": "a"})));
        r.push(named("read", "same", false));
        if i % 4 == 3 {
            r.push(call("process", json!({"action": "poll"})));
            r.push(named("process", "running", false));
        }
    }
    r.push(compacted(1));
    r.push(user());
    for i in 0..12 {
        let other = if i % 2 == 0 { "a" } else { "b" };
        r.push(call("grep", json!({"q": "x"})));
        r.push(named("grep", "hits", false));
        r.push(call(other, json!({})));
        r.push(named(other, "same", false));
        if i == 5 {
            r.push(compacted(2));
        }
    }
    // The guard aborts the run at the third; the records after it are the run's.
    r.push(compacted(3));
    for _ in 0..4 {
        r.push(call("read", json!({"path": "b"})));
        r.push(named("read", "same", false));
    }
    r.push(user());
    for _ in 0..3 {
        r.push(call("nope", json!({})));
        r.push(named("nope", "Unknown tool: nope", true));
    }
    // Results that name nothing answer the oldest call waiting.
    for _ in 0..12 {
        r.push(call("process", json!({"action": "log"})));
        r.push(result("no output yet", false));
    }
    let s = Arc::new(Session::from_records(
        "s".into(),
        r.into_iter().map(|x| (x, Origin::default())).collect(),
    ));
    let mut cfgs = Vec::new();
    for profile in ["openclaw", "openclaw-2026-05", "openclaw-off-2026-05"] {
        for scope in ["run", "session"] {
            for (warn, crit) in [(2, 3), (3, 5), (10, 20)] {
                cfgs.push((
                    profile,
                    vec![
                        ("scope".to_string(), ParamValue::word(scope)),
                        ("warning_threshold".to_string(), ParamValue::Int(warn)),
                        ("critical_threshold".to_string(), ParamValue::Int(crit)),
                        ("unknown_tool_threshold".to_string(), ParamValue::Int(2)),
                        ("history_size".to_string(), ParamValue::Int(crit + 2)),
                        ("report_warnings".to_string(), ParamValue::Bool(true)),
                    ],
                ));
            }
        }
    }
    let kinds = super::stream_equals_run_kinds(&s, &cfgs);
    let want = [
        "compaction_loop_persisted",
        "generic_repeat",
        "known_poll_no_progress",
        "ping_pong",
        "unknown_tool_repeat",
    ];
    assert_eq!(kinds.keys().copied().collect::<Vec<_>>(), want);
}

proptest::proptest! {
    /// The live rule's outcome hash (canonical results written directly)
    /// is `hashToolOutcome` built as a `Value` and stable-stringified, for
    /// every shape: plain and exec results, known polls, sends, plans,
    /// thrown errors, details or none, texts with quotes, controls, blanks.
    #[test]
    fn outcome_hash_is_the_general_one(
        tool in 0usize..7,
        text in "[ a-z\"\\\\\t\n\u{1}\u{e9}\u{1f600}]{0,12}",
        error in proptest::bool::ANY,
        details in proptest::option::of(0usize..3),
    ) {
        use crate::detect::peers::openclaw::{outcome_hash, outcome_hash_general, OutcomeArgs};
        let (tool, a) = [
            ("read", json!({"path": "a"})),
            ("exec", json!({"command": "ls"})),
            ("process", json!({"action": "poll"})),
            ("process", json!({"action": "log"})),
            ("message", json!({"action": "send"})),
            ("sessions_send", json!({})),
            ("update_plan", json!({"plan": [{"status": "done", "step": "x"}]})),
        ][tool].clone();
        let a = OutcomeArgs::of(tool, &args(a));
        let d = details.map(|d| args([json!({}), json!({"status": "running"}), json!({"id": "x", "text": "y", "ts": 1})][d].clone()));
        let outcome = if error {
            Outcome::Error(&text)
        } else {
            Outcome::Result { text: &text, details: d.as_ref() }
        };
        proptest::prop_assert_eq!(outcome_hash(tool, &a, &outcome), outcome_hash_general(tool, &a, &outcome));
    }

    /// The verdict read from the run's tail of the history in place is the
    /// one read from the run's calls collected, whatever order runs come in.
    #[test]
    fn a_run_read_in_place_is_the_run_collected(
        calls in proptest::collection::vec((0u32..3, 0usize..2, 0usize..3, proptest::option::of(0usize..2)), 0..40),
        run in 0u32..3,
        tool in 0usize..2,
        arg in 0usize..3,
        in_order in proptest::bool::ANY,
    ) {
        use crate::detect::peers::openclaw::verdict;
        let s = OpenClawSettings { warning_threshold: 3, critical_threshold: 5, history_size: 100, ..s() };
        let mut calls = calls;
        if in_order {
            // As the live rule records them.
            calls.sort_by_key(|c| c.0);
        }
        let tools = ["read", "grep"];
        let mut st = LoopState::default();
        for (i, (r, t, x, out)) in calls.iter().enumerate() {
            let a = args(json!({"x": x}));
            let id = format!("c{i}");
            st.record_call(&s, *r, tools[*t], &a, Some(&id));
            if let Some(o) = out {
                let text = ["same", "other"][*o];
                st.record_outcome(&s, *r, tools[*t], &a, Some(&id), &Outcome::Result { text, details: None });
            }
        }
        let a = args(json!({"x": arg}));
        let current = st.interned(&hash_tool_call(tools[tool], &a));
        let tool_held = st.interned(tools[tool]);
        let scoped: Vec<_> = st.history().iter().filter(|c| c.run == run).collect();
        proptest::prop_assert_eq!(
            st.detect(&s, run, tools[tool], &a),
            verdict(&s, &scoped, &tool_held, &current, false)
        );
    }
}
