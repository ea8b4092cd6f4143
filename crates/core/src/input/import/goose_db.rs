//! Goose's session database (since 1.10): `sessions.db` under
//! `~/.local/share/goose/sessions/`, tables `sessions` and `messages`
//! (`crates/goose/src/session/session_manager.rs`: `messages.content_json`
//! holds a message's content parts as the JSONL form stores them). One
//! session per `sessions` row, its messages in order of `id` (the order
//! Goose appends them); the records are those of the JSONL reader
//! (`goose.rs`). Opened read-only (`sqlite.rs`). Provenance: the database
//! and `/messages/<id>`.

use super::common::{pointer, session_rec, Ctx, Out};
use super::opencode_db::bad_row;
use super::sqlite::Read;
use super::{goose, sqlite};
use crate::error::Result;
use crate::input::format::{FileSessions, Format};
use rusqlite::Connection;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::Path;

/// Goose's SQLite store.
pub(crate) struct GooseDb;

impl Format for GooseDb {
    fn name(&self) -> &'static str {
        "goose-db"
    }
    fn expected(&self) -> &'static str {
        "a Goose SQLite database (`sessions.db`, tables `sessions`, `messages`)"
    }
    fn extensions(&self) -> &'static [&'static str] {
        &[".db"]
    }
    fn read(&self, ctx: &Ctx) -> Result<FileSessions> {
        Err(ctx.file_err(format!("expected {}", self.expected())))
    }
    fn claims_path(&self, path: &Path, is_dir: bool, head: &[u8]) -> bool {
        sqlite::claims(
            is_dir,
            head,
            path,
            &["sessions", "messages", "schema_version"],
            |n| n == "sessions.db",
        )
    }
    fn read_path(&self, path: &Path, ctx: &Ctx) -> Result<FileSessions> {
        sqlite::read_with(path, ctx, read)
    }
}

fn read(conn: &Connection, ctx: &Ctx) -> std::result::Result<FileSessions, Read> {
    let mut out = Out::new("goose");
    let mut budget = sqlite::Budget::of(Path::new(conn.path().unwrap_or_default()));
    conn.execute_batch("BEGIN")?;
    let cols = sqlite::columns(conn, ctx.display, "sessions")?;
    let order = if cols.iter().any(|c| c == "created_at") {
        "ORDER BY created_at, id"
    } else {
        "ORDER BY id"
    };
    let mut sessions: Vec<(String, Map<String, Value>, Option<String>)> = Vec::new();
    {
        let mut stmt = conn.prepare(&format!("SELECT * FROM sessions {order}"))?;
        let mut rows = stmt.query([])?;
        // A text cell of a column this version of the table may lack.
        let text = |row: &rusqlite::Row, name: &str| match cols.iter().position(|c| c == name) {
            Some(i) => sqlite::cell_text(row, i, name),
            None => Ok(None),
        };
        let id_col = cols.iter().position(|c| c == "id").unwrap_or(0);
        let mut n = 0;
        while let Some(row) = rows.next()? {
            n += 1;
            // A cell of the wrong type names the row (strict) or skips it.
            let cells = || -> std::result::Result<_, sqlite::CellError> {
                let id = text(row, "id")?.unwrap_or_default();
                let mut fields = Vec::new();
                for f in [
                    "working_dir",
                    "description",
                    "name",
                    "provider_name",
                    "session_type",
                    "model_config_json",
                ] {
                    fields.push((f, text(row, f)?));
                }
                Ok((id, fields))
            };
            let (id, fields) = match cells() {
                Ok(cells) => cells,
                Err(why) => {
                    let name = sqlite::row_name(row, id_col, n);
                    bad_row(&mut out, ctx, "sessions", &name, why)?;
                    continue;
                }
            };
            let field = |f: &str| {
                fields
                    .iter()
                    .find(|(name, _)| *name == f)
                    .and_then(|(_, v)| v.clone())
            };
            let mut m = Map::new();
            m.insert("id".into(), Value::String(id.clone()));
            for f in ["working_dir", "description", "name"] {
                if let Some(v) = field(f) {
                    m.insert(f.into(), Value::String(v));
                }
            }
            let mut meta = goose::meta_of(&m);
            for f in ["provider_name", "session_type"] {
                if let Some(v) = field(f) {
                    meta.insert(f.into(), Value::String(v));
                }
            }
            let model = field("model_config_json")
                .and_then(|j| serde_json::from_str::<Value>(&j).ok())
                .and_then(|v| v.get("model_name")?.as_str().map(str::to_string));
            sessions.push((id, meta, model));
        }
    }
    // Messages by session: (row id, message as the JSONL form holds it).
    type Rows = Vec<(i64, Map<String, Value>)>;
    let mut messages: HashMap<String, Rows> = HashMap::new();
    {
        let mut stmt = conn.prepare(
            "SELECT id, session_id, role, content_json, created_timestamp FROM messages ORDER BY session_id, id",
        )?;
        let mut rows = stmt.query([])?;
        let mut n = 0;
        while let Some(row) = rows.next()? {
            n += 1;
            let cells = || -> std::result::Result<_, sqlite::CellError> {
                let id = sqlite::cell_int(row, 0, "id")?
                    .ok_or_else(|| sqlite::CellError("column `id` is NULL".into()))?;
                Ok((
                    id,
                    sqlite::cell_needed(row, 1, "session_id")?,
                    sqlite::cell_needed(row, 2, "role")?,
                    sqlite::cell_needed(row, 3, "content_json")?,
                    sqlite::cell_int(row, 4, "created_timestamp")?,
                ))
            };
            let (id, session, role, content, created) = match cells() {
                Ok(cells) => cells,
                Err(why) => {
                    let name = sqlite::row_name(row, 0, n);
                    bad_row(&mut out, ctx, "messages", &name, why)?;
                    continue;
                }
            };
            budget.take(session.len() + role.len() + content.len(), ctx.display)?;
            let content = match crate::input::json::parse_json(&content) {
                Ok(v) => v,
                Err(e) => {
                    bad_row(
                        &mut out,
                        ctx,
                        "messages",
                        &id.to_string(),
                        format!("field `content_json` is not JSON: {e}"),
                    )?;
                    continue;
                }
            };
            let mut m = Map::new();
            m.insert("role".into(), Value::String(role));
            m.insert("created".into(), created.map_or(Value::Null, Value::from));
            m.insert("content".into(), content);
            messages.entry(session).or_default().push((id, m));
        }
    }
    conn.execute_batch("COMMIT")?;
    for (sid, meta, model) in sessions {
        out.open(&sid);
        out.at(Some(pointer(&["sessions", sid.as_str()])));
        out.push(&sid, session_rec("goose", model, meta), 0);
        let mut names: HashMap<String, String> = HashMap::new();
        for (id, m) in messages.remove(&sid).unwrap_or_default() {
            let row = id.to_string();
            out.at(Some(pointer(&["messages", row.as_str()])));
            if let Err(e) = goose::message(&mut out, &sid, 0, &m, &mut names) {
                bad_row(&mut out, ctx, "messages", &row, e)?;
            }
        }
    }
    Ok(out.finish())
}
