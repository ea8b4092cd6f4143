//! Numbers as every output writes them. Below `report` and `gates` alike, so
//! a gate message and a report cell print a score the same way; digests as
//! hex, below every module that names something by one.

/// A float at fixed precision (quiet diffs), trailing zeros trimmed.
pub fn fixed(x: f64) -> String {
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

/// Lowercase hex (digests, ids derived from them).
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_precision() {
        assert_eq!(fixed(0.5), "0.5");
        assert_eq!(fixed(1.0 / 3.0), "0.333333");
        assert_eq!(fixed(2.0), "2");
        assert_eq!(fixed(-0.0000001), "0");
    }
}
