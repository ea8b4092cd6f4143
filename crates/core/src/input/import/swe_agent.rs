//! SWE-agent `.traj` files (one JSON object per run: `trajectory` steps,
//! `history` messages, `info`) mapped onto canonical records: one turn per
//! trajectory step, or per non-demo assistant message for history-only files.

use super::common::{
    args_from_str, doc_or_skip, element_lines, pointer, s, session_rec, text_of, Ctx, Out,
};
use crate::error::Result;
use crate::event::Record;
use serde_json::{Map, Value};

/// Whether a whole JSON document is a SWE-agent trajectory.
pub(crate) fn sniff_doc(v: &Value) -> bool {
    let Some(m) = v.as_object() else { return false };
    let steps = m.get("trajectory").and_then(Value::as_array);
    let history = m.get("history").and_then(Value::as_array);
    let step_like = steps.is_some_and(|t| {
        t.iter()
            .all(|x| x.get("action").is_some() || x.get("observation").is_some())
    });
    let msg_like =
        history.is_some_and(|h| !h.is_empty() && h.iter().all(|x| x.get("role").is_some()));
    (steps.is_some() && step_like && (history.is_none() || msg_like))
        || (steps.is_none() && msg_like && !m.contains_key("messages"))
}

/// Import one `.traj` file.
pub(crate) fn import(ctx: &Ctx) -> Result<crate::input::format::FileSessions> {
    let mut out = Out::new("swe-agent");
    let Some(doc) = doc_or_skip(ctx, &mut out)? else {
        return Ok(out.finish());
    };
    let Some(m) = doc.as_object() else {
        return Err(ctx.file_err("expected a JSON object with `trajectory` or `history`"));
    };
    let sid = ctx.stem.to_string();
    out.open(&sid);
    let empty = Vec::new();
    let history = m.get("history").and_then(Value::as_array).unwrap_or(&empty);
    let live: Vec<&Map<String, Value>> = history
        .iter()
        .filter_map(Value::as_object)
        .filter(|x| !x.get("is_demo").and_then(Value::as_bool).unwrap_or(false))
        .collect();
    out.push(&sid, session_rec("swe-agent", model_of(m), info_meta(m)), 0);
    let task = live.iter().find(|x| s(x, "role") == Some("user"));
    if let Some(t) = task {
        let at = history
            .iter()
            .position(|h| h.as_object().is_some_and(|h| std::ptr::eq(h, *t)));
        out.at(at.map(|i| pointer(&["history".to_string(), i.to_string()])));
        out.push(
            &sid,
            Record::User {
                text: text_of(t.get("content")),
                prompt_id: None,
            },
            0,
        );
    }
    match m.get("trajectory") {
        Some(Value::Array(steps)) => {
            let lines = element_lines(ctx.bytes, Some("trajectory"));
            let history_lines = element_lines(ctx.bytes, Some("history"));
            let assistants: Vec<&Map<String, Value>> = live
                .iter()
                .copied()
                .filter(|x| s(x, "role") == Some("assistant"))
                .collect();
            let mut next = 0usize;
            for (i, step) in steps.iter().enumerate() {
                let line = lines.get(i).copied().unwrap_or(0);
                out.at(Some(pointer(&["trajectory".to_string(), i.to_string()])));
                let Some(step) = step.as_object() else {
                    return Err(ctx.file_err(format!("field `trajectory[{i}]` must be an object")));
                };
                let action = s(step, "action").unwrap_or("");
                // The history message that carried this step's action, if any.
                let found = assistants[next.min(assistants.len())..]
                    .iter()
                    .position(|h| s(h, "action").map(str::trim) == Some(action.trim()))
                    .map(|p| next + p);
                let msg = found.map(|f| {
                    next = f + 1;
                    assistants[f]
                });
                out.push(&sid, Record::Turn, line);
                let thought = s(step, "thought").unwrap_or("");
                if !thought.is_empty() {
                    out.push(
                        &sid,
                        Record::Content {
                            text: thought.to_string(),
                        },
                        line,
                    );
                }
                let calls = msg.map(tool_calls).unwrap_or_default();
                let id = calls.first().and_then(|c| c.2.clone());
                if calls.is_empty() {
                    out.push(&sid, text_action(action), line);
                } else {
                    // The calls are the history message's: name its place.
                    let k = msg.and_then(|m| {
                        history
                            .iter()
                            .position(|h| h.as_object().is_some_and(|h| std::ptr::eq(h, m)))
                    });
                    let call_line = k.and_then(|k| history_lines.get(k).copied());
                    if let Some(k) = k {
                        out.at(Some(pointer(&["history".to_string(), k.to_string()])));
                    }
                    for (name, args, id) in calls {
                        let at = call_line.unwrap_or(line);
                        out.push(&sid, Record::tool_call(name, args, id), at);
                    }
                    out.at(Some(pointer(&["trajectory".to_string(), i.to_string()])));
                }
                out.push(
                    &sid,
                    Record::ToolResult {
                        id,
                        name: None,
                        output: Some(s(step, "observation").unwrap_or_default().to_string()),
                        error: None,
                    },
                    line,
                );
            }
        }
        Some(_) => return Err(ctx.file_err("field `trajectory` must be an array")),
        None => {
            let lines = element_lines(ctx.bytes, Some("history"));
            let mut seen_task = false;
            for (i, h) in history.iter().enumerate() {
                let Some(h) = h.as_object() else { continue };
                if h.get("is_demo").and_then(Value::as_bool).unwrap_or(false) {
                    continue;
                }
                let line = lines.get(i).copied().unwrap_or(0);
                out.at(Some(pointer(&["history".to_string(), i.to_string()])));
                match s(h, "role") {
                    Some("assistant") => {
                        out.push(&sid, Record::Turn, line);
                        let text = s(h, "thought")
                            .map(str::to_string)
                            .unwrap_or_else(|| text_of(h.get("content")));
                        if !text.is_empty() {
                            out.push(&sid, Record::Content { text }, line);
                        }
                        let calls = tool_calls(h);
                        if calls.is_empty() {
                            if let Some(a) = s(h, "action") {
                                out.push(&sid, text_action(a), line);
                            }
                        }
                        for (name, args, id) in calls {
                            out.push(&sid, Record::tool_call(name, args, id), line);
                        }
                    }
                    Some("tool") => out.push(
                        &sid,
                        Record::ToolResult {
                            id: h
                                .get("tool_call_ids")
                                .and_then(|v| v.get(0))
                                .and_then(Value::as_str)
                                .or_else(|| s(h, "tool_call_id"))
                                .map(str::to_string),
                            name: None,
                            output: Some(text_of(h.get("content"))),
                            error: None,
                        },
                        line,
                    ),
                    Some("user") => {
                        // The task was emitted above; later user messages are
                        // observations in text-action configs.
                        if seen_task {
                            out.push(
                                &sid,
                                Record::ToolResult {
                                    id: None,
                                    name: None,
                                    output: Some(text_of(h.get("content"))),
                                    error: None,
                                },
                                line,
                            );
                        }
                        seen_task = true;
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(out.finish())
}

/// A text action (`open foo.py`, `submit`): named by its first word.
fn text_action(action: &str) -> Record {
    let command = action.trim();
    let name = command.split_whitespace().next().unwrap_or("bash");
    let mut args = Map::new();
    args.insert("command".into(), Value::String(command.to_string()));
    Record::ToolCall {
        name: name.to_string(),
        args: args.into(),
        id: None,
    }
}

type Call = (String, Map<String, Value>, Option<String>);

fn tool_calls(h: &Map<String, Value>) -> Vec<Call> {
    h.get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let f = c.get("function")?;
            let name = f.get("name")?.as_str()?.to_string();
            let args = match f.get("arguments") {
                Some(Value::String(a)) => args_from_str(a),
                other => super::common::args_from_value(other),
            };
            Some((
                name,
                args,
                c.get("id").and_then(Value::as_str).map(str::to_string),
            ))
        })
        .collect()
}

fn model_of(m: &Map<String, Value>) -> Option<String> {
    let rc = match m.get("replay_config") {
        Some(Value::String(t)) => serde_json::from_str::<Value>(t).ok()?,
        Some(v) => v.clone(),
        None => return None,
    };
    rc.get("agent")?
        .get("model")?
        .get("name")?
        .as_str()
        .map(str::to_string)
}

/// `info` without the patch and the edited-file excerpts (large, not metadata).
fn info_meta(m: &Map<String, Value>) -> Map<String, Value> {
    let mut meta = Map::new();
    if let Some(info) = m.get("info").and_then(Value::as_object) {
        for (k, v) in info {
            if k != "submission" && !k.starts_with("edited_files") {
                meta.insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(env) = m.get("environment").filter(|v| v.is_string()) {
        meta.insert("environment".into(), env.clone());
    }
    meta
}

/// SWE-agent `.traj` trajectories.
pub(crate) struct SweAgent;

impl crate::input::format::Format for SweAgent {
    fn name(&self) -> &'static str {
        "swe-agent"
    }
    fn expected(&self) -> &'static str {
        "a SWE-agent .traj object with `trajectory` or `history`"
    }
    fn extensions(&self) -> &'static [&'static str] {
        &[".traj", ".json"]
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
    fn steps_become_turns_with_text_actions() {
        let text = r#"{"environment":"x","trajectory":[
{"action":"submit flag{a}\n","observation":"Wrong flag!","thought":"try","response":"r","state":"{}"},
{"action":"ls","observation":"a b","thought":"","response":"r","state":"{}"}],
"history":[{"role":"system","content":"s"},{"role":"user","content":"task","agent":"primary"}],"info":{"submission":"p","exit_status":"submitted"}}"#;
        let ctx = Ctx {
            display: "eps.traj",
            stem: "eps",
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
                "tool_result",
                "turn",
                "tool_call",
                "tool_result"
            ]
        );
        match &recs[4].record {
            Record::ToolCall { name, args, .. } => {
                assert_eq!(name, "submit");
                assert_eq!(args["command"], "submit flag{a}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(recs[2].origin.line, 2);
    }
}
