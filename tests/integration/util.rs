//! Helpers shared by the integration tests: the binary, the checkout's data
//! folders, and the loud skip for tests that need `../shared/corpus`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The real corpus, beside the checkout; `cargo test` runs in the package root.
const CORPUS: &str = "../shared/corpus";

/// The package root (where `tests/fixtures` and `tests/conformance` live).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The binary under test, for assertions on its output.
pub fn looptune() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("looptune").unwrap()
}

/// The binary as a plain process with no stdin (it must never wait for one).
pub fn process() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_looptune"));
    c.stdin(Stdio::null());
    c
}

/// Run the binary with `args` to its end, killed after 240 s: a hang (a FIFO
/// opened, a read that never ends) fails the test instead of stalling the
/// suite. Generous: a debug-build sweep of the real corpus takes over a
/// minute on two busy cores.
pub fn run(args: &[&str]) -> Output {
    let mut child = process()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Drained as the child writes: output past a pipe's 64 KiB (`detectors`
    // lists every family) would otherwise block it until the time-out.
    let drain = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                std::io::Read::read_to_end(&mut r, &mut v).ok();
            }
            v
        })
    };
    let out = drain(child.stdout.take().map(|o| Box::new(o) as _));
    let err = drain(child.stderr.take().map(|e| Box::new(e) as _));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(240) {
            child.kill().ok();
            panic!("looptune {args:?} did not end within 240 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// Write `text` to `dir/name` and return the path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// `../shared/corpus`, or `None` after saying loudly that the test is skipped.
/// CI always has shared/ beside the checkout: a missing corpus there fails.
pub fn shared_corpus() -> Option<PathBuf> {
    let p = PathBuf::from(CORPUS);
    if p.is_dir() {
        return Some(p);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{CORPUS} is missing under CI"
    );
    skipped(&format!(
        "{CORPUS} not found (clone or copy shared/ next to the checkout)"
    ));
    None
}

/// Say loudly that a test did not run: `println!` (shown with `--nocapture`
/// and kept with the test's output) and a direct write to the process's stderr,
/// which the test harness does not capture, so a plain `cargo test` shows it
/// too. A skipped test must never look like a passing one.
pub fn skipped(why: &str) {
    use std::io::Write;
    // The harness names each test's thread after the test.
    let current = std::thread::current();
    let test = current.name().unwrap_or("a test");
    let line = format!("SKIPPED {test}: {why}");
    println!("{line}");
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Assert that a run exited 0, showing its stderr when it did not.
pub fn assert_ok(r: &Output) {
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
}
