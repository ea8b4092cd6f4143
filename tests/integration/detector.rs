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
    let configs: Vec<DetectorConfig> = names
        .iter()
        .map(|p| DetectorConfig::resolve(None, Some(p), &[]).unwrap())
        .collect();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    check_configs(dir, names, configs)
}

/// [`check_folder`] for configurations, each with its name.
fn check_configs(dir: &Path, names: Vec<String>, configs: Vec<DetectorConfig>) -> (usize, usize) {
    let mut files = Vec::new();
    jsonl_under(dir, &mut files);
    files.sort();
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
            // As it runs, and forgetting each record as soon as no stream
            // may read it again (a stream that reads one it let go panics).
            for eager in [false, true] {
                let mut det = Detector::new(cfg.clone()).unwrap();
                if eager {
                    det.forget_eagerly();
                }
                let mut got = Vec::new();
                for line in text.lines() {
                    got.extend(det.feed_line(line).unwrap());
                }
                got.extend(det.finish());
                let got = hits(got, turns);
                assert_eq!(got, want, "{} under {name} (eager {eager})", f.display());
            }
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
        "looptune-as-gemini",
        "looptune-as-opencode",
        "looptune-default",
        "looptune-kinds",
        "looptune-wide",
        "opencode",
        "kilo",
        "crush",
        "kimi",
        "goose",
        "goose-max-repetitions",
        "deepeval",
        "hermes",
        "hermes-interactive",
        "qwen",
        "qwen-all",
        "qwen-all-2026-08",
        "openclaw",
        "openclaw-2026-05",
        "openclaw-off-2026-05",
        // The families whose detections settle with later records: their
        // streams hold a detection until it is decided.
        "blade-legacy",
        "blade-legacy-service-default",
        "blade-stationarity",
        "openhands-v0",
        "openhands-v1",
        "openhands-v1-2026-08",
        "openrouter-sdk",
    ] {
        assert!(inc.contains(&p), "{p} is not incremental: {inc:?}");
    }
    // And every other profile: a family added without streams fails here.
    for f in families() {
        for p in f.profiles() {
            assert!(inc.contains(&p.name), "{} is not incremental", p.name);
        }
    }
}

/// The looptune family with every rule on (each of issue #45's rules at a
/// value no profile has, a warning before each stop), under each sameness:
/// fed incrementally, and what it fires equals a replay.
#[test]
fn every_looptune_rule_on_fed_record_by_record_equals_replay() {
    let mut names = Vec::new();
    let mut configs = Vec::new();
    for (same, scope) in [("name", "step"), ("args", "prompt"), ("result", "step")] {
        let sets: Vec<String> = [
            "target_warn=2",
            "target_stop=3",
            "ladder_warn=2",
            "ladder_stop=3",
            "same_edit_warn=2",
            "same_edit_stop=4",
            "outcome_chars=30",
            "outcome_warn=2",
            "outcome_stop=3",
            "opening_chars=20",
            "opening_warn=2",
            "opening_stop=3",
            "long_chant_chars=100",
            "window_size=6",
            "llm_check=true",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("same={same}"), format!("repeat_scope={scope}")])
        .collect();
        let overrides = DetectorConfig::parse_sets("looptune", &sets).unwrap();
        let cfg = DetectorConfig::resolve(None, Some("looptune-wide"), &overrides).unwrap();
        assert!(
            Detector::new(cfg.clone()).unwrap().incremental(),
            "{sets:?}"
        );
        names.push(format!("looptune-wide {}", sets.join(" ")));
        configs.push(cfg);
    }
    let root = util::root();
    let mut dirs = vec![root.join("tests/fixtures"), root.join("fixtures/sessions")];
    let conformance = root.join("../shared/conformance");
    if conformance.is_dir() {
        dirs.push(conformance);
    } else {
        util::skipped("../shared/conformance not found");
    }
    let (mut files, mut fired) = (0, 0);
    for d in dirs {
        let (f, n) = check_configs(&d, names.clone(), configs.clone());
        (files, fired) = (files + f, fired + n);
    }
    assert!(files >= 15 && fired > 0, "{files} files, {fired} hits");
}

/// The judge decides a turn's check at its verdict, later in the turn; a
/// loop detection between (a later event) is the next strike all the same,
/// as a replay numbers them: a live feed holds it until the judge decides.
#[test]
fn a_detection_after_a_pending_judge_check_waits_for_its_strike() {
    let mut lines = vec![
        r#"{"type":"session","agent":"gemini-cli","model":"gemini-2.5-pro"}"#.to_string(),
        r#"{"type":"user","text":"go"}"#.into(),
        r#"{"type":"turn"}"#.into(),
    ];
    for n in 0..5 {
        lines.push(format!(
            r#"{{"type":"tool_call","name":"ls","args":{{"dir":"."}},"id":"c{n}"}}"#
        ));
    }
    lines.push(r#"{"type":"judge","confidence":0.95,"analysis":"stuck"}"#.into());
    let d = tempfile::tempdir().unwrap();
    util::write(d.path(), "judged.jsonl", &(lines.join("\n") + "\n"));
    let sets = DetectorConfig::parse_sets(
        "gemini",
        &[
            "llm_check_after_turns=1".into(),
            "llm_check_interval=1".into(),
            "policy=ignore".into(),
        ],
    )
    .unwrap();
    let cfg = DetectorConfig::resolve(None, Some("gemini-latest"), &sets).unwrap();
    let (files, fired) = check_configs(d.path(), vec!["gemini-latest".into()], vec![cfg]);
    // The judge at the turn (strike 1), the fifth call (strike 2).
    assert_eq!((files, fired), (1, 2));
}

/// OpenClaw's post-compaction guard reads `session` records in the middle
/// of a session (a compaction raises `meta.compactions`), which no fixture
/// or conformance session has: fed record by record, incrementally, the
/// guard aborts where a replay does (one that changes the model too, which
/// rebuilds the streams over the records so far).
#[test]
fn a_compaction_fed_record_by_record_equals_replay() {
    let call = |n: usize| {
        format!(r#"{{"type":"tool_call","name":"read","args":{{"path":"a"}},"id":"c{n}"}}"#)
    };
    let result = |n: usize| format!(r#"{{"type":"tool_result","id":"c{n}","output":"same"}}"#);
    let mut lines = vec![
        r#"{"type":"session","agent":"openclaw","model":"m1"}"#.to_string(),
        r#"{"type":"user","text":"go"}"#.into(),
    ];
    for n in 0..3 {
        lines.extend([r#"{"type":"turn"}"#.into(), call(n), result(n)]);
    }
    lines.push(r#"{"type":"session","meta":{"compactions":1}}"#.into());
    for n in 3..6 {
        lines.extend([r#"{"type":"turn"}"#.into(), call(n), result(n)]);
    }
    lines.push(r#"{"type":"user","text":"again"}"#.into());
    lines.push(r#"{"type":"session","model":"m2","meta":{"compactions":2}}"#.into());
    for n in 6..11 {
        lines.extend([r#"{"type":"turn"}"#.into(), call(n), result(n)]);
    }
    let d = tempfile::tempdir().unwrap();
    util::write(d.path(), "compacted.jsonl", &(lines.join("\n") + "\n"));
    let names = vec!["openclaw-2026-05", "openclaw-off-2026-05", "qwen-all"];
    for p in &names {
        let cfg = DetectorConfig::resolve(None, Some(p), &[]).unwrap();
        assert!(Detector::new(cfg).unwrap().incremental(), "{p}");
    }
    let (files, fired) = check_folder(d.path(), names);
    // Each guard aborts its run at the third outcome after its compaction;
    // qwen-all stops the fifth identical call of each prompt.
    assert_eq!((files, fired), (1, 6));
}

/// A long session with `turn` records: each profile's live Detector holds
/// its rules' windows, not the session (a few records here), unless a rule
/// reads the session's model or mode, which a change mid-session has it
/// read again from the start (Blade's legacy service reads plan mode, the
/// DeepV Code preview rules the model).
#[test]
fn a_long_session_is_held_as_the_rules_windows() {
    let mut lines = vec![r#"{"type":"user","text":"fix the build","session":"b"}"#.to_string()];
    let mut k = 0usize;
    while lines.len() < 20_000 {
        k += lines.len().is_multiple_of(4) as usize;
        let file = if k % 50 < 8 { 0 } else { k % 997 };
        lines.push(match lines.len() % 4 {
            0 => r#"{"type":"turn","session":"b"}"#.to_string(),
            1 => format!(
                r#"{{"type":"tool_call","name":"read_file","args":{{"path":"f{file}"}},"id":"c{k}","session":"b"}}"#
            ),
            2 => format!(
                r#"{{"type":"tool_result","name":"read_file","id":"c{k}","output":"x{file}","session":"b"}}"#
            ),
            _ => format!(r#"{{"type":"content","text":"Reading {file}.","session":"b"}}"#),
        });
    }
    let (mut bounded, mut whole) = (Vec::new(), Vec::new());
    for p in incremental_profiles() {
        let cfg = DetectorConfig::resolve(None, Some(p), &[]).unwrap();
        let mut det = Detector::new(cfg).unwrap();
        let (mut most, mut keys) = (0, 0);
        for l in &lines {
            det.feed_line(l).unwrap();
            most = most.max(det.records_held());
            keys = keys.max(det.detections_held());
        }
        // max-turns fires at every record past its cap: the keys of what
        // was handed out are let go with the records.
        if most <= 256 {
            assert!(keys <= 1024, "{p} kept {keys} detection keys");
        }
        match most {
            0..=256 => bounded.push(p),
            n if n == lines.len() => whole.push(p),
            n => panic!("{p} held {n} of {} records", lines.len()),
        }
    }
    assert!(
        whole
            .iter()
            .all(|p| p.starts_with("blade-legacy") || p.starts_with("deepv-")),
        "held every record: {whole:?}"
    );
    assert!(bounded.len() > 30, "{bounded:?}");
}
