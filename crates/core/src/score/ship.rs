//! One answer to "what do I ship?": the summary's closing block, per group
//! (agent by default) with labelled loops, the configuration to ship for
//! that agent's own detector and the overall recommendation, each with its
//! figures on that agent's logs when it was chosen without them, and "no
//! change" where the intervals cannot tell it from the baseline.
//!
//! It reads the analysed result and decides nothing new: the overall pick
//! is the recommendation, the own-detector pick the row the summary already
//! shows for that family (the recommendation itself for the baseline's
//! family), so the block repeats the summary's answer, per agent.

use super::recommend::{self, Labelled, Tally};
use super::SweepResult;

/// Which family is an agent's own detector, by the agent names logs give.
/// Agents absent here ship no loop detector of their own (Claude Code,
/// Codex CLI, SWE-agent, mini-swe-agent...).
const OWN_FAMILY: &[(&str, &str)] = &[
    ("gemini-cli", "gemini"),
    ("gemini", "gemini"),
    ("opencode", "opencode"),
    ("crush", "crush"),
    ("goose", "goose"),
    ("kimi-cli", "kimi"),
    ("kimi", "kimi"),
    ("qwen-code", "qwen"),
    ("qwen", "qwen"),
    ("openhands", "openhands"),
    ("cline", "cline"),
    ("roo-code", "roo"),
    ("roo", "roo"),
    ("blade", "blade"),
    ("openclaw", "openclaw"),
    ("hermes", "hermes"),
];

/// The family of an agent's own loop detector, if it ships one.
pub fn own_family(agent: &str) -> Option<&'static str> {
    OWN_FAMILY
        .iter()
        .find(|(a, _)| a.eq_ignore_ascii_case(agent))
        .map(|(_, f)| *f)
}

/// A configuration's figures on one group's labelled sessions.
#[derive(Debug, Clone, PartialEq)]
pub struct OnGroup {
    /// Loops caught, of the group's labelled loops.
    pub tp: u64,
    /// False positives, of the group's labelled clean sessions.
    pub fp: u64,
}

/// One pick for one group.
#[derive(Debug, Clone, PartialEq)]
pub struct Pick {
    /// The configuration (grid index) to ship.
    pub config: usize,
    /// Its figures on the group (chosen with the group's sessions).
    pub in_group: OnGroup,
    /// What the same procedure chose without the group's sessions, and its
    /// figures on the group (`None`: nothing met the rule without them).
    pub out_of_group: Option<(usize, OnGroup)>,
    /// Whether the intervals tell it apart from the baseline on the group
    /// (recall or false-positive rate, Wilson 95%).
    pub distinguishable: bool,
}

/// One group with labelled loops.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupShip {
    /// The group's name.
    pub name: String,
    /// Its labelled loops and clean sessions (test sessions aside).
    pub loops: u64,
    /// Labelled clean sessions.
    pub clean: u64,
    /// The baseline's figures on it.
    pub baseline: OnGroup,
    /// The family of the agent's own detector (`--group-by agent` only).
    pub own_family: Option<String>,
    /// The pick in that family (`None`: no own detector, or nothing in its
    /// family meets the rule).
    pub own: Option<Pick>,
    /// The overall recommendation on this group.
    pub overall: Option<Pick>,
}

/// The block.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ship {
    /// The key sessions are grouped by.
    pub by: String,
    /// The overall recommendation (none: the baseline stays).
    pub overall: Option<usize>,
    /// Per group with labelled loops, in name order.
    pub groups: Vec<GroupShip>,
}

/// Two Wilson intervals overlap (or one is undefined).
fn overlap(a: Option<(f64, f64)>, b: Option<(f64, f64)>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.0 <= b.1 && b.0 <= a.1,
        _ => true,
    }
}

/// Whether `t` is told apart from `base` by recall or false-positive rate.
fn apart(t: &OnGroup, base: &OnGroup, loops: u64, clean: u64) -> bool {
    let w = super::stats::wilson;
    !(overlap(w(t.tp, loops), w(base.tp, loops)) && overlap(w(t.fp, clean), w(base.fp, clean)))
}

/// The block for an analysed result: empty without labelled loops or groups.
pub fn ship(r: &SweepResult) -> std::io::Result<Ship> {
    let mut out = Ship {
        by: r.groups.by.clone(),
        overall: r.recommended.filter(|&c| c != r.baseline),
        groups: Vec::new(),
    };
    let sessions = &r.record.sessions;
    let by_session: Vec<Option<crate::event::Label>> = sessions
        .iter()
        .map(|s| s.label().filter(|_| !s.is_test()))
        .collect();
    let labelled = Labelled::from_labels(&by_session);
    if labelled.counts().0 == 0 {
        return Ok(out);
    }
    let n_groups = r.groups.names.len();
    let group_of: Vec<usize> = labelled
        .session
        .iter()
        .map(|&s| r.groups.of[s] as usize)
        .collect();
    let mut at = vec![None; sessions.len()];
    for (j, &s) in labelled.session.iter().enumerate() {
        at[s] = Some(j);
    }
    // Per configuration asked for, its tally on each group.
    let per_group = |c: usize| -> std::io::Result<Vec<Tally>> {
        let mut turns = vec![None; labelled.len()];
        r.record.outcomes.each(c, |s, h| {
            if let Some(j) = at[s as usize] {
                turns[j] = h.first.as_ref().map(|d| d.turn);
            }
        })?;
        let mut t = vec![Tally::default(); n_groups];
        for (j, (&label, hit)) in labelled.label.iter().zip(turns).enumerate() {
            t[group_of[j]].add(label, hit);
        }
        Ok(t)
    };
    let on = |t: &Tally| OnGroup { tp: t.tp, fp: t.fp };
    let base = per_group(r.baseline)?;
    let configs = &r.record.grid.configs;
    let advice = &r.advice;
    // What the summary shows for a family: the recommendation for the
    // baseline's family (or any family with --across-families), else its row.
    let family_pick = |f: &str| -> Option<usize> {
        if configs[r.baseline].family == f && !advice.across_families {
            return Some(r.recommended.unwrap_or(r.baseline));
        }
        advice
            .family_best
            .iter()
            .find(|(name, _)| name == f)
            .and_then(|(_, b)| *b)
    };
    // The own-detector pick made without group g, scored on g: the same
    // objective and false-positive cap (of the baseline on the other
    // groups), among the family's configurations.
    let family_members = |f: &str| -> Vec<usize> {
        (0..configs.len())
            .filter(|&c| configs[c].family == f)
            .collect()
    };
    let mut cache: std::collections::HashMap<usize, Vec<Tally>> = Default::default();
    for g in 0..n_groups {
        if base[g].loops == 0 {
            continue;
        }
        let (loops, clean) = (base[g].loops, base[g].clean);
        let b = on(&base[g]);
        let name = r.groups.names[g].clone();
        let own_family = (r.groups.by == crate::sweep::AGENT)
            .then(|| own_family(&name))
            .flatten()
            .filter(|f| configs.iter().any(|c| c.family == *f));
        let pick_for = |cache: &mut std::collections::HashMap<usize, Vec<Tally>>,
                        c: usize,
                        out_of_group: Option<(usize, OnGroup)>|
         -> std::io::Result<Pick> {
            if let std::collections::hash_map::Entry::Vacant(e) = cache.entry(c) {
                e.insert(per_group(c)?);
            }
            let t = on(&cache[&c][g]);
            Ok(Pick {
                config: c,
                distinguishable: apart(&t, &b, loops, clean),
                in_group: t,
                out_of_group,
            })
        };
        let overall = match r.recommended {
            Some(c) => {
                let held_out = advice.group_validation.as_ref().and_then(|gv| {
                    let f = gv.groups.iter().find(|f| f.name == name)?;
                    let chosen = *f.chosen.first()?;
                    Some((
                        chosen,
                        OnGroup {
                            tp: f.tally.tp,
                            fp: f.tally.fp,
                        },
                    ))
                });
                Some(pick_for(&mut cache, c, held_out)?)
            }
            None => None,
        };
        let own = match own_family.and_then(|f| family_pick(f).map(|c| (f, c))) {
            Some((f, c)) => {
                let members = family_members(f);
                let mut tallies = vec![Tally::default(); configs.len()];
                for &m in &members {
                    if let std::collections::hash_map::Entry::Vacant(e) = cache.entry(m) {
                        e.insert(per_group(m)?);
                    }
                    for (h, t) in cache[&m].iter().enumerate() {
                        if h != g {
                            tallies[m].merge(t);
                        }
                    }
                }
                let mut base_rest = Tally::default();
                for (h, t) in base.iter().enumerate() {
                    if h != g {
                        base_rest.merge(t);
                    }
                }
                let distance = super::analysis::distances(configs, r.baseline);
                let held_out =
                    recommend::pick(&members, &tallies, &distance, &r.objective, &base_rest)
                        .map(|m| (m, on(&cache[&m][g])));
                Some(pick_for(&mut cache, c, held_out)?)
            }
            None => None,
        };
        out.groups.push(GroupShip {
            name,
            loops,
            clean,
            baseline: b,
            own_family: own_family.map(str::to_string),
            own,
            overall,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_tell_apart_only_what_they_can() {
        let base = OnGroup { tp: 0, fp: 0 };
        // 1 of 5 more is within the noise; 5 of 5 against 0 of 5 is not.
        assert!(!apart(&OnGroup { tp: 1, fp: 0 }, &base, 5, 20));
        assert!(apart(&OnGroup { tp: 5, fp: 0 }, &base, 5, 20));
        // Many more false positives are a difference too.
        assert!(apart(&OnGroup { tp: 0, fp: 15 }, &base, 5, 20));
        assert_eq!(own_family("Gemini-CLI"), Some("gemini"));
        assert_eq!(own_family("claude-code"), None);
    }
}
