//! What every input format shares: what one file contributes
//! ([`FileSessions`]), what a reader is given ([`Ctx`]), and the [`Format`]
//! trait each native format implements (registered once in
//! [`crate::import`]). No I/O here.

use crate::error::{Error, Result};
use crate::event::Event;
use serde_json::{Map, Value};
use std::collections::HashMap;

pub use crate::error::UNRECOGNISED;

/// What one file contributes: sessions with their records, in file order.
#[derive(Debug, Default, Clone)]
pub struct FileSessions {
    /// Format name.
    pub format: String,
    /// `(session id, records)` in order of first appearance, each record as
    /// an [`Event`] with its origin in this file (`Origin::file` is set when
    /// the corpus is merged) and its turn not yet numbered.
    pub sessions: Vec<(String, Vec<Event>)>,
    /// Lines skipped with `--lenient`: `(line, message)`.
    pub skipped: Vec<(u64, String)>,
    /// Records of unknown types.
    pub unknown: u64,
    /// Content came from whole messages rather than stream chunks.
    pub whole_messages: bool,
    /// Extra metadata per session (e.g. a subagent's parent), merged into the session.
    pub session_meta: HashMap<String, Map<String, Value>>,
    /// Per session, one de-duplication key per record (parallel to its records),
    /// e.g. the Claude Code `uuid` of the native record it came from. When
    /// several native files give the same session id, they form one session
    /// only if their keys overlap (a resumed session copying earlier records),
    /// and records whose key an earlier file already gave are dropped. Empty
    /// for formats without such keys.
    pub record_keys: HashMap<String, Vec<Option<String>>>,
}

/// What a reader is reading.
pub struct Ctx<'a> {
    /// File as given, for messages.
    pub display: &'a str,
    /// File stem: the default session id.
    pub stem: &'a str,
    /// The file's (decompressed) bytes.
    pub bytes: &'a [u8],
    /// Skip and count bad lines instead of failing.
    pub lenient: bool,
}

impl Ctx<'_> {
    /// A whole-file error.
    pub fn file_err(&self, message: impl Into<String>) -> Error {
        Error::File {
            path: self.display.to_string(),
            message: message.into(),
        }
    }
}

/// A native log format: its names, how to recognise it by content, and how to
/// read it. Adding a format is one file implementing this and one line in
/// [`crate::import`]'s registry.
pub trait Format: Sync {
    /// Name for `--input-format` and in messages (`claude-code`).
    fn name(&self) -> &'static str;
    /// Other names `--input-format` accepts.
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    /// What a file of this format looks like, for the error on a file that
    /// does not fit a forced `--input-format`.
    fn expected(&self) -> &'static str;
    /// File name endings a folder walk picks up for this format (lowercase,
    /// after any `.gz`).
    fn extensions(&self) -> &'static [&'static str] {
        &[".jsonl", ".json"]
    }
    /// Whether a whole-file JSON document is in this format.
    fn sniff_doc(&self, _doc: &Value) -> bool {
        false
    }
    /// Whether one JSONL line is in this format.
    fn sniff_line(&self, _line: &Value) -> bool {
        false
    }
    /// Whether a line that names a canonical record type (`"type":"user"`) is
    /// in fact this format's record, so the file is not read as canonical.
    fn claims_line(&self, _line: &Map<String, Value>) -> bool {
        false
    }
    /// Read a file (its bytes decompressed) into sessions.
    fn read(&self, ctx: &Ctx) -> Result<FileSessions>;
}

/// Whether `bytes` look like JSON Lines: its first two non-blank lines are
/// JSON objects. A walked file no reader recognises stops the run when it
/// does (a log format that changed must not pass unnoticed), unless
/// `--lenient`.
pub fn looks_like_json_lines(bytes: &[u8]) -> bool {
    let mut lines = bytes
        .split(|b| *b == b'\n')
        .map(|raw| {
            raw.strip_prefix(b"\xef\xbb\xbf")
                .unwrap_or(raw)
                .trim_ascii()
        })
        .filter(|l| !l.is_empty());
    let object = |l: Option<&[u8]>| {
        l.is_some_and(|l| {
            matches!(
                serde_json::from_slice::<serde_json::Value>(l),
                Ok(serde_json::Value::Object(_))
            )
        })
    };
    object(lines.next()) && object(lines.next())
}
