//! DeepEval's `AgentLoopDetectionMetric`
//! (`deepeval/metrics/agent_loop_detection/agent_loop_detection.py`): a
//! deterministic score over an agent trace from three sub-scores, tool
//! repetition (the most repeated identical call: 0.5 from 3, 0 from 6),
//! reasoning stagnation (the larger of bigram Jaccard and difflib's
//! `SequenceMatcher` ratio of consecutive LLM outputs: 0.5 from 0.85, 0
//! above 0.95) and call-graph cycles, weighted 0.40 / 0.35 / 0.25; the
//! test case fails below the threshold 0.5.
//!
//! How canonical records drive it (docs/detector-mappings.md, "DeepEval"):
//! a trace is a prompt (`trace=prompt`) or the whole session; its root span
//! has one child per model turn (an `llm` span whose output is the turn's
//! `content` text) and one per `tool_call` (a `tool` span with the call's
//! arguments), flat, so the cycle sub-score is always 1. The metric is
//! measured on the trace as it stands after every record; the first record
//! after which it fails is the detection (tier `fail`, the score in the
//! detail). Policy `stop`.

use super::common::{each_record, At, Found, LivePrompts};
use crate::detect::{
    Check, Detection, Family, ParamSet, ParamSpec, ParamValue, Params, Prepared, Profile, Stream,
    POLICY, POLICY_SPEC,
};
use crate::error::Result;
use crate::event::{Record, Session};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

const SRC: &str =
    "confident-ai/deepeval 4.3.1 (PyPI) deepeval/metrics/agent_loop_detection/agent_loop_detection.py";

/// `_STOP_WORDS`.
const STOP_WORDS: &[&str] = &[
    "the",
    "a",
    "an",
    "is",
    "are",
    "was",
    "were",
    "i",
    "will",
    "now",
    "based",
    "on",
    "information",
    "provided",
    "to",
    "of",
    "in",
    "and",
    "that",
    "this",
    "with",
    "for",
    "it",
    "my",
    "next",
    "step",
    "going",
    "so",
    "do",
    "be",
    "have",
    "has",
    "not",
    "but",
    "as",
    "or",
    "from",
    "at",
    "by",
    "about",
    "above",
    "below",
    "up",
    "its",
    "let",
];

/// The `deepeval` family.
pub struct DeepEval;

impl Family for DeepEval {
    fn name(&self) -> &'static str {
        "deepeval"
    }
    fn about(&self) -> &'static str {
        "DeepEval AgentLoopDetectionMetric: 0.40 tool repetition (identical calls, 0.5 from 3, 0 from 6) + 0.35 reasoning stagnation (bigram Jaccard or SequenceMatcher ratio of consecutive LLM outputs >= 0.85) + 0.25 call-graph cycles; fails below 0.5"
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            POLICY_SPEC,
            ParamSpec::float("threshold", 0.0, 1.0, "score", "the test case passes at or above this score (threshold)", SRC),
            ParamSpec::int("repetition_threshold", 1, 100_000, "calls", "identical calls that halve the repetition score; twice this zeroes it (repetition_threshold)", SRC),
            ParamSpec::float("similarity_threshold", 0.0, 1.0, "Jaccard", "bigram overlap of consecutive LLM outputs that halves the stagnation score (similarity_threshold; above 0.95 zeroes it)", SRC),
            ParamSpec::bool("check_tool_repetition", "the repetition sub-score counts (weight 0.40)", SRC),
            ParamSpec::bool("check_reasoning_stagnation", "the stagnation sub-score counts (weight 0.35)", SRC),
            ParamSpec::bool("check_call_graph_cycles", "the cycle sub-score counts (weight 0.25; always 1 on flat traces)", SRC),
            ParamSpec::bool("strict_mode", "threshold 1, and a score below it becomes 0 (strict_mode)", SRC),
            ParamSpec::choice("trace", &["prompt", "session"], "what one trace (one test case) is: a prompt or the whole session", SRC),
        ]
    }
    fn profiles(&self) -> Vec<Profile> {
        vec![Profile {
            name: "deepeval",
            about: "DeepEval 4.3.1 AgentLoopDetectionMetric with its defaults (threshold 0.5, repetition 3, similarity 0.85, all three checks), one trace per prompt; the first record after which the trace fails",
            values: vec![
                (POLICY, ParamValue::word("stop")),
                ("threshold", ParamValue::Float(0.5)),
                ("repetition_threshold", ParamValue::Int(3)),
                ("similarity_threshold", ParamValue::Float(0.85)),
                ("check_tool_repetition", ParamValue::Bool(true)),
                ("check_reasoning_stagnation", ParamValue::Bool(true)),
                ("check_call_graph_cycles", ParamValue::Bool(true)),
                ("strict_mode", ParamValue::Bool(false)),
                ("trace", ParamValue::word("prompt")),
            ],
        }]
    }
    fn checks(&self, params: &ParamSet) -> Result<Vec<Box<dyn Check>>> {
        let p = Params::new(self.name(), params);
        let s = MetricSettings {
            threshold: p.get("threshold")?,
            repetition_threshold: p.get("repetition_threshold")?,
            similarity_threshold: p.get("similarity_threshold")?,
            check_tool_repetition: p.get("check_tool_repetition")?,
            check_reasoning_stagnation: p.get("check_reasoning_stagnation")?,
            check_call_graph_cycles: p.get("check_call_graph_cycles")?,
            strict_mode: p.get("strict_mode")?,
            per_prompt: p.choice("trace", &[("prompt", true), ("session", false)])?,
        };
        Ok(vec![Box::new(DeepEvalCheck { s })])
    }
}

/// The metric's constructor arguments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetricSettings {
    pub threshold: f64,
    pub repetition_threshold: u32,
    pub similarity_threshold: f64,
    pub check_tool_repetition: bool,
    pub check_reasoning_stagnation: bool,
    pub check_call_graph_cycles: bool,
    pub strict_mode: bool,
    pub per_prompt: bool,
}

impl Default for MetricSettings {
    fn default() -> Self {
        MetricSettings {
            threshold: 0.5,
            repetition_threshold: 3,
            similarity_threshold: 0.85,
            check_tool_repetition: true,
            check_reasoning_stagnation: true,
            check_call_graph_cycles: true,
            strict_mode: false,
            per_prompt: true,
        }
    }
}

/// Python's `repr` of a float.
fn py_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    // Shortest round-trip digits, then Python's layout: fixed for
    // exponents -4..16, else d.ddde+XX.
    let e = format!("{f:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let sign = if neg { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let point = exp + 1;
        let body = if point <= 0 {
            format!("0.{}{}", "0".repeat((-point) as usize), digits)
        } else if point as usize >= digits.len() {
            format!("{}{}.0", digits, "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        };
        format!("{sign}{body}")
    } else {
        let m = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits
        };
        format!(
            "{sign}{m}e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        )
    }
}

/// Python's `repr` of a str.
fn py_repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::new();
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || (0x7f..0xa0).contains(&(c as u32)) => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `repr` of a value `json.loads` gives.
fn py_repr(v: &Value) -> String {
    match v {
        Value::String(s) => py_repr_str(s),
        other => py_str(other),
    }
}

/// Python's `str` of a value `json.loads` gives.
pub fn py_str(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        Value::Number(n) => py_float(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => s.clone(),
        Value::Array(a) => format!("[{}]", a.iter().map(py_repr).collect::<Vec<_>>().join(", ")),
        Value::Object(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, x)| format!("{}: {}", py_repr_str(k), py_repr(x)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A tool call as `_score_tool_repetition` counts it.
pub type CallHash = (String, Vec<(String, String)>);

/// `call_hash` of `_score_tool_repetition` for a dict input: the name and
/// the sorted `(str(k), str(v))` pairs.
pub fn call_hash(name: &str, args: &Map<String, Value>) -> CallHash {
    let mut pairs: Vec<(String, String)> =
        args.iter().map(|(k, v)| (k.clone(), py_str(v))).collect();
    pairs.sort();
    (name.to_string(), pairs)
}

/// `_score_tool_repetition` over the counts of identical calls.
pub fn tool_repetition_score(max_count: u32, repetition_threshold: u32) -> f64 {
    if max_count >= repetition_threshold * 2 {
        0.0
    } else if max_count >= repetition_threshold {
        0.5
    } else {
        1.0
    }
}

/// `_clean_words`: the lower-cased words, stop words and words of 2
/// characters or fewer left out.
pub fn clean_words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(py_space)
        .filter(|w| !w.is_empty() && !STOP_WORDS.contains(w) && w.chars().count() > 2)
        .map(String::from)
        .collect()
}

/// `str.split()`'s whitespace.
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `_bigram_jaccard`.
pub fn bigram_jaccard(a: &[String], b: &[String]) -> f64 {
    if a.len() < 2 || b.len() < 2 {
        return 0.0;
    }
    let ba: HashSet<(&str, &str)> = a
        .windows(2)
        .map(|w| (w[0].as_str(), w[1].as_str()))
        .collect();
    let bb: HashSet<(&str, &str)> = b
        .windows(2)
        .map(|w| (w[0].as_str(), w[1].as_str()))
        .collect();
    let inter = ba.intersection(&bb).count();
    let union = ba.len() + bb.len() - inter;
    if union == 0 {
        0.0
    } else {
        inter as f64 / union as f64
    }
}

/// `difflib.SequenceMatcher(None, a, b).ratio()` over characters, with
/// the default autojunk: in a `b` of 200 or more, an element occurring more
/// than `len(b) / 100 + 1` times is popular and never starts a match.
pub fn sequence_ratio(a: &str, b: &str) -> f64 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let total = a.len() + b.len();
    if total == 0 {
        return 1.0;
    }
    let mut b2j: HashMap<char, Vec<usize>> = HashMap::new();
    for (j, c) in b.iter().enumerate() {
        b2j.entry(*c).or_default().push(j);
    }
    if b.len() >= 200 {
        let ntest = b.len() / 100 + 1;
        b2j.retain(|_, idx| idx.len() <= ntest);
    }
    let longest = |alo: usize, ahi: usize, blo: usize, bhi: usize| -> (usize, usize, usize) {
        let (mut bi, mut bj, mut bk) = (alo, blo, 0usize);
        let mut j2len: HashMap<usize, usize> = HashMap::new();
        for (i, c) in a.iter().enumerate().take(ahi).skip(alo) {
            let mut next: HashMap<usize, usize> = HashMap::new();
            if let Some(js) = b2j.get(c) {
                for &j in js {
                    if j < blo {
                        continue;
                    }
                    if j >= bhi {
                        break;
                    }
                    let k = j
                        .checked_sub(1)
                        .and_then(|p| j2len.get(&p))
                        .copied()
                        .unwrap_or(0)
                        + 1;
                    next.insert(j, k);
                    if k > bk {
                        bi = i + 1 - k;
                        bj = j + 1 - k;
                        bk = k;
                    }
                }
            }
            j2len = next;
        }
        // No junk: extend over equal elements (popular ones included).
        while bi > alo && bj > blo && a[bi - 1] == b[bj - 1] {
            bi -= 1;
            bj -= 1;
            bk += 1;
        }
        while bi + bk < ahi && bj + bk < bhi && a[bi + bk] == b[bj + bk] {
            bk += 1;
        }
        (bi, bj, bk)
    };
    let mut matches = 0usize;
    let mut queue = vec![(0, a.len(), 0, b.len())];
    while let Some((alo, ahi, blo, bhi)) = queue.pop() {
        let (i, j, k) = longest(alo, ahi, blo, bhi);
        if k > 0 {
            matches += k;
            if alo < i && blo < j {
                queue.push((alo, i, blo, j));
            }
            if i + k < ahi && j + k < bhi {
                queue.push((i + k, ahi, j + k, bhi));
            }
        }
    }
    2.0 * matches as f64 / total as f64
}

/// The similarity of two consecutive LLM outputs (`None`: the pair is
/// skipped, one has fewer than 20 clean words).
pub fn similarity(a: &[String], b: &[String]) -> Option<f64> {
    if a.len() < 20 || b.len() < 20 {
        return None;
    }
    let jaccard = bigram_jaccard(a, b);
    let seq = sequence_ratio(&a.join(" "), &b.join(" "));
    Some(jaccard.max(seq))
}

/// `_score_reasoning_stagnation` from the number of LLM spans and the
/// largest similarity of a pair.
pub fn stagnation_score(spans: usize, max_overlap: f64, similarity_threshold: f64) -> f64 {
    if spans < 2 {
        return 1.0;
    }
    if max_overlap >= similarity_threshold {
        if max_overlap > 0.95 {
            0.0
        } else {
            0.5
        }
    } else {
        1.0
    }
}

/// `_combine_scores`, then strict mode.
pub fn combine(s: &MetricSettings, rep: f64, stag: f64, cycle: f64) -> f64 {
    let mut weights = 0.0;
    let mut total = 0.0;
    if s.check_tool_repetition {
        weights += 0.40;
        total += rep * 0.40;
    }
    if s.check_reasoning_stagnation {
        weights += 0.35;
        total += stag * 0.35;
    }
    if s.check_call_graph_cycles {
        weights += 0.25;
        total += cycle * 0.25;
    }
    let score = if weights == 0.0 { 1.0 } else { total / weights };
    if s.strict_mode && score < 1.0 {
        0.0
    } else {
        score
    }
}

fn threshold(s: &MetricSettings) -> f64 {
    if s.strict_mode {
        1.0
    } else {
        s.threshold
    }
}

/// What one record adds to the trace: an LLM span (its turn's whole text,
/// as clean words) and then a tool span.
#[derive(Debug, Default)]
struct Added {
    llm: Option<Vec<String>>,
    tool: Option<CallHash>,
}

/// Each model turn's LLM span is added at its last `content` record, or at
/// its first model record when it has no text (output `""`).
fn spans(s: &Session) -> Vec<Added> {
    let mut last_content: HashMap<u32, usize> = HashMap::new();
    let mut first_model: HashMap<u32, usize> = HashMap::new();
    let mut text: HashMap<u32, String> = HashMap::new();
    for (i, e) in s.events.iter().enumerate() {
        match &e.record {
            Record::Content { text: t } => {
                last_content.insert(e.turn, i);
                first_model.entry(e.turn).or_insert(i);
                text.entry(e.turn).or_default().push_str(t);
            }
            Record::Thought { .. } | Record::ToolCall { .. } => {
                first_model.entry(e.turn).or_insert(i);
            }
            _ => {}
        }
    }
    let mut llm_at: HashMap<usize, u32> = HashMap::new();
    for (turn, first) in &first_model {
        llm_at.insert(*last_content.get(turn).unwrap_or(first), *turn);
    }
    s.events
        .iter()
        .enumerate()
        .map(|(i, e)| Added {
            llm: llm_at
                .get(&i)
                .map(|turn| clean_words(text.get(turn).map_or("", String::as_str))),
            tool: match &e.record {
                Record::ToolCall { name, args, .. } => Some(call_hash(name, args)),
                _ => None,
            },
        })
        .collect()
}

struct DeepEvalCheck {
    s: MetricSettings,
}

impl Check for DeepEvalCheck {
    fn name(&self) -> &'static str {
        "deepeval.agent_loop"
    }
    fn settings(&self) -> &dyn std::fmt::Debug {
        &self.s
    }

    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection> {
        let spans = session.shared("deepeval.spans", spans);
        let mut metric = Metric::new(self.s);
        each_record(&session.session, limit, |at, found| {
            let added = &spans[at.i];
            metric.record(at, added.llm.as_ref(), added.tool.as_ref(), found);
        })
    }
    fn stream(&self) -> Option<Box<dyn Stream>> {
        Some(Box::new(DeepEvalStream {
            metric: Metric::new(self.s),
            prompts: LivePrompts::default(),
            turn: None,
            held: Vec::new(),
            text: String::new(),
            last_content: None,
            first_model: None,
        }))
    }
}

/// The metric on the trace as it stands, record by record. `P` holds the
/// previous LLM output (borrowed over a whole session, owned live), `K` a
/// call's hash. The counts of identical calls keep every distinct call of
/// the trace, as the metric's `Counter` over the trace's tool spans does:
/// they grow with the trace, not a window.
struct Metric<P, K> {
    s: MetricSettings,
    counts: HashMap<K, u32>,
    max_count: u32,
    /// The previous LLM output and the largest similarity of a pair so far.
    prev: Option<P>,
    max_overlap: f64,
    spans_seen: usize,
    failed: bool,
}

impl<P: std::borrow::Borrow<Vec<String>>, K: std::hash::Hash + Eq> Metric<P, K> {
    fn new(s: MetricSettings) -> Self {
        Metric {
            s,
            counts: HashMap::new(),
            max_count: 0,
            prev: None,
            max_overlap: 0.0,
            spans_seen: 0,
            failed: false,
        }
    }

    /// Record `at` adds an LLM span (`llm`, its clean words) and then a tool
    /// span (`tool`); the first record after which the trace fails fires.
    fn record(&mut self, at: At<'_>, llm: Option<P>, tool: Option<K>, found: &mut Found<'_>) {
        let s = self.s;
        if at.new_prompt && s.per_prompt {
            self.counts.clear();
            self.max_count = 0;
            self.prev = None;
            self.max_overlap = 0.0;
            self.spans_seen = 0;
            self.failed = false;
        }
        let changed = llm.is_some() || tool.is_some();
        if let Some(words) = llm {
            if let Some(sim) = self
                .prev
                .as_ref()
                .and_then(|p| similarity(p.borrow(), words.borrow()))
            {
                self.max_overlap = self.max_overlap.max(sim);
            }
            self.prev = Some(words);
            self.spans_seen += 1;
        }
        if let Some(h) = tool {
            let n = self.counts.entry(h).or_insert(0);
            *n += 1;
            self.max_count = self.max_count.max(*n);
        }
        if !changed || self.failed {
            return;
        }
        let rep = tool_repetition_score(self.max_count, s.repetition_threshold);
        let stag = stagnation_score(self.spans_seen, self.max_overlap, s.similarity_threshold);
        let score = combine(&s, rep, stag, 1.0);
        if score < threshold(&s) {
            self.failed = true;
            found.push(
                at.i,
                "agent_loop",
                at.prompts.saturating_sub(1),
                format!("fail: score {score:.3} (tool repetition {rep}, reasoning stagnation {stag}, call graph cycles 1)"),
            );
        }
    }
}

/// A record of the turn being read, held until the turn ends.
struct Held {
    i: usize,
    new_prompt: bool,
    prompts: u32,
    tool: Option<CallHash>,
}

/// The metric fed live. A turn's LLM span is added at its last `content`
/// record (else its first model record), known only when the turn ends, and
/// the tool spans after it in the turn are scored with it: so a turn's
/// records are held (with their prompt counts) and scored in order when the
/// next turn begins or the session ends; a detection is released then, at
/// the record where the trace failed.
struct DeepEvalStream {
    metric: Metric<Vec<String>, CallHash>,
    /// Counts the prompts as the replay's loop does (`at.prompts`).
    prompts: LivePrompts,
    turn: Option<u32>,
    held: Vec<Held>,
    text: String,
    last_content: Option<usize>,
    first_model: Option<usize>,
}

impl DeepEvalStream {
    /// Score the held turn.
    fn end_turn(&mut self, session: &Session, out: &mut Vec<Detection>) {
        let llm_at = self.last_content.or(self.first_model);
        let mut found = Found::new(session, None);
        for h in self.held.drain(..) {
            let at = At {
                i: h.i,
                event: session.event(h.i),
                prompts: h.prompts,
                new_prompt: h.new_prompt,
            };
            let llm = (llm_at == Some(h.i)).then(|| clean_words(&self.text));
            self.metric.record(at, llm, h.tool, &mut found);
        }
        out.extend(found.into_vec());
        self.text.clear();
        self.last_content = None;
        self.first_model = None;
    }
}

impl Stream for DeepEvalStream {
    fn keeps_from(&self) -> usize {
        // The turn held until it ends.
        self.held.first().map_or(usize::MAX, |h| h.i)
    }
    fn feed(&mut self, session: &Session, i: usize, out: &mut Vec<Detection>) {
        let e = session.event(i);
        if self.turn.is_some_and(|t| t != e.turn) {
            self.end_turn(session, out);
        }
        self.turn = Some(e.turn);
        // The prompt count and whether this record begins a prompt, as
        // `each_record` gives them.
        let (new_prompt, prompts) = self.prompts.observe(session, i);
        let tool = match &e.record {
            Record::Content { text } => {
                self.last_content = Some(i);
                self.first_model.get_or_insert(i);
                self.text.push_str(text);
                None
            }
            Record::Thought { .. } => {
                self.first_model.get_or_insert(i);
                None
            }
            Record::ToolCall { name, args, .. } => {
                self.first_model.get_or_insert(i);
                Some(call_hash(name, args))
            }
            _ => None,
        };
        self.held.push(Held {
            i,
            new_prompt,
            prompts,
            tool,
        });
    }
    fn finish(&mut self, session: &Session, out: &mut Vec<Detection>) {
        self.end_turn(session, out);
    }
}
