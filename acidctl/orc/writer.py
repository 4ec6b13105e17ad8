"""The one ACID ORC writer: files that Hive 3/4, Trino and Spark accept.

Rules (../shared/spec/orc-acid-files.md §14): the six ACID fields with Hive's names and types,
``row`` fields named by the lower-case Hive column names; events strictly increasing by
(originalTransaction, bucket, rowId); ZLIB by default; user metadata ``hive.acid.key.index``
(one ``owid,bucket,rowId;`` entry per stripe: the stripe's last key), ``hive.acid.stats``
(exact inserts,updates,deletes) and ``hive.acid.version=2``.

How: data is written by pyarrow's ORC writer (ORC C++, straight from Arrow buffers; bench/dump.py
measures it against pyorc's row-at-a-time writer), then the key index, computed from the stripe
row counts of the written footer, is added by rewriting only the file tail
(:mod:`acidctl.orc.footer`). Types Arrow cannot express in ORC terms (char(n), varchar(n),
uniontype, timestamps outside 1677..2262) go through pyorc row by row, with the same tail
rewrite. Every file is read back and verified before it is returned (:func:`verify`).
"""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acidctl.errors import InvalidInputError
from acidctl.orc import footer as orcfooter

ACID_NAMES = ("operation", "originalTransaction", "bucket", "rowId", "currentTransaction", "row")
ACID_TYPES = (pa.int32(), pa.int64(), pa.int32(), pa.int64(), pa.int64())
KEY_INDEX = "hive.acid.key.index"
ACID_STATS = "hive.acid.stats"
ACID_VERSION = "hive.acid.version"
COMPRESSIONS = {"NONE": "uncompressed", "ZLIB": "zlib", "SNAPPY": "snappy", "LZ4": "lz4", "ZSTD": "zstd"}

# Hive's writer settings (orc-acid-files.md §11.2): 64 MiB stripes for bases, 8 MiB for deltas
BASE_STRIPE_SIZE = 64 << 20
DELTA_STRIPE_SIZE = 8 << 20


@dataclasses.dataclass(frozen=True)
class WrittenFile:
    path: str
    rows: int
    bytes: int
    stripes: int
    key_index: str
    stats: tuple[int, int, int]

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def acid_arrow_schema(row_type: pa.StructType) -> pa.Schema:
    return pa.schema([pa.field(n, t) for n, t in zip(ACID_NAMES, ACID_TYPES)] + [pa.field("row", row_type)])


def key_index_for(ot: np.ndarray, bk: np.ndarray, rid: np.ndarray, stripe_rows: list[int]) -> str:
    out = []
    end = 0
    for n in stripe_rows:
        end += n
        if n:
            out.append("%d,%d,%d;" % (ot[end - 1], bk[end - 1], rid[end - 1]))
    return "".join(out)


def check_sorted(ot: np.ndarray, bk: np.ndarray, rid: np.ndarray) -> int | None:
    """Index of the first event not strictly greater than its predecessor, or None."""
    if len(ot) < 2:
        return None
    inc = (ot[1:] > ot[:-1]) | ((ot[1:] == ot[:-1]) & ((bk[1:] > bk[:-1]) | ((bk[1:] == bk[:-1]) & (rid[1:] > rid[:-1]))))
    if inc.all():
        return None
    return int(np.argmin(inc)) + 1


def _stats(op: np.ndarray) -> tuple[int, int, int]:
    return int((op == 0).sum()), int((op == 1).sum()), int((op == 2).sum())


def _needs_pyorc(orc_type: str | None, table: pa.Table) -> bool:
    if orc_type is None:
        return False
    t = orc_type.replace(" ", "")
    return any(k in t for k in ("char(", "varchar(", "uniontype<", "timestampwithlocaltimezone"))


def encode_acid_file(table: pa.Table, *, orc_type: str | None = None, compression: str = "ZLIB",
                     stripe_size: int = BASE_STRIPE_SIZE, allow_zstd: bool = False) -> tuple[bytes, WrittenFile]:
    """ORC bytes for an ACID table (six columns, sorted). ``orc_type`` is the exact ORC type
    string to write (keeps char/varchar/union); default: derived from the Arrow types."""
    if list(table.column_names) != list(ACID_NAMES):
        raise InvalidInputError(f"ACID data must have the columns {ACID_NAMES}, got {table.column_names}")
    compression = compression.upper()
    if compression not in COMPRESSIONS:
        raise InvalidInputError(f"unsupported compression {compression}; use NONE, ZLIB, SNAPPY or LZ4")
    if compression == "ZSTD" and not allow_zstd:
        raise InvalidInputError("ZSTD output cannot be read by Hive 3.1 (ORC 1.5); pass allow_zstd to force it")
    row_type = table.schema.field("row").type
    bad = [f.name for f in row_type if f.name != f.name.lower()]
    if bad:
        raise InvalidInputError(f"row field names must be lower-case Hive column names: {bad}")
    op = table.column("operation").to_numpy()
    ot = table.column("originalTransaction").to_numpy()
    bk = table.column("bucket").to_numpy().astype(np.int64)
    rid = table.column("rowId").to_numpy()
    at = check_sorted(ot, bk, rid)
    if at is not None:
        raise InvalidInputError(f"events not strictly increasing by (originalTransaction, bucket, rowId) at "
                                f"row {at}: {ot[at - 1]},{bk[at - 1]},{rid[at - 1]} then {ot[at]},{bk[at]},{rid[at]}")
    stats = _stats(op)
    if _needs_pyorc(orc_type, table):
        data = _write_pyorc(table, orc_type, compression, stripe_size)
    else:
        data = _write_arrow(table, compression, stripe_size)
    tail = orcfooter.read_tail(data)
    stripe_rows = tail.stripe_rows()
    key_index = key_index_for(ot, bk, rid, stripe_rows)
    data = orcfooter.add_user_metadata(data, [
        (KEY_INDEX, key_index.encode()),
        (ACID_STATS, ("%d,%d,%d" % stats).encode()),
        (ACID_VERSION, b"2"),
    ])
    return data, WrittenFile(path="", rows=table.num_rows, bytes=len(data), stripes=len(stripe_rows),
                             key_index=key_index, stats=stats)


def _write_arrow(table: pa.Table, compression: str, stripe_size: int) -> bytes:
    import pyarrow.orc as po

    sink = pa.BufferOutputStream()
    po.write_table(table, sink, compression=COMPRESSIONS[compression], stripe_size=stripe_size,
                   file_version="0.12", compression_block_size=256 * 1024,
                   row_index_stride=10000)
    return sink.getvalue().to_pybytes()


def _write_pyorc(table: pa.Table, orc_type: str, compression: str, stripe_size: int) -> bytes:
    import pyorc

    from acidctl.orc.render import python_converters

    buf = io.BytesIO()
    kind = getattr(pyorc.CompressionKind, compression)
    with pyorc.Writer(buf, orc_type, compression=kind, stripe_size=stripe_size,
                      converters=python_converters()) as w:
        for batch in table.to_batches(max_chunksize=65536):
            cols = [_pyorc_values(batch.column(i)) for i in range(batch.num_columns)]
            w.writerows(zip(*cols))
    return buf.getvalue()


def _pyorc_values(arr: pa.Array) -> list:
    """Arrow → the Python values pyorc expects (structs as tuples, timestamps as (s, ns),
    dates as day numbers)."""
    t = arr.type
    if pa.types.is_struct(t):
        kids = [_pyorc_values(arr.field(i)) for i in range(t.num_fields)]
        valid = arr.is_valid().to_pylist()
        return [tuple(k[i] for k in kids) if valid[i] else None for i in range(len(arr))]
    if pa.types.is_timestamp(t):
        ns = pc.cast(arr.cast(pa.timestamp("ns", tz=t.tz)), pa.int64()).to_pylist()
        return [None if v is None else (v // 1_000_000_000, v % 1_000_000_000) for v in ns]
    if pa.types.is_date32(t):
        return pc.cast(arr, pa.int32()).to_pylist()
    if pa.types.is_list(t):
        vals = _pyorc_values(arr.values)
        offs = arr.offsets.to_pylist()
        valid = arr.is_valid().to_pylist()
        return [vals[offs[i]:offs[i + 1]] if valid[i] else None for i in range(len(arr))]
    if pa.types.is_map(t):
        keys, items = _pyorc_values(arr.keys), _pyorc_values(arr.items)
        offs = arr.offsets.to_pylist()
        valid = arr.is_valid().to_pylist()
        return [dict(zip(keys[offs[i]:offs[i + 1]], items[offs[i]:offs[i + 1]])) if valid[i] else None
                for i in range(len(arr))]
    return arr.to_pylist()


def write_acid_file(tfs, path: str, table: pa.Table, **kw) -> WrittenFile:
    """Encode, write and verify one ACID file at ``path`` (on any fsspec filesystem)."""
    data, info = encode_acid_file(table, **kw)
    tfs.write_bytes(path, data)
    verify(tfs, path, expected_rows=info.rows)
    return dataclasses.replace(info, path=tfs.display(path))


def verify(tfs, path: str, *, expected_rows: int | None = None, dir_kind: str | None = None,
           dir_range: tuple[int, int] | None = None) -> None:
    """Read the written file back and run every ACID file check; raise on any error."""
    from acidctl.errors import WriteVerificationFailed
    from acidctl.orc.meta import inspect_file

    report = inspect_file(tfs, path, statistics=False, dir_kind=dir_kind, dir_range=dir_range,
                          expect_acid=True)
    errors = [f for f in report.findings if f.severity.value == "error"]
    if errors:
        raise WriteVerificationFailed(f"written file {report.path} fails {errors[0].check}: {errors[0].message}")
    if expected_rows is not None and report.rows != expected_rows:
        raise WriteVerificationFailed(f"written file {report.path} has {report.rows} rows, expected {expected_rows}")
