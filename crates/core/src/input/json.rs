//! JSON as agents write it: text parsed the way `JSON.parse` accepts it, and
//! the field helpers every reader shares (errors name the field's path).

use serde_json::{Map, Value};

/// Parse JSON text as `JSON.parse` would accept it. An unpaired surrogate
/// escape (`"\ud83d"`, left by a log cut mid-emoji) is valid JSON that
/// serde_json rejects; on that error alone each such escape becomes its own
/// private-use character (`js::LONE_SURROGATE_BASE` + offset), so
/// values stay as distinct as JavaScript keeps them, `JSON.stringify` writes
/// them back as the original escapes, and UTF-16 consumers turn them back into
/// the single lone unit. Well-formed text takes the first, fast path.
pub fn parse_json(text: &str) -> serde_json::Result<Value> {
    match serde_json::from_str(text) {
        Err(e) if text.contains("\\u") && e.is_syntax() => match replace_lone_surrogates(text) {
            Some(fixed) => serde_json::from_str(&fixed),
            None => Err(e),
        },
        other => other,
    }
}

/// Same as [`parse_json`] for bytes (a whole file). A JSONL file, tried as
/// one document by detection, stops at its second line with `trailing
/// characters`: the first value parsed, so it holds no lone surrogate, and
/// replacing those after it would give the same error; the file is not
/// scanned for them.
pub fn parse_json_slice(bytes: &[u8]) -> serde_json::Result<Value> {
    match serde_json::from_slice(bytes) {
        Err(e) if e.is_syntax() && !e.to_string().starts_with("trailing characters") => {
            match std::str::from_utf8(bytes)
                .ok()
                .and_then(replace_lone_surrogates)
            {
                Some(fixed) => serde_json::from_str(&fixed),
                None => Err(e),
            }
        }
        other => other,
    }
}

/// Replace `\uXXXX` escapes of unpaired surrogates with `\ufffd`; `None` when there are none.
/// Every native JSONL file passes here once, when detection tries it as one
/// document and serde stops at its second line: backslashes are found with
/// memchr and nothing is allocated until a lone surrogate is.
fn replace_lone_surrogates(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let hex = |i: usize| -> Option<u16> {
        let s = text.get(i..i + 4)?;
        u16::from_str_radix(s, 16).ok()
    };
    let mut out: Option<String> = None;
    let (mut i, mut last) = (0, 0);
    while i + 1 < b.len() {
        match memchr::memchr(b'\\', &b[i..b.len() - 1]) {
            Some(at) => i += at,
            None => break,
        }
        if b[i + 1] != b'u' {
            i += 2; // any other escape, including an escaped backslash
            continue;
        }
        let Some(u) = hex(i + 2) else {
            i += 2;
            continue;
        };
        let paired_low = b.get(i + 6) == Some(&b'\\')
            && b.get(i + 7) == Some(&b'u')
            && hex(i + 8).is_some_and(|l| (0xdc00..0xe000).contains(&l));
        if (0xd800..0xdc00).contains(&u) && paired_low {
            i += 12;
        } else if (0xd800..0xe000).contains(&u) {
            let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
            o.push_str(&text[last..i]);
            o.push(crate::util::js::lone_surrogate_char(u));
            i += 6;
            last = i;
        } else {
            i += 6;
        }
    }
    out.map(|mut o| {
        o.push_str(&text[last..]);
        o
    })
}

/// Why a record (a canonical line, a native line, message or whole document)
/// cannot be read. Its message is what the skip note or the `FILE:LINE:` error
/// says.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The line is not UTF-8.
    #[error("line is not valid UTF-8 ({0})")]
    NotUtf8(#[source] std::str::Utf8Error),
    /// The line or document is not JSON.
    #[error("not valid JSON ({0})")]
    NotJson(#[source] serde_json::Error),
    /// The line is JSON but not an object.
    #[error("not a JSON object")]
    NotObject,
    /// The record is not the shape the format has (`a message list`).
    #[error("expected {0}")]
    Expected(&'static str),
    /// A field is missing or of the wrong type.
    #[error(transparent)]
    Field(#[from] FieldError),
    /// A part of a document is not an object (`a sample`).
    #[error("{0} must be an object")]
    NotAnObject(&'static str),
    /// A field holding JSON text that does not parse.
    #[error("field `{field}` is not JSON: {source}")]
    FieldNotJson {
        /// Path of the field.
        field: String,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
}

/// A field of a record that is missing or of the wrong type; the message
/// names the field's path (`message.content`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    /// A required field is absent.
    #[error("missing field `{0}`")]
    Missing(String),
    /// A required field is absent, with what it holds (`an array`).
    #[error("missing field `{field}` ({what})")]
    MissingA {
        /// Path of the field.
        field: String,
        /// What it holds.
        what: &'static str,
    },
    /// A field names a kind the format does not have.
    #[error("field `{field}`: unknown {what} `{value}`")]
    Unknown {
        /// Path of the field.
        field: String,
        /// What it names (`source`, `role`).
        what: &'static str,
        /// The value.
        value: String,
    },
    /// A field has the wrong JSON type (`expected` reads "a string", ...).
    #[error("field `{field}` must be {expected}")]
    Type {
        /// Path of the field.
        field: String,
        /// What it must be.
        expected: &'static str,
    },
    /// A number too large for what it counts.
    #[error("field `{0}` is too large")]
    TooLarge(String),
}

impl FieldError {
    /// A field of the wrong type.
    pub fn ty(field: &str, expected: &'static str) -> FieldError {
        FieldError::Type {
            field: field.to_string(),
            expected,
        }
    }
}

/// A string field, if present and a string.
pub fn s<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    m.get(key).and_then(Value::as_str)
}

/// A field that must be a string when present (null = absent).
pub fn opt_str<'a>(
    m: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<&'a str>, FieldError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(v)) => Ok(Some(v)),
        Some(_) => Err(FieldError::ty(path, "a string")),
    }
}

/// A field that must be a string.
pub fn req_str<'a>(
    m: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<&'a str, FieldError> {
    opt_str(m, key, path)?.ok_or_else(|| FieldError::Missing(path.to_string()))
}

/// A field that must be an object.
pub fn req_obj<'a>(
    m: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<&'a Map<String, Value>, FieldError> {
    match m.get(key) {
        Some(Value::Object(o)) => Ok(o),
        Some(_) => Err(FieldError::ty(path, "an object")),
        None => Err(FieldError::Missing(path.to_string())),
    }
}

/// A field that must be an array when present (missing or null = empty).
pub fn opt_arr<'a>(
    m: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<&'a [Value], FieldError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(FieldError::ty(path, "an array")),
    }
}

/// A field that must be a boolean when present (null = absent).
pub fn opt_bool(m: &Map<String, Value>, key: &str, path: &str) -> Result<Option<bool>, FieldError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(FieldError::ty(path, "a boolean")),
    }
}

/// A field that must be a non-negative integer when present (null = absent).
pub fn opt_u64(m: &Map<String, Value>, key: &str, path: &str) -> Result<Option<u64>, FieldError> {
    const WHAT: &str = "a non-negative integer";
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .map(Some)
            .ok_or_else(|| FieldError::ty(path, WHAT)),
        Some(_) => Err(FieldError::ty(path, WHAT)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The scan before memchr, byte by byte: the reference.
    fn reference(text: &str) -> Option<String> {
        let b = text.as_bytes();
        let hex = |i: usize| {
            text.get(i..i + 4)
                .and_then(|s| u16::from_str_radix(s, 16).ok())
        };
        let mut out = String::new();
        let (mut i, mut last, mut changed) = (0, 0, false);
        while i + 1 < b.len() {
            if b[i] != b'\\' {
                i += 1;
                continue;
            }
            if b[i + 1] != b'u' {
                i += 2;
                continue;
            }
            let Some(u) = hex(i + 2) else {
                i += 2;
                continue;
            };
            let paired = b.get(i + 6) == Some(&b'\\')
                && b.get(i + 7) == Some(&b'u')
                && hex(i + 8).is_some_and(|l| (0xdc00..0xe000).contains(&l));
            if (0xd800..0xdc00).contains(&u) && paired {
                i += 12;
            } else if (0xd800..0xe000).contains(&u) {
                out.push_str(&text[last..i]);
                out.push(crate::util::js::lone_surrogate_char(u));
                i += 6;
                last = i;
                changed = true;
            } else {
                i += 6;
            }
        }
        changed.then(|| out + &text[last..])
    }

    proptest! {
        /// Texts made of escape fragments: the same answer as the reference.
        #[test]
        fn lone_surrogates_are_replaced_as_before(parts in proptest::collection::vec(
            prop::sample::select(vec!["a", "\\", "\\u", "d83d", "de00", "\\ud83d", "\\ude00",
                "\\\\", "\\u0041", "\\n", "\"", "é", "\\udBff", "x\\u"]), 0..24)) {
            let text: String = parts.concat();
            prop_assert_eq!(replace_lone_surrogates(&text), reference(&text));
        }
    }

    /// The error of a JSONL file tried as one document is the same whether
    /// or not its later lines hold lone surrogates (they are not replaced).
    #[test]
    fn trailing_lines_give_the_same_error_with_or_without_lone_surrogates() {
        for text in [
            "{\"a\":1}\n{\"b\":\"\\ud800\"}\n",
            "{\"a\":1}\n{\"b\":\"x\"}\n",
        ] {
            let e = parse_json_slice(text.as_bytes()).unwrap_err();
            assert_eq!(e.to_string(), "trailing characters at line 2 column 1");
            let fixed = replace_lone_surrogates(text).unwrap_or_else(|| text.to_string());
            let again = serde_json::from_str::<Value>(&fixed).unwrap_err();
            assert_eq!(e.to_string(), again.to_string());
        }
    }

    #[test]
    fn a_jsonl_file_is_not_one_document_and_nothing_is_replaced() {
        let two = b"{\"a\":\"\\u00e9\"}\n{\"b\":1}\n";
        assert!(parse_json_slice(two).is_err());
        assert_eq!(
            parse_json(r#"{"p":"\ud800x"}"#).unwrap()["p"],
            Value::String(format!("{}x", crate::util::js::lone_surrogate_char(0xd800)))
        );
    }
}
