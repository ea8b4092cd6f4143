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
    /// Replay many threshold configurations (a grid) in parallel, score them
    /// against labels, and write sweep.csv, detections.csv, summary.json and report.html.
    #[command(after_help = SWEEP_HELP)]
    Sweep(SweepArgs),
    /// Regenerate report.html from a sweep folder (sweep.csv, summary.json), without re-running.
    Report(ReportArgs),
    /// Convert native agent logs to canonical JSONL (one file, sessions tagged).
    Import(ImportArgs),
    /// List detector families, their profiles and every parameter with its source.
    Detectors(DetectorsArgs),
    /// Generate a seeded synthetic corpus (for benchmarks).
    #[command(hide = true)]
    Synth(SynthArgs),
}

#[derive(Debug, Args)]
struct SynthArgs {
    /// Output folder.
    #[arg(long, short = 'o')]
    out: PathBuf,
    /// Number of sessions.
    #[arg(long, default_value_t = 10_000)]
    sessions: usize,
    /// Approximate bytes per session.
    #[arg(long, default_value_t = 11_000)]
    bytes: usize,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

const SWEEP_HELP: &str = "\
Examples:
  looptune sweep fixtures/ --labels fixtures/labels.csv      # the embedded default grid
  looptune sweep --print-default-grid > grid.toml            # a grid to start from
  looptune sweep runs/ --grid grid.toml --labels labels.csv --out reports/nightly \\
      --require 'recall>=0.9' --require 'false_positives<=0' --junit junit.xml

Scores per configuration: true/false positives, missed loops, precision, recall,
F1, false positives per 1,000 clean turns, turns-to-detection (detection turn -
onset turn + 1; median, p90, max), early detections, judge checks due, and the
tokens the recording spent after the policy's stop point. Labels come from
--labels (CSV or JSONL: session,label,onset_turn) and inline `label` records;
the file wins. Unlabeled sessions are replayed and counted, never scored.

Replay cannot know how the model would have reacted to a warning or stop: the
recorded continuation counts as the model not changing course.

Exit codes: 0 ok, 1 a gate tripped, 2 bad input or usage, 3 results written but
a report failed.";

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
    #[command(flatten)]
    limits: LimitArgs,
}

/// Caps on what one input file may cost.
#[derive(Debug, Args)]
struct LimitArgs {
    /// Most bytes one gzip file may expand to.
    #[arg(long, value_name = "BYTES", default_value_t = looptune::input::MAX_GZIP_BYTES)]
    max_gzip_bytes: u64,
    /// Most times a gzip file may expand (checked past 16 MiB decompressed).
    #[arg(long, value_name = "N", default_value_t = looptune::input::MAX_GZIP_RATIO)]
    max_gzip_ratio: u64,
}

impl InputArgs {
    fn read_options(&self, digests: bool, jobs: usize) -> ReadOptions {
        ReadOptions {
            lenient: self.lenient,
            format: Some(self.input_format.clone()),
            digests,
            jobs,
            max_gzip_bytes: self.limits.max_gzip_bytes,
            max_gzip_ratio: self.limits.max_gzip_ratio,
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
    /// Worker threads for reading files and replaying (default: all cores). Output is identical for every value.
    #[arg(long, short = 'j', value_name = "N", default_value_t = 0)]
    jobs: usize,
    /// Exit with code 1 when any session has a detection (a CI gate).
    #[arg(long)]
    fail_on_detection: bool,
    /// No progress bar.
    #[arg(long, short = 'q')]
    quiet: bool,
    #[command(flatten)]
    ci: CiOpts,
}

#[derive(Debug, Args)]
struct CiOpts {
    /// Labels file (CSV or JSONL: session,label,onset_turn); wins over inline labels.
    #[arg(long, value_name = "FILE")]
    labels: Option<PathBuf>,
    /// Write a short Markdown summary (for a CI job summary page).
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Write JUnit XML: one test case per labeled session for the chosen configuration.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// A gate on the chosen configuration, e.g. 'recall>=0.9' (any score name; >=, <=, >, <, ==, !=). Repeatable.
    #[arg(long = "require", value_name = "GATE")]
    requires: Vec<String>,
    /// The configuration gates and JUnit evaluate: an id, label or profile name (default: the stock profile).
    #[arg(long, value_name = "ID")]
    config: Option<String>,
}

impl CiOpts {
    fn ci(&self) -> run::CiArgs {
        run::CiArgs {
            markdown: self.markdown.clone(),
            junit: self.junit.clone(),
            requires: self.requires.clone(),
        }
    }
}

#[derive(Debug, Args)]
struct SweepArgs {
    /// Session files or folders; `-` reads stdin. Not needed with --print-default-grid.
    #[arg(value_name = "PATHS", required_unless_present = "print_default_grid")]
    paths: Vec<PathBuf>,
    /// Print the embedded default grid as TOML and exit.
    #[arg(long)]
    print_default_grid: bool,
    /// Grid file (TOML); default: the embedded grid.
    #[arg(long, value_name = "FILE")]
    grid: Option<PathBuf>,
    /// Output folder (default reports/sweep-<grid name>/).
    #[arg(long, short = 'o', value_name = "DIR")]
    out: Option<PathBuf>,
    /// How to pick the recommended configuration: default, f1, max-fp=N.
    #[arg(long, value_name = "RULE", default_value = "default")]
    objective: String,
    /// Worker threads for reading files and replaying (default: all cores). CSV output is identical for every value.
    #[arg(long, short = 'j', value_name = "N", default_value_t = 0)]
    jobs: usize,
    /// Skip bad lines (counted and reported per file); labels for unknown sessions become warnings.
    #[arg(long)]
    lenient: bool,
    /// Input format for every file: `auto` detects it per file by content.
    #[arg(long, value_name = "NAME", default_value = "auto")]
    input_format: String,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    ci: CiOpts,
    /// No progress bar.
    #[arg(long, short = 'q')]
    quiet: bool,
}

#[derive(Debug, Args)]
struct ReportArgs {
    /// A folder written by `looptune sweep`.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
}

#[derive(Debug, Args)]
struct ImportArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Output file (canonical JSONL; `.gz` compresses). Never an input.
    #[arg(long, short = 'o', value_name = "OUT.jsonl")]
    output: PathBuf,
    /// Mask common credential patterns (API keys, bearer tokens, private keys) in text and arguments.
    #[arg(long)]
    redact: bool,
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
                read: a.input.read_options(false, a.jobs),
                selection: selection(&a.detectors),
                all: a.all,
                json: matches!(a.format, Format::Json),
                jobs: a.jobs,
                fail_on_detection: a.fail_on_detection,
                quiet: a.quiet,
                labels: a.ci.labels.clone(),
                config: a.ci.config.clone(),
                ci: a.ci.ci(),
            };
            run::replay_command(&req, &mut out)
        }
        Command::Sweep(a) => {
            if a.print_default_grid {
                use std::io::Write;
                out.write_all(looptune::grid::DEFAULT_GRID.as_bytes())
                    .map_err(|e| Error::io("<stdout>", e))?;
                return Ok(0);
            }
            let req = run::SweepRequest {
                paths: a.paths.clone(),
                read: ReadOptions {
                    lenient: a.lenient,
                    format: Some(a.input_format.clone()),
                    digests: true,
                    jobs: a.jobs,
                    max_gzip_bytes: a.limits.max_gzip_bytes,
                    max_gzip_ratio: a.limits.max_gzip_ratio,
                },
                grid: a.grid.clone(),
                labels: a.ci.labels.clone(),
                out: a.out.clone(),
                jobs: a.jobs,
                objective: a.objective.clone(),
                config: a.ci.config.clone(),
                ci: a.ci.ci(),
                quiet: a.quiet,
            };
            run::sweep_command(&req, &mut std::io::stderr())
        }
        Command::Report(a) => run::report_command(&a.dir, &mut std::io::stderr()),
        Command::Import(a) => run::import_command(
            &a.input.paths,
            &a.input.read_options(false, 0),
            &a.output,
            a.redact,
            &mut std::io::stderr(),
        ),
        Command::Synth(a) => {
            let total = looptune::synth::write_corpus(&a.out, a.sessions, a.bytes, a.seed)
                .map_err(|e| Error::io(&a.out, e))?;
            eprintln!(
                "wrote {} sessions, {} bytes, to {}",
                a.sessions,
                total,
                a.out.display()
            );
            Ok(0)
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }
}
