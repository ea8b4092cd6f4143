//! The charts' numbers against `sweep.csv`, and what their SVGs hold.

use super::*;
use super::{axis::*, fp_recall::*, heatmap::*, interval::*, timeline::*, ttd::*};
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

pub(crate) fn sample() -> ReportData<'static> {
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
        toml::from_str::<toml::Table>("x = { start = 1.5, stop = 2.5, step = 0.5 }").unwrap()["x"]
            .clone();
    assert_eq!(toml_values(&v), ["1.5", "2", "2.5"]);
    assert!(same_value("2", "2.0") && same_value("True", "true") && !same_value("3", "30"));
}

#[test]
fn the_interval_charts_last_axis_label_fits_in_the_picture() {
    let rows = vec![IntervalRow {
        role: "baseline".into(),
        recall: Some((0.5, (0.2, 0.8))),
        // The false-positive axis runs to 100%: its widest last label.
        fp_rate: Some((0.9, (0.6, 1.0))),
        config: Some("c00".into()),
        tip: "t".into(),
    }];
    let svg = interval_chart(&rows).unwrap();
    let width: f64 = 960.0;
    let mut checked = 0;
    for part in svg.split("<text").skip(1) {
        let (attrs, rest) = part.split_once('>').unwrap();
        let text = rest.split('<').next().unwrap().trim();
        if !text.ends_with('%') || !attrs.contains("text-anchor=\"middle\"") {
            continue;
        }
        let attr = |name: &str| -> f64 {
            let at = attrs.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
            attrs[at..].split('"').next().unwrap().parse().unwrap()
        };
        // A glyph is at most about 0.62 of the font size wide.
        let half = text.chars().count() as f64 * 0.62 * attr("font-size") / 2.0;
        assert!(attr("x") + half <= width, "{text} at {} is cut", attr("x"));
        checked += 1;
    }
    assert!(checked >= 10, "{checked} axis labels");
}
