//! Every configuration's hits, held the way `summary.json` writes them: each
//! session's distinct hits once (its rows, in memory: a few a session), and
//! per configuration which row it has on which session, as a few bytes a hit
//! (the gap from its last session and the row, as LEB128 numbers) that go to
//! an unnamed temporary file once they pass a few KiB a configuration. A
//! 1,000-configuration grid gives a long session about 640 hits: held as
//! 16-byte hits they grew a sweep's memory with every session; as picks on
//! disk they cost a sweep about 20 bytes a session in memory, whatever the
//! grid.
//!
//! A configuration's hits are made again when a score, an output or a union
//! asks for them ([`Outcomes::hits`], [`Outcomes::dense`],
//! [`Outcomes::each`]), one configuration at a time.
//!
//! The rows of a session are numbered as configurations meet them, in grid
//! order, and are distinct by value: the form `summary.json` writes, so the
//! writer copies rows and picks as they are.

use super::{ConfigOutcomes, Effect, FirstDetection, Hit, HitBody, HitView};
use std::io::{Read, Seek, SeekFrom, Write};
use std::sync::{Arc, Mutex};

/// Bytes of a configuration's picks held in memory before they are spilled.
const CHUNK: usize = 4 << 10;

/// Every configuration's hits on every session (see the module's note).
#[derive(Clone)]
pub struct Outcomes {
    ids: Vec<String>,
    /// Each session's rows, session after session.
    rows: RowStore,
    picks: Vec<Picks>,
    spill: Arc<SpillFile>,
    /// The detections rows name (`Row::first` - 1): each session's
    /// distinct ones, session after session.
    firsts: Vec<Arc<FirstDetection>>,
    /// The effects rows name (`Row::effect` - 1), likewise.
    effects: Vec<Arc<Effect>>,
}

/// One of a session's distinct hits, in 16 bytes: its detection and effect
/// by number in the store's tables (0: none) and its judge counts. A
/// 1,000-configuration grid gives a session with a loop dozens of rows (its
/// few detections times the judge's schedules); as a shared `HitBody` each
/// they were the largest part of a long sweep's memory (56 bytes a row).
/// Rows of one session are equal exactly when their hits are equal by
/// value: a session's table entries are distinct by value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Row {
    first: u32,
    effect: u32,
    judge_due: u32,
    judge_no_verdict: u32,
}

/// Sessions per block of [`RowStore`].
const BLOCK: usize = 1024;

/// Each session's rows, session after session, in blocks of [`BLOCK`]
/// sessions, each block's vector fitted to its rows once full: one vector
/// for all grew by doubling, holding up to twice its rows (three times
/// while it moved), and the slack grew with the sweep.
#[derive(Clone)]
struct RowStore {
    blocks: Vec<Vec<Row>>,
    /// Where each session's rows start, counted over every block; one more
    /// than the sessions closed.
    start: Vec<u32>,
}

impl Default for RowStore {
    fn default() -> RowStore {
        RowStore {
            blocks: Vec::new(),
            start: vec![0],
        }
    }
}

impl RowStore {
    /// Sessions closed.
    fn sessions(&self) -> usize {
        self.start.len() - 1
    }

    /// Rows in all, the open session's included.
    fn total(&self) -> usize {
        let closed = *self.start.last().expect("one more than sessions") as usize;
        closed + self.open().len()
    }

    /// Session `s`'s rows (a closed session).
    fn session(&self, s: usize) -> &[Row] {
        let (from, to) = (self.start[s], self.start[s + 1]);
        if from == to {
            return &[];
        }
        let b = s / BLOCK;
        let base = self.start[b * BLOCK];
        &self.blocks[b][(from - base) as usize..(to - base) as usize]
    }

    /// The rows of the session not yet closed.
    fn open(&self) -> &[Row] {
        let s = self.sessions();
        let b = s / BLOCK;
        match self.blocks.get(b) {
            Some(block) => {
                let base = self.start[b * BLOCK];
                let from = self.start[s] - base;
                &block[from as usize..]
            }
            None => &[],
        }
    }

    /// Add a row to the open session.
    fn push(&mut self, row: Row) {
        let b = self.sessions() / BLOCK;
        if self.blocks.len() <= b {
            self.blocks.resize_with(b + 1, Vec::new);
        }
        self.blocks[b].push(row);
    }

    /// Close the open session.
    fn close(&mut self) {
        let total = self.total() as u32;
        let s = self.sessions();
        self.start.push(total);
        if (s + 1).is_multiple_of(BLOCK) {
            if let Some(block) = self.blocks.get_mut(s / BLOCK) {
                block.shrink_to_fit();
            }
        }
    }

    /// Keep the first `n` sessions (`n` at most the sessions closed), and
    /// drop the open session's rows.
    fn truncate(&mut self, n: usize) {
        self.start.truncate(n + 1);
        let end = self.start[n];
        let blocks = n.div_ceil(BLOCK);
        self.blocks.truncate(blocks);
        if blocks > 0 {
            let base = self.start[(blocks - 1) * BLOCK];
            // A block whose sessions have no rows may never have been made.
            if let Some(block) = self.blocks.get_mut(blocks - 1) {
                block.truncate((end - base) as usize);
            }
        }
    }
}

/// One configuration's picks.
#[derive(Clone, Default)]
struct Picks {
    /// Spilled runs of picks: offset and length in the spill file.
    chunks: Vec<(u64, u32)>,
    /// Picks not yet spilled.
    tail: Vec<u8>,
    /// One past the session of the last pick.
    next: u32,
    /// Number of picks.
    count: u32,
}

/// The unnamed temporary file picks are spilled to, made at the first spill
/// (a small record never makes one). Append-only: clones of a store share it.
#[derive(Default)]
struct SpillFile(Mutex<Option<(std::fs::File, u64)>>);

impl SpillFile {
    fn append(&self, bytes: &[u8]) -> std::io::Result<u64> {
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if held.is_none() {
            *held = Some((tempfile::tempfile()?, 0));
        }
        let (file, len) = held.as_mut().expect("made above");
        let at = *len;
        file.seek(SeekFrom::Start(at))?;
        file.write_all(bytes)?;
        *len += bytes.len() as u64;
        Ok(at)
    }

    fn read(&self, at: u64, out: &mut Vec<u8>, len: usize) -> std::io::Result<()> {
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (file, _) = held
            .as_mut()
            .ok_or_else(|| std::io::Error::other("nothing was spilled"))?;
        file.seek(SeekFrom::Start(at))?;
        let from = out.len();
        out.resize(from + len, 0);
        file.read_exact(&mut out[from..])
    }
}

/// Where a configuration's hits are not in session order, or name a
/// session a record does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Misfit {
    /// A hit on a session at or before the one before it.
    #[error("configuration {config}: hits out of session order")]
    OutOfOrder {
        /// The configuration's id.
        config: String,
    },
    /// The temporary file of the hits could not be written (TMPDIR).
    #[error("writing the hits to a temporary file in {tmp}: {0}", tmp = crate::error::tmp_dir())]
    Spill(String),
    /// A hit on a session past the last.
    #[error("configuration {config} has a hit on session {session}, but the result lists {sessions} sessions")]
    PastTheEnd {
        /// The configuration's id.
        config: String,
        /// Its last session with a hit.
        session: u32,
        /// Sessions the record lists.
        sessions: usize,
    },
}

fn put_number(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn take_number(bytes: &[u8], at: &mut usize) -> u32 {
    let mut v = 0u32;
    let mut shift = 0;
    loop {
        let b = bytes[*at];
        *at += 1;
        v |= ((b & 0x7f) as u32) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// A configuration's picks read back whole, in session order.
struct Decoded {
    bytes: Vec<u8>,
}

impl Decoded {
    /// `(session, row)` of every pick.
    fn each(&self, mut f: impl FnMut(u32, u32)) {
        let (mut at, mut next) = (0usize, 0u32);
        while at < self.bytes.len() {
            let session = next + take_number(&self.bytes, &mut at);
            let row = take_number(&self.bytes, &mut at);
            f(session, row);
            next = session + 1;
        }
    }
}

impl Default for Outcomes {
    fn default() -> Outcomes {
        Outcomes::new(Vec::new())
    }
}

impl Outcomes {
    /// No session yet, for the configurations `ids` (grid order).
    pub fn new(ids: Vec<String>) -> Outcomes {
        let picks = vec![Picks::default(); ids.len()];
        Outcomes {
            ids,
            rows: RowStore::default(),
            picks,
            spill: Arc::default(),
            firsts: Vec::new(),
            effects: Vec::new(),
        }
    }

    /// Number of configurations.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// No configuration.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Configuration `c`'s id.
    pub fn id(&self, c: usize) -> &str {
        &self.ids[c]
    }

    /// Every configuration's id, in order.
    pub fn ids(&self) -> &[String] {
        &self.ids
    }

    /// Number of sessions.
    pub fn sessions(&self) -> usize {
        self.rows.sessions()
    }

    /// Number of hits of configuration `c`.
    pub fn count(&self, c: usize) -> usize {
        self.picks[c].count as usize
    }

    /// Session `s`'s rows: its distinct hits, as configurations meet them.
    pub fn rows(&self, s: usize) -> Vec<HitBody> {
        self.session_rows(s).iter().map(|r| self.body(r)).collect()
    }

    /// Number of session `s`'s rows.
    pub fn row_count(&self, s: usize) -> usize {
        self.session_rows(s).len()
    }

    fn session_rows(&self, s: usize) -> &[Row] {
        self.rows.session(s)
    }

    /// The hit a row stands for.
    fn body(&self, r: &Row) -> HitBody {
        HitBody {
            judge_due: r.judge_due,
            judge_no_verdict: r.judge_no_verdict,
            first: r
                .first
                .checked_sub(1)
                .map(|i| self.firsts[i as usize].clone()),
            effect: r
                .effect
                .checked_sub(1)
                .map(|i| self.effects[i as usize].clone()),
        }
    }

    /// The hit a row stands for, borrowed.
    fn view(&self, r: &Row) -> HitView<'_> {
        HitView {
            judge_due: r.judge_due,
            judge_no_verdict: r.judge_no_verdict,
            first: r.first.checked_sub(1).map(|i| &*self.firsts[i as usize]),
            effect: r.effect.checked_sub(1).map(|i| &*self.effects[i as usize]),
        }
    }

    /// The hit of session `s`'s row `k`.
    fn body_at(&self, s: u32, k: u32) -> HitBody {
        self.body(&self.rows.session(s as usize)[k as usize])
    }

    /// One past the last session any configuration has a hit on.
    pub fn sessions_with_hits(&self) -> usize {
        self.picks.iter().map(|p| p.next).max().unwrap_or(0) as usize
    }

    /// Add the next session: its hits as `(configuration, hit)` (the hit's
    /// own session is not read). Hits that are equal by value share a row.
    pub fn push_session(&mut self, hits: &[(u32, Hit)]) -> std::io::Result<()> {
        let mut order: Vec<usize> = (0..hits.len()).collect();
        if !hits.windows(2).all(|w| w[0].0 < w[1].0) {
            order.sort_by_key(|&i| hits[i].0);
            order.dedup_by_key(|i| hits[*i].0);
        }
        let s = self.sessions() as u32;
        let from = self.tables();
        for i in order {
            let (c, h) = &hits[i];
            let k = self.row_of(from, &h.body);
            self.pick(*c as usize, s, k)?;
        }
        self.rows.close();
        Ok(())
    }

    /// Add the next session with its rows as they are (a loaded record's).
    pub(super) fn push_rows(&mut self, rows: Vec<HitBody>) {
        let from = self.tables();
        for r in &rows {
            let r = self.row(from, r);
            self.rows.push(r);
        }
        self.rows.close();
    }

    /// Add a configuration without hits; returns its index.
    pub(super) fn add_config(&mut self, id: String) -> usize {
        self.ids.push(id);
        self.picks.push(Picks::default());
        self.ids.len() - 1
    }

    /// Name configuration `c`.
    pub(super) fn set_id(&mut self, c: usize, id: String) {
        self.ids[c] = id;
    }

    /// Where the next session's table entries start.
    fn tables(&self) -> (usize, usize) {
        (self.firsts.len(), self.effects.len())
    }

    /// The row of `body` among the open session's, added if new.
    fn row_of(&mut self, from: (usize, usize), body: &HitBody) -> u32 {
        let row = self.row(from, body);
        let mine = self.rows.open();
        match mine.iter().position(|r| *r == row) {
            Some(k) => k as u32,
            None => {
                let k = mine.len() as u32;
                self.rows.push(row);
                k
            }
        }
    }

    /// `body` as a row of the session whose table entries start at `from`:
    /// its detection and effect found among the session's (by address, else
    /// by value) or added.
    fn row(&mut self, from: (usize, usize), body: &HitBody) -> Row {
        fn number<T: PartialEq>(table: &mut Vec<Arc<T>>, from: usize, x: &Option<Arc<T>>) -> u32 {
            let Some(x) = x else { return 0 };
            let mine = &table[from..];
            let k = mine
                .iter()
                .position(|m| Arc::ptr_eq(m, x))
                .or_else(|| mine.iter().position(|m| **m == **x));
            let k = match k {
                Some(k) => from + k,
                None => {
                    table.push(x.clone());
                    table.len() - 1
                }
            };
            k as u32 + 1
        }
        Row {
            first: number(&mut self.firsts, from.0, &body.first),
            effect: number(&mut self.effects, from.1, &body.effect),
            judge_due: body.judge_due,
            judge_no_verdict: body.judge_no_verdict,
        }
    }

    /// Configuration `c` has row `row` on session `session` (after its last).
    pub(super) fn pick(&mut self, c: usize, session: u32, row: u32) -> std::io::Result<()> {
        let p = &mut self.picks[c];
        debug_assert!(session >= p.next, "picks in session order");
        put_number(&mut p.tail, session - p.next);
        put_number(&mut p.tail, row);
        p.next = session + 1;
        p.count += 1;
        if p.tail.len() >= CHUNK {
            let at = self.spill.append(&p.tail)?;
            p.chunks.push((at, p.tail.len() as u32));
            p.tail.clear();
        }
        Ok(())
    }

    /// Configuration `c`'s picks, read back. The spill file is this
    /// process's own, written above: failing to read it back is the
    /// machine's failure (a disk error, a full or removed TMPDIR), reported
    /// as an error of the command, never a panic.
    fn read(&self, c: usize) -> std::io::Result<Decoded> {
        let p = &self.picks[c];
        let spilled: usize = p.chunks.iter().map(|&(_, n)| n as usize).sum();
        let mut bytes = Vec::with_capacity(spilled + p.tail.len());
        for &(at, n) in &p.chunks {
            self.spill.read(at, &mut bytes, n as usize)?;
        }
        bytes.extend_from_slice(&p.tail);
        Ok(Decoded { bytes })
    }

    /// Call `f(session, hit)` for each of configuration `c`'s hits, in
    /// session order (nothing is copied).
    pub fn each<'a>(
        &'a self,
        c: usize,
        mut f: impl FnMut(u32, HitView<'a>),
    ) -> std::io::Result<()> {
        self.read(c)?
            .each(|s, k| f(s, self.view(&self.rows.session(s as usize)[k as usize])));
        Ok(())
    }

    /// Configuration `c`'s hits borrowed, one entry per session (`None`:
    /// nothing happened): what scores read.
    pub fn views(&self, c: usize) -> std::io::Result<Vec<Option<HitView<'_>>>> {
        let mut out = vec![None; self.sessions()];
        self.each(c, |s, h| out[s as usize] = Some(h))?;
        Ok(out)
    }

    /// `(session, row)` of each of configuration `c`'s hits, in session order.
    pub fn each_pick(&self, c: usize, f: impl FnMut(u32, u32)) -> std::io::Result<()> {
        self.read(c)?.each(f);
        Ok(())
    }

    /// Configuration `c`'s hits, in session order.
    pub fn hits(&self, c: usize) -> std::io::Result<Vec<Hit>> {
        let mut out = Vec::with_capacity(self.count(c));
        self.read(c)?.each(|s, k| {
            out.push(Hit {
                session: s,
                body: self.body_at(s, k),
            })
        });
        Ok(out)
    }

    /// Configuration `c`'s hit on session `s`, if any.
    pub fn hit(&self, c: usize, s: usize) -> std::io::Result<Option<Hit>> {
        let mut found = None;
        self.read(c)?.each(|x, k| {
            if x as usize == s {
                found = Some(Hit {
                    session: x,
                    body: self.body_at(x, k),
                });
            }
        });
        Ok(found)
    }

    /// Configuration `c`'s hits, one entry per session (`None`: nothing happened).
    pub fn dense(&self, c: usize) -> std::io::Result<Vec<Option<Hit>>> {
        let mut out = vec![None; self.sessions()];
        self.read(c)?.each(|s, k| {
            out[s as usize] = Some(Hit {
                session: s,
                body: self.body_at(s, k),
            })
        });
        Ok(out)
    }

    /// Configuration `c` with its hits.
    pub fn config(&self, c: usize) -> std::io::Result<ConfigOutcomes> {
        Ok(ConfigOutcomes {
            config: self.ids[c].clone(),
            hits: self.hits(c)?,
        })
    }

    /// Every configuration with its hits (small records: tests, schema 2).
    pub fn configs(&self) -> std::io::Result<Vec<ConfigOutcomes>> {
        (0..self.len()).map(|c| self.config(c)).collect()
    }

    /// The store of `configs`' hits over `sessions` sessions (at least one
    /// past the last hit); each configuration's hits must be in session order.
    pub fn from_configs(configs: Vec<ConfigOutcomes>, sessions: usize) -> Result<Outcomes, Misfit> {
        for c in &configs {
            if c.hits.windows(2).any(|w| w[0].session >= w[1].session) {
                return Err(Misfit::OutOfOrder {
                    config: c.config.clone(),
                });
            }
            if let Some(h) = c.hits.last().filter(|h| h.session as usize >= sessions) {
                return Err(Misfit::PastTheEnd {
                    config: c.config.clone(),
                    session: h.session,
                    sessions,
                });
            }
        }
        let mut out = Outcomes::new(configs.iter().map(|c| c.config.clone()).collect());
        let mut at = vec![0usize; configs.len()];
        let mut one = Vec::new();
        for s in 0..sessions as u32 {
            one.clear();
            for (c, conf) in configs.iter().enumerate() {
                if let Some(h) = conf.hits.get(at[c]).filter(|h| h.session == s) {
                    one.push((c as u32, h.clone()));
                    at[c] += 1;
                }
            }
            out.push_session(&one)
                .map_err(|e| Misfit::Spill(e.to_string()))?;
        }
        Ok(out)
    }

    /// Put the configurations in the order `order` gives (`order[i]`: the
    /// current index of the configuration that goes to place `i`).
    pub fn reorder(&mut self, order: &[usize]) {
        self.ids = order.iter().map(|&i| self.ids[i].clone()).collect();
        self.picks = order.iter().map(|&i| self.picks[i].clone()).collect();
    }

    /// Make the store list exactly `n` sessions: sessions without a hit are
    /// added at the end, or rows past the `n`th session dropped (refused
    /// when a configuration has a hit there).
    pub fn fit_sessions(&mut self, n: usize) -> Result<(), Misfit> {
        for (c, p) in self.picks.iter().enumerate() {
            if p.next as usize > n {
                return Err(Misfit::PastTheEnd {
                    config: self.ids[c].clone(),
                    session: p.next - 1,
                    sessions: n,
                });
            }
        }
        if self.sessions() > n {
            self.rows.truncate(n);
        }
        while self.sessions() < n {
            self.rows.close();
        }
        Ok(())
    }

    /// Whether the rows are as a sweep makes them: every row of a session
    /// met by some configuration, numbered as configurations meet them,
    /// distinct by value. A record read from a file that is not (edited by
    /// hand) is made so again, as its writer would have.
    pub fn canonical(&self) -> std::io::Result<bool> {
        let n = self.sessions();
        let mut met = vec![0u32; n];
        for c in 0..self.len() {
            let mut ok = true;
            self.each_pick(c, |s, k| {
                let m = &mut met[s as usize];
                if k > *m {
                    ok = false;
                } else if k == *m {
                    *m += 1;
                }
            })?;
            if !ok {
                return Ok(false);
            }
        }
        // A session's table entries are distinct by value: rows are equal
        // as their hits are.
        Ok((0..n).all(|s| {
            let rows = self.session_rows(s);
            met[s] as usize == rows.len()
                && rows
                    .iter()
                    .enumerate()
                    .all(|(i, r)| rows[..i].iter().all(|x| x != r))
        }))
    }

    /// The same hits with the sessions renumbered: session `s` becomes
    /// `index[s]` (`None`: dropped), into `sessions` sessions. Consumes the
    /// store: each configuration's picks are freed once copied, so the two
    /// stores are not held whole at once (a sweep's peak at its end).
    pub fn renumber(mut self, index: &[Option<u32>], sessions: usize) -> std::io::Result<Outcomes> {
        let mut old_of = vec![u32::MAX; sessions];
        for (old, new) in index.iter().enumerate() {
            if let Some(new) = new {
                old_of[*new as usize] = old as u32;
            }
        }
        let mut out = Outcomes::new(self.ids.clone());
        for &old in &old_of {
            if old != u32::MAX {
                for &r in self.session_rows(old as usize) {
                    out.rows.push(r);
                }
            }
            out.rows.close();
        }
        self.rows = RowStore::default();
        // Rows name table entries by number, whatever their session's place.
        out.firsts = std::mem::take(&mut self.firsts);
        out.effects = std::mem::take(&mut self.effects);
        let mut picks: Vec<(u32, u32)> = Vec::new();
        for c in 0..self.len() {
            picks.clear();
            self.each_pick(c, |s, k| {
                if let Some(new) = index.get(s as usize).copied().flatten() {
                    picks.push((new, k));
                }
            })?;
            self.picks[c] = Picks::default();
            // A configuration has at most one hit a session: the order is total.
            picks.sort_unstable_by_key(|&(s, _)| s);
            for &(s, k) in &picks {
                out.pick(c, s, k)?;
            }
        }
        Ok(out)
    }

    /// Add `other`'s sessions after these; `at[c]` is the configuration
    /// here of `other`'s configuration `c`.
    pub fn append(&mut self, other: &Outcomes, at: &[usize]) -> std::io::Result<()> {
        let offset = self.sessions() as u32;
        let (firsts, effects) = (self.firsts.len() as u32, self.effects.len() as u32);
        let moved = |n: u32, by: u32| if n == 0 { 0 } else { n + by };
        for s in 0..other.sessions() {
            for r in other.session_rows(s) {
                self.rows.push(Row {
                    first: moved(r.first, firsts),
                    effect: moved(r.effect, effects),
                    ..*r
                });
            }
            self.rows.close();
        }
        self.firsts.extend_from_slice(&other.firsts);
        self.effects.extend_from_slice(&other.effects);
        let mut picks: Vec<(u32, u32)> = Vec::new();
        for (c, &to) in at.iter().enumerate() {
            picks.clear();
            other.each_pick(c, |s, k| picks.push((s + offset, k)))?;
            for &(s, k) in &picks {
                self.pick(to, s, k)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
impl Outcomes {
    /// Spill every configuration's held picks, then put a write-only
    /// handle in place of the spill file: reads fail, as on a failing disk.
    pub(crate) fn break_spill(&mut self) {
        for p in &mut self.picks {
            if !p.tail.is_empty() {
                let at = self.spill.append(&p.tail).unwrap();
                p.chunks.push((at, p.tail.len() as u32));
                p.tail.clear();
            }
        }
        let named = tempfile::NamedTempFile::new().unwrap();
        let write_only = std::fs::OpenOptions::new()
            .write(true)
            .open(named.path())
            .unwrap();
        let mut held = self.spill.0.lock().unwrap();
        *held = Some((write_only, held.as_ref().map_or(0, |h| h.1)));
    }
}

impl PartialEq for Outcomes {
    fn eq(&self, other: &Outcomes) -> bool {
        self.ids == other.ids
            && self.sessions() == other.sessions()
            && (0..self.len()).all(|c| match (self.hits(c), other.hits(c)) {
                (Ok(a), Ok(b)) => a == b,
                // Unreadable: nothing can be said equal.
                _ => false,
            })
    }
}

impl std::fmt::Debug for Outcomes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outcomes")
            .field("configurations", &self.len())
            .field("sessions", &self.sessions())
            .field("rows", &self.rows.total())
            .field(
                "hits",
                &self.picks.iter().map(|p| p.count as u64).sum::<u64>(),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::result::FirstDetection;

    fn hit(judge_due: u32) -> Hit {
        Hit::new(
            0,
            HitBody {
                judge_due,
                ..Default::default()
            },
        )
    }

    /// A row is 16 bytes; a session's detections sit once in the table
    /// however many rows name them, rows read back as the hits they were
    /// made of, and an equal detection at another address is the same row.
    #[test]
    fn rows_name_each_session_s_detections_once() {
        assert_eq!(std::mem::size_of::<Row>(), 16);
        let mut o = Outcomes::new(vec!["a".into(), "b".into(), "c".into()]);
        let first = || {
            Arc::new(FirstDetection {
                turn: 1,
                event: 2,
                kind: "k".into(),
                detail: "d".into(),
                place: None,
            })
        };
        let shared = first();
        let detected = |due: u32, d: &Arc<FirstDetection>| {
            Hit::new(
                0,
                HitBody {
                    judge_due: due,
                    first: Some(d.clone()),
                    ..Default::default()
                },
            )
        };
        for _ in 0..3 {
            o.push_session(&[
                (0, hit(4)),
                (1, detected(4, &shared)),
                (2, detected(5, &first())),
            ])
            .unwrap();
        }
        assert!(o.canonical().unwrap());
        o.push_rows(vec![hit(4).body, hit(5).body]);
        assert_eq!(o.firsts.len(), 3, "one a session");
        assert_eq!(o.row_count(0), 3);
        assert_eq!(o.rows(3)[1].judge_due, 5);
        let a: Vec<(u32, u32)> = o
            .hits(0)
            .unwrap()
            .iter()
            .map(|h| (h.session, h.judge_due))
            .collect();
        assert_eq!(a, [(0, 4), (1, 4), (2, 4)]);
        let c = o.hits(2).unwrap();
        assert!(c.iter().all(|h| h.first.as_deref() == Some(&*shared)));
        assert_eq!(c[1].judge_due, 5);
    }

    /// Sessions across several blocks read back as pushed, also after
    /// sessions without rows, a truncation inside a block and growth again.
    #[test]
    fn row_blocks_give_each_session_its_rows() {
        let row = |s: usize, k: usize| Row {
            judge_due: s as u32,
            judge_no_verdict: k as u32,
            ..Row::default()
        };
        let rows_of = |s: usize| if s % 7 == 3 { 0 } else { s % 5 + 1 };
        let mut store = RowStore::default();
        let n = 3 * BLOCK + 17;
        for s in 0..n {
            for k in 0..rows_of(s) {
                store.push(row(s, k));
            }
            store.close();
        }
        let check = |store: &RowStore, n: usize| {
            assert_eq!(store.sessions(), n);
            for s in 0..n {
                let want: Vec<Row> = (0..rows_of(s)).map(|k| row(s, k)).collect();
                assert_eq!(store.session(s), want, "session {s}");
            }
            assert_eq!(store.total(), (0..n).map(rows_of).sum::<usize>());
        };
        check(&store, n);
        assert_eq!(store.blocks[0].capacity(), store.blocks[0].len(), "fitted");
        store.truncate(BLOCK + 5);
        check(&store, BLOCK + 5);
        for s in BLOCK + 5..n {
            for k in 0..rows_of(s) {
                store.push(row(s, k));
            }
            store.close();
        }
        check(&store, n);
        let mut empty = RowStore::default();
        (0..BLOCK + 2).for_each(|_| empty.close());
        empty.truncate(BLOCK + 1);
        assert_eq!((empty.sessions(), empty.total()), (BLOCK + 1, 0));
    }

    /// Reading the spilled hits back fails: every reader says so, none
    /// panics, and what was not spilled still reads.
    #[test]
    fn an_unreadable_spill_file_is_an_error_not_a_panic() {
        let mut o = Outcomes::new(vec!["a".into(), "b".into()]);
        for s in 0..2 * CHUNK as u32 {
            o.push_session(&[(0, hit(s % 5))]).unwrap();
        }
        assert!(!o.picks[0].chunks.is_empty(), "spilled");
        o.break_spill();
        assert!(o.hits(0).is_err());
        assert!(o.dense(0).is_err());
        assert!(o.hit(0, 3).is_err());
        assert!(o.each(0, |_, _| {}).is_err());
        assert!(o.each_pick(0, |_, _| {}).is_err());
        assert!(o.configs().is_err());
        assert!(o.canonical().is_err());
        assert!(o.clone().renumber(&[Some(0)], 1).is_err());
        assert_ne!(o, o.clone(), "unreadable: nothing is said equal");
        // Configuration b has no hit: nothing to read.
        assert!(o.hits(1).unwrap().is_empty());
    }

    /// Enough hits to spill many chunks come back whole, with their rows
    /// shared by value and numbered as configurations meet them.
    #[test]
    fn spilled_picks_come_back_whole() {
        let mut o = Outcomes::new(vec!["a".into(), "b".into(), "c".into()]);
        let n = 3 * CHUNK as u32;
        for s in 0..n {
            let mut one = vec![(0, hit(s % 7)), (2, hit(s % 7))];
            if s % 3 == 0 {
                one.insert(1, (1, hit(1000 + s)));
            }
            o.push_session(&one).unwrap();
        }
        assert!(!o.picks[0].chunks.is_empty(), "spilled");
        assert_eq!(o.sessions(), n as usize);
        let a: Vec<(u32, u32)> = o
            .hits(0)
            .unwrap()
            .iter()
            .map(|h| (h.session, h.judge_due))
            .collect();
        assert_eq!(a, (0..n).map(|s| (s, s % 7)).collect::<Vec<_>>());
        let b: Vec<(u32, u32)> = o
            .hits(1)
            .unwrap()
            .iter()
            .map(|h| (h.session, h.judge_due))
            .collect();
        assert_eq!(
            b,
            (0..n)
                .filter(|s| s % 3 == 0)
                .map(|s| (s, 1000 + s))
                .collect::<Vec<_>>()
        );
        // Equal by value: one row.
        assert_eq!(o.rows(0).len(), 2);
        assert_eq!(o.rows(1).len(), 1);
        assert!(o.canonical().unwrap());
        let d = o.dense(1).unwrap();
        assert_eq!(
            (d.len(), d[3].as_ref().map(|h| h.judge_due)),
            (n as usize, Some(1003))
        );
        assert!(d[4].is_none());
        // Borrowed, the same hits.
        for c in 0..3 {
            let dense = o.dense(c).unwrap();
            let seen: Vec<Option<HitView>> =
                dense.iter().map(|h| h.as_ref().map(|h| h.view())).collect();
            assert_eq!(o.views(c).unwrap(), seen);
        }
    }

    /// Renumbered sessions keep their hits; dropped ones go.
    #[test]
    fn renumbered_sessions_keep_their_hits() {
        let mut o = Outcomes::new(vec!["a".into(), "b".into()]);
        // Arrival order c, a, x (dropped), b.
        o.push_session(&[(0, hit(30)), (1, hit(31))]).unwrap();
        o.push_session(&[(1, hit(11))]).unwrap();
        o.push_session(&[(0, hit(99)), (1, hit(99))]).unwrap();
        o.push_session(&[(0, hit(20))]).unwrap();
        let r = o.renumber(&[Some(2), Some(0), None, Some(1)], 3).unwrap();
        let seen = |c: usize| -> Vec<(u32, u32)> {
            r.hits(c)
                .unwrap()
                .iter()
                .map(|h| (h.session, h.judge_due))
                .collect()
        };
        assert_eq!(seen(0), vec![(1, 20), (2, 30)]);
        assert_eq!(seen(1), vec![(0, 11), (2, 31)]);
        assert!(r.canonical().unwrap());
    }

    /// A store made from hit lists gives them back; out of order and past
    /// the end are refused.
    #[test]
    fn configs_round_trip_and_misfits_are_refused() {
        let conf = |id: &str, hits: Vec<Hit>| ConfigOutcomes {
            config: id.into(),
            hits,
        };
        let at = |s: u32, j: u32| {
            let mut h = hit(j);
            h.session = s;
            h
        };
        let configs = vec![
            conf("a", vec![at(0, 1), at(4, 2)]),
            conf("b", vec![at(1, 1), at(4, 3)]),
        ];
        let o = Outcomes::from_configs(configs.clone(), 6).unwrap();
        assert_eq!(o.configs().unwrap(), configs);
        assert_eq!((o.sessions(), o.sessions_with_hits()), (6, 5));
        let mut more = o.clone();
        more.append(&o, &[1, 0]).unwrap();
        assert_eq!(more.sessions(), 12);
        assert_eq!(more.hits(1).unwrap().len(), 4);
        assert_eq!(more.hits(1).unwrap()[2].session, 6);
        assert_eq!(
            Outcomes::from_configs(vec![conf("x", vec![at(2, 1), at(2, 1)])], 3),
            Err(Misfit::OutOfOrder { config: "x".into() })
        );
        let mut o2 = o.clone();
        assert_eq!(
            o2.fit_sessions(4).unwrap_err().to_string(),
            "configuration a has a hit on session 4, but the result lists 4 sessions"
        );
        o2.fit_sessions(9).unwrap();
        assert_eq!(o2.sessions(), 9);
        // Rows numbered out of the order configurations meet them.
        let mut odd = Outcomes::new(vec!["a".into()]);
        odd.rows.push(Row::default());
        odd.rows.push(Row {
            judge_due: 3,
            ..Row::default()
        });
        odd.rows.close();
        odd.pick(0, 0, 1).unwrap();
        assert!(!odd.canonical().unwrap());
    }
}
