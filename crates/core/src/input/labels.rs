//! Ground-truth labels: labels files (CSV with a header, JSONL with the
//! same fields, or an Inspect Scout validation set) and inline `label`
//! records. A file wins over inline labels; several files are read as one.
//! A duplicate, a session labelled differently in two files, or an onset past
//! its session's last turn is an error; labels for sessions that are not in
//! the input are one warning (count and first ids; an error with
//! `--strict-labels`), so a labels file may run ahead of the logs.

use crate::error::{Error, Result};
use crate::event::{Corpus, Label};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub mod scout;

/// Labels resolved for a corpus, by session index.
#[derive(Debug, Clone, Default)]
pub struct Labels {
    /// `labels[i]` is the label of `corpus.sessions[i]`, if any.
    pub by_session: Vec<Option<Label>>,
    /// The labels files given: path and SHA-256 of each, in the order given.
    pub files: Vec<(String, String)>,
    /// Warnings: labelled sessions missing from the input (one line, however many).
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
    let digest = crate::util::number::hex(&Sha256::digest(&bytes));
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
    let syntax = if ext == "jsonl" || ext == "json" {
        LabelsSyntax::Jsonl
    } else {
        LabelsSyntax::Csv
    };
    let out = parse_label_rows(&display, &text, syntax, lenient, warnings)?;
    Ok((out, digest))
}

/// How a labels file is written: chosen by its extension (`.jsonl`,
/// `.json`: JSON Lines; anything else: CSV).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelsSyntax {
    /// A header row, then one row per session.
    Csv,
    /// One JSON object per line.
    Jsonl,
}

/// Parse the text of a labels file written in `syntax`; `display`
/// names it in `FILE:LINE: field` errors. (The fuzz and property tests call
/// this directly.)
pub fn parse_labels(
    display: &str,
    text: &str,
    syntax: LabelsSyntax,
    lenient: bool,
    warnings: &mut Vec<String>,
) -> Result<BTreeMap<String, Label>> {
    Ok(parse_label_rows(display, text, syntax, lenient, warnings)?
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
    syntax: LabelsSyntax,
    lenient: bool,
    warnings: &mut Vec<String>,
) -> Result<BTreeMap<String, LabelRow>> {
    let display = display.to_string();
    let rows: Vec<RawRow> = match syntax {
        LabelsSyntax::Jsonl => jsonl_rows(&display, text)?,
        LabelsSyntax::Csv => csv_rows(&display, text)?,
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
        if let Some(first) = out.get(&session).map(|r: &LabelRow| r.line) {
            let msg = format!(
                "{display}:{line}: duplicate label for session `{session}` (first at line {first})"
            );
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

/// Columns of free text (a labeller's reasons): kept with the row, never a
/// group key, since every session would be a group of its own.
const FREE_TEXT: [&str; 5] = ["note", "notes", "comment", "comments", "reason"];

/// Whether a column holds free text ([`FREE_TEXT`], any case).
pub fn is_free_text(column: &str) -> bool {
    FREE_TEXT.iter().any(|f| f.eq_ignore_ascii_case(column))
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
    // Lines counted from the byte where a record starts: the csv crate's own
    // line is one too low after CRLF line ends. Counted on from the last
    // record, so the whole file is scanned once.
    let mut counted = (0usize, 1u64);
    let mut line_at = |byte: u64| -> u64 {
        let mut byte = (byte as usize).min(text.len());
        // After a CRLF the position is at the `\n` the last record left:
        // the record itself starts past the line end.
        while matches!(text.as_bytes().get(byte), Some(b'\r' | b'\n')) {
            byte += 1;
        }
        if byte < counted.0 {
            counted = (0, 1);
        }
        let newlines = text.as_bytes()[counted.0..byte]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        counted = (byte, counted.1 + newlines as u64);
        counted.1
    };
    for rec in rdr.records() {
        let rec = match rec {
            Ok(rec) => rec,
            Err(e) => {
                return Err(Error::Line {
                    path: display.into(),
                    line: e.position().map_or(0, |p| line_at(p.byte())),
                    message: format!("bad CSV ({e})"),
                })
            }
        };
        let line = rec.position().map_or(0, |p| line_at(p.byte()));
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

/// Resolve labels for a corpus: the file's label, else the session's inline
/// label. Onsets are checked against the sessions' turns; labels for missing
/// sessions are a warning, an error if `strict`.
pub fn resolve(corpus: &Corpus, file: Option<&Path>, strict: bool) -> Result<Labels> {
    let labels_file = LabelsFile::read(file)?;
    labels_file.check_onsets(corpus.sessions.iter().map(|s| (s.id.as_str(), s.turns)))?;
    let sessions: Vec<(&str, Option<Label>)> = corpus
        .sessions
        .iter()
        .map(|s| (s.id.as_str(), s.inline_label))
        .collect();
    labels_file.strict(strict).resolve(&sessions)
}

/// [`resolve`] over `(session id, inline label)` in corpus order, for a
/// streamed read that no longer holds the sessions (onsets unchecked: see
/// [`LabelsFile::check_onsets`]).
pub fn resolve_sessions(
    sessions: &[(&str, Option<Label>)],
    file: Option<&Path>,
    strict: bool,
) -> Result<Labels> {
    LabelsFile::read(file)?.strict(strict).resolve(sessions)
}

/// How many ids a warning about missing sessions names.
pub const MISSING_SHOWN: usize = 10;

/// The labels files read before the sessions are: what they say of each id.
#[derive(Debug, Clone, Default)]
pub struct LabelsFile {
    /// Each id's row and the index of the file it came from, sorted by id
    /// (a map of them was 150 bytes a row, held through a whole sweep).
    from_file: Vec<(Box<str>, LabelRow, u32)>,
    files: Vec<PathBuf>,
    digests: Vec<(String, String)>,
    warnings: Vec<String>,
    strict: bool,
}

impl LabelsFile {
    /// Read the labels file, if one is given (a duplicate is an error).
    pub fn read(file: Option<&Path>) -> Result<LabelsFile> {
        let files: Vec<PathBuf> = file.map(Path::to_path_buf).into_iter().collect();
        LabelsFile::read_all(&files)
    }

    /// With `strict` (`--strict-labels`), labels for sessions missing from
    /// the input are an error in [`LabelsFile::resolve`], not a warning.
    pub fn strict(mut self, strict: bool) -> LabelsFile {
        self.strict = strict;
        self
    }

    /// Read several labels files (`--labels` repeated) as one: a session
    /// labelled in two of them must have the same label and onset in both,
    /// else it is an error naming both places; its other columns are merged
    /// (the first file's value wins).
    pub fn read_all(files: &[PathBuf]) -> Result<LabelsFile> {
        let mut warnings = Vec::new();
        let mut from_file: BTreeMap<String, (LabelRow, usize)> = BTreeMap::new();
        let mut digests = Vec::new();
        for (fi, p) in files.iter().enumerate() {
            // A labels file is read whole: `--lenient` is about input lines.
            let (rows, d) = read_label_rows(p, false, &mut warnings)?;
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
            from_file: from_file
                .into_iter()
                .map(|(id, (row, fi))| (id.into_boxed_str(), row, fi as u32))
                .collect(),
            files: files.to_vec(),
            digests,
            warnings,
            strict: false,
        })
    }

    /// A session's row and the index of its file.
    fn row(&self, id: &str) -> Option<(&LabelRow, usize)> {
        let at = self
            .from_file
            .binary_search_by(|(k, _, _)| (**k).cmp(id))
            .ok()?;
        let (_, row, fi) = &self.from_file[at];
        Some((row, *fi as usize))
    }

    /// The label of a session: the file's, else its inline label.
    pub fn label(&self, id: &str, inline: Option<Label>) -> Option<Label> {
        self.row(id).map(|(r, _)| r.label).or(inline)
    }

    /// The labels files' other columns for a session that group sessions
    /// (empty when none names it): free text such as `note` is left out.
    pub fn extra(&self, id: &str) -> BTreeMap<String, String> {
        self.row(id)
            .map(|(r, _)| {
                r.extra
                    .iter()
                    .filter(|(k, _)| !is_free_text(k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every other column any row has a value in, free text left out: the
    /// group keys the labels files offer.
    pub fn columns(&self) -> std::collections::BTreeSet<String> {
        self.from_file
            .iter()
            .flat_map(|(_, r, _)| r.extra.keys().filter(|k| !is_free_text(k)).cloned())
            .collect()
    }

    /// An onset past its session's last turn is an error naming the file,
    /// the line, the onset and the last turn (the first such line). `sessions`
    /// are `(id, turns)` as finally read.
    pub fn check_onsets<'a>(
        &self,
        sessions: impl IntoIterator<Item = (&'a str, u32)>,
    ) -> Result<()> {
        let mut first: Option<(usize, u64, u32, u32, &str)> = None;
        for (id, turns) in sessions {
            let Some((row, fi)) = self.row(id) else {
                continue;
            };
            match row.label.onset_turn {
                Some(onset)
                    if onset > turns && first.is_none_or(|f| (fi, row.line) < (f.0, f.1)) =>
                {
                    first = Some((fi, row.line, onset, turns, id));
                }
                _ => {}
            }
        }
        match first {
            None => Ok(()),
            Some((fi, line, onset, turns, id)) => Err(Error::Line {
                path: self.files[fi].display().to_string(),
                line,
                message: format!(
                    "field `onset_turn` is {onset}, past the last turn of session `{id}` (turn {turns})"
                ),
            }),
        }
    }

    /// The labels of `(session id, inline label)` in corpus order. Ids of the
    /// files that are not among them are one warning (their count and first
    /// ids, each with the closest id of the input), an error if strict.
    pub fn resolve(&self, sessions: &[(&str, Option<Label>)]) -> Result<Labels> {
        let mut warnings = self.warnings.clone();
        // Sorted, not a map: every session's id, once.
        let mut known: Vec<&str> = sessions.iter().map(|s| s.0).collect();
        known.sort_unstable();
        known.dedup();
        if let Some(msg) = self.missing_sessions(&known) {
            if self.strict {
                return Err(Error::Config(format!("{msg} (--strict-labels)")));
            }
            warnings.push(format!(
                "{msg}; they are left out (--strict-labels makes this an error)"
            ));
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

    /// One message for the files' ids missing from `index` (in the files'
    /// order) among the sorted `known`: how many, and the first
    /// [`MISSING_SHOWN`] with a did-you-mean.
    fn missing_sessions(&self, known: &[&str]) -> Option<String> {
        let mut missing: Vec<(u32, u64, &str)> = self
            .from_file
            .iter()
            .filter(|(id, _, _)| known.binary_search(&&**id).is_err())
            .map(|(id, row, fi)| (*fi, row.line, &**id))
            .collect();
        if missing.is_empty() {
            return None;
        }
        missing.sort_unstable();
        let shown: Vec<String> = missing
            .iter()
            .take(MISSING_SHOWN)
            .map(|(_, _, id)| {
                format!(
                    "`{id}`{}",
                    crate::util::suggest::hint(id, known.iter().copied())
                )
            })
            .collect();
        let more = missing.len().saturating_sub(MISSING_SHOWN);
        let names: Vec<String> = self
            .files
            .iter()
            .map(|p| format!("{} ", p.display()))
            .collect();
        Some(format!(
            "labels file {}names {} not in the input: {}{}",
            names.concat(),
            match missing.len() {
                1 => "1 session".to_string(),
                n => format!("{n} sessions"),
            },
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ))
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

    /// CRLF line ends (issue #42, item 17): the line named is the line the
    /// row is on, as with LF, also past a quoted field spanning lines.
    #[test]
    fn crlf_rows_are_named_by_their_own_line() {
        for nl in ["\n", "\r\n"] {
            let text = [
                "session,label,onset_turn",
                "a1,clean,",
                "\"a\r\n2\",clean,",
                "a3,clean,",
                "a4,loop,",
                "",
            ]
            .join(nl);
            let (_d, p) = write("l.csv", &text);
            let e = read_labels_file(&p, false, &mut vec![])
                .unwrap_err()
                .to_string();
            assert!(
                e.ends_with("l.csv:6: field `onset_turn` is required for a `loop` label"),
                "{nl:?}: {e}"
            );
            let text = ["session,label,onset_turn", "a1,clean,", "a1,clean,", ""].join(nl);
            let (_d, p) = write("l.csv", &text);
            let e = read_labels_file(&p, false, &mut vec![])
                .unwrap_err()
                .to_string();
            assert!(e.contains("l.csv:3: duplicate label"), "{nl:?}: {e}");
        }
    }

    fn clean(n: usize) -> String {
        let mut t = String::from("session,label,onset_turn\n");
        for i in 0..n {
            t.push_str(&format!("gone-{i:03},clean,\n"));
        }
        t
    }

    #[test]
    fn missing_sessions_are_one_warning_with_a_count_and_the_first_ids() {
        let (_d, p) = write("l.csv", &(clean(25) + "sesion-1,clean,\nkept,loop,2\n"));
        let file = LabelsFile::read(Some(&p)).unwrap();
        let sessions = [("kept", None), ("session-1", None)];
        let labels = file.resolve(&sessions).unwrap();
        assert_eq!(labels.warnings.len(), 1, "{:?}", labels.warnings);
        let w = &labels.warnings[0];
        assert!(
            w.contains("names 26 sessions not in the input: `gone-000`"),
            "{w}"
        );
        // The first ten in the file's order, then a count of the rest.
        assert!(w.contains("`gone-009` and 16 more"), "{w}");
        assert!(!w.contains("gone-010"), "{w}");
        assert!(w.contains("--strict-labels makes this an error"), "{w}");
        assert_eq!(labels.counts(), (1, 0));
        // With --strict-labels: an error, with a did-you-mean for a near id.
        let (_d, p) = write("l.csv", "session,label,onset_turn\nsesion-1,clean,\n");
        let e = LabelsFile::read(Some(&p))
            .unwrap()
            .strict(true)
            .resolve(&sessions)
            .unwrap_err();
        assert_eq!(e.exit_code(), crate::error::EXIT_INPUT);
        let e = e.to_string();
        assert!(
            e.contains("names 1 session not in the input: `sesion-1` (did you mean `session-1`?) (--strict-labels)"),
            "{e}"
        );
    }

    #[test]
    fn an_onset_past_the_last_turn_names_file_line_onset_and_last_turn() {
        let (_d, p) = write(
            "l.csv",
            "session,label,onset_turn\nok,loop,9\nlate,loop,99\nlater,loop,50\n",
        );
        let file = LabelsFile::read(Some(&p)).unwrap();
        assert!(file.check_onsets([("ok", 9)]).is_ok());
        let e = file
            .check_onsets([("later", 9), ("ok", 9), ("late", 9)])
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with(
                "l.csv:3: field `onset_turn` is 99, past the last turn of session `late` (turn 9)"
            ),
            "{e}"
        );
        // Sessions not in the input are not checked (they are warned about).
        assert!(file.check_onsets([("ok", 9)]).is_ok());
    }

    #[test]
    fn duplicates_error_or_warn() {
        let (_d, p) = write("l.csv", "session,label,onset_turn\na,clean,\na,clean,\n");
        assert!(read_labels_file(&p, false, &mut vec![])
            .unwrap_err()
            .to_string()
            .ends_with("l.csv:3: duplicate label for session `a` (first at line 2)"));
        // A labels file is read whole: a duplicate is an error whatever
        // `--lenient` says (it skips bad input lines only).
        assert!(LabelsFile::read(Some(&p)).is_err());
        let mut w = vec![];
        read_labels_file(&p, true, &mut w).unwrap();
        assert_eq!(w.len(), 1);
    }
}
