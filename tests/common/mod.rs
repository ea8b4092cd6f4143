//! Helpers shared by integration tests.

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
