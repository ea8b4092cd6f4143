//! The report's charts, one file per chart kind (`ttd`, `fp_recall`, `axis`,
//! `heatmap`, `timeline`, `interval`, `groups`); this file holds what they
//! share: sizes, fonts, colours, tick labels, the SVG and its marks, tooltips,
//! and which configurations a chart compares. Each chart comes in two halves: a
//! pure function that computes the numbers a chart shows from [`ReportData`]
//! (tested against `sweep.csv`), and a drawing function that turns those
//! numbers into an inline SVG string with plotters. Text in the SVG is escaped
//! by plotters' SVG backend (`&<>"'`), and every chart names the embedded font
//! so it renders the same on a machine without fonts. Each point or cell that
//! stands for a configuration is also recorded as a [`Mark`] and written as a
//! last, transparent layer: a link to the configuration's table row and a
//! tooltip (`<title>`, escaped with [`crate::util::escape::html`]).

use super::model::{Disagreement, ReportData, Row};
use crate::score::metrics::{score_info, ScoreInfo, Unit};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The embedded sans-serif font (declared by the page's `@font-face`).
pub const FONT: &str = "looptune-sans";
/// Chart text sizes (px, before plotters' 1/1.24 SVG scaling).
const TITLE_PT: f64 = 17.0;
const LABEL_PT: f64 = 14.0;
const SMALL_PT: f64 = 12.5;

/// False-positives-vs-recall chart size.
pub const FP_RECALL_SIZE: (u32, u32) = (1000, 600);
/// One swept-constant chart (three small panels side by side).
pub const AXIS_SIZE: (u32, u32) = (1000, 240);
/// One heatmap.
pub const HEAT_SIZE: (u32, u32) = (490, 380);
/// Session timeline width; the height grows with the number of lanes.
pub const TIMELINE_WIDTH: u32 = 1000;
/// Height of one timeline lane.
const LANE_PX: u32 = 24;

/// Series colours: Okabe–Ito, distinguishable with the common colour-vision
/// deficiencies; the recommended configuration always gets the first one.
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0xD5, 0x5E, 0x00), // vermillion: recommended
    RGBColor(0x00, 0x72, 0xB2), // blue: base stock profile
    RGBColor(0x00, 0x9E, 0x73), // green
    RGBColor(0xCC, 0x79, 0xA7), // purple
    RGBColor(0x56, 0xB4, 0xE9), // sky
    RGBColor(0xE6, 0x9F, 0x00), // orange
    RGBColor(0x33, 0x33, 0x33), // near black
    RGBColor(0x99, 0x99, 0x33), // olive
];
const INK: RGBColor = RGBColor(0x22, 0x22, 0x22);
const GRID: RGBColor = RGBColor(0xE4, 0xE4, 0xE4);
const MUTED: RGBColor = RGBColor(0xA8, 0xA8, 0xA8);
const TOOL: RGBColor = RGBColor(0x00, 0x72, 0xB2);
const ERR: RGBColor = RGBColor(0xD5, 0x5E, 0x00);
const CONTENT: RGBColor = RGBColor(0x00, 0x9E, 0x73);

type Draw<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

// One file per chart kind; each computes its numbers from the report's data
// and draws them with the helpers below.
pub mod axis;
pub mod fp_recall;
pub mod groups;
pub mod heatmap;
pub mod interval;
#[cfg(test)]
pub(crate) mod tests;
pub mod timeline;
pub mod ttd;

pub use axis::{axis_chart, axis_curves};
pub use fp_recall::{fp_recall_chart, fp_recall_data};
pub use groups::groups_chart;
pub use heatmap::{heatmap_chart, heatmaps, subgrids, HeatMetric, HeatScale};
pub use interval::{interval_chart, interval_row, IntervalRow};
pub use timeline::{timeline_chart, timeline_data};
pub use ttd::{ttd_chart, ttd_data};

// ---------------------------------------------------------------- helpers

/// Numeric value of a parameter's text, if it is a number.
fn as_num(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|x| x.is_finite())
}

/// Parameter values compare as numbers when both are numbers (`2` = `2.0`),
/// else as case-insensitive text (`true` = `True`).
pub fn same_value(a: &str, b: &str) -> bool {
    match (as_num(a), as_num(b)) {
        (Some(x), Some(y)) => (x - y).abs() < 1e-9,
        _ => a.trim().eq_ignore_ascii_case(b.trim()),
    }
}

fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

fn font(size: f64) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font()).color(&INK)
}

/// Render into an SVG string; `f` draws on the root area.
fn svg(size: (u32, u32), f: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Draw) -> Draw<String> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        root.fill(&WHITE)?;
        f(&root)?;
        root.present()?;
    }
    Ok(buf)
}

/// An SVG that only says why there is nothing to draw (still a valid chart block).
fn empty_chart(size: (u32, u32), message: &str) -> Draw<String> {
    svg(size, |root| {
        root.draw(&Text::new(
            message.to_string(),
            (size.0 as i32 / 2, size.1 as i32 / 2),
            font(LABEL_PT).pos(Pos::new(HPos::Center, VPos::Center)),
        ))?;
        Ok(())
    })
}

/// Linear interpolation between two colours, `t` in 0..=1.
fn mix(a: RGBColor, b: RGBColor, t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0);
    let l = |x: u8, y: u8| (x as f64 + (y as f64 - x as f64) * t).round() as u8;
    RGBColor(l(a.0, b.0), l(a.1, b.1), l(a.2, b.2))
}

/// Tick labels for count axes: whole numbers only (no "1, 1, 2, 2" from half steps).
fn whole(v: &f64) -> String {
    if (v - v.round()).abs() < 1e-6 {
        format!("{v:.0}")
    } else {
        String::new()
    }
}

/// Tick labels for categorical axes drawn on an index scale: a label only at whole indices.
fn category_label(values: &[String], v: f64) -> String {
    let i = v.round();
    if (v - i).abs() > 1e-6 || i < 0.0 || i as usize >= values.len() {
        return String::new();
    }
    short(&values[i as usize], 14)
}

// ------------------------------------------------------------ interactive marks

/// Where a mark sits, in the SVG's pixels (plotters' backend coordinates).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A circle: centre and radius.
    Circle((i32, i32), i32),
    /// A rectangle between two opposite corners, in either order.
    Rect((i32, i32), (i32, i32)),
}

/// A chart mark a reader can hover and click: plotters' SVG backend writes no
/// `<a>` or `<title>`, so the charts record each point here with the same
/// coordinate mapping they draw with, and [`svg_marked`] draws them as a
/// transparent layer on top: a link to the configuration's row of the
/// all-configurations table (`#cfg-ID`) and a tooltip.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// The configuration the mark stands for; `None` when it stands for several.
    pub config: Option<String>,
    /// Tooltip text (plain; escaped when written).
    pub title: String,
    /// Hit area.
    pub shape: Shape,
}

impl Mark {
    fn new(config: Option<&str>, title: impl Into<String>, shape: Shape) -> Mark {
        Mark {
            config: config.map(str::to_string),
            title: title.into(),
            shape,
        }
    }
}

/// The marks as one SVG group. Hit areas are filled but fully transparent
/// (still hit-tested); the page's CSS shows them on hover and focus.
fn marks_layer(marks: &[Mark]) -> String {
    let esc = crate::util::escape::html;
    let mut o = String::from(
        "<g class=\"marks\" fill=\"#222222\" fill-opacity=\"0\" stroke=\"#222222\" stroke-opacity=\"0\" stroke-width=\"2\">\n",
    );
    for m in marks {
        let shape = match m.shape {
            Shape::Circle((x, y), r) => format!("<circle cx=\"{x}\" cy=\"{y}\" r=\"{r}\"/>"),
            Shape::Rect((x0, y0), (x1, y1)) => format!(
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
                x0.min(x1),
                y0.min(y1),
                (x1 - x0).abs().max(1),
                (y1 - y0).abs().max(1)
            ),
        };
        let title = esc(&m.title);
        let _ = match &m.config {
            Some(id) => writeln!(
                o,
                "<a href=\"#cfg-{}\"><title>{title}</title>{shape}</a>",
                esc(id)
            ),
            None => writeln!(o, "<g class=\"mark\"><title>{title}</title>{shape}</g>"),
        };
    }
    o.push_str("</g>\n");
    o
}

/// Put the marks layer last in a plotters SVG, so it is on top. plotters
/// closes the document with exactly `</svg>\n`; anything else is an error,
/// never a guess.
fn insert_marks(svg: String, marks: &[Mark]) -> Draw<String> {
    if marks.is_empty() {
        return Ok(svg);
    }
    let Some(body) = svg.strip_suffix("</svg>\n") else {
        return Err("the SVG does not end with </svg>".into());
    };
    let layer = marks_layer(marks);
    let mut out = String::with_capacity(svg.len() + layer.len());
    out.push_str(body);
    out.push_str(&layer);
    out.push_str("</svg>\n");
    Ok(out)
}

/// [`svg`], with the marks `f` records drawn on top.
fn svg_marked(
    size: (u32, u32),
    f: impl FnOnce(&DrawingArea<SVGBackend, Shift>, &mut Vec<Mark>) -> Draw,
) -> Draw<String> {
    let mut marks = Vec::new();
    let drawn = svg(size, |root| f(root, &mut marks))?;
    insert_marks(drawn, &marks)
}

/// A configuration as a tooltip names it: label, then id, family and profile.
fn describe(d: &ReportData, r: &Row) -> String {
    let mut flags = Vec::new();
    if r.recommended {
        flags.push("recommended");
    }
    if r.stock {
        flags.push("stock profile");
    }
    if r.pareto {
        flags.push("Pareto front");
    }
    let flags = if flags.is_empty() {
        String::new()
    } else {
        format!(" ({})", flags.join(", "))
    };
    format!(
        "{}{flags}\nconfiguration {} · family {} · profile {}",
        d.label(r),
        r.config,
        r.family,
        r.profile
    )
}

/// A configuration's scores as a tooltip lists them, each with its sample size.
fn score_lines(r: &Row) -> String {
    let count = |v: f64| crate::report::fixed(v);
    let mut lines = Vec::new();
    if let Some(x) = r.score("recall") {
        let of = match (r.score("true_positives"), r.score("labeled_loops")) {
            (Some(tp), Some(n)) => format!(" ({} of {} labeled loops)", count(tp), count(n)),
            _ => String::new(),
        };
        lines.push(format!("recall {:.1}%{of}", x * 100.0));
    }
    if let Some(fp) = r.score("false_positives") {
        let of = r
            .score("labeled_clean")
            .map(|n| format!(" of {} labeled clean sessions", count(n)))
            .unwrap_or_default();
        lines.push(format!("false positives {}{of}", count(fp)));
    }
    let mut pf = Vec::new();
    if let Some(p) = r.score("precision") {
        pf.push(format!("precision {:.1}%", p * 100.0));
    }
    if let Some(f) = r.score("f1") {
        pf.push(format!("F1 {f:.3}"));
    }
    if !pf.is_empty() {
        lines.push(pf.join(" · "));
    }
    if let Some(m) = r.score("ttd_median") {
        let n = r
            .score("ttd_n")
            .map(|n| format!(" (n={})", count(n)))
            .unwrap_or_default();
        lines.push(format!("median turns to detection {}{n}", count(m)));
    }
    lines.join("\n")
}

/// `describe` and `score_lines` together.
fn tip(d: &ReportData, r: &Row) -> String {
    let scores = score_lines(r);
    if scores.is_empty() {
        describe(d, r)
    } else {
        format!("{}\n{scores}", describe(d, r))
    }
}

/// The configurations charts compare: the recommended one, the base stock
/// profile, then every other stock profile, in grid order.
pub fn selected<'d>(d: &'d ReportData) -> Vec<&'d Row> {
    let rec = d.rows.iter().find(|r| r.recommended);
    let base = d
        .summary
        .stock
        .as_ref()
        .and_then(|s| d.row(&s.config))
        .or_else(|| d.stock_row(&d.summary.grid.base_profile));
    let mut out: Vec<&Row> = Vec::new();
    for r in rec
        .into_iter()
        .chain(base)
        .chain(d.rows.iter().filter(|r| r.stock))
    {
        if !out.iter().any(|o| o.config == r.config) {
            out.push(r);
        }
    }
    out
}
/// Everyone a row or point stands for: one configuration links to its row.
fn members_link(configs: &[String]) -> Option<&str> {
    match configs {
        [one] => Some(one.as_str()),
        _ => None,
    }
}

/// Tooltip names of a merged row: all members, one per line after the first.
fn members_text(members: &[String]) -> String {
    match members {
        [one] => one.clone(),
        _ => format!(
            "{} configurations with the same detections:\n{}",
            members.len(),
            members.join("\n")
        ),
    }
}

/// Values grouped by key, in first-seen order (for per-family summaries).
pub fn group_by<'a, T>(
    items: impl IntoIterator<Item = &'a T>,
    key: impl Fn(&T) -> String,
) -> Vec<(String, Vec<&'a T>)>
where
    T: 'a,
{
    let mut order: Vec<String> = Vec::new();
    let mut map: BTreeMap<String, Vec<&'a T>> = BTreeMap::new();
    for it in items {
        let k = key(it);
        if !map.contains_key(&k) {
            order.push(k.clone());
        }
        map.entry(k).or_default().push(it);
    }
    order
        .into_iter()
        .map(|k| {
            let v = map.remove(&k).unwrap_or_default();
            (k, v)
        })
        .collect()
}
