//! OpenAI chat-completions message lists (a list per file, per JSONL line, or a
//! message per JSONL line), including mini-swe-agent `.traj.json`
//! trajectories, mapped onto canonical records: one turn per assistant message.

use super::common::{
    args_from_str, args_from_value, doc_of, lines, pointer, s, session_rec, text_of, Ctx,
    FieldError, Out, RecordError,
};
use crate::error::Result;
use crate::event::Record;
use serde_json::{Map, Value};
use std::collections::HashMap;

fn is_message(v: &Value) -> bool {
    v.as_object().is_some_and(|m| {
        matches!(
            s(m, "role"),
            Some("system" | "developer" | "user" | "assistant" | "tool" | "function" | "exit")
        ) && !m.contains_key("parts")
    })
}

fn is_list(v: &Value) -> bool {
    match v {
        Value::Array(a) => !a.is_empty() && a.iter().all(is_message),
        Value::Object(m) => m
            .get("messages")
            .and_then(Value::as_array)
            .is_some_and(|a| {
                a.iter().all(is_message) && (!a.is_empty() || m.contains_key("trajectory_format"))
            }),
        _ => false,
    }
}

/// Whether a whole JSON document is a message list (or holds one under `messages`).
pub(crate) fn sniff_doc(v: &Value) -> bool {
    is_list(v)
}

/// Whether a JSONL line is a message list or a single chat message.
pub(crate) fn sniff_line(v: &Value) -> bool {
    is_list(v) || is_message(v)
}

/// Import a file of message lists.
pub(crate) fn import(ctx: &Ctx) -> Result<crate::input::format::FileSessions> {
    let mut out = Out::new("openai-chat");
    if let Ok(doc) = doc_of(ctx) {
        if is_list(&doc) || doc.is_array() || doc.get("messages").is_some() {
            let lines = match &doc {
                Value::Array(_) => super::common::element_lines(ctx.bytes, None),
                _ => super::common::element_lines(ctx.bytes, Some("messages")),
            };
            let at = |i: usize| lines.get(i).copied().unwrap_or(0);
            if let Err(e) = conversation(&mut out, ctx.stem, &doc, &at, true) {
                return Err(ctx.file_err(e.to_string()));
            }
            return Ok(out.finish());
        }
    }
    // JSONL: a list per line (several sessions) or a message per line (one).
    let mut parsed: Vec<(u32, Value)> = Vec::new();
    for (line, text) in lines(ctx.bytes) {
        match text.and_then(|t| crate::input::json::parse_json(t).map_err(RecordError::NotJson)) {
            Ok(v) => parsed.push((line, v)),
            Err(e) => out.bad(ctx, line as u64, e)?,
        }
    }
    let lists = parsed.iter().filter(|(_, v)| is_list(v)).count();
    if lists == 0 {
        let msgs: Vec<Value> = parsed.iter().map(|(_, v)| v.clone()).collect();
        let at = |i: usize| parsed.get(i).map_or(0, |p| p.0);
        if let Err(e) = conversation(&mut out, ctx.stem, &Value::Array(msgs), &at, false) {
            return Err(ctx.file_err(e.to_string()));
        }
        return Ok(out.finish());
    }
    let single = parsed.len() == 1;
    for (n, (line, v)) in parsed.iter().enumerate() {
        if !is_list(v) {
            out.bad(
                ctx,
                *line as u64,
                RecordError::Expected("a message list (or an object with `messages`)"),
            )?;
            continue;
        }
        let own = v.as_object().and_then(|m| {
            ["id", "instance_id", "session_id"]
                .iter()
                .find_map(|k| s(m, k))
        });
        let sid = match own {
            _ if single => ctx.stem.to_string(),
            Some(id) => id.to_string(),
            None => format!("{}#{}", ctx.stem, n + 1),
        };
        if let Err(e) = conversation(&mut out, &sid, v, &|_| *line, true) {
            out.bad(ctx, *line as u64, e)?;
        }
    }
    Ok(out.finish())
}

/// One conversation: a message array, or an object holding it under
/// `messages`. With `pointers`, records name their message's JSON pointer
/// inside `v` (a whole document, or a list on one line).
fn conversation(
    out: &mut Out,
    sid: &str,
    v: &Value,
    at: &dyn Fn(usize) -> u32,
    pointers: bool,
) -> std::result::Result<(), RecordError> {
    let (container, msgs) = match v {
        Value::Array(a) => (None, a.as_slice()),
        Value::Object(m) => match m.get("messages") {
            Some(Value::Array(a)) => (Some(m), a.as_slice()),
            Some(_) => return Err(FieldError::ty("messages", "an array").into()),
            None => return Err(FieldError::Missing("messages".into()).into()),
        },
        _ => return Err(RecordError::Expected("a message list")),
    };
    let info = container
        .and_then(|m| m.get("info"))
        .and_then(Value::as_object);
    let mini = container.is_some_and(|m| {
        s(m, "trajectory_format").is_some_and(|f| f.starts_with("mini-swe-agent"))
            || info.is_some_and(|i| i.contains_key("mini_version"))
    });
    let model = info
        .and_then(|i| i.get("config"))
        .and_then(|c| c.get("model"))
        .and_then(|m| m.get("model_name"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| {
            msgs.iter().find_map(|m| {
                m.get("extra")?
                    .get("response")?
                    .get("model")?
                    .as_str()
                    .map(str::to_string)
            })
        });
    let mut meta = Map::new();
    if let Some(es) = info
        .and_then(|i| i.get("exit_status"))
        .filter(|v| !v.is_null())
    {
        meta.insert("exit_status".into(), es.clone());
    }
    if let Some(id) = container
        .and_then(|m| m.get("instance_id"))
        .filter(|v| !v.is_null())
    {
        meta.insert("instance_id".into(), id.clone());
    }
    let agent = if mini {
        "mini-swe-agent"
    } else {
        "openai-chat"
    };
    out.at(None);
    out.open(sid);
    out.push(sid, session_rec(agent, model, meta), at(0));
    // Text-action agents (mini-swe-agent 1.0) put the command in a fenced
    // block and feed observations back as user messages.
    let text_actions = mini
        && !msgs
            .iter()
            .any(|m| m.get("tool_calls").is_some_and(|t| !t.is_null()));
    let mut names: HashMap<String, String> = HashMap::new();
    let mut seen_assistant = false;
    for (i, m) in msgs.iter().enumerate() {
        let line = at(i);
        if pointers {
            let root = container.map(|_| "messages".to_string());
            let tokens: Vec<String> = root.into_iter().chain([i.to_string()]).collect();
            out.at(Some(pointer(&tokens)));
        }
        let Some(m) = m.as_object() else {
            return Err(FieldError::ty(&format!("messages[{i}]"), "an object").into());
        };
        let extra = m.get("extra").and_then(Value::as_object);
        match s(m, "role") {
            Some("user") => {
                let text = text_of(m.get("content"));
                if text_actions && seen_assistant {
                    let code = extra
                        .and_then(|x| x.get("returncode"))
                        .and_then(Value::as_i64);
                    out.push(
                        sid,
                        Record::ToolResult {
                            id: None,
                            name: Some("bash".into()),
                            output: Some(text),
                            error: code.map(|c| c != 0),
                        },
                        line,
                    );
                } else {
                    out.push(
                        sid,
                        Record::User {
                            text,
                            prompt_id: None,
                        },
                        line,
                    );
                }
            }
            Some("assistant") => {
                seen_assistant = true;
                out.push(sid, Record::Turn, line);
                for k in ["reasoning_content", "reasoning"] {
                    if let Some(t) = s(m, k).filter(|t| !t.is_empty()) {
                        out.push(
                            sid,
                            Record::Thought {
                                text: t.to_string(),
                            },
                            line,
                        );
                        break;
                    }
                }
                let text = text_of(m.get("content"));
                let fenced = if text_actions {
                    fenced_command(&text)
                } else {
                    None
                };
                if !text.is_empty() {
                    out.push(sid, Record::Content { text: text.clone() }, line);
                }
                if let Some(cmd) = fenced {
                    let mut args = Map::new();
                    args.insert("command".into(), Value::String(cmd));
                    out.push(
                        sid,
                        Record::ToolCall {
                            name: "bash".into(),
                            args: args.into(),
                            id: None,
                        },
                        line,
                    );
                }
                for (ci, c) in m
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    let f = c
                        .get("function")
                        .and_then(Value::as_object)
                        .ok_or_else(|| {
                            FieldError::Missing(format!("messages[{i}].tool_calls[{ci}].function"))
                        })?;
                    let name = s(f, "name").ok_or_else(|| {
                        FieldError::Missing(format!("messages[{i}].tool_calls[{ci}].function.name"))
                    })?;
                    let id = c.get("id").and_then(Value::as_str).map(str::to_string);
                    if let Some(id) = &id {
                        names.insert(id.clone(), name.to_string());
                    }
                    out.push(
                        sid,
                        Record::ToolCall {
                            name: name.to_string(),
                            args: call_args(f).into(),
                            id,
                        },
                        line,
                    );
                }
                if let Some(f) = m.get("function_call").and_then(Value::as_object) {
                    if let Some(name) = s(f, "name") {
                        names.insert(format!("fn:{name}"), name.to_string());
                        out.push(
                            sid,
                            Record::ToolCall {
                                name: name.to_string(),
                                args: call_args(f).into(),
                                id: None,
                            },
                            line,
                        );
                    }
                }
                if let Some(u) = extra
                    .and_then(|x| x.get("response"))
                    .and_then(|r| r.get("usage"))
                    .or_else(|| m.get("usage"))
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
            Some("tool" | "function") => {
                let id = s(m, "tool_call_id").map(str::to_string);
                let name = id
                    .as_ref()
                    .and_then(|i| names.get(i).cloned())
                    .or_else(|| s(m, "name").map(str::to_string));
                let output = extra
                    .and_then(|x| s(x, "raw_output"))
                    .map(str::to_string)
                    .unwrap_or_else(|| text_of(m.get("content")));
                let code = extra
                    .and_then(|x| x.get("returncode"))
                    .and_then(Value::as_i64);
                out.push(
                    sid,
                    Record::ToolResult {
                        id,
                        name,
                        output: Some(output),
                        error: code.map(|c| c != 0),
                    },
                    line,
                );
            }
            Some("system" | "developer" | "exit") => {}
            _ => out.unknown(),
        }
    }
    Ok(())
}

fn call_args(f: &Map<String, Value>) -> Map<String, Value> {
    match f.get("arguments") {
        Some(Value::String(a)) => args_from_str(a),
        other => args_from_value(other),
    }
}

/// The body of the first ```` ```bash ```` (or ```` ```mswea_bash_command ````) block.
fn fenced_command(text: &str) -> Option<String> {
    for fence in ["```bash\n", "```mswea_bash_command\n"] {
        if let Some(start) = text.find(fence) {
            let body = &text[start + fence.len()..];
            let end = body.find("```").unwrap_or(body.len());
            return Some(body[..end].trim_end().to_string());
        }
    }
    None
}

/// chat-completions message lists (mini-swe-agent).
pub(crate) struct OpenAiChat;

impl crate::input::format::Format for OpenAiChat {
    fn name(&self) -> &'static str {
        "openai-chat"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["mini-swe-agent", "openai", "chat"]
    }
    fn expected(&self) -> &'static str {
        "a chat-completions message list, an object with `messages`, or one per JSONL line"
    }
    fn sniff_doc(&self, doc: &Value) -> bool {
        sniff_doc(doc)
    }
    fn sniff_line(&self, line: &Value) -> bool {
        sniff_line(line)
    }
    fn read(&self, ctx: &Ctx) -> Result<crate::input::format::FileSessions> {
        import(ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> crate::input::format::FileSessions {
        let ctx = Ctx {
            display: "c.jsonl",
            stem: "c",
            bytes: text.as_bytes(),
            lenient: false,
            parsed: Default::default(),
        };
        import(&ctx).unwrap()
    }

    #[test]
    fn list_with_string_arguments_and_tool_results() {
        let fs = run(
            r#"[{"role":"system","content":"s"},{"role":"user","content":"fix"},
{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},
{"role":"tool","tool_call_id":"a","content":"x"}]"#,
        );
        assert_eq!(fs.sessions[0].0, "c");
        let types: Vec<&str> = fs.sessions[0]
            .1
            .iter()
            .map(|e| e.record.type_name())
            .collect();
        assert_eq!(
            types,
            vec!["session", "user", "turn", "tool_call", "tool_result"]
        );
        assert_eq!(fs.sessions[0].1[1].origin.line, 1);
    }

    #[test]
    fn one_list_per_line_uses_ids_or_numbers() {
        let fs = run("{\"id\":\"x\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]}\n[{\"role\":\"user\",\"content\":\"b\"}]\n");
        let ids: Vec<&str> = fs.sessions.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(ids, vec!["x", "c#2"]);
    }

    #[test]
    fn fenced_commands() {
        assert_eq!(
            fenced_command("do\n```bash\nls -la\n```\n").as_deref(),
            Some("ls -la")
        );
        assert_eq!(fenced_command("no block"), None);
    }
}
