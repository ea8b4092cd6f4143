//! The tool-call check: consecutive identical calls (2025-07 .. 2026-07),
//! cycles of 1..k calls (HEAD), and the DeepV fork's per-name counting for
//! preview models.

use super::prep::{key_names, tool_key, GeminiPrep, Op, Prompter};
use crate::detect::{Detection, Stream};
use crate::event::{Record, Session};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

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
    let preview_on = preview_on(s, p.model.as_deref());
    // Name ids -> (intensive, monitored), resolved once.
    let class: Vec<(bool, bool)> = p
        .names
        .iter()
        .map(|n| (s.intensive.contains(n), s.monitored.contains(n)))
        .collect();
    let mut rule = ToolRule::new(s, p.names.len());
    for st in &p.steps {
        match st.op {
            Op::NewPrompt => rule.new_prompt(),
            Op::Tool {
                key,
                key_trimmed,
                name,
                call,
            } => {
                let key = if s.trim { key_trimmed } else { key };
                let fired = rule.call(s, key, name, class[name as usize], preview_on);
                if let Some(fired) = fired {
                    let (name_str, json) = &p.calls[call as usize];
                    out.push(fired.detection(s, st.event, st.turn, st.prompt, name_str, json));
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

/// Whether the DeepV preview rule applies under `model`.
fn preview_on(s: &ToolSettings, model: Option<&str>) -> bool {
    s.preview != PreviewRule::Off && (s.preview_strict || is_preview_model(model))
}

/// What a call fired.
enum Fired {
    /// The repeated call or cycle.
    Repeat,
    /// The preview rule: count and threshold.
    Name(u32, u32),
}

impl Fired {
    fn detection(
        &self,
        s: &ToolSettings,
        event: u32,
        turn: u32,
        prompt: u32,
        name: &str,
        json: &str,
    ) -> Detection {
        let (kind, detail) = match *self {
            Fired::Repeat => {
                let shown = if s.trim { trimmed_name(name) } else { name };
                (
                    "tool_call",
                    format!("Repeated tool call: {shown} with arguments {json}"),
                )
            }
            Fired::Name(n, t) => (
                "tool_name",
                format!("Tool {name} called {n} times (threshold {t})"),
            ),
        };
        Detection {
            kind,
            event,
            turn,
            prompt,
            strike: 0,
            detail,
        }
    }
}

/// The tool rule's state within a prompt, over interned call keys and name
/// ids: one implementation for a whole session ([`run`]) and a live feed
/// ([`ToolStream`]). Bounded by the history (threshold x cycle length),
/// plus a count per tool name when a preview rule counts names.
struct ToolRule {
    last_key: Option<u32>,
    count: usize,
    cap: usize,
    history: VecDeque<u32>,
    per_name: Vec<u32>,
    run_name: Option<u32>,
    run_count: u32,
}

impl ToolRule {
    fn new(s: &ToolSettings, names: usize) -> ToolRule {
        let cap = s.threshold * s.max_len;
        ToolRule {
            last_key: None,
            count: 0,
            cap,
            history: VecDeque::with_capacity(cap + 1),
            per_name: vec![0; names],
            run_name: None,
            run_count: 0,
        }
    }

    /// `reset(promptId)`.
    fn new_prompt(&mut self) {
        self.last_key = None;
        self.count = 0;
        self.history.clear();
        self.per_name.iter_mut().for_each(|c| *c = 0);
        self.run_name = None;
        self.run_count = 0;
    }

    /// A call of key `key` and name `name` (its class: intensive,
    /// monitored): what fires there.
    fn call(
        &mut self,
        s: &ToolSettings,
        key: u32,
        name: u32,
        (intensive, monitored): (bool, bool),
        preview_on: bool,
    ) -> Option<Fired> {
        let fired = if s.max_len <= 1 {
            if self.last_key == Some(key) {
                self.count += 1;
            } else {
                self.last_key = Some(key);
                self.count = 1;
            }
            self.count >= s.threshold
        } else {
            self.history.push_back(key);
            if self.history.len() > self.cap {
                self.history.pop_front();
            }
            cycle_repeats(&self.history, s.threshold, s.max_len)
        };
        if fired {
            return Some(Fired::Repeat);
        }
        if !preview_on {
            return None;
        }
        let n = name as usize;
        if self.per_name.len() <= n {
            self.per_name.resize(n + 1, 0);
        }
        let hit = match s.preview {
            PreviewRule::Off => None,
            PreviewRule::NameCount => {
                self.per_name[n] += 1;
                let t = if intensive {
                    s.intensive_threshold
                } else {
                    s.name_threshold
                };
                (self.per_name[n] >= t).then_some((self.per_name[n], t))
            }
            PreviewRule::MonitoredCount => {
                if monitored {
                    self.per_name[n] += 1;
                    let c = self.per_name[n];
                    (c >= s.monitored_threshold).then_some((c, s.monitored_threshold))
                } else {
                    None
                }
            }
            PreviewRule::Consecutive => {
                if monitored {
                    if self.run_name == Some(name) {
                        self.run_count += 1;
                    } else {
                        self.run_name = Some(name);
                        self.run_count = 1;
                    }
                    (self.run_count >= s.monitored_threshold)
                        .then_some((self.run_count, s.monitored_threshold))
                } else {
                    self.run_name = None;
                    self.run_count = 0;
                    None
                }
            }
        };
        hit.map(|(c, t)| Fired::Name(c, t))
    }

    /// Whether key `k` is still compared with later calls.
    fn holds(&self, k: u32) -> bool {
        self.last_key == Some(k) || self.history.contains(&k)
    }
}

/// The tool check fed one record at a time: [`ToolRule`] over keys and
/// names interned here (the keys no longer held are dropped, so memory
/// stays bounded by the history), the preview rule under the model known
/// so far (a model named later rebuilds the stream: see `watch::Detector`).
pub(crate) struct ToolStream {
    s: ToolSettings,
    rule: ToolRule,
    prompts: Prompter,
    keys: FxHashMap<String, u32>,
    next_key: u32,
    names: FxHashMap<String, (u32, (bool, bool))>,
}

impl ToolStream {
    pub(crate) fn new(s: ToolSettings) -> ToolStream {
        ToolStream {
            rule: ToolRule::new(&s, 0),
            s,
            prompts: Prompter::default(),
            keys: FxHashMap::default(),
            next_key: 0,
            names: FxHashMap::default(),
        }
    }
}

impl Stream for ToolStream {
    fn feed(&mut self, session: &Session, i: usize, out: &mut Vec<Detection>) {
        if self.prompts.observe(session, i) {
            self.rule.new_prompt();
        }
        let e = session.event(i);
        let Record::ToolCall { name, args, .. } = &e.record else {
            return;
        };
        let json = crate::util::js::stringify_object(args);
        let (untrimmed, trimmed) = key_names(name);
        let shown = if self.s.trim { trimmed } else { untrimmed };
        let key = match self.keys.get(&tool_key(shown, &json)) {
            Some(&k) => k,
            None => {
                // Drop what no later call can match, once the map has
                // doubled past what the rule holds (amortised O(1)).
                if self.keys.len() > 2 * self.rule.cap + 64 {
                    let rule = &self.rule;
                    self.keys.retain(|_, k| rule.holds(*k));
                }
                let k = self.next_key;
                self.next_key = self.next_key.wrapping_add(1);
                self.keys.insert(tool_key(shown, &json), k);
                k
            }
        };
        let n = self.names.len() as u32;
        let s = &self.s;
        let &mut (name_id, class) = self
            .names
            .entry(name.clone())
            .or_insert_with(|| (n, (s.intensive.contains(name), s.monitored.contains(name))));
        let on = preview_on(s, session.meta.model.as_deref());
        if let Some(fired) = self.rule.call(s, key, name_id, class, on) {
            out.push(fired.detection(s, i as u32 + 1, e.turn, self.prompts.count(), name, &json));
        }
    }
    fn keeps_from(&self) -> usize {
        usize::MAX // reads each record once, when fed
    }
    fn reads_meta(&self) -> bool {
        // The preview rule reads the model unless it is off or strict.
        self.s.preview != PreviewRule::Off && !self.s.preview_strict
    }
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
fn cycle_repeats(h: &VecDeque<u32>, r: usize, max_len: usize) -> bool {
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
