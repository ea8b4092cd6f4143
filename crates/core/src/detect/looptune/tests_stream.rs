//! Every rule fed one record at a time (its `Stream`, what the live
//! `watch::Detector` feeds) fires what its `run` fires on the whole
//! session, on sessions long enough for the streams to forget what their
//! rules no longer hold.

use super::tests::{call, result, session, user};
use crate::detect::{merge, Detection, DetectorConfig, ParamValue, Prepared};
use crate::event::{Record, Session};
use serde_json::json;
use std::sync::Arc;

/// The configuration's detections by its checks' `run`s and by their
/// streams (each fed record by record), merged as a replay merges them: the
/// action rules, and the call rules, of a configuration share one stream
/// (`actions::Live`), which must push each rule's detections in check order.
fn both(s: &Arc<Session>, profile: &str, sets: &[(&str, ParamValue)]) -> usize {
    let sets: Vec<(String, ParamValue)> = sets
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let cfg = DetectorConfig::resolve(None, Some(profile), &sets).unwrap();
    let p = Prepared::new(s.clone());
    let checks = cfg.checks().unwrap();
    let want = merge(checks.iter().map(|c| c.run(&p, None)).collect());
    let got = merge(
        checks
            .iter()
            .map(|c| {
                let mut stream = c
                    .stream()
                    .unwrap_or_else(|| panic!("{} has no stream", c.name()));
                let mut got: Vec<Detection> = Vec::new();
                for i in 0..s.events.len() {
                    stream.feed(s, i, &mut got);
                }
                stream.finish(s, &mut got);
                got
            })
            .collect(),
    );
    assert_eq!(got, want, "{profile} {sets:?}");
    want.len()
}

/// A long session of every kind of loop between many distinct calls (so
/// the action keys outgrow what any rule holds), across prompts.
fn long_session() -> Arc<Session> {
    let mut r = Vec::new();
    for n in 0..1500u32 {
        if n % 400 == 0 {
            r.push(user());
        }
        let (name, args, out, err) = match n % 25 {
            // A cycle of two calls.
            0..=7 => (
                if n % 2 == 0 { "Read" } else { "Grep" },
                json!({"file_path": "a.rs", "n": n % 2}),
                "same".to_string(),
                false,
            ),
            // A repeated call, its answer changing now and then.
            8..=12 => ("ls", json!({"dir": "."}), format!("v{}", n / 50), false),
            // A failing edit and the same edit made again.
            13..=15 => (
                "Edit",
                json!({"file_path": "b.rs", "old": n % 2}),
                "failed".into(),
                n % 3 == 0,
            ),
            16 => (
                "Bash",
                json!({"command": "cargo test"}),
                "1 failed".into(),
                true,
            ),
            // Distinct calls.
            _ => (
                "cat",
                json!({"path": format!("f{n}")}),
                format!("text {n}"),
                false,
            ),
        };
        r.push(call(name, args));
        r.push(result(name, &out, err));
        if n % 7 == 0 {
            r.push(Record::Content {
                text: "I apologize, but I cannot read that file again right now. ".repeat(3),
            });
        }
        if n % 11 == 0 {
            r.push(Record::Turn);
        }
    }
    session(r)
}

fn every_rule_on() -> Vec<(&'static str, ParamValue)> {
    let i = ParamValue::Int;
    vec![
        ("window_size", i(6)),
        ("target_warn", i(2)),
        ("target_stop", i(3)),
        ("ladder_warn", i(2)),
        ("ladder_stop", i(3)),
        ("same_edit_warn", i(2)),
        ("same_edit_stop", i(4)),
        ("outcome_chars", i(30)),
        ("outcome_warn", i(2)),
        ("outcome_stop", i(3)),
        ("opening_chars", i(20)),
        ("opening_warn", i(2)),
        ("opening_stop", i(3)),
        ("long_chant_chars", i(40)),
    ]
}

#[test]
fn every_rule_fed_record_by_record_fires_what_it_fires_on_the_session() {
    let s = long_session();
    let word = ParamValue::word;
    for same in ["name", "args", "result"] {
        for scope in ["prompt", "step"] {
            let mut sets = every_rule_on();
            sets.push(("same", word(same)));
            sets.push(("repeat_scope", word(scope)));
            assert!(both(&s, "looptune-wide", &sets) > 0, "{same} {scope}");
        }
    }
    // Without normalising (the arguments' texts as written) and with
    // polling tools under `same = args`.
    let mut sets = every_rule_on();
    sets.push(("normalize", ParamValue::Bool(false)));
    sets.push(("same", word("args")));
    sets.push(("polling_tools", ParamValue::words(&["ls"])));
    assert!(both(&s, "looptune-wide", &sets) > 0);
    for p in [
        "looptune-default",
        "looptune-as-gemini",
        "looptune-as-opencode",
        "looptune-kinds",
    ] {
        both(&s, p, &[]);
    }
}
