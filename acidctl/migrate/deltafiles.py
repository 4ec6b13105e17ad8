"""Delta add actions for Parquet files written outside deltalake (``migrate --to delta --engine
spark``): where a partition's files go, its ``partitionValues`` strings, and each file's
statistics from its Parquet footer, as deltalake 1.6 writes them for its own files.

* **Partition values** (Delta PROTOCOL.md, "Partition Value Serialization"; delta-rs
  ``ScalarExt::serialize``, crates/core/src/kernel/scalars.rs): numbers as their decimal
  string (doubles without an exponent, the shortest that reads back), decimals with exactly
  their scale, dates ``YYYY-MM-DD``, timestamps (both kinds) ``YYYY-MM-DD HH:MM:SS.ffffff``,
  booleans ``true``/``false``, strings as they are; Hive's default partition is a null value.
  (deltalake 1.6 itself writes a negative decimal partition value wrongly:
  :func:`deltalake_misspells`; these are the protocol's ``-1.50``.)
* **Directories**: ``col=<value>/...`` in the table's partition column order, the value
  percent-encoded as delta-rs does (RFC 3986: everything but letters, digits and ``-._~``),
  ``__HIVE_DEFAULT_PARTITION__`` for a null; the log's ``path`` holds that relative path
  (deltalake URL-encodes it once more).
* **Statistics** (PROTOCOL.md, "Per-file Statistics"; delta-rs ``stats_from_metadata``,
  crates/core/src/writer/stats.rs): ``numRecords``; ``nullCount`` / ``minValues`` /
  ``maxValues`` of the first ``STATS_COLUMNS`` top-level columns (delta-rs's default
  ``delta.dataSkippingNumIndexedCols``), nested structs as nested objects, nothing for
  binary columns and for anything inside a list or map. Values: integers and booleans as they
  are, strings in full (pyarrow drops, never truncates, a chunk's statistics over 4 KiB: such a
  column gets no bounds), dates ``YYYY-MM-DD``, timestamps truncated down to milliseconds as
  the protocol says readers expect (``YYYY-MM-DD HH:MM:SS[.fff]``, and
  ``YYYY-MM-DDTHH:MM:SS[.fff]Z`` for a UTC ``timestamp``), decimals as JSON numbers. Stricter
  than deltalake where its bounds could mislead a reader: no bounds for float/double columns
  (Parquet statistics leave NaN out, Spark orders NaN above every number: a file holding NaN
  could be skipped), none for decimals of more than 15 digits (a double cannot hold them
  exactly), and none for a column when a row group has values but no statistics.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import urllib.parse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
#: delta-rs's default ``delta.dataSkippingNumIndexedCols``: statistics of the first 32 columns
STATS_COLUMNS = 32
#: decimals up to this precision round-trip through a JSON number (a double)
EXACT_DECIMAL_DIGITS = 15

_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_DAY = datetime.date(1970, 1, 1)


def partition_string(value: Any, t: pa.DataType) -> str | None:
    """A typed partition value as a Delta ``partitionValues`` string (None: null)."""
    import numpy as np
    import pyarrow.types as pt

    if value is None:
        return None
    if pt.is_boolean(t):
        return "true" if value else "false"
    if pt.is_integer(t):
        return str(int(value))
    if pt.is_floating(t):
        x = float(value)
        if math.isnan(x):
            return "NaN"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        v = np.float32(x) if pt.is_float32(t) else np.float64(x)
        return np.format_float_positional(v, unique=True, trim="-")
    if pt.is_decimal(t):
        d = decimal.Decimal(value).quantize(decimal.Decimal(1).scaleb(-t.scale))
        return format(d, "f")
    if pt.is_timestamp(t):
        ts = value
        if isinstance(ts, datetime.datetime) and ts.tzinfo is not None:
            ts = ts.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return f"{ts.year:04d}-{ts:%m-%d %H:%M:%S}.{ts.microsecond:06d}"
    if pt.is_date(t):
        return f"{value.year:04d}-{value:%m-%d}"
    return str(value)


def deltalake_misspells(value: Any, t: pa.DataType) -> bool:
    """Whether deltalake 1.6's writers spell this partition value wrongly: a negative decimal
    with a fractional part. Its serialisation of a decimal scalar prints the integer and the
    fractional part each with the sign (-1.50 → ``-1.-50``, -0.05 → ``0.-5``), in the
    directory name and in ``partitionValues``; ``write_deltalake`` and ``DeltaTable.merge``
    commit that, and the table's next load fails ("Kernel error: Failed to parse value
    '-1.-50' as 'decimal(5,2)'"): every later read and write of the table, not just the
    partition. Its reader parses the protocol's ``-1.50`` correctly (``DeltaTable.scan``,
    ``get_add_actions``, DataFusion queries), only ``DeltaTable.to_pyarrow_dataset`` /
    ``to_pyarrow_table`` re-serialise the value the same wrong way and fail. Integers,
    decimals of scale 0 and positive decimals are written right."""
    import pyarrow.types as pt

    if value is None or not pt.is_decimal(t) or t.scale <= 0:
        return False
    return decimal.Decimal(value) < 0


def partition_directory(values: dict[str, Any], columns: list[str], schema: pa.Schema) -> str:
    """``col=value/...`` (relative, no slash at either end; ``""`` unpartitioned)."""
    parts = []
    for c in columns:
        s = partition_string(values.get(c), schema.field(c).type)
        parts.append(f"{c}={NULL_PARTITION if s is None else urllib.parse.quote(s, safe='')}")
    return "/".join(parts)


def partition_strings(values: dict[str, Any], columns: list[str], schema: pa.Schema) -> dict[str, str | None]:
    return {c: partition_string(values.get(c), schema.field(c).type) for c in columns}


# -- statistics --------------------------------------------------------------------------------


def _leaf_type(schema: pa.Schema, path: list[str]) -> pa.DataType | None:
    """The Arrow type at a dotted Parquet path of struct fields (None: not plain structs)."""
    import pyarrow.types as pt

    try:
        t = schema.field(path[0]).type
        for name in path[1:]:
            if not pt.is_struct(t):
                return None
            t = t.field(name).type
        return t
    except KeyError:
        return None


def _ts_text(micros: int, utc: bool) -> str | None:
    """Truncated down to milliseconds; a value with a sub-second part keeps three digits
    (``.000`` too), a whole second none (deltalake 1.6's spelling)."""
    try:
        v = _EPOCH + datetime.timedelta(microseconds=micros)
    except OverflowError:
        return None
    frac = f".{v.microsecond // 1000:03d}" if v.microsecond else ""
    text = f"{v.year:04d}-{v:%m-%d}{'T' if utc else ' '}{v:%H:%M:%S}{frac}"
    return text + "Z" if utc else text


def _value(stat, use_min: bool, t: pa.DataType) -> Any:
    """A row group's bound as the stats JSON value; ``_SKIP`` where none may be given."""
    import pyarrow.types as pt

    raw = stat.min_raw if use_min else stat.max_raw
    if pt.is_boolean(t):
        return bool(raw)
    if pt.is_integer(t):
        return int(raw)
    if pt.is_string(t) or pt.is_large_string(t):
        v = stat.min if use_min else stat.max
        return v if isinstance(v, str) else _SKIP
    if pt.is_date(t):
        try:
            return (_EPOCH_DAY + datetime.timedelta(days=int(raw))).isoformat()
        except OverflowError:
            return _SKIP
    if pt.is_timestamp(t) and t.unit == "us":
        return _Ts(int(raw), t.tz is not None)
    if pt.is_decimal(t) and t.precision <= EXACT_DECIMAL_DIGITS:
        v = stat.min if use_min else stat.max
        return decimal.Decimal(v) if isinstance(v, (decimal.Decimal, int)) else _SKIP
    return _SKIP


class _Ts:
    """A timestamp bound (micros) kept as a number until it is rendered."""

    def __init__(self, micros: int, utc: bool):
        self.micros, self.utc = micros, utc

    def __lt__(self, other: _Ts) -> bool:
        return self.micros < other.micros


_SKIP = object()


def _json_value(v: Any, t: pa.DataType) -> Any:
    if isinstance(v, _Ts):
        return _ts_text(v.micros, v.utc)
    if isinstance(v, decimal.Decimal):
        return int(v) if t.scale == 0 else float(v)
    return v


def file_stats(metadata: Any, schema: pa.Schema) -> str:
    """The ``stats`` JSON of a data file from its Parquet footer (``pyarrow.parquet.FileMetaData``);
    ``schema``: the file's Arrow schema (the table's columns without the partition columns)."""
    import pyarrow.types as pt

    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    pschema = metadata.schema
    admitted: list[str] = []
    for i in range(metadata.num_columns):
        col = pschema.column(i)
        path = col.path.split(".")
        top = path[0]
        if top not in admitted:
            if len(admitted) >= STATS_COLUMNS:
                break
            admitted.append(top)
        if col.max_repetition_level > 0:
            continue  # inside a list or map
        t = _leaf_type(schema, path)
        if t is None or pt.is_binary(t) or pt.is_large_binary(t) or pt.is_fixed_size_binary(t):
            continue
        lo: Any = None
        hi: Any = None
        bounds = not pt.is_floating(t)
        null_count: int | None = 0
        for g in range(metadata.num_row_groups):
            stat = metadata.row_group(g).column(i).statistics
            if stat is None:
                bounds, null_count = False, None
                break
            if stat.has_null_count and null_count is not None:
                null_count += int(stat.null_count)
            else:
                null_count = None
            if not bounds:
                continue
            if not stat.has_min_max:
                if stat.num_values > 0:  # values, but no bounds (e.g. too long): none at all
                    bounds = False
                continue
            a, b = _value(stat, True, t), _value(stat, False, t)
            if a is _SKIP or b is _SKIP:
                bounds = False
                continue
            lo = a if lo is None or a < lo else lo
            hi = b if hi is None or hi < b else hi
        if null_count is None and not bounds:
            continue
        # nested columns: the intermediate objects exist in all three maps (as delta-rs writes)
        targets = []
        for m in (mins, maxs, nulls):
            for name in path[:-1]:
                m = m.setdefault(name, {})
            targets.append(m)
        leaf = path[-1]
        if bounds and lo is not None:
            lo_j, hi_j = _json_value(lo, t), _json_value(hi, t)
            if lo_j is not None and hi_j is not None:
                targets[0][leaf] = lo_j
                targets[1][leaf] = hi_j
        if null_count is not None:
            targets[2][leaf] = null_count
    stats = {"numRecords": int(metadata.num_rows), "minValues": mins, "maxValues": maxs, "nullCount": nulls}
    return json.dumps(stats, separators=(",", ":"), ensure_ascii=False)


def arrow_filesystem(uri: str, options: dict[str, str] | None = None) -> tuple[Any, str]:
    """(pyarrow filesystem, path in it) of a file of the target: ``s3://`` / ``s3a://`` with the
    Delta target's storage options (:func:`acidctl.migrate.delta.delta_storage_options`:
    endpoint, keys, region; what is not given the AWS SDK finds as usual), anything else by
    pyarrow from the URI (a local path, ``file://``)."""
    import pyarrow.fs as pafs

    scheme, sep, rest = uri.partition("://")
    if sep and scheme.lower() in ("s3", "s3a"):
        o = dict(options or {})
        kw: dict[str, Any] = {}
        endpoint = o.get("AWS_ENDPOINT_URL", "")
        if endpoint:
            ep_scheme, _, host = endpoint.partition("://")
            kw["endpoint_override"] = host.rstrip("/") if host else endpoint
            kw["scheme"] = ep_scheme if host else "https"
        if o.get("AWS_ACCESS_KEY_ID"):
            kw["access_key"] = o["AWS_ACCESS_KEY_ID"]
            kw["secret_key"] = o.get("AWS_SECRET_ACCESS_KEY")
            kw["session_token"] = o.get("AWS_SESSION_TOKEN")
        if o.get("AWS_REGION"):
            kw["region"] = o["AWS_REGION"]
        if str(o.get("AWS_SKIP_SIGNATURE", "")).lower() == "true":
            kw["anonymous"] = True
        return pafs.S3FileSystem(**kw), rest
    return pafs.FileSystem.from_uri(uri)


def add_action(
    path: str,
    relative: str,
    values: dict[str, Any],
    columns: list[str],
    schema: pa.Schema,
    file_schema: pa.Schema,
    options: dict[str, str] | None = None,
) -> tuple[Any, int]:
    """The ``AddAction`` of the data file at ``path`` (``relative`` to the table: as on disk,
    deltalake encodes it) and its row count: size and modification time from the filesystem,
    statistics from the footer."""
    import pyarrow.parquet as pq
    from deltalake.transaction import AddAction

    fs, where = arrow_filesystem(path, options)
    info = fs.get_file_info(where)
    with fs.open_input_file(where) as f:
        md = pq.ParquetFile(f).metadata
    mtime = info.mtime_ns // 1_000_000 if info.mtime_ns is not None else 0
    return (
        AddAction(
            path=relative,
            size=int(info.size),
            partition_values=partition_strings(values, columns, schema),
            modification_time=int(mtime),
            data_change=True,
            stats=file_stats(md, file_schema),
        ),
        int(md.num_rows),
    )
