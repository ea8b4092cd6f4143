//! The agents' default log folders: where `replay`, `sweep`, `import` (and
//! `label`) look when no PATHS are given (Inspect AI's `./logs` and Harbor's
//! `jobs/` relative to the current folder, as those tools write them). Locations per
//! `shared/research/formats.md`; environment overrides the agents honour
//! (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `GEMINI_DIR`...) are honoured too.

use std::path::{Path, PathBuf};

/// One agent's default log folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFolder {
    /// The agent, e.g. `claude-code`.
    pub agent: &'static str,
    /// The folder.
    pub path: PathBuf,
}

/// Every default log folder for a home folder and an environment, found or not,
/// in a fixed order.
pub fn candidates(home: &Path, env: &dyn Fn(&str) -> Option<String>) -> Vec<LogFolder> {
    let under = |var: &str, default: &str, rest: &str| -> PathBuf {
        env(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(default))
            .join(rest)
    };
    let data = env("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".local/share"));
    vec![
        LogFolder {
            agent: "claude-code",
            path: under("CLAUDE_CONFIG_DIR", ".claude", "projects"),
        },
        LogFolder {
            agent: "codex",
            path: under("CODEX_HOME", ".codex", "sessions"),
        },
        LogFolder {
            agent: "gemini-cli",
            path: home.join(".gemini/tmp"),
        },
        // Codex moves rollouts older than seven days here, zstd-compressed.
        LogFolder {
            agent: "codex",
            path: under("CODEX_HOME", ".codex", "archived_sessions"),
        },
        // Inspect AI writes `./logs` of the folder it runs in, or `$INSPECT_LOG_DIR`.
        LogFolder {
            agent: "inspect-ai",
            path: env("INSPECT_LOG_DIR")
                .filter(|v| !v.is_empty())
                .map_or_else(|| PathBuf::from("logs"), PathBuf::from),
        },
        // Harbor writes `jobs/<job>/<trial>/agent/trajectory.json` where it runs.
        LogFolder {
            agent: "atif",
            path: PathBuf::from("jobs"),
        },
        LogFolder {
            agent: "openhands",
            path: home.join(".openhands/sessions"),
        },
        LogFolder {
            agent: "opencode",
            path: data.join("opencode/storage"),
        },
        LogFolder {
            agent: "goose",
            path: data.join("goose/sessions"),
        },
    ]
}

/// The default log folders that exist on this machine (`$HOME` based).
pub fn found() -> Vec<LogFolder> {
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
        return Vec::new();
    };
    candidates(&home, &|k| std::env::var(k).ok())
        .into_iter()
        .filter(|f| f.path.is_dir())
        .collect()
}

/// PATHS for a command given none: the default log folders found, with a line
/// on `err` saying which; an error naming the places looked when none exists.
pub fn default_paths(err: &mut dyn std::io::Write) -> crate::error::Result<Vec<PathBuf>> {
    let found = found();
    if found.is_empty() {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default();
        let looked: Vec<String> = candidates(&home, &|k| std::env::var(k).ok())
            .iter()
            .map(|f| f.path.display().to_string())
            .collect();
        return Err(crate::error::Error::Usage(format!(
            "no PATHS given and no agent log folder found (looked in {})",
            looked.join(", ")
        )));
    }
    let names: Vec<String> = found
        .iter()
        .map(|f| format!("{} ({})", f.path.display(), f.agent))
        .collect();
    writeln!(err, "no PATHS given: reading {}", names.join(", ")).ok();
    Ok(found.into_iter().map(|f| f.path).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_follow_home_and_the_agents_variables() {
        let home = Path::new("/h");
        let none = |_: &str| None;
        let c = candidates(home, &none);
        assert_eq!(c[0].path, Path::new("/h/.claude/projects"));
        assert_eq!(c[1].path, Path::new("/h/.codex/sessions"));
        assert_eq!(c[2].path, Path::new("/h/.gemini/tmp"));
        let env = |k: &str| (k == "CODEX_HOME").then(|| "/c".to_string());
        assert_eq!(candidates(home, &env)[1].path, Path::new("/c/sessions"));
    }

    /// Codex's archive, Inspect AI's `./logs` and Harbor's `jobs/` (issue #26).
    #[test]
    fn the_places_of_2026() {
        let home = Path::new("/h");
        let at = |c: &[LogFolder], agent: &str| -> Vec<PathBuf> {
            c.iter()
                .filter(|f| f.agent == agent)
                .map(|f| f.path.clone())
                .collect()
        };
        let c = candidates(home, &|_| None);
        assert_eq!(
            at(&c, "codex"),
            vec![
                PathBuf::from("/h/.codex/sessions"),
                PathBuf::from("/h/.codex/archived_sessions")
            ]
        );
        assert_eq!(at(&c, "inspect-ai"), vec![PathBuf::from("logs")]);
        assert_eq!(at(&c, "atif"), vec![PathBuf::from("jobs")]);
        let env = |k: &str| match k {
            "CODEX_HOME" => Some("/c".to_string()),
            "INSPECT_LOG_DIR" => Some("/runs/inspect".to_string()),
            _ => None,
        };
        let c = candidates(home, &env);
        assert_eq!(at(&c, "codex")[1], Path::new("/c/archived_sessions"));
        assert_eq!(at(&c, "inspect-ai"), vec![PathBuf::from("/runs/inspect")]);
    }
}
