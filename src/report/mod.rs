//! Report writers: terminal and JSON output, CSV, `summary.json`, Markdown,
//! JUnit and HTML. Every file is written whole or not at all: to a temporary
//! file in the same folder, then renamed over the target.

pub mod charts;
pub mod ci;
pub mod csv_out;
pub mod diff_out;
pub mod html;
pub mod model;
pub mod summary;
pub mod text;

#[cfg(test)]
mod end_to_end;

use std::io::Write;
use std::path::Path;

/// Write `bytes` to `path` atomically (temporary file + rename). A new file
/// gets the usual mode under the umask (0644 typically), not the temporary
/// file's private 0600; a replaced file keeps its mode.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// [`write_atomic`], the content written by `fill` through a buffer (a large
/// output is never held whole in memory).
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
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
        let mut w = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        fill(&mut w)?;
        w.flush()?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Make a text cell safe for spreadsheets: a cell that starts with `=`, `+`,
/// `-`, `@`, tab or carriage return would be evaluated as a formula, so it gets
/// a leading apostrophe (session ids and excerpts come from untrusted logs).
pub fn safe_cell(s: &str) -> std::borrow::Cow<'_, str> {
    match s.as_bytes().first() {
        Some(b'=' | b'+' | b'-' | b'@' | b'\t' | b'\r') => format!("'{s}").into(),
        _ => s.into(),
    }
}

pub use crate::number::fixed;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formula_cells_are_neutralised() {
        for bad in ["=cmd|' /C calc'!A0", "+1", "-2+3", "@SUM(A1)", "\tx", "\rx"] {
            assert!(safe_cell(bad).starts_with('\''), "{bad:?}");
        }
        assert_eq!(safe_cell("plain"), "plain");
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
