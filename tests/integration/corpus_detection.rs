//! gemini-latest on the real corpus (../shared/corpus): the known loop is
//! caught, and the benign look-alikes behave as the original detector makes
//! them behave. Codex's polling (`write_stdin` with byte-identical arguments,
//! 6 and 7 times) IS flagged by Gemini CLI's own rule of 5 identical calls: a
//! false positive of the original, kept because the port is faithful, and the
//! kind of cost a sweep exists to show; a threshold of 8 avoids it.

use looptune::detect::{DetectorConfig, ParamValue};
use looptune::input::{read_corpus, ReadOptions};
use looptune::progress::NoProgress;
use looptune::replay::{replay, ReplayOptions};
use std::collections::HashMap;

fn corpus() -> Option<looptune::event::Corpus> {
    let dir = crate::util::root().join(crate::util::shared_corpus()?);
    let opts = ReadOptions {
        lenient: true,
        ..Default::default()
    };
    Some(read_corpus(&[dir], &opts).expect("the corpus reads with --lenient"))
}

/// First detection (kind, turn) per session id.
fn first(
    c: &looptune::event::Corpus,
    sets: &[(&str, ParamValue)],
) -> HashMap<String, Option<(&'static str, u32)>> {
    let sets: Vec<(String, ParamValue)> = sets
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let cfg = DetectorConfig::resolve(None, Some("gemini-latest"), &sets).unwrap();
    let r = replay(
        c,
        vec![cfg],
        &ReplayOptions { all: false },
        &looptune::replay::Workers::new(2).unwrap(),
        &NoProgress,
    )
    .unwrap();
    c.sessions
        .iter()
        .zip(&r.outcomes[0])
        .map(|(s, o)| (s.id.clone(), o.first().map(|d| (d.kind, d.turn))))
        .collect()
}

fn find<'a>(
    m: &'a HashMap<String, Option<(&'static str, u32)>>,
    prefix: &str,
) -> &'a Option<(&'static str, u32)> {
    let hits: Vec<_> = m.iter().filter(|(k, _)| k.starts_with(prefix)).collect();
    assert_eq!(hits.len(), 1, "exactly one session starts with {prefix}");
    hits[0].1
}

#[test]
fn known_loop_is_caught_and_benign_lookalikes_behave_as_the_original() {
    let Some(c) = corpus() else { return };
    let m = first(&c, &[]);
    // The swift-build session: the first loop a call-based detector can see is
    // Write Geometry.swift x5 at T19-T23 (labels.csv); caught there.
    assert_eq!(find(&m, "554b9fa6"), &Some(("tool_call", 23)));
    // Harness retry storms produce no model turn: nothing to detect.
    for id in ["7fcdbdcd", "43bc3167", "0a8fc187"] {
        assert_eq!(find(&m, id), &None, "{id}");
    }
    // The same command once per prompt, 7 prompts: reset per prompt.
    assert_eq!(find(&m, "session-2025-12-30T01-31-271ace30"), &None);
    // Polling with identical arguments: the original's rule fires on the 5th call.
    assert!(matches!(
        find(&m, "rollout-2026-05-11T11-26-55"),
        Some(("tool_call", _))
    ));
    assert!(matches!(
        find(&m, "rollout-2026-02-23T12-40-23"),
        Some(("tool_call", _))
    ));
    let tuned = first(&c, &[("tool_call_threshold", ParamValue::Int(8))]);
    assert_eq!(find(&tuned, "rollout-2026-05-11T11-26-55"), &None);
    assert_eq!(find(&tuned, "rollout-2026-02-23T12-40-23"), &None);
}
