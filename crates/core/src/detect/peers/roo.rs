//! Roo Code's `ToolRepetitionDetector`: the (limit+1)-th consecutive identical
//! tool call is blocked (peer-mappings section 2).

use super::common::{each_rule, At, Found, RecordRule, RecordStream};
use crate::detect::{
    Check, Detection, Family, ParamSet, ParamSpec, ParamValue, Params, Prepared, Profile, Stream,
    POLICY, POLICY_SPEC,
};
use crate::error::Result;
use crate::event::Record;
use crate::util::js::{push_sorted_object, stringify, stringify_sorted, write_string};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

const SRC: &str = "RooCodeInc/Roo-Code src/core/tools/ToolRepetitionDetector.ts @cb83656718";

/// The `roo` family.
pub struct Roo;

impl Family for Roo {
    fn name(&self) -> &'static str {
        "roo"
    }
    fn about(&self) -> &'static str {
        "Roo Code ToolRepetitionDetector: consecutive identical calls (name + stable-stringified params); the call after `limit` repeats is blocked and the user asked"
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            POLICY_SPEC,
            ParamSpec::int(
                "limit",
                -1,
                100_000,
                "repeats",
                "allowed repeats of the previous call (consecutiveMistakeLimit); the next identical call is blocked; 0 or less never blocks",
                SRC,
            ),
        ]
    }
    fn profiles(&self) -> Vec<Profile> {
        vec![Profile {
            name: "roo",
            about: "Roo Code @cb83656718 (2026-04): default limit 3 (the 4th identical call is blocked), one detector per task, asks the user",
            values: vec![
                (POLICY, ParamValue::word("ask")),
                ("limit", ParamValue::Int(3)),
            ],
        }]
    }
    fn checks(&self, params: &ParamSet) -> Result<Vec<Box<dyn Check>>> {
        let p = Params::new(self.name(), params);
        Ok(vec![Box::new(RooCheck {
            s: RooSettings {
                limit: p.get("limit")?,
            },
        })])
    }
}

/// The detector's state, usable on its own (the original's tests drive it directly).
#[derive(Debug, Clone)]
pub struct RooDetector {
    limit: i64,
    previous: Option<String>,
    count: i64,
}

impl RooDetector {
    /// A detector allowing `limit` repeats (`consecutiveMistakeLimit`).
    pub fn new(limit: i64) -> RooDetector {
        RooDetector {
            limit,
            previous: None,
            count: 0,
        }
    }

    /// `check(block)` for a native tool call: `params[k]` is the string itself
    /// or its `JSON.stringify`, and `nativeArgs` is the argument object.
    /// Returns whether the call may execute.
    pub fn check_call(&mut self, name: &str, args: &Map<String, Value>) -> bool {
        self.check_signature(call_signature(name, args))
    }

    /// `check(block)` on a block given by its parts, as the original's tests
    /// build them. Returns whether the call may execute.
    #[cfg_attr(not(test), allow(dead_code))] // read by the original's ported tests
    pub fn check_block(
        &mut self,
        name: &str,
        params: &BTreeMap<String, String>,
        native_args: Option<&Value>,
    ) -> bool {
        self.check_signature(serialize(name, params, native_args))
    }

    /// `check(block)` on a block's signature.
    fn check_signature(&mut self, sig: String) -> bool {
        if self.previous.as_deref() == Some(sig.as_str()) {
            self.count += 1;
        } else {
            self.count = 0;
            self.previous = Some(sig);
        }
        if self.limit > 0 && self.count >= self.limit {
            self.count = 0;
            self.previous = None;
            return false;
        }
        true
    }
}

/// The signature of a native tool call (see [`RooDetector::check_call`]):
/// what [`serialize`] makes of it, written directly (no copies of the
/// arguments, no maps built). Its keys in sorted order are `name`,
/// `nativeArgs` (a non-empty object only), `params`.
pub(crate) fn call_signature(name: &str, args: &Map<String, Value>) -> String {
    let mut out = String::with_capacity(64 + 2 * name.len());
    out.push_str("{\"name\":");
    write_string(&mut out, name);
    if !args.is_empty() {
        out.push_str(",\"nativeArgs\":");
        push_sorted_object(&mut out, args);
    }
    out.push_str(",\"params\":{");
    let param = |out: &mut String, i: usize, k: &str, v: &Value| {
        if i > 0 {
            out.push(',');
        }
        write_string(out, k);
        out.push(':');
        match v {
            Value::String(s) => write_string(out, s),
            other => write_string(out, &stringify(other)),
        }
    };
    if args.len() == 1 {
        // One key: nothing to sort (most calls).
        let (k, v) = args.iter().next().expect("one");
        param(&mut out, 0, k, v);
    } else {
        let mut entries: Vec<(&String, &Value)> = args.iter().collect();
        entries.sort_unstable_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
        for (i, (k, v)) in entries.into_iter().enumerate() {
            param(&mut out, i, k, v);
        }
    }
    out.push_str("}}");
    out
}

/// Each call's name and signature, by the address of its arguments.
type Signatures = HashMap<usize, (String, String)>;

/// The signature of every call of a session, by the address of its
/// arguments (stable while the session lives), with its name: made once and
/// shared by every configuration of a sweep.
fn signatures(s: &crate::event::Session) -> Signatures {
    let mut m = HashMap::new();
    for e in &s.events {
        if let Record::ToolCall { name, args, .. } = &e.record {
            let at = &**args as *const Map<String, Value> as usize;
            m.entry(at)
                .or_insert_with(|| (name.clone(), call_signature(name, args)));
        }
    }
    m
}

/// safe-stable-stringify of `{name, params, nativeArgs?}`: keys sorted at
/// every level; `nativeArgs` only when it is a non-empty object.
pub(crate) fn serialize(
    name: &str,
    params: &BTreeMap<String, String>,
    native: Option<&Value>,
) -> String {
    let mut obj = Map::new();
    obj.insert("name".into(), Value::String(name.to_string()));
    obj.insert(
        "params".into(),
        Value::Object(
            params
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        ),
    );
    if let Some(Value::Object(m)) = native {
        if !m.is_empty() {
            obj.insert("nativeArgs".into(), Value::Object(m.clone()));
        }
    }
    stringify_sorted(&Value::Object(obj))
}

/// What the check reads.
#[derive(Debug, Clone, PartialEq)]
struct RooSettings {
    limit: i64,
}

struct RooCheck {
    s: RooSettings,
}

impl Check for RooCheck {
    fn name(&self) -> &'static str {
        "roo.repetition"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }

    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        let sigs = session.shared("roo.signatures", signatures);
        each_rule(&session.session, limit, &mut self.rule(Some(sigs)))
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(RecordStream::boxed(self.rule(None)))
    }
}

impl RooCheck {
    fn rule(&self, sigs: Option<Arc<Signatures>>) -> Repetition {
        Repetition {
            det: RooDetector::new(self.s.limit),
            limit: self.s.limit,
            sigs,
        }
    }
}

/// The check's state: the detector, and (over a whole session) the
/// signatures a sweep made once; a live feed signs each call as it comes.
struct Repetition {
    det: RooDetector,
    limit: i64,
    sigs: Option<Arc<Signatures>>,
}

impl RecordRule for Repetition {
    fn visit(&mut self, at: At<'_>, found: &mut Found<'_>) {
        if let Record::ToolCall { name, args, .. } = &at.event.record {
            let at_args = &**args as *const Map<String, Value> as usize;
            let ok = match self.sigs.as_ref().and_then(|m| m.get(&at_args)) {
                Some((n, sig)) if n == name => self.det.check_signature(sig.clone()),
                _ => self.det.check_call(name, args),
            };
            if !ok {
                found.push(
                    at.i,
                    "tool_repetition",
                    0,
                    format!("{name} repeated {} times in a row", self.limit + 1),
                );
            }
        }
    }
}
