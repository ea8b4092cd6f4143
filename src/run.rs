//! The commands, wired from the library's steps: read -> replay -> score -> write.
//! The binary calls these; tests call them too.

use crate::detect::{self, DetectorConfig};
use crate::error::{Error, NoSessions, Result, EXIT_GATE, EXIT_OK};
use crate::input::{read_corpus, read_corpus_with, ReadOptions};
use crate::replay::ReplayOptions;
use crate::report::text::{ConfigName, FamilyListing, ParamListing, ProfileListing};
use std::io::Write;
use std::path::PathBuf;

pub use crate::detect::Selection;

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
    pub labels: Vec<PathBuf>,
    /// Configuration gates and JUnit evaluate (profile name; default the first).
    pub config: Option<String>,
    /// CI outputs.
    pub ci: CiArgs,
    /// Accept an input with no session (exit 0) instead of exit 2.
    pub allow_empty: bool,
    /// Labels for sessions missing from the input are an error (`--strict-labels`).
    pub strict_labels: bool,
}

/// 0 sessions read is an error (exit 2) unless `--allow-empty`: a nightly job
/// whose log format changed must not stay green on "0 sessions".
pub fn require_sessions(
    corpus: &crate::event::Corpus,
    sessions: usize,
    paths: &[PathBuf],
    allow_empty: bool,
) -> Result<()> {
    if allow_empty || sessions > 0 {
        return Ok(());
    }
    let not_sessions: Vec<&crate::event::Skip> =
        corpus.skipped.iter().filter(|m| m.is_file()).collect();
    let why = match (corpus.files.len(), not_sessions.first()) {
        (0, None) => NoSessions::NoFile,
        (_, Some(first)) => NoSessions::NotLogs {
            files: not_sessions.len(),
            first: first.to_string(),
        },
        (n, None) => NoSessions::NoRecord { files: n },
    };
    Err(Error::NoSessions {
        inputs: paths.iter().map(|p| p.display().to_string()).collect(),
        why,
    })
}

/// Run `looptune replay`; writes to `out`, returns the exit code.
pub fn replay_command(req: &ReplayRequest, out: &mut dyn Write) -> Result<i32> {
    let configs = req.selection.resolve()?;
    if let Some(c) = &req.config {
        if !configs.iter().any(|x| &x.profile == c || x.family == c) {
            return Err(Error::Usage(format!(
                "--config `{c}`: not one of the selected profiles"
            )));
        }
    }
    // What it writes may not be what it reads (sessions, labels).
    let mut protected = req.paths.clone();
    protected.extend(req.labels.clone());
    guard_outputs(&req.ci.outputs(), &protected)?;
    let wants_scores = !req.labels.is_empty()
        || req.ci.markdown.is_some()
        || req.ci.junit.is_some()
        || !req.ci.requires.is_empty();
    // Every input is checked before anything is printed: the labels file
    // now, the sessions it names once they are read.
    let labels_file = if wants_scores {
        Some(crate::input::labels::LabelsFile::read_all(&req.labels)?.strict(req.strict_labels))
    } else {
        None
    };
    // One bar over the bytes: every session is replayed as soon as it is read.
    let progress = crate::progress::bytes_for_stderr(req.quiet, "replaying");
    let (plan, streamed) = crate::replay::replay_stream(
        &req.paths,
        &req.read,
        configs,
        &ReplayOptions {
            jobs: req.jobs,
            all: req.all,
        },
        progress.as_ref(),
    )?;
    progress.finish();
    let inputs = streamed.inputs();
    warn_skipped(&inputs, &mut std::io::stderr());
    require_sessions(
        &inputs,
        streamed.sessions.len(),
        &req.paths,
        req.allow_empty,
    )?;
    let sessions: Vec<crate::replay::SessionOutcomes> =
        streamed.sessions.into_iter().map(|(_, s)| s).collect();
    let labels = match &labels_file {
        Some(file) => {
            let ids: Vec<(&str, Option<crate::event::Label>)> = sessions
                .iter()
                .map(|s| (s.id.as_str(), s.inline_label))
                .collect();
            file.check_onsets(sessions.iter().map(|s| (s.id.as_str(), s.turns)))?;
            let labels = file.resolve(&ids)?;
            for w in &labels.warnings {
                eprintln!("warning: {w}");
            }
            let (loops, clean) = labels.counts();
            for g in &req.ci.requires {
                g.needs_labels(loops + clean)?;
            }
            Some(labels)
        }
        None => None,
    };
    let configs = plan.configs();
    let names: Vec<ConfigName> = configs.iter().map(config_name).collect();
    let io = |e| Error::io("<stdout>", e);
    if req.json {
        let pool = crate::util::pool::pool(req.jobs)?;
        crate::report::text::replay_json(&sessions, &names, req.all, &pool, out).map_err(io)?;
    } else {
        crate::report::text::replay_table(&sessions, &names, req.all, out).map_err(io)?;
        crate::report::text::live_table(&sessions, &names, req.all, out).map_err(io)?;
    }
    let fired = sessions
        .iter()
        .flat_map(|s| &s.outcomes)
        .any(|o| !o.detections.is_empty());
    let mut code = if req.fail_on_detection && fired {
        EXIT_GATE
    } else {
        EXIT_OK
    };
    if let Some(labels) = labels {
        let gates = &req.ci.requires;
        let hits_of = |ci: usize| -> Vec<Option<crate::result::Hit>> {
            sessions
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    crate::result::Hit::from_outcome(i as u32, &s.outcomes[ci])
                        .map(|h| h.placed(|e| s.place(e)))
                })
                .collect()
        };
        let scores: Vec<crate::score::metrics::Scores> = (0..configs.len())
            .map(|ci| {
                let hits = hits_of(ci);
                let view: Vec<Option<&crate::result::Hit>> =
                    hits.iter().map(Option::as_ref).collect();
                crate::score::metrics::score_hits(&view, |i| {
                    (
                        sessions[i].turns,
                        labels.by_session.get(i).copied().flatten(),
                    )
                })
            })
            .collect();
        let result = crate::replay::Replay {
            configs: configs.to_vec(),
            outcomes: Vec::new(),
            distinct_checks: plan.distinct_checks(),
        };
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
        let gate_results: Vec<crate::score::gates::GateResult> =
            gates.iter().map(|g| g.check(&scores[chosen])).collect();
        let records: Vec<crate::result::SessionRecord> = sessions
            .iter()
            .zip(&labels.by_session)
            .map(|(s, l)| crate::result::SessionRecord::of_outcomes(s, *l))
            .collect();
        let hits = hits_of(chosen);
        let hit_view: Vec<Option<&crate::result::Hit>> = hits.iter().map(Option::as_ref).collect();
        let view = crate::report::ci::CiView {
            title: "replay".into(),
            labels: result.configs.iter().map(|c| c.profile.clone()).collect(),
            scores: &scores,
            chosen,
            recommended: None,
            gates: &gate_results,
            sessions: &records,
            session_labels: &labels,
            hits: &hit_view,
        };
        let mut written = Vec::new();
        let mut err = std::io::stderr();
        let mut set = crate::util::outdir::OutputSet::new();
        let mut failed = write_ci(&req.ci, &view, &mut set, &mut err);
        // Whole or not at all: one report failing keeps the other out too.
        let committed = if failed { Ok(Vec::new()) } else { set.commit() };
        match committed {
            Ok(w) => written.extend(w),
            Err(e) => {
                failed = true;
                writeln!(err, "error: {e}").ok();
            }
        }
        let gate_code = finish_gates(&gate_results, &view.labels[chosen], failed, &mut err);
        if gate_code != EXIT_OK {
            code = gate_code;
        }
    }
    release(sessions);
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
    allow_empty: bool,
    err: &mut dyn Write,
) -> Result<i32> {
    guard_outputs(&[output.to_path_buf()], paths)?;
    let corpus = read_corpus(paths, read)?;
    warn_skipped(&corpus, err);
    require_sessions(&corpus, corpus.sessions.len(), paths, allow_empty)?;
    let mut buf: Vec<u8> = Vec::new();
    crate::input::import::write_canonical(&corpus, &mut buf, redact)
        .map_err(|e| Error::io(output, e))?;
    let bytes = if output.extension().is_some_and(|e| e == "gz") {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&buf).map_err(|e| Error::io(output, e))?;
        enc.finish().map_err(|e| Error::io(output, e))?
    } else {
        buf
    };
    if crate::util::outdir::is_stdout(output) {
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(&bytes)
            .and_then(|_| stdout.flush())
            .map_err(|e| Error::io("<stdout>", e))?;
    } else {
        crate::report::write_atomic(output, &bytes).map_err(|e| Error::io(output, e))?;
    }
    let whole = corpus.sessions.iter().filter(|s| s.whole_messages).count();
    writeln!(
        err,
        "wrote {} ({}) to {}{}",
        crate::report::text::plural(corpus.sessions.len(), "session", "sessions"),
        crate::report::text::plural(corpus.events(), "event", "events"),
        if crate::util::outdir::is_stdout(output) {
            "standard output".to_string()
        } else {
            output.display().to_string()
        },
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
            .find(|m| !m.is_file() && m.file() == f.path)
            .map(|m| format!(" (first: {})", m.reason()))
            .unwrap_or_default();
        writeln!(
            err,
            "warning: {}: skipped {}{first}",
            crate::util::escape::terminal(&f.path),
            crate::report::text::plural(f.skipped_lines as usize, "bad line", "bad lines")
        )
        .ok();
    }
    for m in corpus.skipped.iter().filter(|m| m.is_file()) {
        writeln!(
            err,
            "warning: {}",
            crate::util::escape::terminal(&m.to_string())
        )
        .ok();
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
    let listing: Vec<FamilyListing> = fams.iter().map(|f| family_listing(*f)).collect();
    crate::report::text::detectors(&listing, json, out).map_err(|e| Error::io("<stdout>", e))?;
    if !json && only.is_none() {
        // What the detectors can be fed: every reader, by its `--input-format` name.
        writeln!(
            out,
            "input formats (--input-format; detected per file by content by default): canonical, {}",
            crate::input::import::format_names().join(", ")
        )
        .map_err(|e| Error::io("<stdout>", e))?;
    }
    Ok(())
}

/// What replay output says of a configuration.
fn config_name(c: &DetectorConfig) -> ConfigName {
    ConfigName {
        family: c.family.to_string(),
        profile: c.profile.clone(),
        policy: c.policy().to_string(),
    }
}

/// A family as plain data for the `detectors` writer.
fn family_listing(f: &dyn detect::Family) -> FamilyListing {
    FamilyListing {
        name: f.name().into(),
        about: f.about().into(),
        profiles: f
            .profiles()
            .into_iter()
            .map(|p| ProfileListing {
                name: p.name.into(),
                about: p.about.into(),
                values: p
                    .values
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            })
            .collect(),
        params: f
            .params()
            .into_iter()
            .map(|p| ParamListing {
                name: p.name.into(),
                kind: p.kind.describe(),
                unit: p.unit.into(),
                doc: p.doc.into(),
                source: p.source.into(),
            })
            .collect(),
    }
}

/// CI outputs shared by `replay` and `sweep`.
#[derive(Debug, Clone, Default)]
pub struct CiArgs {
    /// Markdown summary file.
    pub markdown: Option<PathBuf>,
    /// JUnit XML file.
    pub junit: Option<PathBuf>,
    /// Gates such as `recall>=0.9` (parsed by clap, `--require`).
    pub requires: Vec<crate::score::gates::Gate>,
    /// Appended to the Markdown summary (`sweep --baseline`: what changed).
    pub append_markdown: String,
    /// `--json`: one object on stdout instead of the text summary.
    pub json: bool,
}

impl CiArgs {
    /// The files these outputs write.
    pub fn outputs(&self) -> Vec<PathBuf> {
        self.markdown.iter().chain(&self.junit).cloned().collect()
    }
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
    pub labels: Vec<PathBuf>,
    /// Output folder (default `reports/sweep-<grid name>/`).
    pub out: Option<PathBuf>,
    /// How to choose (objective, baseline, folds, seed, unions, gate configuration, jobs).
    pub options: crate::score::SweepOptions,
    /// Test sessions (`--test`): scored once with what was chosen on the others.
    pub test: Vec<PathBuf>,
    /// Replay only this shard's sessions (`--shard I/N`).
    pub shard: Option<crate::result::Shard>,
    /// An earlier run to compare with (`--baseline DIR`).
    pub baseline_run: Option<PathBuf>,
    /// CI outputs.
    pub ci: CiArgs,
    /// No progress bar.
    pub quiet: bool,
    /// Cap on the grid's configurations (`--max-configs`; 0 = the default).
    pub max_configs: usize,
    /// Accept an input with no session instead of exit 2.
    pub allow_empty: bool,
    /// Labels for sessions missing from the input are an error (`--strict-labels`).
    pub strict_labels: bool,
    /// How much of the comparison with `baseline_run` is printed.
    pub diff_shape: crate::report::diff_out::Shape,
    /// Optional outputs (`--parquet`).
    pub outputs: crate::report::output::OutputOptions,
}

/// Load the grid named by a request, or the embedded default, under a
/// `--max-configs` cap (0 = the default cap).
pub fn load_grid_limited(
    path: Option<&std::path::Path>,
    max_configs: usize,
) -> Result<crate::sweep::grid::Grid> {
    let max = crate::util::limits::check_max_configs(max_configs)?;
    match path {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| Error::io(p, e))?;
            crate::sweep::grid::parse_grid_limited(&text, &p.display().to_string(), max)
        }
        None => {
            crate::sweep::grid::parse_grid_limited(crate::sweep::grid::DEFAULT_GRID, "default", max)
        }
    }
}

/// What reading a result at `path` reads: the path as given and, for a
/// folder, its `summary.json` (as `SweepRecord::load` does).
fn result_inputs(path: &std::path::Path) -> Vec<PathBuf> {
    vec![
        path.to_path_buf(),
        path.join(crate::util::outdir::SUMMARY_JSON),
    ]
}

/// Refuse to write over anything the user gave us: the one rule every
/// command applies, before any work, to every file it writes (its outputs)
/// against everything it reads (sessions and the files of walked folders,
/// labels, grid, results, baseline), compared by canonical path.
fn guard_outputs(outputs: &[PathBuf], inputs: &[PathBuf]) -> Result<()> {
    if outputs.is_empty() {
        return Ok(());
    }
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
    let reads_stdin = inputs.iter().any(|i| i.as_os_str() == "-");
    for o in outputs {
        if reads_stdin && crate::util::outdir::stdin_is(o) {
            return Err(Error::Usage(format!(
                "refusing to overwrite {}: it is standard input (`-`)",
                o.display()
            )));
        }
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

/// Refuse an `--out` that is a file.
fn check_out_dir(out_dir: &std::path::Path) -> Result<()> {
    if out_dir.is_file() {
        return Err(Error::Usage(format!(
            "--out {}: is a file, not a folder",
            out_dir.display()
        )));
    }
    Ok(())
}

/// Run `looptune sweep`: results (the summary table, the files written) go to
/// `out`, progress and warnings to `err`. Returns the exit code.
pub fn sweep_command(req: &SweepRequest, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32> {
    let started = std::time::Instant::now();
    // Everything that can be checked before work starts is checked first.
    let grid = load_grid_limited(req.grid.as_deref(), req.max_configs)?;
    let gates = &req.ci.requires;
    let opts = &req.options;
    if let Some(c) = &opts.chosen {
        crate::sweep::find_variant(&grid, c)?;
    }
    crate::result::find_baseline(&crate::sweep::grid_record(&grid), opts.baseline.as_deref())?;
    let out_dir = req.out.clone().unwrap_or_else(|| {
        PathBuf::from("reports").join(format!("sweep-{}", sanitize(&grid.name)))
    });
    check_out_dir(&out_dir)?;
    let list = crate::report::output::Outputs::standard(&req.outputs);
    let mut outputs = list.paths(&out_dir);
    outputs.extend(req.ci.outputs());
    let mut protected = req.paths.clone();
    protected.extend(req.test.clone());
    protected.extend(req.labels.clone());
    protected.extend(req.grid.clone());
    if let Some(dir) = &req.baseline_run {
        protected.extend(result_inputs(dir));
    }
    guard_outputs(&outputs, &protected)?;
    // An earlier run to compare with (`--baseline DIR`), loaded before any work.
    let earlier = match &req.baseline_run {
        Some(dir) => Some(crate::score::analyze(crate::result::SweepRecord::load(
            dir,
        )?)?),
        None => {
            if let Some(g) = gates.iter().find(|g| g.is_diff()) {
                return Err(Error::Usage(format!(
                    "--require `{}` compares with an earlier run: give --baseline DIR (a folder an earlier sweep wrote)",
                    g.score
                )));
            }
            None
        }
    };

    let mut read = req.read.clone();
    read.digests = true;
    let labels_file =
        crate::input::labels::LabelsFile::read_all(&req.labels)?.strict(req.strict_labels);
    crate::sweep::check_group_key(&opts.group_by, &labels_file, !req.test.is_empty())?;
    // One bar over the bytes: every session is replayed under the whole grid
    // as soon as it is read.
    let progress = crate::progress::bytes_for_stderr(req.quiet, "sweeping");
    let (mut record, inputs, labels) = crate::sweep::run_sweep(
        &req.paths,
        &req.test,
        &read,
        grid,
        &labels_file,
        opts.record(),
        opts.jobs,
        req.shard,
        progress.as_ref(),
    )?;
    progress.finish();
    warn_skipped(&inputs, err);
    require_sessions(
        &inputs,
        labels.by_session.len(),
        &req.paths,
        req.allow_empty,
    )?;
    for w in &labels.warnings {
        writeln!(err, "warning: {w}").ok();
    }
    let (loops, clean) = labels.counts();
    for g in gates {
        g.needs_labels(loops + clean)?;
    }
    record.wall_time_ms = started.elapsed().as_millis() as u64;
    // Scoring and choosing run per configuration on the sweep's threads.
    let result = crate::util::pool::pool(opts.jobs)?.install(|| crate::score::analyze(record))?;
    let plain: Vec<crate::score::gates::Gate> =
        gates.iter().filter(|g| !g.is_diff()).cloned().collect();
    if req.out.is_none() && crate::util::outdir::is_output_folder(&out_dir) {
        writeln!(
            err,
            "note: replacing the previous outputs in {} (give --out to keep them)",
            out_dir.display()
        )
        .ok();
    }
    // The comparison with an earlier run, whose summary (in the same shape
    // as on the terminal) ends the Markdown summary.
    let compared = earlier.map(|earlier| crate::score::diff::diff(&earlier, &result));
    let mut ci = req.ci.clone();
    if let Some(d) = &compared {
        ci.append_markdown = crate::report::diff_out::markdown_within(
            d,
            &req.diff_shape,
            crate::report::diff_out::MARKDOWN_MAX - 8 * 1024,
        );
    }
    let writing = crate::progress::for_stderr(req.quiet, "writing outputs");
    let (mut code, mut brief) = finish_sweep(
        &result,
        &list,
        opts.jobs,
        &out_dir,
        &ci,
        &plain,
        started,
        writing.as_ref(),
        out,
        err,
    )?;
    if let Some(d) = compared {
        let io = |e| Error::io("<stdout>", e);
        warn_grids(&d, err);
        if brief.is_none() {
            writeln!(
                out,
                "\nChanges since {}:",
                req.baseline_run.as_ref().expect("given").display()
            )
            .map_err(io)?;
            crate::report::diff_out::table(&d, &req.diff_shape, out).map_err(io)?;
        }
        let results = diff_gates(&d, gates);
        let diff_code = finish_gates(&results, &checked_name(&result), false, err);
        if code == EXIT_OK {
            code = diff_code;
        }
        if let Some(serde_json::Value::Object(m)) = &mut brief {
            m.insert(
                "diff".into(),
                crate::report::brief::diff(&d, &req.diff_shape, &results),
            );
            m.insert("exit_code".into(), code.into());
        }
    }
    if let Some(b) = &brief {
        print_json(b, out)?;
    }
    release(result);
    Ok(code)
}

/// Write every output of an analysed result, print the summary and the gates.
/// With `ci.json`, nothing goes to `out`: the summary comes back as one
/// object, with the exit code.
/// `started` is when the command began, for the closing line's whole-run time;
/// `jobs` caps the writing threads (0: every core).
#[allow(clippy::too_many_arguments)]
fn finish_sweep(
    result: &crate::score::SweepResult,
    list: &crate::report::output::Outputs,
    jobs: usize,
    out_dir: &std::path::Path,
    ci: &CiArgs,
    gates: &[crate::score::gates::Gate],
    started: std::time::Instant,
    progress: &dyn crate::progress::Progress,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(i32, Option<serde_json::Value>)> {
    let began = std::time::Instant::now();
    // The set is committed whole or not at all (util/outdir.rs); the list
    // stages, writes (at once, on up to `jobs` threads) and checks each file.
    let mut set = crate::util::outdir::OutputSet::new();
    let mut report_failed = list.write_into(result, &mut set, out_dir, jobs, progress, err)?;
    let chosen = &result.scores[result.chosen];
    let gate_results: Vec<crate::score::gates::GateResult> =
        gates.iter().map(|g| g.check(chosen)).collect();
    let rec = &result.record;
    let session_labels = crate::input::labels::Labels {
        by_session: rec.sessions.iter().map(|s| s.label()).collect(),
        ..Default::default()
    };
    let view = crate::report::ci::CiView {
        title: format!("sweep {}", rec.grid.name),
        labels: rec.grid.configs.iter().map(|v| v.label.clone()).collect(),
        scores: &result.scores,
        chosen: result.chosen,
        recommended: result.recommended,
        gates: &gate_results,
        sessions: &rec.sessions,
        session_labels: &session_labels,
        hits: &result.dense(result.chosen),
    };
    report_failed |= write_ci(ci, &view, &mut set, err);
    if report_failed {
        // A set is committed whole or not at all: new data beside the old
        // report would look current.
        drop(set);
        progress.finish();
        writeln!(
            err,
            "nothing was replaced: the previous outputs are as they were"
        )
        .ok();
        return Ok((crate::error::EXIT_REPORT, None));
    }
    let written = set.commit()?;
    progress.finish();
    let writing = began.elapsed().as_secs_f64();

    if ci.json {
        let code = finish_gates(&gate_results, &checked_name(result), report_failed, err);
        let brief = crate::report::brief::sweep(result, &gate_results, &written, code);
        return Ok((code, Some(brief)));
    }
    let io = |e| Error::io("<stdout>", e);
    crate::report::text::sweep_summary(result, out).map_err(io)?;
    crate::report::text::live_summary(result, out).map_err(io)?;
    writeln!(
        out,
        "\n{} configurations x {} sessions in {:.2}s (writing the outputs {:.3}s){}",
        rec.grid.configs.len(),
        rec.sessions.len(),
        started.elapsed().as_secs_f64(),
        writing,
        match rec.shard {
            Some(s) => format!(
                " (shard {}/{}: merge the parts with `looptune merge`)",
                s.index, s.count
            ),
            None => String::new(),
        }
    )
    .map_err(io)?;
    writeln!(out, "wrote:").map_err(io)?;
    for p in &written {
        writeln!(out, "  {}", p.display()).map_err(io)?;
    }
    let code = finish_gates(&gate_results, &checked_name(result), report_failed, err);
    Ok((code, None))
}

/// `--json`: the one object on `out`, on one line.
fn print_json(value: &serde_json::Value, out: &mut dyn Write) -> Result<()> {
    let io = |e| Error::io("<stdout>", e);
    serde_json::to_writer(&mut *out, value).map_err(|e| io(e.into()))?;
    writeln!(out).map_err(io)
}

/// The configuration gates check, as gate lines name it.
fn checked_name(result: &crate::score::SweepResult) -> String {
    let c = result.config(result.chosen);
    format!("{} {}", c.id, c.label)
}

/// How `looptune diff` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DiffFormat {
    /// A table for people.
    #[default]
    Table,
    /// One JSON object per changed verdict.
    Json,
}

/// Evaluate the diff gates on the new run's chosen configuration.
fn diff_gates(
    d: &crate::score::diff::Diff,
    gates: &[crate::score::gates::Gate],
) -> Vec<crate::score::gates::GateResult> {
    // The diff lists the new run's configurations first, in grid order.
    let chosen = d.configs.get(d.chosen);
    gates
        .iter()
        .filter(|g| g.is_diff())
        .map(|g| g.check_value(chosen.and_then(|c| c.count(&g.score))))
        .collect()
}

/// A warning on `err` when the two runs come from different grids.
fn warn_grids(d: &crate::score::diff::Diff, err: &mut dyn Write) {
    if let Some(w) = crate::report::diff_out::grid_warning(d) {
        writeln!(err, "warning: {}", crate::util::escape::terminal(&w)).ok();
    }
}

/// `looptune diff`: how to compare and what to print.
#[derive(Debug, Clone, Default)]
pub struct DiffRequest {
    /// Output format.
    pub format: DiffFormat,
    /// The configuration gates check and the only one listed (id, label or
    /// stock profile of the new run; default: its chosen configuration).
    pub config: Option<String>,
    /// How much is printed.
    pub shape: crate::report::diff_out::Shape,
}

/// `looptune diff BASE NEW`: what changed between two results of the same grid.
pub fn diff_command(
    base: &std::path::Path,
    new: &std::path::Path,
    req: &DiffRequest,
    ci: &CiArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32> {
    let format = req.format;
    let gates = &ci.requires;
    if let Some(g) = gates.iter().find(|g| !g.is_diff()) {
        return Err(Error::Usage(format!(
            "--require `{}`: diff gates take {}",
            g.score,
            crate::score::diff::DIFF_SCORES.join(", ")
        )));
    }
    let mut inputs = result_inputs(base);
    inputs.extend(result_inputs(new));
    guard_outputs(&ci.outputs(), &inputs)?;
    let base = crate::score::analyze(crate::result::SweepRecord::load(base)?)?;
    let mut new = crate::score::analyze(crate::result::SweepRecord::load(new)?)?;
    let mut shape = req.shape;
    if let Some(c) = &req.config {
        new.chosen = crate::result::find_config(&new.record.grid, c)?;
        // The new run's configurations come first in the diff, in grid order.
        shape.only = Some(new.chosen);
    }
    let d = crate::score::diff::diff(&base, &new);
    warn_grids(&d, err);
    let io = |e| Error::io("<stdout>", e);
    match format {
        _ if ci.json => {}
        DiffFormat::Json => crate::report::diff_out::json_lines(&d, out).map_err(io)?,
        DiffFormat::Table => crate::report::diff_out::table(&d, &shape, out).map_err(io)?,
    }
    let mut failed = false;
    if let Some(p) = &ci.markdown {
        let text = crate::report::diff_out::markdown(&d, &shape);
        let written = if crate::util::outdir::is_stdout(p) {
            std::io::stdout().lock().write_all(text.as_bytes())
        } else {
            crate::report::write_atomic(p, text.as_bytes())
        };
        if let Err(e) = written {
            failed = true;
            writeln!(err, "error: failed to write {}: {e}", p.display()).ok();
        }
    }
    let results = diff_gates(&d, gates);
    let code = finish_gates(&results, &checked_name(&new), failed, err);
    if ci.json {
        let mut brief = crate::report::brief::diff(&d, &shape, &results);
        if let serde_json::Value::Object(m) = &mut brief {
            m.insert("exit_code".into(), code.into());
        }
        print_json(&brief, out)?;
    }
    Ok(code)
}

/// `looptune merge`: combine the results of shards into the full outputs.
pub fn merge_command(
    parts: &[PathBuf],
    out_dir: &std::path::Path,
    ci: &CiArgs,
    options: &crate::report::output::OutputOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32> {
    let started = std::time::Instant::now();
    let gates = &ci.requires;
    check_out_dir(out_dir)?;
    let records: Vec<crate::result::SweepRecord> = parts
        .iter()
        .map(|p| crate::result::SweepRecord::load(p))
        .collect::<Result<_>>()?;
    let list = crate::report::output::Outputs::standard(options);
    let inputs: Vec<PathBuf> = parts.iter().flat_map(|p| result_inputs(p)).collect();
    let mut outputs = list.paths(out_dir);
    outputs.extend(ci.outputs());
    guard_outputs(&outputs, &inputs)?;
    let record = crate::result::SweepRecord::merge(records)?;
    let labelled = record.sessions.iter().filter(|s| s.label.is_some()).count();
    for g in gates {
        g.needs_labels(labelled)?;
    }
    let result = crate::score::analyze(record)?;
    let writing = crate::progress::for_stderr(false, "writing outputs");
    let (code, brief) = finish_sweep(
        &result,
        &list,
        0,
        out_dir,
        ci,
        gates,
        started,
        writing.as_ref(),
        out,
        err,
    )?;
    if let Some(b) = &brief {
        print_json(b, out)?;
    }
    Ok(code)
}

/// Stage the Markdown and JUnit outputs in `set`; true when one failed.
fn write_ci(
    ci: &CiArgs,
    view: &crate::report::ci::CiView,
    set: &mut crate::util::outdir::OutputSet,
    err: &mut dyn Write,
) -> bool {
    let mut failed = false;
    let outputs = [
        (
            ci.markdown.as_ref(),
            crate::report::ci::markdown(view) + &ci.append_markdown,
        ),
        (ci.junit.as_ref(), crate::report::ci::junit(view)),
    ];
    for (path, text) in outputs {
        let Some(p) = path else { continue };
        if crate::util::outdir::is_stdout(p) {
            if let Err(e) = std::io::stdout().lock().write_all(text.as_bytes()) {
                failed = true;
                writeln!(err, "error: failed to write to standard output: {e}").ok();
            }
            continue;
        }
        if let Err(e) = set.write(p, text.as_bytes()) {
            failed = true;
            writeln!(err, "error: failed to write {e}").ok();
        }
    }
    failed
}

/// Print gate results, each naming the configuration it checked; the exit
/// code (report failure wins over a gate).
fn finish_gates(
    results: &[crate::score::gates::GateResult],
    config: &str,
    report_failed: bool,
    err: &mut dyn Write,
) -> i32 {
    for g in results {
        let mark = if g.passed { "ok  " } else { "FAIL" };
        writeln!(
            err,
            "gate {mark} {} (configuration {})",
            g.describe(),
            crate::util::escape::terminal(config)
        )
        .ok();
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

/// `looptune report DIR`: re-render every output of a sweep folder from the
/// result saved in its `summary.json` (load the record, analyze, write the
/// list as a sweep does: staged, replaced whole or not at all).
pub fn report_command(
    dir: &std::path::Path,
    options: &crate::report::output::OutputOptions,
    err: &mut dyn Write,
) -> Result<i32> {
    report_outputs(dir, &crate::report::output::Outputs::standard(options), err)
}

/// `looptune report DIR` with the outputs `list`: load the record from
/// `DIR/summary.json`, analyze it, and write every output as a sweep does.
/// No output may be any other file of the folder (the `summary.json` it
/// reads above all): a link there is refused before anything is written.
pub fn report_outputs(
    dir: &std::path::Path,
    list: &crate::report::output::Outputs,
    err: &mut dyn Write,
) -> Result<i32> {
    let entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    for output in list.paths(dir) {
        let others: Vec<PathBuf> = entries
            .iter()
            .filter(|p| p.file_name() != output.file_name())
            .cloned()
            .collect();
        guard_outputs(std::slice::from_ref(&output), &others)?;
    }
    let summary = dir.join(crate::util::outdir::SUMMARY_JSON);
    if !summary.is_file() {
        return Err(Error::Usage(format!(
            "{}: no {} here; run `looptune sweep` first",
            dir.display(),
            crate::util::outdir::SUMMARY_JSON
        )));
    }
    let result = crate::score::analyze(crate::result::SweepRecord::load(&summary)?)?;
    let mut set = crate::util::outdir::OutputSet::new();
    let progress = crate::progress::NoProgress;
    if list.write_into(&result, &mut set, dir, 0, &progress, err)? {
        drop(set);
        writeln!(
            err,
            "nothing was replaced: the previous outputs are as they were"
        )
        .ok();
        return Ok(crate::error::EXIT_REPORT);
    }
    for p in set.commit()? {
        writeln!(err, "wrote {}", p.display()).ok();
    }
    Ok(EXIT_OK)
}

/// `looptune label`.
#[derive(Debug, Clone, Default)]
pub struct LabelRequest {
    /// Inputs.
    pub paths: Vec<PathBuf>,
    /// How to read them.
    pub read: ReadOptions,
    /// The labels file to edit (with `suggest`: labelled sessions to leave out).
    pub labels: Option<PathBuf>,
    /// Write the ranked queue as CSV on `out` instead of opening the terminal.
    pub suggest: bool,
    /// Worker threads for the replay.
    pub jobs: usize,
}

/// `looptune label --labels FILE --export FORMAT OUT`: the labels file
/// written in another tool's form (`scout`: an Inspect Scout validation set;
/// loops lose their onset, which Scout has no place for). `OUT` is written
/// atomically and may be neither the labels file nor an input.
pub fn export_labels_command(
    labels: &std::path::Path,
    format: &str,
    file: &std::path::Path,
    inputs: &[PathBuf],
) -> Result<i32> {
    if format != "scout" {
        return Err(Error::Usage(format!(
            "--export: unknown format `{format}` (known: scout)"
        )));
    }
    let mut sources = inputs.to_vec();
    sources.push(labels.to_path_buf());
    guard_outputs(&[file.to_path_buf()], &sources)?;
    if std::fs::canonicalize(file).ok() == std::fs::canonicalize(labels).ok() && file.exists() {
        return Err(Error::Usage(format!(
            "--export would write over the labels file {}",
            labels.display()
        )));
    }
    let (set, splits) = crate::input::labels::scout::read_for_export(labels)?;
    let ext = file
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let text = crate::input::labels::scout::export(&set, &splits, &ext);
    crate::util::outdir::write_atomic(file, text.as_bytes()).map_err(|e| Error::io(file, e))?;
    let without = set
        .values()
        .filter(|l| l.is_loop && l.onset_turn.is_some())
        .count();
    eprintln!(
        "wrote {} label{} to {}{}",
        set.len(),
        if set.len() == 1 { "" } else { "s" },
        file.display(),
        if without > 0 {
            format!(
                " ({without} onset{} dropped: a validation set has none)",
                if without == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        }
    );
    Ok(EXIT_OK)
}

/// Run `looptune label`; `--suggest` writes to `out`. Returns the exit code.
pub fn label_command(req: &LabelRequest, out: &mut dyn Write) -> Result<i32> {
    use crate::label::{queue, store::LabelStore, tui::App};
    if !req.suggest && req.labels.is_none() {
        return Err(Error::Usage(
            "looptune label needs --labels FILE (created if missing), or --suggest".into(),
        ));
    }
    if !req.suggest {
        // Written to: it must not be an input (`--suggest` only reads it).
        if let Some(l) = &req.labels {
            guard_outputs(std::slice::from_ref(l), &req.paths)?;
        }
        crate::label::check_terminal()?;
    }
    // The labels file is checked before any work.
    let store = req.labels.as_deref().map(LabelStore::open).transpose()?;
    let reading = crate::progress::bytes_for_stderr(false, "reading");
    let corpus = read_corpus_with(&req.paths, &req.read, reading.as_ref())?;
    reading.finish();
    warn_skipped(&corpus, &mut std::io::stderr());
    let progress = crate::progress::for_stderr(false, "ranking");
    let replayed = queue::replay_stock_with(&corpus, req.jobs, progress.as_ref())?;
    progress.finish();
    let ranked = queue::rank(&corpus, &replayed);
    if req.suggest {
        let file_labels = store.as_ref().map(|s| s.labels()).unwrap_or_default();
        let inline: std::collections::HashSet<&str> = corpus
            .sessions
            .iter()
            .filter(|s| s.inline_label.is_some())
            .map(|s| s.id.as_str())
            .collect();
        let labelled = |id: &str| file_labels.contains_key(id) || inline.contains(id);
        let csv = queue::suggest_csv(&corpus, &ranked, labelled);
        crate::label::write_suggest(&csv, out)?;
        return Ok(EXIT_OK);
    }
    let store = store.expect("checked above");
    let mut app = App::new(&corpus, &replayed, &ranked, store);
    crate::label::run_terminal(&mut app)?;
    let (done, total) = app.progress();
    eprintln!("{done} of {total} sessions labelled");
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_sessions(corpus: &crate::event::Corpus) -> Error {
        require_sessions(corpus, 0, &[PathBuf::from("a"), PathBuf::from("b")], false).unwrap_err()
    }

    #[test]
    fn no_sessions_read_is_its_own_error_with_the_reason_and_exit_2() {
        use crate::event::{Corpus, Skip, SourceFile};
        let empty = Corpus::default();
        assert!(require_sessions(&empty, 0, &[], true).is_ok());
        let e = no_sessions(&empty);
        assert!(matches!(
            &e,
            Error::NoSessions { inputs, why: NoSessions::NoFile } if inputs == &["a", "b"]
        ));
        assert_eq!(e.exit_code(), crate::error::EXIT_INPUT);
        assert_eq!(
            e.to_string(),
            "no sessions read from a, b: no session file found (canonical `.jsonl` or a native agent log) (pass --allow-empty to accept an empty input)"
        );
        let file = SourceFile {
            path: "a/x.jsonl".into(),
            format: "canonical".into(),
            sha256: String::new(),
            bytes: 0,
            skipped_lines: 0,
            unknown_records: 0,
        };
        let read = Corpus {
            files: vec![file.clone(), file],
            ..Default::default()
        };
        assert!(no_sessions(&read)
            .to_string()
            .contains(": 2 files read, none holds a record ("));
        let junk = Corpus {
            skipped: vec![Skip::Unrecognised {
                file: "a/n.json".into(),
                detail: String::new(),
            }],
            ..Default::default()
        };
        let e = no_sessions(&junk);
        assert!(matches!(
            &e,
            Error::NoSessions {
                why: NoSessions::NotLogs { files: 1, .. },
                ..
            }
        ));
        assert!(e.to_string().contains(
            ": 1 file not recognised as a session log (first: a/n.json: skipped file (not a recognised session log)) ("
        ));
    }
}
