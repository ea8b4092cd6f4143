//! `report.html`: one self-contained page with inline SVG charts, built from
//! the files of a sweep folder (`sweep.csv`, `summary.json`).

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Build `DIR/report.html` from `DIR/summary.json` and `DIR/sweep.csv`.
pub fn write_report_dir(dir: &Path) -> Result<PathBuf> {
    let summary = dir.join("summary.json");
    if !summary.is_file() {
        return Err(Error::Usage(format!(
            "{}: no summary.json here; run `looptune sweep` first",
            dir.display()
        )));
    }
    Err(Error::Report {
        path: dir.join("report.html"),
        message: "the HTML report is not built yet".into(),
    })
}
