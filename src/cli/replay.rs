//! `looptune replay`.

use super::*;
use crate::error::{Error, Result, EXIT_GATE, EXIT_OK};
use crate::input::ReadOptions;
use crate::replay::ReplayOptions;
use crate::report::text::ConfigName;
use std::io::Write;
use std::path::PathBuf;

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
