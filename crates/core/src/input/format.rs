//! What every input format shares: what one file contributes
//! ([`FileSessions`]), what a reader is given ([`Ctx`]), and the [`Format`]
//! trait each native format implements (registered once in
//! [`crate::input::import`]). No I/O here: a format that reads a path itself (a
//! folder of event files, a database) does its own in its module.

use crate::error::{Error, Result};
use crate::event::Event;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

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
    /// Lines skipped with `--lenient`.
    pub skipped: Vec<SkippedLine>,
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
    /// Which part of a session split over several files this file is (0 for
    /// a whole file; N for Harbor's `trajectory.cont-N.json`): files are
    /// merged in order of part, then of reading, so a continuation follows
    /// its parent whatever the paths' order.
    pub part: u32,
    /// The file that continues this file's first session (Harbor's
    /// `continued_trajectory_ref`), relative to this file's folder: its
    /// sessions join this file's, whatever ids it gives.
    pub continued_by: Option<String>,
}

/// A line (or native record) a lenient read skipped: where, and why.
#[derive(Debug, Clone)]
pub struct SkippedLine {
    /// Its 1-based line in the file; 0 when the reason names the place
    /// (an event file, a database row).
    pub line: u64,
    /// Why it was skipped.
    pub reason: SkipReason,
}

impl SkippedLine {
    /// A canonical line the reader could not read, at `line`.
    pub fn record(line: u64, error: crate::input::json::RecordError) -> SkippedLine {
        SkippedLine {
            line,
            reason: SkipReason::Record(Arc::new(error)),
        }
    }

    /// A native record an importer skipped, at `line`, in its words.
    pub fn native(line: u64, message: String) -> SkippedLine {
        SkippedLine {
            line,
            reason: SkipReason::Native(message),
        }
    }
}

/// Two skips are the same when they name the same line with the same text.
impl PartialEq for SkippedLine {
    fn eq(&self, other: &SkippedLine) -> bool {
        self.line == other.line && self.reason.to_string() == other.reason.to_string()
    }
}

/// Why a line was skipped; its text is what the warning and `summary.json` say.
#[derive(Debug, Clone)]
pub enum SkipReason {
    /// The canonical reader's typed error for the line.
    Record(Arc<crate::input::json::RecordError>),
    /// What an importer says of a native record (its own message, naming
    /// the field or the place).
    Native(String),
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkipReason::Record(e) => e.fmt(f),
            SkipReason::Native(m) => f.write_str(m),
        }
    }
}

/// The caps on decompressing a container's members (an Inspect AI `.eval`
/// ZIP), the same as on a gzip or zstd file: most bytes, and most times its
/// stored size past [`RATIO_FLOOR`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Most bytes a member (and all members together) may expand to.
    pub max_bytes: u64,
    /// Most times a member may expand past [`RATIO_FLOOR`].
    pub max_ratio: u64,
}

/// Decompressed size below which the ratio is not checked.
pub const RATIO_FLOOR: u64 = 16 << 20;

impl Default for Caps {
    /// 1 GiB and 100 times (`input::MAX_GZIP_BYTES`, `input::MAX_GZIP_RATIO`).
    fn default() -> Caps {
        Caps {
            max_bytes: 1 << 30,
            max_ratio: 100,
        }
    }
}

thread_local! {
    static CAPS: std::cell::Cell<Caps> = std::cell::Cell::new(Caps::default());
}

/// Run `f` with `caps` as the caps readers see ([`caps`]) on this thread.
pub(crate) fn with_caps<T>(caps: Caps, f: impl FnOnce() -> T) -> T {
    let before = CAPS.with(|c| c.replace(caps));
    let out = f();
    CAPS.with(|c| c.set(before));
    out
}

/// The caps in force on this thread (the defaults outside [`with_caps`]).
pub(crate) fn caps() -> Caps {
    CAPS.with(std::cell::Cell::get)
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
    /// The whole document, when detection has already parsed `bytes` as one
    /// JSON value (and this format's [`Format::sniff_doc`] claimed it): the
    /// reader takes it instead of parsing the bytes again.
    pub parsed: std::cell::Cell<Option<Value>>,
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
/// [`crate::input::import`]'s registry.
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
    /// File name endings a folder walk picks up for this format only when
    /// the file's first bytes say so ([`Format::sniff_head`]): names as
    /// common as `.log`, which a walk must not read whole.
    fn head_extensions(&self) -> &'static [&'static str] {
        &[]
    }
    /// Whether a file with one of [`Format::head_extensions`] is in this
    /// format, from its first bytes alone (at most
    /// `import::WALK_HEAD_BYTES`, uncompressed).
    fn sniff_head(&self, _head: &[u8]) -> bool {
        false
    }
    /// Whether a file's raw bytes are in this format, before any JSON is
    /// parsed: binary containers (a ZIP) and documents that are not strict
    /// JSON (bare `NaN`). Detection asks this first.
    fn sniff_bytes(&self, _bytes: &[u8]) -> bool {
        false
    }
    /// Whether a whole-file JSON document is in this format.
    fn sniff_doc(&self, _doc: &Value) -> bool {
        false
    }
    /// Whether one JSONL line is in this format.
    fn sniff_line(&self, _line: &Value) -> bool {
        false
    }
    /// Whether a file that is neither one JSON document nor JSON lines (the
    /// first records of a stream of pretty-printed documents) is in this
    /// format. Asked last, once every other sniff has said no.
    fn sniff_stream(&self, _bytes: &[u8]) -> bool {
        false
    }
    /// Whether a line that names a canonical record type (`"type":"user"`) is
    /// in fact this format's record, so the file is not read as canonical.
    fn claims_line(&self, _line: &Map<String, Value>) -> bool {
        false
    }
    /// Read a file (its bytes decompressed) into sessions.
    fn read(&self, ctx: &Ctx) -> Result<FileSessions>;
    /// Whether this format reads `path` itself rather than a file's bytes:
    /// a folder that holds one session in many files (`is_dir`), or a
    /// database (`head`: the file's first bytes; empty for a folder). A
    /// folder walk does not descend into a claimed folder.
    fn claims_path(&self, _path: &std::path::Path, _is_dir: bool, _head: &[u8]) -> bool {
        false
    }
    /// Read a path this format claims ([`Format::claims_path`]); `ctx.bytes`
    /// is empty. Errors name the path and the place inside it.
    fn read_path(&self, _path: &std::path::Path, ctx: &Ctx) -> Result<FileSessions> {
        Err(ctx.file_err(format!(
            "format `{}` reads file contents, not a path",
            self.name()
        )))
    }
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
