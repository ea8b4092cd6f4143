//! The input list of a command, walked once: what the guard on outputs
//! protects and what the read reads are the same files.

use super::{collect_files_with, Found};
use crate::error::Result;
use crate::event::Skip;
use std::path::PathBuf;

/// The paths a command reads, each walked once before any work (folders
/// expanded in byte order of paths, `-` kept, a previous sweep's output
/// folder passed over, as [`collect_files_with`] does). A path whose walk
/// failed keeps its error: [`InputList::files`] raises the first, when the
/// read begins, as a read that walked them then would have.
#[derive(Debug)]
pub struct InputList {
    paths: Vec<PathBuf>,
    walks: Vec<Result<(Vec<Found>, Vec<Skip>)>>,
}

impl InputList {
    /// Walk every path (`lenient`: unreadable entries of walked folders
    /// are skipped with a note instead of being the error).
    pub fn walk(paths: &[PathBuf], lenient: bool) -> InputList {
        InputList {
            paths: paths.to_vec(),
            walks: paths
                .iter()
                .map(|p| collect_files_with(std::slice::from_ref(p), lenient))
                .collect(),
        }
    }

    /// The paths as given.
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// Every path as given with the files its walk found (none when it failed).
    pub fn found(&self) -> impl Iterator<Item = (&PathBuf, &[Found])> {
        self.paths.iter().zip(&self.walks).map(|(p, w)| match w {
            Ok((found, _)) => (p, &found[..]),
            Err(_) => (p, &[][..]),
        })
    }

    /// The files to read, in order, with what the walks skipped; or the
    /// first path's error, in the order given. A file that several paths
    /// hold (a `--test` folder inside an input folder, `logs logs/a`) is read
    /// once, as part of the last path that holds it: read twice, its
    /// sessions came back under renamed ids, in train and test at once.
    pub fn files(self) -> Result<InputFiles> {
        let mut walks = Vec::with_capacity(self.walks.len());
        let mut notes = Vec::new();
        for walk in self.walks {
            let (found, skipped) = walk?;
            walks.push(found);
            notes.extend(skipped);
        }
        if walks.len() > 1 {
            keep_last_of_each(&mut walks);
        }
        let files = walks.into_iter().flatten().collect();
        Ok(InputFiles {
            paths: self.paths,
            files,
            notes,
        })
    }
}

/// Drop from each walk the files a later walk also found (the same file,
/// however its path was spelled). Standard input is never dropped.
fn keep_last_of_each(walks: &mut [Vec<Found>]) {
    let key = |f: &Found| match f {
        Found::Stdin => None,
        Found::Path { path, .. } => {
            Some(std::fs::canonicalize(path).unwrap_or_else(|_| path.clone()))
        }
    };
    let mut later: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    for walk in walks.iter_mut().rev() {
        let keys: Vec<Option<PathBuf>> = walk.iter().map(key).collect();
        let mut i = 0;
        walk.retain(|_| {
            let k = &keys[i];
            i += 1;
            k.as_ref().is_none_or(|k| !later.contains(k))
        });
        later.extend(keys.into_iter().flatten());
    }
}

/// An input list every path of which was walked: the files in reading
/// order and the notes on what the walks skipped (`--lenient`).
#[derive(Debug, Clone)]
pub struct InputFiles {
    pub(super) paths: Vec<PathBuf>,
    pub(super) files: Vec<Found>,
    pub(super) notes: Vec<Skip>,
}

impl InputFiles {
    /// Walk `paths` ([`InputList::walk`]); the first error is the error.
    pub fn walk(paths: &[PathBuf], lenient: bool) -> Result<InputFiles> {
        InputList::walk(paths, lenient).files()
    }

    /// The paths as given.
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// The files, in reading order.
    pub fn found(&self) -> &[Found] {
        &self.files
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_walk_gives_what_a_walk_of_all_paths_gives_and_keeps_each_error() {
        let d = tempfile::tempdir().unwrap();
        let sub = d.path().join("runs");
        std::fs::create_dir_all(sub.join("inner")).unwrap();
        for f in ["b.jsonl", "a.jsonl", "inner/c.jsonl", "notes.txt"] {
            std::fs::write(sub.join(f), "").unwrap();
        }
        let missing = d.path().join("missing.jsonl");
        let paths = vec![
            sub.clone(),
            PathBuf::from("-"),
            sub.join("a.jsonl"),
            missing.clone(),
        ];
        let list = InputList::walk(&paths, false);
        assert_eq!(list.paths(), &paths[..]);
        let found: Vec<usize> = list.found().map(|(_, f)| f.len()).collect();
        assert_eq!(found, [3, 1, 1, 0]);
        let e = list.files().unwrap_err().to_string();
        let whole = collect_files_with(&paths, false).unwrap_err().to_string();
        assert_eq!(e, whole);
        assert!(e.contains("missing.jsonl"), "{e}");
        let ok = &paths[..3];
        let files = InputFiles::walk(ok, false).unwrap();
        // `runs/a.jsonl`, given again after the walk of `runs`, is read
        // once, as part of the last path that holds it.
        let mut want = collect_files_with(ok, false).unwrap().0;
        want.retain(
            |f| !matches!(f, Found::Path { path, walked: true } if path.ends_with("a.jsonl")),
        );
        assert_eq!(files.found(), &want[..]);
        assert_eq!(files.paths(), ok);
    }
}
