//! Named detector parameters: their types, ranges, units and provenance, and
//! the resolved values of one configuration.

use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::fmt;

/// A parameter value.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    /// Whole number.
    Int(i64),
    /// Real number.
    Float(f64),
    /// Switch.
    Bool(bool),
    /// One word (an enumeration or policy).
    Str(String),
    /// A list of words (tool names).
    List(Vec<String>),
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Int(i) => write!(f, "{i}"),
            ParamValue::Float(x) => write!(f, "{}", crate::util::js::number_to_string(*x)),
            ParamValue::Bool(b) => write!(f, "{b}"),
            ParamValue::Str(s) => write!(f, "{s}"),
            ParamValue::List(items) => write!(f, "{}", items.join(";")),
        }
    }
}

impl ParamValue {
    /// A word (a choice or a policy), for profiles.
    pub fn word(w: &str) -> ParamValue {
        ParamValue::Str(w.to_string())
    }

    /// A list of names, for profiles.
    pub fn words(ws: &[&str]) -> ParamValue {
        ParamValue::List(ws.iter().map(|w| w.to_string()).collect())
    }

    /// As TOML, for printing grids.
    pub fn to_toml(&self) -> String {
        match self {
            ParamValue::Str(s) => format!("{s:?}"),
            ParamValue::List(items) => format!(
                "[{}]",
                items
                    .iter()
                    .map(|s| format!("{s:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            ParamValue::Float(x) if x.fract() == 0.0 => format!("{x:.1}"),
            other => other.to_string(),
        }
    }
}

/// The type and valid range of a parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamKind {
    /// Integer in `min..=max`.
    Int {
        /// Smallest allowed value.
        min: i64,
        /// Largest allowed value.
        max: i64,
    },
    /// Real number in `min..=max`.
    Float {
        /// Smallest allowed value.
        min: f64,
        /// Largest allowed value.
        max: f64,
    },
    /// Boolean switch.
    Bool,
    /// One of the given words.
    Choice(&'static [&'static str]),
    /// A post-detection policy: `stop`, `warn:N`, `ask`, `ignore`.
    Policy,
    /// A list of names (comma-separated on the command line).
    List,
}

impl ParamKind {
    /// The values it takes, as `looptune detectors` lists them.
    pub fn describe(&self) -> String {
        match self {
            ParamKind::Int { min, max } => format!("integer {min}..={max}"),
            ParamKind::Float { min, max } => format!("number {min}..={max}"),
            ParamKind::Bool => "true|false".into(),
            ParamKind::Choice(c) => c.join("|"),
            ParamKind::Policy => "stop|warn:N|ask|ignore".into(),
            ParamKind::List => "list of names".into(),
        }
    }
}

/// One named parameter of a detector family.
#[derive(Debug, Clone)]
pub struct ParamSpec {
    /// Name, exactly as used in `--set`, grids and CSV columns.
    pub name: &'static str,
    /// Type and range.
    pub kind: ParamKind,
    /// Unit (`calls`, `UTF-16 units`, `turns`, ...), or empty.
    pub unit: &'static str,
    /// What it does, in one line.
    pub doc: &'static str,
    /// Where the value comes from: file and version of the original.
    pub source: &'static str,
}

impl ParamSpec {
    /// An integer parameter in `min..=max`.
    pub const fn int(
        name: &'static str,
        min: i64,
        max: i64,
        unit: &'static str,
        doc: &'static str,
        source: &'static str,
    ) -> ParamSpec {
        ParamSpec {
            name,
            kind: ParamKind::Int { min, max },
            unit,
            doc,
            source,
        }
    }

    /// A real parameter in `min..=max`.
    pub const fn float(
        name: &'static str,
        min: f64,
        max: f64,
        unit: &'static str,
        doc: &'static str,
        source: &'static str,
    ) -> ParamSpec {
        ParamSpec {
            name,
            kind: ParamKind::Float { min, max },
            unit,
            doc,
            source,
        }
    }

    /// A switch.
    pub const fn bool(name: &'static str, doc: &'static str, source: &'static str) -> ParamSpec {
        ParamSpec {
            name,
            kind: ParamKind::Bool,
            unit: "",
            doc,
            source,
        }
    }

    /// One of the given words.
    pub const fn choice(
        name: &'static str,
        words: &'static [&'static str],
        doc: &'static str,
        source: &'static str,
    ) -> ParamSpec {
        ParamSpec {
            name,
            kind: ParamKind::Choice(words),
            unit: "",
            doc,
            source,
        }
    }

    /// A list of names.
    pub const fn list(
        name: &'static str,
        unit: &'static str,
        doc: &'static str,
        source: &'static str,
    ) -> ParamSpec {
        ParamSpec {
            name,
            kind: ParamKind::List,
            unit,
            doc,
            source,
        }
    }

    /// Parse a command-line or TOML string into a value of this parameter's type.
    pub fn parse(&self, raw: &str) -> Result<ParamValue> {
        let raw = raw.trim();
        let bad =
            |what: &str| Error::Config(format!("parameter `{}`: `{raw}` is not {what}", self.name));
        let v = match &self.kind {
            ParamKind::Int { .. } => ParamValue::Int(raw.parse().map_err(|_| bad("an integer"))?),
            ParamKind::Float { .. } => {
                let x: f64 = raw.parse().map_err(|_| bad("a number"))?;
                ParamValue::Float(x)
            }
            ParamKind::Bool => ParamValue::Bool(match raw {
                "true" | "on" | "yes" | "1" => true,
                "false" | "off" | "no" | "0" => false,
                _ => return Err(bad("true or false")),
            }),
            ParamKind::Choice(_) | ParamKind::Policy => ParamValue::Str(raw.to_string()),
            ParamKind::List => ParamValue::List(
                raw.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect(),
            ),
        };
        self.check(v)
    }

    /// Check a value's type and range, converting integers to floats where a float is wanted.
    pub fn check(&self, v: ParamValue) -> Result<ParamValue> {
        let name = self.name;
        match (&self.kind, v) {
            (ParamKind::Int { min, max }, ParamValue::Int(i)) => {
                if i < *min || i > *max {
                    Err(Error::Config(format!(
                        "parameter `{name}`: {i} is out of range ({min}..={max})"
                    )))
                } else {
                    Ok(ParamValue::Int(i))
                }
            }
            (ParamKind::Float { .. }, ParamValue::Int(i)) => {
                self.check(ParamValue::Float(i as f64))
            }
            (ParamKind::Float { min, max }, ParamValue::Float(x)) => {
                if !x.is_finite() || x < *min || x > *max {
                    Err(Error::Config(format!(
                        "parameter `{name}`: {x} is out of range ({min}..={max})"
                    )))
                } else {
                    Ok(ParamValue::Float(x))
                }
            }
            (ParamKind::Bool, ParamValue::Bool(b)) => Ok(ParamValue::Bool(b)),
            (ParamKind::Choice(choices), ParamValue::Str(s)) => {
                if choices.contains(&s.as_str()) {
                    Ok(ParamValue::Str(s))
                } else {
                    Err(Error::Config(format!(
                        "parameter `{name}`: `{s}` is not one of {}",
                        choices.join(", ")
                    )))
                }
            }
            (ParamKind::Policy, ParamValue::Str(s)) => {
                Policy::parse(&s).map_err(|m| Error::Config(format!("parameter `{name}`: {m}")))?;
                Ok(ParamValue::Str(s))
            }
            (ParamKind::List, ParamValue::List(l)) => Ok(ParamValue::List(l)),
            (ParamKind::List, ParamValue::Str(s)) => self.parse(&s),
            (kind, v) => Err(Error::Config(format!(
                "parameter `{name}`: value `{v}` has the wrong type (expected {})",
                kind_name(kind)
            ))),
        }
    }
}

fn kind_name(kind: &ParamKind) -> &'static str {
    match kind {
        ParamKind::Int { .. } => "an integer",
        ParamKind::Float { .. } => "a number",
        ParamKind::Bool => "true or false",
        ParamKind::Choice(_) => "a word",
        ParamKind::Policy => "a policy (stop, warn:N, ask, ignore)",
        ParamKind::List => "a list of names",
    }
}

/// Resolved parameter values of one configuration, by name (sorted).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParamSet(pub BTreeMap<String, ParamValue>);

/// A configuration's parameters as one family reads them into its checks'
/// typed settings (once, when the checks are built): a missing or mistyped
/// parameter is an [`Error::Config`] naming the family and the parameter.
#[derive(Debug, Clone, Copy)]
pub struct Params<'a> {
    family: &'static str,
    set: &'a ParamSet,
}

impl<'a> Params<'a> {
    /// Read `set` for `family`.
    pub fn new(family: &'static str, set: &'a ParamSet) -> Params<'a> {
        Params { family, set }
    }

    fn raw(&self, name: &str) -> Result<&'a ParamValue> {
        self.set.0.get(name).ok_or_else(|| {
            Error::Config(format!(
                "family `{}`: parameter `{name}` is missing",
                self.family
            ))
        })
    }

    /// A parameter as `T`.
    pub fn get<T: FromParam>(&self, name: &str) -> Result<T> {
        let v = self.raw(name)?;
        T::from_param(v).ok_or_else(|| {
            Error::Config(format!(
                "family `{}`: parameter `{name}`: `{v}` is not {}",
                self.family,
                T::WHAT
            ))
        })
    }

    /// A word parameter mapped through `words`, which lists every word the
    /// parameter's [`ParamKind::Choice`] allows.
    pub fn choice<T: Copy>(&self, name: &str, words: &[(&str, T)]) -> Result<T> {
        let v = self.raw(name)?;
        let found = match v {
            ParamValue::Str(w) => words.iter().find(|(k, _)| k == w).map(|(_, t)| *t),
            _ => None,
        };
        found.ok_or_else(|| {
            Error::Config(format!(
                "family `{}`: parameter `{name}`: `{v}` is not one of {}",
                self.family,
                words.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")
            ))
        })
    }
}

/// A Rust type a parameter value converts to exactly (no rounding, no wrapping).
pub trait FromParam: Sized {
    /// What the value must be, for errors ("an integer", ...).
    const WHAT: &'static str;
    /// The value as `Self`, if it is one.
    fn from_param(v: &ParamValue) -> Option<Self>;
}

impl FromParam for i64 {
    const WHAT: &'static str = "an integer";
    fn from_param(v: &ParamValue) -> Option<i64> {
        match v {
            ParamValue::Int(i) => Some(*i),
            _ => None,
        }
    }
}

macro_rules! unsigned_param {
    ($($t:ty),*) => {$(
        impl FromParam for $t {
            const WHAT: &'static str = concat!("an integer in the range of ", stringify!($t));
            fn from_param(v: &ParamValue) -> Option<$t> {
                match v {
                    ParamValue::Int(i) => <$t>::try_from(*i).ok(),
                    _ => None,
                }
            }
        }
    )*};
}
unsigned_param!(u32, u64, usize);

impl FromParam for f64 {
    const WHAT: &'static str = "a number";
    fn from_param(v: &ParamValue) -> Option<f64> {
        match v {
            ParamValue::Float(x) => Some(*x),
            // A profile may spell a whole number without a fraction.
            ParamValue::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
}

impl FromParam for bool {
    const WHAT: &'static str = "true or false";
    fn from_param(v: &ParamValue) -> Option<bool> {
        match v {
            ParamValue::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

impl FromParam for Vec<String> {
    const WHAT: &'static str = "a list of names";
    fn from_param(v: &ParamValue) -> Option<Vec<String>> {
        match v {
            ParamValue::List(l) => Some(l.clone()),
            _ => None,
        }
    }
}

impl FromParam for Policy {
    const WHAT: &'static str = "a policy (stop, warn:N, ask, ignore)";
    fn from_param(v: &ParamValue) -> Option<Policy> {
        match v {
            ParamValue::Str(s) => Policy::parse(s).ok(),
            _ => None,
        }
    }
}

/// Name of the policy parameter every family has.
pub const POLICY: &str = "policy";

/// The spec of the `policy` parameter, shared by every family.
pub const POLICY_SPEC: ParamSpec = ParamSpec {
    name: POLICY,
    kind: ParamKind::Policy,
    unit: "",
    doc: "what happens after a detection: stop (end the session), warn:N (warn N times, stop at the next), ask (a person must answer), ignore (nobody acts). Replay cannot know how the model would have reacted to a warning: the recorded continuation counts as the model not changing course",
    source: "looptune; Gemini CLI client.ts (stop until 2026-03, warn:1 after), Blade maxWarnings (warn:2), OpenCode/Roo (ask), DeepV VS Code extension (ignore)",
};

/// One `--set [FAMILY.]KEY=VALUE`, split at the command line. The value stays
/// text until the family it applies to is known: that family's [`ParamSpec`]
/// parses it (`--set` may name a key several selected families share).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// As given, for messages.
    pub text: String,
    /// Left of the first `=`, trimmed: `KEY` or `FAMILY.KEY`.
    pub key: String,
    /// Right of the first `=`, as given.
    pub value: String,
}

/// A `--set` without `=`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--set `{0}`: expected KEY=VALUE")]
pub struct SettingError(pub String);

impl Setting {
    /// Split `[FAMILY.]KEY=VALUE` (`--set`'s value parser).
    pub fn parse(s: &str) -> std::result::Result<Setting, SettingError> {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| SettingError(s.to_string()))?;
        Ok(Setting {
            text: s.to_string(),
            key: k.trim().to_string(),
            value: v.to_string(),
        })
    }

    /// The family it names (`FAMILY.KEY`), if any, and the parameter.
    pub fn target(&self) -> (Option<&str>, &str) {
        match self.key.split_once('.') {
            Some((f, k)) => (Some(f.trim()), k.trim()),
            None => (None, &self.key),
        }
    }
}

impl std::str::FromStr for Setting {
    type Err = SettingError;

    fn from_str(s: &str) -> std::result::Result<Setting, SettingError> {
        Setting::parse(s)
    }
}

/// A `policy` value that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a policy (stop, warn:N, ask, ignore)")]
pub struct PolicyError {
    /// The value as given.
    pub text: String,
    /// Why `warn:N`'s count did not parse, for `warn:` values.
    #[source]
    pub count: Option<std::num::ParseIntError>,
}

/// What happens after a detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// The first detection ends the session.
    Stop,
    /// A detection warns; the (N+1)-th strike stops.
    Warn(u32),
    /// A person is asked; counted as a stop.
    Ask,
    /// The detection is emitted and nobody acts on it.
    Ignore,
}

impl Policy {
    /// Parse `stop`, `warn:N`, `ask`, `ignore`.
    pub fn parse(s: &str) -> std::result::Result<Policy, PolicyError> {
        match s {
            "stop" => Ok(Policy::Stop),
            "ask" => Ok(Policy::Ask),
            "ignore" => Ok(Policy::Ignore),
            _ => match s.strip_prefix("warn:").map(str::parse::<u32>) {
                Some(Ok(n)) => Ok(Policy::Warn(n)),
                other => Err(PolicyError {
                    text: s.to_string(),
                    count: other.and_then(std::result::Result::err),
                }),
            },
        }
    }

    /// The strike (1-based, counted per prompt) at which this policy stops the session.
    pub fn stop_strike(self) -> Option<u32> {
        match self {
            Policy::Stop | Policy::Ask => Some(1),
            Policy::Warn(n) => Some(n + 1),
            Policy::Ignore => None,
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Policy::Stop => write!(f, "stop"),
            Policy::Warn(n) => write!(f, "warn:{n}"),
            Policy::Ask => write!(f, "ask"),
            Policy::Ignore => write!(f, "ignore"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_split_at_the_first_equals_and_name_their_family() {
        let s = Setting::parse(" gemini . tool_call_threshold =a=b").unwrap();
        assert_eq!(s.key, "gemini . tool_call_threshold");
        assert_eq!(s.value, "a=b");
        assert_eq!(s.target(), (Some("gemini"), "tool_call_threshold"));
        assert_eq!(Setting::parse("x=1").unwrap().target(), (None, "x"));
        assert_eq!(
            Setting::parse("x").unwrap_err().to_string(),
            "--set `x`: expected KEY=VALUE"
        );
    }

    #[test]
    fn a_bad_warn_count_keeps_its_cause() {
        let e = Policy::parse("warn:x").unwrap_err();
        assert_eq!(
            e.to_string(),
            "`warn:x` is not a policy (stop, warn:N, ask, ignore)"
        );
        assert!(std::error::Error::source(&e).is_some());
        assert!(std::error::Error::source(&Policy::parse("halt").unwrap_err()).is_none());
    }

    #[test]
    fn policies_parse_and_stop() {
        assert_eq!(Policy::parse("warn:2").unwrap().stop_strike(), Some(3));
        assert_eq!(Policy::parse("stop").unwrap().stop_strike(), Some(1));
        assert_eq!(Policy::parse("ignore").unwrap().stop_strike(), None);
        assert!(Policy::parse("warn:x").is_err());
    }

    #[test]
    fn spec_checks_type_and_range() {
        let s = ParamSpec {
            name: "n",
            kind: ParamKind::Int { min: 1, max: 10 },
            unit: "",
            doc: "",
            source: "",
        };
        assert_eq!(s.parse("3").unwrap(), ParamValue::Int(3));
        assert!(s
            .parse("0")
            .unwrap_err()
            .to_string()
            .contains("out of range"));
        assert!(s
            .parse("x")
            .unwrap_err()
            .to_string()
            .contains("not an integer"));
        assert!(s.check(ParamValue::Bool(true)).is_err());
    }
}
