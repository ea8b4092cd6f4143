//! The `looptune` binary: parse arguments, call the library, map errors to exit codes.

mod cli;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    // The process ends right after the command: no need to free its data.
    looptune::run::LEAVE_TO_EXIT.store(true, std::sync::atomic::Ordering::Relaxed);
    let code = match cli::dispatch(cli) {
        Ok(code) => code,
        // A closed pipe (`looptune detectors | head -1`): the reader has what it
        // wanted; end quietly and successfully, as `cat` or `grep` do.
        Err(e) if is_broken_pipe(&e) => 0,
        Err(e) => {
            report(&e);
            e.exit_code()
        }
    };
    std::process::exit(code);
}

fn is_broken_pipe(e: &looptune::error::Error) -> bool {
    matches!(e, looptune::error::Error::Io { source, .. }
        if source.kind() == std::io::ErrorKind::BrokenPipe)
}

/// The error, then each cause that adds something (an I/O error's message
/// already ends with its cause: it is not repeated). Text from logs may be
/// quoted: no control character reaches the terminal.
fn report(e: &looptune::error::Error) {
    let mut shown = e.to_string();
    eprintln!("error: {}", looptune::escape::terminal_lines(&shown));
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !shown.contains(&text) {
            eprintln!("  caused by: {}", looptune::escape::terminal_lines(&text));
            shown.push_str(&text);
        }
        source = cause.source();
    }
}
