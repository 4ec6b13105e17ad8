"""Hive's LazySimpleSerDe text rows (``STORED AS TEXTFILE``), read and written byte for byte by
its rules (../shared/spec/insert-only-and-hive2.md A.8; apache/hive ``LazySerDeParameters``,
``LazyUtils.writeEscaped`` / ``copyAndEscapeStringDataToText`` / ``getByte``, ``LazyStruct``).

Written by hand, not with ``pyarrow.csv``: Hive compares the NULL marker with the field's *raw*
bytes before unescaping (``\\N`` is NULL, the escaped ``\\\\N`` is the string ``\\N``), unescapes
``<esc>r`` / ``<esc>n`` to CR / LF, pads missing trailing fields with NULL and ignores extra ones,
turns unparsable numbers into NULL instead of failing, and nests collections with 8 levels of
separators — none of which a CSV reader expresses. Rows are handled in Python, one at a time.

Separators: level 0 = fields (``field.delim``, else ``serialization.format``, default 0x01),
1 = collection items (``collection.delim``, 0x02), 2 = map keys (``mapkey.delim``, 0x03),
3..7 = 0x04..0x08. A value at level L: an array splits its items with separator L (items at
L+1), a struct its fields with L (fields at L+1), a map its entries with L and key from value
with L+1 (both at L+2). Top-level columns are at level 1.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime as dt
import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from acidctl.errors import RefusedError, UnsupportedSchema, UsageError

DEFAULT_SEPARATORS = bytes([1, 2, 3, 4, 5, 6, 7, 8])
DEFAULT_NULL = b"\\N"


class NullMarkerValue(RefusedError):
    """A non-NULL string whose text form is the NULL marker (it would come back as NULL)."""


def get_byte(value: str | None, default: int) -> int:
    """``LazyUtils.getByte``: a decimal byte (``'9'`` is TAB, ``'-1'`` is 0xFF), else the first
    character."""
    if value is None or value == "":
        return default
    try:
        n = int(value, 10)
        if -128 <= n <= 127 and value.strip() == value:
            return n & 0xFF
    except ValueError:
        pass
    return ord(value[0]) & 0xFF


@dataclasses.dataclass(frozen=True)
class TextParams:
    separators: bytes = DEFAULT_SEPARATORS
    null: bytes = DEFAULT_NULL
    escape: int | None = None  # escape byte, only when escape.delim is set
    escape_crlf: bool = False
    header_lines: int = 0
    footer_lines: int = 0

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> "TextParams":
        seps = bytearray(DEFAULT_SEPARATORS)
        fd = props.get("field.delim")
        seps[0] = get_byte(fd if fd not in (None, "") else props.get("serialization.format"), 1)
        seps[1] = get_byte(props.get("collection.delim"), 2)
        seps[2] = get_byte(props.get("mapkey.delim"), 3)
        line = props.get("line.delim")
        if line not in (None, "", "\n") and get_byte(line, 10) != 10:
            raise UsageError(f"line.delim {line!r} is not supported (Hive accepts only newline)")
        for key in ("hive.serialization.extend.nesting.levels", "hive.serialization.extend.additional.nesting.levels"):
            if props.get(key, "").strip().lower() == "true":
                raise UnsupportedSchema(f"{key}=true is not supported (acidctl reads 8 separator levels)")
        esc = props.get("escape.delim")
        null = props.get("serialization.null.format")
        return cls(
            separators=bytes(seps),
            null=DEFAULT_NULL if null is None else null.encode("utf-8"),
            escape=get_byte(esc, ord("\\")) if esc not in (None, "") else None,
            escape_crlf=props.get("serialization.escape.crlf", "").strip().lower() == "true",
            header_lines=_count(props.get("skip.header.line.count")),
            footer_lines=_count(props.get("skip.footer.line.count")),
        )

    def needs_escape(self) -> bytes:
        """The bytes written with the escape byte in front (all separators and the escape byte;
        CR and LF too with ``serialization.escape.crlf``)."""
        if self.escape is None:
            return b""
        s = set(self.separators) | {self.escape}
        if self.escape_crlf:
            s |= {10, 13}
        return bytes(sorted(s))


def _count(v: str | None) -> int:
    try:
        return max(0, int(v)) if v not in (None, "") else 0
    except ValueError:
        return 0


# -- reading ------------------------------------------------------------------------------


def split_lines(data: bytes) -> list[bytes]:
    """``LineRecordReader`` without a custom delimiter: a record ends at LF, CR or CR LF; a final
    record without terminator counts, an empty tail does not."""
    if not data:
        return []
    lines = re.split(rb"\r\n|\r|\n", data)
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _split(raw: bytes, sep: int, esc: int | None) -> list[bytes]:
    if esc is None or esc not in raw:
        return raw.split(bytes([sep]))
    out, start, i, n = [], 0, 0, len(raw)
    while i < n:
        b = raw[i]
        if b == esc and i + 1 < n:
            i += 2
            continue
        if b == sep:
            out.append(raw[start:i])
            start = i + 1
        i += 1
    out.append(raw[start:])
    return out


def unescape(raw: bytes, esc: int | None) -> bytes:
    """``LazyUtils.copyAndEscapeStringDataToText``: ``<esc>r`` → CR, ``<esc>n`` → LF,
    ``<esc>x`` → x; a trailing lone escape byte stays."""
    if esc is None or esc not in raw:
        return raw
    out = bytearray()
    i, n = 0, len(raw)
    while i < n:
        b = raw[i]
        if b == esc and i < n - 1:
            i += 1
            c = raw[i]
            out.append(13 if c == 0x72 else 10 if c == 0x6E else c)
        else:
            out.append(b)
        i += 1
    return bytes(out)


_INT_RE = re.compile(rb"^[+-]?[0-9]+(\.[0-9]*)?$")
_FLOAT_RE = re.compile(r"^[+-]?(NaN|Infinity|(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?))[fFdD]?$")
_DATE_RE = re.compile(r"^([0-9]{1,4})-([0-9]{1,2})-([0-9]{1,2})(?:[ T].*)?$")
_TS_RE = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[ T]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?)?$")
_RANGES = {"BYTE": 8, "SHORT": 16, "INT": 32, "LONG": 64}
_B64 = re.compile(rb"^[A-Za-z0-9+/=\s]*$")
_EPOCH = dt.date(1970, 1, 1)


def _parse_primitive(raw: bytes, td, p: TextParams):
    kind = td.kind.name
    if kind in ("STRING", "VARCHAR", "CHAR"):
        s = unescape(raw, p.escape).decode("utf-8", "replace")
        if kind == "VARCHAR" and td.max_length and len(s) > td.max_length:
            s = s[: td.max_length]
        if kind == "CHAR":
            s = s[: td.max_length].rstrip(" ") if td.max_length else s.rstrip(" ")
        return s
    if kind in _RANGES:
        # LazyInteger/LazyLong: sign, digits, an ignored fraction; anything else or overflow → NULL
        if not _INT_RE.match(raw):
            return None
        v = int(raw.split(b".")[0])
        bits = _RANGES[kind]
        return v if -(1 << (bits - 1)) <= v < (1 << (bits - 1)) else None
    if kind == "BOOLEAN":
        low = raw.lower()
        return True if low == b"true" else False if low == b"false" else None
    if kind in ("FLOAT", "DOUBLE"):
        text = raw.decode("utf-8", "replace").strip()
        if not _FLOAT_RE.match(text):
            return None
        return float(text.rstrip("fFdD"))
    if kind == "DECIMAL":
        try:
            d = Decimal(raw.decode("ascii").strip())
        except (InvalidOperation, UnicodeDecodeError):
            return None
        if not d.is_finite():
            return None
        d = d.quantize(Decimal(1).scaleb(-td.scale), rounding=ROUND_HALF_UP)
        digits, exponent = d.as_tuple().digits, d.as_tuple().exponent
        if not isinstance(exponent, int):  # only NaN/Infinity have a letter exponent: excluded above
            return None
        if len(digits) - max(0, -exponent) > td.precision - td.scale and d != 0:
            return None
        return d
    if kind == "DATE":
        m = _DATE_RE.match(raw.decode("utf-8", "replace").strip())
        if not m:
            return None
        y, mo, da = (int(g) for g in m.groups()[:3])
        try:  # a lenient resolver: 2020-02-30 rolls over into March
            return dt.date(y, 1, 1) + _months_days(y, mo, da)
        except (ValueError, OverflowError):
            return None
    if kind == "TIMESTAMP":
        m = _TS_RE.match(raw.decode("utf-8", "replace").strip())
        if not m:
            return None
        y, mo, da = int(m.group(1)), int(m.group(2)), int(m.group(3))
        try:
            day = dt.date(y, mo, da)
            hh, mi, ss = (int(m.group(i) or 0) for i in (4, 5, 6))
            if hh > 23 or mi > 59 or ss > 59:
                return None
        except ValueError:
            return None
        nanos = int((m.group(7) or "").ljust(9, "0") or 0)
        return ((day - _EPOCH).days * 86400 + hh * 3600 + mi * 60 + ss) * 1_000_000_000 + nanos
    if kind == "BINARY":
        # LazyBinary: Base64 when every byte is in the Base64 alphabet, else the raw bytes
        if _B64.match(raw):
            try:
                compact = re.sub(rb"\s", b"", raw)
                return base64.b64decode(compact + b"=" * (-len(compact) % 4))
            except (binascii.Error, ValueError):
                return raw
        return raw
    raise UnsupportedSchema(f"type {td} is not supported in text tables")


def _months_days(y: int, mo: int, da: int) -> dt.timedelta:
    first = dt.date(y + (mo - 1) // 12, (mo - 1) % 12 + 1, 1)
    return (first - dt.date(y, 1, 1)) + dt.timedelta(days=da - 1)


def parse_value(raw: bytes, td, level: int, p: TextParams):
    if raw == p.null:
        return None
    kind = td.kind.name
    if kind == "LIST":
        if raw == b"":
            return []
        return [parse_value(x, td.type, level + 1, p) for x in _split(raw, p.separators[level], p.escape)]
    if kind == "MAP":
        if raw == b"":
            return []
        out = []
        for entry in _split(raw, p.separators[level], p.escape):
            kv = _split(entry, p.separators[level + 1], p.escape)
            k = parse_value(kv[0], td.key, level + 2, p)
            if k is None:
                continue  # Arrow maps have no NULL keys (Hive drops them on write as well)
            v = parse_value(kv[1], td.value, level + 2, p) if len(kv) > 1 else None
            out.append((k, v))
        return out
    if kind == "STRUCT":
        names = list(td.fields)
        parts = _split(raw, p.separators[level], p.escape)
        return {
            n: (parse_value(parts[i], t, level + 1, p) if i < len(parts) else None)
            for i, (n, t) in enumerate(td.fields.items())
            if n in names
        }
    return _parse_primitive(raw, td, p)


def read_rows(data: bytes, row_td, p: TextParams) -> list[list]:
    """Column-major values of every row (``row_td``: the table's ``struct<...>`` type)."""
    lines = split_lines(data)
    if p.header_lines:
        lines = lines[p.header_lines :]
    if p.footer_lines:
        lines = lines[: -p.footer_lines] if p.footer_lines < len(lines) else []
    fields = list(row_td.fields.items())
    cols: list[list] = [[] for _ in fields]
    sep0 = p.separators[0]
    for line in lines:
        parts = _split(line, sep0, p.escape)
        for i, (_, td) in enumerate(fields):
            cols[i].append(parse_value(parts[i], td, 1, p) if i < len(parts) else None)
    return cols


def to_arrow(cols: list[list], row_td):
    """Column values → an Arrow table of the table's types (timestamps as epoch nanoseconds)."""
    import pyarrow as pa

    from acidctl.formats.hivetypes import arrow_type

    arrays, names = [], []
    for (name, td), values in zip(row_td.fields.items(), cols):
        t = arrow_type(td, where=name)
        if td.kind.name == "TIMESTAMP":
            for v in values:
                if v is not None and not (-(1 << 63) <= v < (1 << 63)):
                    raise UnsupportedSchema(f"column {name}: timestamp outside 1677..2262 cannot be read")
            arrays.append(pa.array(values, pa.int64()).cast(t))
        else:
            arrays.append(pa.array(_nested_ts(values, td), t))
        names.append(name)
    return pa.Table.from_arrays(arrays, names=names)


def _nested_ts(values, td):
    """Nanosecond ints inside nested types become numpy datetime64[ns] values, which Arrow
    accepts without losing nanoseconds."""
    if not _has_ts(td) or td.kind.name == "TIMESTAMP":
        return values
    return [_conv(v, td) for v in values]


def _has_ts(td) -> bool:
    k = td.kind.name
    if k == "TIMESTAMP":
        return True
    if k == "LIST":
        return _has_ts(td.type)
    if k == "MAP":
        return _has_ts(td.key) or _has_ts(td.value)
    if k == "STRUCT":
        return any(_has_ts(t) for t in td.fields.values())
    return False


def _conv(v, td):
    if v is None:
        return None
    k = td.kind.name
    if k == "TIMESTAMP":
        import numpy as np

        return np.datetime64(v, "ns")
    if k == "LIST":
        return [_conv(x, td.type) for x in v]
    if k == "MAP":
        return [(_conv(a, td.key), _conv(b, td.value)) for a, b in v]
    if k == "STRUCT":
        return {n: _conv(v.get(n), t) for n, t in td.fields.items()}
    return v


# -- writing ------------------------------------------------------------------------------


def write_escaped(data: bytes, p: TextParams, needs: bytes) -> bytes:
    """``LazyUtils.writeEscaped``: the escape byte before every byte that needs it; CR and LF
    (when they need it) become ``<esc>r`` / ``<esc>n``."""
    if p.escape is None or not any(b in data for b in needs):
        return data
    out = bytearray()
    for b in data:
        if b in needs:
            out.append(p.escape)
            out.append(0x72 if b == 13 else 0x6E if b == 10 else b)
        else:
            out.append(b)
    return bytes(out)


def java_float_to_string(x: float) -> str:
    """``Float.toString`` (via the shortest decimal that rounds to the float32, laid out with
    Java's plain/E-notation rules)."""
    import numpy as np

    from acidctl.orc.javafmt_double import _get_chars

    f = np.float32(x)
    if np.isnan(f):
        return "NaN"
    if np.isinf(f):
        return "-Infinity" if f < 0 else "Infinity"
    if f == 0:
        return "-0.0" if np.signbit(f) else "0.0"
    sci = np.format_float_scientific(abs(f), unique=True, trim="-")
    mant, _, exp = sci.partition("e")
    digits = [int(c) for c in mant.replace(".", "")]
    while len(digits) > 1 and digits[-1] == 0:
        digits.pop()
    return _get_chars(bool(np.signbit(f)), digits, int(exp) + 1)


def _format_primitive(v, td, p: TextParams, needs: bytes) -> bytes:
    from acidctl.orc.javafmt_double import java_double_to_string

    kind = td.kind.name
    if kind in ("STRING", "VARCHAR", "CHAR"):
        s = v
        if kind == "CHAR" and td.max_length:
            s = s.ljust(td.max_length)  # HiveCharWritable.getPaddedValue
        out = write_escaped(s.encode("utf-8"), p, needs)
        if out == p.null:
            # Hive writes it the same way, and every reader then sees NULL: refuse instead
            raise NullMarkerValue(
                f"the string {s!r} equals the table's NULL marker and has no byte to escape: "
                "written back it would read as NULL (Hive's own compaction turns it into NULL)"
            )
        return out
    if kind == "BOOLEAN":
        return b"true" if v else b"false"
    if kind in _RANGES:
        return str(int(v)).encode()
    if kind == "DOUBLE":
        return java_double_to_string(float(v)).encode()
    if kind == "FLOAT":
        return java_float_to_string(float(v)).encode()
    if kind == "DECIMAL":
        # LazyHiveDecimal.writeUTF8(out, dec, scale): padded with trailing zeros to the column's scale
        d = Decimal(v).quantize(Decimal(1).scaleb(-td.scale), rounding=ROUND_HALF_UP)
        text = format(d, "f")
        return text.encode()
    if kind == "DATE":
        return f"{v.year:04d}-{v.month:02d}-{v.day:02d}".encode()
    if kind == "TIMESTAMP":
        return format_timestamp_ns(int(v)).encode()
    if kind == "BINARY":
        return base64.b64encode(bytes(v))
    raise UnsupportedSchema(f"type {td} is not supported in text tables")


def format_timestamp_ns(ns: int) -> str:
    """Hive 3 ``Timestamp.toString``: ``yyyy-MM-dd HH:mm:ss`` plus ``.fffffffff`` without trailing
    zeros when the nanoseconds are not 0."""
    secs, nanos = divmod(ns, 1_000_000_000)
    days, rem = divmod(secs, 86400)
    d = _EPOCH + dt.timedelta(days=days)
    text = f"{d.year:04d}-{d.month:02d}-{d.day:02d} {rem // 3600:02d}:{rem % 3600 // 60:02d}:{rem % 60:02d}"
    if nanos:
        text += "." + f"{nanos:09d}".rstrip("0")
    return text


def format_value(v, td, level: int, p: TextParams, needs: bytes) -> bytes:
    if v is None:
        return p.null
    kind = td.kind.name
    if kind == "LIST":
        sep = bytes([p.separators[level]])
        return sep.join(format_value(x, td.type, level + 1, p, needs) for x in v)
    if kind == "MAP":
        sep, kv = bytes([p.separators[level]]), bytes([p.separators[level + 1]])
        items = v.items() if isinstance(v, dict) else v
        return sep.join(
            format_value(a, td.key, level + 2, p, needs) + kv + format_value(b, td.value, level + 2, p, needs)
            for a, b in items
        )
    if kind == "STRUCT":
        sep = bytes([p.separators[level]])
        return sep.join(format_value(v.get(n), t, level + 1, p, needs) for n, t in td.fields.items())
    return _format_primitive(v, td, p, needs)


def write_rows(table, row_td, p: TextParams) -> bytes:
    """An Arrow table (the table's columns) as LazySimpleSerDe text, one ``\\n``-terminated line
    per row."""
    import pyarrow as pa

    needs = p.needs_escape()
    sep0 = bytes([p.separators[0]])
    fields = list(row_td.fields.items())
    cols = []
    for i, (_, td) in enumerate(fields):
        col = table.column(i)
        if td.kind.name == "TIMESTAMP":
            cols.append(col.cast(pa.int64()).to_pylist())
        else:
            cols.append(col.to_pylist())
    out = bytearray()
    for r in range(table.num_rows):
        out += sep0.join(
            format_value(_nested_back(cols[i][r], td), td, 1, p, needs) for i, (_, td) in enumerate(fields)
        )
        out += b"\n"
    return bytes(out)


def _nested_back(v, td):
    """Nested timestamps come back from Arrow as datetimes; the formatter wants nanoseconds."""
    if v is None or not _has_ts(td) or td.kind.name == "TIMESTAMP":
        return v
    k = td.kind.name
    if k == "LIST":
        return [_ts_ns(x, td.type) for x in v]
    if k == "MAP":
        return [(_ts_ns(a, td.key), _ts_ns(b, td.value)) for a, b in v]
    if k == "STRUCT":
        return {n: _ts_ns(v.get(n), t) for n, t in td.fields.items()}
    return v


def _ts_ns(v, td):
    if v is None:
        return None
    if td.kind.name == "TIMESTAMP":
        if hasattr(v, "value"):  # pandas.Timestamp
            return int(v.value)
        delta = v - dt.datetime(1970, 1, 1)
        return (delta.days * 86400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    return _nested_back(v, td)
