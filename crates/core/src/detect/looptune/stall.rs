//! No progress: the same action (name and arguments) answered by the same
//! result `N` times in a row for that action, whatever other actions came
//! between. Polling that sees a change, a retry that gets a new answer, do
//! not count; a status check asked again and again with the same answer does.

use super::actions::{actions, Item, SameSettings};
use super::{staged, Stages};
use crate::detect::{Check, Detection, Prepared};
use rustc_hash::FxHashMap;

/// What the rule reads.
#[derive(Debug, Clone, PartialEq)]
pub struct StallSettings {
    /// Sameness with the result (`same` is always [`super::actions::Same::Result`]).
    pub same: SameSettings,
    /// Same answers in a row that warn and stop.
    pub stages: Stages,
}

/// The rule as a check.
pub struct StallCheck {
    /// Its settings.
    pub s: StallSettings,
}

impl Check for StallCheck {
    fn name(&self) -> &'static str {
        "looptune.stall"
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
        // By call: the last answer's key and how many times in a row it came.
        let mut last: FxHashMap<u32, (u32, usize)> = FxHashMap::default();
        for item in &acts.items {
            match item {
                Item::NewPrompt => last.clear(),
                Item::Break => {}
                Item::Act(a) => {
                    let e = last.entry(a.call).or_insert((a.key, 0));
                    if e.0 == a.key {
                        e.1 += 1;
                    } else {
                        *e = (a.key, 1);
                    }
                    let n = e.1;
                    if let Some(stage) = self.s.stages.at(n) {
                        out.push(staged(
                            &session.session,
                            a.at,
                            stage,
                            ("no_progress", "no_progress_warn"),
                            a.prompt,
                            format!(
                                "{} got the same result {n} times",
                                acts.shown[a.key as usize]
                            ),
                        ));
                    }
                }
            }
        }
        out
    }
}
