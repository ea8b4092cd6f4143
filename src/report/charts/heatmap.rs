//! Heatmaps over pairs of axes of each sub-grid, on one colour scale per
//! metric shared by the whole report.

use super::*;

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
pub(super) fn toml_values(v: &toml::Value) -> Vec<String> {
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
