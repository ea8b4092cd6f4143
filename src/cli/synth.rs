//! `looptune synth` (hidden): the seeded synthetic corpus of the benchmarks.

use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub(super) struct SynthArgs {
    /// Output folder.
    #[arg(long, short = 'o')]
    pub(super) out: PathBuf,
    /// Number of sessions.
    #[arg(long, default_value_t = 10_000)]
    pub(super) sessions: usize,
    /// Approximate bytes per session.
    #[arg(long, default_value_t = 11_000)]
    pub(super) bytes: usize,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
}

/// `looptune synth`: write the corpus, say what was written on stderr.
pub(super) fn synth_command(a: &SynthArgs) -> crate::error::Result<i32> {
    let total = crate::input::synth::write_corpus(&a.out, a.sessions, a.bytes, a.seed)
        .map_err(|e| crate::error::Error::io(&a.out, e))?;
    eprintln!(
        "wrote {} sessions, {} bytes, to {}",
        a.sessions,
        total,
        a.out.display()
    );
    Ok(0)
}
