//! A live detector: one session fed one canonical record at a time, firing
//! what `looptune replay --all` fires on the records so far, at the record
//! that fires it. No files: the caller hands over each record's text.
//!
//! Each record is parsed alone ([`parse_record`]) and numbered as the whole
//! session would number it so far ([`Growing`]). A configuration whose
//! every check is a [`Stream`] is fed incrementally: each check keeps its
//! own state between records, so a record costs what the rules read of it,
//! not the session's length. A stream pushes a detection once it is
//! decided (Blade's when the next record closes the model turn, OpenHands'
//! and OpenRouter's SDK's when the turn or step ends), and a family whose
//! detections settle with later records ([`Settle`]) hands each out once
//! settled, where a replay of the records so far would. Any other
//! configuration replays the records so far at every record through the
//! same checks (what [`Detector::incremental`] says), so every family
//! works, the incremental ones in amortised O(1).
//! The first `turn` record of a session numbered implicitly until then
//! renumbers the records before it, as reading the whole session would: the
//! streams are then rebuilt over the renumbered records (once a session),
//! as they are when the session's model or mode changes and a rule reads
//! them ([`Stream::reads_meta`]).
//!
//! Memory: once no record can renumber those before it (the session has a
//! `turn` record) and no rule reads the model or mode, the records before
//! the earliest any stream may read again ([`Stream::keeps_from`]) are
//! forgotten, so a long session holds the rules' windows, not its records,
//! and the keys of the detections handed out at them go too. Otherwise
//! every record is kept, for the rebuild.

use super::Settle;
use crate::detect::{Check, Detection, DetectorConfig, Stream};
use crate::error::{Error, Result};
use crate::event::{Growing, Session};
use crate::input::canonical::parse_record;
use crate::replay::{Plan, ReplayOptions};
use rustc_hash::FxHashSet;
use std::sync::Arc;

/// The session id of records that name none (as the canonical reader
/// names them after the file's stem; a live feed has no file).
const FED: &str = "fed";

/// (event, kind, strike): a detection's key within the session.
type Key = (u32, &'static str, u32);

/// One configuration fed one session record by record; see the module docs.
pub struct Detector {
    checks: Vec<Box<dyn Check>>,
    /// For configurations that are not incremental: the replay of the
    /// records so far.
    plan: Plan,
    settle: Settle,
    incremental: bool,
    /// Whether a stream reads the session's model or mode.
    reads_meta: bool,
    /// Forget records as soon as no stream reads them (tests: a stream that
    /// reads a record it said it would not panics at once).
    eager: bool,
    fed: Fed,
}

/// The session fed so far and what was handed out of it.
#[derive(Default)]
struct Fed {
    session: Option<Growing>,
    /// Records fed (blank lines included).
    records: u32,
    /// The record after the last that starts a step (0: none), for
    /// [`Settle::StepEnd`].
    step: u32,
    /// Each check's stream (incremental configurations).
    streams: Vec<Box<dyn Stream>>,
    /// The last detection's prompt and strike, to number the next strikes
    /// as [`merge`](crate::detect::merge) numbers them over the whole session.
    prompt: u32,
    strike: u32,
    /// The detections handed out (a rebuild finds them again), down to
    /// those at forgotten records, which no stream can find again.
    seen: FxHashSet<Key>,
    /// Keys kept at the last pruning of `seen`.
    seen_kept: usize,
    /// The session's model and mode as last seen: a stream may read them
    /// (the Gemini preview rule, Blade's plan mode), and a replay reads the
    /// latest, so a change rebuilds.
    model: (Option<String>, Option<String>),
    /// Detections found but not settled (they may change with later records).
    open: Vec<Detection>,
    /// Detections of the streams not yet numbered, with their check's
    /// index: those at or after an event a stream may still fire at
    /// ([`Stream::held_from`]), whose strikes depend on it.
    held: Vec<(usize, Detection)>,
}

impl Detector {
    /// A detector for `config`.
    pub fn new(config: DetectorConfig) -> Result<Detector> {
        let checks = config.checks()?;
        let settle = Settle::of(config.family);
        let incremental = checks.iter().all(|c| c.stream().is_some());
        let reads_meta = checks
            .iter()
            .filter_map(|c| c.stream())
            .any(|s| s.reads_meta());
        let plan = Plan::new(vec![config], &ReplayOptions { all: true })?;
        let mut d = Detector {
            checks,
            plan,
            settle,
            incremental,
            reads_meta,
            eager: false,
            fed: Fed::default(),
        };
        d.reset();
        Ok(d)
    }

    /// A detector for `config` that replays the records so far at every
    /// record, as one without streams does: what an incremental one must
    /// hand out, record by record.
    #[cfg(test)]
    fn replaying(config: DetectorConfig) -> Result<Detector> {
        let mut d = Detector::new(config)?;
        d.incremental = false;
        d.reset();
        Ok(d)
    }

    /// Forget each record as soon as no stream may read it again, not once
    /// enough have gathered: for tests, where a stream that reads a record
    /// it let go fails at once.
    #[doc(hidden)]
    pub fn forget_eagerly(&mut self) {
        self.eager = true;
    }

    /// Records held now (of those fed since the last reset): the rules'
    /// windows once records can be forgotten (see the module docs).
    pub fn records_held(&self) -> usize {
        self.fed
            .session
            .as_ref()
            .map_or(0, |g| g.session().events.len())
    }

    /// Keys of the detections handed out that are still kept (to hand
    /// each out once): those at records not yet forgotten, and as many
    /// again at most between prunings.
    #[doc(hidden)]
    pub fn detections_held(&self) -> usize {
        self.fed.seen.len()
    }

    /// Whether a record costs amortised O(1) (every check of the
    /// configuration is fed incrementally) rather than a replay of the
    /// records so far.
    pub fn incremental(&self) -> bool {
        self.incremental
    }

    /// Records fed since the last reset (blank lines included).
    pub fn records(&self) -> u32 {
        self.fed.records
    }

    /// The session so far, if a record has been fed: its records from
    /// [`Session::first`] on (those before are forgotten, see the module
    /// docs).
    pub fn session(&self) -> Option<&Session> {
        self.fed.session.as_ref().map(Growing::session)
    }

    /// Forget the session: the next record starts a new one.
    pub fn reset(&mut self) {
        self.fed = Fed {
            streams: self.fresh_streams(),
            prompt: u32::MAX,
            ..Fed::default()
        };
    }

    fn fresh_streams(&self) -> Vec<Box<dyn Stream>> {
        match self.incremental {
            true => self.checks.iter().filter_map(|c| c.stream()).collect(),
            false => Vec::new(),
        }
    }

    /// Feed one canonical record (one JSON object's text, no newline) and
    /// return the detections final now, in the order they fire. A record
    /// that does not parse is an [`Error::Line`] naming its number (the
    /// session is left as it was); one of another session is an
    /// [`Error::Config`].
    pub fn feed_line(&mut self, line: &str) -> Result<Vec<Detection>> {
        let number = self.fed.records + 1;
        let parsed = parse_record(line, number, number == 1).map_err(|e| Error::Line {
            path: "<fed>".into(),
            line: number as u64,
            message: e.to_string(),
        })?;
        let Some((id, event)) = parsed else {
            self.fed.records = number;
            return Ok(Vec::new());
        };
        let id = id.as_deref().unwrap_or(FED);
        let growing = match &mut self.fed.session {
            Some(g) if g.session().id != id => {
                return Err(Error::Config(format!(
                    "record {number} is in session `{id}`, not `{}`: a Detector follows one session (call reset() between sessions)",
                    g.session().id
                )))
            }
            Some(g) => g,
            None => self.fed.session.insert(Growing::new(id.to_string())),
        };
        self.fed.records = number;
        if super::starts_step(&event.record) {
            self.fed.step = growing.session().len() as u32 + 1;
        }
        let renumbered = growing.push(event);
        let meta = &growing.session().meta;
        let remodelled = (&meta.model, &meta.mode) != (&self.fed.model.0, &self.fed.model.1);
        if remodelled {
            self.fed.model = (meta.model.clone(), meta.mode.clone());
        }
        // A rebuild over the records with the new model or mode finds what
        // the streams found unless one reads them.
        let stepped = self.incremental && !renumbered && !(remodelled && self.reads_meta);
        let found = if stepped {
            self.step()
        } else {
            self.replay_all()
        };
        let mut fresh: Vec<Detection> = found
            .into_iter()
            .filter(|d| !self.fed.seen.contains(&key(d)))
            .collect();
        if stepped {
            // Streams push a detection once, when it is decided; those of a
            // settling family wait below until settled, as a replay's do.
            // (A replay, or a rebuild, finds every open one again.)
            let mut open = std::mem::take(&mut self.fed.open);
            open.append(&mut fresh);
            fresh = open;
        }
        let len = self
            .fed
            .session
            .as_ref()
            .expect("pushed above")
            .session()
            .len();
        // What may still change waits (for `finish` if the session ends).
        let (ready, open) = self.settle.split_at(len as u32, self.fed.step, fresh);
        self.fed.open = open;
        self.forget();
        Ok(self.hand_out(ready))
    }

    /// The session has ended: the detections still open (a settling
    /// family's last step), in the order they fire.
    pub fn finish(&mut self) -> Vec<Detection> {
        let mut open = std::mem::take(&mut self.fed.open);
        // What the streams held back for later records of the session.
        if let Some(g) = &self.fed.session {
            let mut found = Vec::new();
            for (k, s) in self.fed.streams.iter_mut().enumerate() {
                s.finish(g.session(), &mut found);
                self.fed.held.extend(found.drain(..).map(|d| (k, d)));
            }
            open.extend(self.release(true));
        }
        self.hand_out(open)
    }

    /// Forget the records no stream reads again, when no rebuild can need
    /// them (see the module docs).
    fn forget(&mut self) {
        let Some(g) = &mut self.fed.session else {
            return;
        };
        if !self.incremental || self.reads_meta || !g.explicit() {
            return;
        }
        let keep = self
            .fed
            .streams
            .iter()
            .map(|s| s.keeps_from())
            .min()
            .unwrap_or(usize::MAX);
        g.forget_before(keep, self.eager);
        // No rebuild comes once records are forgotten, and a stream reports
        // only at records it keeps: the keys of detections at forgotten
        // records are never asked for again (amortised, as the records are).
        let first = g.session().first as u32;
        let seen = &mut self.fed.seen;
        if seen.len() > 2 * self.fed.seen_kept + 64 || (self.eager && !seen.is_empty()) {
            seen.retain(|&(event, _, _)| event > first);
            self.fed.seen_kept = seen.len();
        }
    }

    /// The last record fed to every stream: what fires there and what is
    /// no longer held back, numbered.
    fn step(&mut self) -> Vec<Detection> {
        let fed = &mut self.fed;
        let session = fed.session.as_ref().expect("a record was fed").session();
        let i = session.len() - 1;
        let mut found = Vec::new();
        for (k, s) in fed.streams.iter_mut().enumerate() {
            s.feed(session, i, &mut found);
            fed.held.extend(found.drain(..).map(|d| (k, d)));
        }
        self.release(false)
    }

    /// The detections no stream can precede any more (all of them at the
    /// session's end), numbered as [`merge`](crate::detect::merge) numbers them over the whole
    /// session, after those released before: by event, ties in check order.
    fn release(&mut self, all: bool) -> Vec<Detection> {
        let fed = &mut self.fed;
        let from = match all {
            true => None,
            false => fed.streams.iter().filter_map(|s| s.held_from()).min(),
        };
        let mut ready: Vec<(usize, Detection)> = match from {
            None => std::mem::take(&mut fed.held),
            Some(e) => {
                let (ready, held) = std::mem::take(&mut fed.held)
                    .into_iter()
                    .partition(|(_, d)| d.event < e);
                fed.held = held;
                ready
            }
        };
        ready.sort_by_key(|(k, d)| (d.event, *k));
        let mut out = Vec::with_capacity(ready.len());
        for (_, mut d) in ready {
            if d.prompt != fed.prompt {
                fed.prompt = d.prompt;
                fed.strike = 0;
            }
            fed.strike += 1;
            d.strike = fed.strike;
            out.push(d);
        }
        out
    }

    /// Every detection on the records so far: the streams rebuilt over
    /// them (incremental), else a replay.
    fn replay_all(&mut self) -> Vec<Detection> {
        if self.incremental {
            let mut streams = self.fresh_streams();
            let session = self.fed.session.as_ref().expect("fed").session();
            // Records are forgotten only where no rebuild can come.
            assert_eq!(session.first, 0, "a rebuild over forgotten records");
            let mut found = Vec::new();
            let mut held = Vec::new();
            for i in 0..session.events.len() {
                for (k, s) in streams.iter_mut().enumerate() {
                    s.feed(session, i, &mut found);
                    held.extend(found.drain(..).map(|d| (k, d)));
                }
            }
            self.fed.streams = streams;
            self.fed.held = held;
            // Numbered afresh: those handed out before get their keys again.
            (self.fed.prompt, self.fed.strike) = (u32::MAX, 0);
            return self.release(false);
        }
        let session = Arc::new(self.fed.session.as_ref().expect("fed").session().clone());
        let all: Vec<Detection> = self
            .plan
            .session(session)
            .into_iter()
            .flat_map(|o| o.detections)
            .collect();
        (self.fed.prompt, self.fed.strike) =
            all.last().map_or((u32::MAX, 0), |d| (d.prompt, d.strike));
        all
    }

    /// Mark detections handed out, in the order they fire.
    fn hand_out(&mut self, mut ready: Vec<Detection>) -> Vec<Detection> {
        ready.sort_by_key(|d| (d.event, d.strike));
        ready.retain(|d| self.fed.seen.insert(key(d)));
        ready
    }
}

fn key(d: &Detection) -> Key {
    (d.event, d.kind, d.strike)
}

/// Every profile whose configuration a [`Detector`] feeds incrementally.
pub fn incremental_profiles() -> Vec<&'static str> {
    crate::detect::families()
        .into_iter()
        .flat_map(|f| f.profiles().into_iter().map(|p| p.name))
        .filter(|p| {
            DetectorConfig::resolve(None, Some(p), &[])
                .and_then(Detector::new)
                .is_ok_and(|d| d.incremental())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    fn jsonl_under(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                jsonl_under(&p, out);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }

    /// The settling families fed through their streams hand out, at every
    /// record and at the session's end, what the replay of the records so
    /// far hands out there (the same detections, strikes, and record), on
    /// every canonical file of the fixtures and of ../shared/conformance.
    #[test]
    fn streams_of_settling_families_hand_out_what_the_replay_hands_out_when_it_does() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = Vec::new();
        for dir in [
            "tests/fixtures",
            "fixtures/sessions",
            "../shared/conformance",
        ] {
            jsonl_under(&root.join(dir), &mut files);
        }
        files.sort();
        let profiles: Vec<&str> = crate::detect::families()
            .into_iter()
            .filter(|f| Settle::of(f.name()) != Settle::Now)
            .flat_map(|f| f.profiles().into_iter().map(|p| p.name))
            .collect();
        assert!(profiles.len() >= 6, "{profiles:?}");
        let (mut sessions, mut fired) = (0, 0);
        for path in &files {
            let text = std::fs::read_to_string(path).unwrap();
            for profile in &profiles {
                let cfg = DetectorConfig::resolve(None, Some(profile), &[]).unwrap();
                let mut live = Detector::new(cfg.clone()).unwrap();
                assert!(live.incremental(), "{profile}");
                let mut replay = Detector::replaying(cfg).unwrap();
                let mut whole = true;
                for (n, line) in text.lines().enumerate() {
                    match (live.feed_line(line), replay.feed_line(line)) {
                        (Ok(a), Ok(b)) => {
                            fired += b.len();
                            assert_eq!(a, b, "{profile} {} record {}", path.display(), n + 1);
                        }
                        // Not one canonical session: compared up to here.
                        (Err(_), Err(_)) => {
                            whole = false;
                            break;
                        }
                        (a, b) => {
                            panic!("{profile} {} record {}: {a:?} {b:?}", path.display(), n + 1)
                        }
                    }
                }
                if whole {
                    sessions += 1;
                    let (a, b) = (live.finish(), replay.finish());
                    fired += b.len();
                    assert_eq!(a, b, "{profile} {} at the end", path.display());
                }
            }
        }
        assert!(
            sessions > 100 && fired > 50,
            "{sessions} sessions, {fired} hits"
        );
    }
}
