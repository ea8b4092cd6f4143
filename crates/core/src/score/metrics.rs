//! Scores of each configuration against the labels, the Pareto front, and the
//! recommendation. Pure and sequential: computed after the parallel replay in
//! a fixed order, so results never depend on `--jobs`.

use crate::event::{Corpus, Label};
use crate::input::labels::Labels;
use crate::replay::Outcome;
use crate::result::{Hit, HitView};
use crate::score::stats;
use std::collections::BTreeMap;

/// How a configuration did on one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Fired on a loop at or after its onset.
    TruePositive,
    /// Fired on a loop before its onset (counts as a true positive).
    Early,
    /// Fired on a clean session.
    FalsePositive,
    /// Did not fire on a loop.
    Missed,
    /// Did not fire on a clean session.
    TrueNegative,
    /// Fired on an unlabeled session.
    Unlabeled,
    /// Did not fire on an unlabeled session.
    Quiet,
}

impl Verdict {
    /// The `outcome` column of `detections.csv`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::TruePositive => "tp",
            Verdict::Early => "early",
            Verdict::FalsePositive => "fp",
            Verdict::Missed => "fn",
            Verdict::TrueNegative => "tn",
            Verdict::Unlabeled => "unlabeled",
            Verdict::Quiet => "quiet",
        }
    }
}

/// Judge one outcome against a label: verdict and turns-to-detection.
///
/// Turns-to-detection = detection turn - onset turn + 1 (the onset turn itself
/// counts 1); an early detection reports it as is (zero or negative).
pub fn verdict(o: &Outcome, label: Option<Label>) -> (Verdict, Option<i64>) {
    verdict_at(o.first().map(|d| d.turn), label)
}

/// [`verdict`] from the turn of the first detection, if any.
pub fn verdict_at(fired: Option<u32>, label: Option<Label>) -> (Verdict, Option<i64>) {
    match (label, fired) {
        (None, Some(_)) => (Verdict::Unlabeled, None),
        (None, None) => (Verdict::Quiet, None),
        (Some(l), Some(turn)) if l.is_loop => {
            let ttd = l.onset_turn.map(|on| turn as i64 - on as i64 + 1);
            let early = l.onset_turn.is_some_and(|on| turn < on);
            (
                if early {
                    Verdict::Early
                } else {
                    Verdict::TruePositive
                },
                ttd,
            )
        }
        (Some(l), None) if l.is_loop => (Verdict::Missed, None),
        (Some(_), Some(_)) => (Verdict::FalsePositive, None),
        (Some(_), None) => (Verdict::TrueNegative, None),
    }
}

/// The scores of one configuration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scores {
    /// Sessions replayed.
    pub sessions: usize,
    /// Sessions labeled `loop`.
    pub labeled_loops: usize,
    /// Sessions labeled `clean`.
    pub labeled_clean: usize,
    /// Loops detected (early detections included).
    pub true_positives: usize,
    /// Clean sessions with a detection.
    pub false_positives: usize,
    /// Loops without a detection.
    pub missed_loops: usize,
    /// Clean sessions without a detection.
    pub true_negatives: usize,
    /// TP / (TP + FP); 0 when nothing fired.
    pub precision: f64,
    /// TP / labeled loops; 0 when there are no loops.
    pub recall: f64,
    /// Harmonic mean of precision and recall; 0 when both are 0.
    pub f1: f64,
    /// False positives per 1,000 turns of clean sessions.
    pub fp_per_1k_turns: f64,
    /// Turns-to-detection of every detected loop with an onset, in session order.
    pub ttd: TtdList,
    /// Median turns-to-detection.
    pub ttd_median: Option<f64>,
    /// 90th percentile (nearest rank).
    pub ttd_p90: Option<f64>,
    /// Largest turns-to-detection.
    pub ttd_max: Option<i64>,
    /// Detections before the labeled onset.
    pub early_detections: usize,
    /// Sessions with a detection (labeled or not).
    pub detections: usize,
    /// First detections by kind.
    pub kinds: BTreeMap<String, usize>,
    /// Judge checks due (until the stop).
    pub judge_checks_due: u64,
    /// Judge checks due without a recorded verdict.
    pub judge_checks_no_verdict: u64,
    /// Sessions the policy stops.
    pub stops: usize,
    /// Warnings issued (warn:N).
    pub warnings: u64,
    /// Detections nobody acted on (ignore).
    pub unheeded: u64,
    /// Tokens the recordings spent after the stop point, all sessions.
    pub tokens_after_detection: u64,
    /// ... on labeled loops: what a stop would have saved.
    pub tokens_saved_on_loops: u64,
    /// ... on labeled clean sessions: work a stop would have destroyed.
    pub tokens_lost_on_clean: u64,
    /// Turns the recordings spent after the stop point.
    pub turns_after_detection: u64,
    /// Wilson 95% interval of the recall (`None` without labelled loops).
    pub recall_ci: Option<(f64, f64)>,
    /// Wilson 95% interval of the precision (`None` when nothing fired on a labelled session).
    pub precision_ci: Option<(f64, f64)>,
    /// False positives per labelled clean session (`None` without clean sessions).
    pub fp_rate: Option<f64>,
    /// Its Wilson 95% interval.
    pub fp_rate_ci: Option<(f64, f64)>,
}

/// What a score counts or measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Sessions (a count).
    Sessions,
    /// Detections or warnings (a count).
    Detections,
    /// Judge checks (a count).
    Checks,
    /// A proportion, 0 to 1.
    Share,
    /// False positives per 1000 turns of clean sessions.
    PerThousandTurns,
    /// Turns.
    Turns,
    /// Tokens.
    Tokens,
}

impl Unit {
    /// The unit as a header or a gate message names it.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Sessions => "sessions",
            Unit::Detections => "detections",
            Unit::Checks => "checks",
            Unit::Share => "share (0-1)",
            Unit::PerThousandTurns => "per 1k clean turns",
            Unit::Turns => "turns",
            Unit::Tokens => "tokens",
        }
    }
}

/// Which way a score is better, when it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// More is better (recall).
    Higher,
    /// Less is better (false positives).
    Lower,
    /// A size or a cost to read, not a quality (sessions, detections).
    Neither,
}

/// One numeric score: its `sweep.csv` column and `--require` name, what
/// reports call it, its unit and direction, and whether it needs labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScoreInfo {
    /// Column, gate and `summary.json` name.
    pub name: &'static str,
    /// What a Markdown summary or a sentence calls it.
    pub label: &'static str,
    /// What a narrow table header calls it.
    pub short: &'static str,
    /// What it counts or measures.
    pub unit: Unit,
    /// Which way is better.
    pub better: Better,
    /// Meaningless (and refused by gates) without labels.
    pub needs_labels: bool,
    /// Always a whole number (written without decimals in `sweep.csv`).
    pub whole: bool,
}

impl ScoreInfo {
    /// Lower is better.
    pub fn lower_is_better(&self) -> bool {
        self.better == Better::Lower
    }
}

/// Every numeric score, in `sweep.csv` column order: the one table writers,
/// gates and `summary.json` read names, labels and units from.
pub const SCORES: &[ScoreInfo] = &[
    ScoreInfo {
        name: "sessions",
        label: "sessions",
        short: "sessions",
        unit: Unit::Sessions,
        better: Better::Neither,
        needs_labels: false,
        whole: true,
    },
    ScoreInfo {
        name: "labeled_loops",
        label: "labeled loops",
        short: "labeled loops",
        unit: Unit::Sessions,
        better: Better::Neither,
        needs_labels: false,
        whole: true,
    },
    ScoreInfo {
        name: "labeled_clean",
        label: "labeled clean sessions",
        short: "labeled clean",
        unit: Unit::Sessions,
        better: Better::Neither,
        needs_labels: false,
        whole: true,
    },
    ScoreInfo {
        name: "true_positives",
        label: "loops caught",
        short: "loops caught",
        unit: Unit::Sessions,
        better: Better::Higher,
        needs_labels: true,
        whole: true,
    },
    ScoreInfo {
        name: "false_positives",
        label: "false positives",
        short: "false positives",
        unit: Unit::Sessions,
        better: Better::Lower,
        needs_labels: true,
        whole: true,
    },
    ScoreInfo {
        name: "missed_loops",
        label: "loops missed",
        short: "loops missed",
        unit: Unit::Sessions,
        better: Better::Lower,
        needs_labels: true,
        whole: true,
    },
    ScoreInfo {
        name: "true_negatives",
        label: "clean sessions left alone",
        short: "clean left alone",
        unit: Unit::Sessions,
        better: Better::Higher,
        needs_labels: true,
        whole: true,
    },
    ScoreInfo {
        name: "precision",
        label: "precision",
        short: "precision",
        unit: Unit::Share,
        better: Better::Higher,
        needs_labels: true,
        whole: false,
    },
    ScoreInfo {
        name: "recall",
        label: "recall",
        short: "recall",
        unit: Unit::Share,
        better: Better::Higher,
        needs_labels: true,
        whole: false,
    },
    ScoreInfo {
        name: "f1",
        label: "F1",
        short: "F1",
        unit: Unit::Share,
        better: Better::Higher,
        needs_labels: true,
        whole: false,
    },
    ScoreInfo {
        name: "fp_per_1k_turns",
        label: "false positives / 1k clean turns",
        short: "FP / 1k turns",
        unit: Unit::PerThousandTurns,
        better: Better::Lower,
        needs_labels: true,
        whole: false,
    },
    ScoreInfo {
        name: "ttd_median",
        label: "median turns to detection",
        short: "median TTD",
        unit: Unit::Turns,
        better: Better::Lower,
        needs_labels: true,
        whole: false,
    },
    ScoreInfo {
        name: "ttd_p90",
        label: "p90 turns to detection",
        short: "p90 TTD",
        unit: Unit::Turns,
        better: Better::Lower,
        needs_labels: true,
        whole: false,
    },
    ScoreInfo {
        name: "ttd_max",
        label: "longest turns to detection",
        short: "max TTD",
        unit: Unit::Turns,
        better: Better::Lower,
        needs_labels: true,
        whole: true,
    },
    ScoreInfo {
        name: "early_detections",
        label: "early detections",
        short: "early",
        unit: Unit::Sessions,
        better: Better::Lower,
        needs_labels: true,
        whole: true,
    },
    ScoreInfo {
        name: "tokens_after_detection",
        label: "tokens after stop",
        short: "tokens after stop",
        unit: Unit::Tokens,
        better: Better::Neither,
        needs_labels: false,
        whole: true,
    },
    ScoreInfo {
        name: "detections",
        label: "sessions with a detection",
        short: "detections",
        unit: Unit::Sessions,
        better: Better::Neither,
        needs_labels: false,
        whole: true,
    },
    ScoreInfo {
        name: "judge_checks_due",
        label: "judge checks due",
        short: "judge checks",
        unit: Unit::Checks,
        better: Better::Neither,
        needs_labels: false,
        whole: true,
    },
    ScoreInfo {
        name: "judge_checks_no_verdict",
        label: "judge checks without a verdict",
        short: "judge no verdict",
        unit: Unit::Checks,
        better: Better::Lower,
        needs_labels: false,
        whole: true,
    },
    ScoreInfo {
        name: "stops",
        label: "sessions stopped",
        short: "stops",
        unit: Unit::Sessions,
        better: Better::Neither,
        needs_labels: false,
        whole: true,
    },
    ScoreInfo {
        name: "warnings",
        label: "warnings issued",
        short: "warnings",
        unit: Unit::Detections,
        better: Better::Neither,
        needs_labels: false,
        whole: true,
    },
    ScoreInfo {
        name: "unheeded",
        label: "detections nobody acted on",
        short: "unheeded",
        unit: Unit::Detections,
        better: Better::Neither,
        needs_labels: false,
        whole: true,
    },
    ScoreInfo {
        name: "tokens_saved_on_loops",
        label: "tokens after stop on loops (saved)",
        short: "tokens saved",
        unit: Unit::Tokens,
        better: Better::Higher,
        needs_labels: true,
        whole: true,
    },
    ScoreInfo {
        name: "tokens_lost_on_clean",
        label: "tokens after stop on clean (lost)",
        short: "tokens lost",
        unit: Unit::Tokens,
        better: Better::Lower,
        needs_labels: true,
        whole: true,
    },
    ScoreInfo {
        name: "turns_after_detection",
        label: "turns after stop",
        short: "turns after stop",
        unit: Unit::Turns,
        better: Better::Neither,
        needs_labels: false,
        whole: true,
    },
    ScoreInfo {
        name: "ttd_n",
        label: "loops with a turns-to-detection",
        short: "TTD n",
        unit: Unit::Sessions,
        better: Better::Neither,
        needs_labels: true,
        whole: true,
    },
    ScoreInfo {
        name: "recall_lo",
        label: "recall, 95% interval low",
        short: "recall lo",
        unit: Unit::Share,
        better: Better::Higher,
        needs_labels: true,
        whole: false,
    },
    ScoreInfo {
        name: "recall_hi",
        label: "recall, 95% interval high",
        short: "recall hi",
        unit: Unit::Share,
        better: Better::Higher,
        needs_labels: true,
        whole: false,
    },
    ScoreInfo {
        name: "precision_lo",
        label: "precision, 95% interval low",
        short: "precision lo",
        unit: Unit::Share,
        better: Better::Higher,
        needs_labels: true,
        whole: false,
    },
    ScoreInfo {
        name: "precision_hi",
        label: "precision, 95% interval high",
        short: "precision hi",
        unit: Unit::Share,
        better: Better::Higher,
        needs_labels: true,
        whole: false,
    },
    ScoreInfo {
        name: "fp_rate",
        label: "false positives per clean session",
        short: "FP rate",
        unit: Unit::Share,
        better: Better::Lower,
        needs_labels: true,
        whole: false,
    },
    ScoreInfo {
        name: "fp_rate_lo",
        label: "false positives per clean session, 95% interval low",
        short: "FP rate lo",
        unit: Unit::Share,
        better: Better::Lower,
        needs_labels: true,
        whole: false,
    },
    ScoreInfo {
        name: "fp_rate_hi",
        label: "false positives per clean session, 95% interval high",
        short: "FP rate hi",
        unit: Unit::Share,
        better: Better::Lower,
        needs_labels: true,
        whole: false,
    },
];

/// Names of the numeric scores, as `sweep.csv` columns and `--require` gates
/// use them ([`SCORES`] in order).
pub const SCORE_NAMES: &[&str] = &{
    let mut names = [""; SCORES.len()];
    let mut i = 0;
    while i < SCORES.len() {
        names[i] = SCORES[i].name;
        i += 1;
    }
    names
};

/// A score's row of [`SCORES`].
pub fn score_info(name: &str) -> Option<&'static ScoreInfo> {
    SCORES.iter().find(|s| s.name == name)
}

/// Whether a score needs labels: meaningless (and refused by gates) without any.
pub fn needs_labels(score: &str) -> bool {
    score_info(score).is_some_and(|s| s.needs_labels)
}

/// Turns-to-detection in session order, packed: each value zigzag-encoded
/// as LEB128 bytes (one byte for -64..63, where nearly all fall). A sweep
/// keeps every configuration's list to the end (`summary.json` writes them
/// all), and at 8 bytes a value they grew its memory with every labelled
/// loop (benches/README.md).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct TtdList {
    bytes: Vec<u8>,
    len: usize,
}

impl TtdList {
    /// Add `value` at the end.
    pub fn push(&mut self, value: i64) {
        let mut z = ((value << 1) ^ (value >> 63)) as u64;
        while z >= 0x80 {
            self.bytes.push(z as u8 | 0x80);
            z >>= 7;
        }
        self.bytes.push(z as u8);
        self.len += 1;
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The values, in order.
    pub fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        let mut at = 0;
        std::iter::from_fn(move || {
            let mut z = 0u64;
            let mut shift = 0;
            loop {
                let b = *self.bytes.get(at)?;
                at += 1;
                z |= ((b & 0x7f) as u64) << shift;
                if b < 0x80 {
                    return Some((z >> 1) as i64 ^ -((z & 1) as i64));
                }
                shift += 7;
            }
        })
    }

    /// The values, in order, as a vector.
    pub fn to_vec(&self) -> Vec<i64> {
        let mut v = Vec::with_capacity(self.len);
        v.extend(self.iter());
        v
    }

    /// Give back the room held for more values.
    pub fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
    }
}

impl FromIterator<i64> for TtdList {
    fn from_iter<I: IntoIterator<Item = i64>>(values: I) -> TtdList {
        let mut l = TtdList::default();
        values.into_iter().for_each(|v| l.push(v));
        l
    }
}

impl From<Vec<i64>> for TtdList {
    fn from(values: Vec<i64>) -> TtdList {
        values.into_iter().collect()
    }
}

impl std::fmt::Debug for TtdList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// As the list of numbers it holds (the bytes a `Vec<i64>` gives).
impl serde::Serialize for TtdList {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.collect_seq(self.iter())
    }
}

impl<'de> serde::Deserialize<'de> for TtdList {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<TtdList, D::Error> {
        struct Values;
        impl<'de> serde::de::Visitor<'de> for Values {
            type Value = TtdList;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of integers")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<TtdList, A::Error> {
                let mut l = TtdList::default();
                while let Some(v) = seq.next_element::<i64>()? {
                    l.push(v);
                }
                Ok(l)
            }
        }
        de.deserialize_seq(Values)
    }
}

impl Scores {
    /// A score by name (`None` when undefined, e.g. the median of no detections).
    pub fn get(&self, name: &str) -> Option<f64> {
        Some(match name {
            "sessions" => self.sessions as f64,
            "labeled_loops" => self.labeled_loops as f64,
            "labeled_clean" => self.labeled_clean as f64,
            "true_positives" => self.true_positives as f64,
            "false_positives" => self.false_positives as f64,
            "missed_loops" => self.missed_loops as f64,
            "true_negatives" => self.true_negatives as f64,
            "precision" => self.precision,
            "recall" => self.recall,
            "f1" => self.f1,
            "fp_per_1k_turns" => self.fp_per_1k_turns,
            "ttd_median" => return self.ttd_median,
            "ttd_p90" => return self.ttd_p90,
            "ttd_max" => return self.ttd_max.map(|x| x as f64),
            "early_detections" => self.early_detections as f64,
            "tokens_after_detection" => self.tokens_after_detection as f64,
            "detections" => self.detections as f64,
            "judge_checks_due" => self.judge_checks_due as f64,
            "judge_checks_no_verdict" => self.judge_checks_no_verdict as f64,
            "stops" => self.stops as f64,
            "warnings" => self.warnings as f64,
            "unheeded" => self.unheeded as f64,
            "tokens_saved_on_loops" => self.tokens_saved_on_loops as f64,
            "tokens_lost_on_clean" => self.tokens_lost_on_clean as f64,
            "turns_after_detection" => self.turns_after_detection as f64,
            "ttd_n" => self.ttd.len() as f64,
            "recall_lo" => return self.recall_ci.map(|c| c.0),
            "recall_hi" => return self.recall_ci.map(|c| c.1),
            "precision_lo" => return self.precision_ci.map(|c| c.0),
            "precision_hi" => return self.precision_ci.map(|c| c.1),
            "fp_rate" => return self.fp_rate,
            "fp_rate_lo" => return self.fp_rate_ci.map(|c| c.0),
            "fp_rate_hi" => return self.fp_rate_ci.map(|c| c.1),
            _ => return None,
        })
    }
}

/// Score one configuration's outcomes (in corpus session order).
pub fn score(outcomes: &[Outcome], corpus: &Corpus, labels: &Labels) -> Scores {
    let hits: Vec<Option<Hit>> = outcomes.iter().map(|o| Hit::from_outcome(0, o)).collect();
    let view: Vec<Option<HitView>> = hits.iter().map(|h| h.as_ref().map(|h| h.view())).collect();
    score_hits(&view, |i| {
        (
            corpus.sessions[i].turns,
            labels.by_session.get(i).copied().flatten(),
        )
    })
}

/// Score one configuration from what it did on each session (`None`: nothing
/// happened); `session(i)` gives session i's turns and label. The one place
/// scores are computed, for replays and for loaded or merged results alike.
pub fn score_hits(
    hits: &[Option<HitView<'_>>],
    session: impl Fn(usize) -> (u32, Option<Label>),
) -> Scores {
    let mut s = Scores {
        sessions: hits.len(),
        ..Default::default()
    };
    let mut clean_turns = 0u64;
    for (i, h) in hits.iter().enumerate() {
        let o = h.unwrap_or_default();
        let (turns, label) = session(i);
        let (v, ttd) = verdict_at(o.turn(), label);
        match v {
            Verdict::TruePositive => s.true_positives += 1,
            Verdict::Early => {
                s.true_positives += 1;
                s.early_detections += 1;
            }
            Verdict::FalsePositive => s.false_positives += 1,
            Verdict::Missed => s.missed_loops += 1,
            Verdict::TrueNegative => s.true_negatives += 1,
            Verdict::Unlabeled | Verdict::Quiet => {}
        }
        if let Some(t) = ttd {
            s.ttd.push(t);
        }
        match label {
            Some(l) if l.is_loop => {
                s.labeled_loops += 1;
                s.tokens_saved_on_loops = s
                    .tokens_saved_on_loops
                    .saturating_add(o.tokens_after_stop());
            }
            Some(_) => {
                s.labeled_clean += 1;
                clean_turns += turns as u64;
                s.tokens_lost_on_clean =
                    s.tokens_lost_on_clean.saturating_add(o.tokens_after_stop());
            }
            None => {}
        }
        if let Some(d) = o.first {
            s.detections += 1;
            // The kind is copied once per kind, not once per detection.
            match s.kinds.get_mut(&d.kind) {
                Some(n) => *n += 1,
                None => {
                    s.kinds.insert(d.kind.clone(), 1);
                }
            }
        }
        s.judge_checks_due += o.judge_due as u64;
        s.judge_checks_no_verdict += o.judge_no_verdict as u64;
        if o.stop_turn().is_some() {
            s.stops += 1;
        }
        s.warnings += o.warnings() as u64;
        s.unheeded += o.unheeded() as u64;
        s.tokens_after_detection = s
            .tokens_after_detection
            .saturating_add(o.tokens_after_stop());
        s.turns_after_detection += o.turns_after_stop() as u64;
    }
    let tp = s.true_positives as f64;
    let fired = (s.true_positives + s.false_positives) as f64;
    s.precision = if fired > 0.0 { tp / fired } else { 0.0 };
    s.recall = if s.labeled_loops > 0 {
        tp / s.labeled_loops as f64
    } else {
        0.0
    };
    s.f1 = if s.precision + s.recall > 0.0 {
        2.0 * s.precision * s.recall / (s.precision + s.recall)
    } else {
        0.0
    };
    s.fp_per_1k_turns = if clean_turns > 0 {
        s.false_positives as f64 * 1000.0 / clean_turns as f64
    } else {
        0.0
    };
    let (tp, fp) = (s.true_positives as u64, s.false_positives as u64);
    s.recall_ci = stats::wilson(tp, s.labeled_loops as u64);
    s.precision_ci = stats::wilson(tp, tp + fp);
    s.fp_rate = (s.labeled_clean > 0).then(|| fp as f64 / s.labeled_clean as f64);
    s.fp_rate_ci = stats::wilson(fp, s.labeled_clean as u64);
    s.ttd.shrink_to_fit();
    let mut sorted = s.ttd.to_vec();
    sorted.sort_unstable();
    s.ttd_median = median(&sorted);
    s.ttd_p90 = nearest_rank(&sorted, 0.9).map(|x| x as f64);
    s.ttd_max = sorted.last().copied();
    s
}

pub use crate::score::stats::median;

/// Nearest-rank percentile of sorted values: the ceil(q x n)-th smallest.
pub fn nearest_rank(sorted: &[i64], q: f64) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

/// Indices of the configurations on the Pareto front over (false positives,
/// missed loops, median turns-to-detection; no detection counts as worst).
pub fn pareto(scores: &[Scores]) -> Vec<usize> {
    let key = |s: &Scores| {
        (
            s.false_positives as f64,
            s.missed_loops as f64,
            s.ttd_median.unwrap_or(f64::INFINITY),
        )
    };
    let dominated = |a: (f64, f64, f64), b: (f64, f64, f64)| {
        b.0 <= a.0 && b.1 <= a.1 && b.2 <= a.2 && (b.0 < a.0 || b.1 < a.1 || b.2 < a.2)
    };
    (0..scores.len())
        .filter(|&i| !(0..scores.len()).any(|j| dominated(key(&scores[i]), key(&scores[j]))))
        .collect()
}

/// How to pick the recommended configuration (the `recommend` module applies it).
#[derive(Debug, Clone, PartialEq)]
pub enum Objective {
    /// No more false positives than the baseline, then highest recall, then
    /// lowest median turns-to-detection, then closest to the baseline's values.
    Default,
    /// Highest F1, then fewest false positives, then lowest median turns-to-detection.
    F1,
    /// At most N false positives, then as the default rule.
    MaxFalsePositives(usize),
    /// False positives on at most this share of the labelled clean sessions
    /// chosen on (rounded down), then as the default rule: a budget that
    /// scales from one corpus (or fold) to the next, where the default
    /// rule's "no more than the baseline" is a count.
    FpRate(f64),
}

/// An `--objective` that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown objective `{text}` (default, f1, max-fp=N, fp-rate=R with R from 0 to 1)")]
pub struct ObjectiveError {
    /// The rule as given.
    pub text: String,
    /// Why `max-fp=N`'s count did not parse, for `max-fp=` rules.
    #[source]
    pub count: Option<std::num::ParseIntError>,
    /// Why `fp-rate=R`'s rate did not parse, for `fp-rate=` rules.
    pub rate: Option<std::num::ParseFloatError>,
}

impl std::str::FromStr for Objective {
    type Err = ObjectiveError;

    /// Parse `default`, `f1`, `max-fp=N` or `fp-rate=R` (0 <= R <= 1).
    fn from_str(s: &str) -> Result<Objective, ObjectiveError> {
        let err = |count, rate| ObjectiveError {
            text: s.to_string(),
            count,
            rate,
        };
        match s {
            "default" => Ok(Objective::Default),
            "f1" => Ok(Objective::F1),
            _ => {
                if let Some(r) = s.strip_prefix("fp-rate=") {
                    return match r.parse::<f64>() {
                        Ok(x) if (0.0..=1.0).contains(&x) => Ok(Objective::FpRate(x)),
                        Ok(_) => Err(err(None, None)),
                        Err(e) => Err(err(None, Some(e))),
                    };
                }
                match s.strip_prefix("max-fp=").map(str::parse) {
                    Some(Ok(n)) => Ok(Objective::MaxFalsePositives(n)),
                    other => Err(err(other.and_then(Result::err), None)),
                }
            }
        }
    }
}

impl std::fmt::Display for Objective {
    /// The rule as `--objective` takes it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Objective::Default => write!(f, "default"),
            Objective::F1 => write!(f, "f1"),
            Objective::MaxFalsePositives(n) => write!(f, "max-fp={n}"),
            // f64's Display is the shortest text that parses back the same.
            Objective::FpRate(r) => write!(f, "fp-rate={r}"),
        }
    }
}

impl Objective {
    /// Parse `default`, `f1` or `max-fp=N`.
    pub fn parse(s: &str) -> Result<Objective, ObjectiveError> {
        s.parse()
    }

    /// One line for reports.
    pub fn describe(&self) -> String {
        match self {
            Objective::Default => "no more false positives than the baseline, then highest recall, then lowest median turns-to-detection, then closest to the baseline's values".into(),
            Objective::F1 => "highest F1, then fewest false positives, then lowest median turns-to-detection, then closest to the baseline's values".into(),
            Objective::MaxFalsePositives(n) => format!("at most {n} false positives, then highest recall, then lowest median turns-to-detection, then closest to the baseline's values"),
            Objective::FpRate(r) => format!("false positives on at most {} of the labelled clean sessions (rounded down), then highest recall, then lowest median turns-to-detection, then closest to the baseline's values", crate::util::number::fixed(*r)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Packed turns-to-detection give back the values in order, and
        /// serialize and read back as the list of numbers they are.
        #[test]
        fn a_packed_ttd_list_is_the_list(v in proptest::collection::vec(proptest::prop_oneof![
            -70i64..70,
            proptest::num::i64::ANY,
        ], 0..40)) {
            let l: TtdList = v.clone().into();
            proptest::prop_assert_eq!(l.len(), v.len());
            proptest::prop_assert_eq!(l.is_empty(), v.is_empty());
            proptest::prop_assert_eq!(l.to_vec(), v.clone());
            proptest::prop_assert_eq!(format!("{l:?}"), format!("{v:?}"));
            let text = serde_json::to_string(&l).unwrap();
            proptest::prop_assert_eq!(&text, &serde_json::to_string(&v).unwrap());
            proptest::prop_assert_eq!(serde_json::from_str::<TtdList>(&text).unwrap(), l);
        }
    }

    /// A value near zero takes one byte.
    #[test]
    fn small_ttd_values_take_a_byte_each() {
        let l: TtdList = (-64..64).collect();
        assert_eq!((l.len(), l.bytes.len()), (128, 128));
        assert_eq!(l.to_vec(), (-64..64).collect::<Vec<i64>>());
    }

    #[test]
    fn the_score_table_names_each_score_once_and_scores_answer_every_name() {
        let mut names: Vec<&str> = SCORE_NAMES.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SCORES.len());
        let s = Scores {
            ttd_median: Some(1.0),
            ttd_p90: Some(1.0),
            ttd_max: Some(1),
            recall_ci: Some((0.0, 1.0)),
            precision_ci: Some((0.0, 1.0)),
            fp_rate: Some(0.0),
            fp_rate_ci: Some((0.0, 1.0)),
            ..Default::default()
        };
        for info in SCORES {
            assert!(s.get(info.name).is_some(), "{}", info.name);
        }
        // What gates accept without labels, and what sweep.csv writes as whole numbers.
        let free: Vec<&str> = SCORES
            .iter()
            .filter(|s| !s.needs_labels)
            .map(|s| s.name)
            .collect();
        assert_eq!(
            free,
            [
                "sessions",
                "labeled_loops",
                "labeled_clean",
                "tokens_after_detection",
                "detections",
                "judge_checks_due",
                "judge_checks_no_verdict",
                "stops",
                "warnings",
                "unheeded",
                "turns_after_detection",
            ]
        );
        let decimal: Vec<&str> = SCORES.iter().filter(|s| !s.whole).map(|s| s.name).collect();
        assert_eq!(
            decimal,
            [
                "precision",
                "recall",
                "f1",
                "fp_per_1k_turns",
                "ttd_median",
                "ttd_p90",
                "recall_lo",
                "recall_hi",
                "precision_lo",
                "precision_hi",
                "fp_rate",
                "fp_rate_lo",
                "fp_rate_hi",
            ]
        );
    }

    #[test]
    fn percentiles() {
        assert_eq!(median(&[1, 2, 3, 4]), Some(2.5));
        assert_eq!(median(&[5]), Some(5.0));
        assert_eq!(nearest_rank(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9), Some(9));
        assert_eq!(nearest_rank(&[3], 0.9), Some(3));
        assert_eq!(median(&[]), None);
    }

    fn sc(fp: usize, missed: usize, recall: f64, ttd: Option<f64>) -> Scores {
        Scores {
            false_positives: fp,
            missed_loops: missed,
            recall,
            ttd_median: ttd,
            ..Default::default()
        }
    }

    #[test]
    fn pareto_front() {
        let s = vec![
            sc(0, 3, 0.25, Some(2.0)), // stock
            sc(0, 1, 0.75, Some(4.0)),
            sc(2, 0, 1.0, Some(1.0)),
            sc(1, 3, 0.25, Some(3.0)), // dominated by 0
        ];
        assert_eq!(pareto(&s), vec![0, 1, 2]);
    }

    #[test]
    fn objective_parse() {
        assert_eq!(
            Objective::parse("max-fp=2").unwrap(),
            Objective::MaxFalsePositives(2)
        );
        assert!(Objective::parse("x").is_err());
        let r = Objective::parse("fp-rate=0.05").unwrap();
        assert_eq!(r, Objective::FpRate(0.05));
        assert_eq!(r.to_string(), "fp-rate=0.05");
        assert_eq!(Objective::parse(&r.to_string()).unwrap(), r);
        assert!(Objective::parse("fp-rate=1.5").is_err());
        assert!(Objective::parse("fp-rate=-0.1").is_err());
        assert!(Objective::parse("fp-rate=x").unwrap_err().rate.is_some());
    }
}
