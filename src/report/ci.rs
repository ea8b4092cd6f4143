//! CI outputs: a short Markdown summary (fits a job summary page) and JUnit
//! XML with one test case per gate (and, on request, per labelled session)
//! for the chosen configuration.

use super::fixed;
use super::text::plural;
use crate::input::labels::Labels;
use crate::result::{Hit, SessionRecord};
use crate::score::gates::GateResult;
use crate::score::metrics::{score_info, verdict_at, Scores, Verdict};
use crate::util::escape::md_text as md_escape;

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
    /// The sessions.
    pub sessions: &'a [SessionRecord],
    /// Labels.
    pub session_labels: &'a Labels,
    /// What the chosen configuration did, one entry per session.
    pub hits: &'a [Option<&'a Hit>],
}

/// The scores of the Markdown table, in order; their labels come from [`crate::score::metrics::SCORES`].
const ROWS: &[&str] = &[
    "recall",
    "precision",
    "f1",
    "true_positives",
    "missed_loops",
    "false_positives",
    "fp_per_1k_turns",
    "ttd_median",
    "ttd_p90",
    "early_detections",
    "tokens_saved_on_loops",
    "tokens_lost_on_clean",
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
        "{} ({} loop, {} clean, {} unlabeled), {}, {}.\n\n",
        plural(v.sessions.len(), "session", "sessions"),
        loops,
        clean,
        v.sessions.len() - loops - clean,
        plural(
            v.sessions.iter().map(|s| s.turns as usize).sum::<usize>(),
            "turn",
            "turns"
        ),
        plural(
            v.sessions.iter().map(|s| s.events as usize).sum::<usize>(),
            "event",
            "events"
        )
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
    for name in ROWS {
        let title = score_info(name).map_or(*name, |s| s.label);
        out.push_str(&format!("| {title} |"));
        for &c in &cols {
            out.push_str(&format!(" {} |", cell(&v.scores[c], name)));
        }
        out.push('\n');
    }
    out.push_str(&gates_markdown(v.gates));
    let problems: Vec<String> = v
        .sessions
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let (verd, _) = verdict_at(
                v.hits[i].and_then(Hit::turn),
                v.session_labels.by_session[i],
            );
            match verd {
                Verdict::FalsePositive => Some(format!(
                    "- false positive: {} at turn {}",
                    md_escape(&s.id),
                    v.hits[i].and_then(Hit::turn).unwrap_or(0)
                )),
                Verdict::Missed => Some(format!("- missed loop: {}", md_escape(&s.id))),
                _ => None,
            }
        })
        .collect();
    if !problems.is_empty() {
        out.push_str(&format!(
            "\n<details><summary>{} to look at</summary>\n\n",
            plural(problems.len(), "session", "sessions")
        ));
        for p in problems.iter().take(50) {
            out.push_str(p);
            out.push('\n');
        }
        out.push_str("\n</details>\n");
    }
    out
}

/// The gates' verdicts as a Markdown list under a **Gates** heading (empty
/// without gates): score gates and gates on changes since an earlier run.
pub fn gates_markdown(gates: &[GateResult]) -> String {
    let mut out = String::new();
    if !gates.is_empty() {
        out.push_str("\n**Gates**\n\n");
        for g in gates {
            out.push_str(&format!(
                "- {} {}\n",
                if g.passed { "✅" } else { "❌" },
                md_escape(&g.describe())
            ));
        }
    }
    out
}

/// JUnit XML: one test case per gate (a failure when it trips), so a night
/// with no gate tripped is green; with `sessions`, also one per labelled
/// session (a failure when the chosen configuration fires on a clean
/// session or misses a loop). Without either, one passing case for the run.
pub fn junit(v: &CiView, sessions: bool) -> String {
    let mut cases = String::new();
    let (mut tests, mut failures) = (0, 0);
    for (i, s) in v.sessions.iter().enumerate() {
        if !sessions {
            break;
        }
        let Some(label) = v.session_labels.by_session[i] else {
            continue;
        };
        tests += 1;
        let first = v.hits[i].and_then(|h| h.first.as_ref());
        let (verd, ttd) = verdict_at(first.map(|d| d.turn), Some(label));
        let name = xml(&s.id);
        let class = xml(&v.labels[v.chosen]);
        let failure = match verd {
            Verdict::FalsePositive => {
                let d = first.expect("fired");
                let at = d
                    .place
                    .as_ref()
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
    if !sessions && v.gates.is_empty() {
        tests += 1;
        cases.push_str(&run_case(&v.title, &v.labels[v.chosen]));
    }
    suite(&v.title, cases, tests, failures, v.gates)
}

/// One passing case that names the run: a suite with no gate is not empty.
fn run_case(title: &str, config: &str) -> String {
    format!(
        "    <testcase classname=\"looptune\" name=\"{} ({})\"/>\n",
        xml(title),
        xml(config)
    )
}

/// JUnit XML of gates alone (`looptune diff`): a case per gate, or one
/// passing case for the run when none was given.
pub fn gates_junit(title: &str, config: &str, gates: &[GateResult]) -> String {
    let cases = if gates.is_empty() {
        run_case(title, config)
    } else {
        String::new()
    };
    suite(title, cases, usize::from(gates.is_empty()), 0, gates)
}

/// The document: `cases` (`tests` of them, `failures` failing), then a case per gate.
fn suite(
    title: &str,
    cases: String,
    tests: usize,
    failures: usize,
    gate_results: &[GateResult],
) -> String {
    let gate_fail = gate_results.iter().filter(|g| !g.passed).count();
    let mut gates = String::new();
    for g in gate_results {
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
        tests + gate_results.len(),
        failures + gate_fail,
        xml(title),
        tests + gate_results.len(),
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
            // As character references, so attributes keep them (a parser
            // normalises literal ones to spaces) and no line can be forged.
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
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
    fn xml_keeps_line_breaks_as_references() {
        assert_eq!(xml("a\n</x>"), "a&#10;&lt;/x&gt;");
    }

    #[test]
    fn xml_escapes_markup_and_drops_control_chars() {
        assert_eq!(xml("<script>\"&'\u{1}"), "&lt;script&gt;&quot;&amp;&apos;");
    }
}
