//! looptune: replay recorded agent sessions through faithful ports of the loop
//! detectors agents ship, under many threshold configurations, and score them.
//!
//! Data flows one way: [`input`] (and [`import`] for native agent logs) ->
//! [`event`] -> [`detect`] -> [`replay`] -> [`metrics`] -> [`report`].
#![warn(missing_docs)]

pub mod error;
pub mod event;
pub mod js;
pub mod detect;
pub mod import;
pub mod input;
