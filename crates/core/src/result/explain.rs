//! The explanations a record keeps: for every labelled session, the records
//! around its onset and around each configuration's first detection
//! ([`SessionLines`]), so a report explains a false positive or a missed
//! loop without the inputs.
//!
//! A sweep makes them as sessions stream by and writes each one at once, as
//! the JSON text `summary.json` holds, to an unnamed temporary file (gone when
//! the run ends, however it ends), keeping in memory only where each is: a
//! sweep over every session of a corpus all labelled held them whole (5 KB a
//! session), a third of its memory once hits were shared (#30). Writing
//! `summary.json` copies the text back in order; the report reads back only
//! the sessions it shows. A record loaded from `summary.json` spills them
//! again as it reads them, so `diff` and `report` of a large result hold
//! none of them in memory either.

use super::json_text::{self, Raw};
use super::SessionLines;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashMap;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::sync::{Arc, Mutex};

/// Every labelled session's lines, in session order (several entries may
/// name one session after a merge; the last one counts).
#[derive(Debug, Clone, Default)]
pub struct Explanations(Store);

#[derive(Debug, Clone)]
enum Store {
    Lines(Vec<SessionLines>),
    Spilled(Arc<Spilled>),
}

impl Default for Store {
    fn default() -> Store {
        Store::Lines(Vec::new())
    }
}

#[derive(Debug)]
struct Spilled {
    file: Mutex<std::fs::File>,
    /// Session, and where its text is.
    index: Vec<(String, Place)>,
}

/// One entry of an [`Explanations`], as [`Explanations::find`] names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry(usize);

/// Where one session's text is in the spill file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    offset: u64,
    len: u32,
}

/// The file a sweep writes explanations to as it makes them; any thread may
/// put one.
pub struct Spill {
    out: Mutex<(BufWriter<std::fs::File>, u64)>,
}

impl Spill {
    /// An unnamed temporary file (in `TMPDIR`), removed when the run ends.
    pub fn new() -> std::io::Result<Spill> {
        Ok(Spill {
            out: Mutex::new((BufWriter::new(tempfile::tempfile()?), 0)),
        })
    }

    /// Write one session's lines; their text is made on the calling thread.
    pub fn put(&self, lines: &SessionLines) -> std::io::Result<Place> {
        let mut text = String::new();
        json_text::session_lines(&mut text, lines);
        self.put_text(&text)
    }

    /// Write one session's lines as JSON text already made.
    fn put_text(&self, text: &str) -> std::io::Result<Place> {
        let len = u32::try_from(text.len())
            .map_err(|_| std::io::Error::other("one session's explanation passes 4 GB"))?;
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        out.0.write_all(text.as_bytes())?;
        let place = Place { offset: out.1, len };
        out.1 += u64::from(len);
        Ok(place)
    }

    /// The explanations, in the order of `index`.
    pub fn finish(self, index: Vec<(String, Place)>) -> std::io::Result<Explanations> {
        let (out, _) = self.out.into_inner().unwrap_or_else(|e| e.into_inner());
        let file = out.into_inner().map_err(|e| e.into_error())?;
        Ok(Explanations(Store::Spilled(Arc::new(Spilled {
            file: Mutex::new(file),
            index,
        }))))
    }
}

impl Spilled {
    fn text(&self, p: Place) -> std::io::Result<String> {
        let mut buf = vec![0; p.len as usize];
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        f.seek(SeekFrom::Start(p.offset))?;
        f.read_exact(&mut buf)?;
        String::from_utf8(buf).map_err(std::io::Error::other)
    }

    fn lines(&self, p: Place) -> std::io::Result<SessionLines> {
        serde_json::from_str(&self.text(p)?).map_err(std::io::Error::other)
    }
}

impl From<Vec<SessionLines>> for Explanations {
    fn from(v: Vec<SessionLines>) -> Explanations {
        Explanations(Store::Lines(v))
    }
}

impl Explanations {
    /// How many entries.
    pub fn len(&self) -> usize {
        match &self.0 {
            Store::Lines(v) => v.len(),
            Store::Spilled(s) => s.index.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where the lines of the sessions `wanted` names are (the last entry
    /// of a session): nothing is read yet, so a caller holds only the
    /// entries it will show and reads each with [`Explanations::get`] when
    /// it needs it.
    pub fn find(&self, wanted: impl Fn(&str) -> bool) -> HashMap<String, Entry> {
        let ids: Box<dyn Iterator<Item = &str>> = match &self.0 {
            Store::Lines(v) => Box::new(v.iter().map(|l| l.session.as_str())),
            Store::Spilled(s) => Box::new(s.index.iter().map(|(id, _)| id.as_str())),
        };
        ids.enumerate()
            .filter(|(_, id)| wanted(id))
            .map(|(i, id)| (id.to_string(), Entry(i)))
            .collect()
    }

    /// One entry's lines (read back from the spill file when spilled).
    pub fn get(&self, e: Entry) -> std::io::Result<SessionLines> {
        match &self.0 {
            Store::Lines(v) => Ok(v[e.0].clone()),
            Store::Spilled(s) => s.lines(s.index[e.0].1),
        }
    }

    /// Every entry, parsed.
    pub fn into_lines(self) -> std::io::Result<Vec<SessionLines>> {
        match self.0 {
            Store::Lines(v) => Ok(v),
            Store::Spilled(s) => s.index.iter().map(|(_, p)| s.lines(*p)).collect(),
        }
    }

    /// Add `other`'s entries after these, then order all by session (stable:
    /// entries of one session keep their order), as a merge does; spilled
    /// entries are copied to a new spill file, text for text.
    pub fn merge(self, other: Explanations) -> std::io::Result<Explanations> {
        if let (Store::Lines(_), Store::Lines(_)) = (&self.0, &other.0) {
            let mut v = self.into_lines()?;
            v.extend(other.into_lines()?);
            v.sort_by(|a, b| a.session.cmp(&b.session));
            return Ok(v.into());
        }
        let ids = |e: &Explanations| -> Vec<String> {
            match &e.0 {
                Store::Lines(v) => v.iter().map(|l| l.session.clone()).collect(),
                Store::Spilled(s) => s.index.iter().map(|(id, _)| id.clone()).collect(),
            }
        };
        let mut order: Vec<(String, usize, usize)> = Vec::new();
        for (part, e) in [&self, &other].into_iter().enumerate() {
            order.extend(ids(e).into_iter().enumerate().map(|(i, id)| (id, part, i)));
        }
        order.sort_by(|a, b| a.0.cmp(&b.0));
        let spill = Spill::new()?;
        let mut index = Vec::with_capacity(order.len());
        for (id, part, i) in order {
            let at = match &[&self, &other][part].0 {
                Store::Lines(v) => spill.put(&v[i])?,
                Store::Spilled(s) => spill.put_text(&s.text(s.index[i].1)?)?,
            };
            index.push((id, at));
        }
        spill.finish(index)
    }
}

impl PartialEq for Explanations {
    fn eq(&self, other: &Explanations) -> bool {
        match (self.clone().into_lines(), other.clone().into_lines()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
}

impl Serialize for Explanations {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Store::Lines(v) => json_text::serialize_explain(v, ser),
            Store::Spilled(s) => {
                use serde::ser::{Error, SerializeSeq};
                let mut seq = ser.serialize_seq(Some(s.index.len()))?;
                for (_, p) in &s.index {
                    let text = s.text(*p).map_err(S::Error::custom)?;
                    seq.serialize_element(&Raw(&text))?;
                }
                seq.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Explanations {
    /// Spilled as read, each entry written back as the text it was.
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Explanations, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Explanations;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of sessions' explanation lines")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Explanations, A::Error> {
                use serde::de::Error;
                let failed = |e: std::io::Error| {
                    A::Error::custom(format!(
                        "could not write the explanations to a temporary file in {}: {e}",
                        crate::error::tmp_dir()
                    ))
                };
                let mut spill: Option<Spill> = None;
                let mut index = Vec::new();
                while let Some(lines) = seq.next_element::<SessionLines>()? {
                    let out = match &mut spill {
                        Some(s) => s,
                        None => spill.insert(Spill::new().map_err(failed)?),
                    };
                    index.push((lines.session.clone(), out.put(&lines).map_err(failed)?));
                }
                match spill {
                    None => Ok(Explanations::default()),
                    Some(s) => s.finish(index).map_err(failed),
                }
            }
        }
        de.deserialize_seq(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::ExcerptLine;

    fn lines(id: &str, n: u32) -> SessionLines {
        SessionLines {
            session: id.into(),
            lines: (0..n)
                .map(|i| ExcerptLine {
                    event: i + 1,
                    turn: i,
                    kind: "content".into(),
                    text: format!("line \"{i}\" of {id}\n"),
                    hit: false,
                    place: None,
                })
                .collect(),
        }
    }

    /// Spilled from several threads in any order, they serialize as the
    /// same lines held in memory, in the index's order, and read back.
    #[test]
    fn spilled_explanations_are_the_lines_they_were() {
        use rayon::prelude::*;
        let all: Vec<SessionLines> = (0..300)
            .map(|i| lines(&format!("s{i:03}"), i % 7))
            .collect();
        let spill = Spill::new().unwrap();
        let mut placed: Vec<(String, Place)> = all
            .par_iter()
            .rev()
            .map(|l| (l.session.clone(), spill.put(l).unwrap()))
            .collect();
        placed.sort_by(|a, b| a.0.cmp(&b.0));
        let spilled = spill.finish(placed).unwrap();
        let held = Explanations::from(all.clone());
        assert_eq!(
            serde_json::to_string(&spilled).unwrap(),
            serde_json::to_string(&held).unwrap()
        );
        assert_eq!(spilled.len(), 300);
        let some = spilled.find(|id| id.ends_with('7'));
        assert_eq!(some.len(), 30);
        assert_eq!(spilled.get(some["s017"]).unwrap(), all[17]);
        assert_eq!(
            held.get(held.find(|id| id == "s017")["s017"]).unwrap(),
            all[17]
        );
        assert_eq!(spilled.clone().into_lines().unwrap(), all);
        let text = serde_json::to_string(&spilled).unwrap();
        let back: Explanations = serde_json::from_str(&text).unwrap();
        assert_eq!(back, held);
        // A loaded record's explanations are spilled again as they are read,
        // and write back as the text they were.
        assert!(matches!(back.0, Store::Spilled(_)));
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        let none: Explanations = serde_json::from_str("[]").unwrap();
        assert!(none.is_empty());
    }

    /// Spilled parts merge into one spill file, in session order, text for text.
    #[test]
    fn spilled_parts_merge_text_for_text() {
        let spilled = |v: Vec<SessionLines>| -> Explanations {
            let text = serde_json::to_string(&Explanations::from(v)).unwrap();
            serde_json::from_str(&text).unwrap()
        };
        let a = spilled(vec![lines("b", 1), lines("d", 3)]);
        let b = Explanations::from(vec![lines("a", 2), lines("c", 0)]);
        let merged = a.merge(b).unwrap();
        assert!(matches!(merged.0, Store::Spilled(_)));
        let want = Explanations::from(vec![
            lines("a", 2),
            lines("b", 1),
            lines("c", 0),
            lines("d", 3),
        ]);
        assert_eq!(
            serde_json::to_string(&merged).unwrap(),
            serde_json::to_string(&want).unwrap()
        );
    }

    #[test]
    fn a_merge_orders_by_session_and_keeps_both_parts() {
        let a = Explanations::from(vec![lines("b", 1), lines("d", 1)]);
        let b = Explanations::from(vec![lines("a", 2), lines("c", 0)]);
        let ids: Vec<String> = a
            .merge(b)
            .unwrap()
            .into_lines()
            .unwrap()
            .into_iter()
            .map(|l| l.session)
            .collect();
        assert_eq!(ids, ["a", "b", "c", "d"]);
    }
}
