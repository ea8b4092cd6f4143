//! Same target (issue #45): one tool acting on the same thing (file path,
//! URL, from `target_keys`) `T` times in a row, whatever its other
//! arguments, so rewriting one file again and again with new content counts
//! where identical-call counts see different calls. OpenHands' and Goose's
//! editors count per sub-command (`view` of a file and `str_replace` in it
//! are different actions). A call without a target, or on another one, ends
//! the run, as does a new prompt.

use super::actions::{
    run_calls, sub_command, CallRule, CallSpec, Live, LiveCallRule, StepRef, TargetKeys,
};
use super::{staged, Stages};
use crate::detect::prepared::CallArgs;
use crate::detect::{Check, Detection, Prepared, Stream};
use crate::event::Session;

/// What the rule reads.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetSettings {
    /// Per tool, the argument keys naming the target.
    pub keys: TargetKeys,
    /// Calls on one target in a row that warn and stop.
    pub stages: Stages,
}

/// The rule as a check.
pub struct TargetCheck {
    /// Its settings.
    pub s: TargetSettings,
    /// Where its live stream runs (its group's first check).
    pub(crate) live: Live<dyn CallSpec>,
}

impl Check for TargetCheck {
    fn name(&self) -> &'static str {
        "looptune.target"
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

impl TargetSettings {
    fn rule(&self) -> Target {
        Target {
            keys: self.keys.clone(),
            stages: self.stages,
            last: None,
            count: 0,
        }
    }
}

impl CallSpec for TargetSettings {
    fn fresh(&self) -> Box<dyn LiveCallRule> {
        Box::new(self.rule())
    }
}

/// The rule's state: the last call's tool, sub-command and target, its run.
struct Target {
    keys: TargetKeys,
    stages: Stages,
    last: Option<(std::sync::Arc<str>, Option<String>, String)>,
    count: usize,
}

impl CallRule for Target {
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
                (self.last, self.count) = (None, 0);
                return;
            }
            StepRef::Answer(_) => return,
            StepRef::Call(c) => c,
        };
        let args = call.args(s);
        let Some(target) = self.keys.target(&call.tool, args) else {
            (self.last, self.count) = (None, 0);
            return;
        };
        let key = (
            call.tool.clone(),
            sub_command(args).map(String::from),
            target,
        );
        if self.last.as_ref() == Some(&key) {
            self.count += 1;
        } else {
            (self.last, self.count) = (Some(key), 1);
        }
        if let Some(stage) = self.stages.at(self.count) {
            let (tool, sub, target) = self.last.as_ref().expect("set above");
            let sub = sub.as_deref().map(|x| format!(" {x}")).unwrap_or_default();
            out.push(staged(
                s,
                call.at,
                stage,
                ("same_target", "same_target_warn"),
                call.prompt,
                format!(
                    "{tool}{sub} on {} {} times in a row",
                    target.chars().take(100).collect::<String>(),
                    self.count
                ),
            ));
        }
    }
}
