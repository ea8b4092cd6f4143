//! What the database readers share: a SQLite file opened read-only, so a
//! running agent is never disturbed and nothing is written beside the
//! user's database (no `-shm`, no `-wal`: read-only media read too). How
//! depends on what lies beside the file ([`how`]):
//! - a WAL database with no `-wal` content: opened immutable, without locks
//!   or side files (all it holds is in the main file, which a writer only
//!   changes at a checkpoint, not during a read);
//! - a WAL database whose `-wal` and `-shm` both exist (an agent has it
//!   open): opened as any reader would, sharing the agent's index (a reader
//!   never blocks a writer, and the files it needs are there);
//! - a WAL database whose `-wal` holds content but has no `-shm` (an agent
//!   that stopped short of its checkpoint, or a copied folder): the two
//!   files are copied to a private folder and read there, since immutable
//!   would miss the WAL's commits and a plain read would make a `-shm`;
//! - a rollback-journal database: opened as any reader would (its locks
//!   keep a writer from changing the file under the read; a writer's lock
//!   is waited for a moment, then the read stops naming the file; a hot
//!   journal, which only a writer can roll back, is named).
//!
//! A file shorter than its header says is refused as truncated before
//! SQLite sees it.

use crate::error::{Error, Result};
use crate::input::format::FileSessions;
use crate::input::import::common::Ctx;
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a read waits for a writer's lock before giving up.
const BUSY_WAIT: Duration = Duration::from_millis(1500);

/// The SQLite header every database file starts with.
pub(crate) const MAGIC: &[u8] = b"SQLite format 3\0";

/// An open database; when it is read from a private copy, the copy's
/// folder, removed after the connection closes (fields drop in order).
pub(crate) struct Db {
    pub(crate) conn: Connection,
    _copy: Option<tempfile::TempDir>,
}

/// How a database is opened (see the module's docs).
#[derive(Debug, PartialEq)]
enum How {
    Plain,
    Immutable,
    Copy,
}

/// `path` with `suffix` appended to its file name (`-wal`, `-shm`, `-journal`).
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The size of a file, `None` when there is none.
fn size(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.len())
}

/// How to open `path`, or what is wrong with it (truncated); `display`
/// names it in errors.
fn how(path: &Path, display: &str) -> Result<How> {
    use std::io::Read;
    let file_err = |message: String| Error::File {
        path: display.to_string(),
        message,
    };
    let mut head = [0u8; 100];
    let mut f = std::fs::File::open(path)
        .map_err(|e| file_err(format!("cannot open the database: {e}")))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut got = 0;
    while got < head.len() {
        match f.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => return Err(file_err(format!("cannot read the database: {e}"))),
        }
    }
    if got < head.len() {
        return Err(file_err(format!(
            "the database is truncated: {len} bytes, shorter than a SQLite header (100)"
        )));
    }
    let wal_mode = head[18] == 2 || head[19] == 2;
    let wal = size(&beside(path, "-wal"));
    if wal_mode && wal.is_some() && size(&beside(path, "-shm")).is_some() {
        return Ok(How::Plain);
    }
    if wal_mode && wal.unwrap_or(0) > 0 {
        return Ok(How::Copy);
    }
    // The main file holds everything: it must be as long as it says.
    if let Some(why) = truncated(&head, len) {
        return Err(file_err(why));
    }
    Ok(if wal_mode { How::Immutable } else { How::Plain })
}

/// Why a main file is shorter than its header says, if it is: the page
/// count at 28 counts when the change counter at 24 matches the one at 92
/// (SQLite's own rule); else the file must hold whole pages.
fn truncated(head: &[u8; 100], len: u64) -> Option<String> {
    let page = match u16::from_be_bytes([head[16], head[17]]) {
        1 => 65536,
        n => u64::from(n),
    };
    if page < 512 {
        return None;
    }
    let pages = u64::from(u32::from_be_bytes([head[28], head[29], head[30], head[31]]));
    if pages > 0 && head[24..28] == head[92..96] {
        let want = pages * page;
        return (len < want).then(|| {
            format!(
                "the database is truncated: its header gives {pages} pages of {page} bytes ({want} bytes), the file holds {len}"
            )
        });
    }
    (!len.is_multiple_of(page)).then(|| {
        format!(
            "the database is truncated: {len} bytes, not a whole number of its {page}-byte pages"
        )
    })
}

/// Open `path` read-only ([`how`]); `display` names it in errors. No value
/// SQLite makes may be longer than the database may yield in all
/// ([`yield_cap`]): a generated column (`printf('%.*c', 200000000, 'x')`)
/// is refused by SQLite itself as it grows, before it is in memory.
pub(crate) fn open(path: &Path, display: &str) -> Result<Db> {
    let file_err = |message: String| Error::File {
        path: display.to_string(),
        message,
    };
    let ro = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let (conn, copy) = match how(path, display)? {
        How::Plain => (Connection::open_with_flags(path, ro), None),
        How::Immutable => {
            // A URI names the file; `%`, `?` and `#` in a path are escaped.
            let mut uri = String::from("file:");
            for c in path.to_string_lossy().chars() {
                match c {
                    '%' | '?' | '#' => uri.push_str(&format!("%{:02X}", c as u32)),
                    c => uri.push(c),
                }
            }
            uri.push_str("?immutable=1");
            (
                Connection::open_with_flags(uri, ro | OpenFlags::SQLITE_OPEN_URI),
                None,
            )
        }
        How::Copy => {
            let copy_err = |e: std::io::Error| {
                file_err(format!(
                    "cannot copy the database and its uncheckpointed `-wal` to a private folder to read them (so as to write nothing beside it): {e}"
                ))
            };
            let dir = tempfile::Builder::new()
                .prefix(".looptune-db-")
                .tempdir()
                .map_err(copy_err)?;
            let to = dir.path().join("copy.db");
            std::fs::copy(path, &to).map_err(copy_err)?;
            std::fs::copy(beside(path, "-wal"), beside(&to, "-wal")).map_err(copy_err)?;
            // The copy is ours: a read-write open may recover its WAL.
            let rw = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            (Connection::open_with_flags(&to, rw), Some(dir))
        }
    };
    let conn = conn.map_err(|e| db_err(display, &e))?;
    conn.busy_timeout(BUSY_WAIT)
        .map_err(|e| db_err(display, &e))?;
    let cap = yield_cap(path).min(i32::MAX as u64) as i32;
    conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH, cap)
        .map_err(|e| db_err(display, &e))?;
    Ok(Db { conn, _copy: copy })
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
    let db = open(path, ctx.display)?;
    read(&db.conn, ctx).map_err(|e| match e {
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

/// Whether the database at `path` has every table in `tables` (a quick
/// look at its schema, for detection). A database that cannot show its
/// schema (a writer holds it locked, a hot journal, truncated, damaged):
/// then its file name decides (`name_is`), and the read that follows says
/// what is wrong.
pub(crate) fn has_tables(path: &Path, tables: &[&str], name_is: fn(&str) -> bool) -> bool {
    let by_name = || {
        path.file_name()
            .is_some_and(|n| name_is(&n.to_string_lossy()))
    };
    let Ok(db) = open(path, "") else {
        return by_name();
    };
    let mut failed = false;
    let all = tables.iter().all(|t| {
        match db.conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [t],
            |r| r.get::<_, i64>(0),
        ) {
            Ok(n) => n > 0,
            Err(_) => {
                failed = true;
                false
            }
        }
    });
    all || (failed && by_name())
}

/// What is wrong with a SQLite file no format claimed, if anything: the
/// message a read of it would stop with (truncated, a hot journal, damaged),
/// or `None` for a sound database that simply is no agent's.
pub(crate) fn trouble(path: &Path) -> Option<String> {
    let db = match open(path, "") {
        Ok(db) => db,
        Err(Error::File { message, .. }) => return Some(message),
        Err(e) => return Some(e.to_string()),
    };
    match db
        .conn
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| {
            r.get::<_, i64>(0)
        }) {
        Ok(_) => None,
        Err(e) => match db_err("", &e) {
            Error::File { message, .. } => Some(message),
            e => Some(e.to_string()),
        },
    }
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

/// A database error as the user's message: a lock, a hot journal and a
/// damaged file say so plainly.
pub(crate) fn db_err(display: &str, e: &rusqlite::Error) -> Error {
    use rusqlite::ErrorCode;
    let extended = match e {
        rusqlite::Error::SqliteFailure(f, _) => f.extended_code,
        _ => 0,
    };
    let message = if is_locked(e) {
        format!(
            "the database is locked by a writer (waited {} ms; read it again when the agent is idle)",
            BUSY_WAIT.as_millis()
        )
    } else if extended == rusqlite::ffi::SQLITE_READONLY_ROLLBACK {
        "the database has a hot journal (its `-journal` file beside it): a write to it was cut short, and only a writer may roll that back; open it once with its agent or `sqlite3`, then read it again".to_string()
    } else {
        match e.sqlite_error_code() {
            Some(ErrorCode::TooBig) => "a cell is longer than the cap on what a database of this size may yield (--max-gzip-bytes, and --max-gzip-ratio times its size): not read".to_string(),
            Some(ErrorCode::DatabaseCorrupt) => format!("the database is damaged ({e}): not read"),
            Some(ErrorCode::NotADatabase) => format!("the file has a SQLite header but is not a database ({e})"),
            _ => format!("cannot read the SQLite database: {e}"),
        }
    };
    Error::File {
        path: display.to_string(),
        message,
    }
}
