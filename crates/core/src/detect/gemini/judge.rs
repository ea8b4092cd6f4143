//! The LLM judge check, replayed from recorded `judge` verdicts.
//!
//! Replay cannot call a model: the verdict of a check due at turn T is the
//! first `judge` record of turn T (the second, if any, answers the second
//! stage of two-stage builds; otherwise the first serves both). A due check
//! with no record is what the original does on a failed call: no loop, and
//! the interval is unchanged. No verdict is ever invented.

use super::prep::{GeminiPrep, Op};
use crate::detect::Detection;

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

/// Run the judge schedule: detections, and every due check as `(event, had a verdict)`.
pub fn run(
    s: &JudgeSettings,
    p: &GeminiPrep,
    limit: Option<usize>,
) -> (Vec<Detection>, Vec<(u32, bool)>) {
    let mut out = Vec::new();
    let mut due = Vec::new();
    let mut turns = 0i64;
    let mut interval = s.interval;
    let mut last_check = 0i64;
    for st in &p.steps {
        match st.op {
            Op::NewPrompt => {
                turns = 0;
                interval = s.interval;
                last_check = 0;
            }
            Op::TurnStart => {
                turns += 1;
                if turns >= s.after_turns && turns - last_check >= interval {
                    last_check = turns;
                    let verdict = p.verdicts.get(&st.turn);
                    due.push((st.event, verdict.is_some()));
                    let Some((c1, c2, analysis)) = verdict else {
                        continue;
                    };
                    let decided = if !s.two_stage {
                        if reaches(s, *c1) {
                            true
                        } else {
                            interval = next_interval(s, *c1);
                            false
                        }
                    } else if !reaches(s, *c1) {
                        interval = next_interval(s, *c1);
                        false
                    } else {
                        let c2 = c2.unwrap_or(*c1);
                        if reaches(s, c2) {
                            true
                        } else {
                            interval = next_interval(s, c2);
                            false
                        }
                    };
                    if decided {
                        out.push(Detection {
                            kind: "llm",
                            event: st.event,
                            turn: st.turn,
                            prompt: st.prompt,
                            strike: 0,
                            detail: analysis.clone().unwrap_or_else(|| {
                                format!(
                                    "judge confidence {}",
                                    crate::util::js::number_to_string(*c1)
                                )
                            }),
                        });
                        if limit.is_some_and(|l| {
                            out.iter()
                                .rev()
                                .take_while(|d| d.prompt == st.prompt)
                                .count()
                                >= l
                        }) {
                            break;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    (out, due)
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
