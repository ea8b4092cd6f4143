//! OpenClaw's tool-loop detection (`src/agents/tool-loop-detection.ts`,
//! driven by `runBeforeToolCallHook` in `pi-tools.before-tool-call.ts`):
//! before every call, `detectToolCallLoop` reads the recorded history (the
//! last 30 calls, those of the current run); a critical verdict refuses the
//! call (the tool throws and nothing is recorded), a warning is logged (once
//! per bucket of 10 counts and warning key) and the call runs. The call is
//! then recorded, and its outcome hashed into the same record once it ends.
//!
//! How canonical records drive it (docs/detector-mappings.md, "OpenClaw"):
//! a run is a prompt (a `user` record that begins one); `scope=session`
//! keeps one history for the whole session (the hook before it passed a run
//! id). A `tool_call` is checked and recorded with its tool name trimmed and
//! lower-cased; its result (matched as the peers match results) is the
//! outcome: `error: true` is a thrown `Error` whose message is the output,
//! anything else a result `{content: [{type: "text", text: output}],
//! details: {}}`. Canonical results carry no `details`, so the exec, poll
//! status and plan-shape normalisations see an empty object: a send-like
//! call's outcome always hashes alike, `update_plan`'s too.
//!
//! Reported: every refused call (tier `block`; kind = the detector), and
//! with `report_warnings` every warning OpenClaw logs (tier `warning`; logs
//! only, the model never sees them). A block does not end the run (the model
//! gets the error and goes on, often with the other half of a ping-pong,
//! #64500): the profile's `stop` counts the session caught at its first block.
//!
//! PR #77555's post-compaction guard (`post_compaction_guard`, profiles
//! `openclaw-2026-05` and `openclaw-off-2026-05`): one per run, armed by a
//! compaction for the next `windowSize` outcomes; the run aborts (tier
//! `abort`, kind `compaction_loop_persisted`) when one (tool, arguments,
//! result) fills the window. The spec has no compaction record, so a
//! compaction is a `session` record after the first that raises
//! `meta.compactions`.

use super::common::{each_rule, At, Found, RecordRule, RecordStream, Unanswered};
use crate::detect::{
    Check, Detection, Family, ParamSet, ParamSpec, ParamValue, Params, Prepared, Profile, Stream,
    POLICY, POLICY_SPEC,
};
use crate::error::Result;
use crate::event::Record;
use crate::util::js::{is_js_space, stringify_sorted};
use rustc_hash::FxHashSet;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

const SRC: &str = "openclaw/openclaw src/agents/tool-loop-detection.ts @00655306d8";
const SRC_HOOK: &str = "openclaw/openclaw src/agents/pi-tools.before-tool-call.ts @004e82d079";
/// PR #77555 (merged 2026-05-04), read in the fork zooqueen/openclaw, whose
/// file is the PR's (the upstream snapshot is over the fetch limit).
const SRC_GUARD: &str = "openclaw/openclaw#77555 src/agents/pi-embedded-runner/post-compaction-loop-guard.ts (read at zooqueen/openclaw @c72180b5), armed and fed in pi-embedded-runner/run.ts";

/// The `openclaw` family.
pub struct OpenClaw;

impl Family for OpenClaw {
    fn name(&self) -> &'static str {
        "openclaw"
    }
    fn about(&self) -> &'static str {
        "OpenClaw detectToolCallLoop (enabled): over the run's last 30 calls, blocks a no-progress repeat at 20 (generic, known polls), a stable ping-pong at 20, an unknown tool at 10 and anything at 30 (global breaker); warnings at 10 are logged"
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            POLICY_SPEC,
            ParamSpec::int("history_size", 1, 100_000, "calls", "calls kept in the session's history, all runs together (TOOL_CALL_HISTORY_SIZE)", SRC),
            ParamSpec::int("warning_threshold", 1, 100_000, "calls", "repeats (or alternating calls) that log a warning (WARNING_THRESHOLD)", SRC),
            ParamSpec::int("critical_threshold", 1, 100_000, "calls", "no-progress repeats, or alternating calls with stable results, that block (CRITICAL_THRESHOLD)", SRC),
            ParamSpec::int("unknown_tool_threshold", 1, 100_000, "calls", "calls in a row of one tool failing as an unknown tool that block (UNKNOWN_TOOL_THRESHOLD)", SRC),
            ParamSpec::int("global_circuit_breaker_threshold", 1, 100_000, "calls", "no-progress repeats that block any tool (GLOBAL_CIRCUIT_BREAKER_THRESHOLD)", SRC),
            ParamSpec::bool("generic_repeat", "the generic repeat detector runs (detectors.genericRepeat)", SRC),
            ParamSpec::bool("known_poll_no_progress", "the polling detector runs for command_status and process poll/log (detectors.knownPollNoProgress)", SRC),
            ParamSpec::bool("ping_pong", "the ping-pong detector runs (detectors.pingPong)", SRC),
            ParamSpec::int("warning_bucket", 1, 100_000, "calls", "a warning is logged when count / this passes the last bucket logged for its key (LOOP_WARNING_BUCKET_SIZE)", SRC_HOOK),
            ParamSpec::choice("scope", &["run", "session"], "history read per run (a prompt) or for the whole session", SRC),
            ParamSpec::bool("report_warnings", "the logged warnings are reported too (they never reach the model)", SRC_HOOK),
            ParamSpec::bool("loop_detection", "detectToolCallLoop runs (tools.loopDetection.enabled; off as OpenClaw ships, on in every profile but openclaw-off-2026-05)", SRC),
            ParamSpec::bool("post_compaction_guard", "PR #77555's post-compaction guard runs (on as shipped from 2026-05-04 unless tools.loopDetection.enabled is false; absent before): after a compaction (a session record raising meta.compactions), the next window tool outcomes of the run are watched and the run aborts when one (tool, arguments, result) reaches window among them", SRC_GUARD),
            ParamSpec::int("post_compaction_window", 1, 100_000, "calls", "tool outcomes watched after a compaction, and identical ones among them that abort the run (postCompactionGuard.windowSize, DEFAULT_WINDOW_SIZE)", SRC_GUARD),
        ]
    }
    fn profiles(&self) -> Vec<Profile> {
        vec![Profile {
            name: "openclaw",
            about: "OpenClaw @00655306 with tools.loopDetection.enabled (off by default): constants 30/10/20/10/30 as shipped (the config's other fields are not read); blocks reported, the first counted as the stop",
            values: vec![
                (POLICY, ParamValue::word("stop")),
                ("history_size", ParamValue::Int(30)),
                ("warning_threshold", ParamValue::Int(10)),
                ("critical_threshold", ParamValue::Int(20)),
                ("unknown_tool_threshold", ParamValue::Int(10)),
                ("global_circuit_breaker_threshold", ParamValue::Int(30)),
                ("generic_repeat", ParamValue::Bool(true)),
                ("known_poll_no_progress", ParamValue::Bool(true)),
                ("ping_pong", ParamValue::Bool(true)),
                ("warning_bucket", ParamValue::Int(10)),
                ("scope", ParamValue::word("run")),
                ("report_warnings", ParamValue::Bool(false)),
                ("loop_detection", ParamValue::Bool(true)),
                ("post_compaction_guard", ParamValue::Bool(false)),
                ("post_compaction_window", ParamValue::Int(3)),
            ],
        },
        Profile {
            name: "openclaw-2026-05",
            about: "openclaw from PR #77555 (2026-05-04): tools.loopDetection enabled and the post-compaction guard it leaves on (3 identical tool, arguments and result among the 3 outcomes after a compaction abort the run)",
            values: vec![("post_compaction_guard", ParamValue::Bool(true))],
        },
        Profile {
            name: "openclaw-off-2026-05",
            about: "OpenClaw as shipped from PR #77555: tools.loopDetection off (the default), so only the post-compaction guard runs (3 of 3 after a compaction abort the run)",
            values: vec![
                ("loop_detection", ParamValue::Bool(false)),
                ("post_compaction_guard", ParamValue::Bool(true)),
            ],
        }]
    }
    fn checks(&self, params: &ParamSet) -> Result<Vec<Box<dyn Check>>> {
        let p = Params::new(self.name(), params);
        let s = OpenClawSettings {
            history_size: p.get("history_size")?,
            warning_threshold: p.get("warning_threshold")?,
            critical_threshold: p.get("critical_threshold")?,
            unknown_tool_threshold: p.get("unknown_tool_threshold")?,
            global_circuit_breaker_threshold: p.get("global_circuit_breaker_threshold")?,
            generic_repeat: p.get("generic_repeat")?,
            known_poll_no_progress: p.get("known_poll_no_progress")?,
            ping_pong: p.get("ping_pong")?,
            warning_bucket: p.get("warning_bucket")?,
            per_run: p.choice("scope", &[("run", true), ("session", false)])?,
            report_warnings: p.get("report_warnings")?,
            loop_detection: p.get("loop_detection")?,
            post_compaction_guard: p.get("post_compaction_guard")?,
            post_compaction_window: p.get("post_compaction_window")?,
        };
        Ok(vec![Box::new(OpenClawCheck { s })])
    }
}

/// What the detector reads.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenClawSettings {
    pub history_size: usize,
    pub warning_threshold: u32,
    pub critical_threshold: u32,
    pub unknown_tool_threshold: u32,
    pub global_circuit_breaker_threshold: u32,
    pub generic_repeat: bool,
    pub known_poll_no_progress: bool,
    pub ping_pong: bool,
    pub warning_bucket: u32,
    pub per_run: bool,
    pub report_warnings: bool,
    /// `tools.loopDetection.enabled`: `detectToolCallLoop` runs.
    pub loop_detection: bool,
    /// PR #77555's post-compaction guard runs.
    pub post_compaction_guard: bool,
    /// Its `windowSize`.
    pub post_compaction_window: usize,
}

impl Default for OpenClawSettings {
    fn default() -> Self {
        OpenClawSettings {
            history_size: 30,
            warning_threshold: 10,
            critical_threshold: 20,
            unknown_tool_threshold: 10,
            global_circuit_breaker_threshold: 30,
            generic_repeat: true,
            known_poll_no_progress: true,
            ping_pong: true,
            warning_bucket: 10,
            per_run: true,
            report_warnings: false,
            loop_detection: true,
            post_compaction_guard: false,
            post_compaction_window: 3,
        }
    }
}

/// One `ToolCallRecord`. Its tool and hashes are interned ([`Interner`]):
/// equal strings are one allocation, compared by address.
#[derive(Debug, Clone)]
pub struct CallRecord {
    pub tool: Arc<str>,
    /// `hashToolCall`: the tool and the stable JSON of its (normalised) arguments.
    pub args_hash: Arc<str>,
    /// Shared with the call awaiting its outcome.
    pub call_id: Option<Arc<str>>,
    pub run: u32,
    pub result_hash: Option<Arc<str>>,
    pub unknown_tool: Option<String>,
}

/// Strings held once each, so that the history's streaks, which compare a
/// call with each of the last 30 at every call, compare addresses and not
/// bytes (a `hashToolCall` is the tool and its whole arguments, an outcome's
/// hash its whole output). Exact: the set never holds two equal strings, and
/// lets one go only when nothing else holds it, so two strings held are
/// equal if and only if they are one allocation.
#[derive(Debug, Default)]
struct Interner {
    set: FxHashSet<Arc<str>>,
    /// The set's size that sweeps it (twice what it kept at the last sweep).
    sweep_at: usize,
}

impl Interner {
    fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.set.get(s) {
            return a.clone();
        }
        if self.set.len() >= self.sweep_at {
            // The strings no call holds any more: a sweep per doubling.
            self.set.retain(|a| Arc::strong_count(a) > 1);
            self.sweep_at = (2 * self.set.len()).max(64);
        }
        let a: Arc<str> = Arc::from(s);
        self.set.insert(a.clone());
        a
    }

    /// `s` as held, or else a string of its own: no string held is equal
    /// to it, so it is unequal to all of them as one must be.
    #[cfg(test)]
    fn lookup(&self, s: &str) -> Arc<str> {
        self.set.get(s).cloned().unwrap_or_else(|| Arc::from(s))
    }
}

/// Two interned strings are equal.
fn same(a: &Arc<str>, b: &Arc<str>) -> bool {
    Arc::ptr_eq(a, b)
}

/// A verdict of `detectToolCallLoop`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    NotStuck,
    Warning {
        detector: &'static str,
        count: u32,
        key: String,
    },
    Critical {
        detector: &'static str,
        count: u32,
    },
}

/// What a call's outcome was, as the hook records it.
#[derive(Debug, Clone)]
pub enum Outcome<'a> {
    /// A result: its text content and its `details` (none in canonical records).
    Result {
        text: &'a str,
        details: Option<&'a Map<String, Value>>,
    },
    /// A thrown error with this message.
    Error(&'a str),
}

/// `normalizeToolName`: trimmed and lower-cased.
pub fn normalize_tool_name(name: &str) -> Cow<'_, str> {
    let t = js_trim(name);
    if t.is_empty() {
        Cow::Borrowed("tool")
    } else if t.is_ascii() && !t.bytes().any(|b| b.is_ascii_uppercase()) {
        // Already lower case (most names): no copy.
        Cow::Borrowed(t)
    } else {
        Cow::Owned(t.to_lowercase())
    }
}

fn js_trim(s: &str) -> &str {
    s.trim_matches(|c: char| (c as u32) < 0x10000 && is_js_space(c as u32 as u16))
}

fn is_plain_str(v: Option<&Value>, s: &str) -> bool {
    v.and_then(Value::as_str) == Some(s)
}

/// `normalizeUpdatePlanShape`.
fn update_plan_shape(value: &Map<String, Value>) -> Value {
    let plan: Vec<(Value, bool)> = match value.get("plan") {
        Some(Value::Array(a)) => a
            .iter()
            .map(|e| match e {
                Value::Object(m) => (
                    m.get("status")
                        .filter(|s| s.is_string())
                        .cloned()
                        .unwrap_or(Value::Null),
                    m.get("step")
                        .and_then(Value::as_str)
                        .is_some_and(|s| !js_trim(s).is_empty()),
                ),
                _ => (Value::Null, false),
            })
            .collect(),
        _ => Vec::new(),
    };
    serde_json::json!({
        "planLength": plan.len(),
        "statuses": plan.iter().map(|p| p.0.clone()).collect::<Vec<_>>(),
        "stepPresence": plan.iter().map(|p| Value::Bool(p.1)).collect::<Vec<_>>(),
        "hasExplanation": value.get("explanation").and_then(Value::as_str).is_some_and(|s| !js_trim(s).is_empty()),
    })
}

/// `hashToolCall` (the digest's input: equal texts, equal digests).
#[cfg(test)] // the ported tests' entry point; the rule writes into its buffer
pub fn hash_tool_call(tool: &str, args: &Map<String, Value>) -> String {
    let mut out = String::with_capacity(tool.len() + 64);
    write_tool_call(&mut out, tool, args);
    out
}

/// [`hash_tool_call`] written at the end of `out`.
fn write_tool_call(out: &mut String, tool: &str, args: &Map<String, Value>) {
    out.push_str(tool);
    out.push(':');
    if tool == "update_plan" {
        out.push_str(&stringify_sorted(&update_plan_shape(args)));
    } else {
        // The arguments as they are: written, not copied into a Value.
        crate::util::js::push_sorted_object(out, args);
    }
}

/// `isKnownPollToolCall`.
pub fn is_known_poll(tool: &str, args: &Map<String, Value>) -> bool {
    tool == "command_status"
        || (tool == "process"
            && (is_plain_str(args.get("action"), "poll")
                || is_plain_str(args.get("action"), "log")))
}

const SEND_LIKE_MESSAGE_ACTIONS: &[&str] = &[
    "send",
    "broadcast",
    "reply",
    "thread-reply",
    "sendWithEffect",
    "sendAttachment",
    "upload-file",
    "sticker",
    "poll",
];

/// `isVolatileSendResult` with no channel plugin loaded.
fn is_volatile_send(tool: &str, args: &Map<String, Value>) -> bool {
    tool == "sessions_send"
        || (tool == "message"
            && args
                .get("action")
                .and_then(Value::as_str)
                .is_some_and(|a| SEND_LIKE_MESSAGE_ACTIONS.contains(&a)))
}

fn unknown_tool_patterns() -> &'static [regex::Regex; 2] {
    static RE: OnceLock<[regex::Regex; 2]> = OnceLock::new();
    RE.get_or_init(|| {
        [
            regex::Regex::new(r#"(?i)unknown tool[:\s]+["']?([a-z0-9_.-]+)["']?"#).expect("valid"),
            regex::Regex::new(
                r#"(?i)tool\s+["']?([a-z0-9_.-]+)["']?\s+(?:not found|is not available)"#,
            )
            .expect("valid"),
        ]
    })
}

/// `extractUnknownToolName` over an error's message.
pub fn extract_unknown_tool_name(message: &str) -> Option<String> {
    let raw = js_trim(message);
    if raw.is_empty() {
        return None;
    }
    let [a, b] = unknown_tool_patterns();
    let m = a.captures(raw).or_else(|| b.captures(raw))?;
    let name = js_trim(m.get(1)?.as_str());
    (!name.is_empty()).then(|| name.to_lowercase())
}

/// `undefined` in a stable-stringified object (printed as `undefined`,
/// unlike `null`).
fn undefined() -> Value {
    Value::String("\u{0}undefined".into())
}

fn field_or(details: &Map<String, Value>, key: &str, missing: Value) -> Value {
    details.get(key).cloned().unwrap_or(missing)
}

/// `?? null`: a missing or null field is null.
fn or_null(details: &Map<String, Value>, key: &str) -> Value {
    field_or(details, key, Value::Null)
}

fn string_field(details: &Map<String, Value>, key: &str) -> Value {
    details
        .get(key)
        .filter(|v| v.is_string())
        .cloned()
        .unwrap_or(Value::Null)
}

/// `hashExecToolOutcome`.
fn exec_outcome(details: &Map<String, Value>, text: &str) -> Option<Value> {
    let status = details.get("status")?.as_str()?;
    Some(match status {
        "running" => serde_json::json!({
            "status": status,
            "tail": details.get("tail").and_then(Value::as_str).unwrap_or(""),
        }),
        "completed" | "failed" => {
            // `normalizeNullableString(details.aggregated) ?? text`.
            let aggregated = details
                .get("aggregated")
                .and_then(Value::as_str)
                .map(js_trim)
                .filter(|a| !a.is_empty());
            serde_json::json!({
                "status": status,
                "exitCode": details.get("exitCode").filter(|v| v.is_number()).cloned().unwrap_or(Value::Null),
                "timedOut": details.get("timedOut") == Some(&Value::Bool(true)),
                "output": aggregated.unwrap_or(text),
            })
        }
        "approval-pending" | "approval-unavailable" => serde_json::json!({
            "status": status,
            "reason": string_field(details, "reason"),
            "host": string_field(details, "host"),
            "command": details.get("command").and_then(Value::as_str).unwrap_or(""),
            "warningText": details.get("warningText").and_then(Value::as_str).unwrap_or(""),
        }),
        _ => return None,
    })
}

const VOLATILE_SEND_RESULT_KEYS: &[&str] = &[
    "messageId",
    "message_id",
    "messageIds",
    "platformMessageId",
    "platformMessageIds",
    "fileId",
    "file_id",
    "fileKey",
    "pollId",
    "poll_id",
    "receipt",
    "runId",
    "idempotencyKey",
    "ts",
    "timestamp",
    "sentAt",
    "deliveredAt",
    "createdAt",
];

/// `stripVolatileSendIds`.
fn strip_volatile_send_ids(v: &Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.iter().map(strip_volatile_send_ids).collect()),
        Value::Object(m) => {
            let is_str = |k: &str| m.get(k).is_some_and(Value::is_string);
            let message_object = is_str("id")
                && is_str("text")
                && (is_str("direction")
                    || is_str("senderId")
                    || is_str("accountId")
                    || m.get("conversation").is_some_and(Value::is_object));
            Value::Object(
                m.iter()
                    .filter(|(k, _)| {
                        !(VOLATILE_SEND_RESULT_KEYS.contains(&k.as_str())
                            || (k.as_str() == "id" && message_object))
                    })
                    .map(|(k, x)| (k.clone(), strip_volatile_send_ids(x)))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

#[cfg(test)] // the ported tests' entry point; the rule keeps OutcomeArgs
/// `hashToolOutcome`: the digest's input (`None`: no hash, nothing
/// recorded) and the unknown tool an error names.
pub fn hash_outcome(
    tool: &str,
    args: &Map<String, Value>,
    outcome: &Outcome,
) -> (Option<String>, Option<String>) {
    outcome_hash(tool, &OutcomeArgs::of(tool, args), outcome)
}

/// What `hashToolOutcome` reads of a call's arguments, taken when the call
/// is made: the live rule keeps these, not a copy of the arguments.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OutcomeArgs {
    /// `process` with action `poll` or `log` (a known poll): the action.
    process_poll: Option<&'static str>,
    /// `isVolatileSendResult`.
    volatile_send: bool,
}

impl OutcomeArgs {
    pub(crate) fn of(tool: &str, args: &Map<String, Value>) -> Self {
        let process_poll = (tool == "process" && is_known_poll(tool, args)).then(|| {
            if is_plain_str(args.get("action"), "poll") {
                "poll"
            } else {
                "log"
            }
        });
        OutcomeArgs {
            process_poll,
            volatile_send: is_volatile_send(tool, args),
        }
    }
}

/// [`hash_outcome`] from the arguments' [`OutcomeArgs`].
pub(crate) fn outcome_hash(
    tool: &str,
    a: &OutcomeArgs,
    outcome: &Outcome,
) -> (Option<String>, Option<String>) {
    if let Outcome::Result { text, details } = outcome {
        // Every canonical result: no details, so none of the shapes below
        // applies and the hash is the stable JSON of `{details: {}, text}`,
        // written directly (no Value built, no keys sorted at run time).
        if details.is_none_or(|d| d.is_empty())
            && a.process_poll.is_none()
            && !a.volatile_send
            && tool != "update_plan"
        {
            let text = js_trim(text);
            let mut out = String::with_capacity(text.len() + 24);
            out.push_str("{\"details\":{},\"text\":");
            crate::util::js::write_string(&mut out, text);
            out.push('}');
            return (Some(out), None);
        }
    }
    // A thrown error: its message as a JSON string, written directly.
    if let Outcome::Error(msg) = outcome {
        let m = if msg.is_empty() { "Error" } else { msg };
        let mut out = String::with_capacity(m.len() + 8);
        out.push_str("error:");
        crate::util::js::write_string(&mut out, m);
        return (Some(out), extract_unknown_tool_name(m));
    }
    outcome_hash_general(tool, a, outcome)
}

/// `hashToolOutcome` as written, every shape built as a `Value` and
/// stable-stringified ([`outcome_hash`] writes the common ones directly).
pub(crate) fn outcome_hash_general(
    tool: &str,
    a: &OutcomeArgs,
    outcome: &Outcome,
) -> (Option<String>, Option<String>) {
    let (text, details) = match outcome {
        Outcome::Error(msg) => {
            // `formatErrorForHash`: the message, or the error's name.
            let m = if msg.is_empty() { "Error" } else { msg };
            return (
                Some(format!(
                    "error:{}",
                    stringify_sorted(&Value::String(m.into()))
                )),
                extract_unknown_tool_name(m),
            );
        }
        Outcome::Result { text, details } => (js_trim(text), details.cloned().unwrap_or_default()),
    };
    let digest = |v: Value| Some(stringify_sorted(&v));
    if details.get("status").and_then(Value::as_str) == Some("blocked")
        && details.get("deniedReason").and_then(Value::as_str) == Some("tool-loop")
    {
        return (None, None);
    }
    if tool == "exec" {
        if let Some(v) = exec_outcome(&details, text) {
            return (digest(v), None);
        }
    }
    if let Some(action) = a.process_poll {
        let status = field_or(&details, "status", undefined());
        let v = if action == "poll" {
            serde_json::json!({
                "action": action, "status": status,
                "exitCode": or_null(&details, "exitCode"), "exitSignal": or_null(&details, "exitSignal"),
                "aggregated": or_null(&details, "aggregated"), "text": text,
            })
        } else {
            serde_json::json!({
                "action": action, "status": status,
                "totalLines": or_null(&details, "totalLines"), "totalChars": or_null(&details, "totalChars"),
                "truncated": or_null(&details, "truncated"), "exitCode": or_null(&details, "exitCode"),
                "exitSignal": or_null(&details, "exitSignal"), "text": text,
            })
        };
        return (digest(v), None);
    }
    let details = Value::Object(details);
    if a.volatile_send {
        return (digest(strip_volatile_send_ids(&details)), None);
    }
    let v = if tool == "update_plan" {
        let shape = match &details {
            Value::Object(m) => update_plan_shape(m),
            _ => Value::Null,
        };
        serde_json::json!({"details": shape, "text": ""})
    } else {
        serde_json::json!({"details": details, "text": text})
    };
    (digest(v), None)
}

impl AsRef<CallRecord> for CallRecord {
    fn as_ref(&self) -> &CallRecord {
        self
    }
}

fn unknown_tool_streak<R: AsRef<CallRecord>>(history: &[R], tool: &Arc<str>) -> u32 {
    let mut streak = 0;
    let mut name: Option<&str> = None;
    for r in history.iter().rev().map(AsRef::as_ref) {
        let Some(u) = r.unknown_tool.as_deref().filter(|_| same(&r.tool, tool)) else {
            break;
        };
        match name {
            None => {
                name = Some(u);
                streak = 1;
            }
            Some(n) if n != u => break,
            Some(_) => streak += 1,
        }
    }
    streak
}

fn no_progress_streak<'h, R: AsRef<CallRecord>>(
    history: &'h [R],
    tool: &Arc<str>,
    args_hash: &Arc<str>,
) -> (u32, Option<&'h Arc<str>>) {
    let mut streak = 0;
    let mut latest: Option<&Arc<str>> = None;
    for r in history.iter().rev().map(AsRef::as_ref) {
        if !same(&r.args_hash, args_hash) || !same(&r.tool, tool) {
            continue;
        }
        let Some(h) = r.result_hash.as_ref().filter(|h| !h.is_empty()) else {
            continue;
        };
        match latest {
            None => {
                latest = Some(h);
                streak = 1;
            }
            Some(l) if !same(l, h) => break,
            Some(_) => streak += 1,
        }
    }
    (streak, latest)
}

/// `getPingPongStreak`: the count, the paired signature and whether both
/// sides' results were stable.
fn ping_pong_streak<'h, R: AsRef<CallRecord>>(
    history: &'h [R],
    current: &Arc<str>,
) -> (u32, Option<&'h str>, bool) {
    let Some(last) = history.last().map(AsRef::as_ref) else {
        return (0, None, false);
    };
    let Some(other) = history[..history.len() - 1]
        .iter()
        .map(AsRef::as_ref)
        .rev()
        .find(|c| !same(&c.args_hash, &last.args_hash))
        .map(|c| &c.args_hash)
    else {
        return (0, None, false);
    };
    let mut tail = 0usize;
    for c in history.iter().rev().map(AsRef::as_ref) {
        let expected = if tail.is_multiple_of(2) {
            &last.args_hash
        } else {
            other
        };
        if !same(&c.args_hash, expected) {
            break;
        }
        tail += 1;
    }
    if tail < 2 || !same(current, other) {
        return (0, None, false);
    }
    let mut first_a: Option<&Arc<str>> = None;
    let mut first_b: Option<&Arc<str>> = None;
    let mut evidence = true;
    for c in history[history.len() - tail..].iter().map(AsRef::as_ref) {
        let Some(h) = c.result_hash.as_ref().filter(|h| !h.is_empty()) else {
            evidence = false;
            break;
        };
        let slot = if same(&c.args_hash, &last.args_hash) {
            &mut first_a
        } else if same(&c.args_hash, other) {
            &mut first_b
        } else {
            evidence = false;
            break;
        };
        match slot {
            None => *slot = Some(h),
            Some(f) if !same(f, h) => {
                evidence = false;
                break;
            }
            Some(_) => {}
        }
    }
    if first_a.is_none() || first_b.is_none() {
        evidence = false;
    }
    ((tail + 1) as u32, Some(&*last.args_hash), evidence)
}

/// The verdicts of `detectToolCallLoop` over the history it reads.
pub(crate) fn verdict<R: AsRef<CallRecord>>(
    s: &OpenClawSettings,
    history: &[R],
    tool: &Arc<str>,
    current: &Arc<str>,
    poll: bool,
) -> Verdict {
    let unknown = unknown_tool_streak(history, tool);
    let (no_progress, latest) = no_progress_streak(history, tool, current);
    let (pp_count, pp_sig, pp_evidence) = ping_pong_streak(history, current);
    let latest = latest.map_or("none", |l| &**l);
    if unknown >= s.unknown_tool_threshold {
        return Verdict::Critical {
            detector: "unknown_tool_repeat",
            count: unknown,
        };
    }
    if no_progress >= s.global_circuit_breaker_threshold {
        return Verdict::Critical {
            detector: "global_circuit_breaker",
            count: no_progress,
        };
    }
    if poll && s.known_poll_no_progress && no_progress >= s.critical_threshold {
        return Verdict::Critical {
            detector: "known_poll_no_progress",
            count: no_progress,
        };
    }
    if poll && s.known_poll_no_progress && no_progress >= s.warning_threshold {
        return Verdict::Warning {
            detector: "known_poll_no_progress",
            count: no_progress,
            key: format!("poll:{tool}:{current}:{latest}"),
        };
    }
    if s.ping_pong && pp_count >= s.critical_threshold && pp_evidence {
        return Verdict::Critical {
            detector: "ping_pong",
            count: pp_count,
        };
    }
    if s.ping_pong && pp_count >= s.warning_threshold {
        // The warning's key, built only for a warning.
        let key = match pp_sig {
            Some(p) => {
                let mut pair = [&**current, p];
                pair.sort_by_key(|a| crate::util::js::utf16(a));
                format!("pingpong:{}|{}", pair[0], pair[1])
            }
            None => format!("pingpong:{tool}:{current}"),
        };
        return Verdict::Warning {
            detector: "ping_pong",
            count: pp_count,
            key,
        };
    }
    let recent = history
        .iter()
        .map(AsRef::as_ref)
        .filter(|h| same(&h.args_hash, current) && same(&h.tool, tool))
        .count() as u32;
    if !poll && s.generic_repeat && no_progress >= s.critical_threshold {
        return Verdict::Critical {
            detector: "generic_repeat",
            count: no_progress,
        };
    }
    if !poll && s.generic_repeat && recent >= s.warning_threshold {
        return Verdict::Warning {
            detector: "generic_repeat",
            count: recent,
            key: format!("generic:{tool}:{current}"),
        };
    }
    Verdict::NotStuck
}

/// One session's `SessionState` as the detector and the hook keep it.
#[derive(Debug, Default)]
pub struct LoopState {
    /// The history is `calls[start..]`: the calls it drops are let go in
    /// batches ([`LoopState::trim`]), not with a move of the history each.
    calls: Vec<CallRecord>,
    start: usize,
    /// `toolLoopWarningBuckets`, in insertion order.
    buckets: Vec<(String, u32)>,
    /// The history's tools and hashes.
    strings: Interner,
}

impl LoopState {
    /// The recorded history, oldest first.
    pub fn history(&self) -> &[CallRecord] {
        &self.calls[self.start..]
    }

    /// `s` interned for this history.
    fn intern(&mut self, s: &str) -> Arc<str> {
        self.strings.intern(s)
    }

    /// `s` as this history holds it (or unequal to all it holds).
    #[cfg(test)]
    pub(crate) fn interned(&self, s: &str) -> Arc<str> {
        self.strings.lookup(s)
    }

    /// `detectToolCallLoop`.
    #[cfg(test)] // the ported tests' entry point; the rule hashes once
    pub fn detect(
        &self,
        s: &OpenClawSettings,
        run: u32,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Verdict {
        let current = self.interned(&hash_tool_call(tool, args));
        let tool_held = self.interned(tool);
        self.detect_hashed(s, run, &tool_held, &current, is_known_poll(tool, args))
    }

    /// [`LoopState::detect`] given the call's interned tool and
    /// `hashToolCall` and whether it is a known poll.
    fn detect_hashed(
        &self,
        s: &OpenClawSettings,
        run: u32,
        tool: &Arc<str>,
        current: &Arc<str>,
        poll: bool,
    ) -> Verdict {
        let history = self.history();
        if !s.per_run {
            return verdict(s, history, tool, current, poll);
        }
        // The live rule records runs in order, so the run's calls are the
        // history's tail: read in place, not collected (a call's cost).
        let start = history
            .iter()
            .rposition(|r| r.run != run)
            .map_or(0, |p| p + 1);
        if history[..start].iter().all(|r| r.run != run) {
            verdict(s, &history[start..], tool, current, poll)
        } else {
            let scoped: Vec<&CallRecord> = history.iter().filter(|r| r.run == run).collect();
            verdict(s, &scoped, tool, current, poll)
        }
    }

    /// `shouldEmitLoopWarning`.
    pub fn should_emit_warning(&mut self, s: &OpenClawSettings, key: &str, count: u32) -> bool {
        let bucket = count / s.warning_bucket;
        let pos = self.buckets.iter().position(|(k, _)| k == key);
        let last = pos.map_or(0, |p| self.buckets[p].1);
        if bucket <= last {
            return false;
        }
        match pos {
            Some(p) => self.buckets[p].1 = bucket,
            None => self.buckets.push((key.to_string(), bucket)),
        }
        if self.buckets.len() > 256 {
            self.buckets.remove(0);
        }
        true
    }

    /// Keeps the last `history_size` calls.
    fn trim(&mut self, s: &OpenClawSettings) {
        let len = self.calls.len() - self.start;
        if len > s.history_size {
            self.start += len - s.history_size;
            // The dropped calls go once they are as many as the kept ones:
            // one move of the history per `history_size` calls.
            if self.start >= s.history_size {
                self.calls.drain(..self.start);
                self.start = 0;
            }
        }
    }

    /// `recordToolCall`.
    #[cfg(test)] // the ported tests' entry point; the rule hashes once
    pub fn record_call(
        &mut self,
        s: &OpenClawSettings,
        run: u32,
        tool: &str,
        args: &Map<String, Value>,
        call_id: Option<&str>,
    ) {
        let args_hash = self.intern(&hash_tool_call(tool, args));
        let tool = self.intern(tool);
        self.record_hashed(s, run, tool, args_hash, call_id.map(Arc::from));
    }

    /// [`LoopState::record_call`] given the call's interned tool and
    /// `hashToolCall`.
    fn record_hashed(
        &mut self,
        s: &OpenClawSettings,
        run: u32,
        tool: Arc<str>,
        args_hash: Arc<str>,
        call_id: Option<Arc<str>>,
    ) {
        self.calls.push(CallRecord {
            tool,
            args_hash,
            call_id,
            run: if s.per_run { run } else { 0 },
            result_hash: None,
            unknown_tool: None,
        });
        self.trim(s);
    }

    /// `recordToolCallOutcome`.
    #[cfg(test)] // the ported tests' entry point; the rule hashes once
    pub fn record_outcome(
        &mut self,
        s: &OpenClawSettings,
        run: u32,
        tool: &str,
        args: &Map<String, Value>,
        call_id: Option<&str>,
        outcome: &Outcome,
    ) {
        let (Some(result_hash), unknown) = hash_outcome(tool, args, outcome) else {
            return;
        };
        let args_hash = self.intern(&hash_tool_call(tool, args));
        let tool = self.intern(tool);
        let result_hash = self.intern(&result_hash);
        let call_id = call_id.map(Arc::from);
        let c = call_id.as_ref();
        self.record_outcome_hashed(s, run, &tool, &args_hash, c, result_hash, unknown);
    }

    /// [`LoopState::record_outcome`] given the call's interned tool and
    /// `hashToolCall` and the outcome's interned hash.
    #[allow(clippy::too_many_arguments)]
    fn record_outcome_hashed(
        &mut self,
        s: &OpenClawSettings,
        run: u32,
        tool: &Arc<str>,
        args_hash: &Arc<str>,
        call_id: Option<&Arc<str>>,
        result_hash: Arc<str>,
        unknown: Option<String>,
    ) {
        let run = if s.per_run { run } else { 0 };
        let found = self.calls[self.start..].iter_mut().rev().find(|c| {
            c.run == run
                && call_id.is_none_or(|id| c.call_id.as_deref() == Some(&**id))
                && same(&c.tool, tool)
                && same(&c.args_hash, args_hash)
                && c.result_hash.is_none()
        });
        match found {
            Some(c) => {
                c.result_hash = Some(result_hash);
                c.unknown_tool = unknown;
            }
            None => self.calls.push(CallRecord {
                tool: tool.clone(),
                args_hash: args_hash.clone(),
                call_id: call_id.cloned(),
                run,
                result_hash: Some(result_hash),
                unknown_tool: unknown,
            }),
        }
        self.trim(s);
    }
}

/// One outcome the post-compaction guard observes: tool, `hashToolCall`,
/// outcome hash.
pub type Observation = (String, String, String);

/// `createPostCompactionLoopGuard` (PR #77555), one per run.
#[derive(Debug, Default)]
pub struct PostCompactionGuard {
    pub remaining: usize,
    history: Vec<Observation>,
}

impl PostCompactionGuard {
    /// `armPostCompaction`: a fresh window.
    pub fn arm(&mut self, window: usize) {
        self.remaining = window;
        self.history.clear();
    }

    /// `observe`: the count of identical observations in the window when it
    /// reaches `window` (the run aborts), else None. A disarmed guard
    /// observes nothing.
    pub fn observe(&mut self, window: usize, o: Observation) -> Option<usize> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        self.history.push(o);
        let last = self.history.last().expect("pushed");
        let n = self.history.iter().filter(|h| *h == last).count();
        (n >= window).then_some(n)
    }
}

/// A compaction, as canonical records can carry one: the spec has no
/// compaction record, so a `session` record other than the session's first
/// whose `meta.compactions` (the count the importers keep) exceeds the
/// largest seen so far (0 before any).
fn compaction(i: usize, r: &Record, seen: &mut f64) -> bool {
    let Record::Session { meta: Some(m), .. } = r else {
        return false;
    };
    let Some(n) = m.get("compactions").and_then(Value::as_f64) else {
        return false;
    };
    let more = n > *seen;
    *seen = seen.max(n);
    i > 0 && more
}

/// A call awaiting its outcome: what its outcome's hash and record read of
/// it, hashed when it is made (not its arguments copied).
struct PendingCall {
    tool: Arc<str>,
    /// `hashToolCall`.
    args_hash: Arc<str>,
    call_id: Option<Arc<str>>,
    args: OutcomeArgs,
}

struct OpenClawCheck {
    s: OpenClawSettings,
}

impl Check for OpenClawCheck {
    fn name(&self) -> &'static str {
        "openclaw.tool_loop"
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

impl OpenClawCheck {
    fn rule(&self) -> OpenClawRule {
        OpenClawRule {
            s: self.s.clone(),
            state: LoopState::default(),
            pending: Unanswered::default(),
            guard: PostCompactionGuard::default(),
            compactions: 0.0,
            aborted: None,
            buf: String::new(),
        }
    }
}

/// The hook over canonical records, one at a time. The history keeps its
/// last `history_size` calls, the warning buckets their last 256 keys, the
/// guard its window; the calls awaiting an outcome are kept however old,
/// for the whole session (a result answers the oldest call that matches
/// it, so one never answered decides which later call a result ends).
struct OpenClawRule {
    s: OpenClawSettings,
    state: LoopState,
    /// Calls awaiting their outcome; None for a refused call.
    pending: Unanswered<Option<PendingCall>>,
    guard: PostCompactionGuard,
    /// The largest `meta.compactions` seen.
    compactions: f64,
    /// The run the guard aborted: nothing more of it runs.
    aborted: Option<u32>,
    /// A call's `hashToolCall`, written here and interned (no string a
    /// call when it is held already).
    buf: String,
}

impl RecordRule for OpenClawRule {
    fn visit(&mut self, at: At<'_>, found: &mut Found<'_>) {
        let s = &self.s;
        let run = at.prompts;
        let prompt = at.prompts.saturating_sub(1);
        if at.new_prompt {
            // A new run builds a new guard.
            self.guard = PostCompactionGuard::default();
        }
        if self.aborted == Some(run) {
            return;
        }
        match &at.event.record {
            r @ Record::Session { .. }
                if compaction(at.i, r, &mut self.compactions) && s.post_compaction_guard =>
            {
                self.guard.arm(s.post_compaction_window);
            }
            Record::ToolCall { name, args, id } => {
                let tool = normalize_tool_name(name);
                self.buf.clear();
                write_tool_call(&mut self.buf, &tool, args);
                let outcome_args = OutcomeArgs::of(&tool, args);
                // The id is one string, for the history and the waiting call.
                let call_id: Option<Arc<str>> = id.as_deref().map(Arc::from);
                if !s.loop_detection {
                    // No history: held for the guard alone, not interned.
                    let p = PendingCall {
                        tool: Arc::from(tool),
                        args_hash: Arc::from(self.buf.as_str()),
                        call_id,
                        args: outcome_args,
                    };
                    self.pending.push(id.as_deref(), name, Some(p));
                    return;
                }
                let tool = self.state.intern(&tool);
                let args_hash = self.state.intern(&self.buf);
                let poll = is_known_poll(&tool, args);
                match self.state.detect_hashed(s, run, &tool, &args_hash, poll) {
                    Verdict::Critical { detector, count } => {
                        found.push(
                            at.i,
                            detector,
                            prompt,
                            format!("block (critical): {tool} ({count} calls)"),
                        );
                        self.pending.push(id.as_deref(), name, None);
                        return;
                    }
                    Verdict::Warning {
                        detector,
                        count,
                        key,
                    } => {
                        if self.state.should_emit_warning(s, &key, count) && s.report_warnings {
                            found.push(
                                at.i,
                                detector,
                                prompt,
                                format!("warning (logged): {tool} ({count} calls)"),
                            );
                        }
                    }
                    Verdict::NotStuck => {}
                }
                let (t, h, c) = (tool.clone(), args_hash.clone(), call_id.clone());
                self.state.record_hashed(s, run, t, h, c);
                let p = PendingCall {
                    tool,
                    args_hash,
                    call_id,
                    args: outcome_args,
                };
                self.pending.push(id.as_deref(), name, Some(p));
            }
            Record::ToolResult {
                id,
                name,
                output,
                error,
            } => {
                let Some(Some(PendingCall {
                    tool,
                    args_hash,
                    call_id,
                    args,
                })) = self.pending.answer(id.as_deref(), name.as_deref())
                else {
                    return;
                };
                let text = output.as_deref().unwrap_or("");
                let outcome = if *error == Some(true) {
                    Outcome::Error(text)
                } else {
                    Outcome::Result {
                        text,
                        details: None,
                    }
                };
                // A disarmed guard observes nothing: no hash for it.
                let observed = s.post_compaction_guard && self.guard.remaining > 0;
                if !s.loop_detection && !observed {
                    return;
                }
                // One hash for the history and the guard's observation.
                let (Some(result), unknown) = outcome_hash(&tool, &args, &outcome) else {
                    return;
                };
                let o = observed.then(|| (tool.to_string(), args_hash.to_string(), result.clone()));
                if s.loop_detection {
                    let c = call_id.as_ref();
                    let result = self.state.intern(&result);
                    self.state
                        .record_outcome_hashed(s, run, &tool, &args_hash, c, result, unknown);
                }
                let Some(o) = o else {
                    return;
                };
                if let Some(n) = self.guard.observe(s.post_compaction_window, o) {
                    found.push(
                        at.i,
                        "compaction_loop_persisted",
                        prompt,
                        format!("abort (critical): {tool} repeated {n} times with identical arguments and results after compaction"),
                    );
                    self.aborted = Some(run);
                }
            }
            _ => {}
        }
    }
}
