//! A session plus the work every configuration would otherwise repeat:
//! computed once per session, lazily, and shared by all checks and threads.

use crate::event::Session;
use std::sync::{Arc, OnceLock};

/// A session with lazily computed, configuration-independent derived data.
#[derive(Debug)]
pub struct Prepared {
    /// The session.
    pub session: Arc<Session>,
    /// Gemini CLI family data (tool keys, UTF-16 content, markdown flags).
    pub(crate) gemini: OnceLock<super::gemini::GeminiPrep>,
}

impl Prepared {
    /// Wrap a session.
    pub fn new(session: Arc<Session>) -> Prepared {
        Prepared {
            session,
            gemini: OnceLock::new(),
        }
    }
}
