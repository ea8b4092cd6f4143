//! `looptune diff`.

use super::*;
use crate::error::{Error, Result};
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::PathBuf;

/// `diff --format`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum DiffFormatArg {
    /// A summary for people: counts, one line per changed configuration, the gated one's sessions.
    Table,
    /// One JSON object per changed verdict (config, session, base, new, turns).
    Json,
}

pub(super) const DIFF_HELP: &str = "\
Examples:
  looptune diff reports/last-night reports/tonight
  looptune diff base/summary.json new/summary.json --format json
  looptune diff base new --markdown \"$GITHUB_STEP_SUMMARY\" \\
      --require 'new_false_positives==0' --require 'new_missed_loops==0'

A verdict is what detections.csv calls it: tp, early, fp, fn (missed loop), tn,
unlabeled (fired, no label), quiet (silent, no label), or absent (the session or
configuration is not in that run). Gates check the new run's chosen
configuration (its baseline, or --config): changed_verdicts,
new_false_positives, new_missed_loops, fixed_false_positives, new_catches.
`sweep --baseline DIR` runs the same comparison against a stored earlier run.

The table is a summary: configurations in both runs and in one only (a
warning when the grids differ), one line per changed configuration (the gated
one first, --limit N of them), then the gated configuration's changed
sessions (--verbose: every listed configuration's, all of them).

Only sessions both runs have, labelled alike, count in the gates: sessions
added, removed or relabelled change verdicts too, and are counted apart (a
night whose logs grew is not a regression). --junit writes one test case per
gate.

Exit codes: 0 ok, 1 a gate tripped, 2 bad input or usage, 3 the Markdown or
JUnit file could not be written.";

#[derive(Debug, Args)]
pub(super) struct DiffArgs {
    /// The earlier result: a folder a sweep wrote, or its summary.json.
    #[arg(value_name = "BASE")]
    pub(super) base: PathBuf,
    /// The new result.
    #[arg(value_name = "NEW")]
    pub(super) new: PathBuf,
    /// Output format.
    #[arg(help_heading = "Outputs", long, value_enum, default_value = "table")]
    pub(super) format: DiffFormatArg,
    /// Write the changes as Markdown (for a CI job summary page; under 64 KB; `-`: stdout).
    #[arg(help_heading = "Outputs", long, value_name = "FILE")]
    pub(super) markdown: Option<PathBuf>,
    /// Write JUnit XML: one test case per gate, failing when it trips (`-`: stdout).
    #[arg(help_heading = "Outputs", long, value_name = "FILE")]
    pub(super) junit: Option<PathBuf>,
    /// A gate on the changes, e.g. 'new_false_positives==0'. Repeatable, or comma-separated.
    #[arg(help_heading = "CI gates", long = "require", value_delimiter = ',', value_name = "GATE", value_parser = crate::score::gates::Gate::parse)]
    pub(super) requires: Vec<crate::score::gates::Gate>,
    /// The configuration gates check and the only one listed: an id, label
    /// or stock profile of the new run (default: its chosen configuration).
    #[arg(help_heading = "CI gates", long, value_name = "ID")]
    pub(super) config: Option<String>,
    #[command(flatten, next_help_heading = "Outputs")]
    pub(super) shape: DiffShapeArgs,
    /// Print one JSON object on stdout (what changed, the gated configuration,
    /// the gates and their verdicts) instead of the text summary, for scripts.
    #[arg(help_heading = "Outputs", long)]
    pub(super) json: bool,
}

/// How `looptune diff` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DiffFormat {
    /// A table for people.
    #[default]
    Table,
    /// One JSON object per changed verdict.
    Json,
}

/// Evaluate the diff gates on the new run's chosen configuration.
pub(crate) fn diff_gates(
    d: &crate::score::diff::Diff,
    gates: &[crate::score::gates::Gate],
) -> Vec<crate::score::gates::GateResult> {
    // The diff lists the new run's configurations first, in grid order.
    let chosen = d.configs.get(d.chosen);
    gates
        .iter()
        .filter(|g| g.is_diff())
        .map(|g| g.check_value(chosen.and_then(|c| c.count(&g.score))))
        .collect()
}

/// A warning on `err` when the two runs come from different grids.
pub(crate) fn warn_grids(d: &crate::score::diff::Diff, err: &mut dyn Write) {
    if let Some(w) = crate::report::diff_out::grid_warning(d) {
        writeln!(err, "warning: {}", crate::util::escape::terminal(&w)).ok();
    }
}

/// `looptune diff`: how to compare and what to print.
#[derive(Debug, Clone, Default)]
pub struct DiffRequest {
    /// Output format.
    pub format: DiffFormat,
    /// The configuration gates check and the only one listed (id, label or
    /// stock profile of the new run; default: its chosen configuration).
    pub config: Option<String>,
    /// How much is printed.
    pub shape: crate::report::diff_out::Shape,
}

/// `looptune diff BASE NEW`: what changed between two results of the same grid.
pub fn diff_command(
    base: &std::path::Path,
    new: &std::path::Path,
    req: &DiffRequest,
    ci: &CiArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32> {
    let format = req.format;
    let gates = &ci.requires;
    if let Some(g) = gates.iter().find(|g| !g.is_diff()) {
        return Err(Error::Usage(format!(
            "--require `{}`: diff gates take {}",
            g.score,
            crate::score::diff::DIFF_SCORES.join(", ")
        )));
    }
    let mut inputs = result_inputs(base);
    inputs.extend(result_inputs(new));
    check_output_folders(&ci.outputs(), None)?;
    guard_outputs(&ci.outputs(), None, &inputs)?;
    let base = crate::report::summary::load_checked(base)?;
    let mut new = crate::report::summary::load_checked(new)?;
    let mut shape = req.shape;
    if let Some(c) = &req.config {
        new.chosen = crate::result::find_config(&new.record.grid, c)?;
        // The new run's configurations come first in the diff, in grid order.
        shape.only = Some(new.chosen);
    }
    let d = crate::score::diff::diff(&base, &new)?;
    warn_grids(&d, err);
    let io = |e| Error::io("<stdout>", e);
    match format {
        _ if ci.json => {}
        DiffFormat::Json => crate::report::diff_out::json_lines(&d, out).map_err(io)?,
        DiffFormat::Table => crate::report::diff_out::table(&d, &shape, out).map_err(io)?,
    }
    let mut failed = false;
    let results = diff_gates(&d, gates);
    let texts = [
        (
            &ci.markdown,
            crate::report::diff_out::markdown(&d, &shape, &results),
        ),
        (
            &ci.junit,
            crate::report::ci::gates_junit("diff", &checked_name(&new), &results),
        ),
    ];
    for (path, text) in texts {
        let Some(p) = path else { continue };
        let written = if crate::util::outdir::is_stdout(p) {
            std::io::stdout().lock().write_all(text.as_bytes())
        } else {
            crate::report::write_atomic(p, text.as_bytes())
        };
        if let Err(e) = written {
            failed = true;
            writeln!(err, "error: failed to write {}: {e}", p.display()).ok();
        }
    }
    let code = finish_gates(&results, &checked_name(&new), failed, err);
    if ci.json {
        let mut brief = crate::report::brief::diff(&d, &shape, &results);
        if let serde_json::Value::Object(m) = &mut brief {
            m.insert("exit_code".into(), code.into());
        }
        print_json(&brief, out)?;
    }
    Ok(code)
}
