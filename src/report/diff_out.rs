//! Writers of a [`Diff`]: JSON lines for scripts, a table for people and
//! Markdown for CI summary pages. They render; they never compute verdicts.

use crate::score::diff::{Change, ConfigDiff, Diff};
use crate::score::gates::GateResult;
use crate::score::metrics::Scores;
use std::io::{self, Write};

/// Changes listed per configuration before "... and N more".
const LIST: usize = 20;

/// One JSON object per changed verdict:
/// `{"config","session","base","new","base_turn","new_turn","cause"}`.
pub fn json_lines(d: &Diff, out: &mut dyn Write) -> io::Result<()> {
    for c in &d.configs {
        for ch in &c.changes {
            serde_json::to_writer(&mut *out, ch)?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

fn share(x: f64, ci: Option<(f64, f64)>) -> String {
    match ci {
        Some((a, b)) => format!(
            "{x:.2} {}",
            crate::util::number::interval(format!("{a:.2}"), format!("{b:.2}"))
        ),
        None => format!("{x:.2}"),
    }
}

/// `recall 0.55 [0.28, 0.79] -> 0.64 [0.35, 0.85]`, and the same for precision and false positives.
fn deltas(base: &Scores, new: &Scores) -> Vec<String> {
    let mut v = Vec::new();
    if (base.recall, base.true_positives) != (new.recall, new.true_positives) {
        v.push(format!(
            "recall {} -> {}",
            share(base.recall, base.recall_ci),
            share(new.recall, new.recall_ci)
        ));
    }
    if base.precision != new.precision {
        v.push(format!(
            "precision {} -> {}",
            share(base.precision, base.precision_ci),
            share(new.precision, new.precision_ci)
        ));
    }
    if base.false_positives != new.false_positives || base.labeled_clean != new.labeled_clean {
        v.push(format!(
            "false positives {}/{} -> {}/{}",
            base.false_positives, base.labeled_clean, new.false_positives, new.labeled_clean
        ));
    }
    v
}

fn turn(t: Option<u32>) -> String {
    t.map_or("-".into(), |t| t.to_string())
}

/// The configuration itself changed: a verdict on a session both runs
/// have, labelled alike (scores move with new sessions and labels too,
/// which is not the detector's doing), or it is in one run only.
fn changed(c: &ConfigDiff) -> bool {
    c.detector_changes().next().is_some() || c.base.is_none() || c.new.is_none()
}

/// `the gated configuration X (id) is compared with the base run's gated Y (id)`.
fn gated_line(d: &Diff) -> Option<String> {
    let (id, label) = d.gated_against.as_ref()?;
    let c = d.configs.get(d.chosen)?;
    Some(format!(
        "the gated configuration {} ({}) is compared with the base run's gated {label} ({id})",
        c.label, c.config
    ))
}

/// Configurations in both runs whose verdicts changed only through
/// sessions added, removed or relabelled.
pub(crate) fn changed_by_data(d: &Diff) -> usize {
    d.configs
        .iter()
        .filter(|c| c.base.is_some() && c.new.is_some() && !changed(c) && c.data_changes() > 0)
        .count()
}

/// `12 configurations changed only through the sessions (3 added, 0
/// removed, 1 relabelled), not by their detectors`, or `None`.
fn data_line(d: &Diff) -> Option<String> {
    let k = changed_by_data(d);
    (k > 0).then(|| {
        format!(
            "{} changed only through the sessions ({} added, {} removed, {} relabelled), not by {}",
            super::text::plural(k, "configuration", "configurations"),
            d.sessions_added.len(),
            d.sessions_removed.len(),
            d.sessions_relabelled.len(),
            if k == 1 {
                "its detector"
            } else {
                "their detectors"
            }
        )
    })
}

/// What a summary shows: the first `limit` changed configurations (0: all),
/// or only `only`; every changed session of each (`verbose`), else the
/// gated configuration's first [`LIST`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Shape {
    /// Changed configurations listed (0: every one).
    pub limit: usize,
    /// Only this configuration (an index of `Diff::configs`).
    pub only: Option<usize>,
    /// Every changed session of every listed configuration.
    pub verbose: bool,
}

/// Changed configurations listed when `--limit` is not given.
pub const DEFAULT_LIMIT: usize = 10;

/// The Markdown stays under this many bytes (GitHub's job summary takes 1 MiB
/// per step; a margin for the other steps).
pub const MARKDOWN_MAX: usize = 60 * 1024;

/// The configurations in both runs whose verdicts or scores changed, the
/// gated one first (always, changed or not), then most changed verdicts
/// first (grid order between equals); and how many changed in all.
pub(crate) fn listed(d: &Diff, shape: &Shape) -> (Vec<usize>, usize) {
    if let Some(i) = shape.only {
        return (vec![i], usize::from(changed(&d.configs[i])));
    }
    let common = |c: &ConfigDiff| c.base.is_some() && c.new.is_some();
    let mut rest: Vec<usize> = (0..d.configs.len())
        .filter(|&i| i != d.chosen && common(&d.configs[i]) && changed(&d.configs[i]))
        .collect();
    let gated_changed = d.configs.get(d.chosen).is_some_and(changed);
    let total = rest.len() + usize::from(gated_changed);
    rest.sort_by_key(|&i| std::cmp::Reverse(d.configs[i].detector_changes().count()));
    let mut v: Vec<usize> = d
        .configs
        .get(d.chosen)
        .map(|_| d.chosen)
        .into_iter()
        .collect();
    v.extend(rest);
    if shape.limit > 0 {
        v.truncate(shape.limit.max(1));
    }
    (v, total)
}

/// `2 verdicts changed (1 new false positive, 1 new catch)`.
fn verdicts(c: &ConfigDiff) -> String {
    let n = c.detector_changes().count();
    let data = match c.data_changes() {
        0 => String::new(),
        k => format!(
            "; {} through new, removed or relabelled sessions",
            super::text::plural(k, "verdict", "verdicts")
        ),
    };
    if n == 0 {
        return format!("no verdict changed{data}");
    }
    let parts: Vec<String> = [
        (
            "new_false_positives",
            "new false positive",
            "new false positives",
        ),
        ("new_missed_loops", "new missed loop", "new missed loops"),
        (
            "fixed_false_positives",
            "fixed false positive",
            "fixed false positives",
        ),
        ("new_catches", "new catch", "new catches"),
    ]
    .iter()
    .filter_map(|(name, one, many)| {
        let k = c.count(name).unwrap_or(0.0) as usize;
        (k > 0).then(|| super::text::plural(k, one, many))
    })
    .collect();
    format!(
        "{}{}{data}",
        super::text::plural(n, "verdict changed", "verdicts changed"),
        if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join(", "))
        }
    )
}

/// The score line of a configuration: deltas, or which run it is in.
fn scores_line(c: &ConfigDiff) -> String {
    match (&c.base, &c.new) {
        (Some(b), Some(n)) => deltas(b, n).join("; "),
        (None, _) => "only in the new run".into(),
        (_, None) => "only in the base run".into(),
    }
}

/// `sessions: 15 in common, 1 added (`x`), 1 removed (`y`)`.
fn sessions_line(d: &Diff, quote: &dyn Fn(&str) -> String) -> String {
    let ids = |v: &[String]| {
        let mut s: Vec<String> = v.iter().take(5).map(|i| quote(i)).collect();
        if v.len() > 5 {
            s.push(format!("{} more", v.len() - 5));
        }
        if s.is_empty() {
            String::new()
        } else {
            format!(" ({})", s.join(", "))
        }
    };
    format!(
        "{} added{}, {} removed{}, {} relabelled{}",
        d.sessions_added.len(),
        ids(&d.sessions_added),
        d.sessions_removed.len(),
        ids(&d.sessions_removed),
        d.sessions_relabelled.len(),
        ids(&d.sessions_relabelled)
    )
}

/// `481 configurations: 39 in common; 442 only in one run (1 in the base run, 441 in the new run)`.
fn configs_line(d: &Diff) -> String {
    let (common, only_base, only_new) = d.config_counts();
    let mut s = format!("{} in common", common);
    if only_base + only_new > 0 {
        s.push_str(&format!(
            "; {} only in one run ({only_base} in the base run, {only_new} in the new run)",
            only_base + only_new
        ));
    }
    s
}

/// The warning when the runs come from different grids (their
/// configurations differ), or `None`.
pub fn grid_warning(d: &Diff) -> Option<String> {
    if !d.grids_differ() {
        return None;
    }
    let (common, _, _) = d.config_counts();
    let names = if d.grids.0 == d.grids.1 {
        format!("both named `{}`", d.grids.0)
    } else {
        format!("`{}` and `{}`", d.grids.0, d.grids.1)
    };
    Some(format!(
        "the two runs come from different grids ({names}): only the {common} configurations in both are compared"
    ))
}

/// A summary for people: one line per changed configuration (the gated one
/// first), a count of the rest, then the gated configuration's changed
/// sessions (every listed configuration's with `verbose`).
pub fn table(d: &Diff, shape: &Shape, out: &mut dyn Write) -> io::Result<()> {
    let (common, _, _) = d.config_counts();
    let (shown, total) = listed(d, shape);
    let quote = |s: &str| format!("`{}`", crate::util::escape::terminal(s));
    writeln!(out, "sessions: {}", sessions_line(d, &quote))?;
    writeln!(out, "configurations: {}", configs_line(d))?;
    if let Some(line) = data_line(d) {
        writeln!(out, "{line}")?;
    }
    if let Some(line) = gated_line(d) {
        writeln!(out, "{}", crate::util::escape::terminal(&line))?;
    }
    writeln!(
        out,
        "{total} of {common} configurations in both runs changed{}",
        if shown.is_empty() { "" } else { ":" }
    )?;
    for &i in &shown {
        let c = &d.configs[i];
        let scores = scores_line(c);
        writeln!(
            out,
            "  {} {}  ({})  {}{}",
            if i == d.chosen { "gated" } else { "     " },
            crate::util::escape::terminal(&c.label),
            c.config,
            verdicts(c),
            if scores.is_empty() {
                String::new()
            } else {
                format!("; {scores}")
            }
        )?;
    }
    let listed_changed = shown.iter().filter(|&&i| changed(&d.configs[i])).count();
    if total > listed_changed {
        writeln!(
            out,
            "  ... and {} more changed (--limit N lists more, --config ID one)",
            total - listed_changed
        )?;
    }
    for &i in &shown {
        if !(shape.verbose || i == d.chosen || shape.only.is_some()) {
            continue;
        }
        let c = &d.configs[i];
        let changes: Vec<&Change> = c.detector_changes().collect();
        if changes.is_empty() {
            continue;
        }
        writeln!(
            out,
            "\nsessions whose verdict changed under {}  ({}):",
            crate::util::escape::terminal(&c.label),
            c.config
        )?;
        let cap = if shape.verbose { usize::MAX } else { LIST };
        for ch in changes.iter().take(cap) {
            writeln!(
                out,
                "  {:<40} {:>9} -> {:<9} turn {} -> {}",
                crate::util::escape::terminal(&ch.session),
                ch.base,
                ch.new,
                turn(ch.base_turn),
                turn(ch.new_turn)
            )?;
        }
        if changes.len() > cap {
            writeln!(
                out,
                "  ... and {} more (--verbose lists every session)",
                changes.len() - cap
            )?;
        }
    }
    Ok(())
}

/// Markdown for a CI summary page: the same shape as [`table`], under
/// [`MARKDOWN_MAX`] bytes whatever the options, with the gates' verdicts.
pub fn markdown(d: &Diff, shape: &Shape, gates: &[GateResult]) -> String {
    let gates = super::ci::gates_markdown(gates);
    markdown_within(d, shape, MARKDOWN_MAX - gates.len()) + &gates
}

/// [`markdown`] under `max` bytes, without the gates.
pub fn markdown_within(d: &Diff, shape: &Shape, max: usize) -> String {
    let esc = crate::util::escape::md_text;
    let (common, _, _) = d.config_counts();
    let (shown, total) = listed(d, shape);
    let quote = |s: &str| format!("`{}`", esc(s).replace('`', "'"));
    let mut s = String::from("## looptune: what changed since the baseline run\n\n");
    s.push_str(&format!(
        "Sessions: {}. Configurations: {}.\n\n",
        sessions_line(d, &quote),
        configs_line(d)
    ));
    if let Some(w) = grid_warning(d) {
        s.push_str(&format!("**Warning:** {}.\n\n", esc(&w)));
    }
    if let Some(line) = data_line(d) {
        s.push_str(&format!("{}.\n\n", esc(&line)));
    }
    if let Some(line) = gated_line(d) {
        s.push_str(&format!("{}.\n\n", esc(&line)));
    }
    s.push_str(&format!(
        "{total} of {common} configurations in both runs changed.\n\n"
    ));
    if shown.is_empty() {
        return s;
    }
    // Rows are added while they fit; what does not fit is counted.
    let budget = max.saturating_sub(512);
    let mut left_out = 0usize;
    s.push_str("| configuration | changed verdicts | new false positives | new missed loops | scores |\n|---|---:|---:|---:|---|\n");
    for &i in &shown {
        let c = &d.configs[i];
        let row = format!(
            "| {}{} | {} | {} | {} | {} |\n",
            if i == d.chosen { "**gated** " } else { "" },
            esc(&c.label),
            c.detector_changes().count(),
            c.count("new_false_positives").unwrap_or(0.0),
            c.count("new_missed_loops").unwrap_or(0.0),
            esc(&scores_line(c))
        );
        if s.len() + row.len() > budget {
            left_out += 1;
            continue;
        }
        s.push_str(&row);
    }
    let listed_changed = shown.iter().filter(|&&i| changed(&d.configs[i])).count();
    let more = total.saturating_sub(listed_changed) + left_out;
    if more > 0 {
        s.push_str(&format!("\n… and {more} more changed configurations.\n"));
    }
    for &i in &shown {
        if !(shape.verbose || i == d.chosen || shape.only.is_some()) {
            continue;
        }
        let c = &d.configs[i];
        let changes: Vec<&Change> = c.detector_changes().collect();
        if changes.is_empty() {
            continue;
        }
        let head = format!(
            "\n### Sessions whose verdict changed under {}\n\n| session | before | after | turn before | turn after |\n|---|---|---|---:|---:|\n",
            esc(&c.label)
        );
        if s.len() + head.len() > budget {
            break;
        }
        s.push_str(&head);
        let cap = if shape.verbose { usize::MAX } else { LIST };
        let mut rows = 0;
        for ch in changes.iter().take(cap) {
            let row = format!(
                "| {} | {} | {} | {} | {} |\n",
                esc(&ch.session),
                ch.base,
                ch.new,
                turn(ch.base_turn),
                turn(ch.new_turn)
            );
            if s.len() + row.len() > budget {
                break;
            }
            s.push_str(&row);
            rows += 1;
        }
        if changes.len() > rows {
            s.push_str(&format!(
                "\n… and {} more sessions (`looptune diff --verbose` lists them all).\n",
                changes.len() - rows
            ));
        }
    }
    s
}
