//! OpenRouter's TypeScript agent SDK doom-loop detection
//! (`packages/agent/src/lib/doom-loop.ts`, `DoomLoopMonitor`, the `doomLoop`
//! option of `callModel`): per-tool streaks of identical calls counted once
//! per model round, a within-response token-block repetition and a
//! cross-step identical-text streak, all fed to one ladder (observe 2,
//! steer off, block 3, stop 6).
//!
//! How canonical records drive it (docs/detector-mappings.md, "OpenRouter
//! agent SDK"): one monitor per session (its state lives in the conversation
//! state, which every `callModel` of the conversation passes on). A round is
//! a model turn (the spec turn of the record). Every `tool_call` is recorded
//! with its tool name and full arguments (no tool declares a `loopKey`); a
//! repeat of the same call in the same round is the same evidence and gives
//! no new verdict. A model turn's text (its `content` records, joined) is
//! recorded once, at its last `content` record.
//!
//! Reported per prompt: each verdict whose action is stronger than any
//! reported before in the prompt (tier in the detail), the stop reported as
//! strike 4 (padded at its event), so the profile's `warn:3` stops there and
//! observe, steer and block warn. After a stop nothing more is fed in that
//! prompt (the run halts).

use super::common::{each_text, last_contents, At, Found, TextRule, TextStream};
use crate::detect::{
    Check, Detection, Family, ParamSet, ParamSpec, ParamValue, Params, Prepared, Profile, Stream,
    POLICY, POLICY_SPEC,
};
use crate::error::Result;
use crate::event::Record;
use crate::util::js::{is_js_space, stringify_sorted, utf16};
use std::collections::HashMap;

const SRC: &str =
    "OpenRouterTeam/typescript-agent packages/agent/src/lib/doom-loop.ts @0adaf68aa2 (PRs #73, #89)";

/// The `openrouter-sdk` family.
pub struct OpenRouterSdk;

impl Family for OpenRouterSdk {
    fn name(&self) -> &'static str {
        "openrouter-sdk"
    }
    fn about(&self) -> &'static str {
        "OpenRouter agent SDK doomLoop: identical calls to a tool in consecutive rounds (parallel duplicates once, other tools in between ignored), repeated token blocks and identical step text, on a ladder observe 2 / block 3 / stop 6"
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            POLICY_SPEC,
            ParamSpec::int(
                "observe",
                0,
                100_000,
                "rounds",
                "streak that emits the DoomLoopDetected hook; 0 = rung off (ladder.observe)",
                SRC,
            ),
            ParamSpec::int(
                "steer",
                0,
                100_000,
                "rounds",
                "streak that injects a corrective message; 0 = rung off (ladder.steer)",
                SRC,
            ),
            ParamSpec::int(
                "block",
                0,
                100_000,
                "rounds",
                "streak that refuses the call (tools only); 0 = rung off (ladder.block)",
                SRC,
            ),
            ParamSpec::int(
                "stop",
                0,
                100_000,
                "rounds",
                "streak that halts the run; 0 = rung off (ladder.stop)",
                SRC,
            ),
            ParamSpec::bool("text", "the two text detectors run (text.enabled)", SRC),
            ParamSpec::int(
                "max_period_tokens",
                1,
                100_000,
                "tokens",
                "longest repeating token block looked for (text.maxPeriodTokens)",
                SRC,
            ),
            ParamSpec::int(
                "min_repeats",
                1,
                100_000,
                "repeats",
                "consecutive repeats of a block that count (text.minRepeats)",
                SRC,
            ),
            ParamSpec::int(
                "min_covered_tokens",
                1,
                100_000,
                "tokens",
                "tokens the repeats must cover (text.minCoveredTokens)",
                SRC,
            ),
            ParamSpec::int(
                "max_window_tokens",
                1,
                100_000,
                "tokens",
                "trailing tokens of a response scanned (text.maxWindowTokens)",
                SRC,
            ),
        ]
    }
    fn profiles(&self) -> Vec<Profile> {
        vec![Profile {
            name: "openrouter-sdk",
            about: "OpenRouter agent SDK @0adaf68a with doomLoop: true: observe at 2, block at 3, stop at 6 (steer off); text repeats of 4 blocks covering 12 tokens. Policy warn:3 (observe, steer and block warn; the stop is strike 4)",
            values: vec![
                (POLICY, ParamValue::word("warn:3")),
                ("observe", ParamValue::Int(2)),
                ("steer", ParamValue::Int(0)),
                ("block", ParamValue::Int(3)),
                ("stop", ParamValue::Int(6)),
                ("text", ParamValue::Bool(true)),
                ("max_period_tokens", ParamValue::Int(16)),
                ("min_repeats", ParamValue::Int(4)),
                ("min_covered_tokens", ParamValue::Int(12)),
                ("max_window_tokens", ParamValue::Int(400)),
            ],
        }]
    }
    fn checks(&self, params: &ParamSet) -> Result<Vec<Box<dyn Check>>> {
        let p = Params::new(self.name(), params);
        let rung = |name: &str| -> Result<Option<u32>> {
            let v: u32 = p.get(name)?;
            Ok((v > 0).then_some(v))
        };
        let s = DoomLoopSettings {
            ladder: Ladder {
                observe: rung("observe")?,
                steer: rung("steer")?,
                block: rung("block")?,
                stop: rung("stop")?,
            },
            text: TextOptions {
                enabled: p.get("text")?,
                max_period_tokens: p.get("max_period_tokens")?,
                min_repeats: p.get("min_repeats")?,
                min_covered_tokens: p.get("min_covered_tokens")?,
                max_window_tokens: p.get("max_window_tokens")?,
            },
        };
        Ok(vec![Box::new(DoomLoopCheck { s })])
    }
}

/// `DoomLoopLadder` resolved: `None` is a rung set to `false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ladder {
    pub observe: Option<u32>,
    pub steer: Option<u32>,
    pub block: Option<u32>,
    pub stop: Option<u32>,
}

impl Default for Ladder {
    /// `DEFAULT_DOOM_LOOP_LADDER`.
    fn default() -> Self {
        Ladder {
            observe: Some(2),
            steer: None,
            block: Some(3),
            stop: Some(6),
        }
    }
}

/// `DoomLoopTextOptions` resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextOptions {
    pub enabled: bool,
    pub max_period_tokens: usize,
    pub min_repeats: usize,
    pub min_covered_tokens: usize,
    pub max_window_tokens: usize,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions {
            enabled: true,
            max_period_tokens: 16,
            min_repeats: 4,
            min_covered_tokens: 12,
            max_window_tokens: 400,
        }
    }
}

/// What the monitor reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DoomLoopSettings {
    pub ladder: Ladder,
    pub text: TextOptions,
}

/// `DoomLoopAction`, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    Observe,
    Steer,
    Block,
    Stop,
}

impl Action {
    fn word(self) -> &'static str {
        match self {
            Action::Observe => "observe",
            Action::Steer => "steer",
            Action::Block => "block",
            Action::Stop => "stop",
        }
    }
}

/// `resolveLadderAction`: the strongest rung the streak reached.
pub fn resolve_ladder_action(ladder: &Ladder, streak: u32, allow_block: bool) -> Option<Action> {
    let meets = |t: Option<u32>| t.is_some_and(|t| streak >= t);
    if meets(ladder.stop) {
        Some(Action::Stop)
    } else if allow_block && meets(ladder.block) {
        Some(Action::Block)
    } else if meets(ladder.steer) {
        Some(Action::Steer)
    } else if meets(ladder.observe) {
        Some(Action::Observe)
    } else {
        None
    }
}

/// A verdict: which detector, what action, at which streak.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub detector: &'static str,
    pub action: Action,
    pub streak: u32,
}

/// `detectTextRepetition`'s result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repetition {
    pub repeats: usize,
    pub period_tokens: usize,
    pub covered_tokens: usize,
    pub sample: String,
}

fn is_space(u: u16) -> bool {
    is_js_space(u)
}

/// `detectTextRepetition`: a token block repeating at the tail of `text`.
pub fn detect_text_repetition(text: &str, o: &TextOptions) -> Option<Repetition> {
    let units = utf16(text);
    // The tail slice is taken in UTF-16 units, as `String.prototype.slice`.
    let budget = o.max_window_tokens * 64;
    let tail = if units.len() > budget {
        &units[units.len() - budget..]
    } else {
        &units[..]
    };
    let all: Vec<&[u16]> = tail
        .split(|u| is_space(*u))
        .filter(|t| !t.is_empty())
        .collect();
    let tokens = &all[all.len().saturating_sub(o.max_window_tokens)..];
    let n = tokens.len();
    if n < o.min_covered_tokens.max(2) {
        return None;
    }
    let mut best: Option<Repetition> = None;
    let max_period = o.max_period_tokens.min(n / 2);
    for period in 1..=max_period {
        let mut repeats = 1;
        let mut start = n as isize - 2 * period as isize;
        'outer: while start >= 0 {
            let s = start as usize;
            for i in 0..period {
                if tokens[s + i] != tokens[n - period + i] {
                    break 'outer;
                }
            }
            repeats += 1;
            start -= period as isize;
        }
        let covered = repeats * period;
        if repeats >= o.min_repeats
            && covered >= o.min_covered_tokens
            && best.as_ref().is_none_or(|b| covered > b.covered_tokens)
        {
            let sample: Vec<String> = tokens[n - period..]
                .iter()
                .map(|t| String::from_utf16_lossy(t))
                .collect();
            best = Some(Repetition {
                repeats,
                period_tokens: period,
                covered_tokens: covered,
                sample: sample.join(" "),
            });
        }
    }
    best
}

/// `text.replace(/\s+/g, ' ').trim()`.
fn normalize_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_space = false;
    for c in text.chars() {
        let space = (c as u32) < 0x10000 && is_space(c as u32 as u16);
        if space {
            if !in_space {
                out.push(' ');
            }
            in_space = true;
        } else {
            out.push(c);
            in_space = false;
        }
    }
    out.trim_matches(' ').to_string()
}

/// `DoomLoopMonitor`.
#[derive(Debug, Default, Clone)]
pub struct Monitor {
    s: DoomLoopSettings,
    /// Per tool: canonical call, streak, round of the last record.
    tools: HashMap<String, (String, u32, Option<u32>)>,
    /// Normalised text and its streak.
    text: Option<(String, u32)>,
}

/// `recordToolCall`'s result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRecord {
    pub streak: u32,
    pub duplicate_in_round: bool,
    pub verdict: Option<Verdict>,
}

impl Monitor {
    /// A monitor with fresh state.
    pub fn new(s: DoomLoopSettings) -> Monitor {
        Monitor {
            s,
            ..Monitor::default()
        }
    }

    /// `recordToolCall(toolName, keyMaterial, round)` for a client tool.
    pub fn record_tool_call(
        &mut self,
        tool: &str,
        key: &serde_json::Value,
        round: u32,
    ) -> CallRecord {
        // The fingerprint hashes `toolName + "\n" + jcs(key)`; the text itself
        // is kept per tool, equal texts being equal fingerprints.
        let fingerprint = stringify_sorted(key);
        let (streak, duplicate) = match self.tools.get(tool) {
            Some((f, streak, r)) if *f == fingerprint => {
                if *r == Some(round) {
                    (*streak, true)
                } else {
                    (streak + 1, false)
                }
            }
            _ => (1, false),
        };
        self.tools
            .insert(tool.to_string(), (fingerprint, streak, Some(round)));
        let verdict = resolve_ladder_action(&self.s.ladder, streak, true).map(|action| Verdict {
            detector: "tool-fingerprint",
            action,
            streak,
        });
        CallRecord {
            streak,
            duplicate_in_round: duplicate,
            verdict,
        }
    }

    /// `recordAssistantText`: the stronger of the two text verdicts.
    pub fn record_assistant_text(&mut self, text: &str) -> Option<Verdict> {
        if !self.s.text.enabled {
            return None;
        }
        let normalized = normalize_text(text);
        if normalized.is_empty() {
            return None;
        }
        let within = detect_text_repetition(&normalized, &self.s.text).and_then(|r| {
            resolve_ladder_action(&self.s.ladder, r.repeats as u32, false).map(|action| Verdict {
                detector: "text-repetition",
                action,
                streak: r.repeats as u32,
            })
        });
        let streak = match &self.text {
            Some((t, n)) if *t == normalized => n + 1,
            _ => 1,
        };
        self.text = Some((normalized, streak));
        let cross = resolve_ladder_action(&self.s.ladder, streak, false).map(|action| Verdict {
            detector: "text-streak",
            action,
            streak,
        });
        // `strongerVerdict`: within-response wins ties.
        match (within, cross) {
            (None, b) => b,
            (a, None) => a,
            (Some(a), Some(b)) => Some(if b.action > a.action { b } else { a }),
        }
    }
}

struct DoomLoopCheck {
    s: DoomLoopSettings,
}

impl Check for DoomLoopCheck {
    fn name(&self) -> &'static str {
        "openrouter-sdk.doom_loop"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }

    fn run(&self, session: &Prepared, _limit: Option<usize>) -> Vec<Detection> {
        let s = &session.session;
        // Each model turn's text, at its last `content` record.
        let texts = session.shared("openrouter-sdk.texts", |s| last_contents(s, false));
        each_text(s, None, &texts, &mut self.rule())
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(TextStream::boxed(self.rule(), false))
    }
}

impl DoomLoopCheck {
    fn rule(&self) -> DoomRule {
        DoomRule {
            m: Monitor::new(self.s),
            reported: None,
            strikes: 0,
            stopped: false,
        }
    }
}

/// The monitor over a session's records, and what was reported in the
/// prompt (the strongest action, the strikes, whether it stopped).
#[derive(Clone)]
struct DoomRule {
    m: Monitor,
    reported: Option<Action>,
    strikes: u32,
    stopped: bool,
}

impl TextRule for DoomRule {
    fn visit(&mut self, at: At<'_>, text: Option<&str>, found: &mut Found<'_>) {
        let prompt = at.prompts.saturating_sub(1);
        if at.new_prompt {
            self.reported = None;
            self.strikes = 0;
            self.stopped = false;
        }
        if self.stopped {
            return;
        }
        let verdict = match &at.event.record {
            Record::ToolCall { name, args, .. } => {
                let r = self.m.record_tool_call(
                    name,
                    &serde_json::Value::Object((**args).clone()),
                    at.event.turn,
                );
                // A duplicate in its round shares the first one's decision.
                r.verdict
                    .filter(|_| !r.duplicate_in_round)
                    .map(|v| (v, name.as_str()))
            }
            Record::Content { .. } => match text {
                Some(t) => self.m.record_assistant_text(t).map(|v| (v, "text")),
                None => None,
            },
            _ => None,
        };
        let Some((v, what)) = verdict else {
            return;
        };
        if self.reported.is_some_and(|r| v.action <= r) {
            return;
        }
        self.reported = Some(v.action);
        let detail = format!("{}: {what} ({} in a row)", v.action.word(), v.streak);
        if v.action == Action::Stop {
            // The stop is strike 4 of its prompt whatever came before.
            while self.strikes < 4 {
                found.push(at.i, v.detector, prompt, detail.clone());
                self.strikes += 1;
            }
            self.stopped = true;
        } else {
            found.push(at.i, v.detector, prompt, detail);
            self.strikes += 1;
        }
    }
}
