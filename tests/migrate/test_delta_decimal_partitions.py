"""``migrate --to delta`` (local engine) of a full-ACID table partitioned by a decimal column
with negative values (``p=-1.50``, ``p=-0.05``): deltalake 1.6 would write such a partition's
value as ``-1.-50`` / ``0.-5`` and commit a log it cannot load again
(acidctl/migrate/deltafiles.py ``deltalake_misspells``), so acidctl writes those runs' data files
itself and commits add/remove actions with the protocol's strings. Read back with deltalake:
the log's ``partitionValues`` are PROTOCOL.md's "Partition Value Serialization" (the decimal's
string with its scale), and deltalake's own scan returns the rows a Hive reader sees (worked out
from the events written below), through a first load and a catch-up that deletes a row of a
negative partition and inserts into a positive one. (``DeltaTable.to_pyarrow_table`` cannot read
such a table in deltalake 1.6: it re-serialises the partition value the same wrong way; its
``scan()`` and DataFusion queries read it.)"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from tests import histories
from tests.metastore.conftest import backend, empty_db, hive_version, metastore  # noqa: F401  (fixtures)

pytest.importorskip("deltalake")
from deltalake import DeltaTable  # noqa: E402

B0 = histories.prop(0, 0)  # bucket 0, statement 0
PARTS = {"p=-1.50": Decimal("-1.50"), "p=2.00": Decimal("2.00"), "p=-0.05": Decimal("-0.05")}


def _rows(target: Path) -> set[tuple]:
    """(p, writeid, bucketid, rowid, id, name) of every row, read by deltalake's scan."""
    dt = DeltaTable(str(target))
    t = pa.RecordBatchReader.from_stream(dt.scan()).read_all()
    out = set()
    for r in t.to_pylist():
        rid = r["row__id"]
        out.add((r["p"], rid["writeid"], rid["bucketid"], rid["rowid"], r["id"], r["name"]))
    return out


def _log_partition_values(target: Path) -> set[str]:
    """The ``partitionValues`` of every add action the current version holds (the log as JSON)."""
    dt = DeltaTable(str(target))
    live = {a["path"] for a in pa.table(dt.get_add_actions()).select(["path"]).to_pylist()}
    out = set()
    for f in sorted((target / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            add = json.loads(line).get("add")
            if add is not None and add["path"] in live:
                out.add(add["partitionValues"]["p"])
    return out


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_negative_decimal_partitions_first_load_and_catch_up(tmp_path, cli, metastore):  # noqa: F811
    url, rec = metastore
    root = tmp_path / "wh" / "t"
    rec.create_table(
        "default", "t", location=f"file:{root}", columns=[("id", "int"), ("name", "string")],
        partition_keys=[("p", "decimal(5,2)")],
    )  # fmt: skip
    for name in PARTS:
        rec.add_partition("default", "t", name)

    def write(part: str, events_of) -> int:
        txn = rec.open_txn()
        w = rec.add_write(txn, "default", "t", partition=part)
        for kind, events in events_of(w).items():
            d = f"{kind}_{w:07d}_{w:07d}_0000"
            histories._write_acid(root / part / d / "bucket_00000", events)
        rec.commit_txn(txn)
        return w

    # (op, originalWriteId, bucket, rowId, currentWriteId, row): 0 insert, 2 delete
    w1 = write("p=-1.50", lambda w: {"delta": [(0, w, B0, 0, w, (1, "a")), (0, w, B0, 1, w, (2, "b"))]})
    w2 = write("p=2.00", lambda w: {"delta": [(0, w, B0, 0, w, (3, "c"))]})
    w3 = write("p=-0.05", lambda w: {"delta": [(0, w, B0, 0, w, (4, "d"))]})
    target = tmp_path / "delta"

    def run():
        r = cli("-o", "json", "--metastore", url, "migrate", "default.t", "--to", "delta", "--target", str(target))
        assert r.code == 0, r.stderr
        return json.loads(r.stdout)

    rep = run()
    assert rep["verified"] == {"partitions": 3, "rows": 4}
    m15, p2, m005 = PARTS.values()
    assert _rows(target) == {
        (m15, w1, B0, 0, 1, "a"),
        (m15, w1, B0, 1, 2, "b"),
        (p2, w2, B0, 0, 3, "c"),
        (m005, w3, B0, 0, 4, "d"),
    }
    assert _log_partition_values(target) == {"-1.50", "2.00", "-0.05"}
    dt = DeltaTable(str(target))
    assert dt.metadata().partition_columns == ["p"]
    assert {f["name"]: f["type"] for f in json.loads(dt.schema().to_json())["fields"]}["p"] == "decimal(5,2)"

    # write 4 deletes row 1 (id 1) of p=-1.50; write 5 inserts id 5 into p=2.00
    w4 = write("p=-1.50", lambda w: {"delete_delta": [(2, w1, B0, 0, w, None)]})
    w5 = write("p=2.00", lambda w: {"delta": [(0, w, B0, 0, w, (5, "e"))]})
    rep = run()
    assert rep["mode"] == "catch-up" and rep["new_write_ids"] == f"{w4}-{w5}"
    # the deleting partition is replaced whole (a MERGE cannot go with acidctl's own files),
    # the other one appended to
    assert {p["partition"]: p["how"] for p in rep["partitions"]} == {"p=-1.50": "replace", "p=2.00": "rows"}
    assert DeltaTable(str(target)).version() == 1  # one commit
    assert _rows(target) == {
        (m15, w1, B0, 1, 2, "b"),
        (p2, w2, B0, 0, 3, "c"),
        (p2, w5, B0, 0, 5, "e"),
        (m005, w3, B0, 0, 4, "d"),
    }
    assert _log_partition_values(target) == {"-1.50", "2.00", "-0.05"}
    h = DeltaTable(str(target)).history(1)[0]
    assert h["acidctl.source-table"] == "default.t"
    assert run()["up_to_date"] is True

    # write 6 deletes id 3 of p=2.00 only: deltalake's MERGE, which leaves the negative
    # partitions' files (and their log entries) alone; the table still loads and reads
    w6 = write("p=2.00", lambda w: {"delete_delta": [(2, w2, B0, 0, w, None)]})
    rep = run()
    assert {p["partition"]: p["how"] for p in rep["partitions"]} == {"p=2.00": "rows"}
    assert rep["new_write_ids"] == str(w6) and DeltaTable(str(target)).version() == 2
    assert _rows(target) == {
        (m15, w1, B0, 1, 2, "b"),
        (p2, w5, B0, 0, 5, "e"),
        (m005, w3, B0, 0, 4, "d"),
    }
    assert _log_partition_values(target) == {"-1.50", "2.00", "-0.05"}


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_negative_decimal_partitions_of_an_insert_only_table(tmp_path, cli, metastore):  # noqa: F811
    """The insert-only (ORC) kind: a first load, a catch-up appending a new delta's rows to
    ``p=-1.50``, and an INSERT OVERWRITE (``base_N``) of ``p=-0.05`` replacing its rows, each
    one commit with the protocol's partition values."""
    import pyarrow.orc as po

    url, rec = metastore
    root = tmp_path / "wh" / "m"
    rec.create_table(
        "default", "m", location=f"file:{root}", columns=[("id", "int"), ("name", "string")],
        partition_keys=[("p", "decimal(5,2)")], insert_only=True,
    )  # fmt: skip
    for name in PARTS:
        rec.add_partition("default", "m", name)

    def write(part: str, rows: list[tuple], *, base: bool = False) -> None:
        txn = rec.open_txn()
        w = rec.add_write(txn, "default", "m", partition=part)
        d = root / part / (f"base_{w:07d}" if base else f"delta_{w:07d}_{w:07d}_0000")
        d.mkdir(parents=True)
        ids, names = zip(*rows)
        po.write_table(pa.table({"id": pa.array(ids, pa.int32()), "name": list(names)}), str(d / "000000_0"))
        rec.commit_txn(txn)

    write("p=-1.50", [(1, "a"), (2, "b")])
    write("p=2.00", [(3, "c")])
    write("p=-0.05", [(4, "d")])
    target = tmp_path / "delta"

    def run():
        r = cli("-o", "json", "--metastore", url, "migrate", "default.m", "--to", "delta", "--target", str(target))
        assert r.code == 0, r.stderr
        return json.loads(r.stdout)

    def rows() -> set[tuple]:
        t = pa.RecordBatchReader.from_stream(DeltaTable(str(target)).scan()).read_all()
        return {(r["p"], r["id"], r["name"]) for r in t.to_pylist()}

    m15, p2, m005 = PARTS.values()

    # a row of p=-1.50 lost on its way into the first commit: verification fails and the
    # first load is undone (deltalake's DELETE of every row, which keeps the log loadable)
    from acidctl import faults

    def lose_a_row(changes):
        for c in changes:
            if c.values == {"p": m15}:
                c.inserts = (b.slice(1) for b in c.inserts)

    with faults.hooks({"migrate-before-commit": lose_a_row}):
        r = cli("-o", "json", "--metastore", url, "migrate", "default.m", "--to", "delta", "--target", str(target))
    assert r.code == 1 and "partition p=-1.50" in r.stderr and "rolled back" in r.stderr, r.stderr
    assert rows() == set()

    assert run()["verified"]["rows"] == 4
    assert rows() == {(m15, 1, "a"), (m15, 2, "b"), (p2, 3, "c"), (m005, 4, "d")}
    assert _log_partition_values(target) == {"-1.50", "2.00", "-0.05"}

    write("p=-1.50", [(5, "e")])
    write("p=-0.05", [(6, "f")], base=True)  # INSERT OVERWRITE: id 4 is gone
    rep = run()
    assert {p["partition"]: p["how"] for p in rep["partitions"]} == {"p=-1.50": "rows", "p=-0.05": "replace"}
    assert DeltaTable(str(target)).version() == 3  # 0 the failed load, 1 its undoing, 2 the load
    assert rows() == {(m15, 1, "a"), (m15, 2, "b"), (m15, 5, "e"), (p2, 3, "c"), (m005, 6, "f")}
    assert _log_partition_values(target) == {"-1.50", "2.00", "-0.05"}
