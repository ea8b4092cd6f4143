//! Failure ladder (issue #45): one tool failing `N` times in a row whatever
//! its arguments and error text (an edit fight, each attempt rejected with a
//! different message; the error-streak rule needs the same text). The
//! tool's own success ends its run; a success of any call that changes
//! something (`change_tools`) ends every tool's run, since a retry after a
//! real change is a new attempt. Other tools' failures and read-only
//! successes between do not. A new prompt starts afresh.

use super::actions::{run_calls, CallRule, CallSpec, ChangeTools, Live, LiveCallRule, StepRef};
use super::{staged, Stages};
use crate::detect::prepared::CallArgs;
use crate::detect::{Check, Detection, Prepared, Stream};
use crate::event::Session;
use rustc_hash::FxHashMap;

/// What the rule reads.
#[derive(Debug, Clone, PartialEq)]
pub struct LadderSettings {
    /// Which calls change something.
    pub changes: ChangeTools,
    /// Failures of one tool in a row that warn and stop.
    pub stages: Stages,
}

/// The rule as a check.
pub struct LadderCheck {
    /// Its settings.
    pub s: LadderSettings,
    /// Where its live stream runs (its group's first check).
    pub(crate) live: Live<dyn CallSpec>,
}

impl Check for LadderCheck {
    fn name(&self) -> &'static str {
        "looptune.ladder"
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

impl LadderSettings {
    fn rule(&self) -> Ladder {
        Ladder {
            changes: self.changes.clone(),
            stages: self.stages,
            failing: FxHashMap::default(),
        }
    }
}

impl CallSpec for LadderSettings {
    fn fresh(&self) -> Box<dyn LiveCallRule> {
        Box::new(self.rule())
    }
}

/// The rule's state: by tool, its failures in a row (the prompt's tools
/// failing since the last change: bounded by the tools there are).
struct Ladder {
    changes: ChangeTools,
    stages: Stages,
    failing: FxHashMap<std::sync::Arc<str>, usize>,
}

impl CallRule for Ladder {
    const ARGS: bool = false;
    fn step(
        &mut self,
        step: StepRef<'_>,
        s: &Session,
        _raw: Option<&CallArgs>,
        out: &mut Vec<Detection>,
    ) {
        let call = match step {
            StepRef::NewPrompt => {
                self.failing.clear();
                return;
            }
            StepRef::Call(_) => return,
            StepRef::Answer(c) => c,
        };
        if !call.error {
            if self.changes.changes(&call.tool, call.args(s)) {
                self.failing.clear();
            } else {
                self.failing.remove(&*call.tool);
            }
            return;
        }
        let n = match self.failing.get_mut(&*call.tool) {
            Some(n) => n,
            None => self.failing.entry(call.tool.clone()).or_insert(0),
        };
        *n += 1;
        if let Some(stage) = self.stages.at(*n) {
            out.push(staged(
                s,
                call.answer.expect("an answer step has its answer"),
                stage,
                ("failure_ladder", "failure_ladder_warn"),
                call.answer_prompt,
                format!("{} failed {n} times in a row", call.tool),
            ));
        }
    }
}
