//! OpenHands' `StuckDetector`: V0 (`openhands/controller/stuck.py`, headless,
//! driven per event as peer-mappings section 1 says) and the V1 SDK
//! (`openhands/sdk/conversation/stuck_detector.py`) as a profile.

use super::common::{each_text, last_contents, py_eq, At, Found, TextRule, TextStream, Unanswered};
use crate::detect::{
    Check, Detection, Family, ParamSet, ParamSpec, ParamValue, Params, Prepared, Profile, Stream,
    POLICY, POLICY_SPEC,
};
use crate::error::Result;
use crate::event::{Event, Record, Session};
use serde_json::{Map, Value};
use std::borrow::Borrow;
use std::collections::HashMap;
use std::sync::Arc;

const SRC_V0: &str =
    "OpenHands/OpenHands openhands/controller/stuck.py @d6fab190bf (blob 092be02efe, last changed 17e32af6)";
const SRC_V1: &str =
    "OpenHands/software-agent-sdk openhands-sdk/openhands/sdk/conversation/stuck_detector.py @1c2e6b5183";
const SRC_V1_NUDGE: &str =
    "OpenHands/software-agent-sdk openhands-sdk/openhands/sdk/conversation/stuck_detector.py @611629e6 (c8a65f0d, #4332), local_conversation.py _check_stuck_or_nudge";

/// The `openhands` family.
pub struct OpenHands;

impl Family for OpenHands {
    fn name(&self) -> &'static str {
        "openhands"
    }
    fn about(&self) -> &'static str {
        "OpenHands StuckDetector: repeated action/observation (4), action/error (3), monologue (3), alternating pattern (6), condensation loop"
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            POLICY_SPEC,
            ParamSpec::choice(
                "version",
                &["v0", "v1"],
                "v0: the controller's StuckDetector with dataclass equality; v1: the SDK's, over the last events after the last user message",
                "looptune (OpenHands V0 vs software-agent-sdk)",
            ),
            ParamSpec::bool(
                "headless",
                "v0: is_stuck(headless_mode): true checks the whole history, false only what follows the last user message",
                SRC_V0,
            ),
            ParamSpec::int(
                "action_observation",
                1,
                1000,
                "pairs",
                "v1: identical actions and identical observations that make a loop (V0 fixes 4)",
                SRC_V1,
            ),
            ParamSpec::int(
                "action_error",
                1,
                1000,
                "pairs",
                "v1: identical actions all answered by errors (V0 fixes 3)",
                SRC_V1,
            ),
            ParamSpec::int(
                "monologue",
                1,
                1000,
                "messages",
                "v1: consecutive agent messages (V0 fixes 3 equal ones)",
                SRC_V1,
            ),
            ParamSpec::int(
                "alternating_pattern",
                3,
                1000,
                "events",
                "v1: actions and observations compared two apart (V0 fixes 6)",
                SRC_V1,
            ),
            ParamSpec::int(
                "scan_events",
                1,
                1_000_000,
                "events",
                "v1: only the last events are scanned (MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION)",
                SRC_V1,
            ),
            ParamSpec::choice(
                "check_at",
                &["event", "step"],
                "v1: when the detector looks: after every event, or once per agent step as the SDK's run loop does (before each agent.step(), not after a step that finished the run); v0 always per event",
                "OpenHands/software-agent-sdk openhands-sdk/openhands/sdk/conversation/impl/local_conversation.py run()",
            ),
            ParamSpec::bool(
                "action_error_nudge",
                "v1: the 2026-08 rule: a streak of exactly action_error same actions with errors nudges once (a detection, which warns), the stop needs one more",
                SRC_V1_NUDGE,
            ),
        ]
    }
    fn profiles(&self) -> Vec<Profile> {
        vec![
            Profile {
                name: "openhands-v0",
                about: "OpenHands V0 stuck.py @d6fab190bf (2025-11), headless: 4 equal action/observation pairs, 3 equal actions with errors, 3 equal agent messages, ABABAB over 6, 10 condensations",
                values: vec![
                    (POLICY, ParamValue::word("stop")),
                    ("version", ParamValue::word("v0")),
                    ("headless", ParamValue::Bool(true)),
                    ("action_observation", ParamValue::Int(4)),
                    ("action_error", ParamValue::Int(3)),
                    ("monologue", ParamValue::Int(3)),
                    ("alternating_pattern", ParamValue::Int(6)),
                    ("scan_events", ParamValue::Int(20)),
                    ("check_at", ParamValue::word("event")),
                    ("action_error_nudge", ParamValue::Bool(false)),
                ],
            },
            Profile {
                name: "openhands-v1",
                about: "OpenHands software-agent-sdk @1c2e6b5183: StuckDetectionThresholds 4/3/3/6 over the last 20 events after the last user message, checked once per agent step; status STUCK stops the run",
                values: vec![
                    ("version", ParamValue::word("v1")),
                    ("check_at", ParamValue::word("step")),
                ],
            },
            Profile {
                name: "openhands-v1-2026-08",
                about: "OpenHands software-agent-sdk @611629e6 (2026-08, #4332): as openhands-v1, but a streak of 3 same actions with errors nudges (strike 1) and a 4th stops (strike 2); any other stuck pattern stops at once (reported as strikes 1 and 2 at the same event). Policy warn:1",
                values: vec![
                    (POLICY, ParamValue::word("warn:1")),
                    ("version", ParamValue::word("v1")),
                    ("check_at", ParamValue::word("step")),
                    ("action_error_nudge", ParamValue::Bool(true)),
                ],
            },
        ]
    }
    fn checks(&self, params: &ParamSet) -> Result<Vec<Box<dyn Check>>> {
        let p = Params::new(self.name(), params);
        let v0 = p.choice("version", &[("v0", true), ("v1", false)])?;
        Ok(vec![if v0 {
            Box::new(V0Check {
                s: V0Settings {
                    headless: p.get("headless")?,
                },
            }) as Box<dyn Check>
        } else {
            Box::new(V1Check {
                th: Thresholds {
                    action_observation: p.get("action_observation")?,
                    action_error: p.get("action_error")?,
                    monologue: p.get("monologue")?,
                    alternating_pattern: p.get("alternating_pattern")?,
                    scan: p.get("scan_events")?,
                    nudge: p.get("action_error_nudge")?,
                    per_step: p.choice("check_at", &[("event", false), ("step", true)])?,
                },
            })
        }])
    }
}

// ---------------------------------------------------------------------------
// Canonical records -> OpenHands events (peer-mappings 1, "Event mapping")
// ---------------------------------------------------------------------------

/// A tool call as the mapping sees it.
#[derive(Debug, Clone)]
struct Call {
    name: String,
    /// Shared by the call's event, its waiting entry and its result's event.
    args: Arc<Value>,
    /// `Some(command)` when it became a `CmdRunAction`.
    shell: Option<String>,
}

/// One event the mapping gives, before it becomes a V0 or V1 event.
#[derive(Debug, Clone)]
enum Mapped {
    User(String),
    AgentMessage(String),
    Call {
        call: Call,
        thought: String,
    },
    Result {
        call: Option<Call>,
        name: Option<String>,
        output: String,
        error: bool,
    },
}

/// Whether a tool name is a shell tool (`/shell|bash|exec|command|terminal|cmd/i`).
fn shell_name(name: &str) -> bool {
    // Python's IGNORECASE also folds U+017F to s and U+212A to k.
    let folded: String = name
        .chars()
        .map(|c| match c {
            '\u{17f}' => 's',
            '\u{212a}' => 'k',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    ["shell", "bash", "exec", "command", "terminal", "cmd"]
        .iter()
        .any(|w| folded.contains(w))
}

/// Maps canonical records to OpenHands events one record at a time. The
/// one look ahead the mapping needs (whether a `content` record is the last
/// of a turn without calls, whose text becomes one agent message there) is
/// given with the record ([`last_contents`]; live, [`super::common::LiveText`]).
#[derive(Debug, Default, Clone)]
struct Mapper {
    /// Text of the current turn before its first call (the first action's thought).
    before_call: String,
    seen_call: bool,
    cur_turn: Option<u32>,
    pending: Unanswered<Call>,
}

impl Mapper {
    /// Record `e`; `message` is its turn's text when it is the last
    /// `content` record of a turn without calls.
    fn map(&mut self, e: &Event, message: Option<&str>) -> Option<Mapped> {
        if self.cur_turn != Some(e.turn) {
            self.cur_turn = Some(e.turn);
            self.before_call.clear();
            self.seen_call = false;
        }
        match &e.record {
            Record::User { text, .. } => Some(Mapped::User(text.clone())),
            Record::Content { text: x } => {
                // Text before a turn's first call is that call's thought
                // (in a turn without calls it is never read).
                if !self.seen_call {
                    self.before_call.push_str(x);
                }
                message.map(|t| Mapped::AgentMessage(t.to_string()))
            }
            Record::ToolCall { name, args, id } => {
                let thought = if self.seen_call {
                    String::new()
                } else {
                    std::mem::take(&mut self.before_call)
                };
                self.seen_call = true;
                let shell = match args.get("command") {
                    Some(Value::String(c)) if shell_name(name) => Some(c.clone()),
                    _ => None,
                };
                let call = Call {
                    name: name.clone(),
                    args: Arc::new(Value::Object((**args).clone())),
                    shell,
                };
                self.pending.push(id.as_deref(), name, call.clone());
                Some(Mapped::Call { call, thought })
            }
            Record::ToolResult {
                id,
                name,
                output,
                error,
            } => {
                let call = self.pending.answer(id.as_deref(), name.as_deref());
                Some(Mapped::Result {
                    call,
                    name: name.clone(),
                    output: output.clone().unwrap_or_default(),
                    error: *error == Some(true),
                })
            }
            _ => None,
        }
    }
}

/// The agent messages of a session by record index (made once per session).
fn messages(s: &Session) -> HashMap<usize, String> {
    last_contents(s, true)
}

// ---------------------------------------------------------------------------
// V0
// ---------------------------------------------------------------------------

/// Who sent a `MessageAction`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The user.
    User,
    /// The agent.
    Agent,
}

/// The V0 events the detector distinguishes, with their dataclass fields.
#[derive(Debug, Clone, PartialEq)]
#[allow(dead_code)] // the original's API: some of it only its ported tests read, some nothing yet
pub enum OhEvent {
    /// `MessageAction` (source is not a dataclass field).
    Message {
        /// Sender (`None` when unset).
        source: Option<Source>,
        /// Text.
        content: String,
        /// `wait_for_response`.
        wait_for_response: bool,
    },
    /// `CmdRunAction`.
    CmdRun {
        /// Command.
        command: String,
        /// Thought.
        thought: String,
    },
    /// `IPythonRunCellAction`.
    IPythonRunCell {
        /// Code.
        code: String,
        /// Thought.
        thought: String,
    },
    /// `FileReadAction`.
    FileRead {
        /// Path.
        path: String,
    },
    /// `MCPAction`, OpenHands' generic named tool call.
    Mcp {
        /// Tool name.
        name: String,
        /// Arguments (`json.loads`).
        arguments: Arc<Value>,
        /// Thought.
        thought: String,
    },
    /// `NullAction`.
    NullAction,
    /// `CmdOutputObservation`.
    CmdOutput {
        /// Command.
        command: String,
        /// Exit code.
        exit_code: i64,
        /// Output text (ignored by the detector).
        content: String,
    },
    /// `IPythonRunCellObservation`.
    IPythonOutput {
        /// Output text.
        content: String,
        /// Code.
        code: String,
    },
    /// `FileReadObservation`.
    FileReadOutput {
        /// Content.
        content: String,
        /// Path.
        path: String,
    },
    /// `ErrorObservation`.
    Error {
        /// Text.
        content: String,
    },
    /// `MCPObservation`.
    McpOutput {
        /// Output text.
        content: String,
        /// Tool name.
        name: String,
        /// Arguments.
        arguments: Arc<Value>,
    },
    /// `AgentCondensationObservation`.
    Condensation {
        /// Text.
        content: String,
    },
    /// `NullObservation`.
    NullObservation,
}

impl OhEvent {
    fn is_action(&self) -> bool {
        matches!(
            self,
            OhEvent::Message { .. }
                | OhEvent::CmdRun { .. }
                | OhEvent::IPythonRunCell { .. }
                | OhEvent::FileRead { .. }
                | OhEvent::Mcp { .. }
                | OhEvent::NullAction
        )
    }
    fn filtered_out(&self) -> bool {
        matches!(
            self,
            OhEvent::Message {
                source: Some(Source::User),
                ..
            } | OhEvent::NullAction
                | OhEvent::NullObservation
        )
    }
}

/// Dataclass `==`: same class and equal fields (arguments by Python `==`).
fn dc_eq(a: &OhEvent, b: &OhEvent) -> bool {
    use OhEvent::*;
    match (a, b) {
        (
            Message {
                content: c1,
                wait_for_response: w1,
                ..
            },
            Message {
                content: c2,
                wait_for_response: w2,
                ..
            },
        ) => c1 == c2 && w1 == w2,
        (
            Mcp {
                name: n1,
                arguments: a1,
                thought: t1,
            },
            Mcp {
                name: n2,
                arguments: a2,
                thought: t2,
            },
        ) => n1 == n2 && t1 == t2 && py_eq(a1, a2),
        (
            McpOutput {
                content: c1,
                name: n1,
                arguments: a1,
            },
            McpOutput {
                content: c2,
                name: n2,
                arguments: a2,
            },
        ) => c1 == c2 && n1 == n2 && py_eq(a1, a2),
        _ => a == b,
    }
}

/// `_eq_no_pid`: dataclass equality with the detector's two overrides.
pub(crate) fn eq_no_pid(a: &OhEvent, b: &OhEvent) -> bool {
    use OhEvent::*;
    // An event is equal to itself (`analyze` compares the newest with
    // itself first), but for the edit-cell rule, which needs three lines.
    if std::ptr::eq(a, b) && !matches!(a, IPythonRunCell { .. }) {
        return true;
    }
    match (a, b) {
        (IPythonRunCell { code: c1, .. }, IPythonRunCell { code: c2, .. })
            if c1.contains("edit_file_by_replace(") && c2.contains("edit_file_by_replace(") =>
        {
            let l1: Vec<&str> = c1.split('\n').collect();
            let l2: Vec<&str> = c2.split('\n').collect();
            l1.len() > 2 && l1[..3] == l2[..l2.len().min(3)]
        }
        (
            CmdOutput {
                command: c1,
                exit_code: e1,
                ..
            },
            CmdOutput {
                command: c2,
                exit_code: e2,
                ..
            },
        ) => c1 == c2 && e1 == e2,
        _ => dc_eq(a, b),
    }
}

/// What `is_stuck` sets in `stuck_analysis`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))] // the original's API, read by its ported tests
pub struct StuckAnalysis {
    /// `loop_type`.
    pub loop_type: &'static str,
    /// `loop_repeat_times`.
    pub loop_repeat_times: u32,
    /// `loop_start_idx` (index in the filtered history plus the offset).
    pub loop_start_idx: usize,
}

/// Where a loop starts: the first event equal to a given one, or a position.
#[cfg_attr(not(test), allow(dead_code))] // the original's API, read by its ported tests
enum Start {
    FirstEqual(usize),
    At(usize),
}

const SYNTAX_ERRORS: [&str; 3] = [
    "SyntaxError: unterminated string literal (detected at line",
    "SyntaxError: invalid syntax. Perhaps you forgot a comma?",
    "SyntaxError: incomplete input",
];

/// Python `str.strip()`.
fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

fn consistent_line_error(obs: &[&str], msg: &str) -> bool {
    let mut lines_found = Vec::new();
    for content in obs {
        let lines: Vec<&str> = py_strip(content).split('\n').collect();
        if lines.len() < 3 {
            return false;
        }
        let last = &lines[lines.len() - 3..];
        if !(last[1].starts_with("[Jupyter current working directory:")
            && last[2].starts_with("[Jupyter Python interpreter:"))
        {
            return false;
        }
        if last[0].contains(msg) {
            lines_found.push(last[0]);
        }
    }
    lines_found.len() == 3 && lines_found.iter().all(|l| *l == lines_found[0])
}

fn consistent_invalid_syntax(obs: &[&str], msg: &str) -> bool {
    let mut first_lines = Vec::new();
    let mut valid = Vec::new();
    for content in obs {
        let lines: Vec<&str> = py_strip(content).split('\n').collect();
        if lines.len() < 6 {
            return false;
        }
        let line1 = py_strip(lines[0]);
        if !line1.starts_with("Cell In[1], line") {
            return false;
        }
        first_lines.push(line1);
        let n = lines.len();
        if lines[n - 1].starts_with("[Jupyter Python interpreter:")
            && lines[n - 2].starts_with("[Jupyter current working directory:")
            && lines[n - 3].contains(msg)
        {
            valid.push(lines[n - 3]);
        }
    }
    first_lines.iter().all(|l| *l == first_lines[0])
        && valid.len() == 3
        && valid.iter().all(|l| *l == valid[0])
}

/// Where the events `analyze` looks for sit in a filtered history, in
/// order. Kept as events are added, so each call of `analyze` reads the
/// newest few instead of scanning back through the history (once per event,
/// that scan made one long session quadratic: 400k records took 20 s).
#[derive(Debug, Default, Clone)]
struct Positions {
    /// Actions (every event is an action or an observation).
    acts: Vec<usize>,
    /// Observations.
    obs: Vec<usize>,
    /// Messages from the agent.
    agent_msgs: Vec<usize>,
    /// `AgentCondensationObservation`s.
    conds: Vec<usize>,
}

impl Positions {
    /// The positions in a whole filtered history.
    fn of<E: Borrow<OhEvent>>(filtered: &[E]) -> Positions {
        let mut p = Positions::default();
        for (i, e) in filtered.iter().enumerate() {
            p.add(i, e.borrow());
        }
        p
    }

    /// Event `e` added at position `i` (after every position held).
    fn add(&mut self, i: usize, e: &OhEvent) {
        if e.is_action() {
            self.acts.push(i);
        } else {
            self.obs.push(i);
        }
        if matches!(
            e,
            OhEvent::Message {
                source: Some(Source::Agent),
                ..
            }
        ) {
            self.agent_msgs.push(i);
        }
        if matches!(e, OhEvent::Condensation { .. }) {
            self.conds.push(i);
        }
    }

    fn clear(&mut self) {
        self.acts.clear();
        self.obs.clear();
        self.agent_msgs.clear();
        self.conds.clear();
    }

    /// Whether an observation sits strictly between positions `a` and `b`.
    fn observation_between(&self, a: usize, b: usize) -> bool {
        let k = self.obs.partition_point(|&p| p <= a);
        self.obs.get(k).is_some_and(|&p| p < b)
    }
}

/// The newest `n` (at most [`NEWEST`], or fewer) of `positions`, newest
/// first; on the stack (`analyze` runs at every event).
pub(crate) fn newest(positions: &[usize], n: usize) -> Newest {
    let mut out = Newest {
        buf: [0; NEWEST],
        len: 0,
    };
    for &p in positions.iter().rev().take(n.min(NEWEST)) {
        out.buf[out.len] = p;
        out.len += 1;
    }
    out
}

/// The most positions [`newest`] gives (`analyze` reads six at most).
const NEWEST: usize = 6;

pub(crate) struct Newest {
    buf: [usize; NEWEST],
    len: usize,
}

impl std::ops::Deref for Newest {
    type Target = [usize];
    fn deref(&self) -> &[usize] {
        &self.buf[..self.len]
    }
}

/// The scenarios of `is_stuck` on an already filtered history, whose
/// events sit at `pos`.
fn analyze<E: Borrow<OhEvent>>(
    filtered: &[E],
    pos: &Positions,
) -> Option<(&'static str, u32, Start)> {
    let f = |i: usize| filtered[i].borrow();
    let len = filtered.len();
    if len < 3 {
        return None;
    }
    // The newest 4 actions and 4 observations, wherever they are.
    let acts = newest(&pos.acts, 4);
    let obs = newest(&pos.obs, 4);
    // 1. repeating action/observation
    if acts.len() == 4
        && obs.len() == 4
        && acts.iter().all(|&a| eq_no_pid(f(acts[0]), f(a)))
        && obs.iter().all(|&o| eq_no_pid(f(obs[0]), f(o)))
    {
        return Some((
            "repeating_action_observation",
            4,
            Start::FirstEqual(acts[3]),
        ));
    }
    // 2. repeating action/error
    if acts.len() >= 3 && obs.len() >= 3 && acts[..3].iter().all(|&a| eq_no_pid(f(acts[0]), f(a))) {
        let start = Start::FirstEqual(*acts.last().expect("3 or more"));
        if obs[..3]
            .iter()
            .all(|&o| matches!(f(o), OhEvent::Error { .. }))
        {
            return Some(("repeating_action_error", 3, start));
        }
        let cells: Vec<&str> = obs[..3]
            .iter()
            .filter_map(|&o| match f(o) {
                OhEvent::IPythonOutput { content, .. } => Some(content.as_str()),
                _ => None,
            })
            .collect();
        if cells.len() == 3 {
            for msg in SYNTAX_ERRORS {
                let hit = if msg.starts_with(SYNTAX_ERRORS[0]) {
                    consistent_line_error(&cells, msg)
                } else {
                    consistent_invalid_syntax(&cells, msg)
                };
                if hit {
                    return Some(("repeating_action_error", 3, start));
                }
            }
        }
    }
    // 3. monologue: the last 3 agent messages equal, no observation between.
    let msgs = newest(&pos.agent_msgs, 3);
    if msgs.len() == 3 {
        let (first, last) = (msgs[2], msgs[0]);
        if msgs.iter().all(|&m| dc_eq(f(first), f(m))) && !pos.observation_between(first, last) {
            return Some(("monologue", 3, Start::At(first)));
        }
    }
    // 4. alternating pattern over the last six actions and observations
    if len >= 6 {
        let a6 = newest(&pos.acts, 6);
        let o6 = newest(&pos.obs, 6);
        let alt = |v: &[usize]| {
            eq_no_pid(f(v[0]), f(v[2]))
                && eq_no_pid(f(v[0]), f(v[4]))
                && eq_no_pid(f(v[1]), f(v[3]))
                && eq_no_pid(f(v[1]), f(v[5]))
        };
        if a6.len() == 6 && o6.len() == 6 && alt(&a6) && alt(&o6) {
            return Some((
                "repeating_action_observation_pattern",
                3,
                Start::FirstEqual(a6[5]),
            ));
        }
    }
    // 5. condensation loop: among the last 10 condensations, two adjacent ones.
    if len >= 10 && pos.conds.len() >= 10 {
        let last10 = &pos.conds[pos.conds.len() - 10..];
        for w in last10.windows(2) {
            if w[1] == w[0] + 1 {
                return Some(("context_window_error", 2, Start::At(w[0])));
            }
        }
    }
    None
}

/// `StuckDetector.is_stuck(headless_mode)` on a whole history, with the
/// analysis it records (as the original's tests read it).
#[cfg_attr(not(test), allow(dead_code))] // the original's API, read by its ported tests
pub fn is_stuck_v0(history: &[OhEvent], headless: bool) -> Option<StuckAnalysis> {
    let offset = if headless {
        0
    } else {
        history
            .iter()
            .rposition(|e| {
                matches!(
                    e,
                    OhEvent::Message {
                        source: Some(Source::User),
                        ..
                    }
                )
            })
            .map_or(0, |i| i + 1)
    };
    let filtered: Vec<&OhEvent> = history[offset..]
        .iter()
        .filter(|e| !e.filtered_out())
        .collect();
    let (loop_type, times, start) = analyze(&filtered, &Positions::of(&filtered))?;
    let idx = match start {
        // list.index uses plain ==, so it finds the first equal event.
        Start::FirstEqual(i) => filtered
            .iter()
            .position(|e| dc_eq(e, filtered[i]))
            .unwrap_or(i),
        Start::At(i) => i,
    };
    Some(StuckAnalysis {
        loop_type,
        loop_repeat_times: times,
        loop_start_idx: idx + offset,
    })
}

/// The V0 event of a mapped event (its texts and arguments moved, not copied).
fn to_v0(m: Mapped) -> OhEvent {
    match m {
        Mapped::User(text) => OhEvent::Message {
            source: Some(Source::User),
            content: text,
            wait_for_response: false,
        },
        Mapped::AgentMessage(text) => OhEvent::Message {
            source: Some(Source::Agent),
            content: text,
            wait_for_response: true,
        },
        Mapped::Call { call, thought } => match call.shell {
            Some(command) => OhEvent::CmdRun { command, thought },
            None => OhEvent::Mcp {
                name: call.name,
                arguments: call.args,
                thought,
            },
        },
        Mapped::Result {
            call,
            name,
            output,
            error,
        } => match call {
            Some(Call {
                shell: Some(command),
                ..
            }) => OhEvent::CmdOutput {
                command,
                exit_code: if error { 1 } else { 0 },
                content: output,
            },
            _ if error => OhEvent::Error { content: output },
            Some(c) => OhEvent::McpOutput {
                content: output,
                name: c.name,
                arguments: c.args,
            },
            None => OhEvent::McpOutput {
                content: output,
                name: name.unwrap_or_default(),
                arguments: Arc::new(Value::Object(Map::new())),
            },
        },
    }
}

/// What the V0 check reads (its thresholds are fixed).
#[derive(Debug, Clone, PartialEq)]
struct V0Settings {
    headless: bool,
}

struct V0Check {
    s: V0Settings,
}

impl Check for V0Check {
    fn name(&self) -> &'static str {
        "openhands.v0"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }

    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        let s = &session.session;
        let texts = session.shared("openhands.messages", messages);
        each_text(s, limit, &texts, &mut self.rule())
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(TextStream::boxed(self.rule(), true))
    }
}

impl V0Check {
    fn rule(&self) -> V0Rule {
        V0Rule {
            s: self.s.clone(),
            mapper: Mapper::default(),
            filtered: Vec::new(),
            pos: Positions::default(),
            users: 0,
        }
    }
}

/// V0's `is_stuck` after every mapped event.
#[derive(Clone)]
struct V0Rule {
    s: V0Settings,
    mapper: Mapper,
    /// The filtered history, kept as is_stuck would rebuild it each time
    /// (headless: the whole session's).
    filtered: Vec<OhEvent>,
    pos: Positions,
    users: u32,
}

impl TextRule for V0Rule {
    fn visit(&mut self, at: At<'_>, text: Option<&str>, found: &mut Found<'_>) {
        let Some(m) = self.mapper.map(at.event, text) else {
            return;
        };
        let user = matches!(m, Mapped::User(_));
        let ev = to_v0(m);
        if user {
            self.users += 1;
            if !self.s.headless {
                self.filtered.clear();
                self.pos.clear();
            }
        }
        if ev.filtered_out() {
            // Still a call of is_stuck, on an unchanged filtered history.
        } else {
            self.pos.add(self.filtered.len(), &ev);
            self.filtered.push(ev);
        }
        if let Some((kind, _, _)) = analyze(&self.filtered, &self.pos) {
            let prompt = if self.s.headless {
                0
            } else {
                self.users.saturating_sub(1)
            };
            found.push(at.i, kind, prompt, String::from(kind));
        }
    }
}

// ---------------------------------------------------------------------------
// V1 SDK
// ---------------------------------------------------------------------------

/// The V1 SDK events the detector distinguishes.
#[derive(Debug, Clone, PartialEq)]
#[allow(dead_code)] // the original's API: some of it only its ported tests read, some nothing yet
pub enum V1Event {
    /// `MessageEvent` from the user.
    UserMessage(String),
    /// `MessageEvent` from the agent.
    AgentMessage(String),
    /// `ActionEvent`.
    Action {
        /// `tool_name`.
        tool_name: String,
        /// The action's fields (the call's arguments).
        args: Arc<Value>,
        /// `thought` text.
        thought: String,
    },
    /// `ObservationEvent`.
    Observation {
        /// `tool_name`.
        tool_name: String,
        /// The observation's content.
        content: String,
    },
    /// `AgentErrorEvent`.
    AgentError {
        /// `error`.
        error: String,
    },
    /// `CondensationSummaryEvent`.
    CondensationSummary,
    /// `MessageEvent` from the environment (the action-error nudge).
    EnvironmentMessage(String),
}

/// `StuckDetectionThresholds` plus the scan window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// `action_observation` (4).
    pub action_observation: usize,
    /// `action_error` (3).
    pub action_error: usize,
    /// `monologue` (3).
    pub monologue: usize,
    /// `alternating_pattern` (6).
    pub alternating_pattern: usize,
    /// `MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION` (20).
    pub scan: usize,
    /// The 2026-08 action-error rule: nudge at the threshold, stop above it.
    pub nudge: bool,
    /// Check once per agent step (the SDK's run loop) rather than after
    /// every event.
    pub per_step: bool,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds {
            action_observation: 4,
            action_error: 3,
            monologue: 3,
            alternating_pattern: 6,
            scan: 20,
            nudge: false,
            per_step: false,
        }
    }
}

/// `_event_eq`.
fn v1_eq(a: &V1Event, b: &V1Event) -> bool {
    use V1Event::*;
    match (a, b) {
        (
            Action {
                tool_name: n1,
                args: a1,
                thought: t1,
            },
            Action {
                tool_name: n2,
                args: a2,
                thought: t2,
            },
        ) => n1 == n2 && t1 == t2 && py_eq(a1, a2),
        _ => a == b,
    }
}

/// `StuckDetector.is_stuck()` of the SDK: the scenario that fired, by V0's names.
pub fn is_stuck_v1(events: &[V1Event], th: &Thresholds) -> Option<&'static str> {
    let start = events.len().saturating_sub(th.scan);
    let mut ev = &events[start..];
    if let Some(u) = ev
        .iter()
        .rposition(|e| matches!(e, V1Event::UserMessage(_)))
    {
        ev = &ev[u + 1..];
    }
    let min = th.action_observation.min(th.action_error).min(th.monologue);
    if ev.len() < min {
        return None;
    }
    // The 2026-08 rule needs one more pair to tell a fresh streak from one
    // that went on past the nudge.
    let max_needed = th
        .action_observation
        .max(th.action_error + usize::from(th.nudge));
    let is_obs =
        |e: &V1Event| matches!(e, V1Event::Observation { .. } | V1Event::AgentError { .. });
    // Sized once: growing them one event at a time was most of the check.
    let mut acts: Vec<&V1Event> = Vec::with_capacity(max_needed);
    let mut obs: Vec<&V1Event> = Vec::with_capacity(max_needed);
    for e in ev.iter().rev() {
        if matches!(e, V1Event::Action { .. }) && acts.len() < max_needed {
            acts.push(e);
        } else if is_obs(e) && obs.len() < max_needed {
            obs.push(e);
        }
        if acts.len() >= max_needed && obs.len() >= max_needed {
            break;
        }
    }
    let n = th.action_observation;
    if acts.len() >= n
        && obs.len() >= n
        && acts[..n].iter().all(|a| v1_eq(acts[0], a))
        && obs[..n].iter().all(|o| v1_eq(obs[0], o))
    {
        return Some("repeating_action_observation");
    }
    let n = th.action_error;
    if th.nudge {
        if action_error_streak(&acts, &obs) > n {
            return Some("repeating_action_error");
        }
    } else if acts.len() >= n
        && obs.len() >= n
        && acts[..n].iter().all(|a| v1_eq(acts[0], a))
        && obs[..n]
            .iter()
            .all(|o| matches!(o, V1Event::AgentError { .. }))
    {
        return Some("repeating_action_error");
    }
    if ev.len() >= th.monologue {
        let mut count = 0;
        for e in ev.iter().rev() {
            match e {
                V1Event::AgentMessage(_) => count += 1,
                // A message from neither the agent nor the user (the nudge)
                // neither counts nor breaks the run.
                V1Event::CondensationSummary | V1Event::EnvironmentMessage(_) => continue,
                _ => break,
            }
        }
        if count >= th.monologue {
            return Some("monologue");
        }
    }
    let n = th.alternating_pattern;
    if ev.len() >= n {
        let mut a: Vec<&V1Event> = Vec::with_capacity(n);
        let mut o: Vec<&V1Event> = Vec::with_capacity(n);
        for e in ev.iter().rev() {
            if matches!(e, V1Event::Action { .. }) && a.len() < n {
                a.push(e);
            } else if is_obs(e) && o.len() < n {
                o.push(e);
            }
            if a.len() == n && o.len() == n {
                break;
            }
        }
        if a.len() == n
            && o.len() == n
            && (0..n - 2).all(|i| v1_eq(a[i], a[i + 2]))
            && (0..n - 2).all(|i| v1_eq(o[i], o[i + 2]))
        {
            return Some("repeating_action_observation_pattern");
        }
    }
    None
}

/// The 2026-08 `_action_error_streak`: how many of the newest actions, paired
/// newest first with the newest observations, equal the newest action and
/// got an error.
fn action_error_streak(acts: &[&V1Event], obs: &[&V1Event]) -> usize {
    let Some(first) = acts.first() else { return 0 };
    acts.iter()
        .zip(obs)
        .take_while(|(a, o)| v1_eq(first, a) && matches!(o, V1Event::AgentError { .. }))
        .count()
}

/// The 2026-08 `get_action_error_nudge`: whether the trailing streak is
/// exactly `action_error` long, and the position (in `events`) of its newest
/// error, which is nudged only once.
pub fn action_error_nudge(events: &[V1Event], th: &Thresholds) -> Option<usize> {
    let start = events.len().saturating_sub(th.scan);
    let mut from = start;
    if let Some(u) = events[start..]
        .iter()
        .rposition(|e| matches!(e, V1Event::UserMessage(_)))
    {
        from = start + u + 1;
    }
    let need = th.action_error + 1;
    let (mut acts, mut obs): (Vec<&V1Event>, Vec<(usize, &V1Event)>) =
        (Vec::with_capacity(need), Vec::with_capacity(need));
    for (i, e) in events[from..].iter().enumerate().rev() {
        if matches!(e, V1Event::Action { .. }) && acts.len() < need {
            acts.push(e);
        } else if matches!(e, V1Event::Observation { .. } | V1Event::AgentError { .. })
            && obs.len() < need
        {
            obs.push((from + i, e));
        }
        if acts.len() >= need && obs.len() >= need {
            break;
        }
    }
    let o: Vec<&V1Event> = obs.iter().map(|x| x.1).collect();
    (action_error_streak(&acts, &o) == th.action_error).then(|| obs[0].0)
}

/// The V1 event of a mapped event (moved, not copied).
fn to_v1(m: Mapped) -> V1Event {
    match m {
        Mapped::User(t) => V1Event::UserMessage(t),
        Mapped::AgentMessage(t) => V1Event::AgentMessage(t),
        Mapped::Call { call, thought } => V1Event::Action {
            tool_name: call.name,
            args: call.args,
            thought,
        },
        Mapped::Result {
            call,
            name,
            output,
            error,
        } => {
            if error {
                V1Event::AgentError { error: output }
            } else {
                V1Event::Observation {
                    tool_name: call.map(|c| c.name).or(name).unwrap_or_default(),
                    content: output,
                }
            }
        }
    }
}

struct V1Check {
    th: Thresholds,
}

/// A step that finished the run (an agent message without tool calls, or
/// the `finish` tool), whose loop stops before the check.
fn finishes(m: &Mapped) -> bool {
    match m {
        Mapped::AgentMessage(_) => true,
        Mapped::Call { call, .. } => call.name == "finish",
        Mapped::Result { call: Some(c), .. } => c.name == "finish",
        _ => false,
    }
}

impl Check for V1Check {
    fn name(&self) -> &'static str {
        "openhands.v1"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.th
    }

    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        let s = &session.session;
        let texts = session.shared("openhands.messages", messages);
        each_text(s, limit, &texts, &mut self.rule())
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(TextStream::boxed(self.rule(), true))
    }
}

impl V1Check {
    fn rule(&self) -> V1Rule {
        V1Rule {
            th: self.th,
            mapper: Mapper::default(),
            events: Vec::new(),
            dropped: 0,
            last_nudged: None,
            users: 0,
            group: 0,
            nudged: false,
            waiting: None,
        }
    }
}

/// The SDK's detector over the mapped events. Where its run loop checks
/// (`check_at = step`): once per agent step, at the top of the next
/// iteration, i.e. after the last event of a step (the next record starts a
/// turn, or is a user message, or the session ends); not after a step that
/// finished the run ([`finishes`]). An event is checked (or not) once that
/// is known: when a record starting a step comes (checked), or the next
/// mapped event before one (not), or the session ends (checked).
#[derive(Clone)]
struct V1Rule {
    th: Thresholds,
    mapper: Mapper,
    /// The last events (the window and a margin).
    events: Vec<V1Event>,
    /// Events dropped from the front of `events` (ids stay stable).
    dropped: usize,
    last_nudged: Option<usize>,
    users: u32,
    /// With the nudge rule, strikes are counted per nudge: a nudge opens a
    /// group (strike 1), a stop right after it is strike 2; a stop that no
    /// nudge announced is reported twice at its event (strikes 1 and 2) so
    /// that warn:1 stops there, as OpenHands does.
    group: u32,
    nudged: bool,
    /// Per step: the last mapped event, not yet known to end a step.
    waiting: Option<(usize, Mapped)>,
}

impl TextRule for V1Rule {
    fn visit(&mut self, at: At<'_>, text: Option<&str>, found: &mut Found<'_>) {
        let e = at.event;
        if e.starts_turn || matches!(e.record, Record::User { .. }) {
            // The waiting event ended a step: it is checked now.
            self.finish(found);
        }
        let Some(m) = self.mapper.map(e, text) else {
            return;
        };
        if !self.th.per_step {
            self.event(at.i, m, true, found);
            return;
        }
        // The waiting event is followed by another in its step.
        if let Some((j, w)) = self.waiting.take() {
            self.event(j, w, false, found);
        }
        self.waiting = Some((at.i, m));
    }

    fn finish(&mut self, found: &mut Found<'_>) {
        if let Some((j, w)) = self.waiting.take() {
            let check = !finishes(&w);
            self.event(j, w, check, found);
        }
    }

    fn held_from(&self) -> Option<usize> {
        self.waiting.as_ref().map(|w| w.0)
    }
}

impl V1Rule {
    /// Mapped event `m` of record `i`, checked after if `check`.
    fn event(&mut self, i: usize, m: Mapped, check: bool, found: &mut Found<'_>) {
        if matches!(m, Mapped::User(_)) {
            self.users += 1;
        }
        self.events.push(to_v1(m));
        // Only the window matters; keep the history short.
        if self.events.len() > 4 * self.th.scan.max(64) {
            let n = self.events.len() - self.th.scan;
            self.events.drain(..n);
            self.dropped += n;
        }
        if !check {
            return;
        }
        if self.th.nudge {
            if let Some(at) = action_error_nudge(&self.events, &self.th) {
                if self.last_nudged != Some(self.dropped + at) {
                    self.last_nudged = Some(self.dropped + at);
                    self.group += 1;
                    self.nudged = true;
                    found.push(
                        i,
                        "action_error_nudge",
                        self.group,
                        format!(
                            "the same action got an error {} times in a row",
                            self.th.action_error
                        ),
                    );
                    if found.full() {
                        return;
                    }
                    // The nudge is an event of the conversation, and the
                    // stuck check is skipped at this point.
                    self.events
                        .push(V1Event::EnvironmentMessage("nudge".into()));
                    return;
                }
            }
        }
        if let Some(kind) = is_stuck_v1(&self.events, &self.th) {
            let prompt = if self.th.nudge {
                if !self.nudged {
                    self.group += 1;
                    found.push(i, kind, self.group, kind.to_string());
                    if found.full() {
                        return;
                    }
                }
                self.nudged = false;
                self.group
            } else {
                self.users.saturating_sub(1)
            };
            found.push(i, kind, prompt, kind.to_string());
            if self.th.nudge {
                // Going on after a stop starts a new group.
                self.group += 1;
            }
        }
    }
}
