//! No progress: the same action (name and arguments) answered by the same
//! result `N` times in a row for that action, whatever other actions came
//! between. Polling that sees a change, a retry that gets a new answer, do
//! not count; a status check asked again and again with the same answer does.

use super::actions::{actions, run_acts, ActRule, ActSpec, Item, Live, SameSettings, Shown};
use super::{staged, Stages};
use crate::detect::{Check, Detection, Prepared, Stream};
use crate::event::Session;
use rustc_hash::{FxHashMap, FxHashSet};

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
    /// Where its live stream runs (its group's first check).
    pub(crate) live: Live<dyn ActSpec>,
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
        run_acts(self.s.rule(), &acts, &session.session)
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(self.live.stream())
    }
}

impl StallSettings {
    fn rule(&self) -> Stall {
        Stall {
            stages: self.stages,
            last: FxHashMap::default(),
        }
    }
}

impl ActSpec for StallSettings {
    fn same(&self) -> &SameSettings {
        &self.same
    }
    fn fresh(&self) -> Box<dyn ActRule> {
        Box::new(self.rule())
    }
}

/// The rule's state: by call, the last answer's key and how many times in
/// a row it came. Grows with the prompt's distinct calls (any earlier call
/// may be made again with the same answer), cleared at a new prompt.
struct Stall {
    stages: Stages,
    last: FxHashMap<u32, (u32, usize)>,
}

impl ActRule for Stall {
    fn item(&mut self, item: &Item, shown: &dyn Shown, s: &Session, out: &mut Vec<Detection>) {
        match item {
            Item::NewPrompt => self.last.clear(),
            Item::Break => {}
            Item::Act(a) => {
                let e = self.last.entry(a.call).or_insert((a.key, 0));
                if e.0 == a.key {
                    e.1 += 1;
                } else {
                    *e = (a.key, 1);
                }
                let n = e.1;
                if let Some(stage) = self.stages.at(n) {
                    out.push(staged(
                        s,
                        a.at,
                        stage,
                        ("no_progress", "no_progress_warn"),
                        a.prompt,
                        format!("{} got the same result {n} times", shown.shown(a.key)),
                    ));
                }
            }
        }
    }
    fn held(&self, keys: &mut FxHashSet<u32>, calls: &mut FxHashSet<u32>) {
        for (c, (k, _)) in &self.last {
            calls.insert(*c);
            keys.insert(*k);
        }
    }
}
