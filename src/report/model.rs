//! The HTML report's view of a sweep folder: `summary.json` and `sweep.csv`
//! read back into typed structures. The report is regenerated from these files
//! alone (`looptune report DIR`), so nothing here touches the inputs or the
//! detectors. Reading is tolerant of missing optional fields (older or
//! hand-trimmed summaries) but not of malformed files.

use crate::error::{Error, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Everything the report is drawn from.
#[derive(Debug, Clone, Default)]
pub struct ReportData {
    /// `summary.json`.
    pub summary: Summary,
    /// `sweep.csv`, one row per configuration, in file order.
    pub rows: Vec<Row>,
}

/// One row of `sweep.csv`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    /// Configuration id.
    pub config: String,
    /// Readable label (as written in the CSV, possibly spreadsheet-neutralised).
    pub label: String,
    /// Detector family.
    pub family: String,
    /// Profile the configuration starts from.
    pub profile: String,
    /// Parameter columns that have a value for this configuration.
    pub params: BTreeMap<String, String>,
    /// Numeric score columns that have a value (empty cells are left out).
    pub scores: BTreeMap<String, f64>,
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

/// `summary.json` (the fields the report uses).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Summary {
    /// Version of looptune that wrote the file.
    pub looptune_version: String,
    /// The grid.
    pub grid: GridInfo,
    /// The inputs.
    pub inputs: Inputs,
    /// Sessions, turns and records replayed.
    pub totals: Totals,
    /// The labels.
    pub labels: LabelsInfo,
    /// Every session.
    pub sessions: Vec<SessionInfo>,
    /// The recommendation rule, in words.
    pub objective: String,
    /// Per-configuration score extras (the whole turns-to-detection distribution).
    pub scores: Vec<ScoreEntry>,
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
    /// Every false positive and missed loop of the baseline and the recommendation, explained.
    pub explanations: Vec<Explanation>,
    /// Sessions where the selected configurations disagree most.
    pub disagreements: Vec<Disagreement>,
    /// What replay cannot know.
    pub note: String,
    /// Wall time of the sweep.
    pub wall_time_ms: u64,
}

/// The grid part of `summary.json`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct GridInfo {
    /// Grid name.
    pub name: String,
    /// Base profile.
    pub base_profile: String,
    /// Axis names in declaration order.
    pub axes: Vec<String>,
    /// The grid's TOML text.
    pub source: String,
    /// Every configuration.
    pub configs: Vec<ConfigInfo>,
}

/// One configuration as `summary.json` describes it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ConfigInfo {
    /// Id.
    pub id: String,
    /// Label.
    pub label: String,
    /// Family.
    pub family: String,
    /// Profile.
    pub profile: String,
    /// Unchanged stock profile.
    pub stock: bool,
    /// Every resolved parameter, as text.
    pub params: BTreeMap<String, serde_json::Value>,
    /// Parameters that differ from the profile, as text.
    pub overrides: BTreeMap<String, serde_json::Value>,
}

/// The inputs part of `summary.json`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Inputs {
    /// Files read.
    pub files: Vec<FileInfo>,
    /// Skipped lines, as messages.
    pub skipped: Vec<String>,
}

/// Totals of a result.
#[derive(Debug, Clone, Default, Deserialize)]
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

/// One input file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct FileInfo {
    /// Path as given.
    pub path: String,
    /// Detected format.
    pub format: String,
    /// SHA-256 of the bytes.
    pub sha256: String,
    /// Size.
    pub bytes: u64,
    /// Lines skipped (lenient mode).
    pub skipped_lines: u64,
    /// Records of unknown type.
    pub unknown_records: u64,
}

/// The labels part of `summary.json`.
#[derive(Debug, Clone, Default, Deserialize)]
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

/// One session.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SessionInfo {
    /// Session id.
    pub id: String,
    /// Turns.
    pub turns: u64,
    /// Records.
    pub events: u64,
    /// `loop`, `clean` or none.
    pub label: Option<String>,
    /// Labeled onset turn.
    pub onset_turn: Option<u64>,
}

/// Per-configuration extras of `summary.json` `scores`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ScoreEntry {
    /// Configuration id.
    pub config: String,
    /// Turns-to-detection of every detected labeled loop.
    pub ttd: Vec<i64>,
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
#[derive(Debug, Clone, Default, Deserialize)]
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
#[derive(Debug, Clone, Default, Deserialize)]
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
#[derive(Debug, Clone, Default, Deserialize)]
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
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
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
#[derive(Debug, Clone, Default, Deserialize)]
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

/// Records around one detection.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Excerpt {
    /// The record that fired.
    pub event: u64,
    /// The records around it.
    pub lines: Vec<ExcerptLine>,
}

/// One record of an excerpt.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ExcerptLine {
    /// Record number.
    pub event: u64,
    /// Turn.
    pub turn: u64,
    /// Record type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Shortened text (untrusted: escaped on output).
    pub text: String,
    /// The record where the detection fired.
    pub hit: bool,
    /// Where the record is in the user's files.
    pub place: Option<crate::result::PlaceRecord>,
}

impl ReportData {
    /// The report's view of a result, in memory.
    pub fn from_result(r: &crate::sweep::SweepResult) -> ReportData {
        let value = crate::report::summary::report_view(r);
        let mut summary: Summary =
            serde_json::from_value(value).expect("summary.json matches the report's view");
        summary.scores = r
            .scores
            .iter()
            .enumerate()
            .map(|(i, s)| ScoreEntry {
                config: r.config(i).id.clone(),
                ttd: s.ttd.clone(),
                labeled_loops: Some(s.labeled_loops as f64),
                detection_kinds: s
                    .kinds
                    .iter()
                    .map(|(k, n)| (k.clone(), *n as u64))
                    .collect(),
            })
            .collect();
        let mut rows: Vec<Row> = r
            .record
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
        ReportData { summary, rows }
    }

    /// Load a sweep's result (`DIR/summary.json`) and derive the report's view.
    pub fn load(dir: &Path) -> Result<ReportData> {
        let sp = dir.join("summary.json");
        if !sp.is_file() {
            return Err(Error::Usage(format!(
                "{}: no summary.json here; run `looptune sweep` first",
                dir.display()
            )));
        }
        let record = crate::result::SweepRecord::load(&sp)?;
        Ok(ReportData::from_result(&crate::sweep::analyze(record)?))
    }

    /// The `sweep.csv` row of a configuration.
    pub fn row(&self, id: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.config == id)
    }

    /// The `summary.json` description of a configuration.
    pub fn config(&self, id: &str) -> Option<&ConfigInfo> {
        self.summary.grid.configs.iter().find(|c| c.id == id)
    }

    /// Parameter names a configuration overrides (from `summary.json`).
    pub fn override_keys(&self, id: &str) -> Vec<&str> {
        self.config(id)
            .map(|c| c.overrides.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// The unchanged stock row of a profile.
    pub fn stock_row(&self, profile: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.stock && r.profile == profile)
    }

    /// Display label: the label from `summary.json` (never spreadsheet-neutralised), else the CSV's.
    pub fn label<'a>(&'a self, row: &'a Row) -> &'a str {
        self.config(&row.config)
            .map(|c| c.label.as_str())
            .unwrap_or(&row.label)
    }
}

/// Every defined score of a configuration, by `sweep.csv` column name.
fn score_map(s: &crate::metrics::Scores) -> BTreeMap<String, f64> {
    crate::metrics::SCORE_NAMES
        .iter()
        .filter_map(|n| Some((n.to_string(), s.get(n)?)))
        .collect()
}

/// Parse `sweep.csv`: parameter columns are those between `profile` and the
/// first score column (`sessions`); flags are the last three. Test support:
/// the report itself is built from the result in memory or from summary.json.
#[cfg(test)]
pub fn parse_sweep_csv(text: &str) -> std::result::Result<Vec<Row>, String> {
    let mut rd = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = rd
        .headers()
        .map_err(|e| format!("not a sweep.csv: {e}"))?
        .iter()
        .map(str::to_string)
        .collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| format!("not a sweep.csv: no `{name}` column"))
    };
    let (c_config, c_label, c_family, c_profile) = (
        col("config")?,
        col("label")?,
        col("family")?,
        col("profile")?,
    );
    let c_sessions = col("sessions")?;
    let flags = [col("stock")?, col("pareto")?, col("recommended")?];
    let kinds = col("detection_kinds")?;
    let mut rows = Vec::new();
    for (n, rec) in rd.records().enumerate() {
        let rec = rec.map_err(|e| format!("row {}: {e}", n + 2))?;
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
                let x: f64 = v.parse().map_err(|_| {
                    format!("row {}: column `{name}`: `{v}` is not a number", n + 2)
                })?;
                row.scores.insert(name.clone(), x);
            }
        }
        rows.push(row);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_columns_split_into_params_and_scores() {
        let csv = "config,label,family,profile,policy,tool_call_threshold,sessions,recall,ttd_median,detection_kinds,stock,pareto,recommended\n\
                   c1,x,gemini,gemini-latest,stop,5,3,0.5,,tool_call:1,true,false,true\n";
        let rows = parse_sweep_csv(csv).unwrap();
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
            matches!(e, Error::Line { line: 1, .. }) && e.to_string().contains("summary.json"),
            "{e}"
        );
    }
}
