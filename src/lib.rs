//! The `looptune` command line: argument parsing, the commands' wiring, the
//! terminal output, the labelling screen and the report writers, over
//! [`looptune_core`], which reads, replays, sweeps and scores.
//!
//! The core's public modules are re-exported here under their own names, so
//! `looptune::input::read_corpus` and `looptune_core::input::read_corpus` are
//! the same function. A program that needs no terminal or report should depend
//! on `looptune-core` alone.
#![warn(missing_docs)]

#[doc(hidden)]
pub use looptune_core::input::synth;
pub use looptune_core::{
    detect, error, event, export, guard, input, replay, result, score, sweep, watch,
};
// The core's shared pieces, reachable as `crate::util::...` here.
use looptune_core::util;

// The binary's argument parsing (clap help text, not rustdoc, in its doc comments).
#[doc(hidden)]
#[allow(rustdoc::invalid_html_tags)]
pub mod cli;
pub(crate) mod label;
pub mod progress;
pub(crate) mod report;

/// The files of a sweep's output folder as one list: the [`Output`](outputs::Output)
/// trait, the standard list ([`Outputs::standard`](outputs::Outputs::standard)),
/// and `looptune report DIR` over any list ([`report_outputs`](outputs::report_outputs)).
pub mod outputs {
    pub use crate::cli::report_outputs;
    pub use crate::report::output::{Kind, Output};
    pub use crate::report::outputs::{OutputOptions, Outputs};
}
