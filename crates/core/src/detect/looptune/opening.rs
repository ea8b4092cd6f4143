//! Turn openings (issue #45): the model's text of a turn opening with the
//! same `C` characters (white space normalised, nothing else: redacted logs
//! whose texts differ only in a hash must stay different; `content` only,
//! streamed chunks joined) in `R` turns of one
//! prompt, consecutive or not: the agent that answers every turn with the
//! same sentence ("I apologize, but I cannot ...") while it re-reads the
//! same file. A turn whose text stays shorter than `C` characters has no
//! opening (short acknowledgements such as "Done." are not a loop).

use super::{run_records, staged, RecordRule, Records, Stages};
use crate::detect::gemini::prep::Prompter;
use crate::detect::{Check, Detection, Prepared, Stream};
use crate::event::{Record, Session};
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
        run_records(self.rule(), &session.session)
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(Box::new(Records(self.rule())))
    }
}

impl OpeningCheck {
    fn rule(&self) -> Opening {
        Opening {
            chars: self.s.chars,
            stages: self.s.stages,
            prompts: Prompter::default(),
            seen: FxHashMap::default(),
            text: String::new(),
            done: false,
        }
    }
}

/// The rule's state: the prompt's openings counted (growing with its
/// turns: any earlier turn's opening may come again), this turn's text
/// until its opening is counted.
struct Opening {
    chars: usize,
    stages: Stages,
    prompts: Prompter,
    seen: FxHashMap<String, usize>,
    text: String,
    done: bool,
}

impl RecordRule for Opening {
    fn record(&mut self, s: &Session, i: usize, out: &mut Vec<Detection>) {
        let e = s.event(i);
        if self.prompts.observe(s, i) {
            self.seen.clear();
        }
        if e.starts_turn || matches!(e.record, Record::User { .. }) {
            (self.text, self.done) = (String::new(), false);
        }
        let Record::Content { text: chunk } = &e.record else {
            return;
        };
        if self.done {
            return;
        }
        self.text.push_str(chunk);
        let norm = self.text.split_whitespace().collect::<Vec<_>>().join(" ");
        if norm.chars().count() < self.chars {
            return;
        }
        self.done = true;
        // Counted: the turn's text is no longer read.
        self.text = String::new();
        let opening: String = norm.chars().take(self.chars).collect();
        let n = self.seen.entry(opening).or_insert(0);
        *n += 1;
        if let Some(stage) = self.stages.at(*n) {
            let shown: String = norm.chars().take(self.chars.min(80)).collect();
            out.push(staged(
                s,
                i,
                stage,
                ("turn_opening", "turn_opening_warn"),
                self.prompts.count(),
                format!("{n} turns open with \"{shown}\""),
            ));
        }
    }
}
