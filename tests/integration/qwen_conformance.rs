//! The qwen conformance cases: every detection Qwen Code's own
//! `LoopDetectionService` (@00aa71b4) gives on generated sessions, under
//! `skipLoopDetection` true (`qwen`) and false (`qwen-all`).

use looptune::detect::{run_checks, DetectorConfig, Prepared};
use looptune::input::{read_corpus, ReadOptions};
use serde_json::Value;
use std::path::PathBuf;

fn dir() -> PathBuf {
    crate::util::root().join("tests/conformance/qwen-cases")
}

fn check(profile: &str) {
    let text = std::fs::read_to_string(dir().join("expected/qwen.out")).unwrap();
    let want: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let corpus = read_corpus(&[dir()], &ReadOptions::default()).unwrap();
    assert_eq!(corpus.sessions.len(), want.len());
    let cfg = DetectorConfig::resolve(None, Some(profile), &[]).unwrap();
    let checks = cfg.checks().unwrap();
    let mut failures = Vec::new();
    let mut total = 0;
    for w in &want {
        let id = w["session"].as_str().unwrap();
        let s = corpus
            .sessions
            .iter()
            .find(|s| s.id == id)
            .unwrap_or_else(|| panic!("no session {id}"));
        let expected: Vec<(String, u32)> = w[profile]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d[0].as_str().unwrap().to_string(),
                    d[1].as_u64().unwrap() as u32,
                )
            })
            .collect();
        total += expected.len();
        let got: Vec<(String, u32)> = run_checks(&checks, &Prepared::new(s.clone()), None)
            .into_iter()
            .map(|d| (d.kind.to_string(), d.event))
            .collect();
        if got != expected {
            failures.push(format!("{id}: want {expected:?}, got {got:?}"));
        }
    }
    assert!(total >= 20, "the cases must exercise the detector");
    assert!(failures.is_empty(), "{profile}:\n{}", failures.join("\n"));
}

#[test]
fn qwen_as_shipped() {
    check("qwen");
}

#[test]
fn qwen_all_rules() {
    check("qwen-all");
}
