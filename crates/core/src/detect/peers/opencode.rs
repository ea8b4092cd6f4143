//! OpenCode's doom-loop rule (`session/processor.ts`) and Kilo Code's
//! session-wide variant (`session/loop-detection.ts`), driven by canonical
//! records as peer-mappings section 3 says.

use super::common::{each_rule, At, Found, RecordRule, RecordStream, Unanswered};
use crate::detect::prepared::CallArgs;
use crate::detect::{
    Check, Detection, Family, ParamSet, ParamSpec, ParamValue, Params, Prepared, Profile, Stream,
    POLICY, POLICY_SPEC,
};
use crate::error::Result;
use crate::event::Record;
use std::collections::VecDeque;
use std::sync::Arc;

const SRC_OPENCODE: &str = "anomalyco/opencode packages/opencode/src/session/processor.ts @36160ef28f (same rule @002d98228a)";
const SRC_KILO: &str =
    "Kilo-Org/kilocode packages/opencode/src/session/loop-detection.ts @9b65079630";

/// The `opencode` family.
pub struct OpenCode;

impl Family for OpenCode {
    fn name(&self) -> &'static str {
        "opencode"
    }
    fn about(&self) -> &'static str {
        "OpenCode doom loop: the last 3 parts of one assistant step are the same tool with identical JSON.stringify input (profile kilo: Kilo Code's scan of the last 30 session parts, reset by write tools)"
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            POLICY_SPEC,
            ParamSpec::choice(
                "scope",
                &["step", "session"],
                "step: OpenCode's last parts of the current assistant message; session: Kilo Code's scan of recent session parts",
                SRC_OPENCODE,
            ),
            ParamSpec::int(
                "threshold",
                1,
                1000,
                "calls",
                "identical calls that trigger (DOOM_LOOP_THRESHOLD / TOOL_THRESHOLD)",
                "DOOM_LOOP_THRESHOLD = 3, processor.ts @36160ef28f; TOOL_THRESHOLD = 3, loop-detection.ts @9b65079630",
            ),
            ParamSpec::int(
                "scan_parts",
                1,
                100_000,
                "parts",
                "session scope: how many recent session parts are scanned (TOOL_SCAN_LIMIT = TOOL_THRESHOLD * 10)",
                SRC_KILO,
            ),
            ParamSpec::list(
                "write_tools",
                "tool names",
                "session scope: tools whose call between matches resets the run (WRITE_TOOLS)",
                SRC_KILO,
            ),
        ]
    }
    fn profiles(&self) -> Vec<Profile> {
        vec![
            Profile {
                name: "opencode",
                about: "OpenCode processor.ts @36160ef28f (2026): 3 identical tool parts in a row within one step; permission doom_loop (default ask)",
                values: vec![
                    (POLICY, ParamValue::word("ask")),
                    ("scope", ParamValue::word("step")),
                    ("threshold", ParamValue::Int(3)),
                    ("scan_parts", ParamValue::Int(30)),
                    (
                        "write_tools",
                        ParamValue::words(&["edit", "multiedit", "write", "apply_patch"]),
                    ),
                ],
            },
            Profile {
                name: "kilo",
                about: "Kilo Code CLI loop-detection.ts @9b65079630: 2 earlier finished identical calls among the last 30 session parts plus the current one; reset by a write tool",
                values: vec![("scope", ParamValue::word("session"))],
            },
        ]
    }
    fn checks(&self, params: &ParamSet) -> Result<Vec<Box<dyn Check>>> {
        let p = Params::new(self.name(), params);
        let threshold = p.get("threshold")?;
        let step = p.choice("scope", &[("step", true), ("session", false)])?;
        Ok(vec![if step {
            Box::new(StepCheck {
                s: StepSettings { threshold },
            }) as Box<dyn Check>
        } else {
            Box::new(SessionCheck {
                s: SessionSettings {
                    threshold,
                    scan: p.get("scan_parts")?,
                    write_tools: p.get("write_tools")?,
                },
            })
        }])
    }
}

/// A call's input as the rules compare it: over a whole session, its id in
/// the session's [`CallArgs`] (made once, shared by every configuration);
/// fed live, its text (no session-wide table to grow).
#[derive(Debug, Clone, PartialEq)]
enum Input {
    Id(u32),
    Text(String),
}

/// Where the rules get a call's input: the shared table, or the call itself.
struct Inputs(Option<Arc<CallArgs>>);

impl Inputs {
    /// The `JSON.stringify` text of an input.
    fn text<'a>(&'a self, input: &'a Input) -> &'a str {
        match (input, &self.0) {
            (Input::Id(id), Some(t)) => &t.texts[*id as usize],
            (Input::Text(text), _) => text,
            (Input::Id(_), None) => unreachable!("ids come from the table"),
        }
    }

    /// Record `at`'s input (a call).
    fn key(&self, at: At<'_>, args: &serde_json::Map<String, serde_json::Value>) -> Input {
        match &self.0 {
            Some(t) => Input::Id(t.at(at.i).0),
            None => Input::Text(crate::util::js::stringify_object(args)),
        }
    }
}

/// A message part, as far as the rules look at it.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    /// `step-start`, `step-finish` or a user message's text.
    Other,
    Text,
    Reasoning,
    Tool {
        name: String,
        input: Input,
        /// Completed or errored (a result arrived).
        finished: bool,
    },
}

/// What OpenCode's step rule reads.
#[derive(Debug, Clone, PartialEq)]
struct StepSettings {
    threshold: usize,
}

/// OpenCode upstream: parts of the current assistant message only.
struct StepCheck {
    s: StepSettings,
}

impl Check for StepCheck {
    fn name(&self) -> &'static str {
        "opencode.step"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }

    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        let mut rule = self.rule(Some(session.call_args()));
        each_rule(&session.session, limit, &mut rule)
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(RecordStream::boxed(self.rule(None)))
    }
}

impl StepCheck {
    fn rule(&self, inputs: Option<Arc<CallArgs>>) -> StepRule {
        StepRule {
            n: self.s.threshold,
            inputs: Inputs(inputs),
            parts: VecDeque::from([Part::Other]), // step-start
        }
    }
}

/// The current assistant message's parts: only the last `n` are ever
/// compared (and "at least `n` parts" holds of the last `n` kept), so no
/// more are kept.
struct StepRule {
    n: usize,
    inputs: Inputs,
    parts: VecDeque<Part>,
}

impl StepRule {
    fn push(&mut self, p: Part) {
        if self.parts.len() == self.n {
            self.parts.pop_front();
        }
        self.parts.push_back(p);
    }
}

impl RecordRule for StepRule {
    fn visit(&mut self, at: At<'_>, found: &mut Found<'_>) {
        let e = at.event;
        // A new step (turn) or a user message means a new assistant message.
        if e.starts_turn || matches!(e.record, Record::User { .. }) {
            self.parts.clear();
            self.push(Part::Other);
        }
        match &e.record {
            // Streamed text extends the current text (reasoning) part.
            Record::Content { .. } if self.parts.back() != Some(&Part::Text) => {
                self.push(Part::Text);
            }
            Record::Thought { .. } if self.parts.back() != Some(&Part::Reasoning) => {
                self.push(Part::Reasoning);
            }
            Record::ToolCall { name, args, .. } => {
                let input = self.inputs.key(at, args);
                // Status is "running" now; completed or errored later:
                // never "pending", so every tool part qualifies.
                self.push(Part::Tool {
                    name: name.clone(),
                    input: input.clone(),
                    finished: false,
                });
                let n = self.n;
                let hit = self.parts.len() >= n
                    && self.parts.iter().rev().take(n).all(|p| {
                        matches!(p, Part::Tool { name: t, input: x, .. } if t == name && *x == input)
                    });
                if hit {
                    let text = self.inputs.text(&input);
                    found.push(
                        at.i,
                        "doom_loop",
                        0,
                        format!("{name} called {n} times in a row with input {text}"),
                    );
                }
            }
            _ => {}
        }
    }
}

/// What Kilo Code's session rule reads.
#[derive(Debug, Clone, PartialEq)]
struct SessionSettings {
    threshold: usize,
    scan: usize,
    write_tools: Vec<String>,
}

/// Kilo Code: the last `scan` parts of the whole session.
struct SessionCheck {
    s: SessionSettings,
}

impl Check for SessionCheck {
    fn name(&self) -> &'static str {
        "opencode.session"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }

    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        let mut rule = self.rule(Some(session.call_args()));
        each_rule(&session.session, limit, &mut rule)
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(RecordStream::boxed(self.rule(None)))
    }
}

impl SessionCheck {
    fn rule(&self, inputs: Option<Arc<CallArgs>>) -> SessionRule {
        SessionRule {
            s: self.s.clone(),
            inputs: Inputs(inputs),
            parts: VecDeque::new(),
            dropped: 0,
            step_open: false,
            step_empty: false,
            pending: Unanswered::default(),
        }
    }
}

/// Session-wide parts. A step is step-start .. step-finish; the user's
/// message contributes one text part. Only the last `scan` parts are ever
/// read, so only they are kept (`dropped` counts those before). The calls
/// not yet answered are kept however old, as the original's parts are: a
/// result answers the oldest call that matches it, so an old unanswered
/// call decides which newer call a result finishes.
struct SessionRule {
    s: SessionSettings,
    inputs: Inputs,
    parts: VecDeque<Part>,
    dropped: usize,
    step_open: bool,
    step_empty: bool,
    /// Each unanswered call's part, by its index in the whole session.
    pending: Unanswered<usize>,
}

impl SessionRule {
    fn push(&mut self, p: Part) {
        if self.parts.len() == self.s.scan {
            self.parts.pop_front();
            self.dropped += 1;
        }
        self.parts.push_back(p);
    }

    fn open_step(&mut self) {
        if self.step_open && self.step_empty {
            return; // a step that has nothing yet needs no second start
        }
        if self.step_open {
            self.push(Part::Other); // step-finish
        }
        self.push(Part::Other); // step-start
        self.step_open = true;
        self.step_empty = true;
    }

    /// `checkToolCall`'s count of earlier finished identical calls among the
    /// last `scan` parts, oldest to newest.
    fn run_length(&self, name: &str, input: &Input) -> usize {
        let mut run = 0;
        let mut matched = false;
        for p in &self.parts {
            let Part::Tool {
                name: t,
                input: x,
                finished,
            } = p
            else {
                continue;
            };
            let is_write = self.s.write_tools.iter().any(|w| w == t);
            let same_tool_other_input = t == name && *finished && x != input;
            if (is_write || same_tool_other_input) && matched {
                run = 0;
                matched = false;
                continue;
            }
            if *finished && t == name && x == input {
                run += 1;
                matched = true;
            }
        }
        run
    }
}

impl RecordRule for SessionRule {
    fn visit(&mut self, at: At<'_>, found: &mut Found<'_>) {
        let e = at.event;
        if let Record::User { .. } = e.record {
            if self.step_open {
                self.push(Part::Other); // step-finish
            }
            self.push(Part::Other); // the user's text part
            self.step_open = false;
            self.step_empty = false;
        }
        if e.starts_turn {
            self.open_step();
        }
        match &e.record {
            Record::Content { .. } | Record::Thought { .. } => {
                if !self.step_open {
                    self.open_step();
                }
                let kind = if matches!(e.record, Record::Content { .. }) {
                    Part::Text
                } else {
                    Part::Reasoning
                };
                if !self.step_empty && self.parts.back() == Some(&kind) {
                    return;
                }
                self.push(kind);
                self.step_empty = false;
            }
            Record::ToolCall { name, id, args, .. } => {
                if !self.step_open {
                    self.open_step();
                }
                let input = self.inputs.key(at, args);
                // The part's index once pushed (one may drop first).
                let k = self.dropped + self.parts.len();
                self.pending.push(id.as_deref(), name, k);
                self.push(Part::Tool {
                    name: name.clone(),
                    input: input.clone(),
                    finished: false,
                });
                self.step_empty = false;
                let run = self.run_length(name, &input);
                if run + 1 >= self.s.threshold {
                    found.push(
                        at.i,
                        "doom_loop",
                        0,
                        format!(
                            "\"{name}\" has been called {} times with identical input",
                            run + 1
                        ),
                    );
                }
            }
            Record::ToolResult { id, name, .. } => {
                if let Some(k) = self.pending.answer(id.as_deref(), name.as_deref()) {
                    // A part out of the window is never read again.
                    if let Some(Part::Tool { finished, .. }) = k
                        .checked_sub(self.dropped)
                        .and_then(|j| self.parts.get_mut(j))
                    {
                        *finished = true;
                    }
                }
            }
            _ => {}
        }
    }
}
