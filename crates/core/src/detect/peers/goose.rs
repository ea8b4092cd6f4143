//! Goose's `RepetitionInspector` (`crates/goose/src/tool_monitor.rs`): REP-002
//! denies a tool that returned the same error 3 times in a row; REP-001
//! (identical calls) is off in the shipped agent and kept as a what-if.

use super::common::{each_rule, At, Found, RecordRule, RecordStream, Unanswered};
use crate::detect::{
    Check, Detection, Family, ParamSet, ParamSpec, ParamValue, Params, Prepared, Profile, Stream,
    POLICY, POLICY_SPEC,
};
use crate::error::Result;
use crate::event::Record;
use serde_json::{Map, Value};

const SRC: &str = "aaif-goose/goose crates/goose/src/tool_monitor.rs @37c043b954";

/// The `goose` family.
pub struct Goose;

impl Family for Goose {
    fn name(&self) -> &'static str {
        "goose"
    }
    fn about(&self) -> &'static str {
        "Goose RepetitionInspector: REP-002 denies the next call of a tool whose last 3 results were the same error (first 100 chars); REP-001 (identical calls) is off as shipped"
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            POLICY_SPEC,
            ParamSpec::int(
                "error_repeats",
                1,
                100_000,
                "results",
                "same-tool same-error results in a row after which the tool's next call is denied (MAX_CONSECUTIVE_ERROR_FINGERPRINTS)",
                SRC,
            ),
            ParamSpec::int(
                "error_chars",
                0,
                1_000_000,
                "chars",
                "leading characters (Unicode scalar values) of the error text that form its fingerprint",
                SRC,
            ),
            ParamSpec::int(
                "max_repetitions",
                0,
                100_000,
                "calls",
                "REP-001: identical consecutive calls allowed (0 = None, as the agent installs it). What-if: the shipped inspect() never commits its state, so REP-001 cannot fire there; here each call is committed as check_tool_call does",
                SRC,
            ),
        ]
    }
    fn profiles(&self) -> Vec<Profile> {
        vec![
            Profile {
            name: "goose",
            about: "Goose @37c043b954 (2026): REP-002 after 3 identical errors of one tool; REP-001 disabled (RepetitionInspector::new(None)). A denial returns a declined result to the model and the run goes on, hence policy ignore",
            values: vec![
                (POLICY, ParamValue::word("ignore")),
                ("error_repeats", ParamValue::Int(3)),
                ("error_chars", ParamValue::Int(100)),
                ("max_repetitions", ParamValue::Int(0)),
            ],
        },
        Profile {
            name: "goose-max-repetitions",
            about: "What-if: Goose with a repetition limit (--max-tool-repetitions / GOOSE_MAX_TOOL_REPETITIONS, no default; 5 here) committed on every call, as check_tool_call does; as shipped, inspect() checks a temporary clone and REP-001 never fires. REP-002 as in goose",
            values: vec![("max_repetitions", ParamValue::Int(5))],
        }]
    }
    fn checks(&self, params: &ParamSet) -> Result<Vec<Box<dyn Check>>> {
        let p = Params::new(self.name(), params);
        // The two findings keep separate state and never affect each other.
        let mut v: Vec<Box<dyn Check>> = vec![Box::new(ErrorCheck {
            s: ErrorSettings {
                repeats: p.get("error_repeats")?,
                chars: p.get("error_chars")?,
            },
        })];
        let max: u32 = p.get("max_repetitions")?;
        if max > 0 {
            v.push(Box::new(RepeatCheck {
                s: RepeatSettings { max },
            }));
        }
        Ok(v)
    }
}

/// REP-002's error state (`record_error` / `record_success`).
#[derive(Debug, Clone, Default)]
pub struct ErrorState {
    last: Option<(String, String)>,
    count: u32,
}

impl ErrorState {
    /// `record_error(tool, text)`, keeping the first `chars` characters.
    pub fn record_error(&mut self, tool: &str, text: &str, chars: usize) {
        let fp: String = text.chars().take(chars).collect();
        match &self.last {
            Some((t, e)) if t == tool && *e == fp => self.count += 1,
            _ => {
                self.last = Some((tool.to_string(), fp));
                self.count = 1;
            }
        }
    }

    /// `record_success()`.
    pub fn record_success(&mut self) {
        self.last = None;
        self.count = 0;
    }

    /// The REP-002 half of `inspect(requests)`: the indices of the denied
    /// requests (by tool name). The count is reset once it reached `repeats`,
    /// whether or not a request was denied.
    pub fn inspect(&mut self, requests: &[&str], repeats: u32) -> Vec<usize> {
        if self.count < repeats {
            return vec![];
        }
        let denied = match &self.last {
            Some((tool, _)) => requests
                .iter()
                .enumerate()
                .filter(|(_, r)| **r == tool)
                .map(|(i, _)| i)
                .collect(),
            None => vec![],
        };
        self.count = 0;
        denied
    }
}

/// REP-001's `check_tool_call`, with `Some(max)`.
#[derive(Debug, Clone)]
pub struct RepeatState {
    max: u32,
    last: Option<(String, Value)>,
    count: u32,
}

impl RepeatState {
    /// A checker allowing `max` identical calls in a row.
    pub fn new(max: u32) -> RepeatState {
        RepeatState {
            max,
            last: None,
            count: 0,
        }
    }

    /// Whether the call is allowed; a denied call does not become the last call.
    pub fn check_tool_call(&mut self, name: &str, args: &Map<String, Value>) -> bool {
        // serde_json Value equality: objects ignore key order, 1 != 1.0.
        let params = Value::Object(args.clone());
        let same = self
            .last
            .as_ref()
            .is_some_and(|(n, p)| n == name && *p == params);
        if same {
            self.count += 1;
            if self.count > self.max {
                return false;
            }
        } else {
            self.count = 1;
        }
        self.last = Some((name.to_string(), params));
        true
    }
}

/// What REP-002 reads.
#[derive(Debug, Clone, PartialEq)]
struct ErrorSettings {
    repeats: u32,
    chars: usize,
}

struct ErrorCheck {
    s: ErrorSettings,
}

impl Check for ErrorCheck {
    fn name(&self) -> &'static str {
        "goose.rep002"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }

    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        each_rule(&session.session, limit, &mut self.rule())
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(RecordStream::boxed(self.rule()))
    }
}

impl ErrorCheck {
    fn rule(&self) -> ErrorRule {
        ErrorRule {
            s: self.s.clone(),
            state: ErrorState::default(),
            calls: Unanswered::default(),
            inspected_turn: None,
            denied: None,
        }
    }
}

/// REP-002 over the records. The batch (a turn's calls) is inspected once,
/// at its first call, before any runs: the denied request is the batch's
/// first call of the erring tool, so it fires at that call's own record
/// when it comes (what the inspection found is kept until then). Calls not
/// yet answered are kept however old: a result names its tool by the
/// oldest call it answers.
struct ErrorRule {
    s: ErrorSettings,
    state: ErrorState,
    calls: Unanswered<String>,
    inspected_turn: Option<u32>,
    /// This turn's inspection denied `tool`: (tool, count, error text).
    denied: Option<(String, u32, String)>,
}

impl RecordRule for ErrorRule {
    fn visit(&mut self, at: At<'_>, found: &mut Found<'_>) {
        let e = at.event;
        match &e.record {
            Record::ToolCall { name, id, .. } => {
                self.calls.push(id.as_deref(), name, name.clone());
                if self.inspected_turn != Some(e.turn) {
                    self.inspected_turn = Some(e.turn);
                    let count = self.state.count;
                    let text = self.state.last.as_ref().map(|l| l.1.clone());
                    let tool = self.state.last.as_ref().map(|l| l.0.clone());
                    // Resets the count whatever the batch holds; with a
                    // last error, its tool's calls in the batch are denied.
                    let over = self.state.count >= self.s.repeats;
                    self.state.inspect(&[], self.s.repeats);
                    self.denied = match (over, tool) {
                        (true, Some(tool)) => Some((tool, count, text.unwrap_or_default())),
                        _ => None,
                    };
                }
                if self.denied.as_ref().is_some_and(|d| d.0 == *name) {
                    let (tool, count, text) = self.denied.take().expect("checked");
                    found.push(
                        at.i,
                        "REP-002",
                        0,
                        format!(
                            "Tool '{tool}' has returned the same error {count} consecutive times: '{text}'"
                        ),
                    );
                }
            }
            Record::ToolResult {
                id,
                name,
                output,
                error,
            } => {
                let tool = self
                    .calls
                    .answer(id.as_deref(), name.as_deref())
                    .or_else(|| name.clone())
                    .unwrap_or_default();
                if *error == Some(true) {
                    self.state
                        .record_error(&tool, output.as_deref().unwrap_or(""), self.s.chars);
                } else {
                    self.state.record_success();
                }
            }
            _ => {}
        }
    }
}

/// What REP-001 reads.
#[derive(Debug, Clone, PartialEq)]
struct RepeatSettings {
    max: u32,
}

struct RepeatCheck {
    s: RepeatSettings,
}

impl Check for RepeatCheck {
    fn name(&self) -> &'static str {
        "goose.rep001"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }

    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        each_rule(&session.session, limit, &mut RepeatState::new(self.s.max))
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(RecordStream::boxed(RepeatState::new(self.s.max)))
    }
}

impl RecordRule for RepeatState {
    fn visit(&mut self, at: At<'_>, found: &mut Found<'_>) {
        if let Record::ToolCall { name, args, .. } = &at.event.record {
            if !self.check_tool_call(name, args) {
                found.push(
                    at.i,
                    "REP-001",
                    0,
                    format!("Tool '{name}' has exceeded maximum repetitions"),
                );
            }
        }
    }
}
