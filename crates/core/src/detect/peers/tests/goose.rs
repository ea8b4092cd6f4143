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
