//! The LLM judge check, replayed from recorded `judge` verdicts.
//!
//! Replay cannot call a model: the verdict of a check due at turn T is the
//! first `judge` record of turn T (the second, if any, answers the second
//! stage of two-stage builds; otherwise the first serves both). A due check
//! with no record is what the original does on a failed call: no loop, and
//! the interval is unchanged. No verdict is ever invented.

use super::prep::Prompter;
use crate::detect::{Detection, Stream};
use crate::event::{Record, Session};

/// Settings of the judge schedule and decision.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeSettings {
    /// First check at this prompt turn (`LLM_CHECK_AFTER_TURNS`).
    pub after_turns: i64,
    /// Interval after a reset (`DEFAULT_LLM_CHECK_INTERVAL`).
    pub interval: i64,
    /// `MIN_LLM_CHECK_INTERVAL`.
    pub min_interval: i64,
    /// `MAX_LLM_CHECK_INTERVAL`.
    pub max_interval: i64,
    /// Confidence threshold.
    pub threshold: f64,
    /// `>` (2025 single-stage builds) instead of `>=`.
    pub strict: bool,
    /// Flash then Pro, both must reach the threshold (2025-11-12 ..).
    pub two_stage: bool,
}

fn reaches(s: &JudgeSettings, c: f64) -> bool {
    if s.strict {
        c > s.threshold
    } else {
        c >= s.threshold
    }
}

/// `Math.round(MIN + (MAX - MIN) * (1 - c))`, JS rounding (half up), no clamping.
fn next_interval(s: &JudgeSettings, c: f64) -> i64 {
    let x = s.min_interval as f64 + (s.max_interval - s.min_interval) as f64 * (1.0 - c);
    (x + 0.5).floor() as i64
}

/// Run the judge schedule over a session: detections, and every due check
/// as `(event, had a verdict)`. The stream over the whole session, so the
/// schedule is written once.
pub fn run(
    s: &JudgeSettings,
    session: &Session,
    limit: Option<usize>,
) -> (Vec<Detection>, Vec<(u32, bool)>) {
    let mut st = JudgeStream::new(s.clone());
    st.due = Some(Vec::new());
    let mut out = Vec::new();
    for i in 0..session.events.len() {
        st.feed(session, i, &mut out);
        if limit.is_some_and(|l| filled(&out, l)) {
            break;
        }
    }
    st.finish(session, &mut out);
    if let Some(l) = limit {
        cut(&mut out, l);
    }
    (out, st.due.unwrap_or_default())
}

/// The detections (in event order) hold `l` of one prompt.
fn filled(out: &[Detection], l: usize) -> bool {
    out.last().is_some_and(|last| {
        out.iter()
            .rev()
            .take_while(|d| d.prompt == last.prompt)
            .count()
            >= l
    })
}

/// Keep the detections up to the first that fills `l` in its prompt: the
/// check stops there.
fn cut(out: &mut Vec<Detection>, l: usize) {
    let mut n = 0;
    for j in 0..out.len() {
        n = if j > 0 && out[j - 1].prompt == out[j].prompt {
            n + 1
        } else {
            1
        };
        if n >= l {
            out.truncate(j + 1);
            return;
        }
    }
}

/// A due check waiting for its verdicts: the turn's `judge` records come
/// after the record that starts it.
#[derive(Debug)]
struct Pending {
    event: u32,
    turn: u32,
    prompt: u32,
    /// Index of its entry in the due list, when one is kept.
    due_at: usize,
    /// The first verdict and its analysis.
    c1: Option<(f64, Option<String>)>,
    /// The second (second stage of two-stage builds).
    c2: Option<f64>,
    /// A new prompt came since: its interval change is overridden.
    reset: bool,
}

/// The judge schedule fed one record at a time. The original decides at
/// the turn's start with the verdict recorded later in the turn, so a due
/// check waits here until it can be decided (its first verdict, or the
/// second one two-stage builds ask for) or its turn ends; the detection is
/// at the turn's start all the same. Holds one pending check.
pub(crate) struct JudgeStream {
    s: JudgeSettings,
    prompts: Prompter,
    turns: i64,
    interval: i64,
    last_check: i64,
    pending: Option<Pending>,
    /// Every due check as `(event, had a verdict)`, for [`run`].
    due: Option<Vec<(u32, bool)>>,
}

impl JudgeStream {
    pub(crate) fn new(s: JudgeSettings) -> JudgeStream {
        JudgeStream {
            interval: s.interval,
            s,
            prompts: Prompter::default(),
            turns: 0,
            last_check: 0,
            pending: None,
            due: None,
        }
    }

    /// Decide the pending check if its verdicts allow (all of them are in
    /// when `ended`, the turn being over).
    fn decide(&mut self, ended: bool, out: &mut Vec<Detection>) {
        let Some(p) = self.pending.take() else {
            return;
        };
        let Some((c1, analysis)) = &p.c1 else {
            // No verdict: a failed call, no loop, interval unchanged.
            if !ended {
                self.pending = Some(p);
            }
            return;
        };
        let s = &self.s;
        let (fired, next) = if !s.two_stage || !reaches(s, *c1) {
            (reaches(s, *c1), *c1)
        } else {
            match p.c2 {
                Some(c2) => (reaches(s, c2), c2),
                // Without a second verdict the first serves both.
                None if ended => (true, *c1),
                None => {
                    self.pending = Some(p);
                    return;
                }
            }
        };
        if fired {
            out.push(Detection {
                kind: "llm",
                event: p.event,
                turn: p.turn,
                prompt: p.prompt,
                strike: 0,
                detail: analysis.clone().unwrap_or_else(|| {
                    format!(
                        "judge confidence {}",
                        crate::util::js::number_to_string(*c1)
                    )
                }),
            });
        } else if !p.reset {
            self.interval = next_interval(s, next);
        }
    }
}

impl Stream for JudgeStream {
    fn keeps_from(&self) -> usize {
        usize::MAX // reads each record once, when fed
    }
    fn feed(&mut self, session: &Session, i: usize, out: &mut Vec<Detection>) {
        let e = session.event(i);
        if self.pending.as_ref().is_some_and(|p| p.turn != e.turn) {
            self.decide(true, out);
        }
        if self.prompts.observe(session, i) {
            self.turns = 0;
            self.interval = self.s.interval;
            self.last_check = 0;
            if let Some(p) = &mut self.pending {
                p.reset = true;
            }
        }
        if e.starts_turn {
            self.decide(true, out);
            self.turns += 1;
            if self.turns >= self.s.after_turns && self.turns - self.last_check >= self.interval {
                self.last_check = self.turns;
                let due_at = self.due.as_ref().map_or(0, Vec::len);
                if let Some(due) = &mut self.due {
                    due.push((i as u32 + 1, false));
                }
                self.pending = Some(Pending {
                    event: i as u32 + 1,
                    turn: e.turn,
                    prompt: self.prompts.count(),
                    due_at,
                    c1: None,
                    c2: None,
                    reset: false,
                });
            }
        }
        if let Record::Judge {
            confidence,
            analysis,
            ..
        } = &e.record
        {
            let Some(p) = self.pending.as_mut().filter(|p| p.turn == e.turn) else {
                return;
            };
            if p.c1.is_none() {
                p.c1 = Some((*confidence, analysis.clone()));
                if let Some(due) = &mut self.due {
                    due[p.due_at].1 = true;
                }
            } else if p.c2.is_none() {
                p.c2 = Some(*confidence);
            }
            self.decide(false, out);
        }
    }

    fn finish(&mut self, _session: &Session, out: &mut Vec<Detection>) {
        self.decide(true, out);
    }

    fn held_from(&self) -> Option<u32> {
        self.pending.as_ref().map(|p| p.event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(min: i64) -> JudgeSettings {
        JudgeSettings {
            after_turns: 30,
            interval: 10,
            min_interval: min,
            max_interval: 15,
            threshold: 0.9,
            strict: false,
            two_stage: true,
        }
    }

    #[test]
    fn interval_rounding_matches_math_round() {
        let s = settings(5);
        assert_eq!(next_interval(&s, 0.0), 15);
        assert_eq!(next_interval(&s, 0.5), 10);
        assert_eq!(next_interval(&s, 0.85), 7); // 6.5 rounds up
        assert_eq!(next_interval(&s, 0.89), 6);
        let s = settings(7);
        assert_eq!(next_interval(&s, 0.85), 8);
        assert_eq!(next_interval(&s, 0.89), 8);
        assert_eq!(next_interval(&s, 0.5), 11);
    }

    #[test]
    fn strict_vs_inclusive() {
        let mut s = settings(5);
        assert!(reaches(&s, 0.9));
        s.strict = true;
        assert!(!reaches(&s, 0.9));
    }
}
