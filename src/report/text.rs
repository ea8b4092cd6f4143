//! Terminal and JSON-lines output of `replay` and `detectors`.

use crate::detect::{Family, ParamKind};
use crate::event::Corpus;
use crate::replay::Replay;
use serde_json::{json, Map, Value};
use std::io::{self, Write};

/// One JSON object per session, sorted by session id:
/// `{"session","turns","events","detections":[{"detector","kind","turn","event","file","line"|"pointer","strike","detail",...}]}`:
/// `file` and `line` (or `pointer`, a JSON pointer inside a whole-document
/// log) name where the record the detection is at came from.
pub fn replay_json(corpus: &Corpus, r: &Replay, all: bool, out: &mut dyn Write) -> io::Result<()> {
    for (si, s) in corpus.sessions.iter().enumerate() {
        let mut dets = Vec::new();
        let mut stops = Vec::new();
        for (ci, cfg) in r.configs.iter().enumerate() {
            let o = &r.outcomes[ci][si];
            let shown = if all {
                &o.detections[..]
            } else {
                &o.detections[..o.detections.len().min(1)]
            };
            for d in shown {
                let mut m = Map::new();
                m.insert("detector".into(), json!(cfg.family));
                m.insert("kind".into(), json!(d.kind));
                m.insert("turn".into(), json!(d.turn));
                m.insert("event".into(), json!(d.event));
                if let Some(p) = corpus.provenance(si, d.event) {
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
                    "policy": cfg.policy().to_string(),
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
        line.insert("events".into(), json!(s.events.len()));
        line.insert("detections".into(), Value::Array(dets));
        line.insert("stops".into(), Value::Array(stops));
        if s.whole_messages {
            // Chunk boundaries matter to Gemini CLI's content check; say when they were not recorded.
            line.insert("content_check_on_whole_messages".into(), json!(true));
        }
        serde_json::to_writer(&mut *out, &Value::Object(line))?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// A table for people: one row per session with a detection, then a summary line.
pub fn replay_table(corpus: &Corpus, r: &Replay, all: bool, out: &mut dyn Write) -> io::Result<()> {
    let multi = r.configs.len() > 1;
    let mut rows: Vec<[String; 7]> = Vec::new();
    let mut per_kind: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut fired_sessions = 0;
    for (si, s) in corpus.sessions.iter().enumerate() {
        let mut any = false;
        for (ci, cfg) in r.configs.iter().enumerate() {
            let o = &r.outcomes[ci][si];
            let shown = if all {
                &o.detections[..]
            } else {
                &o.detections[..o.detections.len().min(1)]
            };
            for d in shown {
                any = true;
                *per_kind.entry(d.kind).or_default() += 1;
                let mut detail: String = d.detail.chars().take(70).collect();
                if d.detail.chars().count() > 70 {
                    detail.push('…');
                }
                let detail = detail.replace(['\n', '\r', '\t'], " ");
                rows.push([
                    s.id.clone(),
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
                    corpus
                        .provenance(si, d.event)
                        .map_or(String::new(), |p| p.to_string()),
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
    let profiles: Vec<&str> = r.configs.iter().map(|c| c.profile.as_str()).collect();
    writeln!(
        out,
        "{} sessions, {} turns, {} events; {} with a detection ({}) [{}]",
        corpus.sessions.len(),
        corpus.turns(),
        corpus.events(),
        fired_sessions,
        if kinds.is_empty() {
            "none".to_string()
        } else {
            kinds.join(", ")
        },
        profiles.join(", ")
    )?;
    let whole = corpus.sessions.iter().filter(|s| s.whole_messages).count();
    if whole > 0 {
        writeln!(
            out,
            "note: {whole} sessions come from logs with whole messages, not stream chunks: the content check ran on whole messages"
        )?;
    }
    Ok(())
}

/// `looptune detectors`: every family, profile and parameter with its source.
pub fn detectors(fams: &[&'static dyn Family], json: bool, out: &mut dyn Write) -> io::Result<()> {
    if json {
        for f in fams {
            let profiles: Vec<Value> = f
                .profiles()
                .iter()
                .map(|p| {
                    let values: Map<String, Value> = p
                        .values
                        .iter()
                        .map(|(k, v)| (k.to_string(), json!(v.to_string())))
                        .collect();
                    json!({"name": p.name, "about": p.about, "values": values})
                })
                .collect();
            let params: Vec<Value> = f
                .params()
                .iter()
                .map(|p| json!({"name": p.name, "type": kind(&p.kind), "unit": p.unit, "doc": p.doc, "source": p.source}))
                .collect();
            serde_json::to_writer(
                &mut *out,
                &json!({"family": f.name(), "about": f.about(), "profiles": profiles, "params": params}),
            )?;
            out.write_all(b"\n")?;
        }
        return Ok(());
    }
    for f in fams {
        let profiles = f.profiles();
        writeln!(out, "{} — {}", f.name(), f.about())?;
        writeln!(out, "  profiles (first is the default):")?;
        for p in &profiles {
            writeln!(out, "    {:<20} {}", p.name, p.about)?;
        }
        writeln!(out, "  parameters (default = {}):", profiles[0].name)?;
        for spec in f.params() {
            let default = profiles[0]
                .values
                .iter()
                .find(|(k, _)| *k == spec.name)
                .map(|(_, v)| v.to_string())
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
            writeln!(
                out,
                "    {} = {default}{unit}  [{}]",
                spec.name,
                kind(&spec.kind)
            )?;
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

fn kind(k: &ParamKind) -> String {
    match k {
        ParamKind::Int { min, max } => format!("integer {min}..={max}"),
        ParamKind::Float { min, max } => format!("number {min}..={max}"),
        ParamKind::Bool => "true|false".into(),
        ParamKind::Choice(c) => c.join("|"),
        ParamKind::Policy => "stop|warn:N|ask|ignore".into(),
        ParamKind::List => "list of names".into(),
    }
}
