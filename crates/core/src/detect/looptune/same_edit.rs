//! Repeated edit (issue #45): a change (`change_tools`: a write, an edit, a
//! shell command that writes) identical to an earlier successful one of the
//! session, name and arguments as written: the restore / re-apply thrash
//! of an edit/test cycle that keeps making the same edit. Counted over the
//! whole session, not per prompt (an edit made again after a new prompt is
//! still the same edit); a failed attempt is no edit, so a retry that
//! finally succeeds does not count.

use super::actions::{
    args_id, run_calls, ArgsId, CallRule, CallSpec, ChangeTools, Live, LiveCallRule, StepRef,
};
use super::{staged, Stages};
use crate::detect::prepared::CallArgs;
use crate::detect::{Check, Detection, Prepared, Stream};
use crate::event::Session;
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
    /// Where its live stream runs (its group's first check).
    pub(crate) live: Live<dyn CallSpec>,
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
        run_calls(self.s.rule(), session)
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(self.live.stream())
    }
}

impl SameEditSettings {
    fn rule(&self) -> SameEdit {
        SameEdit {
            changes: self.changes.clone(),
            stages: self.stages,
            made: FxHashMap::default(),
        }
    }
}

impl CallSpec for SameEditSettings {
    fn fresh(&self) -> Box<dyn LiveCallRule> {
        Box::new(self.rule())
    }
}

/// The rule's state: by tool and argument text, times made. Grows with the
/// session's distinct changes (an edit is compared with every earlier one
/// of the session): O(1) a record, memory O(changes).
struct SameEdit {
    changes: ChangeTools,
    stages: Stages,
    made: FxHashMap<(std::sync::Arc<str>, ArgsId), usize>,
}

impl CallRule for SameEdit {
    const ARGS: bool = true;
    fn step(
        &mut self,
        step: StepRef<'_>,
        s: &Session,
        raw: Option<&CallArgs>,
        out: &mut Vec<Detection>,
    ) {
        let StepRef::Answer(call) = step else { return };
        if call.error || !self.changes.changes(&call.tool, call.args(s)) {
            return;
        }
        let (id, text) = args_id(raw, s, call.at);
        let n = self.made.entry((call.tool.clone(), id)).or_insert(0);
        *n += 1;
        if let Some(stage) = self.stages.at(*n) {
            let args: String = text.chars().take(100).collect();
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
}
