//! The peer conformance cases: one-rule sessions with the first detection the
//! ORIGINAL OpenHands, Roo Code, OpenCode, Cline and Blade programs give
//! (Cline: first soft and first hard; Blade: also the turn where it stops).

use looptune::detect::{run_checks, Detection, DetectorConfig, Prepared};
use looptune::event::Session;
use looptune::input::{read_corpus, ReadOptions};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

fn dir() -> PathBuf {
    crate::util::root().join("tests/conformance/peer-cases")
}

/// `(kind, turn, event)`.
type Det = (String, u32, u32);

struct Expected {
    detections: Vec<Det>,
    /// Blade only: `(turn, event)` of the stop, if any.
    stop: Option<Option<(u32, u32)>>,
}

fn expected(file: &str) -> BTreeMap<String, Expected> {
    let text = std::fs::read_to_string(dir().join("expected").join(file)).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let detections = v["detections"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| {
                    (
                        d["kind"].as_str().unwrap().to_string(),
                        d["turn"].as_u64().unwrap() as u32,
                        d["event"].as_u64().unwrap() as u32,
                    )
                })
                .collect();
            let stop = v.get("stop").map(|s| {
                (!s.is_null()).then(|| {
                    (
                        s["turn"].as_u64().unwrap() as u32,
                        s["event"].as_u64().unwrap() as u32,
                    )
                })
            });
            (
                v["session"].as_str().unwrap().to_string(),
                Expected { detections, stop },
            )
        })
        .collect()
}

fn sessions() -> Vec<Arc<Session>> {
    // The session files only: `expected/` holds JSON Lines that are not
    // sessions, which a walk of the whole folder refuses.
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    read_corpus(&files, &ReadOptions::default())
        .unwrap()
        .sessions
}

/// Every detection of a profile on a session, strikes numbered.
fn detect(profile: &str, s: &Arc<Session>) -> (DetectorConfig, Vec<Detection>) {
    let cfg = DetectorConfig::resolve(None, Some(profile), &[]).unwrap();
    let checks = cfg.checks().unwrap();
    let dets = run_checks(&checks, &Prepared::new(s.clone()), None);
    (cfg, dets)
}

/// The detection where the profile's policy stops the session.
fn stop_of(cfg: &DetectorConfig, dets: &[Detection]) -> Option<(u32, u32)> {
    let at = cfg.policy().stop_strike()?;
    dets.iter()
        .find(|d| d.strike >= at)
        .map(|d| (d.turn, d.event))
}

fn check(profile: &str, file: &str, kind_map: &dyn Fn(&str) -> String) {
    let want = expected(file);
    let all = sessions();
    assert_eq!(want.len(), 31, "{file} lists 31 sessions");
    assert_eq!(all.len(), 31);
    let mut failures = Vec::new();
    for s in &all {
        let w = want
            .get(&s.id)
            .unwrap_or_else(|| panic!("{file} lacks {}", s.id));
        let (cfg, dets) = detect(profile, s);
        let got: Vec<Det> = if profile == "cline" {
            // Cline lines give the first soft and the first hard.
            ["soft", "hard"]
                .iter()
                .filter_map(|k| dets.iter().find(|d| d.kind == *k))
                .map(|d| (d.kind.to_string(), d.turn, d.event))
                .collect()
        } else {
            dets.iter()
                .take(1)
                .map(|d| (d.kind.to_string(), d.turn, d.event))
                .collect()
        };
        let want_dets: Vec<Det> = w
            .detections
            .iter()
            .map(|(k, t, e)| (kind_map(k), *t, *e))
            .collect();
        if got != want_dets {
            failures.push(format!("{}: want {want_dets:?}, got {got:?}", s.id));
        }
        if let Some(stop) = w.stop {
            let ours = stop_of(&cfg, &dets);
            if ours != stop {
                failures.push(format!("{}: stop want {stop:?}, got {ours:?}", s.id));
            }
        }
    }
    assert!(failures.is_empty(), "{profile}:\n{}", failures.join("\n"));
}

fn same(k: &str) -> String {
    k.to_string()
}

#[test]
fn openhands_v0() {
    check("openhands-v0", "openhands.jsonl", &same);
}

#[test]
fn roo() {
    check("roo", "roo.jsonl", &same);
}

#[test]
fn opencode() {
    check("opencode", "opencode.jsonl", &same);
}

#[test]
fn cline_soft_and_hard() {
    check("cline", "cline.jsonl", &same);
}

#[test]
fn blade_legacy_first_detection_and_stop() {
    // The service's own type for a tool-call hit is `tool_call`.
    check("blade-legacy", "blade-legacy.jsonl", &|k| {
        if k == "tool" {
            "tool_call".into()
        } else {
            k.into()
        }
    });
}

#[test]
fn blade_stationarity_first_detection_and_stop() {
    check("blade-stationarity", "blade-stationarity.jsonl", &same);
}
