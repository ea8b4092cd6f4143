//! `looptune guard`: a tuned rule as a live guard, run by an agent's
//! pre-tool hook. The hook hands over the transcript so far and the call
//! about to run; the guard replays the transcript with that call through
//! the configuration (every detection, strikes per prompt, as `replay
//! --all` numbers them) and decides on the detections *at the pending
//! call*: none lets it run; one the policy only warns about lets it run
//! with a warning; the one the policy stops at blocks it.
//!
//! Agents (what their hooks hand over and how they block):
//! - Claude Code `PreToolUse`: stdin JSON with `transcript_path`,
//!   `tool_name`, `tool_input` (and `tool_use_id`, `session_id`); exit 2
//!   blocks and stderr goes to the model; stdout JSON
//!   `hookSpecificOutput.additionalContext` adds a warning the model reads;
//!   `permissionDecision: "ask"` hands the call to the user.
//! - Gemini CLI `BeforeTool` (hooks since late 2025): the same fields; exit
//!   2 blocks with stderr as the reason the agent reads; stdout JSON
//!   `systemMessage` is shown to the user (there is no field that reaches
//!   the model without blocking, so a warning only reaches the user).
//!
//! The transcript is read by content like any input (Claude Code JSONL,
//! Gemini CLI's chat JSON, canonical JSONL). Claude Code writes the
//! assistant message before the hook runs, so the pending call is usually
//! already in it: it is found by `tool_use_id`, else as the last call when
//! it has the same name and input and no result yet; otherwise it is added.

use crate::detect::{DetectorConfig, Policy};
use crate::error::{Error, Result};
use crate::event::{Event, Origin, Record, Session};
use crate::input::import::InputFormat;
use crate::input::ReadOptions;
use crate::replay::{Plan, ReplayOptions};
use serde_json::{Map, Value};
use std::path::Path;
use std::sync::Arc;

/// An agent whose hook can block a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    /// Claude Code's `PreToolUse` hook.
    ClaudeCode,
    /// Gemini CLI's `BeforeTool` hook.
    GeminiCli,
}

impl Agent {
    /// By `--agent` name.
    pub fn parse(name: &str) -> Option<Agent> {
        match name {
            "claude-code" => Some(Agent::ClaudeCode),
            "gemini-cli" => Some(Agent::GeminiCli),
            _ => None,
        }
    }
}

/// What the hook's stdin held that the guard could not use.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// Not JSON.
    #[error("hook input: not JSON ({0})")]
    NotJson(#[source] serde_json::Error),
    /// A field missing or of the wrong type.
    #[error("hook input: `{field}` {what}")]
    Field {
        /// Field name.
        field: &'static str,
        /// What is wrong.
        what: &'static str,
    },
}

/// The hook's input.
#[derive(Debug, Clone, PartialEq)]
pub struct HookCall {
    /// The transcript so far.
    pub transcript_path: String,
    /// The agent's session id, if given.
    pub session_id: Option<String>,
    /// The pending call's tool.
    pub tool_name: String,
    /// Its arguments.
    pub tool_input: Map<String, Value>,
    /// Its id, if given (Claude Code's `tool_use_id`).
    pub tool_use_id: Option<String>,
}

impl HookCall {
    /// Parse the hook's stdin.
    pub fn parse(text: &str) -> std::result::Result<HookCall, HookError> {
        let v: Value = serde_json::from_str(text).map_err(HookError::NotJson)?;
        let obj = v.as_object().ok_or(HookError::Field {
            field: "(top)",
            what: "is not an object",
        })?;
        let string = |field: &'static str| -> std::result::Result<Option<String>, HookError> {
            match obj.get(field) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(HookError::Field {
                    field,
                    what: "is not a string",
                }),
            }
        };
        let need = |field: &'static str| {
            string(field)?.ok_or(HookError::Field {
                field,
                what: "is missing",
            })
        };
        let tool_input = match obj.get("tool_input") {
            Some(Value::Object(m)) => m.clone(),
            None | Some(Value::Null) => Map::new(),
            Some(_) => {
                return Err(HookError::Field {
                    field: "tool_input",
                    what: "is not an object",
                })
            }
        };
        Ok(HookCall {
            transcript_path: need("transcript_path")?,
            session_id: string("session_id")?,
            tool_name: need("tool_name")?,
            tool_input,
            tool_use_id: string("tool_use_id")?,
        })
    }
}

/// What the guard tells the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Let the call run.
    Allow,
    /// Let it run, with a warning.
    Warn(String),
    /// Hand it to the user (Claude Code's `ask`).
    Ask(String),
    /// Block it; the message is what the model reads.
    Block(String),
}

/// One guard: a configuration and its policy, planned once.
pub struct Guard {
    plan: Plan,
    policy: Policy,
}

impl Guard {
    /// A guard running `cfg`; `policy` overrides the configuration's own.
    pub fn new(cfg: DetectorConfig, policy: Option<Policy>) -> Result<Guard> {
        let policy = policy.unwrap_or(cfg.policy());
        let plan = Plan::new(vec![cfg], &ReplayOptions { all: true })?;
        Ok(Guard { plan, policy })
    }

    /// The verdict on the hook's pending call, the transcript read from its path.
    pub fn check(&self, call: &HookCall) -> Result<Verdict> {
        let path = Path::new(&call.transcript_path);
        // A session's first call may come before its transcript exists.
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(Error::io(path, e)),
        };
        self.check_bytes(call, bytes)
    }

    /// [`Guard::check`] on the transcript's bytes.
    pub fn check_bytes(&self, call: &HookCall, bytes: Vec<u8>) -> Result<Verdict> {
        let session = session_with_call(call, bytes)?;
        let (pending, session) = session;
        let outcome = self
            .plan
            .session(Arc::new(session))
            .into_iter()
            .next()
            .expect("one configuration");
        let here: Vec<_> = outcome
            .detections
            .iter()
            .filter(|d| d.event == pending)
            .collect();
        let Some(last) = here.last() else {
            return Ok(Verdict::Allow);
        };
        let what = last.detail.trim();
        Ok(match self.policy {
            Policy::Ignore => Verdict::Allow,
            Policy::Ask => Verdict::Ask(format!(
                "looptune guard: this call looks like a loop ({what}). Allow it?"
            )),
            Policy::Stop => Verdict::Block(block_message(what, last.strike)),
            Policy::Warn(n) if last.strike > n => {
                Verdict::Block(block_message(what, last.strike))
            }
            Policy::Warn(n) => Verdict::Warn(format!(
                "looptune guard, warning {} of {n}: you are repeating yourself ({what}). Do not make the same call again: read the last result or error, change the arguments or the approach, or ask the user. The next repetition will be blocked{}.",
                last.strike,
                if last.strike < n { " after the remaining warnings" } else { "" }
            )),
        })
    }
}

fn block_message(what: &str, strike: u32) -> String {
    format!(
        "looptune guard blocked this call: a loop (detection {strike} in this prompt): {what}. The same call will not give a different result. Read the last result or error, then change the arguments or the approach, or stop and ask the user."
    )
}

/// The transcript's session with the pending call, and the call's event number.
fn session_with_call(call: &HookCall, bytes: Vec<u8>) -> Result<(u32, Session)> {
    let mut sessions: Vec<(String, Vec<Event>)> = Vec::new();
    let mut whole_messages = false;
    if !bytes.iter().all(u8::is_ascii_whitespace) {
        let opts = ReadOptions {
            lenient: true,
            format: InputFormat::Auto,
            ..ReadOptions::default()
        };
        let stem = crate::input::file_stem(Path::new(&call.transcript_path));
        let file = crate::input::parse_bytes(&call.transcript_path, stem, bytes, &opts)?;
        whole_messages = file.whole_messages;
        sessions = file.sessions;
    }
    let has_call = |evs: &[Event]| {
        call.tool_use_id.as_deref().is_some_and(|id| {
            evs.iter()
                .any(|e| matches!(&e.record, Record::ToolCall { id: Some(x), .. } if x == id))
        })
    };
    // The hook's session, else the one holding the call, else the longest.
    let pick = sessions
        .iter()
        .position(|(id, _)| Some(id.as_str()) == call.session_id.as_deref())
        .or_else(|| sessions.iter().position(|(_, e)| has_call(e)))
        .or_else(|| (0..sessions.len()).max_by_key(|&i| (sessions[i].1.len(), usize::MAX - i)));
    let (id, mut events) = match pick {
        Some(i) => sessions.swap_remove(i),
        None => (
            call.session_id.clone().unwrap_or_else(|| "hook".into()),
            Vec::new(),
        ),
    };
    let by_id = call.tool_use_id.as_deref().and_then(|want| {
        events
            .iter()
            .position(|e| matches!(&e.record, Record::ToolCall { id: Some(x), .. } if x == want))
    });
    let pending = match by_id {
        Some(i) => i,
        None => {
            let last_call = events
                .iter()
                .rposition(|e| matches!(e.record, Record::ToolCall { .. }));
            let answered = |i: usize| {
                events[i + 1..]
                    .iter()
                    .any(|e| matches!(e.record, Record::ToolResult { .. }))
            };
            match last_call {
                Some(i)
                    if !answered(i)
                        && matches!(&events[i].record,
                            Record::ToolCall { name, args, .. }
                                if *name == call.tool_name && **args == call.tool_input) =>
                {
                    i
                }
                _ => {
                    events.push(Event::new(
                        Record::ToolCall {
                            name: call.tool_name.clone(),
                            args: Box::new(call.tool_input.clone()),
                            id: call.tool_use_id.clone(),
                        },
                        Origin::default(),
                    ));
                    events.len() - 1
                }
            }
        }
    };
    // What the transcript holds after the pending call (the same message's
    // later calls) has not happened yet.
    events.truncate(pending + 1);
    let mut session = Session::from_events(id, events);
    session.whole_messages = whole_messages;
    Ok((pending as u32 + 1, session))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_input_errors_name_the_field() {
        assert!(matches!(
            HookCall::parse("nope"),
            Err(HookError::NotJson(_))
        ));
        let e = HookCall::parse(r#"{"tool_name":"Bash"}"#).unwrap_err();
        assert_eq!(e.to_string(), "hook input: `transcript_path` is missing");
        let e = HookCall::parse(r#"{"transcript_path":"x","tool_name":3}"#).unwrap_err();
        assert_eq!(e.to_string(), "hook input: `tool_name` is not a string");
        let c = HookCall::parse(
            r#"{"transcript_path":"t","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"u1"}"#,
        )
        .unwrap();
        assert_eq!(c.tool_use_id.as_deref(), Some("u1"));
        assert_eq!(c.tool_input["command"], "ls");
    }

    fn canonical_calls(n: usize) -> Vec<u8> {
        let mut s = String::from(
            "{\"type\":\"session\",\"session\":\"s\"}\n{\"type\":\"user\",\"text\":\"go\"}\n",
        );
        for _ in 0..n {
            s.push_str(
                "{\"type\":\"tool_call\",\"name\":\"read_file\",\"args\":{\"path\":\"a\"}}\n",
            );
            s.push_str("{\"type\":\"tool_result\",\"name\":\"read_file\",\"output\":\"x\"}\n");
        }
        s.into_bytes()
    }

    fn call() -> HookCall {
        HookCall::parse(
            r#"{"transcript_path":"t.jsonl","tool_name":"read_file","tool_input":{"path":"a"}}"#,
        )
        .unwrap()
    }

    #[test]
    fn the_pending_call_is_blocked_where_the_rule_fires() {
        let stop = Guard::new(
            DetectorConfig::resolve(None, Some("gemini-latest"), &[]).unwrap(),
            Some(Policy::Stop),
        )
        .unwrap();
        // Four identical calls so far: the fifth is the threshold's.
        assert_eq!(
            stop.check_bytes(&call(), canonical_calls(3)).unwrap(),
            Verdict::Allow
        );
        assert!(matches!(
            stop.check_bytes(&call(), canonical_calls(4)).unwrap(),
            Verdict::Block(m) if m.contains("read_file")
        ));
        let warn = Guard::new(
            DetectorConfig::resolve(None, Some("gemini-latest"), &[]).unwrap(),
            Some(Policy::Warn(1)),
        )
        .unwrap();
        assert!(matches!(
            warn.check_bytes(&call(), canonical_calls(4)).unwrap(),
            Verdict::Warn(m) if m.contains("warning 1 of 1")
        ));
        // Cleared after the first detection, the count starts again: the
        // second strike comes five calls later.
        assert!(matches!(
            warn.check_bytes(&call(), canonical_calls(9)).unwrap(),
            Verdict::Block(_)
        ));
        assert_eq!(
            warn.check_bytes(&call(), Vec::new()).unwrap(),
            Verdict::Allow
        );
    }
}
