//! Gemini CLI's `LoopDetectionService` (placeholder while the port is written).
use super::*;

/// Per-session data shared by all Gemini checks.
#[derive(Debug)]
pub struct GeminiPrep;

/// The `gemini` family.
pub struct Gemini;

impl Family for Gemini {
    fn name(&self) -> &'static str { "gemini" }
    fn about(&self) -> &'static str { "" }
    fn params(&self) -> Vec<ParamSpec> { vec![POLICY_SPEC] }
    fn profiles(&self) -> Vec<Profile> { vec![Profile { name: "gemini-latest", about: "", values: vec![(POLICY, ParamValue::Str("warn:1".into()))] }] }
    fn checks(&self, _params: &ParamSet) -> Result<Vec<Box<dyn Check>>> { Ok(vec![]) }
}
