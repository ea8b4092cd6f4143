//! Long chants: the streamed text (content and thought, in record order,
//! across tool calls; a new prompt starts afresh) ends in a passage of at
//! least `L` characters that occurred `M` times, the occurrences not
//! overlapping. Gemini CLI's window of 50 units misses a paragraph of 300 to
//! 540 characters said again and again (its repeats are too far apart for
//! its distance rule, and a tool call between them resets it); this rule is
//! made for those.
//!
//! Algorithm: a rolling hash of every window of `L` characters, the windows
//! of one hash bucket chained from the newest back (as zlib finds earlier
//! matches). A look follows the chain of the text's last window: the earlier
//! ends of the same `L` characters, newest first, each verified character
//! by character, so a hash collision costs a comparison and never an
//! answer. Each character costs one hash update and one table write, and a
//! look costs the occurrences of the last window in the tail, not the tail:
//! prose, whose last window rarely occurred before, costs no more than its
//! new characters. The tail is bounded to `2 x L x M` characters (what `M`
//! occurrences with gaps as long as themselves need), and a look runs at a
//! text record once `L / 4` characters have arrived since the last one. The
//! longest common suffix of the occurrences, which only a detection shows,
//! is measured only for one. The Z-function of the reversed tail, which
//! answered every look before (in a pass over the tail), is kept in the
//! tests as the reference.

use super::{run_records, staged, RecordRule, Records, Stage, Stages};
use crate::detect::gemini::prep::Prompter;
use crate::detect::{Check, Detection, Prepared, Stream};
use crate::event::{Record, Session};

/// What the rule reads.
#[derive(Debug, Clone, PartialEq)]
pub struct LongChantSettings {
    /// Shortest passage, in characters.
    pub chars: usize,
    /// Occurrences that warn and stop.
    pub stages: Stages,
}

/// The rule as a check.
pub struct LongChantCheck {
    /// Its settings.
    pub s: LongChantSettings,
}

/// The hash's modulus, the Mersenne prime 2^61 - 1: a product reduces with
/// shifts, and no text of few letters makes windows collide as they do
/// modulo 2^64 (Thue-Morse strings).
const MOD: u64 = (1 << 61) - 1;
/// The hash's base (any number below the modulus above every `char`).
const BASE: u64 = 0x1d3a_5f27_c4b9_e681 & MOD;
/// No earlier window of the same hash.
const NONE: u64 = u64::MAX;

fn mul_mod(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    let r = (p as u64 & MOD) + (p >> 61) as u64;
    if r >= MOD {
        r - MOD
    } else {
        r
    }
}

fn add_mod(a: u64, b: u64) -> u64 {
    let r = a + b;
    if r >= MOD {
        r - MOD
    } else {
        r
    }
}

/// The prompt's streamed text (its tail) with every window of `len`
/// characters hashed and chained to the previous window of the same bucket
/// (its hash's low bits), as zlib chains its matches: a character costs a
/// table write, not a map insert. A chain holds every window of its hash
/// (and some of other hashes, told apart by the hashes kept). Positions are
/// absolute (characters since the prompt began), so dropping the text's
/// front moves no chain; a chain is followed only down to the tail's start.
struct Index {
    len: usize,
    /// `BASE^len`: what the character leaving the window weighed.
    pow: u64,
    /// The hash of the last window.
    roll: u64,
    text: Vec<char>,
    /// By character: the hash of the window ending there.
    hashes: Vec<u64>,
    /// By character: the end of the previous window of the same bucket as
    /// the window ending there ([`NONE`] if none or no window ends there).
    prev: Vec<u64>,
    /// By bucket: the end of its newest window. Twice as many buckets as
    /// characters held or more (it doubles as the text grows), so a chain
    /// holds few windows of other hashes.
    head: Vec<u64>,
    /// Characters dropped from the text's front.
    dropped: u64,
    /// The ends of the occurrences the last look counted.
    counted: Vec<u64>,
}

impl Index {
    fn new(len: usize) -> Index {
        let mut pow = 1;
        for _ in 0..len {
            pow = mul_mod(pow, BASE);
        }
        Index {
            len,
            pow,
            roll: 0,
            text: Vec::new(),
            hashes: Vec::new(),
            prev: Vec::new(),
            head: vec![NONE; 64],
            dropped: 0,
            counted: Vec::new(),
        }
    }

    fn clear(&mut self) {
        self.roll = 0;
        self.text.clear();
        self.hashes.clear();
        self.prev.clear();
        self.head.fill(NONE);
        self.dropped = 0;
    }

    fn push(&mut self, c: char) {
        let k = self.text.len();
        self.text.push(c);
        self.roll = add_mod(mul_mod(self.roll, BASE), u64::from(c));
        if k >= self.len {
            // The text keeps `cap >= len` characters when it drops its
            // front, so the leaving one is still there.
            let out = mul_mod(u64::from(self.text[k - self.len]), self.pow);
            self.roll = add_mod(self.roll, MOD - out);
        }
        let at = self.dropped + k as u64;
        self.hashes.push(self.roll);
        self.prev.push(NONE);
        if 2 * self.text.len() > self.head.len() {
            // Rechains every window held, this one included.
            self.grow();
        } else if at + 1 >= self.len as u64 {
            self.chain(k);
        }
    }

    /// Chain the window ending at `k` (an index into `text`).
    fn chain(&mut self, k: usize) {
        let b = self.hashes[k] as usize & (self.head.len() - 1);
        self.prev[k] = self.head[b];
        self.head[b] = self.dropped + k as u64;
    }

    /// Double the buckets and chain every window held again, oldest first.
    fn grow(&mut self) {
        let size = (2 * self.head.len()).max(2 * self.text.len());
        self.head.clear();
        self.head.resize(size.next_power_of_two(), NONE);
        for k in 0..self.text.len() {
            self.prev[k] = NONE;
            if self.dropped + k as u64 + 1 >= self.len as u64 {
                self.chain(k);
            }
        }
    }

    /// Keep the last `keep` characters.
    fn keep(&mut self, keep: usize) {
        let d = self.text.len().saturating_sub(keep);
        self.text.drain(..d);
        self.hashes.drain(..d);
        self.prev.drain(..d);
        self.dropped += d as u64;
    }

    /// Occurrences that do not overlap (the suffix itself included) of the
    /// last `len` characters within the last `cap` ones, counted back from
    /// the end (their ends kept in `counted`): what `suffix_repeats`, the
    /// tests' Z-function reference, counts over that tail.
    fn count(&mut self, cap: usize) -> usize {
        let (len, n) = (self.len, self.text.len());
        let t0 = n.saturating_sub(cap);
        self.counted.clear();
        if len == 0 || n - t0 < len {
            return 0;
        }
        let abs = |k: usize| self.dropped + k as u64;
        // An occurrence lies in the tail and ends `len` or more before the
        // end (the greedy scan back from the end: the next one ends `len`
        // or more before the last counted).
        let lo = abs(t0 + len - 1);
        let mut bound = match n.checked_sub(len + 1) {
            Some(b) => abs(b),
            None => return 1,
        };
        let last = &self.text[n - len..];
        let hash = self.hashes[n - 1];
        let mut at = self.prev[n - 1];
        while at != NONE && at >= lo {
            let k = (at - self.dropped) as usize;
            if at <= bound && self.hashes[k] == hash && self.text[k + 1 - len..=k] == *last {
                self.counted.push(at);
                match at.checked_sub(len as u64) {
                    Some(b) => bound = b,
                    None => break,
                }
            }
            at = self.prev[k];
        }
        1 + self.counted.len()
    }

    /// The longest suffix repeated as often as the last count found (0 if
    /// it found one occurrence): the shortest common suffix of the text and
    /// the text cut at a counted end, within the last `cap` characters.
    fn longest(&self, cap: usize) -> usize {
        let n = self.text.len();
        let t0 = n.saturating_sub(cap);
        self.counted
            .iter()
            .map(|&at| {
                let k = (at - self.dropped) as usize;
                let (a, b) = (&self.text[t0..n], &self.text[t0..=k]);
                a.iter()
                    .rev()
                    .zip(b.iter().rev())
                    .take_while(|(x, y)| x == y)
                    .count()
            })
            .min()
            .unwrap_or(0)
    }
}

impl Check for LongChantCheck {
    fn name(&self) -> &'static str {
        "looptune.long_chant"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }
    fn limit_per_prompt(&self) -> bool {
        true
    }
    fn run(&self, session: &Prepared, _limit: Option<usize>) -> Vec<Detection> {
        run_records(self.rule(), &session.session)
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(Box::new(Records(self.rule())))
    }
}

impl LongChantCheck {
    fn rule(&self) -> LongChant {
        let st = self.s.stages;
        let len = self.s.chars;
        let most = st.warn.max(st.stop).max(1);
        LongChant {
            stages: st,
            cap: (2 * len * most).clamp(len, 1 << 17),
            every: (len / 4).max(1),
            prompts: Prompter::default(),
            index: Index::new(len),
            fresh: 0,
            warned: false,
        }
    }
}

/// The rule's state: the prompt's streamed text, its tail bounded by
/// `2 x cap` characters, what arrived since the last look.
struct LongChant {
    stages: Stages,
    cap: usize,
    every: usize,
    prompts: Prompter,
    index: Index,
    fresh: usize,
    warned: bool,
}

impl RecordRule for LongChant {
    fn record(&mut self, s: &Session, i: usize, out: &mut Vec<Detection>) {
        if self.prompts.observe(s, i) {
            self.index.clear();
            self.fresh = 0;
            self.warned = false;
        }
        let (Record::Content { text: t } | Record::Thought { text: t }) = &s.event(i).record else {
            return;
        };
        let (st, cap) = (self.stages, self.cap);
        let index = &mut self.index;
        let before = index.text.len();
        for c in t.chars() {
            index.push(c);
        }
        self.fresh += index.text.len() - before;
        if index.text.len() > 2 * cap {
            index.keep(cap);
        }
        if self.fresh < self.every {
            return;
        }
        self.fresh = 0;
        let count = index.count(cap);
        let stage = if st.stop > 0 && count >= st.stop {
            Stage::Stop
        } else if st.warns() && count >= st.warn {
            if self.warned {
                return;
            }
            Stage::Warn
        } else {
            self.warned = false;
            return;
        };
        self.warned = true;
        let longest = index.longest(cap);
        let (text, len) = (&index.text, index.len);
        let passage: String = text[text.len() - len.min(60)..].iter().collect();
        out.push(staged(
            s,
            i,
            stage,
            ("long_chant", "long_chant_warn"),
            self.prompts.count(),
            format!(
                "a passage of {longest} characters said {count} times, ending \"{}\"",
                passage.replace('\n', " ")
            ),
        ));
    }
}

/// The Z-function: `z[j]` = longest common prefix of `s` and `s[j..]` (`z[0] = n`).
#[cfg(test)]
pub fn z_function<T: PartialEq>(s: &[T]) -> Vec<usize> {
    let n = s.len();
    let mut z = vec![0; n];
    if n == 0 {
        return z;
    }
    z[0] = n;
    let (mut l, mut r) = (0, 0);
    for i in 1..n {
        if i < r {
            z[i] = (r - i).min(z[i - l]);
        }
        while i + z[i] < n && s[z[i]] == s[i + z[i]] {
            z[i] += 1;
        }
        if i + z[i] > r {
            (l, r) = (i, i + z[i]);
        }
    }
    z
}

/// The reference: occurrences (the suffix itself included) of the text's
/// suffix of `len` characters that do not overlap, counted back from the
/// end, and the longest suffix repeated that often, by the Z-function of
/// the reversed text (`z[j]`: the longest common suffix of the text and the
/// text cut `j` characters earlier).
#[cfg(test)]
pub fn suffix_repeats(text: &[char], len: usize) -> (usize, usize) {
    let n = text.len();
    if len == 0 || n < len {
        return (0, 0);
    }
    let rev: Vec<char> = text.iter().rev().copied().collect();
    let z = z_function(&rev);
    let (mut count, mut next, mut longest) = (1, len, n);
    for (j, &zj) in z.iter().enumerate().skip(1) {
        if j >= next && zj >= len {
            count += 1;
            next = j + len;
            longest = longest.min(zj);
        }
    }
    (count, if count > 1 { longest } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn z_function_by_hand() {
        let s: Vec<char> = "aabxaab".chars().collect();
        assert_eq!(z_function(&s), vec![7, 1, 0, 0, 3, 1, 0]);
    }

    /// The index fed `text` in chunks of the given sizes, its front dropped
    /// as the rule drops it, compared with the reference over the tail
    /// after every chunk.
    fn index_agrees(text: &[char], chunks: &[usize], len: usize, cap: usize) {
        let mut index = Index::new(len);
        let mut fed: Vec<char> = Vec::new();
        let mut at = 0;
        for &c in chunks.iter().cycle() {
            if at >= text.len() {
                break;
            }
            let end = (at + c.max(1)).min(text.len());
            for &ch in &text[at..end] {
                index.push(ch);
            }
            fed.extend_from_slice(&text[at..end]);
            at = end;
            if index.text.len() > 2 * cap {
                index.keep(cap);
            }
            assert_eq!(index.text, fed[fed.len() - index.text.len()..]);
            let tail = &fed[fed.len().saturating_sub(cap)..];
            let count = index.count(cap);
            let got = (count, if count > 1 { index.longest(cap) } else { 0 });
            assert_eq!(
                got,
                suffix_repeats(tail, len),
                "len {len} cap {cap} at {at}"
            );
        }
    }

    #[test]
    fn the_index_counts_what_the_z_function_counts() {
        // Prose, repeated passages, runs of one character and text that
        // matches at many distances, at several lengths and caps.
        let para = "The build failed again, so I will retry the exact same command now. ";
        let mut texts: Vec<String> = vec![
            format!("intro {para}{para}x{para}"),
            format!(
                "{para}{}{para}{para}",
                "other words between them ".repeat(3)
            ),
            "=".repeat(300),
            "aaab".repeat(90),
            "aaaaaaaaab".repeat(40) + "aaaaaaaaa",
            "ab".repeat(150) + "abb",
            "é∑😀".repeat(60),
        ];
        // A seeded mix of few letters: many partial matches.
        let mut x: u32 = 7;
        for _ in 0..20 {
            texts.push(
                (0..400)
                    .map(|_| {
                        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                        ['a', 'b', 'a', 'a'][(x >> 16) as usize % 4]
                    })
                    .collect(),
            );
        }
        for t in &texts {
            let t: Vec<char> = t.chars().collect();
            for len in [1, 2, 3, 5, 8, 13, 40, 70] {
                for most in [1, 2, 4] {
                    let cap = (2 * len * most).max(len);
                    index_agrees(&t, &[7, 1, 23], len, cap);
                }
                index_agrees(&t, &[5], len, 1 << 17);
                // A long chunk after the front was dropped: the buckets
                // double with positions no longer starting at 0.
                let mut chunks = vec![1; 30];
                chunks.push(300);
                index_agrees(&t, &chunks, len, 2 * len);
            }
        }
    }

    proptest! {
        #[test]
        fn the_index_agrees_with_the_z_function_on_any_text(
            text in proptest::collection::vec(prop_oneof![Just('a'), Just('b'), Just('c'), any::<char>()], 0..300),
            chunks in proptest::collection::vec(1usize..40, 1..8),
            len in 1usize..30,
            most in 1usize..5,
        ) {
            index_agrees(&text, &chunks, len, (2 * len * most).max(len));
        }
    }

    #[test]
    fn repeated_passages_are_counted_without_overlap() {
        let para = "The build failed again, so I will retry the exact same command now. ";
        let text: Vec<char> = format!("intro {para}{para}x{para}").chars().collect();
        let (count, longest) = suffix_repeats(&text, 40);
        assert_eq!(count, 3);
        assert!(longest >= para.len(), "{longest}");
        // A run of one character is one occurrence per `len` characters.
        let run: Vec<char> = "=".repeat(100).chars().collect();
        assert_eq!(suffix_repeats(&run, 40).0, 2);
        let fresh: Vec<char> = "all of this text is said only once here".chars().collect();
        assert_eq!(suffix_repeats(&fresh, 10), (1, 0));
    }
}
