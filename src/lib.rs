//! looptune: replay recorded agent sessions through faithful ports of the loop
//! detectors agents ship, under many threshold configurations, and score them.
//!
//! The `looptune` binary is the main user; this library exposes what another
//! program needs to do the same work:
//!
//! - reading sessions: [`input::read_corpus`] with [`input::ReadOptions`]
//!   (canonical JSONL and every native format of [`import`]) into the
//!   [`event`] types ([`event::Corpus`], [`event::Session`], [`event::Record`]);
//! - the detector registry: [`detect::families`], [`detect::Family`],
//!   [`detect::Check`], and [`detect::DetectorConfig`] for a family's
//!   profile with parameters set;
//! - [`replay`]: every configuration over every session, in parallel and
//!   deterministic;
//! - sweeps: [`grid`] for configurations, [`labels`] for ground truth,
//!   [`sweep::run_sweep`] to a [`result::SweepRecord`] (what `summary.json`
//!   holds), then [`sweep::analyze`] for scores ([`metrics`]) and the
//!   recommendation;
//! - [`error::Error`] and [`error::Result`], with the exit code each error maps to.
//!
//! Reports, the labelling screen and the command wiring are internal.
//!
//! # Example
//!
//! Read a folder of logs and replay them under Gemini CLI's current profile:
//!
//! ```no_run
//! use looptune::detect::DetectorConfig;
//! use looptune::input::{read_corpus, ReadOptions};
//! use looptune::progress::NoProgress;
//! use looptune::replay::{replay, ReplayOptions};
//!
//! # fn main() -> looptune::error::Result<()> {
//! let corpus = read_corpus(&["logs/".into()], &ReadOptions::default())?;
//! let config = DetectorConfig::resolve(None, Some("gemini-latest"), &[])?;
//! let result = replay(&corpus, vec![config], &ReplayOptions::default(), &NoProgress)?;
//! for (session, outcome) in corpus.sessions.iter().zip(&result.outcomes[0]) {
//!     if let Some(first) = outcome.detections.first() {
//!         println!("{}: {} at turn {}", session.id, first.kind, first.turn);
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Inside, data flows one way: `input` finds and reads files, handing
//! canonical JSONL to `canonical` and native agent logs to [`import`] (both
//! build on `format` and `json`) -> [`event`] -> [`detect`] -> [`replay`] ->
//! [`metrics`] -> `report`. `run` wires those steps into the commands; the
//! binary only parses arguments (`cli`).
#![warn(missing_docs)]

pub(crate) mod canonical;
// The binary's argument parsing (clap help text, not rustdoc, in its doc comments).
#[doc(hidden)]
#[allow(rustdoc::invalid_html_tags)]
pub mod cli;
pub mod detect;
pub(crate) mod diff;
pub mod error;
pub(crate) mod escape;
pub mod event;
pub(crate) mod format;
pub(crate) mod gates;
pub mod grid;
pub mod import;
pub mod input;
pub(crate) mod js;
pub(crate) mod json;
pub(crate) mod label;
pub mod labels;
pub(crate) mod limits;
pub(crate) mod logdirs;
pub mod metrics;
pub(crate) mod number;
pub(crate) mod outdir;
pub(crate) mod pool;
pub mod progress;
pub(crate) mod recommend;
pub mod replay;
pub(crate) mod report;
pub mod result;
pub(crate) mod run;
pub(crate) mod stats;
pub(crate) mod suggest;
pub mod sweep;
#[doc(hidden)]
pub mod synth;
