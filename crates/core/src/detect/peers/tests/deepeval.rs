//! DeepEval's `tests/test_metrics/test_agent_loop_detection.py` (@09444d02)
//! ported case by case to the port's scoring functions. Left out: the
//! missing-trace case (a canonical session always gives a trace) and the
//! nested call-graph cases (canonical records never nest spans, so the
//! cycle sub-score is always 1 here). Then the family on canonical sessions.

use super::obj;
use crate::detect::peers::deepeval::{
    call_hash, clean_words, combine, py_str, sequence_ratio, similarity, stagnation_score,
    tool_repetition_score, MetricSettings,
};
use crate::detect::{run_checks, DetectorConfig, ParamValue, Prepared};
use crate::event::{Origin, Record, Session};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;

fn max_repeats(calls: &[(&str, serde_json::Value)]) -> u32 {
    let mut counts = HashMap::new();
    for (n, a) in calls {
        *counts.entry(call_hash(n, &obj(a.clone()))).or_insert(0u32) += 1;
    }
    counts.values().copied().max().unwrap_or(0)
}

#[test]
fn clean_trace_passes() {
    let calls = [
        ("search_web", json!({"query": "Paris weather"})),
        ("get_forecast", json!({"city": "Paris"})),
        ("summarize", json!({"text": "It is sunny"})),
    ];
    let rep = tool_repetition_score(max_repeats(&calls), 3);
    let s = MetricSettings::default();
    assert_eq!(combine(&s, rep, stagnation_score(0, 0.0, 0.85), 1.0), 1.0);
}

#[test]
fn repeated_tool_calls_detected() {
    let calls: Vec<_> = (0..4)
        .map(|_| ("search_web", json!({"query": "Paris weather"})))
        .collect();
    let rep = tool_repetition_score(max_repeats(&calls), 3);
    assert!(rep <= 0.5);
    let s = MetricSettings {
        threshold: 0.7,
        check_reasoning_stagnation: false,
        check_call_graph_cycles: false,
        ..MetricSettings::default()
    };
    assert!(combine(&s, rep, 1.0, 1.0) < s.threshold);
}

#[test]
fn reasoning_stagnation_detected() {
    let out = "I need to search for Paris weather using the search tool. \
        The user wants current weather conditions in Paris France. \
        I will call the search tool with query Paris weather forecast today. \
        After retrieving results I will summarize them clearly for the user. \
        Paris weather search results will help answer the question completely.";
    let w = clean_words(out);
    assert!(w.len() >= 20);
    let sim = similarity(&w, &w).unwrap();
    assert!(stagnation_score(3, sim, 0.75) < 1.0);
}

#[test]
fn disable_tool_repetition_check() {
    let s = MetricSettings {
        check_tool_repetition: false,
        check_reasoning_stagnation: false,
        check_call_graph_cycles: false,
        ..MetricSettings::default()
    };
    // The repetition sub-score is not computed when its check is off.
    assert_eq!(combine(&s, 1.0, 1.0, 1.0), 1.0);
}

#[test]
fn score_combines_with_correct_weights() {
    let s = MetricSettings {
        check_call_graph_cycles: false,
        ..MetricSettings::default()
    };
    assert!((combine(&s, 1.0, 0.0, 1.0) - 0.40 / 0.75).abs() < 0.001);
}

#[test]
fn short_outputs_are_skipped_and_python_str_is_compared() {
    assert!(similarity(
        &clean_words("too short to matter here"),
        &clean_words("too short")
    )
    .is_none());
    // difflib's ratio: 2 * matches / total ("abcd" vs "bcde": "bcd").
    assert!((sequence_ratio("abcd", "bcde") - 0.75).abs() < 1e-12);
    assert_eq!(sequence_ratio("", ""), 1.0);
    // `str(v)`: "1" and 1 are the same argument, 1.0 is not.
    assert_eq!(
        call_hash("t", &obj(json!({"n": "1"}))),
        call_hash("t", &obj(json!({"n": 1})))
    );
    assert_ne!(
        call_hash("t", &obj(json!({"n": 1.0}))),
        call_hash("t", &obj(json!({"n": 1})))
    );
    assert_eq!(
        py_str(&json!({"a": [1, "x", null, true, 1e16]})),
        "{'a': [1, 'x', None, True, 1e+16]}"
    );
    assert_eq!(py_str(&json!(0.0001)), "0.0001");
    assert_eq!(py_str(&json!(0.00001)), "1e-05");
}

// The family on canonical sessions.

fn user() -> Record {
    Record::User {
        text: "go".into(),
        prompt_id: None,
    }
}

fn detections(recs: Vec<Record>, sets: &[(String, ParamValue)]) -> Vec<(&'static str, u32)> {
    let s = Arc::new(Session::from_records(
        "s".into(),
        recs.into_iter().map(|r| (r, Origin::default())).collect(),
    ));
    let cfg = DetectorConfig::resolve(None, Some("deepeval"), sets).unwrap();
    run_checks(&cfg.checks().unwrap(), &Prepared::new(s), None)
        .iter()
        .map(|d| (d.kind, d.event))
        .collect()
}

const LONG: &str = "I need to search for Paris weather using the search tool. The user wants current weather conditions in Paris France. I will call the search tool with query Paris weather forecast today. After retrieving results I will summarize them clearly for the user.";

#[test]
fn session_repetition_alone_never_fails_the_default_metric() {
    let mut r = vec![user()];
    for _ in 0..10 {
        r.extend([
            Record::Turn,
            Record::ToolCall {
                name: "read".into(),
                args: Box::new(obj(json!({"p": 1}))),
                id: None,
            },
        ]);
    }
    // 0.40 * 0 + 0.35 + 0.25 = 0.6 >= 0.5.
    assert!(detections(r, &[]).is_empty());
}

#[test]
fn session_repetition_with_stagnation_fails_at_the_record_that_tips_it() {
    let mut r = vec![user()];
    for _ in 0..3 {
        r.extend([
            Record::Turn,
            Record::Content { text: LONG.into() },
            Record::ToolCall {
                name: "read".into(),
                args: Box::new(obj(json!({"p": 1}))),
                id: None,
            },
        ]);
    }
    // After the 2nd turn's text (record 6) stagnation is 0 (the same text)
    // but one call so far: 0.40 + 0 + 0.25 = 0.65 passes. The 3rd call
    // (record 10) makes repetition 0.5: 0.20 + 0 + 0.25 = 0.45 < 0.5.
    assert_eq!(detections(r.clone(), &[]), vec![("agent_loop", 10)]);
    // Without the cycle check: 0.40 / 0.75 = 0.53 passes at record 6, and
    // 0.20 / 0.75 fails at record 10 again.
    let sets = [(
        "check_call_graph_cycles".to_string(),
        ParamValue::Bool(false),
    )];
    assert_eq!(detections(r, &sets), vec![("agent_loop", 10)]);
}

/// A turn's LLM span is added at its last `content` record, which may follow
/// its calls: fed live, the turn is scored when the next turn begins (or at
/// the end), and a detection at an earlier record of it is released then.
#[test]
fn fed_live_a_turn_is_scored_when_it_ends() {
    use crate::event::{Origin, Record, Session};
    use std::sync::Arc;
    let o = Origin::default;
    let words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor";
    let text = |t: &str| (Record::Content { text: t.into() }, o());
    let call = || {
        (
            Record::ToolCall {
                name: "read".into(),
                args: obj(serde_json::json!({"f": "a"})).into(),
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
    let mut recs = vec![user()];
    for k in 0..8 {
        recs.push((Record::Turn, o()));
        recs.extend([text("Reading. "), call(), text(words)]);
        if k == 4 {
            recs.extend([user(), call()]);
        }
    }
    recs.push((Record::Turn, o()));
    recs.push(call()); // a turn without text: its span at the call
    let s = Arc::new(Session::from_records("s".into(), recs));
    // The default fails in the 3rd turn at its last text (two similar
    // outputs), after that turn's call: held until the 4th turn begins.
    let cfg = DetectorConfig::resolve(None, Some("deepeval"), &[]).unwrap();
    let check = &cfg.checks().unwrap()[0];
    let want = run_checks(&cfg.checks().unwrap(), &Prepared::new(s.clone()), None);
    let mut st = check.stream().unwrap();
    let mut released = Vec::new();
    for i in 0..s.events.len() {
        let mut out = Vec::new();
        st.feed(&s, i, &mut out);
        released.extend(out.into_iter().map(|d| (i as u32 + 1, d.event)));
    }
    assert!(!released.is_empty() && !want.is_empty());
    assert_eq!(released[0].1, want[0].event);
    assert!(released[0].0 > want[0].event, "{released:?}");
    assert!(matches!(
        s.events[released[0].0 as usize - 1].record,
        Record::Turn
    ));
    let mut cfgs = Vec::new();
    for r in 1..=4 {
        for trace in ["prompt", "session"] {
            cfgs.push((
                "deepeval",
                vec![
                    ("repetition_threshold".to_string(), ParamValue::Int(r)),
                    ("trace".to_string(), ParamValue::Str(trace.into())),
                ],
            ));
        }
    }
    assert!(super::stream_equals_run(&s, &cfgs) > 0);
}
