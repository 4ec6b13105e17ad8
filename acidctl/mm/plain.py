"""``acidctl dump FILE`` for data files that are not ORC (Parquet, Avro, LazySimpleSerDe text)
or plain (non-ACID) files of insert-only tables: their rows as JSON lines, rendered like ORC
rows (FileDump conventions), with the file's own columns (Parquet, Avro) or ``--columns
name:type,...`` (required for text).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from acidctl.errors import UnsupportedSchema, UsageError
from acidctl.formats.hivetypes import Column

if TYPE_CHECKING:
    from acidctl.fs import TableFS


def hive_type_of_arrow(t) -> str:
    """The Hive type that holds an Arrow type read from a Parquet/ORC file."""
    import pyarrow as pa
    import pyarrow.types as pt

    if pt.is_null(t):
        return "string"  # a column with only NULLs in this file
    if pt.is_boolean(t):
        return "boolean"
    for check, name in (
        (pt.is_int8, "tinyint"),
        (pt.is_int16, "smallint"),
        (pt.is_int32, "int"),
        (pt.is_int64, "bigint"),
        (pt.is_uint8, "smallint"),
        (pt.is_uint16, "int"),
        (pt.is_uint32, "bigint"),
        (pt.is_float32, "float"),
        (pt.is_float64, "double"),
        (pt.is_date, "date"),
    ):
        if check(t):
            return name
    if pt.is_string(t) or pt.is_large_string(t):
        return "string"
    if pt.is_binary(t) or pt.is_large_binary(t) or pt.is_fixed_size_binary(t):
        return "binary"
    if pt.is_timestamp(t):
        return "timestamp"
    if pt.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pt.is_map(t):
        return f"map<{hive_type_of_arrow(t.key_type)},{hive_type_of_arrow(t.item_type)}>"
    if pt.is_list(t) or pt.is_large_list(t):
        return f"array<{hive_type_of_arrow(t.value_type)}>"
    if pt.is_struct(t):
        return "struct<" + ",".join(f"{f.name.lower()}:{hive_type_of_arrow(f.type)}" for f in t) + ">"
    del pa
    raise UnsupportedSchema(f"Arrow type {t} has no Hive equivalent")


_AVRO_SIMPLE = {
    "boolean": "boolean",
    "int": "int",
    "long": "bigint",
    "float": "float",
    "double": "double",
    "string": "string",
    "bytes": "binary",
    "fixed": "binary",
    "enum": "string",
}


def hive_type_of_avro(s) -> str:
    """The Hive type of an Avro schema node (nullable unions are their non-null branch)."""
    if isinstance(s, list):
        rest = [x for x in s if x != "null"]
        if len(rest) != 1:
            raise UnsupportedSchema(f"Avro union {s} has no Hive equivalent acidctl reads")
        return hive_type_of_avro(rest[0])
    if isinstance(s, str):
        if s in _AVRO_SIMPLE:
            return _AVRO_SIMPLE[s]
        raise UnsupportedSchema(f"Avro type {s} is not supported")
    lt = s.get("logicalType")
    t = s.get("type")
    if lt == "decimal":
        return f"decimal({s.get('precision')},{s.get('scale', 0)})"
    if lt == "date":
        return "date"
    if lt in ("timestamp-millis", "timestamp-micros"):
        return "timestamp"
    if lt in ("varchar", "char") and s.get("maxLength"):
        return f"{lt}({s['maxLength']})"
    if t == "array":
        return f"array<{hive_type_of_avro(s['items'])}>"
    if t == "map":
        return f"map<string,{hive_type_of_avro(s['values'])}>"
    if t == "record":
        return "struct<" + ",".join(f"{f['name'].lower()}:{hive_type_of_avro(f['type'])}" for f in s["fields"]) + ">"
    return hive_type_of_avro(t)


def file_columns(tfs, path: str, fmt: str) -> list[Column]:
    """The columns a self-describing data file declares, as Hive types."""
    import pyarrow as pa

    from acidctl.errors import InvalidInputError

    if fmt not in ("orc", "parquet", "avro"):
        raise UsageError("a text file needs its columns: --columns name:type,...")
    try:
        # the footer (ORC, Parquet) or header (Avro) only, never the whole file
        with tfs.open(path) as fh:
            if fmt == "orc":
                import pyarrow.orc as po

                schema = po.ORCFile(pa.PythonFile(fh, mode="r")).schema
            elif fmt == "parquet":
                import pyarrow.parquet as pq

                schema = pq.ParquetFile(pa.PythonFile(fh, mode="r")).schema_arrow
            else:
                from acidctl.formats.avrofile import stream_reader

                ws = stream_reader(fh).writer_schema
                return [Column(f["name"].lower(), hive_type_of_avro(f["type"])) for f in ws.get("fields", [])]
    except (UsageError, UnsupportedSchema):
        raise
    except Exception as e:
        raise InvalidInputError(f"{tfs.display(path)}: not a readable {fmt} file: {e}") from None
    return [Column(f.name.lower(), hive_type_of_arrow(f.type)) for f in schema]


def dump_plain(
    tfs,
    path: str,
    *,
    fmt: str,
    columns: list[Column] | None,
    properties: dict[str, str],
    limit_budget: list[int] | None = None,
    with_path: bool = False,
    select: list[str] | None = None,
) -> Iterator[bytes]:
    """JSON lines of one plain data file."""
    import pyarrow as pa

    from acidctl.orc.lines import SLICE_ROWS, json_literal, to_bytes
    from acidctl.formats.files import read_file
    from acidctl.formats.hivetypes import orc_struct
    from acidctl.formats.storage import Storage
    from acidctl.orc import render

    cols = columns or file_columns(tfs, path, fmt)
    want: list[str] = []
    if select:
        want = [c.lower() for c in select]
        missing = [c for c in select if c.lower() not in {x.name for x in cols}]
        if missing:
            raise UsageError(
                f"no such column in {tfs.display(path)}: {', '.join(missing)} "
                f"(columns: {', '.join(c.name for c in cols)})"
            )
    row_td = orc_struct(cols)
    t = read_file(tfs, path, Storage(fmt, dict(properties), source="--format"), row_td).table
    fields = list(row_td.fields.items())
    if select:
        keep = [i for i, (n, _) in enumerate(fields) if n in want]
        t = t.select(keep)
        fields = [fields[i] for i in keep]
    if limit_budget is not None:
        t = t.slice(0, max(limit_budget[0], 0))
        limit_budget[0] -= t.num_rows
    if t.num_rows == 0:
        return
    batch = pa.RecordBatch.from_arrays(
        [t.column(i).combine_chunks() for i in range(t.num_columns)], names=[n for n, _ in fields]
    )
    prefix: list[tuple[str, object]] | None = [("_path", json_literal(tfs.display(path)))] if with_path else None
    for off in range(0, batch.num_rows, SLICE_ROWS):
        yield to_bytes(render.render_batch(batch.slice(off, SLICE_ROWS), fields, prefix=prefix))


def dump_paths(
    settings,
    paths: list[str],
    *,
    file_format: str | None,
    columns: str | None,
    serde_property,
    limit: int | None,
    with_path: bool | None,
    framing: bool,
) -> Iterator[bytes]:
    """``dump --format FMT [--columns name:type,...] FILE|DIR...``: every data file under the paths
    (reader order, hidden names skipped) as JSON lines; text mode frames each file like FileDump."""
    from acidctl.acid.datafiles import list_data_files
    from acidctl.orc.lines import SEPARATOR
    from acidctl.errors import InvalidInputError
    from acidctl.formats.hivetypes import is_typed_spec, parse_columns
    from acidctl.formats.storage import offline
    from acidctl.mm.context import parse_serde_properties

    storage = offline(file_format or _guess(settings, paths), parse_serde_properties(serde_property))
    typed = parse_columns(columns) if is_typed_spec(columns) else None
    select = [c.strip() for c in columns.split(",") if c.strip()] if columns and not typed else None
    files: list[tuple[TableFS, str]] = []
    for p in paths:
        tfs = settings.table_fs(p)
        files.extend((tfs, f) for f in list_data_files(tfs, tfs.root))
    if not files:
        raise InvalidInputError(f"no data files under {', '.join(paths)}")
    show_path = len(files) > 1 if with_path is None else with_path
    budget = [limit] if limit is not None else None
    for tfs, f in files:
        if budget is not None and budget[0] <= 0:
            break
        yield from dump_plain(
            tfs,
            f,
            fmt=storage.format,
            columns=typed,
            properties=storage.properties,
            limit_budget=budget,
            with_path=show_path,
            select=select,
        )
        if framing:
            yield SEPARATOR


def _guess(settings, paths) -> str:
    raise UsageError("give --format orc|parquet|avro|text for --serde-property or typed --columns")


def fallback(tfs, path: str, opts, budget) -> Iterator[bytes] | None:
    """``dump FILE`` on a Parquet or Avro file (no --format): its rows with its own columns;
    None for anything else (the caller reports the file as not ORC)."""
    from acidctl.formats.files import sniff

    try:
        with tfs.open(path) as fh:
            head = fh.read(4)
    except Exception:
        return None
    fmt = sniff(head)
    if fmt not in ("parquet", "avro"):
        return None
    return dump_plain(
        tfs,
        path,
        fmt=fmt,
        columns=None,
        properties={},
        limit_budget=budget,
        with_path=opts.with_path,
        select=opts.columns,
    )
