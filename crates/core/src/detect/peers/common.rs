//! Small pieces the peer ports share: building detections, matching tool
//! results to calls, Blade-style model-turn segments and Python equality.

use crate::detect::Detection;
use crate::event::{Event, Record, Session};
use rustc_hash::FxHashMap;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;

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
            turn: self.session.event(idx).turn,
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
    visit: impl FnMut(At<'s>, &mut Found<'s>),
) -> Vec<Detection> {
    let mut found = Found::new(session, limit);
    walk(session, &mut found, visit);
    found.into_vec()
}

/// Every record in order with its prompt count, until `found` is full;
/// true if it filled.
fn walk<'s>(
    session: &'s Session,
    found: &mut Found<'s>,
    mut visit: impl FnMut(At<'s>, &mut Found<'s>),
) -> bool {
    let mut prompts = Prompts::default();
    for (i, event) in session.events.iter().enumerate() {
        let new_prompt = prompts.observe(&event.record);
        let at = At {
            i,
            event,
            prompts: prompts.count,
            new_prompt,
        };
        visit(at, found);
        if found.full() {
            return true;
        }
    }
    false
}

/// A per-record rule's state, owned (it borrows nothing from the session),
/// so the same rule runs over a whole session ([`each_rule`]) and fed one
/// record at a time ([`RecordStream`], a check's [`Check::stream`]).
///
/// [`Check::stream`]: crate::detect::Check::stream
pub(crate) trait RecordRule: Send + 'static {
    /// Read one record (earlier records are in `found`'s session).
    fn visit(&mut self, at: At<'_>, found: &mut Found<'_>);
    /// The earliest record the rule may read again or report at (fed
    /// live, those before may be forgotten); by default it reads the
    /// record it is given and reports there.
    fn keeps_from(&self) -> usize {
        usize::MAX
    }
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
/// the prompt id in force is kept (not its `user` record's index), so a live
/// feed need not keep that record.
#[derive(Debug, Default, Clone)]
pub(crate) struct LivePrompts {
    count: u32,
    id: Option<Box<str>>,
}

impl LivePrompts {
    /// Read record `i` of `session`: whether it begins a prompt, and the
    /// prompts begun so far (as [`At`] gives them).
    pub(crate) fn observe(&mut self, session: &Session, i: usize) -> (bool, u32) {
        let mut prompts = Prompts {
            id: self.id.as_deref(),
            count: self.count,
        };
        let record = &session.event(i).record;
        let new_prompt = prompts.observe(record);
        self.count = prompts.count;
        if let Record::User { prompt_id, .. } = record {
            // Unchanged when the prompt goes on (no copy).
            if self.id.as_deref() != prompt_id.as_deref() {
                self.id = prompt_id.as_deref().map(Box::from);
            }
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
            event: session.event(i),
            prompts,
            new_prompt,
        };
        self.rule.visit(at, &mut found);
        out.extend(found.into_vec());
    }
    fn keeps_from(&self) -> usize {
        self.rule.keeps_from()
    }
}

/// For rules that read a model turn's text whole at the turn's last
/// `content` record (OpenRouter's SDK records it there, OpenHands maps it to
/// one agent message there): by record index, that record's turn text, the
/// turn's `content` records joined. With `calls_cancel`, a turn with a
/// `tool_call` has none (its text is the calls' thought).
pub(crate) fn last_contents(s: &Session, calls_cancel: bool) -> HashMap<usize, String> {
    let mut last: HashMap<u32, usize> = HashMap::new();
    let mut text: HashMap<u32, String> = HashMap::new();
    let mut calls: HashSet<u32> = HashSet::new();
    for (i, e) in s.events.iter().enumerate() {
        match &e.record {
            Record::Content { text: t } => {
                last.insert(e.turn, i);
                text.entry(e.turn).or_default().push_str(t);
            }
            Record::ToolCall { .. } if calls_cancel => {
                calls.insert(e.turn);
            }
            _ => {}
        }
    }
    last.into_iter()
        .filter(|(turn, _)| !calls.contains(turn))
        .map(|(turn, i)| (i, text.remove(&turn).unwrap_or_default()))
        .collect()
}

/// A rule that reads every record in order with [`last_contents`]' text at
/// the record that has one: driven over a whole session by [`each_text`]
/// and live by [`TextStream`], one implementation.
pub(crate) trait TextRule: Clone + Send + 'static {
    /// Read one record; `text` is its turn's text when it is the turn's
    /// last `content` record.
    fn visit(&mut self, at: At<'_>, text: Option<&str>, found: &mut Found<'_>);
    /// The session has ended.
    fn finish(&mut self, _found: &mut Found<'_>) {}
    /// The first record (0-based) the rule read but may still report at.
    fn held_from(&self) -> Option<usize> {
        None
    }
}

/// [`each_record`] driving a [`TextRule`], the texts made once per session
/// (`texts`, [`last_contents`]).
pub(crate) fn each_text(
    session: &Session,
    limit: Option<usize>,
    texts: &HashMap<usize, String>,
    rule: &mut impl TextRule,
) -> Vec<Detection> {
    let mut found = Found::new(session, limit);
    let full = walk(session, &mut found, |at, found| {
        let text = texts.get(&at.i).map(String::as_str);
        rule.visit(at, text, found)
    });
    // The session ended before the limit was reached.
    if !full {
        rule.finish(&mut found);
    }
    found.into_vec()
}

/// [`last_contents`] record by record: whether a `content` record is its
/// turn's last is known once the turn ends (a record of the next turn, or
/// the session's end), or once no later model record can join the turn
/// (turns numbered implicitly: after a `user` or `tool_result` record the
/// next model record starts a turn); until then the records from it on are
/// held, and handed on in order.
#[derive(Debug, Default)]
pub(crate) struct LiveText {
    calls_cancel: bool,
    turn: Option<u32>,
    /// The turn's text so far.
    text: String,
    has_call: bool,
    /// A `turn` record was read: only those start turns.
    explicit: bool,
    /// From the turn's latest `content` record on (while it may be last).
    held: VecDeque<usize>,
}

impl LiveText {
    pub(crate) fn new(calls_cancel: bool) -> LiveText {
        LiveText {
            calls_cancel,
            ..LiveText::default()
        }
    }

    /// Read record `i` of `s`; the records now decided go to `ready`, in
    /// order, with their text.
    pub(crate) fn feed(&mut self, s: &Session, i: usize, ready: &mut Vec<(usize, Option<String>)>) {
        let e = s.event(i);
        self.explicit |= matches!(e.record, Record::Turn);
        let new_turn = self.turn != Some(e.turn);
        let ended =
            !self.explicit && matches!(e.record, Record::User { .. } | Record::ToolResult { .. });
        if new_turn || ended {
            self.release(true, ready);
        }
        if new_turn {
            self.turn = Some(e.turn);
            self.text.clear();
            self.has_call = false;
        }
        match &e.record {
            Record::Content { text } => {
                // The held one was not the turn's last.
                self.release(false, ready);
                self.text.push_str(text);
                if self.calls_cancel && self.has_call {
                    ready.push((i, None));
                } else {
                    self.held.push_back(i);
                }
                return;
            }
            Record::ToolCall { .. } => {
                self.has_call = true;
                if self.calls_cancel {
                    self.release(false, ready);
                }
            }
            _ => {}
        }
        match self.held.is_empty() {
            true => ready.push((i, None)),
            false => self.held.push_back(i),
        }
    }

    /// Whether record `i` is a `user` record that a turn still open holds:
    /// turns numbered by `turn` records, where model records after it may
    /// still join the turn. A `user` record starts the next step (see
    /// [`crate::watch::Settle`]): what comes before it is taken as settled
    /// there, provisionally ([`LiveText::provisional`]).
    pub(crate) fn holds_user(&self, s: &Session, i: usize) -> bool {
        self.explicit
            && self.held.back() == Some(&i)
            && matches!(s.event(i).record, Record::User { .. })
    }

    /// The held records, as if the turn had ended before the last (a
    /// `user` record): the first with the turn's text.
    pub(crate) fn provisional(&self) -> Vec<(usize, Option<String>)> {
        let mut copy = LiveText {
            calls_cancel: self.calls_cancel,
            text: self.text.clone(),
            has_call: self.has_call,
            held: self.held.clone(),
            ..LiveText::default()
        };
        let mut out = Vec::new();
        copy.release(true, &mut out);
        out
    }

    /// The session has ended: the held records go to `ready`.
    pub(crate) fn finish(&mut self, ready: &mut Vec<(usize, Option<String>)>) {
        self.release(true, ready);
    }

    /// The first record held.
    pub(crate) fn held_from(&self) -> Option<usize> {
        self.held.front().copied()
    }

    /// Hand on the held records, the first (a `content` record) with the
    /// turn's text if it is the turn's `last`.
    fn release(&mut self, last: bool, ready: &mut Vec<(usize, Option<String>)>) {
        let Some(first) = self.held.pop_front() else {
            return;
        };
        let text = (last && !(self.calls_cancel && self.has_call)).then(|| self.text.clone());
        ready.push((first, text));
        ready.extend(self.held.drain(..).map(|j| (j, None)));
    }
}

/// A [`TextRule`] fed one record at a time ([`LiveText`] holds what it
/// cannot read yet), a check's [`Check::stream`].
///
/// A `user` record starts the next step, and a live feed hands out what
/// fired before it there (as a replay of the records so far settles it,
/// [`crate::watch::Settle`]); a turn numbered by `turn` records may still
/// get model records after it, though. So there the held records are read
/// by a copy of the rule as if the turn had ended, and what it finds is
/// pushed at once; once the turn has ended, the rule reads them itself and
/// pushes only what the copy did not (nothing, unless the turn did go on).
///
/// [`Check::stream`]: crate::detect::Check::stream
pub(crate) struct TextStream<R> {
    rule: R,
    text: LiveText,
    prompts: LivePrompts,
    ready: Vec<(usize, Option<String>)>,
    /// What a copy pushed for the held records, and the first record the
    /// copy may still report at.
    told: Vec<Detection>,
    told_held: Option<Option<usize>>,
}

impl<R: TextRule> TextStream<R> {
    /// A stream for `rule`, before the first record.
    pub(crate) fn boxed(rule: R, calls_cancel: bool) -> Box<dyn crate::detect::Stream> {
        Box::new(TextStream {
            rule,
            text: LiveText::new(calls_cancel),
            prompts: LivePrompts::default(),
            ready: Vec::new(),
            told: Vec::new(),
            told_held: None,
        })
    }

    /// `rule` reads `records` in order.
    fn read(
        rule: &mut R,
        prompts: &mut LivePrompts,
        records: Vec<(usize, Option<String>)>,
        session: &Session,
        found: &mut Found<'_>,
    ) {
        for (j, text) in records {
            let (new_prompt, count) = prompts.observe(session, j);
            let at = At {
                i: j,
                event: session.event(j),
                prompts: count,
                new_prompt,
            };
            rule.visit(at, text.as_deref(), found);
        }
    }

    /// Push what `found` has that a copy did not push before.
    fn push(&mut self, found: Found<'_>, out: &mut Vec<Detection>) {
        for d in found.into_vec() {
            match self.told.iter().position(|t| *t == d) {
                Some(k) => {
                    self.told.remove(k);
                }
                None => out.push(d),
            }
        }
    }

    /// The rule reads what [`LiveText`] handed on.
    fn step(&mut self, session: &Session, out: &mut Vec<Detection>) {
        if self.ready.is_empty() {
            return;
        }
        let mut found = Found::new(session, None);
        let ready = std::mem::take(&mut self.ready);
        let held_before = self.told_held.is_some();
        Self::read(
            &mut self.rule,
            &mut self.prompts,
            ready,
            session,
            &mut found,
        );
        self.push(found, out);
        if held_before && self.text.held_from().is_none() {
            // The held records are read: what the copy told is settled.
            self.told.clear();
            self.told_held = None;
        }
    }
}

impl<R: TextRule> crate::detect::Stream for TextStream<R> {
    fn feed(&mut self, session: &Session, i: usize, out: &mut Vec<Detection>) {
        self.text.feed(session, i, &mut self.ready);
        self.step(session, out);
        if self.text.holds_user(session, i) {
            let (mut rule, mut prompts) = (self.rule.clone(), self.prompts.clone());
            let mut found = Found::new(session, None);
            Self::read(
                &mut rule,
                &mut prompts,
                self.text.provisional(),
                session,
                &mut found,
            );
            // Told again by a later copy: pushed once.
            let told = std::mem::take(&mut self.told);
            let mut fresh = found.into_vec();
            for t in &told {
                if let Some(k) = fresh.iter().position(|d| d == t) {
                    fresh.remove(k);
                }
            }
            out.extend(fresh.iter().cloned());
            self.told = told;
            self.told.extend(fresh);
            self.told_held = Some(rule.held_from());
        }
    }
    fn finish(&mut self, session: &Session, out: &mut Vec<Detection>) {
        self.text.finish(&mut self.ready);
        self.step(session, out);
        let mut found = Found::new(session, None);
        self.rule.finish(&mut found);
        self.push(found, out);
    }
    fn held_from(&self) -> Option<u32> {
        let held = match self.told_held {
            // What the copy read is told; it holds what its rule holds.
            Some(copy) => [copy, None],
            None => [self.text.held_from(), self.rule.held_from()],
        };
        held.into_iter().flatten().min().map(|i| i as u32 + 1)
    }
    fn keeps_from(&self) -> usize {
        // The records held for their turn's text, and what the rule (or
        // a copy that read them early) may still report at.
        [
            self.text.held_from(),
            self.rule.held_from(),
            self.told_held.flatten(),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(usize::MAX)
    }
}

/// Calls not yet answered, in call order, for the peers' result-matching rule:
/// a result with an `id` answers the oldest unanswered call with that id; else
/// with a `name`, the oldest unanswered call of that name; else the oldest.
/// Indexed by id and by name: results that answer no call (ids that match
/// none) leave calls waiting for the rest of the session, and a scan of them
/// at every result made a long session quadratic.
#[derive(Debug, Clone)]
pub(crate) struct Unanswered<T> {
    /// By call number: the call's id and name (shared with the indexes).
    calls: BTreeMap<u64, Call<T>>,
    next: u64,
    /// Call numbers of each id and name, oldest first; a number answered
    /// through the other index may linger until it reaches the front.
    by_id: Index,
    by_name: Index,
}

/// A waiting call: its id, its name and what the rule keeps of it.
type Call<T> = (Option<Arc<str>>, Arc<str>, T);

/// Call numbers by key. The keys are shared with `calls`, and a key already
/// indexed is found by `&str`: a call costs no copy of a name seen before
/// (most calls are of a few tools) and one of its id.
type Index = FxHashMap<Arc<str>, Nums>;

/// The call numbers of one key, oldest first: the oldest held inline, so a
/// key with one waiting call (an id, nearly always) allocates no deque.
#[derive(Debug, Clone)]
struct Nums {
    /// The oldest (`None` only when `rest` is empty too).
    first: Option<u64>,
    rest: VecDeque<u64>,
}

impl Nums {
    fn one(k: u64) -> Nums {
        Nums {
            first: Some(k),
            rest: VecDeque::new(),
        }
    }
    fn push_back(&mut self, k: u64) {
        match self.first {
            None => self.first = Some(k),
            Some(_) => self.rest.push_back(k),
        }
    }
    fn front(&self) -> Option<&u64> {
        self.first.as_ref()
    }
    fn pop_front(&mut self) {
        self.first = self.rest.pop_front();
    }
    fn is_empty(&self) -> bool {
        self.first.is_none()
    }
}

impl<T> Default for Unanswered<T> {
    fn default() -> Self {
        Unanswered {
            calls: BTreeMap::new(),
            next: 0,
            by_id: Index::default(),
            by_name: Index::default(),
        }
    }
}

/// Index `k` under `key`; the key as held.
fn index(index: &mut Index, key: &str, k: u64) -> Arc<str> {
    if let Some((held, _)) = index.get_key_value(key) {
        let held = held.clone();
        index.get_mut(key).expect("found above").push_back(k);
        return held;
    }
    let held: Arc<str> = Arc::from(key);
    index.insert(held.clone(), Nums::one(k));
    held
}

/// The oldest call number of `key` still in `calls`, dropping those that
/// are not.
fn oldest<V>(index: &mut Index, key: &str, calls: &BTreeMap<u64, V>) -> Option<u64> {
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
fn forget(index: &mut Index, key: &str, k: u64) {
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
        let id = id.map(|id| index(&mut self.by_id, id, k));
        let name = index(&mut self.by_name, name, k);
        self.calls.insert(k, (id, name, value));
    }

    /// What the rule keeps of the oldest call still waiting.
    pub(crate) fn oldest(&self) -> Option<&T> {
        self.calls.first_key_value().map(|(_, (_, _, v))| v)
    }

    /// Forget every call (as a new one would, its room kept).
    pub(crate) fn clear(&mut self) {
        self.calls.clear();
        self.next = 0;
        self.by_id.clear();
        self.by_name.clear();
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

/// Cuts a session into [`Segment`]s record by record: a segment ends before
/// a record that starts a turn or is a `user` record, or with the session.
/// [`segments`] and the live streams cut with it.
#[derive(Debug, Default, Clone)]
pub(crate) struct Cutter {
    /// The open segment's first record, once a record was read since a cut.
    start: Option<usize>,
    model_turn: bool,
}

impl Cutter {
    /// Read record `i`: the segment it closes, if any.
    pub(crate) fn feed(&mut self, i: usize, e: &Event) -> Option<Segment> {
        let cut = e.starts_turn || matches!(e.record, Record::User { .. });
        let closed = if cut { self.close(i) } else { None };
        if self.start.is_none() {
            self.start = Some(i);
            self.model_turn = e.starts_turn;
        }
        if matches!(
            e.record,
            Record::Content { .. } | Record::Thought { .. } | Record::ToolCall { .. }
        ) {
            self.model_turn = true;
        }
        closed
    }

    /// The open segment, ended before record `end` (the session's length
    /// when it has ended).
    pub(crate) fn close(&mut self, end: usize) -> Option<Segment> {
        let start = self.start.take()?;
        Some(Segment {
            start,
            end,
            model_turn: std::mem::take(&mut self.model_turn),
        })
    }

    /// The open segment's first record.
    pub(crate) fn open_at(&self) -> Option<usize> {
        self.start
    }
}

/// Cut a session into segments.
pub(crate) fn segments(session: &Session) -> Vec<Segment> {
    let mut cut = Cutter::default();
    let mut out: Vec<Segment> = session
        .events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| cut.feed(i, e))
        .collect();
    out.extend(cut.close(session.events.len()));
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
            if x.len() != y.len() {
                return false;
            }
            // Keys in the same order (the usual case: one tool's calls) are
            // paired without a lookup; otherwise each is looked up.
            if x.keys().zip(y.keys()).all(|(k, j)| k == j) {
                return x.values().zip(y.values()).all(|(v, w)| py_eq(v, w));
            }
            x.iter().all(|(k, v)| y.get(k).is_some_and(|w| py_eq(v, w)))
        }
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Bool(_) | Value::Number(_), Value::Bool(_) | Value::Number(_)) => {
            py_num(a) == py_num(b)
        }
        _ => false,
    }
}

/// A string as `serde_json::to_string` writes it (`"` and `\` escaped, control
/// characters as `\b \t \n \f \r` or `\u00XX`, the rest as is),
/// appended with no string of its own.
pub(crate) fn push_json_str(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\t' => "\\t",
            b'\r' => "\\r",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            use std::fmt::Write as _;
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
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

    /// `py_eq` as written: every key of one object looked up in the other.
    fn py_eq_looked_up(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq_looked_up(p, q))
            }
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len()
                    && x.iter()
                        .all(|(k, v)| y.get(k).is_some_and(|w| py_eq_looked_up(v, w)))
            }
            _ => py_eq(a, b),
        }
    }

    /// Small JSON values whose objects share keys in any order.
    fn small_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(json!(null)),
            Just(json!(1)),
            Just(json!(1.0)),
            Just(json!(true)),
            Just(json!("a")),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                proptest::collection::vec((0..4u8, inner), 0..4).prop_map(|kv| {
                    Value::Object(kv.into_iter().map(|(k, v)| (format!("k{k}"), v)).collect())
                }),
            ]
        })
    }

    proptest::proptest! {
        /// Objects paired key by key when their keys come in one order
        /// compare as when every key is looked up.
        #[test]
        fn py_eq_pairs_as_it_looks_up(a in small_value(), b in small_value(), same in proptest::bool::ANY) {
            let b = if same { a.clone() } else { b };
            proptest::prop_assert_eq!(py_eq(&a, &b), py_eq_looked_up(&a, &b));
        }

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

    /// Cleared, the calls waiting are forgotten as a new one's would be.
    #[test]
    fn cleared_calls_are_forgotten() {
        let mut u = Unanswered::default();
        u.push(Some("a"), "x", 1);
        u.push(None, "x", 2);
        u.push(Some("b"), "y", 3);
        u.answer(None, Some("x"));
        u.clear();
        assert_eq!(u.values().count(), 0);
        for (id, name) in [
            (Some("a"), None),
            (None, Some("x")),
            (Some("b"), None),
            (None, None),
        ] {
            assert_eq!(u.answer(id, name), None);
        }
        u.push(Some("a"), "x", 4);
        u.push(None, "x", 5);
        assert_eq!(u.answer(None, Some("x")), Some(4));
        assert_eq!(u.answer(Some("a"), None), None);
        assert_eq!(u.answer(None, None), Some(5));
    }
}
