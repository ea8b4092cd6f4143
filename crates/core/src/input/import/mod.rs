//! Importers: native agent logs (Claude Code, Codex CLI, Gemini CLI, OpenHands,
//! SWE-agent, chat-completions lists, OpenCode, Goose, Harbor ATIF, Inspect
//! AI) mapped onto canonical
//! records; format detection by content; the canonical JSONL writer.
//!
//! Mappings follow `shared/research/formats.md`; one file per format.

mod atif;
mod claude_code;
mod codex;
mod common;
mod gemini_cli;
mod gemini_telemetry;
mod goose;
mod goose_db;
mod inspect_ai;
mod openai_chat;
mod opencode;
mod opencode_db;
mod openhands;
mod openhands_v1;
mod redact;
mod sqlite;
mod swe_agent;
mod typed;
mod writer;

pub use crate::input::format::UNRECOGNISED;
pub use redact::redact;
pub(crate) use sqlite::trouble as sqlite_trouble;
pub use writer::write_canonical;

use crate::error::{Error, Result};
use crate::input::format::{Ctx, FileSessions, Format};
use serde_json::{Map, Value};

/// Every native format, once. Detection tries them in this order and the
/// first that recognises a file wins (whole documents first, then the
/// leading lines), so a format whose documents another's sniff would also
/// accept comes before it (Goose sessions before chat-completions lists).
const REGISTRY: &[&dyn Format] = &[
    &claude_code::ClaudeCode,
    &codex::Codex,
    &gemini_cli::GeminiCli,
    &opencode::OpenCode,
    &goose::Goose,
    &openhands::OpenHands,
    &swe_agent::SweAgent,
    &openai_chat::OpenAiChat,
    &atif::Atif,
    // Recognised by bytes (a ZIP, a `NaN`-tolerant EvalLog), before any JSON sniff.
    &inspect_ai::InspectAi,
    &openhands_v1::OpenHandsV1,
    &opencode_db::OpenCodeDb,
    &goose_db::GooseDb,
    &gemini_telemetry::GeminiTelemetry,
];

/// Input format names accepted by `--input-format` (besides `canonical` and
/// `auto`), aliases after their format's name.
pub fn format_names() -> Vec<&'static str> {
    REGISTRY
        .iter()
        .flat_map(|f| std::iter::once(f.name()).chain(f.aliases().iter().copied()))
        .collect()
}

/// Whether a folder walk should pick up a file with this (lowercase, `.gz`-less)
/// name: an extension some format reads. Unrecognised picks are skipped with a note.
pub fn walk_extension(name: &str) -> bool {
    REGISTRY
        .iter()
        .any(|f| f.extensions().iter().any(|e| name.ends_with(e)))
}

/// How many leading bytes of a file with a [`Format::head_extensions`] name a
/// walk reads to decide whether to pick it up.
pub const WALK_HEAD_BYTES: usize = 64 << 10;

/// Whether a folder walk should look at the first bytes of a file with this
/// (lowercase) name: an ending some format picks up only by
/// content ([`walk_head_claims`]).
pub fn walk_head_extension(name: &str) -> bool {
    REGISTRY
        .iter()
        .any(|f| f.head_extensions().iter().any(|e| name.ends_with(e)))
}

/// Whether a format whose [`Format::head_extensions`] match this regular
/// file's name claims it by its first [`WALK_HEAD_BYTES`] bytes (the rest
/// is not read). A file that cannot be opened is not claimed: a walk never
/// stopped on such names before.
pub fn walk_head_claims(path: &std::path::Path) -> bool {
    use std::io::Read;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let wanting: Vec<&dyn Format> = REGISTRY
        .iter()
        .copied()
        .filter(|f| f.head_extensions().iter().any(|e| name.ends_with(e)))
        .collect();
    if wanting.is_empty() {
        return false;
    }
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = Vec::with_capacity(WALK_HEAD_BYTES);
    if file
        .take(WALK_HEAD_BYTES as u64)
        .read_to_end(&mut head)
        .is_err()
    {
        return false;
    }
    wanting.iter().any(|f| f.sniff_head(&head))
}

/// Whether a JSON line that names a canonical record type is in fact a native
/// record (Claude Code and Gemini CLI JSONL reuse `"type":"user"`).
pub fn claims_line(m: &Map<String, Value>) -> bool {
    REGISTRY.iter().any(|f| f.claims_line(m))
}

/// The input format every file is read as (`--input-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InputFormat {
    /// Detect each file's format by its content.
    #[default]
    Auto,
    /// Canonical JSONL.
    Canonical,
    /// A native format, by its name in the registry (aliases resolved).
    Native(&'static str),
}

/// An `--input-format` name no reader has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown input format `{0}` (known: canonical, auto, {names})", names = format_names().join(", "))]
pub struct UnknownFormat(pub String);

impl std::str::FromStr for InputFormat {
    type Err = UnknownFormat;

    /// `auto`, `canonical`, or a native format's name or alias.
    fn from_str(name: &str) -> std::result::Result<InputFormat, UnknownFormat> {
        match name {
            "auto" => Ok(InputFormat::Auto),
            "canonical" => Ok(InputFormat::Canonical),
            _ => resolve(name)
                .map(|f| InputFormat::Native(f.name()))
                .ok_or_else(|| UnknownFormat(name.to_string())),
        }
    }
}

/// The format of a name or alias, or `None` if unknown.
fn resolve(name: &str) -> Option<&'static dyn Format> {
    REGISTRY
        .iter()
        .copied()
        .find(|f| f.name() == name || f.aliases().contains(&name))
}

/// How many leading lines detection looks at (a redacted log may open with
/// broken lines).
const SNIFF_LINES: usize = 20;

/// The first leading line that is JSON, for detection.
fn first_json_line(bytes: &[u8]) -> Option<Value> {
    common::lines(bytes)
        .take(SNIFF_LINES)
        .find_map(|(_, text)| crate::input::json::parse_json(text.ok()?).ok())
}

/// Detect a file's native format by content: the first format that claims
/// the whole document, else the first that claims its first JSON line.
pub fn detect(bytes: &[u8]) -> Option<&'static str> {
    detect_format(bytes).map(|f| f.name())
}

fn detect_format(bytes: &[u8]) -> Option<&'static dyn Format> {
    detect_parsed(bytes).0
}

/// [`detect_format`], with the whole document when a format claimed the
/// file by it (its reader takes it through [`Ctx::parsed`]).
fn detect_parsed(bytes: &[u8]) -> (Option<&'static dyn Format>, Option<Value>) {
    if let Some(f) = REGISTRY.iter().find(|f| f.sniff_bytes(bytes)) {
        return (Some(*f), None);
    }
    if let Ok(doc) = common::parse_doc(bytes) {
        if let Some(f) = REGISTRY.iter().find(|f| f.sniff_doc(&doc)) {
            return (Some(*f), Some(doc));
        }
    }
    (detect_by_lines(bytes), None)
}

/// Detection by the leading lines, then as a stream of documents.
fn detect_by_lines(bytes: &[u8]) -> Option<&'static dyn Format> {
    if let Some(line) = first_json_line(bytes) {
        if let Some(f) = REGISTRY.iter().copied().find(|f| f.sniff_line(&line)) {
            return Some(f);
        }
    }
    REGISTRY.iter().copied().find(|f| f.sniff_stream(bytes))
}

/// Whether the content fits format `fmt` (a whole document or any of the
/// leading lines), for `--input-format`.
fn fits(fmt: &dyn Format, bytes: &[u8]) -> bool {
    if fmt.sniff_bytes(bytes) {
        return true;
    }
    if let Ok(doc) = common::parse_doc(bytes) {
        if fmt.sniff_doc(&doc) {
            return true;
        }
    }
    common::lines(bytes).take(SNIFF_LINES).any(|(_, text)| {
        text.ok()
            .and_then(|t| crate::input::json::parse_json(t).ok())
            .is_some_and(|v| fmt.sniff_line(&v))
    }) || fmt.sniff_stream(bytes)
}

/// The format that reads `path` itself (a folder of event files, a
/// database), if any: `is_dir` for a folder, `head` the first bytes of a
/// file. With `--input-format NAME`, only that format may claim it; with
/// `canonical`, none.
pub fn path_format(
    path: &std::path::Path,
    is_dir: bool,
    head: &[u8],
    forced: InputFormat,
) -> Option<&'static dyn Format> {
    let claims = |f: &&'static dyn Format| f.claims_path(path, is_dir, head);
    match forced {
        InputFormat::Auto => REGISTRY.iter().copied().find(claims),
        InputFormat::Native(name) => resolve(name).filter(claims),
        InputFormat::Canonical => None,
    }
}

/// Read a path its format claims ([`path_format`]).
pub fn import_path(
    fmt: &dyn Format,
    path: &std::path::Path,
    display: &str,
    stem: &str,
    lenient: bool,
) -> Result<FileSessions> {
    let ctx = Ctx {
        display,
        stem,
        bytes: &[],
        lenient,
        parsed: Default::default(),
    };
    fmt.read_path(path, &ctx)
}

/// Import a file in a named format (`--input-format NAME`). A file whose
/// content does not fit the format is an [`Error::Unrecognised`].
pub fn import_as(
    name: &str,
    display: &str,
    stem: &str,
    bytes: &[u8],
    lenient: bool,
) -> Result<FileSessions> {
    let Some(fmt) = resolve(name) else {
        return Err(Error::File {
            path: display.to_string(),
            message: UnknownFormat(name.to_string()).to_string(),
        });
    };
    let ctx = Ctx {
        display,
        stem,
        bytes,
        lenient,
        parsed: Default::default(),
    };
    if !fits(fmt, bytes) {
        return Err(Error::Unrecognised {
            path: display.to_string(),
            detail: format!(" of format `{}` (expected {})", fmt.name(), fmt.expected()),
            json_lines: crate::input::format::looks_like_json_lines(bytes),
        });
    }
    fmt.read(&ctx)
}

/// Detect a file's format by content and import it. A file no importer
/// recognises is an [`Error::Unrecognised`] that names
/// the formats expected.
pub fn import_auto(display: &str, stem: &str, bytes: &[u8], lenient: bool) -> Result<FileSessions> {
    let ctx = Ctx {
        display,
        stem,
        bytes,
        lenient,
        parsed: Default::default(),
    };
    let (fmt, doc) = detect_parsed(bytes);
    ctx.parsed.set(doc);
    match fmt {
        Some(fmt) => fmt.read(&ctx),
        None => Err(Error::Unrecognised {
            path: display.to_string(),
            detail: format!(
                " (expected canonical JSONL or one of: {})",
                format_names().join(", ")
            ),
            json_lines: crate::input::format::looks_like_json_lines(bytes),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_by_content() {
        assert_eq!(
            detect(br#"{"type":"session_meta","payload":{"id":"x"}}"#),
            Some("codex")
        );
        assert_eq!(
            detect(b"{\"parentUuid\":null,\"type\":\"user\",\"uuid\":\"u\",\"sessionId\":\"s\",\"message\":{}}\n{broken\n"),
            Some("claude-code")
        );
        assert_eq!(
            detect(br#"[{"role":"user","content":"x"}]"#),
            Some("openai-chat")
        );
        assert_eq!(
            detect(br#"{"sessionId":"s","projectHash":"h","messages":[]}"#),
            Some("gemini-cli")
        );
        assert_eq!(detect(br#"{"total": 3, "resolved": []}"#), None);
    }

    #[test]
    fn unknown_and_mismatched_formats_name_the_file() {
        let e = import_as("nope", "f.json", "f", b"{}", false).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("f.json: unknown input format `nope`"));
        let e = import_as("codex", "f.json", "f", b"{}", false).unwrap_err();
        assert!(e.to_string().contains(UNRECOGNISED), "{e}");
        let e = import_auto("f.json", "f", b"{\"a\":1}", false).unwrap_err();
        assert!(e.to_string().contains("claude-code"), "{e}");
    }

    #[test]
    fn input_formats_resolve_aliases_to_the_registry_name() {
        assert_eq!("auto".parse(), Ok(InputFormat::Auto));
        assert_eq!("canonical".parse(), Ok(InputFormat::Canonical));
        assert_eq!(
            "mini-swe-agent".parse(),
            Ok(InputFormat::Native("openai-chat"))
        );
        let e = "nope".parse::<InputFormat>().unwrap_err().to_string();
        assert!(
            e.starts_with("unknown input format `nope` (known: canonical, auto, claude-code"),
            "{e}"
        );
    }

    /// Every format is listed once, by unique names, and found by each of them.
    #[test]
    fn registry_names_are_unique_and_resolve() {
        let names = format_names();
        let unique: std::collections::HashSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        for f in REGISTRY {
            assert!(!f.expected().is_empty());
            for n in std::iter::once(f.name()).chain(f.aliases().iter().copied()) {
                assert_eq!(resolve(n).map(|g| g.name()), Some(f.name()));
            }
        }
        assert_eq!(
            resolve("mini-swe-agent").map(|f| f.name()),
            Some("openai-chat")
        );
        assert!(walk_extension("x.traj") && walk_extension("x.json") && !walk_extension("x.txt"));
    }

    /// A whole document detection parsed is read as the bytes would be: the
    /// same sessions as a reader that parses them itself.
    #[test]
    fn a_document_detection_parsed_reads_as_its_bytes() {
        let docs: [&[u8]; 3] = [
            b"{\"sessionId\":\"s\",\"projectHash\":\"h\",\"messages\":[\n{\"id\":\"m1\",\"type\":\"user\",\"content\":\"go\"},\n{\"id\":\"m2\",\"type\":\"gemini\",\"content\":\"ok\",\"model\":\"g\",\"toolCalls\":[{\"id\":\"c\",\"name\":\"ls\",\"args\":{\"p\":1},\"status\":\"success\"}]}]}",
            b"[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"content\":\"y\"}]",
            b"{\"working_dir\":\"/w\",\"messages\":[{\"role\":\"user\",\"created\":1,\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}]}",
        ];
        for bytes in docs {
            let fmt = detect_format(bytes).expect("a format");
            let again = Ctx {
                display: "d.json",
                stem: "d",
                bytes,
                lenient: false,
                parsed: Default::default(),
            };
            let (auto, own) = (import_auto("d.json", "d", bytes, false), fmt.read(&again));
            assert_eq!(format!("{auto:?}"), format!("{own:?}"), "{}", fmt.name());
            assert!(detect_parsed(bytes).1.is_some(), "{}", fmt.name());
        }
    }

    /// Registry order decides between formats whose sniffs overlap: a Goose
    /// session object is also a list of role messages to the chat sniff.
    #[test]
    fn goose_documents_are_goose_not_chat() {
        let doc = br#"{"working_dir":"/w","messages":[{"role":"user","created":1,"content":[{"type":"text","text":"hi"}]}]}"#;
        assert!(openai_chat::OpenAiChat.sniff_doc(&common::parse_doc(doc).unwrap()));
        assert_eq!(detect(doc), Some("goose"));
    }
}
