//! `--for looptune`: one detector configuration as a TOML file that
//! `replay --config`, `guard --config` and the Python `Detector(config=...)`
//! load, so any agent can run the exact rule a sweep chose.
//!
//! Every parameter is written (not only what differs from the profile): the
//! file keeps meaning the same configuration if a later looptune changes a
//! profile's values.

use crate::detect::{family, DetectorConfig, ParamValue};
use crate::error::{Error, Result};
use std::path::Path;

/// What is wrong with a configuration file, beyond TOML syntax.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    /// No `[detector]` table.
    #[error("no [detector] table (expected `family` and `profile` in it)")]
    NoDetector,
    /// A key the format does not have.
    #[error("unknown key `{0}` (expected [detector] with family and profile, and [params])")]
    UnknownKey(String),
    /// A `[detector]` field of the wrong type.
    #[error("[detector] {0} must be a string")]
    NotAString(&'static str),
    /// A parameter value TOML can hold but no parameter takes (a table, a date).
    #[error("[params] {0}: a table or date is not a parameter value")]
    BadValue(String),
}

/// The configuration as a TOML file; `origin` says where it comes from (one
/// line, written as a comment).
pub fn to_toml(cfg: &DetectorConfig, origin: &str) -> String {
    let mut s = String::new();
    s.push_str("# looptune detector configuration (looptune export --for looptune).\n");
    s.push_str("# Load it with `looptune replay --config FILE.toml`, `looptune guard --config FILE.toml`\n");
    s.push_str("# or `looptune.Detector(config=\"FILE.toml\")` in Python.\n");
    for line in origin.lines() {
        s.push_str("# ");
        s.push_str(line);
        s.push('\n');
    }
    s.push_str("\n[detector]\n");
    s.push_str(&format!("family = {:?}\n", cfg.family));
    s.push_str(&format!("profile = {:?}\n", cfg.profile));
    s.push_str("\n[params]\n");
    for (k, v) in &cfg.params.0 {
        s.push_str(&format!("{k} = {}\n", v.to_toml()));
    }
    s
}

/// Read a configuration file written by [`to_toml`] (or by hand: parameters
/// left out take the profile's values).
pub fn load(path: &Path) -> Result<DetectorConfig> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse(&text, &path.display().to_string())
}

/// [`load`] from text; `name` is the file named in errors.
pub fn parse(text: &str, name: &str) -> Result<DetectorConfig> {
    let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() as u64 + 1;
    let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| match e.span() {
        Some(span) => Error::Line {
            path: name.to_string(),
            line: line_of(span.start),
            message: e.message().to_string(),
        },
        None => Error::File {
            path: name.to_string(),
            message: e.message().to_string(),
        },
    })?;
    // Errors past the syntax name the key's line when the text shows it.
    let at_key = |key: &str, e: String| {
        let needle = format!("\n{key}");
        match text.find(&needle) {
            Some(i) => Error::Line {
                path: name.to_string(),
                line: line_of(i + 1),
                message: e,
            },
            None => Error::File {
                path: name.to_string(),
                message: e,
            },
        }
    };
    for k in doc.keys() {
        if k != "detector" && k != "params" {
            return Err(at_key(
                k,
                ConfigFileError::UnknownKey(k.clone()).to_string(),
            ));
        }
    }
    let det = doc
        .get("detector")
        .and_then(toml::Value::as_table)
        .ok_or_else(|| Error::File {
            path: name.to_string(),
            message: ConfigFileError::NoDetector.to_string(),
        })?;
    let mut fam = None;
    let mut profile = None;
    for (k, v) in det {
        let slot = match k.as_str() {
            "family" => &mut fam,
            "profile" => &mut profile,
            other => {
                return Err(at_key(
                    other,
                    ConfigFileError::UnknownKey(format!("detector.{other}")).to_string(),
                ))
            }
        };
        let field = if k == "family" { "family" } else { "profile" };
        *slot = Some(
            v.as_str()
                .ok_or_else(|| at_key(k, ConfigFileError::NotAString(field).to_string()))?
                .to_string(),
        );
    }
    let family_name = match (&fam, &profile) {
        (Some(f), _) => family(f)
            .map_err(|e| at_key("family", e.to_string()))?
            .name(),
        (None, Some(p)) => crate::detect::family_of_profile(p)
            .map_err(|e| at_key("profile", e.to_string()))?
            .name(),
        (None, None) => {
            return Err(Error::File {
                path: name.to_string(),
                message: ConfigFileError::NoDetector.to_string(),
            })
        }
    };
    let mut overrides = Vec::new();
    if let Some(params) = doc.get("params") {
        let params = params.as_table().ok_or_else(|| {
            at_key(
                "params",
                ConfigFileError::UnknownKey("params".into()).to_string(),
            )
        })?;
        for (k, v) in params {
            let value = match v {
                toml::Value::Integer(i) => ParamValue::Int(*i),
                toml::Value::Float(x) => ParamValue::Float(*x),
                toml::Value::Boolean(b) => ParamValue::Bool(*b),
                toml::Value::String(s) => ParamValue::Str(s.clone()),
                toml::Value::Array(items) => {
                    let mut words = Vec::new();
                    for i in items {
                        match i.as_str() {
                            Some(w) => words.push(w.to_string()),
                            None => {
                                return Err(at_key(
                                    k,
                                    format!("[params] {k}: a list holds names (strings)"),
                                ))
                            }
                        }
                    }
                    ParamValue::List(words)
                }
                _ => return Err(at_key(k, ConfigFileError::BadValue(k.clone()).to_string())),
            };
            overrides.push((k.clone(), value));
        }
    }
    let cfg = DetectorConfig::resolve(Some(family_name), profile.as_deref(), &overrides).map_err(
        |e| {
            // The parameter an error names is the line to point at.
            let key = overrides
                .iter()
                .map(|(k, _)| k.as_str())
                .find(|k| e.to_string().contains(&format!("`{k}`")));
            match key {
                Some(k) => at_key(k, e.to_string()),
                None => Error::File {
                    path: name.to_string(),
                    message: e.to_string(),
                },
            }
        },
    )?;
    // The checks build: a value out of a check's range fails here, with the file named.
    cfg.checks().map_err(|e| Error::File {
        path: name.to_string(),
        message: e.to_string(),
    })?;
    Ok(cfg)
}

/// The configuration as a [`crate::detect::Selection`] (its profile and
/// every parameter as `FAMILY.KEY=VALUE`), for commands that select by
/// name; checked to resolve to exactly `cfg`.
pub fn selection_of(cfg: &DetectorConfig) -> Result<crate::detect::Selection> {
    let mut sets = Vec::new();
    for (k, v) in &cfg.params.0 {
        let value = match v {
            // `--set` takes a list comma-separated.
            ParamValue::List(items) => items.join(","),
            ParamValue::Float(x) => crate::util::js::number_to_string(*x),
            other => other.to_string(),
        };
        let text = format!("{}.{k}={value}", cfg.family);
        sets.push(crate::detect::Setting::parse(&text).map_err(|e| Error::Config(e.to_string()))?);
    }
    let selection = crate::detect::Selection {
        families: Vec::new(),
        profiles: vec![cfg.profile.clone()],
        sets,
    };
    let back = selection.resolve()?;
    if back.len() != 1 || back[0] != *cfg {
        return Err(Error::Config(format!(
            "the configuration of family `{}` cannot be selected by name (a list item holds a comma?)",
            cfg.family
        )));
    }
    Ok(selection)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every stock profile of every family survives the file unchanged.
    #[test]
    fn every_profile_round_trips() {
        for fam in crate::detect::families() {
            for p in fam.profiles() {
                let cfg = DetectorConfig::resolve(None, Some(p.name), &[]).unwrap();
                let text = to_toml(&cfg, "test");
                let back =
                    parse(&text, "x.toml").unwrap_or_else(|e| panic!("{}: {e}\n{text}", p.name));
                assert_eq!(back, cfg, "{}", p.name);
                selection_of(&cfg).unwrap_or_else(|e| panic!("{}: {e}", p.name));
            }
        }
    }

    #[test]
    fn overrides_and_floats_round_trip() {
        let sets = [
            ("tool_call_threshold".to_string(), ParamValue::Int(3)),
            (
                "content_max_distance_factor".to_string(),
                ParamValue::Float(0.1 + 0.2),
            ),
            ("policy".to_string(), ParamValue::Str("warn:2".into())),
        ];
        let cfg = DetectorConfig::resolve(None, Some("gemini-latest"), &sets).unwrap();
        assert_eq!(parse(&to_toml(&cfg, "a\nb"), "x.toml").unwrap(), cfg);
    }

    #[test]
    fn errors_name_the_file_line_and_key() {
        let e = parse(
            "[detector]\nfamily = \"gemini\"\n[params]\ntool_call_threshold = \"x\"\n",
            "c.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("c.toml:4:") && e.contains("tool_call_threshold"),
            "{e}"
        );
        let e = parse(
            "[detector]\nfamily = \"gemini\"\n[params]\nbogus = 1\n",
            "c.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("c.toml:4:") && e.contains("unknown parameter `bogus`"),
            "{e}"
        );
        let e = parse("[detector]\nfamily = \"nope\"\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("c.toml:2:") && e.contains("unknown detector family"),
            "{e}"
        );
        let e = parse("[params]\nx = 1\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no [detector] table"), "{e}");
        let e = parse("[detector\n", "c.toml").unwrap_err().to_string();
        assert!(e.starts_with("c.toml:1:"), "{e}");
        let e = parse("[detector]\nprofile = \"roo\"\nextra = 1\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("c.toml:3:") && e.contains("detector.extra"),
            "{e}"
        );
    }
}
