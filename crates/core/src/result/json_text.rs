//! JSON text written by hand where serde_json's token-by-token writing was
//! most of a large `summary.json`: the bytes are serde_json's own (tests in
//! this module and in `compact` hold them to it), handed to the serializer
//! as raw values.

use super::{ExcerptLine, SessionLines};
use serde::{Serialize, Serializer};

/// Text already in JSON, written as it is.
pub(crate) struct Raw<'a>(pub(crate) &'a str);

impl Serialize for Raw<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        // Handed to serde_json as a raw value, the way its own `RawValue`
        // serializes itself, but without `RawValue::from_string` parsing the
        // text again to check it (that took longer than formatting it; the
        // `raw_value` feature makes serde_json know the token). If serde_json
        // ever changes the token, the round-trip tests fail, since the text
        // would come out as an object.
        use serde::ser::SerializeStruct;
        const RAW: &str = "$serde_json::private::RawValue";
        let mut raw = ser.serialize_struct(RAW, 1)?;
        raw.serialize_field(RAW, self.0)?;
        raw.end()
    }
}

/// Whether JSON must escape a byte of `s` (a control character, a quote, a
/// backslash). Checked 32 bytes at a time without an early exit inside a
/// block, which the compiler turns into vector instructions (a byte-by-byte
/// `all` was as slow as escaping).
fn needs_escape(s: &[u8]) -> bool {
    let bad = |b: u8| (b < 0x20) | (b == b'"') | (b == b'\\');
    let mut blocks = s.chunks_exact(32);
    for block in &mut blocks {
        if block.iter().fold(false, |acc, &b| acc | bad(b)) {
            return true;
        }
    }
    blocks.remainder().iter().any(|&b| bad(b))
}

/// `s` as a JSON string. Text with nothing to escape (most of it) is copied
/// whole; serde_json's escaper walks it byte by byte.
pub(crate) fn push_str(out: &mut String, s: &str) {
    if !needs_escape(s.as_bytes()) {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&serde_json::to_string(s).expect("a string serializes"));
    }
}

/// `n` in decimal.
pub(crate) fn push_u64(out: &mut String, n: u64) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// One excerpt line as its derived `Serialize` writes it.
fn push_line(out: &mut String, l: &ExcerptLine) {
    out.push_str("{\"event\":");
    push_u64(out, l.event.into());
    out.push_str(",\"turn\":");
    push_u64(out, l.turn.into());
    out.push_str(",\"type\":");
    push_str(out, &l.kind);
    out.push_str(",\"text\":");
    push_str(out, &l.text);
    out.push_str(if l.hit {
        ",\"hit\":true"
    } else {
        ",\"hit\":false"
    });
    if let Some(p) = &l.place {
        out.push_str(",\"place\":{\"file\":");
        push_str(out, &p.file);
        if let Some(line) = p.line {
            out.push_str(",\"line\":");
            push_u64(out, line.into());
        }
        if let Some(ptr) = &p.pointer {
            out.push_str(",\"pointer\":");
            push_str(out, ptr);
        }
        out.push('}');
    }
    out.push('}');
}

/// One session's lines as their derived `Serialize` writes them.
pub(crate) fn session_lines(out: &mut String, s: &SessionLines) {
    out.push_str("{\"session\":");
    push_str(out, &s.session);
    out.push_str(",\"lines\":[");
    for (i, l) in s.lines.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_line(out, l);
    }
    out.push_str("]}");
}

/// Sessions' lines formatted at once, on every thread of the pool.
const SESSIONS_AT_ONCE: usize = 256;

/// `explain` (the lines around each labelled session's detections, tens of
/// MB in a large sweep): a block of sessions at a time formatted on the
/// pool, then written in order.
pub(crate) fn serialize_explain<S: Serializer>(
    explain: &[SessionLines],
    ser: S,
) -> Result<S::Ok, S::Error> {
    use rayon::prelude::*;
    use serde::ser::SerializeSeq;
    let mut seq = ser.serialize_seq(Some(explain.len()))?;
    for chunk in explain.chunks(SESSIONS_AT_ONCE) {
        let texts: Vec<String> = chunk
            .par_iter()
            .map(|s| {
                let mut t = String::new();
                session_lines(&mut t, s);
                t
            })
            .collect();
        for t in &texts {
            seq.serialize_element(&Raw(t))?;
        }
    }
    seq.end()
}

#[cfg(test)]
mod tests {
    use super::super::PlaceRecord;
    use super::*;
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z .]{0,40}",
            // Quotes, backslashes, control characters, non-ASCII, DEL.
            "[a-z\"\\\\\u{0}-\u{1f}\u{7f}é🙂]{0,20}",
            any::<String>(),
        ]
    }

    fn line() -> impl Strategy<Value = ExcerptLine> {
        (
            any::<u32>(),
            any::<u32>(),
            text(),
            text(),
            any::<bool>(),
            prop::option::of((
                text(),
                prop::option::of(any::<u32>()),
                prop::option::of(text()),
            )),
        )
            .prop_map(|(event, turn, kind, text, hit, place)| ExcerptLine {
                event,
                turn,
                kind,
                text,
                hit,
                place: place.map(|(file, line, pointer)| PlaceRecord {
                    file,
                    line,
                    pointer,
                }),
            })
    }

    proptest! {
        /// The hand-written text is serde_json's, byte for byte.
        #[test]
        fn session_lines_are_what_serde_json_writes(
            session in text(),
            lines in prop::collection::vec(line(), 0..4),
        ) {
            let s = SessionLines { session, lines };
            let mut mine = String::new();
            session_lines(&mut mine, &s);
            prop_assert_eq!(mine, serde_json::to_string(&s).unwrap());
        }
    }

    /// A byte to escape is found wherever it sits, in a block or after them.
    #[test]
    fn a_byte_to_escape_is_found_anywhere() {
        for len in [0, 1, 31, 32, 33, 64, 100] {
            assert!(!needs_escape(&vec![b'a'; len]));
            for at in 0..len {
                for bad in [0u8, 0x1f, b'"', b'\\'] {
                    let mut s = vec![b'a'; len];
                    s[at] = bad;
                    assert!(needs_escape(&s), "{len} {at} {bad}");
                }
            }
        }
        // Non-ASCII and DEL are written as they are.
        assert!(!needs_escape("é🙂\u{7f} ~".as_bytes()));
    }

    /// `explain` written in blocks on several threads is the derived form,
    /// in order, and reads back.
    #[test]
    fn explain_in_blocks_is_the_derived_form() {
        #[derive(Serialize)]
        struct Mine<'a>(#[serde(serialize_with = "serialize_explain")] &'a Vec<SessionLines>);
        let explain: Vec<SessionLines> = (0..2 * SESSIONS_AT_ONCE + 7)
            .map(|i| SessionLines {
                session: format!("s{i}\t\"x\""),
                lines: (0..i % 3)
                    .map(|j| ExcerptLine {
                        event: j as u32,
                        turn: i as u32,
                        kind: "content".into(),
                        text: format!("line {j}\n"),
                        hit: j == 1,
                        place: None,
                    })
                    .collect(),
            })
            .collect();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let text = pool.install(|| serde_json::to_string(&Mine(&explain)).unwrap());
        assert_eq!(text, serde_json::to_string(&explain).unwrap());
        let back: Vec<SessionLines> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, explain);
    }
}
