//! Numbers as every output writes them. Below `report` and `gates` alike, so
//! a gate message and a report cell print a score the same way; digests as
//! hex, below every module that names something by one.

/// A float at fixed precision (quiet diffs), trailing zeros trimmed.
pub fn fixed(x: f64) -> String {
    let mut s = String::new();
    push_fixed(&mut s, x);
    s
}

/// [`fixed`] appended to `out` (tables of many cells reuse one buffer).
pub fn push_fixed(out: &mut String, x: f64) {
    use std::fmt::Write;
    let start = out.len();
    let _ = write!(out, "{x:.6}");
    let kept = out[start..]
        .trim_end_matches('0')
        .trim_end_matches('.')
        .len();
    out.truncate(start + kept);
    if &out[start..] == "-0" {
        out.truncate(start);
        out.push('0');
    }
}

/// Lowercase hex (digests, ids derived from them). By table: `{:02x}`
/// through the formatter was a quarter of Crush's live cost (a digest a
/// step).
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_the_formatters() {
        let bytes: Vec<u8> = (0..=255).collect();
        let by_format: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex(&bytes), by_format);
        assert_eq!(hex(&[]), "");
    }

    #[test]
    fn fixed_precision() {
        assert_eq!(fixed(0.5), "0.5");
        assert_eq!(fixed(1.0 / 3.0), "0.333333");
        assert_eq!(fixed(2.0), "2");
        assert_eq!(fixed(-0.0000001), "0");
    }
}

/// An interval as every output writes it: `[lo, hi]`, so a negative bound
/// reads right (`[-7, 11]`, never `[-7-11]`).
pub fn interval(lo: impl std::fmt::Display, hi: impl std::fmt::Display) -> String {
    format!("[{lo}, {hi}]")
}

#[cfg(test)]
mod interval_tests {
    #[test]
    fn negative_bounds_read_right() {
        assert_eq!(super::interval(-7, 11), "[-7, 11]");
        assert_eq!(super::interval("0.49", "0.97"), "[0.49, 0.97]");
    }
}
