//! Which content windows may have occurred before: a filter in front of the
//! window index.
//!
//! The original records every window at every position, but only a window seen
//! before can change what it decides, and in ordinary prose almost none is
//! (0.3-0.5% of positions on the corpora we hold). This filter proves most
//! positions new at a fraction of the cost of an index probe, so the content
//! check builds its exact index only around real repeats.
//!
//! Sampling, exact in one direction: every `stride`-th position (absolute) is
//! *aligned*, and the `k`-gram starting there is remembered. If the window at
//! `p` equals the window at an earlier `q`, the first aligned `y >= q` lies
//! within `stride` of `q`, its k-gram lies inside window `q` (`stride - 1 + k
//! <= chunk`), and so the k-gram at `x = p + (y - q)` equals it: some position
//! in `[p, p + stride)` is a *hit*. No hit in that range proves the window at
//! `p` new. A hit is then checked on the text (`repeats_earlier`), so hash
//! collisions and k-gram repeats that are not window repeats cost a comparison,
//! never a wrong answer.

/// The k-gram hash is a gear hash: `h = (h << shift) + gear(unit)` with
/// `shift * k >= 64`, so a unit's term has left the 64 bits by the time it has
/// left the k-gram, rolling costs a shift and an add, and the top bits (the
/// bitset slot) already depend on every unit of the k-gram.
const GEAR: [u64; 256] = gear_table();

const fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const fn gear_table() -> [u64; 256] {
    let mut t = [0; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = splitmix(i as u64);
        i += 1;
    }
    t
}

/// A random 64-bit value per unit (a table for the common ones).
fn gear(u: u16) -> u64 {
    match GEAR.get(usize::from(u)) {
        Some(&g) => g,
        None => splitmix(u64::from(u)),
    }
}

/// Bits of the membership bitset (4 KiB: stays in L1 next to the text).
const BITS: u32 = 15;

/// The filter of one content history; positions are the history's absolute indices.
#[derive(Debug, Clone)]
pub struct RepeatFilter {
    k: usize,
    stride: usize,
    /// The gear shift less one (the shift can be 64: it is done in two steps).
    shift_less_one: u32,
    /// Next position to examine.
    cursor: usize,
    /// Rolling hash of the k-gram at `cursor - 1`, when that position was examined.
    hash: Option<u64>,
    /// Next aligned position at or after `cursor`.
    next_aligned: usize,
    /// Aligned k-grams: (hash, position), in position order.
    aligned: Vec<(u64, usize)>,
    /// Membership bits of `aligned` hashes (a superset after compaction is fine).
    bits: Vec<u64>,
    /// Hits: (position, hash), in position order; `hits[hit_from..]` are current.
    hits: Vec<(usize, u64)>,
    hit_from: usize,
}

/// Words of the bitset.
const WORDS: usize = 1 << (BITS - 6);

/// Whether an aligned k-gram with hash `h` is still in the history.
fn remembered(aligned: &[(u64, usize)], h: u64, head: usize) -> bool {
    aligned.iter().rev().any(|&(g, y)| g == h && y >= head)
}

fn slot(h: u64) -> usize {
    (h >> (64 - BITS)) as usize
}

impl RepeatFilter {
    /// A filter for windows of `chunk` units (at least 1).
    pub fn new(chunk: usize) -> RepeatFilter {
        // Long enough k-grams that prose rarely repeats one; the stride as long
        // as the proof allows, so few positions are remembered.
        let k = (chunk / 3).clamp(1, 16);
        // The smallest shift that forgets a unit after k of them, and the
        // k-gram it hashes (no longer than k: 16 for the usual windows).
        let shift = 64usize.div_ceil(k);
        let k = 64usize.div_ceil(shift);
        let stride = chunk + 1 - k;
        RepeatFilter {
            k,
            stride,
            shift_less_one: shift as u32 - 1,
            cursor: 0,
            hash: None,
            next_aligned: 0,
            aligned: Vec::new(),
            bits: Vec::new(),
            hits: Vec::new(),
            hit_from: 0,
        }
    }

    /// How many positions after `p` a hit can prove a repeat at `p`.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Forget everything (a new history starting at position 0).
    pub fn reset(&mut self) {
        for &(h, _) in &self.aligned {
            let i = slot(h);
            self.bits[i >> 6] = 0;
        }
        self.aligned.clear();
        self.hits.clear();
        self.hit_from = 0;
        self.cursor = 0;
        self.hash = None;
        self.next_aligned = 0;
    }

    /// Examine every position before `to` (each needs its k-gram in `buf`,
    /// which holds the history from absolute position `base`); positions before
    /// `head` have left the history and are skipped.
    pub fn advance(&mut self, buf: &[u16], base: usize, head: usize, to: usize) {
        if self.cursor < head {
            self.cursor = head;
            self.hash = None;
        }
        if self.next_aligned < self.cursor {
            let behind = self.cursor - self.next_aligned;
            self.next_aligned += behind.div_ceil(self.stride) * self.stride;
        }
        if self.cursor >= to {
            return;
        }
        if self.bits.is_empty() {
            self.bits = vec![0; WORDS];
        }
        debug_assert!(to - 1 + self.k <= base + buf.len());
        let (k, s1) = (self.k, self.shift_less_one);
        let roll = |h: u64, u: u16| ((h << s1) << 1).wrapping_add(gear(u));
        let mut x = self.cursor;
        let mut h = match self.hash {
            Some(h) => roll(h, buf[x + k - 1 - base]),
            None => buf[x - base..x - base + k]
                .iter()
                .fold(0u64, |h, &u| roll(h, u)),
        };
        loop {
            // Positions before the next aligned one (or the last) only test
            // membership: a tight loop over the outgoing and incoming units.
            let stop = self.next_aligned.min(to - 1);
            if x < stop {
                let bits: &[u64; WORDS] = self.bits[..].try_into().expect("bitset size");
                // Bitset members go to `hits` first and are confirmed after the
                // loop (the aligned list does not change in it), so the loop
                // keeps everything in registers.
                let from = self.hits.len();
                // The units entering the k-gram at positions x + 1 ..= stop.
                for (j, &u) in buf[x + k - base..stop + k - base].iter().enumerate() {
                    let s = slot(h);
                    if bits[s >> 6] & (1 << (s & 63)) != 0 {
                        self.hits.push((x + j, h));
                    }
                    h = roll(h, u);
                }
                let mut kept = from;
                for i in from..self.hits.len() {
                    let hit = self.hits[i];
                    if remembered(&self.aligned, hit.1, head) {
                        self.hits[kept] = hit;
                        kept += 1;
                    }
                }
                self.hits.truncate(kept);
                x = stop;
            }
            let s = slot(h);
            if self.bits[s >> 6] & (1 << (s & 63)) != 0 && remembered(&self.aligned, h, head) {
                self.hits.push((x, h));
            }
            if x == self.next_aligned {
                self.remember(h, x, head);
                self.next_aligned += self.stride;
            }
            x += 1;
            if x == to {
                break;
            }
            h = roll(h, buf[x + k - 1 - base]);
        }
        self.cursor = to;
        self.hash = Some(h);
    }

    fn remember(&mut self, h: u64, x: usize, head: usize) {
        // Compact once stale entries (before the history) could dominate.
        if self.aligned.len() >= 64 && self.aligned[0].1 < head {
            let stale = self.aligned.partition_point(|&(_, y)| y < head);
            if stale * 2 >= self.aligned.len() {
                for &(g, _) in &self.aligned[..stale] {
                    let i = slot(g);
                    self.bits[i >> 6] = 0;
                }
                self.aligned.drain(..stale);
                for &(g, _) in &self.aligned {
                    let i = slot(g);
                    self.bits[i >> 6] |= 1 << (i & 63);
                }
            }
        }
        let i = slot(h);
        self.bits[i >> 6] |= 1 << (i & 63);
        self.aligned.push((h, x));
    }

    /// The first hit at or after `p` (hits before `p` are dropped: callers
    /// only move forward).
    pub fn next_hit(&mut self, p: usize) -> Option<usize> {
        while self.hit_from < self.hits.len() && self.hits[self.hit_from].0 < p {
            self.hit_from += 1;
        }
        if self.hit_from == self.hits.len() {
            self.hits.clear();
            self.hit_from = 0;
            return None;
        }
        Some(self.hits[self.hit_from].0)
    }

    /// Whether the window of `chunk` units at `p` occurs at some `q` in
    /// `[head, p)`, checked on the text. Needs every position before
    /// `p + stride` examined; exact for windows as units (the caller keeps
    /// windows whose UTF-8 encoding could merge distinct units elsewhere).
    pub fn repeats_earlier(
        &mut self,
        buf: &[u16],
        base: usize,
        head: usize,
        p: usize,
        chunk: usize,
    ) -> bool {
        debug_assert!(self.cursor >= p + self.stride);
        let win = |q: usize| &buf[q - base..q - base + chunk];
        let end = p + self.stride;
        self.next_hit(p);
        for &(x, h) in &self.hits[self.hit_from..] {
            if x >= end {
                break;
            }
            for &(g, y) in self.aligned.iter().rev() {
                // y < x always holds: a hit is tested before its own position is remembered.
                if g != h || y >= x || y < head {
                    continue;
                }
                let shift = x - y;
                if p >= head + shift && win(p - shift) == win(p) {
                    return true;
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The filter against brute force: every position whose window occurred
    /// earlier in the history is reported, on random texts over small
    /// alphabets (many repeats) with a moving history start.
    #[test]
    fn never_misses_a_repeat() {
        let mut r = crate::input::synth::Rng::new(7);
        let (mut repeats, mut found) = (0, 0);
        for case in 0..400 {
            let chunk = [1, 2, 3, 4, 5, 8, 13, 50][case % 8];
            let alphabet = r.range(1, 4) as u16;
            let len = r.range(0, 600);
            let text: Vec<u16> = (0..len)
                .map(|_| r.range(0, alphabet as usize) as u16)
                .collect();
            let mut f = RepeatFilter::new(chunk);
            let history = r.range(chunk, 300);
            let mut p = 0;
            while p + chunk <= text.len() {
                let head = (p + chunk).saturating_sub(history);
                f.advance(&text, 0, head, p + f.stride());
                let truth = (head..p).any(|q| text[q..q + chunk] == text[p..p + chunk]);
                let got = f.next_hit(p).is_some_and(|x| x < p + f.stride())
                    && f.repeats_earlier(&text, 0, head, p, chunk);
                assert_eq!(got, truth, "case {case}, position {p}, head {head}");
                repeats += usize::from(truth);
                found += usize::from(got);
                p += 1 + r.range(0, 2);
            }
        }
        assert!(repeats > 1000 && found == repeats, "{repeats} repeats");
    }

    #[test]
    fn prose_has_few_hits() {
        let text: Vec<u16> = "The quick brown fox jumps over the lazy dog while the \
            cat watches from a sunny windowsill, thinking about lunch and naps."
            .encode_utf16()
            .collect();
        let mut f = RepeatFilter::new(50);
        f.advance(&text, 0, 0, text.len() + 1 - 16);
        assert_eq!(f.next_hit(0), None);
    }
}
