//! Which detector configurations a command (or a library user) runs:
//! families at their defaults, named profiles, and `--set` overrides typed
//! against each family's parameters.

use crate::detect::{self, DetectorConfig, ParamValue};
use crate::error::{Error, Result};

/// Which detector configurations a command runs.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Families at their default profiles.
    pub families: Vec<String>,
    /// Named profiles.
    pub profiles: Vec<String>,
    /// `KEY=VALUE` or `FAMILY.KEY=VALUE` overrides (split by clap, `--set`).
    pub sets: Vec<detect::Setting>,
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
            for (i, set) in self.sets.iter().enumerate() {
                let (s, v) = (&set.text, &set.value);
                let (target, key) = set.target();
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
                            "--set `{s}`: unknown parameter `{key}` for family `{}`{} (see `looptune detectors --family {}`)",
                            family.name(),
                            crate::util::suggest::hint(key, specs.iter().map(|p| p.name)),
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
            let text = &self.sets[i].text;
            let key = text.split('=').next().unwrap_or("");
            // The closest parameter of the selected families, or a family
            // name when the typo is in `FAMILY.` of `FAMILY.KEY`.
            let known: Vec<String> = configs
                .iter()
                .flat_map(|c| {
                    let params = detect::family(c.family)
                        .map(|f| f.params())
                        .unwrap_or_default();
                    params
                        .into_iter()
                        .flat_map(move |p| [p.name.to_string(), format!("{}.{}", c.family, p.name)])
                })
                .collect();
            return Err(Error::Config(format!(
                "--set `{text}`: unknown parameter `{key}` for the selected detectors{} (see `looptune detectors`)",
                crate::util::suggest::hint(key, known.iter().map(String::as_str))
            )));
        }
        Ok(configs)
    }
}
