//! `summary.json`: the scriptable record of a sweep, and everything the HTML
//! report needs to be regenerated without the inputs (`looptune report DIR`):
//! the grid, the inputs with their digests, labels, scores with the whole
//! turns-to-detection distributions, the recommendation, and timelines and
//! transcript excerpts of the sessions where configurations disagree most.

use super::fixed;
use crate::event::{Corpus, Record, Session};
use crate::metrics::SCORE_NAMES;
use crate::sweep::SweepResult;
use serde_json::{json, Map, Value};

/// How many disagreement sessions get a timeline and excerpts.
const DISAGREEMENTS: usize = 6;
/// Records shown either side of a detection in an excerpt.
const EXCERPT_RADIUS: usize = 3;
/// Characters kept of each excerpt line.
const EXCERPT_CHARS: usize = 240;

fn num(x: Option<f64>) -> Value {
    match x {
        Some(v) if v.fract() == 0.0 && v.abs() < 1e15 => json!(v as i64),
        Some(v) => json!(fixed(v).parse::<f64>().unwrap_or(v)),
        None => Value::Null,
    }
}

/// The configurations charts compare: stock profiles and the recommendation.
pub fn selected(r: &SweepResult) -> Vec<usize> {
    let mut sel: Vec<usize> = (0..r.grid.variants.len())
        .filter(|&i| r.grid.variants[i].stock)
        .collect();
    if let Some(rec) = r.recommended {
        if !sel.contains(&rec) {
            sel.push(rec);
        }
    }
    sel
}

/// Build `summary.json`.
pub fn summary_json(r: &SweepResult, corpus: &Corpus, wall_ms: u128) -> Value {
    let configs: Vec<Value> = r
        .grid
        .variants
        .iter()
        .map(|v| {
            let params: Map<String, Value> = v.config.params.0.iter().map(|(k, x)| (k.clone(), json!(x.to_string()))).collect();
            let overrides: Map<String, Value> = v.overrides.iter().map(|(k, x)| (k.clone(), json!(x.to_string()))).collect();
            json!({"id": v.id, "label": v.label, "family": v.config.family, "profile": v.config.profile,
                   "stock": v.stock, "params": params, "overrides": overrides})
        })
        .collect();
    let scores: Vec<Value> = r
        .scores
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut m = Map::new();
            m.insert("config".into(), json!(r.grid.variants[i].id));
            for name in SCORE_NAMES {
                m.insert((*name).into(), num(s.get(name)));
            }
            m.insert("ttd".into(), json!(s.ttd));
            m.insert("detection_kinds".into(), json!(s.kinds));
            Value::Object(m)
        })
        .collect();
    let files: Vec<Value> = corpus
        .files
        .iter()
        .map(|f| {
            json!({"path": f.path, "format": f.format, "sha256": f.sha256, "bytes": f.bytes,
                        "skipped_lines": f.skipped_lines, "unknown_records": f.unknown_records})
        })
        .collect();
    let (loops, clean) = r.labels.counts();
    let sessions: Vec<Value> = corpus
        .sessions
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let l = r.labels.by_session[i];
            json!({"id": s.id, "turns": s.turns, "events": s.events.len(),
                   "label": l.map(|l| if l.is_loop { "loop" } else { "clean" }),
                   "onset_turn": l.and_then(|l| l.onset_turn)})
        })
        .collect();
    let id = |i: usize| json!({"config": r.grid.variants[i].id, "label": r.grid.variants[i].label});
    json!({
        "looptune_version": env!("CARGO_PKG_VERSION"),
        "grid": {"name": r.grid.name, "base_profile": r.grid.base_profile, "axes": r.grid.axes,
                 "source": r.grid.source, "configs": configs},
        "inputs": {"files": files, "sessions": corpus.sessions.len(), "turns": corpus.turns(), "events": corpus.events(),
                   "whole_message_sessions": corpus.sessions.iter().filter(|s| s.whole_messages).count(),
                   "skipped": corpus.skipped},
        "labels": {"file": r.labels.file.as_ref().map(|f| &f.0), "sha256": r.labels.file.as_ref().map(|f| &f.1),
                   "loops": loops, "clean": clean, "unlabeled": corpus.sessions.len() - loops - clean,
                   "warnings": r.labels.warnings},
        "sessions": sessions,
        "objective": r.objective.describe(),
        "scores": scores,
        "pareto": r.pareto.iter().map(|&i| r.grid.variants[i].id.clone()).collect::<Vec<_>>(),
        "stock": id(r.baseline),
        "baseline": id(r.baseline),
        "chosen": id(r.chosen),
        "recommendation": recommendation(r),
        "recommendation_reason": r.advice.reason,
        "label_warnings": r.advice.warnings,
        "family_best": r.advice.family_best.iter().map(|(f, b)| json!({"family": f, "best": b.map(&id)})).collect::<Vec<_>>(),
        "union": r.advice.union.as_ref().map(|u| json!({
            "config": u.id, "label": u.label,
            "members": u.members.iter().map(|&m| r.grid.variants[m].id.clone()).collect::<Vec<_>>(),
            "ttd_median_ci": r.advice.union_ttd_ci.map(|(a, b)| [a, b]),
            "cross_validation": u.cross_validation.as_ref().map(|cv| cross_validation(r, cv)),
        })),
        "disagreements": disagreements(r, corpus),
        "note": "Replay cannot know how the model would have reacted to a warning or a stop: the recorded continuation counts as the model not changing course.",
        "wall_time_ms": wall_ms as u64,
    })
}

/// The recommendation with what qualifies it (`null` without one).
fn recommendation(r: &SweepResult) -> Value {
    let Some(c) = r.recommended else {
        return Value::Null;
    };
    let v = &r.grid.variants[c];
    let ci = |i: usize| r.advice.ttd_ci.get(&i).map(|(a, b)| json!([a, b]));
    json!({
        "config": v.id, "label": v.label, "family": v.config.family,
        "across_families": r.advice.across_families,
        "rule": r.objective.describe(),
        "baseline": {"config": r.grid.variants[r.baseline].id, "label": r.grid.variants[r.baseline].label,
                     "ttd_median_ci": ci(r.baseline)},
        "ttd_median_ci": ci(c),
        "cross_validation": r.advice.cross_validation.as_ref().map(|cv| cross_validation(r, cv)),
        "cross_validation_reason": r.advice.cv_reason,
    })
}

/// A cross-validation as `summary.json` records it: pooled held-out scores
/// with their intervals, and how many folds chose each configuration.
fn cross_validation(r: &SweepResult, cv: &crate::recommend::CrossValidation) -> Value {
    let p = &cv.pooled;
    let pair = |c: Option<(f64, f64)>| c.map(|(a, b)| json!([num(Some(a)), num(Some(b))]));
    let mut chosen: Map<String, Value> = Map::new();
    for members in &cv.chosen {
        let key = if members.is_empty() {
            "none".to_string()
        } else {
            members
                .iter()
                .map(|&m| r.grid.variants[m].id.as_str())
                .collect::<Vec<_>>()
                .join("|")
        };
        let n = chosen.get(&key).and_then(Value::as_u64).unwrap_or(0);
        chosen.insert(key, json!(n + 1));
    }
    json!({
        "folds": cv.folds, "seed": cv.seed,
        "labeled_loops": p.loops, "labeled_clean": p.clean,
        "true_positives": p.tp,
        "recall": num(Some(p.recall())), "recall_ci": pair(crate::stats::wilson(p.tp, p.loops)),
        "precision": num(Some(p.precision())), "precision_ci": pair(crate::stats::wilson(p.tp, p.tp + p.fp)),
        "false_positives": p.fp, "fp_rate": num(p.fp_rate()), "fp_rate_ci": pair(crate::stats::wilson(p.fp, p.clean)),
        "f1": num(Some(p.f1())),
        "ttd_median": num(p.ttd_median()), "ttd_n": p.ttd.len(),
        "chosen": chosen,
    })
}

/// Sessions where the selected configurations disagree most, with timelines and excerpts.
fn disagreements(r: &SweepResult, corpus: &Corpus) -> Vec<Value> {
    let sel = selected(r);
    let mut ranked: Vec<(usize, usize)> = corpus
        .sessions
        .iter()
        .enumerate()
        .map(|(si, _)| {
            let fired = sel
                .iter()
                .filter(|&&c| r.replay.outcomes[c][si].first().is_some())
                .count();
            (fired.min(sel.len() - fired), si)
        })
        .filter(|(d, _)| *d > 0)
        .collect();
    // Most disagreement first; labeled sessions before unlabeled; then id order.
    ranked.sort_by_key(|(d, si)| {
        (
            std::cmp::Reverse(*d),
            r.labels.by_session[*si].is_none(),
            *si,
        )
    });
    ranked
        .into_iter()
        .take(DISAGREEMENTS)
        .map(|(_, si)| {
            let s = &corpus.sessions[si];
            let label = r.labels.by_session[si];
            let dets: Vec<Value> = sel
                .iter()
                .filter_map(|&c| {
                    r.replay.outcomes[c][si].first().map(|d| {
                        json!({"config": r.grid.variants[c].id, "label": r.grid.variants[c].label,
                               "turn": d.turn, "event": d.event, "kind": d.kind, "detail": d.detail})
                    })
                })
                .collect();
            let mut events: Vec<u32> = sel.iter().filter_map(|&c| r.replay.outcomes[c][si].first().map(|d| d.event)).collect();
            events.sort_unstable();
            events.dedup();
            let excerpts: Vec<Value> = events.iter().map(|&e| json!({"event": e, "lines": excerpt(s, e)})).collect();
            json!({"session": s.id, "turns": s.turns,
                   "label": label.map(|l| if l.is_loop { "loop" } else { "clean" }),
                   "onset_turn": label.and_then(|l| l.onset_turn),
                   "timeline": timeline(s), "detections": dets, "excerpts": excerpts})
        })
        .collect()
}

/// Per turn: tool calls, failed tool results and content chunks.
fn timeline(s: &Session) -> Vec<Value> {
    let mut rows: Vec<[u32; 3]> = vec![[0; 3]; s.turns as usize + 1];
    for e in &s.events {
        let row = &mut rows[e.turn as usize];
        match &e.record {
            Record::ToolCall { .. } => row[0] += 1,
            Record::ToolResult {
                error: Some(true), ..
            } => row[1] += 1,
            Record::Content { .. } => row[2] += 1,
            _ => {}
        }
    }
    rows.iter()
        .enumerate()
        .map(|(t, r)| json!({"turn": t, "tool_calls": r[0], "tool_errors": r[1], "content": r[2]}))
        .collect()
}

/// The records around a detection, as short text lines (escaped by the HTML writer).
fn excerpt(s: &Session, event: u32) -> Vec<Value> {
    let at = event as usize - 1;
    let from = at.saturating_sub(EXCERPT_RADIUS);
    let to = (at + EXCERPT_RADIUS + 1).min(s.events.len());
    (from..to)
        .map(|i| {
            let e = &s.events[i];
            let text = match &e.record {
                Record::User { text, .. } | Record::Content { text } | Record::Thought { text } => text.clone(),
                Record::ToolCall { name, args, .. } => format!("{name} {}", crate::js::stringify_object(args)),
                Record::ToolResult { output, error, .. } => {
                    format!("{}{}", if *error == Some(true) { "[error] " } else { "" }, output.as_deref().unwrap_or(""))
                }
                Record::Judge { confidence, .. } => format!("confidence {confidence}"),
                Record::LoopDetected { kind, detail } => format!("{} {}", kind.as_deref().unwrap_or(""), detail.as_deref().unwrap_or("")),
                _ => String::new(),
            };
            let mut short: String = text.chars().take(EXCERPT_CHARS).collect();
            if text.chars().count() > EXCERPT_CHARS {
                short.push('…');
            }
            json!({"event": i + 1, "turn": e.turn, "type": e.record.type_name(), "text": short, "hit": i == at})
        })
        .collect()
}
