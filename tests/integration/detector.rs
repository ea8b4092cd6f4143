//! The live `watch::Detector` fed record by record fires what `replay --all`
//! fires on the whole session, for every profile, on every single-session
//! canonical file of the fixtures (`tests/fixtures`, `fixtures/sessions`) and of `../shared/conformance`.

use crate::util;
use looptune_core::detect::{families, DetectorConfig};
use looptune_core::input::{read_corpus, ReadOptions};
use looptune_core::replay::{Detection, Plan, ReplayOptions};
use looptune_core::watch::{incremental_profiles, Detector};
use std::path::{Path, PathBuf};

/// A session whose first `turn` record comes after model records: the
/// records before it are renumbered when it arrives (turn 1 -> 0), so hits
/// handed out before carry the number the session had then.
const RENUMBERED: &[&str] = &["04_turn_zero.jsonl"];

fn profiles() -> Vec<&'static str> {
    families()
        .into_iter()
        .flat_map(|f| f.profiles().into_iter().map(|p| p.name))
        .collect()
}

fn jsonl_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            // `expected/` folders hold the originals' answers, not sessions.
            if p.file_name().is_some_and(|n| n != "expected") {
                jsonl_under(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

type Hit = (&'static str, Option<u32>, u32, u32, String);

fn hits(dets: Vec<Detection>, turns: bool) -> Vec<Hit> {
    let mut v: Vec<Hit> = dets
        .into_iter()
        .map(|d| (d.kind, turns.then_some(d.turn), d.event, d.strike, d.detail))
        .collect();
    v.sort_by(|a, b| (a.2, a.3, a.0).cmp(&(b.2, b.3, b.0)));
    v
}

/// Every profile on every single-session file of `dir`: returns the files
/// compared and the detections expected.
fn check_folder(dir: &Path, names: Vec<&'static str>) -> (usize, usize) {
    let mut files = Vec::new();
    jsonl_under(dir, &mut files);
    files.sort();
    let configs: Vec<DetectorConfig> = names
        .iter()
        .map(|p| DetectorConfig::resolve(None, Some(p), &[]).unwrap())
        .collect();
    let plan = Plan::new(configs.clone(), &ReplayOptions { all: true }).unwrap();
    let opts = ReadOptions {
        lenient: true,
        ..ReadOptions::default()
    };
    let (mut compared, mut fired) = (0, 0);
    for f in &files {
        // Files the reader refuses (the fixtures of bad input) have no replay.
        let Ok(corpus) = read_corpus(std::slice::from_ref(f), &opts) else {
            continue;
        };
        // A Detector is fed canonical records: native logs are left out.
        if corpus.sessions.len() != 1 || corpus.files[0].format != "canonical" {
            continue;
        }
        compared += 1;
        let outcomes = plan.session(corpus.sessions[0].clone());
        let text = std::fs::read_to_string(f).unwrap();
        let turns = !RENUMBERED.contains(&f.file_name().unwrap().to_str().unwrap());
        for ((name, cfg), outcome) in names.iter().zip(&configs).zip(outcomes) {
            let want = hits(outcome.detections, turns);
            let mut det = Detector::new(cfg.clone()).unwrap();
            let mut got = Vec::new();
            for line in text.lines() {
                got.extend(det.feed_line(line).unwrap());
            }
            got.extend(det.finish());
            let got = hits(got, turns);
            assert_eq!(got, want, "{} under {name}", f.display());
            fired += want.len();
        }
    }
    (compared, fired)
}

#[test]
fn fed_record_by_record_equals_replay_on_the_fixtures() {
    // The Python tests' fixtures (`fixtures/sessions`) and the Rust ones.
    let (a, fired_a) = check_folder(&util::root().join("tests/fixtures"), profiles());
    let (b, fired_b) = check_folder(&util::root().join("fixtures/sessions"), profiles());
    let (files, fired) = (a + b, fired_a + fired_b);
    assert!(files >= 15 && fired > 0, "{files} files, {fired} hits");
}

/// The incremental profiles on conformance (the new code). Every profile is
/// checked there by the Python tests, on a release build: the profiles that
/// replay the records so far cost O(n^2) per session, minutes in a debug build.
#[test]
fn fed_record_by_record_equals_replay_on_conformance() {
    let dir = util::root().join("../shared/conformance");
    if !dir.is_dir() {
        util::skipped("../shared/conformance not found");
        return;
    }
    let (files, fired) = check_folder(&dir, incremental_profiles());
    assert!(files >= 40 && fired > 0, "{files} files, {fired} hits");
}

/// The families converted to streams so far are fed incrementally; the
/// others replay the records so far (and still pass the tests above).
#[test]
fn the_detector_says_which_profiles_are_incremental() {
    let inc = incremental_profiles();
    for p in [
        "max-turns",
        "gemini-max-turns",
        "roo",
        "cline",
        "cline-extension",
        "cline-2026-03",
        "gemini-latest",
        "gemini-2026-03",
        "gemini-2025-08",
        "gemini-2025-07",
        "deepv-preview",
        "deepv-latest",
        "opencode",
        "kilo",
        "crush",
        "kimi",
        "goose",
        "goose-max-repetitions",
        "deepeval",
        "hermes",
        "hermes-interactive",
    ] {
        assert!(inc.contains(&p), "{p} is not incremental: {inc:?}");
    }
    // Families settled by later records replay what may still change.
    for p in ["blade-legacy", "openhands-v1", "openrouter-sdk"] {
        assert!(!inc.contains(&p), "{p}");
    }
}
