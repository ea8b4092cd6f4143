//! Scoring a sweep against ground truth (`input::labels`): each
//! configuration's scores and the Pareto front ([`metrics`]), intervals
//! ([`stats`]), the recommendation, unions and validation across folds and
//! groups ([`recommend`]), comparing two results ([`diff`]) and the CI gates
//! ([`gates`]).

#[doc(hidden)]
pub mod diff;
#[doc(hidden)]
pub mod gates;
pub mod metrics;
#[doc(hidden)]
pub mod recommend;
pub mod ship;
#[doc(hidden)]
pub mod stats;

mod analysis;
pub mod combine;
mod options;
pub use analysis::{
    analyze, analyze_with, Advice, Concentration, Explained, ExplainedCase, GroupIndex, ShownRow,
    SweepResult, TestScores, UnionRow, COMBINED_IN_FOLD,
};
pub use options::{SweepOptions, FEW_LABELS};
