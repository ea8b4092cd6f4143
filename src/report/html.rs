//! `report.html`: one self-contained page with inline SVG charts, built from
//! the files of a sweep folder (`sweep.csv`, `summary.json`), so it can be
//! regenerated without the inputs (`looptune report DIR`). It opens from disk
//! with no network: fonts are embedded as base64 `@font-face` data, the one
//! small script (table sorting) is allowed by its hash in a
//! Content-Security-Policy that forbids everything else, and every string
//! that came from a file (session ids, labels, transcript text, the grid
//! source) is HTML-escaped, so a transcript carrying `<script>` shows as text.

use super::charts::{self, HeatMetric};
use super::model::{CrossValidation, ReportData, Row};
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

const CSS: &str = include_str!("assets/report.css");
const JS: &str = include_str!("assets/report.js");
const FONT_SANS: &[u8] = include_bytes!("assets/dejavu-sans-subset.woff2");
const FONT_BOLD: &[u8] = include_bytes!("assets/dejavu-sans-bold-subset.woff2");
const FONT_MONO: &[u8] = include_bytes!("assets/dejavu-sans-mono-subset.woff2");

/// `report.html`: a report (a failure is exit 3, and nothing is replaced).
pub struct ReportHtml;

impl super::output::Output for ReportHtml {
    fn name(&self) -> &str {
        "report.html"
    }
    fn kind(&self) -> super::output::Kind {
        super::output::Kind::Report
    }
    fn cost(&self) -> u32 {
        30
    }
    fn render(
        &self,
        r: &crate::score::SweepResult,
        w: &mut (dyn std::io::Write + Send),
    ) -> std::io::Result<()> {
        write(&ReportData::from_result(r)?, w)
    }
}

/// Write the report, piece by piece: a large report is tens of megabytes,
/// and one string of it (grown by doubling) was the largest allocation of a
/// large sweep's outputs.
pub fn write(d: &ReportData, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    for piece in pieces(d).map_err(std::io::Error::other)? {
        match piece {
            Piece::Text { folded, text } => match (folded, fold_at(&text)) {
                (true, Some(end)) => {
                    let (head, body) = text.split_at(end);
                    w.write_all(FOLD_OPEN.as_bytes())?;
                    w.write_all(head.as_bytes())?;
                    w.write_all(b"</summary>")?;
                    w.write_all(body.as_bytes())?;
                    w.write_all(FOLD_CLOSE.as_bytes())?;
                }
                _ => w.write_all(text.as_bytes())?,
            },
            Piece::Later(section) => {
                let mut sink = FoldSink::new(w);
                let made = section(&mut sink, d);
                sink.finish()?;
                made?;
            }
        }
    }
    Ok(())
}

/// A section written straight to the file as it is made, folded as
/// [`fold`] folds a whole one: only its heading is held, until it ends.
struct FoldSink<'w> {
    w: &'w mut dyn std::io::Write,
    /// The text so far while the heading is not yet whole.
    head: Option<String>,
    folded: bool,
    error: Option<std::io::Error>,
}

impl<'w> FoldSink<'w> {
    fn new(w: &'w mut dyn std::io::Write) -> FoldSink<'w> {
        FoldSink {
            w,
            head: Some(String::new()),
            folded: false,
            error: None,
        }
    }

    fn put(&mut self, bytes: &[u8]) -> std::fmt::Result {
        self.w.write_all(bytes).map_err(|e| {
            self.error.get_or_insert(e);
            std::fmt::Error
        })
    }

    /// Write what is held (a section with no whole heading is left as it
    /// is) and close the fold.
    fn finish(mut self) -> std::io::Result<()> {
        if let Some(head) = self.head.take() {
            let _ = self.put(head.as_bytes());
        }
        if self.folded {
            let _ = self.put(FOLD_CLOSE.as_bytes());
        }
        self.error.map_or(Ok(()), Err)
    }
}

impl std::fmt::Write for FoldSink<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let Some(head) = &mut self.head else {
            return self.put(s.as_bytes());
        };
        head.push_str(s);
        if let Some(end) = fold_at(head) {
            let head = self.head.take().unwrap_or_default();
            let (h, body) = head.split_at(end);
            self.folded = true;
            self.put(FOLD_OPEN.as_bytes())?;
            self.put(h.as_bytes())?;
            self.put(b"</summary>")?;
            self.put(body.as_bytes())
        } else if !(head.starts_with("<h2") || "<h2".starts_with(head.as_str())) {
            // Not a heading: nothing to fold.
            let head = self.head.take().unwrap_or_default();
            self.put(head.as_bytes())
        } else {
            Ok(())
        }
    }
}

pub use crate::util::escape::html as esc;

/// Standard base64 with padding (fonts as `data:` URLs, the CSP script hash).
pub fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut o = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for ch in bytes.chunks(3) {
        let b = [ch[0], *ch.get(1).unwrap_or(&0), *ch.get(2).unwrap_or(&0)];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= ch.len() {
                o.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                o.push('=');
            }
        }
    }
    o
}

fn pct(x: Option<f64>) -> String {
    x.map(|v| format!("{:.1}%", v * 100.0))
        .unwrap_or_else(|| "–".into())
}

/// The scores the family and configuration tables show, in column order.
const TABLE_SCORES: &[&str] = &[
    "recall",
    "false_positives",
    "fp_per_1k_turns",
    "precision",
    "f1",
    "ttd_median",
    "ttd_p90",
    "detections",
];

/// A header suffix for a value shown with its interval.
const CI: &str = " [95% CI]";

/// A numeric column's header, as the score table names the score.
fn th(score: &str, suffix: &str) -> String {
    let short = crate::score::metrics::score_info(score).map_or(score, |s| s.short);
    format!("<th class=\"n\">{}{suffix}</th>", esc(short))
}

/// The headers of `scores`, in order.
fn ths(scores: &[&str]) -> String {
    scores.iter().map(|s| th(s, "")).collect()
}

fn dec(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "–".into())
}

/// Whole numbers as such; a median between two detections keeps its half.
fn int(x: Option<f64>) -> String {
    x.map(|v| {
        if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            crate::report::fixed((v * 10.0).round() / 10.0)
        }
    })
    .unwrap_or_else(|| "–".into())
}

/// A numeric cell: `data-v` carries the raw number for sorting.
fn num_td(x: Option<f64>, text: String) -> String {
    format!(
        "<td class=\"n\" data-v=\"{}\">{}</td>",
        x.map(crate::report::fixed).unwrap_or_default(),
        esc(&text)
    )
}

/// A chart that failed to draw: the report is not written.
#[derive(Debug, thiserror::Error)]
#[error("drawing the {kind} chart: {message}")]
pub struct ChartError {
    /// Which chart (`ttd`, `heatmap`, ...).
    kind: &'static str,
    /// What the drawing backend said (as text: sections are drawn on
    /// several threads, and the backend's errors cannot cross them).
    message: String,
}

/// Wrap a chart's SVG in a figure; a chart that fails to draw is a report error.
fn figure(
    svg: std::result::Result<String, Box<dyn std::error::Error>>,
    kind: &'static str,
    caption: &str,
) -> std::result::Result<String, ChartError> {
    let svg = svg.map_err(|e| ChartError {
        kind,
        message: e.to_string(),
    })?;
    Ok(format!(
        "<figure class=\"chart\" data-chart=\"{kind}\">{svg}<figcaption>{caption}</figcaption></figure>\n"
    ))
}

/// Render the whole page.
#[cfg(test)]
pub fn render(d: &ReportData) -> std::io::Result<String> {
    let mut out = Vec::new();
    write(d, &mut out)?;
    Ok(String::from_utf8(out).expect("the report is UTF-8"))
}

/// One section of the report, rendered into a string.
type Section = fn(&mut String, &ReportData) -> std::result::Result<(), ChartError>;

/// A section that grows with the corpus (every false positive and missed
/// loop explained, every input file listed: 4.7 and 3.5 MB of a
/// 20,000-session report), written straight to the file as it is made when
/// its turn comes, never held.
type Streamed = fn(&mut dyn std::fmt::Write, &ReportData) -> std::io::Result<()>;

/// A section of the report, in order.
enum Part {
    Held(Section),
    Streamed(Streamed),
}

/// A piece of the report: text, written as it is or folded ([`fold`]), or
/// a section written (and folded) only when its turn to be written comes.
enum Piece {
    Text { folded: bool, text: String },
    Later(Streamed),
}

/// The report in order, as pieces.
fn pieces(d: &ReportData) -> std::result::Result<Vec<Piece>, ChartError> {
    let s = &d.summary;
    let mut out = Vec::new();
    let mut h = String::with_capacity(1 << 20);
    let script_hash = base64(&Sha256::digest(JS.as_bytes()));
    let csp = format!(
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'; \
         font-src data:; img-src data:; base-uri 'none'; form-action 'none'"
    );
    let font_face = |family: &str, weight: u32, bytes: &[u8]| {
        format!(
            "@font-face {{ font-family: {family}; font-weight: {weight}; font-style: normal; \
             src: url(data:font/woff2;base64,{}) format(\"woff2\"); }}\n",
            base64(bytes)
        )
    };
    let title = format!("looptune sweep: {}", s.grid.name);
    let _ = writeln!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{}{}{}{CSS}</style>\n</head>\n<body>\n<main>",
        esc(&title),
        font_face(charts::FONT, 400, FONT_SANS),
        font_face(charts::FONT, 700, FONT_BOLD),
        font_face("looptune-mono", 400, FONT_MONO),
    );
    let _ = writeln!(
        h,
        "<h1>Loop-detector sweep: <span class=\"mono\">{}</span></h1>\n\
         <p class=\"sub\">{} replayed over {} sessions ({} turns); looptune {}; {:.1} s.</p>",
        esc(&s.grid.name),
        config_count(d),
        s.totals.sessions,
        s.totals.turns,
        esc(&s.looptune_version),
        s.wall_time_ms as f64 / 1000.0
    );
    h.push_str(
        "<nav><a href=\"#recommendation\">Recommendation</a><a href=\"#groups\">By group</a><a href=\"#explained\">Explained</a><a href=\"#families\">Families</a>\
         <a href=\"#ttd\">Turns to detection</a><a href=\"#fp-recall\">False positives vs recall</a>\
         <a href=\"#constants\">Each constant</a><a href=\"#heatmaps\">Heatmaps</a>\
         <a href=\"#sessions\">Sessions</a><a href=\"#configs\">All configurations</a>\
         <a href=\"#inputs\">Inputs</a><a href=\"#grid\">Grid</a></nav>\n",
    );
    let note = if s.note.is_empty() {
        "Replay cannot know how the model would have reacted to a warning or a stop."
    } else {
        &s.note
    };
    let _ = writeln!(
        h,
        "<p class=\"note\"><b>Read with care.</b> {}</p>",
        esc(note)
    );

    // The sections are independent: each is rendered on its own thread of
    // the pool (charts and the table of every configuration are most of a
    // large report), then joined in order.
    let sections: [Part; 11] = [
        Part::Held(recommendation),
        Part::Held(groups_section),
        Part::Streamed(explained),
        Part::Held(|h, d| {
            families(h, d);
            Ok(())
        }),
        Part::Held(ttd_section),
        Part::Held(fp_recall_section),
        Part::Held(constants_section),
        Part::Held(heatmaps_section),
        Part::Held(sessions),
        Part::Held(|h, d| {
            config_table(h, d);
            Ok(())
        }),
        Part::Streamed(inputs),
    ];
    let parts: Vec<std::result::Result<Piece, ChartError>> = sections
        .par_iter()
        .enumerate()
        .map(|(i, part)| match part {
            Part::Held(section) => {
                let mut text = String::new();
                section(&mut text, d).map(|()| Piece::Text {
                    folded: i > 0,
                    text,
                })
            }
            Part::Streamed(section) => Ok(Piece::Later(*section)),
        })
        .collect();
    // The decision leads; every section after it is folded (its heading
    // stays, the nav and a link to it open it).
    out.push(Piece::Text {
        folded: false,
        text: h,
    });
    for part in parts {
        out.push(part?);
    }
    let mut h = String::new();
    h.push_str(&fold(format!(
        "<h2 id=\"grid\">Grid</h2>\n<p>The grid file as given (base profile <code>{}</code>, {} axes). \
         Rerun with <code>looptune sweep --grid FILE</code>.</p>\n<pre class=\"src\">{}</pre>\n",
        esc(&s.grid.base_profile),
        s.grid.axes.len(),
        esc(&s.grid.source)
    )));
    let _ = writeln!(
        h,
        "<footer>Written by looptune {} from summary.json and sweep.csv; regenerate with \
         <code>looptune report DIR</code>. Fonts: DejaVu Sans and DejaVu Sans Mono subsets \
         (Bitstream Vera license; DejaVu changes in the public domain).</footer>\n\
         </main>\n<script>{JS}</script>\n</body>\n</html>",
        esc(&s.looptune_version)
    );
    out.push(Piece::Text {
        folded: false,
        text: h,
    });
    Ok(out)
}

const FOLD_OPEN: &str = "<details class=\"fold\"><summary>";
const FOLD_CLOSE: &str = "</details>\n";

/// Where a section's heading ends, if it starts with one (what [`fold`] folds).
fn fold_at(section: &str) -> Option<usize> {
    section
        .starts_with("<h2")
        .then(|| section.find("</h2>"))
        .flatten()
        .map(|end| end + "</h2>".len())
}

/// A section that starts with its `<h2>`, folded: the heading is the
/// `<summary>` of a closed `<details class="fold">`. Anything else (a section
/// with nothing to show) is left as it is.
fn fold(section: String) -> String {
    let Some(end) = fold_at(&section) else {
        return section;
    };
    let (head, body) = section.split_at(end);
    format!("{FOLD_OPEN}{head}</summary>{body}{FOLD_CLOSE}")
}

/// `0.55 [0.28, 0.79]` from a row's score and its interval columns.
fn with_ci(r: &Row, name: &str) -> String {
    let ci = match (
        r.score(&format!("{name}_lo")),
        r.score(&format!("{name}_hi")),
    ) {
        (Some(a), Some(b)) => format!(
            " {}",
            crate::util::number::interval(pct(Some(a)), pct(Some(b)))
        ),
        _ => String::new(),
    };
    format!("{}{ci}", pct(r.score(name)))
}

fn pair_text(ci: Option<[f64; 2]>, show: impl Fn(f64) -> String) -> String {
    ci.map(|[a, b]| format!(" {}", crate::util::number::interval(show(a), show(b))))
        .unwrap_or_default()
}

fn recommendation(h: &mut String, d: &ReportData) -> std::result::Result<(), ChartError> {
    let s = &d.summary;
    h.push_str("<h2 id=\"recommendation\">Recommendation</h2>\n");
    let _ = writeln!(h, "<p>Rule: {}.</p>", esc(&s.objective));
    for w in &s.label_warnings {
        let _ = writeln!(h, "<p class=\"note\"><b>Few labels.</b> {}</p>", esc(w));
    }
    let base = s
        .baseline
        .as_ref()
        .or(s.stock.as_ref())
        .and_then(|r| d.row(&r.config));
    let rec_info = s.recommendation.as_ref();
    let rec = rec_info.and_then(|r| d.row(&r.config));
    if let Some(why) = &s.recommendation_reason {
        let _ = writeln!(h, "<p><b>No recommendation:</b> {}.</p>", esc(why));
    }
    let Some(base) = base else {
        return Ok(());
    };
    // Baseline, recommendation, each other family's best, the union: side by side.
    let mut shown: Vec<(String, &Row, Option<[f64; 2]>)> = vec![(
        "baseline".into(),
        base,
        rec_info
            .and_then(|r| r.baseline.as_ref())
            .and_then(|b| b.ttd_median_ci),
    )];
    if let (Some(info), Some(rec)) = (rec_info, rec) {
        shown.push(("recommended".into(), rec, info.ttd_median_ci));
    }
    for fb in &s.family_best {
        if let Some(row) = fb.best.as_ref().and_then(|b| d.row(&b.config)) {
            shown.push((format!("best {}", fb.family), row, None));
        }
    }
    if let Some(u) = &s.union {
        if let Some(row) = d.row(&u.config) {
            shown.push(("union (any member fires)".into(), row, u.ttd_median_ci));
        }
    }
    if s.labels.loops == 0 {
        let _ = writeln!(
            h,
            "<p>The baseline <b>{}</b> fires on {} sessions; the table of all configurations shows how often each would interrupt.</p>",
            esc(d.label(base)),
            int(base.score("detections"))
        );
        live(h, d);
        return Ok(());
    }
    let g = &s.groups;
    // The guard is part of the rule: without it here, the box named a rule
    // that would have chosen otherwise.
    let guard = match g.guard.as_str() {
        "pooled" => String::new(),
        "interval" => format!(
            ", and no {} whose loss against the baseline is beyond the baseline's 95% interval there",
            esc(&g.by)
        ),
        _ => format!(
            ", and no {} worse off than with the baseline (fewer of its loops caught or more false positives)",
            esc(&g.by)
        ),
    };
    let _ = writeln!(
        h,
        "<p class=\"note\">\u{201c}Recommended\u{201d} and every \u{201c}best\u{201d} in this report follow one rule: {}{guard}.</p>",
        esc(&s.objective)
    );
    let _ = writeln!(
        h,
        "<div class=\"scroll\"><table><thead><tr><th></th><th>configuration</th>{}{}{}{}{}<th class=\"n\">n</th></tr></thead><tbody>",
        th("recall", CI),
        th("precision", CI),
        th("false_positives", ""),
        th("fp_rate", CI),
        th("ttd_median", CI),
    );
    for (role, r, ttd_ci) in &shown {
        let class = match role.as_str() {
            "recommended" => " class=\"rec\"",
            "baseline" => " class=\"base\"",
            _ => "",
        };
        let _ = writeln!(
            h,
            "<tr{class}><td>{}</td><td><a href=\"#cfg-{}\">{}</a></td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{} of {}</td><td class=\"n\">{}</td><td class=\"n\">{}{}</td><td class=\"n\">{}</td></tr>",
            esc(role),
            esc(&r.config),
            esc(d.label(r)),
            esc(&with_ci(r, "recall")),
            esc(&with_ci(r, "precision")),
            int(r.score("false_positives")),
            int(r.score("labeled_clean")),
            esc(&with_ci(r, "fp_rate")),
            int(r.score("ttd_median")),
            esc(&pair_text(*ttd_ci, crate::report::fixed)),
            int(r.score("ttd_n")),
        );
    }
    h.push_str("</tbody></table></div>\n");
    live(h, d);
    let mut bars: Vec<charts::IntervalRow> = shown
        .iter()
        .map(|(role, r, _)| charts::interval_row(d, role, r))
        .collect();
    if let (Some(cv), Some(rec)) = (rec_info.and_then(|r| r.cross_validation.as_ref()), rec) {
        let role = "recommended, out of sample";
        let recall = cv.recall.zip(cv.recall_ci.map(|[a, b]| (a, b)));
        let fp_rate = cv.fp_rate.zip(cv.fp_rate_ci.map(|[a, b]| (a, b)));
        let show = |x: Option<(f64, (f64, f64))>| match x {
            Some((v, (lo, hi))) => {
                format!(
                    "{} {}",
                    pct(Some(v)),
                    crate::util::number::interval(pct(Some(lo)), pct(Some(hi)))
                )
            }
            None => "–".into(),
        };
        bars.push(charts::IntervalRow {
            role: role.into(),
            recall,
            fp_rate,
            config: Some(rec.config.clone()),
            tip: format!(
                "{role}: {} ({})\nthe choosing procedure scored on held-out folds ({}-fold cross-validation)\n\
                 recall {} over {} labeled loops\nfalse positives per clean session {}: {} of {} labeled clean sessions",
                d.label(rec),
                rec.config,
                cv.folds,
                show(recall),
                cv.labeled_loops,
                show(fp_rate),
                cv.false_positives,
                cv.labeled_clean
            ),
        });
    }
    h.push_str(&figure(
        charts::interval_chart(&bars),
        "intervals",
        "Recall and false positives per clean session with 95% Wilson intervals: where bars overlap, these labels cannot tell the two apart.",
    )?);
    if let (Some(info), Some(rec)) = (rec_info, rec) {
        if let Some(cv) = &info.cross_validation {
            cross_validation(h, d, cv, rec, "recommendation");
        } else if let Some(why) = &info.cross_validation_reason {
            let _ = writeln!(h, "<p>No out-of-sample estimate: {}.</p>", esc(why));
        }
        if let Some(c) = d.config(&rec.config) {
            if !c.overrides.is_empty() {
                let list: Vec<String> = c
                    .overrides
                    .iter()
                    .map(|(k, v)| format!("<code>{}={}</code>", esc(k), esc(v)))
                    .collect();
                let _ = writeln!(
                    h,
                    "<p>The recommendation changes {} of profile <code>{}</code>.</p>",
                    list.join(", "),
                    esc(&c.profile)
                );
            }
        }
    }
    if let Some(u) = &s.union {
        if let (Some(cv), Some(row)) = (&u.cross_validation, d.row(&u.config)) {
            cross_validation(h, d, cv, row, "union");
        }
        h.push_str("<p>A union flags a session when any member fires, at the earliest member's turn. No agent ships one: you would have to build it.</p>\n");
    }
    across_groups(h, d);
    Ok(())
}

/// The agent's own detections (`loop_detected` records, e.g. Gemini CLI's
/// telemetry) beside the replay: how many the baseline and the other stock
/// profiles reproduce at the same turn, as the terminal says it. Nothing
/// when no session kept one.
fn live(h: &mut String, d: &ReportData) {
    let Some(l) = &d.summary.live else {
        return;
    };
    let mut kinds: Vec<(&String, &usize)> = l.kinds.iter().collect();
    kinds.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let kinds: Vec<String> = kinds
        .into_iter()
        .map(|(k, n)| {
            let k = if k.is_empty() { "unnamed" } else { k };
            format!("{n} <code>{}</code>", esc(k))
        })
        .collect();
    let _ = writeln!(
        h,
        "<h3 id=\"live\">Live detections</h3>\n<p>The agent's own detector fired in {} {} \
         (the first <code>loop_detected</code> record of each: {}). The baseline <b>{}</b> \
         reproduces {} of them at the same turn; below it, every other stock profile that reproduces any.</p>",
        l.sessions,
        if l.sessions == 1 { "session" } else { "sessions" },
        kinds.join(", "),
        esc(&l.baseline.label),
        l.baseline.reproduced,
    );
    let _ = writeln!(
        h,
        "<div class=\"scroll\"><table class=\"live\"><thead><tr><th></th><th>configuration</th>\
         <th class=\"n\">reproduced at the same turn</th></tr></thead><tbody>"
    );
    let rows =
        std::iter::once(("baseline", &l.baseline)).chain(l.stock.iter().map(|k| ("stock", k)));
    for (role, k) in rows {
        let class = if role == "baseline" {
            " class=\"base\""
        } else {
            ""
        };
        let _ = writeln!(
            h,
            "<tr{class}><td>{role}</td><td><a href=\"#cfg-{}\">{}</a></td><td class=\"n\">{} of {}</td></tr>",
            esc(&k.config),
            esc(&k.label),
            k.reproduced,
            l.sessions,
        );
    }
    h.push_str("</tbody></table></div>\n");
}

/// Whether the choices carry across groups, said with the decision (the
/// per-group section itself is folded below it).
fn across_groups(h: &mut String, d: &ReportData) {
    let v = &d.summary.groups;
    let by = esc(&v.by);
    for gv in &v.validation {
        let p = &gv.pooled;
        let carries = !gv.carries_not();
        let _ = writeln!(
            h,
            "<p{}><b>Across {by}s.</b> Chosen without each {by} and scored on it, the {} procedure catches {}/{} loops \
             with {}/{} false positives: {}. See <a href=\"#groups\">By {by}</a>.</p>",
            if carries { "" } else { " class=\"note\"" },
            esc(&gv.what),
            p.tp,
            p.loops,
            p.fp,
            p.clean,
            if carries {
                "in sample and out of group agree within the intervals".to_string()
            } else {
                format!("<b>this choice does not carry across {by}s</b>")
            }
        );
    }
    if let Some(n) = &v.guard_note {
        let _ = writeln!(h, "<p class=\"note\"><b>Guard.</b> {}.</p>", esc(n));
    }
}

/// In-sample beside out-of-sample, the folds' choices, and a plain verdict.
fn cross_validation(h: &mut String, d: &ReportData, cv: &CrossValidation, row: &Row, what: &str) {
    let _ = writeln!(
        h,
        "<h3>The {what} on sessions it never saw</h3>\n<p>Stratified {}-fold cross-validation (seed {}): in each fold the {what} is chosen again on the other folds, with the same rule, and scored on the held-out fold; the held-out scores are pooled.</p>",
        cv.folds, cv.seed
    );
    let pct_ci = |x: Option<f64>, ci: Option<[f64; 2]>| {
        format!("{}{}", pct(x), pair_text(ci, |v| pct(Some(v))))
    };
    let _ = writeln!(
        h,
        "<table><thead><tr><th></th>{}{}{}{}</tr></thead><tbody>\n\
         <tr><td>in sample</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{} of {}</td><td class=\"n\">{}</td></tr>\n\
         <tr><td>out of sample</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{} of {}</td><td class=\"n\">{}</td></tr>\n</tbody></table>",
        th("recall", CI),
        th("precision", CI),
        th("false_positives", ""),
        th("f1", ""),
        esc(&with_ci(row, "recall")),
        esc(&with_ci(row, "precision")),
        int(row.score("false_positives")),
        int(row.score("labeled_clean")),
        dec(row.score("f1")),
        esc(&pct_ci(cv.recall, cv.recall_ci)),
        esc(&pct_ci(cv.precision, cv.precision_ci)),
        cv.false_positives,
        cv.labeled_clean,
        dec(cv.f1),
    );
    let mut chosen: Vec<(&String, &u64)> = cv.chosen.iter().collect();
    chosen.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    h.push_str("<ul>");
    for (ids, k) in &chosen {
        let names: Vec<String> = ids
            .split('|')
            .map(|id| match d.config(id) {
                _ if d.summary.combined_in_folds.as_deref() == Some(id) => {
                    crate::score::COMBINED_IN_FOLD.to_string()
                }
                Some(c) => c.label.clone(),
                None => id.to_string(),
            })
            .collect();
        let _ = write!(
            h,
            "<li>chosen in {k} of {} folds: {}</li>",
            cv.folds,
            esc(&names.join(" | "))
        );
    }
    h.push_str("</ul>\n");
    let outside = |x: Option<f64>, ci: Option<[f64; 2]>| match (x, ci) {
        (Some(x), Some([lo, hi])) => x < lo - 1e-9 || x > hi + 1e-9,
        _ => false,
    };
    let disagree =
        outside(row.score("recall"), cv.recall_ci) || outside(row.score("fp_rate"), cv.fp_rate_ci);
    if disagree {
        h.push_str("<p class=\"note\"><b>In sample and out of sample disagree.</b> The in-sample figure lies outside the out-of-sample interval: the choice is fitted to these sessions. Expect the out-of-sample figures, and label more sessions.</p>\n");
    } else {
        h.push_str("<p>In sample and out of sample agree within the intervals.</p>\n");
    }
    if chosen.first().is_some_and(|(_, k)| **k * 2 <= cv.folds) {
        h.push_str("<p class=\"note\">The folds chose different configurations: the choice is unstable on these labels.</p>\n");
    }
}

fn families(h: &mut String, d: &ReportData) {
    h.push_str(
        "<h2 id=\"families\">Families side by side</h2>\n<p>Every stock profile, grouped by detector family, \
         with the family's best configuration under the recommendation's rule (",
    );
    h.push_str(&esc(&d.summary.objective));
    h.push_str(").</p>\n");
    let _ = writeln!(
        h,
        "<div class=\"scroll\"><table><thead><tr><th>profile</th>{}</tr></thead><tbody>",
        ths(TABLE_SCORES)
    );
    let rec = d.rows.iter().find(|r| r.recommended);
    for (family, rows) in charts::group_by(d.rows.iter(), |r| r.family.clone()) {
        let _ = writeln!(
            h,
            "<tr class=\"fam\"><th colspan=\"9\">{}</th></tr>",
            esc(&family)
        );
        let mut shown: Vec<&Row> = rows.iter().copied().filter(|r| r.stock).collect();
        // "Best" means one thing in the whole report: best under the rule.
        let best = d
            .summary
            .family_best
            .iter()
            .find(|fb| fb.family == family)
            .and_then(|fb| fb.best.as_ref())
            .and_then(|b| d.row(&b.config));
        shown.extend(best.filter(|b| !shown.iter().any(|s| s.config == b.config)));
        if let Some(r) =
            rec.filter(|r| r.family == family && !shown.iter().any(|s| s.config == r.config))
        {
            shown.push(r);
        }
        for r in shown {
            let class = if r.recommended {
                " class=\"rec\""
            } else if d
                .summary
                .stock
                .as_ref()
                .is_some_and(|s| s.config == r.config)
            {
                " class=\"base\""
            } else {
                ""
            };
            let mut tags = String::new();
            if r.recommended {
                tags.push_str(" <span class=\"tag rec\">recommended</span>");
            }
            if best.is_some_and(|b| b.config == r.config) {
                tags.push_str(" <span class=\"tag\">best under the rule</span>");
            }
            let _ = writeln!(
                h,
                "<tr{class}><td>{}{tags}</td>{}{}{}{}{}{}{}{}</tr>",
                esc(d.label(r)),
                num_td(r.score("recall"), pct(r.score("recall"))),
                num_td(r.score("false_positives"), int(r.score("false_positives"))),
                num_td(r.score("fp_per_1k_turns"), dec(r.score("fp_per_1k_turns"))),
                num_td(r.score("precision"), pct(r.score("precision"))),
                num_td(r.score("f1"), dec(r.score("f1"))),
                num_td(r.score("ttd_median"), median_n(r)),
                num_td(r.score("ttd_p90"), int(r.score("ttd_p90"))),
                num_td(r.score("detections"), int(r.score("detections"))),
            );
        }
    }
    h.push_str("</tbody></table></div>\n");
}

fn list(names: &[String]) -> String {
    names.iter().map(|n| esc(n)).collect::<Vec<_>>().join(", ")
}

/// `2/6 · 0/20`: loops caught of loops and false positives of clean sessions.
fn group_cell(c: &crate::score::recommend::GroupCount) -> String {
    if c.loops + c.clean == 0 {
        "–".into()
    } else {
        format!("{}/{} · {}/{}", c.tp, c.loops, c.fp, c.clean)
    }
}

/// Recall, precision, false positives and F1 of a held-out tally, with intervals.
fn tally_cells(p: &crate::score::recommend::Tally) -> String {
    let ci = |c: Option<(f64, f64)>| {
        c.map_or(String::new(), |(a, b)| {
            format!(" [{}, {}]", pct(Some(a)), pct(Some(b)))
        })
    };
    format!(
        "<td>{}{}</td><td>{}{}</td><td>{}/{}{}</td><td>{}</td>",
        pct(Some(p.recall())),
        ci(crate::score::stats::wilson(p.tp, p.loops)),
        if p.tp + p.fp > 0 {
            pct(Some(p.precision()))
        } else {
            "–".into()
        },
        ci(crate::score::stats::wilson(p.tp, p.tp + p.fp)),
        p.fp,
        p.clean,
        ci(crate::score::stats::wilson(p.fp, p.clean)),
        dec(Some(p.f1()))
    )
}

/// Scores per group: small multiples, a table, what the guard did, where
/// each gain comes from, leave-one-group-out, and the test sessions.
fn groups_section(h: &mut String, d: &ReportData) -> std::result::Result<(), ChartError> {
    let v = &d.summary.groups;
    if v.names.is_empty() {
        return Ok(());
    }
    let by = esc(&v.by);
    let _ = writeln!(
        h,
        "<h2 id=\"groups\">By {by}</h2>\n<p>The summary's configurations on each {by}'s sessions alone \
         (loops caught of labelled loops · false positives of labelled clean sessions). A choice that helps \
         one {by} by hurting another does not carry over: the red counts are worse than the baseline's in that \
         {by}. Guard: <b>{}</b>{}</p>",
        esc(&v.guard),
        if v.guard == "per-group" {
            format!(" (no {by} may lose a caught loop or gain a false positive against the baseline).")
        } else if v.guard == "interval" {
            format!(" (no {by} may lose more than its size allows: recall below the lower end of the baseline's 95% interval there, or a false-positive rate above its upper end).")
        } else {
            " (only the pooled counts matter).".to_string()
        }
    );
    if let Some(n) = &v.guard_note {
        let _ = writeln!(h, "<p class=\"note\"><b>Guard.</b> {}.</p>", esc(n));
    }
    for c in &v.concentrated {
        let _ = writeln!(h, "<p class=\"note\"><b>From one {by}.</b> {}</p>", esc(c));
    }
    if v.names.len() >= 2 && !v.rows.is_empty() {
        h.push_str(&figure(
            charts::groups_chart(v),
            "groups",
            &format!("One panel per {by}: the bar is the share of its labelled loops caught, the text its catches and false positives."),
        )?);
    }
    h.push_str("<div class=\"scroll\"><table class=\"groups\"><thead><tr><th>");
    h.push_str(&by);
    h.push_str("</th><th>sessions</th>");
    for r in &v.rows {
        let _ = write!(h, "<th title=\"{}\">{}</th>", esc(&r.label), esc(&r.role));
    }
    h.push_str("</tr></thead><tbody>\n");
    for (gi, name) in v.names.iter().enumerate() {
        let _ = write!(h, "<tr><td>{}</td><td>{}</td>", esc(name), v.sessions[gi]);
        let base = v.rows.first().map(|r| r.counts[gi]);
        for r in &v.rows {
            let c = r.counts[gi];
            let worse = base.is_some_and(|b| c.worse_than(&b));
            let _ = write!(
                h,
                "<td{}>{}</td>",
                if worse { " class=\"worse\"" } else { "" },
                group_cell(&c)
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table></div>\n");
    for gv in &v.validation {
        let _ = writeln!(
            h,
            "<h3>Leave one {by} out: the {} procedure</h3>\n<p>For each {by}, chosen on the other {by}s' sessions \
             and scored on this one: how the choice does on a {by} it never saw.</p>",
            esc(&gv.what)
        );
        h.push_str("<table><thead><tr><th></th><th>recall</th><th>precision</th><th>false positives</th><th>F1</th></tr></thead><tbody>\n");
        let _ = writeln!(
            h,
            "<tr><td>out of {by}, pooled</td>{}</tr>",
            tally_cells(&gv.pooled)
        );
        h.push_str("</tbody></table>\n<table><thead><tr><th>held out</th><th>caught</th><th>false positives</th><th>chosen on the others</th></tr></thead><tbody>\n");
        for (name, t, chosen) in &gv.groups {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}/{}</td><td>{}/{}</td><td class=\"mono\">{}</td></tr>",
                esc(name),
                t.tp,
                t.loops,
                t.fp,
                t.clean,
                esc(chosen)
            );
        }
        h.push_str("</tbody></table>\n");
        if gv.in_sample.is_some() {
            let off = gv.carries_not();
            let _ = writeln!(
                h,
                "<p{}>{}</p>",
                if off { " class=\"note\"" } else { "" },
                if off {
                    format!("<b>This choice does not carry across {by}s:</b> the in-sample figure lies outside the out-of-{by} interval; expect the out-of-{by} figures on a {by} it was not chosen on.")
                } else {
                    format!("In sample and out of {by} agree within the intervals.")
                }
            );
        }
    }
    if let Some(why) = &v.validation_reason {
        let _ = writeln!(h, "<p>No leave-one-{by}-out estimate: {}.</p>", esc(why));
    }
    if let Some(t) = &v.test {
        let _ = writeln!(
            h,
            "<h3 id=\"test\">Test sessions</h3>\n<p>{} sessions never chosen on, scored once with what was chosen on the others.</p>",
            t.sessions
        );
        h.push_str("<table><thead><tr><th></th><th>configuration</th><th>recall</th><th>precision</th><th>false positives</th><th>F1</th></tr></thead><tbody>\n");
        for (role, label, tally) in &t.rows {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td class=\"mono\">{}</td>{}</tr>",
                esc(role),
                esc(label),
                tally_cells(tally)
            );
        }
        h.push_str("</tbody></table>\n");
    }
    Ok(())
}

/// Turns to detection.
fn ttd_section(h: &mut String, d: &ReportData) -> std::result::Result<(), ChartError> {
    let ttd = charts::ttd_data(d);
    h.push_str("<h2 id=\"ttd\">Turns to detection</h2>\n<p>How many turns after the labeled onset each configuration \
                fired on the loops it caught (1 = on the onset turn). Stock profiles and the recommended configuration (★); \
                profiles with identical distributions share a row. Top: one row each, a dot per turn sized by how many loops \
                were detected then, the median ticked and written on the right with its sample size; bottom: the share of \
                all labeled loops detected by each turn, which ends at the configuration's recall (the first eight rows in \
                colour, the rest grey). Hover a dot, a curve's step or a name for the numbers; click to find the \
                configuration's row.</p>\n");
    let mut cap = String::new();
    for s in ttd.series.iter().filter(|s| s.members.len() > 1) {
        let _ = write!(cap, "Drawn together: {}. ", list(&s.members));
    }
    if !ttd.silent.is_empty() {
        let _ = write!(cap, "Detected no labeled loop: {}. ", list(&ttd.silent));
    }
    if ttd.lo == 0 {
        cap.push_str("Detections before the labeled onset are counted at ≤0. ");
    }
    h.push_str(&figure(charts::ttd_chart(&ttd), "ttd", &cap)?);
    Ok(())
}

/// False positives vs recall.
fn fp_recall_section(h: &mut String, d: &ReportData) -> std::result::Result<(), ChartError> {
    let fr = charts::fp_recall_data(d);
    h.push_str("<h2 id=\"fp-recall\">False positives vs recall</h2>\n<p>Every configuration. Up and to the left is better. \
                Blue points are on the Pareto front (no configuration has fewer false positives, fewer missed loops and \
                faster detection at once); the line is that front seen in these two scores.</p>\n");
    let mut cap = String::from("<ol class=\"key\">");
    for n in &fr.named {
        let _ = write!(
            cap,
            "<li{}>{} <span class=\"m\">({} false positives, recall {})</span></li>",
            if n.recommended { " class=\"rec\"" } else { "" },
            list(&n.labels),
            crate::report::fixed(n.fp),
            pct(Some(n.recall))
        );
    }
    cap.push_str("</ol>");
    if fr.unscored > 0 {
        let _ = write!(
            cap,
            "{} configurations have no recall (no labeled loops) and are not drawn.",
            fr.unscored
        );
    }
    h.push_str(&figure(charts::fp_recall_chart(&fr), "fp-recall", &cap)?);
    Ok(())
}

/// One curve per swept constant.
fn constants_section(h: &mut String, d: &ReportData) -> std::result::Result<(), ChartError> {
    h.push_str("<h2 id=\"constants\">Each constant on its own</h2>\n<p>Every swept constant moved alone, all others at the \
                profile's stock values; the ringed point is the stock value.</p>\n");
    let curves = charts::axis_curves(d);
    if curves.is_empty() {
        h.push_str("<p>The grid moves no constant on its own.</p>\n");
    }
    for c in &curves {
        let _ = writeln!(
            h,
            "<h3><code>{}</code> on <code>{}</code></h3>",
            esc(&c.axis),
            esc(&c.profile)
        );
        let values: Vec<String> = c.points.iter().map(|p| p.value.clone()).collect();
        let cap = format!("{} values: {}.", values.len(), list(&values));
        h.push_str(&figure(charts::axis_chart(c), "axis", &cap)?);
    }
    Ok(())
}

/// Heatmaps.
fn heatmaps_section(h: &mut String, d: &ReportData) -> std::result::Result<(), ChartError> {
    h.push_str("<h2 id=\"heatmaps\">Pairs of constants</h2>\n<p>For every sub-grid with two or more axes: F1 over each \
                pair, any third axis held at its stock value; the outlined cell is the stock profile. False positives \
                beside each map; recall under it. Each metric has one colour scale for every map (F1 and recall 0 to 1, false \
                positives 0 to the most in any map), so a colour means the same value everywhere. Hover a cell for its \
                configuration and scores; click it to find its row in the table of all configurations.</p>\n");
    let maps = charts::heatmaps(d);
    if maps.is_empty() {
        h.push_str("<p>The grid has no sub-grid with two or more axes.</p>\n");
    }
    let scale = |metric| charts::HeatScale::over(&maps, metric);
    let (f1, fp, recall) = (
        scale(HeatMetric::F1),
        scale(HeatMetric::FalsePositives),
        scale(HeatMetric::Recall),
    );
    for m in &maps {
        let held: Vec<String> = m
            .held
            .iter()
            .map(|(k, v)| format!("<code>{}={}</code>", esc(k), esc(v)))
            .collect();
        let _ = writeln!(
            h,
            "<h3><code>{}</code> × <code>{}</code> on <code>{}</code>{}</h3>",
            esc(&m.x_axis),
            esc(&m.y_axis),
            esc(&m.profile),
            if held.is_empty() {
                String::new()
            } else {
                format!(", with {}", held.join(", "))
            }
        );
        h.push_str("<div class=\"pair\">");
        h.push_str(&figure(charts::heatmap_chart(m, &f1), "heatmap", "")?);
        h.push_str(&figure(charts::heatmap_chart(m, &fp), "heatmap", "")?);
        h.push_str("</div>\n<details><summary>Recall</summary><div class=\"pair\">");
        h.push_str(&figure(charts::heatmap_chart(m, &recall), "heatmap", "")?);
        h.push_str("</div></details>\n");
    }
    Ok(())
}

fn sessions(h: &mut String, d: &ReportData) -> std::result::Result<(), ChartError> {
    h.push_str("<h2 id=\"sessions\">Sessions where configurations disagree</h2>\n<p>The sessions where the stock profiles \
                and the recommendation disagree most: activity per turn, where each fires (configurations firing at the \
                same turn share a lane), and the transcript around each detection.</p>\n");
    if d.summary.disagreements.is_empty() {
        h.push_str("<p>The compared configurations agree on every session.</p>\n");
    }
    let root = input_root(d.summary.inputs.files.iter().map(|f| f.path.as_str()));
    for (i, s) in d.summary.disagreements.iter().enumerate() {
        let t = charts::timeline_data(d, s);
        let _ = writeln!(
            h,
            "<section class=\"session\" id=\"session-{i}\"><h3 class=\"mono\">{}</h3>\n<p>{} turns; label: <b>{}</b>{}.</p>",
            esc(&s.session),
            s.turns,
            esc(s.label.as_deref().unwrap_or("none")),
            s.onset_turn
                .map(|o| format!(", onset at turn {o}"))
                .unwrap_or_default()
        );
        let cap = if t.silent.is_empty() {
            String::new()
        } else {
            format!("Did not fire: {}.", list(&t.silent))
        };
        h.push_str(&figure(charts::timeline_chart(&t), "timeline", &cap)?);
        h.push_str("<div class=\"scroll\"><table><thead><tr><th>configuration</th><th class=\"n\">turn</th><th class=\"n\">record</th><th>kind</th><th>detail</th></tr></thead><tbody>\n");
        for det in &s.detections {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"mono\">{}</td></tr>",
                esc(&det.label),
                det.turn,
                det.event,
                esc(&det.kind),
                esc(&det.detail)
            );
        }
        h.push_str("</tbody></table></div>\n");
        for x in &s.excerpts {
            let who: Vec<String> = s
                .detections
                .iter()
                .filter(|d| d.event == u64::from(x.event))
                .map(|d| d.label.clone())
                .collect();
            let intro = format!("Around record {} (fired by {})", x.event, list(&who));
            excerpt(h, &root, &intro, &x.lines);
        }
        h.push_str("</section>\n");
    }
    Ok(())
}

/// A median turns-to-detection with its sample size: `6.5 (n=2)`.
fn median_n(r: &Row) -> String {
    match r.score("ttd_median") {
        Some(m) => format!("{} (n={})", crate::report::fixed(m), int(r.score("ttd_n"))),
        None => "–".into(),
    }
}

/// The folder every input file is in (`a/b/` of `a/b/c.jsonl` and
/// `a/b/d/e.json`), which excerpts leave out of the paths they name.
fn input_root<'a>(mut files: impl Iterator<Item = &'a str>) -> String {
    let Some(first) = files.next() else {
        return String::new();
    };
    let mut root = first.rfind('/').map_or("", |i| &first[..=i]);
    for f in files {
        while !f.starts_with(root) {
            root = root[..root.len() - 1]
                .rfind('/')
                .map_or("", |i| &root[..=i]);
        }
    }
    root.to_string()
}

/// An excerpt: its file named once, relative to the input root, then its
/// records (empty ones left out), each with its line or pointer.
fn excerpt(
    h: &mut dyn std::fmt::Write,
    root: &str,
    intro: &str,
    lines: &[crate::result::ExcerptLine],
) {
    let file = lines
        .iter()
        .find_map(|l| l.place.as_ref())
        .map(|p| p.file.as_str());
    let _ = write!(h, "<p class=\"xhead\">{intro}");
    if let Some(f) = file {
        let _ = write!(
            h,
            " in <code>{}</code>",
            esc(f.strip_prefix(root).unwrap_or(f))
        );
    }
    let _ = h.write_str(":</p><div class=\"excerpt\">");
    for l in lines.iter().filter(|l| !l.text.trim().is_empty() || l.hit) {
        excerpt_line(h, l, root, file);
    }
    let _ = h.write_str("</div>\n");
}

/// One record of an excerpt: number, turn and place (its line, or its whole
/// place when it is not in the excerpt's `file`), type, text (all escaped).
fn excerpt_line(
    h: &mut dyn std::fmt::Write,
    l: &crate::result::ExcerptLine,
    root: &str,
    file: Option<&str>,
) {
    let place = l.place.as_ref().map(|p| {
        if Some(p.file.as_str()) == file {
            match (p.line, &p.pointer) {
                (Some(n), _) => format!("line {n}"),
                (None, Some(ptr)) => ptr.clone(),
                (None, None) => String::new(),
            }
        } else {
            let mut q = p.clone();
            q.file = p.file.strip_prefix(root).unwrap_or(&p.file).to_string();
            q.to_string()
        }
    });
    let _ = writeln!(
        h,
        "<div class=\"xl{}\"><span class=\"m\">#{} turn {}{}</span><span class=\"m\">{}</span><span class=\"t\">{}</span></div>",
        if l.hit { " hit" } else { "" },
        l.event,
        l.turn,
        place
            .filter(|p| !p.is_empty())
            .map(|p| format!(" · {}", esc(&p)))
            .unwrap_or_default(),
        esc(&l.kind),
        esc(&l.text)
    );
}

/// One section per false positive and missed loop of the baseline and the
/// recommendation: where, the records around it, and what each family did.
fn explained(h: &mut dyn std::fmt::Write, d: &ReportData) -> std::io::Result<()> {
    let count = d.explanation_count();
    let root = input_root(d.summary.inputs.files.iter().map(|f| f.path.as_str()));
    let _ = h.write_str("<h2 id=\"explained\">False positives and missed loops, explained</h2>\n");
    if count == 0 {
        let _ = h.write_str("<p>The baseline and the recommendation have no false positive and miss no labelled loop.</p>\n");
        return Ok(());
    }
    let _ = writeln!(
        h,
        "<p>{} cases of the baseline and the recommendation: where each is in its file, the records around it (around the labelled onset for a missed loop), and what every family's default profile did on the same session.</p>",
        count
    );
    let mut i = 0;
    d.each_explanation(|x| {
        let what = if x.verdict == "fp" {
            format!(
                "false positive at turn {}",
                x.turn.map_or("?".into(), |t| t.to_string())
            )
        } else {
            format!(
                "missed loop (labelled onset turn {})",
                x.onset_turn.map_or("?".into(), |t| t.to_string())
            )
        };
        let _ = writeln!(
            h,
            "<section class=\"session\" id=\"explain-{i}\"><h3><a href=\"#cfg-{}\">{}</a>: {} in <span class=\"mono\">{}</span></h3>",
            esc(&x.config),
            esc(&x.label),
            esc(&what),
            esc(&x.session)
        );
        if let Some(p) = &x.place {
            let _ = writeln!(h, "<p>At <code>{}</code>.</p>", esc(p));
        }
        if let (Some(k), Some(detail)) = (&x.kind, &x.detail) {
            let _ = writeln!(
                h,
                "<p><b>{}</b>: <span class=\"mono\">{}</span></p>",
                esc(k),
                esc(detail)
            );
        }
        if !x.lines.is_empty() {
            excerpt(h, &root, "The records around it", &x.lines);
        }
        let others: Vec<String> = x
            .others
            .iter()
            .map(|o| {
                format!(
                    "<a href=\"#cfg-{}\">{}</a>: {}",
                    esc(&o.config),
                    esc(&o.label),
                    match o.turn {
                        Some(t) => format!("fires at turn {t} ({})", esc(&o.verdict)),
                        None => format!("silent ({})", esc(&o.verdict)),
                    }
                )
            })
            .collect();
        let _ = writeln!(
            h,
            "<p>Every family on this session: {}.</p></section>",
            others.join("; ")
        );
        i += 1;
    })
}

/// How many configurations the grid has, as the terminal counts them, and
/// the union's row when `--combine` added one: one count everywhere.
fn config_count(d: &ReportData) -> String {
    let union = usize::from(d.summary.union.is_some());
    let n = d.rows.len() - union;
    let mut s = format!("{n} configurations");
    if union > 0 {
        s.push_str(" (plus one row for the best union of detectors, --combine)");
    }
    s
}

fn config_table(h: &mut String, d: &ReportData) {
    let _ = writeln!(
        h,
        "<h2 id=\"configs\">All configurations</h2>\n<p>{} in grid order; click a header to sort. \
         Every column of every configuration is in <code>sweep.csv</code>.</p>",
        config_count(d)
    );
    let _ = writeln!(
        h,
        "<input type=\"search\" data-filter=\"all-configs\" placeholder=\"filter: family, profile, value…\" hidden>\
         <div class=\"scroll tall\"><table class=\"sortable\" id=\"all-configs\"><thead><tr><th>id</th><th>family</th><th>profile</th>\
         <th>changes</th>{}<th>flags</th></tr></thead><tbody>",
        ths(TABLE_SCORES)
    );
    for r in &d.rows {
        let changes: Vec<String> = d
            .config(&r.config)
            .map(|c| {
                c.overrides
                    .iter()
                    .map(|(k, v)| format!("{}={}", esc(k), esc(v)))
                    .collect()
            })
            .unwrap_or_default();
        let mut flags = Vec::new();
        if r.recommended {
            flags.push("<span class=\"tag rec\">recommended</span>");
        }
        if r.stock {
            flags.push("<span class=\"tag\">stock</span>");
        }
        if r.pareto {
            flags.push("<span class=\"tag\">pareto</span>");
        }
        let _ = writeln!(
            h,
            "<tr id=\"cfg-{}\"{}><td class=\"mono\">{}</td><td>{}</td><td>{}</td><td class=\"mono\">{}</td>{}{}{}{}{}{}{}{}<td>{}</td></tr>",
            esc(&r.config),
            if r.recommended { " class=\"rec\"" } else { "" },
            esc(&r.config),
            esc(&r.family),
            esc(&r.profile),
            if changes.is_empty() { "(stock)".to_string() } else { changes.join(" ") },
            num_td(r.score("recall"), pct(r.score("recall"))),
            num_td(r.score("false_positives"), int(r.score("false_positives"))),
            num_td(r.score("fp_per_1k_turns"), dec(r.score("fp_per_1k_turns"))),
            num_td(r.score("precision"), pct(r.score("precision"))),
            num_td(r.score("f1"), dec(r.score("f1"))),
            num_td(r.score("ttd_median"), median_n(r)),
            num_td(r.score("ttd_p90"), int(r.score("ttd_p90"))),
            num_td(r.score("detections"), int(r.score("detections"))),
            flags.join(" ")
        );
    }
    h.push_str("</tbody></table></div>\n");
}

fn inputs(h: &mut dyn std::fmt::Write, d: &ReportData) -> std::io::Result<()> {
    let i = &d.summary.inputs;
    let t = &d.summary.totals;
    let l = &d.summary.labels;
    let _ = writeln!(
        h,
        "<h2 id=\"inputs\">Inputs</h2>\n<div class=\"cards\">\
         <div class=\"card\"><span>files</span><b>{}</b></div><div class=\"card\"><span>sessions</span><b>{}</b></div>\
         <div class=\"card\"><span>turns</span><b>{}</b></div><div class=\"card\"><span>records</span><b>{}</b></div>\
         <div class=\"card\"><span>labeled loop / clean / unlabeled</span><b>{} / {} / {}</b></div></div>",
        i.files.len(),
        t.sessions,
        t.turns,
        t.events,
        l.loops,
        l.clean,
        l.unlabeled
    );
    match &l.file {
        Some(f) => {
            let _ = writeln!(
                h,
                "<p>Labels: <code>{}</code>, sha256 <code>{}</code>.</p>",
                esc(f),
                esc(l.sha256.as_deref().unwrap_or(""))
            );
        }
        None => {
            let _ = h.write_str("<p>No labels file: nothing is scored.</p>\n");
        }
    }
    if t.whole_message_sessions > 0 {
        let _ = writeln!(
            h,
            "<p>{} sessions carry content as whole messages, not streamed chunks: the content check sees fewer, larger pieces than live.</p>",
            t.whole_message_sessions
        );
    }
    let _ = writeln!(
        h,
        "<details{}><summary>{} input files with their digests</summary><div class=\"scroll tall\"><table class=\"sortable\"><thead><tr>\
         <th>file</th><th>format</th><th class=\"n\">bytes</th><th class=\"n\">skipped lines</th><th class=\"n\">unknown records</th><th>sha256</th></tr></thead><tbody>",
        if i.files.len() <= 12 { " open" } else { "" },
        i.files.len()
    );
    for f in &i.files {
        let _ = writeln!(
            h,
            "<tr><td class=\"mono\">{}</td><td>{}</td>{}{}{}<td class=\"mono\">{}</td></tr>",
            esc(&f.path),
            esc(&f.format),
            num_td(Some(f.bytes as f64), f.bytes.to_string()),
            num_td(Some(f.skipped_lines as f64), f.skipped_lines.to_string()),
            num_td(
                Some(f.unknown_records as f64),
                f.unknown_records.to_string()
            ),
            esc(&f.sha256)
        );
    }
    let _ = h.write_str("</tbody></table></div></details>\n");
    for (what, items) in [
        ("skipped lines", &i.skipped),
        ("label warnings", &l.warnings),
    ] {
        if items.is_empty() {
            continue;
        }
        let _ = write!(h, "<details><summary>{} {what}</summary><ul>", items.len());
        for s in items.iter() {
            let _ = write!(h, "<li class=\"mono\">{}</li>", esc(s));
        }
        let _ = h.write_str("</ul></details>\n");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A streamed section comes out as the same section held whole and
    /// folded, however its text is cut into writes.
    #[test]
    fn a_streamed_section_folds_as_a_whole_one() {
        use std::fmt::Write as _;
        for whole in [
            "<h2 id=\"x\">Title</h2>\n<p>body</p>\n",
            "<h2>only a heading</h2>",
            "<h2 never closed",
            "<p>no heading</p>",
            "<h",
            "",
        ] {
            for cut in 0..=whole.len() {
                for step in [1, 2, 5] {
                    let mut out = Vec::new();
                    let mut sink = FoldSink::new(&mut out);
                    let (a, b) = whole.split_at(cut);
                    for part in a
                        .as_bytes()
                        .chunks(step)
                        .chain(std::iter::once(b.as_bytes()))
                    {
                        sink.write_str(std::str::from_utf8(part).unwrap()).unwrap();
                    }
                    sink.finish().unwrap();
                    assert_eq!(
                        String::from_utf8(out).unwrap(),
                        fold(whole.to_string()),
                        "{whole:?} cut at {cut} in steps of {step}"
                    );
                }
            }
        }
    }

    #[test]
    fn an_excerpt_names_its_file_once_relative_to_the_input_root_and_hides_empty_records() {
        let root = input_root(["runs/a/x.jsonl", "runs/a/b/y.jsonl", "runs/c.json"].into_iter());
        assert_eq!(root, "runs/");
        assert_eq!(input_root(["one.jsonl"].into_iter()), "");
        let line = |event: u32, text: &str, file: &str| crate::result::ExcerptLine {
            event,
            turn: 1,
            kind: "content".into(),
            text: text.into(),
            hit: false,
            place: Some(crate::result::PlaceRecord {
                file: file.into(),
                line: Some(event),
                pointer: None,
            }),
        };
        let lines = [
            line(1, "first", "runs/a/x.jsonl"),
            line(2, "  ", "runs/a/x.jsonl"),
            line(3, "third", "runs/a/x.jsonl"),
            line(4, "elsewhere", "runs/c.json"),
        ];
        let mut h = String::new();
        excerpt(&mut h, &root, "Around record 3", &lines);
        assert_eq!(h.matches("a/x.jsonl").count(), 1, "{h}");
        assert!(
            h.contains("Around record 3 in <code>a/x.jsonl</code>:"),
            "{h}"
        );
        assert!(!h.contains("runs/"), "{h}");
        assert!(h.contains("#3 turn 1 · line 3<"), "{h}");
        assert!(!h.contains("#2 turn"), "an empty record is hidden: {h}");
        assert!(
            h.contains("· c.json:4<"),
            "another file is named in full: {h}"
        );
    }

    #[test]
    fn base64_matches_rfc4648() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(i.as_bytes()), o);
        }
    }

    /// A summary whose every file string carries a payload, rendered whole.
    #[test]
    fn hostile_strings_never_appear_unescaped() {
        let payloads = [
            "<script>alert(1)</script>",
            "</textarea>",
            "<img src=x onerror=alert(1)>",
            "\"><svg onload=alert(1)>",
            "'; alert(1); '",
        ];
        let bad = payloads.join(" ");
        let mut v = crate::report::charts::tests::sample_summary();
        let dis = &mut v["disagreements"][0];
        dis["session"] = bad.clone().into();
        dis["detections"][0]["label"] = bad.clone().into();
        dis["detections"][0]["detail"] = bad.clone().into();
        dis["detections"][0]["kind"] = bad.clone().into();
        dis["excerpts"] = serde_json::json!([{"event": 9, "lines": [
            {"event": 9, "turn": 3, "type": bad, "text": bad, "hit": true}]}]);
        v["grid"]["configs"][0]["label"] = bad.clone().into();
        v["grid"]["configs"][0]["overrides"] = serde_json::json!({"policy": bad});
        v["grid"]["name"] = bad.clone().into();
        v["note"] = bad.clone().into();
        v["objective"] = bad.clone().into();
        v["inputs"] = serde_json::json!({"files": [{"path": bad, "format": bad, "sha256": bad,
            "bytes": 1, "skipped_lines": 0, "unknown_records": 0}], "skipped": [bad]});
        v["labels"] = serde_json::json!({"file": bad, "sha256": bad, "warnings": [bad]});
        // The grid source is shown verbatim: append the payload as a comment.
        let src = format!("{}\n# {bad}\n", v["grid"]["source"].as_str().unwrap());
        v["grid"]["source"] = src.into();
        let mut d = ReportData::new(
            serde_json::from_value(v).unwrap(),
            super::super::model::parse_sweep_csv(&crate::report::charts::tests::sample_csv()),
        );
        // And in sweep.csv's text columns (family, profile), which reach the page and chart text.
        d.rows[0].family = bad.clone();
        let html = render(&d).unwrap();
        for p in [
            "<script>alert",
            "</textarea>",
            "<img",
            "onerror=alert(1)>",
            "<svg onload",
        ] {
            assert!(!html.contains(p), "unescaped {p:?} in the report");
        }
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert_eq!(
            html.matches("<script").count(),
            1,
            "only the report's own script"
        );
        // The session id also reaches SVG text (timeline lanes carry labels): escaped there too.
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"));
    }

    /// The live detections: a paragraph and a small table in the
    /// recommendation section, escaped; nothing when none were kept.
    #[test]
    fn live_detections_are_shown_beside_the_baseline() {
        use crate::report::model::{LiveCount, LiveView};
        let mut d = ReportData::new(
            serde_json::from_value(crate::report::charts::tests::sample_summary()).unwrap(),
            super::super::model::parse_sweep_csv(&crate::report::charts::tests::sample_csv()),
        );
        let html = render(&d).unwrap();
        assert!(!html.contains("Live detections"), "no live detections kept");
        let count = |config: &str, label: &str, reproduced| LiveCount {
            config: config.into(),
            label: label.into(),
            reproduced,
        };
        d.summary.live = Some(LiveView {
            sessions: 3,
            kinds: [
                ("consecutive_identical_tool_calls".to_string(), 2),
                (String::new(), 1),
            ]
            .into_iter()
            .collect(),
            baseline: count("c1", "gemini-latest", 2),
            stock: vec![count("c2", "<b>kilo</b>", 1)],
        });
        let html = render(&d).unwrap();
        assert!(
            html.contains(
                "The agent's own detector fired in 3 sessions (the first <code>loop_detected</code> record of each: \
                 2 <code>consecutive_identical_tool_calls</code>, 1 <code>unnamed</code>). \
                 The baseline <b>gemini-latest</b> reproduces 2 of them at the same turn"
            ),
            "{html}"
        );
        assert!(html.contains(
            "<tr class=\"base\"><td>baseline</td><td><a href=\"#cfg-c1\">gemini-latest</a></td><td class=\"n\">2 of 3</td></tr>"
        ));
        assert!(html.contains(
            "<tr><td>stock</td><td><a href=\"#cfg-c2\">&lt;b&gt;kilo&lt;/b&gt;</a></td><td class=\"n\">1 of 3</td></tr>"
        ));
        let (rec, live) = (
            html.find("id=\"recommendation\"").unwrap(),
            html.find("id=\"live\"").unwrap(),
        );
        assert!(rec < live);
    }

    #[test]
    fn csp_allows_only_the_report_script() {
        let html = render(&ReportData::new(
            serde_json::from_value(crate::report::charts::tests::sample_summary()).unwrap(),
            super::super::model::parse_sweep_csv(&crate::report::charts::tests::sample_csv()),
        ))
        .unwrap();
        let hash = base64(&Sha256::digest(JS.as_bytes()));
        assert!(html.contains(&format!("script-src 'sha256-{hash}'")));
        assert!(html.contains(&format!("<script>{JS}</script>")));
        assert!(html.contains("default-src 'none'"));
        assert!(
            !html.contains("http://")
                || html.matches("http://").count()
                    == html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
        );
        assert!(!html.contains("https://"));
    }

    /// Every chart's links point at a row of the all-configurations table, and
    /// every configuration drawn in the false-positives-vs-recall chart has one.
    #[test]
    fn chart_links_land_on_configuration_rows() {
        let d = ReportData::new(
            serde_json::from_value(crate::report::charts::tests::sample_summary()).unwrap(),
            super::super::model::parse_sweep_csv(&crate::report::charts::tests::sample_csv()),
        );
        let html = render(&d).unwrap();
        let mut total = 0;
        for part in html.split("<figure class=\"chart\" data-chart=\"").skip(1) {
            let kind = &part[..part.find('"').unwrap()];
            let svg = &part[part.find("<svg").unwrap()..part.find("</svg>").unwrap()];
            let links = crate::report::charts::tests::links(svg);
            for id in &links {
                assert!(
                    html.contains(&format!("<tr id=\"cfg-{id}\"")),
                    "{kind} links to #cfg-{id}, which is no row"
                );
            }
            if kind == "fp-recall" {
                assert_eq!(links.len(), d.rows.len());
            }
            total += links.len();
        }
        assert!(total > d.rows.len());
    }

    #[test]
    fn escapes_all_five() {
        assert_eq!(
            esc(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }
}
