//! `--for AGENT`: the configuration in an agent's own terms.
//!
//! Each target names the profile that reproduces the agent at the version
//! the port pins, and its knobs: a parameter it can set (a key of a settings
//! file, or a hard-coded constant's line in a source file). A configuration
//! is exported as the changes from that profile; any other parameter that
//! differs from it, or a configuration of another family, is an
//! [`ExportError`] that names the parameter and why.
//!
//! Diffs: no text of the originals is kept beyond the one line each constant
//! sits on (its line number, and its text at the pinned commit, read from the
//! pinned file with `git show COMMIT:PATH`). The diff is written with no
//! context lines (`diff -U0`), so it needs nothing else of the file: apply it
//! with `git apply --unidiff-zero` or `patch -p1` at the pinned commit. Each
//! line's text is checked when the diff is made (the old line must be the
//! template filled with the pinned value), and a test applies the diff to
//! the pinned file when a mirror of the repository is at hand.

use crate::detect::{DetectorConfig, ParamValue};
use crate::error::{Error, Result};

/// Why a configuration cannot be exported for an agent.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExportError {
    /// The configuration is of another family.
    #[error("--for {agent}: the configuration is of family `{family}`, and {agent} runs `{own}` (export it --for looptune and run it with `looptune guard`)")]
    OtherFamily {
        /// Target.
        agent: &'static str,
        /// The configuration's family.
        family: String,
        /// The agent's own family.
        own: &'static str,
    },
    /// A parameter the agent has no knob for differs from its pinned value.
    #[error("--for {agent}: parameter `{param}` = {value} cannot be expressed: {agent} has no setting or constant for it (it runs {pinned}, as profile `{profile}` does)")]
    NoKnob {
        /// Target.
        agent: &'static str,
        /// Parameter.
        param: String,
        /// Wanted value.
        value: String,
        /// The value the agent runs.
        pinned: String,
        /// The profile reproducing the agent.
        profile: &'static str,
    },
    /// A value the knob cannot take (a setting of another type).
    #[error("--for {agent}: parameter `{param}` = {value} cannot be expressed: {why}")]
    BadValue {
        /// Target.
        agent: &'static str,
        /// Parameter.
        param: String,
        /// Wanted value.
        value: String,
        /// Why.
        why: &'static str,
    },
}

impl From<ExportError> for Error {
    fn from(e: ExportError) -> Self {
        Error::Config(e.to_string())
    }
}

/// Where a knob lives.
#[derive(Debug, Clone, Copy)]
pub enum Place {
    /// A line of the pinned source file: `template` with `{}` where the
    /// value goes (several lines when the constant is written twice).
    Lines(&'static [(u32, &'static str)]),
    /// A key path of the settings file (JSON objects, outermost first).
    Setting(&'static [&'static str]),
}

/// One parameter an agent can set.
#[derive(Debug, Clone, Copy)]
pub struct Knob {
    /// looptune's parameter.
    pub param: &'static str,
    /// The agent's name for it.
    pub name: &'static str,
    /// Where it lives.
    pub place: Place,
}

/// What an agent reads its knobs from.
#[derive(Debug, Clone, Copy)]
pub enum Form {
    /// A settings file.
    Settings {
        /// Where it lives, and which versions read it.
        file: &'static str,
        /// YAML (else JSON).
        yaml: bool,
    },
    /// Hard-coded constants of one source file.
    Source {
        /// Repository (`owner/name`).
        repo: &'static str,
        /// Full commit the port pins.
        commit: &'static str,
        /// File in the repository.
        path: &'static str,
    },
}

/// An agent `export --for` knows.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// `--for` value.
    pub name: &'static str,
    /// Its family.
    pub family: &'static str,
    /// The profile that is the agent as pinned.
    pub profile: &'static str,
    /// Settings or source.
    pub form: Form,
    /// Its knobs.
    pub knobs: &'static [Knob],
}

/// Every agent `export --for` knows.
pub const TARGETS: &[Target] = &[
    Target {
        name: "gemini-cli",
        family: "gemini",
        profile: "gemini-latest",
        form: Form::Source {
            repo: "google-gemini/gemini-cli",
            commit: "5411f113cafae26161b4969b0237b8e1e024e2c2",
            path: "packages/core/src/services/loopDetectionService.ts",
        },
        knobs: &[
            Knob {
                param: "tool_call_threshold",
                name: "TOOL_CALL_LOOP_THRESHOLD",
                place: Place::Lines(&[(29, "const TOOL_CALL_LOOP_THRESHOLD = {};")]),
            },
            Knob {
                param: "content_loop_threshold",
                name: "CONTENT_LOOP_THRESHOLD",
                place: Place::Lines(&[(30, "const CONTENT_LOOP_THRESHOLD = {};")]),
            },
            Knob {
                param: "content_chunk_size",
                name: "CONTENT_CHUNK_SIZE",
                place: Place::Lines(&[(31, "const CONTENT_CHUNK_SIZE = {};")]),
            },
            Knob {
                param: "content_max_history",
                name: "MAX_HISTORY_LENGTH",
                place: Place::Lines(&[(32, "const MAX_HISTORY_LENGTH = {};")]),
            },
            Knob {
                param: "llm_check_after_turns",
                name: "LLM_CHECK_AFTER_TURNS",
                place: Place::Lines(&[(42, "const LLM_CHECK_AFTER_TURNS = {};")]),
            },
            Knob {
                param: "llm_check_interval",
                name: "DEFAULT_LLM_CHECK_INTERVAL",
                place: Place::Lines(&[(48, "const DEFAULT_LLM_CHECK_INTERVAL = {};")]),
            },
            Knob {
                param: "llm_check_min_interval",
                name: "MIN_LLM_CHECK_INTERVAL",
                place: Place::Lines(&[(54, "const MIN_LLM_CHECK_INTERVAL = {};")]),
            },
            Knob {
                param: "llm_check_max_interval",
                name: "MAX_LLM_CHECK_INTERVAL",
                place: Place::Lines(&[(60, "const MAX_LLM_CHECK_INTERVAL = {};")]),
            },
            Knob {
                param: "llm_confidence_threshold",
                name: "LLM_CONFIDENCE_THRESHOLD",
                place: Place::Lines(&[(65, "const LLM_CONFIDENCE_THRESHOLD = {};")]),
            },
            // The history keeps cycles up to the longest length times the
            // threshold, and the loop tries each length: both literals.
            Knob {
                param: "tool_cycle_max_len",
                name: "checkToolCallLoop's cycle lengths",
                place: Place::Lines(&[
                    (317, "    const maxRequiredLength = {} * TOOL_CALL_LOOP_THRESHOLD;"),
                    (326, "    for (let k = 1; k <= {}; k++) {"),
                ]),
            },
            Knob {
                param: "content_max_distance_factor",
                name: "isLoopDetectedForChunk's distance factor",
                place: Place::Lines(&[(502, "    const maxAllowedDistance = CONTENT_CHUNK_SIZE * {};")]),
            },
        ],
    },
    Target {
        name: "opencode",
        family: "opencode",
        profile: "opencode",
        form: Form::Source {
            repo: "anomalyco/opencode",
            commit: "36160ef28f43fc46dd8f4217f53280e473478b57",
            path: "packages/opencode/src/session/processor.ts",
        },
        knobs: &[Knob {
            param: "threshold",
            name: "DOOM_LOOP_THRESHOLD",
            place: Place::Lines(&[(32, "const DOOM_LOOP_THRESHOLD = {}")]),
        }],
    },
    // OpenClaw reads only `tools.loopDetection.enabled` from its config at
    // this commit (resolveLoopDetectionConfig fills every other field from the
    // constants), so the thresholds are source constants, and so is the
    // default that turns the detector on.
    Target {
        name: "openclaw",
        family: "openclaw",
        profile: "openclaw-off-2026-05",
        form: Form::Source {
            repo: "openclaw/openclaw",
            commit: "00655306d8f3d8123be9d4bf956c3f8ad32bd4e0",
            path: "src/agents/tool-loop-detection.ts",
        },
        knobs: &[
            Knob {
                param: "history_size",
                name: "TOOL_CALL_HISTORY_SIZE",
                place: Place::Lines(&[(39, "const TOOL_CALL_HISTORY_SIZE = {};")]),
            },
            Knob {
                param: "warning_threshold",
                name: "WARNING_THRESHOLD",
                place: Place::Lines(&[(40, "const WARNING_THRESHOLD = {};")]),
            },
            Knob {
                param: "unknown_tool_threshold",
                name: "UNKNOWN_TOOL_THRESHOLD",
                place: Place::Lines(&[(41, "export const UNKNOWN_TOOL_THRESHOLD = {};")]),
            },
            Knob {
                param: "critical_threshold",
                name: "CRITICAL_THRESHOLD",
                place: Place::Lines(&[(42, "const CRITICAL_THRESHOLD = {};")]),
            },
            Knob {
                param: "global_circuit_breaker_threshold",
                name: "GLOBAL_CIRCUIT_BREAKER_THRESHOLD",
                place: Place::Lines(&[(43, "const GLOBAL_CIRCUIT_BREAKER_THRESHOLD = {};")]),
            },
            Knob {
                param: "loop_detection",
                name: "DEFAULT_LOOP_DETECTION_CONFIG.enabled (or tools.loopDetection.enabled in the config)",
                place: Place::Lines(&[(45, "  enabled: {},")]),
            },
            Knob {
                param: "generic_repeat",
                name: "DEFAULT_LOOP_DETECTION_CONFIG.detectors.genericRepeat",
                place: Place::Lines(&[(52, "    genericRepeat: {},")]),
            },
            Knob {
                param: "known_poll_no_progress",
                name: "DEFAULT_LOOP_DETECTION_CONFIG.detectors.knownPollNoProgress",
                place: Place::Lines(&[(53, "    knownPollNoProgress: {},")]),
            },
            Knob {
                param: "ping_pong",
                name: "DEFAULT_LOOP_DETECTION_CONFIG.detectors.pingPong",
                place: Place::Lines(&[(54, "    pingPong: {},")]),
            },
        ],
    },
    Target {
        name: "roo",
        family: "roo",
        profile: "roo",
        form: Form::Settings {
            file: "a Roo Code settings file to import (Settings > About > Import, or the VS Code setting `roo-cline.autoImportSettingsPath`); the limit is per provider profile (`default` here: rename it to yours). Read by Roo Code since PR #5752 (the port pins @cb83656718)",
            yaml: false,
        },
        knobs: &[Knob {
            param: "limit",
            name: "consecutiveMistakeLimit",
            place: Place::Setting(&[
                "providerProfiles",
                "apiConfigs",
                "default",
                "consecutiveMistakeLimit",
            ]),
        }],
    },
    // Hermes reads its thresholds from the `tool_loop_guardrails` section of
    // its config (`ToolCallGuardrailConfig.from_mapping`; nested
    // `warn_after` / `hard_stop_after` keys win over the flat legacy ones).
    // The stall guard's constants and the tool lists are not read from it.
    Target {
        name: "hermes",
        family: "hermes",
        profile: "hermes-interactive",
        form: Form::Settings {
            file: "~/.hermes/config.yaml (section `tool_loop_guardrails`); read by Hermes agent's ToolCallGuardrailConfig.from_mapping (the port pins agent/tool_guardrails.py @06c25ac90b); gateway and cron surfaces turn hard stops on by themselves (non_interactive_hard_stop_enabled)",
            yaml: true,
        },
        knobs: &[
            Knob {
                param: "warnings_enabled",
                name: "tool_loop_guardrails.warnings_enabled",
                place: Place::Setting(&["tool_loop_guardrails", "warnings_enabled"]),
            },
            Knob {
                param: "hard_stop_enabled",
                name: "tool_loop_guardrails.hard_stop_enabled",
                place: Place::Setting(&["tool_loop_guardrails", "hard_stop_enabled"]),
            },
            Knob {
                param: "exact_failure_warn_after",
                name: "tool_loop_guardrails.warn_after.exact_failure",
                place: Place::Setting(&["tool_loop_guardrails", "warn_after", "exact_failure"]),
            },
            Knob {
                param: "same_tool_failure_warn_after",
                name: "tool_loop_guardrails.warn_after.same_tool_failure",
                place: Place::Setting(&["tool_loop_guardrails", "warn_after", "same_tool_failure"]),
            },
            Knob {
                param: "no_progress_warn_after",
                name: "tool_loop_guardrails.warn_after.idempotent_no_progress",
                place: Place::Setting(&[
                    "tool_loop_guardrails",
                    "warn_after",
                    "idempotent_no_progress",
                ]),
            },
            Knob {
                param: "exact_failure_block_after",
                name: "tool_loop_guardrails.hard_stop_after.exact_failure",
                place: Place::Setting(&["tool_loop_guardrails", "hard_stop_after", "exact_failure"]),
            },
            Knob {
                param: "same_tool_failure_halt_after",
                name: "tool_loop_guardrails.hard_stop_after.same_tool_failure",
                place: Place::Setting(&[
                    "tool_loop_guardrails",
                    "hard_stop_after",
                    "same_tool_failure",
                ]),
            },
            Knob {
                param: "no_progress_block_after",
                name: "tool_loop_guardrails.hard_stop_after.idempotent_no_progress",
                place: Place::Setting(&[
                    "tool_loop_guardrails",
                    "hard_stop_after",
                    "idempotent_no_progress",
                ]),
            },
            Knob {
                param: "max_web_searches",
                name: "tool_loop_guardrails.loop_caps.max_web_searches",
                place: Place::Setting(&["tool_loop_guardrails", "loop_caps", "max_web_searches"]),
            },
            Knob {
                param: "max_subagents",
                name: "tool_loop_guardrails.loop_caps.max_subagents",
                place: Place::Setting(&["tool_loop_guardrails", "loop_caps", "max_subagents"]),
            },
        ],
    },
    Target {
        name: "qwen-code",
        family: "qwen",
        profile: "qwen",
        form: Form::Settings {
            file: "~/.qwen/settings.json (user) or .qwen/settings.json (project); `model.skipLoopDetection`, default true since #2092 (2026-03-04); the port pins @00aa71b4",
            yaml: false,
        },
        knobs: &[Knob {
            param: "skip_loop_detection",
            name: "model.skipLoopDetection",
            place: Place::Setting(&["model", "skipLoopDetection"]),
        }],
    },
];

/// The target named `name`.
pub fn target(name: &str) -> Result<&'static Target> {
    TARGETS.iter().find(|t| t.name == name).ok_or_else(|| {
        let names = super::target_names();
        Error::Usage(format!(
            "--for `{name}`: no such agent{} (known: {})",
            crate::util::suggest::hint(name, names.iter().copied()),
            names.join(", ")
        ))
    })
}

/// A value as the agent's source writes a number or a boolean.
fn literal(v: &ParamValue) -> String {
    match v {
        ParamValue::Float(x) => crate::util::js::number_to_string(*x),
        other => other.to_string(),
    }
}

impl Target {
    /// The knobs that change, with their values: every other parameter
    /// must be the pinned one.
    pub fn changes(&self, cfg: &DetectorConfig) -> Result<Vec<(&'static Knob, ParamValue)>> {
        if cfg.family != self.family {
            return Err(ExportError::OtherFamily {
                agent: self.name,
                family: cfg.family.to_string(),
                own: self.family,
            }
            .into());
        }
        let pinned = DetectorConfig::resolve(Some(self.family), Some(self.profile), &[])?;
        let mut out = Vec::new();
        for (k, v) in &cfg.params.0 {
            let was = pinned.params.0.get(k);
            if was == Some(v) {
                continue;
            }
            match self.knobs.iter().find(|n| n.param == k) {
                Some(knob) => out.push((knob, v.clone())),
                None => {
                    return Err(ExportError::NoKnob {
                        agent: self.name,
                        param: k.clone(),
                        value: v.to_string(),
                        pinned: was.map_or("nothing".into(), |w| w.to_string()),
                        profile: self.profile,
                    }
                    .into())
                }
            }
        }
        Ok(out)
    }

    /// The settings fragment or the diff.
    pub fn render(&self, cfg: &DetectorConfig, origin: &str) -> Result<String> {
        let changes = self.changes(cfg)?;
        match self.form {
            Form::Settings { yaml, .. } => self.settings(&changes, yaml),
            Form::Source { .. } => Ok(self.diff(&changes, origin)),
        }
    }

    fn settings(&self, changes: &[(&'static Knob, ParamValue)], yaml: bool) -> Result<String> {
        let mut doc = serde_json::Map::new();
        for (knob, v) in changes {
            let Place::Setting(path) = knob.place else {
                unreachable!("a settings target has setting knobs")
            };
            let value = match v {
                ParamValue::Int(i) => serde_json::Value::from(*i),
                ParamValue::Bool(b) => serde_json::Value::from(*b),
                ParamValue::Float(x) => serde_json::Value::from(*x),
                _ => {
                    return Err(ExportError::BadValue {
                        agent: self.name,
                        param: knob.param.to_string(),
                        value: v.to_string(),
                        why: "the setting takes a number or a boolean",
                    }
                    .into())
                }
            };
            let mut at = &mut doc;
            for key in &path[..path.len() - 1] {
                at = at
                    .entry(key.to_string())
                    .or_insert_with(|| serde_json::Value::Object(Default::default()))
                    .as_object_mut()
                    .expect("knob paths only nest objects");
            }
            at.insert(path[path.len() - 1].to_string(), value);
        }
        let doc = serde_json::Value::Object(doc);
        if yaml {
            return Ok(serde_norway::to_string(&doc).expect("a JSON value serialises as YAML"));
        }
        let mut text = serde_json::to_string_pretty(&doc).expect("a JSON value serialises");
        text.push('\n');
        Ok(text)
    }

    fn diff(&self, changes: &[(&'static Knob, ParamValue)], origin: &str) -> String {
        let Form::Source { repo, commit, path } = self.form else {
            unreachable!("a source target")
        };
        let pinned = DetectorConfig::resolve(Some(self.family), Some(self.profile), &[])
            .expect("a target's profile resolves");
        let mut lines: Vec<(u32, String, String)> = Vec::new();
        for (knob, v) in changes {
            let Place::Lines(at) = knob.place else {
                unreachable!("a source target has line knobs")
            };
            let old = literal(&pinned.params.0[knob.param]);
            for (n, template) in at {
                lines.push((
                    *n,
                    template.replace("{}", &old),
                    template.replace("{}", &literal(v)),
                ));
            }
        }
        lines.sort();
        let mut s = format!(
            "looptune export --for {}: {origin}\nAgainst {repo} @{commit}, {path}.\nApply at that commit with `git apply --unidiff-zero` or `patch -p1` (no context lines).\n",
            self.name
        );
        if lines.is_empty() {
            s.push_str("No constant differs from the pinned source: nothing to change.\n");
            return s;
        }
        s.push_str(&format!("--- a/{path}\n+++ b/{path}\n"));
        for (n, old, new) in lines {
            s.push_str(&format!("@@ -{n} +{n} @@\n-{old}\n+{new}\n"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::ParamValue as V;

    fn cfg(profile: &str, sets: &[(&str, V)]) -> DetectorConfig {
        let sets: Vec<(String, V)> = sets
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        DetectorConfig::resolve(None, Some(profile), &sets).unwrap()
    }

    #[test]
    fn every_knob_is_a_parameter_of_its_family_and_every_profile_resolves() {
        for t in TARGETS {
            let fam = crate::detect::family(t.family).unwrap();
            assert_eq!(
                crate::detect::family_of_profile(t.profile).unwrap().name(),
                t.family
            );
            for k in t.knobs {
                assert!(
                    fam.params().iter().any(|p| p.name == k.param),
                    "{}",
                    k.param
                );
            }
            // The pinned profile itself exports to no change.
            assert!(
                t.changes(&cfg(t.profile, &[])).unwrap().is_empty(),
                "{}",
                t.name
            );
        }
    }

    #[test]
    fn a_gemini_diff_changes_only_the_constants() {
        let c = cfg(
            "gemini-latest",
            &[
                ("tool_call_threshold", V::Int(4)),
                ("content_max_distance_factor", V::Float(1.5)),
                ("tool_cycle_max_len", V::Int(3)),
            ],
        );
        let d = target("gemini-cli").unwrap().render(&c, "test").unwrap();
        let hunks: Vec<&str> = d.lines().skip_while(|l| !l.starts_with("---")).collect();
        assert_eq!(
            hunks,
            [
                "--- a/packages/core/src/services/loopDetectionService.ts",
                "+++ b/packages/core/src/services/loopDetectionService.ts",
                "@@ -29 +29 @@",
                "-const TOOL_CALL_LOOP_THRESHOLD = 5;",
                "+const TOOL_CALL_LOOP_THRESHOLD = 4;",
                "@@ -317 +317 @@",
                "-    const maxRequiredLength = 5 * TOOL_CALL_LOOP_THRESHOLD;",
                "+    const maxRequiredLength = 3 * TOOL_CALL_LOOP_THRESHOLD;",
                "@@ -326 +326 @@",
                "-    for (let k = 1; k <= 5; k++) {",
                "+    for (let k = 1; k <= 3; k++) {",
                "@@ -502 +502 @@",
                "-    const maxAllowedDistance = CONTENT_CHUNK_SIZE * 5;",
                "+    const maxAllowedDistance = CONTENT_CHUNK_SIZE * 1.5;",
            ]
        );
    }

    /// OpenClaw's detector is off as shipped: the diff turns its default on
    /// and changes the thresholds; what lives elsewhere is refused.
    #[test]
    fn an_openclaw_diff_turns_the_detector_on_and_sets_its_constants() {
        let c = cfg(
            "openclaw-2026-05",
            &[
                ("warning_threshold", V::Int(8)),
                ("ping_pong", V::Bool(false)),
            ],
        );
        let d = target("openclaw").unwrap().render(&c, "test").unwrap();
        assert!(d.contains("Against openclaw/openclaw @00655306d8f3d8123be9d4bf956c3f8ad32bd4e0, src/agents/tool-loop-detection.ts."), "{d}");
        let hunks: Vec<&str> = d.lines().skip_while(|l| !l.starts_with("---")).collect();
        assert_eq!(
            hunks,
            [
                "--- a/src/agents/tool-loop-detection.ts",
                "+++ b/src/agents/tool-loop-detection.ts",
                "@@ -40 +40 @@",
                "-const WARNING_THRESHOLD = 10;",
                "+const WARNING_THRESHOLD = 8;",
                "@@ -45 +45 @@",
                "-  enabled: false,",
                "+  enabled: true,",
                "@@ -54 +54 @@",
                "-    pingPong: true,",
                "+    pingPong: false,",
            ]
        );
        // The post-compaction guard's window is another file's; the
        // warning bucket is the hook's.
        for (param, v) in [
            ("post_compaction_window", V::Int(5)),
            ("warning_bucket", V::Int(5)),
        ] {
            let e = target("openclaw")
                .unwrap()
                .render(&cfg("openclaw-2026-05", &[(param, v)]), "t")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("`{param}` = 5 cannot be expressed")),
                "{e}"
            );
        }
        // As shipped: nothing to change.
        let d = target("openclaw")
            .unwrap()
            .render(&cfg("openclaw-off-2026-05", &[]), "t")
            .unwrap();
        assert!(d.contains("nothing to change"), "{d}");
    }

    /// Hermes: YAML under `tool_loop_guardrails`, thresholds in its nested
    /// sections; the stall guard's constants are refused.
    #[test]
    fn a_hermes_fragment_is_yaml_in_its_own_keys() {
        let c = cfg(
            "hermes",
            &[
                ("same_tool_failure_halt_after", V::Int(12)),
                ("no_progress_warn_after", V::Int(3)),
                ("max_web_searches", V::Int(0)),
            ],
        );
        let y = target("hermes").unwrap().render(&c, "t").unwrap();
        let v: serde_json::Value = serde_norway::from_str(&y).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"tool_loop_guardrails": {
                "hard_stop_enabled": true,
                "hard_stop_after": {"same_tool_failure": 12},
                "warn_after": {"idempotent_no_progress": 3},
                "loop_caps": {"max_web_searches": 0},
            }}),
            "{y}"
        );
        assert!(y.starts_with("tool_loop_guardrails:\n"), "{y}");
        let e = target("hermes")
            .unwrap()
            .render(
                &cfg("hermes", &[("identical_call_threshold", V::Int(4))]),
                "t",
            )
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`identical_call_threshold` = 4 cannot be expressed"),
            "{e}"
        );
    }

    #[test]
    fn what_an_agent_cannot_express_is_an_error_naming_the_parameter() {
        let e = target("gemini-cli")
            .unwrap()
            .render(
                &cfg("gemini-latest", &[("tool_name_trim", V::Bool(false))]),
                "t",
            )
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`tool_name_trim` = false cannot be expressed"),
            "{e}"
        );
        let e = target("opencode")
            .unwrap()
            .render(&cfg("gemini-latest", &[]), "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains("family `gemini`"), "{e}");
        let e = target("roo")
            .unwrap()
            .render(&cfg("roo", &[("policy", V::Str("stop".into()))]), "t")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`policy` = stop") && e.contains("runs ask"),
            "{e}"
        );
        let e = target("opencode")
            .unwrap()
            .render(&cfg("kilo", &[]), "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`scope` = session"), "{e}");
        assert!(target("claude").is_err());
    }

    #[test]
    fn settings_fragments_use_the_agents_keys() {
        let roo = target("roo")
            .unwrap()
            .render(&cfg("roo", &[("limit", V::Int(5))]), "t")
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&roo).unwrap();
        assert_eq!(
            v["providerProfiles"]["apiConfigs"]["default"]["consecutiveMistakeLimit"],
            5
        );
        let qwen = target("qwen-code")
            .unwrap()
            .render(&cfg("qwen-all", &[]), "t")
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&qwen).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"model": {"skipLoopDetection": false}})
        );
    }
}

/// The diffs applied to the pinned files themselves, when a mirror of the
/// agent's repository is at hand (`LOOPTUNE_MIRRORS`, default
/// `/work/.mirror`, as `owner+name/repo`): each removed line is the pinned
/// file's line at that number, so the diff applies at the pinned commit.
#[cfg(test)]
mod pinned {
    use super::*;

    fn pinned_text(repo: &str, commit: &str, path: &str) -> Option<String> {
        let root = std::env::var("LOOPTUNE_MIRRORS").unwrap_or_else(|_| "/work/.mirror".into());
        let git = std::path::Path::new(&root)
            .join(repo.replace('/', "+"))
            .join("repo");
        let out = std::process::Command::new("git")
            .arg("--git-dir")
            .arg(&git)
            .args(["show", &format!("{commit}:{path}")])
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Apply a diff with no context lines as `patch` would, failing on any
    /// hunk whose removed line is not the file's.
    fn apply(text: &str, diff: &str, agent: &str) -> String {
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        let mut it = diff.lines().skip_while(|l| !l.starts_with("@@"));
        while let Some(h) = it.next() {
            let n: usize = h
                .trim_start_matches("@@ -")
                .split(' ')
                .next()
                .and_then(|x| x.parse().ok())
                .unwrap_or_else(|| panic!("{agent}: bad hunk {h}"));
            let old = it.next().expect("a - line");
            let new = it.next().expect("a + line");
            let was = &lines[n - 1];
            assert_eq!(
                old.strip_prefix('-'),
                Some(was.as_str()),
                "{agent}: line {n} is not what the diff removes"
            );
            lines[n - 1] = new[1..].to_string();
        }
        lines.join("\n")
    }

    #[test]
    fn diffs_apply_to_the_pinned_sources() {
        let mut checked = 0;
        for t in TARGETS {
            let Form::Source { repo, commit, path } = t.form else {
                continue;
            };
            let Some(text) = pinned_text(repo, commit, path) else {
                eprintln!("SKIPPED: no mirror of {repo} at hand");
                continue;
            };
            // Every knob moved off its pinned value at once.
            let pinned = DetectorConfig::resolve(Some(t.family), Some(t.profile), &[]).unwrap();
            let sets: Vec<(String, ParamValue)> = t
                .knobs
                .iter()
                .map(|k| {
                    let v = match &pinned.params.0[k.param] {
                        ParamValue::Int(i) => ParamValue::Int(i + 1),
                        ParamValue::Float(x) => ParamValue::Float(x * 0.5),
                        other => other.clone(),
                    };
                    (k.param.to_string(), v)
                })
                .collect();
            let cfg = DetectorConfig::resolve(Some(t.family), Some(t.profile), &sets).unwrap();
            let diff = t.render(&cfg, "test").unwrap();
            let patched = apply(&text, &diff, t.name);
            let changed = text
                .lines()
                .zip(patched.lines())
                .filter(|(a, b)| a != b)
                .count();
            let want: usize = t
                .knobs
                .iter()
                .map(|k| match k.place {
                    Place::Lines(l) => l.len(),
                    Place::Setting(_) => 0,
                })
                .sum();
            assert_eq!(changed, want, "{}", t.name);
            checked += 1;
        }
        if checked == 0 {
            eprintln!("SKIPPED: no pinned source at hand");
        }
    }
}
