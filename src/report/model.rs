//! The report's view of a sweep: typed data derived from the result
//! ([`SweepResult`]) and drawn by the HTML report (`html`, `charts`). Nothing
//! here touches the inputs or the detectors; `looptune report DIR` loads the
//! record from `summary.json` and analyses it again. The derived parts that
//! `summary.json` also carries (the explanations, the disagreements) are
//! built here once and serialized by `summary` as they are.

use crate::result::{ConfigRecord, Excerpt, ExcerptLine, GridRecord, InputsRecord, SweepRecord};
use crate::score::SweepResult;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// What replay cannot know, said in `summary.json` and the report.
pub const NOTE: &str = "Replay cannot know how the model would have reacted to a warning or a stop: the recorded continuation counts as the model not changing course.";

/// Everything the report is drawn from.
#[derive(Debug, Clone, Default)]
pub struct ReportData<'a> {
    /// The result's record and what is derived from it (borrowing the
    /// result's large parts: the grid, the inputs, the turns-to-detection).
    pub summary: Summary<'a>,
    /// One row per configuration, in grid order, then the union's.
    pub rows: Vec<Row>,
    /// Position of each configuration id in the grid: charts look
    /// configurations up by id, 10,000 of them in a large grid.
    by_id: std::collections::HashMap<String, usize>,
    /// The result it was made from: its explanations are made from it one
    /// at a time as the report writes them, never all held.
    result: Option<&'a SweepResult>,
}

/// One configuration's scores and flags (a row of `sweep.csv`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    /// Configuration id.
    pub config: String,
    /// Readable label.
    pub label: String,
    /// Detector family.
    pub family: String,
    /// Profile the configuration starts from.
    pub profile: String,
    /// Every resolved parameter, as text.
    pub params: BTreeMap<String, String>,
    /// Every defined score, by `sweep.csv` column name (undefined ones are
    /// left out; the names are `metrics::SCORE_NAMES`, not copied per row).
    pub scores: BTreeMap<&'static str, f64>,
    /// A stock profile, unchanged.
    pub stock: bool,
    /// On the Pareto front.
    pub pareto: bool,
    /// The recommended configuration.
    pub recommended: bool,
}

impl Row {
    /// A score by `sweep.csv` column name.
    pub fn score(&self, name: &str) -> Option<f64> {
        self.scores.get(name).copied()
    }
}

/// The record's parts the report shows, and what is derived from it.
/// Deserializable (missing fields default) so tests can write one as JSON.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Summary<'a> {
    /// Version of looptune that wrote the record.
    pub looptune_version: String,
    /// The grid.
    pub grid: Cow<'a, GridRecord>,
    /// The inputs.
    pub inputs: Cow<'a, InputsRecord>,
    /// Sessions, turns and records replayed.
    pub totals: Totals,
    /// The labels.
    pub labels: LabelsInfo,
    /// The recommendation rule, in words.
    pub objective: String,
    /// Per-configuration score extras (the whole turns-to-detection distribution).
    pub scores: Vec<ScoreEntry<'a>>,
    /// Ids on the Pareto front.
    pub pareto: Vec<String>,
    /// The base stock profile.
    pub stock: Option<ConfigRef>,
    /// The configuration gates were checked against.
    pub chosen: Option<ConfigRef>,
    /// The baseline the recommendation is compared with.
    pub baseline: Option<ConfigRef>,
    /// The recommended configuration, if any, with its cross-validation.
    pub recommendation: Option<Recommendation>,
    /// Why there is no recommendation.
    pub recommendation_reason: Option<String>,
    /// Warnings about too few labels.
    pub label_warnings: Vec<String>,
    /// Every other family's best under the same rule.
    pub family_best: Vec<FamilyBest>,
    /// The best union of detectors (`--combine`).
    pub union: Option<UnionInfo>,
    /// Every false positive and missed loop of the baseline and the
    /// recommendation, explained (left empty by [`ReportData::from_result`],
    /// which makes them from the result as they are written).
    pub explanations: Vec<Explanation>,
    /// Sessions where the selected configurations disagree most.
    pub disagreements: Vec<Disagreement>,
    /// What replay cannot know.
    pub note: String,
    /// The row `--combine-rules` added, when the folds' choices of it stand
    /// for its search re-run on their sessions.
    pub combined_in_folds: Option<String>,
    /// Wall time of the sweep.
    pub wall_time_ms: u64,
    /// Scores per group, the guard, leave-one-group-out and the test split.
    #[serde(skip)]
    pub groups: GroupsView,
    /// The agent's own detections the record kept, and how many the stock
    /// profiles reproduce (none kept: `None`).
    #[serde(skip)]
    pub live: Option<LiveView>,
}

/// The live detections of a sweep: each session's first `loop_detected`
/// record (`live_turn`, `live_kind` in `summary.json`), and how many of them
/// the baseline and the other stock configurations reproduce, their first
/// detection falling on the same turn. The terminal and the report both say
/// it from here.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveView {
    /// Sessions with a live detection.
    pub sessions: usize,
    /// Those sessions by the kind of their first live detection.
    pub kinds: BTreeMap<String, usize>,
    /// The baseline.
    pub baseline: LiveCount,
    /// Every other stock configuration that reproduces at least one, most
    /// first, then in grid order.
    pub stock: Vec<LiveCount>,
}

/// How many live detections one configuration reproduces.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveCount {
    /// Configuration id.
    pub config: String,
    /// Readable label.
    pub label: String,
    /// Live detections at whose turn its first detection falls.
    pub reproduced: usize,
}

impl LiveView {
    /// The live detections of a result; `None` when no session kept one.
    pub fn of(r: &SweepResult) -> std::io::Result<Option<LiveView>> {
        let sessions = &r.record.sessions;
        let live: Vec<(usize, u32)> = sessions
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.live_turn.map(|t| (i, t)))
            .collect();
        if live.is_empty() {
            return Ok(None);
        }
        let mut kinds = BTreeMap::new();
        for &(i, _) in &live {
            let kind = sessions[i].live_kind.clone().unwrap_or_default();
            *kinds.entry(kind).or_insert(0) += 1;
        }
        let count = |c: usize| -> std::io::Result<LiveCount> {
            let dense = r.dense(c)?;
            let reproduced = live
                .iter()
                .filter(|(i, t)| {
                    dense[*i]
                        .as_ref()
                        .and_then(|h| h.first.as_ref())
                        .is_some_and(|d| d.turn == *t)
                })
                .count();
            Ok(LiveCount {
                config: r.config(c).id.clone(),
                label: r.label(c).to_string(),
                reproduced,
            })
        };
        let mut stock: Vec<(usize, LiveCount)> = Vec::new();
        for c in 0..r.record.grid.configs.len() {
            if r.record.grid.configs[c].stock && c != r.baseline {
                let k = count(c)?;
                if k.reproduced > 0 {
                    stock.push((c, k));
                }
            }
        }
        stock.sort_by(|a, b| b.1.reproduced.cmp(&a.1.reproduced).then(a.0.cmp(&b.0)));
        Ok(Some(LiveView {
            sessions: live.len(),
            kinds,
            baseline: count(r.baseline)?,
            stock: stock.into_iter().map(|(_, k)| k).collect(),
        }))
    }
}

/// The report's "By KEY" section: the summary's rows counted per group, the
/// guard's verdict, leave-one-group-out validation and the test sessions.
#[derive(Debug, Clone, Default)]
pub struct GroupsView {
    /// The key (`agent`, `model`, `source`, a labels column).
    pub by: String,
    /// Group names, sorted.
    pub names: Vec<String>,
    /// Sessions per group.
    pub sessions: Vec<u64>,
    /// The summary's rows (baseline, recommended, family bests, union).
    pub rows: Vec<GroupRow>,
    /// Sentences naming rows whose gain comes mostly from one group.
    pub concentrated: Vec<String>,
    /// `per-group` or `pooled`.
    pub guard: String,
    /// What the guard refused, if anything.
    pub guard_note: Option<String>,
    /// Leave-one-group-out of the recommendation, then of the union.
    pub validation: Vec<GroupValidationView>,
    /// Why there is no leave-one-group-out validation.
    pub validation_reason: Option<String>,
    /// The test sessions, if any.
    pub test: Option<TestView>,
}

/// One row of the summary, counted per group.
#[derive(Debug, Clone, Default)]
pub struct GroupRow {
    /// `baseline`, `recommended`, `best FAMILY`, `union`.
    pub role: String,
    /// Its label.
    pub label: String,
    /// Per group (as `names`).
    pub counts: Vec<crate::score::recommend::GroupCount>,
}

/// Leave-one-group-out of one choosing procedure.
#[derive(Debug, Clone, Default)]
pub struct GroupValidationView {
    /// `recommendation` or `union`.
    pub what: String,
    /// Held-out groups' tallies added up.
    pub pooled: crate::score::recommend::Tally,
    /// In-sample recall and false-positive rate of the choice, for the verdict.
    pub in_sample: Option<(f64, Option<f64>)>,
    /// Per group: name, its held-out tally, and the label of what was chosen without it.
    pub groups: Vec<(String, crate::score::recommend::Tally, String)>,
}

/// What was chosen, scored on the test sessions.
#[derive(Debug, Clone, Default)]
pub struct TestView {
    /// Test sessions.
    pub sessions: usize,
    /// Rows: role, label, tally on the test sessions.
    pub rows: Vec<(String, String, crate::score::recommend::Tally)>,
}

/// The rows whose gain over the baseline comes mostly from one group, one
/// sentence for the rows alike (same group, same counts), as the terminal
/// and the report say it.
pub fn concentration_sentences(r: &SweepResult) -> Vec<String> {
    let mut said: Vec<(&str, u64, u64, Vec<String>)> = Vec::new();
    for c in &r.advice.concentrated {
        let name = match c.config {
            Some(i) => r.label(i).to_string(),
            None => format!(
                "the union {}",
                r.advice.union.as_ref().map_or("", |u| u.label.as_str())
            ),
        };
        match said
            .iter_mut()
            .find(|x| x.0 == c.group && x.1 == c.from_group && x.2 == c.total)
        {
            Some(x) => x.3.push(name),
            None => said.push((&c.group, c.from_group, c.total, vec![name])),
        }
    }
    said.into_iter()
        .map(|(group, from, total, names)| {
            format!(
                "{}: {from} of {} {total} catch{} beyond the baseline come{} from {group} sessions; it may not carry over to other {}s.",
                names.join(", "),
                if names.len() == 1 { "its" } else { "their" },
                if total == 1 { "" } else { "es" },
                if from == 1 { "s" } else { "" },
                r.groups.by
            )
        })
        .collect()
}

impl GroupValidationView {
    /// Whether the in-sample recall or false-positive rate lies outside the
    /// out-of-group interval: the choice does not carry across groups.
    pub fn carries_not(&self) -> bool {
        let Some((recall, fp_rate)) = self.in_sample else {
            return false;
        };
        let p = &self.pooled;
        let outside = |x: f64, ci: Option<(f64, f64)>| {
            ci.is_some_and(|(lo, hi)| x < lo - 1e-12 || x > hi + 1e-12)
        };
        outside(recall, crate::score::stats::wilson(p.tp, p.loops))
            || fp_rate.is_some_and(|f| outside(f, crate::score::stats::wilson(p.fp, p.clean)))
    }
}

impl GroupsView {
    /// The view of a result.
    pub fn of(r: &SweepResult) -> std::io::Result<GroupsView> {
        let g = &r.groups;
        let mut sessions = vec![0u64; g.names.len()];
        for &x in &g.of {
            sessions[x as usize] += 1;
        }
        let union_label = || {
            r.advice
                .union
                .as_ref()
                .map_or(String::new(), |u| u.label.clone())
        };
        let rows = r
            .shown()?
            .iter()
            .map(|(role, c, hits)| GroupRow {
                role: role.clone(),
                label: match c {
                    Some(i) => r.label(*i).to_string(),
                    None => union_label(),
                },
                counts: r
                    .group_scores(hits)
                    .iter()
                    .map(|s| crate::score::recommend::GroupCount {
                        loops: s.labeled_loops as u64,
                        clean: s.labeled_clean as u64,
                        tp: s.true_positives as u64,
                        fp: s.false_positives as u64,
                    })
                    .collect(),
            })
            .collect();
        let concentrated = concentration_sentences(r);
        let view = |what: &str,
                    gv: &crate::score::recommend::GroupValidation,
                    s: Option<&crate::score::metrics::Scores>| {
            GroupValidationView {
                what: what.to_string(),
                pooled: gv.pooled.clone(),
                in_sample: s.map(|s| (s.recall, s.fp_rate)),
                groups: gv
                    .groups
                    .iter()
                    .map(|f| {
                        let chosen = if f.chosen.is_empty() {
                            "(nothing met the rule)".to_string()
                        } else {
                            f.chosen
                                .iter()
                                .map(|&m| r.label(m))
                                .collect::<Vec<_>>()
                                .join(" | ")
                        };
                        (f.name.clone(), f.tally.clone(), chosen)
                    })
                    .collect(),
            }
        };
        let mut validation = Vec::new();
        if let Some(gv) = &r.advice.group_validation {
            validation.push(view(
                "recommendation",
                gv,
                r.recommended.map(|c| &r.scores[c]),
            ));
        }
        if let Some(u) = &r.advice.union {
            if let Some(gv) = &u.group_validation {
                validation.push(view("union", gv, Some(&u.scores)));
            }
        }
        Ok(GroupsView {
            by: g.by.clone(),
            names: g.names.clone(),
            sessions,
            rows,
            concentrated,
            guard: r.advice.guard.name().to_string(),
            guard_note: r.advice.guard_note.clone(),
            validation,
            validation_reason: r.advice.group_validation_reason.clone(),
            test: r.advice.test.as_ref().map(|t| TestView {
                sessions: t.sessions,
                rows: t
                    .rows
                    .iter()
                    .map(|(role, c, tally)| {
                        (
                            role.clone(),
                            match c {
                                Some(i) => r.label(*i).to_string(),
                                None => union_label(),
                            },
                            tally.clone(),
                        )
                    })
                    .collect(),
            }),
        })
    }
}

/// Totals of a result.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Totals {
    /// Sessions replayed.
    pub sessions: u64,
    /// Turns.
    pub turns: u64,
    /// Records.
    pub events: u64,
    /// Sessions whose content came as whole messages.
    pub whole_message_sessions: u64,
}

/// The labels of a result.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LabelsInfo {
    /// Labels file.
    pub file: Option<String>,
    /// Its SHA-256.
    pub sha256: Option<String>,
    /// Sessions labeled loop.
    pub loops: u64,
    /// Sessions labeled clean.
    pub clean: u64,
    /// Sessions without a label.
    pub unlabeled: u64,
    /// Warnings raised while reading labels.
    pub warnings: Vec<String>,
}

/// Per-configuration extras of the scores.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ScoreEntry<'a> {
    /// Configuration id.
    pub config: String,
    /// Turns-to-detection of every detected labeled loop.
    pub ttd: Cow<'a, crate::score::metrics::TtdList>,
    /// Labeled loops (the denominator of recall).
    pub labeled_loops: Option<f64>,
    /// Detections by kind.
    pub detection_kinds: BTreeMap<String, u64>,
}

/// A reference to a configuration.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ConfigRef {
    /// Id.
    pub config: String,
    /// Label.
    pub label: String,
}

/// The recommendation as `summary.json` records it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Recommendation {
    /// Id.
    pub config: String,
    /// Label.
    pub label: String,
    /// Its family.
    pub family: String,
    /// Any family could win.
    pub across_families: bool,
    /// Bootstrap 95% interval of its median turns-to-detection.
    pub ttd_median_ci: Option<[f64; 2]>,
    /// The baseline's.
    pub baseline: Option<BaselineInfo>,
    /// The choosing procedure, cross-validated.
    pub cross_validation: Option<CrossValidation>,
    /// Why there is no cross-validation.
    pub cross_validation_reason: Option<String>,
}

/// The baseline inside the recommendation record.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct BaselineInfo {
    /// Id.
    pub config: String,
    /// Bootstrap 95% interval of its median turns-to-detection.
    pub ttd_median_ci: Option<[f64; 2]>,
}

/// Pooled held-out scores of a choosing procedure.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CrossValidation {
    /// Folds.
    pub folds: u64,
    /// Seed.
    pub seed: u64,
    /// Labelled loops held out (all of them, once).
    pub labeled_loops: u64,
    /// Labelled clean sessions held out.
    pub labeled_clean: u64,
    /// Out-of-sample recall.
    pub recall: Option<f64>,
    /// Its interval.
    pub recall_ci: Option<[f64; 2]>,
    /// Out-of-sample precision.
    pub precision: Option<f64>,
    /// Its interval.
    pub precision_ci: Option<[f64; 2]>,
    /// Out-of-sample false positives.
    pub false_positives: u64,
    /// Per labelled clean session.
    pub fp_rate: Option<f64>,
    /// Its interval.
    pub fp_rate_ci: Option<[f64; 2]>,
    /// Out-of-sample F1.
    pub f1: Option<f64>,
    /// Folds that chose each configuration (ids joined by `|` for unions).
    pub chosen: BTreeMap<String, u64>,
}

/// One family's best.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct FamilyBest {
    /// Family.
    pub family: String,
    /// Its best configuration, if one meets the rule.
    pub best: Option<ConfigRef>,
}

/// One false positive or missed loop, explained.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Explanation {
    /// Configuration id.
    pub config: String,
    /// Its label.
    pub label: String,
    /// Session id.
    pub session: String,
    /// `fp` or `fn`.
    pub verdict: String,
    /// Labelled onset of a loop.
    pub onset_turn: Option<u64>,
    /// Turn of the detection (false positives).
    pub turn: Option<u64>,
    /// The record shown at the centre: the detection, or the onset's first record.
    pub event: Option<u64>,
    /// Kind of the detection.
    pub kind: Option<String>,
    /// Its detail.
    pub detail: Option<String>,
    /// `FILE:LINE` or `FILE#POINTER` of the detection.
    pub place: Option<String>,
    /// The records around it.
    pub lines: Vec<ExcerptLine>,
    /// What each family's default profile did on the session.
    pub others: Vec<OtherFamily>,
}

/// What one family's default profile did on an explained session.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct OtherFamily {
    /// Family.
    pub family: String,
    /// Configuration id.
    pub config: String,
    /// Its label.
    pub label: String,
    /// Turn of its first detection.
    pub turn: Option<u64>,
    /// Its verdict.
    pub verdict: String,
}

/// The best union.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct UnionInfo {
    /// Id (a row of `sweep.csv` with family `any`).
    pub config: String,
    /// Members' labels joined by ` | `.
    pub label: String,
    /// Member ids.
    pub members: Vec<String>,
    /// Bootstrap 95% interval of its median turns-to-detection.
    pub ttd_median_ci: Option<[f64; 2]>,
    /// The union search, cross-validated.
    pub cross_validation: Option<CrossValidation>,
}

/// A session where the selected configurations disagree.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Disagreement {
    /// Session id.
    pub session: String,
    /// Turns.
    pub turns: u64,
    /// `loop`, `clean` or none.
    pub label: Option<String>,
    /// Labeled onset turn.
    pub onset_turn: Option<u64>,
    /// Activity per turn.
    pub timeline: Vec<TimelineTurn>,
    /// First detection of each selected configuration that fired.
    pub detections: Vec<DetectionInfo>,
    /// Transcript excerpts around the detections.
    pub excerpts: Vec<Excerpt>,
}

/// Activity in one turn.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct TimelineTurn {
    /// Turn number.
    pub turn: u64,
    /// Tool calls.
    pub tool_calls: u64,
    /// Failed tool results.
    pub tool_errors: u64,
    /// Content chunks.
    pub content: u64,
}

/// A detection on a disagreement session.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DetectionInfo {
    /// Configuration id.
    pub config: String,
    /// Configuration label.
    pub label: String,
    /// Turn of the detection.
    pub turn: u64,
    /// Record number of the detection.
    pub event: u64,
    /// Detection kind.
    pub kind: String,
    /// Detector's message.
    pub detail: String,
}

impl<'a> ReportData<'a> {
    /// The report's data from a summary and its rows.
    pub fn new(summary: Summary<'a>, rows: Vec<Row>) -> ReportData<'a> {
        let by_id = summary
            .grid
            .configs
            .iter()
            .enumerate()
            .map(|(i, c)| (c.id.clone(), i))
            .collect();
        ReportData {
            summary,
            rows,
            by_id,
            result: None,
        }
    }

    /// The report's view of an analysed result.
    pub fn from_result(r: &'a SweepResult) -> std::io::Result<ReportData<'a>> {
        let rec = &r.record;
        let summary = Summary {
            looptune_version: rec.looptune_version.clone(),
            grid: Cow::Borrowed(&rec.grid),
            inputs: Cow::Borrowed(&rec.inputs),
            totals: totals(rec),
            labels: labels(rec),
            objective: r.objective.describe(),
            scores: r
                .scores
                .iter()
                .enumerate()
                .map(|(i, s)| ScoreEntry {
                    config: r.config(i).id.clone(),
                    ttd: Cow::Borrowed(&s.ttd),
                    labeled_loops: Some(s.labeled_loops as f64),
                    detection_kinds: s
                        .kinds
                        .iter()
                        .map(|(k, n)| (k.clone(), *n as u64))
                        .collect(),
                })
                .collect(),
            pareto: r.pareto.iter().map(|&i| r.config(i).id.clone()).collect(),
            stock: Some(config_ref(r, r.baseline)),
            chosen: Some(config_ref(r, r.chosen)),
            baseline: Some(config_ref(r, r.baseline)),
            recommendation: recommendation(r),
            recommendation_reason: r.advice.reason.clone(),
            combined_in_folds: rec
                .options
                .combined
                .clone()
                .filter(|_| !rec.options.combined_folds.is_empty()),
            label_warnings: r.advice.warnings.clone(),
            family_best: r
                .advice
                .family_best
                .iter()
                .map(|(family, best)| FamilyBest {
                    family: family.clone(),
                    best: best.map(|b| config_ref(r, b)),
                })
                .collect(),
            union: r.advice.union.as_ref().map(|u| UnionInfo {
                config: u.id.clone(),
                label: u.label.clone(),
                members: u.members.iter().map(|&m| r.config(m).id.clone()).collect(),
                ttd_median_ci: r.advice.union_ttd_ci.map(|(a, b)| [a, b]),
                cross_validation: u
                    .cross_validation
                    .as_ref()
                    .map(|cv| cross_validation(r, cv)),
            }),
            explanations: Vec::new(),
            disagreements: disagreements(r)?,
            note: NOTE.to_string(),
            wall_time_ms: rec.wall_time_ms,
            groups: GroupsView::of(r)?,
            live: LiveView::of(r)?,
        };
        let mut rows: Vec<Row> = rec
            .grid
            .configs
            .iter()
            .enumerate()
            .map(|(i, c)| Row {
                config: c.id.clone(),
                label: c.label.clone(),
                family: c.family.clone(),
                profile: c.profile.clone(),
                params: c.params.clone(),
                scores: score_map(&r.scores[i]),
                stock: c.stock,
                pareto: r.pareto.contains(&i),
                recommended: r.recommended == Some(i),
            })
            .collect();
        if let Some(u) = &r.advice.union {
            rows.push(Row {
                config: u.id.clone(),
                label: u.label.clone(),
                family: "any".into(),
                scores: score_map(&u.scores),
                ..Row::default()
            });
        }
        Ok(ReportData {
            result: Some(r),
            ..ReportData::new(summary, rows)
        })
    }

    /// The same view with its explanations made and listed, not made from
    /// the result as they are written.
    #[cfg(test)]
    pub fn listed(&self) -> ReportData<'a> {
        let mut explanations = Vec::new();
        self.each_explanation(|e| explanations.push(e.clone()))
            .expect("explanations read back");
        let mut d = self.clone();
        d.summary.explanations = explanations;
        d.result = None;
        d
    }

    /// How many explanations [`ReportData::each_explanation`] gives.
    pub fn explanation_count(&self) -> usize {
        match self.result {
            Some(r) => r.explained.cases.len(),
            None => self.summary.explanations.len(),
        }
    }

    /// Every explanation in order, each made from the result when there is
    /// one (and dropped after `f`), else the summary's own.
    pub fn each_explanation(&self, mut f: impl FnMut(&Explanation)) -> std::io::Result<()> {
        match self.result {
            Some(r) => each_explanation(r, |e| {
                f(&e);
                Ok::<(), std::convert::Infallible>(())
            })
            .map(|made| made.unwrap_or_else(|never| match never {})),
            None => {
                self.summary.explanations.iter().for_each(f);
                Ok(())
            }
        }
    }

    /// Load a sweep's result (`DIR/summary.json`) and derive the report's view.
    #[cfg(test)]
    pub fn load(dir: &std::path::Path) -> crate::error::Result<ReportData<'static>> {
        use crate::error::Error;
        let sp = dir.join(crate::util::outdir::SUMMARY_JSON);
        if !sp.is_file() {
            return Err(Error::Usage(format!(
                "{}: no summary.json here; run `looptune sweep` first",
                dir.display()
            )));
        }
        let record = crate::result::SweepRecord::load(&sp)?;
        // Test-only: the view borrows its result, which lives to the end.
        let result = Box::leak(Box::new(crate::score::analyze(record)?));
        ReportData::from_result(result).map_err(Error::hits_unreadable)
    }

    /// The `sweep.csv` row of a configuration.
    pub fn row(&self, id: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.config == id)
    }

    /// A configuration of the grid.
    pub fn config(&self, id: &str) -> Option<&ConfigRecord> {
        let configs = &self.summary.grid.configs;
        match self.by_id.get(id).and_then(|&i| configs.get(i)) {
            Some(c) if c.id == id => Some(c),
            // The grid changed after `new` (tests edit it): look.
            _ => configs.iter().find(|c| c.id == id),
        }
    }

    /// Parameter names a configuration overrides.
    pub fn override_keys(&self, id: &str) -> Vec<&str> {
        self.config(id)
            .map(|c| c.overrides.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// The unchanged stock row of a profile.
    pub fn stock_row(&self, profile: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.stock && r.profile == profile)
    }

    /// Display label: the grid's (never spreadsheet-neutralised), else the row's.
    pub fn label<'r>(&'r self, row: &'r Row) -> &'r str {
        self.config(&row.config)
            .map(|c| c.label.as_str())
            .unwrap_or(&row.label)
    }
}

/// Every defined score of a configuration, by `sweep.csv` column name.
fn score_map(s: &crate::score::metrics::Scores) -> BTreeMap<&'static str, f64> {
    crate::score::metrics::SCORE_NAMES
        .iter()
        .filter_map(|n| Some((*n, s.get(n)?)))
        .collect()
}

/// Sessions, turns and records of a record.
pub fn totals(rec: &SweepRecord) -> Totals {
    Totals {
        sessions: rec.sessions.len() as u64,
        turns: rec.sessions.iter().map(|s| s.turns as u64).sum(),
        events: rec.sessions.iter().map(|s| s.events as u64).sum(),
        whole_message_sessions: rec.sessions.iter().filter(|s| s.whole_messages).count() as u64,
    }
}

/// The labels file and how many sessions each label has.
pub fn labels(rec: &SweepRecord) -> LabelsInfo {
    let count = |l: &str| {
        rec.sessions
            .iter()
            .filter(|s| s.label.as_deref() == Some(l))
            .count() as u64
    };
    let (loops, clean) = (count("loop"), count("clean"));
    LabelsInfo {
        file: rec.labels_file.file.clone(),
        sha256: rec.labels_file.sha256.clone(),
        loops,
        clean,
        unlabeled: rec.sessions.len() as u64 - loops - clean,
        warnings: rec.labels_file.warnings.clone(),
    }
}

fn config_ref(r: &SweepResult, i: usize) -> ConfigRef {
    ConfigRef {
        config: r.config(i).id.clone(),
        label: r.config(i).label.clone(),
    }
}

/// A score as `summary.json` writes it (six decimals; `None` when not finite).
fn rounded(x: f64) -> Option<f64> {
    x.is_finite()
        .then(|| crate::util::number::fixed(x).parse().unwrap_or(x))
}

/// The recommendation with what qualifies it.
fn recommendation(r: &SweepResult) -> Option<Recommendation> {
    let c = r.recommended?;
    let v = r.config(c);
    let ci = |i: usize| r.advice.ttd_ci.get(&i).map(|&(a, b)| [a, b]);
    Some(Recommendation {
        config: v.id.clone(),
        label: v.label.clone(),
        family: v.family.clone(),
        across_families: r.advice.across_families,
        ttd_median_ci: ci(c),
        baseline: Some(BaselineInfo {
            config: r.config(r.baseline).id.clone(),
            ttd_median_ci: ci(r.baseline),
        }),
        cross_validation: r
            .advice
            .cross_validation
            .as_ref()
            .map(|cv| cross_validation(r, cv)),
        cross_validation_reason: r.advice.cv_reason.clone(),
    })
}

/// What one fold chose, as `summary.json` and the report name it: `none`, or
/// the configuration ids joined by `|` (a union).
pub(super) fn fold_choice(r: &SweepResult, members: &[usize]) -> String {
    if members.is_empty() {
        return "none".to_string();
    }
    members
        .iter()
        .map(|&m| r.config(m).id.as_str())
        .collect::<Vec<_>>()
        .join("|")
}

/// Pooled held-out scores of a choosing procedure with their intervals, and
/// how many folds chose each configuration (`none`, or ids joined by `|`).
fn cross_validation(
    r: &SweepResult,
    cv: &crate::score::recommend::CrossValidation,
) -> CrossValidation {
    let p = &cv.pooled;
    let pair = |c: Option<(f64, f64)>| c.and_then(|(a, b)| Some([rounded(a)?, rounded(b)?]));
    let mut chosen: BTreeMap<String, u64> = BTreeMap::new();
    for members in &cv.chosen {
        *chosen.entry(fold_choice(r, members)).or_default() += 1;
    }
    CrossValidation {
        folds: cv.folds as u64,
        seed: cv.seed,
        labeled_loops: p.loops,
        labeled_clean: p.clean,
        recall: rounded(p.recall()),
        recall_ci: pair(crate::score::stats::wilson(p.tp, p.loops)),
        precision: rounded(p.precision()),
        precision_ci: pair(crate::score::stats::wilson(p.tp, p.tp + p.fp)),
        false_positives: p.fp,
        fp_rate: p.fp_rate().and_then(rounded),
        fp_rate_ci: pair(crate::score::stats::wilson(p.fp, p.clean)),
        f1: rounded(p.f1()),
        chosen,
    }
}

/// [`SweepResult::explained`]'s cases one at a time, in order, each made,
/// handed to `f` and dropped: `summary.json` and the report write them as
/// they are made (a large corpus has thousands, each with its records).
/// The outer error: the sweep's temporary file of explanations could not be
/// read back; the inner one is `f`'s.
pub fn each_explanation<E>(
    r: &SweepResult,
    mut f: impl FnMut(Explanation) -> Result<(), E>,
) -> std::io::Result<Result<(), E>> {
    use crate::result::Hit;
    use crate::score::metrics::verdict_at;
    let rec = &r.record;
    for case in &r.explained.cases {
        let s = &rec.sessions[case.session];
        let lines = rec.explain.get(case.lines).map_err(|e| {
            std::io::Error::other(format!(
                "reading back this sweep's explanations from a temporary file in {}: {e}",
                crate::error::tmp_dir()
            ))
        })?;
        let hit = case.hit.as_ref();
        let (v, _) = verdict_at(hit.and_then(Hit::turn), s.label());
        let first = hit.and_then(|h| h.first.as_ref());
        let event = match first {
            Some(d) => Some(d.event),
            None => s
                .onset_turn
                .and_then(|on| lines.lines.iter().find(|l| l.turn >= on).map(|l| l.event)),
        };
        let others = r
            .explained
            .families
            .iter()
            .zip(&case.others)
            .map(|(&f, h)| {
                let (v, _) = verdict_at(h.as_ref().and_then(Hit::turn), s.label());
                let fc = &rec.grid.configs[f];
                OtherFamily {
                    family: fc.family.clone(),
                    config: fc.id.clone(),
                    label: fc.label.clone(),
                    turn: h.as_ref().and_then(Hit::turn).map(u64::from),
                    verdict: v.as_str().to_string(),
                }
            })
            .collect();
        let made = f(Explanation {
            config: r.config(case.config).id.clone(),
            label: r.config(case.config).label.clone(),
            session: s.id.clone(),
            verdict: v.as_str().to_string(),
            onset_turn: s.onset_turn.map(u64::from),
            turn: first.map(|d| u64::from(d.turn)),
            event: event.map(u64::from),
            kind: first.map(|d| d.kind.clone()),
            detail: first.map(|d| d.detail.clone()),
            place: first.and_then(|d| d.place.as_ref()).map(|p| p.to_string()),
            lines: event.map(|e| lines.around(e)).unwrap_or_default(),
            others,
        });
        if made.is_err() {
            return Ok(made);
        }
    }
    Ok(Ok(()))
}

/// Sessions where the stock profiles disagree most (from the record's
/// material), with every selected configuration's first detection.
pub fn disagreements(r: &SweepResult) -> std::io::Result<Vec<Disagreement>> {
    let sel = selected(r);
    let rec = &r.record;
    let mut out = Vec::new();
    for m in &rec.material {
        let Some(si) = rec.sessions.iter().position(|s| s.id == m.session) else {
            continue;
        };
        let s = &rec.sessions[si];
        let mut detections = Vec::new();
        for &c in &sel {
            let Some(h) = rec.outcomes.hit(c, si)? else {
                continue;
            };
            let Some(d) = h.first.as_ref() else {
                continue;
            };
            detections.push(DetectionInfo {
                config: r.config(c).id.clone(),
                label: r.config(c).label.clone(),
                turn: d.turn.into(),
                event: d.event.into(),
                kind: d.kind.clone(),
                detail: d.detail.clone(),
            });
        }
        let timeline = m
            .timeline
            .iter()
            .enumerate()
            .map(|(t, x)| TimelineTurn {
                turn: t as u64,
                tool_calls: x[0].into(),
                tool_errors: x[1].into(),
                content: x[2].into(),
            })
            .collect();
        out.push(Disagreement {
            session: s.id.clone(),
            turns: s.turns.into(),
            label: s.label.clone(),
            onset_turn: s.onset_turn.map(u64::from),
            timeline,
            detections,
            excerpts: m.excerpts.clone(),
        });
    }
    Ok(out)
}

/// Parse `sweep.csv`: parameter columns are those between `profile` and the
/// first score column (`sessions`); flags are the last three. Test support
/// (it panics on a file that is not a sweep.csv): the report itself is built
/// from the result.
#[cfg(test)]
pub fn parse_sweep_csv(text: &str) -> Vec<Row> {
    let mut rd = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = rd
        .headers()
        .expect("a sweep.csv header")
        .iter()
        .map(str::to_string)
        .collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("not a sweep.csv: no `{name}` column"))
    };
    let (c_config, c_label, c_family, c_profile) =
        (col("config"), col("label"), col("family"), col("profile"));
    let c_sessions = col("sessions");
    let flags = [col("stock"), col("pareto"), col("recommended")];
    let kinds = col("detection_kinds");
    let mut rows = Vec::new();
    for (n, rec) in rd.records().enumerate() {
        let rec = rec.unwrap_or_else(|e| panic!("row {}: {e}", n + 2));
        let cell = |i: usize| rec.get(i).unwrap_or("").to_string();
        let mut row = Row {
            config: cell(c_config),
            label: cell(c_label),
            family: cell(c_family),
            profile: cell(c_profile),
            stock: cell(flags[0]) == "true",
            pareto: cell(flags[1]) == "true",
            recommended: cell(flags[2]) == "true",
            ..Row::default()
        };
        for (i, name) in header.iter().enumerate() {
            let v = rec.get(i).unwrap_or("");
            if v.is_empty() {
                continue;
            }
            if i > c_profile && i < c_sessions {
                row.params.insert(name.clone(), v.to_string());
            } else if i >= c_sessions && i != kinds && !flags.contains(&i) {
                let x: f64 = v.parse().unwrap_or_else(|_| {
                    panic!("row {}: column `{name}`: `{v}` is not a number", n + 2)
                });
                let name = crate::score::metrics::SCORE_NAMES
                    .iter()
                    .find(|n| **n == name.as_str())
                    .unwrap_or_else(|| panic!("column `{name}` is not a score"));
                row.scores.insert(name, x);
            }
        }
        rows.push(row);
    }
    rows
}

/// The configurations charts compare: stock profiles and the recommendation.
fn selected(r: &crate::score::SweepResult) -> Vec<usize> {
    let mut sel: Vec<usize> = (0..r.record.grid.configs.len())
        .filter(|&i| r.config(i).stock)
        .collect();
    if let Some(rec) = r.recommended {
        if !sel.contains(&rec) {
            sel.push(rec);
        }
    }
    sel
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_columns_split_into_params_and_scores() {
        let csv = "config,label,family,profile,policy,tool_call_threshold,sessions,recall,ttd_median,detection_kinds,stock,pareto,recommended\n\
                   c1,x,gemini,gemini-latest,stop,5,3,0.5,,tool_call:1,true,false,true\n";
        let rows = parse_sweep_csv(csv);
        assert_eq!(rows[0].params["policy"], "stop");
        assert_eq!(rows[0].params["tool_call_threshold"], "5");
        assert_eq!(rows[0].score("recall"), Some(0.5));
        assert_eq!(rows[0].score("ttd_median"), None);
        assert!(rows[0].stock && !rows[0].pareto && rows[0].recommended);
    }

    #[test]
    fn missing_files_name_the_file() {
        let d = tempfile::tempdir().unwrap();
        let e = ReportData::load(d.path()).unwrap_err();
        assert!(e.to_string().contains("summary.json"), "{e}");
        std::fs::write(d.path().join("summary.json"), "{}").unwrap();
        let e = ReportData::load(d.path()).unwrap_err();
        assert!(e.to_string().contains("schema_version missing"), "{e}");
        std::fs::write(d.path().join("summary.json"), "{not json").unwrap();
        let e = ReportData::load(d.path()).unwrap_err();
        assert!(
            matches!(e, crate::error::Error::Line { line: 1, .. })
                && e.to_string().contains("summary.json"),
            "{e}"
        );
    }
}
