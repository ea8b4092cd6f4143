//! The conformance cases of Gemini CLI's LoopDetectionService: small
//! transcripts with the detections the ORIGINAL program (upstream 5411f113ca
//! and d76cedb68f) gives, first detection and with clearDetection() after each.

use looptune::detect::DetectorConfig;
use looptune::input::{read_corpus, ReadOptions};
use looptune::progress::NoProgress;
use looptune::replay::{replay, ReplayOptions};
use std::collections::BTreeMap;
use std::path::PathBuf;

type Found = BTreeMap<String, Vec<(String, u32, u32)>>;

fn dir() -> PathBuf {
    crate::util::root().join("tests/conformance/gemini-edge")
}

fn expected(file: &str) -> Found {
    let text = std::fs::read_to_string(dir().join("expected").join(file)).unwrap();
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let dets = v["detections"]
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
            (v["session"].as_str().unwrap().to_string(), dets)
        })
        .collect()
}

fn ours(profile: &str, all: bool) -> Found {
    let corpus = read_corpus(&[dir()], &ReadOptions::default()).unwrap();
    let cfg = DetectorConfig::resolve(None, Some(profile), &[]).unwrap();
    let r = replay(
        &corpus,
        vec![cfg],
        &ReplayOptions { all },
        &looptune::replay::Workers::new(2).unwrap(),
        &NoProgress,
    )
    .unwrap();
    corpus
        .sessions
        .iter()
        .zip(&r.outcomes[0])
        .map(|(s, o)| {
            let shown = if all {
                &o.detections[..]
            } else {
                &o.detections[..o.detections.len().min(1)]
            };
            (
                s.id.clone(),
                shown
                    .iter()
                    .map(|d| (d.kind.to_string(), d.turn, d.event))
                    .collect(),
            )
        })
        .collect()
}

fn check(profile: &str, all: bool, file: &str) {
    let want = expected(file);
    let got = ours(profile, all);
    assert_eq!(want.len(), 33, "the expected file lists 33 sessions");
    for (id, w) in &want {
        assert_eq!(got.get(id), Some(w), "{profile} all={all}: session {id}");
    }
    assert_eq!(got.len(), want.len());
}

#[test]
fn latest_first_detection() {
    check("gemini-latest", false, "head.first.out");
}

#[test]
fn latest_every_detection() {
    check("gemini-latest", true, "head.all.out");
}

#[test]
fn july_2025_first_detection() {
    check("gemini-2025-07", false, "2025-07.first.out");
}

#[test]
fn july_2025_every_detection() {
    check("gemini-2025-07", true, "2025-07.all.out");
}
