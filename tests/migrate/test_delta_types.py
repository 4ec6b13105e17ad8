"""Hive types into Delta (``migrate --to delta``): the values read back by deltalake equal the
values written into the Hive ORC file; Delta's types and protocol per ``--delta-timestamp``; a
nanosecond timestamp refused naming its column unless truncation is asked for."""

from __future__ import annotations

import datetime
import json

import pyarrow as pa
import pytest

from acidctl.acid.writeids import WriteIdList
from tests.migrate.test_migrate_delta import migrate
from tests.migrate.test_types import ROW, _rows, _write

pytest.importorskip("deltalake")
from deltalake import DeltaTable  # noqa: E402

TS = datetime.datetime(2023, 11, 14, 22, 13, 20, 123456)  # 1_700_000_000_123_456_000 ns


def _types(dt) -> dict:
    return {f["name"]: f["type"] for f in json.loads(dt.schema().to_json())["fields"]}


@pytest.mark.parametrize("mode", [None, "ntz", "utc"])
def test_hive_types_read_back(tmp_path, mode):
    root = tmp_path / "typed"
    _write(root, _rows())
    target = tmp_path / "delta"
    extra = ("--delta-timestamp", mode) if mode else ()
    r, rep = migrate(root, WriteIdList("db.typed", 1), target, *extra)
    assert r.code == 0, r.stderr
    dt = DeltaTable(str(target))
    types = _types(dt)
    # Delta keeps Hive's narrow integers (byte/short), unlike Iceberg
    assert types["ti"] == "byte" and types["si"] == "short" and types["i"] == "integer" and types["bi"] == "long"
    assert types["f"] == "float" and types["d"] == "double" and types["dec"] == "decimal(10,2)"
    assert types["dt"] == "date" and types["bin"] == "binary" and types["vc"] == "string" and types["ch"] == "string"
    assert types["st"]["type"] == "struct" and types["arr"] == {
        "type": "array",
        "elementType": "long",
        "containsNull": True,
    }
    assert types["m"]["keyType"] == "string" and types["m"]["valueType"] == "double"
    proto = dt.protocol()
    if mode == "utc":
        assert types["ts"] == "timestamp"
        assert (proto.min_reader_version, proto.min_writer_version) == (1, 2)
    else:
        assert types["ts"] == "timestamp_ntz"
        assert (proto.min_reader_version, proto.min_writer_version) == (3, 7)
        assert proto.reader_features == ["timestampNtz"]
    got = sorted(dt.to_pyarrow_table().to_pylist(), key=lambda x: x["row__id"]["rowid"])
    want = _rows()
    assert got[0]["row__id"] == {"writeid": 1, "bucketid": 536870912, "rowid": 0}
    for k in ROW.names:
        g, w = got[0][k], want[0][k]
        if k == "ts":
            w = TS.replace(tzinfo=datetime.timezone.utc) if mode == "utc" else TS
            if mode == "utc":
                assert g.utcoffset() == datetime.timedelta(0)
        if k == "m":
            g = list(g)
        assert g == w, k
    assert all(got[1][k] is None for k in ROW.names)
    # the table's columns in the run's types (for a path whose snapshot has no data file left)
    from acidctl.migrate.delta import DeltaBackend

    have = DeltaBackend(str(target), {}).table_schema()
    assert have is not None and have.field("ts").type == pa.timestamp("us")
    assert have.field("ti").type == pa.int8() and have.field("dec").type == pa.decimal128(10, 2)
    assert have.field("st").type.field("x").type == pa.int32() and have.names[0] == "row__id"
    # a catch-up with the other mode would change the column's type: refused, untouched
    other = "ntz" if mode == "utc" else "utc"
    r, _ = migrate(root, WriteIdList("db.typed", 2), target, "--delta-timestamp", other)
    assert r.code == 6 and "column ts" in r.stderr
    assert DeltaTable(str(target)).version() == 0


def test_nanoseconds_refused_unless_truncation_asked(tmp_path):
    root = tmp_path / "ns"
    _write(root, _rows(nanos=789))
    target = tmp_path / "delta"
    r, _ = migrate(root, WriteIdList("db.ns", 1), target)
    assert r.code == 7
    assert "column ts" in r.stderr and "--timestamp-precision us" in r.stderr
    assert not DeltaTable.is_deltatable(str(target))  # nothing committed
    r, _ = migrate(root, WriteIdList("db.ns", 1), target, "--timestamp-precision", "us")
    assert r.code == 0, r.stderr
    got = [x["ts"] for x in DeltaTable(str(target)).to_pyarrow_table().to_pylist() if x["ts"]]
    assert got == [TS]


def test_delta_timestamp_is_for_delta_only(tmp_path):
    from tests.conftest import run_cli

    r = run_cli(
        "migrate", str(tmp_path), "--write-ids", "db.t:1:9223372036854775807::", "--to", "iceberg",
        "--catalog", f"sqlite:///{tmp_path}/c.db", "--target", "ns.t", "--delta-timestamp", "utc",
    )  # fmt: skip
    assert r.code == 2 and "--delta-timestamp is for --to delta" in r.stderr
