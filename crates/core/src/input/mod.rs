//! Discovery: which files to read (paths, folder walks, stdin), reading and
//! decompressing them within limits, telling canonical JSONL
//! (the `canonical` module) from native agent logs ([`crate::input::import`]), and
//! merging what every file gives into one [`Corpus`]. Strict by default;
//! `--lenient` skips and counts bad lines and unreadable entries.

use crate::error::{Error, Result};
use crate::event::{Corpus, Event, Origin, Session, Skip, SourceFile};
use rayon::prelude::*;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};

pub use crate::input::canonical::{parse_canonical, parse_line, record_from_object};
pub use crate::input::format::{FileSessions, SkipReason, SkippedLine};
pub use crate::input::json::{parse_json, parse_json_slice};
/// Why a line or record cannot be read (`parse_line`, `record_from_object`).
pub use crate::input::json::{FieldError, RecordError};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[doc(hidden)]
pub mod canonical;
#[doc(hidden)]
pub mod format;
pub mod import;
#[doc(hidden)]
pub mod json;
pub mod labels;
mod large;
mod list;
#[doc(hidden)]
pub mod logdirs;
#[doc(hidden)]
pub mod synth;
use crate::util::pool::Workers;
pub use large::{STREAM_ABOVE, SWEEP_STREAM_ABOVE};
pub use list::{InputFiles, InputList};

/// How to read inputs.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Skip and count bad lines instead of stopping at the first.
    pub lenient: bool,
    /// The format every file is read as (`Auto`: detected per file by content).
    pub format: crate::input::import::InputFormat,
    /// Compute the SHA-256 of every input file (for `summary.json`).
    pub digests: bool,
    /// Most bytes one gzip file may expand to (`--max-gzip-bytes`).
    pub max_gzip_bytes: u64,
    /// Most a gzip file may expand, as decompressed over stored bytes, once
    /// past [`RATIO_FLOOR`] (`--max-gzip-ratio`).
    pub max_gzip_ratio: u64,
    /// Canonical files stored larger than this (gzip: an eighth of it) are
    /// read in batches, two passes, so memory holds a batch and the
    /// sessions still open rather than the file ([`STREAM_ABOVE`]).
    pub stream_above: u64,
}

/// Default of [`ReadOptions::max_gzip_bytes`]: 1 GiB, far above any real
/// session log, far below what takes a machine down.
pub const MAX_GZIP_BYTES: u64 = 1 << 30;
/// Default of [`ReadOptions::max_gzip_ratio`]: JSON logs compress 5 to 30
/// times; a gzip bomb expands up to 1,032 times.
pub const MAX_GZIP_RATIO: u64 = 100;
/// Decompressed size below which the ratio is not checked: a small file
/// costs nothing whatever its ratio.
pub const RATIO_FLOOR: u64 = 16 << 20;

impl Default for ReadOptions {
    fn default() -> ReadOptions {
        ReadOptions {
            lenient: false,
            format: crate::input::import::InputFormat::Auto,
            digests: false,
            max_gzip_bytes: MAX_GZIP_BYTES,
            max_gzip_ratio: MAX_GZIP_RATIO,
            stream_above: STREAM_ABOVE,
        }
    }
}

/// How many skipped-line messages a corpus keeps for its summary.
const KEEP_SKIPPED: usize = 50;

/// Read every path (files, folders, `-`) into one corpus, sessions sorted by id.
///
/// Files found by walking a folder that no importer recognises are skipped with
/// a note in [`Corpus::skipped`] (`FILE: skipped file (...)`); a file named
/// explicitly is an error. Native logs whose session ids clash across files are
/// told apart by parent folders unless their records overlap (see
/// [`FileSessions::record_keys`]).
pub fn read_corpus(paths: &[PathBuf], opts: &ReadOptions) -> Result<Corpus> {
    read_files(
        &InputFiles::walk(paths, opts.lenient)?,
        opts,
        &Workers::current(),
        &crate::util::progress::NoProgress,
    )
}

/// [`read_corpus`] of an input list walked once ([`InputList`]), on the
/// command's `workers`, counting the bytes of the files read on `progress`
/// (reading is most of an end-to-end replay of a large corpus).
pub fn read_files(
    inputs: &InputFiles,
    opts: &ReadOptions,
    workers: &Workers,
    progress: &dyn crate::util::progress::Progress,
) -> Result<Corpus> {
    let files = &inputs.files;
    progress.set_length(stored_bytes(files));
    // No file is no session: the caller says why (or accepts it, --allow-empty).
    let mut corpus = Corpus {
        unreadable: inputs.notes.len() as u64,
        skipped: inputs.notes.clone(),
        ..Default::default()
    };
    // Files are read and parsed in parallel (on the command's workers), then
    // merged in order, so the result and the first error do not depend on it.
    // Every file is read before merging: clashing native ids need all files.
    let load_one = |found: &Found| load_file(found, opts, progress);
    let loaded: Vec<Result<Loaded>> = workers.install(|| files.par_iter().map(load_one).collect());
    let mut read: Vec<ReadFile> = Vec::new();
    for (found, loaded) in files.iter().zip(loaded) {
        let (display, sha256, stored, fs) = match loaded? {
            Loaded::File {
                display,
                sha256,
                stored,
                fs,
            } => (display, sha256, stored, *fs),
            Loaded::Skipped(note) => {
                corpus.skipped.push(note);
                continue;
            }
            Loaded::Unreadable(note) => {
                corpus.unreadable += 1;
                corpus.skipped.push(note);
                continue;
            }
        };
        let file_idx = corpus.files.len() as u32;
        note_skipped_lines(&mut corpus.skipped, &display, &fs.skipped);
        corpus.files.push(SourceFile {
            path: display.clone(),
            format: fs.format.clone(),
            sha256,
            bytes: stored,
            skipped_lines: fs.skipped.len() as u64,
            unknown_records: fs.unknown,
        });
        let path = match found {
            Found::Path { path, .. } => Some(path.clone()),
            Found::Stdin => None,
        };
        read.push(ReadFile { file_idx, path, fs });
    }
    let mut sessions = merge_files(read);
    sessions.sort_by(|a, b| a.id.cmp(&b.id));
    corpus.sessions = sessions;
    Ok(corpus)
}

/// Read and parse one file; under `--lenient`, a walked file that cannot be
/// read or that no reader recognises is skipped with a note.
fn load_file(
    found: &Found,
    opts: &ReadOptions,
    progress: &dyn crate::util::progress::Progress,
) -> Result<Loaded> {
    load_file_with(found, opts, progress, &mut |display, stem, bytes| {
        canonical(display, stem, bytes, opts)
    })
}

/// [`load_file`], canonical bytes parsed by `canonical`.
fn load_file_with(
    found: &Found,
    opts: &ReadOptions,
    progress: &dyn crate::util::progress::Progress,
    canonical: ParseCanonical<'_>,
) -> Result<Loaded> {
    let walked = matches!(found, Found::Path { walked: true, .. });
    let (bytes, display) = match load(found) {
        Ok(loaded) => loaded,
        // A folder in the list is one a format claimed (an OpenHands
        // conversation): read through its path. Asking the error, not the
        // file system beforehand, costs every other file nothing.
        Err(Error::Io { path, source }) if source.kind() == std::io::ErrorKind::IsADirectory => {
            return load_path(found, &path, &[], opts, progress);
        }
        // An unreadable file of a walked folder does not stop a lenient run.
        Err(Error::Io { path, source }) if walked && opts.lenient => {
            return Ok(Loaded::Unreadable(unreadable_note(&path, source)));
        }
        Err(e) => return Err(e),
    };
    let sha256 = if opts.digests {
        crate::util::number::hex(&Sha256::digest(&bytes))
    } else {
        String::new()
    };
    let stored = bytes.len() as u64;
    if let Found::Path { path, .. } = found {
        // A database is read through its path, by the format that claims it.
        if bytes.starts_with(SQLITE_MAGIC) {
            return load_path(found, path, &bytes[..bytes.len().min(100)], opts, progress);
        }
    }
    let parsed = parse_bytes_with(&display, found.stem(), bytes, opts, canonical);
    progress.inc(stored);
    match parsed {
        Ok(fs) => Ok(Loaded::File {
            display,
            sha256,
            stored,
            fs: Box::new(fs),
        }),
        Err(Error::Unrecognised {
            detail, json_lines, ..
        }) if walked && (!json_lines || opts.lenient) => Ok(Loaded::Skipped(Skip::Unrecognised {
            file: display,
            detail,
        })),
        Err(Error::Unrecognised {
            path,
            detail,
            json_lines: true,
        }) => Err(Error::Unrecognised {
            path,
            detail: format!(
                "{detail}; it holds JSON Lines, so the run stops rather than skip it (--lenient skips it)"
            ),
            json_lines: true,
        }),
        Err(e) => Err(e),
    }
}

/// The first bytes of every SQLite database file.
const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// Read a folder or a database through the format that claims it
/// ([`crate::input::import::path_format`]); one that no format claims is
/// unrecognised (skipped with a note when walked). `head`: a file's first
/// bytes (empty for a folder). The digest of a folder covers the names and
/// bytes of its files, in byte order of their paths.
fn load_path(
    found: &Found,
    path: &Path,
    head: &[u8],
    opts: &ReadOptions,
    progress: &dyn crate::util::progress::Progress,
) -> Result<Loaded> {
    let walked = matches!(found, Found::Path { walked: true, .. });
    let display = path.display().to_string();
    let is_dir = head.is_empty();
    let Some(fmt) = crate::input::import::path_format(path, is_dir, head, opts.format) else {
        let what = if is_dir {
            "a folder"
        } else {
            "a SQLite database"
        };
        // A database that cannot be read says why, rather than that it is
        // no agent's (which no one can tell).
        let trouble = (!is_dir)
            .then(|| crate::input::import::sqlite_trouble(path))
            .flatten();
        if let (Some(message), false) = (&trouble, walked) {
            return Err(Error::File {
                path: display,
                message: message.clone(),
            });
        }
        let detail = match trouble {
            Some(why) => format!(" (a SQLite database that cannot be read: {why})"),
            None => format!(" ({what} no format reads: expected an OpenHands conversation folder, an OpenCode `opencode.db` or a Goose `sessions.db`)"),
        };
        if walked {
            return Ok(Loaded::Skipped(Skip::Unrecognised {
                file: display,
                detail,
            }));
        }
        return Err(Error::Unrecognised {
            path: display,
            detail,
            json_lines: false,
        });
    };
    let (sha256, stored) = path_digest(path, opts.digests)?;
    // A database's cells obey the caps a compressed stream does.
    let caps = crate::input::format::Caps {
        max_bytes: opts.max_gzip_bytes,
        max_ratio: opts.max_gzip_ratio,
    };
    let read = crate::input::format::with_caps(caps, || {
        crate::input::import::import_path(fmt, path, &display, &found.stem(), opts.lenient)
    });
    let fs = match read {
        Ok(fs) => fs,
        Err(Error::Io { path, source }) if walked && opts.lenient => {
            return Ok(Loaded::Unreadable(unreadable_note(&path, source)));
        }
        Err(e) => return Err(e),
    };
    progress.inc(stored);
    Ok(Loaded::File {
        display,
        sha256,
        stored,
        fs: Box::new(fs),
    })
}

/// The SHA-256 (when `digests`) and stored size of a file, or of a
/// folder's regular files (names and bytes, in byte order of their paths).
fn path_digest(path: &Path, digests: bool) -> Result<(String, u64)> {
    let mut files: Vec<PathBuf> = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(p) = stack.pop() {
        let meta = std::fs::metadata(&p).map_err(|e| Error::io(&p, e))?;
        if meta.is_dir() {
            for entry in std::fs::read_dir(&p).map_err(|e| Error::io(&p, e))? {
                stack.push(entry.map_err(|e| Error::io(&p, e))?.path());
            }
        } else if meta.is_file() {
            files.push(p);
        }
    }
    files.sort_by(|a, b| {
        a.as_os_str()
            .as_encoded_bytes()
            .cmp(b.as_os_str().as_encoded_bytes())
    });
    let mut hasher = Sha256::new();
    let mut stored = 0u64;
    for f in &files {
        if digests {
            let bytes = std::fs::read(f).map_err(|e| Error::io(f, e))?;
            let rel = f.strip_prefix(path).unwrap_or(f);
            hasher.update(rel.as_os_str().as_encoded_bytes());
            hasher.update([0u8]);
            hasher.update(&bytes);
            stored += bytes.len() as u64;
        } else {
            stored += std::fs::metadata(f).map_err(|e| Error::io(f, e))?.len();
        }
    }
    let sha = if digests {
        crate::util::number::hex(&hasher.finalize())
    } else {
        String::new()
    };
    Ok((sha, stored))
}

/// The note on a walked file that cannot be read (`--lenient`).
fn unreadable_note(path: &Path, source: std::io::Error) -> Skip {
    Skip::Unreadable {
        file: path.display().to_string(),
        what: "cannot read",
        source: Arc::new(source),
    }
}

/// The sessions of files read: native ids told apart across files, records
/// of one id merged in reading order (resume copies dropped), metadata
/// attached; in first-seen order.
fn merge_files(mut read: Vec<ReadFile>) -> Vec<Arc<Session>> {
    // Continuations after the files they continue (stable: reading order otherwise).
    read.sort_by_key(|r| r.fs.part);
    join_continuations(&mut read);
    separate_native_ids(&mut read);
    // Session id -> records, in reading order; sessions with the same id in
    // several files form one session.
    let mut order: Vec<String> = Vec::new();
    let mut by_id: HashMap<String, Vec<Event>> = HashMap::new();
    let mut whole: HashMap<String, bool> = HashMap::new();
    let mut extra_meta: HashMap<String, Map<String, Value>> = HashMap::new();
    // Keys of native records already taken per session (resume copies).
    let mut seen_keys: HashMap<String, HashSet<String>> = HashMap::new();
    for ReadFile { file_idx, fs, .. } in read {
        let mut record_keys = fs.record_keys;
        for (id, meta) in fs.session_meta {
            extra_meta.entry(id).or_default().extend(meta);
        }
        for (id, records) in fs.sessions {
            let slot = by_id.entry(id.clone()).or_insert_with(|| {
                order.push(id.clone());
                Vec::new()
            });
            if fs.whole_messages {
                whole.insert(id.clone(), true);
            }
            let keys = record_keys.remove(&id).unwrap_or_default();
            let seen = seen_keys.entry(id.clone()).or_default();
            let before: HashSet<String> = if keys.is_empty() {
                HashSet::new()
            } else {
                seen.clone()
            };
            slot.reserve(records.len());
            for (i, mut e) in records.into_iter().enumerate() {
                if let Some(Some(k)) = keys.get(i) {
                    if before.contains(k) {
                        continue;
                    }
                    seen.insert(k.clone());
                }
                e.origin.file = file_idx;
                slot.push(e);
            }
        }
    }
    order
        .into_iter()
        .map(|id| {
            let records = by_id.remove(&id).unwrap_or_default();
            let whole = whole.get(&id).copied().unwrap_or(false);
            let meta = extra_meta.remove(&id);
            Arc::new(session_of(id, records, whole, meta))
        })
        .collect()
}

/// The files of a streamed read by their position in the walk (`Origin::file`
/// of the sessions a streamed read hands out), so a session's origins resolve
/// to paths before the read is over.
#[derive(Debug, Clone, Default)]
pub struct FileNames(pub Vec<String>);

impl FileNames {
    /// Where one origin points.
    pub fn provenance<'a>(&'a self, o: &'a Origin) -> crate::event::Provenance<'a> {
        crate::event::provenance_of(o, |f| self.0.get(f as usize).map_or("", String::as_str))
    }

    /// Where event `event` (1-based) of `session` came from.
    pub fn event_provenance<'a>(
        &'a self,
        session: &'a Session,
        event: u32,
    ) -> Option<crate::event::Provenance<'a>> {
        let e = session.events.get((event as usize).checked_sub(1)?)?;
        Some(self.provenance(&e.origin))
    }
}

/// What a streamed read leaves: the inputs as [`read_corpus`] describes them,
/// and one value per session, sorted by session id.
#[derive(Debug)]
pub struct Streamed<T> {
    /// Input files in reading order.
    pub files: Vec<SourceFile>,
    /// Notes on skipped lines and files, as [`Corpus::skipped`].
    pub skipped: Vec<Skip>,
    /// Unreadable entries skipped (`--lenient`).
    pub unreadable: u64,
    /// `(session id, what `f` made of it)`, sorted by id.
    pub sessions: Vec<(String, T)>,
    /// For each file number a record's [`Origin::file`] may hold, its place
    /// in [`Streamed::files`] (`None`: a file skipped or unreadable). The
    /// numbers `f` saw count every file walked, read or not, so without this
    /// a skipped file shifted every later session onto the next file.
    pub file_of_origin: Vec<Option<u32>>,
}

impl<T> Streamed<T> {
    /// The inputs as a corpus without sessions (for the notes and checks
    /// that read only files and skips).
    pub fn inputs(&self) -> Corpus {
        Corpus {
            files: self.files.clone(),
            sessions: Vec::new(),
            skipped: self.skipped.clone(),
            unreadable: self.unreadable,
        }
    }
}

/// Files per thread from which a canonical file's sessions are replayed as
/// it is parsed, one file per thread; with fewer, a file's sessions are
/// spread over the threads once it is parsed.
const GIVING_FILES_PER_THREAD: usize = 4;

/// Stored bytes of files whose parse a streamed read keeps for the merge of
/// ids shared across files, rather than reading them again: a file is known
/// to share only once a file before it gave the same id, so the first of
/// each group is read again. Beyond the budget (many runs of one benchmark's
/// tasks, say), every file is read again and memory stays a file per thread.
const KEEP_SHARED_BYTES: u64 = 64 << 20;

/// One file of a streamed read after its sessions were handed out.
struct Streamed1<T> {
    display: String,
    sha256: String,
    stored: u64,
    format: String,
    skipped: Vec<SkippedLine>,
    skipped_lines: u64,
    unknown: u64,
    /// Session ids in the file, as it gave them (before any renaming).
    ids: Vec<String>,
    /// `f` of every session of this file taken alone.
    done: Vec<(String, T)>,
    /// Ids of sessions not handed to `f` alone because an earlier file (or
    /// this one, earlier) gave the same id: they are merged and handed out
    /// below. The check is by hash: one not shared after all sends the read
    /// down the exact path (see [`stream_sessions`]).
    unreplayed: Vec<String>,
    /// The file joins another's session, or is joined (a continuation):
    /// the whole read decides, as ids alone may not tell.
    joins: bool,
    /// Standard input cannot be read twice: its sessions are kept; so are a
    /// file's that gave an id seen before (see [`KEEP_SHARED_BYTES`]).
    kept: Option<Box<FileSessions>>,
}

enum Pass1<T> {
    File(Box<Streamed1<T>>),
    Skipped(Skip),
    Unreadable(Skip),
}

/// [`read_corpus`] without holding the corpus: every file is parsed, its
/// sessions are handed to `f` one by one and dropped, and only what `f`
/// returns is kept, so memory holds the files in flight (one per thread) and
/// the values. The values equal `f` over [`read_corpus`]'s sessions, in the
/// same order, and the errors are the same.
/// A large canonical file is not held whole either: `large` reads it in
/// batches and hands each session out once its last line is read.
///
/// Most ids live in one file. The few that do not (one session across
/// several files, native ids clashing across files) are found once every
/// file is read; only the files holding them are read again, merged as
/// [`read_corpus`] merges, and handed to `f` once more.
pub fn stream_sessions<T: Send>(
    inputs: &InputFiles,
    opts: &ReadOptions,
    workers: &Workers,
    progress: &dyn crate::util::progress::Progress,
    f: &(dyn Fn(Arc<Session>, &FileNames) -> T + Sync),
) -> Result<Streamed<T>> {
    stream_sessions_hashed(inputs, opts, workers, progress, f, false)
}

/// [`stream_sessions`]; `collide`: every id hashes alike (tests of the
/// exact path a hash collision takes).
fn stream_sessions_hashed<T: Send>(
    inputs: &InputFiles,
    opts: &ReadOptions,
    workers: &Workers,
    progress: &dyn crate::util::progress::Progress,
    f: &(dyn Fn(Arc<Session>, &FileNames) -> T + Sync),
    collide: bool,
) -> Result<Streamed<T>> {
    let files = &inputs.files;
    progress.set_length(stored_bytes(files));
    let names = FileNames(
        files
            .iter()
            .map(|f| match f {
                Found::Stdin => "-".to_string(),
                Found::Path { path, .. } => path.display().to_string(),
            })
            .collect(),
    );
    // Every id seen so far, hashed: a file giving an id seen before (in
    // another file, or earlier in itself) is merged below (unless the
    // hashes alone matched), so its parse is kept for that (within a
    // budget) instead of read again.
    // Which file of a group is kept depends on the threads' timing; what
    // is merged does not (a kept parse is the parse a second read makes).
    let seen = std::sync::Mutex::new(HashSet::<u64>::new());
    let keep_left = std::sync::atomic::AtomicU64::new(KEEP_SHARED_BYTES);
    let id_hash =
        std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default();
    // Every file read whole, merged as read_corpus merges, and every session
    // handed to `f`: where the streamed read cannot decide alone.
    let whole_read = |mut out: Streamed<T>| -> Result<Streamed<T>> {
        let corpus = read_files(inputs, opts, workers, &crate::util::progress::NoProgress)?;
        let names = FileNames(corpus.files.iter().map(|f| f.path.clone()).collect());
        // Here records are numbered by the files read, as read_corpus does.
        out.file_of_origin = (0..corpus.files.len() as u32).map(Some).collect();
        out.sessions = workers.install(|| {
            corpus
                .sessions
                .par_iter()
                .map(|s| (s.id.clone(), f(s.clone(), &names)))
                .collect()
        });
        Ok(out)
    };
    let one = |(fi, found): (usize, &Found)| -> Result<Pass1<T>> {
        if let Found::Path { path, walked } = found {
            if large::streams(path, opts) {
                match large::stream(fi, found, path, opts, progress, &names, f) {
                    Ok(Some(done)) => return Ok(done),
                    // Not canonical: the native importers read it whole.
                    Ok(None) => {}
                    Err(Error::Io { path, source }) if *walked && opts.lenient => {
                        return Ok(Pass1::Unreadable(unreadable_note(&path, source)));
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        // With enough files to keep every thread busy, a canonical file's
        // sessions go to `f` on this thread as each is parsed (standard
        // input is kept whole for the merge of shared ids below).
        let giving = (rayon::current_num_threads() == 1
            || files.len() >= GIVING_FILES_PER_THREAD * rayon::current_num_threads())
            && !matches!(found, Found::Stdin);
        let mut given: Option<Vec<(String, T)>> = None;
        let loaded = if giving {
            load_file_with(found, opts, progress, &mut |display, stem, bytes| {
                let done = given.get_or_insert_with(Vec::new);
                let batch = crate::input::canonical::parse_giving(
                    display,
                    stem,
                    bytes,
                    opts.lenient,
                    &mut |id, mut records| {
                        records.iter_mut().for_each(|e| e.origin.file = fi as u32);
                        let s = session_of(id.clone(), records, false, None);
                        done.push((id, f(Arc::new(s), &names)));
                    },
                )?;
                Ok(batch.into_file())
            })?
        } else {
            load_file(found, opts, progress)?
        };
        let fs = match loaded {
            Loaded::File {
                display,
                sha256,
                stored,
                fs,
            } => (display, sha256, stored, fs),
            Loaded::Skipped(note) => return Ok(Pass1::Skipped(note)),
            Loaded::Unreadable(note) => return Ok(Pass1::Unreadable(note)),
        };
        let (display, sha256, stored, mut fs) = fs;
        let joins = fs.part > 0 || fs.continued_by.is_some();
        let ids: Vec<String> = fs.sessions.iter().map(|(id, _)| id.clone()).collect();
        // Which of this file's sessions give an id seen before.
        let again: Vec<usize> = {
            use std::hash::BuildHasher;
            let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
            // Every id goes in (no short cut): a later file may share any.
            let hash = |id: &str| match collide {
                true => 0,
                false => id_hash.hash_one(id),
            };
            (0..ids.len())
                .filter(|&k| !seen.insert(hash(&ids[k])))
                .collect()
        };
        let seen_before = !again.is_empty();
        // Sessions given as parsed are no longer in `fs`: those are read again.
        let keep = matches!(found, Found::Stdin)
            || (seen_before
                && given.is_none()
                && keep_left
                    .fetch_update(
                        std::sync::atomic::Ordering::Relaxed,
                        std::sync::atomic::Ordering::Relaxed,
                        |left| left.checked_sub(stored),
                    )
                    .is_ok());
        let kept = keep.then(|| fs.clone());
        let mut unreplayed = Vec::new();
        let done = match given {
            Some(done) => done,
            None => {
                let whole = fs.whole_messages;
                let mut meta = std::mem::take(&mut fs.session_meta);
                // A session whose id was given before is merged with the
                // others of that id and handed to `f` then: its result
                // alone would be thrown away (on runs of one benchmark
                // repeated, nearly every session's).
                let alone: Vec<(String, Session)> = std::mem::take(&mut fs.sessions)
                    .into_iter()
                    .enumerate()
                    .filter_map(|(k, (id, mut records))| {
                        if again.binary_search(&k).is_ok() {
                            unreplayed.push(id);
                            return None;
                        }
                        records.iter_mut().for_each(|e| e.origin.file = fi as u32);
                        let m = meta.remove(&id);
                        Some((id.clone(), session_of(id, records, whole, m)))
                    })
                    .collect();
                alone
                    .into_par_iter()
                    .map(|(id, s)| (id, f(Arc::new(s), &names)))
                    .collect()
            }
        };
        let skipped_lines = fs.skipped.len() as u64;
        fs.skipped.truncate(KEEP_SKIPPED);
        Ok(Pass1::File(Box::new(Streamed1 {
            display,
            sha256,
            stored,
            format: fs.format,
            skipped: fs.skipped,
            skipped_lines,
            unknown: fs.unknown,
            ids,
            done,
            unreplayed,
            joins,
            kept,
        })))
    };
    // Everything, the sessions of one file included, runs on the workers.
    // One file a job: rayon would otherwise hand each thread long runs of
    // files, and files differ in cost by format and size, so one thread
    // finished its run alone (a quarter of a two-core replay of the
    // real-shaped corpus); a job costs microseconds, a file a millisecond.
    let passed: Vec<Result<Pass1<T>>> = workers.install(|| {
        files
            .par_iter()
            .enumerate()
            .with_max_len(1)
            .map(one)
            .collect()
    });
    // Bookkeeping in file order, as read_corpus does it.
    let mut out = Streamed {
        files: Vec::new(),
        unreadable: inputs.notes.len() as u64,
        skipped: inputs.notes.clone(),
        sessions: Vec::new(),
        file_of_origin: Vec::with_capacity(files.len()),
    };
    let mut per_file: Vec<Option<Box<Streamed1<T>>>> = Vec::with_capacity(files.len());
    out.files.reserve_exact(files.len());
    for p in passed {
        let p = p?;
        out.file_of_origin
            .push(matches!(p, Pass1::File(_)).then_some(out.files.len() as u32));
        match p {
            Pass1::File(mut sf) => {
                note_skipped_lines(&mut out.skipped, &sf.display, &sf.skipped);
                // Moved, not copied: most real logs are a file a session.
                out.files.push(SourceFile {
                    path: std::mem::take(&mut sf.display),
                    format: std::mem::take(&mut sf.format),
                    sha256: std::mem::take(&mut sf.sha256),
                    bytes: sf.stored,
                    skipped_lines: sf.skipped_lines,
                    unknown_records: sf.unknown,
                });
                sf.skipped = Vec::new();
                per_file.push(Some(sf));
            }
            Pass1::Skipped(note) => {
                out.skipped.push(note);
                per_file.push(None);
            }
            Pass1::Unreadable(note) => {
                out.unreadable += 1;
                out.skipped.push(note);
                per_file.push(None);
            }
        }
    }
    // A continuation may join a session of another id (Harbor's
    // `continued_trajectory_ref`): rare, so the whole read merges them.
    if per_file.iter().flatten().any(|sf| sf.joins) {
        return whole_read(out);
    }
    // Ids given more than once, by any file or twice by one.
    // Sorted, not counted in a map: a map of every id (and its copy as it
    // grew) was a large sweep's peak.
    let mut all: Vec<&str> = per_file
        .iter()
        .flatten()
        .flat_map(|sf| sf.ids.iter().map(String::as_str))
        .collect();
    all.sort_unstable();
    let multi: HashSet<String> = all
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0].to_string())
        .collect();
    drop(all);
    // A session left out above by a hash that matched another id's: the
    // exact path (astronomically rare with 64-bit hashes).
    if per_file
        .iter()
        .flatten()
        .any(|sf| sf.unreplayed.iter().any(|id| !multi.contains(id)))
    {
        return whole_read(out);
    }
    let involved: Vec<usize> = (0..per_file.len())
        .filter(|&fi| {
            per_file[fi]
                .as_ref()
                .is_some_and(|sf| sf.ids.iter().any(|id| multi.contains(id)))
        })
        .collect();
    // Every file's ids are known: drop their copies now, and size the
    // list of sessions once (grown by doubling, it held up to twice what it
    // needed, and its old and new buffers at once: a quarter of a large
    // sweep's peak).
    let mut total = 0;
    for sf in per_file.iter_mut().flatten() {
        sf.ids = Vec::new();
        total += sf.done.len();
    }
    out.sessions.reserve_exact(total);
    let mut kept: HashMap<usize, Box<FileSessions>> = HashMap::new();
    for (fi, sf) in per_file.iter_mut().enumerate() {
        let Some(sf) = sf else { continue };
        if let Some(k) = sf.kept.take() {
            kept.insert(fi, k);
        }
        out.sessions.extend(
            std::mem::take(&mut sf.done)
                .into_iter()
                .filter(|(id, _)| !multi.contains(id)),
        );
    }
    if !involved.is_empty() {
        // Read the involved files again (those whose parse was not kept),
        // keep only the ids they share, and merge those as read_corpus does.
        // The reads run on the workers, largest file first: one after
        // another, the real corpus's (one task's trajectories in several
        // runs) ran alone for a sixth of its two-core replay.
        let again: Vec<usize> = involved
            .iter()
            .copied()
            .filter(|fi| !kept.contains_key(fi))
            .collect();
        let loads: Vec<Result<Loaded>> = workers.install(|| {
            largest_first(
                &again,
                |&fi| file_size(&files[fi]),
                |&fi| load_file(&files[fi], opts, &crate::util::progress::NoProgress),
            )
        });
        let mut loads: HashMap<usize, Result<Loaded>> = again.into_iter().zip(loads).collect();
        let mut read: Vec<ReadFile> = Vec::new();
        for fi in involved {
            let mut fs = match kept.remove(&fi) {
                Some(fs) => *fs,
                None => match loads.remove(&fi).expect("read above")? {
                    Loaded::File { fs, .. } => *fs,
                    // The file changed under us between the two reads.
                    _ => {
                        return Err(Error::File {
                            path: names.0[fi].clone(),
                            message: "changed while being read".into(),
                        })
                    }
                },
            };
            fs.sessions.retain(|(id, _)| multi.contains(id));
            fs.session_meta.retain(|id, _| multi.contains(id));
            fs.record_keys.retain(|id, _| multi.contains(id));
            let path = match &files[fi] {
                Found::Path { path, .. } => Some(path.clone()),
                Found::Stdin => None,
            };
            read.push(ReadFile {
                file_idx: fi as u32,
                path,
                fs,
            });
        }
        let merged = merge_files(read);
        let f = |s: Arc<Session>, names: &FileNames| (s.id.clone(), f(s, names));
        let taken: HashSet<&str> = out.sessions.iter().map(|(id, _)| id.as_str()).collect();
        if merged.iter().any(|s| taken.contains(s.id.as_str())) {
            // A renamed id (`folder/id`) equals another session's id: the
            // merge of the whole corpus decides, as read_corpus does.
            drop(taken);
            return whole_read(out);
        }
        let again: Vec<(String, T)> =
            workers.install(|| merged.into_par_iter().map(|s| f(s, &names)).collect());
        out.sessions.extend(again);
    }
    out.sessions.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Notes on a file's skipped lines: its first reason always, more while
/// under [`KEEP_SKIPPED`].
fn note_skipped_lines(notes: &mut Vec<Skip>, display: &str, skipped: &[SkippedLine]) {
    for (i, s) in skipped.iter().enumerate() {
        if i == 0 || notes.len() < KEEP_SKIPPED {
            notes.push(Skip::Line {
                file: display.to_string(),
                // Line 0: the message names the place (an event file, a row).
                line: (s.line != 0).then_some(s.line),
                message: s.reason.to_string(),
            });
        }
    }
}

/// Bytes the files hold on disk (stdin counts 0), for the progress bar.
fn stored_bytes(files: &[Found]) -> u64 {
    files.iter().map(file_size).sum()
}

/// A file's size on disk (stdin, and a file that cannot be read, count 0).
fn file_size(found: &Found) -> u64 {
    match found {
        Found::Path { path, .. } => std::fs::metadata(path).map_or(0, |m| m.len()),
        Found::Stdin => 0,
    }
}

/// `f` over every item on the current pool, the largest (by `size`) first,
/// each a job taken from one queue by whichever thread is free; the results
/// in the items' order. (Split in runs, as `par_iter` splits, one thread can
/// be left with the largest items.)
fn largest_first<I: Sync, R: Send>(
    items: &[I],
    size: impl Fn(&I) -> u64,
    f: impl Fn(&I) -> R + Sync,
) -> Vec<R> {
    let mut order: Vec<(u64, usize)> = items
        .iter()
        .enumerate()
        .map(|(i, x)| (size(x), i))
        .collect();
    order.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let slots: Vec<std::sync::Mutex<Option<R>>> =
        items.iter().map(|_| Default::default()).collect();
    // FIFO spawns: every thread takes the oldest job first, so the queue is
    // worked in the order it was filled.
    rayon::scope_fifo(|scope| {
        for &(_, i) in &order {
            let (f, slots) = (&f, &slots);
            scope.spawn_fifo(move |_| {
                let r = f(&items[i]);
                *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every job ran")
        })
        .collect()
}

/// One session from its records in reading order, with the file's
/// whole-message flag and any extra metadata (the session's own wins).
fn session_of(
    id: String,
    records: Vec<Event>,
    whole_messages: bool,
    meta: Option<Map<String, Value>>,
) -> Session {
    let mut s = Session::from_events(id, records);
    s.whole_messages = whole_messages;
    for (k, v) in meta.into_iter().flatten() {
        s.meta.meta.entry(k).or_insert(v);
    }
    s
}

/// One file loaded and parsed (or skipped as unrecognised), before merging.
enum Loaded {
    File {
        display: String,
        sha256: String,
        stored: u64,
        fs: Box<FileSessions>,
    },
    /// Walked, but no importer recognises it.
    Skipped(Skip),
    /// Walked, but could not be read (lenient).
    Unreadable(Skip),
}

/// One file as read, before its sessions are merged into the corpus.
struct ReadFile {
    file_idx: u32,
    path: Option<PathBuf>,
    fs: FileSessions,
}

/// A file that continues another's session (Harbor's `trajectory.cont-N`)
/// joins it: its sessions take the parent's id (its subagents', `ID/...`,
/// follow) and its session record the parent's key, so the two are one
/// session below. The parent is the file whose `continued_by` names it, else
/// the file of the same folder and an earlier part that gives the same id.
/// `read` is in order of part, so a chain joins link by link.
fn join_continuations(read: &mut [ReadFile]) {
    for g in 0..read.len() {
        if read[g].fs.part == 0 || read[g].fs.sessions.is_empty() {
            continue;
        }
        let Some(path) = read[g].path.clone() else {
            continue;
        };
        let own = read[g].fs.sessions[0].0.clone();
        let folder = path.parent();
        let named = (0..g).find(|&f| {
            let rf = &read[f];
            match (
                &rf.fs.continued_by,
                rf.path.as_deref().and_then(Path::parent),
            ) {
                (Some(name), Some(dir)) => dir.join(name) == path,
                _ => false,
            }
        });
        let parent = named.or_else(|| {
            (0..g).rev().find(|&f| {
                let rf = &read[f];
                rf.fs.part < read[g].fs.part
                    && rf.path.as_deref().and_then(Path::parent) == folder
                    && rf.fs.sessions.first().is_some_and(|(id, _)| *id == own)
            })
        });
        let Some(f) = parent else { continue };
        let Some((pid, _)) = read[f].fs.sessions.first() else {
            continue;
        };
        let pid = pid.clone();
        let key = read[f]
            .fs
            .record_keys
            .get(&pid)
            .and_then(|k| k.first().cloned())
            .flatten();
        let fs = &mut read[g].fs;
        let renamed = |id: &str| -> Option<String> {
            if id == own {
                Some(pid.clone())
            } else {
                id.strip_prefix(own.as_str())
                    .filter(|rest| rest.starts_with('/'))
                    .map(|rest| format!("{pid}{rest}"))
            }
        };
        for (id, _) in fs.sessions.iter_mut() {
            if let Some(new) = renamed(id) {
                *id = new;
            }
        }
        fs.session_meta = std::mem::take(&mut fs.session_meta)
            .into_iter()
            .map(|(id, m)| (renamed(&id).unwrap_or(id), m))
            .collect();
        fs.record_keys = std::mem::take(&mut fs.record_keys)
            .into_iter()
            .map(|(id, k)| (renamed(&id).unwrap_or(id), k))
            .collect();
        if let (Some(key), Some(keys)) = (key, fs.record_keys.get_mut(&pid)) {
            if let Some(first) = keys.first_mut() {
                *first = Some(key);
            }
        }
    }
}

/// Native files that give the same session id hold different sessions unless
/// their record keys overlap (a resume copy): rename each group of such
/// sessions `<parent folders>/<id>`, with as many trailing parent folders of
/// its file as it takes to tell the groups apart. Canonical files keep the
/// spec's rule (same id = one session) and are left alone.
fn separate_native_ids(read: &mut [ReadFile]) {
    // id -> (file position, session position) over native files.
    let mut by_id: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    for (fi, rf) in read.iter().enumerate() {
        if rf.fs.format == "canonical" {
            continue;
        }
        for (si, (id, _)) in rf.fs.sessions.iter().enumerate() {
            let v = by_id.entry(id.clone()).or_insert_with(|| {
                order.push(id.clone());
                Vec::new()
            });
            v.push((fi, si));
        }
    }
    for id in order {
        let entries = &by_id[&id];
        if entries.len() < 2 {
            continue;
        }
        // Group entries whose key sets intersect (union by first match).
        let key_sets: Vec<HashSet<&str>> = entries
            .iter()
            .map(|&(fi, _)| {
                read[fi]
                    .fs
                    .record_keys
                    .get(&id)
                    .map(|ks| ks.iter().flatten().map(String::as_str).collect())
                    .unwrap_or_default()
            })
            .collect();
        let mut group: Vec<usize> = (0..entries.len()).collect();
        for i in 0..entries.len() {
            if let Some(j) = (0..i).find(|&j| !key_sets[i].is_disjoint(&key_sets[j])) {
                group[i] = group[j];
            }
        }
        let heads: Vec<usize> = (0..entries.len()).filter(|&i| group[i] == i).collect();
        if heads.len() < 2 {
            continue;
        }
        let folders: Vec<Vec<String>> = heads
            .iter()
            .map(|&h| {
                read[entries[h].0]
                    .path
                    .as_deref()
                    .and_then(Path::parent)
                    .map(|p| {
                        p.components()
                            .filter_map(|c| match c {
                                std::path::Component::Normal(n) => {
                                    Some(n.to_string_lossy().into_owned())
                                }
                                _ => None,
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .collect();
        let deepest = folders.iter().map(Vec::len).max().unwrap_or(0);
        let mut names: Vec<String> = Vec::new();
        for k in 1..=deepest.max(1) {
            names = folders
                .iter()
                .map(|f| {
                    let tail = &f[f.len().saturating_sub(k)..];
                    if tail.is_empty() {
                        id.clone()
                    } else {
                        format!("{}/{id}", tail.join("/"))
                    }
                })
                .collect();
            let distinct: HashSet<&String> = names.iter().collect();
            if distinct.len() == names.len() {
                break;
            }
        }
        // Same folders all the way up (one file given twice): number them.
        let distinct: HashSet<&String> = names.iter().collect();
        if distinct.len() != names.len() {
            names = names
                .iter()
                .enumerate()
                .map(|(n, s)| format!("{s}#{}", n + 1))
                .collect();
        }
        for (hi, &h) in heads.iter().enumerate() {
            for (i, &(fi, si)) in entries.iter().enumerate() {
                if group[i] != h {
                    continue;
                }
                let fs = &mut read[fi].fs;
                fs.sessions[si].0 = names[hi].clone();
                if let Some(m) = fs.session_meta.remove(&id) {
                    fs.session_meta.insert(names[hi].clone(), m);
                }
                if let Some(k) = fs.record_keys.remove(&id) {
                    fs.record_keys.insert(names[hi].clone(), k);
                }
            }
        }
    }
}

/// A file to read: a path, or stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// Standard input (`-`).
    Stdin,
    /// A file on disk; `walked` when found by walking a folder.
    Path {
        /// The path.
        path: PathBuf,
        /// Found by walking a folder (unrecognised files are skipped, not errors).
        walked: bool,
    },
}

impl Found {
    /// Default session id for records without a `session` field: the file stem.
    fn stem(&self) -> String {
        match self {
            Found::Stdin => "stdin".to_string(),
            Found::Path { path, .. } => file_stem(path),
        }
    }
}

/// The stem of `runs/a1.jsonl`, `runs/a1.jsonl.gz` or `runs/a1.jsonl.zst` is `a1`.
pub fn file_stem(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = strip_codec(&name);
    match name.rfind('.') {
        Some(i) if i > 0 => name[..i].to_string(),
        _ => name.to_string(),
    }
}

/// Expand folders recursively (byte order of paths); keep files and `-` in the order given.
/// Strict: an unreadable entry of a walked folder is an error (see [`collect_files_with`]).
pub fn collect_files(paths: &[PathBuf]) -> Result<Vec<Found>> {
    collect_files_with(paths, false).map(|(found, _)| found)
}

/// [`collect_files`]. Inside walked folders, only regular files and folders
/// are taken: a FIFO, socket or device is skipped (reading a FIFO would wait
/// for a writer forever), and a symbolic link to a folder is not followed (no
/// cycles). A dangling or looping symbolic link with a session file's name,
/// or a folder that cannot be listed, is an error; with `lenient` it is
/// skipped instead, with a note (`PATH: skipped file (...)`) in the second
/// value.
pub fn collect_files_with(paths: &[PathBuf], lenient: bool) -> Result<(Vec<Found>, Vec<Skip>)> {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            out.push(Found::Stdin);
            continue;
        }
        let meta = std::fs::metadata(p).map_err(|e| Error::io(p, e))?;
        if meta.is_dir() && claimed_folder(p) {
            out.push(Found::Path {
                path: p.clone(),
                walked: false,
            });
        } else if meta.is_dir() {
            let mut found = Vec::new();
            let mut w = Walk {
                lenient,
                found: &mut found,
                notes: &mut notes,
            };
            w.dir(p)?;
            // Byte order of the full paths, as the spec requires.
            found.sort_by(|a: &PathBuf, b| {
                a.as_os_str()
                    .as_encoded_bytes()
                    .cmp(b.as_os_str().as_encoded_bytes())
            });
            drop_compressed_twins(&mut found);
            out.extend(
                found
                    .into_iter()
                    .map(|path| Found::Path { path, walked: true }),
            );
        } else {
            out.push(Found::Path {
                path: p.clone(),
                walked: false,
            });
        }
    }
    Ok((out, notes))
}

/// Drop `X.zst` from a walk that also found `X`: Codex writes the plain
/// rollout and its compressed archive side by side while it archives, and
/// the plain file wins (as Codex reads them).
fn drop_compressed_twins(found: &mut Vec<PathBuf>) {
    let plain: HashSet<&[u8]> = found
        .iter()
        .map(|p| p.as_os_str().as_encoded_bytes())
        .collect();
    let twins: HashSet<PathBuf> = found
        .iter()
        .filter(|p| {
            p.as_os_str()
                .as_encoded_bytes()
                .strip_suffix(b".zst")
                .is_some_and(|stem| plain.contains(stem))
        })
        .cloned()
        .collect();
    found.retain(|p| !twins.contains(p));
}

/// A folder walk: what it found, and what it skipped under `--lenient`.
struct Walk<'a> {
    lenient: bool,
    found: &'a mut Vec<PathBuf>,
    notes: &'a mut Vec<Skip>,
}

impl Walk<'_> {
    /// Strict: the error; lenient: a note, and the walk goes on.
    fn unreadable(&mut self, path: &Path, what: &'static str, e: std::io::Error) -> Result<()> {
        if self.lenient {
            self.notes.push(Skip::Unreadable {
                file: path.display().to_string(),
                what,
                source: Arc::new(e),
            });
            Ok(())
        } else {
            Err(Error::File {
                path: path.display().to_string(),
                message: format!("{what}: {e} (--lenient skips it)"),
            })
        }
    }

    fn dir(&mut self, dir: &Path) -> Result<()> {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) => return self.unreadable(dir, "cannot list folder", e),
        };
        for entry in entries {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    self.unreadable(dir, "cannot list folder", e)?;
                    continue;
                }
            };
            let path = entry.path();
            let ft = match entry.file_type() {
                Ok(ft) => ft,
                Err(e) => {
                    self.unreadable(&path, "cannot read entry", e)?;
                    continue;
                }
            };
            if ft.is_dir() {
                // A folder that holds one session (an OpenHands conversation)
                // is read whole, not walked.
                if claimed_folder(&path) {
                    self.found.push(path);
                // A previous sweep's output folder is not input (`--out` inside the input folder).
                } else if !crate::util::outdir::is_output_folder(&path) {
                    self.dir(&path)?;
                }
                continue;
            }
            // Not a candidate by name alone: perhaps by its first bytes.
            let by_head = !is_candidate(&path);
            if by_head && !head_candidate(&path) {
                continue;
            }
            let ft = if ft.is_symlink() {
                match std::fs::metadata(&path) {
                    Ok(m) => m.file_type(),
                    // A `*.log` link is not known to be input: passed over.
                    Err(_) if by_head => continue,
                    Err(e) => {
                        self.unreadable(&path, "dangling or looping symbolic link", e)?;
                        continue;
                    }
                }
            } else {
                ft
            };
            // Only regular files: a FIFO would block the read forever, and
            // a link to a folder is not followed. A name some format picks up
            // by content (`*.log`) is kept if its first bytes say so.
            if ft.is_file() && (!by_head || crate::input::import::walk_head_claims(&path)) {
                self.found.push(path);
            }
        }
        Ok(())
    }
}

/// A file name without its `.gz` or `.zst` ending.
fn strip_codec(name: &str) -> &str {
    name.strip_suffix(".gz")
        .or_else(|| name.strip_suffix(".zst"))
        .unwrap_or(name)
}

/// Whether some format reads this folder whole ([`crate::input::import::path_format`]).
fn claimed_folder(path: &Path) -> bool {
    crate::input::import::path_format(path, true, &[], crate::input::import::InputFormat::Auto)
        .is_some()
}

/// Files a folder walk picks up: canonical JSONL and the native formats' extensions.
fn is_candidate(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let name = strip_codec(&name);
    name.ends_with(".jsonl") || crate::input::import::walk_extension(name)
}

/// Files a walk picks up only by their first bytes (`Format::head_extensions`;
/// uncompressed: the head is read as stored).
fn head_candidate(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    crate::input::import::walk_head_extension(&name)
}

/// Read a file's bytes as stored, and its display name.
fn load(found: &Found) -> Result<(Vec<u8>, String)> {
    match found {
        Found::Stdin => {
            let mut buf = Vec::new();
            std::io::stdin()
                .read_to_end(&mut buf)
                .map_err(|e| Error::io("-", e))?;
            Ok((buf, "-".to_string()))
        }
        Found::Path { path, .. } => {
            // As `std::fs::read`, into this thread's spare buffer, grown to
            // the file's size exactly: `read_to_end`'s own reserve doubles a
            // buffer a little too small (a 12 MB buffer became 24 MB for a
            // file slightly larger than the last, the peak of a sweep of
            // large files).
            let mut bytes = SPARE.take();
            std::fs::File::open(path)
                .and_then(|mut f| {
                    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
                    bytes.reserve_exact(usize::try_from(size).unwrap_or(0));
                    f.read_to_end(&mut bytes)
                })
                .map_err(|e| Error::io(path, e))?;
            Ok((bytes, path.display().to_string()))
        }
    }
}

thread_local! {
    /// This thread's last file buffer, read into again: a new one's pages
    /// were faulted in anew for every file once a sweep hands freed pages
    /// back at once (200,000 faults for 830 MB, a third of a one-configuration
    /// sweep's time). Kept up to [`SPARE_MAX`].
    static SPARE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The largest file buffer a thread keeps for the next file.
const SPARE_MAX: usize = 16 << 20;

/// Keep `bytes`' buffer for this thread's next file.
fn give_back(mut bytes: Vec<u8>) {
    if bytes.capacity() <= SPARE_MAX {
        bytes.clear();
        SPARE.set(bytes);
    }
}

/// Decompress gzip or zstd input within the caps of `opts`; a truncated
/// stream is an error at the line it broke.
fn gunzip(display: &str, codec: Codec, bytes: &[u8], opts: &ReadOptions) -> Result<Capped> {
    if codec == Codec::Zstd {
        if let Some((at, window)) = zstd_window_past_limit(bytes) {
            return Err(zstd_window_error(display, at, window));
        }
    }
    let dec = codec
        .decoder(bytes)
        .map_err(|e| Error::io(Path::new(display), e))?;
    let stored = bytes.len().max(1) as u64;
    let mut measure = || {
        let dec = codec
            .decoder(bytes)
            .map_err(|e| Error::io(Path::new(display), e))?;
        measure(
            display,
            codec,
            dec,
            stored,
            opts.max_gzip_bytes,
            opts.max_gzip_ratio,
        )
    };
    read_capped_measured(
        display,
        codec,
        dec,
        stored,
        opts,
        crate::util::limits::run_budget(),
        Some(&mut measure),
    )
}

/// Decompressed bytes a read holds before it knows the stream is within
/// its caps: the ratio's floor, below which no cap can refuse a stream.
/// Past it, the stream is first read through to its end and dropped
/// ([`measure`]), so a bomb is refused having held this much, not up to
/// its cap on every worker at once (two 4.4 MB gzip files of a 1 GB zero
/// stream held 1.2 GB at `-j 2`), and a stream within the caps takes its
/// exact size from the run's one budget at once (no doubling). The price:
/// a stream past the floor is inflated twice.
pub(crate) const HOLD_UNMEASURED: u64 = RATIO_FLOOR;

/// How many bytes a decompressing `reader` of a file of `stored` bytes
/// expands to, read a MiB at a time and dropped, under the caps and with
/// the errors of a read that keeps them ([`read_capped`]).
pub(crate) fn measure(
    display: &str,
    codec: Codec,
    mut reader: impl Read,
    stored: u64,
    max_bytes: u64,
    max_ratio: u64,
) -> Result<u64> {
    let mut chunk = vec![0u8; 1 << 20];
    let (mut total, mut newlines) = (0u64, 0u64);
    loop {
        match reader.read(&mut chunk) {
            Ok(0) => return Ok(total),
            Ok(n) => {
                total += n as u64;
                check_gzip_caps(display, codec, total, stored, max_bytes, max_ratio)?;
                newlines += memchr::memchr_iter(b'\n', &chunk[..n]).count() as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(Error::Line {
                    path: display.to_string(),
                    line: newlines + 1,
                    message: format!("{codec} stream is damaged or truncated ({e})"),
                })
            }
        }
    }
}

/// Decompressed bytes, and their share of the run's memory budget (given
/// back when they are dropped).
pub(crate) struct Capped {
    /// The bytes.
    pub bytes: Vec<u8>,
    _held: crate::util::limits::Held,
}

/// Read a decompressing `reader` of a file of `stored` bytes to its end,
/// within the caps of `opts` (`--max-gzip-bytes`, `--max-gzip-ratio`) and
/// the run's memory `budget`, every check made as the bytes stream in, a MiB
/// at a time: a bomb is refused once it passes a cap, never inflated first.
/// The buffer never grows past the cap (no doubling beyond it), and every
/// byte of it is taken from `budget`, which all workers of a run share, so
/// sixteen bombs at `-j 16` stop with an error instead of the kernel's kill.
/// Any decompressor can use it (gzip and zstd here; `codec` names it in errors).
#[cfg(test)]
pub(crate) fn read_capped(
    display: &str,
    codec: Codec,
    reader: impl Read,
    stored: u64,
    opts: &ReadOptions,
    budget: &'static crate::util::limits::MemoryBudget,
) -> Result<Capped> {
    read_capped_measured(display, codec, reader, stored, opts, budget, None)
}

/// The measure of a whole stream, read again from its start ([`measure`]).
type Measure<'a> = &'a mut dyn FnMut() -> Result<u64>;

/// [`read_capped`]; once past [`HOLD_UNMEASURED`], `measure` (when given)
/// reads the stream through first, and the buffer is then sized to it.
fn read_capped_measured(
    display: &str,
    codec: Codec,
    mut reader: impl Read,
    stored: u64,
    opts: &ReadOptions,
    budget: &'static crate::util::limits::MemoryBudget,
    mut measure: Option<Measure<'_>>,
) -> Result<Capped> {
    let over_budget = |at: usize| {
        Error::File {
        path: display.to_string(),
        message: format!(
            "decompressed input in memory at once would pass this run's budget of {} MiB (half the machine's memory) after {} bytes of this file; read fewer files at once (--jobs) or lower --max-gzip-bytes",
            budget.limit() >> 20,
            at
        ),
    }
    };
    let out_of_memory = |at: usize| Error::File {
        path: display.to_string(),
        message: format!(
            "out of memory after decompressing {at} bytes (--max-gzip-bytes sets a lower cap)"
        ),
    };
    let cap = opts
        .max_gzip_bytes
        .min(stored.saturating_mul(opts.max_gzip_ratio).max(RATIO_FLOOR));
    let mut out: Vec<u8> = Vec::new();
    let mut held = budget.hold();
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => {
                return Ok(Capped {
                    bytes: out,
                    _held: held,
                })
            }
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let line = out.iter().filter(|b| **b == b'\n').count() as u64 + 1;
                return Err(Error::Line {
                    path: display.to_string(),
                    line,
                    message: format!("{codec} stream is damaged or truncated ({e})"),
                });
            }
        };
        let total = out.len() as u64 + n as u64;
        check_gzip_caps(
            display,
            codec,
            total,
            stored,
            opts.max_gzip_bytes,
            opts.max_gzip_ratio,
        )?;
        if total > HOLD_UNMEASURED {
            if let Some(measure) = measure.take() {
                // The whole stream's size, within the caps (else their
                // error), held from the budget at once.
                let whole = measure()?.max(total);
                if !held.grow_to(whole) {
                    return Err(over_budget(out.len()));
                }
                if out.try_reserve_exact(whole as usize - out.len()).is_err() {
                    return Err(out_of_memory(out.len()));
                }
            }
        }
        if out.capacity() < out.len() + n {
            // Doubling, but never past the cap (which `total` is within).
            let want = (out.capacity() * 2)
                .max(out.len() + n)
                .min(cap.max(total) as usize);
            let more = want - out.len();
            if !held.grow_to(want as u64) {
                return Err(over_budget(out.len()));
            }
            // Growing the buffer can fail on a machine short of memory: say
            // so rather than call the stream damaged.
            if out.try_reserve_exact(more).is_err() {
                return Err(out_of_memory(out.len()));
            }
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

/// The caps on a gzip (or zstd) stream of `stored` bytes that has expanded to `total`.
fn check_gzip_caps(
    display: &str,
    codec: Codec,
    total: u64,
    stored: u64,
    max_bytes: u64,
    max_ratio: u64,
) -> Result<()> {
    if total > max_bytes {
        return Err(Error::File {
            path: display.to_string(),
            message: format!(
                "{codec} stream expands to more than {max_bytes} bytes (--max-gzip-bytes raises the cap)"
            ),
        });
    }
    if total > RATIO_FLOOR && total > stored.saturating_mul(max_ratio) {
        return Err(Error::File {
            path: display.to_string(),
            message: format!(
                "{codec} stream expands more than {max_ratio} times its {stored} bytes (--max-gzip-ratio raises the cap)"
            ),
        });
    }
    Ok(())
}

fn is_gzip(bytes: &[u8]) -> bool {
    bytes.len() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b
}

/// A compressed input, told by its first bytes: gzip, or zstd (Codex's
/// archived rollouts, `*.jsonl.zst`). Both go through the same caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Codec {
    Gzip,
    Zstd,
}

/// The zstd frame magic number, little-endian.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Whether `head` starts with a zstd skippable frame (magic 0x184D2A50 to
/// 0x184D2A5F, little-endian): `pzstd` opens its output with one.
fn is_zstd_skippable(head: &[u8]) -> bool {
    head.len() >= 4 && head[0] & 0xf0 == 0x50 && head[1..4] == [0x2a, 0x4d, 0x18]
}

/// The largest zstd window looptune decodes, as a power of two: 2^28 bytes
/// (256 MiB), what `zstd --long=28` writes (zstd's own decoder stops at
/// 2^27 unless told more). The window is memory a worker holds while it
/// decodes, so a stream may not ask for more than this.
pub(crate) const ZSTD_WINDOW_LOG_MAX: u32 = 28;

/// The first zstd frame of `bytes` whose window is past
/// [`ZSTD_WINDOW_LOG_MAX`]: where it starts and the window it asks for
/// (skippable frames passed over; a header cut short or a damaged frame
/// is left to the decoder to name).
pub(crate) fn zstd_window_past_limit(bytes: &[u8]) -> Option<(usize, u64)> {
    let mut at = 0usize;
    while let Some(frame) = bytes.get(at..).filter(|f| f.len() >= 8) {
        if is_zstd_skippable(frame) {
            let size = u32::from_le_bytes([frame[4], frame[5], frame[6], frame[7]]);
            at = at.checked_add(8 + size as usize)?;
            continue;
        }
        if !frame.starts_with(&ZSTD_MAGIC) {
            return None;
        }
        let window = zstd_frame_window(frame)?;
        if window > 1 << ZSTD_WINDOW_LOG_MAX {
            return Some((at, window));
        }
        at += zstd::zstd_safe::find_frame_compressed_size(frame).ok()?;
    }
    None
}

/// The window a zstd frame's header asks for (RFC 8878, 3.1.1.1): its
/// window descriptor, or for a single-segment frame its content size.
fn zstd_frame_window(frame: &[u8]) -> Option<u64> {
    let fhd = *frame.get(4)?;
    if fhd & 0x20 == 0 {
        let wd = *frame.get(5)?;
        let base = 1u64 << (10 + u32::from(wd >> 3));
        return Some(base + base / 8 * u64::from(wd & 7));
    }
    let dict = [0, 1, 2, 4][usize::from(fhd & 3)];
    let len = [1, 2, 4, 8][usize::from(fhd >> 6)];
    let field = frame.get(5 + dict..5 + dict + len)?;
    let mut v = [0u8; 8];
    v[..len].copy_from_slice(field);
    let size = u64::from_le_bytes(v);
    Some(if len == 2 { size + 256 } else { size })
}

/// The error of a zstd frame whose window is past the limit.
pub(crate) fn zstd_window_error(display: &str, at: usize, window: u64) -> Error {
    Error::File {
        path: display.to_string(),
        message: format!(
            "zstd frame at byte {at} needs a window of {window} bytes, past looptune's limit of {} (2^{ZSTD_WINDOW_LOG_MAX}, what `zstd --long={ZSTD_WINDOW_LOG_MAX}` writes): not read; recompress it with a smaller --long",
            1u64 << ZSTD_WINDOW_LOG_MAX
        ),
    }
}

impl Codec {
    /// The codec of a stream starting with `head`, if it is compressed.
    pub(crate) fn of(head: &[u8]) -> Option<Codec> {
        if is_gzip(head) {
            Some(Codec::Gzip)
        } else if head.starts_with(&ZSTD_MAGIC) || is_zstd_skippable(head) {
            Some(Codec::Zstd)
        } else {
            None
        }
    }

    /// A decoder of every member (gzip) or frame (zstd, skippable frames
    /// passed over, windows up to [`ZSTD_WINDOW_LOG_MAX`]) of `r`.
    pub(crate) fn decoder<'r, R: std::io::BufRead + 'r>(
        self,
        r: R,
    ) -> std::io::Result<Box<dyn Read + 'r>> {
        Ok(match self {
            Codec::Gzip => Box::new(flate2::read::MultiGzDecoder::new(r)),
            Codec::Zstd => {
                let mut d = zstd::stream::read::Decoder::with_buffer(r)?;
                d.window_log_max(ZSTD_WINDOW_LOG_MAX)?;
                Box::new(d)
            }
        })
    }
}

impl std::fmt::Display for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Codec::Gzip => "gzip",
            Codec::Zstd => "zstd",
        })
    }
}

/// Parse one file's bytes (canonical or native) into sessions.
pub fn parse_bytes(
    display: &str,
    stem: String,
    bytes: Vec<u8>,
    opts: &ReadOptions,
) -> Result<FileSessions> {
    parse_bytes_with(display, stem, bytes, opts, &mut |display, stem, bytes| {
        canonical(display, stem, bytes, opts)
    })
}

/// How canonical bytes become a file's sessions: `(display, stem, bytes)`.
type ParseCanonical<'a> = &'a mut dyn FnMut(&str, &str, &[u8]) -> Result<FileSessions>;

/// [`parse_bytes`], canonical bytes parsed by `canonical`.
fn parse_bytes_with(
    display: &str,
    stem: String,
    bytes: Vec<u8>,
    opts: &ReadOptions,
    canonical: ParseCanonical<'_>,
) -> Result<FileSessions> {
    // The decompressed bytes hold their share of the run's memory budget
    // until this file is parsed.
    let (bytes, _held) = match Codec::of(&bytes) {
        Some(codec) => {
            let c = gunzip(display, codec, &bytes, opts)?;
            (c.bytes, Some(c._held))
        }
        None => (bytes, None),
    };
    use crate::input::import::InputFormat;
    let caps = crate::input::format::Caps {
        max_bytes: opts.max_gzip_bytes,
        max_ratio: opts.max_gzip_ratio,
    };
    let parsed = crate::input::format::with_caps(caps, || match opts.format {
        InputFormat::Canonical => canonical(display, &stem, &bytes),
        InputFormat::Native(name) => {
            crate::input::import::import_as(name, display, &stem, &bytes, opts.lenient)
        }
        InputFormat::Auto => {
            if looks_canonical(&bytes) {
                canonical(display, &stem, &bytes)
            } else {
                crate::input::import::import_auto(display, &stem, &bytes, opts.lenient)
            }
        }
    });
    give_back(bytes);
    parsed
}

/// A canonical file, in parallel pieces unless it is read on one thread (`--jobs 1`).
fn canonical(display: &str, stem: &str, bytes: &[u8], opts: &ReadOptions) -> Result<FileSessions> {
    let min_piece = if rayon::current_num_threads() == 1 {
        usize::MAX
    } else {
        crate::input::canonical::MIN_PIECE
    };
    crate::input::canonical::parse_canonical_pieces(display, stem, bytes, opts.lenient, min_piece)
}

/// Canonical JSONL is recognised by its first non-blank line: an object whose
/// `type` is one of the spec's record types.
pub fn looks_canonical(bytes: &[u8]) -> bool {
    // Only the first non-blank line is decoded (whole, however long): this
    // runs on every file.
    let Some(line) = first_line(bytes) else {
        // An empty file is an empty canonical file.
        return true;
    };
    let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(line) else {
        // A broken or cut-off first line: decide on its `type` alone, read
        // by its keys in any order and spacing.
        return crate::input::canonical::line_type(line)
            .is_some_and(|t| crate::input::canonical::KNOWN_TYPES.contains(&t));
    };
    match m.get("type") {
        // Native logs reuse some type names (`user` in Claude Code and Gemini
        // CLI JSONL): let the importers claim their own lines first.
        Some(Value::String(t)) if crate::input::canonical::KNOWN_TYPES.contains(&t.as_str()) => {
            !crate::input::import::claims_line(&m)
        }
        // A type newer than this build: the spec keeps and counts unknown
        // records, so the file is canonical unless an importer knows it.
        Some(Value::String(_)) => crate::input::import::detect(bytes).is_none(),
        _ => false,
    }
}

/// The first non-blank line of `bytes`, without a byte-order mark and
/// surrounding whitespace.
fn first_line(bytes: &[u8]) -> Option<&[u8]> {
    bytes
        .split(|b| *b == b'\n')
        .map(|raw| {
            let raw = raw.strip_prefix(b"\xef\xbb\xbf").unwrap_or(raw);
            raw.trim_ascii()
        })
        .find(|l| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file a little larger than the thread's spare buffer grows it to
    /// its size, not to twice the buffer (`read_to_end`'s doubling).
    #[test]
    fn a_spare_buffer_grows_to_the_file_not_to_twice_itself() {
        let d = tempfile::tempdir().unwrap();
        let (small, large) = (d.path().join("a.jsonl"), d.path().join("b.jsonl"));
        std::fs::write(&small, vec![b'x'; 100_000]).unwrap();
        std::fs::write(&large, vec![b'y'; 100_100]).unwrap();
        let found = |path: &Path| Found::Path {
            path: path.to_path_buf(),
            walked: false,
        };
        // On a fresh thread: its spare buffer starts empty.
        std::thread::spawn(move || {
            let (bytes, _) = load(&found(&small)).unwrap();
            assert_eq!(bytes.len(), 100_000);
            give_back(bytes);
            let (bytes, _) = load(&found(&large)).unwrap();
            assert_eq!(bytes, vec![b'y'; 100_100]);
            assert!(bytes.capacity() < 150_000, "{}", bytes.capacity());
        })
        .join()
        .unwrap();
    }

    /// Ids shared across files (a trajectory of one task in three runs, a
    /// resumed Claude Code session, canonical sessions split across files):
    /// a streamed read keeps the later files' parses and reads the first of
    /// each group again, and gives what the whole read gives, on one thread
    /// and on two.
    #[test]
    fn shared_ids_stream_as_the_whole_read_merges_them() {
        let d = tempfile::tempdir().unwrap();
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/import");
        let traj = fixtures.join("clash/run1/x/task.traj.json");
        for run in ["run1", "run2", "run3"] {
            let to = d.path().join(run).join("x");
            std::fs::create_dir_all(&to).unwrap();
            std::fs::copy(&traj, to.join("task.traj.json")).unwrap();
        }
        for (from, to) in [
            ("resume/A.jsonl", "resume-A.jsonl"),
            ("resume/B.jsonl", "resume-B.jsonl"),
            ("canonical-merge/a.jsonl", "merge-a.jsonl"),
            ("canonical-merge/b.jsonl", "merge-b.jsonl"),
            ("canonical-merge/c.jsonl", "merge-c.jsonl"),
        ] {
            std::fs::copy(fixtures.join(from), d.path().join(to)).unwrap();
        }
        let opts = ReadOptions::default();
        let inputs = InputFiles::walk(&[d.path().to_path_buf()], false).unwrap();
        let whole = read_files(
            &inputs,
            &opts,
            &Workers::new(1).unwrap(),
            &crate::util::progress::NoProgress,
        )
        .unwrap();
        let mut expected: Vec<(String, String)> = whole
            .sessions
            .iter()
            .map(|s| (s.id.clone(), format!("{s:?}")))
            .collect();
        expected.sort();
        assert!(
            expected.iter().any(|(id, _)| id.starts_with("run3/")),
            "{expected:?}"
        );
        for jobs in [1, 2] {
            // `collide`: every id hashes alike, so sessions not shared look
            // shared too and the read must take the exact path.
            for collide in [false, true] {
                let handed = std::sync::Mutex::new(Vec::new());
                let got = stream_sessions_hashed(
                    &inputs,
                    &opts,
                    &Workers::new(jobs).unwrap(),
                    &crate::util::progress::NoProgress,
                    &|s, _| {
                        handed.lock().unwrap().push(s.id.clone());
                        format!("{:?}", *s)
                    },
                    collide,
                )
                .unwrap();
                assert_eq!(got.sessions, expected, "jobs {jobs}, collide {collide}");
                // The trajectory's first run is handed out alone (nothing
                // shares its id yet); the two later runs are not: they are
                // merged, and handed out under their renamed ids.
                let handed = handed.into_inner().unwrap();
                let alone = handed.iter().filter(|id| *id == "task.traj").count();
                if !collide {
                    assert_eq!(alone, 1, "jobs {jobs}: {handed:?}");
                }
            }
        }
    }

    /// Largest first, on a queue: every item once, results in the items'
    /// order, and the largest item started before any smaller one.
    #[test]
    fn largest_first_runs_every_item_once_in_size_order() {
        let sizes: Vec<u64> = vec![3, 90, 7, 90, 1, 40, 0, 12];
        let started = std::sync::Mutex::new(Vec::new());
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let out = pool.install(|| {
            largest_first(
                &sizes,
                |&s| s,
                |&s| {
                    started.lock().unwrap().push(s);
                    s * 10
                },
            )
        });
        assert_eq!(out, sizes.iter().map(|s| s * 10).collect::<Vec<_>>());
        assert_eq!(
            started.into_inner().unwrap(),
            vec![90, 90, 40, 12, 7, 3, 1, 0]
        );
        let two = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let out = two.install(|| largest_first(&sizes, |&s| s, |&s| s + 1));
        assert_eq!(out, sizes.iter().map(|s| s + 1).collect::<Vec<_>>());
    }

    fn gz(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    /// Any canonical line shape is recognised: a first line over 64 KiB
    /// with `": "` spacing (Python's `json.dumps`), another key first, a
    /// first line cut short (a large file's prefix), and a first record of a
    /// type newer than this build.
    /// A file read into the last file's buffer holds its own bytes only,
    /// a shorter one after a longer one included.
    #[test]
    fn a_reused_file_buffer_holds_only_the_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let (long, short) = (dir.path().join("long"), dir.path().join("short"));
        std::fs::write(&long, "x".repeat(10_000)).unwrap();
        std::fs::write(&short, "abc").unwrap();
        let found = |p: &Path| Found::Path {
            path: p.to_path_buf(),
            walked: false,
        };
        let (bytes, _) = load(&found(&long)).unwrap();
        assert_eq!(bytes.len(), 10_000);
        give_back(bytes);
        let (bytes, _) = load(&found(&short)).unwrap();
        assert_eq!(bytes, b"abc");
        assert!(bytes.capacity() >= 10_000, "the buffer was reused");
        give_back(bytes);
        // A folder fails as `std::fs::read` fails on one: the caller reads
        // the folders a format claims through their path on this error.
        match load(&found(dir.path())) {
            Err(Error::Io { source, .. }) => {
                assert_eq!(source.kind(), std::io::ErrorKind::IsADirectory)
            }
            other => panic!("{:?}", other.map(|(b, d)| (b.len(), d))),
        }
    }

    #[test]
    fn canonical_files_are_recognised_in_any_line_shape() {
        let big = "x".repeat(70 << 10);
        let python =
            format!("{{\"type\": \"content\", \"text\": \"{big}\"}}\n{{\"type\": \"turn\"}}\n");
        assert!(looks_canonical(python.as_bytes()));
        let later = format!("{{\"session\": \"s\", \"text\": \"{big}\", \"type\": \"content\"}}\n");
        assert!(looks_canonical(later.as_bytes()));
        let cut =
            format!("\u{feff}{{\"session\" : \"s\" , \"type\" : \"content\", \"text\": \"{big}");
        assert!(looks_canonical(cut.as_bytes()));
        let newer =
            "{\"type\":\"plan_update\",\"steps\":[1,2]}\n{\"type\":\"content\",\"text\":\"hi\"}\n";
        assert!(looks_canonical(newer.as_bytes()));
        // Still not canonical: another format's lines, or no type at all.
        assert!(!looks_canonical(
            br#"{"type":"session_meta","payload":{"id":"x"}}"#
        ));
        assert!(!looks_canonical(b"{\"total\": 3}\n{\"total\": 4}\n"));
        assert!(!looks_canonical(format!("{{\"text\": \"{big}").as_bytes()));
        assert!(crate::input::format::looks_like_json_lines(
            b"\n{\"a\":1}\n {\"b\":2}\n"
        ));
        assert!(!crate::input::format::looks_like_json_lines(b"{\"a\":1}\n"));
        assert!(!crate::input::format::looks_like_json_lines(
            b"{\"a\":\n1}\n"
        ));
    }

    /// A bomb stops at its cap while streaming, and its buffer never grows
    /// past the cap: a budget of exactly the cap is enough to hear the cap's
    /// own error (doubling would have asked for twice the cap).
    #[test]
    fn a_gzip_bomb_stops_at_its_cap_without_overshooting() {
        static BUDGET: crate::util::limits::MemoryBudget =
            crate::util::limits::MemoryBudget::new(RATIO_FLOOR);
        let bomb = gz(&vec![b'\n'; 64 << 20]);
        let opts = ReadOptions::default();
        let stored = bomb.len() as u64;
        assert!(stored * opts.max_gzip_ratio < RATIO_FLOOR);
        let e = read_capped(
            "b.jsonl.gz",
            Codec::Gzip,
            flate2::read::MultiGzDecoder::new(&bomb[..]),
            stored,
            &opts,
            &BUDGET,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("expands more than 100 times"), "{e}");
        assert_eq!(BUDGET.used(), 0, "given back");
        // --max-gzip-bytes below the ratio's floor: the same.
        let opts = ReadOptions {
            max_gzip_bytes: 3 << 20,
            ..ReadOptions::default()
        };
        let e = read_capped(
            "b.jsonl.gz",
            Codec::Gzip,
            flate2::read::MultiGzDecoder::new(&bomb[..]),
            stored,
            &opts,
            &BUDGET,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("more than 3145728 bytes"), "{e}");
    }

    /// One budget for the run: files decompressed at once share it, and
    /// what a parsed file held is given back.
    #[test]
    fn decompressed_files_share_one_budget_per_run() {
        static BUDGET: crate::util::limits::MemoryBudget =
            crate::util::limits::MemoryBudget::new(3 << 20);
        let file = gz(&vec![b'x'; 2 << 20]);
        let opts = ReadOptions::default();
        let read = || {
            read_capped(
                "f.jsonl.gz",
                Codec::Gzip,
                flate2::read::MultiGzDecoder::new(&file[..]),
                file.len() as u64,
                &opts,
                &BUDGET,
            )
        };
        let first = read().ok().unwrap();
        assert_eq!(first.bytes.len(), 2 << 20);
        let e = read().err().unwrap().to_string();
        assert!(e.starts_with("f.jsonl.gz: decompressed input in memory at once would pass this run's budget of 3 MiB"), "{e}");
        drop(first);
        assert_eq!(BUDGET.used(), 0);
        assert_eq!(read().ok().unwrap().bytes.len(), 2 << 20);
    }

    /// Reading reports the bytes of every file: the total first, then each file.
    #[test]
    fn reading_counts_bytes() {
        use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
        #[derive(Default)]
        struct Count(AtomicU64, AtomicU64);
        impl crate::util::progress::Progress for Count {
            fn set_length(&self, n: u64) {
                self.0.store(n, Relaxed);
            }
            fn inc(&self, n: u64) {
                self.1.fetch_add(n, Relaxed);
            }
            fn finish(&self) {}
        }
        let d = tempfile::tempdir().unwrap();
        let a = "{\"type\":\"content\",\"text\":\"hello\"}\n";
        std::fs::write(d.path().join("a.jsonl"), a).unwrap();
        std::fs::write(d.path().join("b.jsonl"), a.repeat(3)).unwrap();
        let count = Count::default();
        let opts = ReadOptions::default();
        let inputs = InputFiles::walk(&[d.path().to_path_buf()], false).unwrap();
        let corpus = read_files(&inputs, &opts, &Workers::current(), &count).unwrap();
        assert_eq!(corpus.sessions.len(), 2);
        assert_eq!(count.0.load(Relaxed), 4 * a.len() as u64);
        assert_eq!(count.1.load(Relaxed), 4 * a.len() as u64);
    }

    #[test]
    fn claude_user_lines_are_not_canonical() {
        let line = br#"{"parentUuid":null,"type":"user","uuid":"u","sessionId":"s","message":{"content":"hi"}}"#;
        assert!(!looks_canonical(line));
        assert!(looks_canonical(br#"{"type":"user","text":"hi"}"#));
    }

    /// Container members (Inspect AI's ZIP) have the caps of a gzip file.
    #[test]
    fn member_caps_default_to_the_gzip_caps() {
        let c = crate::input::format::Caps::default();
        assert_eq!((c.max_bytes, c.max_ratio), (MAX_GZIP_BYTES, MAX_GZIP_RATIO));
        assert_eq!(crate::input::format::RATIO_FLOOR, RATIO_FLOOR);
    }

    #[test]
    fn a_plain_file_wins_over_its_compressed_twin() {
        let mut found: Vec<PathBuf> = [
            "a/r.jsonl",
            "a/r.jsonl.zst",
            "a/s.jsonl.zst",
            "b/r.jsonl.zst",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        drop_compressed_twins(&mut found);
        assert_eq!(
            found,
            ["a/r.jsonl", "a/s.jsonl.zst", "b/r.jsonl.zst"]
                .iter()
                .map(PathBuf::from)
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn stems() {
        assert_eq!(file_stem(Path::new("runs/a1.jsonl")), "a1");
        assert_eq!(file_stem(Path::new("runs/a1.jsonl.gz")), "a1");
        assert_eq!(file_stem(Path::new("runs/a1.jsonl.zst")), "a1");
        assert_eq!(file_stem(Path::new("x/m.traj.json")), "m.traj");
    }
}
