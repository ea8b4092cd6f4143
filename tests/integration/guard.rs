//! `looptune guard` driven by hook JSON built from recorded Claude Code
//! sessions: at every tool call of a transcript, the guard (given the
//! transcript up to the line holding the call, as Claude Code's
//! `PreToolUse` hook sees it) blocks exactly where `replay --all` detects at
//! that call under the policy, and never on a clean session of the corpus.

use crate::util::*;
use looptune::detect::{DetectorConfig, Policy};
use looptune::event::{Record, Session};
use looptune::guard::{Guard, HookCall, Verdict};
use looptune::input::{import::InputFormat, ReadOptions};
use looptune::replay::{Plan, ReplayOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

fn lenient() -> ReadOptions {
    ReadOptions {
        lenient: true,
        format: InputFormat::Auto,
        ..ReadOptions::default()
    }
}

/// The configurations the guard is held to: looptune's rules, and Gemini
/// CLI's lowered so it fires (warnings and blocks) on these sessions.
fn configs() -> Vec<(DetectorConfig, Policy)> {
    let c = |p: &str, sets: &[(&str, &str)]| {
        let sets: Vec<_> = sets
            .iter()
            .map(|(k, v)| {
                let spec = looptune::detect::family_of_profile(p)
                    .unwrap()
                    .params()
                    .into_iter()
                    .find(|s| s.name == *k)
                    .unwrap();
                (k.to_string(), spec.parse(v).unwrap())
            })
            .collect();
        DetectorConfig::resolve(None, Some(p), &sets).unwrap()
    };
    vec![
        (c("looptune-default", &[]), Policy::Warn(2)),
        (
            c("gemini-latest", &[("tool_call_threshold", "2")]),
            Policy::Warn(1),
        ),
    ]
}

/// What the guard must say at a call, from replay's detections there.
fn expected(strikes: &[u32], policy: Policy) -> &'static str {
    let Some(&s) = strikes.last() else {
        return "allow";
    };
    match policy {
        Policy::Stop => "block",
        Policy::Warn(n) if s > n => "block",
        Policy::Warn(_) => "warn",
        Policy::Ask => "ask",
        Policy::Ignore => "allow",
    }
}

fn said(v: &Verdict) -> &'static str {
    match v {
        Verdict::Allow => "allow",
        Verdict::Warn(_) => "warn",
        Verdict::Ask(_) => "ask",
        Verdict::Block(_) => "block",
    }
}

/// Calls checked per transcript.
const MAX_CALLS: usize = 150;

/// Checks every call of one transcript (up to [`MAX_CALLS`]); returns (calls, blocks).
fn check_transcript(path: &Path, cfg: &DetectorConfig, policy: Policy) -> (usize, usize) {
    let bytes = std::fs::read(path).unwrap();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let stem = looptune::input::file_stem(path);
    let display = path.display().to_string();
    let file = looptune::input::parse_bytes(&display, stem, bytes.clone(), &lenient()).unwrap();
    let guard = Guard::new(cfg.clone(), Some(policy)).unwrap();
    let plan = Plan::new(vec![cfg.clone()], &ReplayOptions { all: true }).unwrap();
    let (mut calls, mut blocks) = (0, 0);
    for (sid, events) in file.sessions {
        let session = Session::from_events(sid.clone(), events);
        let dets = plan.session(Arc::new(session.clone())).remove(0).detections;
        let detected = |i: usize| dets.iter().any(|d| d.event == i as u32 + 1);
        let mut quiet_calls = 0;
        for (i, e) in session.events.iter().enumerate() {
            let Record::ToolCall { name, args, id } = &e.record else {
                continue;
            };
            let Some(id) = id else { continue };
            // Each call re-reads its prefix: the first calls of each
            // session keep the debug-build test within a minute.
            if calls == MAX_CALLS {
                break;
            }
            // Every call replay detects at, the events around it, and
            // every third of the other calls: checking every call spent
            // 90 s of CI re-reading prefixes.
            let near = (i.saturating_sub(2)..=i + 2).any(detected);
            if !near {
                quiet_calls += 1;
                if quiet_calls % 3 != 1 {
                    continue;
                }
            }
            let event = i as u32 + 1;
            let strikes: Vec<u32> = dets
                .iter()
                .filter(|d| d.event == event)
                .map(|d| d.strike)
                .collect();
            // The transcript as the hook finds it: up to the call's line.
            let prefix: String = lines[..e.origin.line as usize].concat();
            let call = HookCall {
                transcript_path: display.clone(),
                session_id: Some(sid.clone()),
                tool_name: name.clone(),
                tool_input: (**args).clone(),
                tool_use_id: Some(id.clone()),
            };
            let v = guard.check_bytes(&call, prefix.into_bytes()).unwrap();
            assert_eq!(
                said(&v),
                expected(&strikes, policy),
                "{display} event {event} ({name}), {} under {policy}",
                cfg.profile
            );
            calls += 1;
            blocks += usize::from(said(&v) == "block");
        }
    }
    (calls, blocks)
}

fn claude_sessions(corpus: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(corpus.join("claude-code/M-Claude"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files
}

#[test]
fn the_guard_blocks_where_replay_detects_and_never_on_a_clean_session() {
    let Some(corpus) = shared_corpus() else {
        return;
    };
    let labels = std::fs::read_to_string(corpus.join("labels.csv")).unwrap();
    let clean = |stem: &str| {
        labels
            .lines()
            .any(|l| l.starts_with(&format!("{stem},clean,")))
    };
    let mut total_calls = 0;
    let mut total_blocks = 0;
    for (cfg, policy) in configs() {
        for path in claude_sessions(&corpus) {
            let (calls, blocks) = check_transcript(&path, &cfg, policy);
            total_calls += calls;
            total_blocks += blocks;
            // The stock looptune rule with its own policy never blocks a clean session.
            if cfg.profile == "looptune-default" && policy == Policy::Warn(2) {
                let stem = looptune::input::file_stem(&path);
                if clean(&stem) {
                    assert_eq!(blocks, 0, "{stem} is labelled clean");
                }
            }
        }
    }
    assert!(total_calls > 500, "{total_calls} calls checked");
    assert!(
        total_blocks > 0,
        "the guard blocked nowhere: the test cannot fail"
    );
}

#[test]
fn the_hook_blocks_with_exit_2_and_the_reason_on_stderr() {
    // A transcript of Claude Code lines: the same Read call four times,
    // answered; the fifth is pending (already written, as Claude Code does).
    let tmp = tempfile::tempdir().unwrap();
    let mut t = String::new();
    t.push_str(r#"{"type":"user","uuid":"u0","sessionId":"S","message":{"role":"user","content":"fix it"}}"#);
    t.push('\n');
    for i in 1..=5 {
        t.push_str(&format!(
            r#"{{"type":"assistant","uuid":"a{i}","parentUuid":"u{}","sessionId":"S","message":{{"role":"assistant","id":"m{i}","content":[{{"type":"tool_use","id":"t{i}","name":"Read","input":{{"file_path":"/x"}}}}]}}}}"#,
            i - 1
        ));
        t.push('\n');
        if i < 5 {
            t.push_str(&format!(
                r#"{{"type":"user","uuid":"u{i}","parentUuid":"a{i}","sessionId":"S","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t{i}","content":"same"}}]}}}}"#
            ));
            t.push('\n');
        }
    }
    let transcript = write(tmp.path(), "S.jsonl", &t);
    let hook = |id: &str| {
        serde_json::json!({
            "session_id": "S",
            "transcript_path": transcript,
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": "/x"},
            "tool_use_id": id,
        })
        .to_string()
    };
    let run_hook = |args: &[&str], input: String| {
        let mut child = process()
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let guard = [
        "guard",
        "--agent",
        "claude-code",
        "--profile",
        "gemini-latest",
        "--policy",
        "stop",
    ];
    let r = run_hook(&guard, hook("t5"));
    assert_eq!(
        r.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("blocked") && err.contains("Read"), "{err}");
    // The fourth call does not reach the threshold of five.
    let r = run_hook(&guard, hook("t4"));
    assert_eq!(r.status.code(), Some(0));
    assert!(r.stdout.is_empty() && r.stderr.is_empty());
    // warn:1: the first detection is a warning the model reads.
    let warn = [
        "guard",
        "--agent",
        "claude-code",
        "--profile",
        "gemini-latest",
        "--policy",
        "warn:1",
    ];
    let r = run_hook(&warn, hook("t5"));
    assert_eq!(r.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PreToolUse");
    assert!(v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .contains("warning 1 of 1"));
    // Bad hook input never blocks: exit 1 (non-blocking), said on stderr.
    let r = run_hook(&guard, "{\"tool_name\": \"Read\"}".into());
    assert_eq!(r.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&r.stderr).contains("`transcript_path` is missing"));
    // A configuration file from export.
    let toml = tmp.path().join("c.toml");
    assert_ok(&run(&[
        "export",
        "--profile",
        "gemini-latest",
        "--set",
        "policy=stop",
        "--for",
        "looptune",
        "-o",
        toml.to_str().unwrap(),
    ]));
    let r = run_hook(
        &[
            "guard",
            "--agent",
            "claude-code",
            "--config",
            toml.to_str().unwrap(),
        ],
        hook("t5"),
    );
    assert_eq!(r.status.code(), Some(2));
}
