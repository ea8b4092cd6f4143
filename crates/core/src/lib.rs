//! looptune's core: read recorded agent sessions, replay them through faithful
//! ports of the loop detectors agents ship under many threshold
//! configurations, and score them. No terminal, no command line, no charts:
//! the `looptune` binary (and any other program) builds on this crate.
//!
//! What another program needs to do the same work:
//!
//! - reading sessions: [`input::read_corpus`] with [`input::ReadOptions`]
//!   (canonical JSONL and every native format of [`input::import`]) into the
//!   [`event`] types ([`event::Corpus`], [`event::Session`], [`event::Record`]);
//! - the detector registry: [`detect::families`], [`detect::Family`],
//!   [`detect::Check`], and [`detect::DetectorConfig`] for a family's
//!   profile with parameters set;
//! - [`replay`]: every configuration over every session, in parallel and
//!   deterministic;
//! - sweeps: [`sweep::grid`] for configurations, [`input::labels`] for ground truth,
//!   [`sweep::run_sweep`] to a [`result::SweepRecord`] (what `summary.json`
//!   holds), then [`score::analyze`] for scores ([`score::metrics`]) and the
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
//! use looptune_core::util::progress::NoProgress;
//! use looptune_core::replay::{replay, ReplayOptions, Workers};
//!
//! # fn main() -> looptune_core::error::Result<()> {
//! let corpus = read_corpus(&["logs/".into()], &ReadOptions::default())?;
//! let config = DetectorConfig::resolve(None, Some("gemini-latest"), &[])?;
//! let workers = Workers::new(0)?; // one thread per core
//! let result = replay(&corpus, vec![config], &ReplayOptions::default(), &workers, &NoProgress)?;
//! for (session, outcome) in corpus.sessions.iter().zip(&result.outcomes[0]) {
//!     if let Some(first) = outcome.detections.first() {
//!         println!("{}: {} at turn {}", session.id, first.kind, first.turn);
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Inside, data flows one way, a folder a stage: [`input`] finds and reads
//! files (canonical JSONL and the native formats of [`input::import`]) into
//! [`event`]s -> [`detect`] -> [`replay`] -> [`sweep`] -> [`score`] ->
//! [`result`]; `util` is below them all. The `looptune` crate's reports
//! render a result and its `cli` wires the stages into commands.
#![warn(missing_docs)]

// The stages in the order data flows through them; `util` is below them all.
pub mod detect;
pub mod error;
pub mod event;
pub mod input;
pub mod replay;
pub mod result;
pub mod score;
pub mod sweep;
// After the stages: a configuration in an agent's terms, and live guards.
pub mod export;
pub mod guard;
pub mod watch;
// Shared pieces the binary builds on but that are no stable library surface.
#[doc(hidden)]
pub mod util;
