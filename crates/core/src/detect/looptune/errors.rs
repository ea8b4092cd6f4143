//! An error streak: one tool's results are errors with the same leading
//! text `E` times in a row (Goose's REP-002 counts the same way; it denies
//! the tool's next call, this rule fires at the result itself). A result
//! that is no error ends the streak, as does a new prompt.

use super::actions::outcomes;
use super::{staged, Stages};
use crate::detect::{Check, Detection, Prepared};
use crate::event::Record;

/// What the rule reads.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorSettings {
    /// Leading characters of the error text compared.
    pub chars: usize,
    /// Errors in a row that warn and stop.
    pub stages: Stages,
}

/// The rule as a check.
pub struct ErrorCheck {
    /// Its settings.
    pub s: ErrorSettings,
}

impl Check for ErrorCheck {
    fn name(&self) -> &'static str {
        "looptune.error"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }
    fn limit_per_prompt(&self) -> bool {
        true
    }
    fn run(&self, session: &Prepared, _limit: Option<usize>) -> Vec<Detection> {
        let s = &session.session;
        let mut out = Vec::new();
        let mut last: Option<(&str, String)> = None;
        let mut count = 0usize;
        for o in outcomes(session).iter() {
            let Some(o) = o else {
                (last, count) = (None, 0);
                continue;
            };
            if !o.error {
                (last, count) = (None, 0);
                continue;
            }
            let Record::ToolResult { output, .. } = &s.events[o.at].record else {
                continue;
            };
            let head: String = output
                .as_deref()
                .unwrap_or("")
                .chars()
                .take(self.s.chars)
                .collect();
            if last
                .as_ref()
                .is_some_and(|(t, h)| *t == o.tool.as_str() && *h == head)
            {
                count += 1;
            } else {
                count = 1;
                last = Some((o.tool.as_str(), head));
            }
            if let Some(stage) = self.s.stages.at(count) {
                let text = last.as_ref().map(|l| l.1.as_str()).unwrap_or("");
                out.push(staged(
                    s,
                    o.at,
                    stage,
                    ("error_streak", "error_streak_warn"),
                    o.prompt,
                    format!(
                        "{} returned the same error {count} times in a row: {}",
                        o.tool,
                        text.chars().take(80).collect::<String>()
                    ),
                ));
            }
        }
        out
    }
}
