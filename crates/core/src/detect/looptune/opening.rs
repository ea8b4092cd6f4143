//! Turn openings (issue #45): the model's text of a turn opening with the
//! same `C` characters (white space normalised, nothing else: redacted logs
//! whose texts differ only in a hash must stay different; `content` only,
//! streamed chunks joined) in `R` turns of one
//! prompt, consecutive or not: the agent that answers every turn with the
//! same sentence ("I apologize, but I cannot ...") while it re-reads the
//! same file. A turn whose text stays shorter than `C` characters has no
//! opening (short acknowledgements such as "Done." are not a loop).

use super::{staged, Stages};
use crate::detect::peers::common::Prompts;
use crate::detect::{Check, Detection, Prepared};
use crate::event::Record;
use rustc_hash::FxHashMap;

/// What the rule reads.
#[derive(Debug, Clone, PartialEq)]
pub struct OpeningSettings {
    /// Characters of a turn's text that make its opening.
    pub chars: usize,
    /// Turns with one opening that warn and stop.
    pub stages: Stages,
}

/// The rule as a check.
pub struct OpeningCheck {
    /// Its settings.
    pub s: OpeningSettings,
}

impl Check for OpeningCheck {
    fn name(&self) -> &'static str {
        "looptune.opening"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }
    fn limit_per_prompt(&self) -> bool {
        true
    }
    fn run(&self, session: &Prepared, _limit: Option<usize>) -> Vec<Detection> {
        let s = &session.session;
        let mut out = Vec::new();
        let mut prompts = Prompts::default();
        let mut seen: FxHashMap<String, usize> = FxHashMap::default();
        // This turn's text so far, and whether its opening was counted.
        let (mut text, mut done) = (String::new(), false);
        for (i, e) in s.events.iter().enumerate() {
            if prompts.observe(&e.record) {
                seen.clear();
            }
            if e.starts_turn || matches!(e.record, Record::User { .. }) {
                (text, done) = (String::new(), false);
            }
            let Record::Content { text: chunk } = &e.record else {
                continue;
            };
            if done {
                continue;
            }
            text.push_str(chunk);
            let norm = text.split_whitespace().collect::<Vec<_>>().join(" ");
            if norm.chars().count() < self.s.chars {
                continue;
            }
            done = true;
            let opening: String = norm.chars().take(self.s.chars).collect();
            let n = seen.entry(opening).or_insert(0);
            *n += 1;
            if let Some(stage) = self.s.stages.at(*n) {
                let shown: String = norm.chars().take(self.s.chars.min(80)).collect();
                out.push(staged(
                    s,
                    i,
                    stage,
                    ("turn_opening", "turn_opening_warn"),
                    prompts.count(),
                    format!("{n} turns open with \"{shown}\""),
                ));
            }
        }
        out
    }
}
