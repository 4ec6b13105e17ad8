"""partition_digests: the same rows give the same digest whatever the batch split, row order,
column order and Arrow spelling (ORC's vs Parquet-through-Iceberg's types); any changed value,
lost or duplicated row changes it; Hive's partition names for typed values."""

from __future__ import annotations

import datetime
import decimal
import random

import pyarrow as pa

from acidctl.migrate.digest import partition_digests, partition_name

RID = pa.struct([("writeid", pa.int64()), ("bucketid", pa.int32()), ("rowid", pa.int64())])


def _rows(n=300):
    rng = random.Random(3)
    out = []
    for i in range(n):
        out.append(
            {
                "row__id": {"writeid": i % 7, "bucketid": 536870912, "rowid": i},
                "s": rng.choice(["a", "bb", None, "", "ü" * 40]),
                "d": decimal.Decimal("1.25") * i,
                "ts": datetime.datetime(2024, 1, 1, 0, 0, i % 60, 123456),
                "l": [i, i + 1] if i % 3 else ([] if i % 2 else None),
                "m": {"k": i} if i % 2 else {},
                "st": {"a": i, "b": "x"} if i % 5 else None,
                "dt": datetime.date(2024, 1, 1 + i % 20),
                "f": float(i) / 3,
                "bin": bytes([i % 256]) * (i % 4),
                "ds": rng.choice(["x", "y", None]),
            }
        )
    return out


HIVE = pa.schema(
    [
        ("row__id", RID),
        ("s", pa.string()),
        ("d", pa.decimal128(10, 2)),
        ("ts", pa.timestamp("ns")),
        ("l", pa.list_(pa.int64())),
        ("m", pa.map_(pa.string(), pa.int64())),
        ("st", pa.struct([("a", pa.int32()), ("b", pa.string())])),
        ("dt", pa.date32()),
        ("f", pa.float32()),
        ("bin", pa.binary()),
        ("ds", pa.string()),
    ]
)
# as pyiceberg reads Parquet back: large types, list field "element", another column order
ICEBERG = pa.schema(
    [
        ("ds", pa.large_string()),
        ("row__id", RID),
        ("s", pa.large_string()),
        ("d", pa.decimal128(10, 2)),
        ("ts", pa.timestamp("us")),
        ("l", pa.large_list(pa.field("element", pa.int64()))),
        ("m", pa.map_(pa.large_string(), pa.int64())),
        ("st", pa.struct([("b", pa.large_string()), ("a", pa.int32())])),
        ("dt", pa.date32()),
        ("f", pa.float32()),
        ("bin", pa.large_binary()),
    ]
)


def test_same_rows_same_digest_whatever_the_split_order_and_types():
    rows = _rows()
    a = partition_digests(pa.Table.from_pylist(rows, schema=HIVE).to_batches(max_chunksize=17), ["ds"])
    back = pa.Table.from_pylist(list(reversed(rows)), schema=ICEBERG)
    b = partition_digests(back.slice(5).to_batches(max_chunksize=33) + back.slice(0, 5).to_batches(), ["ds"])
    assert a == b
    assert sorted(a) == ["ds=__HIVE_DEFAULT_PARTITION__", "ds=x", "ds=y"]
    assert sum(n for n, _ in a.values()) == len(rows)


def test_any_change_changes_the_digest():
    rows = _rows()
    base = partition_digests([pa.Table.from_pylist(rows, schema=HIVE)], [])
    for change in (
        lambda r: r[10].update(s="changed"),
        lambda r: r[11]["row__id"].update(rowid=99999),
        lambda r: r[12].update(l=[12, 14]),
        lambda r: r.pop(13),
        lambda r: r.append(dict(r[0])),
        lambda r: r[14].update(ts=datetime.datetime(2024, 1, 1, 0, 0, 14, 123457)),
        lambda r: r[15].update(bin=b"\x00\x00\x00"),
    ):
        other = [dict(x, row__id=dict(x["row__id"])) for x in rows]
        change(other)
        assert partition_digests([pa.Table.from_pylist(other, schema=HIVE)], []) != base


def test_partition_names_follow_hive():
    assert partition_name({"ds": datetime.date(2024, 1, 2), "h": 3}) == "ds=2024-01-02/h=3"
    assert partition_name({"p": None}) == "p=__HIVE_DEFAULT_PARTITION__"
    assert partition_name({"p": ""}) == "p=__HIVE_DEFAULT_PARTITION__"
    assert partition_name({"p": "a/b:c"}) == "p=a%2Fb%3Ac"
    assert partition_name({"b": True}) == "b=true"


def test_string_digest_is_one_function_of_the_bytes_whatever_the_batch():
    """Strings are hashed a word at a time for all values at once, and the few long values
    left are finished one by one: every split (one long value alone, among short ones, in a
    slice at any offset) must give the same digest, and a change in any byte of a long value
    (its last word included) must change it."""
    rng = random.Random(11)
    values = []
    for i in range(400):
        n = rng.choice([0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65]) if i % 50 else rng.randint(300, 5000)
        values.append("".join(rng.choice('abcü"\\\n') for _ in range(n)))
    values[5] = None
    schema = pa.schema([("s", pa.string()), ("b", pa.large_binary())])

    def table(vals):
        return pa.Table.from_pylist(
            [{"s": v, "b": None if v is None else v.encode()[::-1]} for v in vals], schema=schema
        )

    whole = partition_digests([table(values)], [])
    for size in (1, 7, 33, 128):
        assert partition_digests(table(values).to_batches(max_chunksize=size), []) == whole
    back = table(list(reversed(values))).cast(pa.schema([("s", pa.large_string()), ("b", pa.binary())]))
    assert partition_digests([back.slice(3), back.slice(0, 3)], []) == whole
    for pos in (0, 8, -1):
        other = list(values)
        long = next(i for i, v in enumerate(other) if v and len(v) > 300)
        chars = list(other[long])
        chars[pos] = "Z" if chars[pos] != "Z" else "Y"
        other[long] = "".join(chars)
        assert partition_digests([table(other)], []) != whole
