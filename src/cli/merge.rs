//! `looptune merge`.

use super::*;
use crate::error::Result;
use std::io::Write;
use std::path::PathBuf;

/// `looptune merge`: combine the results of shards into the full outputs.
pub fn merge_command(
    parts: &[PathBuf],
    out_dir: &std::path::Path,
    ci: &CiArgs,
    options: &crate::report::output::OutputOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32> {
    let started = std::time::Instant::now();
    let gates = &ci.requires;
    check_out_dir(out_dir)?;
    let records: Vec<crate::result::SweepRecord> = parts
        .iter()
        .map(|p| crate::result::SweepRecord::load(p))
        .collect::<Result<_>>()?;
    let list = crate::report::output::Outputs::standard(options);
    let inputs: Vec<PathBuf> = parts.iter().flat_map(|p| result_inputs(p)).collect();
    let mut outputs = list.paths(out_dir);
    outputs.extend(ci.outputs());
    guard_outputs(&outputs, &inputs)?;
    let record = crate::result::SweepRecord::merge(records)?;
    let labelled = record.sessions.iter().filter(|s| s.label.is_some()).count();
    for g in gates {
        g.needs_labels(labelled)?;
    }
    let result = crate::score::analyze(record)?;
    let writing = crate::progress::for_stderr(false, "writing outputs");
    let (code, brief) = finish_sweep(
        &result,
        &list,
        0,
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
