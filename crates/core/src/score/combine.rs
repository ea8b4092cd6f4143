//! The combined configuration (issue 45): one `looptune` configuration built
//! by greedy forward search over the looptune grid's settings, where the
//! grid only moves one rule's axes at a time away from `looptune-default`.
//!
//! A step is what one looptune configuration of the grid changes from
//! `looptune-default` (one axis value, or one point of an axis pair such as
//! `window_size=20 window_stop=4`), so a rule added to the family joins the
//! search with its grid axes. Each round replays the current configuration
//! plus every step still open as one [`Plan`]: configurations share their
//! checks by key, so a round costs the current configuration's rules once
//! plus one run of each step's changed rule, and the search costs about the
//! sum of the settings tried. Every configuration's hits are kept, so the
//! folds and the groups left out, which re-run the whole search, replay
//! only what an earlier search did not.
//!
//! The search replays the labelled sessions it is given (the sweep's record
//! holds first detections only, not each rule's), so it needs them parsed:
//! it is opt-in (`sweep --combine-rules`).

use crate::detect::{DetectorConfig, ParamValue};
use crate::error::{Error, Result};
use crate::event::Session;
use crate::replay::{Plan, ReplayOptions};
use crate::result::FoldChoice;
use crate::score::recommend::{self, CrossValidation, GroupValidation, Labelled, Tally};
use crate::score::{SweepOptions, SweepResult};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The family searched.
pub const FAMILY: &str = "looptune";
/// Where the search starts.
pub const START: &str = "looptune-default";

/// One setting the search may add: parameter values set together.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The values, by parameter name.
    pub values: Vec<(String, ParamValue)>,
}

impl Step {
    /// `name=value ...`, as grid labels write a change.
    pub fn label(&self) -> String {
        self.values
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Whether two steps set a parameter in common (one value per axis).
    pub fn conflicts(&self, other: &Step) -> bool {
        self.values
            .iter()
            .any(|(k, _)| other.values.iter().any(|(o, _)| o == k))
    }
}

/// The steps of a grid: each `looptune` configuration's values that differ
/// from `looptune-default`'s, in grid order, each once.
pub fn steps<'a>(configs: impl IntoIterator<Item = &'a DetectorConfig>) -> Result<Vec<Step>> {
    let start = DetectorConfig::resolve(Some(FAMILY), Some(START), &[])?;
    let mut out: Vec<Step> = Vec::new();
    for c in configs.into_iter().filter(|c| c.family == FAMILY) {
        let values: Vec<(String, ParamValue)> = c
            .params
            .0
            .iter()
            .filter(|(k, v)| start.params.0.get(*k) != Some(*v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let step = Step { values };
        if !step.values.is_empty() && !out.contains(&step) {
            out.push(step);
        }
    }
    Ok(out)
}

/// Replays sets of steps over the labelled sessions, each set once.
pub struct Evaluator<'a> {
    sessions: &'a [Arc<Session>],
    steps: &'a [Step],
    seen: Mutex<HashMap<Vec<usize>, Vec<Option<u32>>>>,
    checks: Mutex<usize>,
    failed: Mutex<Option<Error>>,
}

impl<'a> Evaluator<'a> {
    /// An evaluator of `steps` over `sessions` (labelled order).
    pub fn new(sessions: &'a [Arc<Session>], steps: &'a [Step]) -> Evaluator<'a> {
        Evaluator {
            sessions,
            steps,
            seen: Mutex::new(HashMap::new()),
            checks: Mutex::new(0),
            failed: Mutex::new(None),
        }
    }

    /// The configuration of a set of steps.
    pub fn config(&self, set: &[usize]) -> Result<DetectorConfig> {
        let values: Vec<(String, ParamValue)> = set
            .iter()
            .flat_map(|&s| self.steps[s].values.iter().cloned())
            .collect();
        DetectorConfig::resolve(Some(FAMILY), Some(START), &values)
    }

    /// Each set's first detection turn per session; sets not seen before
    /// are replayed together, sharing their checks. A failure is kept (see
    /// [`Evaluator::finish`]) and counts as no detection.
    pub fn evaluate(&self, sets: &[Vec<usize>]) -> Vec<Vec<Option<u32>>> {
        let key = |s: &Vec<usize>| {
            let mut k = s.clone();
            k.sort_unstable();
            k
        };
        type Seen = HashMap<Vec<usize>, Vec<Option<u32>>>;
        fn lock(m: &Mutex<Seen>) -> std::sync::MutexGuard<'_, Seen> {
            m.lock().unwrap_or_else(|e| e.into_inner())
        }
        let mut new: Vec<Vec<usize>> = {
            let seen = lock(&self.seen);
            sets.iter()
                .map(key)
                .filter(|k| !seen.contains_key(k))
                .collect()
        };
        new.sort();
        new.dedup();
        if !new.is_empty() {
            match self.replay(&new) {
                Ok(hits) => {
                    let mut seen = lock(&self.seen);
                    for (k, h) in new.into_iter().zip(hits) {
                        seen.insert(k, h);
                    }
                }
                Err(e) => {
                    self.failed
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get_or_insert(e);
                }
            }
        }
        let seen = lock(&self.seen);
        sets.iter()
            .map(|s| {
                seen.get(&key(s))
                    .cloned()
                    .unwrap_or_else(|| vec![None; self.sessions.len()])
            })
            .collect()
    }

    fn replay(&self, sets: &[Vec<usize>]) -> Result<Vec<Vec<Option<u32>>>> {
        let configs = sets
            .iter()
            .map(|s| self.config(s))
            .collect::<Result<Vec<_>>>()?;
        let plan = Plan::new(configs, &ReplayOptions { all: false })?;
        *self.checks.lock().unwrap_or_else(|e| e.into_inner()) += plan.distinct_checks();
        let per_session: Vec<Vec<Option<u32>>> = self
            .sessions
            .par_iter()
            .map(|s| {
                let sb = plan.session_briefs(s.clone());
                sb.briefs
                    .iter()
                    .map(|b| b.first.map(|f| sb.detection(f).turn))
                    .collect()
            })
            .collect();
        Ok((0..sets.len())
            .map(|c| per_session.iter().map(|h| h[c]).collect())
            .collect())
    }

    /// Configurations replayed and checks run (after sharing), so far.
    pub fn cost(&self) -> (usize, usize) {
        (
            self.seen.lock().unwrap_or_else(|e| e.into_inner()).len(),
            *self.checks.lock().unwrap_or_else(|e| e.into_inner()),
        )
    }

    /// The first failure, if any.
    pub fn finish(&self) -> Result<()> {
        match self.failed.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// The combined configuration and how its search validates.
#[derive(Debug, Clone)]
pub struct Combined {
    /// The configuration.
    pub config: DetectorConfig,
    /// `looptune-default` then each step added, ` + `-separated.
    pub label: String,
    /// The steps' labels, in the order the search added them.
    pub path: Vec<String>,
    /// Its tally on the labelled sessions chosen on.
    pub tally: Tally,
    /// The baseline's, on the same sessions.
    pub baseline: Tally,
    /// The whole search re-run in each fold.
    pub cross_validation: Option<CrossValidation>,
    /// The whole search re-run without each group.
    pub group_validation: Option<GroupValidation>,
    /// Steps the grid offers.
    pub steps: usize,
    /// Distinct configurations replayed, and checks run, over every search.
    pub cost: (usize, usize),
    /// Each re-run's choice (folds, then groups left out).
    pub folds: Vec<FoldChoice>,
}

/// Search the combined configuration on the labelled sessions of `r` (test
/// sessions left out), under `r`'s rule and guard, against its baseline;
/// `sessions` holds (at least) every labelled session, parsed. `None` when
/// no labelled loop, no step, or nothing meets the rule.
pub fn search(
    r: &SweepResult,
    steps: &[Step],
    sessions: &[Arc<Session>],
) -> Result<Option<Combined>> {
    let opts = SweepOptions::from_record(&r.record.options)?;
    let by_session: Vec<Option<crate::event::Label>> = r
        .record
        .sessions
        .iter()
        .map(|s| s.label().filter(|_| !s.is_test()))
        .collect();
    let labelled = Labelled::from_labels(&by_session);
    if labelled.counts().0 == 0 || steps.is_empty() {
        return Ok(None);
    }
    let by_id: HashMap<&str, &Arc<Session>> = sessions.iter().map(|s| (s.id.as_str(), s)).collect();
    let mine = labelled
        .session
        .iter()
        .map(|&i| {
            let id = &r.record.sessions[i].id;
            by_id.get(id.as_str()).map(|s| (*s).clone()).ok_or_else(|| {
                Error::Usage(format!(
                    "--combine-rules: labelled session `{id}` was not read again"
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut at = vec![None; r.record.sessions.len()];
    for (j, &s) in labelled.session.iter().enumerate() {
        at[s] = Some(j);
    }
    let mut base_hits = vec![None; labelled.len()];
    r.record
        .outcomes
        .each(r.baseline, |s, h| {
            if let Some(j) = at[s as usize] {
                base_hits[j] = h.first.as_ref().map(|d| d.turn);
            }
        })
        .map_err(Error::hits_unreadable)?;
    let group: Vec<u32> = labelled.session.iter().map(|&s| r.groups.of[s]).collect();
    let n_groups = r.groups.names.len();
    let eval = Evaluator::new(&mine, steps);
    let evaluate = |sets: &[Vec<usize>]| eval.evaluate(sets);
    let conflicts = |a: usize, b: usize| steps[a].conflicts(&steps[b]);
    let choose = |keep: &(dyn Fn(usize) -> bool + Sync)| {
        let guard = opts.guard.per_group().then(|| {
            recommend::GroupGuard::with_rule(
                opts.guard, &labelled, &group, n_groups, &base_hits, keep,
            )
        });
        let base = recommend::tally(&labelled, &base_hits, keep);
        recommend::forward_rules(
            steps.len(),
            &conflicts,
            &evaluate,
            guard.as_ref(),
            &labelled,
            &opts.objective,
            &base,
            keep,
        )
        .map(|p| (p.steps, p.hits))
    };
    let Some((path, hits)) = choose(&|_| true) else {
        eval.finish()?;
        return Ok(None);
    };
    // Each re-run's choice, kept for the recommendation's own folds (the
    // same folds: same labelled sessions, seed and groups).
    let folds: Mutex<Vec<FoldChoice>> = Mutex::new(Vec::new());
    let choose_kept = |keep: &(dyn Fn(usize) -> bool + Sync)| {
        let chosen = choose(keep);
        let turns = chosen
            .as_ref()
            .map_or_else(|| vec![None; labelled.len()], |(_, h)| h.clone());
        folds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(FoldChoice::new(labelled.len(), keep, turns));
        chosen
    };
    let cross_validation = recommend::fold_count(opts.folds, &labelled)
        .map(|k| recommend::cross_validate(&labelled, k, opts.seed, &choose_kept));
    let group_validation = recommend::leave_one_group_out(
        &labelled,
        &r.groups.by,
        &group,
        &r.groups.names,
        &choose_kept,
    );
    eval.finish()?;
    let labels: Vec<String> = path.iter().map(|&s| steps[s].label()).collect();
    Ok(Some(Combined {
        config: eval.config(&path)?,
        label: std::iter::once(START.to_string())
            .chain(labels.iter().cloned())
            .collect::<Vec<_>>()
            .join(" + "),
        path: labels,
        tally: recommend::tally(&labelled, &hits, |_| true),
        baseline: recommend::tally(&labelled, &base_hits, |_| true),
        cross_validation,
        group_validation,
        steps: steps.len(),
        cost: eval.cost(),
        folds: folds.into_inner().unwrap_or_else(|e| e.into_inner()),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn looptune(set: &[(&str, ParamValue)]) -> DetectorConfig {
        let v: Vec<(String, ParamValue)> = set
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        DetectorConfig::resolve(Some(FAMILY), Some(START), &v).unwrap()
    }

    #[test]
    fn steps_are_what_each_looptune_configuration_changes_each_once() {
        let pair = looptune(&[
            ("window_size", ParamValue::Int(20)),
            ("window_stop", ParamValue::Int(4)),
        ]);
        let configs = [
            looptune(&[]),
            looptune(&[("repeat_stop", ParamValue::Int(3))]),
            DetectorConfig::resolve(Some("gemini"), Some("gemini-latest"), &[]).unwrap(),
            looptune(&[("repeat_stop", ParamValue::Int(3))]),
            // The default's own value changes nothing: no step.
            looptune(&[("repeat_stop", ParamValue::Int(5))]),
            pair,
            looptune(&[("repeat_stop", ParamValue::Int(0))]),
        ];
        let s = steps(configs.iter()).unwrap();
        let labels: Vec<String> = s.iter().map(Step::label).collect();
        assert_eq!(
            labels,
            [
                "repeat_stop=3",
                "window_size=20 window_stop=4",
                "repeat_stop=0"
            ]
        );
        assert!(s[0].conflicts(&s[2]));
        assert!(!s[0].conflicts(&s[1]));
    }

    #[test]
    fn a_set_of_steps_is_its_values_on_the_default_in_any_order() {
        let s = vec![
            Step {
                values: vec![("repeat_stop".into(), ParamValue::Int(3))],
            },
            Step {
                values: vec![("stall_stop".into(), ParamValue::Int(4))],
            },
        ];
        let e = Evaluator::new(&[], &s);
        let both = e.config(&[0, 1]).unwrap();
        assert_eq!(both.params.0["repeat_stop"], ParamValue::Int(3));
        assert_eq!(both.params.0["stall_stop"], ParamValue::Int(4));
        assert_eq!(both.params, e.config(&[1, 0]).unwrap().params);
        // No sessions: every set's hits are empty, and nothing failed.
        assert_eq!(
            e.evaluate(&[vec![0], vec![1, 0]]),
            vec![Vec::new(), Vec::new()]
        );
        assert_eq!(e.cost().0, 2);
        e.finish().unwrap();
    }
}
