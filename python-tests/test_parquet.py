"""The Parquet files of `looptune sweep --parquet` read back in pyarrow and
DuckDB with the CSVs' rows and values.

Run from the package root after `cargo build` (as .ci/run does):

    python3 -m pytest python-tests

The binary is $LOOPTUNE, else target/debug/looptune, else target/release/looptune.
Without pyarrow (or DuckDB) the tests say SKIPPED loudly on stderr.
"""

import csv
import importlib
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def need(module):
    try:
        return importlib.import_module(module)
    except ImportError:
        print(f"SKIPPED python-tests/test_parquet.py: {module} is not installed "
              f"(pip install pyarrow duckdb)", file=sys.stderr)
        pytest.skip(f"{module} is not installed", allow_module_level=True)


pa_parquet = need("pyarrow.parquet")
duckdb = need("duckdb")


def binary():
    given = os.environ.get("LOOPTUNE")
    if given:
        return given
    for profile in ("debug", "release"):
        p = ROOT / "target" / profile / "looptune"
        if p.exists():
            return str(p)
    pytest.fail("no looptune binary: run `cargo build` first or set LOOPTUNE")


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    d = tmp_path_factory.mktemp("sweep") / "out"
    subprocess.run(
        [binary(), "sweep", "fixtures", "--labels", "fixtures/labels.csv",
         "--combine", "2", "--parquet", "--quiet", "--out", str(d)],
        cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return d


def fixed(x):
    """A score as the CSV writes it: six decimals, trailing zeros cut."""
    s = f"{x:.6f}".rstrip("0").rstrip(".")
    return "0" if s == "-0" else s


def safe_cell(s):
    return "'" + s if s[:1] in ("=", "+", "-", "@", "\t", "\r") else s


def csv_rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def as_csv(name, column, value, arrow_type, scores):
    """A Parquet value as the CSV cell that holds it: scores at the CSV's
    precision, text (and sweep.csv's parameter values) through its
    spreadsheet guard, nulls as empty cells."""
    import pyarrow as pa
    if value is None:
        return ""
    is_score = column in scores
    if pa.types.is_boolean(arrow_type):
        text = "true" if value else "false"
    elif pa.types.is_integer(arrow_type):
        text = str(value)
    elif pa.types.is_floating(arrow_type):
        assert math.isfinite(value)
        # A parameter as written (Rust's shortest form: 5, not 5.0).
        text = fixed(value) if is_score else (
            str(int(value)) if value.is_integer() else repr(value))
    else:
        text = value
    guarded = pa.types.is_string(arrow_type) or (name == "sweep" and not is_score)
    return safe_cell(text) if guarded else text


@pytest.mark.parametrize("name", ["sweep", "groups", "detections"])
def test_pyarrow_reads_the_csvs_rows_and_values(out, name):
    header, rows = csv_rows(out / f"{name}.csv")
    # groups.csv: config, group_by, group, the scores, detection_kinds.
    scores = set(csv_rows(out / "groups.csv")[0][3:-1])
    table = pa_parquet.read_table(out / f"{name}.parquet")
    assert table.column_names == header
    assert table.num_rows == len(rows) > 0
    meta = pa_parquet.ParquetFile(out / f"{name}.parquet").metadata
    assert meta.row_group(0).column(0).compression == "ZSTD"
    columns = table.to_pydict()
    types = {f.name: f.type for f in table.schema}
    for i, row in enumerate(rows):
        got = [as_csv(name, c, columns[c][i], types[c], scores) for c in header]
        assert got == row, f"{name} row {i}"


def test_duckdb_counts_and_sums_agree_with_the_csvs(out):
    con = duckdb.connect()
    for name in ["sweep", "groups", "detections"]:
        p = str(out / f"{name}.parquet")
        _, rows = csv_rows(out / f"{name}.csv")
        (n,) = con.execute(f"select count(*) from read_parquet('{p}')").fetchone()
        assert n == len(rows), name
    sweep = str(out / "sweep.parquet")
    header, rows = csv_rows(out / "sweep.csv")
    tp = header.index("true_positives")
    (total,) = con.execute(
        f"select sum(true_positives) from read_parquet('{sweep}')").fetchone()
    assert total == sum(int(r[tp]) for r in rows if r[tp])
    types = dict(con.execute(
        f"select column_name, column_type from (describe select * from read_parquet('{sweep}'))"
    ).fetchall())
    assert types["config"] == "VARCHAR"
    assert types["recall"] == "DOUBLE"
    assert types["false_positives"] == "BIGINT"
    assert types["recommended"] == "BOOLEAN"
    det = str(out / "detections.parquet")
    (loops,) = con.execute(
        f"select count(*) from read_parquet('{det}') where label = 'loop'").fetchone()
    _, drows = csv_rows(out / "detections.csv")
    assert loops == sum(1 for r in drows if r[5] == "loop")
