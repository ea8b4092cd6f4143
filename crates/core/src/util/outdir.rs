//! Output sets replaced whole. A command stages every file it writes in a
//! temporary folder beside its target (`.looptune-stage-XXXXXX`, one per
//! target folder) and moves them into place only at the end, so a failed or
//! interrupted run never leaves a mix of old and new outputs. SIGINT and
//! SIGTERM remove the staging folders and leave the previous outputs as they
//! were; a signal that arrives while the files are being moved in waits for
//! the move to finish (a few renames), so the set is always whole.
//!
//! A `kill -9` runs no cleanup, so the switch from the old set to the new is
//! decided at one rename: before its first move, a commit renames a journal
//! (`.looptune-committed`, the names to move) into each staging folder. A
//! staging folder holding a journal is a set that must be finished, and the
//! next writer of the folder, and every reader of a result in it
//! ([`finish_interrupted`]), moves its remaining files in first; one without
//! a journal was never committed and is removed.

use crate::error::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// Exit code after SIGINT (128 + 2), as shells report it.
pub const EXIT_SIGINT: i32 = 130;
/// Exit code after SIGTERM (128 + 15).
pub const EXIT_SIGTERM: i32 = 143;

/// Staging folders alive in this process; the signal thread removes them.
/// The lock is also held while a set is moved into place.
static STAGING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// True once a set has been moved into place in this process (set under the
/// [`STAGING`] lock): what the signal thread says depends on it.
static COMMITTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The signal received (0: none), set by the signal thread before it waits
/// for a commit in progress.
static SIGNALLED: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The journal a commit renames into a staging folder before its first
/// move: the file names to move in, one a line.
const JOURNAL: &str = ".looptune-committed";

/// Install the SIGINT/SIGTERM handler once: a thread that, on a signal, waits
/// for any move in progress, removes the staging folders and exits.
fn install_signal_cleanup() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    // signal-hook's iterator is Unix-only; elsewhere Ctrl-C keeps its default
    // action and the staging folders' names say what they are.
    #[cfg(unix)]
    INSTALLED.get_or_init(|| {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
            return; // No handler: the default action still ends the process.
        };
        std::thread::spawn(move || {
            if let Some(sig) = signals.forever().next() {
                // Told before the wait: a commit in progress ends the
                // process itself once its set is in place.
                SIGNALLED.store(sig, std::sync::atomic::Ordering::SeqCst);
                let staging = STAGING.lock().unwrap_or_else(|e| e.into_inner());
                for dir in staging.iter() {
                    let _ = std::fs::remove_dir_all(dir);
                }
                // A signal that waited for a commit to finish must not say
                // the previous outputs were kept: the new ones are in place.
                let committed =
                    staging.is_empty() && COMMITTED.load(std::sync::atomic::Ordering::SeqCst);
                interrupted(sig, committed);
            }
        });
    });
}

/// Say what an interruption left and exit 130 (SIGINT) or 143 (SIGTERM).
fn interrupted(sig: i32, committed: bool) -> ! {
    if committed {
        eprintln!("interrupted: the new outputs were already written whole");
    } else {
        eprintln!("interrupted: previous outputs left as they were");
    }
    #[cfg(unix)]
    let int = sig == signal_hook::consts::SIGINT;
    #[cfg(not(unix))]
    let int = sig == 2;
    std::process::exit(if int { EXIT_SIGINT } else { EXIT_SIGTERM });
}

/// The files of one command's output, staged until [`OutputSet::commit`].
#[derive(Default)]
pub struct OutputSet {
    /// `(target folder, staging folder)`.
    folders: Vec<(PathBuf, tempfile::TempDir)>,
    /// `(staged file, target file)` in staging order.
    files: Vec<(PathBuf, PathBuf)>,
    /// The locks held on the target folders (dropped after `folders`, so
    /// the staging folders are gone before another writer may start).
    locks: Vec<FolderLock>,
}

/// How long a writer waits for another run writing to the same folder.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// An exclusive lock on an output folder (`flock` on the folder itself, so
/// no file is left in it), held while a set is staged and committed: two
/// runs writing to one `--out` take turns instead of mixing their sets. The
/// kernel releases it when the process ends, however it ends.
struct FolderLock {
    #[cfg(unix)]
    _file: Option<std::fs::File>,
}

impl FolderLock {
    /// Lock `dir`, waiting (and saying so once on stderr) while another run
    /// holds it; an error after [`LOCK_WAIT`]. Where locks are not supported
    /// (some network file systems), the folder is used unlocked.
    fn take(dir: &Path) -> Result<FolderLock> {
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            let Ok(file) = std::fs::File::open(dir) else {
                return Ok(FolderLock { _file: None });
            };
            let started = std::time::Instant::now();
            let mut said = false;
            loop {
                // SAFETY: the descriptor is open for as long as `file`.
                let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
                if r == 0 {
                    return Ok(FolderLock { _file: Some(file) });
                }
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::WouldBlock {
                    return Ok(FolderLock { _file: None });
                }
                if started.elapsed() >= LOCK_WAIT {
                    return Err(Error::Usage(format!(
                        "{}: another looptune run has been writing to this folder for {} s; try again when it ends",
                        dir.display(),
                        LOCK_WAIT.as_secs()
                    )));
                }
                if !said {
                    eprintln!(
                        "waiting: another looptune run is writing to {}",
                        dir.display()
                    );
                    said = true;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
        #[cfg(not(unix))]
        {
            let _ = dir;
            Ok(FolderLock {})
        }
    }
}

/// The staging folders in `dir` (whether or not a live writer owns them).
fn staging_folders(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(".looptune-stage-"))
                && e.file_type().is_ok_and(|t| t.is_dir())
        })
        .map(|e| e.path())
        .collect()
}

/// Deal with the staging folders a killed run left in `dir` (`kill -9` runs
/// no cleanup): one whose set was committed (it holds the journal) has its
/// remaining files moved in, so the folder holds the new set whole; any
/// other is removed. Called with the folder's lock held, so none of them
/// belongs to a live writer. True when a set was finished.
fn settle_stale_staging(dir: &Path) -> Result<bool> {
    let mut finished = false;
    for stage in staging_folders(dir) {
        match std::fs::read_to_string(stage.join(JOURNAL)) {
            Ok(names) => {
                for name in names.lines().filter(|n| !n.is_empty() && !n.contains('/')) {
                    let staged = stage.join(name);
                    if std::fs::symlink_metadata(&staged).is_ok() {
                        move_into(&staged, &dir.join(name)).map_err(|e| Error::File {
                            path: dir.join(name).display().to_string(),
                            message: format!(
                                "an interrupted run left its new outputs half moved in ({}), and they could not be finished: {e}",
                                stage.display()
                            ),
                        })?;
                    }
                }
                finished = true;
                let _ = std::fs::remove_dir_all(&stage);
            }
            Err(_) => {
                let _ = std::fs::remove_dir_all(&stage);
            }
        }
    }
    Ok(finished)
}

/// Before a result in `dir` is read: if a run was killed while moving its
/// outputs into `dir` (its journal says the new set was committed), finish
/// the move, so no reader ever sees new files beside old ones. Nothing to do
/// (and no lock taken) in the usual case.
pub fn finish_interrupted(dir: &Path) -> Result<()> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    if !staging_folders(dir)
        .iter()
        .any(|s| s.join(JOURNAL).is_file())
    {
        return Ok(());
    }
    // The lock: a live writer's journal is its own to finish.
    let _lock = FolderLock::take(dir)?;
    if settle_stale_staging(dir)? {
        eprintln!(
            "note: {}: finished moving in the outputs of a run that was killed while writing them",
            dir.display()
        );
    }
    Ok(())
}

/// Move one staged file to `target`. A replaced regular file's mode is kept;
/// a replaced link (or anything else) is not copied from: the new file keeps
/// the mode it was made with (a link's own mode is 0777).
fn move_into(staged: &Path, target: &Path) -> std::io::Result<()> {
    if let Ok(old) = std::fs::symlink_metadata(target) {
        if old.is_file() {
            let _ = std::fs::set_permissions(staged, old.permissions());
        }
    }
    std::fs::rename(staged, target)
}

impl std::fmt::Debug for OutputSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputSet")
            .field("files", &self.files)
            .finish()
    }
}

impl OutputSet {
    /// An empty set; installs the signal cleanup.
    pub fn new() -> OutputSet {
        install_signal_cleanup();
        OutputSet::default()
    }

    /// The staging folder for files that go into `dir` (created, with `dir`, on first use).
    pub fn folder_for(&mut self, dir: &Path) -> Result<PathBuf> {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Some((_, t)) = self.folders.iter().find(|(d, _)| d == dir) {
            return Ok(t.path().to_path_buf());
        }
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        // Taken before the process-wide lock, which a signal needs.
        self.locks.push(FolderLock::take(dir)?);
        settle_stale_staging(dir)?;
        let mut staging = STAGING.lock().unwrap_or_else(|e| e.into_inner());
        let t = tempfile::Builder::new()
            .prefix(".looptune-stage-")
            .tempdir_in(dir)
            .map_err(|e| Error::io(dir, e))?;
        staging.push(t.path().to_path_buf());
        drop(staging);
        let path = t.path().to_path_buf();
        self.folders.push((dir.to_path_buf(), t));
        Ok(path)
    }

    /// Where to write `target` now: a path in its staging folder. It is moved
    /// to `target` by [`OutputSet::commit`] if it exists by then.
    pub fn stage(&mut self, target: &Path) -> Result<PathBuf> {
        let parent = target.parent().unwrap_or(Path::new("."));
        let name = target
            .file_name()
            .ok_or_else(|| Error::Usage(format!("{}: not a file name", target.display())))?;
        let staged = self.folder_for(parent)?.join(name);
        test_delay();
        if !self.files.iter().any(|(_, t)| t == target) {
            self.files.push((staged.clone(), target.to_path_buf()));
        }
        Ok(staged)
    }

    /// Stage `bytes` for `target`.
    pub fn write(&mut self, target: &Path, bytes: &[u8]) -> Result<()> {
        let staged = self.stage(target)?;
        write_atomic(&staged, bytes).map_err(|e| Error::io(target, e))
    }

    /// Move every staged file into place (each rename is atomic; signals wait
    /// until all are done) and remove the staging folders. Returns the targets
    /// written, in staging order. A replaced file keeps its mode. The set is
    /// moved whole or not at all: each file it replaces is first linked into
    /// the staging folder, and if a rename fails (a full disk that cannot grow
    /// a folder, a target that became a folder), the files already moved are
    /// put back as they were before the error is returned.
    pub fn commit(mut self) -> Result<Vec<PathBuf>> {
        let mut staging = STAGING.lock().unwrap_or_else(|e| e.into_inner());
        // The journals first: from here on a `kill -9` leaves a set the next
        // run (or reader) finishes, never a mix.
        let journals = self.write_journals()?;
        let mut moved: Vec<(&PathBuf, Option<PathBuf>)> = Vec::new();
        let mut failure = None;
        for (i, (staged, target)) in self.files.iter().enumerate() {
            if !staged.exists() {
                continue;
            }
            let mut backup = None;
            if let Ok(old) = std::fs::symlink_metadata(target) {
                let keep = staged.with_file_name(format!(".looptune-old-{i}"));
                if old.is_file() && std::fs::hard_link(target, &keep).is_ok() {
                    backup = Some(keep);
                }
            }
            match move_into(staged, target) {
                Ok(()) => moved.push((target, backup)),
                Err(e) => {
                    failure = Some(Error::io(target, e));
                    break;
                }
            }
            test_kill_after_moves(moved.len());
        }
        if failure.is_some() {
            // No longer a set to finish: put back what was moved, newest first.
            for j in &journals {
                let _ = std::fs::remove_file(j);
            }
            for (target, backup) in moved.drain(..).rev() {
                let _ = match backup {
                    Some(old) => std::fs::rename(old, target),
                    None => std::fs::remove_file(target),
                };
            }
        }
        let written = moved.into_iter().map(|(t, _)| t.clone()).collect();
        staging.retain(|p| !self.folders.iter().any(|(_, t)| t.path() == p));
        self.folders.clear(); // TempDir drops remove the staging folders.
        if failure.is_none() {
            COMMITTED.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        // A signal that came during the moves waited for them: end here, so
        // the run stops whatever the main thread would do next, and say
        // which set is in place.
        let sig = SIGNALLED.load(std::sync::atomic::Ordering::SeqCst);
        if sig != 0 {
            for dir in staging.iter() {
                let _ = std::fs::remove_dir_all(dir);
            }
            interrupted(sig, failure.is_none());
        }
        drop(staging);
        match failure {
            Some(e) => Err(e),
            None => Ok(written),
        }
    }
}

impl OutputSet {
    /// Rename a journal into each staging folder that has a file to move:
    /// its names, written and synced first, so it exists whole or not at
    /// all. The journals' paths.
    fn write_journals(&self) -> Result<Vec<PathBuf>> {
        let mut journals = Vec::new();
        for (dir, t) in &self.folders {
            let names: Vec<&std::ffi::OsStr> = self
                .files
                .iter()
                .filter(|(staged, _)| staged.parent() == Some(t.path()) && staged.exists())
                .filter_map(|(staged, _)| staged.file_name())
                .collect();
            if names.is_empty() {
                continue;
            }
            let mut text = String::new();
            for n in names {
                text.push_str(&n.to_string_lossy());
                text.push('\n');
            }
            let journal = t.path().join(JOURNAL);
            let draft = t.path().join(".looptune-journal.tmp");
            let written = std::fs::File::create(&draft).and_then(|mut f| {
                f.write_all(text.as_bytes())?;
                f.sync_all()
            });
            written
                .and_then(|()| std::fs::rename(&draft, &journal))
                .map_err(|e| Error::io(dir, e))?;
            journals.push(journal);
        }
        Ok(journals)
    }
}

impl Drop for OutputSet {
    fn drop(&mut self) {
        if self.folders.is_empty() {
            return;
        }
        let mut staging = STAGING.lock().unwrap_or_else(|e| e.into_inner());
        staging.retain(|p| !self.folders.iter().any(|(_, t)| t.path() == p));
    }
}

/// Debug builds only: `LOOPTUNE_TEST_STAGE_DELAY_MS` slows staging so the
/// interruption test can send its signal while a set is half written.
fn test_delay() {
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var("LOOPTUNE_TEST_STAGE_DELAY_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// Debug builds only: `LOOPTUNE_TEST_KILL_AFTER_MOVES=N` kills the process
/// with SIGKILL once a commit has moved `N` files (`LOOPTUNE_TEST_MOVE_DELAY_MS`
/// waits after each move instead), so the tests can stop a run half way
/// through its moves as `kill -9` would.
fn test_kill_after_moves(moved: usize) {
    #[cfg(debug_assertions)]
    {
        if let Some(ms) = std::env::var("LOOPTUNE_TEST_MOVE_DELAY_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        let kill = std::env::var("LOOPTUNE_TEST_KILL_AFTER_MOVES")
            .ok()
            .and_then(|v| v.parse::<usize>().ok());
        if kill == Some(moved) {
            #[cfg(unix)]
            // SAFETY: sending a signal to this process has no memory effects.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
    }
    let _ = moved;
}

/// Debug builds only: `LOOPTUNE_TEST_DISK_FULL=NAME` makes writing a file
/// named `NAME` fail as a full disk does, once its bytes are written, so the
/// tests can check that a set is then committed whole or not at all.
fn test_disk_full(path: &Path) -> std::io::Result<()> {
    #[cfg(debug_assertions)]
    if let Some(name) = std::env::var_os("LOOPTUNE_TEST_DISK_FULL") {
        if path.file_name() == Some(name.as_os_str()) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "No space left on device (LOOPTUNE_TEST_DISK_FULL)",
            ));
        }
    }
    let _ = path;
    Ok(())
}

/// `summary.json`: the saved record of a sweep, which `report`, `merge`
/// and `diff` load from a folder. The binary's output list (`report::output`)
/// names the other files of the folder.
pub const SUMMARY_JSON: &str = "summary.json";

/// `sweep.csv`: with [`SUMMARY_JSON`], what marks an output folder.
pub const SWEEP_CSV: &str = "sweep.csv";

/// A folder written by `looptune sweep` (it holds `sweep.csv` and
/// `summary.json`): a folder walk skips it, so `--out` inside an input
/// folder works again on the next run (outputs are not inputs).
pub fn is_output_folder(dir: &Path) -> bool {
    dir.join(SWEEP_CSV).is_file() && dir.join(SUMMARY_JSON).is_file()
}

/// True when an output path is `-`: standard output, as everywhere a file
/// is written (`import -o -`, `--markdown -`, `--junit -`).
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// True when standard input is the file at `path` (same device and inode):
/// `looptune import - -o F < F` would otherwise overwrite its own input.
pub fn stdin_is(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        use std::os::unix::fs::MetadataExt;
        let Ok(target) = std::fs::metadata(path) else {
            return false;
        };
        let Ok(fd) = std::io::stdin().as_fd().try_clone_to_owned() else {
            return false;
        };
        let Ok(input) = std::fs::File::from(fd).metadata() else {
            return false;
        };
        input.dev() == target.dev() && input.ino() == target.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// Write `bytes` to `path` atomically (temporary file + rename). A new file
/// gets the usual mode under the umask (0644 typically), not the temporary
/// file's private 0600; a replaced file keeps its mode.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// [`write_atomic`], the content written by `fill` through a buffer (a large
/// output is never held whole in memory). The writer is `Send`, for
/// writers that hold it across threads (Parquet's).
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut (dyn Write + Send)) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".looptune-").suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Created with 0666: the kernel applies the umask, as for any new file.
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir)?;
    if let Ok(old) = std::fs::metadata(path) {
        tmp.as_file().set_permissions(old.permissions())?;
    }
    {
        let file = Writeback::new(tmp.as_file_mut());
        let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
        fill(&mut w)?;
        w.flush()?;
    }
    test_disk_full(path)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// A file being written whose pages the kernel is asked to start writing
/// to disk every [`Writeback::EVERY`] bytes, so the disk works while the
/// rest is formatted and the closing `fsync` waits for the last stretch
/// only, not for the whole file (on a large report it waited about as long
/// as the formatting took). Linux only; elsewhere a plain file.
struct Writeback<'a> {
    file: &'a mut std::fs::File,
    written: u64,
    started: u64,
}

impl<'a> Writeback<'a> {
    const EVERY: u64 = 8 << 20;

    fn new(file: &'a mut std::fs::File) -> Writeback<'a> {
        Writeback {
            file,
            written: 0,
            started: 0,
        }
    }
}

impl Write for Writeback<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        if self.written - self.started >= Self::EVERY {
            #[cfg(target_os = "linux")]
            {
                use std::os::fd::AsRawFd;
                // Only a hint: the fsync at the end is what makes the file
                // durable, so a failure here changes nothing.
                // SAFETY: the descriptor is open for as long as `self.file`.
                unsafe {
                    libc::sync_file_range(
                        self.file.as_raw_fd(),
                        self.started as libc::off64_t,
                        (self.written - self.started) as libc::off64_t,
                        libc::SYNC_FILE_RANGE_WRITE,
                    );
                }
            }
            self.started = self.written;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_moves_before_commit_and_everything_after() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("a.csv"), b"old a").unwrap();
        std::fs::write(out.join("b.csv"), b"old b").unwrap();
        let mut set = OutputSet::new();
        set.write(&out.join("a.csv"), b"new a").unwrap();
        set.write(&out.join("b.csv"), b"new b").unwrap();
        assert_eq!(std::fs::read(out.join("a.csv")).unwrap(), b"old a");
        let written = set.commit().unwrap();
        assert_eq!(written, vec![out.join("a.csv"), out.join("b.csv")]);
        assert_eq!(std::fs::read(out.join("b.csv")).unwrap(), b"new b");
        let names: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "no staging folder left: {names:?}");
    }

    /// Two sets for one folder take turns: the second waits until the
    /// first is committed, so they never mix.
    #[test]
    fn a_second_writer_waits_for_the_first() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().to_path_buf();
        let mut first = OutputSet::new();
        first.write(&out.join("x.csv"), b"first").unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let o = out.clone();
        let second = std::thread::spawn(move || {
            let mut set = OutputSet::new();
            set.write(&o.join("x.csv"), b"second").unwrap();
            set.write(&o.join("y.csv"), b"second").unwrap();
            set.commit().unwrap();
            tx.send(()).unwrap();
        });
        let waited = rx.recv_timeout(std::time::Duration::from_millis(300));
        assert!(waited.is_err(), "the second set did not wait for the first");
        first.commit().unwrap();
        rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        second.join().unwrap();
        assert_eq!(std::fs::read(out.join("x.csv")).unwrap(), b"second");
        assert_eq!(std::fs::read(out.join("y.csv")).unwrap(), b"second");
    }

    /// A staging folder left by a killed run is removed by the next one.
    #[test]
    fn a_killed_runs_staging_folder_is_removed_by_the_next() {
        let d = tempfile::tempdir().unwrap();
        let stale = d.path().join(".looptune-stage-Ab12Cd");
        std::fs::create_dir(&stale).unwrap();
        std::fs::write(stale.join("sweep.csv"), b"half").unwrap();
        let other = d.path().join(".looptune-kept");
        std::fs::create_dir(&other).unwrap();
        let mut set = OutputSet::new();
        set.write(&d.path().join("a.csv"), b"a").unwrap();
        assert!(!stale.exists());
        set.commit().unwrap();
        assert!(other.exists(), "only staging folders are removed");
    }

    /// A rename that fails half way (here: a target that became a folder)
    /// puts back the files already moved: the set is whole or not at all.
    #[test]
    fn a_commit_that_fails_half_way_puts_back_what_it_moved() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path();
        std::fs::write(out.join("a.csv"), b"old a").unwrap();
        let mut set = OutputSet::new();
        set.write(&out.join("a.csv"), b"new a").unwrap();
        set.write(&out.join("new.csv"), b"new").unwrap();
        set.write(&out.join("b.csv"), b"new b").unwrap();
        std::fs::create_dir(out.join("b.csv")).unwrap();
        std::fs::write(out.join("b.csv").join("x"), b"x").unwrap();
        assert!(set.commit().is_err());
        assert_eq!(std::fs::read(out.join("a.csv")).unwrap(), b"old a");
        assert!(!out.join("new.csv").exists());
        let mut names: Vec<_> = std::fs::read_dir(out)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["a.csv", "b.csv"], "no staging or backup left");
    }

    /// What `kill -9` after `moves` renames of a commit leaves: the journal
    /// written, some files moved, the staging folder still there.
    fn killed_commit(set: OutputSet, moves: usize) {
        let mut set = set;
        set.write_journals().unwrap();
        for (staged, target) in set.files.iter().take(moves) {
            move_into(staged, target).unwrap();
        }
        // No cleanup, as after SIGKILL (the kernel drops the locks).
        set.locks.clear();
        let mut staging = STAGING.lock().unwrap_or_else(|e| e.into_inner());
        staging.retain(|p| !set.folders.iter().any(|(_, t)| t.path() == p));
        drop(staging);
        for (_, t) in std::mem::take(&mut set.folders) {
            let _ = t.keep();
        }
    }

    #[test]
    fn a_set_killed_while_moving_in_is_finished_by_the_next_reader_or_writer() {
        for by_reader in [true, false] {
            let d = tempfile::tempdir().unwrap();
            let out = d.path();
            for n in ["a.csv", "b.csv", "c.csv"] {
                std::fs::write(out.join(n), b"old").unwrap();
            }
            let mut set = OutputSet::new();
            for n in ["a.csv", "b.csv", "c.csv"] {
                set.write(&out.join(n), b"new").unwrap();
            }
            killed_commit(set, 1);
            assert_eq!(std::fs::read(out.join("b.csv")).unwrap(), b"old", "mixed");
            if by_reader {
                finish_interrupted(out).unwrap();
            } else {
                let mut next = OutputSet::new();
                next.write(&out.join("d.csv"), b"next").unwrap();
                next.commit().unwrap();
            }
            for n in ["a.csv", "b.csv", "c.csv"] {
                assert_eq!(std::fs::read(out.join(n)).unwrap(), b"new", "{n}");
            }
            assert!(staging_folders(out).is_empty());
        }
    }

    /// A staging folder whose journal was never written is not a committed
    /// set: its files are dropped, the old set stays.
    #[test]
    fn a_set_killed_before_its_journal_is_dropped() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.csv"), b"old").unwrap();
        let mut set = OutputSet::new();
        set.write(&d.path().join("a.csv"), b"new").unwrap();
        set.locks.clear();
        for (_, t) in std::mem::take(&mut set.folders) {
            let _ = t.keep();
        }
        finish_interrupted(d.path()).unwrap();
        assert_eq!(staging_folders(d.path()).len(), 1, "a reader leaves it");
        let mut next = OutputSet::new();
        next.write(&d.path().join("b.csv"), b"b").unwrap();
        next.commit().unwrap();
        assert_eq!(std::fs::read(d.path().join("a.csv")).unwrap(), b"old");
        assert!(staging_folders(d.path()).is_empty());
    }

    /// A file that replaces a link is a regular file with the usual mode,
    /// not the link's 0777, and the link's target is untouched.
    #[cfg(unix)]
    #[test]
    fn a_replaced_link_does_not_lend_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let plain = d.path().join("plain");
        std::fs::write(&plain, b"x").unwrap();
        let elsewhere = d.path().join("elsewhere");
        std::fs::write(&elsewhere, b"keep").unwrap();
        let link = d.path().join("summary.md");
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        let mut set = OutputSet::new();
        set.write(&link, b"new").unwrap();
        set.commit().unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_file());
        assert_eq!(mode(&link), mode(&plain));
        assert_eq!(std::fs::read(&elsewhere).unwrap(), b"keep");
    }

    #[test]
    fn a_dropped_set_leaves_the_previous_outputs_and_no_trace() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.csv"), b"old").unwrap();
        {
            let mut set = OutputSet::new();
            set.write(&d.path().join("a.csv"), b"new").unwrap();
        }
        assert_eq!(std::fs::read(d.path().join("a.csv")).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn stdin_identity_is_by_device_and_inode() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x");
        std::fs::write(&p, b"x").unwrap();
        // The test harness's stdin is not this fresh file.
        assert!(!stdin_is(&p));
        assert!(!stdin_is(&d.path().join("missing")));
    }

    /// Past the size at which writeback is started as it goes, the file is
    /// still exactly what was written.
    #[test]
    fn a_large_write_is_whole() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big.csv");
        let line: Vec<u8> = (0..=255u8).cycle().take(4099).collect();
        let n = (2 * Writeback::EVERY as usize) / line.len() + 3;
        write_atomic_with(&p, |w| (0..n).try_for_each(|_| w.write_all(&line))).unwrap();
        let got = std::fs::read(&p).unwrap();
        assert_eq!(got.len(), n * line.len());
        assert!(got.chunks(line.len()).all(|c| c == line));
    }

    #[test]
    fn atomic_write_replaces_whole() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.csv");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn atomic_write_honours_the_umask_and_keeps_an_existing_mode() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        // What a plain new file gets under this process's umask.
        let plain = d.path().join("plain");
        std::fs::write(&plain, b"x").unwrap();
        let p = d.path().join("a.csv");
        write_atomic(&p, b"one").unwrap();
        assert_eq!(mode(&p), mode(&plain));
        assert_ne!(mode(&p), 0o600, "not the temporary file's private mode");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(mode(&p), 0o640);
    }
}
