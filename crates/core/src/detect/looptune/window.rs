//! One action occurring `K` times among the last `W` actions, consecutive or
//! not (Crush's step-signature rule over single actions; it catches repeats
//! interleaved with other calls).

use super::actions::{actions, Item, SameSettings};
use super::{staged, Stages};
use crate::detect::{Check, Detection, Prepared};
use std::collections::VecDeque;

/// What the rule reads.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowSettings {
    /// What counts as the same action.
    pub same: SameSettings,
    /// Occurrences in the window that warn and stop.
    pub stages: Stages,
    /// Actions in the window.
    pub size: usize,
}

/// The rule as a check.
pub struct WindowCheck {
    /// Its settings.
    pub s: WindowSettings,
}

impl Check for WindowCheck {
    fn name(&self) -> &'static str {
        "looptune.window"
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
        let mut window: VecDeque<u32> = VecDeque::with_capacity(self.s.size.min(1024) + 1);
        let mut counts: Vec<u32> = vec![0; acts.shown.len()];
        for item in &acts.items {
            match item {
                Item::NewPrompt => {
                    for k in window.drain(..) {
                        counts[k as usize] -= 1;
                    }
                }
                Item::Break => {}
                Item::Act(a) => {
                    window.push_back(a.key);
                    counts[a.key as usize] += 1;
                    if window.len() > self.s.size {
                        let k = window.pop_front().expect("over size");
                        counts[k as usize] -= 1;
                    }
                    let n = counts[a.key as usize] as usize;
                    if let Some(stage) = self.s.stages.at(n) {
                        out.push(staged(
                            &session.session,
                            a.at,
                            stage,
                            ("window", "window_warn"),
                            a.prompt,
                            format!(
                                "{} {n} times in the last {} actions",
                                acts.shown[a.key as usize],
                                window.len()
                            ),
                        ));
                    }
                }
            }
        }
        out
    }
}
