//! JavaScript compatibility: the exact strings and lengths the original
//! (TypeScript) detectors compute, so that ports compare what they compared.
//!
//! - [`stringify`] is V8's `JSON.stringify` on a value that came from
//!   `JSON.parse`: integer-like keys first in ascending order, then the other
//!   keys in insertion order; numbers in JS `Number#toString` form (`1.0` is
//!   `1`, `1e21` is `1e+21`); non-ASCII written raw.
//! - [`utf16`] gives `String.length` units; windows and indices in the ports
//!   are counted in them.

use serde_json::{Map, Number, Value};
use std::fmt::Write;

/// Where unpaired surrogates read from JSON live: U+F0000 + (unit - 0xD800),
/// in Supplementary Private Use Area-A (a Rust `char` cannot hold a lone
/// surrogate). [`utf16`] and [`write_string`] turn them back into the unit.
pub const LONE_SURROGATE_BASE: u32 = 0xF0000;

/// The stand-in character for a lone surrogate code unit.
pub fn lone_surrogate_char(unit: u16) -> char {
    char::from_u32(LONE_SURROGATE_BASE + (unit as u32 - 0xD800)).expect("private-use code point")
}

/// The lone surrogate unit a stand-in character represents, if it is one.
pub fn lone_surrogate_unit(c: char) -> Option<u16> {
    let cp = c as u32;
    (LONE_SURROGATE_BASE..LONE_SURROGATE_BASE + 0x800)
        .contains(&cp)
        .then(|| (0xD800 + cp - LONE_SURROGATE_BASE) as u16)
}

/// The text as Node's UTF-8 encoder sees it (what `createHash().update(str)`
/// hashes): lone surrogates become U+FFFD.
pub fn node_utf8(s: &str) -> std::borrow::Cow<'_, str> {
    // The stand-ins are 4-byte characters: ASCII text has none (one
    // vectorised pass instead of decoding every character).
    if !s.is_ascii() && s.chars().any(|c| lone_surrogate_unit(c).is_some()) {
        s.chars()
            .map(|c| {
                if lone_surrogate_unit(c).is_some() {
                    '\u{fffd}'
                } else {
                    c
                }
            })
            .collect::<String>()
            .into()
    } else {
        s.into()
    }
}

/// `JSON.stringify(value)` exactly as V8 writes it.
pub fn stringify(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, KeyOrder::V8);
    out
}

/// `JSON.stringify` of an object (the `args` of a tool call).
pub fn stringify_object(map: &Map<String, Value>) -> String {
    let mut out = String::new();
    write_object(&mut out, map, KeyOrder::V8);
    out
}

/// [`stringify_object`] appended to `out` (a buffer reused between calls).
pub fn push_object(out: &mut String, map: &Map<String, Value>) {
    write_object(out, map, KeyOrder::V8);
}

/// JSON with object keys sorted by UTF-16 code units, recursively (the
/// `Object.keys().sort()` / stable-stringify form some peers use).
pub fn stringify_sorted(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, KeyOrder::Sorted);
    out
}

/// [`stringify_sorted`] of an object, appended to `out` (no copy of the
/// object into a `Value` first).
pub fn push_sorted_object(out: &mut String, map: &Map<String, Value>) {
    write_object(out, map, KeyOrder::Sorted);
}

#[derive(Clone, Copy)]
enum KeyOrder {
    /// Integer-like keys ascending, then insertion order.
    V8,
    /// All keys sorted by UTF-16 code units.
    Sorted,
}

fn write_value(out: &mut String, value: &Value, order: KeyOrder) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item, order);
            }
            out.push(']');
        }
        Value::Object(map) => write_object(out, map, order),
    }
}

fn write_object(out: &mut String, map: &Map<String, Value>, order: KeyOrder) {
    out.push('{');
    let mut first = true;
    let mut emit = |out: &mut String, k: &str, v: &Value| {
        if !first {
            out.push(',');
        }
        first = false;
        write_string(out, k);
        out.push(':');
        write_value(out, v, order);
    };
    match order {
        KeyOrder::V8 => {
            // V8 stores array-index keys apart and enumerates them first.
            let mut indexed: Vec<(u32, &String, &Value)> = map
                .iter()
                .filter_map(|(k, v)| array_index(k).map(|i| (i, k, v)))
                .collect();
            if indexed.is_empty() {
                for (k, v) in map {
                    emit(out, k, v);
                }
            } else {
                indexed.sort_by_key(|(i, _, _)| *i);
                for (_, k, v) in &indexed {
                    emit(out, k, v);
                }
                for (k, v) in map {
                    if array_index(k).is_none() {
                        emit(out, k, v);
                    }
                }
            }
        }
        KeyOrder::Sorted => {
            let mut keys: Vec<(&String, &Value)> = map.iter().collect();
            keys.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            for (k, v) in keys {
                emit(out, k, v);
            }
        }
    }
    out.push('}');
}

/// An ECMAScript array index: the canonical decimal form of 0..=2^32-2.
fn array_index(key: &str) -> Option<u32> {
    if key.is_empty() || key.len() > 10 || !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if key.len() > 1 && key.starts_with('0') {
        return None;
    }
    let n: u64 = key.parse().ok()?;
    (n <= 4_294_967_294).then_some(n as u32)
}

/// JSON string quoting as `JSON.stringify` does it (well-formed variant).
/// Runs of bytes that need no escape are copied whole: only `"`, `\\`,
/// control characters and the 4-byte stand-ins of lone surrogates (lead
/// byte `0xF3`) stop the scan.
pub fn write_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let b = s.as_bytes();
    let (mut start, mut i) = (0, 0);
    while i < b.len() {
        // Eight bytes at a time while none of them stops the scan (tool
        // arguments are mostly long plain runs).
        if let Some(w) = b.get(i..i + 8) {
            if plain8(u64::from_le_bytes(w.try_into().expect("eight bytes"))) {
                i += 8;
                continue;
            }
        }
        let x = b[i];
        if x >= 0x20 && x != b'"' && x != b'\\' && x != 0xF3 {
            i += 1;
            continue;
        }
        // `i` is on a character boundary: an ASCII byte or a lead byte.
        out.push_str(&s[start..i]);
        if x == 0xF3 {
            let c = s[i..].chars().next().expect("a character starts here");
            // Well-formed JSON.stringify escapes a lone surrogate.
            match lone_surrogate_unit(c) {
                Some(u) => {
                    let _ = write!(out, "\\u{u:04x}");
                }
                None => out.push(c),
            }
            i += c.len_utf8();
            start = i;
            continue;
        }
        match x {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            c => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
        }
        i += 1;
        start = i;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Whether none of the eight bytes of `w` stops [`write_string`]'s scan:
/// no byte below 0x20, and none equal to `"`, `\\` or 0xF3 (exact tests,
/// the usual has-zero-byte trick).
#[inline]
fn plain8(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    below_space
        | zero(w ^ (ONES * b'"' as u64))
        | zero(w ^ (ONES * b'\\' as u64))
        | zero(w ^ (ONES * 0xF3))
        == 0
}

/// A JSON number as JavaScript prints it after `JSON.parse`.
fn write_number(out: &mut String, n: &Number) {
    // JSON.parse turns every number into an f64; so do we, with correct rounding.
    let f = n.as_f64().unwrap_or(f64::NAN);
    out.push_str(&number_to_string(f));
}

/// `Number.prototype.toString()` for finite values (shortest round-trip digits).
pub fn number_to_string(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if f == 0.0 {
        return "0".into(); // -0 prints as 0
    }
    // Integers below 2^53 (most numbers in tool arguments): every one is a
    // double, so the shortest digits that round-trip are all of its digits.
    if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
        return itoa::Buffer::new().format(f as i64).to_string();
    }
    shortest_to_string(f)
}

/// ECMA-262 Number::toString from the shortest round-trip digits (finite, non-zero `f`).
fn shortest_to_string(f: f64) -> String {
    // Rust's `{:e}` gives the shortest round-trip digits: "d.ddddde-7".
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("exponent is an integer");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i32;
    let n = exp + 1; // decimal point position, as in ECMA-262 Number::toString
    let mut s = String::new();
    if f < 0.0 {
        s.push('-');
    }
    if k <= n && n <= 21 {
        s.push_str(&digits);
        s.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        s.push_str(&digits[..n as usize]);
        s.push('.');
        s.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        s.push_str("0.");
        s.extend(std::iter::repeat_n('0', (-n) as usize));
        s.push_str(&digits);
    } else {
        s.push_str(&digits[..1]);
        if k > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        s.push('e');
        s.push(if n > 0 { '+' } else { '-' });
        let _ = write!(s, "{}", (n - 1).abs());
    }
    s
}

/// The string as UTF-16 code units (`String.length` counts these); stand-ins
/// of lone surrogates become the lone unit again.
pub fn utf16(s: &str) -> Vec<u16> {
    let mut out = Vec::with_capacity(s.len());
    push_utf16(&mut out, s);
    out
}

/// Append the UTF-16 units of `s` (see [`utf16`]).
pub fn push_utf16(out: &mut Vec<u16>, s: &str) {
    if s.is_ascii() {
        // Widen in place: a loop the compiler vectorises.
        let start = out.len();
        out.resize(start + s.len(), 0);
        for (d, &b) in out[start..].iter_mut().zip(s.as_bytes()) {
            *d = u16::from(b);
        }
        return;
    }
    let mut buf = [0u16; 2];
    for c in s.chars() {
        match lone_surrogate_unit(c) {
            Some(u) => out.push(u),
            None => out.extend_from_slice(c.encode_utf16(&mut buf)),
        }
    }
}

/// Length in UTF-16 code units.
#[cfg(test)]
pub fn utf16_len(s: &str) -> usize {
    s.chars()
        .map(|c| {
            if lone_surrogate_unit(c).is_some() {
                1
            } else {
                c.len_utf16()
            }
        })
        .sum()
}

/// Decode UTF-16 units, with lone surrogates as U+FFFD (what Node's UTF-8 encoder does).
pub fn from_utf16_lossy(units: &[u16]) -> String {
    String::from_utf16_lossy(units)
}

/// JavaScript's `\s` as a predicate over one UTF-16 unit.
pub fn is_js_space(u: u16) -> bool {
    matches!(
        u,
        0x09..=0x0d | 0x20 | 0xa0 | 0x1680 | 0x2000..=0x200a | 0x2028 | 0x2029 | 0x202f | 0x205f | 0x3000 | 0xfeff
    )
}

/// JavaScript's `String.prototype.trim` over UTF-16 units (whitespace + line terminators).
pub fn js_trim(units: &[u16]) -> &[u16] {
    let start = units
        .iter()
        .position(|u| !is_js_space(*u))
        .unwrap_or(units.len());
    let end = units
        .iter()
        .rposition(|u| !is_js_space(*u))
        .map_or(start, |p| p + 1);
    &units[start..end.max(start)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `write_string` as it was, a character at a time: the reference the
    /// byte-run version must match.
    fn write_string_by_char(out: &mut String, s: &str) {
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\u{08}' => out.push_str("\\b"),
                '\u{0c}' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if (c as u32) < 0x20 => {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                }
                c => match lone_surrogate_unit(c) {
                    Some(u) => {
                        let _ = write!(out, "\\u{u:04x}");
                    }
                    None => out.push(c),
                },
            }
        }
        out.push('"');
    }

    /// The eight-byte test says what testing each byte says, for any byte
    /// at any place and for any word.
    #[test]
    fn plain8_is_exact() {
        let plain = |x: u8| x >= 0x20 && x != b'"' && x != b'\\' && x != 0xF3;
        for filler in [b'a', 0x7F, 0x80, 0xBF, 0xF4, 0xFF, 0x21, 0x5D] {
            for v in 0..=255u8 {
                for at in 0..8 {
                    let mut w = [filler; 8];
                    w[at] = v;
                    assert_eq!(
                        plain8(u64::from_le_bytes(w)),
                        plain(v) && plain(filler),
                        "{filler:#x} with {v:#x} at {at}"
                    );
                }
            }
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            assert_eq!(
                plain8(x),
                x.to_le_bytes().iter().all(|&b| plain(b)),
                "{x:#x}"
            );
        }
    }

    use proptest::strategy::Strategy as _;

    proptest::proptest! {
        /// Any text, with quotes, backslashes, control characters, lone
        /// surrogate stand-ins and other 4-byte characters (lead byte 0xF3
        /// too) mixed in, quotes exactly as the character-wise version.
        #[test]
        fn write_string_matches_the_character_wise_version(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::string::string_regex("[ -~]{0,12}").unwrap(),
                    proptest::string::string_regex("[\\x00-\\x1f\"\\\\]{1,3}").unwrap(),
                    proptest::string::string_regex("[\u{80}-\u{10ffff}]{1,3}").unwrap(),
                    (0xD800u16..0xE000).prop_map(|u| lone_surrogate_char(u).to_string()),
                    proptest::prop_oneof![
                        proptest::strategy::Just("\u{F0800}\u{F3FFF}\u{FFFFF}\u{F07FF}".to_string()),
                        proptest::strategy::Just("é€😀".to_string()),
                    ],
                ],
                0..12,
            )
        ) {
            let s: String = parts.concat();
            let (mut fast, mut slow) = (String::new(), String::new());
            write_string(&mut fast, &s);
            write_string_by_char(&mut slow, &s);
            proptest::prop_assert_eq!(fast, slow);
        }
    }

    fn s(v: &str) -> String {
        stringify(&serde_json::from_str::<Value>(v).unwrap())
    }

    #[test]
    fn keeps_insertion_order() {
        assert_eq!(s(r#"{"b":1,"a":2}"#), r#"{"b":1,"a":2}"#);
        assert_ne!(s(r#"{"b":1,"a":2}"#), s(r#"{"a":2,"b":1}"#));
    }

    #[test]
    fn integer_like_keys_first_ascending() {
        assert_eq!(
            s(r#"{"b":1,"10":2,"2":3,"01":4,"-1":5,"4294967295":6}"#),
            r#"{"2":3,"10":2,"b":1,"01":4,"-1":5,"4294967295":6}"#
        );
        // nested objects too
        assert_eq!(s(r#"{"x":{"z":1,"0":2}}"#), r#"{"x":{"0":2,"z":1}}"#);
    }

    #[test]
    fn numbers_as_javascript_prints_them() {
        // Expected strings are what Node 20 prints for JSON.stringify(JSON.parse(...)).
        assert_eq!(s("[1.0, 1, 1e0, -0, 0.5, 100, 1e21, 1e20, 1.5e-7, 0.000001, 123456789012345678901234]"),
            "[1,1,1,0,0.5,100,1e+21,100000000000000000000,1.5e-7,0.000001,1.2345678901234569e+23]");
        assert_eq!(
            s("[5e-324, 1.7976931348623157e308, 123e-20]"),
            "[5e-324,1.7976931348623157e+308,1.23e-18]"
        );
        assert_eq!(s("[12345678901234567890]"), "[12345678901234567000]");
        assert_eq!(s("[0.1, 2.5e-5, -3.75]"), "[0.1,0.000025,-3.75]");
    }

    proptest::proptest! {
        /// The integer shortcut prints what the general algorithm prints.
        #[test]
        fn integers_print_as_their_shortest_digits(n in -(1i64 << 53) + 1..(1i64 << 53)) {
            let f = n as f64;
            if f != 0.0 {
                proptest::prop_assert_eq!(number_to_string(f), shortest_to_string(f));
            }
        }
    }

    #[test]
    fn strings_escape_like_json_stringify() {
        assert_eq!(
            stringify(&json!("a\"b\\c\n\t\u{1}\u{7f}é😀\u{2028}")),
            "\"a\\\"b\\\\c\\n\\t\\u0001\u{7f}é😀\u{2028}\""
        );
    }

    #[test]
    fn sorted_form_sorts_recursively() {
        assert_eq!(
            stringify_sorted(&json!({"b": {"d": 1, "c": 2}, "a": [ {"y":1,"x":2} ]})),
            r#"{"a":[{"x":2,"y":1}],"b":{"c":2,"d":1}}"#
        );
    }

    #[test]
    fn utf16_lengths() {
        assert_eq!(utf16_len("😀"), 2);
        assert_eq!(utf16_len("中文"), 2);
        assert_eq!(utf16("a😀").len(), 3);
    }

    #[test]
    fn js_trim_matches_js_whitespace() {
        let u = utf16("\u{feff}\u{a0} x \u{3000}\n");
        assert_eq!(js_trim(&u), &utf16("x")[..]);
        // U+0085 is not JS whitespace
        let u = utf16("\u{85}x");
        assert_eq!(js_trim(&u).len(), 2);
    }
}
