//! Blade: the current action-stationarity.test.ts cases (@b852126c42), and
//! worked examples of the legacy service from the research notes.

use super::obj;
use crate::detect::peers::blade::{action_signature, task_progress_signature, Phase, Stationarity};
use crate::detect::{run_checks, DetectorConfig, Prepared};
use crate::event::{Origin, Record, Session};
use serde_json::{json, Value};
use std::sync::Arc;

/// Observe one single-call turn.
fn observe(d: &mut Stationarity, name: &str, args: Value, output: &str) -> Phase {
    let args = obj(args);
    let action = action_signature([(name, &args)]);
    let progress = if name == "TaskOutput" {
        task_progress_signature(output)
    } else {
        None
    };
    d.observe(action, progress, 8, 16).0
}

#[test]
fn nudges_once_and_then_halts_an_identical_action_run() {
    let mut d = Stationarity::default();
    for run in 1..=16 {
        let p = observe(&mut d, "Read", json!({"file_path": "src/index.ts"}), "same");
        let want = match run {
            8 => Phase::Detected,
            16 => Phase::Halted,
            _ => Phase::None,
        };
        assert_eq!(p, want, "run {run}");
        assert_eq!(d.run_length, run);
    }
}

fn task(bytes: u64) -> String {
    json!({"task_id": "bash-test", "type": "bash", "status": "running", "raw_output_bytes": bytes})
        .to_string()
}

#[test]
fn ignores_task_output_timeout_changes_without_progress() {
    let mut d = Stationarity::default();
    for run in 1..=8u64 {
        let args = json!({"task_id": "bash-test", "block": run % 2 == 0, "timeout": run * 1000});
        let p = observe(&mut d, "TaskOutput", args, &task(0));
        assert_eq!(
            p,
            if run == 8 {
                Phase::Detected
            } else {
                Phase::None
            }
        );
    }
}

#[test]
fn resets_a_warned_task_output_run_when_raw_output_grows() {
    let mut d = Stationarity::default();
    for _ in 0..8 {
        observe(
            &mut d,
            "TaskOutput",
            json!({"task_id": "bash-test"}),
            &task(0),
        );
    }
    let p = observe(
        &mut d,
        "TaskOutput",
        json!({"task_id": "bash-test"}),
        &task(128),
    );
    assert_eq!(p, Phase::Recovered);
    assert_eq!(d.run_length, 1);
}

#[test]
fn emits_recovery_when_a_warned_run_stops_calling_tools() {
    let mut d = Stationarity::default();
    for _ in 0..8 {
        observe(
            &mut d,
            "TaskOutput",
            json!({"task_id": "bash-test"}),
            &task(0),
        );
    }
    assert_eq!(d.reset(), Phase::Recovered);
    assert_eq!(d.reset(), Phase::None);
}

#[test]
fn treats_semantically_equal_json_arguments_as_one_action() {
    let mut d = Stationarity::default();
    observe(
        &mut d,
        "Grep",
        json!({"pattern": "todo", "path": "src"}),
        "",
    );
    for run in 2..=8 {
        let args: Value = serde_json::from_str(r#"{"path":"src","pattern":"todo"}"#).unwrap();
        let p = observe(&mut d, "Grep", args, "");
        assert_eq!(
            p,
            if run == 8 {
                Phase::Detected
            } else {
                Phase::None
            }
        );
    }
}

fn o() -> Origin {
    Origin::default()
}

/// `turns` model turns, each with one call and its result.
fn session(calls: &[(&str, Value, &str)], text: &str) -> Arc<Session> {
    let mut recs = vec![(
        Record::User {
            text: "go".into(),
            prompt_id: None,
        },
        o(),
    )];
    for (name, args, out) in calls {
        recs.push((Record::Turn, o()));
        if !text.is_empty() {
            recs.push((Record::Content { text: text.into() }, o()));
        }
        recs.push((
            Record::ToolCall {
                name: name.to_string(),
                args: obj(args.clone()).into(),
                id: None,
            },
            o(),
        ));
        recs.push((
            Record::ToolResult {
                id: None,
                name: None,
                output: Some(out.to_string()),
                error: Some(false),
            },
            o(),
        ));
    }
    Arc::new(Session::from_records("s".into(), recs))
}

fn legacy(s: &Arc<Session>) -> Vec<(&'static str, u32, u32)> {
    let cfg = DetectorConfig::resolve(None, Some("blade-legacy"), &[]).unwrap();
    run_checks(&cfg.checks().unwrap(), &Prepared::new(s.clone()), None)
        .iter()
        .map(|d| (d.kind, d.turn, d.strike))
        .collect()
}

#[test]
fn legacy_worked_example_warns_three_times_then_stops() {
    // peers.md 2.1: identical call on turns 1..6 -> warnings at 3, 4, 5; the
    // 4th detection (turn 6) stops under policy warn:3 (maxWarnings 3).
    let s = session(&vec![("read", json!({"p": 1}), "x"); 6], "");
    assert_eq!(
        legacy(&s),
        [
            ("tool_call", 3, 1),
            ("tool_call", 4, 2),
            ("tool_call", 5, 3),
            ("tool_call", 6, 4)
        ]
    );
}

#[test]
fn legacy_content_layer_hits_at_the_eighth_turn() {
    // peer-mappings 5.2: same text and output every turn, different calls:
    // snapshots 1-4 still hold the system or user message, so 5 snapshots
    // have at most 2 distinct hashes first at run turn 8.
    let calls: Vec<(&str, Value, &str)> = (0..9)
        .map(|i| ("read", json!({ "p": i }), "same output"))
        .collect();
    let s = session(&calls, "Checking.");
    assert_eq!(legacy(&s)[0], ("content", 8, 1));
}

#[test]
fn legacy_plan_mode_skips_the_content_layer() {
    let calls: Vec<(&str, Value, &str)> = (0..9)
        .map(|i| ("read", json!({ "p": i }), "same output"))
        .collect();
    let mut s = (*session(&calls, "Checking.")).clone();
    s.meta.mode = Some("plan".into());
    assert!(legacy(&Arc::new(s)).is_empty());
}

#[test]
fn legacy_policy_must_agree_with_max_warnings() {
    let bad = DetectorConfig::resolve(
        None,
        Some("blade-legacy"),
        &[(
            "policy".into(),
            crate::detect::ParamValue::Str("warn:1".into()),
        )],
    )
    .unwrap();
    assert!(bad.checks().is_err());
}

/// The legacy service's argument digests are made once per session and
/// shared by every configuration run over it, with the verdicts of a
/// session prepared afresh for each.
#[test]
fn legacy_argument_digests_are_shared_by_configurations() {
    let big = "x".repeat(4096);
    let s = session(&vec![("read", json!({"p": 1, "body": big}), "x"); 6], "");
    let shared = Prepared::new(s.clone());
    for profile in ["blade-legacy", "blade-legacy-service-default"] {
        let cfg = DetectorConfig::resolve(None, Some(profile), &[]).unwrap();
        let checks = cfg.checks().unwrap();
        let fresh = run_checks(&checks, &Prepared::new(s.clone()), None);
        let reused = run_checks(&checks, &shared, None);
        assert!(!fresh.is_empty(), "{profile}");
        assert_eq!(
            format!("{fresh:?}"),
            format!("{reused:?}"),
            "{profile}: a shared session changed the verdicts"
        );
        assert!(shared.holds("blade.args_md5"), "{profile}");
    }
}

/// The `n` identical turns of a session, then `tail`.
fn turns_then(n: usize, tail: Vec<Record>) -> Arc<Session> {
    let s = session(&vec![("read", json!({"p": 1}), "x"); n], "");
    let mut recs: Vec<Record> = s.events.iter().map(|e| e.record.clone()).collect();
    recs.extend(tail);
    super::records(recs)
}

/// A model turn is decided at its segment's last record, known to be the
/// last only when the next record starts a segment (or the session ends):
/// fed live, Blade's detection is held until then, at that last record.
#[test]
fn a_live_turn_is_decided_when_the_next_segment_or_the_end_comes() {
    for profile in ["blade-legacy", "blade-stationarity"] {
        // The legacy service warns at the 3rd identical turn, stationarity
        // nudges at the 8th.
        let n = if profile == "blade-legacy" { 3 } else { 8 };
        let cfg = DetectorConfig::resolve(None, Some(profile), &[]).unwrap();
        let check = &cfg.checks().unwrap()[0];
        for tail in [
            vec![],
            vec![Record::Turn],
            vec![Record::User {
                text: "next".into(),
                prompt_id: None,
            }],
            // Text after the result, in the same segment: the turn's last
            // record moves there.
            vec![Record::Content { text: "x".into() }],
        ] {
            let extends = matches!(tail.first(), Some(Record::Content { .. }));
            let s = turns_then(n, tail.clone());
            let want = run_checks(&cfg.checks().unwrap(), &Prepared::new(s.clone()), None);
            assert_eq!(want.len(), 1, "{profile} {tail:?}");
            let (at_feed, fin) = super::fed_at(check.as_ref(), &s);
            match at_feed.as_slice() {
                [] => {
                    // The session ends mid-segment: its end decides.
                    assert_eq!(crate::detect::merge(vec![fin]), want);
                    assert_eq!(want[0].event as usize, s.events.len(), "{profile}");
                }
                [(fed_at, d)] => {
                    assert!(!extends, "{profile}");
                    assert_eq!(
                        *fed_at,
                        s.events.len(),
                        "{profile}: released by the next segment"
                    );
                    assert_eq!(d.event as usize, s.events.len() - 1, "{profile}");
                    assert_eq!(crate::detect::merge(vec![vec![d.clone()]]), want);
                    assert!(fin.is_empty());
                }
                more => panic!("{profile}: {more:?}"),
            }
        }
    }
    // Every turn decided as its segment closes gives what the replay gives.
    let s = turns_then(
        20,
        vec![
            Record::User {
                text: "again".into(),
                prompt_id: None,
            },
            Record::Content { text: "ok".into() },
        ],
    );
    let cfgs: Vec<(&str, Vec<(String, crate::detect::ParamValue)>)> = [
        "blade-legacy",
        "blade-legacy-service-default",
        "blade-stationarity",
    ]
    .into_iter()
    .map(|p| (p, vec![]))
    .collect();
    assert!(super::stream_equals_run(&s, &cfgs) > 5);
}

proptest::proptest! {
    /// The distinct snapshots of a window counted by sorting are those a
    /// hash set holds, whatever repeats and whatever was left in the room.
    #[test]
    fn distinct_snapshots_are_a_sets_size(
        recent in proptest::collection::vec(0u8..6, 0..20),
        left in proptest::collection::vec(0u8..6, 0..5),
    ) {
        use crate::detect::peers::blade::distinct;
        let digest = |b: &u8| [*b; 16];
        let recent: Vec<[u8; 16]> = recent.iter().map(digest).collect();
        let mut room: Vec<[u8; 16]> = left.iter().map(digest).collect();
        let set: std::collections::HashSet<&[u8; 16]> = recent.iter().collect();
        proptest::prop_assert_eq!(distinct(&recent, &mut room), set.len());
    }
}
