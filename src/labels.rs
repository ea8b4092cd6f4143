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
    /// The labels file, when one was given: path and SHA-256.
    pub file: Option<(String, String)>,
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
        let (labels, _splits) = scout::parse(&display, &text, &ext, lenient, warnings)?;
        return Ok((labels, digest));
    }
    let out = parse_labels(
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
    let display = display.to_string();
    let rows: Vec<(u64, String, String, String)> = if jsonl {
        jsonl_rows(&display, text)?
    } else {
        csv_rows(&display, text)?
    };
    let mut out = BTreeMap::new();
    for (line, session, label, onset) in rows {
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
            Label {
                is_loop,
                onset_turn,
            },
        );
    }
    Ok(out)
}

fn csv_rows(display: &str, text: &str) -> Result<Vec<(u64, String, String, String)>> {
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
        rows.push((line, get(Some(s)), get(Some(l)), get(o)));
    }
    Ok(rows)
}

fn jsonl_rows(display: &str, text: &str) -> Result<Vec<(u64, String, String, String)>> {
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
        rows.push((n, field("session")?, field("label")?, field("onset_turn")?));
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

/// A labels file read before the sessions are: what it says of each id.
#[derive(Debug, Clone, Default)]
pub struct LabelsFile {
    from_file: BTreeMap<String, Label>,
    file: Option<PathBuf>,
    digest: Option<(String, String)>,
    warnings: Vec<String>,
}

impl LabelsFile {
    /// Read the labels file, if one is given.
    pub fn read(file: Option<&Path>, lenient: bool) -> Result<LabelsFile> {
        let mut warnings = Vec::new();
        let (from_file, digest) = match file {
            Some(p) => {
                let (m, d) = read_labels_file(p, lenient, &mut warnings)?;
                (m, Some((p.display().to_string(), d)))
            }
            None => (BTreeMap::new(), None),
        };
        Ok(LabelsFile {
            from_file,
            file: file.map(Path::to_path_buf),
            digest,
            warnings,
        })
    }

    /// The label of a session: the file's, else its inline label.
    pub fn label(&self, id: &str, inline: Option<Label>) -> Option<Label> {
        self.from_file.get(id).copied().or(inline)
    }

    /// The labels of `(session id, inline label)` in corpus order; an id of
    /// the file that is not among them is an error (a warning if `lenient`).
    pub fn resolve(&self, sessions: &[(&str, Option<Label>)], lenient: bool) -> Result<Labels> {
        let file = self.file.as_deref();
        let from_file = &self.from_file;
        let mut warnings = self.warnings.clone();
        let digest = self.digest.clone();
        let index: HashMap<&str, usize> =
            sessions.iter().enumerate().map(|(i, s)| (s.0, i)).collect();
        for id in from_file.keys() {
            if !index.contains_key(id.as_str()) {
                let msg = format!(
                    "labels file names session `{id}`, which is not in the input{}",
                    file.map(|p| format!(" ({})", p.display()))
                        .unwrap_or_default()
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
            .map(|(id, inline)| from_file.get(*id).copied().or(*inline))
            .collect();
        Ok(Labels {
            by_session,
            file: digest,
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
