//! One action occurring `K` times among the last `W` actions, consecutive or
//! not (Crush's step-signature rule over single actions; it catches repeats
//! interleaved with other calls).

use super::actions::{actions, run_acts, ActRule, ActSpec, Item, Live, SameSettings, Shown};
use super::{staged, Stages};
use crate::detect::{Check, Detection, Prepared, Stream};
use crate::event::Session;
use rustc_hash::{FxHashMap, FxHashSet};
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
    /// Where its live stream runs (its group's first check).
    pub(crate) live: Live<dyn ActSpec>,
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
        run_acts(self.s.rule(), &acts, &session.session)
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(self.live.stream())
    }
}

impl WindowSettings {
    fn rule(&self) -> Window {
        Window {
            stages: self.stages,
            size: self.size,
            window: VecDeque::with_capacity(self.size.min(1024) + 1),
            counts: FxHashMap::default(),
        }
    }
}

impl ActSpec for WindowSettings {
    fn same(&self) -> &SameSettings {
        &self.same
    }
    fn fresh(&self) -> Box<dyn ActRule> {
        Box::new(self.rule())
    }
}

/// The rule's state: the window and each key's count in it (bounded by the window).
struct Window {
    stages: Stages,
    size: usize,
    window: VecDeque<u32>,
    counts: FxHashMap<u32, u32>,
}

impl Window {
    fn drop_one(&mut self, k: u32) {
        if let Some(n) = self.counts.get_mut(&k) {
            *n -= 1;
            if *n == 0 {
                self.counts.remove(&k);
            }
        }
    }
}

impl ActRule for Window {
    fn item(&mut self, item: &Item, shown: &dyn Shown, s: &Session, out: &mut Vec<Detection>) {
        match item {
            Item::NewPrompt => {
                self.window.clear();
                self.counts.clear();
            }
            Item::Break => {}
            Item::Act(a) => {
                self.window.push_back(a.key);
                *self.counts.entry(a.key).or_insert(0) += 1;
                if self.window.len() > self.size {
                    let k = self.window.pop_front().expect("over size");
                    self.drop_one(k);
                }
                let n = self.counts.get(&a.key).copied().unwrap_or(0) as usize;
                if let Some(stage) = self.stages.at(n) {
                    out.push(staged(
                        s,
                        a.at,
                        stage,
                        ("window", "window_warn"),
                        a.prompt,
                        format!(
                            "{} {n} times in the last {} actions",
                            shown.shown(a.key),
                            self.window.len()
                        ),
                    ));
                }
            }
        }
    }
    fn held(&self, keys: &mut FxHashSet<u32>, _calls: &mut FxHashSet<u32>) {
        keys.extend(self.counts.keys());
    }
}
