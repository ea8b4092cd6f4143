//! Turns to detection: one row per distinct distribution of every stock
//! profile and the recommendation, and the cumulative share of labelled
//! loops detected.

use super::*;

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
        let mut ttd = entry.map(|e| e.ttd.to_vec()).unwrap_or_default();
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
