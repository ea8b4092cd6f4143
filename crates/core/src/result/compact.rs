//! The outcomes as `summary.json` holds them. A large sweep has millions of
//! hits, and on one session most configurations do one of a few things: so
//! each distinct detection is written once (`detections`), each session's
//! distinct hits once (`rows[session]`, each an array `[detection,
//! stop_turn, warnings, unheeded, judge_due, judge_no_verdict,
//! turns_after_stop, tokens_after_stop]`, `detection` an index into
//! `detections` or `null`, trailing zeros and nulls left out), and each
//! configuration's hits as small numbers read with a cursor that starts at
//! session 0: `k >= 0` is row `k` of the cursor's session, which then moves
//! on by one; `-n` moves it on by `n` sessions without a hit. About two bytes
//! per hit (schema 3 wrote each hit's values, about 28).

use super::json_text::Raw;
use super::{ConfigOutcomes, Effect, FirstDetection, Hit, HitBody};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashMap;
use std::sync::Arc;

/// Sessions whose distinct rows are found together, on one thread.
pub(super) const SESSIONS_AT_ONCE: u32 = 256;

/// What a hit's row is made of, by address: hits that share their
/// detection and effect (as a sweep's and a loaded record's do) compare
/// without reading them.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Same {
    judge_due: u32,
    judge_no_verdict: u32,
    first: usize,
    effect: usize,
}

impl Same {
    fn of(h: &Hit) -> Same {
        Same {
            judge_due: h.judge_due,
            judge_no_verdict: h.judge_no_verdict,
            first: h.first.as_ref().map_or(0, |d| Arc::as_ptr(d) as usize),
            effect: h.effect.as_ref().map_or(0, |e| Arc::as_ptr(e) as usize),
        }
    }
}

/// One block of sessions: each session's distinct hits and detections,
/// and which row each hit in the block is.
struct Block<'a> {
    /// Each session's distinct hits (its rows), in the order
    /// configurations meet them, with the block's number of the row's
    /// detection.
    rows: Vec<Vec<(&'a Hit, Option<u32>)>>,
    /// The block's distinct detections, session by session, as the rows meet them.
    detections: Vec<&'a FirstDetection>,
    /// The row of each hit in the block, configuration after configuration.
    picks: Vec<u32>,
    /// Where each configuration's picks start (one more than configurations).
    starts: Vec<usize>,
}

/// The distinct hits of the sessions from `first` on, given each
/// configuration's hits on them. Rows and detections are numbered as
/// configurations meet them session by session, so the bytes depend
/// neither on how sessions are blocked nor on the threads.
fn block<'a>(hits: &[&'a [Hit]], first: u32, sessions: usize) -> Block<'a> {
    let mut distinct: Vec<Vec<(Same, &Hit)>> = vec![Vec::new(); sessions];
    // The row the configuration before met: neighbours in a grid often agree.
    let mut last = vec![0usize; sessions];
    let mut picks = Vec::with_capacity(hits.iter().map(|h| h.len()).sum());
    let mut starts = Vec::with_capacity(hits.len() + 1);
    for c in hits {
        starts.push(picks.len());
        for h in c.iter() {
            let at = (h.session - first) as usize;
            let known = &mut distinct[at];
            let same = Same::of(h);
            let k = match known.get(last[at]) {
                Some((k, _)) if *k == same => last[at],
                _ => match known.iter().position(|(k, _)| *k == same) {
                    Some(k) => k,
                    // Shared apart in memory but equal: one row (rare).
                    None => match known.iter().position(|(_, k)| same_row(k, h)) {
                        Some(k) => k,
                        None => {
                            known.push((same, h));
                            known.len() - 1
                        }
                    },
                },
            };
            last[at] = k;
            picks.push(k as u32);
        }
    }
    starts.push(picks.len());
    let mut detections: Vec<&FirstDetection> = Vec::new();
    let mut rows = Vec::with_capacity(sessions);
    for known in distinct {
        // A session's detections by value among its own (in a merged or
        // loaded record equal ones may sit apart in memory).
        let from = detections.len();
        let mut mine = Vec::with_capacity(known.len());
        for (_, h) in known {
            let d = h.first.as_deref().map(|d| {
                let at = detections[from..]
                    .iter()
                    .position(|m| std::ptr::eq(*m, d) || **m == *d);
                at.map_or_else(
                    || {
                        detections.push(d);
                        detections.len() - 1
                    },
                    |i| from + i,
                ) as u32
            });
            mine.push((h, d));
        }
        rows.push(mine);
    }
    Block {
        rows,
        detections,
        picks,
        starts,
    }
}

/// Two hits of one session that write the same row, by value.
fn same_row(a: &Hit, b: &Hit) -> bool {
    a.judge_due == b.judge_due
        && a.judge_no_verdict == b.judge_no_verdict
        && a.first == b.first
        && a.effect == b.effect
}

/// A block's sessions' rows as JSON (`[row,...]` each, joined by
/// commas), its detections numbered from `offset`.
fn rows_text(b: &Block, offset: u64) -> String {
    let mut out = String::new();
    for (i, rows) in b.rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('[');
        for (j, (h, d)) in rows.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            row(&mut out, h, d.map(|d| offset + d as u64));
        }
        out.push(']');
    }
    out
}

/// Configuration `c`'s hits as picks and skips (see the module's note).
fn picks(c: usize, hits: &[Hit], blocks: &[Block]) -> String {
    let mut out = String::with_capacity(hits.len() * 3 + 2);
    out.push('[');
    let mut cursor = 0u32;
    let mut hits = hits.iter();
    let mut num = itoa::Buffer::new();
    for b in blocks {
        for &k in &b.picks[b.starts[c]..b.starts[c + 1]] {
            let h = hits.next().expect("a pick per hit");
            if h.session > cursor {
                if out.len() > 1 {
                    out.push(',');
                }
                out.push('-');
                out.push_str(num.format(h.session - cursor));
            }
            if out.len() > 1 {
                out.push(',');
            }
            // Most picks are a digit.
            match k {
                0..=9 => out.push((b'0' + k as u8) as char),
                _ => out.push_str(num.format(k)),
            }
            cursor = h.session + 1;
        }
    }
    out.push(']');
    out
}

/// Every configuration's picks. A few configurations at a time are
/// formatted on every thread of the pool, then written in order.
struct AllConfigs<'a> {
    outcomes: &'a [ConfigOutcomes],
    blocks: &'a [Block<'a>],
}

/// Configurations formatted at once.
pub(super) const CONFIGS_AT_ONCE: usize = 32;

impl Serialize for AllConfigs<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use rayon::prelude::*;
        use serde::ser::SerializeSeq;
        #[derive(Serialize)]
        struct OutConfig<'a> {
            config: &'a str,
            hits: Raw<'a>,
        }
        let mut seq = ser.serialize_seq(Some(self.outcomes.len()))?;
        for (chunk_at, chunk) in self.outcomes.chunks(CONFIGS_AT_ONCE).enumerate() {
            let first = chunk_at * CONFIGS_AT_ONCE;
            let texts: Vec<String> = chunk
                .par_iter()
                .enumerate()
                .map(|(i, c)| picks(first + i, &c.hits, self.blocks))
                .collect();
            for (c, text) in chunk.iter().zip(&texts) {
                seq.serialize_element(&OutConfig {
                    config: &c.config,
                    hits: Raw(text),
                })?;
            }
        }
        seq.end()
    }
}

/// One distinct hit's row (its session is where it is listed). Trailing
/// defaults go: zero counts, then an absent stop turn, then an absent
/// detection (a detection 0 or a stop at turn 0 stays). Formatted on the
/// stack and appended at once.
fn row(out: &mut String, h: &Hit, det: Option<u64>) {
    let (stop, warnings, unheeded, turns_after, tokens_after) = match h.effect.as_deref() {
        Some(e) => (
            e.stop_turn,
            e.warnings,
            e.unheeded,
            e.turns_after_stop,
            e.tokens_after_stop,
        ),
        None => (None, 0, 0, 0, 0),
    };
    let counts = [
        warnings as u64,
        unheeded as u64,
        h.judge_due as u64,
        h.judge_no_verdict as u64,
        turns_after as u64,
        tokens_after,
    ];
    let mut n = 2 + counts.len();
    while n > 2 && counts[n - 3] == 0 {
        n -= 1;
    }
    let stop = stop.map(u64::from);
    if n == 2 && stop.is_none() {
        n = if det.is_none() { 0 } else { 1 };
    }
    // Eight values of at most 20 digits, seven commas, two brackets.
    let mut buf = [0u8; 8 * 20 + 9];
    let mut at = 0;
    let mut num = itoa::Buffer::new();
    let mut put = |buf: &mut [u8], at: &mut usize, v: Option<u64>| {
        let text: &[u8] = match v {
            Some(v) => num.format(v).as_bytes(),
            None => b"null",
        };
        buf[*at..*at + text.len()].copy_from_slice(text);
        *at += text.len();
    };
    buf[at] = b'[';
    at += 1;
    let values = [det, stop].into_iter().chain(counts.map(Some));
    for (i, v) in values.take(n).enumerate() {
        if i > 0 {
            buf[at] = b',';
            at += 1;
        }
        put(&mut buf, &mut at, v);
    }
    buf[at] = b']';
    at += 1;
    // ASCII digits, commas, brackets and `null` only.
    out.push_str(std::str::from_utf8(&buf[..at]).expect("ASCII"));
}

/// What serde_json writes for one row, for the test that holds [`row`] to it.
#[cfg(test)]
pub(super) fn row_by_serde(h: &Hit, det: Option<u64>) -> String {
    let mut v: Vec<Option<u64>> = vec![det, h.stop_turn().map(u64::from)];
    v.extend(
        [
            h.warnings() as u64,
            h.unheeded() as u64,
            h.judge_due as u64,
            h.judge_no_verdict as u64,
            h.turns_after_stop() as u64,
            h.tokens_after_stop(),
        ]
        .map(Some),
    );
    while v.len() > 2 && v.last() == Some(&Some(0)) {
        v.pop();
    }
    if v.len() == 2 && v[1].is_none() {
        v.pop();
        if v[0].is_none() {
            v.pop();
        }
    }
    serde_json::to_string(&v).unwrap()
}

/// [`row`] into a string, for the test.
#[cfg(test)]
pub(super) fn row_text(h: &Hit, det: Option<u64>) -> String {
    let mut s = String::new();
    row(&mut s, h, det);
    s
}

#[derive(Serialize)]
struct Out<'a> {
    detections: AllDetections<'a>,
    rows: Raw<'a>,
    configs: AllConfigs<'a>,
}

/// Every block's detections, in block order.
struct AllDetections<'a>(&'a [Block<'a>]);

impl Serialize for AllDetections<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.collect_seq(self.0.iter().flat_map(|b| &b.detections))
    }
}

/// A configuration whose hits are not in session order (a bug in the
/// caller: the writer refuses it rather than write a record no reader takes).
#[derive(Debug, thiserror::Error)]
#[error("configuration {0}: hits out of session order")]
struct OutOfOrder(String);

/// Where a configuration's hits of each block of sessions start (the
/// hits must be in session order).
fn block_starts(c: &ConfigOutcomes) -> Result<Vec<usize>, OutOfOrder> {
    let mut starts = Vec::new();
    let mut next = 0u32;
    for (i, h) in c.hits.iter().enumerate() {
        if h.session < next {
            return Err(OutOfOrder(c.config.clone()));
        }
        next = h.session + 1;
        while starts.len() as u64 * SESSIONS_AT_ONCE as u64 <= h.session as u64 {
            starts.push(i);
        }
    }
    Ok(starts)
}

/// Write the outcomes compactly.
pub fn serialize<S: Serializer>(outcomes: &[ConfigOutcomes], ser: S) -> Result<S::Ok, S::Error> {
    use rayon::prelude::*;
    let mut bounds: Vec<Vec<usize>> = outcomes
        .par_iter()
        .map(block_starts)
        .collect::<Result<_, OutOfOrder>>()
        .map_err(serde::ser::Error::custom)?;
    let blocks_n = bounds.iter().map(Vec::len).max().unwrap_or(0);
    let sessions = outcomes
        .iter()
        .filter_map(|c| c.hits.last())
        .map(|h| h.session + 1)
        .max()
        .unwrap_or(0);
    for (b, c) in bounds.iter_mut().zip(outcomes) {
        b.resize(blocks_n + 1, c.hits.len());
    }
    let blocks: Vec<Block> = (0..blocks_n)
        .into_par_iter()
        .map(|b| {
            let first = b as u32 * SESSIONS_AT_ONCE;
            let hits: Vec<&[Hit]> = outcomes
                .iter()
                .zip(&bounds)
                .map(|(c, at)| &c.hits[at[b]..at[b + 1]])
                .collect();
            let n = (sessions - first).min(SESSIONS_AT_ONCE);
            block(&hits, first, n as usize)
        })
        .collect();
    let offsets: Vec<u64> = blocks
        .iter()
        .scan(0u64, |at, b| {
            let o = *at;
            *at += b.detections.len() as u64;
            Some(o)
        })
        .collect();
    let texts: Vec<String> = blocks
        .par_iter()
        .zip(&offsets)
        .map(|(b, &o)| rows_text(b, o))
        .collect();
    let mut rows = String::with_capacity(texts.iter().map(|t| t.len() + 1).sum::<usize>() + 2);
    rows.push('[');
    for (i, t) in texts.iter().enumerate() {
        if i > 0 {
            rows.push(',');
        }
        rows.push_str(t);
    }
    rows.push(']');
    Out {
        detections: AllDetections(&blocks),
        rows: Raw(&rows),
        configs: AllConfigs {
            outcomes,
            blocks: &blocks,
        },
    }
    .serialize(ser)
}

/// Read the outcomes back (shared detections shared again).
pub fn deserialize<'de, D: Deserializer<'de>>(de: D) -> Result<Vec<ConfigOutcomes>, D::Error> {
    de.deserialize_any(Either)
}

/// The compact object, or (schema 2) one object per configuration and hit.
struct Either;

impl<'de> serde::de::Visitor<'de> for Either {
    type Value = Vec<ConfigOutcomes>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("outcomes: {detections, configs} or a list of configurations")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Vec::<ConfigOutcomes>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error;
        // `detections` comes first (as written), so each hit row becomes
        // a hit as it is read: a large result's rows held as JSON arrays
        // took three times the memory of its hits.
        let mut shared = Shared::default();
        let mut configs: Option<Vec<ConfigOutcomes>> = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "detections" => {
                    let d: Vec<FirstDetection> = map.next_value()?;
                    shared.detections = Some(d.into_iter().map(Arc::new).collect());
                }
                "rows" => {
                    if shared.detections.is_none() {
                        return Err(A::Error::custom(
                            "outcomes: `detections` must come before `rows`",
                        ));
                    }
                    let rows = map.next_value_seed(Rows(&mut shared))?;
                    shared.rows = Some(rows);
                }
                "configs" => {
                    if shared.detections.is_none() {
                        return Err(A::Error::custom(
                            "outcomes: `detections` must come before `configs`",
                        ));
                    }
                    configs = Some(map.next_value_seed(Configs(&mut shared))?);
                }
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        configs.ok_or_else(|| A::Error::missing_field("configs"))
    }
}

/// What hits share: the detections, equal effects, and (schema 4) each
/// session's distinct hits.
#[derive(Default)]
struct Shared {
    detections: Option<Vec<Arc<FirstDetection>>>,
    effects: HashMap<Effect, Arc<Effect>>,
    rows: Option<Vec<Vec<Hit>>>,
}

/// The `configs` list, each configuration's hits converted as read.
struct Configs<'s>(&'s mut Shared);

impl<'de> serde::de::DeserializeSeed<'de> for Configs<'_> {
    type Value = Vec<ConfigOutcomes>;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Configs<'_> {
    type Value = Vec<ConfigOutcomes>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of {config, hits}")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(c) = seq.next_element_seed(OneConfig(&mut *self.0))? {
            out.push(c);
        }
        Ok(out)
    }
}

/// One `{config, hits}`.
struct OneConfig<'s>(&'s mut Shared);

impl<'de> serde::de::DeserializeSeed<'de> for OneConfig<'_> {
    type Value = ConfigOutcomes;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for OneConfig<'_> {
    type Value = ConfigOutcomes;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("{config, hits}")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error;
        let (mut config, mut hits) = (None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "config" => config = Some(map.next_value::<String>()?),
                "hits" => {
                    hits = Some(match &self.0.rows {
                        Some(rows) => map.next_value_seed(Picks(rows))?,
                        None => map.next_value_seed(Hits(&mut *self.0))?,
                    })
                }
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(ConfigOutcomes {
            config: config.ok_or_else(|| A::Error::missing_field("config"))?,
            hits: hits.ok_or_else(|| A::Error::missing_field("hits"))?,
        })
    }
}

/// Each session's distinct hits (schema 4), made hits as read.
struct Rows<'s>(&'s mut Shared);

impl<'de> serde::de::DeserializeSeed<'de> for Rows<'_> {
    type Value = Vec<Vec<Hit>>;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Rows<'_> {
    type Value = Vec<Vec<Hit>>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of each session's rows")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(rows) = seq.next_element::<Vec<Row>>()? {
            let session = out.len() as u64;
            let hits = rows
                .into_iter()
                .map(|r| {
                    // A row is a schema-3 hit row without its session.
                    let mut values = [Some(session); 9];
                    values[1..].copy_from_slice(&r.0[..8]);
                    hit_of(&values, self.0)
                })
                .collect::<Result<Vec<Hit>, A::Error>>()?;
            out.push(hits);
        }
        Ok(out)
    }
}

/// A configuration's picks and skips (schema 4), made hits as read.
struct Picks<'s>(&'s [Vec<Hit>]);

impl<'de> serde::de::DeserializeSeed<'de> for Picks<'_> {
    type Value = Vec<Hit>;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Picks<'_> {
    type Value = Vec<Hit>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of row numbers and (negative) skips")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error;
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        let mut cursor: u64 = 0;
        while let Some(v) = seq.next_element::<i64>()? {
            if v < 0 {
                cursor = cursor.saturating_add(v.unsigned_abs());
                continue;
            }
            let rows = self.0.get(cursor as usize).map_or(&[][..], |r| &r[..]);
            let hit = rows.get(v as usize).ok_or_else(|| {
                A::Error::custom(format!(
                    "a hit names row {v} of session {cursor}, which has {} rows",
                    rows.len()
                ))
            })?;
            out.push(hit.clone());
            cursor += 1;
        }
        Ok(out)
    }
}

/// A configuration's hit rows, each made a hit as read.
struct Hits<'s>(&'s mut Shared);

impl<'de> serde::de::DeserializeSeed<'de> for Hits<'_> {
    type Value = Vec<Hit>;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Hits<'_> {
    type Value = Vec<Hit>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of hit rows")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(row) = seq.next_element::<Row>()? {
            out.push(hit_of(&row.0, self.0)?);
        }
        Ok(out)
    }
}

/// One hit row's values: `[session, detection, stop turn, warnings,
/// unheeded, judge due, judge without verdict, turns after stop, tokens
/// after stop]`, trailing ones left out when empty (more are ignored).
struct Row([Option<u64>; 9]);

impl<'de> Deserialize<'de> for Row {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Row;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a hit row (a list of counts)")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Row, A::Error> {
                let mut row = [None; 9];
                let mut i = 0;
                while let Some(v) = seq.next_element::<Option<u64>>()? {
                    if let Some(slot) = row.get_mut(i) {
                        *slot = v;
                    }
                    i += 1;
                }
                Ok(Row(row))
            }
        }
        de.deserialize_seq(V)
    }
}

/// The hit a row stands for, its detection and effect shared.
fn hit_of<E: serde::de::Error>(row: &[Option<u64>; 9], shared: &mut Shared) -> Result<Hit, E> {
    let at = |i: usize| row[i];
    let small = |i: usize| -> Result<u32, E> {
        u32::try_from(at(i).unwrap_or(0)).map_err(|_| E::custom("a hit's count is out of range"))
    };
    let detections = shared.detections.as_deref().unwrap_or_default();
    let first = match at(1) {
        None => None,
        Some(d) => Some(
            detections
                .get(d as usize)
                .ok_or_else(|| {
                    E::custom(format!(
                        "a hit names detection {d}, which is not in `detections`"
                    ))
                })?
                .clone(),
        ),
    };
    let effect = Effect {
        stop_turn: at(2).map(|_| small(2)).transpose()?,
        warnings: small(3)?,
        unheeded: small(4)?,
        turns_after_stop: small(7)?,
        tokens_after_stop: at(8).unwrap_or(0),
    };
    // Equal effects shared again, as the sweep shares them.
    let effect = (effect != Effect::default()).then(|| {
        shared
            .effects
            .entry(effect)
            .or_insert_with_key(|e| Arc::new(e.clone()))
            .clone()
    });
    Ok(Hit::new(
        u32::try_from(at(0).ok_or_else(|| E::custom("a hit without a session"))?)
            .map_err(|_| E::custom("a hit's session is out of range"))?,
        HitBody {
            first,
            effect,
            judge_due: small(5)?,
            judge_no_verdict: small(6)?,
        },
    ))
}
