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


class AcidFileWriter:
    """Streaming variant of :func:`write_acid_file`: ``write(table)`` per batch (key order
    checked across batches), ``close()`` adds the ACID user metadata, moves the file to
    ``path`` through ``tfs`` and returns a :class:`WrittenFile`. Data goes to a local temporary
    file (in the destination directory for local tables), never to memory; the key index is
    computed after the data is written from the footer's stripe row counts and the last row of
    each stripe's key columns, read back one stripe at a time. Arrow-writable types only (the
    pyorc path for char/varchar/union stays in :func:`encode_acid_file`).

    Use as a context manager: leaving the block by an exception removes the temporary file.
    Nothing is created until the first non-empty batch; ``close()`` returns None when no row
    was written."""

    def __init__(self, tfs, path: str, *, compression: str = "ZLIB", stripe_size: int = BASE_STRIPE_SIZE,
                 allow_zstd: bool = False, verify_kind: str | None = None,
                 verify_range: tuple[int, int] | None = None, verify_file: bool = True):
        compression = compression.upper()
        if compression not in COMPRESSIONS:
            raise InvalidInputError(f"unsupported compression {compression}; use NONE, ZLIB, SNAPPY or LZ4")
        if compression == "ZSTD" and not allow_zstd:
            raise InvalidInputError("ZSTD output cannot be read by Hive 3.1 (ORC 1.5); pass allow_zstd to force it")
        self.tfs = tfs
        self.path = path
        self.compression = compression
        self.stripe_size = stripe_size
        self.verify_kind = verify_kind
        self.verify_range = verify_range
        self.verify_file = verify_file
        self.rows = 0
        self.stats = [0, 0, 0]
        self.schema = None
        self._last = None          # (ot, bk, rid) of the last written event
        self._tmp = None
        self._sink = None
        self._writer = None

    # -- writing ---------------------------------------------------------------------------
    def _open(self, schema: pa.Schema) -> None:
        import os
        import tempfile

        import pyarrow.orc as po

        local = self.tfs.protocol in ("file", "local")
        d = os.path.dirname(self.path) if local else None
        if d:
            os.makedirs(d, exist_ok=True)
        fd, self._tmp = tempfile.mkstemp(prefix="." + os.path.basename(self.path) + ".", suffix=".tmp", dir=d)
        self._sink = os.fdopen(fd, "wb")
        self._writer = po.ORCWriter(self._sink, compression=COMPRESSIONS[self.compression],
                                    stripe_size=self.stripe_size, file_version="0.12",
                                    compression_block_size=256 * 1024, row_index_stride=10000)
        self.schema = schema

    def write(self, table) -> None:
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        if list(table.column_names) != list(ACID_NAMES):
            raise InvalidInputError(f"ACID data must have the columns {ACID_NAMES}, got {table.column_names}")
        if not table.num_rows:
            return
        if self.schema is None:
            row_type = table.schema.field("row").type
            bad = [f.name for f in row_type if f.name != f.name.lower()]
            if bad:
                raise InvalidInputError(f"row field names must be lower-case Hive column names: {bad}")
            self._open(table.schema.remove_metadata())
        elif not table.schema.remove_metadata().equals(self.schema):
            raise InvalidInputError(f"batch schema {table.schema} differs from the file's {self.schema}")
        op = table.column("operation").to_numpy()
        ot = table.column("originalTransaction").to_numpy()
        bk = table.column("bucket").to_numpy().astype(np.int64)
        rid = table.column("rowId").to_numpy()
        if self._last is not None:
            ot = np.concatenate([[self._last[0]], ot])
            bk = np.concatenate([[self._last[1]], bk])
            rid = np.concatenate([[self._last[2]], rid])
        at = check_sorted(ot, bk, rid)
        if at is not None:
            row = self.rows + at - (1 if self._last is not None else 0)
            raise InvalidInputError(f"events not strictly increasing by (originalTransaction, bucket, rowId) at "
                                    f"row {row}: {ot[at - 1]},{bk[at - 1]},{rid[at - 1]} then "
                                    f"{ot[at]},{bk[at]},{rid[at]}")
        self._last = (int(ot[-1]), int(bk[-1]), int(rid[-1]))
        s = _stats(op)
        self.stats = [a + b for a, b in zip(self.stats, s)]
        self._writer.write(table.replace_schema_metadata(None))
        self.rows += table.num_rows

    # -- finishing -------------------------------------------------------------------------
    def close(self) -> WrittenFile | None:
        """Finish the file, move it to ``path`` and verify it; None when nothing was written."""
        import os
        import shutil

        if self._writer is None:
            return None
        self._writer.close()
        self._sink.close()
        self._writer = None
        stripe_rows = orcfooter.read_tail_file(self._tmp).stripe_rows()
        key_index = self._key_index(stripe_rows)
        stats = tuple(self.stats)
        orcfooter.add_user_metadata_file(self._tmp, [
            (KEY_INDEX, key_index.encode()),
            (ACID_STATS, ("%d,%d,%d" % stats).encode()),
            (ACID_VERSION, b"2"),
        ])
        size = os.path.getsize(self._tmp)
        if self.tfs.protocol in ("file", "local"):
            shutil.move(self._tmp, self.path)
        else:
            self.tfs.makedirs(self.path.rsplit("/", 1)[0])
            self.tfs.fs.put_file(self._tmp, self.path)
            os.unlink(self._tmp)
        self._tmp = None
        if self.verify_file:
            verify(self.tfs, self.path, expected_rows=self.rows, dir_kind=self.verify_kind,
                   dir_range=self.verify_range)
        return WrittenFile(path=self.tfs.display(self.path), rows=self.rows, bytes=size,
                           stripes=len(stripe_rows), key_index=key_index, stats=stats)

    def _key_index(self, stripe_rows: list[int]) -> str:
        """The key at each stripe's last row, from the key columns read back in batches."""
        import pyarrow.dataset as ds

        ends = []
        end = 0
        for n in stripe_rows:
            end += n
            if n:
                ends.append(end - 1)
        out = []
        pos = 0
        j = 0
        with open(self._tmp, "rb") as f:
            frag = ds.OrcFileFormat().make_fragment(f)
            for b in frag.to_batches(columns=["originalTransaction", "bucket", "rowId"], batch_size=65536,
                                     use_threads=False):
                while j < len(ends) and ends[j] < pos + b.num_rows:
                    i = ends[j] - pos
                    out.append("%d,%d,%d;" % (b.column(0)[i].as_py(), b.column(1)[i].as_py(), b.column(2)[i].as_py()))
                    j += 1
                pos += b.num_rows
        if j != len(ends):
            from acidctl.errors import WriteVerificationFailed

            raise WriteVerificationFailed(f"written file {self.path}: {pos} rows read back, stripes say {end}")
        return "".join(out)

    def abort(self) -> None:
        """Drop the temporary file (nothing reaches ``path``)."""
        import os

        try:
            if self._writer is not None:
                self._writer.close()
        except Exception:
            pass
        try:
            if self._sink is not None:
                self._sink.close()
        except Exception:
            pass
        self._writer = None
        if self._tmp is not None:
            try:
                os.unlink(self._tmp)
            except OSError:
                pass
            self._tmp = None

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is not None or self._tmp is not None and self._writer is not None:
            self.abort()
        return False


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
