//! `looptune report DIR`.

use super::*;
use crate::error::{Error, Result, EXIT_OK};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

pub(super) const REPORT_HELP: &str = "\
Examples:
  looptune report reports/sweep-default/            # rewrite every output from summary.json
  looptune report reports/sweep-default/ --parquet  # and add the Parquet files

Exit codes:
  0  ok: every output written
  2  bad input (the folder lacks summary.json, or it is damaged or from another version)
  3  the report could not be written (nothing replaced)";

#[derive(Debug, Args)]
pub(super) struct ReportArgs {
    /// A folder written by `looptune sweep`.
    #[arg(value_name = "DIR")]
    pub(super) dir: PathBuf,
    #[command(flatten)]
    pub(super) files: OutputOpts,
}

/// `looptune report DIR`: re-render every output of a sweep folder from the
/// result saved in its `summary.json` (load the record, analyze, write the
/// list as a sweep does: staged, replaced whole or not at all).
pub fn report_command(
    dir: &std::path::Path,
    options: &crate::report::outputs::OutputOptions,
    err: &mut dyn Write,
) -> Result<i32> {
    report_outputs(
        dir,
        &crate::report::outputs::Outputs::standard(options),
        err,
    )
}

/// `looptune report DIR` with the outputs `list`: load the record from
/// `DIR/summary.json`, analyze it, and write every output as a sweep does.
/// No output may be any other file of the folder (the `summary.json` it
/// reads above all): a link there is refused before anything is written.
pub fn report_outputs(
    dir: &std::path::Path,
    list: &crate::report::outputs::Outputs,
    err: &mut dyn Write,
) -> Result<i32> {
    let entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    for output in list.paths(dir) {
        let others: Vec<PathBuf> = entries
            .iter()
            .filter(|p| p.file_name() != output.file_name())
            .cloned()
            .collect();
        guard_outputs(std::slice::from_ref(&output), None, &others)?;
    }
    let summary = dir.join(crate::util::outdir::SUMMARY_JSON);
    if !summary.is_file() {
        return Err(Error::Usage(format!(
            "{}: no {} here; run `looptune sweep` first",
            dir.display(),
            crate::util::outdir::SUMMARY_JSON
        )));
    }
    // One pool, every core, for the analysis and the writing.
    let workers = crate::util::pool::Workers::new(0)?;
    let result = workers.install(|| crate::report::summary::load_checked(&summary))?;
    let mut set = crate::util::outdir::OutputSet::new();
    let progress = crate::progress::NoProgress;
    if list.write_into(&result, &mut set, dir, &workers, &progress, err)? {
        drop(set);
        writeln!(
            err,
            "nothing was replaced: the previous outputs are as they were"
        )
        .ok();
        return Ok(crate::error::EXIT_REPORT);
    }
    for p in set.commit()? {
        writeln!(err, "wrote {}", p.display()).ok();
    }
    Ok(EXIT_OK)
}
