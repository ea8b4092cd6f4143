//! Terminal and JSON-lines output of `replay` and `detectors`.

use crate::replay::SessionOutcomes;
use serde_json::{json, Map, Value};
use std::io::{self, Write};

/// A configuration as replay output names it (`cli` builds it from the
/// detector configuration: writers never see detectors).
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigName {
    /// Detector family.
    pub family: String,
    /// Profile.
    pub profile: String,
    /// Its policy as written (`stop`, `warn:3`, ...).
    pub policy: String,
}

/// A detector family as `looptune detectors` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct FamilyListing {
    /// Family name.
    pub name: String,
    /// One line about it.
    pub about: String,
    /// Its profiles, the default first.
    pub profiles: Vec<ProfileListing>,
    /// Its parameters.
    pub params: Vec<ParamListing>,
}

/// A profile of a [`FamilyListing`].
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileListing {
    /// Profile name.
    pub name: String,
    /// One line about it.
    pub about: String,
    /// Parameter values it sets, as written in a grid.
    pub values: Vec<(String, String)>,
}

/// A parameter of a [`FamilyListing`].
#[derive(Debug, Clone, PartialEq)]
pub struct ParamListing {
    /// Parameter name.
    pub name: String,
    /// The values it takes (`integer 1..=10`, `stop|warn:N|ask|ignore`, ...).
    pub kind: String,
    /// Its unit (may be empty).
    pub unit: String,
    /// One line about it.
    pub doc: String,
    /// Where the original sets it.
    pub source: String,
}

/// One JSON object per session, sorted by session id:
/// `{"session","turns","events","detections":[{"detector","kind","turn","event","file","line"|"pointer","strike","detail",...}]}`:
/// `file` and `line` (or `pointer`, a JSON pointer inside a whole-document
/// log) name where the record the detection is at came from.
pub fn replay_json(
    sessions: &[SessionOutcomes],
    configs: &[ConfigName],
    all: bool,
    workers: &crate::util::pool::Workers,
    out: &mut dyn Write,
) -> io::Result<()> {
    // Lines are built a block of sessions at a time on the workers and written
    // in order: the output was the one part of a replay on one thread.
    use rayon::prelude::*;
    for block in sessions.chunks(JSON_BLOCK) {
        let lines: Vec<Vec<u8>> = workers.install(|| {
            block
                .par_iter()
                .map(|s| replay_json_line(s, configs, all))
                .collect::<serde_json::Result<_>>()
        })?;
        for line in lines {
            out.write_all(&line)?;
        }
    }
    Ok(())
}

/// Sessions whose lines are built at once.
const JSON_BLOCK: usize = 1024;

/// One session's line of [`replay_json`], newline included.
fn replay_json_line(
    s: &SessionOutcomes,
    configs: &[ConfigName],
    all: bool,
) -> serde_json::Result<Vec<u8>> {
    let mut dets = Vec::new();
    let mut stops = Vec::new();
    for (cfg, o) in configs.iter().zip(&s.outcomes) {
        for d in shown(o, all) {
            let mut m = Map::new();
            m.insert("detector".into(), json!(cfg.family));
            m.insert("kind".into(), json!(d.kind));
            m.insert("turn".into(), json!(d.turn));
            m.insert("event".into(), json!(d.event));
            if let Some(p) = s.place(d.event) {
                m.insert("file".into(), json!(p.file));
                if let Some(l) = p.line {
                    m.insert("line".into(), json!(l));
                }
                if let Some(ptr) = p.pointer {
                    m.insert("pointer".into(), json!(ptr));
                }
            }
            m.insert("strike".into(), json!(d.strike));
            m.insert("detail".into(), json!(d.detail));
            m.insert("profile".into(), json!(cfg.profile));
            dets.push(Value::Object(m));
        }
        if let Some(stop) = o.stop {
            stops.push(json!({
                "detector": cfg.family,
                "profile": cfg.profile,
                "policy": cfg.policy,
                "turn": stop.turn,
                "event": stop.event,
                "turns_after": o.turns_after_stop,
                "tokens_after": o.tokens_after_stop,
            }));
        }
    }
    let mut line = Map::new();
    line.insert("session".into(), json!(s.id));
    line.insert("turns".into(), json!(s.turns));
    line.insert("events".into(), json!(s.events));
    line.insert("detections".into(), Value::Array(dets));
    line.insert("stops".into(), Value::Array(stops));
    if !s.live.is_empty() {
        // What the agent's own detector did, beside the port's: each live
        // detection with the profiles that detect at the same turn.
        let live: Vec<Value> = s
            .live
            .iter()
            .map(|l| {
                let mut m = Map::new();
                m.insert("kind".into(), json!(l.kind));
                m.insert("turn".into(), json!(l.turn));
                m.insert("event".into(), json!(l.event));
                if let Some(p) = s.place(l.event) {
                    m.insert("file".into(), json!(p.file));
                    if let Some(n) = p.line {
                        m.insert("line".into(), json!(n));
                    }
                    if let Some(ptr) = p.pointer {
                        m.insert("pointer".into(), json!(ptr));
                    }
                }
                m.insert(
                    "same_turn".into(),
                    json!(same_turn(s, configs, all, l.turn)),
                );
                Value::Object(m)
            })
            .collect();
        line.insert("live".into(), Value::Array(live));
    }
    if s.whole_messages {
        // Chunk boundaries matter to Gemini CLI's content check; say when they were not recorded.
        line.insert("content_check_on_whole_messages".into(), json!(true));
    }
    let mut text = serde_json::to_vec(&Value::Object(line))?;
    text.push(b'\n');
    Ok(text)
}

/// The profiles with a shown detection at turn `turn` of a session.
fn same_turn<'a>(
    s: &SessionOutcomes,
    configs: &'a [ConfigName],
    all: bool,
    turn: u32,
) -> Vec<&'a str> {
    configs
        .iter()
        .zip(&s.outcomes)
        .filter(|(_, o)| shown(o, all).iter().any(|d| d.turn == turn))
        .map(|(c, _)| c.profile.as_str())
        .collect()
}

/// Where the live agent's own detector fired (`loop_detected` records)
/// beside where the port fires, one row per live detection, then how many
/// each configuration reproduces at the same turn. Nothing when no session
/// kept a live detection.
pub fn live_table(
    sessions: &[SessionOutcomes],
    configs: &[ConfigName],
    all: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let n: usize = sessions.iter().map(|s| s.live.len()).sum();
    if n == 0 {
        return Ok(());
    }
    let multi = configs.len() > 1;
    let mut rows: Vec<[String; 5]> = Vec::new();
    let mut reproduced = vec![0usize; configs.len()];
    for s in sessions {
        for l in &s.live {
            let mut port: Vec<String> = Vec::new();
            for (ci, (cfg, o)) in configs.iter().zip(&s.outcomes).enumerate() {
                let ds = shown(o, all);
                let same = ds.iter().find(|d| d.turn == l.turn);
                if same.is_some() {
                    reproduced[ci] += 1;
                }
                let cell = match same.or(ds.first()) {
                    Some(d) if d.turn == l.turn => {
                        format!("{} turn {} (same turn)", d.kind, d.turn)
                    }
                    Some(d) => format!("{} turn {}", d.kind, d.turn),
                    None => "none".to_string(),
                };
                port.push(if multi {
                    format!("{}: {cell}", cfg.profile)
                } else {
                    cell
                });
            }
            rows.push([
                crate::util::escape::terminal(&s.id).into_owned(),
                crate::util::escape::terminal(l.kind.as_deref().unwrap_or("")).into_owned(),
                l.turn.to_string(),
                s.place(l.event).map_or(String::new(), |p| p.to_string()),
                crate::util::escape::terminal(&port.join(", ")).into_owned(),
            ]);
        }
    }
    let port_head = if multi {
        "port".to_string()
    } else {
        format!(
            "port ({})",
            configs.first().map_or("", |c| c.profile.as_str())
        )
    };
    let header = ["session", "live kind", "turn", "at", port_head.as_str()];
    let mut w = [0usize; 4];
    for i in 0..4 {
        w[i] = rows
            .iter()
            .map(|r| r[i].chars().count())
            .max()
            .unwrap_or(0)
            .max(header[i].len());
    }
    writeln!(
        out,
        "\nlive detections (what the agent's own detector did, from `loop_detected` records) beside the port's:"
    )?;
    let line = |c: [&str; 5], out: &mut dyn Write| -> io::Result<()> {
        let mut t = String::new();
        for i in 0..4 {
            t.push_str(&format!("{:<width$}  ", c[i], width = w[i]));
        }
        t.push_str(c[4]);
        writeln!(out, "{}", t.trim_end())
    };
    line(header, out)?;
    for r in &rows {
        line([&r[0], &r[1], &r[2], &r[3], &r[4]], out)?;
    }
    let counts: Vec<String> = configs
        .iter()
        .zip(&reproduced)
        .map(|(c, k)| format!("{} {k} of {n}", c.profile))
        .collect();
    writeln!(out, "reproduced at the same turn: {}", counts.join(", "))
}

/// How many sessions' first live detection (the agent's own, from a
/// `loop_detected` record) the stock configurations of a sweep reproduce:
/// their first detection falls on the same turn. Nothing when no session
/// kept a live detection.
pub fn live_summary(r: &crate::score::SweepResult, out: &mut dyn Write) -> io::Result<()> {
    let Some(live) = crate::report::model::LiveView::of(r)? else {
        return Ok(());
    };
    let others: Vec<String> = live
        .stock
        .iter()
        .take(5)
        .map(|k| format!("{} {}", k.label, k.reproduced))
        .collect();
    writeln!(
        out,
        "\nlive detections: the agent's own detector fired in {} (first `loop_detected` record); the baseline {} reproduces {} of them at the same turn{}",
        plural(live.sessions, "session", "sessions"),
        live.baseline.label,
        live.baseline.reproduced,
        if others.is_empty() {
            String::new()
        } else {
            format!(" (other stock profiles: {})", others.join(", "))
        }
    )
}

/// The detections a replay shows of an outcome: every one with `--all`,
/// else the first.
fn shown(o: &crate::replay::Outcome, all: bool) -> &[crate::replay::Detection] {
    if all {
        &o.detections[..]
    } else {
        &o.detections[..o.detections.len().min(1)]
    }
}

/// `1 session`, `2 sessions`: a count with the right form of its noun.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A table for people: one row per session with a detection, then a summary line.
pub fn replay_table(
    sessions: &[SessionOutcomes],
    configs: &[ConfigName],
    all: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let multi = configs.len() > 1;
    let mut rows: Vec<[String; 7]> = Vec::new();
    let mut per_kind: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut fired_sessions = 0;
    for s in sessions {
        let mut any = false;
        for (cfg, o) in configs.iter().zip(&s.outcomes) {
            for d in shown(o, all) {
                any = true;
                *per_kind.entry(d.kind).or_default() += 1;
                let mut detail: String = d.detail.chars().take(70).collect();
                if d.detail.chars().count() > 70 {
                    detail.push('…');
                }
                // Ids and details come from logs: no control character reaches the terminal.
                let detail = crate::util::escape::terminal(&detail).into_owned();
                rows.push([
                    crate::util::escape::terminal(&s.id).into_owned(),
                    if multi {
                        cfg.profile.clone()
                    } else {
                        d.kind.to_string()
                    },
                    if multi {
                        d.kind.to_string()
                    } else {
                        d.turn.to_string()
                    },
                    if multi {
                        d.turn.to_string()
                    } else {
                        d.event.to_string()
                    },
                    if multi {
                        d.event.to_string()
                    } else {
                        d.strike.to_string()
                    },
                    s.place(d.event).map_or(String::new(), |p| p.to_string()),
                    detail,
                ]);
            }
        }
        if any {
            fired_sessions += 1;
        }
    }
    let header: [&str; 7] = if multi {
        [
            "session", "profile", "kind", "turn", "event", "at", "detail",
        ]
    } else {
        ["session", "kind", "turn", "event", "strike", "at", "detail"]
    };
    if !rows.is_empty() {
        let mut w = [0usize; 7];
        for (i, h) in header.iter().enumerate() {
            w[i] = h.len();
        }
        for r in &rows {
            for i in 0..6 {
                w[i] = w[i].max(r[i].chars().count());
            }
        }
        let line = |cells: [&str; 7], out: &mut dyn Write| -> io::Result<()> {
            let mut s = String::new();
            for i in 0..6 {
                s.push_str(&format!("{:<width$}  ", cells[i], width = w[i]));
            }
            s.push_str(cells[6]);
            writeln!(out, "{}", s.trim_end())
        };
        line(header, out)?;
        for r in &rows {
            line([&r[0], &r[1], &r[2], &r[3], &r[4], &r[5], &r[6]], out)?;
        }
        writeln!(out)?;
    }
    let kinds: Vec<String> = per_kind.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let profiles: Vec<&str> = configs.iter().map(|c| c.profile.as_str()).collect();
    writeln!(
        out,
        "{}, {}, {}; {} with a detection ({}) [{}]",
        plural(sessions.len(), "session", "sessions"),
        plural(
            sessions.iter().map(|s| s.turns as u64).sum::<u64>() as usize,
            "turn",
            "turns"
        ),
        plural(
            sessions.iter().map(|s| s.events as usize).sum(),
            "event",
            "events"
        ),
        fired_sessions,
        if kinds.is_empty() {
            "none".to_string()
        } else {
            kinds.join(", ")
        },
        profiles.join(", ")
    )?;
    let whole = sessions.iter().filter(|s| s.whole_messages).count();
    if whole > 0 {
        writeln!(
            out,
            "note: {whole} sessions come from logs with whole messages, not stream chunks: the content check ran on whole messages"
        )?;
    }
    Ok(())
}

/// `looptune detectors`: every family, profile and parameter with its source.
pub fn detectors(fams: &[FamilyListing], json: bool, out: &mut dyn Write) -> io::Result<()> {
    if json {
        for f in fams {
            let profiles: Vec<Value> = f
                .profiles
                .iter()
                .map(|p| {
                    let values: Map<String, Value> = p
                        .values
                        .iter()
                        .map(|(k, v)| (k.clone(), json!(v)))
                        .collect();
                    json!({"name": p.name, "about": p.about, "values": values})
                })
                .collect();
            let params: Vec<Value> = f
                .params
                .iter()
                .map(|p| json!({"name": p.name, "type": p.kind, "unit": p.unit, "doc": p.doc, "source": p.source}))
                .collect();
            serde_json::to_writer(
                &mut *out,
                &json!({"family": f.name, "about": f.about, "profiles": profiles, "params": params}),
            )?;
            out.write_all(b"\n")?;
        }
        return Ok(());
    }
    for f in fams {
        let profiles = &f.profiles;
        writeln!(out, "{} — {}", f.name, f.about)?;
        writeln!(out, "  profiles (first is the default):")?;
        for p in profiles {
            writeln!(out, "    {:<20} {}", p.name, p.about)?;
        }
        writeln!(out, "  parameters (default = {}):", profiles[0].name)?;
        for spec in &f.params {
            let default = profiles[0]
                .values
                .iter()
                .find(|(k, _)| *k == spec.name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            let differs: Vec<String> = profiles[1..]
                .iter()
                .filter_map(|p| {
                    p.values
                        .iter()
                        .find(|(k, _)| *k == spec.name)
                        .map(|(_, v)| format!("{}={v}", p.name))
                })
                .collect();
            let unit = if spec.unit.is_empty() {
                String::new()
            } else {
                format!(" {}", spec.unit)
            };
            writeln!(out, "    {} = {default}{unit}  [{}]", spec.name, spec.kind)?;
            writeln!(out, "        {}", spec.doc)?;
            if !differs.is_empty() {
                writeln!(out, "        profiles: {}", differs.join(", "))?;
            }
            writeln!(out, "        source: {}", spec.source)?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// A column header: the score table's short name.
fn short(score: &str) -> &str {
    crate::score::metrics::score_info(score).map_or(score, |s| s.short)
}

/// `[lo, hi]` of an interval at two decimals.
fn interval(ci: Option<(f64, f64)>) -> String {
    ci.map(|(a, b)| crate::util::number::interval(format!("{a:.2}"), format!("{b:.2}")))
        .unwrap_or_default()
}

/// A proportion and its interval: `0.55 [0.28, 0.79]`.
fn share(x: Option<f64>, ci: Option<(f64, f64)>) -> String {
    match x {
        Some(x) => format!("{x:.2} {}", interval(ci)),
        None => "-".into(),
    }
}

/// False positives as `3/95 [0.01, 0.09]` (count of labelled clean, rate interval).
fn false_positives(fp: usize, clean: usize, ci: Option<(f64, f64)>) -> String {
    format!("{fp}/{clean} {}", interval(ci))
}

/// A median with its interval and sample size: `10 [9, 12] n=4`.
fn median_text(m: Option<f64>, ci: Option<(f64, f64)>, n: usize) -> String {
    let ci = ci
        .map(|(a, b)| {
            format!(
                " {}",
                crate::util::number::interval(super::fixed(a), super::fixed(b))
            )
        })
        .unwrap_or_default();
    match m {
        Some(m) => format!("{}{ci} n={n}", super::fixed(m)),
        None => format!("- n={n}"),
    }
}

/// One row of the sweep summary.
fn summary_row(
    out: &mut dyn Write,
    role: &str,
    s: &crate::score::metrics::Scores,
    ttd_ci: Option<(f64, f64)>,
    label: &str,
    id: &str,
) -> io::Result<()> {
    writeln!(
        out,
        "{role:<18} {:<18} {:<18} {:<18} {:<20} {label}  ({id})",
        share(Some(s.recall), s.recall_ci),
        share(
            (s.true_positives + s.false_positives > 0).then_some(s.precision),
            s.precision_ci
        ),
        false_positives(s.false_positives, s.labeled_clean, s.fp_rate_ci),
        median_text(s.ttd_median, ttd_ci, s.ttd.len()),
    )
}

/// The closing summary of `sweep`, for people: the labels, the baseline, the
/// recommendation in its family, every other family's best and the union, each
/// with its intervals; then the cross-validated estimate beside the in-sample
/// one, said plainly when they disagree.
pub fn sweep_summary(r: &crate::score::SweepResult, out: &mut dyn Write) -> io::Result<()> {
    let a = &r.advice;
    let sessions = &r.record.sessions;
    let loops = sessions
        .iter()
        .filter(|s| s.label.as_deref() == Some("loop"))
        .count();
    let clean = sessions
        .iter()
        .filter(|s| s.label.as_deref() == Some("clean"))
        .count();
    let n = sessions.len();
    // Loops labelled without an onset (Inspect Scout's validation sets):
    // scored for recall and precision, their turns-to-detection unknown.
    let no_onset = sessions
        .iter()
        .filter(|s| s.label.as_deref() == Some("loop") && s.onset_turn.is_none())
        .count();
    let unknown = if no_onset > 0 {
        format!(" ({no_onset} without an onset: turns-to-detection unknown)")
    } else {
        String::new()
    };
    writeln!(
        out,
        "labels: {loops} loop{}{unknown}, {clean} clean, {} unlabelled ({n} session{})",
        if loops == 1 { "" } else { "s" },
        n - loops - clean,
        if n == 1 { "" } else { "s" }
    )?;
    for w in &a.warnings {
        writeln!(out, "warning: {w}")?;
    }
    if loops == 0 {
        let b = r.baseline;
        writeln!(
            out,
            "baseline {} fires on {} of {n} sessions; sweep.csv has every configuration's `detections`.",
            r.label(b), r.scores[b].detections
        )?;
        if let Some(why) = &a.reason {
            writeln!(out, "no recommendation: {why}")?;
        }
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "{:<18} {:<18} {:<18} {:<18} {:<20} configuration",
        "",
        format!("{} [95% CI]", short("recall")),
        short("precision"),
        short("false_positives"),
        short("ttd_median")
    )?;
    let v = &r.record.grid.configs;
    let row = |out: &mut dyn Write, role: &str, c: usize| {
        summary_row(
            out,
            role,
            &r.scores[c],
            a.ttd_ci.get(&c).copied(),
            &v[c].label,
            &v[c].id,
        )
    };
    row(out, "baseline", r.baseline)?;
    match r.recommended {
        Some(c) => row(out, "recommended", c)?,
        None => writeln!(out, "{:<18} none meets the rule", "recommended")?,
    }
    for (family, best) in &a.family_best {
        let role = format!("best {family}");
        match best {
            Some(c) => row(out, &role, *c)?,
            None => writeln!(out, "{role:<18} none within the baseline's false positives")?,
        }
    }
    if let Some(u) = &a.union {
        summary_row(out, "union", &u.scores, a.union_ttd_ci, &u.label, &u.id)?;
    }
    group_block(out, r)?;
    writeln!(out)?;
    if let Some(note) = &a.guard_note {
        writeln!(out, "Guard: {note}.")?;
    }
    if let Some(c) = r.recommended {
        let base = &r.scores[r.baseline];
        let rec = &r.scores[c];
        if c == r.baseline {
            writeln!(
                out,
                "The baseline is already the best configuration{} under the rule.",
                if a.across_families {
                    String::new()
                } else {
                    format!(" of its family ({})", v[c].family)
                }
            )?;
        } else {
            writeln!(
                out,
                "In sample, the recommendation catches {} of {loops} loops against the baseline's {}, with {} false positives against {}.",
                rec.true_positives, base.true_positives, rec.false_positives, base.false_positives
            )?;
        }
    }
    if let Some(cv) = &a.cross_validation {
        cross_validation_text(
            out,
            r,
            cv,
            "recommendation",
            r.recommended.map(|c| &r.scores[c]),
        )?;
    } else if let Some(why) = &a.cv_reason {
        writeln!(out, "No out-of-sample estimate: {why}.")?;
    }
    match &a.group_validation {
        Some(gv) => group_validation_text(
            out,
            r,
            gv,
            "recommendation",
            r.recommended.map(|c| &r.scores[c]),
        )?,
        None => {
            if let Some(why) = &a.group_validation_reason {
                writeln!(out, "\nNo leave-one-{}-out estimate: {why}.", r.groups.by)?;
            }
        }
    }
    if let Some(u) = &a.union {
        if let Some(cv) = &u.cross_validation {
            cross_validation_text(out, r, cv, "union", Some(&u.scores))?;
        }
        if let Some(gv) = &u.group_validation {
            group_validation_text(out, r, gv, "union", Some(&u.scores))?;
        }
        writeln!(
            out,
            "A union flags a session when any member fires, at the earliest member's turn. No agent ships one: you would have to build it."
        )?;
    }
    if let Some(t) = &a.test {
        test_text(out, r, t)?;
    }
    if let Some(why) = &a.reason {
        writeln!(out, "no recommendation: {why}")?;
    }
    writeln!(
        out,
        "rule: {}{}{}",
        r.objective.describe(),
        match a.guard {
            crate::score::recommend::Guard::PerGroup => format!(
                ", and no {} worse off than with the baseline (fewer of its loops caught or more false positives; --guard pooled drops this)",
                r.groups.by
            ),
            crate::score::recommend::Guard::Pooled => String::new(),
            crate::score::recommend::Guard::Interval => format!(
                ", and no {} worse off than the baseline beyond what its size allows (recall below the lower end of the baseline's 95% interval there, or a false-positive rate above its upper end; --guard strict vetoes any loss)",
                r.groups.by
            ),
        },
        if a.across_families {
            " (any family)"
        } else {
            " (within the baseline's family; --across-families lets any win)"
        }
    )?;
    ship_block(out, r)
}

/// The closing "Ship:" block: the one answer to "what do I ship?", per
/// group with labelled loops (see `score::ship`).
fn ship_block(out: &mut dyn Write, r: &crate::score::SweepResult) -> io::Result<()> {
    let ship = crate::score::ship::ship(r)?;
    let name = |c: usize| {
        format!(
            "{} ({})",
            crate::util::escape::terminal(r.label(c)),
            r.config(c).id
        )
    };
    writeln!(
        out,
        "
Ship:"
    )?;
    match ship.overall {
        Some(c) => writeln!(out, "  overall: {}", name(c))?,
        None => writeln!(
            out,
            "  overall: no change: keep the baseline {} (nothing beats it under the rule)",
            name(r.baseline)
        )?,
    }
    if ship.groups.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "  per {} (caught of its labelled loops, false positives of its clean sessions; \"without it\": chosen without its logs, scored on them):",
        ship.by
    )?;
    let figures = |p: &crate::score::ship::OnGroup, g: &crate::score::ship::GroupShip| {
        format!("{}/{}, {}/{}", p.tp, g.loops, p.fp, g.clean)
    };
    for g in &ship.groups {
        writeln!(
            out,
            "  {}: baseline {}",
            crate::util::escape::terminal(&g.name),
            figures(&g.baseline, g)
        )?;
        let pick = |what: &str, p: &crate::score::ship::Pick| -> String {
            let held = match &p.out_of_group {
                Some((c, f)) if *c == p.config => format!("without it {}", figures(f, g)),
                Some((c, f)) => format!("without it {} picked, {}", name(*c), figures(f, g)),
                None => "without it nothing met the rule".to_string(),
            };
            let verdict = if p.config == r.baseline {
                "the baseline itself".to_string()
            } else if p.distinguishable {
                format!("ship {}", name(p.config))
            } else {
                "no change: not distinguishable from the baseline".to_string()
            };
            format!(
                "    {what:<13} {} {}; {held} -> {verdict}",
                name(p.config),
                figures(&p.in_group, g)
            )
        };
        match (&g.own_family, &g.own) {
            (Some(_), Some(p)) => writeln!(out, "{}", pick("own detector", p))?,
            (Some(f), None) => writeln!(
                out,
                "    {:<13} nothing in `{f}` meets the rule",
                "own detector"
            )?,
            (None, _) if ship.by == crate::sweep::AGENT => writeln!(
                out,
                "    {:<13} none (no loop detector of its own in looptune)",
                "own detector"
            )?,
            (None, _) => {}
        }
        if let Some(p) = &g.overall {
            writeln!(out, "{}", pick("overall", p))?;
        }
    }
    Ok(())
}

/// A group's name for a column `width` characters wide: made safe for the
/// terminal and cut with `…` when longer (a long model name pushed every
/// column after it out of line).
fn fit(name: &str, width: usize) -> String {
    let safe = crate::util::escape::terminal(name);
    if safe.chars().count() <= width {
        return safe.into_owned();
    }
    let mut cut: String = safe.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Columns of the per-group block at most, before it wraps into another.
const GROUP_COLUMNS: usize = 6;

/// Caught of labelled loops and false positives of labelled clean sessions,
/// compact: `2/6 0/20` (`-` without labelled sessions).
fn group_cell(s: &crate::score::metrics::Scores) -> String {
    if s.labeled_loops + s.labeled_clean == 0 {
        "-".into()
    } else {
        format!(
            "{}/{} {}/{}",
            s.true_positives, s.labeled_loops, s.false_positives, s.labeled_clean
        )
    }
}

/// The summary's rows per group: one line per group, a column per row of the
/// table above (loops caught of loops, false positives of clean), then the
/// rows whose gain over the baseline comes mostly from one group, by name.
fn group_block(out: &mut dyn Write, r: &crate::score::SweepResult) -> io::Result<()> {
    let g = &r.groups;
    if g.names.len() < 2 {
        return Ok(());
    }
    let shown = r.shown()?;
    let scores: Vec<Vec<crate::score::metrics::Scores>> =
        shown.iter().map(|(_, _, h)| r.group_scores(h)).collect();
    let width = g
        .names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(12, 28);
    writeln!(
        out,
        "\nBy {} (loops caught of labelled loops, false positives of labelled clean sessions):",
        g.by
    )?;
    let column = |role: &str| role.strip_prefix("best ").unwrap_or(role).to_string();
    for block in (0..shown.len()).collect::<Vec<_>>().chunks(GROUP_COLUMNS) {
        write!(out, "{:<width$} {:>8} ", "", "sessions")?;
        for &k in block {
            write!(out, " {:<13}", column(&shown[k].0))?;
        }
        writeln!(out)?;
        for (gi, name) in g.names.iter().enumerate() {
            let n = g.of.iter().filter(|&&x| x as usize == gi).count();
            write!(out, "{:<width$} {n:>8} ", fit(name, width))?;
            for &k in block {
                write!(out, " {:<13}", group_cell(&scores[k][gi]))?;
            }
            writeln!(out)?;
        }
    }
    for line in super::model::concentration_sentences(r) {
        writeln!(out, "{}", crate::util::escape::terminal(&line))?;
    }
    Ok(())
}

/// The leave-one-group-out estimate beside the in-sample figures, one line
/// per group held out, and plainly whether the choice carries across groups.
fn group_validation_text(
    out: &mut dyn Write,
    r: &crate::score::SweepResult,
    gv: &crate::score::recommend::GroupValidation,
    what: &str,
    in_sample: Option<&crate::score::metrics::Scores>,
) -> io::Result<()> {
    writeln!(
        out,
        "\nHow the {what} procedure does on {}s it never saw (leave one {} out: chosen on the others, scored on it):",
        gv.by, gv.by
    )?;
    let off = held_out_rows(out, "out of group", in_sample, &gv.pooled)?;
    let width = gv
        .groups
        .iter()
        .map(|f| f.name.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(12, 28);
    for f in &gv.groups {
        let chosen = if f.chosen.is_empty() {
            "(nothing met the rule)".to_string()
        } else {
            f.chosen
                .iter()
                .map(|&m| r.fold_label(m))
                .collect::<Vec<_>>()
                .join(" | ")
        };
        // Chosen on groups without a labelled loop: nothing could be learned.
        let blind = gv.pooled.loops == f.tally.loops;
        writeln!(
            out,
            "  {:<width$} caught {}/{} loops, {}/{} false positives with {chosen}{}",
            fit(&f.name, width),
            f.tally.tp,
            f.tally.loops,
            f.tally.fp,
            f.tally.clean,
            if blind {
                " (the others have no labelled loop to choose on)"
            } else {
                ""
            }
        )?;
    }
    if in_sample.is_some() {
        match off {
            Some(score) => writeln!(
                out,
                "This choice does not carry across {}s: the in-sample {score} lies outside the out-of-group interval; expect the out-of-group figures on {} {} it was not chosen on.",
                gv.by,
                // `--group-by` names any column: "an agent", "a source".
                if gv.by.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" },
                gv.by
            )?,
            None => writeln!(
                out,
                "In sample and out of group agree within the intervals."
            )?,
        }
    }
    Ok(())
}

/// What was chosen, scored once on the test sessions.
fn test_text(
    out: &mut dyn Write,
    r: &crate::score::SweepResult,
    t: &crate::score::TestScores,
) -> io::Result<()> {
    writeln!(
        out,
        "\nTest sessions ({} session{}: {} loop{}, {} clean), never chosen on, scored once with what was chosen on the others:",
        t.sessions,
        if t.sessions == 1 { "" } else { "s" },
        t.loops,
        if t.loops == 1 { "" } else { "s" },
        t.clean
    )?;
    writeln!(
        out,
        "{:<18} {:<18} {:<18} {:<18} configuration",
        "",
        format!("{} [95% CI]", short("recall")),
        short("precision"),
        short("false_positives"),
    )?;
    for (role, c, p) in &t.rows {
        let name = match c {
            Some(i) => r.label(*i).to_string(),
            None => r
                .advice
                .union
                .as_ref()
                .map_or(String::new(), |u| u.label.clone()),
        };
        writeln!(
            out,
            "{role:<18} {:<18} {:<18} {:<18} {name}",
            share(
                (p.loops > 0).then(|| p.recall()),
                crate::score::stats::wilson(p.tp, p.loops)
            ),
            share(
                (p.tp + p.fp > 0).then(|| p.precision()),
                crate::score::stats::wilson(p.tp, p.tp + p.fp)
            ),
            false_positives(
                p.fp as usize,
                p.clean as usize,
                crate::score::stats::wilson(p.fp, p.clean)
            ),
        )?;
    }
    Ok(())
}

/// The in-sample row and a held-out row (`label`) of recall, precision,
/// false positives and F1; returns which score of the in-sample row lies
/// outside the held-out interval, if one does.
fn held_out_rows(
    out: &mut dyn Write,
    label: &str,
    in_sample: Option<&crate::score::metrics::Scores>,
    p: &crate::score::recommend::Tally,
) -> io::Result<Option<&'static str>> {
    writeln!(
        out,
        "{:<18} {:<18} {:<18} {:<18} {}",
        "",
        format!("{} [95% CI]", short("recall")),
        short("precision"),
        short("false_positives"),
        short("f1")
    )?;
    if let Some(s) = in_sample {
        writeln!(
            out,
            "{:<18} {:<18} {:<18} {:<18} {:.2}",
            "in sample",
            share(Some(s.recall), s.recall_ci),
            share(
                (s.true_positives + s.false_positives > 0).then_some(s.precision),
                s.precision_ci
            ),
            false_positives(s.false_positives, s.labeled_clean, s.fp_rate_ci),
            s.f1
        )?;
    }
    let recall_ci = crate::score::stats::wilson(p.tp, p.loops);
    let precision_ci = crate::score::stats::wilson(p.tp, p.tp + p.fp);
    let fp_ci = crate::score::stats::wilson(p.fp, p.clean);
    writeln!(
        out,
        "{:<18} {:<18} {:<18} {:<18} {:.2}",
        label,
        share(Some(p.recall()), recall_ci),
        share((p.tp + p.fp > 0).then_some(p.precision()), precision_ci),
        false_positives(p.fp as usize, p.clean as usize, fp_ci),
        p.f1()
    )?;
    Ok(in_sample.and_then(|s| {
        let outside = |x: f64, ci: Option<(f64, f64)>| {
            ci.is_some_and(|(lo, hi)| x < lo - 1e-12 || x > hi + 1e-12)
        };
        if outside(s.recall, recall_ci) {
            Some("recall")
        } else if s.fp_rate.is_some_and(|f| outside(f, fp_ci)) {
            Some("false-positive rate")
        } else {
            None
        }
    }))
}

/// The in-sample figures of a choice beside the cross-validated ones.
fn cross_validation_text(
    out: &mut dyn Write,
    r: &crate::score::SweepResult,
    cv: &crate::score::recommend::CrossValidation,
    what: &str,
    in_sample: Option<&crate::score::metrics::Scores>,
) -> io::Result<()> {
    writeln!(
        out,
        "\nHow the {what} procedure does on sessions it never saw ({}-fold cross-validation, seed {}):",
        cv.folds, cv.seed
    )?;
    let off = held_out_rows(out, "out of sample", in_sample, &cv.pooled)?;
    // How often each choice was made, most frequent first.
    let mut counts: Vec<(String, usize)> = Vec::new();
    for members in &cv.chosen {
        let name = if members.is_empty() {
            "(nothing met the rule)".to_string()
        } else {
            members
                .iter()
                .map(|&m| r.fold_label(m))
                .collect::<Vec<_>>()
                .join(" | ")
        };
        match counts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, k)) => *k += 1,
            None => counts.push((name, 1)),
        }
    }
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    for (name, k) in &counts {
        writeln!(out, "  chosen in {k} of {} folds: {name}", cv.folds)?;
    }
    if counts[0].1 * 2 <= cv.folds {
        writeln!(
            out,
            "The folds disagree on what to choose: the choice is unstable on these labels."
        )?;
    }
    if in_sample.is_some() {
        match off {
            Some(score) => writeln!(
                out,
                "In sample and out of sample DISAGREE: the in-sample {score} lies outside the out-of-sample interval, so the choice is fitted to these sessions; expect the out-of-sample figures."
            )?,
            None => writeln!(
                out,
                "In sample and out of sample agree within the intervals."
            )?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::fit;

    #[test]
    fn long_group_names_are_cut_to_their_column() {
        assert_eq!(fit("gpt-4o", 12), "gpt-4o");
        let long = "anthropic/claude-opus-4-20250514-with-a-very-long-suffix";
        let cut = fit(long, 28);
        assert_eq!(cut.chars().count(), 28);
        assert!(cut.ends_with('…') && long.starts_with(cut.trim_end_matches('…')));
        assert_eq!(fit("a\u{1b}[31mb", 28), "a\\u{1b}[31mb");
    }
}
