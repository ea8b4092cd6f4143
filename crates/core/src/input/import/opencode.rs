//! OpenCode sessions in the single-file form `opencode export <id>` writes:
//! `{info: Session.Info, messages: [{info: Message, parts: Part[]}]}` (or the
//! bare message array). The on-disk storage splits a session over one file per
//! session, message and part (`storage/{session,message,part}/...`); those are
//! not read here. Mapping: one turn per `step-start` part (one LLM request),
//! or per assistant message without steps; `tool` parts carry call and result.

use super::common::{
    args_from_value, doc_or_skip, element_lines, pointer, s, session_rec, Ctx, Out,
};
use crate::error::Result;
use crate::event::Record;
use serde_json::{Map, Value};

fn is_entry(v: &Value) -> bool {
    v.get("info").is_some_and(|i| i.get("role").is_some())
        && v.get("parts").is_some_and(Value::is_array)
}

/// Whether a whole JSON document is an OpenCode export.
pub(crate) fn sniff_doc(v: &Value) -> bool {
    match v {
        Value::Array(a) => !a.is_empty() && a.iter().all(is_entry),
        Value::Object(m) => {
            m.get("info").is_some_and(Value::is_object)
                && m.get("messages")
                    .and_then(Value::as_array)
                    .is_some_and(|a| a.iter().all(is_entry))
        }
        _ => false,
    }
}

/// Import one export file.
pub(crate) fn import(ctx: &Ctx) -> Result<crate::input::format::FileSessions> {
    let mut out = Out::new("opencode");
    let Some(doc) = doc_or_skip(ctx, &mut out)? else {
        return Ok(out.finish());
    };
    let (info, entries, lines, root) = match &doc {
        Value::Array(a) => (None, a.as_slice(), element_lines(ctx.bytes, None), None),
        Value::Object(m) => match m.get("messages") {
            Some(Value::Array(a)) => (
                m.get("info").and_then(Value::as_object),
                a.as_slice(),
                element_lines(ctx.bytes, Some("messages")),
                Some("messages"),
            ),
            _ => {
                return Err(
                    ctx.file_err("missing field `messages` (expected an `opencode export` file)")
                )
            }
        },
        _ => return Err(ctx.file_err("expected an `opencode export` JSON object")),
    };
    let sid = ctx.stem.to_string();
    out.open(&sid);
    let model = entries
        .iter()
        .rev()
        .find_map(|e| e.get("info")?.get("modelID")?.as_str().map(str::to_string));
    let mut meta = Map::new();
    if let Some(info) = info {
        for f in ["id", "title", "directory", "version"] {
            if let Some(v) = info.get(f).filter(|v| !v.is_null()) {
                meta.insert(f.to_string(), v.clone());
            }
        }
        if let Some(p) = s(info, "parentID") {
            out.meta(&sid, "parent_session", Value::String(p.to_string()));
        }
    }
    out.push(
        &sid,
        session_rec("opencode", model, meta),
        lines.first().copied().unwrap_or(0),
    );
    for (i, e) in entries.iter().enumerate() {
        let line = lines.get(i).copied().unwrap_or(0);
        let tokens: Vec<String> = root
            .iter()
            .map(|r| r.to_string())
            .chain([i.to_string()])
            .collect();
        out.at(Some(pointer(&tokens)));
        if !is_entry(e) {
            out.bad(
                ctx,
                line as u64,
                format!("field `messages[{i}]` must have `info.role` and `parts`"),
            )?;
            continue;
        }
        let info = &e["info"];
        let parts = e["parts"].as_array().map(Vec::as_slice).unwrap_or_default();
        match info.get("role").and_then(Value::as_str) {
            Some("user") => {
                out.push(
                    &sid,
                    Record::User {
                        text: user_text(parts.iter()),
                        prompt_id: info.get("id").and_then(Value::as_str).map(str::to_string),
                    },
                    line,
                );
            }
            Some("assistant") => assistant(&mut out, &sid, line, parts),
            _ => out.unknown(),
        }
    }
    Ok(out.finish())
}

fn assistant(out: &mut Out, sid: &str, line: u32, parts: &[Value]) {
    if !stepped(parts.iter()) {
        out.push(sid, Record::Turn, line);
    }
    for p in parts {
        let Some(p) = p.as_object() else { continue };
        part(out, sid, line, p);
    }
}

/// Whether an assistant message's parts mark its steps (`step-start`).
pub(crate) fn stepped<'a>(mut parts: impl Iterator<Item = &'a Value>) -> bool {
    parts.any(|p| p.get("type").and_then(Value::as_str) == Some("step-start"))
}

/// The user's text of a user message's parts (synthetic parts left out).
pub(crate) fn user_text<'a>(parts: impl Iterator<Item = &'a Value>) -> String {
    let text: Vec<&str> = parts
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
        .filter(|p| !p.get("synthetic").and_then(Value::as_bool).unwrap_or(false))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect();
    text.join("\n")
}

/// One part of an assistant message.
pub(crate) fn part(out: &mut Out, sid: &str, line: u32, p: &Map<String, Value>) {
    {
        match s(p, "type") {
            Some("step-start") => out.push(sid, Record::Turn, line),
            Some("text") => {
                let t = s(p, "text").unwrap_or_default();
                if !t.is_empty() {
                    out.push(
                        sid,
                        Record::Content {
                            text: t.to_string(),
                        },
                        line,
                    );
                }
            }
            Some("reasoning") => out.push(
                sid,
                Record::Thought {
                    text: s(p, "text").unwrap_or_default().to_string(),
                },
                line,
            ),
            Some("tool") => {
                let name = s(p, "tool").unwrap_or("tool").to_string();
                let id = s(p, "callID").map(str::to_string);
                let state = p.get("state").and_then(Value::as_object);
                out.push(
                    sid,
                    Record::ToolCall {
                        name: name.clone(),
                        args: args_from_value(state.and_then(|st| st.get("input"))).into(),
                        id: id.clone(),
                    },
                    line,
                );
                let status = state.and_then(|st| s(st, "status"));
                if matches!(status, Some("completed" | "error")) {
                    let st = state.expect("status implies state");
                    let output = s(st, "output")
                        .or_else(|| s(st, "error"))
                        .map(str::to_string);
                    out.push(
                        sid,
                        Record::ToolResult {
                            id,
                            name: Some(name),
                            output,
                            error: Some(status == Some("error")),
                        },
                        line,
                    );
                }
            }
            Some("step-finish") => {
                if let Some(t) = p.get("tokens").and_then(Value::as_object) {
                    let n = |k: &str| t.get(k).and_then(Value::as_u64);
                    out.push(
                        sid,
                        Record::Usage {
                            input_tokens: n("input"),
                            output_tokens: n("output").map(|o| o + n("reasoning").unwrap_or(0)),
                        },
                        line,
                    );
                }
            }
            _ => {}
        }
    }
}

/// `opencode export` JSON.
pub(crate) struct OpenCode;

impl crate::input::format::Format for OpenCode {
    fn name(&self) -> &'static str {
        "opencode"
    }
    fn expected(&self) -> &'static str {
        "an `opencode export` object with `info` and `messages[{info, parts}]`"
    }
    fn sniff_doc(&self, doc: &Value) -> bool {
        sniff_doc(doc)
    }
    fn read(&self, ctx: &Ctx) -> Result<crate::input::format::FileSessions> {
        import(ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_tools_and_usage() {
        let text = r#"{"info":{"id":"ses_1","title":"t"},"messages":[
{"info":{"id":"m1","role":"user"},"parts":[{"type":"text","text":"fix it"}]},
{"info":{"id":"m2","role":"assistant","modelID":"claude"},"parts":[
 {"type":"step-start"},{"type":"reasoning","text":"hm"},
 {"type":"tool","callID":"c1","tool":"bash","state":{"status":"error","input":{"command":"ls"},"error":"nope"}},
 {"type":"step-finish","tokens":{"input":5,"output":2,"reasoning":1}},
 {"type":"step-start"},{"type":"text","text":"done"}]}]}"#;
        let ctx = Ctx {
            display: "s.json",
            stem: "s",
            bytes: text.as_bytes(),
            lenient: false,
            parsed: Default::default(),
        };
        let fs = import(&ctx).unwrap();
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
                "thought",
                "tool_call",
                "tool_result",
                "usage",
                "turn",
                "content"
            ]
        );
        assert!(sniff_doc(&serde_json::from_str(text).unwrap()));
    }
}
