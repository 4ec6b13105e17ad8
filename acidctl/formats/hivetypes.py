"""Hive column types (``COLUMNS_V2.TYPE_NAME``, or ``--columns name:type,...``) as ORC type
descriptions (for the FileDump-compatible renderer) and as Arrow types (for reading and writing).

pyorc parses Hive's type grammar (ORC's type strings are Hive's), so only the mapping to Arrow is
written here.
"""

from __future__ import annotations

import dataclasses
from typing import TypeGuard

from acidctl.errors import UnsupportedSchema, UsageError


@dataclasses.dataclass(frozen=True)
class Column:
    name: str  # lower-case, as Hive stores it
    type: str  # Hive type string, e.g. decimal(10,2), array<string>


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside ``<...>`` and ``(...)`` (types contain commas)."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [p.strip() for p in out if p.strip()]


def parse_columns(spec: str) -> list[Column]:
    """``id:int,name:string,amount:decimal(10,2)`` → columns (names lower-cased: Hive column
    names are case-insensitive)."""
    cols = []
    for item in split_top_level(spec):
        name, sep, typ = item.partition(":")
        if not sep or not name.strip() or not typ.strip():
            raise UsageError(f"--columns expects name:type,... (e.g. id:int,name:string), got {item!r}")
        cols.append(Column(name.strip().strip("`").lower(), typ.strip().lower()))
    if not cols:
        raise UsageError("--columns is empty")
    orc_struct(cols)  # validates every type
    return cols


def is_typed_spec(spec: str | None) -> TypeGuard[str]:
    """``--columns`` names types (``name:type,...``) rather than selecting columns."""
    return spec is not None and ":" in spec


def orc_struct(columns: list[Column]):
    """The table's row as a pyorc ``struct<...>`` type description."""
    import pyorc

    text = "struct<" + ",".join(f"{c.name}:{c.type}" for c in columns) + ">"
    try:
        td = pyorc.TypeDescription.from_string(text)
    except Exception as e:
        raise UnsupportedSchema(f"cannot parse the column types {text}: {e}") from None
    if not isinstance(td, pyorc.Struct):  # a struct<...> text parses to a Struct; narrows the type
        raise UnsupportedSchema(f"cannot parse the column types {text}: not a struct")
    for c, (_, t) in zip(columns, td.fields.items()):
        arrow_type(t, where=c.name)  # rejects unions and unknown kinds early
    return td


_PRIMITIVE = {
    "BOOLEAN": "bool_",
    "BYTE": "int8",
    "SHORT": "int16",
    "INT": "int32",
    "LONG": "int64",
    "FLOAT": "float32",
    "DOUBLE": "float64",
    "STRING": "string",
    "VARCHAR": "string",
    "CHAR": "string",
    "BINARY": "binary",
    "DATE": "date32",
}


def arrow_type(td, *, where: str = ""):
    """The Arrow type acidctl uses in memory for an ORC/Hive type."""
    import pyarrow as pa

    kind = td.kind.name
    if kind in _PRIMITIVE:
        return getattr(pa, _PRIMITIVE[kind])()
    if kind == "TIMESTAMP":
        return pa.timestamp("ns")
    if kind == "DECIMAL":
        return pa.decimal128(td.precision, td.scale)
    if kind == "LIST":
        return pa.list_(arrow_type(td.type, where=where))
    if kind == "MAP":
        return pa.map_(arrow_type(td.key, where=where), arrow_type(td.value, where=where))
    if kind == "STRUCT":
        return pa.struct([pa.field(n, arrow_type(t, where=where)) for n, t in td.fields.items()])
    raise UnsupportedSchema(f"column {where}: type {td} is not supported for insert-only tables")


def arrow_schema(columns: list[Column]):
    import pyarrow as pa

    td = orc_struct(columns)
    return pa.schema([pa.field(n, arrow_type(t, where=n)) for n, t in td.fields.items()])
