//! `sweep.csv` (one row per configuration) and `detections.csv` (one row per
//! configuration and session with a detection). Column names are what gates
//! and charts refer to; floats have fixed precision; text cells are made safe
//! for spreadsheets.

use super::safe_cell;
use crate::score::metrics::{verdict_at, SCORES, SCORE_NAMES};
use crate::score::SweepResult;

/// The columns of `sweep.csv` after the parameters.
pub fn score_header() -> Vec<&'static str> {
    let mut h: Vec<&'static str> = SCORE_NAMES.to_vec();
    h.extend(["detection_kinds", "stock", "pareto", "recommended"]);
    h
}

/// The score cells of one row, in [`SCORES`] order (whole numbers without
/// decimals, the rest at fixed precision), then the detection kinds. Each
/// cell is formatted into `buf` and handed to the writer: a large grid's
/// rows are 10,000 x 60 cells.
fn write_score_cells<W: std::io::Write>(
    w: &mut csv::Writer<W>,
    s: &crate::score::metrics::Scores,
    buf: &mut String,
) -> csv::Result<()> {
    use std::fmt::Write;
    for info in SCORES {
        buf.clear();
        match s.get(info.name) {
            Some(x) if info.whole => {
                let _ = write!(buf, "{}", x as i64);
            }
            Some(x) => crate::util::number::push_fixed(buf, x),
            None => {}
        }
        w.write_field(buf.as_str())?;
    }
    buf.clear();
    for (i, (k, n)) in s.kinds.iter().enumerate() {
        if i > 0 {
            buf.push(';');
        }
        let _ = write!(buf, "{k}:{n}");
    }
    w.write_field(buf.as_str())
}

/// `sweep.csv`: one row per configuration, then the union (`--combine`) as
/// family `any` with no parameter values.
pub fn sweep_csv(r: &SweepResult) -> Vec<u8> {
    let params = &r.record.grid.param_columns;
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<&str> = vec!["config", "label", "family", "profile"];
    header.extend(params.iter().map(String::as_str));
    header.extend(score_header());
    w.write_record(&header).expect("in-memory write");
    write_rows(&mut w, r).expect("in-memory write");
    w.into_inner().expect("in-memory flush")
}

/// `sweep.csv`'s rows after its header: each configuration, then the union.
fn write_rows(w: &mut csv::Writer<Vec<u8>>, r: &SweepResult) -> csv::Result<()> {
    let params = &r.record.grid.param_columns;
    let mut buf = String::new();
    for (i, v) in r.record.grid.configs.iter().enumerate() {
        w.write_field(&v.id)?;
        w.write_field(safe_cell(&v.label).as_ref())?;
        w.write_field(&v.family)?;
        w.write_field(&v.profile)?;
        for p in params {
            w.write_field(v.params.get(p).map_or("".into(), |x| safe_cell(x)).as_ref())?;
        }
        write_score_cells(w, &r.scores[i], &mut buf)?;
        w.write_field(v.stock.to_string())?;
        w.write_field(r.pareto.contains(&i).to_string())?;
        w.write_field((r.recommended == Some(i)).to_string())?;
        w.write_record(None::<&[u8]>)?;
    }
    if let Some(u) = &r.advice.union {
        w.write_field(&u.id)?;
        w.write_field(safe_cell(&u.label).as_ref())?;
        w.write_field("any")?;
        w.write_field("")?;
        for _ in params {
            w.write_field("")?;
        }
        write_score_cells(w, &u.scores, &mut buf)?;
        for _ in 0..3 {
            w.write_field("false")?;
        }
        w.write_record(None::<&[u8]>)?;
    }
    Ok(())
}

/// `groups.csv`: one row per (configuration, group), then the union's: the
/// configuration's id, the key sessions are grouped by, the group, and
/// `sweep.csv`'s score columns and intervals under the same names, scored on
/// that group's sessions alone (so the counts add up to `sweep.csv`'s).
pub fn groups_csv(r: &SweepResult) -> std::io::Result<Vec<u8>> {
    use rayon::prelude::*;
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<&str> = vec!["config", "group_by", "group"];
    header.extend(SCORE_NAMES);
    header.push("detection_kinds");
    w.write_record(&header).expect("in-memory write");
    // Configurations are scored apart, a group at a time, on every thread.
    let mut rows: Vec<(&str, Vec<crate::score::metrics::Scores>)> = r
        .record
        .grid
        .configs
        .par_iter()
        .enumerate()
        .map(|(i, v)| Ok((v.id.as_str(), r.config_group_scores(i)?)))
        .collect::<std::io::Result<_>>()?;
    if let Some(u) = &r.advice.union {
        let view: Vec<Option<&crate::result::Hit>> = u.hits.iter().map(Option::as_ref).collect();
        rows.push((u.id.as_str(), r.group_scores(&view)));
    }
    let by = safe_cell(&r.groups.by);
    let names: Vec<_> = r.groups.names.iter().map(|n| safe_cell(n)).collect();
    let mut buf = String::new();
    for (id, per_group) in &rows {
        // Zipped: a sweep that read no session (--allow-empty) has no group.
        for (s, name) in per_group.iter().zip(&names) {
            let write = |w: &mut csv::Writer<Vec<u8>>, buf: &mut String| -> csv::Result<()> {
                w.write_field(id)?;
                w.write_field(by.as_ref())?;
                w.write_field(name.as_ref())?;
                write_score_cells(w, s, buf)?;
                w.write_record(None::<&[u8]>)
            };
            write(&mut w, &mut buf).expect("in-memory write");
        }
    }
    Ok(w.into_inner().expect("in-memory flush"))
}

/// `sweep.csv`.
pub struct SweepCsv;

impl super::output::Output for SweepCsv {
    fn name(&self) -> &str {
        // With summary.json, what marks an output folder: the core's name.
        crate::util::outdir::SWEEP_CSV
    }
    fn cost(&self) -> u32 {
        20
    }
    fn render(&self, r: &SweepResult, w: &mut (dyn std::io::Write + Send)) -> std::io::Result<()> {
        w.write_all(&sweep_csv(r))
    }
}

/// `groups.csv`.
pub struct GroupsCsv;

impl super::output::Output for GroupsCsv {
    fn name(&self) -> &str {
        "groups.csv"
    }
    fn cost(&self) -> u32 {
        10
    }
    fn render(&self, r: &SweepResult, w: &mut (dyn std::io::Write + Send)) -> std::io::Result<()> {
        w.write_all(&groups_csv(r)?)
    }
}

/// `detections.csv`.
pub struct DetectionsCsv;

impl super::output::Output for DetectionsCsv {
    fn name(&self) -> &str {
        "detections.csv"
    }
    fn cost(&self) -> u32 {
        40
    }
    fn render(&self, r: &SweepResult, w: &mut (dyn std::io::Write + Send)) -> std::io::Result<()> {
        write_detections_csv(r, w)
    }
}

/// `detections.csv`: the scored (first) detection of each configuration on each session.
/// Streamed to `out` (millions of rows in a large sweep).
pub fn write_detections_csv(r: &SweepResult, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    use crate::result::FirstDetection;
    let mut w = csv::Writer::from_writer(out);
    w.write_record([
        "config",
        "session",
        "turn",
        "event",
        "kind",
        "label",
        "outcome",
        "turns_to_detection",
        "stop_turn",
        "detail",
        "file",
        "line",
        "pointer",
    ])?;
    let rows = detection_rows(r);
    w.flush()?;
    let out = w.into_inner().map_err(|e| e.into_error())?;
    // A large sweep has millions of rows but few distinct detections: each
    // row is its configuration, the cells of its detection on its session
    // (rendered once, found among that session's few), its stop turn, and
    // the detection's place (once). Rows gather in a block written whole.
    // Cells kept rendered for every session were the largest part of a
    // sweep's peak at its end (8 MB over 20,000 tool-heavy sessions): most
    // need no quoting, so only cells whose rendering differs from their
    // fields joined by commas are kept; the rest are written from the
    // detection's fields again.
    let mut cells: Vec<Vec<(*const FirstDetection, Cells)>> =
        vec![Vec::new(); r.record.sessions.len()];
    let mut block: Vec<u8> = Vec::with_capacity(BLOCK + 4096);
    for (id, hits) in rows {
        let id = csv_cells(&[id]);
        for o in hits? {
            let Some(d) = &o.first else { continue };
            let known = &mut cells[o.session as usize];
            let ptr = std::sync::Arc::as_ptr(d);
            let at = match known.iter().position(|(p, _)| *p == ptr) {
                Some(at) => at,
                None => {
                    // A session has one or two: room for four each (Vec's
                    // first growth) was half this cache.
                    known.reserve_exact(1);
                    known.push((ptr, detection_cells(r, o.session, d)));
                    known.len() - 1
                }
            };
            let (mid, tail) = &known[at].1;
            block.extend_from_slice(&id);
            block.push(b',');
            match mid {
                Some(m) => block.extend_from_slice(m),
                None => plain_mid(&mut block, r, o.session, d),
            }
            block.push(b',');
            if let Some(t) = o.stop_turn() {
                push_number(&mut block, t);
            }
            block.push(b',');
            match tail {
                Some(t) => block.extend_from_slice(t),
                None => plain_tail(&mut block, d),
            }
            block.push(b'\n');
            if block.len() >= BLOCK {
                out.write_all(&block)?;
                block.clear();
            }
        }
    }
    out.write_all(&block)
}

/// Bytes of rows gathered before they are written.
const BLOCK: usize = 1 << 20;

/// The cells of detection `d` on session `session` either side of the stop
/// turn: session to turns-to-detection, and detail to pointer.
/// The rows of detections.csv (and detections.parquet): every
/// configuration's hits by its id, in grid order, then the union's.
pub(crate) fn detection_rows(
    r: &SweepResult,
) -> impl Iterator<Item = (&str, std::io::Result<Vec<crate::result::Hit>>)> {
    let union: Vec<crate::result::Hit> = r
        .advice
        .union
        .iter()
        .flat_map(|u| u.hits.iter().flatten().cloned())
        .collect();
    let o = &r.record.outcomes;
    (0..o.len()).map(move |c| (o.id(c), o.hits(c))).chain(
        r.advice
            .union
            .iter()
            .map(move |u| (u.id.as_str(), Ok(union.clone()))),
    )
}

/// A detection's cells either side of the stop turn, each `None` when it
/// is its fields joined by commas as they are ([`plain_mid`], [`plain_tail`]).
type Cells = (Option<Vec<u8>>, Option<Vec<u8>>);

fn detection_cells(r: &SweepResult, session: u32, d: &crate::result::FirstDetection) -> Cells {
    let s = &r.record.sessions[session as usize];
    let label = s.label();
    let (verd, ttd) = verdict_at(Some(d.turn), label);
    let detail: String = d.detail.chars().take(300).collect();
    let place = d.place.as_ref();
    let mid = csv_cells(&[
        &safe_cell(&s.id),
        &d.turn.to_string(),
        &d.event.to_string(),
        &d.kind,
        label_str(label),
        verd.as_str(),
        &ttd.map(|t| t.to_string()).unwrap_or_default(),
    ]);
    let tail = csv_cells(&[
        &safe_cell(&detail),
        &safe_cell(place.map_or("", |p| p.file.as_str())),
        &place
            .and_then(|p| p.line)
            .map(|l| l.to_string())
            .unwrap_or_default(),
        &safe_cell(place.and_then(|p| p.pointer.as_deref()).unwrap_or("")),
    ]);
    let (mut plain_m, mut plain_t) = (Vec::new(), Vec::new());
    plain_mid(&mut plain_m, r, session, d);
    plain_tail(&mut plain_t, d);
    (
        (mid != plain_m).then_some(mid),
        (tail != plain_t).then_some(tail),
    )
}

fn label_str(label: Option<crate::event::Label>) -> &'static str {
    match label {
        Some(l) if l.is_loop => "loop",
        Some(_) => "clean",
        None => "",
    }
}

/// The cells of [`detection_cells`]' first part as plain fields: session,
/// turn, event, kind, label, outcome, turns-to-detection.
fn plain_mid(out: &mut Vec<u8>, r: &SweepResult, session: u32, d: &crate::result::FirstDetection) {
    let s = &r.record.sessions[session as usize];
    let label = s.label();
    let (verd, ttd) = verdict_at(Some(d.turn), label);
    out.extend_from_slice(s.id.as_bytes());
    out.push(b',');
    push_number(out, d.turn);
    out.push(b',');
    push_number(out, d.event);
    out.push(b',');
    out.extend_from_slice(d.kind.as_bytes());
    out.push(b',');
    out.extend_from_slice(label_str(label).as_bytes());
    out.push(b',');
    out.extend_from_slice(verd.as_str().as_bytes());
    out.push(b',');
    if let Some(t) = ttd {
        if t < 0 {
            out.push(b'-');
        }
        match u32::try_from(t.unsigned_abs()) {
            Ok(n) => push_number(out, n),
            Err(_) => out.extend_from_slice(t.unsigned_abs().to_string().as_bytes()),
        }
    }
}

/// The cells of [`detection_cells`]' second part as plain fields: detail,
/// file, line, pointer.
fn plain_tail(out: &mut Vec<u8>, d: &crate::result::FirstDetection) {
    let place = d.place.as_ref();
    out.extend_from_slice(d.detail.as_bytes());
    out.push(b',');
    out.extend_from_slice(place.map_or("", |p| p.file.as_str()).as_bytes());
    out.push(b',');
    if let Some(l) = place.and_then(|p| p.line) {
        push_number(out, l);
    }
    out.push(b',');
    out.extend_from_slice(
        place
            .and_then(|p| p.pointer.as_deref())
            .unwrap_or("")
            .as_bytes(),
    );
}

/// `n` in decimal, as `to_string` writes it, without allocating.
fn push_number(out: &mut Vec<u8>, mut n: u32) {
    let mut digits = [0u8; 10];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Cells as the CSV writer writes them in a row (quoted where needed), joined
/// by commas, without the line end.
fn csv_cells(fields: &[&str]) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(fields).expect("in-memory write");
    let mut v = w.into_inner().expect("in-memory flush");
    v.pop();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_to_string_writes_them() {
        for n in [0, 7, 10, 99, 100, 4_294_967_295, 1_000_000_007] {
            let mut v = b"x".to_vec();
            push_number(&mut v, n);
            assert_eq!(v, format!("x{n}").into_bytes());
        }
    }
}
