//! looptune's core: read recorded agent sessions, replay them through faithful
//! ports of the loop detectors agents ship under many threshold
//! configurations, and score them. No terminal, no command line, no charts:
//! the `looptune` binary (and any other program) builds on this crate.
//!
//! What another program needs to do the same work:
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
//! Reports, the labelling screen and the command wiring live in the
//! `looptune` crate.
//!
//! # Example
//!
//! Read a folder of logs and replay them under Gemini CLI's current profile:
//!
//! ```no_run
//! use looptune_core::detect::DetectorConfig;
//! use looptune_core::input::{read_corpus, ReadOptions};
//! use looptune_core::progress::NoProgress;
//! use looptune_core::replay::{replay, ReplayOptions};
//!
//! # fn main() -> looptune_core::error::Result<()> {
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

// Modules the binary builds on but that are no stable library surface: hidden
// from the docs, public so the `looptune` crate can reach them.
#[doc(hidden)]
pub mod canonical;
pub mod detect;
#[doc(hidden)]
pub mod diff;
pub mod error;
#[doc(hidden)]
pub mod escape;
pub mod event;
#[doc(hidden)]
pub mod format;
#[doc(hidden)]
pub mod gates;
pub mod grid;
pub mod import;
pub mod input;
pub(crate) mod js;
pub(crate) mod json;
pub mod labels;
#[doc(hidden)]
pub mod limits;
#[doc(hidden)]
pub mod logdirs;
pub mod metrics;
#[doc(hidden)]
pub mod number;
#[doc(hidden)]
pub mod outdir;
#[doc(hidden)]
pub mod pool;
pub mod progress;
#[doc(hidden)]
pub mod recommend;
pub mod replay;
pub mod result;
#[doc(hidden)]
pub mod stats;
#[doc(hidden)]
pub mod suggest;
pub mod sweep;
#[doc(hidden)]
pub mod synth;
