//! From a sweep's record to what a person reads: each configuration's
//! scores, the Pareto front, the recommendation against the baseline (with
//! the per-group guard), each family's best, the union, the cross-validated
//! and leave-one-group-out estimates and the scores on the test split. Pure:
//! everything here is derived from a [`SweepRecord`], so `report`, `merge`
//! and `diff` get the same answers from a saved `summary.json`.

use crate::detect::DetectorConfig;
use crate::error::Result;
use crate::result::{find_baseline, find_config, Baseline};
use crate::result::{ConfigRecord, Hit, HitView, SweepRecord};
use crate::score::metrics::{self, Objective, Scores};
use crate::score::recommend::{self, CrossValidation, Hits, Labelled, Tally};
use crate::score::stats;
use crate::score::{SweepOptions, FEW_LABELS};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};

/// A union of configurations as its own result row.
#[derive(Debug, Clone)]
pub struct UnionRow {
    /// Stable id (`u` + 10 hex digits of a digest of the member ids).
    pub id: String,
    /// Member labels joined by ` | `.
    pub label: String,
    /// Member configurations (grid indices), in the order they were added.
    pub members: Vec<usize>,
    /// Per session: what the member that fired first did.
    pub hits: Vec<Option<Hit>>,
    /// Scores of those outcomes.
    pub scores: Scores,
    /// The union search, cross-validated.
    pub cross_validation: Option<CrossValidation>,
    /// The union search, validated leaving one group out.
    pub group_validation: Option<recommend::GroupValidation>,
}

/// The recommendation and everything that qualifies it.
#[derive(Debug, Clone, Default)]
pub struct Advice {
    /// Why there is no recommendation (no labels, no loop, nothing meets the rule).
    pub reason: Option<String>,
    /// Warnings about the labels (too few to trust the figures).
    pub warnings: Vec<String>,
    /// Any family could win.
    pub across_families: bool,
    /// The best configuration of every family other than the baseline's,
    /// under the same rule (`None`: nothing in that family meets it).
    pub family_best: Vec<(String, Option<usize>)>,
    /// The choosing procedure, cross-validated.
    pub cross_validation: Option<CrossValidation>,
    /// Why there is no cross-validation.
    pub cv_reason: Option<String>,
    /// The best union (`--combine`).
    pub union: Option<UnionRow>,
    /// Bootstrap 95% intervals of the median turns-to-detection of the
    /// configurations the summary shows (grid index).
    pub ttd_ci: BTreeMap<usize, (f64, f64)>,
    /// The union's bootstrap interval.
    pub union_ttd_ci: Option<(f64, f64)>,
    /// Seed used.
    pub seed: u64,
    /// The guard the rule ran with.
    pub guard: recommend::Guard,
    /// What the per-group guard changed: why the pooled rule's choice was
    /// refused (`no change: ...` when the baseline stays).
    pub guard_note: Option<String>,
    /// The choosing procedure, validated leaving one group out.
    pub group_validation: Option<recommend::GroupValidation>,
    /// Why there is no leave-one-group-out validation.
    pub group_validation_reason: Option<String>,
    /// Shown configurations whose catches beyond the baseline come two
    /// thirds or more from one group.
    pub concentrated: Vec<Concentration>,
    /// The test sessions (`--test`, or `split` = `test`), scored once with
    /// what was chosen on the others.
    pub test: Option<TestScores>,
}

/// A configuration whose gain over the baseline comes mostly from one group.
#[derive(Debug, Clone, PartialEq)]
pub struct Concentration {
    /// Which row: a grid index, or `None` for the union.
    pub config: Option<usize>,
    /// The group.
    pub group: String,
    /// Loops it catches beyond the baseline in that group.
    pub from_group: u64,
    /// Loops it catches beyond the baseline in all.
    pub total: u64,
}

/// What was chosen, scored on the test sessions.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TestScores {
    /// Test sessions.
    pub sessions: usize,
    /// Of those, labelled loops and labelled clean sessions.
    pub loops: u64,
    /// Labelled clean test sessions.
    pub clean: u64,
    /// Per shown configuration (the role it has, as the summary names it:
    /// `baseline`, `recommended`, `best FAMILY`, `union`), its grid index
    /// (`None` for the union) and its tally on the test sessions.
    pub rows: Vec<(String, Option<usize>, Tally)>,
}

/// A result and everything derived from it; what the writers render.
#[derive(Debug)]
pub struct SweepResult {
    /// The result as data.
    pub record: SweepRecord,
    /// Scores per configuration (grid order).
    pub scores: Vec<Scores>,
    /// Configurations on the Pareto front.
    pub pareto: Vec<usize>,
    /// The recommended configuration.
    pub recommended: Option<usize>,
    /// The configuration gates and JUnit evaluate (the baseline, or `--config`).
    pub chosen: usize,
    /// The baseline the recommendation is compared with.
    pub baseline: usize,
    /// The recommendation rule.
    pub objective: Objective,
    /// What qualifies the recommendation.
    pub advice: Advice,
    /// Every session's group under `--group-by`.
    pub groups: GroupIndex,
    /// The cases the report and `summary.json` explain: where the baseline
    /// or the recommendation has a false positive or misses a loop.
    pub explained: Explained,
}

/// The false positives and missed loops of the baseline and the
/// recommendation that have lines to show, in order (the baseline's, then
/// the recommendation's; sessions in record order), with the hits they are
/// told with. Their lines stay where the record keeps them (on disk after a
/// large sweep) until each is written.
#[derive(Debug, Clone, Default)]
pub struct Explained {
    /// Each family's default profile: its first stock configuration in grid
    /// order (what "every family on this session" lists).
    pub families: Vec<usize>,
    /// The cases.
    pub cases: Vec<ExplainedCase>,
}

/// One false positive or missed loop of a shown configuration.
#[derive(Debug, Clone)]
pub struct ExplainedCase {
    /// The configuration (grid index).
    pub config: usize,
    /// The session (record index).
    pub session: usize,
    /// Its lines in the record's explanations.
    pub lines: crate::result::explain::Entry,
    /// The configuration's hit on the session.
    pub hit: Option<Hit>,
    /// Each of [`Explained::families`]' hit on the session.
    pub others: Vec<Option<Hit>>,
}

/// A row of the summary: its role, its grid index (`None`: the union), and
/// its hits per session.
pub type ShownRow = (String, Option<usize>, Vec<Option<Hit>>);

/// Sessions grouped by one key: the group names (sorted) and each session's.
#[derive(Debug, Clone, Default)]
pub struct GroupIndex {
    /// The key (`agent`, `model`, `source`, a labels column).
    pub by: String,
    /// Group names, sorted.
    pub names: Vec<String>,
    /// Per session (record order), the index of its group in `names`.
    pub of: Vec<u32>,
}

impl GroupIndex {
    /// Group a record's sessions by `key`.
    pub fn of_record(record: &SweepRecord, key: &str) -> GroupIndex {
        let names: Vec<String> = record
            .sessions
            .iter()
            .map(|s| s.group(key).to_string())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let of = record
            .sessions
            .iter()
            .map(|s| {
                names
                    .binary_search_by(|n| n.as_str().cmp(s.group(key)))
                    .unwrap_or(0) as u32
            })
            .collect();
        GroupIndex {
            by: key.to_string(),
            names,
            of,
        }
    }
}

/// What a fold's choice of the `--combine-rules` row stands for.
pub const COMBINED_IN_FOLD: &str =
    "the --combine-rules search, re-run without the held-out sessions";

impl SweepResult {
    /// Configuration i.
    pub fn config(&self, i: usize) -> &ConfigRecord {
        &self.record.grid.configs[i]
    }

    /// Label of configuration i.
    pub fn label(&self, i: usize) -> &str {
        &self.record.grid.configs[i].label
    }

    /// Configuration i's name where a fold or a left-out group chose it:
    /// the row `--combine-rules` added stands there for its search re-run
    /// on that fold's sessions, whose path may differ from the row's.
    pub fn fold_label(&self, i: usize) -> &str {
        let o = &self.record.options;
        match &o.combined {
            Some(id) if *id == self.config(i).id && !o.combined_folds.is_empty() => {
                COMBINED_IN_FOLD
            }
            _ => self.label(i),
        }
    }

    /// Configuration i's hits, one entry per session.
    pub fn dense(&self, i: usize) -> std::io::Result<Vec<Option<Hit>>> {
        self.record.outcomes.dense(i)
    }

    /// Scores of `hits` (one per session) in every group, as the in-sample
    /// scores count them (test sessions' labels hidden); they add up to the
    /// pooled counts.
    pub fn group_scores<H: std::borrow::Borrow<Hit>>(&self, hits: &[Option<H>]) -> Vec<Scores> {
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); self.groups.names.len()];
        for (s, &g) in self.groups.of.iter().enumerate() {
            members[g as usize].push(s);
        }
        members
            .iter()
            .map(|m| {
                let view: Vec<Option<HitView>> = m
                    .iter()
                    .map(|&s| hits[s].as_ref().map(|h| h.borrow().view()))
                    .collect();
                metrics::score_hits(&view, |i| {
                    let s = &self.record.sessions[m[i]];
                    (s.turns, s.label().filter(|_| !s.is_test()))
                })
            })
            .collect()
    }

    /// [`SweepResult::group_scores`] of configuration `c`; with one group,
    /// its pooled scores as they are.
    pub fn config_group_scores(&self, c: usize) -> std::io::Result<Vec<Scores>> {
        Ok(if self.groups.names.len() <= 1 {
            vec![self.scores[c].clone()]
        } else {
            self.group_scores(&self.dense(c)?)
        })
    }

    /// The rows the summary shows, in its order: role, grid index (`None`
    /// for the union), and hits per session.
    pub fn shown(&self) -> std::io::Result<Vec<ShownRow>> {
        let mut rows = vec![(
            "baseline".to_string(),
            Some(self.baseline),
            self.dense(self.baseline)?,
        )];
        if let Some(c) = self.recommended {
            rows.push(("recommended".into(), Some(c), self.dense(c)?));
        }
        for (f, best) in &self.advice.family_best {
            if let Some(c) = best {
                rows.push((format!("best {f}"), Some(*c), self.dense(*c)?));
            }
        }
        if let Some(u) = &self.advice.union {
            rows.push(("union".into(), None, u.hits.clone()));
        }
        Ok(rows)
    }
}

/// Derive scores, the Pareto front and the recommendation from a result
/// (its baseline found on its grid: a loaded record's).
pub fn analyze(record: SweepRecord) -> Result<SweepResult> {
    let opts = SweepOptions::from_record(&record.options)?;
    let baseline = find_baseline(&record.grid, opts.baseline.as_deref())?;
    analyze_options(record, opts, baseline)
}

/// [`analyze`] with the baseline the command found on the record's grid
/// before the record was made (`sweep`), not looked up again.
pub fn analyze_with(record: SweepRecord, baseline: Baseline) -> Result<SweepResult> {
    let opts = SweepOptions::from_record(&record.options)?;
    analyze_options(record, opts, baseline)
}

fn analyze_options(
    record: SweepRecord,
    opts: SweepOptions,
    baseline: Baseline,
) -> Result<SweepResult> {
    let baseline = baseline.index();
    let chosen = match &opts.chosen {
        None => baseline,
        Some(c) => find_config(&record.grid, c)?,
    };
    // Test sessions' labels are hidden from every in-sample score: a test
    // label must never change a choice.
    let sessions: Vec<(u32, Option<crate::event::Label>)> = record
        .sessions
        .iter()
        .map(|s| (s.turns, s.label().filter(|_| !s.is_test())))
        .collect();
    let groups = GroupIndex::of_record(&record, &opts.group_by);
    // Configurations are scored apart: in parallel (the caller's pool).
    let scores: Vec<Scores> = (0..record.outcomes.len())
        .into_par_iter()
        .map(|c| {
            let view = record.outcomes.views(c)?;
            Ok(metrics::score_hits(&view, |i| sessions[i]))
        })
        .collect::<std::io::Result<_>>()
        .map_err(crate::error::Error::hits_unreadable)?;
    let pareto = metrics::pareto(&scores);
    let mut result = SweepResult {
        record,
        scores,
        pareto,
        recommended: None,
        chosen,
        baseline,
        objective: opts.objective.clone(),
        advice: Advice::default(),
        groups,
        explained: Explained::default(),
    };
    let (recommended, advice) =
        advise(&result, &opts).map_err(crate::error::Error::hits_unreadable)?;
    result.recommended = recommended;
    result.advice = advice;
    result.explained = shown_explanations(&result).map_err(crate::error::Error::hits_unreadable)?;
    Ok(result)
}

/// The first failure to read hits back in a pass that reads configurations
/// through many closures (the advice): a failed read counts as no hit and
/// is kept here, and the pass ends in that error, so nothing is made of it.
#[derive(Default)]
struct Reads(std::sync::Mutex<Option<std::io::Error>>);

impl Reads {
    /// `read`'s value, or `none()` with the failure kept.
    fn or<T>(&self, read: std::io::Result<T>, none: impl FnOnce() -> T) -> T {
        read.unwrap_or_else(|e| {
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert(e);
            none()
        })
    }

    /// The first failure, if any.
    fn end(self) -> std::io::Result<()> {
        match self.0.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// The cases where the baseline or the recommendation has a false positive
/// or misses a loop, on sessions the record has lines for.
fn shown_explanations(r: &SweepResult) -> std::io::Result<Explained> {
    use crate::score::metrics::{verdict_at, Verdict};
    let rec = &r.record;
    let mut configs = vec![r.baseline];
    configs.extend(r.recommended.filter(|&c| c != r.baseline));
    let mut families: Vec<usize> = Vec::new();
    for (i, c) in rec.grid.configs.iter().enumerate() {
        if c.stock
            && !families
                .iter()
                .any(|&f| rec.grid.configs[f].family == c.family)
        {
            families.push(i);
        }
    }
    let mut wanted: Vec<(usize, usize, Option<Hit>)> = Vec::new();
    for &c in &configs {
        for (si, (s, hit)) in rec.sessions.iter().zip(r.dense(c)?).enumerate() {
            let (v, _) = verdict_at(hit.as_ref().and_then(Hit::turn), s.label());
            if matches!(v, Verdict::FalsePositive | Verdict::Missed) {
                wanted.push((c, si, hit));
            }
        }
    }
    let ids: std::collections::HashSet<&str> = wanted
        .iter()
        .map(|&(_, si, _)| rec.sessions[si].id.as_str())
        .collect();
    let entries = rec.explain.find(|id| ids.contains(id));
    let mut cases: Vec<ExplainedCase> = wanted
        .into_iter()
        .filter_map(|(config, session, hit)| {
            Some(ExplainedCase {
                config,
                session,
                lines: *entries.get(rec.sessions[session].id.as_str())?,
                hit,
                others: Vec::with_capacity(families.len()),
            })
        })
        .collect();
    // The families' hits on just these sessions, one configuration at a time.
    for &f in &families {
        let mut on: HashMap<usize, Option<Hit>> = cases.iter().map(|c| (c.session, None)).collect();
        for h in rec.outcomes.hits(f)? {
            if let Some(slot) = on.get_mut(&(h.session as usize)) {
                *slot = Some(h);
            }
        }
        for c in &mut cases {
            c.others.push(on[&c.session].clone());
        }
    }
    Ok(Explained { families, cases })
}

/// The distance of any configuration of another family from the baseline,
/// before its own parameters count.
const OTHER_FAMILY: usize = 1 << 20;

/// How many parameter values `cfg` changes from `reference`.
fn distance(cfg: &BTreeMap<String, String>, reference: &BTreeMap<String, String>) -> usize {
    cfg.iter()
        .filter(|(k, v)| reference.get(*k) != Some(v))
        .count()
}

/// First detection turns of configuration `c` on the sessions `at` indexes
/// (`at[session]` = its place in a [`Labelled`] of `len` sessions).
fn turns_on(
    r: &SweepResult,
    at: &[Option<u32>],
    len: usize,
    c: usize,
    reads: &Reads,
) -> Vec<Option<u32>> {
    let mut v = vec![None; len];
    let read = r.record.outcomes.each(c, |s, h| {
        if let Some(j) = at[s as usize] {
            v[j as usize] = h.first.as_ref().map(|d| d.turn);
        }
    });
    reads.or(read.map(|()| v), || vec![None; len])
}

/// Where each session sits in `labelled` (`None`: not in it).
fn places(labelled: &Labelled, sessions: usize) -> Vec<Option<u32>> {
    let mut at = vec![None; sessions];
    for (j, &s) in labelled.session.iter().enumerate() {
        at[s] = Some(j as u32);
    }
    at
}

/// How far each configuration moves from the baseline (ties in the
/// choice go to the nearest): parameters changed within the baseline's
/// family, from the family's default profile elsewhere, plus a family's
/// worth for leaving the baseline's.
pub(crate) fn distances(configs: &[crate::result::ConfigRecord], baseline: usize) -> Vec<usize> {
    let baseline_cfg = &configs[baseline];
    // Distance from the baseline in its family, from the family's default
    // profile elsewhere (its first stock configuration when the registry
    // does not know it).
    let mut defaults: BTreeMap<&str, BTreeMap<String, String>> = BTreeMap::new();
    for c in configs
        .iter()
        .filter(|c| c.stock && c.family != baseline_cfg.family)
    {
        let default_profile = DetectorConfig::resolve(Some(&c.family), None, &[])
            .ok()
            .map(|d| d.profile);
        let is_default = default_profile.as_deref().is_none_or(|p| p == c.profile);
        if is_default && !defaults.contains_key(c.family.as_str()) {
            defaults.insert(&c.family, c.params.clone());
        }
    }
    // Another family is the largest change of all: on equal scores the
    // baseline's family wins (distances only break ties, and within one
    // family the offset changes no order).
    configs
        .iter()
        .map(|v| match defaults.get(v.family.as_str()) {
            Some(d) => OTHER_FAMILY + distance(&v.params, d),
            None if v.family != baseline_cfg.family => {
                OTHER_FAMILY + distance(&v.params, &baseline_cfg.params)
            }
            None => distance(&v.params, &baseline_cfg.params),
        })
        .collect()
}

/// The recommendation, its qualifications, and the union.
fn advise(r: &SweepResult, opts: &SweepOptions) -> std::io::Result<(Option<usize>, Advice)> {
    let reads = Reads::default();
    let mut advice = Advice {
        across_families: opts.across_families,
        seed: opts.seed,
        guard: opts.guard,
        ..Default::default()
    };
    let sessions = &r.record.sessions;
    // Only the sessions chosen on: test sessions are scored apart, at the end.
    let by_session: Vec<Option<crate::event::Label>> = sessions
        .iter()
        .map(|s| s.label().filter(|_| !s.is_test()))
        .collect();
    let labelled = Labelled::from_labels(&by_session);
    let (loops, clean) = labelled.counts();
    if labelled.is_empty() {
        advice.reason = Some(
            "no labelled sessions: a recommendation needs labels (--labels FILE or inline `label` records); the outputs still show how often each configuration fires".into(),
        );
        return Ok((None, advice));
    }
    if loops == 0 {
        advice.reason = Some(format!(
            "no labelled loops among the {clean} labelled sessions: recall is undefined, so nothing can be recommended; the outputs still show false positives"
        ));
        return Ok((None, advice));
    }
    if loops < FEW_LABELS || clean < FEW_LABELS {
        advice.warnings.push(format!(
            "only {loops} labelled loop{} and {clean} labelled clean session{}: intervals are wide and the choice may not carry over; label at least {FEW_LABELS} of each",
            if loops == 1 { "" } else { "s" },
            if clean == 1 { "" } else { "s" }
        ));
    }

    let configs = &r.record.grid.configs;
    let n = configs.len();
    let baseline_cfg = &configs[r.baseline];
    let family: Vec<&str> = configs.iter().map(|v| v.family.as_str()).collect();
    let dist = distances(configs, r.baseline);
    // First detection turns on the labelled sessions, one configuration at a
    // time: a table of every configuration (80 MB for 1,000 x 10,000) is
    // built only for the union search, which needs it.
    let labelled_at = places(&labelled, sessions.len());
    let turns = |c: usize| turns_on(r, &labelled_at, labelled.len(), c, &reads);
    let in_family: Vec<usize> = (0..n)
        .filter(|&c| opts.across_families || family[c] == baseline_cfg.family)
        .collect();
    let every: Vec<usize> = (0..n).collect();
    let objective = &r.objective;
    let base = r.baseline;
    let base_turns = turns(base);
    // Each labelled session's group, for the guard and the group folds.
    let group: Vec<u32> = labelled.session.iter().map(|&s| r.groups.of[s]).collect();
    let n_groups = r.groups.names.len();
    let guard_on = |keep: &dyn Fn(usize) -> bool| {
        opts.guard.per_group().then(|| {
            recommend::GroupGuard::with_rule(
                opts.guard,
                &labelled,
                &group,
                n_groups,
                &base_turns,
                keep,
            )
        })
    };
    // The candidates of `among` the guard lets through on `keep`.
    let admitted = |among: &[usize], keep: &(dyn Fn(usize) -> bool + Sync)| -> Vec<usize> {
        match guard_on(keep) {
            None => among.to_vec(),
            Some(g) => among
                .par_iter()
                .copied()
                .filter(|&c| g.admits(&labelled, &turns(c), keep))
                .collect(),
        }
    };

    let own_family: Vec<usize> = (0..n)
        .filter(|&c| family[c] == baseline_cfg.family)
        .collect();
    let in_family_mask: Vec<bool> = (0..n)
        .map(|c| in_family.binary_search(&c).is_ok())
        .collect();
    // The row `--combine-rules` added was searched on every labelled
    // session: in a fold or with a group left out, its place goes to the
    // search re-run on that fold's sessions (recorded by the search), and
    // where none was recorded the row is left out.
    let searched = opts
        .combined
        .as_ref()
        .and_then(|id| configs.iter().position(|c| &c.id == id));
    let fold_search = |keep: &(dyn Fn(usize) -> bool + Sync)| {
        let seen = crate::result::FoldChoice::mask(labelled.len(), keep);
        opts.combined_folds
            .iter()
            .find(|f| f.seen == seen && f.turns.len() == labelled.len())
            .map(|f| f.turns.clone())
    };
    let choose_in = |keep: &(dyn Fn(usize) -> bool + Sync), held_out: bool| {
        let own = searched.filter(|_| held_out).map(|_| fold_search(keep));
        let turns = |c: usize| match &own {
            Some(Some(t)) if searched == Some(c) => t.clone(),
            _ => turns(c),
        };
        // Each configuration's turns are found once per fold, for its tally
        // and the guard alike (a 10,000-session table per configuration).
        let guard = guard_on(keep);
        let (tallies, passes): (Vec<Tally>, Vec<bool>) = (0..n)
            .into_par_iter()
            .map(|c| {
                let h = turns(c);
                let passes = in_family_mask[c]
                    && !(searched == Some(c) && matches!(own, Some(None)))
                    && guard.as_ref().is_none_or(|g| g.admits(&labelled, &h, keep));
                (recommend::tally(&labelled, &h, keep), passes)
            })
            .unzip();
        let mut candidates: Vec<usize> = (0..n).filter(|&c| passes[c]).collect();
        // Across families, the guard's reference for another family is also
        // the best of the baseline's own family: switching detectors must not
        // cost any group what tuning the one you ship would give it (a rule
        // that sees one kind of loop can look best on logs that hold few of
        // the others).
        if opts.across_families && opts.guard.per_group() {
            let own: Vec<usize> = own_family.iter().copied().filter(|&c| passes[c]).collect();
            if let Some(o) = recommend::pick(&own, &tallies, &dist, objective, &tallies[base]) {
                let g = recommend::GroupGuard::with_rule(
                    opts.guard,
                    &labelled,
                    &group,
                    n_groups,
                    &turns(o),
                    keep,
                );
                candidates.retain(|&c| {
                    family[c] == baseline_cfg.family || g.admits(&labelled, &turns(c), keep)
                });
            }
        }
        recommend::pick(&candidates, &tallies, &dist, objective, &tallies[base])
            .map(|c| (vec![c], turns(c)))
    };
    let choose_single = |keep: &(dyn Fn(usize) -> bool + Sync)| choose_in(keep, true);
    let recommended = choose_in(&|_| true, false).map(|(m, _)| m[0]);
    if recommended.is_none() {
        advice.reason = Some(format!(
            "no configuration{} meets the rule: {}",
            if opts.across_families {
                String::new()
            } else {
                format!(" of family `{}`", baseline_cfg.family)
            },
            objective.describe()
        ));
    }

    // Every other family's best under the same rule (the baseline's cap).
    let all_tallies: Vec<Tally> = (0..n)
        .into_par_iter()
        .map(|c| recommend::tally(&labelled, &turns(c), |_| true))
        .collect();
    let mut seen: Vec<&str> = Vec::new();
    for &f in &family {
        if (f == baseline_cfg.family && !opts.across_families) || seen.contains(&f) {
            continue;
        }
        seen.push(f);
        let members: Vec<usize> = (0..n).filter(|&c| family[c] == f).collect();
        let members = admitted(&members, &|_| true);
        let best = recommend::pick(&members, &all_tallies, &dist, objective, &all_tallies[base]);
        advice.family_best.push((f.to_string(), best));
    }
    if let Some(g) = guard_on(&|_| true).filter(|g| g.rule() == recommend::Guard::Interval) {
        advice.guard_note = interval_note(
            r,
            &g,
            &labelled,
            &in_family,
            &all_tallies,
            &dist,
            recommended,
            &turns,
        );
    } else if let Some(g) = guard_on(&|_| true) {
        advice.guard_note = guard_note(
            r,
            &g,
            &labelled,
            &in_family,
            &all_tallies,
            &dist,
            recommended,
            &turns,
        );
    }

    match recommend::fold_count(opts.folds, &labelled) {
        Some(k) => {
            advice.cross_validation = Some(recommend::cross_validate(
                &labelled,
                k,
                opts.seed,
                &choose_single,
            ));
        }
        None => {
            advice.cv_reason = Some(format!(
                "cross-validation needs at least 2 labelled loops and --folds 2 or more ({loops} loop{}, --folds {})",
                if loops == 1 { "" } else { "s" },
                opts.folds
            ));
        }
    }
    advice.group_validation = recommend::leave_one_group_out(
        &labelled,
        &r.groups.by,
        &group,
        &r.groups.names,
        &choose_single,
    );
    if advice.group_validation.is_none() {
        advice.group_validation_reason = Some(format!(
            "every labelled session has the same {} ({}): no group to leave out",
            r.groups.by,
            group
                .first()
                .map_or(crate::result::UNKNOWN_GROUP, |&g| r.groups.names
                    [g as usize]
                    .as_str())
        ));
    }

    if opts.combine >= 2 {
        let hits: Hits = (0..n).map(turns).collect();
        let choose_union = |keep: &(dyn Fn(usize) -> bool + Sync)| {
            let guard = guard_on(keep);
            recommend::forward_union(
                guard.as_ref(),
                &labelled,
                &hits,
                &every,
                &family,
                &dist,
                objective,
                base,
                opts.combine,
                keep,
            )
            .map(|u| (u.members, u.hits))
        };
        if let Some((members, _)) = choose_union(&|_| true) {
            if members.len() >= 2 {
                let cv = recommend::fold_count(opts.folds, &labelled)
                    .map(|k| recommend::cross_validate(&labelled, k, opts.seed, &choose_union));
                let gv = recommend::leave_one_group_out(
                    &labelled,
                    &r.groups.by,
                    &group,
                    &r.groups.names,
                    &choose_union,
                );
                advice.union = Some(union_row(r, members, cv, gv, &reads));
            }
        }
    }

    // Bootstrap intervals of the medians the summary shows.
    let mut shown = vec![base];
    shown.extend(recommended);
    shown.extend(advice.family_best.iter().filter_map(|(_, b)| *b));
    for &c in &shown {
        if let Some(ci) = stats::bootstrap_median(&r.scores[c].ttd.to_vec(), opts.seed) {
            advice.ttd_ci.insert(c, ci);
        }
    }
    if let Some(u) = &advice.union {
        advice.union_ttd_ci = stats::bootstrap_median(&u.scores.ttd.to_vec(), opts.seed);
    }

    // Where each shown configuration's gain over the baseline comes from.
    let groups_with_loops = (0..n_groups)
        .filter(|&g| {
            group
                .iter()
                .zip(&labelled.label)
                .any(|(&x, l)| x as usize == g && l.is_loop)
        })
        .count();
    if groups_with_loops >= 2 {
        let mut rows: Vec<(Option<usize>, Vec<Option<u32>>)> = Vec::new();
        for &c in shown.iter().skip(1) {
            if !rows.iter().any(|(x, _)| *x == Some(c)) {
                rows.push((Some(c), turns(c)));
            }
        }
        if let Some(u) = &advice.union {
            let mut h = vec![None; labelled.len()];
            for (j, &s) in labelled.session.iter().enumerate() {
                h[j] = u.hits[s].as_ref().and_then(Hit::turn);
            }
            rows.push((None, h));
        }
        for (config, hits) in rows {
            let mut per = vec![0u64; n_groups];
            for (j, l) in labelled.label.iter().enumerate() {
                if l.is_loop && hits[j].is_some() && base_turns[j].is_none() {
                    per[group[j] as usize] += 1;
                }
            }
            let total: u64 = per.iter().sum();
            if let Some((g, &k)) = per
                .iter()
                .enumerate()
                .max_by_key(|(g, k)| (**k, std::cmp::Reverse(*g)))
            {
                if total > 0 && 3 * k >= 2 * total {
                    advice.concentrated.push(Concentration {
                        config,
                        group: r.groups.names[g].clone(),
                        from_group: k,
                        total,
                    });
                }
            }
        }
    }

    advice.test = test_scores(r, recommended, &advice, &reads);
    reads.end()?;
    Ok((recommended, advice))
}

/// Why the per-group guard refused what the pooled rule would choose, or
/// `None` when both rules choose alike.
#[allow(clippy::too_many_arguments)]
fn guard_note(
    r: &SweepResult,
    guard: &recommend::GroupGuard,
    labelled: &Labelled,
    candidates: &[usize],
    tallies: &[Tally],
    dist: &[usize],
    recommended: Option<usize>,
    turns: &(dyn Fn(usize) -> Vec<Option<u32>> + Sync),
) -> Option<String> {
    let base = r.baseline;
    let pooled = recommend::pick(candidates, tallies, dist, &r.objective, &tallies[base])?;
    if Some(pooled) == recommended {
        return None;
    }
    let names = |gs: &[usize]| {
        gs.iter()
            .map(|&g| r.groups.names[g].as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let keep_all: &dyn Fn(usize) -> bool = &|_| true;
    if recommended != Some(base) {
        let hurt = guard.hurt(labelled, &turns(pooled), keep_all);
        return Some(format!(
            "the pooled rule would choose {}, which is worse than the baseline for {} sessions ({}); the per-group guard keeps this choice (--guard pooled to allow it)",
            r.label(pooled),
            names(&hurt),
            r.groups.by
        ));
    }
    // The baseline stays: every candidate that beats it overall hurts some group.
    let better: Vec<usize> = candidates
        .iter()
        .copied()
        .filter(|&c| c != base && recommend::beats(&r.objective, &tallies[c], &tallies[base]))
        .filter(|&c| {
            recommend::cap_of(&r.objective, &tallies[base]).is_none_or(|m| tallies[c].fp <= m)
        })
        .collect();
    let mut count = vec![0usize; r.groups.names.len()];
    for &c in &better {
        for g in guard.hurt(labelled, &turns(c), keep_all) {
            count[g] += 1;
        }
    }
    let every: Vec<usize> = (0..count.len())
        .filter(|&g| count[g] == better.len() && !better.is_empty())
        .collect();
    Some(if !every.is_empty() {
        format!(
            "no change: every candidate that beats the baseline overall is worse than the baseline for {} sessions ({}; --guard pooled to allow it)",
            names(&every),
            r.groups.by
        )
    } else {
        let (g, k) = count
            .iter()
            .enumerate()
            .max_by_key(|(g, k)| (**k, std::cmp::Reverse(*g)))
            .map(|(g, k)| (g, *k))
            .unwrap_or((0, 0));
        format!(
            "no change: every candidate that beats the baseline overall is worse than the baseline for some {}'s sessions ({} of {} for {}; --guard pooled to allow it)",
            r.groups.by,
            k,
            better.len(),
            r.groups.names.get(g).map_or("", String::as_str)
        )
    })
}

/// What the interval guard weighed: the groups where the recommendation
/// does worse than the baseline (each within its interval, or it would not
/// be recommended), and the groups that vetoed the pooled rule's choice.
/// `None` when it weighed nothing.
#[allow(clippy::too_many_arguments)]
fn interval_note(
    r: &SweepResult,
    guard: &recommend::GroupGuard,
    labelled: &Labelled,
    candidates: &[usize],
    tallies: &[Tally],
    dist: &[usize],
    recommended: Option<usize>,
    turns: &(dyn Fn(usize) -> Vec<Option<u32>> + Sync),
) -> Option<String> {
    let base = r.baseline;
    let keep_all: &dyn Fn(usize) -> bool = &|_| true;
    let told = |ws: &[recommend::Weighed]| {
        ws.iter()
            .map(|w| {
                format!(
                    "{} ({}/{} loops against {}, {}/{} false positives against {})",
                    r.groups.names[w.group],
                    w.candidate.tp,
                    w.candidate.loops,
                    w.baseline.tp,
                    w.candidate.fp,
                    w.candidate.clean,
                    w.baseline.fp
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut parts = Vec::new();
    if let Some(c) = recommended.filter(|&c| c != base) {
        let weighed = guard.weigh(labelled, &turns(c), keep_all);
        if !weighed.is_empty() {
            parts.push(format!(
                "the interval guard weighed {} {}, where {} does worse than the baseline within what the group's size allows",
                weighed.len(),
                if weighed.len() == 1 { r.groups.by.clone() } else { format!("{}s", r.groups.by) },
                r.label(c)
            ) + &format!(": {}", told(&weighed)));
        }
    }
    if let Some(p) = recommend::pick(candidates, tallies, dist, &r.objective, &tallies[base])
        .filter(|&p| Some(p) != recommended)
    {
        let vetoes: Vec<recommend::Weighed> = guard
            .weigh(labelled, &turns(p), keep_all)
            .into_iter()
            .filter(|w| w.vetoes)
            .collect();
        parts.push(if vetoes.is_empty() {
            // Across families the reference is also the best of the
            // baseline's own family: that is what refused it.
            format!(
                "the pooled rule would choose {}, which loses beyond the interval against the best of the baseline's own family in some {}; the interval guard keeps this choice (--guard pooled to allow it)",
                r.label(p),
                r.groups.by
            )
        } else {
            format!(
                "the pooled rule would choose {}, which loses beyond the interval (95% Wilson, the baseline's counts) in {}; the interval guard keeps this choice (--guard pooled to allow it)",
                r.label(p),
                told(&vetoes)
            )
        });
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The shown configurations scored on the test sessions (`None` without any).
fn test_scores(
    r: &SweepResult,
    recommended: Option<usize>,
    a: &Advice,
    reads: &Reads,
) -> Option<TestScores> {
    let sessions = &r.record.sessions;
    if !sessions.iter().any(|s| s.is_test()) {
        return None;
    }
    let test_labels: Vec<Option<crate::event::Label>> = sessions
        .iter()
        .map(|s| s.label().filter(|_| s.is_test()))
        .collect();
    let labelled = Labelled::from_labels(&test_labels);
    let (loops, clean) = labelled.counts();
    let at = places(&labelled, sessions.len());
    let all = |_: usize| true;
    let mut rows = vec![(
        "baseline".to_string(),
        Some(r.baseline),
        recommend::tally(
            &labelled,
            &turns_on(r, &at, labelled.len(), r.baseline, reads),
            all,
        ),
    )];
    if let Some(c) = recommended {
        rows.push((
            "recommended".into(),
            Some(c),
            recommend::tally(&labelled, &turns_on(r, &at, labelled.len(), c, reads), all),
        ));
    }
    for (f, best) in &a.family_best {
        if let Some(c) = best {
            rows.push((
                format!("best {f}"),
                Some(*c),
                recommend::tally(&labelled, &turns_on(r, &at, labelled.len(), *c, reads), all),
            ));
        }
    }
    if let Some(u) = &a.union {
        let h: Vec<Option<u32>> = labelled
            .session
            .iter()
            .map(|&s| u.hits[s].as_ref().and_then(Hit::turn))
            .collect();
        rows.push(("union".into(), None, recommend::tally(&labelled, &h, all)));
    }
    Some(TestScores {
        sessions: sessions.iter().filter(|s| s.is_test()).count(),
        loops: loops as u64,
        clean: clean as u64,
        rows,
    })
}

/// Build a union's row: per session, what the member that fired first did
/// (earliest turn, then earliest event, then the first member).
fn union_row(
    r: &SweepResult,
    members: Vec<usize>,
    cross_validation: Option<CrossValidation>,
    group_validation: Option<recommend::GroupValidation>,
    reads: &Reads,
) -> UnionRow {
    let none = || vec![None; r.record.sessions.len()];
    let dense: Vec<Vec<Option<Hit>>> = members
        .iter()
        .map(|&m| reads.or(r.dense(m), none))
        .collect();
    let hits: Vec<Option<Hit>> = (0..r.record.sessions.len())
        .map(|s| {
            dense
                .iter()
                .filter_map(|d| d[s].as_ref())
                .filter(|h| h.first.is_some())
                .min_by_key(|h| {
                    let d = h.first.as_ref().expect("filtered");
                    (d.turn, d.event)
                })
                .cloned()
        })
        .collect();
    let view: Vec<Option<HitView>> = hits.iter().map(|h| h.as_ref().map(|h| h.view())).collect();
    let scores = metrics::score_hits(&view, |i| {
        let s = &r.record.sessions[i];
        (s.turns, s.label().filter(|_| !s.is_test()))
    });
    let ids: Vec<&str> = members.iter().map(|&m| r.config(m).id.as_str()).collect();
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(ids.join("|").as_bytes());
    UnionRow {
        id: format!("u{}", &crate::util::number::hex(&digest)[..10]),
        label: members
            .iter()
            .map(|&m| r.label(m))
            .collect::<Vec<_>>()
            .join(" | "),
        members,
        hits,
        scores,
        cross_validation,
        group_validation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The small schema-3 result the tests load.
    fn schema3() -> SweepRecord {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/schema3/summary.json"
        );
        SweepRecord::load(std::path::Path::new(path)).unwrap()
    }

    /// A result whose hits cannot be read back is an error naming the
    /// temporary file (exit 2), not a panic and not a result.
    #[test]
    fn unreadable_hits_make_an_error() {
        let mut record = schema3();
        assert!(analyze(record.clone()).is_ok());
        record.outcomes.break_spill();
        let e = analyze(record).expect_err("an error");
        assert!(e.to_string().contains("reading back the hits, in "), "{e}");
        assert_eq!(e.exit_code(), crate::error::EXIT_INPUT);
    }

    /// `analyze_with` takes the baseline the command found; `analyze` finds
    /// the record's own.
    #[test]
    fn analyze_with_uses_the_baseline_it_is_given() {
        let mut record = schema3();
        record.grid.configs[0].stock = true;
        record.grid.configs[0].profile = "gemini-2025-07".into();
        assert_eq!(analyze(record.clone()).unwrap().baseline, 3);
        let other = find_baseline(&record.grid, Some("gemini-2025-07")).unwrap();
        assert_eq!(other.index(), 0);
        let result = analyze_with(record, other).unwrap();
        assert_eq!((result.baseline, result.chosen), (0, 0));
    }
}
