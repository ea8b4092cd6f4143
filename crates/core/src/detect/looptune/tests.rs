//! The rules on sessions made by hand: each case would fail without the
//! behaviour it names.

use crate::detect::{run_checks, DetectorConfig, ParamValue, Prepared};
use crate::event::{Origin, Record, Session};
use serde_json::{json, Map, Value};
use std::sync::Arc;

pub(super) fn call(name: &str, args: Value) -> Record {
    let Value::Object(m) = args else {
        panic!("object")
    };
    Record::ToolCall {
        name: name.into(),
        args: Box::new(m as Map<String, Value>),
        id: None,
    }
}

pub(super) fn result(name: &str, output: &str, error: bool) -> Record {
    Record::ToolResult {
        id: None,
        name: Some(name.into()),
        output: Some(output.into()),
        error: Some(error),
    }
}

pub(super) fn user() -> Record {
    Record::User {
        text: "go".into(),
        prompt_id: None,
    }
}

fn text(t: &str) -> Record {
    Record::Content { text: t.into() }
}

pub(super) fn session(records: Vec<Record>) -> Arc<Session> {
    Arc::new(Session::from_records(
        "s".into(),
        records
            .into_iter()
            .map(|r| (r, Origin::default()))
            .collect(),
    ))
}

/// Every rule off, then `sets`.
pub(super) fn detect(s: &Arc<Session>, sets: &[(&str, ParamValue)]) -> Vec<(&'static str, u32)> {
    let mut all: Vec<(String, ParamValue)> = [
        "repeat_stop",
        "cycle_stop",
        "error_stop",
        "chant_stop",
        "long_chant_stop",
    ]
    .iter()
    .map(|k| (k.to_string(), ParamValue::Int(0)))
    .collect();
    all.extend(sets.iter().map(|(k, v)| (k.to_string(), v.clone())));
    let cfg = DetectorConfig::resolve(None, Some("looptune-default"), &all).unwrap();
    run_checks(&cfg.checks().unwrap(), &Prepared::new(s.clone()), None)
        .into_iter()
        .map(|d| (d.kind, d.event))
        .collect()
}

fn int(k: &'static str, v: i64) -> (&'static str, ParamValue) {
    (k, ParamValue::Int(v))
}

#[test]
fn repeats_warn_then_stop_and_the_step_scope_breaks_on_text() {
    let mut r = vec![user()];
    for _ in 0..4 {
        r.push(call("ls", json!({"p": "."})));
    }
    let s = session(r.clone());
    // Warn at 2, stop from 3 on (events are 1-based: the user record is 1).
    assert_eq!(
        detect(&s, &[int("repeat_warn", 2), int("repeat_stop", 3)]),
        [("repeat_warn", 3), ("repeat", 4), ("repeat", 5)]
    );
    // Model text between the calls ends OpenCode's run, not Gemini's.
    r.insert(3, text("again"));
    let s = session(r);
    assert_eq!(
        detect(&s, &[int("repeat_stop", 3)]),
        [("repeat", 5), ("repeat", 6)]
    );
    assert_eq!(
        detect(
            &s,
            &[
                int("repeat_stop", 3),
                ("repeat_scope", ParamValue::word("step"))
            ]
        ),
        []
    );
}

#[test]
fn sameness_name_args_result_and_volatile_values() {
    let s = session(vec![
        user(),
        call(
            "read",
            json!({"id": "3f2a9c1e-1b2c-4d5e-8f90-123456789abc"}),
        ),
        result("read", "same", false),
        call(
            "read",
            json!({"id": "9a8b7c6d-1b2c-4d5e-8f90-123456789abc"}),
        ),
        result("read", "same", false),
        call(
            "read",
            json!({"id": "0f0e0d0c-1b2c-4d5e-8f90-123456789abc"}),
        ),
        result("read", "other", false),
    ]);
    let three = int("repeat_stop", 3);
    assert_eq!(detect(&s, std::slice::from_ref(&three)), []);
    assert_eq!(
        detect(&s, &[three.clone(), ("normalize", ParamValue::Bool(true))]),
        [("repeat", 6)]
    );
    assert_eq!(
        detect(
            &s,
            &[three.clone(), ("volatile_keys", ParamValue::words(&["id"]))]
        ),
        [("repeat", 6)]
    );
    assert_eq!(
        detect(&s, &[three.clone(), ("same", ParamValue::word("name"))]),
        [("repeat", 6)]
    );
    // With the result the third differs; with 4 characters of it, not.
    let result_same = ("same", ParamValue::word("result"));
    let norm = ("normalize", ParamValue::Bool(true));
    assert_eq!(
        detect(&s, &[three.clone(), result_same.clone(), norm.clone()]),
        []
    );
    assert_eq!(
        detect(&s, &[int("repeat_stop", 2), result_same, norm]),
        [("repeat", 5)]
    );
}

#[test]
fn polling_tools_count_only_when_their_result_repeats() {
    let mut r = vec![user()];
    for out in ["running", "running 40%", "running 80%", "done"] {
        r.push(call("status", json!({})));
        r.push(result("status", out, false));
    }
    let s = session(r.clone());
    let three = int("repeat_stop", 3);
    assert_eq!(
        detect(&s, std::slice::from_ref(&three)),
        [("repeat", 6), ("repeat", 8)]
    );
    let polling = ("polling_tools", ParamValue::words(&["status"]));
    assert_eq!(detect(&s, &[three.clone(), polling.clone()]), []);
    // A poll whose answer never changes is a loop again, found at the result.
    let mut r = vec![user()];
    for _ in 0..3 {
        r.push(call("status", json!({})));
        r.push(result("status", "running", false));
    }
    assert_eq!(detect(&session(r), &[three, polling]), [("repeat", 7)]);
}

#[test]
fn windows_count_interleaved_repeats() {
    let mut r = vec![user()];
    for i in 0..4 {
        r.push(call("test", json!({})));
        r.push(call("edit", json!({"n": i})));
    }
    let s = session(r);
    let w = [int("window_size", 6), int("window_stop", 3)];
    assert_eq!(detect(&s, &w), [("window", 6), ("window", 8)]);
    assert_eq!(
        detect(&s, &[int("window_size", 4), int("window_stop", 3)]),
        []
    );
}

#[test]
fn cycles_of_two_and_three_but_not_runs_of_one() {
    let mut r = vec![user()];
    for _ in 0..3 {
        r.push(call("a", json!({})));
        r.push(call("b", json!({})));
        r.push(call("c", json!({})));
    }
    let s = session(r);
    let c = [int("cycle_max_period", 3), int("cycle_stop", 3)];
    assert_eq!(detect(&s, &c), [("cycle", 10)]);
    assert_eq!(
        detect(&s, &[int("cycle_max_period", 2), int("cycle_stop", 3)]),
        []
    );
    let warn = [
        int("cycle_max_period", 3),
        int("cycle_warn", 2),
        int("cycle_stop", 3),
    ];
    assert_eq!(detect(&s, &warn), [("cycle_warn", 7), ("cycle", 10)]);
    let mut r = vec![user()];
    r.extend((0..6).map(|_| call("a", json!({}))));
    assert_eq!(detect(&session(r), &c), []);
}

#[test]
fn error_streaks_need_one_tool_one_error_head_in_a_row() {
    let mut r = vec![user()];
    for cmd in ["whoami", "hostname", "echo hi"] {
        r.push(call("shell", json!({ "command": cmd })));
        r.push(result(
            "shell",
            "Command rejected: could not be parsed safely",
            true,
        ));
    }
    let s = session(r.clone());
    assert_eq!(detect(&s, &[int("error_stop", 3)]), [("error_streak", 7)]);
    assert_eq!(
        detect(&s, &[int("error_warn", 2), int("error_stop", 3)]),
        [("error_streak_warn", 5), ("error_streak", 7)]
    );
    // A success between ends the streak.
    r.insert(5, result("shell", "ok", false));
    assert_eq!(detect(&session(r), &[int("error_stop", 3)]), []);
}

#[test]
fn no_progress_is_the_same_answer_to_the_same_call_with_others_between() {
    let mut r = vec![user()];
    for i in 0..3 {
        r.push(call("run_tests", json!({})));
        r.push(result("run_tests", "1 failed", false));
        r.push(call("edit", json!({ "n": i })));
        r.push(result("edit", "ok", false));
    }
    let s = session(r);
    assert_eq!(detect(&s, &[int("stall_stop", 3)]), [("no_progress", 11)]);
    assert_eq!(detect(&s, &[int("repeat_stop", 3)]), []);
}

#[test]
fn long_chants_across_tool_calls_that_gemini_misses() {
    let para = "I will now check the configuration file again to see whether the setting \
                is applied, and then rerun the build to confirm that it passes this time. ";
    let mut r = vec![user()];
    for _ in 0..4 {
        r.push(text(para));
        r.push(call("read_file", json!({"path": "config.toml"})));
        r.push(result("read_file", "x = 1", false));
        r.push(call("shell", json!({"command": "make"})));
    }
    let s = session(r);
    let lc = [int("long_chant_chars", 100), int("long_chant_stop", 3)];
    assert_eq!(detect(&s, &lc), [("long_chant", 10), ("long_chant", 14)]);
    assert_eq!(detect(&s, &[int("chant_stop", 10)]), []);
    assert_eq!(
        detect(
            &s,
            &[int("long_chant_chars", 200), int("long_chant_stop", 3)]
        ),
        []
    );
}

#[test]
fn a_chanting_threshold_of_one_is_refused_by_name() {
    let cfg = DetectorConfig::resolve(
        None,
        Some("looptune-default"),
        &[("chant_stop".into(), ParamValue::Int(1))],
    )
    .unwrap();
    let e = cfg.checks().err().expect("refused").to_string();
    assert!(e.contains("`chant_stop`"), "{e}");
}

#[test]
fn rules_share_the_action_keys_of_one_setting() {
    let s = session(vec![user(), call("ls", json!({})), call("ls", json!({}))]);
    let p = Prepared::new(s);
    let cfg = DetectorConfig::resolve(
        None,
        Some("looptune-default"),
        &[("window_stop".into(), ParamValue::Int(2))],
    )
    .unwrap();
    run_checks(&cfg.checks().unwrap(), &p, None);
    assert!(p.holds("looptune.actions"));
    let a = super::actions::actions(
        &p,
        &super::actions::SameSettings {
            same: super::actions::Same::Args,
            normalize: false,
            volatile: vec![],
            result_chars: 200,
            polling: vec![],
        },
    );
    let b = super::actions::actions(
        &p,
        &super::actions::SameSettings {
            same: super::actions::Same::Args,
            normalize: false,
            volatile: vec![],
            result_chars: 200,
            polling: vec![],
        },
    );
    assert!(Arc::ptr_eq(&a, &b));
}
