//! Recall and false-positive rate with their 95% intervals, one row per
//! configuration shown.

use super::*;

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
pub(super) fn fp_axis_top(max: f64) -> f64 {
    [0.05, 0.1, 0.2, 0.25, 0.5, 1.0]
        .into_iter()
        .find(|&t| max <= t)
        .unwrap_or(1.0)
}

/// One colour per role in the interval chart, whatever the number of rows:
/// the baseline ink, the recommendation (in and out of sample) vermillion,
/// every family's best one purple, the union green.
pub(super) fn role_colour(role: &str) -> RGBColor {
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
                // Room for half the axis's last label ("100%") past the
                // plot's right edge: with 10 it was cut at the picture's edge.
                .margin_right(24)
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
