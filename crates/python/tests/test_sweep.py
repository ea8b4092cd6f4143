"""sweep(): the tables are the CSVs' rows, through the Arrow C stream."""

import csv
import json

import pytest

import looptune
from conftest import FIXTURES, ROOT

LABELS = ROOT / "fixtures" / "labels.csv"


@pytest.fixture(scope="module")
def result():
    return looptune.sweep([FIXTURES], labels=LABELS)


def rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_recommendation_is_summary_jsons(result, tmp_path):
    written = result.write(tmp_path)
    names = {p.split("/")[-1] for p in written}
    assert {"sweep.csv", "groups.csv", "detections.csv", "summary.json", "report.html"} <= names
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert result.recommendation == summary["recommendation"]


def test_tables_are_the_csvs_row_for_row(result, tmp_path):
    pyarrow = pytest.importorskip("pyarrow", reason="SKIPPED: pyarrow is not installed")
    result.write(tmp_path)
    for table, name in [(result.configs(), "sweep"), (result.groups(), "groups"), (result.detections(), "detections")]:
        got = pyarrow.table(table)
        want = rows(tmp_path / f"{name}.csv")
        assert got.num_rows == len(want), name
        assert got.column_names == list(want[0].keys()), name
        for r, w in zip(got.to_pylist(), want):
            for k, v in w.items():
                x = r[k]
                if x is None:
                    assert v == "", (name, k)
                elif isinstance(x, bool):
                    assert v == ("true" if x else "false"), (name, k, v)
                elif isinstance(x, float):
                    assert float(v) == pytest.approx(x, abs=5e-4), (name, k)
                elif isinstance(x, int):
                    assert int(v) == x, (name, k)
                else:
                    assert v.lstrip("'") == x, (name, k)


def test_the_stream_is_an_arrow_pycapsule(result):
    capsule = result.configs().__arrow_c_stream__()
    assert type(capsule).__name__ == "PyCapsule"


def test_a_bad_labels_file_raises_input_error(tmp_path):
    bad = tmp_path / "labels.csv"
    bad.write_text("session,label\nx,maybe\n")
    with pytest.raises(looptune.LooptuneError, match="labels.csv:2"):
        looptune.sweep([FIXTURES], labels=bad)
