//! Report writers: terminal and JSON output, CSV, `summary.json`, Markdown,
//! JUnit and HTML. Every file is written whole or not at all: to a temporary
//! file in the same folder, then renamed over the target.

pub mod brief;
pub mod charts;
pub mod ci;
pub mod combined;
pub mod csv_out;
pub mod diff_out;
pub mod html;
pub mod model;
pub mod output;
pub mod outputs;
pub mod parquet;
pub mod summary;
pub mod text;

#[cfg(test)]
mod end_to_end;

pub use crate::util::outdir::write_atomic;

pub use crate::util::escape::safe_cell;

pub use crate::util::number::fixed;

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
}
