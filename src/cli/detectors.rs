//! `looptune detectors`.

use super::args::family_names;
use crate::detect::{self};
use crate::error::{Error, Result};
use crate::report::text::{FamilyListing, ParamListing, ProfileListing};
use clap::{Args, ValueEnum};
use std::io::Write;

pub(super) const DETECTORS_HELP: &str = "\
Examples:
  looptune detectors                         # every family, profile and parameter
  looptune detectors --family gemini
  looptune detectors --format json | jq .

Exit codes:
  0  ok
  2  unknown family";

/// `detectors --format`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum ListFormat {
    /// Families, profiles and parameters as text.
    Table,
    /// One JSON object per family, with its profiles and parameters.
    Json,
}

#[derive(Debug, Args)]
pub(super) struct DetectorsArgs {
    /// Only this family.
    #[arg(long, value_name = "FAMILY", value_parser = family_names())]
    pub(super) family: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub(super) format: ListFormat,
}

/// `looptune detectors`: families, profiles and parameters with their sources.
pub fn detectors_command(only: Option<&str>, json: bool, out: &mut dyn Write) -> Result<()> {
    let fams = match only {
        Some(f) => vec![detect::family(f)?],
        None => detect::families(),
    };
    let listing: Vec<FamilyListing> = fams.iter().map(|f| family_listing(*f)).collect();
    crate::report::text::detectors(&listing, json, out).map_err(|e| Error::io("<stdout>", e))?;
    if !json && only.is_none() {
        // What the detectors can be fed: every reader, by its `--input-format` name.
        writeln!(
            out,
            "input formats (--input-format; detected per file by content by default): canonical, {}",
            crate::input::import::format_names().join(", ")
        )
        .map_err(|e| Error::io("<stdout>", e))?;
    }
    Ok(())
}

/// A family as plain data for the `detectors` writer.
pub(crate) fn family_listing(f: &dyn detect::Family) -> FamilyListing {
    FamilyListing {
        name: f.name().into(),
        about: f.about().into(),
        profiles: f
            .profiles()
            .into_iter()
            .map(|p| ProfileListing {
                name: p.name.into(),
                about: p.about.into(),
                values: p
                    .values
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            })
            .collect(),
        params: f
            .params()
            .into_iter()
            .map(|p| ParamListing {
                name: p.name.into(),
                kind: p.kind.describe(),
                unit: p.unit.into(),
                doc: p.doc.into(),
                source: p.source.into(),
            })
            .collect(),
    }
}
