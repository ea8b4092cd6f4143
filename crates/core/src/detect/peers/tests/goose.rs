//! Goose's own repetition_inspector_tests.rs (@37c043b954), ported.

use super::obj;
use crate::detect::peers::goose::{ErrorState, RepeatState};
use serde_json::json;

#[test]
fn denies_after_exceeding_and_resets_on_param_change() {
    let mut r = RepeatState::new(2);
    let v1 = obj(json!({"id": 123}));
    assert!(r.check_tool_call("fetch_user", &v1));
    assert!(r.check_tool_call("fetch_user", &v1));
    assert!(!r.check_tool_call("fetch_user", &v1));
    let v2 = obj(json!({"id": 456}));
    assert!(r.check_tool_call("fetch_user", &v2));
    assert!(r.check_tool_call("fetch_user", &v2));
    assert!(!r.check_tool_call("fetch_user", &v2));
}

#[test]
fn error_pattern_fires_after_threshold() {
    let mut s = ErrorState::default();
    for _ in 0..3 {
        s.record_error("my_tool", "404 Not Found", 100);
    }
    assert_eq!(s.inspect(&["my_tool"], 3), vec![0]);
}

#[test]
fn error_pattern_does_not_fire_before_threshold() {
    let mut s = ErrorState::default();
    for _ in 0..2 {
        s.record_error("my_tool", "404 Not Found", 100);
    }
    assert!(s.inspect(&["my_tool"], 3).is_empty());
}

#[test]
fn error_pattern_resets_on_success() {
    let mut s = ErrorState::default();
    s.record_error("my_tool", "404 Not Found", 100);
    s.record_error("my_tool", "404 Not Found", 100);
    s.record_success();
    s.record_error("my_tool", "404 Not Found", 100);
    assert!(s.inspect(&["my_tool"], 3).is_empty());
}

#[test]
fn error_pattern_does_not_cross_tool_names() {
    let mut s = ErrorState::default();
    for _ in 0..3 {
        s.record_error("tool_a", "same error", 100);
    }
    assert!(s.inspect(&["tool_b"], 3).is_empty());
    // The count was reset even though nothing was denied.
    assert!(s.inspect(&["tool_a"], 3).is_empty());
}

#[test]
fn fingerprint_is_the_first_100_chars() {
    let mut s = ErrorState::default();
    let long = "e".repeat(100);
    s.record_error("t", &format!("{long}1"), 100);
    s.record_error("t", &format!("{long}2"), 100);
    s.record_error("t", &format!("{long}3"), 100);
    assert_eq!(s.inspect(&["x", "t", "t"], 3), vec![1, 2]);
}

/// REP-002 inspects a turn's batch at its first call but denies the batch's
/// first call of the erring tool, later in the turn: fed live it fires at
/// that call's record when it comes, as the replay (which reads the batch
/// ahead) does; a result of the same turn, after the inspection, changes
/// nothing of it.
#[test]
fn rep002_denies_a_later_call_of_the_batch_fed_live() {
    use crate::detect::{run_checks, DetectorConfig, ParamValue, Prepared};
    use crate::event::{Origin, Record, Session};
    use std::sync::Arc;
    let o = Origin::default;
    let call = |name: &str| {
        (
            Record::ToolCall {
                name: name.into(),
                args: obj(json!({"x": 1})).into(),
                id: None,
            },
            o(),
        )
    };
    let result = |name: &str, error: bool| {
        (
            Record::ToolResult {
                id: None,
                name: Some(name.into()),
                output: Some("boom".into()),
                error: Some(error),
            },
            o(),
        )
    };
    let mut recs = Vec::new();
    for _ in 0..3 {
        recs.extend([(Record::Turn, o()), call("shell"), result("shell", true)]);
    }
    // The inspection at `read` denies the turn's `shell` call (record 13).
    recs.extend([
        (Record::Turn, o()),
        call("read"),
        result("read", false),
        call("shell"),
        call("shell"),
    ]);
    for _ in 0..4 {
        recs.extend([(Record::Turn, o()), call("shell"), result("shell", true)]);
    }
    let s = Arc::new(Session::from_records("s".into(), recs));
    let cfg = DetectorConfig::resolve(None, Some("goose"), &[]).unwrap();
    let want = run_checks(&cfg.checks().unwrap(), &Prepared::new(s.clone()), None);
    let events: Vec<u32> = want.iter().map(|d| d.event).collect();
    assert_eq!(events[0], 13, "{want:?}");
    let mut cfgs = Vec::new();
    for repeats in 1..=4 {
        for max in 0..=2 {
            cfgs.push((
                "goose",
                vec![
                    ("error_repeats".to_string(), ParamValue::Int(repeats)),
                    ("max_repetitions".to_string(), ParamValue::Int(max)),
                ],
            ));
        }
    }
    assert!(super::stream_equals_run(&s, &cfgs) > 0);
}
