//! The `looptune` family: each `looptune-as-<family>` profile makes the same
//! detections (event, turn, kind) as that family's stock port on every
//! conformance and fixture session, and the rules the ports lack fire where
//! they should.

use looptune::detect::{run_checks, Detection, DetectorConfig, ParamValue, Prepared};
use looptune::event::Session;
use looptune::input::{read_corpus, ReadOptions};
use std::path::PathBuf;
use std::sync::Arc;

/// Every session file of the conformance folders and of `fixtures/sessions`.
fn sessions() -> Vec<Arc<Session>> {
    let root = crate::util::root();
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in [
        "tests/conformance/gemini-edge",
        "tests/conformance/peer-cases",
        "tests/conformance/qwen-cases",
        "fixtures/sessions",
    ] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if name.ends_with(".jsonl") || name.ends_with(".jsonl.gz") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(files.len() > 60, "{} session files", files.len());
    let opts = ReadOptions {
        lenient: true,
        ..ReadOptions::default()
    };
    read_corpus(&files, &opts).unwrap().sessions
}

fn detect(profile: &str, sets: &[(&str, ParamValue)], s: &Arc<Session>) -> Vec<Detection> {
    let sets: Vec<(String, ParamValue)> = sets
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let cfg = DetectorConfig::resolve(None, Some(profile), &sets).unwrap();
    run_checks(&cfg.checks().unwrap(), &Prepared::new(s.clone()), None)
}

/// `(event, turn, kind)` of each detection, kinds mapped to the port's.
fn shape(dets: &[Detection], map: &dyn Fn(&str) -> &'static str) -> Vec<(u32, u32, String)> {
    dets.iter()
        .map(|d| (d.event, d.turn, map(d.kind).to_string()))
        .collect()
}

fn agree(
    ours: &str,
    theirs: &str,
    their_sets: &[(&str, ParamValue)],
    map: &dyn Fn(&str) -> &'static str,
) -> usize {
    let mut compared = 0;
    let mut firing = 0;
    let mut failures = Vec::new();
    for s in sessions() {
        let a = shape(&detect(ours, &[], &s), map);
        let b = shape(&detect(theirs, their_sets, &s), &|k| match k {
            "tool_call" => "tool_call",
            "content" => "content",
            "llm" => "llm",
            "doom_loop" => "doom_loop",
            _ => "other",
        });
        compared += 1;
        firing += usize::from(!b.is_empty());
        if a != b {
            failures.push(format!("{}:\n  {ours}: {a:?}\n  {theirs}: {b:?}", s.id));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(compared > 60);
    firing
}

#[test]
fn as_gemini_agrees_with_gemini_latest() {
    let firing = agree("looptune-as-gemini", "gemini-latest", &[], &|k| match k {
        "repeat" | "cycle" => "tool_call",
        "chant" => "content",
        "llm" => "llm",
        _ => "unexpected",
    });
    // The comparison means something: tool-call and content loops both fire.
    assert!(firing >= 15, "{firing} sessions with detections");
}

/// The judge is gemini-latest's own check: on the judge sessions the two
/// agree, and so they do with it off on both sides.
#[test]
fn as_gemini_agrees_with_gemini_latest_without_their_judges_too() {
    let off = [("llm_check", ParamValue::Bool(false))];
    for s in sessions() {
        let ours = DetectorConfig::resolve(
            None,
            Some("looptune-as-gemini"),
            &[("llm_check".to_string(), ParamValue::Bool(false))],
        )
        .unwrap();
        let a = run_checks(&ours.checks().unwrap(), &Prepared::new(s.clone()), None);
        let b = detect("gemini-latest", &off, &s);
        assert_eq!(a.len(), b.len(), "{}", s.id);
        assert!(a.iter().all(|d| d.kind != "llm"), "{}", s.id);
    }
}

/// looptune-default detects, at the same event, whatever gemini-latest
/// detects first (its rules and judge are in it); it may detect earlier or
/// more.
#[test]
fn the_default_catches_whatever_gemini_latest_catches() {
    let mut judged = 0;
    for s in sessions() {
        let ours = detect("looptune-default", &[], &s);
        let theirs = detect("gemini-latest", &[], &s);
        if let Some(t) = theirs.first() {
            let o = ours.first().unwrap_or_else(|| panic!("{}: missed", s.id));
            assert!(
                o.event <= t.event,
                "{}: {} after {}",
                s.id,
                o.event,
                t.event
            );
            judged += usize::from(t.kind == "llm");
        }
    }
    assert!(judged >= 3, "{judged} sessions the judge decides");
}

#[test]
fn as_opencode_agrees_with_opencode() {
    let firing = agree("looptune-as-opencode", "opencode", &[], &|k| match k {
        "repeat" => "doom_loop",
        _ => "unexpected",
    });
    assert!(firing >= 5, "{firing} sessions with detections");
}
