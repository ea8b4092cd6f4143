//! Helpers for the importers' typed fast paths: records deserialized straight
//! into the few fields a mapping reads, strings borrowed from the file where
//! they hold no escape, everything else skipped unread. A fast path accepts
//! only what the `Value` path would read the same way (a field of another
//! type fails the parse) and hands anything else to that path, which has the
//! errors and the lenient skips.

use super::common::{parse_object, Ctx, Out, RecordError};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::marker::PhantomData;

/// An optional string field (`null` is absent).
pub(crate) type Str<'a> = Option<Text<'a>>;

/// A string borrowed from the line when it has no escape (serde borrows a
/// bare `Cow<str>` field only, not one inside an `Option`).
pub(crate) struct Text<'a>(pub Cow<'a, str>);

impl std::ops::Deref for Text<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Cow<'de, str>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: serde::de::Error>(
                self,
                s: &'de str,
            ) -> Result<Self::Value, E> {
                Ok(Cow::Borrowed(s))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Cow::Owned(s.to_string()))
            }
            fn visit_string<E: serde::de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(Cow::Owned(s))
            }
        }
        d.deserialize_str(V).map(Text)
    }
}

/// `T` read only from a JSON object: serde's derived structs also accept an
/// array of their fields in order, which the `Value` path never reads as
/// one.
pub(crate) struct Obj<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(V(PhantomData)).map(Obj)
    }
}

/// A message `content` that is a string or a list of parts (objects); any
/// other value fails the parse.
pub(crate) enum Content<T> {
    /// A plain string.
    Text(String),
    /// A list of objects.
    Parts(Vec<Obj<T>>),
}

/// A content part's `type` and `text`, as [`text_of_content`] reads them.
pub(crate) trait TextPart {
    /// Its `type`.
    fn ty(&self) -> Option<&str>;
    /// Its `text`.
    fn text(&self) -> Option<&str>;
}

/// [`super::common::text_of`] over typed parts: a string as it is, parts'
/// `text` joined with newlines, images as `[image]`.
pub(crate) fn text_of_content<T: TextPart>(c: Option<&Content<T>>) -> String {
    match c {
        None => String::new(),
        Some(Content::Text(t)) => t.clone(),
        Some(Content::Parts(parts)) => {
            let mut out: Vec<&str> = Vec::with_capacity(parts.len());
            for Obj(p) in parts {
                if let Some(t) = p.text() {
                    out.push(t);
                } else if matches!(p.ty(), Some("image" | "image_url" | "input_image")) {
                    out.push("[image]");
                }
            }
            out.join("\n")
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Content<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Content<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or an array of objects")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Content<T>, E> {
                Ok(Content::Text(s.to_string()))
            }
            fn visit_string<E: serde::de::Error>(self, s: String) -> Result<Content<T>, E> {
                Ok(Content::Text(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content<T>, A::Error> {
                let mut parts = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
                while let Some(p) = seq.next_element()? {
                    parts.push(p);
                }
                Ok(Content::Parts(parts))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A value kept as text (`RawValue`), parsed as the `Value` path parses it;
/// `None` for what that path would have refused (a lone surrogate, which a
/// raw value lets through).
pub(crate) fn value(raw: &serde_json::value::RawValue) -> Option<serde_json::Value> {
    serde_json::from_str(raw.get()).ok()
}

/// One JSONL line for a fast path: `Some(Some(T))` when `T` reads it;
/// `Some(None)` when it is not a JSON object at all (broken, not UTF-8) and
/// the run is lenient, the skip noted in `out` as the `Value` path notes
/// it; `None` when the fast path cannot go on (such a line in a strict run,
/// whose error the `Value` path gives, or a JSON object of another shape).
pub(crate) fn line_or_skip<'a, T: Deserialize<'a>>(
    ctx: &Ctx,
    out: &mut Out,
    n: u32,
    text: Result<&'a str, RecordError>,
) -> Option<Option<T>> {
    if let Ok(t) = text {
        if let Some(v) = line(t) {
            return Some(Some(v));
        }
    }
    match parse_object(text) {
        Err(e) if ctx.lenient => {
            out.bad(ctx, n as u64, e).ok()?;
            Some(None)
        }
        _ => None,
    }
}

/// One line as `T` when it is a JSON object `T` reads, else `None`.
pub(crate) fn line<'a, T: Deserialize<'a>>(text: &'a str) -> Option<T> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    serde_json::from_str::<Obj<T>>(text).ok().map(|o| o.0)
}

/// Files to hold a fast path to its `Value` path: the real corpus
/// (`../shared/corpus`, when it is beside the checkout), the importers'
/// fixtures and a small real-shaped corpus from `synth`, as (name, bytes)
/// of those whose detected format is `format`.
/// The files of `format` among the real corpus, the fixtures and a generated
/// corpus: each with its name, bytes and whether it was generated (told by
/// the generated corpus's folder, never by a name: a checkout may live
/// anywhere, `/tmp` included).
#[cfg(test)]
pub(crate) fn sample_files(format: &str) -> Vec<(String, Vec<u8>, bool)> {
    fn walk(d: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let synth = tempfile::tempdir().unwrap();
    crate::input::synth::real::write_corpus(synth.path(), 120, 30_000, 7).unwrap();
    let mut paths = Vec::new();
    for d in [
        root.join("../shared/corpus"),
        root.join("tests/fixtures"),
        root.join("fixtures"),
        synth.path().to_path_buf(),
    ] {
        walk(&d, &mut paths);
    }
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| {
            let bytes = std::fs::read(&p).ok()?;
            let generated = p.starts_with(synth.path());
            (super::detect(&bytes) == Some(format))
                .then(|| (p.display().to_string(), bytes, generated))
        })
        .collect()
}

/// Hold a format's fast path to its `Value` path on every [`sample_files`]
/// file, strict and lenient; returns how many runs the fast path took. A
/// file it does not take must be one the `Value` path has to read: never a
/// generated one, and in a lenient run none of the real corpus's (its
/// broken lines are skipped on the fast path too).
#[cfg(test)]
pub(crate) fn fast_path_agrees(
    format: &str,
    least_files: usize,
    fast: impl Fn(&Ctx) -> Option<crate::input::format::FileSessions>,
    slow: impl Fn(&Ctx) -> crate::error::Result<crate::input::format::FileSessions>,
) -> (usize, usize) {
    let files = sample_files(format);
    assert!(files.len() >= least_files, "{}", files.len());
    let mut taken = 0;
    for (name, bytes, generated) in &files {
        for lenient in [false, true] {
            let ctx = Ctx {
                display: name,
                stem: "s",
                bytes,
                lenient,
                parsed: Default::default(),
            };
            match fast(&ctx) {
                Some(fs) => {
                    let diff = difference(&fs, &slow(&ctx));
                    assert!(diff.is_empty(), "{name}: {diff}");
                    taken += 1;
                }
                None => assert!(
                    !(*generated || lenient && name.contains("shared/corpus")),
                    "{name}: not taken"
                ),
            }
        }
    }
    (taken, files.len())
}

/// A reader's result as text that does not depend on hash order, and the
/// first place two such texts differ (empty when they are equal).
#[cfg(test)]
pub(crate) fn difference(
    fast: &crate::input::format::FileSessions,
    slow: &crate::error::Result<crate::input::format::FileSessions>,
) -> String {
    fn text(fs: &crate::input::format::FileSessions) -> String {
        let meta: std::collections::BTreeMap<_, _> = fs.session_meta.iter().collect();
        let keys: std::collections::BTreeMap<_, _> = fs.record_keys.iter().collect();
        format!(
            "{} {:?} {:?} {} {} {:?} {:?} {}",
            fs.format, fs.sessions, fs.skipped, fs.unknown, fs.whole_messages, meta, keys, fs.part
        )
    }
    let (a, b) = match slow {
        Ok(s) => (text(fast), text(s)),
        Err(e) => return format!("the Value path fails: {e}"),
    };
    let Some(at) = a
        .bytes()
        .zip(b.bytes())
        .position(|(x, y)| x != y)
        .or_else(|| (a.len() != b.len()).then_some(a.len().min(b.len())))
    else {
        return String::new();
    };
    let near = |s: &str| {
        let lo = (at.saturating_sub(150)..=at)
            .find(|i| s.is_char_boundary(*i))
            .unwrap_or(at);
        let hi = (at..s.len().min(at + 150))
            .rev()
            .find(|i| s.is_char_boundary(*i))
            .unwrap_or(at);
        s.get(lo..hi.max(lo)).unwrap_or("").to_string()
    };
    format!("at {at}:\n fast {}\n slow {}", near(&a), near(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Two<'a> {
        #[serde(borrow)]
        a: Str<'a>,
        b: Option<u64>,
    }

    #[test]
    fn objects_only_and_strings_borrowed_without_escapes() {
        let t: Two = line(r#"{"a":"x","b":2,"c":[1]}"#).unwrap();
        assert!(matches!(t.a, Some(Text(Cow::Borrowed("x")))) && t.b == Some(2));
        let t: Two = line(r#"{"a":"x\ny"}"#).unwrap();
        assert!(matches!(t.a, Some(Text(Cow::Owned(ref s))) if s == "x\ny"));
        assert!(line::<Two>(r#"["x",2]"#).is_none());
        assert!(serde_json::from_str::<Obj<Two>>(r#"["x",2]"#).is_err());
        assert!(line::<Two>(r#"{"a":1}"#).is_none());
        assert!(line::<Two>(r#"{"a":"\ud800"}"#).is_none());
        let c: Content<Two> = serde_json::from_str(r#"[{"a":"p"}]"#).unwrap();
        assert!(matches!(c, Content::Parts(ref p) if p.len() == 1));
        assert!(serde_json::from_str::<Content<Two>>(r#"["p"]"#).is_err());
        assert!(serde_json::from_str::<Content<Two>>("{}").is_err());
    }
}
