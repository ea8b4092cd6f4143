//! `looptune sweep`.

use super::*;
use crate::error::{Error, Result, EXIT_OK};
use crate::input::ReadOptions;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

pub(super) const SWEEP_HELP: &str = "\
Examples:
  looptune sweep fixtures/ --labels fixtures/labels.csv      # the embedded default grid
  looptune sweep --print-default-grid > grid.toml            # a grid to start from
  looptune sweep runs/ --grid grid.toml --labels labels.csv --out reports/nightly \\
      --require 'recall>=0.9' --require 'false_positives<=0' --junit junit.xml

Scores per configuration: true/false positives, missed loops, precision, recall,
F1, false positives per 1,000 clean turns, turns-to-detection (detection turn -
onset turn + 1; median, p90, max), early detections, judge checks due, and the
tokens the recording spent after the policy's stop point. Labels come from
--labels (CSV or JSONL: session,label,onset_turn) and inline `label` records;
the file wins. Unlabeled sessions are replayed and counted, never scored.

Replay cannot know how the model would have reacted to a warning or stop: the
recorded continuation counts as the model not changing course.

Exit codes:
  0  ok: everything ran and was written
  1  a gate (--require) tripped
  2  bad input, configuration or usage (FILE:LINE: what is wrong); nothing written
  3  a report (HTML, Markdown, JUnit) could not be written: nothing of the set was replaced
  130, 143  interrupted (SIGINT, SIGTERM): the previous outputs are left whole";

#[derive(Debug, Args)]
pub(super) struct SweepArgs {
    /// Session files or folders; `-` reads stdin. Default: the agents' log folders that
    /// exist (~/.claude/projects, ~/.codex/sessions, ~/.gemini/tmp, ...).
    #[arg(value_name = "PATHS")]
    pub(super) paths: Vec<PathBuf>,
    /// Skip bad input lines (counted and reported per file) instead of stopping at the first.
    #[arg(help_heading = "Input", long)]
    pub(super) lenient: bool,
    /// Input format for every file: `auto` detects it per file by content.
    #[arg(help_heading = "Input", long, value_name = "NAME", default_value = "auto", value_parser = input_formats())]
    pub(super) input_format: crate::input::import::InputFormat,
    /// Exit 0 when no session is read (default: exit 2, so a CI job whose logs changed format fails).
    #[arg(help_heading = "Input", long)]
    pub(super) allow_empty: bool,
    #[command(flatten, next_help_heading = "Input")]
    pub(super) limits: LimitArgs,
    /// Print the embedded default grid as TOML and exit.
    #[arg(help_heading = "Detectors", long)]
    pub(super) print_default_grid: bool,
    /// Grid file (TOML); default: the embedded grid.
    #[arg(help_heading = "Detectors", long, value_name = "FILE")]
    pub(super) grid: Option<PathBuf>,
    /// Output folder (default reports/sweep-<grid name>/). `-o`/`--output` is the output in every command.
    #[arg(
        help_heading = "Outputs",
        long,
        short = 'o',
        visible_alias = "output",
        value_name = "DIR"
    )]
    pub(super) out: Option<PathBuf>,
    /// How to pick the recommended configuration: `default` (no more false
    /// positives than the baseline, then highest recall, then lowest median
    /// turns-to-detection, then closest to the baseline's values), `f1`, or
    /// `max-fp=N` (at most N false positives, then as default), or
    /// `fp-rate=R` (false positives on at most R of the labelled clean
    /// sessions chosen on, e.g. 0.05, rounded down; then as default).
    #[arg(help_heading = "Scoring", long, value_name = "RULE", default_value = "default", value_parser = crate::score::metrics::Objective::parse)]
    pub(super) objective: crate::score::metrics::Objective,
    /// The profile the recommendation is compared with and whose family it is
    /// chosen from (default: the profile of the grid's first [[grid]];
    /// gemini-latest for the embedded grid). A folder an earlier sweep wrote
    /// instead compares this run with that one (`looptune diff`), for gates
    /// such as 'new_false_positives==0'.
    #[arg(help_heading = "Scoring", long, value_name = "PROFILE|DIR")]
    pub(super) baseline: Option<String>,
    /// Let a configuration of any family be recommended (default: only the baseline's family).
    #[arg(help_heading = "Scoring", long)]
    pub(super) across_families: bool,
    /// Group sessions by KEY for per-group scores (groups.csv), the per-group
    /// guard and leave-one-group-out validation: `agent` (the agent that
    /// recorded it, else its log format), `model`, `source` (the first folder
    /// under the input path), or any column of the labels file (`repo`, `split`...).
    #[arg(
        help_heading = "Scoring",
        long,
        value_name = "KEY",
        default_value = "agent"
    )]
    pub(super) group_by: String,
    /// `per-group`: a candidate may not catch fewer of any group's loops, nor
    /// give any group more false positives, than the baseline (the union
    /// search too; also named `strict`); `pooled`: only the pooled counts
    /// matter; `interval`: a group vetoes only a loss beyond what its size
    /// allows (recall below the lower end of the baseline's 95% Wilson
    /// interval in that group, or a false-positive rate above its upper end).
    #[arg(help_heading = "Scoring", long, value_name = "RULE", default_value = "per-group", value_parser = ["per-group", "strict", "pooled", "interval"])]
    pub(super) guard: String,
    /// Test sessions: recommendation, family bests and unions are chosen on
    /// PATHS only, then scored once on these (also: a `split` column in the
    /// labels file, `train` or `test`).
    #[arg(help_heading = "Input", long, value_name = "PATH", num_args = 1..)]
    pub(super) test: Vec<PathBuf>,
    /// Cross-validation folds for the out-of-sample estimate (stratified; fewer
    /// when there are fewer labelled loops).
    #[arg(help_heading = "Scoring", long, value_name = "K", default_value_t = 5)]
    pub(super) folds: usize,
    /// Seed of the cross-validation folds and the bootstrap intervals.
    #[arg(help_heading = "Scoring", long, value_name = "N", default_value_t = 1)]
    pub(super) seed: u64,
    /// Also search unions of up to N configurations, one per family (a session
    /// is flagged when any member fires, at the earliest member's turn), by
    /// forward selection under the same rule, cross-validated. No agent ships
    /// a union: it is something you would have to build.
    #[arg(help_heading = "Scoring", long, value_name = "N", default_value_t = 0)]
    pub(super) combine: usize,
    /// Also search one combined `looptune` configuration: from
    /// looptune-default, add the setting of the looptune grid (what one of
    /// its configurations changes) that most improves it under the same rule
    /// and guard, until none does; the whole search is re-run in each fold
    /// and without each group. Opt-in: it reads the labelled sessions again
    /// and replays each round's settings on them.
    #[arg(help_heading = "Scoring", long)]
    pub(super) combine_rules: bool,
    /// Replay only shard I of N (sessions split by a stable hash of their id)
    /// and write that part's result; combine the parts with `looptune merge`.
    #[arg(long, value_name = "I/N", value_parser = crate::result::Shard::parse)]
    pub(super) shard: Option<crate::result::Shard>,
    /// Worker threads for reading files and replaying (default: all cores). CSV output is identical for every value.
    #[arg(long, short = 'j', value_name = "N", default_value_t = 0)]
    pub(super) jobs: usize,
    #[command(flatten)]
    pub(super) ci: CiOpts,
    #[command(flatten)]
    pub(super) files: OutputOpts,
    /// No progress bar.
    #[arg(long, short = 'q')]
    pub(super) quiet: bool,
    /// Refuse grids that expand to more configurations than this (counted before any work; 0 = the default; at most what this machine's memory holds, at about 16 KiB per configuration).
    #[arg(help_heading = "Detectors", long, value_name = "N", default_value_t = crate::util::limits::DEFAULT_MAX_CONFIGS)]
    pub(super) max_configs: usize,
    #[command(flatten, next_help_heading = "Outputs")]
    pub(super) shape: DiffShapeArgs,
    /// Print one JSON object on stdout (baseline, recommendation, gates and
    /// their verdicts) instead of the text summary, for scripts.
    #[arg(help_heading = "Outputs", long)]
    pub(super) json: bool,
}

/// `--baseline` names an earlier run when it is a folder with a summary.json
/// (or such a file), else a profile.
pub(super) fn is_run_dir(v: &str) -> bool {
    let p = std::path::Path::new(v);
    p.join("summary.json").is_file() || (p.is_file() && v.ends_with(".json"))
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
    /// How to choose (objective, baseline, folds, seed, unions, gate configuration).
    pub options: crate::score::SweepOptions,
    /// Worker threads (`--jobs`: 0 = all cores), one pool for the whole command.
    pub jobs: usize,
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
    pub outputs: crate::report::outputs::OutputOptions,
    /// Search the combined looptune configuration (`--combine-rules`).
    pub combine_rules: bool,
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

impl SweepArgs {
    /// The request these arguments make (`--jobs` checked against its cap).
    pub(super) fn request(&self) -> Result<SweepRequest> {
        crate::util::limits::check_jobs(self.jobs)?;
        Ok(SweepRequest {
            paths: self.paths.clone(),
            read: ReadOptions {
                lenient: self.lenient,
                format: self.input_format,
                digests: true,
                max_gzip_bytes: self.limits.max_gzip_bytes,
                max_gzip_ratio: self.limits.max_gzip_ratio,
                stream_above: self
                    .limits
                    .stream_above
                    .unwrap_or(crate::input::SWEEP_STREAM_ABOVE),
            },
            grid: self.grid.clone(),
            labels: self.ci.labels.clone(),
            out: self.out.clone(),
            options: crate::score::SweepOptions {
                objective: self.objective.clone(),
                baseline: self.baseline.clone().filter(|b| !is_run_dir(b)),
                across_families: self.across_families,
                folds: self.folds,
                seed: self.seed,
                combine: self.combine,
                chosen: self.ci.config.clone(),
                group_by: self.group_by.clone(),
                guard: crate::score::recommend::Guard::parse(&self.guard).expect("clap checked it"),
                combined: None,
                combined_folds: Vec::new(),
            },
            jobs: self.jobs,
            test: self.test.clone(),
            shard: self.shard,
            baseline_run: self
                .baseline
                .as_deref()
                .filter(|b| is_run_dir(b))
                .map(PathBuf::from),
            ci: CiArgs {
                json: self.json,
                ..self.ci.ci()
            },
            quiet: self.quiet,
            max_configs: self.max_configs,
            allow_empty: self.allow_empty,
            strict_labels: self.ci.strict_labels,
            diff_shape: self.shape.shape(),
            outputs: self.files.options(),
            combine_rules: self.combine_rules,
        })
    }
}

/// Run `looptune sweep`: results (the summary table, the files written) go to
/// `out`, progress and warnings to `err`. Returns the exit code.
pub fn sweep_command(req: &SweepRequest, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32> {
    let started = std::time::Instant::now();
    let workers = crate::util::pool::Workers::new(req.jobs)?;
    // Everything that can be checked before work starts is checked first.
    let grid = load_grid_limited(req.grid.as_deref(), req.max_configs)?;
    let gates = &req.ci.requires;
    let opts = &req.options;
    if let Some(c) = &opts.chosen {
        crate::sweep::find_variant(&grid, c)?;
    }
    // The baseline is found once, here, and handed to the analysis.
    let baseline =
        crate::result::find_baseline(&crate::sweep::grid_record(&grid), opts.baseline.as_deref())?;
    let out_dir = req.out.clone().unwrap_or_else(|| {
        PathBuf::from("reports").join(format!("sweep-{}", sanitize(&grid.name)))
    });
    check_out_dir(&out_dir)?;
    let list = crate::report::outputs::Outputs::standard(&req.outputs);
    let mut outputs = list.paths(&out_dir);
    outputs.extend(req.ci.outputs());
    check_output_folders(&req.ci.outputs(), Some(&out_dir))?;
    // The inputs (PATHS, then --test) are walked once, for this guard and
    // for the read.
    let mut paths = req.paths.clone();
    paths.extend(req.test.clone());
    let inputs = crate::input::InputList::walk(&paths, req.read.lenient);
    let mut protected = req.labels.clone();
    protected.extend(req.grid.clone());
    if let Some(dir) = &req.baseline_run {
        protected.extend(result_inputs(dir));
    }
    guard_outputs(&outputs, Some(&inputs), &protected)?;
    // An earlier run to compare with (`--baseline DIR`), loaded before any work.
    let earlier = match &req.baseline_run {
        Some(dir) => Some(crate::report::summary::load_checked(dir)?),
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
    // `--combine-rules` searches first, on a sweep of the looptune settings,
    // and its configuration joins the grid as one more row, so the sweep
    // below scores it as every other (CSV, JSON, report, the choice across
    // families, export).
    let mut opts = opts.clone();
    let (grid, baseline, combined) = if req.combine_rules {
        let searching = std::time::Instant::now();
        let c = combine_rules(req, &grid, baseline, &opts, &read, &labels_file, &workers)?;
        let secs = searching.elapsed().as_secs_f64();
        match &c {
            Some(c) if !grid.variants.iter().any(|v| v.config == c.config) => {
                let why = format!(
                    "added by --combine-rules: {} (searched on every labelled session)",
                    c.label
                );
                let grid = crate::sweep::grid::with_extra(&grid, &c.config, &c.label, &why)?;
                let baseline = crate::result::find_baseline(
                    &crate::sweep::grid_record(&grid),
                    opts.baseline.as_deref(),
                )?;
                opts.combined = grid
                    .variants
                    .iter()
                    .find(|v| v.config == c.config)
                    .map(|v| v.id.clone());
                opts.combined_folds = c.folds.clone();
                (grid, baseline, Some((Some(c.clone()), secs)))
            }
            _ => (grid, baseline, Some((c, secs))),
        }
    } else {
        (grid, baseline, None)
    };
    let opts = &opts;
    // Each configuration's id, for the combined block to name its row.
    let grid_ids: Vec<(crate::detect::DetectorConfig, String)> = if combined.is_some() {
        grid.variants
            .iter()
            .filter(|v| v.config.family == crate::score::combine::FAMILY)
            .map(|v| (v.config.clone(), v.id.clone()))
            .collect()
    } else {
        Vec::new()
    };
    // One bar over the bytes: every session is replayed under the whole grid
    // as soon as it is read.
    let progress = crate::progress::bytes_for_stderr(req.quiet, "sweeping");
    let (mut record, inputs, labels) = crate::sweep::run_sweep(
        inputs,
        req.test.len(),
        &read,
        grid,
        &labels_file,
        opts.record(),
        &workers,
        req.shard,
        progress.as_ref(),
    )?;
    progress.finish();
    // Every session is labelled: the labels file as read (a few MB for a
    // large corpus) is not needed by what follows.
    drop(labels_file);
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
    let result = workers.install(|| crate::score::analyze_with(record, baseline))?;
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
    let compared = earlier
        .map(|earlier| workers.install(|| crate::score::diff::diff(&earlier, &result)))
        .transpose()?;
    let mut ci = req.ci.clone();
    if let Some(d) = &compared {
        ci.append_markdown = crate::report::diff_out::markdown_within(
            d,
            &req.diff_shape,
            crate::report::diff_out::MARKDOWN_MAX - 8 * 1024,
        );
        // Shown with the score gates in the Markdown and JUnit files.
        ci.diff_gates = diff_gates(d, gates);
    }
    let writing = crate::progress::for_stderr(req.quiet, "writing outputs");
    let (mut code, mut brief) = finish_sweep(
        &result,
        &list,
        &workers,
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
        let results = std::mem::take(&mut ci.diff_gates);
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
    if let (Some((c, secs)), None) = (&combined, &brief) {
        let row = c.as_ref().and_then(|c| {
            grid_ids
                .iter()
                .find(|(cfg, _)| *cfg == c.config)
                .map(|(_, id)| id.as_str())
        });
        crate::report::combined::combined_block(&result, c.as_ref(), row, *secs, out)
            .map_err(|e| Error::io("<stdout>", e))?;
    }
    if let Some(b) = &brief {
        print_json(b, out)?;
    }
    release(result);
    Ok(code)
}

/// `--combine-rules`' search: a sweep of the grid's looptune configurations
/// and the baseline over the inputs (scored as the sweep will be), then the
/// greedy search on the labelled sessions read again.
fn combine_rules(
    req: &SweepRequest,
    grid: &crate::sweep::grid::Grid,
    baseline: crate::result::Baseline,
    opts: &crate::score::SweepOptions,
    read: &ReadOptions,
    labels_file: &crate::input::labels::LabelsFile,
    workers: &crate::util::pool::Workers,
) -> Result<Option<crate::score::combine::Combined>> {
    let steps = crate::score::combine::steps(grid.variants.iter().map(|v| &v.config))?;
    let mut part = grid.clone();
    part.variants = grid
        .variants
        .iter()
        .enumerate()
        .filter(|(i, v)| *i == baseline.index() || v.config.family == crate::score::combine::FAMILY)
        .map(|(_, v)| v.clone())
        .collect();
    let part_baseline =
        crate::result::find_baseline(&crate::sweep::grid_record(&part), opts.baseline.as_deref())?;
    // Only what the search reads: its rule, guard, folds and groups.
    let part_opts = crate::score::SweepOptions {
        across_families: false,
        combine: 0,
        chosen: None,
        ..opts.clone()
    };
    let mut paths = req.paths.clone();
    paths.extend(req.test.clone());
    let inputs = crate::input::InputList::walk(&paths, read.lenient);
    let progress = crate::progress::bytes_for_stderr(req.quiet, "searching rules");
    let (record, _, _) = crate::sweep::run_sweep(
        inputs,
        req.test.len(),
        read,
        part,
        labels_file,
        part_opts.record(),
        workers,
        req.shard,
        progress.as_ref(),
    )?;
    progress.finish();
    if record.sessions.is_empty() {
        return Ok(None);
    }
    let result = workers.install(|| crate::score::analyze_with(record, part_baseline))?;
    let corpus = crate::input::read_corpus(&req.paths, read)?;
    workers.install(|| crate::score::combine::search(&result, &steps, &corpus.sessions))
}

/// Write every output of an analysed result, print the summary and the gates.
/// With `ci.json`, nothing goes to `out`: the summary comes back as one
/// object, with the exit code.
/// `started` is when the command began, for the closing line's whole-run time;
/// `workers` are the command's threads, which write the outputs.
#[allow(clippy::too_many_arguments)]
pub(crate) fn finish_sweep(
    result: &crate::score::SweepResult,
    list: &crate::report::outputs::Outputs,
    workers: &crate::util::pool::Workers,
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
    // stages, writes (at once, on the workers) and checks each file.
    let mut set = crate::util::outdir::OutputSet::new();
    let mut report_failed = list.write_into(result, &mut set, out_dir, workers, progress, err)?;
    let chosen = &result.scores[result.chosen];
    let gate_results: Vec<crate::score::gates::GateResult> =
        gates.iter().map(|g| g.check(chosen)).collect();
    let all_gates: Vec<crate::score::gates::GateResult> =
        gate_results.iter().chain(&ci.diff_gates).cloned().collect();
    let rec = &result.record;
    let session_labels = crate::input::labels::Labels {
        by_session: rec.sessions.iter().map(|s| s.label()).collect(),
        ..Default::default()
    };
    let chosen_hits = result
        .dense(result.chosen)
        .map_err(Error::hits_unreadable)?;
    let chosen_view: Vec<Option<&crate::result::Hit>> =
        chosen_hits.iter().map(Option::as_ref).collect();
    let view = crate::report::ci::CiView {
        title: format!("sweep {}", rec.grid.name),
        labels: rec.grid.configs.iter().map(|v| v.label.clone()).collect(),
        scores: &result.scores,
        chosen: result.chosen,
        recommended: result.recommended,
        gates: &all_gates,
        sessions: &rec.sessions,
        session_labels: &session_labels,
        hits: &chosen_view,
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
