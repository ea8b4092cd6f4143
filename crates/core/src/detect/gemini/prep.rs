//! What every Gemini-family configuration reads from a session, computed once:
//! the stream of detector inputs (new prompt, turn start, tool call, content
//! chunk) with tool keys interned and content in UTF-16 with its pre-filter flags.

use super::markdown::ChunkFlags;
use crate::event::{Record, Session};
use rustc_hash::FxHashMap;
use std::collections::HashMap;

/// One input to the detector, in session order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    /// A `user` record that starts a new prompt: `reset(promptId)`.
    NewPrompt,
    /// A turn starts at this record: `turnStarted()`.
    TurnStart,
    /// A tool call: `ToolCallRequest`.
    Tool {
        /// Interned `name + ":" + JSON.stringify(args)`.
        key: u32,
        /// The same with the name trimmed (`generic_tool` when empty), as turn.ts does since 2026-05-08.
        key_trimmed: u32,
        /// Interned raw name (the DeepV fork counts names).
        name: u32,
        /// Index into [`GeminiPrep::calls`].
        call: u32,
    },
    /// A content chunk: index into [`GeminiPrep::chunks`].
    Content(u32),
}

/// A detector input with its position.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    /// The input.
    pub op: Op,
    /// 1-based event index.
    pub event: u32,
    /// Turn of the record.
    pub turn: u32,
    /// Prompt ordinal (0 before the first prompt).
    pub prompt: u32,
}

/// A content chunk in UTF-16 with its flags.
#[derive(Debug)]
pub struct Chunk {
    /// Range into [`GeminiPrep::units`].
    pub start: usize,
    /// Length in UTF-16 units.
    pub len: usize,
    /// Pre-filter flags.
    pub flags: ChunkFlags,
    /// Holds a surrogate or U+FFFD: windows that differ in such units can be
    /// equal as the original hashes them (UTF-8, lone surrogates as U+FFFD).
    pub lossy: bool,
}

/// Per-session Gemini data shared by all configurations.
#[derive(Debug)]
pub struct GeminiPrep {
    /// Detector inputs in order.
    pub steps: Vec<Step>,
    /// All content, concatenated, in UTF-16 units.
    pub units: Vec<u16>,
    /// Content chunks.
    pub chunks: Vec<Chunk>,
    /// Tool calls: (name, JSON.stringify(args)) for detail strings.
    pub calls: Vec<(String, String)>,
    /// Interned names, by id.
    pub names: Vec<String>,
    /// Recorded judge confidences per turn (first and second `judge` record of the turn).
    pub verdicts: HashMap<u32, (f64, Option<f64>, Option<String>)>,
    /// The session's model (last `session` record that names one).
    pub model: Option<String>,
}

/// Gemini CLI's prompts, kept between records: it resets only when the
/// prompt id changes; a user message without an id is always a new prompt.
/// The id in force is kept (not the index of its `user` record), so a live
/// feed need not keep that record.
#[derive(Debug, Default, Clone)]
pub(crate) struct Prompter {
    count: u32,
    /// The last `user` record's prompt id (`Some(None)`: it had none).
    id: Option<Option<Box<str>>>,
}

impl Prompter {
    /// Read record `i` of `s`: true when it starts a new prompt.
    pub(crate) fn observe(&mut self, s: &Session, i: usize) -> bool {
        let Record::User { prompt_id: pid, .. } = &s.event(i).record else {
            return false;
        };
        let same = pid.is_some()
            && self
                .id
                .as_ref()
                .is_some_and(|id| id.as_deref() == pid.as_deref());
        if !same {
            self.count += 1;
            self.id = Some(pid.as_deref().map(Box::from));
        }
        !same
    }

    /// Prompts begun so far (0 before the first).
    pub(crate) fn count(&self) -> u32 {
        self.count
    }
}

/// Append `text` to `units` in UTF-16 and return the chunk's pre-filter
/// flags and whether it is lossy (see [`Chunk::lossy`]).
pub(crate) fn widen(text: &str, units: &mut Vec<u16>) -> (ChunkFlags, bool) {
    let start = units.len();
    let ascii = text.is_ascii();
    if ascii {
        // Widen in place (vectorised); push_utf16 would test is_ascii again.
        units.resize(start + text.len(), 0);
        for (d, &b) in units[start..].iter_mut().zip(text.as_bytes()) {
            *d = u16::from(b);
        }
    } else {
        crate::util::js::push_utf16(units, text);
    }
    let units = &units[start..];
    let flags = if ascii {
        ChunkFlags::of_ascii(units, text.as_bytes())
    } else {
        ChunkFlags::of(units)
    };
    let lossy = !ascii
        && units
            .iter()
            .any(|&u| (0xd800..0xe000).contains(&u) || u == 0xfffd);
    (flags, lossy)
}

/// A call's name as keyed before 2026-05-08 (`name || 'undefined_tool_name'`)
/// and since (trimmed, `generic_tool` when empty), as turn.ts made them.
pub(crate) fn key_names(name: &str) -> (&str, &str) {
    let trimmed = name.trim_matches(|c: char| {
        c.len_utf16() == 1 && crate::util::js::is_js_space(c as u32 as u16)
    });
    let trimmed = if trimmed.is_empty() {
        "generic_tool"
    } else {
        trimmed
    };
    let untrimmed = if name.is_empty() {
        "undefined_tool_name"
    } else {
        name
    };
    (untrimmed, trimmed)
}

/// `name + ":" + json`, in one allocation (`format!` costs more per call).
pub(crate) fn tool_key(name: &str, json: &str) -> String {
    let mut k = String::with_capacity(name.len() + 1 + json.len());
    k.push_str(name);
    k.push(':');
    k.push_str(json);
    k
}

impl GeminiPrep {
    /// Build from a session.
    pub fn new(s: &Session) -> GeminiPrep {
        let mut keys: FxHashMap<String, u32> = FxHashMap::default();
        let mut names: FxHashMap<&str, u32> = FxHashMap::default();
        let mut name_list = Vec::new();
        let intern = |map: &mut FxHashMap<String, u32>, k: String| -> u32 {
            let n = map.len() as u32;
            *map.entry(k).or_insert(n)
        };
        // One allocation for all content, and for the steps.
        let content_bytes: usize = s
            .events
            .iter()
            .map(|e| match &e.record {
                Record::Content { text } => text.len(),
                _ => 0,
            })
            .sum();
        let mut p = GeminiPrep {
            steps: Vec::with_capacity(s.events.len() + 8),
            units: Vec::with_capacity(content_bytes),
            chunks: Vec::new(),
            calls: Vec::new(),
            names: Vec::new(),
            verdicts: HashMap::new(),
            model: s.meta.model.clone(),
        };
        let mut prompts = Prompter::default();
        for (i, e) in s.events.iter().enumerate() {
            let event = i as u32 + 1;
            let push = |steps: &mut Vec<Step>, op: Op, prompt: u32| {
                steps.push(Step {
                    op,
                    event,
                    turn: e.turn,
                    prompt,
                })
            };
            let new_prompt = prompts.observe(s, i);
            let prompt = prompts.count();
            if new_prompt {
                push(&mut p.steps, Op::NewPrompt, prompt);
            }
            if e.starts_turn {
                push(&mut p.steps, Op::TurnStart, prompt);
            }
            match &e.record {
                Record::ToolCall { name, args, .. } => {
                    let json = crate::util::js::stringify_object(args);
                    let (untrimmed, trimmed) = key_names(name);
                    let key = intern(&mut keys, tool_key(untrimmed, &json));
                    let key_trimmed = if trimmed == untrimmed {
                        key
                    } else {
                        intern(&mut keys, tool_key(trimmed, &json))
                    };
                    let next = names.len() as u32;
                    let name_id = *names.entry(name.as_str()).or_insert_with(|| {
                        name_list.push(name.clone());
                        next
                    });
                    let call = p.calls.len() as u32;
                    p.calls.push((name.clone(), json));
                    push(
                        &mut p.steps,
                        Op::Tool {
                            key,
                            key_trimmed,
                            name: name_id,
                            call,
                        },
                        prompt,
                    );
                }
                Record::Content { text } => {
                    let start = p.units.len();
                    let (flags, lossy) = widen(text, &mut p.units);
                    let idx = p.chunks.len() as u32;
                    p.chunks.push(Chunk {
                        start,
                        len: p.units.len() - start,
                        flags,
                        lossy,
                    });
                    push(&mut p.steps, Op::Content(idx), prompt);
                }
                Record::Judge {
                    confidence,
                    analysis,
                    ..
                } => {
                    p.verdicts
                        .entry(e.turn)
                        .and_modify(|v| {
                            if v.1.is_none() {
                                v.1 = Some(*confidence)
                            }
                        })
                        .or_insert((*confidence, None, analysis.clone()));
                }
                _ => {}
            }
        }
        p.names = name_list;
        p
    }

    /// The UTF-16 units of a chunk.
    pub fn chunk(&self, i: u32) -> &[u16] {
        let c = &self.chunks[i as usize];
        &self.units[c.start..c.start + c.len]
    }
}
