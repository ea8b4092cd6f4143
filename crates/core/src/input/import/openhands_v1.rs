//! OpenHands V1 (software-agent-sdk, CLI) event stores: one conversation per
//! folder, `base_state.json` beside `events/event-NNNNN-<event id>.json`, one
//! JSON event per file (`openhands/sdk/conversation/persistence_const.py`,
//! `event_store.py`). The CLI keeps them under `~/.openhands/conversations/`.
//!
//! Mapping (event `kind`, the class name):
//! - `MessageEvent` from the user: a `user` record; from the agent: a turn
//!   with its text (`content`) and `reasoning_content` (`thought`); from the
//!   environment (a nudge, stop-hook feedback): nothing.
//! - `ActionEvent`: one model step per `llm_response_id` (a `turn` at the
//!   first action of a response), the step's `thought` text as `content`
//!   before its first call, `reasoning_content` as `thought`, then the
//!   call: `tool_name`, the arguments of `tool_call.arguments` (else the
//!   `action` without its `kind`), id `tool_call_id`.
//! - `ObservationEvent`: a result (`observation.content` text,
//!   `observation.is_error`); `AgentErrorEvent`: a failed result (`error`);
//!   `UserRejectObservation`: a result with the `rejection_reason` (the
//!   SDK's stuck detector counts it as an observation, not an error).
//! - `ConversationStateUpdateEvent` setting `execution_status` to `stuck`:
//!   a `loop_detected` record (what the live agent's detector did).
//! - System prompts, condensations, pauses and other bookkeeping: nothing;
//!   kinds this reader does not know are counted as unknown records.
//!
//! Explicit `turn` records make each SDK step one turn, so the
//! `openhands-v1*` profiles check where the SDK's run loop checks.
//! Provenance: each record names its event file (no line).

use super::common::{args_from_value, parse_doc, s, session_rec, text_of, Ctx, Out};
use crate::error::{Error, Result};
use crate::event::Record;
use crate::input::format::{FileSessions, Format};
use crate::input::json::{FieldError, RecordError};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// An OpenHands V1 conversation folder.
pub(crate) struct OpenHandsV1;

/// The base state file of a conversation folder.
const BASE_STATE: &str = "base_state.json";
/// The folder of event files.
const EVENTS: &str = "events";

impl Format for OpenHandsV1 {
    fn name(&self) -> &'static str {
        "openhands-v1"
    }
    fn expected(&self) -> &'static str {
        "an OpenHands V1 conversation folder (`base_state.json` and `events/event-NNNNN-*.json`)"
    }
    fn extensions(&self) -> &'static [&'static str] {
        &[]
    }
    fn read(&self, ctx: &Ctx) -> Result<FileSessions> {
        Err(ctx.file_err(format!(
            "expected {} (give the folder, not one of its files)",
            self.expected()
        )))
    }
    fn claims_path(&self, path: &Path, is_dir: bool, _head: &[u8]) -> bool {
        is_dir && path.join(BASE_STATE).is_file() && path.join(EVENTS).is_dir()
    }
    fn read_path(&self, path: &Path, ctx: &Ctx) -> Result<FileSessions> {
        read_folder(path, ctx)
    }
}

/// An event file's index, from `event-NNNNN-<id>.json`.
fn event_index(name: &str) -> Option<u64> {
    let rest = name.strip_prefix("event-")?.strip_suffix(".json")?;
    let (digits, _id) = rest.split_once('-')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The event files of `events/`, by index; other files are ignored.
fn event_files(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(i) = event_index(&name) {
            files.push((i, entry.path()));
        }
    }
    files.sort();
    Ok(files)
}

/// A problem in one event file: strict, the error naming it; lenient, a
/// skip noted against the folder.
fn bad(out: &mut Out, ctx: &Ctx, file: &str, line: u64, message: String) -> Result<()> {
    if ctx.lenient {
        out.skip(0, format!("{file}: {message}"));
        Ok(())
    } else if line > 0 {
        Err(Error::Line {
            path: file.to_string(),
            line,
            message,
        })
    } else {
        Err(Error::File {
            path: file.to_string(),
            message,
        })
    }
}

fn read_folder(dir: &Path, ctx: &Ctx) -> Result<FileSessions> {
    let mut out = Out::new("openhands-v1");
    let base_path = dir.join(BASE_STATE);
    let base_display = base_path.display().to_string();
    let base_bytes = std::fs::read(&base_path).map_err(|e| Error::io(&base_path, e))?;
    let base = match parse_doc(&base_bytes) {
        Ok(Value::Object(m)) => m,
        Ok(_) => {
            return Err(Error::File {
                path: base_display,
                message: "expected a JSON object (the conversation's base state)".into(),
            })
        }
        Err(e) => {
            return Err(Error::Line {
                path: base_display,
                line: e.line() as u64,
                message: format!("not JSON: {e}"),
            })
        }
    };
    let sid = ctx.stem.to_string();
    out.open(&sid);
    let model = base
        .get("agent")
        .and_then(|a| a.get("llm"))
        .and_then(|l| l.get("model"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut meta = Map::new();
    if let Some(id) = base.get("id").filter(|v| !v.is_null()) {
        meta.insert("id".into(), id.clone());
    }
    if let Some(st) = base.get("execution_status").filter(|v| !v.is_null()) {
        meta.insert("execution_status".into(), st.clone());
    }
    if let Some(wd) = base
        .get("workspace")
        .and_then(|w| w.get("working_dir"))
        .filter(|v| !v.is_null())
    {
        meta.insert("working_dir".into(), wd.clone());
    }
    out.at_file(Some(base_display));
    out.push(&sid, session_rec("openhands", model, meta), 0);

    let events_dir = dir.join(EVENTS);
    let files = event_files(&events_dir)?;
    let mut expect = 0u64;
    let mut last_response: Option<String> = None;
    for (index, path) in files {
        let display = path.display().to_string();
        if index != expect {
            let message = if index < expect {
                format!("event {index:05} is stored twice")
            } else if index == expect + 1 {
                format!("event {expect:05} is missing (a gap before this file)")
            } else {
                format!(
                    "events {expect:05} to {:05} are missing (a gap before this file)",
                    index - 1
                )
            };
            bad(&mut out, ctx, &display, 0, message)?;
            if index < expect {
                continue;
            }
        }
        expect = index + 1;
        // Regular files only, as a folder walk reads: a FIFO would block the
        // read for ever, a link to `/dev/zero` would grow without end.
        if !std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
            let message = "not a regular file (a FIFO, a device, or a link to one): not read";
            bad(&mut out, ctx, &display, 0, message.into())?;
            continue;
        }
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                bad(&mut out, ctx, &display, 0, format!("cannot read: {e}"))?;
                continue;
            }
        };
        let ev = match parse_doc(&bytes) {
            Ok(Value::Object(m)) => m,
            Ok(_) => {
                bad(&mut out, ctx, &display, 1, "expected a JSON object".into())?;
                continue;
            }
            Err(e) => {
                bad(
                    &mut out,
                    ctx,
                    &display,
                    e.line() as u64,
                    format!("not JSON: {e}"),
                )?;
                continue;
            }
        };
        out.at_file(Some(display.clone()));
        if let Err(message) = event(&mut out, &sid, &ev, &mut last_response) {
            bad(&mut out, ctx, &display, 1, message.to_string())?;
        }
    }
    Ok(out.finish())
}

/// Text of a `thought` / `content` list of `TextContent`, or a string.
fn texts(v: Option<&Value>) -> String {
    text_of(v)
}

/// Map one event; `Err` names the missing or mistyped field.
fn event(
    out: &mut Out,
    sid: &str,
    ev: &Map<String, Value>,
    last_response: &mut Option<String>,
) -> std::result::Result<(), RecordError> {
    let Some(kind) = s(ev, "kind") else {
        return Err(FieldError::MissingA {
            field: "kind".into(),
            what: "the event's class",
        }
        .into());
    };
    match kind {
        "MessageEvent" => {
            let msg = ev.get("llm_message").and_then(Value::as_object);
            let text = texts(msg.and_then(|m| m.get("content")));
            match s(ev, "source") {
                Some("user") => out.push(
                    sid,
                    Record::User {
                        text,
                        prompt_id: None,
                    },
                    0,
                ),
                Some("agent") => {
                    *last_response = None;
                    out.push(sid, Record::Turn, 0);
                    if let Some(r) = msg.and_then(|m| s(m, "reasoning_content")) {
                        if !r.is_empty() {
                            out.push(
                                sid,
                                Record::Thought {
                                    text: r.to_string(),
                                },
                                0,
                            );
                        }
                    }
                    if !text.is_empty() {
                        out.push(sid, Record::Content { text }, 0);
                    }
                }
                _ => {}
            }
        }
        "ActionEvent" => {
            let Some(name) = s(ev, "tool_name") else {
                return Err(FieldError::Missing("tool_name".into()).into());
            };
            let response = s(ev, "llm_response_id").map(str::to_string);
            let new_step = response.is_none() || response != *last_response;
            if new_step {
                out.push(sid, Record::Turn, 0);
                if let Some(r) = s(ev, "reasoning_content").filter(|r| !r.is_empty()) {
                    out.push(
                        sid,
                        Record::Thought {
                            text: r.to_string(),
                        },
                        0,
                    );
                }
                let thought = texts(ev.get("thought"));
                if !thought.is_empty() {
                    out.push(sid, Record::Content { text: thought }, 0);
                }
            }
            *last_response = response;
            let args = match ev.get("tool_call").and_then(|c| c.get("arguments")) {
                Some(a) => args_from_value(Some(a)),
                None => {
                    let mut a = args_from_value(ev.get("action"));
                    a.remove("kind");
                    a
                }
            };
            let id = s(ev, "tool_call_id").map(str::to_string);
            out.push(sid, Record::tool_call(name.to_string(), args, id), 0);
        }
        "ObservationEvent" => {
            let obs = ev.get("observation").and_then(Value::as_object);
            let output = obs.map(|o| match o.get("content") {
                Some(c) => texts(Some(c)),
                None => s(o, "output").unwrap_or_default().to_string(),
            });
            let error = obs
                .and_then(|o| o.get("is_error"))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            result(out, sid, ev, output, error);
        }
        "AgentErrorEvent" => {
            let output = s(ev, "error").map(str::to_string);
            result(out, sid, ev, output, true);
        }
        "UserRejectObservation" => {
            let output = s(ev, "rejection_reason").map(str::to_string);
            result(out, sid, ev, output, false);
        }
        "ConversationStateUpdateEvent" => {
            let stuck = s(ev, "key") == Some("execution_status")
                && s(ev, "value").is_some_and(|v| v.eq_ignore_ascii_case("stuck"));
            if stuck {
                out.push(
                    sid,
                    Record::LoopDetected {
                        kind: Some("stuck".into()),
                        detail: Some("execution_status: stuck".into()),
                    },
                    0,
                );
            }
        }
        "SystemPromptEvent"
        | "Condensation"
        | "CondensationRequest"
        | "CondensationSummaryEvent"
        | "PauseEvent"
        | "InterruptEvent"
        | "ConversationErrorEvent"
        | "TokenEvent"
        | "LLMCompletionLogEvent" => {}
        _ => out.unknown(),
    }
    Ok(())
}

/// A tool result answering the event's `tool_call_id`.
fn result(out: &mut Out, sid: &str, ev: &Map<String, Value>, output: Option<String>, error: bool) {
    out.push(
        sid,
        Record::ToolResult {
            id: s(ev, "tool_call_id").map(str::to_string),
            name: s(ev, "tool_name").map(str::to_string),
            output,
            error: Some(error),
        },
        0,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_file_names() {
        assert_eq!(event_index("event-00003-abc-def.json"), Some(3));
        assert_eq!(event_index("event-12-x.json"), Some(12));
        assert_eq!(event_index("event-x-1.json"), None);
        assert_eq!(event_index("base_state.json"), None);
        assert_eq!(event_index("event-00001-a.json.tmp"), None);
    }
}
