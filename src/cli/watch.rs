//! `looptune watch`.

use super::args::{input_formats, profile_names};
use crate::detect::{Selection, Setting};
use crate::error::{Error, Result, EXIT_OK};
use crate::input::ReadOptions;
use crate::watch::{Found, Report, WatchOptions, Watcher};
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub(super) const WATCH_HELP: &str = "\
Follows log files and folders as agents write them (new files, appended
lines) and prints each detection once, as it happens, at the record `replay
--all` reports it at. A changed file is read again up to its last complete
line and replayed; a file renamed away (rotated) keeps its state, a new file
at its path is read from its start, a truncated file starts over. What the
files hold when watching starts is not reported (--from-start reports it).
Blade's detections wait for the next record, OpenHands' and OpenRouter SDK's
for the next step (or for the file to be idle for --idle seconds), as the
detection may still change until then.

Examples:
  looptune watch                                    # the agents' log folders
  looptune watch --profile looptune-default ~/.claude/projects
  looptune watch --config tuned.toml --format json runs/ >> detections.jsonl
  looptune watch --on-detect 'notify-send looptune \"$(jq -r .detail)\"' ~/.codex/sessions

--on-detect CMD runs `sh -c CMD` for each detection with the detection as
one JSON object (the --format json line) on its stdin; a command that fails
or cannot start is a warning on stderr, and watching goes on.

Exit codes:
  0  stopped by SIGINT or SIGTERM (at the next look; what was found was printed)
  2  bad usage, configuration, or a PATH that does not exist";

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum Format {
    /// One line per detection, for people.
    Text,
    /// One JSON object per detection (JSON Lines).
    Json,
}

#[derive(Debug, Args)]
pub(super) struct WatchArgs {
    /// Log files or folders (walked recursively, again at each look).
    /// Default: the agents' log folders that exist.
    #[arg(value_name = "PATH")]
    pub(super) paths: Vec<PathBuf>,
    /// A named profile (default: gemini-latest)...
    #[arg(long, value_name = "NAME", value_parser = profile_names(), conflicts_with = "config")]
    pub(super) profile: Option<String>,
    /// ...with parameters overridden (KEY=VALUE).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = Setting::parse)]
    pub(super) sets: Vec<Setting>,
    /// Or a configuration file written by `looptune export --for looptune`.
    #[arg(long, value_name = "FILE.toml", conflicts_with = "sets")]
    pub(super) config: Option<PathBuf>,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value = "text")]
    pub(super) format: Format,
    /// Run this shell command for each detection, the detection as JSON on its stdin.
    #[arg(long, value_name = "CMD")]
    pub(super) on_detect: Option<String>,
    /// Milliseconds between two looks at the files.
    #[arg(long, value_name = "MS", default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    pub(super) interval: u64,
    /// A file unchanged this many seconds has its sessions treated as ended.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub(super) idle: u64,
    /// Report what the files already hold when watching starts.
    #[arg(long)]
    pub(super) from_start: bool,
    /// Input format for every file: `auto` detects it per file by content.
    #[arg(long, value_name = "NAME", default_value = "auto", value_parser = input_formats())]
    pub(super) input_format: crate::input::import::InputFormat,
}

/// Run `looptune watch` until SIGINT or SIGTERM.
pub(super) fn watch_command(args: &WatchArgs, out: &mut dyn Write) -> Result<i32> {
    let cfg = match &args.config {
        Some(path) => crate::export::config_file::load(path)?,
        None => Selection {
            families: Vec::new(),
            profiles: vec![args
                .profile
                .clone()
                .unwrap_or_else(|| "gemini-latest".into())],
            sets: args.sets.clone(),
        }
        .resolve()?
        .remove(0),
    };
    let opts = WatchOptions {
        read: ReadOptions {
            format: args.input_format,
            ..ReadOptions::default()
        },
        from_start: args.from_start,
        idle: Duration::from_secs(args.idle),
    };
    let mut watcher = Watcher::new(args.paths.clone(), cfg, opts)?;
    let stop = crate::watch::stop_on_signals().map_err(|e| Error::io("<signals>", e))?;
    let mut notify = Notify {
        cmd: args.on_detect.clone(),
        running: Vec::new(),
    };
    let mut err = std::io::stderr();
    let interval = Duration::from_millis(args.interval);
    let io = |e| Error::io("<stdout>", e);
    while !stop.load(Ordering::Relaxed) {
        let began = Instant::now();
        for r in watcher.tick(began) {
            match r {
                Report::Found(f) => {
                    let json = serde_json::to_string(&f).expect("plain data");
                    match args.format {
                        Format::Json => writeln!(out, "{json}").map_err(io)?,
                        Format::Text => writeln!(out, "{}", text_line(&f)).map_err(io)?,
                    }
                    out.flush().map_err(io)?;
                    notify.run(&json, &mut err);
                }
                Report::Warning(m) => {
                    writeln!(err, "warning: {}", crate::util::escape::terminal(&m)).ok();
                }
            }
        }
        notify.reap(false, &mut err);
        // Sleep in short slices so a signal stops the loop soon.
        while !stop.load(Ordering::Relaxed) && began.elapsed() < interval {
            std::thread::sleep(
                (interval - began.elapsed().min(interval)).min(Duration::from_millis(50)),
            );
        }
    }
    notify.reap(true, &mut err);
    Ok(EXIT_OK)
}

/// A detection as one line for people; log text escaped for the terminal.
fn text_line(f: &Found) -> String {
    use crate::util::escape::terminal;
    format!(
        "{}: session {}, turn {}, event {}: {} {} (strike {}): {}",
        terminal(&f.file),
        terminal(&f.session),
        f.turn,
        f.event,
        f.profile,
        f.kind,
        f.strike,
        terminal(f.detail.trim())
    )
}

/// The `--on-detect` commands started and not yet finished.
struct Notify {
    cmd: Option<String>,
    running: Vec<Child>,
}

/// Most notification commands running at once: past it, watching waits for
/// the oldest (a stuck command must not pile up processes).
const MAX_RUNNING: usize = 8;

impl Notify {
    fn run(&mut self, json: &str, err: &mut dyn Write) {
        let Some(cmd) = &self.cmd else { return };
        if self.running.len() >= MAX_RUNNING {
            let oldest = self.running.remove(0);
            finish(cmd, oldest, err);
        }
        let spawned = shell(cmd)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn();
        match spawned {
            Ok(mut child) => {
                if let Some(mut stdin) = child.stdin.take() {
                    // A command that does not read its input is no failure.
                    let _ = writeln!(stdin, "{json}");
                }
                self.running.push(child);
            }
            Err(e) => {
                writeln!(err, "warning: --on-detect `{cmd}` could not start: {e}").ok();
            }
        }
    }

    /// Collect finished commands (all of them, waiting, with `all`).
    fn reap(&mut self, all: bool, err: &mut dyn Write) {
        let Some(cmd) = &self.cmd else { return };
        let mut still = Vec::new();
        for mut child in std::mem::take(&mut self.running) {
            match child.try_wait() {
                Ok(None) if !all => still.push(child),
                _ => finish(cmd, child, err),
            }
        }
        self.running = still;
    }
}

fn finish(cmd: &str, mut child: Child, err: &mut dyn Write) {
    match child.wait() {
        Ok(s) if s.success() => {}
        Ok(s) => {
            writeln!(err, "warning: --on-detect `{cmd}` failed ({s})").ok();
        }
        Err(e) => {
            writeln!(err, "warning: --on-detect `{cmd}`: {e}").ok();
        }
    }
}

#[cfg(unix)]
fn shell(cmd: &str) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c").arg(cmd);
    c
}

#[cfg(not(unix))]
fn shell(cmd: &str) -> Command {
    let mut c = Command::new("cmd");
    c.arg("/C").arg(cmd);
    c
}
