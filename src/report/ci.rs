//! CI outputs: a short Markdown summary (fits a job summary page) and JUnit
//! XML with one test case per labeled session for the chosen configuration.

use super::fixed;
use crate::event::Corpus;
use crate::gates::GateResult;
use crate::labels::Labels;
use crate::metrics::{verdict, Scores, Verdict};
use crate::replay::Outcome;

/// What the CI writers read.
pub struct CiView<'a> {
    /// `replay` or the grid's name.
    pub title: String,
    /// Configuration labels.
    pub labels: Vec<String>,
    /// Scores per configuration.
    pub scores: &'a [Scores],
    /// The configuration gates and JUnit evaluate.
    pub chosen: usize,
    /// The recommended configuration (sweeps).
    pub recommended: Option<usize>,
    /// Gate results on the chosen configuration.
    pub gates: &'a [GateResult],
    /// The corpus.
    pub corpus: &'a Corpus,
    /// Labels.
    pub session_labels: &'a Labels,
    /// The chosen configuration's outcomes, in session order.
    pub outcomes: &'a [Outcome],
}

const ROWS: &[(&str, &str)] = &[
    ("recall", "recall"),
    ("precision", "precision"),
    ("f1", "F1"),
    ("true_positives", "loops caught"),
    ("missed_loops", "loops missed"),
    ("false_positives", "false positives"),
    ("fp_per_1k_turns", "false positives / 1k clean turns"),
    ("ttd_median", "median turns to detection"),
    ("ttd_p90", "p90 turns to detection"),
    ("early_detections", "early detections"),
    (
        "tokens_saved_on_loops",
        "tokens after stop on loops (saved)",
    ),
    ("tokens_lost_on_clean", "tokens after stop on clean (lost)"),
];

fn cell(s: &Scores, name: &str) -> String {
    s.get(name).map(fixed).unwrap_or_else(|| "–".into())
}

/// The Markdown summary.
pub fn markdown(v: &CiView) -> String {
    let mut out = String::new();
    let (loops, clean) = v.session_labels.counts();
    out.push_str(&format!("## looptune: {}\n\n", md_escape(&v.title)));
    out.push_str(&format!(
        "{} sessions ({} loop, {} clean, {} unlabeled), {} turns, {} events.\n\n",
        v.corpus.sessions.len(),
        loops,
        clean,
        v.corpus.sessions.len() - loops - clean,
        v.corpus.turns(),
        v.corpus.events()
    ));
    let mut cols = vec![v.chosen];
    if let Some(r) = v.recommended {
        if r != v.chosen {
            cols.push(r);
        }
    }
    out.push_str("| score |");
    for &c in &cols {
        let tag = if c == v.chosen {
            "chosen"
        } else {
            "recommended"
        };
        out.push_str(&format!(" {} ({tag}) |", md_escape(&v.labels[c])));
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(cols.len()));
    out.push('\n');
    for (name, title) in ROWS {
        out.push_str(&format!("| {title} |"));
        for &c in &cols {
            out.push_str(&format!(" {} |", cell(&v.scores[c], name)));
        }
        out.push('\n');
    }
    if !v.gates.is_empty() {
        out.push_str("\n**Gates**\n\n");
        for g in v.gates {
            out.push_str(&format!(
                "- {} {}\n",
                if g.passed { "✅" } else { "❌" },
                md_escape(&g.describe())
            ));
        }
    }
    let problems: Vec<String> = v
        .corpus
        .sessions
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let (verd, _) = verdict(&v.outcomes[i], v.session_labels.by_session[i]);
            match verd {
                Verdict::FalsePositive => Some(format!(
                    "- false positive: `{}` at turn {}",
                    md_code(&s.id),
                    v.outcomes[i].first().map_or(0, |d| d.turn)
                )),
                Verdict::Missed => Some(format!("- missed loop: `{}`", md_code(&s.id))),
                _ => None,
            }
        })
        .collect();
    if !problems.is_empty() {
        out.push_str(&format!(
            "\n<details><summary>{} sessions to look at</summary>\n\n",
            problems.len()
        ));
        for p in problems.iter().take(50) {
            out.push_str(p);
            out.push('\n');
        }
        out.push_str("\n</details>\n");
    }
    out
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn md_code(s: &str) -> String {
    s.replace('`', "'")
}

/// JUnit XML: one test case per labeled session; a failure when the chosen
/// configuration fires on a clean session or misses a loop.
pub fn junit(v: &CiView) -> String {
    let mut cases = String::new();
    let (mut tests, mut failures) = (0, 0);
    for (i, s) in v.corpus.sessions.iter().enumerate() {
        let Some(label) = v.session_labels.by_session[i] else {
            continue;
        };
        tests += 1;
        let o = &v.outcomes[i];
        let (verd, ttd) = verdict(o, Some(label));
        let name = xml(&s.id);
        let class = xml(&v.labels[v.chosen]);
        let failure = match verd {
            Verdict::FalsePositive => {
                let d = o.first().expect("fired");
                let at = v
                    .corpus
                    .provenance(i, d.event)
                    .map_or(String::new(), |p| format!(" ({p})"));
                Some(format!(
                    "fired on a clean session: {} at turn {}, event {}{at}: {}",
                    d.kind, d.turn, d.event, d.detail
                ))
            }
            Verdict::Missed => Some(format!(
                "missed a loop (onset turn {})",
                label.onset_turn.map_or("?".into(), |t| t.to_string())
            )),
            _ => None,
        };
        match failure {
            Some(msg) => {
                failures += 1;
                cases.push_str(&format!(
                    "    <testcase classname=\"{class}\" name=\"{name}\">\n      <failure message=\"{}\">{}</failure>\n    </testcase>\n",
                    xml(&msg),
                    xml(&msg)
                ));
            }
            None => {
                let note = match (verd, ttd) {
                    (Verdict::TruePositive | Verdict::Early, Some(t)) => {
                        format!(" <!-- detected, turns to detection {t} -->")
                    }
                    _ => String::new(),
                };
                cases.push_str(&format!(
                    "    <testcase classname=\"{class}\" name=\"{name}\"/>{note}\n"
                ));
            }
        }
    }
    let gate_fail = v.gates.iter().filter(|g| !g.passed).count();
    let mut gates = String::new();
    for g in v.gates {
        gates.push_str(&format!(
            "    <testcase classname=\"gates\" name=\"{}\"",
            xml(&g.gate)
        ));
        if g.passed {
            gates.push_str("/>\n");
        } else {
            gates.push_str(&format!(
                ">\n      <failure message=\"{0}\">{0}</failure>\n    </testcase>\n",
                xml(&g.describe())
            ));
        }
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"looptune\" tests=\"{}\" failures=\"{}\">\n  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\">\n{cases}{gates}  </testsuite>\n</testsuites>\n",
        tests + v.gates.len(),
        failures + gate_fail,
        xml(&v.title),
        tests + v.gates.len(),
        failures + gate_fail,
    )
}

/// Escape text for XML attributes and content; drop characters XML 1.0 forbids.
pub fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escapes_markup_and_drops_control_chars() {
        assert_eq!(xml("<script>\"&'\u{1}"), "&lt;script&gt;&quot;&amp;&apos;");
    }
}
