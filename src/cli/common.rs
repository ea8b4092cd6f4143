//! What every command shares: the guard on outputs, the checks on what was read, warnings, CI reports and gates.

use crate::detect::DetectorConfig;
use crate::error::{Error, NoSessions, Result, EXIT_GATE, EXIT_OK};
use crate::report::text::ConfigName;
use std::io::Write;
use std::path::PathBuf;

/// 0 sessions read is an error (exit 2) unless `--allow-empty`: a nightly job
/// whose log format changed must not stay green on "0 sessions".
pub fn require_sessions(
    corpus: &crate::event::Corpus,
    sessions: usize,
    paths: &[PathBuf],
    allow_empty: bool,
) -> Result<()> {
    if allow_empty || sessions > 0 {
        return Ok(());
    }
    let not_sessions: Vec<&crate::event::Skip> =
        corpus.skipped.iter().filter(|m| m.is_file()).collect();
    let why = match (corpus.files.len(), not_sessions.first()) {
        (0, None) => NoSessions::NoFile,
        (_, Some(first)) => NoSessions::NotLogs {
            files: not_sessions.len(),
            first: first.to_string(),
        },
        (n, None) => NoSessions::NoRecord { files: n },
    };
    Err(Error::NoSessions {
        inputs: paths.iter().map(|p| p.display().to_string()).collect(),
        why,
    })
}

/// Set by the binary, which exits as soon as a command returns: the parsed
/// corpus and the replay are then left to the OS instead of being freed piece
/// by piece (millions of strings; a sixth of an end-to-end replay). Library
/// callers keep the default and get ordinary drops.
pub static LEAVE_TO_EXIT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Drop `value`, or leave it to the process exit (see [`LEAVE_TO_EXIT`]).
pub(crate) fn release<T>(value: T) {
    if LEAVE_TO_EXIT.load(std::sync::atomic::Ordering::Relaxed) {
        std::mem::forget(value);
    }
}

/// One warning per file with skipped lines (count and first reason), and one
/// per skipped file: nothing is dropped silently, and nothing floods the terminal.
pub(crate) fn warn_skipped(corpus: &crate::event::Corpus, err: &mut dyn Write) {
    for f in corpus.files.iter().filter(|f| f.skipped_lines > 0) {
        let first = corpus
            .skipped
            .iter()
            .find(|m| !m.is_file() && m.file() == f.path)
            .map(|m| format!(" (first: {})", m.reason()))
            .unwrap_or_default();
        writeln!(
            err,
            "warning: {}: skipped {}{first}",
            crate::util::escape::terminal(&f.path),
            crate::report::text::plural(f.skipped_lines as usize, "bad line", "bad lines")
        )
        .ok();
    }
    for m in corpus.skipped.iter().filter(|m| m.is_file()) {
        writeln!(
            err,
            "warning: {}",
            crate::util::escape::terminal(&m.to_string())
        )
        .ok();
    }
    if corpus.unreadable > 0 {
        writeln!(
            err,
            "warning: skipped {} unreadable entries of walked folders (--lenient)",
            corpus.unreadable
        )
        .ok();
    }
}

/// What replay output says of a configuration.
pub(crate) fn config_name(c: &DetectorConfig) -> ConfigName {
    ConfigName {
        family: c.family.to_string(),
        profile: c.profile.clone(),
        policy: c.policy().to_string(),
    }
}

/// CI outputs shared by `replay` and `sweep`.
#[derive(Debug, Clone, Default)]
pub struct CiArgs {
    /// Markdown summary file.
    pub markdown: Option<PathBuf>,
    /// JUnit XML file.
    pub junit: Option<PathBuf>,
    /// Gates such as `recall>=0.9` (parsed by clap, `--require`).
    pub requires: Vec<crate::score::gates::Gate>,
    /// Appended to the Markdown summary (`sweep --baseline`: what changed).
    pub append_markdown: String,
    /// `--json`: one object on stdout instead of the text summary.
    pub json: bool,
    /// `--junit-sessions`: JUnit also has a case per labelled session.
    pub junit_sessions: bool,
    /// Gates already checked on the changes since an earlier run (`sweep
    /// --baseline`): the Markdown and JUnit outputs show them with the rest.
    pub diff_gates: Vec<crate::score::gates::GateResult>,
}

impl CiArgs {
    /// The files these outputs write.
    pub fn outputs(&self) -> Vec<PathBuf> {
        self.markdown.iter().chain(&self.junit).cloned().collect()
    }
}

/// What reading a result at `path` reads: the path as given and, for a
/// folder, its `summary.json` (as `SweepRecord::load` does).
pub(crate) fn result_inputs(path: &std::path::Path) -> Vec<PathBuf> {
    vec![
        path.to_path_buf(),
        path.join(crate::util::outdir::SUMMARY_JSON),
    ]
}

/// Refuse to write over anything the user gave us: the one rule every
/// command applies, before any work, to every file it writes (its outputs)
/// against everything it reads (sessions and the files of walked folders,
/// labels, grid, results, baseline), compared by canonical path. `sessions`
/// is the command's input list, walked once: the files it protects are the
/// files the read reads. `others` (labels, grid, results) are walked here.
pub(crate) fn guard_outputs(
    outputs: &[PathBuf],
    sessions: Option<&crate::input::InputList>,
    others: &[PathBuf],
) -> Result<()> {
    if outputs.is_empty() {
        return Ok(());
    }
    distinct_outputs(outputs)?;
    let canon = |p: &std::path::Path| std::fs::canonicalize(p).ok();
    let others = crate::input::InputList::walk(others, false);
    let mut given: Vec<PathBuf> = Vec::new();
    let mut reads_stdin = false;
    for (i, found) in sessions
        .into_iter()
        .chain([&others])
        .flat_map(|l| l.found())
    {
        for f in found {
            if let crate::input::Found::Path { path, .. } = f {
                given.extend(canon(path));
            }
        }
        given.extend(canon(i));
        reads_stdin |= i.as_os_str() == "-";
    }
    for o in outputs {
        if reads_stdin && crate::util::outdir::stdin_is(o) {
            return Err(Error::Usage(format!(
                "refusing to overwrite {}: it is standard input (`-`)",
                o.display()
            )));
        }
        if let Some(c) = canon(o) {
            if given.contains(&c) {
                return Err(Error::Usage(format!(
                    "refusing to overwrite {}: it is one of the inputs",
                    o.display()
                )));
            }
        }
    }
    Ok(())
}

/// Refuse two outputs that are one file (`--markdown OUT/summary.json`,
/// `--junit X --markdown X`): the later would silently replace the earlier.
/// Compared as the folder's canonical path and the file name, so a file
/// that does not exist yet is compared too; `-` (stdout) is not a file.
fn distinct_outputs(outputs: &[PathBuf]) -> Result<()> {
    let key = |p: &std::path::Path| -> PathBuf {
        let parent = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => std::path::Path::new("."),
        };
        let dir = std::fs::canonicalize(parent)
            .or_else(|_| std::path::absolute(parent))
            .unwrap_or_else(|_| parent.to_path_buf());
        match p.file_name() {
            Some(n) => dir.join(n),
            None => dir,
        }
    };
    let mut seen: Vec<(PathBuf, &PathBuf)> = Vec::new();
    for o in outputs {
        if crate::util::outdir::is_stdout(o) {
            continue;
        }
        let k = key(o);
        if let Some((_, first)) = seen.iter().find(|(s, _)| *s == k) {
            return Err(Error::Usage(format!(
                "refusing to write {} twice (also as {}): --markdown, --junit and the files of --out must each name a different file",
                o.display(),
                first.display()
            )));
        }
        seen.push((k, o));
    }
    Ok(())
}

/// Refuse, before any work, a file output (`--markdown`, `--junit`,
/// `import -o`) whose folder does not exist or is not a folder: the write
/// at the end made the missing folders without a word, or failed after all
/// the work naming the wrong path. Standard output (`-`) has no folder;
/// `made` is the output folder the command makes (`--out`): a file in it
/// is fine (`--out report --junit report/junit.xml`).
pub(crate) fn check_output_folders(
    outputs: &[PathBuf],
    made: Option<&std::path::Path>,
) -> Result<()> {
    for o in outputs {
        if crate::util::outdir::is_stdout(o) {
            continue;
        }
        let parent = match o.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => continue,
        };
        if made.is_some_and(|m| m == parent) {
            continue;
        }
        let why = match std::fs::metadata(parent) {
            Ok(m) if m.is_dir() => continue,
            Ok(_) => "is not a folder",
            Err(_) => "does not exist",
        };
        return Err(Error::Usage(format!(
            "cannot write {}: {} {why}",
            o.display(),
            parent.display()
        )));
    }
    Ok(())
}

/// Refuse an `--out` that is a file.
pub(crate) fn check_out_dir(out_dir: &std::path::Path) -> Result<()> {
    if out_dir.is_file() {
        return Err(Error::Usage(format!(
            "--out {}: is a file, not a folder",
            out_dir.display()
        )));
    }
    Ok(())
}

/// `--json`: the one object on `out`, on one line.
pub(crate) fn print_json(value: &serde_json::Value, out: &mut dyn Write) -> Result<()> {
    let io = |e| Error::io("<stdout>", e);
    serde_json::to_writer(&mut *out, value).map_err(|e| io(e.into()))?;
    writeln!(out).map_err(io)
}

/// The configuration gates check, as gate lines name it.
pub(crate) fn checked_name(result: &crate::score::SweepResult) -> String {
    let c = result.config(result.chosen);
    format!("{} {}", c.id, c.label)
}

/// Stage the Markdown and JUnit outputs in `set`; true when one failed.
pub(crate) fn write_ci(
    ci: &CiArgs,
    view: &crate::report::ci::CiView,
    set: &mut crate::util::outdir::OutputSet,
    err: &mut dyn Write,
) -> bool {
    let mut failed = false;
    let outputs = [
        (
            ci.markdown.as_ref(),
            crate::report::ci::markdown(view) + &ci.append_markdown,
        ),
        (
            ci.junit.as_ref(),
            crate::report::ci::junit(view, ci.junit_sessions),
        ),
    ];
    for (path, text) in outputs {
        let Some(p) = path else { continue };
        if crate::util::outdir::is_stdout(p) {
            if let Err(e) = std::io::stdout().lock().write_all(text.as_bytes()) {
                failed = true;
                writeln!(err, "error: failed to write to standard output: {e}").ok();
            }
            continue;
        }
        if let Err(e) = set.write(p, text.as_bytes()) {
            failed = true;
            writeln!(err, "error: failed to write {e}").ok();
        }
    }
    failed
}

/// Print gate results, each naming the configuration it checked; the exit
/// code (report failure wins over a gate).
pub(crate) fn finish_gates(
    results: &[crate::score::gates::GateResult],
    config: &str,
    report_failed: bool,
    err: &mut dyn Write,
) -> i32 {
    for g in results {
        let mark = if g.passed { "ok  " } else { "FAIL" };
        writeln!(
            err,
            "gate {mark} {} (configuration {})",
            g.describe(),
            crate::util::escape::terminal(config)
        )
        .ok();
    }
    if report_failed {
        crate::error::EXIT_REPORT
    } else if results.iter().any(|g| !g.passed) {
        EXIT_GATE
    } else {
        EXIT_OK
    }
}

pub(crate) fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_sessions(corpus: &crate::event::Corpus) -> Error {
        require_sessions(corpus, 0, &[PathBuf::from("a"), PathBuf::from("b")], false).unwrap_err()
    }

    #[test]
    fn no_sessions_read_is_its_own_error_with_the_reason_and_exit_2() {
        use crate::event::{Corpus, Skip, SourceFile};
        let empty = Corpus::default();
        assert!(require_sessions(&empty, 0, &[], true).is_ok());
        let e = no_sessions(&empty);
        assert!(matches!(
            &e,
            Error::NoSessions { inputs, why: NoSessions::NoFile } if inputs == &["a", "b"]
        ));
        assert_eq!(e.exit_code(), crate::error::EXIT_INPUT);
        assert_eq!(
            e.to_string(),
            "no sessions read from a, b: no session file found (canonical `.jsonl` or a native agent log) (pass --allow-empty to accept an empty input)"
        );
        let file = SourceFile {
            path: "a/x.jsonl".into(),
            format: "canonical".into(),
            sha256: String::new(),
            bytes: 0,
            skipped_lines: 0,
            unknown_records: 0,
        };
        let read = Corpus {
            files: vec![file.clone(), file],
            ..Default::default()
        };
        assert!(no_sessions(&read)
            .to_string()
            .contains(": 2 files read, none holds a record ("));
        let junk = Corpus {
            skipped: vec![Skip::Unrecognised {
                file: "a/n.json".into(),
                detail: String::new(),
            }],
            ..Default::default()
        };
        let e = no_sessions(&junk);
        assert!(matches!(
            &e,
            Error::NoSessions {
                why: NoSessions::NotLogs { files: 1, .. },
                ..
            }
        ));
        assert!(e.to_string().contains(
            ": 1 file not recognised as a session log (first: a/n.json: skipped file (not a recognised session log)) ("
        ));
    }
}
