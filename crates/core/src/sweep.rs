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
    /// The key sessions are grouped by (`agent`, `model`, `source`, or a
    /// labels file's column).
    pub group_by: String,
    /// Whether a choice may hurt one group to help another.
    pub guard: recommend::Guard,
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
            group_by: AGENT.into(),
            guard: recommend::Guard::PerGroup,
        }
    }
}

/// The group keys every session has (the labels files add their columns).
pub const AGENT: &str = "agent";
/// The model that recorded a session (`unknown` when not recorded).
pub const MODEL: &str = "model";
/// The first folder under the input path given on the command line.
pub const SOURCE: &str = "source";

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
            group_by: self.group_by.clone(),
            guard: self.guard.name().to_string(),
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
            group_by: r.group_by.clone(),
            guard: recommend::Guard::parse(&r.guard).ok_or_else(|| {
                Error::Usage(format!(
                    "options.guard `{}`: expected `per-group` or `pooled`",
                    r.guard
                ))
            })?,
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
}

/// A row of the summary: its role, its grid index (`None`: the union), and
/// its hits per session.
pub type ShownRow<'a> = (String, Option<usize>, Vec<Option<&'a Hit>>);

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

    /// Scores of `hits` (one per session) in every group, as the in-sample
    /// scores count them (test sessions' labels hidden); they add up to the
    /// pooled counts.
    pub fn group_scores(&self, hits: &[Option<&Hit>]) -> Vec<Scores> {
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); self.groups.names.len()];
        for (s, &g) in self.groups.of.iter().enumerate() {
            members[g as usize].push(s);
        }
        members
            .iter()
            .map(|m| {
                let view: Vec<Option<&Hit>> = m.iter().map(|&s| hits[s]).collect();
                metrics::score_hits(&view, |i| {
                    let s = &self.record.sessions[m[i]];
                    (s.turns, s.label().filter(|_| !s.is_test()))
                })
            })
            .collect()
    }

    /// [`SweepResult::group_scores`] of configuration `c`; with one group,
    /// its pooled scores as they are.
    pub fn config_group_scores(&self, c: usize) -> Vec<Scores> {
        if self.groups.names.len() <= 1 {
            vec![self.scores[c].clone()]
        } else {
            self.group_scores(&self.dense(c))
        }
    }

    /// The rows the summary shows, in its order: role, grid index (`None`
    /// for the union), and hits per session.
    pub fn shown(&self) -> Vec<ShownRow<'_>> {
        let mut rows = vec![(
            "baseline".to_string(),
            Some(self.baseline),
            self.dense(self.baseline),
        )];
        if let Some(c) = self.recommended {
            rows.push(("recommended".into(), Some(c), self.dense(c)));
        }
        for (f, best) in &self.advice.family_best {
            if let Some(c) = best {
                rows.push((format!("best {f}"), Some(*c), self.dense(*c)));
            }
        }
        if let Some(u) = &self.advice.union {
            rows.push((
                "union".into(),
                None,
                u.hits.iter().map(Option::as_ref).collect(),
            ));
        }
        rows
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
    /// The file its first record came from, and the agent and model it
    /// names, for its groups (the file's format and place are known once
    /// every file is read).
    first_file: Option<u32>,
    agent: Option<String>,
    model: Option<String>,
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
/// Sessions read from `test_paths` are test sessions (`split` = `test`):
/// scored once the choice is made, never chosen on.
/// Returns the record, the inputs (files and skips) and the labels.
#[allow(clippy::too_many_arguments)]
pub fn run_sweep(
    paths: &[std::path::PathBuf],
    test_paths: &[std::path::PathBuf],
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
                first_file: s.events.first().map(|e| e.origin.file),
                agent: s.meta.agent.clone(),
                model: s.meta.model.clone(),
            }),
        )
    };
    let mut all_paths = paths.to_vec();
    all_paths.extend_from_slice(test_paths);
    let paths = &all_paths[..];
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
    let files = &inputs.files;
    for ((_, (_, _, sw)), l) in streamed.sessions.into_iter().zip(&all_labels.by_session) {
        if let Some(mut sw) = sw {
            sw.session.groups = session_groups(&sw, files, paths, test_paths.len(), labels_file);
            swept.push(sw);
            by_session.push(*l);
        }
    }
    let labels = Labels {
        by_session,
        files: all_labels.files.clone(),
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

/// Refuse a `--group-by` key that sessions cannot have, naming the keys
/// there are (and the nearest one), before any work: a typo would otherwise
/// put every session in one group, `unknown`, and validate nothing. The keys
/// are `agent`, `model`, `source`, `split` with `--test`, and the labels
/// files' columns.
pub fn check_group_key(
    key: &str,
    labels_file: &crate::labels::LabelsFile,
    has_test: bool,
) -> Result<()> {
    let mut keys: std::collections::BTreeSet<String> = [AGENT, MODEL, SOURCE]
        .into_iter()
        .map(String::from)
        .collect();
    if has_test {
        keys.insert(crate::labels::SPLIT.into());
    }
    keys.extend(labels_file.columns());
    if keys.contains(key) {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "--group-by `{key}`: no session can have this key{}; the keys are {}",
        crate::suggest::hint(key, keys.iter().map(String::as_str)),
        keys.iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// A session's groups: its agent (the log's own name, else its format), its
/// model, its source (the first folder under the input path it was found
/// in), every column the labels files give it, and with `--test` paths its
/// split (sessions under the last `tests` of `args` are `test`).
fn session_groups(
    sw: &Swept,
    files: &[crate::event::SourceFile],
    args: &[std::path::PathBuf],
    tests: usize,
    labels_file: &crate::labels::LabelsFile,
) -> BTreeMap<String, String> {
    let mut g = labels_file.extra(&sw.session.id);
    let file = sw.first_file.and_then(|f| files.get(f as usize));
    let agent = sw
        .agent
        .clone()
        .filter(|a| !a.trim().is_empty())
        .or_else(|| file.map(|f| f.format.clone()));
    let unknown = || crate::result::UNKNOWN_GROUP.to_string();
    g.insert(AGENT.into(), agent.unwrap_or_else(unknown));
    g.insert(
        MODEL.into(),
        sw.model
            .clone()
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(unknown),
    );
    let (arg, source) = match file {
        Some(f) => source_of(&f.path, args),
        None => (None, unknown()),
    };
    g.insert(SOURCE.into(), source);
    if tests > 0 {
        let test = arg.is_some_and(|a| a >= args.len() - tests);
        let split = if test {
            crate::labels::TEST
        } else {
            crate::labels::TRAIN
        };
        g.insert(crate::labels::SPLIT.into(), split.into());
    }
    g
}

/// Which input argument a file was found under (the first that holds it),
/// and its source: the first folder under that argument, else the
/// argument's own name (a file given directly, or one at a folder's top).
fn source_of(file: &str, args: &[std::path::PathBuf]) -> (Option<usize>, String) {
    let path = std::path::Path::new(file);
    for (i, a) in args.iter().enumerate() {
        if file == "-" && a.as_os_str() == "-" {
            return (Some(i), "-".into());
        }
        if let Ok(rest) = path.strip_prefix(a) {
            let mut parts = rest.components();
            let first = parts.next();
            let source = match (first, parts.next()) {
                (Some(dir), Some(_)) => dir.as_os_str().to_string_lossy().into_owned(),
                // The file itself, or a file at the folder's top level.
                _ => a.file_name().map_or_else(
                    || a.display().to_string(),
                    |n| n.to_string_lossy().into_owned(),
                ),
            };
            return (Some(i), source);
        }
    }
    (None, crate::result::UNKNOWN_GROUP.into())
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
    // Test sessions' labels are hidden from every in-sample score: a test
    // label must never change a choice.
    let sessions: Vec<(u32, Option<crate::event::Label>)> = record
        .sessions
        .iter()
        .map(|s| (s.turns, s.label().filter(|_| !s.is_test())))
        .collect();
    let n = record.sessions.len();
    let groups = GroupIndex::of_record(&record, &opts.group_by);
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
        groups,
    };
    let (recommended, advice) = advise(&result, &opts);
    result.recommended = recommended;
    result.advice = advice;
    Ok(result)
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
fn turns_on(r: &SweepResult, at: &[Option<u32>], len: usize, c: usize) -> Vec<Option<u32>> {
    let mut v = vec![None; len];
    for h in &r.record.outcomes[c].hits {
        if let Some(j) = at[h.session as usize] {
            v[j as usize] = h.turn();
        }
    }
    v
}

/// Where each session sits in `labelled` (`None`: not in it).
fn places(labelled: &Labelled, sessions: usize) -> Vec<Option<u32>> {
    let mut at = vec![None; sessions];
    for (j, &s) in labelled.session.iter().enumerate() {
        at[s] = Some(j as u32);
    }
    at
}

/// The recommendation, its qualifications, and the union.
fn advise(r: &SweepResult, opts: &SweepOptions) -> (Option<usize>, Advice) {
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
    // Another family is the largest change of all: on equal scores the
    // baseline's family wins (distances only break ties, and within one
    // family the offset changes no order).
    let dist: Vec<usize> = configs
        .iter()
        .map(|v| match defaults.get(v.family.as_str()) {
            Some(d) => OTHER_FAMILY + distance(&v.params, d),
            None if v.family != baseline_cfg.family => {
                OTHER_FAMILY + distance(&v.params, &baseline_cfg.params)
            }
            None => distance(&v.params, &baseline_cfg.params),
        })
        .collect();
    // First detection turns on the labelled sessions, one configuration at a
    // time: a table of every configuration (80 MB for 1,000 x 10,000) is
    // built only for the union search, which needs it.
    let labelled_at = places(&labelled, sessions.len());
    let turns = |c: usize| turns_on(r, &labelled_at, labelled.len(), c);
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
        (opts.guard == recommend::Guard::PerGroup)
            .then(|| recommend::GroupGuard::new(&labelled, &group, n_groups, &base_turns, keep))
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
    let choose_single = |keep: &(dyn Fn(usize) -> bool + Sync)| {
        // Each configuration's turns are found once per fold, for its tally
        // and the guard alike (a 10,000-session table per configuration).
        let guard = guard_on(keep);
        let (tallies, passes): (Vec<Tally>, Vec<bool>) = (0..n)
            .into_par_iter()
            .map(|c| {
                let h = turns(c);
                let passes = in_family_mask[c]
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
        if opts.across_families && opts.guard == recommend::Guard::PerGroup {
            let own: Vec<usize> = own_family.iter().copied().filter(|&c| passes[c]).collect();
            if let Some(o) = recommend::pick(&own, &tallies, &dist, objective, &tallies[base]) {
                let g = recommend::GroupGuard::new(&labelled, &group, n_groups, &turns(o), keep);
                candidates.retain(|&c| {
                    family[c] == baseline_cfg.family || g.admits(&labelled, &turns(c), keep)
                });
            }
        }
        recommend::pick(&candidates, &tallies, &dist, objective, &tallies[base])
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
        let members = admitted(&members, &|_| true);
        let best = recommend::pick(&members, &all_tallies, &dist, objective, &all_tallies[base]);
        advice.family_best.push((f.to_string(), best));
    }
    if let Some(g) = guard_on(&|_| true) {
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
                advice.union = Some(union_row(r, members, cv, gv));
            }
        }
    }

    // Bootstrap intervals of the medians the summary shows.
    let mut shown = vec![base];
    shown.extend(recommended);
    shown.extend(advice.family_best.iter().filter_map(|(_, b)| *b));
    for &c in &shown {
        if let Some(ci) = stats::bootstrap_median(&r.scores[c].ttd, opts.seed) {
            advice.ttd_ci.insert(c, ci);
        }
    }
    if let Some(u) = &advice.union {
        advice.union_ttd_ci = stats::bootstrap_median(&u.scores.ttd, opts.seed);
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

    advice.test = test_scores(r, recommended, &advice);
    (recommended, advice)
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

/// The shown configurations scored on the test sessions (`None` without any).
fn test_scores(r: &SweepResult, recommended: Option<usize>, a: &Advice) -> Option<TestScores> {
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
            &turns_on(r, &at, labelled.len(), r.baseline),
            all,
        ),
    )];
    if let Some(c) = recommended {
        rows.push((
            "recommended".into(),
            Some(c),
            recommend::tally(&labelled, &turns_on(r, &at, labelled.len(), c), all),
        ));
    }
    for (f, best) in &a.family_best {
        if let Some(c) = best {
            rows.push((
                format!("best {f}"),
                Some(*c),
                recommend::tally(&labelled, &turns_on(r, &at, labelled.len(), *c), all),
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
        (s.turns, s.label().filter(|_| !s.is_test()))
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
        group_validation,
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
            first_file: None,
            agent: None,
            model: None,
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
