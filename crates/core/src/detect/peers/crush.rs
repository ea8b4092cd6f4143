//! Crush's loop detection (`internal/agent/loop_detection.go`): a stop
//! condition of the fantasy agent loop. Each step (one LLM call with the tool
//! calls it made and their results) gets a SHA-256 signature over every
//! call's name, input and output; the run stops when, among the last 10 steps
//! (the check waits until there are 10), one signature occurs more than 5
//! times, consecutive or not.
//!
//! How canonical records drive it (docs/detector-mappings.md, "Crush"):
//! a step is a model turn as Blade's mapping cuts it (peer-mappings 5.1); a
//! run (one `agent.Stream` call, whose `steps` list the condition reads) starts
//! at every `user` record, and a step without tool calls ends its run after
//! the condition has seen it (fantasy checks `StopWhen` before it looks at
//! `ShouldContinue`). The condition is evaluated once per step, at the step's
//! last record.

use super::common::{segments, Found, Unanswered};
use crate::detect::{
    Check, Detection, Family, ParamSet, ParamSpec, ParamValue, Params, Prepared, Profile, POLICY,
    POLICY_SPEC,
};
use crate::error::Result;
use crate::event::{Record, Session};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

const SRC: &str =
    "charmbracelet/crush internal/agent/loop_detection.go @af86738e0d (PR #2214), StopWhen in internal/agent/agent.go";

/// The `crush` family.
pub struct Crush;

impl Family for Crush {
    fn name(&self) -> &'static str {
        "crush"
    }
    fn about(&self) -> &'static str {
        "Crush hasRepeatedToolCalls: a step signature (SHA-256 over each call's name, input and output) occurring more than 5 times among the last 10 steps stops the run"
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            POLICY_SPEC,
            ParamSpec::int(
                "window_steps",
                1,
                100_000,
                "steps",
                "steps examined (loopDetectionWindowSize); nothing fires while a run has fewer",
                SRC,
            ),
            ParamSpec::int(
                "max_repeats",
                0,
                100_000,
                "steps",
                "occurrences of one signature allowed in the window; one more stops (loopDetectionMaxRepeats)",
                SRC,
            ),
        ]
    }
    fn profiles(&self) -> Vec<Profile> {
        vec![Profile {
            name: "crush",
            about: "Crush @af86738e (2026-02, #2214): more than 5 equal step signatures among the last 10 steps of a run; the stop condition ends the run",
            values: vec![
                (POLICY, ParamValue::word("stop")),
                ("window_steps", ParamValue::Int(10)),
                ("max_repeats", ParamValue::Int(5)),
            ],
        }]
    }
    fn checks(&self, params: &ParamSet) -> Result<Vec<Box<dyn Check>>> {
        let p = Params::new(self.name(), params);
        Ok(vec![Box::new(CrushCheck {
            s: CrushSettings {
                window: p.get("window_steps")?,
                max_repeats: p.get("max_repeats")?,
            },
        })])
    }
}

/// One tool call of a step, as `getToolInteractionSignature` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepCall {
    /// `ToolName`.
    pub name: String,
    /// `Input`: the arguments' JSON text.
    pub input: String,
    /// The matched result's text, or empty without one.
    pub output: String,
}

/// `getToolInteractionSignature`: hex SHA-256 over `name\0input\0output\0`
/// of every call in order; `None` (the original's `""`) for a step without calls.
pub fn step_signature(calls: &[StepCall]) -> Option<String> {
    if calls.is_empty() {
        return None;
    }
    let mut h = Sha256::new();
    for c in calls {
        for part in [&c.name, &c.input, &c.output] {
            h.update(part.as_bytes());
            h.update([0u8]);
        }
    }
    Some(
        h.finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>(),
    )
}

/// `hasRepeatedToolCalls` over the signatures of a run's steps: the signature
/// that went over the limit, if any.
pub fn has_repeated_tool_calls(
    steps: &[Option<String>],
    window: usize,
    max_repeats: usize,
) -> Option<&str> {
    if steps.len() < window {
        return None;
    }
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for sig in steps[steps.len() - window..].iter().flatten() {
        let n = counts.entry(sig.as_str()).or_insert(0);
        *n += 1;
        if *n > max_repeats {
            return Some(sig);
        }
    }
    None
}

/// The arguments as the tool call's `Input` text: compact JSON in the file's
/// key order (what the provider streamed, up to whitespace).
fn input_text(args: &serde_json::Map<String, serde_json::Value>) -> String {
    serde_json::to_string(args).unwrap_or_default()
}

/// What a session gives the condition, in order.
#[derive(Debug)]
enum Item {
    /// A `user` record: a new run (a new `agent.Stream` call).
    NewRun,
    /// A step: the index of its last record and its calls.
    Step(usize, Vec<StepCall>),
}

fn items(s: &Session) -> Vec<Item> {
    let mut out = Vec::new();
    for seg in segments(s) {
        if matches!(s.events[seg.start].record, Record::User { .. }) {
            out.push(Item::NewRun);
        }
        if !seg.model_turn {
            continue;
        }
        let mut calls: Vec<StepCall> = Vec::new();
        let mut pending: Unanswered<usize> = Unanswered::default();
        for e in &s.events[seg.start..seg.end] {
            match &e.record {
                Record::ToolCall { name, args, id } => {
                    pending.push(id.as_deref(), name, calls.len());
                    calls.push(StepCall {
                        name: name.clone(),
                        input: input_text(args),
                        output: String::new(),
                    });
                }
                Record::ToolResult {
                    id, name, output, ..
                } => {
                    // A result answers a call of its own step only; text and
                    // error results alike give their text.
                    if let Some(k) = pending.answer(id.as_deref(), name.as_deref()) {
                        calls[k].output = output.clone().unwrap_or_default();
                    }
                }
                _ => {}
            }
        }
        out.push(Item::Step(seg.end - 1, calls));
    }
    out
}

/// What the check reads of a step: the configuration-independent part of
/// [`Item`], each step's signature and tool names, made once per session
/// and shared by every configuration (the signature hashes the arguments
/// and outputs: a sweep no longer redoes it per configuration).
#[derive(Debug)]
enum Step {
    /// A new run.
    NewRun,
    /// A step: the index of its last record, its signature, its tool names.
    At(usize, Option<String>, Vec<String>),
}

fn steps(s: &Session) -> Vec<Step> {
    items(s)
        .into_iter()
        .map(|item| match item {
            Item::NewRun => Step::NewRun,
            Item::Step(at, calls) => Step::At(
                at,
                step_signature(&calls),
                calls.into_iter().map(|c| c.name).collect(),
            ),
        })
        .collect()
}

/// What the check reads.
#[derive(Debug, Clone, PartialEq)]
struct CrushSettings {
    window: usize,
    max_repeats: usize,
}

struct CrushCheck {
    s: CrushSettings,
}

impl Check for CrushCheck {
    fn name(&self) -> &'static str {
        "crush.repeated_steps"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }

    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        let s = &session.session;
        let mut found = Found::new(s, limit);
        let mut run: Vec<Option<String>> = Vec::new();
        let mut prompts = 0u32;
        let mut run_over = false;
        let steps = session.shared("crush.steps", steps);
        for step in steps.iter() {
            let (at, signature, names) = match step {
                Step::NewRun => {
                    prompts += 1;
                    run.clear();
                    run_over = false;
                    continue;
                }
                Step::At(at, signature, names) => (*at, signature, names),
            };
            if run_over {
                // The previous run ended; a model turn without a user record
                // is taken as a new run.
                run.clear();
                run_over = false;
            }
            run.push(signature.clone());
            if let Some(sig) = has_repeated_tool_calls(&run, self.s.window, self.s.max_repeats) {
                found.push(
                    at,
                    "repeated_tool_calls",
                    prompts.saturating_sub(1),
                    format!(
                        "step signature {} occurs more than {} times in the last {} steps (this step: {})",
                        &sig[..12],
                        self.s.max_repeats,
                        self.s.window,
                        if names.is_empty() {
                            "no tool calls".to_string()
                        } else {
                            names.join(", ")
                        }
                    ),
                );
                if found.full() {
                    break;
                }
                // The stop condition ends the run; going on is a new run.
                run_over = true;
            }
            if names.is_empty() {
                // A step without tool calls ends the run (ShouldContinue false).
                run_over = true;
            }
        }
        found.into_vec()
    }
}
