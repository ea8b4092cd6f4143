//! The combined looptune configuration (`sweep --combine-rules`) on the
//! terminal: what the search built, the path of additions, and how the
//! whole search did on sessions and groups it never saw.

use crate::score::combine::Combined;
use crate::score::recommend::Tally;
use std::io::{self, Write};

fn counts(t: &Tally) -> String {
    let ci = crate::score::stats::wilson(t.tp, t.loops)
        .map(|(lo, hi)| format!(" [{:.2}, {:.2}]", lo, hi))
        .unwrap_or_default();
    format!(
        "{}/{} loops (recall {:.2}{ci}), {}/{} false positives, F1 {:.2}",
        t.tp,
        t.loops,
        t.recall(),
        t.fp,
        t.clean,
        t.f1()
    )
}

/// The block the sweep prints after its summary; `None`: nothing met the rule.
/// `row` is the configuration's id in the sweep's outputs.
pub fn combined_block(
    r: &crate::score::SweepResult,
    c: Option<&Combined>,
    row: Option<&str>,
    secs: f64,
    out: &mut dyn Write,
) -> io::Result<()> {
    writeln!(
        out,
        "\nCombined looptune configuration (--combine-rules: from looptune-default, add the grid's looptune setting that most improves it under the rule, until none does):"
    )?;
    let Some(c) = c else {
        writeln!(
            out,
            "  none: no labelled loop, no looptune setting in the grid, or nothing meets the rule"
        )?;
        return Ok(());
    };
    writeln!(out, "  {}", crate::util::escape::terminal(&c.label))?;
    if let Some(id) = row {
        let added = r.record.options.combined.as_deref() == Some(id);
        writeln!(
            out,
            "  row {id} of sweep.csv, summary.json and the report{}",
            if added {
                " (added to the grid; its figures there are in sample; in the recommendation's folds and left-out groups, the search re-run there takes its place)"
            } else {
                " (a configuration of the grid itself)"
            }
        )?;
    }
    if c.path.is_empty() {
        writeln!(out, "  path: no setting improves looptune-default")?;
    }
    for (i, step) in c.path.iter().enumerate() {
        writeln!(out, "  {}. + {step}", i + 1)?;
    }
    writeln!(out, "  in sample:     {}", counts(&c.tally))?;
    writeln!(
        out,
        "  baseline:      {}  ({})",
        counts(&c.baseline),
        r.label(r.baseline)
    )?;
    let paths = |chosen: &[Vec<usize>]| chosen.iter().map(Vec::len).collect::<Vec<_>>();
    if let Some(cv) = &c.cross_validation {
        writeln!(
            out,
            "  {}-fold:        {}  (the whole search re-run on each fold's other sessions; settings added per fold {:?})",
            cv.folds,
            counts(&cv.pooled),
            paths(&cv.chosen)
        )?;
    }
    if let Some(gv) = &c.group_validation {
        writeln!(
            out,
            "  out of {}:  {}  (the search re-run without each {})",
            gv.by,
            counts(&gv.pooled),
            gv.by
        )?;
        for g in &gv.groups {
            writeln!(
                out,
                "    {:<14} caught {}/{} loops, {}/{} false positives ({} settings added without it)",
                crate::util::escape::terminal(&g.name),
                g.tally.tp,
                g.tally.loops,
                g.tally.fp,
                g.tally.clean,
                g.chosen.len()
            )?;
        }
    }
    writeln!(
        out,
        "  cost: {} settings in the grid; {} distinct configurations replayed on the labelled sessions ({} checks run after sharing), {:.2}s with the sweep of the looptune settings and the second read",
        c.steps, c.cost.0, c.cost.1, secs
    )?;
    Ok(())
}
