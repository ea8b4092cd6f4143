//! `looptune completions` and `looptune man`: what the argument definitions print of themselves.

use super::*;
use clap::{Args, CommandFactory};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub(super) struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub(super) shell: clap_complete::Shell,
}

pub(super) const COMPLETIONS_HELP: &str = "\
Examples:
  looptune completions bash > ~/.local/share/bash-completion/completions/looptune
  looptune completions zsh > \"${fpath[1]}/_looptune\"
  looptune completions fish > ~/.config/fish/completions/looptune.fish

Exit codes:
  0  ok
  2  unknown shell";

pub(super) const MAN_HELP: &str = "\
Examples:
  looptune man > looptune.1 && man ./looptune.1
  looptune man --out-dir man/man1 && man -M man looptune-sweep   # every page
  sudo looptune man --out-dir /usr/local/share/man/man1

Exit codes:
  0  ok";

#[derive(Debug, Args)]
pub(super) struct ManArgs {
    /// Write looptune.1 and one page per subcommand (looptune-replay.1, ...)
    /// into DIR (created if missing) instead of printing the top page.
    #[arg(long, value_name = "DIR")]
    pub(super) out_dir: Option<PathBuf>,
}

/// `man --out-dir DIR`: the top page and one per visible subcommand (the
/// pages the top page's SEE ALSO names), written as one set.
pub(super) fn write_man_pages(dir: &std::path::Path) -> Result<Vec<PathBuf>> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut pages = vec![cmd.clone()];
    pages.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
    let mut set = crate::util::outdir::OutputSet::new();
    for page in pages {
        let man = clap_mangen::Man::new(page);
        let target = dir.join(man.get_filename());
        let mut buf = Vec::new();
        man.render(&mut buf).map_err(|e| Error::io(&target, e))?;
        set.write(&target, &buf)?;
    }
    set.commit()
}

// Both rendered to memory first: a write error (a closed pipe) is then an
// ordinary error, not a panic inside the generator.

/// `looptune completions SHELL`.
pub(super) fn completions_command(
    a: &CompletionsArgs,
    out: &mut dyn std::io::Write,
) -> Result<i32> {
    let mut buf = Vec::new();
    clap_complete::generate(a.shell, &mut Cli::command(), "looptune", &mut buf);
    out.write_all(&buf).map_err(|e| Error::io("<stdout>", e))?;
    Ok(0)
}

/// `looptune man [--out-dir DIR]`.
pub(super) fn man_command(a: &ManArgs, out: &mut dyn std::io::Write) -> Result<i32> {
    if let Some(dir) = &a.out_dir {
        for p in write_man_pages(dir)? {
            eprintln!("wrote {}", p.display());
        }
        return Ok(0);
    }
    let mut buf = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut buf)
        .map_err(|e| Error::io("<stdout>", e))?;
    out.write_all(&buf).map_err(|e| Error::io("<stdout>", e))?;
    Ok(0)
}
