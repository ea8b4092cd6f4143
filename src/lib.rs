//! looptune: replay recorded agent sessions through faithful ports of the loop
//! detectors agents ship, under many threshold configurations, and score them.
//!
//! Data flows one way: [`input`] finds and reads files, handing canonical
//! JSONL to [`canonical`] and native agent logs to [`import`] (both build on
//! [`format`] and [`json`]) -> [`event`] -> [`detect`] -> [`replay`] ->
//! [`metrics`] -> [`report`].
//! [`run`] wires those steps into the commands; the binary only parses arguments.
#![warn(missing_docs)]

pub mod canonical;
pub mod detect;
pub mod diff;
pub mod error;
pub mod escape;
pub mod event;
pub mod format;
pub mod gates;
pub mod grid;
pub mod import;
pub mod input;
pub mod js;
pub mod json;
pub mod label;
pub mod labels;
pub mod limits;
pub mod logdirs;
pub mod metrics;
pub mod number;
pub mod outdir;
pub mod pool;
pub mod progress;
pub mod recommend;
pub mod replay;
pub mod report;
pub mod result;
pub mod run;
pub mod stats;
pub mod sweep;
pub mod synth;
