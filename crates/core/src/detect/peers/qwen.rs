//! Qwen Code's `LoopDetectionService` (QwenLM/qwen-code
//! `packages/core/src/services/loopDetectionService.ts` @ 00aa71b4), a Gemini
//! CLI fork that grew its own rules. Two tiers share one sticky flag:
//!
//! - always on (`checkAlwaysOnSafeties`): 5 identical consecutive calls, a
//!   streak of 8 git-inspection shell commands, and the per-turn call cap
//!   (soft 100, halting past it only on a repeat signal; hard 1000);
//! - behind `skipLoopDetection` (default true, so off as shipped):
//!   `addAndCheckHeuristicLoops` with global duplicates, ABAB cycles,
//!   read-like churn, same-name streaks, repeated thoughts and content
//!   chanting (Gemini's hash windows with Qwen's constants and its fixed
//!   markdown patterns).
//!
//! Both tiers share state (a tool call clears the content and thought
//! history; a stateful read's changed result restarts the same-name streak),
//! so one check runs the whole service. There is no `clearDetection()`: once
//! a loop is detected every event is ignored until the next prompt's
//! `reset()`, so a configuration gives at most one detection per prompt.
//!
//! [`QwenService`] mirrors the original's public methods so that its own test
//! file ports case by case; [`Qwen`] drives it over canonical sessions as
//! `docs/detector-mappings.md` (section `qwen`) describes.

use super::common::{each_rule, At, Found, RecordRule, RecordStream, Unanswered};
use crate::detect::gemini::markdown::{count_fences, has_blockquote, has_heading, has_table};
use crate::detect::{
    Check, Detection, Family, ParamSet, ParamSpec, ParamValue, Params, Prepared, Profile, Stream,
    POLICY, POLICY_SPEC,
};
use crate::error::Result;
use crate::event::Record;
use crate::util::js::{is_js_space, stringify_sorted, utf16};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

const SRC: &str = "QwenLM/qwen-code packages/core/src/services/loopDetectionService.ts @00aa71b4";
/// PR #9668 (merged 2026-08-21), read in the PR author's fork, whose file has
/// the rule as merged (with a later, detection-neutral truncation slack).
const SRC_9668: &str = "QwenLM/qwen-code#9668 packages/core/src/services/loopDetectionService.ts (read at yiliang114/qwen-code @1e6c3369)";

/// Loop types, as Qwen Code's `LoopType` names them (the detection kinds).
pub mod kind {
    /// `CONSECUTIVE_IDENTICAL_TOOL_CALLS` (always on).
    pub const CONSECUTIVE: &str = "consecutive_identical_tool_calls";
    /// `SHELL_COMMAND_STAGNATION` (always on).
    pub const SHELL: &str = "shell_command_stagnation";
    /// `TURN_TOOL_CALL_CAP` (always on).
    pub const CAP: &str = "turn_tool_call_cap";
    /// `GLOBAL_TOOL_CALL_DUPLICATE`.
    pub const GLOBAL: &str = "global_tool_call_duplicate";
    /// `ALTERNATING_TOOL_CALL_PATTERN`.
    pub const ALTERNATING: &str = "alternating_tool_call_pattern";
    /// `READ_FILE_LOOP`.
    pub const READ: &str = "read_file_loop";
    /// `ACTION_STAGNATION`.
    pub const STAGNATION: &str = "action_stagnation";
    /// `CHANTING_IDENTICAL_SENTENCES`.
    pub const CHANTING: &str = "chanting_identical_sentences";
    /// `REPETITIVE_THOUGHTS`.
    pub const THOUGHTS: &str = "repetitive_thoughts";
}

/// Legacy tool names `canonicalToolName` resolves (tools/tool-names.ts
/// `ToolNamesMigration`), so an aliased call keys like its new name.
const TOOL_ALIASES: &[(&str, &str)] = &[
    ("search_file_content", "grep_search"),
    ("replace", "edit"),
    ("task", "agent"),
    ("todo_write", "task_list"),
];

/// Every setting the service reads, resolved from one configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct QwenSettings {
    /// `TOOL_CALL_LOOP_THRESHOLD`.
    pub tool_call_threshold: u32,
    /// `SHELL_COMMAND_STAGNATION_THRESHOLD`.
    pub shell_threshold: u32,
    /// `getMaxToolCallsPerTurn()`; `None` = disabled (a setting <= 0).
    pub max_calls: Option<u64>,
    /// `isMaxToolCallsPerTurnExplicit()`: the cap is hard.
    pub max_calls_explicit: bool,
    /// `ADAPTIVE_CAP_HARD_MULTIPLIER`.
    pub cap_hard_multiplier: u64,
    /// `getSkipLoopDetection()`.
    pub skip: bool,
    /// Whether each gated rule runs (looptune switches; all on in Qwen Code).
    pub global_duplicate: bool,
    /// See `global_duplicate`.
    pub alternating: bool,
    /// See `global_duplicate`.
    pub read_loop: bool,
    /// See `global_duplicate`.
    pub stagnation: bool,
    /// See `global_duplicate`.
    pub thoughts: bool,
    /// See `global_duplicate`.
    pub content: bool,
    /// `GLOBAL_DUPLICATE_THRESHOLD` (also the cap's stuck signal).
    pub global_duplicate_threshold: u32,
    /// `ALTERNATING_PATTERN_CYCLES`.
    pub alternating_cycles: usize,
    /// `FILE_READ_THRESHOLD`.
    pub read_threshold: usize,
    /// `FILE_READ_WINDOW`.
    pub read_window: usize,
    /// `STAGNATION_THRESHOLD`.
    pub stagnation_threshold: u32,
    /// `THOUGHT_REPEAT_THRESHOLD`.
    pub thought_threshold: usize,
    /// `MAX_THOUGHT_HISTORY`.
    pub thought_history: usize,
    /// `CONTENT_CHUNK_SIZE` (UTF-16 units).
    pub chunk_size: usize,
    /// `CONTENT_LOOP_THRESHOLD`.
    pub content_threshold: usize,
    /// `MAX_HISTORY_LENGTH` (UTF-16 units).
    pub max_history: usize,
    /// The `1.5` of `CONTENT_CHUNK_SIZE * 1.5`.
    pub distance_factor: f64,
    /// PR #9668's long-period rule (`isPeriodicChunkRepetition`) runs beside
    /// the clustered one (looptune switch: off before the PR).
    pub periodic: bool,
    /// `PERIODIC_OCCURRENCES_REQUIRED`.
    pub periodic_occurrences: usize,
    /// `PERIODIC_MIN_TRUNCATED_OCCURRENCES`.
    pub periodic_truncated: usize,
    /// `MIN_PERIODIC_REGION_LENGTH` (UTF-16 units).
    pub periodic_min_region: usize,
    /// PR #9668: a thought's text also feeds the content history
    /// (`checkReasoningContentLoop`), without the markdown handling.
    pub reasoning_content: bool,
    /// `STATEFUL_READ_TOOLS`.
    pub stateful_tools: Vec<String>,
    /// `READ_LIKE_TOOL_NAMES`.
    pub read_like_tools: Vec<String>,
    /// `READ_LIKE_NAME_PREFIXES`.
    pub read_like_prefixes: Vec<String>,
}

#[cfg_attr(not(test), allow(dead_code))] // the original's API, read by its ported tests
impl QwenSettings {
    /// The settings of a resolved `qwen` configuration.
    pub fn read(p: &Params) -> Result<QwenSettings> {
        let cap: u64 = p.get("max_tool_calls_per_turn")?;
        Ok(QwenSettings {
            tool_call_threshold: p.get("tool_call_threshold")?,
            shell_threshold: p.get("shell_stagnation_threshold")?,
            max_calls: (cap > 0).then_some(cap),
            max_calls_explicit: p.get("max_tool_calls_explicit")?,
            cap_hard_multiplier: p.get("cap_hard_multiplier")?,
            skip: p.get("skip_loop_detection")?,
            global_duplicate: p.get("global_duplicate_check")?,
            alternating: p.get("alternating_check")?,
            read_loop: p.get("read_loop_check")?,
            stagnation: p.get("stagnation_check")?,
            thoughts: p.get("thought_check")?,
            content: p.get("content_check")?,
            global_duplicate_threshold: p.get("global_duplicate_threshold")?,
            alternating_cycles: p.get("alternating_cycles")?,
            read_threshold: p.get("read_threshold")?,
            read_window: p.get("read_window")?,
            stagnation_threshold: p.get("stagnation_threshold")?,
            thought_threshold: p.get("thought_threshold")?,
            thought_history: p.get("thought_history")?,
            chunk_size: p.get("content_chunk_size")?,
            content_threshold: p.get("content_loop_threshold")?,
            max_history: p.get("content_max_history")?,
            distance_factor: p.get("content_max_distance_factor")?,
            periodic: p.get("periodic_check")?,
            periodic_occurrences: p.get("periodic_occurrences")?,
            periodic_truncated: p.get("periodic_truncated_occurrences")?,
            periodic_min_region: p.get("periodic_min_region")?,
            reasoning_content: p.get("reasoning_content")?,
            stateful_tools: p.get("stateful_read_tools")?,
            read_like_tools: p.get("read_like_tools")?,
            read_like_prefixes: p.get("read_like_prefixes")?,
        })
    }

    /// The settings of a stock profile (`qwen`, `qwen-all`, `qwen-all-2026-08`).
    pub fn profile(name: &str) -> Result<QwenSettings> {
        let cfg = crate::detect::DetectorConfig::resolve(Some("qwen"), Some(name), &[])?;
        QwenSettings::read(&Params::new("qwen", &cfg.params))
    }
}

/// One stream event as the service sees it (`ServerGeminiStreamEvent`).
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(test), allow(dead_code))] // the original's API, read by its ported tests
pub enum QwenEvent<'a> {
    /// `ToolCallRequest`.
    ToolCall {
        /// Tool name.
        name: &'a str,
        /// Arguments.
        args: &'a Map<String, Value>,
    },
    /// `Content`: one streamed text chunk.
    Content(&'a str),
    /// `Thought`: a parsed `ThoughtSummary`.
    Thought {
        /// Bold subject.
        subject: &'a str,
        /// The rest.
        description: &'a str,
    },
    /// `Finished`: a model response ended.
    Finished,
    /// `Retry`: the stream is retried.
    Retry,
    /// Any other event type.
    Other,
}

/// `getToolCallRepeatKey` before hashing: `canonicalToolName(name) + ":" +
/// JSON.stringify(canonicalizeForHash(args))`. Only equality of keys is used;
/// sorted keys written by V8 (integer-like keys first) or by code-unit order
/// are equal exactly when the sorted objects are.
pub fn repeat_key(name: &str, args: &Map<String, Value>) -> String {
    let name = TOOL_ALIASES
        .iter()
        .find(|(old, _)| *old == name)
        .map_or(name, |(_, new)| new);
    format!("{name}:{}", stringify_sorted(&Value::Object(args.clone())))
}

#[derive(Debug, Clone, Default)]
struct StatefulState {
    results_observed: u32,
    unchanged_streak: u32,
    consecutive_identical: u32,
    last_fingerprint: Option<String>,
}

/// The service's state, method for method (see the module doc).
#[derive(Debug, Clone)]
pub struct QwenService {
    s: QwenSettings,
    loop_detected: bool,
    disabled: bool,
    last_key: Option<String>,
    repetition_count: u32,
    history: Vec<u16>,
    stats: HashMap<String, Vec<usize>>,
    last_index: usize,
    in_code_block: bool,
    thoughts: VecDeque<Vec<u16>>,
    recent_calls: VecDeque<String>,
    same_name_streak: u32,
    last_name: Option<String>,
    shell_streak: u32,
    seen_non_read: bool,
    global_counts: HashMap<String, u32>,
    recent_keys: VecDeque<String>,
    turn_total: u64,
    turn_total_committed: u64,
    cap_counts: HashMap<String, u32>,
    cap_max: u32,
    stateful_cap: u32,
    stateful: HashMap<String, StatefulState>,
    stateful_since_finished: HashSet<String>,
    stateful_keys: HashSet<String>,
    alt_history: HashMap<String, VecDeque<String>>,
    in_flight: HashMap<String, u32>,
    last_type: Option<&'static str>,
    logged: Vec<&'static str>,
    /// Repeat keys made once per session and shared by every configuration:
    /// by the address of a call's arguments, with its name.
    keys: Option<Arc<RepeatKeys>>,
}

/// The repeat key of every tool call of a session, by the address of its
/// arguments (stable while the session lives): a sweep's configurations
/// share them instead of each writing every argument object again.
#[derive(Debug, Default)]
pub struct RepeatKeys(HashMap<usize, (String, String)>);

impl RepeatKeys {
    fn of(s: &crate::event::Session) -> RepeatKeys {
        let mut m = HashMap::new();
        for e in &s.events {
            if let Record::ToolCall { name, args, .. } = &e.record {
                let at = &**args as *const Map<String, Value> as usize;
                m.entry(at)
                    .or_insert_with(|| (name.clone(), repeat_key(name, args)));
            }
        }
        RepeatKeys(m)
    }
}

#[allow(dead_code)] // the original's API: some of it only its ported tests read, some nothing yet
impl QwenService {
    /// The repeat key of a call: the session's shared one when known.
    fn key(&self, name: &str, args: &Map<String, Value>) -> String {
        let at = args as *const Map<String, Value> as usize;
        match self.keys.as_ref().and_then(|k| k.0.get(&at)) {
            Some((n, key)) if n == name => key.clone(),
            _ => repeat_key(name, args),
        }
    }

    /// A fresh service (`new LoopDetectionService(config)`).
    pub fn new(s: QwenSettings) -> QwenService {
        QwenService {
            keys: None,
            s,
            loop_detected: false,
            disabled: false,
            last_key: None,
            repetition_count: 0,
            history: Vec::new(),
            stats: HashMap::new(),
            last_index: 0,
            in_code_block: false,
            thoughts: VecDeque::new(),
            recent_calls: VecDeque::new(),
            same_name_streak: 0,
            last_name: None,
            shell_streak: 0,
            seen_non_read: false,
            global_counts: HashMap::new(),
            recent_keys: VecDeque::new(),
            turn_total: 0,
            turn_total_committed: 0,
            cap_counts: HashMap::new(),
            cap_max: 0,
            stateful_cap: 0,
            stateful: HashMap::new(),
            stateful_since_finished: HashSet::new(),
            stateful_keys: HashSet::new(),
            alt_history: HashMap::new(),
            in_flight: HashMap::new(),
            last_type: None,
            logged: Vec::new(),
        }
    }

    /// The settings in force.
    pub fn settings(&self) -> &QwenSettings {
        &self.s
    }

    /// `getLastLoopType()`.
    pub fn last_loop_type(&self) -> Option<&'static str> {
        self.last_type
    }

    /// `getConsecutiveToolCallCount()`.
    pub fn consecutive_count(&self) -> u32 {
        self.repetition_count
    }

    /// Whether the sticky flag is set.
    pub fn loop_detected(&self) -> bool {
        self.loop_detected
    }

    /// `disableForSession()`.
    pub fn disable_for_session(&mut self) {
        self.disabled = true;
    }

    fn is_stateful(&self, name: &str) -> bool {
        self.s.stateful_tools.iter().any(|t| t == name)
    }

    fn is_read_like(&self, name: &str) -> bool {
        self.s.read_like_tools.iter().any(|t| t == name)
            || self
                .s
                .read_like_prefixes
                .iter()
                .any(|p| name.starts_with(p.as_str()))
    }

    /// Every loop type logged so far (`logLoopDetected` calls), oldest first;
    /// one event can log several heuristic rules.
    pub fn logged(&self) -> &[&'static str] {
        &self.logged
    }

    fn fire(&mut self, k: &'static str) -> bool {
        self.last_type = Some(k);
        self.logged.push(k);
        true
    }

    /// `addAndCheck(event)`: both tiers, whatever `skipLoopDetection` says
    /// (the original's test entry point).
    pub fn add_and_check(&mut self, ev: QwenEvent<'_>) -> bool {
        if self.check_always_on(ev) {
            return true;
        }
        self.add_and_check_heuristic(ev)
    }

    /// What the client runs per event: the always-on tier, then the
    /// heuristics unless `skipLoopDetection`.
    pub fn client_check(&mut self, ev: QwenEvent<'_>) -> bool {
        if self.check_always_on(ev) {
            return true;
        }
        !self.s.skip && self.add_and_check_heuristic(ev)
    }

    /// `checkAlwaysOnSafeties(event)`.
    pub fn check_always_on(&mut self, ev: QwenEvent<'_>) -> bool {
        if self.loop_detected {
            return true;
        }
        let (name, args) = match ev {
            QwenEvent::Finished => {
                self.turn_total_committed = self.turn_total;
                self.decay_abandoned_stateful_streaks();
                return false;
            }
            QwenEvent::Retry => {
                self.turn_total = self.turn_total_committed;
                self.reset_tool_call_count();
                self.cap_counts.clear();
                self.cap_max = 0;
                self.stateful_cap = 0;
                for st in self.stateful.values_mut() {
                    st.results_observed = 0;
                    st.unchanged_streak = 0;
                    st.consecutive_identical = 0;
                }
                self.stateful_since_finished.clear();
                self.alt_history.clear();
                self.stateful_keys.clear();
                self.in_flight.clear();
                return false;
            }
            QwenEvent::ToolCall { name, args } => (name, args),
            _ => return false,
        };
        if self.disabled {
            return false;
        }
        let key = self.key(name, args);
        let stateful = self.is_stateful(name);
        if stateful {
            self.stateful_keys.insert(key.clone());
        } else {
            let c = self.cap_counts.entry(key.clone()).or_insert(0);
            *c += 1;
            self.cap_max = self.cap_max.max(*c);
        }
        if self.check_tool_call_loop(name, &key) {
            self.loop_detected = true;
            return self.fire(kind::CONSECUTIVE);
        }
        if self.check_shell_stagnation(name, args) {
            self.loop_detected = true;
            return self.fire(kind::SHELL);
        }
        if self.check_cap() {
            self.loop_detected = true;
            return self.fire(kind::CAP);
        }
        false
    }

    fn check_tool_call_loop(&mut self, name: &str, key: &str) -> bool {
        if self.last_key.as_deref() == Some(key) {
            self.repetition_count += 1;
        } else {
            // Restart the result evidence of the streak left and the one begun.
            for k in [self.last_key.as_deref(), Some(key)].into_iter().flatten() {
                if let Some(st) = self.stateful.get_mut(k) {
                    st.results_observed = 0;
                    st.unchanged_streak = 0;
                }
            }
            self.last_key = Some(key.to_string());
            self.repetition_count = 1;
        }
        if self.repetition_count < self.s.tool_call_threshold {
            return false;
        }
        if self.is_stateful(name) {
            // Result-aware: a streak whose recorded results changed restarts.
            let expected = self.repetition_count - 1;
            if let Some(st) = self.stateful.get_mut(key) {
                if st.results_observed >= expected
                    && (st.unchanged_streak as i64) < expected as i64 - 1
                {
                    self.repetition_count = 1;
                    st.results_observed = 0;
                    st.unchanged_streak = 0;
                    return false;
                }
            }
        }
        true
    }

    fn check_shell_stagnation(&mut self, name: &str, args: &Map<String, Value>) -> bool {
        let inspection = name == "run_shell_command"
            && matches!(args.get("command"), Some(Value::String(c)) if is_git_overview_inspection(c));
        if !inspection {
            self.shell_streak = 0;
            return false;
        }
        // Every inspection shares the one bucket key, so the streak just grows.
        self.shell_streak += 1;
        self.shell_streak >= self.s.shell_threshold
    }

    fn check_cap(&mut self) -> bool {
        self.turn_total += 1;
        let Some(cap) = self.s.max_calls else {
            return false;
        };
        if self.turn_total <= cap {
            return false;
        }
        let hard = cap.saturating_mul(self.s.cap_hard_multiplier);
        let stuck = self.cap_max.max(self.stateful_cap) >= self.s.global_duplicate_threshold;
        self.s.max_calls_explicit || self.turn_total > hard || stuck
    }

    /// `addAndCheckHeuristicLoops(event)`.
    pub fn add_and_check_heuristic(&mut self, ev: QwenEvent<'_>) -> bool {
        if self.loop_detected || self.disabled {
            return self.loop_detected;
        }
        match ev {
            QwenEvent::ToolCall { name, args } => {
                self.reset_content_tracking();
                self.thoughts.clear();
                self.track_tool_call(name);
                let key = self.key(name, args);
                let stateful = self.is_stateful(name);
                if stateful {
                    self.stateful_keys.insert(key.clone());
                    *self.in_flight.entry(key.clone()).or_insert(0) += 1;
                }
                // Every rule is evaluated (no short cut); the last that fires names the loop.
                let global = self.s.global_duplicate && !stateful && self.check_global(&key);
                let alternating = self.s.alternating && self.check_alternating(key);
                let read = self.s.read_loop && self.check_read_loop();
                let stagnation =
                    self.s.stagnation && self.same_name_streak >= self.s.stagnation_threshold;
                for (hit, k) in [
                    (global, kind::GLOBAL),
                    (alternating, kind::ALTERNATING),
                    (read, kind::READ),
                    (stagnation, kind::STAGNATION),
                ] {
                    if hit {
                        self.fire(k);
                    }
                }
                self.loop_detected = global || alternating || read || stagnation;
            }
            QwenEvent::Retry => {
                self.global_counts.clear();
                self.recent_keys.clear();
                self.alt_history.clear();
                self.stateful_keys.clear();
                self.in_flight.clear();
            }
            QwenEvent::Content(text) => {
                self.loop_detected = self.s.content && self.check_content(&utf16(text));
                if self.loop_detected {
                    self.fire(kind::CHANTING);
                }
            }
            QwenEvent::Thought {
                subject,
                description,
            } => {
                self.track_thought(subject, description);
                self.loop_detected = self.s.thoughts && self.check_thoughts();
                if self.loop_detected {
                    self.fire(kind::THOUGHTS);
                } else if self.s.reasoning_content && self.s.content {
                    // `getThoughtText`: the non-empty parts joined by a space.
                    let text = match (subject.is_empty(), description.is_empty()) {
                        (true, true) => String::new(),
                        (false, true) => subject.to_string(),
                        (true, false) => description.to_string(),
                        (false, false) => format!("{subject} {description}"),
                    };
                    if !text.is_empty() {
                        // Reasoning skips the markdown resets and the code-block
                        // parity: it is appended and analysed only.
                        self.history.extend_from_slice(&utf16(&text));
                        self.truncate_and_update();
                        self.loop_detected = self.analyze_chunks();
                        if self.loop_detected {
                            self.fire(kind::CHANTING);
                        }
                    }
                }
            }
            QwenEvent::Finished | QwenEvent::Other => {}
        }
        self.loop_detected
    }

    fn track_tool_call(&mut self, name: &str) {
        self.recent_calls.push_back(name.to_string());
        if self.recent_calls.len() > self.s.read_window {
            self.recent_calls.pop_front();
        }
        if !self.seen_non_read && !self.is_read_like(name) {
            self.seen_non_read = true;
        }
        if self.last_name.as_deref() == Some(name) {
            self.same_name_streak += 1;
        } else {
            self.last_name = Some(name.to_string());
            self.same_name_streak = 1;
        }
    }

    fn check_read_loop(&self) -> bool {
        if !self.seen_non_read || self.recent_calls.len() < self.s.read_threshold {
            return false;
        }
        let reads = self
            .recent_calls
            .iter()
            .filter(|n| self.is_read_like(n))
            .count();
        reads >= self.s.read_threshold
    }

    fn check_global(&mut self, key: &str) -> bool {
        let c = self.global_counts.entry(key.to_string()).or_insert(0);
        *c += 1;
        *c >= self.s.global_duplicate_threshold
    }

    fn check_alternating(&mut self, key: String) -> bool {
        let max_len = 2 * self.s.alternating_cycles;
        self.recent_keys.push_back(key);
        if self.recent_keys.len() > max_len {
            self.recent_keys.pop_front();
        }
        if self.recent_keys.len() < max_len || max_len < 2 {
            return false;
        }
        let (a, b) = (self.recent_keys[0].clone(), self.recent_keys[1].clone());
        if a == b {
            return false;
        }
        for (i, k) in self.recent_keys.iter().enumerate() {
            if k != if i % 2 == 0 { &a } else { &b } {
                return false;
            }
        }
        // Stateful participants whose recorded results changed exonerate the window.
        for alt in [&a, &b] {
            if !self.stateful_keys.contains(alt) {
                continue;
            }
            let occurrences = self.recent_keys.iter().filter(|k| *k == alt).count();
            let in_flight =
                (self.in_flight.get(alt).copied().unwrap_or(0) as usize).min(occurrences);
            let expected = occurrences - in_flight;
            if expected == 0 {
                continue;
            }
            let Some(h) = self.alt_history.get(alt) else {
                continue;
            };
            if h.len() < expected {
                continue;
            }
            let recent: Vec<&String> = h.iter().skip(h.len() - expected).collect();
            if recent.iter().any(|fp| *fp != recent[0]) {
                self.recent_keys.clear();
                return false;
            }
        }
        true
    }

    fn track_thought(&mut self, subject: &str, description: &str) {
        let mut sig = utf16(&js_trim(subject).to_lowercase());
        sig.push(u16::from(b'|'));
        let mut d = utf16(&js_trim(description).to_lowercase());
        d.truncate(200);
        sig.extend_from_slice(&d);
        self.thoughts.push_back(sig);
        if self.thoughts.len() > self.s.thought_history {
            self.thoughts.pop_front();
        }
    }

    fn check_thoughts(&self) -> bool {
        let n = self.s.thought_threshold;
        if self.thoughts.len() < n || n == 0 {
            return false;
        }
        let first = &self.thoughts[self.thoughts.len() - n];
        self.thoughts
            .iter()
            .skip(self.thoughts.len() - n)
            .all(|t| t == first)
    }

    fn check_content(&mut self, c: &[u16]) -> bool {
        let fences = count_fences(c);
        let divider = is_divider(c);
        if fences > 0
            || has_table(c)
            || has_list_item(c)
            || has_heading(c)
            || has_blockquote(c)
            || divider
        {
            self.reset_content_tracking();
        }
        let was = self.in_code_block;
        if fences % 2 == 1 {
            self.in_code_block = !self.in_code_block;
        }
        if was || self.in_code_block || divider {
            return false;
        }
        self.history.extend_from_slice(c);
        self.truncate_and_update();
        self.analyze_chunks()
    }

    fn truncate_and_update(&mut self) {
        if self.history.len() <= self.s.max_history {
            return;
        }
        let cut = self.history.len() - self.s.max_history;
        self.history.drain(..cut);
        self.last_index = self.last_index.saturating_sub(cut);
        self.stats.retain(|_, idx| {
            idx.retain(|i| *i >= cut);
            for i in idx.iter_mut() {
                *i -= cut;
            }
            !idx.is_empty()
        });
    }

    fn analyze_chunks(&mut self) -> bool {
        let size = self.s.chunk_size;
        while self.last_index + size <= self.history.len() {
            let at = self.last_index;
            if self.loop_at_chunk(at) {
                return true;
            }
            self.last_index += 1;
        }
        false
    }

    /// `isLoopDetectedForChunk`: windows are keyed by their sha256, i.e. by
    /// Node's UTF-8 of the window (lone surrogates as U+FFFD), and verified
    /// against the first stored occurrence unit for unit.
    fn loop_at_chunk(&mut self, at: usize) -> bool {
        let size = self.s.chunk_size;
        let window = &self.history[at..at + size];
        let key = String::from_utf16_lossy(window);
        let Some(first) = self.stats.get(&key).map(|v| v[0]) else {
            self.stats.insert(key, vec![at]);
            return false;
        };
        if self.history[first..first + size] != *window {
            return false;
        }
        let n = self.s.content_threshold;
        let idx = self.stats.get_mut(&key).expect("present");
        idx.push(at);
        let clustered = idx.len() >= n && {
            let recent = &idx[idx.len() - n..];
            let total = (recent[n - 1] - recent[0]) as f64;
            // With a threshold of 1 this is 0/0 = NaN, which never passes: as in JS.
            let average = total / (n as f64 - 1.0);
            average <= size as f64 * self.s.distance_factor
        };
        clustered || (self.s.periodic && self.periodic_at(&key))
    }

    /// `isPeriodicChunkRepetition` (PR #9668): the longest equally spaced
    /// suffix of a window's occurrences, with the region it spans verified
    /// periodic with that stride. A shorter run passes once the history is
    /// full, verifying the whole history instead (its first occurrences may
    /// have been cut). The history is cut on every append here, so the
    /// original's logical window (`windowStart`) always starts at 0.
    fn periodic_at(&self, key: &str) -> bool {
        let idx = &self.stats[key];
        if idx.len() < self.s.periodic_truncated {
            return false;
        }
        let last = idx.len() - 1;
        let stride = idx[last] - idx[last - 1];
        let mut first = last;
        while first > 0 && idx[first] - idx[first - 1] == stride {
            first -= 1;
        }
        let run = last - first + 1;
        let end = idx[last] + self.s.chunk_size;
        if run >= self.s.periodic_occurrences {
            return self.region_periodic(idx[first], end, stride);
        }
        run >= self.s.periodic_truncated
            && self.history.len() >= self.s.max_history
            && self.region_periodic(0, end, stride)
    }

    /// `isRegionPeriodicWithStride`: `history[start..end]` spans at least
    /// the minimum region and repeats itself `stride` units on.
    fn region_periodic(&self, start: usize, end: usize, stride: usize) -> bool {
        let len = end - start;
        if len < self.s.periodic_min_region {
            return false;
        }
        (0..len.saturating_sub(stride))
            .all(|i| self.history[start + i] == self.history[start + i + stride])
    }

    fn reset_content_tracking(&mut self) {
        self.history.clear();
        self.stats.clear();
        self.last_index = 0;
    }

    /// `recordToolResult(toolCall, responseParts)`, with the result already
    /// reduced to a fingerprint (equal exactly when the results are).
    pub fn record_tool_result(
        &mut self,
        name: &str,
        args: &Map<String, Value>,
        fingerprint: &str,
    ) -> bool {
        if self.loop_detected {
            return true;
        }
        if self.disabled || !self.is_stateful(name) {
            return false;
        }
        let key = self.key(name, args);
        self.stateful_since_finished.insert(key.clone());
        if let Some(n) = self.in_flight.get_mut(&key) {
            if *n > 0 {
                *n -= 1;
            }
        }
        let h = self.alt_history.entry(key.clone()).or_default();
        h.push_back(fingerprint.to_string());
        if h.len() > self.s.alternating_cycles {
            h.pop_front();
        }
        let same_streak = self.last_key.as_deref() == Some(key.as_str());
        let st = self.stateful.entry(key).or_default();
        let first = st.last_fingerprint.is_none();
        let changed = !first && st.last_fingerprint.as_deref() != Some(fingerprint);
        if same_streak {
            st.results_observed += 1;
            if first {
                st.last_fingerprint = Some(fingerprint.to_string());
            } else if !changed {
                st.unchanged_streak += 1;
            } else {
                st.unchanged_streak = 0;
                st.last_fingerprint = Some(fingerprint.to_string());
            }
        } else {
            st.last_fingerprint = Some(fingerprint.to_string());
        }
        let consecutive = if changed {
            1
        } else {
            st.consecutive_identical + 1
        };
        st.consecutive_identical = consecutive;
        if changed && self.last_name.as_deref() == Some(name) {
            self.same_name_streak = 1;
        }
        if consecutive > self.stateful_cap {
            self.stateful_cap = consecutive;
        } else if changed {
            self.recompute_stateful_cap();
        }
        if !self.s.skip
            && self.s.global_duplicate
            && consecutive >= self.s.global_duplicate_threshold
        {
            self.loop_detected = true;
            return self.fire(kind::GLOBAL);
        }
        false
    }

    fn recompute_stateful_cap(&mut self) {
        self.stateful_cap = self
            .stateful
            .values()
            .map(|s| s.consecutive_identical)
            .max()
            .unwrap_or(0);
    }

    fn decay_abandoned_stateful_streaks(&mut self) {
        let mut decayed = false;
        for (k, st) in self.stateful.iter_mut() {
            if self.stateful_since_finished.contains(k) {
                continue;
            }
            if st.consecutive_identical > 0 || st.results_observed > 0 || st.unchanged_streak > 0 {
                st.consecutive_identical = 0;
                st.results_observed = 0;
                st.unchanged_streak = 0;
                decayed = true;
            }
        }
        self.stateful_since_finished.clear();
        if decayed {
            self.recompute_stateful_cap();
        }
    }

    /// `reset(promptId)`: everything but `inCodeBlock` and the session disable.
    pub fn reset(&mut self) {
        let keep = (self.in_code_block, self.disabled, self.keys.take());
        *self = QwenService::new(self.s.clone());
        (self.in_code_block, self.disabled, self.keys) = keep;
    }

    fn reset_tool_call_count(&mut self) {
        self.last_key = None;
        self.repetition_count = 0;
        self.shell_streak = 0;
    }
}

fn js_space_char(c: char) -> bool {
    (c as u32) < 0x10000 && is_js_space(c as u32 as u16)
}

/// `String.prototype.trim`.
fn js_trim(s: &str) -> &str {
    s.trim_matches(js_space_char)
}

/// `parseThought(rawText)` (utils/thoughtUtils.ts): the first `**subject**`
/// and the rest as description.
pub fn parse_thought(raw: &str) -> (String, String) {
    let Some(start) = raw.find("**") else {
        return (String::new(), js_trim(raw).to_string());
    };
    let Some(end) = raw[start + 2..].find("**").map(|e| e + start + 2) else {
        return (String::new(), js_trim(raw).to_string());
    };
    let subject = js_trim(&raw[start + 2..end]).to_string();
    let description = format!("{}{}", &raw[..start], &raw[end + 2..]);
    (subject, js_trim(&description).to_string())
}

/// `/(^|\n)\s*[-*+]\s/.test(c) || /(^|\n)\s*\d+\.\s/.test(c)` (the fixed class:
/// `-` is a member).
pub fn has_list_item(c: &[u16]) -> bool {
    let starts = std::iter::once(0).chain(
        c.iter()
            .enumerate()
            .filter(|(_, u)| **u == u16::from(b'\n'))
            .map(|(i, _)| i + 1),
    );
    for s in starts {
        let mut q = s;
        while q < c.len() && is_js_space(c[q]) {
            q += 1;
        }
        if q + 1 < c.len() && matches!(c[q], 0x2a | 0x2b | 0x2d) && is_js_space(c[q + 1]) {
            return true;
        }
        let mut d = q;
        while d < c.len() && (0x30..=0x39).contains(&c[d]) {
            d += 1;
        }
        if d > q && d + 1 < c.len() && c[d] == u16::from(b'.') && is_js_space(c[d + 1]) {
            return true;
        }
    }
    false
}

/// `/^[-+_=*\u2500-\u257F]+$/` (the fixed class: only box drawing is a range).
pub fn is_divider(c: &[u16]) -> bool {
    !c.is_empty()
        && c.iter()
            .all(|u| matches!(*u, 0x2d | 0x2b | 0x5f | 0x3d | 0x2a | 0x2500..=0x257f))
}

/// `isGitOverviewInspectionCommand`: every segment of the chain (split on
/// `&&`, `||`, `;`, `&`, `|`, newline) is `git status`, `git ls-files` or an
/// overview `git diff`.
pub fn is_git_overview_inspection(command: &str) -> bool {
    let u = utf16(command);
    let mut segments: Vec<&[u16]> = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < u.len() {
        let two = i + 1 < u.len()
            && ((u[i] == u16::from(b'&') && u[i + 1] == u16::from(b'&'))
                || (u[i] == u16::from(b'|') && u[i + 1] == u16::from(b'|')));
        if two || matches!(u[i], 0x3b | 0x26 | 0x7c | 0x0a) {
            segments.push(&u[start..i]);
            i += if two { 2 } else { 1 };
            start = i;
        } else {
            i += 1;
        }
    }
    segments.push(&u[start..]);
    let segments: Vec<&[u16]> = segments
        .into_iter()
        .map(crate::util::js::js_trim)
        .filter(|s| !s.is_empty())
        .collect();
    !segments.is_empty()
        && segments.iter().all(|seg| match git_subcommand(seg) {
            None => false,
            Some((sub, end)) => sub != "diff" || is_overview_git_diff(&seg[end..]),
        })
}

fn eq_ignore_case(u: &[u16], at: usize, word: &str) -> bool {
    let w = word.as_bytes();
    at + w.len() <= u.len()
        && w.iter().enumerate().all(|(k, b)| {
            let x = u[at + k];
            x < 0x80 && (x as u8).eq_ignore_ascii_case(b)
        })
}

fn skip_ws(u: &[u16], mut i: usize) -> usize {
    while i < u.len() && is_js_space(u[i]) {
        i += 1;
    }
    i
}

fn skip_non_ws(u: &[u16], mut i: usize) -> usize {
    while i < u.len() && !is_js_space(u[i]) {
        i += 1;
    }
    i
}

/// `/^git(?:\s+(?:-C\s+\S+|--no-pager))*\s+(status|diff|ls-files)\b/i`: the
/// subcommand (lowercased) and the end of the match. Tokens are separated by
/// whitespace and `\S+` takes a whole token, so backtracking never yields a
/// different match than this greedy scan (an option token can never be a
/// subcommand).
fn git_subcommand(u: &[u16]) -> Option<(&'static str, usize)> {
    if !eq_ignore_case(u, 0, "git") {
        return None;
    }
    let mut i = 3;
    loop {
        let ws = skip_ws(u, i);
        if ws == i {
            return None;
        }
        if eq_ignore_case(u, ws, "-c") {
            let after = skip_ws(u, ws + 2);
            if after > ws + 2 && after < u.len() {
                let end = skip_non_ws(u, after);
                // The next iteration (or the subcommand) needs whitespace here.
                if end < u.len() && is_js_space(u[end]) {
                    i = end;
                    continue;
                }
            }
        } else if eq_ignore_case(u, ws, "--no-pager") {
            let end = ws + "--no-pager".len();
            if end < u.len() && is_js_space(u[end]) {
                i = end;
                continue;
            }
        }
        for sub in ["status", "diff", "ls-files"] {
            if eq_ignore_case(u, ws, sub) {
                let end = ws + sub.len();
                let word = |x: u16| x < 0x80 && ((x as u8).is_ascii_alphanumeric() || x == 0x5f);
                if end == u.len() || !word(u[end]) {
                    return Some((sub, end));
                }
            }
        }
        return None;
    }
}

/// `isOverviewGitDiff(args)`.
fn is_overview_git_diff(args: &[u16]) -> bool {
    let t = crate::util::js::js_trim(args);
    if t.is_empty() {
        return true;
    }
    let tokens: Vec<&[u16]> = t
        .split(|u| is_js_space(*u))
        .filter(|s| !s.is_empty())
        .collect();
    let dashdash = [u16::from(b'-'), u16::from(b'-')];
    if let Some(p) = tokens.iter().position(|t| *t == dashdash) {
        if p < tokens.len() - 1 {
            return false;
        }
    }
    tokens
        .iter()
        .all(|t| t.first() == Some(&u16::from(b'-')) || is_git_revision(t))
}

fn is_git_revision(t: &[u16]) -> bool {
    let s = String::from_utf16_lossy(t);
    if s == "HEAD" || s == "@" {
        return true;
    }
    // /^(?:HEAD|@)(?:[~^]\d*)+$/
    let rest = s.strip_prefix("HEAD").or_else(|| s.strip_prefix('@'));
    if let Some(r) = rest {
        if !r.is_empty()
            && r.starts_with(['~', '^'])
            && r.chars()
                .all(|c| c == '~' || c == '^' || c.is_ascii_digit())
        {
            return true;
        }
    }
    // /^[0-9a-f]{7,40}$/i
    if (7..=40).contains(&t.len())
        && t.iter()
            .all(|u| *u < 0x80 && (*u as u8).is_ascii_hexdigit())
    {
        return true;
    }
    // /^[^\s]+\.{2,3}[^\s]+$/ on a whitespace-free token: two dots after at
    // least one unit with at least one unit after them.
    (1..t.len().saturating_sub(2)).any(|i| t[i] == u16::from(b'.') && t[i + 1] == u16::from(b'.'))
}

// ---- the family ----

/// The `qwen` family.
pub struct Qwen;

impl Family for Qwen {
    fn name(&self) -> &'static str {
        "qwen"
    }
    fn about(&self) -> &'static str {
        "Qwen Code LoopDetectionService (QwenLM/qwen-code @00aa71b4): always-on identical calls, git-inspection streak and per-turn call cap; optional (skipLoopDetection off) global duplicates, ABAB cycles, read churn, same-name streak, thoughts and content chanting"
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            POLICY_SPEC,
            ParamSpec::int("tool_call_threshold", 1, 100_000, "calls", "always on: identical consecutive calls (same repeat key) that make a loop (TOOL_CALL_LOOP_THRESHOLD); for stateful read tools only when their recorded results did not change. Key: canonicalToolName + sorted-key JSON.stringify of the arguments (utils/tool-call-repeat-key.ts)", SRC),
            ParamSpec::int("shell_stagnation_threshold", 1, 100_000, "calls", "always on: consecutive run_shell_command calls whose every chained segment is git status / ls-files / an overview git diff (SHELL_COMMAND_STAGNATION_THRESHOLD = STAGNATION_THRESHOLD)", SRC),
            ParamSpec::int("max_tool_calls_per_turn", 0, 1_000_000_000, "calls", "always on: per-prompt tool-call cap (DEFAULT_MAX_TOOL_CALLS_PER_TURN, setting model.maxToolCallsPerTurn; 0 = disabled); past it the default cap halts only when some call repeated global_duplicate_threshold times", SRC),
            ParamSpec::bool("max_tool_calls_explicit", "the cap was set explicitly (isMaxToolCallsPerTurnExplicit): the call past it always halts", SRC),
            ParamSpec::int("cap_hard_multiplier", 1, 1_000_000, "x cap", "the adaptive cap always halts past cap x this (ADAPTIVE_CAP_HARD_MULTIPLIER)", SRC),
            ParamSpec::bool("skip_loop_detection", "skipLoopDetection: true keeps the heuristic tier off (the default since QwenLM/qwen-code#2092, 2026-03-04)", SRC),
            ParamSpec::bool("global_duplicate_check", "heuristic: run checkGlobalDuplicate and its result-time twin for stateful reads (looptune switch; on in Qwen Code)", SRC),
            ParamSpec::int("global_duplicate_threshold", 1, 100_000, "calls", "heuristic: occurrences of one call anywhere in the prompt that make a loop (GLOBAL_DUPLICATE_THRESHOLD); also the adaptive cap's stuck signal, which is always on", SRC),
            ParamSpec::bool("alternating_check", "heuristic: run checkAlternatingPattern (looptune switch)", SRC),
            ParamSpec::int("alternating_cycles", 1, 10_000, "cycles", "heuristic: A/B cycles in a row that make a loop (ALTERNATING_PATTERN_CYCLES; window 2 x this)", SRC),
            ParamSpec::bool("read_loop_check", "heuristic: run checkReadFileLoop (looptune switch)", SRC),
            ParamSpec::int("read_threshold", 1, 100_000, "calls", "heuristic: read-like calls among the last read_window calls that make a loop, once a non-read tool was seen (FILE_READ_THRESHOLD)", SRC),
            ParamSpec::int("read_window", 1, 100_000, "calls", "heuristic: calls kept for the read-like count (FILE_READ_WINDOW)", SRC),
            ParamSpec::bool("stagnation_check", "heuristic: run checkActionStagnation (looptune switch)", SRC),
            ParamSpec::int("stagnation_threshold", 1, 100_000, "calls", "heuristic: consecutive calls of one tool name, any arguments, that make a loop (STAGNATION_THRESHOLD)", SRC),
            ParamSpec::bool("thought_check", "heuristic: run checkRepetitiveThoughts (looptune switch)", SRC),
            ParamSpec::int("thought_threshold", 1, 100_000, "thoughts", "heuristic: identical consecutive thoughts (lowercased subject | first 200 units of the description) that make a loop (THOUGHT_REPEAT_THRESHOLD)", SRC),
            ParamSpec::int("thought_history", 1, 100_000, "thoughts", "heuristic: thoughts kept (MAX_THOUGHT_HISTORY)", SRC),
            ParamSpec::bool("content_check", "heuristic: run checkContentLoop (looptune switch)", SRC),
            ParamSpec::int("content_chunk_size", 1, 100_000, "UTF-16 units", "heuristic: content window (CONTENT_CHUNK_SIZE)", SRC),
            ParamSpec::int("content_loop_threshold", 1, 100_000, "windows", "heuristic: occurrences of one window that make a loop (CONTENT_LOOP_THRESHOLD)", SRC),
            ParamSpec::int("content_max_history", 1, 100_000_000, "UTF-16 units", "heuristic: content history kept (MAX_HISTORY_LENGTH)", SRC),
            ParamSpec::float("content_max_distance_factor", 0.0, 1_000_000.0, "x chunk size", "heuristic: largest average gap between the last occurrences, as a multiple of the window (isLoopDetectedForChunk: 1.5)", SRC),
            ParamSpec::bool("periodic_check", "heuristic: PR #9668's long-period rule beside the clustered one (isPeriodicChunkRepetition): a run of equally spaced occurrences of one window whose span repeats with that stride (looptune switch; absent before the PR)", SRC_9668),
            ParamSpec::int("periodic_occurrences", 2, 100_000, "windows", "heuristic: equally spaced occurrences of one window that make a long-period chant when their span is periodic (PERIODIC_OCCURRENCES_REQUIRED)", SRC_9668),
            ParamSpec::int("periodic_truncated_occurrences", 2, 100_000, "windows", "heuristic: a shorter run accepted once the history is full, if the whole history is periodic with its stride (PERIODIC_MIN_TRUNCATED_OCCURRENCES)", SRC_9668),
            ParamSpec::int("periodic_min_region", 0, 100_000_000, "UTF-16 units", "heuristic: shortest verified periodic span that halts (MIN_PERIODIC_REGION_LENGTH)", SRC_9668),
            ParamSpec::bool("reasoning_content", "heuristic: a thought's text (subject and description joined by a space) also feeds the content history, without markdown resets or the code-block state (PR #9668, checkReasoningContentLoop; needs content_check)", SRC_9668),
            ParamSpec::list("stateful_read_tools", "names", "tools whose identical calls count only with unchanged results (STATEFUL_READ_TOOLS)", SRC),
            ParamSpec::list("read_like_tools", "names", "exact read-like tool names (READ_LIKE_TOOL_NAMES)", SRC),
            ParamSpec::list("read_like_prefixes", "names", "read-like name prefixes (READ_LIKE_NAME_PREFIXES)", SRC),
        ]
    }
    fn profiles(&self) -> Vec<Profile> {
        vec![
            Profile {
                name: "qwen",
                about: "Qwen Code @00aa71b4 as shipped: skipLoopDetection true, so only the always-on guards (5 identical calls, git-inspection streak of 8, per-turn cap 100 soft / 1000 hard); a detection halts the turn",
                values: vec![
                    (POLICY, ParamValue::word("stop")),
                    ("tool_call_threshold", ParamValue::Int(5)),
                    ("shell_stagnation_threshold", ParamValue::Int(8)),
                    ("max_tool_calls_per_turn", ParamValue::Int(100)),
                    ("max_tool_calls_explicit", ParamValue::Bool(false)),
                    ("cap_hard_multiplier", ParamValue::Int(10)),
                    ("skip_loop_detection", ParamValue::Bool(true)),
                    ("global_duplicate_check", ParamValue::Bool(true)),
                    ("global_duplicate_threshold", ParamValue::Int(6)),
                    ("alternating_check", ParamValue::Bool(true)),
                    ("alternating_cycles", ParamValue::Int(3)),
                    ("read_loop_check", ParamValue::Bool(true)),
                    ("read_threshold", ParamValue::Int(8)),
                    ("read_window", ParamValue::Int(15)),
                    ("stagnation_check", ParamValue::Bool(true)),
                    ("stagnation_threshold", ParamValue::Int(8)),
                    ("thought_check", ParamValue::Bool(true)),
                    ("thought_threshold", ParamValue::Int(3)),
                    ("thought_history", ParamValue::Int(50)),
                    ("content_check", ParamValue::Bool(true)),
                    ("content_chunk_size", ParamValue::Int(50)),
                    ("content_loop_threshold", ParamValue::Int(10)),
                    ("content_max_history", ParamValue::Int(1000)),
                    ("content_max_distance_factor", ParamValue::Float(1.5)),
                    ("periodic_check", ParamValue::Bool(false)),
                    ("periodic_occurrences", ParamValue::Int(5)),
                    ("periodic_truncated_occurrences", ParamValue::Int(3)),
                    ("periodic_min_region", ParamValue::Int(1000)),
                    ("reasoning_content", ParamValue::Bool(false)),
                    ("stateful_read_tools", ParamValue::words(&["task_list"])),
                    (
                        "read_like_tools",
                        ParamValue::words(&["read_file", "read_many_files", "list_directory", "zoom_image"]),
                    ),
                    ("read_like_prefixes", ParamValue::words(&["read_", "list_"])),
                ],
            },
            Profile {
                name: "qwen-all",
                about: "Qwen Code @00aa71b4 with skipLoopDetection false: the always-on guards plus global duplicates (6), ABAB cycles (3), read-like 8 of 15, same-name streak 8, thoughts 3, content chanting 10 x 50 units within 1.5 x 50 on a 1000-unit history",
                values: vec![("skip_loop_detection", ParamValue::Bool(false))],
            },
            Profile {
                name: "qwen-all-2026-08",
                about: "qwen-all after PR #9668 (2026-08-21): a 4000-unit content history, the long-period rule (5 equally spaced occurrences over a periodic span of 1000 units or more; 3 once the history is full) and thought text fed to the content check. With skipLoopDetection on, as shipped, the PR changes nothing: that is profile qwen",
                values: vec![
                    ("skip_loop_detection", ParamValue::Bool(false)),
                    ("content_max_history", ParamValue::Int(4000)),
                    ("periodic_check", ParamValue::Bool(true)),
                    ("reasoning_content", ParamValue::Bool(true)),
                ],
            },
        ]
    }
    fn checks(&self, params: &ParamSet) -> Result<Vec<Box<dyn Check>>> {
        Ok(vec![Box::new(QwenCheck {
            settings: QwenSettings::read(&Params::new(self.name(), params))?,
        })])
    }
}

struct QwenCheck {
    settings: QwenSettings,
}

/// A tool result as the service fingerprints it: the `functionResponse`
/// Qwen Code builds holds the output (or the error), so results are equal
/// exactly when both are.
fn fingerprint(output: Option<&str>, error: Option<bool>) -> String {
    let tag = if error == Some(true) {
        "error"
    } else {
        "output"
    };
    format!("{tag}:{}", output.unwrap_or(""))
}

impl Check for QwenCheck {
    fn name(&self) -> &'static str {
        "qwen.service"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.settings
    }

    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        let keys = session.shared("qwen.repeat_keys", RepeatKeys::of);
        each_rule(&session.session, limit, &mut self.rule(Some(keys)))
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(RecordStream::boxed(self.rule(None)))
    }
}

impl QwenCheck {
    /// The service over canonical records; `keys`, the session's repeat
    /// keys made once for every configuration (none when fed live: each
    /// call's key is written as it comes).
    fn rule(&self, keys: Option<Arc<RepeatKeys>>) -> QwenRule {
        let mut svc = QwenService::new(self.settings.clone());
        svc.keys = keys;
        QwenRule {
            svc,
            calls: Unanswered::default(),
            streaming: false,
        }
    }
}

/// The service driven by canonical records, one at a time. Its state is one
/// prompt's (`reset` at each): the service's, plus the prompt's calls not
/// yet answered, each by its record's index (a result reads the call's name
/// and arguments there).
struct QwenRule {
    svc: QwenService,
    calls: Unanswered<usize>,
    /// A model response is streaming: its Finished comes before the next
    /// turn, user message or tool result.
    streaming: bool,
}

impl RecordRule for QwenRule {
    fn visit(&mut self, at: At<'_>, found: &mut Found<'_>) {
        let session = found.session();
        let e = at.event;
        let svc = &mut self.svc;
        if at.new_prompt {
            svc.reset();
            self.calls = Unanswered::default();
            self.streaming = false;
        }
        let ends_stream =
            e.starts_turn || matches!(e.record, Record::User { .. } | Record::ToolResult { .. });
        if self.streaming && ends_stream {
            svc.client_check(QwenEvent::Finished);
            self.streaming = false;
        }
        // Sticky: nothing reaches the service until the next prompt's reset.
        if svc.loop_detected() {
            return;
        }
        let mut answered = None;
        match &e.record {
            Record::ToolCall { name, args, id } => {
                self.streaming = true;
                self.calls.push(id.as_deref(), name, at.i);
                svc.client_check(QwenEvent::ToolCall { name, args });
            }
            Record::Content { text } => {
                self.streaming = true;
                svc.client_check(QwenEvent::Content(text));
            }
            Record::Thought { text } => {
                self.streaming = true;
                let (subject, description) = parse_thought(text);
                svc.client_check(QwenEvent::Thought {
                    subject: &subject,
                    description: &description,
                });
            }
            Record::ToolResult {
                id,
                name,
                output,
                error,
            } => {
                let call = self.calls.answer(id.as_deref(), name.as_deref());
                if let Some(Record::ToolCall { name, args, .. }) =
                    call.map(|j| &session.event(j).record)
                {
                    let fp = fingerprint(output.as_deref(), *error);
                    svc.record_tool_result(name, args, &fp);
                    answered = Some(name);
                }
            }
            _ => {}
        }
        if svc.loop_detected() {
            let k = svc.last_loop_type().expect("set with the flag");
            let detail = match (&e.record, answered) {
                (Record::ToolCall { name, .. }, _) => format!("{k}: {name}"),
                (_, Some(call)) => format!("{k}: result of {call}"),
                _ => k.to_string(),
            };
            found.push(at.i, k, at.prompts, detail);
        }
    }
    fn keeps_from(&self) -> usize {
        // A result reads its call's record (calls are pushed in order);
        // once a loop is detected nothing is read until the next prompt
        // forgets the calls.
        match self.svc.loop_detected() {
            true => usize::MAX,
            false => self.calls.oldest().copied().unwrap_or(usize::MAX),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Vec<u16> {
        utf16(s)
    }

    #[test]
    fn fixed_markdown_patterns() {
        assert!(has_list_item(&u("- Dash item")));
        assert!(has_list_item(&u("text\n  * star")));
        assert!(has_list_item(&u("\n42. Another")));
        assert!(!has_list_item(&u("-dash")));
        assert!(is_divider(&u("-----")));
        assert!(is_divider(&u("╭─╮")));
        assert!(!is_divider(&u("SELECT")));
        assert!(!is_divider(&u("12345")));
        assert!(!is_divider(&u(">>>")));
        assert!(!is_divider(&u("")));
    }

    #[test]
    fn git_inspection_classifier() {
        for c in [
            "git status --short",
            "git status --short && git diff --stat",
            "git diff --name-only HEAD",
            "git -C . status --short",
            "git --no-pager diff --stat",
            "git ls-files --modified",
            "GIT STATUS",
            "git diff HEAD~1..HEAD",
            "git diff abc1234",
            "git diff --stat --",
        ] {
            assert!(is_git_overview_inspection(c), "{c}");
        }
        for c in [
            "git add a && git status",
            "git status && ls",
            "git diff src/main.rs",
            "git diff -- src/main.rs",
            "git statusx",
            "git --no-pagerx status",
            "git log",
            "",
            " ; ",
        ] {
            assert!(!is_git_overview_inspection(c), "{c}");
        }
    }

    #[test]
    fn thought_parsing() {
        assert_eq!(
            parse_thought("**Plan** then do it "),
            ("Plan".into(), "then do it".into())
        );
        assert_eq!(parse_thought("a **b"), (String::new(), "a **b".into()));
    }

    #[test]
    fn aliases_key_alike() {
        let a = Map::new();
        assert_eq!(repeat_key("replace", &a), repeat_key("edit", &a));
        let x: Map<String, Value> = serde_json::from_str(r#"{"a":1,"b":2}"#).unwrap();
        let y: Map<String, Value> = serde_json::from_str(r#"{"b":2,"a":1.0}"#).unwrap();
        assert_eq!(repeat_key("t", &x), repeat_key("t", &y));
    }
}
