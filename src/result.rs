//! The result of a sweep as data: [`SweepRecord`], what `summary.json`
//! serializes (with a schema version) and what `looptune report`, `merge` and
//! `diff` load back. It holds the grid, the inputs with their digests, the
//! sessions with their labels, and per configuration the outcome of every
//! session where something happened (sparse). Records of disjoint session
//! sets (shards) merge exactly; scores are derived from a record, never stored
//! in it as the only copy.

use crate::error::{Error, Result};
use crate::event::{Corpus, Label, Record, Session};
use crate::replay::Outcome;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Version of the `summary.json` layout; bumped when a field changes meaning.
pub const SCHEMA_VERSION: u32 = 4;

/// How many sessions with the most disagreement the report explains.
pub const DISAGREEMENTS: usize = 6;
/// Records shown either side of a detection in an excerpt.
const EXCERPT_RADIUS: usize = 3;
/// Characters kept of each excerpt line.
const EXCERPT_CHARS: usize = 240;

/// One configuration of the grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigRecord {
    /// Stable id.
    pub id: String,
    /// Readable label.
    pub label: String,
    /// Detector family.
    pub family: String,
    /// Profile it starts from.
    pub profile: String,
    /// An unchanged stock profile.
    pub stock: bool,
    /// Every parameter's value, as text.
    pub params: BTreeMap<String, String>,
    /// The values the grid changed, as text.
    pub overrides: BTreeMap<String, String>,
}

/// The grid: its source and every configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GridRecord {
    /// Grid name.
    pub name: String,
    /// The first profile of the grid.
    pub base_profile: String,
    /// Axis names in declaration order.
    pub axes: Vec<String>,
    /// The grid's TOML text as given.
    pub source: String,
    /// Parameter columns of `sweep.csv`, in family order.
    pub param_columns: Vec<String>,
    /// Every configuration, in grid order.
    pub configs: Vec<ConfigRecord>,
}

/// How the sweep chooses (kept so a loaded record is analysed the same way).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OptionsRecord {
    /// `--objective`.
    pub objective: String,
    /// `--baseline` profile, if given.
    pub baseline: Option<String>,
    /// `--across-families`.
    pub across_families: bool,
    /// `--folds`.
    pub folds: usize,
    /// `--seed`.
    pub seed: u64,
    /// `--combine`.
    pub combine: usize,
    /// `--config`.
    pub chosen: Option<String>,
}

/// Which part of a sharded run a record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// 1-based shard number.
    pub index: u32,
    /// Number of shards.
    pub count: u32,
}

impl Shard {
    /// Parse `I/N`.
    pub fn parse(s: &str) -> std::result::Result<Shard, ShardError> {
        let bad = |why| ShardError {
            text: s.to_string(),
            why,
        };
        let (i, n) = s.split_once('/').ok_or_else(|| bad(ShardWhy::NotIOverN))?;
        let index: u32 = i
            .trim()
            .parse()
            .map_err(|e| bad(ShardWhy::INotANumber(e)))?;
        let count: u32 = n
            .trim()
            .parse()
            .map_err(|e| bad(ShardWhy::NNotANumber(e)))?;
        if count == 0 || index == 0 || index > count {
            return Err(bad(ShardWhy::OutOfRange));
        }
        Ok(Shard { index, count })
    }

    /// Whether this shard replays session `id`: a stable hash of the id
    /// (SHA-256, first 8 bytes) modulo N, so every machine agrees.
    pub fn owns(&self, id: &str) -> bool {
        use sha2::{Digest, Sha256};
        let d = Sha256::digest(id.as_bytes());
        let h = u64::from_be_bytes(d[..8].try_into().expect("8 bytes"));
        h % self.count as u64 == (self.index - 1) as u64
    }
}

/// A `--shard` value that is not one: `` `TEXT`: why ``.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}`: {why}")]
pub struct ShardError {
    /// The value as given.
    pub text: String,
    /// What is wrong with it.
    #[source]
    pub why: ShardWhy,
}

/// What is wrong with a `--shard` value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardWhy {
    /// No `/`.
    #[error("expected I/N, e.g. 2/4")]
    NotIOverN,
    /// The part before `/` is not a number.
    #[error("I is not a number")]
    INotANumber(#[source] std::num::ParseIntError),
    /// The part after `/` is not a number.
    #[error("N is not a number")]
    NNotANumber(#[source] std::num::ParseIntError),
    /// Not `1 <= I <= N`.
    #[error("need 1 <= I <= N")]
    OutOfRange,
}

/// An input file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileRecord {
    /// Path as given.
    pub path: String,
    /// Format name.
    pub format: String,
    /// SHA-256 of its bytes.
    pub sha256: String,
    /// Size.
    pub bytes: u64,
    /// Lines skipped with `--lenient`.
    pub skipped_lines: u64,
    /// Records of unknown types.
    pub unknown_records: u64,
}

/// The inputs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InputsRecord {
    /// Every file read (all of them, also in a shard).
    pub files: Vec<FileRecord>,
    /// Skipped lines, as messages.
    pub skipped: Vec<String>,
}

/// The labels file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelsRecord {
    /// Path as given.
    pub file: Option<String>,
    /// Its SHA-256.
    pub sha256: Option<String>,
    /// Warnings (unknown sessions with `--lenient`...).
    pub warnings: Vec<String>,
}

/// One replayed session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// Session id.
    pub id: String,
    /// Turns.
    pub turns: u32,
    /// Records.
    pub events: u32,
    /// Content came as whole messages.
    pub whole_messages: bool,
    /// `loop`, `clean` or none.
    pub label: Option<String>,
    /// Labelled onset turn of a loop.
    pub onset_turn: Option<u32>,
}

impl SessionRecord {
    /// A session and its label.
    pub fn of(s: &Session, l: Option<Label>) -> SessionRecord {
        SessionRecord::new(&s.id, s.turns, s.events.len() as u32, s.whole_messages, l)
    }

    /// A streamed session and its label.
    pub fn of_outcomes(s: &crate::replay::SessionOutcomes, l: Option<Label>) -> SessionRecord {
        SessionRecord::new(&s.id, s.turns, s.events, s.whole_messages, l)
    }

    fn new(id: &str, turns: u32, events: u32, whole_messages: bool, l: Option<Label>) -> Self {
        SessionRecord {
            id: id.to_string(),
            turns,
            events,
            whole_messages,
            label: l.map(|l| if l.is_loop { "loop" } else { "clean" }.to_string()),
            onset_turn: l.and_then(|l| l.onset_turn),
        }
    }

    /// The label as the scorer reads it.
    pub fn label(&self) -> Option<Label> {
        self.label.as_deref().map(|l| Label {
            is_loop: l == "loop",
            onset_turn: self.onset_turn,
        })
    }
}

/// The first detection of a configuration on a session.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FirstDetection {
    /// Turn.
    pub turn: u32,
    /// 1-based record index.
    pub event: u32,
    /// Kind.
    pub kind: String,
    /// Detail (first 300 characters).
    pub detail: String,
    /// Where the triggering record is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<PlaceRecord>,
}

impl FirstDetection {
    /// The record of a detection (its place not yet known).
    pub fn of(d: &crate::detect::Detection) -> FirstDetection {
        FirstDetection {
            turn: d.turn,
            event: d.event,
            kind: d.kind.to_string(),
            // The first 300 characters, copied at once.
            detail: d.detail[..d
                .detail
                .char_indices()
                .nth(300)
                .map_or(d.detail.len(), |(i, _)| i)]
                .to_string(),
            place: None,
        }
    }
}

/// Where a record is in the user's files: the file, and its 1-based line or
/// (whole-document formats) its JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PlaceRecord {
    /// File as given (or as a converted file's `src` names it).
    pub file: String,
    /// 1-based line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// JSON pointer inside a whole-document file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
}

impl PlaceRecord {
    /// The place of a record, if its file is known.
    pub fn of(p: crate::event::Provenance) -> Option<PlaceRecord> {
        (!p.file.is_empty()).then(|| PlaceRecord {
            file: p.file.to_string(),
            line: p.line,
            pointer: p.pointer.map(str::to_string),
        })
    }
}

impl std::fmt::Display for PlaceRecord {
    /// `FILE:LINE`, `FILE#POINTER` without a line, else `FILE`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, &self.pointer) {
            (Some(l), _) => write!(f, "{}:{l}", self.file),
            (None, Some(p)) => write!(f, "{}#{p}", self.file),
            (None, None) => f.write_str(&self.file),
        }
    }
}

/// What one configuration did on one session, as scores and outputs need it.
/// A large sweep holds millions, so it is small (32 bytes): what is rare or
/// shared between configurations (the first detection, the policy's stop and
/// warnings) sits behind shared pointers.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(from = "FlatHit", into = "FlatHit")]
pub struct Hit {
    /// Index of the session in [`SweepRecord::sessions`].
    pub session: u32,
    /// Judge checks due.
    pub judge_due: u32,
    /// Of those, without a recorded verdict.
    pub judge_no_verdict: u32,
    /// The scored (first) detection; configurations that detect the same
    /// thing on a session share one.
    pub first: Option<Arc<FirstDetection>>,
    /// What the policy did (`None`: no stop, no warning, nothing unheeded);
    /// configurations that act alike on a session share one.
    pub effect: Option<Arc<Effect>>,
}

/// What a configuration's policy did to a session: its stop and what came
/// after it, its warnings, and the detections nobody acted on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Effect {
    /// Turn where the policy stops the session.
    pub stop_turn: Option<u32>,
    /// Warnings before the stop.
    pub warnings: u32,
    /// Detections nobody acted on.
    pub unheeded: u32,
    /// Turns after the stop.
    pub turns_after_stop: u32,
    /// Tokens after the stop.
    pub tokens_after_stop: u64,
}

impl Effect {
    /// The effect, or `None` when the policy did nothing.
    pub fn new(e: Effect) -> Option<Arc<Effect>> {
        (e != Effect::default()).then(|| Arc::new(e))
    }
}

/// A hit as one object with every field (how schema 2 wrote it).
#[derive(Serialize, Deserialize)]
struct FlatHit {
    session: u32,
    first: Option<Arc<FirstDetection>>,
    stop_turn: Option<u32>,
    #[serde(default, skip_serializing_if = "is_zero")]
    warnings: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    unheeded: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    judge_due: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    judge_no_verdict: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    turns_after_stop: u32,
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    tokens_after_stop: u64,
}

impl From<FlatHit> for Hit {
    fn from(f: FlatHit) -> Hit {
        Hit {
            session: f.session,
            judge_due: f.judge_due,
            judge_no_verdict: f.judge_no_verdict,
            first: f.first,
            effect: Effect::new(Effect {
                stop_turn: f.stop_turn,
                warnings: f.warnings,
                unheeded: f.unheeded,
                turns_after_stop: f.turns_after_stop,
                tokens_after_stop: f.tokens_after_stop,
            }),
        }
    }
}

impl From<Hit> for FlatHit {
    fn from(h: Hit) -> FlatHit {
        FlatHit {
            session: h.session,
            stop_turn: h.stop_turn(),
            warnings: h.warnings(),
            unheeded: h.unheeded(),
            judge_due: h.judge_due,
            judge_no_verdict: h.judge_no_verdict,
            turns_after_stop: h.turns_after_stop(),
            tokens_after_stop: h.tokens_after_stop(),
            first: h.first,
        }
    }
}

fn is_zero(x: &u32) -> bool {
    *x == 0
}

fn is_zero_u64(x: &u64) -> bool {
    *x == 0
}

/// One session's hits built from its configurations' briefs, sharing what
/// configurations agree on: a large grid holds a few distinct detections and
/// effects per session, not one per hit. Each first detection is copied once
/// per source (check and index) and then shared by value too, as two checks
/// may detect alike; effects are shared by value. `summary.json` writes each
/// shared detection once, so this sharing is part of its bytes.
#[derive(Default)]
pub struct SessionHits {
    by_source: Vec<((u32, u32), Arc<FirstDetection>)>,
    distinct: Vec<Arc<FirstDetection>>,
    effects: std::collections::HashSet<Arc<Effect>>,
}

impl SessionHits {
    /// The hit of `brief`, or `None` when nothing happened at all;
    /// `detection(source)` makes the record of a first detection not yet
    /// met (place included).
    pub fn hit(
        &mut self,
        brief: &crate::replay::Brief,
        detection: impl FnOnce((u32, u32)) -> FirstDetection,
    ) -> Option<Hit> {
        let o = &brief.outcome;
        if brief.first.is_none() && *o == crate::replay::Outcome::default() {
            return None;
        }
        let first = brief.first.map(|source| {
            if let Some((_, d)) = self.by_source.iter().find(|(k, _)| *k == source) {
                return d.clone();
            }
            let d = detection(source);
            let d = match self
                .distinct
                .iter()
                .find(|x| x.event == d.event && ***x == d)
            {
                Some(x) => x.clone(),
                None => {
                    let d = Arc::new(d);
                    self.distinct.push(d.clone());
                    d
                }
            };
            self.by_source.push((source, d.clone()));
            d
        });
        let e = Effect {
            stop_turn: o.stop.map(|s| s.turn),
            warnings: o.warnings,
            unheeded: o.unheeded,
            turns_after_stop: o.turns_after_stop,
            tokens_after_stop: o.tokens_after_stop,
        };
        // Hashed: a grid of many policies may give a session many effects.
        let effect = (e != Effect::default()).then(|| match self.effects.get(&e) {
            Some(x) => x.clone(),
            None => {
                let x = Arc::new(e);
                self.effects.insert(x.clone());
                x
            }
        });
        Some(Hit {
            session: 0,
            judge_due: o.judge_due,
            judge_no_verdict: o.judge_no_verdict,
            first,
            effect,
        })
    }
}

impl Hit {
    /// The record of an outcome, or `None` when nothing happened at all.
    pub fn from_outcome(session: u32, o: &Outcome) -> Option<Hit> {
        // Most outcomes of a large grid are empty: say so without building one.
        let quiet = o.detections.is_empty()
            && o.stop.is_none()
            && o.warnings == 0
            && o.unheeded == 0
            && o.judge_due == 0
            && o.judge_no_verdict == 0
            && o.turns_after_stop == 0
            && o.tokens_after_stop == 0;
        if quiet {
            return None;
        }
        Some(Hit {
            session,
            first: o.first().map(|d| Arc::new(FirstDetection::of(d))),
            effect: Effect::new(Effect {
                stop_turn: o.stop.map(|s| s.turn),
                warnings: o.warnings,
                unheeded: o.unheeded,
                turns_after_stop: o.turns_after_stop,
                tokens_after_stop: o.tokens_after_stop,
            }),
            judge_due: o.judge_due,
            judge_no_verdict: o.judge_no_verdict,
        })
    }

    /// The hit with its detection's place, `place(event)` telling where a
    /// record of its session is.
    pub fn placed<'a>(
        mut self,
        place: impl Fn(u32) -> Option<crate::event::Provenance<'a>>,
    ) -> Hit {
        if let Some(d) = &mut self.first {
            Arc::make_mut(d).place = place(d.event).and_then(PlaceRecord::of);
        }
        self
    }

    /// Turn of the first detection.
    pub fn turn(&self) -> Option<u32> {
        self.first.as_ref().map(|d| d.turn)
    }

    /// Turn where the policy stops the session.
    pub fn stop_turn(&self) -> Option<u32> {
        self.effect.as_ref().and_then(|e| e.stop_turn)
    }

    /// Warnings before the stop.
    pub fn warnings(&self) -> u32 {
        self.effect.as_ref().map_or(0, |e| e.warnings)
    }

    /// Detections nobody acted on.
    pub fn unheeded(&self) -> u32 {
        self.effect.as_ref().map_or(0, |e| e.unheeded)
    }

    /// Turns after the stop.
    pub fn turns_after_stop(&self) -> u32 {
        self.effect.as_ref().map_or(0, |e| e.turns_after_stop)
    }

    /// Tokens after the stop.
    pub fn tokens_after_stop(&self) -> u64 {
        self.effect.as_ref().map_or(0, |e| e.tokens_after_stop)
    }
}

/// One configuration's hits, in session order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ConfigOutcomes {
    /// Configuration id.
    pub config: String,
    /// Sessions where something happened, in session order.
    pub hits: Vec<Hit>,
}

impl ConfigOutcomes {
    /// Dense view: one entry per session (`None`: nothing happened).
    pub fn dense(&self, sessions: usize) -> Vec<Option<&Hit>> {
        let mut v = vec![None; sessions];
        for h in &self.hits {
            v[h.session as usize] = Some(h);
        }
        v
    }
}

/// What the report shows of a session where the stock profiles disagree: a
/// timeline and the records around each stock profile's first detection.
/// Kept in the record because a merged run has no inputs to read them from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMaterial {
    /// Session id.
    pub session: String,
    /// How many stock profiles fired against how many did not (the smaller).
    pub disagreement: u32,
    /// Per turn: tool calls, failed tool results, content records.
    pub timeline: Vec<[u32; 3]>,
    /// Excerpts around the detections: `event -> lines`.
    pub excerpts: Vec<Excerpt>,
}

/// The records around one event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Excerpt {
    /// The event.
    pub event: u32,
    /// The lines.
    pub lines: Vec<ExcerptLine>,
}

/// One record of an excerpt, shortened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExcerptLine {
    /// 1-based record index.
    pub event: u32,
    /// Its turn.
    pub turn: u32,
    /// Record type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Text (escaped by the writers).
    pub text: String,
    /// The detection's own record.
    pub hit: bool,
    /// Where the record is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<PlaceRecord>,
}

/// A sweep's result: everything every writer renders, serializable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRecord {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// looptune version that wrote it.
    pub looptune_version: String,
    /// The grid.
    pub grid: GridRecord,
    /// How to choose.
    pub options: OptionsRecord,
    /// The shard this record holds (`None`: every session).
    pub shard: Option<Shard>,
    /// Inputs.
    pub inputs: InputsRecord,
    /// Labels file.
    pub labels_file: LabelsRecord,
    /// Sessions, sorted by id.
    pub sessions: Vec<SessionRecord>,
    /// Per configuration (grid order), the sessions where something happened
    /// (written compactly: see [`compact`]).
    #[serde(with = "compact")]
    pub outcomes: Vec<ConfigOutcomes>,
    /// Material for the sessions where stock profiles disagree most (this part's best candidates).
    pub material: Vec<SessionMaterial>,
    /// For every labelled session: the records around its labelled onset and
    /// around every configuration's first detection, so the report can
    /// explain each false positive and missed loop without the inputs.
    #[serde(default)]
    pub explain: Vec<SessionLines>,
    /// Wall time of the run (the longest part's, after a merge).
    #[serde(default)]
    pub wall_time_ms: u64,
}

impl SweepRecord {
    /// Assemble a record from its parts; `inputs` gives the files and
    /// skips (its sessions are not read).
    #[allow(clippy::too_many_arguments)]
    pub fn assemble(
        grid: GridRecord,
        options: OptionsRecord,
        shard: Option<Shard>,
        inputs: &Corpus,
        labels: &crate::labels::Labels,
        sessions: Vec<SessionRecord>,
        outcomes: Vec<ConfigOutcomes>,
        material: Vec<SessionMaterial>,
        explain: Vec<SessionLines>,
    ) -> SweepRecord {
        SweepRecord {
            schema_version: SCHEMA_VERSION,
            looptune_version: env!("CARGO_PKG_VERSION").to_string(),
            grid,
            options,
            shard,
            inputs: InputsRecord {
                files: inputs
                    .files
                    .iter()
                    .map(|f| FileRecord {
                        path: f.path.clone(),
                        format: f.format.clone(),
                        sha256: f.sha256.clone(),
                        bytes: f.bytes,
                        skipped_lines: f.skipped_lines,
                        unknown_records: f.unknown_records,
                    })
                    .collect(),
                skipped: inputs.skipped.clone(),
            },
            labels_file: LabelsRecord {
                file: labels.file.as_ref().map(|f| f.0.clone()),
                sha256: labels.file.as_ref().map(|f| f.1.clone()),
                warnings: labels.warnings.clone(),
            },
            sessions,
            outcomes,
            material,
            explain,
            wall_time_ms: 0,
        }
    }

    /// Sessions where the stock profiles disagree most: (disagreement, session
    /// index), most first, labelled before unlabelled, then by id; at most
    /// [`DISAGREEMENTS`]. Each session's rank depends on that session alone,
    /// so the best of every shard's best are the best of the whole run.
    pub fn disagreement_candidates(&self) -> Vec<(u32, usize)> {
        let stock: Vec<usize> = (0..self.grid.configs.len())
            .filter(|&c| self.grid.configs[c].stock)
            .collect();
        let n = self.sessions.len();
        let mut fired = vec![0u32; n];
        for &c in &stock {
            for h in &self.outcomes[c].hits {
                if h.first.is_some() {
                    fired[h.session as usize] += 1;
                }
            }
        }
        let total = stock.len() as u32;
        let mut ranked: Vec<(u32, usize)> = (0..n)
            .map(|s| (fired[s].min(total - fired[s]), s))
            .filter(|(d, _)| *d > 0)
            .collect();
        ranked.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then(
                    self.sessions[a.1]
                        .label
                        .is_none()
                        .cmp(&self.sessions[b.1].label.is_none()),
                )
                .then(self.sessions[a.1].id.cmp(&self.sessions[b.1].id))
        });
        ranked.truncate(DISAGREEMENTS);
        ranked
    }

    /// Merge records of disjoint shards of one run into the record of the whole run.
    pub fn merge(parts: Vec<SweepRecord>) -> Result<SweepRecord> {
        let mut parts = parts.into_iter();
        let mut whole = parts
            .next()
            .ok_or_else(|| Error::Usage("merge: no parts given".into()))?;
        let mut seen_shards: Vec<Shard> = whole.shard.into_iter().collect();
        let mut all_outcomes: Vec<Vec<(String, Hit)>> = whole
            .outcomes
            .iter()
            .map(|c| {
                c.hits
                    .iter()
                    .map(|h| (whole.sessions[h.session as usize].id.clone(), h.clone()))
                    .collect()
            })
            .collect();
        for p in parts {
            let same = |what: &str, ok: bool| {
                if ok {
                    Ok(())
                } else {
                    Err(Error::Usage(format!(
                        "merge: the parts come from different runs ({what} differ)"
                    )))
                }
            };
            same("grids", p.grid == whole.grid)?;
            same("options", p.options == whole.options)?;
            same("inputs", p.inputs == whole.inputs)?;
            same("labels", p.labels_file == whole.labels_file)?;
            same("versions", p.looptune_version == whole.looptune_version)?;
            if let Some(s) = p.shard {
                if seen_shards.contains(&s) {
                    return Err(Error::Usage(format!(
                        "merge: shard {}/{} is given twice",
                        s.index, s.count
                    )));
                }
                seen_shards.push(s);
            }
            for (acc, c) in all_outcomes.iter_mut().zip(&p.outcomes) {
                acc.extend(
                    c.hits
                        .iter()
                        .map(|h| (p.sessions[h.session as usize].id.clone(), h.clone())),
                );
            }
            whole.wall_time_ms = whole.wall_time_ms.max(p.wall_time_ms);
            whole.sessions.extend(p.sessions);
            whole.material.extend(p.material);
            whole.explain.extend(p.explain);
        }
        let counts: Vec<u32> = seen_shards.iter().map(|s| s.count).collect();
        if let Some(&n) = counts.first() {
            if counts.iter().any(|&c| c != n) {
                return Err(Error::Usage(
                    "merge: the parts were split with different shard counts".into(),
                ));
            }
            if seen_shards.len() != n as usize {
                let missing: Vec<String> = (1..=n)
                    .filter(|i| !seen_shards.iter().any(|s| s.index == *i))
                    .map(|i| format!("{i}/{n}"))
                    .collect();
                return Err(Error::Usage(format!(
                    "merge: shard {} missing",
                    missing.join(", ")
                )));
            }
        }
        // Sessions in id order, as one machine reads them.
        whole.sessions.sort_by(|a, b| a.id.cmp(&b.id));
        if let Some(w) = whole.sessions.windows(2).find(|w| w[0].id == w[1].id) {
            return Err(Error::Usage(format!(
                "merge: session `{}` is in more than one part",
                w[0].id
            )));
        }
        let index: BTreeMap<&str, u32> = whole
            .sessions
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.as_str(), i as u32))
            .collect();
        for (c, acc) in whole.outcomes.iter_mut().zip(all_outcomes) {
            let mut hits: Vec<Hit> = acc
                .into_iter()
                .map(|(id, mut h)| {
                    h.session = index[id.as_str()];
                    h
                })
                .collect();
            hits.sort_by_key(|h| h.session);
            c.hits = hits;
        }
        let keep: Vec<String> = whole
            .disagreement_candidates()
            .into_iter()
            .map(|(_, s)| whole.sessions[s].id.clone())
            .collect();
        let mut material: Vec<SessionMaterial> = whole
            .material
            .drain(..)
            .filter(|m| keep.contains(&m.session))
            .collect();
        material.sort_by_key(|m| keep.iter().position(|k| *k == m.session));
        whole.material = material;
        whole.explain.sort_by(|a, b| a.session.cmp(&b.session));
        whole.shard = None;
        Ok(whole)
    }

    /// Load the record a sweep wrote (`DIR/summary.json`, or the file itself).
    pub fn load(path: &Path) -> Result<SweepRecord> {
        let file = if path.is_dir() {
            path.join("summary.json")
        } else {
            path.to_path_buf()
        };
        let text = std::fs::read(&file).map_err(|e| Error::io(&file, e))?;
        let name = file.display().to_string();
        // The version first, without building a tree of the whole file (a
        // large sweep's outcomes are millions of values).
        #[derive(Deserialize)]
        struct Version {
            schema_version: Option<u64>,
        }
        let version = serde_json::from_slice::<Version>(&text)
            .map_err(|e| Error::Line {
                path: name.clone(),
                line: e.line() as u64,
                message: format!("not valid JSON ({e})"),
            })?
            .schema_version;
        // Versions 2 and 3 differ only in how the outcomes are written, which
        // the reader tells by their shape: last night's baseline still loads.
        if !matches!(version, Some(v) if (2..=SCHEMA_VERSION as u64).contains(&v)) {
            return Err(Error::File {
                path: name,
                message: format!(
                    "schema_version {} is not {SCHEMA_VERSION}: written by another looptune version; rerun the sweep",
                    version.map_or("missing".into(), |v| v.to_string())
                ),
            });
        }
        let mut record: SweepRecord = serde_json::from_slice(&text).map_err(|e| Error::File {
            path: name.clone(),
            message: format!("not a looptune result ({e})"),
        })?;
        // Every reader indexes sessions by a hit's session and expects them
        // in order: a hand-edited file is refused here, not in a panic later.
        let n = record.sessions.len() as u64;
        for c in &record.outcomes {
            let mut next = 0u64;
            for h in &c.hits {
                let s = h.session as u64;
                if s < next || s >= n {
                    return Err(Error::File {
                        path: name,
                        message: format!(
                            "outcomes: configuration {} has a hit on session {s}, {}",
                            c.config,
                            if s >= n {
                                format!("but the result lists {n} sessions")
                            } else {
                                "out of session order".to_string()
                            }
                        ),
                    });
                }
                next = s + 1;
            }
        }
        record.schema_version = SCHEMA_VERSION;
        Ok(record)
    }
}

/// Most detection points kept per labelled session (distinct first-detection events).
const EXPLAIN_EVENTS: usize = 64;

/// The records of a labelled session around its onset and its detections.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionLines {
    /// Session id.
    pub session: String,
    /// Records, each once, in event order.
    pub lines: Vec<ExcerptLine>,
}

impl SessionLines {
    /// The kept records within the excerpt radius of `event`.
    pub fn around(&self, event: u32) -> Vec<ExcerptLine> {
        let r = EXCERPT_RADIUS as u32;
        self.lines
            .iter()
            .filter(|l| l.event + r >= event && l.event <= event + r)
            .map(|l| ExcerptLine {
                hit: l.event == event,
                ..l.clone()
            })
            .collect()
    }
}

/// First event of `turn` in a session (where a labelled onset begins).
pub fn first_event_of_turn(s: &Session, turn: u32) -> Option<u32> {
    s.events
        .iter()
        .position(|e| e.turn >= turn)
        .map(|i| i as u32 + 1)
}

/// Where a record of the session at hand is.
pub type PlaceOf<'a> = dyn Fn(&crate::event::Origin) -> Option<PlaceRecord> + 'a;

/// The records of a labelled session around `onset_turn` and around each of
/// `events` (its configurations' distinct first detections, sorted).
pub fn explain_lines(
    s: &Session,
    place: &PlaceOf,
    mut events: Vec<u32>,
    onset_turn: Option<u32>,
) -> SessionLines {
    events.truncate(EXPLAIN_EVENTS);
    if let Some(on) = onset_turn {
        events.extend(first_event_of_turn(s, on));
    }
    let mut keep = vec![false; s.events.len()];
    for e in events {
        let at = e as usize - 1;
        for k in keep
            .iter_mut()
            .take((at + EXCERPT_RADIUS + 1).min(s.events.len()))
            .skip(at.saturating_sub(EXCERPT_RADIUS))
        {
            *k = true;
        }
    }
    SessionLines {
        session: s.id.clone(),
        lines: (0..s.events.len())
            .filter(|&i| keep[i])
            .map(|i| line(s, place, i, false))
            .collect(),
    }
}

/// Timeline and excerpts of one session, around each of `events` (the stock
/// profiles' distinct first detections, sorted).
pub fn material(
    s: &Session,
    place: &PlaceOf,
    disagreement: u32,
    events: Vec<u32>,
) -> SessionMaterial {
    let mut timeline: Vec<[u32; 3]> = vec![[0; 3]; s.turns as usize + 1];
    for e in &s.events {
        let row = &mut timeline[e.turn as usize];
        match &e.record {
            Record::ToolCall { .. } => row[0] += 1,
            Record::ToolResult {
                error: Some(true), ..
            } => row[1] += 1,
            Record::Content { .. } => row[2] += 1,
            _ => {}
        }
    }
    SessionMaterial {
        session: s.id.clone(),
        disagreement,
        timeline,
        excerpts: events
            .into_iter()
            .map(|e| Excerpt {
                event: e,
                lines: excerpt(s, place, e),
            })
            .collect(),
    }
}

/// The records around an event, as short text lines.
pub fn excerpt(s: &Session, place: &PlaceOf, event: u32) -> Vec<ExcerptLine> {
    let at = event as usize - 1;
    let from = at.saturating_sub(EXCERPT_RADIUS);
    let to = (at + EXCERPT_RADIUS + 1).min(s.events.len());
    (from..to).map(|i| line(s, place, i, i == at)).collect()
}

/// Record `i` of a session as a short line.
fn line(s: &Session, place: &PlaceOf, i: usize, hit: bool) -> ExcerptLine {
    let e = &s.events[i];
    let text = record_text(&e.record);
    let mut short: String = text.chars().take(EXCERPT_CHARS).collect();
    if text.chars().count() > EXCERPT_CHARS {
        short.push('…');
    }
    ExcerptLine {
        event: i as u32 + 1,
        turn: e.turn,
        kind: e.record.type_name().to_string(),
        text: short,
        hit,
        place: place(&e.origin),
    }
}

/// A record as one line of text (unescaped).
pub fn record_text(r: &Record) -> String {
    match r {
        Record::User { text, .. } | Record::Content { text } | Record::Thought { text } => {
            text.clone()
        }
        Record::ToolCall { name, args, .. } => {
            format!("{name} {}", crate::js::stringify_object(args))
        }
        Record::ToolResult { output, error, .. } => format!(
            "{}{}",
            if *error == Some(true) { "[error] " } else { "" },
            output.as_deref().unwrap_or("")
        ),
        Record::Judge { confidence, .. } => format!("confidence {confidence}"),
        Record::LoopDetected { kind, detail } => format!(
            "{} {}",
            kind.as_deref().unwrap_or(""),
            detail.as_deref().unwrap_or("")
        ),
        _ => String::new(),
    }
}

/// The outcomes as `summary.json` holds them. A large sweep has millions of
/// hits, and on one session most configurations do one of a few things: so
/// each distinct detection is written once (`detections`), each session's
/// distinct hits once (`rows[session]`, each an array `[detection,
/// stop_turn, warnings, unheeded, judge_due, judge_no_verdict,
/// turns_after_stop, tokens_after_stop]`, `detection` an index into
/// `detections` or `null`, trailing zeros and nulls left out), and each
/// configuration's hits as small numbers read with a cursor that starts at
/// session 0: `k >= 0` is row `k` of the cursor's session, which then moves
/// on by one; `-n` moves it on by `n` sessions without a hit. About two bytes
/// per hit (schema 3 wrote each hit's values, about 28).
pub mod compact {
    use super::{ConfigOutcomes, Effect, FirstDetection, Hit};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::HashMap;
    use std::sync::Arc;

    /// Text already in JSON, written as it is.
    struct Raw<'a>(&'a str);

    impl Serialize for Raw<'_> {
        fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
            // Handed to serde_json as a raw value, the way its own
            // `RawValue` serializes itself, but without `RawValue::from_string`
            // parsing the text again to check it (that took longer than
            // formatting it; the `raw_value` feature makes serde_json know
            // the token). If serde_json ever changes the token, the
            // round-trip tests below fail, since the rows would come out
            // as an object.
            use serde::ser::SerializeStruct;
            const RAW: &str = "$serde_json::private::RawValue";
            let mut raw = ser.serialize_struct(RAW, 1)?;
            raw.serialize_field(RAW, self.0)?;
            raw.end()
        }
    }

    /// Sessions whose distinct rows are found together, on one thread.
    pub(super) const SESSIONS_AT_ONCE: u32 = 256;

    /// What a hit's row is made of, by address: hits that share their
    /// detection and effect (as a sweep's and a loaded record's do) compare
    /// without reading them.
    #[derive(Clone, Copy, PartialEq, Eq)]
    struct Same {
        judge_due: u32,
        judge_no_verdict: u32,
        first: usize,
        effect: usize,
    }

    impl Same {
        fn of(h: &Hit) -> Same {
            Same {
                judge_due: h.judge_due,
                judge_no_verdict: h.judge_no_verdict,
                first: h.first.as_ref().map_or(0, |d| Arc::as_ptr(d) as usize),
                effect: h.effect.as_ref().map_or(0, |e| Arc::as_ptr(e) as usize),
            }
        }
    }

    /// One block of sessions: each session's distinct hits and detections,
    /// and which row each hit in the block is.
    struct Block<'a> {
        /// Each session's distinct hits (its rows), in the order
        /// configurations meet them, with the block's number of the row's
        /// detection.
        rows: Vec<Vec<(&'a Hit, Option<u32>)>>,
        /// The block's distinct detections, session by session, as the rows meet them.
        detections: Vec<&'a FirstDetection>,
        /// The row of each hit in the block, configuration after configuration.
        picks: Vec<u32>,
        /// Where each configuration's picks start (one more than configurations).
        starts: Vec<usize>,
    }

    /// The distinct hits of the sessions from `first` on, given each
    /// configuration's hits on them. Rows and detections are numbered as
    /// configurations meet them session by session, so the bytes depend
    /// neither on how sessions are blocked nor on the threads.
    fn block<'a>(hits: &[&'a [Hit]], first: u32, sessions: usize) -> Block<'a> {
        let mut distinct: Vec<Vec<(Same, &Hit)>> = vec![Vec::new(); sessions];
        // The row the configuration before met: neighbours in a grid often agree.
        let mut last = vec![0usize; sessions];
        let mut picks = Vec::with_capacity(hits.iter().map(|h| h.len()).sum());
        let mut starts = Vec::with_capacity(hits.len() + 1);
        for c in hits {
            starts.push(picks.len());
            for h in c.iter() {
                let at = (h.session - first) as usize;
                let known = &mut distinct[at];
                let same = Same::of(h);
                let k = match known.get(last[at]) {
                    Some((k, _)) if *k == same => last[at],
                    _ => match known.iter().position(|(k, _)| *k == same) {
                        Some(k) => k,
                        // Shared apart in memory but equal: one row (rare).
                        None => match known.iter().position(|(_, k)| same_row(k, h)) {
                            Some(k) => k,
                            None => {
                                known.push((same, h));
                                known.len() - 1
                            }
                        },
                    },
                };
                last[at] = k;
                picks.push(k as u32);
            }
        }
        starts.push(picks.len());
        let mut detections: Vec<&FirstDetection> = Vec::new();
        let mut rows = Vec::with_capacity(sessions);
        for known in distinct {
            // A session's detections by value among its own (in a merged or
            // loaded record equal ones may sit apart in memory).
            let from = detections.len();
            let mut mine = Vec::with_capacity(known.len());
            for (_, h) in known {
                let d = h.first.as_deref().map(|d| {
                    let at = detections[from..]
                        .iter()
                        .position(|m| std::ptr::eq(*m, d) || **m == *d);
                    at.map_or_else(
                        || {
                            detections.push(d);
                            detections.len() - 1
                        },
                        |i| from + i,
                    ) as u32
                });
                mine.push((h, d));
            }
            rows.push(mine);
        }
        Block {
            rows,
            detections,
            picks,
            starts,
        }
    }

    /// Two hits of one session that write the same row, by value.
    fn same_row(a: &Hit, b: &Hit) -> bool {
        a.judge_due == b.judge_due
            && a.judge_no_verdict == b.judge_no_verdict
            && a.first == b.first
            && a.effect == b.effect
    }

    /// A block's sessions' rows as JSON (`[row,...]` each, joined by
    /// commas), its detections numbered from `offset`.
    fn rows_text(b: &Block, offset: u64) -> String {
        let mut out = String::new();
        for (i, rows) in b.rows.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('[');
            for (j, (h, d)) in rows.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                row(&mut out, h, d.map(|d| offset + d as u64));
            }
            out.push(']');
        }
        out
    }

    /// Configuration `c`'s hits as picks and skips (see the module's note).
    fn picks(c: usize, hits: &[Hit], blocks: &[Block]) -> String {
        let mut out = String::with_capacity(hits.len() * 3 + 2);
        out.push('[');
        let mut cursor = 0u32;
        let mut hits = hits.iter();
        let mut num = itoa::Buffer::new();
        for b in blocks {
            for &k in &b.picks[b.starts[c]..b.starts[c + 1]] {
                let h = hits.next().expect("a pick per hit");
                if h.session > cursor {
                    if out.len() > 1 {
                        out.push(',');
                    }
                    out.push('-');
                    out.push_str(num.format(h.session - cursor));
                }
                if out.len() > 1 {
                    out.push(',');
                }
                // Most picks are a digit.
                match k {
                    0..=9 => out.push((b'0' + k as u8) as char),
                    _ => out.push_str(num.format(k)),
                }
                cursor = h.session + 1;
            }
        }
        out.push(']');
        out
    }

    /// Every configuration's picks. A few configurations at a time are
    /// formatted on every thread of the pool, then written in order.
    struct AllConfigs<'a> {
        outcomes: &'a [ConfigOutcomes],
        blocks: &'a [Block<'a>],
    }

    /// Configurations formatted at once.
    pub(super) const CONFIGS_AT_ONCE: usize = 32;

    impl Serialize for AllConfigs<'_> {
        fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
            use rayon::prelude::*;
            use serde::ser::SerializeSeq;
            #[derive(Serialize)]
            struct OutConfig<'a> {
                config: &'a str,
                hits: Raw<'a>,
            }
            let mut seq = ser.serialize_seq(Some(self.outcomes.len()))?;
            for (chunk_at, chunk) in self.outcomes.chunks(CONFIGS_AT_ONCE).enumerate() {
                let first = chunk_at * CONFIGS_AT_ONCE;
                let texts: Vec<String> = chunk
                    .par_iter()
                    .enumerate()
                    .map(|(i, c)| picks(first + i, &c.hits, self.blocks))
                    .collect();
                for (c, text) in chunk.iter().zip(&texts) {
                    seq.serialize_element(&OutConfig {
                        config: &c.config,
                        hits: Raw(text),
                    })?;
                }
            }
            seq.end()
        }
    }

    /// One distinct hit's row (its session is where it is listed). Trailing
    /// defaults go: zero counts, then an absent stop turn, then an absent
    /// detection (a detection 0 or a stop at turn 0 stays). Formatted on the
    /// stack and appended at once.
    fn row(out: &mut String, h: &Hit, det: Option<u64>) {
        let (stop, warnings, unheeded, turns_after, tokens_after) = match h.effect.as_deref() {
            Some(e) => (
                e.stop_turn,
                e.warnings,
                e.unheeded,
                e.turns_after_stop,
                e.tokens_after_stop,
            ),
            None => (None, 0, 0, 0, 0),
        };
        let counts = [
            warnings as u64,
            unheeded as u64,
            h.judge_due as u64,
            h.judge_no_verdict as u64,
            turns_after as u64,
            tokens_after,
        ];
        let mut n = 2 + counts.len();
        while n > 2 && counts[n - 3] == 0 {
            n -= 1;
        }
        let stop = stop.map(u64::from);
        if n == 2 && stop.is_none() {
            n = if det.is_none() { 0 } else { 1 };
        }
        // Eight values of at most 20 digits, seven commas, two brackets.
        let mut buf = [0u8; 8 * 20 + 9];
        let mut at = 0;
        let mut num = itoa::Buffer::new();
        let mut put = |buf: &mut [u8], at: &mut usize, v: Option<u64>| {
            let text: &[u8] = match v {
                Some(v) => num.format(v).as_bytes(),
                None => b"null",
            };
            buf[*at..*at + text.len()].copy_from_slice(text);
            *at += text.len();
        };
        buf[at] = b'[';
        at += 1;
        let values = [det, stop].into_iter().chain(counts.map(Some));
        for (i, v) in values.take(n).enumerate() {
            if i > 0 {
                buf[at] = b',';
                at += 1;
            }
            put(&mut buf, &mut at, v);
        }
        buf[at] = b']';
        at += 1;
        // ASCII digits, commas, brackets and `null` only.
        out.push_str(std::str::from_utf8(&buf[..at]).expect("ASCII"));
    }

    /// What serde_json writes for one row, for the test that holds [`row`] to it.
    #[cfg(test)]
    pub(super) fn row_by_serde(h: &Hit, det: Option<u64>) -> String {
        let mut v: Vec<Option<u64>> = vec![det, h.stop_turn().map(u64::from)];
        v.extend(
            [
                h.warnings() as u64,
                h.unheeded() as u64,
                h.judge_due as u64,
                h.judge_no_verdict as u64,
                h.turns_after_stop() as u64,
                h.tokens_after_stop(),
            ]
            .map(Some),
        );
        while v.len() > 2 && v.last() == Some(&Some(0)) {
            v.pop();
        }
        if v.len() == 2 && v[1].is_none() {
            v.pop();
            if v[0].is_none() {
                v.pop();
            }
        }
        serde_json::to_string(&v).unwrap()
    }

    /// [`row`] into a string, for the test.
    #[cfg(test)]
    pub(super) fn row_text(h: &Hit, det: Option<u64>) -> String {
        let mut s = String::new();
        row(&mut s, h, det);
        s
    }

    #[derive(Serialize)]
    struct Out<'a> {
        detections: AllDetections<'a>,
        rows: Raw<'a>,
        configs: AllConfigs<'a>,
    }

    /// Every block's detections, in block order.
    struct AllDetections<'a>(&'a [Block<'a>]);

    impl Serialize for AllDetections<'_> {
        fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
            ser.collect_seq(self.0.iter().flat_map(|b| &b.detections))
        }
    }

    /// Where a configuration's hits of each block of sessions start (the
    /// hits must be in session order).
    fn block_starts(c: &ConfigOutcomes) -> Result<Vec<usize>, String> {
        let mut starts = Vec::new();
        let mut next = 0u32;
        for (i, h) in c.hits.iter().enumerate() {
            if h.session < next {
                return Err(format!(
                    "configuration {}: hits out of session order",
                    c.config
                ));
            }
            next = h.session + 1;
            while starts.len() as u64 * SESSIONS_AT_ONCE as u64 <= h.session as u64 {
                starts.push(i);
            }
        }
        Ok(starts)
    }

    /// Write the outcomes compactly.
    pub fn serialize<S: Serializer>(
        outcomes: &[ConfigOutcomes],
        ser: S,
    ) -> Result<S::Ok, S::Error> {
        use rayon::prelude::*;
        let mut bounds: Vec<Vec<usize>> = outcomes
            .par_iter()
            .map(block_starts)
            .collect::<Result<_, String>>()
            .map_err(serde::ser::Error::custom)?;
        let blocks_n = bounds.iter().map(Vec::len).max().unwrap_or(0);
        let sessions = outcomes
            .iter()
            .filter_map(|c| c.hits.last())
            .map(|h| h.session + 1)
            .max()
            .unwrap_or(0);
        for (b, c) in bounds.iter_mut().zip(outcomes) {
            b.resize(blocks_n + 1, c.hits.len());
        }
        let blocks: Vec<Block> = (0..blocks_n)
            .into_par_iter()
            .map(|b| {
                let first = b as u32 * SESSIONS_AT_ONCE;
                let hits: Vec<&[Hit]> = outcomes
                    .iter()
                    .zip(&bounds)
                    .map(|(c, at)| &c.hits[at[b]..at[b + 1]])
                    .collect();
                let n = (sessions - first).min(SESSIONS_AT_ONCE);
                block(&hits, first, n as usize)
            })
            .collect();
        let offsets: Vec<u64> = blocks
            .iter()
            .scan(0u64, |at, b| {
                let o = *at;
                *at += b.detections.len() as u64;
                Some(o)
            })
            .collect();
        let texts: Vec<String> = blocks
            .par_iter()
            .zip(&offsets)
            .map(|(b, &o)| rows_text(b, o))
            .collect();
        let mut rows = String::with_capacity(texts.iter().map(|t| t.len() + 1).sum::<usize>() + 2);
        rows.push('[');
        for (i, t) in texts.iter().enumerate() {
            if i > 0 {
                rows.push(',');
            }
            rows.push_str(t);
        }
        rows.push(']');
        Out {
            detections: AllDetections(&blocks),
            rows: Raw(&rows),
            configs: AllConfigs {
                outcomes,
                blocks: &blocks,
            },
        }
        .serialize(ser)
    }

    /// Read the outcomes back (shared detections shared again).
    pub fn deserialize<'de, D: Deserializer<'de>>(de: D) -> Result<Vec<ConfigOutcomes>, D::Error> {
        de.deserialize_any(Either)
    }

    /// The compact object, or (schema 2) one object per configuration and hit.
    struct Either;

    impl<'de> serde::de::Visitor<'de> for Either {
        type Value = Vec<ConfigOutcomes>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("outcomes: {detections, configs} or a list of configurations")
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            Vec::<ConfigOutcomes>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            use serde::de::Error;
            // `detections` comes first (as written), so each hit row becomes
            // a hit as it is read: a large result's rows held as JSON arrays
            // took three times the memory of its hits.
            let mut shared = Shared::default();
            let mut configs: Option<Vec<ConfigOutcomes>> = None;
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    "detections" => {
                        let d: Vec<FirstDetection> = map.next_value()?;
                        shared.detections = Some(d.into_iter().map(Arc::new).collect());
                    }
                    "rows" => {
                        if shared.detections.is_none() {
                            return Err(A::Error::custom(
                                "outcomes: `detections` must come before `rows`",
                            ));
                        }
                        let rows = map.next_value_seed(Rows(&mut shared))?;
                        shared.rows = Some(rows);
                    }
                    "configs" => {
                        if shared.detections.is_none() {
                            return Err(A::Error::custom(
                                "outcomes: `detections` must come before `configs`",
                            ));
                        }
                        configs = Some(map.next_value_seed(Configs(&mut shared))?);
                    }
                    _ => {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
            }
            configs.ok_or_else(|| A::Error::missing_field("configs"))
        }
    }

    /// What hits share: the detections, equal effects, and (schema 4) each
    /// session's distinct hits.
    #[derive(Default)]
    struct Shared {
        detections: Option<Vec<Arc<FirstDetection>>>,
        effects: HashMap<Effect, Arc<Effect>>,
        rows: Option<Vec<Vec<Hit>>>,
    }

    /// The `configs` list, each configuration's hits converted as read.
    struct Configs<'s>(&'s mut Shared);

    impl<'de> serde::de::DeserializeSeed<'de> for Configs<'_> {
        type Value = Vec<ConfigOutcomes>;
        fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
            de.deserialize_seq(self)
        }
    }

    impl<'de> serde::de::Visitor<'de> for Configs<'_> {
        type Value = Vec<ConfigOutcomes>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of {config, hits}")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(c) = seq.next_element_seed(OneConfig(&mut *self.0))? {
                out.push(c);
            }
            Ok(out)
        }
    }

    /// One `{config, hits}`.
    struct OneConfig<'s>(&'s mut Shared);

    impl<'de> serde::de::DeserializeSeed<'de> for OneConfig<'_> {
        type Value = ConfigOutcomes;
        fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
            de.deserialize_map(self)
        }
    }

    impl<'de> serde::de::Visitor<'de> for OneConfig<'_> {
        type Value = ConfigOutcomes;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("{config, hits}")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            use serde::de::Error;
            let (mut config, mut hits) = (None, None);
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    "config" => config = Some(map.next_value::<String>()?),
                    "hits" => {
                        hits = Some(match &self.0.rows {
                            Some(rows) => map.next_value_seed(Picks(rows))?,
                            None => map.next_value_seed(Hits(&mut *self.0))?,
                        })
                    }
                    _ => {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
            }
            Ok(ConfigOutcomes {
                config: config.ok_or_else(|| A::Error::missing_field("config"))?,
                hits: hits.ok_or_else(|| A::Error::missing_field("hits"))?,
            })
        }
    }

    /// Each session's distinct hits (schema 4), made hits as read.
    struct Rows<'s>(&'s mut Shared);

    impl<'de> serde::de::DeserializeSeed<'de> for Rows<'_> {
        type Value = Vec<Vec<Hit>>;
        fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
            de.deserialize_seq(self)
        }
    }

    impl<'de> serde::de::Visitor<'de> for Rows<'_> {
        type Value = Vec<Vec<Hit>>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of each session's rows")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(rows) = seq.next_element::<Vec<Row>>()? {
                let session = out.len() as u64;
                let hits = rows
                    .into_iter()
                    .map(|r| {
                        // A row is a schema-3 hit row without its session.
                        let mut values = [Some(session); 9];
                        values[1..].copy_from_slice(&r.0[..8]);
                        hit_of(&values, self.0)
                    })
                    .collect::<Result<Vec<Hit>, A::Error>>()?;
                out.push(hits);
            }
            Ok(out)
        }
    }

    /// A configuration's picks and skips (schema 4), made hits as read.
    struct Picks<'s>(&'s [Vec<Hit>]);

    impl<'de> serde::de::DeserializeSeed<'de> for Picks<'_> {
        type Value = Vec<Hit>;
        fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
            de.deserialize_seq(self)
        }
    }

    impl<'de> serde::de::Visitor<'de> for Picks<'_> {
        type Value = Vec<Hit>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of row numbers and (negative) skips")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            use serde::de::Error;
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
            let mut cursor: u64 = 0;
            while let Some(v) = seq.next_element::<i64>()? {
                if v < 0 {
                    cursor = cursor.saturating_add(v.unsigned_abs());
                    continue;
                }
                let rows = self.0.get(cursor as usize).map_or(&[][..], |r| &r[..]);
                let hit = rows.get(v as usize).ok_or_else(|| {
                    A::Error::custom(format!(
                        "a hit names row {v} of session {cursor}, which has {} rows",
                        rows.len()
                    ))
                })?;
                out.push(hit.clone());
                cursor += 1;
            }
            Ok(out)
        }
    }

    /// A configuration's hit rows, each made a hit as read.
    struct Hits<'s>(&'s mut Shared);

    impl<'de> serde::de::DeserializeSeed<'de> for Hits<'_> {
        type Value = Vec<Hit>;
        fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
            de.deserialize_seq(self)
        }
    }

    impl<'de> serde::de::Visitor<'de> for Hits<'_> {
        type Value = Vec<Hit>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of hit rows")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
            while let Some(row) = seq.next_element::<Row>()? {
                out.push(hit_of(&row.0, self.0)?);
            }
            Ok(out)
        }
    }

    /// One hit row's values: `[session, detection, stop turn, warnings,
    /// unheeded, judge due, judge without verdict, turns after stop, tokens
    /// after stop]`, trailing ones left out when empty (more are ignored).
    struct Row([Option<u64>; 9]);

    impl<'de> Deserialize<'de> for Row {
        fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = Row;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("a hit row (a list of counts)")
                }
                fn visit_seq<A: serde::de::SeqAccess<'de>>(
                    self,
                    mut seq: A,
                ) -> Result<Row, A::Error> {
                    let mut row = [None; 9];
                    let mut i = 0;
                    while let Some(v) = seq.next_element::<Option<u64>>()? {
                        if let Some(slot) = row.get_mut(i) {
                            *slot = v;
                        }
                        i += 1;
                    }
                    Ok(Row(row))
                }
            }
            de.deserialize_seq(V)
        }
    }

    /// The hit a row stands for, its detection and effect shared.
    fn hit_of<E: serde::de::Error>(row: &[Option<u64>; 9], shared: &mut Shared) -> Result<Hit, E> {
        let at = |i: usize| row[i];
        let small = |i: usize| -> Result<u32, E> {
            u32::try_from(at(i).unwrap_or(0))
                .map_err(|_| E::custom("a hit's count is out of range"))
        };
        let detections = shared.detections.as_deref().unwrap_or_default();
        let first = match at(1) {
            None => None,
            Some(d) => Some(
                detections
                    .get(d as usize)
                    .ok_or_else(|| {
                        E::custom(format!(
                            "a hit names detection {d}, which is not in `detections`"
                        ))
                    })?
                    .clone(),
            ),
        };
        let effect = Effect {
            stop_turn: at(2).map(|_| small(2)).transpose()?,
            warnings: small(3)?,
            unheeded: small(4)?,
            turns_after_stop: small(7)?,
            tokens_after_stop: at(8).unwrap_or(0),
        };
        // Equal effects shared again, as the sweep shares them.
        let effect = (effect != Effect::default()).then(|| {
            shared
                .effects
                .entry(effect)
                .or_insert_with_key(|e| Arc::new(e.clone()))
                .clone()
        });
        Ok(Hit {
            session: u32::try_from(at(0).ok_or_else(|| E::custom("a hit without a session"))?)
                .map_err(|_| E::custom("a hit's session is out of range"))?,
            first,
            effect,
            judge_due: small(5)?,
            judge_no_verdict: small(6)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-formatted rows of `summary.json` are the bytes serde_json
    /// writes for the same values, on every shape a row can take.
    #[test]
    fn compact_rows_are_what_serde_json_writes() {
        use proptest::prelude::*;
        let small = prop_oneof![Just(0u32), Just(1), 0..u32::MAX];
        let effect = prop::option::of((
            prop::option::of(small.clone()),
            small.clone(),
            small.clone(),
            small.clone(),
            prop_oneof![Just(0u64), any::<u64>()],
        ));
        let hit = (
            small.clone(),
            small.clone(),
            small,
            effect,
            prop::option::of(0..5u64),
        );
        let mut runner = proptest::test_runner::TestRunner::default();
        runner
            .run(
                &hit,
                |(session, judge_due, judge_no_verdict, effect, det)| {
                    let h = Hit {
                        session,
                        judge_due,
                        judge_no_verdict,
                        first: None,
                        effect: effect.and_then(
                            |(stop_turn, warnings, unheeded, turns, tokens)| {
                                Effect::new(Effect {
                                    stop_turn,
                                    warnings,
                                    unheeded,
                                    turns_after_stop: turns,
                                    tokens_after_stop: tokens,
                                })
                            },
                        ),
                    };
                    prop_assert_eq!(compact::row_text(&h, det), compact::row_by_serde(&h, det));
                    Ok(())
                },
            )
            .unwrap();
    }

    /// Briefs that agree share one detection and one effect; a detection
    /// is made once per source; a brief where nothing happened is no hit.
    #[test]
    fn session_hits_share_what_configurations_agree_on() {
        use crate::replay::{Brief, Outcome, StopPoint};
        let stop = Some(StopPoint { event: 9, turn: 4 });
        let brief = |first, stop| Brief {
            first,
            outcome: Outcome {
                stop,
                judge_due: 1,
                ..Default::default()
            },
        };
        let det = |turn: u32| FirstDetection {
            turn,
            event: 9,
            kind: "tool_call".into(),
            detail: String::new(),
            place: None,
        };
        let mut made = 0;
        let mut sharing = SessionHits::default();
        let mut hit = |b: &Brief| {
            sharing.hit(b, |(check, _)| {
                made += 1;
                // Checks 0 and 1 detect alike; check 2 differs.
                det(if check == 2 { 5 } else { 4 })
            })
        };
        assert!(hit(&Brief::default()).is_none());
        let a = hit(&brief(Some((0, 3)), stop)).unwrap();
        let b = hit(&brief(Some((0, 3)), stop)).unwrap();
        let c = hit(&brief(Some((1, 0)), None)).unwrap();
        let d = hit(&brief(Some((2, 0)), stop)).unwrap();
        let quiet = hit(&brief(None, None)).unwrap();
        assert_eq!(made, 3, "one record per source");
        let (fa, fc, fd) = (a.first.unwrap(), c.first.unwrap(), d.first.unwrap());
        assert!(Arc::ptr_eq(&fa, b.first.as_ref().unwrap()));
        assert!(Arc::ptr_eq(&fa, &fc), "equal by value, shared");
        assert!(!Arc::ptr_eq(&fa, &fd));
        assert!(Arc::ptr_eq(
            a.effect.as_ref().unwrap(),
            d.effect.as_ref().unwrap()
        ));
        assert_eq!((c.effect, quiet.first, quiet.effect), (None, None, None));
        assert_eq!(quiet.judge_due, 1);
    }

    /// Outcomes found in blocks of sessions and formatted a few
    /// configurations at a time on several threads come out as a plain,
    /// one-thread reading of the format gives them (rows numbered as
    /// configurations meet them, cursors and skips), and read back alike.
    #[test]
    fn many_configurations_write_in_order() {
        let dets: Vec<Arc<FirstDetection>> = (0..3)
            .map(|i| {
                Arc::new(FirstDetection {
                    turn: i,
                    event: 10 + i,
                    kind: "content".into(),
                    detail: format!("d{i}"),
                    place: None,
                })
            })
            .collect();
        let n = 3 * compact::CONFIGS_AT_ONCE + 5;
        // Sessions across three blocks, with gaps that differ by configuration.
        let sessions = 2 * compact::SESSIONS_AT_ONCE + 40;
        let outcomes: Vec<ConfigOutcomes> = (0..n)
            .map(|c| ConfigOutcomes {
                config: format!("c{c}"),
                hits: (0..sessions)
                    .filter(|s| (s + c as u32) % (2 + c as u32 % 5) != 0)
                    .map(|s| Hit {
                        session: s,
                        judge_due: (c as u32 + s) % 3,
                        judge_no_verdict: 0,
                        // Some configurations hold equal detections apart
                        // in memory (as a merged record may).
                        first: (s % 2 == 0).then(|| match c % 11 {
                            0 => Arc::new((*dets[c % 3]).clone()),
                            _ => dets[c % 3].clone(),
                        }),
                        effect: Effect::new(Effect {
                            stop_turn: (s % 3 == 0).then_some(s),
                            tokens_after_stop: (c % 4) as u64 * 1000,
                            ..Default::default()
                        }),
                    })
                    .collect(),
            })
            .collect();
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct W {
            #[serde(with = "compact")]
            o: Vec<ConfigOutcomes>,
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let text = pool.install(|| {
            serde_json::to_string(&W {
                o: outcomes.clone(),
            })
            .unwrap()
        });
        // Each session's distinct hits as configurations meet them; then
        // detections numbered session by session, by value within one.
        let mut rows: Vec<Vec<&Hit>> = vec![Vec::new(); sessions as usize];
        let mut configs = Vec::new();
        for c in &outcomes {
            let mut picks: Vec<String> = Vec::new();
            let mut cursor = 0;
            for h in &c.hits {
                let known = &mut rows[h.session as usize];
                let k = known.iter().position(|r| *r == h).unwrap_or_else(|| {
                    known.push(h);
                    known.len() - 1
                });
                if h.session > cursor {
                    picks.push(format!("-{}", h.session - cursor));
                }
                picks.push(k.to_string());
                cursor = h.session + 1;
            }
            configs.push(format!(
                r#"{{"config":"{}","hits":[{}]}}"#,
                c.config,
                picks.join(",")
            ));
        }
        let mut listed: Vec<&FirstDetection> = Vec::new();
        let rows: Vec<Vec<String>> = rows
            .iter()
            .map(|known| {
                let from = listed.len();
                known
                    .iter()
                    .map(|h| {
                        let det = h.first.as_ref().map(|d| {
                            match listed[from..].iter().position(|l| **l == **d) {
                                Some(i) => (from + i) as u64,
                                None => {
                                    listed.push(d);
                                    listed.len() as u64 - 1
                                }
                            }
                        });
                        compact::row_by_serde(h, det)
                    })
                    .collect()
            })
            .collect();
        let rows: Vec<String> = rows.iter().map(|r| format!("[{}]", r.join(","))).collect();
        let expected = format!(
            r#"{{"o":{{"detections":{},"rows":[{}],"configs":[{}]}}}}"#,
            serde_json::to_string(&listed).unwrap(),
            rows.join(","),
            configs.join(",")
        );
        assert_eq!(text, expected);
        let back: W = serde_json::from_str(&text).unwrap();
        assert_eq!(back.o, outcomes);
        // Hits out of session order cannot be written as picks.
        let mut bad = outcomes.clone();
        bad[1].hits.swap(0, 1);
        let e = serde_json::to_string(&W { o: bad })
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("configuration c1: hits out of session order"),
            "{e}"
        );
    }

    #[test]
    fn outcomes_round_trip_compactly_sharing_detections() {
        let d = |event: u32, detail: &str| {
            Arc::new(FirstDetection {
                turn: 3,
                event,
                kind: "tool_call".into(),
                detail: detail.into(),
                place: Some(PlaceRecord {
                    file: "a.jsonl".into(),
                    line: Some(event),
                    pointer: None,
                }),
            })
        };
        let shared = d(9, "x");
        let hit = |session: u32, first: Option<Arc<FirstDetection>>| Hit {
            session,
            first,
            ..Default::default()
        };
        let outcomes = vec![
            ConfigOutcomes {
                config: "a".into(),
                hits: vec![
                    hit(0, Some(shared.clone())),
                    Hit {
                        judge_due: 4,
                        judge_no_verdict: 4,
                        ..hit(1, None)
                    },
                ],
            },
            ConfigOutcomes {
                config: "b".into(),
                hits: vec![
                    // Equal by value on one session, apart in memory:
                    // written once.
                    Hit {
                        effect: Effect::new(Effect {
                            stop_turn: Some(3),
                            tokens_after_stop: 7,
                            ..Default::default()
                        }),
                        ..hit(0, Some(d(9, "x")))
                    },
                    // The same detection on another session is listed
                    // with that session's.
                    hit(2, Some(shared.clone())),
                    hit(3, Some(d(12, "y"))),
                    Hit {
                        effect: Effect::new(Effect {
                            stop_turn: Some(0),
                            ..Default::default()
                        }),
                        ..hit(4, None)
                    },
                    Hit {
                        effect: Effect::new(Effect {
                            stop_turn: Some(0),
                            ..Default::default()
                        }),
                        ..hit(5, None)
                    },
                ],
            },
        ];
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct W {
            #[serde(with = "compact")]
            o: Vec<ConfigOutcomes>,
        }
        let text = serde_json::to_string(&W {
            o: outcomes.clone(),
        })
        .unwrap();
        // Each session's distinct hits once; each configuration's hits as
        // picks, with a skip over the sessions it has none on.
        assert!(
            text.contains(
                r#""rows":[[[0],[0,3,0,0,0,0,0,7]],[[null,null,0,0,4,4]],[[1]],[[2]],[[null,0]],[[null,0]]]"#
            ),
            "{text}"
        );
        assert!(text.contains(r#"{"config":"a","hits":[0,0]}"#), "{text}");
        assert!(
            text.contains(r#"{"config":"b","hits":[1,-1,0,0,0,0]}"#),
            "{text}"
        );
        assert_eq!(text.matches("tool_call").count(), 3, "{text}");
        let back: W = serde_json::from_str(&text).unwrap();
        assert_eq!(back.o, outcomes);
        // Equal effects are shared again on loading.
        let (e4, e5) = (&back.o[1].hits[3].effect, &back.o[1].hits[4].effect);
        assert!(Arc::ptr_eq(e4.as_ref().unwrap(), e5.as_ref().unwrap()));
        // Schema 2 wrote one object per hit: it still reads, and writes back alike.
        let flat =
            r#"{"session":4,"first":null,"stop_turn":0,"judge_due":2,"tokens_after_stop":9}"#;
        let h: Hit = serde_json::from_str(flat).unwrap();
        assert_eq!(
            (h.stop_turn(), h.judge_due, h.tokens_after_stop()),
            (Some(0), 2, 9)
        );
        assert_eq!(serde_json::to_string(&h).unwrap(), flat);
        let quiet: Hit =
            serde_json::from_str(r#"{"session":1,"first":null,"stop_turn":null,"judge_due":3}"#)
                .unwrap();
        assert_eq!(quiet.effect, None);
        // Millions are held at once in a large sweep.
        assert!(std::mem::size_of::<Hit>() <= 32);
        let bad = text.replace("[[1]]", "[[5]]");
        let e = serde_json::from_str::<W>(&bad).unwrap_err().to_string();
        assert!(e.contains("detection 5"), "{e}");
        let bad = text.replace("[1,-1,0,0,0,0]", "[1,-1,0,0,0,1]");
        let e = serde_json::from_str::<W>(&bad).unwrap_err().to_string();
        assert!(e.contains("row 1 of session 5, which has 1 rows"), "{e}");
        let bad = text.replace("[1,-1,0,0,0,0]", "[1,-1,0,0,0,-3,0]");
        let e = serde_json::from_str::<W>(&bad).unwrap_err().to_string();
        assert!(e.contains("row 0 of session 8, which has 0 rows"), "{e}");
        // Schema 3 wrote each hit's values with its session: it still reads.
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let schema3 = format!(
            r#"{{"o":{{"detections":[{},{}],"configs":[{{"config":"a","hits":[[0,0],[1,null,null,0,0,4,4]]}},{{"config":"b","hits":[[0,0,3,0,0,0,0,0,7],[2,0],[3,1],[4,null,0],[5,null,0]]}}]}}}}"#,
            v["o"]["detections"][0], v["o"]["detections"][2]
        );
        assert_eq!(serde_json::from_str::<W>(&schema3).unwrap().o, outcomes);
        // Rows are read as they come: extra values are ignored, unknown keys
        // skipped, and the detections must come first (as written).
        let extra = text.replace("[[1]]", "[[1,null,0,0,0,0,0,0,5,6]]");
        assert_eq!(serde_json::from_str::<W>(&extra).unwrap().o, outcomes);
        let keyed = text.replace(r#""configs":["#, r#""later":{"x":[1]},"configs":["#);
        assert_eq!(serde_json::from_str::<W>(&keyed).unwrap().o, outcomes);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let swapped = format!(
            r#"{{"o":{{"configs":{},"detections":{}}}}}"#,
            v["o"]["configs"], v["o"]["detections"]
        );
        let e = serde_json::from_str::<W>(&swapped).unwrap_err().to_string();
        assert!(e.contains("must come before"), "{e}");
    }

    #[test]
    fn shards_split_every_id_exactly_once() {
        let shards: Vec<Shard> = (1..=4).map(|i| Shard { index: i, count: 4 }).collect();
        for i in 0..500 {
            let id = format!("session-{i}");
            assert_eq!(shards.iter().filter(|s| s.owns(&id)).count(), 1, "{id}");
        }
        assert_eq!(Shard::parse("2/4"), Ok(Shard { index: 2, count: 4 }));
        for bad in ["0/4", "5/4", "1/0", "x/2", "3"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }
}
