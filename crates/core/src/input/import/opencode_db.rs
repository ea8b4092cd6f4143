//! OpenCode's session database (since 1.2): `opencode.db` under
//! `~/.local/share/opencode/`, tables `session`, `message` and `part`
//! (`packages/opencode/src/session/session.sql.ts`), each message and part
//! a JSON `data` column holding what `opencode export` writes as `info` and
//! `parts`. One session per `session` row, its messages in order of
//! `time_created` then `id`, each message's parts in order of `id`; the
//! records are those of the export reader (`opencode.rs`). Newer builds
//! (OpenCode V2) keep a session's history in `session_message` instead:
//! one row per message (`id`, `session_id`, `type`, `seq`, `data`: the
//! message without `id` and `type`; an assistant's `content` holds its
//! texts, reasoning and tool calls with their state), read in order of
//! `seq` for sessions that have no `message` rows. Opened read-only
//! (`sqlite.rs`). Provenance: the database and `/part/<id>` (or
//! `/message/<id>`, `/session_message/<id>`, `/session/<id>`).

use super::common::{pointer, session_rec, Ctx, Out};
use super::sqlite::{cell_needed, cell_text, row_name, Budget, Read};
use super::{opencode, sqlite};
use crate::error::{Error, Result};
use crate::event::Record;
use crate::input::format::{FileSessions, Format};
use crate::input::json::{FieldError, RecordError};
use rusqlite::Connection;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::Path;

/// OpenCode's SQLite store.
pub(crate) struct OpenCodeDb;

impl Format for OpenCodeDb {
    fn name(&self) -> &'static str {
        "opencode-db"
    }
    fn expected(&self) -> &'static str {
        "an OpenCode SQLite database (`opencode.db`, tables `session`, `message`, `part`)"
    }
    fn extensions(&self) -> &'static [&'static str] {
        &[".db"]
    }
    fn read(&self, ctx: &Ctx) -> Result<FileSessions> {
        Err(ctx.file_err(format!("expected {}", self.expected())))
    }
    fn claims_path(&self, path: &Path, is_dir: bool, head: &[u8]) -> bool {
        sqlite::claims(is_dir, head, path, &["session", "message", "part"], |n| {
            n.starts_with("opencode") && n.ends_with(".db")
        })
    }
    fn read_path(&self, path: &Path, ctx: &Ctx) -> Result<FileSessions> {
        sqlite::read_with(path, ctx, read)
    }
}

/// A bad row: strict, the error naming table and row; lenient, a skip.
pub(crate) fn bad_row(
    out: &mut Out,
    ctx: &Ctx,
    table: &str,
    row: &str,
    why: impl std::fmt::Display,
) -> Result<()> {
    let message = format!("table `{table}`, row {row}: {why}");
    if ctx.lenient {
        out.skip(0, message);
        Ok(())
    } else {
        Err(Error::File {
            path: ctx.display.to_string(),
            message,
        })
    }
}

/// The first three cells of `row`, each text that must be there (`names`:
/// the columns, for the message), or why not.
fn three(
    row: &rusqlite::Row,
    names: [&str; 3],
) -> std::result::Result<(String, String, String), sqlite::CellError> {
    Ok((
        cell_needed(row, 0, names[0])?,
        cell_needed(row, 1, names[1])?,
        cell_needed(row, 2, names[2])?,
    ))
}

/// A JSON object from a `data` column, or why not.
pub(crate) fn json_object(
    text: &str,
    field: &str,
) -> std::result::Result<Map<String, Value>, RecordError> {
    match crate::input::json::parse_json(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(FieldError::ty(field, "a JSON object").into()),
        Err(source) => Err(RecordError::FieldNotJson {
            field: field.to_string(),
            source,
        }),
    }
}

fn read(conn: &Connection, ctx: &Ctx) -> std::result::Result<FileSessions, Read> {
    let mut out = Out::new("opencode");
    let mut budget = Budget::of(Path::new(conn.path().unwrap_or_default()));
    // One read transaction: the three tables as of one moment.
    conn.execute_batch("BEGIN")?;
    let cols = sqlite::columns(conn, ctx.display, "session")?;
    let order = if cols.iter().any(|c| c == "time_created") {
        "ORDER BY time_created, id"
    } else {
        "ORDER BY id"
    };
    struct Sess {
        id: String,
        meta: Map<String, Value>,
        parent: Option<String>,
    }
    let mut sessions: Vec<Sess> = Vec::new();
    {
        let mut stmt = conn.prepare(&format!("SELECT * FROM session {order}"))?;
        let mut rows = stmt.query([])?;
        let id_col = cols.iter().position(|c| c == "id").unwrap_or(0);
        let text = |row: &rusqlite::Row, name: &str| match cols.iter().position(|c| c == name) {
            Some(i) => cell_text(row, i, name),
            None => Ok(None),
        };
        let mut n = 0;
        while let Some(row) = rows.next()? {
            n += 1;
            let read = || -> std::result::Result<Sess, sqlite::CellError> {
                let id = cell_needed(row, id_col, "id")?;
                let mut meta = Map::new();
                meta.insert("id".into(), Value::String(id.clone()));
                for f in ["title", "directory", "version"] {
                    if let Some(v) = text(row, f)? {
                        meta.insert(f.into(), Value::String(v));
                    }
                }
                let parent = text(row, "parent_id")?;
                Ok(Sess { id, meta, parent })
            };
            match read() {
                Ok(sess) => {
                    let size = sess.meta.values().filter_map(Value::as_str).map(str::len);
                    budget.take(size.sum(), ctx.display)?;
                    sessions.push(sess);
                }
                Err(why) => bad_row(&mut out, ctx, "session", &row_name(row, id_col, n), why)?,
            }
        }
    }
    // Parts by message, in order of id.
    let mut parts: HashMap<String, Vec<(String, Value)>> = HashMap::new();
    {
        let mut stmt =
            conn.prepare("SELECT id, message_id, data FROM part ORDER BY message_id, id")?;
        let mut rows = stmt.query([])?;
        let mut n = 0;
        while let Some(row) = rows.next()? {
            n += 1;
            let (id, message, data) = match three(row, ["id", "message_id", "data"]) {
                Ok(cells) => cells,
                Err(why) => {
                    bad_row(&mut out, ctx, "part", &row_name(row, 0, n), why)?;
                    continue;
                }
            };
            budget.take(id.len() + message.len() + data.len(), ctx.display)?;
            match json_object(&data, "data") {
                Ok(m) => parts
                    .entry(message)
                    .or_default()
                    .push((id, Value::Object(m))),
                Err(why) => bad_row(&mut out, ctx, "part", &id, why)?,
            }
        }
    }
    // Messages by session, in order of creation.
    type Rows = Vec<(String, Map<String, Value>)>;
    let mut messages: HashMap<String, Rows> = HashMap::new();
    {
        let mut stmt = conn.prepare(
            "SELECT id, session_id, data FROM message ORDER BY session_id, time_created, id",
        )?;
        let mut rows = stmt.query([])?;
        let mut n = 0;
        while let Some(row) = rows.next()? {
            n += 1;
            let (id, session, data) = match three(row, ["id", "session_id", "data"]) {
                Ok(cells) => cells,
                Err(why) => {
                    bad_row(&mut out, ctx, "message", &row_name(row, 0, n), why)?;
                    continue;
                }
            };
            budget.take(id.len() + session.len() + data.len(), ctx.display)?;
            match json_object(&data, "data") {
                Ok(m) => messages.entry(session).or_default().push((id, m)),
                Err(why) => bad_row(&mut out, ctx, "message", &id, why)?,
            }
        }
    }
    // Newer builds (OpenCode V2, `packages/core/src/session/sql.ts`) keep a
    // session's history in `session_message`: one row per message, its
    // content inside the row. Read for the sessions `message` does not hold
    // (a session kept in both is the same history twice).
    let projected: bool = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'session_message'",
        [],
        |r| r.get::<_, i64>(0).map(|n| n > 0),
    )?;
    let mut history: HashMap<String, Vec<Projected>> = HashMap::new();
    if projected {
        let cols = sqlite::columns(conn, ctx.display, "session_message")?;
        let order = if cols.iter().any(|c| c == "seq") {
            "ORDER BY session_id, seq, id"
        } else {
            "ORDER BY session_id, time_created, id"
        };
        let mut stmt = conn.prepare(&format!(
            "SELECT id, session_id, type, data FROM session_message {order}"
        ))?;
        let mut rows = stmt.query([])?;
        let mut n = 0;
        while let Some(row) = rows.next()? {
            n += 1;
            let cells = three(row, ["id", "session_id", "type"]).and_then(|(id, session, kind)| {
                Ok((id, session, kind, cell_needed(row, 3, "data")?))
            });
            let (id, session, kind, data) = match cells {
                Ok(cells) => cells,
                Err(why) => {
                    bad_row(&mut out, ctx, "session_message", &row_name(row, 0, n), why)?;
                    continue;
                }
            };
            budget.take(
                id.len() + session.len() + kind.len() + data.len(),
                ctx.display,
            )?;
            if messages.contains_key(&session) {
                continue;
            }
            match json_object(&data, "data") {
                Ok(data) => history
                    .entry(session)
                    .or_default()
                    .push(Projected { id, kind, data }),
                Err(why) => bad_row(&mut out, ctx, "session_message", &id, why)?,
            }
        }
    }
    conn.execute_batch("COMMIT")?;
    for sess in sessions {
        let sid = sess.id.clone();
        out.open(&sid);
        let msgs = messages.remove(&sid).unwrap_or_default();
        let model = msgs.iter().rev().find_map(|(_, m)| {
            m.get("modelID")
                .or_else(|| m.get("model").and_then(|x| x.get("modelID")))
                .and_then(Value::as_str)
                .map(str::to_string)
        });
        let projected = history.remove(&sid).unwrap_or_default();
        let model = model.or_else(|| {
            projected.iter().rev().find_map(|m| {
                m.data
                    .get("model")
                    .and_then(|x| x.get("id"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
        });
        if let Some(p) = sess.parent {
            out.meta(&sid, "parent_session", Value::String(p));
        }
        out.at(Some(pointer(&["session", sid.as_str()])));
        out.push(&sid, session_rec("opencode", model, sess.meta), 0);
        for (mid, info) in msgs {
            let ps = parts.remove(&mid).unwrap_or_default();
            out.at(Some(pointer(&["message", mid.as_str()])));
            match info.get("role").and_then(Value::as_str) {
                Some("user") => out.push(
                    &sid,
                    Record::User {
                        text: opencode::user_text(ps.iter().map(|(_, p)| p)),
                        prompt_id: Some(mid.clone()),
                    },
                    0,
                ),
                Some("assistant") => {
                    if !opencode::stepped(ps.iter().map(|(_, p)| p)) {
                        out.push(&sid, Record::Turn, 0);
                    }
                    for (pid, p) in &ps {
                        if let Some(p) = p.as_object() {
                            out.at(Some(pointer(&["part", pid.as_str()])));
                            opencode::part(&mut out, &sid, 0, p);
                        }
                    }
                }
                _ => out.unknown(),
            }
        }
        for m in projected {
            out.at(Some(pointer(&["session_message", m.id.as_str()])));
            projected_message(&mut out, &sid, &m);
        }
    }
    Ok(out.finish())
}

/// A row of `session_message`: its id, `type` and `data` (the message
/// without `id` and `type`).
struct Projected {
    id: String,
    kind: String,
    data: Map<String, Value>,
}

/// One `session_message` row as records. `user` is the prompt (`text`);
/// `assistant` is one model step: a turn, then its `content` (`text`,
/// `reasoning`, `tool` with the call's `state`), each item given to the
/// export reader's part mapping in the part shape it reads. Rows that are
/// no conversation (`system`, `synthetic`, `shell`, `compaction`, agent and
/// model switches) are skipped; any other type is counted as unknown.
fn projected_message(out: &mut Out, sid: &str, m: &Projected) {
    match m.kind.as_str() {
        "user" => out.push(
            sid,
            Record::User {
                text: m
                    .data
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                prompt_id: Some(m.id.clone()),
            },
            0,
        ),
        "assistant" => {
            out.push(sid, Record::Turn, 0);
            let content = m.data.get("content").and_then(Value::as_array);
            for item in content.into_iter().flatten() {
                if let Some(p) = item.as_object().map(as_part) {
                    opencode::part(out, sid, 0, &p);
                }
            }
            if let Some(tokens) = m.data.get("tokens").filter(|t| t.is_object()) {
                let mut p = Map::new();
                p.insert("type".into(), Value::String("step-finish".into()));
                p.insert("tokens".into(), tokens.clone());
                opencode::part(out, sid, 0, &p);
            }
        }
        "system" | "synthetic" | "shell" | "compaction" | "agent-switched" | "model-switched"
        | "agent-selected" | "model-selected" | "location-switched" => {}
        _ => out.unknown(),
    }
}

/// An assistant content item of `session_message` in the part shape of
/// `message`/`part` (`opencode.rs`): a tool's `name` becomes `tool`, its
/// `callID` (else `id`) the call id, and its state's `content` texts (or an
/// error's `message`) the `output` / `error`.
fn as_part(item: &Map<String, Value>) -> Map<String, Value> {
    if item.get("type").and_then(Value::as_str) != Some("tool") {
        return item.clone();
    }
    let mut p = Map::new();
    p.insert("type".into(), Value::String("tool".into()));
    let name = item.get("name").or_else(|| item.get("tool")).cloned();
    p.insert("tool".into(), name.unwrap_or(Value::Null));
    if let Some(id) = item.get("callID").or_else(|| item.get("id")) {
        p.insert("callID".into(), id.clone());
    }
    let state = item.get("state").and_then(Value::as_object);
    if let Some(st) = state {
        let mut out = Map::new();
        for k in ["status", "input"] {
            if let Some(v) = st.get(k) {
                out.insert(k.into(), v.clone());
            }
        }
        let text = |v: &Value| -> Option<String> {
            match v {
                Value::String(s) => Some(s.clone()),
                Value::Array(items) => Some(
                    items
                        .iter()
                        .filter_map(|c| c.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
                Value::Object(o) => o.get("message").and_then(Value::as_str).map(str::to_string),
                _ => None,
            }
        };
        if let Some(o) = st
            .get("output")
            .or_else(|| st.get("content"))
            .and_then(text)
        {
            out.insert("output".into(), Value::String(o));
        }
        if let Some(e) = st.get("error").and_then(text) {
            out.insert("error".into(), Value::String(e));
        }
        p.insert("state".into(), Value::Object(out));
    }
    p
}
