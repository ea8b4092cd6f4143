//! `looptune diff`.

use super::*;
use crate::error::{Error, Result};
use std::io::Write;

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
    guard_outputs(&ci.outputs(), &inputs)?;
    let base = crate::score::analyze(crate::result::SweepRecord::load(base)?)?;
    let mut new = crate::score::analyze(crate::result::SweepRecord::load(new)?)?;
    let mut shape = req.shape;
    if let Some(c) = &req.config {
        new.chosen = crate::result::find_config(&new.record.grid, c)?;
        // The new run's configurations come first in the diff, in grid order.
        shape.only = Some(new.chosen);
    }
    let d = crate::score::diff::diff(&base, &new);
    warn_grids(&d, err);
    let io = |e| Error::io("<stdout>", e);
    match format {
        _ if ci.json => {}
        DiffFormat::Json => crate::report::diff_out::json_lines(&d, out).map_err(io)?,
        DiffFormat::Table => crate::report::diff_out::table(&d, &shape, out).map_err(io)?,
    }
    let mut failed = false;
    if let Some(p) = &ci.markdown {
        let text = crate::report::diff_out::markdown(&d, &shape);
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
    let results = diff_gates(&d, gates);
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
