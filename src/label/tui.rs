//! The labeller's state, keys and screen. The state machine ([`App::key`])
//! knows nothing of terminals, so it is tested with plain key codes and
//! ratatui's `TestBackend`; the terminal loop lives in [`super::run_terminal`].

use super::queue::Ranked;
use super::store::{LabelStore, Undo};
use crate::detect;
use crate::error::Result;
use crate::event::{Corpus, Label, Origin, Record, Session};
use crate::replay::Replay;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Clear, List, ListItem, ListState, Paragraph, Wrap};
use ratatui::Frame;

/// Characters of a call's arguments, a result or a text shown per line.
const HEAD: usize = 160;

/// One turn as the screen shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnView {
    /// Turn number (spec numbering; 0 is what comes before the first turn).
    pub turn: u32,
    /// Where its records are, e.g. `a.jsonl:12-19`.
    pub place: String,
    /// What each family detected here: `family: kind (profiles)`.
    pub detections: Vec<String>,
    /// Calls, result heads and text heads, one line each.
    pub lines: Vec<String>,
}

/// One session as the screen shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionView {
    /// Session id.
    pub id: String,
    /// Its file (of its first record).
    pub file: String,
    /// Agent and model, when known.
    pub about: String,
    /// Why it is where it is in the queue.
    pub reason: String,
    /// Configurations that flag it, of how many (shown in the queue).
    pub flagged: (usize, usize),
    /// Its turns.
    pub turns: Vec<TurnView>,
}

/// `file:line` (or `file:first-last`) of records, from their origins. The one
/// place that turns provenance into text, so richer provenance (JSON pointers
/// for document formats) changes only this function.
pub fn place(corpus: &Corpus, origins: &[Origin]) -> String {
    let Some(first) = origins.first() else {
        return String::new();
    };
    // Where the records are: the original file (through a converted file's
    // `src`), its line range, or the JSON pointer of a whole-document format.
    let first_p = corpus.origin_provenance(first);
    // The file name only: the session header shows the whole path once.
    let file = std::path::Path::new(first_p.file)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(first_p.file)
        .to_string();
    let provs: Vec<_> = origins
        .iter()
        .map(|o| corpus.origin_provenance(o))
        .filter(|p| p.file == first_p.file)
        .collect();
    let lines: Vec<u32> = provs.iter().filter_map(|p| p.line).collect();
    match (lines.iter().min(), lines.iter().max()) {
        (Some(a), Some(b)) if a == b => format!("{file}:{a}"),
        (Some(a), Some(b)) => format!("{file}:{a}-{b}"),
        _ => match first_p.pointer {
            Some(p) => format!("{file}#{p}"),
            None => file,
        },
    }
}

/// The first `n` characters of `s` on one line (newlines shown as `⏎`).
fn head(s: &str, n: usize) -> String {
    let flat: String = s
        .trim()
        .chars()
        .map(|c| match c {
            '\n' => '⏎',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    match flat.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &flat[..i]),
        None => flat,
    }
}

/// Rows a long line of a turn may wrap over before it is cut.
const WRAP: usize = 4;

/// `s` as rows of at most `width` characters (newlines shown as `⏎`), at
/// most `max` rows, the last cut with `…` when there is more.
fn wrap(s: &str, width: usize, max: usize) -> Vec<String> {
    let flat: Vec<char> = head(s, usize::MAX).chars().collect();
    let mut rows: Vec<String> = flat
        .chunks(width.max(1))
        .take(max)
        .map(|c| c.iter().collect())
        .collect();
    if flat.len() > width.max(1) * max {
        if let Some(last) = rows.last_mut() {
            last.pop();
            last.push('…');
        }
    }
    if rows.is_empty() {
        rows.push(String::new());
    }
    rows
}

/// Build the view of one session: its turns with every family's detections.
pub fn session_view(corpus: &Corpus, replay: &Replay, ranked: &Ranked) -> SessionView {
    let s: &Session = &corpus.sessions[ranked.session];
    let mut turns: Vec<TurnView> = Vec::new();
    let mut origins: Vec<Vec<Origin>> = Vec::new();
    let mut text = String::new();
    let flush = |text: &mut String, lines: &mut Vec<String>| {
        if !text.trim().is_empty() {
            lines.push(format!("text: {}", head(text, HEAD)));
        }
        text.clear();
    };
    for e in &s.events {
        if turns.last().is_none_or(|t| t.turn != e.turn) {
            if let Some(t) = turns.last_mut() {
                flush(&mut text, &mut t.lines);
            }
            turns.push(TurnView {
                turn: e.turn,
                place: String::new(),
                detections: Vec::new(),
                lines: Vec::new(),
            });
            origins.push(Vec::new());
        }
        origins.last_mut().expect("pushed").push(e.origin.clone());
        let lines = &mut turns.last_mut().expect("pushed").lines;
        let line = match &e.record {
            Record::Content { text: t } => {
                // Stream chunks form one text.
                text.push_str(t);
                continue;
            }
            Record::User { text: t, .. } => format!("user: {}", head(t, HEAD)),
            Record::Thought { text: t } => format!("thought: {}", head(t, HEAD)),
            Record::ToolCall { name, args, .. } => format!(
                "call {name} {}",
                head(
                    &serde_json::Value::Object((**args).clone()).to_string(),
                    HEAD
                )
            ),
            Record::ToolResult { output, error, .. } => format!(
                "result{}: {}",
                if *error == Some(true) { " (error)" } else { "" },
                head(output.as_deref().unwrap_or(""), HEAD)
            ),
            Record::LoopDetected { kind, .. } => format!(
                "agent's own detector: {}",
                kind.as_deref().unwrap_or("loop")
            ),
            _ => continue,
        };
        flush(&mut text, lines);
        lines.push(line);
    }
    if let Some(t) = turns.last_mut() {
        flush(&mut text, &mut t.lines);
    }
    for (t, o) in turns.iter_mut().zip(&origins) {
        t.place = place(corpus, o);
    }
    // Detections, per turn and family: the kinds and how many profiles.
    for f in detect::families() {
        let mut at: std::collections::BTreeMap<(u32, &str), usize> = Default::default();
        for (cfg, outs) in replay.configs.iter().zip(&replay.outcomes) {
            if cfg.family != f.name() {
                continue;
            }
            if let Some(d) = outs[ranked.session].first() {
                *at.entry((d.turn, d.kind)).or_default() += 1;
            }
        }
        let profiles = f.profiles().len();
        for ((turn, kind), k) in at {
            if let Some(t) = turns.iter_mut().find(|t| t.turn == turn) {
                t.detections
                    .push(format!("{}: {kind} ({k}/{profiles})", f.name()));
            }
        }
    }
    let file = s
        .events
        .first()
        .and_then(|e| corpus.files.get(e.origin.file as usize))
        .map_or(String::new(), |f| f.path.clone());
    let about = [s.meta.agent.as_deref(), s.meta.model.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" / ");
    SessionView {
        id: s.id.clone(),
        file,
        about,
        reason: ranked.reason(),
        flagged: (ranked.flagged, ranked.configs),
        turns,
    }
}

/// A key, as the state machine sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// A printable key.
    Char(char),
    /// Arrow up.
    Up,
    /// Arrow down.
    Down,
    /// Escape.
    Esc,
    /// Page down.
    PageDown,
    /// Page up.
    PageUp,
    /// Enter.
    Enter,
    /// Backspace.
    Backspace,
}

/// Turns a PageDown or PageUp moves.
pub const PAGE: usize = 10;

/// One decision, kept for `u`.
#[derive(Debug)]
struct Done {
    undo: Undo,
    /// Queue position the decision was made at.
    pos: usize,
}

/// The labeller's whole state.
pub struct App {
    /// Sessions in queue order: unlabelled first, then those already labelled.
    pub sessions: Vec<SessionView>,
    /// Inline labels by queue position (the file wins over them, as in `sweep`).
    inline: Vec<Option<Label>>,
    /// Queue position of the session on screen.
    pub pos: usize,
    /// Index into the current session's turns.
    pub cursor: usize,
    store: LabelStore,
    done: Vec<Done>,
    /// One line of feedback (what was written, or an error).
    pub status: String,
    /// The help overlay is open.
    pub help: bool,
    /// `q` was pressed.
    pub quit: bool,
    /// `/` was pressed: the search being typed.
    pub search: Option<String>,
    /// The last search, for `/` then Enter.
    last_search: String,
    /// `e` was pressed: the note being typed.
    pub editing: Option<String>,
    /// A label changed on a session with a note: (session, its queue
    /// position, the note), until `y` keeps it or `n` clears it.
    pub ask_note: Option<(String, usize, String)>,
}

impl App {
    /// Build the queue: ranked sessions, those without a label first.
    pub fn new(corpus: &Corpus, replay: &Replay, ranked: &[Ranked], store: LabelStore) -> App {
        let labelled = |r: &Ranked| {
            let s = &corpus.sessions[r.session];
            store.get(&s.id).is_some() || s.inline_label.is_some()
        };
        let order: Vec<&Ranked> = ranked
            .iter()
            .filter(|r| !labelled(r))
            .chain(ranked.iter().filter(|r| labelled(r)))
            .collect();
        let mut app = App {
            sessions: order
                .iter()
                .map(|r| session_view(corpus, replay, r))
                .collect(),
            inline: order
                .iter()
                .map(|r| corpus.sessions[r.session].inline_label)
                .collect(),
            pos: 0,
            cursor: 0,
            store,
            done: Vec::new(),
            status: String::new(),
            help: false,
            quit: false,
            search: None,
            last_search: String::new(),
            editing: None,
            ask_note: None,
        };
        app.cursor = app.first_cursor();
        app
    }

    /// The label of the session at queue position `i` (file first, then inline).
    pub fn label_at(&self, i: usize) -> Option<Label> {
        self.store.get(&self.sessions[i].id).or(self.inline[i])
    }

    /// Sessions labelled, and sessions in all.
    pub fn progress(&self) -> (usize, usize) {
        let n = (0..self.sessions.len())
            .filter(|&i| self.label_at(i).is_some())
            .count();
        (n, self.sessions.len())
    }

    /// The turn under the cursor.
    pub fn turn(&self) -> Option<&TurnView> {
        self.sessions.get(self.pos)?.turns.get(self.cursor)
    }

    /// Start on the first real turn (turn 0 holds what precedes the model).
    fn first_cursor(&self) -> usize {
        self.sessions
            .get(self.pos)
            .map_or(0, |s| s.turns.iter().position(|t| t.turn > 0).unwrap_or(0))
    }

    fn go(&mut self, pos: usize) {
        if pos < self.sessions.len() {
            self.pos = pos;
            self.cursor = self.first_cursor();
        }
    }

    /// After a decision: the next session without a label, else the next one.
    fn advance(&mut self) {
        let n = self.sessions.len();
        let next = (1..n)
            .map(|k| (self.pos + k) % n)
            .find(|&i| self.label_at(i).is_none());
        match next {
            Some(i) => self.go(i),
            None => {
                self.go((self.pos + 1).min(n.saturating_sub(1)));
                self.status.push_str("; every session is labelled");
            }
        }
    }

    fn decide(&mut self, label: Label) -> Result<()> {
        let id = self.sessions[self.pos].id.clone();
        let before = self.store.get(&id);
        let undo = self.store.set(&id, label)?;
        self.done.push(Done {
            undo,
            pos: self.pos,
        });
        self.status = format!("saved {id}: {}", describe(Some(label)));
        // A note written for the old label may now contradict the new one.
        if before.is_some_and(|b| b != label) {
            if let Some(note) = self.store.field(&id, "note") {
                self.status = format!(
                    "y/n: keep the note \"{note}\" (written when {id} was {})?",
                    describe(before)
                );
                self.ask_note = Some((id, self.pos, note));
            }
        }
        self.advance();
        Ok(())
    }

    /// `y` keeps the note of a relabelled session, `n` clears it; any other
    /// key keeps it and does what it does (a `u` pressed at once undoes the
    /// relabelling, as the user meant, instead of answering "keep").
    fn note_answer(&mut self, key: Key) -> Result<()> {
        let Some((id, pos, _)) = self.ask_note.take() else {
            return Ok(());
        };
        match key {
            Key::Char('n') => {
                if let Some(undo) = self.store.set_field(&id, "note", "")? {
                    self.done.push(Done { undo, pos });
                }
                self.status = format!("cleared the note of {id}");
            }
            Key::Char('y') => self.status = format!("kept the note of {id}"),
            other => {
                self.status = format!("kept the note of {id}");
                return self.key_inner(other);
            }
        }
        Ok(())
    }

    /// A key while a note is typed: text, Backspace, Enter (save), Escape (cancel).
    fn note_key(&mut self, key: Key) -> Result<()> {
        let Some(text) = self.editing.as_mut() else {
            return Ok(());
        };
        match key {
            Key::Char(c) => text.push(c),
            Key::Backspace => {
                text.pop();
            }
            Key::Esc => {
                self.editing = None;
                self.status = "note unchanged".into();
            }
            Key::Enter => {
                let text = self.editing.take().unwrap_or_default();
                let id = self.sessions[self.pos].id.clone();
                if let Some(undo) = self.store.set_field(&id, "note", &text)? {
                    self.done.push(Done {
                        undo,
                        pos: self.pos,
                    });
                }
                self.status = format!("saved the note of {id}");
            }
            _ => {}
        }
        Ok(())
    }

    /// Handle one key. Errors (the file could not be written) are shown on the
    /// status line and the state is unchanged.
    pub fn key(&mut self, key: Key) {
        if let Err(e) = self.key_inner(key) {
            self.status = format!("error: {e}");
        }
    }

    /// A key while a search is typed: text, Backspace, Enter (search),
    /// Escape (cancel).
    fn search_key(&mut self, key: Key) {
        let Some(q) = self.search.as_mut() else {
            return;
        };
        match key {
            Key::Char(c) => q.push(c),
            Key::Backspace => {
                q.pop();
            }
            Key::Esc => self.search = None,
            Key::Enter => {
                let q = self.search.take().unwrap_or_default();
                let q = if q.is_empty() {
                    self.last_search.clone()
                } else {
                    q
                };
                self.find(&q);
                self.last_search = q;
            }
            _ => {}
        }
    }

    /// Move to the next turn (after the cursor, wrapping) whose calls, text,
    /// detections or place contain `q`, ignoring case.
    fn find(&mut self, q: &str) {
        let Some(s) = self.sessions.get(self.pos) else {
            return;
        };
        let want = q.to_lowercase();
        let n = s.turns.len();
        let hit = (1..=n).map(|k| (self.cursor + k) % n).find(|&i| {
            let t = &s.turns[i];
            t.lines
                .iter()
                .chain(&t.detections)
                .chain(std::iter::once(&t.place))
                .any(|l| l.to_lowercase().contains(&want))
        });
        match hit {
            Some(i) => {
                self.cursor = i;
                self.status = format!("/{q}: turn {}", s.turns[i].turn);
            }
            None => self.status = format!("/{q}: not found in this session"),
        }
    }

    /// The next (`forward`) or previous turn with a detection marker.
    fn marker(&mut self, forward: bool) {
        let turns = &self.sessions[self.pos].turns;
        let marked = |i: &usize| !turns[*i].detections.is_empty();
        let found = if forward {
            (self.cursor + 1..turns.len()).find(marked)
        } else {
            (0..self.cursor).rev().find(marked)
        };
        match found {
            Some(i) => self.cursor = i,
            None => {
                self.status = format!(
                    "no detection {} this turn",
                    if forward { "after" } else { "before" }
                )
            }
        }
    }

    fn key_inner(&mut self, key: Key) -> Result<()> {
        if self.ask_note.is_some() {
            return self.note_answer(key);
        }
        if self.editing.is_some() {
            return self.note_key(key);
        }
        if self.search.is_some() {
            self.search_key(key);
            return Ok(());
        }
        if self.help {
            // Any key closes the help; `q` still quits.
            self.help = false;
            if key == Key::Char('q') {
                self.quit = true;
            }
            return Ok(());
        }
        if self.sessions.is_empty() {
            self.quit = matches!(key, Key::Char('q') | Key::Esc);
            return Ok(());
        }
        let turns = self.sessions[self.pos].turns.len();
        match key {
            Key::Char('j') | Key::Down => {
                self.cursor = (self.cursor + 1).min(turns.saturating_sub(1))
            }
            Key::Char('k') | Key::Up => self.cursor = self.cursor.saturating_sub(1),
            Key::PageDown => self.cursor = (self.cursor + PAGE).min(turns.saturating_sub(1)),
            Key::PageUp => self.cursor = self.cursor.saturating_sub(PAGE),
            Key::Char('g') => self.cursor = self.first_cursor(),
            Key::Char('G') => self.cursor = turns.saturating_sub(1),
            Key::Char(']') => self.marker(true),
            Key::Char('[') => self.marker(false),
            Key::Char('/') => self.search = Some(String::new()),
            Key::Char('e') => {
                let id = &self.sessions[self.pos].id;
                if self.store.get(id).is_some() {
                    self.editing = Some(self.store.field(id, "note").unwrap_or_default());
                } else {
                    self.status = "label the session first: e edits the note of its row".into();
                }
            }
            Key::Char('n') => self.go(self.pos + 1),
            Key::Char('p') => self.go(self.pos.saturating_sub(1)),
            Key::Char('l') => match self.turn().map(|t| t.turn) {
                Some(t) if t > 0 => self.decide(Label {
                    is_loop: true,
                    onset_turn: Some(t),
                })?,
                _ => self.status = "move the cursor to the turn where the loop starts".into(),
            },
            Key::Char('c') => self.decide(Label {
                is_loop: false,
                onset_turn: None,
            })?,
            Key::Char('s') => {
                self.status = format!("skipped {}", self.sessions[self.pos].id);
                self.advance();
            }
            Key::Char('u') => match self.done.last() {
                Some(d) => {
                    // Popped only once the file is written, so a failed write can be retried.
                    self.store.undo(d.undo.clone())?;
                    let d = self.done.pop().expect("just seen");
                    let id = d.undo.session().to_string();
                    self.go(d.pos);
                    self.status = format!("undone: {id} is {}", describe(self.label_at(d.pos)));
                }
                None => self.status = "nothing to undo".into(),
            },
            Key::Char('?') => self.help = true,
            Key::Char('q') | Key::Esc => self.quit = true,
            _ => {}
        }
        Ok(())
    }

    /// Draw the whole screen.
    pub fn draw(&self, f: &mut Frame) {
        let area = f.area();
        let rows = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Min(3), Constraint::Length(1)])
            .split(area);
        let cols = Layout::default()
            .direction(Direction::Horizontal)
            // The queue never takes more than a third: the turns need the room.
            .constraints([
                Constraint::Length((area.width / 3).min(40)),
                Constraint::Min(20),
            ])
            .split(rows[0]);
        self.draw_queue(f, cols[0]);
        self.draw_session(f, cols[1]);
        f.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled(
                    " j/k turn  n/p session  l loop  c clean  s skip  u undo  ? help  q quit ",
                    Style::default().add_modifier(Modifier::REVERSED),
                ),
                Span::raw(" "),
                Span::raw(match (&self.search, &self.editing) {
                    (Some(q), _) => format!("/{q}"),
                    (_, Some(n)) => format!("note (Enter saves, Esc cancels): {n}_"),
                    _ => self.status.clone(),
                }),
            ])),
            rows[1],
        );
        if self.help {
            let w = area.width.min(60);
            let h = area.height.min(HELP.lines().count() as u16 + 2);
            let r = Rect::new(
                area.x + (area.width - w) / 2,
                area.y + (area.height - h) / 2,
                w,
                h,
            );
            f.render_widget(Clear, r);
            f.render_widget(
                Paragraph::new(HELP).block(Block::default().borders(Borders::ALL).title(" help ")),
                r,
            );
        }
    }

    fn draw_queue(&self, f: &mut Frame, area: Rect) {
        let (done, total) = self.progress();
        let items: Vec<ListItem> = self
            .sessions
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mark = match self.label_at(i) {
                    Some(l) if l.is_loop => "L",
                    Some(_) => "C",
                    None => " ",
                };
                ListItem::new(format!("{mark} {:>2} {}", s.flagged.0, s.id))
            })
            .collect();
        let mut state = ListState::default().with_selected(Some(self.pos));
        f.render_stateful_widget(
            List::new(items)
                .block(
                    Block::default()
                        .borders(Borders::ALL)
                        .title(format!(" queue {done}/{total} labelled "))
                        .title_bottom(" L loop  C clean  N: configs flagging "),
                )
                .highlight_symbol(">")
                .highlight_style(Style::default().add_modifier(Modifier::REVERSED)),
            area,
            &mut state,
        );
    }

    fn draw_session(&self, f: &mut Frame, area: Rect) {
        let Some(s) = self.sessions.get(self.pos) else {
            f.render_widget(
                Paragraph::new("no sessions").block(Block::default().borders(Borders::ALL)),
                area,
            );
            return;
        };
        let parts = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Length(6), Constraint::Min(3)])
            .split(area);
        let label = describe(self.label_at(self.pos));
        let extra = |name: &str| self.store.field(&s.id, name).unwrap_or_else(|| "-".into());
        let notes = format!(
            "confidence: {}   note: {}",
            extra("confidence"),
            extra("note")
        );
        let header = Text::from(vec![
            Line::from(vec![
                Span::styled(s.id.clone(), Style::default().add_modifier(Modifier::BOLD)),
                Span::raw(format!("  {}", s.about)),
            ]),
            Line::from(format!("label: {label}   queue: {}", s.reason)),
            Line::from(notes),
            Line::from(s.file.clone()),
        ]);
        f.render_widget(
            Paragraph::new(header).wrap(Wrap { trim: false }).block(
                Block::default().borders(Borders::ALL).title(format!(
                    " session {}/{} ",
                    self.pos + 1,
                    self.sessions.len()
                )),
            ),
            parts[0],
        );
        let width = parts[1].width.saturating_sub(4) as usize;
        let items: Vec<ListItem> = s
            .turns
            .iter()
            .map(|t| {
                let mut lines = vec![Line::from(vec![
                    Span::styled(
                        format!("turn {}", t.turn),
                        Style::default().add_modifier(Modifier::BOLD),
                    ),
                    Span::raw(format!("  {}", t.place)),
                ])];
                for d in &t.detections {
                    lines.push(Line::from(Span::styled(
                        format!("  ▶ {d}"),
                        Style::default().fg(Color::Red),
                    )));
                }
                // A turn taller than the screen could never be seen whole.
                let room = (parts[1].height as usize)
                    .saturating_sub(4 + t.detections.len())
                    .max(3);
                // Long lines wrap (up to WRAP rows each); whole lines are
                // shown while they fit, and the rest are counted.
                let wrapped: Vec<Vec<String>> = t
                    .lines
                    .iter()
                    .map(|l| wrap(l, width.max(10), WRAP))
                    .collect();
                let total: usize = wrapped.iter().map(Vec::len).sum();
                let cap = if total > room { room - 1 } else { room };
                let (mut used, mut shown) = (0, 0);
                for rows in &wrapped {
                    if used + rows.len() > cap {
                        break;
                    }
                    lines.extend(rows.iter().map(|r| Line::from(format!("  {r}"))));
                    used += rows.len();
                    shown += 1;
                }
                if shown < t.lines.len() {
                    lines.push(Line::from(format!("  … {} more", t.lines.len() - shown)));
                }
                ListItem::new(Text::from(lines))
            })
            .collect();
        let mut state = ListState::default().with_selected(Some(self.cursor));
        f.render_stateful_widget(
            List::new(items)
                .block(Block::default().borders(Borders::ALL).title(" turns "))
                .highlight_symbol("> ")
                .highlight_style(Style::default().bg(Color::DarkGray)),
            parts[1],
            &mut state,
        );
    }
}

/// A label in words.
fn describe(l: Option<Label>) -> String {
    match l {
        Some(Label {
            is_loop: true,
            onset_turn,
        }) => format!(
            "loop from turn {}",
            onset_turn.map_or("?".into(), |t| t.to_string())
        ),
        Some(_) => "clean".into(),
        None => "not labelled".into(),
    }
}

const HELP: &str = "j / k, arrows  next / previous turn
PgDn / PgUp    10 turns down / up
g / G          first / last turn
] / [          next / previous turn with a detection
/ TEXT Enter   next turn containing TEXT (/ Enter: again)
n / p          next / previous session
l              label loop, onset = turn under cursor
c              label clean
s              skip this session
e              edit the note (Enter saves, Esc cancels)
u              undo the last label or note
?              this help
q              quit (every label is already saved)

Sessions without a label come first, those the
detector configurations disagree on most at the top.";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::label::queue;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    use std::sync::Arc;

    fn corpus() -> Corpus {
        // Session "loopy": five identical calls; "calm": one call and a text.
        let mut recs = vec![];
        let o = |line| Origin::at(0, line);
        recs.push((
            Record::User {
                text: "fix it".into(),
                prompt_id: None,
            },
            o(1),
        ));
        for i in 0..6 {
            let mut args = serde_json::Map::new();
            args.insert("path".into(), "a.rs".into());
            recs.push((
                Record::ToolCall {
                    name: "read".into(),
                    args: args.into(),
                    id: None,
                },
                o(2 + 2 * i),
            ));
            recs.push((
                Record::ToolResult {
                    id: None,
                    name: None,
                    output: Some("fn main() {}\nmore".into()),
                    error: None,
                },
                o(3 + 2 * i),
            ));
        }
        let loopy = Session::from_records("loopy".into(), recs);
        let calm = Session::from_records(
            "calm".into(),
            vec![
                (
                    Record::User {
                        text: "hi".into(),
                        prompt_id: None,
                    },
                    Origin::at(1, 1),
                ),
                (Record::Content { text: "hel".into() }, Origin::at(1, 2)),
                (Record::Content { text: "lo".into() }, Origin::at(1, 3)),
            ],
        );
        let file = |p: &str| crate::event::SourceFile {
            path: p.into(),
            format: "canonical".into(),
            sha256: String::new(),
            bytes: 0,
            skipped_lines: 0,
            unknown_records: 0,
        };
        Corpus {
            unreadable: Default::default(),
            files: vec![file("runs/loopy.jsonl"), file("calm.jsonl")],
            sessions: vec![Arc::new(calm), Arc::new(loopy)],
            skipped: vec![],
        }
    }

    fn app(dir: &std::path::Path, existing: Option<&str>) -> App {
        let p = dir.join("labels.csv");
        if let Some(t) = existing {
            std::fs::write(&p, t).unwrap();
        }
        let c = corpus();
        let r = queue::replay_stock(&c).unwrap();
        let ranked = queue::rank(&c, &r);
        App::new(&c, &r, &ranked, LabelStore::open(&p).unwrap())
    }

    fn screen(app: &App) -> String {
        let mut t = Terminal::new(TestBackend::new(120, 40)).unwrap();
        t.draw(|f| app.draw(f)).unwrap();
        let buf = t.backend().buffer().clone();
        let mut s = String::new();
        for y in 0..buf.area.height {
            for x in 0..buf.area.width {
                s.push_str(buf[(x, y)].symbol());
            }
            s.push('\n');
        }
        s
    }

    #[test]
    fn view_has_turns_calls_results_texts_and_places() {
        let c = corpus();
        let r = queue::replay_stock(&c).unwrap();
        let ranked = queue::rank(&c, &r);
        let loopy = ranked
            .iter()
            .find(|x| c.sessions[x.session].id == "loopy")
            .unwrap();
        let v = session_view(&c, &r, loopy);
        assert_eq!(v.file, "runs/loopy.jsonl");
        assert_eq!(v.turns[0].turn, 0);
        assert_eq!(v.turns[0].lines, vec!["user: fix it"]);
        assert_eq!(v.turns[1].place, "loopy.jsonl:2-3");
        assert_eq!(
            v.turns[1].lines,
            vec!["call read {\"path\":\"a.rs\"}", "result: fn main() {}⏎more"]
        );
        // Gemini's stock tool-call threshold is 5 identical calls: turn 5.
        assert!(
            v.turns[5]
                .detections
                .iter()
                .any(|d| d.starts_with("gemini: tool_call")),
            "{:?}",
            v.turns
        );
        let calm = ranked
            .iter()
            .find(|x| c.sessions[x.session].id == "calm")
            .unwrap();
        let v = session_view(&c, &r, calm);
        assert_eq!(v.turns[1].lines, vec!["text: hello"]);
        assert_eq!(v.turns[1].place, "calm.jsonl:2-3");
    }

    #[test]
    fn keys_for_long_sessions_page_jump_find_markers_and_search() {
        let d = tempfile::tempdir().unwrap();
        let mut a = app(d.path(), None);
        let last = a.sessions[0].turns.len() - 1;
        let first = a.cursor;
        a.key(Key::Char('G'));
        assert_eq!(a.cursor, last);
        a.key(Key::Char('g'));
        assert_eq!(a.cursor, first);
        a.key(Key::PageDown);
        assert_eq!(a.cursor, (first + PAGE).min(last));
        a.key(Key::PageUp);
        assert_eq!(a.cursor, 0);
        // ] and [: the turns with a detection marker, in order.
        let marked: Vec<usize> = (0..=last)
            .filter(|&i| !a.sessions[0].turns[i].detections.is_empty())
            .collect();
        assert!(!marked.is_empty(), "the loop session has detections");
        for &m in &marked {
            a.key(Key::Char(']'));
            assert_eq!(a.cursor, m);
        }
        a.key(Key::Char(']'));
        assert!(a.status.contains("no detection after"), "{}", a.status);
        a.key(Key::Char('G'));
        a.key(Key::Char('['));
        assert_eq!(
            a.cursor,
            *marked.iter().rev().find(|&&m| m < last).unwrap_or(&last)
        );
        // / TEXT Enter: the next turn holding TEXT, whatever its case.
        let target = last;
        let text = a.sessions[0].turns[target].lines[0].to_uppercase();
        a.key(Key::Char('g'));
        a.key(Key::Char('/'));
        for c in text.chars() {
            a.key(Key::Char(c));
        }
        a.key(Key::Char('x'));
        a.key(Key::Backspace);
        assert_eq!(a.search.as_deref(), Some(text.as_str()));
        a.key(Key::Enter);
        assert!(a.search.is_none());
        let found = a.cursor;
        assert!(a.sessions[0].turns[found].lines[0]
            .to_uppercase()
            .contains(&text));
        // Keys typed into the search do nothing else (no `l` label, no quit).
        a.key(Key::Char('/'));
        a.key(Key::Char('q'));
        a.key(Key::Char('l'));
        a.key(Key::Esc);
        assert!(!a.quit && a.search.is_none());
        assert!(!d.path().join("labels.csv").exists() || a.progress().0 == 0);
        a.key(Key::Char('/'));
        a.key(Key::Char('z'));
        a.key(Key::Char('z'));
        a.key(Key::Char('z'));
        a.key(Key::Enter);
        assert!(a.status.contains("not found"), "{}", a.status);
        // The help tells the truth: j goes to the next turn.
        assert!(HELP.contains("j / k, arrows  next / previous turn"));
        for k in ["PgDn / PgUp", "g / G", "] / [", "/ TEXT"] {
            assert!(HELP.contains(k), "{k}");
        }
    }

    #[test]
    fn notes_and_confidence_are_shown_edited_and_questioned_when_the_label_changes() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("labels.csv");
        let mut a = app(
            d.path(),
            Some("session,label,onset_turn,confidence,note\nloopy,loop,2,high,repeats read\n"),
        );
        a.go(a.sessions.iter().position(|s| s.id == "loopy").unwrap());
        let sc = screen(&a);
        assert!(sc.contains("confidence: high   note: repeats read"), "{sc}");
        // e: edit the note; Backspace, Enter saves; u undoes it.
        a.key(Key::Char('e'));
        assert_eq!(a.editing.as_deref(), Some("repeats read"));
        for _ in 0.."read".len() {
            a.key(Key::Backspace);
        }
        for c in "the same path".chars() {
            a.key(Key::Char(c));
        }
        a.key(Key::Enter);
        assert!(std::fs::read_to_string(&p)
            .unwrap()
            .contains("loopy,loop,2,high,repeats the same path\n"));
        a.key(Key::Char('u'));
        assert!(std::fs::read_to_string(&p)
            .unwrap()
            .contains("loopy,loop,2,high,repeats read\n"));
        // Esc leaves the note as it was.
        a.key(Key::Char('e'));
        a.key(Key::Char('x'));
        a.key(Key::Esc);
        assert!(std::fs::read_to_string(&p)
            .unwrap()
            .contains(",repeats read\n"));
        // Relabelling asks about the old note: n clears it, and u puts it back.
        a.key(Key::Char('c'));
        assert!(a.ask_note.is_some(), "{}", a.status);
        assert!(
            a.status
                .starts_with("y/n: keep the note \"repeats read\" (written when loopy was loop"),
            "{}",
            a.status
        );
        a.key(Key::Char('n'));
        assert!(std::fs::read_to_string(&p)
            .unwrap()
            .contains("loopy,clean,,high,\n"));
        a.key(Key::Char('u'));
        assert!(std::fs::read_to_string(&p)
            .unwrap()
            .contains("loopy,clean,,high,repeats read\n"));
        // y keeps it.
        a.go(a.sessions.iter().position(|s| s.id == "loopy").unwrap());
        a.key(Key::Char('j'));
        a.key(Key::Char('l'));
        a.key(Key::Char('y'));
        assert!(a.ask_note.is_none());
        assert!(std::fs::read_to_string(&p)
            .unwrap()
            .contains(",repeats read\n"));
        // Any other key keeps the note and does its own work: `u` undoes
        // the relabelling it followed.
        a.go(a.sessions.iter().position(|s| s.id == "loopy").unwrap());
        let before = std::fs::read_to_string(&p).unwrap();
        a.key(Key::Char('c'));
        assert!(a.ask_note.is_some(), "{}", a.status);
        a.key(Key::Char('u'));
        assert!(a.ask_note.is_none());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), before);
        // A session without a row has no note to edit.
        a.go(a.sessions.iter().position(|s| s.id == "calm").unwrap());
        a.key(Key::Char('e'));
        assert!(a.editing.is_none() && a.status.contains("label the session first"));
        // A new note column is added to a file without one.
        let d2 = tempfile::tempdir().unwrap();
        let mut b = app(d2.path(), Some("session,label,onset_turn\ncalm,clean,\n"));
        b.go(b.sessions.iter().position(|s| s.id == "calm").unwrap());
        b.key(Key::Char('e'));
        for c in "fine".chars() {
            b.key(Key::Char(c));
        }
        b.key(Key::Enter);
        assert_eq!(
            std::fs::read_to_string(d2.path().join("labels.csv")).unwrap(),
            "session,label,onset_turn,note\ncalm,clean,,fine\n"
        );
    }

    #[test]
    fn keys_label_loop_at_cursor_clean_skip_and_undo() {
        let d = tempfile::tempdir().unwrap();
        let mut a = app(d.path(), None);
        assert_eq!(a.sessions[0].id, "loopy", "flagged first");
        assert_eq!(a.progress(), (0, 2));
        assert_eq!(a.turn().unwrap().turn, 1);
        a.key(Key::Char('j'));
        a.key(Key::Down);
        a.key(Key::Char('k'));
        a.key(Key::Char('j'));
        assert_eq!(a.turn().unwrap().turn, 3);
        a.key(Key::Char('l'));
        assert_eq!(a.pos, 1, "moves on to the next unlabelled session");
        let p = d.path().join("labels.csv");
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "session,label,onset_turn\nloopy,loop,3\n"
        );
        a.key(Key::Char('c'));
        assert_eq!(a.progress(), (2, 2));
        let (m, _) = crate::input::labels::read_labels_file(&p, false, &mut vec![]).unwrap();
        assert!(!m["calm"].is_loop);
        a.key(Key::Char('u'));
        assert_eq!(a.pos, 1);
        assert_eq!(a.progress(), (1, 2));
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "session,label,onset_turn\nloopy,loop,3\n"
        );
        a.key(Key::Char('s'));
        assert_eq!(a.pos, 1, "the only unlabelled session stays");
        a.key(Key::Char('p'));
        assert_eq!(a.pos, 0);
        // Change an existing label.
        a.key(Key::Char('c'));
        assert!(std::fs::read_to_string(&p)
            .unwrap()
            .contains("loopy,clean,\n"));
        a.key(Key::Char('u'));
        a.key(Key::Char('u'));
        a.key(Key::Char('u'));
        assert!(a.status.contains("nothing to undo"), "{}", a.status);
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "session,label,onset_turn\n"
        );
        assert!(!a.quit);
        a.key(Key::Char('?'));
        assert!(a.help);
        a.key(Key::Char('x'));
        assert!(!a.help && !a.quit);
        a.key(Key::Char('q'));
        assert!(a.quit);
    }

    #[test]
    fn loop_needs_a_turn_and_labelled_sessions_come_last() {
        let d = tempfile::tempdir().unwrap();
        let mut a = app(
            d.path(),
            Some("session,label,onset_turn,note\nloopy,loop,5,seen\n"),
        );
        assert_eq!(a.sessions[0].id, "calm");
        assert_eq!(a.sessions[1].id, "loopy");
        a.key(Key::Char('k'));
        assert_eq!(a.turn().unwrap().turn, 0);
        a.key(Key::Char('l'));
        assert_eq!(a.progress(), (1, 2), "no loop label at turn 0");
        assert!(a.status.contains("move the cursor"));
        a.key(Key::Char('n'));
        assert!(screen(&a).contains("label: loop from turn 5"));
    }

    #[test]
    fn screen_shows_progress_turns_detections_and_help() {
        let d = tempfile::tempdir().unwrap();
        let mut a = app(d.path(), None);
        let s = screen(&a);
        assert!(s.contains("queue 0/2 labelled"), "{s}");
        assert!(s.contains("loopy.jsonl:2-3"), "{s}");
        assert!(s.contains("call read {\"path\":\"a.rs\"}"), "{s}");
        assert!(s.contains("▶ gemini: tool_call"), "{s}");
        assert!(s.contains("label: not labelled"), "{s}");
        a.key(Key::Char('c'));
        let s = screen(&a);
        assert!(s.contains("queue 1/2 labelled"), "{s}");
        let row = format!("C {:>2} loopy", a.sessions[0].flagged.0);
        assert!(a.sessions[0].flagged.0 > 0);
        assert!(s.contains(&row), "{s}");
        assert!(s.contains("saved loopy: clean"), "{s}");
        a.key(Key::Char('?'));
        assert!(screen(&a).contains("label loop, onset = turn under cursor"));
    }

    #[test]
    fn long_lines_wrap_instead_of_being_cut_at_the_pane() {
        assert_eq!(wrap("abcdefgh", 3, 4), ["abc", "def", "gh"]);
        assert_eq!(wrap("abcdefghijklmn", 3, 2), ["abc", "de…"]);
        assert_eq!(wrap("a\nb", 10, 4), ["a⏎b"]);
        let d = tempfile::tempdir().unwrap();
        let mut a = app(d.path(), None);
        let long = format!("text: {}END", "word ".repeat(40));
        a.sessions[0].turns[1].lines = vec![long];
        let s = screen(&a);
        assert!(
            s.contains("END"),
            "the end of a long line is on screen: {s}"
        );
    }

    #[test]
    fn a_turn_taller_than_the_screen_is_cut_with_a_count() {
        let d = tempfile::tempdir().unwrap();
        let mut a = app(d.path(), None);
        a.sessions[0].turns[1].lines = (0..100).map(|i| format!("call n{i}")).collect();
        let s = screen(&a);
        assert!(s.contains("call n0"), "{s}");
        assert!(!s.contains("call n99"), "{s}");
        let more = s.lines().find(|l| l.contains(" more")).expect("a count");
        let n: usize = more
            .split('…')
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let listed = s.matches("call n").count();
        assert_eq!(n + listed, 100, "{s}");
    }

    #[test]
    fn tiny_terminals_do_not_panic() {
        let d = tempfile::tempdir().unwrap();
        let mut a = app(d.path(), None);
        for help in [false, true] {
            a.help = help;
            for (w, h) in [(1, 1), (20, 5), (45, 8), (80, 3)] {
                let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
                t.draw(|f| a.draw(f)).unwrap();
            }
        }
    }

    #[test]
    fn place_names_file_and_line_range() {
        let c = corpus();
        let o = |file, line| Origin::at(file, line);
        assert_eq!(place(&c, &[o(0, 4)]), "loopy.jsonl:4");
        assert_eq!(place(&c, &[o(0, 9), o(0, 4)]), "loopy.jsonl:4-9");
        assert_eq!(place(&c, &[o(1, 0)]), "calm.jsonl");
        assert_eq!(place(&c, &[]), "");
    }
}
