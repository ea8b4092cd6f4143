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

use super::actions::{calls, normalize_loose, sub_command, ChangeTools, Step, TargetKeys};
use super::{staged, Stages};
use crate::detect::{Check, Detection, Prepared};
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
}

/// What an action is keyed by: its target, else its argument text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum On {
    Target(Option<String>, String),
    Args(u32),
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
        let s = &session.session;
        let cs = calls(session);
        let raw = session.call_args();
        let mut out = Vec::new();
        // Successful changes so far.
        let mut changes = 0usize;
        // By tool and key: the last head, its count, the changes at its last count.
        let mut seen: FxHashMap<(&str, On), (String, usize, usize)> = FxHashMap::default();
        for step in &cs.steps {
            let c = match step {
                Step::NewPrompt => {
                    seen.clear();
                    continue;
                }
                Step::Call(_) => continue,
                Step::Answer(c) => *c,
            };
            let call = &cs.calls[c];
            let args = cs.args(s, c);
            if self.s.changes.changes(&call.tool, args) {
                changes += usize::from(!call.error);
                continue;
            }
            let target = self.s.keys.target(&call.tool, args);
            let what: String = target
                .as_deref()
                .unwrap_or(&raw.texts[raw.ids[call.at] as usize])
                .chars()
                .take(100)
                .collect();
            let on = match target {
                Some(t) => On::Target(sub_command(args).map(String::from), t),
                None => On::Args(raw.ids[call.at]),
            };
            let output = cs.output(s, c);
            let head = if self.s.chars == 0 {
                normalize_loose(output)
            } else {
                normalize_loose(&output.chars().take(self.s.chars).collect::<String>())
            };
            let e = seen
                .entry((call.tool.as_str(), on))
                .or_insert_with(|| (head.clone(), 0, changes));
            if e.0 != head {
                *e = (head, 1, changes);
                continue;
            }
            if e.1 > 0 && e.2 == changes {
                continue;
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
        out
    }
}
