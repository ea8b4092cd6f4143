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
    /// `prose`: canonical JSONL, mostly streamed text in small chunks (the
    /// first benchmark corpus); `real`: the real corpus's record mix and
    /// sizes, in canonical, Claude Code, Codex and Gemini CLI files, with
    /// labels.csv; `tools`: canonical JSONL, short turns where a third of
    /// the records are tool calls and results, about 100 bytes a record.
    #[arg(long, value_enum, default_value_t = SynthShape::Prose)]
    pub(super) shape: SynthShape,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum SynthShape {
    Prose,
    Real,
    Tools,
}

/// `looptune synth`: write the corpus, say what was written on stderr.
pub(super) fn synth_command(a: &SynthArgs) -> crate::error::Result<i32> {
    let failed = |e| crate::error::Error::io(&a.out, e);
    let (total, files) = match a.shape {
        SynthShape::Prose => (
            crate::input::synth::write_corpus(&a.out, a.sessions, a.bytes, a.seed)
                .map_err(failed)?,
            a.sessions.clamp(1, 100) as u64,
        ),
        SynthShape::Tools => (
            crate::input::synth::write_tools_corpus(&a.out, a.sessions, a.bytes, a.seed)
                .map_err(failed)?,
            a.sessions.clamp(1, 100) as u64,
        ),
        SynthShape::Real => {
            let w = crate::input::synth::real::write_corpus(&a.out, a.sessions, a.bytes, a.seed)
                .map_err(failed)?;
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
