//! Crush's `loop_detection_test.go` (@af86738e) ported to the port's
//! functions, and the stop condition driven by canonical sessions.

use super::obj;
use crate::detect::peers::crush::{has_repeated_tool_calls, step_signature, StepCall};
use crate::detect::{run_checks, DetectorConfig, Prepared};
use crate::event::{Origin, Record, Session};
use serde_json::{json, Value};
use std::sync::Arc;

fn call(name: &str, input: &str, output: &str) -> StepCall {
    StepCall {
        name: name.into(),
        input: input.into(),
        output: output.into(),
    }
}

/// `makeToolStep`: one call with its text result.
fn tool_step(name: &str, input: &str, output: &str) -> Option<String> {
    step_signature(&[call(name, input, output)])
}

/// `makeEmptyStep`: a text-only step.
fn empty_step() -> Option<String> {
    step_signature(&[])
}

#[test]
fn no_steps() {
    assert_eq!(has_repeated_tool_calls(&[], 10, 5), None);
}

#[test]
fn fewer_steps_than_window() {
    let steps: Vec<_> = (0..5)
        .map(|_| tool_step("read", r#"{"file":"a.go"}"#, "content"))
        .collect();
    assert_eq!(has_repeated_tool_calls(&steps, 10, 5), None);
}

#[test]
fn all_different_signatures() {
    let steps: Vec<_> = (0..10)
        .map(|i| tool_step("tool", &format!(r#"{{"i":{i}}}"#), &format!("result-{i}")))
        .collect();
    assert_eq!(has_repeated_tool_calls(&steps, 10, 5), None);
}

#[test]
fn exact_repeat_at_threshold_not_detected() {
    let mut steps: Vec<_> = (0..5)
        .map(|_| tool_step("read", r#"{"file":"a.go"}"#, "content"))
        .collect();
    steps.extend(
        (5..10).map(|i| tool_step("tool", &format!(r#"{{"i":{i}}}"#), &format!("result-{i}"))),
    );
    assert_eq!(has_repeated_tool_calls(&steps, 10, 5), None);
}

#[test]
fn loop_detected() {
    let mut steps: Vec<_> = (0..6)
        .map(|_| tool_step("read", r#"{"file":"a.go"}"#, "content"))
        .collect();
    steps.extend(
        (6..10).map(|i| tool_step("tool", &format!(r#"{{"i":{i}}}"#), &format!("result-{i}"))),
    );
    assert!(has_repeated_tool_calls(&steps, 10, 5).is_some());
}

#[test]
fn steps_without_tool_calls_are_skipped() {
    let mut steps: Vec<_> = (0..4)
        .map(|_| tool_step("read", r#"{"file":"a.go"}"#, "content"))
        .collect();
    steps.extend((4..8).map(|_| empty_step()));
    steps.extend((8..10).map(|_| tool_step("write", r#"{"file":"b.go"}"#, "ok")));
    assert_eq!(has_repeated_tool_calls(&steps, 10, 5), None);
}

#[test]
fn multiple_different_patterns_alternating() {
    let steps: Vec<_> = (0..10)
        .map(|i| {
            if i % 2 == 0 {
                tool_step("read", r#"{"file":"a.go"}"#, "content-a")
            } else {
                tool_step("write", r#"{"file":"b.go"}"#, "content-b")
            }
        })
        .collect();
    assert_eq!(has_repeated_tool_calls(&steps, 10, 5), None);
}

#[test]
fn signature_empty_and_text_only_content() {
    assert_eq!(step_signature(&[]), None);
}

#[test]
fn signature_same_interactions_same_signature_whatever_the_ids() {
    // The call ids differ in the original test; they never enter the hash.
    let a = tool_step("read", r#"{"file":"a.go"}"#, "content");
    let b = tool_step("read", r#"{"file":"a.go"}"#, "content");
    assert!(a.is_some());
    assert_eq!(a, b);
}

#[test]
fn signature_different_inputs_differ() {
    assert_ne!(
        tool_step("read", r#"{"file":"a.go"}"#, "content"),
        tool_step("read", r#"{"file":"b.go"}"#, "content")
    );
}

#[test]
fn signature_is_sha256_of_nul_separated_fields() {
    // sha256("read\0{}\0x\0"), computed independently with coreutils.
    assert_eq!(
        tool_step("read", "{}", "x").unwrap(),
        "68fbc1ed9a17ef2d063314129cfdcdc527d457cfc5abc2924a3c6c58ee0dda1c"
    );
    // Output is part of the signature: same call, different result.
    assert_ne!(tool_step("read", "{}", "x"), tool_step("read", "{}", "y"));
}

// ---- driven by sessions ------------------------------------------------------

fn o() -> Origin {
    Origin::at(0, 0)
}

fn tc(name: &str, args: Value) -> Record {
    Record::ToolCall {
        name: name.into(),
        args: obj(args).into(),
        id: None,
    }
}

fn tr(out: &str) -> Record {
    Record::ToolResult {
        id: None,
        name: None,
        output: Some(out.into()),
        error: None,
    }
}

fn user() -> Record {
    Record::User {
        text: "go".into(),
        prompt_id: None,
    }
}

fn first(profile: &str, recs: Vec<Record>) -> Vec<(&'static str, u32)> {
    let s = Arc::new(Session::from_records(
        "s".into(),
        recs.into_iter().map(|r| (r, o())).collect(),
    ));
    let cfg = DetectorConfig::resolve(None, Some(profile), &[]).unwrap();
    run_checks(&cfg.checks().unwrap(), &Prepared::new(s), None)
        .iter()
        .map(|d| (d.kind, d.event))
        .collect()
}

/// One step per turn: `turn`, a call, its result (3 records).
fn step(out: &mut Vec<Record>, name: &str, args: Value, output: &str) {
    out.extend([Record::Turn, tc(name, args), tr(output)]);
}

#[test]
fn session_waits_for_ten_steps_then_stops_at_the_step_end() {
    let mut r = vec![user()];
    for _ in 0..12 {
        step(&mut r, "read", json!({"f": "a"}), "same");
    }
    // 6 equal signatures by step 6, but the window needs 10 steps: step 10
    // ends at record 1 + 10 * 3 = 31.
    assert_eq!(first("crush", r)[0], ("repeated_tool_calls", 31));
}

#[test]
fn session_output_and_key_order_are_compared() {
    // Changing outputs: never equal.
    let mut r = vec![user()];
    for i in 0..12 {
        step(&mut r, "read", json!({"f": "a"}), &format!("out {i}"));
    }
    assert!(first("crush", r).is_empty());
    // Key order is part of the input text: 5 steps with one order then 5
    // with the other are two signatures of 5 each (as one they would stop).
    let mut r = vec![user()];
    for i in 0..10 {
        let args = if i < 5 {
            json!({"a": 1, "b": 2})
        } else {
            json!({"b": 2, "a": 1})
        };
        step(&mut r, "read", args, "same");
    }
    assert!(first("crush", r.clone()).is_empty());
    // One more of the second order makes 6 of it in the last 10.
    step(&mut r, "read", json!({"b": 2, "a": 1}), "same");
    assert_eq!(first("crush", r), vec![("repeated_tool_calls", 34)]);
}

#[test]
fn session_user_message_starts_a_new_run() {
    let mut r = vec![user()];
    for _ in 0..9 {
        step(&mut r, "read", json!({"f": "a"}), "same");
    }
    r.push(user());
    for _ in 0..9 {
        step(&mut r, "read", json!({"f": "a"}), "same");
    }
    assert!(first("crush", r).is_empty());
}

#[test]
fn session_text_only_step_counts_then_ends_the_run() {
    // 9 equal steps then a text-only step: the 10th step completes the
    // window, and 9 > 5 fires on that text-only step (it ends at record 31).
    let mut r = vec![user()];
    for _ in 0..9 {
        step(&mut r, "read", json!({"f": "a"}), "same");
    }
    r.extend([
        Record::Turn,
        Record::Content {
            text: "done".into(),
        },
    ]);
    assert_eq!(first("crush", r.clone()), vec![("repeated_tool_calls", 30)]);
    // 8 equal steps, a text-only step, then more: the run ended, the next
    // steps start over and 4 more are not enough.
    let mut r = vec![user()];
    for _ in 0..8 {
        step(&mut r, "read", json!({"f": "a"}), "same");
    }
    r.extend([
        Record::Turn,
        Record::Content {
            text: "done".into(),
        },
    ]);
    for _ in 0..9 {
        step(&mut r, "read", json!({"f": "a"}), "same");
    }
    assert!(first("crush", r).is_empty());
}

/// `n` identical steps (a turn, a call, its result), then `tail`.
fn steps_then(n: usize, tail: Vec<Record>) -> Arc<Session> {
    let mut recs = vec![Record::User {
        text: "go".into(),
        prompt_id: None,
    }];
    for _ in 0..n {
        recs.push(Record::Turn);
        recs.push(Record::ToolCall {
            name: "read".into(),
            args: obj(json!({"file": "a.go"})).into(),
            id: None,
        });
        recs.push(Record::ToolResult {
            id: None,
            name: None,
            output: Some("same".into()),
            error: Some(false),
        });
    }
    recs.extend(tail);
    let recs = recs.into_iter().map(|r| (r, Origin::default())).collect();
    Arc::new(Session::from_records("s".into(), recs))
}

/// A step is judged at its last record, which is known to be its last only
/// when the next segment begins (or the session ends): fed live, the
/// detection is held until then, and its event is the step's last record.
#[test]
fn a_live_step_is_judged_when_the_next_record_or_the_end_comes() {
    let cfg = DetectorConfig::resolve(None, Some("crush"), &[]).unwrap();
    let check = &cfg.checks().unwrap()[0];
    for tail in [
        vec![],
        vec![Record::Turn],
        vec![Record::Content { text: "x".into() }],
    ] {
        let extends = matches!(tail.first(), Some(Record::Content { .. }));
        let s = steps_then(10, tail);
        let want = run_checks(&cfg.checks().unwrap(), &Prepared::new(s.clone()), None);
        assert_eq!(want.len(), 1);
        let mut st = check.stream().unwrap();
        let mut at_feed = Vec::new();
        for i in 0..s.events.len() {
            let mut out = Vec::new();
            st.feed(&s, i, &mut out);
            at_feed.extend(out.into_iter().map(|d| (i + 1, d)));
        }
        let mut fin = Vec::new();
        st.finish(&s, &mut fin);
        // Mid-step (the 10th step's result, or text after it) nothing fires.
        match at_feed.as_slice() {
            [] => {
                assert_eq!(crate::detect::merge(vec![fin]), want);
                assert_eq!(want[0].event as usize, s.events.len());
            }
            [(fed_at, d)] => {
                assert!(!extends);
                assert_eq!(*fed_at, s.events.len(), "released by the next turn");
                assert_eq!(d.event as usize, s.events.len() - 1);
                assert_eq!(crate::detect::merge(vec![vec![d.clone()]]), want);
                assert!(fin.is_empty());
            }
            more => panic!("{more:?}"),
        }
    }
    // Steps judged as they close give what the replay gives, run by run.
    let mut cfgs = Vec::new();
    for w in 1..=6 {
        for m in 0..=3 {
            cfgs.push((
                "crush",
                vec![
                    (
                        "window_steps".to_string(),
                        crate::detect::ParamValue::Int(w),
                    ),
                    ("max_repeats".to_string(), crate::detect::ParamValue::Int(m)),
                ],
            ));
        }
    }
    let s = steps_then(9, vec![Record::Content { text: "x".into() }, Record::Turn]);
    assert!(super::stream_equals_run(&s, &cfgs) > 0);
}

proptest::proptest! {
    /// A window counted in place (up to 32 steps) or with a map gives the
    /// signature the original's map gives: the first to go over the limit.
    #[test]
    fn repeats_counted_in_place_are_the_maps(
        steps in proptest::collection::vec(proptest::option::of(0u8..4), 0..50),
        window in 1usize..45,
        max_repeats in 0usize..5,
    ) {
        let steps: Vec<Option<String>> =
            steps.iter().map(|s| s.map(|s| format!("sig{s}"))).collect();
        let mapped = || {
            if steps.len() < window {
                return None;
            }
            let mut counts = std::collections::HashMap::new();
            for sig in steps[steps.len() - window..].iter().flatten() {
                let n = counts.entry(sig.as_str()).or_insert(0);
                *n += 1;
                if *n > max_repeats {
                    return Some(sig.as_str());
                }
            }
            None
        };
        proptest::prop_assert_eq!(has_repeated_tool_calls(&steps, window, max_repeats), mapped());
    }
}
