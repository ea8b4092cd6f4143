//! The report's charts, one function per chart kind, each in two halves: a
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

mod groups;
pub use groups::groups_chart;

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

// ---------------------------------------------------------- turns to detection

/// One drawn distribution: configurations with identical turns-to-detection merged.
#[derive(Debug, Clone, PartialEq)]
pub struct TtdSeries {
    /// Labels of the configurations sharing this distribution (first is the row's name).
    pub members: Vec<String>,
    /// Their ids, in the same order.
    pub configs: Vec<String>,
    /// Includes the recommended configuration.
    pub recommended: bool,
    /// The turns-to-detection values, sorted.
    pub ttd: Vec<i64>,
    /// Loops detected per turn, earliest first: (turn, count); turns before
    /// the onset count at [`TtdData::lo`].
    pub per_turn: Vec<(i64, usize)>,
    /// Labeled loops: the cumulative curve is a fraction of these, so it ends at recall.
    pub labeled_loops: f64,
    /// Median turns to detection (`sweep.csv` `ttd_median`, else of `ttd`).
    pub median: f64,
}

/// The turns-to-detection chart's numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct TtdData {
    /// First turn of the axis: 1 (the onset turn), or 0 when some detection came earlier.
    pub lo: i64,
    /// Last turn of the axis.
    pub hi: i64,
    /// Every distinct distribution of the selected configurations, in [`selected`] order.
    pub series: Vec<TtdSeries>,
    /// Selected configurations that detected no labeled loop: labels.
    pub silent: Vec<String>,
    /// Their ids, in the same order.
    pub silent_configs: Vec<String>,
}

/// The configurations charts compare: the recommended one, the base stock
/// profile, then every other stock profile, in grid order.
pub fn selected(d: &ReportData) -> Vec<&Row> {
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

/// Median of sorted values (the mean of the middle two for an even count).
fn median_of(sorted: &[i64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return 0.0;
    }
    if n % 2 == 1 {
        sorted[n / 2] as f64
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) as f64 / 2.0
    }
}

/// Per-turn counts and cumulative curves for every stock profile and the recommendation.
pub fn ttd_data(d: &ReportData) -> TtdData {
    let mut series: Vec<TtdSeries> = Vec::new();
    let (mut silent, mut silent_configs) = (Vec::new(), Vec::new());
    for r in selected(d) {
        let entry = d.summary.scores.iter().find(|s| s.config == r.config);
        let mut ttd = entry.map(|e| e.ttd.clone()).unwrap_or_default();
        ttd.sort_unstable();
        let label = d.label(r).to_string();
        if ttd.is_empty() {
            silent.push(label);
            silent_configs.push(r.config.clone());
            continue;
        }
        let loops = r
            .score("labeled_loops")
            .or(entry.and_then(|e| e.labeled_loops))
            .filter(|&n| n > 0.0)
            .unwrap_or(ttd.len() as f64);
        // Identical distributions draw as one row, so stock profiles that
        // mostly agree stay legible.
        match series
            .iter_mut()
            .find(|s| s.ttd == ttd && s.labeled_loops == loops)
        {
            Some(s) => {
                s.members.push(label);
                s.configs.push(r.config.clone());
                s.recommended |= r.recommended;
            }
            None => series.push(TtdSeries {
                members: vec![label],
                configs: vec![r.config.clone()],
                recommended: r.recommended,
                median: r.score("ttd_median").unwrap_or_else(|| median_of(&ttd)),
                ttd,
                per_turn: Vec::new(),
                labeled_loops: loops,
            }),
        }
    }
    let all = series.iter().flat_map(|s| s.ttd.iter().copied());
    // The axis starts at turn 1 (detected on the onset turn) unless some
    // detection came earlier. Detections before the onset (ttd <= 0) share
    // turn 0, so one very early detection does not stretch the axis over turns
    // nobody fired in.
    let lo = all.clone().min().unwrap_or(1).clamp(0, 1);
    let hi = all.max().unwrap_or(1).max(lo);
    for s in &mut series {
        for &t in &s.ttd {
            let t = t.max(lo);
            match s.per_turn.last_mut() {
                Some((u, k)) if *u == t => *k += 1,
                _ => s.per_turn.push((t, 1)),
            }
        }
    }
    TtdData {
        lo,
        hi,
        series,
        silent,
        silent_configs,
    }
}

/// A row's name: the first member, how many share it, ★ for the recommendation.
fn series_name(members: &[String], recommended: bool) -> String {
    let first = short(&members[0], if members.len() > 1 { 24 } else { 36 });
    let name = if members.len() > 1 {
        format!("{first} (+{} identical)", members.len() - 1)
    } else {
        first
    };
    if recommended {
        format!("★ {name}")
    } else {
        name
    }
}

/// Colour of the `i`th distribution: the palette in order, then one grey for the rest.
fn series_colour(i: usize) -> RGBColor {
    PALETTE
        .get(i)
        .copied()
        .unwrap_or(RGBColor(0x8C, 0x8C, 0x8C))
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

const TTD_WIDTH: u32 = 1000;
const TTD_ROW_PX: u32 = 22;
const TTD_LABEL_PX: u32 = 250;
const TTD_RIGHT_PX: u32 = 120;
const TTD_CUM_PX: u32 = 270;

/// The chart's size: one row per distribution (and one for the silent).
pub fn ttd_size(data: &TtdData) -> (u32, u32) {
    let rows = data.series.len() + usize::from(!data.silent.is_empty());
    (TTD_WIDTH, 40 + 34 + TTD_ROW_PX * rows as u32 + TTD_CUM_PX)
}

/// The plot column of a turns-to-detection panel: between the names and the medians.
fn ttd_middle<'a>(area: &DrawingArea<SVGBackend<'a>, Shift>) -> DrawingArea<SVGBackend<'a>, Shift> {
    let (_, rest) = area.split_horizontally(TTD_LABEL_PX);
    rest.split_horizontally(TTD_WIDTH - TTD_LABEL_PX - TTD_RIGHT_PX)
        .0
}

/// Turns to detection. Top: one row per distinct distribution (every stock
/// profile and the recommendation), a dot per turn sized by how many loops
/// were detected then, the median ticked and written with its sample size.
/// Bottom: the cumulative share of labeled loops detected, on the same turn axis.
pub fn ttd_chart(data: &TtdData) -> Draw<String> {
    let size = ttd_size(data);
    if data.series.is_empty() {
        return empty_chart(
            size,
            "No selected configuration detected a labeled loop with a known onset.",
        );
    }
    // Whole turns are drawn centred on integers, with half a turn to spare at either end.
    let x0 = data.lo as f64 - 0.5;
    let x1 = data.hi as f64 + 0.5;
    let max_count = data
        .series
        .iter()
        .flat_map(|s| s.per_turn.iter().map(|&(_, k)| k))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let rows = data.series.len() + usize::from(!data.silent.is_empty());
    let turn_tick = |v: &f64| {
        if data.lo == 0 && v.abs() < 1e-6 {
            "≤0".to_string()
        } else {
            whole(v)
        }
    };
    let turn_text = |t: i64| {
        if t <= 0 {
            "before the onset turn".to_string()
        } else {
            format!("at turn {t}")
        }
    };
    svg_marked(size, |root, marks| {
        let top_h = size.1 - TTD_CUM_PX;
        let (top, bottom) = root.split_vertically(top_h);
        // Both panels plot between the same two columns, so they share one x mapping.
        let (top_mid, bottom_mid) = (ttd_middle(&top), ttd_middle(&bottom));
        root.draw(&Text::new(
            "Turns to detection of each labeled loop detected",
            (TTD_WIDTH as i32 / 2, 20),
            font(TITLE_PT).pos(Pos::new(HPos::Center, VPos::Center)),
        ))?;
        for (text, x, anchor) in [
            ("configuration (★ recommended)", 8, HPos::Left),
            ("median (n)", TTD_WIDTH as i32 - 8, HPos::Right),
        ] {
            root.draw(&Text::new(
                text,
                (x, 50),
                font(SMALL_PT - 1.0)
                    .color(&MUTED)
                    .pos(Pos::new(anchor, VPos::Center)),
            ))?;
        }
        // Rows top to bottom: row 0 is drawn at the top.
        let n = rows as f64;
        let mut strip = ChartBuilder::on(&top_mid)
            .margin_top(62)
            .margin_right(8)
            .x_label_area_size(34)
            .y_label_area_size(0)
            .build_cartesian_2d(x0..x1, 0.0..n)?;
        strip
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(WHITE)
            .bold_line_style(GRID)
            .label_style(font(SMALL_PT))
            .x_label_formatter(&turn_tick)
            .draw()?;
        let row_y = |i: usize| n - i as f64 - 0.5;
        let half = TTD_ROW_PX as i32 / 2;
        let row_mark = |py: i32| Shape::Rect((0, py - half), (TTD_LABEL_PX as i32 - 4, py + half));
        for (si, s) in data.series.iter().enumerate() {
            let c = series_colour(si);
            let y = row_y(si);
            let py = strip.backend_coord(&(x0, y)).1;
            let link = members_link(&s.configs);
            root.draw(&Rectangle::new([(8, py - 6), (20, py + 6)], c.filled()))?;
            root.draw(&Text::new(
                series_name(&s.members, s.recommended),
                (26, py),
                font(SMALL_PT - 1.0).pos(Pos::new(HPos::Left, VPos::Center)),
            ))?;
            let median = format!("{} (n={})", crate::report::fixed(s.median), s.ttd.len());
            root.draw(&Text::new(
                median.clone(),
                (TTD_WIDTH as i32 - 8, py),
                font(SMALL_PT - 1.0).pos(Pos::new(HPos::Right, VPos::Center)),
            ))?;
            let turns: Vec<String> = s.ttd.iter().map(i64::to_string).collect();
            marks.push(Mark::new(
                link,
                format!(
                    "{}\ndetected {} of {} labeled loops; median turns to detection {median}\nturns: {}",
                    members_text(&s.members),
                    s.ttd.len(),
                    crate::report::fixed(s.labeled_loops),
                    turns.join(", ")
                ),
                row_mark(py),
            ));
            strip.draw_series(std::iter::once(PathElement::new(
                vec![(x0, y), (x1, y)],
                GRID.stroke_width(1),
            )))?;
            for &(t, k) in &s.per_turn {
                let x = t as f64;
                // Area, not radius, grows with the count.
                let r = 2.5 + 5.5 * (k as f64 / max_count).sqrt();
                let r = r.round() as i32;
                strip.draw_series(std::iter::once(Circle::new((x, y), r, c.filled())))?;
                marks.push(Mark::new(
                    link,
                    format!(
                        "{}\n{k} labeled {} detected {} (of {} labeled loops)",
                        members_text(&s.members),
                        if k == 1 { "loop" } else { "loops" },
                        turn_text(t),
                        crate::report::fixed(s.labeled_loops)
                    ),
                    Shape::Circle(strip.backend_coord(&(x, y)), r.max(5)),
                ));
            }
            // Over the dots, taller than the largest, so it shows on a busy turn too.
            let med_x = s.median.max(data.lo as f64);
            strip.draw_series(std::iter::once(PathElement::new(
                vec![(med_x, y - 0.45), (med_x, y + 0.45)],
                INK.stroke_width(2),
            )))?;
        }
        if !data.silent.is_empty() {
            let i = data.series.len();
            let py = strip.backend_coord(&(x0, row_y(i))).1;
            root.draw(&Text::new(
                series_name(&data.silent, false),
                (26, py),
                font(SMALL_PT - 1.0)
                    .color(&MUTED)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            ))?;
            let (px, _) = strip.backend_coord(&(x0, 0.0));
            root.draw(&Text::new(
                "detected no labeled loop",
                (px + 8, py),
                font(SMALL_PT - 1.0)
                    .color(&MUTED)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            ))?;
            marks.push(Mark::new(
                members_link(&data.silent_configs),
                format!("{}\ndetected no labeled loop", members_text(&data.silent)),
                row_mark(py),
            ));
        }

        // Share of labeled loops (not of detections) so each curve ends at the
        // configuration's recall and curves of different recall compare honestly.
        let mut cum = ChartBuilder::on(&bottom_mid)
            .margin_top(10)
            .margin_right(8)
            .x_label_area_size(40)
            .y_label_area_size(0)
            .build_cartesian_2d(x0..x1, 0.0..1.0)?;
        cum.configure_mesh()
            .light_line_style(WHITE)
            .bold_line_style(GRID)
            .x_desc("turns from the labeled onset to the detection (1 = on the onset turn)")
            .label_style(font(SMALL_PT))
            .axis_desc_style(font(SMALL_PT))
            .x_label_formatter(&turn_tick)
            .draw()?;
        // The share axis is written in the label column, so both panels keep one x mapping.
        for k in 0..=4 {
            let v = k as f64 / 4.0;
            let (px, py) = cum.backend_coord(&(x0, v));
            root.draw(&Text::new(
                format!("{:.0}%", v * 100.0),
                (px - 6, py),
                font(SMALL_PT).pos(Pos::new(HPos::Right, VPos::Center)),
            ))?;
        }
        let (_, mid_y) = cum.backend_coord(&(x0, 0.5));
        for (j, line) in [
            "share of all labeled",
            "loops detected by",
            "each turn (ends at",
            "the recall)",
        ]
        .iter()
        .enumerate()
        {
            root.draw(&Text::new(
                *line,
                (8, mid_y - 27 + 18 * j as i32),
                font(SMALL_PT - 1.0).pos(Pos::new(HPos::Left, VPos::Center)),
            ))?;
        }
        // Grey curves first, then the coloured ones over them; the recommendation last.
        let mut order: Vec<usize> = (0..data.series.len()).collect();
        order.sort_by_key(|&i| (i < PALETTE.len(), data.series[i].recommended));
        for si in order {
            let s = &data.series[si];
            let link = members_link(&s.configs);
            let mut pts = vec![(x0, 0.0)];
            let mut y = 0.0;
            let clamped: Vec<i64> = s.ttd.iter().map(|&t| t.max(data.lo)).collect();
            for (i, &t) in clamped.iter().enumerate() {
                if i + 1 < clamped.len() && clamped[i + 1] == t {
                    continue;
                }
                let ny = (i + 1) as f64 / s.labeled_loops;
                pts.push((t as f64, y));
                pts.push((t as f64, ny));
                y = ny;
                marks.push(Mark::new(
                    link,
                    format!(
                        "{}\n{} of {} labeled loops ({:.0}%) detected by turn {}",
                        members_text(&s.members),
                        i + 1,
                        crate::report::fixed(s.labeled_loops),
                        ny * 100.0,
                        if t <= 0 {
                            "0 or earlier".to_string()
                        } else {
                            t.to_string()
                        }
                    ),
                    Shape::Circle(cum.backend_coord(&(t as f64, ny)), 5),
                ));
            }
            pts.push((x1, y));
            let width = if s.recommended {
                3
            } else if si < PALETTE.len() {
                2
            } else {
                1
            };
            cum.draw_series(LineSeries::new(pts, series_colour(si).stroke_width(width)))?;
        }
        Ok(())
    })
}

// ------------------------------------------------------- false positives vs recall

/// One configuration on the false-positives-vs-recall chart.
#[derive(Debug, Clone, PartialEq)]
pub struct FpRecallPoint {
    /// Configuration id.
    pub config: String,
    /// Label.
    pub label: String,
    /// False positives (count of clean sessions flagged), from `sweep.csv`.
    pub fp: f64,
    /// Recall, from `sweep.csv`.
    pub recall: f64,
    /// On the Pareto front (`sweep.csv` `pareto`).
    pub pareto: bool,
    /// A stock profile.
    pub stock: bool,
    /// The recommendation.
    pub recommended: bool,
    /// Tooltip: the configuration and its scores.
    pub tip: String,
}

/// The false-positives-vs-recall chart's numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct FpRecallData {
    /// Every configuration with both scores.
    pub points: Vec<FpRecallPoint>,
    /// The front in these two scores: fewest false positives for each recall,
    /// as (fp, recall) in increasing fp.
    pub front: Vec<(f64, f64)>,
    /// Configurations without recall (no labeled loops).
    pub unscored: usize,
    /// Stock and recommended configurations grouped by identical (fp, recall):
    /// the chart numbers each group and the page lists the names, so crowded
    /// corners stay legible.
    pub named: Vec<NamedPoint>,
}

/// A numbered point of the false-positives-vs-recall chart.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedPoint {
    /// False positives.
    pub fp: f64,
    /// Recall.
    pub recall: f64,
    /// Labels of the stock profiles (and the recommendation) at this point.
    pub labels: Vec<String>,
    /// Includes the recommendation.
    pub recommended: bool,
}

/// Every configuration's false positives and recall, and the two-score front.
pub fn fp_recall_data(d: &ReportData) -> FpRecallData {
    let mut points = Vec::new();
    let mut unscored = 0;
    for r in &d.rows {
        match (r.score("false_positives"), r.score("recall")) {
            (Some(fp), Some(recall)) => points.push(FpRecallPoint {
                config: r.config.clone(),
                label: d.label(r).to_string(),
                fp,
                recall,
                pareto: r.pareto,
                stock: r.stock,
                recommended: r.recommended,
                tip: tip(d, r),
            }),
            _ => unscored += 1,
        }
    }
    // Points that coincide hide each other: each tooltip says how many share its place.
    let mut at: BTreeMap<(u64, u64), usize> = BTreeMap::new();
    for p in &points {
        *at.entry((p.fp.to_bits(), p.recall.to_bits())).or_default() += 1;
    }
    for p in &mut points {
        let k = at[&(p.fp.to_bits(), p.recall.to_bits())];
        if k > 1 {
            let _ = write!(
                p.tip,
                "\n{} other configurations at this point (all in the table)",
                k - 1
            );
        }
    }
    // The sweep's front is over (fp, missed, median ttd); drawn here is its
    // projection: the staircase of Pareto configurations no other beats on both axes.
    let mut cand: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.pareto)
        .map(|p| (p.fp, p.recall))
        .collect();
    cand.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
    let mut front: Vec<(f64, f64)> = Vec::new();
    for (fp, recall) in cand {
        if front.last().is_none_or(|&(_, r)| recall > r) {
            front.push((fp, recall));
        }
    }
    let mut named: Vec<NamedPoint> = Vec::new();
    // Recommendation first so it is number 1.
    let mut marked: Vec<&FpRecallPoint> =
        points.iter().filter(|p| p.stock || p.recommended).collect();
    marked.sort_by_key(|p| !p.recommended);
    for p in marked {
        match named
            .iter_mut()
            .find(|n| (n.fp, n.recall) == (p.fp, p.recall))
        {
            Some(n) => {
                n.labels.push(p.label.clone());
                n.recommended |= p.recommended;
            }
            None => named.push(NamedPoint {
                fp: p.fp,
                recall: p.recall,
                labels: vec![p.label.clone()],
                recommended: p.recommended,
            }),
        }
    }
    FpRecallData {
        points,
        front,
        unscored,
        named,
    }
}

/// False positives (x) against recall (y) for every configuration.
pub fn fp_recall_chart(data: &FpRecallData) -> Draw<String> {
    if data.points.is_empty() {
        return empty_chart(
            FP_RECALL_SIZE,
            "No configuration has a recall: the sweep had no labeled loops.",
        );
    }
    let max_fp = data.points.iter().map(|p| p.fp).fold(0.0, f64::max);
    svg_marked(FP_RECALL_SIZE, |root, marks| {
        // False positives are counts of clean sessions: linear from 0, padded
        // half a unit so points on 0 are not hidden by the axis; recall is a
        // share, always 0–100% so charts of different sweeps compare.
        let mut ch = ChartBuilder::on(root)
            .caption(
                "False positives vs recall, every configuration",
                font(TITLE_PT),
            )
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.5..(max_fp * 1.08 + 1.0), -0.03..1.06)?;
        ch.configure_mesh()
            .light_line_style(WHITE)
            .bold_line_style(GRID)
            .x_desc("false positives (clean sessions flagged)")
            .y_desc("recall (labeled loops detected)")
            .label_style(font(SMALL_PT))
            .axis_desc_style(font(SMALL_PT))
            .x_label_formatter(&whole)
            .y_label_formatter(&|v| format!("{:.0}%", v * 100.0))
            .draw()?;
        ch.draw_series(
            data.points
                .iter()
                .filter(|p| !p.pareto)
                .map(|p| Circle::new((p.fp, p.recall), 3, MUTED.mix(0.7).filled())),
        )?
        .label("configuration")
        .legend(|(x, y)| Circle::new((x + 7, y), 3, MUTED.filled()));
        let mut stairs = Vec::new();
        for (i, &(fp, r)) in data.front.iter().enumerate() {
            if i > 0 {
                stairs.push((fp, data.front[i - 1].1));
            }
            stairs.push((fp, r));
        }
        ch.draw_series(LineSeries::new(stairs, PALETTE[1].stroke_width(2)))?
            .label("Pareto front")
            .legend(|(x, y)| {
                PathElement::new(vec![(x, y), (x + 14, y)], PALETTE[1].stroke_width(2))
            });
        ch.draw_series(
            data.points
                .iter()
                .filter(|p| p.pareto)
                .map(|p| Circle::new((p.fp, p.recall), 4, PALETTE[1].filled())),
        )?;
        ch.draw_series(
            data.points
                .iter()
                .filter(|p| p.stock)
                .map(|p| TriangleMarker::new((p.fp, p.recall), 7, INK.stroke_width(2))),
        )?
        .label("stock profile")
        .legend(|(x, y)| TriangleMarker::new((x + 7, y), 6, INK.stroke_width(2)));
        ch.draw_series(
            data.points
                .iter()
                .filter(|p| p.recommended)
                .map(|p| Circle::new((p.fp, p.recall), 9, PALETTE[0].stroke_width(3))),
        )?
        .label("recommended")
        .legend(|(x, y)| Circle::new((x + 7, y), 6, PALETTE[0].stroke_width(3)));
        // Numbers, not names: the page lists who is at each number.
        for (k, n) in data.named.iter().enumerate() {
            let colour = if n.recommended { PALETTE[0] } else { INK };
            let (px, py) = ch.backend_coord(&(n.fp, n.recall));
            root.draw(&Text::new(
                format!("{}", k + 1),
                (px + 8 + 3 * (k as i32 % 3), py - 6 - 9 * (k as i32 % 2)),
                font(SMALL_PT)
                    .color(&colour)
                    .pos(Pos::new(HPos::Left, VPos::Bottom)),
            ))?;
        }
        ch.configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.9))
            .border_style(GRID)
            .label_font(font(SMALL_PT))
            .draw()?;
        // One mark per configuration, in drawing order, so the point on top
        // (recommended, stock, front) is also the one hovered.
        let rank = |p: &FpRecallPoint| (p.recommended, p.stock, p.pareto);
        let mut order: Vec<&FpRecallPoint> = data.points.iter().collect();
        order.sort_by_key(|p| rank(p));
        for p in order {
            let r = match rank(p) {
                (true, _, _) => 10,
                (_, true, _) => 8,
                (_, _, true) => 6,
                _ => 5,
            };
            marks.push(Mark::new(
                Some(&p.config),
                p.tip.clone(),
                Shape::Circle(ch.backend_coord(&(p.fp, p.recall)), r),
            ));
        }
        Ok(())
    })
}

// ---------------------------------------------------------- one curve per constant

/// One value of a swept constant.
#[derive(Debug, Clone, PartialEq)]
pub struct AxisPoint {
    /// The value as `sweep.csv` writes it.
    pub value: String,
    /// Position on the x axis: the value itself if numeric, else its index.
    pub x: f64,
    /// Configuration id.
    pub config: String,
    /// The profile's stock value.
    pub stock: bool,
    /// Recall.
    pub recall: Option<f64>,
    /// False positives.
    pub fp: Option<f64>,
    /// Median turns to detection.
    pub ttd_median: Option<f64>,
    /// Tooltip: the value, the configuration and its scores.
    pub tip: String,
}

/// One swept constant moving alone on top of one profile.
#[derive(Debug, Clone, PartialEq)]
pub struct AxisCurve {
    /// Parameter name.
    pub axis: String,
    /// Profile the others are held at.
    pub profile: String,
    /// Values are numbers (else categories, drawn evenly spaced).
    pub numeric: bool,
    /// One point per value, in x order.
    pub points: Vec<AxisPoint>,
}

/// For each grid axis and profile: the configurations that override only that
/// constant, plus the unchanged profile as the stock point.
pub fn axis_curves(d: &ReportData) -> Vec<AxisCurve> {
    let sub = subgrids(d);
    let mut out = Vec::new();
    for axis in &d.summary.grid.axes {
        let mut profiles: Vec<&str> = Vec::new();
        for r in &d.rows {
            if d.override_keys(&r.config) == [axis.as_str()]
                && !profiles.contains(&r.profile.as_str())
            {
                profiles.push(&r.profile);
            }
        }
        for profile in profiles {
            let mut rows: Vec<&Row> = d
                .rows
                .iter()
                .filter(|r| r.profile == profile && d.override_keys(&r.config) == [axis.as_str()])
                .collect();
            if let Some(s) = d.stock_row(profile) {
                rows.push(s);
            }
            let rows: Vec<&Row> = rows
                .into_iter()
                .filter(|r| r.params.contains_key(axis))
                .collect();
            let numeric = rows.iter().all(|r| as_num(&r.params[axis]).is_some());
            // Categories keep the grid file's order (e.g. policy stop, warn, ask, ignore).
            let order: Vec<String> = sub
                .iter()
                .filter_map(|g| g.axes.iter().find(|(n, _)| n == axis))
                .flat_map(|(_, v)| v.clone())
                .collect();
            let rank = |v: &str| {
                order
                    .iter()
                    .position(|o| same_value(o, v))
                    .unwrap_or(usize::MAX)
            };
            let mut points: Vec<AxisPoint> = rows
                .iter()
                .map(|r| AxisPoint {
                    value: r.params[axis].clone(),
                    x: as_num(&r.params[axis]).unwrap_or(0.0),
                    config: r.config.clone(),
                    stock: r.stock,
                    recall: r.score("recall"),
                    fp: r.score("false_positives"),
                    ttd_median: r.score("ttd_median"),
                    tip: format!("{axis} = {}\n{}", r.params[axis], tip(d, r)),
                })
                .collect();
            if numeric {
                points.sort_by(|a, b| a.x.total_cmp(&b.x));
            } else {
                points.sort_by_key(|p| rank(&p.value));
                for (i, p) in points.iter_mut().enumerate() {
                    p.x = i as f64;
                }
            }
            out.push(AxisCurve {
                axis: axis.clone(),
                profile: profile.to_string(),
                numeric,
                points,
            });
        }
    }
    out
}

/// Reads one score off an axis point.
type Metric = fn(&AxisPoint) -> Option<f64>;

/// One swept constant: recall, false positives and median turns-to-detection
/// as small multiples sharing the x axis.
pub fn axis_chart(c: &AxisCurve) -> Draw<String> {
    if c.points.is_empty() {
        return empty_chart(AXIS_SIZE, "No configuration moves this constant alone.");
    }
    let values: Vec<String> = c.points.iter().map(|p| p.value.clone()).collect();
    let (mut lo, mut hi) = c
        .points
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.x), b.max(p.x)));
    // Pad by 6% of the span (or half a category) so end points are not on the frame.
    let pad = if c.numeric {
        ((hi - lo) * 0.06).max(0.5)
    } else {
        0.5
    };
    lo -= pad;
    hi += pad;
    let by_score: [(&str, Metric); 3] = [
        ("recall", |p| p.recall),
        ("false_positives", |p| p.fp),
        ("ttd_median", |p| p.ttd_median),
    ];
    let metrics = by_score.map(|(score, get)| {
        let info = score_info(score).expect("a score of the table");
        (info.label, get, info.unit == Unit::Share)
    });
    svg_marked(AXIS_SIZE, |root, marks| {
        let panels = root.split_evenly((1, 3));
        for (pi, (name, get, share)) in metrics.iter().enumerate() {
            let ys: Vec<f64> = c.points.iter().filter_map(get).collect();
            // Shares use the full 0–100%; counts start at 0 with 10% headroom,
            // so a flat line reads as flat and not as noise magnified.
            // A count's top is a whole number, and it asks for no more
            // labels than there are whole numbers: every tick an integer, none
            // repeated by rounding (`2, 2, 1, 0, 0`).
            let ymax = if *share {
                1.05
            } else {
                (ys.iter().copied().fold(0.0, f64::max) * 1.1 + 1.0).ceil()
            };
            let y_labels = if *share {
                5
            } else {
                (ymax as usize + 1).min(6)
            };
            let ymin = if *share { -0.03 } else { 0.0 };
            let mut ch = ChartBuilder::on(&panels[pi])
                .caption(*name, font(LABEL_PT))
                .margin(8)
                .x_label_area_size(34)
                .y_label_area_size(44)
                .build_cartesian_2d(lo..hi, ymin..ymax)?;
            let xf = |v: &f64| {
                if c.numeric {
                    crate::report::fixed(*v)
                } else {
                    category_label(&values, *v)
                }
            };
            let yf = |v: &f64| {
                if *share {
                    format!("{:.0}%", v * 100.0)
                } else {
                    whole(v)
                }
            };
            ch.configure_mesh()
                .light_line_style(WHITE)
                .bold_line_style(GRID)
                .x_labels(if c.numeric { 6 } else { values.len() + 1 })
                .y_labels(y_labels)
                .x_desc(short(&c.axis, 40))
                .label_style(font(SMALL_PT - 1.5))
                .axis_desc_style(font(SMALL_PT - 1.5))
                .x_label_formatter(&xf)
                .y_label_formatter(&yf)
                .draw()?;
            let pts: Vec<(f64, f64)> = c
                .points
                .iter()
                .filter_map(|p| get(p).map(|y| (p.x, y)))
                .collect();
            ch.draw_series(LineSeries::new(pts.clone(), PALETTE[1].stroke_width(2)))?;
            ch.draw_series(pts.iter().map(|&p| Circle::new(p, 3, PALETTE[1].filled())))?;
            for p in c.points.iter().filter(|p| p.stock) {
                if let Some(y) = get(p) {
                    ch.draw_series(std::iter::once(Circle::new(
                        (p.x, y),
                        7,
                        PALETTE[0].stroke_width(2),
                    )))?;
                    let (px, py) = ch.backend_coord(&(p.x, y));
                    root.draw(&Text::new(
                        "stock",
                        (px, py - 10),
                        font(SMALL_PT - 1.5)
                            .color(&PALETTE[0])
                            .pos(Pos::new(HPos::Center, VPos::Bottom)),
                    ))?;
                }
            }
            for p in &c.points {
                if let Some(y) = get(p) {
                    marks.push(Mark::new(
                        Some(&p.config),
                        p.tip.clone(),
                        Shape::Circle(ch.backend_coord(&(p.x, y)), if p.stock { 8 } else { 6 }),
                    ));
                }
            }
        }
        Ok(())
    })
}

// ------------------------------------------------------------------- heatmaps

/// A `[[grid]]` block (or the top-level axes) of the grid's TOML source.
#[derive(Debug, Clone, PartialEq)]
pub struct SubGrid {
    /// Profile its axes move on top of.
    pub profile: String,
    /// Axes in declaration order with their values as text.
    pub axes: Vec<(String, Vec<String>)>,
}

/// The sub-grids of the grid source, with ranges expanded. A source that does
/// not parse gives none (the heatmaps are then left out; the source is still shown).
pub fn subgrids(d: &ReportData) -> Vec<SubGrid> {
    crate::sweep::grid::axis_blocks(&d.summary.grid.source)
        .into_iter()
        .map(|(profile, axes)| SubGrid {
            profile,
            axes: axes
                .iter()
                .map(|(name, v)| (name.clone(), toml_values(v)))
                .collect(),
        })
        .collect()
}

/// An axis's values as text: a list, or an inclusive `{start, stop, step}` range.
fn toml_values(v: &toml::Value) -> Vec<String> {
    let text = |v: &toml::Value| match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Float(f) => crate::report::fixed(*f),
        other => other.to_string(),
    };
    match v {
        toml::Value::Array(a) => a.iter().map(text).collect(),
        toml::Value::Table(t) => {
            let num = |k: &str| {
                t.get(k)
                    .and_then(|x| x.as_float().or(x.as_integer().map(|i| i as f64)))
            };
            let (Some(a), Some(b), Some(s)) = (num("start"), num("stop"), num("step")) else {
                return Vec::new();
            };
            if s <= 0.0 || a > b {
                return Vec::new();
            }
            let n = ((b - a) / s + 1e-9).floor().min(10_000.0) as i64;
            (0..=n)
                .map(|i| crate::report::fixed(a + i as f64 * s))
                .collect()
        }
        other => vec![text(other)],
    }
}

/// One heatmap cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Configuration id.
    pub config: String,
    /// F1.
    pub f1: Option<f64>,
    /// False positives.
    pub fp: Option<f64>,
    /// Recall.
    pub recall: Option<f64>,
    /// The unchanged profile.
    pub stock: bool,
    /// Tooltip: the two values, the configuration and its scores.
    pub tip: String,
}

/// A pair of axes of one sub-grid, any other axis held at its stock value.
#[derive(Debug, Clone, PartialEq)]
pub struct Heatmap {
    /// Profile.
    pub profile: String,
    /// Columns' parameter.
    pub x_axis: String,
    /// Rows' parameter.
    pub y_axis: String,
    /// Column values.
    pub x_values: Vec<String>,
    /// Row values.
    pub y_values: Vec<String>,
    /// Axes of the sub-grid held at the profile's value.
    pub held: Vec<(String, String)>,
    /// `cells[row][column]`.
    pub cells: Vec<Vec<Option<Cell>>>,
}

/// Which score a heatmap colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeatMetric {
    /// F1 (0–1, higher is better).
    F1,
    /// False positives (count, lower is better).
    FalsePositives,
    /// Recall (0–1, higher is better).
    Recall,
}

impl HeatMetric {
    /// Its row of the score table.
    fn score(self) -> &'static ScoreInfo {
        let name = match self {
            HeatMetric::F1 => "f1",
            HeatMetric::FalsePositives => "false_positives",
            HeatMetric::Recall => "recall",
        };
        score_info(name).expect("a score of the table")
    }

    /// Display name.
    pub fn label(self) -> &'static str {
        self.score().label
    }
    fn get(self, c: &Cell) -> Option<f64> {
        match self {
            HeatMetric::F1 => c.f1,
            HeatMetric::FalsePositives => c.fp,
            HeatMetric::Recall => c.recall,
        }
    }
}

/// Every pair of axes of every sub-grid with two or more axes.
pub fn heatmaps(d: &ReportData) -> Vec<Heatmap> {
    let mut out = Vec::new();
    for g in subgrids(d).into_iter().filter(|g| g.axes.len() >= 2) {
        let Some(stock) = d.stock_row(&g.profile) else {
            continue;
        };
        for i in 0..g.axes.len() {
            for j in i + 1..g.axes.len() {
                // The axis with more values runs across: pages are wider than tall.
                let (a, b) = (&g.axes[i], &g.axes[j]);
                let (x, y) = if b.1.len() > a.1.len() {
                    (b, a)
                } else {
                    (a, b)
                };
                let pair = [x.0.as_str(), y.0.as_str()];
                let cand: Vec<&Row> = d
                    .rows
                    .iter()
                    .filter(|r| {
                        r.profile == g.profile
                            && d.override_keys(&r.config).iter().all(|k| pair.contains(k))
                    })
                    .collect();
                let find = |vx: &str, vy: &str| {
                    cand.iter().find(|r| {
                        r.params.get(&x.0).is_some_and(|v| same_value(v, vx))
                            && r.params.get(&y.0).is_some_and(|v| same_value(v, vy))
                    })
                };
                let cells: Vec<Vec<Option<Cell>>> = y
                    .1
                    .iter()
                    .map(|vy| {
                        x.1.iter()
                            .map(|vx| {
                                find(vx, vy).map(|r| Cell {
                                    config: r.config.clone(),
                                    f1: r.score("f1"),
                                    fp: r.score("false_positives"),
                                    recall: r.score("recall"),
                                    stock: r.stock,
                                    tip: format!("{} = {vx}, {} = {vy}\n{}", x.0, y.0, tip(d, r)),
                                })
                            })
                            .collect()
                    })
                    .collect();
                let held = g
                    .axes
                    .iter()
                    .filter(|(n, _)| !pair.contains(&n.as_str()))
                    .map(|(n, _)| (n.clone(), stock.params.get(n).cloned().unwrap_or_default()))
                    .collect();
                out.push(Heatmap {
                    profile: g.profile.clone(),
                    x_axis: x.0.clone(),
                    y_axis: y.0.clone(),
                    x_values: x.1.clone(),
                    y_values: y.1.clone(),
                    held,
                    cells,
                });
            }
        }
    }
    out
}

/// The colour scale of one metric, shared by every heatmap of the report so
/// a colour means the same value in every map.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeatScale {
    /// The metric.
    pub metric: HeatMetric,
    /// The value drawn lightest.
    pub lo: f64,
    /// The value drawn darkest.
    pub hi: f64,
}

impl HeatScale {
    /// Ratios use the fixed 0–1 domain (clearest, and comparable across
    /// sweeps); false positives run from 0 to the largest count in any map.
    pub fn over(maps: &[Heatmap], metric: HeatMetric) -> HeatScale {
        let hi = match metric {
            HeatMetric::FalsePositives => maps
                .iter()
                .flat_map(|m| m.cells.iter().flatten().flatten())
                .filter_map(|c| metric.get(c))
                .fold(1.0, f64::max),
            _ => 1.0,
        };
        HeatScale {
            metric,
            lo: 0.0,
            hi,
        }
    }

    /// Position of a value on the scale, 0..=1.
    pub fn t(&self, v: f64) -> f64 {
        ((v - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0)
    }

    /// The fill of a value.
    pub fn colour(&self, v: f64) -> RGBColor {
        // Orange where less is better, blue where more is.
        let (light, dark) = if self.metric.score().lower_is_better() {
            (RGBColor(0xFF, 0xF5, 0xEB), RGBColor(0xA6, 0x36, 0x03))
        } else {
            (RGBColor(0xF2, 0xF7, 0xFC), RGBColor(0x08, 0x45, 0x94))
        };
        mix(light, dark, self.t(v))
    }

    /// Legend ticks: quarters of a ratio; whole counts for a count.
    pub fn ticks(&self) -> Vec<f64> {
        match self.metric.score().whole {
            true => {
                let step = (self.hi / 5.0).ceil().max(1.0);
                let mut v: Vec<f64> = (0..)
                    .map(|k| self.lo + k as f64 * step)
                    .take_while(|&x| x < self.hi - 1e-9)
                    .collect();
                v.push(self.hi);
                v
            }
            false => (0..=4)
                .map(|k| self.lo + (self.hi - self.lo) * k as f64 / 4.0)
                .collect(),
        }
    }

    fn text(&self, v: f64) -> String {
        if self.metric.score().whole {
            format!("{v:.0}")
        } else {
            format!("{v:.2}")
        }
    }
}

/// Width of the colour legend beside each heatmap.
const HEAT_LEGEND_PX: u32 = 86;

/// One heatmap of a metric over a pair of axes, coloured on the report's
/// shared scale for that metric (legend on the right); each cell shows its
/// value and links to its configuration.
pub fn heatmap_chart(h: &Heatmap, scale: &HeatScale) -> Draw<String> {
    let metric = scale.metric;
    let nx = h.x_values.len().max(1);
    let ny = h.y_values.len().max(1);
    svg_marked(HEAT_SIZE, |root, marks| {
        let (plot, legend) = root.split_horizontally(HEAT_SIZE.0 - HEAT_LEGEND_PX);
        let mut ch = ChartBuilder::on(&plot)
            .caption(metric.label(), font(LABEL_PT))
            .margin(8)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5..(nx as f64 - 0.5), -0.5..(ny as f64 - 0.5))?;
        let xf = |v: &f64| category_label(&h.x_values, *v);
        let yf = |v: &f64| category_label(&h.y_values, *v);
        ch.configure_mesh()
            .disable_mesh()
            .x_labels(nx + 1)
            .y_labels(ny + 1)
            .x_desc(short(&h.x_axis, 44))
            .y_desc(short(&h.y_axis, 30))
            .label_style(font(SMALL_PT - 2.0))
            .axis_desc_style(font(SMALL_PT - 1.0))
            .x_label_formatter(&xf)
            .y_label_formatter(&yf)
            .draw()?;
        let show_text = nx <= 16 && ny <= 12;
        for (yi, row) in h.cells.iter().enumerate() {
            for (xi, cell) in row.iter().enumerate() {
                let (x, y) = (xi as f64, yi as f64);
                let rect = [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)];
                let v = cell.as_ref().and_then(|c| metric.get(c));
                let fill = match v {
                    Some(v) => scale.colour(v),
                    None => RGBColor(0xF4, 0xF4, 0xF4),
                };
                ch.draw_series(std::iter::once(Rectangle::new(rect, fill.filled())))?;
                ch.draw_series(std::iter::once(Rectangle::new(rect, WHITE.stroke_width(1))))?;
                if show_text {
                    let text = match v {
                        Some(v) => scale.text(v),
                        None => "–".into(),
                    };
                    let ink = if v.is_some_and(|v| scale.t(v) > 0.55) {
                        WHITE
                    } else {
                        INK
                    };
                    let size = if nx > 10 {
                        SMALL_PT - 4.0
                    } else {
                        SMALL_PT - 2.0
                    };
                    ch.draw_series(std::iter::once(Text::new(
                        text,
                        (x, y),
                        font(size)
                            .color(&ink)
                            .pos(Pos::new(HPos::Center, VPos::Center)),
                    )))?;
                }
                if let Some(c) = cell {
                    marks.push(Mark::new(
                        Some(&c.config),
                        c.tip.clone(),
                        Shape::Rect(ch.backend_coord(&rect[0]), ch.backend_coord(&rect[1])),
                    ));
                }
            }
        }
        for (yi, row) in h.cells.iter().enumerate() {
            for (xi, cell) in row.iter().enumerate() {
                if cell.as_ref().is_some_and(|c| c.stock) {
                    let (x, y) = (xi as f64, yi as f64);
                    ch.draw_series(std::iter::once(Rectangle::new(
                        [(x - 0.46, y - 0.46), (x + 0.46, y + 0.46)],
                        PALETTE[0].stroke_width(3),
                    )))?;
                }
            }
        }
        heat_legend(&legend, scale)
    })
}

/// A vertical colour bar with ticks and the metric's name, on `area`.
fn heat_legend(area: &DrawingArea<SVGBackend, Shift>, scale: &HeatScale) -> Draw {
    let (top, bottom) = (46, HEAT_SIZE.1 as i32 - 96);
    let (bx0, bx1) = (22, 36);
    let steps = 48;
    let y_of = |t: f64| bottom - ((bottom - top) as f64 * t).round() as i32;
    for k in 0..steps {
        let (t0, t1) = (k as f64 / steps as f64, (k + 1) as f64 / steps as f64);
        let v = scale.lo + (scale.hi - scale.lo) * (t0 + t1) / 2.0;
        area.draw(&Rectangle::new(
            // One pixel of overlap, so no seams show between the steps.
            [(bx0, y_of(t1)), (bx1, y_of(t0) + 1)],
            scale.colour(v).filled(),
        ))?;
    }
    area.draw(&Rectangle::new(
        [(bx0, top), (bx1, bottom)],
        MUTED.stroke_width(1),
    ))?;
    for v in scale.ticks() {
        let y = y_of(scale.t(v));
        area.draw(&PathElement::new(
            vec![(bx1, y), (bx1 + 4, y)],
            INK.stroke_width(1),
        ))?;
        area.draw(&Text::new(
            scale.text(v),
            (bx1 + 7, y),
            font(SMALL_PT - 2.5).pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    area.draw(&Text::new(
        format!("{} (same scale in every map)", scale.metric.label()),
        (10, (top + bottom) / 2),
        font(SMALL_PT - 2.5)
            .transform(FontTransform::Rotate270)
            .pos(Pos::new(HPos::Center, VPos::Center)),
    ))?;
    Ok(())
}

// ------------------------------------------------------------------- timelines

/// One detection lane: the configurations that fired at the same turn with the same kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Lane {
    /// Configuration labels.
    pub labels: Vec<String>,
    /// Their ids, in the same order.
    pub configs: Vec<String>,
    /// Turn of the first detection.
    pub turn: u64,
    /// Detection kind.
    pub kind: String,
    /// Includes the recommended configuration.
    pub recommended: bool,
}

/// A disagreement session's timeline numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// Session id.
    pub session: String,
    /// Turns.
    pub turns: u64,
    /// Labeled onset.
    pub onset: Option<u64>,
    /// Per turn: tool calls, tool errors, content chunks.
    pub activity: Vec<[u64; 3]>,
    /// Detection lanes, earliest first.
    pub lanes: Vec<Lane>,
    /// Selected configurations that did not fire on this session.
    pub silent: Vec<String>,
}

/// A session's activity per turn and where each selected configuration fires.
pub fn timeline_data(d: &ReportData, s: &Disagreement) -> Timeline {
    let rec = d
        .rows
        .iter()
        .find(|r| r.recommended)
        .map(|r| r.config.as_str());
    let mut activity = vec![[0u64; 3]; s.turns as usize + 1];
    for t in &s.timeline {
        if let Some(a) = activity.get_mut(t.turn as usize) {
            *a = [t.tool_calls, t.tool_errors, t.content];
        }
    }
    let mut lanes: Vec<Lane> = Vec::new();
    for det in &s.detections {
        let is_rec = rec == Some(det.config.as_str());
        match lanes
            .iter_mut()
            .find(|l| l.turn == det.turn && l.kind == det.kind)
        {
            Some(l) => {
                l.labels.push(det.label.clone());
                l.configs.push(det.config.clone());
                l.recommended |= is_rec;
            }
            None => lanes.push(Lane {
                labels: vec![det.label.clone()],
                configs: vec![det.config.clone()],
                turn: det.turn,
                kind: det.kind.clone(),
                recommended: is_rec,
            }),
        }
    }
    lanes.sort_by_key(|l| l.turn);
    let silent = selected(d)
        .into_iter()
        .filter(|r| !s.detections.iter().any(|x| x.config == r.config))
        .map(|r| d.label(r).to_string())
        .collect();
    Timeline {
        session: s.session.clone(),
        turns: s.turns,
        onset: s.onset_turn,
        activity,
        lanes,
        silent,
    }
}

fn lane_name(l: &Lane) -> String {
    let first = short(&l.labels[0], 26);
    let name = if l.labels.len() > 1 {
        format!("{first} +{}", l.labels.len() - 1)
    } else {
        first
    };
    if l.recommended {
        format!("★ {name}")
    } else {
        name
    }
}

/// Turns across; lanes for tool calls, tool errors and content (bar height is
/// the count relative to the session's busiest turn), then one lane per group
/// of configurations firing together; the labeled onset as a dashed line.
pub fn timeline_chart(t: &Timeline) -> Draw<String> {
    let activity = ["tool calls", "tool errors", "content"];
    let n = activity.len() + t.lanes.len();
    let height = 84 + LANE_PX * n as u32 + 10;
    let x1 = t.turns as f64 + 0.5;
    svg_marked((TIMELINE_WIDTH, height), |root, marks| {
        let (labels, plot) = root.split_horizontally(230);
        // Lane 0 at the top: y runs from n (top) down to 0.
        let mut ch = ChartBuilder::on(&plot)
            .margin_top(24)
            .margin_right(16)
            .x_label_area_size(40)
            .y_label_area_size(0)
            .build_cartesian_2d(-0.5..x1, 0.0..n as f64)?;
        ch.configure_mesh()
            .disable_y_mesh()
            .light_line_style(WHITE)
            .bold_line_style(GRID)
            .x_desc("turn")
            .label_style(font(SMALL_PT - 1.0))
            .axis_desc_style(font(SMALL_PT - 1.0))
            .x_label_formatter(&whole)
            .draw()?;
        let lane_y = |i: usize| n as f64 - i as f64 - 0.5;
        let lane_px: Vec<i32> = (0..n)
            .map(|i| ch.backend_coord(&(0.0, lane_y(i))).1)
            .collect();
        let lane_label = |i: usize, text: String, colour: RGBColor| -> Draw {
            let py = lane_px[i];
            labels.draw(&Text::new(
                text,
                (222, py),
                font(SMALL_PT - 1.0)
                    .color(&colour)
                    .pos(Pos::new(HPos::Right, VPos::Center)),
            ))?;
            Ok(())
        };
        for (k, name) in activity.iter().enumerate() {
            let colour = [TOOL, ERR, CONTENT][k];
            lane_label(k, (*name).to_string(), INK)?;
            let max = t.activity.iter().map(|a| a[k]).max().unwrap_or(0).max(1) as f64;
            let base = lane_y(k) - 0.4;
            ch.draw_series(t.activity.iter().enumerate().filter(|(_, a)| a[k] > 0).map(
                |(turn, a)| {
                    let h = 0.8 * (a[k] as f64 / max).max(0.2);
                    let x = turn as f64;
                    Rectangle::new([(x - 0.4, base), (x + 0.4, base + h)], colour.filled())
                },
            ))?;
        }
        for (i, l) in t.lanes.iter().enumerate() {
            let k = activity.len() + i;
            let colour = if l.recommended { PALETTE[0] } else { INK };
            lane_label(k, lane_name(l), colour)?;
            let y = lane_y(k);
            ch.draw_series(std::iter::once(PathElement::new(
                vec![(-0.5, y), (l.turn as f64, y)],
                GRID.stroke_width(2),
            )))?;
            ch.draw_series(std::iter::once(Circle::new(
                (l.turn as f64, y),
                6,
                colour.filled(),
            )))?;
            let (px, py) = ch.backend_coord(&(l.turn as f64, y));
            let who = match (l.recommended, l.configs.len()) {
                (false, _) => "",
                (true, 1) => "the recommended configuration\n",
                (true, _) => "includes the recommended configuration\n",
            };
            let title = format!(
                "{}\n{who}first fires at turn {} ({})",
                members_text(&l.labels),
                l.turn,
                l.kind
            );
            let link = members_link(&l.configs);
            marks.push(Mark::new(link, title.clone(), Shape::Circle((px, py), 8)));
            // The lane's name too: a bigger target than the dot.
            let half = LANE_PX as i32 / 2;
            marks.push(Mark::new(
                link,
                title,
                Shape::Rect((0, py - half), (228, py + half)),
            ));
            // Beside the marker, on whichever side has room.
            let right = (l.turn as f64) > t.turns as f64 * 0.7;
            root.draw(&Text::new(
                format!("turn {} · {}", l.turn, l.kind),
                (if right { px - 10 } else { px + 10 }, py),
                font(SMALL_PT - 2.0).pos(Pos::new(
                    if right { HPos::Right } else { HPos::Left },
                    VPos::Center,
                )),
            ))?;
        }
        if let Some(on) = t.onset {
            let x = on as f64 - 0.5;
            ch.draw_series(DashedLineSeries::new(
                vec![(x, 0.0), (x, n as f64)],
                6,
                4,
                PALETTE[2].stroke_width(2),
            ))?;
            let (px, py) = ch.backend_coord(&(x, n as f64));
            root.draw(&Text::new(
                format!("labeled onset (turn {on})"),
                (px + 4, py - 4),
                font(SMALL_PT - 1.5)
                    .color(&PALETTE[2])
                    .pos(Pos::new(HPos::Left, VPos::Bottom)),
            ))?;
        }
        Ok(())
    })
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

/// Reads one metric's point and interval off a row.
type IntervalOf = Box<dyn Fn(&IntervalRow) -> Option<(f64, (f64, f64))>>;
/// One panel of the interval chart: its area, title, label width, what it
/// plots and where its axis ends.
type IntervalPanel<'a, 'b> = (
    &'a DrawingArea<SVGBackend<'b>, Shift>,
    &'static str,
    u32,
    IntervalOf,
    f64,
);

/// One configuration of the interval chart: a point and its 95% interval per metric.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalRow {
    /// What the row is (baseline, recommended, best FAMILY, union, out of sample).
    pub role: String,
    /// Recall and its Wilson interval.
    pub recall: Option<(f64, (f64, f64))>,
    /// False positives per labelled clean session and its Wilson interval.
    pub fp_rate: Option<(f64, (f64, f64))>,
    /// The configuration the row is about.
    pub config: Option<String>,
    /// Tooltip: the role, the configuration, the intervals with their sample sizes.
    pub tip: String,
}

/// `72.0% [50.1%, 86.3%]`.
fn pct_ci((x, (lo, hi)): (f64, (f64, f64))) -> String {
    format!(
        "{:.1}% {}",
        x * 100.0,
        crate::util::number::interval(format!("{:.1}%", lo * 100.0), format!("{:.1}%", hi * 100.0))
    )
}

/// An interval row of one configuration, from its `sweep.csv` scores.
pub fn interval_row(d: &ReportData, role: &str, r: &Row) -> IntervalRow {
    let get =
        |value: &str, lo: &str, hi: &str| Some((r.score(value)?, (r.score(lo)?, r.score(hi)?)));
    let recall = get("recall", "recall_lo", "recall_hi");
    let fp_rate = get("fp_rate", "fp_rate_lo", "fp_rate_hi");
    let count = |name: &str| r.score(name).map(crate::report::fixed);
    let mut tip = format!("{role}: {}", describe(d, r));
    if let Some(x) = recall {
        let _ = write!(tip, "\nrecall {} (95% Wilson interval)", pct_ci(x));
        if let (Some(tp), Some(n)) = (count("true_positives"), count("labeled_loops")) {
            let _ = write!(tip, ", {tp} of {n} labeled loops");
        }
    }
    if let Some(x) = fp_rate {
        let _ = write!(tip, "\nfalse positives per clean session {}", pct_ci(x));
        if let (Some(fp), Some(n)) = (count("false_positives"), count("labeled_clean")) {
            let _ = write!(tip, ", {fp} of {n} labeled clean sessions");
        }
    }
    IntervalRow {
        role: role.to_string(),
        recall,
        fp_rate,
        config: Some(r.config.clone()),
        tip,
    }
}

const INTERVAL_ROW_PX: u32 = 30;

/// The end of the false-positive axis: the first of 5%, 10%, 20%, 25%, 50%
/// and 100% at or above `max`.
fn fp_axis_top(max: f64) -> f64 {
    [0.05, 0.1, 0.2, 0.25, 0.5, 1.0]
        .into_iter()
        .find(|&t| max <= t)
        .unwrap_or(1.0)
}

/// One colour per role in the interval chart, whatever the number of rows:
/// the baseline ink, the recommendation (in and out of sample) vermillion,
/// every family's best one purple, the union green.
fn role_colour(role: &str) -> RGBColor {
    if role == "baseline" {
        INK
    } else if role.starts_with("recommended") {
        PALETTE[0]
    } else if role.starts_with("best ") {
        PALETTE[3]
    } else if role.starts_with("union") {
        PALETTE[2]
    } else {
        MUTED
    }
}

/// Recall and false-positive rate with their 95% intervals as error bars, one
/// row per configuration: how far apart two candidates really are.
pub fn interval_chart(rows: &[IntervalRow]) -> Draw<String> {
    let size = (960, 90 + INTERVAL_ROW_PX * rows.len().max(1) as u32);
    // False-positive rates are mostly small: the axis ends at the first of
    // 5%, 10%, 20%, 25%, 50%, 100% above every interval, not always at 100%.
    let fp_top = rows
        .iter()
        .filter_map(|r| r.fp_rate.map(|(x, (_, hi))| x.max(hi)))
        .fold(0.0, f64::max);
    let fp_top = fp_axis_top(fp_top);
    if rows.is_empty() {
        return empty_chart(size, "Nothing to compare: no labelled loops.");
    }
    let names: Vec<String> = rows.iter().map(|r| r.role.clone()).collect();
    svg_marked(size, |root, marks| {
        let (left, right) = root.split_horizontally(size.0 / 2 + 60);
        let panels: [IntervalPanel; 2] = [
            (
                &left,
                "recall (95% interval)",
                160,
                Box::new(|r: &IntervalRow| r.recall),
                1.0,
            ),
            (
                &right,
                "false positives per clean session (95% interval)",
                10,
                Box::new(|r: &IntervalRow| r.fp_rate),
                fp_top,
            ),
        ];
        for (area, title, label_px, get, top) in panels {
            let n = rows.len() as f64;
            let mut ch = ChartBuilder::on(area)
                .caption(title, font(LABEL_PT))
                .margin(10)
                .x_label_area_size(30)
                .y_label_area_size(label_px)
                .build_cartesian_2d(0.0..top, -0.5..(n - 0.5))?;
            let names = names.clone();
            ch.configure_mesh()
                .light_line_style(WHITE)
                .bold_line_style(GRID)
                .y_labels(rows.len())
                .y_label_formatter(&move |v| {
                    if label_px > 20 {
                        // Rows top to bottom: index 0 is drawn at the top.
                        category_label(&names, n - 1.0 - v)
                    } else {
                        String::new()
                    }
                })
                .x_label_formatter(&|v| format!("{:.0}%", v * 100.0))
                .label_style(font(SMALL_PT))
                .draw()?;
            for (i, r) in rows.iter().enumerate() {
                let y = n - 1.0 - i as f64;
                let colour = role_colour(&r.role);
                if let Some((x, (lo, hi))) = get(r) {
                    ch.draw_series(std::iter::once(PathElement::new(
                        vec![(lo, y), (hi, y)],
                        colour.stroke_width(2),
                    )))?;
                    for end in [lo, hi] {
                        ch.draw_series(std::iter::once(PathElement::new(
                            vec![(end, y - 0.18), (end, y + 0.18)],
                            colour.stroke_width(2),
                        )))?;
                    }
                    ch.draw_series(std::iter::once(Circle::new((x, y), 5, colour.filled())))?;
                    // The whole bar is the hit area, at least the point's width.
                    let (a, b) = (ch.backend_coord(&(lo, y)), ch.backend_coord(&(hi, y)));
                    let (p, _) = ch.backend_coord(&(x, y));
                    marks.push(Mark::new(
                        r.config.as_deref(),
                        r.tip.clone(),
                        Shape::Rect((a.0.min(p - 7), a.1 - 9), (b.0.max(p + 7), b.1 + 9)),
                    ));
                }
            }
        }
        Ok(())
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::model::{parse_sweep_csv, Summary};
    use serde_json::json;

    /// Score columns a sample row sets; the rest of SCORE_NAMES stay empty.
    struct Cfg {
        id: &'static str,
        family: &'static str,
        profile: &'static str,
        params: Vec<(&'static str, &'static str)>,
        overrides: Vec<(&'static str, &'static str)>,
        fp: u32,
        recall: f64,
        f1: f64,
        ttd: Vec<i64>,
        stock: bool,
        pareto: bool,
        recommended: bool,
    }

    const GRID: &str = r#"name = "t"
[[grid]]
profile = "gemini-latest"
[grid.axes]
tool_call_threshold = [3, 5, 8]
content_loop_threshold = { start = 5, stop = 15, step = 5 }

[[grid]]
profile = "gemini-latest"
[grid.axes]
policy = ["stop", "warn:1", "ask"]
"#;

    fn configs() -> Vec<Cfg> {
        let mut v = Vec::new();
        let ids = [
            "c00", "c01", "c02", "c10", "c11", "c12", "c20", "c21", "c22",
        ];
        let (tools, contents) = (["3", "5", "8"], ["5", "10", "15"]);
        for (ti, t) in tools.iter().enumerate() {
            for (ci, c) in contents.iter().enumerate() {
                let mut ov = Vec::new();
                if *t != "5" {
                    ov.push(("tool_call_threshold", *t));
                }
                if *c != "10" {
                    ov.push(("content_loop_threshold", *c));
                }
                let stock = ov.is_empty();
                v.push(Cfg {
                    id: ids[ti * 3 + ci],
                    family: "gemini",
                    profile: "gemini-latest",
                    params: vec![
                        ("policy", "warn:1"),
                        ("tool_call_threshold", t),
                        ("content_loop_threshold", c),
                    ],
                    overrides: ov,
                    fp: (2 - ti as u32) + ci as u32,
                    recall: 1.0 - 0.25 * ti as f64,
                    f1: 0.5 + 0.05 * (ti * 3 + ci) as f64,
                    ttd: (0..(4 - ti as i64))
                        .map(|k| 1 + k * (ti as i64 + 1))
                        .collect(),
                    stock,
                    pareto: ti == 0 && ci == 0 || stock,
                    recommended: ti == 2 && ci == 0,
                });
            }
        }
        for (id, p) in [("cp1", "stop"), ("cp2", "ask")] {
            v.push(Cfg {
                id,
                family: "gemini",
                profile: "gemini-latest",
                params: vec![
                    ("policy", p),
                    ("tool_call_threshold", "5"),
                    ("content_loop_threshold", "10"),
                ],
                overrides: vec![("policy", p)],
                fp: 1,
                recall: 0.75,
                f1: 0.6,
                ttd: vec![2, 3],
                stock: false,
                pareto: false,
                recommended: false,
            });
        }
        v.push(Cfg {
            id: "ck",
            family: "opencode",
            profile: "kilo",
            params: vec![],
            overrides: vec![],
            fp: 0,
            recall: 0.0,
            f1: 0.0,
            ttd: vec![],
            stock: true,
            pareto: true,
            recommended: false,
        });
        v
    }

    /// `sweep.csv` text for the sample, written independently of the parser.
    pub(crate) fn sample_csv() -> String {
        let mut s = String::from(
            "config,label,family,profile,policy,tool_call_threshold,content_loop_threshold,\
             sessions,labeled_loops,false_positives,recall,f1,ttd_median,detection_kinds,stock,pareto,recommended\n",
        );
        for c in configs() {
            let p = |k: &str| {
                c.params
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| *v)
                    .unwrap_or("")
            };
            let med = if c.ttd.is_empty() {
                String::new()
            } else {
                c.ttd[(c.ttd.len() - 1) / 2].to_string()
            };
            s.push_str(&format!(
                "{},{},{},{},{},{},{},10,4,{},{},{},{},,{},{},{}\n",
                c.id,
                c.id,
                c.family,
                c.profile,
                p("policy"),
                p("tool_call_threshold"),
                p("content_loop_threshold"),
                c.fp,
                c.recall,
                c.f1,
                med,
                c.stock,
                c.pareto,
                c.recommended
            ));
        }
        s
    }

    pub(crate) fn sample_summary() -> serde_json::Value {
        let cs = configs();
        json!({
            "grid": {"name": "t", "base_profile": "gemini-latest",
                     "axes": ["tool_call_threshold", "content_loop_threshold", "policy"], "source": GRID,
                     "param_columns": ["policy", "tool_call_threshold", "content_loop_threshold"],
                     "configs": cs.iter().map(|c| json!({
                        "id": c.id, "label": c.id, "family": c.family, "profile": c.profile, "stock": c.stock,
                        "params": c.params.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
                        "overrides": c.overrides.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
                     })).collect::<Vec<_>>()},
            "scores": cs.iter().map(|c| json!({"config": c.id, "ttd": c.ttd, "labeled_loops": 4})).collect::<Vec<_>>(),
            "stock": {"config": "c11", "label": "c11"},
            "recommendation": {"config": "c20", "label": "c20"},
            "disagreements": [{
                "session": "s1", "turns": 4, "label": "loop", "onset_turn": 2,
                "timeline": [{"turn": 0}, {"turn": 1, "tool_calls": 2}, {"turn": 2, "tool_calls": 1, "tool_errors": 1},
                             {"turn": 3, "content": 3}, {"turn": 4, "tool_calls": 1}],
                "detections": [{"config": "c11", "label": "c11", "turn": 3, "event": 9, "kind": "tool_call", "detail": "x"},
                               {"config": "c20", "label": "c20", "turn": 3, "event": 9, "kind": "tool_call", "detail": "x"},
                               {"config": "ck", "label": "ck", "turn": 4, "event": 12, "kind": "doom_loop", "detail": "y"}],
                "excerpts": []
            }],
            "note": "n"
        })
    }

    pub(crate) fn sample() -> ReportData {
        ReportData::new(
            serde_json::from_value::<Summary>(sample_summary()).unwrap(),
            parse_sweep_csv(&sample_csv()),
        )
    }

    /// A column of the sample CSV by name, read with the csv crate directly.
    fn csv_col(name: &str) -> BTreeMap<String, String> {
        let text = sample_csv();
        let mut rd = csv::Reader::from_reader(text.as_bytes());
        let h = rd.headers().unwrap().clone();
        let i = h.iter().position(|c| c == name).unwrap();
        rd.records()
            .map(|r| {
                let r = r.unwrap();
                (r[0].to_string(), r[i].to_string())
            })
            .collect()
    }

    #[test]
    fn fp_recall_points_equal_the_csv_columns() {
        let data = fp_recall_data(&sample());
        let (fp, recall) = (csv_col("false_positives"), csv_col("recall"));
        assert_eq!(data.points.len(), fp.len());
        for p in &data.points {
            assert_eq!(p.fp, fp[&p.config].parse::<f64>().unwrap(), "{}", p.config);
            assert_eq!(
                p.recall,
                recall[&p.config].parse::<f64>().unwrap(),
                "{}",
                p.config
            );
        }
        // The front: no front point is beaten on both axes by any point.
        for &(f, r) in &data.front {
            assert!(!data
                .points
                .iter()
                .any(|p| p.fp <= f && p.recall >= r && (p.fp < f || p.recall > r) && p.pareto));
        }
        assert!(data
            .points
            .iter()
            .any(|p| p.recommended && p.config == "c20"));
        assert!(fp_recall_chart(&data).unwrap().contains("<svg"));
    }

    #[test]
    fn axis_curves_have_one_point_per_value() {
        let d = sample();
        let curves = axis_curves(&d);
        let names: Vec<&str> = curves.iter().map(|c| c.axis.as_str()).collect();
        assert_eq!(
            names,
            ["tool_call_threshold", "content_loop_threshold", "policy"]
        );
        let tool = &curves[0];
        assert_eq!(
            tool.points
                .iter()
                .map(|p| p.value.as_str())
                .collect::<Vec<_>>(),
            ["3", "5", "8"]
        );
        assert_eq!(tool.points.iter().filter(|p| p.stock).count(), 1);
        // Others at stock: content 10 on every point.
        let recall = csv_col("recall");
        for p in &tool.points {
            assert_eq!(
                d.row(&p.config).unwrap().params["content_loop_threshold"],
                "10"
            );
            assert_eq!(p.recall, Some(recall[&p.config].parse().unwrap()));
        }
        let policy = &curves[2];
        assert!(!policy.numeric);
        assert_eq!(
            policy
                .points
                .iter()
                .map(|p| p.value.as_str())
                .collect::<Vec<_>>(),
            ["stop", "warn:1", "ask"]
        );
        assert_eq!(
            policy.points.iter().map(|p| p.x).collect::<Vec<_>>(),
            [0.0, 1.0, 2.0]
        );
        for c in &curves {
            assert!(axis_chart(c).unwrap().contains("<svg"));
        }
    }

    #[test]
    fn heatmap_cells_equal_the_csv_f1() {
        let d = sample();
        let maps = heatmaps(&d);
        assert_eq!(maps.len(), 1, "only the two-axis sub-grid");
        let m = &maps[0];
        // Equal lengths: the first declared axis runs across.
        assert_eq!(m.x_values, ["3", "5", "8"]);
        assert_eq!(m.y_values, ["5", "10", "15"]);
        let f1 = csv_col("f1");
        let mut seen = 0;
        for (yi, row) in m.cells.iter().enumerate() {
            for (xi, cell) in row.iter().enumerate() {
                let c = cell.as_ref().expect("every cell of a full product");
                let r = d.row(&c.config).unwrap();
                assert!(same_value(&r.params[&m.x_axis], &m.x_values[xi]));
                assert!(same_value(&r.params[&m.y_axis], &m.y_values[yi]));
                assert_eq!(c.f1, Some(f1[&c.config].parse().unwrap()));
                seen += 1;
            }
        }
        assert_eq!(seen, 9);
        assert_eq!(m.cells[1][1].as_ref().unwrap().config, "c11", "stock cell");
        for metric in [
            HeatMetric::F1,
            HeatMetric::FalsePositives,
            HeatMetric::Recall,
        ] {
            let scale = HeatScale::over(&maps, metric);
            assert!(heatmap_chart(m, &scale).unwrap().contains("<svg"));
        }
    }

    #[test]
    fn ttd_histogram_counts_sum_to_the_distribution() {
        let d = sample();
        let data = ttd_data(&d);
        assert_eq!(data.series[0].members[0], "c20", "recommended first");
        assert!(data.series[0].recommended);
        for s in &data.series {
            assert_eq!(
                s.per_turn.iter().map(|&(_, k)| k).sum::<usize>(),
                s.ttd.len()
            );
            assert!(s.per_turn.windows(2).all(|w| w[0].0 < w[1].0));
            assert!(s
                .per_turn
                .iter()
                .all(|&(t, _)| (data.lo..=data.hi).contains(&t)));
            let entry = d
                .summary
                .scores
                .iter()
                .find(|e| s.members.contains(&e.config))
                .unwrap();
            assert_eq!(s.ttd.len(), entry.ttd.len());
        }
        assert_eq!(data.silent, ["ck"]);
        assert!(ttd_chart(&data).unwrap().contains("<svg"));
    }

    /// The configuration ids of a chart's links, in order.
    pub(crate) fn links(svg: &str) -> Vec<String> {
        svg.split("<a href=\"#cfg-")
            .skip(1)
            .map(|p| p[..p.find('"').unwrap()].to_string())
            .collect()
    }

    #[test]
    fn every_stock_profile_has_a_row_in_the_ttd_chart() {
        let d = sample();
        let data = ttd_data(&d);
        let mut shown: Vec<&str> = data
            .series
            .iter()
            .flat_map(|s| s.configs.iter().map(String::as_str))
            .chain(data.silent_configs.iter().map(String::as_str))
            .collect();
        shown.sort_unstable();
        let mut stock: Vec<&str> = d
            .rows
            .iter()
            .filter(|r| r.stock || r.recommended)
            .map(|r| r.config.as_str())
            .collect();
        stock.sort_unstable();
        assert_eq!(shown, stock, "each once, none left out");
        for s in &data.series {
            assert_eq!(s.members.len(), s.configs.len());
            let r = d.row(&s.configs[0]).unwrap();
            assert_eq!(Some(s.median), r.score("ttd_median"));
        }
        // Medians are written with their sample size.
        let svg = ttd_chart(&data).unwrap();
        for s in &data.series {
            let text = format!("{} (n={})", crate::report::fixed(s.median), s.ttd.len());
            assert!(svg.contains(&text), "{text}");
        }
    }

    #[test]
    fn chart_marks_link_each_point_to_its_configuration() {
        let d = sample();
        let ids: Vec<&str> = d.rows.iter().map(|r| r.config.as_str()).collect();
        let check = |svg: &str, want: Vec<String>| {
            let got = links(svg);
            assert_eq!(got.len(), want.len(), "one link per mark");
            let (mut g, mut w) = (got.clone(), want);
            g.sort();
            w.sort();
            assert_eq!(g, w);
            assert!(got.iter().all(|id| ids.contains(&id.as_str())));
            // Every link carries a tooltip, and there is no other link.
            assert_eq!(svg.matches("<a ").count(), got.len());
            for part in svg.split("<a href=\"#cfg-").skip(1) {
                assert!(part[part.find('"').unwrap()..].starts_with("\"><title>"));
            }
        };

        let fr = fp_recall_data(&d);
        let svg = fp_recall_chart(&fr).unwrap();
        check(&svg, fr.points.iter().map(|p| p.config.clone()).collect());
        assert_eq!(
            links(&svg).last().unwrap(),
            "c20",
            "the recommendation on top"
        );

        for c in axis_curves(&d) {
            let mut want = Vec::new();
            for get in [
                |p: &AxisPoint| p.recall,
                |p: &AxisPoint| p.fp,
                |p: &AxisPoint| p.ttd_median,
            ] {
                want.extend(
                    c.points
                        .iter()
                        .filter(|p| get(p).is_some())
                        .map(|p| p.config.clone()),
                );
            }
            check(&axis_chart(&c).unwrap(), want);
        }

        let maps = heatmaps(&d);
        let scale = HeatScale::over(&maps, HeatMetric::F1);
        for m in &maps {
            let want = m
                .cells
                .iter()
                .flatten()
                .flatten()
                .map(|c| c.config.clone())
                .collect();
            check(&heatmap_chart(m, &scale).unwrap(), want);
        }

        // Turns to detection: a row's name, its dots and its curve's steps
        // link when the row is one configuration; merged rows only explain.
        // cp1 made a stock profile that detects exactly as c11 does: one row for both.
        let mut d2 = d.clone();
        d2.rows
            .iter_mut()
            .find(|r| r.config == "cp1")
            .unwrap()
            .stock = true;
        let c11 = d2
            .summary
            .scores
            .iter()
            .find(|e| e.config == "c11")
            .unwrap()
            .ttd
            .clone();
        d2.summary
            .scores
            .iter_mut()
            .find(|e| e.config == "cp1")
            .unwrap()
            .ttd = c11;
        let data = ttd_data(&d2);
        assert!(data.series.iter().any(|s| s.configs == ["c11", "cp1"]));
        let mut want = Vec::new();
        let mut unlinked = 0;
        for s in &data.series {
            let marks = 1 + 2 * s.per_turn.len();
            match s.configs.as_slice() {
                [one] => want.extend(std::iter::repeat_n(one.clone(), marks)),
                _ => unlinked += marks,
            }
        }
        match data.silent_configs.as_slice() {
            [one] => want.push(one.clone()),
            _ => unlinked += 1,
        }
        let svg = ttd_chart(&data).unwrap();
        check(&svg, want);
        assert_eq!(svg.matches("<g class=\"mark\"><title>").count(), unlinked);

        // Intervals: the sample CSV has none, so give c20 both and c11 recall only.
        let mut d3 = d.clone();
        for r in d3.rows.iter_mut() {
            let names: &[&str] = match r.config.as_str() {
                "c20" => &[
                    "recall",
                    "recall_lo",
                    "recall_hi",
                    "fp_rate",
                    "fp_rate_lo",
                    "fp_rate_hi",
                ],
                "c11" => &["recall", "recall_lo", "recall_hi"],
                _ => &[],
            };
            for n in names {
                r.scores.insert(n, 0.5);
            }
        }
        let rows: Vec<IntervalRow> = ["c20", "c11", "ck"]
            .iter()
            .map(|id| interval_row(&d3, id, d3.row(id).unwrap()))
            .collect();
        assert_eq!(rows[2].recall, None);
        let want = rows
            .iter()
            .flat_map(|r| {
                let n = usize::from(r.recall.is_some()) + usize::from(r.fp_rate.is_some());
                std::iter::repeat_n(r.config.clone().unwrap(), n)
            })
            .collect();
        let svg = interval_chart(&rows).unwrap();
        check(&svg, want);
        assert_eq!(links(&svg).len(), 3);
    }

    #[test]
    fn tooltips_are_escaped() {
        let mut v = sample_summary();
        v["grid"]["configs"][0]["label"] = "a<b & \"c\" </title><script>".into();
        let d = ReportData::new(
            serde_json::from_value::<Summary>(v).unwrap(),
            parse_sweep_csv(&sample_csv()),
        );
        let svg = fp_recall_chart(&fp_recall_data(&d)).unwrap();
        assert!(svg.contains("<title>a&lt;b &amp; &quot;c&quot; &lt;/title&gt;&lt;script&gt; (Pareto front)\nconfiguration c00"));
        assert!(!svg.contains("a<b") && !svg.contains("<script"));
        // Titles only inside the marks layer, each closed once.
        assert_eq!(
            svg.matches("<title>").count(),
            svg.matches("</title>").count()
        );
    }

    #[test]
    fn marks_go_last_and_only_into_a_closed_svg() {
        let m = [Mark::new(Some("x&y"), "t<1>", Shape::Rect((5, 9), (1, 2)))];
        let out = insert_marks("<svg>\n<rect/>\n</svg>\n".into(), &m).unwrap();
        assert_eq!(
            out,
            "<svg>\n<rect/>\n<g class=\"marks\" fill=\"#222222\" fill-opacity=\"0\" stroke=\"#222222\" \
             stroke-opacity=\"0\" stroke-width=\"2\">\n<a href=\"#cfg-x&amp;y\"><title>t&lt;1&gt;</title>\
             <rect x=\"1\" y=\"2\" width=\"4\" height=\"7\"/></a>\n</g>\n</svg>\n"
        );
        assert!(insert_marks("<svg>\n".into(), &m).is_err());
        assert_eq!(insert_marks("<svg>\n".into(), &[]).unwrap(), "<svg>\n");
    }

    /// A one-row heatmap with these false-positive counts.
    fn fp_map(fps: &[f64]) -> Heatmap {
        Heatmap {
            profile: "p".into(),
            x_axis: "x".into(),
            y_axis: "y".into(),
            x_values: fps.iter().map(|v| format!("x{v}")).collect(),
            y_values: vec!["1".into()],
            held: Vec::new(),
            cells: vec![fps
                .iter()
                .enumerate()
                .map(|(i, &fp)| {
                    Some(Cell {
                        config: format!("k{i}"),
                        f1: Some(fp / 20.0),
                        fp: Some(fp),
                        recall: None,
                        stock: false,
                        tip: String::new(),
                    })
                })
                .collect()],
        }
    }

    /// The y tick labels of an SVG panel: `<text ...>\nLABEL\n</text>` values.
    fn tick_labels(svg: &str) -> Vec<String> {
        svg.split("</text>")
            .filter_map(|t| t.rsplit(">\n").next())
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty() && t.parse::<f64>().is_ok())
            .collect()
    }

    #[test]
    fn the_fp_axis_fits_the_data_and_each_role_has_one_colour() {
        assert_eq!(fp_axis_top(0.0), 0.05);
        assert_eq!(fp_axis_top(0.07), 0.1);
        assert_eq!(fp_axis_top(0.3), 0.5);
        assert_eq!(fp_axis_top(0.9), 1.0);
        let row = |role: &str, fp: f64| IntervalRow {
            role: role.into(),
            recall: Some((0.5, (0.3, 0.7))),
            fp_rate: Some((fp, (fp / 2.0, fp * 1.5))),
            config: None,
            tip: String::new(),
        };
        let rows: Vec<IntervalRow> = ["baseline", "recommended"]
            .into_iter()
            .map(|r| row(r, 0.04))
            .chain((0..10).map(|i| row(&format!("best family{i}"), 0.02)))
            .chain([row("recommended, out of sample", 0.05)])
            .collect();
        let svg = interval_chart(&rows).unwrap();
        // Every value under 10%: the axis ends at 10%, not 100%.
        assert!(svg.contains(">\n10%\n</text>"), "fp axis to 10%");
        assert_eq!(
            svg.matches(">\n100%\n</text>").count(),
            1,
            "only recall runs to 100%"
        );
        // Ten families' bests share one colour; none takes the recommendation's.
        assert_eq!(role_colour("best family3"), role_colour("best family9"));
        assert_ne!(role_colour("best family3"), role_colour("recommended"));
        assert_eq!(
            role_colour("recommended, out of sample"),
            role_colour("recommended")
        );
    }

    #[test]
    fn count_axes_get_whole_ticks_none_repeated() {
        for top in [1.0, 2.0, 3.0, 7.0, 40.0] {
            let points = (0..4)
                .map(|i| AxisPoint {
                    value: i.to_string(),
                    x: i as f64,
                    config: format!("c{i}"),
                    stock: i == 0,
                    recall: Some(0.5),
                    fp: Some(top * i as f64 / 3.0),
                    ttd_median: Some(top),
                    tip: String::new(),
                })
                .collect();
            let c = AxisCurve {
                axis: "tool_call_threshold".into(),
                profile: "gemini-latest".into(),
                numeric: true,
                points,
            };
            let svg = axis_chart(&c).unwrap();
            let labels = tick_labels(&svg);
            let whole: Vec<&String> = labels.iter().filter(|l| !l.contains('.')).collect();
            assert_eq!(whole.len(), labels.len(), "{top}: {labels:?}");
            // Three panels, each with its x labels (0..3) and, for the two
            // counts, y labels: a value shows at most once per axis, so at
            // most five times in all (`0, 0, 1, 2, 2` used to repeat them).
            let mut seen = std::collections::HashMap::new();
            for l in &labels {
                *seen.entry(l.clone()).or_insert(0) += 1;
            }
            for (l, n) in seen {
                assert!(n <= 5, "{top}: `{l}` {n} times in {labels:?}");
            }
        }
    }

    #[test]
    fn heatmaps_share_one_colour_scale_per_metric() {
        let (a, b) = (fp_map(&[0.0, 1.0, 2.0]), fp_map(&[2.0, 5.0, 10.0]));
        let maps = [a, b];
        let fp = HeatScale::over(&maps, HeatMetric::FalsePositives);
        assert_eq!((fp.lo, fp.hi), (0.0, 10.0), "over every map");
        // On its own, the first map would have drawn 2 darkest.
        let alone = HeatScale::over(&maps[..1], HeatMetric::FalsePositives);
        assert_ne!(alone.colour(2.0), fp.colour(2.0));
        let hex = |c: RGBColor| format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
        let fill = hex(fp.colour(2.0));
        for m in &maps {
            let svg = heatmap_chart(m, &fp).unwrap();
            assert!(
                svg.contains(&fill),
                "the value 2 has one colour in every map"
            );
            // The legend: its name and the ends of the scale.
            assert!(svg.contains("false positives (same scale in every map)"));
            // Ticks no cell shows.
            assert!(
                svg.contains(">\n4\n</text>") && svg.contains(">\n8\n</text>"),
                "tick labels"
            );
        }
        // Ratios keep 0..1 whatever the maps hold.
        let f1 = HeatScale::over(&maps, HeatMetric::F1);
        assert_eq!((f1.lo, f1.hi), (0.0, 1.0));
        assert_eq!(f1.ticks(), [0.0, 0.25, 0.5, 0.75, 1.0]);
        assert_eq!(fp.ticks(), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let svg = heatmap_chart(&maps[0], &f1).unwrap();
        assert!(svg.contains("F1 (same scale in every map)"));
        assert!(svg.contains(">\n0.75\n</text>") && svg.contains(">\n1.00\n</text>"));
    }

    #[test]
    fn timeline_lanes_group_configurations_firing_together() {
        let d = sample();
        let t = timeline_data(&d, &d.summary.disagreements[0]);
        assert_eq!(t.activity.len(), 5);
        assert_eq!(t.activity[2], [1, 1, 0]);
        assert_eq!(t.lanes.len(), 2);
        assert_eq!(t.lanes[0].labels, ["c11", "c20"]);
        assert!(t.lanes[0].recommended);
        assert_eq!(t.lanes[1].turn, 4);
        assert_eq!(t.lanes[0].configs, ["c11", "c20"]);
        let svg = timeline_chart(&t).unwrap();
        // The lone configuration's lane links (dot and name); the shared lane explains.
        assert_eq!(links(&svg), ["ck", "ck"]);
        assert_eq!(svg.matches("<g class=\"mark\"><title>").count(), 2);
    }

    #[test]
    fn ranges_expand_like_the_grid() {
        let v: toml::Value =
            toml::from_str::<toml::Table>("x = { start = 1.5, stop = 2.5, step = 0.5 }").unwrap()
                ["x"]
                .clone();
        assert_eq!(toml_values(&v), ["1.5", "2", "2.5"]);
        assert!(same_value("2", "2.0") && same_value("True", "true") && !same_value("3", "30"));
    }
}
