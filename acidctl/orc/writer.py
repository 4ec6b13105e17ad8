"""The one ACID ORC writer: files that Hive 3/4, Trino and Spark accept.

Rules (../shared/spec/orc-acid-files.md §14): the six ACID fields with Hive's names and types,
``row`` fields named by the lower-case Hive column names; events strictly increasing by
(originalTransaction, bucket, rowId); ZLIB by default; user metadata ``hive.acid.key.index``
(one ``owid,bucket,rowId;`` entry per stripe: the stripe's last key), ``hive.acid.stats``
(exact inserts,updates,deletes) and ``hive.acid.version=2``.

How: data is written by pyarrow's ORC writer (ORC C++, straight from Arrow buffers; bench/dump.py
measures it against pyorc's row-at-a-time writer), then the key index, computed from the stripe
row counts of the written footer, is added by rewriting only the file tail
(:mod:`acidctl.orc.footer`). Arrow has no char(n)/varchar(n), so pyarrow writes such columns as
string; given ``orc_type`` (the exact ORC type to write, e.g. the compaction input's), the same
tail rewrite sets those columns' types to char(n)/varchar(n): the column data is encoded the same
way for all three kinds, so values are written byte for byte as given (char values as read from
ORC, i.e. padded). Any other difference from ``orc_type`` is refused. The rest of ORC's types
Arrow writes itself: uniontype (sparse unions), ``timestamp with local time zone`` (timestamps
with a time zone), timestamps outside 1677..2262 (in a unit coarser than ns). One exception goes
through pyorc row by row, with the same tail rewrite: a struct column with null values holding
a uniontype (the null ``row`` of delete events of a table with a uniontype column), on which
pyarrow's ORC writer aborts the process (:func:`_arrow_cannot_write`). Every file is read back
and verified before it is returned (:func:`verify`).
"""

from __future__ import annotations

import dataclasses
import io
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acidctl.errors import InvalidInputError
from acidctl.orc import footer as orcfooter
from acidctl.orc.acidfile import (
    ACID_NAMES,
    ACID_STATS,
    KEY_INDEX,
    KeyOrder,
    acid_user_metadata,
    check_sorted,
    encode_key_index,
    event_stats,
    format_acid_stats,
)

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


def template_types(orc_type: str | None) -> list | None:
    """The parsed ``orc_type`` (:func:`acidctl.orc.footer.parse_type_string`), None for None;
    it must describe an ACID file."""
    if orc_type is None:
        return None
    types = orcfooter.parse_type_string(orc_type)
    if types[0].kind != orcfooter.STRUCT or len(types[0].subtypes) != len(ACID_NAMES):
        raise InvalidInputError(f"not an ACID file type (six fields, the last one the row): {orc_type}")
    return types


def check_lengths(table: pa.Table, types: list | None) -> None:
    """Every value of a char(n)/varchar(n) column of ``types`` has at most n characters.

    Why: the written column keeps the values as given, and a longer value would be a file that
    ORC's readers silently truncate (Hive's char/varchar semantics) — a changed row. Columns
    whose Arrow type does not fit the template are skipped here; the footer retype refuses them."""
    if types is None or not any(t.kind in (orcfooter.CHAR, orcfooter.VARCHAR) for t in types):
        return
    names = orcfooter.column_names(types)
    for col, i in zip(table.columns, types[0].subtypes):
        for chunk in col.chunks:
            for c, longest in _long_values(chunk, types, i):
                raise InvalidInputError(
                    f"column {names[c]} holds a value of {longest} characters, more than "
                    f"its type {orcfooter.type_string(types, c)} allows"
                )


def _long_values(arr: pa.Array, types: list, i: int):
    """(column id, length) of each char/varchar column under column ``i`` holding a value
    longer than its maximum length."""
    t = types[i]
    kind = t.kind
    if kind in (orcfooter.CHAR, orcfooter.VARCHAR):
        if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
            longest = pc.max(pc.utf8_length(arr)).as_py()
            if longest is not None and longest > t.maximum_length:
                yield i, longest
        return
    if kind == orcfooter.STRUCT and pa.types.is_struct(arr.type) and arr.type.num_fields == len(t.subtypes):
        # field(), not flatten(): flatten() pushes the struct's nulls into its children and
        # aborts the process on a union child (no validity buffer); values under a null
        # struct are null anyway in data read from ORC
        kids = [arr.field(k) for k in range(arr.type.num_fields)]
    elif kind == orcfooter.LIST and (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        kids = [arr.flatten()]
    elif kind == orcfooter.MAP and pa.types.is_map(arr.type):
        kids = [arr.keys, arr.items]
    elif kind == orcfooter.UNION and pa.types.is_union(arr.type) and arr.type.num_fields == len(t.subtypes):
        kids = [arr.field(k) for k in range(len(t.subtypes))]
    else:
        return
    for kid, c in zip(kids, t.subtypes):
        yield from _long_values(kid, types, c)


def encode_acid_file(
    table: pa.Table,
    *,
    orc_type: str | None = None,
    compression: str = "ZLIB",
    stripe_size: int = BASE_STRIPE_SIZE,
    allow_zstd: bool = False,
) -> tuple[bytes, WrittenFile]:
    """ORC bytes for an ACID table (six columns, sorted), written from Arrow. ``orc_type``: the
    ORC type string to write, for char(n)/varchar(n) (the Arrow string columns it names so are
    retyped; anything else must already match it); default: derived from the Arrow types."""
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
        raise InvalidInputError(
            f"events not strictly increasing by (originalTransaction, bucket, rowId) at "
            f"row {at}: {ot[at - 1]},{bk[at - 1]},{rid[at - 1]} then {ot[at]},{bk[at]},{rid[at]}"
        )
    stats = event_stats(op)
    types = template_types(orc_type)
    check_lengths(table, types)
    why = _arrow_cannot_write(table)
    if why and types is None:
        raise InvalidInputError(f"{why}: pyarrow's ORC writer cannot write it, and pyorc needs orc_type")
    if why:
        assert types is not None  # refused above
        data = _write_pyorc(table, written_type(table, types), compression, stripe_size)
    else:
        data = arrow_orc_bytes(table, compression, stripe_size)
    tail = orcfooter.read_tail(data)
    stripe_rows = tail.stripe_rows()
    key_index = encode_key_index(ot, bk, rid, stripe_rows)
    data = orcfooter.add_user_metadata(data, acid_user_metadata(key_index, stats), orc_type=orc_type)
    return data, WrittenFile(
        path="", rows=table.num_rows, bytes=len(data), stripes=len(stripe_rows), key_index=key_index, stats=stats
    )


def arrow_orc_bytes(table: pa.Table, compression: str, stripe_size: int) -> bytes:
    """``table`` as ORC bytes with the writer settings of Hive's ACID files (ORC 0.12 format,
    256 KiB compression blocks, a row index every 10,000 rows); the tail is rewritten after."""
    import pyarrow.orc as po

    sink = pa.BufferOutputStream()
    po.write_table(
        table,
        sink,
        compression=COMPRESSIONS[compression],
        stripe_size=stripe_size,
        file_version="0.12",
        compression_block_size=256 * 1024,
        row_index_stride=10000,
    )
    return sink.getvalue().to_pybytes()


def _arrow_types(table: pa.Table) -> list:
    """The ORC types pyarrow's writer gives ``table``'s schema (read from the footer of an
    empty file written with it; a sliced table, as ``Schema.empty_table`` fails on unions)."""
    return orcfooter.read_tail(arrow_orc_bytes(table.slice(0, 0), "NONE", BASE_STRIPE_SIZE)).types()


def written_type(table: pa.Table, types: list) -> str:
    """The ORC type string of ``table`` with the template ``types``' char/varchar (field names
    from the data). Raises InvalidInputError when the structures differ."""
    return orcfooter.type_string(orcfooter.retyped(_arrow_types(table), types))


def _arrow_cannot_write(table: pa.Table) -> str | None:
    """Why pyarrow's ORC writer cannot write ``table``, or None.

    pyarrow (checked with 26) aborts the whole process — a failed C++ check, not an exception —
    when a top-level struct column with null values has a union among its struct fields (it
    pushes the struct's nulls into the union, which has no validity buffer). Checked
    conservatively: any union inside such a column."""
    for name, col in zip(table.column_names, table.columns):
        if pa.types.is_struct(col.type) and col.null_count and _has_union(col.type):
            return f"column {name} ({col.type}) has null values and holds a union"
    return None


def _has_union(t: pa.DataType) -> bool:
    if pa.types.is_union(t):
        return True
    if pa.types.is_map(t):
        return _has_union(t.key_type) or _has_union(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_union(t.value_type)
    if pa.types.is_struct(t):
        return any(_has_union(f.type) for f in t)
    return False


def _write_pyorc(table: pa.Table, orc_type: str, compression: str, stripe_size: int) -> bytes:
    """ORC C++ through pyorc, row by row (slow): only for what pyarrow cannot write."""
    import pyorc

    from acidctl.orc.render import python_converters

    buf = io.BytesIO()
    kind = getattr(pyorc.CompressionKind, compression)
    with pyorc.Writer(buf, orc_type, compression=kind, stripe_size=stripe_size, converters=python_converters()) as w:
        for batch in table.to_batches(max_chunksize=65536):
            cols = [_pyorc_values(batch.column(i)) for i in range(batch.num_columns)]
            w.writerows(zip(*cols))
    return buf.getvalue()


def _pyorc_values(arr: pa.Array) -> list:
    """Arrow → the Python values pyorc expects (structs as tuples, timestamps as (s, ns),
    dates as day numbers; union values as they are, pyorc picks the variant)."""
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
        return [vals[offs[i] : offs[i + 1]] if valid[i] else None for i in range(len(arr))]
    if pa.types.is_map(t):
        keys, items = _pyorc_values(arr.keys), _pyorc_values(arr.items)
        offs = arr.offsets.to_pylist()
        valid = arr.is_valid().to_pylist()
        return [
            dict(zip(keys[offs[i] : offs[i + 1]], items[offs[i] : offs[i + 1]])) if valid[i] else None
            for i in range(len(arr))
        ]
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
    each stripe's key columns, read back up to the last stripe but one (the last stripe ends
    with the last event written). ``orc_type`` as for
    :func:`encode_acid_file` (char/varchar set in the same tail rewrite as the metadata).

    Use as a context manager: leaving the block by an exception removes the temporary file.
    Nothing is created until the first non-empty batch; ``close()`` returns None when no row
    was written."""

    def __init__(
        self,
        tfs,
        path: str,
        *,
        orc_type: str | None = None,
        compression: str = "ZLIB",
        stripe_size: int = BASE_STRIPE_SIZE,
        allow_zstd: bool = False,
        verify_kind: str | None = None,
        verify_range: tuple[int, int] | None = None,
        verify_file: bool = True,
        hive2: bool = False,
    ):
        compression = compression.upper()
        if compression not in COMPRESSIONS:
            raise InvalidInputError(f"unsupported compression {compression}; use NONE, ZLIB, SNAPPY or LZ4")
        if compression == "ZSTD" and not allow_zstd:
            raise InvalidInputError("ZSTD output cannot be read by Hive 3.1 (ORC 1.5); pass allow_zstd to force it")
        self.tfs = tfs
        self.path = path
        self.orc_type = orc_type
        self._types = template_types(orc_type)
        self.compression = compression
        self.stripe_size = stripe_size
        self.verify_kind = verify_kind
        self.verify_range = verify_range
        self.verify_file = verify_file and not hive2
        # Hive 2.3 (CompactorMR over ORC 1.3.4): keys need not increase strictly (a minor
        # compaction keeps every version of a row), no hive.acid.version, and the key index
        # lacks the last stripe's entry (insert-only-and-hive2.md B.5.2)
        self.hive2 = hive2
        self.rows = 0
        self.stats = [0, 0, 0]
        self.schema: pa.Schema | None = None
        self._order = KeyOrder()  # strict key order across batches
        self._last_key: tuple[int, int, int] | None = None  # the last event written
        self._tmp: str | None = None
        self._sink: Any = None
        self._writer: Any = None

    # -- writing ---------------------------------------------------------------------------
    def _open(self, schema: pa.Schema) -> None:
        import os

        import pyarrow.orc as po

        from acidctl.fs import local_temp_file

        local = self.tfs.protocol in ("file", "local")
        d = (os.path.dirname(self.tfs.local_path(self.path)) or ".") if local else None
        if d:
            self.tfs.makedirs(d)
        # beside the target (renamed into place, so with a new file's mode and group: a Hive
        # reader running as another user must read it) or, remote, a private local scratch file
        fd, self._tmp = local_temp_file(prefix="." + os.path.basename(self.path) + ".", suffix=".tmp", dir=d)
        self._sink = os.fdopen(fd, "wb")
        self._writer = po.ORCWriter(
            self._sink,
            compression=COMPRESSIONS[self.compression],
            stripe_size=self.stripe_size,
            file_version="0.12",
            compression_block_size=256 * 1024,
            row_index_stride=10000,
        )
        self.schema = schema

    def write(self, table) -> None:
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        if list(table.column_names) != list(ACID_NAMES):
            raise InvalidInputError(f"ACID data must have the columns {ACID_NAMES}, got {table.column_names}")
        if not table.num_rows:
            return
        why = _arrow_cannot_write(table)
        if why:
            raise InvalidInputError(
                f"cannot write {self.tfs.display(self.path)}: {why}, which pyarrow's ORC writer cannot write"
            )
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
        prev = self._order.last
        at = None if self.hive2 else self._order.first_break(ot, bk, rid)
        if at is not None:
            before = (ot[at - 1], bk[at - 1], rid[at - 1]) if at or prev is None else prev
            raise InvalidInputError(
                f"events not strictly increasing by (originalTransaction, bucket, rowId) at "
                f"row {self.rows + at}: {before[0]},{before[1]},{before[2]} then "
                f"{ot[at]},{bk[at]},{rid[at]}"
            )
        check_lengths(table, self._types)
        s = event_stats(op)
        self.stats = [a + b for a, b in zip(self.stats, s)]
        # chunk by chunk: ORC's writer decides stripe boundaries after each batch it is given,
        # and a table of several chunks (a compaction's small deltas grouped into one table,
        # acidctl.compact.sources.coalesced) written at once would be cut into batches across
        # the chunks; written per chunk, the file is byte for byte what writing each chunk
        # alone wrote
        table = table.replace_schema_metadata(None)
        for b in table.to_batches():
            if b.num_rows:
                self._writer.write(pa.Table.from_batches([b]))
        self.rows += table.num_rows
        self._last_key = (int(ot[-1]), int(bk[-1]), int(rid[-1]))

    # -- finishing -------------------------------------------------------------------------
    def close(self) -> WrittenFile | None:
        """Finish the file, move it to ``path`` and verify it; None when nothing was written."""
        import os

        if self._writer is None:
            return None
        tmp = self._tmp
        assert tmp is not None  # created with the writer
        self._writer.close()
        self._sink.close()
        self._writer = None
        stripe_rows = orcfooter.read_tail_file(tmp).stripe_rows()
        key_index = self._key_index(tmp, stripe_rows)
        stats = (self.stats[0], self.stats[1], self.stats[2])
        meta = acid_user_metadata(key_index, stats)
        if self.hive2:
            key_index = "".join(e + ";" for e in key_index.split(";")[:-1][:-1])
            meta = [(KEY_INDEX, key_index.encode()), (ACID_STATS, format_acid_stats(stats).encode())]
        orcfooter.add_user_metadata_file(tmp, meta, orc_type=self.orc_type)
        size = os.path.getsize(tmp)
        self.tfs.put_local(tmp, self.path)
        self._tmp = None
        if self.verify_file:
            verify(self.tfs, self.path, expected_rows=self.rows, dir_kind=self.verify_kind, dir_range=self.verify_range)
        return WrittenFile(
            path=self.tfs.display(self.path),
            rows=self.rows,
            bytes=size,
            stripes=len(stripe_rows),
            key_index=key_index,
            stats=stats,
        )

    def _key_index(self, tmp: str, stripe_rows: list[int]) -> str:
        """The key at each stripe's last row. The last stripe ends with the last event written
        (known here); the earlier stripes' ends are read back from the key columns, up to the
        last of them only — a one-stripe file (every small bucket) is not read back at all."""
        from acidctl.errors import WriteVerificationFailed

        ends = []
        end = 0
        for n in stripe_rows:
            end += n
            if n:
                ends.append(end - 1)
        if end != self.rows:
            raise WriteVerificationFailed(f"written file {self.path}: {self.rows} rows written, stripes say {end}")
        out = []
        if len(ends) > 1:
            import pyarrow.dataset as ds

            pos = 0
            j = 0
            wanted = ends[:-1]
            # an Arrow-native file: with a Python file object Arrow calls back into Python for
            # every read, 4x slower for this read-back (bench/compact.py)
            with pa.OSFile(tmp, "rb") as f:
                frag = ds.OrcFileFormat().make_fragment(f)
                for b in frag.to_batches(
                    columns=["originalTransaction", "bucket", "rowId"], batch_size=65536, use_threads=False
                ):
                    while j < len(wanted) and wanted[j] < pos + b.num_rows:
                        i = wanted[j] - pos
                        out.append(
                            "%d,%d,%d;" % (b.column(0)[i].as_py(), b.column(1)[i].as_py(), b.column(2)[i].as_py())
                        )
                        j += 1
                    pos += b.num_rows
                    if j == len(wanted):
                        break
            if j != len(wanted):
                raise WriteVerificationFailed(f"written file {self.path}: {pos} rows read back, stripes say {end}")
        if ends:
            assert self._last_key is not None  # rows were written
            out.append("%d,%d,%d;" % self._last_key)
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


class PendingVerify:
    """:func:`verify` in two halves, for a caller that reads the written file back anyway (the
    compaction's verification reads every output): the footer's checks when created (raising
    as :func:`verify` does), the event checks fed with every batch the caller reads
    (:meth:`feed`, batches with the file's columns in order), the verdict at :meth:`finish`.
    A file not read whole by then (the caller fell back to another read) is verified by
    :func:`verify` itself: the same checks, one more read."""

    def __init__(
        self,
        tfs,
        path: str,
        *,
        expected_rows: int | None = None,
        dir_kind: str | None = None,
        dir_range: tuple[int, int] | None = None,
    ):
        from acidctl.orc.meta import inspect_file_deferred

        self.tfs, self.path = tfs, path
        self.expected_rows, self.dir_kind, self.dir_range = expected_rows, dir_kind, dir_range
        self.report, self.events = inspect_file_deferred(
            tfs, path, dir_kind=dir_kind, dir_range=dir_range, expect_acid=True
        )
        _raise_on_findings(self.report)

    def feed(self, batch) -> None:
        if self.events is not None:
            self.events.feed(batch)

    @property
    def complete(self) -> bool:
        return self.events is not None and self.events.rows == self.report.rows

    def finish(self) -> None:
        if not self.complete:
            verify(
                self.tfs, self.path, expected_rows=self.expected_rows, dir_kind=self.dir_kind, dir_range=self.dir_range
            )
            return
        assert self.events is not None
        self.events.finish()
        _raise_on_findings(self.report, self.expected_rows)


def _raise_on_findings(report, expected_rows: int | None = None) -> None:
    from acidctl.errors import WriteVerificationFailed

    errors = [f for f in report.findings if f.severity.value == "error"]
    if errors:
        raise WriteVerificationFailed(f"written file {report.path} fails {errors[0].check}: {errors[0].message}")
    if expected_rows is not None and report.rows != expected_rows:
        raise WriteVerificationFailed(f"written file {report.path} has {report.rows} rows, expected {expected_rows}")


def verify(
    tfs,
    path: str,
    *,
    expected_rows: int | None = None,
    dir_kind: str | None = None,
    dir_range: tuple[int, int] | None = None,
) -> None:
    """Read the written file back and run every ACID file check; raise on any error."""
    from acidctl.orc.meta import inspect_file

    report = inspect_file(tfs, path, statistics=False, dir_kind=dir_kind, dir_range=dir_range, expect_acid=True)
    _raise_on_findings(report, expected_rows)
