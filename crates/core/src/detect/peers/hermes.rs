//! Hermes agent's tool-call loop guardrails (`agent/tool_guardrails.py`,
//! `ToolCallGuardrailController`): per-turn counters of failing calls, of
//! read-only calls returning the same result, a streak of identical
//! call-and-result observations and cycles of 2 to 4 calls.
//!
//! How canonical records drive it (docs/detector-mappings.md, "Hermes"):
//! one controller per session, `reset_for_turn` at every `user` record that
//! begins a prompt (a Hermes turn is one user message). A `tool_call` goes
//! through `before_call` (loop caps, then the hard-stop blocks); its result
//! (matched as the peers match results) through `after_call` and then
//! `observe_call`, as `_append_guardrail_observation` does. Whether a call
//! failed is what the runtime's classifier says of the result text
//! (`classify_tool_failure`), or with `failure=record`, the record's `error`
//! flag where it has one. The first block or halt ends the turn.
//!
//! Reported per prompt: the first warning or notice (tier `warn` or
//! `notice`), then the first block or halt (tier `block` or `halt`), the
//! decision code as the kind. Under the profile's `warn:1` the warning warns
//! and the halt stops; a halt with no warning before it in its prompt (a loop
//! cap, or thresholds crossed the other way round) is reported twice at its
//! event, so it stops at once as the original does.

use super::common::{each_rule, push_json_str, At, Found, RecordRule, RecordStream, Unanswered};
use crate::detect::{
    Check, Detection, Family, ParamSet, ParamSpec, ParamValue, Params, Prepared, Profile, Stream,
    POLICY, POLICY_SPEC,
};
use crate::error::Result;
use crate::event::Record;
use rustc_hash::FxHashMap;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt::Write as _;

const SRC: &str = "NousResearch/hermes-agent agent/tool_guardrails.py @06c25ac90b";
const SRC_RUN: &str =
    "NousResearch/hermes-agent agent/tool_guardrails.py @06c25ac90b; run_agent.py _append_guardrail_observation";

/// `IDEMPOTENT_TOOL_NAMES`.
pub const IDEMPOTENT_TOOLS: &[&str] = &[
    "read_file",
    "search_files",
    "web_search",
    "web_extract",
    "session_search",
    "skill_view",
    "skills_list",
    "browser_snapshot",
    "browser_console",
    "browser_get_images",
    "mcp_filesystem_read_file",
    "mcp_filesystem_read_text_file",
    "mcp_filesystem_read_multiple_files",
    "mcp_filesystem_list_directory",
    "mcp_filesystem_list_directory_with_sizes",
    "mcp_filesystem_directory_tree",
    "mcp_filesystem_get_file_info",
    "mcp_filesystem_search_files",
];

/// `MUTATING_TOOL_NAMES`.
pub const MUTATING_TOOLS: &[&str] = &[
    "terminal",
    "execute_code",
    "write_file",
    "patch",
    "todo_list",
    "memory",
    "skill_manage",
    "browser_click",
    "browser_type",
    "browser_press",
    "browser_scroll",
    "browser_navigate",
    "send_message",
    "cronjob_manage",
    "delegate_task",
    "process_manage",
];

/// `FAILURE_TOLERANT_TOOL_NAMES`: a run of different failing calls never halts these.
const FAILURE_TOLERANT: &[&str] = &[
    "terminal",
    "execute_code",
    "process_manage",
    "process",
    "browser_navigate",
    "web_extract",
];

/// `PROGRESS_RESET_TOOL_NAMES`: a success of one of these is progress.
const PROGRESS_RESET: &[&str] = &[
    "write_file",
    "patch",
    "terminal",
    "execute_code",
    "browser_click",
    "browser_type",
    "browser_press",
    "browser_navigate",
    "process_manage",
    "process",
    "delegate_task",
    "send_message",
    "cronjob",
    "cronjob_manage",
    "todo",
    "todo_list",
    "memory",
    "skill_manage",
];

/// The `hermes` family.
pub struct Hermes;

impl Family for Hermes {
    fn name(&self) -> &'static str {
        "hermes"
    }
    fn about(&self) -> &'static str {
        "Hermes agent ToolCallGuardrailController: per-turn repeated failures (warn 2, block 5), same-tool failures (3, 8), read-only no-progress (2, 5), identical call+result streaks and 2-4 call cycles (notice 3, halt 5), per-turn caps"
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            POLICY_SPEC,
            ParamSpec::bool("warnings_enabled", "warnings are appended to results (warnings_enabled)", SRC),
            ParamSpec::bool(
                "hard_stop_enabled",
                "blocks and halts end the turn (hard_stop_enabled; on by default on gateway and cron surfaces only)",
                SRC,
            ),
            ParamSpec::int("exact_failure_warn_after", 1, 100_000, "failures", "the same call failing this often warns (exact_failure_warn_after)", SRC),
            ParamSpec::int("exact_failure_block_after", 1, 100_000, "failures", "the same call having failed this often is blocked before it runs (exact_failure_block_after)", SRC),
            ParamSpec::int("same_tool_failure_warn_after", 1, 100_000, "failures", "one tool failing this often this turn, any arguments, warns (same_tool_failure_warn_after)", SRC),
            ParamSpec::int("same_tool_failure_halt_after", 1, 100_000, "failures", "one tool failing this often halts, failure-tolerant tools excepted (same_tool_failure_halt_after)", SRC),
            ParamSpec::int("no_progress_warn_after", 1, 100_000, "calls", "a read-only call returning the same result this often warns (no_progress_warn_after)", SRC),
            ParamSpec::int("no_progress_block_after", 1, 100_000, "calls", "blocks that read-only call; also the streak and the cycle laps that halt (no_progress_block_after)", SRC),
            ParamSpec::int("identical_call_threshold", 1, 100_000, "calls", "identical call+result streak, and cycle laps, that give the notice (STALL_GUARD_IDENTICAL_CALL_THRESHOLD)", SRC),
            ParamSpec::int("max_cycle_period", 1, 64, "calls", "longest cycle of calls looked for; 1 turns the cycle check off (_STALL_GUARD_MAX_CYCLE_PERIOD)", SRC),
            ParamSpec::int("cycle_history", 1, 100_000, "calls", "calls kept for the cycle check (_STALL_GUARD_CYCLE_HISTORY)", SRC),
            ParamSpec::int("max_web_searches", 0, 100_000, "calls", "web_search calls a turn; the next is blocked, 0 = no cap (loop_caps.max_web_searches)", SRC),
            ParamSpec::int("max_subagents", 0, 100_000, "subagents", "subagents spawned a turn; a delegate_task past it is blocked, 0 = no cap (loop_caps.max_subagents)", SRC),
            ParamSpec::bool("stall_guards", "the identical-call streak and cycle notices run (agent.stall_guards)", SRC_RUN),
            ParamSpec::choice(
                "failure",
                &["classify", "record"],
                "what says a call failed: the runtime's classifier of the result text (classify), or the record's error flag where it has one (record)",
                SRC_RUN,
            ),
            ParamSpec::list("idempotent_tools", "tool names", "read-only tools the no-progress check covers (idempotent_tools)", SRC),
            ParamSpec::list("mutating_tools", "tool names", "tools never taken as read-only (mutating_tools)", SRC),
        ]
    }
    fn profiles(&self) -> Vec<Profile> {
        vec![
            Profile {
                name: "hermes",
                about: "Hermes agent tool_guardrails.py @06c25ac9 with hard stops on (its default on gateway and cron surfaces): warnings and notices warn, the first block or halt ends the turn. Policy warn:1 (a halt with no warning before it in its prompt is reported twice)",
                values: vec![
                    (POLICY, ParamValue::word("warn:1")),
                    ("warnings_enabled", ParamValue::Bool(true)),
                    ("hard_stop_enabled", ParamValue::Bool(true)),
                    ("exact_failure_warn_after", ParamValue::Int(2)),
                    ("exact_failure_block_after", ParamValue::Int(5)),
                    ("same_tool_failure_warn_after", ParamValue::Int(3)),
                    ("same_tool_failure_halt_after", ParamValue::Int(8)),
                    ("no_progress_warn_after", ParamValue::Int(2)),
                    ("no_progress_block_after", ParamValue::Int(5)),
                    ("identical_call_threshold", ParamValue::Int(3)),
                    ("max_cycle_period", ParamValue::Int(4)),
                    ("cycle_history", ParamValue::Int(64)),
                    ("max_web_searches", ParamValue::Int(50)),
                    ("max_subagents", ParamValue::Int(50)),
                    ("stall_guards", ParamValue::Bool(true)),
                    ("failure", ParamValue::word("classify")),
                    ("idempotent_tools", ParamValue::words(IDEMPOTENT_TOOLS)),
                    ("mutating_tools", ParamValue::words(MUTATING_TOOLS)),
                ],
            },
            Profile {
                name: "hermes-interactive",
                about: "Hermes agent @06c25ac9 as on interactive surfaces (CLI, TUI, desktop): hard stops off, so only warnings, notices and the loop caps (which block regardless)",
                values: vec![("hard_stop_enabled", ParamValue::Bool(false))],
            },
        ]
    }
    fn checks(&self, params: &ParamSet) -> Result<Vec<Box<dyn Check>>> {
        let p = Params::new(self.name(), params);
        let s = HermesSettings {
            warnings_enabled: p.get("warnings_enabled")?,
            hard_stop_enabled: p.get("hard_stop_enabled")?,
            exact_failure_warn_after: p.get("exact_failure_warn_after")?,
            exact_failure_block_after: p.get("exact_failure_block_after")?,
            same_tool_failure_warn_after: p.get("same_tool_failure_warn_after")?,
            same_tool_failure_halt_after: p.get("same_tool_failure_halt_after")?,
            no_progress_warn_after: p.get("no_progress_warn_after")?,
            no_progress_block_after: p.get("no_progress_block_after")?,
            identical_call_threshold: p.get("identical_call_threshold")?,
            max_cycle_period: p.get("max_cycle_period")?,
            cycle_history: p.get("cycle_history")?,
            max_web_searches: p.get("max_web_searches")?,
            max_subagents: p.get("max_subagents")?,
            stall_guards: p.get("stall_guards")?,
            failure_from_record: p.choice("failure", &[("classify", false), ("record", true)])?,
            idempotent_tools: p.get("idempotent_tools")?,
            mutating_tools: p.get("mutating_tools")?,
        };
        Ok(vec![Box::new(HermesCheck { s })])
    }
}

/// What the controller reads: `ToolCallGuardrailConfig`, the stall-guard
/// constants and the runtime's switches.
#[derive(Debug, Clone, PartialEq)]
pub struct HermesSettings {
    pub warnings_enabled: bool,
    pub hard_stop_enabled: bool,
    pub exact_failure_warn_after: u32,
    pub exact_failure_block_after: u32,
    pub same_tool_failure_warn_after: u32,
    pub same_tool_failure_halt_after: u32,
    pub no_progress_warn_after: u32,
    pub no_progress_block_after: u32,
    pub identical_call_threshold: u32,
    pub max_cycle_period: usize,
    pub cycle_history: usize,
    pub max_web_searches: u32,
    pub max_subagents: u32,
    pub stall_guards: bool,
    pub failure_from_record: bool,
    pub idempotent_tools: Vec<String>,
    pub mutating_tools: Vec<String>,
}

impl Default for HermesSettings {
    /// `ToolCallGuardrailConfig()` as constructed with no mapping: warnings
    /// on, hard stops off.
    fn default() -> Self {
        HermesSettings {
            warnings_enabled: true,
            hard_stop_enabled: false,
            exact_failure_warn_after: 2,
            exact_failure_block_after: 5,
            same_tool_failure_warn_after: 3,
            same_tool_failure_halt_after: 8,
            no_progress_warn_after: 2,
            no_progress_block_after: 5,
            identical_call_threshold: 3,
            max_cycle_period: 4,
            cycle_history: 64,
            max_web_searches: 50,
            max_subagents: 50,
            stall_guards: true,
            failure_from_record: false,
            idempotent_tools: IDEMPOTENT_TOOLS.iter().map(|s| s.to_string()).collect(),
            mutating_tools: MUTATING_TOOLS.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// `ToolGuardrailDecision.action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Allow,
    Warn,
    Block,
    Halt,
}

/// A decision: action, code and count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub action: Action,
    pub code: &'static str,
    pub count: u32,
}

impl Decision {
    fn allow(count: u32) -> Decision {
        Decision {
            action: Action::Allow,
            code: "allow",
            count,
        }
    }
    /// `should_halt`: block or halt.
    pub fn should_halt(&self) -> bool {
        matches!(self.action, Action::Block | Action::Halt)
    }
}

/// What `observe_call` returns of interest here: the notice's kind, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// `identical_call_streak` or `identical_cycle`.
    pub kind: Option<&'static str>,
    /// The streak count or the cycle's laps.
    pub count: u32,
    /// The cycle's period (0 for a streak).
    pub period: usize,
}

/// `ToolCallSignature`: the tool and its canonical arguments (the original
/// hashes that text; equal texts are equal hashes).
pub type Signature = (String, String);

/// `ToolCallSignature.from_call`.
pub fn signature(tool: &str, args: &Map<String, Value>) -> Signature {
    let mut s = String::new();
    write_canonical_map(&mut s, args);
    (tool.to_string(), s)
}

/// `_canonical_json`: `json.dumps(sort_keys=True, separators=(",", ":"))`.
/// Integers stay integers and floats keep a float form, so texts are equal
/// exactly when Python's are (the digits of a float may differ from repr's).
pub fn canonical(v: &Value) -> String {
    let mut s = String::new();
    write_canonical(&mut s, v);
    s
}

fn write_canonical_map(out: &mut String, m: &Map<String, Value>) {
    // Keys with their values (no lookup of each key after the sort).
    let mut entries: Vec<(&String, &Value)> = m.iter().collect();
    // Python sorts str keys by code point: UTF-8 byte order is the same.
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push('{');
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_json_str(out, k);
        out.push(':');
        write_canonical(out, v);
    }
    out.push('}');
}

fn write_canonical(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if n.is_i64() || n.is_u64() {
                let _ = write!(out, "{n}");
            } else {
                // Debug always keeps a float a float ("100.0", "1e16").
                let _ = write!(out, "{:?}", n.as_f64().unwrap_or(f64::NAN));
            }
        }
        Value::String(s) => push_json_str(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(out, x);
            }
            out.push(']');
        }
        Value::Object(m) => write_canonical_map(out, m),
    }
}

/// `safe_json_loads`: the parsed value, `None` for text that is not JSON
/// (and for `null`, which Python reads as `None` too).
fn loads(text: &str) -> Option<Value> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Null) | Err(_) => None,
        Ok(v) => Some(v),
    }
}

/// `_result_hash`: what is hashed (equal texts, equal hashes): the canonical
/// JSON of a result that parses, `execute_code`'s bookkeeping dropped; else
/// the text itself.
pub fn result_key(result: &str, tool: &str) -> String {
    match loads(result) {
        None => result.to_string(),
        Some(mut v) => {
            if tool == "execute_code" {
                if let Value::Object(m) = &mut v {
                    m.remove("duration_seconds");
                    if let Some(Value::Object(k)) = m.get_mut("kernel") {
                        k.remove("execution_count");
                    }
                }
            }
            canonical(&v)
        }
    }
}

/// Python truthiness of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(m) => !m.is_empty(),
    }
}

/// `json.loads(result.strip())` as a dict.
fn dict_of(result: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str::<Value>(result.trim()) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// `file_mutation_result_landed`: a write_file or patch whose result says it landed.
pub fn file_mutation_result_landed(tool: &str, result: &str) -> bool {
    if tool != "write_file" && tool != "patch" {
        return false;
    }
    let Some(d) = dict_of(result) else {
        return false;
    };
    if d.get("error").is_some_and(truthy) {
        return false;
    }
    if tool == "write_file" {
        d.contains_key("bytes_written")
    } else {
        d.get("success") == Some(&Value::Bool(true))
    }
}

/// `is_guardrail_refusal`: a harness refusal (`"guardrail_refusal": true`).
fn is_guardrail_refusal(result: &str) -> bool {
    dict_of(result).is_some_and(|d| d.get("guardrail_refusal") == Some(&Value::Bool(true)))
}

/// Python `x != 0` for a JSON value.
fn ne_zero(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_none_or(|f| f != 0.0),
        _ => true,
    }
}

/// `classify_tool_failure` (as `agent.display._detect_tool_failure`, which
/// the runtime calls): whether the result text says the call failed.
pub fn classify_tool_failure(tool: &str, result: &str) -> bool {
    if file_mutation_result_landed(tool, result) || is_guardrail_refusal(result) {
        return false;
    }
    if tool == "terminal" {
        return match loads(result) {
            Some(Value::Object(d)) => d
                .get("exit_code")
                .is_some_and(|c| !c.is_null() && ne_zero(c)),
            _ => false,
        };
    }
    if tool == "memory" {
        if let Some(Value::Object(d)) = loads(result) {
            let full = match d.get("error") {
                Some(Value::String(e)) => e.contains("exceed the limit"),
                // `in` on a list is membership; other types never classify
                // (the display classifier guards them).
                Some(Value::Array(a)) => a.iter().any(|x| x.as_str() == Some("exceed the limit")),
                None => "".contains("exceed the limit"),
                _ => false,
            };
            if d.get("success") == Some(&Value::Bool(false)) && full {
                return true;
            }
        }
    }
    let head: String = result.chars().take(500).collect::<String>().to_lowercase();
    head.contains("\"error\"") || head.contains("\"failed\"") || result.starts_with("Error")
}

/// `_subagent_spawn_count`: subagents one `delegate_task` call spawns.
pub fn subagent_spawn_count(args: &Map<String, Value>) -> u32 {
    if let Some(Value::String(a)) = args.get("action") {
        let a = a.trim().to_lowercase();
        if a == "list" || a == "steer" || a == "stop" {
            return 0;
        }
    }
    match args.get("tasks") {
        Some(Value::Array(t)) if !t.is_empty() => t.len() as u32,
        _ => 1,
    }
}

/// `is_stall_guard_repeatable`: pollers, exempt from the streak notice.
pub fn is_repeatable(tool: &str) -> bool {
    tool == "process_manage" || tool.ends_with("_get_result") || tool.ends_with("_poll")
}

/// `ToolCallGuardrailController`, one turn's state.
#[derive(Debug)]
pub struct Controller<'c> {
    /// Borrowed over a whole session; owned by a live stream.
    s: Cow<'c, HermesSettings>,
    exact_failure: FxHashMap<Signature, u32>,
    same_tool_failure: FxHashMap<String, u32>,
    progress_since_failure: FxHashMap<Signature, bool>,
    no_progress: FxHashMap<Signature, (String, u32)>,
    /// The turn's first block or halt.
    pub halt: Option<Decision>,
    streak: Option<(Signature, String)>,
    streak_count: u32,
    history: VecDeque<(Signature, String, bool)>,
    web_searches: u32,
    subagents: u32,
}

impl<'c> Controller<'c> {
    /// A controller with fresh turn state.
    #[cfg_attr(not(test), allow(dead_code))] // the original's ported tests drive it
    pub fn new(s: &'c HermesSettings) -> Controller<'c> {
        Controller::with(Cow::Borrowed(s))
    }

    /// A controller owning its settings (a live stream's).
    fn owned(s: HermesSettings) -> Controller<'static> {
        Controller::with(Cow::Owned(s))
    }

    fn with(s: Cow<'c, HermesSettings>) -> Controller<'c> {
        Controller {
            s,
            exact_failure: FxHashMap::default(),
            same_tool_failure: FxHashMap::default(),
            progress_since_failure: FxHashMap::default(),
            no_progress: FxHashMap::default(),
            halt: None,
            streak: None,
            streak_count: 0,
            history: VecDeque::new(),
            web_searches: 0,
            subagents: 0,
        }
    }

    /// `reset_for_turn`.
    pub fn reset_for_turn(&mut self) {
        // Every field as `new` makes it, the settings kept.
        self.exact_failure.clear();
        self.same_tool_failure.clear();
        self.progress_since_failure.clear();
        self.no_progress.clear();
        self.halt = None;
        self.streak = None;
        self.streak_count = 0;
        self.history.clear();
        self.web_searches = 0;
        self.subagents = 0;
    }

    fn decide(&mut self, action: Action, code: &'static str, count: u32) -> Decision {
        let d = Decision {
            action,
            code,
            count,
        };
        if d.should_halt() {
            self.halt = Some(d.clone());
        }
        d
    }

    fn is_idempotent(&self, tool: &str) -> bool {
        !self.s.mutating_tools.iter().any(|t| t == tool)
            && self.s.idempotent_tools.iter().any(|t| t == tool)
    }

    /// `before_call`.
    #[cfg(test)] // the ported tests' entry point; the rule signs a call once
    pub fn before_call(&mut self, tool: &str, args: &Map<String, Value>) -> Decision {
        self.before_call_signed(tool, args, &signature(tool, args))
    }

    /// [`Controller::before_call`] given the call's signature.
    fn before_call_signed(
        &mut self,
        tool: &str,
        args: &Map<String, Value>,
        sig: &Signature,
    ) -> Decision {
        if let Some(block) = self.check_loop_cap(tool, args) {
            return block;
        }
        if !self.s.hard_stop_enabled {
            return Decision::allow(0);
        }
        let exact = if self
            .progress_since_failure
            .get(sig)
            .copied()
            .unwrap_or(false)
        {
            0
        } else {
            self.exact_failure.get(sig).copied().unwrap_or(0)
        };
        if exact >= self.s.exact_failure_block_after {
            return self.decide(Action::Block, "repeated_exact_failure_block", exact);
        }
        if self.is_idempotent(tool) {
            if let Some((_, n)) = self.no_progress.get(sig) {
                let n = *n;
                if n >= self.s.no_progress_block_after {
                    return self.decide(Action::Block, "idempotent_no_progress_block", n);
                }
            }
        }
        Decision::allow(0)
    }

    /// `_check_loop_cap`.
    fn check_loop_cap(&mut self, tool: &str, args: &Map<String, Value>) -> Option<Decision> {
        match tool {
            "delegate_task" => {
                let spawn = subagent_spawn_count(args);
                if spawn == 0 {
                    return None;
                }
                let cap = self.s.max_subagents;
                if cap > 0 && self.subagents >= cap {
                    return Some(self.decide(Action::Block, "loop_subagent_cap", self.subagents));
                }
                // Charged only when the delegate tool commits its spawns.
                None
            }
            "web_search" => {
                let cap = self.s.max_web_searches;
                if cap > 0 && self.web_searches >= cap {
                    return Some(self.decide(
                        Action::Block,
                        "loop_web_search_cap",
                        self.web_searches,
                    ));
                }
                self.web_searches += 1;
                None
            }
            _ => None,
        }
    }

    /// `reserve_subagent_spawns(n)` then `commit()`: what the delegate tool
    /// does with its normalised spawn count once its children are built.
    pub fn commit_subagents(&mut self, n: u32) {
        let cap = self.s.max_subagents;
        let admitted = if cap > 0 {
            n.min(cap.saturating_sub(self.subagents))
        } else {
            n
        };
        self.subagents += admitted;
    }

    /// Subagents charged this turn.
    #[cfg(test)]
    pub fn subagents(&self) -> u32 {
        self.subagents
    }

    /// `after_call`.
    #[cfg(test)] // the ported tests' entry point; the rule signs a call once
    pub fn after_call(
        &mut self,
        tool: &str,
        args: &Map<String, Value>,
        result: &str,
        failed: bool,
    ) -> Decision {
        self.after_call_signed(tool, signature(tool, args), result, failed)
    }

    /// [`Controller::after_call`] given the call's signature.
    fn after_call_signed(
        &mut self,
        tool: &str,
        sig: Signature,
        result: &str,
        failed: bool,
    ) -> Decision {
        let warnings = self.s.warnings_enabled;
        if failed {
            if self.progress_since_failure.remove(&sig).unwrap_or(false) {
                self.exact_failure.remove(&sig);
            }
            let exact = {
                let n = self.exact_failure.entry(sig.clone()).or_insert(0);
                *n += 1;
                *n
            };
            let same = {
                let n = self.same_tool_failure.entry(tool.to_string()).or_insert(0);
                *n += 1;
                *n
            };
            self.no_progress.remove(&sig);
            if self.s.hard_stop_enabled
                && !FAILURE_TOLERANT.contains(&tool)
                && same >= self.s.same_tool_failure_halt_after
            {
                return self.decide(Action::Halt, "same_tool_failure_halt", same);
            }
            if warnings && exact >= self.s.exact_failure_warn_after {
                return self.decide(Action::Warn, "repeated_exact_failure_warning", exact);
            }
            if warnings && same >= self.s.same_tool_failure_warn_after {
                return self.decide(Action::Warn, "same_tool_failure_warning", same);
            }
            return Decision::allow(exact);
        }
        self.exact_failure.remove(&sig);
        self.same_tool_failure.remove(tool);
        if PROGRESS_RESET.contains(&tool) || file_mutation_result_landed(tool, result) {
            for k in self.exact_failure.keys() {
                self.progress_since_failure.insert(k.clone(), true);
            }
            self.same_tool_failure.clear();
        }
        if !self.is_idempotent(tool) {
            self.no_progress.remove(&sig);
            return Decision::allow(0);
        }
        let hash = result_key(result, tool);
        let repeat = match self.no_progress.get(&sig) {
            Some((h, n)) if *h == hash => n + 1,
            _ => 1,
        };
        self.no_progress.insert(sig, (hash, repeat));
        if warnings && repeat >= self.s.no_progress_warn_after {
            return self.decide(Action::Warn, "idempotent_no_progress_warning", repeat);
        }
        Decision::allow(repeat)
    }

    /// `observe_call` with a plain-string result (every canonical result is one).
    #[cfg(test)] // the ported tests' entry point; the rule signs a call once
    pub fn observe_call(
        &mut self,
        tool: &str,
        args: &Map<String, Value>,
        result: &str,
    ) -> Observation {
        self.observe_call_signed(tool, signature(tool, args), result)
    }

    /// [`Controller::observe_call`] given the call's signature.
    fn observe_call_signed(&mut self, tool: &str, sig: Signature, result: &str) -> Observation {
        let hash = result_key(result, tool);
        let same = self
            .streak
            .as_ref()
            .is_some_and(|(s, h)| *s == sig && *h == hash);
        if same {
            self.streak_count += 1;
        } else {
            self.streak = Some((sig.clone(), hash.clone()));
            self.streak_count = 1;
        }
        let count = self.streak_count;
        let mut out = Observation {
            kind: None,
            count: 0,
            period: 0,
        };
        if !is_repeatable(tool) && count >= self.s.identical_call_threshold {
            out = Observation {
                kind: Some("identical_call_streak"),
                count,
                period: 0,
            };
            if self.s.hard_stop_enabled
                && count >= self.s.no_progress_block_after
                && self.halt.is_none()
            {
                self.decide(Action::Halt, "identical_call_streak_halt", count);
            }
        }
        if self.history.len() == self.s.cycle_history {
            self.history.pop_front();
        }
        self.history.push_back((sig, hash, is_repeatable(tool)));
        if out.kind.is_none() {
            if let Some((period, laps)) = self.detect_identical_cycle() {
                out = Observation {
                    kind: Some("identical_cycle"),
                    count: laps,
                    period,
                };
                if self.s.hard_stop_enabled
                    && laps >= self.s.no_progress_block_after
                    && self.halt.is_none()
                {
                    self.decide(Action::Halt, "identical_cycle_halt", laps);
                }
            }
        }
        out
    }

    /// `_detect_identical_cycle`: `(period, laps)` of the smallest period
    /// whose trailing laps reach the threshold, a cycle of pollers only excepted.
    fn detect_identical_cycle(&self) -> Option<(usize, u32)> {
        let h = &self.history;
        let n = h.len();
        let t = self.s.identical_call_threshold as usize;
        for period in 2..=self.s.max_cycle_period {
            if n < period * t {
                continue;
            }
            let mut laps = 1usize;
            while let Some(base) = n.checked_sub(period * (laps + 1)) {
                let equal = (0..period).all(|i| {
                    let (a, b) = (&h[base + i], &h[n - period + i]);
                    a.0 == b.0 && a.1 == b.1
                });
                if !equal {
                    break;
                }
                laps += 1;
            }
            if laps >= t {
                if (0..period).all(|i| h[n - period + i].2) {
                    continue;
                }
                return Some((period, laps as u32));
            }
        }
        None
    }
}

/// The tier a decision or notice acts at, for the detail.
fn tier(a: Action) -> &'static str {
    match a {
        Action::Allow => "allow",
        Action::Warn => "warn",
        Action::Block => "block",
        Action::Halt => "halt",
    }
}

struct HermesCheck {
    s: HermesSettings,
}

impl Check for HermesCheck {
    fn name(&self) -> &'static str {
        "hermes.guardrails"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }

    fn run(&self, session: &Prepared, _limit: Option<usize>) -> Vec<Detection> {
        each_rule(&session.session, None, &mut self.rule())
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(RecordStream::boxed(self.rule()))
    }
}

impl HermesCheck {
    fn rule(&self) -> HermesRule {
        HermesRule {
            ctl: Controller::owned(self.s.clone()),
            pending: Unanswered::default(),
            warned: false,
            halted: false,
        }
    }
}

/// The controller over the records of a session; its state is one
/// prompt's (reset at each), plus the calls of the prompt not yet answered.
struct HermesRule {
    ctl: Controller<'static>,
    /// Calls awaiting a result: the tool and the call's signature (made once).
    pending: Unanswered<(String, Signature)>,
    /// This prompt: a warning reported, the turn halted.
    warned: bool,
    halted: bool,
}

impl RecordRule for HermesRule {
    fn visit(&mut self, at: At<'_>, found: &mut Found<'_>) {
        let prompt = at.prompts.saturating_sub(1);
        if at.new_prompt {
            self.ctl.reset_for_turn();
            self.pending = Unanswered::default();
            self.warned = false;
            self.halted = false;
        }
        if self.halted {
            return;
        }
        let stop = |found: &mut Found<'_>, warned: bool, code: &'static str, detail: String| {
            // No warning before it in this prompt: strikes 1 and 2 at once.
            if !warned {
                found.push(at.i, code, prompt, detail.clone());
            }
            found.push(at.i, code, prompt, detail);
        };
        match &at.event.record {
            Record::ToolCall { name, args, id } => {
                let sig = signature(name, args);
                let d = self.ctl.before_call_signed(name, args, &sig);
                if d.should_halt() {
                    stop(
                        found,
                        self.warned,
                        d.code,
                        format!("{}: {name} ({} times)", tier(d.action), d.count),
                    );
                    self.halted = true;
                    return;
                }
                if name == "delegate_task" {
                    // The tool runs: its spawns are built and committed.
                    self.ctl.commit_subagents(subagent_spawn_count(args));
                }
                self.pending.push(id.as_deref(), name, (name.clone(), sig));
            }
            Record::ToolResult {
                id,
                name,
                output,
                error,
            } => {
                let Some((tool, sig)) = self.pending.answer(id.as_deref(), name.as_deref()) else {
                    return;
                };
                let text = output.as_deref().unwrap_or("");
                let failed = match error {
                    Some(e) if self.ctl.s.failure_from_record => *e,
                    _ => classify_tool_failure(&tool, text),
                };
                let stall_guards = self.ctl.s.stall_guards;
                // The signature goes to the last of its readers.
                let observed = stall_guards.then(|| sig.clone());
                let d = self.ctl.after_call_signed(&tool, sig, text, failed);
                let obs = if let Some(sig) = observed {
                    self.ctl.observe_call_signed(&tool, sig, text)
                } else {
                    Observation {
                        kind: None,
                        count: 0,
                        period: 0,
                    }
                };
                if d.should_halt() {
                    stop(
                        found,
                        self.warned,
                        d.code,
                        format!("{}: {tool} ({} times)", tier(d.action), d.count),
                    );
                    self.halted = true;
                    return;
                }
                if d.action == Action::Warn && !self.warned {
                    found.push(
                        at.i,
                        d.code,
                        prompt,
                        format!("warn: {tool} ({} times)", d.count),
                    );
                    self.warned = true;
                }
                // A streak or cycle halt raised by this observation.
                if let Some(h) = self.ctl.halt.clone() {
                    let detail = match obs.period {
                        0 => format!("halt: {tool} ({} times in a row)", h.count),
                        p => format!(
                            "halt: cycle of {p} calls ending with {tool} ({} laps)",
                            h.count
                        ),
                    };
                    stop(found, self.warned, h.code, detail);
                    self.halted = true;
                    return;
                }
                if let Some(kind) = obs.kind {
                    if !self.warned {
                        let detail = match obs.period {
                            0 => format!("notice: {tool} ({} identical calls in a row)", obs.count),
                            p => format!(
                                "notice: cycle of {p} calls ending with {tool} ({} laps)",
                                obs.count
                            ),
                        };
                        found.push(at.i, kind, prompt, detail);
                        self.warned = true;
                    }
                }
            }
            _ => {}
        }
    }
}
