"""Insert-only tables laid out the way Hive writes them (insert-only-and-hive2.md A.4):
``delta_W_W_SSSS/000000_0`` (+ ``_copy_N``), INSERT OVERWRITE ``base_W/``, ``HIVE_UNION_SUBDIR_n/``
below a delta, no ``_orc_acid_version``.

Data files are written here independently of acidctl's writers: ORC and Parquet with pyarrow,
Avro with fastavro and a hand-written nullable-union schema, text as literal bytes following
LazySimpleSerDe's documented rules (0x01 fields, 0x02 items, 0x03 map keys, ``\\N`` NULL).
"""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa

#: the test table: id int, name string, amount decimal(10,2), tags array<string>
COLUMNS = [("id", "int"), ("name", "string"), ("amount", "decimal(10,2)"), ("tags", "array<string>")]
COLUMNS_SPEC = ",".join(f"{n}:{t}" for n, t in COLUMNS)
ARROW = pa.schema(
    [("id", pa.int32()), ("name", pa.string()), ("amount", pa.decimal128(10, 2)), ("tags", pa.list_(pa.string()))]
)
AVRO_SCHEMA = {
    "type": "record",
    "name": "t",
    "fields": [
        {"name": "id", "type": ["null", "int"], "default": None},
        {"name": "name", "type": ["null", "string"], "default": None},
        {
            "name": "amount",
            "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}],
            "default": None,
        },
        {"name": "tags", "type": ["null", {"type": "array", "items": ["null", "string"]}], "default": None},
    ],
}


def _text_field(v, kind) -> bytes:
    if v is None:
        return b"\\N"
    if kind == "array":
        return b"\x02".join(b"\\N" if x is None else x.encode() for x in v)
    if kind == "decimal":
        return f"{v:.2f}".encode()  # LazyHiveDecimal pads to the column's scale
    return str(v).encode()


def encode(fmt: str, rows: list[dict], *, codec: str | None = None) -> bytes:
    """One data file of ``rows`` (dicts of the test columns) in ``fmt``."""
    from decimal import Decimal

    if fmt == "text":
        kinds = ["int", "string", "decimal", "array"]
        out = b""
        for r in rows:
            out += b"\x01".join(_text_field(r[n], k) for (n, _), k in zip(COLUMNS, kinds)) + b"\n"
        return out
    t = pa.Table.from_pylist(
        [{**r, "amount": None if r["amount"] is None else Decimal(str(r["amount"]))} for r in rows], schema=ARROW
    )
    sink = pa.BufferOutputStream()
    if fmt == "orc":
        import pyarrow.orc as po

        po.write_table(t, sink, compression=codec or "zlib")
        return sink.getvalue().to_pybytes()
    if fmt == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(t, sink, compression=codec or "none")
        return sink.getvalue().to_pybytes()
    if fmt == "avro":
        import fastavro

        buf = io.BytesIO()
        fastavro.writer(
            buf,
            fastavro.parse_schema(AVRO_SCHEMA),
            [
                {**r, "amount": None if r["amount"] is None else Decimal(str(r["amount"])).quantize(Decimal("0.01"))}
                for r in rows
            ],
            codec=codec or "null",
        )
        return buf.getvalue()
    raise ValueError(fmt)


def row(i: int, name: str | None = None, amount=None, tags=None) -> dict:
    return {"id": i, "name": name if name is not None else f"n{i}", "amount": amount, "tags": tags}


def build(root: Path, fmt: str, layout: dict[str, dict[str, list[dict]]], *, codec: str | None = None) -> Path:
    """``layout``: directory (relative to ``root``, e.g. ``delta_0000001_0000001_0000``) → file
    name → rows. Returns ``root``."""
    for d, files in layout.items():
        dd = root / d
        dd.mkdir(parents=True, exist_ok=True)
        for name, rows in files.items():
            p = dd / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(encode(fmt, rows, codec=codec))
    return root


def standard(root: Path, fmt: str) -> tuple[Path, str, list[int]]:
    """A table with a base from INSERT OVERWRITE (write 1), committed deltas 2 (two statements,
    a _copy_1 file, a UNION ALL subdirectory), aborted write 3, committed 4, open write 5.
    Returns (root, ValidWriteIdList, the ids a reader sees)."""
    build(
        root,
        fmt,
        {
            "base_0000001": {"000000_0": [row(1, amount=1.5, tags=["a", "b"]), row(2, name="two")]},
            "delta_0000002_0000002_0000": {
                "000000_0": [row(3, tags=[]), row(4, amount=-2.25)],
                "000000_0_copy_1": [row(5, tags=[None, "x"])],
            },
            "delta_0000002_0000002_0001": {
                "000000_0": [row(6)],
                "HIVE_UNION_SUBDIR_1/000000_0": [row(7)],
                "HIVE_UNION_SUBDIR_2/000000_0": [row(8, name=None)],
            },
            "delta_0000003_0000003_0000": {"000000_0": [row(900, name="aborted")]},
            "delta_0000004_0000004_0000": {"000000_0": [row(9), row(10)]},
            "delta_0000005_0000005_0000": {"000000_0": [row(500, name="open")]},
        },
    )
    return root, "default.t:5:5:5:3", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]


def compact(
    cli, root: Path, fmt: str, wl: str, *extra, mode: str = "--major", columns: str | None = COLUMNS_SPEC
) -> dict:
    """``acidctl -o json compact MODE --engine local ROOT --format FMT [--columns COLUMNS]
    --write-ids WL EXTRA...`` on an insert-only table laid out here; it must exit 0: its report."""
    import json

    cols = ["--columns", columns] if columns else []
    r = cli("-o", "json", "compact", mode, "--engine", "local", root, "--format", fmt, *cols, "--write-ids", wl, *extra)
    assert r.code == 0, r
    return json.loads(r.stdout)
