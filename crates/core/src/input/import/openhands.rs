//! OpenHands event trajectories (a JSON array of events, as saved by the GUI
//! or `save_trajectory_path`) and evaluation `output.jsonl` files (one instance
//! per line, events under `history`, current or legacy flat event form)
//! mapped onto canonical records, including its stuck detector's verdicts.

use super::common::{
    args_from_value, doc_of, element_lines, lines, parse_object, pointer, s, session_rec, text_of,
    Ctx, FieldError, Out, RecordError,
};
use crate::error::Result;
use crate::event::Record;
use serde_json::{Map, Value};
use std::collections::HashSet;

/// Agent actions that are bookkeeping, not model output.
const SKIP_ACTIONS: &[&str] = &[
    "system",
    "recall",
    "change_agent_state",
    "null",
    "loop_recovery",
    "condensation",
    "condensation_request",
    "pause",
    "resume",
    "stop",
];
/// Observations that answer no model tool call.
const SKIP_OBS: &[&str] = &["recall", "agent_state_changed", "null", "think", "condense"];
/// Action arguments that are harness bookkeeping rather than tool arguments.
const META_ARGS: &[&str] = &[
    "thought",
    "impl_source",
    "translated_ipython_code",
    "confirmation_state",
    "hidden",
    "blocking",
    "security_risk",
];
/// Top-level fields of legacy flat actions that are not tool arguments.
const LEGACY_META: &[&str] = &[
    "action",
    "thought",
    "keep_prompt",
    "is_confirmed",
    "action_risk",
    "impl_source",
    "confirmation_state",
    "security_risk",
    "hidden",
    "blocking",
    "translated_ipython_code",
];

fn is_event(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|m| m.contains_key("action") || m.contains_key("observation"))
}

fn is_instance(m: &Map<String, Value>) -> bool {
    m.get("history")
        .and_then(Value::as_array)
        .is_some_and(|h| h.iter().all(|e| is_event(e) || e.is_array()))
        && (m.contains_key("instance_id")
            || m.contains_key("issue")
            || m.contains_key("instruction"))
}

/// Whether a whole JSON document is an OpenHands trajectory or eval instance.
pub(crate) fn sniff_doc(v: &Value) -> bool {
    match v {
        Value::Array(a) => !a.is_empty() && a.iter().all(is_event),
        Value::Object(m) => is_instance(m),
        _ => false,
    }
}

/// Whether a JSONL line is an OpenHands eval instance.
pub(crate) fn sniff_line(m: &Map<String, Value>) -> bool {
    is_instance(m)
}

/// Import a trajectory file or an eval output file.
pub(crate) fn import(ctx: &Ctx) -> Result<crate::input::format::FileSessions> {
    let mut out = Out::new("openhands");
    match doc_of(ctx) {
        Ok(Value::Array(events)) => {
            let lines = element_lines(ctx.bytes, None);
            let sid = ctx.stem.to_string();
            let model = first_model(&events);
            out.open(&sid);
            out.push(
                &sid,
                session_rec("openhands", model, Map::new()),
                lines.first().copied().unwrap_or(0),
            );
            let at = |i: usize| lines.get(i).copied().unwrap_or(0);
            let ptrs: Vec<String> = (0..events.len()).map(|i| pointer(&[i])).collect();
            if let Err(e) = history(&mut out, &sid, &events, &at, &ptrs) {
                return Err(ctx.file_err(e.to_string()));
            }
        }
        Ok(Value::Object(m)) if is_instance(&m) => {
            let line = ctx
                .bytes
                .iter()
                .position(|b| !b.is_ascii_whitespace())
                .map_or(1, |p| {
                    ctx.bytes[..p].iter().filter(|b| **b == b'\n').count() as u32 + 1
                });
            if let Err(e) = instance(&mut out, ctx.stem, line, &m) {
                out.bad(ctx, line as u64, e)?;
            }
        }
        _ => {
            for (line, text) in lines(ctx.bytes) {
                let r = parse_object(text).and_then(|m| instance(&mut out, ctx.stem, line, &m));
                if let Err(e) = r {
                    out.bad(ctx, line as u64, e)?;
                }
            }
        }
    }
    Ok(out.finish())
}

fn first_model(events: &[Value]) -> Option<String> {
    events.iter().find_map(|e| {
        e.get("tool_call_metadata")?
            .get("model_response")?
            .get("model")?
            .as_str()
            .map(str::to_string)
    })
}

/// One eval instance (one line of `output.jsonl`).
fn instance(
    out: &mut Out,
    stem: &str,
    line: u32,
    m: &Map<String, Value>,
) -> std::result::Result<(), RecordError> {
    let events = match m.get("history") {
        Some(Value::Array(h)) => h,
        Some(_) => return Err(FieldError::ty("history", "an array").into()),
        None => return Err(FieldError::Missing("history".into()).into()),
    };
    // Some eval versions store history as [action, observation] pairs.
    let flat: Vec<Value> = events
        .iter()
        .flat_map(|e| match e {
            Value::Array(pair) => pair.clone(),
            other => vec![other.clone()],
        })
        .collect();
    // The JSON pointer of every flattened event inside this line or document.
    let ptrs: Vec<String> = events
        .iter()
        .enumerate()
        .flat_map(|(i, e)| match e {
            Value::Array(pair) => (0..pair.len())
                .map(|j| pointer(&["history".to_string(), i.to_string(), j.to_string()]))
                .collect(),
            _ => vec![pointer(&["history".to_string(), i.to_string()])],
        })
        .collect();
    let sid = if let Some(id) = m.get("instance_id").filter(|v| !v.is_null()) {
        match id {
            Value::String(t) => t.clone(),
            other => other.to_string(),
        }
    } else if let Some(issue) = m.get("issue").and_then(Value::as_object) {
        let part = |k: &str| match issue.get(k) {
            Some(Value::String(t)) => t.clone(),
            Some(v) if !v.is_null() => v.to_string(),
            _ => String::new(),
        };
        format!("{}/{}#{}", part("owner"), part("repo"), part("number"))
    } else {
        stem.to_string()
    };
    let md = m.get("metadata").and_then(Value::as_object);
    let model = md
        .and_then(|x| x.get("llm_config"))
        .and_then(|c| c.get("model"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| first_model(&flat));
    let mut meta = Map::new();
    if let Some(md) = md {
        for f in ["agent_class", "max_iterations"] {
            if let Some(v) = md.get(f).filter(|v| !v.is_null()) {
                meta.insert(f.to_string(), v.clone());
            }
        }
    }
    for f in ["instance_id", "error"] {
        if let Some(v) = m.get(f).filter(|v| !v.is_null()) {
            meta.insert(f.to_string(), v.clone());
        }
    }
    out.at(None);
    out.open(&sid);
    out.push(&sid, session_rec("openhands", model, meta), line);
    let legacy = flat
        .iter()
        .any(|e| e.is_object() && e.get("source").is_none() && e.get("id").is_none());
    if legacy {
        legacy_history(out, &sid, &flat, line, &ptrs)?;
    } else {
        history(out, &sid, &flat, &|_| line, &ptrs)?;
    }
    out.at(None);
    // The run's final error may name the stuck detector.
    if let Some(err) = s(m, "error") {
        if names_stuck(err) {
            out.push(
                &sid,
                Record::LoopDetected {
                    kind: Some("openhands-stuck-detector".into()),
                    detail: Some(err.to_string()),
                },
                line,
            );
        }
    }
    Ok(())
}

fn names_stuck(t: &str) -> bool {
    t.contains("AgentStuckInLoopError") || t.contains("Agent got stuck in a loop")
}

/// Current event form: `id`, `source`, `action`/`observation`, `args`/`extras`.
fn history(
    out: &mut Out,
    sid: &str,
    events: &[Value],
    at: &dyn Fn(usize) -> u32,
    ptrs: &[String],
) -> std::result::Result<(), RecordError> {
    let mut responses: HashSet<String> = HashSet::new();
    for (i, e) in events.iter().enumerate() {
        let line = at(i);
        out.at(ptrs.get(i).cloned());
        let Some(e) = e.as_object() else {
            return Err(FieldError::ty(&format!("history[{i}]"), "an object").into());
        };
        let source = s(e, "source").unwrap_or("");
        let empty = Map::new();
        let args = e.get("args").and_then(Value::as_object).unwrap_or(&empty);
        let meta = e.get("tool_call_metadata").and_then(Value::as_object);
        if let Some(action) = s(e, "action") {
            if SKIP_ACTIONS.contains(&action) {
                continue;
            }
            if source == "user" || source == "environment" {
                if action == "message" {
                    out.push(
                        sid,
                        Record::User {
                            text: s(args, "content").unwrap_or_default().to_string(),
                            prompt_id: e.get("id").map(id_text),
                        },
                        line,
                    );
                }
                continue;
            }
            let response = meta
                .and_then(|m| m.get("model_response"))
                .and_then(Value::as_object);
            let new_turn = match response.and_then(|r| s(r, "id")) {
                Some(rid) => responses.insert(rid.to_string()),
                None => true,
            };
            if new_turn {
                out.push(sid, Record::Turn, line);
                if let Some(reasoning) = response
                    .and_then(|r| r.get("choices"))
                    .and_then(|c| c.get(0))
                    .and_then(|c| c.get("message"))
                    .and_then(|m| m.get("reasoning_content"))
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    out.push(
                        sid,
                        Record::Thought {
                            text: reasoning.to_string(),
                        },
                        line,
                    );
                }
            }
            agent_action(out, sid, line, action, args, meta, e.get("id"));
            if new_turn {
                if let Some(u) = response
                    .and_then(|r| r.get("usage"))
                    .and_then(Value::as_object)
                {
                    out.push(
                        sid,
                        Record::Usage {
                            input_tokens: u.get("prompt_tokens").and_then(Value::as_u64),
                            output_tokens: u.get("completion_tokens").and_then(Value::as_u64),
                        },
                        line,
                    );
                }
            }
        } else if let Some(obs) = s(e, "observation") {
            let content = text_of(e.get("content"));
            let extras = e.get("extras").and_then(Value::as_object);
            let reason = extras.and_then(|x| s(x, "reason")).unwrap_or("");
            if obs == "loop_detection"
                || ((obs == "error" || obs == "agent_state_changed")
                    && (names_stuck(&content) || names_stuck(reason)))
            {
                let detail = if content.is_empty() {
                    reason.to_string()
                } else {
                    content
                };
                out.push(
                    sid,
                    Record::LoopDetected {
                        kind: Some("openhands-stuck-detector".into()),
                        detail: Some(detail),
                    },
                    line,
                );
                continue;
            }
            if SKIP_OBS.contains(&obs) || source == "user" {
                continue;
            }
            let exit = extras
                .and_then(|x| x.get("metadata"))
                .and_then(|m| m.get("exit_code"))
                .and_then(Value::as_i64);
            out.push(
                sid,
                Record::ToolResult {
                    id: meta
                        .and_then(|m| s(m, "tool_call_id"))
                        .map(str::to_string)
                        .or_else(|| e.get("cause").map(id_text)),
                    name: Some(
                        meta.and_then(|m| s(m, "function_name"))
                            .unwrap_or(obs)
                            .to_string(),
                    ),
                    error: Some(is_error(obs, exit, &content)),
                    output: Some(content),
                },
                line,
            );
        }
    }
    Ok(())
}

fn id_text(v: &Value) -> String {
    match v {
        Value::String(t) => t.clone(),
        other => other.to_string(),
    }
}

fn is_error(obs: &str, exit: Option<i64>, content: &str) -> bool {
    obs == "error" || exit.is_some_and(|c| c != 0 && c != -1) || content.starts_with("ERROR:")
}

/// The text an agent action carries: a `message` is its thought and content,
/// a `think` a thought, any other action's thought is the message text before
/// its tool call. True when a tool call follows.
fn text_records(
    out: &mut Out,
    sid: &str,
    line: u32,
    action: &str,
    thought: &str,
    content: &str,
) -> bool {
    let texts: &[&str] = match action {
        "message" => &[thought, content],
        "think" => {
            out.push(
                sid,
                Record::Thought {
                    text: thought.to_string(),
                },
                line,
            );
            return false;
        }
        _ => &[thought],
    };
    for t in texts.iter().filter(|t| !t.is_empty()) {
        out.push(
            sid,
            Record::Content {
                text: t.to_string(),
            },
            line,
        );
    }
    action != "message"
}

fn agent_action(
    out: &mut Out,
    sid: &str,
    line: u32,
    action: &str,
    args: &Map<String, Value>,
    meta: Option<&Map<String, Value>>,
    id: Option<&Value>,
) {
    let thought = s(args, "thought").unwrap_or("");
    if text_records(
        out,
        sid,
        line,
        action,
        thought,
        s(args, "content").unwrap_or_default(),
    ) {
        let mut a = Map::new();
        for (k, v) in args {
            if META_ARGS.contains(&k.as_str()) || (k == "is_input" && v == &Value::Bool(false)) {
                continue;
            }
            a.insert(k.clone(), v.clone());
        }
        out.push(
            sid,
            Record::ToolCall {
                name: meta
                    .and_then(|m| s(m, "function_name"))
                    .unwrap_or(action)
                    .to_string(),
                args: a.into(),
                id: meta
                    .and_then(|m| s(m, "tool_call_id"))
                    .map(str::to_string)
                    .or_else(|| id.map(id_text)),
            },
            line,
        );
    }
}

/// Legacy flat events (older resolver output): the first `message` is the
/// user's task, every later action is one turn, each observation answers the
/// action before it.
fn legacy_history(
    out: &mut Out,
    sid: &str,
    events: &[Value],
    line: u32,
    ptrs: &[String],
) -> std::result::Result<(), RecordError> {
    let mut seen_user = false;
    let mut last_action: Option<String> = None;
    for (i, e) in events.iter().enumerate() {
        out.at(ptrs.get(i).cloned());
        let Some(e) = e.as_object() else {
            return Err(FieldError::ty(&format!("history[{i}]"), "an object").into());
        };
        if let Some(action) = s(e, "action") {
            if !seen_user && action == "message" {
                seen_user = true;
                out.push(
                    sid,
                    Record::User {
                        text: s(e, "content").unwrap_or_default().to_string(),
                        prompt_id: None,
                    },
                    line,
                );
                continue;
            }
            if SKIP_ACTIONS.contains(&action) {
                continue;
            }
            out.push(sid, Record::Turn, line);
            let thought = s(e, "thought").unwrap_or("");
            if text_records(
                out,
                sid,
                line,
                action,
                thought,
                s(e, "content").unwrap_or(""),
            ) {
                let mut a = Map::new();
                for (k, v) in e {
                    if !LEGACY_META.contains(&k.as_str()) {
                        a.insert(k.clone(), v.clone());
                    }
                }
                out.push(
                    sid,
                    Record::ToolCall {
                        name: action.to_string(),
                        args: args_from_value(Some(&Value::Object(a))).into(),
                        id: None,
                    },
                    line,
                );
                last_action = Some(action.to_string());
            }
        } else if let Some(obs) = s(e, "observation") {
            let content = text_of(e.get("content"));
            if names_stuck(&content) {
                out.push(
                    sid,
                    Record::LoopDetected {
                        kind: Some("openhands-stuck-detector".into()),
                        detail: Some(content),
                    },
                    line,
                );
                continue;
            }
            if SKIP_OBS.contains(&obs) {
                continue;
            }
            let exit = e.get("exit_code").and_then(Value::as_i64);
            out.push(
                sid,
                Record::ToolResult {
                    id: None,
                    name: Some(last_action.clone().unwrap_or_else(|| obs.to_string())),
                    error: Some(is_error(obs, exit, &content)),
                    output: Some(content),
                },
                line,
            );
        }
    }
    Ok(())
}

/// OpenHands trajectories and eval output.
pub(crate) struct OpenHands;

impl crate::input::format::Format for OpenHands {
    fn name(&self) -> &'static str {
        "openhands"
    }
    fn expected(&self) -> &'static str {
        "an OpenHands event array or eval output lines with `history`"
    }
    fn sniff_doc(&self, doc: &Value) -> bool {
        sniff_doc(doc)
    }
    fn sniff_line(&self, line: &Value) -> bool {
        line.as_object().is_some_and(sniff_line)
    }
    fn read(&self, ctx: &Ctx) -> Result<crate::input::format::FileSessions> {
        import(ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, stem: &str) -> crate::input::format::FileSessions {
        let ctx = Ctx {
            display: "o.json",
            stem,
            bytes: text.as_bytes(),
            lenient: false,
            parsed: Default::default(),
        };
        import(&ctx).unwrap()
    }

    #[test]
    fn trajectory_array_turn_per_response_and_errors() {
        let text = r#"[
{"id":0,"source":"agent","action":"system","args":{"content":"sys"}},
{"id":1,"source":"user","action":"message","args":{"content":"do it"}},
{"id":2,"source":"agent","action":"run","args":{"command":"ls","thought":"look","blocking":false},
 "tool_call_metadata":{"function_name":"execute_bash","tool_call_id":"t1","model_response":{"id":"r1","usage":{"prompt_tokens":5,"completion_tokens":2}}}},
{"id":3,"source":"agent","observation":"run","cause":2,"content":"boom","extras":{"metadata":{"exit_code":2}},
 "tool_call_metadata":{"function_name":"execute_bash","tool_call_id":"t1"}},
{"id":4,"source":"agent","observation":"error","content":"AgentStuckInLoopError: Agent got stuck in a loop"}
]"#;
        let fs = run(text, "traj");
        let recs = &fs.sessions[0].1;
        let types: Vec<&str> = recs.iter().map(|e| e.record.type_name()).collect();
        assert_eq!(
            types,
            vec![
                "session",
                "user",
                "turn",
                "content",
                "tool_call",
                "usage",
                "tool_result",
                "loop_detected"
            ]
        );
        assert_eq!(recs[1].origin.line, 3);
        match &recs[4].record {
            Record::ToolCall { name, args, id } => {
                assert_eq!(name, "execute_bash");
                assert_eq!(args.keys().collect::<Vec<_>>(), vec!["command"]);
                assert_eq!(id.as_deref(), Some("t1"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            recs[6].record,
            Record::ToolResult {
                error: Some(true),
                ..
            }
        ));
    }

    #[test]
    fn legacy_resolver_line_uses_issue_id() {
        let text = r#"{"issue":{"owner":"o","repo":"r","number":7},"instruction":"x","history":[{"content":"task","action":"message"},{"command":"ls","thought":"t","action":"run"},{"content":"x","exit_code":1,"observation":"run"}]}"#;
        let fs = run(text, "output");
        assert_eq!(fs.sessions[0].0, "o/r#7");
        let types: Vec<&str> = fs.sessions[0]
            .1
            .iter()
            .map(|e| e.record.type_name())
            .collect();
        assert_eq!(
            types,
            vec![
                "session",
                "user",
                "turn",
                "content",
                "tool_call",
                "tool_result"
            ]
        );
    }
}
