"""Hive types into Iceberg: the values read back by pyiceberg equal the values written into the
Hive file; a nanosecond timestamp is refused naming its column unless truncation is asked for."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pytest

from acidctl.acid.writeids import WriteIdList
from acidctl.fs import TableFS
from acidctl.orc.writer import write_acid_file
from tests.migrate import helpers
from tests.migrate.helpers import migrate

pytest.importorskip("pyiceberg")

ROW = pa.struct(
    [
        ("b", pa.bool_()),
        ("ti", pa.int8()),
        ("si", pa.int16()),
        ("i", pa.int32()),
        ("bi", pa.int64()),
        ("f", pa.float32()),
        ("d", pa.float64()),
        ("dec", pa.decimal128(10, 2)),
        ("s", pa.string()),
        ("vc", pa.string()),
        ("ch", pa.string()),
        ("bin", pa.binary()),
        ("dt", pa.date32()),
        ("ts", pa.timestamp("ns")),
        ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
        ("arr", pa.list_(pa.int64())),
        ("m", pa.map_(pa.string(), pa.float64())),
    ]
)
ORC_TYPE = (
    "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
    "row:struct<b:boolean,ti:tinyint,si:smallint,i:int,bi:bigint,f:float,d:double,dec:decimal(10,2),s:string,"
    "vc:varchar(10),ch:char(5),bin:binary,dt:date,ts:timestamp,st:struct<x:int,y:string>,arr:array<bigint>,"
    "m:map<string,double>>>"
)


def _rows(nanos: int = 0):
    return [
        {
            "b": True,
            "ti": -5,
            "si": 300,
            "i": 70000,
            "bi": 1 << 40,
            "f": 1.5,
            "d": -2.25,
            "dec": decimal.Decimal("12345678.90"),
            "s": "héllo",
            "vc": "short",
            "ch": "ab   ",
            "bin": b"\x00\xff",
            "dt": datetime.date(1999, 12, 31),
            "ts": 1_700_000_000_123_456_000 + nanos,  # ns since the epoch
            "st": {"x": 1, "y": "z"},
            "arr": [1, 2, 3],
            "m": [("k", 0.5)],
        },
        {k: None for k in ROW.names},
    ]


def _write(root, rows):
    n = len(rows)
    t = pa.table(
        {
            "operation": pa.array([0] * n, pa.int32()),
            "originalTransaction": pa.array([1] * n, pa.int64()),
            "bucket": pa.array([536870912] * n, pa.int32()),
            "rowId": pa.array(range(n), pa.int64()),
            "currentTransaction": pa.array([1] * n, pa.int64()),
            "row": pa.array(rows, ROW),
        }
    )
    d = root / "delta_0000001_0000001_0000"
    d.mkdir(parents=True)
    (d / "_orc_acid_version").write_bytes(b"2")
    write_acid_file(TableFS(str(root)), str(d / "bucket_00000"), t, orc_type=ORC_TYPE)


def test_hive_types_read_back(tmp_path):
    root = tmp_path / "typed"
    _write(root, _rows())
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    r, rep = migrate(root, WriteIdList("db.typed", 1), cat, target="ns.typed")
    assert r.code == 0, r.stderr
    t = helpers.load(cat, "ns.typed")
    types = {f.name: str(f.field_type) for f in t.schema().fields}
    assert types["ti"] == "int" and types["si"] == "int" and types["bi"] == "long"
    assert types["dec"] == "decimal(10, 2)" and types["ts"] == "timestamp" and types["dt"] == "date"
    assert types["bin"] == "binary" and types["vc"] == "string" and types["ch"] == "string"
    assert types["m"].startswith("map<string, double>") and types["arr"].startswith("list<long>")
    got = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["row__id"]["rowid"])
    want = _rows()
    assert got[0]["row__id"] == {"writeid": 1, "bucketid": 536870912, "rowid": 0}
    for k in ROW.names:
        g = got[0][k]
        w = want[0][k]
        if k == "ts":
            w = datetime.datetime(2023, 11, 14, 22, 13, 20, 123456)
        if k == "m":
            g = list(g)
        assert g == w, k
    assert all(got[1][k] is None for k in ROW.names)


def test_nanoseconds_refused_unless_truncation_asked(tmp_path):
    root = tmp_path / "ns"
    _write(root, _rows(nanos=789))
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    r, _ = migrate(root, WriteIdList("db.ns", 1), cat, target="ns.nanos")
    assert r.code == 7
    assert "column ts" in r.stderr and "--timestamp-precision us" in r.stderr
    from pyiceberg.exceptions import NoSuchTableError

    with pytest.raises(NoSuchTableError):  # nothing committed
        helpers.load(cat, "ns.nanos")
    assert not list((cat.parent / "warehouse").rglob("*.parquet"))  # no data file left behind
    r, _ = migrate(root, WriteIdList("db.ns", 1), cat, "--timestamp-precision", "us", target="ns.nanos")
    assert r.code == 0, r.stderr
    got = [x["ts"] for x in helpers.load(cat, "ns.nanos").scan().to_arrow().to_pylist() if x["ts"]]
    assert got == [datetime.datetime(2023, 11, 14, 22, 13, 20, 123456)]
