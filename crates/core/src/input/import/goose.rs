//! Goose session files: the JSONL form older Goose versions keep under
//! `~/.local/share/goose/sessions/<name>.jsonl` (a metadata line, then one
//! message per line) and a JSON object holding the same messages under
//! `messages` or `conversation`. Newer Goose versions keep sessions in SQLite,
//! which is not read here. One turn per assistant message; `toolRequest`
//! parts are calls, `toolResponse` parts (in user messages) their results.

use super::common::{
    args_from_value, doc_of, element_lines, lines, parse_object, pointer, s, session_rec, text_of,
    Ctx, FieldError, Out, RecordError,
};
use crate::error::Result;
use crate::event::Record;
use serde_json::{Map, Value};
use std::collections::HashMap;

const PART_TYPES: &[&str] = &[
    "text",
    "toolRequest",
    "toolResponse",
    "thinking",
    "redactedThinking",
    "image",
    "toolConfirmationRequest",
];

fn is_message(v: &Value) -> bool {
    v.as_object().is_some_and(|m| {
        matches!(s(m, "role"), Some("user" | "assistant"))
            && m.contains_key("created")
            && m.get("content").and_then(Value::as_array).is_some_and(|c| {
                c.iter().all(|p| {
                    p.get("type")
                        .and_then(Value::as_str)
                        .is_some_and(|t| PART_TYPES.contains(&t))
                })
            })
    })
}

/// Whether a JSONL line is a Goose metadata line or message.
pub(crate) fn sniff_line(m: &Map<String, Value>) -> bool {
    (m.contains_key("working_dir")
        && (m.contains_key("description") || m.contains_key("message_count")))
        || is_message(&Value::Object(m.clone()))
}

fn messages_of(m: &Map<String, Value>) -> Option<&Vec<Value>> {
    ["messages", "conversation"]
        .iter()
        .find_map(|k| m.get(*k).and_then(Value::as_array))
}

/// Whether a whole JSON document is a Goose session object.
pub(crate) fn sniff_doc(v: &Value) -> bool {
    v.as_object()
        .and_then(messages_of)
        .is_some_and(|a| !a.is_empty() && a.iter().all(is_message))
}

/// Import one Goose session file.
pub(crate) fn import(ctx: &Ctx) -> Result<crate::input::format::FileSessions> {
    let mut out = Out::new("goose");
    let sid = ctx.stem.to_string();
    out.open(&sid);
    // (line, JSON pointer in a whole document, message)
    let mut items: Vec<(u32, Option<String>, Map<String, Value>)> = Vec::new();
    match doc_of(ctx) {
        Ok(Value::Object(doc)) if messages_of(&doc).is_some() => {
            let meta = meta_of(&doc);
            out.push(&sid, session_rec("goose", None, meta), 0);
            let key = ["messages", "conversation"]
                .into_iter()
                .find(|k| doc.get(*k).is_some_and(Value::is_array))
                .unwrap_or("messages");
            let lines = element_lines(ctx.bytes, Some(key));
            for (i, m) in messages_of(&doc).into_iter().flatten().enumerate() {
                if let Some(m) = m.as_object() {
                    let at = pointer(&[key.to_string(), i.to_string()]);
                    items.push((lines.get(i).copied().unwrap_or(0), Some(at), m.clone()));
                }
            }
        }
        _ => {
            let mut first = true;
            for (line, text) in lines(ctx.bytes) {
                match parse_object(text) {
                    Ok(m) if first && !m.contains_key("role") => {
                        out.push(&sid, session_rec("goose", None, meta_of(&m)), line)
                    }
                    Ok(m) => items.push((line, None, m)),
                    Err(e) => out.bad(ctx, line as u64, e)?,
                }
                first = false;
            }
        }
    }
    let mut names: HashMap<String, String> = HashMap::new();
    for (line, at, m) in items {
        out.at(at);
        if let Err(e) = message(&mut out, &sid, line, &m, &mut names) {
            out.bad(ctx, line as u64, e)?;
        }
    }
    Ok(out.finish())
}

pub(crate) fn meta_of(m: &Map<String, Value>) -> Map<String, Value> {
    let mut meta = Map::new();
    for f in ["working_dir", "description", "name", "id"] {
        if let Some(v) = m.get(f).filter(|v| !v.is_null()) {
            meta.insert(f.to_string(), v.clone());
        }
    }
    meta
}

pub(crate) fn message(
    out: &mut Out,
    sid: &str,
    line: u32,
    m: &Map<String, Value>,
    names: &mut HashMap<String, String>,
) -> std::result::Result<(), RecordError> {
    let parts = match m.get("content") {
        Some(Value::Array(a)) => a.as_slice(),
        Some(_) => return Err(FieldError::ty("content", "an array").into()),
        None => return Err(FieldError::Missing("content".into()).into()),
    };
    match s(m, "role") {
        Some("assistant") => {
            out.push(sid, Record::Turn, line);
            for p in parts {
                match p.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let t = text_of(Some(p));
                        if !t.is_empty() {
                            out.push(sid, Record::Content { text: t }, line);
                        }
                    }
                    Some("thinking") => out.push(
                        sid,
                        Record::Thought {
                            text: p
                                .get("thinking")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_string(),
                        },
                        line,
                    ),
                    Some("redactedThinking") => out.push(
                        sid,
                        Record::Thought {
                            text: String::new(),
                        },
                        line,
                    ),
                    Some("toolRequest") => {
                        let id = p.get("id").and_then(Value::as_str).map(str::to_string);
                        let call = p.get("toolCall");
                        let value = call.and_then(|c| c.get("value"));
                        let name = value
                            .and_then(|v| v.get("name"))
                            .and_then(Value::as_str)
                            .unwrap_or("invalid_tool_call")
                            .to_string();
                        let mut args = args_from_value(value.and_then(|v| v.get("arguments")));
                        if value.is_none() {
                            // A call the model malformed: keep its error so repeats compare.
                            if let Some(err) = call.and_then(|c| c.get("error")) {
                                args.insert("_error".into(), err.clone());
                            }
                        }
                        if let Some(id) = &id {
                            names.insert(id.clone(), name.clone());
                        }
                        out.push(
                            sid,
                            Record::ToolCall {
                                name,
                                args: args.into(),
                                id,
                            },
                            line,
                        );
                    }
                    _ => {}
                }
            }
        }
        Some("user") => {
            let mut text: Vec<String> = Vec::new();
            for p in parts {
                match p.get("type").and_then(Value::as_str) {
                    Some("toolResponse") => {
                        let id = p.get("id").and_then(Value::as_str).map(str::to_string);
                        let result = p.get("toolResult");
                        let status = result.and_then(|r| r.get("status")).and_then(Value::as_str);
                        let output = match result.and_then(|r| r.get("value")) {
                            Some(v) => text_of(Some(v)),
                            None => result
                                .and_then(|r| r.get("error"))
                                .map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_string))
                                .unwrap_or_default(),
                        };
                        out.push(
                            sid,
                            Record::ToolResult {
                                name: id.as_ref().and_then(|i| names.get(i).cloned()),
                                id,
                                output: Some(output),
                                error: status.map(|st| st != "success"),
                            },
                            line,
                        );
                    }
                    Some("text") => text.push(text_of(Some(p))),
                    _ => {}
                }
            }
            let text = text.join("\n");
            if !text.is_empty() {
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
        _ => out.unknown(),
    }
    Ok(())
}

/// Goose session JSONL or JSON.
pub(crate) struct Goose;

impl crate::input::format::Format for Goose {
    fn name(&self) -> &'static str {
        "goose"
    }
    fn expected(&self) -> &'static str {
        "a Goose session JSONL (metadata line, then messages with `role`, `created`, `content`)"
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

    #[test]
    fn jsonl_session_with_tool_round_trip() {
        let text = r#"{"working_dir":"/w","description":"d","message_count":3}
{"role":"user","created":1,"content":[{"type":"text","text":"list files"}]}
{"role":"assistant","created":2,"content":[{"type":"text","text":"ok"},{"type":"toolRequest","id":"t1","toolCall":{"status":"success","value":{"name":"developer__shell","arguments":{"command":"ls"}}}}]}
{"role":"user","created":3,"content":[{"type":"toolResponse","id":"t1","toolResult":{"status":"error","error":"denied"}}]}"#;
        let ctx = Ctx {
            display: "g.jsonl",
            stem: "g",
            bytes: text.as_bytes(),
            lenient: false,
            parsed: Default::default(),
        };
        let fs = import(&ctx).unwrap();
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
                "tool_result"
            ]
        );
        assert_eq!(
            recs[5].record,
            Record::ToolResult {
                id: Some("t1".into()),
                name: Some("developer__shell".into()),
                output: Some("denied".into()),
                error: Some(true)
            }
        );
    }
}
