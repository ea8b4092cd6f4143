//! OpenAI Codex CLI rollout JSONL (`~/.codex/sessions/.../rollout-*.jsonl`,
//! and `~/.codex/archived_sessions/rollout-*.jsonl.zst` once archived)
//! mapped onto canonical records. One file is one session; turns are implicit
//! (no per-request marker exists in every version).
//!
//! 2026 rollouts (`codex-rs/protocol/src/models.rs`) add response items:
//! `tool_search_call` is a call (`tool_search`, its `arguments`) and
//! `tool_search_output` its result (the tools found, as JSON);
//! `function_call.namespace` prefixes the call's name (`namespace.name`), so
//! same-named tools of two namespaces stay apart; `image_generation_call` is
//! a call (`image_generation`, its revised prompt); `agent_message` (one
//! agent's message to another) is model text, as an assistant `message`
//! (whatever its `phase`); `compaction`, `compaction_summary`,
//! `compaction_trigger` and `context_compaction` are no turn and no record
//! (counted in the session's `compactions`), and `additional_tools` only
//! lists tools.

use super::common::{
    args_from_str, args_from_value, opt_arr, parse_object, req_obj, req_str, s, session_rec,
    text_of, Ctx, Out, RecordError,
};
use crate::error::Result;
use crate::event::Record;
use serde_json::{Map, Value};
use std::collections::HashMap;

const LINE_TYPES: &[&str] = &[
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
];

/// Whether a parsed JSONL line looks like a Codex rollout line.
pub(crate) fn sniff_line(m: &Map<String, Value>) -> bool {
    matches!(s(m, "type"), Some(t) if LINE_TYPES.contains(&t))
        && m.get("payload").is_some_and(Value::is_object)
}

/// Import one rollout file: the typed fast path, else (a line it does not
/// take) the `Value` path.
pub(crate) fn import(ctx: &Ctx) -> Result<crate::input::format::FileSessions> {
    match fast::import(ctx) {
        Some(fs) => Ok(fs),
        None => import_values(ctx),
    }
}

/// Import one rollout file through `serde_json::Value`: every shape, with
/// the errors (and lenient skips) of broken lines.
pub(crate) fn import_values(ctx: &Ctx) -> Result<crate::input::format::FileSessions> {
    let mut out = Out::new("codex");
    let sid = ctx.stem.to_string();
    out.open(&sid);
    let mut st = State::default();
    for (line, text) in super::common::lines(ctx.bytes) {
        let r = parse_object(text).and_then(|m| item(&mut out, &mut st, &sid, line, &m));
        if let Err(e) = r {
            out.bad(ctx, line as u64, e)?;
        }
    }
    Ok(out.finish())
}

#[derive(Default)]
struct State {
    tool_names: HashMap<String, String>,
    last_total: Option<Value>,
    model: Option<String>,
    task_turn_id: Option<String>,
    compactions: u64,
}

fn item(
    out: &mut Out,
    st: &mut State,
    sid: &str,
    line: u32,
    m: &Map<String, Value>,
) -> std::result::Result<(), RecordError> {
    let ty = req_str(m, "type", "type")?;
    let p = req_obj(m, "payload", "payload")?;
    match ty {
        "session_meta" => {
            let mut meta = Map::new();
            for f in [
                "id",
                "cli_version",
                "originator",
                "source",
                "cwd",
                "model_provider",
            ] {
                if let Some(v) = p.get(f).filter(|v| !v.is_null()) {
                    meta.insert(f.to_string(), v.clone());
                }
            }
            out.push(sid, session_rec("codex", None, meta), line);
        }
        "turn_context" => {
            if let Some(model) = s(p, "model") {
                if st.model.as_deref() != Some(model) {
                    st.model = Some(model.to_string());
                    out.push(
                        sid,
                        Record::Session {
                            agent: None,
                            model: Some(model.to_string()),
                            mode: None,
                            meta: None,
                        },
                        line,
                    );
                }
            }
        }
        "event_msg" => match s(p, "type") {
            Some("task_started") => st.task_turn_id = s(p, "turn_id").map(str::to_string),
            Some("user_message") => out.push(
                sid,
                Record::User {
                    text: s(p, "message").unwrap_or_default().to_string(),
                    prompt_id: st.task_turn_id.take(),
                },
                line,
            ),
            Some("token_count") => {
                if let Some(info) = p.get("info").and_then(Value::as_object) {
                    // The CLI writes the same count twice in a row; keep one.
                    let total = info.get("total_token_usage").cloned();
                    if total.is_some() && total == st.last_total {
                        return Ok(());
                    }
                    st.last_total = total;
                    if let Some(last) = info.get("last_token_usage").and_then(Value::as_object) {
                        out.push(
                            sid,
                            Record::Usage {
                                input_tokens: last.get("input_tokens").and_then(Value::as_u64),
                                output_tokens: last.get("output_tokens").and_then(Value::as_u64),
                            },
                            line,
                        );
                    }
                }
            }
            _ => {}
        },
        "response_item" => response_item(out, st, sid, line, p)?,
        "compacted" => {}
        _ => out.unknown(),
    }
    Ok(())
}

fn response_item(
    out: &mut Out,
    st: &mut State,
    sid: &str,
    line: u32,
    p: &Map<String, Value>,
) -> std::result::Result<(), RecordError> {
    match s(p, "type") {
        Some("message") => {
            // User and developer messages carry injected context; the typed
            // prompt comes from `event_msg/user_message`.
            if s(p, "role") == Some("assistant") {
                let text = text_of(p.get("content"));
                if !text.is_empty() {
                    out.push(sid, Record::Content { text }, line);
                }
            }
        }
        Some("reasoning") => {
            let mut parts: Vec<String> = Vec::new();
            for (field, path) in [
                ("summary", "payload.summary"),
                ("content", "payload.content"),
            ] {
                for x in opt_arr(p, field, path)? {
                    if let Some(t) = x.get("text").and_then(Value::as_str) {
                        parts.push(t.to_string());
                    }
                }
            }
            let text = parts.join("\n");
            if !text.is_empty() {
                out.push(sid, Record::Thought { text }, line);
            }
        }
        Some("function_call") => {
            let name = req_str(p, "name", "payload.name")?;
            let args = match p.get("arguments") {
                Some(Value::String(a)) => args_from_str(a),
                other => args_from_value(other),
            };
            match s(p, "namespace").filter(|n| !n.is_empty()) {
                Some(ns) => {
                    let name = format!("{ns}.{name}");
                    call(out, st, sid, line, &name, args, s(p, "call_id"));
                }
                None => call(out, st, sid, line, name, args, s(p, "call_id")),
            }
        }
        Some("tool_search_call") => {
            let args = match p.get("arguments") {
                Some(Value::String(a)) => args_from_str(a),
                other => args_from_value(other),
            };
            call(out, st, sid, line, "tool_search", args, s(p, "call_id"));
        }
        Some("image_generation_call") => {
            let mut args = Map::new();
            if let Some(prompt) = p.get("revised_prompt").filter(|v| !v.is_null()) {
                args.insert("prompt".into(), prompt.clone());
            }
            call(out, st, sid, line, "image_generation", args, s(p, "id"));
        }
        Some("agent_message") => {
            let text = text_of(p.get("content"));
            if !text.is_empty() {
                out.push(sid, Record::Content { text }, line);
            }
        }
        Some("tool_search_output") => {
            let id = s(p, "call_id");
            let output = match p.get("tools") {
                Some(Value::Null) | None => String::new(),
                Some(tools) => tools.to_string(),
            };
            let error = s(p, "status").map(|st| st == "failed" || st == "incomplete");
            out.push(
                sid,
                Record::ToolResult {
                    id: id.map(str::to_string),
                    name: id.and_then(|i| st.tool_names.get(i)).cloned(),
                    output: Some(output),
                    error,
                },
                line,
            );
        }
        Some("compaction" | "compaction_summary" | "compaction_trigger" | "context_compaction") => {
            st.compactions += 1;
            out.meta(sid, "compactions", Value::from(st.compactions));
        }
        Some("additional_tools") => {}
        Some("custom_tool_call") => {
            let name = req_str(p, "name", "payload.name")?;
            let mut args = Map::new();
            args.insert(
                "input".into(),
                p.get("input").cloned().unwrap_or(Value::Null),
            );
            call(out, st, sid, line, name, args, s(p, "call_id"));
        }
        Some("local_shell_call") => {
            let args = args_from_value(p.get("action"));
            call(out, st, sid, line, "local_shell", args, s(p, "call_id"));
        }
        Some("web_search_call") => {
            let args = args_from_value(p.get("action"));
            call(out, st, sid, line, "web_search", args, None);
        }
        Some("function_call_output" | "custom_tool_call_output" | "local_shell_call_output") => {
            let id = s(p, "call_id");
            let raw = match p.get("output") {
                Some(Value::String(o)) => o.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => text_of(Some(other)),
            };
            let (output, error) = output_and_error(&raw);
            out.push(
                sid,
                Record::ToolResult {
                    id: id.map(str::to_string),
                    name: id.and_then(|i| st.tool_names.get(i)).cloned(),
                    output: Some(output),
                    error,
                },
                line,
            );
        }
        Some("ghost_snapshot") => {}
        _ => out.unknown(),
    }
    Ok(())
}

fn call(
    out: &mut Out,
    st: &mut State,
    sid: &str,
    line: u32,
    name: &str,
    args: Map<String, Value>,
    id: Option<&str>,
) {
    if let Some(id) = id {
        st.tool_names.insert(id.to_string(), name.to_string());
    }
    out.push(
        sid,
        Record::ToolCall {
            name: name.to_string(),
            args: args.into(),
            id: id.map(str::to_string),
        },
        line,
    );
}

/// A tool output and whether it failed: the JSON envelope's `exit_code`, else
/// an exit code stated in the text; unknown stays `None`.
pub(crate) fn output_and_error(raw: &str) -> (String, Option<bool>) {
    if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(raw) {
        if let Some(o) = m.get("output").and_then(Value::as_str) {
            let code = m
                .get("metadata")
                .and_then(|md| md.get("exit_code"))
                .and_then(Value::as_i64);
            return (o.to_string(), code.map(|c| c != 0));
        }
    }
    for marker in ["Process exited with code ", "Exit code: "] {
        if let Some(pos) = raw.find(marker) {
            let digits: String = raw[pos + marker.len()..]
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '-')
                .collect();
            if let Ok(c) = digits.parse::<i64>() {
                return (raw.to_string(), Some(c != 0));
            }
        }
    }
    if raw.contains("Process running with session ID") {
        return (raw.to_string(), Some(false));
    }
    (raw.to_string(), None)
}

/// The same mapping over typed lines ([`super::typed`]): no `Value` tree
/// but for tool arguments and metadata, strings borrowed from the file,
/// unread fields skipped. `None` as soon as a line is not what it reads: the
/// caller starts over on the `Value` path, which says why.
mod fast {
    use super::super::typed::{line_or_skip, text_of_content, Content, Obj, Str, TextPart};
    use super::*;
    use crate::input::format::FileSessions;
    use serde::{Deserialize, Deserializer};
    use serde_json::value::RawValue;

    #[derive(Deserialize)]
    struct Line<'a> {
        #[serde(borrow, rename = "type")]
        ty: Str<'a>,
        #[serde(borrow)]
        payload: Option<Obj<Payload<'a>>>,
    }

    /// Every payload's fields the mapping reads, by name.
    #[derive(Deserialize)]
    struct Payload<'a> {
        #[serde(borrow, rename = "type")]
        ty: Str<'a>,
        // Session metadata (and an image call's id), kept as text until read.
        #[serde(borrow)]
        id: Option<&'a RawValue>,
        #[serde(borrow)]
        cli_version: Option<&'a RawValue>,
        #[serde(borrow)]
        originator: Option<&'a RawValue>,
        #[serde(borrow)]
        source: Option<&'a RawValue>,
        #[serde(borrow)]
        cwd: Option<&'a RawValue>,
        #[serde(borrow)]
        model_provider: Option<&'a RawValue>,
        #[serde(borrow)]
        model: Str<'a>,
        #[serde(borrow)]
        turn_id: Str<'a>,
        #[serde(borrow)]
        message: Str<'a>,
        info: Option<Obj<Info>>,
        #[serde(borrow)]
        role: Str<'a>,
        #[serde(borrow)]
        content: Option<Content<Part<'a>>>,
        #[serde(borrow)]
        summary: Option<Content<Part<'a>>>,
        #[serde(borrow)]
        name: Str<'a>,
        #[serde(borrow)]
        namespace: Str<'a>,
        #[serde(borrow)]
        call_id: Str<'a>,
        arguments: Option<Value>,
        revised_prompt: Option<Value>,
        tools: Option<Value>,
        #[serde(borrow)]
        status: Str<'a>,
        input: Option<Value>,
        action: Option<Value>,
        output: Option<Value>,
    }

    #[derive(Deserialize)]
    struct Info {
        /// Kept as written, `null` included: a repeated total is dropped.
        #[serde(default, deserialize_with = "present")]
        total_token_usage: Option<Value>,
        last_token_usage: Option<Obj<Last>>,
    }

    #[derive(Deserialize)]
    struct Last {
        input_tokens: Option<u64>,
        output_tokens: Option<u64>,
    }

    /// A part of a message's content or of a reasoning summary.
    #[derive(Deserialize)]
    struct Part<'a> {
        #[serde(borrow, rename = "type")]
        ty: Str<'a>,
        #[serde(borrow)]
        text: Str<'a>,
    }

    /// A field that is there, `null` or not.
    fn present<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Value>, D::Error> {
        Value::deserialize(d).map(Some)
    }

    impl TextPart for Part<'_> {
        fn ty(&self) -> Option<&str> {
            self.ty.as_deref()
        }
        fn text(&self) -> Option<&str> {
            self.text.as_deref()
        }
    }

    /// Tool-call arguments as [`args_from_value`] makes them, a string parsed.
    fn args_of(v: Option<Value>) -> Map<String, Value> {
        match v {
            Some(Value::String(a)) => args_from_str(&a),
            Some(Value::Object(m)) => m,
            other => args_from_value(other.as_ref()),
        }
    }

    pub(super) fn import(ctx: &Ctx) -> Option<FileSessions> {
        let mut out = Out::new("codex");
        let sid = ctx.stem.to_string();
        out.open(&sid);
        let mut st = State::default();
        for (n, text) in super::super::common::lines(ctx.bytes) {
            if let Some(l) = line_or_skip::<Line>(ctx, &mut out, n, text)? {
                item(&mut out, &mut st, &sid, n, l)?;
            }
        }
        Some(out.finish())
    }

    fn item(out: &mut Out, st: &mut State, sid: &str, line: u32, l: Line) -> Option<()> {
        let ty = l.ty?;
        let Obj(mut p) = l.payload?;
        match &*ty {
            "session_meta" => {
                let mut meta = Map::new();
                for (f, v) in [
                    ("id", p.id),
                    ("cli_version", p.cli_version),
                    ("originator", p.originator),
                    ("source", p.source),
                    ("cwd", p.cwd),
                    ("model_provider", p.model_provider),
                ] {
                    if let Some(v) = v {
                        meta.insert(f.to_string(), super::super::typed::value(v)?);
                    }
                }
                out.push(sid, session_rec("codex", None, meta), line);
            }
            "turn_context" => {
                if let Some(model) = p.model.as_deref() {
                    if st.model.as_deref() != Some(model) {
                        st.model = Some(model.to_string());
                        out.push(
                            sid,
                            Record::Session {
                                agent: None,
                                model: Some(model.to_string()),
                                mode: None,
                                meta: None,
                            },
                            line,
                        );
                    }
                }
            }
            "event_msg" => match p.ty.as_deref() {
                Some("task_started") => st.task_turn_id = p.turn_id.map(|t| t.0.into_owned()),
                Some("user_message") => out.push(
                    sid,
                    Record::User {
                        text: p.message.as_deref().unwrap_or_default().to_string(),
                        prompt_id: st.task_turn_id.take(),
                    },
                    line,
                ),
                Some("token_count") => {
                    if let Some(Obj(info)) = p.info {
                        // The CLI writes the same count twice in a row; keep one.
                        let total = info.total_token_usage;
                        if total.is_some() && total == st.last_total {
                            return Some(());
                        }
                        st.last_total = total;
                        if let Some(Obj(last)) = info.last_token_usage {
                            out.push(
                                sid,
                                Record::Usage {
                                    input_tokens: last.input_tokens,
                                    output_tokens: last.output_tokens,
                                },
                                line,
                            );
                        }
                    }
                }
                _ => {}
            },
            "response_item" => response_item(out, st, sid, line, &mut p)?,
            "compacted" => {}
            _ => out.unknown(),
        }
        Some(())
    }

    fn response_item(
        out: &mut Out,
        st: &mut State,
        sid: &str,
        line: u32,
        p: &mut Payload,
    ) -> Option<()> {
        let call_id = p.call_id.as_deref();
        match p.ty.as_deref() {
            Some("message") => {
                if p.role.as_deref() == Some("assistant") {
                    let text = text_of_content(p.content.as_ref());
                    if !text.is_empty() {
                        out.push(sid, Record::Content { text }, line);
                    }
                }
            }
            Some("reasoning") => {
                let mut parts: Vec<&str> = Vec::new();
                for field in [&p.summary, &p.content] {
                    match field {
                        None => {}
                        Some(Content::Text(_)) => return None,
                        Some(Content::Parts(xs)) => {
                            parts.extend(xs.iter().filter_map(|Obj(x)| x.text.as_deref()))
                        }
                    }
                }
                let text = parts.join("\n");
                if !text.is_empty() {
                    out.push(sid, Record::Thought { text }, line);
                }
            }
            Some("function_call") => {
                let name = p.name.as_deref()?;
                let args = args_of(p.arguments.take());
                match p.namespace.as_deref().filter(|n| !n.is_empty()) {
                    Some(ns) => {
                        let name = format!("{ns}.{name}");
                        call(out, st, sid, line, &name, args, call_id);
                    }
                    None => call(out, st, sid, line, name, args, call_id),
                }
            }
            Some("tool_search_call") => {
                let args = args_of(p.arguments.take());
                call(out, st, sid, line, "tool_search", args, call_id);
            }
            Some("image_generation_call") => {
                let mut args = Map::new();
                if let Some(prompt) = p.revised_prompt.take() {
                    args.insert("prompt".into(), prompt);
                }
                let id = match p.id.map(super::super::typed::value) {
                    Some(v) => v?,
                    None => Value::Null,
                };
                call(out, st, sid, line, "image_generation", args, id.as_str());
            }
            Some("agent_message") => {
                let text = text_of_content(p.content.as_ref());
                if !text.is_empty() {
                    out.push(sid, Record::Content { text }, line);
                }
            }
            Some("tool_search_output") => {
                let output = match &p.tools {
                    None => String::new(),
                    Some(tools) => tools.to_string(),
                };
                let error = p
                    .status
                    .as_deref()
                    .map(|s| s == "failed" || s == "incomplete");
                out.push(
                    sid,
                    Record::ToolResult {
                        id: call_id.map(str::to_string),
                        name: call_id.and_then(|i| st.tool_names.get(i)).cloned(),
                        output: Some(output),
                        error,
                    },
                    line,
                );
            }
            Some(
                "compaction" | "compaction_summary" | "compaction_trigger" | "context_compaction",
            ) => {
                st.compactions += 1;
                out.meta(sid, "compactions", Value::from(st.compactions));
            }
            Some("additional_tools") => {}
            Some("custom_tool_call") => {
                let name = p.name.as_deref()?;
                let mut args = Map::new();
                args.insert("input".into(), p.input.take().unwrap_or(Value::Null));
                call(out, st, sid, line, name, args, call_id);
            }
            Some("local_shell_call") => {
                let args = args_from_value(p.action.as_ref());
                call(out, st, sid, line, "local_shell", args, call_id);
            }
            Some("web_search_call") => {
                let args = args_from_value(p.action.as_ref());
                call(out, st, sid, line, "web_search", args, None);
            }
            Some(
                "function_call_output" | "custom_tool_call_output" | "local_shell_call_output",
            ) => {
                let raw = match p.output.take() {
                    Some(Value::String(o)) => o,
                    None => String::new(),
                    Some(other) => text_of(Some(&other)),
                };
                let (output, error) = output_and_error(&raw);
                out.push(
                    sid,
                    Record::ToolResult {
                        id: call_id.map(str::to_string),
                        name: call_id.and_then(|i| st.tool_names.get(i)).cloned(),
                        output: Some(output),
                        error,
                    },
                    line,
                );
            }
            Some("ghost_snapshot") => {}
            _ => out.unknown(),
        }
        Some(())
    }
}

/// Codex CLI rollout JSONL.
pub(crate) struct Codex;

impl crate::input::format::Format for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }
    fn expected(&self) -> &'static str {
        "Codex rollout JSONL: lines with `type` and `payload`"
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

    /// The typed fast path reads every rollout of the real corpus, the
    /// fixtures and a synth corpus exactly as the `Value` path does, and is
    /// the path taken for the synth files.
    #[test]
    fn the_fast_path_reads_as_the_value_path() {
        super::super::typed::fast_path_agrees("codex", 20, fast::import, import_values);
    }

    /// Lines the fast path does not take go to the `Value` path whole; a
    /// repeated `null` total is still a repeat.
    #[test]
    fn odd_lines_take_the_value_path() {
        for text in [
            r#"{"type":"response_item","payload":{"type":"reasoning","summary":"s"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":7}}"#,
            r#"{"type":"event_msg"}"#,
        ] {
            let ctx = Ctx {
                display: "r.jsonl",
                stem: "r",
                bytes: text.as_bytes(),
                lenient: true,
                parsed: Default::default(),
            };
            assert!(fast::import(&ctx).is_none(), "{text}");
            assert!(import(&ctx).is_ok(), "{text}");
        }
        // A line that is no JSON object is skipped as the Value path skips it.
        let text = "[\"event_msg\",{}]\n{\"type\":\"session_meta\",\"payload\":{}}\n{broken";
        let ctx = Ctx {
            display: "r.jsonl",
            stem: "r",
            bytes: text.as_bytes(),
            lenient: true,
            parsed: Default::default(),
        };
        let fs = fast::import(&ctx).unwrap();
        assert!(super::super::typed::difference(&fs, &import_values(&ctx)).is_empty());
        assert_eq!(fs.skipped.len(), 2);
        let strict = Ctx {
            lenient: false,
            ..ctx
        };
        assert!(fast::import(&strict).is_none());
        let text = r#"{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":null,"last_token_usage":{"input_tokens":1}}}}
{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":null,"last_token_usage":{"input_tokens":1}}}}"#;
        let ctx = Ctx {
            display: "r.jsonl",
            stem: "r",
            bytes: text.as_bytes(),
            lenient: false,
            parsed: Default::default(),
        };
        let fs = fast::import(&ctx).unwrap();
        assert!(super::super::typed::difference(&fs, &import_values(&ctx)).is_empty());
        assert_eq!(fs.sessions[0].1.len(), 1);
    }

    #[test]
    fn outputs_and_exit_codes() {
        assert_eq!(
            output_and_error(r#"{"output":"x","metadata":{"exit_code":2}}"#),
            ("x".to_string(), Some(true))
        );
        assert_eq!(
            output_and_error("Chunk\nProcess exited with code 0\nOutput:").1,
            Some(false)
        );
        assert_eq!(output_and_error("Exit code: 1\n").1, Some(true));
        assert_eq!(output_and_error("Plan updated").1, None);
    }

    /// 2026 item types: a tool search is a call and its output a result, a
    /// namespace prefixes the name, an agent message is text, compactions
    /// are counted but make no record (so no turn), and none is unknown.
    #[test]
    fn items_of_2026() {
        let text = r#"{"type":"session_meta","payload":{"id":"X"}}
{"type":"response_item","payload":{"type":"tool_search_call","call_id":"s1","status":"completed","execution":"client","arguments":{"query":"calendar"}}}
{"type":"response_item","payload":{"type":"tool_search_output","call_id":"s1","status":"completed","execution":"client","tools":[{"name":"create_event"}]}}
{"type":"response_item","payload":{"type":"function_call","namespace":"calendar","name":"create_event","arguments":"{\"day\":1}","call_id":"c1"}}
{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"ok"}}
{"type":"response_item","payload":{"type":"compaction","encrypted_content":"xyz"}}
{"type":"response_item","payload":{"type":"context_compaction","summary":"s"}}
{"type":"response_item","payload":{"type":"additional_tools","tools":[]}}
{"type":"response_item","payload":{"type":"message","role":"assistant","phase":"commentary","content":[{"type":"output_text","text":"checking"}]}}
{"type":"response_item","payload":{"type":"agent_message","author":"worker","recipient":"root","content":[{"type":"output_text","text":"done"}]}}
{"type":"response_item","payload":{"type":"image_generation_call","id":"ig1","status":"completed","revised_prompt":"a cat","result":"AAAA"}}"#;
        let ctx = Ctx {
            display: "r.jsonl",
            stem: "r",
            bytes: text.as_bytes(),
            lenient: false,
            parsed: Default::default(),
        };
        let fs = import(&ctx).unwrap();
        assert_eq!(fs.unknown, 0);
        let recs = &fs.sessions[0].1;
        let got: Vec<String> = recs
            .iter()
            .map(|e| match &e.record {
                Record::ToolCall { name, args, id } => {
                    format!(
                        "call {name} {} {id:?}",
                        serde_json::to_string(args).unwrap()
                    )
                }
                Record::ToolResult {
                    name,
                    output,
                    error,
                    ..
                } => format!("result {name:?} {output:?} {error:?}"),
                Record::Content { text } => format!("content {text}"),
                other => other.type_name().to_string(),
            })
            .collect();
        assert_eq!(
            got,
            vec![
                "session",
                r#"call tool_search {"query":"calendar"} Some("s1")"#,
                r#"result Some("tool_search") Some("[{\"name\":\"create_event\"}]") Some(false)"#,
                r#"call calendar.create_event {"day":1} Some("c1")"#,
                r#"result Some("calendar.create_event") Some("ok") None"#,
                "content checking",
                "content done",
                r#"call image_generation {"prompt":"a cat"} Some("ig1")"#,
            ]
        );
        assert_eq!(fs.session_meta["r"]["compactions"], 2);
    }

    #[test]
    fn raw_arguments_and_duplicate_token_counts() {
        let text = r#"{"timestamp":"t","type":"session_meta","payload":{"id":"X","cli_version":"0.1"}}
{"type":"event_msg","payload":{"type":"user_message","message":"hi"}}
{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"[REDACTED len=3]","call_id":"c1"}}
{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"Exit code: 0"}}
{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":5},"last_token_usage":{"input_tokens":5,"output_tokens":1}}}}
{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":5},"last_token_usage":{"input_tokens":5,"output_tokens":1}}}}"#;
        let ctx = Ctx {
            display: "r.jsonl",
            stem: "r",
            bytes: text.as_bytes(),
            lenient: false,
            parsed: Default::default(),
        };
        let fs = import(&ctx).unwrap();
        let recs = &fs.sessions[0].1;
        let types: Vec<&str> = recs.iter().map(|e| e.record.type_name()).collect();
        assert_eq!(
            types,
            vec!["session", "user", "tool_call", "tool_result", "usage"]
        );
        match &recs[2].record {
            Record::ToolCall { args, .. } => assert_eq!(args["_raw"], "[REDACTED len=3]"),
            other => panic!("{other:?}"),
        }
    }
}
