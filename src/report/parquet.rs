//! `--parquet`: `sweep.parquet`, `groups.parquet` and `detections.parquet`,
//! the CSVs' columns under the same names, typed for pandas, polars, DuckDB
//! and pyarrow: counts and turns as `Int64`, rates and other scores as
//! `Float64` (the value itself, not the CSV's six decimals), `stock`,
//! `pareto` and `recommended` as `Boolean`, ids, labels and text as `Utf8`
//! (as logged: no spreadsheet prefix, which is the CSVs' alone), and a
//! parameter column as the type all its values share (`Int64`, `Float64`,
//! `Boolean`, else `Utf8`). An empty CSV cell is a null. Rows go to the
//! writer in batches of [`ROWS`], each a row group as soon as it is full
//! (a large sweep's detections are never one batch in memory); columns are
//! zstd-compressed.

use super::output::Output;
use crate::result::{FirstDetection, Hit};
use crate::score::metrics::{verdict_at, Scores, SCORES};
use crate::score::SweepResult;
use arrow_array::builder::{BooleanBuilder, Float64Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use std::io::Write;
use std::sync::Arc;

/// Rows per batch and per row group.
pub const ROWS: usize = 64 * 1024;

/// The three Parquet outputs, for [`super::outputs::Outputs::standard`].
pub fn outputs() -> Vec<Box<dyn Output>> {
    vec![
        Box::new(SweepParquet),
        Box::new(DetectionsParquet),
        Box::new(GroupsParquet),
    ]
}

/// A cell of a row.
enum Cell<'a> {
    Null,
    Str(&'a str),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl<'a> Cell<'a> {
    /// Text, null when empty (an empty CSV cell).
    fn text(s: &'a str) -> Cell<'a> {
        if s.is_empty() {
            Cell::Null
        } else {
            Cell::Str(s)
        }
    }

    fn int(x: Option<impl Into<i64>>) -> Cell<'a> {
        x.map_or(Cell::Null, |x| Cell::Int(x.into()))
    }
}

/// A column's builder.
enum Column {
    Str(StringBuilder),
    Int(Int64Builder),
    Float(Float64Builder),
    Bool(BooleanBuilder),
}

impl Column {
    fn new(t: &DataType) -> Column {
        match t {
            DataType::Int64 => Column::Int(Int64Builder::with_capacity(ROWS)),
            DataType::Float64 => Column::Float(Float64Builder::with_capacity(ROWS)),
            DataType::Boolean => Column::Bool(BooleanBuilder::with_capacity(ROWS)),
            _ => Column::Str(StringBuilder::new()),
        }
    }

    fn push(&mut self, c: Cell) {
        match (self, c) {
            (Column::Str(b), Cell::Str(s)) => b.append_value(s),
            (Column::Int(b), Cell::Int(x)) => b.append_value(x),
            (Column::Float(b), Cell::Float(x)) => b.append_value(x),
            (Column::Bool(b), Cell::Bool(x)) => b.append_value(x),
            (Column::Str(b), _) => b.append_null(),
            (Column::Int(b), _) => b.append_null(),
            (Column::Float(b), _) => b.append_null(),
            (Column::Bool(b), _) => b.append_null(),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Column::Str(b) => Arc::new(b.finish()),
            Column::Int(b) => Arc::new(b.finish()),
            Column::Float(b) => Arc::new(b.finish()),
            Column::Bool(b) => Arc::new(b.finish()),
        }
    }
}

/// A Parquet file written a batch of rows at a time.
struct Table<W: Write + Send> {
    schema: SchemaRef,
    columns: Vec<Column>,
    /// Rows in the builders.
    rows: usize,
    /// Rows per batch and row group.
    group: usize,
    writer: ArrowWriter<W>,
}

impl<W: Write + Send> Table<W> {
    fn new(out: W, fields: Vec<Field>) -> std::io::Result<Table<W>> {
        Table::with_groups_of(out, fields, ROWS)
    }

    fn with_groups_of(out: W, fields: Vec<Field>, group: usize) -> std::io::Result<Table<W>> {
        let schema = Arc::new(Schema::new(fields));
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_row_count(Some(group))
            .set_created_by(format!("looptune {}", env!("CARGO_PKG_VERSION")))
            .build();
        let writer = ArrowWriter::try_new(out, schema.clone(), Some(props))?;
        let columns = schema
            .fields()
            .iter()
            .map(|f| Column::new(f.data_type()))
            .collect();
        Ok(Table {
            schema,
            columns,
            rows: 0,
            group,
            writer,
        })
    }

    /// One cell of the current row, in column order; `end_row` after the last.
    fn row<'c>(&mut self, cells: impl IntoIterator<Item = (usize, Cell<'c>)>) {
        for (i, c) in cells {
            self.columns[i].push(c);
        }
    }

    fn end_row(&mut self) -> std::io::Result<()> {
        self.rows += 1;
        if self.rows == self.group {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let arrays: Vec<ArrayRef> = self.columns.iter_mut().map(Column::finish).collect();
        let batch = RecordBatch::try_new(self.schema.clone(), arrays)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        self.rows = 0;
        self.writer.write(&batch)?;
        Ok(())
    }

    fn close(mut self) -> std::io::Result<()> {
        self.flush()?;
        self.writer.close()?;
        Ok(())
    }
}

fn field(name: &str, t: DataType) -> Field {
    Field::new(name, t, true)
}

/// The score columns (`SCORES`' order) and `detection_kinds`.
fn score_fields() -> Vec<Field> {
    let mut f: Vec<Field> = SCORES
        .iter()
        .map(|s| {
            field(
                s.name,
                if s.whole {
                    DataType::Int64
                } else {
                    DataType::Float64
                },
            )
        })
        .collect();
    f.push(field("detection_kinds", DataType::Utf8));
    f
}

/// The score cells of a row from column `at` on, and its detection kinds.
fn push_scores<W: Write + Send>(t: &mut Table<W>, at: usize, s: &Scores, kinds: &mut String) {
    use std::fmt::Write;
    t.row(SCORES.iter().enumerate().map(|(k, info)| {
        let c = match s.get(info.name) {
            Some(x) if info.whole => Cell::Int(x as i64),
            Some(x) => Cell::Float(x),
            None => Cell::Null,
        };
        (at + k, c)
    }));
    kinds.clear();
    for (i, (k, n)) in s.kinds.iter().enumerate() {
        if i > 0 {
            kinds.push(';');
        }
        let _ = write!(kinds, "{k}:{n}");
    }
    t.row([(at + SCORES.len(), Cell::text(kinds))]);
}

/// The type every value of a parameter column shares (`Utf8` when they
/// differ). A value is a number only when it reads back as written.
fn param_type<'a>(values: impl Iterator<Item = &'a str> + Clone) -> DataType {
    let mut seen = values.clone().filter(|v| !v.is_empty()).peekable();
    if seen.peek().is_none() {
        return DataType::Utf8;
    }
    let all = |ok: &dyn Fn(&str) -> bool| values.clone().filter(|v| !v.is_empty()).all(ok);
    if all(&|v| v.parse::<i64>().is_ok_and(|n| n.to_string() == v)) {
        DataType::Int64
    } else if all(&|v| {
        v.parse::<f64>()
            .is_ok_and(|x| x.is_finite() && x.to_string() == v)
    }) {
        DataType::Float64
    } else if all(&|v| v == "true" || v == "false") {
        DataType::Boolean
    } else {
        DataType::Utf8
    }
}

fn param_cell<'a>(t: &DataType, v: &'a str) -> Cell<'a> {
    if v.is_empty() {
        return Cell::Null;
    }
    match t {
        DataType::Int64 => Cell::Int(v.parse().expect("checked by param_type")),
        DataType::Float64 => Cell::Float(v.parse().expect("checked by param_type")),
        DataType::Boolean => Cell::Bool(v == "true"),
        _ => Cell::Str(v),
    }
}

/// `sweep.parquet`: `sweep.csv`'s rows and columns.
pub struct SweepParquet;

impl Output for SweepParquet {
    fn name(&self) -> &str {
        "sweep.parquet"
    }
    fn cost(&self) -> u32 {
        15
    }
    fn render(&self, r: &SweepResult, w: &mut (dyn Write + Send)) -> std::io::Result<()> {
        let grid = &r.record.grid;
        let params = &grid.param_columns;
        let types: Vec<DataType> = params
            .iter()
            .map(|p| {
                param_type(
                    grid.configs
                        .iter()
                        .map(|v| v.params.get(p).map_or("", |x| x.as_str())),
                )
            })
            .collect();
        let mut fields: Vec<Field> = ["config", "label", "family", "profile"]
            .into_iter()
            .map(|n| field(n, DataType::Utf8))
            .collect();
        fields.extend(params.iter().zip(&types).map(|(p, t)| field(p, t.clone())));
        let at = fields.len();
        fields.extend(score_fields());
        for n in ["stock", "pareto", "recommended"] {
            fields.push(field(n, DataType::Boolean));
        }
        let flags = at + SCORES.len() + 1;
        let mut t = Table::new(w, fields)?;
        let mut kinds = String::new();
        for (i, v) in grid.configs.iter().enumerate() {
            t.row([
                (0, Cell::text(&v.id)),
                (1, Cell::text(&v.label)),
                (2, Cell::text(&v.family)),
                (3, Cell::text(&v.profile)),
            ]);
            t.row(params.iter().zip(&types).enumerate().map(|(k, (p, ty))| {
                (
                    4 + k,
                    param_cell(ty, v.params.get(p).map_or("", |x| x.as_str())),
                )
            }));
            push_scores(&mut t, at, &r.scores[i], &mut kinds);
            t.row([
                (flags, Cell::Bool(v.stock)),
                (flags + 1, Cell::Bool(r.pareto.contains(&i))),
                (flags + 2, Cell::Bool(r.recommended == Some(i))),
            ]);
            t.end_row()?;
        }
        if let Some(u) = &r.advice.union {
            t.row([
                (0, Cell::text(&u.id)),
                (1, Cell::text(&u.label)),
                (2, Cell::Str("any")),
                (3, Cell::Null),
            ]);
            t.row((0..params.len()).map(|k| (4 + k, Cell::Null)));
            push_scores(&mut t, at, &u.scores, &mut kinds);
            t.row((0..3).map(|k| (flags + k, Cell::Bool(false))));
            t.end_row()?;
        }
        t.close()
    }
}

/// `groups.parquet`: `groups.csv`'s rows and columns.
pub struct GroupsParquet;

impl Output for GroupsParquet {
    fn name(&self) -> &str {
        "groups.parquet"
    }
    fn cost(&self) -> u32 {
        8
    }
    fn render(&self, r: &SweepResult, w: &mut (dyn Write + Send)) -> std::io::Result<()> {
        let mut fields: Vec<Field> = ["config", "group_by", "group"]
            .into_iter()
            .map(|n| field(n, DataType::Utf8))
            .collect();
        fields.extend(score_fields());
        let mut t = Table::new(w, fields)?;
        let mut kinds = String::new();
        let union = r.advice.union.as_ref().map(|u| {
            let view: Vec<Option<&Hit>> = u.hits.iter().map(Option::as_ref).collect();
            (u.id.as_str(), view)
        });
        let configs = r.record.grid.configs.len();
        // A configuration's groups are scored as its rows are written (not
        // every configuration's first, as groups.csv does on the pool).
        for i in 0..configs + usize::from(union.is_some()) {
            let (id, per_group) = match &union {
                Some((id, view)) if i == configs => (*id, r.group_scores(view)),
                _ => (
                    r.record.grid.configs[i].id.as_str(),
                    r.config_group_scores(i)?,
                ),
            };
            for (g, s) in per_group.iter().enumerate() {
                t.row([
                    (0, Cell::text(id)),
                    (1, Cell::text(&r.groups.by)),
                    (2, Cell::text(&r.groups.names[g])),
                ]);
                push_scores(&mut t, 3, s, &mut kinds);
                t.end_row()?;
            }
        }
        t.close()
    }
}

/// `detections.parquet`: `detections.csv`'s rows and columns.
pub struct DetectionsParquet;

impl Output for DetectionsParquet {
    fn name(&self) -> &str {
        "detections.parquet"
    }
    fn cost(&self) -> u32 {
        35
    }
    fn render(&self, r: &SweepResult, w: &mut (dyn Write + Send)) -> std::io::Result<()> {
        use DataType::{Int64, Utf8};
        let fields = [
            ("config", Utf8),
            ("session", Utf8),
            ("turn", Int64),
            ("event", Int64),
            ("kind", Utf8),
            ("label", Utf8),
            ("outcome", Utf8),
            ("turns_to_detection", Int64),
            ("stop_turn", Int64),
            ("detail", Utf8),
            ("file", Utf8),
            ("line", Int64),
            ("pointer", Utf8),
        ]
        .into_iter()
        .map(|(n, t)| field(n, t))
        .collect();
        let mut t = Table::new(w, fields)?;
        let rows = super::csv_out::detection_rows(r);
        let mut detail = String::new();
        for (id, hits) in rows {
            for o in hits? {
                let Some(d) = &o.first else { continue };
                let d: &FirstDetection = d;
                let s = &r.record.sessions[o.session as usize];
                let label = s.label();
                let (verdict, ttd) = verdict_at(Some(d.turn), label);
                let place = d.place.as_ref();
                detail.clear();
                detail.extend(d.detail.chars().take(300));
                t.row([
                    (0, Cell::text(id)),
                    (1, Cell::text(&s.id)),
                    (2, Cell::Int(d.turn.into())),
                    (3, Cell::Int(d.event.into())),
                    (4, Cell::text(&d.kind)),
                    (
                        5,
                        match label {
                            Some(l) if l.is_loop => Cell::Str("loop"),
                            Some(_) => Cell::Str("clean"),
                            None => Cell::Null,
                        },
                    ),
                    (6, Cell::text(verdict.as_str())),
                    (7, Cell::int(ttd)),
                    (8, Cell::int(o.stop_turn())),
                    (9, Cell::text(&detail)),
                    (10, Cell::text(place.map_or("", |p| p.file.as_str()))),
                    (11, Cell::int(place.and_then(|p| p.line))),
                    (
                        12,
                        Cell::text(place.and_then(|p| p.pointer.as_deref()).unwrap_or("")),
                    ),
                ]);
                t.end_row()?;
            }
        }
        t.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_go_out_a_row_group_at_a_time() {
        let mut file = Vec::new();
        let fields = vec![field("n", DataType::Int64), field("s", DataType::Utf8)];
        let mut t = Table::with_groups_of(&mut file, fields, 3).unwrap();
        let mut sizes = Vec::new();
        for n in 0..10i64 {
            let text = n.to_string();
            t.row([
                (0, Cell::Int(n)),
                (
                    1,
                    if n % 2 == 0 {
                        Cell::text(&text)
                    } else {
                        Cell::text("")
                    },
                ),
            ]);
            t.end_row().unwrap();
            sizes.push(t.writer.flushed_row_groups().len());
        }
        t.close().unwrap();
        // A row group is written as soon as it is full, not at the end.
        assert_eq!(sizes, [0, 0, 1, 1, 1, 2, 2, 2, 3, 3]);
        let mut back = tempfile::tempfile().unwrap();
        back.write_all(&file).unwrap();
        let reader =
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(back).unwrap();
        assert_eq!(reader.metadata().num_row_groups(), 4);
        let mut seen = Vec::new();
        for b in reader.build().unwrap() {
            use arrow_array::cast::AsArray;
            use arrow_array::Array;
            let b = b.unwrap();
            let (n, s) = (b.column(0), b.column(1));
            for i in 0..b.num_rows() {
                let n = n.as_primitive::<arrow_array::types::Int64Type>().value(i);
                let s = (!s.is_null(i)).then(|| s.as_string::<i32>().value(i).to_string());
                seen.push((n, s));
            }
        }
        let expected: Vec<(i64, Option<String>)> = (0..10)
            .map(|n| (n, (n % 2 == 0).then(|| n.to_string())))
            .collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn a_parameter_column_is_typed_only_when_every_value_reads_back() {
        let t = |v: &[&str]| param_type(v.iter().copied());
        assert_eq!(t(&["3", "", "10"]), DataType::Int64);
        assert_eq!(t(&["03", "10"]), DataType::Utf8);
        assert_eq!(t(&["0.5", "2"]), DataType::Float64);
        assert_eq!(t(&["1e3"]), DataType::Utf8);
        assert_eq!(t(&["true", "false"]), DataType::Boolean);
        assert_eq!(t(&["stop", "3"]), DataType::Utf8);
        assert_eq!(t(&["", ""]), DataType::Utf8);
    }
}
