"""Hive → Arrow types of a migration target (Iceberg / Delta), and the conversion of the merged
snapshot's rows (acidctl's in-memory Arrow types, :mod:`acidctl.formats.hivetypes`) into them.

| Hive | target (Arrow) | note |
|---|---|---|
| boolean, int, bigint, float, double, string, binary, date | the same | |
| tinyint, smallint | int32 | Iceberg has no 8/16-bit ints (Delta keeps them: ``small_ints``) |
| char(n), varchar(n) | string | the value as Hive stores it (char keeps its padding) |
| decimal(p,s) | decimal128(p,s) | |
| timestamp | timestamp[us] (no zone) | Hive carries nanoseconds, Iceberg v2 / pyiceberg / Delta microseconds: a value with a sub-microsecond part refuses naming its column unless ``--timestamp-precision us`` truncates (checked on every value: the cast is a safe one) |
| struct, array, map | struct, list, map | converted field by field |
| uniontype | refused | no Iceberg/Delta equivalent |

``row__id`` struct<writeid:int64, bucketid:int32, rowid:int64> is the first column unless
``--no-row-id``; partition columns follow the table's columns, typed per the metastore
(strings when the table is a path).
"""

from __future__ import annotations

import datetime
import decimal
from typing import TYPE_CHECKING, Any

from acidctl.errors import InvalidInputError, UnsupportedSchema, UsageError

if TYPE_CHECKING:
    import pyarrow as pa

ROW_ID = "row__id"
ROW_ID_FIELDS = (("writeid", "int64"), ("bucketid", "int32"), ("rowid", "int64"))
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
PRECISIONS = ("error", "us")


def row_id_type() -> pa.DataType:
    import pyarrow as pa

    return pa.struct([pa.field(n, getattr(pa, t)()) for n, t in ROW_ID_FIELDS])


def hive_arrow_type(hive_type: str, *, where: str) -> pa.DataType:
    """A Hive type string (COLUMNS_V2 / PARTITION_KEYS) as acidctl's in-memory Arrow type."""
    import pyorc

    from acidctl.formats.hivetypes import arrow_type

    try:
        td = pyorc.TypeDescription.from_string(hive_type.strip().lower())
    except Exception as e:
        raise UnsupportedSchema(f"column {where}: cannot parse Hive type {hive_type!r}: {e}") from None
    if getattr(td.kind, "name", None) == "UNION":
        raise UnsupportedSchema(f"column {where}: uniontype has no Iceberg/Delta equivalent")
    return arrow_type(td, where=where)


def target_type(t: pa.DataType, *, where: str, small_ints: bool = False) -> pa.DataType:
    """The target format's type for acidctl's in-memory Arrow type ``t``."""
    import pyarrow as pa
    import pyarrow.types as pt

    if pt.is_int8(t) or pt.is_int16(t):
        return t if small_ints else pa.int32()
    if pt.is_timestamp(t):
        return pa.timestamp("us")
    if pt.is_large_string(t) or pt.is_string(t):
        return pa.string()
    if pt.is_large_binary(t) or pt.is_binary(t) or pt.is_fixed_size_binary(t):
        return pa.binary()
    if pt.is_struct(t):
        return pa.struct(
            [
                pa.field(t.field(i).name.lower(), target_type(t.field(i).type, where=where, small_ints=small_ints))
                for i in range(t.num_fields)
            ]
        )
    if pt.is_map(t):
        return pa.map_(
            target_type(t.key_type, where=where, small_ints=small_ints),
            target_type(t.item_type, where=where, small_ints=small_ints),
        )
    if pt.is_list(t) or pt.is_large_list(t):
        return pa.list_(target_type(t.value_type, where=where, small_ints=small_ints))
    if pt.is_union(t) or pt.is_dictionary(t):
        raise UnsupportedSchema(f"column {where}: type {t} has no Iceberg/Delta equivalent")
    return t


def target_schema(
    columns: list[tuple[str, pa.DataType]],
    partition_keys: list[tuple[str, pa.DataType]],
    *,
    row_id: bool,
    small_ints: bool = False,
) -> pa.Schema:
    """``row__id`` (unless ``row_id`` is false), the table's columns, the partition columns."""
    import pyarrow as pa

    fields = [pa.field(ROW_ID, row_id_type())] if row_id else []
    names = set()
    for name, t in list(columns) + list(partition_keys):
        name = name.lower()
        if name in names or name == ROW_ID:
            raise UnsupportedSchema(f"column {name} appears twice (a partition column named like a column?)")
        names.add(name)
        fields.append(pa.field(name, target_type(t, where=name, small_ints=small_ints)))
    return pa.schema(fields)


def convert_column(arr, t: pa.DataType, *, where: str, timestamp_precision: str = "error"):
    """``arr`` cast to the target type ``t``: a safe cast (so a timestamp with a sub-microsecond
    part raises), which with ``timestamp_precision="us"`` truncates instead."""
    import pyarrow as pa

    if arr.type.equals(t):
        return arr
    try:
        return arr.cast(t, safe=True)
    except pa.ArrowInvalid as e:
        if "would lose data" not in str(e) or not _has_timestamp(t):
            raise InvalidInputError(f"column {where}: cannot convert {arr.type} to {t}: {e}") from None
        if timestamp_precision != "us":
            raise InvalidInputError(
                f"column {where}: a timestamp has a sub-microsecond part, which Iceberg/Delta cannot hold",
                hint="give --timestamp-precision us to truncate to microseconds",
            ) from None
        return arr.cast(t, safe=False)


def _has_timestamp(t) -> bool:
    import pyarrow.types as pt

    if pt.is_timestamp(t):
        return True
    if pt.is_struct(t):
        return any(_has_timestamp(t.field(i).type) for i in range(t.num_fields))
    if pt.is_map(t):
        return _has_timestamp(t.key_type) or _has_timestamp(t.item_type)
    if pt.is_list(t) or pt.is_large_list(t):
        return _has_timestamp(t.value_type)
    return False


def check_precision(value: str | None) -> str:
    v = (value or "error").lower()
    if v not in PRECISIONS:
        raise UsageError(f"--timestamp-precision must be us (truncate to microseconds), not {value!r}")
    return v


def parse_partition_value(raw: str, t: pa.DataType | None, *, where: str) -> Any:
    """A partition directory's value (already unescaped) as the partition column's typed value;
    Hive's default partition is None."""
    import pyarrow.types as pt

    if raw == DEFAULT_PARTITION:
        return None
    if t is None or pt.is_string(t) or pt.is_large_string(t):
        return raw
    try:
        if pt.is_integer(t):
            return int(raw)
        if pt.is_floating(t):
            return float(raw)
        if pt.is_boolean(t):
            if raw.lower() not in ("true", "false"):
                raise ValueError(raw)
            return raw.lower() == "true"
        if pt.is_decimal(t):
            return decimal.Decimal(raw)
        if pt.is_date(t):
            return datetime.date.fromisoformat(raw)
        if pt.is_timestamp(t):
            return datetime.datetime.fromisoformat(raw)
    except ValueError:
        raise InvalidInputError(f"partition {where}: {raw!r} is not a {t}") from None
    return raw


def unescape_path_name(text: str) -> str:
    """Hive's FileUtils.unescapePathName: ``%XX`` → the character."""
    import re

    return re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), text)


def partition_values(rel: str | None, keys: list[tuple[str, pa.DataType]]) -> dict[str, Any]:
    """``k=v/k2=v2`` (a partition directory path relative to the table) → typed values per key.
    ``keys``: the partition columns in order (from the metastore, else strings from the path)."""
    if not rel:
        return {}
    types = {k.lower(): t for k, t in keys}
    out: dict[str, Any] = {}
    for part in rel.strip("/").split("/"):
        k, sep, v = part.partition("=")
        if not sep:
            raise InvalidInputError(f"partition directory {part!r} is not key=value")
        k = unescape_path_name(k).lower()
        out[k] = parse_partition_value(unescape_path_name(v), types.get(k), where=rel)
    return out


def partition_arrays(values: dict[str, Any], schema: pa.Schema, n: int) -> list:
    """Each partition column's value repeated ``n`` times, in the target type."""
    import pyarrow as pa

    out = []
    for k, v in values.items():
        t = schema.field(k).type
        out.append(pa.nulls(n, type=t) if v is None else pa.repeat(pa.scalar(v, type=t), n))
    return out
