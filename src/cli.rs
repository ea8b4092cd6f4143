//! Command-line arguments (clap derive) and their hand-over to the library.
//! Nothing here computes: each subcommand builds a request and calls `looptune::run`.

use clap::{Args, Parser, Subcommand, ValueEnum};
use looptune::error::{Error, Result};
use looptune::input::ReadOptions;
use looptune::run;
use std::path::PathBuf;

const EXIT_CODES: &str = "\
Exit codes:
  0  ok: everything ran and was written
  1  a gate (--require) or --fail-on-detection tripped
  2  bad input, configuration or usage (FILE:LINE: what is wrong); nothing written
  3  results were written, but a report (HTML, Markdown, JUnit) failed";

/// Tune AI-agent loop detectors offline.
///
/// looptune replays recorded agent sessions (canonical JSONL, or native logs of
/// Claude Code, Codex CLI, Gemini CLI, OpenHands, SWE-agent, chat-completions
/// lists, ...) through faithful ports of the loop detectors agents ship, under
/// many threshold configurations, and scores them against labels.
#[derive(Debug, Parser)]
#[command(name = "looptune", version, about, long_about, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Replay sessions through one or more detector configurations and print what fires.
    #[command(after_help = REPLAY_HELP)]
    Replay(ReplayArgs),
    /// List detector families, their profiles and every parameter with its source.
    Detectors(DetectorsArgs),
}

const REPLAY_HELP: &str = "\
Examples:
  looptune replay fixtures/                      # gemini-latest on every session
  looptune replay --profile gemini-2025-07 --format json runs/*.jsonl
  looptune replay --set tool_call_threshold=3 --all session.jsonl.gz
  looptune replay --detector gemini,opencode,blade ~/.claude/projects
  looptune replay --fail-on-detection nightly/   # CI: exit 1 if anything fires

A detection is reported at the record that triggered it: `turn` per the spec,
`event` = 1-based index of the record in its session (every record counts).
Without --all each configuration reports its first detection (the original
detectors are sticky); --all clears the detection after each and goes on, as
Gemini CLI's recovery turn does, numbering strikes per prompt. Replay cannot
know how the model would have reacted to a warning: the recorded continuation
counts as the model not changing course.

Exit codes: 0 ok, 1 --fail-on-detection or a gate tripped, 2 bad input or
usage, 3 results written but a report failed.";

#[derive(Debug, Args)]
struct InputArgs {
    /// Session files or folders (walked recursively in byte order of paths); `-` reads stdin.
    #[arg(required = true, value_name = "PATHS")]
    paths: Vec<PathBuf>,
    /// Skip bad lines (counted and reported per file) instead of stopping at the first.
    #[arg(long)]
    lenient: bool,
    /// Input format for every file: `auto` detects it per file by content.
    #[arg(long, value_name = "NAME", default_value = "auto")]
    input_format: String,
}

impl InputArgs {
    fn read_options(&self, digests: bool) -> ReadOptions {
        ReadOptions {
            lenient: self.lenient,
            format: Some(self.input_format.clone()),
            digests,
        }
    }
}

#[derive(Debug, Args)]
struct DetectorArgs {
    /// Detector families at their default profiles, comma-separated (e.g. `gemini,opencode`).
    #[arg(long, value_delimiter = ',', value_name = "FAMILY")]
    detector: Vec<String>,
    /// Named profiles (repeatable; implies the family). Default: gemini-latest.
    #[arg(long, value_name = "NAME")]
    profile: Vec<String>,
    /// Override a parameter: KEY=VALUE for every selected family that has KEY, or FAMILY.KEY=VALUE.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    /// A table for people: sessions with a detection, then a summary.
    Table,
    /// One JSON object per session, sorted by session id.
    Json,
}

#[derive(Debug, Args)]
struct ReplayArgs {
    #[command(flatten)]
    input: InputArgs,
    #[command(flatten)]
    detectors: DetectorArgs,
    /// Report every detection (clearDetection() after each), with its strike count.
    #[arg(long)]
    all: bool,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Worker threads (default: all cores). Output is identical for every value.
    #[arg(long, short = 'j', value_name = "N", default_value_t = 0)]
    jobs: usize,
    /// Exit with code 1 when any session has a detection (a CI gate).
    #[arg(long)]
    fail_on_detection: bool,
    /// No progress bar.
    #[arg(long, short = 'q')]
    quiet: bool,
}

#[derive(Debug, Args)]
struct DetectorsArgs {
    /// Only this family.
    #[arg(long, value_name = "FAMILY")]
    family: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

/// Run the parsed command; returns the exit code.
pub fn dispatch(cli: Cli) -> Result<i32> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match cli.command {
        Command::Replay(a) => {
            let req = run::ReplayRequest {
                paths: a.input.paths.clone(),
                read: a.input.read_options(false),
                selection: selection(&a.detectors),
                all: a.all,
                json: matches!(a.format, Format::Json),
                jobs: a.jobs,
                fail_on_detection: a.fail_on_detection,
                quiet: a.quiet,
            };
            run::replay_command(&req, &mut out)
        }
        Command::Detectors(a) => {
            run::detectors_command(
                a.family.as_deref(),
                matches!(a.format, Format::Json),
                &mut out,
            )?;
            Ok(0)
        }
    }
}

fn selection(d: &DetectorArgs) -> run::Selection {
    run::Selection {
        families: d
            .detector
            .iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
        profiles: d.profile.clone(),
        sets: d.sets.clone(),
    }
}

#[allow(dead_code)]
fn usage(msg: impl Into<String>) -> Error {
    Error::Usage(msg.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }
}
