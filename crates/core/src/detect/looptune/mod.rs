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
//!   of `L` characters or more seen `M` times;
//! - issue #45's rules for the kinds those miss: [`target`] (one tool on one
//!   file or URL `T` times in a row, its content new or not), [`ladder`] (one
//!   tool failing `N` times in a row, any arguments and error text),
//!   [`same_edit`] (an edit made again), [`outcome`] (the same result after
//!   every change), [`opening`] (turns opening with the same words).
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
mod ladder;
mod long_chant;
mod opening;
mod outcome;
mod repeat;
mod same_edit;
mod stall;
mod target;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_missing_kinds;
#[cfg(test)]
mod tests_stream;
mod window;

use crate::detect::{
    Check, Detection, Family, ParamSet, ParamSpec, ParamValue, Params, Profile, Stream, POLICY,
    POLICY_SPEC,
};
use crate::error::{Error, Result};
use crate::event::Session;
use actions::{Same, SameSettings};

const SRC: &str = "looptune (issue #32): designed from ../shared/corpus and users' reports";
const SRC45: &str = "looptune (issue #45)";

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
        turn: s.event(at).turn,
        prompt,
        strike: 0,
        detail,
    }
}

/// A rule that reads records (not actions or calls): its state between
/// records, the same over a whole session ([`run_records`]) and fed one
/// record at a time ([`Records`]).
pub(crate) trait RecordRule: Send + 'static {
    /// Read record `i` of `s` (which holds records `0..=i` at least).
    fn record(&mut self, s: &Session, i: usize, out: &mut Vec<Detection>);
}

/// `rule` over every record of `s`.
pub(crate) fn run_records(mut rule: impl RecordRule, s: &Session) -> Vec<Detection> {
    let mut out = Vec::new();
    for i in 0..s.events.len() {
        rule.record(s, i, &mut out);
    }
    out
}

/// A [`RecordRule`] as a [`Stream`].
pub(crate) struct Records<R>(pub R);

impl<R: RecordRule> Stream for Records<R> {
    fn keeps_from(&self) -> usize {
        usize::MAX // reads each record once, when fed
    }
    fn feed(&mut self, s: &Session, i: usize, out: &mut Vec<Detection>) {
        self.0.record(s, i, out);
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
    stage_specs_from(names, unit, warn, stop, SRC)
}

fn stage_specs_from(
    names: (&'static str, &'static str),
    unit: &'static str,
    warn: &'static str,
    stop: &'static str,
    src: &'static str,
) -> [ParamSpec; 2] {
    [
        ParamSpec::int(names.0, 0, 100_000, unit, warn, src),
        ParamSpec::int(names.1, 0, 100_000, unit, stop, src),
    ]
}

/// A list parameter parsed by `parse`, its bad entry named.
fn entries<T>(
    p: &Params,
    name: &str,
    parse: fn(&[String]) -> std::result::Result<T, actions::BadEntry>,
    form: &str,
) -> Result<T> {
    let v: Vec<String> = p.get(name)?;
    parse(&v).map_err(|bad| {
        Error::Config(format!(
            "family `looptune`: parameter `{name}`: {bad} is not {form}"
        ))
    })
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
        v.extend(issue45_params());
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
                    ("target_keys", ParamValue::words(actions::TARGET_KEYS)),
                    ("change_tools", ParamValue::words(actions::CHANGE_TOOLS)),
                    ("target_warn", off.clone()),
                    ("target_stop", off.clone()),
                    ("ladder_warn", off.clone()),
                    ("ladder_stop", off.clone()),
                    ("same_edit_warn", off.clone()),
                    ("same_edit_stop", off.clone()),
                    ("outcome_chars", ParamValue::Int(200)),
                    ("outcome_warn", off.clone()),
                    ("outcome_stop", off.clone()),
                    ("opening_chars", ParamValue::Int(60)),
                    ("opening_warn", off.clone()),
                    ("opening_stop", off.clone()),
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
            // A profile of its own, so looptune-wide replays as it did.
            Profile {
                name: "looptune-kinds",
                about: "looptune-default plus the rules for the loops no other rule sees (issue #45: the same target, a failure ladder, a repeated edit, the same outcome, repeated turn openings), each at a middle value of its grid axis: a starting point for --set, not a recommendation",
                values: vec![
                    ("target_stop", ParamValue::Int(4)),
                    ("ladder_stop", ParamValue::Int(8)),
                    ("same_edit_stop", ParamValue::Int(3)),
                    ("outcome_stop", ParamValue::Int(6)),
                    ("opening_stop", ParamValue::Int(3)),
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
        let repeat = st.on().then(|| -> Result<_> {
            Ok(repeat::RepeatSettings {
                same: same.clone(),
                stages: st,
                step: p.choice("repeat_scope", &[("prompt", false), ("step", true)])?,
            })
        });
        let repeat = repeat.transpose()?;
        let period: usize = p.get("cycle_max_period")?;
        let st = stages(&p, "cycle")?;
        let cycle = (st.on() && period >= 2).then(|| cycle::CycleSettings {
            same: same.clone(),
            stages: st,
            max_period: period,
        });
        let st = stages(&p, "window")?;
        let window = match st.on() {
            true => Some(window::WindowSettings {
                same: same.clone(),
                stages: st,
                size: p.get("window_size")?,
            }),
            false => None,
        };
        let st = stages(&p, "stall")?;
        let stall = st.on().then(|| stall::StallSettings {
            same: SameSettings {
                same: Same::Result,
                ..same.clone()
            },
            stages: st,
        });
        // One live stream for the action rules (see `actions::Live`), in
        // the order of their checks.
        let group: Vec<Box<dyn actions::ActSpec>> = [
            repeat
                .clone()
                .map(|s| Box::new(s) as Box<dyn actions::ActSpec>),
            cycle.clone().map(|s| Box::new(s) as _),
            window.clone().map(|s| Box::new(s) as _),
            stall.clone().map(|s| Box::new(s) as _),
        ]
        .into_iter()
        .flatten()
        .collect();
        let mut live = actions::lives(group);
        if let Some(s) = repeat {
            out.push(Box::new(repeat::RepeatCheck { s, live: live() }));
        }
        if let Some(s) = cycle {
            out.push(Box::new(cycle::CycleCheck { s, live: live() }));
        }
        if let Some(s) = window {
            out.push(Box::new(window::WindowCheck { s, live: live() }));
        }
        if let Some(s) = stall {
            out.push(Box::new(stall::StallCheck { s, live: live() }));
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
        issue45_checks(&p, &mut out)?;
        Ok(out)
    }
}

/// The parameters of issue #45's rules.
fn issue45_params() -> Vec<ParamSpec> {
    let mut v = vec![
        ParamSpec::list(
            "target_keys",
            "TOOL:KEY",
            "what a call acts on (same target, same outcome): per tool, the argument keys naming the file, URL or the like, the first present one winning; a Codex patch gives the files it touches",
            SRC45,
        ),
        ParamSpec::list(
            "change_tools",
            "TOOL, TOOL:SUB",
            "calls that change something (failure ladder, repeated edit, same outcome): a tool, a tool with its `command` argument (str_replace_editor:create), or TOOL:writes for shell commands that write (sed -i, redirects, tee, patch, git checkout, mv, rm ...)",
            SRC45,
        ),
    ];
    v.extend(stage_specs_from(
        ("target_warn", "target_stop"),
        "calls",
        "same target: calls of one tool on one target in a row that warn",
        "same target: calls of one tool on one target in a row that stop (0 = off)",
        SRC45,
    ));
    v.extend(stage_specs_from(
        ("ladder_warn", "ladder_stop"),
        "results",
        "failure ladder: failures of one tool in a row, any arguments and error, that warn",
        "failure ladder: failures of one tool in a row (reset by its success or any change) that stop (0 = off)",
        SRC45,
    ));
    v.extend(stage_specs_from(
        ("same_edit_warn", "same_edit_stop"),
        "edits",
        "repeated edit: times one identical change was made in the session that warn (2 = its first repeat)",
        "repeated edit: times one identical change was made in the session that stop (0 = off)",
        SRC45,
    ));
    v.push(ParamSpec::int(
        "outcome_chars",
        0,
        1_000_000,
        "chars",
        "same outcome: leading characters of a result compared, normalised (0 = the whole result)",
        SRC45,
    ));
    v.extend(stage_specs_from(
        ("outcome_warn", "outcome_stop"),
        "results",
        "same outcome: times one action got the same result, a change between each, that warn",
        "same outcome: times one action got the same result, a change between each, that stop (0 = off)",
        SRC45,
    ));
    v.push(ParamSpec::int(
        "opening_chars",
        1,
        100_000,
        "chars",
        "turn openings: leading characters of a turn's text (normalised) compared; shorter texts have none",
        SRC45,
    ));
    v.extend(stage_specs_from(
        ("opening_warn", "opening_stop"),
        "turns",
        "turn openings: turns of one prompt with one opening that warn",
        "turn openings: turns of one prompt with one opening that stop (0 = off)",
        SRC45,
    ));
    v
}

/// The checks of issue #45's rules that are on.
fn issue45_checks(p: &Params, out: &mut Vec<Box<dyn Check>>) -> Result<()> {
    let target = stages(p, "target")?;
    let ladder = stages(p, "ladder")?;
    let same_edit = stages(p, "same_edit")?;
    let outcome = stages(p, "outcome")?;
    let opening = stages(p, "opening")?;
    // Parsed whatever is on, so a bad entry is an error before any work.
    let keys = entries(p, "target_keys", actions::TargetKeys::parse, "TOOL:KEY")?;
    let changes = entries(
        p,
        "change_tools",
        actions::ChangeTools::parse,
        "TOOL or TOOL:SUB",
    )?;
    let target = target.on().then(|| target::TargetSettings {
        keys: keys.clone(),
        stages: target,
    });
    let ladder = ladder.on().then(|| ladder::LadderSettings {
        changes: changes.clone(),
        stages: ladder,
    });
    let same_edit = same_edit.on().then(|| same_edit::SameEditSettings {
        changes: changes.clone(),
        stages: same_edit,
    });
    let outcome = match outcome.on() {
        true => Some(outcome::OutcomeSettings {
            keys,
            changes,
            chars: p.get("outcome_chars")?,
            stages: outcome,
        }),
        false => None,
    };
    // One live stream for the call rules (see `actions::Live`), in the
    // order of their checks.
    let group: Vec<Box<dyn actions::CallSpec>> = [
        target
            .clone()
            .map(|s| Box::new(s) as Box<dyn actions::CallSpec>),
        ladder.clone().map(|s| Box::new(s) as _),
        same_edit.clone().map(|s| Box::new(s) as _),
        outcome.clone().map(|s| Box::new(s) as _),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut live = actions::lives(group);
    if let Some(s) = target {
        out.push(Box::new(target::TargetCheck { s, live: live() }));
    }
    if let Some(s) = ladder {
        out.push(Box::new(ladder::LadderCheck { s, live: live() }));
    }
    if let Some(s) = same_edit {
        out.push(Box::new(same_edit::SameEditCheck { s, live: live() }));
    }
    if let Some(s) = outcome {
        out.push(Box::new(outcome::OutcomeCheck { s, live: live() }));
    }
    if opening.on() {
        out.push(Box::new(opening::OpeningCheck {
            s: opening::OpeningSettings {
                chars: p.get("opening_chars")?,
                stages: opening,
            },
        }));
    }
    Ok(())
}
