//! Consecutive identical actions: Gemini CLI's tool-call rule (per prompt)
//! and OpenCode's doom loop (per assistant step, model text between calls
//! ending the run), by the `repeat_scope` knob.

use super::actions::{actions, run_acts, ActRule, ActSpec, Item, Live, SameSettings, Shown};
use super::{staged, Stages};
use crate::detect::{Check, Detection, Prepared, Stream};
use crate::event::Session;
use rustc_hash::FxHashSet;

/// What the rule reads.
#[derive(Debug, Clone, PartialEq)]
pub struct RepeatSettings {
    /// What counts as the same action.
    pub same: SameSettings,
    /// Identical actions in a row that warn and stop.
    pub stages: Stages,
    /// A new step or model text ends the run (OpenCode), not only a new prompt.
    pub step: bool,
}

/// The rule as a check.
pub struct RepeatCheck {
    /// Its settings.
    pub s: RepeatSettings,
    /// Where its live stream runs (its group's first check).
    pub(crate) live: Live<dyn ActSpec>,
}

impl Check for RepeatCheck {
    fn name(&self) -> &'static str {
        "looptune.repeat"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }
    fn limit_per_prompt(&self) -> bool {
        true
    }
    fn run(&self, session: &Prepared, _limit: Option<usize>) -> Vec<Detection> {
        let acts = actions(session, &self.s.same);
        run_acts(self.s.rule(), &acts, &session.session)
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(self.live.stream())
    }
}

impl RepeatSettings {
    fn rule(&self) -> Repeat {
        Repeat {
            stages: self.stages,
            step: self.step,
            last: None,
            count: 0,
        }
    }
}

impl ActSpec for RepeatSettings {
    fn same(&self) -> &SameSettings {
        &self.same
    }
    fn fresh(&self) -> Box<dyn ActRule> {
        Box::new(self.rule())
    }
}

/// The rule's state: the last action and its run.
struct Repeat {
    stages: Stages,
    step: bool,
    last: Option<u32>,
    count: usize,
}

impl ActRule for Repeat {
    fn item(&mut self, item: &Item, shown: &dyn Shown, s: &Session, out: &mut Vec<Detection>) {
        match item {
            Item::NewPrompt => (self.last, self.count) = (None, 0),
            Item::Break if self.step => (self.last, self.count) = (None, 0),
            Item::Break => {}
            Item::Act(a) => {
                if self.last == Some(a.key) {
                    self.count += 1;
                } else {
                    (self.last, self.count) = (Some(a.key), 1);
                }
                if let Some(stage) = self.stages.at(self.count) {
                    out.push(staged(
                        s,
                        a.at,
                        stage,
                        ("repeat", "repeat_warn"),
                        a.prompt,
                        format!("{} {} times in a row", shown.shown(a.key), self.count),
                    ));
                }
            }
        }
    }
    fn held(&self, keys: &mut FxHashSet<u32>, _calls: &mut FxHashSet<u32>) {
        keys.extend(self.last);
    }
}
