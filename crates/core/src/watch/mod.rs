//! `looptune watch`: follow agents' log files and folders as sessions are
//! written and report each detection once, at the record `replay --all`
//! reports it at. No terminal here: [`Watcher::tick`] looks at the files
//! once and returns what it found; the caller polls, prints and notifies.
//!
//! How files are followed:
//! - a file is known by its identity (device and inode), not its path, so a
//!   log rotated away (renamed) keeps its state and is not reported again
//!   under its new name, and a new file created at the old path is read
//!   from its start;
//! - a file that shrinks was truncated: it is read from its start, its
//!   sessions forgotten;
//! - a changed file is read whole again by the project's readers (any
//!   format `replay` reads) up to its last complete line (a line still being
//!   written waits; a file without a final newline is read whole once its
//!   size has stayed the same for one tick), and each of its sessions is
//!   replayed; detections not reported before are reported once they are
//!   settled ([`Settle`]);
//! - memory: no records are held between ticks (a changed file is read
//!   again), only each file's identity, size and the keys of the detections
//!   reported. A file that has not grown for [`WatchOptions::idle`] has its
//!   open detections reported as if its sessions had ended; a file no
//!   longer found is forgotten.

mod detector;
mod settle;
pub use detector::{incremental_profiles, Detector};
pub use settle::{starts_step, Settle};

use crate::detect::{Detection, DetectorConfig};
use crate::error::{Error, Result};
use crate::event::Session;
use crate::input::ReadOptions;
use crate::replay::{Plan, ReplayOptions};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How a [`Watcher`] reads and forgets.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// How files are read (`--input-format`; lenient is always on: a log
    /// being written may hold a line a later write completes).
    pub read: ReadOptions,
    /// Report what the files hold when watching starts (else only what is
    /// written after; files that appear later are always read whole).
    pub from_start: bool,
    /// A file unchanged this long has its sessions treated as ended.
    pub idle: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            read: ReadOptions::default(),
            from_start: false,
            idle: Duration::from_secs(300),
        }
    }
}

/// One detection, reported once.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Found {
    /// The file it is in (as found under a watched path).
    pub file: String,
    /// Its session.
    pub session: String,
    /// The configuration's family.
    pub family: &'static str,
    /// Its profile.
    pub profile: String,
    /// The detection's kind.
    pub kind: &'static str,
    /// Turn of the triggering record.
    pub turn: u32,
    /// 1-based record number in its session, as `replay` numbers it.
    pub event: u32,
    /// Detections so far in its prompt (1-based), as `replay --all` numbers them.
    pub strike: u32,
    /// What repeated.
    pub detail: String,
}

/// What a tick found.
#[derive(Debug, Clone, PartialEq)]
pub enum Report {
    /// A detection.
    Found(Found),
    /// A file that could not be read or parsed, or was truncated: said,
    /// and watching goes on.
    Warning(String),
}

/// A file's identity: (device, inode) on Unix.
type Id = (u64, u64);

/// (event, kind, strike): a detection's key within its session.
type Key = (u32, &'static str, u32);

struct FileState {
    path: PathBuf,
    /// Size at the last look.
    size: u64,
    /// Bytes replayed (complete lines, or the whole file once stable).
    parsed: u64,
    /// When the size last changed.
    changed: Instant,
    /// Sessions ended by idleness: their open detections reported.
    finished: bool,
    sessions: HashMap<String, SessionState>,
}

#[derive(Default)]
struct SessionState {
    seen: HashSet<Key>,
    /// Detections found but not yet settled.
    open: Vec<Detection>,
}

/// Follows paths and reports detections; see the module docs.
pub struct Watcher {
    paths: Vec<PathBuf>,
    plan: Plan,
    settle: Settle,
    family: &'static str,
    profile: String,
    opts: WatchOptions,
    files: HashMap<Id, FileState>,
    started: bool,
}

impl Watcher {
    /// A watcher of `paths` (files or folders, walked recursively) running
    /// `cfg`. A path that does not exist is an error now; one that goes away
    /// later is skipped until it is back.
    pub fn new(paths: Vec<PathBuf>, cfg: DetectorConfig, opts: WatchOptions) -> Result<Watcher> {
        for p in &paths {
            std::fs::metadata(p).map_err(|e| Error::io(p, e))?;
        }
        let family = cfg.family;
        let profile = cfg.profile.clone();
        let settle = Settle::of(family);
        let plan = Plan::new(vec![cfg], &ReplayOptions { all: true })?;
        Ok(Watcher {
            paths,
            plan,
            settle,
            family,
            profile,
            opts,
            files: HashMap::new(),
            started: false,
        })
    }

    /// Files followed now.
    pub fn files(&self) -> usize {
        self.files.len()
    }

    /// Look at every file once (`now`: the time of this look, for idleness)
    /// and return what was found, detections in the order they fire within
    /// each file.
    pub fn tick(&mut self, now: Instant) -> Vec<Report> {
        let mut out = Vec::new();
        let quiet_start = !self.started && !self.opts.from_start;
        self.started = true;
        let mut present: HashSet<Id> = HashSet::new();
        for (path, meta) in self.walk(&mut out) {
            let id = identity(&path, &meta);
            if !present.insert(id) {
                continue; // the same file under two watched paths
            }
            let size = meta.len();
            let state = self.files.entry(id).or_insert_with(|| FileState {
                path: path.clone(),
                size: 0,
                parsed: 0,
                changed: now,
                finished: false,
                sessions: HashMap::new(),
            });
            // Renamed (rotated) away: the same file under its new name.
            state.path = path;
            if size < state.size || size < state.parsed {
                out.push(Report::Warning(format!(
                    "{}: truncated ({} -> {size} bytes): read from its start",
                    state.path.display(),
                    state.size
                )));
                state.sessions.clear();
                state.parsed = 0;
            }
            let stable = size == state.size;
            if !stable {
                state.changed = now;
                state.finished = false;
            }
            state.size = size;
            let fresh = self.look(id, stable, quiet_start, &mut out);
            let state = self.files.get_mut(&id).expect("inserted");
            if !fresh && !state.finished && now.duration_since(state.changed) >= self.opts.idle {
                state.finished = true;
                let file = state.path.display().to_string();
                let mut ids: Vec<String> = state.sessions.keys().cloned().collect();
                ids.sort();
                let mut ended = Vec::new();
                for sid in ids {
                    let s = state.sessions.get_mut(&sid).expect("listed");
                    let open = std::mem::take(&mut s.open);
                    ended.extend(hand_out(s, open).into_iter().map(|d| (sid.clone(), d)));
                }
                for (sid, d) in ended {
                    out.push(Report::Found(self.found(&file, &sid, d)));
                }
            }
        }
        // Gone (deleted, or renamed out of every watched path): forgotten.
        self.files.retain(|id, _| present.contains(id));
        out
    }

    /// Every regular file under the watched paths now, with its metadata.
    fn walk(&self, out: &mut Vec<Report>) -> Vec<(PathBuf, std::fs::Metadata)> {
        let mut files = Vec::new();
        for p in &self.paths {
            let Ok(meta) = std::fs::metadata(p) else {
                continue; // gone for now (a file rotated away, a folder removed)
            };
            if meta.is_file() {
                files.push((p.clone(), meta));
                continue;
            }
            match crate::input::collect_files_with(std::slice::from_ref(p), true) {
                Ok((found, _)) => {
                    for f in found {
                        if let crate::input::Found::Path { path, .. } = f {
                            if let Ok(m) = std::fs::metadata(&path) {
                                if m.is_file() {
                                    files.push((path, m));
                                }
                            }
                        }
                    }
                }
                Err(e) => out.push(Report::Warning(e.to_string())),
            }
        }
        files
    }

    /// Read and replay a file if it has new complete records; true if it did.
    fn look(&mut self, id: Id, stable: bool, quiet: bool, out: &mut Vec<Report>) -> bool {
        let state = self.files.get_mut(&id).expect("known");
        if state.size == state.parsed {
            return false;
        }
        let path = state.path.clone();
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                out.push(Report::Warning(Error::io(&path, e).to_string()));
                state.parsed = state.size;
                return false;
            }
        };
        // Up to the last complete line; a file without a final newline is
        // read whole once it has stopped growing (a document written whole).
        let end = if stable && bytes.len() as u64 == state.size {
            bytes.len()
        } else {
            bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)
        };
        if end as u64 == state.parsed {
            return false;
        }
        // A document cut at its last newline is no error yet: it is read
        // whole once it stops growing.
        let cut = end < bytes.len();
        let mut bytes = bytes;
        bytes.truncate(end);
        state.parsed = end as u64;
        let display = path.display().to_string();
        let opts = ReadOptions {
            lenient: true,
            ..self.opts.read.clone()
        };
        let file =
            match crate::input::parse_bytes(&display, crate::input::file_stem(&path), bytes, &opts)
            {
                Ok(f) => f,
                Err(e) => {
                    if !cut {
                        out.push(Report::Warning(e.to_string()));
                    }
                    return true;
                }
            };
        for (sid, events) in file.sessions {
            let mut session = Session::from_events(sid.clone(), events);
            session.whole_messages = file.whole_messages;
            let session = Arc::new(session);
            let dets: Vec<Detection> = self
                .plan
                .session(session.clone())
                .into_iter()
                .flat_map(|o| o.detections)
                .collect();
            let (ready, open) = self.settle.split(&session, dets);
            let state = self.files.get_mut(&id).expect("known");
            let s = state.sessions.entry(sid.clone()).or_default();
            s.open = open
                .into_iter()
                .filter(|d| !s.seen.contains(&key(d)))
                .collect();
            let found = hand_out(s, ready);
            if quiet {
                // What the files held before watching started is history,
                // open detections included.
                let open = std::mem::take(&mut s.open);
                hand_out(s, open);
                continue;
            }
            out.extend(
                found
                    .into_iter()
                    .map(|d| Report::Found(self.found(&display, &sid, d))),
            );
        }
        true
    }

    fn found(&self, file: &str, session: &str, d: Detection) -> Found {
        Found {
            file: file.to_string(),
            session: session.to_string(),
            family: self.family,
            profile: self.profile.clone(),
            kind: d.kind,
            turn: d.turn,
            event: d.event,
            strike: d.strike,
            detail: d.detail,
        }
    }
}

/// Mark detections reported, in the order they fire; the ones not reported before.
fn hand_out(s: &mut SessionState, mut ready: Vec<Detection>) -> Vec<Detection> {
    ready.sort_by_key(|d| (d.event, d.strike));
    ready
        .into_iter()
        .filter(|d| s.seen.insert(key(d)))
        .collect()
}

fn key(d: &Detection) -> Key {
    (d.event, d.kind, d.strike)
}

/// A flag SIGINT and SIGTERM set, for a follow loop to stop at its next
/// look (the default handlers would end the process at once, with a
/// notification command's input half written).
pub fn stop_on_signals() -> std::io::Result<Arc<std::sync::atomic::AtomicBool>> {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    #[cfg(unix)]
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    Ok(stop)
}

#[cfg(unix)]
fn identity(_path: &Path, meta: &std::fs::Metadata) -> Id {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// Without inodes a file is its path: a rotation reads the new file from
/// its start, as it should, but a renamed file is read again.
#[cfg(not(unix))]
fn identity(path: &Path, _meta: &std::fs::Metadata) -> Id {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    path.hash(&mut h);
    (0, h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const CALL: &str = "{\"type\":\"tool_call\",\"name\":\"read_file\",\"args\":{\"path\":\"a\"}}\n{\"type\":\"tool_result\",\"name\":\"read_file\",\"output\":\"x\"}\n";

    fn start(id: &str) -> String {
        format!("{{\"type\":\"session\",\"session\":\"{id}\"}}\n{{\"type\":\"user\",\"text\":\"go\"}}\n")
    }

    fn append(path: &Path, text: &str) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    fn watcher(paths: &[&Path]) -> Watcher {
        let cfg = DetectorConfig::resolve(None, Some("gemini-latest"), &[]).unwrap();
        let opts = WatchOptions {
            from_start: true,
            ..WatchOptions::default()
        };
        Watcher::new(paths.iter().map(|p| p.to_path_buf()).collect(), cfg, opts).unwrap()
    }

    fn found(r: Vec<Report>) -> Vec<(String, u32, u32)> {
        r.into_iter()
            .filter_map(|r| match r {
                Report::Found(f) => Some((f.session, f.event, f.strike)),
                Report::Warning(_) => None,
            })
            .collect()
    }

    #[test]
    fn appended_lines_report_a_detection_once() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("s.jsonl");
        append(&f, &start("s"));
        let mut w = watcher(&[d.path()]);
        let now = Instant::now();
        assert!(found(w.tick(now)).is_empty());
        for _ in 0..4 {
            append(&f, CALL);
        }
        assert!(found(w.tick(now)).is_empty());
        // The fifth identical call, its line half written: nothing yet.
        append(&f, "{\"type\":\"tool_call\",\"name\":\"read_file\",");
        assert!(found(w.tick(now)).is_empty());
        append(&f, "\"args\":{\"path\":\"a\"}}\n");
        // Gemini's fifth identical call: record 2 + 4 * 2 + 1.
        assert_eq!(found(w.tick(now)), vec![("s".into(), 11, 1)]);
        assert!(found(w.tick(now)).is_empty());
        append(
            &f,
            "{\"type\":\"tool_result\",\"name\":\"read_file\",\"output\":\"x\"}\n",
        );
        assert!(found(w.tick(now)).is_empty());
    }

    #[test]
    fn a_new_file_truncation_and_rotation() {
        let d = tempfile::tempdir().unwrap();
        let mut w = watcher(&[d.path()]);
        let now = Instant::now();
        assert!(found(w.tick(now)).is_empty());
        let f = d.path().join("a.jsonl");
        std::fs::write(&f, start("a") + &CALL.repeat(5)).unwrap();
        assert_eq!(found(w.tick(now)), vec![("a".into(), 11, 1)]);
        // Rotated: renamed away (still under the folder, not reported
        // again), and a new file at the path, read from its start.
        std::fs::rename(&f, d.path().join("a.1.jsonl")).unwrap();
        assert!(found(w.tick(now)).is_empty());
        std::fs::write(&f, start("a") + &CALL.repeat(5)).unwrap();
        assert_eq!(found(w.tick(now)), vec![("a".into(), 11, 1)]);
        // Truncated and written again: its start over.
        std::fs::write(&f, start("a")).unwrap();
        let r = w.tick(now);
        assert!(
            matches!(&r[0], Report::Warning(m) if m.contains("truncated")),
            "{r:?}"
        );
        assert!(found(r).is_empty());
        append(&f, &CALL.repeat(5));
        assert_eq!(found(w.tick(now)), vec![("a".into(), 11, 1)]);
        // Deleted: forgotten.
        std::fs::remove_file(d.path().join("a.1.jsonl")).unwrap();
        w.tick(now);
        assert_eq!(w.files(), 1);
    }

    #[test]
    fn a_document_without_a_final_newline_is_read_once_it_stops_growing() {
        let d = tempfile::tempdir().unwrap();
        let mut w = watcher(&[d.path()]);
        let now = Instant::now();
        w.tick(now);
        let call = |i: u32| {
            format!(
                r#"{{"role":"assistant","content":null,"tool_calls":[{{"id":"c{i}","type":"function","function":{{"name":"read_file","arguments":"{{\"path\":\"a\"}}"}}}}]}},
{{"role":"tool","tool_call_id":"c{i}","content":"x"}}"#
            )
        };
        let calls: Vec<String> = (0..5).map(call).collect();
        let doc = format!(
            "[\n{{\"role\":\"user\",\"content\":\"go\"}},\n{}\n]",
            calls.join(",\n")
        );
        std::fs::write(d.path().join("chat.json"), &doc).unwrap();
        // First seen growing: cut at its last newline; read whole at the next look.
        assert_eq!(w.tick(now), Vec::new());
        assert_eq!(found(w.tick(now)).len(), 1);
    }

    #[test]
    fn what_files_hold_at_the_start_is_history_unless_asked() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("a.jsonl");
        std::fs::write(&f, start("a") + &CALL.repeat(5)).unwrap();
        let cfg = DetectorConfig::resolve(None, Some("gemini-latest"), &[]).unwrap();
        let mut w = Watcher::new(vec![f.clone()], cfg, WatchOptions::default()).unwrap();
        let now = Instant::now();
        assert!(found(w.tick(now)).is_empty());
        // Only what is written after: the next identical call is strike 2.
        append(&f, &CALL.repeat(5));
        assert_eq!(found(w.tick(now))[0], ("a".into(), 13, 2));
    }

    #[test]
    fn a_step_family_reports_the_open_step_once_the_file_is_idle() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("a.jsonl");
        let cfg = DetectorConfig::resolve(None, Some("openhands-v1"), &[]).unwrap();
        let opts = WatchOptions {
            from_start: true,
            idle: Duration::from_secs(60),
            ..WatchOptions::default()
        };
        let mut w = Watcher::new(vec![d.path().to_path_buf()], cfg, opts).unwrap();
        let mut text = start("a");
        for _ in 0..6 {
            text.push_str("{\"type\":\"turn\"}\n");
            text.push_str(CALL);
        }
        std::fs::write(&f, &text).unwrap();
        let t0 = Instant::now();
        let first = found(w.tick(t0));
        // What replay --all reports on the whole file.
        let plan = Plan::new(
            vec![DetectorConfig::resolve(None, Some("openhands-v1"), &[]).unwrap()],
            &ReplayOptions { all: true },
        )
        .unwrap();
        let file =
            crate::input::parse_bytes("a", "a".into(), text.into_bytes(), &ReadOptions::default())
                .unwrap();
        let (id, events) = file.sessions.into_iter().next().unwrap();
        let all: Vec<(String, u32, u32)> = plan
            .session(Arc::new(Session::from_events(id, events)))
            .remove(0)
            .detections
            .iter()
            .map(|d| ("a".to_string(), d.event, d.strike))
            .collect();
        assert!(!all.is_empty());
        // The last step is open until the file is idle.
        assert!(first.len() < all.len(), "{first:?} {all:?}");
        assert!(found(w.tick(t0 + Duration::from_secs(30))).is_empty());
        let rest = found(w.tick(t0 + Duration::from_secs(61)));
        assert_eq!([first, rest].concat(), all);
        assert!(found(w.tick(t0 + Duration::from_secs(200))).is_empty());
    }

    /// Every fixture fed line by line, a look after each line and one once
    /// the file is idle, under each family's default profile (every profile of the families
    /// whose detections settle later): the detections are those of
    /// `replay --all` on the whole file, each once.
    #[test]
    fn fixtures_fed_line_by_line_report_what_replay_reports() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/sessions");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        assert!(files.len() >= 10);
        // Each family's default, and every profile of the settling families.
        let profiles: Vec<&str> = crate::detect::families()
            .into_iter()
            .flat_map(|f| {
                let all = f.profiles().into_iter().map(|p| p.name);
                let n = if Settle::of(f.name()) == Settle::Now {
                    1
                } else {
                    usize::MAX
                };
                all.take(n).collect::<Vec<_>>()
            })
            .collect();
        let mut compared = 0;
        for profile in profiles {
            let cfg = || DetectorConfig::resolve(None, Some(profile), &[]).unwrap();
            let plan = Plan::new(vec![cfg()], &ReplayOptions { all: true }).unwrap();
            for path in &files {
                let text = std::fs::read_to_string(path).unwrap();
                let stem = crate::input::file_stem(path);
                let file = crate::input::parse_bytes(
                    "f",
                    stem.clone(),
                    text.clone().into_bytes(),
                    &ReadOptions::default(),
                )
                .unwrap();
                let mut want = Vec::new();
                for (id, events) in file.sessions {
                    let mut session = Session::from_events(id.clone(), events);
                    session.whole_messages = file.whole_messages;
                    for d in &plan.session(Arc::new(session))[0].detections {
                        want.push((id.clone(), d.event, d.strike, d.kind, d.detail.clone()));
                    }
                }
                let d = tempfile::tempdir().unwrap();
                let fed = d.path().join(path.file_name().unwrap());
                std::fs::write(&fed, "").unwrap();
                let opts = WatchOptions {
                    from_start: true,
                    idle: Duration::from_secs(60),
                    ..WatchOptions::default()
                };
                let mut w = Watcher::new(vec![d.path().to_path_buf()], cfg(), opts).unwrap();
                let t0 = Instant::now();
                let mut got = Vec::new();
                let mut take = |r: Vec<Report>| {
                    for r in r {
                        match r {
                            Report::Found(f) => {
                                got.push((f.session, f.event, f.strike, f.kind, f.detail))
                            }
                            Report::Warning(m) => panic!("{m}"),
                        }
                    }
                };
                for line in text.split_inclusive('\n') {
                    append(&fed, line);
                    take(w.tick(t0));
                }
                take(w.tick(t0 + Duration::from_secs(61)));
                let order = |v: &mut Vec<(String, u32, u32, &'static str, String)>| {
                    v.sort_by(|a, b| (&a.0, a.1, a.2, a.3).cmp(&(&b.0, b.1, b.2, b.3)))
                };
                order(&mut want);
                order(&mut got);
                assert_eq!(got, want, "{profile} on {}", path.display());
                compared += want.len();
            }
        }
        assert!(compared > 100, "{compared}");
    }
}
