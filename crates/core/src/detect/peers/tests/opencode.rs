//! OpenCode and Kilo Code: the calls' `JSON.stringify` inputs are made once
//! per session and shared by every configuration.

use super::obj;
use crate::detect::{run_checks, DetectorConfig, ParamValue, Prepared};
use crate::event::{Origin, Record, Session};
use serde_json::json;
use std::sync::Arc;

/// One prompt, one step, `n` identical calls each answered, then a different one.
fn session(n: usize) -> Arc<Session> {
    let o = Origin::default;
    let mut recs = vec![
        (
            Record::User {
                text: "go".into(),
                prompt_id: None,
            },
            o(),
        ),
        (Record::Turn, o()),
    ];
    let big = "y".repeat(4096);
    let mut calls = vec![json!({"filePath": "a.rs", "body": big}); n];
    calls.push(json!({"filePath": "b.rs"}));
    for args in calls {
        recs.push((
            Record::ToolCall {
                name: "read".into(),
                args: obj(args).into(),
                id: None,
            },
            o(),
        ));
        recs.push((
            Record::ToolResult {
                id: None,
                name: None,
                output: Some("same".into()),
                error: Some(false),
            },
            o(),
        ));
    }
    Arc::new(Session::from_records("s".into(), recs))
}

#[test]
fn inputs_are_shared_by_configurations_with_unchanged_verdicts() {
    let s = session(5);
    let shared = Prepared::new(s.clone());
    for (profile, threshold) in [("opencode", 3), ("opencode", 4), ("kilo", 3), ("kilo", 5)] {
        let cfg = DetectorConfig::resolve(
            None,
            Some(profile),
            &[("threshold".into(), ParamValue::Int(threshold))],
        )
        .unwrap();
        let checks = cfg.checks().unwrap();
        let fresh = run_checks(&checks, &Prepared::new(s.clone()), None);
        let reused = run_checks(&checks, &shared, None);
        assert!(!fresh.is_empty(), "{profile} {threshold}");
        assert_eq!(
            format!("{fresh:?}"),
            format!("{reused:?}"),
            "{profile} {threshold}: a shared session changed the verdicts"
        );
        assert!(shared.holds("call.args"), "{profile}");
    }
    // The message names the input as JSON.stringify writes it.
    let cfg = DetectorConfig::resolve(None, Some("opencode"), &[]).unwrap();
    let d = run_checks(&cfg.checks().unwrap(), &shared, None);
    assert!(
        d[0].detail.contains("\"filePath\":\"a.rs\"") && d[0].detail.contains(&"y".repeat(4096)),
        "{:?}",
        d[0].detail
    );
}

/// Kilo keeps only the last `scan_parts` parts, but every unanswered call:
/// an old call that never got its result still takes the next result of its
/// name (the oldest unanswered), out of the window, so the newer call stays
/// unfinished. Fed live it gives what the replay gives, window by window.
#[test]
fn a_live_feed_keeps_the_window_and_the_unanswered_calls() {
    let o = Origin::default;
    let call = |path: &str| {
        (
            Record::ToolCall {
                name: "read".into(),
                args: obj(json!({ "filePath": path })).into(),
                id: None,
            },
            o(),
        )
    };
    let result = || {
        (
            Record::ToolResult {
                id: None,
                name: Some("read".into()),
                output: Some("x".into()),
                error: Some(false),
            },
            o(),
        )
    };
    let text = || (Record::Content { text: "t".into() }, o());
    let mut recs = vec![
        (
            Record::User {
                text: "go".into(),
                prompt_id: None,
            },
            o(),
        ),
        (Record::Turn, o()),
        call("old"), // never answered
    ];
    for k in 0..12 {
        recs.push((Record::Turn, o()));
        recs.push(call(if k % 5 == 4 { "b" } else { "a" }));
        recs.push(result());
        if k % 3 == 0 {
            recs.push(text());
        }
    }
    let s = Arc::new(Session::from_records("s".into(), recs));
    let mut cfgs = Vec::new();
    for scan in 1..=12 {
        for threshold in 1..=4 {
            for profile in ["kilo", "opencode"] {
                cfgs.push((
                    profile,
                    vec![
                        ("scan_parts".to_string(), ParamValue::Int(scan)),
                        ("threshold".to_string(), ParamValue::Int(threshold)),
                    ],
                ));
            }
        }
    }
    assert!(super::stream_equals_run(&s, &cfgs) > 0);
}
