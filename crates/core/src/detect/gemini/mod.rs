//! The `gemini` family: google-gemini/gemini-cli
//! `packages/core/src/services/loopDetectionService.ts` in every historical
//! version, plus the OrionStarAI/DeepVCode fork's preview-model rules.
//!
//! The service has three independent checks (tool calls, content, LLM judge):
//! each canonical record reaches exactly one of them, and after a detection
//! (`clearDetection()`) each goes on with its own state. So a configuration's
//! detections are the merge of the three checks' detections, and a sweep runs
//! each distinct check once per session however many configurations share it
//! (equal settings: [`ToolSettings`], [`ContentSettings`], [`JudgeSettings`]).

pub(crate) mod content;
mod judge;
pub mod markdown;
pub mod prep;
mod repeats;
mod tool;

pub use prep::GeminiPrep;

use super::{
    Check, Detection, Family, ParamSet, ParamSpec, ParamValue, Params, Prepared, Profile, Stream,
    POLICY, POLICY_SPEC,
};
use crate::error::Result;
use content::{Algorithm, ContentSettings, Fences};
use judge::JudgeSettings;
use tool::{PreviewRule, ToolSettings};

const LDS: &str = "packages/core/src/services/loopDetectionService.ts";

/// The `gemini` family.
pub struct Gemini;

const INTENSIVE: &[&str] = &[
    "read_file",
    "read_many_files",
    "glob",
    "search_file_content",
    "ls",
];
const MONITORED: &[&str] = &[
    "read_file",
    "read_many_files",
    "glob",
    "search_file_content",
    "ls",
    "replace",
    "write_file",
    "delete_file",
    "shell",
];

impl Family for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn about(&self) -> &'static str {
        "Gemini CLI LoopDetectionService (google-gemini/gemini-cli, 2025-07 .. 5411f113ca 2026-08-21) and the DeepV Code fork's preview-model rules (OrionStarAI/DeepVCode)"
    }

    fn params(&self) -> Vec<ParamSpec> {
        #[rustfmt::skip]
        let mut v = vec![
            POLICY_SPEC,
            ParamSpec::int("tool_call_threshold", 1, 10_000, "calls", "repetitions of an identical call (or of a cycle) that make a loop", "loopDetectionService.ts TOOL_CALL_LOOP_THRESHOLD: 5 since 734da8b9d2 (2025-07-15); DeepVCode 10 since 28ee2f4"),
            ParamSpec::int("tool_cycle_max_len", 1, 100, "calls", "longest cycle of calls detected (1 = only identical consecutive calls); history kept = this x threshold", "loopDetectionService.ts checkToolCallLoop: cycles 1..5 since acae7124bd (2026-07-17); 1 before"),
            ParamSpec::bool("tool_name_trim", "trim the tool name (generic_tool when empty) before keying", "core/turn.ts since 1238dcfe91 (2026-05-08)"),
            ParamSpec::choice("preview_rule", &["off", "name_count", "monitored_count", "consecutive"], "DeepV fork: per-name counting for preview models (name_count 5873417..041036b, monitored_count cc9ce07, consecutive 958164d..HEAD)", "OrionStarAI/DeepVCode loopDetectionService.ts"),
            ParamSpec::bool("preview_strict", "apply the preview rule whatever the session's model (else only when it matches /preview/i)", "looptune (DeepVCode isPreviewModel)"),
            ParamSpec::int("preview_intensive_tool_threshold", 1, 10_000, "calls", "name_count: calls of one intensive tool per prompt that make a loop", "DeepVCode PREVIEW_INTENSIVE_TOOL_THRESHOLD: 4 at 5873417 (2025-12-11), 7, 25"),
            ParamSpec::int("preview_tool_name_threshold", 1, 10_000, "calls", "name_count: calls of one other tool per prompt that make a loop", "DeepVCode PREVIEW_TOOL_NAME_LOOP_THRESHOLD: 5 at 5873417, 10, 50"),
            ParamSpec::list("preview_intensive_tools", "names", "name_count: the intensive tools", "DeepVCode PREVIEW_INTENSIVE_TOOLS"),
            ParamSpec::list("preview_monitored_tools", "names", "monitored_count / consecutive: the names counted", "DeepVCode PREVIEW_MONITORED_TOOLS (shell added at 958164d)"),
            ParamSpec::int("preview_monitored_threshold", 1, 10_000, "calls", "monitored_count / consecutive: count that makes a loop", "DeepVCode PREVIEW_TOOL_LOOP_THRESHOLD: 12 (cc9ce07), 30 (7a1ef33), 32 (0f5d2e2)"),
            ParamSpec::choice("content_check", &["hash", "deepv", "off"], "content algorithm: upstream sliding-window hash, the DeepV fork's filtered variant, or none", LDS),
            ParamSpec::int("content_chunk_size", 1, 100_000, "UTF-16 units", "window size", "CONTENT_CHUNK_SIZE: 50 since d76cedb68f (2025-07-25); DeepVCode 500"),
            ParamSpec::int("content_loop_threshold", 2, 10_000, "windows", "occurrences of one window that make a loop", "CONTENT_LOOP_THRESHOLD: 10; DeepVCode 20"),
            ParamSpec::int("content_max_history", 1, 100_000_000, "UTF-16 units", "history kept for the content check", "MAX_HISTORY_LENGTH: 1000, 5000 since f0c3c81e94 (2025-11-04); DeepVCode 10000"),
            ParamSpec::float("content_max_distance_factor", 0.0, 1_000_000.0, "x chunk size", "largest average gap between the last occurrences, as a multiple of the window size", "isLoopDetectedForChunk: 1.5, 5 since f0c3c81e94 (2025-11-04)"),
            ParamSpec::bool("content_period_check", "reject when the texts between occurrences have more than threshold/2 distinct forms", "9c285eaf15 (2026-02-13)"),
            ParamSpec::choice("content_code_fences", &["off", "skip_inside", "skip_inside_or_opening"], "code-fence rule: reset on fences, skip chunks inside a block (before; or before or after the toggle)", "8985e489a5 (2025-07-30), 26fe587b44 (2025-08-11)"),
            ParamSpec::bool("content_markdown_resets", "reset on table, list item, heading and blockquote chunks", "e8815ba43c (2025-08-08)"),
            ParamSpec::bool("content_dividers", "reset on and skip divider chunks", "da73f13d02 (2025-08-23)"),
            ParamSpec::float("content_table_distance_factor", 0.0, 1_000_000.0, "x chunk size", "deepv: largest average gap for table-like windows", "DeepVCode isTableContent (6)"),
            ParamSpec::float("content_common_distance_factor", 0.0, 1_000_000.0, "x chunk size", "deepv: largest average gap for common-pattern windows", "DeepVCode isCommonPattern (3)"),
        ];
        v.extend(judge_params());
        v
    }

    fn profiles(&self) -> Vec<Profile> {
        vec![
            Profile {
                name: "gemini-latest",
                about: "gemini-cli acae7124bd (2026-07-17) .. HEAD 5411f113ca (2026-08-21): tool cycles 1..5, two strikes",
                values: vec![
                    (POLICY, ParamValue::word("warn:1")),
                    ("tool_call_threshold", ParamValue::Int(5)),
                    ("tool_cycle_max_len", ParamValue::Int(5)),
                    ("tool_name_trim", ParamValue::Bool(true)),
                    ("preview_rule", ParamValue::word("off")),
                    ("preview_strict", ParamValue::Bool(false)),
                    ("preview_intensive_tool_threshold", ParamValue::Int(4)),
                    ("preview_tool_name_threshold", ParamValue::Int(5)),
                    ("preview_intensive_tools", ParamValue::words(INTENSIVE)),
                    ("preview_monitored_tools", ParamValue::words(MONITORED)),
                    ("preview_monitored_threshold", ParamValue::Int(32)),
                    ("content_check", ParamValue::word("hash")),
                    ("content_chunk_size", ParamValue::Int(50)),
                    ("content_loop_threshold", ParamValue::Int(10)),
                    ("content_max_history", ParamValue::Int(5000)),
                    ("content_max_distance_factor", ParamValue::Float(5.0)),
                    ("content_period_check", ParamValue::Bool(true)),
                    ("content_code_fences", ParamValue::word("skip_inside_or_opening")),
                    ("content_markdown_resets", ParamValue::Bool(true)),
                    ("content_dividers", ParamValue::Bool(true)),
                    ("content_table_distance_factor", ParamValue::Float(6.0)),
                    ("content_common_distance_factor", ParamValue::Float(3.0)),
                ]
                .into_iter()
                .chain(judge_latest())
                .collect(),
            },
            Profile {
                name: "gemini-2026-03",
                about: "gemini-cli e200b40408 (2026-03-04 .. 07-16): identical consecutive calls, period rule, two strikes",
                values: vec![("tool_cycle_max_len", ParamValue::Int(1)), ("tool_name_trim", ParamValue::Bool(false))],
            },
            Profile {
                name: "gemini-2026-02",
                about: "gemini-cli 9c285eaf15 (2026-02-13 .. 03-01): period rule, judge interval 3, stop at the first detection",
                values: vec![
                    (POLICY, ParamValue::word("stop")),
                    ("tool_cycle_max_len", ParamValue::Int(1)),
                    ("tool_name_trim", ParamValue::Bool(false)),
                    ("llm_check_interval", ParamValue::Int(3)),
                ],
            },
            Profile {
                name: "gemini-2025-11",
                about: "gemini-cli 408b885689 (2025-11-12 .. 2026-02-12): history 5000, gap 5x, two-stage judge",
                values: vec![
                    (POLICY, ParamValue::word("stop")),
                    ("tool_cycle_max_len", ParamValue::Int(1)),
                    ("tool_name_trim", ParamValue::Bool(false)),
                    ("content_period_check", ParamValue::Bool(false)),
                    ("llm_check_interval", ParamValue::Int(3)),
                ],
            },
            Profile {
                name: "gemini-2025-08",
                about: "gemini-cli da73f13d02 (2025-08-23 .. 11-03): markdown resets, fences, dividers; history 1000, gap 1.5x; judge c > 0.9",
                values: vec![
                    (POLICY, ParamValue::word("stop")),
                    ("tool_cycle_max_len", ParamValue::Int(1)),
                    ("tool_name_trim", ParamValue::Bool(false)),
                    ("content_period_check", ParamValue::Bool(false)),
                    ("content_max_history", ParamValue::Int(1000)),
                    ("content_max_distance_factor", ParamValue::Float(1.5)),
                    ("llm_check_interval", ParamValue::Int(3)),
                    ("llm_confidence_strict", ParamValue::Bool(true)),
                    ("llm_two_stage", ParamValue::Bool(false)),
                ],
            },
            Profile {
                name: "gemini-2025-07",
                about: "gemini-cli d76cedb68f (2025-07-25 .. 07-29): first hash-window build, no markdown rules",
                values: vec![
                    (POLICY, ParamValue::word("stop")),
                    ("tool_cycle_max_len", ParamValue::Int(1)),
                    ("tool_name_trim", ParamValue::Bool(false)),
                    ("content_period_check", ParamValue::Bool(false)),
                    ("content_max_history", ParamValue::Int(1000)),
                    ("content_max_distance_factor", ParamValue::Float(1.5)),
                    ("content_code_fences", ParamValue::word("off")),
                    ("content_markdown_resets", ParamValue::Bool(false)),
                    ("content_dividers", ParamValue::Bool(false)),
                    ("llm_check_interval", ParamValue::Int(3)),
                    ("llm_confidence_strict", ParamValue::Bool(true)),
                    ("llm_two_stage", ParamValue::Bool(false)),
                ],
            },
            Profile {
                name: "deepv-preview",
                about: "OrionStarAI/DeepVCode 5873417 (2025-12-11): exact calls 10, content 20 x 500-unit windows, and for /preview/i models 4 calls of a read-heavy tool or 5 of any other per prompt",
                values: deepv(vec![("preview_rule", ParamValue::word("name_count"))]),
            },
            Profile {
                name: "deepv-latest",
                about: "OrionStarAI/DeepVCode 0f5d2e2 (2026-01-11): preview rule counts consecutive calls of monitored tools, threshold 32",
                values: deepv(vec![("preview_rule", ParamValue::word("consecutive"))]),
            },
        ]
    }

    fn checks(&self, ps: &ParamSet) -> Result<Vec<Box<dyn Check>>> {
        let p = Params::new(self.name(), ps);
        let mut out: Vec<Box<dyn Check>> = Vec::new();
        // The judge comes first: a record that starts a turn reaches
        // turnStarted() before addAndCheck(), so on a tie the judge fires first.
        out.extend(judge_check(&p)?);
        out.push(Box::new(ToolCheck {
            s: tool_settings(&p)?,
        }));
        let algorithm = p.choice(
            "content_check",
            &[
                ("hash", Some(Algorithm::Hash)),
                ("deepv", Some(Algorithm::DeepV)),
                ("off", None),
            ],
        )?;
        if let Some(algorithm) = algorithm {
            out.push(Box::new(ContentCheck {
                s: content_settings(&p, algorithm)?,
            }));
        }
        Ok(out)
    }
}

fn tool_settings(p: &Params) -> Result<ToolSettings> {
    Ok(ToolSettings {
        threshold: p.get("tool_call_threshold")?,
        max_len: p.get("tool_cycle_max_len")?,
        trim: p.get("tool_name_trim")?,
        preview: p.choice(
            "preview_rule",
            &[
                ("off", PreviewRule::Off),
                ("name_count", PreviewRule::NameCount),
                ("monitored_count", PreviewRule::MonitoredCount),
                ("consecutive", PreviewRule::Consecutive),
            ],
        )?,
        preview_strict: p.get("preview_strict")?,
        intensive_threshold: p.get("preview_intensive_tool_threshold")?,
        name_threshold: p.get("preview_tool_name_threshold")?,
        intensive: p.get("preview_intensive_tools")?,
        monitored: p.get("preview_monitored_tools")?,
        monitored_threshold: p.get("preview_monitored_threshold")?,
    })
}

fn content_settings(p: &Params, algorithm: Algorithm) -> Result<ContentSettings> {
    Ok(ContentSettings {
        algorithm,
        chunk: p.get("content_chunk_size")?,
        threshold: p.get("content_loop_threshold")?,
        max_history: p.get("content_max_history")?,
        distance_factor: p.get("content_max_distance_factor")?,
        period_check: p.get("content_period_check")?,
        fences: p.choice(
            "content_code_fences",
            &[
                ("off", Fences::Off),
                ("skip_inside", Fences::SkipInside),
                ("skip_inside_or_opening", Fences::SkipInsideOrOpening),
            ],
        )?,
        markdown_resets: p.get("content_markdown_resets")?,
        dividers: p.get("content_dividers")?,
        table_factor: p.get("content_table_distance_factor")?,
        common_factor: p.get("content_common_distance_factor")?,
    })
}

/// The LLM judge's parameters, shared with the `looptune` family (which runs
/// this check as it is).
#[rustfmt::skip]
pub(crate) fn judge_params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::bool("llm_check", "run the LLM judge schedule (verdicts come from recorded judge records)", "9dadf22958 (2025-07-18)"),
        ParamSpec::int("llm_check_after_turns", 1, 1_000_000, "turns", "prompt turn of the first judge check", "LLM_CHECK_AFTER_TURNS: 30 (40 on 2026-03-02..03)"),
        ParamSpec::int("llm_check_interval", 1, 1_000_000, "turns", "interval after a reset", "DEFAULT_LLM_CHECK_INTERVAL: 3, 10 since 7c9fceba7f (2026-03-02)"),
        ParamSpec::int("llm_check_min_interval", 0, 1_000_000, "turns", "interval at confidence 1", "MIN_LLM_CHECK_INTERVAL: 5"),
        ParamSpec::int("llm_check_max_interval", 0, 1_000_000, "turns", "interval at confidence 0", "MAX_LLM_CHECK_INTERVAL: 15"),
        ParamSpec::float("llm_confidence_threshold", 0.0, 1.0, "", "confidence that makes a loop", "LLM_CONFIDENCE_THRESHOLD: 0.9"),
        ParamSpec::bool("llm_confidence_strict", "compare with > (2025 single-stage builds) instead of >=", "408b885689 (2025-11-12) made it >="),
        ParamSpec::bool("llm_two_stage", "flash then pro; both must reach the threshold (a turn's second judge record answers stage 2, else the first serves both)", "408b885689 (2025-11-12)"),
    ]
}

/// gemini-latest's judge values (`looptune-default` and `looptune-as-gemini`
/// take them too).
pub(crate) fn judge_latest() -> Vec<(&'static str, ParamValue)> {
    vec![
        ("llm_check", ParamValue::Bool(true)),
        ("llm_check_after_turns", ParamValue::Int(30)),
        ("llm_check_interval", ParamValue::Int(10)),
        ("llm_check_min_interval", ParamValue::Int(5)),
        ("llm_check_max_interval", ParamValue::Int(15)),
        ("llm_confidence_threshold", ParamValue::Float(0.9)),
        ("llm_confidence_strict", ParamValue::Bool(false)),
        ("llm_two_stage", ParamValue::Bool(true)),
    ]
}

/// The judge check of a configuration, when its `llm_check` is on.
pub(crate) fn judge_check(p: &Params) -> Result<Option<Box<dyn Check>>> {
    Ok(if p.get("llm_check")? {
        Some(Box::new(JudgeCheck {
            s: judge_settings(p)?,
        }))
    } else {
        None
    })
}

fn judge_settings(p: &Params) -> Result<JudgeSettings> {
    Ok(JudgeSettings {
        after_turns: p.get("llm_check_after_turns")?,
        interval: p.get("llm_check_interval")?,
        min_interval: p.get("llm_check_min_interval")?,
        max_interval: p.get("llm_check_max_interval")?,
        threshold: p.get("llm_confidence_threshold")?,
        strict: p.get("llm_confidence_strict")?,
        two_stage: p.get("llm_two_stage")?,
    })
}

/// The DeepV fork's values on top of the family defaults.
fn deepv(mut extra: Vec<(&'static str, ParamValue)>) -> Vec<(&'static str, ParamValue)> {
    let mut v = vec![
        (POLICY, ParamValue::word("stop")),
        ("tool_call_threshold", ParamValue::Int(10)),
        ("tool_cycle_max_len", ParamValue::Int(1)),
        ("tool_name_trim", ParamValue::Bool(false)),
        ("content_check", ParamValue::word("deepv")),
        ("content_chunk_size", ParamValue::Int(500)),
        ("content_loop_threshold", ParamValue::Int(20)),
        ("content_max_history", ParamValue::Int(10_000)),
        ("content_max_distance_factor", ParamValue::Float(1.5)),
        ("content_period_check", ParamValue::Bool(false)),
        ("content_code_fences", ParamValue::word("off")),
        ("content_markdown_resets", ParamValue::Bool(false)),
        ("content_dividers", ParamValue::Bool(false)),
        ("llm_check_interval", ParamValue::Int(3)),
        ("llm_confidence_strict", ParamValue::Bool(true)),
        ("llm_two_stage", ParamValue::Bool(false)),
    ];
    v.append(&mut extra);
    v
}

pub(crate) fn prep(s: &Prepared) -> &GeminiPrep {
    s.gemini.get_or_init(|| GeminiPrep::new(&s.session))
}

struct ToolCheck {
    s: ToolSettings,
}
impl Check for ToolCheck {
    fn name(&self) -> &'static str {
        "gemini.tool"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }
    fn limit_per_prompt(&self) -> bool {
        true
    }
    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        tool::run(&self.s, prep(session), limit)
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(Box::new(tool::ToolStream::new(self.s.clone())))
    }
}

struct ContentCheck {
    s: ContentSettings,
}
impl Check for ContentCheck {
    fn name(&self) -> &'static str {
        "gemini.content"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }
    fn limit_per_prompt(&self) -> bool {
        true
    }
    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        content::run(&self.s, prep(session), limit)
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(Box::new(content::ContentStream::new(self.s.clone())))
    }
    fn batch_key(&self) -> Option<String> {
        Some(format!("gemini.content;{}", content::stream_key(&self.s)))
    }
    fn run_batch(
        &self,
        batch: &[&dyn Check],
        session: &Prepared,
        limit: Option<usize>,
    ) -> Vec<Vec<Detection>> {
        let settings: Option<Vec<&ContentSettings>> = batch
            .iter()
            .map(|c| {
                c.as_any()
                    .and_then(|a| a.downcast_ref::<ContentCheck>())
                    .map(|c| &c.s)
            })
            .collect();
        match settings {
            Some(vs) => content::run_many(&vs, prep(session), limit),
            None => batch.iter().map(|c| c.run(session, limit)).collect(),
        }
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

struct JudgeCheck {
    s: JudgeSettings,
}
impl Check for JudgeCheck {
    fn name(&self) -> &'static str {
        "gemini.judge"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }
    fn limit_per_prompt(&self) -> bool {
        true
    }
    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        judge::run(&self.s, &session.session, limit).0
    }
    fn judge_due(&self, session: &Prepared) -> Option<Vec<(u32, bool)>> {
        Some(judge::run(&self.s, &session.session, None).1)
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(Box::new(judge::JudgeStream::new(self.s.clone())))
    }
}
