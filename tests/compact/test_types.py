"""Compaction output keeps the input's ORC column types: char(n), varchar(n) (which pyarrow's
writer knows only as string; the footer is retyped, acidctl/orc/footer.py), decimal, date,
timestamp, uniontype, timestamp with local time zone — and the values byte for byte (char
values padded as stored).

Input files are written here by pyorc (ORC C++ row by row, which pads char values as Hive's
writers do), not by acidctl's writer, so the inputs do not depend on the code under test."""

from __future__ import annotations

import datetime
import decimal
import json
from pathlib import Path

import pyarrow.orc as po
import pyorc
import pytest

from acidctl.compact import task as task_mod
from acidctl.errors import InvalidInputError
from acidctl.fs import TableFS
from acidctl.orc.meta import inspect_file
from acidctl.orc.acidfile import acid_type_string
from tests.acidfiles import acid_file
from tests.compact.helpers import ALL, compact, merged, state_errors

B0 = 536870912  # BucketCodec V1: bucket 0, statement 0
B1 = B0 | 1 << 16  # bucket 1
SNAP = f"db.t:3:{ALL}::"
ROW = "struct<id:int,c:char(5),v:varchar(10),s:string,d:decimal(10,2),dt:date,ts:timestamp>"
ACID = acid_type_string(ROW)
CHARS = ["ab", "abcde", "", "é", None, "x y"]
PADDED = {"ab   ", "abcde", "     ", "é    ", "x y  "}  # as ORC writers store them


def _row(i: int) -> tuple:
    return (
        i,
        CHARS[i % len(CHARS)],
        "v" * (i % 11),
        None if i % 4 == 3 else f"s{i} ",
        decimal.Decimal(i * 101) / 100,
        datetime.date(2020, 1, 1) + datetime.timedelta(days=i),
        datetime.datetime(2021, 3, 4, 5, 6, i % 60, 123456 * (i % 3), tzinfo=datetime.timezone.utc),
    )


def _table(root: Path, orc_type: str = ACID, row=_row) -> Path:
    """Two insert deltas over buckets 0 and 1 and a delete delta (delete events carry the full
    row type with a null row, as Hive writes them)."""
    acid_file(
        root / "delta_0000001_0000001_0000" / "bucket_00000", orc_type, [(0, 1, B0, r, 1, row(r)) for r in range(8)]
    )
    acid_file(
        root / "delta_0000002_0000002_0000" / "bucket_00000",
        orc_type,
        [(0, 2, B0, r, 2, row(10 + r)) for r in range(5)],
    )
    acid_file(
        root / "delta_0000002_0000002_0000" / "bucket_00001",
        orc_type,
        [(0, 2, B1, r, 2, row(20 + r)) for r in range(4)],
    )
    acid_file(
        root / "delete_delta_0000003_0000003_0000" / "bucket_00000",
        orc_type,
        [(2, 1, B0, 1, 3, None), (2, 1, B0, 4, 3, None), (2, 2, B0, 0, 3, None)],
    )
    return root


def _schema(path: Path) -> str:
    with open(path, "rb") as f:
        return str(pyorc.Reader(f).schema)


def _stored(path: Path) -> dict:
    """{(owid, bucket, rowId): row} of a file as pyarrow reads it (the stored bytes: char
    values keep their padding)."""
    t = po.ORCFile(str(path)).read()
    keys = zip(*(t.column(c).to_pylist() for c in ("originalTransaction", "bucket", "rowId")))
    return dict(zip(keys, t.column("row").to_pylist()))


def _errors(path: Path) -> list:
    rep = inspect_file(TableFS(str(path.parent)), str(path), statistics=True, expect_acid=True)
    return [f for f in rep.findings if f.severity.value == "error"]


def _dump_merged(cli, root: Path) -> list:
    r = cli("-o", "json", "dump", "--merged", "--write-ids", SNAP, root)
    assert r.code == 0, r
    return [json.loads(line) for line in r.stdout.splitlines()]


def _force(monkeypatch, path: str) -> list:
    """Run every task through ``path`` ("stream" or "whole"); returns the paths taken."""
    taken = []
    real = task_mod._run

    def run(t):
        out = task_mod._run_whole(t) if path == "whole" else real(t)
        taken.append(out["path"])  # the task's metrics say which path ran
        return out

    monkeypatch.setattr(task_mod, "_run", run)
    return taken


def _inputs(root: Path) -> dict:
    out = {}
    for f in sorted(root.glob("delta_*/bucket_*")):
        out.update(_stored(f))
    return out


def _check_outputs(root: Path, mode: str, want_schema: str, inputs: dict) -> dict:
    """Every output file: the input's type string, no check failing, rows stored as in the
    ``inputs`` (:func:`_inputs` before compacting); returns the output's insert rows."""
    out_dirs = ["base_0000003"] if mode == "major" else ["delta_0000001_0000003", "delete_delta_0000001_0000003"]
    files = [f for d in out_dirs for f in sorted((root / d).glob("bucket_*"))]
    assert {f.parent.name for f in files} == set(out_dirs)
    rows = {}
    for f in files:
        assert _schema(f) == want_schema, f
        assert _errors(f) == [], f
        for key, row in _stored(f).items():
            if f.parent.name.startswith("delete_"):
                assert row is None
            else:
                assert row == inputs[key]  # byte for byte, char padding included
                rows[key] = row
    assert rows
    return rows


@pytest.mark.parametrize("path", ["stream", "whole"])
@pytest.mark.parametrize("mode", ["major", "minor"])
def test_output_keeps_input_types_and_values(tmp_path, monkeypatch, cli, mode, path):
    root = _table(tmp_path / "t")
    rows, dump, inputs = merged(root, SNAP), _dump_merged(cli, root), _inputs(root)
    taken = _force(monkeypatch, path)
    compact(root, mode, SNAP, engine="local")
    assert taken and set(taken) == {path}
    out = _check_outputs(root, mode, ACID, inputs)
    chars = {r["c"] for r in out.values()} - {None}
    assert chars <= PADDED and {"ab   ", "é    ", "     "} <= chars
    assert merged(root, SNAP) == rows
    assert _dump_merged(cli, root) == dump
    assert state_errors(root, SNAP) == []


@pytest.mark.spark
def test_output_keeps_input_types_through_spark(tmp_path, cli, spark):
    root = _table(tmp_path / "t")
    rows, dump, inputs = merged(root, SNAP), _dump_merged(cli, root), _inputs(root)
    compact(root, "minor", SNAP, spark=spark)
    assert {r["c"] for r in _check_outputs(root, "minor", ACID, inputs).values()} - {None} == PADDED
    assert merged(root, SNAP) == rows and _dump_merged(cli, root) == dump


def test_dump_meta_of_the_output(tmp_path, cli):
    """The command lines of the bug report: the output's Schema line names varchar(10)."""
    t = "struct<id:int,name:varchar(10)>"
    for w in (1, 2):
        acid_file(
            tmp_path / "t" / f"delta_{w:07d}_{w:07d}_0000" / "bucket_00000",
            acid_type_string(t),
            [(0, w, B0, r, w, (r, f"n{r}")) for r in range(3)],
        )
    r = cli("compact", "--major", "--engine", "local", "--assume-committed", "--table-is-quiescent", tmp_path / "t")
    assert r.code == 0, r
    r = cli("dump", "--meta", tmp_path / "t" / "base_0000002" / "bucket_00000")
    assert r.code == 0, r
    schema = [line for line in r.stdout.splitlines() if line.startswith("Schema")]
    assert schema == ["Schema            " + acid_type_string(t)]
    assert "0 errors" in r.stdout


# -- types pyarrow's writer keeps by itself, and names from the data -------------------------

OTHER_ROW = (
    "struct<id:int,u:uniontype<int,string>,tl:timestamp with local time zone,"
    "l:array<varchar(3)>,m:map<char(2),varchar(4)>>"
)


def _other_row(i: int) -> tuple:
    return (
        i,
        [i, f"u{i}", None][i % 3],
        datetime.datetime(2022, 1, 1, 0, 0, i, tzinfo=datetime.timezone.utc),
        None if i % 5 == 4 else ["a", "bc", "d" * (i % 4)][: i % 4],
        {"k": "v" * (i % 5), f"{i % 10}": "w"},
    )


@pytest.mark.parametrize("mode", ["major", "minor"])
def test_union_local_time_zone_and_nested_char(tmp_path, cli, mode):
    orc_type = acid_type_string(OTHER_ROW)
    root = _table(tmp_path / "t", orc_type, _other_row)
    rows, dump, inputs = merged(root, SNAP), _dump_merged(cli, root), _inputs(root)
    compact(root, mode, SNAP, engine="local")
    out = _check_outputs(root, mode, orc_type, inputs)
    assert {"k ", "0 "} <= {k for r in out.values() for k, _ in r["m"]}  # char(2) keys padded
    assert merged(root, SNAP) == rows and _dump_merged(cli, root) == dump


def test_row_names_come_from_the_data(tmp_path):
    """Metastore column names replace ``_colN``; kinds and lengths come from the input."""
    coln = acid_type_string("struct<_col0:int,_col1:char(3)>")
    for w in (1, 2):
        acid_file(
            tmp_path / "t" / f"delta_{w:07d}_{w:07d}_0000" / "bucket_00000",
            coln,
            [(0, w, B0, r, w, (r, "a")) for r in range(3)],
        )
    compact(tmp_path / "t", "major", f"db.t:2:{ALL}::", engine="local", columns=["ID", "Flag"], columns_coln_only=True)
    f = tmp_path / "t" / "base_0000002" / "bucket_00000"
    assert _schema(f) == acid_type_string("struct<id:int,flag:char(3)>")
    assert {r["flag"] for r in _stored(f).values()} == {"a  "}


def test_original_files_give_the_row_type(tmp_path):
    """Original (pre-ACID) files hold the row alone: the output wraps their type."""
    root = tmp_path / "t"
    root.mkdir()
    with open(root / "000000_0", "wb") as f, pyorc.Writer(f, "struct<id:int,c:char(4)>") as w:
        w.writerows([(1, "a"), (2, None)])
    compact(root, "major", f"db.t:0:{ALL}::", engine="local")
    [f] = root.glob("base_*/bucket_00000")
    assert _schema(f) == acid_type_string("struct<id:int,c:char(4)>")
    assert sorted(r["c"] or "" for r in _stored(f).values()) == ["", "a   "]


def test_added_column_takes_the_newest_types(tmp_path):
    """ALTER TABLE ADD COLUMNS: the older file lacks the column (the task falls back to its
    whole-bucket path); the output has the table's current types, the old row a null there."""
    root = tmp_path / "t"
    acid_file(
        root / "delta_0000001_0000001_0000" / "bucket_00000",
        acid_type_string("struct<id:int>"),
        [(0, 1, B0, 0, 1, (1,))],
    )
    acid_file(
        root / "delta_0000002_0000002_0000" / "bucket_00000",
        acid_type_string("struct<id:int,c:char(3)>"),
        [(0, 2, B0, 0, 2, (2, "a"))],
    )
    compact(root, "major", f"db.t:2:{ALL}::", engine="local")
    f = root / "base_0000002" / "bucket_00000"
    assert _schema(f) == acid_type_string("struct<id:int,c:char(3)>")
    assert _stored(f) == {(1, B0, 0): {"id": 1, "c": None}, (2, B0, 0): {"id": 2, "c": "a  "}}


# -- refusals ---------------------------------------------------------------------------------


def test_refuses_another_structure(tmp_path, cli):
    """The newest file's id is int, the merged data bigint (an older file's): no silent change."""
    root = tmp_path / "t"
    acid_file(
        root / "delta_0000001_0000001_0000" / "bucket_00000",
        acid_type_string("struct<id:bigint,c:char(2)>"),
        [(0, 1, B0, 0, 1, (1, "a"))],
    )
    acid_file(
        root / "delta_0000002_0000002_0000" / "bucket_00000",
        acid_type_string("struct<id:int,c:char(2)>"),
        [(0, 2, B0, 0, 2, (2, "b"))],
    )
    r = cli("compact", "--major", "--engine", "local", "--write-ids", f"db.t:2:{ALL}::", root)
    assert r.code == 7, r
    assert "cannot write column row.id as int: the data there is bigint" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert not list(root.glob("base_*"))


def test_refuses_values_longer_than_the_newest_type(tmp_path):
    """varchar(20) narrowed to varchar(10): a 15-character value is not written as varchar(10)."""
    root = tmp_path / "t"
    acid_file(
        root / "delta_0000001_0000001_0000" / "bucket_00000",
        acid_type_string("struct<v:varchar(20)>"),
        [(0, 1, B0, 0, 1, ("x" * 15,))],
    )
    acid_file(
        root / "delta_0000002_0000002_0000" / "bucket_00000",
        acid_type_string("struct<v:varchar(10)>"),
        [(0, 2, B0, 0, 2, ("y",))],
    )
    with pytest.raises(InvalidInputError, match=r"row\.v holds a value of 15 characters.*varchar\(10\)"):
        compact(root, "major", f"db.t:2:{ALL}::", engine="local")
    assert not list(root.glob("base_*"))
