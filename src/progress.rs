//! Progress reporting behind a small trait, so library code and tests never
//! touch indicatif. The bar is drawn only on a terminal and never with `--quiet`.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

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

/// An indicatif bar on stderr.
pub struct TerminalProgress(ProgressBar);

impl TerminalProgress {
    /// A bar with a message, e.g. `replaying`, counting checks x sessions.
    pub fn new(message: &'static str) -> TerminalProgress {
        Self::with_template(
            message,
            "{msg} [{bar:30}] {pos}/{len} checks x sessions, {rate}, ETA {eta}",
        )
    }

    /// A bar counting input bytes, e.g. `reading`.
    pub fn bytes(message: &'static str) -> TerminalProgress {
        Self::with_template(
            message,
            "{msg} [{bar:30}] {bytes}/{total_bytes}, {bytes_per_sec}, ETA {eta}",
        )
    }

    fn with_template(message: &'static str, template: &str) -> TerminalProgress {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(template)
                .expect("valid template")
                .with_key(
                    "rate",
                    |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = w.write_str(&rate(s.per_sec()));
                    },
                )
                .progress_chars("=> "),
        );
        bar.set_message(message);
        TerminalProgress(bar)
    }
}

impl Progress for TerminalProgress {
    fn set_length(&self, n: u64) {
        self.0.set_length(n);
    }
    fn inc(&self, n: u64) {
        self.0.inc(n);
    }
    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

/// A terminal bar when stderr is a terminal and not `quiet`, else nothing.
pub fn for_stderr(quiet: bool, message: &'static str) -> Box<dyn Progress> {
    if !quiet && std::io::stderr().is_terminal() {
        Box::new(TerminalProgress::new(message))
    } else {
        Box::new(NoProgress)
    }
}

/// [`for_stderr`] counting input bytes (reading files).
pub fn bytes_for_stderr(quiet: bool, message: &'static str) -> Box<dyn Progress> {
    if !quiet && std::io::stderr().is_terminal() {
        Box::new(TerminalProgress::bytes(message))
    } else {
        Box::new(NoProgress)
    }
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
