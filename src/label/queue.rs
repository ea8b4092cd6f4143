//! Which session to label next: every stock profile of every family is
//! replayed, and sessions the configurations disagree on most come first (a
//! label there settles the most), then sessions every configuration flags,
//! then the rest. Ties break by session id, so the order is deterministic.

use crate::detect::{self, DetectorConfig};
use crate::error::Result;
use crate::event::Corpus;
use crate::replay::{replay, Replay, ReplayOptions};

/// Every stock profile of every family, families in display order.
pub fn stock_configs() -> Result<Vec<DetectorConfig>> {
    let mut out = Vec::new();
    for f in detect::families() {
        for p in f.profiles() {
            out.push(DetectorConfig::resolve(Some(f.name()), Some(p.name), &[])?);
        }
    }
    Ok(out)
}

/// Replay the stock configurations over the corpus.
#[cfg(test)]
pub fn replay_stock(corpus: &Corpus) -> Result<Replay> {
    replay_stock_with(
        corpus,
        &crate::util::pool::Workers::current(),
        &crate::progress::NoProgress,
    )
}

/// [`replay_stock`], counting on `progress`.
pub fn replay_stock_with(
    corpus: &Corpus,
    workers: &crate::util::pool::Workers,
    progress: &dyn crate::progress::Progress,
) -> Result<Replay> {
    replay(
        corpus,
        stock_configs()?,
        &ReplayOptions { all: false },
        workers,
        progress,
    )
}

/// Why a session sits where it does in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// Some configurations flag it and some do not.
    Disagree,
    /// Every configuration flags it.
    AllFlag,
    /// No configuration flags it.
    NoneFlag,
}

/// One session's place in the queue.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    /// Index into `corpus.sessions`.
    pub session: usize,
    /// Configurations that flag it.
    pub flagged: usize,
    /// Configurations replayed.
    pub configs: usize,
    /// Its tier.
    pub tier: Tier,
    /// Per family (in [`detect::families`] order): the earliest turn at which
    /// any of its stock profiles first detects, if any does.
    pub first_turn: Vec<Option<u32>>,
}

impl Ranked {
    /// How far the configurations are from agreeing: the smaller side of the split.
    pub fn disagreement(&self) -> usize {
        self.flagged.min(self.configs - self.flagged)
    }

    /// One line saying why the session is where it is.
    pub fn reason(&self) -> String {
        match self.tier {
            Tier::Disagree => format!(
                "disagree: {} of {} configurations flag",
                self.flagged, self.configs
            ),
            Tier::AllFlag => format!("all {} configurations flag", self.configs),
            Tier::NoneFlag => "no configuration flags".to_string(),
        }
    }
}

/// Rank every session (labelled or not) from a replay of [`stock_configs`].
pub fn rank(corpus: &Corpus, replay: &Replay) -> Vec<Ranked> {
    let fams: Vec<&str> = detect::families().iter().map(|f| f.name()).collect();
    let n = replay.configs.len();
    let mut out: Vec<Ranked> = (0..corpus.sessions.len())
        .map(|si| {
            let mut first_turn = vec![None; fams.len()];
            let mut flagged = 0;
            for (cfg, outs) in replay.configs.iter().zip(&replay.outcomes) {
                let Some(d) = outs[si].first() else { continue };
                flagged += 1;
                if let Some(f) = fams.iter().position(|f| *f == cfg.family) {
                    let t: &mut Option<u32> = &mut first_turn[f];
                    *t = Some(t.map_or(d.turn, |x| x.min(d.turn)));
                }
            }
            let tier = match flagged {
                0 => Tier::NoneFlag,
                x if x == n => Tier::AllFlag,
                _ => Tier::Disagree,
            };
            Ranked {
                session: si,
                flagged,
                configs: n,
                tier,
                first_turn,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        (
            a.tier,
            std::cmp::Reverse(a.disagreement()),
            std::cmp::Reverse(a.flagged),
        )
            .cmp(&(
                b.tier,
                std::cmp::Reverse(b.disagreement()),
                std::cmp::Reverse(b.flagged),
            ))
            .then_with(|| {
                corpus.sessions[a.session]
                    .id
                    .cmp(&corpus.sessions[b.session].id)
            })
    });
    out
}

/// The queue for `--suggest`, as CSV: `session,file,reason,` then the first
/// detection turn per family. `skip` says which sessions are already labelled.
pub fn suggest_csv(corpus: &Corpus, ranked: &[Ranked], skip: impl Fn(&str) -> bool) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["session".to_string(), "file".into(), "reason".into()];
    header.extend(detect::families().iter().map(|f| f.name().to_string()));
    w.write_record(&header).expect("in memory");
    for r in ranked {
        let s = &corpus.sessions[r.session];
        if skip(&s.id) {
            continue;
        }
        let file = s
            .events
            .first()
            .and_then(|e| corpus.files.get(e.origin.file as usize))
            .map_or("", |f| f.path.as_str());
        let mut row = vec![
            crate::report::safe_cell(&s.id).into_owned(),
            crate::report::safe_cell(file).into_owned(),
            r.reason(),
        ];
        row.extend(
            r.first_turn
                .iter()
                .map(|t| t.map(|t| t.to_string()).unwrap_or_default()),
        );
        w.write_record(&row).expect("in memory");
    }
    w.into_inner().expect("in memory")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Origin, Record, Session};
    use std::sync::Arc;

    fn call(n: u32) -> Vec<(Record, Origin)> {
        let mut v = vec![(
            Record::User {
                text: "go".into(),
                prompt_id: None,
            },
            Origin::at(0, 1),
        )];
        for i in 0..n {
            let mut args = serde_json::Map::new();
            args.insert("a".into(), 1.into());
            v.push((
                Record::ToolCall {
                    name: "t".into(),
                    args: args.into(),
                    id: None,
                },
                Origin::at(0, i + 2),
            ));
            v.push((
                Record::ToolResult {
                    id: None,
                    name: None,
                    output: Some("same".into()),
                    error: None,
                },
                Origin::at(0, i + 2),
            ));
        }
        v
    }

    fn corpus(sessions: &[(&str, u32)]) -> Corpus {
        let mut ss: Vec<Arc<Session>> = sessions
            .iter()
            .map(|(id, n)| Arc::new(Session::from_records(id.to_string(), call(*n))))
            .collect();
        ss.sort_by(|a, b| a.id.cmp(&b.id));
        Corpus {
            unreadable: Default::default(),
            files: vec![crate::event::SourceFile {
                path: "f.jsonl".into(),
                format: "canonical".into(),
                sha256: String::new(),
                bytes: 0,
                skipped_lines: 0,
                unknown_records: 0,
            }],
            sessions: ss,
            skipped: vec![],
        }
    }

    #[test]
    fn disagreement_first_then_flagged_then_the_rest_by_id() {
        // 1 call: nobody flags. 200 identical calls: every profile flags
        // (max-turns included). In between, some do and some do not.
        let c = corpus(&[("quiet", 1), ("b-mid", 6), ("a-mid", 6), ("storm", 200)]);
        let r = replay_stock(&c).unwrap();
        let ranked = rank(&c, &r);
        let order: Vec<(&str, Tier)> = ranked
            .iter()
            .map(|x| (c.sessions[x.session].id.as_str(), x.tier))
            .collect();
        assert_eq!(order[0].1, Tier::Disagree);
        assert_eq!(order[0].0, "a-mid", "ties break by id: {order:?}");
        assert_eq!(order[1].0, "b-mid");
        assert_eq!(*order.last().unwrap(), ("quiet", Tier::NoneFlag));
        let storm = ranked.iter().find(|x| c.sessions[x.session].id == "storm");
        assert!(storm.unwrap().flagged > ranked[0].flagged);
        // Same input, same order.
        assert_eq!(rank(&c, &replay_stock(&c).unwrap()), ranked);
    }

    #[test]
    fn sort_key_puts_larger_disagreement_first() {
        let r = |flagged, id| Ranked {
            session: id,
            flagged,
            configs: 10,
            tier: Tier::Disagree,
            first_turn: vec![],
        };
        assert_eq!(r(5, 0).disagreement(), 5);
        assert_eq!(r(9, 0).disagreement(), 1);
        assert_eq!(r(0, 0).reason(), "disagree: 0 of 10 configurations flag");
    }

    #[test]
    fn suggest_csv_skips_labelled_and_has_a_column_per_family() {
        let c = corpus(&[("quiet", 1), ("a-mid", 6)]);
        let ranked = rank(&c, &replay_stock(&c).unwrap());
        let text = String::from_utf8(suggest_csv(&c, &ranked, |s| s == "quiet")).unwrap();
        let mut lines = text.lines();
        let header = lines.next().unwrap();
        assert!(
            header.starts_with("session,file,reason,gemini,"),
            "{header}"
        );
        assert_eq!(
            header.split(',').count(),
            3 + detect::families().len(),
            "{header}"
        );
        let row = lines.next().unwrap();
        assert!(row.starts_with("a-mid,f.jsonl,disagree: "), "{row}");
        assert_eq!(lines.next(), None);
    }
}
