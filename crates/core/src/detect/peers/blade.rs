//! Blade's loop detectors (echoVic/blade-code): the legacy
//! `LoopDetectionService` (profile `blade-legacy`) and the current action
//! stationarity rule (profile `blade-stationarity`), both driven over Blade
//! model turns and runs as peer-mappings section 5 says.

use super::common::{segments, Cutter, Found, Segment, Unanswered};
use crate::detect::{
    Check, Detection, Family, ParamSet, ParamSpec, ParamValue, Params, Policy, Prepared, Profile,
    Stream, POLICY, POLICY_SPEC,
};
use crate::error::{Error, Result};
use crate::event::{Record, Session};
use crate::util::js::{
    lone_surrogate_unit, stringify, stringify_object, stringify_sorted, write_string,
};
use md5::{Digest, Md5};
use serde_json::{Map, Value};
use std::collections::{HashMap, VecDeque};

const SRC_LEGACY: &str =
    "echoVic/blade-code src/agent/LoopDetectionService.ts @b52d9f2bec (blob b61d966797), driven as src/agent/Agent.ts (blob ed8e7819f8)";
const SRC_AGENT: &str = "echoVic/blade-code src/agent/Agent.ts @b52d9f2bec (blob ed8e7819f8)";
const SRC_STATIONARITY: &str =
    "echoVic/blade-code packages/cli/src/agent/loop/actionStationarity.ts @b852126c42 (blob c7311d1a5f)";

/// A recorded judge verdict at or above this confidence stands for the chat
/// model answering "YES" (peer-mappings 5.2, LLM layer).
const JUDGE_YES: f64 = 0.5;

/// The `blade` family.
pub struct Blade;

impl Family for Blade {
    fn name(&self) -> &'static str {
        "blade"
    }
    fn about(&self) -> &'static str {
        "Blade: legacy LoopDetectionService (turn-scaled identical-call threshold, content snapshots, LLM check; warn 3 times, stop at the 4th) or the current action stationarity rule (nudge at 8, halt at 16)"
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            POLICY_SPEC,
            ParamSpec::choice(
                "algorithm",
                &["legacy", "stationarity"],
                "legacy: LoopDetectionService (deleted 2025-12-15); stationarity: the current actionStationarity.ts",
                "looptune (Blade legacy vs HEAD)",
            ),
            ParamSpec::bool(
                "dynamic_threshold",
                "legacy: thresholds scale with the run's turn (tool 3/5/7, content 5/10/15 snapshots at ratio 0.6/0.5/0.4 below 10, below 30, from 30 turns); off: tool_call_threshold, content_repeat_threshold and ratio 0.5",
                SRC_LEGACY,
            ),
            ParamSpec::int(
                "tool_call_threshold",
                1,
                100_000,
                "calls",
                "legacy: identical calls in a row when dynamic thresholds are off (also printed in the reason)",
                SRC_AGENT,
            ),
            ParamSpec::int(
                "content_repeat_threshold",
                1,
                100_000,
                "snapshots",
                "legacy: content snapshots compared when dynamic thresholds are off",
                SRC_AGENT,
            ),
            ParamSpec::list(
                "whitelisted_tools",
                "tool names",
                "legacy: tools left out of the identical-call check",
                SRC_AGENT,
            ),
            ParamSpec::bool(
                "llm_detection",
                "legacy: ask the chat model (the recorded judge verdict, YES at confidence >= 0.5) from turn llm_check_interval; after a NO every later turn is asked (interval min(+5, 15))",
                SRC_LEGACY,
            ),
            ParamSpec::int(
                "llm_check_interval",
                1,
                100_000,
                "turns",
                "legacy: run turn from which the LLM check runs",
                SRC_AGENT,
            ),
            ParamSpec::int(
                "max_warnings",
                0,
                1000,
                "detections",
                "legacy: warnings before the next detection stops the run (Agent.ts 3; service default 2); the same number as policy warn:N, which must agree",
                SRC_AGENT,
            ),
            ParamSpec::int(
                "max_turns_per_run",
                0,
                100_000_000,
                "turns",
                "model turns after which a run ends and the next turn starts a new one (legacy SAFETY_LIMIT 100; 0 = none, as HEAD)",
                SRC_AGENT,
            ),
            ParamSpec::int(
                "nudge_threshold",
                1,
                100_000,
                "turns",
                "stationarity: identical tool turns without progress that give the hidden nudge (ACTION_STATIONARITY_NUDGE_THRESHOLD)",
                SRC_STATIONARITY,
            ),
            ParamSpec::int(
                "halt_threshold",
                1,
                100_000,
                "turns",
                "stationarity: identical tool turns without progress that halt the run (ACTION_STATIONARITY_HALT_THRESHOLD)",
                SRC_STATIONARITY,
            ),
        ]
    }
    fn profiles(&self) -> Vec<Profile> {
        vec![
            Profile {
                name: "blade-legacy",
                about: "Blade LoopDetectionService @b52d9f2bec (2025-12-13) as Agent.ts configures it: dynamic thresholds, LLM layer, no whitelist, maxWarnings 3 (4th detection of a run stops), new service per command, 100-turn runs",
                values: vec![
                    (POLICY, ParamValue::word("warn:3")),
                    ("algorithm", ParamValue::word("legacy")),
                    ("dynamic_threshold", ParamValue::Bool(true)),
                    ("tool_call_threshold", ParamValue::Int(5)),
                    ("content_repeat_threshold", ParamValue::Int(10)),
                    ("whitelisted_tools", ParamValue::words(&[])),
                    ("llm_detection", ParamValue::Bool(true)),
                    ("llm_check_interval", ParamValue::Int(30)),
                    ("max_warnings", ParamValue::Int(3)),
                    ("max_turns_per_run", ParamValue::Int(100)),
                    ("nudge_threshold", ParamValue::Int(8)),
                    ("halt_threshold", ParamValue::Int(16)),
                ],
            },
            Profile {
                name: "blade-legacy-service-default",
                about: "the same service with maxWarnings unset (default 2: the 3rd detection of a run stops)",
                values: vec![
                    (POLICY, ParamValue::word("warn:2")),
                    ("max_warnings", ParamValue::Int(2)),
                ],
            },
            Profile {
                name: "blade-stationarity",
                about: "Blade HEAD @b852126c42 (2026-08-22) actionStationarity.ts: the same tool batch (sorted-key args, TaskOutput by task_id) 8 turns in a row without TaskOutput progress nudges, 16 halts; no turn cap",
                values: vec![
                    (POLICY, ParamValue::word("warn:1")),
                    ("algorithm", ParamValue::word("stationarity")),
                    ("max_turns_per_run", ParamValue::Int(0)),
                ],
            },
        ]
    }
    fn checks(&self, params: &ParamSet) -> Result<Vec<Box<dyn Check>>> {
        let p = Params::new(self.name(), params);
        let max_turns = p.get("max_turns_per_run")?;
        let stationarity = p.choice("algorithm", &[("legacy", false), ("stationarity", true)])?;
        if stationarity {
            return Ok(vec![Box::new(StationarityCheck {
                s: StationaritySettings {
                    nudge: p.get("nudge_threshold")?,
                    halt: p.get("halt_threshold")?,
                    max_turns,
                },
            })]);
        }
        let max_warnings: u32 = p.get("max_warnings")?;
        if let Policy::Warn(n) = p.get(POLICY)? {
            if n != max_warnings {
                return Err(Error::Config(format!(
                    "blade: policy warn:{n} disagrees with max_warnings={max_warnings}; Blade stops at warning max_warnings+1, so set both (or use stop, ask or ignore)"
                )));
            }
        }
        Ok(vec![Box::new(LegacyCheck {
            cfg: LegacyConfig {
                dynamic: p.get("dynamic_threshold")?,
                tool_threshold: p.get("tool_call_threshold")?,
                content_threshold: p.get("content_repeat_threshold")?,
                whitelist: p.get("whitelisted_tools")?,
                llm: p.get("llm_detection")?,
                llm_interval: p.get("llm_check_interval")?,
                max_warnings,
                max_turns,
            },
        })])
    }
}

// ---------------------------------------------------------------------------
// Model turns (peer-mappings 5.1)
// ---------------------------------------------------------------------------

/// One call of a model turn with its Blade `ToolResult`.
struct TurnCall<'a> {
    name: &'a str,
    args: &'a Map<String, Value>,
    /// `success` (an unanswered call counts as a success).
    success: bool,
    /// `llmContent`: the output, or empty.
    output: String,
    answered: bool,
}

/// A model turn: its calls, its text and its judge verdict.
struct Turn<'a> {
    calls: Vec<TurnCall<'a>>,
    text: String,
    judge: Option<f64>,
    /// Record index where its decision is reported (the segment's last record).
    at: usize,
}

fn model_turn<'a>(s: &'a Session, seg: &Segment) -> Turn<'a> {
    let mut calls = Vec::new();
    let mut text = String::new();
    let mut judge = None;
    let mut pending: Unanswered<usize> = Unanswered::default();
    for e in &s.events[seg.start - s.first..seg.end - s.first] {
        match &e.record {
            Record::ToolCall { name, args, id } => {
                pending.push(id.as_deref(), name, calls.len());
                calls.push(TurnCall {
                    name,
                    args,
                    success: true,
                    output: String::new(),
                    answered: false,
                });
            }
            Record::ToolResult {
                id,
                name,
                output,
                error,
            } => {
                if let Some(k) = pending.answer(id.as_deref(), name.as_deref()) {
                    let c = &mut calls[k];
                    c.success = *error != Some(true);
                    c.output = output.clone().unwrap_or_default();
                    c.answered = true;
                }
            }
            Record::Content { text: t } => text.push_str(t),
            Record::Judge { confidence, .. } if judge.is_none() => judge = Some(*confidence),
            _ => {}
        }
    }
    Turn {
        calls,
        text,
        judge,
        at: seg.end - 1,
    }
}

/// A model turn with calls, placed in its run.
struct RunTurn<'a> {
    /// Run ordinal (0-based).
    run: u32,
    /// 1-based turn of the run.
    n: u32,
    /// The text of the `user` record that started the run (first turn only).
    user: Option<&'a str>,
    turn: Turn<'a>,
}

/// Places model turns in runs, one segment at a time: every `user` record,
/// every turn without calls and (if `max_turns` > 0) every `max_turns`-th
/// turn of a run ends the run. Owned (the command's text is kept by record
/// index), so a live stream keeps it between records.
#[derive(Debug, Default)]
struct Runs {
    max_turns: u32,
    in_run: bool,
    run: u32,
    started: bool,
    n: u32,
    /// The `user` record whose text starts the next run.
    user: Option<usize>,
}

impl Runs {
    fn new(max_turns: u32) -> Runs {
        Runs {
            max_turns,
            ..Runs::default()
        }
    }

    /// The segment `seg` of `s`: a model turn with calls, placed in its run.
    fn segment<'a>(&mut self, s: &'a Session, seg: &Segment) -> Option<RunTurn<'a>> {
        if let Record::User { .. } = s.event(seg.start).record {
            self.in_run = false; // every command gets a new Agent
            self.user = Some(seg.start);
        }
        if !seg.model_turn {
            return None;
        }
        let turn = model_turn(s, seg);
        if turn.calls.is_empty() {
            self.in_run = false; // the final answer ends the run
            self.user = None;
            return None;
        }
        let mut user = None;
        if !self.in_run {
            if self.started {
                self.run += 1;
            }
            self.started = true;
            self.in_run = true;
            self.n = 0;
            user = self.user.take().map(|i| match &s.event(i).record {
                Record::User { text, .. } => text.as_str(),
                _ => unreachable!("a user record"),
            });
        }
        self.n += 1;
        if self.max_turns > 0 && self.n >= self.max_turns {
            self.in_run = false;
        }
        Some(RunTurn {
            run: self.run,
            n: self.n,
            user,
            turn,
        })
    }
}

/// The model turns with calls of a session, cut into runs ([`Runs`]).
fn run_turns(s: &Session, max_turns: u32) -> Vec<RunTurn<'_>> {
    let mut runs = Runs::new(max_turns);
    segments(s)
        .iter()
        .filter_map(|seg| runs.segment(s, seg))
        .collect()
}

/// A Blade rule fed the model turns of a session in order.
trait TurnRule: Send + 'static {
    /// What a sweep makes once per session for every configuration (by the
    /// address of a call's arguments); a live feed has none (empty), and
    /// the rule computes what it lacks.
    type Shared: Default + Send;
    /// Read one model turn with calls.
    fn turn(&mut self, s: &Session, rt: &RunTurn<'_>, shared: &Self::Shared, found: &mut Found<'_>);
    /// Whether the rule reads the session's mode.
    fn reads_meta(&self) -> bool {
        false
    }
}

/// A Blade rule fed live: a model turn is decided when the record after it
/// arrives (it ends the segment) or the session ends, and its detection, at
/// the segment's last record, is held until then.
struct BladeStream<R: TurnRule> {
    cut: Cutter,
    runs: Runs,
    rule: R,
    none: R::Shared,
    /// Records fed.
    fed: usize,
}

impl<R: TurnRule> BladeStream<R> {
    fn boxed(max_turns: u32, rule: R) -> Box<dyn Stream> {
        Box::new(BladeStream {
            cut: Cutter::default(),
            runs: Runs::new(max_turns),
            rule,
            none: R::Shared::default(),
            fed: 0,
        })
    }

    fn segment(&mut self, s: &Session, seg: Option<Segment>, out: &mut Vec<Detection>) {
        let Some(seg) = seg else { return };
        if let Some(rt) = self.runs.segment(s, &seg) {
            let mut found = Found::new(s, None);
            self.rule.turn(s, &rt, &self.none, &mut found);
            out.extend(found.into_vec());
        }
    }
}

impl<R: TurnRule> Stream for BladeStream<R> {
    fn feed(&mut self, session: &Session, i: usize, out: &mut Vec<Detection>) {
        self.fed = i + 1;
        let seg = self.cut.feed(i, session.event(i));
        self.segment(session, seg, out);
    }
    fn finish(&mut self, session: &Session, out: &mut Vec<Detection>) {
        let seg = self.cut.close(self.fed);
        self.segment(session, seg, out);
    }
    fn held_from(&self) -> Option<u32> {
        // The open segment's turn is reported at its last record, the last
        // fed so far or a later one.
        self.cut.open_at().map(|_| self.fed as u32)
    }
    fn keeps_from(&self) -> usize {
        // The open segment (read whole when it closes) and the user record
        // whose text starts the next run.
        [self.cut.open_at(), self.runs.user]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(usize::MAX)
    }
    fn reads_meta(&self) -> bool {
        self.rule.reads_meta()
    }
}

// ---------------------------------------------------------------------------
// Legacy LoopDetectionService
// ---------------------------------------------------------------------------

/// What the legacy check reads.
#[derive(Debug, Clone, PartialEq)]
struct LegacyConfig {
    dynamic: bool,
    tool_threshold: usize,
    content_threshold: usize,
    whitelist: Vec<String>,
    llm: bool,
    llm_interval: i64,
    max_warnings: u32,
    /// Model turns per run (0 = no cap).
    max_turns: u32,
}

/// One run's service state plus the Agent's message list (its last 10 contents).
struct LegacyRun {
    messages: VecDeque<String>,
    tools: Vec<(String, [u8; 16])>,
    snapshots: Vec<[u8; 16]>,
    warnings: u32,
    interval: i64,
    /// Room to count the distinct snapshots of a window in, kept.
    scratch: Vec<[u8; 16]>,
}

/// How many distinct digests `recent` holds (`new Set(recent).size`): a
/// sorted copy deduplicated, in room kept from turn to turn (a hash set a
/// turn cost a sixth of the check).
pub(crate) fn distinct(recent: &[[u8; 16]], scratch: &mut Vec<[u8; 16]>) -> usize {
    scratch.clear();
    scratch.extend_from_slice(recent);
    scratch.sort_unstable();
    scratch.dedup();
    scratch.len()
}

fn md5(s: &str) -> [u8; 16] {
    Md5::digest(s.as_bytes()).into()
}

impl LegacyConfig {
    fn tool_threshold(&self, n: u32) -> usize {
        if !self.dynamic {
            self.tool_threshold
        } else if n < 10 {
            3
        } else if n < 30 {
            5
        } else {
            7
        }
    }

    fn content_window(&self, n: u32) -> (usize, f64) {
        if !self.dynamic {
            (self.content_threshold, 0.5)
        } else if n < 10 {
            (5, 0.6)
        } else if n < 30 {
            (10, 0.5)
        } else {
            (15, 0.4)
        }
    }

    /// `detect()`: the first layer that hits, as (type, reason).
    fn detect(
        &self,
        r: &mut LegacyRun,
        n: u32,
        turn: &Turn,
        skip_content: bool,
        judged: &mut Option<bool>,
        digests: &HashMap<usize, [u8; 16]>,
    ) -> Option<(&'static str, String)> {
        // Layer 1: identical calls. The layer returns at its first hit, so
        // the turn's later calls are never recorded.
        let t = self.tool_threshold(n);
        for c in &turn.calls {
            if self.whitelist.iter().any(|w| w == c.name) {
                continue;
            }
            let at = c.args as *const Map<String, Value> as usize;
            let h = match digests.get(&at) {
                Some(h) => *h,
                None => md5(&stringify_object(c.args)),
            };
            r.tools.push((c.name.to_string(), h));
            if r.tools.len() >= t
                && r.tools[r.tools.len() - t..]
                    .iter()
                    .all(|(name, hash)| name == c.name && *hash == h)
            {
                return Some((
                    "tool_call",
                    format!("重复调用工具 {} {}次", c.name, self.tool_threshold),
                ));
            }
        }
        // Layer 2: content snapshots of the last 10 messages.
        if !skip_content {
            // Node hashes the UTF-8 of the text: lone surrogates as U+FFFD.
            // Without them that is the messages' bytes joined by "\n", fed
            // to MD5 as they are (no joined copy, no second scan).
            let lossy = r
                .messages
                .iter()
                .any(|m| !m.is_ascii() && m.chars().any(|c| lone_surrogate_unit(c).is_some()));
            let digest = if lossy {
                let snapshot = r
                    .messages
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join("\n");
                md5(&crate::util::js::node_utf8(&snapshot))
            } else {
                let mut h = Md5::new();
                for (i, m) in r.messages.iter().enumerate() {
                    if i > 0 {
                        h.update(b"\n");
                    }
                    h.update(m.as_bytes());
                }
                h.finalize().into()
            };
            r.snapshots.push(digest);
            let (c, ratio) = self.content_window(n);
            if r.snapshots.len() >= c {
                let recent = &r.snapshots[r.snapshots.len() - c..];
                let distinct = distinct(recent, &mut r.scratch);
                if (distinct as f64) < (recent.len() as f64) * ratio {
                    return Some(("content", "检测到重复内容模式".to_string()));
                }
            }
        }
        // Layer 2.5 (silent responses) cannot fire here: every assistant
        // message the loop appends carries tool calls or text.
        // Layer 3: the LLM check.
        if self.llm && i64::from(n) >= r.interval {
            *judged = Some(turn.judge.is_some());
            if turn.judge.is_some_and(|c| c >= JUDGE_YES) {
                return Some(("llm", "AI判断陷入认知循环".to_string()));
            }
            // A NO (or a failed call) moves the interval to min(+5, 15).
            r.interval = (r.interval + 5).min(15);
        }
        None
    }
}

struct LegacyCheck {
    cfg: LegacyConfig,
}

impl Check for LegacyCheck {
    fn name(&self) -> &'static str {
        "blade.legacy"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.cfg
    }

    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        self.walk(session, limit, &mut Vec::new())
    }

    fn judge_due(&self, session: &Prepared) -> Option<Vec<(u32, bool)>> {
        if !self.cfg.llm {
            return None;
        }
        let mut due = Vec::new();
        self.walk(session, None, &mut due);
        Some(due)
    }

    fn run_and_due(
        &self,
        session: &Prepared,
        limit: Option<usize>,
    ) -> (Vec<Detection>, Option<Vec<(u32, bool)>>) {
        if !self.cfg.llm {
            return (self.run(session, limit), None);
        }
        // One walk: nothing in it depends on the limit but where it stops,
        // so the limited detections are the first ones of the whole walk.
        let mut due = Vec::new();
        let mut found = self.walk(session, None, &mut due);
        if let Some(n) = limit {
            found.truncate(n);
        }
        (found, Some(due))
    }

    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(BladeStream::boxed(self.cfg.max_turns, self.rule()))
    }
}

impl LegacyCheck {
    /// Run the service over the session; `due` gets every LLM check made.
    fn walk(
        &self,
        session: &Prepared,
        limit: Option<usize>,
        due: &mut Vec<(u32, bool)>,
    ) -> Vec<Detection> {
        let s = &session.session;
        let mut found = Found::new(s, limit);
        let mut rule = self.rule();
        let digests = session.shared("blade.args_md5", args_md5);
        for rt in run_turns(s, self.cfg.max_turns) {
            rule.turn(s, &rt, &digests, &mut found);
            due.append(&mut rule.due);
            if found.full() {
                break;
            }
        }
        found.into_vec()
    }

    fn rule(&self) -> LegacyRule {
        LegacyRule {
            cfg: self.cfg.clone(),
            r: None,
            due: Vec::new(),
        }
    }
}

/// The legacy service over the model turns of a session: the state of the
/// run in progress (its last messages, calls and snapshots).
struct LegacyRule {
    cfg: LegacyConfig,
    r: Option<LegacyRun>,
    /// The LLM checks made at the last turn read, as `(event, had a
    /// recorded verdict)`.
    due: Vec<(u32, bool)>,
}

impl TurnRule for LegacyRule {
    type Shared = HashMap<usize, [u8; 16]>;
    fn reads_meta(&self) -> bool {
        true // plan mode
    }
    fn turn(
        &mut self,
        s: &Session,
        rt: &RunTurn<'_>,
        digests: &Self::Shared,
        found: &mut Found<'_>,
    ) {
        self.due.clear();
        let cfg = &self.cfg;
        // Read at the session's end by a replay: see `reads_meta`.
        let plan = s.meta.mode.as_deref() == Some("plan");
        if rt.n == 1 {
            // A new Agent and service: messages start as [system, user].
            let mut messages = VecDeque::new();
            messages.push_back("\u{0}blade system prompt".to_string());
            messages.push_back(match rt.user {
                Some(t) => t.to_string(),
                // Blade never submits an empty command: a text no other message has.
                None => format!("\u{0}command {}", rt.run),
            });
            self.r = Some(LegacyRun {
                messages,
                tools: Vec::new(),
                snapshots: Vec::new(),
                warnings: 0,
                interval: cfg.llm_interval,
                scratch: Vec::new(),
            });
        }
        let run = self.r.as_mut().expect("a run starts at n = 1");
        let t = &rt.turn;
        run.push(t.text.clone());
        for c in &t.calls {
            let content = if c.success || !c.answered {
                c.output.clone()
            } else if c.output.is_empty() {
                "执行失败".to_string()
            } else {
                c.output.clone()
            };
            run.push(content);
        }
        let mut judged = None;
        let hit = cfg.detect(run, rt.n, t, plan, &mut judged, digests);
        run.forget(cfg);
        if let Some(had) = judged {
            self.due.push((t.at as u32 + 1, had));
        }
        if let Some((kind, reason)) = hit {
            run.warnings += 1;
            // The warning goes into the conversation (as when not stopped:
            // a check reports what the detector would do if it went on).
            run.push(format!(
                "⚠️ Loop detected ({}/{}): {reason}\n\nIMPORTANT: Do NOT explain or justify yourself. Instead:\n1. If you were about to call a tool, call it NOW\n2. If you need to do something different, do it NOW\n3. No filler text - action only",
                run.warnings, cfg.max_warnings
            ));
            found.push(t.at, kind, rt.run, reason);
        }
    }
}

/// The MD5 of every call's `JSON.stringify` arguments in a session, by the
/// address of its arguments (stable while the session lives): made once and
/// shared by every configuration of a sweep.
fn args_md5(s: &Session) -> HashMap<usize, [u8; 16]> {
    let mut m = HashMap::new();
    for e in &s.events {
        if let Record::ToolCall { args, .. } = &e.record {
            let at = &**args as *const Map<String, Value> as usize;
            m.entry(at).or_insert_with(|| md5(&stringify_object(args)));
        }
    }
    m
}

impl LegacyRun {
    /// Drop the calls and snapshots no threshold reads any more (only the
    /// last few of each are compared), so a run's state stays bounded.
    fn forget(&mut self, cfg: &LegacyConfig) {
        let keep = cfg.tool_threshold.max(7);
        if self.tools.len() > 2 * keep {
            self.tools.drain(..self.tools.len() - keep);
        }
        let keep = cfg.content_threshold.max(15);
        if self.snapshots.len() > 2 * keep {
            self.snapshots.drain(..self.snapshots.len() - keep);
        }
    }

    /// Append a message; only the last 10 are ever read.
    fn push(&mut self, m: String) {
        self.messages.push_back(m);
        if self.messages.len() > 10 {
            self.messages.pop_front();
        }
    }
}

// ---------------------------------------------------------------------------
// Current ActionStationarity
// ---------------------------------------------------------------------------

/// `buildActionSignature`: each call's name, U+001F and its sorted-key
/// arguments (`TaskOutput` with a string `task_id`: only that), joined by U+001E.
#[cfg_attr(not(test), allow(dead_code))] // the original's API, read by its ported tests
pub fn action_signature<'a>(
    calls: impl IntoIterator<Item = (&'a str, &'a Map<String, Value>)>,
) -> String {
    let mut out = String::new();
    for (i, (name, args)) in calls.into_iter().enumerate() {
        if i > 0 {
            out.push('\u{1e}');
        }
        out.push_str(&call_piece(name, args));
    }
    out
}

/// One call's part of [`action_signature`]: its name, U+001F, its arguments.
fn call_piece(name: &str, args: &Map<String, Value>) -> String {
    let mut out = String::new();
    out.push_str(name);
    out.push('\u{1f}');
    match args.get("task_id") {
        Some(Value::String(id)) if name == "TaskOutput" => {
            out.push_str("{\"task_id\":");
            write_string(&mut out, id);
            out.push('}');
        }
        _ => out.push_str(&stringify_sorted(&Value::Object(args.clone()))),
    }
    out
}

/// Every call's [`call_piece`] in a session, by the address of its
/// arguments (stable while the session lives), with its name: made once and
/// shared by every configuration of a sweep.
fn call_pieces(s: &Session) -> HashMap<usize, (String, String)> {
    let mut m = HashMap::new();
    for e in &s.events {
        if let Record::ToolCall { name, args, .. } = &e.record {
            let at = &**args as *const Map<String, Value> as usize;
            m.entry(at)
                .or_insert_with(|| (name.clone(), call_piece(name, args)));
        }
    }
    m
}

/// `asRecord` of a result's text: JSON-parsed, strings parsed again.
fn as_record(text: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str::<Value>(text).ok()? {
        Value::Object(m) => Some(m),
        Value::String(inner) => as_record(&inner),
        _ => None,
    }
}

/// `taskOutputProgressSignature` of one successful result's text.
pub fn task_progress_signature(output: &str) -> Option<String> {
    let p = as_record(output)?;
    let string = |k: &str| match p.get(k) {
        Some(Value::String(s)) => Some(s.as_str()),
        _ => None,
    };
    let task_id = string("task_id").filter(|s| !s.is_empty())?;
    let status = string("status").filter(|s| !s.is_empty())?;
    // stableSerialize: keys sorted; `undefined` values print as `undefined`.
    let or_null = |k: &str| match p.get(k) {
        None | Some(Value::Null) => "null".to_string(),
        Some(v) => stringify_sorted(v),
    };
    let number = |k: &str| match p.get(k) {
        Some(v @ Value::Number(_)) => stringify(v),
        _ => "undefined".to_string(),
    };
    let quoted = |s: &str| {
        let mut o = String::new();
        write_string(&mut o, s);
        o
    };
    let fields = [
        ("completed_at", or_null("completed_at")),
        ("error", or_null("error")),
        ("exit_code", or_null("exit_code")),
        ("finished_at", or_null("finished_at")),
        ("has_result", p.contains_key("result").to_string()),
        ("progress_updated_at", number("progress_updated_at")),
        ("raw_output_bytes", number("raw_output_bytes")),
        ("signal", or_null("signal")),
        ("status", quoted(status)),
        ("task_id", quoted(task_id)),
        (
            "type",
            string("type").map_or_else(|| "undefined".to_string(), quoted),
        ),
    ];
    let body: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
    Some(format!("{{{}}}", body.join(",")))
}

/// What one observed tool turn gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Nothing to report.
    None,
    /// The nudge (`detected`).
    Detected,
    /// Progress or a changed action after a nudge (`recovered`).
    Recovered,
    /// The halt (`halted`).
    Halted,
}

/// The action stationarity detector of one run.
#[derive(Debug, Clone, Default)]
pub struct Stationarity {
    action: Option<String>,
    progress: Option<String>,
    /// Consecutive identical turns without progress.
    pub run_length: u32,
    nudged: bool,
}

impl Stationarity {
    /// `observeActionStationarity` for a turn with calls, given its action and
    /// progress signatures. Returns the phase and whether the run restarted.
    pub fn observe(
        &mut self,
        action: String,
        progress: Option<String>,
        nudge: u32,
        halt: u32,
    ) -> (Phase, bool) {
        let same = self.action.as_deref() == Some(action.as_str());
        let progressed = matches!((&progress, &self.progress), (Some(a), Some(b)) if a != b);
        let recovered = self.nudged && (!same || progressed);
        let restart = !same || progressed;
        if restart {
            self.run_length = 1;
            self.nudged = false;
        } else {
            self.run_length += 1;
        }
        self.action = Some(action);
        self.progress = progress;
        let phase = if self.run_length >= halt {
            Phase::Halted
        } else if self.run_length >= nudge && !self.nudged {
            self.nudged = true;
            Phase::Detected
        } else if recovered {
            Phase::Recovered
        } else {
            Phase::None
        };
        (phase, restart)
    }

    /// `observe(detector, [], [])`: a turn without calls resets the detector.
    #[cfg_attr(not(test), allow(dead_code))] // the original's API, read by its ported tests
    pub fn reset(&mut self) -> Phase {
        let was = self.nudged;
        *self = Stationarity::default();
        if was {
            Phase::Recovered
        } else {
            Phase::None
        }
    }
}

/// What the stationarity check reads.
#[derive(Debug, Clone, PartialEq)]
struct StationaritySettings {
    nudge: u32,
    halt: u32,
    /// Model turns per run (0 = no cap).
    max_turns: u32,
}

struct StationarityCheck {
    s: StationaritySettings,
}

impl Check for StationarityCheck {
    fn name(&self) -> &'static str {
        "blade.stationarity"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }

    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        let s = &session.session;
        let mut found = Found::new(s, limit);
        let mut rule = self.rule();
        let pieces = session.shared("blade.call_pieces", call_pieces);
        for rt in run_turns(s, self.s.max_turns) {
            rule.turn(s, &rt, &pieces, &mut found);
            if found.full() {
                break;
            }
        }
        found.into_vec()
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(BladeStream::boxed(self.s.max_turns, self.rule()))
    }
}

impl StationarityCheck {
    fn rule(&self) -> StationarityRule {
        StationarityRule {
            s: self.s.clone(),
            det: Stationarity::default(),
            streak: 0,
            first: true,
        }
    }
}

/// The stationarity detector over the model turns of a session.
struct StationarityRule {
    s: StationaritySettings,
    det: Stationarity,
    /// Strikes are counted per run of identical turns: its nudge warns and
    /// its halt stops; a later run of identical turns nudges afresh.
    streak: u32,
    first: bool,
}

impl TurnRule for StationarityRule {
    type Shared = HashMap<usize, (String, String)>;
    fn turn(
        &mut self,
        _s: &Session,
        rt: &RunTurn<'_>,
        pieces: &Self::Shared,
        found: &mut Found<'_>,
    ) {
        if rt.n == 1 {
            self.det = Stationarity::default(); // one detector per run
        }
        let t = &rt.turn;
        let mut action = String::new();
        for (i, c) in t.calls.iter().enumerate() {
            if i > 0 {
                action.push('\u{1e}');
            }
            let at = c.args as *const Map<String, Value> as usize;
            match pieces.get(&at) {
                Some((n, piece)) if n == c.name => action.push_str(piece),
                _ => action.push_str(&call_piece(c.name, c.args)),
            }
        }
        let progress = if t.calls.iter().all(|c| c.name == "TaskOutput") {
            let sigs: Option<Vec<String>> = t
                .calls
                .iter()
                .map(|c| {
                    if c.success {
                        task_progress_signature(&c.output)
                    } else {
                        None
                    }
                })
                .collect();
            sigs.map(|v| v.join("\u{1e}"))
        } else {
            None
        };
        let (phase, restart) = self
            .det
            .observe(action, progress, self.s.nudge, self.s.halt);
        if restart && !self.first {
            self.streak += 1;
        }
        self.first = false;
        let kind = match phase {
            Phase::Detected => "detected",
            Phase::Halted => "halted",
            Phase::None | Phase::Recovered => return,
        };
        let tool = if t.calls.len() == 1 {
            t.calls[0].name.to_string()
        } else {
            format!("{}-tool batch", t.calls.len())
        };
        found.push(
            t.at,
            kind,
            self.streak,
            format!(
                "repeated {tool} without observable progress {} times",
                self.det.run_length
            ),
        );
    }
}
