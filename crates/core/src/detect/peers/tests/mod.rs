//! The original programs' own test files, ported case by case to each port's
//! internals (trackers, services, signatures), which are not part of the
//! library's API; the family-level cases on sessions live in
//! tests/integration (peers_examples, peers_conformance).

mod blade;
mod cline;
mod crush;
mod deepeval;
mod goose;
mod hermes;
mod kimi;
mod openclaw;
mod opencode;
mod openhands;
mod openrouter_sdk;
mod qwen;
mod roo;

use serde_json::{Map, Value};

/// A JSON object literal as tool-call arguments.
fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("args must be an object"),
    }
}

/// A configuration's checks fed record by record (each check's stream,
/// finished at the end), merged as a replay merges them.
fn streamed(
    checks: &[Box<dyn crate::detect::Check>],
    s: &crate::event::Session,
) -> Vec<crate::detect::Detection> {
    let per = checks
        .iter()
        .map(|c| {
            let mut st = c.stream().expect("a stream");
            let mut out = Vec::new();
            for i in 0..s.events.len() {
                st.feed(s, i, &mut out);
            }
            st.finish(s, &mut out);
            out
        })
        .collect();
    crate::detect::merge(per)
}

/// `streamed` equals the replay for each `(profile, overrides)`.
fn stream_equals_run(
    s: &std::sync::Arc<crate::event::Session>,
    cfgs: &[(&str, Vec<(String, crate::detect::ParamValue)>)],
) -> usize {
    stream_equals_run_kinds(s, cfgs).values().sum()
}

/// [`stream_equals_run`], with how many detections of each kind fired.
fn stream_equals_run_kinds(
    s: &std::sync::Arc<crate::event::Session>,
    cfgs: &[(&str, Vec<(String, crate::detect::ParamValue)>)],
) -> std::collections::BTreeMap<&'static str, usize> {
    let mut fired = std::collections::BTreeMap::new();
    for (profile, sets) in cfgs {
        let cfg = crate::detect::DetectorConfig::resolve(None, Some(profile), sets).unwrap();
        let checks = cfg.checks().unwrap();
        let want =
            crate::detect::run_checks(&checks, &crate::detect::Prepared::new(s.clone()), None);
        assert_eq!(streamed(&checks, s), want, "{profile} {sets:?}");
        for d in want {
            *fired.entry(d.kind).or_default() += 1;
        }
    }
    fired
}

/// A check's stream fed `s` record by record: each detection with the
/// record (1-based) whose feed pushed it, then those pushed at the end.
fn fed_at(
    check: &dyn crate::detect::Check,
    s: &crate::event::Session,
) -> (
    Vec<(usize, crate::detect::Detection)>,
    Vec<crate::detect::Detection>,
) {
    let mut st = check.stream().expect("a stream");
    let mut at_feed = Vec::new();
    for i in 0..s.events.len() {
        let mut out = Vec::new();
        st.feed(s, i, &mut out);
        at_feed.extend(out.into_iter().map(|d| (i + 1, d)));
    }
    let mut fin = Vec::new();
    st.finish(s, &mut fin);
    (at_feed, fin)
}

/// A session of `records`.
fn records(recs: Vec<crate::event::Record>) -> std::sync::Arc<crate::event::Session> {
    let recs = recs
        .into_iter()
        .map(|r| (r, crate::event::Origin::default()))
        .collect();
    std::sync::Arc::new(crate::event::Session::from_records("s".into(), recs))
}
