//! The output folder as a list (`looptune::outputs`): a fifth output needs
//! nothing but its own definition (here, in this file) and a place in the
//! list, and `report DIR` re-renders every output; the Parquet files hold the
//! CSVs' rows and values.

use crate::util::{looptune, root};
use looptune::outputs::{report_outputs, Kind, Output, OutputOptions, Outputs};
use looptune::score::SweepResult;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A sweep of the fixtures under a small grid into `out`, with extra arguments.
fn sweep(dir: &Path, out: &Path, extra: &[&str]) {
    let grid = crate::util::write(
        dir,
        "grid.toml",
        "family = \"gemini\"\nstock_profiles = false\n[axes]\ntool_call_threshold = [2, 3, 5]\n[[extra]]\nprofile = \"opencode\"\n",
    );
    looptune()
        .current_dir(root())
        .args(["sweep", "fixtures/", "--labels", "fixtures/labels.csv"])
        .args(["--quiet", "--combine", "2", "--grid"])
        .arg(&grid)
        .arg("--out")
        .arg(out)
        .args(extra)
        .assert()
        .success();
}

/// Every file of a folder, by name.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            (name, std::fs::read(e.path()).unwrap_or_default())
        })
        .collect();
    v.sort();
    v
}

/// The fifth output, defined here and nowhere else: the sessions and their
/// labels, one a line.
struct SessionsTxt;

impl Output for SessionsTxt {
    fn name(&self) -> &str {
        "sessions.txt"
    }
    fn cost(&self) -> u32 {
        1
    }
    fn render(&self, r: &SweepResult, w: &mut (dyn Write + Send)) -> std::io::Result<()> {
        for s in &r.record.sessions {
            let label = match s.label() {
                Some(l) if l.is_loop => "loop",
                Some(_) => "clean",
                None => "-",
            };
            writeln!(w, "{} {label}", s.id)?;
        }
        Ok(())
    }
}

/// A report that cannot be drawn.
struct Broken;

impl Output for Broken {
    fn name(&self) -> &str {
        "broken.html"
    }
    fn kind(&self) -> Kind {
        Kind::Report
    }
    fn cost(&self) -> u32 {
        1
    }
    fn render(&self, _: &SweepResult, w: &mut (dyn Write + Send)) -> std::io::Result<()> {
        w.write_all(b"<html>half")?;
        Err(std::io::Error::other("the chart would not draw"))
    }
}

fn run(dir: &Path, list: &Outputs) -> (i32, String) {
    let mut err = Vec::new();
    let code = report_outputs(dir, list, &mut err).unwrap_or_else(|e| e.exit_code());
    (code, String::from_utf8(err).unwrap())
}

#[test]
fn a_fifth_output_needs_only_its_file_and_a_place_in_the_list() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    sweep(d.path(), &out, &[]);
    let before = snapshot(&out);
    let list = Outputs::standard(&OutputOptions::default()).with(Box::new(SessionsTxt));

    // Written with the rest, staged and committed as one set; the others
    // are re-rendered from summary.json to the same bytes.
    let (code, err) = run(&out, &list);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!("wrote {}", out.join("sessions.txt").display())),
        "{err}"
    );
    let after = snapshot(&out);
    let text = String::from_utf8(
        after
            .iter()
            .find(|(n, _)| n == "sessions.txt")
            .unwrap()
            .1
            .clone(),
    )
    .unwrap();
    assert!(
        text.contains(" loop\n") && text.contains(" clean\n"),
        "{text}"
    );
    let rest: Vec<_> = after
        .into_iter()
        .filter(|(n, _)| n != "sessions.txt")
        .collect();
    assert_eq!(rest, before, "report DIR re-renders the same bytes");

    // The guard covers it: a link from it to the summary.json read is refused.
    #[cfg(unix)]
    {
        let link = out.join("sessions.txt");
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(out.join("summary.json"), &link).unwrap();
        let (code, err) = run(&out, &list);
        assert_eq!(code, 2, "{err}");
        std::fs::remove_file(&link).unwrap();
        assert_eq!(snapshot(&out), before, "nothing written");
    }

    // A report that fails: exit 3, named as its target, nothing replaced.
    std::fs::write(out.join("sweep.csv"), "old").unwrap();
    let before = snapshot(&out);
    let (code, err) = run(&out, &list.with(Box::new(Broken)));
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains(&format!(
            "failed to write {}: the chart would not draw",
            out.join("broken.html").display()
        )),
        "{err}"
    );
    assert!(err.contains("nothing was replaced"), "{err}");
    assert_eq!(snapshot(&out), before);
    let leftovers: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".looptune"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn report_dir_rewrites_every_output_and_parquet_only_when_asked() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    sweep(d.path(), &out, &[]);
    let names: Vec<String> = snapshot(&out).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "detections.csv",
            "groups.csv",
            "report.html",
            "summary.json",
            "sweep.csv"
        ]
    );
    let before = snapshot(&out);
    for f in ["sweep.csv", "groups.csv", "detections.csv", "report.html"] {
        std::fs::remove_file(out.join(f)).unwrap();
    }
    looptune().arg("report").arg(&out).assert().success();
    assert_eq!(snapshot(&out), before);
    looptune()
        .arg("report")
        .arg(&out)
        .arg("--parquet")
        .assert()
        .success();
    let added: Vec<String> = snapshot(&out)
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| n.ends_with(".parquet"))
        .collect();
    assert_eq!(
        added,
        ["detections.parquet", "groups.parquet", "sweep.parquet"]
    );
}

/// A Parquet file's columns (name, type), its rows as the CSV would write
/// each cell, and its number of row groups: text and `sweep.csv`'s parameter
/// values through the CSV's spreadsheet guard, scores at the CSV's
/// precision, nulls as empty cells.
fn parquet_rows(path: &Path) -> (Vec<(String, String)>, Vec<Vec<String>>, usize) {
    let params_guarded = path.file_name().unwrap() == "sweep.parquet";
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};
    use arrow_array::Array;
    use arrow_schema::DataType;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let scores = looptune::score::metrics::SCORE_NAMES;
    let file = std::fs::File::open(path).unwrap();
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
    let meta = builder.metadata().clone();
    for rg in meta.row_groups() {
        for c in rg.columns() {
            assert_eq!(
                c.compression(),
                parquet::basic::Compression::ZSTD(Default::default()),
                "{}",
                path.display()
            );
        }
    }
    let schema = builder.schema().clone();
    let columns: Vec<(String, String)> = schema
        .fields()
        .iter()
        .map(|f| (f.name().clone(), f.data_type().to_string()))
        .collect();
    let mut rows = Vec::new();
    for batch in builder.build().unwrap() {
        let batch = batch.unwrap();
        for i in 0..batch.num_rows() {
            let mut row = Vec::new();
            for (c, f) in batch.columns().iter().zip(schema.fields()) {
                let is_score = scores.contains(&f.name().as_str());
                let cell = if c.is_null(i) {
                    String::new()
                } else {
                    match f.data_type() {
                        DataType::Utf8 => c.as_string::<i32>().value(i).to_string(),
                        DataType::Int64 => c.as_primitive::<Int64Type>().value(i).to_string(),
                        DataType::Boolean => c.as_boolean().value(i).to_string(),
                        DataType::Float64 if is_score => looptune_core::util::number::fixed(
                            c.as_primitive::<Float64Type>().value(i),
                        ),
                        DataType::Float64 => c.as_primitive::<Float64Type>().value(i).to_string(),
                        t => panic!("{}: unexpected type {t}", f.name()),
                    }
                };
                let guarded = f.data_type() == &DataType::Utf8 || (params_guarded && !is_score);
                row.push(if !guarded {
                    cell
                } else {
                    looptune_core::util::escape::safe_cell(&cell).into_owned()
                });
            }
            rows.push(row);
        }
    }
    (columns, rows, meta.num_row_groups())
}

fn csv_rows(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_path(path).unwrap();
    let header = r.headers().unwrap().iter().map(String::from).collect();
    let rows = r
        .records()
        .map(|rec| rec.unwrap().iter().map(String::from).collect())
        .collect();
    (header, rows)
}

#[test]
fn parquet_files_hold_the_csvs_rows_and_values() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    // The fixtures under the default grid (every family, stock profiles, a union).
    looptune()
        .current_dir(root())
        .args(["sweep", "fixtures", "--labels", "fixtures/labels.csv"])
        .args(["--quiet", "--combine", "2", "--parquet", "--out"])
        .arg(&out)
        .assert()
        .success();
    let mut typed: Vec<(String, String)> = Vec::new();
    for name in ["sweep", "groups", "detections"] {
        let (header, csv) = csv_rows(&out.join(format!("{name}.csv")));
        let parquet: PathBuf = out.join(format!("{name}.parquet"));
        let (columns, rows, groups) = parquet_rows(&parquet);
        let names: Vec<&String> = columns.iter().map(|(n, _)| n).collect();
        assert_eq!(names, header.iter().collect::<Vec<_>>(), "{name}");
        assert!(!csv.is_empty() && groups >= 1, "{name}");
        assert_eq!(rows.len(), csv.len(), "{name}");
        for (i, (p, c)) in rows.iter().zip(&csv).enumerate() {
            assert_eq!(p, c, "{name} row {i}");
        }
        typed.extend(columns.into_iter().map(|(n, t)| (format!("{name}.{n}"), t)));
    }
    let type_of = |c: &str| typed.iter().find(|(n, _)| n == c).unwrap().1.clone();
    for (c, t) in [
        ("sweep.config", "Utf8"),
        ("sweep.recall", "Float64"),
        ("sweep.false_positives", "Int64"),
        ("sweep.tool_call_threshold", "Int64"),
        ("sweep.policy", "Utf8"),
        ("sweep.recommended", "Boolean"),
        ("groups.fp_rate", "Float64"),
        ("detections.turn", "Int64"),
        ("detections.turns_to_detection", "Int64"),
        ("detections.session", "Utf8"),
    ] {
        assert_eq!(type_of(c), t, "{c}");
    }
}

/// Cells that need quoting (a session id with a comma and a quote, a
/// detail with quotes and a comma, a file name with a comma) and cells that do not
/// sit side by side in detections.csv: the writer keeps only the cells that
/// differ from their plain fields and writes the others from the
/// detection again; the CSV must read back as the Parquet file's values
/// either way.
#[test]
fn detections_csv_quotes_the_cells_that_need_it_and_only_them() {
    let d = tempfile::tempdir().unwrap();
    let call = |session: &str, arg: &str| {
        let rec = serde_json::json!({"session": session, "type": "tool_call", "name": "run", "args": {"cmd": arg}});
        format!("{rec}\n")
    };
    let mut text = String::new();
    for (session, arg) in [
        ("plain-1", "ls"),
        ("odd,\"id\"", "echo \"a,b\"\nnext"),
        ("plain-2", "make test"),
    ] {
        text.push_str(&format!(
            "{{\"session\":\"{}\",\"type\":\"user\",\"text\":\"go\"}}\n",
            session.replace('"', "\\\"")
        ));
        for _ in 0..6 {
            text.push_str(&call(session, arg));
        }
    }
    crate::util::write(d.path(), "=cmd,1.jsonl", &text);
    crate::util::write(
        d.path(),
        "calm.jsonl",
        &text.replace("\"session\":\"", "\"session\":\"calm-"),
    );
    let grid = crate::util::write(
        d.path(),
        "grid.toml",
        "family = \"gemini\"\nstock_profiles = false\n[axes]\ntool_call_threshold = [2, 3, 5]\n",
    );
    let out = d.path().join("out");
    looptune()
        .arg("sweep")
        .arg(d.path().join("=cmd,1.jsonl"))
        .arg(d.path().join("calm.jsonl"))
        .args(["--quiet", "--parquet", "--grid"])
        .arg(&grid)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let (header, csv) = csv_rows(&out.join("detections.csv"));
    let (_, parquet, _) = parquet_rows(&out.join("detections.parquet"));
    assert_eq!(parquet, csv);
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let sessions: std::collections::BTreeSet<&str> =
        csv.iter().map(|r| r[col("session")].as_str()).collect();
    assert!(
        sessions.contains("odd,\"id\"") && sessions.contains("plain-1"),
        "{sessions:?}"
    );
    let odd = csv
        .iter()
        .find(|r| r[col("session")] == "odd,\"id\"")
        .unwrap();
    assert!(odd[col("detail")].contains("\\\"a,b"), "{odd:?}");
    assert!(odd[col("file")].ends_with("=cmd,1.jsonl"), "{odd:?}");
    let raw = std::fs::read_to_string(out.join("detections.csv")).unwrap();
    assert!(raw.contains("\"odd,\"\"id\"\"\""), "quoted once: {raw}");
    let plain = csv
        .iter()
        .find(|r| r[col("session")].starts_with("calm-plain-1"))
        .unwrap();
    let line = raw.lines().find(|l| l.contains(",calm-plain-1,")).unwrap();
    assert_eq!(
        line.split(',').count(),
        header.len(),
        "no cell quoted: {line}"
    );
    assert_eq!(
        plain[col("file")],
        d.path().join("calm.jsonl").display().to_string()
    );
}
