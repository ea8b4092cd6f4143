//! Consecutive identical actions: Gemini CLI's tool-call rule (per prompt)
//! and OpenCode's doom loop (per assistant step, model text between calls
//! ending the run), by the `repeat_scope` knob.

use super::actions::{actions, Item, SameSettings};
use super::{staged, Stages};
use crate::detect::{Check, Detection, Prepared};

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
        let mut out = Vec::new();
        let (mut last, mut count) = (None, 0usize);
        for item in &acts.items {
            match item {
                Item::NewPrompt => (last, count) = (None, 0),
                Item::Break if self.s.step => (last, count) = (None, 0),
                Item::Break => {}
                Item::Act(a) => {
                    if last == Some(a.key) {
                        count += 1;
                    } else {
                        (last, count) = (Some(a.key), 1);
                    }
                    if let Some(stage) = self.s.stages.at(count) {
                        out.push(staged(
                            &session.session,
                            a.at,
                            stage,
                            ("repeat", "repeat_warn"),
                            a.prompt,
                            format!("{} {count} times in a row", acts.shown[a.key as usize]),
                        ));
                    }
                }
            }
        }
        out
    }
}
