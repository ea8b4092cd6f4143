//! Error types and the exit codes they map to (documented in `--help` and the README).

use std::path::PathBuf;

/// Exit code: everything ran; no gate or `--fail-on-detection` tripped.
pub const EXIT_OK: i32 = 0;
/// Exit code: a gate (`--require`) or `--fail-on-detection` tripped.
pub const EXIT_GATE: i32 = 1;
/// Exit code: bad input, bad configuration or bad usage; nothing was written.
pub const EXIT_INPUT: i32 = 2;
/// Exit code: results were written, but a report (HTML, Markdown, JUnit) failed.
pub const EXIT_REPORT: i32 = 3;

/// Prefix of the error message for a file no importer recognises; reading a
/// folder skips walked files whose error starts with it.
pub const UNRECOGNISED: &str = "not a recognised session log";

/// Everything that can stop a run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A bad line in an input file: `FILE:LINE: what is wrong (field)`.
    #[error("{path}:{line}: {message}")]
    Line {
        /// File as given.
        path: String,
        /// 1-based line number.
        line: u64,
        /// What is wrong, naming the field.
        message: String,
    },
    /// A problem with a whole input file (unrecognised format, unreadable, ...).
    #[error("{path}: {message}")]
    File {
        /// File as given.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// No reader recognises a file (a walked folder skips such files).
    #[error("{path}: {}{detail}", UNRECOGNISED)]
    Unrecognised {
        /// File as given.
        path: String,
        /// What was expected, e.g. ` (expected canonical JSONL or one of: ...)`.
        detail: String,
        /// Its first lines are JSON objects: a walk stops on it unless `--lenient`.
        json_lines: bool,
    },
    /// I/O on a path failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Bad configuration: unknown parameter, bad value, invalid grid or labels.
    #[error("{0}")]
    Config(String),
    /// Bad usage of the command line beyond what clap checks.
    #[error("{0}")]
    Usage(String),
    /// Results were written, but a report failed.
    #[error("failed to write {}: {message}", path.display())]
    Report {
        /// The report file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

impl Error {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Report { .. } => EXIT_REPORT,
            _ => EXIT_INPUT,
        }
    }

    /// Wrap an I/O error with its path.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
