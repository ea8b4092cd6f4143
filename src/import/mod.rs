//! Importers: native agent logs (Claude Code, Codex CLI, Gemini CLI, OpenHands,
//! SWE-agent, chat-completions lists, OpenCode, Goose) mapped onto canonical
//! records; format detection by content; the canonical JSONL writer.
//!
//! Mappings follow `shared/research/formats.md`; one file per format.

mod claude_code;
mod codex;
mod common;
mod gemini_cli;
mod goose;
mod openai_chat;
mod opencode;
mod openhands;
mod redact;
mod swe_agent;
mod writer;

pub use common::UNRECOGNISED;
pub use redact::redact;
pub use writer::write_canonical;

use crate::error::{Error, Result};
use crate::input::FileSessions;
use common::Ctx;
use serde_json::{Map, Value};

/// Input format names accepted by `--input-format` (besides `canonical` and
/// `auto`). `mini-swe-agent` is another name for `openai-chat`.
pub const FORMATS: &[&str] = &[
    "claude-code",
    "codex",
    "gemini-cli",
    "openhands",
    "swe-agent",
    "openai-chat",
    "mini-swe-agent",
    "opencode",
    "goose",
];

/// Whether a folder walk should pick up a file with this (lowercase, `.gz`-less)
/// name, besides `*.jsonl`: single-JSON logs (`.json`, `.traj.json`) and
/// SWE-agent `.traj` files. Unrecognised picks are skipped with a note.
pub fn walk_extension(name: &str) -> bool {
    name.ends_with(".json") || name.ends_with(".traj")
}

/// Whether a JSON line that names a canonical record type is in fact a native
/// record (Claude Code and Gemini CLI JSONL reuse `"type":"user"`).
pub fn claims_line(m: &Map<String, Value>) -> bool {
    claude_code::sniff_line(m) || gemini_cli::claims_message(m)
}

/// The importer's name for a format name, or `None` if unknown.
fn resolve(name: &str) -> Option<&'static str> {
    match name {
        "mini-swe-agent" | "openai" | "chat" => Some("openai-chat"),
        other => FORMATS.iter().find(|f| **f == other).copied(),
    }
}

/// How many leading lines detection looks at (a redacted log may open with
/// broken lines).
const SNIFF_LINES: usize = 20;

/// Detect a file's native format by content.
pub fn detect(bytes: &[u8]) -> Option<&'static str> {
    if let Ok(doc) = common::parse_doc(bytes) {
        if let Some(f) = sniff_doc(&doc) {
            return Some(f);
        }
    }
    for (_, text) in common::lines(bytes).take(SNIFF_LINES) {
        let Ok(v) = text.and_then(|t| crate::input::parse_json(t).map_err(|e| e.to_string()))
        else {
            continue;
        };
        return sniff_line(&v);
    }
    None
}

fn sniff_doc(doc: &Value) -> Option<&'static str> {
    if gemini_cli::sniff_doc(doc) {
        Some("gemini-cli")
    } else if opencode::sniff_doc(doc) {
        Some("opencode")
    } else if goose::sniff_doc(doc) {
        Some("goose")
    } else if openhands::sniff_doc(doc) {
        Some("openhands")
    } else if swe_agent::sniff_doc(doc) {
        Some("swe-agent")
    } else if openai_chat::sniff_doc(doc) {
        Some("openai-chat")
    } else {
        None
    }
}

fn sniff_line(v: &Value) -> Option<&'static str> {
    if let Some(m) = v.as_object() {
        if claude_code::sniff_line(m) {
            return Some("claude-code");
        }
        if codex::sniff_line(m) {
            return Some("codex");
        }
        if gemini_cli::sniff_line(m) || gemini_cli::claims_message(m) {
            return Some("gemini-cli");
        }
        if openhands::sniff_line(m) {
            return Some("openhands");
        }
        if goose::sniff_line(m) {
            return Some("goose");
        }
    }
    openai_chat::sniff_line(v).then_some("openai-chat")
}

/// Whether the content fits format `fmt` (a whole document or any of the
/// leading lines), for `--input-format`.
fn fits(fmt: &str, bytes: &[u8]) -> bool {
    if let Ok(doc) = common::parse_doc(bytes) {
        let hit = match fmt {
            "gemini-cli" => gemini_cli::sniff_doc(&doc),
            "opencode" => opencode::sniff_doc(&doc),
            "goose" => goose::sniff_doc(&doc),
            "openhands" => openhands::sniff_doc(&doc),
            "swe-agent" => swe_agent::sniff_doc(&doc),
            "openai-chat" => openai_chat::sniff_doc(&doc),
            _ => false,
        };
        if hit {
            return true;
        }
    }
    common::lines(bytes).take(SNIFF_LINES).any(|(_, text)| {
        let Ok(v) = text.and_then(|t| crate::input::parse_json(t).map_err(|e| e.to_string()))
        else {
            return false;
        };
        let m = v.as_object();
        match fmt {
            "claude-code" => m.is_some_and(claude_code::sniff_line),
            "codex" => m.is_some_and(codex::sniff_line),
            "gemini-cli" => {
                m.is_some_and(|m| gemini_cli::sniff_line(m) || gemini_cli::claims_message(m))
            }
            "openhands" => m.is_some_and(openhands::sniff_line),
            "goose" => m.is_some_and(goose::sniff_line),
            "openai-chat" => openai_chat::sniff_line(&v),
            _ => false,
        }
    })
}

fn run(fmt: &str, ctx: &Ctx) -> Result<FileSessions> {
    match fmt {
        "claude-code" => claude_code::import(ctx),
        "codex" => codex::import(ctx),
        "gemini-cli" => gemini_cli::import(ctx),
        "openhands" => openhands::import(ctx),
        "swe-agent" => swe_agent::import(ctx),
        "openai-chat" => openai_chat::import(ctx),
        "opencode" => opencode::import(ctx),
        "goose" => goose::import(ctx),
        other => Err(ctx.file_err(format!("no importer for `{other}`"))),
    }
}

/// Import a file in a named format (`--input-format NAME`). A file whose
/// content does not fit the format is an [`Error::File`] starting with
/// [`UNRECOGNISED`].
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
            message: format!(
                "unknown input format `{name}` (known: canonical, auto, {})",
                FORMATS.join(", ")
            ),
        });
    };
    let ctx = Ctx {
        display,
        stem,
        bytes,
        lenient,
    };
    if !fits(fmt, bytes) {
        return Err(ctx.file_err(format!(
            "{UNRECOGNISED} of format `{fmt}` (expected {})",
            expected(fmt)
        )));
    }
    run(fmt, &ctx)
}

/// Detect a file's format by content and import it. A file no importer
/// recognises is an [`Error::File`] starting with [`UNRECOGNISED`] that names
/// the formats expected.
pub fn import_auto(display: &str, stem: &str, bytes: &[u8], lenient: bool) -> Result<FileSessions> {
    let ctx = Ctx {
        display,
        stem,
        bytes,
        lenient,
    };
    match detect(bytes) {
        Some(fmt) => run(fmt, &ctx),
        None => Err(ctx.file_err(format!(
            "{UNRECOGNISED} (expected canonical JSONL or one of: {})",
            FORMATS.join(", ")
        ))),
    }
}

fn expected(fmt: &str) -> &'static str {
    match fmt {
        "claude-code" => "Claude Code session JSONL: records with `type`, `uuid`, `sessionId`",
        "codex" => "Codex rollout JSONL: lines with `type` and `payload`",
        "gemini-cli" => {
            "a Gemini CLI ConversationRecord with `sessionId` and `messages`, or its JSONL form"
        }
        "openhands" => "an OpenHands event array or eval output lines with `history`",
        "swe-agent" => "a SWE-agent .traj object with `trajectory` or `history`",
        "openai-chat" => {
            "a chat-completions message list, an object with `messages`, or one per JSONL line"
        }
        "opencode" => "an `opencode export` object with `info` and `messages[{info, parts}]`",
        "goose" => {
            "a Goose session JSONL (metadata line, then messages with `role`, `created`, `content`)"
        }
        _ => "a known format",
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
    fn claude_user_lines_are_not_canonical() {
        let line = br#"{"parentUuid":null,"type":"user","uuid":"u","sessionId":"s","message":{"content":"hi"}}"#;
        assert!(!crate::input::looks_canonical(line));
        assert!(crate::input::looks_canonical(
            br#"{"type":"user","text":"hi"}"#
        ));
    }
}
