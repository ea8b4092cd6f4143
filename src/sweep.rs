//! A sweep: every configuration of a grid replayed over a corpus, scored
//! against labels, with the Pareto front and a recommendation.

use crate::detect;
use crate::error::{Error, Result};
use crate::event::Corpus;
use crate::grid::Grid;
use crate::labels::Labels;
use crate::metrics::{self, Objective, Scores};
use crate::progress::Progress;
use crate::replay::{replay, Replay, ReplayOptions};

/// Everything a sweep computed; what the writers read.
#[derive(Debug)]
pub struct SweepResult {
    /// The grid.
    pub grid: Grid,
    /// Labels resolved for the corpus.
    pub labels: Labels,
    /// Outcomes per configuration and session.
    pub replay: Replay,
    /// Scores per configuration (grid order).
    pub scores: Vec<Scores>,
    /// Configurations on the Pareto front.
    pub pareto: Vec<usize>,
    /// The recommended configuration.
    pub recommended: Option<usize>,
    /// The configuration gates and JUnit evaluate (the base stock profile, or `--config`).
    pub chosen: usize,
    /// The stock configuration the recommendation is compared with.
    pub stock_base: usize,
    /// The recommendation rule.
    pub objective: Objective,
}

/// Run a sweep. `chosen` selects the configuration for gates by id, label or profile name.
pub fn run_sweep(
    corpus: &Corpus,
    grid: Grid,
    labels: Labels,
    objective: Objective,
    chosen: Option<&str>,
    jobs: usize,
    progress: &dyn Progress,
) -> Result<SweepResult> {
    let stock_base = grid
        .variants
        .iter()
        .position(|v| v.stock && v.config.profile == grid.base_profile)
        .unwrap_or(0);
    let chosen = match chosen {
        None => stock_base,
        Some(c) => find_variant(&grid, c)?,
    };
    let configs = grid.variants.iter().map(|v| v.config.clone()).collect();
    let replay = replay(
        corpus,
        configs,
        &ReplayOptions { jobs, all: false },
        progress,
    )?;
    let scores: Vec<Scores> = replay
        .outcomes
        .iter()
        .map(|o| metrics::score(o, corpus, &labels))
        .collect();
    let pareto = metrics::pareto(&scores);
    let stock: Vec<bool> = grid.variants.iter().map(|v| v.stock).collect();
    let distance: Vec<usize> = grid.variants.iter().map(|v| v.overrides.len()).collect();
    let recommended = metrics::recommend(&scores, &stock, &distance, &objective);
    Ok(SweepResult {
        grid,
        labels,
        replay,
        scores,
        pareto,
        recommended,
        chosen,
        stock_base,
        objective,
    })
}

/// Find a configuration by id, exact label or stock profile name.
pub fn find_variant(grid: &Grid, key: &str) -> Result<usize> {
    grid.variants
        .iter()
        .position(|v| v.id == key || v.label == key)
        .or_else(|| {
            grid.variants
                .iter()
                .position(|v| v.stock && v.config.profile == key)
        })
        .ok_or_else(|| {
            Error::Usage(format!(
                "--config `{key}`: no configuration of the grid has this id, label or profile"
            ))
        })
}

/// Parameter columns for a grid: every parameter of every family present, in family order.
pub fn param_columns(grid: &Grid) -> Vec<&'static str> {
    let mut cols: Vec<&'static str> = Vec::new();
    let mut fams: Vec<&'static str> = Vec::new();
    for v in &grid.variants {
        if !fams.contains(&v.config.family) {
            fams.push(v.config.family);
        }
    }
    for f in fams {
        if let Ok(fam) = detect::family(f) {
            for p in fam.params() {
                if !cols.contains(&p.name) {
                    cols.push(p.name);
                }
            }
        }
    }
    cols
}
