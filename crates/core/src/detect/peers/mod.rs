//! The peer detector families: faithful ports of the loop detectors other
//! agents ship (OpenCode, Blade, OpenHands, Roo Code, Cline, Goose, Crush, Kimi CLI, Qwen Code, Hermes agent, OpenClaw, OpenRouter's agent SDK, DeepEval's loop metric) and a
//! turn-cap baseline.

pub mod blade;
pub mod cline;
pub(crate) mod common;
pub mod crush;
pub mod deepeval;
pub mod goose;
pub mod hermes;
pub mod kimi;
pub mod max_turns;
pub mod openclaw;
pub mod opencode;
pub mod openhands;
pub mod openrouter_sdk;
pub mod qwen;
pub mod roo;
#[cfg(test)]
mod tests;

pub use blade::Blade;
pub use cline::Cline;
pub use crush::Crush;
pub use deepeval::DeepEval;
pub use goose::Goose;
pub use hermes::Hermes;
pub use kimi::Kimi;
pub use max_turns::MaxTurns;
pub use openclaw::OpenClaw;
pub use opencode::OpenCode;
pub use openhands::OpenHands;
pub use openrouter_sdk::OpenRouterSdk;
pub use qwen::Qwen;
pub use roo::Roo;
