//! `looptune export`: a configuration (from a sweep, or a profile with
//! overrides) in the form an agent runs it: a looptune TOML file
//! ([`config_file`]), an agent's settings fragment in its own format and key
//! names, or a unified diff of the constants in the source file the port
//! pins ([`agents`]). A value the agent has no knob for is an error naming
//! the parameter, never silently dropped.

pub mod agents;
pub mod config_file;

use crate::detect::DetectorConfig;
use crate::error::{Error, Result};
use crate::result::{find_config, SweepRecord};
use std::path::Path;

/// A configuration of a sweep folder, by id, label or stock profile name:
/// rebuilt from the grid the record keeps, so every value (floats
/// included) is exactly what the sweep replayed. Returns the configuration
/// and a line saying where it comes from.
pub fn config_of_sweep(dir: &Path, key: &str) -> Result<(DetectorConfig, String)> {
    let record = SweepRecord::load(dir)?;
    let i = find_config(&record.grid, key)?;
    let wanted = &record.grid.configs[i];
    let grid = crate::sweep::grid::parse_grid(&record.grid.source, "the grid in summary.json")?;
    let v = grid
        .variants
        .into_iter()
        .find(|v| v.id == wanted.id)
        .ok_or_else(|| {
            Error::Usage(format!(
                "{}: configuration `{}` cannot be rebuilt from the grid the record keeps (written by another looptune version?); rerun the sweep",
                dir.display(),
                wanted.id
            ))
        })?;
    let origin = format!(
        "from sweep {}, configuration {} ({})",
        dir.display(),
        wanted.id,
        wanted.label
    );
    Ok((v.config, origin))
}

/// What `export` writes for `target` (`looptune` or an agent of
/// [`agents::TARGETS`]).
pub fn export(cfg: &DetectorConfig, target: &str, origin: &str) -> Result<String> {
    if target == "looptune" {
        return Ok(config_file::to_toml(cfg, origin));
    }
    agents::target(target)?.render(cfg, origin)
}

/// Every `--for` value: `looptune`, then the agents.
pub fn target_names() -> Vec<&'static str> {
    std::iter::once("looptune")
        .chain(agents::TARGETS.iter().map(|t| t.name))
        .collect()
}
