//! Kimi CLI's repeated-tool-call escalation (`src/kimi_cli/soul/toolset.py`,
//! `KimiToolset.handle` / `begin_step` / `end_step`, and the force stop in
//! `kimisoul.py`).
//!
//! A call's key is its name and its arguments as canonical JSON (keys sorted
//! recursively, compact). A streak counts consecutive equal keys across the
//! calls of a turn's steps. A call whose key was already seen in an earlier
//! step of the turn (a cross-step duplicate) gets a `<system-reminder>` by
//! its projected streak: tier 1 from 3, tier 2 from 5, tier 3 from 8, and
//! from 12 the turn is force-stopped after the step (`tool_call_repeat`).
//! A repeat of a key inside one step shares the first call's result and gets
//! no reminder of its own, but still counts in the streak (it is in
//! `_current_step_calls`). The state resets when a step had no calls (the
//! turn ends) and at every new turn (every `user` record).
//!
//! Reported: the first call of each tier in a streak (kinds `reminder_1`,
//! `reminder_2`, `reminder_3`, `tool_call_repeat`), strikes counted per
//! streak, so that policy `warn:3` stops where Kimi CLI stops. When a streak
//! enters a tier without passing through the one below (the lower tiers'
//! calls were same-step repeats), the tiers it skipped are reported at the
//! same call, so that the stop is always the 4th strike.
//! Mapping: docs/detector-mappings.md, "Kimi CLI".

use super::common::{push_json_str, segments, Found};
use crate::detect::{
    Check, Detection, Family, ParamSet, ParamSpec, ParamValue, Params, Prepared, Profile, Stream,
    POLICY, POLICY_SPEC,
};
use crate::error::Result;
use crate::event::{Record, Session};
use rustc_hash::FxHashSet;
use serde_json::{Map, Value};

const SRC: &str = "MoonshotAI/kimi-cli src/kimi_cli/soul/toolset.py @b0e08c5fbc (PR #2466)";

/// The `kimi` family.
pub struct Kimi;

impl Family for Kimi {
    fn name(&self) -> &'static str {
        "kimi"
    }
    fn about(&self) -> &'static str {
        "Kimi CLI KimiToolset: streak of identical calls (name + sorted-key JSON) across steps; reminders from 3, 5 and 8, the turn force-stopped from 12"
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            POLICY_SPEC,
            ParamSpec::int(
                "reminder_1",
                1,
                100_000,
                "calls",
                "streak from which a cross-step repeat gets the first reminder (_REPEAT_REMINDER_1_START)",
                SRC,
            ),
            ParamSpec::int(
                "reminder_2",
                1,
                100_000,
                "calls",
                "streak from which the reminder names the tool, count and arguments (_REPEAT_REMINDER_2_START)",
                SRC,
            ),
            ParamSpec::int(
                "reminder_3",
                1,
                100_000,
                "calls",
                "streak from which the reminder tells the model to stop calling tools (_REPEAT_REMINDER_3_START)",
                SRC,
            ),
            ParamSpec::int(
                "force_stop",
                1,
                100_000,
                "calls",
                "streak at which the turn is force-stopped after the step (_REPEAT_FORCE_STOP_STREAK)",
                SRC,
            ),
        ]
    }
    fn profiles(&self) -> Vec<Profile> {
        vec![Profile {
            name: "kimi",
            about: "Kimi CLI @b0e08c5f (2026-06, #2466): reminders at streaks 3, 5, 8 (strikes 1-3), force stop at 12 (strike 4); policy warn:3 stops where Kimi CLI stops",
            values: vec![
                (POLICY, ParamValue::word("warn:3")),
                ("reminder_1", ParamValue::Int(3)),
                ("reminder_2", ParamValue::Int(5)),
                ("reminder_3", ParamValue::Int(8)),
                ("force_stop", ParamValue::Int(12)),
            ],
        }]
    }
    fn checks(&self, params: &ParamSet) -> Result<Vec<Box<dyn Check>>> {
        let p = Params::new(self.name(), params);
        // Any order is valid: like `_build_repeat_reminder`, the highest
        // tier whose threshold the streak reached wins, the stop first.
        Ok(vec![Box::new(KimiCheck {
            s: KimiSettings {
                tiers: [
                    p.get("reminder_1")?,
                    p.get("reminder_2")?,
                    p.get("reminder_3")?,
                    p.get("force_stop")?,
                ],
            },
        })])
    }
}

/// Python's `json.dumps(_sort_json_value(args), ensure_ascii=False,
/// separators=(",", ":"))`: keys sorted by code point at every depth.
pub fn canonical_args(args: &Map<String, Value>) -> String {
    // Written directly: no sorted copy of the arguments built first.
    fn write(out: &mut String, v: &Value) {
        match v {
            Value::Object(m) => write_map(out, m),
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(out, x);
                }
                out.push(']');
            }
            Value::String(s) => push_json_str(out, s),
            // serde_json's own text of a number, a bool or null.
            other => {
                use std::fmt::Write as _;
                let _ = write!(out, "{other}");
            }
        }
    }
    fn write_map(out: &mut String, m: &Map<String, Value>) {
        let mut entries: Vec<(&String, &Value)> = m.iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        out.push('{');
        for (i, (k, v)) in entries.into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_json_str(out, k);
            out.push(':');
            write(out, v);
        }
        out.push('}');
    }
    let mut out = String::with_capacity(32);
    write_map(&mut out, args);
    out
}

/// [`canonical_args`] as first written: a sorted copy serialised.
#[cfg(test)]
pub(crate) fn canonical_args_built(args: &Map<String, Value>) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&m[k])))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    serde_json::to_string(&sorted(&Value::Object(args.clone()))).unwrap_or_default()
}

/// A call's key: `(tool name, canonical arguments)`.
pub type CallKey = (String, String);

/// What `_build_repeat_reminder` decides for a projected streak: 0 (none),
/// 1-3 (reminder tiers) or 4 (stop).
pub fn tier(streak: u32, tiers: &[u32; 4]) -> u8 {
    tiers
        .iter()
        .rev()
        .position(|&t| streak >= t)
        .map_or(0, |p| 4 - p as u8)
}

/// The toolset's dedup state, usable on its own (for the original's tests).
#[derive(Debug, Clone, Default)]
pub struct Toolset {
    seen: FxHashSet<CallKey>,
    key: Option<CallKey>,
    count: u32,
    current: Vec<CallKey>,
    tasks: FxHashSet<CallKey>,
    /// Call ordinal (in the whole session) where the streak in force began.
    start: u64,
    calls: u64,
}

/// What `handle` did with one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// A repeat of a key already called in this step: shares its result.
    SameStep,
    /// Executed; `Some((projected streak, tier, streak start))` for a
    /// cross-step duplicate.
    Run(Option<(u32, u8, u64)>),
}

impl Toolset {
    /// `begin_step(previous_calls)`.
    pub fn begin_step(&mut self, previous: &[CallKey]) {
        self.current.clear();
        self.tasks.clear();
        if previous.is_empty() {
            self.seen.clear();
            self.key = None;
            self.count = 0;
        } else {
            self.see(previous);
            if self.key.is_none() && self.count == 0 {
                let start = self.calls;
                self.advance(previous, start);
            }
        }
    }

    /// `end_step()`: the calls of the step, same-step repeats included.
    pub fn end_step(&mut self) -> Vec<CallKey> {
        let calls = std::mem::take(&mut self.current);
        let first = self.calls - calls.len() as u64;
        self.advance(&calls, first);
        self.see(&calls);
        calls
    }

    /// Add `calls` to the keys seen (copying only those not there yet:
    /// a step's calls come again as the next step's previous calls).
    fn see(&mut self, calls: &[CallKey]) {
        for k in calls {
            if !self.seen.contains(k) {
                self.seen.insert(k.clone());
            }
        }
    }

    fn advance(&mut self, calls: &[CallKey], first: u64) {
        for (i, k) in calls.iter().enumerate() {
            if self.key.as_ref() == Some(k) {
                self.count += 1;
            } else {
                self.key = Some(k.clone());
                self.count = 1;
                self.start = first + i as u64;
            }
        }
    }

    /// `handle(tool_call)` for a tool that exists, with the tiers in force.
    pub fn handle(&mut self, key: CallKey, tiers: &[u32; 4]) -> Handled {
        let idx = self.current.len();
        self.current.push(key.clone());
        self.calls += 1;
        if !self.tasks.insert(key.clone()) {
            return Handled::SameStep;
        }
        if !self.seen.contains(&key) {
            return Handled::Run(None);
        }
        // `_projected_streak_for_call`.
        let (mut k, mut n, mut start) = (self.key.as_ref(), self.count, self.start);
        let first = self.calls - self.current.len() as u64;
        for (i, c) in self.current[..=idx].iter().enumerate() {
            if k == Some(c) {
                n += 1;
            } else {
                k = Some(c);
                n = 1;
                start = first + i as u64;
            }
        }
        Handled::Run(Some((n, tier(n, tiers), start)))
    }
}

const KINDS: [&str; 4] = ["reminder_1", "reminder_2", "reminder_3", "tool_call_repeat"];

/// What the check reads: the streaks of the three reminders and the stop.
#[derive(Debug, Clone, PartialEq)]
struct KimiSettings {
    tiers: [u32; 4],
}

struct KimiCheck {
    s: KimiSettings,
}

/// A session as Kimi steps: `None` for a new turn (a `user` record), else
/// the step's tool calls `(record index, key)`.
fn steps(s: &Session) -> Vec<Option<Vec<(usize, CallKey)>>> {
    let mut out = Vec::new();
    for seg in segments(s) {
        if matches!(s.event(seg.start).record, Record::User { .. }) {
            out.push(None);
        }
        if !seg.model_turn {
            continue;
        }
        let calls = (seg.start..seg.end)
            .filter_map(|i| match &s.event(i).record {
                Record::ToolCall { name, args, .. } => {
                    Some((i, (name.clone(), canonical_args(args))))
                }
                _ => None,
            })
            .collect();
        out.push(Some(calls));
    }
    out
}

impl Check for KimiCheck {
    fn name(&self) -> &'static str {
        "kimi.repeat"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }

    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        let s = &session.session;
        let mut found = Found::new(s, limit);
        let mut rule = self.rule();
        // The keys (canonical JSON of every call's arguments) are made once
        // per session and shared by every configuration of a sweep.
        let shared = session.shared("kimi.steps", steps);
        for step in shared.iter() {
            let Some(calls) = step else {
                rule.new_turn();
                continue;
            };
            rule.begin();
            for (i, key) in calls.iter().cloned() {
                rule.call(i, key, &mut found);
                if found.full() {
                    return found.into_vec();
                }
            }
            rule.end();
        }
        found.into_vec()
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(Box::new(KimiStream {
            rule: self.rule(),
            open: false,
            begun: false,
        }))
    }
}

impl KimiCheck {
    fn rule(&self) -> KimiRule {
        KimiRule {
            tiers: self.s.tiers,
            ts: Toolset::default(),
            last: Vec::new(),
            reported: None,
            stop: false,
        }
    }
}

/// The toolset and what the check keeps between steps. The toolset's `seen`
/// set keeps every key called since the last step without calls, as Kimi
/// CLI's does: it grows with the session, not a window.
struct KimiRule {
    tiers: [u32; 4],
    ts: Toolset,
    last: Vec<CallKey>,
    /// (streak start, highest tier reported in it)
    reported: Option<(u64, u8)>,
    /// The step was force-stopped.
    stop: bool,
}

impl KimiRule {
    /// A `user` record: `_turn` sets `_last_tool_calls = []`.
    fn new_turn(&mut self) {
        self.last.clear();
    }

    /// A step (model turn) begins.
    fn begin(&mut self) {
        self.ts.begin_step(&self.last);
        self.stop = false;
    }

    /// Record `i` calls `key`: the tiers it reaches fire there.
    fn call(&mut self, i: usize, key: CallKey, found: &mut Found<'_>) {
        let Handled::Run(Some((n, t, start))) = self.ts.handle(key, &self.tiers) else {
            return;
        };
        // The key just handled is the step's last call (no copy kept).
        let (name, args) = self.ts.current.last().expect("handled above");
        let before = match self.reported {
            Some((st, r)) if st == start => r,
            _ => 0,
        };
        self.stop |= t == 4;
        for k in before + 1..=t {
            found.push(
                i,
                KINDS[k as usize - 1],
                start as u32,
                format!("{n} consecutive identical calls to `{name}` with {args}"),
            );
            if found.full() {
                return;
            }
        }
        if t > before {
            self.reported = Some((start, t));
        }
    }

    /// The step ends.
    fn end(&mut self) {
        self.last = self.ts.end_step();
        if self.stop {
            // The turn is force-stopped; anything recorded after it
            // belongs to a new turn.
            self.last.clear();
        }
    }
}

/// The check fed live. Steps are cut as [`segments`] cuts them; a step
/// begins at its first record that makes it a model turn (nothing before
/// it in the segment reaches the toolset), so a call fires at its record.
struct KimiStream {
    rule: KimiRule,
    /// A segment is open.
    open: bool,
    /// It is a model turn and its step has begun.
    begun: bool,
}

impl Stream for KimiStream {
    fn keeps_from(&self) -> usize {
        usize::MAX // reads each record once, when fed
    }
    fn feed(&mut self, session: &Session, i: usize, out: &mut Vec<Detection>) {
        let e = &session.event(i);
        let user = matches!(e.record, Record::User { .. });
        if self.open && (e.starts_turn || user) {
            if self.begun {
                self.rule.end();
            }
            self.open = false;
        }
        if !self.open {
            self.open = true;
            self.begun = false;
            if user {
                self.rule.new_turn();
            }
        }
        let model = matches!(
            e.record,
            Record::Content { .. } | Record::Thought { .. } | Record::ToolCall { .. }
        );
        if !self.begun && (e.starts_turn || model) {
            self.begun = true;
            self.rule.begin();
        }
        if let Record::ToolCall { name, args, .. } = &e.record {
            let mut found = Found::new(session, None);
            self.rule
                .call(i, (name.clone(), canonical_args(args)), &mut found);
            out.extend(found.into_vec());
        }
    }
}
