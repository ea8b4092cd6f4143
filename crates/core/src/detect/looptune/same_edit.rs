//! Repeated edit (issue #45): a change (`change_tools`: a write, an edit, a
//! shell command that writes) identical to an earlier successful one of the
//! session, name and arguments as written: the restore / re-apply thrash
//! of an edit/test cycle that keeps making the same edit. Counted over the
//! whole session, not per prompt (an edit made again after a new prompt is
//! still the same edit); a failed attempt is no edit, so a retry that
//! finally succeeds does not count.

use super::actions::{calls, ChangeTools, Step};
use super::{staged, Stages};
use crate::detect::{Check, Detection, Prepared};
use rustc_hash::FxHashMap;

/// What the rule reads.
#[derive(Debug, Clone, PartialEq)]
pub struct SameEditSettings {
    /// Which calls change something.
    pub changes: ChangeTools,
    /// Times one edit was made that warn and stop (2 = its first repeat).
    pub stages: Stages,
}

/// The rule as a check.
pub struct SameEditCheck {
    /// Its settings.
    pub s: SameEditSettings,
}

impl Check for SameEditCheck {
    fn name(&self) -> &'static str {
        "looptune.same_edit"
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
        // By tool and argument text: times made.
        let mut made: FxHashMap<(&str, u32), usize> = FxHashMap::default();
        for step in &cs.steps {
            let Step::Answer(c) = *step else { continue };
            let call = &cs.calls[c];
            if call.error || !self.s.changes.changes(&call.tool, cs.args(s, c)) {
                continue;
            }
            let text = raw.ids[call.at];
            let n = made.entry((call.tool.as_str(), text)).or_insert(0);
            *n += 1;
            if let Some(stage) = self.s.stages.at(*n) {
                let args: String = raw.texts[text as usize].chars().take(100).collect();
                out.push(staged(
                    s,
                    call.answer.expect("an answer step has its answer"),
                    stage,
                    ("same_edit", "same_edit_warn"),
                    call.answer_prompt,
                    format!("{} {args} made {n} times", call.tool),
                ));
            }
        }
        out
    }
}
