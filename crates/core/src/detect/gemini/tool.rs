//! The tool-call check: consecutive identical calls (2025-07 .. 2026-07),
//! cycles of 1..k calls (HEAD), and the DeepV fork's per-name counting for
//! preview models.

use super::prep::{GeminiPrep, Op};
use crate::detect::Detection;

/// The DeepV fork's preview-model rule versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreviewRule {
    /// No preview rule (upstream Gemini CLI).
    Off,
    /// `5873417` .. `041036b`: every call counts per name; threshold by intensive/other.
    NameCount,
    /// `cc9ce07`: only monitored names count (per name), one threshold.
    MonitoredCount,
    /// `958164d` .. HEAD: consecutive count over monitored names; others clear it.
    Consecutive,
}

/// Settings of the tool check.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSettings {
    /// Repetitions needed (`TOOL_CALL_LOOP_THRESHOLD`).
    pub threshold: usize,
    /// Longest cycle looked for; 1 = consecutive identical calls.
    pub max_len: usize,
    /// Trim the name, `generic_tool` when empty (turn.ts since 2026-05-08).
    pub trim: bool,
    /// DeepV preview rule.
    pub preview: PreviewRule,
    /// Apply the preview rule whatever the model.
    pub preview_strict: bool,
    /// Threshold for intensive tools (NameCount).
    pub intensive_threshold: u32,
    /// Threshold for other tools (NameCount).
    pub name_threshold: u32,
    /// Intensive tool names.
    pub intensive: Vec<String>,
    /// Monitored tool names (MonitoredCount, Consecutive).
    pub monitored: Vec<String>,
    /// Threshold for monitored names.
    pub monitored_threshold: u32,
}

/// Whether the model name matches `/preview/i`.
pub fn is_preview_model(model: Option<&str>) -> bool {
    // The fork's default model `auto` is not a preview model.
    model.unwrap_or("auto").to_lowercase().contains("preview")
}

/// Run the tool check over a session.
pub fn run(s: &ToolSettings, p: &GeminiPrep, limit: Option<usize>) -> Vec<Detection> {
    let mut out = Vec::new();
    let preview_on =
        s.preview != PreviewRule::Off && (s.preview_strict || is_preview_model(p.model.as_deref()));
    // Name ids -> (intensive, monitored), resolved once.
    let class: Vec<(bool, bool)> = p
        .names
        .iter()
        .map(|n| (s.intensive.contains(n), s.monitored.contains(n)))
        .collect();
    let mut last_key: Option<u32> = None;
    let mut count = 0usize;
    let cap = s.threshold * s.max_len;
    let mut history: std::collections::VecDeque<u32> =
        std::collections::VecDeque::with_capacity(cap + 1);
    let mut per_name: Vec<u32> = vec![0; p.names.len()];
    let mut run_name: Option<u32> = None;
    let mut run_count = 0u32;
    for st in &p.steps {
        match st.op {
            Op::NewPrompt => {
                last_key = None;
                count = 0;
                history.clear();
                per_name.iter_mut().for_each(|c| *c = 0);
                run_name = None;
                run_count = 0;
            }
            Op::Tool {
                key,
                key_trimmed,
                name,
                call,
            } => {
                let key = if s.trim { key_trimmed } else { key };
                let fired = if s.max_len <= 1 {
                    if last_key == Some(key) {
                        count += 1;
                    } else {
                        last_key = Some(key);
                        count = 1;
                    }
                    count >= s.threshold
                } else {
                    history.push_back(key);
                    if history.len() > cap {
                        history.pop_front();
                    }
                    cycle_repeats(&history, s.threshold, s.max_len)
                };
                let (name_str, json) = &p.calls[call as usize];
                if fired {
                    let shown = if s.trim {
                        trimmed_name(name_str)
                    } else {
                        name_str.as_str()
                    };
                    out.push(Detection {
                        kind: "tool_call",
                        event: st.event,
                        turn: st.turn,
                        prompt: st.prompt,
                        strike: 0,
                        detail: format!("Repeated tool call: {shown} with arguments {json}"),
                    });
                } else if preview_on {
                    let (intensive, monitored) = class[name as usize];
                    let hit = match s.preview {
                        PreviewRule::Off => None,
                        PreviewRule::NameCount => {
                            per_name[name as usize] += 1;
                            let t = if intensive {
                                s.intensive_threshold
                            } else {
                                s.name_threshold
                            };
                            (per_name[name as usize] >= t).then_some((per_name[name as usize], t))
                        }
                        PreviewRule::MonitoredCount => {
                            if monitored {
                                per_name[name as usize] += 1;
                                let n = per_name[name as usize];
                                (n >= s.monitored_threshold).then_some((n, s.monitored_threshold))
                            } else {
                                None
                            }
                        }
                        PreviewRule::Consecutive => {
                            if monitored {
                                if run_name == Some(name) {
                                    run_count += 1;
                                } else {
                                    run_name = Some(name);
                                    run_count = 1;
                                }
                                (run_count >= s.monitored_threshold)
                                    .then_some((run_count, s.monitored_threshold))
                            } else {
                                run_name = None;
                                run_count = 0;
                                None
                            }
                        }
                    };
                    if let Some((n, t)) = hit {
                        out.push(Detection {
                            kind: "tool_name",
                            event: st.event,
                            turn: st.turn,
                            prompt: st.prompt,
                            strike: 0,
                            detail: format!("Tool {name_str} called {n} times (threshold {t})"),
                        });
                    }
                }
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
            _ => {}
        }
    }
    out
}

fn trimmed_name(name: &str) -> &str {
    let t = name.trim_matches(|c: char| {
        c.len_utf16() == 1 && crate::util::js::is_js_space(c as u32 as u16)
    });
    if t.is_empty() {
        "generic_tool"
    } else {
        t
    }
}

/// HEAD's rule: for k = 1..=max_len, the last k x R keys are R repetitions of the last k.
fn cycle_repeats(h: &std::collections::VecDeque<u32>, r: usize, max_len: usize) -> bool {
    let n = h.len();
    (1..=max_len).any(|k| {
        let need = k * r;
        n >= need && (0..need).all(|i| h[n - need + i] == h[n - k + i % k])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    #[test]
    fn cycles() {
        let h: VecDeque<u32> = [1, 2, 1, 2, 1, 2, 1, 2, 1, 2].into_iter().collect();
        assert!(cycle_repeats(&h, 5, 5));
        assert!(!cycle_repeats(&h, 5, 1));
        let h: VecDeque<u32> = [1, 2, 3, 1, 2, 3, 1, 2, 3].into_iter().collect();
        assert!(!cycle_repeats(&h, 5, 5));
    }

    #[test]
    fn preview_model_match_is_case_insensitive_substring() {
        assert!(is_preview_model(Some("gemini-3-PRO-Preview")));
        assert!(!is_preview_model(Some("gemini-2.5-pro")));
        assert!(!is_preview_model(None));
    }
}
