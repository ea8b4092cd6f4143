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
    /// What other families derive from the session alone (argument texts,
    /// step signatures), by name: computed by the first check that asks and
    /// shared by every configuration, so a sweep does not redo work that
    /// grows with the arguments once per configuration.
    shared: std::sync::Mutex<Vec<(&'static str, Arc<dyn std::any::Any + Send + Sync>)>>,
}

impl Prepared {
    /// Wrap a session.
    pub fn new(session: Arc<Session>) -> Prepared {
        Prepared {
            session,
            gemini: OnceLock::new(),
            shared: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// The value `make` derives from the session, under `name`: made once
    /// (by the first check that asks), then shared by every check and
    /// configuration. `name` is the family's own, and always of one type.
    pub(crate) fn shared<T: Send + Sync + 'static>(
        &self,
        name: &'static str,
        make: impl FnOnce(&crate::event::Session) -> T,
    ) -> Arc<T> {
        let find = |held: &[(&'static str, Arc<dyn std::any::Any + Send + Sync>)]| {
            held.iter()
                .find(|(n, _)| *n == name)
                .and_then(|(_, v)| v.clone().downcast::<T>().ok())
        };
        if let Some(v) = find(&self.shared.lock().unwrap_or_else(|e| e.into_inner())) {
            return v;
        }
        // Made outside the lock: other families' checks go on meanwhile.
        let made = Arc::new(make(&self.session));
        let mut held = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = find(&held) {
            return v;
        }
        held.push((name, made.clone()));
        made
    }

    /// Whether a check has made the value under `name` (tests of sharing).
    #[cfg(test)]
    pub(crate) fn holds(&self, name: &str) -> bool {
        let held = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        held.iter().any(|(n, _)| *n == name)
    }
}
