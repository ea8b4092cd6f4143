//! Inspect AI evaluation logs (UK AISI's `inspect_ai`, written to `./logs`):
//! the `.eval` ZIP (`header.json`, or `_journal/start.json` while the run is
//! in progress, and one `samples/{id}_epoch_{epoch}.json` per sample; members
//! deflate- or, since 2026-04, zstd-compressed) and the older single-object
//! `.json` (`EvalLog` with `samples` inline, where bare `NaN` and `Infinity`
//! may stand for numbers).
//!
//! One session per sample and epoch, id the sample's `uuid` (as Inspect Scout
//! names transcripts; `{file stem}:{id}_epoch_{epoch}` for logs without
//! one), built from `sample.messages` (`log/_log.py`, `model/_chat_message.py`):
//! a turn per assistant message, its reasoning parts as thought, its text as
//! content, its `tool_calls` as calls; `tool` messages are results (`error`
//! set: failed); user messages are prompts, system messages nothing. A
//! `sample_limit` event (or `sample.limit`) is kept as the session's `limit`:
//! the run hit a message, token or time cap there. `model` and `task` go to
//! the session's metadata for grouping.
//!
//! A sample written twice (re-logged) is two members with one name: the
//! last wins, as Inspect reads it. Members may not expand past the caps of
//! a compressed file ([`crate::input::format::caps`]). Provenance: a record of a
//! `.eval` names `FILE!MEMBER` with its line and JSON pointer inside the
//! member; of a `.json`, the file with its line and pointer.

use super::common::{pointer, s, session_rec, text_of, value_lines, Ctx, Out, Seg};
use crate::error::{Error, Result};
use crate::event::{Place, Record};
use crate::input::format::FileSessions;
use crate::input::json::{FieldError, RecordError};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::io::Read;

/// The ZIP local file header's magic number.
const ZIP_MAGIC: &[u8] = b"PK\x03\x04";

/// Whether the bytes are an Inspect AI log: a ZIP holding Inspect's members,
/// or an `EvalLog` object (`{"version": 2, "status": ..., "eval": ...`).
fn sniff(bytes: &[u8]) -> bool {
    if bytes.starts_with(ZIP_MAGIC) {
        let has = |name: &[u8]| memchr::memmem::find(bytes, name).is_some();
        return has(b"header.json") || has(b"_journal/start.json") || has(b"start.json");
    }
    let head = &bytes[..bytes.len().min(4096)];
    let head = head.strip_prefix(&[0xef, 0xbb, 0xbf]).unwrap_or(head);
    let text = String::from_utf8_lossy(head);
    let mut t = text.trim_start();
    // `{"version": 2, "status": "...", "eval": {` in this order (pydantic's field order).
    for (i, key) in ["{", "\"version\"", ":"].iter().enumerate() {
        let Some(rest) = t.strip_prefix(key) else {
            return false;
        };
        t = rest.trim_start();
        if i == 2 {
            t = t
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .trim_start();
        }
    }
    let Some(rest) = t.strip_prefix(',') else {
        return false;
    };
    let rest = rest.trim_start();
    rest.starts_with("\"status\"") && text.contains("\"eval\"")
}

/// Bare `NaN`, `Infinity` and `-Infinity` outside strings (Python's JSON)
/// become `null`, so a strict parser reads the document; newlines stay where
/// they are, so lines still count.
fn nan_to_null(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if memchr::memmem::find(bytes, b"NaN").is_none()
        && memchr::memmem::find(bytes, b"Infinity").is_none()
    {
        return std::borrow::Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut in_str = false;
    let mut esc = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_str {
            if esc {
                esc = false;
            } else if b == b'\\' {
                esc = true;
            } else if b == b'"' {
                in_str = false;
            }
            out.push(b);
            i += 1;
            continue;
        }
        let rest = &bytes[i..];
        if let Some(n) = [&b"-Infinity"[..], b"Infinity", b"NaN"]
            .iter()
            .find(|w| rest.starts_with(w))
            .map(|w| w.len())
        {
            out.extend_from_slice(b"null");
            i += n;
            continue;
        }
        if b == b'"' {
            in_str = true;
        }
        out.push(b);
        i += 1;
    }
    std::borrow::Cow::Owned(out)
}

/// Parse a JSON document of an Inspect log (bare `NaN` accepted).
fn parse(bytes: &[u8]) -> std::result::Result<Value, serde_json::Error> {
    let bytes = bytes.strip_prefix(&[0xef, 0xbb, 0xbf]).unwrap_or(bytes);
    crate::input::json::parse_json_slice(&nan_to_null(bytes))
}

/// What every sample of a log shares: the eval's task and model.
#[derive(Default)]
struct EvalSpec {
    task: Option<Value>,
    model: Option<String>,
    meta: Map<String, Value>,
}

impl EvalSpec {
    fn of(eval: Option<&Value>) -> EvalSpec {
        let Some(Value::Object(e)) = eval else {
            return EvalSpec::default();
        };
        let mut meta = Map::new();
        for k in ["task", "task_id", "eval_id", "run_id", "created"] {
            if let Some(v) = e.get(k).filter(|v| !v.is_null()) {
                meta.insert(k.to_string(), v.clone());
            }
        }
        EvalSpec {
            task: e.get("task").cloned(),
            model: s(e, "model").map(str::to_string),
            meta,
        }
    }
}

/// Where one sample was read: the member of a `.eval` (its pointers start at
/// its root), or the index in a `.json`'s `samples`.
enum At {
    Member(String),
    Inline(usize),
}

impl At {
    /// The place of `rest` (pointer tokens) inside this sample, at `line`.
    fn place(&self, display: &str, line: Option<u32>, rest: &[String]) -> Place {
        match self {
            At::Member(name) => Place {
                file: Some(format!("{display}!{name}")),
                line,
                pointer: Some(pointer(rest)),
            },
            At::Inline(i) => {
                let mut toks = vec!["samples".to_string(), i.to_string()];
                toks.extend_from_slice(rest);
                Place {
                    file: None,
                    line: None,
                    pointer: Some(pointer(&toks)),
                }
            }
        }
    }
}

/// Map one sample onto a session. `lines`: the line of each message, by index.
fn sample(
    ctx: &Ctx,
    out: &mut Out,
    spec: &EvalSpec,
    at: &At,
    sample: &Value,
    lines: &HashMap<usize, u32>,
) -> std::result::Result<(), RecordError> {
    let Some(m) = sample.as_object() else {
        return Err(RecordError::NotAnObject("a sample"));
    };
    let id_text = match m.get("id") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => {
            return Err(FieldError::MissingA {
                field: "id".into(),
                what: "a sample's id",
            }
            .into())
        }
    };
    let epoch = m.get("epoch").and_then(Value::as_u64).unwrap_or(1);
    let sid = match s(m, "uuid").filter(|u| !u.is_empty()) {
        Some(u) => u.to_string(),
        None => format!("{}:{id_text}_epoch_{epoch}", ctx.stem),
    };
    let Some(messages) = m.get("messages").and_then(Value::as_array) else {
        return Err(FieldError::MissingA {
            field: "messages".into(),
            what: "an array",
        }
        .into());
    };
    let line_of = |j: usize| -> Option<u32> {
        match at {
            At::Member(_) => lines.get(&j).copied(),
            At::Inline(_) => None,
        }
    };
    // The `.json`'s own line, for records read straight from the file.
    let origin_line = |j: usize| -> u32 {
        match at {
            At::Member(_) => 0,
            At::Inline(_) => lines.get(&j).copied().unwrap_or(0),
        }
    };
    out.at_place(at.place(ctx.display, line_of(0).or(Some(1)), &[]));
    let mut meta = spec.meta.clone();
    meta.insert(
        "sample_id".into(),
        m.get("id").cloned().unwrap_or(Value::Null),
    );
    meta.insert("epoch".into(), Value::from(epoch));
    if let Some(task) = &spec.task {
        meta.insert("task".into(), task.clone());
    }
    out.push(&sid, session_rec("inspect-ai", spec.model.clone(), meta), 0);
    let mut names: HashMap<String, String> = HashMap::new();
    for (j, msg) in messages.iter().enumerate() {
        let Some(msg) = msg.as_object() else {
            return Err(FieldError::ty(&format!("messages[{j}]"), "an object").into());
        };
        let toks = ["messages".to_string(), j.to_string()];
        out.at_place(at.place(ctx.display, line_of(j), &toks));
        let line = origin_line(j);
        match s(msg, "role") {
            Some("system") => {}
            Some("user") => out.push(
                &sid,
                Record::User {
                    text: text_of(msg.get("content")),
                    prompt_id: None,
                },
                line,
            ),
            Some("assistant") => {
                out.push(&sid, Record::Turn, line);
                assistant(out, &sid, line, msg, j, &mut names)?;
            }
            Some("tool") => {
                let id = s(msg, "tool_call_id").map(str::to_string);
                let name = s(msg, "function")
                    .map(str::to_string)
                    .or_else(|| id.as_ref().and_then(|i| names.get(i)).cloned());
                let error = msg.get("error").is_some_and(|e| !e.is_null());
                let mut output = text_of(msg.get("content"));
                if let Some(e) = msg
                    .get("error")
                    .and_then(|e| e.get("message"))
                    .and_then(Value::as_str)
                {
                    if output.is_empty() {
                        output = e.to_string();
                    }
                }
                out.push(
                    &sid,
                    Record::ToolResult {
                        id,
                        name,
                        output: Some(output),
                        error: Some(error),
                    },
                    line,
                );
            }
            Some(other) => {
                return Err(FieldError::Unknown {
                    field: format!("messages[{j}].role"),
                    what: "role",
                    value: other.to_string(),
                }
                .into())
            }
            None => return Err(FieldError::Missing(format!("messages[{j}].role")).into()),
        }
    }
    // The cap the run hit, if any: the `sample_limit` event, else `sample.limit`.
    let limit = m
        .get("events")
        .and_then(Value::as_array)
        .and_then(|ev| {
            ev.iter()
                .find(|e| e.get("event").and_then(Value::as_str) == Some("sample_limit"))
        })
        .map(|e| {
            let mut l = Map::new();
            for k in ["type", "limit", "message"] {
                if let Some(v) = e.get(k).filter(|v| !v.is_null()) {
                    l.insert(k.to_string(), v.clone());
                }
            }
            Value::Object(l)
        })
        .or_else(|| m.get("limit").filter(|v| !v.is_null()).cloned());
    if let Some(limit) = limit {
        out.meta(&sid, "limit", limit);
    }
    if let Some(err) = m.get("error").filter(|v| !v.is_null()) {
        out.meta(
            &sid,
            "error",
            err.get("message").cloned().unwrap_or(err.clone()),
        );
    }
    Ok(())
}

/// An assistant message: reasoning, text, then its tool calls.
fn assistant(
    out: &mut Out,
    sid: &str,
    line: u32,
    msg: &Map<String, Value>,
    j: usize,
    names: &mut HashMap<String, String>,
) -> std::result::Result<(), RecordError> {
    match msg.get("content") {
        Some(Value::Array(parts)) => {
            let mut text: Vec<String> = Vec::new();
            for p in parts {
                match p.get("type").and_then(Value::as_str) {
                    Some("reasoning") => {
                        let r = p
                            .get("reasoning")
                            .and_then(Value::as_str)
                            .or_else(|| p.get("summary").and_then(Value::as_str))
                            .unwrap_or_default();
                        if !r.is_empty() {
                            out.push(
                                sid,
                                Record::Thought {
                                    text: r.to_string(),
                                },
                                line,
                            );
                        }
                    }
                    Some("text") => {
                        if let Some(t) = p.get("text").and_then(Value::as_str) {
                            text.push(t.to_string());
                        }
                    }
                    _ => {}
                }
            }
            let text = text.join("\n");
            if !text.is_empty() {
                out.push(sid, Record::Content { text }, line);
            }
        }
        other => {
            let text = text_of(other);
            if !text.is_empty() {
                out.push(sid, Record::Content { text }, line);
            }
        }
    }
    let calls = match msg.get("tool_calls") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(a)) => a,
        Some(_) => {
            return Err(FieldError::ty(&format!("messages[{j}].tool_calls"), "an array").into())
        }
    };
    for (k, c) in calls.iter().enumerate() {
        let Some(name) = c.get("function").and_then(Value::as_str) else {
            return Err(
                FieldError::Missing(format!("messages[{j}].tool_calls[{k}].function")).into(),
            );
        };
        let args = match c.get("arguments") {
            Some(Value::Object(a)) => a.clone(),
            other => super::common::args_from_value(other),
        };
        let id = c.get("id").and_then(Value::as_str).map(str::to_string);
        if let Some(id) = &id {
            names.insert(id.clone(), name.to_string());
        }
        out.push(
            sid,
            Record::ToolCall {
                name: name.to_string(),
                args: args.into(),
                id,
            },
            line,
        );
    }
    Ok(())
}

/// Read one member whole, within the caps: its declared size first, then
/// what it really gives.
fn member<R: Read + std::io::Seek>(
    ctx: &Ctx,
    zip: &mut zip::ZipArchive<R>,
    name: &str,
    total: &mut u64,
) -> Result<Vec<u8>> {
    let caps = crate::input::format::caps();
    let damaged = |e: &dyn std::fmt::Display| {
        ctx.file_err(format!("ZIP member `{name}` is damaged or truncated ({e})"))
    };
    let f = zip.by_name(name).map_err(|e| damaged(&e))?;
    let stored = f.compressed_size().max(1);
    // The archive as a whole, as one compressed file: its members together
    // may expand at most `max_ratio` times its size past the floor (members
    // each just under the floor added up to gigabytes).
    let archive = ctx.bytes.len() as u64;
    let archive_cap = archive
        .saturating_mul(caps.max_ratio)
        .max(crate::input::format::RATIO_FLOOR);
    let too_big = |size: u64| -> Option<String> {
        if size > caps.max_bytes || total.saturating_add(size) > caps.max_bytes {
            Some(format!(
                "ZIP member `{name}` expands past {} bytes (--max-gzip-bytes raises the cap)",
                caps.max_bytes
            ))
        } else if size > crate::input::format::RATIO_FLOOR
            && size > stored.saturating_mul(caps.max_ratio)
        {
            Some(format!(
                "ZIP member `{name}` expands more than {} times its {stored} bytes (--max-gzip-ratio raises the cap)",
                caps.max_ratio
            ))
        } else if total.saturating_add(size) > archive_cap {
            Some(format!(
                "the archive's members expand past {archive_cap} bytes, more than {} times its {archive} bytes (at ZIP member `{name}`; --max-gzip-ratio raises the cap)",
                caps.max_ratio
            ))
        } else {
            None
        }
    };
    if let Some(why) = too_big(f.size()) {
        return Err(ctx.file_err(why));
    }
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 1 << 20];
    let mut f = f;
    loop {
        let n = match f.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(damaged(&e)),
        };
        if let Some(why) = too_big((buf.len() + n) as u64) {
            return Err(ctx.file_err(why));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    *total += buf.len() as u64;
    Ok(buf)
}

/// Read a `.eval` ZIP.
fn read_eval(ctx: &Ctx) -> Result<FileSessions> {
    let mut out = Out::new("inspect-ai");
    let mut zip = match zip::ZipArchive::new(std::io::Cursor::new(ctx.bytes)) {
        Ok(z) => z,
        Err(e) => {
            let why = format!("not a readable ZIP archive: damaged or truncated ({e})");
            if ctx.lenient {
                out.bad(ctx, 0, why)?;
                return Ok(out.finish());
            }
            return Err(ctx.file_err(why));
        }
    };
    let names: Vec<String> = zip.file_names().map(str::to_string).collect();
    let mut total = 0u64;
    // The eval: the finished header, else the journal's start (a run in progress).
    let head = ["header.json", "_journal/start.json", "start.json"]
        .into_iter()
        .find(|n| names.iter().any(|m| m == n));
    let Some(head) = head else {
        return Err(ctx.file_err("an Inspect AI log needs `header.json` or `_journal/start.json`"));
    };
    let head_bytes = member(ctx, &mut zip, head, &mut total)?;
    let head_doc = parse(&head_bytes).map_err(|e| Error::Line {
        path: format!("{}!{head}", ctx.display),
        line: e.line() as u64,
        message: format!("not valid JSON ({e})"),
    })?;
    let spec = EvalSpec::of(head_doc.get("eval"));
    let mut samples: Vec<&String> = names
        .iter()
        .filter(|n| {
            n.strip_prefix("samples/")
                .is_some_and(|rest| rest.ends_with(".json") && !rest.contains('/'))
        })
        .collect();
    // Chunked samples (`samples/{id}_epoch_{n}/...`, not yet enabled by Inspect) are not read.
    for n in &names {
        if n.starts_with("samples/") && n[8..].contains('/') {
            out.unknown();
        }
    }
    samples.sort();
    for name in samples {
        let bytes = member(ctx, &mut zip, name, &mut total)?;
        let display = format!("{}!{name}", ctx.display);
        let doc = match parse(&bytes) {
            Ok(d) => d,
            Err(e) => {
                let why = format!("not valid JSON ({e})");
                member_bad(ctx, &mut out, &display, e.line() as u64, why)?;
                continue;
            }
        };
        let lines = value_lines(&bytes, &[Seg::Key("messages"), Seg::Index])
            .into_iter()
            .map(|(k, v)| (k[0], v))
            .collect();
        if let Err(why) = sample(
            ctx,
            &mut out,
            &spec,
            &At::Member(name.clone()),
            &doc,
            &lines,
        ) {
            member_bad(ctx, &mut out, &display, 1, why.to_string())?;
        }
    }
    Ok(out.finish())
}

/// A bad sample member: strict, the error at `MEMBER:LINE`; lenient, a skip
/// (counted on the `.eval`, naming the member).
fn member_bad(ctx: &Ctx, out: &mut Out, member: &str, line: u64, why: String) -> Result<()> {
    if ctx.lenient {
        out.bad(ctx, 0, format!("{member}:{line}: {why}"))
    } else {
        Err(Error::Line {
            path: member.to_string(),
            line,
            message: why,
        })
    }
}

/// Read a single-object `.json` log.
fn read_json(ctx: &Ctx) -> Result<FileSessions> {
    let mut out = Out::new("inspect-ai");
    let doc = match parse(ctx.bytes) {
        Ok(d) => d,
        Err(e) => {
            out.bad(ctx, e.line() as u64, format!("not valid JSON ({e})"))?;
            return Ok(out.finish());
        }
    };
    let spec = EvalSpec::of(doc.get("eval"));
    let samples = match doc.get("samples") {
        None | Some(Value::Null) => return Ok(out.finish()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(ctx.file_err("field `samples` must be an array")),
    };
    let all = value_lines(
        ctx.bytes,
        &[
            Seg::Key("samples"),
            Seg::Index,
            Seg::Key("messages"),
            Seg::Index,
        ],
    );
    let starts = value_lines(ctx.bytes, &[Seg::Key("samples"), Seg::Index]);
    // Each sample's message lines, grouped in one pass (a scan of every
    // entry per sample made the read quadratic in samples).
    let mut by_sample: Vec<HashMap<usize, u32>> = vec![HashMap::new(); samples.len()];
    for (k, v) in &all {
        if let Some(lines) = by_sample.get_mut(k[0]) {
            lines.insert(k[1], *v);
        }
    }
    for (i, smp) in samples.iter().enumerate() {
        let lines = std::mem::take(&mut by_sample[i]);
        if let Err(why) = sample(ctx, &mut out, &spec, &At::Inline(i), smp, &lines) {
            let line = starts.get(&vec![i]).copied().unwrap_or(0) as u64;
            out.bad(ctx, line, format!("samples[{i}]: {why}"))?;
        }
    }
    Ok(out.finish())
}

/// Inspect AI `.eval` and `.json` logs.
pub(crate) struct InspectAi;

impl crate::input::format::Format for InspectAi {
    fn name(&self) -> &'static str {
        "inspect-ai"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["inspect"]
    }
    fn expected(&self) -> &'static str {
        "an Inspect AI log: a `.eval` ZIP with `header.json` or `_journal/start.json`, or an EvalLog `.json`"
    }
    fn extensions(&self) -> &'static [&'static str] {
        &[".eval", ".json"]
    }
    fn sniff_bytes(&self, bytes: &[u8]) -> bool {
        sniff(bytes)
    }
    fn read(&self, ctx: &Ctx) -> Result<FileSessions> {
        if ctx.bytes.starts_with(ZIP_MAGIC) {
            read_eval(ctx)
        } else {
            read_json(ctx)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_nan_and_infinity_become_null_outside_strings() {
        let got =
            nan_to_null(b"{\"a\": NaN, \"b\": [-Infinity, Infinity], \"c\": \"NaN Infinity\"}");
        assert_eq!(
            std::str::from_utf8(&got).unwrap(),
            "{\"a\": null, \"b\": [null, null], \"c\": \"NaN Infinity\"}"
        );
        assert!(matches!(nan_to_null(b"{}"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn sniffs_logs_not_other_json() {
        assert!(sniff(
            b"{\n  \"version\": 2,\n  \"status\": \"success\",\n  \"eval\": {}}"
        ));
        assert!(!sniff(b"{\"version\": 2, \"messages\": []}"));
        assert!(!sniff(b"[{\"role\":\"user\"}]"));
        assert!(!sniff(b"PK\x03\x04 something else"));
    }
}
