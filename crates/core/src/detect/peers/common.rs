//! Small pieces the peer ports share: building detections, matching tool
//! results to calls, Blade-style model-turn segments and Python equality.

use crate::detect::Detection;
use crate::event::{Event, Record, Session};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, VecDeque};

/// The detections of one check run, up to its limit: once a detection
/// fills the limit the check stops (further pushes are ignored).
#[derive(Debug)]
pub(crate) struct Found<'s> {
    session: &'s Session,
    out: Vec<Detection>,
    limit: Option<usize>,
    full: bool,
}

impl<'s> Found<'s> {
    /// Nothing found yet on `session`.
    pub(crate) fn new(session: &'s Session, limit: Option<usize>) -> Found<'s> {
        Found {
            session,
            out: Vec::new(),
            limit,
            full: false,
        }
    }

    /// A detection at the 0-based record index `idx`.
    pub(crate) fn push(&mut self, idx: usize, kind: &'static str, prompt: u32, detail: String) {
        if self.full {
            return;
        }
        self.out.push(Detection {
            kind,
            event: idx as u32 + 1,
            turn: self.session.events[idx].turn,
            prompt,
            strike: 0,
            detail,
        });
        self.full = self.limit.is_some_and(|n| self.out.len() >= n);
    }

    /// The session read (records up to the one being read, when fed live).
    pub(crate) fn session(&self) -> &'s Session {
        self.session
    }

    /// Whether the last detection filled the limit: the check stops here.
    pub(crate) fn full(&self) -> bool {
        self.full
    }

    /// The detections, in the order found.
    pub(crate) fn into_vec(self) -> Vec<Detection> {
        self.out
    }
}

/// Prompts as the agents count them: a `user` record begins one unless it
/// carries the prompt id already in force (one without an id always does).
#[derive(Debug, Default)]
pub(crate) struct Prompts<'s> {
    id: Option<&'s str>,
    count: u32,
}

impl<'s> Prompts<'s> {
    /// Feed a record; true when it begins a prompt.
    pub(crate) fn observe(&mut self, record: &'s Record) -> bool {
        let Record::User { prompt_id, .. } = record else {
            return false;
        };
        let same = self.count > 0 && prompt_id.is_some() && prompt_id.as_deref() == self.id;
        if !same {
            self.count += 1;
        }
        self.id = prompt_id.as_deref();
        !same
    }
}

/// One record of the shared loop.
#[derive(Debug, Clone, Copy)]
pub(crate) struct At<'s> {
    /// 0-based index of the record.
    pub i: usize,
    /// The record and its turn.
    pub event: &'s Event,
    /// Prompts begun so far, this record's included (0 before the first `user` record).
    pub prompts: u32,
    /// This record begins a prompt.
    pub new_prompt: bool,
}

/// The loop the per-record peer checks share: every record in order with
/// its prompt count, until a detection fills `limit`.
pub(crate) fn each_record<'s>(
    session: &'s Session,
    limit: Option<usize>,
    mut visit: impl FnMut(At<'s>, &mut Found<'s>),
) -> Vec<Detection> {
    let mut found = Found::new(session, limit);
    let mut prompts = Prompts::default();
    for (i, event) in session.events.iter().enumerate() {
        let new_prompt = prompts.observe(&event.record);
        let at = At {
            i,
            event,
            prompts: prompts.count,
            new_prompt,
        };
        visit(at, &mut found);
        if found.full() {
            break;
        }
    }
    found.into_vec()
}

/// A per-record rule's state, owned (it borrows nothing from the session),
/// so the same rule runs over a whole session ([`each_rule`]) and fed one
/// record at a time ([`RecordStream`], a check's [`Check::stream`]).
///
/// [`Check::stream`]: crate::detect::Check::stream
pub(crate) trait RecordRule: Send + 'static {
    /// Read one record (earlier records are in `found`'s session).
    fn visit(&mut self, at: At<'_>, found: &mut Found<'_>);
}

/// [`each_record`] driving a [`RecordRule`].
pub(crate) fn each_rule(
    session: &Session,
    limit: Option<usize>,
    rule: &mut impl RecordRule,
) -> Vec<Detection> {
    each_record(session, limit, |at, found| rule.visit(at, found))
}

/// [`Prompts`] fed one record at a time, borrowing nothing between records:
/// which record's prompt id is in force is kept by index.
#[derive(Debug, Default)]
pub(crate) struct LivePrompts {
    count: u32,
    at: Option<usize>,
}

impl LivePrompts {
    /// Read record `i` of `session`: whether it begins a prompt, and the
    /// prompts begun so far (as [`At`] gives them).
    pub(crate) fn observe(&mut self, session: &Session, i: usize) -> (bool, u32) {
        let id = self.at.and_then(|j| match &session.events[j].record {
            Record::User { prompt_id, .. } => prompt_id.as_deref(),
            _ => None,
        });
        let mut prompts = Prompts {
            id,
            count: self.count,
        };
        let record = &session.events[i].record;
        let new_prompt = prompts.observe(record);
        self.count = prompts.count;
        if matches!(record, Record::User { .. }) {
            self.at = Some(i);
        }
        (new_prompt, self.count)
    }
}

/// A [`RecordRule`] fed one record at a time: what [`each_record`] keeps
/// between records (the prompt count) kept here instead.
pub(crate) struct RecordStream<R> {
    rule: R,
    prompts: LivePrompts,
}

impl<R: RecordRule> RecordStream<R> {
    /// A stream for `rule`, before the first record.
    pub(crate) fn boxed(rule: R) -> Box<dyn crate::detect::Stream> {
        Box::new(RecordStream {
            rule,
            prompts: LivePrompts::default(),
        })
    }
}

impl<R: RecordRule> crate::detect::Stream for RecordStream<R> {
    fn feed(&mut self, session: &Session, i: usize, out: &mut Vec<Detection>) {
        let (new_prompt, prompts) = self.prompts.observe(session, i);
        let mut found = Found::new(session, None);
        let at = At {
            i,
            event: &session.events[i],
            prompts,
            new_prompt,
        };
        self.rule.visit(at, &mut found);
        out.extend(found.into_vec());
    }
}

/// Calls not yet answered, in call order, for the peers' result-matching rule:
/// a result with an `id` answers the oldest unanswered call with that id; else
/// with a `name`, the oldest unanswered call of that name; else the oldest.
/// Indexed by id and by name: results that answer no call (ids that match
/// none) leave calls waiting for the rest of the session, and a scan of them
/// at every result made a long session quadratic.
#[derive(Debug)]
pub(crate) struct Unanswered<T> {
    /// By call number.
    calls: BTreeMap<u64, (Option<String>, String, T)>,
    next: u64,
    /// Call numbers of each id and name, oldest first; a number answered
    /// through the other index may linger until it reaches the front.
    by_id: HashMap<String, VecDeque<u64>>,
    by_name: HashMap<String, VecDeque<u64>>,
}

impl<T> Default for Unanswered<T> {
    fn default() -> Self {
        Unanswered {
            calls: BTreeMap::new(),
            next: 0,
            by_id: HashMap::new(),
            by_name: HashMap::new(),
        }
    }
}

/// The oldest call number of `key` still in `calls`, dropping those that
/// are not.
fn oldest<V>(
    index: &mut HashMap<String, VecDeque<u64>>,
    key: &str,
    calls: &BTreeMap<u64, V>,
) -> Option<u64> {
    let q = index.get_mut(key)?;
    while let Some(&k) = q.front() {
        if calls.contains_key(&k) {
            return Some(k);
        }
        q.pop_front();
    }
    index.remove(key);
    None
}

/// Forget `k` at the front of `key`'s numbers (where answered calls are).
fn forget(index: &mut HashMap<String, VecDeque<u64>>, key: &str, k: u64) {
    if let Some(q) = index.get_mut(key) {
        if q.front() == Some(&k) {
            q.pop_front();
        }
        if q.is_empty() {
            index.remove(key);
        }
    }
}

impl<T> Unanswered<T> {
    /// Remember a call.
    pub(crate) fn push(&mut self, id: Option<&str>, name: &str, value: T) {
        let k = self.next;
        self.next += 1;
        if let Some(id) = id {
            self.by_id.entry(id.to_string()).or_default().push_back(k);
        }
        self.by_name
            .entry(name.to_string())
            .or_default()
            .push_back(k);
        self.calls
            .insert(k, (id.map(String::from), name.to_string(), value));
    }

    /// The calls not yet answered, oldest first.
    pub(crate) fn values(&self) -> impl Iterator<Item = &T> {
        self.calls.values().map(|c| &c.2)
    }

    /// Take the call a result answers, if any.
    pub(crate) fn answer(&mut self, id: Option<&str>, name: Option<&str>) -> Option<T> {
        let k = match (id, name) {
            (Some(id), _) => oldest(&mut self.by_id, id, &self.calls),
            (None, Some(n)) => oldest(&mut self.by_name, n, &self.calls),
            (None, None) => self.calls.keys().next().copied(),
        }?;
        let (id, name, value) = self.calls.remove(&k).expect("indexed calls are held");
        if let Some(id) = &id {
            forget(&mut self.by_id, id, k);
        }
        forget(&mut self.by_name, &name, k);
        Some(value)
    }
}

/// One segment of a session as Blade (and Goose) cut it: before every record
/// that starts a turn and before every `user` record (peer-mappings 5.1).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Segment {
    /// First record (0-based).
    pub start: usize,
    /// One past the last record.
    pub end: usize,
    /// Whether it is a model turn (one LLM call).
    pub model_turn: bool,
}

/// Cut a session into segments.
pub(crate) fn segments(session: &Session) -> Vec<Segment> {
    let ev = &session.events;
    let mut out = Vec::new();
    let mut start = 0;
    for i in 0..=ev.len() {
        let cut = i == ev.len()
            || (i > start && (ev[i].starts_turn || matches!(ev[i].record, Record::User { .. })));
        if cut && i > start {
            let model_turn = ev[start].starts_turn
                || ev[start..i].iter().any(|e| {
                    matches!(
                        e.record,
                        Record::Content { .. } | Record::Thought { .. } | Record::ToolCall { .. }
                    )
                });
            out.push(Segment {
                start,
                end: i,
                model_turn,
            });
            start = i;
        }
    }
    out
}

/// Python `==` between two values from `json.loads`: dicts ignore key order,
/// numbers compare by value across int, float and bool, `"1" != 1`.
pub(crate) fn py_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| py_eq(v, w)))
        }
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Bool(_) | Value::Number(_), Value::Bool(_) | Value::Number(_)) => {
            py_num(a) == py_num(b)
        }
        _ => false,
    }
}

/// A number as Python holds it: exact integers stay integers.
#[derive(Debug, PartialEq)]
enum PyNum {
    Int(i128),
    Float(f64),
}

fn py_num(v: &Value) -> PyNum {
    let n = match v {
        Value::Bool(b) => return PyNum::Int(*b as i128),
        Value::Number(n) => n,
        _ => unreachable!("py_num on a non-number"),
    };
    if let Some(i) = n.as_i64() {
        return PyNum::Int(i as i128);
    }
    if let Some(u) = n.as_u64() {
        return PyNum::Int(u as i128);
    }
    let f = n.as_f64().unwrap_or(f64::NAN);
    // Python compares int and float exactly; an integral float within range
    // equals the integer of the same value.
    if f.fract() == 0.0 && f.abs() < 1e38 {
        PyNum::Int(f as i128)
    } else {
        PyNum::Float(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The rule as written: scans of the calls in order.
    #[derive(Default)]
    struct Scanned(Vec<(Option<String>, String, u32)>);

    impl Scanned {
        fn answer(&mut self, id: Option<&str>, name: Option<&str>) -> Option<u32> {
            let pos = match (id, name) {
                (Some(id), _) => self.0.iter().position(|c| c.0.as_deref() == Some(id)),
                (None, Some(n)) => self.0.iter().position(|c| c.1 == n),
                (None, None) => (!self.0.is_empty()).then_some(0),
            }?;
            Some(self.0.remove(pos).2)
        }
    }

    proptest::proptest! {
        /// The indexed calls answer as the scan does, whatever mix of ids,
        /// names, repeats and unmatched results.
        #[test]
        fn indexed_calls_answer_as_a_scan(
            ops in proptest::collection::vec((proptest::bool::ANY, 0..4u8, 0..3u8, 0..3u8), 0..200)
        ) {
            let mut a: Unanswered<u32> = Unanswered::default();
            let mut b = Scanned::default();
            for (i, (call, id, name, how)) in ops.into_iter().enumerate() {
                let id = (id < 3).then(|| format!("i{id}"));
                let name = format!("n{name}");
                if call {
                    a.push(id.as_deref(), &name, i as u32);
                    b.0.push((id, name, i as u32));
                } else {
                    let (id, name) = match how {
                        0 => (id.as_deref(), Some(name.as_str())),
                        1 => (None, Some(name.as_str())),
                        _ => (None, None),
                    };
                    proptest::prop_assert_eq!(a.answer(id, name), b.answer(id, name));
                }
                let left: Vec<u32> = a.values().copied().collect();
                let want: Vec<u32> = b.0.iter().map(|c| c.2).collect();
                proptest::prop_assert_eq!(left, want);
            }
        }
    }

    #[test]
    fn python_equality() {
        assert!(py_eq(
            &json!({"a": 1, "b": [1.0, true]}),
            &json!({"b": [1, 1], "a": 1.0})
        ));
        assert!(py_eq(&json!(0), &json!(false)));
        assert!(!py_eq(&json!("1"), &json!(1)));
        assert!(!py_eq(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(!py_eq(&json!(0.5), &json!(1)));
        assert!(py_eq(&json!(0.5), &json!(0.5)));
    }

    fn user(id: Option<&str>) -> Record {
        Record::User {
            text: String::new(),
            prompt_id: id.map(String::from),
        }
    }

    #[test]
    fn prompts_begin_at_a_new_id_or_none() {
        let records = [
            Record::Turn,
            user(Some("a")),
            user(Some("a")),
            user(None),
            user(None),
            user(Some("b")),
            Record::Turn,
            user(Some("b")),
        ];
        let mut p = Prompts::default();
        let begins: Vec<bool> = records.iter().map(|r| p.observe(r)).collect();
        assert_eq!(begins, [false, true, false, true, true, true, false, false]);
        assert_eq!(p.count, 4);
    }

    #[test]
    fn each_record_stops_at_the_detection_that_fills_the_limit() {
        let records: Vec<(Record, crate::event::Origin)> = [
            user(Some("a")),
            Record::Turn,
            user(Some("b")),
            Record::Turn,
            Record::Turn,
        ]
        .into_iter()
        .map(|r| (r, crate::event::Origin::default()))
        .collect();
        let s = Session::from_records("s".into(), records);
        let mut seen = Vec::new();
        // A detection at every record, two at the third.
        let got = each_record(&s, Some(3), |at, found| {
            seen.push((at.i, at.prompts, at.new_prompt));
            found.push(at.i, "x", at.prompts, String::new());
            if at.i == 2 {
                found.push(at.i, "x", at.prompts, String::new());
                found.push(at.i, "ignored once full", 0, String::new());
            }
        });
        assert_eq!(seen, [(0, 1, true), (1, 1, false), (2, 2, true)]);
        let events: Vec<u32> = got.iter().map(|d| d.event).collect();
        assert_eq!(events, [1, 2, 3]);
        assert_eq!(each_record(&s, None, |_, _| {}).len(), 0);
        let all = each_record(&s, None, |at, found| {
            found.push(at.i, "x", 0, String::new())
        });
        assert_eq!(all.len(), 5);
    }

    #[test]
    fn unanswered_matching_rule() {
        let mut u = Unanswered::default();
        u.push(Some("a"), "x", 1);
        u.push(None, "y", 2);
        u.push(Some("c"), "x", 3);
        assert_eq!(u.answer(None, Some("x")), Some(1));
        assert_eq!(u.answer(Some("zz"), Some("y")), None);
        assert_eq!(u.answer(None, None), Some(2));
        assert_eq!(u.answer(Some("c"), None), Some(3));
        assert_eq!(u.answer(None, None), None);
    }
}
