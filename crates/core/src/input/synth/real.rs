//! Sessions shaped like real logs (issue #30): the record mix and the sizes
//! of `../shared/corpus` (106 real sessions, imported), and several native
//! formats among the files, since users feed their agents' own logs.
//!
//! Measured on the real corpus (`looptune import ../shared/corpus`, 23,725
//! records; `benches/README.md` has the table): 21% tool calls, 20% tool
//! results, 17% usage, 16% turns, 12% text, 11% thoughts, 2% user prompts;
//! 1.3 calls per turn (0: 8%, 1: 84%, 2-7: 8%), 12% of results errors. Text
//! lengths are close to log-normal; each kind below is drawn from one with the
//! corpus's median and a spread fitted to its 90th and 99th percentiles:
//!
//! | what | median | p90 | p99 |
//! |---|---|---|---|
//! | call arguments (JSON) | 101 | 655 | 4,367 |
//! | result output | 160 | 2,145 | 20,086 |
//! | model text | 106 | 633 | 4,407 |
//! | thought | 257 | 479 | 1,107 |
//! | user prompt | 40 | 690 | 6,457 |
//!
//! Files: 40% of the sessions in canonical JSONL files of up to 100 sessions
//! each, then one file per session: 30% Claude Code JSONL, 20% Codex rollouts,
//! 10% Gemini CLI session JSON. Labels go to `labels.csv` beside them (the
//! native formats have no place for one). One session in ten loops, from a
//! turn drawn per session: identical calls, a two-call cycle, an error streak
//! with changing arguments, or chanting text.

use super::{Rng, TOOLS, WORDS};
use serde_json::{json, Value};
use std::fmt::Write;

/// One session as the generator plans it, before any format renders it.
struct Plan {
    id: String,
    records: Vec<Rec>,
    /// The onset turn when it loops.
    onset: Option<usize>,
}

enum Rec {
    User(String),
    Turn,
    Thought(String),
    Content(String),
    Call {
        name: &'static str,
        args: Value,
        id: String,
    },
    Result {
        name: &'static str,
        id: String,
        output: String,
        error: bool,
    },
    Usage(u64, u64),
}

/// A standard normal deviate (Box-Muller).
fn normal(r: &mut Rng) -> f64 {
    let u = |r: &mut Rng| ((r.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let (a, b) = (u(r), u(r));
    (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
}

/// A length from a log-normal with this median and spread, within `1..=cap`.
fn length(r: &mut Rng, median: f64, sigma: f64, cap: usize) -> usize {
    ((median * (sigma * normal(r)).exp()) as usize).clamp(1, cap)
}

/// Words (with a newline now and then) up to about `len` bytes.
fn text(r: &mut Rng, len: usize) -> String {
    let mut s = String::with_capacity(len + 16);
    while s.len() < len {
        if !s.is_empty() {
            s.push(if r.chance(0.08) { '\n' } else { ' ' });
        }
        s.push_str(WORDS[r.range(0, WORDS.len() - 1)]);
    }
    s
}

/// Text of a length drawn as [`length`] draws it.
fn sized(r: &mut Rng, median: f64, sigma: f64, cap: usize) -> String {
    let n = length(r, median, sigma, cap);
    text(r, n)
}

/// Arguments of about `len` bytes of JSON: a path, and for longer ones the
/// text an edit or a command carries.
fn args(r: &mut Rng, len: usize) -> Value {
    let path = format!(
        "src/{}_{}.rs",
        WORDS[r.range(0, WORDS.len() - 1)],
        r.range(0, 999)
    );
    if len < 60 {
        json!({ "path": path })
    } else {
        json!({ "path": path, "content": text(r, len - 40) })
    }
}

/// The loop kinds; anything else is clean.
const IDENTICAL: usize = 0;
const CYCLE: usize = 1;
const ERROR_STREAK: usize = 2;
const CHANT: usize = 3;

fn plan(id: String, seed: u64, target_bytes: usize) -> Plan {
    let mut r = Rng::new(seed);
    // One session in ten loops, each kind as often.
    let kind = if r.chance(0.1) { r.range(0, 3) } else { 9 };
    let onset = r.range(3, 12);
    let mut records = vec![Rec::User(sized(&mut r, 40.0, 2.2, 8000))];
    let mut bytes = 0usize;
    let mut turn = 0usize;
    let fixed_args = args(&mut r, 80);
    let chant = "I will now verify the fix and report back to the user. ".repeat(8);
    // A looping session runs a few turns into its loop, whatever its size.
    while bytes < target_bytes || (kind != 9 && turn < onset + 4) {
        turn += 1;
        let looping = kind != 9 && turn >= onset;
        if turn > 1 && r.chance(0.12) {
            let t = sized(&mut r, 40.0, 2.2, 8000);
            bytes += t.len() + 60;
            records.push(Rec::User(t));
        }
        records.push(Rec::Turn);
        if r.chance(0.7) {
            let t = sized(&mut r, 257.0, 0.55, 4000);
            bytes += t.len() + 60;
            records.push(Rec::Thought(t));
        }
        if looping && kind == CHANT {
            bytes += chant.len() + 60;
            records.push(Rec::Content(chant.clone()));
        } else if r.chance(0.77) {
            let t = sized(&mut r, 106.0, 1.4, 16_000);
            bytes += t.len() + 60;
            records.push(Rec::Content(t));
        }
        let calls = match r.range(0, 99) {
            0..=7 => 0,
            8..=91 => 1,
            92..=95 => 2,
            96..=97 => 3,
            _ => r.range(4, 7),
        };
        let calls = if looping && kind != CHANT {
            calls.max(1)
        } else {
            calls
        };
        // Every turn says something, so each format's reader sees it.
        if calls == 0 && !matches!(records.last(), Some(Rec::Thought(_) | Rec::Content(_))) {
            let t = sized(&mut r, 106.0, 1.4, 16_000);
            bytes += t.len() + 60;
            records.push(Rec::Content(t));
        }
        for c in 0..calls {
            let id = format!("call_{turn}_{c}");
            let (name, a, output, error) = if looping && kind == IDENTICAL && c == 0 {
                (
                    "read_file",
                    fixed_args.clone(),
                    "error: no such file or directory".to_string(),
                    true,
                )
            } else if looping && kind == CYCLE && c == 0 {
                let name = if turn.is_multiple_of(2) {
                    "replace"
                } else {
                    "run_shell_command"
                };
                (name, fixed_args.clone(), "build failed".to_string(), true)
            } else if looping && kind == ERROR_STREAK && c == 0 {
                (
                    "run_shell_command",
                    args(&mut r, 80),
                    "error[E0308]: mismatched types".to_string(),
                    true,
                )
            } else {
                let name = TOOLS[r.range(0, TOOLS.len() - 1)];
                let n = length(&mut r, 101.0, 1.5, 32_000);
                let a = args(&mut r, n);
                let out = sized(&mut r, 160.0, 2.05, 64_000);
                (name, a, out, r.chance(0.12))
            };
            bytes += a.to_string().len() + output.len() + 160;
            records.push(Rec::Call {
                name,
                args: a,
                id: id.clone(),
            });
            records.push(Rec::Result {
                name,
                id,
                output,
                error,
            });
        }
        records.push(Rec::Usage(
            (2000 + 900 * turn) as u64,
            r.range(20, 900) as u64,
        ));
        bytes += 80;
    }
    Plan {
        id,
        records,
        onset: (kind != 9).then_some(onset),
    }
}

fn line(out: &mut String, v: &Value) {
    out.push_str(&v.to_string());
    out.push('\n');
}

/// Canonical JSONL, every record tagged with its session.
fn canonical(p: &Plan, out: &mut String) -> u64 {
    let sid = &p.id;
    let mut n = 0u64;
    let mut put = |out: &mut String, mut v: Value| {
        v["session"] = json!(sid);
        line(out, &v);
        n += 1;
    };
    put(
        out,
        json!({"type": "session", "agent": "synth", "model": "gemini-2.5-pro"}),
    );
    for rec in &p.records {
        let v = match rec {
            Rec::User(t) => json!({"type": "user", "text": t}),
            Rec::Turn => json!({"type": "turn"}),
            Rec::Thought(t) => json!({"type": "thought", "text": t}),
            Rec::Content(t) => json!({"type": "content", "text": t}),
            Rec::Call { name, args, id } => {
                json!({"type": "tool_call", "name": name, "args": args, "id": id})
            }
            Rec::Result {
                name,
                id,
                output,
                error,
            } => {
                json!({"type": "tool_result", "id": id, "name": name, "output": output, "error": error})
            }
            Rec::Usage(i, o) => {
                json!({"type": "usage", "input_tokens": i, "output_tokens": o})
            }
        };
        put(out, v);
    }
    n
}

/// Claude Code's project JSONL: one record per content block, the blocks of
/// one response sharing its `message.id`; results come back as user records.
fn claude_code(p: &Plan) -> String {
    let mut out = String::new();
    let mut uuid = 0u32;
    let mut msg = 0u32;
    let mut head = |out: &mut String, ty: &str, message: Value| {
        uuid += 1;
        let v = json!({
            "parentUuid": null, "isSidechain": false, "userType": "external",
            "cwd": "/home/dev/project", "sessionId": p.id, "version": "2.1.6",
            "type": ty, "message": message, "uuid": format!("u{uuid:06}"),
            "timestamp": "2026-01-17T06:04:01.929Z",
        });
        line(out, &v);
    };
    let mut usage = json!({"input_tokens": 1000, "output_tokens": 10});
    // Usage is known once the turn is over; Claude Code repeats it on every
    // block of the response, so the last value of a turn is put on each.
    let usages: Vec<Value> = {
        let mut u = Vec::new();
        let mut cur = None;
        for rec in p.records.iter().rev() {
            if let Rec::Usage(i, o) = rec {
                cur = Some(json!({"input_tokens": i, "output_tokens": o}));
            }
            if let Rec::Turn = rec {
                u.push(cur.take().unwrap_or_else(|| json!({})));
            }
        }
        u.reverse();
        u
    };
    let mut turn = 0usize;
    for rec in &p.records {
        let assistant = |content: Value, msg: u32, usage: &Value| {
            json!({"id": format!("msg_{msg:05}"), "type": "message", "role": "assistant",
                   "model": "claude-sonnet-4-5", "content": [content], "usage": usage})
        };
        match rec {
            Rec::User(t) => head(&mut out, "user", json!({"role": "user", "content": t})),
            Rec::Turn => {
                msg += 1;
                usage = usages.get(turn).cloned().unwrap_or_else(|| json!({}));
                turn += 1;
            }
            Rec::Thought(t) => head(
                &mut out,
                "assistant",
                assistant(
                    json!({"type": "thinking", "thinking": t, "signature": "sig"}),
                    msg,
                    &usage,
                ),
            ),
            Rec::Content(t) => head(
                &mut out,
                "assistant",
                assistant(json!({"type": "text", "text": t}), msg, &usage),
            ),
            Rec::Call { name, args, id } => head(
                &mut out,
                "assistant",
                assistant(
                    json!({"type": "tool_use", "id": id, "name": claude_tool(name), "input": args}),
                    msg,
                    &usage,
                ),
            ),
            Rec::Result {
                id, output, error, ..
            } => head(
                &mut out,
                "user",
                json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id,
                        "content": output, "is_error": error}]}),
            ),
            Rec::Usage(..) => {}
        }
    }
    out
}

fn claude_tool(name: &str) -> &'static str {
    match name {
        "read_file" => "Read",
        "run_shell_command" => "Bash",
        "replace" => "Edit",
        "write_file" => "Write",
        "glob" => "Glob",
        "search_file_content" => "Grep",
        _ => "LS",
    }
}

/// A Codex rollout: `session_meta`, then response items and event messages.
fn codex(p: &Plan) -> String {
    let mut out = String::new();
    let ts = "2026-02-23T11:40:29.277Z";
    line(
        &mut out,
        &json!({"timestamp": ts, "type": "session_meta", "payload": {"id": p.id,
            "timestamp": ts, "cwd": "/home/dev/project", "originator": "codex_cli_rs",
            "cli_version": "0.104.0", "source": "cli", "model_provider": "openai"}}),
    );
    let mut total = 0u64;
    for rec in &p.records {
        let (ty, payload) = match rec {
            Rec::User(t) => (
                "event_msg",
                json!({"type": "user_message", "message": t, "images": []}),
            ),
            Rec::Turn => (
                "turn_context",
                json!({"cwd": "/home/dev/project", "approval_policy": "on-request", "model": "gpt-5-codex"}),
            ),
            Rec::Thought(t) => (
                "response_item",
                json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": t}],
                       "encrypted_content": null}),
            ),
            Rec::Content(t) => (
                "response_item",
                json!({"type": "message", "role": "assistant",
                       "content": [{"type": "output_text", "text": t}]}),
            ),
            Rec::Call { name, args, id } => (
                "response_item",
                json!({"type": "function_call", "name": codex_tool(name),
                       "arguments": args.to_string(), "call_id": id}),
            ),
            Rec::Result {
                id, output, error, ..
            } => (
                "response_item",
                json!({"type": "function_call_output", "call_id": id,
                       "output": json!({"output": output,
                           "metadata": {"exit_code": if *error { 1 } else { 0 }, "duration_seconds": 0.1}})
                           .to_string()}),
            ),
            Rec::Usage(i, o) => {
                total += i + o;
                (
                    "event_msg",
                    json!({"type": "token_count", "info": {
                        "total_token_usage": {"input_tokens": total, "output_tokens": 0},
                        "last_token_usage": {"input_tokens": i, "output_tokens": o}}}),
                )
            }
        };
        line(
            &mut out,
            &json!({"timestamp": ts, "type": ty, "payload": payload}),
        );
    }
    out
}

fn codex_tool(name: &str) -> &'static str {
    match name {
        "replace" | "write_file" => "apply_patch",
        "read_file" => "read_file",
        _ => "shell",
    }
}

/// A Gemini CLI session file: one JSON document of messages; a model
/// message holds the turn's thoughts, text, calls (with their results) and
/// tokens.
fn gemini_cli(p: &Plan) -> String {
    let mut messages: Vec<Value> = Vec::new();
    let mut n = 0u32;
    let mut cur: Option<Value> = None;
    let flush = |cur: &mut Option<Value>, messages: &mut Vec<Value>| {
        if let Some(m) = cur.take() {
            messages.push(m);
        }
    };
    for rec in &p.records {
        n += 1;
        match rec {
            Rec::User(t) => {
                flush(&mut cur, &mut messages);
                messages.push(
                    json!({"id": format!("m{n}"), "timestamp": "2025-12-24T06:29:29.266Z",
                    "type": "user", "content": t}),
                );
            }
            Rec::Turn => {
                flush(&mut cur, &mut messages);
                cur = Some(
                    json!({"id": format!("m{n}"), "timestamp": "2025-12-24T06:29:31.266Z",
                    "type": "gemini", "content": "", "thoughts": [], "toolCalls": [],
                    "model": "gemini-2.5-pro"}),
                );
            }
            _ => {
                let Some(m) = cur.as_mut() else { continue };
                match rec {
                    Rec::Thought(t) => m["thoughts"]
                        .as_array_mut()
                        .expect("an array")
                        .push(json!({"subject": "Planning", "description": t,
                            "timestamp": "2025-12-24T06:29:30.000Z"})),
                    Rec::Content(t) => {
                        let joined = format!("{}{t}", m["content"].as_str().unwrap_or(""));
                        m["content"] = json!(joined);
                    }
                    Rec::Call { name, args, id } => {
                        m["toolCalls"].as_array_mut().expect("an array").push(
                            json!({"id": id, "name": name, "args": args, "status": "success",
                            "timestamp": "2025-12-24T06:29:30.500Z"}),
                        )
                    }
                    Rec::Result {
                        id, output, error, ..
                    } => {
                        let calls = m["toolCalls"].as_array_mut().expect("an array");
                        if let Some(c) = calls.iter_mut().find(|c| c["id"] == json!(id)) {
                            let key = if *error { "error" } else { "output" };
                            c["result"] = json!([{"functionResponse": {"id": id,
                                "name": c["name"], "response": {key: output}}}]);
                            c["status"] = json!(if *error { "error" } else { "success" });
                        }
                    }
                    Rec::Usage(i, o) => {
                        m["tokens"] = json!({"input": i, "output": o, "cached": 0,
                            "thoughts": 0, "tool": 0, "total": i + o});
                    }
                    Rec::User(_) | Rec::Turn => {}
                }
            }
        }
    }
    flush(&mut cur, &mut messages);
    let doc = json!({"sessionId": p.id, "projectHash": "86bc0e27f2bad5ee",
        "startTime": "2025-12-24T06:27:57.752Z", "lastUpdated": "2025-12-24T06:40:49.587Z",
        "messages": messages});
    serde_json::to_string_pretty(&doc).expect("JSON serialises")
}

/// The turn a reader that infers turns (a new one at the first model record
/// after a prompt or a result) gives the start of planned turn `turn`.
fn implicit_turn(p: &Plan, turn: usize) -> usize {
    let (mut planned, mut inferred, mut boundary) = (0, 0, true);
    for rec in &p.records {
        match rec {
            Rec::Turn => planned += 1,
            Rec::User(_) | Rec::Result { .. } => boundary = true,
            Rec::Thought(_) | Rec::Content(_) | Rec::Call { .. } => {
                if boundary {
                    inferred += 1;
                    boundary = false;
                }
                if planned == turn {
                    return inferred;
                }
            }
            Rec::Usage(..) => {}
        }
    }
    inferred
}

/// Session `i`'s seed.
fn session_seed(seed: u64, i: usize) -> u64 {
    seed ^ (i as u64).wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// What [`write_corpus`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub files: u64,
    pub bytes: u64,
}

/// Write `n` real-shaped sessions of about `bytes` canonical bytes each into
/// `dir` (see the module docs for the formats), with `labels.csv`.
pub fn write_corpus(
    dir: &std::path::Path,
    n: usize,
    bytes: usize,
    seed: u64,
) -> std::io::Result<Written> {
    std::fs::create_dir_all(dir)?;
    let mut w = Written { files: 0, bytes: 0 };
    let put = |name: String, text: &str, w: &mut Written| -> std::io::Result<()> {
        std::fs::write(dir.join(name), text)?;
        w.files += 1;
        w.bytes += text.len() as u64;
        Ok(())
    };
    let mut labels = String::from("session,label,onset_turn\n");
    let mut canon = String::new();
    let mut in_file = 0usize;
    for i in 0..n {
        // Formats by session number: 4 in 10 canonical, then 3, 2, 1. A
        // native file's session is named by its file's stem.
        let format = i % 10;
        let id = match format {
            0..=6 => format!("r{i:06}"),
            7..=8 => format!("rollout-2026-02-23T12-40-23-r{i:06}"),
            _ => format!("session-r{i:06}"),
        };
        let p = plan(id, session_seed(seed, i), bytes);
        // Codex marks no turns: its reader starts one at the first model
        // record after a prompt or a result, so the label names that turn.
        let onset = match format {
            7..=8 => p.onset.map(|t| implicit_turn(&p, t)),
            _ => p.onset,
        };
        match onset {
            Some(t) => {
                let _ = writeln!(labels, "{},loop,{t}", p.id);
            }
            None => {
                let _ = writeln!(labels, "{},clean,", p.id);
            }
        }
        match format {
            0..=3 => {
                canonical(&p, &mut canon);
                in_file += 1;
                if in_file == 100 {
                    put(format!("canonical-{i:06}.jsonl"), &canon, &mut w)?;
                    canon.clear();
                    in_file = 0;
                }
            }
            4..=6 => put(format!("{}.jsonl", p.id), &claude_code(&p), &mut w)?,
            7..=8 => put(format!("{}.jsonl", p.id), &codex(&p), &mut w)?,
            _ => put(format!("{}.json", p.id), &gemini_cli(&p), &mut w)?,
        }
    }
    if !canon.is_empty() {
        put(format!("canonical-{n:06}.jsonl"), &canon, &mut w)?;
    }
    std::fs::write(dir.join("labels.csv"), labels)?;
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every format reads back to the planned session: its id, and as many
    /// tool calls, results, thoughts and prompts.
    #[test]
    fn every_format_reads_back_with_the_planned_records() {
        let dir = tempfile::tempdir().unwrap();
        write_corpus(dir.path(), 60, 20_000, 3).unwrap();
        let corpus = crate::input::read_corpus(
            &[dir.path().to_path_buf()],
            &crate::input::ReadOptions::default(),
        )
        .unwrap();
        assert_eq!(corpus.sessions.len(), 60);
        assert!(corpus.skipped.is_empty(), "{:?}", corpus.skipped);
        let formats: std::collections::BTreeSet<&str> =
            corpus.files.iter().map(|f| f.format.as_str()).collect();
        assert_eq!(
            formats.into_iter().collect::<Vec<_>>(),
            ["canonical", "claude-code", "codex", "gemini-cli"]
        );
        // labels.csv names every session by the id the reader gives it.
        let labels = std::fs::read_to_string(dir.path().join("labels.csv")).unwrap();
        let mut named: Vec<&str> = labels
            .lines()
            .skip(1)
            .map(|l| l.split(',').next().unwrap())
            .collect();
        named.sort_unstable();
        let ids: Vec<&str> = corpus.sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(named, ids);
        // Every onset lies within its session, in each reader's turns.
        for l in labels.lines().skip(1) {
            let f: Vec<&str> = l.split(',').collect();
            if let Ok(onset) = f[2].parse::<u32>() {
                let s = corpus.sessions.iter().find(|s| s.id == f[0]).unwrap();
                assert!(onset + 3 <= s.turns, "{l}: {} turns", s.turns);
            }
        }
        for s in &corpus.sessions {
            let i: usize = s.id[s.id.len() - 6..].parse().unwrap();
            let p = plan(s.id.clone(), session_seed(3, i), 20_000);
            let count = |f: &dyn Fn(&Rec) -> bool| p.records.iter().filter(|r| f(r)).count();
            let have = |t: &str| {
                s.events
                    .iter()
                    .filter(|e| e.record.type_name() == t)
                    .count()
            };
            assert_eq!(
                have("tool_call"),
                count(&|r| matches!(r, Rec::Call { .. })),
                "{}",
                s.id
            );
            assert_eq!(
                have("tool_result"),
                count(&|r| matches!(r, Rec::Result { .. }))
            );
            assert_eq!(have("user"), count(&|r| matches!(r, Rec::User(_))));
            assert_eq!(
                have("thought"),
                count(&|r| matches!(r, Rec::Thought(_))),
                "{}",
                s.id
            );
        }
    }

    /// The mix is the real corpus's, within a few points.
    #[test]
    fn the_record_mix_is_the_real_corpus_s() {
        let mut out = String::new();
        for i in 0..200 {
            canonical(&plan(format!("x{i}"), i, 60_000), &mut out);
        }
        let total = out.lines().count() as f64;
        let share = |t: &str| {
            out.lines()
                .filter(|l| l.starts_with(&format!("{{\"type\":\"{t}\"")))
                .count() as f64
                / total
        };
        for (t, want) in [
            ("tool_call", 0.21),
            ("tool_result", 0.21),
            ("usage", 0.17),
            ("turn", 0.16),
            ("content", 0.12),
            ("thought", 0.11),
        ] {
            assert!(
                (share(t) - want).abs() < 0.04,
                "{t}: {} against {want}",
                share(t)
            );
        }
    }

    #[test]
    fn deterministic() {
        let a = claude_code(&plan("a".into(), 5, 20_000));
        assert_eq!(a, claude_code(&plan("a".into(), 5, 20_000)));
    }
}
