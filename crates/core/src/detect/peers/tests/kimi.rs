//! Kimi CLI's `tests/core/test_toolset.py` (@b0e08c5f) dedup and repeat
//! cases ported to the port's toolset state, and the family on sessions.

use super::obj;
use crate::detect::peers::kimi::{canonical_args, tier, CallKey, Handled, Toolset};
use crate::detect::{run_checks, DetectorConfig, Prepared};
use crate::event::{Origin, Record, Session};
use serde_json::{json, Value};
use std::sync::Arc;

const TIERS: [u32; 4] = [3, 5, 8, 12];

fn key(name: &str, args: Value) -> CallKey {
    (name.into(), canonical_args(&obj(args)))
}

/// `_run_consecutive`: `count` steps of one identical call each; the last
/// call's handling.
fn run_consecutive(ts: &mut Toolset, count: usize) -> Handled {
    let mut previous: Vec<CallKey> = Vec::new();
    let mut last = None;
    for _ in 0..count {
        ts.begin_step(&previous);
        last = Some(ts.handle(key("ToolA", json!({"value": "x"})), &TIERS));
        previous = ts.end_step();
    }
    last.unwrap()
}

fn action(h: &Handled) -> u8 {
    match h {
        Handled::Run(Some((_, t, _))) => *t,
        _ => 0,
    }
}

#[test]
fn same_step_dedup_and_end_step_keeps_both() {
    let mut ts = Toolset::default();
    ts.begin_step(&[]);
    assert_eq!(
        ts.handle(key("ToolA", json!({"value": "x"})), &TIERS),
        Handled::Run(None)
    );
    assert_eq!(
        ts.handle(key("ToolA", json!({"value": "x"})), &TIERS),
        Handled::SameStep
    );
    let k = ("ToolA".to_string(), r#"{"value":"x"}"#.to_string());
    assert_eq!(ts.end_step(), vec![k.clone(), k]);
}

#[test]
fn same_step_dedup_canonicalizes_argument_key_order() {
    let mut ts = Toolset::default();
    ts.begin_step(&[]);
    ts.handle(key("ToolA", json!({"a": 1, "b": 2})), &TIERS);
    assert_eq!(
        ts.handle(key("ToolA", json!({"b": 2, "a": 1})), &TIERS),
        Handled::SameStep
    );
    let k = ("ToolA".to_string(), r#"{"a":1,"b":2}"#.to_string());
    assert_eq!(ts.end_step(), vec![k.clone(), k]);
}

#[test]
fn cross_step_duplicate_below_three_is_tracked_without_reminder() {
    let mut ts = Toolset::default();
    let k = key("ToolA", json!({"value": "x"}));
    // begin_step with a previous call and no streak yet advances the streak.
    ts.begin_step(std::slice::from_ref(&k));
    let h = ts.handle(k.clone(), &TIERS);
    assert!(matches!(h, Handled::Run(Some((2, 0, _)))), "{h:?}");
    assert_eq!(ts.end_step(), vec![k]);
}

#[test]
fn reminder_at_three_consecutive_then_tiers() {
    for (count, expected) in [
        (1, 0),
        (2, 0),
        (3, 1),
        (4, 1),
        (5, 2),
        (7, 2),
        (8, 3),
        (11, 3),
        (12, 4),
    ] {
        let mut ts = Toolset::default();
        assert_eq!(
            action(&run_consecutive(&mut ts, count)),
            expected,
            "{count}"
        );
    }
}

#[test]
fn non_duplicate_allowed() {
    let mut ts = Toolset::default();
    ts.begin_step(&[key("ToolA", json!({"value": "x"}))]);
    assert_eq!(
        ts.handle(key("ToolA", json!({"value": "y"})), &TIERS),
        Handled::Run(None)
    );
}

#[test]
fn no_cross_step_dedup_after_empty_previous_calls() {
    // test_cross_step_dedup_not_triggered_after_back_to_the_future
    let mut ts = Toolset::default();
    ts.begin_step(&[]);
    ts.handle(key("ToolA", json!({"value": "x"})), &TIERS);
    ts.end_step();
    ts.begin_step(&[]);
    assert_eq!(
        ts.handle(key("ToolA", json!({"value": "x"})), &TIERS),
        Handled::Run(None)
    );
}

#[test]
fn build_repeat_reminder_tiers() {
    let got: Vec<u8> = [1, 2, 3, 4, 5, 7, 8, 11, 12, 20]
        .iter()
        .map(|&n| tier(n, &TIERS))
        .collect();
    assert_eq!(got, [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]);
}

#[test]
fn telemetry_repeat_counts_match() {
    // test_tool_call_repeat_telemetry_matches_kimi_code: 5 steps give
    // repeat events with counts 2, 3, 4, 5 and actions none, r1, r1, r2.
    let mut ts = Toolset::default();
    let mut previous = Vec::new();
    let mut seen = Vec::new();
    for _ in 0..5 {
        ts.begin_step(&previous);
        if let Handled::Run(Some((n, t, _))) =
            ts.handle(key("ToolA", json!({"value": "x"})), &TIERS)
        {
            seen.push((n, t));
        }
        previous = ts.end_step();
    }
    assert_eq!(seen, [(2, 0), (3, 1), (4, 1), (5, 2)]);
}

#[test]
fn canonical_args_sort_recursively_and_keep_arrays() {
    assert_eq!(
        canonical_args(&obj(
            json!({"b": {"y": 1, "x": [2, {"d": 1, "c": 0}]}, "a": "é"})
        )),
        r#"{"a":"é","b":{"x":[2,{"c":0,"d":1}],"y":1}}"#
    );
    // Python keeps 1.0 and 1 apart.
    assert_ne!(
        canonical_args(&obj(json!({"a": 1.0}))),
        canonical_args(&obj(json!({"a": 1})))
    );
}

// ---- driven by sessions ------------------------------------------------------

fn session(recs: Vec<Record>) -> Prepared {
    let o = Origin::at(0, 0);
    Prepared::new(Arc::new(Session::from_records(
        "s".into(),
        recs.into_iter().map(|r| (r, o.clone())).collect(),
    )))
}

fn tc(name: &str, args: Value) -> Record {
    Record::ToolCall {
        name: name.into(),
        args: obj(args).into(),
        id: None,
    }
}

fn tr() -> Record {
    Record::ToolResult {
        id: None,
        name: None,
        output: Some("ok".into()),
        error: None,
    }
}

fn user() -> Record {
    Record::User {
        text: "go".into(),
        prompt_id: None,
    }
}

fn dets(p: &Prepared) -> Vec<(&'static str, u32, u32)> {
    let cfg = DetectorConfig::resolve(None, Some("kimi"), &[]).unwrap();
    run_checks(&cfg.checks().unwrap(), p, None)
        .iter()
        .map(|d| (d.kind, d.event, d.strike))
        .collect()
}

#[test]
fn session_strikes_at_3_5_8_12() {
    let mut r = vec![user()];
    for _ in 0..14 {
        r.extend([Record::Turn, tc("read", json!({"p": 1})), tr()]);
    }
    // Call k is record 3k (user, then turn/call/result triples).
    assert_eq!(
        dets(&session(r)),
        [
            ("reminder_1", 9, 1),
            ("reminder_2", 15, 2),
            ("reminder_3", 24, 3),
            ("tool_call_repeat", 36, 4)
        ]
    );
}

#[test]
fn session_same_step_repeats_count_and_skipped_tiers_are_reported_together() {
    // Step 1 calls A five times (same-step repeats: no reminders), step 2
    // calls A once: projected streak 6, tier 2 reached without tier 1.
    let mut r = vec![user(), Record::Turn];
    for _ in 0..5 {
        r.push(tc("read", json!({"p": 1})));
    }
    r.extend([Record::Turn, tc("read", json!({"p": 1}))]);
    assert_eq!(
        dets(&session(r)),
        [("reminder_1", 9, 1), ("reminder_2", 9, 2)]
    );
}

#[test]
fn session_resets_at_user_and_at_a_step_without_calls() {
    let mut r = vec![user()];
    for _ in 0..2 {
        r.extend([Record::Turn, tc("read", json!({"p": 1})), tr()]);
    }
    r.push(user());
    for _ in 0..2 {
        r.extend([Record::Turn, tc("read", json!({"p": 1})), tr()]);
    }
    r.extend([Record::Turn, Record::Content { text: "hm".into() }]);
    for _ in 0..2 {
        r.extend([Record::Turn, tc("read", json!({"p": 1})), tr()]);
    }
    assert!(dets(&session(r)).is_empty());
}

#[test]
fn session_warn3_stops_at_the_force_stop() {
    let mut r = vec![user()];
    for _ in 0..13 {
        r.extend([Record::Turn, tc("read", json!({"p": 1})), tr()]);
    }
    let cfg = DetectorConfig::resolve(None, Some("kimi"), &[]).unwrap();
    assert_eq!(cfg.policy().to_string(), "warn:3");
    let d = run_checks(&cfg.checks().unwrap(), &session(r), None);
    let stop = d.iter().find(|d| d.strike == 4).unwrap();
    assert_eq!((stop.kind, stop.event), ("tool_call_repeat", 36));
}

#[test]
fn thresholds_in_any_order_stop_first_as_the_original_checks() {
    // force_stop below reminder_3: the stop wins at 6 (the if-chain checks it
    // first); the tiers it skipped are reported at the same call.
    let mut r = vec![user()];
    for _ in 0..8 {
        r.extend([Record::Turn, tc("read", json!({"p": 1})), tr()]);
    }
    let over = DetectorConfig::parse_sets("kimi", &["force_stop=6".into()]).unwrap();
    let cfg = DetectorConfig::resolve(None, Some("kimi"), &over).unwrap();
    let d: Vec<(&str, u32, u32)> = run_checks(&cfg.checks().unwrap(), &session(r), None)
        .iter()
        .map(|d| (d.kind, d.event, d.strike))
        .collect();
    assert_eq!(
        d,
        [
            ("reminder_1", 9, 1),
            ("reminder_2", 15, 2),
            ("reminder_3", 18, 3),
            ("tool_call_repeat", 18, 4)
        ]
    );
    assert_eq!(tier(7, &[3, 5, 8, 6]), 4);
}

/// Fed live, a step begins at its first model record (a `user` record's
/// segment is a step only once the model writes in it) and each call fires
/// at its record: the same detections as the replay, under small tiers.
#[test]
fn fed_live_equals_the_replay() {
    let o = Origin::default;
    let call = |f: &str| {
        (
            Record::ToolCall {
                name: "read".into(),
                args: obj(json!({ "f": f })).into(),
                id: None,
            },
            o(),
        )
    };
    let user = || {
        (
            Record::User {
                text: "go".into(),
                prompt_id: None,
            },
            o(),
        )
    };
    let text = || (Record::Content { text: "t".into() }, o());
    let mut recs = vec![user()];
    for k in 0..30 {
        match k % 7 {
            3 => recs.extend([user(), text(), call("a")]),
            5 => recs.extend([(Record::Turn, o()), call("a"), call("a"), call("b")]),
            6 => recs.extend([(Record::Turn, o()), text()]),
            _ => recs.extend([(Record::Turn, o()), call("a")]),
        }
    }
    let s = Arc::new(Session::from_records("s".into(), recs));
    let mut cfgs = Vec::new();
    for base in 1..=3 {
        let sets = ["reminder_1", "reminder_2", "reminder_3", "force_stop"]
            .iter()
            .enumerate()
            .map(|(j, p)| {
                (
                    p.to_string(),
                    crate::detect::ParamValue::Int(base + 2 * j as i64),
                )
            })
            .collect();
        cfgs.push(("kimi", sets));
    }
    assert!(super::stream_equals_run(&s, &cfgs) > 0);
}

proptest::proptest! {
    /// Canonical arguments written directly are the sorted copy serialised,
    /// for nested objects, arrays, numbers, escapes and non-ASCII keys.
    #[test]
    fn canonical_args_written_are_the_built_ones(
        kv in proptest::collection::vec((0usize..6, 0usize..8), 0..6),
    ) {
        use crate::detect::peers::kimi::{canonical_args, canonical_args_built};
        let keys = ["path", "a", "\u{ff61}", "\u{1f600}", "Z\n", "10"];
        let values = [
            serde_json::json!("x\"y\u{1}\u{e9}"), serde_json::json!(1), serde_json::json!(2.5),
            serde_json::json!(null), serde_json::json!(true), serde_json::json!(-1e300),
            serde_json::json!({"b": [1, "c", {"z": 1, "y": [2.0]}], "a": {}}), serde_json::json!([]),
        ];
        let args: serde_json::Map<String, serde_json::Value> =
            kv.iter().map(|(k, v)| (keys[*k].to_string(), values[*v].clone())).collect();
        proptest::prop_assert_eq!(canonical_args(&args), canonical_args_built(&args));
    }
}
