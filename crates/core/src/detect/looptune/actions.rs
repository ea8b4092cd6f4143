//! What counts as the same action, computed once per session and per
//! "sameness" setting and shared by every rule and configuration that reads
//! the same setting (like the peers' per-session argument texts, see
//! [`Prepared::shared`]).
//!
//! An action is a tool call. Its key is its name (trimmed as Gemini CLI's
//! `turn.ts` does, `generic_tool` when empty), with [`Same::Args`] its
//! arguments as `JSON.stringify` writes them, and with [`Same::Result`] also
//! the first `result_chars` characters of its result. With `normalize`,
//! volatile values (UUIDs, hex ids, ISO times, epoch numbers, temporary
//! paths) are replaced by placeholders in arguments and results alike, and
//! the keys listed in `volatile` are dropped from the arguments at any depth.
//!
//! A call keyed without its result is an action at its own record; a call
//! keyed with its result (every call under [`Same::Result`], and calls of a
//! polling tool under any setting: they count only when their result repeats
//! too) is an action at its result's record, and a call never answered is
//! no action. Results are matched to calls by the peers' rule (id, else name,
//! else the oldest unanswered call).

use crate::detect::gemini::prep::Prompter;
use crate::detect::peers::common::Unanswered;
use crate::detect::{Detection, Prepared, Stream};
use crate::event::{Record, Session};
use regex::Regex;
use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::{Map, Value};
use std::sync::{Arc, LazyLock, Mutex};

/// Which parts of a call make it the same action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Same {
    /// The tool name only.
    Name,
    /// Name and arguments.
    Args,
    /// Name, arguments and the head of the result.
    Result,
}

/// The sameness setting: every rule that reads actions holds one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SameSettings {
    /// What is compared.
    pub same: Same,
    /// Replace volatile values (ids, times, temp paths) by placeholders.
    pub normalize: bool,
    /// Argument keys dropped at any depth.
    pub volatile: Vec<String>,
    /// Characters of a result that are compared (Unicode scalar values).
    pub result_chars: usize,
    /// Tools that count only when their result repeats too.
    pub polling: Vec<String>,
}

/// One item of the action stream, in record order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    /// A new prompt begins (every rule's state is cleared).
    NewPrompt,
    /// A new model step (a turn start or a `user` record) or model text
    /// (content or thought) between calls: OpenCode's doom-loop run of tool
    /// parts ends here.
    Break,
    /// An action.
    Act(Act),
}

/// One action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Act {
    /// 0-based record index where the action is evaluated.
    pub at: usize,
    /// Prompt count at that record (0 before the first `user` record).
    pub prompt: u32,
    /// Interned key: equal keys, the same action.
    pub key: u32,
    /// Interned key of the call without its result (equal to what `key`
    /// interns when the result is not part of it).
    pub call: u32,
}

/// A session's action stream under one [`SameSettings`].
#[derive(Debug, Default)]
pub struct Actions {
    /// Items in order.
    pub items: Vec<Item>,
    /// By key: what detections show (name and normalised arguments, short).
    pub shown: Vec<String>,
}

/// The action streams made so far for one session, by setting.
#[derive(Debug, Default)]
struct Cache {
    made: Mutex<Vec<(SameSettings, Arc<Actions>)>>,
}

/// The action stream of `session` under `s`: made once per session and
/// setting, shared by every rule and configuration.
pub fn actions(session: &Prepared, s: &SameSettings) -> Arc<Actions> {
    let cache = session.shared("looptune.actions", |_| Cache::default());
    if let Some((_, a)) = cache
        .made
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(k, _)| k == s)
    {
        return a.clone();
    }
    let raw = session.call_args();
    let made = Arc::new(Actions::with(&session.session, s, &raw));
    let mut held = cache.made.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, a)) = held.iter().find(|(k, _)| k == s) {
        return a.clone();
    }
    held.push((s.clone(), made.clone()));
    made
}

/// The name as Gemini CLI keys it since 2026-05-08: JavaScript-trimmed,
/// `generic_tool` when empty.
pub fn trimmed_name(name: &str) -> &str {
    let t = name.trim_matches(|c: char| {
        c.len_utf16() == 1 && crate::util::js::is_js_space(c as u32 as u16)
    });
    if t.is_empty() {
        "generic_tool"
    } else {
        t
    }
}

static VOLATILE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        // UUIDs
        r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
        // ISO 8601 date-times (and dates with a time)
        r"|\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?",
        // temporary paths
        r"|(?:/tmp|/var/folders|/private/var/folders|/var/tmp)/[^\s\x22',;:)]*",
        // hex ids of 8 or more digits holding at least one digit and one letter
        r"|\b(?:0x)?(?:[0-9a-f]*[0-9][0-9a-f]*[a-f][0-9a-f]*|[0-9a-f]*[a-f][0-9a-f]*[0-9][0-9a-f]*)\b",
        // epoch seconds or milliseconds (2001 .. 2286)
        r"|\b1\d{9}(?:\d{3})?\b",
    ))
    .expect("volatile pattern")
});

/// `text` with its volatile values replaced by `<v>`. Hex runs shorter than
/// 8 characters are kept (words such as `deadbeef` are rare, short ones common).
/// By the matches alone (`find_iter`: no capture groups resolved, no copy
/// of a match kept), as `replace_all` with a closure would replace them.
pub fn normalize_text(text: &str) -> std::borrow::Cow<'_, str> {
    if !may_hold_volatile(text.as_bytes()) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::new();
    let mut done = 0;
    for m in VOLATILE.find_iter(text) {
        let v = m.as_str();
        let hex = v.trim_start_matches("0x");
        if v.len() < 8 || (hex.len() < 8 && hex.bytes().all(|b| b.is_ascii_hexdigit())) {
            continue;
        }
        out.push_str(&text[done..m.start()]);
        out.push_str("<v>");
        done = m.end();
    }
    if done == 0 {
        // Nothing replaced (a replaced match is 8 bytes or more).
        return std::borrow::Cow::Borrowed(text);
    }
    out.push_str(&text[done..]);
    std::borrow::Cow::Owned(out)
}

/// Whether `text` may hold a value [`normalize_text`] replaces: a byte scan
/// that rules most texts out without the regex (whose search costs more
/// than the rest of a record). On ASCII text (where `\d` is `[0-9]` and
/// `\b` an ASCII boundary) a replaced match is 8 or more characters and is
/// one of: a UUID or a hex id or epoch (a run of 8 or more hex digits), a
/// hex id after `0X` (which `trim_start_matches("0x")` leaves, so 6 hex
/// digits are enough), an ISO date (4 digits, then `-`) or a temporary
/// path (`/tmp` or `/var`). Any other text, non-ASCII included, may.
fn may_hold_volatile(b: &[u8]) -> bool {
    if !b.is_ascii() {
        return true;
    }
    let (mut hex, mut digits) = (0, 0);
    for (i, &c) in b.iter().enumerate() {
        if c.is_ascii_hexdigit() {
            hex += 1;
            digits = if c.is_ascii_digit() { digits + 1 } else { 0 };
            if hex >= 8 {
                return true;
            }
            continue;
        }
        let rest = &b[i + 1..];
        let volatile = match c {
            b'-' => digits >= 4,
            b'x' | b'X' => i > 0 && b[i - 1] == b'0',
            b'/' => rest.starts_with(b"tmp") || rest.starts_with(b"var"),
            _ => false,
        };
        if volatile {
            return true;
        }
        (hex, digits) = (0, 0);
    }
    false
}

/// Whether a number is an epoch in seconds or milliseconds (2001 .. 2286).
fn is_epoch(n: &serde_json::Number) -> bool {
    n.as_u64().is_some_and(|x| {
        (1_000_000_000..10_000_000_000).contains(&x)
            || (1_000_000_000_000..10_000_000_000_000).contains(&x)
    })
}

fn normalize_value(v: &Value, drop: &[String]) -> Value {
    match v {
        Value::String(s) => Value::String(normalize_text(s).into_owned()),
        Value::Number(n) if is_epoch(n) => Value::String("<v>".into()),
        Value::Array(a) => Value::Array(a.iter().map(|x| normalize_value(x, drop)).collect()),
        Value::Object(m) => Value::Object(normalize_map(m, drop)),
        _ => v.clone(),
    }
}

fn normalize_map(m: &Map<String, Value>, drop: &[String]) -> Map<String, Value> {
    m.iter()
        .filter(|(k, _)| !drop.iter().any(|d| d == *k))
        .map(|(k, v)| (k.clone(), normalize_value(v, drop)))
        .collect()
}

fn drop_keys(v: &Value, drop: &[String]) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.iter().map(|x| drop_keys(x, drop)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !drop.iter().any(|d| d == *k))
                .map(|(k, v)| (k.clone(), drop_keys(v, drop)))
                .collect(),
        ),
        _ => v.clone(),
    }
}

/// The arguments as the key compares them (a live feed writes them into
/// its buffer with `push_args_text`).
#[cfg(test)]
pub fn args_text(args: &Map<String, Value>, s: &SameSettings) -> String {
    let mut out = String::new();
    push_args_text(&mut out, args, s);
    out
}

/// Whether normalising and dropping the volatile keys (as `s` says) would
/// leave `args` as they are: no volatile key at any depth, no epoch number,
/// no string the byte scan of [`normalize_text`] does not rule out. Most
/// calls' arguments: they are then written as they are, not copied into a
/// new map first.
fn args_kept(args: &Map<String, Value>, s: &SameSettings) -> bool {
    args.iter()
        .all(|(k, v)| !s.volatile.iter().any(|d| d == k) && value_kept(v, s))
}

/// [`args_kept`] for any value.
fn value_kept(v: &Value, s: &SameSettings) -> bool {
    match v {
        Value::String(t) => !s.normalize || !may_hold_volatile(t.as_bytes()),
        Value::Number(n) => !s.normalize || !is_epoch(n),
        Value::Array(a) => a.iter().all(|x| value_kept(x, s)),
        Value::Object(m) => args_kept(m, s),
        Value::Null | Value::Bool(_) => true,
    }
}

/// [`args_text`] appended to `out` (a live feed reuses one buffer).
fn push_args_text(out: &mut String, args: &Map<String, Value>, s: &SameSettings) {
    use crate::util::js::push_object;
    if (s.normalize || !s.volatile.is_empty()) && args_kept(args, s) {
        // The rewritten map would equal `args`, in the same key order.
        push_object(out, args)
    } else if s.normalize {
        push_object(out, &normalize_map(args, &s.volatile))
    } else if s.volatile.is_empty() {
        push_object(out, args)
    } else {
        match drop_keys(&Value::Object(args.clone()), &s.volatile) {
            Value::Object(m) => push_object(out, &m),
            _ => unreachable!("an object stays an object"),
        }
    }
}

/// The head of a result as the key compares it.
pub fn result_head(output: &str, s: &SameSettings) -> String {
    let head: String = output.chars().take(s.result_chars).collect();
    if s.normalize {
        normalize_text(&head).into_owned()
    } else {
        head
    }
}

fn short(text: &str) -> String {
    if text.chars().count() <= 120 {
        text.to_string()
    } else {
        let mut t: String = text.chars().take(117).collect();
        t.push_str("...");
        t
    }
}
/// One tool's calls by their arguments: each call's number.
#[derive(Debug, Default)]
struct ByArgs {
    /// Arguments not compared (`same = name`).
    none: Option<u32>,
    /// The stringified arguments as written, by [`CallArgs`](crate::detect::prepared::CallArgs) id.
    raw: FxHashMap<u32, u32>,
    /// Without the session's texts, the text itself (equal texts, equal
    /// ids: the same sameness), found by `&str` (no copy but of a new one).
    text: FxHashMap<String, u32>,
}

impl ByArgs {
    fn retain(&mut self, keep: impl Fn(u32) -> bool) {
        self.none = self.none.filter(|c| keep(*c));
        self.raw.retain(|_, c| keep(*c));
        self.text.retain(|_, c| keep(*c));
    }
    fn len(&self) -> usize {
        usize::from(self.none.is_some()) + self.raw.len() + self.text.len()
    }
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Actions {
    /// The action stream of a session under `s`, the arguments' texts given:
    /// [`ActionFeed`] fed every record.
    fn with(
        session: &Session,
        s: &SameSettings,
        raw: &crate::detect::prepared::CallArgs,
    ) -> Actions {
        let mut feed = ActionFeed::new(s.clone());
        let mut items = Vec::new();
        for i in 0..session.events.len() {
            feed.record(session, i, Some(raw), &mut items);
        }
        // Never compacted: the keys are 0..n.
        let mut shown = vec![String::new(); feed.next_key as usize];
        for (k, c) in feed.key_call.drain() {
            shown[k as usize] = feed.call_text.get(&c).cloned().unwrap_or_default();
        }
        Actions { items, shown }
    }
}

/// What a detection shows of an action key (name and normalised arguments, short).
pub trait Shown {
    /// The key's text.
    fn shown(&self, key: u32) -> &str;
}

impl Shown for Actions {
    fn shown(&self, key: u32) -> &str {
        &self.shown[key as usize]
    }
}

/// The action stream made one record at a time: a whole session's
/// [`Actions`] is this fed every record (with the arguments' texts a sweep
/// made once), a rule's live [`Stream`] feeds it as records come. Keys are
/// interned here; a live feed drops those its rule no longer holds
/// ([`ActionFeed::compact`]), so its memory follows the rule's, not the session's.
pub struct ActionFeed {
    s: SameSettings,
    rewrite: bool,
    prompts: Prompter,
    /// A call (name, then arguments) without its result, then with it.
    /// By name first, so a call of a known tool is found by `&str`.
    calls: FxHashMap<String, ByArgs>,
    /// The text of the call being read (reused: no allocation a call).
    text: String,
    keys: FxHashMap<(u32, Option<String>), u32>,
    /// Each key's call, and each call's text: a key shows its call (the
    /// text is made once a call, not at every record).
    key_call: FxHashMap<u32, u32>,
    call_text: FxHashMap<u32, String>,
    next_call: u32,
    next_key: u32,
    /// Calls keyed with their result: (the call's id, shown).
    pending: Unanswered<u32>,
    /// Keys and calls held after the last compaction.
    live: usize,
}

impl ActionFeed {
    /// Before the first record.
    pub fn new(s: SameSettings) -> ActionFeed {
        ActionFeed {
            rewrite: s.normalize || !s.volatile.is_empty(),
            s,
            prompts: Prompter::default(),
            calls: FxHashMap::default(),
            text: String::new(),
            keys: FxHashMap::default(),
            key_call: FxHashMap::default(),
            call_text: FxHashMap::default(),
            next_call: 0,
            next_key: 0,
            pending: Unanswered::default(),
            live: 0,
        }
    }

    /// Push the items of record `i` of `session` (`raw`: the session's
    /// argument texts, if made; else each call's is written here).
    pub fn record(
        &mut self,
        session: &Session,
        i: usize,
        raw: Option<&crate::detect::prepared::CallArgs>,
        out: &mut Vec<Item>,
    ) {
        let e = &session.event(i);
        if self.prompts.observe(session, i) {
            out.push(Item::NewPrompt);
        }
        if e.starts_turn
            || matches!(
                e.record,
                Record::User { .. } | Record::Content { .. } | Record::Thought { .. }
            )
        {
            out.push(Item::Break);
        }
        let prompt = self.prompts.count();
        match &e.record {
            Record::ToolCall { name, args, id } => {
                let name = trimmed_name(name);
                let polling = self.s.polling.iter().any(|p| p == name);
                let by_args = match self.calls.get_mut(name) {
                    Some(m) => m,
                    None => self.calls.entry(name.to_string()).or_default(),
                };
                // The call's number by its arguments' key, and the text a
                // new call shows.
                let (found, text) = match (self.s.same, raw) {
                    (Same::Name, _) if !polling => (by_args.none, None),
                    (_, Some(raw)) if !self.rewrite => {
                        let a = raw.ids[i];
                        (by_args.raw.get(&a).copied(), Some(&*raw.texts[a as usize]))
                    }
                    _ => {
                        self.text.clear();
                        push_args_text(&mut self.text, args, &self.s);
                        (by_args.text.get(self.text.as_str()).copied(), None)
                    }
                };
                let call = match found {
                    Some(c) => c,
                    None => {
                        let c = self.next_call;
                        self.next_call += 1;
                        let shown = match (self.s.same, raw) {
                            (Same::Name, _) if !polling => {
                                by_args.none = Some(c);
                                name.to_string()
                            }
                            (_, Some(raw)) if !self.rewrite => {
                                by_args.raw.insert(raw.ids[i], c);
                                format!("{name} {}", short(text.unwrap_or_default()))
                            }
                            _ => {
                                by_args.text.insert(self.text.clone(), c);
                                format!("{name} {}", short(&self.text))
                            }
                        };
                        self.call_text.insert(c, shown);
                        c
                    }
                };
                if self.s.same == Same::Result || polling {
                    self.pending.push(id.as_deref(), name, call);
                } else {
                    self.act(out, i, prompt, call, None);
                }
            }
            Record::ToolResult {
                id, name, output, ..
            } => {
                let name = name.as_deref().map(trimmed_name);
                if let Some(call) = self.pending.answer(id.as_deref(), name) {
                    let head = result_head(output.as_deref().unwrap_or(""), &self.s);
                    self.act(out, i, prompt, call, Some(head));
                }
            }
            _ => {}
        }
    }

    fn act(
        &mut self,
        out: &mut Vec<Item>,
        at: usize,
        prompt: u32,
        call: u32,
        head: Option<String>,
    ) {
        let next = self.next_key;
        let key = *self.keys.entry((call, head)).or_insert_with(|| {
            self.next_key += 1;
            self.key_call.insert(next, call);
            next
        });
        out.push(Item::Act(Act {
            at,
            prompt,
            key,
            call,
        }));
    }

    /// Forget the keys and calls no later action can match: those its
    /// rules do not hold (nor a held key's call, nor a call awaiting its
    /// result). Runs once the maps have doubled past what was held after
    /// the last run, so it costs amortised O(1) a record.
    /// `held` adds what the rules reading this feed hold (as [`ActRule::held`]).
    pub fn compact(&mut self, held: impl Fn(&mut FxHashSet<u32>, &mut FxHashSet<u32>)) {
        if self.keys.len() + self.call_count() <= 2 * self.live + 64 {
            return;
        }
        let (mut keys, mut calls) = (FxHashSet::default(), FxHashSet::default());
        held(&mut keys, &mut calls);
        self.keys.retain(|_, k| keys.contains(k));
        self.key_call.retain(|k, _| keys.contains(k));
        calls.extend(self.keys.keys().map(|(c, _)| *c));
        calls.extend(self.pending.values().copied());
        self.calls.retain(|_, m| {
            m.retain(|c| calls.contains(&c));
            !m.is_empty()
        });
        self.call_text.retain(|c, _| calls.contains(c));
        self.live = self.keys.len() + self.call_count();
    }
}

impl ActionFeed {
    /// Calls held (new calls are numbered in order, none forgotten but by
    /// [`compact`](Self::compact)).
    fn call_count(&self) -> usize {
        self.call_text.len()
    }
}

impl Shown for ActionFeed {
    fn shown(&self, key: u32) -> &str {
        self.key_call
            .get(&key)
            .and_then(|c| self.call_text.get(c))
            .map_or("", String::as_str)
    }
}

/// A rule over the action stream: its state between items, the same over
/// a whole session ([`run_acts`]) and fed one record at a time
/// (its group's stream, [`Live`]: a check's [`Check::stream`](crate::detect::Check::stream)).
pub trait ActRule: Send + 'static {
    /// Read one item (`shown`: the keys' texts; `s`: the session so far).
    fn item(&mut self, item: &Item, shown: &dyn Shown, s: &Session, out: &mut Vec<Detection>);
    /// Add the action keys and call keys still compared with later actions.
    fn held(&self, keys: &mut FxHashSet<u32>, calls: &mut FxHashSet<u32>);
}

/// `rule` over a session's action stream.
pub fn run_acts(mut rule: impl ActRule, acts: &Actions, s: &Session) -> Vec<Detection> {
    let mut out = Vec::new();
    for item in &acts.items {
        rule.item(item, acts, s, &mut out);
    }
    out
}

/// Where a rule's live stream runs. The rules of one kind of a
/// configuration (the action rules: repeat, cycle, window, stall; the call
/// rules: target, ladder, same_edit, outcome) share one stream, so a record
/// is read into actions once per sameness setting (calls once), not once per
/// rule: the first check of the group runs it, the others' streams are idle.
/// The group's rules are next to each other in check order and push their
/// detections of a record in that order from the first one's stream, so the
/// live `Detector` (which orders one event's detections by check index) and
/// [`merge`](crate::detect::merge) order them as they would separate streams'.
pub(crate) enum Live<T: ?Sized> {
    /// This check's stream runs the group (its settings in check order,
    /// this check's first).
    Lead(Arc<[Box<T>]>),
    /// An earlier check's stream runs this rule.
    Follow,
}

/// The [`Live`] of each check of a group, in check order: the first leads.
pub(crate) fn lives<T: ?Sized>(group: Vec<Box<T>>) -> impl FnMut() -> Live<T> {
    let mut lead = Some(Arc::<[Box<T>]>::from(group));
    move || lead.take().map_or(Live::Follow, Live::Lead)
}

/// The stream of a rule its group's first check runs: it pushes nothing.
pub(crate) struct Idle;

impl Stream for Idle {
    fn keeps_from(&self) -> usize {
        usize::MAX // reads each record once, when fed
    }
    fn feed(&mut self, _: &Session, _: usize, _: &mut Vec<Detection>) {}
}

/// An action rule's settings, as its group's stream builds the rule.
pub(crate) trait ActSpec: Send + Sync {
    /// What counts as the same action.
    fn same(&self) -> &SameSettings;
    /// The rule before the first record.
    fn fresh(&self) -> Box<dyn ActRule>;
}

impl Live<dyn ActSpec> {
    /// The check's stream: its group's, or idle.
    pub(crate) fn stream(&self) -> Box<dyn Stream> {
        match self {
            Live::Lead(specs) => ActGroup::boxed(specs),
            Live::Follow => Box::new(Idle),
        }
    }
}

/// A group of [`ActRule`]s fed one record at a time, with one action
/// stream made as records come for each sameness setting among them.
pub(crate) struct ActGroup {
    feeds: Vec<(ActionFeed, Vec<Item>)>,
    /// Each rule, in check order, with its feed's index.
    rules: Vec<(usize, Box<dyn ActRule>)>,
}

impl ActGroup {
    /// The stream of rules `specs` (in check order).
    pub(crate) fn boxed(specs: &[Box<dyn ActSpec>]) -> Box<dyn Stream> {
        let mut feeds: Vec<(ActionFeed, Vec<Item>)> = Vec::new();
        let mut rules = Vec::with_capacity(specs.len());
        for sp in specs {
            let f = match feeds.iter().position(|(f, _)| f.s == *sp.same()) {
                Some(f) => f,
                None => {
                    feeds.push((ActionFeed::new(sp.same().clone()), Vec::new()));
                    feeds.len() - 1
                }
            };
            rules.push((f, sp.fresh()));
        }
        Box::new(ActGroup { feeds, rules })
    }
}

impl Stream for ActGroup {
    fn keeps_from(&self) -> usize {
        // Calls and results are read when fed; the feeds keep what later
        // actions compare.
        usize::MAX
    }
    fn feed(&mut self, session: &Session, i: usize, out: &mut Vec<Detection>) {
        for (feed, items) in &mut self.feeds {
            items.clear();
            feed.record(session, i, None, items);
        }
        // Rule by rule, as separate streams fed in check order push them.
        for (f, rule) in &mut self.rules {
            let (feed, items) = &self.feeds[*f];
            for item in items {
                rule.item(item, feed, session, out);
            }
        }
        let rules = &self.rules;
        for (n, (feed, _)) in self.feeds.iter_mut().enumerate() {
            feed.compact(|keys, calls| {
                for (_, r) in rules.iter().filter(|(f, _)| *f == n) {
                    r.held(keys, calls);
                }
            });
        }
    }
}

/// One tool result with the name of the call it answers (whatever the
/// sameness setting): what the error-streak rule reads.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// 0-based record index of the result.
    pub at: usize,
    /// Prompt count there.
    pub prompt: u32,
    /// The tool's name (its call's, else the result's own).
    pub tool: Arc<str>,
    /// Whether the tool reported an error.
    pub error: bool,
}

/// Prompt starts and tool results made one record at a time: a whole
/// session's [`outcomes`] is this fed every record. Holds the calls not
/// yet answered.
#[derive(Default)]
pub struct OutcomeFeed {
    prompts: Prompter,
    calls: Unanswered<Arc<str>>,
    /// The trimmed tool names seen: a call of a known tool copies no text.
    tools: FxHashSet<Arc<str>>,
}

impl OutcomeFeed {
    /// `name` trimmed, shared.
    fn tool(&mut self, name: &str) -> Arc<str> {
        let name = trimmed_name(name);
        match self.tools.get(name) {
            Some(t) => t.clone(),
            None => {
                let t: Arc<str> = Arc::from(name);
                self.tools.insert(t.clone());
                t
            }
        }
    }
}

impl OutcomeFeed {
    /// Push what record `i` of `session` brings (`None`: a new prompt).
    pub fn record(&mut self, session: &Session, i: usize, out: &mut Vec<Option<Outcome>>) {
        if self.prompts.observe(session, i) {
            out.push(None);
        }
        match &session.event(i).record {
            Record::ToolCall { name, id, .. } => {
                let tool = self.tool(name);
                self.calls.push(id.as_deref(), name, tool);
            }
            Record::ToolResult {
                id, name, error, ..
            } => {
                let tool = match self.calls.answer(id.as_deref(), name.as_deref()) {
                    Some(t) => t,
                    None => name.as_deref().map_or_else(Arc::default, |n| self.tool(n)),
                };
                out.push(Some(Outcome {
                    at: i,
                    prompt: self.prompts.count(),
                    tool,
                    error: *error == Some(true),
                }));
            }
            _ => {}
        }
    }
}

/// Every prompt start and tool result of a session, in order (`None` for a
/// new prompt): shared by every error-streak configuration.
pub fn outcomes(session: &Prepared) -> Arc<Vec<Option<Outcome>>> {
    session.shared("looptune.outcomes", |s| {
        let mut out = Vec::new();
        let mut feed = OutcomeFeed::default();
        for i in 0..s.events.len() {
            feed.record(s, i, &mut out);
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A check's sharing key is its settings' `Debug` text: the lists as
    /// written, whatever index is built beside them.
    #[test]
    fn tool_lists_show_and_compare_as_their_entries() {
        let keys = |e: &[&str]| {
            TargetKeys::parse(&e.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
        };
        let a = keys(&["edit:path", "write:file_path", "edit:file"]);
        assert_eq!(
            format!("{a:?}"),
            r#"TargetKeys([("edit", "path"), ("write", "file_path"), ("edit", "file")])"#
        );
        assert_eq!(a, keys(&["edit:path", "write:file_path", "edit:file"]));
        assert_ne!(a, keys(&["edit:file", "write:file_path", "edit:path"]));
        let mut args = Map::new();
        args.insert("file".into(), Value::String("b.rs".into()));
        args.insert("path".into(), Value::String("a.rs".into()));
        assert_eq!(a.target("edit", &args).as_deref(), Some("a.rs"));
        let c = ChangeTools::parse(&["bash:writes".to_string(), "edit".to_string()]).unwrap();
        assert_eq!(
            format!("{c:?}"),
            r#"ChangeTools([("bash", Some("writes")), ("edit", None)])"#
        );
        assert!(c.changes("edit", &Map::new()));
        assert!(!c.changes("read", &Map::new()));
    }

    /// Holds the last action only (as the repeat rule does).
    struct Last(Option<u32>, usize);

    impl ActRule for Last {
        fn item(&mut self, item: &Item, _: &dyn Shown, s: &Session, out: &mut Vec<Detection>) {
            if let Item::Act(a) = item {
                if self.0 == Some(a.key) {
                    self.1 += 1;
                    out.push(crate::detect::looptune::detection(
                        s,
                        a.at,
                        "x",
                        0,
                        String::new(),
                    ));
                }
                self.0 = Some(a.key);
            }
        }
        fn held(&self, keys: &mut FxHashSet<u32>, _: &mut FxHashSet<u32>) {
            keys.extend(self.0);
        }
    }

    #[test]
    fn a_live_feed_forgets_the_keys_its_rule_no_longer_holds() {
        use crate::detect::looptune::tests::{call, session};
        // 5,000 distinct calls, every tenth made twice in a row.
        let mut records = Vec::new();
        for n in 0..5000 {
            records.push(call("cat", serde_json::json!({ "path": n })));
            if n % 10 == 0 {
                records.push(call("cat", serde_json::json!({ "path": n })));
            }
        }
        let s = session(records);
        let same = SameSettings {
            same: Same::Args,
            normalize: false,
            volatile: vec![],
            result_chars: 100,
            polling: vec![],
        };
        let mut st = ActGroup {
            feeds: vec![(ActionFeed::new(same), Vec::new())],
            rules: vec![(0, Box::new(Last(None, 0)))],
        };
        let mut most = 0;
        let mut repeats = 0;
        for i in 0..s.events.len() {
            let mut out = Vec::new();
            st.feed(&s, i, &mut out);
            repeats += out.len();
            let f = &st.feeds[0].0;
            let calls: usize = f.calls.values().map(|m| m.len()).sum();
            assert_eq!(calls, f.call_text.len(), "a text for every call held");
            most = most.max(f.keys.len() + calls + f.key_call.len());
        }
        // Repeats are still seen as repeats.
        assert_eq!(repeats, 500);
        assert!(most < 300, "{most} entries held");
    }

    /// `normalize_text` as it was written first: `replace_all` with a closure.
    fn normalize_by_replace_all(text: &str) -> String {
        VOLATILE
            .replace_all(text, |c: &regex::Captures| {
                let m = &c[0];
                let hex = m.trim_start_matches("0x");
                if m.len() < 8 || (hex.len() < 8 && hex.bytes().all(|b| b.is_ascii_hexdigit())) {
                    m.to_string()
                } else {
                    "<v>".to_string()
                }
            })
            .into_owned()
    }

    #[test]
    fn normalizing_by_matches_replaces_what_replace_all_replaced() {
        let texts = [
            "",
            "plain words only",
            "run 3f2a9c1e-1b2c-4d5e-8f90-123456789abc at 2026-11-26T15:16:49.123Z",
            "in /tmp/build-x81/out.txt id 9f86d081884c since 1764170209 or 1764170209123",
            "cafe add 12345 face 0x1f deadbeef-free build 2026 f123 0xdeadbeef1",
            "9f86d081884c",
            "x9f86d081884c 1764170209123x /var/tmp/a,b 2026-01-02 03:04 ab12cd34",
            "fn f12() {} fn f997() {} 0x12345678 0xabcdef12 12345678ab",
            "ÄÖ 3F2A9C1E-1B2C-4D5E-8F90-123456789ABC ü /private/var/folders/x y",
        ];
        for t in texts {
            assert_eq!(normalize_text(t), normalize_by_replace_all(t), "{t:?}");
            let twice = format!("{t} {t}\n{t}");
            assert_eq!(normalize_text(&twice), normalize_by_replace_all(&twice));
        }
        let old_loose = loose_by_regexes;
        for t in [
            "  a\t b \n\n c  ",
            "took 0.53s and 12 ms",
            "",
            "   ",
            texts[3],
        ] {
            assert_eq!(normalize_loose(t), old_loose(t), "{t:?}");
        }
    }

    /// `normalize_loose` as it was written first: both regexes, always.
    fn loose_by_regexes(t: &str) -> String {
        let d = regex::Regex::new(r"\b\d+(?:\.\d+)?\s*(?:s|ms|sec|secs|seconds)\b").unwrap();
        let t = normalize_by_replace_all(t);
        let t = d.replace_all(&t, "<t>");
        t.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    proptest::proptest! {
        /// The byte scans that skip the regexes skip them only where they
        /// would replace nothing: texts made of the pieces the patterns
        /// look for (digits, hex letters, dashes, colons, `0x`, temporary
        /// paths, units, white space, non-ASCII digits and letters).
        #[test]
        fn skipping_the_regexes_changes_no_text(pieces in proptest::collection::vec(
            proptest::sample::select(vec![
                "0", "1", "7", "9", "a", "f", "F", "e", "g", "x", "X", "0x", "0X", "-", ":",
                "T", "Z", "+", " ", "  ", "\t", "\n", "\u{0B}", ".", "/", "/tmp", "/var/",
                "/var/folders/", "/private/var/folders/", "/var/tmp/", "tmp", "s", "ms", "sec",
                "seconds", "<", "\"", "'", ",", ";", ")", "_", "é", "\u{661}", "\u{FF11}",
                "\u{212A}", "12345678", "1764170209", "2026-11-26", "3f2a9c1e", "deadbeef",
                "ab12cd", "1234", "12", "T15:16", "\u{A0}",
            ]),
            0..24,
        )) {
            let t: String = pieces.concat();
            proptest::prop_assert_eq!(normalize_text(&t), normalize_by_replace_all(&t));
            proptest::prop_assert_eq!(normalize_loose(&t), loose_by_regexes(&t));
        }
    }

    /// The arguments' text as it was written first: always rewritten.
    fn args_text_rewritten(args: &Map<String, Value>, s: &SameSettings) -> String {
        let mut out = String::new();
        if s.normalize {
            crate::util::js::push_object(&mut out, &normalize_map(args, &s.volatile))
        } else if let Value::Object(m) = drop_keys(&Value::Object(args.clone()), &s.volatile) {
            crate::util::js::push_object(&mut out, &m)
        }
        out
    }

    fn arg_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            proptest::sample::select(vec![
                "src/f1.rs",
                "/tmp/x",
                "9f86d081884c",
                "2026-11-26T15:16",
                "0Xab12cd",
                "ls -la",
                "",
                "é 1764170209",
            ])
            .prop_map(|t| Value::String(t.into())),
            proptest::sample::select(vec![0u64, 7, 999_999_999, 1_764_170_209, 1_764_170_209_123])
                .prop_map(Value::from),
            Just(Value::from(-3)),
            Just(Value::from(1.5)),
            Just(Value::Null),
            Just(Value::Bool(true)),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec(
                    (
                        proptest::sample::select(vec!["nonce", "path", "a", "1", "request_id"]),
                        inner
                    ),
                    0..4,
                )
                .prop_map(|kv| Value::Object(
                    kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
            ]
        })
    }

    proptest::proptest! {
        /// Arguments written as they are when nothing in them would be
        /// rewritten read as the rewritten ones, under every setting.
        #[test]
        fn arguments_kept_as_they_are_read_as_rewritten(
            v in arg_value(),
            normalize in proptest::bool::ANY,
            drop in proptest::bool::ANY,
        ) {
            let args = match v {
                Value::Object(m) => m,
                other => [("x".to_string(), other)].into_iter().collect(),
            };
            let s = SameSettings {
                same: Same::Args,
                normalize,
                volatile: if drop { vec!["nonce".into(), "request_id".into()] } else { vec![] },
                result_chars: 100,
                polling: vec![],
            };
            proptest::prop_assert_eq!(args_text(&args, &s), args_text_rewritten(&args, &s));
        }
    }

    #[test]
    fn volatile_values_become_placeholders() {
        let t = "run 3f2a9c1e-1b2c-4d5e-8f90-123456789abc at 2026-11-26T15:16:49.123Z \
                 in /tmp/build-x81/out.txt id 9f86d081884c since 1764170209 or 1764170209123";
        assert_eq!(
            normalize_text(t),
            "run <v> at <v> in <v> id <v> since <v> or <v>"
        );
        // Words, short hex and ordinary numbers stay.
        let kept = "cafe add 12345 face 0x1f deadbeef-free build 2026";
        assert_eq!(normalize_text(kept), kept);
    }

    #[test]
    fn volatile_keys_are_dropped_at_any_depth_and_epochs_in_numbers_replaced() {
        let args: Map<String, Value> = serde_json::from_str(
            r#"{"cmd":"ls","nonce":"x1","opts":{"nonce":"y","at":1764170209},"list":[{"nonce":1}]}"#,
        )
        .unwrap();
        let mut s = SameSettings {
            same: Same::Args,
            normalize: false,
            volatile: vec!["nonce".into()],
            result_chars: 100,
            polling: vec![],
        };
        assert_eq!(
            args_text(&args, &s),
            r#"{"cmd":"ls","opts":{"at":1764170209},"list":[{}]}"#
        );
        s.normalize = true;
        assert_eq!(
            args_text(&args, &s),
            r#"{"cmd":"ls","opts":{"at":"<v>"},"list":[{}]}"#
        );
    }
}

// Issue #45: what the rules for the missing kinds read. A call's *target*
// (the file, URL or the like it acts on) and whether it *changes* something
// come from per-tool lists, so they hold for every agent whose logs we read.

/// `target_keys`' default: per tool, the argument naming what it acts on,
/// `TOOL:KEY`, the first present one winning. Claude Code, Gemini CLI / Qwen
/// Code, OpenHands (both SDKs), SWE-agent, Codex, OpenCode, Goose, Cline,
/// Kimi CLI, Crush, Copilot-style `create_file`. Whole-file writes, reads
/// and fetches only: tools that replace a part of a file (`Edit`, `replace`)
/// are left out, since several partial edits of one file in a row are
/// ordinary work (a clean Claude Code session of the corpus edits one
/// document 8 times in a row); the editors' one tool for everything is in,
/// its sub-command telling `view` from `str_replace`.
pub const TARGET_KEYS: &[&str] = &[
    "Read:file_path",
    "Write:file_path",
    "NotebookEdit:notebook_path",
    "WebFetch:url",
    "read_file:file_path",
    "read_file:absolute_path",
    "read_file:path",
    "write_file:file_path",
    "write_file:path",
    "list_directory:dir_path",
    "list_directory:path",
    "web_fetch:url",
    "str_replace_editor:path",
    "file_editor:path",
    "text_editor:path",
    "developer__text_editor:path",
    "create_file:filePath",
    "create_file:path",
    "create_file:file_path",
    "view:file_path",
    "view:path",
    "write:filePath",
    "write:file_path",
    "write:path",
    "read:filePath",
    "read:file_path",
    "open:path",
    "create:filename",
    "apply_patch:input",
    "write_to_file:path",
    "ReadFile:path",
    "WriteFile:path",
    "fetch:url",
    "webfetch:url",
];

/// `change_tools`' default: tools whose success changes something. `TOOL`,
/// every call; `TOOL:SUB`, calls whose `command` argument is `SUB`
/// (OpenHands' and Goose's editors, whose `view` changes nothing);
/// `TOOL:writes`, shell calls whose command writes ([`shell_writes`]).
pub const CHANGE_TOOLS: &[&str] = &[
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
    "write_file",
    "replace",
    "edit",
    "write",
    "create_file",
    "apply_patch",
    "create",
    "insert",
    "write_to_file",
    "replace_in_file",
    "WriteFile",
    "StrReplaceFile",
    "str_replace_editor:create",
    "str_replace_editor:str_replace",
    "str_replace_editor:insert",
    "str_replace_editor:undo_edit",
    "file_editor:create",
    "file_editor:str_replace",
    "file_editor:insert",
    "file_editor:undo_edit",
    "text_editor:write",
    "text_editor:str_replace",
    "text_editor:insert",
    "text_editor:undo_edit",
    "developer__text_editor:write",
    "developer__text_editor:str_replace",
    "developer__text_editor:insert",
    "developer__text_editor:undo_edit",
    "Bash:writes",
    "bash:writes",
    "run_shell_command:writes",
    "exec_command:writes",
    "shell:writes",
    "execute_bash:writes",
    "run:writes",
    "developer__shell:writes",
];

/// A list entry that is not of its list's form (the entry as written).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}`")]
pub struct BadEntry(pub String);

/// A `TOOL:REST` list entry split at its last colon (tool names may hold
/// colons, argument keys do not). `None` when either part is empty.
fn split_entry(entry: &str) -> Option<(&str, &str)> {
    let (tool, rest) = entry.rsplit_once(':')?;
    (!tool.is_empty() && !rest.is_empty()).then_some((tool, rest))
}

/// `TOOL:...` entries: as listed (the settings, what `Debug` and `==`
/// read, so a check's sharing key is the list's) and each tool's values in
/// list order, so a call finds its tool's by one hash lookup, not a scan.
#[derive(Clone, Default)]
struct ByTool<V> {
    list: Vec<(String, V)>,
    index: FxHashMap<String, Vec<V>>,
}

impl<V: Clone> ByTool<V> {
    fn new(list: Vec<(String, V)>) -> ByTool<V> {
        let mut index: FxHashMap<String, Vec<V>> = FxHashMap::default();
        for (t, v) in &list {
            index.entry(t.clone()).or_default().push(v.clone());
        }
        ByTool { list, index }
    }

    /// The values listed for `tool`, in order.
    fn get(&self, tool: &str) -> Option<&[V]> {
        self.index.get(tool).map(Vec::as_slice)
    }
}

impl<V: std::fmt::Debug> std::fmt::Debug for ByTool<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.list.fmt(f)
    }
}

impl<V: PartialEq> PartialEq for ByTool<V> {
    fn eq(&self, other: &Self) -> bool {
        self.list == other.list
    }
}

impl<V: Eq> Eq for ByTool<V> {}

/// Per tool, the argument keys naming a call's target, in order.
#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub struct TargetKeys(ByTool<String>);

impl TargetKeys {
    /// From `TOOL:KEY` entries; the first entry that is not one is returned
    /// as the error.
    pub fn parse(entries: &[String]) -> std::result::Result<TargetKeys, BadEntry> {
        let list: Vec<(String, String)> = entries
            .iter()
            .map(|e| {
                split_entry(e)
                    .map(|(t, k)| (t.to_string(), k.to_string()))
                    .ok_or_else(|| BadEntry(e.clone()))
            })
            .collect::<std::result::Result<_, _>>()?;
        Ok(TargetKeys(ByTool::new(list)))
    }

    /// What the call acts on: the first listed key of its tool present with
    /// a string value; a Codex patch (`*** Update File: PATH` lines) gives
    /// the files it touches.
    pub fn target(&self, tool: &str, args: &Map<String, Value>) -> Option<String> {
        self.0.get(tool)?.iter().find_map(|k| match args.get(k) {
            Some(Value::String(s)) if !s.trim().is_empty() => {
                Some(patch_files(s).unwrap_or_else(|| s.trim().to_string()))
            }
            _ => None,
        })
    }
}

/// The files a Codex `apply_patch` text names, joined; `None` for any other text.
fn patch_files(text: &str) -> Option<String> {
    let files: Vec<&str> = text
        .lines()
        .filter_map(|l| {
            ["*** Update File: ", "*** Add File: ", "*** Delete File: "]
                .iter()
                .find_map(|p| l.strip_prefix(p))
        })
        .map(str::trim)
        .collect();
    (!files.is_empty()).then(|| files.join("\n"))
}

/// A call's sub-command: its `command` argument when that is one word
/// (`view`, `create`, `str_replace`), not a shell command line.
pub fn sub_command(args: &Map<String, Value>) -> Option<&str> {
    match args.get("command") {
        Some(Value::String(s))
            if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
        {
            Some(s)
        }
        _ => None,
    }
}

/// A shell call's command line: `command` or `cmd`, a string or an argv.
pub fn shell_command(args: &Map<String, Value>) -> Option<String> {
    match args.get("command").or_else(|| args.get("cmd"))? {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => Some(
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    }
}

static SHELL_WRITE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\bsed\s+(?:-[a-zA-Z]+\s+)*-[a-zA-Z]*i|\bperl\s+(?:-[a-zA-Z]+\s+)*-[a-zA-Z]*i",
        r"|\btee\b|\bpatch\b|\bgit\s+(?:apply|checkout|restore|reset|stash|am|cherry-pick|revert)\b",
        r"|(?:^|[\s;&|(])(?:mv|cp|rm|touch|mkdir|truncate)\s",
        r"|\bopen\([^)]*['\x22][wa]b?\+?['\x22]|\.write_text\(",
    ))
    .expect("shell write pattern")
});

/// Whether a shell command line writes: in-place edits (`sed -i`), a
/// redirect to a file (not `/dev/null`, not `2>&1`), `tee`, `patch`, git
/// commands that rewrite the tree, file moves and removals, Python writes.
/// A heuristic: what bash-only agents (mini-swe-agent, SWE-agent) edit with.
pub fn shell_writes(cmd: &str) -> bool {
    if SHELL_WRITE.is_match(cmd) {
        return true;
    }
    let b = cmd.as_bytes();
    let mut i = 0;
    // Inside quotes a `>` is text (`grep 'a > b'`), not a redirect.
    let mut quote = None;
    while i < b.len() {
        match (quote, b[i]) {
            (None, q @ (b'\'' | b'"')) => quote = Some(q),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
        if b[i] != b'>' || quote.is_some() {
            i += 1;
            continue;
        }
        let prev = if i > 0 { b[i - 1] } else { b' ' };
        let mut j = i + 1;
        if j < b.len() && b[j] == b'>' {
            j += 1;
        }
        // `->`, `=>`, `<>`, `>=`, `>&2`: no redirect to a file.
        let arrow = matches!(prev, b'-' | b'=' | b'<');
        if !arrow && j < b.len() && !matches!(b[j], b'=' | b'&') {
            while j < b.len() && b[j] == b' ' {
                j += 1;
            }
            let word: &[u8] = &b[j..];
            let end = word
                .iter()
                .position(|c| c.is_ascii_whitespace() || b";&|<>)".contains(c))
                .unwrap_or(word.len());
            let word = &word[..end];
            if !word.is_empty() && !word.starts_with(b"/dev/") {
                return true;
            }
        }
        i = j.max(i + 1);
    }
    false
}

/// Which calls change something, from `TOOL`, `TOOL:SUB` and `TOOL:writes`.
#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub struct ChangeTools(ByTool<Option<String>>);

impl ChangeTools {
    /// From the list's entries (a plain tool name, or `TOOL:SUB`).
    pub fn parse(entries: &[String]) -> std::result::Result<ChangeTools, BadEntry> {
        let list: Vec<(String, Option<String>)> = entries
            .iter()
            .map(|e| {
                if !e.contains(':') {
                    return if e.is_empty() {
                        Err(BadEntry(e.clone()))
                    } else {
                        Ok((e.clone(), None))
                    };
                }
                split_entry(e)
                    .map(|(t, s)| (t.to_string(), Some(s.to_string())))
                    .ok_or_else(|| BadEntry(e.clone()))
            })
            .collect::<std::result::Result<_, _>>()?;
        Ok(ChangeTools(ByTool::new(list)))
    }

    /// Whether this call, if it succeeds, changes something.
    pub fn changes(&self, tool: &str, args: &Map<String, Value>) -> bool {
        self.0.get(tool).is_some_and(|subs| {
            subs.iter().any(|sub| match sub.as_deref() {
                None => true,
                Some("writes") => shell_command(args).is_some_and(|c| shell_writes(&c)),
                Some(s) => sub_command(args) == Some(s),
            })
        })
    }
}

/// One step of a session's calls in record order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A new prompt begins.
    NewPrompt,
    /// The call of this index (into [`Calls::calls`]) is made.
    Call(usize),
    /// The call of this index is answered.
    Answer(usize),
}

/// A tool call and its answer.
#[derive(Debug, Clone)]
pub struct Call {
    /// 0-based record index of the call.
    pub at: usize,
    /// Prompt count at the call.
    pub prompt: u32,
    /// The trimmed tool name (shared: a call copies no name).
    pub tool: Arc<str>,
    /// 0-based record index of its result, if answered.
    pub answer: Option<usize>,
    /// Prompt count at the result.
    pub answer_prompt: u32,
    /// Whether the result is an error.
    pub error: bool,
}

impl Call {
    /// The call's arguments.
    pub fn args<'s>(&self, s: &'s Session) -> &'s Map<String, Value> {
        match &s.event(self.at).record {
            Record::ToolCall { args, .. } => args,
            _ => unreachable!("a call's record is a tool call"),
        }
    }

    /// The call's result text ("" when it has none).
    pub fn output<'s>(&self, s: &'s Session) -> &'s str {
        match self.answer.map(|a| &s.event(a).record) {
            Some(Record::ToolResult {
                output: Some(o), ..
            }) => o,
            _ => "",
        }
    }
}

/// Every call with its answer, whatever the settings: shared by the rules of
/// issue #45.
#[derive(Debug, Default)]
pub struct Calls {
    /// Steps in record order.
    pub steps: Vec<Step>,
    /// The calls.
    pub calls: Vec<Call>,
}

/// A step of [`CallFeed`]: the call as known there (a call's answer is
/// not known at its own step).
#[derive(Debug)]
pub enum CallStep {
    /// A new prompt begins.
    NewPrompt,
    /// A call is made.
    Call(Call),
    /// A call is answered.
    Answer(Call),
}

/// Calls and answers made one record at a time: a whole session's
/// [`calls`] is this fed every record. Holds the calls not yet answered.
#[derive(Default)]
pub struct CallFeed {
    prompts: Prompter,
    pending: Unanswered<Call>,
    /// The trimmed tool names seen: a call of a known tool copies no text.
    tools: FxHashSet<Arc<str>>,
}

impl CallFeed {
    /// Push the steps record `i` of `session` brings.
    pub fn record(&mut self, session: &Session, i: usize, out: &mut Vec<CallStep>) {
        if self.prompts.observe(session, i) {
            out.push(CallStep::NewPrompt);
        }
        match &session.event(i).record {
            Record::ToolCall { name, id, .. } => {
                let tool = trimmed_name(name);
                let tool = match self.tools.get(tool) {
                    Some(t) => t.clone(),
                    None => {
                        let t: Arc<str> = Arc::from(tool);
                        self.tools.insert(t.clone());
                        t
                    }
                };
                let call = Call {
                    at: i,
                    prompt: self.prompts.count(),
                    tool,
                    answer: None,
                    answer_prompt: 0,
                    error: false,
                };
                self.pending.push(id.as_deref(), name, call.clone());
                out.push(CallStep::Call(call));
            }
            Record::ToolResult {
                id, name, error, ..
            } => {
                if let Some(mut call) = self.pending.answer(id.as_deref(), name.as_deref()) {
                    call.answer = Some(i);
                    call.answer_prompt = self.prompts.count();
                    call.error = *error == Some(true);
                    out.push(CallStep::Answer(call));
                }
            }
            _ => {}
        }
    }
}

/// The calls of a session, made once and shared.
pub fn calls(session: &Prepared) -> Arc<Calls> {
    session.shared("looptune.calls", |s| {
        let mut out = Calls::default();
        let mut feed = CallFeed::default();
        let mut steps = Vec::new();
        for i in 0..s.events.len() {
            feed.record(s, i, &mut steps);
            for step in steps.drain(..) {
                match step {
                    CallStep::NewPrompt => out.steps.push(Step::NewPrompt),
                    CallStep::Call(c) => {
                        out.steps.push(Step::Call(out.calls.len()));
                        out.calls.push(c);
                    }
                    CallStep::Answer(c) => {
                        // Calls are in record order.
                        let n = out
                            .calls
                            .binary_search_by_key(&c.at, |x| x.at)
                            .expect("an answered call was made");
                        out.calls[n] = c;
                        out.steps.push(Step::Answer(n));
                    }
                }
            }
        }
        out
    })
}

/// A step of a call rule: the call as known there.
#[derive(Debug, Clone, Copy)]
pub enum StepRef<'a> {
    /// A new prompt begins.
    NewPrompt,
    /// A call is made.
    Call(&'a Call),
    /// A call is answered.
    Answer(&'a Call),
}

/// A call's arguments as rules compare them: the id of its text when a
/// sweep made the session's texts, else the text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ArgsId {
    /// Into [`CallArgs`](crate::detect::prepared::CallArgs).
    Id(u32),
    /// The text itself.
    Text(String),
}

/// The arguments of the call at record `at`: how they compare, and their text.
pub fn args_id<'a>(
    raw: Option<&'a crate::detect::prepared::CallArgs>,
    s: &Session,
    at: usize,
) -> (ArgsId, std::borrow::Cow<'a, str>) {
    match raw {
        Some(raw) => {
            let (id, text) = raw.at(at);
            (ArgsId::Id(id), std::borrow::Cow::Borrowed(text))
        }
        None => {
            let text = match &s.event(at).record {
                Record::ToolCall { args, .. } => crate::util::js::stringify_object(args),
                _ => unreachable!("a call's record is a tool call"),
            };
            (ArgsId::Text(text.clone()), std::borrow::Cow::Owned(text))
        }
    }
}

/// A rule over a session's calls: its state between steps, the same over
/// a whole session ([`run_calls`]) and fed one record at a time
/// (its group's stream, [`Live`]).
pub trait CallRule: Send + 'static {
    /// Whether the rule compares arguments (a sweep then hands it the
    /// session's argument texts, made once).
    const ARGS: bool;
    /// Read one step (`raw`: the session's argument texts, if made).
    fn step(
        &mut self,
        step: StepRef<'_>,
        s: &Session,
        raw: Option<&crate::detect::prepared::CallArgs>,
        out: &mut Vec<Detection>,
    );
}

/// `rule` over a session's calls.
pub fn run_calls<R: CallRule>(mut rule: R, session: &Prepared) -> Vec<Detection> {
    let cs = calls(session);
    let raw = R::ARGS.then(|| session.call_args());
    let s = &session.session;
    let mut out = Vec::new();
    for step in &cs.steps {
        let step = match *step {
            Step::NewPrompt => StepRef::NewPrompt,
            Step::Call(c) => StepRef::Call(&cs.calls[c]),
            Step::Answer(c) => StepRef::Answer(&cs.calls[c]),
        };
        rule.step(step, s, raw.as_deref(), &mut out);
    }
    out
}

/// A call rule's settings, as its group's stream builds the rule.
pub(crate) trait CallSpec: Send + Sync {
    /// The rule before the first record.
    fn fresh(&self) -> Box<dyn LiveCallRule>;
}

/// A [`CallRule`] fed live (without the session's argument texts).
pub(crate) trait LiveCallRule: Send {
    /// [`CallRule::step`] with no texts made.
    fn live_step(&mut self, step: StepRef<'_>, s: &Session, out: &mut Vec<Detection>);
}

impl<R: CallRule> LiveCallRule for R {
    fn live_step(&mut self, step: StepRef<'_>, s: &Session, out: &mut Vec<Detection>) {
        self.step(step, s, None, out);
    }
}

impl Live<dyn CallSpec> {
    /// The check's stream: its group's, or idle.
    pub(crate) fn stream(&self) -> Box<dyn Stream> {
        match self {
            Live::Lead(specs) => Box::new(CallGroup {
                feed: CallFeed::default(),
                rules: specs.iter().map(|s| s.fresh()).collect(),
                steps: Vec::new(),
            }),
            Live::Follow => Box::new(Idle),
        }
    }
}

/// A group of [`CallRule`]s fed one record at a time, the calls and
/// answers matched once for all of them.
struct CallGroup {
    feed: CallFeed,
    /// In check order.
    rules: Vec<Box<dyn LiveCallRule>>,
    steps: Vec<CallStep>,
}

impl Stream for CallGroup {
    fn keeps_from(&self) -> usize {
        // An answer reads its call's arguments.
        self.feed.pending.oldest().map_or(usize::MAX, |c| c.at)
    }
    fn feed(&mut self, session: &Session, i: usize, out: &mut Vec<Detection>) {
        self.feed.record(session, i, &mut self.steps);
        // Rule by rule, as separate streams fed in check order push them.
        for rule in &mut self.rules {
            for step in &self.steps {
                let step = match step {
                    CallStep::NewPrompt => StepRef::NewPrompt,
                    CallStep::Call(c) => StepRef::Call(c),
                    CallStep::Answer(c) => StepRef::Answer(c),
                };
                rule.live_step(step, session, out);
            }
        }
        self.steps.clear();
    }
}

/// A text as the outcome and opening rules compare it: volatile values
/// replaced, durations (`0.53s`, `12 ms`) too, runs of white space made one
/// space, trimmed.
pub fn normalize_loose(text: &str) -> String {
    static DURATION: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b\d+(?:\.\d+)?\s*(?:s|ms|sec|secs|seconds)\b").expect("duration pattern")
    });
    let t = normalize_text(text);
    let t = match may_hold_duration(t.as_bytes()) {
        true => DURATION.replace_all(&t, "<t>"),
        false => std::borrow::Cow::Borrowed(&*t),
    };
    // The words joined by one space, without a list of them first.
    let mut out = String::with_capacity(t.len());
    for w in t.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

/// Whether `text` may hold a duration `normalize_loose` replaces: on ASCII
/// text (where `\d` is `[0-9]` and `\s` is `[\t\n\x0B\x0C\r ]`), a digit
/// followed by white space or none and an `s` or `m` (every unit's first
/// letter). Any other text, non-ASCII included, may.
fn may_hold_duration(b: &[u8]) -> bool {
    if !b.is_ascii() {
        return true;
    }
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < b.len() && matches!(b[j], b' ' | b'\t'..=b'\r') {
            j += 1;
        }
        if j < b.len() && matches!(b[j], b's' | b'm') {
            return true;
        }
        i += 1;
    }
    false
}
