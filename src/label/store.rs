//! The labels file as the labeller edits it: every decision is written at
//! once, atomically, and everything already in the file (other sessions' rows,
//! extra columns such as `confidence` or `note`, the header, quoting) is kept
//! byte for byte unless the row itself changes.
//!
//! The file is read first with [`crate::input::labels::read_labels_file`], so what
//! the labeller accepts is exactly what `sweep --labels` accepts, with the
//! same `FILE:LINE: field` errors.

use crate::error::{Error, Result};
use crate::event::Label;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One row of the file: its original bytes (until it changes) and its cells.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    /// The row exactly as read, line end included; `None` once edited.
    raw: Option<String>,
    /// CSV cells in header order (CSV files).
    cells: Vec<String>,
    /// The object (JSONL files), key order kept.
    object: Map<String, Value>,
    /// Session id.
    session: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Csv,
    Jsonl,
}

/// What [`LabelStore::set`] replaced, so that [`LabelStore::undo`] can put it back.
#[derive(Debug, Clone, PartialEq)]
pub struct Undo {
    session: String,
    /// The row before the change (`None`: the session had no row).
    before: Option<Row>,
}

impl Undo {
    /// The session the undone decision was about.
    pub fn session(&self) -> &str {
        &self.session
    }
}

/// A labels file open for editing.
#[derive(Debug)]
pub struct LabelStore {
    path: PathBuf,
    kind: Kind,
    /// CSV header as read (kept byte for byte) or `None` for a new file.
    header_raw: Option<String>,
    /// Column names, `session`, `label` and `onset_turn` among them.
    columns: Vec<String>,
    rows: Vec<Row>,
}

impl LabelStore {
    /// Open `path` (a missing file is a new, empty one; it is created on the
    /// first decision). A file `sweep --labels` would refuse is refused here
    /// with the same error.
    pub fn open(path: &Path) -> Result<LabelStore> {
        let kind = match path
            .extension()
            .map(|e| e.to_string_lossy().to_lowercase())
            .as_deref()
        {
            Some("jsonl" | "json") => Kind::Jsonl,
            _ => Kind::Csv,
        };
        let mut store = LabelStore {
            path: path.to_path_buf(),
            kind,
            header_raw: None,
            columns: vec!["session".into(), "label".into(), "onset_turn".into()],
            rows: Vec::new(),
        };
        if !path.exists() {
            return Ok(store);
        }
        // Validate exactly as the sweep will.
        crate::input::labels::read_labels_file(path, false, &mut Vec::new())?;
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        match kind {
            Kind::Csv => store.parse_csv(&text)?,
            Kind::Jsonl => store.parse_jsonl(&text)?,
        }
        Ok(store)
    }

    fn parse_csv(&mut self, text: &str) -> Result<()> {
        let display = self.path.display().to_string();
        let bad = |e: csv::Error| Error::File {
            path: display.clone(),
            message: format!("bad CSV ({e})"),
        };
        let mut rdr = csv::ReaderBuilder::new()
            .flexible(true)
            .from_reader(text.as_bytes());
        let header = rdr.headers().map_err(bad)?.clone();
        self.columns = header.iter().map(|h| h.trim().to_string()).collect();
        let mut starts = Vec::new();
        let mut records = Vec::new();
        for rec in rdr.records() {
            let rec = rec.map_err(bad)?;
            starts.push(rec.position().map_or(0, |p| p.byte()) as usize);
            records.push(rec);
        }
        let header_end = starts.first().copied().unwrap_or(text.len());
        self.header_raw = Some(text[..header_end].to_string());
        let s = self.col("session").expect("checked by the reader");
        for (i, rec) in records.iter().enumerate() {
            let end = starts.get(i + 1).copied().unwrap_or(text.len());
            let cells: Vec<String> = rec.iter().map(str::to_string).collect();
            self.rows.push(Row {
                raw: Some(text[starts[i]..end].to_string()),
                session: cells.get(s).map_or("", |c| c.trim()).to_string(),
                cells,
                object: Map::new(),
            });
        }
        if self.col("onset_turn").is_none() {
            // A file without the column gains it (empty for existing rows).
            self.columns.push("onset_turn".into());
            self.header_raw = None;
        }
        Ok(())
    }

    fn parse_jsonl(&mut self, text: &str) -> Result<()> {
        let mut rest = text;
        while !rest.is_empty() {
            let end = rest.find('\n').map_or(rest.len(), |i| i + 1);
            let (line, tail) = rest.split_at(end);
            rest = tail;
            let object = match serde_json::from_str::<Value>(line.trim()) {
                Ok(Value::Object(o)) => o,
                // Blank lines (the reader skips them) stay where they are.
                _ => Map::new(),
            };
            let session = object
                .get("session")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            self.rows.push(Row {
                raw: Some(line.to_string()),
                cells: Vec::new(),
                object,
                session,
            });
        }
        Ok(())
    }

    fn col(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// Every label in the file, by session.
    pub fn labels(&self) -> BTreeMap<String, Label> {
        self.rows
            .iter()
            .filter_map(|r| Some((r.session.clone(), self.label_of(r)?)))
            .collect()
    }

    /// The label of one session, if the file has one.
    pub fn get(&self, session: &str) -> Option<Label> {
        self.rows
            .iter()
            .find(|r| r.session == session)
            .and_then(|r| self.label_of(r))
    }

    fn label_of(&self, r: &Row) -> Option<Label> {
        if r.session.is_empty() {
            return None;
        }
        let (label, onset) = match self.kind {
            Kind::Csv => {
                let cell = |n: &str| {
                    self.col(n)
                        .and_then(|i| r.cells.get(i))
                        .map_or("", |c| c.trim())
                        .to_string()
                };
                (cell("label"), cell("onset_turn"))
            }
            Kind::Jsonl => (
                r.object
                    .get("label")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                match r.object.get("onset_turn") {
                    Some(Value::Number(n)) => n.to_string(),
                    Some(Value::String(s)) => s.clone(),
                    _ => String::new(),
                },
            ),
        };
        Some(Label {
            is_loop: label.trim() == "loop",
            onset_turn: onset.trim().parse().ok(),
        })
    }

    /// An extra column of a session's row (`note`, `confidence`), if set.
    pub fn field(&self, session: &str, name: &str) -> Option<String> {
        let r = self.rows.iter().find(|r| r.session == session)?;
        let v = match self.kind {
            Kind::Csv => self.col(name).and_then(|i| r.cells.get(i)).cloned()?,
            Kind::Jsonl => match r.object.get(name)? {
                Value::String(s) => s.clone(),
                Value::Null => return None,
                v => v.to_string(),
            },
        };
        (!v.trim().is_empty()).then_some(v)
    }

    /// Set an extra column of a labelled session's row (a new column is added
    /// to the header) and write the file; `None` when the session has no row.
    pub fn set_field(&mut self, session: &str, name: &str, value: &str) -> Result<Option<Undo>> {
        let Some(i) = self.rows.iter().position(|r| r.session == session) else {
            return Ok(None);
        };
        let (rows, columns, header) = (
            self.rows.clone(),
            self.columns.clone(),
            self.header_raw.clone(),
        );
        let undo = Undo {
            session: session.to_string(),
            before: Some(self.rows[i].clone()),
        };
        match self.kind {
            Kind::Csv => {
                let c = match self.col(name) {
                    Some(c) => c,
                    None => {
                        self.columns.push(name.to_string());
                        self.header_raw = None;
                        self.columns.len() - 1
                    }
                };
                let width = self.columns.len();
                let row = &mut self.rows[i];
                row.raw = None;
                if row.cells.len() < width {
                    row.cells.resize(width, String::new());
                }
                row.cells[c] = value.to_string();
            }
            Kind::Jsonl => {
                let row = &mut self.rows[i];
                row.raw = None;
                row.object
                    .insert(name.to_string(), Value::String(value.to_string()));
            }
        }
        self.save().inspect_err(|_| {
            self.rows = rows;
            self.columns = columns;
            self.header_raw = header;
        })?;
        Ok(Some(undo))
    }

    /// Label `session` and write the file. Returns what to pass to [`LabelStore::undo`].
    pub fn set(&mut self, session: &str, label: Label) -> Result<Undo> {
        let before = self.rows.clone();
        let undo = self.apply(session, label);
        // A failed write leaves the store as the file is.
        self.save().inspect_err(|_| self.rows = before)?;
        Ok(undo)
    }

    fn apply(&mut self, session: &str, label: Label) -> Undo {
        let pos = self.rows.iter().position(|r| r.session == session);
        let undo = Undo {
            session: session.to_string(),
            before: pos.map(|i| self.rows[i].clone()),
        };
        let word = if label.is_loop { "loop" } else { "clean" };
        let onset = label.onset_turn.map(|t| t.to_string()).unwrap_or_default();
        let i = match pos {
            Some(i) => i,
            None => {
                self.rows.push(Row {
                    raw: None,
                    cells: Vec::new(),
                    object: Map::new(),
                    session: session.to_string(),
                });
                self.rows.len() - 1
            }
        };
        let (s, l, o) = (
            self.col("session"),
            self.col("label"),
            self.col("onset_turn"),
        );
        let width = self.columns.len();
        let row = &mut self.rows[i];
        row.raw = None;
        match self.kind {
            Kind::Csv => {
                if row.cells.len() < width {
                    row.cells.resize(width, String::new());
                }
                for (c, v) in [(s, session.to_string()), (l, word.into()), (o, onset)] {
                    if let Some(c) = c {
                        row.cells[c] = v;
                    }
                }
            }
            Kind::Jsonl => {
                row.object
                    .insert("session".into(), Value::String(session.into()));
                row.object
                    .insert("label".into(), Value::String(word.into()));
                row.object.insert(
                    "onset_turn".into(),
                    label.onset_turn.map_or(Value::Null, Value::from),
                );
            }
        }
        undo
    }

    /// Put back what a [`LabelStore::set`] replaced, and write the file.
    pub fn undo(&mut self, undo: Undo) -> Result<()> {
        let before = self.rows.clone();
        self.apply_undo(undo);
        self.save().inspect_err(|_| self.rows = before)
    }

    fn apply_undo(&mut self, undo: Undo) {
        let pos = self.rows.iter().position(|r| r.session == undo.session);
        match (pos, undo.before) {
            (Some(i), Some(row)) => self.rows[i] = row,
            (Some(i), None) => {
                self.rows.remove(i);
            }
            (None, Some(row)) => self.rows.push(row),
            (None, None) => {}
        }
    }

    /// The file's bytes as they stand.
    pub fn render(&self) -> Vec<u8> {
        let mut out = String::new();
        let csv_line = |cells: &[String]| {
            let mut w = csv::WriterBuilder::new()
                .flexible(true)
                .from_writer(Vec::new());
            w.write_record(cells).expect("writes to memory");
            String::from_utf8(w.into_inner().expect("in memory")).expect("utf-8 in, utf-8 out")
        };
        if self.kind == Kind::Csv {
            match &self.header_raw {
                Some(h) => out.push_str(h),
                None => out.push_str(&csv_line(&self.columns)),
            }
        }
        for r in &self.rows {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            match (&r.raw, self.kind) {
                (Some(raw), _) => out.push_str(raw),
                (None, Kind::Csv) => out.push_str(&csv_line(&r.cells)),
                (None, Kind::Jsonl) => {
                    out.push_str(&Value::Object(r.object.clone()).to_string());
                    out.push('\n');
                }
            }
        }
        out.into_bytes()
    }

    /// Write the file atomically: a temporary file in the same folder, given
    /// the file's permissions, then renamed over it. A reader never sees half a file.
    pub fn save(&self) -> Result<()> {
        write_keeping_permissions(&self.path, &self.render()).map_err(|e| Error::io(&self.path, e))
    }
}

/// Replace `path` with `bytes` atomically, keeping the old file's permissions.
fn write_keeping_permissions(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".looptune-labels-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    match std::fs::metadata(path) {
        Ok(m) => tmp.as_file().set_permissions(m.permissions())?,
        // A new file gets the usual permissions, not the temporary file's 0600.
        Err(_) => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                tmp.as_file()
                    .set_permissions(std::fs::Permissions::from_mode(0o644))?;
            }
        }
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(is_loop: bool, onset: Option<u32>) -> Label {
        Label {
            is_loop,
            onset_turn: onset,
        }
    }

    const FILE: &str = "session,label,onset_turn,confidence,note\n\
        a,clean,,high,\"one, two \"\"quoted\"\"\"\n\
        b,loop,4,low,kept\n";

    #[test]
    fn keeps_rows_and_extra_columns_and_rereads_as_sweep_labels() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("labels.csv");
        std::fs::write(&p, FILE).unwrap();
        let mut s = LabelStore::open(&p).unwrap();
        s.set("c", label(true, Some(3))).unwrap();
        s.set("b", label(false, None)).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(
            text,
            "session,label,onset_turn,confidence,note\n\
             a,clean,,high,\"one, two \"\"quoted\"\"\"\n\
             b,clean,,low,kept\n\
             c,loop,3,,\n"
        );
        let (m, _) = crate::input::labels::read_labels_file(&p, false, &mut vec![]).unwrap();
        assert_eq!(m["c"], label(true, Some(3)));
        assert_eq!(m["b"], label(false, None));
        assert_eq!(m["a"], label(false, None));
        assert_eq!(LabelStore::open(&p).unwrap().labels(), m);
    }

    #[test]
    fn undo_restores_the_exact_bytes() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("labels.csv");
        std::fs::write(&p, FILE).unwrap();
        let mut s = LabelStore::open(&p).unwrap();
        let u1 = s.set("b", label(false, None)).unwrap();
        let u2 = s.set("new", label(false, None)).unwrap();
        assert_eq!(u2.session(), "new");
        s.undo(u2).unwrap();
        s.undo(u1).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), FILE);
    }

    #[test]
    fn new_file_and_file_without_onset_column_and_no_final_newline() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("new.csv");
        let mut s = LabelStore::open(&p).unwrap();
        assert!(!p.exists());
        s.set("x", label(true, Some(2))).unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "session,label,onset_turn\nx,loop,2\n"
        );
        let p = d.path().join("old.csv");
        std::fs::write(&p, "session,label\na,clean").unwrap();
        let mut s = LabelStore::open(&p).unwrap();
        s.set("b", label(true, Some(1))).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text, "session,label,onset_turn\na,clean\nb,loop,1\n");
        let (m, _) = crate::input::labels::read_labels_file(&p, false, &mut vec![]).unwrap();
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn jsonl_keeps_other_keys() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("l.jsonl");
        std::fs::write(
            &p,
            "{\"session\":\"a\",\"label\":\"clean\",\"note\":\"n\"}\n\n{\"session\":\"b\",\"label\":\"loop\",\"onset_turn\":2,\"confidence\":\"high\"}\n",
        )
        .unwrap();
        let mut s = LabelStore::open(&p).unwrap();
        s.set("b", label(false, None)).unwrap();
        s.set("c", label(true, Some(9))).unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "{\"session\":\"a\",\"label\":\"clean\",\"note\":\"n\"}\n\n\
             {\"session\":\"b\",\"label\":\"clean\",\"onset_turn\":null,\"confidence\":\"high\"}\n\
             {\"session\":\"c\",\"label\":\"loop\",\"onset_turn\":9}\n"
        );
        let (m, _) = crate::input::labels::read_labels_file(&p, false, &mut vec![]).unwrap();
        assert_eq!(m["c"], label(true, Some(9)));
        assert!(!m["b"].is_loop);
    }

    #[cfg(unix)]
    #[test]
    fn atomic_write_keeps_permissions_and_leaves_no_temporary_file() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("labels.csv");
        std::fs::write(&p, FILE).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        let ino_before = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&p).unwrap());
        let mut s = LabelStore::open(&p).unwrap();
        s.set("z", label(false, None)).unwrap();
        let m = std::fs::metadata(&p).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o640);
        // Renamed over, not rewritten in place.
        assert_ne!(std::os::unix::fs::MetadataExt::ino(&m), ino_before);
        let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn a_failed_write_changes_nothing() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("labels.csv");
        std::fs::write(&p, FILE).unwrap();
        let mut s = LabelStore::open(&p).unwrap();
        // A folder where the file was: the rename fails (also for root).
        std::fs::remove_file(&p).unwrap();
        std::fs::create_dir(&p).unwrap();
        assert!(s.set("b", label(false, None)).is_err());
        assert_eq!(s.get("b"), Some(label(true, Some(4))));
        assert_eq!(String::from_utf8(s.render()).unwrap(), FILE);
        let u = {
            std::fs::remove_dir(&p).unwrap();
            s.set("b", label(false, None)).unwrap()
        };
        std::fs::remove_file(&p).unwrap();
        std::fs::create_dir(&p).unwrap();
        assert!(s.undo(u).is_err());
        assert_eq!(s.get("b"), Some(label(false, None)));
    }

    #[test]
    fn a_bad_file_is_refused_with_file_line_and_field() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("labels.csv");
        std::fs::write(&p, "session,label,onset_turn\na,loop,x\n").unwrap();
        let e = LabelStore::open(&p).unwrap_err().to_string();
        assert!(
            e.ends_with("labels.csv:2: field `onset_turn` must be a non-negative integer, not `x`"),
            "{e}"
        );
    }
}
