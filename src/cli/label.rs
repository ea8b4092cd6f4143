//! `looptune label`.

use super::*;
use crate::error::{Error, Result, EXIT_OK};
use crate::input::ReadOptions;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

pub(super) const LABEL_HELP: &str = "\
Keys: j/k or arrows next/previous turn, PageDown/PageUp ten turns, g/G first/last
turn, ]/[ next/previous turn with a detection, / TEXT Enter the next turn holding
TEXT, n/p next/previous session, l labels the session `loop` with onset = the
turn under the cursor, c labels it `clean`, e edits its note, s skips, u undoes,
? shows help, q quits. Every label and note is written to FILE at once.

Examples:
  looptune label runs/ --labels labels.csv        # created if missing
  looptune label --suggest runs/ > queue.csv      # the ranked queue, no terminal
  looptune label --labels labels.csv --export scout validation.csv   # for Inspect Scout";

#[derive(Debug, Args)]
pub(super) struct LabelArgs {
    #[command(flatten)]
    pub(super) input: InputArgs,
    /// Labels file to write (CSV or JSONL: session,label,onset_turn); other rows and columns are kept.
    #[arg(long, value_name = "FILE", required_unless_present = "suggest")]
    pub(super) labels: Option<PathBuf>,
    /// Print the ranked queue as CSV (session,file,reason, first detection turn per family) instead of opening the terminal.
    #[arg(long)]
    pub(super) suggest: bool,
    /// Write the --labels file in another tool's form and stop: `scout` (an Inspect Scout
    /// validation set, `id,target[,split]`; JSON, JSONL or YAML by FILE's extension).
    #[arg(long, num_args = 2, value_names = ["FORMAT", "FILE"], conflicts_with = "suggest", requires = "labels")]
    pub(super) export: Vec<String>,
    /// Worker threads for reading files and replaying (default: all cores).
    #[arg(long, short = 'j', value_name = "N", default_value_t = 0)]
    pub(super) jobs: usize,
}

/// `looptune label`.
#[derive(Debug, Clone, Default)]
pub struct LabelRequest {
    /// Inputs.
    pub paths: Vec<PathBuf>,
    /// How to read them.
    pub read: ReadOptions,
    /// The labels file to edit (with `suggest`: labelled sessions to leave out).
    pub labels: Option<PathBuf>,
    /// Write the ranked queue as CSV on `out` instead of opening the terminal.
    pub suggest: bool,
    /// Worker threads (`--jobs`: 0 = all cores), one pool for reading and the replay.
    pub jobs: usize,
}

/// `looptune label --labels FILE --export FORMAT OUT`: the labels file
/// written in another tool's form (`scout`: an Inspect Scout validation set;
/// loops lose their onset, which Scout has no place for). `OUT` is written
/// atomically and may be neither the labels file nor an input.
pub fn export_labels_command(
    labels: &std::path::Path,
    format: &str,
    file: &std::path::Path,
    inputs: &[PathBuf],
) -> Result<i32> {
    if format != "scout" {
        return Err(Error::Usage(format!(
            "--export: unknown format `{format}` (known: scout)"
        )));
    }
    let mut sources = inputs.to_vec();
    sources.push(labels.to_path_buf());
    guard_outputs(&[file.to_path_buf()], None, &sources)?;
    if std::fs::canonicalize(file).ok() == std::fs::canonicalize(labels).ok() && file.exists() {
        return Err(Error::Usage(format!(
            "--export would write over the labels file {}",
            labels.display()
        )));
    }
    let (set, splits) = crate::input::labels::scout::read_for_export(labels)?;
    let ext = file
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let text = crate::input::labels::scout::export(&set, &splits, &ext);
    crate::util::outdir::write_atomic(file, text.as_bytes()).map_err(|e| Error::io(file, e))?;
    let without = set
        .values()
        .filter(|l| l.is_loop && l.onset_turn.is_some())
        .count();
    eprintln!(
        "wrote {} label{} to {}{}",
        set.len(),
        if set.len() == 1 { "" } else { "s" },
        file.display(),
        if without > 0 {
            format!(
                " ({without} onset{} dropped: a validation set has none)",
                if without == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        }
    );
    Ok(EXIT_OK)
}

/// Run `looptune label`; `--suggest` writes to `out`. Returns the exit code.
pub fn label_command(req: &LabelRequest, out: &mut dyn Write) -> Result<i32> {
    use crate::label::{queue, store::LabelStore, tui::App};
    if !req.suggest && req.labels.is_none() {
        return Err(Error::Usage(
            "looptune label needs --labels FILE (created if missing), or --suggest".into(),
        ));
    }
    // The inputs are walked once, for the guard and for the read.
    let inputs = crate::input::InputList::walk(&req.paths, req.read.lenient);
    if !req.suggest {
        // Written to: it must not be an input (`--suggest` only reads it).
        if let Some(l) = &req.labels {
            guard_outputs(std::slice::from_ref(l), Some(&inputs), &[])?;
        }
        crate::label::check_terminal()?;
    }
    // The labels file is checked before any work.
    let store = req.labels.as_deref().map(LabelStore::open).transpose()?;
    let reading = crate::progress::bytes_for_stderr(false, "reading");
    let workers = crate::util::pool::Workers::new(req.jobs)?;
    let corpus = crate::input::read_files(&inputs.files()?, &req.read, &workers, reading.as_ref())?;
    reading.finish();
    warn_skipped(&corpus, &mut std::io::stderr());
    let progress = crate::progress::for_stderr(false, "ranking");
    let replayed = queue::replay_stock_with(&corpus, &workers, progress.as_ref())?;
    progress.finish();
    let ranked = queue::rank(&corpus, &replayed);
    if req.suggest {
        let file_labels = store.as_ref().map(|s| s.labels()).unwrap_or_default();
        let inline: std::collections::HashSet<&str> = corpus
            .sessions
            .iter()
            .filter(|s| s.inline_label.is_some())
            .map(|s| s.id.as_str())
            .collect();
        let labelled = |id: &str| file_labels.contains_key(id) || inline.contains(id);
        let csv = queue::suggest_csv(&corpus, &ranked, labelled);
        crate::label::write_suggest(&csv, out)?;
        return Ok(EXIT_OK);
    }
    let store = store.expect("checked above");
    let mut app = App::new(&corpus, &replayed, &ranked, store);
    crate::label::run_terminal(&mut app)?;
    let (done, total) = app.progress();
    eprintln!("{done} of {total} sessions labelled");
    Ok(EXIT_OK)
}
