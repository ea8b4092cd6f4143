//! Shared plumbing for the importers: collecting records per session, strict or
//! lenient error handling, JSONL line iteration, argument parsing and the line
//! numbers of array elements inside single-JSON files.

use crate::error::{Error, Result};
use crate::event::{Event, Origin, Place, Record};
pub(crate) use crate::input::format::Ctx;
use crate::input::format::{FileSessions, SkippedLine};
pub(crate) use crate::input::json::{opt_arr, opt_str, req_obj, req_str, s, FieldError};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

pub(crate) use crate::input::json::RecordError;

/// Builds a [`FileSessions`]: records per session in order of first appearance,
/// with optional de-duplication keys.
pub(crate) struct Out {
    fs: FileSessions,
    index: HashMap<String, usize>,
    keys: Vec<Vec<Option<String>>>,
    /// The place of records pushed now (see [`Out::at`]).
    place: Option<Arc<Place>>,
}

impl Out {
    /// An empty result for `format`; every importer reads whole messages.
    pub fn new(format: &str) -> Out {
        Out {
            fs: FileSessions {
                format: format.to_string(),
                whole_messages: true,
                ..Default::default()
            },
            index: HashMap::new(),
            keys: Vec::new(),
            place: None,
        }
    }

    fn slot(&mut self, sid: &str) -> usize {
        // Records mostly follow the session before them: no hashing then.
        if let Some((last, _)) = self.fs.sessions.last() {
            if last == sid {
                return self.fs.sessions.len() - 1;
            }
        }
        if let Some(i) = self.index.get(sid) {
            return *i;
        }
        self.fs.sessions.push((sid.to_string(), Vec::new()));
        self.keys.push(Vec::new());
        let i = self.fs.sessions.len() - 1;
        self.index.insert(sid.to_string(), i);
        i
    }

    /// Make sure a session exists even if it gets no records.
    pub fn open(&mut self, sid: &str) {
        self.slot(sid);
    }

    /// Append a record.
    pub fn push(&mut self, sid: &str, rec: Record, line: u32) {
        self.push_keyed(sid, rec, line, None);
    }

    /// Append a record with a de-duplication key (the native record it came from).
    pub fn push_keyed(&mut self, sid: &str, rec: Record, line: u32, key: Option<&str>) {
        let i = self.slot(sid);
        let origin = Origin {
            file: 0,
            line,
            place: self.place.clone(),
        };
        self.fs.sessions[i].1.push(Event::new(rec, origin));
        self.keys[i].push(key.map(str::to_string));
    }

    /// Records pushed from now on come from the native record at JSON
    /// pointer `pointer` of a whole-document file (`None`: no pointer, for
    /// line-based formats). Records of one native message share the place.
    pub fn at(&mut self, pointer: Option<String>) {
        self.place = pointer.map(|p| {
            Arc::new(Place {
                file: None,
                line: None,
                pointer: Some(p),
            })
        });
    }

    /// Records pushed from now on come from `place` (a member of a container
    /// file, its line and the JSON pointer inside it).
    pub fn at_place(&mut self, place: Place) {
        self.place = Some(Arc::new(place));
    }

    /// Records pushed from now on come from file `file`, a JSON document
    /// that is one native record starting at line 1 (a store that keeps a
    /// session in many files: each record names its own file).
    pub fn at_file(&mut self, file: Option<String>) {
        self.place = file.map(|f| {
            Arc::new(Place {
                file: Some(f),
                line: Some(1),
                pointer: None,
            })
        });
    }

    /// Note a skipped record (`--lenient`) at `line` (0: the message names
    /// the place).
    pub fn skip(&mut self, line: u64, message: String) {
        self.fs.skipped.push(SkippedLine::native(line, message));
    }

    /// Add a metadata entry for a session (merged into its resolved metadata).
    pub fn meta(&mut self, sid: &str, key: &str, value: Value) {
        self.fs
            .session_meta
            .entry(sid.to_string())
            .or_default()
            .insert(key.to_string(), value);
    }

    /// Count a native record of a type this importer does not know.
    pub fn unknown(&mut self) {
        self.fs.unknown += 1;
    }

    /// Strict: the error; lenient: record the skip and go on.
    pub fn bad(&mut self, ctx: &Ctx, line: u64, why: impl std::fmt::Display) -> Result<()> {
        let message = why.to_string();
        if ctx.lenient {
            self.fs.skipped.push(SkippedLine::native(line, message));
            Ok(())
        } else {
            Err(Error::Line {
                path: ctx.display.to_string(),
                line,
                message,
            })
        }
    }

    /// The finished result; key lists are kept only for sessions that have keys.
    pub fn finish(mut self) -> FileSessions {
        for ((sid, _), keys) in self.fs.sessions.iter().zip(self.keys) {
            if keys.iter().any(Option::is_some) {
                self.fs.record_keys.insert(sid.clone(), keys);
            }
        }
        self.fs
    }
}

/// Non-blank lines of a JSONL file as `(1-based line, text)`; BOM and CR
/// stripped. Lines that are not UTF-8 come back as `Err`. Line ends are
/// found with memchr.
pub(crate) fn lines(
    bytes: &[u8],
) -> impl Iterator<Item = (u32, std::result::Result<&str, RecordError>)> {
    let mut start = Some(0usize);
    let mut index = 0usize;
    std::iter::from_fn(move || loop {
        let from = start?;
        let end = match memchr::memchr(b'\n', &bytes[from..]) {
            Some(k) => {
                start = Some(from + k + 1);
                from + k
            }
            None => {
                start = None;
                bytes.len()
            }
        };
        let i = index;
        index += 1;
        let mut raw = &bytes[from..end];
        if i == 0 && raw.starts_with(&[0xef, 0xbb, 0xbf]) {
            raw = &raw[3..];
        }
        if let Some(r) = raw.strip_suffix(b"\r") {
            raw = r;
        }
        if raw.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        let text = std::str::from_utf8(raw).map_err(RecordError::NotUtf8);
        return Some(((i + 1) as u32, text));
    })
}

/// Parse one JSONL line into an object, or say why not.
pub(crate) fn parse_object(
    text: std::result::Result<&str, RecordError>,
) -> std::result::Result<Map<String, Value>, RecordError> {
    match crate::input::json::parse_json(text?) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(RecordError::NotObject),
        Err(e) => Err(RecordError::NotJson(e)),
    }
}

/// Parse a whole file as one JSON value (BOM tolerated).
pub(crate) fn parse_doc(bytes: &[u8]) -> std::result::Result<Value, serde_json::Error> {
    let bytes = bytes.strip_prefix(&[0xef, 0xbb, 0xbf]).unwrap_or(bytes);
    crate::input::json::parse_json_slice(bytes)
}

/// The file being read as one JSON value: the document detection parsed
/// ([`Ctx::parsed`]), else [`parse_doc`] of its bytes.
pub(crate) fn doc_of(ctx: &Ctx) -> std::result::Result<Value, serde_json::Error> {
    match ctx.parsed.take() {
        Some(doc) => Ok(doc),
        None => parse_doc(ctx.bytes),
    }
}

/// Parse a whole single-JSON file; a parse failure is an error at its line,
/// or with lenient a skipped line (and `None`).
pub(crate) fn doc_or_skip(ctx: &Ctx, out: &mut Out) -> Result<Option<Value>> {
    match doc_of(ctx) {
        Ok(v) => Ok(Some(v)),
        Err(e) => {
            out.bad(ctx, e.line() as u64, RecordError::NotJson(e))?;
            Ok(None)
        }
    }
}

/// Tool-call arguments from a JSON string: the object it encodes (key order
/// kept), else `{"_raw": string}` so repeats stay comparable.
pub(crate) fn args_from_str(s: &str) -> Map<String, Value> {
    match serde_json::from_str::<Value>(s) {
        Ok(Value::Object(m)) => m,
        _ => raw_args(Value::String(s.to_string())),
    }
}

/// Tool-call arguments from any JSON value: objects as they are, strings
/// parsed, null empty, anything else kept under `_raw`.
pub(crate) fn args_from_value(v: Option<&Value>) -> Map<String, Value> {
    match v {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(Value::String(s)) => args_from_str(s),
        Some(other) => raw_args(Value::String(other.to_string())),
    }
}

fn raw_args(v: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("_raw".to_string(), v);
    m
}

/// Text of a message content: a string, or the `text` of its text-like parts
/// joined with newlines (images become `[image]`).
pub(crate) fn text_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(parts)) => {
            let mut out: Vec<String> = Vec::new();
            for p in parts {
                match p {
                    Value::String(t) => out.push(t.clone()),
                    Value::Object(o) => {
                        if let Some(t) = s(o, "text") {
                            out.push(t.to_string());
                        } else if matches!(
                            s(o, "type"),
                            Some("image" | "image_url" | "input_image")
                        ) {
                            out.push("[image]".to_string());
                        }
                    }
                    _ => {}
                }
            }
            out.join("\n")
        }
        Some(Value::Object(o)) => s(o, "text").unwrap_or_default().to_string(),
        _ => String::new(),
    }
}

/// Shorthand for a `session` record.
pub(crate) fn session_rec(agent: &str, model: Option<String>, meta: Map<String, Value>) -> Record {
    Record::Session {
        agent: Some(agent.to_string()),
        model,
        mode: None,
        meta: if meta.is_empty() {
            None
        } else {
            Some(Box::new(meta))
        },
    }
}

/// 1-based line numbers of the elements of an array inside a single JSON
/// document: the root array (`key == None`) or the array under a top-level
/// key of the root object. Empty when the document has no such array. A tiny
/// tokenizer: it tracks strings, escapes and nesting, nothing else.
pub(crate) fn element_lines(bytes: &[u8], key: Option<&str>) -> Vec<u32> {
    // Lines are counted once, over the whole prefix, after the scan: counted
    // string by string (and newline by newline outside strings), they were
    // a quarter of reading a Gemini CLI recording.
    let starts = element_starts(bytes, key);
    let (mut line, mut from) = (1u32, 0usize);
    starts
        .into_iter()
        .map(|at| {
            line += memchr::memchr_iter(b'\n', &bytes[from..at]).count() as u32;
            from = at;
            line
        })
        .collect()
}

/// Whether a byte outside strings can change [`element_starts`]'s state
/// (whitespace and the bytes of numbers and literals cannot, once no
/// element is awaited).
const STRUCTURAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 6 {
        t[b"\"{}[],"[i] as usize] = true;
        i += 1;
    }
    t
};

/// Byte offsets where [`element_lines`]'s elements start.
fn element_starts(bytes: &[u8], key: Option<&str>) -> Vec<usize> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    // The last string seen at depth 1 (object keys of the root).
    let mut last_key: Option<(usize, usize)> = None;
    // Depth of the target array once entered.
    let mut target: Option<usize> = None;
    let mut expect_elem = false;
    let mut i = 0usize;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'"' {
            if expect_elem {
                out.push(i);
                expect_elem = false;
            }
            // A string: skip to its closing quote, a run at a time.
            let str_start = i + 1;
            let mut j = str_start;
            loop {
                let Some(k) = memchr::memchr2(b'"', b'\\', &bytes[j..]) else {
                    return out;
                };
                j += k;
                if bytes[j] == b'"' {
                    break;
                }
                // An escape: the byte after the backslash is skipped.
                j += 2;
                if j >= bytes.len() {
                    return out;
                }
            }
            if depth == 1 {
                last_key = Some((str_start, j));
            }
            i = j + 1;
            continue;
        }
        if expect_elem && !b.is_ascii_whitespace() && b != b']' {
            out.push(i);
            expect_elem = false;
        }
        match b {
            b'{' | b'[' => {
                depth += 1;
                if b == b'[' && target.is_none() {
                    let hit = match key {
                        None => depth == 1,
                        Some(k) => {
                            depth == 2
                                && last_key.is_some_and(|(a, z)| &bytes[a..z] == k.as_bytes())
                        }
                    };
                    if hit {
                        target = Some(depth);
                        expect_elem = true;
                    }
                }
            }
            b'}' | b']' => {
                if target == Some(depth) {
                    return out;
                }
                depth = depth.saturating_sub(1);
            }
            b',' if target == Some(depth) => expect_elem = true,
            _ => {}
        }
        if depth == 1 && b == b',' {
            last_key = None;
        }
        i += 1;
        if !expect_elem {
            while i < bytes.len() && !STRUCTURAL[bytes[i] as usize] {
                i += 1;
            }
        }
    }
    out
}

/// One step of a path inside a JSON document, for [`value_lines`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Seg<'a> {
    /// The value under this key of an object.
    Key(&'a str),
    /// Any element of an array.
    Index,
}

/// The 1-based lines where the values at `pattern` start inside one JSON
/// document, keyed by the array indices along the way (`[Key("samples"),
/// Index, Key("messages"), Index]` gives `[sample, message] -> line`). A
/// tiny tokenizer like [`element_lines`]: strings, escapes, nesting; keys
/// are compared as written.
pub(crate) fn value_lines(bytes: &[u8], pattern: &[Seg]) -> HashMap<Vec<usize>, u32> {
    enum Frame {
        Obj(Option<(usize, usize)>),
        Arr(usize),
    }
    let mut out = HashMap::new();
    let mut frames: Vec<Frame> = Vec::new();
    let mut line = 1u32;
    let mut in_str = false;
    let mut esc = false;
    let mut is_key = false;
    let mut str_start = 0usize;
    // A value may start here (after `[`, `,` in an array, `:`, or at the top).
    let mut expect_value = true;
    let matches = |frames: &[Frame]| -> Option<Vec<usize>> {
        if frames.len() != pattern.len() {
            return None;
        }
        let mut idx = Vec::new();
        for (f, seg) in frames.iter().zip(pattern) {
            match (f, seg) {
                (Frame::Obj(Some((a, z))), Seg::Key(k)) if &bytes[*a..*z] == k.as_bytes() => {}
                (Frame::Arr(i), Seg::Index) => idx.push(*i),
                _ => return None,
            }
        }
        Some(idx)
    };
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' {
            line += 1;
        }
        if in_str {
            if esc {
                esc = false;
            } else if b == b'\\' {
                esc = true;
            } else if b == b'"' {
                in_str = false;
                if is_key {
                    if let Some(Frame::Obj(k)) = frames.last_mut() {
                        *k = Some((str_start, i));
                    }
                }
            }
            continue;
        }
        if b.is_ascii_whitespace() {
            continue;
        }
        if expect_value && b != b']' && b != b'}' {
            expect_value = false;
            if let Some(idx) = matches(&frames) {
                out.insert(idx, line);
            }
        }
        match b {
            b'"' => {
                in_str = true;
                str_start = i + 1;
                is_key = matches!(frames.last(), Some(Frame::Obj(None)));
            }
            b'{' => frames.push(Frame::Obj(None)),
            b'[' => {
                frames.push(Frame::Arr(0));
                expect_value = true;
            }
            b'}' | b']' => {
                frames.pop();
            }
            b':' => expect_value = true,
            b',' => match frames.last_mut() {
                Some(Frame::Arr(n)) => {
                    *n += 1;
                    expect_value = true;
                }
                Some(Frame::Obj(k)) => *k = None,
                None => {}
            },
            _ => {}
        }
    }
    out
}

/// A JSON pointer (RFC 6901) from its reference tokens: `~` and `/` escaped.
pub(crate) fn pointer<T: std::fmt::Display>(tokens: &[T]) -> String {
    let mut p = String::new();
    for t in tokens {
        p.push('/');
        p.push_str(&t.to_string().replace('~', "~0").replace('/', "~1"));
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_keep_order_or_raw() {
        let m = args_from_str(r#"{"b":1,"a":2}"#);
        assert_eq!(m.keys().collect::<Vec<_>>(), vec!["b", "a"]);
        assert_eq!(
            args_from_str("[REDACTED len=3]")["_raw"],
            "[REDACTED len=3]"
        );
        assert_eq!(args_from_str("[1,2]")["_raw"], "[1,2]");
        assert!(args_from_value(None).is_empty());
    }

    /// `element_lines` as it was, a byte at a time: the reference.
    fn element_lines_by_byte(bytes: &[u8], key: Option<&str>) -> Vec<u32> {
        let mut out = Vec::new();
        let mut line = 1u32;
        let mut depth = 0usize;
        let mut in_str = false;
        let mut esc = false;
        let mut str_start = 0usize;
        // The last string seen at depth 1 (object keys of the root).
        let mut last_key: Option<(usize, usize)> = None;
        // Depth of the target array once entered.
        let mut target: Option<usize> = None;
        let mut expect_elem = false;
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'\n' {
                line += 1;
            }
            if in_str {
                if esc {
                    esc = false;
                } else if b == b'\\' {
                    esc = true;
                } else if b == b'"' {
                    in_str = false;
                    if depth == 1 {
                        last_key = Some((str_start, i));
                    }
                }
                continue;
            }
            if expect_elem && !b.is_ascii_whitespace() && b != b']' {
                out.push(line);
                expect_elem = false;
            }
            match b {
                b'"' => {
                    in_str = true;
                    str_start = i + 1;
                }
                b'{' | b'[' => {
                    depth += 1;
                    if b == b'[' && target.is_none() {
                        let hit = match key {
                            None => depth == 1,
                            Some(k) => {
                                depth == 2
                                    && last_key.is_some_and(|(a, z)| &bytes[a..z] == k.as_bytes())
                            }
                        };
                        if hit {
                            target = Some(depth);
                            expect_elem = true;
                        }
                    }
                }
                b'}' | b']' => {
                    if target == Some(depth) {
                        return out;
                    }
                    depth = depth.saturating_sub(1);
                }
                b',' if target == Some(depth) => expect_elem = true,
                b':' if depth == 1 => {}
                _ => {}
            }
            if depth == 1 && b == b',' {
                last_key = None;
            }
        }
        out
    }

    proptest::proptest! {
        /// Documents made of JSON fragments, broken ones included: the same
        /// lines as the byte-at-a-time version.
        #[test]
        fn element_lines_match_the_byte_at_a_time_version(
            parts in proptest::collection::vec(proptest::sample::select(vec![
                "{", "}", "[", "]", ",", ":", "\"", "\\", "\\\"", "\n", " ", "\"messages\"",
                "\"a\"", "1", "\"x\ny\"", "\"m\\\ne\"", "{\"messages\":[", "]}", "\"k\":",
            ]), 0..40),
            keyed in proptest::bool::ANY,
        ) {
            let doc: String = parts.concat();
            let key = keyed.then_some("messages");
            proptest::prop_assert_eq!(
                element_lines(doc.as_bytes(), key),
                element_lines_by_byte(doc.as_bytes(), key)
            );
        }
    }

    #[test]
    fn element_lines_of_root_key_and_root_array() {
        let doc = b"{\n \"a\": \"[x\",\n \"messages\": [\n  {\"k\": [1,2]},\n  {\"k\": \"]\"}\n ],\n \"z\": []\n}";
        assert_eq!(element_lines(doc, Some("messages")), vec![4, 5]);
        assert_eq!(
            element_lines(b"[\n{},\n{\"messages\":[1]}\n]", None),
            vec![2, 3]
        );
        assert!(element_lines(b"{\"x\":{\"messages\":[1]}}", Some("messages")).is_empty());
    }

    #[test]
    fn value_lines_of_nested_arrays() {
        let doc = b"{\n \"a\": \"[x\",\n \"samples\": [\n  {\"id\": 1, \"messages\": [\n   {\"k\": \"]\"},\n   {}\n  ]},\n  {\"messages\": [], \"x\": {\"messages\": [7]}}, {\"messages\": [\n 3]}\n ]\n}";
        let got = value_lines(
            doc,
            &[
                Seg::Key("samples"),
                Seg::Index,
                Seg::Key("messages"),
                Seg::Index,
            ],
        );
        let mut got: Vec<(Vec<usize>, u32)> = got.into_iter().collect();
        got.sort();
        assert_eq!(got, vec![(vec![0, 0], 5), (vec![0, 1], 6), (vec![2, 0], 9)]);
        let top = value_lines(doc, &[Seg::Key("samples"), Seg::Index]);
        assert_eq!(top[&vec![1]], 8);
    }

    /// `lines` as it was, by `split`: the reference.
    fn lines_by_split(
        bytes: &[u8],
    ) -> impl Iterator<Item = (u32, std::result::Result<&str, RecordError>)> {
        bytes
            .split(|b| *b == b'\n')
            .enumerate()
            .filter_map(|(i, raw)| {
                let mut raw = raw;
                if i == 0 && raw.starts_with(&[0xef, 0xbb, 0xbf]) {
                    raw = &raw[3..];
                }
                if let Some(r) = raw.strip_suffix(b"\r") {
                    raw = r;
                }
                if raw.iter().all(|b| b.is_ascii_whitespace()) {
                    return None;
                }
                let text = std::str::from_utf8(raw).map_err(RecordError::NotUtf8);
                Some(((i + 1) as u32, text))
            })
    }

    proptest::proptest! {
        /// Texts of lines, blank ones, CRs, a BOM and bytes that are not
        /// UTF-8: the same lines as the `split` version.
        #[test]
        fn lines_match_the_split_version(parts in proptest::collection::vec(
            proptest::sample::select(vec![
                &b"\n"[..], b"\r\n", b"\r", b" ", b"\t", b"{}", b"x", b"\xef\xbb\xbf", b"\xff", b"\xc3\xa9",
            ]), 0..30)) {
            let text: Vec<u8> = parts.concat();
            fn show((n, t): (u32, std::result::Result<&str, RecordError>)) -> (u32, String) {
                (n, t.map(str::to_string).unwrap_or_else(|e| format!("error: {e}")))
            }
            let fast: Vec<_> = lines(&text).map(show).collect();
            let slow: Vec<_> = lines_by_split(&text).map(show).collect();
            proptest::prop_assert_eq!(fast, slow);
        }
    }

    #[test]
    fn lines_skip_blank_and_strip_bom_cr() {
        let got: Vec<(u32, String)> = lines(b"\xef\xbb\xbf{}\r\n\n  \n{\"a\":1}")
            .map(|(n, t)| (n, t.unwrap().to_string()))
            .collect();
        assert_eq!(
            got,
            vec![(1, "{}".to_string()), (4, "{\"a\":1}".to_string())]
        );
    }

    #[test]
    fn pointers_escape_tilde_and_slash() {
        assert_eq!(pointer(&["messages", "3"]), "/messages/3");
        assert_eq!(pointer(&["a/b", "c~d"]), "/a~1b/c~0d");
        assert_eq!(pointer::<&str>(&[]), "");
    }

    #[test]
    fn text_of_parts() {
        let v: Value = serde_json::json!([{"type":"text","text":"a"},{"type":"image"},{"type":"text","text":"b"}]);
        assert_eq!(text_of(Some(&v)), "a\n[image]\nb");
    }
}
