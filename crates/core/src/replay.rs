//! The replay engine: every configuration over every session, in parallel and
//! deterministically.
//!
//! Configurations are decomposed into their checks; checks with equal keys
//! (the same parameters) are run once per session and shared. The work list
//! is (session x distinct check), run on a local rayon pool; `collect` on an
//! indexed parallel iterator keeps job order, so results never depend on
//! `--jobs`. Policies are applied afterwards, per configuration and session.

use crate::detect::{Check, DetectorConfig, Policy, Prepared};
use crate::error::Result;
use crate::event::{Corpus, Label, Located, Provenance, Session};
use crate::input::{FileNames, InputList, ReadOptions, Streamed};
use crate::util::progress::Progress;
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;

/// How to replay (the threads are the command's [`Workers`]).
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// Report every detection (`clearDetection()` after each), not only up to the policy's stop.
    pub all: bool,
}

/// Where a policy ends a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopPoint {
    /// 1-based event index of the stopping detection.
    pub event: u32,
    /// Its turn.
    pub turn: u32,
}

/// One configuration on one session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// Detections: up to and including the stop (every one with `--all` or policy `ignore`).
    pub detections: Vec<Detection>,
    /// Where the policy stops the session (`stop`, `ask`, `warn:N`); `None` if it runs to the end.
    pub stop: Option<StopPoint>,
    /// Warnings issued before the stop (`warn:N`).
    pub warnings: u32,
    /// Detections nobody acted on (`ignore`).
    pub unheeded: u32,
    /// Judge checks due before the stop (inclusive).
    pub judge_due: u32,
    /// Of those, checks with no recorded verdict.
    pub judge_no_verdict: u32,
    /// Turns the recording spent after the stop point.
    pub turns_after_stop: u32,
    /// Tokens (`usage` records) the recording spent after the stop point.
    pub tokens_after_stop: u64,
}

impl Outcome {
    /// The first detection, if any (what decides true or false positive).
    pub fn first(&self) -> Option<&Detection> {
        self.detections.first()
    }
}

/// Results of a replay: `outcomes[config][session]`, sessions in corpus order.
#[derive(Debug)]
pub struct Replay {
    /// Configurations, in the order given.
    pub configs: Vec<DetectorConfig>,
    /// Outcomes per configuration, per session.
    pub outcomes: Vec<Vec<Outcome>>,
    /// Distinct checks that ran (after sharing).
    pub distinct_checks: usize,
}

/// One check on one session: its detections and, for judges, the due checks.
type CheckRun = (Vec<Detection>, Option<Vec<(u32, bool)>>);

/// What an [`Outcome`] holds of each firing (so a reader of outcomes need
/// not reach into `detect`).
pub use crate::detect::Detection;
/// The command's worker threads, which reading and replaying share.
pub use crate::util::pool::Workers;

/// A replay planned once for a list of configurations: their checks,
/// decomposed and shared (equal keys run once per session), batched, each with
/// the fewest detections its configurations' policies can still see.
pub struct Plan {
    configs: Vec<DetectorConfig>,
    checks: Vec<Box<dyn Check>>,
    limits: Vec<Option<usize>>,
    config_checks: Vec<Vec<usize>>,
    groups: Vec<Vec<usize>>,
    all: bool,
}

impl Plan {
    /// Plan the replay of `configs`.
    pub fn new(configs: Vec<DetectorConfig>, opts: &ReplayOptions) -> Result<Plan> {
        let mut checks: Vec<Box<dyn Check>> = Vec::new();
        let mut limits: Vec<Option<usize>> = Vec::new();
        let mut by_key: HashMap<String, usize> = HashMap::new();
        let mut config_checks: Vec<Vec<usize>> = Vec::new();
        for cfg in &configs {
            let mut ids = Vec::new();
            for c in cfg.checks()? {
                // What a policy can still see: `stop`/`ask` only the first
                // detection; `warn:N` at most N+1 strikes in one prompt (for checks
                // that can count per prompt); `ignore` and --all everything.
                let need = match (opts.all, cfg.policy()) {
                    (true, _) | (false, Policy::Ignore) => None,
                    (false, Policy::Stop | Policy::Ask) => Some(1),
                    (false, Policy::Warn(n)) if c.limit_per_prompt() => Some(n as usize + 1),
                    (false, Policy::Warn(_)) => None,
                };
                let key = c.key();
                let id = *by_key.entry(key).or_insert_with(|| {
                    checks.push(c);
                    limits.push(need);
                    checks.len() - 1
                });
                limits[id] = match (limits[id], need) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
                ids.push(id);
            }
            config_checks.push(ids);
        }
        // Checks with the same batch key and limit run in one pass per session
        // (e.g. content checks differing only in threshold).
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut by_batch: HashMap<String, usize> = HashMap::new();
        for (i, c) in checks.iter().enumerate() {
            match c.batch_key() {
                Some(k) => {
                    let k = format!("{k}|{:?}", limits[i]);
                    let g = *by_batch.entry(k).or_insert_with(|| {
                        groups.push(Vec::new());
                        groups.len() - 1
                    });
                    groups[g].push(i);
                }
                _ => groups.push(vec![i]),
            }
        }
        Ok(Plan {
            configs,
            checks,
            limits,
            config_checks,
            groups,
            all: opts.all,
        })
    }

    /// The configurations, in the order given.
    pub fn configs(&self) -> &[DetectorConfig] {
        &self.configs
    }

    /// Distinct checks (after sharing).
    pub fn distinct_checks(&self) -> usize {
        self.checks.len()
    }

    /// Every distinct check on one session (its groups spread over threads
    /// when `nested`), indexed by check.
    fn runs(&self, prepared: &Prepared, nested: bool) -> Vec<CheckRun> {
        let one = |g: &Vec<usize>| -> Vec<(usize, CheckRun)> {
            let leader = &self.checks[g[0]];
            // A lone check may answer both from one pass over the session.
            if g.len() == 1 {
                return vec![(g[0], leader.run_and_due(prepared, self.limits[g[0]]))];
            }
            let members: Vec<&dyn Check> = g.iter().map(|&i| self.checks[i].as_ref()).collect();
            let dets = leader.run_batch(&members, prepared, self.limits[g[0]]);
            g.iter()
                .zip(dets)
                .map(|(&i, d)| (i, (d, self.checks[i].judge_due(prepared))))
                .collect()
        };
        let parts: Vec<Vec<(usize, CheckRun)>> = if nested {
            self.groups.par_iter().map(one).collect()
        } else {
            self.groups.iter().map(one).collect()
        };
        let mut runs: Vec<CheckRun> = vec![(Vec::new(), None); self.checks.len()];
        for (i, r) in parts.into_iter().flatten() {
            runs[i] = r;
        }
        runs
    }

    /// Every configuration's outcome on one session, in configuration order:
    /// what a streamed replay computes before it lets the session go.
    pub fn session(&self, session: Arc<Session>) -> Vec<Outcome> {
        let prepared = Prepared::new(session);
        let runs = self.runs(&prepared, false);
        let session = &prepared.session;
        self.configs
            .iter()
            .zip(&self.config_checks)
            .map(|(cfg, ids)| {
                outcome_with(
                    session,
                    ids.len(),
                    |c| &runs[ids[c]].0[..],
                    |c| runs[ids[c]].1.as_deref(),
                    cfg.policy(),
                    self.all,
                )
            })
            .collect()
    }

    /// Every configuration's [`Brief`] on one session: what a sweep keeps,
    /// with nothing copied per configuration.
    pub fn session_briefs(&self, session: Arc<Session>) -> SessionBriefs {
        let prepared = Prepared::new(session);
        let runs = self.runs(&prepared, false);
        let session = &prepared.session;
        let briefs = self
            .configs
            .iter()
            .zip(&self.config_checks)
            .map(|(cfg, ids)| {
                let dets_of = |c: usize| &runs[ids[c]].0[..];
                let mut b = merge(
                    session,
                    ids.len(),
                    &dets_of,
                    |c| runs[ids[c]].1.as_deref(),
                    cfg.policy(),
                    self.all,
                    |_, _| {},
                );
                // Name the first detection by its distinct check.
                b.first = b.first.map(|(c, i)| (ids[c as usize] as u32, i));
                b
            })
            .collect();
        SessionBriefs { runs, briefs }
    }
}

/// Replay every configuration over the corpus, on `workers`.
pub fn replay(
    corpus: &Corpus,
    configs: Vec<DetectorConfig>,
    opts: &ReplayOptions,
    workers: &Workers,
    progress: &dyn Progress,
) -> Result<Replay> {
    let plan = Plan::new(configs, opts)?;
    let n_checks = plan.checks.len();
    let n_sessions = corpus.sessions.len();
    progress.set_length((n_sessions * n_checks) as u64);
    let pool = workers;
    // One task per session: its prepared data (UTF-16 content, tool keys) is
    // built once, shared by all checks, and dropped when the session is done,
    // so memory holds the parsed corpus once plus the sessions in flight.
    // Many checks on few sessions still spread over threads (nested).
    let nested = n_checks >= 16 && n_sessions < 4 * pool.threads();
    let runs: Vec<Vec<CheckRun>> = pool.install(|| {
        corpus
            .sessions
            .par_iter()
            .map(|s| {
                let runs = plan.runs(&Prepared::new(s.clone()), nested);
                progress.inc(n_checks as u64);
                runs
            })
            .collect()
    });
    // Check-major, so that scoring a configuration over every session reads
    // each of its checks' runs in sequence instead of chasing a pointer per
    // session (at 1,000 configurations that was most of a sweep).
    let mut by_check: Vec<Vec<CheckRun>> = (0..n_checks)
        .map(|_| Vec::with_capacity(n_sessions))
        .collect();
    for session_runs in runs {
        for (i, r) in session_runs.into_iter().enumerate() {
            by_check[i].push(r);
        }
    }
    let outcomes: Vec<Vec<Outcome>> = pool.install(|| {
        plan.configs
            .par_iter()
            .zip(plan.config_checks.par_iter())
            .map(|(cfg, ids)| {
                let policy = cfg.policy();
                (0..n_sessions)
                    .map(|si| {
                        outcome_with(
                            &corpus.sessions[si],
                            ids.len(),
                            |c| &by_check[ids[c]][si].0[..],
                            |c| by_check[ids[c]][si].1.as_deref(),
                            policy,
                            opts.all,
                        )
                    })
                    .collect()
            })
            .collect()
    });
    Ok(Replay {
        configs: plan.configs,
        outcomes,
        distinct_checks: n_checks,
    })
}

/// One session after a streamed replay: what the outputs need of it once
/// its records are gone.
#[derive(Debug, Clone)]
pub struct SessionOutcomes {
    /// Session id.
    pub id: String,
    /// Turns.
    pub turns: u32,
    /// Records.
    pub events: u32,
    /// Content came as whole messages.
    pub whole_messages: bool,
    /// The session's own (inline) label.
    pub inline_label: Option<Label>,
    /// Every configuration's outcome, in configuration order.
    pub outcomes: Vec<Outcome>,
    /// Where the record of every kept detection (and live detection) is,
    /// by event, sorted.
    pub places: Vec<(u32, Located)>,
    /// What the live agent's own detector did (`loop_detected` records).
    pub live: Vec<crate::event::LiveDetection>,
}

impl SessionOutcomes {
    /// Replay one session under `plan`, noting where its detections are.
    pub fn of(plan: &Plan, session: Arc<Session>, files: &FileNames) -> SessionOutcomes {
        let outcomes = plan.session(session.clone());
        let live = session.live_detections();
        let mut events: Vec<u32> = outcomes
            .iter()
            .flat_map(|o| o.detections.iter().map(|d| d.event))
            .chain(live.iter().map(|l| l.event))
            .collect();
        events.sort_unstable();
        events.dedup();
        let places = events
            .into_iter()
            .filter_map(|e| Some((e, files.event_provenance(&session, e)?.located())))
            .collect();
        SessionOutcomes {
            id: session.id.clone(),
            turns: session.turns,
            events: session.events.len() as u32,
            whole_messages: session.whole_messages,
            inline_label: session.inline_label,
            outcomes,
            places,
            live,
        }
    }

    /// Where the record of event `event` is, if a detection fell on it.
    pub fn place(&self, event: u32) -> Option<Provenance<'_>> {
        let i = self.places.binary_search_by_key(&event, |p| p.0).ok()?;
        Some(self.places[i].1.provenance())
    }
}

/// Read and replay at once: every session is replayed as soon as it is read
/// and then dropped, so memory holds the files in flight and the outcomes,
/// never the corpus. The same outcomes as [`replay`] over [`crate::input::read_corpus`].
/// The configurations are checked before the inputs' walk raises its error
/// (the list was walked once, by the command, for its guard on outputs too).
pub fn replay_stream(
    inputs: InputList,
    read: &ReadOptions,
    configs: Vec<DetectorConfig>,
    opts: &ReplayOptions,
    workers: &Workers,
    progress: &dyn Progress,
) -> Result<(Plan, Streamed<SessionOutcomes>)> {
    let plan = Plan::new(configs, opts)?;
    let files = inputs.files()?;
    let streamed = crate::input::stream_sessions(&files, read, workers, progress, &|s, files| {
        SessionOutcomes::of(&plan, s, files)
    })?;
    Ok((plan, streamed))
}

/// Merge the detections of a configuration's checks (by event; ties in check
/// order), number strikes per prompt, and apply the policy. Only what the
/// policy can see is cloned: up to the stop, or the first under `ignore`
/// (whose unheeded count covers all), or everything with `all`.
pub fn outcome(
    session: &Session,
    per: &[&[Detection]],
    dues: &[&Vec<(u32, bool)>],
    policy: Policy,
    all: bool,
) -> Outcome {
    let n = per.len().max(dues.len());
    outcome_with(
        session,
        n,
        |c| per.get(c).copied().unwrap_or(&[]),
        |c| dues.get(c).map(|d| &d[..]),
        policy,
        all,
    )
}

/// Most checks one configuration has (its merge state lives on the stack).
const MAX_CHECKS: usize = 16;

/// [`outcome`] over accessors, so the per-(configuration, session) merge of a
/// large sweep allocates nothing but the detections it keeps.
fn outcome_with<'a>(
    session: &Session,
    n: usize,
    dets_of: impl Fn(usize) -> &'a [Detection],
    dues_of: impl Fn(usize) -> Option<&'a [(u32, bool)]>,
    policy: Policy,
    all: bool,
) -> Outcome {
    let mut dets: Vec<Detection> = Vec::new();
    let brief = merge(session, n, &dets_of, dues_of, policy, all, |src, strike| {
        let mut d = src.clone();
        d.strike = strike;
        dets.push(d);
    });
    Outcome {
        detections: dets,
        ..brief.outcome
    }
}

/// An [`Outcome`] whose detections are not copied: the first one is named by
/// where it lies in the session's check runs, so a sweep copies it only once
/// however many configurations share it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Brief {
    /// The first detection: (distinct check, index in that check's run).
    pub first: Option<(u32, u32)>,
    /// The outcome, its `detections` left empty.
    pub outcome: Outcome,
}

/// Every configuration's [`Brief`] on one session, with the check runs its
/// first detections point into.
pub struct SessionBriefs {
    runs: Vec<CheckRun>,
    /// One per configuration, in configuration order.
    pub briefs: Vec<Brief>,
}

impl SessionBriefs {
    /// The detection a brief's `first` names.
    pub fn detection(&self, (check, i): (u32, u32)) -> &Detection {
        &self.runs[check as usize].0[i as usize]
    }
}

/// The merge of one configuration's checks: `keep(detection, strike)` is
/// told of every detection the policy can see, in order.
fn merge<'a, F>(
    session: &Session,
    n: usize,
    dets_of: &F,
    dues_of: impl Fn(usize) -> Option<&'a [(u32, bool)]>,
    policy: Policy,
    all: bool,
    mut keep: impl FnMut(&'a Detection, u32),
) -> Brief
where
    F: Fn(usize) -> &'a [Detection],
{
    assert!(
        n <= MAX_CHECKS,
        "a configuration has at most {MAX_CHECKS} checks"
    );
    let mut per: [&[Detection]; MAX_CHECKS] = [&[]; MAX_CHECKS];
    for (c, slot) in per.iter_mut().enumerate().take(n) {
        *slot = dets_of(c);
    }
    let per = &per[..n];
    let total: usize = per.iter().map(|d| d.len()).sum();
    let stop_strike = policy.stop_strike();
    let mut next = [0usize; MAX_CHECKS];
    let mut kept = 0usize;
    let mut first = None;
    let (mut prompt, mut strike) = (u32::MAX, 0u32);
    let mut stop: Option<(usize, StopPoint)> = None;
    loop {
        let pick = (0..per.len())
            .filter(|&c| next[c] < per[c].len())
            .min_by_key(|&c| (per[c][next[c]].event, c));
        let Some(c) = pick else { break };
        let src = &per[c][next[c]];
        next[c] += 1;
        if src.prompt != prompt {
            prompt = src.prompt;
            strike = 0;
        }
        strike += 1;
        let stops_here = stop.is_none() && stop_strike.is_some_and(|s| strike >= s);
        let keep_it =
            all || stops_here || stop.is_none() && (policy != Policy::Ignore || kept == 0);
        if keep_it {
            if kept == 0 {
                first = Some((c as u32, next[c] as u32 - 1));
            }
            keep(src, strike);
            kept += 1;
        }
        if stops_here {
            stop = Some((
                kept - 1,
                StopPoint {
                    event: src.event,
                    turn: src.turn,
                },
            ));
            if !all {
                break;
            }
        }
        if !all && policy == Policy::Ignore && kept > 0 {
            break;
        }
    }
    let (warnings, unheeded) = match (policy, stop) {
        (Policy::Warn(_), Some((i, _))) => (i as u32, 0),
        (Policy::Warn(_), None) => (kept as u32, 0),
        (Policy::Ignore, _) => (0, total as u32),
        _ => (0, 0),
    };
    let stop = stop.map(|(_, s)| s);
    let until = stop.map_or(u32::MAX, |s| s.event);
    let mut judge_due = 0;
    let mut judge_no_verdict = 0;
    for list in (0..n).filter_map(dues_of) {
        for (ev, had) in list.iter() {
            if *ev <= until {
                judge_due += 1;
                if !had {
                    judge_no_verdict += 1;
                }
            }
        }
    }
    let (turns_after_stop, tokens_after_stop) = match stop {
        Some(s) => after(session, s.event),
        None => (0, 0),
    };
    Brief {
        first,
        outcome: Outcome {
            detections: Vec::new(),
            stop,
            warnings,
            unheeded,
            judge_due,
            judge_no_verdict,
            turns_after_stop,
            tokens_after_stop,
        },
    }
}

/// Turns and `usage` tokens the recording spent after event `event`.
pub fn after(session: &Session, event: u32) -> (u32, u64) {
    let turn = session.events.get(event as usize - 1).map_or(0, |e| e.turn);
    let tokens = session.tokens_after(event);
    (session.turns.saturating_sub(turn), tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn det(event: u32, strike: u32) -> Detection {
        Detection {
            kind: "tool_call",
            event,
            turn: event,
            prompt: 1,
            strike,
            detail: String::new(),
        }
    }

    fn session() -> Session {
        let mut recs = Vec::new();
        for _ in 0..10 {
            recs.push((crate::event::Record::Turn, crate::event::Origin::default()));
            recs.push((
                crate::event::Record::Usage {
                    input_tokens: Some(10),
                    output_tokens: Some(1),
                },
                crate::event::Origin::default(),
            ));
        }
        Session::from_records("s".into(), recs)
    }

    #[test]
    fn policies_stop_where_they_should() {
        let s = session();
        let dets = [det(3, 1), det(5, 2), det(7, 3)];
        let o = outcome(&s, &[&dets[..]], &[], Policy::Stop, false);
        assert_eq!(o.stop, Some(StopPoint { event: 3, turn: 3 }));
        assert_eq!(o.detections.len(), 1);
        // events 4..20 hold usage records at even events 4,6,...,20 -> 9 records of 11 tokens
        assert_eq!(o.tokens_after_stop, 9 * 11);
        let o = outcome(&s, &[&dets[..]], &[], Policy::Warn(1), false);
        assert_eq!(o.stop.unwrap().event, 5);
        assert_eq!(o.warnings, 1);
        assert_eq!(o.detections.len(), 2);
        let o = outcome(&s, &[&dets[..]], &[], Policy::Ignore, false);
        assert_eq!(o.stop, None);
        assert_eq!(o.unheeded, 3);
        assert_eq!(o.tokens_after_stop, 0);
        let o = outcome(&s, &[&dets[..]], &[], Policy::Warn(5), false);
        assert_eq!((o.stop, o.warnings), (None, 3));
    }

    /// A sweep's briefs say what the replay's outcomes say: the same first
    /// detection, stop, counts and tokens, for every profile of every
    /// family under every kind of policy, on the fixtures.
    #[test]
    fn briefs_agree_with_outcomes() {
        // The workspace root's fixtures (this crate is crates/core).
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
        let corpus = crate::input::read_corpus(&[dir], &ReadOptions::default()).unwrap();
        let mut configs = Vec::new();
        for fam in crate::detect::families() {
            for prof in fam.profiles() {
                for policy in ["stop", "ask", "warn:1", "warn:3", "ignore"] {
                    let set = DetectorConfig::parse_sets(
                        fam.name(),
                        &[format!("{}={policy}", crate::detect::params::POLICY)],
                    )
                    .unwrap();
                    let cfg =
                        DetectorConfig::resolve(Some(fam.name()), Some(prof.name), &set).unwrap();
                    // Some families tie the policy to their own settings.
                    if cfg.checks().is_ok() {
                        configs.push(cfg);
                    }
                }
            }
        }
        let plan = Plan::new(configs, &ReplayOptions::default()).unwrap();
        let mut fired = 0;
        for s in &corpus.sessions {
            let outcomes = plan.session(s.clone());
            let briefs = plan.session_briefs(s.clone());
            for (o, b) in outcomes.iter().zip(&briefs.briefs) {
                let first = b.first.map(|f| briefs.detection(f));
                assert_eq!(
                    o.first().map(|d| (d.kind, d.event, d.turn, &d.detail)),
                    first.map(|d| (d.kind, d.event, d.turn, &d.detail)),
                    "{}",
                    s.id
                );
                fired += usize::from(first.is_some());
                let without_detections = Outcome {
                    detections: Vec::new(),
                    ..o.clone()
                };
                assert_eq!(b.outcome, without_detections, "{}", s.id);
            }
        }
        assert!(
            fired > 100,
            "the fixtures fire often enough to tell ({fired})"
        );
    }

    #[test]
    fn judge_dues_count_until_stop() {
        let s = session();
        let due = vec![(2, true), (3, false), (9, false)];
        let o = outcome(&s, &[&[det(3, 1)][..]], &[&due], Policy::Stop, false);
        assert_eq!((o.judge_due, o.judge_no_verdict), (2, 1));
    }
}
