"""acidctl/migrate/deltafiles.py against deltalake itself: the same rows written by
``write_deltalake`` give the partition directories, ``partitionValues`` strings and per-file
statistics that acidctl computes for a Parquet file of those rows (written by pyarrow, as a
Spark task of ``migrate --engine spark`` writes it). Where acidctl is stricter on purpose (no
bounds for float/double columns) deltalake's bounds of those columns are left out of the
comparison; the protocol's negative decimal partition value (deltalake 1.6 cannot write one)
is checked against PROTOCOL.md's format."""

from __future__ import annotations

import datetime
import decimal
import json
import urllib.parse
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("deltalake")
from deltalake import write_deltalake  # noqa: E402

from acidctl.migrate.deltafiles import file_stats, partition_directory, partition_string  # noqa: E402

RID = pa.struct([("writeid", pa.int64()), ("bucketid", pa.int32()), ("rowid", pa.int64())])
FLOATS = {"f", "d"}


def _schema(tz: str | None) -> pa.Schema:
    ts = pa.timestamp("us", tz=tz)
    return pa.schema(
        [
            ("row__id", RID),
            ("i8", pa.int8()),
            ("i16", pa.int16()),
            ("i", pa.int32()),
            ("l", pa.int64()),
            ("f", pa.float32()),
            ("d", pa.float64()),
            ("s", pa.string()),
            ("b", pa.binary()),
            ("bo", pa.bool_()),
            ("dt", pa.date32()),
            ("ts", ts),
            ("dec", pa.decimal128(10, 2)),
            ("dec0", pa.decimal128(9, 0)),
            ("lst", pa.list_(pa.int32())),
            ("m", pa.map_(pa.string(), pa.int32())),
            ("st", pa.struct([("a", pa.int32()), ("t", ts)])),
            ("ps", pa.string()),
            ("pd", pa.date32()),
            ("pts", ts),
            ("pdec", pa.decimal128(5, 2)),
            ("pi", pa.int16()),
            ("pb", pa.bool_()),
            ("pf", pa.float64()),
        ]
    )


PARTS = ["ps", "pd", "pts", "pdec", "pi", "pb", "pf"]


def _rows(tz) -> list[dict]:
    z = datetime.timezone.utc if tz else None

    def ts(*a):
        return datetime.datetime(*a, tzinfo=z)

    p1 = dict(ps="a b:c/d%é=~_.-", pd=datetime.date(2024, 1, 1), pts=ts(2024, 1, 1, 10, 0, 0, 500),
              pdec=decimal.Decimal("1.50"), pi=-1, pb=True, pf=1.0)  # fmt: skip
    p2 = dict(ps="x", pd=datetime.date(1, 1, 1), pts=ts(1969, 12, 31, 23, 59, 59, 999999),
              pdec=decimal.Decimal("0.05"), pi=7, pb=False, pf=1e20)  # fmt: skip
    p3 = dict.fromkeys(PARTS)
    return [
        dict(row__id=dict(writeid=1, bucketid=536870912, rowid=0), i8=-3, i16=300, i=5, l=2**40, f=1.5,
             d=float("nan"), s="x" * 40, b=b"ab", bo=True, dt=datetime.date(2020, 1, 2),
             ts=ts(2020, 1, 2, 3, 4, 5, 123456), dec=decimal.Decimal("-12.34"), dec0=decimal.Decimal(-5), lst=[1, 2],
             m=[("k", 1)], st=dict(a=1, t=ts(2021, 1, 1)), **p1),
        dict(row__id=dict(writeid=2, bucketid=536870912, rowid=1), i8=None, i16=None, i=None, l=None, f=None,
             d=2.0, s="ä", b=None, bo=None, dt=None, ts=ts(1969, 12, 31, 23, 59, 59, 999999), dec=None, dec0=None,
             lst=None, m=None, st=None, **p1),
        dict(row__id=dict(writeid=3, bucketid=1, rowid=1), i8=1, i16=1, i=1, l=1, f=1, d=1, s="", b=b"", bo=False,
             dt=datetime.date(1, 1, 1), ts=ts(2020, 1, 1, 0, 0, 0, 999), dec=decimal.Decimal("0"),
             dec0=decimal.Decimal(12345), lst=[], m=[], st=dict(a=None, t=None), **p2),
        dict(row__id=dict(writeid=4, bucketid=1, rowid=2), i8=None, i16=None, i=None, l=None, f=None, d=None,
             s=None, b=None, bo=None, dt=None, ts=None, dec=None, dec0=None, lst=None, m=None, st=None, **p3),
    ]  # fmt: skip


def _without_float_bounds(stats: dict) -> dict:
    for k in ("minValues", "maxValues"):
        for name in FLOATS:
            stats[k].pop(name, None)
    return stats


@pytest.mark.parametrize("tz", [None, "UTC"])
def test_directories_partition_values_and_stats_match_deltalake(tmp_path: Path, tz):
    schema = _schema(tz)
    rows = _rows(tz)
    table = pa.Table.from_pylist(rows, schema=schema)
    write_deltalake(str(tmp_path / "d"), table, partition_by=PARTS)
    log = (tmp_path / "d" / "_delta_log" / "00000000000000000000.json").read_text().splitlines()
    adds = [json.loads(line)["add"] for line in log if '"add"' in line[:8]]
    assert len(adds) == 3
    file_schema = pa.schema([f for f in schema if f.name not in PARTS])
    for add in adds:
        on_disk = urllib.parse.unquote(add["path"])
        directory = on_disk.rsplit("/", 1)[0]
        group = [r for r in rows if partition_directory(r, PARTS, schema) == directory]
        assert group, f"no rows give deltalake's directory {directory}"
        values = {c: group[0][c] for c in PARTS}
        assert {c: partition_string(values[c], schema.field(c).type) for c in PARTS} == add["partitionValues"]
        # deltalake's own file, and a pyarrow-written one of the same rows: the same statistics
        ours = pa.Table.from_pylist(group, schema=schema).select(file_schema.names).cast(file_schema)
        pq.write_table(ours, tmp_path / "ours.parquet", compression="snappy")
        want = _without_float_bounds(json.loads(add["stats"]))
        for path in (tmp_path / "d" / on_disk, tmp_path / "ours.parquet"):
            got = json.loads(file_stats(pq.ParquetFile(path).metadata, file_schema))
            assert got == want, path


def test_protocol_formats_deltalake_cannot_write():
    # PROTOCOL.md "Partition Value Serialization": the string representation of the number
    assert partition_string(decimal.Decimal("-1.5"), pa.decimal128(5, 2)) == "-1.50"
    assert partition_string(decimal.Decimal("-0.05"), pa.decimal128(5, 2)) == "-0.05"
    assert partition_string(None, pa.string()) is None
    assert partition_directory(
        {"p": None, "q": "a/b"}, ["p", "q"], pa.schema([("p", pa.int32()), ("q", pa.string())])
    ) == ("p=__HIVE_DEFAULT_PARTITION__/q=a%2Fb")


def test_stats_leave_out_what_could_mislead_a_reader(tmp_path: Path):
    wide = pa.decimal128(20, 2)  # more digits than a double holds
    schema = pa.schema([("d", wide), ("s", pa.string()), ("x", pa.float64())])
    t = pa.table(
        {
            "d": pa.array([decimal.Decimal("123456789012345678.91")], wide),
            "s": ["y" * 5000],  # over pyarrow's 4 KiB statistics limit: no bounds at all
            "x": [float("nan")],
        },
        schema=schema,
    )
    pq.write_table(t, tmp_path / "w.parquet")
    got = json.loads(file_stats(pq.ParquetFile(tmp_path / "w.parquet").metadata, schema))
    assert got == {"numRecords": 1, "minValues": {}, "maxValues": {}, "nullCount": {"d": 0, "s": 0, "x": 0}}


def test_spark_files_refused_where_deltalake_must_write_or_check_them(tmp_path: Path):
    from deltalake import DeltaTable

    from acidctl.errors import RefusedError
    from acidctl.migrate.delta import DeltaBackend

    path = str(tmp_path / "c")
    write_deltalake(path, pa.table({"x": [1]}))
    DeltaTable(path).alter.add_constraint({"pos": "x > 0"})  # a neutral commit for catch-ups
    with pytest.raises(RefusedError, match="CHECK constraint pos") as e:
        DeltaBackend(path).spark_target()
    assert e.value.hint == "run migrate without --engine spark"
