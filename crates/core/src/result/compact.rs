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
use super::outcomes::Outcomes;
use super::{ConfigOutcomes, Effect, FirstDetection, Hit, HitBody};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashMap;
use std::sync::Arc;

/// Session `rows`' distinct detections (by address, or by value: in a
/// merged or loaded record equal ones may sit apart in memory), as the rows
/// meet them, and each row's among them.
fn session_detections(rows: &[HitBody]) -> (Vec<&FirstDetection>, Vec<Option<u32>>) {
    let mut distinct: Vec<&FirstDetection> = Vec::new();
    let of = rows
        .iter()
        .map(|r| {
            r.first.as_deref().map(|d| {
                match distinct
                    .iter()
                    .position(|m| std::ptr::eq(*m, d) || **m == *d)
                {
                    Some(i) => i as u32,
                    None => {
                        distinct.push(d);
                        distinct.len() as u32 - 1
                    }
                }
            })
        })
        .collect();
    (distinct, of)
}

/// Every session's detections, session by session.
struct AllDetections<'a>(&'a Outcomes, usize);

impl Serialize for AllDetections<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = ser.serialize_seq(None)?;
        for s in 0..self.1 {
            for d in session_detections(&self.0.rows(s)).0 {
                seq.serialize_element(d)?;
            }
        }
        seq.end()
    }
}

/// Every session's rows (`[row,...]` each), up to the last with a hit;
/// detections numbered across sessions as [`AllDetections`] lists them.
struct AllRows<'a>(&'a Outcomes, usize);

impl Serialize for AllRows<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = ser.serialize_seq(None)?;
        let mut offset = 0u64;
        let mut text = String::new();
        for s in 0..self.1 {
            let rows = self.0.rows(s);
            let (distinct, of) = session_detections(&rows);
            text.clear();
            text.push('[');
            for (j, (h, d)) in rows.iter().zip(of).enumerate() {
                if j > 0 {
                    text.push(',');
                }
                row(&mut text, h, d.map(|d| offset + d as u64));
            }
            text.push(']');
            offset += distinct.len() as u64;
            seq.serialize_element(&Raw(&text))?;
        }
        seq.end()
    }
}

/// Configuration `c`'s hits as picks and skips (see the module's note).
fn picks(o: &Outcomes, c: usize) -> std::io::Result<String> {
    let mut out = String::with_capacity(o.count(c) * 3 + 2);
    out.push('[');
    let mut cursor = 0u32;
    let mut num = itoa::Buffer::new();
    o.each_pick(c, |s, k| {
        if s > cursor {
            if out.len() > 1 {
                out.push(',');
            }
            out.push('-');
            out.push_str(num.format(s - cursor));
        }
        if out.len() > 1 {
            out.push(',');
        }
        // Most picks are a digit.
        match k {
            0..=9 => out.push((b'0' + k as u8) as char),
            _ => out.push_str(num.format(k)),
        }
        cursor = s + 1;
    })?;
    out.push(']');
    Ok(out)
}

/// Every configuration's picks. A few configurations at a time are
/// formatted on every thread of the pool, then written in order.
struct AllConfigs<'a>(&'a Outcomes);

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
        let o = self.0;
        let mut seq = ser.serialize_seq(Some(o.len()))?;
        for first in (0..o.len()).step_by(CONFIGS_AT_ONCE) {
            let texts: Vec<String> = (first..(first + CONFIGS_AT_ONCE).min(o.len()))
                .into_par_iter()
                .map(|c| picks(o, c))
                .collect::<std::io::Result<_>>()
                .map_err(|e| {
                    serde::ser::Error::custom(format_args!(
                        "reading back the hits from a temporary file in {}: {e}",
                        crate::error::tmp_dir()
                    ))
                })?;
            for (i, text) in texts.iter().enumerate() {
                seq.serialize_element(&OutConfig {
                    config: o.id(first + i),
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
fn row(out: &mut String, h: &HitBody, det: Option<u64>) {
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
    rows: AllRows<'a>,
    configs: AllConfigs<'a>,
}

/// Write the outcomes compactly, straight from the store: its rows are
/// numbered as this format numbers them.
pub fn serialize<S: Serializer>(outcomes: &Outcomes, ser: S) -> Result<S::Ok, S::Error> {
    let sessions = outcomes.sessions_with_hits();
    Out {
        detections: AllDetections(outcomes, sessions),
        rows: AllRows(outcomes, sessions),
        configs: AllConfigs(outcomes),
    }
    .serialize(ser)
}

/// Read the outcomes back (shared detections shared again).
pub fn deserialize<'de, D: Deserializer<'de>>(de: D) -> Result<Outcomes, D::Error> {
    de.deserialize_any(Either)
}

/// Schema 2 and 3's lists of each configuration's hits, as a store.
fn from_lists<E: serde::de::Error>(configs: Vec<ConfigOutcomes>) -> Result<Outcomes, E> {
    let sessions = configs
        .iter()
        .filter_map(|c| c.hits.iter().map(|h| h.session as usize + 1).max())
        .max()
        .unwrap_or(0);
    Outcomes::from_configs(configs, sessions).map_err(E::custom)
}

fn spill_failed<E: serde::de::Error>(e: std::io::Error) -> E {
    E::custom(format!(
        "could not write the hits to a temporary file in {}: {e}",
        crate::error::tmp_dir()
    ))
}

/// The compact object, or (schema 2) one object per configuration and hit.
struct Either;

impl<'de> serde::de::Visitor<'de> for Either {
    type Value = Outcomes;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("outcomes: {detections, configs} or a list of configurations")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        from_lists(Vec::<ConfigOutcomes>::deserialize(
            serde::de::value::SeqAccessDeserializer::new(seq),
        )?)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error;
        // `detections` comes first (as written), so each hit row becomes
        // a hit as it is read, and each configuration's picks go straight
        // to the store.
        let mut shared = Shared::default();
        let mut store = Outcomes::new(Vec::new());
        let mut configs: Option<Outcomes> = None;
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
                    map.next_value_seed(Rows(&mut shared, &mut store))?;
                    shared.rows = true;
                }
                "configs" => {
                    if shared.detections.is_none() {
                        return Err(A::Error::custom(
                            "outcomes: `detections` must come before `configs`",
                        ));
                    }
                    configs = Some(if shared.rows {
                        map.next_value_seed(Configs(&mut store))?;
                        std::mem::take(&mut store)
                    } else {
                        from_lists(map.next_value_seed(Lists(&mut shared))?)?
                    });
                }
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        configs.ok_or_else(|| A::Error::missing_field("configs"))
    }
}

/// What hits share: the detections, equal effects, and whether (schema 4)
/// each session's distinct hits came first.
#[derive(Default)]
struct Shared {
    detections: Option<Vec<Arc<FirstDetection>>>,
    effects: HashMap<Effect, Arc<Effect>>,
    rows: bool,
}

/// The `configs` list (schema 4), each configuration's picks put in the store as read.
struct Configs<'s>(&'s mut Outcomes);

impl<'de> serde::de::DeserializeSeed<'de> for Configs<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Configs<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of {config, hits}")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(OneConfig(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

/// One `{config, hits}` (schema 4).
struct OneConfig<'s>(&'s mut Outcomes);

impl<'de> serde::de::DeserializeSeed<'de> for OneConfig<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for OneConfig<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("{config, hits}")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        use serde::de::Error;
        let c = self.0.add_config(String::new());
        let (mut config, mut hits) = (None, false);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "config" => config = Some(map.next_value::<String>()?),
                "hits" => {
                    map.next_value_seed(Picks(&mut *self.0, c))?;
                    hits = true;
                }
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        if !hits {
            return Err(A::Error::missing_field("hits"));
        }
        self.0
            .set_id(c, config.ok_or_else(|| A::Error::missing_field("config"))?);
        Ok(())
    }
}

/// The `configs` list of schema 3, each configuration's hit rows made hits as read.
struct Lists<'s>(&'s mut Shared);

impl<'de> serde::de::DeserializeSeed<'de> for Lists<'_> {
    type Value = Vec<ConfigOutcomes>;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Lists<'_> {
    type Value = Vec<ConfigOutcomes>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of {config, hits}")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(c) = seq.next_element_seed(OneList(&mut *self.0))? {
            out.push(c);
        }
        Ok(out)
    }
}

/// One `{config, hits}` of schema 3.
struct OneList<'s>(&'s mut Shared);

impl<'de> serde::de::DeserializeSeed<'de> for OneList<'_> {
    type Value = ConfigOutcomes;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for OneList<'_> {
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
                "hits" => hits = Some(map.next_value_seed(Hits(&mut *self.0))?),
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

/// Each session's distinct hits (schema 4), put in the store as read.
struct Rows<'s>(&'s mut Shared, &'s mut Outcomes);

impl<'de> serde::de::DeserializeSeed<'de> for Rows<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Rows<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of each session's rows")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(rows) = seq.next_element::<Vec<Row>>()? {
            let session = self.1.sessions() as u64;
            let bodies = rows
                .into_iter()
                .map(|r| {
                    // A row is a schema-3 hit row without its session.
                    let mut values = [Some(session); 9];
                    values[1..].copy_from_slice(&r.0[..8]);
                    hit_of(&values, self.0).map(|h| h.body)
                })
                .collect::<Result<Vec<HitBody>, A::Error>>()?;
            self.1.push_rows(bodies);
        }
        Ok(())
    }
}

/// A configuration's picks and skips (schema 4), put in the store as read.
struct Picks<'s>(&'s mut Outcomes, usize);

impl<'de> serde::de::DeserializeSeed<'de> for Picks<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Picks<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of row numbers and (negative) skips")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        use serde::de::Error;
        let mut cursor: u64 = 0;
        while let Some(v) = seq.next_element::<i64>()? {
            if v < 0 {
                cursor = cursor.saturating_add(v.unsigned_abs());
                continue;
            }
            let rows = if cursor < self.0.sessions() as u64 {
                self.0.row_count(cursor as usize)
            } else {
                0
            };
            if v as u64 >= rows as u64 {
                return Err(A::Error::custom(format!(
                    "a hit names row {v} of session {cursor}, which has {rows} rows"
                )));
            }
            self.0
                .pick(self.1, cursor as u32, v as u32)
                .map_err(spill_failed)?;
            cursor += 1;
        }
        Ok(())
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
