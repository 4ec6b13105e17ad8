"""Read and write one data file of an insert-only table in its format.

Readers: pyarrow for ORC and Parquet (Arrow's own C++ readers), fastavro for Avro,
:mod:`acidctl.formats.textfile` for LazySimpleSerDe text (see there why by hand). Every reader
returns an Arrow table with exactly the table's columns and types: columns are matched by name
case-insensitively (ORC files with ``_colN`` names by position, as Hive does for them), missing
columns are NULL.

Writers keep the table's format, compression and SerDe properties: ORC (pyarrow; codec from
``orc.compress``, else the input files' codec, else ZLIB — Hive's default), Parquet (pyarrow;
``parquet.compression``, else the input files' codec, else uncompressed; timestamps as INT96 as
Hive writes them), Avro (fastavro; ``avro.output.codec``, else the input files' codec, else
none), text (LazySimpleSerDe rules; compressed like the input files, with Hadoop's codec
extension).
"""

from __future__ import annotations

import bz2
import dataclasses
import gzip
import zlib
from typing import TYPE_CHECKING, Any

from acidctl.errors import InvalidInputError, NotAcidFile
from acidctl.formats.storage import AVRO, ORC, PARQUET, TEXT, Storage

if TYPE_CHECKING:
    import pyarrow as pa

#: Hadoop codec extensions of compressed text files (``Utilities.getFileExtension``)
TEXT_CODECS = {".deflate": "deflate", ".gz": "gzip", ".bz2": "bzip2"}
_UNSUPPORTED_TEXT = (".snappy", ".lz4", ".zst", ".lzo")
_ACID_FIELDS = ("operation", "originaltransaction", "bucket", "rowid", "currenttransaction", "row")


class NotInsertOnlyData(InvalidInputError):
    """An ACID event file (or other non-MM data) inside an insert-only table."""


def sniff(head: bytes) -> str | None:
    """The format a file's first bytes announce (None: text or unknown)."""
    if head.startswith(b"ORC"):
        return ORC
    if head.startswith(b"PAR1"):
        return PARQUET
    if head.startswith(b"Obj\x01"):
        return AVRO
    return None


def text_codec(path: str) -> str | None:
    name = path.rsplit("/", 1)[-1]
    for ext, codec in TEXT_CODECS.items():
        if name.endswith(ext):
            return codec
    if name.endswith(_UNSUPPORTED_TEXT):
        raise InvalidInputError(
            f"{name}: compressed text with codec {name.rsplit('.', 1)[-1]} is not supported "
            "(acidctl reads uncompressed, .deflate, .gz and .bz2 text files)"
        )
    return None


def _decompress_text(data: bytes, codec: str | None) -> bytes:
    if codec is None:
        return data
    try:
        if codec == "deflate":
            return zlib.decompress(data)
        if codec == "gzip":
            return gzip.decompress(data)
        if codec == "bzip2":
            return bz2.decompress(data)
    except (OSError, zlib.error, ValueError) as e:
        raise InvalidInputError(f"cannot decompress {codec} text: {e}") from None
    return data


def _compress_text(data: bytes, codec: str | None) -> bytes:
    if codec == "deflate":
        return zlib.compress(data)
    if codec == "gzip":
        return gzip.compress(data)
    if codec == "bzip2":
        return bz2.compress(data)
    return data


def extension(storage: Storage, codec: str | None) -> str:
    if storage.format != TEXT or codec is None:
        return ""
    return {v: k for k, v in TEXT_CODECS.items()}[codec]


@dataclasses.dataclass
class FileData:
    table: pa.Table  # the table's columns
    codec: str | None  # the file's compression, in the writer's spelling
    avro_schema: dict | None = None


def read_file(tfs, path: str, storage: Storage, row_td) -> FileData:
    """The rows of one data file as an Arrow table of the table's columns."""
    data = tfs.read_bytes(path)
    display = tfs.display(path)
    try:
        return _read(data, path, storage, row_td)
    except InvalidInputError as e:
        raise type(e)(f"{display}: {e}") from None


def _read(data: bytes, path: str, storage: Storage, row_td) -> FileData:
    import pyarrow as pa

    found = sniff(data[:4])
    fmt = storage.format
    if fmt != TEXT and found != fmt:
        raise InvalidInputError(
            f"not a readable {fmt.upper() if fmt == ORC else fmt.capitalize()} file "
            f"({'looks like ' + found if found else 'no ' + fmt + ' magic'}); the table "
            f"stores {fmt}"
        )
    if fmt == ORC:
        import pyarrow.orc as po

        try:
            f = po.ORCFile(pa.BufferReader(data))
            t = f.read()
            codec = f.compression
        except Exception as e:
            raise InvalidInputError(f"not a readable ORC file: {e}") from None
        if [n.lower() for n in t.column_names] == list(_ACID_FIELDS):
            raise NotInsertOnlyData(
                "an ACID event file (operation, originalTransaction, ... row) in an insert-only "
                "table: not insert-only data"
            )
        return FileData(conform(t, row_td, positional=_all_coln(t.column_names)), codec)
    if fmt == PARQUET:
        import pyarrow.parquet as pq

        try:
            f = pq.ParquetFile(pa.BufferReader(data))
            t = f.read()
            codec = (
                f.metadata.row_group(0).column(0).compression
                if f.metadata.num_row_groups and f.metadata.num_columns
                else None
            )
        except Exception as e:
            raise InvalidInputError(f"not a readable Parquet file: {e}") from None
        return FileData(conform(t, row_td), codec)
    if fmt == AVRO:
        from acidctl.formats import avrofile

        info = avrofile.file_info(data)
        return FileData(avrofile.read(data, row_td), info["codec"], info["schema"])
    from acidctl.formats import textfile

    codec = text_codec(path)
    p = textfile.TextParams.from_properties(storage.properties)
    cols = textfile.read_rows(_decompress_text(data, codec), row_td, p)
    return FileData(textfile.to_arrow(cols, row_td), codec)


def _all_coln(names) -> bool:
    import re

    return bool(names) and all(re.fullmatch(r"_col\d+", n) for n in names)


def conform(t, row_td, *, positional: bool = False):
    """The file's columns as the table's columns: by name (case-insensitive) or position; cast
    to the table's types; absent columns NULL."""
    import pyarrow as pa

    from acidctl.formats.hivetypes import arrow_type
    from acidctl.errors import UnsupportedSchema

    by_lower = {n.lower(): i for i, n in enumerate(t.column_names)}
    arrays, names = [], []
    for pos, (name, td) in enumerate(row_td.fields.items()):
        want = arrow_type(td, where=name)
        idx = pos if positional and pos < t.num_columns else by_lower.get(name.lower())
        if idx is None:
            arrays.append(pa.nulls(t.num_rows, want))
        else:
            col = t.column(idx)
            if col.type != want:
                try:
                    col = col.cast(want)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                    raise UnsupportedSchema(
                        f"column {name}: the file's {col.type} cannot be read as {td}: {e}"
                    ) from None
            arrays.append(col)
        names.append(name)
    return pa.Table.from_arrays(arrays, names=names)


# -- writing ------------------------------------------------------------------------------

_ORC_CODECS = {
    "NONE": "uncompressed",
    "UNCOMPRESSED": "uncompressed",
    "ZLIB": "zlib",
    "SNAPPY": "snappy",
    "LZ4": "lz4",
    "ZSTD": "zstd",
    "LZO": None,
}
_PARQUET_CODECS = {
    "UNCOMPRESSED": "none",
    "NONE": "none",
    "SNAPPY": "snappy",
    "GZIP": "gzip",
    "LZO": None,
    "BROTLI": "brotli",
    "LZ4": "lz4",
    "LZ4_RAW": "lz4",
    "ZSTD": "zstd",
}


def choose_codec(storage: Storage, input_codecs: list) -> str | None:
    """The codec of the output: the table property, else the most common codec of the input
    files, else the format's Hive default (ORC ZLIB, others uncompressed)."""
    prop = storage.compression_property()
    if prop:
        return prop.upper() if storage.format in (ORC, PARQUET) else prop.lower()
    seen = [c for c in input_codecs if c is not None]
    if seen:
        c = max(set(seen), key=seen.count)
        return c.upper() if storage.format in (ORC, PARQUET) else c
    return "ZLIB" if storage.format == ORC else None


def encode(table, row_td, storage: Storage, *, codec: str | None, avro_schema=None) -> bytes:
    """The bytes of one output file."""
    import pyarrow as pa

    from acidctl.errors import UsageError

    if storage.format == ORC:
        import pyarrow.orc as po

        c = _ORC_CODECS.get((codec or "ZLIB").upper(), "?")
        if c in (None, "?"):
            raise UsageError(f"ORC compression {codec} cannot be written by acidctl")
        sink = pa.BufferOutputStream()
        po.write_table(table, sink, compression=c)
        return sink.getvalue().to_pybytes()
    if storage.format == PARQUET:
        import pyarrow.parquet as pq

        c = _PARQUET_CODECS.get((codec or "UNCOMPRESSED").upper(), "?")
        if c in (None, "?"):
            raise UsageError(f"Parquet compression {codec} cannot be written by acidctl")
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression=c, use_deprecated_int96_timestamps=True)
        return sink.getvalue().to_pybytes()
    if storage.format == AVRO:
        from acidctl.formats import avrofile

        schema = storage.properties.get("avro.schema.literal") or avro_schema
        return avrofile.write(table, row_td, schema=schema, codec=codec)
    from acidctl.formats import textfile

    p = textfile.TextParams.from_properties(storage.properties)
    return _compress_text(textfile.write_rows(table, row_td, p), codec)


def require_not_acid_name(name: str) -> None:
    if name.startswith("bucket_"):
        raise NotAcidFile(f"{name}: a bucket_N file in an insert-only table (full-ACID data)")


# -- streaming (compaction) ---------------------------------------------------------------

#: rows per Arrow table when a file is read in pieces (ORC: one stripe at a time instead)
BATCH_ROWS = 65536
#: pyarrow's ORC writer cuts what it is given into ORC batches of 1,024 rows and checks the
#: stripe size after each one; writing whole multiples of 1,024 rows keeps the file identical
#: to one ``write_table`` of everything
ORC_WRITER_BATCH = 1024
#: pyarrow's default row-group length (``pq.write_table`` without ``row_group_size``); the
#: streaming writer buffers exactly one row group, so the file is the one-shot file
PARQUET_ROW_GROUP = 1 << 20
#: bytes of (compressed) text read at a time
TEXT_CHUNK = 4 << 20


def file_codec(tfs, path: str, storage: Storage) -> tuple[str | None, dict | None]:
    """(codec, Avro writer schema) of a data file, from its header or tail only."""
    import pyarrow as pa

    fmt = storage.format
    display = tfs.display(path)
    if fmt == TEXT:
        return text_codec(path), None
    with tfs.open(path) as fh:
        head = fh.read(4)
        fh.seek(0)
        if sniff(head) != fmt:
            _read(head, path, storage, None)  # raises the one-file message ("not a readable ...")
        try:
            if fmt == ORC:
                import pyarrow.orc as po

                return po.ORCFile(pa.PythonFile(fh, mode="r")).compression, None
            if fmt == PARQUET:
                import pyarrow.parquet as pq

                md = pq.ParquetFile(pa.PythonFile(fh, mode="r")).metadata
                return (md.row_group(0).column(0).compression if md.num_row_groups and md.num_columns else None), None
            from acidctl.formats import avrofile

            r = avrofile.stream_reader(fh)
            return r.codec, r.writer_schema
        except InvalidInputError as e:
            raise type(e)(f"{display}: {e}") from None
        except Exception as e:
            raise InvalidInputError(f"{display}: not a readable {fmt} file: {e}") from None


def iter_tables(tfs, path: str, storage: Storage, row_td, *, batch_rows: int | None = None):
    """The rows of one data file as Arrow tables of the table's columns, a piece at a time
    (ORC: a stripe; Parquet, Avro, text: at most ``batch_rows`` rows), empty pieces skipped.
    Text with header/footer lines to skip is read whole (the footer is only known at the end)."""
    display = tfs.display(path)
    try:
        yield from _iter(tfs, path, storage, row_td, batch_rows or BATCH_ROWS)
    except InvalidInputError as e:
        raise type(e)(f"{display}: {e}") from None


def _iter(tfs, path: str, storage: Storage, row_td, batch_rows: int):
    import pyarrow as pa

    fmt = storage.format
    if fmt == TEXT:
        yield from _iter_text(tfs, path, storage, row_td, batch_rows)
        return
    with tfs.open(path) as fh:
        head = fh.read(4)
        fh.seek(0)
        if sniff(head) != fmt:
            _read(head, path, storage, row_td)  # raises the one-file message
        if fmt == AVRO:
            from acidctl.formats import avrofile

            yield from avrofile.iter_tables(fh, row_td, batch_rows)
            return
        src = pa.PythonFile(fh, mode="r")
        if fmt == ORC:
            import pyarrow.orc as po

            try:
                f = po.ORCFile(src)
                n = f.nstripes
            except Exception as e:
                raise InvalidInputError(f"not a readable ORC file: {e}") from None
            for i in range(n):
                try:
                    b = f.read_stripe(i)
                except Exception as e:
                    raise InvalidInputError(f"not a readable ORC file: {e}") from None
                t = pa.Table.from_batches([b])
                if [c.lower() for c in t.column_names] == list(_ACID_FIELDS):
                    raise NotInsertOnlyData(
                        "an ACID event file (operation, originalTransaction, ... row) in an insert-only "
                        "table: not insert-only data"
                    )
                if t.num_rows:
                    yield conform(t, row_td, positional=_all_coln(t.column_names))
            return
        import pyarrow.parquet as pq

        try:
            f = pq.ParquetFile(src)
            for b in f.iter_batches(batch_size=batch_rows, use_threads=False):
                if b.num_rows:
                    yield conform(pa.Table.from_batches([b]), row_td)
        except InvalidInputError:
            raise
        except Exception as e:
            raise InvalidInputError(f"not a readable Parquet file: {e}") from None


def _iter_text(tfs, path: str, storage: Storage, row_td, batch_rows: int):
    """LazySimpleSerDe text in pieces of whole lines (decompressed on the way)."""
    import dataclasses as dc

    from acidctl.formats import textfile

    codec = text_codec(path)
    p = textfile.TextParams.from_properties(storage.properties)
    if p.header_lines or p.footer_lines:
        yield read_file(tfs, path, storage, row_td).table
        return
    p = dc.replace(p, header_lines=0, footer_lines=0)

    def rows_of(data: bytes):
        # a piece of whole lines: split further so no table exceeds batch_rows rows
        lines = textfile.split_lines(data)
        for off in range(0, len(lines), batch_rows):
            part = b"\n".join(lines[off : off + batch_rows]) + b"\n"
            yield textfile.to_arrow(textfile.read_rows(part, row_td, p), row_td)

    carry = b""
    with tfs.open(path) as fh:
        for data in _decompressed(fh, codec):
            buf = carry + data
            # cut after the last terminator, never between a CR and the LF that may follow
            cut = max(buf.rfind(b"\n"), buf.rfind(b"\r"))
            if cut == len(buf) - 1 and buf.endswith(b"\r"):
                cut = max(buf.rfind(b"\n", 0, cut), buf.rfind(b"\r", 0, cut))
            if cut < 0:
                carry = buf
                continue
            carry = buf[cut + 1 :]
            yield from rows_of(buf[: cut + 1])
    if carry:
        yield from rows_of(carry)


def _decompressed(fh, codec: str | None):
    """The decompressed bytes of an open text file, a chunk at a time; like
    :func:`_decompress_text` (``zlib``/``gzip``/``bz2`` ``decompress``), several concatenated
    gzip members or bzip2 streams are read one after the other."""
    import bz2 as _bz2

    def new():
        if codec == "deflate":
            return zlib.decompressobj()
        if codec == "gzip":
            return zlib.decompressobj(wbits=31)
        return _bz2.BZ2Decompressor()

    dec: Any = new() if codec is not None else None
    try:
        while True:
            raw = fh.read(TEXT_CHUNK)
            if not raw:
                if dec is not None and codec != "bzip2":
                    tail = dec.flush()
                    if tail:
                        yield tail
                return
            if dec is None:
                yield raw
                continue
            while raw:
                out = dec.decompress(raw)
                if out:
                    yield out
                raw = b""
                if dec.eof and dec.unused_data and codec in ("gzip", "bzip2"):
                    raw = dec.unused_data  # the next member / stream
                    dec = new()
    except (OSError, zlib.error, ValueError, EOFError) as e:
        raise InvalidInputError(f"cannot decompress {codec} text: {e}") from None


class OutputFile:
    """One output data file written as :func:`encode` writes it, from tables given one at a
    time: the bytes equal ``encode`` of all the rows at once (ORC in whole multiples of the
    writer's batch, Parquet a row group at a time, Avro and text record by record, text
    compression streamed). Nothing is created until the first row; ``close()`` returns the
    file's size (0 when nothing was written)."""

    def __init__(self, tfs, path: str, row_td, storage: Storage, *, codec: str | None, avro_schema=None):
        self.tfs = tfs
        self.path = path
        self.row_td = row_td
        self.storage = storage
        self.codec = codec
        self.avro_schema = avro_schema
        self.rows = 0
        self._fh: Any = None
        self._writer: Any = None
        self._pending: list = []  # ORC/Parquet: buffered tables not yet handed to the writer
        self._pending_rows = 0
        self._compressor: Any = None

    def _open(self, table) -> None:
        import pyarrow as pa

        from acidctl.errors import UsageError

        fmt = self.storage.format
        self.tfs.makedirs(self.path.rsplit("/", 1)[0])
        if fmt == ORC:
            c = _ORC_CODECS.get((self.codec or "ZLIB").upper(), "?")
            if c in (None, "?"):
                raise UsageError(f"ORC compression {self.codec} cannot be written by acidctl")
            import pyarrow.orc as po

            self._fh = self.tfs.open(self.path, "wb")
            self._writer = po.ORCWriter(self._fh, compression=c)
        elif fmt == PARQUET:
            c = _PARQUET_CODECS.get((self.codec or "UNCOMPRESSED").upper(), "?")
            if c in (None, "?"):
                raise UsageError(f"Parquet compression {self.codec} cannot be written by acidctl")
            import pyarrow.parquet as pq

            self._fh = self.tfs.open(self.path, "wb")
            self._writer = pq.ParquetWriter(
                pa.PythonFile(self._fh, mode="w"), table.schema, compression=c, use_deprecated_int96_timestamps=True
            )
        elif fmt == AVRO:
            from acidctl.formats import avrofile

            schema = self.storage.properties.get("avro.schema.literal") or self.avro_schema
            self._fh = self.tfs.open(self.path, "wb")
            self._writer = avrofile.StreamWriter(self._fh, self.row_td, schema=schema, codec=self.codec)
        else:
            from acidctl.formats import textfile

            self._params = textfile.TextParams.from_properties(self.storage.properties)
            self._fh = self.tfs.open(self.path, "wb")
            if self.codec == "deflate":
                self._compressor = zlib.compressobj()  # zlib.compress's settings
            elif self.codec == "gzip":
                self._compressor = _GzipStream(self._fh)
            elif self.codec == "bzip2":
                self._compressor = bz2.BZ2Compressor()  # bz2.compress's level 9

    def write(self, table) -> None:
        if not table.num_rows:
            return
        if self._fh is None:
            self._open(table)
        self.rows += table.num_rows
        fmt = self.storage.format
        if fmt in (ORC, PARQUET):
            self._pending.append(table)
            self._pending_rows += table.num_rows
            self._flush(final=False)
        elif fmt == AVRO:
            assert self._writer is not None  # opened above
            self._writer.write(table)
        else:
            from acidctl.formats import textfile

            self._out(textfile.write_rows(table, self.row_td, self._params))

    def _out(self, data: bytes) -> None:
        c = self._compressor
        if c is None:
            self._fh.write(data)
        elif isinstance(c, _GzipStream):
            c.write(data)
        else:
            self._fh.write(c.compress(data))

    def _flush(self, *, final: bool) -> None:
        import pyarrow as pa

        unit = ORC_WRITER_BATCH if self.storage.format == ORC else PARQUET_ROW_GROUP
        if final:
            n = self._pending_rows
        elif self.storage.format == ORC and self._pending_rows >= BATCH_ROWS:
            n = self._pending_rows // unit * unit
        elif self.storage.format == PARQUET and self._pending_rows >= unit:
            n = self._pending_rows // unit * unit
        else:
            return
        if not n:
            return
        t = pa.concat_tables(self._pending)
        head, rest = t.slice(0, n).combine_chunks(), t.slice(n)
        self._pending = [rest] if rest.num_rows else []
        self._pending_rows = rest.num_rows
        if self.storage.format == ORC:
            self._writer.write(head)
        else:
            self._writer.write_table(head, row_group_size=PARQUET_ROW_GROUP)

    def close(self, *, empty: bool = False) -> int:
        """Finish the file; with ``empty`` a file without rows is still written (the format's
        empty file: a footer or header only, or zero bytes of text)."""
        if self._fh is None and empty:
            import pyarrow as pa

            from acidctl.formats.hivetypes import arrow_type

            schema = pa.schema([pa.field(n, arrow_type(td, where=n)) for n, td in self.row_td.fields.items()])
            self._open(schema.empty_table())
            if self.storage.format == ORC:
                self._writer.write(schema.empty_table())  # the ORC writer starts the file on a write
        if self._fh is None:
            return 0
        fmt = self.storage.format
        if fmt in (ORC, PARQUET):
            self._flush(final=True)
            self._writer.close()
        elif fmt == AVRO:
            self._writer.close()
        else:
            c = self._compressor
            if isinstance(c, _GzipStream):
                c.close()
            elif c is not None:
                self._fh.write(c.flush())
        self._fh.close()
        self._fh = None
        return self.tfs.info(self.path).size

    def abort(self) -> None:
        """Close without finishing (the caller discards the staging area)."""
        try:
            if self._fh is not None:
                self._fh.close()
        except Exception:
            pass
        self._fh = None


class _GzipStream:
    """``gzip.compress`` as a stream: same level (9) and header (no file name; the time of
    writing, as ``gzip.compress`` puts it there)."""

    def __init__(self, fh):
        self._g = gzip.GzipFile(filename="", mode="wb", fileobj=fh, compresslevel=9)

    def write(self, data: bytes) -> None:
        self._g.write(data)

    def close(self) -> None:
        self._g.close()
