//! Cycles of 2..`P` actions repeated `R` times (`A B A B ...`), per prompt.
//! A run of one action is the repeat rule's, not a cycle: a window that is
//! all one action never fires here. So with `repeat_stop` = `cycle_stop` =
//! `R` and periods 2..5 the two rules together are Gemini CLI's
//! `checkToolCallLoop` since acae7124bd (periods 1..5, one detection per call).

use super::actions::{actions, Item, SameSettings};
use super::{staged, Stage, Stages};
use crate::detect::{Check, Detection, Prepared};
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
        let st = self.s.stages;
        let cap = self.s.max_period * st.warn.max(st.stop);
        let mut out = Vec::new();
        let mut h: VecDeque<u32> = VecDeque::with_capacity(cap.min(1024) + 1);
        // Identical actions at the end of the history.
        let mut run = 0usize;
        let mut warned = false;
        for item in &acts.items {
            let a = match item {
                Item::NewPrompt => {
                    h.clear();
                    run = 0;
                    warned = false;
                    continue;
                }
                Item::Break => continue,
                Item::Act(a) => a,
            };
            run = if h.back() == Some(&a.key) { run + 1 } else { 1 };
            h.push_back(a.key);
            if h.len() > cap {
                h.pop_front();
            }
            let stop = (st.stop > 0)
                .then(|| cycle_at(&h, st.stop, self.s.max_period, run))
                .flatten();
            let warn = (st.warns() && stop.is_none())
                .then(|| cycle_at(&h, st.warn, self.s.max_period, run))
                .flatten();
            let (stage, k, reps) = match (stop, warn) {
                (Some(k), _) => (Stage::Stop, k, st.stop),
                (None, Some(k)) if !warned => (Stage::Warn, k, st.warn),
                _ => {
                    warned = warn.is_some();
                    continue;
                }
            };
            warned = stage == Stage::Warn || warned;
            let shown: Vec<&str> = h
                .iter()
                .skip(h.len() - k)
                .map(|x| acts.shown[*x as usize].as_str())
                .collect();
            out.push(staged(
                &session.session,
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
        out
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
