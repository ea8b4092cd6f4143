//! The files of a sweep's output folder, as one list of [`Output`]s.
//! Staging, writing in parallel (longest first, on up to `--jobs` threads),
//! progress and error reporting go through the list ([`Outputs`]), and so do
//! the guard against writing over an input and `looptune report DIR`, which
//! re-renders every output from `summary.json`. Adding an output is one file
//! implementing [`Output`] and one line in [`Outputs::standard`]
//! (CONTRIBUTING.md).

use super::output::{Kind, Output};
use crate::error::{Error, Result};
use crate::score::SweepResult;
use crate::util::outdir::OutputSet;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Which optional outputs a command writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutputOptions {
    /// `--parquet`: `sweep.parquet`, `groups.parquet`, `detections.parquet`.
    pub parquet: bool,
}

/// The outputs of one command, in writing order (the order `wrote:` lists
/// them in).
pub struct Outputs {
    list: Vec<Box<dyn Output>>,
}

impl std::fmt::Debug for Outputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Outputs {
    /// The list: every output a sweep, `merge` and `report DIR` write.
    pub fn standard(opts: &OutputOptions) -> Outputs {
        use super::{csv_out, html, summary};
        let mut list: Vec<Box<dyn Output>> = vec![
            Box::new(csv_out::SweepCsv),
            Box::new(csv_out::DetectionsCsv),
            Box::new(summary::SummaryJson),
            Box::new(html::ReportHtml),
            Box::new(csv_out::GroupsCsv),
        ];
        if opts.parquet {
            list.extend(super::parquet::outputs());
        }
        Outputs { list }
    }

    /// This list and `output` after it.
    pub fn with(mut self, output: Box<dyn Output>) -> Outputs {
        self.list.push(output);
        self
    }

    /// The outputs, in writing order.
    pub fn iter(&self) -> impl Iterator<Item = &dyn Output> {
        self.list.iter().map(|o| o.as_ref())
    }

    /// Their file names, in writing order.
    pub fn names(&self) -> Vec<&str> {
        self.iter().map(|o| o.name()).collect()
    }

    /// Their paths in folder `dir`.
    pub fn paths(&self, dir: &Path) -> Vec<PathBuf> {
        self.iter().map(|o| dir.join(o.name())).collect()
    }

    /// Stage every output of folder `dir` in `set`: the staged paths, in
    /// list order.
    pub fn stage(&self, set: &mut OutputSet, dir: &Path) -> Result<Vec<PathBuf>> {
        self.paths(dir).iter().map(|p| set.stage(p)).collect()
    }

    /// Render every output of `result` to its staged path (from
    /// [`Outputs::stage`]) at once on the command's `workers`,
    /// longest first, a tick of `progress` as each is done. The outcomes in
    /// list order.
    pub fn write(
        &self,
        result: &SweepResult,
        staged: &[PathBuf],
        workers: &crate::util::pool::Workers,
        progress: &dyn crate::progress::Progress,
    ) -> Result<Vec<std::io::Result<()>>> {
        use rayon::prelude::*;
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Mutex;
        let mut order: Vec<usize> = (0..self.list.len()).collect();
        // Stable: equal costs keep the list's order.
        order.sort_by_key(|&i| std::cmp::Reverse(self.list[i].cost()));
        let done: Vec<Mutex<Option<std::io::Result<()>>>> =
            self.list.iter().map(|_| Mutex::new(None)).collect();
        let next = AtomicUsize::new(0);
        let takers = workers.threads().min(order.len()).max(1);
        // Each worker takes the costliest output left: a list schedule, not
        // rayon's halving of the list (which would pair the two longest).
        workers.install(|| {
            (0..takers).into_par_iter().for_each(|_| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = order.get(k) else { break };
                let o = &self.list[i];
                let r = crate::util::outdir::write_atomic_with(&staged[i], |w| o.render(result, w));
                progress.inc(1);
                *done[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            })
        });
        Ok(done
            .into_iter()
            .map(|m| {
                m.into_inner()
                    .unwrap_or_else(|e| e.into_inner())
                    .expect("every output was written")
            })
            .collect())
    }

    /// Stage, write and check every output of `result` for folder `dir` in
    /// `set` (committed by the caller). A data output that failed is the
    /// error (the first in list order); a report that failed is printed on
    /// `err` and the return is true: the caller replaces nothing and exits 3.
    pub fn write_into(
        &self,
        result: &SweepResult,
        set: &mut OutputSet,
        dir: &Path,
        workers: &crate::util::pool::Workers,
        progress: &dyn crate::progress::Progress,
        err: &mut dyn Write,
    ) -> Result<bool> {
        // Every file is staged beside its target and moved into place at
        // the end (util/outdir.rs): an error or a signal before then leaves
        // the previous outputs as they were.
        let staged = self.stage(set, dir)?;
        progress.set_length(self.list.len() as u64);
        let outcomes = self.write(result, &staged, workers, progress)?;
        let mut report_failed = false;
        for (o, r) in self.iter().zip(outcomes) {
            match (o.kind(), r) {
                (_, Ok(())) => {}
                // The first failed data file, in list order, is the error.
                (Kind::Data, Err(e)) => return Err(Error::io(dir.join(o.name()), e)),
                (Kind::Report, Err(e)) => {
                    report_failed = true;
                    // Name the target, not the staging folder the user never sees.
                    let e = Error::Report {
                        path: dir.join(o.name()),
                        message: e.to_string(),
                    };
                    writeln!(err, "error: {e}").ok();
                }
            }
        }
        Ok(report_failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_names_each_file_once_and_summary_json_as_the_core_does() {
        for parquet in [false, true] {
            let list = Outputs::standard(&OutputOptions { parquet });
            let names = list.names();
            let mut unique = names.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), names.len(), "{names:?}");
            assert!(names.contains(&crate::util::outdir::SUMMARY_JSON));
            assert!(names.contains(&crate::util::outdir::SWEEP_CSV));
        }
        assert_eq!(
            Outputs::standard(&OutputOptions::default()).names(),
            [
                "sweep.csv",
                "detections.csv",
                "summary.json",
                "report.html",
                "groups.csv"
            ]
        );
    }
}
