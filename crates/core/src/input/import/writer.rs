//! The canonical JSONL writer behind `looptune import`: one JSON object per
//! record, `type` and `session` first, readable back by `input::parse_canonical`.

use crate::event::{Corpus, Provenance, Record, Session};
use serde_json::{Map, Value};
use std::io::Write;
use std::sync::Arc;

/// Write every record of `sessions` as canonical JSONL: one object per line
/// with keys `type`, `session`, then the record's fields in spec order. Session
/// metadata that came from outside the records (e.g. a subagent's
/// `parent_session`) is merged into the session's first `session` record.
/// With `redact`, credentials are masked in every string the line carries
/// except the fixed `type` name: session ids, texts, tool names and ids, the
/// keys and values inside arguments and metadata, and `src` (see [`super::redact`]).
///
/// Every record read from a file also gets `src`: the file and line (or JSON
/// pointer) it came from, so that a replay of the written file names the
/// original native log (see `docs/transcript-format.md`).
pub fn write_canonical(corpus: &Corpus, out: &mut dyn Write, redact: bool) -> std::io::Result<()> {
    write_sessions(corpus, &corpus.sessions, out, redact)
}

fn write_sessions(
    corpus: &Corpus,
    sessions: &[Arc<Session>],
    out: &mut dyn Write,
    redact: bool,
) -> std::io::Result<()> {
    for s in sessions {
        // A PEM key still open at the end of a `content` / `thought` chunk
        // (see [`super::redact::redact_chunk`]).
        let mut pem = Streams::default();
        let extra = extra_meta(s);
        let mut extra_done = extra.is_empty();
        if !extra_done
            && !s
                .events
                .iter()
                .any(|e| matches!(e.record, Record::Session { .. }))
        {
            let rec = Record::Session {
                agent: None,
                model: None,
                mode: None,
                meta: Some(Box::new(extra.clone())),
            };
            write_line(out, &s.id, &rec, redact, None, &mut pem)?;
            extra_done = true;
        }
        for e in &s.events {
            let src = Some(corpus.origin_provenance(&e.origin)).filter(|p| !p.file.is_empty());
            match (&e.record, extra_done) {
                (
                    Record::Session {
                        agent,
                        model,
                        mode,
                        meta,
                    },
                    false,
                ) => {
                    let mut m = meta.clone().unwrap_or_default();
                    for (k, v) in &extra {
                        m.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                    let rec = Record::Session {
                        agent: agent.clone(),
                        model: model.clone(),
                        mode: mode.clone(),
                        meta: Some(m),
                    };
                    write_line(out, &s.id, &rec, redact, src, &mut pem)?;
                    extra_done = true;
                }
                (rec, _) => write_line(out, &s.id, rec, redact, src, &mut pem)?,
            }
        }
    }
    out.flush()
}

/// Resolved metadata keys that no `session` record of the session carries.
fn extra_meta(s: &Session) -> Map<String, Value> {
    let mut from_records: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for e in &s.events {
        if let Record::Session { meta: Some(m), .. } = &e.record {
            from_records.extend(m.keys().map(String::as_str));
        }
    }
    s.meta
        .meta
        .iter()
        .filter(|(k, _)| !from_records.contains(k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Whether a PEM private key begun in a session's model text has not ended
/// yet, per stream: `content` and `thought` records are each a stream of
/// chunks.
#[derive(Default)]
struct Streams {
    content: bool,
    thought: bool,
}

fn write_line(
    out: &mut dyn Write,
    session: &str,
    rec: &Record,
    redact: bool,
    src: Option<Provenance>,
    pem: &mut Streams,
) -> std::io::Result<()> {
    let mut obj = to_object(session, rec);
    if redact {
        if matches!(rec, Record::User { .. }) {
            // A prompt ends the model's output: its text continues no key.
            *pem = Streams::default();
        }
        let open = match rec {
            Record::Content { .. } => Some(&mut pem.content),
            Record::Thought { .. } => Some(&mut pem.thought),
            _ => None,
        };
        if let (Some(open), Some(Value::String(t))) = (open, obj.get_mut("text")) {
            *t = super::redact::redact_chunk(t, open);
        }
    }
    if let Some(p) = src {
        let mut m = Map::new();
        m.insert("file".into(), Value::String(p.file.to_string()));
        if let Some(l) = p.line {
            m.insert("line".into(), Value::from(l));
        }
        if let Some(ptr) = p.pointer {
            m.insert("pointer".into(), Value::String(ptr.to_string()));
        }
        obj.insert("src".into(), Value::Object(m));
    }
    if redact {
        // Every string of the line, ids, argument keys and source paths
        // included: a secret can hide in any of them (a session named after a
        // token, an argument key).
        let chunked = matches!(rec, Record::Content { .. } | Record::Thought { .. });
        for (k, v) in obj.iter_mut() {
            // (A chunk's text is masked above.)
            if k != "type" && !(chunked && k == "text") {
                *v = redact_value(v);
            }
        }
        // Masked session ids stay distinct (sessions must not merge on reading
        // back): a short digest of the original follows the mask.
        let masked = obj.get("session").and_then(Value::as_str) != Some(session);
        if masked {
            use sha2::Digest;
            let d = sha2::Sha256::digest(session.as_bytes());
            let tag = crate::util::number::hex(&d[..4]);
            if let Some(Value::String(id)) = obj.get_mut("session") {
                id.push('-');
                id.push_str(&tag);
            }
        }
    }
    serde_json::to_writer(&mut *out, &Value::Object(obj))?;
    out.write_all(b"\n")
}

fn text(t: &str) -> Value {
    Value::String(t.to_string())
}

/// `v` with credentials masked in every string, object keys included.
fn redact_value(v: &Value) -> Value {
    match v {
        Value::String(t) => Value::String(super::redact(t)),
        Value::Array(a) => Value::Array(a.iter().map(redact_value).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (super::redact(k), redact_value(x)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The canonical object for one record.
fn to_object(session: &str, rec: &Record) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("type".into(), Value::String(rec.type_name().to_string()));
    m.insert("session".into(), Value::String(session.to_string()));
    let opt = |m: &mut Map<String, Value>, k: &str, v: Option<Value>| {
        if let Some(v) = v {
            m.insert(k.to_string(), v);
        }
    };
    match rec {
        Record::Session {
            agent,
            model,
            mode,
            meta,
        } => {
            opt(&mut m, "agent", agent.clone().map(Value::String));
            opt(&mut m, "model", model.clone().map(Value::String));
            opt(&mut m, "mode", mode.clone().map(Value::String));
            opt(
                &mut m,
                "meta",
                meta.as_ref().map(|x| Value::Object((**x).clone())),
            );
        }
        Record::User { text: t, prompt_id } => {
            m.insert("text".into(), text(t));
            opt(&mut m, "prompt_id", prompt_id.clone().map(Value::String));
        }
        Record::Turn | Record::Unknown { .. } => {}
        Record::Content { text: t } | Record::Thought { text: t } => {
            m.insert("text".into(), text(t));
        }
        Record::ToolCall { name, args, id } => {
            m.insert("name".into(), Value::String(name.clone()));
            m.insert("args".into(), Value::Object((**args).clone()));
            opt(&mut m, "id", id.clone().map(Value::String));
        }
        Record::ToolResult {
            id,
            name,
            output,
            error,
        } => {
            opt(&mut m, "id", id.clone().map(Value::String));
            opt(&mut m, "name", name.clone().map(Value::String));
            opt(&mut m, "output", output.as_deref().map(text));
            opt(&mut m, "error", error.map(Value::Bool));
        }
        Record::Usage {
            input_tokens,
            output_tokens,
        } => {
            opt(&mut m, "input_tokens", input_tokens.map(Value::from));
            opt(&mut m, "output_tokens", output_tokens.map(Value::from));
        }
        Record::Judge {
            confidence,
            model,
            analysis,
        } => {
            m.insert("confidence".into(), Value::from(*confidence));
            opt(&mut m, "model", model.clone().map(Value::String));
            opt(&mut m, "analysis", analysis.as_deref().map(text));
        }
        Record::LoopDetected { kind, detail } => {
            opt(&mut m, "kind", kind.clone().map(Value::String));
            opt(&mut m, "detail", detail.as_deref().map(text));
        }
        Record::Label {
            is_loop,
            onset_turn,
        } => {
            m.insert("loop".into(), Value::Bool(*is_loop));
            opt(&mut m, "onset_turn", onset_turn.map(Value::from));
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Origin;

    fn session() -> Arc<Session> {
        let o = Origin::default();
        let mut args = Map::new();
        args.insert("z".into(), Value::from("sk-abcdefghijklmnopqrstu"));
        args.insert("a".into(), Value::from(1));
        let recs = vec![
            (
                Record::Session {
                    agent: Some("codex".into()),
                    model: None,
                    mode: None,
                    meta: None,
                },
                o.clone(),
            ),
            (
                Record::User {
                    text: "hi".into(),
                    prompt_id: Some("p".into()),
                },
                o.clone(),
            ),
            (Record::Turn, o.clone()),
            (
                Record::ToolCall {
                    name: "bash".into(),
                    args: args.into(),
                    id: None,
                },
                o.clone(),
            ),
            (
                Record::ToolResult {
                    id: None,
                    name: Some("bash".into()),
                    output: Some("x".into()),
                    error: Some(true),
                },
                o.clone(),
            ),
            (
                Record::Usage {
                    input_tokens: Some(3),
                    output_tokens: None,
                },
                o.clone(),
            ),
            (
                Record::Judge {
                    confidence: 0.25,
                    model: None,
                    analysis: None,
                },
                o.clone(),
            ),
            (
                Record::LoopDetected {
                    kind: Some("k".into()),
                    detail: None,
                },
                o.clone(),
            ),
            (
                Record::Label {
                    is_loop: true,
                    onset_turn: Some(2),
                },
                o.clone(),
            ),
        ];
        let mut s = Session::from_records("S".into(), recs);
        s.meta
            .meta
            .insert("parent_session".into(), Value::from("P"));
        Arc::new(s)
    }

    #[test]
    fn round_trips_through_the_canonical_reader() {
        let s = session();
        let mut buf = Vec::new();
        write_sessions(
            &Corpus::default(),
            std::slice::from_ref(&s),
            &mut buf,
            false,
        )
        .unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        assert!(text.starts_with(
            r#"{"type":"session","session":"S","agent":"codex","meta":{"parent_session":"P"}}"#
        ));
        assert!(text.contains(r#"{"type":"tool_call","session":"S","name":"bash","args":{"z":"sk-abcdefghijklmnopqrstu","a":1}}"#));
        let fs = crate::input::canonical::parse_canonical("o.jsonl", "o", &buf, false).unwrap();
        assert_eq!(fs.sessions.len(), 1);
        let back: Vec<Record> = fs.sessions[0].1.iter().map(|e| e.record.clone()).collect();
        let orig: Vec<Record> = s.events.iter().map(|e| e.record.clone()).collect();
        assert_eq!(back[1..], orig[1..]);
    }

    #[test]
    fn redacts_text_and_args() {
        let mut buf = Vec::new();
        write_sessions(&Corpus::default(), &[session()], &mut buf, true).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert!(!text.contains("sk-abc"));
        assert!(text.contains(r#""z":"[REDACTED]""#));
    }

    #[test]
    fn redacts_ids_names_and_argument_keys() {
        let o = crate::event::Origin::default();
        let key = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        let mut args = Map::new();
        args.insert(key.into(), Value::from(1));
        let recs = vec![(
            Record::ToolCall {
                name: "sk-proj-abcdefghijklmnopqrstuv".into(),
                args: args.into(),
                id: Some("AKIAABCDEFGHIJKLMNOP".into()),
            },
            o,
        )];
        let s = Arc::new(Session::from_records(
            "xoxb-1234567890-abcdefgh".into(),
            recs,
        ));
        let mut buf = Vec::new();
        let corpus = Corpus {
            sessions: vec![s],
            ..Default::default()
        };
        write_canonical(&corpus, &mut buf, true).unwrap();
        let text = String::from_utf8(buf).unwrap();
        for secret in [key, "sk-proj", "AKIA", "xoxb"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(
            text.starts_with(r#"{"type":"tool_call","session":"[REDACTED]-"#),
            "{text}"
        );
    }
}
