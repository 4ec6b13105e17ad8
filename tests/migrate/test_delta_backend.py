"""The Delta target of ``acidctl migrate`` (acidctl/migrate/delta.py) driven directly with
hand-built :class:`PartitionChange` lists; everything is read back with deltalake itself
(``DeltaTable(...).to_pyarrow_table()``, ``history()``, ``file_uris()``), never through acidctl.
Expected rows are worked out by hand from the changes."""

from __future__ import annotations

import datetime
import decimal
import os

import pytest

pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")
from deltalake import DeltaTable, write_deltalake  # noqa: E402

from acidctl.errors import ConflictError, ExitCode, InvalidInputError, RefusedError, UsageError  # noqa: E402
from acidctl.migrate.backend import SOURCE_TABLE_KEY, SOURCE_WRITE_IDS_KEY, PartitionChange  # noqa: E402
from acidctl.migrate.delta import DeltaBackend, delta_storage_options, table_uri  # noqa: E402
from acidctl.migrate.types import row_id_type  # noqa: E402

B0 = 536870912  # bucket 0, BucketCodec V1
RID = row_id_type()
SCHEMA = pa.schema(
    [
        pa.field("row__id", RID),
        pa.field("x", pa.int32()),
        pa.field("s", pa.string()),
        pa.field("ds", pa.string()),
        pa.field("h", pa.int32()),
    ]
)
PARTS = ["ds", "h"]


def props(wids: str, table: str = "db.t") -> dict[str, str]:
    return {SOURCE_TABLE_KEY: table, SOURCE_WRITE_IDS_KEY: wids}


def batch(ds, h, rows, schema=SCHEMA) -> pa.RecordBatch:
    """rows: (writeid, bucketid, rowid, x, s) of partition ds/h."""
    return pa.record_batch(
        [
            pa.array([{"writeid": w, "bucketid": b, "rowid": r} for w, b, r, _, _ in rows], RID),
            pa.array([x for *_, x, _ in rows], pa.int32()),
            pa.array([s for *_, s in rows], pa.string()),
            pa.array([ds] * len(rows), pa.string()),
            pa.array([h] * len(rows), pa.int32()),
        ],
        schema=schema,
    )


def keys(*ids) -> pa.Table:
    return pa.table(
        {
            "writeid": pa.array([i[0] for i in ids], pa.int64()),
            "bucketid": pa.array([i[1] for i in ids], pa.int32()),
            "rowid": pa.array([i[2] for i in ids], pa.int64()),
        }
    )


def change(ds, h, rows=(), deletes=(), replace=False) -> PartitionChange:
    key = "/".join(f"{k}={'__HIVE_DEFAULT_PARTITION__' if v is None else v}" for k, v in (("ds", ds), ("h", h)))
    return PartitionChange(
        key=key,
        values={"ds": ds, "h": h},
        inserts=[batch(ds, h, list(rows))] if rows else [],
        delete_row_ids=keys(*deletes) if deletes else None,
        replace=replace,
    )


def content(path, **kw) -> set[tuple]:
    """The table's rows as (ds, h, writeid, bucketid, rowid, x, s), read by deltalake."""
    t = DeltaTable(str(path), **kw).to_pyarrow_table()
    out = set()
    for r in t.to_pylist():
        rid = r["row__id"]
        out.add((r["ds"], r["h"], rid["writeid"], rid["bucketid"], rid["rowid"], r["x"], r["s"]))
    assert len(out) == t.num_rows, "duplicate rows"
    return out


def files_of(path, partition: str) -> set[str]:
    return {f for f in DeltaTable(str(path)).file_uris() if f"/{partition}/" in f}


# the first load every catch-up test starts from: ds=a/h=1 (3 rows), ds=a/h=2 (2), ds=b/h=1 (2),
# ds=b/h=null (1); ROW__IDs repeat across partitions, as Hive's do
FIRST = [
    ("a", 1, [(1, B0, 0, 10, "a1-0"), (1, B0, 1, 11, "a1-1"), (1, B0, 2, 12, "a1-2")]),
    ("a", 2, [(1, B0, 0, 20, "a2-0"), (1, B0, 1, 21, "a2-1")]),
    ("b", 1, [(1, B0, 0, 30, "b1-0"), (1, B0, 1, 31, "b1-1")]),
    ("b", None, [(1, B0, 0, 40, "bN-0")]),
]
FIRST_ROWS = {(ds, h, *r) for ds, h, rows in FIRST for r in rows}
W1 = "db.t:1:9223372036854775807::"
W2 = "db.t:2:9223372036854775807::"


def first_load(path) -> DeltaBackend:
    be = DeltaBackend(str(path), {})
    be.ensure(SCHEMA, PARTS, dry_run=False)
    be.commit([change(ds, h, rows) for ds, h, rows in FIRST], props(W1))
    return be


def test_first_load_is_one_commit_with_partitions_and_metadata(tmp_path):
    path = tmp_path / "t"
    be = DeltaBackend(str(path), {})
    assert be.recorded() is None
    be.ensure(SCHEMA, PARTS, dry_run=False)
    assert not path.exists()  # created by the commit, not before
    c = be.commit([change(ds, h, rows) for ds, h, rows in FIRST], props(W1))
    dt = DeltaTable(str(path))
    assert dt.version() == 0 and c.version == 0 and c.previous is None
    assert dt.metadata().partition_columns == ["ds", "h"]
    (h,) = dt.history()
    assert h[SOURCE_TABLE_KEY] == "db.t" and h[SOURCE_WRITE_IDS_KEY] == W1
    assert content(path) == FIRST_ROWS
    assert c.rows_added == 8 and c.files_added == 4 and c.rows_removed == 0
    # Hive's default partition is a null partition value, and its directory keeps Hive's name
    assert any("/ds=b/h=__HIVE_DEFAULT_PARTITION__/" in f for f in dt.file_uris())
    rec = be.recorded()
    assert (rec.source_table, rec.write_ids, rec.version) == ("db.t", W1, 0)
    # no timestamp column: the plainest protocol every reader has
    assert dt.protocol().min_reader_version == 1 and dt.protocol().min_writer_version == 2


def test_catch_up_deletes_and_inserts_in_two_partitions_is_one_merge_commit(tmp_path):
    path = tmp_path / "t"
    be = first_load(path)
    untouched = files_of(path, "ds=a/h=2") | files_of(path, "ds=b/h=__HIVE_DEFAULT_PARTITION__")
    # write 2: an update of a1-1 (delete + insert with a new ROW__ID), a delete in b/1, an insert in b/1
    changes = [
        change("a", 1, rows=[(2, B0, 0, 111, "a1-1 v2")], deletes=[(1, B0, 1)]),
        change("b", 1, rows=[(2, B0, 1, 32, "b1-new")], deletes=[(1, B0, 0)]),
    ]
    c = be.commit(changes, props(W2))
    dt = DeltaTable(str(path))
    assert dt.version() == 1 == c.version and c.previous == 0
    latest = dt.history(1)[0]
    assert latest["operation"] == "MERGE"
    assert latest[SOURCE_WRITE_IDS_KEY] == W2 and latest[SOURCE_TABLE_KEY] == "db.t"
    expected = (FIRST_ROWS - {("a", 1, 1, B0, 1, 11, "a1-1"), ("b", 1, 1, B0, 0, 30, "b1-0")}) | {
        ("a", 1, 2, B0, 0, 111, "a1-1 v2"),
        ("b", 1, 2, B0, 1, 32, "b1-new"),
    }
    assert content(path) == expected
    assert (c.rows_added, c.rows_removed) == (2, 2)
    # the MERGE read only the two changed partitions' files (the target-side partition conjunct)
    assert latest["operationMetrics"]["num_target_files_scanned"] == 2
    assert latest["operationMetrics"]["num_target_files_skipped_during_scan"] == 2
    # the partitions without changes keep their files
    assert files_of(path, "ds=a/h=2") | files_of(path, "ds=b/h=__HIVE_DEFAULT_PARTITION__") == untouched
    # the previous version is still readable as it was
    assert content(path, version=0) == FIRST_ROWS
    assert be.recorded().write_ids == W2


def test_a_row_id_repeated_in_other_partitions_is_deleted_only_in_its_own(tmp_path):
    path = tmp_path / "t"
    be = first_load(path)
    # (1, B0, 0) exists in all four partitions; delete it in a/2 and in the null partition only
    be.commit([change("a", 2, deletes=[(1, B0, 0)]), change("b", None, deletes=[(1, B0, 0)])], props(W2))
    assert content(path) == FIRST_ROWS - {("a", 2, 1, B0, 0, 20, "a2-0"), ("b", None, 1, B0, 0, 40, "bN-0")}
    assert DeltaTable(str(path)).version() == 1


def test_null_partition_is_matched_null_safely_and_a_null_key_is_not_a_wildcard(tmp_path):
    path = tmp_path / "t"
    be = first_load(path)
    # deleting (1, B0, 1) of the null partition matches nothing there (its only row is rowid 0),
    # and must not reach b/1's (1, B0, 1); the insert lands in the null partition
    be.commit([change("b", None, rows=[(2, B0, 0, 41, "bN-new")], deletes=[(1, B0, 1)])], props(W2))
    assert content(path) == FIRST_ROWS | {("b", None, 2, B0, 0, 41, "bN-new")}
    ids = be.row_ids({"ds": "b", "h": None})
    assert sorted(zip(*[ids.column(n).to_pylist() for n in ("writeid", "bucketid", "rowid")])) == [
        (1, B0, 0),
        (2, B0, 0),
    ]


def test_replace_partitions_and_deletes_elsewhere_in_one_commit(tmp_path):
    path = tmp_path / "t"
    be = first_load(path)
    kept = files_of(path, "ds=a/h=2")
    changes = [
        # a/1 is replaced (every current row dropped) by two rows, one with a ROW__ID it had before
        change("a", 1, rows=[(1, B0, 0, 100, "a1-0 again"), (3, B0, 0, 101, "a1-new")], replace=True),
        # the null partition is replaced by nothing
        change("b", None, replace=True),
        # and a plain delete in b/1
        change("b", 1, deletes=[(1, B0, 1)]),
    ]
    c = be.commit(changes, props(W2))
    assert DeltaTable(str(path)).version() == 1 == c.version
    expected = {r for r in FIRST_ROWS if (r[0], r[1]) in {("a", 2), ("b", 1)}} - {("b", 1, 1, B0, 1, 31, "b1-1")}
    expected |= {("a", 1, 1, B0, 0, 100, "a1-0 again"), ("a", 1, 3, B0, 0, 101, "a1-new")}
    assert content(path) == expected
    assert (c.rows_added, c.rows_removed) == (2, 5)
    assert files_of(path, "ds=a/h=2") == kept
    assert not files_of(path, "ds=b/h=__HIVE_DEFAULT_PARTITION__")


def test_unpartitioned_replace_and_catch_up(tmp_path):
    schema = pa.schema([pa.field("row__id", RID), pa.field("x", pa.int32())])

    def rows(*ids):
        return pa.record_batch(
            [
                pa.array([{"writeid": w, "bucketid": B0, "rowid": r} for w, r, _ in ids], RID),
                pa.array([x for *_, x in ids], pa.int32()),
            ],
            schema=schema,
        )

    path = tmp_path / "t"
    be = DeltaBackend(str(path), {})
    be.ensure(schema, [], dry_run=False)
    be.commit([PartitionChange("", {}, [rows((1, 0, 1), (1, 1, 2))], None)], props(W1))
    assert DeltaTable(str(path)).metadata().partition_columns == []
    be.commit([PartitionChange("", {}, [rows((2, 0, 3))], keys((1, B0, 0)))], props(W2))
    t = DeltaTable(str(path)).to_pyarrow_table()
    assert sorted(t.column("x").to_pylist()) == [2, 3]
    be.commit([PartitionChange("", {}, [rows((3, 0, 9))], None, replace=True)], props("db.t:3:9223372036854775807::"))
    dt = DeltaTable(str(path))
    assert dt.to_pyarrow_table().column("x").to_pylist() == [9] and dt.version() == 2


def test_new_write_ids_without_a_row_change_still_make_one_commit(tmp_path):
    path = tmp_path / "t"
    be = first_load(path)
    # a delete key that matches nothing and no inserts: the MERGE alone would commit nothing
    c = be.commit([change("a", 1, deletes=[(7, B0, 7)])], props(W2))
    dt = DeltaTable(str(path))
    assert dt.version() == 1 == c.version and c.previous == 0
    assert dt.history(1)[0][SOURCE_WRITE_IDS_KEY] == W2
    assert content(path) == FIRST_ROWS
    assert be.recorded().write_ids == W2


def test_row_ids_of_one_partition(tmp_path):
    path = tmp_path / "t"
    be = first_load(path)
    ids = be.row_ids({"ds": "a", "h": 1})
    assert ids.schema.names == ["writeid", "bucketid", "rowid"]
    assert ids.schema.field("bucketid").type == pa.int32()
    assert sorted(ids.column("rowid").to_pylist()) == [0, 1, 2]
    assert be.row_ids({"ds": "zz", "h": 1}).num_rows == 0
    assert DeltaBackend(str(tmp_path / "none"), {}).row_ids({"ds": "a", "h": 1}).num_rows == 0


def test_scan_streams_a_version_in_the_run_schema(tmp_path):
    path = tmp_path / "t"
    be = first_load(path)
    be.commit([change("a", 1, deletes=[(1, B0, 0)])], props(W2))
    v0 = pa.Table.from_batches(list(be.scan(0)))
    v1 = pa.Table.from_batches(list(be.scan(1)))
    assert v0.schema == SCHEMA and v0.num_rows == 8 and v1.num_rows == 7


def test_rollback_restores_the_previous_version_and_its_record(tmp_path):
    path = tmp_path / "t"
    be = first_load(path)
    c = be.commit([change("a", 1, rows=[(2, B0, 0, 1, "x")], deletes=[(1, B0, 0)])], props(W2))
    assert be.rollback(c) is None
    dt = DeltaTable(str(path))
    assert dt.version() == 2 == be.restored_version  # a RESTORE is a new commit
    assert dt.history(1)[0]["operation"] == "RESTORE"
    assert content(path) == FIRST_ROWS
    rec = be.recorded()
    assert (rec.write_ids, rec.version) == (W1, 2)  # the next run catches up from write 1 again


def test_rollback_of_a_first_load_empties_the_table_for_a_new_load(tmp_path):
    path = tmp_path / "t"
    be = DeltaBackend(str(path), {})
    be.ensure(SCHEMA, PARTS, dry_run=False)
    c0 = be.commit([change(ds, h, rows) for ds, h, rows in FIRST], props(W1))
    assert be.rollback(c0) is None
    dt = DeltaTable(str(path))
    assert dt.version() == 1 == be.restored_version
    assert dt.history(1)[0]["operation"] == "DELETE" and dt.history(1)[0]["acidctl.emptied"] == "true"
    assert dt.to_pyarrow_table().num_rows == 0
    # the emptied table records no snapshot: the next run loads anew (into the same table)
    assert be.recorded() is None
    be.ensure(SCHEMA, PARTS, dry_run=False)
    c1 = be.commit([change(ds, h, rows) for ds, h, rows in FIRST], props(W1))
    assert (c1.version, c1.previous) == (2, 1)
    assert content(path) == FIRST_ROWS and be.recorded().write_ids == W1
    # and undoing that load goes back to the emptied version, still recording nothing
    assert be.rollback(c1) is None
    assert be.recorded() is None and DeltaTable(str(path)).to_pyarrow_table().num_rows == 0


def test_rollback_of_a_table_that_moved_on_is_reported(tmp_path):
    path = tmp_path / "t"
    be = first_load(path)
    c1 = be.commit([change("a", 1, deletes=[(1, B0, 0)])], props(W2))
    be.commit([change("a", 1, deletes=[(1, B0, 1)])], props("db.t:3:9223372036854775807::"))
    msg = be.rollback(c1)
    assert msg and "moved on to version 2" in msg and str(path) in msg
    assert DeltaTable(str(path)).version() == 2  # nothing restored


def test_a_target_last_written_by_someone_else_is_refused(tmp_path):
    path = tmp_path / "t"
    be = first_load(path)
    # a catch-up that adds a second file to a/1, then maintenance that keeps every row
    # (OPTIMIZE, VACUUM, table properties): looked past
    be.commit([change("a", 1, rows=[(2, B0, 0, 13, "a1-new")])], props(W2))
    DeltaTable(str(path)).optimize.compact()
    DeltaTable(str(path)).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    DeltaTable(str(path)).alter.set_table_properties({"delta.logRetentionDuration": "interval 60 days"})
    ops = [h["operation"] for h in DeltaTable(str(path)).history(4)]
    assert ops == ["SET TBLPROPERTIES", "VACUUM END", "VACUUM START", "OPTIMIZE"]
    rec = be.recorded()
    assert (rec.write_ids, rec.version) == (W2, DeltaTable(str(path)).version())
    # a foreign append changes rows: refused, exit 6
    write_deltalake(str(path), pa.Table.from_batches([batch("c", 1, [(9, B0, 0, 1, "x")])]), mode="append")
    with pytest.raises(RefusedError) as e:
        be.recorded()
    assert e.value.exit_code == ExitCode.CONFLICT and "was not written by acidctl" in str(e.value)
    assert "WRITE" in str(e.value)


def test_ensure_refuses_an_incompatible_table_and_foreign_files(tmp_path):
    path = tmp_path / "t"
    first_load(path)
    other = pa.schema([*SCHEMA, pa.field("y", pa.int64())])
    with pytest.raises(RefusedError, match="no column y"):
        DeltaBackend(str(path), {}).ensure(other, PARTS, dry_run=True)
    with pytest.raises(RefusedError, match="partitioned by"):
        DeltaBackend(str(path), {}).ensure(SCHEMA, ["ds"], dry_run=True)
    DeltaBackend(str(path), {}).ensure(SCHEMA, PARTS, dry_run=True)  # the same: fine
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "data.csv").write_text("1\n")
    with pytest.raises(RefusedError, match="no Delta table"):
        DeltaBackend(str(junk), {}).ensure(SCHEMA, PARTS, dry_run=True)
    (tmp_path / "empty").mkdir()
    DeltaBackend(str(tmp_path / "empty"), {}).ensure(SCHEMA, PARTS, dry_run=True)


def test_deletes_need_a_row_id_column(tmp_path):
    schema = pa.schema([pa.field("x", pa.int32()), pa.field("ds", pa.string())])
    path = tmp_path / "t"
    be = DeltaBackend(str(path), {})
    be.ensure(schema, ["ds"], dry_run=False)
    rows = pa.record_batch([pa.array([1], pa.int32()), pa.array(["a"])], schema=schema)
    be.commit([PartitionChange("ds=a", {"ds": "a"}, [rows], None)], props(W1))
    with pytest.raises(InvalidInputError, match="no row__id"):
        be.commit([PartitionChange("ds=a", {"ds": "a"}, [], keys((1, B0, 0)))], props(W2))
    # --no-row-id targets catch up by replacing partitions
    be.commit([PartitionChange("ds=a", {"ds": "a"}, [rows, rows], None, replace=True)], props(W2))
    assert DeltaTable(str(path)).to_pyarrow_table().column("x").to_pylist() == [1, 1]


# -- types ---------------------------------------------------------------------------------

NESTED = pa.struct([pa.field("a", pa.int32()), pa.field("t", pa.timestamp("us")), pa.field("l", pa.list_(pa.string()))])
TYPES = pa.schema(
    [
        pa.field("row__id", RID),
        pa.field("ti", pa.int8()),
        pa.field("si", pa.int16()),
        pa.field("bi", pa.int64()),
        pa.field("b", pa.bool_()),
        pa.field("f", pa.float32()),
        pa.field("d", pa.float64()),
        pa.field("dec", pa.decimal128(38, 10)),
        pa.field("dec2", pa.decimal128(5, 2)),
        pa.field("dt", pa.date32()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("bin", pa.binary()),
        pa.field("st", NESTED),
        pa.field("arr", pa.list_(pa.decimal128(10, 2))),
        pa.field("m", pa.map_(pa.string(), pa.list_(pa.int64()))),
        pa.field("pd", pa.date32()),  # partition columns of other types than string
        pa.field("pn", pa.decimal128(4, 1)),
    ]
)
TS = datetime.datetime(2024, 3, 1, 23, 59, 59, 999999)
TYPE_VALUES = {
    "row__id": [{"writeid": 1, "bucketid": B0, "rowid": 0}, {"writeid": 1, "bucketid": B0, "rowid": 1}],
    "ti": [-128, 127],
    "si": [-32768, None],
    "bi": [2**63 - 1, -(2**63)],
    "b": [True, None],
    "f": [1.5, None],
    "d": [-0.0, 1e308],
    "dec": [decimal.Decimal("1234567890123456789012345678.0123456789"), decimal.Decimal("-0.0000000001")],
    "dec2": [decimal.Decimal("-999.99"), None],
    "dt": [datetime.date(1, 1, 1), datetime.date(9999, 12, 31)],
    "ts": [TS, datetime.datetime(1900, 1, 1)],
    "bin": [b"\x00\xff\x00", b""],
    "st": [{"a": 1, "t": TS, "l": ["x", None]}, None],
    "arr": [[decimal.Decimal("1.25"), None], []],
    "m": [[("k", [1, 2]), ("k2", None)], None],
    "pd": [datetime.date(2024, 1, 1), datetime.date(2024, 1, 1)],
    "pn": [decimal.Decimal("1.5"), decimal.Decimal("1.5")],
}


@pytest.mark.parametrize("mode", ["ntz", "utc"])
def test_types_round_trip(tmp_path, mode):
    path = tmp_path / "t"
    be = DeltaBackend(str(path), {}, timestamp=mode)
    be.ensure(TYPES, ["pd", "pn"], dry_run=False)
    data = pa.record_batch([pa.array(TYPE_VALUES[f.name], f.type) for f in TYPES], schema=TYPES)
    values = {"pd": datetime.date(2024, 1, 1), "pn": decimal.Decimal("1.5")}
    be.commit([PartitionChange("pd=2024-01-01/pn=1.5", values, [data], None)], props(W1))
    dt = DeltaTable(str(path))
    proto = dt.protocol()
    got = dt.to_pyarrow_table()
    if mode == "ntz":
        # timestamp_ntz: reader 3 / writer 7 with the timestampNtz feature
        assert (proto.min_reader_version, proto.min_writer_version) == (3, 7)
        assert "timestampNtz" in proto.reader_features and "timestampNtz" in proto.writer_features
        assert got.schema.field("ts").type == pa.timestamp("us")
        assert '"timestamp_ntz"' in dt.schema().to_json()
    else:
        # Delta timestamp: every reader; Hive's wall clock as a UTC instant
        assert (proto.min_reader_version, proto.min_writer_version) == (1, 2)
        assert got.schema.field("ts").type == pa.timestamp("us", tz="UTC")
        assert "timestamp_ntz" not in dt.schema().to_json()
    rows = got.to_pylist()
    assert len(rows) == 2
    by_rowid = {r["row__id"]["rowid"]: r for r in rows}
    for i in (0, 1):
        for name, vals in TYPE_VALUES.items():
            want, have = vals[i], by_rowid[i][name]
            if mode == "utc" and isinstance(have, datetime.datetime):
                assert have.utcoffset() == datetime.timedelta(0)
                have = have.replace(tzinfo=None)
            if name == "st" and have is not None and mode == "utc":
                have = {**have, "t": have["t"].replace(tzinfo=None)}
            assert have == want, (name, i)
    # the run's schema comes back from scan (timestamps zone-less in both modes)
    scanned = pa.Table.from_batches(list(be.scan(0)))
    assert scanned.schema == TYPES
    assert sorted(scanned.column("ts").to_pylist()) == sorted(TYPE_VALUES["ts"])
    # a catch-up in the typed partition: delete rowid 1 by its partition values + ROW__ID
    be.commit([PartitionChange("pd=2024-01-01/pn=1.5", values, [], keys((1, B0, 1)))], props(W2))
    assert [r["row__id"]["rowid"] for r in DeltaTable(str(path)).to_pyarrow_table().to_pylist()] == [0]
    assert be.row_ids(values).column("rowid").to_pylist() == [0]
    # the file the MERGE rewrote keeps the other row's values exactly
    before = [r for r in pa.Table.from_batches(list(be.scan(0))).to_pylist() if r["row__id"]["rowid"] == 0]
    assert pa.Table.from_batches(list(be.scan(1))).to_pylist() == before and len(before) == 1
    # and an existing table of the other mode is refused
    other = "utc" if mode == "ntz" else "ntz"
    with pytest.raises(RefusedError, match="column ts"):
        DeltaBackend(str(path), {}, timestamp=other).ensure(TYPES, ["pd", "pn"], dry_run=True)


def test_timestamp_mode_and_location_refusals(tmp_path):
    with pytest.raises(UsageError, match="--delta-timestamp"):
        DeltaBackend(str(tmp_path / "t"), {}, timestamp="local")
    for url in ("hdfs://nn:9870/w/t", "webhdfs://nn:9870/w/t"):
        with pytest.raises(UsageError, match="WebHDFS"):
            DeltaBackend(url, {})
    for url in ("gs://b/t", "memory://t"):
        with pytest.raises(UsageError, match="not supported"):
            table_uri(url)
    assert table_uri("file://" + str(tmp_path / "t")) == str(tmp_path / "t")
    assert table_uri("rel/t") == os.path.abspath("rel/t")


def test_s3_options_translate_from_fs_options():
    o = delta_storage_options(
        "s3://b/t",
        {
            "endpoint_url": "http://127.0.0.1:9",
            "key": "K",
            "secret": "S",
            "client_kwargs": {"region_name": "eu-west-1"},
        },
    )
    assert o == {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
        "AWS_ACCESS_KEY_ID": "K",
        "AWS_SECRET_ACCESS_KEY": "S",
        "AWS_REGION": "eu-west-1",
        "AWS_ALLOW_HTTP": "true",
    }
    assert delta_storage_options(os.path.abspath("t"), {"auto_mkdir": True}) == {}


# -- S3 (moto) ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def s3_server():
    pytest.importorskip("moto.server")
    from tests.migrate.moto_s3 import moto_s3_process

    with moto_s3_process() as endpoint:
        yield endpoint


def test_first_load_catch_up_and_rollback_on_s3(s3_server, monkeypatch):
    boto3 = pytest.importorskip("boto3")
    for k, v in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(k, v)
    boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1").create_bucket(Bucket="delta-target")
    url = "s3://delta-target/w/t"
    fs_options = {"endpoint_url": s3_server}
    be = DeltaBackend(url, fs_options)
    assert be.recorded() is None
    be.ensure(SCHEMA, PARTS, dry_run=False)
    be.commit([change(ds, h, rows) for ds, h, rows in FIRST], props(W1))
    c = be.commit([change("a", 1, rows=[(2, B0, 0, 5, "new")], deletes=[(1, B0, 2)])], props(W2))
    so = {"AWS_ENDPOINT_URL": s3_server, "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1"}
    expected = (FIRST_ROWS - {("a", 1, 1, B0, 2, 12, "a1-2")}) | {("a", 1, 2, B0, 0, 5, "new")}
    assert content(url, storage_options=so) == expected
    dt = DeltaTable(url, storage_options=so)
    assert dt.version() == 1 and dt.history(1)[0][SOURCE_WRITE_IDS_KEY] == W2
    objects = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1").list_objects_v2(
        Bucket="delta-target", Prefix="w/t/_delta_log/"
    )
    assert {o["Key"] for o in objects["Contents"]} >= {
        "w/t/_delta_log/00000000000000000000.json",
        "w/t/_delta_log/00000000000000000001.json",
    }
    assert be.rollback(c) is None
    assert content(url, storage_options=so) == FIRST_ROWS
    assert be.recorded().write_ids == W1


def test_a_concurrent_commit_fails_the_catch_up_whole(tmp_path, monkeypatch):
    """A commit by another writer between the catch-up's read of the table and its commit: the
    MERGE's commit conflicts, nothing of it is committed (exit 6)."""
    path = tmp_path / "t"
    be = first_load(path)
    real = be._table
    state = {"done": False}

    def table_then_race(version=None):
        dt = real(version)
        if not state["done"] and version is None and dt is not None:
            state["done"] = True
            # someone deletes a row of the partition the catch-up rewrites, after our read
            DeltaTable(str(path)).delete("ds = 'a' AND h = 1 AND x = 10")
        return dt

    monkeypatch.setattr(be, "_table", table_then_race)
    with pytest.raises(ConflictError) as e:
        be.commit([change("a", 1, rows=[(2, B0, 0, 1, "x")], deletes=[(1, B0, 1)])], props(W2))
    assert e.value.exit_code == ExitCode.CONFLICT and "nothing was committed" in str(e.value)
    dt = DeltaTable(str(path))
    assert dt.version() == 1 and dt.history(1)[0]["operation"] == "DELETE"
    assert content(path) == FIRST_ROWS - {("a", 1, 1, B0, 0, 10, "a1-0")}


def test_partitions_lists_the_typed_values_with_rows(tmp_path):
    path = tmp_path / "t"
    assert DeltaBackend(str(path), {}).partitions() == []
    be = first_load(path)
    got = sorted(be.partitions(), key=lambda v: (v["ds"], v["h"] is None, v["h"] or 0))
    assert got == [{"ds": "a", "h": 1}, {"ds": "a", "h": 2}, {"ds": "b", "h": 1}, {"ds": "b", "h": None}]
    # a partition replaced by nothing (Hive dropped it) is gone from the list
    be.commit([change("a", 2, replace=True)], props(W2))
    assert {"ds": "a", "h": 2} not in be.partitions() and len(be.partitions()) == 3


@pytest.mark.parametrize("mode", ["ntz", "utc"])
def test_float_and_timestamp_partitions_are_matched_and_replaced(tmp_path, mode):
    schema = pa.schema(
        [
            pa.field("row__id", RID),
            pa.field("x", pa.int32()),
            pa.field("f", pa.float32()),
            pa.field("p", pa.timestamp("us")),
        ]
    )
    ts1, ts2 = datetime.datetime(2024, 1, 1, 10, 0, 0, 123456), datetime.datetime(2024, 1, 2)

    def rows(f, p, *ids):
        n = len(ids)
        return pa.record_batch(
            [
                pa.array([{"writeid": 1, "bucketid": B0, "rowid": r} for r in ids], RID),
                pa.array(list(ids), pa.int32()),
                pa.array([f] * n, pa.float32()),
                pa.array([p] * n, pa.timestamp("us")),
            ],
            schema=schema,
        )

    path = tmp_path / "t"
    be = DeltaBackend(str(path), {}, timestamp=mode)
    be.ensure(schema, ["f", "p"], dry_run=False)
    # Hive's partition value "1.1" of a float column is the float32 nearest to 1.1
    v1, v2 = {"f": 1.100000023841858, "p": ts1}, {"f": 2.5, "p": ts2}
    be.commit(
        [
            PartitionChange("a", v1, [rows(1.1, ts1, 0, 1)], None),
            PartitionChange("b", v2, [rows(2.5, ts2, 0, 1)], None),
        ],
        props(W1),
    )
    assert sorted(be.partitions(), key=lambda v: v["f"]) == [v1, v2]
    be.commit(
        [
            PartitionChange("a", v1, [], keys((1, B0, 1))),
            PartitionChange("b", v2, [rows(2.5, ts2, 7)], None, replace=True),
        ],
        props(W2),
    )
    t = DeltaTable(str(path)).to_pyarrow_table()
    assert sorted(zip(t.column("f").to_pylist(), t.column("x").to_pylist())) == [(pytest.approx(1.1), 0), (2.5, 7)]
    assert be.row_ids(v1).column("rowid").to_pylist() == [0]


def test_an_error_while_the_rows_stream_commits_nothing_and_is_the_error_raised(tmp_path):
    """The run's row iterator fails half-way (e.g. a refused nanosecond timestamp, exit 7):
    deltalake has written some data files, but no commit references them; the user sees the
    run's own error, not deltalake's wrapper."""

    def failing(first):
        yield first
        raise InvalidInputError("column ts: a timestamp has a sub-microsecond part")

    path = tmp_path / "t"
    be = DeltaBackend(str(path), {})
    be.ensure(SCHEMA, PARTS, dry_run=False)
    bad = PartitionChange("ds=a/h=1", {"ds": "a", "h": 1}, failing(batch("a", 1, FIRST[0][2])), None)
    with pytest.raises(InvalidInputError, match="sub-microsecond") as e:
        be.commit([bad], props(W1))
    assert e.value.exit_code == ExitCode.INVALID_INPUT
    assert not DeltaTable.is_deltatable(str(path)) and be.recorded() is None

    be = first_load(path)
    bad = PartitionChange(
        "ds=a/h=1", {"ds": "a", "h": 1}, failing(batch("a", 1, [(2, B0, 0, 1, "x")])), keys((1, B0, 0))
    )
    with pytest.raises(InvalidInputError, match="sub-microsecond"):
        be.commit([change("b", 1, deletes=[(1, B0, 0)]), bad], props(W2))
    dt = DeltaTable(str(path))
    assert dt.version() == 0 and content(path) == FIRST_ROWS and be.recorded().write_ids == W1


def test_replacing_partitions_only_is_one_overwrite_that_reads_no_file(tmp_path):
    """Every change a replace (Hive 2 tables, --no-row-id, INSERT OVERWRITE): one overwrite
    commit removing the replaced partitions' files whole; the others' files stay."""
    path = tmp_path / "t"
    be = first_load(path)
    kept = files_of(path, "ds=a/h=2") | files_of(path, "ds=b/h=1")
    changes = [
        change("a", 1, rows=[(5, B0, 0, 500, "a1 overwritten")], replace=True),
        change("b", None, replace=True),  # a partition Hive dropped
    ]
    c = be.commit(changes, props(W2))
    dt = DeltaTable(str(path))
    assert dt.version() == 1 == c.version and c.previous == 0
    h = dt.history(1)[0]
    assert h["operation"] == "WRITE" and h["operationParameters"]["mode"] == "Overwrite"
    assert h[SOURCE_WRITE_IDS_KEY] == W2
    expected = {r for r in FIRST_ROWS if (r[0], r[1]) in {("a", 2), ("b", 1)}} | {
        ("a", 1, 5, B0, 0, 500, "a1 overwritten")
    }
    assert content(path) == expected
    assert (c.rows_added, c.rows_removed, c.files_removed) == (1, 4, 2)
    assert files_of(path, "ds=a/h=2") | files_of(path, "ds=b/h=1") == kept


def test_partition_values_that_need_quoting_and_an_empty_first_load(tmp_path):
    path = tmp_path / "t"
    be = DeltaBackend(str(path), {})
    be.ensure(SCHEMA, PARTS, dry_run=False)
    c = be.commit([], props(W1))  # a table with no rows yet: created all the same, one commit
    dt = DeltaTable(str(path))
    assert dt.version() == 0 == c.version and dt.to_pyarrow_table().num_rows == 0
    assert dt.history(1)[0][SOURCE_WRITE_IDS_KEY] == W1 and be.partitions() == []
    odd = "it's a/b c%3D=ü"
    be.commit(
        [change(odd, 1, rows=[(2, B0, 0, 1, "x"), (2, B0, 1, 2, "y")]), change("plain", 1, rows=[(2, B0, 0, 3, "z")])],
        props(W2),
    )
    be.commit([change(odd, 1, deletes=[(2, B0, 0)])], props("db.t:3:9223372036854775807::"))
    assert content(path) == {(odd, 1, 2, B0, 1, 2, "y"), ("plain", 1, 2, B0, 0, 3, "z")}
    assert be.row_ids({"ds": odd, "h": 1}).column("rowid").to_pylist() == [1]
    assert {"ds": odd, "h": 1} in be.partitions()
    be.commit([change(odd, 1, replace=True)], props("db.t:4:9223372036854775807::"))
    assert content(path) == {("plain", 1, 2, B0, 0, 3, "z")}


def test_first_load_is_staged_in_groups_of_partitions_and_committed_once(tmp_path, monkeypatch):
    """Bounded memory: whole partitions, a few rows' worth at a time, are written by separate
    deltalake writes into a staging table inside the target; the target is created by one
    commit adding all their files (partition values and statistics as the writes made them)."""
    from acidctl.migrate import delta as delta_mod

    monkeypatch.setattr(delta_mod, "STAGING_GROUP_ROWS", 2)
    path = tmp_path / "t"
    be = DeltaBackend(str(path), {})
    be.ensure(SCHEMA, PARTS, dry_run=False)
    c = be.commit([change(ds, h, rows) for ds, h, rows in FIRST], props(W1))
    dt = DeltaTable(str(path))
    assert dt.version() == 0 and len(dt.history()) == 1 and dt.history()[0][SOURCE_WRITE_IDS_KEY] == W1
    assert content(path) == FIRST_ROWS and c.rows_added == 8 and c.files_added == 4
    assert dt.metadata().partition_columns == ["ds", "h"]
    # the files live under one staging directory whose own log is gone
    (staging,) = [p for p in path.iterdir() if p.name != "_delta_log"]
    assert staging.name.startswith("acidctl-load-") and not (staging / "_delta_log").exists()
    assert all("/acidctl-load-" in f for f in dt.file_uris())
    # statistics came along (data skipping works): the log's add actions carry min/max
    stats = pa.table(dt.get_add_actions(flatten=True))
    assert stats.column("num_records").to_pylist() and "min.x" in stats.column_names
    # partition pruning still works on the staged files
    assert be.row_ids({"ds": "b", "h": None}).column("rowid").to_pylist() == [0]


def test_tinyint_boolean_and_bigint_partitions(tmp_path):
    schema = pa.schema(
        [
            pa.field("row__id", RID),
            pa.field("x", pa.int32()),
            pa.field("p", pa.int8()),
            pa.field("q", pa.bool_()),
            pa.field("r", pa.int64()),
        ]
    )

    def rows(v, *ids):
        n = len(ids)
        return pa.record_batch(
            [
                pa.array([{"writeid": 1, "bucketid": B0, "rowid": i} for i in ids], RID),
                pa.array(list(ids), pa.int32()),
                *[pa.array([v[k]] * n, schema.field(k).type) for k in ("p", "q", "r")],
            ],
            schema=schema,
        )

    path = tmp_path / "t"
    be = DeltaBackend(str(path), {})
    be.ensure(schema, ["p", "q", "r"], dry_run=False)
    v1, v2 = {"p": -3, "q": True, "r": 2**40}, {"p": 5, "q": False, "r": None}
    be.commit(
        [PartitionChange("a", v1, [rows(v1, 0, 1)], None), PartitionChange("b", v2, [rows(v2, 0)], None)], props(W1)
    )
    c = be.commit(
        [PartitionChange("a", v1, [], keys((1, B0, 0))), PartitionChange("b", v2, [rows(v2, 7)], None, replace=True)],
        props(W2),
    )
    got = sorted((r["p"], r["q"], r["r"], r["x"]) for r in DeltaTable(str(path)).to_pyarrow_table().to_pylist())
    assert got == [(-3, True, 2**40, 1), (5, False, None, 7)]
    assert (c.rows_added, c.rows_removed) == (1, 2)
    assert sorted(be.partitions(), key=lambda v: v["p"]) == [v1, v2]
