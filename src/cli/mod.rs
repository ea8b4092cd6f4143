//! Command-line arguments (clap derive) and their hand-over to the library.
//! Nothing here computes: each subcommand builds a request and calls `crate::run`.

// One file per command; what they share is in `common`.
mod common;
mod detectors;
mod diff;
mod import;
mod label;
mod merge;
mod replay;
mod report;
mod sweep;
pub use crate::detect::Selection;
pub use common::*;
pub use detectors::*;
pub use diff::*;
pub use import::*;
pub use label::*;
pub use merge::*;
pub use replay::*;
pub use report::*;
pub use sweep::*;

use crate::error::{Error, Result};
use crate::input::ReadOptions;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// `--input-format` values: `auto`, `canonical` and every importer (aliases
/// hidden), listed in `--help` and checked by clap, then typed.
fn input_formats() -> impl TypedValueParser<Value = crate::input::import::InputFormat> {
    let mut v = vec![
        PossibleValue::new("auto").help("detect the format per file, by content"),
        PossibleValue::new("canonical"),
    ];
    // Every importer's name and alias from the one registry; the short
    // aliases are accepted but not listed.
    v.extend(
        crate::input::import::format_names()
            .into_iter()
            .map(|f| PossibleValue::new(f).hide(matches!(f, "openai" | "chat"))),
    );
    PossibleValuesParser::new(v).try_map(|name| name.parse::<crate::input::import::InputFormat>())
}

/// `--detector` and `--family` values: every detector family.
fn family_names() -> PossibleValuesParser {
    PossibleValuesParser::new(
        crate::detect::families()
            .into_iter()
            .map(|f| PossibleValue::new(f.name())),
    )
}

/// `--profile` values: every profile of every family.
fn profile_names() -> PossibleValuesParser {
    PossibleValuesParser::new(crate::detect::families().into_iter().flat_map(|f| {
        f.profiles()
            .into_iter()
            .map(|p| PossibleValue::new(p.name))
            .collect::<Vec<_>>()
    }))
}

const EXIT_CODES: &str = "\
Exit codes:
  0  ok: everything ran and was written
  1  a gate (--require) or --fail-on-detection tripped
  2  bad input, configuration or usage (FILE:LINE: what is wrong); nothing written
  3  results were written, but a report (HTML, Markdown, JUnit) failed
  130, 143  interrupted (SIGINT, SIGTERM) while writing: the previous outputs are left whole";

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
    /// Re-render every output (the CSVs, summary.json, report.html) from a sweep folder's summary.json, without re-running.
    #[command(after_help = REPORT_HELP)]
    Report(ReportArgs),
    /// Combine the results of `sweep --shard I/N` runs into the full outputs.
    #[command(after_help = MERGE_HELP)]
    Merge(MergeArgs),
    /// Compare two sweep results of the same grid: changed verdicts and score deltas.
    #[command(after_help = DIFF_HELP)]
    Diff(DiffArgs),
    /// Convert native agent logs to canonical JSONL (one file, sessions tagged).
    #[command(after_help = IMPORT_HELP)]
    Import(ImportArgs),
    /// Label sessions in the terminal, most informative first (or print the queue with --suggest).
    #[command(after_help = LABEL_HELP)]
    Label(LabelArgs),
    /// List detector families, their profiles and every parameter with its source.
    #[command(after_help = DETECTORS_HELP)]
    Detectors(DetectorsArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_help = COMPLETIONS_HELP)]
    Completions(CompletionsArgs),
    /// Print the man page (roff) of looptune, or write one page per subcommand with --out-dir.
    #[command(after_help = MAN_HELP)]
    Man(ManArgs),
    /// Generate a seeded synthetic corpus (for benchmarks).
    #[command(hide = true)]
    Synth(SynthArgs),
}

#[derive(Debug, Args)]
struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

const REPORT_HELP: &str = "\
Examples:
  looptune report reports/sweep-default/            # rewrite every output from summary.json
  looptune report reports/sweep-default/ --parquet  # and add the Parquet files

Exit codes:
  0  ok: every output written
  2  bad input (the folder lacks summary.json, or it is damaged or from another version)
  3  the report could not be written (nothing replaced)";

const IMPORT_HELP: &str = "\
Examples:
  looptune import ~/.claude/projects -o claude.jsonl
  looptune import --redact ~/.codex/sessions -o codex.jsonl.gz   # masked, compressed
  looptune import --input-format gemini-cli chats/ -o gemini.jsonl
  cat session.json | looptune import - -o session.jsonl

Exit codes:
  0  ok: the file was written
  2  bad input, configuration or usage (FILE:LINE: what is wrong); nothing written";

const DETECTORS_HELP: &str = "\
Examples:
  looptune detectors                         # every family, profile and parameter
  looptune detectors --family gemini
  looptune detectors --format json | jq .

Exit codes:
  0  ok
  2  unknown family";

const COMPLETIONS_HELP: &str = "\
Examples:
  looptune completions bash > ~/.local/share/bash-completion/completions/looptune
  looptune completions zsh > \"${fpath[1]}/_looptune\"
  looptune completions fish > ~/.config/fish/completions/looptune.fish

Exit codes:
  0  ok
  2  unknown shell";

const MAN_HELP: &str = "\
Examples:
  looptune man > looptune.1 && man ./looptune.1
  looptune man --out-dir man/man1 && man -M man looptune-sweep   # every page
  sudo looptune man --out-dir /usr/local/share/man/man1

Exit codes:
  0  ok";

#[derive(Debug, Args)]
struct ManArgs {
    /// Write looptune.1 and one page per subcommand (looptune-replay.1, ...)
    /// into DIR (created if missing) instead of printing the top page.
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
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
    /// `prose`: canonical JSONL, mostly streamed text in small chunks (the
    /// first benchmark corpus); `real`: the real corpus's record mix and
    /// sizes, in canonical, Claude Code, Codex and Gemini CLI files, with
    /// labels.csv.
    #[arg(long, value_enum, default_value_t = SynthShape::Prose)]
    shape: SynthShape,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum SynthShape {
    Prose,
    Real,
}

const LABEL_HELP: &str = "\
Keys: j/k or arrows next/previous turn, PageDown/PageUp ten turns, g/G first/last
turn, ]/[ next/previous turn with a detection, / TEXT Enter the next turn holding
TEXT, n/p next/previous session, l labels the session `loop` with onset = the
turn under the cursor, c labels it `clean`, e edits its note, s skips, u undoes,
? shows help, q quits. Every label and note is written to FILE at once.

Examples:
  looptune label runs/ --labels labels.csv        # created if missing
  looptune label --suggest runs/ > queue.csv      # the ranked queue, no terminal
  looptune label --labels labels.csv --export scout validation.csv   # for Inspect Scout";

#[derive(Debug, Args)]
struct LabelArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Labels file to write (CSV or JSONL: session,label,onset_turn); other rows and columns are kept.
    #[arg(long, value_name = "FILE", required_unless_present = "suggest")]
    labels: Option<PathBuf>,
    /// Print the ranked queue as CSV (session,file,reason, first detection turn per family) instead of opening the terminal.
    #[arg(long)]
    suggest: bool,
    /// Write the --labels file in another tool's form and stop: `scout` (an Inspect Scout
    /// validation set, `id,target[,split]`; JSON, JSONL or YAML by FILE's extension).
    #[arg(long, num_args = 2, value_names = ["FORMAT", "FILE"], conflicts_with = "suggest", requires = "labels")]
    export: Vec<String>,
    /// Worker threads for reading files and replaying (default: all cores).
    #[arg(long, short = 'j', value_name = "N", default_value_t = 0)]
    jobs: usize,
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

Exit codes:
  0  ok: everything ran and was written
  1  a gate (--require) tripped
  2  bad input, configuration or usage (FILE:LINE: what is wrong); nothing written
  3  results were written, but a report (HTML, Markdown, JUnit) failed
  130, 143  interrupted (SIGINT, SIGTERM): the previous outputs are left whole";

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

Exit codes:
  0  ok: everything ran and was written
  1  --fail-on-detection or a gate (--require) tripped
  2  bad input, configuration or usage (FILE:LINE: what is wrong); nothing written
  3  results were written, but a report (Markdown, JUnit) failed";

#[derive(Debug, Args)]
struct InputArgs {
    /// Session files or folders (walked recursively in byte order of paths); `-` reads stdin.
    /// Default: the agents' log folders that exist (~/.claude/projects, ~/.codex/sessions,
    /// ~/.gemini/tmp, ~/.openhands/sessions, opencode and goose data).
    #[arg(value_name = "PATHS")]
    paths: Vec<PathBuf>,
    /// Skip bad lines (counted and reported per file) instead of stopping at the first.
    #[arg(help_heading = "Input", long)]
    lenient: bool,
    /// Input format for every file: `auto` detects it per file by content.
    #[arg(help_heading = "Input", long, value_name = "NAME", default_value = "auto", value_parser = input_formats())]
    input_format: crate::input::import::InputFormat,
    /// Exit 0 when no session is read (default: exit 2, so a CI job whose logs changed format fails).
    #[arg(help_heading = "Input", long)]
    allow_empty: bool,
    #[command(flatten, next_help_heading = "Input")]
    limits: LimitArgs,
}

/// Caps on what one input file may cost.
#[derive(Debug, Args)]
struct LimitArgs {
    /// Most bytes one gzip or zstd file may expand to.
    #[arg(long, value_name = "BYTES", default_value_t = crate::input::MAX_GZIP_BYTES)]
    max_gzip_bytes: u64,
    /// Most times a gzip or zstd file may expand (checked past 16 MiB decompressed).
    #[arg(long, value_name = "N", default_value_t = crate::input::MAX_GZIP_RATIO)]
    max_gzip_ratio: u64,
    /// Canonical files larger than this are read in two passes of batches
    /// (tests set it low to read small files that way).
    #[arg(long, value_name = "BYTES", default_value_t = crate::input::STREAM_ABOVE, hide = true)]
    stream_above: u64,
}

impl InputArgs {
    fn read_options(&self, digests: bool, jobs: usize) -> ReadOptions {
        ReadOptions {
            lenient: self.lenient,
            format: self.input_format,
            digests,
            jobs,
            max_gzip_bytes: self.limits.max_gzip_bytes,
            max_gzip_ratio: self.limits.max_gzip_ratio,
            stream_above: self.limits.stream_above,
        }
    }
}

#[derive(Debug, Args)]
struct DetectorArgs {
    /// Detector families at their default profiles, comma-separated (e.g. `gemini,opencode`).
    #[arg(help_heading = "Detectors", long, value_delimiter = ',', value_name = "FAMILY", value_parser = family_names())]
    detector: Vec<String>,
    /// Named profiles, comma-separated or repeated (each implies its family). Default: gemini-latest.
    #[arg(help_heading = "Detectors", long, value_delimiter = ',', value_name = "NAME", value_parser = profile_names())]
    profile: Vec<String>,
    /// Override a parameter: KEY=VALUE for every selected family that has KEY, or FAMILY.KEY=VALUE.
    #[arg(help_heading = "Detectors", long = "set", value_name = "KEY=VALUE", value_parser = crate::detect::Setting::parse)]
    sets: Vec<crate::detect::Setting>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    /// A table for people: sessions with a detection, then a summary.
    Table,
    /// One JSON object per session, sorted by session id.
    Json,
}

/// `diff --format`.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum DiffFormatArg {
    /// A summary for people: counts, one line per changed configuration, the gated one's sessions.
    Table,
    /// One JSON object per changed verdict (config, session, base, new, turns).
    Json,
}

/// `detectors --format`.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum ListFormat {
    /// Families, profiles and parameters as text.
    Table,
    /// One JSON object per family, with its profiles and parameters.
    Json,
}

#[derive(Debug, Args)]
struct ReplayArgs {
    #[command(flatten)]
    input: InputArgs,
    #[command(flatten)]
    detectors: DetectorArgs,
    /// Report every detection (clearDetection() after each), with its strike count.
    #[arg(help_heading = "Detectors", long)]
    all: bool,
    /// Output format on stdout.
    #[arg(help_heading = "Outputs", long, value_enum, default_value = "table")]
    format: Format,
    /// Worker threads for reading files and replaying (default: all cores). Output is identical for every value.
    #[arg(long, short = 'j', value_name = "N", default_value_t = 0)]
    jobs: usize,
    /// Exit with code 1 when any session has a detection (a CI gate).
    #[arg(help_heading = "CI gates", long)]
    fail_on_detection: bool,
    /// No progress bar.
    #[arg(long, short = 'q')]
    quiet: bool,
    #[command(flatten)]
    ci: CiOpts,
}

#[derive(Debug, Args)]
struct CiOpts {
    /// Labels file (CSV or JSONL: session,label,onset_turn, and any other
    /// columns as group keys; or an Inspect Scout validation set); wins over
    /// inline labels. Repeatable: a session labelled differently in two files
    /// is an error.
    #[arg(help_heading = "Scoring", long, value_name = "FILE")]
    labels: Vec<PathBuf>,
    /// Exit 2 when the labels file names sessions that are not in the input
    /// (default: one warning with their count and first ids).
    #[arg(help_heading = "Scoring", long)]
    strict_labels: bool,
    /// Write a short Markdown summary (for a CI job summary page; `-`: stdout).
    #[arg(help_heading = "Outputs", long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Write JUnit XML: one test case per labeled session for the chosen configuration (`-`: stdout).
    #[arg(help_heading = "Outputs", long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// A gate on the chosen configuration, e.g. 'recall>=0.9' (any score name; >=, <=, >, <, ==, !=). Repeatable, or comma-separated.
    #[arg(help_heading = "CI gates", long = "require", value_delimiter = ',', value_name = "GATE", value_parser = crate::score::gates::Gate::parse)]
    requires: Vec<crate::score::gates::Gate>,
    /// The configuration gates and JUnit evaluate: an id, label or profile name (default: the stock profile).
    #[arg(help_heading = "CI gates", long, value_name = "ID")]
    config: Option<String>,
}

/// Optional files of the output folder.
#[derive(Debug, Args)]
struct OutputOpts {
    /// Also write sweep.parquet, groups.parquet and detections.parquet: the
    /// CSVs' columns, typed (integers, doubles, strings; empty cells as
    /// nulls), zstd-compressed, for pandas, polars, DuckDB and pyarrow.
    #[arg(help_heading = "Outputs", long)]
    parquet: bool,
}

impl OutputOpts {
    fn options(&self) -> crate::report::output::OutputOptions {
        crate::report::output::OutputOptions {
            parquet: self.parquet,
        }
    }
}

impl CiOpts {
    fn ci(&self) -> CiArgs {
        CiArgs {
            markdown: self.markdown.clone(),
            junit: self.junit.clone(),
            requires: self.requires.clone(),
            append_markdown: String::new(),
            json: false,
        }
    }
}

#[derive(Debug, Args)]
struct SweepArgs {
    /// Session files or folders; `-` reads stdin. Default: the agents' log folders that
    /// exist (~/.claude/projects, ~/.codex/sessions, ~/.gemini/tmp, ...).
    #[arg(value_name = "PATHS")]
    paths: Vec<PathBuf>,
    /// Skip bad input lines (counted and reported per file) instead of stopping at the first.
    #[arg(help_heading = "Input", long)]
    lenient: bool,
    /// Input format for every file: `auto` detects it per file by content.
    #[arg(help_heading = "Input", long, value_name = "NAME", default_value = "auto", value_parser = input_formats())]
    input_format: crate::input::import::InputFormat,
    /// Exit 0 when no session is read (default: exit 2, so a CI job whose logs changed format fails).
    #[arg(help_heading = "Input", long)]
    allow_empty: bool,
    #[command(flatten, next_help_heading = "Input")]
    limits: LimitArgs,
    /// Print the embedded default grid as TOML and exit.
    #[arg(help_heading = "Detectors", long)]
    print_default_grid: bool,
    /// Grid file (TOML); default: the embedded grid.
    #[arg(help_heading = "Detectors", long, value_name = "FILE")]
    grid: Option<PathBuf>,
    /// Output folder (default reports/sweep-<grid name>/). `-o`/`--output` is the output in every command.
    #[arg(
        help_heading = "Outputs",
        long,
        short = 'o',
        visible_alias = "output",
        value_name = "DIR"
    )]
    out: Option<PathBuf>,
    /// How to pick the recommended configuration: `default` (no more false
    /// positives than the baseline, then highest recall, then lowest median
    /// turns-to-detection, then closest to the baseline's values), `f1`, or
    /// `max-fp=N` (at most N false positives, then as default).
    #[arg(help_heading = "Scoring", long, value_name = "RULE", default_value = "default", value_parser = crate::score::metrics::Objective::parse)]
    objective: crate::score::metrics::Objective,
    /// The profile the recommendation is compared with and whose family it is
    /// chosen from (default: the profile of the grid's first [[grid]];
    /// gemini-latest for the embedded grid). A folder an earlier sweep wrote
    /// instead compares this run with that one (`looptune diff`), for gates
    /// such as 'new_false_positives==0'.
    #[arg(help_heading = "Scoring", long, value_name = "PROFILE|DIR")]
    baseline: Option<String>,
    /// Let a configuration of any family be recommended (default: only the baseline's family).
    #[arg(help_heading = "Scoring", long)]
    across_families: bool,
    /// Group sessions by KEY for per-group scores (groups.csv), the per-group
    /// guard and leave-one-group-out validation: `agent` (the agent that
    /// recorded it, else its log format), `model`, `source` (the first folder
    /// under the input path), or any column of the labels file (`repo`, `split`...).
    #[arg(
        help_heading = "Scoring",
        long,
        value_name = "KEY",
        default_value = "agent"
    )]
    group_by: String,
    /// `per-group`: a candidate may not catch fewer of any group's loops, nor
    /// give any group more false positives, than the baseline (the union
    /// search too); `pooled`: only the pooled counts matter.
    #[arg(help_heading = "Scoring", long, value_name = "RULE", default_value = "per-group", value_parser = ["per-group", "pooled"])]
    guard: String,
    /// Test sessions: recommendation, family bests and unions are chosen on
    /// PATHS only, then scored once on these (also: a `split` column in the
    /// labels file, `train` or `test`).
    #[arg(help_heading = "Input", long, value_name = "PATH", num_args = 1..)]
    test: Vec<PathBuf>,
    /// Cross-validation folds for the out-of-sample estimate (stratified; fewer
    /// when there are fewer labelled loops).
    #[arg(help_heading = "Scoring", long, value_name = "K", default_value_t = 5)]
    folds: usize,
    /// Seed of the cross-validation folds and the bootstrap intervals.
    #[arg(help_heading = "Scoring", long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// Also search unions of up to N configurations, one per family (a session
    /// is flagged when any member fires, at the earliest member's turn), by
    /// forward selection under the same rule, cross-validated. No agent ships
    /// a union: it is something you would have to build.
    #[arg(help_heading = "Scoring", long, value_name = "N", default_value_t = 0)]
    combine: usize,
    /// Replay only shard I of N (sessions split by a stable hash of their id)
    /// and write that part's result; combine the parts with `looptune merge`.
    #[arg(long, value_name = "I/N", value_parser = crate::result::Shard::parse)]
    shard: Option<crate::result::Shard>,
    /// Worker threads for reading files and replaying (default: all cores). CSV output is identical for every value.
    #[arg(long, short = 'j', value_name = "N", default_value_t = 0)]
    jobs: usize,
    #[command(flatten)]
    ci: CiOpts,
    #[command(flatten)]
    files: OutputOpts,
    /// No progress bar.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Refuse grids that expand to more configurations than this (counted before any work; 0 = the default; at most what this machine's memory holds, at about 16 KiB per configuration).
    #[arg(help_heading = "Detectors", long, value_name = "N", default_value_t = crate::util::limits::DEFAULT_MAX_CONFIGS)]
    max_configs: usize,
    #[command(flatten, next_help_heading = "Outputs")]
    shape: DiffShapeArgs,
    /// Print one JSON object on stdout (baseline, recommendation, gates and
    /// their verdicts) instead of the text summary, for scripts.
    #[arg(help_heading = "Outputs", long)]
    json: bool,
}

const MERGE_HELP: &str = "\
Examples:
  # four machines, one shard each (the shard of a session is a stable hash of its id)
  looptune sweep logs/ --labels labels.csv --shard 2/4 --out part-2
  # then, on any machine, with the four folders (or their summary.json files)
  looptune merge part-1 part-2 part-3 part-4 --out reports/nightly

The merged outputs are byte-identical to one machine's run over the same
sessions (wall times aside). Parts must come from the same grid, options,
inputs and labels, and every shard must be given exactly once.

Exit codes: 0 ok, 1 a gate tripped, 2 bad input or usage, 3 results written but
a report failed.";

const DIFF_HELP: &str = "\
Examples:
  looptune diff reports/last-night reports/tonight
  looptune diff base/summary.json new/summary.json --format json
  looptune diff base new --markdown \"$GITHUB_STEP_SUMMARY\" \\
      --require 'new_false_positives==0' --require 'new_missed_loops==0'

A verdict is what detections.csv calls it: tp, early, fp, fn (missed loop), tn,
unlabeled (fired, no label), quiet (silent, no label), or absent (the session or
configuration is not in that run). Gates check the new run's chosen
configuration (its baseline, or --config): changed_verdicts,
new_false_positives, new_missed_loops, fixed_false_positives, new_catches.
`sweep --baseline DIR` runs the same comparison against a stored earlier run.

The table is a summary: configurations in both runs and in one only (a
warning when the grids differ), one line per changed configuration (the gated
one first, --limit N of them), then the gated configuration's changed
sessions (--verbose: every listed configuration's, all of them).

Exit codes: 0 ok, 1 a gate tripped, 2 bad input or usage, 3 the Markdown
summary could not be written.";

/// How much of a comparison of two runs is printed (`diff`, `sweep --baseline`).
#[derive(Debug, Args)]
struct DiffShapeArgs {
    /// Changed configurations listed, the gated one first (0: every one).
    #[arg(long, value_name = "N", default_value_t = crate::report::diff_out::DEFAULT_LIMIT)]
    limit: usize,
    /// List every changed session of every listed configuration (default: the
    /// gated configuration's first 20).
    #[arg(long, short = 'v')]
    verbose: bool,
}

impl DiffShapeArgs {
    fn shape(&self) -> crate::report::diff_out::Shape {
        crate::report::diff_out::Shape {
            limit: self.limit,
            only: None,
            verbose: self.verbose,
        }
    }
}

#[derive(Debug, Args)]
struct DiffArgs {
    /// The earlier result: a folder a sweep wrote, or its summary.json.
    #[arg(value_name = "BASE")]
    base: PathBuf,
    /// The new result.
    #[arg(value_name = "NEW")]
    new: PathBuf,
    /// Output format.
    #[arg(help_heading = "Outputs", long, value_enum, default_value = "table")]
    format: DiffFormatArg,
    /// Write the changes as Markdown (for a CI job summary page; under 64 KB; `-`: stdout).
    #[arg(help_heading = "Outputs", long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// A gate on the changes, e.g. 'new_false_positives==0'. Repeatable, or comma-separated.
    #[arg(help_heading = "CI gates", long = "require", value_delimiter = ',', value_name = "GATE", value_parser = crate::score::gates::Gate::parse)]
    requires: Vec<crate::score::gates::Gate>,
    /// The configuration gates check and the only one listed: an id, label
    /// or stock profile of the new run (default: its chosen configuration).
    #[arg(help_heading = "CI gates", long, value_name = "ID")]
    config: Option<String>,
    #[command(flatten, next_help_heading = "Outputs")]
    shape: DiffShapeArgs,
    /// Print one JSON object on stdout (what changed, the gated configuration,
    /// the gates and their verdicts) instead of the text summary, for scripts.
    #[arg(help_heading = "Outputs", long)]
    json: bool,
}

#[derive(Debug, Args)]
struct MergeArgs {
    /// Folders written by `sweep --shard I/N` (or their summary.json files).
    #[arg(required = true, value_name = "PARTS")]
    parts: Vec<PathBuf>,
    /// Output folder for the merged outputs.
    #[arg(help_heading = "Outputs", long, short = 'o', value_name = "DIR")]
    out: PathBuf,
    #[command(flatten)]
    files: OutputOpts,
    /// Write a short Markdown summary (for a CI job summary page; `-`: stdout).
    #[arg(help_heading = "Outputs", long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Write JUnit XML: one test case per labeled session for the chosen configuration (`-`: stdout).
    #[arg(help_heading = "Outputs", long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// A gate on the chosen configuration, e.g. 'recall>=0.9'. Repeatable, or comma-separated.
    #[arg(help_heading = "CI gates", long = "require", value_delimiter = ',', value_name = "GATE", value_parser = crate::score::gates::Gate::parse)]
    requires: Vec<crate::score::gates::Gate>,
    /// Print one JSON object on stdout (baseline, recommendation, gates and
    /// their verdicts) instead of the text summary, for scripts.
    #[arg(help_heading = "Outputs", long)]
    json: bool,
}

#[derive(Debug, Args)]
struct ReportArgs {
    /// A folder written by `looptune sweep`.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    #[command(flatten)]
    files: OutputOpts,
}

#[derive(Debug, Args)]
struct ImportArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Output file (canonical JSONL; `.gz` compresses; `-`: stdout). Never an input. `-o`/`--out` is the output in every command.
    #[arg(long, short = 'o', visible_alias = "out", value_name = "OUT.jsonl")]
    output: PathBuf,
    /// Mask common credential patterns (API keys, bearer tokens, private keys) in text and arguments.
    #[arg(long)]
    redact: bool,
}

#[derive(Debug, Args)]
struct DetectorsArgs {
    /// Only this family.
    #[arg(long, value_name = "FAMILY", value_parser = family_names())]
    family: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: ListFormat,
}

/// `--baseline` names an earlier run when it is a folder with a summary.json
/// (or such a file), else a profile.
fn is_run_dir(v: &str) -> bool {
    let p = std::path::Path::new(v);
    p.join("summary.json").is_file() || (p.is_file() && v.ends_with(".json"))
}

/// Run the parsed command; returns the exit code.
pub fn dispatch(mut cli: Cli, out: &mut dyn std::io::Write) -> Result<i32> {
    // No PATHS: the agents' default log folders (said on stderr).
    // `label --export` reads only its labels file.
    let exporting = matches!(&cli.command, Command::Label(a) if !a.export.is_empty());
    match &mut cli.command {
        Command::Replay(ReplayArgs { input, .. })
        | Command::Import(ImportArgs { input, .. })
        | Command::Label(LabelArgs { input, .. })
            if input.paths.is_empty() && !exporting =>
        {
            input.paths = crate::input::logdirs::default_paths(&mut std::io::stderr())?;
        }
        Command::Sweep(a) if a.paths.is_empty() && !a.print_default_grid => {
            a.paths = crate::input::logdirs::default_paths(&mut std::io::stderr())?;
        }
        _ => {}
    }
    match cli.command {
        Command::Replay(a) => {
            crate::util::limits::check_jobs(a.jobs)?;
            let req = ReplayRequest {
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
                allow_empty: a.input.allow_empty,
                strict_labels: a.ci.strict_labels,
            };
            replay_command(&req, &mut *out)
        }
        Command::Sweep(a) => {
            if a.print_default_grid {
                out.write_all(crate::sweep::grid::DEFAULT_GRID.as_bytes())
                    .map_err(|e| Error::io("<stdout>", e))?;
                return Ok(0);
            }
            crate::util::limits::check_jobs(a.jobs)?;
            let req = SweepRequest {
                paths: a.paths.clone(),
                read: ReadOptions {
                    lenient: a.lenient,
                    format: a.input_format,
                    digests: true,
                    jobs: a.jobs,
                    max_gzip_bytes: a.limits.max_gzip_bytes,
                    max_gzip_ratio: a.limits.max_gzip_ratio,
                    stream_above: a.limits.stream_above,
                },
                grid: a.grid.clone(),
                labels: a.ci.labels.clone(),
                out: a.out.clone(),
                options: crate::score::SweepOptions {
                    objective: a.objective.clone(),
                    baseline: a.baseline.clone().filter(|b| !is_run_dir(b)),
                    across_families: a.across_families,
                    folds: a.folds,
                    seed: a.seed,
                    combine: a.combine,
                    chosen: a.ci.config.clone(),
                    jobs: a.jobs,
                    group_by: a.group_by.clone(),
                    guard: crate::score::recommend::Guard::parse(&a.guard)
                        .expect("clap checked it"),
                },
                test: a.test.clone(),
                shard: a.shard,
                baseline_run: a
                    .baseline
                    .as_deref()
                    .filter(|b| is_run_dir(b))
                    .map(PathBuf::from),
                ci: CiArgs {
                    json: a.json,
                    ..a.ci.ci()
                },
                quiet: a.quiet,
                max_configs: a.max_configs,
                allow_empty: a.allow_empty,
                strict_labels: a.ci.strict_labels,
                diff_shape: a.shape.shape(),
                outputs: a.files.options(),
            };
            sweep_command(&req, &mut *out, &mut std::io::stderr())
        }
        Command::Report(a) => report_command(&a.dir, &a.files.options(), &mut std::io::stderr()),
        Command::Diff(a) => diff_command(
            &a.base,
            &a.new,
            &DiffRequest {
                format: match a.format {
                    DiffFormatArg::Json => DiffFormat::Json,
                    DiffFormatArg::Table => DiffFormat::Table,
                },
                config: a.config.clone(),
                shape: a.shape.shape(),
            },
            &CiArgs {
                markdown: a.markdown.clone(),
                junit: None,
                requires: a.requires.clone(),
                append_markdown: String::new(),
                json: a.json,
            },
            &mut *out,
            &mut std::io::stderr(),
        ),
        Command::Merge(a) => merge_command(
            &a.parts,
            &a.out,
            &CiArgs {
                markdown: a.markdown.clone(),
                junit: a.junit.clone(),
                requires: a.requires.clone(),
                append_markdown: String::new(),
                json: a.json,
            },
            &a.files.options(),
            &mut *out,
            &mut std::io::stderr(),
        ),
        Command::Import(a) => import_command(
            &a.input.paths,
            &a.input.read_options(false, 0),
            &a.output,
            a.redact,
            a.input.allow_empty,
            &mut std::io::stderr(),
        ),
        Command::Synth(a) => {
            let (total, files) = match a.shape {
                SynthShape::Prose => (
                    crate::input::synth::write_corpus(&a.out, a.sessions, a.bytes, a.seed)
                        .map_err(|e| Error::io(&a.out, e))?,
                    a.sessions.clamp(1, 100) as u64,
                ),
                SynthShape::Real => {
                    let w = crate::input::synth::real::write_corpus(
                        &a.out, a.sessions, a.bytes, a.seed,
                    )
                    .map_err(|e| Error::io(&a.out, e))?;
                    (w.bytes, w.files)
                }
            };
            eprintln!(
                "wrote {} sessions, {} bytes in {} files, to {}",
                a.sessions,
                total,
                files,
                a.out.display()
            );
            Ok(0)
        }
        // Both rendered to memory first: a write error (a closed pipe) is then
        // an ordinary error, not a panic inside the generator.
        Command::Completions(a) => {
            let mut buf = Vec::new();
            clap_complete::generate(a.shell, &mut Cli::command(), "looptune", &mut buf);
            out.write_all(&buf).map_err(|e| Error::io("<stdout>", e))?;
            Ok(0)
        }
        Command::Man(a) => {
            if let Some(dir) = &a.out_dir {
                for p in write_man_pages(dir)? {
                    eprintln!("wrote {}", p.display());
                }
                return Ok(0);
            }
            let mut buf = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .render(&mut buf)
                .map_err(|e| Error::io("<stdout>", e))?;
            out.write_all(&buf).map_err(|e| Error::io("<stdout>", e))?;
            Ok(0)
        }
        Command::Label(a) if !a.export.is_empty() => export_labels_command(
            a.labels.as_deref().expect("clap requires --labels"),
            &a.export[0],
            std::path::Path::new(&a.export[1]),
            &a.input.paths,
        ),
        Command::Label(a) => label_command(
            &LabelRequest {
                paths: a.input.paths.clone(),
                read: a.input.read_options(false, a.jobs),
                labels: a.labels.clone(),
                suggest: a.suggest,
                jobs: a.jobs,
            },
            &mut *out,
        ),
        Command::Detectors(a) => {
            detectors_command(
                a.family.as_deref(),
                matches!(a.format, ListFormat::Json),
                &mut *out,
            )?;
            Ok(0)
        }
    }
}

/// `man --out-dir DIR`: the top page and one per visible subcommand (the
/// pages the top page's SEE ALSO names), written as one set.
fn write_man_pages(dir: &std::path::Path) -> Result<Vec<PathBuf>> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut pages = vec![cmd.clone()];
    pages.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
    let mut set = crate::util::outdir::OutputSet::new();
    for page in pages {
        let man = clap_mangen::Man::new(page);
        let target = dir.join(man.get_filename());
        let mut buf = Vec::new();
        man.render(&mut buf).map_err(|e| Error::io(&target, e))?;
        set.write(&target, &buf)?;
    }
    set.commit()
}

fn selection(d: &DetectorArgs) -> Selection {
    Selection {
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

/// The binary's whole work: parse arguments, run, and the exit code (errors
/// reported on stderr).
pub fn main() -> i32 {
    // The process ends right after the command: no need to free its data.
    LEAVE_TO_EXIT.store(true, std::sync::atomic::Ordering::Relaxed);
    main_from(std::env::args_os())
}

/// [`main`] with the arguments given (the program name first), as the
/// Python package's `looptune` command runs it inside its interpreter.
pub fn main_from<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = Cli::parse_from(args);
    let stdout = std::io::stdout();
    match dispatch(cli, &mut stdout.lock()) {
        Ok(code) => code,
        // A closed pipe (`looptune detectors | head -1`): the reader has what it
        // wanted; end quietly and successfully, as `cat` or `grep` do.
        Err(e) if is_broken_pipe(&e) => 0,
        Err(e) => {
            report(&e);
            e.exit_code()
        }
    }
}

/// Run a command line (without the program name) in this process, its
/// results written to `out` and clap's own messages (`--help`, usage
/// errors) to `out` or returned as [`Error::Usage`]: the Python package's
/// entry into the commands. Progress and warnings still go to stderr.
pub fn run_from<I, T>(args: I, out: &mut dyn std::io::Write) -> Result<i32>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let argv = std::iter::once(std::ffi::OsString::from("looptune"))
        .chain(args.into_iter().map(Into::into));
    match Cli::try_parse_from(argv) {
        Ok(cli) => dispatch(cli, out),
        Err(e) => match e.kind() {
            clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                write!(out, "{}", e.render()).map_err(|x| Error::io("<stdout>", x))?;
                Ok(crate::error::EXIT_OK)
            }
            _ => Err(Error::Usage(
                e.render()
                    .to_string()
                    .trim()
                    .trim_start_matches("error: ")
                    .to_string(),
            )),
        },
    }
}

fn is_broken_pipe(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. }
        if source.kind() == std::io::ErrorKind::BrokenPipe)
}

/// The error, then each cause that adds something (an I/O error's message
/// already ends with its cause: it is not repeated). Text from logs may be
/// quoted: no control character reaches the terminal.
fn report(e: &Error) {
    let mut shown = e.to_string();
    eprintln!("error: {}", crate::util::escape::terminal_lines(&shown));
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !shown.contains(&text) {
            eprintln!(
                "  caused by: {}",
                crate::util::escape::terminal_lines(&text)
            );
            shown.push_str(&text);
        }
        source = cause.source();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }
}
