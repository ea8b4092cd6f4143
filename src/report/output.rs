//! What one file of a sweep's output folder is: an [`Output`] (its file
//! name, whether it is data or a report, a cost hint, and how to render an
//! analysed result into a writer). Every writer implements it here; the list
//! of them, and everything done to the list, is [`super::outputs`], so a
//! writer never imports the file that lists it.

use crate::score::SweepResult;
use std::io::Write;
/// What a failed output costs the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Data scripts read (`summary.json`, the CSVs): a failure is an error
    /// (exit 2) and nothing is replaced.
    Data,
    /// A view for people (`report.html`): a failure is reported, the run
    /// ends with exit 3 and nothing is replaced (new data beside an old
    /// report would look current).
    Report,
}

/// One file of the output folder.
pub trait Output: Send + Sync {
    /// Its name in the output folder (`sweep.csv`).
    fn name(&self) -> &str;
    /// Data or a report: what its failure means.
    fn kind(&self) -> Kind {
        Kind::Data
    }
    /// A relative cost: the outputs are written longest first, so the short
    /// ones go to whichever thread is free first. Only the order matters.
    fn cost(&self) -> u32;
    /// Write the output of `result` to `w` (buffered by the caller; written
    /// to a staged file moved into place with the rest of the set). `Send`
    /// because some writers (Parquet's) hold their sink across threads.
    fn render(&self, result: &SweepResult, w: &mut (dyn Write + Send)) -> std::io::Result<()>;
}
