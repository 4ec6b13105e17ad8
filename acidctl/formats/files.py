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
from typing import TYPE_CHECKING

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
