//! Argument groups several commands share (inputs, detectors, CI outputs,
//! output files, the shape of a comparison) and the value lists clap checks.

use super::*;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::Args;
use std::path::PathBuf;

/// `--input-format` values: `auto`, `canonical` and every importer (aliases
/// hidden), listed in `--help` and checked by clap, then typed.
pub(super) fn input_formats() -> impl TypedValueParser<Value = crate::input::import::InputFormat> {
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
pub(super) fn family_names() -> PossibleValuesParser {
    PossibleValuesParser::new(
        crate::detect::families()
            .into_iter()
            .map(|f| PossibleValue::new(f.name())),
    )
}

/// `--profile` values: every profile of every family.
pub(super) fn profile_names() -> PossibleValuesParser {
    PossibleValuesParser::new(crate::detect::families().into_iter().flat_map(|f| {
        f.profiles()
            .into_iter()
            .map(|p| PossibleValue::new(p.name))
            .collect::<Vec<_>>()
    }))
}

#[derive(Debug, Args)]
pub(super) struct InputArgs {
    /// Session files or folders (walked recursively in byte order of paths); `-` reads stdin.
    /// Default: the agents' log folders that exist (~/.claude/projects, ~/.codex/sessions,
    /// ~/.gemini/tmp, ~/.openhands/sessions, opencode and goose data).
    #[arg(value_name = "PATHS")]
    pub(super) paths: Vec<PathBuf>,
    /// Skip bad lines (counted and reported per file) instead of stopping at the first.
    #[arg(help_heading = "Input", long)]
    pub(super) lenient: bool,
    /// Input format for every file: `auto` detects it per file by content.
    #[arg(help_heading = "Input", long, value_name = "NAME", default_value = "auto", value_parser = input_formats())]
    pub(super) input_format: crate::input::import::InputFormat,
    /// Exit 0 when no session is read (default: exit 2, so a CI job whose logs changed format fails).
    #[arg(help_heading = "Input", long)]
    pub(super) allow_empty: bool,
    #[command(flatten, next_help_heading = "Input")]
    pub(super) limits: LimitArgs,
}

/// Caps on what one input file may cost.
#[derive(Debug, Args)]
pub(super) struct LimitArgs {
    /// Most bytes one gzip or zstd file may expand to.
    #[arg(long, value_name = "BYTES", default_value_t = crate::input::MAX_GZIP_BYTES)]
    pub(super) max_gzip_bytes: u64,
    /// Most times a gzip or zstd file may expand (checked past 16 MiB decompressed).
    #[arg(long, value_name = "N", default_value_t = crate::input::MAX_GZIP_RATIO)]
    pub(super) max_gzip_ratio: u64,
    /// Canonical files larger than this are read in two passes of batches
    /// (tests set it low to read small files that way). Default: 16 MiB,
    /// 1 MiB for `sweep`.
    #[arg(long, value_name = "BYTES", hide = true)]
    pub(super) stream_above: Option<u64>,
}

impl InputArgs {
    pub(super) fn read_options(&self, digests: bool) -> ReadOptions {
        ReadOptions {
            lenient: self.lenient,
            format: self.input_format,
            digests,
            max_gzip_bytes: self.limits.max_gzip_bytes,
            max_gzip_ratio: self.limits.max_gzip_ratio,
            stream_above: self
                .limits
                .stream_above
                .unwrap_or(crate::input::STREAM_ABOVE),
        }
    }
}

#[derive(Debug, Args)]
pub(super) struct DetectorArgs {
    /// Detector families at their default profiles, comma-separated (e.g. `gemini,opencode`).
    #[arg(help_heading = "Detectors", long, value_delimiter = ',', value_name = "FAMILY", value_parser = family_names())]
    pub(super) detector: Vec<String>,
    /// Named profiles, comma-separated or repeated (each implies its family). Default: gemini-latest.
    #[arg(help_heading = "Detectors", long, value_delimiter = ',', value_name = "NAME", value_parser = profile_names())]
    pub(super) profile: Vec<String>,
    /// Override a parameter: KEY=VALUE for every selected family that has KEY, or FAMILY.KEY=VALUE.
    #[arg(help_heading = "Detectors", long = "set", value_name = "KEY=VALUE", value_parser = crate::detect::Setting::parse)]
    pub(super) sets: Vec<crate::detect::Setting>,
}

#[derive(Debug, Args)]
pub(super) struct CiOpts {
    /// Labels file (CSV or JSONL: session,label,onset_turn, and any other
    /// columns as group keys; or an Inspect Scout validation set); wins over
    /// inline labels. Repeatable: a session labelled differently in two files
    /// is an error.
    #[arg(help_heading = "Scoring", long, value_name = "FILE")]
    pub(super) labels: Vec<PathBuf>,
    /// Exit 2 when the labels file names sessions that are not in the input
    /// (default: one warning with their count and first ids).
    #[arg(help_heading = "Scoring", long)]
    pub(super) strict_labels: bool,
    /// Write a short Markdown summary (for a CI job summary page; `-`: stdout).
    #[arg(help_heading = "Outputs", long, value_name = "FILE")]
    pub(super) markdown: Option<PathBuf>,
    /// Write JUnit XML: one test case per gate, failing when it trips (`-`: stdout).
    #[arg(help_heading = "Outputs", long, value_name = "FILE")]
    pub(super) junit: Option<PathBuf>,
    /// JUnit also gets one test case per labelled session, failing on a
    /// false positive or a missed loop of the chosen configuration.
    #[arg(help_heading = "Outputs", long, requires = "junit")]
    pub(super) junit_sessions: bool,
    /// A gate on the chosen configuration, e.g. 'recall>=0.9' (any score name; >=, <=, >, <, ==, !=). Repeatable, or comma-separated.
    #[arg(help_heading = "CI gates", long = "require", value_delimiter = ',', value_name = "GATE", value_parser = crate::score::gates::Gate::parse)]
    pub(super) requires: Vec<crate::score::gates::Gate>,
    /// The configuration gates and JUnit evaluate: an id, label or profile name (default: the stock profile).
    #[arg(help_heading = "CI gates", long, value_name = "ID")]
    pub(super) config: Option<String>,
}

/// Optional files of the output folder.
#[derive(Debug, Args)]
pub(super) struct OutputOpts {
    /// Also write sweep.parquet, groups.parquet and detections.parquet: the
    /// CSVs' columns, typed (integers, doubles, strings; empty cells as
    /// nulls), zstd-compressed, for pandas, polars, DuckDB and pyarrow.
    #[arg(help_heading = "Outputs", long)]
    pub(super) parquet: bool,
}

impl OutputOpts {
    pub(super) fn options(&self) -> crate::report::outputs::OutputOptions {
        crate::report::outputs::OutputOptions {
            parquet: self.parquet,
        }
    }
}

impl CiOpts {
    pub(super) fn ci(&self) -> CiArgs {
        CiArgs {
            markdown: self.markdown.clone(),
            junit: self.junit.clone(),
            requires: self.requires.clone(),
            append_markdown: String::new(),
            json: false,
            junit_sessions: self.junit_sessions,
            diff_gates: Vec::new(),
        }
    }
}

/// How much of a comparison of two runs is printed (`diff`, `sweep --baseline`).
#[derive(Debug, Args)]
pub(super) struct DiffShapeArgs {
    /// Changed configurations listed, the gated one first (0: every one).
    #[arg(long, value_name = "N", default_value_t = crate::report::diff_out::DEFAULT_LIMIT)]
    pub(super) limit: usize,
    /// List every changed session of every listed configuration (default: the
    /// gated configuration's first 20).
    #[arg(long, short = 'v')]
    pub(super) verbose: bool,
}

impl DiffShapeArgs {
    pub(super) fn shape(&self) -> crate::report::diff_out::Shape {
        crate::report::diff_out::Shape {
            limit: self.limit,
            only: None,
            verbose: self.verbose,
        }
    }
}

pub(super) fn selection(d: &DetectorArgs) -> Selection {
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
