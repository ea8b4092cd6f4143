//! Claude Code session JSONL (`~/.claude/projects/<project>/<session>.jsonl` and
//! subagent `agent-<id>.jsonl` files) mapped onto canonical records.
//!
//! One turn per new assistant `message.id` (the CLI writes one record per
//! content block); records de-duplicated by `uuid` (resume copies; across
//! files through `record_keys`); API-error retries and `<synthetic>` replies
//! are harness output and produce nothing.

use super::common::{
    args_from_value, opt_arr, opt_str, parse_object, s, session_rec, text_of, Ctx, FieldError, Out,
    RecordError,
};
use crate::error::Result;
use crate::event::Record;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// Record types this format writes that carry nothing for the detectors.
const SKIPPED: &[&str] = &[
    "system",
    "summary",
    "progress",
    "queue-operation",
    "file-history-snapshot",
];

/// Whether a parsed JSONL line looks like a Claude Code record.
pub(crate) fn sniff_line(m: &Map<String, Value>) -> bool {
    let ty = s(m, "type").unwrap_or("");
    match ty {
        "user" | "assistant" | "system" | "progress" => {
            m.contains_key("uuid") && (m.contains_key("sessionId") || m.contains_key("parentUuid"))
        }
        "summary" => m.contains_key("leafUuid") || m.contains_key("summary"),
        "file-history-snapshot" => m.contains_key("snapshot") || m.contains_key("messageId"),
        "queue-operation" => m.contains_key("operation"),
        _ => false,
    }
}

/// User text that is harness chatter, not a human prompt.
fn is_harness_text(t: &str) -> bool {
    let t = t.trim_start();
    t.starts_with("<command-name>")
        || t.starts_with("<local-command-")
        || t.starts_with("<task-notification>")
        || t.starts_with("Caveat:")
}

/// Group of a user/assistant record: its `sessionId`, plus the `agentId` for
/// sidechain (subagent) records.
fn group_of(m: &Map<String, Value>) -> (String, Option<String>) {
    let sid = s(m, "sessionId").unwrap_or("").to_string();
    let side = m
        .get("isSidechain")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let agent = if side {
        Some(s(m, "agentId").unwrap_or("").to_string())
    } else {
        None
    };
    (sid, agent)
}

fn is_skipped_assistant(m: &Map<String, Value>) -> bool {
    let api_err = m
        .get("isApiErrorMessage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let synthetic = m
        .get("message")
        .and_then(Value::as_object)
        .and_then(|msg| s(msg, "model"))
        == Some("<synthetic>");
    api_err || synthetic
}

/// Import one Claude Code JSONL file: the typed fast path, else (a line it
/// does not take) the `Value` path.
pub(crate) fn import(ctx: &Ctx) -> Result<crate::input::format::FileSessions> {
    match fast::import(ctx) {
        Some(fs) => Ok(fs),
        None => import_values(ctx),
    }
}

/// Import one Claude Code JSONL file through `serde_json::Value`: every
/// shape, with the errors (and lenient skips) of broken records.
pub(crate) fn import_values(ctx: &Ctx) -> Result<crate::input::format::FileSessions> {
    let mut out = Out::new("claude-code");
    // Pass 1: parse, drop repeated uuids, learn the groups.
    let mut recs: Vec<(u32, Map<String, Value>)> = Vec::new();
    let mut uuids: HashSet<String> = HashSet::new();
    for (line, text) in super::common::lines(ctx.bytes) {
        let m = match parse_object(text) {
            Ok(m) => m,
            Err(e) => {
                out.bad(ctx, line as u64, e)?;
                continue;
            }
        };
        if let Some(u) = s(&m, "uuid") {
            if !uuids.insert(u.to_string()) {
                continue;
            }
        }
        recs.push((line, m));
    }
    let mut groups: Vec<(String, Option<String>)> = Vec::new();
    for (_, m) in &recs {
        if matches!(s(m, "type"), Some("user" | "assistant")) {
            let g = group_of(m);
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
    }
    let id_of = |g: &(String, Option<String>)| -> String {
        if groups.len() == 1 {
            ctx.stem.to_string()
        } else {
            match &g.1 {
                Some(a) => format!("agent-{a}"),
                None => g.0.clone(),
            }
        }
    };
    // Per group: first real model, compactions, last record of each message.id.
    let mut model: HashMap<(String, Option<String>), String> = HashMap::new();
    let mut compactions: HashMap<String, u64> = HashMap::new();
    let mut last_of_msg: HashMap<(String, Option<String>, String), usize> = HashMap::new();
    for (i, (_, m)) in recs.iter().enumerate() {
        match s(m, "type") {
            Some("assistant") if !is_skipped_assistant(m) => {
                let g = group_of(m);
                let msg = m.get("message").and_then(Value::as_object);
                if let Some(mo) = msg.and_then(|x| s(x, "model")) {
                    model.entry(g.clone()).or_insert_with(|| mo.to_string());
                }
                if let Some(mid) = msg.and_then(|x| s(x, "id")) {
                    last_of_msg.insert((g.0, g.1, mid.to_string()), i);
                }
            }
            Some("system") if s(m, "subtype") == Some("compact_boundary") => {
                *compactions
                    .entry(s(m, "sessionId").unwrap_or("").to_string())
                    .or_default() += 1;
            }
            _ => {}
        }
    }
    // Pass 2: emit.
    let mut opened: HashSet<(String, Option<String>)> = HashSet::new();
    let mut seen_msg: HashSet<(String, Option<String>, String)> = HashSet::new();
    let mut tool_names: HashMap<String, String> = HashMap::new();
    let mut mode: HashMap<String, String> = HashMap::new();
    for (i, (line, m)) in recs.iter().enumerate() {
        let line = *line;
        let ty = s(m, "type").unwrap_or("");
        if ty != "user" && ty != "assistant" {
            if !SKIPPED.contains(&ty) {
                out.unknown();
            }
            continue;
        }
        let g = group_of(m);
        let sid = id_of(&g);
        let key = s(m, "uuid");
        if opened.insert(g.clone()) {
            let mut meta = Map::new();
            for f in ["cwd", "version", "gitBranch", "slug"] {
                if let Some(v) = m.get(f).filter(|v| !v.is_null()) {
                    meta.insert(f.to_string(), v.clone());
                }
            }
            meta.insert("session_id".into(), Value::String(g.0.clone()));
            if let Some(n) = compactions.get(&g.0).filter(|_| g.1.is_none()) {
                meta.insert("compactions".into(), Value::from(*n));
            }
            out.push_keyed(
                &sid,
                session_rec("claude-code", model.get(&g).cloned(), meta),
                line,
                key,
            );
            if let Some(a) = &g.1 {
                out.meta(&sid, "parent_session", Value::String(g.0.clone()));
                out.meta(&sid, "agent_id", Value::String(a.clone()));
            }
        }
        let emitted = if ty == "assistant" {
            assistant(
                &mut out,
                m,
                &sid,
                line,
                key,
                (&g, i),
                &last_of_msg,
                &mut seen_msg,
                &mut tool_names,
            )
        } else {
            user(&mut out, m, &sid, line, key, &tool_names, &mut mode)
        };
        if let Err(e) = emitted {
            out.bad(ctx, line as u64, e)?;
        }
    }
    Ok(out.finish())
}

#[allow(clippy::too_many_arguments)]
fn assistant(
    out: &mut Out,
    m: &Map<String, Value>,
    sid: &str,
    line: u32,
    key: Option<&str>,
    (g, idx): (&(String, Option<String>), usize),
    last_of_msg: &HashMap<(String, Option<String>, String), usize>,
    seen_msg: &mut HashSet<(String, Option<String>, String)>,
    tool_names: &mut HashMap<String, String>,
) -> std::result::Result<(), RecordError> {
    if is_skipped_assistant(m) {
        return Ok(());
    }
    let msg = super::common::req_obj(m, "message", "message")?;
    let mid = opt_str(msg, "id", "message.id")?;
    let blocks = opt_arr(msg, "content", "message.content")?;
    let mut recs: Vec<Record> = Vec::new();
    match mid {
        Some(id) => {
            if seen_msg.insert((g.0.clone(), g.1.clone(), id.to_string())) {
                recs.push(Record::Turn);
            }
        }
        None => recs.push(Record::Turn),
    }
    for (bi, b) in blocks.iter().enumerate() {
        let Some(b) = b.as_object() else {
            return Err(FieldError::ty(&format!("message.content[{bi}]"), "an object").into());
        };
        match s(b, "type") {
            Some("thinking") => recs.push(Record::Thought {
                text: s(b, "thinking").unwrap_or_default().to_string(),
            }),
            Some("redacted_thinking") => recs.push(Record::Thought {
                text: String::new(),
            }),
            Some("text") => {
                let t = s(b, "text").unwrap_or_default();
                if !t.is_empty() {
                    recs.push(Record::Content {
                        text: t.to_string(),
                    });
                }
            }
            Some("tool_use") => {
                let name =
                    super::common::req_str(b, "name", &format!("message.content[{bi}].name"))?;
                let id = opt_str(b, "id", &format!("message.content[{bi}].id"))?;
                if let Some(id) = id {
                    tool_names.insert(id.to_string(), name.to_string());
                }
                recs.push(Record::ToolCall {
                    name: name.to_string(),
                    args: args_from_value(b.get("input")).into(),
                    id: id.map(str::to_string),
                });
            }
            _ => {}
        }
    }
    let is_last = mid.is_none_or(|id| {
        last_of_msg.get(&(g.0.clone(), g.1.clone(), id.to_string())) == Some(&idx)
    });
    if is_last {
        if let Some(u) = msg.get("usage").and_then(Value::as_object) {
            let n = |f: &str| u.get(f).and_then(Value::as_u64);
            let input = [
                n("input_tokens"),
                n("cache_creation_input_tokens"),
                n("cache_read_input_tokens"),
            ];
            let input_tokens = if input.iter().all(Option::is_none) {
                None
            } else {
                Some(input.iter().flatten().sum())
            };
            recs.push(Record::Usage {
                input_tokens,
                output_tokens: n("output_tokens"),
            });
        }
    }
    for r in recs {
        out.push_keyed(sid, r, line, key);
    }
    Ok(())
}

fn user(
    out: &mut Out,
    m: &Map<String, Value>,
    sid: &str,
    line: u32,
    key: Option<&str>,
    tool_names: &HashMap<String, String>,
    mode: &mut HashMap<String, String>,
) -> std::result::Result<(), RecordError> {
    let msg = super::common::req_obj(m, "message", "message")?;
    let meta_only = m.get("isMeta").and_then(Value::as_bool).unwrap_or(false)
        || m.get("isCompactSummary")
            .and_then(Value::as_bool)
            .unwrap_or(false);
    if let Some(pm) = s(m, "permissionMode") {
        if mode.get(sid).map(String::as_str) != Some(pm) {
            mode.insert(sid.to_string(), pm.to_string());
            out.push_keyed(
                sid,
                Record::Session {
                    agent: None,
                    model: None,
                    mode: Some(pm.to_string()),
                    meta: None,
                },
                line,
                key,
            );
        }
    }
    let prompt = |out: &mut Out, text: String| {
        if !meta_only && !text.is_empty() && !is_harness_text(&text) {
            out.push_keyed(
                sid,
                Record::User {
                    text,
                    prompt_id: key.map(str::to_string),
                },
                line,
                key,
            );
        }
    };
    match msg.get("content") {
        Some(Value::String(t)) => prompt(out, t.clone()),
        Some(Value::Array(blocks)) => {
            let has_results = blocks
                .iter()
                .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"));
            if !has_results {
                prompt(out, text_of(Some(&Value::Array(blocks.clone()))));
                return Ok(());
            }
            for (bi, b) in blocks.iter().enumerate() {
                let Some(b) = b.as_object() else {
                    return Err(
                        FieldError::ty(&format!("message.content[{bi}]"), "an object").into(),
                    );
                };
                if s(b, "type") != Some("tool_result") {
                    continue;
                }
                let id = opt_str(
                    b,
                    "tool_use_id",
                    &format!("message.content[{bi}].tool_use_id"),
                )?;
                out.push_keyed(
                    sid,
                    Record::ToolResult {
                        id: id.map(str::to_string),
                        name: id.and_then(|i| tool_names.get(i)).cloned(),
                        output: Some(text_of(b.get("content"))),
                        error: Some(b.get("is_error").and_then(Value::as_bool).unwrap_or(false)),
                    },
                    line,
                    key,
                );
            }
        }
        None | Some(Value::Null) => {}
        Some(_) => return Err(FieldError::ty("message.content", "a string or an array").into()),
    }
    Ok(())
}

/// The same mapping over typed lines ([`super::typed`]): no `Value` tree,
/// strings borrowed from the file, unread fields skipped. `None` as soon as
/// a line is not what it reads (broken, a field of another type, a missing
/// `message`, a part that is not an object): the caller starts over on the
/// `Value` path, which says why.
mod fast {
    use super::super::typed::{line_or_skip, text_of_content, Content, Obj, Str, TextPart};
    use super::*;
    use crate::input::format::FileSessions;
    use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
    use serde::Deserialize;
    use serde_json::value::RawValue;

    #[derive(Deserialize)]
    struct Line<'a> {
        #[serde(borrow, rename = "type")]
        ty: Str<'a>,
        #[serde(borrow)]
        uuid: Str<'a>,
        #[serde(borrow, rename = "sessionId")]
        session_id: Str<'a>,
        #[serde(rename = "isSidechain")]
        sidechain: Option<bool>,
        #[serde(borrow, rename = "agentId")]
        agent_id: Str<'a>,
        #[serde(rename = "isApiErrorMessage")]
        api_error: Option<bool>,
        #[serde(borrow)]
        subtype: Str<'a>,
        #[serde(rename = "isMeta")]
        is_meta: Option<bool>,
        #[serde(rename = "isCompactSummary")]
        compact_summary: Option<bool>,
        #[serde(borrow, rename = "permissionMode")]
        permission_mode: Str<'a>,
        // Read only on a group's first record: kept as text until then.
        #[serde(borrow)]
        cwd: Option<&'a RawValue>,
        #[serde(borrow)]
        version: Option<&'a RawValue>,
        #[serde(borrow, rename = "gitBranch")]
        git_branch: Option<&'a RawValue>,
        #[serde(borrow)]
        slug: Option<&'a RawValue>,
        #[serde(borrow)]
        message: Option<Obj<Message<'a>>>,
    }

    #[derive(Deserialize)]
    struct Message<'a> {
        #[serde(borrow)]
        id: Str<'a>,
        #[serde(borrow)]
        model: Str<'a>,
        #[serde(borrow)]
        content: Option<Content<Block<'a>>>,
        usage: Option<Obj<Usage>>,
    }

    /// A content block of either side: assistant text, thinking and tool
    /// calls; user tool results and prompt parts.
    #[derive(Deserialize)]
    struct Block<'a> {
        #[serde(borrow, rename = "type")]
        ty: Str<'a>,
        #[serde(borrow)]
        thinking: Str<'a>,
        #[serde(borrow)]
        text: Str<'a>,
        #[serde(borrow)]
        name: Str<'a>,
        #[serde(borrow)]
        id: Str<'a>,
        input: Option<Value>,
        #[serde(borrow)]
        tool_use_id: Str<'a>,
        #[serde(borrow)]
        content: Option<Content<Block<'a>>>,
        is_error: Option<bool>,
    }

    #[derive(Deserialize)]
    struct Usage {
        input_tokens: Option<u64>,
        cache_creation_input_tokens: Option<u64>,
        cache_read_input_tokens: Option<u64>,
        output_tokens: Option<u64>,
    }

    type Group = (String, Option<String>);

    impl Line<'_> {
        fn ty(&self) -> &str {
            self.ty.as_deref().unwrap_or("")
        }
        fn group(&self) -> Group {
            let sid = self.session_id.as_deref().unwrap_or("").to_string();
            let agent = self
                .sidechain
                .unwrap_or(false)
                .then(|| self.agent_id.as_deref().unwrap_or("").to_string());
            (sid, agent)
        }
        fn msg(&self) -> Option<&Message<'_>> {
            self.message.as_ref().map(|m| &m.0)
        }
        fn skipped_assistant(&self) -> bool {
            self.api_error.unwrap_or(false)
                || self.msg().and_then(|m| m.model.as_deref()) == Some("<synthetic>")
        }
    }

    impl TextPart for Block<'_> {
        fn ty(&self) -> Option<&str> {
            self.ty.as_deref()
        }
        fn text(&self) -> Option<&str> {
            self.text.as_deref()
        }
    }

    pub(super) fn import(ctx: &Ctx) -> Option<FileSessions> {
        let mut out = Out::new("claude-code");
        // Pass 1: parse, drop repeated uuids, learn the groups. Sized for
        // the file's lines at once: grown, the records were copied a dozen
        // times and the sets hashed again at each growth (a live guard
        // reads a whole transcript at every call).
        let lines = memchr::memchr_iter(b'\n', ctx.bytes).count() + 1;
        let mut recs: Vec<(u32, Line)> = Vec::with_capacity(lines);
        let mut uuids: HashSet<std::borrow::Cow<str>> =
            HashSet::with_capacity_and_hasher(lines, Default::default());
        for (n, text) in super::super::common::lines(ctx.bytes) {
            let Some(l) = line_or_skip::<Line>(ctx, &mut out, n, text)? else {
                continue;
            };
            if let Some(u) = &l.uuid {
                if !uuids.insert(u.0.clone()) {
                    continue;
                }
            }
            recs.push((n, l));
        }
        let mut groups: Vec<Group> = Vec::new();
        for (_, l) in &recs {
            if matches!(l.ty(), "user" | "assistant") {
                let g = l.group();
                if !groups.contains(&g) {
                    groups.push(g);
                }
            }
        }
        let id_of = |g: &Group| -> String {
            if groups.len() == 1 {
                ctx.stem.to_string()
            } else {
                match &g.1 {
                    Some(a) => format!("agent-{a}"),
                    None => g.0.clone(),
                }
            }
        };
        // Per group: first real model, compactions, last record of each message.id.
        let mut model: HashMap<Group, String> = HashMap::default();
        let mut compactions: HashMap<String, u64> = HashMap::default();
        let mut last_of_msg: HashMap<(Group, String), usize> =
            HashMap::with_capacity_and_hasher(recs.len(), Default::default());
        for (i, (_, l)) in recs.iter().enumerate() {
            match l.ty() {
                "assistant" if !l.skipped_assistant() => {
                    let g = l.group();
                    if let Some(mo) = l.msg().and_then(|m| m.model.as_deref()) {
                        model.entry(g.clone()).or_insert_with(|| mo.to_string());
                    }
                    if let Some(mid) = l.msg().and_then(|m| m.id.as_deref()) {
                        last_of_msg.insert((g, mid.to_string()), i);
                    }
                }
                "system" if l.subtype.as_deref() == Some("compact_boundary") => {
                    *compactions
                        .entry(l.session_id.as_deref().unwrap_or("").to_string())
                        .or_default() += 1;
                }
                _ => {}
            }
        }
        // Pass 2: emit.
        let mut opened: HashSet<Group> = HashSet::default();
        let mut seen_msg: HashSet<(Group, String)> =
            HashSet::with_capacity_and_hasher(recs.len(), Default::default());
        let mut tool_names: HashMap<String, String> =
            HashMap::with_capacity_and_hasher(recs.len(), Default::default());
        let mut mode: HashMap<String, String> = HashMap::default();
        for (i, (line, l)) in recs.iter_mut().enumerate() {
            let line = *line;
            let ty = l.ty();
            if ty != "user" && ty != "assistant" {
                if !SKIPPED.contains(&ty) {
                    out.unknown();
                }
                continue;
            }
            let g = l.group();
            let sid = id_of(&g);
            let key = l.uuid.as_deref();
            if opened.insert(g.clone()) {
                let mut meta = Map::new();
                for (f, v) in [
                    ("cwd", l.cwd),
                    ("version", l.version),
                    ("gitBranch", l.git_branch),
                    ("slug", l.slug),
                ] {
                    if let Some(v) = v {
                        meta.insert(f.to_string(), super::super::typed::value(v)?);
                    }
                }
                meta.insert("session_id".into(), Value::String(g.0.clone()));
                if let Some(n) = compactions.get(&g.0).filter(|_| g.1.is_none()) {
                    meta.insert("compactions".into(), Value::from(*n));
                }
                out.push_keyed(
                    &sid,
                    session_rec("claude-code", model.get(&g).cloned(), meta),
                    line,
                    key,
                );
                if let Some(a) = &g.1 {
                    out.meta(&sid, "parent_session", Value::String(g.0.clone()));
                    out.meta(&sid, "agent_id", Value::String(a.clone()));
                }
            }
            if ty == "assistant" {
                if l.skipped_assistant() {
                    continue;
                }
                let Obj(msg) = l.message.as_mut()?;
                let mid = msg.id.as_deref();
                let mut recs: Vec<Record> = Vec::new();
                match mid {
                    Some(id) => {
                        if seen_msg.insert((g.clone(), id.to_string())) {
                            recs.push(Record::Turn);
                        }
                    }
                    None => recs.push(Record::Turn),
                }
                let blocks: &mut [Obj<Block>] = match &mut msg.content {
                    None => &mut [],
                    Some(Content::Parts(p)) => p,
                    Some(Content::Text(_)) => return None,
                };
                for Obj(b) in blocks {
                    match b.ty.as_deref() {
                        Some("thinking") => recs.push(Record::Thought {
                            text: b.thinking.as_deref().unwrap_or_default().to_string(),
                        }),
                        Some("redacted_thinking") => recs.push(Record::Thought {
                            text: String::new(),
                        }),
                        Some("text") => {
                            let t = b.text.as_deref().unwrap_or_default();
                            if !t.is_empty() {
                                recs.push(Record::Content {
                                    text: t.to_string(),
                                });
                            }
                        }
                        Some("tool_use") => {
                            let name = b.name.as_deref()?;
                            let id = b.id.as_deref();
                            if let Some(id) = id {
                                tool_names.insert(id.to_string(), name.to_string());
                            }
                            let args = match b.input.take() {
                                Some(Value::Object(m)) => m,
                                other => args_from_value(other.as_ref()),
                            };
                            recs.push(Record::ToolCall {
                                name: name.to_string(),
                                args: args.into(),
                                id: id.map(str::to_string),
                            });
                        }
                        _ => {}
                    }
                }
                let is_last =
                    mid.is_none_or(|id| last_of_msg.get(&(g.clone(), id.to_string())) == Some(&i));
                if let (true, Some(Obj(u))) = (is_last, &msg.usage) {
                    let input = [
                        u.input_tokens,
                        u.cache_creation_input_tokens,
                        u.cache_read_input_tokens,
                    ];
                    let input_tokens = if input.iter().all(Option::is_none) {
                        None
                    } else {
                        Some(input.iter().flatten().sum())
                    };
                    recs.push(Record::Usage {
                        input_tokens,
                        output_tokens: u.output_tokens,
                    });
                }
                for r in recs {
                    out.push_keyed(&sid, r, line, key);
                }
                continue;
            }
            // A user record.
            let msg = l.msg()?;
            let meta_only = l.is_meta.unwrap_or(false) || l.compact_summary.unwrap_or(false);
            if let Some(pm) = l.permission_mode.as_deref() {
                if mode.get(&sid).map(String::as_str) != Some(pm) {
                    mode.insert(sid.clone(), pm.to_string());
                    out.push_keyed(
                        &sid,
                        Record::Session {
                            agent: None,
                            model: None,
                            mode: Some(pm.to_string()),
                            meta: None,
                        },
                        line,
                        key,
                    );
                }
            }
            let prompt = |out: &mut Out, text: String| {
                if !meta_only && !text.is_empty() && !is_harness_text(&text) {
                    out.push_keyed(
                        &sid,
                        Record::User {
                            text,
                            prompt_id: key.map(str::to_string),
                        },
                        line,
                        key,
                    );
                }
            };
            match &msg.content {
                None => {}
                Some(Content::Text(t)) => prompt(&mut out, t.clone()),
                Some(c @ Content::Parts(blocks)) => {
                    let has_results = blocks
                        .iter()
                        .any(|Obj(b)| b.ty.as_deref() == Some("tool_result"));
                    if !has_results {
                        prompt(&mut out, text_of_content(Some(c)));
                        continue;
                    }
                    for Obj(b) in blocks {
                        if b.ty.as_deref() != Some("tool_result") {
                            continue;
                        }
                        let id = b.tool_use_id.as_deref();
                        out.push_keyed(
                            &sid,
                            Record::ToolResult {
                                id: id.map(str::to_string),
                                name: id.and_then(|i| tool_names.get(i)).cloned(),
                                output: Some(text_of_content(b.content.as_ref())),
                                error: Some(b.is_error.unwrap_or(false)),
                            },
                            line,
                            key,
                        );
                    }
                }
            }
        }
        Some(out.finish())
    }
}

/// Claude Code session JSONL.
pub(crate) struct ClaudeCode;

impl crate::input::format::Format for ClaudeCode {
    fn name(&self) -> &'static str {
        "claude-code"
    }
    fn expected(&self) -> &'static str {
        "Claude Code session JSONL: records with `type`, `uuid`, `sessionId`"
    }
    fn sniff_line(&self, line: &Value) -> bool {
        line.as_object().is_some_and(sniff_line)
    }
    fn claims_line(&self, line: &Map<String, Value>) -> bool {
        sniff_line(line)
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
            display: "t.jsonl",
            stem,
            bytes: text.as_bytes(),
            lenient: false,
            parsed: Default::default(),
        };
        import(&ctx).unwrap()
    }

    #[test]
    fn blocks_of_one_response_share_a_turn_and_usage_comes_last() {
        let text = r#"{"type":"user","uuid":"u1","sessionId":"S","message":{"role":"user","content":"go"}}
{"type":"assistant","uuid":"a1","sessionId":"S","message":{"id":"m1","model":"claude","content":[{"type":"thinking","thinking":"hm"}],"usage":{"input_tokens":1,"output_tokens":1}}}
{"type":"assistant","uuid":"a2","sessionId":"S","message":{"id":"m1","model":"claude","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls","description":"x"}}],"usage":{"input_tokens":1,"cache_read_input_tokens":5,"output_tokens":9}}}
{"type":"user","uuid":"u2","sessionId":"S","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"boom","is_error":true}]}}
{"type":"assistant","uuid":"a2","sessionId":"S","message":{"id":"m9","content":[]}}
{"type":"assistant","uuid":"a3","sessionId":"S","isApiErrorMessage":true,"message":{"id":"m2","model":"<synthetic>","content":[{"type":"text","text":"API Error"}]}}
{"type":"system","subtype":"api_error","uuid":"s1","sessionId":"S"}"#;
        let fs = run(text, "S");
        assert_eq!(fs.sessions.len(), 1);
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
                "usage",
                "tool_result"
            ]
        );
        let usage = &fs.sessions[0].1[5].record;
        assert_eq!(
            usage,
            &Record::Usage {
                input_tokens: Some(6),
                output_tokens: Some(9)
            }
        );
        match &fs.sessions[0].1[6].record {
            Record::ToolResult { name, error, .. } => {
                assert_eq!(name.as_deref(), Some("Bash"));
                assert_eq!(*error, Some(true));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(fs.record_keys["S"].len(), 7);
    }

    /// The typed fast path reads every Claude Code file of the real corpus,
    /// the fixtures and a synth corpus exactly as the `Value` path does, and
    /// is the path taken for the synth files.
    #[test]
    fn the_fast_path_reads_as_the_value_path() {
        let (taken, files) =
            super::super::typed::fast_path_agrees("claude-code", 30, fast::import, import_values);
        assert!(taken > files, "{taken} of {files}");
    }

    /// Lines the fast path does not take (a field of another type, a part
    /// that is not an object) go to the `Value` path whole.
    #[test]
    fn odd_lines_take_the_value_path() {
        for text in [
            r#"{"type":"user","uuid":"u1","sessionId":"S","message":{"content":["a",{"type":"text","text":"b"}]}}"#,
            r#"{"type":"user","uuid":7,"sessionId":"S","message":{"content":"a"}}"#,
            r#"{"type":"assistant","uuid":"a","sessionId":"S","message":{"id":"m","content":[{"type":"text","text":"x"}],"usage":{"input_tokens":1.5}}}"#,
            "{\"type\":\"user\",\"uuid\":\"u1\",\"sessionId\":\"S\",\"message\":{\"content\":\"\\ud800\"}}",
        ] {
            let ctx = Ctx {
                display: "t.jsonl",
                stem: "S",
                bytes: text.as_bytes(),
                lenient: false,
                parsed: Default::default(),
            };
            assert!(fast::import(&ctx).is_none(), "{text}");
            assert!(import(&ctx).is_ok(), "{text}");
        }
    }

    #[test]
    fn subagent_file_keeps_its_stem_and_names_its_parent() {
        let text = r#"{"type":"user","uuid":"u1","sessionId":"P","isSidechain":true,"agentId":"abc","message":{"role":"user","content":"explore"}}"#;
        let fs = run(text, "agent-abc");
        assert_eq!(fs.sessions[0].0, "agent-abc");
        assert_eq!(fs.session_meta["agent-abc"]["parent_session"], "P");
    }

    #[test]
    fn two_session_ids_split_by_session_id() {
        let text = r#"{"type":"user","uuid":"u1","sessionId":"OLD","message":{"content":"a"}}
{"type":"user","uuid":"u2","sessionId":"NEW","message":{"content":"b"}}"#;
        let fs = run(text, "NEW");
        let ids: Vec<&str> = fs.sessions.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(ids, vec!["OLD", "NEW"]);
    }
}
