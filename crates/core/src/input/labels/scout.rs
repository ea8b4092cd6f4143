//! Inspect Scout validation sets as labels (issue #26 item 8): the ground
//! truth that ecosystem keeps for transcripts (`_validation/types.py`,
//! `docs/validation.qmd`), as CSV (`id,target[,split]`, or `id,label_loop`),
//! YAML, JSON (a list of cases) or JSONL (a case per line). A case is `id`
//! (a transcript id: for Inspect AI the sample's `uuid`, as looptune names
//! those sessions; several ids as a list or a comma-separated string), with
//! `target` true for a loop, or `labels: {loop: bool}` / a `label_loop`
//! column; `split` is kept as a grouping column and ignored by scoring.
//! Scout has no onset: a loop from a validation set is scored for recall and
//! precision, its turns-to-detection unknown.
//!
//! `looptune label --export scout FILE` writes labels the other way, as
//! `id,target,split` CSV (or JSON / JSONL / YAML by the file's extension).

use crate::error::{Error, Result};
use crate::event::Label;
use serde_json::Value;
use std::collections::BTreeMap;

/// Whether a labels file is a Scout validation set rather than looptune's
/// own form: its CSV header (or first record) has `id` and no `session`.
pub(crate) fn is_scout(text: &str, ext: &str) -> bool {
    match ext {
        "yaml" | "yml" => true,
        "json" => text.trim_start().starts_with('['),
        "jsonl" => text
            .lines()
            .find(|l| !l.trim().is_empty())
            .and_then(|l| serde_json::from_str::<Value>(l).ok())
            .is_some_and(|v| v.get("id").is_some() && v.get("session").is_none()),
        _ => {
            let header = text.lines().next().unwrap_or("");
            let cols: Vec<&str> = header
                .trim_start_matches('\u{feff}')
                .split(',')
                .map(str::trim)
                .collect();
            cols.contains(&"id") && !cols.contains(&"session")
        }
    }
}

/// A truthy cell of a CSV or a JSON value: `true`/`True`/`1`/`yes`.
fn truth(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => n.as_f64().map(|x| x != 0.0),
        Value::String(s) => match s.trim().to_lowercase().as_str() {
            "true" | "1" | "yes" | "loop" => Some(true),
            "false" | "0" | "no" | "clean" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// Ids of a case: a string (several separated by commas, or a JSON array in
/// a string) or a list.
fn ids(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => {
            let s = s.trim();
            if s.starts_with('[') {
                if let Ok(Value::Array(a)) = serde_json::from_str::<Value>(s) {
                    return ids(&Value::Array(a));
                }
            }
            s.split(',')
                .map(|x| x.trim().to_string())
                .filter(|x| !x.is_empty())
                .collect()
        }
        Value::Number(n) => vec![n.to_string()],
        Value::Array(a) => a.iter().flat_map(ids).collect(),
        _ => Vec::new(),
    }
}

/// The 1-based line where each element of a root JSON array starts.
fn element_lines(bytes: &[u8]) -> Vec<u32> {
    let (mut line, mut depth, mut in_str, mut esc, mut expect) =
        (1u32, 0usize, false, false, false);
    let mut out = Vec::new();
    for &b in bytes {
        if b == b'\n' {
            line += 1;
        }
        if in_str {
            match (esc, b) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        if expect && !b.is_ascii_whitespace() && b != b']' {
            out.push(line);
            expect = false;
        }
        match b {
            b'"' => in_str = true,
            b'[' | b'{' => {
                depth += 1;
                expect = depth == 1 && b == b'[';
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 1 => expect = true,
            _ => {}
        }
    }
    out
}

/// What is wrong with a case of a validation set.
#[derive(Debug, thiserror::Error)]
enum CaseError {
    #[error("missing field `id`")]
    NoId,
    #[error("field `id` is empty")]
    EmptyId,
    #[error("field `{field}` must be true or false, not {value}")]
    NotTruth { field: &'static str, value: Value },
    #[error("a case needs `target`, `label_loop` or `labels.loop`")]
    NoTarget,
}

/// One case as an object: `(ids, loop?)`, or what is wrong.
fn case(m: &serde_json::Map<String, Value>) -> std::result::Result<(Vec<String>, bool), CaseError> {
    let Some(id) = m.get("id") else {
        return Err(CaseError::NoId);
    };
    let ids = ids(id);
    if ids.is_empty() {
        return Err(CaseError::EmptyId);
    }
    let read = |field: &'static str, v: &Value| {
        truth(v).ok_or_else(|| CaseError::NotTruth {
            field,
            value: v.clone(),
        })
    };
    let is_loop = if let Some(t) = m.get("target") {
        read("target", t)?
    } else if let Some(l) = m.get("label_loop") {
        read("label_loop", l)?
    } else if let Some(l) = m.get("labels").and_then(|l| l.get("loop")) {
        read("labels.loop", l)?
    } else {
        return Err(CaseError::NoTarget);
    };
    Ok((ids, is_loop))
}

/// Parse a validation set: `session -> label` (loops without an onset), and
/// `session -> split` where a split is given.
pub(crate) fn parse(
    display: &str,
    text: &str,
    ext: &str,
    lenient: bool,
    warnings: &mut Vec<String>,
) -> Result<(BTreeMap<String, Label>, BTreeMap<String, String>)> {
    let bad = |line: u64, m: String| Error::Line {
        path: display.to_string(),
        line,
        message: m,
    };
    // (line, case object)
    let mut cases: Vec<(u64, serde_json::Map<String, Value>)> = Vec::new();
    match ext {
        "yaml" | "yml" => {
            let v: Value = serde_norway::from_str(text).map_err(|e| {
                bad(
                    e.location().map_or(1, |l| l.line() as u64),
                    format!("not valid YAML ({e})"),
                )
            })?;
            let Value::Array(a) = v else {
                return Err(bad(1, "a validation set must be a list of cases".into()));
            };
            for (i, c) in a.into_iter().enumerate() {
                match c {
                    Value::Object(m) => cases.push((i as u64 + 1, m)),
                    _ => return Err(bad(1, format!("case {} must be a mapping", i + 1))),
                }
            }
        }
        "json" => {
            let v: Value = serde_json::from_str(text)
                .map_err(|e| bad(e.line() as u64, format!("not valid JSON ({e})")))?;
            let Value::Array(a) = v else {
                return Err(bad(1, "a validation set must be a list of cases".into()));
            };
            let lines = element_lines(text.as_bytes());
            for (i, c) in a.into_iter().enumerate() {
                let line = lines.get(i).copied().unwrap_or(1) as u64;
                match c {
                    Value::Object(m) => cases.push((line, m)),
                    _ => return Err(bad(line, "a case must be an object".into())),
                }
            }
        }
        "jsonl" => {
            for (i, l) in text.lines().enumerate() {
                let n = i as u64 + 1;
                if l.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str::<Value>(l) {
                    Ok(Value::Object(m)) => cases.push((n, m)),
                    Ok(_) => return Err(bad(n, "a case must be an object".into())),
                    Err(e) => return Err(bad(n, format!("not valid JSON ({e})"))),
                }
            }
        }
        _ => {
            let mut rdr = csv::ReaderBuilder::new()
                .flexible(true)
                .from_reader(text.as_bytes());
            let headers = rdr
                .headers()
                .map_err(|e| bad(1, format!("cannot read the CSV header: {e}")))?
                .clone();
            for rec in rdr.records() {
                let rec = rec.map_err(|e| {
                    bad(
                        e.position().map_or(0, |p| p.line()),
                        format!("bad CSV ({e})"),
                    )
                })?;
                let line = rec.position().map_or(0, |p| p.line());
                let m = headers
                    .iter()
                    .zip(rec.iter())
                    .filter(|(_, v)| !v.trim().is_empty())
                    .map(|(h, v)| (h.trim().to_string(), Value::String(v.trim().to_string())))
                    .collect();
                cases.push((line, m));
            }
        }
    }
    let mut labels = BTreeMap::new();
    let mut splits = BTreeMap::new();
    for (line, m) in cases {
        let (ids, is_loop) = case(&m).map_err(|why| bad(line, why.to_string()))?;
        for id in ids {
            if labels.contains_key(&id) {
                let msg = format!("{display}:{line}: duplicate label for session `{id}`");
                if lenient {
                    warnings.push(msg);
                    continue;
                }
                return Err(Error::Config(msg));
            }
            if let Some(split) = m.get("split").and_then(Value::as_str) {
                splits.insert(id.clone(), split.to_string());
            }
            labels.insert(
                id,
                Label {
                    is_loop,
                    onset_turn: None,
                },
            );
        }
    }
    Ok((labels, splits))
}

/// A labels file (looptune's or a validation set) with its splits, for
/// `looptune label --export`.
pub fn read_for_export(
    path: &std::path::Path,
) -> Result<(BTreeMap<String, Label>, BTreeMap<String, String>)> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let display = path.display().to_string();
    let text = String::from_utf8(bytes).map_err(|_| Error::File {
        path: display.clone(),
        message: "labels file is not valid UTF-8".into(),
    })?;
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if is_scout(&text, &ext) {
        return parse(&display, &text, &ext, false, &mut Vec::new());
    }
    let (labels, _) = super::read_labels_file(path, false, &mut Vec::new())?;
    Ok((labels, BTreeMap::new()))
}

/// Labels as a validation set, by the file's extension: CSV `id,target,split`
/// (`split` only when some session has one), JSON, JSONL or YAML.
pub fn export(
    labels: &BTreeMap<String, Label>,
    splits: &BTreeMap<String, String>,
    ext: &str,
) -> String {
    let cases: Vec<Value> = labels
        .iter()
        .map(|(id, l)| {
            let mut m = serde_json::Map::new();
            m.insert("id".into(), Value::String(id.clone()));
            m.insert("target".into(), Value::Bool(l.is_loop));
            if let Some(s) = splits.get(id) {
                m.insert("split".into(), Value::String(s.clone()));
            }
            Value::Object(m)
        })
        .collect();
    match ext {
        "json" => serde_json::to_string_pretty(&cases).unwrap_or_default() + "\n",
        "jsonl" => cases.iter().map(|c| format!("{c}\n")).collect(),
        "yaml" | "yml" => serde_norway::to_string(&cases).unwrap_or_default(),
        _ => {
            let with_split = !splits.is_empty();
            let mut w = csv::Writer::from_writer(Vec::new());
            let mut header = vec!["id", "target"];
            if with_split {
                header.push("split");
            }
            w.write_record(&header).ok();
            for (id, l) in labels {
                let target = if l.is_loop { "true" } else { "false" };
                let cell = crate::util::escape::safe_cell(id);
                let mut row = vec![cell.as_ref(), target];
                if with_split {
                    row.push(splits.get(id).map_or("", String::as_str));
                }
                w.write_record(&row).ok();
            }
            String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, ext: &str) -> BTreeMap<String, Label> {
        assert!(is_scout(text, ext), "{text}");
        parse("v", text, ext, false, &mut vec![]).unwrap().0
    }

    #[test]
    fn every_form_reads_loops_without_onset() {
        let want: BTreeMap<String, Label> = [("a", true), ("b", false)]
            .iter()
            .map(|(id, l)| {
                (
                    id.to_string(),
                    Label {
                        is_loop: *l,
                        onset_turn: None,
                    },
                )
            })
            .collect();
        assert_eq!(
            read("id,target,split\na,True,dev\nb,False,test\n", "csv"),
            want
        );
        assert_eq!(read("id,label_loop\na,true\nb,false\n", "csv"), want);
        assert_eq!(
            read(
                "- id: a\n  target: true\n- id: b\n  target: false\n",
                "yaml"
            ),
            want
        );
        assert_eq!(
            read(
                r#"[{"id":"a","target":true},{"id":"b","target":false}]"#,
                "json"
            ),
            want
        );
        assert_eq!(
            read("{\"id\":\"a\",\"labels\":{\"loop\":true}}\n{\"id\":\"b\",\"labels\":{\"loop\":false}}\n", "jsonl"),
            want
        );
        let (_, splits) = parse(
            "v",
            "id,target,split\na,true,dev\n",
            "csv",
            false,
            &mut vec![],
        )
        .unwrap();
        assert_eq!(splits["a"], "dev");
        // Several ids in one case.
        let m = read("id,target\n\"a,b\",true\n", "csv");
        assert!(m["a"].is_loop && m["b"].is_loop);
        // looptune's own form is not Scout's.
        assert!(!is_scout("session,label,onset_turn\n", "csv"));
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let e = parse("v.csv", "id,target\na,maybe\n", "csv", false, &mut vec![])
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "v.csv:2: field `target` must be true or false, not \"maybe\""
        );
        let e = parse("v.jsonl", "{\"id\":\"a\"}\n", "jsonl", false, &mut vec![])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("v.jsonl:1: a case needs `target`"), "{e}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Hostile validation sets: no panic, and an error names the file.
        #[test]
        fn hostile_sets_never_panic(text in "[-\\[\\]{}:,\"a-z0-9 \n]{0,200}", ext in 0usize..4) {
            let ext = ["csv", "json", "jsonl", "yaml"][ext];
            if let Err(e) = parse("v.set", &text, ext, false, &mut vec![]) {
                proptest::prop_assert!(e.to_string().starts_with("v.set"), "{}", e);
            }
        }
    }

    #[test]
    fn export_reads_back() {
        let (labels, splits) = parse(
            "v",
            "id,target,split\na,true,dev\nb,false,\n",
            "csv",
            false,
            &mut vec![],
        )
        .unwrap();
        for ext in ["csv", "json", "jsonl", "yaml"] {
            let text = export(&labels, &splits, ext);
            let (back, s2) = parse("v", &text, ext, false, &mut vec![]).unwrap();
            assert_eq!(back, labels, "{ext}: {text}");
            assert_eq!(s2, splits, "{ext}");
        }
        assert_eq!(
            export(&labels, &splits, "csv"),
            "id,target,split\na,true,dev\nb,false,\n"
        );
    }
}
