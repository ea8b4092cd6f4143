//! A turn cap, the only guard some agents have: the baseline every loop
//! detector should beat.

use super::common::{each_rule, At, Found, RecordRule, RecordStream};
use crate::detect::{
    Check, Detection, Family, ParamSet, ParamSpec, ParamValue, Params, Prepared, Profile, Stream,
    POLICY, POLICY_SPEC,
};
use crate::error::Result;

/// The `max-turns` family.
pub struct MaxTurns;

impl Family for MaxTurns {
    fn name(&self) -> &'static str {
        "max-turns"
    }
    fn about(&self) -> &'static str {
        "Turn cap: the agent refuses to start turn N+1 (per session or per prompt); a baseline, not a loop detector"
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            POLICY_SPEC,
            ParamSpec::int(
                "max_turns",
                1,
                100_000_000,
                "turns",
                "turns allowed; the record that starts the next one is the detection",
                "looptune baseline; Gemini CLI MAX_TURNS = 100 (client.ts @5411f113ca), subagents DEFAULT_MAX_TURNS = 30 (agents/types.ts @5411f113ca), Blade SAFETY_LIMIT = 100 (Agent.ts @b52d9f2bec), OpenHands SDK max_iteration_per_run = 500 (local_conversation.py)",
            ),
            ParamSpec::bool(
                "per_prompt",
                "count turns per prompt (a `user` record with a new prompt id starts one) instead of per session",
                "looptune",
            ),
        ]
    }
    fn profiles(&self) -> Vec<Profile> {
        vec![
            Profile {
                name: "max-turns",
                about: "stop when a session would start its 101st turn",
                values: vec![
                    (POLICY, ParamValue::word("stop")),
                    ("max_turns", ParamValue::Int(100)),
                    ("per_prompt", ParamValue::Bool(false)),
                ],
            },
            Profile {
                name: "gemini-max-turns",
                about: "Gemini CLI bounded turns: MAX_TURNS = 100 per sendMessageStream chain (client.ts @5411f113ca)",
                values: vec![("per_prompt", ParamValue::Bool(true))],
            },
            Profile {
                name: "blade-safety-limit",
                about: "Blade Agent.ts @b52d9f2bec: maxTurns -1 means SAFETY_LIMIT = 100 turns per submitted command",
                values: vec![("per_prompt", ParamValue::Bool(true))],
            },
            Profile {
                name: "openhands-v1-iterations",
                about: "OpenHands SDK LocalConversation max_iteration_per_run = 500 per run (one run per user message)",
                values: vec![
                    ("max_turns", ParamValue::Int(500)),
                    ("per_prompt", ParamValue::Bool(true)),
                ],
            },
            Profile {
                name: "gemini-subagent",
                about: "Gemini CLI @5411f113ca packages/core/src/agents (local-executor.ts, types.ts): DEFAULT_MAX_TURNS = 30: a Gemini CLI local subagent without its own cap, per invocation (one prompt); subagents do not use the loop detection service",
                values: vec![
                    ("max_turns", ParamValue::Int(30)),
                    ("per_prompt", ParamValue::Bool(true)),
                ],
            },
            Profile {
                name: "gemini-subagent-generalist",
                about: "Gemini CLI @5411f113ca packages/core/src/agents (local-executor.ts, types.ts): the generalist subagent's maxTurns = 20, per invocation (one prompt); subagents do not use the loop detection service",
                values: vec![
                    ("max_turns", ParamValue::Int(20)),
                    ("per_prompt", ParamValue::Bool(true)),
                ],
            },
            Profile {
                name: "gemini-subagent-codebase-investigator",
                about: "Gemini CLI @5411f113ca packages/core/src/agents (local-executor.ts, types.ts): the codebase_investigator subagent's maxTurns = 50, per invocation (one prompt); subagents do not use the loop detection service",
                values: vec![
                    ("max_turns", ParamValue::Int(50)),
                    ("per_prompt", ParamValue::Bool(true)),
                ],
            },
            Profile {
                name: "gemini-subagent-cli-help",
                about: "Gemini CLI @5411f113ca packages/core/src/agents (local-executor.ts, types.ts): the cli_help subagent's maxTurns = 10, per invocation (one prompt); subagents do not use the loop detection service",
                values: vec![
                    ("max_turns", ParamValue::Int(10)),
                    ("per_prompt", ParamValue::Bool(true)),
                ],
            },
        ]
    }
    fn checks(&self, params: &ParamSet) -> Result<Vec<Box<dyn Check>>> {
        let p = Params::new(self.name(), params);
        Ok(vec![Box::new(MaxTurnsCheck {
            s: MaxTurnsSettings {
                max: p.get("max_turns")?,
                per_prompt: p.get("per_prompt")?,
            },
        })])
    }
}

/// What the check reads.
#[derive(Debug, Clone, PartialEq)]
struct MaxTurnsSettings {
    max: u64,
    per_prompt: bool,
}

struct MaxTurnsCheck {
    s: MaxTurnsSettings,
}

impl Check for MaxTurnsCheck {
    fn name(&self) -> &'static str {
        "max-turns.cap"
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

impl MaxTurnsCheck {
    fn rule(&self) -> Cap {
        Cap {
            s: self.s.clone(),
            turns: 0,
        }
    }
}

/// The cap's state: turns counted so far (in this prompt, per prompt).
struct Cap {
    s: MaxTurnsSettings,
    turns: u64,
}

impl RecordRule for Cap {
    fn visit(&mut self, at: At<'_>, found: &mut Found<'_>) {
        if at.new_prompt && self.s.per_prompt {
            self.turns = 0;
        }
        if at.event.starts_turn {
            self.turns += 1;
            if self.turns > self.s.max {
                let prompt = if self.s.per_prompt {
                    at.prompts.saturating_sub(1)
                } else {
                    0
                };
                found.push(
                    at.i,
                    "max_turns",
                    prompt,
                    format!("turn {} exceeds the limit of {}", self.turns, self.s.max),
                );
            }
        }
    }
}
