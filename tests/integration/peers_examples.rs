//! Worked examples from the research notes for the peer families without an
//! upstream test file (Kilo Code, Goose on sessions, the turn cap), and the
//! families' declarations.

use looptune::detect::{family, run_checks, DetectorConfig, Prepared};
use looptune::event::{Origin, Record, Session};
use serde_json::{json, Map, Value};
use std::sync::Arc;

fn o() -> Origin {
    Origin::default()
}

fn call(name: &str, args: Value) -> Record {
    let args: Map<String, Value> = args.as_object().unwrap().clone();
    Record::ToolCall {
        name: name.into(),
        args: args.into(),
        id: None,
    }
}

fn result(out: &str, error: bool) -> Record {
    Record::ToolResult {
        id: None,
        name: None,
        output: Some(out.into()),
        error: Some(error),
    }
}

fn session(recs: Vec<Record>) -> Arc<Session> {
    Arc::new(Session::from_records(
        "s".into(),
        recs.into_iter().map(|r| (r, o())).collect(),
    ))
}

/// One turn per call, each answered.
fn turns(calls: &[(&str, Value, &str, bool)]) -> Arc<Session> {
    let mut recs = vec![Record::User {
        text: "go".into(),
        prompt_id: None,
    }];
    for (n, a, out, e) in calls {
        recs.extend([Record::Turn, call(n, a.clone()), result(out, *e)]);
    }
    session(recs)
}

fn events(profile: &str, s: &Arc<Session>, sets: &[(&str, &str)]) -> Vec<(&'static str, u32)> {
    let fam = DetectorConfig::resolve(None, Some(profile), &[])
        .unwrap()
        .family;
    let sets: Vec<String> = sets.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let over = DetectorConfig::parse_sets(fam, &sets).unwrap();
    let cfg = DetectorConfig::resolve(None, Some(profile), &over).unwrap();
    run_checks(&cfg.checks().unwrap(), &Prepared::new(s.clone()), None)
        .iter()
        .map(|d| (d.kind, d.event))
        .collect()
}

#[test]
fn kilo_unrelated_tools_do_not_reset() {
    // peers.md 4.3: read a, grep x, read a, grep y, read a -> triggers on the
    // third read, across steps (upstream OpenCode never compares across steps).
    let s = turns(&[
        ("read", json!({"p": "a"}), "", false),
        ("grep", json!({"q": "x"}), "", false),
        ("read", json!({"p": "a"}), "", false),
        ("grep", json!({"q": "y"}), "", false),
        ("read", json!({"p": "a"}), "", false),
    ]);
    assert_eq!(events("kilo", &s, &[]), [("doom_loop", 15)]);
    assert!(events("opencode", &s, &[]).is_empty());
}

#[test]
fn kilo_write_tool_resets() {
    let s = turns(&[
        ("read", json!({"p": "a"}), "", false),
        ("read", json!({"p": "a"}), "", false),
        ("edit", json!({"p": "a"}), "", false),
        ("read", json!({"p": "a"}), "", false),
        ("read", json!({"p": "a"}), "", false),
        ("read", json!({"p": "a"}), "", false),
    ]);
    // The edit clears the two earlier reads: the third read after it fires.
    assert_eq!(events("kilo", &s, &[]), [("doom_loop", 18)]);
    // Same tool, other input, after a match: reset too.
    let s = turns(&[
        ("read", json!({"p": "a"}), "", false),
        ("read", json!({"p": "a"}), "", false),
        ("read", json!({"p": "b"}), "", false),
        ("read", json!({"p": "a"}), "", false),
    ]);
    assert!(events("kilo", &s, &[]).is_empty());
}

#[test]
fn goose_denies_the_next_call_after_three_same_errors() {
    let s = turns(&[
        ("fetch", json!({"u": 1}), "404 Not Found", true),
        ("fetch", json!({"u": 2}), "404 Not Found", true),
        ("fetch", json!({"u": 3}), "404 Not Found", true),
        ("fetch", json!({"u": 4}), "ok", false),
        ("fetch", json!({"u": 5}), "404 Not Found", true),
    ]);
    assert_eq!(events("goose", &s, &[]), [("REP-002", 12)]);
    // REP-001 as a what-if: 3 identical calls with max 2.
    let s = turns(&vec![("t", json!({"a": 1}), "ok", false); 3]);
    assert!(events("goose", &s, &[]).is_empty());
    assert_eq!(
        events("goose", &s, &[("max_repetitions", "2")]),
        [("REP-001", 9)]
    );
}

#[test]
fn max_turns_fires_when_the_next_turn_starts() {
    let s = turns(&vec![("t", json!({}), "", false); 4]);
    assert_eq!(
        events("max-turns", &s, &[("max_turns", "3")]),
        [("max_turns", 11)]
    );
    assert!(events("max-turns", &s, &[("max_turns", "4")]).is_empty());
}

#[test]
fn every_family_declares_its_parameters_and_profiles() {
    for name in [
        "opencode",
        "blade",
        "openhands",
        "roo",
        "cline",
        "goose",
        "crush",
        "kimi",
        "max-turns",
    ] {
        let f = family(name).unwrap();
        let params = f.params();
        assert!(
            params.iter().any(|p| p.name == "policy"),
            "{name} has policy"
        );
        for p in &params {
            assert!(
                !p.doc.is_empty() && !p.source.is_empty(),
                "{name}.{}",
                p.name
            );
        }
        let profiles = f.profiles();
        for p in &params {
            assert!(
                profiles[0].values.iter().any(|(k, _)| *k == p.name),
                "{name}: default profile lists {}",
                p.name
            );
        }
        for prof in &profiles {
            let cfg = DetectorConfig::resolve(Some(name), Some(prof.name), &[]).unwrap();
            assert!(!cfg.checks().unwrap().is_empty(), "{}", prof.name);
        }
    }
}

#[test]
fn every_peer_profile_runs_on_the_gemini_edge_cases() {
    // Quirky transcripts (implicit turns, turn 0, interleaving, judges): no
    // profile may panic, and detections come in event order.
    let dir = crate::util::root().join("tests/conformance/gemini-edge");
    let corpus = looptune::input::read_corpus(&[dir], &Default::default()).unwrap();
    for name in [
        "opencode",
        "blade",
        "openhands",
        "roo",
        "cline",
        "goose",
        "crush",
        "kimi",
        "max-turns",
    ] {
        for prof in family(name).unwrap().profiles() {
            let cfg = DetectorConfig::resolve(None, Some(prof.name), &[]).unwrap();
            let checks = cfg.checks().unwrap();
            for s in &corpus.sessions {
                let d = run_checks(&checks, &Prepared::new(s.clone()), None);
                assert!(
                    d.windows(2).all(|w| w[0].event <= w[1].event),
                    "{}",
                    prof.name
                );
                let first = run_checks(&checks, &Prepared::new(s.clone()), Some(1));
                assert_eq!(first.first(), d.first(), "{} {}", prof.name, s.id);
            }
        }
    }
}

/// Found by a differential run against the originals: distinct lone
/// surrogates stay distinct (JSON.parse keeps them), and Cline's signature
/// never sees a `__proto__` key.
#[test]
fn lone_surrogates_stay_distinct_and_cline_drops_proto() {
    use looptune::detect::{DetectorConfig, Prepared};
    use looptune::input::parse_line;
    let session = |lines: &[&str]| {
        let recs = lines
            .iter()
            .map(|l| (parse_line(l).unwrap().1, looptune::event::Origin::default()))
            .collect();
        Prepared::new(std::sync::Arc::new(looptune::event::Session::from_records(
            "s".into(),
            recs,
        )))
    };
    let first = |profile: &str, p: &Prepared| {
        let cfg = DetectorConfig::resolve(None, Some(profile), &[]).unwrap();
        looptune::detect::run_checks(&cfg.checks().unwrap(), p, None)
            .first()
            .map(|d| (d.kind, d.event))
    };
    let lone: Vec<String> = (0..5)
        .map(|k| format!(r#"{{"type":"tool_call","name":"read_file","args":{{"p":"\ud80{k}"}}}}"#))
        .collect();
    let lone: Vec<&str> = lone.iter().map(String::as_str).collect();
    let p = session(&lone);
    for profile in ["roo", "opencode", "cline", "blade-legacy", "gemini-latest"] {
        assert_eq!(first(profile, &p), None, "{profile}");
    }
    let p = session(&[
        r#"{"type":"tool_call","name":"read_file","args":{"__proto__":1,"p":"a"}}"#,
        r#"{"type":"tool_call","name":"read_file","args":{"__proto__":2,"p":"a"}}"#,
        r#"{"type":"tool_call","name":"read_file","args":{"p":"a"}}"#,
    ]);
    assert_eq!(first("cline", &p), Some(("soft", 3)));
}

/// `events` with strikes.
fn strikes(profile: &str, s: &Arc<Session>) -> Vec<(&'static str, u32, u32)> {
    let cfg = DetectorConfig::resolve(None, Some(profile), &[]).unwrap();
    run_checks(&cfg.checks().unwrap(), &Prepared::new(s.clone()), None)
        .iter()
        .map(|d| (d.kind, d.event, d.strike))
        .collect()
}

#[test]
fn openhands_2026_08_nudges_at_three_errors_and_stops_at_four() {
    // Records: user, then turn/call/result triples; result k is record 3k+1.
    // Error texts differ, so only the action-error scenario applies (equal
    // errors would be 4 equal action/observation pairs, checked first).
    let outs: Vec<String> = (0..5).map(|i| format!("boom {i}")).collect();
    let s = turns(
        &outs
            .iter()
            .map(|o| ("edit", json!({"p": 1}), o.as_str(), true))
            .collect::<Vec<_>>(),
    );
    // The older SDK stops at the 3rd error.
    assert_eq!(
        events("openhands-v1", &s, &[])[0],
        ("repeating_action_error", 10)
    );
    let d = strikes("openhands-v1-2026-08", &s);
    assert_eq!(d[0], ("action_error_nudge", 10, 1));
    assert_eq!(d[1], ("repeating_action_error", 13, 2));
    let cfg = DetectorConfig::resolve(None, Some("openhands-v1-2026-08"), &[]).unwrap();
    assert_eq!(cfg.policy().to_string(), "warn:1");
    // Errors with changing arguments: no streak, nothing.
    let s = turns(
        &(0..6)
            .map(|i| ("edit", json!({ "p": i }), "boom", true))
            .collect::<Vec<_>>(),
    );
    assert!(strikes("openhands-v1-2026-08", &s).is_empty());
}

#[test]
fn openhands_2026_08_other_patterns_stop_at_once() {
    // 4 equal action/observation pairs: no nudge, so the stop is reported as
    // strikes 1 and 2 at the same event, and warn:1 stops there.
    let s = turns(&vec![("read", json!({"p": 1}), "same", false); 4]);
    assert_eq!(
        strikes("openhands-v1-2026-08", &s),
        [
            ("repeating_action_observation", 13, 1),
            ("repeating_action_observation", 13, 2)
        ]
    );
}

#[test]
fn cline_2026_03_hard_only_at_exactly_five() {
    let s = turns(&vec![
        (
            "read",
            json!({"p": 1, "task_progress": "x"}),
            "",
            false
        );
        11
    ]);
    // Calls are records 3k (k = 1..).
    assert_eq!(
        events("cline-2026-03", &s, &[]),
        [("soft", 9), ("hard", 15)]
    );
    // The extension's re-arm gives a new run after the hard stop.
    assert_eq!(
        events("cline-extension", &s, &[]),
        [("soft", 9), ("hard", 15), ("soft", 24), ("hard", 30)]
    );
    // task_progress is stripped: a changing value does not break the streak.
    let s = turns(
        &(0..5)
            .map(|i| ("read", json!({"p": 1, "task_progress": i}), "", false))
            .collect::<Vec<_>>(),
    );
    assert_eq!(
        events("cline-2026-03", &s, &[]),
        [("soft", 9), ("hard", 15)]
    );
}

#[test]
fn goose_max_repetitions_profile_and_subagent_caps() {
    let s = turns(&vec![("t", json!({"a": 1}), "ok", false); 7]);
    assert!(events("goose", &s, &[]).is_empty());
    // 5 allowed, the 6th identical call (record 18) is denied.
    assert_eq!(events("goose-max-repetitions", &s, &[])[0], ("REP-001", 18));
    let s = turns(&vec![("t", json!({"a": 1}), "ok", false); 51]);
    for (profile, cap) in [
        ("gemini-subagent", 30u32),
        ("gemini-subagent-generalist", 20),
        ("gemini-subagent-codebase-investigator", 50),
        ("gemini-subagent-cli-help", 10),
    ] {
        // Turn cap+1 starts at record 3 * cap + 2.
        assert_eq!(
            events(profile, &s, &[])[0],
            ("max_turns", 3 * cap + 2),
            "{profile}"
        );
    }
}

#[test]
fn openhands_v1_checks_once_per_step_not_after_every_event() {
    // Two failed edits, then one step that calls edit twice: the first of
    // those fails, the second succeeds. After that step's first error three
    // equal actions have errors (a per-event check stops there); by the end
    // of the step the newest observation is a success, and the SDK, which
    // checks before the next agent.step(), goes on.
    let mut recs = vec![Record::User {
        text: "fix".into(),
        prompt_id: None,
    }];
    for _ in 0..2 {
        recs.extend([
            Record::Turn,
            call("edit", json!({"p": 1})),
            result("boom", true),
        ]);
    }
    recs.extend([
        Record::Turn,
        call("edit", json!({"p": 1})),
        call("edit", json!({"p": 1})),
        result("boom", true),
        result("ok", false),
    ]);
    let s = session(recs);
    assert_eq!(
        events("openhands-v1", &s, &[("check_at", "event")]),
        [("repeating_action_error", 11)]
    );
    assert!(events("openhands-v1", &s, &[]).is_empty());
    // Three agent messages in a row: each ends the run (FINISHED), and the
    // loop stops before its stuck check, so the SDK never sees a monologue.
    let msg = |t: &str| {
        [
            Record::Turn,
            Record::Content {
                text: t.to_string(),
            },
        ]
    };
    let mut recs = vec![Record::User {
        text: "hi".into(),
        prompt_id: None,
    }];
    for _ in 0..3 {
        recs.extend(msg("same"));
    }
    let s = session(recs);
    assert_eq!(
        events("openhands-v1", &s, &[("check_at", "event")]),
        [("monologue", 7)]
    );
    assert!(events("openhands-v1", &s, &[]).is_empty());
    // V0 keeps checking after every event.
    assert_eq!(events("openhands-v0", &s, &[]), [("monologue", 7)]);
}
