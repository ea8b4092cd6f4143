//! OpenRouter agent SDK's `tests/unit/doom-loop.test.ts` (@0adaf68a) ported
//! case by case to the port's monitor. Left out: the fingerprint vectors,
//! digest shapes and canonicalisation errors (non-finite numbers, bigint,
//! circular or deep values cannot come from a JSON record), `loopKey`
//! resolution (no canonical tool declares one), option parsing and its
//! console warnings (the parameters' ranges replace them), server tools and
//! state serialisation. Then the family on canonical sessions.

use crate::detect::peers::openrouter_sdk::{
    detect_text_repetition, resolve_ladder_action, Action, DoomLoopSettings, Ladder, Monitor,
    TextOptions,
};
use crate::detect::{run_checks, DetectorConfig, Prepared};
use crate::event::{Origin, Record, Session};
use serde_json::{json, Value};
use std::sync::Arc;

fn monitor() -> Monitor {
    Monitor::new(DoomLoopSettings::default())
}

fn verdict(m: &mut Monitor, tool: &str, args: Value, round: u32) -> Option<(Action, u32)> {
    m.record_tool_call(tool, &args, round)
        .verdict
        .map(|v| (v.action, v.streak))
}

#[test]
fn fires_observe_at_2_and_block_at_3_identical_rounds() {
    let mut m = monitor();
    let a = json!({"query": "same thing"});
    assert_eq!(verdict(&mut m, "search", a.clone(), 1), None);
    let v = m.record_tool_call("search", &a, 2).verdict.unwrap();
    assert_eq!(
        (v.action, v.streak, v.detector),
        (Action::Observe, 2, "tool-fingerprint")
    );
    assert_eq!(verdict(&mut m, "search", a, 3), Some((Action::Block, 3)));
}

#[test]
fn escalates_to_stop_at_the_stop_threshold() {
    let mut m = monitor();
    let mut last = None;
    for round in 1..=6 {
        last = verdict(&mut m, "search", json!({"q": "x"}), round);
    }
    assert_eq!(last, Some((Action::Stop, 6)));
}

#[test]
fn identical_calls_in_the_same_round_are_duplicates() {
    let mut m = monitor();
    let a = json!({"q": "parallel"});
    let first = m.record_tool_call("search", &a, 1);
    assert_eq!((first.streak, first.duplicate_in_round), (1, false));
    for _ in 0..5 {
        let dup = m.record_tool_call("search", &a, 1);
        assert_eq!((dup.streak, dup.duplicate_in_round), (1, true));
        assert!(dup.verdict.is_none());
    }
    let next = m.record_tool_call("search", &a, 2);
    assert_eq!((next.streak, next.duplicate_in_round), (2, false));
}

#[test]
fn different_arguments_reset_the_streak() {
    let mut m = monitor();
    verdict(&mut m, "search", json!({"q": "a"}), 1);
    verdict(&mut m, "search", json!({"q": "a"}), 2);
    assert_eq!(verdict(&mut m, "search", json!({"q": "b"}), 3), None);
    assert_eq!(
        verdict(&mut m, "search", json!({"q": "b"}), 4).map(|v| v.1),
        Some(2)
    );
}

#[test]
fn interleaved_calls_to_other_tools_do_not_reset_a_tool_streak() {
    let mut m = monitor();
    let s = json!({"q": "x"});
    verdict(&mut m, "search", s.clone(), 1);
    verdict(&mut m, "read_file", json!({"path": "/a"}), 2);
    assert_eq!(
        verdict(&mut m, "search", s.clone(), 3),
        Some((Action::Observe, 2))
    );
    verdict(&mut m, "read_file", json!({"path": "/b"}), 4);
    assert_eq!(verdict(&mut m, "search", s, 5), Some((Action::Block, 3)));
}

#[test]
fn argument_key_order_does_not_defeat_detection() {
    let mut m = monitor();
    verdict(&mut m, "run", json!({"cmd": "ls", "cwd": "/tmp"}), 1);
    assert_eq!(
        verdict(&mut m, "run", json!({"cwd": "/tmp", "cmd": "ls"}), 2).map(|v| v.1),
        Some(2)
    );
}

#[test]
fn repeated_empty_calls_trip_the_detector() {
    let mut m = monitor();
    assert_eq!(verdict(&mut m, "list_tasks", json!({}), 1), None);
    assert_eq!(
        verdict(&mut m, "list_tasks", json!({}), 2),
        Some((Action::Observe, 2))
    );
    assert_eq!(
        verdict(&mut m, "list_tasks", json!({}), 3),
        Some((Action::Block, 3))
    );
}

#[test]
fn is_deterministic() {
    let script = [
        ("a", json!({"x": 1}), 1),
        ("b", json!({}), 1),
        ("a", json!({"x": 1}), 2),
        ("a", json!({"x": 2}), 3),
        ("a", json!({"x": 2}), 4),
    ];
    let run = || {
        let mut m = monitor();
        script
            .iter()
            .map(|(n, a, r)| verdict(&mut m, n, a.clone(), *r))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}

#[test]
fn within_response_repetition_can_stop_immediately() {
    let mut m = monitor();
    let v = m
        .record_assistant_text(&["I am stuck."; 20].join(" "))
        .unwrap();
    assert_eq!(
        (v.detector, v.action, v.streak),
        ("text-repetition", Action::Stop, 20)
    );
}

#[test]
fn cross_step_identical_text_builds_a_streak_block_downgrades_to_observe() {
    let mut m = monitor();
    let t = "Let me try that again.";
    assert!(m.record_assistant_text(t).is_none());
    let v = m.record_assistant_text(t).unwrap();
    assert_eq!(
        (v.detector, v.action, v.streak),
        ("text-streak", Action::Observe, 2)
    );
    let v = m.record_assistant_text(t).unwrap();
    assert_eq!((v.action, v.streak), (Action::Observe, 3));
    m.record_assistant_text(t);
    m.record_assistant_text(t);
    let v = m.record_assistant_text(t).unwrap();
    assert_eq!((v.action, v.streak), (Action::Stop, 6));
}

#[test]
fn whitespace_only_differences_do_not_defeat_the_cross_step_streak() {
    let mut m = monitor();
    m.record_assistant_text("Retrying   the\nsame plan.");
    assert_eq!(
        m.record_assistant_text("Retrying the same plan.")
            .map(|v| v.streak),
        Some(2)
    );
}

#[test]
fn paraphrased_cross_step_text_does_not_build_a_streak() {
    let mut m = monitor();
    for t in [
        "I am unable to find the file.",
        "I cannot locate the file.",
        "I am not able to find that file.",
        "The file cannot be found.",
        "Locating the file is not possible.",
        "I could not find that file.",
    ] {
        assert!(m.record_assistant_text(t).is_none());
    }
}

#[test]
fn empty_text_neither_counts_nor_resets() {
    let mut m = monitor();
    m.record_assistant_text("same");
    m.record_assistant_text("");
    m.record_assistant_text("   ");
    assert_eq!(m.record_assistant_text("same").map(|v| v.streak), Some(2));
}

#[test]
fn text_false_disables_both_text_detectors() {
    let mut m = Monitor::new(DoomLoopSettings {
        text: TextOptions {
            enabled: false,
            ..TextOptions::default()
        },
        ..DoomLoopSettings::default()
    });
    assert!(m.record_assistant_text(&["loop"; 30].join(" ")).is_none());
}

#[test]
fn detect_text_repetition_cases() {
    let o = TextOptions::default();
    let r = detect_text_repetition("no no no no no no no no no no no no", &o).unwrap();
    assert_eq!(
        (r.period_tokens, r.repeats, r.sample.as_str()),
        (1, 12, "no")
    );
    let phrase = "I am stuck in a loop.";
    let r = detect_text_repetition(&[phrase; 6].join(" "), &o).unwrap();
    assert_eq!(
        (r.period_tokens, r.repeats, r.sample.as_str()),
        (6, 6, phrase)
    );
    let looping = ["retry now"; 6].join(" ");
    assert!(detect_text_repetition(
        &format!("{looping} but then I found the actual answer to your question about databases"),
        &o
    )
    .is_none());
    assert!(detect_text_repetition(
        "The quick brown fox jumps over the lazy dog and then runs far away into the woods.",
        &o
    )
    .is_none());
    assert!(detect_text_repetition(
        "this is very very very good and quite long enough overall",
        &o
    )
    .is_none());
    let paraphrased = [
        "I am unable to find the file.",
        "I cannot locate the file.",
        "I am not able to find that file.",
        "The file cannot be found by me.",
        "Finding the file is not possible.",
        "I could not locate that file.",
    ]
    .join(" ");
    assert!(detect_text_repetition(&paraphrased, &o).is_none());
    let filler: Vec<String> = (0..400_000).map(|i| format!("w{i}")).collect();
    let r = detect_text_repetition(
        &format!("{} {}", filler.join(" "), ["stuck"; 20].join(" ")),
        &o,
    )
    .unwrap();
    assert_eq!((r.period_tokens, r.repeats), (1, 20));
    assert!(detect_text_repetition("ha ha ha", &o).is_none());
    let r = detect_text_repetition(
        "ha ha ha",
        &TextOptions {
            min_repeats: 3,
            min_covered_tokens: 3,
            ..o
        },
    )
    .unwrap();
    assert_eq!((r.repeats, r.period_tokens), (3, 1));
}

#[test]
fn resolve_ladder_action_cases() {
    let l = Ladder::default();
    assert_eq!(resolve_ladder_action(&l, 1, true), None);
    assert_eq!(resolve_ladder_action(&l, 2, true), Some(Action::Observe));
    assert_eq!(resolve_ladder_action(&l, 3, true), Some(Action::Block));
    assert_eq!(resolve_ladder_action(&l, 5, true), Some(Action::Block));
    assert_eq!(resolve_ladder_action(&l, 6, true), Some(Action::Stop));
    assert_eq!(resolve_ladder_action(&l, 3, false), Some(Action::Observe));
    assert_eq!(resolve_ladder_action(&l, 6, false), Some(Action::Stop));
    let only_stop = Ladder {
        observe: None,
        steer: None,
        block: None,
        stop: Some(4),
    };
    assert_eq!(resolve_ladder_action(&only_stop, 3, true), None);
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
        args: Box::new(super::obj(a)),
        id: None,
    }
}

fn result() -> Record {
    Record::ToolResult {
        id: None,
        name: None,
        output: Some("ok".into()),
        error: None,
    }
}

fn detections(recs: Vec<Record>) -> Vec<(&'static str, u32, u32)> {
    let s = Arc::new(Session::from_records(
        "s".into(),
        recs.into_iter().map(|r| (r, Origin::default())).collect(),
    ));
    let cfg = DetectorConfig::resolve(None, Some("openrouter-sdk"), &[]).unwrap();
    run_checks(&cfg.checks().unwrap(), &Prepared::new(s), None)
        .iter()
        .map(|d| (d.kind, d.event, d.strike))
        .collect()
}

#[test]
fn session_observe_block_then_stop_as_strike_four() {
    let mut r = vec![user()];
    for _ in 0..7 {
        r.extend([Record::Turn, call("search", json!({"q": "x"})), result()]);
    }
    // Calls at records 3, 6, 9, ...: observe at the 2nd (6), block at the 3rd
    // (9), stop at the 6th (18) as strikes 3 and 4.
    assert_eq!(
        detections(r),
        vec![
            ("tool-fingerprint", 6, 1),
            ("tool-fingerprint", 9, 2),
            ("tool-fingerprint", 18, 3),
            ("tool-fingerprint", 18, 4)
        ]
    );
}

#[test]
fn session_parallel_duplicates_count_once() {
    let mut r = vec![user()];
    for _ in 0..2 {
        r.extend([
            Record::Turn,
            call("search", json!({"q": "x"})),
            call("search", json!({"q": "x"})),
            result(),
            result(),
        ]);
    }
    // Two rounds: streak 2 (observe) at the first call of the second round.
    assert_eq!(detections(r), vec![("tool-fingerprint", 8, 1)]);
}

#[test]
fn session_chanted_text_stops_at_once() {
    let r = vec![
        user(),
        Record::Turn,
        Record::Content {
            text: ["I am stuck."; 10].join(" "),
        },
    ];
    let d = detections(r);
    assert_eq!(d.len(), 4);
    assert!(d.iter().all(|x| x.0 == "text-repetition" && x.1 == 3));
}

fn chant(part: &str) -> Record {
    Record::Content {
        text: format!("{} ", [part; 5].join(" ")),
    }
}

/// A turn's text is recorded at its last `content` record, known to be the
/// last when the turn ends: fed live, its verdict is held until a record of
/// the next turn, a `user` record (what comes before it is settled there),
/// or the session's end; a call of the same turn after the text waits
/// behind it.
#[test]
fn a_live_turn_text_is_decided_when_the_turn_ends() {
    let cfg = DetectorConfig::resolve(None, Some("openrouter-sdk"), &[]).unwrap();
    let check = &cfg.checks().unwrap()[0];
    // Records 1-4: user, turn, two chanted halves (the verdict at 4).
    let head = || {
        vec![
            user(),
            Record::Turn,
            chant("I am stuck."),
            chant("I am stuck."),
        ]
    };
    for (tail, released_at) in [
        (vec![], None),
        (vec![Record::Turn], Some(5)),
        (vec![result(), Record::Turn], Some(6)),
        (vec![user()], Some(5)),
        (vec![user(), Record::Turn, chant("other")], Some(5)),
    ] {
        let mut r = head();
        r.extend(tail.clone());
        let s = super::records(r);
        let want = run_checks(&cfg.checks().unwrap(), &Prepared::new(s.clone()), None);
        assert_eq!(want.len(), 4, "{tail:?}");
        assert!(want.iter().all(|d| d.event == 4));
        let (at_feed, fin) = super::fed_at(check.as_ref(), &s);
        match released_at {
            None => {
                assert!(at_feed.is_empty(), "{tail:?}");
                assert_eq!(crate::detect::merge(vec![fin]), want, "the end releases it");
            }
            Some(n) => {
                assert!(
                    at_feed.iter().all(|(at, _)| *at == n),
                    "{tail:?} {at_feed:?}"
                );
                let pushed = at_feed.into_iter().map(|x| x.1).collect();
                assert_eq!(crate::detect::merge(vec![pushed]), want, "{tail:?}");
                assert!(fin.is_empty(), "{tail:?}: pushed once");
            }
        }
    }
    // More text in the same turn moves the verdict: nothing is pushed at
    // the first part; a call after the text waits for the turn to end.
    let mut r = head();
    r.extend([call("search", json!({"q": "x"})), chant("I am stuck.")]);
    let s = super::records(r);
    let (at_feed, fin) = super::fed_at(check.as_ref(), &s);
    assert!(at_feed.is_empty(), "{at_feed:?}");
    assert!(
        !fin.is_empty() && fin.iter().all(|d| d.event == 6),
        "{fin:?}"
    );
}

/// Turns numbered implicitly: after a result, the next model record starts
/// a turn, so the text before it is decided at the result.
#[test]
fn an_implicit_turn_text_is_decided_at_the_result_after_it() {
    let cfg = DetectorConfig::resolve(None, Some("openrouter-sdk"), &[]).unwrap();
    let check = &cfg.checks().unwrap()[0];
    let s = super::records(vec![
        user(),
        chant("I am stuck."),
        chant("I am stuck."),
        call("search", json!({"q": "x"})),
        result(),
        chant("Done."),
    ]);
    let (at_feed, fin) = super::fed_at(check.as_ref(), &s);
    assert!(!at_feed.is_empty());
    assert!(
        at_feed.iter().all(|(at, d)| *at == 5 && d.event == 3),
        "{at_feed:?}"
    );
    let mut all: Vec<_> = at_feed.into_iter().map(|x| x.1).collect();
    all.extend(fin);
    let want = run_checks(&cfg.checks().unwrap(), &Prepared::new(s.clone()), None);
    assert_eq!(crate::detect::merge(vec![all]), want);
}
