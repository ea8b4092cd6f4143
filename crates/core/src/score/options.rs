//! How a sweep chooses: the options every score and the recommendation
//! read, as the command line gives them and as a result records them.

use crate::error::{Error, Result};
use crate::result::OptionsRecord;
use crate::score::metrics::Objective;
use crate::score::recommend;
use crate::sweep::AGENT;

/// Fewer labelled loops or clean sessions than this earns a warning.
pub const FEW_LABELS: usize = 10;

/// How a sweep chooses.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// The recommendation rule.
    pub objective: Objective,
    /// The baseline profile (default: the grid's first profile).
    pub baseline: Option<String>,
    /// Let any family win (default: only the baseline's family).
    pub across_families: bool,
    /// Cross-validation folds requested (fewer when there are fewer labelled loops).
    pub folds: usize,
    /// Seed of the folds and the bootstrap.
    pub seed: u64,
    /// Largest union searched (0 or 1: none).
    pub combine: usize,
    /// Configuration for gates and JUnit, by id, label or profile (default: the baseline).
    pub chosen: Option<String>,
    /// The key sessions are grouped by (`agent`, `model`, `source`, or a
    /// labels file's column).
    pub group_by: String,
    /// Whether a choice may hurt one group to help another.
    pub guard: recommend::Guard,
    /// The id of the row `--combine-rules` added (a configuration searched
    /// on every labelled session: the folds' choices offer their own
    /// search's result in its place, else leave it out).
    pub combined: Option<String>,
    /// That search re-run in each fold and without each group.
    pub combined_folds: Vec<crate::result::FoldChoice>,
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions {
            objective: Objective::Default,
            baseline: None,
            across_families: false,
            folds: 5,
            seed: 1,
            combine: 0,
            chosen: None,
            group_by: AGENT.into(),
            guard: recommend::Guard::PerGroup,
            combined: None,
            combined_folds: Vec::new(),
        }
    }
}

impl SweepOptions {
    /// The options as a result records them.
    pub fn record(&self) -> OptionsRecord {
        OptionsRecord {
            objective: self.objective.to_string(),
            baseline: self.baseline.clone(),
            across_families: self.across_families,
            folds: self.folds,
            seed: self.seed,
            combine: self.combine,
            chosen: self.chosen.clone(),
            group_by: self.group_by.clone(),
            guard: self.guard.name().to_string(),
            combined: self.combined.clone(),
            combined_folds: self.combined_folds.clone(),
        }
    }

    /// Options from a loaded result.
    pub fn from_record(r: &OptionsRecord) -> Result<SweepOptions> {
        Ok(SweepOptions {
            objective: r
                .objective
                .parse()
                .map_err(|e| Error::Usage(format!("{e}")))?,
            baseline: r.baseline.clone(),
            across_families: r.across_families,
            folds: r.folds,
            seed: r.seed,
            combine: r.combine,
            chosen: r.chosen.clone(),
            group_by: r.group_by.clone(),
            guard: recommend::Guard::parse(&r.guard).ok_or_else(|| {
                Error::Usage(format!(
                    "options.guard `{}`: expected `per-group`, `pooled` or `interval`",
                    r.guard
                ))
            })?,
            combined: r.combined.clone(),
            combined_folds: r.combined_folds.clone(),
        })
    }
}
