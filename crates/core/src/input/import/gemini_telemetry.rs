//! Gemini CLI's telemetry file (`telemetry.outfile`, `--telemetry-outfile`):
//! OpenTelemetry SDK records (logs, spans, metrics) written one after the
//! other, each pretty-printed over several lines
//! (`packages/core/src/telemetry/file-exporters.ts`; a record that cannot be
//! serialised is `null`). Log records carry the event in `attributes`
//! (`packages/core/src/telemetry/types.ts`, `loggers.ts`):
//! - `gemini_cli.user_prompt` (`prompt_id`, `prompt` when prompts are
//!   logged): a `user` record;
//! - `gemini_cli.api_request`: a `turn` (one model request);
//! - `gemini_cli.api_response`: `usage` (`input_token_count`,
//!   `output_token_count`);
//! - `gemini_cli.tool_call` (`function_name`, `function_args` as JSON text,
//!   `success`, `error`): a `tool_call` and its `tool_result`;
//! - `loop_detected` (`loop_type`, `count`, and for the LLM check
//!   `confirmed_by_model`, `analysis`, `confidence`): a `loop_detected`
//!   record, what the live detector did, after a `judge` record with the
//!   recorded confidence when there is one.
//!
//! Sessions by `attributes["session.id"]` (else the file stem); other
//! records (spans, metrics, other events) give nothing. Records are found
//! by their first line: a `{` (or `null`) at the start of a line opens a
//! record, so a damaged record is skipped alone with `--lenient`.
//! Provenance: the record's first line. A folder walk picks up `*.log`
//! (the docs' `.gemini/telemetry.log`) only when the file's first bytes
//! are such records.

use super::common::{args_from_value, s, session_rec, Ctx, Out};
use crate::error::Result;
use crate::event::Record;
use crate::input::format::{FileSessions, Format};
use crate::input::json::{FieldError, RecordError};
use serde_json::{Map, Value};

/// The Gemini CLI telemetry file.
pub(crate) struct GeminiTelemetry;

/// How many leading records detection looks at.
const SNIFF_RECORDS: usize = 16;
/// How many leading bytes detection looks at.
const SNIFF_BYTES: usize = 1 << 20;

impl Format for GeminiTelemetry {
    fn name(&self) -> &'static str {
        "gemini-telemetry"
    }
    fn expected(&self) -> &'static str {
        "a Gemini CLI telemetry file (`telemetry.outfile`: pretty-printed OpenTelemetry records with `gemini_cli.*` events)"
    }
    fn head_extensions(&self) -> &'static [&'static str] {
        // Gemini CLI's docs name the outfile `.gemini/telemetry.log`.
        &[".log"]
    }
    fn sniff_head(&self, head: &[u8]) -> bool {
        let body = head.strip_prefix(&[0xef, 0xbb, 0xbf]).unwrap_or(head);
        let body = body.trim_ascii_start();
        // Every record carries the resource (`service.name` is Gemini CLI's
        // own), and log records their `gemini_cli.*` event; written by
        // `JSON.stringify(record, null, 2)`, so the spacing is fixed.
        (body.starts_with(b"{") || body.starts_with(b"null"))
            && [
                &b"\"service.name\": \"gemini-cli\""[..],
                &b"\"event.name\": \"gemini_cli."[..],
                &b"\"event.name\": \"loop_detected\""[..],
            ]
            .iter()
            .any(|needle| memchr::memmem::find(body, needle).is_some())
    }
    fn sniff_doc(&self, doc: &Value) -> bool {
        doc.as_object().is_some_and(is_gemini_log)
    }
    fn sniff_stream(&self, bytes: &[u8]) -> bool {
        // The leading records are enough; a file no format knows is not
        // scanned whole.
        records(&bytes[..bytes.len().min(SNIFF_BYTES)])
            .take(SNIFF_RECORDS)
            .any(
                |(_, text)| match crate::input::json::parse_json_slice(text) {
                    Ok(Value::Object(m)) => is_gemini_log(&m),
                    _ => false,
                },
            )
    }
    fn read(&self, ctx: &Ctx) -> Result<FileSessions> {
        read(ctx)
    }
}

/// The event name of a log record.
fn event_name(m: &Map<String, Value>) -> Option<&str> {
    m.get("attributes")?.get("event.name")?.as_str()
}

/// A log record of one of Gemini CLI's events.
fn is_gemini_log(m: &Map<String, Value>) -> bool {
    event_name(m).is_some_and(|n| n.starts_with("gemini_cli.") || n == "loop_detected")
}

/// The records of the file: `(first line, bytes)`. A record starts at a line
/// that begins with `{` or is `null`, and runs to the next such line.
fn records(bytes: &[u8]) -> impl Iterator<Item = (u32, &[u8])> {
    let mut starts: Vec<(u32, usize)> = Vec::new();
    let mut at = 0usize;
    let body = bytes.strip_prefix(&[0xef, 0xbb, 0xbf]).unwrap_or(bytes);
    let off = bytes.len() - body.len();
    for (line, raw) in (1u32..).zip(body.split(|b| *b == b'\n')) {
        if raw.first() == Some(&b'{') || raw.strip_suffix(b"\r").unwrap_or(raw) == b"null" {
            starts.push((line, off + at));
        }
        at += raw.len() + 1;
    }
    let ends: Vec<usize> = starts
        .iter()
        .skip(1)
        .map(|&(_, s)| s)
        .chain(std::iter::once(bytes.len()))
        .collect();
    starts
        .into_iter()
        .zip(ends)
        .map(move |((line, start), end)| (line, &bytes[start..end.min(bytes.len())]))
}

fn read(ctx: &Ctx) -> Result<FileSessions> {
    let mut out = Out::new("gemini-telemetry");
    let mut opened: Vec<String> = Vec::new();
    for (line, text) in records(ctx.bytes) {
        let m = match crate::input::json::parse_json_slice(text) {
            Ok(Value::Object(m)) => m,
            Ok(Value::Null) => continue,
            Ok(_) => {
                out.bad(
                    ctx,
                    line as u64,
                    "expected a JSON object (an OpenTelemetry record)",
                )?;
                continue;
            }
            Err(e) => {
                // serde counts lines from the record's start; an error at
                // its end is on its last line.
                let newlines = text.iter().filter(|b| **b == b'\n').count() as u64;
                let last = line as u64 + newlines - u64::from(text.ends_with(b"\n"));
                let at = (line as u64 + e.line().saturating_sub(1) as u64).min(last);
                out.bad(ctx, at, format!("not JSON: {e}"))?;
                continue;
            }
        };
        let Some(name) = event_name(&m) else { continue };
        let attrs = m["attributes"]
            .as_object()
            .expect("event_name found attributes");
        let sid = s(attrs, "session.id").unwrap_or(ctx.stem).to_string();
        if !opened.contains(&sid) {
            opened.push(sid.clone());
            out.push(&sid, session_rec("gemini-cli", None, Map::new()), line);
        }
        if let Err(why) = event(&mut out, &sid, line, name, attrs) {
            out.bad(ctx, line as u64, why)?;
        }
    }
    Ok(out.finish())
}

fn num(attrs: &Map<String, Value>, key: &str) -> Option<f64> {
    match attrs.get(key)? {
        Value::Number(n) => n.as_f64(),
        Value::String(t) => t.parse().ok(),
        _ => None,
    }
}

fn event(
    out: &mut Out,
    sid: &str,
    line: u32,
    name: &str,
    attrs: &Map<String, Value>,
) -> std::result::Result<(), RecordError> {
    match name {
        "gemini_cli.user_prompt" => out.push(
            sid,
            Record::User {
                text: s(attrs, "prompt").unwrap_or_default().to_string(),
                prompt_id: s(attrs, "prompt_id").map(str::to_string),
            },
            line,
        ),
        "gemini_cli.api_request" => {
            if let Some(model) = s(attrs, "model") {
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
            out.push(sid, Record::Turn, line);
        }
        "gemini_cli.api_response" => {
            let n = |k: &str| num(attrs, k).map(|v| v as u64);
            out.push(
                sid,
                Record::Usage {
                    input_tokens: n("input_token_count"),
                    output_tokens: n("output_token_count"),
                },
                line,
            );
        }
        "gemini_cli.tool_call" => {
            let Some(fname) = s(attrs, "function_name") else {
                return Err(FieldError::Missing("attributes.function_name".into()).into());
            };
            let args = args_from_value(attrs.get("function_args"));
            out.push(sid, Record::tool_call(fname.to_string(), args, None), line);
            let ok = attrs
                .get("success")
                .and_then(Value::as_bool)
                .unwrap_or(true);
            out.push(
                sid,
                Record::ToolResult {
                    id: None,
                    name: Some(fname.to_string()),
                    output: s(attrs, "error").map(str::to_string),
                    error: Some(!ok),
                },
                line,
            );
        }
        "loop_detected" | "gemini_cli.loop_detected" => {
            let kind = s(attrs, "loop_type").map(str::to_string);
            if let Some(confidence) = num(attrs, "confidence") {
                out.push(
                    sid,
                    Record::Judge {
                        confidence,
                        model: s(attrs, "confirmed_by_model").map(str::to_string),
                        analysis: s(attrs, "analysis").map(str::to_string),
                    },
                    line,
                );
            }
            let detail = match num(attrs, "count") {
                Some(c) => format!("live detection, count {c}"),
                None => "live detection".to_string(),
            };
            out.push(
                sid,
                Record::LoopDetected {
                    kind,
                    detail: Some(detail),
                },
                line,
            );
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_start_at_braces_in_the_first_column() {
        let f = b"{\n  \"a\": {\n    \"b\": 1\n  }\n}\nnull\n{\"c\":2}\n";
        let got: Vec<(u32, String)> = records(f)
            .map(|(l, t)| (l, String::from_utf8_lossy(t).trim().to_string()))
            .collect();
        assert_eq!(got[0].0, 1);
        assert_eq!(got[1], (6, "null".to_string()));
        assert_eq!(got[2], (7, "{\"c\":2}".to_string()));
    }
}
