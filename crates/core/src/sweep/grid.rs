//! Sweep grids: a TOML file naming a detector family and base profile, then
//! axes (lists or inclusive `start/stop/step` ranges) whose product is the run,
//! plus explicit extra configurations. Every configuration gets a stable id
//! (a digest of its family and resolved parameters, so the same grid always
//! gives the same ids) and a short readable label. Grids are validated whole
//! before any work starts.

use crate::detect::{self, DetectorConfig, ParamKind, ParamSpec, ParamValue};
use crate::error::{Error, Result};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The embedded default grid (`looptune sweep --print-default-grid`).
pub const DEFAULT_GRID: &str = include_str!("default_grid.toml");

/// A grid file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GridFile {
    name: Option<String>,
    family: Option<String>,
    profile: Option<String>,
    #[serde(default)]
    axes: toml::Table,
    #[serde(default)]
    grid: Vec<SubGrid>,
    #[serde(default)]
    extra: Vec<Extra>,
    /// Add every stock profile of every family (default true).
    stock_profiles: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SubGrid {
    family: Option<String>,
    profile: Option<String>,
    #[serde(default)]
    axes: toml::Table,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Extra {
    family: Option<String>,
    profile: Option<String>,
    #[serde(default)]
    set: toml::Table,
    /// The row's label, instead of the profile and what differs from it.
    label: Option<String>,
}

/// One configuration of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// Stable id (`c` + 10 hex digits of a digest of family, profile and parameters).
    pub id: String,
    /// Short readable label: the profile, then what differs from it.
    pub label: String,
    /// The resolved configuration.
    pub config: DetectorConfig,
    /// Parameters set by the grid (not inherited from the profile).
    pub overrides: BTreeMap<String, ParamValue>,
    /// A stock profile, unchanged.
    pub stock: bool,
}

/// An expanded grid.
#[derive(Debug, Clone)]
pub struct Grid {
    /// Grid name (used for the default output folder).
    pub name: String,
    /// The grid's TOML text as given.
    pub source: String,
    /// The base profile: what gates and reports compare against by default.
    pub base_profile: String,
    /// Configurations, de-duplicated, in grid order.
    pub variants: Vec<Variant>,
    /// Axis names in declaration order (for charts), per family.
    pub axes: Vec<String>,
}

/// What is wrong with one axis or `[[extra]]` setting; the grid's error puts
/// the grid and the place in front.
#[derive(Debug, thiserror::Error)]
enum AxisError {
    /// The family has no such parameter.
    #[error("unknown parameter `{name}` for family `{family}`{hint} (known: {known})")]
    UnknownParameter {
        name: String,
        family: &'static str,
        known: String,
        hint: String,
    },
    /// A range table lacks a key.
    #[error("a range needs `{0}`")]
    RangeNeeds(&'static str),
    /// A range table has a key other than start, stop, step.
    #[error("unknown range key `{0}` (expected start, stop, step)")]
    RangeKey(String),
    #[error("`step` must be positive")]
    StepNotPositive,
    #[error("`start` is after `stop`")]
    StartAfterStop,
    /// An integer range with too many values (their count).
    #[error("range has {0} values, more than 100001 (use a larger `step`)")]
    TooManyIntegers(i128),
    #[error("range has more than 100000 values")]
    TooManyNumbers,
    /// A range over a parameter that is not numeric, or with bounds of another type.
    #[error("a range needs numbers of the parameter's type ({0})")]
    RangeType(&'static str),
    #[error("`{0}` is not a number")]
    NotANumber(toml::Value),
    #[error("`{0}` is not a name")]
    NotAName(toml::Value),
    #[error("`{0}` has the wrong type")]
    WrongType(toml::Value),
    /// The parameter refuses the value (range, choice, ...).
    #[error(transparent)]
    Value(#[from] Error),
}

/// Named axes with their values, in declaration order.
type Axes = Vec<(String, Vec<ParamValue>)>;

/// Parse and expand a grid; `origin` names it in errors. At most
/// `limits::DEFAULT_MAX_CONFIGS` (the `--max-configs` default) configurations.
pub fn parse_grid(text: &str, origin: &str) -> Result<Grid> {
    parse_grid_limited(text, origin, crate::util::limits::DEFAULT_MAX_CONFIGS)
}

/// [`parse_grid`] with a cap on configurations (`--max-configs`): the product
/// of the axes is counted, overflow-safe, before anything is expanded, so a
/// grid of 10^9 configurations is an error, not an allocation failure.
pub fn parse_grid_limited(text: &str, origin: &str, max_configs: usize) -> Result<Grid> {
    let err = |m: String| Error::Config(format!("grid {origin}: {m}"));
    let file: GridFile = toml::from_str(text).map_err(|e| err(e.to_string().trim().to_string()))?;
    let mut subs: Vec<SubGrid> = Vec::new();
    if file.family.is_some() || file.profile.is_some() || !file.axes.is_empty() {
        subs.push(SubGrid {
            family: file.family.clone(),
            profile: file.profile.clone(),
            axes: file.axes.clone(),
        });
    }
    subs.extend(file.grid);
    let mut out = Variants::default();
    let mut axes_seen: Vec<String> = Vec::new();
    let mut base_profile: Option<String> = None;
    let mut total: Option<usize> = Some(file.extra.len());
    let mut expanded: Vec<(DetectorConfig, Axes)> = Vec::new();
    for (gi, sub) in subs.iter().enumerate() {
        let where_ = if gi == 0 {
            "".to_string()
        } else {
            format!("[[grid]] #{gi}: ")
        };
        let base = DetectorConfig::resolve(sub.family.as_deref(), sub.profile.as_deref(), &[])
            .map_err(|e| err(format!("{where_}{e}")))?;
        base_profile.get_or_insert_with(|| base.profile.clone());
        let specs = detect::family(base.family)?.params();
        let mut axes: Axes = Vec::new();
        for (name, raw) in &sub.axes {
            let spec =
                find_spec(&specs, name, base.family).map_err(|m| err(format!("{where_}{m}")))?;
            let values =
                axis_values(spec, raw).map_err(|m| err(format!("{where_}axis `{name}`: {m}")))?;
            if values.is_empty() {
                return Err(err(format!("{where_}axis `{name}` is empty")));
            }
            if !axes_seen.contains(name) {
                axes_seen.push(name.clone());
            }
            axes.push((name.clone(), values));
        }
        let product = axes
            .iter()
            .try_fold(1usize, |n, (_, v)| n.checked_mul(v.len()));
        total = product.zip(total).and_then(|(p, t)| t.checked_add(p));
        if total.is_none_or(|t| t > max_configs) {
            // The count for the message, in a wider type (it may not fit a usize).
            let wide = axes
                .iter()
                .try_fold(1u128, |n, (_, v)| n.checked_mul(v.len() as u128))
                .map_or_else(|| "more than 10^38".to_string(), |n| n.to_string());
            return Err(err(format!(
                "{where_}{wide} configurations from the axes, more than the limit of {max_configs} (raise it with --max-configs N, or use fewer or coarser axes)"
            )));
        }
        expanded.push((base, axes));
    }
    for (base, axes) in &expanded {
        // Cartesian product, first axis varying slowest.
        let mut combos: Vec<Vec<(String, ParamValue)>> = vec![Vec::new()];
        for (name, values) in axes {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    values.iter().map(move |v| {
                        let mut c = c.clone();
                        c.push((name.clone(), v.clone()));
                        c
                    })
                })
                .collect();
        }
        for combo in combos {
            let cfg = DetectorConfig::resolve(Some(base.family), Some(&base.profile), &combo)
                .map_err(|e| err(e.to_string()))?;
            push_variant(&mut out, cfg, combo.into_iter().collect());
        }
    }
    for (i, x) in file.extra.iter().enumerate() {
        let base = DetectorConfig::resolve(x.family.as_deref(), x.profile.as_deref(), &[])
            .map_err(|e| err(format!("[[extra]] #{}: {e}", i + 1)))?;
        let specs = detect::family(base.family)?.params();
        let mut sets = Vec::new();
        for (name, raw) in &x.set {
            let spec = find_spec(&specs, name, base.family)
                .map_err(|m| err(format!("[[extra]] #{}: {m}", i + 1)))?;
            let v = toml_value(spec, raw)
                .map_err(|m| err(format!("[[extra]] #{}: `{name}`: {m}", i + 1)))?;
            sets.push((name.clone(), v));
        }
        base_profile.get_or_insert_with(|| base.profile.clone());
        let cfg = DetectorConfig::resolve(Some(base.family), Some(&base.profile), &sets)
            .map_err(|e| err(e.to_string()))?;
        let at = out.list.len();
        push_variant(&mut out, cfg, sets.into_iter().collect());
        if let (Some(label), Some(v)) = (&x.label, out.list.get_mut(at)) {
            v.label = label.clone();
        }
    }
    if file.stock_profiles.unwrap_or(true) {
        for fam in detect::families() {
            for p in fam.profiles() {
                let cfg = DetectorConfig::resolve(Some(fam.name()), Some(p.name), &[])?;
                push_variant(&mut out, cfg, BTreeMap::new());
            }
        }
    }
    if out.list.is_empty() {
        return Err(err(
            "no configurations: give `family`/`profile` with `[axes]`, `[[grid]]` or `[[extra]]`"
                .into(),
        ));
    }
    Ok(Grid {
        name: file.name.unwrap_or_else(|| {
            std::path::Path::new(origin)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "grid".into())
        }),
        source: text.to_string(),
        base_profile: base_profile.unwrap_or_else(|| "gemini-latest".into()),
        variants: out.list,
        axes: axes_seen,
    })
}

fn find_spec<'a>(
    specs: &'a [ParamSpec],
    name: &str,
    family: &'static str,
) -> std::result::Result<&'a ParamSpec, AxisError> {
    specs
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| AxisError::UnknownParameter {
            name: name.to_string(),
            family,
            known: specs.iter().map(|s| s.name).collect::<Vec<_>>().join(", "),
            hint: crate::util::suggest::hint(name, specs.iter().map(|s| s.name)),
        })
}

/// The grid's source with `config` added as one more `[[extra]]` (labelled
/// `label`), and that grid: the configuration is then rebuilt from the source
/// a record keeps, as every other (what `export` and `report` read).
pub fn with_extra(grid: &Grid, config: &DetectorConfig, label: &str, why: &str) -> Result<Grid> {
    let stock = DetectorConfig::resolve(Some(config.family), Some(&config.profile), &[])?;
    let set: Vec<String> = config
        .params
        .0
        .iter()
        .filter(|(k, v)| stock.params.0.get(*k) != Some(*v))
        .map(|(k, v)| format!("{k} = {}", v.to_toml()))
        .collect();
    let mut source = grid.source.clone();
    if !source.is_empty() && !source.ends_with('\n') {
        source.push('\n');
    }
    for line in why.lines() {
        source.push_str(&format!("# {line}\n"));
    }
    source.push_str(&format!(
        "[[extra]]\nfamily = {:?}\nprofile = {:?}\nset = {{ {} }}\nlabel = {}\n",
        config.family,
        config.profile,
        set.join(", "),
        toml::Value::String(label.to_string())
    ));
    // The grid was accepted under the cap once; one configuration more is no bomb.
    let mut out = parse_grid_limited(&source, &grid.name, usize::MAX)?;
    // The name came from the file name, which the source does not hold.
    out.name = grid.name.clone();
    Ok(out)
}

/// Add a configuration unless an identical one is already there; overrides
/// equal to the profile's own values are not overrides.
/// Variants in grid order, each id once (a set beside them: grids reach
/// 10,000s of configurations).
#[derive(Default)]
struct Variants {
    list: Vec<Variant>,
    ids: std::collections::HashSet<String>,
}

fn push_variant(
    out: &mut Variants,
    config: DetectorConfig,
    overrides: BTreeMap<String, ParamValue>,
) {
    let id = variant_id(&config);
    if !out.ids.insert(id.clone()) {
        return;
    }
    let stock_cfg = DetectorConfig::resolve(Some(config.family), Some(&config.profile), &[])
        .expect("profile resolves");
    let overrides: BTreeMap<String, ParamValue> = overrides
        .into_iter()
        .filter(|(k, v)| stock_cfg.params.0.get(k) != Some(v))
        .collect();
    let stock = overrides.is_empty();
    let label = if stock {
        config.profile.clone()
    } else {
        let parts: Vec<String> = overrides.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{} {}", config.profile, parts.join(" "))
    };
    out.list.push(Variant {
        id,
        label,
        config,
        overrides,
        stock,
    });
}

/// The blocks of a grid source that have axes, as written: each block's
/// resolved profile and its `axes` table, in order. A source that does not
/// parse gives none; a block whose family or profile does not resolve is left
/// out (the report's heatmaps read this; the grid itself was checked when run).
pub fn axis_blocks(source: &str) -> Vec<(String, toml::Table)> {
    let Ok(doc) = source.parse::<toml::Table>() else {
        return Vec::new();
    };
    let mut blocks: Vec<&toml::Table> = Vec::new();
    if doc.contains_key("axes") {
        blocks.push(&doc);
    }
    if let Some(toml::Value::Array(gs)) = doc.get("grid") {
        blocks.extend(gs.iter().filter_map(toml::Value::as_table));
    }
    let mut out = Vec::new();
    for b in blocks {
        let s = |k: &str| b.get(k).and_then(toml::Value::as_str);
        let profile = match DetectorConfig::resolve(s("family"), s("profile"), &[]) {
            Ok(c) => c.profile,
            Err(_) => continue,
        };
        let Some(axes) = b.get("axes").and_then(toml::Value::as_table) else {
            continue;
        };
        out.push((profile, axes.clone()));
    }
    out
}

/// Parameters added to a family after its configurations had ids, with the
/// value that behaves as before they existed: `(family, parameter, value)`.
/// At that value a parameter is left out of the digest, so a configuration
/// that behaves as it did keeps its id (and last night's results still
/// match by id).
const ADDED_LATER: &[(&str, &str, &str)] = &[("openhands", "check_at", "event")];

/// Stable id: a digest of the family, the profile and every resolved parameter
/// value (two profiles with equal values stay two configurations).
pub fn variant_id(c: &DetectorConfig) -> String {
    let mut h = Sha256::new();
    h.update(c.family.as_bytes());
    h.update(b"\0");
    h.update(c.profile.as_bytes());
    for (k, v) in &c.params.0 {
        let before = ADDED_LATER
            .iter()
            .any(|(f, p, was)| *f == c.family && p == k && v.to_string() == *was);
        if before {
            continue;
        }
        h.update(b"\0");
        h.update(k.as_bytes());
        h.update(b"=");
        h.update(v.to_string().as_bytes());
    }
    let d = h.finalize();
    format!("c{}", &crate::util::number::hex(&d)[..10])
}

fn axis_values(
    spec: &ParamSpec,
    raw: &toml::Value,
) -> std::result::Result<Vec<ParamValue>, AxisError> {
    match raw {
        toml::Value::Array(items) => items.iter().map(|v| toml_value(spec, v)).collect(),
        toml::Value::Table(t) => {
            let get = |k: &'static str| t.get(k).ok_or(AxisError::RangeNeeds(k));
            for k in t.keys() {
                if !["start", "stop", "step"].contains(&k.as_str()) {
                    return Err(AxisError::RangeKey(k.clone()));
                }
            }
            let (start, stop, step) = (get("start")?, get("stop")?, get("step")?);
            match (&spec.kind, start, stop, step) {
                (
                    ParamKind::Int { .. },
                    toml::Value::Integer(a),
                    toml::Value::Integer(b),
                    toml::Value::Integer(s),
                ) => {
                    if *s <= 0 {
                        return Err(AxisError::StepNotPositive);
                    }
                    if a > b {
                        return Err(AxisError::StartAfterStop);
                    }
                    // In i128: `stop - start` overflows i64 for e.g. -1..i64::MAX.
                    let steps = (i128::from(*b) - i128::from(*a)) / i128::from(*s);
                    if steps > 100_000 {
                        return Err(AxisError::TooManyIntegers(steps + 1));
                    }
                    (0..=steps as i64)
                        .map(|i| Ok(spec.check(ParamValue::Int(a + i * s))?))
                        .collect()
                }
                (ParamKind::Float { .. }, a, b, s) => {
                    let (a, b, s) = (num(a)?, num(b)?, num(s)?);
                    if s <= 0.0 {
                        return Err(AxisError::StepNotPositive);
                    }
                    if a > b {
                        return Err(AxisError::StartAfterStop);
                    }
                    let n = ((b - a) / s + 1e-9).floor() as i64;
                    if n > 100_000 {
                        return Err(AxisError::TooManyNumbers);
                    }
                    // Rounded so that 0.1 steps print as 0.3, not 0.30000000000000004.
                    (0..=n)
                        .map(|i| {
                            let x = ((a + i as f64 * s) * 1e9).round() / 1e9;
                            Ok(spec.check(ParamValue::Float(x))?)
                        })
                        .collect()
                }
                _ => Err(AxisError::RangeType(match spec.kind {
                    ParamKind::Int { .. } => "integers",
                    ParamKind::Float { .. } => "numbers",
                    _ => "ranges only work for numeric parameters",
                })),
            }
        }
        single => Ok(vec![toml_value(spec, single)?]),
    }
}

fn num(v: &toml::Value) -> std::result::Result<f64, AxisError> {
    match v {
        toml::Value::Integer(i) => Ok(*i as f64),
        toml::Value::Float(f) => Ok(*f),
        other => Err(AxisError::NotANumber(other.clone())),
    }
}

/// One TOML value as a parameter value of `spec`'s type.
fn toml_value(spec: &ParamSpec, v: &toml::Value) -> std::result::Result<ParamValue, AxisError> {
    let pv = match (&spec.kind, v) {
        (_, toml::Value::Integer(i)) => ParamValue::Int(*i),
        (_, toml::Value::Float(f)) => ParamValue::Float(*f),
        (_, toml::Value::Boolean(b)) => ParamValue::Bool(*b),
        (ParamKind::List, toml::Value::Array(items)) => ParamValue::List(
            items
                .iter()
                .map(|i| {
                    i.as_str()
                        .map(String::from)
                        .ok_or_else(|| AxisError::NotAName(i.clone()))
                })
                .collect::<std::result::Result<_, _>>()?,
        ),
        (_, toml::Value::String(s)) => return Ok(spec.parse(s)?),
        (_, other) => return Err(AxisError::WrongType(other.clone())),
    };
    Ok(spec.check(pv)?)
}

/// The default grid as TOML, with the generated list of stock profiles noted.
pub fn default_grid() -> Result<Grid> {
    parse_grid(DEFAULT_GRID, "default")
}

#[cfg(test)]
mod tests {

    /// A parameter added later (`check_at`) leaves the ids of the
    /// configurations that behave as before unchanged: `openhands-v0` keeps
    /// the id it had, `openhands-v1` (now checked per step) gets a new one.
    #[test]
    fn a_parameter_added_later_keeps_unchanged_ids() {
        let id = |profile: &str, sets: &[&str]| {
            let fam = DetectorConfig::resolve(None, Some(profile), &[])
                .unwrap()
                .family;
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            let over = DetectorConfig::parse_sets(fam, &sets).unwrap();
            variant_id(&DetectorConfig::resolve(None, Some(profile), &over).unwrap())
        };
        assert_eq!(id("openhands-v0", &[]), "c7e5ccccb14");
        assert_eq!(id("openhands-v1", &["check_at=event"]), "c08a37d1a0c");
        assert_ne!(id("openhands-v1", &[]), "c08a37d1a0c");
        assert_eq!(id("gemini-latest", &[]), "ca2ed902cca");
    }
    use super::*;

    #[test]
    fn product_of_axes_with_ranges_and_stable_ids() {
        let g = parse_grid(
            "family = \"gemini\"\nprofile = \"gemini-latest\"\nstock_profiles = false\n[axes]\ntool_call_threshold = [3, 5, 8]\ncontent_chunk_size = { start = 25, stop = 100, step = 25 }\n[[extra]]\nprofile = \"deepv-preview\"\n",
            "t.toml",
        )
        .unwrap();
        // 3 x 4, one of them (5, 50) is the stock profile itself, + 1 extra
        assert_eq!(g.variants.len(), 13);
        assert_eq!(
            g.variants[0].label,
            "gemini-latest content_chunk_size=25 tool_call_threshold=3"
        );
        assert!(g
            .variants
            .iter()
            .any(|v| v.stock && v.config.profile == "gemini-latest"));
        let again = parse_grid(&g.source, "t.toml").unwrap();
        let ids: Vec<_> = g.variants.iter().map(|v| &v.id).collect();
        let ids2: Vec<_> = again.variants.iter().map(|v| &v.id).collect();
        assert_eq!(ids, ids2);
        let mut uniq = ids.clone();
        uniq.sort();
        uniq.dedup();
        assert_eq!(uniq.len(), ids.len());
    }

    #[test]
    fn invalid_grids_are_clear_errors() {
        let e = |t: &str| parse_grid(t, "g.toml").unwrap_err().to_string();
        assert!(
            e("family = \"gemini\"\n[axes]\nbogus = [1]\n").contains("unknown parameter `bogus`")
        );
        assert!(e("family = \"gemini\"\n[axes]\ntool_call_threshold = []\n").contains("is empty"));
        assert!(
            e("family = \"gemini\"\n[axes]\ntool_call_threshold = [\"x\"]\n")
                .contains("not an integer")
        );
        assert!(
            e("family = \"gemini\"\n[axes]\ntool_call_threshold = [0]\n").contains("out of range")
        );
        assert!(e(
            "family = \"gemini\"\n[axes]\ncontent_chunk_size = { start = 5, stop = 1, step = 1 }\n"
        )
        .contains("after"));
        assert!(e("family = \"nope\"\n").contains("unknown detector family"));
        assert!(e("famly = \"gemini\"\n").contains("unknown field"));
    }

    #[test]
    fn float_ranges_are_rounded() {
        let g = parse_grid(
            "family = \"gemini\"\nstock_profiles = false\n[axes]\ncontent_max_distance_factor = { start = 0.1, stop = 0.3, step = 0.1 }\n",
            "g",
        )
        .unwrap();
        let labels: Vec<_> = g.variants.iter().map(|v| v.label.clone()).collect();
        assert_eq!(labels[2], "gemini-latest content_max_distance_factor=0.3");
    }

    #[test]
    fn default_grid_contains_every_stock_profile() {
        let g = default_grid().unwrap();
        for fam in detect::families() {
            for p in fam.profiles() {
                assert!(
                    g.variants
                        .iter()
                        .any(|v| v.stock && v.config.profile == p.name),
                    "{}",
                    p.name
                );
            }
        }
    }

    #[test]
    fn configurations_are_counted_before_expansion() {
        // 10^9 configurations: an error naming the flag, not an allocation failure.
        let big = "family = \"gemini\"\n[axes]\ntool_call_threshold = { start = 1, stop = 1000, step = 1 }\ncontent_chunk_size = { start = 1, stop = 1000, step = 1 }\ncontent_loop_threshold = { start = 2, stop = 1001, step = 1 }\n";
        let e = parse_grid(big, "g.toml").unwrap_err().to_string();
        assert!(e.contains("1000000000 configurations"), "{e}");
        assert!(e.contains("--max-configs"), "{e}");
        let small = "family = \"gemini\"\nstock_profiles = false\n[axes]\ntool_call_threshold = [3, 5, 8]\ncontent_chunk_size = [25, 50]\n";
        assert!(parse_grid_limited(small, "g", 5)
            .unwrap_err()
            .to_string()
            .contains("6 configurations"));
        assert_eq!(parse_grid_limited(small, "g", 6).unwrap().variants.len(), 6);
    }

    #[test]
    fn huge_integer_ranges_are_errors_not_overflows() {
        let t = "family = \"gemini\"\n[axes]\ntool_call_threshold = { start = -1, stop = 9223372036854775807, step = 1 }\n";
        let e = parse_grid(t, "g.toml").unwrap_err().to_string();
        assert!(e.contains("range has 9223372036854775809 values"), "{e}");
        let t = "family = \"gemini\"\n[axes]\ntool_call_threshold = { start = -9223372036854775808, stop = 9223372036854775807, step = 9223372036854775807 }\n";
        assert!(parse_grid(t, "g.toml").is_err());
    }
}
