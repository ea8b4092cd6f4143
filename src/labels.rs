//! Ground-truth labels: a labels file (CSV with a header, or JSONL with the
//! same fields) and inline `label` records. The file wins over inline labels.
//! A label for a session that is not in the input, or a duplicate, is an
//! error (a warning with `--lenient`).

use crate::error::{Error, Result};
use crate::event::{Corpus, Label};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

pub mod scout;

/// Labels resolved for a corpus, by session index.
#[derive(Debug, Clone, Default)]
pub struct Labels {
    /// `labels[i]` is the label of `corpus.sessions[i]`, if any.
    pub by_session: Vec<Option<Label>>,
    /// The labels files given: path and SHA-256 of each, in the order given.
    pub files: Vec<(String, String)>,
    /// Warnings (with `--lenient`): unknown sessions, duplicates.
    pub warnings: Vec<String>,
}

impl Labels {
    /// Labeled loops and labeled clean sessions.
    pub fn counts(&self) -> (usize, usize) {
        let loops = self
            .by_session
            .iter()
            .flatten()
            .filter(|l| l.is_loop)
            .count();
        let clean = self
            .by_session
            .iter()
            .flatten()
            .filter(|l| !l.is_loop)
            .count();
        (loops, clean)
    }
}

/// Read a labels file: `session -> label`, with `FILE:LINE: field` errors.
pub fn read_labels_file(
    path: &Path,
    lenient: bool,
    warnings: &mut Vec<String>,
) -> Result<(BTreeMap<String, Label>, String)> {
    let (rows, digest) = read_label_rows(path, lenient, warnings)?;
    Ok((
        rows.into_iter().map(|(id, r)| (id, r.label)).collect(),
        digest,
    ))
}

/// [`read_labels_file`] with every row's line and other columns.
pub fn read_label_rows(
    path: &Path,
    lenient: bool,
    warnings: &mut Vec<String>,
) -> Result<(BTreeMap<String, LabelRow>, String)> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let digest = crate::number::hex(&Sha256::digest(&bytes));
    let display = path.display().to_string();
    let text = String::from_utf8(bytes).map_err(|_| Error::File {
        path: display.clone(),
        message: "labels file is not valid UTF-8".into(),
    })?;
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if scout::is_scout(&text, &ext) {
        // A validation set has no line per case to name; its split (when
        // given) is a group key like any labels column.
        let (labels, splits) = scout::parse(&display, &text, &ext, lenient, warnings)?;
        let rows = labels
            .into_iter()
            .map(|(id, label)| {
                let extra = splits
                    .get(&id)
                    .map(|s| (SPLIT.to_string(), s.clone()))
                    .into_iter()
                    .collect();
                let row = LabelRow {
                    label,
                    line: 0,
                    extra,
                };
                (id, row)
            })
            .collect();
        return Ok((rows, digest));
    }
    let out = parse_label_rows(
        &display,
        &text,
        ext == "jsonl" || ext == "json",
        lenient,
        warnings,
    )?;
    Ok((out, digest))
}

/// Parse the text of a labels file (CSV, or JSONL with `jsonl`); `display`
/// names it in `FILE:LINE: field` errors. (The fuzz and property tests call
/// this directly.)
pub fn parse_labels(
    display: &str,
    text: &str,
    jsonl: bool,
    lenient: bool,
    warnings: &mut Vec<String>,
) -> Result<BTreeMap<String, Label>> {
    Ok(parse_label_rows(display, text, jsonl, lenient, warnings)?
        .into_iter()
        .map(|(id, row)| (id, row.label))
        .collect())
}

/// One session's row of a labels file: its label, the line it is on, and
/// the file's other columns (`repo`, `split`, `note`...), which group sessions.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelRow {
    /// The label.
    pub label: Label,
    /// 1-based line in its file.
    pub line: u64,
    /// Every other non-empty column, by header name.
    pub extra: BTreeMap<String, String>,
}

/// The rows of a labels file by session id, every column kept.
pub fn parse_label_rows(
    display: &str,
    text: &str,
    jsonl: bool,
    lenient: bool,
    warnings: &mut Vec<String>,
) -> Result<BTreeMap<String, LabelRow>> {
    let display = display.to_string();
    let rows: Vec<RawRow> = if jsonl {
        jsonl_rows(&display, text)?
    } else {
        csv_rows(&display, text)?
    };
    let mut out = BTreeMap::new();
    for RawRow {
        line,
        session,
        label,
        onset,
        extra,
    } in rows
    {
        let bad = |m: String| Error::Line {
            path: display.clone(),
            line,
            message: m,
        };
        if session.is_empty() {
            return Err(bad("field `session` is empty".into()));
        }
        let is_loop = match label.trim() {
            "loop" => true,
            "clean" => false,
            other => {
                return Err(bad(format!(
                    "field `label` must be `loop` or `clean`, not `{other}`"
                )))
            }
        };
        let onset_turn = match onset.trim() {
            "" => None,
            s => Some(s.parse::<u32>().map_err(|_| {
                bad(format!(
                    "field `onset_turn` must be a non-negative integer, not `{s}`"
                ))
            })?),
        };
        if is_loop && onset_turn.is_none() {
            return Err(bad(
                "field `onset_turn` is required for a `loop` label".into()
            ));
        }
        if let Some(split) = extra.get(SPLIT) {
            if !matches!(split.as_str(), TRAIN | TEST) {
                return Err(bad(format!(
                    "field `split` must be `{TRAIN}` or `{TEST}` (or empty), not `{split}`"
                )));
            }
        }
        if out.contains_key(&session) {
            let msg = format!("{display}:{line}: duplicate label for session `{session}`");
            if lenient {
                warnings.push(msg);
                continue;
            }
            return Err(Error::Config(msg));
        }
        out.insert(
            session,
            LabelRow {
                label: Label {
                    is_loop,
                    onset_turn,
                },
                line,
                extra,
            },
        );
    }
    Ok(out)
}

/// The column (and group key) that says which sessions choose and which test.
pub const SPLIT: &str = "split";
/// A session the choice is made on.
pub const TRAIN: &str = "train";
/// A session only scored once the choice is made.
pub const TEST: &str = "test";

/// A row as read, before its fields are checked.
struct RawRow {
    line: u64,
    session: String,
    label: String,
    onset: String,
    extra: BTreeMap<String, String>,
}

/// Columns every labels file has; the others are kept as group keys.
const CORE_COLUMNS: [&str; 3] = ["session", "label", "onset_turn"];

fn csv_rows(display: &str, text: &str) -> Result<Vec<RawRow>> {
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(text.as_bytes());
    let headers = rdr
        .headers()
        .map_err(|e| Error::File {
            path: display.into(),
            message: format!("cannot read the CSV header: {e}"),
        })?
        .clone();
    let col = |name: &str| headers.iter().position(|h| h.trim() == name);
    let (Some(s), Some(l)) = (col("session"), col("label")) else {
        return Err(Error::Line {
            path: display.into(),
            line: 1,
            message: "the header must name the columns `session` and `label` (and `onset_turn`)"
                .into(),
        });
    };
    let o = col("onset_turn");
    let mut rows = Vec::new();
    for rec in rdr.records() {
        let rec = rec.map_err(|e| Error::Line {
            path: display.into(),
            line: e.position().map_or(0, |p| p.line()),
            message: format!("bad CSV ({e})"),
        })?;
        let line = rec.position().map_or(0, |p| p.line());
        let get = |i: Option<usize>| i.and_then(|i| rec.get(i)).unwrap_or("").trim().to_string();
        let extra = headers
            .iter()
            .zip(rec.iter())
            .map(|(h, v)| (h.trim(), v.trim()))
            .filter(|(h, v)| !h.is_empty() && !v.is_empty() && !CORE_COLUMNS.contains(h))
            .map(|(h, v)| (h.to_string(), v.to_string()))
            .collect();
        rows.push(RawRow {
            line,
            session: get(Some(s)),
            label: get(Some(l)),
            onset: get(o),
            extra,
        });
    }
    Ok(rows)
}

fn jsonl_rows(display: &str, text: &str) -> Result<Vec<RawRow>> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i as u64 + 1;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |m: String| Error::Line {
            path: display.into(),
            line: n,
            message: m,
        };
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| bad(format!("not valid JSON ({e})")))?;
        let field = |k: &str| -> Result<String> {
            match v.get(k) {
                None | Some(serde_json::Value::Null) => Ok(String::new()),
                Some(serde_json::Value::String(s)) => Ok(s.clone()),
                Some(serde_json::Value::Number(x)) if k == "onset_turn" => Ok(x.to_string()),
                Some(_) => Err(bad(format!("field `{k}` has the wrong type"))),
            }
        };
        let extra = v
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !CORE_COLUMNS.contains(&k.as_str()))
            .filter_map(|(k, x)| match x {
                serde_json::Value::String(s) if !s.trim().is_empty() => {
                    Some((k.clone(), s.trim().to_string()))
                }
                serde_json::Value::Number(n) => Some((k.clone(), n.to_string())),
                serde_json::Value::Bool(b) => Some((k.clone(), b.to_string())),
                _ => None,
            })
            .collect();
        rows.push(RawRow {
            line: n,
            session: field("session")?,
            label: field("label")?,
            onset: field("onset_turn")?,
            extra,
        });
    }
    Ok(rows)
}

/// Resolve labels for a corpus: the file's label, else the session's inline label.
pub fn resolve(corpus: &Corpus, file: Option<&Path>, lenient: bool) -> Result<Labels> {
    let sessions: Vec<(&str, Option<Label>)> = corpus
        .sessions
        .iter()
        .map(|s| (s.id.as_str(), s.inline_label))
        .collect();
    resolve_sessions(&sessions, file, lenient)
}

/// [`resolve`] over `(session id, inline label)` in corpus order, for a
/// streamed read that no longer holds the sessions.
pub fn resolve_sessions(
    sessions: &[(&str, Option<Label>)],
    file: Option<&Path>,
    lenient: bool,
) -> Result<Labels> {
    LabelsFile::read(file, lenient)?.resolve(sessions, lenient)
}

/// The labels files read before the sessions are: what they say of each id.
#[derive(Debug, Clone, Default)]
pub struct LabelsFile {
    /// Each id's row and the index of the file it came from.
    from_file: BTreeMap<String, (LabelRow, usize)>,
    files: Vec<PathBuf>,
    digests: Vec<(String, String)>,
    warnings: Vec<String>,
}

impl LabelsFile {
    /// Read the labels file, if one is given.
    pub fn read(file: Option<&Path>, lenient: bool) -> Result<LabelsFile> {
        let files: Vec<PathBuf> = file.map(Path::to_path_buf).into_iter().collect();
        LabelsFile::read_all(&files, lenient)
    }

    /// Read several labels files (`--labels` repeated) as one: a session
    /// labelled in two of them must have the same label and onset in both,
    /// else it is an error naming both places; its other columns are merged
    /// (the first file's value wins).
    pub fn read_all(files: &[PathBuf], lenient: bool) -> Result<LabelsFile> {
        let mut warnings = Vec::new();
        let mut from_file: BTreeMap<String, (LabelRow, usize)> = BTreeMap::new();
        let mut digests = Vec::new();
        for (fi, p) in files.iter().enumerate() {
            let (rows, d) = read_label_rows(p, lenient, &mut warnings)?;
            digests.push((p.display().to_string(), d));
            for (id, row) in rows {
                match from_file.get_mut(&id) {
                    None => {
                        from_file.insert(id, (row, fi));
                    }
                    Some((held, hf)) if held.label == row.label => {
                        for (k, v) in row.extra {
                            held.extra.entry(k).or_insert(v);
                        }
                        let _ = hf;
                    }
                    Some((held, hf)) => {
                        let say = |l: &Label| match (l.is_loop, l.onset_turn) {
                            (true, Some(o)) => format!("loop at turn {o}"),
                            (true, None) => "loop".to_string(),
                            (false, _) => "clean".to_string(),
                        };
                        return Err(Error::Config(format!(
                            "session `{id}` is labelled twice, differently: {} at {}:{}, {} at {}:{}",
                            say(&held.label),
                            files[*hf].display(),
                            held.line,
                            say(&row.label),
                            p.display(),
                            row.line
                        )));
                    }
                }
            }
        }
        Ok(LabelsFile {
            from_file,
            files: files.to_vec(),
            digests,
            warnings,
        })
    }

    /// The label of a session: the file's, else its inline label.
    pub fn label(&self, id: &str, inline: Option<Label>) -> Option<Label> {
        self.from_file.get(id).map(|(r, _)| r.label).or(inline)
    }

    /// The labels files' other columns for a session (empty when none names it).
    pub fn extra(&self, id: &str) -> BTreeMap<String, String> {
        self.from_file
            .get(id)
            .map(|(r, _)| r.extra.clone())
            .unwrap_or_default()
    }

    /// Every other column any row has a value in.
    pub fn columns(&self) -> std::collections::BTreeSet<String> {
        self.from_file
            .values()
            .flat_map(|(r, _)| r.extra.keys().cloned())
            .collect()
    }

    /// The labels of `(session id, inline label)` in corpus order; an id of
    /// the file that is not among them is an error (a warning if `lenient`).
    pub fn resolve(&self, sessions: &[(&str, Option<Label>)], lenient: bool) -> Result<Labels> {
        let from_file = &self.from_file;
        let mut warnings = self.warnings.clone();
        let index: HashMap<&str, usize> =
            sessions.iter().enumerate().map(|(i, s)| (s.0, i)).collect();
        for (id, (_, fi)) in from_file {
            if !index.contains_key(id.as_str()) {
                let msg = format!(
                    "labels file names session `{id}`, which is not in the input ({})",
                    self.files[*fi].display()
                );
                if lenient {
                    warnings.push(msg);
                } else {
                    return Err(Error::Config(msg));
                }
            }
        }
        let by_session = sessions
            .iter()
            .map(|(id, inline)| self.label(id, *inline))
            .collect();
        Ok(Labels {
            by_session,
            files: self.digests.clone(),
            warnings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(name);
        std::fs::File::create(&p)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        (d, p)
    }

    #[test]
    fn csv_and_jsonl_with_errors_naming_line_and_field() {
        let (_d, p) = write(
            "l.csv",
            "session,label,onset_turn,note\na1,loop,7,x\na2,clean,,\n",
        );
        let (m, _) = read_labels_file(&p, false, &mut vec![]).unwrap();
        assert_eq!(
            m["a1"],
            Label {
                is_loop: true,
                onset_turn: Some(7)
            }
        );
        assert!(!m["a2"].is_loop);
        let (_d, p) = write("l.csv", "session,label,onset_turn\na1,loop,\n");
        let e = read_labels_file(&p, false, &mut vec![])
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("l.csv:2: field `onset_turn` is required for a `loop` label"),
            "{e}"
        );
        let (_d, p) = write("l.jsonl", "{\"session\":\"a\",\"label\":\"loop\",\"onset_turn\":3}\n{\"session\":\"b\",\"label\":\"maybe\"}\n");
        let e = read_labels_file(&p, false, &mut vec![])
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("l.jsonl:2: field `label` must be `loop` or `clean`, not `maybe`"),
            "{e}"
        );
    }

    #[test]
    fn duplicates_error_or_warn() {
        let (_d, p) = write("l.csv", "session,label,onset_turn\na,clean,\na,clean,\n");
        assert!(read_labels_file(&p, false, &mut vec![])
            .unwrap_err()
            .to_string()
            .contains("duplicate"));
        let mut w = vec![];
        read_labels_file(&p, true, &mut w).unwrap();
        assert_eq!(w.len(), 1);
    }
}
