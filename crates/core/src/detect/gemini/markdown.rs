//! The per-chunk pre-filter patterns of Gemini CLI's content check, and the
//! DeepV fork's window filters, evaluated exactly as JavaScript regexes without
//! `u`/`m` flags evaluate them: over UTF-16 units, `^`/`$` at the ends of the
//! whole chunk, `.` excluding the four line terminators, `\s` and `\d` as JS
//! defines them. Each function names the literal it reproduces.

use crate::util::js::is_js_space;

const NL: u16 = b'\n' as u16;
const PIPE: u16 = b'|' as u16;

/// Flags of one content chunk (computed once per chunk, shared by all configurations).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkFlags {
    /// Non-overlapping occurrences of three backticks.
    pub fences: u32,
    /// `/(^|\n)\s*(\|.*\||[|+-]{3,})/`
    pub table: bool,
    /// `/(^|\n)\s*[*-+]\s/` or `/(^|\n)\s*\d+\.\s/`
    pub list: bool,
    /// `/(^|\n)#+\s/`
    pub heading: bool,
    /// `/(^|\n)>\s/`
    pub blockquote: bool,
    /// `/^[+-_=*\u2500-\u257F]+$/`
    pub divider: bool,
}

impl ChunkFlags {
    /// Evaluate every pattern on a chunk, line by line (the same answers as
    /// the `has_*` functions, which tests compare).
    pub fn of(c: &[u16]) -> ChunkFlags {
        let newlines = c
            .iter()
            .enumerate()
            .filter(|(_, u)| **u == NL)
            .map(|(i, _)| i);
        Self::from_lines(c, newlines, c.contains(&(b'`' as u16)))
    }

    /// [`ChunkFlags::of`] for a chunk whose units are the bytes of ASCII
    /// `text` (most chunks): memchr finds the lines and backticks.
    pub fn of_ascii(c: &[u16], text: &[u8]) -> ChunkFlags {
        debug_assert!(text.is_ascii() && c.len() == text.len());
        // Most chunks are a line fragment without a backtick: one search
        // settles that (two memchr calls cost more on short chunks).
        if memchr::memchr2(b'\n', b'`', text).is_none() {
            // One line. Its patterns (table, list item, heading, blockquote)
            // all start with a non-letter, after `\s*` or at 0: a letter
            // first rules them all out.
            let q = text
                .iter()
                .position(|&b| !is_js_space(u16::from(b)))
                .unwrap_or(text.len());
            if text.get(q).is_some_and(u8::is_ascii_alphabetic) {
                return ChunkFlags {
                    divider: is_divider(c),
                    ..ChunkFlags::default()
                };
            }
            return Self::from_lines(c, std::iter::empty(), false);
        }
        let newlines = memchr::memchr_iter(b'\n', text);
        Self::from_lines(c, newlines, memchr::memchr(b'`', text).is_some())
    }

    /// The flags from the positions of the chunk's newlines and whether it
    /// holds a backtick (no backtick, no fence to count).
    fn from_lines(c: &[u16], newlines: impl Iterator<Item = usize>, backtick: bool) -> ChunkFlags {
        let mut f = ChunkFlags {
            divider: is_divider(c),
            fences: if backtick { count_fences(c) } else { 0 },
            ..ChunkFlags::default()
        };
        for s in std::iter::once(0).chain(newlines.map(|i| i + 1)) {
            f.table = f.table || table_at(c, s);
            f.list = f.list || list_item_at(c, s);
            f.heading = f.heading || heading_at(c, s);
            f.blockquote = f.blockquote || blockquote_at(c, s);
        }
        f
    }

    /// Any of the markdown element flags (table, list, heading, blockquote).
    pub fn markdown(&self) -> bool {
        self.table || self.list || self.heading || self.blockquote
    }
}

/// `(content.match(/```/g) ?? []).length`: non-overlapping, left to right.
pub fn count_fences(c: &[u16]) -> u32 {
    let bt = b'`' as u16;
    let (mut i, mut n) = (0, 0);
    while i + 3 <= c.len() {
        if c[i] == bt && c[i + 1] == bt && c[i + 2] == bt {
            n += 1;
            i += 3;
        } else {
            i += 1;
        }
    }
    n
}

/// Positions where `(^|\n)` lets the rest of a pattern start: 0 and after each `\n`.
fn line_starts(c: &[u16]) -> impl Iterator<Item = usize> + '_ {
    std::iter::once(0).chain(
        c.iter()
            .enumerate()
            .filter(|(_, u)| **u == NL)
            .map(|(i, _)| i + 1),
    )
}

/// Skip `\s*` greedily. The patterns that follow `\s*` start with a
/// non-space character, so backtracking can never help and greedy is exact.
fn skip_space(c: &[u16], mut i: usize) -> usize {
    while i < c.len() && is_js_space(c[i]) {
        i += 1;
    }
    i
}

fn is_line_terminator(u: u16) -> bool {
    matches!(u, 0x0a | 0x0d | 0x2028 | 0x2029)
}

/// `/(^|\n)\s*(\|.*\||[|+-]{3,})/`
pub fn has_table(c: &[u16]) -> bool {
    line_starts(c).any(|s| table_at(c, s))
}

fn table_at(c: &[u16], s: usize) -> bool {
    let q = skip_space(c, s);
    if q >= c.len() {
        return false;
    }
    // `\|.*\|`: a pipe, then another pipe before any line terminator.
    if c[q] == PIPE {
        for &u in &c[q + 1..] {
            if u == PIPE {
                return true;
            }
            if is_line_terminator(u) {
                break;
            }
        }
    }
    // `[|+-]{3,}`
    c.len() >= q + 3 && c[q..q + 3].iter().all(|u| matches!(*u, 0x7c | 0x2b | 0x2d))
}

/// `/(^|\n)\s*[*-+]\s/ || /(^|\n)\s*\d+\.\s/`. The class `[*-+]` is the range
/// from `*` to `+`: star and plus only, never minus.
#[cfg_attr(not(test), allow(dead_code))] // the original's API, read by its ported tests
pub fn has_list_item(c: &[u16]) -> bool {
    line_starts(c).any(|s| list_item_at(c, s))
}

fn list_item_at(c: &[u16], s: usize) -> bool {
    let q = skip_space(c, s);
    if q < c.len() && matches!(c[q], 0x2a | 0x2b) && q + 1 < c.len() && is_js_space(c[q + 1]) {
        return true;
    }
    let mut d = q;
    while d < c.len() && c[d].is_ascii_digit_u16() {
        d += 1;
    }
    d > q && d + 1 < c.len() && c[d] == b'.' as u16 && is_js_space(c[d + 1])
}

/// `/(^|\n)#+\s/` (no leading space allowed).
pub fn has_heading(c: &[u16]) -> bool {
    line_starts(c).any(|s| heading_at(c, s))
}

fn heading_at(c: &[u16], s: usize) -> bool {
    let mut i = s;
    while i < c.len() && c[i] == b'#' as u16 {
        i += 1;
    }
    i > s && i < c.len() && is_js_space(c[i])
}

/// `/(^|\n)>\s/`
pub fn has_blockquote(c: &[u16]) -> bool {
    line_starts(c).any(|s| blockquote_at(c, s))
}

fn blockquote_at(c: &[u16], s: usize) -> bool {
    s + 1 < c.len() && c[s] == b'>' as u16 && is_js_space(c[s + 1])
}

/// `/^[+-_=*\u2500-\u257F]+$/`: `+-_` is the range U+002B..U+005F (plus,
/// comma, minus, dot, slash, digits, colon, ..., A-Z, brackets, caret,
/// underscore); `=` is inside it; `*` and box drawing are added.
pub fn is_divider(c: &[u16]) -> bool {
    !c.is_empty()
        && c.iter()
            .all(|u| matches!(*u, 0x2b..=0x5f | 0x2a | 0x2500..=0x257f))
}

trait AsciiDigit {
    fn is_ascii_digit_u16(&self) -> bool;
}
impl AsciiDigit for u16 {
    fn is_ascii_digit_u16(&self) -> bool {
        (0x30..=0x39).contains(self)
    }
}

// ---- DeepV fork (OrionStarAI/DeepVCode loopDetectionService.ts) window filters ----

/// `hasSignificantContent`: trimmed length >= 15, and not only whitespace,
/// only `[\s\-=*_+|#.`\/\\~]`, or only `[\s\u2500-\u257F]`.
pub fn deepv_significant(w: &[u16]) -> bool {
    if crate::util::js::js_trim(w).len() < 15 {
        return false;
    }
    let symbols = |u: u16| {
        is_js_space(u)
            || matches!(
                u,
                0x2d | 0x3d | 0x2a | 0x5f | 0x2b | 0x7c | 0x23 | 0x2e | 0x60 | 0x2f | 0x5c | 0x7e
            )
    };
    if w.iter().all(|u| symbols(*u)) {
        return false;
    }
    if w.iter()
        .all(|u| is_js_space(*u) || (0x2500..=0x257f).contains(u))
    {
        return false;
    }
    true
}

/// `isTableContent`: two or more pipes (the two regex alternatives both need two pipes).
pub fn deepv_table(w: &[u16]) -> bool {
    w.iter().filter(|u| **u == PIPE).count() >= 2
}

fn ascii_ci_prefix(w: &[u16], at: usize, word: &str) -> bool {
    let b = word.as_bytes();
    w.len() >= at + b.len()
        && w[at..at + b.len()]
            .iter()
            .zip(b)
            .all(|(u, c)| *u < 128 && (*u as u8).eq_ignore_ascii_case(c))
}

/// `isCommonPattern`: any of the fork's ten "naturally repeating" patterns.
pub fn deepv_common(w: &[u16]) -> bool {
    let q = skip_space(w, 0);
    let space_at = |i: usize| i < w.len() && is_js_space(w[i]);
    // /^[\s]*[-•*]\s+/
    if q < w.len() && matches!(w[q], 0x2d | 0x2022 | 0x2a) && space_at(q + 1) {
        return true;
    }
    // /^[\s]*(const|let|...|while)\s+/i
    const KW: [&str; 10] = [
        "const", "let", "var", "function", "def", "class", "if", "else", "for", "while",
    ];
    if KW
        .iter()
        .any(|k| ascii_ci_prefix(w, q, k) && space_at(q + k.len()))
    {
        return true;
    }
    // /^(Let me|I'll|I can|Here's|To |Please|Thanks|Note|import|from)\s+/i
    // ("To " keeps its space, so "To" needs two whitespace characters.)
    const OPENERS: [&str; 10] = [
        "Let me", "I'll", "I can", "Here's", "To ", "Please", "Thanks", "Note", "import", "from",
    ];
    if OPENERS
        .iter()
        .any(|k| ascii_ci_prefix(w, 0, k) && space_at(k.len()))
    {
        return true;
    }
    // /^[\s]*\/\//  and  /^[\s]*#/
    if ascii_ci_prefix(w, q, "//") || (q < w.len() && w[q] == b'#' as u16) {
        return true;
    }
    // /^[\s]*"(id|name|...|code)"\s*:/i
    const KEYS: [&str; 12] = [
        "id", "name", "email", "status", "type", "value", "key", "data", "message", "error",
        "result", "code",
    ];
    if q < w.len() && w[q] == b'"' as u16 {
        for k in KEYS {
            let end = q + 1 + k.len();
            if ascii_ci_prefix(w, q + 1, k) && end < w.len() && w[end] == b'"' as u16 {
                let c = skip_space(w, end + 1);
                if c < w.len() && w[c] == b':' as u16 {
                    return true;
                }
            }
        }
    }
    // /^\s*\|\s+/
    if q < w.len() && w[q] == PIPE && space_at(q + 1) {
        return true;
    }
    // /\|\s*---\s*\|/, /\|\s*\d+[\d,.]*/, /\|\s*[一-龥]+\s*\|/ anywhere
    for (i, u) in w.iter().enumerate() {
        if *u != PIPE {
            continue;
        }
        let a = skip_space(w, i + 1);
        if a < w.len() && w[a].is_ascii_digit_u16() {
            return true;
        }
        if a + 3 <= w.len() && w[a..a + 3].iter().all(|u| *u == b'-' as u16) {
            let b = skip_space(w, a + 3);
            if b < w.len() && w[b] == PIPE {
                return true;
            }
        }
        let mut b = a;
        while b < w.len() && (0x4e00..=0x9fa5).contains(&w[b]) {
            b += 1;
        }
        if b > a {
            let e = skip_space(w, b);
            if e < w.len() && w[e] == PIPE {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::js::utf16;

    fn f(s: &str) -> ChunkFlags {
        ChunkFlags::of(&utf16(s))
    }

    /// The one-pass `ChunkFlags::of` answers as each pattern alone.
    #[test]
    fn one_pass_flags_equal_each_pattern() {
        let alphabet: Vec<u16> = "\n |-+*#>```1.aZ\t\u{2500}\r=".encode_utf16().collect();
        let mut r = crate::input::synth::Rng::new(3);
        let mut seen = [0usize; 6];
        let mut ascii = 0;
        for _ in 0..20_000 {
            let c: Vec<u16> = (0..r.range(0, 12))
                .map(|_| alphabet[r.range(0, alphabet.len() - 1)])
                .collect();
            let want = ChunkFlags {
                fences: count_fences(&c),
                table: has_table(&c),
                list: has_list_item(&c),
                heading: has_heading(&c),
                blockquote: has_blockquote(&c),
                divider: is_divider(&c),
            };
            assert_eq!(
                ChunkFlags::of(&c),
                want,
                "{:?}",
                String::from_utf16_lossy(&c)
            );
            if c.iter().all(|u| *u < 128) {
                let bytes: Vec<u8> = c.iter().map(|u| *u as u8).collect();
                assert_eq!(ChunkFlags::of_ascii(&c, &bytes), want);
                ascii += 1;
            }
            for (n, on) in seen.iter_mut().zip([
                want.fences > 0,
                want.table,
                want.list,
                want.heading,
                want.blockquote,
                want.divider,
            ]) {
                *n += usize::from(on);
            }
        }
        assert!(
            seen.iter().all(|n| *n > 50) && ascii > 5_000,
            "{seen:?} {ascii}"
        );
    }

    #[test]
    fn fences_count_non_overlapping() {
        assert_eq!(count_fences(&utf16("````")), 1);
        assert_eq!(count_fences(&utf16("``````")), 2);
        assert_eq!(count_fences(&utf16("a```b```")), 2);
    }

    #[test]
    fn list_class_is_a_range_without_minus() {
        assert!(f("* item").list);
        assert!(f("+ item").list);
        assert!(!f("- Dash item").list);
        assert!(f("\n  42. x").list);
        assert!(!f("42.x").list);
    }

    #[test]
    fn table_patterns() {
        assert!(f("| Column 1 | Column 2 |").table);
        assert!(f("---").table);
        assert!(f("+---+---+").table);
        assert!(f("x\n  \n ||| ").table);
        assert!(!f("a | b").table);
        assert!(!f("| a\n b |").table, "pipes on different lines");
        assert!(
            f("- Dash item\n---\n").table,
            "--- resets through the table flag"
        );
    }

    #[test]
    fn heading_and_blockquote_need_no_leading_space() {
        assert!(f("## H").heading);
        assert!(!f(" ## H").heading);
        assert!(!f("##H").heading);
        assert!(f("x\n> q").blockquote);
        assert!(!f(" > q").blockquote);
    }

    #[test]
    fn divider_class_is_the_plus_to_underscore_range() {
        assert!(f("HELLO").divider);
        assert!(f("1.2.3").divider);
        assert!(f("ERROR:").divider);
        assert!(f("╭─╭─").divider);
        assert!(!f("hello").divider);
        assert!(!f("---\n").divider);
        assert!(!f("a b").divider);
        assert!(!f("").divider);
    }

    #[test]
    fn deepv_filters() {
        assert!(!deepv_significant(&utf16("   short    ")));
        assert!(!deepv_significant(&utf16("----------------==========")));
        assert!(!deepv_significant(&utf16("────────────────────────")));
        assert!(deepv_significant(&utf16("this is a real sentence here")));
        assert!(deepv_table(&utf16("| a | b")));
        assert!(deepv_common(&utf16("  - item one")));
        assert!(deepv_common(&utf16("Let me check the file")));
        assert!(
            !deepv_common(&utf16("To do this")),
            "'To ' needs a second space"
        );
        assert!(deepv_common(&utf16("To  do this")));
        assert!(deepv_common(&utf16("  \"Name\" : 1")));
        assert!(deepv_common(&utf16("x | 12")));
        assert!(deepv_common(&utf16("x | 中文 | y")));
        assert!(!deepv_common(&utf16("plain text that repeats")));
    }
}
