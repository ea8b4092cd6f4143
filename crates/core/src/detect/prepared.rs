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

    /// Every call's `JSON.stringify` arguments, made once per session for
    /// every family and configuration that compares them (OpenCode's doom
    /// loop, looptune's actions).
    pub(crate) fn call_args(&self) -> Arc<CallArgs> {
        self.shared("call.args", CallArgs::of)
    }

    /// Whether a check has made the value under `name` (tests of sharing).
    #[cfg(test)]
    pub(crate) fn holds(&self, name: &str) -> bool {
        let held = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        held.iter().any(|(n, _)| *n == name)
    }
}

/// Every call's `JSON.stringify` arguments in a session (the text grows with
/// the arguments): an id per record, the same for equal texts, so checks
/// compare ids, not texts.
#[derive(Debug, Default)]
pub(crate) struct CallArgs {
    /// By record index: the text's id (`u32::MAX` for a record that is no call).
    pub(crate) ids: Vec<u32>,
    /// By id: the text.
    pub(crate) texts: Vec<String>,
}

impl CallArgs {
    fn of(session: &Session) -> CallArgs {
        let mut seen: rustc_hash::FxHashMap<String, u32> = rustc_hash::FxHashMap::default();
        let mut out = CallArgs::default();
        for e in &session.events {
            let id = match &e.record {
                crate::event::Record::ToolCall { args, .. } => {
                    let text = crate::util::js::stringify_object(args);
                    let next = out.texts.len() as u32;
                    *seen.entry(text).or_insert_with_key(|t| {
                        out.texts.push(t.clone());
                        next
                    })
                }
                _ => u32::MAX,
            };
            out.ids.push(id);
        }
        out
    }

    /// The id and text of record `i`'s arguments (a call).
    pub(crate) fn at(&self, i: usize) -> (u32, &str) {
        let id = self.ids[i];
        (id, &self.texts[id as usize])
    }
}
