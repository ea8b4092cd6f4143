//! The canonical reader: JSONL records exactly as `docs/transcript-format.md`
//! says, large files parsed in parallel pieces, field errors that name the
//! field, and the optional `src` provenance of converted records.

use crate::error::{Error, Result};
use crate::event::{Event, Origin, Place, Record};
use crate::input::format::{FileSessions, SkippedLine};
use crate::input::json::{self, parse_json, FieldError, RecordError};
use rayon::prelude::*;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::sync::Arc;

const POSITIVE: &str = "a positive integer";

/// Record types of version 1 of the format.
pub const KNOWN_TYPES: &[&str] = &[
    "session",
    "user",
    "turn",
    "content",
    "thought",
    "tool_call",
    "tool_result",
    "usage",
    "judge",
    "loop_detected",
    "label",
];

/// Fast path: the fields of every record type, borrowed where possible.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Fast<'a> {
    #[serde(rename = "type", borrow)]
    ty: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    session: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    args: Option<Box<Map<String, Value>>>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    output: Option<String>,
    #[serde(default)]
    error: Option<bool>,
    #[serde(default)]
    prompt_id: Option<String>,
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    src: Option<Box<FastSrc>>,
}

/// Parse canonical JSONL.
pub fn parse_canonical(
    display: &str,
    stem: &str,
    bytes: &[u8],
    lenient: bool,
) -> Result<FileSessions> {
    parse_canonical_pieces(display, stem, bytes, lenient, usize::MAX)
}

/// The message of a record found after the line its session was handed
/// out at: the first pass and the parse disagree, which their tests rule out.
pub(crate) const HANDED_OUT: &str =
    "internal error: a session continues after the line the first pass said was its last";

/// A whole canonical file parsed on this thread, each session given to
/// `give` as soon as its last record is parsed (sessions are mostly
/// contiguous, so a session is read by the detectors while it is still in
/// the cache, and memory holds one session, not the file's). The errors,
/// skipped lines and counts are [`parse_canonical`]'s; the batch's sessions
/// are the ids in order of first appearance, their records all given.
pub(crate) fn parse_giving(
    display: &str,
    stem: &str,
    bytes: &[u8],
    lenient: bool,
    give: &mut dyn FnMut(String, Vec<Event>),
) -> Result<Batch> {
    // Checked as UTF-8 once, for both passes.
    let text = std::str::from_utf8(bytes).ok();
    let spans: Spans = session_spans(bytes, text, 1, stem, usize::MAX)
        .into_iter()
        .map(|(id, first, last)| (id, (first, last)))
        .collect();
    let mut hand = Handout {
        spans: &spans,
        first_line: 1,
        give,
    };
    let p = parse_piece(bytes, text, true, stem, lenient, Some(&mut hand));
    if let Some((line, message)) = p.error {
        return Err(Error::Line {
            path: display.to_string(),
            line: line + 1,
            message,
        });
    }
    let mut ids = Vec::with_capacity(p.sessions.len());
    // A session whose last line (to the first pass) was a line skipped as
    // not a record ends here.
    for (id, events) in p.sessions {
        if !events.is_empty() {
            (hand.give)(id.clone(), events);
        }
        ids.push((id, Vec::new()));
    }
    Ok(Batch {
        sessions: ids,
        skipped: p
            .skipped
            .into_iter()
            .map(|s| SkippedLine {
                line: s.line + 1,
                ..s
            })
            .collect(),
        unknown: p.unknown,
        lines: p.lines,
    })
}

/// Smallest piece of one file parsed on its own thread.
pub(crate) const MIN_PIECE: usize = 4 << 20;

/// [`parse_canonical`], a large file split at line boundaries into pieces of
/// at least `min_piece` bytes parsed in parallel (in the current rayon pool)
/// and merged in file order: the same sessions, records, line numbers and
/// first error as one pass. A canonical file written by `looptune import` is
/// one big file, so folder-level parallelism alone would leave it to one core.
pub(crate) fn parse_canonical_pieces(
    display: &str,
    stem: &str,
    bytes: &[u8],
    lenient: bool,
    min_piece: usize,
) -> Result<FileSessions> {
    Ok(parse_batch(display, stem, bytes, 1, lenient, min_piece, None)?.into_file())
}

/// Whole lines of a canonical file, parsed: sessions in order of first
/// appearance, lines numbered in the file.
#[derive(Default)]
pub(crate) struct Batch {
    pub sessions: Vec<(String, Vec<Event>)>,
    /// Lines skipped (`--lenient`), numbered in the file.
    pub skipped: Vec<SkippedLine>,
    pub unknown: u64,
    /// Lines the batch holds (a last empty one after a final newline counts).
    pub lines: u64,
}

impl Batch {
    /// A whole file's batch as the file's sessions.
    pub(crate) fn into_file(self) -> FileSessions {
        FileSessions {
            format: "canonical".into(),
            sessions: self.sessions,
            skipped: self.skipped,
            unknown: self.unknown,
            ..Default::default()
        }
    }
}

/// Parse `bytes`, whole lines of a canonical file starting at its line
/// `first_line` and not ending with the newline that ends its last line, in
/// parallel pieces of at least `min_piece` bytes. A file is the batches
/// joined by newlines: parsing them one after the other gives what parsing
/// the file at once gives, which is how a large file is read in bounded
/// memory (`input::large`).
/// With `give`, a session that lies within one piece is given to it as
/// soon as its last record is parsed, on the piece's thread, and left in the
/// batch with no records.
pub(crate) fn parse_batch(
    display: &str,
    stem: &str,
    bytes: &[u8],
    first_line: u64,
    lenient: bool,
    min_piece: usize,
    give: Option<(&Spans, Give<'_>)>,
) -> Result<Batch> {
    let ranges = piece_ranges(bytes, min_piece);
    let first = first_line == 1;
    // The file line each piece starts at.
    let mut starts = Vec::with_capacity(ranges.len());
    let mut at = first_line;
    for &(a, b) in &ranges {
        starts.push(at);
        if give.is_some() && ranges.len() > 1 {
            at += line_count(&bytes[a..b]);
        }
    }
    let parse = |(&(a, b), &start): (&(usize, usize), &u64)| {
        let piece = &bytes[a..b];
        let text = std::str::from_utf8(piece).ok();
        match give {
            Some((spans, give)) => {
                // Lines numbered in the file, as the merge below does.
                let offset = u32::try_from(start - 1).unwrap_or(u32::MAX);
                let mut each = |id: String, mut events: Vec<Event>| {
                    if offset > 0 {
                        events
                            .iter_mut()
                            .for_each(|e| e.origin.line = e.origin.line.saturating_add(offset));
                    }
                    give(id, events)
                };
                let mut hand = Handout {
                    spans,
                    first_line: start,
                    give: &mut each,
                };
                parse_piece(piece, text, first && a == 0, stem, lenient, Some(&mut hand))
            }
            None => parse_piece(piece, text, first && a == 0, stem, lenient, None),
        }
    };
    let pieces: Vec<Piece> = if ranges.len() == 1 {
        ranges.iter().zip(&starts).map(parse).collect()
    } else {
        ranges.par_iter().zip(&starts).map(parse).collect()
    };
    let mut out = Batch::default();
    let mut index: rustc_hash::FxHashMap<String, usize> = Default::default();
    let mut at = first_line;
    for p in pieces {
        if let Some((line, message)) = p.error {
            return Err(Error::Line {
                path: display.to_string(),
                line: at + line,
                message,
            });
        }
        out.skipped
            .extend(p.skipped.into_iter().map(|s| SkippedLine {
                line: at + s.line,
                ..s
            }));
        out.unknown += p.unknown;
        let offset = u32::try_from(at - 1).unwrap_or(u32::MAX);
        for (sid, mut records) in p.sessions {
            if offset > 0 {
                records
                    .iter_mut()
                    .for_each(|e| e.origin.line = e.origin.line.saturating_add(offset));
            }
            match index.get(&sid) {
                Some(&slot) => out.sessions[slot].1.append(&mut records),
                None => {
                    index.insert(sid.clone(), out.sessions.len());
                    out.sessions.push((sid, records));
                }
            }
        }
        at += p.lines;
        out.lines += p.lines;
    }
    Ok(out)
}

/// Pieces of `bytes` of at least `min_piece` bytes (about four per thread),
/// each ending just before a newline, the next starting after it.
fn piece_ranges(bytes: &[u8], min_piece: usize) -> Vec<(usize, usize)> {
    let target = (bytes.len() / (4 * rayon::current_num_threads()).max(1)).max(min_piece);
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    while bytes.len() - start > target {
        match bytes[start + target..].iter().position(|b| *b == b'\n') {
            Some(i) => {
                ranges.push((start, start + target + i));
                start += target + i + 1;
            }
            None => break,
        }
    }
    ranges.push((start, bytes.len()));
    ranges
}

/// The session each line of `bytes` (as [`parse_batch`] takes it) gives its
/// record, as `(session id, its first line, its last line)` in the batch, in
/// order of first appearance; lines that are not records are left out. The
/// first pass over a file: it tells when each session is complete, so the
/// second pass can hand sessions out as it goes. (A line that is not a
/// record may still be counted: that only makes a session look longer.)
/// `text`: `bytes` as text when the caller has checked them as UTF-8 (else
/// each piece is checked here), so a line's id needs no check of its own.
pub(crate) fn session_spans(
    bytes: &[u8],
    text: Option<&str>,
    first_line: u64,
    stem: &str,
    min_piece: usize,
) -> Vec<Span> {
    let ranges = piece_ranges(bytes, min_piece);
    let first = first_line == 1;
    // Per piece: ids in order of first appearance with their first and last
    // lines (0-based in the piece), and the piece's lines.
    let scan = |&(a, b): &(usize, usize)| -> (Vec<Span>, u64) {
        let mut index: rustc_hash::FxHashMap<String, usize> = Default::default();
        let mut ids: Vec<Span> = Vec::new();
        // Consecutive lines mostly share a session: compare before hashing.
        let mut last_slot = usize::MAX;
        let piece = &bytes[a..b];
        // Line ends are character boundaries.
        let piece_text = match text {
            Some(t) => Some(&t[a..b]),
            None => std::str::from_utf8(piece).ok(),
        };
        let mut last_line = None;
        for (n, x, y) in line_ranges(piece, first && a == 0) {
            last_line = Some((n, y));
            let Some(sid) = line_session(&piece[x..y], piece_text.map(|t| &t[x..y])) else {
                continue;
            };
            let sid = sid.as_deref().unwrap_or(stem);
            let slot = match ids.get(last_slot) {
                Some(s) if s.0 == sid => last_slot,
                _ => match index.get(sid) {
                    Some(&slot) => slot,
                    None => {
                        index.insert(sid.to_string(), ids.len());
                        ids.push((sid.to_string(), n, n));
                        ids.len() - 1
                    }
                },
            };
            ids[slot].2 = n;
            last_slot = slot;
        }
        (ids, lines_from(piece, last_line))
    };
    let pieces: Vec<(Vec<Span>, u64)> = if ranges.len() == 1 {
        ranges.iter().map(scan).collect()
    } else {
        ranges.par_iter().map(scan).collect()
    };
    let mut index: rustc_hash::FxHashMap<String, usize> = Default::default();
    let mut out: Vec<Span> = Vec::new();
    let mut at = first_line;
    for (ids, lines) in pieces {
        for (sid, n0, n1) in ids {
            match index.get(&sid) {
                Some(&slot) => out[slot].2 = at + n1,
                None => {
                    index.insert(sid.clone(), out.len());
                    out.push((sid, at + n0, at + n1));
                }
            }
        }
        at += lines;
    }
    out
}

/// Lines of a piece as `split(b'\n')` gives them (a last, possibly empty,
/// line after the last newline), found with memchr: `(0-based line, start,
/// end)` of each non-blank one, without the file's byte order mark (first
/// line only) or a final CR.
fn line_ranges(bytes: &[u8], first: bool) -> impl Iterator<Item = (u64, usize, usize)> + '_ {
    let ends = memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len()));
    let mut from = 0;
    ends.enumerate().filter_map(move |(n, end)| {
        let (mut a, mut b) = (from, end);
        from = end + 1;
        if first && n == 0 && bytes[a..b].starts_with(&[0xef, 0xbb, 0xbf]) {
            a += 3;
        }
        if bytes[a..b].ends_with(b"\r") {
            b -= 1;
        }
        (!bytes[a..b].iter().all(|c| c.is_ascii_whitespace())).then_some((n as u64, a, b))
    })
}

/// Lines in a piece, the last one after its last newline included.
fn line_count(bytes: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', bytes).count() as u64 + 1
}

/// [`line_count`] of a piece whose lines were walked up to line `n` (0-based,
/// its text ending at `end`): only the newlines after it are counted, since
/// a second pass over the whole piece was 3-4% of a replay of short records.
fn lines_from(bytes: &[u8], last: Option<(u64, usize)>) -> u64 {
    match last {
        Some((n, end)) => n + 1 + memchr::memchr_iter(b'\n', &bytes[end..]).count() as u64,
        None => line_count(bytes),
    }
}

/// The session id a line's record gives (`Some(None)`: none, the stem's), or
/// `None` when the line is not a record. What [`parse_line`] says whenever
/// the line is a record: the quick scan is trusted only on lines it reads
/// whole (plain keys, `session` once and unescaped), anything else takes the
/// full parse. On a line that is not a record the scan may name a session:
/// that only makes the first pass of a large file think the session ends
/// later than it does. `text`: the line as text, when it is known to be
/// UTF-8 (the id is then sliced from it, not checked again: a check per id
/// was a sixth of the first pass).
fn line_session<'a>(raw: &'a [u8], text: Option<&'a str>) -> Option<Option<Cow<'a, str>>> {
    if let Some((a, b)) = tail_session(raw) {
        // The quotes around the id are character boundaries.
        let id = match text {
            Some(t) => Some(&t[a..b]),
            None => std::str::from_utf8(&raw[a..b]).ok(),
        };
        if let Some(session) = id {
            return Some(Some(Cow::Borrowed(session)));
        }
    }
    if let Some(session) = quick_session(raw) {
        return Some(session.map(Cow::Borrowed));
    }
    parse_line_borrowed(raw).ok().map(|(session, _, _)| session)
}

/// The session of a line that ends with it, `,"session":"id"}` as writers
/// lay records out, read from the end without scanning the rest. On a line
/// that is a record this is its session: the final brace closes the
/// top-level object, the quotes around `session` and the id are unescaped
/// (no backslash in either, a comma or brace before), so the member is the
/// object's last, and a repeated key's last value is the one that counts.
/// The id's start and end in `b`, its bytes not checked as UTF-8.
fn tail_session(b: &[u8]) -> Option<(usize, usize)> {
    let last = b
        .iter()
        .rposition(|c| !matches!(c, b' ' | b'\t' | b'\r' | b'\n'))?;
    if b[last] != b'}' {
        return None;
    }
    let rest = b[..last].strip_suffix(b"\"")?;
    let open = memchr::memrchr(b'"', rest)?;
    let (before, id) = (&rest[..open], &rest[open + 1..]);
    if id.contains(&b'\\')
        || !(before.ends_with(b",\"session\":") || before.ends_with(b"{\"session\":"))
    {
        return None;
    }
    Some((open + 1, rest.len()))
}

/// The top-level `session` of a JSON object line (`Some(None)` when it has
/// none or it is null), skipping every other value without reading it;
/// `None` when the line is not laid out so that this is certain.
fn quick_session(b: &[u8]) -> Option<Option<&str>> {
    let ws = |mut i: usize| {
        while matches!(b.get(i), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            i += 1;
        }
        i
    };
    let mut i = ws(0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut found: Option<Option<&str>> = None;
    loop {
        i = ws(i);
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let (end, escaped) = string_end(b, i)?;
        // An escaped key could spell `session`.
        if escaped {
            return None;
        }
        let key = &b[i + 1..end];
        i = ws(end + 1);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = ws(i + 1);
        if key == b"session" {
            // Twice: the full parse decides which one counts.
            if found.is_some() {
                return None;
            }
            match b.get(i)? {
                b'"' => {
                    let (e, escaped) = string_end(b, i)?;
                    if escaped {
                        return None;
                    }
                    found = Some(Some(std::str::from_utf8(&b[i + 1..e]).ok()?));
                    i = e + 1;
                }
                b'n' if b[i..].starts_with(b"null") => {
                    found = Some(None);
                    i += 4;
                }
                _ => return None,
            }
        } else {
            i = skip_value(b, i)?;
        }
        i = ws(i);
        match b.get(i)? {
            b',' => i += 1,
            b'}' if ws(i + 1) == b.len() => return Some(found.flatten()),
            _ => return None,
        }
    }
}

/// The `type` of a record line read by its top-level keys alone, in any
/// order and with any spacing (`": "` as Python's `json.dumps` writes): for
/// recognising a file whose first line is cut (a prefix of a large file) or
/// broken after its `type`. `None` when the line is not an object, or ends
/// before a `type` whose value is a plain string.
pub(crate) fn line_type(b: &[u8]) -> Option<&str> {
    let ws = |mut i: usize| {
        while matches!(b.get(i), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            i += 1;
        }
        i
    };
    let mut i = ws(0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = ws(i);
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let (end, escaped) = string_end(b, i)?;
        let key = &b[i + 1..end];
        i = ws(end + 1);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = ws(i + 1);
        if key == b"type" && !escaped {
            if b.get(i) != Some(&b'"') {
                return None;
            }
            let (e, escaped) = string_end(b, i)?;
            return if escaped {
                None
            } else {
                std::str::from_utf8(&b[i + 1..e]).ok()
            };
        }
        i = ws(skip_value(b, i)?);
        if b.get(i) != Some(&b',') {
            return None;
        }
        i += 1;
    }
}

/// The index of the quote closing the string that opens at `i`, and
/// whether the string holds an escape.
fn string_end(b: &[u8], i: usize) -> Option<(usize, bool)> {
    let mut j = i + 1;
    let mut escaped = false;
    loop {
        j += memchr::memchr2(b'"', b'\\', b.get(j..)?)?;
        if b[j] == b'"' {
            return Some((j, escaped));
        }
        escaped = true;
        j += 2;
    }
}

/// The index after the JSON value that starts at `i` (strings and nesting
/// followed, scalars up to the next delimiter; not validated).
fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => Some(string_end(b, i)?.0 + 1),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match *b.get(j)? {
                    b'"' => j = string_end(b, j)?.0,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => Some(
            i + b[i..]
                .iter()
                .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'))?,
        ),
    }
}

/// Whether a line opens a JSON object: serde's derived structs also read
/// arrays (`["content",null,"hi"]`), which are not records.
fn starts_object(raw: &[u8]) -> bool {
    raw.iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        == Some(&b'{')
}

/// One piece of a canonical file, parsed: sessions in order of first
/// appearance; line numbers from 1 at the piece's first line (errors and
/// skipped lines 0-based, to add to the piece's first line).
#[derive(Default)]
struct Piece {
    sessions: Vec<(String, Vec<Event>)>,
    skipped: Vec<SkippedLine>,
    unknown: u64,
    /// The first bad line when not lenient (parsing stopped there).
    error: Option<(u64, String)>,
    lines: u64,
}

/// Where each session's records lie in a file: its first and last line, as
/// [`session_spans`] found them.
pub(crate) type Spans = rustc_hash::FxHashMap<String, (u64, u64)>;

/// What a session is given to as soon as it is parsed, from any thread.
pub(crate) type Give<'a> = &'a (dyn Fn(String, Vec<Event>) + Sync);

/// A session's id with its first and last line.
type Span = (String, u64, u64);

/// Sessions handed out by [`parse_piece`] as soon as their last record is
/// parsed, so the detectors read them while they are still in the cache.
/// Only sessions that start in the piece are: one that started before needs
/// the records read before it.
pub(crate) struct Handout<'a> {
    pub spans: &'a Spans,
    /// The file line of the piece's first line.
    pub first_line: u64,
    pub give: &'a mut dyn FnMut(String, Vec<Event>),
}

/// `text`: `bytes` as text when they are UTF-8 (the caller's check, which
/// the first pass shares), else `None`.
fn parse_piece(
    bytes: &[u8],
    text: Option<&str>,
    first: bool,
    stem: &str,
    lenient: bool,
    mut hand: Option<&mut Handout<'_>>,
) -> Piece {
    let mut p = Piece::default();
    // With a handout: each slot's last line.
    let mut ends: Vec<u64> = Vec::new();
    let mut index: rustc_hash::FxHashMap<String, usize> = Default::default();
    let mut last_place: Option<Arc<Place>> = None;
    // The piece checked as UTF-8 at once, lines then sliced from it: a
    // check per line costs about four times as much (short lines, each
    // starting unaligned). When the piece is not UTF-8, each line is checked
    // on its own so the bad one gets its own error.
    let whole = text;
    // The session of the previous line: consecutive lines mostly share it,
    // and a comparison costs less than a hash lookup.
    let mut last_slot = usize::MAX;
    let mut pushed = 0usize;
    let mut last_line = None;
    for (n, a, b) in line_ranges(bytes, first) {
        last_line = Some((n, b));
        let line_no = n + 1;
        let raw = &bytes[a..b];
        let parsed = match whole {
            // Line ends, a BOM and a CR are on character boundaries.
            Some(text) => parse_line_str(&text[a..b]),
            None => parse_line_borrowed(raw),
        };
        match parsed {
            Ok((session, record, place)) => {
                if matches!(record, Record::Unknown { .. }) {
                    p.unknown += 1;
                }
                let sid = session.as_deref().unwrap_or(stem);
                let slot = if p.sessions.get(last_slot).is_some_and(|s| s.0 == sid) {
                    last_slot
                } else {
                    match index.get(sid) {
                        Some(&slot) => slot,
                        None => {
                            index.insert(sid.to_string(), p.sessions.len());
                            // Room for as many records as the piece's
                            // sessions have had on average (and a little
                            // more), so a session's vector rarely grows: the
                            // growth's copies and fresh pages were a tenth of
                            // a parse. Never more than the rest of the piece
                            // can hold (a record takes 16 bytes at least).
                            let mean = pushed.checked_div(p.sessions.len()).unwrap_or(64);
                            let room = (mean + mean / 8 + 8).min((bytes.len() - a) / 16 + 1);
                            p.sessions.push((sid.to_string(), Vec::with_capacity(room)));
                            if let Some(h) = &hand {
                                // The session's last line, counted in the piece.
                                ends.push(match h.spans.get(sid) {
                                    Some(&(first, last)) if first >= h.first_line => {
                                        last + 1 - h.first_line
                                    }
                                    _ => u64::MAX,
                                });
                            }
                            p.sessions.len() - 1
                        }
                    }
                };
                last_slot = slot;
                pushed += 1;
                // Records of one native message share their place.
                let place = place.map(|pl| match &last_place {
                    Some(prev) if **prev == pl => prev.clone(),
                    _ => Arc::new(pl),
                });
                last_place.clone_from(&place);
                p.sessions[slot].1.push(Event::new(
                    record,
                    Origin {
                        file: 0,
                        line: line_no as u32,
                        place,
                    },
                ));
                if let Some(h) = &mut hand {
                    if ends[slot] == line_no {
                        // Its slot stays, empty, so the id keeps its place.
                        let (id, events) = &mut p.sessions[slot];
                        (h.give)(id.clone(), std::mem::take(events));
                    } else if ends[slot] < line_no {
                        p.error = Some((line_no - 1, HANDED_OUT.into()));
                        break;
                    }
                }
            }
            Err(e) if lenient => p.skipped.push(SkippedLine::record(line_no - 1, e)),
            Err(e) => {
                let message = e.to_string();
                p.error = Some((line_no - 1, message));
                break;
            }
        }
    }
    p.lines = lines_from(bytes, last_line);
    p
}

/// Parse one canonical line into its session id and record; errors name the field.
pub fn parse_line(line: &str) -> Result<(Option<String>, Record), RecordError> {
    parse_line_borrowed(line.as_bytes())
        .map(|(session, rec, _)| (session.map(Cow::into_owned), rec))
}

/// One line of a canonical file read on its own, as a live feed gives it:
/// its session id (if the record names one) and its event, as the whole-file
/// reader gives it at file line `line` (`first`: the file's first line,
/// whose byte order mark is dropped). `None` for a blank line, which the
/// reader skips. The id is borrowed from the text when it can be (a fed
/// record is checked against its session's id, not kept).
pub fn parse_record(
    text: &str,
    line: u32,
    first: bool,
) -> std::result::Result<Option<FedRecord<'_>>, RecordError> {
    let text = match first {
        true => text.strip_prefix('\u{feff}').unwrap_or(text),
        false => text,
    };
    let text = text.strip_suffix('\r').unwrap_or(text);
    if text.bytes().all(|c| c.is_ascii_whitespace()) {
        return Ok(None);
    }
    let (session, record, place) = parse_line_str(text)?;
    let origin = Origin {
        file: 0,
        line,
        place: place.map(Arc::new),
    };
    Ok(Some((session, Event::new(record, origin))))
}

/// A record read alone: its session id (borrowed when it can be) and event.
pub type FedRecord<'a> = (Option<Cow<'a, str>>, Event);

/// A line's session id (borrowed when it can be), record and `src` provenance.
type Parsed<'a> = (Option<Cow<'a, str>>, Record, Option<Place>);

/// The `src` field of a canonical record (written by `looptune import -o`).
#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct FastSrc {
    file: String,
    #[serde(default)]
    line: Option<u32>,
    #[serde(default)]
    pointer: Option<String>,
}

impl FastSrc {
    fn place(self) -> Option<Place> {
        // What the slow path rejects goes there, so the error names the field.
        let bad_pointer = self
            .pointer
            .as_deref()
            .is_some_and(|p| !p.is_empty() && !p.starts_with('/'));
        if self.line == Some(0) || bad_pointer {
            return None;
        }
        Some(Place {
            file: Some(self.file),
            line: self.line,
            pointer: self.pointer,
        })
    }
}

/// [`Fast`] of a line as writers lay it out: one flat object, no
/// whitespace, keys the fast path knows, each once, values strings without
/// escapes, non-negative integers, booleans or null. `None` for anything
/// else, which serde_json then reads. Most records are such lines, and this
/// reads one for a fraction of what serde_json's general path costs (per
/// field: key lookup, visitor calls, whitespace checks). Whatever it accepts,
/// serde_json reads into the same `Fast` (a property test holds it to that).
///
/// Keys are recognised by their bytes with the colon (`"type":`) rather than
/// scanned as strings and compared: a third of a parse of short records
/// was that scan and comparison. Each key reads only the values it accepts;
/// any other value, like any other key, is `None` (a test holds this to the
/// plain reading of every key and value, `flat_plain`).
fn flat(line: &str) -> Option<Fast<'_>> {
    /// The keys `flat` reads; the discriminant is the key's bit in `seen`.
    #[derive(Clone, Copy)]
    enum Key {
        Type,
        Session,
        Text,
        Name,
        Id,
        Output,
        PromptId,
        Error,
        InputTokens,
        OutputTokens,
        Args,
        Src,
    }
    /// The key whose opening quote is at `b[0]`, and the length of it with
    /// its quotes and colon: exactly the keys an unescaped string spells.
    fn key(b: &[u8]) -> Option<(Key, usize)> {
        // Literal patterns, so each comparison is a few inlined loads
        // rather than a call to memcmp.
        macro_rules! one_of {
            ($($k:ident $pat:literal),+) => {{
                $(if b.starts_with($pat) {
                    return Some((Key::$k, $pat.len()));
                })+
            }};
        }
        match *b.get(1)? {
            b't' => one_of!(Type b"\"type\":", Text b"\"text\":"),
            b's' => one_of!(Session b"\"session\":", Src b"\"src\":"),
            b'n' => one_of!(Name b"\"name\":"),
            b'i' => one_of!(Id b"\"id\":", InputTokens b"\"input_tokens\":"),
            b'o' => one_of!(Output b"\"output\":", OutputTokens b"\"output_tokens\":"),
            b'p' => one_of!(PromptId b"\"prompt_id\":"),
            b'e' => one_of!(Error b"\"error\":"),
            b'a' => one_of!(Args b"\"args\":"),
            _ => {}
        }
        None
    }
    /// The string starting after the quote at `i`: its text and the index
    /// after its closing quote; `None` at an escape or a control character.
    fn string(line: &str, i: usize) -> Option<(&str, usize)> {
        let rest = line.as_bytes().get(i + 1..)?;
        let n = special(rest);
        if rest.get(n) != Some(&b'"') {
            return None;
        }
        Some((&line[i + 1..i + 1 + n], i + 2 + n))
    }
    /// A string (escapes decoded) or null at `i`, and the index after it.
    fn str_or_null(line: &str, i: usize) -> Option<(Option<Cow<'_, str>>, usize)> {
        match *line.as_bytes().get(i)? {
            b'"' => Some(match string(line, i) {
                Some((v, at)) => (Some(Cow::Borrowed(v)), at),
                None => {
                    let (v, at) = unescape(line, i)?;
                    (Some(Cow::Owned(v)), at)
                }
            }),
            _ => null(line.as_bytes(), i),
        }
    }
    /// Null at `i`: no value, and the index after it.
    fn null<T>(b: &[u8], i: usize) -> Option<(Option<T>, usize)> {
        b[i..].starts_with(b"null").then_some((None, i + 4))
    }
    let b = line.as_bytes();
    let (mut ty, mut session, mut text, mut name, mut id) = (None, None, None, None, None);
    let (mut output, mut error, mut prompt_id) = (None, None, None);
    let (mut input_tokens, mut output_tokens, mut args, mut src) = (None, None, None, None);
    let mut seen = 0u16;
    if b.first() != Some(&b'{') || b.last() != Some(&b'}') {
        return None;
    }
    let mut i = 1;
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let (k, len) = key(&b[i..])?;
        i += len;
        // A key given twice is an error to serde's derive (and the slow
        // path's business).
        let bit = 1u16 << k as u16;
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        let c = *b.get(i)?;
        match k {
            // serde_json borrows these only without escapes.
            Key::Type if c == b'"' => {
                let (v, at) = string(line, i)?;
                ty = Some(v);
                i = at;
            }
            Key::Type => return None,
            Key::Session if c == b'"' => {
                let (v, at) = string(line, i)?;
                session = Some(v);
                i = at;
            }
            Key::Session => (session, i) = null(b, i)?,
            Key::Text => (text, i) = str_or_null(line, i)?,
            Key::Name => (name, i) = str_or_null(line, i)?,
            Key::Id => (id, i) = str_or_null(line, i)?,
            Key::Output => (output, i) = str_or_null(line, i)?,
            Key::PromptId => (prompt_id, i) = str_or_null(line, i)?,
            Key::Error => {
                (error, i) = if b[i..].starts_with(b"true") {
                    (Some(true), i + 4)
                } else if b[i..].starts_with(b"false") {
                    (Some(false), i + 5)
                } else {
                    null(b, i)?
                };
            }
            Key::InputTokens | Key::OutputTokens => {
                let (n, at) = match c {
                    b'0'..=b'9' => plain_u64(b, i).map(|(n, at)| (Some(n), at))?,
                    _ => null(b, i)?,
                };
                i = at;
                match k {
                    Key::InputTokens => input_tokens = n,
                    _ => output_tokens = n,
                }
            }
            // Most arguments are one flat object, read here; serde_json
            // reads the others as it would in the whole line. Fewer than 100
            // brackets after it keep it far from serde_json's nesting limit,
            // which counts the line's own object too.
            Key::Args if c == b'{' => {
                if let Some((m, at)) = flat_object(line, i) {
                    args = Some(m);
                    i = at;
                } else {
                    let (m, len) = nested(line, i)?;
                    args = Some(m);
                    i += len;
                }
            }
            Key::Args => (args, i) = null(b, i)?,
            Key::Src if c == b'{' => {
                let (m, len) = nested(line, i)?;
                src = Some(m);
                i += len;
            }
            Key::Src => (src, i) = null(b, i)?,
        }
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b'}') if i + 1 == b.len() => break,
            _ => return None,
        }
    }
    Some(Fast {
        ty: Cow::Borrowed(ty?),
        session: session.map(Cow::Borrowed),
        text: text.map(Cow::into_owned),
        name: name.map(Cow::into_owned),
        args,
        id: id.map(Cow::into_owned),
        output: output.map(Cow::into_owned),
        error,
        prompt_id: prompt_id.map(Cow::into_owned),
        input_tokens,
        output_tokens,
        src,
    })
}

/// The object at `i` (an `args` or `src` value) read by serde_json as it
/// reads it in the whole line, and its length; `None` near serde_json's
/// nesting limit (100 brackets or more after it), left to the whole line.
fn nested<'a, T: Deserialize<'a>>(line: &'a str, i: usize) -> Option<(T, usize)> {
    let b = line.as_bytes();
    if b[i..].iter().filter(|&&c| c == b'{' || c == b'[').count() >= 100 {
        return None;
    }
    object(&line[i..])
}

/// The object starting at `i` when it is flat as writers lay arguments out
/// (no whitespace; values strings, non-negative integers that fit a u64,
/// booleans or null; each key once), read into what
/// serde_json reads it into, keys in order; and the index after it. `None`
/// for anything else, which serde_json then reads. A tool call's arguments
/// through serde_json's visitors cost about 1,100 instructions; most are
/// one or two strings.
fn flat_object(line: &str, i: usize) -> Option<(Box<Map<String, Value>>, usize)> {
    let b = line.as_bytes();
    let string = |i: usize| -> Option<(Cow<'_, str>, usize)> {
        let rest = b.get(i + 1..)?;
        let n = special(rest);
        match rest.get(n) {
            Some(b'"') => Some((Cow::Borrowed(&line[i + 1..i + 1 + n]), i + 2 + n)),
            _ => unescape(line, i).map(|(s, at)| (Cow::Owned(s), at)),
        }
    };
    let mut m = Box::new(Map::new());
    let mut at = i + 1;
    if b.get(at) == Some(&b'}') {
        return Some((m, at + 1));
    }
    loop {
        if b.get(at) != Some(&b'"') {
            return None;
        }
        let (key, after) = string(at)?;
        if b.get(after) != Some(&b':') {
            return None;
        }
        at = after + 1;
        let value = match *b.get(at)? {
            b'"' => {
                let (v, after) = string(at)?;
                at = after;
                Value::String(v.into_owned())
            }
            b'0'..=b'9' => {
                let (v, after) = plain_u64(b, at)?;
                at = after;
                Value::from(v)
            }
            _ if b[at..].starts_with(b"true") => {
                at += 4;
                Value::Bool(true)
            }
            _ if b[at..].starts_with(b"false") => {
                at += 5;
                Value::Bool(false)
            }
            _ if b[at..].starts_with(b"null") => {
                at += 4;
                Value::Null
            }
            _ => return None,
        };
        // A key given twice keeps its first place and its last value in
        // serde_json's map: left to it.
        if m.insert(key.into_owned(), value).is_some() {
            return None;
        }
        match b.get(at) {
            Some(b',') => at += 1,
            Some(b'}') => return Some((m, at + 1)),
            _ => return None,
        }
    }
}

/// The integer whose first digit is at `i` and the index after it, when it
/// is what serde_json reads as a u64: no leading zero, no fraction or
/// exponent, no overflow.
fn plain_u64(b: &[u8], i: usize) -> Option<(u64, usize)> {
    let digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    if digits > 1 && b[i] == b'0' || matches!(b.get(i + digits), Some(b'.' | b'e' | b'E')) {
        return None;
    }
    let mut n = 0u64;
    for &c in &b[i..i + digits] {
        n = n.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some((n, i + digits))
}

/// A JSON value at the start of `text`, read by serde_json as it would read
/// it in place, and its length.
fn object<'a, T: Deserialize<'a>>(text: &'a str) -> Option<(T, usize)> {
    let mut it = serde_json::Deserializer::from_str(text).into_iter::<T>();
    let v = it.next()?.ok()?;
    Some((v, it.byte_offset()))
}

/// Index of the first `"`, `\\` or control character in `b` (its length if
/// none), eight bytes at a time as serde_json's own scan does: the lowest
/// flagged byte of a word is always a real one.
fn special(b: &[u8]) -> usize {
    const ONES: u64 = u64::MAX / 255;
    let mut i = 0;
    while let Some(w) = b.get(i..i + 8) {
        let x = u64::from_le_bytes(w.try_into().unwrap_or_default());
        let ctrl = x.wrapping_sub(ONES * 0x20) & !x;
        let q = x ^ (ONES * u64::from(b'"'));
        let q = q.wrapping_sub(ONES) & !q;
        let e = x ^ (ONES * u64::from(b'\\'));
        let e = e.wrapping_sub(ONES) & !e;
        let hit = (ctrl | q | e) & (ONES << 7);
        if hit != 0 {
            return i + hit.trailing_zeros() as usize / 8;
        }
        i += 8;
    }
    i + b[i..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .unwrap_or(b.len() - i)
}

/// The string starting after the quote at `i`, its escapes decoded as
/// serde_json decodes them, and the index after its closing quote; `None`
/// at a control character, a bad escape or an unpaired surrogate (which
/// serde_json rejects and [`parse_json`] reads its own way).
fn unescape(line: &str, i: usize) -> Option<(String, usize)> {
    let b = line.as_bytes();
    let hex = |at: usize| -> Option<u32> {
        let h = b.get(at..at + 4)?;
        if !h.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
    };
    let mut out = String::with_capacity(64);
    let mut at = i + 1;
    loop {
        let n = special(b.get(at..)?);
        out.push_str(&line[at..at + n]);
        at += n;
        match b.get(at)? {
            b'"' => return Some((out, at + 1)),
            b'\\' => {}
            _ => return None,
        }
        let c = match b.get(at + 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let u = hex(at + 2)?;
                let c = match u {
                    0xd800..=0xdbff => {
                        if b.get(at + 6..at + 8)? != b"\\u" {
                            return None;
                        }
                        let low = hex(at + 8)?;
                        if !(0xdc00..=0xdfff).contains(&low) {
                            return None;
                        }
                        at += 6;
                        char::from_u32(0x10000 + ((u - 0xd800) << 10) + (low - 0xdc00))?
                    }
                    0xdc00..=0xdfff => return None,
                    _ => char::from_u32(u)?,
                };
                at += 4;
                c
            }
            _ => return None,
        };
        out.push(c);
        at += 2;
    }
}

/// Read an optional `src` object: `file` (string, required), `line`
/// (1-based integer) and `pointer` (JSON pointer string), both optional;
/// other keys are ignored so later versions can add some.
fn src_from_object(obj: &Map<String, Value>) -> Result<Option<Place>, FieldError> {
    let src = match obj.get("src") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(FieldError::ty("src", "an object")),
    };
    let file = match src.get("file") {
        Some(Value::String(f)) => f.clone(),
        Some(_) => return Err(FieldError::ty("src.file", "a string")),
        None => return Err(FieldError::Missing("src.file".into())),
    };
    let line = match src.get("line") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => Some(
            n.as_u64()
                .filter(|l| (1..=u32::MAX as u64).contains(l))
                .ok_or_else(|| FieldError::ty("src.line", POSITIVE))? as u32,
        ),
        Some(_) => return Err(FieldError::ty("src.line", POSITIVE)),
    };
    let pointer = match src.get("pointer") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) if p.is_empty() || p.starts_with('/') => Some(p.clone()),
        Some(_) => {
            return Err(FieldError::ty(
                "src.pointer",
                "a JSON pointer string (`/messages/3`)",
            ))
        }
    };
    Ok(Some(Place {
        file: Some(file),
        line,
        pointer,
    }))
}

/// [`parse_line`] with the session id borrowed from the line when it can be
/// (no allocation per record for the id).
fn parse_line_borrowed(raw: &[u8]) -> Result<Parsed<'_>, RecordError> {
    // The line is checked as UTF-8 once, which costs less than serde_json
    // checking each string of a byte slice (9% fewer instructions in a parse).
    parse_line_str(std::str::from_utf8(raw).map_err(RecordError::NotUtf8)?)
}

/// [`parse_line_borrowed`] of a line already known to be UTF-8.
fn parse_line_str(line: &str) -> Result<Parsed<'_>, RecordError> {
    // The typed fast path covers well-formed common records; anything it
    // rejects is re-read as a generic value so the error names the field
    // (and so duplicate keys behave as JSON.parse: last one wins). Serde's
    // derived structs also read arrays, which are not records.
    let fast = if starts_object(line.as_bytes()) {
        flat(line).or_else(|| serde_json::from_str::<Fast>(line).ok())
    } else {
        None
    };
    if let Some(f) = fast {
        let rec = match f.ty.as_ref() {
            "turn" => Some(Record::Turn),
            "usage" => Some(Record::Usage {
                input_tokens: f.input_tokens,
                output_tokens: f.output_tokens,
            }),
            "content" => f.text.map(|text| Record::Content { text }),
            "thought" => f.text.map(|text| Record::Thought { text }),
            // `args` is required, and must be an object (null is not).
            "tool_call" => f.name.zip(f.args).map(|(name, args)| Record::ToolCall {
                name,
                args,
                id: f.id,
            }),
            "tool_result" => Some(Record::ToolResult {
                id: f.id,
                name: f.name,
                output: f.output,
                error: f.error,
            }),
            "user" => f.text.map(|text| Record::User {
                text,
                prompt_id: f.prompt_id,
            }),
            _ => None,
        };
        let place = match f.src {
            None => Some(None),
            Some(src) => src.place().map(Some),
        };
        if let (Some(rec), Some(place)) = (rec, place) {
            return Ok((f.session, rec, place));
        }
    }
    let value: Value = parse_json(line).map_err(RecordError::NotJson)?;
    let Value::Object(obj) = value else {
        return Err(RecordError::NotObject);
    };
    let (session, rec) = record_from_object(&obj)?;
    Ok((session.map(Cow::Owned), rec, src_from_object(&obj)?))
}

/// Validate a record object field by field.
pub fn record_from_object(
    obj: &Map<String, Value>,
) -> Result<(Option<String>, Record), FieldError> {
    let ty = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(_) => return Err(FieldError::ty("type", "a string")),
        None => return Err(FieldError::Missing("type".into())),
    };
    let session = opt_str(obj, "session")?;
    let rec = match ty {
        "session" => Record::Session {
            agent: opt_str(obj, "agent")?,
            model: opt_str(obj, "model")?,
            mode: opt_str(obj, "mode")?,
            meta: match obj.get("meta") {
                None | Some(Value::Null) => None,
                Some(Value::Object(m)) => Some(Box::new(m.clone())),
                Some(_) => return Err(FieldError::ty("meta", "an object")),
            },
        },
        "user" => Record::User {
            text: req_str(obj, "text")?,
            prompt_id: opt_str(obj, "prompt_id")?,
        },
        "turn" => Record::Turn,
        "content" => Record::Content {
            text: req_str(obj, "text")?,
        },
        "thought" => Record::Thought {
            text: req_str(obj, "text")?,
        },
        "tool_call" => Record::ToolCall {
            name: req_str(obj, "name")?,
            args: match obj.get("args") {
                Some(Value::Object(m)) => Box::new(m.clone()),
                Some(_) => return Err(FieldError::ty("args", "an object")),
                None => return Err(FieldError::Missing("args".into())),
            },
            id: opt_str(obj, "id")?,
        },
        "tool_result" => Record::ToolResult {
            id: opt_str(obj, "id")?,
            name: opt_str(obj, "name")?,
            output: opt_str(obj, "output")?,
            error: opt_bool(obj, "error")?,
        },
        "usage" => Record::Usage {
            input_tokens: opt_u64(obj, "input_tokens")?,
            output_tokens: opt_u64(obj, "output_tokens")?,
        },
        "judge" => Record::Judge {
            confidence: match obj.get("confidence") {
                // The spec's range: 0.0 to 1.0.
                Some(Value::Number(n)) => match n.as_f64() {
                    Some(c) if (0.0..=1.0).contains(&c) => c,
                    _ => return Err(FieldError::ty("confidence", "a number from 0 to 1")),
                },
                Some(_) => return Err(FieldError::ty("confidence", "a number")),
                None => return Err(FieldError::Missing("confidence".into())),
            },
            model: opt_str(obj, "model")?,
            analysis: opt_str(obj, "analysis")?,
        },
        "loop_detected" => Record::LoopDetected {
            kind: opt_str(obj, "kind")?,
            detail: opt_str(obj, "detail")?,
        },
        "label" => Record::Label {
            is_loop: match obj.get("loop") {
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err(FieldError::ty("loop", "a boolean")),
                None => return Err(FieldError::Missing("loop".into())),
            },
            onset_turn: opt_u64(obj, "onset_turn")?
                .map(|n| u32::try_from(n).map_err(|_| FieldError::TooLarge("onset_turn".into())))
                .transpose()?,
        },
        other => Record::Unknown {
            record_type: other.to_string(),
        },
    };
    Ok((session, rec))
}

// The canonical fields, read with the shared helpers of [`crate::input::json`]
// (the field's name is its path: canonical records are flat).
fn opt_str(obj: &Map<String, Value>, field: &str) -> Result<Option<String>, FieldError> {
    json::opt_str(obj, field, field).map(|v| v.map(str::to_string))
}

fn req_str(obj: &Map<String, Value>, field: &str) -> Result<String, FieldError> {
    json::req_str(obj, field, field).map(str::to_string)
}

fn opt_bool(obj: &Map<String, Value>, field: &str) -> Result<Option<bool>, FieldError> {
    json::opt_bool(obj, field, field)
}

fn opt_u64(obj: &Map<String, Value>, field: &str) -> Result<Option<u64>, FieldError> {
    json::opt_u64(obj, field, field)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Counting only the newlines after the last line walked gives the
    /// whole piece's count, however far the walk went (a parse stops at its
    /// first bad line): blank lines, CRLF, a BOM, no final newline.
    #[test]
    fn lines_from_counts_what_line_count_counts() {
        let pieces: [&[u8]; 7] = [
            b"",
            b"\n\n",
            b"{}\n{}",
            b"{}\n\n  \n{}\r\n\n\n",
            b"\xef\xbb\xbf{}\n",
            b"\n{}\n \n",
            b"a\nb\r\nc\n\n",
        ];
        for piece in pieces {
            for first in [true, false] {
                let walked: Vec<_> = line_ranges(piece, first).collect();
                for k in 0..=walked.len() {
                    let last = k.checked_sub(1).map(|i| (walked[i].0, walked[i].2));
                    assert_eq!(
                        lines_from(piece, last),
                        line_count(piece),
                        "{piece:?} walked to {k}"
                    );
                }
            }
        }
    }

    /// What `parse_giving` gives, as `parse_canonical` would say it.
    fn given(bytes: &[u8], lenient: bool) -> Result<FileSessions> {
        let mut got: Vec<(String, Vec<Event>)> = Vec::new();
        let batch = parse_giving("f.jsonl", "f", bytes, lenient, &mut |id, events| {
            got.push((id, events))
        })?;
        // Every session once, whole; put back in order of first appearance.
        let order: Vec<&String> = batch.sessions.iter().map(|(id, _)| id).collect();
        assert_eq!(got.len(), order.len());
        got.sort_by_key(|(id, _)| order.iter().position(|o| *o == id));
        Ok(FileSessions {
            format: "canonical".into(),
            sessions: got,
            skipped: batch.skipped,
            unknown: batch.unknown,
            ..Default::default()
        })
    }

    type Read = (Vec<(String, Vec<Event>)>, Vec<SkippedLine>, u64);

    /// `parse_batch` in pieces of `min_piece` bytes, giving the sessions that
    /// lie within a piece; put back together as one parse gives them.
    fn given_in_pieces(bytes: &[u8], lenient: bool, min_piece: usize) -> Result<Read> {
        let spans: Spans = session_spans(bytes, None, 1, "f", min_piece)
            .into_iter()
            .map(|(id, first, last)| (id, (first, last)))
            .collect();
        let got = std::sync::Mutex::new(rustc_hash::FxHashMap::default());
        let give = |id: String, events: Vec<Event>| {
            assert!(got.lock().unwrap().insert(id, events).is_none());
        };
        let batch = parse_batch(
            "f.jsonl",
            "f",
            bytes,
            1,
            lenient,
            min_piece,
            Some((&spans, &give)),
        )?;
        let mut got = got.into_inner().unwrap();
        let sessions = batch
            .sessions
            .into_iter()
            .map(|(id, events)| match events.is_empty() {
                true => {
                    let events = got.remove(&id).expect("given");
                    (id, events)
                }
                false => (id, events),
            })
            .collect();
        assert!(got.is_empty());
        Ok((sessions, batch.skipped, batch.unknown))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Sessions given as parsed are the sessions of a whole parse, with
        /// the same records, lines, skipped lines, counts and first error,
        /// whether sessions follow one another or interleave.
        #[test]
        fn giving_as_parsed_equals_a_whole_parse(
            lines in proptest::collection::vec((0u8..9, 0u8..4, "[a-z ]{0,40}"), 0..80),
            lenient in any::<bool>(),
            final_newline in any::<bool>(),
            bom in any::<bool>(),
        ) {
            let mut text = String::from(if bom { "\u{feff}" } else { "" });
            for (kind, sid, body) in &lines {
                match kind {
                    0 => text.push_str("  \r\n"),
                    1 => text.push_str("{\"type\":\"content\",\"text\":\n"),
                    2 => text.push_str(&format!("{{\"type\":\"turn\",\"session\":\"s{sid}\"}}\n")),
                    3 => text.push_str(&format!("{{\"type\":\"user\",\"text\":\"{body}\"}}\n")),
                    // Not records, though their tail names a session.
                    4 => text.push_str(&format!("{{\"type\":\"content\",\"session\":\"s{sid}\"}}\n")),
                    5 => text.push_str(&format!("[\"turn\",{{\"session\":\"s{sid}\"}}\n")),
                    6 => text.push_str(&format!(
                        "{{\"session\":\"s{sid}\",\"type\":\"mystery\",\"session\":\"s{}\"}}\n",
                        (sid + 1) % 4
                    )),
                    _ => text.push_str(&format!(
                        "{{\"type\":\"content\",\"text\":\"{body}\",\"session\":\"s{sid}\"}}\r\n"
                    )),
                }
            }
            if !final_newline {
                text.pop();
            }
            let whole = parse_canonical("f.jsonl", "f", text.as_bytes(), lenient);
            let giving = given(text.as_bytes(), lenient);
            // In small pieces (in parallel), sessions within a piece given.
            let pieces = given_in_pieces(text.as_bytes(), lenient, 97);
            let whole = whole.map(|fs| (fs.sessions, fs.skipped, fs.unknown));
            for other in [giving.map(|fs| (fs.sessions, fs.skipped, fs.unknown)), pieces] {
                match (&whole, other) {
                    (Ok(a), Ok(b)) => prop_assert_eq!(a, &b),
                    (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
                    (a, b) => prop_assert!(false, "{:?} vs {:?}", a.as_ref().err(), b.err()),
                }
            }
        }
    }

    /// A session is given as soon as its last line is parsed, before the
    /// next session's records are.
    #[test]
    fn sessions_are_given_as_their_last_line_is_parsed() {
        let text = "{\"type\":\"turn\",\"session\":\"a\"}\n{\"type\":\"turn\",\"session\":\"b\"}\n{\"type\":\"turn\",\"session\":\"a\"}\n{\"type\":\"turn\",\"session\":\"c\"}\n";
        let mut order = Vec::new();
        parse_giving("f.jsonl", "f", text.as_bytes(), false, &mut |id, events| {
            order.push((id, events.len()))
        })
        .unwrap();
        assert_eq!(order, [("b".into(), 1), ("a".into(), 2), ("c".into(), 1)]);
    }

    /// Pieces parsed apart and merged give what one pass gives: sessions,
    /// records, line numbers, skipped lines and the first error.
    #[test]
    fn pieces_merge_to_one_pass() {
        let mut r = crate::input::synth::Rng::new(5);
        let lines = [
            r#"{"type":"content","text":"a","session":"s1"}"#,
            r#"{"type":"content","text":"b","session":"s2"}"#,
            r#"{"type":"tool_call","name":"x","args":{},"session":"s3"}"#,
            r#"{"type":"turn"}"#,
            r#"{"type":"mystery","session":"s2"}"#,
            r#"{"type":"content"}"#,
            "\u{feff}{\"type\":\"turn\"}",
            "",
            "   ",
            "{\"type\":\"turn\"}\r",
        ];
        for case in 0..300 {
            let n = r.range(0, 60);
            let mut text = String::new();
            if case % 5 == 0 {
                text.push('\u{feff}');
            }
            for _ in 0..n {
                text.push_str(lines[r.range(0, lines.len() - 1)]);
                text.push('\n');
            }
            if case % 2 == 0 {
                text.pop();
            }
            let bytes = text.as_bytes();
            for lenient in [false, true] {
                let one = parse_canonical("f", "stem", bytes, lenient);
                let piece = [1, 7, 60, 500][case % 4];
                let many = parse_canonical_pieces("f", "stem", bytes, lenient, piece);
                match (one, many) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(a.sessions, b.sessions, "case {case}");
                        assert_eq!(a.skipped, b.skipped, "case {case}");
                        assert_eq!(a.unknown, b.unknown, "case {case}");
                    }
                    (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "case {case}"),
                    (a, b) => panic!("case {case}: {a:?} vs {b:?}"),
                }
            }
        }
    }
    /// Whenever a line is a record, the first pass's quick scans (from the
    /// start, and from the end) name the session the full parse gives it, or
    /// leave the line to the parse.
    #[test]
    fn quick_session_agrees_with_the_parse() {
        let keys = [
            "type",
            "type",
            "session",
            "session",
            "text",
            "args",
            "name",
            r"sess\u0069on",
            "x",
        ];
        let values = [
            r#""a""#,
            r#""b""#,
            r#""s\"q""#,
            r#""\u0061""#,
            r#""é""#,
            "null",
            "7",
            "-1.5e3",
            "true",
            "[]",
            r#"{"session":"inner","k":[1,"}",{"session":"deep"}]}"#,
            r#"["session","a",{"b":"\"}"}]"#,
            r#""\\""#,
            r#""x\\\"y""#,
            r#"{"a":}"#,
            "tru",
        ];
        let types = ["content", "turn", "user", "tool_call", "mystery"];
        let mut r = crate::input::synth::Rng::new(5);
        let (mut agreed, mut left, mut tails) = (0, 0, 0);
        for _ in 0..100_000 {
            let mut line = String::from(["{", " {", "{ "][r.range(0, 2)]);
            for k in 0..r.range(0, 5) {
                if k > 0 {
                    line.push_str([",", ", ", " ,"][r.range(0, 2)]);
                }
                let key = keys[r.range(0, keys.len() - 1)];
                line.push_str(&format!("\"{key}\"{}", [":", " : "][r.range(0, 1)]));
                if key == "type" {
                    line.push_str(&format!("\"{}\"", types[r.range(0, types.len() - 1)]));
                } else {
                    line.push_str(values[r.range(0, values.len() - 1)]);
                }
            }
            // As writers lay records out: the session last, no spaces.
            if r.range(0, 2) == 0 {
                line.push_str(if line.trim_end().ends_with('{') {
                    ""
                } else {
                    ","
                });
                line.push_str("\"session\":");
                line.push_str(values[r.range(0, 4)]);
            }
            line.push_str(["}", "}", "} ", "", "}}"][r.range(0, 4)]);
            let Ok((session, _)) = parse_line(&line) else {
                continue;
            };
            assert_eq!(
                line_session(line.as_bytes(), Some(&line)),
                line_session(line.as_bytes(), None),
                "{line}"
            );
            match quick_session(line.as_bytes()) {
                Some(q) => {
                    agreed += 1;
                    assert_eq!(q, session.as_deref(), "{line}");
                }
                None => left += 1,
            }
            if let Some(t) = tail_session(line.as_bytes()).map(|(a, b)| &line[a..b]) {
                tails += 1;
                assert_eq!(Some(t), session.as_deref(), "{line}");
            }
        }
        assert!(
            agreed > 1000 && left > 100 && tails > 1000,
            "{agreed} {left} {tails}"
        );
    }

    // The reading `flat` replaced: every key scanned as a string, every
    // value read, then kept or refused by its key. `flat` must agree with it.
    /// [`Fast`] of a line as writers lay it out: one flat object, no
    /// whitespace, keys the fast path knows, each once, values strings without
    /// escapes, non-negative integers, booleans or null. `None` for anything
    /// else, which serde_json then reads. Most records are such lines, and this
    /// reads one for a fraction of what serde_json's general path costs (per
    /// field: key lookup, visitor calls, whitespace checks). Whatever it accepts,
    /// serde_json reads into the same `Fast` (a property test holds it to that).
    fn flat_plain(line: &str) -> Option<Fast<'_>> {
        /// A value as written.
        enum V<'a> {
            Str(Cow<'a, str>),
            Obj(Box<Map<String, Value>>),
            Src(Box<FastSrc>),
            Int(u64),
            Bool(bool),
            Null,
        }
        fn str_or_null(v: V<'_>) -> Option<Option<Cow<'_, str>>> {
            match v {
                V::Str(s) => Some(Some(s)),
                V::Null => Some(None),
                _ => None,
            }
        }
        let b = line.as_bytes();
        /// The string starting after the quote at `i`: its text and the index
        /// after its closing quote; `None` at an escape or a control character.
        fn string(line: &str, i: usize) -> Option<(&str, usize)> {
            let rest = line.as_bytes().get(i + 1..)?;
            let n = special(rest);
            if rest.get(n) != Some(&b'"') {
                return None;
            }
            Some((&line[i + 1..i + 1 + n], i + 2 + n))
        }
        let (mut ty, mut session, mut text, mut name, mut id) = (None, None, None, None, None);
        let (mut output, mut error, mut prompt_id) = (None, None, None);
        let (mut input_tokens, mut output_tokens, mut args, mut src) = (None, None, None, None);
        let mut seen = 0u16;
        if b.first() != Some(&b'{') || b.last() != Some(&b'}') {
            return None;
        }
        let mut i = 1;
        loop {
            if b.get(i) != Some(&b'"') {
                return None;
            }
            let (key, at) = string(line, i)?;
            if b.get(at) != Some(&b':') {
                return None;
            }
            i = at + 1;
            let v = match *b.get(i)? {
                b'"' => match string(line, i) {
                    Some((v, at)) => {
                        i = at;
                        V::Str(Cow::Borrowed(v))
                    }
                    None => {
                        let (v, at) = unescape(line, i)?;
                        i = at;
                        V::Str(Cow::Owned(v))
                    }
                },
                b'0'..=b'9' => {
                    let (n, at) = plain_u64(b, i)?;
                    i = at;
                    V::Int(n)
                }
                // Only `args` and `src` may be objects. Most arguments are one
                // flat object, read here; serde_json reads the others as it
                // would in the whole line. Fewer than 100 brackets after it
                // keep it far from serde_json's nesting limit, which counts the
                // line's own object too.
                b'{' if key == "args" || key == "src" => {
                    let flat = match key {
                        "args" => flat_object(line, i),
                        _ => None,
                    };
                    if let Some((m, at)) = flat {
                        i = at;
                        V::Obj(m)
                    } else if b[i..].iter().filter(|&&c| c == b'{' || c == b'[').count() >= 100 {
                        return None;
                    } else if key == "args" {
                        let (m, len) = object(&line[i..])?;
                        i += len;
                        V::Obj(m)
                    } else {
                        let (m, len) = object(&line[i..])?;
                        i += len;
                        V::Src(m)
                    }
                }
                _ => {
                    let (v, len) = if b[i..].starts_with(b"true") {
                        (V::Bool(true), 4)
                    } else if b[i..].starts_with(b"false") {
                        (V::Bool(false), 5)
                    } else if b[i..].starts_with(b"null") {
                        (V::Null, 4)
                    } else {
                        return None;
                    };
                    i += len;
                    v
                }
            };
            let bit = match key {
                // serde_json borrows these only without escapes.
                "type" => {
                    ty = match v {
                        V::Str(Cow::Borrowed(s)) => Some(s),
                        _ => return None,
                    };
                    0
                }
                "session" => {
                    session = match v {
                        V::Str(Cow::Borrowed(s)) => Some(s),
                        V::Null => None,
                        _ => return None,
                    };
                    1
                }
                "text" => {
                    text = str_or_null(v)?;
                    2
                }
                "name" => {
                    name = str_or_null(v)?;
                    3
                }
                "id" => {
                    id = str_or_null(v)?;
                    4
                }
                "output" => {
                    output = str_or_null(v)?;
                    5
                }
                "prompt_id" => {
                    prompt_id = str_or_null(v)?;
                    6
                }
                "error" => {
                    error = match v {
                        V::Bool(x) => Some(x),
                        V::Null => None,
                        _ => return None,
                    };
                    7
                }
                "args" => {
                    args = match v {
                        V::Obj(m) => Some(m),
                        V::Null => None,
                        _ => return None,
                    };
                    10
                }
                "src" => {
                    src = match v {
                        V::Src(m) => Some(m),
                        V::Null => None,
                        _ => return None,
                    };
                    11
                }
                "input_tokens" | "output_tokens" => {
                    let n = match v {
                        V::Int(n) => Some(n),
                        V::Null => None,
                        _ => return None,
                    };
                    if key == "input_tokens" {
                        input_tokens = n;
                        8
                    } else {
                        output_tokens = n;
                        9
                    }
                }
                _ => return None,
            };
            // A key given twice is an error to serde's derive (and the slow
            // path's business).
            if seen & (1 << bit) != 0 {
                return None;
            }
            seen |= 1 << bit;
            match b.get(i) {
                Some(b',') => i += 1,
                Some(b'}') if i + 1 == b.len() => break,
                _ => return None,
            }
        }
        Some(Fast {
            ty: Cow::Borrowed(ty?),
            session: session.map(Cow::Borrowed),
            text: text.map(Cow::into_owned),
            name: name.map(Cow::into_owned),
            args,
            id: id.map(Cow::into_owned),
            output: output.map(Cow::into_owned),
            error,
            prompt_id: prompt_id.map(Cow::into_owned),
            input_tokens,
            output_tokens,
            src,
        })
    }

    /// Whatever `flat` reads, serde_json reads into the same `Fast`; and it
    /// reads the lines writers write.
    #[test]
    fn flat_reads_as_serde_does() {
        let keys = [
            "type",
            "type",
            "session",
            "text",
            "text",
            "name",
            "id",
            "output",
            "prompt_id",
            "error",
            "input_tokens",
            "output_tokens",
            "args",
            "src",
            "src",
            "other",
            "",
            r"t\u0065xt",
        ];
        let types = [
            "content",
            "thought",
            "turn",
            "usage",
            "tool_result",
            "user",
            "tool_call",
            "x",
        ];
        let values = [
            r#""plain""#,
            r#""""#,
            r#""a \"q\" b""#,
            r#""nl\n""#,
            r#""\u00e9""#,
            "\"ctl\u{1}\"",
            "\"tab\t\"",
            r#""é } , : {""#,
            r#""\ud83d""#,
            "0",
            "7",
            "01",
            "1.5",
            "1e3",
            "-1",
            "18446744073709551615",
            "18446744073709551616",
            "true",
            "false",
            "null",
            "{}",
            "[]",
            r#"{"a":1}"#,
            "tru",
            "nul",
            r#""\u0041\ud83d\ude00\uD83D\uDE00""#,
            r#""\/\b\f\r\"\\""#,
            r#""\x""#,
            r#""\ud83dx""#,
            r#""\ude00""#,
            r#""\ud83d\u0041""#,
            r#""\u00""#,
            r#""\u+041""#,
            r#""end\"#,
            r#""\u0000é\u00e9""#,
            r#"{"path":"a","n":[1,{"x":null}]}"#,
            r#"{"a":"\ud83d"}"#,
            r#"{"a":1,"a":2}"#,
            r#"{ "a" : 1 }"#,
            r#"{"a":}"#,
            r#"{"file":"a.json","line":3}"#,
            r#"{"file":"a","pointer":"/m/1","x":[1,{}]}"#,
            r#"{"file":"a","line":0}"#,
            r#"{"line":2}"#,
            r#"{"file":"a","file":"b"}"#,
            r#"{"path":"src/a.rs","n":7,"all":true,"x":null}"#,
            r#"{"b":"1","a":"2"}"#,
            r#"{"z":"\u00e9\n","a":0,"m":false}"#,
            r#"{"a":"x","b":"y","a":"z"}"#,
            r#"{"a":01}"#,
            r#"{"a":1.5}"#,
            r#"{"a":-1}"#,
            r#"{"a":18446744073709551616}"#,
            r#"{"a":"1","b":"2","c":"3","d":"4","e":"5","f":"6","g":"7","h":"8","i":"9"}"#,
            r#"{"a":"1","b":"2","c":"3","d":"4","e":"5","f":"6","g":"7","h":"8"}"#,
            r#"{"a":"x",}"#,
            r#"{"a""#,
            r#"{"a":"\ud83d"}"#,
            r#"{"a":tru}"#,
        ];
        let mut r = crate::input::synth::Rng::new(11);
        let mut accepted = 0;
        for _ in 0..200_000 {
            let mut line = String::from("{");
            for k in 0..r.range(0, 5) {
                if k > 0 {
                    line.push_str([",", ",", ",", ", "][r.range(0, 3)]);
                }
                let key = keys[r.range(0, keys.len() - 1)];
                line.push_str(&format!("\"{key}\":"));
                if r.range(0, 9) == 0 {
                    line.push(' ');
                }
                if key == "type" && r.range(0, 3) > 0 {
                    line.push_str(&format!("\"{}\"", types[r.range(0, types.len() - 1)]));
                } else {
                    line.push_str(values[r.range(0, values.len() - 1)]);
                }
            }
            line.push_str(["}", "}", "}", "} ", ""][r.range(0, 4)]);
            if let Some(f) = flat(&line) {
                accepted += 1;
                let order = |f: &Fast| serde_json::to_string(&f.args).unwrap();
                let serde = serde_json::from_str::<Fast>(&line).ok();
                assert_eq!(Some(order(&f)), serde.as_ref().map(order), "{line}");
                assert_eq!(Some(f), serde, "{line}");
            }
        }
        assert!(accepted > 1000, "{accepted}");
        // Near serde_json's nesting limit both read alike (or `flat` leaves it).
        for depth in [97, 98, 99, 100, 125, 126, 127, 128] {
            let line = format!(
                r#"{{"type":"tool_call","name":"x","args":{{"a":{}1{}}}}}"#,
                "[".repeat(depth),
                "]".repeat(depth)
            );
            if let Some(f) = flat(&line) {
                assert_eq!(Some(f), serde_json::from_str::<Fast>(&line).ok(), "{depth}");
            }
        }
        for line in [
            r#"{"type":"content","text":"a b.","session":"s000001"}"#,
            r#"{"type":"tool_result","session":"s","id":"c1","name":"x","output":"é","error":false}"#,
            r#"{"type":"usage","input_tokens":1200,"output_tokens":185,"session":"s"}"#,
            r#"{"type":"turn"}"#,
            r#"{"type":"tool_call","name":"x","args":{"p":"a","l":[1]},"id":"c1","session":"s"}"#,
            r#"{"type":"content","session":"s","text":"x","src":{"file":"f.json","pointer":"/m/2"}}"#,
            r#"{"type":"content","text":"a\nb \"c\" \u00e9\ud83d\ude00","session":"s"}"#,
        ] {
            assert!(flat(line).is_some(), "{line}");
            assert_eq!(flat(line), serde_json::from_str::<Fast>(line).ok());
        }
    }
    /// `flat` reads every line as the plain reading it replaced does (keys
    /// near the known ones included), accepting the same lines.
    #[test]
    fn flat_reads_as_flat_plain() {
        let keys = [
            "type",
            "type",
            "session",
            "session",
            "text",
            "name",
            "id",
            "output",
            "prompt_id",
            "error",
            "input_tokens",
            "output_tokens",
            "args",
            "src",
            "typ",
            "types",
            "t",
            "s",
            "sessio",
            "session_",
            "srcs",
            "i",
            "ids",
            "input_token",
            "output_token",
            "outputs",
            "o",
            "prompt",
            "errors",
            "arg",
            "x",
            "",
            r"t\u0065xt",
            "T",
            "TYPE",
        ];
        let types = [
            "content",
            "turn",
            "usage",
            "tool_result",
            "user",
            "tool_call",
        ];
        let values = [
            r#""plain""#,
            r#""""#,
            r#""a \"q\" b""#,
            r#""\u00e9""#,
            "\"ctl\u{1}\"",
            r#""é } , : {""#,
            "0",
            "7",
            "01",
            "1.5",
            "-1",
            "18446744073709551616",
            "true",
            "false",
            "null",
            "nul",
            "tru",
            "fals",
            "{}",
            "[]",
            r#"{"a":1}"#,
            r#"{"path":"a","n":[1,{"x":null}]}"#,
            r#"{"file":"a.json","line":3}"#,
            r#"{"file":"a","line":0}"#,
            r#"{"a":"x",}"#,
            r#""end\"#,
        ];
        let mut r = crate::input::synth::Rng::new(23);
        let (mut accepted, mut refused) = (0, 0);
        for _ in 0..200_000 {
            let mut line = String::from("{");
            for k in 0..r.range(1, 6) {
                if k > 0 {
                    line.push_str([",", ",", ",", ", "][r.range(0, 3)]);
                }
                // Known keys most of the time, so many lines are accepted.
                let key = if r.range(0, 3) > 0 {
                    keys[r.range(0, 13)]
                } else {
                    keys[r.range(0, keys.len() - 1)]
                };
                line.push_str(&format!("\"{key}\":"));
                if key == "type" && r.range(0, 3) > 0 {
                    line.push_str(&format!("\"{}\"", types[r.range(0, types.len() - 1)]));
                } else {
                    line.push_str(values[r.range(0, values.len() - 1)]);
                }
            }
            line.push_str(["}", "}", "}", "} ", ""][r.range(0, 4)]);
            let f = flat(&line);
            match &f {
                Some(_) => accepted += 1,
                None => refused += 1,
            }
            assert_eq!(f, flat_plain(&line), "{line}");
        }
        assert!(accepted > 1000 && refused > 1000, "{accepted} {refused}");
    }
    /// Usage records take the fast path and keep the slow path's errors.
    #[test]
    fn usage_fast_path_keeps_the_rules() {
        let (_, r) =
            parse_line(r#"{"type":"usage","input_tokens":12,"output_tokens":null}"#).unwrap();
        assert_eq!(
            r,
            Record::Usage {
                input_tokens: Some(12),
                output_tokens: None
            }
        );
        for bad in ["-1", "1.5", "\"7\"", "1e30"] {
            assert_eq!(
                parse_line(&format!(r#"{{"type":"usage","input_tokens":{bad}}}"#))
                    .unwrap_err()
                    .to_string(),
                "field `input_tokens` must be a non-negative integer",
                "{bad}"
            );
        }
    }
    /// A judge's confidence is a number from 0 to 1 (the spec), else the
    /// line is an error naming the field.
    #[test]
    fn judge_confidence_outside_0_to_1_is_a_line_error() {
        for ok in ["0", "1", "0.5", "1.0", "0e0"] {
            parse_line(&format!(r#"{{"type":"judge","confidence":{ok}}}"#)).unwrap();
        }
        for bad in ["1.5", "-0.1", "1.0000001", "-0", "2", "1e300"] {
            let r = parse_line(&format!(r#"{{"type":"judge","confidence":{bad}}}"#));
            if bad == "-0" {
                // -0 == 0: inside the range.
                assert!(r.is_ok());
                continue;
            }
            assert_eq!(
                r.unwrap_err().to_string(),
                "field `confidence` must be a number from 0 to 1",
                "{bad}"
            );
        }
    }

    #[test]
    fn field_errors_name_the_field() {
        assert_eq!(
            parse_line(r#"{"type":"content","text":5}"#)
                .unwrap_err()
                .to_string(),
            "field `text` must be a string"
        );
        assert_eq!(
            parse_line(r#"{"type":"tool_call","name":"x"}"#)
                .unwrap_err()
                .to_string(),
            "missing field `args`"
        );
        assert_eq!(
            parse_line(r#"{"type":"tool_call","name":"x","args":null}"#)
                .unwrap_err()
                .to_string(),
            "field `args` must be an object"
        );
        assert_eq!(
            parse_line(r#"{"type":"tool_call","name":"x","args":[]}"#)
                .unwrap_err()
                .to_string(),
            "field `args` must be an object"
        );
        assert_eq!(
            parse_line(r#"{"text":"x"}"#).unwrap_err().to_string(),
            "missing field `type`"
        );
        assert_eq!(
            parse_line("[1]").unwrap_err().to_string(),
            "not a JSON object"
        );
        assert!(parse_line("{")
            .unwrap_err()
            .to_string()
            .starts_with("not valid JSON"));
        assert_eq!(
            parse_line(r#"{"type":"judge"}"#).unwrap_err().to_string(),
            "missing field `confidence`"
        );
        assert_eq!(
            parse_line(r#"{"type":"label","loop":true,"onset_turn":-1}"#)
                .unwrap_err()
                .to_string(),
            "field `onset_turn` must be a non-negative integer"
        );
    }
    #[test]
    fn lone_surrogate_escapes_stay_distinct_and_round_trip() {
        let (_, r) = parse_line(r#"{"type":"content","text":"ab\ud83d"}"#).unwrap();
        assert_eq!(
            r,
            Record::Content {
                text: "ab\u{f003d}".into()
            }
        );
        let (_, r) =
            parse_line(r#"{"type":"content","text":"\ude00cd \ud83d\ude00 \\ud800"}"#).unwrap();
        assert_eq!(
            r,
            Record::Content {
                text: "\u{f0600}cd 😀 \\ud800".into()
            }
        );
        assert!(parse_line(r#"{"type":"content","text":"x"#).is_err());
        // distinct lone surrogates stay distinct, and stringify writes them back
        let a = parse_json(r#"{"p":"\ud800"}"#).unwrap();
        let b = parse_json(r#"{"p":"\ud801"}"#).unwrap();
        assert_ne!(a, b);
        assert_eq!(crate::util::js::stringify(&a), r#"{"p":"\ud800"}"#);
        assert_eq!(crate::util::js::utf16("a\u{f0000}"), vec![0x61, 0xd800]);
    }
    /// Line errors are typed and keep their cause.
    #[test]
    fn line_errors_keep_their_cause() {
        use std::error::Error as _;
        let e = parse_line("{").unwrap_err();
        assert!(matches!(e, RecordError::NotJson(_)) && e.source().is_some());
        let e = parse_line_borrowed(b"\xff").unwrap_err();
        assert!(matches!(e, RecordError::NotUtf8(_)) && e.source().is_some());
        assert!(matches!(
            parse_line(r#"{"type":"content"}"#).unwrap_err(),
            RecordError::Field(FieldError::Missing(f)) if f == "text"
        ));
    }

    #[test]
    fn duplicate_keys_last_wins_like_json_parse() {
        let (_, r) = parse_line(r#"{"type":"content","text":"a","text":"b"}"#).unwrap();
        assert_eq!(r, Record::Content { text: "b".into() });
    }
    #[test]
    fn unknown_types_are_kept_as_unknown() {
        let (_, r) = parse_line(r#"{"type":"future","text":5}"#).unwrap();
        assert_eq!(
            r,
            Record::Unknown {
                record_type: "future".into()
            }
        );
    }
    /// Serde's derived structs also read arrays; a record is an object.
    #[test]
    fn an_array_is_not_a_record() {
        for line in [r#"["content",null,"hi"]"#, r#" ["turn"]"#] {
            let e = parse_line(line).unwrap_err();
            assert!(matches!(e, RecordError::NotObject), "{line}: {e}");
            assert_eq!(line_session(line.as_bytes(), None), None, "{line}");
        }
        assert_eq!(
            line_session(br#" {"type":"turn","session":"a"}"#, None),
            Some(Some(Cow::Borrowed("a")))
        );
    }
    #[test]
    fn sessions_by_field_or_stem_with_bom_crlf_blank() {
        let data = "\u{feff}{\"type\":\"turn\"}\r\n\r\n{\"type\":\"turn\",\"session\":\"B\"}\n{\"type\":\"content\",\"text\":\"x\"}";
        let fs = parse_canonical("f.jsonl", "f", data.as_bytes(), false).unwrap();
        assert_eq!(fs.sessions.len(), 2);
        assert_eq!(fs.sessions[0].0, "f");
        assert_eq!(fs.sessions[0].1.len(), 2);
        assert_eq!(fs.sessions[0].1[1].origin.line, 4);
        assert_eq!(fs.sessions[1].0, "B");
    }
    #[test]
    fn strict_stops_lenient_counts() {
        let data = b"{\"type\":\"turn\"}\n{\"type\":\"content\"}\n{\"type\":\"turn\"}\n";
        let err = parse_canonical("f.jsonl", "f", data, false).unwrap_err();
        assert_eq!(err.to_string(), "f.jsonl:2: missing field `text`");
        let fs = parse_canonical("f.jsonl", "f", data, true).unwrap();
        assert_eq!(fs.skipped.len(), 1);
        assert_eq!(fs.sessions[0].1.len(), 2);
        // The skip is typed: its line, the reader's own error, the same text.
        let skip = &fs.skipped[0];
        assert_eq!(skip.line, 2);
        assert!(
            matches!(&skip.reason, crate::input::format::SkipReason::Record(e)
                if matches!(**e, RecordError::Field(FieldError::Missing(_)))),
            "{skip:?}"
        );
        assert_eq!(skip.reason.to_string(), "missing field `text`");
    }
}
