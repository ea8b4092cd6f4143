//! The `looptune` family: a detector designed from the data rather than
//! ported. Its knobs span the shipped rules, so several families' stock
//! behaviour is a special case (`looptune-as-gemini`, `looptune-as-opencode`),
//! and each rule is off at 0.
//!
//! Rules, one file and one [`Check`] each (docs/detector-mappings.md,
//! "looptune", cites the user reports behind each):
//! - [`repeat`]: the same action `T` times in a row (Gemini CLI, OpenCode);
//! - [`window`]: one action `K` times among the last `W` actions (Crush-style);
//! - [`cycle`]: a cycle of period 2..`P` repeated `R` times (`A B A B`);
//! - [`errors`]: the same error text head `E` times in a row (Goose);
//! - [`stall`]: the same action answered by the same result `N` times, other
//!   actions in between or not (no progress);
//! - [`chant`]: Gemini CLI's content check (its port, quirks included) with
//!   chunk size `C` and threshold `H`;
//! - [`long_chant`]: the streamed text (thought included) ending in a passage
//!   of `L` characters or more seen `M` times.
//!
//! What counts as the same action ([`actions`]) is computed once per session
//! and sameness setting and shared by every rule that reads it. Each rule
//! holds only its own settings, so a sweep over one rule's axes runs the
//! other rules once: the grid costs the sum of its axes, not their product.
//!
//! Stages: each rule has a `*_warn` and a `*_stop` threshold. A rule emits a
//! `<rule>_warn` detection when its count reaches the warn threshold (once
//! per run of the count) and a `<rule>` detection at every action where the
//! count is at or over the stop threshold. Detections are strikes as
//! everywhere, so the shared `policy` decides what they do: under `warn:1`
//! (the family's default) a rule's warning is strike 1 and its stop strike 2,
//! which stops the session; under `stop` the first detection of either stage
//! stops. With the warn threshold 0 (or not below the stop threshold) a rule
//! has one stage and behaves as the shipped rules do.

pub mod actions;
mod chant;
mod cycle;
mod errors;
mod long_chant;
mod repeat;
mod stall;
#[cfg(test)]
mod tests;
mod window;

use crate::detect::{
    Check, Detection, Family, ParamSet, ParamSpec, ParamValue, Params, Profile, POLICY, POLICY_SPEC,
};
use crate::error::{Error, Result};
use crate::event::Session;
use actions::{Same, SameSettings};

const SRC: &str = "looptune (issue #32): designed from ../shared/corpus and users' reports";

/// The `looptune` family.
pub struct Looptune;

/// A rule's two thresholds (0 = that stage is off).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stages {
    /// Count at which a warning is emitted (once per run of the count).
    pub warn: usize,
    /// Count from which every action is a stopping detection.
    pub stop: usize,
}

/// Which stage a count reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The warning.
    Warn,
    /// The stop.
    Stop,
}

impl Stages {
    /// Whether the rule is on at all.
    pub fn on(&self) -> bool {
        self.warn > 0 || self.stop > 0
    }
    /// Whether the warn stage is on: a warn threshold below the stop one.
    pub fn warns(&self) -> bool {
        self.warn > 0 && (self.stop == 0 || self.warn < self.stop)
    }
    /// The stage a running count has reached at this action: the stop at or
    /// over the stop threshold, the warning exactly at the warn threshold.
    pub fn at(&self, count: usize) -> Option<Stage> {
        if self.stop > 0 && count >= self.stop {
            Some(Stage::Stop)
        } else if self.warns() && count == self.warn {
            Some(Stage::Warn)
        } else {
            None
        }
    }
    /// The detection kind of a stage of rule `kinds = (stop, warn)`.
    pub fn kind(stage: Stage, kinds: (&'static str, &'static str)) -> &'static str {
        match stage {
            Stage::Stop => kinds.0,
            Stage::Warn => kinds.1,
        }
    }
}

/// A rule's detection at `stage`: its kind of `kinds = (stop, warn)`, its
/// detail saying " (warning)" on a warning.
pub(crate) fn staged(
    s: &Session,
    at: usize,
    stage: Stage,
    kinds: (&'static str, &'static str),
    prompt: u32,
    mut detail: String,
) -> Detection {
    if stage == Stage::Warn {
        detail.push_str(" (warning)");
    }
    detection(s, at, Stages::kind(stage, kinds), prompt, detail)
}

/// A detection at the 0-based record `at`.
pub(crate) fn detection(
    s: &Session,
    at: usize,
    kind: &'static str,
    prompt: u32,
    detail: String,
) -> Detection {
    Detection {
        kind,
        event: at as u32 + 1,
        turn: s.events[at].turn,
        prompt,
        strike: 0,
        detail,
    }
}

fn stages(p: &Params, rule: &str) -> Result<Stages> {
    Ok(Stages {
        warn: p.get(&format!("{rule}_warn"))?,
        stop: p.get(&format!("{rule}_stop"))?,
    })
}

fn stage_specs(
    names: (&'static str, &'static str),
    unit: &'static str,
    warn: &'static str,
    stop: &'static str,
) -> [ParamSpec; 2] {
    [
        ParamSpec::int(names.0, 0, 100_000, unit, warn, SRC),
        ParamSpec::int(names.1, 0, 100_000, unit, stop, SRC),
    ]
}

impl Family for Looptune {
    fn name(&self) -> &'static str {
        "looptune"
    }
    fn about(&self) -> &'static str {
        "looptune's own detector, designed from the corpus: repeats, windowed repeats, cycles, error streaks, no-progress, Gemini's chanting and long-period chants, each with a warn and a stop threshold (0 = off); as-<family> profiles reproduce Gemini CLI and OpenCode"
    }
    fn params(&self) -> Vec<ParamSpec> {
        let mut v = vec![
            POLICY_SPEC,
            ParamSpec::choice(
                "same",
                &["name", "args", "result"],
                "what makes two calls the same action: the tool name, name and arguments, or also the result's head",
                SRC,
            ),
            ParamSpec::bool(
                "normalize",
                "replace volatile values (UUIDs, hex ids of 8+ digits, ISO times, epoch numbers, temp paths) in arguments and results",
                SRC,
            ),
            ParamSpec::list(
                "volatile_keys",
                "argument keys",
                "argument keys dropped at any depth before comparing (nonces, request ids)",
                SRC,
            ),
            ParamSpec::int(
                "result_chars",
                0,
                1_000_000,
                "chars",
                "leading characters of a result compared (same = result, polling tools, stall rule)",
                SRC,
            ),
            ParamSpec::list(
                "polling_tools",
                "tool names",
                "tools that count only when their result repeats too (sleep, wait, status checks)",
                SRC,
            ),
            ParamSpec::choice(
                "repeat_scope",
                &["prompt", "step"],
                "what ends a run of identical actions: a new prompt (Gemini CLI), or also a new model step or model text between calls (OpenCode)",
                SRC,
            ),
        ];
        v.extend(stage_specs(
            ("repeat_warn", "repeat_stop"),
            "actions",
            "identical actions in a row that warn (0 = no warning)",
            "identical actions in a row that stop (0 = off)",
        ));
        v.push(ParamSpec::int(
            "window_size",
            1,
            100_000,
            "actions",
            "window rule: the last actions examined",
            SRC,
        ));
        v.extend(stage_specs(
            ("window_warn", "window_stop"),
            "actions",
            "occurrences of one action in the window that warn",
            "occurrences of one action in the window that stop (0 = off)",
        ));
        v.push(ParamSpec::int(
            "cycle_max_period",
            0,
            50,
            "actions",
            "longest cycle looked for (periods 2..this; below 2 = off)",
            SRC,
        ));
        v.extend(stage_specs(
            ("cycle_warn", "cycle_stop"),
            "repetitions",
            "repetitions of a cycle that warn",
            "repetitions of a cycle that stop (0 = off)",
        ));
        v.push(ParamSpec::int(
            "error_chars",
            0,
            1_000_000,
            "chars",
            "leading characters of an error text that must be equal",
            SRC,
        ));
        v.extend(stage_specs(
            ("error_warn", "error_stop"),
            "results",
            "same-tool same-error results in a row that warn",
            "same-tool same-error results in a row that stop (0 = off)",
        ));
        v.extend(stage_specs(
            ("stall_warn", "stall_stop"),
            "results",
            "times one action got the same result in a row (other actions between) that warn",
            "times one action got the same result in a row that stop (0 = off)",
        ));
        v.push(ParamSpec::int(
            "chant_chunk",
            1,
            100_000,
            "UTF-16 units",
            "chanting: Gemini CLI's window size (CONTENT_CHUNK_SIZE; its other content settings as gemini-latest)",
            SRC,
        ));
        v.extend(stage_specs(
            ("chant_warn", "chant_stop"),
            "windows",
            "chanting: occurrences of one window that warn (0, or 2 and more)",
            "chanting: occurrences of one window that stop (CONTENT_LOOP_THRESHOLD; 0 = off, else 2 and more)",
        ));
        v.push(ParamSpec::int(
            "long_chant_chars",
            0,
            100_000,
            "chars",
            "long chants: shortest repeated passage of streamed text, thought included (0 = off)",
            SRC,
        ));
        v.extend(stage_specs(
            ("long_chant_warn", "long_chant_stop"),
            "passages",
            "long chants: occurrences of the passage that warn",
            "long chants: occurrences of the passage that stop",
        ));
        // Gemini CLI's LLM judge, its port run as it is (verdicts come from
        // recorded judge records): on in the default, so the default
        // detects whatever gemini-latest detects.
        v.extend(crate::detect::gemini::judge_params());
        v
    }
    fn profiles(&self) -> Vec<Profile> {
        let off = ParamValue::Int(0);
        vec![
            Profile {
                name: "looptune-default",
                about: "looptune's choice on ../shared/corpus (README \"The looptune family\"): Gemini CLI's rules (5 identical calls, cycles of 2..5 calls repeated 5 times, chanting 10 x 50, its LLM judge on recorded verdicts) and one tool's same error 6 times in a row; warn once, stop at the second strike",
                values: vec![
                    (POLICY, ParamValue::word("warn:1")),
                    ("same", ParamValue::word("args")),
                    ("normalize", ParamValue::Bool(false)),
                    ("volatile_keys", ParamValue::words(&[])),
                    ("result_chars", ParamValue::Int(200)),
                    ("polling_tools", ParamValue::words(&[])),
                    ("repeat_scope", ParamValue::word("prompt")),
                    ("repeat_warn", off.clone()),
                    ("repeat_stop", ParamValue::Int(5)),
                    ("window_size", ParamValue::Int(10)),
                    ("window_warn", off.clone()),
                    ("window_stop", off.clone()),
                    ("cycle_max_period", ParamValue::Int(5)),
                    ("cycle_warn", off.clone()),
                    ("cycle_stop", ParamValue::Int(5)),
                    ("error_chars", ParamValue::Int(100)),
                    ("error_warn", off.clone()),
                    ("error_stop", ParamValue::Int(6)),
                    ("stall_warn", off.clone()),
                    ("stall_stop", off.clone()),
                    ("chant_chunk", ParamValue::Int(50)),
                    ("chant_warn", off.clone()),
                    ("chant_stop", ParamValue::Int(10)),
                    ("long_chant_chars", off.clone()),
                    ("long_chant_warn", off.clone()),
                    ("long_chant_stop", ParamValue::Int(4)),
                ]
                .into_iter()
                .chain(crate::detect::gemini::judge_latest())
                .collect(),
            },
            Profile {
                name: "looptune-as-gemini",
                about: "Gemini CLI gemini-latest: 5 identical calls or cycles of 2..5 calls repeated 5 times (name + JSON.stringify args, per prompt), chanting 10 x 50 units, its LLM judge from turn 30 (recorded verdicts); warn once, stop at the second strike",
                values: vec![
                    ("repeat_stop", ParamValue::Int(5)),
                    ("cycle_max_period", ParamValue::Int(5)),
                    ("cycle_stop", ParamValue::Int(5)),
                    ("error_stop", off.clone()),
                    ("chant_chunk", ParamValue::Int(50)),
                    ("chant_stop", ParamValue::Int(10)),
                    ("long_chant_chars", off.clone()),
                ],
            },
            Profile {
                name: "looptune-as-opencode",
                about: "OpenCode's doom loop: 3 identical calls (name + JSON.stringify input) in a row within one assistant step, model text between them breaking the run; ask",
                values: vec![
                    (POLICY, ParamValue::word("ask")),
                    ("llm_check", ParamValue::Bool(false)),
                    ("repeat_scope", ParamValue::word("step")),
                    ("repeat_stop", ParamValue::Int(3)),
                    ("cycle_stop", off.clone()),
                    ("error_stop", off.clone()),
                    ("chant_stop", off.clone()),
                    ("long_chant_chars", off.clone()),
                ],
            },
            Profile {
                name: "looptune-wide",
                about: "every looptune rule on (Gemini's judge off), each with a warning before its stop: a starting point for --set, not a recommendation",
                values: vec![
                    ("llm_check", ParamValue::Bool(false)),
                    ("same", ParamValue::word("result")),
                    ("normalize", ParamValue::Bool(true)),
                    ("volatile_keys", ParamValue::words(&["nonce", "request_id"])),
                    ("polling_tools", ParamValue::words(&["sleep", "wait"])),
                    ("repeat_warn", ParamValue::Int(3)),
                    ("window_warn", ParamValue::Int(4)),
                    ("window_stop", ParamValue::Int(6)),
                    ("cycle_warn", ParamValue::Int(3)),
                    ("error_warn", ParamValue::Int(2)),
                    ("error_stop", ParamValue::Int(4)),
                    ("stall_warn", ParamValue::Int(3)),
                    ("stall_stop", ParamValue::Int(5)),
                    ("chant_warn", ParamValue::Int(6)),
                    ("long_chant_chars", ParamValue::Int(300)),
                    ("long_chant_warn", ParamValue::Int(3)),
                ],
            },
        ]
    }
    fn checks(&self, params: &ParamSet) -> Result<Vec<Box<dyn Check>>> {
        let p = Params::new(self.name(), params);
        let same = SameSettings {
            same: p.choice(
                "same",
                &[
                    ("name", Same::Name),
                    ("args", Same::Args),
                    ("result", Same::Result),
                ],
            )?,
            normalize: p.get("normalize")?,
            volatile: p.get("volatile_keys")?,
            result_chars: p.get("result_chars")?,
            polling: p.get("polling_tools")?,
        };
        let mut out: Vec<Box<dyn Check>> = Vec::new();
        // First, as in Gemini CLI: on a tie the judge fires first.
        out.extend(crate::detect::gemini::judge_check(&p)?);
        let st = stages(&p, "repeat")?;
        if st.on() {
            out.push(Box::new(repeat::RepeatCheck {
                s: repeat::RepeatSettings {
                    same: same.clone(),
                    stages: st,
                    step: p.choice("repeat_scope", &[("prompt", false), ("step", true)])?,
                },
            }));
        }
        let period: usize = p.get("cycle_max_period")?;
        let st = stages(&p, "cycle")?;
        if st.on() && period >= 2 {
            out.push(Box::new(cycle::CycleCheck {
                s: cycle::CycleSettings {
                    same: same.clone(),
                    stages: st,
                    max_period: period,
                },
            }));
        }
        let st = stages(&p, "window")?;
        if st.on() {
            out.push(Box::new(window::WindowCheck {
                s: window::WindowSettings {
                    same: same.clone(),
                    stages: st,
                    size: p.get("window_size")?,
                },
            }));
        }
        let st = stages(&p, "stall")?;
        if st.on() {
            out.push(Box::new(stall::StallCheck {
                s: stall::StallSettings {
                    same: SameSettings {
                        same: Same::Result,
                        ..same.clone()
                    },
                    stages: st,
                },
            }));
        }
        let st = stages(&p, "error")?;
        if st.on() {
            out.push(Box::new(errors::ErrorCheck {
                s: errors::ErrorSettings {
                    chars: p.get("error_chars")?,
                    stages: st,
                },
            }));
        }
        let st = stages(&p, "chant")?;
        if st.on() {
            for (name, v) in [("chant_warn", st.warn), ("chant_stop", st.stop)] {
                if v == 1 {
                    return Err(Error::Config(format!(
                        "family `looptune`: parameter `{name}`: 1 is not a chanting threshold (0 = off, else 2 and more)"
                    )));
                }
            }
            let chunk: usize = p.get("chant_chunk")?;
            if st.warns() {
                out.push(Box::new(chant::ChantCheck::new(chunk, st.warn, true)));
            }
            if st.stop > 0 {
                out.push(Box::new(chant::ChantCheck::new(chunk, st.stop, false)));
            }
        }
        let chars: usize = p.get("long_chant_chars")?;
        let st = stages(&p, "long_chant")?;
        if chars > 0 && st.on() {
            out.push(Box::new(long_chant::LongChantCheck {
                s: long_chant::LongChantSettings { chars, stages: st },
            }));
        }
        Ok(out)
    }
}
