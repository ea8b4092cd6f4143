//! Cline's loop detection: the SDK `LoopDetectionTracker` (soft notice at
//! exactly 3 identical calls in a row, hard stop from 5 on; peer-mappings
//! section 4) and, as a profile, the extension's PR #9933 rule.

use super::common::{each_rule, At, Found, RecordRule, RecordStream};
use crate::detect::{
    Check, Detection, Family, ParamSet, ParamSpec, ParamValue, Params, Prepared, Profile, Stream,
    POLICY, POLICY_SPEC,
};
use crate::error::Result;
use crate::event::Record;
use crate::util::js::stringify_sorted;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const SRC_SDK: &str =
    "cline/cline sdk/packages/core/src/runtime/safety/loop-detection.ts @21cb8d2525 (blob e34900732a)";
const SRC_EXT: &str = "cline/cline src/core/task/loop-detection.ts @f3a3f30db5 (PR #9933)";

/// The `cline` family.
pub struct Cline;

impl Family for Cline {
    fn name(&self) -> &'static str {
        "cline"
    }
    fn about(&self) -> &'static str {
        "Cline LoopDetectionTracker: consecutive identical calls (name + recursively key-sorted JSON); soft notice at exactly 3, hard stop at 5 or more"
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            POLICY_SPEC,
            ParamSpec::int(
                "soft_threshold",
                1,
                100_000,
                "calls",
                "consecutive identical calls that give the soft notice (fires when the count equals it)",
                SRC_SDK,
            ),
            ParamSpec::int(
                "hard_threshold",
                1,
                100_000,
                "calls",
                "consecutive identical calls that stop the run (fires when the count reaches it, and on every later identical call)",
                SRC_SDK,
            ),
            ParamSpec::list(
                "ignored_params",
                "argument names",
                "top-level arguments left out of the signature (the extension's IGNORED_PARAMS)",
                SRC_EXT,
            ),
            ParamSpec::bool(
                "rearm_after_hard",
                "after a hard detection the count starts over (the extension re-arms when the user continues); otherwise every further identical call is hard",
                SRC_EXT,
            ),
            ParamSpec::bool(
                "hard_exact",
                "the hard verdict fires only when the count equals hard_threshold (=== in the March rule), not on every later identical call",
                SRC_EXT,
            ),
        ]
    }
    fn profiles(&self) -> Vec<Profile> {
        vec![
            Profile {
                name: "cline",
                about: "Cline SDK @21cb8d2525 (2026-08): soft at 3, hard at >= 5, one tracker per session fed on every tool-started event. Policy warn:1 = the soft notice warns, the hard verdict stops (strikes are counted per run of identical calls)",
                values: vec![
                    (POLICY, ParamValue::word("warn:1")),
                    ("soft_threshold", ParamValue::Int(3)),
                    ("hard_threshold", ParamValue::Int(5)),
                    ("ignored_params", ParamValue::words(&[])),
                    ("rearm_after_hard", ParamValue::Bool(false)),
                    ("hard_exact", ParamValue::Bool(false)),
                ],
            },
            Profile {
                name: "cline-extension",
                about: "Cline extension @f3a3f30db5 (PR #9933, 2026-03): task_progress ignored, hard at exactly 5 (mistake-limit ask), then re-armed",
                values: vec![
                    (
                        "ignored_params",
                        ParamValue::words(&["task_progress"]),
                    ),
                    ("rearm_after_hard", ParamValue::Bool(true)),
                ],
            },
            Profile {
                name: "cline-2026-03",
                about: "Cline loop-detection.ts @f3a3f30db5 (PR #9933, 2026-03) as written: task_progress stripped from the compared arguments, soft at === 3, hard only at === 5 (a streak that goes on past 5 gives nothing more); no re-arm",
                values: vec![
                    (
                        "ignored_params",
                        ParamValue::words(&["task_progress"]),
                    ),
                    ("hard_exact", ParamValue::Bool(true)),
                ],
            },
        ]
    }
    fn checks(&self, params: &ParamSet) -> Result<Vec<Box<dyn Check>>> {
        let p = Params::new(self.name(), params);
        Ok(vec![Box::new(ClineCheck {
            s: ClineSettings {
                soft: p.get("soft_threshold")?,
                hard: p.get("hard_threshold")?,
                ignored: p.get("ignored_params")?,
                rearm: p.get("rearm_after_hard")?,
                hard_exact: p.get("hard_exact")?,
            },
        })])
    }
}

/// What one call gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing.
    Ok,
    /// The soft notice.
    Soft,
    /// The hard stop.
    Hard,
}

/// The tracker's state, usable on its own (for the original's test cases).
#[derive(Debug, Clone)]
pub struct ClineTracker {
    s: ClineSettings,
    last: Option<(String, String)>,
    count: i64,
    at_call: i64,
    /// The session's signatures under `ignored`, made once and shared by
    /// every configuration: by the address of a call's arguments.
    shared: Option<Arc<Signatures>>,
}

/// Signatures of a session's calls, by the address of their arguments.
type Signatures = HashMap<usize, String>;

/// For each `ignored` list a sweep's configurations use, the signature of
/// every call of one session (by the address of its arguments, stable while
/// the session lives), so configurations do not each write every argument
/// object again.
#[derive(Default)]
struct SharedSignatures(Mutex<Vec<(Vec<String>, Arc<Signatures>)>>);

impl SharedSignatures {
    fn get(&self, ignored: &[String], s: &crate::event::Session) -> Arc<Signatures> {
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, m)) = held.iter().find(|(i, _)| i == ignored) {
            return m.clone();
        }
        let t = ClineTracker::new(ClineSettings {
            soft: 0,
            hard: 0,
            ignored: ignored.to_vec(),
            rearm: false,
            hard_exact: false,
        });
        let mut m = HashMap::new();
        for e in &s.events {
            if let Record::ToolCall { args, .. } = &e.record {
                let at = &**args as *const Map<String, Value> as usize;
                m.entry(at).or_insert_with(|| t.signature(args));
            }
        }
        let m = Arc::new(m);
        held.push((ignored.to_vec(), m.clone()));
        m
    }
}

impl ClineTracker {
    /// A tracker with the given settings.
    pub fn new(s: ClineSettings) -> ClineTracker {
        ClineTracker {
            s,
            last: None,
            count: 0,
            at_call: 0,
            shared: None,
        }
    }

    /// The signature of an argument object: JSON with keys sorted recursively.
    pub fn signature(&self, args: &Map<String, Value>) -> String {
        let kept: Map<String, Value> = args
            .iter()
            .filter(|(k, _)| !self.s.ignored.iter().any(|i| i == *k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        stringify_sorted(&without_proto(Value::Object(kept)))
    }

    /// `inspect({name, input})`, plus whether this call started a new run of
    /// identical calls.
    pub fn inspect(&mut self, name: &str, args: &Map<String, Value>) -> (Verdict, bool) {
        let at = args as *const Map<String, Value> as usize;
        let sig = match self.shared.as_ref().and_then(|m| m.get(&at)) {
            Some(sig) => sig.clone(),
            None => self.signature(args),
        };
        let same = self
            .last
            .as_ref()
            .is_some_and(|(n, s)| n == name && *s == sig);
        self.count = if same { self.count + 1 } else { 1 };
        self.at_call = self.count;
        self.last = Some((name.to_string(), sig));
        // The hard verdict is checked first, as in the original.
        let hard = if self.s.hard_exact {
            self.count == self.s.hard
        } else {
            self.count >= self.s.hard
        };
        let v = if hard {
            if self.s.rearm {
                self.last = None;
                self.count = 0;
            }
            Verdict::Hard
        } else if self.count == self.s.soft {
            Verdict::Soft
        } else {
            Verdict::Ok
        };
        (v, !same)
    }

    /// The count of consecutive identical calls at the last inspected call.
    pub fn count_at_call(&self) -> i64 {
        self.at_call
    }
}

/// What the check reads, and the tracker's thresholds.
#[derive(Debug, Clone, PartialEq)]
pub struct ClineSettings {
    /// Consecutive identical calls that give the soft notice.
    pub soft: i64,
    /// Consecutive identical calls that give the hard verdict.
    pub hard: i64,
    /// Arguments dropped from signatures.
    pub ignored: Vec<String>,
    /// Reset the state after a hard verdict.
    pub rearm: bool,
    /// Fire the hard verdict only when the count equals the threshold.
    pub hard_exact: bool,
}

struct ClineCheck {
    s: ClineSettings,
}

impl Check for ClineCheck {
    fn name(&self) -> &'static str {
        "cline.tracker"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }

    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        let s = &session.session;
        let mut rule = self.rule();
        let all = session.shared("cline.signatures", |_| SharedSignatures::default());
        rule.t.shared = Some(all.get(&self.s.ignored, s));
        each_rule(s, limit, &mut rule)
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        // A live feed signs each call as it comes (no session to share).
        Some(RecordStream::boxed(self.rule()))
    }
}

impl ClineCheck {
    fn rule(&self) -> Streaks {
        Streaks {
            t: ClineTracker::new(self.s.clone()),
            streak: 0,
            first: true,
        }
    }
}

/// The tracker, and the strikes' count: strikes are counted per run of
/// identical calls, so the soft notice of a run warns and its hard verdict
/// stops, while a later run's soft notice is a fresh warning. (The tracker
/// itself never resets.)
struct Streaks {
    t: ClineTracker,
    streak: u32,
    first: bool,
}

impl RecordRule for Streaks {
    fn visit(&mut self, at: At<'_>, found: &mut Found<'_>) {
        let Record::ToolCall { name, args, .. } = &at.event.record else {
            return;
        };
        let (v, new_run) = self.t.inspect(name, args);
        if new_run && !self.first {
            self.streak += 1;
        }
        self.first = false;
        let kind = match v {
            Verdict::Ok => return,
            Verdict::Soft => "soft",
            Verdict::Hard => "hard",
        };
        let n = self.t.count_at_call();
        found.push(
            at.i,
            kind,
            self.streak,
            format!("{n} consecutive identical calls to `{name}`"),
        );
    }
}

/// Cline's `sortKeys` assigns `sorted[key] = ...` on a `{}` literal, so a
/// `__proto__` key hits the prototype setter and never reaches the signature,
/// at any depth (found by a differential run against the original).
fn without_proto(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(k, _)| k != "__proto__")
                .map(|(k, v)| (k, without_proto(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(without_proto).collect()),
        other => other,
    }
}
