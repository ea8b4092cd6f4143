//! Importers: native agent logs (Claude Code, Codex CLI, Gemini CLI, OpenHands,
//! SWE-agent, chat-completions lists, ...) mapped onto canonical records.

use crate::error::{Error, Result};
use crate::input::FileSessions;

/// Input format names accepted by `--input-format` (besides `canonical` and `auto`).
pub const FORMATS: &[&str] = &[];

/// Whether a folder walk should pick up a file with this (lowercase, `.gz`-less) name.
pub fn walk_extension(_name: &str) -> bool {
    false
}

/// Import a file in a named format.
pub fn import_as(name: &str, display: &str, _stem: &str, _bytes: &[u8], _lenient: bool) -> Result<FileSessions> {
    Err(Error::File {
        path: display.to_string(),
        message: format!("unknown input format `{name}` (known: canonical)"),
    })
}

/// Detect a file's format by content and import it.
pub fn import_auto(display: &str, _stem: &str, _bytes: &[u8], _lenient: bool) -> Result<FileSessions> {
    Err(Error::File {
        path: display.to_string(),
        message: "not a recognised session log (expected canonical JSONL)".to_string(),
    })
}
