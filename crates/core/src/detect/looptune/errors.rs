//! An error streak: one tool's results are errors with the same leading
//! text `E` times in a row (Goose's REP-002 counts the same way; it denies
//! the tool's next call, this rule fires at the result itself). A result
//! that is no error ends the streak, as does a new prompt.

use super::actions::{outcomes, Outcome, OutcomeFeed};
use super::{staged, Stages};
use crate::detect::{Check, Detection, Prepared, Stream};
use crate::event::{Record, Session};

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
        let mut rule = self.rule();
        let mut out = Vec::new();
        for o in outcomes(session).iter() {
            rule.outcome(o.as_ref(), s, &mut out);
        }
        out
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(Box::new(ErrorStream {
            feed: OutcomeFeed::default(),
            rule: self.rule(),
            buf: Vec::new(),
        }))
    }
}

impl ErrorCheck {
    fn rule(&self) -> Streak {
        Streak {
            chars: self.s.chars,
            stages: self.s.stages,
            last: None,
            count: 0,
        }
    }
}

/// The rule's state: the last error (tool and text head) and its run.
struct Streak {
    chars: usize,
    stages: Stages,
    last: Option<(std::sync::Arc<str>, String)>,
    count: usize,
}

impl Streak {
    /// Read a tool result (`None`: a new prompt).
    fn outcome(&mut self, o: Option<&Outcome>, s: &Session, out: &mut Vec<Detection>) {
        let Some(o) = o else {
            (self.last, self.count) = (None, 0);
            return;
        };
        if !o.error {
            (self.last, self.count) = (None, 0);
            return;
        }
        let Record::ToolResult { output, .. } = &s.event(o.at).record else {
            return;
        };
        let head: String = output
            .as_deref()
            .unwrap_or("")
            .chars()
            .take(self.chars)
            .collect();
        if self
            .last
            .as_ref()
            .is_some_and(|(t, h)| *t == o.tool && *h == head)
        {
            self.count += 1;
        } else {
            self.count = 1;
            self.last = Some((o.tool.clone(), head));
        }
        if let Some(stage) = self.stages.at(self.count) {
            let text = self.last.as_ref().map(|l| l.1.as_str()).unwrap_or("");
            out.push(staged(
                s,
                o.at,
                stage,
                ("error_streak", "error_streak_warn"),
                o.prompt,
                format!(
                    "{} returned the same error {} times in a row: {}",
                    o.tool,
                    self.count,
                    text.chars().take(80).collect::<String>()
                ),
            ));
        }
    }
}

/// [`Streak`] fed one record at a time.
struct ErrorStream {
    feed: OutcomeFeed,
    rule: Streak,
    buf: Vec<Option<Outcome>>,
}

impl Stream for ErrorStream {
    fn keeps_from(&self) -> usize {
        usize::MAX // reads each record once, when fed
    }
    fn feed(&mut self, session: &Session, i: usize, out: &mut Vec<Detection>) {
        self.feed.record(session, i, &mut self.buf);
        for o in self.buf.drain(..) {
            self.rule.outcome(o.as_ref(), session, out);
        }
    }
}
