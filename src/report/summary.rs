//! `summary.json`: the scriptable record of a sweep, and everything the HTML
//! report needs to be regenerated without the inputs (`looptune report DIR`):
//! the grid, the inputs with their digests, labels, scores with the whole
//! turns-to-detection distributions, the recommendation, and timelines and
//! transcript excerpts of the sessions where configurations disagree most.

//! `summary.json`: the serialized [`SweepRecord`] (schema-versioned, what
//! `looptune report`, `merge` and `diff` load back), plus everything derived
//! from it for scripts: scores, the Pareto front, the recommendation with its
//! cross-validation, each family's best, the union, and the sessions where
//! the stock profiles disagree most, with timelines and excerpts.

use super::fixed;
use crate::result::SweepRecord;
use crate::score::metrics::SCORE_NAMES;
use crate::score::SweepResult;
use serde_json::{json, Map, Value};

pub(crate) fn num(x: Option<f64>) -> Value {
    match x {
        Some(v) if v.fract() == 0.0 && v.abs() < 1e15 => json!(v as i64),
        Some(v) => json!(fixed(v).parse::<f64>().unwrap_or(v)),
        None => Value::Null,
    }
}

/// `summary.json`, streamed to `out`: the record itself, then everything derived from
/// it. Serialized straight from the record (no JSON tree of its outcomes,
/// which are most of a large sweep).
pub fn write_summary(r: &SweepResult, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    use std::io::Write;
    #[derive(serde::Serialize)]
    struct Whole<'a> {
        #[serde(flatten)]
        record: &'a SweepRecord,
        #[serde(flatten)]
        derived: &'a Derived<'a>,
    }
    let derived = derived(r)?;
    // serde_json writes token by token: a concrete buffer here takes those
    // small writes inline (through `dyn Write` each was a call), and hands
    // `out` whole blocks, which its own buffer passes straight through.
    let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
    serde_json::to_writer(
        &mut out,
        &Whole {
            record: &r.record,
            derived: &Derived {
                map: &derived,
                result: r,
            },
        },
    )
    .map_err(std::io::Error::from)?;
    out.flush()
}

/// `summary.json`.
pub struct SummaryJson;

impl super::output::Output for SummaryJson {
    fn name(&self) -> &str {
        // The core loads the record by this name.
        crate::util::outdir::SUMMARY_JSON
    }
    fn cost(&self) -> u32 {
        50
    }
    fn render(&self, r: &SweepResult, w: &mut (dyn std::io::Write + Send)) -> std::io::Result<()> {
        write_summary(r, w)
    }
}

/// The derived map, its `scores` written from the typed scores.
struct Derived<'a> {
    map: &'a Map<String, Value>,
    result: &'a SweepResult,
}

impl serde::Serialize for Derived<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = ser.serialize_map(Some(self.map.len()))?;
        for (k, v) in self.map {
            if k == "scores" {
                m.serialize_entry(k, &Scores(self.result))?;
            } else if k == "explanations" {
                m.serialize_entry(k, &Explanations(self.result))?;
            } else {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

/// `explanations`: each made, written and dropped in turn (as a JSON tree
/// they were a large corpus's biggest allocation).
struct Explanations<'a>(&'a SweepResult);

impl serde::Serialize for Explanations<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = ser.serialize_seq(None)?;
        super::model::each_explanation(self.0, |e| seq.serialize_element(&e))
            .map_err(serde::ser::Error::custom)??;
        seq.end()
    }
}

/// `scores`: per configuration its id, every score, its turns-to-detection
/// list and its detections by kind.
struct Scores<'a>(&'a SweepResult);

impl serde::Serialize for Scores<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        struct One<'a>(&'a str, &'a crate::score::metrics::Scores);
        impl serde::Serialize for One<'_> {
            fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
                let mut m = ser.serialize_map(None)?;
                m.serialize_entry("config", self.0)?;
                for name in SCORE_NAMES {
                    m.serialize_entry(*name, &num(self.1.get(name)))?;
                }
                m.serialize_entry("ttd", &self.1.ttd)?;
                m.serialize_entry("detection_kinds", &self.1.kinds)?;
                m.end()
            }
        }
        let r = self.0;
        let mut seq = ser.serialize_seq(Some(r.scores.len()))?;
        for (i, s) in r.scores.iter().enumerate() {
            seq.serialize_element(&One(&r.config(i).id, s))?;
        }
        seq.end()
    }
}

/// Everything `summary.json` derives from the record.
fn derived(r: &SweepResult) -> std::io::Result<Map<String, Value>> {
    let rec: &SweepRecord = &r.record;
    // A placeholder that keeps the key's place: the scores (every
    // configuration's turns-to-detection list) are written from the typed
    // scores, never held as a JSON tree.
    let scores = Value::Null;
    let id = |i: usize| json!({"config": r.config(i).id, "label": r.config(i).label});
    let derived = json!({
        "totals": super::model::totals(rec),
        "labels": labels_once(rec),
        "objective": r.objective.describe(),
        "scores": scores,
        "pareto": r.pareto.iter().map(|&i| r.config(i).id.clone()).collect::<Vec<_>>(),
        "stock": id(r.baseline),
        "baseline": id(r.baseline),
        "chosen": id(r.chosen),
        "recommendation": recommendation(r),
        "recommendation_reason": r.advice.reason,
        "label_warnings": r.advice.warnings,
        "family_best": r.advice.family_best.iter().map(|(f, b)| json!({"family": f, "best": b.map(id)})).collect::<Vec<_>>(),
        "union": r.advice.union.as_ref().map(|u| json!({
            "config": u.id, "label": u.label,
            "members": u.members.iter().map(|&m| r.config(m).id.clone()).collect::<Vec<_>>(),
            "ttd_median_ci": r.advice.union_ttd_ci.map(|(a, b)| [a, b]),
            "cross_validation": u.cross_validation.as_ref().map(|cv| cross_validation(r, cv)),
            "group_validation": u.group_validation.as_ref().map(|gv| group_validation(r, gv)),
        })),
        "ship": ship(r)?,
        "guard": r.advice.guard.name(),
        "guard_note": r.advice.guard_note,
        "groups": groups(r)?,
        "test": r.advice.test.as_ref().map(|t| test(r, t)),
        "disagreements": super::model::disagreements(r)?,
        // Written as they are made (see `Derived`).
        "explanations": Value::Null,
        "note": super::model::NOTE,
    });
    match derived {
        Value::Object(m) => Ok(m),
        _ => unreachable!("json! of an object"),
    }
}

/// The summary's "Ship:" block as data (see `score::ship`).
fn ship(r: &SweepResult) -> std::io::Result<Value> {
    let s = crate::score::ship::ship(r)?;
    let id = |i: usize| json!({"config": r.config(i).id, "label": r.config(i).label});
    let on = |p: &crate::score::ship::OnGroup| json!({"caught": p.tp, "false_positives": p.fp});
    let pick = |p: &crate::score::ship::Pick| {
        json!({
            "config": id(p.config),
            "in_group": on(&p.in_group),
            "out_of_group": p.out_of_group.as_ref().map(|(c, f)| json!({"chosen": id(*c), "scores": on(f)})),
            "distinguishable_from_baseline": p.distinguishable,
        })
    };
    Ok(json!({
        "by": s.by,
        "overall": s.overall.map(id),
        "groups": s.groups.iter().map(|g| json!({
            "group": g.name,
            "loops": g.loops,
            "clean": g.clean,
            "baseline": on(&g.baseline),
            "own_family": g.own_family,
            "own": g.own.as_ref().map(pick),
            "overall": g.overall.as_ref().map(pick),
        })).collect::<Vec<_>>(),
    }))
}

/// The labels' counts; their warnings are kept once, in the record's
/// `labels_file` (an empty list here).
fn labels_once(rec: &SweepRecord) -> super::model::LabelsInfo {
    super::model::LabelsInfo {
        warnings: Vec::new(),
        ..super::model::labels(rec)
    }
}

/// The recommendation with what qualifies it (`null` without one).
pub(crate) fn recommendation(r: &SweepResult) -> Value {
    let Some(c) = r.recommended else {
        return Value::Null;
    };
    let v = r.config(c);
    let ci = |i: usize| r.advice.ttd_ci.get(&i).map(|(a, b)| json!([a, b]));
    json!({
        "config": v.id, "label": v.label, "family": v.family,
        "across_families": r.advice.across_families,
        "rule": r.objective.describe(),
        "baseline": {"config": r.config(r.baseline).id, "label": r.config(r.baseline).label,
                     "ttd_median_ci": ci(r.baseline)},
        "ttd_median_ci": ci(c),
        "cross_validation": r.advice.cross_validation.as_ref().map(|cv| cross_validation(r, cv)),
        "cross_validation_reason": r.advice.cv_reason,
        "group_validation": r.advice.group_validation.as_ref().map(|gv| group_validation(r, gv)),
        "group_validation_reason": r.advice.group_validation_reason,
    })
}

/// A tally's recall, precision, false positives and F1 with intervals.
fn tally_scores(p: &crate::score::recommend::Tally) -> Map<String, Value> {
    let (lo, hi) = crate::score::stats::wilson(p.tp, p.loops)
        .map_or((None, None), |(a, b)| (Some(a), Some(b)));
    let pair = |c: Option<(f64, f64)>| c.map(|(a, b)| json!([num(Some(a)), num(Some(b))]));
    let v = json!({
        "loops": p.loops, "clean": p.clean, "true_positives": p.tp,
        "recall": num(Some(p.recall())), "recall_lo": num(lo), "recall_hi": num(hi),
        "precision": num(Some(p.precision())), "precision_ci": pair(crate::score::stats::wilson(p.tp, p.tp + p.fp)),
        "false_positives": p.fp, "fp_rate": num(p.fp_rate()), "fp_rate_ci": pair(crate::score::stats::wilson(p.fp, p.clean)),
        "f1": num(Some(p.f1())),
    });
    match v {
        Value::Object(m) => m,
        _ => unreachable!("json! of an object"),
    }
}

/// Leave-one-group-out: pooled held-out scores, and per group what was
/// chosen without it and what that caught there.
fn group_validation(r: &SweepResult, gv: &crate::score::recommend::GroupValidation) -> Value {
    let mut m = tally_scores(&gv.pooled);
    m.insert("by".into(), json!(gv.by));
    let groups: Map<String, Value> = gv
        .groups
        .iter()
        .map(|f| {
            (
                f.name.clone(),
                json!({
                    "loops": f.tally.loops, "clean": f.tally.clean,
                    "true_positives": f.tally.tp, "false_positives": f.tally.fp,
                    "chosen": super::model::fold_choice(r, &f.chosen),
                }),
            )
        })
        .collect();
    m.insert("groups".into(), Value::Object(groups));
    Value::Object(m)
}

/// The groups: the key, each group's sessions, the summary's rows counted
/// per group, and the rows whose gain comes mostly from one group.
fn groups(r: &SweepResult) -> std::io::Result<Value> {
    let g = &r.groups;
    let mut sessions = vec![0u64; g.names.len()];
    for &x in &g.of {
        sessions[x as usize] += 1;
    }
    let rows: Vec<Value> = r
        .shown()?
        .iter()
        .map(|(role, c, hits)| {
            let per: Map<String, Value> = r
                .group_scores(hits)
                .iter()
                .zip(&g.names)
                .map(|(s, name)| {
                    (
                        name.clone(),
                        json!({"loops": s.labeled_loops, "clean": s.labeled_clean,
                               "true_positives": s.true_positives, "false_positives": s.false_positives}),
                    )
                })
                .collect();
            let id = match c {
                Some(i) => r.config(*i).id.clone(),
                None => r.advice.union.as_ref().map_or(String::new(), |u| u.id.clone()),
            };
            json!({"role": role, "config": id, "groups": per})
        })
        .collect();
    Ok(json!({
        "by": g.by,
        "names": g.names,
        "sessions": sessions,
        "rows": rows,
        "concentrated": r.advice.concentrated.iter().map(|c| json!({
            "config": match c.config {
                Some(i) => r.config(i).id.clone(),
                None => r.advice.union.as_ref().map_or(String::new(), |u| u.id.clone()),
            },
            "group": c.group, "from_group": c.from_group, "total": c.total,
        })).collect::<Vec<_>>(),
    }))
}

/// The test sessions and what was chosen, scored on them.
fn test(r: &SweepResult, t: &crate::score::TestScores) -> Value {
    json!({
        "sessions": t.sessions, "loops": t.loops, "clean": t.clean,
        "rows": t.rows.iter().map(|(role, c, p)| {
            let mut m = tally_scores(p);
            m.insert("role".into(), json!(role));
            m.insert("config".into(), json!(match c {
                Some(i) => r.config(*i).id.clone(),
                None => r.advice.union.as_ref().map_or(String::new(), |u| u.id.clone()),
            }));
            Value::Object(m)
        }).collect::<Vec<_>>(),
    })
}

/// A cross-validation as `summary.json` records it: pooled held-out scores
/// with their intervals, and how many folds chose each configuration.
fn cross_validation(r: &SweepResult, cv: &crate::score::recommend::CrossValidation) -> Value {
    let p = &cv.pooled;
    let pair = |c: Option<(f64, f64)>| c.map(|(a, b)| json!([num(Some(a)), num(Some(b))]));
    let mut chosen: Map<String, Value> = Map::new();
    for members in &cv.chosen {
        let key = super::model::fold_choice(r, members);
        let n = chosen.get(&key).and_then(Value::as_u64).unwrap_or(0);
        chosen.insert(key, json!(n + 1));
    }
    json!({
        "folds": cv.folds, "seed": cv.seed,
        "labeled_loops": p.loops, "labeled_clean": p.clean,
        "true_positives": p.tp,
        "recall": num(Some(p.recall())), "recall_ci": pair(crate::score::stats::wilson(p.tp, p.loops)),
        "precision": num(Some(p.precision())), "precision_ci": pair(crate::score::stats::wilson(p.tp, p.tp + p.fp)),
        "false_positives": p.fp, "fp_rate": num(p.fp_rate()), "fp_rate_ci": pair(crate::score::stats::wilson(p.fp, p.clean)),
        "f1": num(Some(p.f1())),
        "ttd_median": num(p.ttd_median()), "ttd_n": p.ttd.len(),
        "chosen": chosen,
    })
}

/// A saved result as every command that reads one takes it (`report`,
/// `diff`, `merge`'s parts, `sweep --baseline DIR`): loaded, analysed, and
/// refused if its scores are not what its record gives ([`check_scores`]).
pub fn load_checked(path: &std::path::Path) -> crate::error::Result<SweepResult> {
    let result = crate::score::analyze(SweepRecord::load(path)?)?;
    check_scores(path, &result)?;
    Ok(result)
}

/// Refuse a `summary.json` whose scores are not what its record gives: the
/// record (outcomes, labels) is what every reader uses and the scores are
/// derived from it, so a detection turn, a label or a score edited by hand
/// shows as a difference between the two (`report` and `diff` would
/// otherwise re-render or compare the edit as if a sweep had made it).
/// Checked for files this version wrote; another version's scores may
/// differ by design (a newer one is refused when the record is loaded).
/// Read as a stream, the scores alone kept.
pub fn check_scores(path: &std::path::Path, r: &SweepResult) -> crate::error::Result<()> {
    let file = if path.is_dir() {
        path.join(crate::util::outdir::SUMMARY_JSON)
    } else {
        path.to_path_buf()
    };
    #[derive(serde::Deserialize)]
    struct Stored {
        looptune_version: Option<String>,
        scores: Option<Vec<Value>>,
    }
    let refuse = |message: String| crate::error::Error::File {
        path: file.display().to_string(),
        message,
    };
    let reader = std::fs::File::open(&file)
        .map(|f| std::io::BufReader::with_capacity(1 << 16, f))
        .map_err(|e| crate::error::Error::io(&file, e))?;
    let stored: Stored = serde_json::from_reader(reader)
        .map_err(|e| refuse(format!("not a looptune result ({e})")))?;
    if stored.looptune_version.as_deref() != Some(env!("CARGO_PKG_VERSION")) {
        return Ok(());
    }
    let Some(stored) = stored.scores else {
        return Err(refuse(
            "scores are missing: the file was edited; rerun the sweep".into(),
        ));
    };
    // Through the writer's text, so numbers compare as the file holds them.
    let text = serde_json::to_string(&Scores(r)).map_err(|e| refuse(e.to_string()))?;
    let made: Vec<Value> = serde_json::from_str(&text).map_err(|e| refuse(e.to_string()))?;
    let id = |v: &Value| v.get("config").and_then(Value::as_str).map(str::to_string);
    let by_id: std::collections::HashMap<String, &Value> =
        stored.iter().filter_map(|v| Some((id(v)?, v))).collect();
    if stored.len() != made.len() || by_id.len() != made.len() {
        return Err(refuse(format!(
            "{} scores for {} configurations: the file was edited; rerun the sweep",
            stored.len(),
            made.len()
        )));
    }
    for m in &made {
        let c = id(m).unwrap_or_default();
        let Some(s) = by_id.get(&c) else {
            return Err(refuse(format!(
                "configuration {c} has no scores: the file was edited; rerun the sweep"
            )));
        };
        if *s == m {
            continue;
        }
        let field = m
            .as_object()
            .and_then(|o| o.iter().find(|(k, v)| s.get(k.as_str()) != Some(v)))
            .map(|(k, v)| {
                let was = s.get(k.as_str()).cloned().unwrap_or(Value::Null);
                format!("{k} is {was}, the outcomes and labels give {v}")
            })
            .unwrap_or_else(|| "an unknown score was added".into());
        return Err(refuse(format!(
            "scores of configuration {c} do not match the record ({field}): the file was edited; rerun the sweep"
        )));
    }
    Ok(())
}
