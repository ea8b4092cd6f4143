//! Same target (issue #45): one tool acting on the same thing (file path,
//! URL, from `target_keys`) `T` times in a row, whatever its other
//! arguments, so rewriting one file again and again with new content counts
//! where identical-call counts see different calls. OpenHands' and Goose's
//! editors count per sub-command (`view` of a file and `str_replace` in it
//! are different actions). A call without a target, or on another one, ends
//! the run, as does a new prompt.

use super::actions::{calls, sub_command, Step, TargetKeys};
use super::{staged, Stages};
use crate::detect::{Check, Detection, Prepared};

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
        let s = &session.session;
        let cs = calls(session);
        let mut out = Vec::new();
        let mut last: Option<(String, Option<String>, String)> = None;
        let mut count = 0usize;
        for step in &cs.steps {
            let c = match step {
                Step::NewPrompt => {
                    (last, count) = (None, 0);
                    continue;
                }
                Step::Answer(_) => continue,
                Step::Call(c) => *c,
            };
            let call = &cs.calls[c];
            let args = cs.args(s, c);
            let Some(target) = self.s.keys.target(&call.tool, args) else {
                (last, count) = (None, 0);
                continue;
            };
            let key = (
                call.tool.clone(),
                sub_command(args).map(String::from),
                target,
            );
            if last.as_ref() == Some(&key) {
                count += 1;
            } else {
                (last, count) = (Some(key), 1);
            }
            if let Some(stage) = self.s.stages.at(count) {
                let (tool, sub, target) = last.as_ref().expect("set above");
                let sub = sub.as_deref().map(|x| format!(" {x}")).unwrap_or_default();
                out.push(staged(
                    s,
                    call.at,
                    stage,
                    ("same_target", "same_target_warn"),
                    call.prompt,
                    format!(
                        "{tool}{sub} on {} {count} times in a row",
                        target.chars().take(100).collect::<String>()
                    ),
                ));
            }
        }
        out
    }
}
