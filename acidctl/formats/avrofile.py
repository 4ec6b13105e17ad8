"""Avro container files of insert-only tables, through fastavro (a maintained, widely used
Avro implementation; pyarrow has no Avro reader).

Reading maps the records' fields to the table's columns by name (case-insensitively, as Hive's
AvroSerDe resolves them). Writing uses, in this order, the table's ``avro.schema.literal``, the
writer schema of the files being compacted, or a schema derived from the columns (every field a
``["null", T]`` union, as Hive's ``TypeInfoToSchema`` makes them nullable). Timestamps are
``timestamp-millis`` longs taken as UTC wall-clock time both ways (derived), so a compaction
rewrites the same longs it read.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from typing import Any

from acidctl.errors import InvalidInputError, UnsupportedSchema


def _reader(data: bytes):
    import fastavro

    try:
        return fastavro.reader(io.BytesIO(data))
    except Exception as e:
        raise InvalidInputError(f"not a readable Avro file: {e}") from None


def file_info(data: bytes) -> dict:
    """``{"codec", "schema"}`` of a container file's header."""
    r = _reader(data)
    return {"codec": r.codec, "schema": r.writer_schema}


def read(data: bytes, row_td) -> "object":
    """An Arrow table of the table's columns (``row_td``: pyorc struct type)."""
    r = _reader(data)
    try:
        records = list(r)
    except Exception as e:
        raise InvalidInputError(f"not a readable Avro file: {e}") from None
    return records_table(records, row_td)


def stream_reader(fh):
    """A fastavro reader over an open file (records decoded lazily)."""
    import fastavro

    try:
        return fastavro.reader(fh)
    except Exception as e:
        raise InvalidInputError(f"not a readable Avro file: {e}") from None


def iter_tables(fh, row_td, batch_rows: int):
    """The records of an open container file as Arrow tables of at most ``batch_rows`` rows."""
    r = stream_reader(fh)
    batch: list = []
    try:
        for rec in r:
            batch.append(rec)
            if len(batch) >= batch_rows:
                yield records_table(batch, row_td)
                batch = []
    except InvalidInputError:
        raise
    except Exception as e:
        raise InvalidInputError(f"not a readable Avro file: {e}") from None
    if batch:
        yield records_table(batch, row_td)


def records_table(records: list, row_td) -> "object":
    """Decoded Avro records as an Arrow table of the table's columns (matched by name,
    case-insensitively, on the first record's keys: one file has one writer schema)."""
    import pyarrow as pa

    from acidctl.formats.hivetypes import arrow_type

    fields = list(row_td.fields.items())
    arrays = []
    for name, td in fields:
        key = None
        if records:
            low = {k.lower(): k for k in records[0]}
            key = low.get(name.lower())
        vals = [_to_arrow_value(rec.get(key) if key is not None else None, td) for rec in records]
        arrays.append(pa.array(vals, arrow_type(td, where=name)))
    return pa.Table.from_arrays(arrays, names=[n for n, _ in fields])


def _to_arrow_value(v, td):
    if v is None:
        return None
    k = td.kind.name
    if k == "TIMESTAMP":
        if isinstance(v, dt.datetime):
            if v.tzinfo is not None:
                v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
            return v
        return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=int(v))
    if k == "DATE" and isinstance(v, int):
        return dt.date(1970, 1, 1) + dt.timedelta(days=v)
    if k == "LIST":
        return [_to_arrow_value(x, td.type) for x in v]
    if k == "MAP":
        return [(a, _to_arrow_value(b, td.value)) for a, b in v.items()]
    if k == "STRUCT":
        low = {kk.lower(): kk for kk in v}
        return {n: _to_arrow_value(v.get(low.get(n.lower(), n)), t) for n, t in td.fields.items()}
    if k in ("CHAR",) and isinstance(v, str) and td.max_length:
        return v[: td.max_length].rstrip(" ")
    return v


# -- writing ------------------------------------------------------------------------------


def derived_schema(row_td, name: str = "baseRecord") -> dict:
    return {
        "type": "record",
        "name": name,
        "namespace": "",
        "fields": [
            {"name": n, "type": ["null", _avro_type(t, f"{name}_{n}")], "default": None}
            for n, t in row_td.fields.items()
        ],
    }


def _avro_type(td, name: str):
    k = td.kind.name
    simple = {
        "BOOLEAN": "boolean",
        "BYTE": "int",
        "SHORT": "int",
        "INT": "int",
        "LONG": "long",
        "FLOAT": "float",
        "DOUBLE": "double",
        "STRING": "string",
        "BINARY": "bytes",
    }
    if k in simple:
        return simple[k]
    if k in ("VARCHAR", "CHAR"):
        return {"type": "string", "logicalType": k.lower(), "maxLength": td.max_length}
    if k == "DATE":
        return {"type": "int", "logicalType": "date"}
    if k == "TIMESTAMP":
        return {"type": "long", "logicalType": "timestamp-millis"}
    if k == "DECIMAL":
        return {"type": "bytes", "logicalType": "decimal", "precision": td.precision, "scale": td.scale}
    if k == "LIST":
        return {"type": "array", "items": ["null", _avro_type(td.type, name + "_item")]}
    if k == "MAP":
        return {"type": "map", "values": ["null", _avro_type(td.value, name + "_value")]}
    if k == "STRUCT":
        return {
            "type": "record",
            "name": name,
            "fields": [
                {"name": n, "type": ["null", _avro_type(t, f"{name}_{n}")], "default": None}
                for n, t in td.fields.items()
            ],
        }
    raise UnsupportedSchema(f"type {td} cannot be written to Avro")


def _parsed_schema(row_td, schema: dict | str | None) -> tuple[dict, Any]:
    import fastavro

    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except ValueError as e:
            raise UnsupportedSchema(f"the Avro schema (avro.schema.literal) is not JSON: {e}") from None
    if schema is None:
        schema = derived_schema(row_td)
    if not isinstance(schema, dict):
        raise UnsupportedSchema(f"the Avro schema must be a record (a JSON object), got {type(schema).__name__}")
    return schema, fastavro.parse_schema(schema)


def _records(table, row_td, schema: dict):
    import pyarrow as pa

    names = [f["name"] for f in schema.get("fields", [])]
    by_lower = {n.lower(): n for n in names}
    fields = list(row_td.fields.items())
    cols = []
    for i, (n, td) in enumerate(fields):
        col = table.column(i)
        if td.kind.name == "TIMESTAMP":
            col = col.cast(pa.timestamp("us"))
        cols.append(col.to_pylist())
    for r in range(table.num_rows):
        rec = {}
        for i, (n, td) in enumerate(fields):
            rec[by_lower.get(n.lower(), n)] = _to_avro_value(cols[i][r], td)
        yield rec


def write(table, row_td, *, schema: dict | str | None, codec: str | None) -> bytes:
    import fastavro

    schema, parsed = _parsed_schema(row_td, schema)
    buf = io.BytesIO()
    fastavro.writer(buf, parsed, list(_records(table, row_td, schema)), codec=codec or "null")
    return buf.getvalue()


class StreamWriter:
    """:func:`write` a table at a time into an open file: one fastavro ``Writer``, so the
    container is what ``fastavro.writer`` writes for all the records (its blocks are cut by
    size, not by call)."""

    def __init__(self, fh, row_td, *, schema: dict | str | None, codec: str | None):
        from fastavro.write import Writer

        self.row_td = row_td
        self.schema, parsed = _parsed_schema(row_td, schema)
        self._w = Writer(fh, parsed, codec=codec or "null")

    def write(self, table) -> None:
        for rec in _records(table, self.row_td, self.schema):
            self._w.write(rec)

    def close(self) -> None:
        self._w.flush()


def _to_avro_value(v, td):
    if v is None:
        return None
    k = td.kind.name
    if k == "TIMESTAMP":
        if isinstance(v, dt.datetime) and v.tzinfo is None:
            return v.replace(tzinfo=dt.timezone.utc)
        return v
    if k == "LIST":
        return [_to_avro_value(x, td.type) for x in v]
    if k == "MAP":
        return {a: _to_avro_value(b, td.value) for a, b in (v.items() if isinstance(v, dict) else v)}
    if k == "STRUCT":
        return {n: _to_avro_value(v.get(n), t) for n, t in td.fields.items()}
    if k in ("BYTE", "SHORT"):
        return int(v)
    return v
