//! The integration tests, one binary (as ripgrep does): one link instead of
//! one per file, and one place for the shared helpers (`util`). Data stays in
//! `tests/fixtures`, `tests/conformance` and `tests/browser`.

mod util;

mod browser;
mod choosing;
mod cli;
mod combine_rules;
mod corpus_detection;
mod detector;
mod export;
mod formats_2026;
mod gemini_cases;
mod gemini_conformance;
mod groups;
mod guard;
mod hardening;
mod hardening3;
mod hardening4;
mod import_corpus;
mod import_edge;
mod label;
mod looptune_family;
mod nightly;
mod outputs;
mod peers_conformance;
mod peers_examples;
mod properties;
mod provenance;
mod qwen_conformance;
mod redaction;
mod rules;
mod setup;
mod splits;
mod stores;
mod walk;
mod watch;
mod zstd;
