//! What changed between two results of the same grid: per configuration, the
//! sessions whose verdict changed, and the score deltas with their intervals.
//! Used by `looptune diff BASE NEW` and by `sweep --baseline DIR`, so a
//! nightly job can fail when a detector regresses on the same logs.

use crate::result::{Hit, SweepRecord};
use crate::score::metrics::{verdict_at, Scores};
use crate::score::SweepResult;
use rayon::prelude::*;
use std::collections::BTreeMap;

/// Counts a diff gate can check (`--require 'new_false_positives==0'`).
pub const DIFF_SCORES: &[&str] = &[
    "changed_verdicts",
    "new_false_positives",
    "new_missed_loops",
    "fixed_false_positives",
    "new_catches",
];

/// One session whose verdict changed under one configuration.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Change {
    /// Configuration id.
    pub config: String,
    /// Session id.
    pub session: String,
    /// Verdict before: `tp`, `early`, `fp`, `fn`, `tn`, `unlabeled`, `quiet` or `absent`.
    pub base: &'static str,
    /// Verdict after.
    pub new: &'static str,
    /// First detection turn before.
    pub base_turn: Option<u32>,
    /// First detection turn after.
    pub new_turn: Option<u32>,
    /// Why it changed: `detector` (the session is in both runs, labelled
    /// alike: the configuration's own doing), `added` or `removed` (the
    /// session is in one run only), `relabelled` (its label or onset
    /// changed). Only `detector` changes count in the gates: a night whose
    /// logs or labels grew is not a regression.
    pub cause: &'static str,
}

/// [`Change::cause`] of a change the configuration made.
pub const DETECTOR: &str = "detector";

/// One configuration's side of the diff.
#[derive(Debug, Clone)]
pub struct ConfigDiff {
    /// Configuration id.
    pub config: String,
    /// Its label.
    pub label: String,
    /// Scores before (`None`: not in the base run).
    pub base: Option<Scores>,
    /// Scores after (`None`: not in the new run).
    pub new: Option<Scores>,
    /// Sessions whose verdict changed.
    pub changes: Vec<Change>,
}

impl ConfigDiff {
    /// A diff count by name (see [`DIFF_SCORES`]).
    /// Only changes the configuration made count ([`Change::cause`]).
    pub fn count(&self, name: &str) -> Option<f64> {
        let n =
            |pred: &dyn Fn(&Change) -> bool| self.detector_changes().filter(|c| pred(c)).count();
        Some(match name {
            "changed_verdicts" => self.detector_changes().count(),
            "new_false_positives" => n(&|c| c.new == "fp" && c.base != "fp"),
            "new_missed_loops" => n(&|c| c.new == "fn" && c.base != "fn"),
            "fixed_false_positives" => n(&|c| c.base == "fp" && c.new != "fp"),
            "new_catches" => n(&|c| matches!(c.new, "tp" | "early") && c.base == "fn"),
            _ => return None,
        } as f64)
    }

    /// The changes the configuration made (sessions in both runs, labelled alike).
    pub fn detector_changes(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| c.cause == DETECTOR)
    }

    /// How many changes came from the data: sessions added, removed or relabelled.
    pub fn data_changes(&self) -> usize {
        self.changes.iter().filter(|c| c.cause != DETECTOR).count()
    }
}

/// The diff of two results.
#[derive(Debug, Clone)]
pub struct Diff {
    /// Per configuration present in either run, in the new run's grid order
    /// (then configurations only the base run has).
    pub configs: Vec<ConfigDiff>,
    /// Sessions only in the base run.
    pub sessions_removed: Vec<String>,
    /// Sessions only in the new run.
    pub sessions_added: Vec<String>,
    /// Sessions in both runs whose label or onset changed.
    pub sessions_relabelled: Vec<String>,
    /// The configuration gates check (the new run's chosen one).
    pub chosen: usize,
    /// When the base run gated another configuration: its id and label,
    /// which the gated one is compared with (its entry in `configs`).
    pub gated_against: Option<(String, String)>,
    /// The grids' names: base, new.
    pub grids: (String, String),
}

impl Diff {
    /// Configurations in both runs, only in the base run, only in the new run.
    pub fn config_counts(&self) -> (usize, usize, usize) {
        let mut n = (0, 0, 0);
        for c in &self.configs {
            match (&c.base, &c.new) {
                (Some(_), Some(_)) => n.0 += 1,
                (Some(_), None) => n.1 += 1,
                _ => n.2 += 1,
            }
        }
        n
    }

    /// The runs come from different grids: some configuration is in one only.
    pub fn grids_differ(&self) -> bool {
        let (_, only_base, only_new) = self.config_counts();
        only_base + only_new > 0
    }
}

fn verdict_name(hit: Option<&Hit>, s: Option<&crate::result::SessionRecord>) -> &'static str {
    let Some(s) = s else { return "absent" };
    let (v, _) = verdict_at(hit.and_then(Hit::turn), s.label());
    v.as_str()
}

/// Compare two analysed results.
pub fn diff(base: &SweepResult, new: &SweepResult) -> crate::error::Result<Diff> {
    let (b, n) = (&base.record, &new.record);
    let b_sessions: BTreeMap<&str, usize> = index(b);
    let n_sessions: BTreeMap<&str, usize> = index(n);
    let mut ids: Vec<&str> = b_sessions
        .keys()
        .chain(n_sessions.keys())
        .copied()
        .collect();
    ids.sort_unstable();
    ids.dedup();
    // Each id's place in either run, found once: looked up again for every
    // configuration, they were most of a large diff's time (1,000 x 100,000).
    let places: Vec<(Option<usize>, Option<usize>)> = ids
        .iter()
        .map(|id| (b_sessions.get(id).copied(), n_sessions.get(id).copied()))
        .collect();
    // Why a session's verdict may change other than by the detector.
    let causes: Vec<&'static str> = places
        .iter()
        .map(|&(bs, ns)| match (bs, ns) {
            (None, _) => "added",
            (_, None) => "removed",
            (Some(x), Some(y)) => {
                let (x, y) = (&b.sessions[x], &n.sessions[y]);
                if (&x.label, x.onset_turn) == (&y.label, y.onset_turn) {
                    DETECTOR
                } else {
                    "relabelled"
                }
            }
        })
        .collect();
    let b_configs: BTreeMap<&str, usize> = b
        .grid
        .configs
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id.as_str(), i))
        .collect();
    // The gated configuration is held to the one the base run gated: a
    // nightly job that ships another setting tonight is asked whether it
    // loses what last night's caught, not whether it changed since then.
    let gated_base = (b.grid.configs.get(base.chosen).map(|c| &c.id)
        != n.grid.configs.get(new.chosen).map(|c| &c.id))
    .then_some(base.chosen)
    .filter(|&i| i < b.grid.configs.len());
    let mut order: Vec<(Option<usize>, Option<usize>)> = n
        .grid
        .configs
        .iter()
        .enumerate()
        .map(|(i, c)| match gated_base {
            Some(g) if i == new.chosen => (Some(g), Some(i)),
            _ => (b_configs.get(c.id.as_str()).copied(), Some(i)),
        })
        .collect();
    let n_configs: std::collections::HashSet<&str> =
        n.grid.configs.iter().map(|c| c.id.as_str()).collect();
    for (i, c) in b.grid.configs.iter().enumerate() {
        if !n_configs.contains(c.id.as_str()) {
            order.push((Some(i), None));
        }
    }
    // Configurations are compared apart: in parallel (the caller's pool).
    let configs = order
        .into_par_iter()
        .map(|(bi, ni)| {
            let bd = bi.map(|i| base.dense(i)).transpose()?;
            let nd = ni.map(|i| new.dense(i)).transpose()?;
            let c = ni
                .map(|i| &n.grid.configs[i])
                .or(bi.map(|i| &b.grid.configs[i]))
                .expect("in one run at least");
            let mut changes = Vec::new();
            for ((id, &(bs, ns)), &cause) in ids.iter().zip(&places).zip(&causes) {
                let bh = bd.as_ref().zip(bs).and_then(|(d, s)| d[s].as_ref());
                let nh = nd.as_ref().zip(ns).and_then(|(d, s)| d[s].as_ref());
                let bv = if bd.is_some() {
                    verdict_name(bh, bs.map(|s| &b.sessions[s]))
                } else {
                    "absent"
                };
                let nv = if nd.is_some() {
                    verdict_name(nh, ns.map(|s| &n.sessions[s]))
                } else {
                    "absent"
                };
                if bv != nv {
                    changes.push(Change {
                        config: c.id.clone(),
                        session: id.to_string(),
                        base: bv,
                        new: nv,
                        base_turn: bh.and_then(Hit::turn),
                        new_turn: nh.and_then(Hit::turn),
                        cause,
                    });
                }
            }
            Ok(ConfigDiff {
                config: c.id.clone(),
                label: c.label.clone(),
                base: bi.map(|i| base.scores[i].clone()),
                new: ni.map(|i| new.scores[i].clone()),
                changes,
            })
        })
        .collect::<std::io::Result<_>>()
        .map_err(crate::error::Error::hits_unreadable)?;
    Ok(Diff {
        configs,
        sessions_removed: ids
            .iter()
            .filter(|i| !n_sessions.contains_key(*i))
            .map(|s| s.to_string())
            .collect(),
        sessions_added: ids
            .iter()
            .filter(|i| !b_sessions.contains_key(*i))
            .map(|s| s.to_string())
            .collect(),
        sessions_relabelled: ids
            .iter()
            .zip(&causes)
            .filter(|(_, c)| **c == "relabelled")
            .map(|(s, _)| s.to_string())
            .collect(),
        chosen: new.chosen,
        gated_against: gated_base.map(|g| {
            let c = &b.grid.configs[g];
            (c.id.clone(), c.label.clone())
        }),
        grids: (b.grid.name.clone(), n.grid.name.clone()),
    })
}

fn index(r: &SweepRecord) -> BTreeMap<&str, usize> {
    r.sessions
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect()
}
