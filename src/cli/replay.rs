//! `looptune replay`.

use super::*;
use crate::error::{Error, Result, EXIT_GATE, EXIT_OK};
use crate::input::ReadOptions;
use crate::replay::ReplayOptions;
use crate::report::text::ConfigName;
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::PathBuf;

pub(super) const REPLAY_HELP: &str = "\
Examples:
  looptune replay fixtures/                      # gemini-latest on every session
  looptune replay --profile gemini-2025-07 --format json runs/*.jsonl
  looptune replay --set tool_call_threshold=3 --all session.jsonl.gz
  looptune replay --detector gemini,opencode,blade ~/.claude/projects
  looptune replay --fail-on-detection nightly/   # CI: exit 1 if anything fires
  looptune replay --config tuned.toml runs/      # the rule `export --for looptune` wrote

A detection is reported at the record that triggered it: `turn` per the spec,
`event` = 1-based index of the record in its session (every record counts).
Without --all each configuration reports its first detection (the original
detectors are sticky); --all clears the detection after each and goes on, as
Gemini CLI's recovery turn does, numbering strikes per prompt. Replay cannot
know how the model would have reacted to a warning: the recorded continuation
counts as the model not changing course.

Exit codes:
  0  ok: everything ran and was written
  1  --fail-on-detection or a gate (--require) tripped
  2  bad input, configuration or usage (FILE:LINE: what is wrong); nothing written
  3  a report (Markdown, JUnit) could not be written: neither was replaced";

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum Format {
    /// A table for people: sessions with a detection, then a summary.
    Table,
    /// One JSON object per session, sorted by session id.
    Json,
}

#[derive(Debug, Args)]
pub(super) struct ReplayArgs {
    #[command(flatten)]
    pub(super) input: InputArgs,
    #[command(flatten)]
    pub(super) detectors: DetectorArgs,
    /// Report every detection (clearDetection() after each), with its strike count.
    #[arg(help_heading = "Detectors", long)]
    pub(super) all: bool,
    /// Output format on stdout.
    #[arg(help_heading = "Outputs", long, value_enum, default_value = "table")]
    pub(super) format: Format,
    /// Worker threads for reading files and replaying (default: all cores). Output is identical for every value.
    #[arg(long, short = 'j', value_name = "N", default_value_t = 0)]
    pub(super) jobs: usize,
    /// Exit with code 1 when any session has a detection (a CI gate).
    #[arg(help_heading = "CI gates", long)]
    pub(super) fail_on_detection: bool,
    /// No progress bar.
    #[arg(long, short = 'q')]
    pub(super) quiet: bool,
    #[command(flatten)]
    pub(super) ci: CiOpts,
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
    /// Worker threads (`--jobs`: 0 = all cores), one pool for the whole command.
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

impl ReplayArgs {
    /// The request these arguments make (`--jobs` checked against its cap).
    pub(super) fn request(&self) -> Result<ReplayRequest> {
        crate::util::limits::check_jobs(self.jobs)?;
        // `--config FILE.toml`: the configuration `export --for looptune`
        // wrote, run alone (a profile name or id still picks the gated one).
        let (selection, config) = match &self.ci.config {
            Some(c) if c.ends_with(".toml") => {
                let d = &self.detectors;
                if !d.detector.is_empty() || !d.profile.is_empty() || !d.sets.is_empty() {
                    return Err(Error::Usage(format!(
                        "--config {c}: a configuration file is the whole selection; drop --detector, --profile and --set"
                    )));
                }
                let cfg = crate::export::config_file::load(std::path::Path::new(c))?;
                (crate::export::config_file::selection_of(&cfg)?, None)
            }
            _ => (selection(&self.detectors), self.ci.config.clone()),
        };
        Ok(ReplayRequest {
            paths: self.input.paths.clone(),
            read: self.input.read_options(false),
            selection,
            all: self.all,
            json: matches!(self.format, Format::Json),
            jobs: self.jobs,
            fail_on_detection: self.fail_on_detection,
            quiet: self.quiet,
            labels: self.ci.labels.clone(),
            config,
            ci: self.ci.ci(),
            allow_empty: self.input.allow_empty,
            strict_labels: self.ci.strict_labels,
        })
    }
}

/// Run `looptune replay`; writes to `out`, returns the exit code.
pub fn replay_command(req: &ReplayRequest, out: &mut dyn Write) -> Result<i32> {
    let workers = crate::util::pool::Workers::new(req.jobs)?;
    let configs = req.selection.resolve()?;
    if let Some(c) = &req.config {
        if !configs.iter().any(|x| &x.profile == c || x.family == c) {
            return Err(Error::Usage(format!(
                "--config `{c}`: not one of the selected profiles"
            )));
        }
    }
    // What it writes may not be what it reads (sessions, labels). The
    // inputs are walked once, for this guard and for the read.
    let inputs = crate::input::InputList::walk(&req.paths, req.read.lenient);
    check_output_folders(&req.ci.outputs(), None)?;
    guard_outputs(&req.ci.outputs(), Some(&inputs), &req.labels)?;
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
        inputs,
        &req.read,
        configs,
        &ReplayOptions { all: req.all },
        &workers,
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
    // Written whole at the end: stdout is line-buffered, a write call per
    // session's line otherwise.
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
    if req.json {
        crate::report::text::replay_json(&sessions, &names, req.all, &workers, &mut out)
            .map_err(io)?;
    } else {
        crate::report::text::replay_table(&sessions, &names, req.all, &mut out).map_err(io)?;
        crate::report::text::live_table(&sessions, &names, req.all, &mut out).map_err(io)?;
    }
    out.flush().map_err(io)?;
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
                let view: Vec<Option<crate::result::HitView>> =
                    hits.iter().map(|h| h.as_ref().map(|h| h.view())).collect();
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
