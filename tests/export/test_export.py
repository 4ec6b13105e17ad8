"""`acidctl export`: the merged snapshot as plain Parquet/ORC files, read back by engines that
know nothing of ACID (pyarrow.dataset with Hive partitioning, Spark's plain readers), compared
with the reference model of random histories and with the row counts the fixtures' origins state."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from hypothesis import HealthCheck, given, settings

from acidctl.acid.writeids import WriteIdList
from acidctl.errors import RefusedError
from acidctl.export import ExportOptions, export_table
from acidctl.fs import TableFS
from tests.compact.helpers import ALL, nation_table
from tests.histories import History, Statement, Txn, partitioned_histories


def read_export(dest: Path, fmt: str = "parquet") -> dict:
    """{(partition or None, writeid, bucket, rowid): (id, name)} of an export with row ids."""
    if not dest.exists() or not any(dest.rglob(f"*.{fmt}")):
        return {}
    t = ds.dataset(str(dest), format=fmt, partitioning="hive").to_table()
    rid = t.column("row__id").combine_chunks()
    parts = t.column("p").to_pylist() if "p" in t.column_names else [None] * t.num_rows
    out = {}
    for p, w, b, r, i, n in zip(
        parts,
        rid.field("writeid").to_pylist(),
        rid.field("bucketid").to_pylist(),
        rid.field("rowid").to_pylist(),
        t.column("id").to_pylist(),
        t.column("name").to_pylist(),
    ):
        key = (None if p is None else f"p={p}", w, b, r)
        assert key not in out
        out[key] = (i, n)
    return out


def _export(root: Path, dest: Path, snapshot, **kw) -> dict:
    return export_table(TableFS(str(root)), snapshot, str(dest), ExportOptions(with_row_id=True, **kw))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(h=partitioned_histories)
def test_export_equals_reference_model(h):
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "t"
        root.mkdir()
        expected = h.play_table(root)
        rep = _export(root, Path(d) / "out", h.snapshot())
        assert read_export(Path(d) / "out") == expected
        assert rep["rows"] == len(expected)
        # no staging directory left beside DEST
        assert sorted(p.name for p in Path(d).iterdir()) == ["out", "t"] or not expected


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(h=partitioned_histories)
def test_orc_export_and_as_of(h):
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "t"
        root.mkdir()
        h.play_table(root)
        k = len(h.txns) // 2
        _export(root, Path(d) / "out", h.snapshot().as_of(k), format="orc")
        prefix = History(h.buckets, h.originals, h.txns[:k], partitions=h.partitions)
        assert read_export(Path(d) / "out", "orc") == prefix.play_table(None)


def test_real_fixture_rows_and_columns(tmp_path, cli):
    """Trino's nation file with both delete deltas: 23,000 rows, nations 5 and 19 gone (stated
    by the fixture's origin); the export holds the table's columns only."""
    t = nation_table(tmp_path)
    r = cli("-o", "json", "export", t, tmp_path / "out", "--write-ids", f"db.t:4:{ALL}::")
    assert r.code == 0, r
    doc = json.loads(r.stdout)
    tab = ds.dataset(str(tmp_path / "out"), format="parquet").to_table()
    assert tab.num_rows == doc["rows"] == 23000
    assert tab.column_names == ["n_nationkey", "n_name", "n_regionkey", "n_comment"]
    keys = tab.column("n_nationkey").to_pylist()
    assert sorted(set(keys)) == [k for k in range(25) if k not in (5, 19)]
    assert all(keys.count(k) == 1000 for k in set(keys))
    assert doc["publish"] == "atomic" and doc["files"] == 1


def test_partition_filter_and_empty_buckets(tmp_path):
    h = History(
        buckets=2,
        originals=[],
        partitions=2,
        txns=[
            Txn("committed", [Statement("insert", [1, 2, 3], [], part=0), Statement("insert", [4], [], part=1)]),
            Txn("committed", [Statement("delete", [], [0, 0, 0], part=0)]),  # every row of p=0 deleted
        ],
    )
    root = tmp_path / "t"
    root.mkdir()
    expected = h.play_table(root)
    rep = _export(root, tmp_path / "a", h.snapshot())
    assert read_export(tmp_path / "a") == expected
    assert {o["partition"] for o in rep["outputs"]} == {"p=1"}  # p=0 has no live row: no file
    rep = _export(root, tmp_path / "b", h.snapshot(), partitions=["p=0"])
    assert rep["rows"] == 0 and rep["files"] == 0


def test_never_overwrites_and_leaves_nothing_on_failure(tmp_path, cli):
    t = nation_table(tmp_path)
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "keep.txt").write_text("mine")
    r = cli("export", t, dest, "--write-ids", f"db.t:4:{ALL}::")
    assert r.code == 6 and "never overwrites" in r.stderr
    assert sorted(p.name for p in dest.iterdir()) == ["keep.txt"]
    with pytest.raises(RefusedError):
        _export(t, dest, WriteIdList.parse(f"db.t:4:{ALL}::"))
    # an empty directory is fine (replaced)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _export(t, empty, WriteIdList.parse(f"db.t:4:{ALL}::"))["rows"] == 23000
    # an unknown codec: a usage error before anything is written
    r = cli("export", t, tmp_path / "bad", "--write-ids", f"db.t:4:{ALL}::", "--compression", "nope")
    assert r.code == 2 and "--compression" in r.stderr
    assert not (tmp_path / "bad").exists()
    # a task failing mid-export (bucket 0 already written, bucket 1 unreadable) leaves
    # neither DEST nor the staging directory
    bad = t / "delta_0000005_0000005_0000"
    bad.mkdir()
    (bad / "_orc_acid_version").write_bytes(b"2")
    (bad / "bucket_00001").write_bytes(b"ORC but truncated")
    r = cli("export", t, tmp_path / "bad", "--write-ids", f"db.t:5:{ALL}::")
    assert r.code == 7 and "Traceback" not in r.stderr and "bucket_00001" in r.stderr, r
    assert not (tmp_path / "bad").exists()
    assert not [p for p in tmp_path.iterdir() if ".acidctl-export-" in p.name]


def test_bad_format_is_a_usage_error(tmp_path, cli):
    t = nation_table(tmp_path)
    r = cli("export", t, tmp_path / "o", "--to", "csv", "--write-ids", f"db.t:4:{ALL}::")
    assert r.code == 2 and "'csv' is not one of 'parquet', 'orc'" in r.stderr


@pytest.mark.spark
def test_spark_engine_same_files_and_spark_reads_them(spark, tmp_path):
    h = History(
        buckets=3,
        originals=[7, 8, 9],
        partitions=2,
        txns=[
            Txn(
                "committed",
                [Statement("insert", [1, 2, 3, 4, 5], [], part=0), Statement("insert", [6, 10], [], part=1)],
            ),
            Txn("aborted", [Statement("insert", [11], [], part=0)]),
            Txn("committed", [Statement("update", [12], [1], part=0)]),
            Txn("open", [Statement("delete", [], [0], part=1)]),
        ],
    )
    root = tmp_path / "t"
    root.mkdir()
    expected = h.play_table(root)
    local = _export(root, tmp_path / "local", h.snapshot())
    remote = export_table(
        TableFS(str(root)),
        h.snapshot(),
        str(tmp_path / "spark"),
        ExportOptions(with_row_id=True, engine="spark"),
        spark=spark,
    )
    assert read_export(tmp_path / "spark") == expected
    assert [(o["file"], o["rows"]) for o in remote["outputs"]] == [(o["file"], o["rows"]) for o in local["outputs"]]
    for o in local["outputs"]:
        assert (tmp_path / "local" / o["file"]).read_bytes() == (tmp_path / "spark" / o["file"]).read_bytes()
    # Spark's own Parquet reader (no Hive ACID support) sees the rows and the partition column
    df = spark.read.parquet(str(tmp_path / "spark"))
    assert df.count() == len(expected)
    assert sorted(r["p"] for r in df.select("p").distinct().collect()) == sorted(
        {int(k[0].split("=")[1]) for k in expected}
    )
