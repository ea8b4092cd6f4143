//! Which constants to ship: the recommendation against a baseline, within the
//! baseline's family by default; each other family's best under the same
//! rule; unions of detectors by forward selection; and a stratified k-fold
//! cross-validation of the whole choosing procedure, so the figure a person
//! reads about the choice comes from sessions the choice never saw.
//!
//! Everything here works on [`Tally`]s: per configuration, the first
//! detection turn on each labelled session. Tallies over any subset of
//! sessions add up exactly, which is what folds (and shards later) need.
//! Pure and sequential: results never depend on `--jobs`.

use crate::event::Label;
use crate::score::metrics::Objective;
use crate::score::stats;
use rayon::prelude::*;

/// The labelled sessions of a corpus, in corpus order.
#[derive(Debug, Clone, Default)]
pub struct Labelled {
    /// Corpus index of each labelled session.
    pub session: Vec<usize>,
    /// Its label.
    pub label: Vec<Label>,
}

impl Labelled {
    /// The labelled sessions of `by_session` (corpus order).
    pub fn from_labels(by_session: &[Option<Label>]) -> Labelled {
        let mut l = Labelled::default();
        for (i, lab) in by_session.iter().enumerate() {
            if let Some(lab) = lab {
                l.session.push(i);
                l.label.push(*lab);
            }
        }
        l
    }

    /// Number of labelled sessions.
    pub fn len(&self) -> usize {
        self.session.len()
    }

    /// No labelled session.
    pub fn is_empty(&self) -> bool {
        self.session.is_empty()
    }

    /// Labelled loops and clean sessions.
    pub fn counts(&self) -> (usize, usize) {
        let loops = self.label.iter().filter(|l| l.is_loop).count();
        (loops, self.len() - loops)
    }
}

/// What one configuration scored on a set of labelled sessions; adds up exactly.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    /// Labelled loops seen.
    pub loops: u64,
    /// Labelled clean sessions seen.
    pub clean: u64,
    /// Loops with a detection (early ones included).
    pub tp: u64,
    /// Clean sessions with a detection.
    pub fp: u64,
    /// Turns-to-detection of detected loops with an onset.
    pub ttd: TtdCounts,
}

/// Turns-to-detection as a multiset: each distinct value with how often it
/// came, in value order. A sweep tallies every configuration at once (and
/// again per fold), and the values one by one were 8 bytes a detected loop
/// per configuration: what grew its memory most with the sessions (a
/// 1,000-configuration sweep, benches/README.md). The distinct values are
/// bounded by the sessions' lengths, and the multiset is all a tally needs:
/// it adds up exactly and gives the same median.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TtdCounts {
    counts: Vec<(i64, u64)>,
}

impl TtdCounts {
    /// Count `value` once more.
    pub fn add(&mut self, value: i64) {
        self.add_n(value, 1);
    }

    fn add_n(&mut self, value: i64, n: u64) {
        match self.counts.binary_search_by_key(&value, |&(v, _)| v) {
            Ok(i) => self.counts[i].1 += n,
            Err(i) => self.counts.insert(i, (value, n)),
        }
    }

    /// Add another multiset's values.
    pub fn merge(&mut self, other: &TtdCounts) {
        for &(v, n) in &other.counts {
            self.add_n(v, n);
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.counts.iter().map(|&(_, n)| n as usize).sum()
    }

    /// No value.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// Every value, smallest first, repeated as often as it came.
    pub fn sorted(&self) -> impl Iterator<Item = i64> + '_ {
        self.counts
            .iter()
            .flat_map(|&(v, n)| std::iter::repeat_n(v, n as usize))
    }

    /// The value of rank `k` (0: the smallest).
    fn at_rank(&self, mut k: u64) -> i64 {
        for &(v, n) in &self.counts {
            if k < n {
                return v;
            }
            k -= n;
        }
        unreachable!("rank within the count")
    }

    /// The median, as [`stats::median`] gives it over the sorted values
    /// (the mean of the middle two for an even count).
    pub fn median(&self) -> Option<f64> {
        let n = self.len() as u64;
        match n {
            0 => None,
            _ if n % 2 == 1 => Some(self.at_rank(n / 2) as f64),
            _ => Some((self.at_rank(n / 2 - 1) + self.at_rank(n / 2)) as f64 / 2.0),
        }
    }
}

impl Tally {
    /// Count one labelled session whose first detection (if any) is at `hit` (a turn).
    pub fn add(&mut self, label: Label, hit: Option<u32>) {
        if label.is_loop {
            self.loops += 1;
            if let Some(turn) = hit {
                self.tp += 1;
                if let Some(on) = label.onset_turn {
                    self.ttd.add(turn as i64 - on as i64 + 1);
                }
            }
        } else {
            self.clean += 1;
            if hit.is_some() {
                self.fp += 1;
            }
        }
    }

    /// Add another tally (of other sessions).
    pub fn merge(&mut self, other: &Tally) {
        self.loops += other.loops;
        self.clean += other.clean;
        self.tp += other.tp;
        self.fp += other.fp;
        self.ttd.merge(&other.ttd);
    }

    /// TP / loops (0 without loops).
    pub fn recall(&self) -> f64 {
        ratio(self.tp, self.loops)
    }

    /// TP / (TP + FP) (0 when nothing fired).
    pub fn precision(&self) -> f64 {
        ratio(self.tp, self.tp + self.fp)
    }

    /// Harmonic mean of precision and recall.
    pub fn f1(&self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r > 0.0 {
            2.0 * p * r / (p + r)
        } else {
            0.0
        }
    }

    /// FP / labelled clean sessions (`None` without clean sessions).
    pub fn fp_rate(&self) -> Option<f64> {
        (self.clean > 0).then(|| ratio(self.fp, self.clean))
    }

    /// Median turns-to-detection.
    pub fn ttd_median(&self) -> Option<f64> {
        self.ttd.median()
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// First detection turn of every configuration on every labelled session:
/// `hits[config][i]` for labelled session i.
pub type Hits = Vec<Vec<Option<u32>>>;

/// Tally of `hits` (one configuration) over the labelled sessions `keep` selects.
pub fn tally(labelled: &Labelled, hits: &[Option<u32>], keep: impl Fn(usize) -> bool) -> Tally {
    let mut t = Tally::default();
    for (i, (&label, &hit)) in labelled.label.iter().zip(hits).enumerate() {
        if keep(i) {
            t.add(label, hit);
        }
    }
    t
}

/// Whether `a` scores strictly better than `b` under the objective (the
/// false-positive cap aside).
pub fn beats(objective: &Objective, a: &Tally, b: &Tally) -> bool {
    compare_scores(objective, &Scored::of(a), &Scored::of(b)).is_lt()
}

/// The rule's false-positive cap, given the baseline's tally (`None`: no cap).
pub fn cap_of(objective: &Objective, baseline: &Tally) -> Option<u64> {
    cap(objective, baseline)
}

/// The rule's false-positive cap, given the baseline's tally.
fn cap(objective: &Objective, baseline: &Tally) -> Option<u64> {
    match objective {
        Objective::Default => Some(baseline.fp),
        Objective::MaxFalsePositives(n) => Some(*n as u64),
        // A share of the clean sessions chosen on (the baseline's tally has
        // them all), so a fold or a smaller corpus gets its share; the
        // epsilon keeps 0.29 x 100 at 29, not 28.
        Objective::FpRate(rate) => Some((rate * baseline.clean as f64 + 1e-9).floor() as u64),
        Objective::F1 => None,
    }
}

/// Order two tallies by the objective's scores alone: `Less` means `a` is better.
/// A tally with its median turns-to-detection, worked out once: choosing
/// compares each candidate with many others.
struct Scored<'a> {
    tally: &'a Tally,
    ttd: f64,
}

impl<'a> Scored<'a> {
    fn of(tally: &'a Tally) -> Scored<'a> {
        Scored {
            tally,
            ttd: tally.ttd_median().unwrap_or(f64::INFINITY),
        }
    }
}

fn compare_scores(objective: &Objective, a: &Scored, b: &Scored) -> std::cmp::Ordering {
    let (ta, tb) = (a.tally, b.tally);
    let primary = match objective {
        Objective::F1 => tb.f1().total_cmp(&ta.f1()).then(ta.fp.cmp(&tb.fp)),
        _ => tb.recall().total_cmp(&ta.recall()),
    };
    primary.then(a.ttd.total_cmp(&b.ttd))
}

/// Order two candidates: scores, then fewer changed values, then grid order.
fn compare(
    objective: &Objective,
    (a, sa, da): (usize, &Scored, usize),
    (b, sb, db): (usize, &Scored, usize),
) -> std::cmp::Ordering {
    compare_scores(objective, sa, sb)
        .then(da.cmp(&db))
        .then(a.cmp(&b))
}

/// Pick the best of `candidates` under `objective`, with the baseline's
/// tally setting the false-positive cap of the default rule. `distance[c]`
/// is how many parameter values configuration c changes from its reference
/// (the baseline, for its own family). `None` when no candidate meets the cap.
pub fn pick(
    candidates: &[usize],
    tallies: &[Tally],
    distance: &[usize],
    objective: &Objective,
    baseline: &Tally,
) -> Option<usize> {
    let cap = cap(objective, baseline);
    let scored: Vec<(usize, Scored)> = candidates
        .iter()
        .filter(|&&c| cap.is_none_or(|m| tallies[c].fp <= m))
        .map(|&c| (c, Scored::of(&tallies[c])))
        .collect();
    scored
        .iter()
        .min_by(|(a, sa), (b, sb)| {
            compare(objective, (*a, sa, distance[*a]), (*b, sb, distance[*b]))
        })
        .map(|(c, _)| *c)
}

/// A union of configurations: a session is flagged when any member fires, at
/// the earliest member's turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Union {
    /// Member configurations, in the order forward selection added them.
    pub members: Vec<usize>,
    /// First detection turn per labelled session.
    pub hits: Vec<Option<u32>>,
}

fn union_hits(a: &[Option<u32>], b: &[Option<u32>]) -> Vec<Option<u32>> {
    a.iter()
        .zip(b)
        .map(|(x, y)| match (x, y) {
            (Some(x), Some(y)) => Some(*x.min(y)),
            (x, y) => x.or(*y),
        })
        .collect()
}

/// Forward selection of a union of up to `max_members` configurations, at
/// most one per family (`family[c]`), on the labelled sessions `keep`
/// selects. Starts from the best single configuration of `candidates`; adds
/// the member that most improves the union under the objective while it
/// stays within the cap (and, with a `guard`, no worse than the baseline in
/// any group); stops when nothing improves it.
#[allow(clippy::too_many_arguments)]
pub fn forward_union(
    guard: Option<&GroupGuard>,
    labelled: &Labelled,
    hits: &Hits,
    candidates: &[usize],
    family: &[&str],
    distance: &[usize],
    objective: &Objective,
    baseline: usize,
    max_members: usize,
    keep: &(dyn Fn(usize) -> bool + Sync),
) -> Option<Union> {
    let tallies: Vec<Tally> = hits.par_iter().map(|h| tally(labelled, h, keep)).collect();
    let base = &tallies[baseline];
    let cap = cap(objective, base);
    let admitted = |h: &[Option<u32>]| guard.is_none_or(|g| g.admits(labelled, h, keep));
    let firsts: Vec<usize> = candidates
        .par_iter()
        .copied()
        .filter(|&c| admitted(&hits[c]))
        .collect();
    let first = pick(&firsts, &tallies, distance, objective, base)?;
    let mut u = Union {
        members: vec![first],
        hits: hits[first].clone(),
    };
    let mut current = tallies[first].clone();
    while u.members.len() < max_members {
        let mut best: Option<(usize, Vec<Option<u32>>, Tally, f64)> = None;
        let now = Scored::of(&current);
        for &c in candidates {
            if u.members.iter().any(|&m| family[m] == family[c]) {
                continue;
            }
            let h = union_hits(&u.hits, &hits[c]);
            let t = tally(labelled, &h, keep);
            if cap.is_some_and(|m| t.fp > m) || !admitted(&h) {
                continue;
            }
            // Only a strict improvement of the scores earns a member.
            let ttd = Scored::of(&t).ttd;
            let scored = Scored { tally: &t, ttd };
            if !compare_scores(objective, &scored, &now).is_lt() {
                continue;
            }
            let better = match &best {
                None => true,
                Some((b, _, bt, bttd)) => {
                    let held = Scored {
                        tally: bt,
                        ttd: *bttd,
                    };
                    compare(
                        objective,
                        (c, &scored, distance[c]),
                        (*b, &held, distance[*b]),
                    )
                    .is_lt()
                }
            };
            if better {
                best = Some((c, h, t, ttd));
            }
        }
        let Some((c, h, t, _)) = best else { break };
        u.members.push(c);
        u.hits = h;
        current = t;
    }
    Some(u)
}

/// One configuration built by adding rule settings (steps) to a start.
#[derive(Debug, Clone, PartialEq)]
pub struct RulePath {
    /// The steps added, in the order the search added them.
    pub steps: Vec<usize>,
    /// First detection turn per labelled session of the start plus `steps`.
    pub hits: Vec<Option<u32>>,
}

/// Hits of each set of steps (the start plus them), in the order asked.
pub type Evaluate<'a> = dyn Fn(&[Vec<usize>]) -> Vec<Vec<Option<u32>>> + 'a;

/// Greedy forward search of one configuration: from the start (no step),
/// add the step that most improves the configuration under the objective,
/// within the cap set by `baseline` (the recommendation's baseline on the
/// same sessions) and, with a `guard`, vetoed by no group; stop when no step
/// improves it. A step that `conflicts` with one already taken (it sets the
/// same parameter) is not tried. `evaluate` gives the hits of each set of
/// steps (the start plus them), one round at a time, so the caller can
/// replay a round's configurations together and share their unchanged
/// rules. While the start itself breaks the rule, the best step that meets
/// it is taken; `None` when nothing ever meets it.
#[allow(clippy::too_many_arguments)]
pub fn forward_rules(
    steps: usize,
    conflicts: &dyn Fn(usize, usize) -> bool,
    evaluate: &Evaluate,
    guard: Option<&GroupGuard>,
    labelled: &Labelled,
    objective: &Objective,
    baseline: &Tally,
    keep: &(dyn Fn(usize) -> bool + Sync),
) -> Option<RulePath> {
    let cap = cap(objective, baseline);
    let meets = |t: &Tally, h: &[Option<u32>]| {
        cap.is_none_or(|m| t.fp <= m) && guard.is_none_or(|g| g.admits(labelled, h, keep))
    };
    let mut path = RulePath {
        steps: Vec::new(),
        hits: evaluate(&[Vec::new()]).pop()?,
    };
    let mut current = tally(labelled, &path.hits, keep);
    let mut ok = meets(&current, &path.hits);
    loop {
        let tried: Vec<usize> = (0..steps)
            .filter(|&s| !path.steps.iter().any(|&p| p == s || conflicts(p, s)))
            .collect();
        if tried.is_empty() {
            break;
        }
        let sets: Vec<Vec<usize>> = tried
            .iter()
            .map(|&s| {
                let mut v = path.steps.clone();
                v.push(s);
                v
            })
            .collect();
        let now = Scored::of(&current);
        let mut best: Option<(usize, Vec<Option<u32>>, Tally)> = None;
        for (&s, h) in tried.iter().zip(evaluate(&sets)) {
            let t = tally(labelled, &h, keep);
            if !meets(&t, &h) {
                continue;
            }
            let scored = Scored::of(&t);
            // Only a strict improvement earns a step (any step that meets
            // the rule, while the current configuration does not).
            if ok && !compare_scores(objective, &scored, &now).is_lt() {
                continue;
            }
            // On equal scores the step tried first (grid order) stays.
            if best.as_ref().is_none_or(|(_, _, bt)| {
                compare_scores(objective, &scored, &Scored::of(bt)).is_lt()
            }) {
                best = Some((s, h, t));
            }
        }
        let Some((s, h, t)) = best else { break };
        path.steps.push(s);
        path.hits = h;
        current = t;
        ok = true;
    }
    ok.then_some(path)
}

/// The out-of-sample estimate of a choosing procedure.
#[derive(Debug, Clone, PartialEq)]
pub struct CrossValidation {
    /// Folds used.
    pub folds: usize,
    /// The seed of the fold assignment.
    pub seed: u64,
    /// Held-out tallies of every fold's choice, added up.
    pub pooled: Tally,
    /// What each fold chose (configuration indices; a union lists its members).
    pub chosen: Vec<Vec<usize>>,
}

/// How many folds `requested` can give: at most the labelled loops (each
/// fold needs one); fewer than 2 means no cross-validation.
pub fn fold_count(requested: usize, labelled: &Labelled) -> Option<usize> {
    let (loops, _) = labelled.counts();
    let k = requested.min(loops);
    (k >= 2).then_some(k)
}

/// A choosing procedure: given which labelled sessions it may see, the
/// members it chose and their hits on every labelled session.
pub type Chooser<'a> =
    dyn Fn(&(dyn Fn(usize) -> bool + Sync)) -> Option<(Vec<usize>, Vec<Option<u32>>)> + 'a;

/// Stratified k-fold cross-validation of `choose`: in each fold it chooses on
/// the other folds (`keep` says which labelled sessions it may see) and the
/// choice's hits are scored on the held-out fold.
pub fn cross_validate(
    labelled: &Labelled,
    folds: usize,
    seed: u64,
    choose: &Chooser,
) -> CrossValidation {
    let is_loop: Vec<bool> = labelled.label.iter().map(|l| l.is_loop).collect();
    let fold = stats::stratified_folds(&is_loop, folds, seed);
    let mut pooled = Tally::default();
    let mut chosen = Vec::new();
    for k in 0..folds {
        let train = |i: usize| fold[i] != k;
        let test = |i: usize| fold[i] == k;
        match choose(&train) {
            Some((members, hits)) => {
                pooled.merge(&tally(labelled, &hits, test));
                chosen.push(members);
            }
            None => {
                // Nothing met the rule on the training folds: the procedure
                // ships nothing, which detects nothing on the held-out fold.
                pooled.merge(&tally(labelled, &vec![None; labelled.len()], test));
                chosen.push(Vec::new());
            }
        }
    }
    CrossValidation {
        folds,
        seed,
        pooled,
        chosen,
    }
}

/// Whether a choice may help one group of sessions by hurting another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Guard {
    /// No group may lose a caught loop or gain a false positive against the
    /// baseline (the default; also named `strict`).
    #[default]
    PerGroup,
    /// Only the pooled counts matter (the rule before groups existed).
    Pooled,
    /// A group vetoes only a loss its sample size cannot explain: recall
    /// below the lower end of the baseline's 95% Wilson interval in that
    /// group, or a false-positive rate above its upper end. One session
    /// more or less in a small group is noise; the strict rule let it veto.
    Interval,
}

impl Guard {
    /// `per-group`, `pooled` or `interval`.
    pub fn name(self) -> &'static str {
        match self {
            Guard::PerGroup => "per-group",
            Guard::Pooled => "pooled",
            Guard::Interval => "interval",
        }
    }

    /// Parse a name as [`Guard::name`] writes it (`strict` is `per-group`).
    pub fn parse(s: &str) -> Option<Guard> {
        match s {
            "per-group" | "strict" => Some(Guard::PerGroup),
            "pooled" => Some(Guard::Pooled),
            "interval" => Some(Guard::Interval),
            _ => None,
        }
    }

    /// Whether a candidate is checked group by group at all.
    pub fn per_group(self) -> bool {
        self != Guard::Pooled
    }
}

/// What one configuration caught in one group of labelled sessions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupCount {
    /// Labelled loops.
    pub loops: u64,
    /// Labelled clean sessions.
    pub clean: u64,
    /// Loops with a detection.
    pub tp: u64,
    /// Clean sessions with a detection.
    pub fp: u64,
}

impl GroupCount {
    /// Whether `self` catches fewer loops or has more false positives than `base`.
    pub fn worse_than(&self, base: &GroupCount) -> bool {
        self.tp < base.tp || self.fp > base.fp
    }

    /// Whether `self` is worse than `base` by more than the group's size
    /// allows: its recall below the lower end of `base`'s Wilson interval, or
    /// its false-positive rate above the upper end.
    pub fn beyond_interval(&self, base: &GroupCount) -> bool {
        let lost = self.tp < base.tp
            && stats::wilson(base.tp, self.loops)
                .is_some_and(|(lo, _)| (self.tp as f64) < lo * self.loops as f64);
        let gained = self.fp > base.fp
            && stats::wilson(base.fp, self.clean)
                .is_some_and(|(_, hi)| (self.fp as f64) > hi * self.clean as f64);
        lost || gained
    }
}

/// One group the interval guard weighed: a candidate's counts there are
/// worse than the baseline's, within or beyond the group's interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Weighed {
    /// The group (index).
    pub group: usize,
    /// The candidate's counts.
    pub candidate: GroupCount,
    /// The baseline's.
    pub baseline: GroupCount,
    /// Whether the loss is beyond the interval (a veto).
    pub vetoes: bool,
}

/// Per group, what `hits` caught among the labelled sessions `keep` selects;
/// `group[i]` is labelled session i's group, `groups` how many there are.
pub fn group_counts(
    labelled: &Labelled,
    group: &[u32],
    groups: usize,
    hits: &[Option<u32>],
    keep: impl Fn(usize) -> bool,
) -> Vec<GroupCount> {
    let mut out = vec![GroupCount::default(); groups];
    for (i, (label, hit)) in labelled.label.iter().zip(hits).enumerate() {
        if !keep(i) {
            continue;
        }
        let g = &mut out[group[i] as usize];
        if label.is_loop {
            g.loops += 1;
            g.tp += hit.is_some() as u64;
        } else {
            g.clean += 1;
            g.fp += hit.is_some() as u64;
        }
    }
    out
}

/// The per-group guard over some labelled sessions: the baseline's count in
/// every group, which a candidate may not fall below.
pub struct GroupGuard<'a> {
    group: &'a [u32],
    base: Vec<GroupCount>,
    rule: Guard,
}

impl<'a> GroupGuard<'a> {
    /// The guard set by `baseline_hits` on the labelled sessions `keep` selects.
    pub fn new(
        labelled: &Labelled,
        group: &'a [u32],
        groups: usize,
        baseline_hits: &[Option<u32>],
        keep: &dyn Fn(usize) -> bool,
    ) -> GroupGuard<'a> {
        GroupGuard::with_rule(
            Guard::PerGroup,
            labelled,
            group,
            groups,
            baseline_hits,
            keep,
        )
    }

    /// [`GroupGuard::new`] under `rule` (`pooled` acts as `per-group`: the
    /// caller builds no guard for it).
    pub fn with_rule(
        rule: Guard,
        labelled: &Labelled,
        group: &'a [u32],
        groups: usize,
        baseline_hits: &[Option<u32>],
        keep: &dyn Fn(usize) -> bool,
    ) -> GroupGuard<'a> {
        GroupGuard {
            group,
            base: group_counts(labelled, group, groups, baseline_hits, keep),
            rule,
        }
    }

    /// The rule it applies.
    pub fn rule(&self) -> Guard {
        self.rule
    }

    /// The groups (indices) that veto `hits`: worse than the baseline at all
    /// (`per-group`), or beyond the group's interval (`interval`).
    pub fn hurt(
        &self,
        labelled: &Labelled,
        hits: &[Option<u32>],
        keep: &dyn Fn(usize) -> bool,
    ) -> Vec<usize> {
        self.weigh(labelled, hits, keep)
            .into_iter()
            .filter(|w| w.vetoes)
            .map(|w| w.group)
            .collect()
    }

    /// Every group where `hits` does worse than the baseline, each with
    /// whether it vetoes under the guard's rule.
    pub fn weigh(
        &self,
        labelled: &Labelled,
        hits: &[Option<u32>],
        keep: &dyn Fn(usize) -> bool,
    ) -> Vec<Weighed> {
        group_counts(labelled, self.group, self.base.len(), hits, keep)
            .into_iter()
            .zip(&self.base)
            .enumerate()
            .filter(|(_, (c, b))| c.worse_than(b))
            .map(|(g, (c, b))| Weighed {
                group: g,
                candidate: c,
                baseline: *b,
                vetoes: match self.rule {
                    Guard::Interval => c.beyond_interval(b),
                    Guard::PerGroup | Guard::Pooled => true,
                },
            })
            .collect()
    }

    /// Whether `hits` does at least as well as the baseline in every group.
    pub fn admits(
        &self,
        labelled: &Labelled,
        hits: &[Option<u32>],
        keep: &dyn Fn(usize) -> bool,
    ) -> bool {
        self.hurt(labelled, hits, keep).is_empty()
    }
}

/// Leave-one-group-out validation of a choosing procedure: for each group
/// with a labelled session, choose on the other groups, score the choice on
/// that group.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupValidation {
    /// The key sessions are grouped by.
    pub by: String,
    /// Every held-out group's tally, added up.
    pub pooled: Tally,
    /// Per group (name order): its held-out tally and what was chosen without it.
    pub groups: Vec<GroupFold>,
}

/// One group held out.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupFold {
    /// The group's name.
    pub name: String,
    /// The choice's tally on this group.
    pub tally: Tally,
    /// What was chosen on the other groups (configuration indices; empty:
    /// nothing met the rule, which detects nothing).
    pub chosen: Vec<usize>,
}

/// [`GroupValidation`] of `choose`; `None` with fewer than two groups that
/// have labelled sessions (nothing to leave out).
pub fn leave_one_group_out(
    labelled: &Labelled,
    by: &str,
    group: &[u32],
    names: &[String],
    choose: &Chooser,
) -> Option<GroupValidation> {
    let present: Vec<usize> = (0..names.len())
        .filter(|&g| group.iter().any(|&x| x as usize == g))
        .collect();
    if present.len() < 2 {
        return None;
    }
    let mut pooled = Tally::default();
    let mut groups = Vec::new();
    for g in present {
        let train = |i: usize| group[i] as usize != g;
        let test = |i: usize| group[i] as usize == g;
        let (chosen, hits) =
            choose(&train).unwrap_or_else(|| (Vec::new(), vec![None; labelled.len()]));
        let t = tally(labelled, &hits, test);
        pooled.merge(&t);
        groups.push(GroupFold {
            name: names[g].clone(),
            tally: t,
            chosen,
        });
    }
    Some(GroupValidation {
        by: by.to_string(),
        pooled,
        groups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lab(is_loop: bool, onset: Option<u32>) -> Label {
        Label {
            is_loop,
            onset_turn: onset,
        }
    }

    /// 4 loops (onset 2) then 4 clean sessions.
    fn labelled() -> Labelled {
        let mut l = Labelled::default();
        for i in 0..8 {
            l.session.push(i);
            l.label.push(if i < 4 {
                lab(true, Some(2))
            } else {
                lab(false, None)
            });
        }
        l
    }

    #[test]
    fn tallies_add_up_over_any_split() {
        let l = labelled();
        let h = vec![Some(3), None, Some(2), Some(9), None, Some(1), None, None];
        let all = tally(&l, &h, |_| true);
        assert_eq!((all.loops, all.clean, all.tp, all.fp), (4, 4, 3, 1));
        assert_eq!(all.ttd.sorted().collect::<Vec<_>>(), vec![1, 2, 8]);
        assert_eq!(all.ttd_median(), Some(2.0));
        assert_eq!(all.fp_rate(), Some(0.25));
        let mut parts = tally(&l, &h, |i| i % 3 == 0);
        parts.merge(&tally(&l, &h, |i| i % 3 != 0));
        assert_eq!(
            (parts.loops, parts.clean, parts.tp, parts.fp),
            (all.loops, all.clean, all.tp, all.fp)
        );
        assert_eq!(parts.ttd, all.ttd);
    }

    proptest::proptest! {
        /// Counted by value, turns-to-detection give the median, the count
        /// and the sorted values the list of them gave, merged or not.
        #[test]
        fn ttd_counts_are_the_values_as_a_multiset(
            a in proptest::collection::vec(-40i64..60, 0..50),
            b in proptest::collection::vec(-40i64..60, 0..50),
        ) {
            let counts = |v: &[i64]| {
                let mut c = TtdCounts::default();
                v.iter().for_each(|&x| c.add(x));
                c
            };
            let mut merged = counts(&a);
            merged.merge(&counts(&b));
            let mut all: Vec<i64> = a.iter().chain(&b).copied().collect();
            proptest::prop_assert_eq!(merged.median(), stats::median_unsorted(&mut all.clone()));
            all.sort_unstable();
            proptest::prop_assert_eq!(merged.len(), all.len());
            proptest::prop_assert_eq!(merged.is_empty(), all.is_empty());
            proptest::prop_assert_eq!(merged.sorted().collect::<Vec<_>>(), all.clone());
            proptest::prop_assert_eq!(merged.median(), stats::median(&all));
            proptest::prop_assert_eq!(merged, counts(&all));
        }
    }

    #[test]
    fn pick_respects_the_baselines_cap_then_recall_ttd_distance() {
        let l = labelled();
        let hits: Hits = vec![
            // 0: baseline: 1 loop, 1 FP
            vec![Some(5), None, None, None, Some(1), None, None, None],
            // 1: 3 loops, 2 FP (over the cap)
            vec![
                Some(2),
                Some(2),
                Some(2),
                None,
                Some(1),
                Some(1),
                None,
                None,
            ],
            // 2: 2 loops late, 1 FP
            vec![Some(9), Some(9), None, None, None, Some(1), None, None],
            // 3: 2 loops early, 0 FP, far from the baseline
            vec![Some(2), Some(3), None, None, None, None, None, None],
            // 4: same as 3, closer
            vec![Some(2), Some(3), None, None, None, None, None, None],
        ];
        let t: Vec<Tally> = hits.iter().map(|h| tally(&l, h, |_| true)).collect();
        let dist = [0, 1, 1, 3, 2];
        let all = [0, 1, 2, 3, 4];
        assert_eq!(pick(&all, &t, &dist, &Objective::Default, &t[0]), Some(4));
        assert_eq!(
            pick(&all, &t, &dist, &Objective::MaxFalsePositives(2), &t[0]),
            Some(1)
        );
        // Nothing under a cap of 0 but 3 and 4; nothing at all among {1}.
        assert_eq!(pick(&[1], &t, &dist, &Objective::Default, &t[0]), None);
    }

    #[test]
    fn union_fires_at_the_earliest_member_and_needs_improvement() {
        let l = labelled();
        let hits: Hits = vec![
            // 0 (family a): the baseline, catches loops 0,1 late, 1 FP
            vec![Some(8), Some(8), None, None, Some(1), None, None, None],
            // 1 (family b): catches loops 2,3, no FP
            vec![None, None, Some(2), Some(3), None, None, None, None],
            // 2 (family b): catches loop 0 early, no FP
            vec![Some(2), None, None, None, None, None, None, None],
            // 3 (family c): catches everything but with 3 FP
            vec![Some(2); 8],
        ];
        let fam = ["a", "b", "b", "c"];
        let dist = [0, 0, 0, 0];
        let u = forward_union(
            None,
            &l,
            &hits,
            &[0, 1, 2, 3],
            &fam,
            &dist,
            &Objective::Default,
            0,
            3,
            &|_| true,
        )
        .unwrap();
        // Best single: 1 and 0 both catch 2 loops; 1 is earlier (ttd 1.5 vs 7).
        // Adding 0 (family a) raises recall to 4/4 with 1 FP (the cap);
        // 2 is family b like 1; 3 breaks the cap.
        assert_eq!(u.members, vec![1, 0]);
        assert_eq!(
            u.hits,
            vec![
                Some(8),
                Some(8),
                Some(2),
                Some(3),
                Some(1),
                None,
                None,
                None
            ]
        );
    }

    #[test]
    fn cross_validation_scores_each_choice_on_its_held_out_fold() {
        let l = labelled();
        // Always choose a configuration that fires on sessions 0 and 4 only.
        let hits = vec![Some(2), None, None, None, Some(1), None, None, None];
        let cv = cross_validate(&l, 2, 3, &|_keep| Some((vec![7], hits.clone())));
        assert_eq!(cv.chosen, vec![vec![7], vec![7]]);
        // Every labelled session is held out exactly once.
        assert_eq!((cv.pooled.loops, cv.pooled.clean), (4, 4));
        assert_eq!((cv.pooled.tp, cv.pooled.fp), (1, 1));
        // The choice only ever sees its training folds.
        let seen = std::cell::RefCell::new(Vec::new());
        cross_validate(&l, 4, 3, &|keep| {
            seen.borrow_mut().push((0..8).filter(|&i| keep(i)).count());
            None
        });
        assert_eq!(*seen.borrow(), vec![6, 6, 6, 6]);
        assert_eq!(fold_count(5, &l), Some(4));
        assert_eq!(fold_count(1, &l), None);
    }

    /// Sessions 0-3 are group 0 (loops 0, 1; clean 2, 3), 4-7 group 1
    /// (loops 4, 5; clean 6, 7).
    fn two_groups() -> (Labelled, Vec<u32>) {
        let mut l = Labelled::default();
        for i in 0..8 {
            l.session.push(i);
            l.label.push(if i % 4 < 2 {
                lab(true, Some(1))
            } else {
                lab(false, None)
            });
        }
        (l, vec![0, 0, 0, 0, 1, 1, 1, 1])
    }

    #[test]
    fn the_guard_refuses_helping_one_group_by_hurting_another() {
        let (l, group) = two_groups();
        let hits: Hits = vec![
            // 0: the baseline: one loop of each group.
            vec![Some(3), None, None, None, Some(3), None, None, None],
            // 1: all of group 0's loops, but loses group 1's: pooled recall
            //    is the same, so make it better pooled with an early catch.
            vec![Some(1), Some(1), None, None, None, None, None, None],
            // 2: group 0's loops and group 1's one: better everywhere.
            vec![Some(2), Some(2), None, None, Some(3), None, None, None],
        ];
        let all = |_: usize| true;
        let g = GroupGuard::new(&l, &group, 2, &hits[0], &all);
        assert!(g.admits(&l, &hits[0], &all));
        assert_eq!(g.hurt(&l, &hits[1], &all), vec![1]);
        assert!(g.admits(&l, &hits[2], &all));
        let t: Vec<Tally> = hits.iter().map(|h| tally(&l, h, all)).collect();
        // Pooled, 1 wins (2 loops, earlier than 2's); guarded, 1 is refused.
        assert_eq!(
            pick(&[0, 1], &t, &[0, 1, 1], &Objective::Default, &t[0]),
            Some(1)
        );
        let admitted: Vec<usize> = [0, 1, 2]
            .into_iter()
            .filter(|&c| g.admits(&l, &hits[c], &all))
            .collect();
        assert_eq!(admitted, vec![0, 2]);
        // A false positive in one group is refused too, even if the pooled
        // count stays (the baseline's false positive was in the other).
        let base = vec![Some(3), None, Some(1), None, Some(3), None, None, None];
        let moved = vec![Some(3), None, None, None, Some(3), None, Some(1), None];
        let g = GroupGuard::new(&l, &group, 2, &base, &all);
        assert_eq!(g.hurt(&l, &moved, &all), vec![1]);
        // The union search obeys it: member 1 alone would be refused first.
        let u = forward_union(
            Some(&g),
            &l,
            &vec![base.clone(), moved.clone()],
            &[0, 1],
            &["a", "b"],
            &[0, 0],
            &Objective::Default,
            0,
            2,
            &all,
        )
        .unwrap();
        assert_eq!(u.members, vec![0]);
    }

    #[test]
    fn the_fp_rate_budget_is_a_share_of_the_clean_sessions_chosen_on() {
        let l = labelled();
        let hits: Hits = vec![
            // 0: the baseline: 1 loop, no FP.
            vec![Some(5), None, None, None, None, None, None, None],
            // 1: 3 loops, 1 FP (1 of 4 clean sessions).
            vec![Some(2), Some(2), Some(2), None, Some(1), None, None, None],
            // 2: 4 loops, 2 FP (2 of 4).
            vec![Some(2); 4]
                .into_iter()
                .chain([Some(1), Some(1), None, None])
                .collect(),
        ];
        let t: Vec<Tally> = hits.iter().map(|h| tally(&l, h, |_| true)).collect();
        let dist = [0, 1, 1];
        let all = [0, 1, 2];
        // 4 clean sessions: 0.2 allows none, 0.25 one, 0.5 two.
        assert_eq!(cap_of(&Objective::FpRate(0.2), &t[0]), Some(0));
        assert_eq!(
            pick(&all, &t, &dist, &Objective::FpRate(0.2), &t[0]),
            Some(0)
        );
        assert_eq!(
            pick(&all, &t, &dist, &Objective::FpRate(0.25), &t[0]),
            Some(1)
        );
        assert_eq!(
            pick(&all, &t, &dist, &Objective::FpRate(0.5), &t[0]),
            Some(2)
        );
        // On a fold with half the clean sessions, the same rate allows half.
        let half = tally(&l, &hits[0], |i| i != 6 && i != 7);
        assert_eq!(cap_of(&Objective::FpRate(0.5), &half), Some(1));
        // Rounded down, with no float error: 0.29 of 100 is 29.
        let hundred = Tally {
            clean: 100,
            ..Tally::default()
        };
        assert_eq!(cap_of(&Objective::FpRate(0.29), &hundred), Some(29));
        assert_eq!(cap_of(&Objective::FpRate(0.05), &hundred), Some(5));
    }

    #[test]
    fn the_interval_guard_vetoes_only_a_loss_beyond_the_groups_interval() {
        // Wilson 95%: 3 of 3 is [0.44, 1]; 0 of 10 is [0, 0.28].
        let base = GroupCount {
            loops: 3,
            clean: 10,
            tp: 3,
            fp: 0,
        };
        let with = |tp, fp| GroupCount { tp, fp, ..base };
        assert!(!with(2, 0).beyond_interval(&base)); // 0.67 >= 0.44
        assert!(with(1, 0).beyond_interval(&base)); // 0.33 < 0.44
        assert!(!with(3, 2).beyond_interval(&base)); // 0.20 <= 0.28
        assert!(with(3, 3).beyond_interval(&base)); // 0.30 > 0.28
        assert!(!with(3, 0).beyond_interval(&base));
        // The strict rule vetoes every one of those losses.
        assert!(with(2, 0).worse_than(&base) && with(3, 2).worse_than(&base));

        // Group 0: sessions 0-3 (loops 0, 1); group 1: 4-7 (loops 4, 5).
        let (l, group) = two_groups();
        let all = |_: usize| true;
        let baseline = vec![Some(3), Some(3), None, None, Some(3), Some(3), None, None];
        // Loses one of group 1's two loops (2 of 2 is [0.34, 1]; 1 of 2 is
        // 0.5): within. Strict refuses it, interval weighs it and lets it by.
        let one_lost = vec![Some(3), Some(3), None, None, Some(3), None, None, None];
        // Loses both: beyond.
        let both_lost = vec![Some(3), Some(3), None, None, None, None, None, None];
        let strict = GroupGuard::new(&l, &group, 2, &baseline, &all);
        let interval = GroupGuard::with_rule(Guard::Interval, &l, &group, 2, &baseline, &all);
        assert_eq!(strict.hurt(&l, &one_lost, &all), vec![1]);
        assert!(interval.admits(&l, &one_lost, &all));
        let w = interval.weigh(&l, &one_lost, &all);
        assert_eq!(w.len(), 1);
        assert_eq!((w[0].group, w[0].candidate.tp, w[0].baseline.tp), (1, 1, 2));
        assert!(!w[0].vetoes);
        assert_eq!(interval.hurt(&l, &both_lost, &all), vec![1]);
        assert_eq!(Guard::parse("strict"), Some(Guard::PerGroup));
        assert_eq!(Guard::parse("interval").map(Guard::name), Some("interval"));
    }

    /// The hits of a configuration made of steps, each step catching some
    /// sessions at a turn; a configuration fires at its earliest step.
    fn stepped(
        table: &[Vec<Option<u32>>],
        start: &[Option<u32>],
        set: &[usize],
    ) -> Vec<Option<u32>> {
        set.iter()
            .fold(start.to_vec(), |acc, &s| union_hits(&acc, &table[s]))
    }

    #[test]
    fn forward_rules_adds_the_best_step_until_none_improves() {
        let l = labelled();
        // The start catches loop 0; the baseline (for the cap) has 1 FP.
        let start = vec![Some(4), None, None, None, None, None, None, None];
        let baseline = tally(
            &l,
            &[Some(4), None, None, None, Some(1), None, None, None],
            |_| true,
        );
        let table: Vec<Vec<Option<u32>>> = vec![
            // 0: loop 1.
            vec![None, Some(3), None, None, None, None, None, None],
            // 1: loops 1 and 2, 1 FP.
            vec![None, Some(5), Some(5), None, Some(1), None, None, None],
            // 2: loop 3, 1 FP (another session): with 1 it breaks the cap.
            vec![None, None, None, Some(2), None, Some(1), None, None],
            // 3: sets the same parameter as 1; catches everything.
            vec![Some(1); 8],
        ];
        let rounds = std::cell::RefCell::new(Vec::new());
        let evaluate = |sets: &[Vec<usize>]| {
            rounds.borrow_mut().push(sets.len());
            sets.iter()
                .map(|set| stepped(&table, &start, set))
                .collect()
        };
        let conflicts = |a: usize, b: usize| (a == 1 && b == 3) || (a == 3 && b == 1);
        let p = forward_rules(
            4,
            &conflicts,
            &evaluate,
            None,
            &l,
            &Objective::Default,
            &baseline,
            &|_| true,
        )
        .unwrap();
        // Round 1: 0 gives 2/4, 1 gives 3/4 with 1 FP (the cap), 2 gives
        // 2/4, 3 breaks the cap. Round 2 (3 conflicts with 1): 1+0 keeps
        // 3/4 and 1 FP, loop 1 caught at turn 3 not 5 (median TTD 3 < 4);
        // 1+2 has 2 FP. Round 3: 1+0+2 has 2 FP: stop.
        assert_eq!(p.steps, vec![1, 0]);
        assert_eq!(p.hits, stepped(&table, &start, &[1, 0]));
        // The start, then 4 sets, then 2, then 1.
        assert_eq!(*rounds.borrow(), vec![1, 4, 2, 1]);
        // No false positive allowed: only step 0 (every other adds one).
        let p = forward_rules(
            4,
            &conflicts,
            &evaluate,
            None,
            &l,
            &Objective::MaxFalsePositives(0),
            &baseline,
            &|_| true,
        )
        .unwrap();
        assert_eq!(p.steps, vec![0]);
        // F1, no cap: 1 (0.75), then 2 (4/4 caught, 2 FP: 0.8), then 0
        // (same counts, median TTD 2.5 against 3.5); 3 conflicts with 1.
        let p = forward_rules(
            4,
            &conflicts,
            &evaluate,
            None,
            &l,
            &Objective::F1,
            &baseline,
            &|_| true,
        )
        .unwrap();
        assert_eq!(p.steps, vec![1, 2, 0]);
        // A start that breaks the rule takes the best step that meets it.
        let noisy = |sets: &[Vec<usize>]| -> Vec<Vec<Option<u32>>> {
            sets.iter()
                .map(|set| {
                    let mut h = stepped(&table, &start, set);
                    if !set.contains(&0) {
                        h[6] = Some(1); // a false positive only step 0 removes
                    }
                    h
                })
                .collect()
        };
        let p = forward_rules(
            1,
            &|_, _| false,
            &noisy,
            None,
            &l,
            &Objective::MaxFalsePositives(0),
            &baseline,
            &|_| true,
        )
        .unwrap();
        assert_eq!(p.steps, vec![0]);
        assert!(forward_rules(
            0,
            &|_, _| false,
            &noisy,
            None,
            &l,
            &Objective::MaxFalsePositives(0),
            &baseline,
            &|_| true
        )
        .is_none());
    }

    #[test]
    fn leave_one_group_out_chooses_without_the_group_it_scores() {
        let (l, group) = two_groups();
        let names = vec!["a".to_string(), "b".to_string()];
        let seen = std::cell::RefCell::new(Vec::new());
        // A chooser that fires on every session it was not shown.
        let gv = leave_one_group_out(&l, "agent", &group, &names, &|keep| {
            let shown: Vec<usize> = (0..8).filter(|&i| keep(i)).collect();
            seen.borrow_mut().push(shown.clone());
            let hits = (0..8).map(|i| (!keep(i)).then_some(2)).collect();
            Some((vec![shown.len()], hits))
        })
        .unwrap();
        assert_eq!(*seen.borrow(), vec![vec![4, 5, 6, 7], vec![0, 1, 2, 3]]);
        // Every held-out session was scored once, with what the others chose.
        assert_eq!((gv.pooled.loops, gv.pooled.clean), (4, 4));
        assert_eq!((gv.pooled.tp, gv.pooled.fp), (4, 4));
        assert_eq!(gv.groups.len(), 2);
        assert_eq!(gv.groups[0].name, "a");
        assert_eq!((gv.groups[0].tally.tp, gv.groups[0].tally.fp), (2, 2));
        // One group: nothing to leave out.
        assert!(leave_one_group_out(&l, "agent", &[0; 8], &names, &|_| None).is_none());
    }
}
