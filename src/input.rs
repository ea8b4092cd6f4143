//! Reading sessions from disk: canonical JSONL (`.jsonl`, `.jsonl.gz`, stdin)
//! exactly as `docs/transcript-format.md` says, and native agent logs through
//! [`crate::import`]. Strict by default; `--lenient` skips and counts bad lines.

use crate::error::{Error, Result};
use crate::event::{Corpus, Origin, Place, Record, Session, SourceFile};
use rayon::prelude::*;
use serde::Deserialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How to read inputs.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Skip and count bad lines instead of stopping at the first.
    pub lenient: bool,
    /// Force one input format for every file (`canonical`, or an importer's name).
    pub format: Option<String>,
    /// Compute the SHA-256 of every input file (for `summary.json`).
    pub digests: bool,
    /// Threads reading files: 0 means all cores, 1 reads on the calling thread.
    pub jobs: usize,
    /// Most bytes one gzip file may expand to (`--max-gzip-bytes`).
    pub max_gzip_bytes: u64,
    /// Most a gzip file may expand, as decompressed over stored bytes, once
    /// past [`RATIO_FLOOR`] (`--max-gzip-ratio`).
    pub max_gzip_ratio: u64,
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
            format: None,
            digests: false,
            jobs: 0,
            max_gzip_bytes: MAX_GZIP_BYTES,
            max_gzip_ratio: MAX_GZIP_RATIO,
        }
    }
}

/// How many skipped-line messages a corpus keeps for its summary.
const KEEP_SKIPPED: usize = 50;

/// What one file contributes: sessions with their records, in file order.
#[derive(Debug, Default)]
pub struct FileSessions {
    /// Format name.
    pub format: String,
    /// `(session id, records)` in order of first appearance, each record with
    /// its origin in this file (`Origin::file` is set when the corpus is merged).
    pub sessions: Vec<(String, Vec<(Record, Origin)>)>,
    /// Lines skipped with `--lenient`: `(line, message)`.
    pub skipped: Vec<(u64, String)>,
    /// Records of unknown types.
    pub unknown: u64,
    /// Content came from whole messages rather than stream chunks.
    pub whole_messages: bool,
    /// Extra metadata per session (e.g. a subagent's parent), merged into the session.
    pub session_meta: HashMap<String, Map<String, Value>>,
    /// Per session, one de-duplication key per record (parallel to its records),
    /// e.g. the Claude Code `uuid` of the native record it came from. When
    /// several native files give the same session id, they form one session
    /// only if their keys overlap (a resumed session copying earlier records),
    /// and records whose key an earlier file already gave are dropped. Empty
    /// for formats without such keys.
    pub record_keys: HashMap<String, Vec<Option<String>>>,
}

/// Read every path (files, folders, `-`) into one corpus, sessions sorted by id.
///
/// Files found by walking a folder that no importer recognises are skipped with
/// a note in [`Corpus::skipped`] (`FILE: skipped file (...)`); a file named
/// explicitly is an error. Native logs whose session ids clash across files are
/// told apart by parent folders unless their records overlap (see
/// [`FileSessions::record_keys`]).
pub fn read_corpus(paths: &[PathBuf], opts: &ReadOptions) -> Result<Corpus> {
    read_corpus_with(paths, opts, &crate::progress::NoProgress)
}

/// [`read_corpus`], counting the bytes of the files read on `progress`
/// (reading is most of an end-to-end replay of a large corpus).
pub fn read_corpus_with(
    paths: &[PathBuf],
    opts: &ReadOptions,
    progress: &dyn crate::progress::Progress,
) -> Result<Corpus> {
    let (files, walk_notes) = collect_files_with(paths, opts.lenient)?;
    progress.set_length(
        files
            .iter()
            .map(|f| match f {
                Found::Path { path, .. } => std::fs::metadata(path).map_or(0, |m| m.len()),
                Found::Stdin => 0,
            })
            .sum(),
    );
    if files.is_empty() {
        return Err(Error::Usage(format!(
            "no input files found in {} (looked for *.jsonl, *.jsonl.gz and native agent logs)",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut corpus = Corpus {
        unreadable: walk_notes.len() as u64,
        skipped: walk_notes,
        ..Default::default()
    };
    // Files are read and parsed in parallel (in the caller's rayon pool), then
    // merged in order, so the result and the first error do not depend on it.
    // Every file is read before merging: clashing native ids need all files.
    let load_one = |found: &Found| -> Result<Loaded> {
        let walked = matches!(found, Found::Path { walked: true, .. });
        let (bytes, display) = match load(found) {
            Ok(loaded) => loaded,
            // An unreadable file of a walked folder does not stop a lenient run.
            Err(Error::Io { path, source }) if walked && opts.lenient => {
                return Ok(Loaded::Unreadable(format!(
                    "{}: skipped file (cannot read: {source})",
                    path.display()
                )));
            }
            Err(e) => return Err(e),
        };
        let sha256 = if opts.digests {
            hex(&Sha256::digest(&bytes))
        } else {
            String::new()
        };
        let stored = bytes.len() as u64;
        let parsed = parse_bytes(&display, found.stem(), bytes, opts);
        progress.inc(stored);
        match parsed {
            Ok(fs) => Ok(Loaded::File {
                display,
                sha256,
                stored,
                fs: Box::new(fs),
            }),
            Err(Error::File { message, .. })
                if walked && message.starts_with(crate::import::UNRECOGNISED) =>
            {
                Ok(Loaded::Skipped(format!(
                    "{display}: skipped file ({message})"
                )))
            }
            Err(e) => Err(e),
        }
    };
    let loaded: Vec<Result<Loaded>> = if opts.jobs == 1 {
        files.iter().map(load_one).collect()
    } else {
        crate::replay::pool(opts.jobs)?.install(|| files.par_iter().map(load_one).collect())
    };
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
        // The first reason of every file is kept, more while under the cap.
        for (i, (line, msg)) in fs.skipped.iter().enumerate() {
            if i == 0 || corpus.skipped.len() < KEEP_SKIPPED {
                corpus.skipped.push(format!("{display}:{line}: {msg}"));
            }
        }
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
    separate_native_ids(&mut read);
    // Session id -> records, in reading order; sessions with the same id in
    // several files form one session.
    let mut order: Vec<String> = Vec::new();
    let mut by_id: HashMap<String, Vec<(Record, Origin)>> = HashMap::new();
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
            for (i, (r, mut origin)) in records.into_iter().enumerate() {
                if let Some(Some(k)) = keys.get(i) {
                    if before.contains(k) {
                        continue;
                    }
                    seen.insert(k.clone());
                }
                origin.file = file_idx;
                slot.push((r, origin));
            }
        }
    }
    let mut sessions: Vec<Arc<Session>> = order
        .into_iter()
        .map(|id| {
            let records = by_id.remove(&id).unwrap_or_default();
            let mut s = Session::from_records(id.clone(), records);
            s.whole_messages = whole.get(&id).copied().unwrap_or(false);
            if let Some(m) = extra_meta.remove(&id) {
                for (k, v) in m {
                    s.meta.meta.entry(k).or_insert(v);
                }
            }
            Arc::new(s)
        })
        .collect();
    sessions.sort_by(|a, b| a.id.cmp(&b.id));
    corpus.sessions = sessions;
    Ok(corpus)
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
    Skipped(String),
    /// Walked, but could not be read (lenient).
    Unreadable(String),
}

/// One file as read, before its sessions are merged into the corpus.
struct ReadFile {
    file_idx: u32,
    path: Option<PathBuf>,
    fs: FileSessions,
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

/// The stem of `runs/a1.jsonl` or `runs/a1.jsonl.gz` is `a1`.
pub fn file_stem(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
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
pub fn collect_files_with(paths: &[PathBuf], lenient: bool) -> Result<(Vec<Found>, Vec<String>)> {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            out.push(Found::Stdin);
            continue;
        }
        let meta = std::fs::metadata(p).map_err(|e| Error::io(p, e))?;
        if meta.is_dir() {
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

/// A folder walk: what it found, and what it skipped under `--lenient`.
struct Walk<'a> {
    lenient: bool,
    found: &'a mut Vec<PathBuf>,
    notes: &'a mut Vec<String>,
}

impl Walk<'_> {
    /// Strict: the error; lenient: a note, and the walk goes on.
    fn unreadable(&mut self, path: &Path, what: &str, e: std::io::Error) -> Result<()> {
        if self.lenient {
            self.notes
                .push(format!("{}: skipped file ({what}: {e})", path.display()));
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
                self.dir(&path)?;
                continue;
            }
            if !is_candidate(&path) {
                continue;
            }
            let ft = if ft.is_symlink() {
                match std::fs::metadata(&path) {
                    Ok(m) => m.file_type(),
                    Err(e) => {
                        self.unreadable(&path, "dangling or looping symbolic link", e)?;
                        continue;
                    }
                }
            } else {
                ft
            };
            // Only regular files: a FIFO would block the read forever, and
            // a link to a folder is not followed.
            if ft.is_file() {
                self.found.push(path);
            }
        }
        Ok(())
    }
}

/// Files a folder walk picks up: canonical JSONL and the native formats' extensions.
fn is_candidate(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    name.ends_with(".jsonl") || crate::import::walk_extension(name)
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
            let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
            Ok((bytes, path.display().to_string()))
        }
    }
}

/// Decompress gzip input within the caps of `opts`; a truncated stream is an
/// error at the line it broke.
fn gunzip(display: &str, bytes: &[u8], opts: &ReadOptions) -> Result<Vec<u8>> {
    let mut out: Vec<u8> = Vec::new();
    let mut dec = flate2::read::MultiGzDecoder::new(bytes);
    let stored = bytes.len().max(1) as u64;
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        let n = match dec.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let line = out.iter().filter(|b| **b == b'\n').count() as u64 + 1;
                return Err(Error::Line {
                    path: display.to_string(),
                    line,
                    message: format!("gzip stream is damaged or truncated ({e})"),
                });
            }
        };
        let total = out.len() as u64 + n as u64;
        if total > opts.max_gzip_bytes {
            return Err(Error::File {
                path: display.to_string(),
                message: format!(
                    "gzip stream expands to more than {} bytes (--max-gzip-bytes raises the cap)",
                    opts.max_gzip_bytes
                ),
            });
        }
        if total > RATIO_FLOOR && total > stored.saturating_mul(opts.max_gzip_ratio) {
            return Err(Error::File {
                path: display.to_string(),
                message: format!(
                    "gzip stream expands more than {} times its {stored} bytes (--max-gzip-ratio raises the cap)",
                    opts.max_gzip_ratio
                ),
            });
        }
        // Growing the buffer can fail on a machine short of memory: say so
        // rather than call the stream damaged.
        if out.try_reserve(n).is_err() {
            return Err(Error::File {
                path: display.to_string(),
                message: format!(
                    "out of memory after decompressing {} bytes (--max-gzip-bytes sets a lower cap)",
                    out.len()
                ),
            });
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

fn is_gzip(bytes: &[u8]) -> bool {
    bytes.len() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b
}

/// Parse one file's bytes (canonical or native) into sessions.
pub fn parse_bytes(
    display: &str,
    stem: String,
    bytes: Vec<u8>,
    opts: &ReadOptions,
) -> Result<FileSessions> {
    let bytes = if is_gzip(&bytes) {
        gunzip(display, &bytes, opts)?
    } else {
        bytes
    };
    let forced = opts.format.as_deref().filter(|f| *f != "auto");
    match forced {
        Some("canonical") => canonical(display, &stem, &bytes, opts),
        Some(name) => crate::import::import_as(name, display, &stem, &bytes, opts.lenient),
        None => {
            if looks_canonical(&bytes) {
                canonical(display, &stem, &bytes, opts)
            } else {
                crate::import::import_auto(display, &stem, &bytes, opts.lenient)
            }
        }
    }
}

/// A canonical file, in parallel pieces unless `--jobs 1`.
fn canonical(display: &str, stem: &str, bytes: &[u8], opts: &ReadOptions) -> Result<FileSessions> {
    let min_piece = if opts.jobs == 1 {
        usize::MAX
    } else {
        MIN_PIECE
    };
    parse_canonical_pieces(display, stem, bytes, opts.lenient, min_piece)
}

/// Canonical JSONL is recognised by its first non-blank line: an object whose
/// `type` is one of the spec's record types.
pub fn looks_canonical(bytes: &[u8]) -> bool {
    // Only the first non-blank line is decoded: this runs on every file.
    for raw in bytes[..bytes.len().min(64 * 1024)].split(|b| *b == b'\n') {
        let text = String::from_utf8_lossy(raw);
        let line = text.trim_start_matches('\u{feff}').trim();
        if line.is_empty() {
            continue;
        }
        let Ok(Value::Object(m)) = serde_json::from_str::<Value>(line) else {
            // A broken or cut-off first line: decide on the `type` prefix alone.
            return KNOWN_TYPES
                .iter()
                .any(|t| line.starts_with(&format!("{{\"type\":\"{t}\"")));
        };
        // Native logs reuse some type names (`user` in Claude Code and Gemini
        // CLI JSONL): let the importers claim their own lines first.
        return matches!(m.get("type"), Some(Value::String(t)) if KNOWN_TYPES.contains(&t.as_str()))
            && !crate::import::claims_line(&m);
    }
    // An empty file is an empty canonical file.
    true
}

const KNOWN_TYPES: &[&str] = &[
    "session",
    "user",
    "turn",
    "content",
    "thought",
    "tool_call",
    "tool_result",
    "usage",
    "judge",
    "loop_detected",
    "label",
];

/// Fast path: the fields of every record type, borrowed where possible.
#[derive(Deserialize)]
struct Fast<'a> {
    #[serde(rename = "type", borrow)]
    ty: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    session: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    args: Option<Map<String, Value>>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    output: Option<String>,
    #[serde(default)]
    error: Option<bool>,
    #[serde(default)]
    prompt_id: Option<String>,
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    src: Option<FastSrc>,
}

/// Parse canonical JSONL.
pub fn parse_canonical(
    display: &str,
    stem: &str,
    bytes: &[u8],
    lenient: bool,
) -> Result<FileSessions> {
    parse_canonical_pieces(display, stem, bytes, lenient, usize::MAX)
}

/// Smallest piece of one file parsed on its own thread.
const MIN_PIECE: usize = 4 << 20;

/// [`parse_canonical`], a large file split at line boundaries into pieces of
/// at least `min_piece` bytes parsed in parallel (in the current rayon pool)
/// and merged in file order: the same sessions, records, line numbers and
/// first error as one pass. A canonical file written by `looptune import` is
/// one big file, so folder-level parallelism alone would leave it to one core.
fn parse_canonical_pieces(
    display: &str,
    stem: &str,
    bytes: &[u8],
    lenient: bool,
    min_piece: usize,
) -> Result<FileSessions> {
    // Pieces end just before a newline; the next starts after it.
    let target = (bytes.len() / (4 * rayon::current_num_threads()).max(1)).max(min_piece);
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    while bytes.len() - start > target {
        match bytes[start + target..].iter().position(|b| *b == b'\n') {
            Some(i) => {
                ranges.push((start, start + target + i));
                start += target + i + 1;
            }
            None => break,
        }
    }
    ranges.push((start, bytes.len()));
    let parse = |&(a, b): &(usize, usize)| parse_piece(&bytes[a..b], a == 0, stem, lenient);
    let pieces: Vec<Piece> = if ranges.len() == 1 {
        ranges.iter().map(parse).collect()
    } else {
        ranges.par_iter().map(parse).collect()
    };
    let mut fs = FileSessions {
        format: "canonical".into(),
        ..Default::default()
    };
    let mut index: rustc_hash::FxHashMap<String, usize> = Default::default();
    let mut first_line = 1u64;
    for p in pieces {
        if let Some((line, message)) = p.error {
            return Err(Error::Line {
                path: display.to_string(),
                line: first_line + line,
                message,
            });
        }
        fs.skipped.extend(
            p.skipped
                .into_iter()
                .map(|(line, m)| (first_line + line, m)),
        );
        fs.unknown += p.unknown;
        let offset = u32::try_from(first_line - 1).unwrap_or(u32::MAX);
        for (sid, mut records) in p.sessions {
            if offset > 0 {
                records
                    .iter_mut()
                    .for_each(|r| r.1.line = r.1.line.saturating_add(offset));
            }
            match index.get(&sid) {
                Some(&slot) => fs.sessions[slot].1.append(&mut records),
                None => {
                    index.insert(sid.clone(), fs.sessions.len());
                    fs.sessions.push((sid, records));
                }
            }
        }
        first_line += p.lines;
    }
    Ok(fs)
}

/// One piece of a canonical file, parsed: sessions in order of first
/// appearance; line numbers from 1 at the piece's first line (errors and
/// skipped lines 0-based, to add to the piece's first line).
#[derive(Default)]
struct Piece {
    sessions: Vec<(String, Vec<(Record, Origin)>)>,
    skipped: Vec<(u64, String)>,
    unknown: u64,
    /// The first bad line when not lenient (parsing stopped there).
    error: Option<(u64, String)>,
    lines: u64,
}

fn parse_piece(bytes: &[u8], first: bool, stem: &str, lenient: bool) -> Piece {
    let mut p = Piece::default();
    let mut index: rustc_hash::FxHashMap<String, usize> = Default::default();
    let mut last_place: Option<Arc<Place>> = None;
    let mut line_no = 0u64;
    // Lines as `split(b'\n')` gives them (a last, possibly empty, line
    // after the last newline), found with memchr.
    let ends = memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len()));
    let mut from = 0;
    for end in ends {
        let mut raw = &bytes[from..end];
        from = end + 1;
        line_no += 1;
        // Only the file's first line may start with a byte order mark.
        if first && line_no == 1 && raw.starts_with(&[0xef, 0xbb, 0xbf]) {
            raw = &raw[3..];
        }
        if let Some(r) = raw.strip_suffix(b"\r") {
            raw = r;
        }
        if raw.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        match parse_line_borrowed(raw) {
            Ok((session, record, place)) => {
                if matches!(record, Record::Unknown { .. }) {
                    p.unknown += 1;
                }
                let sid = session.as_deref().unwrap_or(stem);
                let slot = match index.get(sid) {
                    Some(&slot) => slot,
                    None => {
                        index.insert(sid.to_string(), p.sessions.len());
                        p.sessions.push((sid.to_string(), Vec::new()));
                        p.sessions.len() - 1
                    }
                };
                // Records of one native message share their place.
                let place = place.map(|pl| match &last_place {
                    Some(prev) if **prev == pl => prev.clone(),
                    _ => Arc::new(pl),
                });
                last_place.clone_from(&place);
                p.sessions[slot].1.push((
                    record,
                    Origin {
                        file: 0,
                        line: line_no as u32,
                        place,
                    },
                ));
            }
            Err(message) if lenient => p.skipped.push((line_no - 1, message)),
            Err(message) => {
                p.error = Some((line_no - 1, message));
                break;
            }
        }
    }
    p.lines = line_no;
    p
}

/// Parse one canonical line into its session id and record; errors name the field.
pub fn parse_line(line: &str) -> std::result::Result<(Option<String>, Record), String> {
    parse_line_borrowed(line.as_bytes())
        .map(|(session, rec, _)| (session.map(Cow::into_owned), rec))
}

/// A line's session id (borrowed when it can be), record and `src` provenance.
type Parsed<'a> = (Option<Cow<'a, str>>, Record, Option<Place>);

/// The `src` field of a canonical record (written by `looptune import -o`).
#[derive(Deserialize)]
struct FastSrc {
    file: String,
    #[serde(default)]
    line: Option<u32>,
    #[serde(default)]
    pointer: Option<String>,
}

impl FastSrc {
    fn place(self) -> Option<Place> {
        // What the slow path rejects goes there, so the error names the field.
        let bad_pointer = self
            .pointer
            .as_deref()
            .is_some_and(|p| !p.is_empty() && !p.starts_with('/'));
        if self.line == Some(0) || bad_pointer {
            return None;
        }
        Some(Place {
            file: Some(self.file),
            line: self.line,
            pointer: self.pointer,
        })
    }
}

/// Read an optional `src` object: `file` (string, required), `line`
/// (1-based integer) and `pointer` (JSON pointer string), both optional;
/// other keys are ignored so later versions can add some.
fn src_from_object(obj: &Map<String, Value>) -> std::result::Result<Option<Place>, String> {
    let src = match obj.get("src") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(m)) => m,
        Some(_) => return Err("field `src` must be an object".into()),
    };
    let file = match src.get("file") {
        Some(Value::String(f)) => f.clone(),
        Some(_) => return Err("field `src.file` must be a string".into()),
        None => return Err("missing field `src.file`".into()),
    };
    let line = match src.get("line") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => Some(
            n.as_u64()
                .filter(|l| (1..=u32::MAX as u64).contains(l))
                .ok_or("field `src.line` must be a positive integer")? as u32,
        ),
        Some(_) => return Err("field `src.line` must be a positive integer".into()),
    };
    let pointer = match src.get("pointer") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) if p.is_empty() || p.starts_with('/') => Some(p.clone()),
        Some(_) => {
            return Err("field `src.pointer` must be a JSON pointer string (`/messages/3`)".into())
        }
    };
    Ok(Some(Place {
        file: Some(file),
        line,
        pointer,
    }))
}

/// [`parse_line`] with the session id borrowed from the line when it can be
/// (no allocation per record for the id).
fn parse_line_borrowed(raw: &[u8]) -> std::result::Result<Parsed<'_>, String> {
    // The typed fast path covers well-formed common records; anything it
    // rejects is re-read as a generic value so the error names the field
    // (and so duplicate keys behave as JSON.parse: last one wins). The line
    // is checked as UTF-8 once, which costs less than serde_json checking
    // each string of a byte slice (9% fewer instructions in a parse).
    let line = std::str::from_utf8(raw).map_err(|e| format!("line is not valid UTF-8 ({e})"))?;
    if let Ok(f) = serde_json::from_str::<Fast>(line) {
        let rec = match f.ty.as_ref() {
            "turn" => Some(Record::Turn),
            "usage" => Some(Record::Usage {
                input_tokens: f.input_tokens,
                output_tokens: f.output_tokens,
            }),
            "content" => f.text.map(|text| Record::Content { text }),
            "thought" => f.text.map(|text| Record::Thought { text }),
            // `args` is required, and must be an object (null is not).
            "tool_call" => f.name.zip(f.args).map(|(name, args)| Record::ToolCall {
                name,
                args,
                id: f.id,
            }),
            "tool_result" => Some(Record::ToolResult {
                id: f.id,
                name: f.name,
                output: f.output,
                error: f.error,
            }),
            "user" => f.text.map(|text| Record::User {
                text,
                prompt_id: f.prompt_id,
            }),
            _ => None,
        };
        let place = match f.src {
            None => Some(None),
            Some(src) => src.place().map(Some),
        };
        if let (Some(rec), Some(place)) = (rec, place) {
            return Ok((f.session, rec, place));
        }
    }
    let value: Value = parse_json(line).map_err(|e| format!("not valid JSON ({e})"))?;
    let Value::Object(obj) = value else {
        return Err("not a JSON object".to_string());
    };
    let (session, rec) = record_from_object(&obj)?;
    Ok((session.map(Cow::Owned), rec, src_from_object(&obj)?))
}

/// Validate a record object field by field.
pub fn record_from_object(
    obj: &Map<String, Value>,
) -> std::result::Result<(Option<String>, Record), String> {
    let ty = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(_) => return Err("field `type` must be a string".into()),
        None => return Err("missing field `type`".into()),
    };
    let session = opt_str(obj, "session")?;
    let rec = match ty {
        "session" => Record::Session {
            agent: opt_str(obj, "agent")?,
            model: opt_str(obj, "model")?,
            mode: opt_str(obj, "mode")?,
            meta: match obj.get("meta") {
                None | Some(Value::Null) => None,
                Some(Value::Object(m)) => Some(Box::new(m.clone())),
                Some(_) => return Err("field `meta` must be an object".into()),
            },
        },
        "user" => Record::User {
            text: req_str(obj, "text")?,
            prompt_id: opt_str(obj, "prompt_id")?,
        },
        "turn" => Record::Turn,
        "content" => Record::Content {
            text: req_str(obj, "text")?,
        },
        "thought" => Record::Thought {
            text: req_str(obj, "text")?,
        },
        "tool_call" => Record::ToolCall {
            name: req_str(obj, "name")?,
            args: match obj.get("args") {
                Some(Value::Object(m)) => m.clone(),
                Some(_) => return Err("field `args` must be an object".into()),
                None => return Err("missing field `args`".into()),
            },
            id: opt_str(obj, "id")?,
        },
        "tool_result" => Record::ToolResult {
            id: opt_str(obj, "id")?,
            name: opt_str(obj, "name")?,
            output: opt_str(obj, "output")?,
            error: opt_bool(obj, "error")?,
        },
        "usage" => Record::Usage {
            input_tokens: opt_u64(obj, "input_tokens")?,
            output_tokens: opt_u64(obj, "output_tokens")?,
        },
        "judge" => Record::Judge {
            confidence: match obj.get("confidence") {
                Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
                Some(_) => return Err("field `confidence` must be a number".into()),
                None => return Err("missing field `confidence`".into()),
            },
            model: opt_str(obj, "model")?,
            analysis: opt_str(obj, "analysis")?,
        },
        "loop_detected" => Record::LoopDetected {
            kind: opt_str(obj, "kind")?,
            detail: opt_str(obj, "detail")?,
        },
        "label" => Record::Label {
            is_loop: match obj.get("loop") {
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err("field `loop` must be a boolean".into()),
                None => return Err("missing field `loop`".into()),
            },
            onset_turn: opt_u64(obj, "onset_turn")?
                .map(|n| {
                    u32::try_from(n).map_err(|_| "field `onset_turn` is too large".to_string())
                })
                .transpose()?,
        },
        other => Record::Unknown {
            record_type: other.to_string(),
        },
    };
    Ok((session, rec))
}

fn opt_str(obj: &Map<String, Value>, field: &str) -> std::result::Result<Option<String>, String> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("field `{field}` must be a string")),
    }
}

fn req_str(obj: &Map<String, Value>, field: &str) -> std::result::Result<String, String> {
    opt_str(obj, field)?.ok_or_else(|| format!("missing field `{field}`"))
}

fn opt_bool(obj: &Map<String, Value>, field: &str) -> std::result::Result<Option<bool>, String> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(format!("field `{field}` must be a boolean")),
    }
}

fn opt_u64(obj: &Map<String, Value>, field: &str) -> std::result::Result<Option<u64>, String> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("field `{field}` must be a non-negative integer")),
        Some(_) => Err(format!("field `{field}` must be a non-negative integer")),
    }
}

/// Parse JSON text as `JSON.parse` would accept it. An unpaired surrogate
/// escape (`"\ud83d"`, left by a log cut mid-emoji) is valid JSON that
/// serde_json rejects; on that error alone each such escape becomes its own
/// private-use character ([`crate::js::LONE_SURROGATE_BASE`] + offset), so
/// values stay as distinct as JavaScript keeps them, `JSON.stringify` writes
/// them back as the original escapes, and UTF-16 consumers turn them back into
/// the single lone unit. Well-formed text takes the first, fast path.
pub fn parse_json(text: &str) -> serde_json::Result<Value> {
    match serde_json::from_str(text) {
        Err(e) if text.contains("\\u") && e.is_syntax() => match replace_lone_surrogates(text) {
            Some(fixed) => serde_json::from_str(&fixed),
            None => Err(e),
        },
        other => other,
    }
}

/// Same as [`parse_json`] for bytes (a whole file).
pub fn parse_json_slice(bytes: &[u8]) -> serde_json::Result<Value> {
    match serde_json::from_slice(bytes) {
        Err(e) if e.is_syntax() => match std::str::from_utf8(bytes)
            .ok()
            .and_then(replace_lone_surrogates)
        {
            Some(fixed) => serde_json::from_str(&fixed),
            None => Err(e),
        },
        other => other,
    }
}

/// Replace `\uXXXX` escapes of unpaired surrogates with `\ufffd`; `None` when there are none.
fn replace_lone_surrogates(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let hex = |i: usize| -> Option<u16> {
        let s = text.get(i..i + 4)?;
        u16::from_str_radix(s, 16).ok()
    };
    let mut out = String::with_capacity(text.len());
    let (mut i, mut last, mut changed) = (0, 0, false);
    while i + 1 < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        if b[i + 1] != b'u' {
            i += 2; // any other escape, including an escaped backslash
            continue;
        }
        let Some(u) = hex(i + 2) else {
            i += 2;
            continue;
        };
        let paired_low = b.get(i + 6) == Some(&b'\\')
            && b.get(i + 7) == Some(&b'u')
            && hex(i + 8).is_some_and(|l| (0xdc00..0xe000).contains(&l));
        if (0xd800..0xdc00).contains(&u) && paired_low {
            i += 12;
        } else if (0xd800..0xe000).contains(&u) {
            out.push_str(&text[last..i]);
            out.push(crate::js::lone_surrogate_char(u));
            i += 6;
            last = i;
            changed = true;
        } else {
            i += 6;
        }
    }
    changed.then(|| {
        out.push_str(&text[last..]);
        out
    })
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces parsed apart and merged give what one pass gives: sessions,
    /// records, line numbers, skipped lines and the first error.
    #[test]
    fn pieces_merge_to_one_pass() {
        let mut r = crate::synth::Rng::new(5);
        let lines = [
            r#"{"type":"content","text":"a","session":"s1"}"#,
            r#"{"type":"content","text":"b","session":"s2"}"#,
            r#"{"type":"tool_call","name":"x","args":{},"session":"s3"}"#,
            r#"{"type":"turn"}"#,
            r#"{"type":"mystery","session":"s2"}"#,
            r#"{"type":"content"}"#,
            "\u{feff}{\"type\":\"turn\"}",
            "",
            "   ",
            "{\"type\":\"turn\"}\r",
        ];
        for case in 0..300 {
            let n = r.range(0, 60);
            let mut text = String::new();
            if case % 5 == 0 {
                text.push('\u{feff}');
            }
            for _ in 0..n {
                text.push_str(lines[r.range(0, lines.len() - 1)]);
                text.push('\n');
            }
            if case % 2 == 0 {
                text.pop();
            }
            let bytes = text.as_bytes();
            for lenient in [false, true] {
                let one = parse_canonical("f", "stem", bytes, lenient);
                let piece = [1, 7, 60, 500][case % 4];
                let many = parse_canonical_pieces("f", "stem", bytes, lenient, piece);
                match (one, many) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(a.sessions, b.sessions, "case {case}");
                        assert_eq!(a.skipped, b.skipped, "case {case}");
                        assert_eq!(a.unknown, b.unknown, "case {case}");
                    }
                    (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "case {case}"),
                    (a, b) => panic!("case {case}: {a:?} vs {b:?}"),
                }
            }
        }
    }

    /// Reading reports the bytes of every file: the total first, then each file.
    #[test]
    fn reading_counts_bytes() {
        use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
        #[derive(Default)]
        struct Count(AtomicU64, AtomicU64);
        impl crate::progress::Progress for Count {
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
        let corpus = read_corpus_with(&[d.path().to_path_buf()], &opts, &count).unwrap();
        assert_eq!(corpus.sessions.len(), 2);
        assert_eq!(count.0.load(Relaxed), 4 * a.len() as u64);
        assert_eq!(count.1.load(Relaxed), 4 * a.len() as u64);
    }

    /// Usage records take the fast path and keep the slow path's errors.
    #[test]
    fn usage_fast_path_keeps_the_rules() {
        let (_, r) =
            parse_line(r#"{"type":"usage","input_tokens":12,"output_tokens":null}"#).unwrap();
        assert_eq!(
            r,
            Record::Usage {
                input_tokens: Some(12),
                output_tokens: None
            }
        );
        for bad in ["-1", "1.5", "\"7\"", "1e30"] {
            assert_eq!(
                parse_line(&format!(r#"{{"type":"usage","input_tokens":{bad}}}"#)).unwrap_err(),
                "field `input_tokens` must be a non-negative integer",
                "{bad}"
            );
        }
    }

    #[test]
    fn field_errors_name_the_field() {
        assert_eq!(
            parse_line(r#"{"type":"content","text":5}"#).unwrap_err(),
            "field `text` must be a string"
        );
        assert_eq!(
            parse_line(r#"{"type":"tool_call","name":"x"}"#).unwrap_err(),
            "missing field `args`"
        );
        assert_eq!(
            parse_line(r#"{"type":"tool_call","name":"x","args":null}"#).unwrap_err(),
            "field `args` must be an object"
        );
        assert_eq!(
            parse_line(r#"{"type":"tool_call","name":"x","args":[]}"#).unwrap_err(),
            "field `args` must be an object"
        );
        assert_eq!(
            parse_line(r#"{"text":"x"}"#).unwrap_err(),
            "missing field `type`"
        );
        assert_eq!(parse_line("[1]").unwrap_err(), "not a JSON object");
        assert!(parse_line("{").unwrap_err().starts_with("not valid JSON"));
        assert_eq!(
            parse_line(r#"{"type":"judge"}"#).unwrap_err(),
            "missing field `confidence`"
        );
        assert_eq!(
            parse_line(r#"{"type":"label","loop":true,"onset_turn":-1}"#).unwrap_err(),
            "field `onset_turn` must be a non-negative integer"
        );
    }

    #[test]
    fn lone_surrogate_escapes_stay_distinct_and_round_trip() {
        let (_, r) = parse_line(r#"{"type":"content","text":"ab\ud83d"}"#).unwrap();
        assert_eq!(
            r,
            Record::Content {
                text: "ab\u{f003d}".into()
            }
        );
        let (_, r) =
            parse_line(r#"{"type":"content","text":"\ude00cd \ud83d\ude00 \\ud800"}"#).unwrap();
        assert_eq!(
            r,
            Record::Content {
                text: "\u{f0600}cd 😀 \\ud800".into()
            }
        );
        assert!(parse_line(r#"{"type":"content","text":"x"#).is_err());
        // distinct lone surrogates stay distinct, and stringify writes them back
        let a = parse_json(r#"{"p":"\ud800"}"#).unwrap();
        let b = parse_json(r#"{"p":"\ud801"}"#).unwrap();
        assert_ne!(a, b);
        assert_eq!(crate::js::stringify(&a), r#"{"p":"\ud800"}"#);
        assert_eq!(crate::js::utf16("a\u{f0000}"), vec![0x61, 0xd800]);
    }

    #[test]
    fn duplicate_keys_last_wins_like_json_parse() {
        let (_, r) = parse_line(r#"{"type":"content","text":"a","text":"b"}"#).unwrap();
        assert_eq!(r, Record::Content { text: "b".into() });
    }

    #[test]
    fn unknown_types_are_kept_as_unknown() {
        let (_, r) = parse_line(r#"{"type":"future","text":5}"#).unwrap();
        assert_eq!(
            r,
            Record::Unknown {
                record_type: "future".into()
            }
        );
    }

    #[test]
    fn sessions_by_field_or_stem_with_bom_crlf_blank() {
        let data = "\u{feff}{\"type\":\"turn\"}\r\n\r\n{\"type\":\"turn\",\"session\":\"B\"}\n{\"type\":\"content\",\"text\":\"x\"}";
        let fs = parse_canonical("f.jsonl", "f", data.as_bytes(), false).unwrap();
        assert_eq!(fs.sessions.len(), 2);
        assert_eq!(fs.sessions[0].0, "f");
        assert_eq!(fs.sessions[0].1.len(), 2);
        assert_eq!(fs.sessions[0].1[1].1.line, 4);
        assert_eq!(fs.sessions[1].0, "B");
    }

    #[test]
    fn strict_stops_lenient_counts() {
        let data = b"{\"type\":\"turn\"}\n{\"type\":\"content\"}\n{\"type\":\"turn\"}\n";
        let err = parse_canonical("f.jsonl", "f", data, false).unwrap_err();
        assert_eq!(err.to_string(), "f.jsonl:2: missing field `text`");
        let fs = parse_canonical("f.jsonl", "f", data, true).unwrap();
        assert_eq!(fs.skipped.len(), 1);
        assert_eq!(fs.sessions[0].1.len(), 2);
    }

    #[test]
    fn stems() {
        assert_eq!(file_stem(Path::new("runs/a1.jsonl")), "a1");
        assert_eq!(file_stem(Path::new("runs/a1.jsonl.gz")), "a1");
        assert_eq!(file_stem(Path::new("x/m.traj.json")), "m.traj");
    }
}
