//! `looptune merge`.

use super::*;
use crate::error::Result;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

pub(super) const MERGE_HELP: &str = "\
Examples:
  # four machines, one shard each (the shard of a session is a stable hash of its id)
  looptune sweep logs/ --labels labels.csv --shard 2/4 --out part-2
  # then, on any machine, with the four folders (or their summary.json files)
  looptune merge part-1 part-2 part-3 part-4 --out reports/nightly

The merged outputs are byte-identical to one machine's run over the same
sessions (wall times aside). Parts must come from the same grid, options,
inputs and labels, and every shard must be given exactly once.

Exit codes: 0 ok, 1 a gate tripped, 2 bad input or usage, 3 a report could not
be written (nothing of the set was replaced).";

#[derive(Debug, Args)]
pub(super) struct MergeArgs {
    /// Folders written by `sweep --shard I/N` (or their summary.json files).
    #[arg(required = true, value_name = "PARTS")]
    pub(super) parts: Vec<PathBuf>,
    /// Output folder for the merged outputs.
    #[arg(help_heading = "Outputs", long, short = 'o', value_name = "DIR")]
    pub(super) out: PathBuf,
    #[command(flatten)]
    pub(super) files: OutputOpts,
    /// Write a short Markdown summary (for a CI job summary page; `-`: stdout).
    #[arg(help_heading = "Outputs", long, value_name = "FILE")]
    pub(super) markdown: Option<PathBuf>,
    /// Write JUnit XML: one test case per gate, failing when it trips (`-`: stdout).
    #[arg(help_heading = "Outputs", long, value_name = "FILE")]
    pub(super) junit: Option<PathBuf>,
    /// JUnit also gets one test case per labelled session, failing on a
    /// false positive or a missed loop of the chosen configuration.
    #[arg(help_heading = "Outputs", long, requires = "junit")]
    pub(super) junit_sessions: bool,
    /// A gate on the chosen configuration, e.g. 'recall>=0.9'. Repeatable, or comma-separated.
    #[arg(help_heading = "CI gates", long = "require", value_delimiter = ',', value_name = "GATE", value_parser = crate::score::gates::Gate::parse)]
    pub(super) requires: Vec<crate::score::gates::Gate>,
    /// Print one JSON object on stdout (baseline, recommendation, gates and
    /// their verdicts) instead of the text summary, for scripts.
    #[arg(help_heading = "Outputs", long)]
    pub(super) json: bool,
    /// No progress bar (as `sweep -q`).
    #[arg(long, short = 'q')]
    pub(super) quiet: bool,
}

/// `looptune merge`: combine the results of shards into the full outputs.
pub fn merge_command(
    parts: &[PathBuf],
    out_dir: &std::path::Path,
    ci: &CiArgs,
    options: &crate::report::outputs::OutputOptions,
    quiet: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32> {
    let started = std::time::Instant::now();
    let gates = &ci.requires;
    check_out_dir(out_dir)?;
    // Each part checked as `report` checks a result (its scores against its
    // record), so a hand-edited shard is refused, not merged.
    let records: Vec<crate::result::SweepRecord> = parts
        .iter()
        .map(|p| crate::report::summary::load_checked(p).map(|r| r.record))
        .collect::<Result<_>>()?;
    let list = crate::report::outputs::Outputs::standard(options);
    let inputs: Vec<PathBuf> = parts.iter().flat_map(|p| result_inputs(p)).collect();
    let mut outputs = list.paths(out_dir);
    outputs.extend(ci.outputs());
    check_output_folders(&ci.outputs(), Some(out_dir))?;
    guard_outputs(&outputs, None, &inputs)?;
    let record = crate::result::SweepRecord::merge(records)?;
    let labelled = record.sessions.iter().filter(|s| s.label.is_some()).count();
    for g in gates {
        g.needs_labels(labelled)?;
    }
    // One pool, every core, for the analysis and the writing.
    let workers = crate::util::pool::Workers::new(0)?;
    let result = workers.install(|| crate::score::analyze(record))?;
    let writing = crate::progress::for_stderr(quiet, "writing outputs");
    let (code, brief) = finish_sweep(
        &result,
        &list,
        &workers,
        out_dir,
        ci,
        gates,
        started,
        writing.as_ref(),
        out,
        err,
    )?;
    if let Some(b) = &brief {
        print_json(b, out)?;
    }
    Ok(code)
}
