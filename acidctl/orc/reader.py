"""Opening ORC files: footer metadata (pyorc) and stripe-by-stripe Arrow batches (pyarrow).

pyorc exposes what pyarrow does not (the ORC type tree with char/varchar lengths, stripe
offsets, column statistics, writer ids); pyarrow decodes stripes into Arrow arrays in C++,
which is what makes vectorised rendering possible. Data is always read one stripe at a time,
so memory does not grow with the file.

A ``<file>_flush_length`` side file (Hive Streaming) limits the readable length to its last
complete 8-byte big-endian value, as ORC's ``OrcAcidUtils.getLastFlushLength`` does.
"""

from __future__ import annotations

import dataclasses
import io
import struct
from typing import Any, Iterator

from acidctl.errors import CorruptOrcFile, InvalidInputError, PathNotFound
from acidctl.fs import TableFS

ACID_FIELDS = ("operation", "originaltransaction", "bucket", "rowid", "currenttransaction", "row")
ACID_KINDS = ("INT", "LONG", "INT", "LONG", "LONG", "STRUCT")
FLUSH_SUFFIX = "_flush_length"

COMPRESSION_NAMES = {0: "NONE", 1: "ZLIB", 2: "SNAPPY", 3: "LZO", 4: "LZ4", 5: "ZSTD"}
WRITER_NAMES = {0: "ORC_JAVA", 1: "ORC_CPP", 2: "PRESTO", 3: "SCRITCHLEY_GO", 4: "TRINO", 5: "CUDF"}


@dataclasses.dataclass(frozen=True)
class StripeInfo:
    index: int
    offset: int
    length: int
    rows: int
    first_row: int

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "offset": self.offset,
            "length": self.length,
            "rows": self.rows,
            "first_row": self.first_row,
        }


@dataclasses.dataclass(frozen=True)
class FlushLength:
    side_file: str
    length: int | None  # None: no complete 8-byte value
    side_file_bytes: int


def is_acid_schema(td) -> bool:
    """ORC/Trino rule: six top-level fields with the ACID names (case-insensitive) and kinds."""
    if _kind(td) != "STRUCT":
        return False
    fields = list(td.fields.items())
    if len(fields) != 6:
        return False
    for (name, child), want, kind in zip(fields, ACID_FIELDS, ACID_KINDS):
        if name.lower() != want or _kind(child) != kind:
            return False
    return True


def _kind(td) -> str:
    return td.kind.name


def read_flush_length(tfs: TableFS, path: str) -> FlushLength | None:
    side = path + FLUSH_SUFFIX
    if not tfs.exists(side):
        return None
    data = tfs.read_bytes(side)
    n = len(data) // 8
    length = struct.unpack(">q", data[(n - 1) * 8 : n * 8])[0] if n else None
    return FlushLength(side_file=side, length=length, side_file_bytes=len(data))


class OrcFile:
    """An open ORC file. Use as a context manager; data is read with :meth:`batches`."""

    def __init__(self, tfs: TableFS, path: str, *, honour_flush_length: bool = True, arrow_footer: bool = False):
        """``arrow_footer``: for a caller that reads the data through Arrow only (compaction's
        streamed inputs): the footer Arrow parses to read is the one that tells whether this
        is an ACID file, and pyorc parses it only if asked for more (:attr:`schema`, ...) — a
        second parse of every input costs ~0.3 ms, 10 % of a small bucket's task
        (bench/compact.py). A file Arrow cannot open, or does not see as ACID, gets pyorc's
        verdict (and its errors) as without the flag."""
        self.tfs = tfs
        self.path = path
        self.display_path = tfs.display(path)
        try:
            info = tfs.info(path)
        except PathNotFound:
            raise PathNotFound(f"no such file: {self.display_path}") from None
        self.file_length = info.size
        self.flush = read_flush_length(tfs, path) if honour_flush_length else None
        self.length = self.file_length
        if self.flush is not None:
            if self.flush.length is None or self.flush.length < 0:
                raise CorruptOrcFile(
                    f"{self.flush.side_file} found but is not readable; the streaming writer may still "
                    f"be running (wait, or recover the file)"
                )
            self.length = min(self.flush.length, self.file_length)
        if self.file_length == 0:
            raise CorruptOrcFile(f"not an ORC file: {self.display_path} is empty (0 bytes)")
        self._native: list = []  # Arrow-native handles of this file (closed with it)
        self._source = self._open_source()
        self._reader = None
        self._arrow = None
        # a file opened before (same path, size, length read and mtime) is not parsed by pyorc
        # again: a compaction task opens each input 3-4 times (range, merge, verification)
        key = (tfs.protocol, path, self.length, self.file_length, info.mtime)
        known = _FOOTERS.get(key) if info.mtime is not None else None
        self._schema: Any = None
        self.is_acid: bool
        if known is not None:
            self._schema, self.is_acid = known
            return
        if arrow_footer and self._arrow_acid():
            self.is_acid = True
            return
        self._schema = self._pyorc.schema
        self.is_acid = is_acid_schema(self._schema)
        if info.mtime is not None:
            if len(_FOOTERS) >= _FOOTERS_MAX:
                _FOOTERS.pop(next(iter(_FOOTERS)))
            _FOOTERS[key] = (self._schema, self.is_acid)

    @property
    def schema(self) -> Any:
        """pyorc's TypeDescription of the file (a struct's ``fields`` exist at run time, not
        in pyorc's stubs)."""
        if self._schema is None:
            self._schema = self._pyorc.schema
        return self._schema

    def _arrow_acid(self) -> bool:
        """Whether Arrow's schema of the file is the ACID one: the six names (any case) with
        int32/int64/int32/int64/int64/struct, which Arrow maps from ORC's int, bigint and
        struct alone — so True means :func:`is_acid_schema` is True (False: ask pyorc)."""
        import pyarrow as pa

        try:
            schema = self._arrow_file().schema
        except CorruptOrcFile:
            return False
        if len(schema) != 6:
            return False
        want = (pa.types.is_int32, pa.types.is_int64, pa.types.is_int32, pa.types.is_int64, pa.types.is_int64)
        for field, name, ok in zip(schema, ACID_FIELDS, (*want, pa.types.is_struct)):
            if field.name.lower() != name or not ok(field.type):
                return False
        return True

    @property
    def _pyorc(self):
        """pyorc's reader of the footer (created when first needed)."""
        if self._reader is None:
            import pyorc

            from acidctl.orc.render import python_converters

            self._source.seek(0)
            try:
                # raw converters: statistics of dates/timestamps stay numbers (datetime overflows)
                self._reader = pyorc.Reader(self._source, converters=python_converters())
            except pyorc.errors.ORCError as e:
                self.close()
                raise CorruptOrcFile(f"not a readable ORC file: {self.display_path}: {_orc_message(e)}") from None
            except UnicodeDecodeError:
                self.close()
                raise CorruptOrcFile(f"not a readable ORC file: {self.display_path}: undecodable schema") from None
        return self._reader

    # -- opening -------------------------------------------------------------------------
    def _open_source(self):
        if self.length != self.file_length:
            with self.tfs.open(self.path) as f:
                return io.BytesIO(f.read(self.length))
        if self.tfs.protocol in ("file", "local"):
            return open(self.path, "rb")
        return self.tfs.open(self.path, "rb", block_size=8 << 20)

    def _arrow_source(self):
        """What Arrow reads from: an Arrow-native file for local files and a buffer for a file
        cut at its flush length (a Python file object makes Arrow call back into Python for
        every read, under the GIL: 5-8× slower on large stripes, bench/dump.py); else the
        fsspec file."""
        import io

        import pyarrow as pa

        if isinstance(self._source, io.BytesIO):
            return pa.BufferReader(self._source.getvalue())
        if self.tfs.protocol in ("file", "local") and self.length == self.file_length:
            try:
                f = pa.OSFile(self.path, "rb")
            except OSError:
                pass
            else:
                self._native.append(f)
                return f
        self._source.seek(0)
        return self._source

    @property
    def local_path(self) -> str | None:
        """The file's path for another process to open it, when it is a local file read whole
        (not cut at a flush length); else None."""
        if self.tfs.protocol in ("file", "local") and self.length == self.file_length:
            return self.path
        return None

    def _arrow_file(self):
        if self._arrow is None:
            import pyarrow.orc as po

            try:
                self._arrow = po.ORCFile(self._arrow_source())
            except (OSError, ValueError) as e:
                raise CorruptOrcFile(f"not a readable ORC file: {self.display_path}: {e}") from None
        return self._arrow

    def close(self):
        for f in [self._source, *self._native]:
            try:
                f.close()
            except Exception:
                pass
        self._native = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- footer --------------------------------------------------------------------------
    @property
    def rows(self) -> int:
        return len(self._pyorc)

    @property
    def user_metadata(self) -> dict[str, bytes]:
        return dict(self._pyorc.user_metadata)

    @property
    def compression(self) -> str:
        return COMPRESSION_NAMES.get(int(self._pyorc.compression), str(self._pyorc.compression))

    @property
    def compression_block_size(self) -> int:
        return int(self._pyorc.compression_block_size)

    @property
    def format_version(self) -> str:
        return ".".join(str(x) for x in self._pyorc.format_version)

    @property
    def writer(self) -> str:
        return str(self._pyorc.writer_id).replace("_WRITER", "")

    @property
    def writer_version(self) -> int:
        return int(self._pyorc.writer_version)

    @property
    def software_version(self) -> str:
        return self._pyorc.software_version

    @property
    def row_index_stride(self) -> int:
        return int(self._pyorc.row_index_stride)

    def stripes(self) -> list[StripeInfo]:
        out = []
        first = 0
        for i in range(self._pyorc.num_of_stripes):
            s = self._pyorc.read_stripe(i)
            out.append(StripeInfo(i, s.bytes_offset, s.bytes_length, len(s), first))
            first += len(s)
        return out

    def column_statistics(self, stripe: int | None = None) -> list[dict]:
        src = self._pyorc if stripe is None else self._pyorc.read_stripe(stripe)
        out = []
        for col in range(_count_columns(self.schema)):
            try:
                st = dict(src[col].statistics)
            except Exception as e:  # pyorc cannot convert some statistics; report, don't fail
                st = {"kind": None, "error": f"{type(e).__name__}: {e}"}
            out.append({k: _plain(v) for k, v in st.items()})
        return out

    # -- data ----------------------------------------------------------------------------
    def num_stripes(self) -> int:
        if self._schema is None:  # Arrow's footer gave the verdict (``arrow_footer``): no pyorc parse
            return self._arrow_file().nstripes
        return self._pyorc.num_of_stripes

    def top_names(self) -> list[str]:
        """The file's top-level column names, as written, from whichever footer was parsed."""
        if self._schema is None:
            return list(self._arrow_file().schema.names)
        return list(self.schema.fields)

    def read_stripe_arrow(self, index: int, columns: list[str] | None = None):
        """One stripe as an Arrow RecordBatch; raises ``ArrowNotRepresentable`` when Arrow
        cannot hold a value (timestamps outside 1677..2262 in nanoseconds)."""
        import pyarrow as pa

        f = self._arrow_file()
        try:
            return f.read_stripe(index, columns=columns)
        except pa.ArrowInvalid as e:
            if "out of range" in str(e):
                raise ArrowNotRepresentable(str(e)) from None
            raise CorruptOrcFile(f"cannot read stripe {index} of {self.display_path}: {e}") from None
        except (OSError, ValueError) as e:
            raise CorruptOrcFile(f"cannot read stripe {index} of {self.display_path}: {e}") from None

    def iter_batches(self, *, columns: list[str] | None = None, batch_rows: int = 65536):
        """The file's rows (or ``columns``) as record batches of at most ``batch_rows`` rows.

        ORC's row reader through a pyarrow dataset fragment, so not even one whole stripe is
        decoded at once (Hive's 64 MiB stripes hold millions of rows). Whatever that reader
        cannot decode is read stripe by stripe (``read_stripe_arrow``, with its errors), from
        where it stopped."""
        import pyarrow as pa

        done = 0
        if self._arrow_file().nrows <= SMALL_FILE_ROWS:
            # a small file (a delta of a few writes): its stripes whole, sliced — a dataset
            # fragment costs ~1.5 ms to set up per file, 4× a stripe read (bench/merged.py,
            # 40 partitions: 480 files)
            for i in range(self._arrow_file().nstripes):
                b = self.read_stripe_arrow(i, columns=columns)
                for off in range(0, b.num_rows, batch_rows):
                    yield b.slice(off, batch_rows)
            return
        try:
            # ORC's reader decodes small batches several times faster than large ones (wide
            # strings: 8×; bench/merged.py): read READ_ROWS at a time, hand out up to
            # batch_rows rows or COALESCE_BYTES bytes at once
            acc: list = []
            acc_rows = acc_bytes = 0
            for b in self.stream_batches(columns=columns, batch_rows=min(batch_rows, READ_ROWS)):
                if not b.num_rows:
                    continue
                if acc and acc_rows + b.num_rows > batch_rows:
                    done += acc_rows
                    yield _coalesce(acc)
                    acc, acc_rows, acc_bytes = [], 0, 0
                acc.append(b)
                acc_rows += b.num_rows
                acc_bytes += b.nbytes
                if acc_rows >= batch_rows or acc_bytes >= COALESCE_BYTES:
                    done += acc_rows
                    yield _coalesce(acc)
                    acc, acc_rows, acc_bytes = [], 0, 0
            if acc:
                done += acc_rows
                yield _coalesce(acc)
            return
        except (pa.ArrowException, OSError, ValueError):
            pass
        start = 0
        for i in range(self.num_stripes()):
            b = self.read_stripe_arrow(i, columns=columns)
            end = start + b.num_rows
            if end > done:
                b = b.slice(max(0, done - start))
                for off in range(0, b.num_rows, batch_rows):
                    yield b.slice(off, batch_rows)
            start = end

    def stream_batches(self, *, columns: list[str] | None = None, batch_rows: int | None = None):
        """The file's rows (or top-level ``columns``) as ORC's row reader decodes them,
        ``batch_rows`` at a time (a batch never spans two stripes), through a pyarrow dataset
        fragment: the caller works on one batch while the next is decoded, and not even one
        stripe is held at once. Errors are Arrow's own (:meth:`iter_batches` and
        ``acidctl.dump`` go on stripe by stripe from where they stopped)."""
        import pyarrow.dataset as ds  # only here: its import (with parquet's) costs ~10 ms a process

        frag = ds.OrcFileFormat().make_fragment(self._arrow_source())
        yield from frag.to_batches(columns=columns, batch_size=batch_rows or READ_ROWS, use_threads=False)

    def read_stripe_rows(self, index: int, converters=None, skip: int = 0) -> Iterator[tuple]:
        """One stripe as Python tuples (pyorc), the slow exact path."""
        import pyorc

        src = self._source
        src.seek(0)
        try:
            r = pyorc.Reader(src, converters=converters)
            stripe = r.read_stripe(index)
            if skip:
                stripe.seek(skip)
            yield from stripe
        except UnicodeDecodeError:
            raise InvalidInputError(
                f"{self.display_path}: stripe {index} holds both timestamps outside 1677..2262 and "
                f"strings that are not valid UTF-8; acidctl cannot render this combination"
            ) from None
        except pyorc.errors.ORCError as e:
            raise CorruptOrcFile(f"cannot read stripe {index} of {self.display_path}: {_orc_message(e)}") from None


def key_column_stripes(tfs: TableFS, path: str) -> Iterator:
    """The five key columns of an ACID file (operation … currentTransaction, named as Hive's
    writer names them whatever their case in the file), one Arrow table per stripe; the row
    data is never read. Delete keys are read this way by the merged read and compaction."""
    import pyarrow as pa

    from acidctl.orc.acidfile import ACID_NAMES

    with OrcFile(tfs, path, arrow_footer=True) as f:
        cols = f.top_names()[:5]
        for i in range(f.num_stripes()):
            b = f.read_stripe_arrow(i, columns=cols)
            yield pa.Table.from_batches([b]).rename_columns(list(ACID_NAMES[:5]))


#: (protocol, path, bytes read, file size, mtime) -> (schema, is_acid) of files opened before
_FOOTERS: dict = {}
_FOOTERS_MAX = 8192

#: files of at most this many rows are read stripe by stripe in :meth:`OrcFile.iter_batches`
SMALL_FILE_ROWS = 131072
#: rows ORC's reader decodes at a time in :meth:`OrcFile.iter_batches`
READ_ROWS = 8192
#: iter_batches hands out at most this many bytes at once (unless one read batch is larger)
COALESCE_BYTES = 8 << 20


def _coalesce(batches: list):
    import pyarrow as pa

    return batches[0] if len(batches) == 1 else pa.concat_batches(batches)


def _plain(v):
    """Statistics values as JSON-friendly plain data (Decimal → text, NaN → "NaN")."""
    import decimal
    import math

    if hasattr(v, "name") and hasattr(v, "value"):  # enums
        return v.name
    if isinstance(v, decimal.Decimal):
        from acidctl.orc.javafmt import decimal_str

        return decimal_str(v)
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return str(v).replace("inf", "Infinity").replace("nan", "NaN")
    if isinstance(v, tuple):
        return list(v)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v


class ArrowNotRepresentable(Exception):
    """Arrow cannot represent a value of this stripe; use the pyorc path."""


def _count_columns(td) -> int:
    n = 1
    kind = td.kind.name
    if kind == "STRUCT":
        for child in td.fields.values():
            n += _count_columns(child)
    elif kind == "LIST":
        n += _count_columns(td.type)
    elif kind == "MAP":
        n += _count_columns(td.key) + _count_columns(td.value)
    elif kind == "UNION":
        for child in td.cont_types:
            n += _count_columns(child)
    return n


def _orc_message(e: Exception) -> str:
    return str(e).split("\n")[0] or type(e).__name__
