//! Gemini CLI chat recordings (`~/.gemini/tmp/<hash>/chats/session-*.json`, a
//! single `ConversationRecord`, and the JSONL form of v0.39+) mapped onto
//! canonical records, including the CLI's own loop-detection notices.

use super::common::{
    args_from_value, doc_of, element_lines, lines, opt_arr, opt_str, parse_object, pointer, s,
    session_rec, text_of, Ctx, FieldError, Out, RecordError,
};
use crate::error::Result;
use crate::event::Record;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Whether a whole JSON document is a legacy `ConversationRecord`.
pub(crate) fn sniff_doc(v: &Value) -> bool {
    v.as_object().is_some_and(|m| {
        m.contains_key("sessionId")
            && m.get("messages").is_some_and(Value::is_array)
            && (m.contains_key("projectHash")
                || m.contains_key("startTime")
                || first_msg_has_type(m))
    })
}

fn first_msg_has_type(m: &Map<String, Value>) -> bool {
    m.get("messages")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .is_some_and(|x| x.get("type").is_some() && x.get("id").is_some())
}

/// Whether a JSONL line looks like Gemini CLI's streaming recording.
pub(crate) fn sniff_line(m: &Map<String, Value>) -> bool {
    (m.contains_key("sessionId") && m.contains_key("projectHash"))
        || m.contains_key("$set")
        || m.contains_key("$rewindTo")
}

/// Whether a JSONL line is a Gemini CLI message record (which reuses the
/// canonical type name `user`).
pub(crate) fn claims_message(m: &Map<String, Value>) -> bool {
    matches!(
        s(m, "type"),
        Some("user" | "gemini" | "info" | "error" | "warning")
    ) && m.contains_key("id")
        && m.contains_key("content")
        && !m.contains_key("text")
}

/// Import one recording (either encoding).
pub(crate) fn import(ctx: &Ctx) -> Result<crate::input::format::FileSessions> {
    let mut out = Out::new("gemini-cli");
    let sid = ctx.stem.to_string();
    let (meta, messages) = match doc_of(ctx) {
        Ok(Value::Object(mut doc)) if doc.contains_key("messages") && !doc.contains_key("id") => {
            if let Err(e) = opt_arr(&doc, "messages", "messages") {
                return Err(ctx.file_err(e.to_string()));
            }
            // Taken, not copied: the rest of the document is only metadata.
            let msgs = match doc.remove("messages") {
                Some(Value::Array(a)) => a,
                _ => Vec::new(),
            };
            let lines = element_lines(ctx.bytes, Some("messages"));
            let msgs = msgs
                .into_iter()
                .enumerate()
                .map(|(i, m)| {
                    (
                        lines.get(i).copied().unwrap_or(0),
                        format!("messages[{i}]"),
                        Some(pointer(&["messages".to_string(), i.to_string()])),
                        m,
                    )
                })
                .collect();
            (doc, msgs)
        }
        _ => materialise_jsonl(ctx, &mut out)?,
    };
    out.open(&sid);
    let model = messages
        .iter()
        .rev()
        .find_map(|(_, _, _, m)| {
            (m.get("type").and_then(Value::as_str) == Some("gemini"))
                .then(|| m.get("model")?.as_str())
                .flatten()
        })
        .map(str::to_string);
    let mut smeta = Map::new();
    for f in ["sessionId", "projectHash", "startTime", "summary", "kind"] {
        if let Some(v) = meta.get(f).filter(|v| !v.is_null()) {
            smeta.insert(f.to_string(), v.clone());
        }
    }
    out.push(
        &sid,
        session_rec("gemini-cli", model, smeta),
        messages.first().map_or(0, |m| m.0),
    );
    for (line, path, at, m) in &messages {
        out.at(at.clone());
        if let Err(e) = message(&mut out, &sid, *line, path, m) {
            if *line == 0 {
                return Err(ctx.file_err(e.to_string()));
            }
            out.bad(ctx, *line as u64, e)?;
        }
    }
    Ok(out.finish())
}

/// One message to import: its line, its name in errors, its JSON pointer
/// (whole documents and arrays inside a line) and the message.
type Message = (u32, String, Option<String>, Value);

/// The final message list of a JSONL recording: the last copy of each message
/// id at the position of its first copy, rewinds applied, `$set` merged.
/// Each message keeps the line of its last copy (which holds what is
/// imported) and, when that line embeds it in an array, its JSON pointer there.
#[allow(clippy::type_complexity)]
fn materialise_jsonl(ctx: &Ctx, out: &mut Out) -> Result<(Map<String, Value>, Vec<Message>)> {
    let mut meta = Map::new();
    let mut order: Vec<String> = Vec::new();
    let mut msgs: HashMap<String, (u32, Option<String>, Value)> = HashMap::new();
    for (line, text) in lines(ctx.bytes) {
        let m = match parse_object(text) {
            Ok(m) => m,
            Err(e) => {
                out.bad(ctx, line as u64, e)?;
                continue;
            }
        };
        if let Some(set) = m.get("$set").and_then(Value::as_object) {
            for (k, v) in set {
                if k == "messages" {
                    // A checkpoint: it replaces every message.
                    order.clear();
                    msgs.clear();
                    for (k, x) in v.as_array().into_iter().flatten().enumerate() {
                        if let Some(id) = x.get("id").and_then(Value::as_str) {
                            order.push(id.to_string());
                            let at = pointer(&["$set", "messages", &k.to_string()]);
                            msgs.insert(id.to_string(), (line, Some(at), x.clone()));
                        }
                    }
                } else {
                    meta.insert(k.clone(), v.clone());
                }
            }
        } else if let Some(to) = m.get("$rewindTo") {
            let to = to.as_str().unwrap_or_default();
            let cut = order.iter().position(|i| i == to).unwrap_or(0);
            for id in order.drain(cut..) {
                msgs.remove(&id);
            }
        } else if let Some(id) = m.get("id").and_then(Value::as_str) {
            if !msgs.contains_key(id) {
                order.push(id.to_string());
            }
            msgs.insert(id.to_string(), (line, None, Value::Object(m.clone())));
        } else if m.contains_key("sessionId") {
            if let Some(Value::Array(whole)) = m.get("messages") {
                for (k, x) in whole.iter().enumerate() {
                    if let Some(id) = x.get("id").and_then(Value::as_str) {
                        order.push(id.to_string());
                        let at = pointer(&["messages", &k.to_string()]);
                        msgs.insert(id.to_string(), (line, Some(at), x.clone()));
                    }
                }
            }
            for (k, v) in &m {
                if k != "messages" {
                    meta.insert(k.clone(), v.clone());
                }
            }
        } else {
            out.unknown();
        }
    }
    let list = order
        .into_iter()
        .filter_map(|id| {
            msgs.remove(&id)
                .map(|(line, at, v)| (line, format!("message {id}"), at, v))
        })
        .collect();
    Ok((meta, list))
}

const LOOP_INFO: &[&str] = &[
    "A potential loop was detected",
    "Loop detection has been disabled for this session",
];
const LOOP_RECOVERY: &str = "System: Potential loop detected. Details:";

fn message(
    out: &mut Out,
    sid: &str,
    line: u32,
    path: &str,
    m: &Value,
) -> std::result::Result<(), RecordError> {
    let Some(m) = m.as_object() else {
        return Err(FieldError::ty(path, "an object").into());
    };
    let ty = match m.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(_) => return Err(FieldError::ty(&format!("{path}.type"), "a string").into()),
        None => return Err(FieldError::Missing(format!("{path}.type")).into()),
    };
    let content = text_of(m.get("content"));
    match ty {
        "user" => {
            if let Some(detail) = content.strip_prefix(LOOP_RECOVERY) {
                out.push(
                    sid,
                    Record::LoopDetected {
                        kind: Some("gemini-cli-recovery".into()),
                        detail: Some(detail.trim().to_string()),
                    },
                    line,
                );
            } else {
                out.push(
                    sid,
                    Record::User {
                        text: content,
                        prompt_id: opt_str(m, "id", &format!("{path}.id"))?.map(str::to_string),
                    },
                    line,
                );
            }
        }
        "gemini" => gemini(out, sid, line, path, m, content)?,
        "info" => {
            if LOOP_INFO.iter().any(|p| content.starts_with(p)) {
                out.push(
                    sid,
                    Record::LoopDetected {
                        kind: Some("gemini-cli".into()),
                        detail: Some(content),
                    },
                    line,
                );
            }
        }
        "error" | "warning" => {}
        _ => out.unknown(),
    }
    Ok(())
}

fn gemini(
    out: &mut Out,
    sid: &str,
    line: u32,
    path: &str,
    m: &Map<String, Value>,
    content: String,
) -> std::result::Result<(), RecordError> {
    out.push(sid, Record::Turn, line);
    for t in opt_arr(m, "thoughts", &format!("{path}.thoughts"))? {
        let subject = t.get("subject").and_then(Value::as_str).unwrap_or_default();
        let desc = t
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // The CLI leaves "\n\n" artefacts at the start of streamed thoughts.
        let text = match (subject.trim(), desc.trim_start_matches('\n')) {
            ("", d) => d.to_string(),
            (s, "") => s.to_string(),
            (s, d) => format!("{s}: {d}"),
        };
        out.push(sid, Record::Thought { text }, line);
    }
    if !content.is_empty() {
        out.push(sid, Record::Content { text: content }, line);
    }
    let calls = opt_arr(m, "toolCalls", &format!("{path}.toolCalls"))?;
    let mut results = Vec::new();
    for (ci, c) in calls.iter().enumerate() {
        let cp = format!("{path}.toolCalls[{ci}]");
        let Some(c) = c.as_object() else {
            return Err(FieldError::ty(&cp, "an object").into());
        };
        let name = super::common::req_str(c, "name", &format!("{cp}.name"))?;
        let id = opt_str(c, "id", &format!("{cp}.id"))?.map(str::to_string);
        out.push(
            sid,
            Record::ToolCall {
                name: name.to_string(),
                args: args_from_value(c.get("args")).into(),
                id: id.clone(),
            },
            line,
        );
        let has_result = c.get("result").is_some_and(|r| !r.is_null()) || c.contains_key("status");
        if has_result {
            let mut output = None;
            for r in c
                .get("result")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let resp = r.get("functionResponse").and_then(|f| f.get("response"));
                if let Some(resp) = resp {
                    output = resp
                        .get("output")
                        .or_else(|| resp.get("error"))
                        .and_then(Value::as_str)
                        .map(str::to_string);
                }
                if output.is_some() {
                    break;
                }
            }
            if output.is_none() {
                output = match c.get("resultDisplay") {
                    Some(Value::String(d)) => Some(d.clone()),
                    Some(Value::Null) | None => None,
                    Some(other) => Some(other.to_string()),
                };
            }
            let status = s(c, "status");
            results.push(Record::ToolResult {
                id,
                name: Some(name.to_string()),
                output,
                error: status.map(|st| st != "success"),
            });
        }
    }
    for r in results {
        out.push(sid, r, line);
    }
    if let Some(t) = m.get("tokens").and_then(Value::as_object) {
        let output = t.get("output").and_then(Value::as_u64);
        let thoughts = t.get("thoughts").and_then(Value::as_u64).unwrap_or(0);
        out.push(
            sid,
            Record::Usage {
                input_tokens: t.get("input").and_then(Value::as_u64),
                output_tokens: output.map(|o| o + thoughts),
            },
            line,
        );
    }
    Ok(())
}

/// Gemini CLI conversation records (JSON or JSONL).
pub(crate) struct GeminiCli;

impl crate::input::format::Format for GeminiCli {
    fn name(&self) -> &'static str {
        "gemini-cli"
    }
    fn expected(&self) -> &'static str {
        "a Gemini CLI ConversationRecord with `sessionId` and `messages`, or its JSONL form"
    }
    fn sniff_doc(&self, doc: &Value) -> bool {
        sniff_doc(doc)
    }
    fn sniff_line(&self, line: &Value) -> bool {
        line.as_object()
            .is_some_and(|m| sniff_line(m) || claims_message(m))
    }
    fn claims_line(&self, line: &Map<String, Value>) -> bool {
        claims_message(line)
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
            display: "s.json",
            stem: "s",
            bytes: text.as_bytes(),
            lenient: false,
            parsed: Default::default(),
        };
        import(&ctx).unwrap()
    }

    #[test]
    fn legacy_json_with_loop_notice() {
        let text = r#"{"sessionId":"X","projectHash":"h","messages":[
{"id":"1","type":"user","content":"hi"},
{"id":"2","type":"gemini","content":"ok","thoughts":[{"subject":"S","description":"\n\nD"}],
 "toolCalls":[{"id":"c","name":"ls","args":{"p":"."},"result":[{"functionResponse":{"response":{"error":"nope"}}}],"status":"error"}],
 "tokens":{"input":3,"output":2,"thoughts":1}},
{"id":"3","type":"info","content":"A potential loop was detected. x"},
{"id":"4","type":"error","content":"quota"}
]}"#;
        let fs = run(text);
        assert!(fs.whole_messages);
        let recs = &fs.sessions[0].1;
        let types: Vec<&str> = recs.iter().map(|e| e.record.type_name()).collect();
        assert_eq!(
            types,
            vec![
                "session",
                "user",
                "turn",
                "thought",
                "content",
                "tool_call",
                "tool_result",
                "usage",
                "loop_detected"
            ]
        );
        assert_eq!(recs[1].origin.line, 2);
        assert_eq!(
            recs[3].record,
            Record::Thought {
                text: "S: D".into()
            }
        );
        assert_eq!(
            recs[6].record,
            Record::ToolResult {
                id: Some("c".into()),
                name: Some("ls".into()),
                output: Some("nope".into()),
                error: Some(true)
            }
        );
    }

    #[test]
    fn jsonl_rewrites_and_rewinds() {
        let text = r#"{"sessionId":"X","projectHash":"h"}
{"id":"1","type":"user","content":"a"}
{"id":"2","type":"gemini","content":"first"}
{"id":"2","type":"gemini","content":"second"}
{"id":"3","type":"user","content":"b"}
{"$rewindTo":"3"}
{"$set":{"summary":"t"}}"#;
        let fs = run(text);
        let recs = &fs.sessions[0].1;
        let types: Vec<&str> = recs.iter().map(|e| e.record.type_name()).collect();
        assert_eq!(types, vec!["session", "user", "turn", "content"]);
        assert_eq!(
            recs[3].record,
            Record::Content {
                text: "second".into()
            }
        );
        // The line of the last copy: it holds the text imported.
        assert_eq!(recs[3].origin.line, 4);
    }
}
