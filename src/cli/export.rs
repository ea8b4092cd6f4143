//! `looptune export`.

use super::args::profile_names;
use crate::detect::{DetectorConfig, Selection, Setting};
use crate::error::{Error, Result, EXIT_OK};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

pub(super) const EXPORT_HELP: &str = "\
Examples:
  looptune export reports/sweep c0123456789 --for looptune -o tuned.toml
  looptune replay --config tuned.toml runs/          # the same rule, replayed
  looptune guard --agent claude-code --config tuned.toml
  looptune export reports/sweep c0123456789 --for gemini-cli > loop.diff
  looptune export --profile roo --set limit=5 --for roo
  looptune export --profile qwen-all --for qwen-code

--for looptune writes a TOML file that `replay --config`, `guard --config` and
Python's Detector(config=...) load. For an agent with settings it writes the
fragment in the agent's own format and key names (where the file lives is in
its first lines on stderr); for an agent whose thresholds are hard-coded, a
unified diff without context lines (apply with `git apply --unidiff-zero` or
`patch -p1`) against the source file at the commit the port pins. A parameter
the agent has no setting or constant for is an error naming it.

Agents: gemini-cli (diff), opencode (diff), roo (settings), qwen-code (settings).

Exit codes:
  0  ok: written
  2  bad input or usage: no such configuration, or one the agent cannot express";

/// `--for` values.
fn targets() -> impl TypedValueParser<Value = String> {
    PossibleValuesParser::new(crate::export::target_names())
}

#[derive(Debug, Args)]
pub(super) struct ExportArgs {
    /// A folder written by `looptune sweep`, then the configuration's id, label or profile.
    #[arg(value_names = ["SWEEP_DIR", "CONFIG"], num_args = 0..=2)]
    pub(super) from: Vec<String>,
    /// What to write: `looptune` (a TOML configuration) or an agent.
    #[arg(long = "for", value_name = "AGENT", value_parser = targets())]
    pub(super) target: String,
    /// Instead of a sweep: a named profile...
    #[arg(long, value_name = "NAME", value_parser = profile_names(), conflicts_with = "from")]
    pub(super) profile: Option<String>,
    /// ...with parameters overridden (KEY=VALUE).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = crate::detect::Setting::parse, requires = "profile")]
    pub(super) sets: Vec<Setting>,
    /// Write to this file (whole or not at all) instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub(super) output: Option<PathBuf>,
}

/// `looptune export`: what to export, and where.
#[derive(Debug, Clone)]
pub struct ExportRequest {
    /// The configuration.
    pub config: DetectorConfig,
    /// Where it comes from (written as a comment where the format has them).
    pub origin: String,
    /// `looptune` or an agent.
    pub target: String,
    /// The file, or standard output.
    pub output: Option<PathBuf>,
}

impl ExportArgs {
    /// The request: the configuration found in the sweep, or resolved from the profile.
    pub(super) fn request(&self) -> Result<ExportRequest> {
        let (config, origin) = match (&self.profile, self.from.as_slice()) {
            (Some(p), []) => {
                let selection = Selection {
                    families: Vec::new(),
                    profiles: vec![p.clone()],
                    sets: self.sets.clone(),
                };
                let cfg = selection.resolve()?.remove(0);
                let sets: Vec<&str> = self.sets.iter().map(|s| s.text.as_str()).collect();
                let origin = if sets.is_empty() {
                    format!("profile {p}")
                } else {
                    format!("profile {p} with {}", sets.join(", "))
                };
                (cfg, origin)
            }
            (None, [dir, key]) => crate::export::config_of_sweep(std::path::Path::new(dir), key)?,
            _ => {
                return Err(Error::Usage(
                    "export needs SWEEP_DIR CONFIG, or --profile NAME [--set KEY=VALUE]...".into(),
                ))
            }
        };
        Ok(ExportRequest {
            config,
            origin,
            target: self.target.clone(),
            output: self.output.clone(),
        })
    }
}

/// Run `looptune export`.
pub fn export_command(req: &ExportRequest, out: &mut dyn Write) -> Result<i32> {
    let text = crate::export::export(&req.config, &req.target, &req.origin)?;
    if let Ok(t) = crate::export::agents::target(&req.target) {
        if let crate::export::agents::Form::Settings { file, .. } = t.form {
            eprintln!("{}: merge into {file}", req.target);
        }
    }
    match &req.output {
        Some(path) => {
            crate::util::outdir::write_atomic(path, text.as_bytes())
                .map_err(|e| Error::io(path, e))?;
            eprintln!("wrote {}", path.display());
        }
        None => out
            .write_all(text.as_bytes())
            .map_err(|e| Error::io("<stdout>", e))?,
    }
    Ok(EXIT_OK)
}
