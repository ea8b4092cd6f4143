//! False positives against recall for every configuration, the two-score
//! front drawn and numbered.

use super::*;

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
