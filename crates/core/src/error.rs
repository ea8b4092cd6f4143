//! Error types and the exit codes they map to (documented in `--help` and the README).

use std::path::PathBuf;

/// Exit code: everything ran; no gate or `--fail-on-detection` tripped.
pub const EXIT_OK: i32 = 0;
/// Exit code: a gate (`--require`) or `--fail-on-detection` tripped.
pub const EXIT_GATE: i32 = 1;
/// Exit code: bad input, bad configuration or bad usage; nothing was written.
pub const EXIT_INPUT: i32 = 2;
/// Exit code: a report (HTML, Markdown, JUnit) could not be written; the
/// set it belongs to was not replaced (a sweep's outputs go in whole or not at all).
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
    /// The inputs hold no session (and `--allow-empty` was not given): a
    /// nightly job whose log format changed must not stay green on
    /// "0 sessions". Exit 2, as bad input.
    #[error(
        "no sessions read from {}: {why} (pass --allow-empty to accept an empty input)",
        inputs.join(", ")
    )]
    NoSessions {
        /// The paths given, as given.
        inputs: Vec<String>,
        /// Why none was read.
        why: NoSessions,
    },
    /// A report could not be written (its set was not replaced).
    #[error("failed to write {}: {message}", path.display())]
    Report {
        /// The report file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// Why an input held no session ([`Error::NoSessions`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoSessions {
    /// No file to read was found.
    #[error("no session file found (canonical `.jsonl` or a native agent log)")]
    NoFile,
    /// Files were found, but every one was skipped as unrecognised or unreadable.
    #[error("{} not recognised as a session log (first: {first})", files_count(*.files))]
    NotLogs {
        /// How many files were skipped.
        files: usize,
        /// The first skip note, as printed.
        first: String,
    },
    /// Files were read, but none holds a record.
    #[error("{} read, none holds a record", files_count(*.files))]
    NoRecord {
        /// How many files were read.
        files: usize,
    },
}

/// `1 file`, `N files`.
fn files_count(n: usize) -> String {
    format!("{n} {}", if n == 1 { "file" } else { "files" })
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

    /// Reading back the process's own temporary file of hits failed (a
    /// disk error under the run).
    pub fn hits_unreadable(source: std::io::Error) -> Error {
        Error::temp("reading back the hits", source)
    }

    /// A temporary file for `what` failed: named by the folder it is made
    /// in, so the user knows which TMPDIR to fix.
    pub fn temp(what: &str, source: std::io::Error) -> Error {
        Error::io(
            format!("<a temporary file, {what}, in {}>", tmp_dir()),
            source,
        )
    }
}

/// The folder temporary files are made in, as messages name it.
pub fn tmp_dir() -> String {
    format!("{} (TMPDIR)", std::env::temp_dir().display())
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
