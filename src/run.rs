//! The commands, wired from the library's steps: read -> replay -> score -> write.
//! The binary calls these; tests call them too.

use crate::detect::{self, DetectorConfig, ParamValue};
use crate::error::{Error, Result, EXIT_GATE, EXIT_OK};
use crate::input::{read_corpus, ReadOptions};
use crate::replay::{replay, ReplayOptions};
use std::io::Write;
use std::path::PathBuf;

/// Which detector configurations a command runs.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Families at their default profiles.
    pub families: Vec<String>,
    /// Named profiles.
    pub profiles: Vec<String>,
    /// `KEY=VALUE` or `FAMILY.KEY=VALUE` overrides.
    pub sets: Vec<String>,
}

impl Selection {
    /// Resolve into configurations: each profile, then each family not already
    /// covered by a profile at its default; gemini-latest when nothing is named.
    pub fn resolve(&self) -> Result<Vec<DetectorConfig>> {
        let mut named: Vec<(Option<String>, Option<String>)> = Vec::new();
        let mut covered: Vec<&'static str> = Vec::new();
        for p in &self.profiles {
            let fam = detect::family_of_profile(p)?;
            covered.push(fam.name());
            named.push((Some(fam.name().to_string()), Some(p.clone())));
        }
        for f in &self.families {
            let fam = detect::family(f)?;
            if !covered.contains(&fam.name()) {
                covered.push(fam.name());
                named.push((Some(fam.name().to_string()), None));
            }
        }
        if named.is_empty() {
            named.push((None, Some("gemini-latest".to_string())));
        }
        // Split overrides by family; a bare key applies to every family that has it.
        let mut used = vec![false; self.sets.len()];
        let mut configs = Vec::new();
        for (fam, prof) in &named {
            let family = match prof {
                Some(p) => detect::family_of_profile(p)?,
                None => detect::family(fam.as_deref().unwrap_or("gemini"))?,
            };
            let specs = family.params();
            let mut overrides: Vec<(String, ParamValue)> = Vec::new();
            for (i, s) in self.sets.iter().enumerate() {
                let (k, v) = s
                    .split_once('=')
                    .ok_or_else(|| Error::Usage(format!("--set `{s}`: expected KEY=VALUE")))?;
                let (target, key) = match k.split_once('.') {
                    Some((f, k)) => (Some(f.trim()), k.trim()),
                    None => (None, k.trim()),
                };
                if target.is_some_and(|t| t != family.name()) {
                    continue;
                }
                match specs.iter().find(|p| p.name == key) {
                    Some(spec) => {
                        overrides.push((key.to_string(), spec.parse(v)?));
                        used[i] = true;
                    }
                    None if target.is_some() => {
                        return Err(Error::Config(format!(
                            "--set `{s}`: unknown parameter `{key}` for family `{}` (see `looptune detectors --family {}`)",
                            family.name(),
                            family.name()
                        )))
                    }
                    None => {}
                }
            }
            configs.push(DetectorConfig::resolve(
                Some(family.name()),
                prof.as_deref(),
                &overrides,
            )?);
        }
        if let Some(i) = used.iter().position(|u| !u) {
            let key = self.sets[i].split('=').next().unwrap_or("");
            return Err(Error::Config(format!(
                "--set `{}`: unknown parameter `{key}` for the selected detectors (see `looptune detectors`)",
                self.sets[i]
            )));
        }
        Ok(configs)
    }
}

/// `looptune replay`.
#[derive(Debug, Clone)]
pub struct ReplayRequest {
    /// Inputs.
    pub paths: Vec<PathBuf>,
    /// How to read them.
    pub read: ReadOptions,
    /// Configurations.
    pub selection: Selection,
    /// Every detection, not only the first.
    pub all: bool,
    /// JSON lines instead of a table.
    pub json: bool,
    /// Worker threads.
    pub jobs: usize,
    /// Exit 1 when anything fires.
    pub fail_on_detection: bool,
    /// No progress bar.
    pub quiet: bool,
}

/// Run `looptune replay`; writes to `out`, returns the exit code.
pub fn replay_command(req: &ReplayRequest, out: &mut dyn Write) -> Result<i32> {
    let configs = req.selection.resolve()?;
    let corpus = read_corpus(&req.paths, &req.read)?;
    for line in &corpus.skipped {
        eprintln!("warning: skipped {line}");
    }
    let progress = crate::progress::for_stderr(req.quiet, "replaying");
    let result = replay(
        &corpus,
        configs,
        &ReplayOptions {
            jobs: req.jobs,
            all: req.all,
        },
        progress.as_ref(),
    )?;
    progress.finish();
    let io = |e| Error::io("<stdout>", e);
    if req.json {
        crate::report::text::replay_json(&corpus, &result, req.all, out).map_err(io)?;
    } else {
        crate::report::text::replay_table(&corpus, &result, req.all, out).map_err(io)?;
    }
    let fired = result
        .outcomes
        .iter()
        .flatten()
        .any(|o| !o.detections.is_empty());
    Ok(if req.fail_on_detection && fired {
        EXIT_GATE
    } else {
        EXIT_OK
    })
}

/// `looptune detectors`: families, profiles and parameters with their sources.
pub fn detectors_command(only: Option<&str>, json: bool, out: &mut dyn Write) -> Result<()> {
    let fams = match only {
        Some(f) => vec![detect::family(f)?],
        None => detect::families(),
    };
    crate::report::text::detectors(&fams, json, out).map_err(|e| Error::io("<stdout>", e))
}
