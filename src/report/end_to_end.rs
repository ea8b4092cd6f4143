//! `report.html` end to end: a small sweep over canonical sessions written
//! here (one carrying a script-injection payload), then checks that the page
//! holds every chart kind as a drawn SVG, loads nothing from the network,
//! shows hostile transcript text only escaped, that its chart numbers match
//! `sweep.csv`, and that `looptune report DIR` regenerates it byte for byte.
//! A unit test: it reads the chart data and the report model, which are not
//! part of the library's API (tests/integration/cli.rs runs `report DIR`
//! through the binary).

use super::charts;
use super::model::ReportData;
use std::collections::BTreeMap;
use std::path::Path;

const PAYLOAD: &str =
    "<script>document.title='PWNED'</script></textarea><img src=x onerror=alert(1)>";

fn turn(out: &mut String, records: &[String]) {
    out.push_str("{\"type\":\"turn\"}\n");
    for r in records {
        out.push_str(r);
        out.push('\n');
    }
}

fn call(i: usize, name: &str, args: &str, output: &str, error: bool) -> Vec<String> {
    vec![
        format!("{{\"type\":\"tool_call\",\"name\":\"{name}\",\"args\":{args},\"id\":\"c{i}\"}}"),
        format!(
            "{{\"type\":\"tool_result\",\"id\":\"c{i}\",\"name\":\"{name}\",\"output\":{},\"error\":{error}}}",
            serde_json::to_string(output).unwrap()
        ),
    ]
}

/// Four sessions: two loops (one hostile), one clean, one unlabeled.
fn write_corpus(dir: &Path) {
    let head = "{\"type\":\"session\",\"agent\":\"gemini-cli\",\"model\":\"gemini-2.5-pro\"}\n{\"type\":\"user\",\"text\":\"fix it\"}\n";
    let mut sessions: BTreeMap<&str, String> = BTreeMap::new();
    let mut s = head.to_string();
    for i in 0..9 {
        turn(
            &mut s,
            &call(
                i,
                "read_file",
                "{\"absolute_path\":\"/a\"}",
                "no such file",
                true,
            ),
        );
    }
    sessions.insert("loop_read", s);
    let mut s = head.to_string();
    for i in 0..8 {
        let mut recs = vec![format!(
            "{{\"type\":\"content\",\"text\":{}}}",
            serde_json::to_string(&format!("Rendering {PAYLOAD} again.")).unwrap()
        )];
        recs.extend(call(
            i,
            "read_file",
            "{\"absolute_path\":\"/p.html\"}",
            PAYLOAD,
            true,
        ));
        turn(&mut s, &recs);
    }
    sessions.insert("loop_hostile", s);
    let mut s = head.to_string();
    for i in 0..12 {
        turn(
            &mut s,
            &call(
                i,
                "read_file",
                &format!("{{\"absolute_path\":\"/src/m{i}.rs\"}}"),
                "fn f() {}",
                false,
            ),
        );
    }
    sessions.insert("clean_reads", s);
    let mut s = head.to_string();
    for i in 0..5 {
        turn(
            &mut s,
            &call(i, "glob", &format!("{{\"pattern\":\"*.{i}\"}}"), "x", false),
        );
    }
    sessions.insert("unlabeled", s);
    for (name, text) in &sessions {
        std::fs::write(dir.join(format!("{name}.jsonl")), text).unwrap();
    }
    std::fs::write(
        dir.join("labels.csv"),
        "session,label,onset_turn\nloop_read,loop,1\nloop_hostile,loop,1\nclean_reads,clean,\n",
    )
    .unwrap();
}

fn sweep(root: &Path) -> std::path::PathBuf {
    let input = root.join("in");
    let out = root.join("out");
    std::fs::create_dir_all(&input).unwrap();
    write_corpus(&input);
    sweep_into(&input, out)
}

/// Sweep `input` (its `labels.csv` too) with the default grid into `out`.
fn sweep_into(input: &Path, out: std::path::PathBuf) -> std::path::PathBuf {
    let req = crate::cli::SweepRequest {
        paths: vec![input.to_path_buf()],
        read: crate::input::ReadOptions {
            digests: true,
            ..Default::default()
        },
        labels: vec![input.join("labels.csv")],
        out: Some(out.clone()),
        quiet: true,
        ..Default::default()
    };
    let mut err = Vec::new();
    let code = crate::cli::sweep_command(&req, &mut Vec::new(), &mut err).unwrap();
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&err));
    out
}

/// The SVG of each `<figure data-chart="KIND">`.
fn charts_of(html: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for part in html.split("<figure class=\"chart\" data-chart=\"").skip(1) {
        let kind = part.split('"').next().unwrap().to_string();
        let start = part.find("<svg").expect("a chart figure holds an svg");
        let end = part.find("</svg>").expect("closed svg");
        out.entry(kind)
            .or_default()
            .push(part[start..end].to_string());
    }
    out
}

#[test]
fn sweep_writes_a_self_contained_report_that_regenerates() {
    let tmp = tempfile::tempdir().unwrap();
    let out = sweep(tmp.path());
    let path = out.join("report.html");
    let html = std::fs::read_to_string(&path).unwrap();

    let charts = charts_of(&html);
    for kind in ["ttd", "fp-recall", "axis", "heatmap", "timeline"] {
        let svgs = charts
            .get(kind)
            .unwrap_or_else(|| panic!("no {kind} chart"));
        for svg in svgs {
            let drawn = ["<rect", "<path", "<polyline", "<circle", "<text", "<line"]
                .iter()
                .map(|t| svg.matches(t).count())
                .sum::<usize>();
            assert!(drawn > 3, "empty {kind} chart");
        }
    }

    // No resource from the network: the only URLs are SVG namespaces.
    let xmlns = html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
    assert_eq!(html.matches("http://").count(), xmlns, "http:// reference");
    assert!(!html.contains("https://"));
    for attr in ["src=\"", "href=\"http", "@import", "url(http"] {
        assert!(!html.contains(attr), "{attr} in the report");
    }
    assert!(html.contains("Content-Security-Policy"));

    // The hostile transcript is on the page, escaped.
    assert!(!html.contains("<script>document.title"));
    assert!(!html.contains("<img src=x"));
    assert!(!html.contains("</textarea>"));
    assert!(html.contains("&lt;script&gt;document.title="));
    assert_eq!(html.matches("<script").count(), 1);

    // `looptune report DIR` rebuilds the same page from the folder alone.
    std::fs::remove_file(&path).unwrap();
    let code = crate::cli::report_command(&out, &Default::default(), &mut Vec::new()).unwrap();
    assert_eq!(code, 0);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), html);
}

/// The report made from a result writes each explanation as it is made; it
/// is the page the same explanations listed first would give.
#[test]
fn streamed_explanations_are_the_listed_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let out = sweep_into(&fixtures, tmp.path().join("out"));
    let d = ReportData::load(&out).unwrap();
    let listed = d.listed();
    assert!(!listed.summary.explanations.is_empty(), "nothing explained");
    assert_eq!(listed.explanation_count(), d.explanation_count());
    let html = crate::report::html::render(&d).unwrap();
    assert_eq!(html, crate::report::html::render(&listed).unwrap());
    assert!(html.contains("id=\"explain-0\""));
}

#[test]
fn chart_numbers_match_sweep_csv() {
    let tmp = tempfile::tempdir().unwrap();
    let out = sweep(tmp.path());
    let d = ReportData::load(&out).unwrap();
    let mut rd = csv::Reader::from_path(out.join("sweep.csv")).unwrap();
    let header = rd.headers().unwrap().clone();
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let (fp_i, rec_i, f1_i) = (col("false_positives"), col("recall"), col("f1"));
    let mut csv: BTreeMap<String, (f64, f64, f64)> = BTreeMap::new();
    for r in rd.records() {
        let r = r.unwrap();
        let n = |i: usize| r[i].parse::<f64>().unwrap();
        csv.insert(r[0].to_string(), (n(fp_i), n(rec_i), n(f1_i)));
    }
    assert_eq!(csv.len(), d.rows.len());

    let fr = charts::fp_recall_data(&d);
    assert_eq!(fr.points.len(), csv.len(), "one point per configuration");
    // The CSV rounds to 6 decimals; the charts draw the exact scores.
    let near = |a: f64, b: f64| (a - b).abs() <= 5e-7;
    for p in &fr.points {
        assert!(near(p.fp, csv[&p.config].0) && near(p.recall, csv[&p.config].1));
    }

    for m in charts::heatmaps(&d) {
        for cell in m.cells.iter().flatten().flatten() {
            assert!(
                near(cell.f1.unwrap(), csv[&cell.config].2),
                "{}",
                cell.config
            );
        }
    }

    let curves = charts::axis_curves(&d);
    assert!(!curves.is_empty());
    for c in &curves {
        let mut values: Vec<&str> = c.points.iter().map(|p| p.value.as_str()).collect();
        let n = values.len();
        values.dedup();
        assert_eq!(values.len(), n, "{}: one point per value", c.axis);
        assert_eq!(c.points.iter().filter(|p| p.stock).count(), 1, "{}", c.axis);
    }

    let ttd = charts::ttd_data(&d);
    for s in &ttd.series {
        let e = d
            .summary
            .scores
            .iter()
            .find(|e| d.label(d.row(&e.config).unwrap()) == s.members[0])
            .unwrap();
        assert_eq!(
            s.per_turn.iter().map(|&(_, k)| k).sum::<usize>(),
            e.ttd.len()
        );
    }
}

/// The configuration ids an SVG links to, in order.
fn links(svg: &str) -> Vec<String> {
    svg.split("<a href=\"#cfg-")
        .skip(1)
        .map(|p| p[..p.find('"').unwrap()].to_string())
        .collect()
}

#[test]
fn chart_marks_link_to_rows_and_heatmaps_share_a_scale() {
    let tmp = tempfile::tempdir().unwrap();
    let out = sweep(tmp.path());
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let d = ReportData::load(&out).unwrap();
    let charts = charts_of(&html);
    // Every link lands on a row anchor of the page. The anchors are
    // collected once: a scan of the page per link took minutes.
    let rows: std::collections::HashSet<&str> = html
        .split("<tr id=\"cfg-")
        .skip(1)
        .map(|p| &p[..p.find('"').unwrap()])
        .collect();
    for (kind, svgs) in &charts {
        for svg in svgs {
            for id in links(svg) {
                assert!(rows.contains(id.as_str()), "{kind}: #cfg-{id} is no row");
            }
        }
    }
    // One mark per configuration on the false-positives-vs-recall chart, one per cell on a heatmap.
    let fr = &charts["fp-recall"][0];
    let mut got = links(fr);
    got.sort();
    let mut want: Vec<String> = d.rows.iter().map(|r| r.config.clone()).collect();
    want.sort();
    assert_eq!(got, want);
    let maps = charts::heatmaps(&d);
    assert!(!maps.is_empty());
    // Three heatmaps per pair (F1, false positives, recall), in that order.
    assert_eq!(charts["heatmap"].len(), 3 * maps.len());
    for (m, svgs) in maps.iter().zip(charts["heatmap"].chunks(3)) {
        let cells: Vec<String> = m
            .cells
            .iter()
            .flatten()
            .flatten()
            .map(|c| c.config.clone())
            .collect();
        for svg in svgs {
            assert_eq!(links(svg), cells);
            assert!(svg.contains("(same scale in every map)"), "a legend");
        }
    }
    // Tooltips are there and name the configuration.
    let recommended = d.rows.iter().find(|r| r.recommended).unwrap();
    assert!(fr.contains(&format!("\nconfiguration {} · family", recommended.config)));
}

#[test]
fn missing_inputs_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let e =
        crate::cli::report_command(tmp.path(), &Default::default(), &mut Vec::new()).unwrap_err();
    assert!(e.to_string().contains("summary.json"), "{e}");
    assert_eq!(e.exit_code(), crate::error::EXIT_INPUT);
}
