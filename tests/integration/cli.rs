//! The binary as a user and a CI job meet it: errors that name file, line and
//! field with exit code 2, gates with exit code 1, byte-identical output for
//! every `--jobs`, outputs that never overwrite inputs and never carry a
//! spreadsheet formula.

use crate::util::{assert_ok, looptune, root, write};
use predicates::prelude::*;
use std::io::Write;
use std::path::Path;

const LOOP: &str = "{\"type\":\"user\",\"text\":\"go\"}\n{\"type\":\"tool_call\",\"name\":\"t\",\"args\":{\"a\":1}}\n{\"type\":\"tool_call\",\"name\":\"t\",\"args\":{\"a\":1}}\n{\"type\":\"tool_call\",\"name\":\"t\",\"args\":{\"a\":1}}\n{\"type\":\"tool_call\",\"name\":\"t\",\"args\":{\"a\":1}}\n{\"type\":\"tool_call\",\"name\":\"t\",\"args\":{\"a\":1}}\n";

#[test]
fn help_explains_commands_and_exit_codes() {
    looptune()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("sweep").and(predicate::str::contains("Exit codes")));
    looptune()
        .args(["replay", "--help"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("--fail-on-detection").and(predicate::str::contains("strike")),
        );
}

#[test]
fn bad_json_names_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "s.jsonl",
        "{\"type\":\"turn\"}\n{\"type\":\"content\",\n",
    );
    looptune()
        .args(["replay", f.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("s.jsonl:2: not valid JSON"));
}

#[test]
fn wrong_field_type_names_the_field() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "s.jsonl",
        "{\"type\":\"turn\"}\n\n{\"type\":\"tool_call\",\"name\":\"x\",\"args\":\"nope\"}\n",
    );
    looptune()
        .args(["replay", f.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "s.jsonl:3: field `args` must be an object",
        ));
    // --lenient skips and says so
    looptune()
        .args(["replay", "--lenient", f.to_str().unwrap()])
        .assert()
        .success()
        .stderr(predicate::str::contains("skipped"));
}

#[test]
fn truncated_gzip_names_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(LOOP.repeat(50).as_bytes()).unwrap();
    let bytes = enc.finish().unwrap();
    let p = d.path().join("cut.jsonl.gz");
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    looptune()
        .args(["replay", p.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(
            predicate::str::is_match(r"cut\.jsonl\.gz:\d+: gzip stream is damaged or truncated")
                .unwrap(),
        );
}

/// `--require`, `--set`, `--objective` and `--shard` are parsed by clap: a bad
/// value is a usage error (exit 2, today's message inside clap's) before any
/// input is read, so a missing path is never reported.
#[test]
fn bad_values_are_usage_errors_before_reading() {
    for (args, says) in [
        (
            &["replay", "--require", "recall>>x"][..],
            "--require `recall>>x`: `>x` is not a number",
        ),
        (&["replay", "--require", "bogus>1"], "unknown score `bogus`"),
        (
            &["replay", "--require", "recall"],
            "expected SCORE OP NUMBER",
        ),
        (
            &["replay", "--set", "tool_call_threshold"],
            "--set `tool_call_threshold`: expected KEY=VALUE",
        ),
        (
            &["sweep", "--objective", "max-fp=x"],
            "unknown objective `max-fp=x`",
        ),
        (&["sweep", "--shard", "5/4"], "`5/4`: need 1 <= I <= N"),
    ] {
        looptune()
            .args(args)
            .arg("/nonexistent/looptune-input")
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says))
            .stderr(predicate::str::contains("Usage:").or(predicate::str::contains("--help")))
            .stderr(predicate::str::contains("nonexistent").not());
    }
}

#[test]
fn unknown_parameter_is_a_usage_error() {
    looptune()
        .args(["replay", "--set", "tool_call_treshold=3", "fixtures/"])
        .current_dir(root())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("tool_call_treshold"));
    looptune()
        .args(["replay", "--set", "tool_call_threshold=zero", "fixtures/"])
        .current_dir(root())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not an integer"));
}

#[test]
fn replay_output_is_identical_for_every_jobs() {
    let run = |jobs: &str| {
        looptune()
            .args([
                "replay",
                "--all",
                "--format",
                "json",
                "--detector",
                "gemini,blade,cline",
                "--jobs",
                jobs,
            ])
            .arg(root().join("tests/conformance/gemini-edge"))
            .arg(root().join("fixtures"))
            .output()
            .unwrap()
    };
    let one = run("1");
    let four = run("4");
    assert!(one.status.success());
    assert!(!one.stdout.is_empty());
    assert_eq!(one.stdout, four.stdout);
}

/// JSON lines are built in blocks on several threads: past a block's size
/// they still come one per session, in session order, alike for any --jobs.
#[test]
fn replay_json_of_many_sessions_is_in_order_for_every_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    looptune()
        .args(["synth", "--sessions", "2500", "--bytes", "600", "--out"])
        .arg(&corpus)
        .assert()
        .success();
    let run = |jobs: &str| {
        looptune()
            .args(["replay", "--format", "json", "--quiet", "--jobs", jobs])
            .arg(&corpus)
            .output()
            .unwrap()
    };
    let one = run("1");
    assert!(one.status.success());
    let ids: Vec<String> = String::from_utf8(one.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["session"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(ids.len(), 2500);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "sessions in order");
    assert_eq!(one.stdout, run("3").stdout);
}

/// Files are parsed in parallel, but the error reported is the first in
/// reading order, whatever the thread count.
#[test]
fn first_bad_file_in_order_is_reported_for_every_jobs() {
    let d = tempfile::tempdir().unwrap();
    for i in 0..12 {
        let body = if i == 3 || i == 9 {
            "{\"type\":\"content\",\"text\":\"a\"}\n{\"type\":\"content\"}\n".to_string()
        } else {
            "{\"type\":\"content\",\"text\":\"hello\"}\n".repeat(200)
        };
        write(d.path(), &format!("s{i:02}.jsonl"), &body);
    }
    for jobs in ["1", "2", "8"] {
        looptune()
            .args(["replay", "--jobs", jobs])
            .arg(d.path())
            .assert()
            .code(2)
            .stderr(predicate::str::contains(
                "s03.jsonl:2: missing field `text`",
            ))
            .stderr(predicate::str::contains("s09").not());
    }
}

#[test]
fn fail_on_detection_is_a_ci_gate() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "loop.jsonl", LOOP);
    looptune()
        .args(["replay", "--fail-on-detection", f.to_str().unwrap()])
        .assert()
        .code(1);
    let f = write(
        d.path(),
        "calm.jsonl",
        "{\"type\":\"content\",\"text\":\"hello\"}\n",
    );
    looptune()
        .args(["replay", "--fail-on-detection", f.to_str().unwrap()])
        .assert()
        .code(0);
}

fn sweep(out: &Path, jobs: &str) -> std::process::Output {
    looptune()
        .current_dir(root())
        .args([
            "sweep",
            "fixtures/",
            "--labels",
            "fixtures/labels.csv",
            "--quiet",
            "--combine",
            "2",
            "--jobs",
            jobs,
            "--out",
        ])
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn sweep_csv_is_byte_identical_for_every_jobs() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    let ra = sweep(&a, "1");
    let rb = sweep(&b, "2");
    assert!(
        ra.status.code() != Some(2),
        "{}",
        String::from_utf8_lossy(&ra.stderr)
    );
    for f in ["sweep.csv", "detections.csv"] {
        let x = std::fs::read(a.join(f)).unwrap();
        assert!(x.len() > 1000, "{f} has content");
        assert_eq!(x, std::fs::read(b.join(f)).unwrap(), "{f}");
    }
    // The recommendation, its cross-validation, the union and the bootstrap
    // intervals are the same for any --jobs (wall time aside).
    let summary = |dir: &std::path::Path| {
        let mut v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
        v.as_object_mut().unwrap().remove("wall_time_ms");
        v
    };
    let (sa, sb) = (summary(&a), summary(&b));
    assert_eq!(sa, sb);
    assert!(sa["recommendation"]["cross_validation"]["folds"].as_u64() >= Some(2));
    assert_eq!(ra.status.code(), rb.status.code());
    // Results go to stdout, so `sweep ... > out.txt` keeps them.
    let stdout = String::from_utf8_lossy(&ra.stdout);
    assert!(
        stdout.contains("recommended") && stdout.contains("sweep.csv"),
        "{stdout}"
    );
    assert!(stdout.contains("out of sample"), "{stdout}");
}

#[test]
fn invalid_grid_fails_before_any_work() {
    let d = tempfile::tempdir().unwrap();
    let g = write(
        d.path(),
        "g.toml",
        "family = \"gemini\"\n[axes]\ncontent_chunk_size = []\n",
    );
    let out = d.path().join("out");
    looptune()
        .current_dir(root())
        .args([
            "sweep",
            "fixtures/",
            "--grid",
            g.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "axis `content_chunk_size` is empty",
        ));
    assert!(!out.exists(), "nothing written");
}

#[test]
fn printed_default_grid_is_a_valid_grid() {
    let out = looptune()
        .args(["sweep", "--print-default-grid"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let g = looptune::sweep::grid::parse_grid(&text, "printed").unwrap();
    assert!(g.variants.len() > 100);
}

#[test]
fn labels_for_unknown_sessions_are_errors_or_warnings() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "a1.jsonl", LOOP);
    let l = write(
        d.path(),
        "labels.csv",
        "session,label,onset_turn\na1,loop,1\nghost,clean,\n",
    );
    let out = d.path().join("out");
    let base = || {
        let mut c = looptune();
        c.args([
            "sweep",
            f.to_str().unwrap(),
            "--labels",
            l.to_str().unwrap(),
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]);
        c
    };
    // A labels file may run ahead of the logs: a warning, an error with --strict-labels.
    base()
        .assert()
        .code(0)
        .stderr(predicate::str::contains("warning").and(predicate::str::contains("`ghost`")));
    base()
        .arg("--strict-labels")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("`ghost`"));
}

#[test]
fn csv_cells_never_carry_a_formula() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "=HYPERLINK(1).jsonl", LOOP);
    let out = d.path().join("out");
    looptune()
        .args([
            "sweep",
            f.to_str().unwrap(),
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let det = std::fs::read_to_string(out.join("detections.csv")).unwrap();
    assert!(det.contains("'=HYPERLINK(1)"), "{det}");
    assert!(!det.contains(",=HYPERLINK"));
}

#[test]
fn gates_fail_with_exit_code_one_and_say_by_how_much() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("o");
    looptune()
        .current_dir(root())
        .args([
            "replay",
            "fixtures/",
            "--labels",
            "fixtures/labels.csv",
            "--require",
            "recall>=0.99",
            "--require",
            "sessions>=1",
        ])
        .arg("--junit")
        .arg(out.with_extension("xml"))
        .arg("--markdown")
        .arg(out.with_extension("md"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("recall>=0.99").and(predicate::str::contains("off by")));
    let junit = std::fs::read_to_string(out.with_extension("xml")).unwrap();
    assert!(junit.contains("<testcase") && junit.contains("<failure"));
    assert!(!junit.contains("<script>"), "payloads are escaped in JUnit");
    let md = std::fs::read_to_string(out.with_extension("md")).unwrap();
    assert!(md.contains("| recall |"));
}

#[test]
fn import_never_overwrites_an_input_and_round_trips() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "s.jsonl", LOOP);
    looptune()
        .args(["import", f.to_str().unwrap(), "-o", f.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("refusing to overwrite"));
    assert_eq!(std::fs::read_to_string(&f).unwrap(), LOOP);
    let out = d.path().join("all.jsonl");
    looptune()
        .current_dir(root())
        .args([
            "import",
            "fixtures/",
            "tests/fixtures/import/goose-session.jsonl",
            "-o",
            out.to_str().unwrap(),
        ])
        .assert()
        .success();
    let a = looptune()
        .arg("replay")
        .arg(&out)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let b = looptune()
        .current_dir(root())
        .args([
            "replay",
            "fixtures/",
            "tests/fixtures/import/goose-session.jsonl",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(a.status.success() && b.status.success());
    let sessions = |o: &[u8]| String::from_utf8_lossy(o).lines().count();
    assert_eq!(sessions(&a.stdout), sessions(&b.stdout));
}

#[test]
fn sweep_rows_equal_replay_with_the_same_parameters() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("s");
    sweep(&out, "2");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let detections = std::fs::read_to_string(out.join("detections.csv")).unwrap();
    let configs = summary["grid"]["configs"].as_array().unwrap();
    // A spread of configurations: stock profiles of several families and swept ones.
    let picked: Vec<&serde_json::Value> = configs.iter().step_by(configs.len() / 12).collect();
    assert!(picked.len() >= 10);
    for cfg in picked {
        let id = cfg["id"].as_str().unwrap();
        let mut cmd = looptune();
        cmd.current_dir(root())
            .args(["replay", "fixtures/", "--format", "json", "--profile"])
            .arg(cfg["profile"].as_str().unwrap());
        for (k, v) in cfg["overrides"].as_object().unwrap() {
            let v = v.as_str().unwrap().replace(';', ",");
            cmd.arg("--set").arg(format!("{k}={v}"));
        }
        let o = cmd.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let mut from_replay: Vec<String> = String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .filter_map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let d = v["detections"].as_array().unwrap().first()?.clone();
                Some(format!(
                    "{},{},{},{}",
                    v["session"].as_str().unwrap(),
                    d["turn"],
                    d["event"],
                    d["kind"].as_str().unwrap()
                ))
            })
            .collect();
        let mut from_sweep: Vec<String> = detections
            .lines()
            .filter(|l| l.starts_with(&format!("{id},")))
            .map(|l| l.split(',').skip(1).take(4).collect::<Vec<_>>().join(","))
            .collect();
        from_replay.sort();
        from_sweep.sort();
        assert_eq!(from_replay, from_sweep, "config {} ({})", id, cfg["label"]);
    }
}

#[test]
fn stdin_is_read_with_dash_and_named_stdin() {
    let out = looptune()
        .args(["replay", "--format", "json", "-"])
        .write_stdin(LOOP)
        .output()
        .unwrap();
    assert!(out.status.success());
    let line = String::from_utf8(out.stdout).unwrap();
    assert!(line.starts_with(r#"{"session":"stdin","turns":1,"events":6,"detections":[{"detector":"gemini","kind":"tool_call","turn":1,"event":6"#), "{line}");
}

#[test]
fn sweep_without_labels_writes_outputs_but_recommends_nothing() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    let r = looptune()
        .current_dir(root())
        .args(["sweep", "fixtures/sessions", "--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let stdout = String::from_utf8_lossy(&r.stdout);
    assert!(
        stdout.contains("no recommendation: no labelled sessions"),
        "{stdout}"
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert!(summary["recommendation"].is_null());
    assert!(summary["recommendation_reason"]
        .as_str()
        .unwrap()
        .contains("no labelled sessions"));
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    assert!(
        !csv.lines().skip(1).any(|l| l.ends_with(",true")),
        "nothing recommended"
    );
    // A gate on a label-based score cannot mean anything: exit 2 with the reason.
    let g = looptune()
        .current_dir(root())
        .args([
            "sweep",
            "fixtures/sessions",
            "--quiet",
            "--require",
            "recall>=0.5",
            "--out",
        ])
        .arg(d.path().join("out2"))
        .output()
        .unwrap();
    assert_eq!(g.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&g.stderr).contains("needs labels"));
}

/// The rows of a `sweep.csv` as header -> cell maps.
fn csv_rows(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    let h = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            h.iter()
                .zip(rec.iter())
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn recommendation_stays_in_the_baselines_family_with_intervals_and_a_union_row() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    let r = looptune()
        .current_dir(root())
        .args([
            "sweep",
            "fixtures/sessions",
            "--labels",
            "fixtures/labels.csv",
            "--quiet",
            "--baseline",
            "opencode",
            "--combine",
            "3",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let rows = csv_rows(&out.join("sweep.csv"));
    let rec: Vec<_> = rows.iter().filter(|r| r["recommended"] == "true").collect();
    assert_eq!(rec.len(), 1);
    assert_eq!(rec[0]["family"], "opencode", "in the baseline's family");
    let base = rows
        .iter()
        .find(|r| r["label"] == "opencode" && r["stock"] == "true")
        .unwrap();
    let fp = |r: &std::collections::HashMap<String, String>| {
        r["false_positives"].parse::<u32>().unwrap()
    };
    assert!(
        fp(rec[0]) <= fp(base),
        "no more false positives than the baseline"
    );
    // Wilson intervals bracket every recall.
    for row in &rows {
        let (lo, x, hi): (f64, f64, f64) = (
            row["recall_lo"].parse().unwrap(),
            row["recall"].parse().unwrap(),
            row["recall_hi"].parse().unwrap(),
        );
        assert!(lo <= x && x <= hi, "{row:?}");
        assert!(row["fp_rate"].parse::<f64>().is_ok());
    }
    // The union is its own row, of family `any`, labelled `A | B`.
    let union: Vec<_> = rows.iter().filter(|r| r["family"] == "any").collect();
    assert_eq!(union.len(), 1);
    assert!(union[0]["label"].contains(" | "));
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        summary["recommendation"]["config"],
        rec[0]["config"].as_str()
    );
    assert_eq!(summary["union"]["config"], union[0]["config"].as_str());
    let cv = &summary["recommendation"]["cross_validation"];
    let chosen: u64 = cv["chosen"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(Some(chosen), cv["folds"].as_u64(), "every fold chose once");
    // Every other family's best is listed, never the baseline's own family.
    let fams: Vec<&str> = summary["family_best"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["family"].as_str().unwrap())
        .collect();
    assert!(
        fams.contains(&"gemini") && !fams.contains(&"opencode"),
        "{fams:?}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("data-chart=\"intervals\""));
    assert!(html.contains("out of sample"));
}

/// Run a sweep of the fixtures into `out` with extra arguments.
fn sweep_with(out: &Path, extra: &[&str]) -> std::process::Output {
    sweep_labelled(out, &root().join("fixtures/labels.csv"), extra)
}

/// [`sweep_with`] with another labels file.
fn sweep_labelled(out: &Path, labels: &Path, extra: &[&str]) -> std::process::Output {
    looptune()
        .current_dir(root())
        .args([
            "sweep",
            "fixtures/sessions",
            "--quiet",
            "--combine",
            "2",
            "--labels",
        ])
        .arg(labels)
        .args(extra)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

/// `looptune merge PARTS --out OUT`, which must succeed.
fn merge_into(parts: &[std::path::PathBuf], out: &Path) {
    let m = looptune()
        .arg("merge")
        .args(parts)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    assert_ok(&m);
}

/// summary.json without its wall time.
fn summary_without_time(dir: &Path) -> serde_json::Value {
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("wall_time_ms");
    v
}

/// One big canonical file (`import` of every fixture) read in two passes of
/// batches gives the outputs of reading it whole, in one run and in shards.
#[test]
fn a_large_file_read_in_batches_gives_the_same_outputs() {
    let d = tempfile::tempdir().unwrap();
    let one_file = d.path().join("all.jsonl");
    let r = looptune()
        .current_dir(root())
        .args(["import", "fixtures/sessions", "--output"])
        .arg(&one_file)
        .output()
        .unwrap();
    assert_ok(&r);
    let sweep = |out: &Path, extra: &[&str]| {
        let r = looptune()
            .current_dir(root())
            .arg("sweep")
            .arg(&one_file)
            .args(["--quiet", "--labels", "fixtures/labels.csv"])
            .args(extra)
            .arg("--out")
            .arg(out)
            .output()
            .unwrap();
        assert_ok(&r);
    };
    let whole = d.path().join("whole");
    sweep(&whole, &[]);
    let batches = d.path().join("batches");
    sweep(&batches, &["--stream-above", "0"]);
    let mut parts = Vec::new();
    for i in 1..=4 {
        let p = d.path().join(format!("part{i}"));
        sweep(&p, &["--stream-above", "0", "--shard", &format!("{i}/4")]);
        parts.push(p);
    }
    let merged = d.path().join("merged");
    merge_into(&parts, &merged);
    for dir in [&batches, &merged] {
        for f in ["sweep.csv", "detections.csv"] {
            assert_eq!(
                std::fs::read(whole.join(f)).unwrap(),
                std::fs::read(dir.join(f)).unwrap(),
                "{f}"
            );
        }
        assert_eq!(summary_without_time(&whole), summary_without_time(dir));
    }
    // Replay's per-session lines too.
    let replay = |extra: &[&str]| {
        looptune()
            .arg("replay")
            .arg(&one_file)
            .args([
                "--format",
                "json",
                "--all",
                "--detector",
                "gemini,opencode,blade",
            ])
            .args(extra)
            .output()
            .unwrap()
            .stdout
    };
    assert_eq!(replay(&[]), replay(&["--stream-above", "0", "--jobs", "1"]));
}

#[test]
fn four_shards_and_a_merge_give_the_bytes_of_one_run() {
    let d = tempfile::tempdir().unwrap();
    let one = d.path().join("one");
    assert_eq!(sweep_with(&one, &[]).status.code(), Some(0));
    let mut parts = Vec::new();
    let mut sessions = 0;
    for i in 1..=4 {
        let p = d.path().join(format!("part{i}"));
        let r = sweep_with(&p, &["--shard", &format!("{i}/4")]);
        assert_eq!(
            r.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&r.stderr)
        );
        sessions += summary_without_time(&p)["sessions"]
            .as_array()
            .unwrap()
            .len();
        parts.push(p);
    }
    assert_eq!(sessions, 16, "every session in exactly one shard");
    let merged = d.path().join("merged");
    merge_into(&parts, &merged);
    for f in ["sweep.csv", "detections.csv"] {
        assert_eq!(
            std::fs::read(one.join(f)).unwrap(),
            std::fs::read(merged.join(f)).unwrap(),
            "{f}"
        );
    }
    assert_eq!(summary_without_time(&one), summary_without_time(&merged));
    // A missing or repeated part is refused.
    let r = looptune()
        .arg("merge")
        .args(&parts[..3])
        .arg("--out")
        .arg(d.path().join("x"))
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("shard 4/4 missing"));
    let r = looptune()
        .arg("merge")
        .args(&parts)
        .arg(&parts[0])
        .arg("--out")
        .arg(d.path().join("y"))
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    // `report DIR` rebuilds the page from summary.json alone.
    std::fs::remove_file(merged.join("sweep.csv")).unwrap();
    let before = std::fs::read_to_string(merged.join("report.html")).unwrap();
    std::fs::remove_file(merged.join("report.html")).unwrap();
    let r = looptune().arg("report").arg(&merged).output().unwrap();
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    assert_eq!(
        before,
        std::fs::read_to_string(merged.join("report.html")).unwrap()
    );
}

/// A result whose hits name a session it does not list is refused with
/// the file named, not a panic in a later reader.
#[test]
fn a_result_whose_hits_name_a_missing_session_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("run");
    assert_ok(&sweep_with(&out, &[]));
    let file = out.join("summary.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(v["schema_version"], 4);
    let sessions = v["sessions"].as_array_mut().unwrap();
    let n = sessions.len();
    sessions.pop();
    std::fs::write(&file, serde_json::to_vec(&v).unwrap()).unwrap();
    let r = looptune().arg("report").arg(&out).output().unwrap();
    assert_eq!(r.status.code(), Some(2));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("summary.json"), "{err}");
    assert!(
        err.contains(&format!("but the result lists {} sessions", n - 1)),
        "{err}"
    );
}

/// A result written with schema 3 (last night's baseline, before the
/// upgrade) still renders, diffs against tonight's schema-4 run with no
/// change, and reads back to the same outcomes.
#[test]
fn last_nights_schema_3_result_still_loads_diffs_and_merges() {
    let d = tempfile::tempdir().unwrap();
    let base = d.path().join("base");
    std::fs::create_dir(&base).unwrap();
    let old = root().join("tests/fixtures/schema3/summary.json");
    std::fs::copy(&old, base.join("summary.json")).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&old).unwrap()).unwrap();
    assert_eq!(v["schema_version"], 3);
    let r = looptune().arg("report").arg(&base).output().unwrap();
    assert_ok(&r);
    assert!(base.join("report.html").is_file());
    let new = d.path().join("new");
    let r = looptune()
        .current_dir(root())
        .args([
            "sweep",
            "fixtures/sessions",
            "--quiet",
            "--labels",
            "fixtures/labels.csv",
            "--grid",
            "tests/fixtures/schema3/grid.toml",
            "--out",
        ])
        .arg(&new)
        .output()
        .unwrap();
    assert_ok(&r);
    let r = looptune()
        .args(["diff", "--format", "json"])
        .arg(&base)
        .arg(&new)
        .args(["--require", "changed_verdicts==0"])
        .output()
        .unwrap();
    assert_ok(&r);
    assert!(
        !String::from_utf8_lossy(&r.stdout).contains("\"session\""),
        "{}",
        String::from_utf8_lossy(&r.stdout)
    );
    // Read back and written as schema 4: the same outcomes as tonight's.
    let merged = d.path().join("merged");
    merge_into(&[base], &merged);
    let (m, n) = (summary_without_time(&merged), summary_without_time(&new));
    assert_eq!(m["schema_version"], 4);
    assert_eq!(m["outcomes"], n["outcomes"]);
}

#[test]
fn diff_lists_exactly_the_changed_verdicts_and_its_gates_trip() {
    let d = tempfile::tempdir().unwrap();
    let base = d.path().join("base");
    assert_eq!(sweep_with(&base, &[]).status.code(), Some(0));
    // Tonight a clean session is relabelled a loop: every configuration's
    // verdict on it changes (fp -> tp/early, tn -> fn), nothing else does.
    let labels = std::fs::read_to_string(root().join("fixtures/labels.csv")).unwrap();
    let flipped = labels.replace(
        "clean_retry_then_fix,clean,,",
        "clean_retry_then_fix,loop,1,",
    );
    assert_ne!(labels, flipped);
    let lp = write(d.path(), "labels.csv", &flipped);
    let new = d.path().join("new");
    let r = sweep_labelled(&new, &lp, &[]);
    assert_eq!(r.status.code(), Some(0));
    let out = looptune()
        .args(["diff", "--format", "json"])
        .arg(&base)
        .arg(&new)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let changes: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let configs = csv_rows(&base.join("sweep.csv"));
    let fired: Vec<String> = csv_rows(&base.join("detections.csv"))
        .into_iter()
        .filter(|r| r["session"] == "clean_retry_then_fix")
        .map(|r| r["config"].clone())
        .collect();
    // One change per configuration (the union row is derived, not a grid configuration).
    let grid_configs = configs.iter().filter(|r| r["family"] != "any").count();
    assert_eq!(changes.len(), grid_configs, "one change per configuration");
    for c in &changes {
        assert_eq!(c["session"], "clean_retry_then_fix");
        // The label's doing, not the detector's.
        assert_eq!(c["cause"], "relabelled");
        let was_fp = fired.contains(&c["config"].as_str().unwrap().to_string());
        assert_eq!(c["base"], if was_fp { "fp" } else { "tn" });
        assert!(if was_fp {
            c["new"] == "tp" || c["new"] == "early"
        } else {
            c["new"] == "fn"
        });
    }
    // A relabelled session is no regression: the diff gates count only
    // sessions both runs have, labelled alike.
    let gate = looptune()
        .args([
            "diff",
            "--require",
            "new_missed_loops==0",
            "--require",
            "new_false_positives==0",
        ])
        .arg(&base)
        .arg(&new)
        .output()
        .unwrap();
    assert_eq!(gate.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&gate.stdout).contains(&format!(
        "{grid_configs} configurations changed only through the sessions (0 added, 0 removed, 1 relabelled)"
    )));
    // The same comparison from the sweep itself.
    let again = d.path().join("again");
    let base_arg = base.to_str().unwrap();
    let r = sweep_labelled(
        &again,
        &lp,
        &["--baseline", base_arg, "--require", "changed_verdicts==0"],
    );
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(String::from_utf8_lossy(&r.stdout).contains("clean_retry_then_fix"));
    // A diff gate without an earlier run is a usage error.
    let r = sweep_with(&d.path().join("x"), &["--require", "new_missed_loops==0"]);
    assert_eq!(r.status.code(), Some(2));
}

#[test]
fn detections_csv_names_the_file_and_line_that_holds_each_detection() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    assert_eq!(sweep_with(&out, &[]).status.code(), Some(0));
    let rows = csv_rows(&out.join("detections.csv"));
    // Gemini CLI's tool-call check fires on the call itself.
    let gemini: Vec<String> = csv_rows(&out.join("sweep.csv"))
        .into_iter()
        .filter(|r| r["family"] == "gemini")
        .map(|r| r["config"].clone())
        .collect();
    let mut checked = 0;
    for r in &rows {
        assert!(!r["file"].is_empty(), "{r:?}");
        if r["kind"] != "tool_call" || r["line"].is_empty() || !gemini.contains(&r["config"]) {
            continue;
        }
        let text = std::fs::read_to_string(root().join(&r["file"])).unwrap();
        let line: usize = r["line"].parse().unwrap();
        let held = text.lines().nth(line - 1).unwrap();
        assert!(
            held.contains("\"tool_call\""),
            "{}:{line}: {held}",
            r["file"]
        );
        checked += 1;
    }
    assert!(checked > 100, "{checked} tool-call detections checked");
}

/// A session spread over two files is read as one: the sweep's list of the
/// sessions where the stock profiles disagree most is the same as when each
/// session is one file (a part read before its whole used to take a place).
#[test]
fn sessions_spread_over_files_give_the_same_disagreements() {
    let d = tempfile::tempdir().unwrap();
    let split = d.path().join("split");
    std::fs::create_dir(&split).unwrap();
    for entry in std::fs::read_dir(root().join("fixtures/sessions")).unwrap() {
        let path = entry.unwrap().path();
        let id = path.file_stem().unwrap().to_str().unwrap().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let half = lines.len() / 2;
        for (part, range) in [("a", &lines[..half]), ("b", &lines[half..])] {
            let body: String = range
                .iter()
                .map(|l| format!("{{\"session\":\"{id}\",{}\n", &l[1..]))
                .collect();
            write(&split, &format!("{id}.{part}.jsonl"), &body);
        }
    }
    let disagreements = |input: &Path, out: &Path| -> serde_json::Value {
        looptune()
            .current_dir(root())
            .args([
                "sweep",
                "--labels",
                "fixtures/labels.csv",
                "--quiet",
                "--out",
            ])
            .arg(out)
            .arg(input)
            .assert()
            .success();
        let summary: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
        // Places name the files, which differ; the rest must not.
        fn strip(v: &mut serde_json::Value) {
            match v {
                serde_json::Value::Object(m) => {
                    m.retain(|k, _| !matches!(k.as_str(), "file" | "line" | "pointer" | "place"));
                    m.values_mut().for_each(strip);
                }
                serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
                _ => {}
            }
        }
        let mut d = summary["disagreements"].clone();
        strip(&mut d);
        d
    };
    let whole = disagreements(&root().join("fixtures/sessions"), &d.path().join("whole"));
    let parts = disagreements(&split, &d.path().join("parts"));
    let ids = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .map(|d| d["session"].to_string())
            .collect()
    };
    assert!(ids(&whole).len() > 2, "{whole}");
    assert!(
        whole == parts,
        "the disagreements differ: {:?} against {:?}",
        ids(&whole),
        ids(&parts)
    );
}

/// The baseline is found once, before any work: a `--baseline` the grid has
/// no stock configuration of is the error (exit 2) even when the labels file
/// is missing too, and nothing is written.
#[test]
fn a_baseline_missing_from_the_grid_is_the_first_error_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = looptune()
        .current_dir(root())
        .args([
            "sweep",
            "fixtures/sessions",
            "--grid",
            "tests/fixtures/schema3/grid.toml",
            "--baseline",
            "opencode",
            "--labels",
            "no-such-labels.csv",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--baseline `opencode`: the grid has no stock configuration of this profile"),
        "{err}"
    );
    assert!(!out.exists());
}
