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
        LogFolder {
            agent: "openhands-v1",
            path: home.join(".openhands/conversations"),
        },
        LogFolder {
            agent: "opencode-db",
            path: data.join("opencode/opencode.db"),
        },
        LogFolder {
            agent: "goose-db",
            path: data.join("goose/sessions/sessions.db"),
        },
    ]
}

/// The candidates that exist (a folder, or a database file), less those
/// inside a folder found before them (a walk of that folder reads them).
fn existing(candidates: Vec<LogFolder>) -> Vec<LogFolder> {
    let mut out: Vec<LogFolder> = Vec::new();
    for f in candidates {
        let covered = out
            .iter()
            .any(|o| o.path.is_dir() && f.path.starts_with(&o.path));
        if (f.path.is_dir() || f.path.is_file()) && !covered {
            out.push(f);
        }
    }
    out
}

/// The default log folders that exist on this machine (`$HOME` based).
pub fn found() -> Vec<LogFolder> {
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
        return Vec::new();
    };
    existing(candidates(&home, &|k| std::env::var(k).ok()))
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
        let at = |agent: &str| c.iter().find(|f| f.agent == agent).unwrap().path.clone();
        assert_eq!(at("openhands-v1"), Path::new("/h/.openhands/conversations"));
        assert_eq!(
            at("opencode-db"),
            Path::new("/h/.local/share/opencode/opencode.db")
        );
        assert_eq!(
            at("goose-db"),
            Path::new("/h/.local/share/goose/sessions/sessions.db")
        );
    }

    /// The 2026 stores are found: a conversations folder and OpenCode's
    /// database file; Goose's database is read by the walk of its folder,
    /// not a second time.
    #[test]
    fn databases_and_conversation_folders_are_found_once() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path();
        std::fs::create_dir_all(home.join(".openhands/conversations")).unwrap();
        std::fs::create_dir_all(home.join(".local/share/opencode")).unwrap();
        std::fs::write(home.join(".local/share/opencode/opencode.db"), b"").unwrap();
        std::fs::create_dir_all(home.join(".local/share/goose/sessions")).unwrap();
        std::fs::write(home.join(".local/share/goose/sessions/sessions.db"), b"").unwrap();
        let found: Vec<&str> = existing(candidates(home, &|_| None))
            .iter()
            .map(|f| f.agent)
            .collect();
        assert_eq!(found, vec!["goose", "openhands-v1", "opencode-db"]);
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
