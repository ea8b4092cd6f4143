//! A sweep: every configuration of a grid replayed over a corpus, scored
//! against labels, with the Pareto front and a recommendation a person can
//! check: against a baseline, with intervals, each family's best, an
//! optional union of detectors, and a cross-validated estimate of how the
//! choice does on sessions it never saw.

use crate::detect::{self, DetectorConfig};
use crate::error::{Error, Result};
use crate::event::Corpus;
use crate::grid::Grid;
use crate::labels::Labels;
use crate::metrics::{self, Objective, Scores};
use crate::progress::Progress;
use crate::recommend::{self, CrossValidation, Hits, Labelled, Tally};
use crate::replay::ReplayOptions;
use crate::result::{
    ConfigRecord, FirstDetection, GridRecord, Hit, OptionsRecord, Shard, SweepRecord,
};
use crate::stats;
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};

/// Fewer labelled loops or clean sessions than this earns a warning.
pub const FEW_LABELS: usize = 10;

/// How a sweep chooses.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// The recommendation rule.
    pub objective: Objective,
    /// The baseline profile (default: the grid's first profile).
    pub baseline: Option<String>,
    /// Let any family win (default: only the baseline's family).
    pub across_families: bool,
    /// Cross-validation folds requested (fewer when there are fewer labelled loops).
    pub folds: usize,
    /// Seed of the folds and the bootstrap.
    pub seed: u64,
    /// Largest union searched (0 or 1: none).
    pub combine: usize,
    /// Configuration for gates and JUnit, by id, label or profile (default: the baseline).
    pub chosen: Option<String>,
    /// Worker threads.
    pub jobs: usize,
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions {
            objective: Objective::Default,
            baseline: None,
            across_families: false,
            folds: 5,
            seed: 1,
            combine: 0,
            chosen: None,
            jobs: 0,
        }
    }
}

impl SweepOptions {
    /// The options as a result records them.
    pub fn record(&self) -> OptionsRecord {
        OptionsRecord {
            objective: self.objective.to_string(),
            baseline: self.baseline.clone(),
            across_families: self.across_families,
            folds: self.folds,
            seed: self.seed,
            combine: self.combine,
            chosen: self.chosen.clone(),
        }
    }

    /// Options from a loaded result (`jobs` is not part of a result).
    pub fn from_record(r: &OptionsRecord) -> Result<SweepOptions> {
        Ok(SweepOptions {
            objective: r
                .objective
                .parse()
                .map_err(|e| Error::Usage(format!("{e}")))?,
            baseline: r.baseline.clone(),
            across_families: r.across_families,
            folds: r.folds,
            seed: r.seed,
            combine: r.combine,
            chosen: r.chosen.clone(),
            jobs: 0,
        })
    }
}

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
}

impl SweepResult {
    /// Configuration i.
    pub fn config(&self, i: usize) -> &ConfigRecord {
        &self.record.grid.configs[i]
    }

    /// Label of configuration i.
    pub fn label(&self, i: usize) -> &str {
        &self.record.grid.configs[i].label
    }

    /// Configuration i's hits, one entry per session.
    pub fn dense(&self, i: usize) -> Vec<Option<&Hit>> {
        self.record.outcomes[i].dense(self.record.sessions.len())
    }
}

/// Find the baseline: a stock configuration of `profile` (default: the grid's base profile).
pub fn find_baseline(grid: &GridRecord, profile: Option<&str>) -> Result<usize> {
    let name = profile.unwrap_or(&grid.base_profile);
    if let Some(i) = grid
        .configs
        .iter()
        .position(|v| v.stock && v.profile == name)
    {
        return Ok(i);
    }
    match profile {
        Some(p) => {
            detect::family_of_profile(p)?;
            Err(Error::Usage(format!(
                "--baseline `{p}`: the grid has no stock configuration of this profile (add it as an [[extra]])"
            )))
        }
        // A grid without its own base profile unchanged: compare with its first configuration.
        None => Ok(0),
    }
}

/// The grid as a result records it.
pub fn grid_record(grid: &Grid) -> GridRecord {
    let text = |v: &crate::detect::ParamValue| match v {
        crate::detect::ParamValue::Float(f) => crate::number::fixed(*f),
        other => other.to_string(),
    };
    GridRecord {
        name: grid.name.clone(),
        base_profile: grid.base_profile.clone(),
        axes: grid.axes.clone(),
        source: grid.source.clone(),
        param_columns: param_columns(grid).iter().map(|s| s.to_string()).collect(),
        configs: grid
            .variants
            .iter()
            .map(|v| ConfigRecord {
                id: v.id.clone(),
                label: v.label.clone(),
                family: v.config.family.to_string(),
                profile: v.config.profile.clone(),
                stock: v.stock,
                params: v
                    .config
                    .params
                    .0
                    .iter()
                    .map(|(k, x)| (k.clone(), text(x)))
                    .collect(),
                overrides: v
                    .overrides
                    .iter()
                    .map(|(k, x)| (k.clone(), text(x)))
                    .collect(),
            })
            .collect(),
    }
}

/// One session of a streamed sweep, once its records are gone.
struct Swept {
    session: crate::result::SessionRecord,
    /// Its arrival number: what its hits carry as their session until every
    /// session is known (see [`Filling`]).
    slot: u32,
    explain: Option<crate::result::SessionLines>,
    /// How much the stock profiles disagree on it, and whether it is
    /// unlabelled (the report's order), when they do.
    disagreement: Option<(u32, bool)>,
}

/// Every configuration's hits, filled as sessions stream by. A hit's
/// `session` is its session's arrival number until [`Filling::finish`]
/// renumbers it in sorted session order: the hits are most of a large
/// sweep's memory and are held once, never copied into a second layout.
/// They fill blocks that never move rather than a growing vector per
/// configuration: growing copied every hit about twice onto fresh pages, a
/// tenth of a 1,000-configuration sweep; a configuration's blocks become one
/// vector of the exact size at the end.
struct Filling {
    arrived: u32,
    hits: Vec<Vec<Vec<Hit>>>,
}

/// Hits per block at most (32 KiB), and in a configuration's first block.
const BLOCK_HITS: usize = 1024;
const FIRST_BLOCK_HITS: usize = 64;

impl Filling {
    fn new(configs: usize) -> Filling {
        Filling {
            arrived: 0,
            hits: vec![Vec::new(); configs],
        }
    }

    /// Take one session's `(configuration, hit)`s; returns its arrival number.
    fn push(&mut self, hits: Vec<(u32, Hit)>) -> u32 {
        let slot = self.arrived;
        self.arrived += 1;
        for (c, mut h) in hits {
            h.session = slot;
            let blocks = &mut self.hits[c as usize];
            match blocks.last_mut() {
                Some(b) if b.len() < b.capacity() => b.push(h),
                _ => {
                    // Blocks double up to BLOCK_HITS, so a configuration
                    // with few hits holds little room it does not use.
                    let held: usize = blocks.iter().map(Vec::len).sum();
                    let mut b = Vec::with_capacity(held.clamp(FIRST_BLOCK_HITS, BLOCK_HITS));
                    b.push(h);
                    blocks.push(b);
                }
            }
        }
        slot
    }

    /// Renumber every hit by `index[arrival number]` (`None`: a session
    /// the stream dropped, e.g. one read again to merge an id spread over
    /// several files) and put each configuration's hits in session order.
    fn finish(self, index: &[Option<u32>]) -> Vec<Vec<Hit>> {
        self.hits
            .into_iter()
            .map(|blocks| {
                let mut hits: Vec<Hit> = Vec::with_capacity(blocks.iter().map(Vec::len).sum());
                for block in blocks {
                    hits.extend(block.into_iter().filter_map(|mut h| {
                        index[h.session as usize].map(|i| {
                            h.session = i;
                            h
                        })
                    }));
                }
                // A configuration has at most one hit per session: the order is total.
                hits.sort_unstable_by_key(|h| h.session);
                hits
            })
            .collect()
    }
}

/// The sessions where the stock profiles disagree most, kept as they stream
/// by: `(disagreement, unlabelled, id, material)`, in report order.
type Disagreeing = Vec<(u32, bool, String, crate::result::SessionMaterial)>;

/// Replay a grid over the inputs (only the sessions `shard` owns, if given)
/// and record the result. Each session is replayed under the
/// whole grid as soon as it is read, reduced to what the record keeps (its
/// hits, the lines that explain it when labelled, its material when the stock
/// profiles disagree on it) and dropped, so memory holds the record, never the
/// corpus.
/// Returns the record, the inputs (files and skips) and the labels.
#[allow(clippy::too_many_arguments)]
pub fn run_sweep(
    paths: &[std::path::PathBuf],
    read: &crate::input::ReadOptions,
    grid: Grid,
    labels_file: &crate::labels::LabelsFile,
    opts: &SweepOptions,
    shard: Option<Shard>,
    progress: &dyn Progress,
) -> Result<(SweepRecord, Corpus, Labels)> {
    let record_grid = grid_record(&grid);
    find_baseline(&record_grid, opts.baseline.as_deref())?;
    if let Some(c) = &opts.chosen {
        find_variant(&grid, c)?;
    }
    let configs: Vec<DetectorConfig> = grid.variants.iter().map(|v| v.config.clone()).collect();
    let plan = crate::replay::Plan::new(
        configs,
        &ReplayOptions {
            jobs: opts.jobs,
            all: false,
        },
    )?;
    let stock: Vec<usize> = (0..record_grid.configs.len())
        .filter(|&c| record_grid.configs[c].stock)
        .collect();
    let disagreeing = std::sync::Mutex::new(Disagreeing::new());
    let filling = std::sync::Mutex::new(Filling::new(record_grid.configs.len()));
    let read = crate::input::ReadOptions {
        jobs: opts.jobs,
        ..read.clone()
    };
    let one = |s: std::sync::Arc<crate::event::Session>,
               names: &crate::input::FileNames|
     -> (Option<crate::event::Label>, u32, Option<Swept>) {
        if shard.is_some_and(|sh| !sh.owns(&s.id)) {
            return (s.inline_label, s.turns, None);
        }
        let label = labels_file.label(&s.id, s.inline_label);
        let sb = plan.session_briefs(s.clone());
        let mut sharing = crate::result::SessionHits::default();
        let hits: Vec<(u32, Hit)> = sb
            .briefs
            .iter()
            .enumerate()
            .filter_map(|(c, b)| {
                let hit = sharing.hit(b, |source| {
                    let det = sb.detection(source);
                    let mut d = FirstDetection::of(det);
                    d.place = names
                        .event_provenance(&s, det.event)
                        .and_then(crate::result::PlaceRecord::of);
                    d
                });
                hit.map(|h| (c as u32, h))
            })
            .collect();
        let first_events = |stock_only: bool| -> Vec<u32> {
            let mut events: Vec<u32> = hits
                .iter()
                .filter(|(c, _)| !stock_only || record_grid.configs[*c as usize].stock)
                .filter_map(|(_, h)| h.first.as_ref().map(|d| d.event))
                .collect();
            events.sort_unstable();
            events.dedup();
            events
        };
        let place = |o: &crate::event::Origin| crate::result::PlaceRecord::of(names.provenance(o));
        let fired = stock
            .iter()
            .filter(|&&c| sb.briefs[c].first.is_some())
            .count() as u32;
        let d = fired.min(stock.len() as u32 - fired);
        if d > 0 {
            let key = (d, label.is_none(), s.id.clone());
            let mut top = disagreeing.lock().unwrap_or_else(|e| e.into_inner());
            // A session read again whole (its id spread over files) comes
            // after its parts: it takes their place.
            top.retain(|x| x.2 != key.2);
            let rank = |x: &(u32, bool, String, crate::result::SessionMaterial)| {
                (std::cmp::Reverse(x.0), x.1, x.2.clone())
            };
            let mine = (std::cmp::Reverse(key.0), key.1, key.2.clone());
            let enters = top.len() < crate::result::DISAGREEMENTS
                || top.last().is_some_and(|last| mine < rank(last));
            if enters {
                let m = crate::result::material(&s, &place, d, first_events(true));
                top.push((key.0, key.1, key.2, m));
                top.sort_by_key(rank);
                top.truncate(crate::result::DISAGREEMENTS);
            }
        }
        let explain = label
            .map(|l| crate::result::explain_lines(&s, &place, first_events(false), l.onset_turn));
        let slot = filling.lock().unwrap_or_else(|e| e.into_inner()).push(hits);
        (
            s.inline_label,
            s.turns,
            Some(Swept {
                session: crate::result::SessionRecord::of(&s, label),
                slot,
                explain,
                disagreement: (d > 0).then_some((d, label.is_none())),
            }),
        )
    };
    let streamed = crate::input::stream_sessions(paths, &read, progress, &one)?;
    let inputs = streamed.inputs();
    // Labels are resolved against every session read, as without shards (a
    // shard's labels file names every shard's sessions), then kept for its own.
    labels_file.check_onsets(
        streamed
            .sessions
            .iter()
            .map(|(id, (_, turns, _))| (id.as_str(), *turns)),
    )?;
    let ids: Vec<(&str, Option<crate::event::Label>)> = streamed
        .sessions
        .iter()
        .map(|(id, (inline, _, _))| (id.as_str(), *inline))
        .collect();
    let all_labels = labels_file.resolve(&ids)?;
    drop(ids);
    let mut by_session = Vec::new();
    let mut swept: Vec<Swept> = Vec::new();
    for ((_, (_, _, sw)), l) in streamed.sessions.into_iter().zip(&all_labels.by_session) {
        if let Some(sw) = sw {
            swept.push(sw);
            by_session.push(*l);
        }
    }
    let labels = Labels {
        by_session,
        file: all_labels.file.clone(),
        warnings: all_labels.warnings.clone(),
    };
    let material = disagreement_material(
        &swept,
        disagreeing.into_inner().unwrap_or_else(|e| e.into_inner()),
        |missing| {
            // A part of a session spread over files held a place in the list
            // and pushed out a session that belongs there: read the inputs
            // again for the few sessions whose material is missing.
            let again = crate::input::stream_sessions(
                paths,
                &read,
                &crate::progress::NoProgress,
                &|s, names| {
                    let (d, _) = missing.get(&s.id)?;
                    let outcomes = plan.session(s.clone());
                    // The stock profiles' first detections, as `one` takes them.
                    let stock_events = stock
                        .iter()
                        .filter_map(|&c| outcomes[c].first().map(|x| x.event))
                        .collect::<std::collections::BTreeSet<u32>>();
                    let place = |o: &crate::event::Origin| {
                        crate::result::PlaceRecord::of(names.provenance(o))
                    };
                    Some(crate::result::material(
                        &s,
                        &place,
                        *d,
                        stock_events.into_iter().collect(),
                    ))
                },
            )?;
            Ok(again.sessions.into_iter().filter_map(|(_, m)| m).collect())
        },
    )?;
    let filling = filling.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut index = vec![None; filling.arrived as usize];
    let mut sessions = Vec::with_capacity(swept.len());
    let mut explain = Vec::new();
    for (si, sw) in swept.into_iter().enumerate() {
        index[sw.slot as usize] = Some(si as u32);
        sessions.push(sw.session);
        explain.extend(sw.explain);
    }
    let outcomes: Vec<crate::result::ConfigOutcomes> = record_grid
        .configs
        .iter()
        .zip(filling.finish(&index))
        .map(|(c, hits)| crate::result::ConfigOutcomes {
            config: c.id.clone(),
            hits,
        })
        .collect();
    let record = SweepRecord::assemble(
        record_grid,
        opts.record(),
        shard,
        &inputs,
        &labels,
        sessions,
        outcomes,
        material,
        explain,
    );
    Ok((record, inputs, all_labels))
}

/// The material of the sessions where the stock profiles disagree most,
/// ranked over the sessions as finally read (`swept`). `held` is what the
/// stream kept of its best candidates; a session missing from it (pushed out
/// by a part of a session spread over files, replaced later by the whole)
/// gets its material from `again`, given those sessions' `(disagreement,
/// unlabelled)` by id.
fn disagreement_material(
    swept: &[Swept],
    mut held: Disagreeing,
    again: impl FnOnce(&HashMap<String, (u32, bool)>) -> Result<Vec<crate::result::SessionMaterial>>,
) -> Result<Vec<crate::result::SessionMaterial>> {
    let mut ranked: Vec<(std::cmp::Reverse<u32>, bool, &str)> = swept
        .iter()
        .filter_map(|sw| {
            sw.disagreement
                .map(|(d, unlabelled)| (std::cmp::Reverse(d), unlabelled, sw.session.id.as_str()))
        })
        .collect();
    ranked.sort_unstable();
    ranked.truncate(crate::result::DISAGREEMENTS);
    let mut found: Vec<Option<crate::result::SessionMaterial>> = Vec::new();
    let mut missing: HashMap<String, (u32, bool)> = HashMap::new();
    for &(std::cmp::Reverse(d), unlabelled, id) in &ranked {
        match held
            .iter()
            .position(|x| x.0 == d && x.1 == unlabelled && x.2 == id)
        {
            Some(i) => found.push(Some(held.swap_remove(i).3)),
            None => {
                missing.insert(id.to_string(), (d, unlabelled));
                found.push(None);
            }
        }
    }
    if !missing.is_empty() {
        let mut got: HashMap<String, crate::result::SessionMaterial> = again(&missing)?
            .into_iter()
            .map(|m| (m.session.clone(), m))
            .collect();
        for (slot, &(_, _, id)) in found.iter_mut().zip(&ranked) {
            if slot.is_none() {
                *slot = got.remove(id);
            }
        }
    }
    Ok(found.into_iter().flatten().collect())
}

/// Derive scores, the Pareto front and the recommendation from a result.
pub fn analyze(record: SweepRecord) -> Result<SweepResult> {
    let opts = SweepOptions::from_record(&record.options)?;
    let baseline = find_baseline(&record.grid, opts.baseline.as_deref())?;
    let chosen = match &opts.chosen {
        None => baseline,
        Some(c) => find_config(&record.grid, c)?,
    };
    let sessions: Vec<(u32, Option<crate::event::Label>)> = record
        .sessions
        .iter()
        .map(|s| (s.turns, s.label()))
        .collect();
    let n = record.sessions.len();
    // Configurations are scored apart: in parallel (the caller's pool).
    let scores: Vec<Scores> = record
        .outcomes
        .par_iter()
        .map(|c| metrics::score_hits(&c.dense(n), |i| sessions[i]))
        .collect();
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
    };
    let (recommended, advice) = advise(&result, &opts);
    result.recommended = recommended;
    result.advice = advice;
    Ok(result)
}

/// How many parameter values `cfg` changes from `reference`.
fn distance(cfg: &BTreeMap<String, String>, reference: &BTreeMap<String, String>) -> usize {
    cfg.iter()
        .filter(|(k, v)| reference.get(*k) != Some(v))
        .count()
}

/// The recommendation, its qualifications, and the union.
fn advise(r: &SweepResult, opts: &SweepOptions) -> (Option<usize>, Advice) {
    let mut advice = Advice {
        across_families: opts.across_families,
        seed: opts.seed,
        ..Default::default()
    };
    let by_session: Vec<Option<crate::event::Label>> =
        r.record.sessions.iter().map(|s| s.label()).collect();
    let labelled = Labelled::from_labels(&by_session);
    let (loops, clean) = labelled.counts();
    if labelled.is_empty() {
        advice.reason = Some(
            "no labelled sessions: a recommendation needs labels (--labels FILE or inline `label` records); the outputs still show how often each configuration fires".into(),
        );
        return (None, advice);
    }
    if loops == 0 {
        advice.reason = Some(format!(
            "no labelled loops among the {clean} labelled sessions: recall is undefined, so nothing can be recommended; the outputs still show false positives"
        ));
        return (None, advice);
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
    let dist: Vec<usize> = configs
        .iter()
        .map(|v| match defaults.get(v.family.as_str()) {
            Some(d) => distance(&v.params, d),
            None => distance(&v.params, &baseline_cfg.params),
        })
        .collect();
    // First detection turns on the labelled sessions, one configuration at a
    // time: a table of every configuration (80 MB for 1,000 x 10,000) is
    // built only for the union search, which needs it.
    let mut labelled_at: Vec<Option<u32>> = vec![None; r.record.sessions.len()];
    for (j, &s) in labelled.session.iter().enumerate() {
        labelled_at[s] = Some(j as u32);
    }
    let turns = |c: usize| -> Vec<Option<u32>> {
        let mut v = vec![None; labelled.len()];
        for h in &r.record.outcomes[c].hits {
            if let Some(j) = labelled_at[h.session as usize] {
                v[j as usize] = h.turn();
            }
        }
        v
    };
    let in_family: Vec<usize> = (0..n)
        .filter(|&c| opts.across_families || family[c] == baseline_cfg.family)
        .collect();
    let every: Vec<usize> = (0..n).collect();
    let objective = &r.objective;
    let base = r.baseline;

    let choose_single = |keep: &(dyn Fn(usize) -> bool + Sync)| {
        let tallies: Vec<Tally> = (0..n)
            .into_par_iter()
            .map(|c| recommend::tally(&labelled, &turns(c), keep))
            .collect();
        recommend::pick(&in_family, &tallies, &dist, objective, &tallies[base])
            .map(|c| (vec![c], turns(c)))
    };
    let recommended = choose_single(&|_| true).map(|(m, _)| m[0]);
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
        let best = recommend::pick(&members, &all_tallies, &dist, objective, &all_tallies[base]);
        advice.family_best.push((f.to_string(), best));
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

    if opts.combine >= 2 {
        let hits: Hits = (0..n).map(turns).collect();
        let choose_union = |keep: &(dyn Fn(usize) -> bool + Sync)| {
            recommend::forward_union(
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
                advice.union = Some(union_row(r, members, cv));
            }
        }
    }

    // Bootstrap intervals of the medians the summary shows.
    let mut shown = vec![base];
    shown.extend(recommended);
    shown.extend(advice.family_best.iter().filter_map(|(_, b)| *b));
    for c in shown {
        if let Some(ci) = stats::bootstrap_median(&r.scores[c].ttd, opts.seed) {
            advice.ttd_ci.insert(c, ci);
        }
    }
    if let Some(u) = &advice.union {
        advice.union_ttd_ci = stats::bootstrap_median(&u.scores.ttd, opts.seed);
    }
    (recommended, advice)
}

/// Build a union's row: per session, what the member that fired first did
/// (earliest turn, then earliest event, then the first member).
fn union_row(
    r: &SweepResult,
    members: Vec<usize>,
    cross_validation: Option<CrossValidation>,
) -> UnionRow {
    let dense: Vec<Vec<Option<&Hit>>> = members.iter().map(|&m| r.dense(m)).collect();
    let hits: Vec<Option<Hit>> = (0..r.record.sessions.len())
        .map(|s| {
            dense
                .iter()
                .filter_map(|d| d[s])
                .filter(|h| h.first.is_some())
                .min_by_key(|h| {
                    let d = h.first.as_ref().expect("filtered");
                    (d.turn, d.event)
                })
                .cloned()
        })
        .collect();
    let view: Vec<Option<&Hit>> = hits.iter().map(Option::as_ref).collect();
    let scores = metrics::score_hits(&view, |i| {
        let s = &r.record.sessions[i];
        (s.turns, s.label())
    });
    let ids: Vec<&str> = members.iter().map(|&m| r.config(m).id.as_str()).collect();
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(ids.join("|").as_bytes());
    UnionRow {
        id: format!("u{}", &crate::number::hex(&digest)[..10]),
        label: members
            .iter()
            .map(|&m| r.label(m))
            .collect::<Vec<_>>()
            .join(" | "),
        members,
        hits,
        scores,
        cross_validation,
    }
}

/// Find a configuration of a recorded grid by id, exact label or stock profile name.
pub fn find_config(grid: &GridRecord, key: &str) -> Result<usize> {
    grid.configs
        .iter()
        .position(|v| v.id == key || v.label == key)
        .or_else(|| {
            grid.configs
                .iter()
                .position(|v| v.stock && v.profile == key)
        })
        .ok_or_else(|| {
            let names = grid.configs.iter().flat_map(|v| {
                [v.id.as_str(), v.label.as_str()]
                    .into_iter()
                    .chain(v.stock.then_some(v.profile.as_str()))
            });
            unknown_config(key, names)
        })
}

/// `--config KEY` names no configuration: the error, with the closest name.
fn unknown_config<'a>(key: &str, names: impl IntoIterator<Item = &'a str>) -> Error {
    Error::Usage(format!(
        "--config `{key}`: no configuration of the grid has this id, label or profile{}",
        crate::suggest::hint(key, names)
    ))
}

/// Find a configuration by id, exact label or stock profile name.
pub fn find_variant(grid: &Grid, key: &str) -> Result<usize> {
    grid.variants
        .iter()
        .position(|v| v.id == key || v.label == key)
        .or_else(|| {
            grid.variants
                .iter()
                .position(|v| v.stock && v.config.profile == key)
        })
        .ok_or_else(|| {
            let names = grid.variants.iter().flat_map(|v| {
                [v.id.as_str(), v.label.as_str()]
                    .into_iter()
                    .chain(v.stock.then_some(v.config.profile.as_str()))
            });
            unknown_config(key, names)
        })
}

/// Parameter columns for a grid: every parameter of every family present, in family order.
pub fn param_columns(grid: &Grid) -> Vec<&'static str> {
    let mut cols: Vec<&'static str> = Vec::new();
    let mut fams: Vec<&'static str> = Vec::new();
    for v in &grid.variants {
        if !fams.contains(&v.config.family) {
            fams.push(v.config.family);
        }
    }
    for f in fams {
        if let Ok(fam) = detect::family(f) {
            for p in fam.params() {
                if !cols.contains(&p.name) {
                    cols.push(p.name);
                }
            }
        }
    }
    cols
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filled_hits_are_renumbered_in_session_order_and_dropped_sessions_go() {
        let hit = |judge_due: u32| Hit {
            judge_due,
            ..Default::default()
        };
        let mut f = Filling::new(2);
        // Arrival order c, a, x (dropped: read again later), b.
        assert_eq!(f.push(vec![(0, hit(30)), (1, hit(31))]), 0);
        assert_eq!(f.push(vec![(1, hit(11))]), 1);
        assert_eq!(f.push(vec![(0, hit(99)), (1, hit(99))]), 2);
        assert_eq!(f.push(vec![(0, hit(20))]), 3);
        // Sorted: a = 0, b = 1, c = 2.
        let out = f.finish(&[Some(2), Some(0), None, Some(1)]);
        let seen = |c: usize| -> Vec<(u32, u32)> {
            out[c].iter().map(|h| (h.session, h.judge_due)).collect()
        };
        assert_eq!(seen(0), vec![(1, 20), (2, 30)]);
        assert_eq!(seen(1), vec![(0, 11), (2, 31)]);
    }

    /// The disagreement list is ranked over the sessions as finally read:
    /// what the stream held for them is used, what it lost is asked for
    /// again, and nothing else (a part read before its whole) is kept.
    #[test]
    fn disagreement_material_ranks_final_sessions_and_fills_what_was_lost() {
        let m = |id: &str, d: u32| crate::result::SessionMaterial {
            session: id.into(),
            disagreement: d,
            timeline: vec![[d, 0, 0]],
            excerpts: Vec::new(),
        };
        let swept = |id: &str, d: Option<(u32, bool)>| Swept {
            session: crate::result::SessionRecord::of(
                &crate::event::Session::from_events(id.into(), Vec::new()),
                None,
            ),
            slot: 0,
            explain: None,
            disagreement: d,
        };
        let mut all: Vec<Swept> = (0..9)
            .map(|i| swept(&format!("s{i}"), Some((1 + i % 3, true))))
            .collect();
        all.push(swept("quiet", None));
        // The stream held s8 and s5 (d = 3), s7 (d = 2) and a stale part.
        let held: Disagreeing = vec![
            (3, true, "s8".into(), m("s8", 3)),
            (3, true, "s5".into(), m("s5", 3)),
            (3, true, "part".into(), m("part", 3)),
            (2, true, "s7".into(), m("s7", 2)),
        ];
        let mut asked = Vec::new();
        let got = disagreement_material(&all, held, |missing| {
            let mut ids: Vec<&String> = missing.keys().collect();
            ids.sort();
            asked = ids.iter().map(|s| s.to_string()).collect();
            Ok(missing.iter().map(|(id, (d, _))| m(id, *d)).collect())
        })
        .unwrap();
        let order: Vec<(&str, u32)> = got
            .iter()
            .map(|x| (x.session.as_str(), x.disagreement))
            .collect();
        assert_eq!(
            order,
            [
                ("s2", 3),
                ("s5", 3),
                ("s8", 3),
                ("s1", 2),
                ("s4", 2),
                ("s7", 2)
            ]
        );
        assert_eq!(asked, ["s1", "s2", "s4"]);
    }

    /// Over several blocks, every hit comes back once, in session order.
    #[test]
    fn hits_over_many_blocks_come_back_whole() {
        let n = 3 * BLOCK_HITS as u32 + 17;
        let mut f = Filling::new(1);
        for i in 0..n {
            let h = Hit {
                judge_due: i,
                ..Default::default()
            };
            f.push(vec![(0, h)]);
        }
        // Arrivals in reverse session order; every tenth dropped.
        let index: Vec<Option<u32>> = (0..n).map(|i| (i % 10 != 3).then_some(n - 1 - i)).collect();
        let out = f.finish(&index);
        let kept: Vec<(u32, u32)> = out[0].iter().map(|h| (h.session, h.judge_due)).collect();
        let want: Vec<(u32, u32)> = (0..n)
            .rev()
            .filter(|i| i % 10 != 3)
            .map(|i| (n - 1 - i, i))
            .collect();
        assert_eq!(kept, want);
    }
}
