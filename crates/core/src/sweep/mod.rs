//! A sweep: every configuration of a grid replayed over a corpus, scored
//! against labels, with the Pareto front and a recommendation a person can
//! check: against a baseline, with intervals, each family's best, an
//! optional union of detectors, and a cross-validated estimate of how the
//! choice does on sessions it never saw.

pub mod grid;
use crate::detect::{self, DetectorConfig};
use crate::error::{Error, Result};
use crate::event::Corpus;
use crate::input::labels::Labels;
use crate::replay::ReplayOptions;
use crate::result::{
    ConfigRecord, FirstDetection, GridRecord, Hit, OptionsRecord, Shard, SweepRecord,
};
use crate::sweep::grid::Grid;
use crate::util::progress::Progress;
use std::collections::{BTreeMap, HashMap};

/// The group keys every session has (the labels files add their columns).
pub const AGENT: &str = "agent";
/// The model that recorded a session (`unknown` when not recorded).
pub const MODEL: &str = "model";
/// The first folder under the input path given on the command line.
pub const SOURCE: &str = "source";

/// The grid as a result records it.
pub fn grid_record(grid: &Grid) -> GridRecord {
    let text = |v: &crate::detect::ParamValue| match v {
        crate::detect::ParamValue::Float(f) => crate::util::number::fixed(*f),
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
    /// Where its explanation is in the spill file, when labelled.
    explain: Option<crate::result::explain::Place>,
    /// How much the stock profiles disagree on it, and whether it is
    /// unlabelled (the report's order), when they do.
    disagreement: Option<(u32, bool)>,
    /// The file its first record came from, and the agent and model it
    /// names, for its groups (the file's format and place are known once
    /// every file is read).
    first_file: Option<u32>,
    agent: Option<std::sync::Arc<str>>,
    model: Option<std::sync::Arc<str>>,
}

/// Agents' and models' names, one copy each: a corpus names a handful, and
/// a string each was two allocations a session held to the end of the read.
#[derive(Default)]
struct Names(std::sync::Mutex<std::collections::HashSet<std::sync::Arc<str>>>);

impl Names {
    fn of(&self, name: Option<&str>) -> Option<std::sync::Arc<str>> {
        let name = name?;
        let mut set = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(x) = set.get(name) {
            return Some(x.clone());
        }
        let x: std::sync::Arc<str> = name.into();
        set.insert(x.clone());
        Some(x)
    }
}

/// Every configuration's hits, filled as sessions stream by, in the order
/// they arrive: a session's number in the store is its arrival number until
/// [`Filling::finish`] renumbers the sessions in sorted order. The store
/// keeps a session's few distinct hits in memory and the rest on disk (see
/// [`crate::result::outcomes`]), so a sweep's memory does not grow with its
/// hits.
struct Filling {
    outcomes: crate::result::Outcomes,
    /// The first failure to write the store's temporary file.
    failed: Option<std::io::Error>,
}

impl Filling {
    fn new(ids: Vec<String>) -> Filling {
        Filling {
            outcomes: crate::result::Outcomes::new(ids),
            failed: None,
        }
    }

    /// Take one session's `(configuration, hit)`s; returns its arrival number.
    fn push(&mut self, hits: Vec<(u32, Hit)>) -> u32 {
        let slot = self.outcomes.sessions() as u32;
        if let Err(e) = self.outcomes.push_session(&hits) {
            self.failed.get_or_insert(e);
        }
        slot
    }

    /// Renumber every session by `index[arrival number]` (`None`: a
    /// session the stream dropped, e.g. one read again to merge an id
    /// spread over several files) into `sessions` sessions.
    fn finish(
        self,
        index: &[Option<u32>],
        sessions: usize,
    ) -> std::io::Result<crate::result::Outcomes> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        self.outcomes.renumber(index, sessions)
    }
}

/// The sessions where the stock profiles disagree most, kept as they stream
/// by: `(disagreement, unlabelled, id, material)`, in report order.
type Disagreeing = Vec<(u32, bool, String, crate::result::SessionMaterial)>;

/// What a sweep keeps of one session as it streams by: its label and turns
/// (for every session, so labels resolve against all of them) and, for a
/// session of this shard, what the record holds of it.
struct Reduced {
    inline_label: Option<crate::event::Label>,
    turns: u32,
    /// Boxed: every file's sessions wait in a list until all files are
    /// read, then move into the record's order without being copied.
    swept: Option<Box<Swept>>,
}

/// The per-session step of a sweep: replay the grid over one session and
/// reduce it to what the record keeps (its hits into `filling`, the lines
/// that explain it when labelled, its material into `disagreeing` when the
/// stock profiles disagree on it). Called on the reading threads, once per
/// session, in any order.
struct Reducer<'a> {
    plan: &'a crate::replay::Plan,
    shard: Option<Shard>,
    labels_file: &'a crate::input::labels::LabelsFile,
    configs: &'a [ConfigRecord],
    /// The stock profiles' configurations.
    stock: &'a [usize],
    disagreeing: &'a std::sync::Mutex<Disagreeing>,
    filling: &'a std::sync::Mutex<Filling>,
    /// Labelled sessions' explanations, written as they are made.
    spill: &'a crate::result::explain::Spill,
    spill_error: &'a std::sync::Mutex<Option<std::io::Error>>,
    names: &'a Names,
}

impl Reducer<'_> {
    fn reduce(
        &self,
        s: std::sync::Arc<crate::event::Session>,
        names: &crate::input::FileNames,
    ) -> Reduced {
        if self.shard.is_some_and(|sh| !sh.owns(&s.id)) {
            return Reduced {
                inline_label: s.inline_label,
                turns: s.turns,
                swept: None,
            };
        }
        let label = self.labels_file.label(&s.id, s.inline_label);
        let (hits, fired) = self.replay(&s, names);
        let first_events = |stock_only: bool| -> Vec<u32> {
            let mut events: Vec<u32> = hits
                .iter()
                .filter(|(c, _)| !stock_only || self.configs[*c as usize].stock)
                .filter_map(|(_, h)| h.first.as_ref().map(|d| d.event))
                .collect();
            events.sort_unstable();
            events.dedup();
            events
        };
        let place = |o: &crate::event::Origin| crate::result::PlaceRecord::of(names.provenance(o));
        let d = fired.min(self.stock.len() as u32 - fired);
        if d > 0 {
            self.offer_disagreement(&s, d, label.is_none(), || {
                crate::result::material(&s, &place, d, first_events(true))
            });
        }
        let explain = label.and_then(|l| {
            let lines = crate::result::explain_lines(&s, &place, first_events(false), l.onset_turn);
            match self.spill.put(&lines) {
                Ok(at) => Some(at),
                Err(e) => {
                    // Kept for the end of the stream, where the sweep fails.
                    let mut failed = self.spill_error.lock().unwrap_or_else(|e| e.into_inner());
                    failed.get_or_insert(e);
                    None
                }
            }
        });
        let slot = self
            .filling
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(hits);
        Reduced {
            inline_label: s.inline_label,
            turns: s.turns,
            swept: Some(Box::new(Swept {
                session: crate::result::SessionRecord::of(&s, label),
                slot,
                explain,
                disagreement: (d > 0).then_some((d, label.is_none())),
                first_file: s.events.first().map(|e| e.origin.file),
                agent: self.names.of(s.meta.agent.as_deref()),
                model: self.names.of(s.meta.model.as_deref()),
            })),
        }
    }

    /// The grid over one session: each configuration's hit (detections
    /// shared between configurations that agree), and how many stock
    /// profiles fired.
    fn replay(
        &self,
        s: &std::sync::Arc<crate::event::Session>,
        names: &crate::input::FileNames,
    ) -> (Vec<(u32, Hit)>, u32) {
        let sb = self.plan.session_briefs(s.clone());
        let mut sharing = crate::result::SessionHits::default();
        let hits = sb
            .briefs
            .iter()
            .enumerate()
            .filter_map(|(c, b)| {
                let hit = sharing.hit(b, |source| {
                    let det = sb.detection(source);
                    let mut d = FirstDetection::of(det);
                    d.place = names
                        .event_provenance(s, det.event)
                        .and_then(crate::result::PlaceRecord::of);
                    d
                });
                hit.map(|h| (c as u32, h))
            })
            .collect();
        let fired = self
            .stock
            .iter()
            .filter(|&&c| sb.briefs[c].first.is_some())
            .count() as u32;
        (hits, fired)
    }

    /// Keep a session among the ones the stock profiles disagree on most, if
    /// it ranks there; its material is made only then.
    fn offer_disagreement(
        &self,
        s: &crate::event::Session,
        d: u32,
        unlabelled: bool,
        material: impl FnOnce() -> crate::result::SessionMaterial,
    ) {
        let key = (d, unlabelled, s.id.clone());
        let mut top = self.disagreeing.lock().unwrap_or_else(|e| e.into_inner());
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
            top.push((key.0, key.1, key.2, material()));
            top.sort_by_key(rank);
            top.truncate(crate::result::DISAGREEMENTS);
        }
    }
}

/// Replay a grid over the inputs (only the sessions `shard` owns, if given)
/// and record the result. Each session is replayed under the
/// whole grid as soon as it is read, reduced to what the record keeps (its
/// hits, the lines that explain it when labelled, its material when the stock
/// profiles disagree on it) and dropped, so memory holds the record, never the
/// corpus.
/// `inputs` is the command's input list (walked once, for its guard on
/// outputs too), read on the command's `workers`; sessions read from its
/// last `tests` paths (`--test`) are test sessions (`split` = `test`):
/// scored once the choice is made, never chosen on.
/// The configurations `options` name (`baseline`, `chosen`) are the
/// caller's to find on the grid before any work ([`crate::result::find_baseline`],
/// [`find_variant`]); the baseline found goes to [`crate::score::analyze_with`].
/// Returns the record, the inputs (files and skips) and the labels.
#[allow(clippy::too_many_arguments)]
pub fn run_sweep(
    inputs: crate::input::InputList,
    tests: usize,
    read: &crate::input::ReadOptions,
    grid: Grid,
    labels_file: &crate::input::labels::LabelsFile,
    options: OptionsRecord,
    workers: &crate::util::pool::Workers,
    shard: Option<Shard>,
    progress: &dyn Progress,
) -> Result<(SweepRecord, Corpus, Labels)> {
    let record_grid = grid_record(&grid);
    let configs: Vec<DetectorConfig> = grid.variants.iter().map(|v| v.config.clone()).collect();
    let plan = crate::replay::Plan::new(configs, &ReplayOptions { all: false })?;
    let stock: Vec<usize> = (0..record_grid.configs.len())
        .filter(|&c| record_grid.configs[c].stock)
        .collect();
    let disagreeing = std::sync::Mutex::new(Disagreeing::new());
    let filling = std::sync::Mutex::new(Filling::new(
        record_grid.configs.iter().map(|c| c.id.clone()).collect(),
    ));
    let spill_failed = |e| Error::temp("for the explanations", e);
    let spill = crate::result::explain::Spill::new().map_err(spill_failed)?;
    let spill_error = std::sync::Mutex::new(None);
    let agents_and_models = Names::default();
    let reducer = Reducer {
        plan: &plan,
        shard,
        labels_file,
        configs: &record_grid.configs,
        stock: &stock,
        disagreeing: &disagreeing,
        filling: &filling,
        spill: &spill,
        spill_error: &spill_error,
        names: &agents_and_models,
    };
    let one = |s: std::sync::Arc<crate::event::Session>, names: &crate::input::FileNames| {
        reducer.reduce(s, names)
    };
    // The walk's first error, if any, is raised here, after the grid's
    // checks, where the read used to walk the paths.
    let walked = inputs.files()?;
    let paths = walked.paths();
    let streamed = crate::input::stream_sessions(&walked, read, workers, progress, &one)?;
    if let Some(e) = spill_error.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(spill_failed(e));
    }
    let mut streamed = streamed;
    // The file list moves into the corpus: a copy was a few hundred bytes a
    // file (most real logs hold one session a file).
    let file_of_origin = std::mem::take(&mut streamed.file_of_origin);
    let inputs = Corpus {
        files: std::mem::take(&mut streamed.files),
        sessions: Vec::new(),
        skipped: std::mem::take(&mut streamed.skipped),
        unreadable: streamed.unreadable,
    };
    // Labels are resolved against every session read, as without shards (a
    // shard's labels file names every shard's sessions), then kept for its own.
    labels_file.check_onsets(
        streamed
            .sessions
            .iter()
            .map(|(id, r)| (id.as_str(), r.turns)),
    )?;
    let ids: Vec<(&str, Option<crate::event::Label>)> = streamed
        .sessions
        .iter()
        .map(|(id, r)| (id.as_str(), r.inline_label))
        .collect();
    let all_labels = labels_file.resolve(&ids)?;
    drop(ids);
    // Sized once: a vector grown by doubling held twice what it needed.
    let mut by_session = Vec::with_capacity(streamed.sessions.len());
    let mut swept: Vec<Box<Swept>> = Vec::with_capacity(streamed.sessions.len());
    let files = &inputs.files;
    let mut shared = crate::result::SharedGroups::default();
    for ((_, reduced), l) in streamed.sessions.into_iter().zip(&all_labels.by_session) {
        if let Some(mut sw) = reduced.swept {
            sw.session.groups = shared.share(session_groups(
                &sw,
                files,
                &file_of_origin,
                paths,
                tests,
                labels_file,
            ));
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
                &walked,
                read,
                workers,
                &crate::util::progress::NoProgress,
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
    let mut index = vec![None; filling.outcomes.sessions()];
    let mut sessions = Vec::with_capacity(swept.len());
    let mut explain = Vec::new();
    for (si, sw) in swept.into_iter().enumerate() {
        index[sw.slot as usize] = Some(si as u32);
        explain.extend(sw.explain.map(|at| (sw.session.id.clone(), at)));
        sessions.push(sw.session);
    }
    let explain = spill.finish(explain).map_err(spill_failed)?;
    let outcomes = filling
        .finish(&index, sessions.len())
        .map_err(|e| Error::temp("for the hits", e))?;
    let record = SweepRecord::assemble(
        record_grid,
        options,
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
    labels_file: &crate::input::labels::LabelsFile,
    has_test: bool,
) -> Result<()> {
    let mut keys: std::collections::BTreeSet<String> = [AGENT, MODEL, SOURCE]
        .into_iter()
        .map(String::from)
        .collect();
    if has_test {
        keys.insert(crate::input::labels::SPLIT.into());
    }
    keys.extend(labels_file.columns());
    if keys.contains(key) {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "--group-by `{key}`: no session can have this key{}; the keys are {}",
        crate::util::suggest::hint(key, keys.iter().map(String::as_str)),
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
    file_of_origin: &[Option<u32>],
    args: &[std::path::PathBuf],
    tests: usize,
    labels_file: &crate::input::labels::LabelsFile,
) -> BTreeMap<String, String> {
    let mut g = labels_file.extra(&sw.session.id);
    let file = sw
        .first_file
        .and_then(|f| file_of_origin.get(f as usize).copied().flatten())
        .and_then(|f| files.get(f as usize));
    let agent = sw
        .agent
        .as_deref()
        .filter(|a| !a.trim().is_empty())
        .map(str::to_string)
        .or_else(|| file.map(|f| f.format.clone()));
    let unknown = || crate::result::UNKNOWN_GROUP.to_string();
    g.insert(AGENT.into(), agent.unwrap_or_else(unknown));
    g.insert(
        MODEL.into(),
        sw.model
            .as_deref()
            .filter(|m| !m.trim().is_empty())
            .map_or_else(unknown, str::to_string),
    );
    let (arg, source) = match file {
        Some(f) => source_of(&f.path, args),
        None => (None, unknown()),
    };
    g.insert(SOURCE.into(), source);
    if tests > 0 {
        let test = arg.is_some_and(|a| a >= args.len() - tests);
        let split = if test {
            crate::input::labels::TEST
        } else {
            crate::input::labels::TRAIN
        };
        g.insert(crate::input::labels::SPLIT.into(), split.into());
    }
    g
}

/// Which input argument a file was found under (the last that holds it: a
/// file several paths hold is read as part of the last, see
/// [`crate::input::InputList::files`]), and its source: the first folder
/// under that argument, else the argument's own name (a file given
/// directly, or one at a folder's top).
fn source_of(file: &str, args: &[std::path::PathBuf]) -> (Option<usize>, String) {
    let path = std::path::Path::new(file);
    for (i, a) in args.iter().enumerate().rev() {
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
    swept: &[Box<Swept>],
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
            crate::result::unknown_config(key, names)
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
        let hit = |judge_due: u32| {
            Hit::new(
                0,
                crate::result::HitBody {
                    judge_due,
                    ..Default::default()
                },
            )
        };
        let mut f = Filling::new(vec!["a".into(), "b".into()]);
        // Arrival order c, a, x (dropped: read again later), b.
        assert_eq!(f.push(vec![(0, hit(30)), (1, hit(31))]), 0);
        assert_eq!(f.push(vec![(1, hit(11))]), 1);
        assert_eq!(f.push(vec![(0, hit(99)), (1, hit(99))]), 2);
        assert_eq!(f.push(vec![(0, hit(20))]), 3);
        // Sorted: a = 0, b = 1, c = 2.
        let out = f.finish(&[Some(2), Some(0), None, Some(1)], 3).unwrap();
        let seen = |c: usize| -> Vec<(u32, u32)> {
            out.hits(c)
                .unwrap()
                .iter()
                .map(|h| (h.session, h.judge_due))
                .collect()
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
        let mut all: Vec<Box<Swept>> = (0..9)
            .map(|i| Box::new(swept(&format!("s{i}"), Some((1 + i % 3, true)))))
            .collect();
        all.push(Box::new(swept("quiet", None)));
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

    /// Over many spilled chunks, every hit comes back once, in session order.
    #[test]
    fn hits_over_many_chunks_come_back_whole() {
        let n = 20_017;
        let mut f = Filling::new(vec!["a".into()]);
        for i in 0..n {
            let h = Hit::new(
                0,
                crate::result::HitBody {
                    judge_due: i,
                    ..Default::default()
                },
            );
            f.push(vec![(0, h)]);
        }
        // Arrivals in reverse session order; every tenth dropped.
        let kept_n = (0..n).filter(|i| i % 10 != 3).count() as u32;
        let mut next = kept_n;
        let index: Vec<Option<u32>> = (0..n)
            .map(|i| {
                (i % 10 != 3).then(|| {
                    next -= 1;
                    next
                })
            })
            .collect();
        let out = f.finish(&index, kept_n as usize).unwrap();
        let kept: Vec<(u32, u32)> = out
            .hits(0)
            .unwrap()
            .iter()
            .map(|h| (h.session, h.judge_due))
            .collect();
        let want: Vec<(u32, u32)> = (0..n)
            .rev()
            .filter(|i| i % 10 != 3)
            .enumerate()
            .map(|(s, i)| (s as u32, i))
            .collect();
        assert_eq!(kept, want);
    }
}
