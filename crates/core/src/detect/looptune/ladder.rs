//! Failure ladder (issue #45): one tool failing `N` times in a row whatever
//! its arguments and error text (an edit fight, each attempt rejected with a
//! different message; the error-streak rule needs the same text). The
//! tool's own success ends its run; a success of any call that changes
//! something (`change_tools`) ends every tool's run, since a retry after a
//! real change is a new attempt. Other tools' failures and read-only
//! successes between do not. A new prompt starts afresh.

use super::actions::{calls, ChangeTools, Step};
use super::{staged, Stages};
use crate::detect::{Check, Detection, Prepared};
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
        let s = &session.session;
        let cs = calls(session);
        let mut out = Vec::new();
        let mut failing: FxHashMap<&str, usize> = FxHashMap::default();
        for step in &cs.steps {
            let c = match step {
                Step::NewPrompt => {
                    failing.clear();
                    continue;
                }
                Step::Call(_) => continue,
                Step::Answer(c) => *c,
            };
            let call = &cs.calls[c];
            if !call.error {
                if self.s.changes.changes(&call.tool, cs.args(s, c)) {
                    failing.clear();
                } else {
                    failing.remove(call.tool.as_str());
                }
                continue;
            }
            let n = failing.entry(call.tool.as_str()).or_insert(0);
            *n += 1;
            if let Some(stage) = self.s.stages.at(*n) {
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
        out
    }
}
