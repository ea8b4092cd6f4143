//! The commands, wired from the library's steps: read -> replay -> score -> write.
//! The binary calls these; tests call them too.

use crate::detect::{self, DetectorConfig, ParamValue};
use crate::error::{Error, Result, EXIT_GATE, EXIT_OK};
use crate::input::{read_corpus, read_corpus_with, ReadOptions};
use crate::replay::{replay, ReplayOptions};
use std::io::Write;
use std::path::PathBuf;

/// Which detector configurations a command runs.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Families at their default profiles.
    pub families: Vec<String>,
    /// Named profiles.
    pub profiles: Vec<String>,
    /// `KEY=VALUE` or `FAMILY.KEY=VALUE` overrides.
    pub sets: Vec<String>,
}

impl Selection {
    /// Resolve into configurations: each profile, then each family not already
    /// covered by a profile at its default; gemini-latest when nothing is named.
    pub fn resolve(&self) -> Result<Vec<DetectorConfig>> {
        let mut named: Vec<(Option<String>, Option<String>)> = Vec::new();
        let mut covered: Vec<&'static str> = Vec::new();
        for p in &self.profiles {
            let fam = detect::family_of_profile(p)?;
            covered.push(fam.name());
            named.push((Some(fam.name().to_string()), Some(p.clone())));
        }
        for f in &self.families {
            let fam = detect::family(f)?;
            if !covered.contains(&fam.name()) {
                covered.push(fam.name());
                named.push((Some(fam.name().to_string()), None));
            }
        }
        if named.is_empty() {
            named.push((None, Some("gemini-latest".to_string())));
        }
        // Split overrides by family; a bare key applies to every family that has it.
        let mut used = vec![false; self.sets.len()];
        let mut configs = Vec::new();
        for (fam, prof) in &named {
            let family = match prof {
                Some(p) => detect::family_of_profile(p)?,
                None => detect::family(fam.as_deref().unwrap_or("gemini"))?,
            };
            let specs = family.params();
            let mut overrides: Vec<(String, ParamValue)> = Vec::new();
            for (i, s) in self.sets.iter().enumerate() {
                let (k, v) = s
                    .split_once('=')
                    .ok_or_else(|| Error::Usage(format!("--set `{s}`: expected KEY=VALUE")))?;
                let (target, key) = match k.split_once('.') {
                    Some((f, k)) => (Some(f.trim()), k.trim()),
                    None => (None, k.trim()),
                };
                if target.is_some_and(|t| t != family.name()) {
                    continue;
                }
                match specs.iter().find(|p| p.name == key) {
                    Some(spec) => {
                        overrides.push((key.to_string(), spec.parse(v)?));
                        used[i] = true;
                    }
                    None if target.is_some() => {
                        return Err(Error::Config(format!(
                            "--set `{s}`: unknown parameter `{key}` for family `{}` (see `looptune detectors --family {}`)",
                            family.name(),
                            family.name()
                        )))
                    }
                    None => {}
                }
            }
            configs.push(DetectorConfig::resolve(
                Some(family.name()),
                prof.as_deref(),
                &overrides,
            )?);
        }
        if let Some(i) = used.iter().position(|u| !u) {
            let key = self.sets[i].split('=').next().unwrap_or("");
            return Err(Error::Config(format!(
                "--set `{}`: unknown parameter `{key}` for the selected detectors (see `looptune detectors`)",
                self.sets[i]
            )));
        }
        Ok(configs)
    }
}

/// `looptune replay`.
#[derive(Debug, Clone)]
pub struct ReplayRequest {
    /// Inputs.
    pub paths: Vec<PathBuf>,
    /// How to read them.
    pub read: ReadOptions,
    /// Configurations.
    pub selection: Selection,
    /// Every detection, not only the first.
    pub all: bool,
    /// JSON lines instead of a table.
    pub json: bool,
    /// Worker threads.
    pub jobs: usize,
    /// Exit 1 when anything fires.
    pub fail_on_detection: bool,
    /// No progress bar.
    pub quiet: bool,
    /// Labels file (for scores, JUnit and gates).
    pub labels: Option<PathBuf>,
    /// Configuration gates and JUnit evaluate (profile name; default the first).
    pub config: Option<String>,
    /// CI outputs.
    pub ci: CiArgs,
}

/// Run `looptune replay`; writes to `out`, returns the exit code.
pub fn replay_command(req: &ReplayRequest, out: &mut dyn Write) -> Result<i32> {
    let configs = req.selection.resolve()?;
    let reading = crate::progress::bytes_for_stderr(req.quiet, "reading");
    let corpus = read_corpus_with(&req.paths, &req.read, reading.as_ref())?;
    reading.finish();
    warn_skipped(&corpus, &mut std::io::stderr());
    let progress = crate::progress::for_stderr(req.quiet, "replaying");
    let result = replay(
        &corpus,
        configs,
        &ReplayOptions {
            jobs: req.jobs,
            all: req.all,
        },
        progress.as_ref(),
    )?;
    progress.finish();
    let io = |e| Error::io("<stdout>", e);
    if req.json {
        crate::report::text::replay_json(&corpus, &result, req.all, out).map_err(io)?;
    } else {
        crate::report::text::replay_table(&corpus, &result, req.all, out).map_err(io)?;
    }
    let fired = result
        .outcomes
        .iter()
        .flatten()
        .any(|o| !o.detections.is_empty());
    let mut code = if req.fail_on_detection && fired {
        EXIT_GATE
    } else {
        EXIT_OK
    };
    let wants_scores = req.labels.is_some()
        || req.ci.markdown.is_some()
        || req.ci.junit.is_some()
        || !req.ci.requires.is_empty();
    if wants_scores {
        let gates: Vec<crate::gates::Gate> = req
            .ci
            .requires
            .iter()
            .map(|g| crate::gates::Gate::parse(g))
            .collect::<Result<_>>()?;
        let labels = crate::labels::resolve(&corpus, req.labels.as_deref(), req.read.lenient)?;
        let scores: Vec<crate::metrics::Scores> = result
            .outcomes
            .iter()
            .map(|o| crate::metrics::score(o, &corpus, &labels))
            .collect();
        let chosen = match &req.config {
            None => 0,
            Some(c) => result
                .configs
                .iter()
                .position(|x| &x.profile == c || x.family == c)
                .ok_or_else(|| {
                    Error::Usage(format!("--config `{c}`: not one of the selected profiles"))
                })?,
        };
        let gate_results: Vec<crate::gates::GateResult> =
            gates.iter().map(|g| g.check(&scores[chosen])).collect();
        let view = crate::report::ci::CiView {
            title: "replay".into(),
            labels: result.configs.iter().map(|c| c.profile.clone()).collect(),
            scores: &scores,
            chosen,
            recommended: None,
            gates: &gate_results,
            corpus: &corpus,
            session_labels: &labels,
            outcomes: &result.outcomes[chosen],
        };
        let mut written = Vec::new();
        let mut err = std::io::stderr();
        let failed = write_ci(&req.ci, &view, &mut written, &mut err);
        let gate_code = finish_gates(&gate_results, failed, &mut err);
        if gate_code != EXIT_OK {
            code = gate_code;
        }
    }
    release((corpus, result));
    Ok(code)
}

/// Set by the binary, which exits as soon as a command returns: the parsed
/// corpus and the replay are then left to the OS instead of being freed piece
/// by piece (millions of strings; a sixth of an end-to-end replay). Library
/// callers keep the default and get ordinary drops.
pub static LEAVE_TO_EXIT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Drop `value`, or leave it to the process exit (see [`LEAVE_TO_EXIT`]).
fn release<T>(value: T) {
    if LEAVE_TO_EXIT.load(std::sync::atomic::Ordering::Relaxed) {
        std::mem::forget(value);
    }
}

/// `looptune import`: native logs to one canonical JSONL file.
pub fn import_command(
    paths: &[PathBuf],
    read: &ReadOptions,
    output: &std::path::Path,
    redact: bool,
    err: &mut dyn Write,
) -> Result<i32> {
    guard_outputs(&[output.to_path_buf()], paths)?;
    let corpus = read_corpus(paths, read)?;
    warn_skipped(&corpus, err);
    let mut buf: Vec<u8> = Vec::new();
    crate::import::write_canonical(&corpus, &mut buf, redact).map_err(|e| Error::io(output, e))?;
    let bytes = if output.extension().is_some_and(|e| e == "gz") {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&buf).map_err(|e| Error::io(output, e))?;
        enc.finish().map_err(|e| Error::io(output, e))?
    } else {
        buf
    };
    crate::report::write_atomic(output, &bytes).map_err(|e| Error::io(output, e))?;
    let whole = corpus.sessions.iter().filter(|s| s.whole_messages).count();
    writeln!(
        err,
        "wrote {} sessions ({} events) to {}{}",
        corpus.sessions.len(),
        corpus.events(),
        output.display(),
        if whole > 0 {
            format!("; {whole} came from whole messages, not stream chunks")
        } else {
            String::new()
        }
    )
    .ok();
    Ok(EXIT_OK)
}

/// One warning per file with skipped lines (count and first reason), and one
/// per skipped file: nothing is dropped silently, and nothing floods the terminal.
fn warn_skipped(corpus: &crate::event::Corpus, err: &mut dyn Write) {
    for f in corpus.files.iter().filter(|f| f.skipped_lines > 0) {
        let first = corpus
            .skipped
            .iter()
            .find(|m| m.starts_with(&format!("{}:", f.path)))
            .map(|m| format!(" (first: {})", &m[f.path.len() + 1..]))
            .unwrap_or_default();
        writeln!(
            err,
            "warning: {}: skipped {} bad lines{first}",
            f.path, f.skipped_lines
        )
        .ok();
    }
    for m in corpus
        .skipped
        .iter()
        .filter(|m| m.contains(": skipped file ("))
    {
        writeln!(err, "warning: {m}").ok();
    }
    if corpus.unreadable > 0 {
        writeln!(
            err,
            "warning: skipped {} unreadable entries of walked folders (--lenient)",
            corpus.unreadable
        )
        .ok();
    }
}

/// `looptune detectors`: families, profiles and parameters with their sources.
pub fn detectors_command(only: Option<&str>, json: bool, out: &mut dyn Write) -> Result<()> {
    let fams = match only {
        Some(f) => vec![detect::family(f)?],
        None => detect::families(),
    };
    crate::report::text::detectors(&fams, json, out).map_err(|e| Error::io("<stdout>", e))
}

/// CI outputs shared by `replay` and `sweep`.
#[derive(Debug, Clone, Default)]
pub struct CiArgs {
    /// Markdown summary file.
    pub markdown: Option<PathBuf>,
    /// JUnit XML file.
    pub junit: Option<PathBuf>,
    /// Gates such as `recall>=0.9`.
    pub requires: Vec<String>,
}

/// `looptune sweep`.
#[derive(Debug, Clone, Default)]
pub struct SweepRequest {
    /// Inputs.
    pub paths: Vec<PathBuf>,
    /// How to read them.
    pub read: ReadOptions,
    /// Grid file (default: the embedded grid).
    pub grid: Option<PathBuf>,
    /// Labels file.
    pub labels: Option<PathBuf>,
    /// Output folder (default `reports/sweep-<grid name>/`).
    pub out: Option<PathBuf>,
    /// Worker threads.
    pub jobs: usize,
    /// Recommendation rule.
    pub objective: String,
    /// Configuration for gates and JUnit (id, label or profile).
    pub config: Option<String>,
    /// CI outputs.
    pub ci: CiArgs,
    /// No progress bar.
    pub quiet: bool,
}

/// Load the grid named by a request, or the embedded default.
pub fn load_grid(path: Option<&std::path::Path>) -> Result<crate::grid::Grid> {
    match path {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| Error::io(p, e))?;
            crate::grid::parse_grid(&text, &p.display().to_string())
        }
        None => crate::grid::default_grid(),
    }
}

/// Refuse to write over anything the user gave us.
fn guard_outputs(outputs: &[PathBuf], inputs: &[PathBuf]) -> Result<()> {
    let canon = |p: &std::path::Path| std::fs::canonicalize(p).ok();
    let mut given: Vec<PathBuf> = Vec::new();
    for i in inputs {
        if let Ok(found) = crate::input::collect_files(std::slice::from_ref(i)) {
            for f in found {
                if let crate::input::Found::Path { path, .. } = f {
                    given.extend(canon(&path));
                }
            }
        }
        given.extend(canon(i));
    }
    for o in outputs {
        if let Some(c) = canon(o) {
            if given.contains(&c) {
                return Err(Error::Usage(format!(
                    "refusing to overwrite {}: it is one of the inputs",
                    o.display()
                )));
            }
        }
    }
    Ok(())
}

/// Run `looptune sweep`; progress and the closing table go to `err`. Returns the exit code.
pub fn sweep_command(req: &SweepRequest, err: &mut dyn Write) -> Result<i32> {
    let started = std::time::Instant::now();
    // Everything that can be checked before work starts is checked first.
    let grid = load_grid(req.grid.as_deref())?;
    let objective = crate::metrics::Objective::parse(&req.objective).map_err(Error::Usage)?;
    let gates: Vec<crate::gates::Gate> = req
        .ci
        .requires
        .iter()
        .map(|g| crate::gates::Gate::parse(g))
        .collect::<Result<_>>()?;
    if let Some(c) = &req.config {
        crate::sweep::find_variant(&grid, c)?;
    }
    let out_dir = req.out.clone().unwrap_or_else(|| {
        PathBuf::from("reports").join(format!("sweep-{}", sanitize(&grid.name)))
    });
    if out_dir.is_file() {
        return Err(Error::Usage(format!(
            "--out {}: is a file, not a folder",
            out_dir.display()
        )));
    }
    let files = [
        out_dir.join("sweep.csv"),
        out_dir.join("detections.csv"),
        out_dir.join("summary.json"),
        out_dir.join("report.html"),
    ];
    let mut outputs: Vec<PathBuf> = files.to_vec();
    outputs.extend(req.ci.markdown.clone());
    outputs.extend(req.ci.junit.clone());
    let mut protected = req.paths.clone();
    protected.extend(req.labels.clone());
    protected.extend(req.grid.clone());
    guard_outputs(&outputs, &protected)?;

    let mut read = req.read.clone();
    read.digests = true;
    let reading = crate::progress::bytes_for_stderr(req.quiet, "reading");
    let corpus = read_corpus_with(&req.paths, &read, reading.as_ref())?;
    reading.finish();
    warn_skipped(&corpus, err);
    let labels = crate::labels::resolve(&corpus, req.labels.as_deref(), req.read.lenient)?;
    for w in &labels.warnings {
        writeln!(err, "warning: {w}").ok();
    }
    let progress = crate::progress::for_stderr(req.quiet, "sweeping");
    let result = crate::sweep::run_sweep(
        &corpus,
        grid,
        labels,
        objective,
        req.config.as_deref(),
        req.jobs,
        progress.as_ref(),
    )?;
    progress.finish();
    let wall = started.elapsed().as_millis();

    std::fs::create_dir_all(&out_dir).map_err(|e| Error::io(&out_dir, e))?;
    let write = |p: &PathBuf, bytes: &[u8]| {
        crate::report::write_atomic(p, bytes).map_err(|e| Error::io(p, e))
    };
    write(&files[0], &crate::report::csv_out::sweep_csv(&result))?;
    write(
        &files[1],
        &crate::report::csv_out::detections_csv(&result, &corpus),
    )?;
    let summary = crate::report::summary::summary_json(&result, &corpus, wall);
    write(
        &files[2],
        &serde_json::to_vec_pretty(&summary).expect("serialisable"),
    )?;
    let mut written = vec![files[0].clone(), files[1].clone(), files[2].clone()];

    let mut report_failed = false;
    match crate::report::html::write_report_dir(&out_dir) {
        Ok(p) => written.push(p),
        Err(e) => {
            report_failed = true;
            writeln!(err, "error: {e}").ok();
        }
    }
    let chosen = &result.scores[result.chosen];
    let gate_results: Vec<crate::gates::GateResult> =
        gates.iter().map(|g| g.check(chosen)).collect();
    let view = crate::report::ci::CiView {
        title: format!("sweep {}", result.grid.name),
        labels: result
            .grid
            .variants
            .iter()
            .map(|v| v.label.clone())
            .collect(),
        scores: &result.scores,
        chosen: result.chosen,
        recommended: result.recommended,
        gates: &gate_results,
        corpus: &corpus,
        session_labels: &result.labels,
        outcomes: &result.replay.outcomes[result.chosen],
    };
    report_failed |= write_ci(&req.ci, &view, &mut written, err);

    print_sweep_table(&result, err);
    writeln!(
        err,
        "{} configurations x {} sessions ({} distinct checks) in {:.1}s",
        result.grid.variants.len(),
        corpus.sessions.len(),
        result.replay.distinct_checks,
        wall as f64 / 1000.0
    )
    .ok();
    writeln!(err, "wrote:").ok();
    for p in &written {
        writeln!(err, "  {}", p.display()).ok();
    }
    let code = finish_gates(&gate_results, report_failed, err);
    release((corpus, result));
    Ok(code)
}

/// Write the Markdown and JUnit outputs; true when one failed.
fn write_ci(
    ci: &CiArgs,
    view: &crate::report::ci::CiView,
    written: &mut Vec<PathBuf>,
    err: &mut dyn Write,
) -> bool {
    let mut failed = false;
    let outputs = [
        (ci.markdown.as_ref(), crate::report::ci::markdown(view)),
        (ci.junit.as_ref(), crate::report::ci::junit(view)),
    ];
    for (path, text) in outputs {
        let Some(p) = path else { continue };
        match crate::report::write_atomic(p, text.as_bytes()) {
            Ok(()) => written.push(p.clone()),
            Err(e) => {
                failed = true;
                writeln!(err, "error: failed to write {}: {e}", p.display()).ok();
            }
        }
    }
    failed
}

/// Print gate results; the exit code (report failure wins over a gate).
fn finish_gates(
    results: &[crate::gates::GateResult],
    report_failed: bool,
    err: &mut dyn Write,
) -> i32 {
    for g in results {
        let mark = if g.passed { "ok  " } else { "FAIL" };
        writeln!(err, "gate {mark} {}", g.describe()).ok();
    }
    if report_failed {
        crate::error::EXIT_REPORT
    } else if results.iter().any(|g| !g.passed) {
        EXIT_GATE
    } else {
        EXIT_OK
    }
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The closing table: stock profile vs recommended, side by side.
fn print_sweep_table(r: &crate::sweep::SweepResult, err: &mut dyn Write) {
    let stock = r.stock_base;
    let rec = r.recommended;
    let rows = [
        ("recall", "recall"),
        ("precision", "precision"),
        ("false_positives", "false positives"),
        ("missed_loops", "missed loops"),
        ("ttd_median", "median turns to detection"),
        ("ttd_p90", "p90 turns to detection"),
        ("tokens_saved_on_loops", "tokens after stop (loops)"),
        ("tokens_lost_on_clean", "tokens after stop (clean)"),
    ];
    let val = |i: usize, n: &str| {
        r.scores[i]
            .get(n)
            .map(crate::report::fixed)
            .unwrap_or_else(|| "-".into())
    };
    let a = &r.grid.variants[stock].label;
    let b = rec
        .map(|i| r.grid.variants[i].label.clone())
        .unwrap_or_else(|| "(none)".into());
    writeln!(err).ok();
    writeln!(err, "{:<28} {:>16}   recommended", "", "stock").ok();
    writeln!(err, "{:<28} {:>16}   {}", "configuration", a, b).ok();
    if let Some(i) = rec {
        writeln!(
            err,
            "{:<28} {:>16}   {}",
            "id", r.grid.variants[stock].id, r.grid.variants[i].id
        )
        .ok();
    }
    for (n, title) in rows {
        writeln!(
            err,
            "{:<28} {:>16}   {}",
            title,
            val(stock, n),
            rec.map(|i| val(i, n)).unwrap_or_default()
        )
        .ok();
    }
    writeln!(err, "rule: {}", r.objective.describe()).ok();
    writeln!(err).ok();
}

/// `looptune report DIR`: regenerate `report.html` from the files of a sweep.
pub fn report_command(dir: &std::path::Path, err: &mut dyn Write) -> Result<i32> {
    let p = crate::report::html::write_report_dir(dir)?;
    writeln!(err, "wrote {}", p.display()).ok();
    Ok(EXIT_OK)
}
