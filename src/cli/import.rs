//! `looptune import`.

use super::*;
use crate::error::{Error, Result, EXIT_OK};
use crate::input::ReadOptions;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

pub(super) const IMPORT_HELP: &str = "\
Examples:
  looptune import ~/.claude/projects -o claude.jsonl
  looptune import --redact ~/.codex/sessions -o codex.jsonl.gz   # masked, compressed
  looptune import --input-format gemini-cli chats/ -o gemini.jsonl
  cat session.json | looptune import - -o session.jsonl

Exit codes:
  0  ok: the file was written
  2  bad input, configuration or usage (FILE:LINE: what is wrong); nothing written";

#[derive(Debug, Args)]
pub(super) struct ImportArgs {
    #[command(flatten)]
    pub(super) input: InputArgs,
    /// Output file (canonical JSONL; `.gz` compresses; `-`: stdout). Never an input. `-o`/`--out` is the output in every command.
    #[arg(long, short = 'o', visible_alias = "out", value_name = "OUT.jsonl")]
    pub(super) output: PathBuf,
    /// Mask common credential patterns (API keys, bearer tokens, private keys) in text and arguments.
    #[arg(long)]
    pub(super) redact: bool,
}

impl ImportArgs {
    /// The request these arguments make.
    pub(super) fn request(&self) -> ImportRequest {
        ImportRequest {
            paths: self.input.paths.clone(),
            read: self.input.read_options(false),
            output: self.output.clone(),
            redact: self.redact,
            allow_empty: self.input.allow_empty,
        }
    }
}

/// `looptune import`.
#[derive(Debug, Clone, Default)]
pub struct ImportRequest {
    /// Inputs.
    pub paths: Vec<PathBuf>,
    /// How to read them.
    pub read: ReadOptions,
    /// The canonical JSONL file to write (`.gz` compresses; `-`: stdout).
    pub output: PathBuf,
    /// Mask credentials (`--redact`).
    pub redact: bool,
    /// Accept an input with no session instead of exit 2.
    pub allow_empty: bool,
}

/// `looptune import`: native logs to one canonical JSONL file.
pub fn import_command(req: &ImportRequest, err: &mut dyn Write) -> Result<i32> {
    let (paths, read, output) = (&req.paths, &req.read, req.output.as_path());
    // Made first, so SIGINT/SIGTERM from here on exit 130/143 and remove
    // what was staged (the file is written in a staging folder, moved in at
    // the end): no half-written temporary file is left in the folder.
    let mut set = crate::util::outdir::OutputSet::new();
    // The inputs are walked once, for the guard and for the read.
    let inputs = crate::input::InputList::walk(paths, read.lenient);
    check_output_folders(&[output.to_path_buf()], None)?;
    guard_outputs(&[output.to_path_buf()], Some(&inputs), &[])?;
    let corpus = crate::input::read_files(
        &inputs.files()?,
        read,
        &crate::util::pool::Workers::new(0)?,
        &crate::util::progress::NoProgress,
    )?;
    warn_skipped(&corpus, err);
    require_sessions(&corpus, corpus.sessions.len(), paths, req.allow_empty)?;
    let mut buf: Vec<u8> = Vec::new();
    crate::input::import::write_canonical(&corpus, &mut buf, req.redact)
        .map_err(|e| Error::io(output, e))?;
    let bytes = if output.extension().is_some_and(|e| e == "gz") {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&buf).map_err(|e| Error::io(output, e))?;
        enc.finish().map_err(|e| Error::io(output, e))?
    } else {
        buf
    };
    if crate::util::outdir::is_stdout(output) {
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(&bytes)
            .and_then(|_| stdout.flush())
            .map_err(|e| Error::io("<stdout>", e))?;
    } else {
        set.write(output, &bytes)?;
        set.commit()?;
    }
    let whole = corpus.sessions.iter().filter(|s| s.whole_messages).count();
    writeln!(
        err,
        "wrote {} ({}) to {}{}",
        crate::report::text::plural(corpus.sessions.len(), "session", "sessions"),
        crate::report::text::plural(corpus.events(), "event", "events"),
        if crate::util::outdir::is_stdout(output) {
            "standard output".to_string()
        } else {
            output.display().to_string()
        },
        if whole > 0 {
            format!("; {whole} came from whole messages, not stream chunks")
        } else {
            String::new()
        }
    )
    .ok();
    Ok(EXIT_OK)
}
