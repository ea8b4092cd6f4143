//! Same outcome (issue #45): one action, keyed by its target when it has one
//! (`target_keys`) and else by name and arguments, answered by the same
//! result (its first `outcome_chars` characters, 0 = all, volatile values,
//! durations and white space normalised) `K` times, with a change
//! (`change_tools`) between each time and the next: the test run that fails
//! the same way after every edit, the unchanged file re-viewed after every
//! edit elsewhere. Asking again with nothing changed between (polling) does
//! not count, nor end the count; a different answer starts it again; the
//! changes' own results are not outcomes (every successful write answers
//! alike). A new prompt starts afresh.

use super::actions::{
    args_id, normalize_loose, run_calls, sub_command, ArgsId, CallRule, CallSpec, ChangeTools,
    Live, LiveCallRule, StepRef, TargetKeys,
};
use super::{staged, Stages};
use crate::detect::prepared::CallArgs;
use crate::detect::{Check, Detection, Prepared, Stream};
use crate::event::Session;
use rustc_hash::FxHashMap;

/// What the rule reads.
#[derive(Debug, Clone, PartialEq)]
pub struct OutcomeSettings {
    /// Per tool, the argument keys naming the target.
    pub keys: TargetKeys,
    /// Which calls change something.
    pub changes: ChangeTools,
    /// Leading characters of a result compared (0 = all).
    pub chars: usize,
    /// Same outcomes, changes between, that warn and stop.
    pub stages: Stages,
}

/// The rule as a check.
pub struct OutcomeCheck {
    /// Its settings.
    pub s: OutcomeSettings,
    /// Where its live stream runs (its group's first check).
    pub(crate) live: Live<dyn CallSpec>,
}

/// What an action is keyed by: its target, else its argument text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum On {
    Target(Option<String>, String),
    Args(ArgsId),
}

impl Check for OutcomeCheck {
    fn name(&self) -> &'static str {
        "looptune.outcome"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }
    fn limit_per_prompt(&self) -> bool {
        true
    }
    fn run(&self, session: &Prepared, _limit: Option<usize>) -> Vec<Detection> {
        run_calls(self.s.rule(), session)
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(self.live.stream())
    }
}

impl OutcomeSettings {
    fn rule(&self) -> SameOutcome {
        SameOutcome {
            s: self.clone(),
            changes: 0,
            seen: FxHashMap::default(),
        }
    }
}

impl CallSpec for OutcomeSettings {
    fn fresh(&self) -> Box<dyn LiveCallRule> {
        Box::new(self.rule())
    }
}

/// The rule's state: successful changes so far, and by tool and key the
/// last head, its count and the changes at its last count. Grows with the
/// prompt's distinct actions (any earlier one may be asked again after a
/// change), cleared at a new prompt.
struct SameOutcome {
    s: OutcomeSettings,
    changes: usize,
    seen: FxHashMap<(std::sync::Arc<str>, On), (String, usize, usize)>,
}

impl CallRule for SameOutcome {
    const ARGS: bool = true;
    fn step(
        &mut self,
        step: StepRef<'_>,
        s: &Session,
        raw: Option<&CallArgs>,
        out: &mut Vec<Detection>,
    ) {
        let call = match step {
            StepRef::NewPrompt => {
                self.seen.clear();
                return;
            }
            StepRef::Call(_) => return,
            StepRef::Answer(c) => c,
        };
        let args = call.args(s);
        if self.s.changes.changes(&call.tool, args) {
            self.changes += usize::from(!call.error);
            return;
        }
        // The arguments' text only for a call without a target (a live
        // feed writes it).
        let (on, what): (On, String) = match self.s.keys.target(&call.tool, args) {
            Some(t) => {
                let what = t.chars().take(100).collect();
                (On::Target(sub_command(args).map(String::from), t), what)
            }
            None => {
                let (id, text) = args_id(raw, s, call.at);
                (On::Args(id), text.chars().take(100).collect())
            }
        };
        let output = call.output(s);
        let head = if self.s.chars == 0 {
            normalize_loose(output)
        } else {
            // The first `chars` characters, sliced rather than copied.
            let end = output
                .char_indices()
                .nth(self.s.chars)
                .map_or(output.len(), |(at, _)| at);
            normalize_loose(&output[..end])
        };
        let changes = self.changes;
        let e = self
            .seen
            .entry((call.tool.clone(), on))
            .or_insert_with(|| (head.clone(), 0, changes));
        if e.0 != head {
            *e = (head, 1, changes);
            return;
        }
        if e.1 > 0 && e.2 == changes {
            return;
        }
        e.1 += 1;
        e.2 = changes;
        let n = e.1;
        if let Some(stage) = self.s.stages.at(n) {
            out.push(staged(
                s,
                call.answer.expect("an answer step has its answer"),
                stage,
                ("same_outcome", "same_outcome_warn"),
                call.answer_prompt,
                format!(
                    "{} {what} got the same result {n} times, changes between",
                    call.tool
                ),
            ));
        }
    }
}
