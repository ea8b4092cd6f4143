//! One curve per swept constant: recall, false positives and median
//! turns-to-detection as the constant moves alone on top of a profile.

use super::*;

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
