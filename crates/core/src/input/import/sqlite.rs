//! What the database readers share: a SQLite file opened read-only, so a
//! running agent is never disturbed: no write, no journal, no lock held
//! beyond one read transaction (in WAL mode, the agents' default, a reader
//! never blocks a writer). A writer that holds the database locked (a
//! rollback-journal database in the middle of a commit) is waited for a
//! moment, then the read stops with an error naming the file.

use crate::error::{Error, Result};
use crate::input::format::FileSessions;
use crate::input::import::common::Ctx;
use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::time::Duration;

/// How long a read waits for a writer's lock before giving up.
const BUSY_WAIT: Duration = Duration::from_millis(1500);

/// The SQLite header every database file starts with.
pub(crate) const MAGIC: &[u8] = b"SQLite format 3\0";

/// Open `path` read-only; `display` names it in errors. No value SQLite
/// makes may be longer than the database may yield in all ([`yield_cap`]):
/// a generated column (`printf('%.*c', 200000000, 'x')`) is refused by
/// SQLite itself as it grows, before it is in memory.
pub(crate) fn open(path: &Path, display: &str) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| db_err(display, &e))?;
    conn.busy_timeout(BUSY_WAIT)
        .map_err(|e| db_err(display, &e))?;
    let cap = yield_cap(path).min(i32::MAX as u64) as i32;
    conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH, cap)
        .map_err(|e| db_err(display, &e))?;
    Ok(conn)
}

/// Most bytes of cell text one database may yield, as a compressed file may
/// inflate to (`format::caps`): `--max-gzip-bytes`, and at most
/// `--max-gzip-ratio` times the file's size past `RATIO_FLOOR`. A cell's
/// text is stored as it is (SQLite does not compress), so a real database
/// yields about its own size.
pub(crate) fn yield_cap(path: &Path) -> u64 {
    let caps = crate::input::format::caps();
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    caps.max_bytes.min(
        size.saturating_mul(caps.max_ratio)
            .max(crate::input::format::RATIO_FLOOR),
    )
}

/// What a read has taken from a database, against [`yield_cap`].
pub(crate) struct Budget {
    left: u64,
    cap: u64,
}

impl Budget {
    pub(crate) fn of(path: &Path) -> Budget {
        let cap = yield_cap(path);
        Budget { left: cap, cap }
    }

    /// Take `n` bytes; past the cap, the error that stops the read.
    pub(crate) fn take(&mut self, n: usize, display: &str) -> std::result::Result<(), Read> {
        match self.left.checked_sub(n as u64) {
            Some(left) => {
                self.left = left;
                Ok(())
            }
            None => Err(Read::Stop(Error::File {
                path: display.to_string(),
                message: format!(
                    "the database yields more than {} bytes of text, the cap for a file of its size (--max-gzip-bytes, and --max-gzip-ratio times its size): not read",
                    self.cap
                ),
            })),
        }
    }
}

/// Why a cell cannot be read as its column should hold: the column and
/// what it holds, for the message naming the table and row.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct CellError(pub(crate) String);

/// A text cell (NULL: `None`), or why not.
pub(crate) fn cell_text(
    row: &rusqlite::Row,
    i: usize,
    name: &str,
) -> std::result::Result<Option<String>, CellError> {
    use rusqlite::types::ValueRef;
    match row.get_ref(i) {
        Ok(ValueRef::Null) => Ok(None),
        Ok(ValueRef::Text(b)) => match std::str::from_utf8(b) {
            Ok(s) => Ok(Some(s.to_string())),
            Err(e) => Err(CellError(format!(
                "column `{name}` is not valid UTF-8 ({e})"
            ))),
        },
        Ok(v) => Err(CellError(format!(
            "column `{name}` holds {}, not text",
            kind(v.data_type())
        ))),
        Err(e) => Err(CellError(format!("column `{name}`: {e}"))),
    }
}

/// [`cell_text`] of a column that must hold a value.
pub(crate) fn cell_needed(
    row: &rusqlite::Row,
    i: usize,
    name: &str,
) -> std::result::Result<String, CellError> {
    cell_text(row, i, name)?.ok_or_else(|| CellError(format!("column `{name}` is NULL")))
}

/// An integer cell (NULL: `None`), or why not.
pub(crate) fn cell_int(
    row: &rusqlite::Row,
    i: usize,
    name: &str,
) -> std::result::Result<Option<i64>, CellError> {
    use rusqlite::types::ValueRef;
    match row.get_ref(i) {
        Ok(ValueRef::Null) => Ok(None),
        Ok(ValueRef::Integer(n)) => Ok(Some(n)),
        Ok(v) => Err(CellError(format!(
            "column `{name}` holds {}, not an integer",
            kind(v.data_type())
        ))),
        Err(e) => Err(CellError(format!("column `{name}`: {e}"))),
    }
}

/// How a row is named in a message: its `id` cell when it can be read,
/// else its place in the read (`#N`).
pub(crate) fn row_name(row: &rusqlite::Row, id_col: usize, n: usize) -> String {
    use rusqlite::types::ValueRef;
    match row.get_ref(id_col) {
        Ok(ValueRef::Text(b)) => match std::str::from_utf8(b) {
            Ok(s) => s.to_string(),
            Err(_) => format!("#{n}"),
        },
        Ok(ValueRef::Integer(i)) => i.to_string(),
        _ => format!("#{n}"),
    }
}

fn kind(t: rusqlite::types::Type) -> &'static str {
    use rusqlite::types::Type;
    match t {
        Type::Null => "NULL",
        Type::Integer => "an INTEGER",
        Type::Real => "a REAL",
        Type::Text => "TEXT",
        Type::Blob => "a BLOB",
    }
}

/// Whether a database format claims this path: a file (`is_dir` false)
/// whose `head` is a SQLite header and that [`has_tables`] every one of
/// `tables` (`name_is`: the file names it goes by when locked).
pub(crate) fn claims(
    is_dir: bool,
    head: &[u8],
    path: &Path,
    tables: &[&str],
    name_is: fn(&str) -> bool,
) -> bool {
    !is_dir && head.starts_with(MAGIC) && has_tables(path, tables, name_is)
}

/// Open `path` read-only and read it with `read` (inside which a database
/// error is `?`-able): a database error names the file, a bad row's error
/// (strict) is returned as it is.
pub(crate) fn read_with(
    path: &Path,
    ctx: &Ctx,
    read: fn(&Connection, &Ctx) -> std::result::Result<FileSessions, Read>,
) -> Result<FileSessions> {
    let conn = open(path, ctx.display)?;
    read(&conn, ctx).map_err(|e| match e {
        Read::Db(e) => db_err(ctx.display, &e),
        Read::Stop(e) => e,
    })
}

/// Why a read stopped: the database, or a bad row (strict).
pub(crate) enum Read {
    Db(rusqlite::Error),
    Stop(Error),
}

impl From<rusqlite::Error> for Read {
    fn from(e: rusqlite::Error) -> Read {
        Read::Db(e)
    }
}

impl From<Error> for Read {
    fn from(e: Error) -> Read {
        Read::Stop(e)
    }
}

/// The text of column `name` of `row` (`cols`: the table's columns, in
/// order); `None` for NULL or a column this version of the table lacks.
pub(crate) fn text_col(
    row: &rusqlite::Row,
    cols: &[String],
    name: &str,
) -> rusqlite::Result<Option<String>> {
    match cols.iter().position(|c| c == name) {
        Some(i) => row.get::<_, Option<String>>(i),
        None => Ok(None),
    }
}

/// Whether the database at `path` has every table in `tables` (a quick
/// look at its schema, for detection). A database a writer holds locked
/// cannot show its schema: then its file name decides (`name_is`), and the
/// read that follows says it is locked.
pub(crate) fn has_tables(path: &Path, tables: &[&str], name_is: fn(&str) -> bool) -> bool {
    let Ok(conn) = open(path, "") else {
        return false;
    };
    let mut locked = false;
    let all = tables.iter().all(|t| {
        match conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [t],
            |r| r.get::<_, i64>(0),
        ) {
            Ok(n) => n > 0,
            Err(e) => {
                locked |= is_locked(&e);
                false
            }
        }
    });
    all || (locked
        && path
            .file_name()
            .is_some_and(|n| name_is(&n.to_string_lossy())))
}

/// Whether an error is a writer's lock.
fn is_locked(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode;
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// The names of a table's columns.
pub(crate) fn columns(conn: &Connection, display: &str, table: &str) -> Result<Vec<String>> {
    let mut stmt = conn
        .prepare(&format!("PRAGMA table_info(\"{table}\")"))
        .map_err(|e| db_err(display, &e))?;
    let names = stmt
        .query_map([], |r| r.get::<_, String>(1))
        .map_err(|e| db_err(display, &e))?
        .collect::<rusqlite::Result<Vec<String>>>()
        .map_err(|e| db_err(display, &e))?;
    Ok(names)
}

/// A database error as the user's message: a lock says so plainly.
pub(crate) fn db_err(display: &str, e: &rusqlite::Error) -> Error {
    let too_big = matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::TooBig));
    let message = if is_locked(e) {
        format!(
            "the database is locked by a writer (waited {} ms; read it again when the agent is idle)",
            BUSY_WAIT.as_millis()
        )
    } else if too_big {
        "a cell is longer than the cap on what a database of this size may yield (--max-gzip-bytes, and --max-gzip-ratio times its size): not read".to_string()
    } else {
        format!("cannot read the SQLite database: {e}")
    };
    Error::File {
        path: display.to_string(),
        message,
    }
}
