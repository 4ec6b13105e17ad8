"""The Iceberg data files acidctl commits carry ``row__id.*`` column metrics (checked against the
files' rows read with pyarrow), and a catch-up's copy-on-write reads only the files whose
``row__id.writeid`` range holds a deleted row's write id."""

from __future__ import annotations

from pathlib import Path

import pytest

from acidctl.acid.writeids import WriteIdList
from tests.histories import History, Statement, Txn
from tests.migrate import helpers
from tests.migrate.helpers import Recorder, check_row_id_bounds, iceberg_rows, migrate, row_id_ranges

pytest.importorskip("pyiceberg")

wl = helpers.late_commit_wl


def played(tmp_path: Path, monkeypatch) -> tuple[Recorder, Path, Path]:
    """helpers.late_commit_history written under ``tmp_path`` (recorded), and an empty catalog:
    (the recorder, the table's root, the catalog)."""
    rec = Recorder()
    root = tmp_path / "t"
    rec.play(helpers.late_commit_history(), root, monkeypatch)
    cat = tmp_path / "cat" / "catalog.db"
    cat.parent.mkdir()
    return rec, root, cat


def test_bounds_of_first_load_catch_ups_and_rewrites(tmp_path, monkeypatch):
    rec, root, cat = played(tmp_path, monkeypatch)
    checked = 0
    # first load (originals: write id 0), then catch-ups with inserts, updates and deletes
    # (write 6 updates a row: the file holding it is rewritten)
    for snapshot in (wl(4, open_=()), wl(6, open_=(5,)), wl(7)):
        r, rep = migrate(root, snapshot, cat)
        assert r.code == 0, r.stderr
        assert iceberg_rows(cat) == rec.table(snapshot)
        checked += check_row_id_bounds(cat)
    assert rep["committed"]["files_removed"] >= 1  # a rewrite's survivors were checked too
    assert checked >= 6


def test_bounds_without_row_id_are_absent(tmp_path, monkeypatch):
    rec, root, cat = played(tmp_path, monkeypatch)
    r, _ = migrate(root, wl(4), cat, "--no-row-id")
    assert r.code == 0, r.stderr
    t = helpers.load(cat)
    assert "row__id" not in [f.name for f in t.schema().fields]
    assert all(task.file.record_count for task in t.scan().plan_files())


def _history() -> History:
    """One bucket; partition p=0 gets one insert per write 1-4, then write 5 deletes a row of
    write 3 (picks index p=0's visible rows in ROW__ID order: 3 rows of write 1, 2 of write 2,
    so index 5 is write 3's first row) and inserts into p=1; write 6 deletes rows of writes 1
    and 4."""
    S, T = Statement, Txn
    return History(
        buckets=1,
        originals=[],
        partitions=2,
        txns=[
            T("committed", [S("insert", [1, 2, 3], [], 0), S("insert", [100], [], 1)]),
            T("committed", [S("insert", [4, 5], [], 0)]),
            T("committed", [S("insert", [6, 7], [], 0)]),
            T("committed", [S("insert", [8], [], 0)]),
            T("committed", [S("delete", [], [5], 0), S("insert", [101], [], 1)]),
            # then rows of writes 1 and 4 (index 0, then index 5 of the 6 rows left)
            T("committed", [S("delete", [], [0, 5], 0)]),
        ],
    )


def test_catch_up_reads_only_files_whose_range_holds_a_deleted_write_id(tmp_path, monkeypatch):
    rec = Recorder()
    root = tmp_path / "t"
    rec.play(_history(), root, monkeypatch)
    # the planted delete: write 5 deletes one row, written by write 3, in p=0
    deletes = [e for e in rec.events["p=0"] if e[0] == 2]
    assert sorted((e[4], e[1]) for e in deletes) == [(5, 3), (6, 1), (6, 4)]
    cat = tmp_path / "cat" / "catalog.db"
    cat.parent.mkdir()
    for hwm in (1, 2, 3, 4):  # a first load, then one catch-up per write: a file per write id
        r, _ = migrate(root, WriteIdList("db.t", hwm), cat)
        assert r.code == 0, r.stderr
    check_row_id_bounds(cat)
    before = helpers.data_files(cat)
    p0 = before["0"]
    assert len(p0) == 4
    holds = {p for p in p0 if row_id_ranges(p)["writeid"][0] <= 3 <= row_id_ranges(p)["writeid"][1]}
    assert len(holds) == 1

    with helpers.files_read() as read:
        r, rep = migrate(root, WriteIdList("db.t", 5), cat)
    assert r.code == 0, r.stderr
    assert {p["how"] for p in rep["partitions"] if p["partition"] == "p=0"} == {
        "rows"
    }  # from the delete events, not compared
    assert set(read) == holds and len(read) == 1  # the other three files of p=0 are not opened
    after = helpers.data_files(cat)
    assert p0 - after["0"] == holds  # only that file rewritten
    assert rep["committed"]["files_removed"] == 1 and rep["committed"]["rows_removed"] == 1
    assert iceberg_rows(cat) == rec.table(WriteIdList("db.t", 5))
    check_row_id_bounds(cat)

    # write 6 deletes rows of writes 1 and 4: the two files holding them are read, not the
    # others (write 2's, and the survivors of write 3's)
    before = helpers.data_files(cat)["0"]
    holds = {
        p for p in before if any(row_id_ranges(p)["writeid"][0] <= w <= row_id_ranges(p)["writeid"][1] for w in (1, 4))
    }
    assert len(holds) == 2 and len(before) == 4
    with helpers.files_read() as read:
        r, rep = migrate(root, WriteIdList("db.t", 6), cat)
    assert r.code == 0, r.stderr
    assert sorted(read) == sorted(holds)
    assert before - helpers.data_files(cat)["0"] == holds
    assert iceberg_rows(cat) == rec.table(WriteIdList("db.t", 6))
    check_row_id_bounds(cat)


def test_may_hold_needs_one_deleted_key_inside_every_range():
    import types

    import pyarrow as pa
    from pyiceberg.schema import Schema
    from pyiceberg.types import IntegerType, LongType, NestedField, StructType

    from acidctl.migrate.iceberg import _deleted_keys, _may_hold

    schema = Schema(
        NestedField(
            1,
            "row__id",
            StructType(
                NestedField(2, "writeid", LongType(), required=False),
                NestedField(3, "bucketid", IntegerType(), required=False),
                NestedField(4, "rowid", LongType(), required=False),
            ),
            required=False,
        )
    )

    def long(v):
        return int(v).to_bytes(8, "little", signed=True)

    def int_(v):
        return int(v).to_bytes(4, "little", signed=True)

    def file(w, b=None, r=None):
        lo, hi = {2: long(w[0])}, {2: long(w[1])}
        if b:
            lo[3], hi[3] = int_(b[0]), int_(b[1])
        if r:
            lo[4], hi[4] = long(r[0]), long(r[1])
        return types.SimpleNamespace(lower_bounds=lo, upper_bounds=hi)

    b0, b1 = 536870912, 536936448  # Hive's bucket property of buckets 0 and 1, statement 0
    keys = _deleted_keys(
        pa.table(
            {
                "writeid": pa.array([7, 3, 3], pa.int64()),
                "bucketid": pa.array([b0, b1, b0], pa.int32()),
                "rowid": pa.array([0, 5, 9], pa.int64()),
            }
        )
    )
    assert _may_hold(file((3, 3)), schema, keys)
    assert not _may_hold(file((4, 6)), schema, keys)  # between the deleted write ids
    assert not _may_hold(file((8, 20)), schema, keys) and not _may_hold(file((0, 2)), schema, keys)
    assert _may_hold(file((0, 100)), schema, keys)
    # write id in range, but no deleted key of it in the file's bucket / row id range
    assert not _may_hold(file((7, 7), (b1, b1)), schema, keys)
    assert _may_hold(file((3, 3), (b1, b1)), schema, keys)
    assert not _may_hold(file((3, 3), (b0, b1), (6, 8)), schema, keys)
    assert _may_hold(file((3, 3), (b0, b0), (6, 9)), schema, keys)
    # no bounds: read
    assert _may_hold(types.SimpleNamespace(lower_bounds={}, upper_bounds=None), schema, keys)


def test_files_end_at_bucket_boundaries_and_catch_up_prunes_by_bucket(tmp_path, monkeypatch):
    """With BUCKET_SPLIT_BYTES at 0 (a big table's case: every file big enough) the first load
    writes no file spanning two buckets, and a delete in one bucket reads only files whose
    bucket range holds it."""
    from acidctl.migrate import iceberg

    rec, root, cat = played(tmp_path, monkeypatch)
    monkeypatch.setattr(iceberg, "BUCKET_SPLIT_BYTES", 0)
    r, _ = migrate(root, wl(4), cat)
    assert r.code == 0, r.stderr
    check_row_id_bounds(cat)
    before = helpers.data_files(cat)
    for paths in before.values():
        for p in paths:
            lo, hi, _ = row_id_ranges(p)["bucketid"]
            assert (lo >> 16) & 0xFFF == (hi >> 16) & 0xFFF  # BucketCodec V1: bucket in bits 16-27
    # write 5 deletes a row of p=1 (and 6 one of p=0): the files that can hold a deleted key
    deleted = {part: [e[1:4] for e in evs if e[0] == 2 and e[4] in (5, 6, 7)] for part, evs in rec.events.items()}
    expected = helpers.files_holding(before, deleted)
    touched = {p for part, keys in deleted.items() if keys for p in before[part.split("=")[1]]}
    assert expected and expected < touched
    with helpers.files_read() as read:
        r, rep = migrate(root, wl(7), cat)
    assert r.code == 0, r.stderr
    assert sorted(read) == sorted(expected)
    assert iceberg_rows(cat) == rec.table(wl(7))
    check_row_id_bounds(cat)
