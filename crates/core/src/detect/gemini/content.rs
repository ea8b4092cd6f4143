//! The content ("chanting") check of the hash era (2025-07-25 .. HEAD) and the
//! DeepV fork's variant.
//!
//! The original slides a window of `chunk` UTF-16 units over the streamed
//! history one unit at a time, hashes each window with SHA-256 (of its UTF-8
//! encoding, lone surrogates becoming U+FFFD) and verifies a hit against the
//! *first* stored occurrence. Hashing 50 units at every position is what makes
//! the original slow; here a rolling polynomial hash of the window (with the
//! same lone-surrogate normalisation) keys the index, and every hit is
//! verified exactly, so the verdicts are the original's without its cost.
//! Indices are absolute so truncation shifts nothing; stale indices are dropped
//! lazily, which is equivalent to the original's eager filtering because lists
//! only ever lose their oldest entries.

use super::markdown::ChunkFlags;
use super::markdown::{deepv_common, deepv_significant, deepv_table};
use super::prep::{widen, GeminiPrep, Op, Prompter};
use super::repeats::RepeatFilter;
use crate::detect::{Detection, Stream};
use crate::event::{Record, Session};
use std::borrow::Cow;

/// Which content algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// Upstream Gemini CLI.
    Hash,
    /// The DeepV fork: significance filter, table/common-pattern gap factors.
    DeepV,
}

/// Code-fence handling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fences {
    /// No fence rule (2025-07-25 .. 07-29).
    Off,
    /// Reset on fences; skip when inside a block before the chunk (2025-07-30).
    SkipInside,
    /// ... or inside after the chunk's toggle (2025-08-11 .. HEAD).
    SkipInsideOrOpening,
}

/// Settings of the content check.
#[derive(Debug, Clone, PartialEq)]
pub struct ContentSettings {
    /// Algorithm.
    pub algorithm: Algorithm,
    /// Window size in UTF-16 units (`CONTENT_CHUNK_SIZE`).
    pub chunk: usize,
    /// Occurrences needed (`CONTENT_LOOP_THRESHOLD`).
    pub threshold: usize,
    /// History cap in UTF-16 units (`MAX_HISTORY_LENGTH`).
    pub max_history: usize,
    /// Maximum average gap, as a multiple of `chunk`.
    pub distance_factor: f64,
    /// At most `threshold / 2` distinct periods (2026-02-13 ..).
    pub period_check: bool,
    /// Code-fence rule.
    pub fences: Fences,
    /// Table / list / heading / blockquote resets.
    pub markdown_resets: bool,
    /// Divider reset and skip.
    pub dividers: bool,
    /// DeepV: gap factor for table-like windows.
    pub table_factor: f64,
    /// DeepV: gap factor for common-pattern windows.
    pub common_factor: f64,
}

/// Multiplicative base of the rolling hash (odd, so powers never vanish mod 2^64).
const BASE: u64 = 0x100_0000_01b3;
/// One window content's stored indices: `head` then `rest`, ascending.
#[derive(Debug, Clone)]
struct Slot {
    head: usize,
    rest: Vec<usize>,
}

impl Slot {
    /// Drop indices before `cutoff`; false when nothing is left.
    fn prune(&mut self, cutoff: usize) -> bool {
        if self.head >= cutoff {
            return true;
        }
        let keep = self.rest.partition_point(|i| *i < cutoff);
        if keep == self.rest.len() {
            return false;
        }
        self.head = self.rest[keep];
        self.rest.drain(..=keep);
        true
    }
    fn len(&self) -> usize {
        1 + self.rest.len()
    }
    /// The `i`-th stored index.
    fn at(&self, i: usize) -> usize {
        if i == 0 {
            self.head
        } else {
            self.rest[i - 1]
        }
    }
}

/// One entry of the open-addressing table, 8 bytes so a segment's table stays
/// in L1: 16 bits of the window key (the table position holds the low bits;
/// every match is verified on the text anyway), the generation (older ones
/// read as empty) with a flag, and either the window's only occurrence so far
/// (no allocation for the many windows seen once) or its slot in the arena.
#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    tag: u16,
    meta: u16,
    payload: u32,
}

/// `Entry::meta` flag: `payload` is a slot index, not a position.
const HAS_SLOT: u16 = 0x8000;
/// `Entry::meta` bits holding the generation.
const GEN: u16 = 0x7fff;

fn tag_of(key: u64) -> u16 {
    (key >> 48) as u16
}

/// The window index (`contentStats`): window -> stored indices.
///
/// A reset happens at every tool call, so it must be O(1): entries carry a
/// generation and a reset starts a new one. Windows whose indices all fell off
/// the front of the history are dead; they are reused in place and dropped
/// when the table is rebuilt, which also bounds memory on long streams.
#[derive(Debug, Clone)]
struct WindowIndex {
    entries: Vec<Entry>,
    gen: u16,
    /// Entries of the current generation (live or dead).
    used: usize,
    /// Slot arena of the current generation (windows seen twice or more).
    slots: Vec<Slot>,
}

const MIN_TABLE: usize = 1024;

impl WindowIndex {
    fn new() -> WindowIndex {
        WindowIndex {
            // Allocated at the first repeat: most histories never need it.
            entries: Vec::new(),
            gen: 1,
            used: 0,
            slots: Vec::new(),
        }
    }

    fn reset(&mut self) {
        self.gen = (self.gen + 1) & GEN;
        if self.gen == 0 {
            self.entries.iter_mut().for_each(|e| e.meta = 0);
            self.gen = 1;
        }
        self.used = 0;
        self.slots.clear();
    }

    fn live(&self, e: Entry) -> bool {
        e.meta & GEN == self.gen
    }
}

fn is_high(u: u16) -> bool {
    (0xd800..0xdc00).contains(&u)
}
fn is_low(u: u16) -> bool {
    (0xdc00..0xe000).contains(&u)
}

/// Whether unit `j` of window `w` is a lone surrogate *within the window*.
fn lone(w: &[u16], j: usize) -> bool {
    let u = w[j];
    (is_high(u) && (j + 1 == w.len() || !is_low(w[j + 1])))
        || (is_low(u) && (j == 0 || !is_high(w[j - 1])))
}

/// Equality of two windows after Node's UTF-8 encoding (lone surrogates -> U+FFFD).
fn same_encoded(a: &[u16], b: &[u16]) -> bool {
    a.len() == b.len()
        && (0..a.len()).all(|j| {
            let x = if lone(a, j) { 0xfffd } else { a[j] };
            let y = if lone(b, j) { 0xfffd } else { b[j] };
            x == y
        })
}

/// The content state of one check run.
#[derive(Clone)]
struct State<'a> {
    /// Borrowed over a whole session; owned by a live stream.
    s: Cow<'a, ContentSettings>,
    /// Units from absolute index `base`.
    buf: Vec<u16>,
    base: usize,
    /// Absolute index where the (truncated) history starts.
    head: usize,
    /// Absolute index of the next window to examine (`lastContentIndex`).
    last: usize,
    index: WindowIndex,
    /// Rolling hash of the raw window at `hash_pos`.
    hash: u64,
    hash_pos: Option<usize>,
    pow: u64,
    in_code_block: bool,
    /// Proves most windows new without the index (see `repeats`).
    filter: RepeatFilter,
    /// The index holds every window since `head`. Outside repeats it is left
    /// empty: a window seen for the first time changes nothing observable, and
    /// the index is rebuilt from the history at the next repeat.
    exact: bool,
    /// Keep the index until the next reset: after a detection (the original
    /// re-records the looping window) or once the history holds units whose
    /// UTF-8 encoding can make distinct windows equal (surrogates, U+FFFD).
    pinned: bool,
    /// Windows in a row the index had not seen.
    misses: usize,
    /// Never use the filter (the reference the filter is tested against).
    always_exact: bool,
    /// [`LEAVE_EXACT_AFTER`]; smaller in tests, to exercise the way back.
    leave_after: usize,
}

/// New windows in a row after which the index is dropped again; about the cost
/// of rebuilding it from a full history.
const LEAVE_EXACT_AFTER: usize = 512;

impl<'a> State<'a> {
    fn new(s: &'a ContentSettings) -> State<'a> {
        State::with(Cow::Borrowed(s))
    }

    fn with(s: Cow<'a, ContentSettings>) -> State<'a> {
        let mut pow = 1u64;
        for _ in 1..s.chunk {
            pow = pow.wrapping_mul(BASE);
        }
        let filter = RepeatFilter::new(s.chunk.max(1));
        State {
            s,
            buf: Vec::new(),
            base: 0,
            head: 0,
            last: 0,
            index: WindowIndex::new(),
            hash: 0,
            hash_pos: None,
            pow,
            in_code_block: false,
            filter,
            exact: false,
            pinned: false,
            misses: 0,
            always_exact: false,
            leave_after: LEAVE_EXACT_AFTER,
        }
    }

    /// `resetContentTracking()`: history, index and position; not `inCodeBlock`.
    fn reset(&mut self) {
        self.buf.clear();
        self.base = 0;
        self.head = 0;
        self.last = 0;
        self.index.reset();
        self.hash_pos = None;
        self.filter.reset();
        self.exact = self.always_exact;
        self.pinned = self.always_exact;
        self.misses = 0;
    }

    /// Build the index the original would hold now: every window from `head`
    /// to `last`, recorded in order (none of them fired, or we would have stopped).
    fn materialize(&mut self) {
        if self.exact {
            return;
        }
        for q in self.head..self.last {
            let _ = self.hit(q);
        }
        self.exact = true;
        self.misses = 0;
    }

    /// Move `last` to the next window that may have been seen before and
    /// switch to the index there; false when the history has no more windows.
    fn skip_to_repeat(&mut self) -> bool {
        let c = self.s.chunk;
        let stride = self.filter.stride();
        while self.last + c <= self.end() {
            // Examine every position whose hit could speak for a window here.
            // (the last window's reach ends where the last k-gram starts).
            let to = self.end() + 1 - self.filter_k();
            self.filter.advance(&self.buf, self.base, self.head, to);
            let Some(x) = self.filter.next_hit(self.last) else {
                self.last = self.end() + 1 - c;
                return false;
            };
            // Windows before x + 1 - stride have no hit in reach: new.
            self.last = self.last.max((x + 1).saturating_sub(stride));
            while self.last <= x && self.last + c <= self.end() {
                if self
                    .filter
                    .repeats_earlier(&self.buf, self.base, self.head, self.last, c)
                {
                    self.materialize();
                    return true;
                }
                self.last += 1;
            }
        }
        false
    }

    fn filter_k(&self) -> usize {
        self.s.chunk + 1 - self.filter.stride()
    }

    /// Advance to the next window the index has seen before, recording it as
    /// the original does; its slot, with `last` on it, or None at the end of
    /// the history. The windows passed over were recorded as new, which
    /// decides nothing.
    fn next_seen(&mut self) -> Option<usize> {
        let c = self.s.chunk;
        while self.last + c <= self.end() {
            if !self.exact && !self.skip_to_repeat() {
                return None;
            }
            let at = self.last;
            if let Some(si) = self.hit(at) {
                self.misses = 0;
                return Some(si);
            }
            self.misses += 1;
            if !self.pinned && self.misses >= self.leave_after {
                self.index.reset();
                self.exact = false;
            }
            self.last += 1;
        }
        None
    }

    /// Keep only windows with indices at or after `head`, in a table with room
    /// to grow. Entries keep only 16 bits of their key, so positions are
    /// recomputed from the text (rare: amortised over the inserts).
    fn rebuild(&mut self) {
        let head = self.head;
        let gen = self.index.gen;
        let mut live: Vec<(usize, Option<Slot>)> = Vec::with_capacity(self.index.used);
        for e in &self.index.entries {
            if e.meta & GEN != gen {
                continue;
            }
            if e.meta & HAS_SLOT != 0 {
                let mut slot = std::mem::replace(
                    &mut self.index.slots[e.payload as usize],
                    Slot {
                        head: 0,
                        rest: Vec::new(),
                    },
                );
                if slot.prune(head) {
                    live.push((slot.head, Some(slot)));
                }
            } else if e.payload as usize >= head {
                live.push((e.payload as usize, None));
            }
        }
        let size = (live.len() * 4).next_power_of_two().max(MIN_TABLE);
        let mut entries = vec![Entry::default(); size];
        let mut slots = Vec::new();
        let mask = size - 1;
        // One rolling pass gives every window's key in O(history).
        let keys = self.keys_from(head);
        for (first, slot) in live.iter_mut() {
            let key = keys[*first - head];
            let mut i = key as usize & mask;
            while entries[i].meta & GEN == 1 {
                i = (i + 1) & mask;
            }
            entries[i] = match slot.take() {
                Some(s) => {
                    slots.push(s);
                    Entry {
                        tag: tag_of(key),
                        meta: 1 | HAS_SLOT,
                        payload: slots.len() as u32 - 1,
                    }
                }
                None => Entry {
                    tag: tag_of(key),
                    meta: 1,
                    payload: *first as u32,
                },
            };
        }
        self.index = WindowIndex {
            entries,
            gen: 1,
            used: live.len(),
            slots,
        };
    }

    fn end(&self) -> usize {
        self.base + self.buf.len()
    }

    fn window(&self, at: usize) -> &[u16] {
        &self.buf[at - self.base..at - self.base + self.s.chunk]
    }

    /// Rolling hash of the raw window at `at`.
    fn raw_hash(&mut self, at: usize) -> u64 {
        let c = self.s.chunk;
        match self.hash_pos {
            Some(p) if p == at => {}
            Some(p) if p + 1 == at => {
                let out = self.buf[p - self.base] as u64;
                let inn = self.buf[at + c - 1 - self.base] as u64;
                self.hash = self
                    .hash
                    .wrapping_sub(out.wrapping_mul(self.pow))
                    .wrapping_mul(BASE)
                    .wrapping_add(inn);
            }
            _ => {
                let mut h = 0u64;
                for &u in &self.buf[at - self.base..at - self.base + c] {
                    h = h.wrapping_mul(BASE).wrapping_add(u as u64);
                }
                self.hash = h;
            }
        }
        self.hash_pos = Some(at);
        self.hash
    }

    /// Hash of the window as Node would encode it, mixed for the map.
    fn key(&mut self, at: usize) -> u64 {
        let h = self.raw_hash(at);
        self.finish_key(h, at)
    }

    /// [`State::key`] of every window from `from` on, leaving the rolling hash alone.
    fn keys_from(&self, from: usize) -> Vec<u64> {
        let c = self.s.chunk;
        let end = self.end();
        if from + c > end {
            return Vec::new();
        }
        let mut out = Vec::with_capacity(end - c + 1 - from);
        let mut h = 0u64;
        for &u in self.window(from) {
            h = h.wrapping_mul(BASE).wrapping_add(u as u64);
        }
        for at in from..=end - c {
            if at > from {
                let outgoing = self.buf[at - 1 - self.base] as u64;
                let incoming = self.buf[at + c - 1 - self.base] as u64;
                h = h
                    .wrapping_sub(outgoing.wrapping_mul(self.pow))
                    .wrapping_mul(BASE)
                    .wrapping_add(incoming);
            }
            out.push(self.finish_key(h, at));
        }
        out
    }

    fn finish_key(&self, mut h: u64, at: usize) -> u64 {
        let w = self.window(at);
        let c = w.len();
        // Only the edges can hold a lone surrogate: chunks are whole strings.
        if lone(w, 0) {
            h = h.wrapping_add((0xfffd_u64.wrapping_sub(w[0] as u64)).wrapping_mul(self.pow));
        }
        if c > 1 && lone(w, c - 1) {
            h = h.wrapping_add(0xfffd_u64.wrapping_sub(w[c - 1] as u64));
        }
        // Finalise (splitmix64) so the premixed map sees well-spread bits.
        h ^= h >> 30;
        h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h ^= h >> 27;
        h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
        h ^ (h >> 31)
    }

    fn append(&mut self, units: &[u16], lossy: bool) {
        self.buf.extend_from_slice(units);
        let len = self.end() - self.head;
        if len > self.s.max_history {
            let cut = len - self.s.max_history;
            self.head += cut;
            self.last = self.last.max(self.head);
            if self.head - self.base > 65536 && self.head - self.base > self.buf.len() / 2 {
                self.buf.drain(..self.head - self.base);
                self.base = self.head;
                self.hash_pos = None;
            }
        }
        if lossy {
            // Before the index would see a window with these units.
            self.materialize();
            self.pinned = true;
        }
    }

    /// Scan new windows for one configuration; true on a loop (the index
    /// then stays on the looping window, as in the original).
    fn scan(&mut self) -> bool {
        while let Some(si) = self.next_seen() {
            if self.decide(&self.s, si, self.last) {
                self.pinned = true;
                return true;
            }
            self.last += 1;
        }
        false
    }

    /// Scan new windows for several configurations that differ only in what
    /// `decide` reads (`active[i]` false: not scanned here). A configuration
    /// that fires leaves the shared scan with its own copy of the state at that
    /// moment, as its single run would have it (index on the looping window).
    fn scan_many<'v>(
        &mut self,
        vs: &[&'v ContentSettings],
        active: &mut [bool],
    ) -> Vec<(usize, String, State<'v>)>
    where
        'a: 'v,
    {
        let mut fired = Vec::new();
        while let Some(si) = self.next_seen() {
            let at = self.last;
            for (vi, v) in vs.iter().enumerate() {
                if active[vi] && self.decide(v, si, at) {
                    active[vi] = false;
                    let mut own: State<'v> = self.clone();
                    own.s = Cow::Borrowed(v);
                    own.pinned = true;
                    fired.push((vi, self.detail(), own));
                }
            }
            if !active.iter().any(|a| *a) {
                return fired;
            }
            self.last += 1;
        }
        fired
    }

    /// The index update of `isLoopDetectedForChunk` for the window at `at`:
    /// `Some(slot)` when the window was seen before and this occurrence was
    /// recorded (the only case in which a loop can be declared).
    fn hit(&mut self, at: usize) -> Option<usize> {
        if self.s.algorithm == Algorithm::DeepV && !deepv_significant(self.window(at)) {
            return None;
        }
        let key = self.key(at);
        let head = self.head;
        if self.index.entries.is_empty() {
            self.index.entries = vec![Entry::default(); MIN_TABLE];
        }
        if (self.index.used + 1) * 2 > self.index.entries.len() {
            self.rebuild();
        }
        let (buf, base, chunk) = (&self.buf, self.base, self.s.chunk);
        let win = |i: usize| &buf[i - base..i - base + chunk];
        // Probe for the entry whose window, as Node encodes it, equals this one
        // (the original's SHA-256 key); a dead entry with the same tag is reused.
        let idx = &mut self.index;
        let mask = idx.entries.len() - 1;
        let tag = tag_of(key);
        let mut i = key as usize & mask;
        let mut reuse: Option<usize> = None;
        let found = loop {
            let e = idx.entries[i];
            if !idx.live(e) {
                break None;
            }
            if e.tag == tag {
                let first = if e.meta & HAS_SLOT != 0 {
                    let slot = &mut idx.slots[e.payload as usize];
                    slot.prune(head).then_some(slot.head)
                } else {
                    (e.payload as usize >= head).then_some(e.payload as usize)
                };
                match first {
                    None => {
                        reuse.get_or_insert(i);
                    }
                    Some(f) if same_encoded(win(f), win(at)) => break Some((i, f)),
                    Some(_) => {}
                }
            }
            i = (i + 1) & mask;
        };
        let Some((ei, first)) = found else {
            let pos = reuse.unwrap_or_else(|| {
                idx.used += 1;
                i
            });
            idx.entries[pos] = Entry {
                tag,
                meta: idx.gen,
                payload: u32::try_from(at).expect("content positions fit in 32 bits"),
            };
            return None;
        };
        // The collision guard: verified against the first stored occurrence.
        if win(first) != win(at) {
            return None;
        }
        let e = idx.entries[ei];
        if e.meta & HAS_SLOT != 0 {
            idx.slots[e.payload as usize].rest.push(at);
            Some(e.payload as usize)
        } else {
            idx.slots.push(Slot {
                head: first,
                rest: vec![at],
            });
            let si = idx.slots.len() - 1;
            idx.entries[ei] = Entry {
                tag,
                meta: idx.gen | HAS_SLOT,
                payload: si as u32,
            };
            Some(si)
        }
    }

    /// The loop condition of `isLoopDetectedForChunk` for configuration `v`,
    /// on the slot just extended by the window at `at`.
    fn decide(&self, v: &ContentSettings, si: usize, at: usize) -> bool {
        let slot = &self.index.slots[si];
        let threshold = v.threshold;
        let n = slot.len();
        if n < threshold {
            return false;
        }
        let win = |i: usize| &self.buf[i - self.base..i - self.base + self.s.chunk];
        let first = slot.at(n - threshold);
        let lastp = slot.at(n - 1);
        let avg = (lastp - first) as f64 / (threshold - 1) as f64;
        let chunk = v.chunk as f64;
        let max_gap = match v.algorithm {
            Algorithm::Hash => chunk * v.distance_factor,
            Algorithm::DeepV => {
                let w = win(at);
                if deepv_table(w) {
                    chunk * v.table_factor
                } else if deepv_common(w) {
                    chunk * v.common_factor
                } else {
                    chunk * v.distance_factor
                }
            }
        };
        if avg > max_gap {
            return false;
        }
        if v.period_check {
            let mut periods: Vec<&[u16]> = Vec::with_capacity(threshold - 1);
            for i in n - threshold..n - 1 {
                let (a, b) = (slot.at(i), slot.at(i + 1));
                let p = &self.buf[a - self.base..b - self.base];
                if !periods.contains(&p) {
                    periods.push(p);
                }
            }
            if periods.len() > threshold / 2 {
                return false;
            }
        }
        true
    }

    /// The original's detail excerpt: history from `last - 20` to `last + chunk`, trimmed.
    fn detail(&self) -> String {
        let from = self.last.saturating_sub(20).max(self.head);
        let to = (self.last + self.s.chunk).min(self.end());
        let units = crate::util::js::js_trim(&self.buf[from - self.base..to - self.base]);
        format!(
            "Repeating content detected: \"{}...\"",
            crate::util::js::from_utf16_lossy(units)
        )
    }
}

/// Apply the chunk pre-filter (resets, code fences, dividers) and append the
/// chunk (its UTF-16 units, flags and lossiness) to the history; false when
/// the chunk is skipped.
fn feed(st: &mut State, units: &[u16], flags: ChunkFlags, lossy: bool) -> bool {
    let fence_rule = st.s.fences != Fences::Off;
    if (fence_rule && flags.fences > 0)
        || (st.s.markdown_resets && flags.markdown())
        || (st.s.dividers && flags.divider)
    {
        st.reset();
    }
    if fence_rule {
        let was_in = st.in_code_block;
        if flags.fences % 2 == 1 {
            st.in_code_block = !st.in_code_block;
        }
        let skip = match st.s.fences {
            Fences::SkipInside => was_in,
            _ => was_in || st.in_code_block,
        };
        if skip {
            return false;
        }
    }
    if st.s.dividers && flags.divider {
        return false;
    }
    st.append(units, lossy);
    true
}

/// [`feed`] with chunk `i` of a session's prep.
fn feed_chunk(st: &mut State, p: &GeminiPrep, i: u32) -> bool {
    let c = &p.chunks[i as usize];
    feed(st, p.chunk(i), c.flags, c.lossy)
}

/// Run the content check over a session.
pub fn run(s: &ContentSettings, p: &GeminiPrep, limit: Option<usize>) -> Vec<Detection> {
    run_state(State::new(s), p, limit)
}

fn run_state(mut st: State, p: &GeminiPrep, limit: Option<usize>) -> Vec<Detection> {
    let mut out = Vec::new();
    for step in &p.steps {
        match step.op {
            // reset(promptId) clears content tracking but never `inCodeBlock`.
            Op::NewPrompt | Op::Tool { .. } => st.reset(),
            Op::Content(i) => {
                if feed_chunk(&mut st, p, i) && st.scan() {
                    out.push(detection(step, st.detail()));
                    if limit.is_some_and(|l| {
                        out.iter()
                            .rev()
                            .take_while(|d| d.prompt == step.prompt)
                            .count()
                            >= l
                    }) {
                        break;
                    }
                }
            }
            Op::TurnStart => {}
        }
    }
    out
}

/// The content check fed one record at a time: the same state and rules
/// as [`run`], each chunk widened from its record as it comes.
pub(crate) struct ContentStream {
    st: State<'static>,
    prompts: Prompter,
    units: Vec<u16>,
}

impl ContentStream {
    pub(crate) fn new(s: ContentSettings) -> ContentStream {
        ContentStream {
            st: State::with(Cow::Owned(s)),
            prompts: Prompter::default(),
            units: Vec::new(),
        }
    }
}

impl Stream for ContentStream {
    fn keeps_from(&self) -> usize {
        usize::MAX // reads each record once, when fed
    }
    fn feed(&mut self, session: &Session, i: usize, out: &mut Vec<Detection>) {
        // As `run_state` reads the steps: a new prompt, then the record.
        if self.prompts.observe(session, i) {
            self.st.reset();
        }
        let e = session.event(i);
        match &e.record {
            Record::ToolCall { .. } => self.st.reset(),
            Record::Content { text } => {
                self.units.clear();
                let (flags, lossy) = widen(text, &mut self.units);
                if feed(&mut self.st, &self.units, flags, lossy) && self.st.scan() {
                    out.push(Detection {
                        kind: "content",
                        event: i as u32 + 1,
                        turn: e.turn,
                        prompt: self.prompts.count(),
                        strike: 0,
                        detail: self.st.detail(),
                    });
                }
            }
            _ => {}
        }
    }
}

fn detection(step: &super::prep::Step, detail: String) -> Detection {
    Detection {
        kind: "content",
        event: step.event,
        turn: step.turn,
        prompt: step.prompt,
        strike: 0,
        detail,
    }
}

/// What shapes the window stream and its index. Configurations equal in these
/// (differing only in threshold, gap factors or the period rule) see the same
/// windows and hits, so their first detections come from one pass.
pub fn stream_key(s: &ContentSettings) -> String {
    format!(
        "{:?};{};{};{:?};{};{}",
        s.algorithm, s.chunk, s.max_history, s.fences, s.markdown_resets, s.dividers
    )
}

/// Detections of several configurations that share [`stream_key`], in one
/// pass, stopping a configuration once `limit` of its detections fell in one
/// prompt (its session has stopped by then under any policy that needs no more).
///
/// Exact: until a configuration fires, its state does not depend on the
/// parameters that differ (rejected hits stay recorded either way). When it
/// fires it continues on its own copy of the state; at the next reset (tool
/// call or new prompt) every state is empty again and it rejoins the shared pass.
pub fn run_many(
    vs: &[&ContentSettings],
    p: &GeminiPrep,
    limit: Option<usize>,
) -> Vec<Vec<Detection>> {
    let n = vs.len();
    let mut out: Vec<Vec<Detection>> = vec![Vec::new(); n];
    let Some(first) = vs.first() else { return out };
    let mut shared = State::new(first);
    let mut active = vec![true; n];
    let mut own: Vec<Option<State>> = vec![None; n];
    let mut in_prompt = vec![0usize; n];
    let mut finished = vec![false; n];
    for step in &p.steps {
        let mut fired: Vec<(usize, String)> = Vec::new();
        match step.op {
            Op::NewPrompt | Op::Tool { .. } => {
                shared.reset();
                if matches!(step.op, Op::NewPrompt) {
                    in_prompt.iter_mut().for_each(|c| *c = 0);
                }
                for vi in 0..n {
                    own[vi] = None;
                    active[vi] = !finished[vi];
                }
            }
            Op::Content(i) => {
                // Configurations on their own copies first: they fired earlier.
                for vi in 0..n {
                    if let (false, Some(st)) = (finished[vi], own[vi].as_mut()) {
                        if feed_chunk(st, p, i) && st.scan() {
                            fired.push((vi, st.detail()));
                        }
                    }
                }
                if feed_chunk(&mut shared, p, i) {
                    for (vi, detail, state) in shared.scan_many(vs, &mut active) {
                        own[vi] = Some(state);
                        fired.push((vi, detail));
                    }
                }
            }
            Op::TurnStart => {}
        }
        for (vi, detail) in fired {
            out[vi].push(detection(step, detail));
            in_prompt[vi] += 1;
            if limit.is_some_and(|l| in_prompt[vi] >= l) {
                finished[vi] = true;
                own[vi] = None;
                active[vi] = false;
            }
        }
        if finished.iter().all(|f| *f) {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_only_at_edges_of_split_pairs() {
        let w: Vec<u16> = "a😀b".encode_utf16().collect();
        assert!(!lone(&w, 1) && !lone(&w, 2));
        assert!(lone(&w[2..], 0));
        assert!(lone(&w[..2], 1));
        // two windows differing only in a lone surrogate encode the same
        assert!(same_encoded(&[0xd83d, 0x61], &[0xd83e, 0x61]));
        assert!(same_encoded(&[0xfffd, 0x61], &[0xdc00, 0x61]));
        assert!(!same_encoded(&[0x62, 0x61], &[0xdc00, 0x61]));
    }

    fn exact_state(s: &ContentSettings) -> State<'_> {
        let mut st = State::new(s);
        st.always_exact = true;
        st.reset();
        st
    }

    /// A random session of content built from `pieces`, with tool calls and
    /// prompts (resets) every `reset_every` records on average.
    fn random_session(
        r: &mut crate::input::synth::Rng,
        pieces: &[&str],
        records: usize,
        reset_every: usize,
    ) -> GeminiPrep {
        use crate::event::{Origin, Record, Session};
        let mut recs = vec![(
            Record::User {
                text: "go".into(),
                prompt_id: None,
            },
            Origin::default(),
        )];
        for _ in 0..records {
            let rec = match r.range(0, reset_every) {
                0 => Record::ToolCall {
                    name: "t".into(),
                    args: Default::default(),
                    id: None,
                },
                1 => Record::User {
                    text: "again".into(),
                    prompt_id: None,
                },
                _ => {
                    let mut t = String::new();
                    for _ in 0..r.range(1, 6) {
                        t.push_str(pieces[r.range(0, pieces.len() - 1)]);
                    }
                    Record::Content { text: t }
                }
            };
            recs.push((rec, Origin::default()));
        }
        GeminiPrep::new(&Session::from_records("s".into(), recs))
    }

    /// The filtered scan decides exactly as the index alone (the original's
    /// behaviour): same detections, events and details, first and every, with
    /// truncation, DeepV's filter and units that encode alike.
    #[test]
    fn filter_changes_no_verdict() {
        let mut r = crate::input::synth::Rng::new(9);
        let pieces = [
            "ab",
            "abc ",
            "Let me try again. ",
            "x",
            "😀",
            "\u{fffd}",
            "zz",
            "abcd abcd ",
            "😁",
            "😀 go",
            "😁 go",
            "\u{fffd} go",
            "\u{f0600} go",
            "\u{f0400}",
            "The build failed with the same error. ",
            "q",
            "\n",
            "| a |",
        ];
        let prose = [
            "The quick brown fox ",
            "jumps over ",
            "the lazy dog ",
            "and then ",
            "reads the file again. ",
            "Let me check. ",
            "ok ",
            "\n",
        ];
        let (mut fired, mut checked) = (0, 0);
        for case in 0..600 {
            let set: &[&str] = if case % 3 == 0 { &prose } else { &pieces };
            let records = r.range(5, 250);
            let p = random_session(&mut r, set, records, [8, 40, 400][case % 3]);
            let s = ContentSettings {
                algorithm: if case % 5 == 0 {
                    Algorithm::DeepV
                } else {
                    Algorithm::Hash
                },
                chunk: [3, 4, 8, 13, 50][case % 5],
                threshold: [2, 3, 5, 10][case % 4],
                max_history: [20, 60, 200, 1000][(case / 4) % 4],
                distance_factor: [1.0, 1.5, 5.0][case % 3],
                period_check: case % 2 == 1,
                fences: Fences::SkipInsideOrOpening,
                markdown_resets: case % 7 != 0,
                dividers: true,
                table_factor: 6.0,
                common_factor: 3.0,
            };
            for limit in [Some(1), Some(3), None] {
                let want = run_state(exact_state(&s), &p, limit);
                let mut filtered = State::new(&s);
                filtered.leave_after = [1, 7, LEAVE_EXACT_AFTER][case % 3];
                let got = run_state(filtered, &p, limit);
                assert_eq!(got, want, "case {case}, limit {limit:?}, {s:?}");
                fired += usize::from(!want.is_empty());
                checked += 1;
            }
        }
        assert!(
            fired * 8 > checked && fired * 4 < checked * 3,
            "{fired} of {checked} fired"
        );
    }

    /// A window the original rejected (equal to the stored one once encoded,
    /// different in units) stays unrecorded after the stored one leaves the
    /// history; rebuilding the index from the history would record it.
    #[test]
    fn units_that_encode_alike_keep_the_originals_rejections() {
        use crate::event::{Origin, Record, Session};
        let session = |texts: &[&str]| {
            let mut recs = vec![(
                Record::User {
                    text: "go".into(),
                    prompt_id: None,
                },
                Origin::default(),
            )];
            for t in texts {
                let rec = Record::Content {
                    text: t.to_string(),
                };
                recs.push((rec, Origin::default()));
            }
            GeminiPrep::new(&Session::from_records("s".into(), recs))
        };
        let s = ContentSettings {
            algorithm: Algorithm::Hash,
            chunk: 3,
            threshold: 2,
            max_history: 10,
            distance_factor: 5.0,
            period_check: false,
            fences: Fences::SkipInsideOrOpening,
            markdown_resets: false,
            dividers: true,
            table_factor: 6.0,
            common_factor: 3.0,
        };
        // [low half of 😀, a, b] is stored; [U+FFFD, a, b] hashes the same and
        // is rejected; then the stored one is truncated away, and the second
        // [U+FFFD, a, b] starts a new entry: no loop.
        let p = session(&["😀ab", "\u{fffd}ab", "xyz", "\u{fffd}ab"]);
        assert_eq!(run_state(exact_state(&s), &p, None), vec![]);
        assert_eq!(run(&s, &p, None), vec![]);
        // Without the stored one, the first [U+FFFD, a, b] is recorded: a loop.
        let p = session(&["qab", "\u{fffd}ab", "xyz", "\u{fffd}ab"]);
        assert_eq!(run(&s, &p, None).len(), 1);
        assert_eq!(run_state(exact_state(&s), &p, None), run(&s, &p, None));
    }

    #[test]
    fn slot_prune_drops_oldest() {
        let mut s = Slot {
            head: 1,
            rest: vec![3, 5],
        };
        assert!(s.prune(4));
        assert_eq!((s.head, s.rest.clone()), (5, vec![]));
        assert!(!s.prune(6));
    }

    /// The shared pass equals running each configuration alone, for every
    /// limit, on random sessions built to repeat (small alphabets, resets,
    /// prompts, fences, surrogate pairs).
    #[test]
    fn shared_pass_equals_separate_runs() {
        let mut r = crate::input::synth::Rng::new(42);
        let (mut fired, mut refired) = (0, 0);
        let pieces = [
            "ab",
            "abc ",
            "Let me try again. ",
            "x",
            "😀",
            "```",
            "\n* item\n",
            "| a | b |",
            "zz",
            "abcd abcd ",
        ];
        for case in 0..300 {
            let records = r.range(5, 120);
            let p = random_session(&mut r, &pieces, records, 19);
            let base = ContentSettings {
                algorithm: Algorithm::Hash,
                chunk: [4, 5, 8][case % 3],
                threshold: 3,
                max_history: [30, 200, 5000][case % 3],
                distance_factor: 1.5,
                period_check: case % 2 == 0,
                fences: Fences::SkipInsideOrOpening,
                markdown_resets: case % 4 != 0,
                dividers: true,
                table_factor: 6.0,
                common_factor: 3.0,
            };
            let variants: Vec<ContentSettings> = [
                (2, 1.0, false),
                (3, 1.5, true),
                (4, 5.0, false),
                (6, 2.0, true),
            ]
            .iter()
            .map(
                |&(threshold, distance_factor, period_check)| ContentSettings {
                    threshold,
                    distance_factor,
                    period_check,
                    ..base.clone()
                },
            )
            .collect();
            let refs: Vec<&ContentSettings> = variants.iter().collect();
            for limit in [Some(1), Some(2), None] {
                let shared = run_many(&refs, &p, limit);
                for (v, got) in variants.iter().zip(&shared) {
                    assert_eq!(
                        got,
                        &run(v, &p, limit),
                        "case {case}, limit {limit:?}, variant {v:?}"
                    );
                    fired += usize::from(!got.is_empty());
                    refired += usize::from(got.len() > 2);
                }
            }
        }
        // The cases must exercise detections and re-detections, or the test proves nothing.
        assert!(
            fired > 500 && refired > 100,
            "fired {fired}, refired {refired}"
        );
    }
}
