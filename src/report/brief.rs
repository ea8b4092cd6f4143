//! `--json` of `sweep`, `merge` and `diff`: one object on stdout for scripts,
//! with what the text summary says (the baseline, the recommendation, the
//! configuration the gates check, the gates and their verdicts, what changed
//! since an earlier run) and nothing that needs the files.

use super::diff_out::Shape;
use super::summary::num;
use crate::score::diff::{ConfigDiff, Diff, DIFF_SCORES};
use crate::score::gates::GateResult;
use crate::score::metrics::{Scores, SCORE_NAMES};
use crate::score::SweepResult;
use serde_json::{json, Map, Value};

/// Every score of a configuration by name.
fn scores(s: &Scores) -> Value {
    let mut m = Map::new();
    for name in SCORE_NAMES {
        m.insert((*name).to_string(), num(s.get(name)));
    }
    Value::Object(m)
}

/// `{"config", "label", "scores"}` of configuration `i`.
fn config(r: &SweepResult, i: usize) -> Value {
    let c = r.config(i);
    json!({"config": c.id, "label": c.label, "scores": scores(&r.scores[i])})
}

/// The gates as checked: `{"gate", "value", "passed"}`.
pub fn gates(results: &[GateResult]) -> Value {
    results
        .iter()
        .map(|g| json!({"gate": g.gate, "value": num(g.actual), "passed": g.passed}))
        .collect()
}

/// A sweep's (or merge's) result: baseline, recommendation, gated
/// configuration, gates, the files written and the exit code.
pub fn sweep(
    r: &SweepResult,
    gate_results: &[GateResult],
    written: &[std::path::PathBuf],
    exit_code: i32,
) -> Value {
    let mut recommendation = super::summary::recommendation(r);
    if let (Some(i), Value::Object(m)) = (r.recommended, &mut recommendation) {
        m.insert("scores".into(), scores(&r.scores[i]));
    }
    json!({
        "grid": r.record.grid.name,
        "configurations": r.record.grid.configs.len(),
        "sessions": r.record.sessions.len(),
        "baseline": config(r, r.baseline),
        "recommendation": recommendation,
        "recommendation_reason": r.advice.reason,
        "gated": config(r, r.chosen),
        "gates": gates(gate_results),
        "written": written.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "exit_code": exit_code,
    })
}

/// One configuration's changes: counts by diff score.
fn changed(c: &ConfigDiff) -> Value {
    let mut m = Map::new();
    m.insert("config".into(), json!(c.config));
    m.insert("label".into(), json!(c.label));
    for name in DIFF_SCORES {
        m.insert((*name).to_string(), num(c.count(name)));
    }
    m.insert(
        "in".into(),
        json!(match (&c.base, &c.new) {
            (Some(_), Some(_)) => "both",
            (Some(_), None) => "base",
            _ => "new",
        }),
    );
    Value::Object(m)
}

/// A comparison of two runs, in the shape of its text summary: session and
/// configuration counts, the grids' warning, the changed configurations
/// listed (the gated one first), the gated configuration's changed sessions
/// and the diff gates.
pub fn diff(d: &Diff, shape: &Shape, gate_results: &[GateResult]) -> Value {
    let (common, only_base, only_new) = d.config_counts();
    let (shown, total) = super::diff_out::listed(d, shape);
    let gated = d.configs.get(d.chosen);
    json!({
        "sessions_added": d.sessions_added,
        "sessions_removed": d.sessions_removed,
        "sessions_relabelled": d.sessions_relabelled,
        "changed_through_sessions_only": super::diff_out::changed_by_data(d),
        "configurations": {"in_common": common, "only_base": only_base, "only_new": only_new},
        "warning": super::diff_out::grid_warning(d),
        "changed_configurations": total,
        "listed": shown.iter().map(|&i| changed(&d.configs[i])).collect::<Vec<_>>(),
        "gated": gated.map(|c| c.config.clone()),
        "gated_changes": gated.map(|c| c.changes.clone()).unwrap_or_default(),
        "gates": gates(gate_results),
    })
}
