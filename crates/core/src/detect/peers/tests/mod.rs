//! The original programs' own test files, ported case by case to each port's
//! internals (trackers, services, signatures), which are not part of the
//! library's API; the family-level cases on sessions live in
//! tests/integration (peers_examples, peers_conformance).

mod blade;
mod cline;
mod crush;
mod deepeval;
mod goose;
mod hermes;
mod kimi;
mod openclaw;
mod opencode;
mod openhands;
mod openrouter_sdk;
mod qwen;
mod roo;

use serde_json::{Map, Value};

/// A JSON object literal as tool-call arguments.
fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("args must be an object"),
    }
}
