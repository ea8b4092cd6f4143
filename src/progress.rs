//! The terminal's progress bars behind the core's [`Progress`] trait. A bar
//! is drawn only on a terminal and never with `--quiet`.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

pub use looptune_core::util::progress::{rate, NoProgress, Progress};

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
