//! Detector families: faithful ports of the loop detectors agents ship.
//!
//! A [`Family`] declares its parameters and named profiles and builds, for one
//! configuration, a set of independent [`Check`]s. A check reads one session
//! and returns every detection it would make if the agent cleared the
//! detection and went on (Gemini CLI's `clearDetection()`); the first of them
//! is the original's sticky first detection. Checks of one configuration are
//! independent, so their detections merge by event order, and a check whose
//! settings are shared by many configurations of a sweep runs once (see
//! [`Check::key`]). Detectors know nothing of files or reports.
//!
//! A check reads its parameters once, into a plain settings struct (through
//! [`Params`], whose errors name the family and the parameter), and reads
//! nothing else: its sharing key is derived from those settings, so no
//! parameter can be left out of it.

pub(crate) mod gemini;
pub(crate) mod looptune;
pub mod params;
pub(crate) mod peers;
pub mod prepared;

use crate::error::{Error, Result};
pub use params::{
    FromParam, ParamKind, ParamSet, ParamSpec, ParamValue, Params, Policy, PolicyError, Setting,
    SettingError, POLICY, POLICY_SPEC,
};
pub use prepared::Prepared;
mod selection;
pub use selection::Selection;
use std::fmt;

/// One detection, as a detector reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Detection {
    /// Kind: for `gemini` one of `tool_call`, `tool_name`, `content`, `llm`;
    /// other families use their originals' names, `looptune` its rules'.
    pub kind: &'static str,
    /// 1-based index of the triggering record in its session.
    pub event: u32,
    /// Turn of that record.
    pub turn: u32,
    /// Prompt ordinal (0-based) in which it fell; strikes are counted per prompt.
    pub prompt: u32,
    /// Strike: the 1-based count of detections so far in this prompt (set by [`merge`]).
    pub strike: u32,
    /// Human-readable detail (what repeated).
    pub detail: String,
}

/// An independent part of a detector (e.g. Gemini CLI's tool-call check).
pub trait Check: Send + Sync {
    /// Family and check, e.g. `gemini.tool`: distinct for every check type.
    fn name(&self) -> &'static str;
    /// Every setting the check reads, typed; the check reads nothing else
    /// (its struct holds only these), so equal settings give equal results.
    fn settings(&self) -> &dyn fmt::Debug;
    /// The sharing key: [`Check::name`] and the `Debug` form of
    /// [`Check::settings`] (field by field, floats exactly). Configurations
    /// whose checks have equal keys share one run per session. Not to be
    /// overridden: a hand-kept key is what lets a forgotten parameter merge
    /// configurations that differ.
    fn key(&self) -> String {
        format!("{}:{:?}", self.name(), self.settings())
    }
    /// Every detection on this session, in event order. With `limit`, a check
    /// may stop once `limit` detections fell in one prompt if
    /// [`Check::limit_per_prompt`] says so, else once it has `limit` in all.
    fn run(&self, session: &Prepared, limit: Option<usize>) -> Vec<Detection>;
    /// Whether `limit` counts per prompt (strikes are counted per prompt, so a
    /// `warn:N` policy needs at most N+1 detections of one prompt).
    fn limit_per_prompt(&self) -> bool {
        false
    }
    /// For checks that consult an LLM judge: every check the schedule made
    /// due, as `(event, had a recorded verdict)`, when going on after each
    /// detection. `None` for checks without a judge.
    fn judge_due(&self, _session: &Prepared) -> Option<Vec<(u32, bool)>> {
        None
    }
    /// [`Check::run`] and [`Check::judge_due`] together; checks whose judge
    /// schedule comes from the same pass as their detections override it to
    /// pass over the session once.
    fn run_and_due(
        &self,
        session: &Prepared,
        limit: Option<usize>,
    ) -> (Vec<Detection>, Option<Vec<(u32, bool)>>) {
        (self.run(session, limit), self.judge_due(session))
    }
    /// Checks with equal batch keys run together in one pass over a session
    /// ([`Check::run_batch`]), with the same results as running each alone.
    fn batch_key(&self) -> Option<String> {
        None
    }
    /// [`Check::run`] for every check in `batch` (all with this check's batch
    /// key and the same `limit`), in batch order.
    fn run_batch(
        &self,
        batch: &[&dyn Check],
        session: &Prepared,
        limit: Option<usize>,
    ) -> Vec<Vec<Detection>> {
        batch.iter().map(|c| c.run(session, limit)).collect()
    }
    /// For downcasting inside [`Check::run_batch`].
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
    /// The check as a [`Stream`] fed one record at a time, for a check whose
    /// [`Check::run`] drives that same stream over the session (one
    /// implementation of the rule); `None` for a check that can only read a
    /// whole session (a live feed then replays the records so far).
    fn stream(&self) -> Option<Box<dyn Stream>> {
        None
    }
}

/// A check's state between records: fed the records of one session in
/// order, it reports what fires at each, as [`Check::run`] (with no limit)
/// reports it on the whole session. Its memory is bounded by the rule's
/// window, not the session.
pub trait Stream: Send {
    /// Read record `i` (0-based) of `session`, which holds records `0..=i`
    /// numbered as [`crate::event::Session::from_events`] numbers them, and
    /// push the detections that fire there.
    fn feed(&mut self, session: &crate::event::Session, i: usize, out: &mut Vec<Detection>);
    /// The session has ended (after its last record): push what was held
    /// back for later records (a rule that decides at a record with what
    /// follows it in the same turn).
    fn finish(&mut self, _session: &crate::event::Session, _out: &mut Vec<Detection>) {}
    /// The earliest event at which this stream may still push a detection
    /// for the records fed so far (one held back, e.g. the judge's check
    /// awaiting its verdict), `None` when it holds nothing: a live feed
    /// numbers the strikes of other checks' later detections only once this
    /// is decided, as [`merge`] numbers them over the whole session.
    fn held_from(&self) -> Option<u32> {
        None
    }
    /// The earliest record (0-based, of the whole session) this stream may
    /// still read or report at, for the records fed so far: a live feed
    /// forgets the records before the earliest of its streams'. The
    /// default keeps every record.
    fn keeps_from(&self) -> usize {
        0
    }
    /// Whether the stream reads the session's model or mode (which a
    /// replay reads at the session's end, so a change mid-session has a
    /// live feed read the records again).
    fn reads_meta(&self) -> bool {
        false
    }
}

/// A named set of parameter values.
#[derive(Debug, Clone)]
pub struct Profile {
    /// Profile name, e.g. `gemini-latest`.
    pub name: &'static str,
    /// What it reproduces (original, version, dates).
    pub about: &'static str,
    /// Values. The family's first profile lists every parameter; the others list
    /// only what differs from it.
    pub values: Vec<(&'static str, ParamValue)>,
}

/// A detector family.
pub trait Family: Send + Sync {
    /// Family name, e.g. `gemini`.
    fn name(&self) -> &'static str;
    /// One line on the original it ports.
    fn about(&self) -> &'static str;
    /// Every parameter (the shared `policy` included).
    fn params(&self) -> Vec<ParamSpec>;
    /// Named profiles; the first is the family's default.
    fn profiles(&self) -> Vec<Profile>;
    /// Build the checks of one configuration (parameters already validated).
    fn checks(&self, params: &ParamSet) -> Result<Vec<Box<dyn Check>>>;
}

/// Every family looptune knows, in display order.
pub fn families() -> Vec<&'static dyn Family> {
    vec![
        &gemini::Gemini,
        &peers::OpenCode,
        &peers::Blade,
        &peers::OpenHands,
        &peers::Roo,
        &peers::Cline,
        &peers::Goose,
        &peers::Crush,
        &peers::Kimi,
        &peers::Qwen,
        &peers::Hermes,
        &peers::OpenClaw,
        &peers::OpenRouterSdk,
        &peers::DeepEval,
        &peers::MaxTurns,
        &looptune::Looptune,
    ]
}

/// Find a family by name.
pub fn family(name: &str) -> Result<&'static dyn Family> {
    families()
        .into_iter()
        .find(|f| f.name() == name)
        .ok_or_else(|| {
            Error::Config(format!(
                "unknown detector family `{name}`{} (known: {})",
                crate::util::suggest::hint(name, families().iter().map(|f| f.name())),
                families()
                    .iter()
                    .map(|f| f.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

/// Find the family of a profile.
pub fn family_of_profile(profile: &str) -> Result<&'static dyn Family> {
    families()
        .into_iter()
        .find(|f| f.profiles().iter().any(|p| p.name == profile))
        .ok_or_else(|| {
            let all: Vec<String> = families()
                .iter()
                .flat_map(|f| f.profiles().into_iter().map(|p| p.name.to_string()))
                .collect();
            Error::Config(format!(
                "unknown profile `{profile}`{} (known: {})",
                crate::util::suggest::hint(profile, all.iter().map(String::as_str)),
                all.join(", ")
            ))
        })
}

/// One fully resolved detector configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct DetectorConfig {
    /// Family name.
    pub family: &'static str,
    /// Base profile name.
    pub profile: String,
    /// Every parameter's value.
    pub params: ParamSet,
    /// The `policy` parameter, read once.
    policy: Policy,
}

impl DetectorConfig {
    /// Resolve a profile (or a family's default profile) plus overrides.
    ///
    /// `family` and `profile` may both be given; they must agree.
    pub fn resolve(
        family_name: Option<&str>,
        profile: Option<&str>,
        overrides: &[(String, ParamValue)],
    ) -> Result<DetectorConfig> {
        let fam = match (family_name, profile) {
            (_, Some(p)) => {
                let f = family_of_profile(p)?;
                if let Some(fname) = family_name {
                    if fname != f.name() {
                        return Err(Error::Config(format!(
                            "profile `{p}` belongs to family `{}`, not `{fname}`",
                            f.name()
                        )));
                    }
                }
                f
            }
            (Some(f), None) => family(f)?,
            (None, None) => family("gemini")?,
        };
        let profiles = fam.profiles();
        let base = &profiles[0];
        let chosen = match profile {
            Some(p) => profiles.iter().find(|x| x.name == p).expect("found above"),
            None => base,
        };
        let specs = fam.params();
        let mut params = ParamSet::default();
        for (k, v) in base.values.iter().chain(chosen.values.iter()) {
            params.0.insert((*k).to_string(), v.clone());
        }
        for spec in &specs {
            if !params.0.contains_key(spec.name) {
                panic!(
                    "family {} profile {} lacks parameter {}",
                    fam.name(),
                    base.name,
                    spec.name
                );
            }
        }
        for (k, v) in overrides {
            let spec = specs.iter().find(|s| s.name == k).ok_or_else(|| {
                Error::Config(format!(
                    "unknown parameter `{k}` for family `{}`{} (known: {})",
                    fam.name(),
                    crate::util::suggest::hint(k, specs.iter().map(|s| s.name)),
                    specs.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
                ))
            })?;
            params.0.insert(k.clone(), spec.check(v.clone())?);
        }
        let policy = Params::new(fam.name(), &params).get(POLICY)?;
        Ok(DetectorConfig {
            family: fam.name(),
            profile: chosen.name.to_string(),
            params,
            policy,
        })
    }

    /// Parse `KEY=VALUE` overrides against this configuration's family.
    pub fn parse_sets(family_name: &str, sets: &[String]) -> Result<Vec<(String, ParamValue)>> {
        let fam = family(family_name)?;
        let specs = fam.params();
        sets.iter()
            .map(|s| {
                let set = Setting::parse(s).map_err(|e| Error::Usage(e.to_string()))?;
                let (k, v) = (set.key.as_str(), set.value.as_str());
                let spec = specs.iter().find(|x| x.name == k).ok_or_else(|| {
                    Error::Config(format!(
                        "--set `{s}`: unknown parameter `{k}` for family `{}`{} (known: {})",
                        fam.name(),
                        crate::util::suggest::hint(k, specs.iter().map(|s| s.name)),
                        specs.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
                    ))
                })?;
                Ok((k.to_string(), spec.parse(v)?))
            })
            .collect()
    }

    /// Build this configuration's checks.
    pub fn checks(&self) -> Result<Vec<Box<dyn Check>>> {
        family(self.family)?.checks(&self.params)
    }

    /// The post-detection policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }
}

/// Merge the detections of independent checks by event (ties keep check order)
/// and number the strikes per prompt.
pub fn merge(mut per_check: Vec<Vec<Detection>>) -> Vec<Detection> {
    let mut all: Vec<Detection> = if per_check.len() == 1 {
        per_check.pop().unwrap_or_default()
    } else {
        let mut v: Vec<Detection> = per_check.into_iter().flatten().collect();
        v.sort_by_key(|d| d.event); // stable: ties keep check order
        v
    };
    let mut prompt = u32::MAX;
    let mut strike = 0;
    for d in &mut all {
        if d.prompt != prompt {
            prompt = d.prompt;
            strike = 0;
        }
        strike += 1;
        d.strike = strike;
    }
    all
}

/// Run a configuration's checks on one session.
pub fn run_checks(
    checks: &[Box<dyn Check>],
    session: &Prepared,
    limit: Option<usize>,
) -> Vec<Detection> {
    let mut merged = merge(checks.iter().map(|c| c.run(session, limit)).collect());
    if let Some(n) = limit {
        merged.truncate(n);
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(event: u32, prompt: u32) -> Detection {
        Detection {
            kind: "x",
            event,
            turn: 0,
            prompt,
            strike: 0,
            detail: String::new(),
        }
    }

    #[test]
    fn merge_orders_by_event_and_counts_strikes_per_prompt() {
        let m = merge(vec![vec![d(5, 0), d(9, 1)], vec![d(3, 0), d(12, 1)]]);
        let got: Vec<(u32, u32)> = m.iter().map(|x| (x.event, x.strike)).collect();
        assert_eq!(got, vec![(3, 1), (5, 2), (9, 1), (12, 2)]);
    }

    /// Values other than `v` of a parameter's kind, at its edges.
    fn others(kind: &ParamKind, v: &ParamValue) -> Vec<ParamValue> {
        let all = match kind {
            ParamKind::Int { min, max } => vec![ParamValue::Int(*min), ParamValue::Int(*max)],
            ParamKind::Float { min, max } => {
                vec![ParamValue::Float(*min), ParamValue::Float(*max)]
            }
            ParamKind::Bool => vec![ParamValue::Bool(false), ParamValue::Bool(true)],
            ParamKind::Choice(words) => words
                .iter()
                .map(|w| ParamValue::Str(w.to_string()))
                .collect(),
            ParamKind::Policy => ["stop", "warn:1", "warn:2", "warn:3", "ask", "ignore"]
                .iter()
                .map(|w| ParamValue::Str(w.to_string()))
                .collect(),
            ParamKind::List => vec![ParamValue::List(vec![]), ParamValue::List(vec!["x".into()])],
        };
        all.into_iter().filter(|x| x != v).collect()
    }

    fn keys(cfg: &DetectorConfig) -> Option<Vec<String>> {
        cfg.checks()
            .ok()
            .map(|cs| cs.iter().map(|c| c.key()).collect())
    }

    #[test]
    fn every_parameter_but_the_policy_reaches_a_checks_settings() {
        for fam in families() {
            for spec in fam.params() {
                let mut reached = false;
                let mut policy_changed_a_key = None;
                for prof in fam.profiles() {
                    let base = DetectorConfig::resolve(None, Some(prof.name), &[]).unwrap();
                    let base_keys = keys(&base).expect("stock profiles build");
                    let here = &base.params.0[spec.name];
                    for v in others(&spec.kind, here) {
                        // Also under `stop`, which any family accepts with any
                        // other value (Blade ties warn:N to max_warnings).
                        for extra in [
                            vec![],
                            vec![(POLICY.to_string(), ParamValue::Str("stop".into()))],
                        ] {
                            let mut sets = extra;
                            sets.push((spec.name.to_string(), v.clone()));
                            let Ok(cfg) = DetectorConfig::resolve(None, Some(prof.name), &sets)
                            else {
                                continue;
                            };
                            let Some(k) = keys(&cfg) else { continue };
                            if spec.name == POLICY {
                                if k != base_keys {
                                    policy_changed_a_key = Some(prof.name);
                                }
                            } else {
                                let stop = DetectorConfig::resolve(
                                    None,
                                    Some(prof.name),
                                    &sets[..sets.len() - 1],
                                )
                                .ok()
                                .and_then(|c| keys(&c));
                                reached |= stop.is_some_and(|s| s != k);
                            }
                        }
                    }
                }
                if spec.name == POLICY {
                    assert_eq!(
                        policy_changed_a_key,
                        None,
                        "{}: the policy must not reach a check (configurations differing only in it share runs)",
                        fam.name()
                    );
                } else {
                    assert!(
                        reached,
                        "{}: parameter `{}` never changes a check's settings: declared but not read",
                        fam.name(),
                        spec.name
                    );
                }
            }
        }
    }

    #[test]
    fn every_word_of_every_choice_builds() {
        for fam in families() {
            for spec in fam.params() {
                let ParamKind::Choice(words) = spec.kind else {
                    continue;
                };
                for w in words {
                    let sets = [(spec.name.to_string(), ParamValue::Str(w.to_string()))];
                    let cfg = DetectorConfig::resolve(Some(fam.name()), None, &sets).unwrap();
                    if let Err(e) = cfg.checks() {
                        panic!("{} {}={w}: {e}", fam.name(), spec.name);
                    }
                }
            }
        }
    }

    #[test]
    fn a_missing_or_mistyped_parameter_names_family_and_parameter() {
        let mut cfg = DetectorConfig::resolve(Some("roo"), None, &[]).unwrap();
        cfg.params
            .0
            .insert("limit".into(), ParamValue::Str("three".into()));
        let e = cfg
            .checks()
            .err()
            .expect("a word is not an integer")
            .to_string();
        assert!(
            e.contains("family `roo`") && e.contains("parameter `limit`") && e.contains("three"),
            "{e}"
        );
        cfg.params.0.remove("limit");
        let e = cfg.checks().err().expect("missing").to_string();
        assert!(
            e.contains("family `roo`") && e.contains("`limit` is missing"),
            "{e}"
        );
        let mut cfg = DetectorConfig::resolve(Some("crush"), None, &[]).unwrap();
        cfg.params
            .0
            .insert("window_steps".into(), ParamValue::Int(-1));
        let e = cfg.checks().err().expect("negative size").to_string();
        assert!(
            e.contains("parameter `window_steps`: `-1` is not an integer in the range of usize"),
            "{e}"
        );
    }

    #[test]
    fn resolve_rejects_unknown_and_mismatched() {
        assert!(DetectorConfig::resolve(None, Some("nope"), &[]).is_err());
        let e = DetectorConfig::parse_sets("gemini", &["bogus=1".into()]).unwrap_err();
        assert!(e.to_string().contains("unknown parameter `bogus`"));
        let e =
            DetectorConfig::parse_sets("gemini", &["tool_call_threshold=abc".into()]).unwrap_err();
        assert!(e.to_string().contains("not an integer"));
    }
}
