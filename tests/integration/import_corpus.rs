//! The importers on the real corpus in `../shared/corpus`: every file imports,
//! per-format counts agree with counts taken here from the raw files with plain
//! serde_json, and turn numbering and session ids agree with `labels.csv`.

use crate::util::shared_corpus;
use looptune::event::{Corpus, Record};
use looptune::input::{read_corpus, ReadOptions};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

fn read(paths: &[PathBuf], lenient: bool) -> Corpus {
    let opts = ReadOptions {
        lenient,
        ..Default::default()
    };
    read_corpus(paths, &opts).unwrap_or_else(|e| panic!("{e}"))
}

/// Files under `dir` with one of the extensions, in byte order of paths.
fn files(dir: &Path, exts: &[&str]) -> Vec<PathBuf> {
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.retain(|p| {
        let n = p.file_name().unwrap().to_string_lossy().to_string();
        exts.iter().any(|e| n.ends_with(e))
    });
    out.sort();
    out
}

fn stem(p: &Path) -> String {
    let n = p.file_name().unwrap().to_string_lossy().to_string();
    match n.rfind('.') {
        Some(i) => n[..i].to_string(),
        None => n,
    }
}

fn json_lines(p: &Path) -> (Vec<Value>, usize) {
    let text = std::fs::read_to_string(p).unwrap();
    let mut ok = Vec::new();
    let mut broken = 0;
    for l in text.lines() {
        if l.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(l) {
            Ok(v) => ok.push(v),
            Err(_) => broken += 1,
        }
    }
    (ok, broken)
}

fn doc(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Sessions, turns, tool calls and errored tool results.
#[derive(Debug, Default, PartialEq, Eq, Clone, Copy)]
struct Counts {
    sessions: usize,
    turns: u64,
    calls: usize,
    errors: usize,
}

fn imported(c: &Corpus) -> Counts {
    let mut n = Counts {
        sessions: c.sessions.len(),
        turns: c.turns(),
        ..Default::default()
    };
    for s in &c.sessions {
        n.calls += s.tool_calls();
        n.errors += s
            .events
            .iter()
            .filter(|e| {
                matches!(
                    e.record,
                    Record::ToolResult {
                        error: Some(true),
                        ..
                    }
                )
            })
            .count();
    }
    n
}

fn str_of<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

fn claude_counts(dir: &Path) -> Counts {
    let mut n = Counts::default();
    let mut ids: HashSet<String> = HashSet::new();
    let mut uuids: HashSet<String> = HashSet::new();
    let mut turns: HashSet<(String, String)> = HashSet::new();
    for f in files(dir, &[".jsonl"]) {
        let (recs, _) = json_lines(&f);
        let convo: Vec<&Value> = recs
            .iter()
            .filter(|r| matches!(str_of(r, "type"), "user" | "assistant"))
            .collect();
        let key = |r: &Value| {
            let side = r.get("isSidechain").and_then(Value::as_bool) == Some(true);
            (
                str_of(r, "sessionId").to_string(),
                side.then(|| str_of(r, "agentId").to_string()),
            )
        };
        let groups: HashSet<_> = convo.iter().map(|r| key(r)).collect();
        for r in convo {
            let (sid, agent) = key(r);
            let id = if groups.len() == 1 {
                stem(&f)
            } else {
                agent.map_or(sid, |a| format!("agent-{a}"))
            };
            ids.insert(id.clone());
            if !uuids.insert(str_of(r, "uuid").to_string()) {
                continue;
            }
            let msg = &r["message"];
            let blocks: Vec<&Value> = msg
                .get("content")
                .and_then(Value::as_array)
                .map(|a| a.iter().collect())
                .unwrap_or_default();
            if str_of(r, "type") == "assistant" {
                if r.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true)
                    || str_of(msg, "model") == "<synthetic>"
                {
                    continue;
                }
                turns.insert((id, str_of(msg, "id").to_string()));
                n.calls += blocks
                    .iter()
                    .filter(|b| str_of(b, "type") == "tool_use")
                    .count();
            } else {
                n.errors += blocks
                    .iter()
                    .filter(|b| {
                        str_of(b, "type") == "tool_result"
                            && b.get("is_error").and_then(Value::as_bool) == Some(true)
                    })
                    .count();
            }
        }
    }
    n.sessions = ids.len();
    n.turns = turns.len() as u64;
    n
}

fn exit_code_in(text: &str) -> Option<i64> {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        if v.get("output").is_some_and(Value::is_string) {
            return v["metadata"]["exit_code"].as_i64();
        }
    }
    for marker in ["Process exited with code ", "Exit code: "] {
        if let Some(i) = text.find(marker) {
            let rest: String = text[i + marker.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            return rest.parse().ok();
        }
    }
    None
}

fn codex_counts(dir: &Path) -> Counts {
    let mut n = Counts::default();
    for f in files(dir, &[".jsonl"]) {
        n.sessions += 1;
        let (lines, _) = json_lines(&f);
        let mut armed = true;
        for l in &lines {
            let p = &l["payload"];
            let pt = str_of(p, "type");
            let model_event = match (str_of(l, "type"), pt) {
                ("response_item", "message") => {
                    str_of(p, "role") == "assistant"
                        && p["content"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .any(|c| !str_of(c, "text").is_empty())
                }
                ("response_item", "reasoning") => ["summary", "content"].iter().any(|k| {
                    p[*k]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|c| !str_of(c, "text").is_empty())
                }),
                (
                    "response_item",
                    "function_call" | "custom_tool_call" | "local_shell_call" | "web_search_call",
                ) => {
                    n.calls += 1;
                    true
                }
                ("response_item", "function_call_output" | "custom_tool_call_output") => {
                    armed = true;
                    if exit_code_in(str_of(p, "output")).is_some_and(|c| c != 0) {
                        n.errors += 1;
                    }
                    false
                }
                ("event_msg", "user_message") => {
                    armed = true;
                    false
                }
                _ => false,
            };
            if model_event && armed {
                n.turns += 1;
                armed = false;
            }
        }
    }
    n
}

fn gemini_counts(dir: &Path) -> Counts {
    let mut n = Counts::default();
    for f in files(dir, &[".json"]) {
        n.sessions += 1;
        for m in doc(&f)["messages"].as_array().unwrap() {
            if str_of(m, "type") != "gemini" {
                continue;
            }
            n.turns += 1;
            for c in m
                .get("toolCalls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                n.calls += 1;
                if c.get("status").is_some_and(|s| s != "success") {
                    n.errors += 1;
                }
            }
        }
    }
    n
}

const OH_SKIP: &[&str] = &[
    "system",
    "recall",
    "change_agent_state",
    "null",
    "loop_recovery",
];

fn openhands_history(events: &[Value], n: &mut Counts) {
    let legacy = events
        .iter()
        .any(|e| e.get("source").is_none() && e.get("id").is_none());
    let mut responses: HashSet<String> = HashSet::new();
    let mut seen_user = false;
    for e in events {
        if let Some(a) = e.get("action").and_then(Value::as_str) {
            if OH_SKIP.contains(&a) {
                continue;
            }
            if legacy {
                if !seen_user && a == "message" {
                    seen_user = true;
                    continue;
                }
            } else if str_of(e, "source") != "agent" {
                continue;
            }
            let rid = e
                .pointer("/tool_call_metadata/model_response/id")
                .and_then(Value::as_str);
            if rid.is_none_or(|r| responses.insert(r.to_string())) {
                n.turns += 1;
            }
            if a != "message" && a != "think" {
                n.calls += 1;
            }
        } else if let Some(o) = e.get("observation").and_then(Value::as_str) {
            if ["recall", "agent_state_changed", "null", "think"].contains(&o)
                || str_of(e, "source") == "user"
            {
                continue;
            }
            let code = e
                .pointer("/extras/metadata/exit_code")
                .or_else(|| e.get("exit_code"))
                .and_then(Value::as_i64);
            let content = str_of(e, "content");
            if content.contains("AgentStuckInLoopError") {
                continue;
            }
            if o == "error"
                || code.is_some_and(|c| c != 0 && c != -1)
                || content.starts_with("ERROR:")
            {
                n.errors += 1;
            }
        }
    }
}

fn openhands_counts(dir: &Path) -> Counts {
    let mut n = Counts::default();
    for f in files(dir, &[".json"]) {
        n.sessions += 1;
        openhands_history(doc(&f).as_array().unwrap(), &mut n);
    }
    for f in files(dir, &[".jsonl"]) {
        for line in json_lines(&f).0 {
            n.sessions += 1;
            openhands_history(line["history"].as_array().unwrap(), &mut n);
        }
    }
    n
}

fn swe_counts(dir: &Path) -> Counts {
    let mut n = Counts::default();
    for f in files(dir, &[".traj"]) {
        n.sessions += 1;
        let d = doc(&f);
        match d.get("trajectory").and_then(Value::as_array) {
            Some(t) => {
                n.turns += t.len() as u64;
                // One call per step: the history's tool calls or the text action.
                n.calls += t.len();
            }
            None => {
                for m in d["history"].as_array().unwrap() {
                    if str_of(m, "role") == "assistant"
                        && m.get("is_demo").and_then(Value::as_bool) != Some(true)
                    {
                        n.turns += 1;
                        n.calls += m["tool_calls"].as_array().map_or(1, Vec::len);
                    }
                }
            }
        }
    }
    n
}

fn chat_counts(dir: &Path) -> Counts {
    let mut n = Counts::default();
    for f in files(dir, &[".traj.json"]) {
        n.sessions += 1;
        for m in doc(&f)["messages"].as_array().unwrap() {
            match str_of(m, "role") {
                "assistant" => {
                    n.turns += 1;
                    n.calls += m
                        .get("tool_calls")
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len);
                }
                "tool"
                    if m.pointer("/extra/returncode")
                        .and_then(Value::as_i64)
                        .is_some_and(|c| c != 0) =>
                {
                    n.errors += 1;
                }
                _ => {}
            }
        }
    }
    n
}

#[test]
fn per_format_counts_agree_with_raw_counts() {
    let Some(root) = shared_corpus() else { return };
    type Counter = fn(&Path) -> Counts;
    let formats: [(&str, Counter, bool); 6] = [
        ("claude-code", claude_counts, true),
        ("codex", codex_counts, false),
        ("gemini-cli", gemini_counts, false),
        ("openhands", openhands_counts, false),
        ("swe-agent", swe_counts, false),
        ("openai-chat", chat_counts, false),
    ];
    for (name, count, lenient) in formats {
        let dir = root.join(name);
        let got = imported(&read(std::slice::from_ref(&dir), lenient));
        let want = count(&dir);
        println!("{name}: {got:?}");
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn totals_per_format_match_the_corpus_readme() {
    let Some(root) = shared_corpus() else { return };
    // README cross-check (Claude Code there counts f225835b twice: 1498 = 1480 + 18).
    let want: [(&str, usize, u64, bool); 6] = [
        ("claude-code", 33, 1480, true),
        ("codex", 9, 574, false),
        ("gemini-cli", 25, 986, false),
        ("openhands", 9, 145, false),
        ("swe-agent", 18, 186, false),
        ("openai-chat", 12, 969, false),
    ];
    for (name, sessions, turns, lenient) in want {
        let c = read(&[root.join(name)], lenient);
        assert_eq!((c.sessions.len(), c.turns()), (sessions, turns), "{name}");
    }
}

#[test]
fn every_file_imports_and_damaged_claude_lines_are_counted() {
    let Some(root) = shared_corpus() else { return };
    // Strict mode: everything but the M-Claude archive, which redaction damaged.
    for name in [
        "codex",
        "gemini-cli",
        "openhands",
        "swe-agent",
        "openai-chat",
        "claude-code/codemie-code",
    ] {
        let c = read(&[root.join(name)], false);
        assert!(c.files.iter().all(|f| f.format != "canonical"), "{name}");
    }
    let m_claude = root.join("claude-code/M-Claude");
    for f in files(&m_claude, &[".jsonl"]) {
        let broken = json_lines(&f).1;
        let strict = read_corpus(std::slice::from_ref(&f), &ReadOptions::default());
        if broken == 0 {
            assert!(strict.is_ok(), "{}: {:?}", f.display(), strict.err());
        } else {
            let e = strict
                .expect_err("damaged lines fail in strict mode")
                .to_string();
            assert!(e.contains("not valid JSON"), "{e}");
        }
        let c = read(std::slice::from_ref(&f), true);
        assert_eq!(c.files[0].format, "claude-code");
        assert_eq!(c.files[0].skipped_lines as usize, broken, "{}", f.display());
    }
    // A walk over the whole corpus skips the one non-log file with a note.
    let all = read(std::slice::from_ref(&root), true);
    let notes: Vec<&looptune::event::Skip> = all.skipped.iter().filter(|s| s.is_file()).collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].file().ends_with("manifest.json"));
    assert!(notes[0]
        .to_string()
        .contains("manifest.json: skipped file ("));
    // The README's 105 data files include that manifest.
    assert_eq!(all.files.len(), 104);
    assert_eq!(all.sessions.len(), 106);
}

/// `labels.csv` rows: session id -> n_turns from the note.
fn labels(root: &Path) -> BTreeMap<String, u32> {
    let mut r = csv::Reader::from_path(root.join("labels.csv")).unwrap();
    let mut out = BTreeMap::new();
    for rec in r.records() {
        let rec = rec.unwrap();
        let note = &rec[4];
        let i = note.find("n_turns=").expect("note has n_turns") + "n_turns=".len();
        let n: u32 = note[i..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap();
        out.insert(rec[0].to_string(), n);
    }
    out
}

#[test]
fn session_ids_and_turns_match_labels() {
    let Some(root) = shared_corpus() else { return };
    let want = labels(&root);
    assert_eq!(want.len(), 106);
    let c = read(std::slice::from_ref(&root), true);
    let got: HashMap<&str, u32> = c
        .sessions
        .iter()
        .map(|s| (s.id.as_str(), s.turns))
        .collect();
    let mut bad = Vec::new();
    for (id, n) in &want {
        match got.get(id.as_str()) {
            None => bad.push(format!("{id}: missing")),
            Some(t) if t != n => bad.push(format!("{id}: {t} turns, label says {n}")),
            _ => {}
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // Every imported session is labelled (the corpus has no unlabelled session).
    let extra: Vec<&&str> = got.keys().filter(|id| !want.contains_key(**id)).collect();
    assert!(extra.is_empty(), "{extra:?}");
}

#[test]
fn claude_resume_copy_merges_and_subagents_keep_their_stem() {
    let Some(root) = shared_corpus() else { return };
    let c = read(&[root.join("claude-code")], true);
    let by: HashMap<&str, _> = c.sessions.iter().map(|s| (s.id.as_str(), s)).collect();
    assert_eq!(by["f225835b-3612-4093-903f-bd4538fb7cb9"].turns, 18);
    assert_eq!(by["ff33b5b0-cc51-4271-a3eb-545a85882e5f"].turns, 6);
    let sub = by["agent-abc3cb6"];
    assert_eq!(
        sub.meta.meta["parent_session"],
        "abc757d1-3da3-42fb-bb7b-ffa293a4ba29"
    );
    assert!(sub.whole_messages);
    // The loop session: 81 `swift build` calls.
    let l = by["554b9fa6-f719-40e8-ba70-beee69bd60b5"];
    let swift = l
        .events
        .iter()
        .filter(|e| matches!(&e.record, Record::ToolCall { name, args, .. } if name == "Bash" && args["command"] == "swift build"))
        .count();
    assert_eq!(swift, 81);
}

#[test]
fn clashing_stems_get_parent_folders() {
    let Some(root) = shared_corpus() else { return };
    let c = read(&[root.join("openai-chat"), root.join("swe-agent")], false);
    let ids: HashSet<&str> = c.sessions.iter().map(|s| s.id.as_str()).collect();
    for id in [
        "deepseek_lite_dev/marshmallow-code__marshmallow-1343.traj",
        "deepseek_bench_dev/marshmallow-code__marshmallow-1343.traj",
        "deepseek_lite_dev/sqlfluff__sqlfluff-2419.traj",
        "replay__marshmallow-code__marshmallow-1867__function_calling__install-1/marshmallow-code__marshmallow-1867",
        "pvlib__pvlib-python-1854.traj",
    ] {
        assert!(ids.contains(id), "{id}");
    }
}

#[test]
fn codex_sanitised_arguments_stay_raw() {
    let Some(root) = shared_corpus() else { return };
    let c = read(&[root.join("codex/localpush")], false);
    let raw = c
        .sessions
        .iter()
        .flat_map(|s| &s.events)
        .filter(|e| matches!(&e.record, Record::ToolCall { args, .. } if args.get("_raw").is_some_and(|r| r.as_str().unwrap().starts_with("[REDACTED_ARGUMENTS"))))
        .count();
    assert!(raw > 600, "{raw}");
}

#[test]
fn whole_corpus_round_trips_through_the_canonical_writer() {
    let Some(root) = shared_corpus() else { return };
    let c = read(&[root], true);
    let mut buf = Vec::new();
    looptune::input::import::write_canonical(&c, &mut buf, false).unwrap();
    let back = looptune::input::parse_canonical("out.jsonl", "out", &buf, false).unwrap();
    assert_eq!(back.sessions.len(), c.sessions.len());
    let by: HashMap<&str, &Vec<looptune::event::Event>> = back
        .sessions
        .iter()
        .map(|(id, r)| (id.as_str(), r))
        .collect();
    for s in &c.sessions {
        let recs = by[s.id.as_str()];
        assert_eq!(recs.len(), s.events.len(), "{}", s.id);
        // Skip the first session record: it also carries metadata from outside the records.
        for (i, (r, e)) in recs.iter().zip(&s.events).enumerate().skip(1) {
            assert_eq!(r.record, e.record, "{} record {i}", s.id);
        }
    }
}
