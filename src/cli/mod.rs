//! The command line: the top-level arguments, the dispatch of each parsed
//! command to its file, and the exit code. Nothing here computes.

// One file per command (its arguments, its request, its run); argument
// groups several commands share are in `args`, what they share at run time
// in `common`.
mod args;
mod common;
mod detectors;
mod diff;
mod export;
mod guard;
mod import;
mod label;
mod man;
mod merge;
mod replay;
mod report;
mod sweep;
mod synth;
mod watch;
pub use crate::detect::Selection;
use args::*;
pub use common::*;
pub use detectors::*;
pub use diff::*;
pub use export::*;
use guard::*;
pub use import::*;
pub use label::*;
use man::*;
pub use merge::*;
pub use replay::*;
pub use report::*;
pub use sweep::*;
use synth::*;
use watch::*;

use crate::error::{Error, Result};
use crate::input::ReadOptions;
use clap::{Parser, Subcommand};

const EXIT_CODES: &str = "\
Exit codes:
  0  ok: everything ran and was written
  1  a gate (--require) or --fail-on-detection tripped
  2  bad input, configuration or usage (FILE:LINE: what is wrong); nothing written
  3  a report (HTML, Markdown, JUnit) could not be written: nothing of the set was replaced
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
    /// Write a configuration (of a sweep, or a profile) for an agent: a looptune TOML file, a settings fragment or a diff of the constants.
    #[command(after_help = EXPORT_HELP)]
    Export(ExportArgs),
    /// Block a looping tool call from an agent's pre-tool hook (Claude Code, Gemini CLI): the tuned rule, live.
    #[command(after_help = GUARD_HELP)]
    Guard(GuardArgs),
    /// Follow agents' log folders as sessions are written and print each detection as it happens.
    #[command(after_help = WATCH_HELP)]
    Watch(WatchArgs),
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

/// What a command's memory looks like, for the binary to set its allocator
/// by: the library names the work, `main.rs` owns the allocator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Files parsed and dropped one after another, and measured for speed
    /// (`replay`, `import`...): freed pages are best kept for the next file.
    Streaming,
    /// Results held while more are made, and measured for peak memory
    /// (`sweep`, `merge`, `diff`, `report`): freed pages are best returned
    /// to the system at once, or a worker thread keeps what another needs.
    Holding,
}

impl Command {
    fn workload(&self) -> Workload {
        match self {
            Command::Sweep(_) | Command::Merge(_) | Command::Diff(_) | Command::Report(_) => {
                Workload::Holding
            }
            _ => Workload::Streaming,
        }
    }
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
        Command::Watch(a) if a.paths.is_empty() => {
            a.paths = crate::input::logdirs::default_paths(&mut std::io::stderr())?;
        }
        Command::Sweep(a) if a.paths.is_empty() && !a.print_default_grid => {
            a.paths = crate::input::logdirs::default_paths(&mut std::io::stderr())?;
        }
        _ => {}
    }
    match cli.command {
        Command::Replay(a) => replay_command(&a.request()?, &mut *out),
        Command::Sweep(a) => {
            if a.print_default_grid {
                out.write_all(crate::sweep::grid::DEFAULT_GRID.as_bytes())
                    .map_err(|e| Error::io("<stdout>", e))?;
                return Ok(0);
            }
            sweep_command(&a.request()?, &mut *out, &mut std::io::stderr())
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
                junit: a.junit.clone(),
                requires: a.requires.clone(),
                json: a.json,
                ..Default::default()
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
                json: a.json,
                junit_sessions: a.junit_sessions,
                ..Default::default()
            },
            &a.files.options(),
            a.quiet,
            &mut *out,
            &mut std::io::stderr(),
        ),
        Command::Export(a) => export_command(&a.request()?, &mut *out),
        Command::Guard(a) => guard_command(
            &a,
            &mut std::io::stdin().lock(),
            &mut *out,
            &mut std::io::stderr(),
        ),
        Command::Watch(a) => watch_command(&a, &mut *out),
        Command::Import(a) => import_command(&a.request(), &mut std::io::stderr()),
        Command::Synth(a) => synth_command(&a),
        Command::Completions(a) => completions_command(&a, &mut *out),
        Command::Man(a) => man_command(&a, &mut *out),
        Command::Label(a) if !a.export.is_empty() => export_labels_command(
            a.labels.as_deref().expect("clap requires --labels"),
            &a.export[0],
            std::path::Path::new(&a.export[1]),
            &a.input.paths,
        ),
        Command::Label(a) => label_command(
            &LabelRequest {
                paths: a.input.paths.clone(),
                read: a.input.read_options(false),
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

/// The binary's whole work: parse arguments, run, and the exit code (errors
/// reported on stderr).
pub fn main() -> i32 {
    main_with(|_| {})
}

/// [`main`], telling `set_up` the command's [`Workload`] once the
/// arguments are parsed, before any work (the binary sets its allocator).
pub fn main_with(set_up: impl FnOnce(Workload)) -> i32 {
    // The process ends right after the command: no need to free its data.
    LEAVE_TO_EXIT.store(true, std::sync::atomic::Ordering::Relaxed);
    let cli = Cli::parse_from(std::env::args_os());
    set_up(cli.command.workload());
    run_parsed(cli)
}

/// [`main`] with the arguments given (the program name first), as the
/// Python package's `looptune` command runs it inside its interpreter.
pub fn main_from<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    run_parsed(Cli::parse_from(args))
}

/// Run parsed arguments: results on stdout, errors reported on stderr.
fn run_parsed(cli: Cli) -> i32 {
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
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// The commands measured for peak memory hand freed pages back; the
    /// ones measured for speed keep them (`main.rs` sets the allocator).
    #[test]
    fn holding_commands_are_the_ones_measured_for_memory() {
        let work = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("looptune").chain(args.iter().copied()))
                .unwrap()
                .command
                .workload()
        };
        for args in [
            &["sweep", "runs/"][..],
            &["merge", "a", "b", "--out", "c"],
            &["diff", "a", "b"],
            &["report", "a"],
        ] {
            assert_eq!(work(args), Workload::Holding, "{args:?}");
        }
        for args in [
            &["replay", "runs/"][..],
            &["import", "runs/", "--output", "x.jsonl"],
            &["detectors"],
        ] {
            assert_eq!(work(args), Workload::Streaming, "{args:?}");
        }
    }
}
