//! The canonical vocabulary: sessions as ordered records, with the spec's turn
//! and event numbering already resolved. No I/O here; `input` builds these and
//! detectors read them.
//!
//! See `docs/transcript-format.md` for the format these types mirror.

use serde_json::{Map, Value};
use std::sync::Arc;

/// One record of a session, as the spec's record table defines it.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// Session metadata; the last value of each field wins (see [`SessionMeta`]).
    Session {
        /// Agent name, e.g. `gemini-cli`.
        agent: Option<String>,
        /// Model name, e.g. `gemini-2.5-pro`.
        model: Option<String>,
        /// Mode, e.g. `plan`.
        mode: Option<String>,
        /// Free-form metadata.
        meta: Option<Box<Map<String, Value>>>,
    },
    /// A user message; starts a new prompt unless `prompt_id` repeats the one in force.
    User {
        /// The message.
        text: String,
        /// Prompt id, when the agent keeps one across continuations.
        prompt_id: Option<String>,
    },
    /// An explicit new model request (Gemini CLI's `turnStarted`).
    Turn,
    /// One streamed chunk of model text.
    Content {
        /// The chunk exactly as streamed.
        text: String,
    },
    /// Model reasoning (not content).
    Thought {
        /// The reasoning text.
        text: String,
    },
    /// A tool call the model asked for.
    ToolCall {
        /// Tool name.
        name: String,
        /// Arguments, key order kept as in the file. Boxed: a map is 72
        /// bytes, the rest of any record at most 80, and every event of a
        /// session is as large as its largest record type.
        args: Box<Map<String, Value>>,
        /// Call id.
        id: Option<String>,
    },
    /// What a tool returned.
    ToolResult {
        /// Id of the call it answers.
        id: Option<String>,
        /// Tool name.
        name: Option<String>,
        /// Output text.
        output: Option<String>,
        /// Whether the tool reported an error.
        error: Option<bool>,
    },
    /// Tokens spent by the current turn.
    Usage {
        /// Prompt tokens.
        input_tokens: Option<u64>,
        /// Completion tokens.
        output_tokens: Option<u64>,
    },
    /// A recorded LLM-judge verdict.
    Judge {
        /// Confidence that the conversation is stuck, 0.0 to 1.0.
        confidence: f64,
        /// Judge model.
        model: Option<String>,
        /// The judge's analysis.
        analysis: Option<String>,
    },
    /// What the live agent's own detector reported.
    LoopDetected {
        /// Loop kind as the agent named it.
        kind: Option<String>,
        /// Detail text.
        detail: Option<String>,
    },
    /// Inline ground truth.
    Label {
        /// Whether the session loops.
        is_loop: bool,
        /// First turn of the looping behaviour.
        onset_turn: Option<u32>,
    },
    /// A record of a type this version does not know (kept for numbering, counted).
    Unknown {
        /// Its `type` field.
        record_type: String,
    },
}

impl Record {
    /// A tool call, its arguments boxed.
    pub fn tool_call(name: String, args: Map<String, Value>, id: Option<String>) -> Record {
        Record::ToolCall {
            name,
            args: Box::new(args),
            id,
        }
    }

    /// The record's `type` string as it appears in JSONL.
    pub fn type_name(&self) -> &str {
        match self {
            Record::Session { .. } => "session",
            Record::User { .. } => "user",
            Record::Turn => "turn",
            Record::Content { .. } => "content",
            Record::Thought { .. } => "thought",
            Record::ToolCall { .. } => "tool_call",
            Record::ToolResult { .. } => "tool_result",
            Record::Usage { .. } => "usage",
            Record::Judge { .. } => "judge",
            Record::LoopDetected { .. } => "loop_detected",
            Record::Label { .. } => "label",
            Record::Unknown { record_type } => record_type,
        }
    }
}

/// Where a record came from, for error messages, report excerpts and the
/// `file`/`line`/`pointer` of every detection (see [`Corpus::provenance`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    /// Index into [`Corpus::files`].
    pub file: u32,
    /// 1-based line number in that file (0 when the importer has no lines).
    pub line: u32,
    /// More than a line: the position inside a whole-document file, or the
    /// original place a converted canonical record names in its `src` field.
    /// Shared by the records of one native message; `None` for plain JSONL.
    pub place: Option<Arc<Place>>,
}

impl Origin {
    /// A record at `line` of file `file`, with nothing more to say.
    pub fn at(file: u32, line: u32) -> Origin {
        Origin {
            file,
            line,
            place: None,
        }
    }
}

/// Provenance beyond a line of the file read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Place {
    /// The original file, when the record was read from a converted canonical
    /// file whose `src` names it; `None` means the file read.
    pub file: Option<String>,
    /// 1-based line in [`Place::file`] (only with `file`; otherwise
    /// [`Origin::line`] is the line).
    pub line: Option<u32>,
    /// JSON pointer (RFC 6901) of the native record inside a whole-document
    /// file, e.g. `/messages/3`.
    pub pointer: Option<String>,
}

/// Where one record came from, resolved for output: the original file and
/// its line, or its JSON pointer for whole-document formats (or both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Provenance<'a> {
    /// File as given (or as a converted file's `src` names it); `-` for stdin.
    pub file: &'a str,
    /// 1-based line, when known.
    pub line: Option<u32>,
    /// JSON pointer inside the file, for whole-document formats.
    pub pointer: Option<&'a str>,
}

impl Provenance<'_> {
    /// The same place, owning its strings (kept once the records are gone).
    pub fn located(&self) -> Located {
        Located {
            file: self.file.to_string(),
            line: self.line,
            pointer: self.pointer.map(str::to_string),
        }
    }
}

/// A [`Provenance`] that owns its strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// File as given (or as a converted file's `src` names it); `-` for stdin.
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<u32>,
    /// JSON pointer inside the file, for whole-document formats.
    pub pointer: Option<String>,
}

impl Located {
    /// Borrowed again, for the writers.
    pub fn provenance(&self) -> Provenance<'_> {
        Provenance {
            file: &self.file,
            line: self.line,
            pointer: self.pointer.as_deref(),
        }
    }
}

impl std::fmt::Display for Provenance<'_> {
    /// `FILE:LINE`, `FILE#POINTER` when there is no line, else `FILE`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.pointer) {
            (Some(l), _) => write!(f, "{}:{l}", self.file),
            (None, Some(p)) => write!(f, "{}#{p}", self.file),
            (None, None) => f.write_str(self.file),
        }
    }
}

/// A record placed in its session: its turn (0 before the first turn) and origin.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The record.
    pub record: Record,
    /// Turn in force at this record (spec numbering; 0 before the first turn).
    pub turn: u32,
    /// True when this record starts `turn` (explicitly or implicitly).
    pub starts_turn: bool,
    /// Where it was read.
    pub origin: Origin,
}

impl Event {
    /// A record as read, before its session numbers the turns
    /// ([`Session::from_events`]).
    pub fn new(record: Record, origin: Origin) -> Event {
        Event {
            record,
            turn: 0,
            starts_turn: false,
            origin,
        }
    }
}

/// Session metadata after "last one wins per field".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionMeta {
    /// Agent name.
    pub agent: Option<String>,
    /// Model name.
    pub model: Option<String>,
    /// Mode (`plan`, `default`, ...).
    pub mode: Option<String>,
    /// Free-form metadata (merged by key, last wins).
    pub meta: Map<String, Value>,
}

/// Where the live agent's own detector fired: a `loop_detected` record, so
/// a replay can show it beside the port's detections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveDetection {
    /// Turn of the record.
    pub turn: u32,
    /// 1-based record index.
    pub event: u32,
    /// Loop kind as the agent named it.
    pub kind: Option<String>,
}

/// An inline or file label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label {
    /// Loop or clean.
    pub is_loop: bool,
    /// First turn of the looping behaviour (required for loops in label files).
    pub onset_turn: Option<u32>,
}

/// One session: its records in order, with turns resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// Session id.
    pub id: String,
    /// Records, in reading order. Event numbers are indices + 1 (plus
    /// `first`).
    pub events: Vec<Event>,
    /// The index in the whole session of `events[0]`: 0, except in a live
    /// feed that has forgotten the records no rule reads again
    /// ([`Growing::forget_before`]); code that may run live reads records
    /// through [`Session::event`].
    pub first: usize,
    /// Resolved metadata.
    pub meta: SessionMeta,
    /// The last inline `label` record, if any.
    pub inline_label: Option<Label>,
    /// Number of turns (the highest turn number).
    pub turns: u32,
    /// Content came from whole messages, not stream chunks (set by importers).
    pub whole_messages: bool,
    /// `usage` records as (event number, tokens from there to the end of the
    /// session), so "tokens after a point" is a binary search, not a scan.
    pub usage_suffix: Vec<(u32, u64)>,
}

/// How a session numbers its turns, one record at a time: from `turn`
/// records when the session has any (`explicit`), else a turn starts at the
/// first model record after the session's start, a `user` or a
/// `tool_result` record. [`Session::from_events`] and a live session fed
/// record by record ([`Session::push_event`]) share it.
#[derive(Debug, Clone)]
pub struct Numbering {
    explicit: bool,
    /// The turn in force (the highest so far).
    pub turn: u32,
    armed: bool,
}

impl Numbering {
    /// Numbering from the start of a session, explicit or implicit.
    pub fn new(explicit: bool) -> Numbering {
        Numbering {
            explicit,
            turn: 0,
            armed: true,
        }
    }

    /// Number the next record in place.
    pub fn step(&mut self, e: &mut Event) {
        let mut starts_turn = false;
        if self.explicit {
            if matches!(e.record, Record::Turn) {
                self.turn += 1;
                starts_turn = true;
            }
        } else {
            match e.record {
                Record::User { .. } | Record::ToolResult { .. } => self.armed = true,
                Record::Content { .. } | Record::Thought { .. } | Record::ToolCall { .. }
                    if self.armed =>
                {
                    self.turn += 1;
                    starts_turn = true;
                    self.armed = false;
                }
                _ => {}
            }
        }
        e.turn = self.turn;
        e.starts_turn = starts_turn;
    }
}

/// What a `session` or `label` record sets: metadata, last one wins per field.
fn read_meta(record: &Record, meta: &mut SessionMeta, inline_label: &mut Option<Label>) {
    match record {
        Record::Session {
            agent,
            model,
            mode,
            meta: m,
        } => {
            if agent.is_some() {
                meta.agent.clone_from(agent);
            }
            if model.is_some() {
                meta.model.clone_from(model);
            }
            if mode.is_some() {
                meta.mode.clone_from(mode);
            }
            if let Some(m) = m {
                for (k, v) in m.iter() {
                    meta.meta.insert(k.clone(), v.clone());
                }
            }
        }
        Record::Label {
            is_loop,
            onset_turn,
        } => {
            *inline_label = Some(Label {
                is_loop: *is_loop,
                onset_turn: *onset_turn,
            })
        }
        _ => {}
    }
}

/// A session read record by record (a live feed): each record numbered
/// and read for metadata as [`Session::from_events`] would number and read
/// it at the end of the records so far, at a cost that does not grow with
/// the session.
#[derive(Debug)]
pub struct Growing {
    session: Session,
    numbering: Numbering,
}

impl Growing {
    /// A session with no records yet.
    pub fn new(id: String) -> Growing {
        Growing {
            session: Session::from_events(id, Vec::new()),
            numbering: Numbering::new(false),
        }
    }

    /// The session so far. Its `usage_suffix` stays empty: tokens after a
    /// point are a whole session's figure, which a live feed does not report.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Whether the session numbers its turns by `turn` records: no later
    /// record can renumber those before it.
    pub fn explicit(&self) -> bool {
        self.numbering.explicit
    }

    /// Forget the records before `k` (0-based, of the whole session), once
    /// they are at least half of those held (or at once with `eager`): a
    /// live feed holds what its rules may read again, not the session,
    /// at an amortised O(1) a record.
    pub fn forget_before(&mut self, k: usize, eager: bool) {
        let s = &mut self.session;
        let n = k.saturating_sub(s.first).min(s.events.len());
        if n > 0 && (eager || (n >= 64 && 2 * n >= s.events.len())) {
            s.events.drain(..n);
            s.first += n;
        }
    }

    /// Add the next record. True when records before it were renumbered:
    /// the first `turn` record of a session numbered implicitly until then
    /// switches it to `turn` records, as reading the whole session would.
    pub fn push(&mut self, mut event: Event) -> bool {
        let s = &mut self.session;
        let mut renumbered = false;
        if !self.numbering.explicit && matches!(event.record, Record::Turn) {
            // Records are forgotten only once numbering is explicit.
            debug_assert_eq!(s.first, 0);
            renumbered = s.events.iter().any(|e| e.turn != 0 || e.starts_turn);
            self.numbering = Numbering::new(true);
            for e in &mut s.events {
                self.numbering.step(e);
            }
        }
        self.numbering.step(&mut event);
        read_meta(&event.record, &mut s.meta, &mut s.inline_label);
        s.turns = self.numbering.turn;
        s.events.push(event);
        renumbered
    }
}

impl Session {
    /// Build a session from records in order, resolving turns and metadata.
    pub fn from_records(id: String, records: Vec<(Record, Origin)>) -> Session {
        let events = records
            .into_iter()
            .map(|(record, origin)| Event::new(record, origin))
            .collect();
        Session::from_events(id, events)
    }

    /// [`Session::from_records`] for records already held as events (as the
    /// readers give them): turns are numbered in place, so a large session is
    /// not moved into a second vector.
    pub fn from_events(id: String, mut events: Vec<Event>) -> Session {
        let explicit = events.iter().any(|e| matches!(e.record, Record::Turn));
        let mut numbering = Numbering::new(explicit);
        let mut meta = SessionMeta::default();
        let mut inline_label = None;
        for e in &mut events {
            numbering.step(e);
            read_meta(&e.record, &mut meta, &mut inline_label);
        }
        let turn = numbering.turn;
        let mut usage_suffix: Vec<(u32, u64)> = events
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match e.record {
                Record::Usage {
                    input_tokens,
                    output_tokens,
                } => Some((
                    i as u32 + 1,
                    // Saturating: a count near u64::MAX in a log must not wrap.
                    input_tokens
                        .unwrap_or(0)
                        .saturating_add(output_tokens.unwrap_or(0)),
                )),
                _ => None,
            })
            .collect();
        let mut acc = 0u64;
        for u in usage_suffix.iter_mut().rev() {
            acc = acc.saturating_add(u.1);
            u.1 = acc;
        }
        Session {
            id,
            events,
            first: 0,
            meta,
            inline_label,
            turns: turn,
            whole_messages: false,
            usage_suffix,
        }
    }

    /// Record `i` (0-based, of the whole session). In a live feed it must
    /// not have been forgotten: a rule reads again only what its stream
    /// keeps ([`crate::detect::Stream::keeps_from`]).
    #[inline]
    pub fn event(&self, i: usize) -> &Event {
        &self.events[i - self.first]
    }

    /// Records in the whole session so far (forgotten ones included).
    #[inline]
    pub fn len(&self) -> usize {
        self.first + self.events.len()
    }

    /// Whether the session has no records.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Tokens of the `usage` records after event `event` (1-based).
    pub fn tokens_after(&self, event: u32) -> u64 {
        let i = self.usage_suffix.partition_point(|(e, _)| *e <= event);
        self.usage_suffix.get(i).map_or(0, |(_, t)| *t)
    }

    /// What the live agent's own detector did (its `loop_detected`
    /// records), in order.
    pub fn live_detections(&self) -> Vec<LiveDetection> {
        self.events
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match &e.record {
                Record::LoopDetected { kind, .. } => Some(LiveDetection {
                    turn: e.turn,
                    event: i as u32 + 1,
                    kind: kind.clone(),
                }),
                _ => None,
            })
            .collect()
    }

    /// Number of tool calls.
    pub fn tool_calls(&self) -> usize {
        self.events
            .iter()
            .filter(|e| matches!(e.record, Record::ToolCall { .. }))
            .count()
    }
}

/// Where one origin points, `path(i)` naming the file its `Origin::file` indexes.
pub fn provenance_of<'a>(o: &'a Origin, path: impl Fn(u32) -> &'a str) -> Provenance<'a> {
    let place = o.place.as_deref();
    match place.and_then(|p| p.file.as_deref()) {
        Some(file) => Provenance {
            file,
            line: place.and_then(|p| p.line),
            pointer: place.and_then(|p| p.pointer.as_deref()),
        },
        None => Provenance {
            file: path(o.file),
            line: (o.line > 0).then_some(o.line),
            pointer: place.and_then(|p| p.pointer.as_deref()),
        },
    }
}

/// An input file as read: path as given and the SHA-256 of its bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceFile {
    /// Path as the user gave it (or found by walking a folder); `-` for stdin.
    pub path: String,
    /// Input format name (`canonical`, `claude-code`, ...).
    pub format: String,
    /// SHA-256 of the file's bytes as stored (compressed bytes for `.gz`).
    pub sha256: String,
    /// Size in bytes as stored.
    pub bytes: u64,
    /// Lines skipped with `--lenient`.
    pub skipped_lines: u64,
    /// Records of unknown types.
    pub unknown_records: u64,
}

/// Something a lenient read or a folder walk left out, with the file it
/// concerns; its text (`Display`) is what warnings and `summary.json` show.
#[derive(Debug, Clone)]
pub enum Skip {
    /// A line or record of a file that was read (`--lenient`).
    Line {
        /// File as displayed.
        file: String,
        /// 1-based line; `None` when the message names the place itself (an
        /// event file, a table row).
        line: Option<u64>,
        /// What was wrong.
        message: String,
    },
    /// A walked file (or folder, or database) that no reader recognises.
    Unrecognised {
        /// File as displayed.
        file: String,
        /// What was expected, e.g. ` (expected canonical JSONL or one of: ...)`.
        detail: String,
    },
    /// A walked entry that could not be read or listed (`--lenient`).
    Unreadable {
        /// The entry.
        file: String,
        /// What failed (`cannot read`, `cannot list folder`, ...).
        what: &'static str,
        /// Why.
        source: Arc<std::io::Error>,
    },
}

impl Skip {
    /// The file it concerns, as displayed.
    pub fn file(&self) -> &str {
        match self {
            Skip::Line { file, .. }
            | Skip::Unrecognised { file, .. }
            | Skip::Unreadable { file, .. } => file,
        }
    }

    /// A whole file skipped (unrecognised or unreadable), not one of its lines.
    pub fn is_file(&self) -> bool {
        !matches!(self, Skip::Line { .. })
    }

    /// The reason without the file: `LINE: message` or `message` for a
    /// line, `skipped file (...)` for a file.
    pub fn reason(&self) -> String {
        match self {
            Skip::Line {
                line: Some(line),
                message,
                ..
            } => format!("{line}: {message}"),
            Skip::Line {
                line: None,
                message,
                ..
            } => message.clone(),
            Skip::Unrecognised { detail, .. } => {
                format!("skipped file ({}{detail})", crate::error::UNRECOGNISED)
            }
            Skip::Unreadable { what, source, .. } => format!("skipped file ({what}: {source})"),
        }
    }
}

/// Equal when of the same kind about the same file and place; an I/O error
/// compares by its kind and text.
impl PartialEq for Skip {
    fn eq(&self, other: &Skip) -> bool {
        match (self, other) {
            (
                Skip::Line {
                    file,
                    line,
                    message,
                },
                Skip::Line {
                    file: f2,
                    line: l2,
                    message: m2,
                },
            ) => file == f2 && line == l2 && message == m2,
            (
                Skip::Unrecognised { file, detail },
                Skip::Unrecognised {
                    file: f2,
                    detail: d2,
                },
            ) => file == f2 && detail == d2,
            (
                Skip::Unreadable { file, what, source },
                Skip::Unreadable {
                    file: f2,
                    what: w2,
                    source: s2,
                },
            ) => {
                file == f2
                    && what == w2
                    && source.kind() == s2.kind()
                    && source.to_string() == s2.to_string()
            }
            _ => false,
        }
    }
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Skip::Line {
                file,
                line: Some(line),
                message,
            } => write!(f, "{file}:{line}: {message}"),
            _ => write!(f, "{}: {}", self.file(), self.reason()),
        }
    }
}

/// Everything read in one run.
#[derive(Debug, Clone, Default)]
pub struct Corpus {
    /// Input files in reading order.
    pub files: Vec<SourceFile>,
    /// Sessions sorted by id.
    pub sessions: Vec<Arc<Session>>,
    /// What was skipped: first messages of skipped lines, and skipped files.
    pub skipped: Vec<Skip>,
    /// Entries of walked folders skipped under `--lenient` because they could
    /// not be read (dangling or looping links, unreadable files or folders);
    /// each also has a note in [`Corpus::skipped`].
    pub unreadable: u64,
}

impl Corpus {
    /// Where event `event` (1-based, as detections count) of session
    /// `session` (index into [`Corpus::sessions`]) came from; `None` when
    /// either is out of range. A record converted by `looptune import -o`
    /// names the original native file, not the converted one.
    pub fn provenance(&self, session: usize, event: u32) -> Option<Provenance<'_>> {
        let s = self.sessions.get(session)?;
        let e = s.events.get((event as usize).checked_sub(1)?)?;
        Some(self.origin_provenance(&e.origin))
    }

    /// [`Corpus::provenance`] of one origin.
    pub fn origin_provenance<'a>(&'a self, o: &'a Origin) -> Provenance<'a> {
        provenance_of(o, |f| {
            self.files.get(f as usize).map_or("", |f| f.path.as_str())
        })
    }
    /// Total number of records over all sessions.
    pub fn events(&self) -> usize {
        self.sessions.iter().map(|s| s.events.len()).sum()
    }
    /// Total number of turns over all sessions.
    pub fn turns(&self) -> u64 {
        self.sessions.iter().map(|s| s.turns as u64).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o() -> Origin {
        Origin::default()
    }

    fn content(t: &str) -> (Record, Origin) {
        (
            Record::Content {
                text: t.to_string(),
            },
            o(),
        )
    }

    /// A session grown record by record is, after each record, the session
    /// read whole from the records so far (turns, turn starts, metadata),
    /// and says when the first `turn` record renumbered earlier records.
    #[test]
    fn a_growing_session_is_each_prefix_read_whole() {
        let user = || Record::User {
            text: "x".into(),
            prompt_id: None,
        };
        let model = |m: &str| Record::Session {
            agent: None,
            model: Some(m.into()),
            mode: None,
            meta: None,
        };
        let recs = vec![
            model("a"),
            user(),
            content("a").0,
            Record::ToolResult {
                id: None,
                name: None,
                output: None,
                error: None,
            },
            content("b").0,
            model("b"),
            Record::Turn,
            content("c").0,
            Record::Turn,
        ];
        let mut g = Growing::new("s".into());
        let mut renumbered = Vec::new();
        for (i, r) in recs.iter().enumerate() {
            renumbered.push(g.push(Event::new(r.clone(), o())));
            let whole = Session::from_records(
                "s".into(),
                recs[..=i].iter().map(|r| (r.clone(), o())).collect(),
            );
            let got = g.session();
            let turns = |s: &Session| -> Vec<(u32, bool)> {
                s.events.iter().map(|e| (e.turn, e.starts_turn)).collect()
            };
            assert_eq!(turns(got), turns(&whole), "after record {i}");
            assert_eq!((&got.meta, got.turns), (&whole.meta, whole.turns));
        }
        let at: Vec<usize> = (0..recs.len()).filter(|&i| renumbered[i]).collect();
        assert_eq!(at, [6], "only the first `turn` record renumbers");
    }

    #[test]
    fn implicit_turns_start_after_user_and_tool_result() {
        let recs = vec![
            (
                Record::User {
                    text: "x".into(),
                    prompt_id: None,
                },
                o(),
            ),
            content("a"),
            content("b"),
            (
                Record::ToolCall {
                    name: "t".into(),
                    args: Box::default(),
                    id: None,
                },
                o(),
            ),
            (
                Record::ToolResult {
                    id: None,
                    name: None,
                    output: None,
                    error: None,
                },
                o(),
            ),
            (
                Record::Judge {
                    confidence: 0.5,
                    model: None,
                    analysis: None,
                },
                o(),
            ),
            content("c"),
        ];
        let s = Session::from_records("s".into(), recs);
        let turns: Vec<u32> = s.events.iter().map(|e| e.turn).collect();
        assert_eq!(turns, vec![0, 1, 1, 1, 1, 1, 2]);
        assert_eq!(s.turns, 2);
        assert!(s.events[1].starts_turn && s.events[6].starts_turn);
    }

    /// Token counts near u64::MAX (a corrupt or hostile log) saturate
    /// instead of wrapping (or panicking in a debug build).
    #[test]
    fn token_sums_saturate() {
        let usage = |n: u64| {
            (
                Record::Usage {
                    input_tokens: Some(n),
                    output_tokens: Some(n),
                },
                o(),
            )
        };
        let s = Session::from_records("s".into(), vec![content("a"), usage(u64::MAX), usage(7)]);
        assert_eq!(s.tokens_after(1), u64::MAX);
        assert_eq!(s.tokens_after(2), 14);
    }

    #[test]
    fn explicit_turns_only_when_present() {
        let recs = vec![
            content("a"),
            (Record::Turn, o()),
            content("b"),
            (
                Record::ToolResult {
                    id: None,
                    name: None,
                    output: None,
                    error: None,
                },
                o(),
            ),
            content("c"),
        ];
        let s = Session::from_records("s".into(), recs);
        let turns: Vec<u32> = s.events.iter().map(|e| e.turn).collect();
        assert_eq!(turns, vec![0, 1, 1, 1, 1]);
    }

    #[test]
    fn session_meta_last_wins_per_field() {
        let recs = vec![
            (
                Record::Session {
                    agent: Some("a".into()),
                    model: Some("m1".into()),
                    mode: None,
                    meta: None,
                },
                o(),
            ),
            (
                Record::Session {
                    agent: None,
                    model: Some("m2".into()),
                    mode: Some("plan".into()),
                    meta: None,
                },
                o(),
            ),
        ];
        let s = Session::from_records("s".into(), recs);
        assert_eq!(s.meta.agent.as_deref(), Some("a"));
        assert_eq!(s.meta.model.as_deref(), Some("m2"));
        assert_eq!(s.meta.mode.as_deref(), Some("plan"));
    }

    #[test]
    fn skip_notes_read_as_the_warnings_always_printed_them() {
        let line = Skip::Line {
            file: "a.jsonl".into(),
            line: Some(3),
            message: "not valid JSON".into(),
        };
        assert_eq!(line.to_string(), "a.jsonl:3: not valid JSON");
        assert_eq!(line.reason(), "3: not valid JSON");
        assert!(!line.is_file());
        let named = Skip::Line {
            file: "conv".into(),
            line: None,
            message: "events/e.json: bad".into(),
        };
        assert_eq!(named.to_string(), "conv: events/e.json: bad");
        assert_eq!(named.reason(), "events/e.json: bad");
        let unrecognised = Skip::Unrecognised {
            file: "d/r.json".into(),
            detail: " (expected X)".into(),
        };
        assert_eq!(
            unrecognised.to_string(),
            "d/r.json: skipped file (not a recognised session log (expected X))"
        );
        assert!(unrecognised.is_file());
        let unreadable = Skip::Unreadable {
            file: "d/x".into(),
            what: "cannot read",
            source: Arc::new(std::io::Error::other("boom")),
        };
        assert_eq!(
            unreadable.to_string(),
            "d/x: skipped file (cannot read: boom)"
        );
        assert!(unreadable.is_file() && unreadable.file() == "d/x");
        assert_eq!(unreadable, unreadable.clone());
        assert_ne!(unreadable, unrecognised);
    }
}
