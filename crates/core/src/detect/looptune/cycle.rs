//! Cycles of 2..`P` actions repeated `R` times (`A B A B ...`), per prompt.
//! A run of one action is the repeat rule's, not a cycle: a window that is
//! all one action never fires here. So with `repeat_stop` = `cycle_stop` =
//! `R` and periods 2..5 the two rules together are Gemini CLI's
//! `checkToolCallLoop` since acae7124bd (periods 1..5, one detection per call).

use super::actions::{actions, run_acts, ActRule, ActSpec, Item, Live, SameSettings, Shown};
use super::{staged, Stage, Stages};
use crate::detect::{Check, Detection, Prepared, Stream};
use crate::event::Session;
use rustc_hash::FxHashSet;
use std::collections::VecDeque;

/// What the rule reads.
#[derive(Debug, Clone, PartialEq)]
pub struct CycleSettings {
    /// What counts as the same action.
    pub same: SameSettings,
    /// Repetitions of a cycle that warn and stop.
    pub stages: Stages,
    /// Longest period looked for (2 and more).
    pub max_period: usize,
}

/// The rule as a check.
pub struct CycleCheck {
    /// Its settings.
    pub s: CycleSettings,
    /// Where its live stream runs (its group's first check).
    pub(crate) live: Live<dyn ActSpec>,
}

/// The shortest period `k` in 2..=`max_period` whose last `k * reps` actions
/// repeat with period `k` and are not all one action.
fn cycle_at(h: &VecDeque<u32>, reps: usize, max_period: usize, run: usize) -> Option<usize> {
    let n = h.len();
    (2..=max_period).find(|&k| {
        let need = k * reps;
        n >= need && run < need && (0..need - k).all(|i| h[n - need + i] == h[n - need + i + k])
    })
}

impl Check for CycleCheck {
    fn name(&self) -> &'static str {
        "looptune.cycle"
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

impl CycleSettings {
    fn rule(&self) -> Cycle {
        let st = self.stages;
        let cap = self.max_period * st.warn.max(st.stop);
        Cycle {
            stages: st,
            max_period: self.max_period,
            cap,
            h: VecDeque::with_capacity(cap.min(1024) + 1),
            run: 0,
            warned: false,
        }
    }
}

impl ActSpec for CycleSettings {
    fn same(&self) -> &SameSettings {
        &self.same
    }
    fn fresh(&self) -> Box<dyn ActRule> {
        Box::new(self.rule())
    }
}

/// The rule's state: the last `max_period x repetitions` actions of the
/// prompt, the run of identical ones at their end, whether it warned.
struct Cycle {
    stages: Stages,
    max_period: usize,
    cap: usize,
    h: VecDeque<u32>,
    run: usize,
    warned: bool,
}

impl ActRule for Cycle {
    fn item(&mut self, item: &Item, shown: &dyn Shown, s: &Session, out: &mut Vec<Detection>) {
        let a = match item {
            Item::NewPrompt => {
                self.h.clear();
                self.run = 0;
                self.warned = false;
                return;
            }
            Item::Break => return,
            Item::Act(a) => a,
        };
        let st = self.stages;
        let h = &mut self.h;
        self.run = if h.back() == Some(&a.key) {
            self.run + 1
        } else {
            1
        };
        h.push_back(a.key);
        if h.len() > self.cap {
            h.pop_front();
        }
        let stop = (st.stop > 0)
            .then(|| cycle_at(h, st.stop, self.max_period, self.run))
            .flatten();
        let warn = (st.warns() && stop.is_none())
            .then(|| cycle_at(h, st.warn, self.max_period, self.run))
            .flatten();
        let (stage, k, reps) = match (stop, warn) {
            (Some(k), _) => (Stage::Stop, k, st.stop),
            (None, Some(k)) if !self.warned => (Stage::Warn, k, st.warn),
            _ => {
                self.warned = warn.is_some();
                return;
            }
        };
        self.warned = stage == Stage::Warn || self.warned;
        let shown: Vec<&str> = h
            .iter()
            .skip(h.len() - k)
            .map(|x| shown.shown(*x))
            .collect();
        out.push(staged(
            s,
            a.at,
            stage,
            ("cycle", "cycle_warn"),
            a.prompt,
            format!(
                "a cycle of {k} actions repeated {reps} times: {}",
                shown.join(" -> ")
            ),
        ));
    }
    fn held(&self, keys: &mut FxHashSet<u32>, _calls: &mut FxHashSet<u32>) {
        keys.extend(self.h.iter().copied());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_are_found_and_runs_of_one_action_are_not_cycles() {
        let h: VecDeque<u32> = [1, 2, 1, 2, 1, 2].into_iter().collect();
        assert_eq!(cycle_at(&h, 3, 5, 1), Some(2));
        assert_eq!(cycle_at(&h, 4, 5, 1), None);
        let h: VecDeque<u32> = [1, 2, 3, 1, 2, 3].into_iter().collect();
        assert_eq!(cycle_at(&h, 2, 5, 1), Some(3));
        let h: VecDeque<u32> = [1; 10].into_iter().collect();
        assert_eq!(cycle_at(&h, 5, 5, 10), None);
    }
}
