//! The `looptune` binary: parse arguments, call the library, map errors to exit codes.

mod cli;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    // The process ends right after the command: no need to free its data.
    looptune::run::LEAVE_TO_EXIT.store(true, std::sync::atomic::Ordering::Relaxed);
    let code = match cli::dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            let mut source = std::error::Error::source(&e);
            while let Some(cause) = source {
                eprintln!("  caused by: {cause}");
                source = cause.source();
            }
            e.exit_code()
        }
    };
    std::process::exit(code);
}
