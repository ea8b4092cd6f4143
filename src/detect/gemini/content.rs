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

use super::markdown::{deepv_common, deepv_significant, deepv_table};
use super::prep::{GeminiPrep, Op};
use crate::detect::Detection;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

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
#[derive(Debug, Clone)]
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
/// Rebuild the index when it holds this many times the history cap (bounds memory).
const SWEEP_FACTOR: usize = 4;

/// A hasher for keys that are already well-mixed 64-bit hashes.
#[derive(Default)]
struct Premixed(u64);
impl Hasher for Premixed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys are hashed")
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}
type Map<V> = HashMap<u64, V, BuildHasherDefault<Premixed>>;

/// One window content's stored indices: `head` then `rest`, ascending.
#[derive(Debug)]
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
struct State<'a> {
    s: &'a ContentSettings,
    /// Units from absolute index `base`.
    buf: Vec<u16>,
    base: usize,
    /// Absolute index where the (truncated) history starts.
    head: usize,
    /// Absolute index of the next window to examine (`lastContentIndex`).
    last: usize,
    index: Map<Slot>,
    /// Slots whose 64-bit hash collides with a different window (astronomically rare).
    overflow: Map<Vec<Slot>>,
    /// Rolling hash of the raw window at `hash_pos`.
    hash: u64,
    hash_pos: Option<usize>,
    pow: u64,
    in_code_block: bool,
}

impl<'a> State<'a> {
    fn new(s: &'a ContentSettings) -> State<'a> {
        let mut pow = 1u64;
        for _ in 1..s.chunk {
            pow = pow.wrapping_mul(BASE);
        }
        State {
            s,
            buf: Vec::new(),
            base: 0,
            head: 0,
            last: 0,
            index: Map::default(),
            overflow: Map::default(),
            hash: 0,
            hash_pos: None,
            pow,
            in_code_block: false,
        }
    }

    /// `resetContentTracking()`: history, index and position; not `inCodeBlock`.
    fn reset(&mut self) {
        self.buf.clear();
        self.base = 0;
        self.head = 0;
        self.last = 0;
        if !self.index.is_empty() {
            if self.index.capacity() > 8192 {
                self.index = Map::default();
            } else {
                self.index.clear();
            }
        }
        self.overflow.clear();
        self.hash_pos = None;
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
        let mut h = self.raw_hash(at);
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

    fn append(&mut self, units: &[u16]) {
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
            if self.index.len() > SWEEP_FACTOR * self.s.max_history.max(1024) {
                let head = self.head;
                self.index.retain(|_, slot| slot.prune(head));
                self.overflow.retain(|_, slots| {
                    slots.retain_mut(|s| s.prune(head));
                    !slots.is_empty()
                });
            }
        }
    }

    /// Scan new windows; `Some(index)` when the window at `index` is a loop.
    fn scan(&mut self) -> bool {
        let c = self.s.chunk;
        while self.last + c <= self.end() {
            let at = self.last;
            if self.examine(at) {
                return true; // the index does not advance on a loop
            }
            self.last += 1;
        }
        false
    }

    /// `isLoopDetectedForChunk` for the window at `at`.
    fn examine(&mut self, at: usize) -> bool {
        if self.s.algorithm == Algorithm::DeepV && !deepv_significant(self.window(at)) {
            return false;
        }
        let key = self.key(at);
        let head = self.head;
        let threshold = self.s.threshold;
        // Find the slot whose (encoded) window equals this one.
        let found: Option<&mut Slot> = {
            let w_ptr = at;
            let buf = &self.buf;
            let base = self.base;
            let chunk = self.s.chunk;
            let win = |i: usize| &buf[i - base..i - base + chunk];
            let primary_ok = match self.index.get_mut(&key) {
                None => {
                    self.index.insert(
                        key,
                        Slot {
                            head: at,
                            rest: Vec::new(),
                        },
                    );
                    return false;
                }
                Some(slot) => {
                    if !slot.prune(head) {
                        *slot = Slot {
                            head: at,
                            rest: Vec::new(),
                        };
                        return false;
                    }
                    same_encoded(win(slot.head), win(w_ptr))
                }
            };
            if primary_ok {
                self.index.get_mut(&key)
            } else {
                let slots = self.overflow.entry(key).or_default();
                slots.retain_mut(|s| s.prune(head));
                match slots
                    .iter()
                    .position(|s| same_encoded(win(s.head), win(w_ptr)))
                {
                    Some(i) => slots.get_mut(i),
                    None => {
                        slots.push(Slot {
                            head: at,
                            rest: Vec::new(),
                        });
                        return false;
                    }
                }
            }
        };
        let slot = found.expect("slot exists");
        let win = |i: usize| &self.buf[i - self.base..i - self.base + self.s.chunk];
        // The collision guard: verified against the first stored occurrence.
        if win(slot.head) != win(at) {
            return false;
        }
        slot.rest.push(at);
        let n = slot.len();
        if n < threshold {
            return false;
        }
        let first = slot.at(n - threshold);
        let lastp = slot.at(n - 1);
        let avg = (lastp - first) as f64 / (threshold - 1) as f64;
        let chunk = self.s.chunk as f64;
        let max_gap = match self.s.algorithm {
            Algorithm::Hash => chunk * self.s.distance_factor,
            Algorithm::DeepV => {
                let w = win(at);
                if deepv_table(w) {
                    chunk * self.s.table_factor
                } else if deepv_common(w) {
                    chunk * self.s.common_factor
                } else {
                    chunk * self.s.distance_factor
                }
            }
        };
        if avg > max_gap {
            return false;
        }
        if self.s.period_check {
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
        let units = crate::js::js_trim(&self.buf[from - self.base..to - self.base]);
        format!(
            "Repeating content detected: \"{}...\"",
            crate::js::from_utf16_lossy(units)
        )
    }
}

/// Run the content check over a session.
pub fn run(s: &ContentSettings, p: &GeminiPrep, limit: Option<usize>) -> Vec<Detection> {
    let mut out = Vec::new();
    let mut st = State::new(s);
    for step in &p.steps {
        match step.op {
            // reset(promptId) clears content tracking but never `inCodeBlock`.
            Op::NewPrompt | Op::Tool { .. } => st.reset(),
            Op::Content(i) => {
                let flags = p.chunks[i as usize].flags;
                let fence_rule = s.fences != Fences::Off;
                if (fence_rule && flags.fences > 0)
                    || (s.markdown_resets && flags.markdown())
                    || (s.dividers && flags.divider)
                {
                    st.reset();
                }
                if fence_rule {
                    let was_in = st.in_code_block;
                    if flags.fences % 2 == 1 {
                        st.in_code_block = !st.in_code_block;
                    }
                    let skip = match s.fences {
                        Fences::SkipInside => was_in,
                        _ => was_in || st.in_code_block,
                    };
                    if skip || (s.dividers && flags.divider) {
                        continue;
                    }
                } else if s.dividers && flags.divider {
                    continue;
                }
                st.append(p.chunk(i));
                if st.scan() {
                    out.push(Detection {
                        kind: "content",
                        event: step.event,
                        turn: step.turn,
                        prompt: step.prompt,
                        strike: 0,
                        detail: st.detail(),
                    });
                    if limit.is_some_and(|l| out.len() >= l) {
                        break;
                    }
                }
            }
            Op::TurnStart => {}
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
}
