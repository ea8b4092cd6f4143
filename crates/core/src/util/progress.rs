//! Progress reporting behind a small trait, so library code and tests never
//! touch a terminal: the binary draws a bar behind it (`looptune`'s
//! `progress` module), everything else passes [`NoProgress`].

/// Something that counts finished work.
pub trait Progress: Sync {
    /// Total units of work.
    fn set_length(&self, n: u64);
    /// `n` more units done.
    fn inc(&self, n: u64);
    /// Remove the bar.
    fn finish(&self);
}

/// A work rate as people read it: `7992/s`, not indicatif's `7,992.402/s`.
pub fn rate(per_sec: f64) -> String {
    if per_sec.is_finite() && per_sec >= 10.0 {
        format!("{per_sec:.0}/s")
    } else if per_sec.is_finite() && per_sec > 0.0 {
        format!("{per_sec:.1}/s")
    } else {
        "-/s".into()
    }
}

/// No progress output.
pub struct NoProgress;

impl Progress for NoProgress {
    fn set_length(&self, _: u64) {}
    fn inc(&self, _: u64) {}
    fn finish(&self) {}
}

#[cfg(test)]
mod rate_tests {
    use super::rate;

    #[test]
    fn rates_read_like_7992_per_second() {
        assert_eq!(rate(7992.402), "7992/s");
        assert_eq!(rate(2.25), "2.2/s");
        assert_eq!(rate(0.0), "-/s");
        assert_eq!(rate(f64::INFINITY), "-/s");
    }
}
