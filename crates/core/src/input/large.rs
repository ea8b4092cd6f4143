//! One large canonical file read in bounded memory, as `looptune import -o`
//! writes them: the file is read twice, a batch of whole lines at a time.
//! The first pass notes the last line of each session (and the file's
//! digest); the second parses records and hands each session out as soon as
//! its last line is passed, so memory holds a batch and the sessions still
//! open, not the file. What comes out equals reading the file whole: the
//! same sessions, records, line numbers, skipped lines and first error.

use super::{Found, Pass1, ReadOptions, Streamed1, KEEP_SKIPPED};
use crate::error::{Error, Result};
use crate::event::{Event, Session};
use crate::input::FileNames;
use crate::util::progress::Progress;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

/// Files stored larger than this are read in batches (gzip files from an
/// eighth of it: JSON logs compress 5 to 30 times). Smaller files are read
/// whole, one per thread, which is faster and bounded by this size.
pub const STREAM_ABOVE: u64 = 16 << 20;

/// [`STREAM_ABOVE`] for a sweep, which holds its results while it reads:
/// files read whole, one a thread, made its peak follow the size of its
/// files (a corpus of 12 MB files held 24 MB more than one of 6 MB files
/// to its end), where batches hold about 4 MB whatever the files (#46;
/// benches/README.md). The two passes cost no measurable time there.
pub const SWEEP_STREAM_ABOVE: u64 = 1 << 20;

/// Bytes of whole lines parsed at a time, per thread.
const BATCH_PER_THREAD: usize = 8 << 20;

/// Most bytes of a batch, whatever the core count: a batch's records take
/// about four times its bytes.
const MAX_BATCH: usize = 32 << 20;

/// What [`crate::input::looks_canonical`] reads of a file at least; more,
/// up to [`MAX_SNIFF`], until its first line is whole.
const SNIFF: usize = 64 * 1024;

/// Most of a file read to find its first line whole.
const MAX_SNIFF: usize = 16 << 20;

/// Whether a file of this size is read in batches.
pub(super) fn streams(path: &Path, opts: &ReadOptions) -> bool {
    use crate::input::import::InputFormat;
    if !matches!(opts.format, InputFormat::Auto | InputFormat::Canonical) {
        return false;
    }
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    // Only regular files can be read twice; the smallest that may stream is
    // a gzip file over an eighth of the size (no need to open the rest).
    if !meta.is_file() || meta.len() <= opts.stream_above / 8 {
        return false;
    }
    let gz = std::fs::File::open(path)
        .and_then(|mut f| {
            let mut magic = [0u8; 4];
            f.read_exact(&mut magic)
                .map(|()| super::Codec::of(&magic).is_some())
        })
        .unwrap_or(false);
    let above = if gz {
        opts.stream_above / 8
    } else {
        opts.stream_above
    };
    meta.len() > above
}

/// Read `path` (file `fi` of the walk) in two passes, handing each session
/// to `f` once complete. `Ok(None)`: the file is not canonical JSONL (with
/// `--input-format auto`), to be read whole by the native importers.
pub(super) fn stream<T: Send>(
    fi: usize,
    found: &Found,
    path: &Path,
    opts: &ReadOptions,
    progress: &dyn Progress,
    names: &FileNames,
    f: &(dyn Fn(Arc<Session>, &FileNames) -> T + Sync),
) -> Result<Option<Pass1<T>>> {
    let display = path.display().to_string();
    let stem = found.stem();
    let min_piece = if rayon::current_num_threads() == 1 {
        usize::MAX
    } else {
        crate::input::canonical::MIN_PIECE
    };
    // Batches of half the size above which files stream, per thread (tests
    // set it low to read small files in many batches).
    let want = (usize::try_from(opts.stream_above / 2)
        .unwrap_or(usize::MAX)
        .clamp(1, BATCH_PER_THREAD)
        * rayon::current_num_threads())
    .min(MAX_BATCH);
    if matches!(opts.format, crate::input::import::InputFormat::Auto) {
        let mut head = Source::open(path, &display, opts, false, want)?;
        if !super::looks_canonical(&head.first_line_prefix(SNIFF, MAX_SNIFF)?) {
            return Ok(None);
        }
    }

    // Pass 1: the last line of each session, and the digest.
    let mut src = Source::open(path, &display, opts, opts.digests, want)?;
    let stored = src.stored;
    // Each session's first and last line.
    let mut spans: crate::input::canonical::Spans = FxHashMap::default();
    let mut at = 1u64;
    let mut counted = 0u64;
    while let Some(batch) = src.batch(want)? {
        for (sid, first, last) in
            crate::input::canonical::session_spans(&batch, None, at, &stem, min_piece)
        {
            spans.entry(sid).or_insert((first, last)).1 = last;
        }
        at += memchr::memchr_iter(b'\n', &batch).count() as u64 + 1;
        src.recycle(batch);
        // Each pass counts half of the file on the progress bar.
        let half = src.tally().read / 2;
        progress.inc(half.saturating_sub(counted));
        counted = counted.max(half);
    }
    let sha256 = src
        .tally()
        .sha
        .take()
        .map(|h| crate::util::number::hex(&h.finalize()))
        .unwrap_or_default();
    let lines_first_pass = at;

    // Pass 2: parse, and hand out what is complete after each batch (pass
    // 1 read the whole stream within its caps).
    let mut src = Source::open(path, &display, opts, false, want)?;
    src.measured = true;
    let changed = || Error::File {
        path: display.clone(),
        message: "changed while being read".into(),
    };
    let mut open: FxHashMap<String, Vec<Event>> = FxHashMap::default();
    let mut ids: Vec<String> = Vec::new();
    let mut done: Vec<(String, T)> = Vec::new();
    let mut skipped: Vec<crate::input::format::SkippedLine> = Vec::new();
    let mut skipped_lines = 0u64;
    let mut unknown = 0u64;
    let mut at = 1u64;
    let one = |id: String, mut events: Vec<Event>| -> (String, T) {
        events.iter_mut().for_each(|e| e.origin.file = fi as u32);
        let s = super::session_of(id.clone(), events, false, None);
        (id, f(Arc::new(s), names))
    };
    let hand_out = |complete: Vec<(String, Vec<Event>)>| -> Vec<(String, T)> {
        complete
            .into_par_iter()
            .map(|(id, events)| one(id, events))
            .collect()
    };
    // Sessions that lie within one piece of a batch, replayed by the
    // piece's thread as soon as they are parsed (while still in the cache).
    let given: std::sync::Mutex<Vec<(String, T)>> = std::sync::Mutex::new(Vec::new());
    let give = |id: String, events: Vec<Event>| {
        let made = one(id, events);
        given.lock().unwrap_or_else(|e| e.into_inner()).push(made);
    };
    // Sessions complete after one batch are replayed while the next is read
    // and parsed.
    let mut ready: Vec<(String, Vec<Event>)> = Vec::new();
    loop {
        let handing = std::mem::take(&mut ready);
        let (next, made) = rayon::join(
            || -> Result<Option<crate::input::canonical::Batch>> {
                let Some(bytes) = src.batch(want)? else {
                    return Ok(None);
                };
                let batch = crate::input::canonical::parse_batch(
                    &display,
                    &stem,
                    &bytes,
                    at,
                    opts.lenient,
                    min_piece,
                    Some((&spans, &give)),
                );
                src.recycle(bytes);
                let batch = batch.map_err(|e| match e {
                    // A session given at its last line went on: the file
                    // is not what the first pass read.
                    Error::Line { message, .. }
                        if message == crate::input::canonical::HANDED_OUT =>
                    {
                        changed()
                    }
                    e => e,
                })?;
                Ok(Some(batch))
            },
            || hand_out(handing),
        );
        done.extend(made);
        done.append(&mut given.lock().unwrap_or_else(|e| e.into_inner()));
        let Some(batch) = next? else { break };
        skipped_lines += batch.skipped.len() as u64;
        let room = KEEP_SKIPPED.saturating_sub(skipped.len());
        skipped.extend(batch.skipped.into_iter().take(room));
        unknown += batch.unknown;
        for (sid, mut events) in batch.sessions {
            let Some(&(_, end)) = spans.get(&sid) else {
                return Err(changed());
            };
            if events.is_empty() {
                // Given already: it started in this batch and ended in it.
                ids.push(sid.clone());
                spans.remove(&sid);
                continue;
            }
            if events
                .last()
                .is_some_and(|e| u64::from(e.origin.line) > end)
            {
                return Err(changed());
            }
            match open.get_mut(&sid) {
                Some(v) => v.append(&mut events),
                None => {
                    ids.push(sid.clone());
                    open.insert(sid, events);
                }
            }
        }
        at += batch.lines;
        let passed = at - 1;
        let complete: Vec<String> = open
            .keys()
            .filter(|id| spans[*id].1 <= passed)
            .cloned()
            .collect();
        for id in complete {
            let events = open.remove(&id).unwrap_or_default();
            // A record of it after this would mean the file changed.
            spans.remove(&id);
            ready.push((id, events));
        }
        let reached = stored / 2 + src.tally().read / 2;
        progress.inc(reached.saturating_sub(counted));
        counted = counted.max(reached);
    }
    if at != lines_first_pass {
        return Err(changed());
    }
    done.extend(hand_out(open.into_iter().collect()));
    progress.inc(stored.saturating_sub(counted));
    Ok(Some(Pass1::File(Box::new(Streamed1 {
        display,
        sha256,
        stored,
        format: "canonical".into(),
        skipped,
        skipped_lines,
        unknown,
        ids,
        done,
        unreplayed: Vec::new(),
        joins: false,
        kept: None,
    }))))
}

/// The stored bytes read so far, hashed on the way when asked.
struct Tally {
    file: std::fs::File,
    read: u64,
    sha: Option<Sha256>,
}

impl Read for Tally {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read(buf)?;
        self.read += n as u64;
        if let Some(h) = &mut self.sha {
            h.update(&buf[..n]);
        }
        Ok(n)
    }
}

enum Reader {
    Plain(Tally),
    Gz(flate2::read::MultiGzDecoder<Tally>),
    Zst(zstd::stream::read::Decoder<'static, std::io::BufReader<Tally>>),
}

/// A file's decompressed bytes, whole lines at a time, within the gzip caps
/// of [`ReadOptions`] and with the errors a whole read gives.
struct Source {
    reader: Reader,
    path: std::path::PathBuf,
    /// Whether the stream is known to be within its caps (read through by
    /// [`super::measure`], or plain): a line longer than a batch of an
    /// unmeasured stream measures it first, as [`super::HOLD_UNMEASURED`]
    /// does for a whole read.
    measured: bool,
    display: String,
    stored: u64,
    max_bytes: u64,
    max_ratio: u64,
    /// Decompressed bytes and newlines so far (for the caps, and the line a
    /// damaged stream broke at).
    out: u64,
    newlines: u64,
    /// The start of a line not yet handed out.
    carry: Vec<u8>,
    /// The memory of a batch done with.
    spare: Vec<u8>,
    eof: bool,
    finished: bool,
    /// Bytes asked of the reader at a time.
    chunk: usize,
}

impl Source {
    fn open(
        path: &Path,
        display: &str,
        opts: &ReadOptions,
        digest: bool,
        want: usize,
    ) -> Result<Source> {
        use std::io::Seek;
        let io = |e| Error::io(path, e);
        let mut file = std::fs::File::open(path).map_err(io)?;
        let stored = file.metadata().map_err(io)?.len();
        // Enough of the head for a zstd frame's header after pzstd's
        // skippable frame (12 bytes).
        let mut magic = [0u8; 64];
        let mut got = 0;
        while got < magic.len() {
            match file.read(&mut magic[got..]).map_err(io)? {
                0 => break,
                n => got += n,
            }
        }
        file.rewind().map_err(io)?;
        let tally = Tally {
            file,
            read: 0,
            sha: digest.then(Sha256::new),
        };
        let codec = super::Codec::of(&magic[..got]);
        let gz = codec.is_some();
        let reader = match codec {
            Some(super::Codec::Gzip) => Reader::Gz(flate2::read::MultiGzDecoder::new(tally)),
            Some(super::Codec::Zstd) => {
                if let Some((at, window)) = super::zstd_window_past_limit(&magic[..got]) {
                    return Err(super::zstd_window_error(display, at, window));
                }
                let mut d = zstd::stream::read::Decoder::new(tally).map_err(io)?;
                d.window_log_max(super::ZSTD_WINDOW_LOG_MAX).map_err(io)?;
                Reader::Zst(d)
            }
            None => Reader::Plain(tally),
        };
        // Gzip is read 1 MiB at a time as a whole read does, so a damaged
        // stream breaks at the same line.
        let chunk = if gz {
            1 << 20
        } else {
            want.clamp(4096, 1 << 20)
        };
        Ok(Source {
            reader,
            path: path.to_path_buf(),
            measured: codec.is_none(),
            display: display.to_string(),
            stored,
            max_bytes: opts.max_gzip_bytes,
            max_ratio: opts.max_gzip_ratio,
            out: 0,
            newlines: 0,
            carry: Vec::new(),
            spare: Vec::new(),
            eof: false,
            finished: false,
            chunk,
        })
    }

    /// The file's first `n` decompressed bytes (fewer if it is shorter).
    fn prefix(&mut self, n: usize) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        let mut chunk = vec![0u8; self.chunk];
        while buf.len() < n {
            let got = self.read(&mut chunk)?;
            if got == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..got]);
        }
        Ok(buf)
    }

    /// At least `n` bytes of the file (unless it is shorter), and then more
    /// until its first non-blank line is whole or `max` bytes are read.
    fn first_line_prefix(&mut self, n: usize, max: usize) -> Result<Vec<u8>> {
        let mut buf = self.prefix(n)?;
        let whole = |b: &[u8]| {
            let start = b.iter().position(|c| !c.is_ascii_whitespace());
            start.is_some_and(|s| memchr::memchr(b'\n', &b[s..]).is_some())
        };
        let mut chunk = vec![0u8; self.chunk];
        while buf.len() < max && !whole(&buf) {
            let got = self.read(&mut chunk)?;
            if got == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..got]);
        }
        Ok(buf)
    }

    fn tally(&mut self) -> &mut Tally {
        match &mut self.reader {
            Reader::Plain(t) => t,
            Reader::Gz(d) => d.get_mut(),
            Reader::Zst(d) => d.get_mut().get_mut(),
        }
    }

    /// The next batch: at least `want` bytes of whole lines unless the file
    /// ends first, without the newline that ends its last line; the file's
    /// last batch is what follows its last newline (maybe nothing). `None`
    /// after the last batch.
    fn batch(&mut self, want: usize) -> Result<Option<Vec<u8>>> {
        if self.finished {
            return Ok(None);
        }
        // Read straight into the batch, grown once: copying chunks into a
        // growing vector was a tenth of reading a large file.
        let mut buf = std::mem::take(&mut self.spare);
        buf.clear();
        buf.reserve(want.max(self.carry.len()) + self.chunk);
        buf.append(&mut self.carry);
        let mut searched = 0;
        loop {
            if buf.len() >= want {
                if let Some(nl) = memchr::memrchr(b'\n', &buf[searched..]) {
                    let nl = searched + nl;
                    self.carry = buf[nl + 1..].to_vec();
                    buf.truncate(nl);
                    return Ok(Some(buf));
                }
                searched = buf.len();
            }
            if self.eof {
                self.finished = true;
                return Ok(Some(buf));
            }
            let at = buf.len();
            // A line longer than the batch was made for: before the batch
            // grows for it, know that the stream is within its caps.
            if !self.measured && at + self.chunk > buf.capacity() {
                self.measure()?;
            }
            buf.resize(at + self.chunk, 0);
            let n = self.read(&mut buf[at..]);
            buf.truncate(at + *n.as_ref().unwrap_or(&0));
            let n = n?;
            if n == 0 {
                self.eof = true;
                // Hand out whole lines first, then the rest.
                if let Some(nl) = memchr::memrchr(b'\n', &buf) {
                    self.carry = buf[nl + 1..].to_vec();
                    buf.truncate(nl);
                    return Ok(Some(buf));
                }
                continue;
            }
        }
    }

    /// Read the whole stream through once, dropping it, to hear its caps'
    /// error before holding more of a line that may be a bomb's.
    fn measure(&mut self) -> Result<()> {
        let io = |e| Error::io(&self.path, e);
        let codec = match self.reader {
            Reader::Gz(_) => super::Codec::Gzip,
            Reader::Zst(_) => super::Codec::Zstd,
            Reader::Plain(_) => return Ok(()),
        };
        let file = std::io::BufReader::new(std::fs::File::open(&self.path).map_err(io)?);
        let dec = codec.decoder(file).map_err(io)?;
        super::measure(
            &self.display,
            codec,
            dec,
            self.stored.max(1),
            self.max_bytes,
            self.max_ratio,
        )?;
        self.measured = true;
        Ok(())
    }

    /// A batch done with, its memory kept for the next one (fresh pages for
    /// each batch were a twentieth of reading a large file).
    fn recycle(&mut self, batch: Vec<u8>) {
        if batch.capacity() > self.spare.capacity() {
            self.spare = batch;
        }
    }

    /// One read of decompressed bytes, as `input::gunzip` reads them (1 MiB
    /// at a time, the same caps, the same error at the same line).
    fn read(&mut self, chunk: &mut [u8]) -> Result<usize> {
        let (dec, codec): (&mut dyn Read, _) = match &mut self.reader {
            Reader::Plain(t) => loop {
                match t.read(chunk) {
                    Ok(n) => return Ok(n),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(Error::io(Path::new(&self.display), e)),
                }
            },
            Reader::Gz(d) => (d, super::Codec::Gzip),
            Reader::Zst(d) => (d, super::Codec::Zstd),
        };
        let n = loop {
            match dec.read(chunk) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(Error::Line {
                        path: self.display.clone(),
                        line: self.newlines + 1,
                        message: format!("{codec} stream is damaged or truncated ({e})"),
                    })
                }
            }
        };
        let total = self.out + n as u64;
        super::check_gzip_caps(
            &self.display,
            codec,
            total,
            self.stored.max(1),
            self.max_bytes,
            self.max_ratio,
        )?;
        self.out = total;
        self.newlines += memchr::memchr_iter(b'\n', &chunk[..n]).count() as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{stream_sessions, InputFiles, ReadOptions};
    use crate::util::pool::Workers;
    use proptest::prelude::*;
    use std::io::Write;
    use std::path::PathBuf;

    /// What a read on `jobs` threads gives, as text: files, notes, and
    /// every session in full.
    fn read(path: &Path, opts: &ReadOptions, jobs: usize) -> String {
        let got = stream_sessions(
            &InputFiles::walk(&[path.to_path_buf()], opts.lenient).unwrap(),
            opts,
            &Workers::new(jobs).unwrap(),
            &crate::util::progress::NoProgress,
            &|s, names| format!("{:?} {:?}", *s, names.0),
        );
        match got {
            Ok(s) => format!(
                "{:?}\n{:?}\n{}\n{:#?}",
                s.files, s.skipped, s.unreadable, s.sessions
            ),
            Err(e) => format!("error: {e}"),
        }
    }

    /// The same read whole (on all threads and on one) and in batches of a
    /// few kilobytes, on one thread and on two.
    fn same_both_ways(path: &Path, lenient: bool) -> String {
        let whole = ReadOptions {
            lenient,
            digests: true,
            ..ReadOptions::default()
        };
        let expected = read(path, &whole, 0);
        // Read whole on one thread, sessions are given as they are parsed.
        assert_eq!(read(path, &whole, 1), expected, "whole, one thread");
        for jobs in [1, 2] {
            let batches = ReadOptions {
                stream_above: 0,
                ..whole.clone()
            };
            assert_eq!(read(path, &batches, jobs), expected, "jobs {jobs}");
        }
        expected
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    /// Interleaved sessions, a byte order mark, CRLF, blank lines, records
    /// without a session (the stem's), unknown types and bad lines, over
    /// many batches.
    fn awkward() -> String {
        let mut s = String::from("\u{feff}");
        for i in 0..400 {
            let sid = ["a", "b", "c"][i % 3];
            match i % 37 {
                5 => s.push_str("\r\n"),
                7 => s.push_str("{\"type\":\"content\",\"text\":\"no session\"}\n"),
                11 => s.push_str(&format!("{{\"type\":\"mystery\",\"session\":\"{sid}\"}}\n")),
                13 => s.push_str("{\"type\":\"content\",\"text\":7,\"session\":\"b\"}\n"),
                17 => s.push_str("[\"content\",\"a\",\"an array is not a record\"]\n"),
                19 => s.push_str("{\"type\":\"content\",\"session\":\"x\",\"session\":\"d\",\"text\":\"dup\"}\n"),
                _ => s.push_str(&format!(
                    "{{\"type\":\"content\",\"text\":\"chunk {i} of the text that goes on\",\"session\":\"{sid}\"}}\r\n"
                )),
            }
        }
        // The last line of `c` is bad: it stays open to the end.
        s.push_str("{\"type\":\"tool_call\",\"session\":\"c\"}");
        s
    }

    #[test]
    fn batches_read_what_a_whole_read_gives() {
        let d = tempfile::tempdir().unwrap();
        let plain = d.path().join("big.jsonl");
        std::fs::write(&plain, awkward()).unwrap();
        let lenient = same_both_ways(&plain, true);
        assert!(lenient.contains("skipped"), "{lenient}");
        // The record without a session is the stem's.
        assert!(lenient.contains("\"big\""), "{lenient}");
        let strict = same_both_ways(&plain, false);
        assert!(strict.starts_with("error: "), "{strict}");
        let gz = d.path().join("big.jsonl.gz");
        std::fs::write(&gz, gzip(awkward().as_bytes())).unwrap();
        same_both_ways(&gz, true);
    }

    /// `looptune import -o` writes one session after another: each is
    /// handed out as soon as its last line is read, not at the end.
    #[test]
    fn sessions_one_after_another_are_handed_out_as_read() {
        use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
        use std::sync::Mutex;
        let text: String = (0..200)
            .flat_map(|s| {
                (0..(7 + s % 23)).map(move |i| {
                    format!("{{\"type\":\"content\",\"text\":\"{i} words of session {s}\",\"session\":\"s{s:03}\"}}\n")
                })
            })
            .collect();
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("import.jsonl");
        std::fs::write(&path, &text).unwrap();
        same_both_ways(&path, false);

        struct Count(AtomicU64);
        impl crate::util::progress::Progress for Count {
            fn set_length(&self, _: u64) {}
            fn inc(&self, n: u64) {
                self.0.fetch_add(n, Relaxed);
            }
            fn finish(&self) {}
        }
        let count = Count(AtomicU64::new(0));
        let seen: Mutex<Vec<u64>> = Mutex::new(Vec::new());
        let opts = ReadOptions {
            stream_above: 0,
            ..ReadOptions::default()
        };
        let got = stream_sessions(
            &InputFiles::walk(std::slice::from_ref(&path), false).unwrap(),
            &opts,
            &Workers::current(),
            &count,
            &|s, _| {
                seen.lock().unwrap().push(count.0.load(Relaxed));
                s.events.len()
            },
        )
        .unwrap();
        assert_eq!(got.sessions.len(), 200);
        let seen = seen.into_inner().unwrap();
        let stored = text.len() as u64;
        assert_eq!(count.0.load(Relaxed), stored);
        // Most sessions were handed out while the second pass was going on.
        let early = seen.iter().filter(|&&at| at < stored * 9 / 10).count();
        assert!(early > 150, "{early} of 200 handed out early: {seen:?}");
    }

    #[test]
    fn a_damaged_gzip_breaks_at_the_same_line() {
        let d = tempfile::tempdir().unwrap();
        let text: String = (0..60_000)
            .map(|i| {
                format!(
                    "{{\"type\":\"content\",\"text\":\"{i} {}\",\"session\":\"s{}\"}}\n",
                    i * 7919 % 10007,
                    i % 5
                )
            })
            .collect();
        let mut gz = gzip(text.as_bytes());
        gz.truncate(gz.len() * 2 / 3);
        let path = d.path().join("cut.jsonl.gz");
        std::fs::write(&path, gz).unwrap();
        let got = same_both_ways(&path, false);
        assert!(got.contains("gzip stream is damaged or truncated"), "{got}");
    }

    /// `text` as one zstd frame whose header asks for a window of
    /// 2^`window_log` (no content size, so the window is in the header).
    pub(crate) fn zstd_long(text: &[u8], window_log: u32) -> Vec<u8> {
        let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        e.include_contentsize(false).unwrap();
        e.long_distance_matching(true).unwrap();
        e.window_log(window_log).unwrap();
        e.write_all(text).unwrap();
        e.finish().unwrap()
    }

    /// A zstd file that opens with a skippable frame (`pzstd`'s) or asks for
    /// a window of 2^28 (`zstd --long=28`) reads the same in batches and
    /// whole; past 2^28, both say the limit.
    #[test]
    fn pzstd_and_long_windows_read_in_batches_as_whole() {
        let d = tempfile::tempdir().unwrap();
        let text = awkward();
        let mut skip = vec![0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4];
        skip.extend(zstd::encode_all(text.as_bytes(), 3).unwrap());
        std::fs::create_dir_all(d.path().join("p")).unwrap();
        std::fs::create_dir_all(d.path().join("l")).unwrap();
        let path = d.path().join("p/big.jsonl.zst");
        std::fs::write(&path, skip).unwrap();
        let got = same_both_ways(&path, true);
        assert!(got.contains("skipped") && got.contains("\"big\""), "{got}");
        let long = d.path().join("l/big.jsonl.zst");
        std::fs::write(&long, zstd_long(text.as_bytes(), 28)).unwrap();
        let got = same_both_ways(&long, true);
        assert!(got.contains("skipped") && got.contains("\"big\""), "{got}");
        let past = d.path().join("past.jsonl.zst");
        std::fs::write(&past, zstd_long(text.as_bytes(), 29)).unwrap();
        let got = same_both_ways(&past, true);
        assert!(
            got.contains("needs a window of 536870912 bytes, past looptune's limit of 268435456"),
            "{got}"
        );
    }

    /// zstd files (Codex's archived rollouts) stream in batches as gzip
    /// files do, and a damaged one breaks at the same line either way.
    #[test]
    fn zstd_files_read_in_batches_as_whole() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("big.jsonl.zst");
        std::fs::write(&path, zstd::encode_all(awkward().as_bytes(), 3).unwrap()).unwrap();
        let got = same_both_ways(&path, true);
        assert!(got.contains("skipped") && got.contains("\"big\""), "{got}");
        let text: String = (0..60_000)
            .map(|i| {
                format!(
                    "{{\"type\":\"content\",\"text\":\"{i} {}\"}}\n",
                    i * 7919 % 10007
                )
            })
            .collect();
        let mut z = zstd::encode_all(text.as_bytes(), 3).unwrap();
        z.truncate(z.len() * 2 / 3);
        let cut = d.path().join("cut.jsonl.zst");
        std::fs::write(&cut, z).unwrap();
        let got = same_both_ways(&cut, false);
        assert!(got.contains("zstd stream is damaged or truncated"), "{got}");
    }

    #[test]
    fn native_logs_are_read_whole() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("chat.json");
        std::fs::write(
            &path,
            r#"[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]"#,
        )
        .unwrap();
        let got = same_both_ways(&path, false);
        assert!(!got.starts_with("error"), "{got}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Any mix of records of a few sessions, blank and bad lines reads
        /// the same in batches as whole.
        #[test]
        fn any_file_reads_the_same_in_batches(
            lines in proptest::collection::vec((0u8..6, 0u8..4, "[a-z ]{0,300}"), 0..120),
            lenient in any::<bool>(),
            final_newline in any::<bool>(),
        ) {
            let mut text = String::new();
            for (kind, sid, body) in &lines {
                match kind {
                    0 => text.push_str("   \n"),
                    1 => text.push_str("{\"type\":\"content\",\"text\":\n"),
                    2 => text.push_str(&format!("{{\"type\":\"turn\",\"session\":\"s{sid}\"}}\n")),
                    3 => text.push_str(&format!("{{\"type\":\"user\",\"text\":\"{body}\"}}\n")),
                    _ => text.push_str(&format!(
                        "{{\"type\":\"content\",\"text\":\"{body}\",\"session\":\"s{sid}\"}}\n"
                    )),
                }
            }
            if !final_newline {
                text.pop();
            }
            let d = tempfile::tempdir().unwrap();
            let path: PathBuf = d.path().join("p.jsonl");
            std::fs::write(&path, &text).unwrap();
            same_both_ways(&path, lenient);
        }
    }
}
