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
use std::collections::{BTreeMap, HashMap};
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
    /// `--group-by`: the key sessions are grouped by (absent: `agent`).
    #[serde(default = "default_group_by")]
    pub group_by: String,
    /// `--guard`: `per-group` or `pooled`. Results written before the guard
    /// existed were chosen with the pooled rule, and are read so.
    #[serde(default = "pooled_guard")]
    pub guard: String,
    /// `--combine-rules`: the id of the row it added, if it added one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub combined: Option<String>,
    /// `--combine-rules`: its search re-run in each fold and without each
    /// group, so the recommendation's own folds can offer that fold's
    /// result in place of the row (searched on every labelled session).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub combined_folds: Vec<FoldChoice>,
}

/// A search re-run on part of the labelled sessions (a fold's training
/// sessions, or every group but one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FoldChoice {
    /// Which labelled sessions (test sessions left out, in session order)
    /// it was run on: `1` seen, `0` not.
    pub seen: String,
    /// Its choice's first detection turn on each labelled session (`None`:
    /// no detection, or nothing chosen).
    pub turns: Vec<Option<u32>>,
}

impl FoldChoice {
    /// The choice made on the labelled sessions `keep` admits, of `len`.
    pub fn new(len: usize, keep: &dyn Fn(usize) -> bool, turns: Vec<Option<u32>>) -> FoldChoice {
        FoldChoice {
            seen: FoldChoice::mask(len, keep),
            turns,
        }
    }

    /// `keep` over `len` labelled sessions, as [`FoldChoice::seen`] writes it.
    pub fn mask(len: usize, keep: &dyn Fn(usize) -> bool) -> String {
        (0..len).map(|i| if keep(i) { '1' } else { '0' }).collect()
    }
}

fn default_group_by() -> String {
    "agent".into()
}

fn pooled_guard() -> String {
    "pooled".into()
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
    /// Further labels files (`--labels` repeated): path and SHA-256.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_files: Vec<(String, String)>,
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
    /// What groups it: `agent`, `model`, `source` and the labels files'
    /// other columns (`split`, `repo`...). Empty in results written before
    /// groups existed. Shared by the sessions that have the same groups
    /// (most of a corpus: a map each was a kilobyte a session).
    #[serde(default, skip_serializing_if = "no_groups")]
    pub groups: Arc<BTreeMap<String, String>>,
    /// Turn of the live agent's first own detection (its first
    /// `loop_detected` record), if the log kept one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_turn: Option<u32>,
    /// Kind of that live detection, as the agent named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_kind: Option<String>,
}

impl SessionRecord {
    /// A session and its label.
    pub fn of(s: &Session, l: Option<Label>) -> SessionRecord {
        SessionRecord::new(&s.id, s.turns, s.events.len() as u32, s.whole_messages, l)
            .with_live(s.live_detections().first())
    }

    /// A streamed session and its label.
    pub fn of_outcomes(s: &crate::replay::SessionOutcomes, l: Option<Label>) -> SessionRecord {
        SessionRecord::new(&s.id, s.turns, s.events, s.whole_messages, l).with_live(s.live.first())
    }

    fn with_live(mut self, live: Option<&crate::event::LiveDetection>) -> SessionRecord {
        if let Some(l) = live {
            self.live_turn = Some(l.turn);
            self.live_kind = Some(l.kind.clone().unwrap_or_default());
        }
        self
    }

    fn new(id: &str, turns: u32, events: u32, whole_messages: bool, l: Option<Label>) -> Self {
        SessionRecord {
            id: id.to_string(),
            turns,
            events,
            whole_messages,
            label: l.map(|l| if l.is_loop { "loop" } else { "clean" }.to_string()),
            onset_turn: l.and_then(|l| l.onset_turn),
            groups: Arc::default(),
            live_turn: None,
            live_kind: None,
        }
    }

    /// Its group under `key` ([`UNKNOWN_GROUP`] when it has none).
    pub fn group(&self, key: &str) -> &str {
        self.groups.get(key).map_or(UNKNOWN_GROUP, String::as_str)
    }

    /// A session chosen on (not held out as a test session).
    pub fn is_test(&self) -> bool {
        self.groups
            .get(crate::input::labels::SPLIT)
            .map(String::as_str)
            == Some(crate::input::labels::TEST)
    }

    /// The label as the scorer reads it.
    pub fn label(&self) -> Option<Label> {
        self.label.as_deref().map(|l| Label {
            is_loop: l == "loop",
            onset_turn: self.onset_turn,
        })
    }
}

fn no_groups(g: &Arc<BTreeMap<String, String>>) -> bool {
    g.is_empty()
}

/// One shared copy of each distinct set of groups: the groups of a corpus's
/// sessions are a few sets over and over.
#[derive(Default)]
pub struct SharedGroups(HashMap<BTreeMap<String, String>, Arc<BTreeMap<String, String>>>);

impl SharedGroups {
    /// The shared copy of `g`.
    pub fn share(&mut self, g: BTreeMap<String, String>) -> Arc<BTreeMap<String, String>> {
        if let Some(x) = self.0.get(&g) {
            return x.clone();
        }
        let x = Arc::new(g.clone());
        self.0.insert(g, x.clone());
        x
    }
}

/// The group of a session that has no value for the key.
pub const UNKNOWN_GROUP: &str = "unknown";

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
/// A sweep keeps its hits as [`outcomes::Outcomes`] (a few bytes a hit) and makes
/// them one configuration at a time; a hit is its session and its body,
/// whose detection and effect are shared with the configurations that
/// agree on the session. The body's fields read through the hit
/// (`hit.first`, `hit.judge_due`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(from = "FlatHit", into = "FlatHit")]
pub struct Hit {
    /// Index of the session in [`SweepRecord::sessions`].
    pub session: u32,
    body: HitBody,
}

/// What a hit says, apart from its session: shared by the configurations
/// that agree on a session.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HitBody {
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

/// A hit's body borrowed: what scores and folds read, one configuration
/// after another, without copying the pointers to its detection and effect
/// (two threads counting the same detections' pointers up and down was a
/// sixth of a 1,000-configuration sweep of tool-heavy logs).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct HitView<'a> {
    /// The scored (first) detection.
    pub first: Option<&'a FirstDetection>,
    /// What the policy did.
    pub effect: Option<&'a Effect>,
    /// Judge checks due.
    pub judge_due: u32,
    /// Of those, without a recorded verdict.
    pub judge_no_verdict: u32,
}

impl HitView<'_> {
    /// Turn of the first detection.
    pub fn turn(&self) -> Option<u32> {
        self.first.map(|d| d.turn)
    }

    /// Turn where the policy stops the session.
    pub fn stop_turn(&self) -> Option<u32> {
        self.effect.and_then(|e| e.stop_turn)
    }

    /// Warnings before the stop.
    pub fn warnings(&self) -> u32 {
        self.effect.map_or(0, |e| e.warnings)
    }

    /// Detections nobody acted on.
    pub fn unheeded(&self) -> u32 {
        self.effect.map_or(0, |e| e.unheeded)
    }

    /// Turns after the stop.
    pub fn turns_after_stop(&self) -> u32 {
        self.effect.map_or(0, |e| e.turns_after_stop)
    }

    /// Tokens after the stop.
    pub fn tokens_after_stop(&self) -> u64 {
        self.effect.map_or(0, |e| e.tokens_after_stop)
    }
}

impl HitBody {
    /// The body borrowed.
    pub fn view(&self) -> HitView<'_> {
        HitView {
            first: self.first.as_deref(),
            effect: self.effect.as_deref(),
            judge_due: self.judge_due,
            judge_no_verdict: self.judge_no_verdict,
        }
    }
}

impl std::ops::Deref for Hit {
    type Target = HitBody;
    fn deref(&self) -> &HitBody {
        &self.body
    }
}

impl Hit {
    /// A hit of session `session`.
    pub fn new(session: u32, body: HitBody) -> Hit {
        Hit { session, body }
    }

    /// The body, to change.
    pub fn body_mut(&mut self) -> &mut HitBody {
        &mut self.body
    }
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
        Hit::new(
            f.session,
            HitBody {
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
            },
        )
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
            first: h.first.clone(),
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
        let body = HitBody {
            judge_due: o.judge_due,
            judge_no_verdict: o.judge_no_verdict,
            first,
            effect,
        };
        Some(Hit { session: 0, body })
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
        Some(Hit::new(
            session,
            HitBody {
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
            },
        ))
    }

    /// The hit with its detection's place, `place(event)` telling where a
    /// record of its session is.
    pub fn placed<'a>(
        mut self,
        place: impl Fn(u32) -> Option<crate::event::Provenance<'a>>,
    ) -> Hit {
        if let Some(event) = self.first.as_ref().map(|d| d.event) {
            if let Some(d) = &mut self.body_mut().first {
                Arc::make_mut(d).place = place(event).and_then(PlaceRecord::of);
            }
        }
        self
    }

    /// Turn of the first detection.
    pub fn turn(&self) -> Option<u32> {
        self.view().turn()
    }

    /// Turn where the policy stops the session.
    pub fn stop_turn(&self) -> Option<u32> {
        self.view().stop_turn()
    }

    /// Warnings before the stop.
    pub fn warnings(&self) -> u32 {
        self.view().warnings()
    }

    /// Detections nobody acted on.
    pub fn unheeded(&self) -> u32 {
        self.view().unheeded()
    }

    /// Turns after the stop.
    pub fn turns_after_stop(&self) -> u32 {
        self.view().turns_after_stop()
    }

    /// Tokens after the stop.
    pub fn tokens_after_stop(&self) -> u64 {
        self.view().tokens_after_stop()
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
    /// (held and written compactly: see [`outcomes`] and [`compact`]).
    #[serde(with = "compact")]
    pub outcomes: Outcomes,
    /// Material for the sessions where stock profiles disagree most (this part's best candidates).
    pub material: Vec<SessionMaterial>,
    /// For every labelled session: the records around its labelled onset and
    /// around every configuration's first detection, so the report can
    /// explain each false positive and missed loop without the inputs.
    #[serde(default)]
    pub explain: Explanations,
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
        labels: &crate::input::labels::Labels,
        sessions: Vec<SessionRecord>,
        outcomes: Outcomes,
        material: Vec<SessionMaterial>,
        explain: Explanations,
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
                skipped: inputs.skipped.iter().map(ToString::to_string).collect(),
            },
            labels_file: LabelsRecord {
                file: labels.files.first().map(|f| f.0.clone()),
                sha256: labels.files.first().map(|f| f.1.clone()),
                warnings: labels.warnings.clone(),
                more_files: labels.files.iter().skip(1).cloned().collect(),
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
    pub fn disagreement_candidates(&self) -> std::io::Result<Vec<(u32, usize)>> {
        let stock: Vec<usize> = (0..self.grid.configs.len())
            .filter(|&c| self.grid.configs[c].stock)
            .collect();
        let n = self.sessions.len();
        let mut fired = vec![0u32; n];
        for &c in &stock {
            self.outcomes.each(c, |s, h| {
                if h.first.is_some() {
                    fired[s as usize] += 1;
                }
            })?;
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
        Ok(ranked)
    }

    /// Merge records of disjoint shards of one run into the record of the whole run.
    pub fn merge(parts: Vec<SweepRecord>) -> Result<SweepRecord> {
        let mut parts = parts.into_iter();
        let mut whole = parts
            .next()
            .ok_or_else(|| Error::Usage("merge: no parts given".into()))?;
        let mut seen_shards: Vec<Shard> = whole.shard.into_iter().collect();
        let spill_failed = |e| Error::temp("for the merged hits", e);
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
            // Paired by configuration id, never by position.
            let at: HashMap<&str, usize> = whole
                .outcomes
                .ids()
                .iter()
                .enumerate()
                .map(|(i, c)| (c.as_str(), i))
                .collect();
            let to = p
                .outcomes
                .ids()
                .iter()
                .map(|c| {
                    at.get(c.as_str()).copied().ok_or_else(|| {
                        Error::Usage(format!(
                            "merge: configuration {c} of one part is not in the first"
                        ))
                    })
                })
                .collect::<Result<Vec<usize>>>()?;
            whole
                .outcomes
                .append(&p.outcomes, &to)
                .map_err(spill_failed)?;
            whole.wall_time_ms = whole.wall_time_ms.max(p.wall_time_ms);
            whole.sessions.extend(p.sessions);
            whole.material.extend(p.material);
            whole.explain = std::mem::take(&mut whole.explain)
                .merge(p.explain)
                .map_err(|e| Error::io("<the merged explanations>", e))?;
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
        let mut order: Vec<usize> = (0..whole.sessions.len()).collect();
        order.sort_by(|&a, &b| whole.sessions[a].id.cmp(&whole.sessions[b].id));
        if let Some(w) = order
            .windows(2)
            .find(|w| whole.sessions[w[0]].id == whole.sessions[w[1]].id)
        {
            return Err(Error::Usage(format!(
                "merge: session `{}` is in more than one part",
                whole.sessions[w[0]].id
            )));
        }
        let mut index = vec![None; order.len()];
        for (new, &old) in order.iter().enumerate() {
            index[old] = Some(new as u32);
        }
        whole.outcomes = std::mem::take(&mut whole.outcomes)
            .renumber(&index, order.len())
            .map_err(spill_failed)?;
        let mut sessions: Vec<Option<SessionRecord>> = std::mem::take(&mut whole.sessions)
            .into_iter()
            .map(Some)
            .collect();
        whole.sessions = order
            .iter()
            .map(|&old| sessions[old].take().expect("each session once"))
            .collect();
        let keep: Vec<String> = whole
            .disagreement_candidates()
            .map_err(spill_failed)?
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
        // In session order, as one sweep over every part's sessions writes them.
        whole.explain = std::mem::take(&mut whole.explain)
            .merge(Explanations::default())
            .map_err(|e| Error::io("<the merged explanations>", e))?;
        whole.shard = None;
        Ok(whole)
    }

    /// Load the record a sweep wrote (`DIR/summary.json`, or the file itself).
    pub fn load(path: &Path) -> Result<SweepRecord> {
        let file = if path.is_dir() {
            path.join(crate::util::outdir::SUMMARY_JSON)
        } else {
            path.to_path_buf()
        };
        // A run killed while moving its outputs in is finished first, so the
        // record read is never one set's beside another set's files.
        crate::util::outdir::finish_interrupted(file.parent().unwrap_or(Path::new(".")))?;
        let name = file.display().to_string();
        // Read as a stream, never whole: a large result's file is hundreds
        // of megabytes, and its hits and explanations go to temporary files
        // as they are read.
        let open = || {
            std::fs::File::open(&file)
                .map(|f| std::io::BufReader::with_capacity(1 << 16, f))
                .map_err(|e| Error::io(&file, e))
        };
        #[derive(Deserialize)]
        struct Version {
            schema_version: Option<u64>,
        }
        let supported =
            |v: Option<u64>| matches!(v, Some(v) if (2..=SCHEMA_VERSION as u64).contains(&v));
        let wrong_version = |v: Option<u64>| {
            Error::File {
            path: name.clone(),
            message: format!(
                "schema_version {} is not {SCHEMA_VERSION}: written by another looptune version; rerun the sweep",
                v.map_or("missing".into(), |v| v.to_string())
            ),
        }
        };
        let parsed: std::result::Result<SweepRecord, _> = serde_json::from_reader(open()?);
        let mut record = match parsed {
            Ok(r) => r,
            Err(e) => {
                // Versions 2 and 3 differ only in how the outcomes are
                // written, which the reader tells by their shape: last
                // night's baseline still loads. Another version, or text
                // that is not JSON, is said as such rather than as a field
                // the record lacks.
                let version = serde_json::from_reader::<_, Version>(open()?)
                    .map_err(|e| Error::Line {
                        path: name.clone(),
                        line: e.line() as u64,
                        message: format!("not valid JSON ({e})"),
                    })?
                    .schema_version;
                if !supported(version) {
                    return Err(wrong_version(version));
                }
                return Err(Error::File {
                    path: name.clone(),
                    message: format!("not a looptune result ({e})"),
                });
            }
        };
        if !supported(Some(record.schema_version as u64)) {
            return Err(wrong_version(Some(record.schema_version as u64)));
        }
        // A version after this one cannot have been written by a looptune
        // this one knows: its fields may mean something else.
        if !version_at_most(&record.looptune_version, env!("CARGO_PKG_VERSION")) {
            return Err(Error::File {
                path: name.clone(),
                message: format!(
                    "looptune_version {} is not a version up to this one ({}); rerun the sweep with this looptune",
                    crate::util::escape::terminal(&record.looptune_version),
                    env!("CARGO_PKG_VERSION")
                ),
            });
        }
        record.validate().map_err(|e| Error::File {
            path: name.clone(),
            message: e.to_string(),
        })?;
        // Every reader indexes sessions by a hit's session: a hand-edited
        // file is refused here, not in a panic later.
        record
            .outcomes
            .fit_sessions(record.sessions.len())
            .map_err(|e| Error::File {
                path: name.clone(),
                message: format!("outcomes: {e}"),
            })?;
        // Rows as a sweep numbers them, so that writing the record again
        // gives the bytes its writer would have.
        if !record
            .outcomes
            .canonical()
            .map_err(Error::hits_unreadable)?
        {
            let configs = record.outcomes.configs().map_err(Error::hits_unreadable)?;
            record.outcomes =
                Outcomes::from_configs(configs, record.sessions.len()).map_err(|e| {
                    Error::File {
                        path: name.clone(),
                        message: format!("outcomes: {e}"),
                    }
                })?;
        }
        let mut shared = SharedGroups::default();
        for s in &mut record.sessions {
            let g = std::mem::take(&mut s.groups);
            s.groups = shared.share(Arc::unwrap_or_clone(g));
        }
        record.schema_version = SCHEMA_VERSION;
        Ok(record)
    }

    /// What every reader trusts of a loaded record, checked: the outcomes
    /// matched to the grid's configurations by id (each exactly once, put in
    /// grid order: never paired by position), sessions sorted by id and
    /// unique, labels that are labels, a shard within `1..=N` that owns
    /// every session it lists, and token counts whose sums cannot overflow.
    /// The error is the message, without the file.
    fn validate(&mut self) -> std::result::Result<(), Invalid> {
        let mut at: HashMap<&str, usize> = HashMap::with_capacity(self.grid.configs.len());
        for (i, c) in self.grid.configs.iter().enumerate() {
            if at.insert(c.id.as_str(), i).is_some() {
                return Err(Invalid::GridTwice(c.id.clone()));
            }
        }
        let mut slots: Vec<Option<usize>> = vec![None; self.grid.configs.len()];
        for (j, c) in self.outcomes.ids().iter().enumerate() {
            let Some(&i) = at.get(c.as_str()) else {
                return Err(Invalid::NotInGrid(c.clone()));
            };
            if slots[i].is_some() {
                return Err(Invalid::OutcomesTwice(c.clone()));
            }
            slots[i] = Some(j);
        }
        if let Some(i) = slots.iter().position(Option::is_none) {
            return Err(Invalid::NoOutcomes(self.grid.configs[i].id.clone()));
        }
        let order: Vec<usize> = slots.into_iter().flatten().collect();
        self.outcomes.reorder(&order);
        if let Some(w) = self.sessions.windows(2).find(|w| w[0].id >= w[1].id) {
            return Err(Invalid::Unsorted {
                session: w[1].id.clone(),
                repeats: w[0].id == w[1].id,
                before: w[0].id.clone(),
            });
        }
        for s in &self.sessions {
            match s.label.as_deref() {
                None | Some("loop") | Some("clean") => {}
                Some(other) => {
                    return Err(Invalid::Label {
                        session: s.id.clone(),
                        label: other.to_string(),
                    })
                }
            }
        }
        if let Some(shard) = self.shard {
            if shard.count == 0 || shard.index == 0 || shard.index > shard.count {
                return Err(Invalid::Shard {
                    index: shard.index,
                    count: shard.count,
                });
            }
            if let Some(s) = self.sessions.iter().find(|s| !shard.owns(&s.id)) {
                return Err(Invalid::NotInShard {
                    session: s.id.clone(),
                    index: shard.index,
                    count: shard.count,
                });
            }
        }
        for c in 0..self.outcomes.len() {
            let mut total = Some(0u64);
            self.outcomes
                .each(c, |_, h| {
                    let tokens = h.effect.as_ref().map_or(0, |e| e.tokens_after_stop);
                    total = total.and_then(|t| t.checked_add(tokens));
                })
                .map_err(|e| Invalid::Unreadable(e.to_string()))?;
            if total.is_none() {
                return Err(Invalid::Tokens(self.outcomes.id(c).to_string()));
            }
        }
        Ok(())
    }
}

/// What a loaded record may not hold ([`SweepRecord::load`] names the file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Invalid {
    #[error("reading back its hits from a temporary file in {tmp}: {0}", tmp = crate::error::tmp_dir())]
    Unreadable(String),
    #[error("grid: configuration {0} is listed twice")]
    GridTwice(String),
    #[error("outcomes: configuration {0} is not one of the grid's")]
    NotInGrid(String),
    #[error("outcomes: configuration {0} is listed twice")]
    OutcomesTwice(String),
    #[error("outcomes: configuration {0} of the grid has no outcomes")]
    NoOutcomes(String),
    #[error(
        "sessions: `{session}` {} `{before}`: sessions are sorted by id, each once",
        if *.repeats { "repeats" } else { "comes after" }
    )]
    Unsorted {
        session: String,
        repeats: bool,
        before: String,
    },
    #[error("sessions: `{session}` has label `{label}` (expected loop or clean)")]
    Label { session: String, label: String },
    #[error("shard {index}/{count}: need 1 <= I <= N")]
    Shard { index: u32, count: u32 },
    #[error("sessions: `{session}` does not belong to shard {index}/{count}")]
    NotInShard {
        session: String,
        index: u32,
        count: u32,
    },
    #[error("outcomes: configuration {0}: tokens after stop add up beyond {max}", max = u64::MAX)]
    Tokens(String),
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
            format!("{name} {}", crate::util::js::stringify_object(args))
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

pub mod compact;
pub mod explain;
pub mod outcomes;
pub use explain::Explanations;
pub use outcomes::{Misfit, Outcomes};
pub(crate) mod json_text;

/// The configuration a sweep compares with, found once per command on its
/// grid ([`find_baseline`], before any work) and handed to every step that
/// needs it (`score::analyze_with`) instead of being looked up again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Baseline(usize);

impl Baseline {
    /// Its index in the grid's configurations.
    pub fn index(self) -> usize {
        self.0
    }
}

/// True when `version` is a release (`MAJOR.MINOR.PATCH`, a suffix such as
/// `-rc.1` ignored) no later than `ours`.
fn version_at_most(version: &str, ours: &str) -> bool {
    let parse = |v: &str| -> Option<Vec<u64>> {
        let core = v.split(['-', '+']).next()?;
        let parts: Option<Vec<u64>> = core.split('.').map(|p| p.parse().ok()).collect();
        parts.filter(|p| p.len() == 3)
    };
    matches!((parse(version), parse(ours)), (Some(v), Some(o)) if v <= o)
}

/// Find the baseline: a stock configuration of `profile` (default: the grid's base profile).
pub fn find_baseline(grid: &GridRecord, profile: Option<&str>) -> Result<Baseline> {
    let name = profile.unwrap_or(&grid.base_profile);
    if let Some(i) = grid
        .configs
        .iter()
        .position(|v| v.stock && v.profile == name)
    {
        return Ok(Baseline(i));
    }
    match profile {
        Some(p) => {
            crate::detect::family_of_profile(p)?;
            Err(Error::Usage(format!(
                "--baseline `{p}`: the grid has no stock configuration of this profile (add it as an [[extra]])"
            )))
        }
        // A grid without its own base profile unchanged: compare with its first configuration.
        None => Ok(Baseline(0)),
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
pub(crate) fn unknown_config<'a>(key: &str, names: impl IntoIterator<Item = &'a str>) -> Error {
    Error::Usage(format!(
        "--config `{key}`: no configuration of the grid has this id, label or profile{}",
        crate::util::suggest::hint(key, names)
    ))
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
                    let h = Hit::new(
                        session,
                        HitBody {
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
                        },
                    );
                    prop_assert_eq!(compact::row_text(&h, det), compact::row_by_serde(&h, det));
                    Ok(())
                },
            )
            .unwrap();
    }

    /// A hit is its session, its judge counts and two shared pointers: a
    /// configuration's hits, or a session-long list of them, are made from
    /// the store's 16-byte rows one configuration at a time.
    #[test]
    fn a_hit_is_thirty_two_bytes() {
        assert_eq!(std::mem::size_of::<Hit>(), 32);
        assert_eq!(std::mem::size_of::<HitBody>(), 24);
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
        let (fa, fc, fd) = (
            a.first.clone().unwrap(),
            c.first.clone().unwrap(),
            d.first.clone().unwrap(),
        );
        assert!(Arc::ptr_eq(&fa, b.first.as_ref().unwrap()));
        let effect = |h: &Hit| h.effect.clone().unwrap();
        assert!(
            Arc::ptr_eq(&effect(&a), &effect(&b)),
            "agreeing hits share an effect"
        );
        assert_eq!(a, b);
        assert_ne!(a, d);
        assert!(Arc::ptr_eq(&fa, &fc), "equal by value, shared");
        assert!(!Arc::ptr_eq(&fa, &fd));
        assert!(Arc::ptr_eq(
            a.effect.as_ref().unwrap(),
            d.effect.as_ref().unwrap()
        ));
        assert_eq!(
            (c.effect.clone(), quiet.first.clone(), quiet.effect.clone()),
            (None, None, None)
        );
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
        let sessions = 2 * 256 + 40;
        let outcomes: Vec<ConfigOutcomes> = (0..n)
            .map(|c| ConfigOutcomes {
                config: format!("c{c}"),
                hits: (0..sessions)
                    .filter(|s| !(s + c as u32).is_multiple_of(2 + c as u32 % 5))
                    .map(|s| {
                        Hit::new(
                            s,
                            HitBody {
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
                            },
                        )
                    })
                    .collect(),
            })
            .collect();
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct W {
            #[serde(with = "compact")]
            o: Outcomes,
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let text = pool.install(|| {
            serde_json::to_string(&W {
                o: Outcomes::from_configs(outcomes.clone(), sessions as usize).unwrap(),
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
        assert_eq!(back.o.configs().unwrap(), outcomes);
        // Hits out of session order cannot be held as picks.
        let mut bad = outcomes.clone();
        bad[1].hits.swap(0, 1);
        let e = Outcomes::from_configs(bad, sessions as usize)
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
        let hit = |session: u32, first: Option<Arc<FirstDetection>>| {
            Hit::new(
                session,
                HitBody {
                    first,
                    ..Default::default()
                },
            )
        };
        let with = |mut h: Hit, f: &dyn Fn(&mut HitBody)| {
            f(h.body_mut());
            h
        };
        let outcomes = vec![
            ConfigOutcomes {
                config: "a".into(),
                hits: vec![
                    hit(0, Some(shared.clone())),
                    with(hit(1, None), &|b| {
                        b.judge_due = 4;
                        b.judge_no_verdict = 4;
                    }),
                ],
            },
            ConfigOutcomes {
                config: "b".into(),
                hits: vec![
                    // Equal by value on one session, apart in memory:
                    // written once.
                    with(hit(0, Some(d(9, "x"))), &|b| {
                        b.effect = Effect::new(Effect {
                            stop_turn: Some(3),
                            tokens_after_stop: 7,
                            ..Default::default()
                        })
                    }),
                    // The same detection on another session is listed
                    // with that session's.
                    hit(2, Some(shared.clone())),
                    hit(3, Some(d(12, "y"))),
                    with(hit(4, None), &|b| {
                        b.effect = Effect::new(Effect {
                            stop_turn: Some(0),
                            ..Default::default()
                        })
                    }),
                    with(hit(5, None), &|b| {
                        b.effect = Effect::new(Effect {
                            stop_turn: Some(0),
                            ..Default::default()
                        })
                    }),
                ],
            },
        ];
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct W {
            #[serde(with = "compact")]
            o: Outcomes,
        }
        let text = serde_json::to_string(&W {
            o: Outcomes::from_configs(outcomes.clone(), 6).unwrap(),
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
        assert_eq!(back.o.configs().unwrap(), outcomes);
        // Equal effects are shared again on loading.
        let b = back.o.hits(1).unwrap();
        let (e4, e5) = (&b[3].effect, &b[4].effect);
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
        assert_eq!(
            serde_json::from_str::<W>(&schema3)
                .unwrap()
                .o
                .configs()
                .unwrap(),
            outcomes
        );
        // Rows are read as they come: extra values are ignored, unknown keys
        // skipped, and the detections must come first (as written).
        let extra = text.replace("[[1]]", "[[1,null,0,0,0,0,0,0,5,6]]");
        assert_eq!(
            serde_json::from_str::<W>(&extra)
                .unwrap()
                .o
                .configs()
                .unwrap(),
            outcomes
        );
        let keyed = text.replace(r#""configs":["#, r#""later":{"x":[1]},"configs":["#);
        assert_eq!(
            serde_json::from_str::<W>(&keyed)
                .unwrap()
                .o
                .configs()
                .unwrap(),
            outcomes
        );
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let swapped = format!(
            r#"{{"o":{{"configs":{},"detections":{}}}}}"#,
            v["o"]["configs"], v["o"]["detections"]
        );
        let e = serde_json::from_str::<W>(&swapped).unwrap_err().to_string();
        assert!(e.contains("must come before"), "{e}");
    }

    /// A record whose rows are not numbered as configurations meet them (a
    /// hand-edited one) is told apart, and made so again writes the bytes
    /// a sweep would have.
    #[test]
    fn rows_out_of_meeting_order_are_renumbered() {
        #[derive(Serialize, Deserialize)]
        struct W {
            #[serde(with = "compact")]
            o: Outcomes,
        }
        let odd = r#"{"o":{"detections":[],"rows":[[[null,null,0,0,1],[null,null,0,0,2]]],"configs":[{"config":"a","hits":[1]},{"config":"b","hits":[0]}]}}"#;
        let w: W = serde_json::from_str(odd).unwrap();
        assert!(!w.o.canonical().unwrap());
        let fixed = Outcomes::from_configs(w.o.configs().unwrap(), 1).unwrap();
        assert!(fixed.canonical().unwrap());
        assert_eq!(fixed.configs().unwrap(), w.o.configs().unwrap());
        assert_eq!(
            serde_json::to_string(&W { o: fixed }).unwrap(),
            r#"{"o":{"detections":[],"rows":[[[null,null,0,0,2],[null,null,0,0,1]]],"configs":[{"config":"a","hits":[0]},{"config":"b","hits":[1]}]}}"#
        );
    }

    /// Sessions with equal groups hold one shared map, in a sweep and
    /// once loaded; the record serializes as before.
    #[test]
    fn equal_groups_are_shared() {
        let g = |agent: &str| {
            BTreeMap::from([
                ("agent".to_string(), agent.to_string()),
                ("model".to_string(), "m".to_string()),
            ])
        };
        let mut shared = SharedGroups::default();
        let (a, b, c) = (
            shared.share(g("x")),
            shared.share(g("y")),
            shared.share(g("x")),
        );
        assert!(Arc::ptr_eq(&a, &c));
        assert!(!Arc::ptr_eq(&a, &b));
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/schema3/summary.json"
        );
        let record = SweepRecord::load(std::path::Path::new(path)).unwrap();
        let s = &record.sessions;
        assert!(s.len() > 2);
        assert!(s.iter().all(|x| Arc::ptr_eq(&x.groups, &s[0].groups)));
        let mut one = SessionRecord::new("s", 1, 1, false, None);
        assert!(!serde_json::to_string(&one).unwrap().contains("groups"));
        one.groups = a;
        assert!(serde_json::to_string(&one)
            .unwrap()
            .contains(r#""groups":{"agent":"x","model":"m"}"#));
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
