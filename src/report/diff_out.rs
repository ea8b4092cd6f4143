//! Writers of a [`Diff`]: JSON lines for scripts, a table for people and
//! Markdown for CI summary pages. They render; they never compute verdicts.

use crate::diff::{ConfigDiff, Diff};
use crate::metrics::Scores;
use std::io::{self, Write};

/// Changes listed per configuration before "... and N more".
const LIST: usize = 20;

/// One JSON object per changed verdict:
/// `{"config","session","base","new","base_turn","new_turn"}`.
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
        Some((a, b)) => format!("{x:.2} [{a:.2}-{b:.2}]"),
        None => format!("{x:.2}"),
    }
}

/// `recall 0.55 [0.28-0.79] -> 0.64 [0.35-0.85]`, and the same for precision and false positives.
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

fn changed(c: &ConfigDiff) -> bool {
    !c.changes.is_empty()
        || match (&c.base, &c.new) {
            (Some(b), Some(n)) => !deltas(b, n).is_empty(),
            _ => true,
        }
}

/// A table for people: configurations with changes, their score deltas and the changed sessions.
pub fn table(d: &Diff, out: &mut dyn Write) -> io::Result<()> {
    let shown: Vec<&ConfigDiff> = d.configs.iter().filter(|c| changed(c)).collect();
    writeln!(
        out,
        "{} of {} configurations changed; {} sessions added, {} removed",
        shown.len(),
        d.configs.len(),
        d.sessions_added.len(),
        d.sessions_removed.len()
    )?;
    for c in shown {
        let label = crate::escape::terminal(&c.label);
        writeln!(out, "\n{label}  ({})", c.config)?;
        match (&c.base, &c.new) {
            (Some(b), Some(n)) => {
                for line in deltas(b, n) {
                    writeln!(out, "  {line}")?;
                }
            }
            (None, _) => writeln!(out, "  only in the new run")?,
            (_, None) => writeln!(out, "  only in the base run")?,
        }
        for ch in c.changes.iter().take(LIST) {
            writeln!(
                out,
                "  {:<40} {:>9} -> {:<9} turn {} -> {}",
                crate::escape::terminal(&ch.session),
                ch.base,
                ch.new,
                turn(ch.base_turn),
                turn(ch.new_turn)
            )?;
        }
        if c.changes.len() > LIST {
            writeln!(out, "  ... and {} more", c.changes.len() - LIST)?;
        }
    }
    Ok(())
}

/// Markdown for a CI summary page.
pub fn markdown(d: &Diff) -> String {
    let esc = crate::escape::md_text;
    let mut s = String::from("## looptune: what changed since the baseline run\n\n");
    let shown: Vec<&ConfigDiff> = d.configs.iter().filter(|c| changed(c)).collect();
    s.push_str(&format!(
        "{} of {} configurations changed; {} sessions added, {} removed.\n\n",
        shown.len(),
        d.configs.len(),
        d.sessions_added.len(),
        d.sessions_removed.len()
    ));
    if shown.is_empty() {
        return s;
    }
    s.push_str("| configuration | changed verdicts | new false positives | new missed loops | scores |\n|---|---:|---:|---:|---|\n");
    for c in &shown {
        let scores = match (&c.base, &c.new) {
            (Some(b), Some(n)) => deltas(b, n).join("; "),
            (None, _) => "only in the new run".into(),
            (_, None) => "only in the base run".into(),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            esc(&c.label),
            c.changes.len(),
            c.count("new_false_positives").unwrap_or(0.0),
            c.count("new_missed_loops").unwrap_or(0.0),
            esc(&scores)
        ));
    }
    s
}
