//! Long chants: the streamed text (content and thought, in record order,
//! across tool calls; a new prompt starts afresh) ends in a passage of at
//! least `L` characters that occurred `M` times, the occurrences not
//! overlapping. Gemini CLI's window of 50 units misses a paragraph of 300 to
//! 540 characters said again and again (its repeats are too far apart for
//! its distance rule, and a tool call between them resets it); this rule is
//! made for those.
//!
//! Algorithm: the Z-function of the reversed tail of the stream. For the
//! reversed text `r`, `z[j]` is the length of the longest common prefix of
//! `r` and `r[j..]`, i.e. the longest common suffix of the whole text and the
//! text cut `j` characters earlier: every earlier end of an occurrence of a
//! long suffix, and its length, in one O(n) pass. It was chosen over a
//! suffix automaton because the question is about the current suffix only
//! (the automaton answers it for every substring and must be rebuilt when
//! the window slides, which a bounded window needs), and over the prefix
//! function because Z gives every earlier end position directly. The tail
//! is bounded to `2 x L x M` characters (what `M` occurrences with gaps as
//! long as themselves need), and a check runs at a text record once `L / 4`
//! characters have arrived since the last one, so a session costs time
//! linear in its text: O(n x 8M) at most.

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

/// The Z-function: `z[j]` = longest common prefix of `s` and `s[j..]` (`z[0] = n`).
#[cfg(test)]
pub fn z_function<T: PartialEq>(s: &[T]) -> Vec<usize> {
    let mut z = Vec::new();
    z_into(s, &mut z);
    z
}

/// [`z_function`] into `z` (its buffer reused: the rule looks every few
/// records).
fn z_into<T: PartialEq>(s: &[T], z: &mut Vec<usize>) {
    let n = s.len();
    z.clear();
    z.resize(n, 0);
    if n == 0 {
        return;
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
}

/// Occurrences (the suffix itself included) of the text's suffix of `len`
/// characters that do not overlap, counted back from the end, and the
/// longest suffix repeated that often.
#[cfg(test)]
pub fn suffix_repeats(text: &[char], len: usize) -> (usize, usize) {
    suffix_repeats_in(text, len, &mut Scratch::default())
}

/// The reversed text and its Z-function, kept between looks.
#[derive(Default)]
struct Scratch {
    rev: Vec<char>,
    z: Vec<usize>,
}

/// [`suffix_repeats_z`] reading only the `z[j]` it needs: the common suffix
/// of the text and the text cut `j` characters earlier, compared directly,
/// at the `j`s not overlapping the last occurrence counted. Most compare
/// one character (in prose the last character rarely repeats at a given
/// distance), so a look costs a pass over the tail instead of its reversed
/// copy and Z-function; on text that matches at many distances without
/// repeating (`aaab aaab` ...), where direct comparison grows with `n x len`,
/// it stops after `4n` comparisons and the Z-function answers, so a look stays
/// linear.
fn suffix_repeats_in(text: &[char], len: usize, scratch: &mut Scratch) -> (usize, usize) {
    scan(text, len, scratch, 4 * text.len())
}

/// [`suffix_repeats_in`] with `budget` comparisons before the Z-function.
fn scan(text: &[char], len: usize, scratch: &mut Scratch, mut budget: usize) -> (usize, usize) {
    let n = text.len();
    if len == 0 || n < len {
        return (0, 0);
    }
    let (mut count, mut longest) = (1, n);
    // The first distance not overlapping the suffix itself.
    let mut j = len;
    while j < n {
        // z[j]: the longest common suffix of text[..n] and text[..n - j].
        let (a, b) = (&text[..n], &text[..n - j]);
        let mut z = 0;
        while z < b.len() && a[n - 1 - z] == b[b.len() - 1 - z] {
            z += 1;
        }
        budget = budget.saturating_sub(z + 1);
        if budget == 0 {
            return suffix_repeats_z(text, len, scratch);
        }
        if z >= len {
            count += 1;
            longest = longest.min(z);
            // The next occurrence may not overlap this one.
            j += len;
        } else {
            j += 1;
        }
    }
    (count, if count > 1 { longest } else { 0 })
}

/// Occurrences of the text's suffix of `len` characters by the Z-function
/// of the reversed text (every `z[j]`, in linear time).
fn suffix_repeats_z(text: &[char], len: usize, scratch: &mut Scratch) -> (usize, usize) {
    let n = text.len();
    if len == 0 || n < len {
        return (0, 0);
    }
    let Scratch { rev, z } = scratch;
    rev.clear();
    rev.extend(text.iter().rev());
    z_into(rev, z);
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
            len,
            cap: (2 * len * most).clamp(len, 1 << 17),
            every: (len / 4).max(1),
            prompts: Prompter::default(),
            text: Vec::new(),
            fresh: 0,
            warned: false,
            scratch: Scratch::default(),
        }
    }
}

/// The rule's state: the prompt's streamed text, its tail bounded by
/// `2 x cap` characters, what arrived since the last look.
struct LongChant {
    stages: Stages,
    len: usize,
    cap: usize,
    every: usize,
    prompts: Prompter,
    text: Vec<char>,
    fresh: usize,
    warned: bool,
    scratch: Scratch,
}

impl RecordRule for LongChant {
    fn record(&mut self, s: &Session, i: usize, out: &mut Vec<Detection>) {
        if self.prompts.observe(s, i) {
            self.text.clear();
            self.fresh = 0;
            self.warned = false;
        }
        let (Record::Content { text: t } | Record::Thought { text: t }) = &s.event(i).record else {
            return;
        };
        let (st, len, cap) = (self.stages, self.len, self.cap);
        let text = &mut self.text;
        let before = text.len();
        text.extend(t.chars());
        self.fresh += text.len() - before;
        if text.len() > 2 * cap {
            text.drain(..text.len() - cap);
        }
        if self.fresh < self.every {
            return;
        }
        self.fresh = 0;
        let tail = &text[text.len().saturating_sub(cap)..];
        let (count, longest) = suffix_repeats_in(tail, len, &mut self.scratch);
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
        let passage: String = tail[tail.len() - len.min(60)..].iter().collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn z_function_by_hand() {
        let s: Vec<char> = "aabxaab".chars().collect();
        assert_eq!(z_function(&s), vec![7, 1, 0, 0, 3, 1, 0]);
    }

    #[test]
    fn the_direct_scan_counts_what_the_z_function_counts() {
        // Prose, repeated passages, runs of one character and text that
        // matches at many distances (the scan's fallback), at every length.
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
        let mut scratch = Scratch::default();
        for t in &texts {
            let t: Vec<char> = t.chars().collect();
            for end in (0..=t.len()).step_by(7) {
                let t = &t[..end];
                for len in [1, 2, 3, 5, 8, 13, 40, 70] {
                    let want = suffix_repeats_z(t, len, &mut scratch);
                    // The look's own budget, none (the Z-function at once),
                    // one that runs out half way, and one that never does.
                    for budget in [4 * end, 0, end / 2, usize::MAX] {
                        let got = scan(t, len, &mut scratch, budget);
                        assert_eq!(got, want, "{t:?} len {len} budget {budget}");
                    }
                }
            }
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
