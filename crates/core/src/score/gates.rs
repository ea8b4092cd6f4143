//! CI gates: `--require 'recall>=0.9'` on any score name, evaluated on the
//! chosen configuration. Unmet gates say which and by how much.

use crate::error::{Error, Result};
use crate::score::metrics::{score_info, Scores, SCORE_NAMES};
use crate::util::number::fixed;

/// One gate: `score op number`.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    /// Score name.
    pub score: String,
    /// Comparison: `>=`, `<=`, `>`, `<`, `==`, `!=`.
    pub op: &'static str,
    /// Threshold.
    pub value: f64,
}

/// A `--require` that is not a gate; each message starts with the gate as given.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GateError {
    /// No score of that name.
    #[error(
        "--require `{gate}`: unknown score `{name}`{hint} (known: {}; against an earlier run: {})",
        SCORE_NAMES.join(", "),
        crate::score::diff::DIFF_SCORES.join(", ")
    )]
    UnknownScore {
        /// The gate as given.
        gate: String,
        /// The score it names.
        name: String,
        /// ` (did you mean ...?)`, or empty.
        hint: String,
    },
    /// The threshold is not a number.
    #[error("--require `{gate}`: `{value}` is not a number")]
    NotANumber {
        /// The gate as given.
        gate: String,
        /// The threshold as given.
        value: String,
        /// Why it does not parse.
        #[source]
        source: std::num::ParseFloatError,
    },
    /// No comparison operator.
    #[error(
        "--require `{0}`: expected SCORE OP NUMBER, e.g. 'recall>=0.9' (OP: >=, <=, >, <, ==, !=)"
    )]
    Syntax(String),
}

/// The result of one gate.
#[derive(Debug, Clone, PartialEq)]
pub struct GateResult {
    /// The gate as written.
    pub gate: String,
    /// The score's value (`None` when undefined, e.g. no detection to take a median of).
    pub actual: Option<f64>,
    /// Met or not.
    pub passed: bool,
}

impl Gate {
    /// Parse `name>=0.9` (`--require`'s value parser).
    pub fn parse(s: &str) -> std::result::Result<Gate, GateError> {
        let s = s.trim();
        for op in [">=", "<=", "==", "!=", ">", "<"] {
            if let Some(i) = s.find(op) {
                let (name, value) = (s[..i].trim(), s[i + op.len()..].trim());
                if score_info(name).is_none() && !crate::score::diff::DIFF_SCORES.contains(&name) {
                    return Err(GateError::UnknownScore {
                        gate: s.to_string(),
                        name: name.to_string(),
                        hint: crate::util::suggest::hint(
                            name,
                            SCORE_NAMES
                                .iter()
                                .chain(crate::score::diff::DIFF_SCORES)
                                .copied(),
                        ),
                    });
                }
                let value: f64 = value.parse().map_err(|source| GateError::NotANumber {
                    gate: s.to_string(),
                    value: value.to_string(),
                    source,
                })?;
                return Ok(Gate {
                    score: name.to_string(),
                    op,
                    value,
                });
            }
        }
        Err(GateError::Syntax(s.to_string()))
    }

    /// Refuse a gate on a label-based score when nothing is labelled: it would
    /// compare against a number that means nothing.
    pub fn needs_labels(&self, labelled_sessions: usize) -> Result<()> {
        if labelled_sessions == 0 && crate::score::metrics::needs_labels(&self.score) {
            return Err(Error::Usage(format!(
                "--require `{}{}{}`: `{}` needs labels, and no session is labelled (give --labels FILE)",
                self.score, self.op, self.value, self.score
            )));
        }
        Ok(())
    }

    /// A gate on a change against an earlier run (`new_false_positives`, ...).
    pub fn is_diff(&self) -> bool {
        crate::score::diff::DIFF_SCORES.contains(&self.score.as_str())
    }

    /// Evaluate on a configuration's scores.
    pub fn check(&self, s: &Scores) -> GateResult {
        self.check_value(s.get(&self.score))
    }

    /// Evaluate on a value (`None`: undefined, which never passes).
    pub fn check_value(&self, actual: Option<f64>) -> GateResult {
        let passed = actual.is_some_and(|a| match self.op {
            ">=" => a >= self.value,
            "<=" => a <= self.value,
            ">" => a > self.value,
            "<" => a < self.value,
            "==" => (a - self.value).abs() < 1e-12,
            _ => (a - self.value).abs() >= 1e-12,
        });
        GateResult {
            gate: format!("{}{}{}", self.score, self.op, fixed(self.value)),
            actual,
            passed,
        }
    }
}

impl GateResult {
    /// `recall>=0.9: 0.75, short by 0.15`.
    pub fn describe(&self) -> String {
        match (self.actual, self.passed) {
            (Some(a), true) => format!("{}: {} (met)", self.gate, fixed(a)),
            (None, _) => format!("{}: undefined (no value to compare)", self.gate),
            (Some(a), false) => {
                let want: f64 = self
                    .gate
                    .trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_')
                    .trim_start_matches(['>', '<', '=', '!'])
                    .parse()
                    .unwrap_or(a);
                format!(
                    "{}: {} (off by {})",
                    self.gate,
                    fixed(a),
                    fixed((a - want).abs())
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_check() {
        let s = Scores {
            recall: 0.75,
            false_positives: 1,
            ..Default::default()
        };
        let g = Gate::parse("recall>=0.9").unwrap();
        let r = g.check(&s);
        assert!(!r.passed);
        assert_eq!(r.describe(), "recall>=0.9: 0.75 (off by 0.15)");
        assert!(Gate::parse("false_positives<=1").unwrap().check(&s).passed);
        assert!(!Gate::parse("ttd_median<=3").unwrap().check(&s).passed);
        assert!(Gate::parse("bogus>1").is_err());
        assert!(Gate::parse("recall>x").is_err());
        assert!(Gate::parse("recall").is_err());
    }

    #[test]
    fn label_based_gates_need_labels_and_the_others_do_not() {
        assert!(Gate::parse("recall>=0.5").unwrap().needs_labels(0).is_err());
        assert!(Gate::parse("fp_rate_hi<=0.1")
            .unwrap()
            .needs_labels(0)
            .is_err());
        assert!(Gate::parse("recall>=0.5").unwrap().needs_labels(3).is_ok());
        assert!(Gate::parse("detections<=4")
            .unwrap()
            .needs_labels(0)
            .is_ok());
        assert!(Gate::parse("stops<=4").unwrap().needs_labels(0).is_ok());
    }
}
