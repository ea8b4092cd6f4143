//! OpenCode's doom-loop rule (`session/processor.ts`) and Kilo Code's
//! session-wide variant (`session/loop-detection.ts`), driven by canonical
//! records as peer-mappings section 3 says.

use super::common::{each_record, Unanswered};
use crate::detect::{
    Check, Detection, Family, ParamSet, ParamSpec, ParamValue, Params, Prepared, Profile, POLICY,
    POLICY_SPEC,
};
use crate::error::Result;
use crate::event::Record;

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

/// A message part, as far as the rules look at it.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    /// `step-start`, `step-finish` or a user message's text.
    Other,
    Text,
    Reasoning,
    Tool {
        name: String,
        /// The input's id in the session's `CallArgs` (equal ids, equal texts).
        input: u32,
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
        let inputs = session.call_args();
        let mut parts = vec![Part::Other]; // step-start
        each_record(&session.session, limit, |at, found| {
            let e = at.event;
            // A new step (turn) or a user message means a new assistant message.
            if e.starts_turn || matches!(e.record, Record::User { .. }) {
                parts.clear();
                parts.push(Part::Other);
            }
            match &e.record {
                // Streamed text extends the current text (reasoning) part.
                Record::Content { .. } if parts.last() != Some(&Part::Text) => {
                    parts.push(Part::Text);
                }
                Record::Thought { .. } if parts.last() != Some(&Part::Reasoning) => {
                    parts.push(Part::Reasoning);
                }
                Record::ToolCall { name, .. } => {
                    let (input, text) = inputs.at(at.i);
                    // Status is "running" now; completed or errored later:
                    // never "pending", so every tool part qualifies.
                    parts.push(Part::Tool {
                        name: name.clone(),
                        input,
                        finished: false,
                    });
                    let n = self.s.threshold;
                    let hit = parts.len() >= n
                        && parts[parts.len() - n..].iter().all(|p| {
                            matches!(p, Part::Tool { name: t, input: x, .. } if t == name && *x == input)
                        });
                    if hit {
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
        })
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
        // Session-wide parts. A step is step-start .. step-finish; the user's
        // message contributes one text part.
        let inputs = session.call_args();
        let mut parts: Vec<Part> = Vec::new();
        let mut step_open = false;
        let mut step_empty = false;
        let mut pending: Unanswered<usize> = Unanswered::default();
        let open_step = |parts: &mut Vec<Part>, step_open: &mut bool, step_empty: &mut bool| {
            if *step_open && *step_empty {
                return; // a step that has nothing yet needs no second start
            }
            if *step_open {
                parts.push(Part::Other); // step-finish
            }
            parts.push(Part::Other); // step-start
            *step_open = true;
            *step_empty = true;
        };
        each_record(&session.session, limit, |at, found| {
            let e = at.event;
            if let Record::User { .. } = e.record {
                if step_open {
                    parts.push(Part::Other); // step-finish
                }
                parts.push(Part::Other); // the user's text part
                step_open = false;
                step_empty = false;
            }
            if e.starts_turn {
                open_step(&mut parts, &mut step_open, &mut step_empty);
            }
            match &e.record {
                Record::Content { .. } | Record::Thought { .. } => {
                    if !step_open {
                        open_step(&mut parts, &mut step_open, &mut step_empty);
                    }
                    let kind = if matches!(e.record, Record::Content { .. }) {
                        Part::Text
                    } else {
                        Part::Reasoning
                    };
                    if !step_empty && parts.last() == Some(&kind) {
                        return;
                    }
                    parts.push(kind);
                    step_empty = false;
                }
                Record::ToolCall { name, id, .. } => {
                    if !step_open {
                        open_step(&mut parts, &mut step_open, &mut step_empty);
                    }
                    let (input, _) = inputs.at(at.i);
                    pending.push(id.as_deref(), name, parts.len());
                    parts.push(Part::Tool {
                        name: name.clone(),
                        input,
                        finished: false,
                    });
                    step_empty = false;
                    let from = parts.len().saturating_sub(self.s.scan);
                    let run = self.run_length(&parts[from..], name, input);
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
                    if let Some(k) = pending.answer(id.as_deref(), name.as_deref()) {
                        if let Part::Tool { finished, .. } = &mut parts[k] {
                            *finished = true;
                        }
                    }
                }
                _ => {}
            }
        })
    }
}

impl SessionCheck {
    /// `checkToolCall`'s count of earlier finished identical calls, oldest to newest.
    fn run_length(&self, window: &[Part], name: &str, input: u32) -> usize {
        let mut run = 0;
        let mut matched = false;
        for p in window {
            let Part::Tool {
                name: t,
                input: x,
                finished,
            } = p
            else {
                continue;
            };
            let is_write = self.s.write_tools.iter().any(|w| w == t);
            let same_tool_other_input = t == name && *finished && *x != input;
            if (is_write || same_tool_other_input) && matched {
                run = 0;
                matched = false;
                continue;
            }
            if *finished && t == name && *x == input {
                run += 1;
                matched = true;
            }
        }
        run
    }
}
