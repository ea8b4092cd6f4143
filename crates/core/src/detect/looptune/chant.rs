//! Chanting: Gemini CLI's content check, run by its port
//! (`detect::gemini::content`, with the original's quirks: UTF-16 windows,
//! resets at tool calls, code fences, markdown and dividers) with
//! gemini-latest's settings but for the window size and the threshold. The
//! warn stage is a second run at the lower threshold, of which the first
//! detection of each prompt is kept. A sweep's stop-stage runs with one
//! window size share one pass over the session (`content::run_many`), and so
//! do its warn-stage runs.

use crate::detect::gemini::content::{self, Algorithm, ContentSettings, ContentStream, Fences};
use crate::detect::gemini::prep;
use crate::detect::{Check, Detection, Prepared, Stream};
use crate::event::Session;

/// What the rule reads.
#[derive(Debug, Clone, PartialEq)]
pub struct ChantSettings {
    /// The content check's settings.
    pub content: ContentSettings,
    /// This is the warn stage.
    pub warn: bool,
}

/// One stage of the rule as a check.
pub struct ChantCheck {
    s: ChantSettings,
}

impl ChantCheck {
    /// The stage with window `chunk` and `threshold` occurrences.
    pub fn new(chunk: usize, threshold: usize, warn: bool) -> ChantCheck {
        ChantCheck {
            s: ChantSettings {
                content: ContentSettings {
                    algorithm: Algorithm::Hash,
                    chunk,
                    threshold,
                    max_history: 5000,
                    distance_factor: 5.0,
                    period_check: true,
                    fences: Fences::SkipInsideOrOpening,
                    markdown_resets: true,
                    dividers: true,
                    table_factor: 6.0,
                    common_factor: 3.0,
                },
                warn,
            },
        }
    }

    fn relabel(&self, dets: Vec<Detection>) -> Vec<Detection> {
        let mut r = Relabel::new(self.s.warn);
        dets.into_iter().filter_map(|d| r.apply(d)).collect()
    }
}

/// The content check's detections as this stage's: the stop stage's all,
/// the warn stage's first of each prompt.
struct Relabel {
    warn: bool,
    warned: Option<u32>,
}

impl Relabel {
    fn new(warn: bool) -> Relabel {
        Relabel { warn, warned: None }
    }

    fn apply(&mut self, mut d: Detection) -> Option<Detection> {
        if self.warn {
            if self.warned == Some(d.prompt) {
                return None;
            }
            self.warned = Some(d.prompt);
            d.kind = "chant_warn";
            d.detail.push_str(" (warning)");
        } else {
            d.kind = "chant";
        }
        Some(d)
    }
}

/// The content check's stream, relabelled.
struct ChantStream {
    content: ContentStream,
    relabel: Relabel,
    buf: Vec<Detection>,
}

impl Stream for ChantStream {
    fn feed(&mut self, session: &Session, i: usize, out: &mut Vec<Detection>) {
        self.content.feed(session, i, &mut self.buf);
        out.extend(self.buf.drain(..).filter_map(|d| self.relabel.apply(d)));
    }
    fn finish(&mut self, session: &Session, out: &mut Vec<Detection>) {
        self.content.finish(session, &mut self.buf);
        out.extend(self.buf.drain(..).filter_map(|d| self.relabel.apply(d)));
    }
    fn held_from(&self) -> Option<u32> {
        self.content.held_from()
    }
    fn keeps_from(&self) -> usize {
        self.content.keeps_from()
    }
}

impl Check for ChantCheck {
    fn name(&self) -> &'static str {
        "looptune.chant"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }
    fn limit_per_prompt(&self) -> bool {
        true
    }
    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        // The warn stage keeps one detection a prompt: it needs all of them.
        let limit = if self.s.warn { None } else { limit };
        self.relabel(content::run(&self.s.content, prep(session), limit))
    }
    fn batch_key(&self) -> Option<String> {
        Some(format!(
            "looptune.chant;{};warn={}",
            content::stream_key(&self.s.content),
            self.s.warn
        ))
    }
    fn run_batch(
        &self,
        batch: &[&dyn Check],
        session: &Prepared,
        limit: Option<usize>,
    ) -> Vec<Vec<Detection>> {
        let checks: Option<Vec<&ChantCheck>> = batch
            .iter()
            .map(|c| c.as_any().and_then(|a| a.downcast_ref::<ChantCheck>()))
            .collect();
        match checks {
            Some(cs) => {
                let vs: Vec<&ContentSettings> = cs.iter().map(|c| &c.s.content).collect();
                let limit = if self.s.warn { None } else { limit };
                content::run_many(&vs, prep(session), limit)
                    .into_iter()
                    .zip(cs)
                    .map(|(d, c)| c.relabel(d))
                    .collect()
            }
            None => batch.iter().map(|c| c.run(session, limit)).collect(),
        }
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(Box::new(ChantStream {
            content: ContentStream::new(self.s.content.clone()),
            relabel: Relabel::new(self.s.warn),
            buf: Vec::new(),
        }))
    }
}
