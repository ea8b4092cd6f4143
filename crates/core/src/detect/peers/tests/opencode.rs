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
