//! The `gemini` family: google-gemini/gemini-cli
//! `packages/core/src/services/loopDetectionService.ts` in every historical
//! version, plus the OrionStarAI/DeepVCode fork's preview-model rules.
//!
//! The service has three independent checks (tool calls, content, LLM judge):
//! each canonical record reaches exactly one of them, and after a detection
//! (`clearDetection()`) each goes on with its own state. So a configuration's
//! detections are the merge of the three checks' detections, and a sweep runs
//! each distinct check once per session however many configurations share it.

mod content;
mod judge;
pub mod markdown;
pub mod prep;
mod repeats;
mod tool;

pub use prep::GeminiPrep;

use super::{
    Check, Detection, Family, ParamKind, ParamSet, ParamSpec, ParamValue, Prepared, Profile,
    POLICY, POLICY_SPEC,
};
use crate::error::Result;
use content::{Algorithm, ContentSettings, Fences};
use judge::JudgeSettings;
use tool::{PreviewRule, ToolSettings};

const LDS: &str = "packages/core/src/services/loopDetectionService.ts";

/// The `gemini` family.
pub struct Gemini;

const TOOL_PARAMS: &[&str] = &[
    "tool_call_threshold",
    "tool_cycle_max_len",
    "tool_name_trim",
    "preview_rule",
    "preview_strict",
    "preview_intensive_tool_threshold",
    "preview_tool_name_threshold",
    "preview_intensive_tools",
    "preview_monitored_tools",
    "preview_monitored_threshold",
];
const CONTENT_PARAMS: &[&str] = &[
    "content_check",
    "content_chunk_size",
    "content_loop_threshold",
    "content_max_history",
    "content_max_distance_factor",
    "content_period_check",
    "content_code_fences",
    "content_markdown_resets",
    "content_dividers",
    "content_table_distance_factor",
    "content_common_distance_factor",
];
const JUDGE_PARAMS: &[&str] = &[
    "llm_check",
    "llm_check_after_turns",
    "llm_check_interval",
    "llm_check_min_interval",
    "llm_check_max_interval",
    "llm_confidence_threshold",
    "llm_confidence_strict",
    "llm_two_stage",
];

fn int(min: i64, max: i64) -> ParamKind {
    ParamKind::Int { min, max }
}
fn float(min: f64, max: f64) -> ParamKind {
    ParamKind::Float { min, max }
}
fn p(
    name: &'static str,
    kind: ParamKind,
    unit: &'static str,
    doc: &'static str,
    source: &'static str,
) -> ParamSpec {
    ParamSpec {
        name,
        kind,
        unit,
        doc,
        source,
    }
}
fn i(v: i64) -> ParamValue {
    ParamValue::Int(v)
}
fn f(v: f64) -> ParamValue {
    ParamValue::Float(v)
}
fn b(v: bool) -> ParamValue {
    ParamValue::Bool(v)
}
fn s(v: &str) -> ParamValue {
    ParamValue::Str(v.to_string())
}
fn l(v: &[&str]) -> ParamValue {
    ParamValue::List(v.iter().map(|x| x.to_string()).collect())
}

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
        vec![
            POLICY_SPEC,
            p("tool_call_threshold", int(1, 10_000), "calls", "repetitions of an identical call (or of a cycle) that make a loop", "loopDetectionService.ts TOOL_CALL_LOOP_THRESHOLD: 5 since 734da8b9d2 (2025-07-15); DeepVCode 10 since 28ee2f4"),
            p("tool_cycle_max_len", int(1, 100), "calls", "longest cycle of calls detected (1 = only identical consecutive calls); history kept = this x threshold", "loopDetectionService.ts checkToolCallLoop: cycles 1..5 since acae7124bd (2026-07-17); 1 before"),
            p("tool_name_trim", ParamKind::Bool, "", "trim the tool name (generic_tool when empty) before keying", "core/turn.ts since 1238dcfe91 (2026-05-08)"),
            p("preview_rule", ParamKind::Choice(&["off", "name_count", "monitored_count", "consecutive"]), "", "DeepV fork: per-name counting for preview models (name_count 5873417..041036b, monitored_count cc9ce07, consecutive 958164d..HEAD)", "OrionStarAI/DeepVCode loopDetectionService.ts"),
            p("preview_strict", ParamKind::Bool, "", "apply the preview rule whatever the session's model (else only when it matches /preview/i)", "looptune (DeepVCode isPreviewModel)"),
            p("preview_intensive_tool_threshold", int(1, 10_000), "calls", "name_count: calls of one intensive tool per prompt that make a loop", "DeepVCode PREVIEW_INTENSIVE_TOOL_THRESHOLD: 4 at 5873417 (2025-12-11), 7, 25"),
            p("preview_tool_name_threshold", int(1, 10_000), "calls", "name_count: calls of one other tool per prompt that make a loop", "DeepVCode PREVIEW_TOOL_NAME_LOOP_THRESHOLD: 5 at 5873417, 10, 50"),
            p("preview_intensive_tools", ParamKind::List, "names", "name_count: the intensive tools", "DeepVCode PREVIEW_INTENSIVE_TOOLS"),
            p("preview_monitored_tools", ParamKind::List, "names", "monitored_count / consecutive: the names counted", "DeepVCode PREVIEW_MONITORED_TOOLS (shell added at 958164d)"),
            p("preview_monitored_threshold", int(1, 10_000), "calls", "monitored_count / consecutive: count that makes a loop", "DeepVCode PREVIEW_TOOL_LOOP_THRESHOLD: 12 (cc9ce07), 30 (7a1ef33), 32 (0f5d2e2)"),
            p("content_check", ParamKind::Choice(&["hash", "deepv", "off"]), "", "content algorithm: upstream sliding-window hash, the DeepV fork's filtered variant, or none", LDS),
            p("content_chunk_size", int(1, 100_000), "UTF-16 units", "window size", "CONTENT_CHUNK_SIZE: 50 since d76cedb68f (2025-07-25); DeepVCode 500"),
            p("content_loop_threshold", int(2, 10_000), "windows", "occurrences of one window that make a loop", "CONTENT_LOOP_THRESHOLD: 10; DeepVCode 20"),
            p("content_max_history", int(1, 100_000_000), "UTF-16 units", "history kept for the content check", "MAX_HISTORY_LENGTH: 1000, 5000 since f0c3c81e94 (2025-11-04); DeepVCode 10000"),
            p("content_max_distance_factor", float(0.0, 1_000_000.0), "x chunk size", "largest average gap between the last occurrences, as a multiple of the window size", "isLoopDetectedForChunk: 1.5, 5 since f0c3c81e94 (2025-11-04)"),
            p("content_period_check", ParamKind::Bool, "", "reject when the texts between occurrences have more than threshold/2 distinct forms", "9c285eaf15 (2026-02-13)"),
            p("content_code_fences", ParamKind::Choice(&["off", "skip_inside", "skip_inside_or_opening"]), "", "code-fence rule: reset on fences, skip chunks inside a block (before; or before or after the toggle)", "8985e489a5 (2025-07-30), 26fe587b44 (2025-08-11)"),
            p("content_markdown_resets", ParamKind::Bool, "", "reset on table, list item, heading and blockquote chunks", "e8815ba43c (2025-08-08)"),
            p("content_dividers", ParamKind::Bool, "", "reset on and skip divider chunks", "da73f13d02 (2025-08-23)"),
            p("content_table_distance_factor", float(0.0, 1_000_000.0), "x chunk size", "deepv: largest average gap for table-like windows", "DeepVCode isTableContent (6)"),
            p("content_common_distance_factor", float(0.0, 1_000_000.0), "x chunk size", "deepv: largest average gap for common-pattern windows", "DeepVCode isCommonPattern (3)"),
            p("llm_check", ParamKind::Bool, "", "run the LLM judge schedule (verdicts come from recorded judge records)", "9dadf22958 (2025-07-18)"),
            p("llm_check_after_turns", int(1, 1_000_000), "turns", "prompt turn of the first judge check", "LLM_CHECK_AFTER_TURNS: 30 (40 on 2026-03-02..03)"),
            p("llm_check_interval", int(1, 1_000_000), "turns", "interval after a reset", "DEFAULT_LLM_CHECK_INTERVAL: 3, 10 since 7c9fceba7f (2026-03-02)"),
            p("llm_check_min_interval", int(0, 1_000_000), "turns", "interval at confidence 1", "MIN_LLM_CHECK_INTERVAL: 5"),
            p("llm_check_max_interval", int(0, 1_000_000), "turns", "interval at confidence 0", "MAX_LLM_CHECK_INTERVAL: 15"),
            p("llm_confidence_threshold", float(0.0, 1.0), "", "confidence that makes a loop", "LLM_CONFIDENCE_THRESHOLD: 0.9"),
            p("llm_confidence_strict", ParamKind::Bool, "", "compare with > (2025 single-stage builds) instead of >=", "408b885689 (2025-11-12) made it >="),
            p("llm_two_stage", ParamKind::Bool, "", "flash then pro; both must reach the threshold (a turn's second judge record answers stage 2, else the first serves both)", "408b885689 (2025-11-12)"),
        ]
    }

    fn profiles(&self) -> Vec<Profile> {
        vec![
            Profile {
                name: "gemini-latest",
                about: "gemini-cli acae7124bd (2026-07-17) .. HEAD 5411f113ca (2026-08-21): tool cycles 1..5, two strikes",
                values: vec![
                    (POLICY, s("warn:1")),
                    ("tool_call_threshold", i(5)),
                    ("tool_cycle_max_len", i(5)),
                    ("tool_name_trim", b(true)),
                    ("preview_rule", s("off")),
                    ("preview_strict", b(false)),
                    ("preview_intensive_tool_threshold", i(4)),
                    ("preview_tool_name_threshold", i(5)),
                    ("preview_intensive_tools", l(INTENSIVE)),
                    ("preview_monitored_tools", l(MONITORED)),
                    ("preview_monitored_threshold", i(32)),
                    ("content_check", s("hash")),
                    ("content_chunk_size", i(50)),
                    ("content_loop_threshold", i(10)),
                    ("content_max_history", i(5000)),
                    ("content_max_distance_factor", f(5.0)),
                    ("content_period_check", b(true)),
                    ("content_code_fences", s("skip_inside_or_opening")),
                    ("content_markdown_resets", b(true)),
                    ("content_dividers", b(true)),
                    ("content_table_distance_factor", f(6.0)),
                    ("content_common_distance_factor", f(3.0)),
                    ("llm_check", b(true)),
                    ("llm_check_after_turns", i(30)),
                    ("llm_check_interval", i(10)),
                    ("llm_check_min_interval", i(5)),
                    ("llm_check_max_interval", i(15)),
                    ("llm_confidence_threshold", f(0.9)),
                    ("llm_confidence_strict", b(false)),
                    ("llm_two_stage", b(true)),
                ],
            },
            Profile {
                name: "gemini-2026-03",
                about: "gemini-cli e200b40408 (2026-03-04 .. 07-16): identical consecutive calls, period rule, two strikes",
                values: vec![("tool_cycle_max_len", i(1)), ("tool_name_trim", b(false))],
            },
            Profile {
                name: "gemini-2026-02",
                about: "gemini-cli 9c285eaf15 (2026-02-13 .. 03-01): period rule, judge interval 3, stop at the first detection",
                values: vec![
                    (POLICY, s("stop")),
                    ("tool_cycle_max_len", i(1)),
                    ("tool_name_trim", b(false)),
                    ("llm_check_interval", i(3)),
                ],
            },
            Profile {
                name: "gemini-2025-11",
                about: "gemini-cli 408b885689 (2025-11-12 .. 2026-02-12): history 5000, gap 5x, two-stage judge",
                values: vec![
                    (POLICY, s("stop")),
                    ("tool_cycle_max_len", i(1)),
                    ("tool_name_trim", b(false)),
                    ("content_period_check", b(false)),
                    ("llm_check_interval", i(3)),
                ],
            },
            Profile {
                name: "gemini-2025-08",
                about: "gemini-cli da73f13d02 (2025-08-23 .. 11-03): markdown resets, fences, dividers; history 1000, gap 1.5x; judge c > 0.9",
                values: vec![
                    (POLICY, s("stop")),
                    ("tool_cycle_max_len", i(1)),
                    ("tool_name_trim", b(false)),
                    ("content_period_check", b(false)),
                    ("content_max_history", i(1000)),
                    ("content_max_distance_factor", f(1.5)),
                    ("llm_check_interval", i(3)),
                    ("llm_confidence_strict", b(true)),
                    ("llm_two_stage", b(false)),
                ],
            },
            Profile {
                name: "gemini-2025-07",
                about: "gemini-cli d76cedb68f (2025-07-25 .. 07-29): first hash-window build, no markdown rules",
                values: vec![
                    (POLICY, s("stop")),
                    ("tool_cycle_max_len", i(1)),
                    ("tool_name_trim", b(false)),
                    ("content_period_check", b(false)),
                    ("content_max_history", i(1000)),
                    ("content_max_distance_factor", f(1.5)),
                    ("content_code_fences", s("off")),
                    ("content_markdown_resets", b(false)),
                    ("content_dividers", b(false)),
                    ("llm_check_interval", i(3)),
                    ("llm_confidence_strict", b(true)),
                    ("llm_two_stage", b(false)),
                ],
            },
            Profile {
                name: "deepv-preview",
                about: "OrionStarAI/DeepVCode 5873417 (2025-12-11): exact calls 10, content 20 x 500-unit windows, and for /preview/i models 4 calls of a read-heavy tool or 5 of any other per prompt",
                values: deepv(vec![("preview_rule", s("name_count"))]),
            },
            Profile {
                name: "deepv-latest",
                about: "OrionStarAI/DeepVCode 0f5d2e2 (2026-01-11): preview rule counts consecutive calls of monitored tools, threshold 32",
                values: deepv(vec![("preview_rule", s("consecutive"))]),
            },
        ]
    }

    fn checks(&self, ps: &ParamSet) -> Result<Vec<Box<dyn Check>>> {
        let mut out: Vec<Box<dyn Check>> = Vec::new();
        let preview = match ps.str("preview_rule") {
            "name_count" => PreviewRule::NameCount,
            "monitored_count" => PreviewRule::MonitoredCount,
            "consecutive" => PreviewRule::Consecutive,
            _ => PreviewRule::Off,
        };
        // The judge comes first: a record that starts a turn reaches
        // turnStarted() before addAndCheck(), so on a tie the judge fires first.
        if ps.bool("llm_check") {
            out.push(Box::new(JudgeCheck {
                key: format!("gemini.judge;{}", ps.key_of(JUDGE_PARAMS)),
                s: JudgeSettings {
                    after_turns: ps.int("llm_check_after_turns"),
                    interval: ps.int("llm_check_interval"),
                    min_interval: ps.int("llm_check_min_interval"),
                    max_interval: ps.int("llm_check_max_interval"),
                    threshold: ps.float("llm_confidence_threshold"),
                    strict: ps.bool("llm_confidence_strict"),
                    two_stage: ps.bool("llm_two_stage"),
                },
            }));
        }
        out.push(Box::new(ToolCheck {
            key: format!("gemini.tool;{}", ps.key_of(TOOL_PARAMS)),
            s: ToolSettings {
                threshold: ps.int("tool_call_threshold") as usize,
                max_len: ps.int("tool_cycle_max_len") as usize,
                trim: ps.bool("tool_name_trim"),
                preview,
                preview_strict: ps.bool("preview_strict"),
                intensive_threshold: ps.int("preview_intensive_tool_threshold") as u32,
                name_threshold: ps.int("preview_tool_name_threshold") as u32,
                intensive: ps.list("preview_intensive_tools").to_vec(),
                monitored: ps.list("preview_monitored_tools").to_vec(),
                monitored_threshold: ps.int("preview_monitored_threshold") as u32,
            },
        }));
        let algorithm = match ps.str("content_check") {
            "hash" => Some(Algorithm::Hash),
            "deepv" => Some(Algorithm::DeepV),
            _ => None,
        };
        if let Some(algorithm) = algorithm {
            out.push(Box::new(ContentCheck {
                key: format!("gemini.content;{}", ps.key_of(CONTENT_PARAMS)),
                s: ContentSettings {
                    algorithm,
                    chunk: ps.int("content_chunk_size") as usize,
                    threshold: ps.int("content_loop_threshold") as usize,
                    max_history: ps.int("content_max_history") as usize,
                    distance_factor: ps.float("content_max_distance_factor"),
                    period_check: ps.bool("content_period_check"),
                    fences: match ps.str("content_code_fences") {
                        "skip_inside" => Fences::SkipInside,
                        "skip_inside_or_opening" => Fences::SkipInsideOrOpening,
                        _ => Fences::Off,
                    },
                    markdown_resets: ps.bool("content_markdown_resets"),
                    dividers: ps.bool("content_dividers"),
                    table_factor: ps.float("content_table_distance_factor"),
                    common_factor: ps.float("content_common_distance_factor"),
                },
            }));
        }
        Ok(out)
    }
}

/// The DeepV fork's values on top of the family defaults.
fn deepv(mut extra: Vec<(&'static str, ParamValue)>) -> Vec<(&'static str, ParamValue)> {
    let mut v = vec![
        (POLICY, s("stop")),
        ("tool_call_threshold", i(10)),
        ("tool_cycle_max_len", i(1)),
        ("tool_name_trim", b(false)),
        ("content_check", s("deepv")),
        ("content_chunk_size", i(500)),
        ("content_loop_threshold", i(20)),
        ("content_max_history", i(10_000)),
        ("content_max_distance_factor", f(1.5)),
        ("content_period_check", b(false)),
        ("content_code_fences", s("off")),
        ("content_markdown_resets", b(false)),
        ("content_dividers", b(false)),
        ("llm_check_interval", i(3)),
        ("llm_confidence_strict", b(true)),
        ("llm_two_stage", b(false)),
    ];
    v.append(&mut extra);
    v
}

fn prep(s: &Prepared) -> &GeminiPrep {
    s.gemini.get_or_init(|| GeminiPrep::new(&s.session))
}

struct ToolCheck {
    key: String,
    s: ToolSettings,
}
impl Check for ToolCheck {
    fn key(&self) -> String {
        self.key.clone()
    }
    fn limit_per_prompt(&self) -> bool {
        true
    }
    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        tool::run(&self.s, prep(session), limit)
    }
}

struct ContentCheck {
    key: String,
    s: ContentSettings,
}
impl Check for ContentCheck {
    fn key(&self) -> String {
        self.key.clone()
    }
    fn limit_per_prompt(&self) -> bool {
        true
    }
    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        content::run(&self.s, prep(session), limit)
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
    key: String,
    s: JudgeSettings,
}
impl Check for JudgeCheck {
    fn key(&self) -> String {
        self.key.clone()
    }
    fn limit_per_prompt(&self) -> bool {
        true
    }
    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        judge::run(&self.s, prep(session), limit).0
    }
    fn judge_due(&self, session: &Prepared) -> Option<Vec<(u32, bool)>> {
        Some(judge::run(&self.s, prep(session), None).1)
    }
}
