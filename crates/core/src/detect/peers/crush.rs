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

use super::common::{Found, Unanswered};
use crate::detect::{
    Check, Detection, Family, ParamSet, ParamSpec, ParamValue, Params, Prepared, Profile, Stream,
    POLICY, POLICY_SPEC,
};
use crate::error::Result;
use crate::event::{Event, Record, Session};
use sha2::{Digest, Sha256};
use std::collections::VecDeque;

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
    Some(crate::util::number::hex(&h.finalize()))
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
    let steps = &steps[steps.len() - window..];
    if window <= SCAN_WINDOW {
        // A short window is counted in place: no map made at every step.
        for (j, sig) in steps.iter().enumerate() {
            let Some(sig) = sig else { continue };
            let n = steps[..=j]
                .iter()
                .filter(|s| s.as_ref() == Some(sig))
                .count();
            if n > max_repeats {
                return Some(sig);
            }
        }
        return None;
    }
    // Fx: the keys are digests, and the map is made at every step.
    let mut counts: rustc_hash::FxHashMap<&str, usize> = Default::default();
    for sig in steps.iter().flatten() {
        let n = counts.entry(sig.as_str()).or_insert(0);
        *n += 1;
        if *n > max_repeats {
            return Some(sig);
        }
    }
    None
}

/// The longest window [`has_repeated_tool_calls`] counts by scanning (the
/// scan is quadratic in it; a map costs more below this).
const SCAN_WINDOW: usize = 32;

/// The arguments as the tool call's `Input` text: compact JSON in the file's
/// key order (what the provider streamed, up to whitespace).
fn input_text(args: &serde_json::Map<String, serde_json::Value>) -> String {
    serde_json::to_string(args).unwrap_or_default()
}

/// What the check reads of a step, in order: made once per session and
/// shared by every configuration (the signature hashes the arguments and
/// outputs: a sweep does not redo it per configuration), or made live.
#[derive(Debug)]
enum Step {
    /// A `user` record: a new run (a new `agent.Stream` call).
    NewRun,
    /// A step: the index of its last record, its signature, its tool names.
    At(usize, Option<String>, Vec<String>),
}

/// Cuts a session into steps record by record, as [`segments`] cuts it:
/// a segment ends before a record that starts a turn or is a `user` record,
/// or with the session; it is a step if it is a model turn. Its calls are
/// known only when it ends (a result may come last), so a step is judged
/// then, at its last record.
///
/// [`segments`]: super::common::segments
#[derive(Debug, Default)]
struct Cutter {
    /// A segment is open (a record was read since the last cut).
    open: bool,
    /// It began with a `user` record.
    user: bool,
    /// It is a model turn (begins a turn, or has model output).
    model_turn: bool,
    /// Its last record so far.
    last: usize,
    calls: Vec<StepCall>,
    pending: Unanswered<usize>,
}

impl Cutter {
    /// Read record `i`; the segment it closes goes to `out`.
    fn feed(&mut self, i: usize, e: &Event, out: &mut Vec<Step>) {
        let user = matches!(e.record, Record::User { .. });
        if self.open && (e.starts_turn || user) {
            self.close(out);
        }
        if !self.open {
            self.open = true;
            self.user = user;
            self.model_turn = e.starts_turn;
        }
        self.last = i;
        match &e.record {
            Record::Content { .. } | Record::Thought { .. } => self.model_turn = true,
            Record::ToolCall { name, args, id } => {
                self.model_turn = true;
                self.pending.push(id.as_deref(), name, self.calls.len());
                self.calls.push(StepCall {
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
                if let Some(k) = self.pending.answer(id.as_deref(), name.as_deref()) {
                    self.calls[k].output = output.clone().unwrap_or_default();
                }
            }
            _ => {}
        }
    }

    /// The session has ended (or the next segment begins): the open
    /// segment's new run and step go to `out`.
    fn close(&mut self, out: &mut Vec<Step>) {
        if !std::mem::take(&mut self.open) {
            return;
        }
        let calls = std::mem::take(&mut self.calls);
        self.pending.clear();
        if self.user {
            out.push(Step::NewRun);
        }
        if self.model_turn {
            out.push(Step::At(
                self.last,
                step_signature(&calls),
                calls.into_iter().map(|c| c.name).collect(),
            ));
        }
    }
}

fn steps(s: &Session) -> Vec<Step> {
    let mut cut = Cutter::default();
    let mut out = Vec::new();
    for (i, e) in s.events.iter().enumerate() {
        cut.feed(i, e, &mut out);
    }
    cut.close(&mut out);
    out
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
        let mut runs = self.runs();
        for step in session.shared("crush.steps", steps).iter() {
            runs.step(step, &mut found);
            if found.full() {
                break;
            }
        }
        found.into_vec()
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(Box::new(CrushStream {
            cut: Cutter::default(),
            runs: self.runs(),
            steps: Vec::new(),
        }))
    }
}

impl CrushCheck {
    fn runs(&self) -> Runs {
        Runs {
            s: self.s.clone(),
            run: VecDeque::new(),
            prompts: 0,
            run_over: false,
        }
    }
}

/// The stop condition over the steps of the current run: only the last
/// `window` signatures are read (and "at least `window` steps" holds of the
/// last `window` kept), so no more are kept.
struct Runs {
    s: CrushSettings,
    run: VecDeque<Option<String>>,
    prompts: u32,
    run_over: bool,
}

impl Runs {
    fn step(&mut self, step: &Step, found: &mut Found<'_>) {
        let (at, signature, names) = match step {
            Step::NewRun => {
                self.prompts += 1;
                self.run.clear();
                self.run_over = false;
                return;
            }
            Step::At(at, signature, names) => (*at, signature, names),
        };
        if self.run_over {
            // The previous run ended; a model turn without a user record
            // is taken as a new run.
            self.run.clear();
            self.run_over = false;
        }
        // window_steps is at least 1.
        if self.run.len() == self.s.window {
            self.run.pop_front();
        }
        self.run.push_back(signature.clone());
        let run = self.run.make_contiguous();
        if let Some(sig) = has_repeated_tool_calls(run, self.s.window, self.s.max_repeats) {
            found.push(
                at,
                "repeated_tool_calls",
                self.prompts.saturating_sub(1),
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
            // The stop condition ends the run; going on is a new run.
            self.run_over = true;
        }
        if names.is_empty() {
            // A step without tool calls ends the run (ShouldContinue false).
            self.run_over = true;
        }
    }
}

/// The check fed live: a step is judged when the record after it arrives
/// (or the session ends), and its detection, at its last record, is held
/// until then.
struct CrushStream {
    cut: Cutter,
    runs: Runs,
    steps: Vec<Step>,
}

impl CrushStream {
    fn judge(&mut self, session: &Session, out: &mut Vec<Detection>) {
        let mut found = Found::new(session, None);
        for step in self.steps.drain(..) {
            self.runs.step(&step, &mut found);
        }
        out.extend(found.into_vec());
    }
}

impl Stream for CrushStream {
    fn keeps_from(&self) -> usize {
        // The open segment's last record: its step is reported there.
        match self.cut.open {
            true => self.cut.last,
            false => usize::MAX,
        }
    }
    fn feed(&mut self, session: &Session, i: usize, out: &mut Vec<Detection>) {
        self.cut.feed(i, session.event(i), &mut self.steps);
        self.judge(session, out);
    }
    fn finish(&mut self, session: &Session, out: &mut Vec<Detection>) {
        self.cut.close(&mut self.steps);
        self.judge(session, out);
    }
}
