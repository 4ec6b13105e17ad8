"""FileDump-compatible JSON rendering of ORC rows, column at a time.

``render_batch`` turns an Arrow RecordBatch (one stripe, decoded by ORC C++ inside pyarrow)
into one JSON text per row, byte-identical to the row lines of ORC Java's FileDump ``-d``.
Every ORC type is rendered as a whole Arrow column with pyarrow.compute kernels (casts,
element-wise joins, list joins); only values that need Java-specific rules the kernels cannot
express (strings needing escapes, invalid UTF-8, pre-1582 dates, E-notation doubles) go through
the scalar rules in :mod:`acidctl.orc.javafmt`, and only those values. Row-at-a-time Python
(to_pylist + json.dumps) is an order of magnitude slower (bench/dump.py measures it).

``render_rows_python`` is the exact slow path over pyorc tuples, used for stripes Arrow cannot
represent (timestamps outside 1677..2262).
"""

from __future__ import annotations

import codecs
import collections
import threading

import pyarrow as pa
import pyarrow.compute as pc

from acidctl.orc import javafmt
from acidctl.orc.javafmt_double import format_double_array, java_double_to_string

_NULL = pa.scalar("null", pa.string())


def _kind(td) -> str:
    return td.kind.name


def _join(*parts) -> pa.Array:
    """Concatenate arrays and string literals element-wise (null if any array is null)."""
    return pc.binary_join_element_wise(*parts, "")


def _nullable(rendered: pa.Array, source: pa.Array) -> pa.Array:
    """Null where the source is null (rendered values under a null parent are garbage)."""
    if source.null_count == 0:
        return rendered
    return pc.if_else(pc.is_valid(source), rendered, pa.scalar(None, pa.string()))


def _filled(rendered: pa.Array) -> pa.Array:
    if rendered.null_count == 0:
        return rendered
    return pc.fill_null(rendered, _NULL)


def render_column(arr: pa.Array, td) -> pa.Array:
    """Render one column; nulls stay null (the caller prints them as ``null``)."""
    kind = _kind(td)
    fn = _RENDERERS.get(kind)
    if fn is None:
        raise NotImplementedError(f"ORC type {td} is not supported")
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return fn(arr, td)


def _r_int(arr, td):
    return pc.cast(arr, pa.string())


def _r_bool(arr, td):
    return pc.cast(arr, pa.string())


def _r_double(arr, td):
    if arr.type != pa.float64():
        arr = pc.cast(arr, pa.float64())
    return format_double_array(arr)


def _valid_utf8(arr: pa.Array) -> bool:
    try:
        arr.validate(full=True)
        return True
    except pa.ArrowInvalid:
        return False


#: the bytes of a UTF-8 string that may need a JSON escape: control bytes, '"', '\\' and 0xE2
#: (the lead byte of U+2028/U+2029)
_UNSAFE = bytes(range(0x20)) + b'"\\\xe2'
_SAFE = bytes(b for b in range(256) if b not in _UNSAFE)
#: FileDump's escapes (json.dumps, ensure_ascii off, plus U+2028/U+2029), backslash first
_ESCAPES = [("\\", "\\\\"), ('"', '\\"'), ("\b", "\\b"), ("\f", "\\f"), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t")]


def _data_window(arr: pa.Array) -> bytes:
    """The bytes of the (possibly sliced) string/binary array's values, back to back."""
    if len(arr) == 0:
        return b""
    bufs = arr.buffers()
    if bufs[2] is None:
        return b""
    import numpy as np

    offsets = np.frombuffer(bufs[1], dtype=np.int32 if arr.type in (pa.string(), pa.binary()) else np.int64)
    start, end = int(offsets[arr.offset]), int(offsets[arr.offset + len(arr)])
    return memoryview(bufs[2])[start:end].tobytes()


def _unsafe_bytes(arr: pa.Array, data: bytes | None = None) -> bytes:
    """The distinct bytes of the column's data (``data``: :func:`_data_window`, when known)
    that may need an escape (usually none). ``bytes.translate`` deletes every safe byte in one
    C pass: ~15× faster than numpy comparisons on wide strings (bench/dump.py)."""
    if data is None:
        data = _data_window(arr)
    return bytes(sorted(set(data.translate(None, _SAFE))))


def _may_need_escape(arr: pa.Array) -> bool:
    return bool(_unsafe_bytes(arr))


def _escape(arr: pa.Array, unsafe: bytes) -> pa.Array:
    """JSON escapes of the values that need them, with string kernels: one literal
    replacement pass per escape whose byte occurs (only over the values holding one)."""
    present = [chr(b) for b in unsafe if b != 0xE2]
    mask = _rows_holding(arr, unsafe)
    if mask is None and arr.type == pa.string():
        escaped = _escape_all(arr)
        if escaped is not None:
            return escaped
    if mask is None:
        probes = present + (["\u2028", "\u2029"] if 0xE2 in unsafe else [])
        for ch in probes:
            m = pc.match_substring(arr, ch)
            mask = m if mask is None else pc.or_(mask, m)
        mask = pc.fill_null(mask, False)
    if not pc.any(mask).as_py():
        return arr
    sub = pc.filter(arr, mask)
    for ch, rep in _ESCAPES:
        if ch in present:
            sub = pc.replace_substring(sub, ch, rep)
    for ch in present:
        if ord(ch) < 0x20 and ch not in "\b\f\n\r\t":
            sub = pc.replace_substring(sub, ch, "\\u%04x" % ord(ch))
    if 0xE2 in unsafe:
        sub = pc.replace_substring(sub, "\u2028", "\\u2028")
        sub = pc.replace_substring(sub, "\u2029", "\\u2029")
    return pc.replace_with_mask(arr, mask, sub)


#: bytes an escape adds for each byte value ('"' → '\\"': 1, '\x01' → '\\u0001': 5)
_ESCAPE_GROWTH = bytes(
    (1 if chr(b) in '"\\\b\f\n\r\t' else 5) if b < 0x20 or chr(b) in '"\\' else 0 for b in range(256)
)


def _escape_all(arr: pa.Array) -> pa.Array | None:
    """JSON escapes of a string column where they are common: the whole slice's text through
    Python's C JSON string encoder in one pass (the same escapes as ``json.dumps`` with
    ensure_ascii off, which FileDump's are, plus U+2028/U+2029), and the new value offsets
    from a per-byte growth table (numpy). One pass instead of one replacement kernel per
    escaped character (bench/dump.py, strings with escapes: 3x less CPU). None if the bytes
    do not decode (invalid UTF-8 left in a null slot): the caller uses the kernels."""
    import numpy as np
    from json.encoder import encode_basestring  # the C encoder when available

    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int32)[arr.offset : arr.offset + len(arr) + 1].astype(np.int64)
    base = int(offsets[0])
    data = memoryview(bufs[2])[base : int(offsets[-1])]
    raw = np.frombuffer(data, dtype=np.uint8)
    growth = np.frombuffer(_ESCAPE_GROWTH, dtype=np.uint8)[raw].astype(np.int64)
    try:
        text = encode_basestring(bytes(data).decode("utf-8"))[1:-1]
    except UnicodeDecodeError:
        return None
    lead = np.flatnonzero(raw[:-2] == 0xE2)
    if len(lead):  # U+2028 / U+2029 (E2 80 A8 / A9) become 6 characters
        seps = lead[(raw[lead + 1] == 0x80) & ((raw[lead + 2] == 0xA8) | (raw[lead + 2] == 0xA9))]
        if len(seps):
            growth[seps] += 3
            text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    out = text.encode("utf-8")
    grown = np.zeros(len(raw) + 1, dtype=np.int64)
    np.cumsum(growth, out=grown[1:])
    rel = offsets - base
    new_offsets = rel + grown[rel]
    if int(new_offsets[-1]) != len(out):  # cannot happen (the table is the encoder's); be safe
        return None
    validity = arr.is_valid().buffers()[1] if arr.null_count else None
    return pa.Array.from_buffers(
        pa.string(), len(arr), [validity, pa.py_buffer(new_offsets.astype(np.int32)), pa.py_buffer(out)]
    )


def _rows_holding(arr: pa.Array, unsafe: bytes):
    """Mask of the rows whose data holds one of the ``unsafe`` bytes, found with ``bytes.find``
    (memchr) when they are rare — a substring kernel per byte reads the whole column each
    time — or None when they are common (the caller uses the kernels)."""
    import numpy as np

    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int32 if arr.type == pa.string() else np.int64)
    offsets = offsets[arr.offset : arr.offset + len(arr) + 1]
    data = memoryview(bufs[2])[int(offsets[0]) : int(offsets[-1])].tobytes()
    if sum(data.count(b) for b in unsafe) > max(64, len(arr) // 16):
        return None
    hits = []
    for b in unsafe:
        pos = data.find(b)
        while pos >= 0:
            hits.append(pos)
            pos = data.find(b, pos + 1)
    rows = np.searchsorted(offsets - offsets[0], np.array(hits, dtype=np.int64), side="right") - 1
    mask = np.zeros(len(arr), dtype=bool)
    mask[rows] = True
    if arr.null_count:
        mask &= np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    return pa.array(mask)


_FOUND = threading.local()  # the invalid-UTF-8 positions the decoder found, per rendering thread


def _record_invalid_utf8(exc: UnicodeError) -> tuple[str, int]:
    assert isinstance(exc, UnicodeDecodeError)
    _FOUND.positions.append(exc.start)
    return "", exc.end


codecs.register_error("acidctl-find-invalid-utf8", _record_invalid_utf8)


def _invalid_utf8_positions(raw: pa.Array) -> list[int]:
    """Indexes of the values that are not valid UTF-8: Python's UTF-8 decoder runs once over
    the values' bytes (each followed by a NUL, so that no sequence runs on into the next
    value) and an error handler records where each malformed sequence starts. Bisecting with
    Arrow's validation cost O(k log n) Python calls: 3 s for 1 value in 50 of 1M
    (bench/dump.py, invalid UTF-8)."""
    import numpy as np

    joined = pc.binary_join_element_wise(raw, pa.scalar(b"\0", pa.binary()), pa.scalar(b"", pa.binary()))
    bufs = joined.buffers()
    if len(joined) == 0 or bufs[2] is None:
        return []
    offsets = np.frombuffer(bufs[1], dtype=np.int32 if joined.type == pa.binary() else np.int64)
    offsets = offsets[joined.offset : joined.offset + len(joined) + 1]
    data = memoryview(bufs[2])[int(offsets[0]) : int(offsets[-1])]
    _FOUND.positions = []
    try:
        codecs.decode(data, "utf-8", "acidctl-find-invalid-utf8")
        found = _FOUND.positions
    finally:
        _FOUND.positions = []
    if not found:
        return []
    rows = np.searchsorted(offsets - offsets[0], np.array(found, dtype=np.int64), side="right") - 1
    return np.unique(rows).tolist()


def _java_decoded(arr: pa.Array) -> pa.Array:
    """A string column whose invalid UTF-8 values are decoded as Java's decoder does
    (malformed input → U+FFFD), the valid ones untouched."""
    raw = arr.view(pa.binary()) if arr.type == pa.string() else arr.cast(pa.binary())
    bad = _invalid_utf8_positions(raw)
    values = pc.take(raw, pa.array(bad, pa.int64())).to_pylist()
    fixed = pa.array([javafmt.java_decode_utf8(v).encode("utf-8") for v in values], pa.binary())
    import numpy as np

    mask = np.zeros(len(raw), dtype=bool)
    mask[bad] = True
    return pc.replace_with_mask(raw, pa.array(mask), fixed).view(pa.string())


def _plain_ascii(arr: pa.Array) -> bool:
    """Are the bytes of the (possibly sliced) string array's values all ASCII without a byte
    that may need an escape (control bytes, '"', '\\')? The usual column: then the values are
    valid UTF-8 and print as they are. Three numpy comparisons and a maximum over a view of
    the data: ~5x faster than copying it out and ``bytes.translate`` (bench/README.md)."""
    import numpy as np

    if len(arr) == 0 or arr.buffers()[2] is None:
        return True
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int32 if arr.type in (pa.string(), pa.binary()) else np.int64)
    raw = np.frombuffer(bufs[2], dtype=np.uint8)[int(offsets[arr.offset]) : int(offsets[arr.offset + len(arr)])]
    if not len(raw):
        return True
    return bool(raw.max() < 0x80) and not ((raw < 0x20).any() or (raw == 0x22).any() or (raw == 0x5C).any())


def _s_string(arr, td, *, rtrim_spaces: bool = False):
    """String content with JSON escapes applied, without the surrounding quotes."""
    if not rtrim_spaces and _plain_ascii(arr):
        return arr
    window = _data_window(arr)
    data: bytes | None = window
    # ASCII is valid UTF-8: Arrow's full validation only for data with other bytes
    if not window.isascii() and not _valid_utf8(arr):
        arr = _java_decoded(arr)  # Java's decoder replaces malformed sequences
        data = None
    if rtrim_spaces:
        arr = pc.utf8_rtrim(arr, characters=" ")
        data = None
    unsafe = _unsafe_bytes(arr, data)
    if not unsafe:
        return arr
    return _escape(arr, unsafe)


def _quoted(content_fn):
    def render(arr, td):
        return _join('"', content_fn(arr, td), '"')

    render.content = content_fn
    render.brackets = ('"', '"')
    return render


def _bracketed(content_fn):
    """A list-like renderer: ``[content]``, null where the value is null (``_parts`` puts the
    brackets into the row's one join when the column has no nulls)."""

    def render(arr, td):
        return _nullable(_join("[", content_fn(arr, td), "]"), arr)

    render.content = content_fn
    render.brackets = ("[", "]")
    return render


def _s_char(arr, td):
    return _s_string(arr, td, rtrim_spaces=True)


def _s_decimal(arr, td):
    text = pc.cast(arr, pa.string())
    # canonical form: drop trailing fractional zeros and a bare '.' (Arrow prints every
    # fraction digit of the scale, so with a scale every value has a '.'; trims, not regexes)
    out = pc.utf8_rtrim(pc.utf8_rtrim(text, characters="0"), characters=".") if arr.type.scale > 0 else text
    # Arrow prints very small values with an exponent (1.00E-7); fix those few in Python
    mask = pc.fill_null(pc.match_substring(out, "E"), False)
    if pc.any(mask).as_py():
        vals = pc.filter(text, mask).to_pylist()
        out = pc.replace_with_mask(out, mask, pa.array([javafmt.decimal_text_str(v) for v in vals]))
    # "-0" cannot come from a decimal, but "-0.0..." could be stripped to "-0"
    return pc.if_else(pc.equal(out, "-0"), "0", out)


def _s_date(arr, td):
    days = pc.cast(arr, pa.int32())
    text = pc.cast(arr, pa.string())
    early = pc.fill_null(pc.less(days, javafmt.GREGORIAN_CUTOVER_DAY), False)
    if pc.any(early).as_py():
        text = pc.replace_with_mask(text, early, _java_date_text(pc.filter(days, early).to_numpy()))
    return text


def _s_timestamp(arr, td):
    ns = pc.cast(
        arr.cast(pa.timestamp("ns")) if arr.type.tz is None else arr.cast(pa.timestamp("ns", tz=arr.type.tz)),
        pa.int64(),
    )
    ns_np = pc.fill_null(ns, 0).to_numpy(zero_copy_only=False)  # int64, never via float
    # Arrow's nanoseconds span 1677..2262: Gregorian dates with 4-digit years, which Arrow's
    # own cast prints as Java does but for the fraction (all nine digits): one kernel instead
    # of the fields joined in _timestamp_text (3x faster: bench/dump.py, every type)
    text = pc.cast(ns.view(pa.timestamp("ns")), pa.string())
    return _java_fraction(text, ns_np % 1_000_000_000 == 0)


#: length of "YYYY-MM-DD HH:MM:SS.f"
_TS_ONE_DIGIT = 21


def _java_fraction(text: pa.Array, whole) -> pa.Array:
    """``YYYY-MM-DD HH:MM:SS.fffffffff`` texts with the fraction as java.sql.Timestamp prints
    it: trailing zeros dropped, one digit kept (``whole``: the values with no nanoseconds)."""
    import numpy as np

    n_whole = int(np.count_nonzero(whole))
    if n_whole == len(text):
        return pc.utf8_slice_codeunits(text, 0, _TS_ONE_DIGIT)
    out = pc.utf8_rtrim(text, characters="0")
    if n_whole:
        mask = pa.array(whole)
        out = pc.replace_with_mask(out, mask, pc.utf8_slice_codeunits(pc.filter(text, mask), 0, _TS_ONE_DIGIT))
    return out


class TimestampParts:
    """The ORC type of a timestamp column read as ``struct<seconds:int64, nanos:int64>`` (what
    ORC stores: any year, where Arrow's nanoseconds end at 1677..2262); rendered like a
    timestamp (acidctl.dump reads out-of-range timestamp columns this way)."""

    class kind:
        name = "TIMESTAMP_PARTS"

    def __str__(self):
        return "timestamp"


def _s_timestamp_parts(arr, td):
    import numpy as np

    secs = pc.fill_null(arr.field(0), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    nanos = pc.fill_null(arr.field(1), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    mask = None if arr.null_count == 0 else pc.is_null(arr).to_numpy(zero_copy_only=False)
    return _timestamp_text(secs, nanos, mask)


def _civil_np(days):
    """(year, month, day) arrays in Java's hybrid calendar (Julian before 1582-10-15): the
    integer arithmetic of :func:`acidctl.orc.javafmt.civil_from_days` on numpy arrays (floor
    division throughout, as Python's ``//``)."""
    import numpy as np

    z = days + 719468  # proleptic Gregorian (Hinnant)
    era = np.floor_divide(z, 146097)
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    gd = doy - (153 * mp + 2) // 5 + 1
    gm = np.where(mp < 10, mp + 3, mp - 9)
    gy = yoe + era * 400 + (gm <= 2)
    c = days + 2440588 + 32082  # Julian (Richards)
    d = np.floor_divide(4 * c + 3, 1461)
    e = c - np.floor_divide(1461 * d, 4)
    m = np.floor_divide(5 * e + 2, 153)
    jd = e - np.floor_divide(153 * m + 2, 5) + 1
    jm = m + 3 - 12 * np.floor_divide(m, 10)
    jy = d - 4800 + np.floor_divide(m, 10)
    greg = days >= javafmt.GREGORIAN_CUTOVER_DAY
    return np.where(greg, gy, jy), np.where(greg, gm, jm), np.where(greg, gd, jd)


def _padded(values, width: int) -> pa.Array:
    return pc.utf8_lpad(pc.cast(pa.array(values, pa.int64()), pa.string()), width=width, padding="0")


def _java_date_text(days) -> pa.Array:
    """java.sql.Date.toString of day numbers (any range; era years as Java prints them)."""
    import numpy as np

    y, m, d = _civil_np(np.asarray(days, dtype=np.int64))
    y = np.where(y <= 0, 1 - y, y)
    if not len(y) or y.max() <= 9999:
        return _fixed_text(len(y), [(y, 4), b"-", (m, 2), b"-", (d, 2)])
    return _join(_padded(y, 4), "-", _padded(m, 2), "-", _padded(d, 2))


def _timestamp_text(secs, nanos, mask):
    """java.sql.Timestamp.toString of (seconds, nanos) arrays in UTC (``mask``: nulls): the
    hybrid calendar in numpy integer arithmetic (any year). Years of at most four digits (all
    but the absurd) are laid out as fixed-width text by numpy (:func:`_fixed_text`), the
    fraction trimmed by :func:`_java_fraction`: 4x faster than joining the fields as Arrow
    strings (bench/dump.py, far timestamps)."""
    import numpy as np

    days = np.floor_divide(secs, 86400)
    sod = secs - days * 86400
    y, m, d = _civil_np(days)
    y = np.where(y <= 0, 1 - y, y)  # GregorianCalendar's era year
    valid = None if mask is None else ~np.asarray(mask, dtype=bool)
    if not len(y) or y.max() <= 9999:
        hh, rest = np.divmod(sod, 3600)
        mi, ss = np.divmod(rest, 60)
        text = _fixed_text(
            len(y),
            [(y, 4), b"-", (m, 2), b"-", (d, 2), b" ", (hh, 2), b":", (mi, 2), b":", (ss, 2), b".", (nanos, 9)],
            valid,
        )
        return _java_fraction(text, nanos == 0)
    frac = pc.utf8_slice_codeunits(pc.cast(pa.array(nanos + 1_000_000_000, pa.int64()), pa.string()), 1)
    frac = pc.utf8_rtrim(frac, characters="0")
    frac = pc.if_else(pc.equal(frac, ""), "0", frac)
    text = _join(
        _padded(y, 4),
        "-",
        _padded(m, 2),
        "-",
        _padded(d, 2),
        " ",
        _padded(sod // 3600, 2),
        ":",
        _padded(sod % 3600 // 60, 2),
        ":",
        _padded(sod % 60, 2),
        ".",
        frac,
    )
    return text if mask is None else pc.if_else(pa.array(mask), pa.scalar(None, pa.string()), text)


def _fixed_text(n: int, layout: list, valid=None) -> pa.Array:
    """``n`` texts of one width laid out by numpy: ``layout`` lists literal bytes and
    (non-negative integer array, digits) pairs, printed zero-padded (values must fit). The
    texts are the rows of one uint8 matrix, handed to Arrow without a copy (``valid``: the
    non-null rows). Written by hand: Arrow has no fixed-width formatting kernel, and padding
    and joining Arrow string columns copies every byte once per field."""
    import numpy as np

    width = sum(len(p) if isinstance(p, bytes) else p[1] for p in layout)
    cols = np.empty((width, n), dtype=np.uint8)  # one byte position a row: contiguous writes
    col = 0
    for p in layout:
        if isinstance(p, bytes):
            cols[col : col + len(p)] = np.frombuffer(p, dtype=np.uint8)[:, None]
            col += len(p)
            continue
        values, digits = p
        v = np.asarray(values).astype(np.int32)  # every field fits (years, nanoseconds)
        for i in range(digits - 1, -1, -1):
            v, r = np.divmod(v, 10)
            np.add(r, 48, out=cols[col + i], casting="unsafe")
        col += digits
    out = np.ascontiguousarray(cols.T)
    offsets = pa.py_buffer(np.arange(0, (n + 1) * width, width, dtype=np.int32))
    bitmap = None if valid is None or valid.all() else pa.array(valid, pa.bool_()).buffers()[1]
    return pa.Array.from_buffers(pa.string(), n, [bitmap, offsets, pa.py_buffer(out)])


#: the decimal text of every byte value (a gather through this table is ~4x faster than a cast)
_BYTE_TEXT = pa.array([str(b) for b in range(256)], pa.string())


def _s_binary(arr, td):
    """The bytes as decimal numbers joined by commas, without the brackets."""
    import numpy as np

    bufs = arr.buffers()
    # the slice's own window of the data buffer: the whole buffer made every slice of a stripe
    # render the bytes of the entire stripe (bench/dump.py, every type)
    wide = arr.type == pa.large_binary()
    offs = np.frombuffer(bufs[1], dtype=np.int64 if wide else np.int32)[arr.offset : arr.offset + len(arr) + 1]
    start, end = (int(offs[0]), int(offs[-1])) if len(offs) else (0, 0)
    data = bufs[2] if bufs[2] is not None else pa.py_buffer(b"")
    values = pa.Array.from_buffers(pa.uint8(), end - start, [None, data], offset=start)
    lists = pa.ListArray.from_arrays(pa.array(offs - start, pa.int32()), pc.take(_BYTE_TEXT, values))
    return pc.binary_join(lists, ",")


_r_binary = _bracketed(_s_binary)


def _list_content(offsets: pa.Array, rendered_values: pa.Array) -> pa.Array:
    """The values of each list joined by commas, without the brackets."""
    lists = pa.ListArray.from_arrays(offsets, _filled(rendered_values))
    return pc.binary_join(lists, ",")


def _flat(arr: pa.Array, td) -> pa.Array:
    """Every value's JSON text (``null`` for nulls) with ONE element-wise join of its
    :func:`_parts`: a struct's fields or a quoted string are not joined level by level."""
    parts = _merge_literals(_parts(arr, td))
    if len(parts) == 1 and not isinstance(parts[0], str):
        return _filled(parts[0])
    return _joined(parts, len(arr))


def _joined(parts: list, n: int) -> pa.Array:
    """The ``n`` texts of ``parts`` (literal strings and arrays) joined element-wise, adjacent
    literals merged first; all literals: ``n`` copies of their text."""
    parts = _merge_literals(parts)
    if not any(isinstance(p, (pa.Array, pa.ChunkedArray)) for p in parts):
        return pa.array(["".join(parts)] * n, pa.string())
    return _join(*parts)


def _window(arr):
    """(offsets from 0, start, length) of the child values a (possibly sliced) list or map array
    uses: ``.values``/``.keys``/``.items`` ignore the slice, so rendering them whole made every
    slice of a stripe render the children of the entire stripe (bench/dump.py, nested)."""
    offs = arr.offsets
    if len(offs) == 0:
        return offs, 0, 0
    start, end = offs[0].as_py(), offs[-1].as_py()
    if start:
        offs = pc.subtract(offs, pa.scalar(start, offs.type))
    return offs, start, end - start


def _s_list(arr, td):
    offs, start, n = _window(arr)
    return _list_content(offs, _flat(arr.values.slice(start, n), td.type))


def _s_map(arr, td):
    offs, start, n = _window(arr)
    parts = ['{"_key":', *_parts(arr.keys.slice(start, n), td.key), ',"_value":']
    parts += [*_parts(arr.items.slice(start, n), td.value), "}"]
    return _list_content(offs, _join(*_merge_literals(parts)))


_r_list = _bracketed(_s_list)
_r_map = _bracketed(_s_map)


def _r_struct(arr, td):
    names = list(td.fields)
    parts: list = []
    for i, name in enumerate(names):
        child = render_column(arr.field(i), td.fields[name])
        parts.append(("{" if i == 0 else ",") + javafmt.json_string(name) + ":")
        parts.append(_filled(child))
    if not names:
        out = pa.array(["{}"] * len(arr), pa.string())
    else:
        out = _join(*parts, "}")
    return _nullable(out, arr)


def _r_union(arr, td):
    import numpy as np

    # type codes and dense offsets from the buffers: pyarrow's ``type_codes``/``offsets``
    # ignore the array's slice offset (a slice of a stripe printed another slice's values)
    bufs = arr.buffers()
    codes = pa.array(np.frombuffer(bufs[1], dtype=np.int8)[arr.offset : arr.offset + len(arr)])
    children = [_filled(render_column(arr.field(i), t)) for i, t in enumerate(td.cont_types)]
    if arr.type.mode != "sparse":
        # dense union: children are compacted; expand them to full length by offsets
        offs = pa.array(np.frombuffer(bufs[2], dtype=np.int32)[arr.offset : arr.offset + len(arr)])
        children = [pc.take(c, offs) for c in children]
    # map type codes to child positions
    code_to_pos = {code: i for i, code in enumerate(arr.type.type_codes)}
    if any(code != pos for code, pos in code_to_pos.items()):
        import numpy as np

        lut = np.zeros(max(code_to_pos) + 1, dtype=np.int8)
        for code, pos in code_to_pos.items():
            lut[code] = pos
        codes = pa.array(lut[codes.to_numpy()])
    return pc.choose(codes, *children)


_RENDERERS = {
    "BOOLEAN": _r_bool,
    "BYTE": _r_int,
    "SHORT": _r_int,
    "INT": _r_int,
    "LONG": _r_int,
    "FLOAT": _r_double,
    "DOUBLE": _r_double,
    "STRING": _quoted(_s_string),
    "VARCHAR": _quoted(_s_string),
    "CHAR": _quoted(_s_char),
    "BINARY": _r_binary,
    "DECIMAL": _quoted(_s_decimal),
    "DATE": _quoted(_s_date),
    "TIMESTAMP": _quoted(_s_timestamp),
    "TIMESTAMP_INSTANT": _quoted(_s_timestamp),
    "TIMESTAMP_PARTS": _quoted(_s_timestamp_parts),
    "LIST": _r_list,
    "MAP": _r_map,
    "STRUCT": _r_struct,
    "UNION": _r_union,
}


def _parts(arr: pa.Array, td, pieces: bool = False) -> list:
    """The JSON text of every value as a list of parts (literal strings and string arrays) to
    be concatenated row-wise. Null-free structs and quoted scalars are flattened into their
    parent, so a whole row is built by ONE element-wise join instead of one per level: each
    join pass copies every byte again (bench/dump.py). ``pieces``: parts may also be
    :class:`_Pieces` (texts looked up from a table; for :func:`render_lines`)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    kind = _kind(td)
    bounds = None  # an integer column's (min, max), when measured below
    if pieces and kind in ("FLOAT", "DOUBLE"):
        looked_up = _double_pieces(arr)
        if looked_up is not None:
            return looked_up
    if arr.null_count == 0:
        if kind == "STRUCT":
            names = list(td.fields)
            if not names:
                return ["{}"]
            parts: list = []
            for i, name in enumerate(names):
                parts.append(("{" if i == 0 else ",") + javafmt.json_string(name) + ":")
                parts += _parts(arr.field(i), td.fields[name], pieces)
            parts.append("}")
            return parts
        renderer = _RENDERERS.get(kind)
        content = getattr(renderer, "content", None)
        if content is not None:
            opening, closing = getattr(renderer, "brackets")
            return [opening, content(arr, td), closing]
        if kind in _INTEGER_KINDS and len(arr) > 1:
            # constant columns (an insert delta's operation, originalTransaction, bucket and
            # currentTransaction) become one literal instead of a cast + a join part per row
            mm = pc.min_max(arr)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            if lo == hi:
                return [str(lo)]
            bounds = (lo, hi)
    if pieces and kind in _INTEGER_KINDS:
        # one look-up attempt (a column out of the pieces' range is not measured twice)
        looked_up = _int_pieces(arr, bounds)
        if looked_up is not None:
            return looked_up
    return [_filled(render_column(arr, td))]


_INTEGER_KINDS = frozenset({"BYTE", "SHORT", "INT", "LONG"})


def _merge_literals(parts: list) -> list:
    out: list = []
    for p in parts:
        if isinstance(p, str) and out and isinstance(out[-1], str):
            out[-1] += p
        else:
            out.append(p)
    return out


def render_batch(
    batch: pa.RecordBatch,
    fields: list[tuple[str, object]],
    extra: list[tuple[str, pa.Array]] | None = None,
    prefix: list[tuple[str, object]] | None = None,
    terminator: str = "",
) -> pa.Array:
    """One JSON object text per row. ``fields`` lists (name, ORC type) of the batch columns in
    order; ``prefix``/``extra`` add already-rendered JSON values (arrays or literal strings)
    before/after them; ``terminator`` ends each text (``"\n"``: lines ready to print, without
    another pass over every byte to add it)."""
    parts = _row_parts(batch, fields, extra, prefix, terminator, pieces=False)
    if parts is None:
        return pa.array(["{}" + terminator] * batch.num_rows, pa.string())
    return _joined(parts, batch.num_rows)


def _row_parts(batch, fields, extra, prefix, terminator: str, *, pieces: bool) -> list | None:
    """The parts of every row's JSON object (None: the object has no member)."""
    items: list[tuple[str, list]] = [(n, [a]) for n, a in (prefix or [])]
    items += [(name, _parts(batch.column(i), td, pieces)) for i, (name, td) in enumerate(fields)]
    items += [(n, [a]) for n, a in (extra or [])]
    if not items:
        return None
    parts: list = []
    for i, (name, value_parts) in enumerate(items):
        parts.append(("{" if i == 0 else ",") + javafmt.json_string(name) + ":")
        parts += value_parts
    parts.append("}" + terminator)
    return _merge_literals(parts)


def render_lines(
    batch: pa.RecordBatch,
    fields: list[tuple[str, object]],
    extra: list[tuple[str, pa.Array]] | None = None,
    prefix: list[tuple[str, object]] | None = None,
):
    """The rows of :func:`render_batch` (``terminator="\\n"``) as one block of bytes, the same
    bytes as ``lines_bytes(render_batch(..., terminator="\\n"))``, built without the row-wise
    join where it can be (:func:`_assembled`: one ``take`` lays every row's pieces out in
    order; doubles looked up from tables of texts, :func:`_double_pieces`)."""
    from acidctl.orc.lines import lines_bytes

    n = batch.num_rows
    if n == 0:
        return b""
    # lookup tables are copied into every slice's take: only for slices they are small against
    parts = _row_parts(batch, fields, extra, prefix, "\n", pieces=n >= PIECES_MIN_ROWS)
    if parts is None:
        return ("{}\n" * n).encode()
    block = _assembled(parts, n)
    if block is not None:
        return block
    resolved = [p.resolve() if isinstance(p, _Pieces) else p for p in parts]
    return lines_bytes(_joined(resolved, n))


#: :func:`render_lines` looks integers and doubles up in tables (of up to 20,001 texts) for
#: slices of at least this many rows
PIECES_MIN_ROWS = 4096


class _Pieces:
    """A part whose text in row ``i`` is ``table(key)[codes[i]]`` (:func:`_table`: a small
    string array without nulls, ``codes``: a numpy integer array, one code per row)."""

    __slots__ = ("key", "codes")

    def __init__(self, key: tuple, codes):
        self.key, self.codes = key, codes

    @property
    def texts(self) -> pa.Array:
        return _table(self.key)

    def resolve(self) -> pa.Array:
        return self.texts.take(pa.array(self.codes))


#: the tables of :class:`_Pieces` by key: ("hi",), ("lo",), ("frac", K), and derived ones,
#: ("pre", key, literal) / ("suf", key, literal): every text of ``key`` after / before the
#: literal (:func:`_absorbed`)
_TABLES: dict = {}
_TABLES_MAX = 256
#: the tables are dropped when they hold more than this many bytes together
_TABLES_MAX_BYTES = 16 << 20
#: a literal goes into a table only while the table stays below this many bytes (a row's
#: leading literal, ``{"row__id":{"writeid":1,"bucketid":536870912,"rowid":``, into the 20,001
#: ``hi`` texts: 1.2 MiB; :func:`_assembled` copies only the texts a slice uses of it) ...
_ABSORB_MAX_BYTES = 2 << 20
#: ... for slices of fewer than this many rows: 1 MiB
SLICE_ROWS_FULL = 16384
_ABSORB_MAX_BYTES_SMALL = 1 << 20
#: ... and into at most this many tables a row (each derived table is copied into every
#: slice's take: a wide row of many numbers would copy more tables than it saves pieces)
_ABSORB_MAX_TABLES = 8

#: FileDump's text of an integer, or of a double in plain notation, in pieces looked up from
#: tables: ``hi`` [sign and the integer part's digits above the last four], ``lo`` [the last
#: four digits of the integer part, zero-padded after a ``hi`` digit], ``frac`` K ["." and the
#: fraction's K digits without trailing zeros, at least one]. A null is "null", "", "".
_HI_NEG, _HI_NULL = 10000, 20000
_LO_PADDED, _LO_EMPTY = 10000, 20000
_PIECE_LIMIT = 10**8  # |integer part| below this: hi < 10**4


#: guards :data:`_TABLES` and :data:`_LONGEST` (the render pool's threads share them)
_TABLES_LOCK = threading.RLock()
_TABLES_BYTES = [0]


def _table(key: tuple) -> pa.Array:
    got = _TABLES.get(key)
    if got is not None:
        return got
    with _TABLES_LOCK:
        got = _TABLES.get(key)
        if got is not None:
            return got
        if key[0] in ("pre", "suf"):
            # every text of key[1] with the literal before / after it: one kernel, not 20,001
            # Python strings
            lit = pa.scalar(key[2], pa.string())
            pair = (lit, _table(key[1])) if key[0] == "pre" else (_table(key[1]), lit)
            got = pc.binary_join_element_wise(*pair, "")
        else:
            if key[0] == "hi":
                hi = [str(i) if i else "" for i in range(10000)]
                texts = hi + ["-" + h for h in hi] + ["null"]
            elif key[0] == "lo":
                texts = [str(i) for i in range(10000)] + ["%04d" % i for i in range(10000)] + [""]
            else:  # "frac"
                k = key[1]
                texts = ["." + (("%0*d" % (k, i)).rstrip("0") or "0") for i in range(10**k)] + [""]
            got = pa.array(texts, pa.string())
        if len(_TABLES) >= _TABLES_MAX or _TABLES_BYTES[0] + got.nbytes > _TABLES_MAX_BYTES:
            _TABLES.clear()
            _TABLES_BYTES[0] = 0
        _TABLES[key] = got
        _TABLES_BYTES[0] += got.nbytes
        return got


_LONGEST: dict = {}


def _longest(key: tuple) -> int:
    """Bytes of the longest text of :func:`_table` ``key``."""
    got = _LONGEST.get(key)
    if got is None:
        got = int(pc.max(pc.binary_length(_table(key))).as_py() or 0)
        with _TABLES_LOCK:
            if len(_LONGEST) >= _TABLES_MAX:
                _LONGEST.clear()
            _LONGEST[key] = got
    return got


def _absorbed(parts: list) -> list:
    """``parts`` with each literal next to a :class:`_Pieces` moved into its table (a literal
    before it as every text's prefix, one after it as suffix): one piece fewer per row to lay
    out. The texts of every row stay the same."""

    derived = [0]
    n = next((len(p.codes) for p in parts if isinstance(p, _Pieces)), 0)
    # a table larger than the rows' own text is worth it for a whole slice only
    limit = _ABSORB_MAX_BYTES if n >= SLICE_ROWS_FULL else _ABSORB_MAX_BYTES_SMALL

    def fits(p: _Pieces, lit: str) -> bool:
        t = p.texts
        if derived[0] >= _ABSORB_MAX_TABLES or t.nbytes + len(t) * len(lit.encode()) > limit:
            return False
        derived[0] += 1
        return True

    out: list = []
    for p in parts:
        if isinstance(p, _Pieces) and out and isinstance(out[-1], str) and fits(p, out[-1]):
            p = _Pieces(("pre", p.key, out.pop()), p.codes)
        out.append(p)
    final: list = []
    for p in out:
        if isinstance(p, str) and final and isinstance(final[-1], _Pieces) and fits(final[-1], p):
            q = final.pop()
            p = _Pieces(("suf", q.key, p), q.codes)
        final.append(p)
    return final


#: :func:`_assembled` copies only the texts a slice uses of a table larger than this
_TRIM_BYTES = 256 << 10
#: :func:`_assembled` builds at most this many bytes at once (string offsets are 32-bit)
_ASSEMBLE_MAX_BYTES = 1 << 30


def _assembled(parts: list, n: int):
    """The ``n`` rows' texts of ``parts`` (literal strings, string arrays of ``n`` values,
    :class:`_Pieces`) laid out one after the other, as a bytes-like block; None when a part is
    not a null-free ``string`` array (the caller joins instead).

    Every literal, table and array goes into one string array, and ONE ``take`` with the
    indices of each row's pieces, row after row, copies them into place: the data buffer of
    its result is the rows' texts back to back. The element-wise join this replaces costs
    about as much per part and row as copying a whole short value (bench/merged.py)."""
    import numpy as np

    from acidctl.orc.lines import lines_bytes

    parts = _absorbed(parts)
    shared = collections.Counter(p.key for p in parts if isinstance(p, _Pieces))
    segments: list = []
    starts: list = []
    literals: dict[str, int] = {}
    tables: dict[tuple, int] = {}
    base = size = 0
    lit_texts = [p for p in parts if isinstance(p, str)]
    if lit_texts:
        for t in lit_texts:
            literals.setdefault(t, len(literals))
        segments.append(pa.array(list(literals), pa.string()))
        base = len(literals)
        size = sum(len(t.encode()) for t in lit_texts) * n
    for p in parts:
        if isinstance(p, str):
            starts.append(literals[p])
        elif isinstance(p, _Pieces):
            start = tables.get(p.key)
            texts = p.texts
            if start is None:
                if texts.nbytes > _TRIM_BYTES and shared[p.key] == 1:
                    # a large table (a long literal absorbed): only the texts this slice uses
                    # (sorted values, such as row ids, use a few)
                    lo, hi = int(p.codes.min()), int(p.codes.max())
                    texts = texts.slice(lo, hi - lo + 1)
                    start = tables[p.key] = base - lo
                else:
                    start = tables[p.key] = base
                segments.append(texts)
                base += len(texts)
            starts.append(start)
            size += _longest(p.key) * n  # a bound
        else:
            if isinstance(p, pa.ChunkedArray):
                p = p.combine_chunks()
            if p.type != pa.string() or p.null_count or len(p) != n:
                return None
            segments.append(p)
            starts.append(base)
            base += n
            size += _data_bytes(p)
    if size > _ASSEMBLE_MAX_BYTES or base >= 2**31:
        return None
    idx = np.empty((n, len(parts)), dtype=np.int32)
    for j, (p, start) in enumerate(zip(parts, starts)):
        if isinstance(p, str):
            idx[:, j] = start
        elif isinstance(p, _Pieces):
            np.add(p.codes, start, out=idx[:, j], casting="unsafe")
        else:
            idx[:, j] = np.arange(start, start + n, dtype=np.int32)
    big = pa.concat_arrays(segments)
    # every index was made above, inside ``big``: no bounds check (a pass over the indices)
    return lines_bytes(pc.take(big, pa.array(idx.reshape(-1)), boundscheck=False))


def _data_bytes(arr: pa.Array) -> int:
    """Bytes of a (possibly sliced) string array's values."""
    import numpy as np

    if len(arr) == 0:
        return 0
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32)
    return int(offsets[arr.offset + len(arr)] - offsets[arr.offset])


def _valid_and_values(arr: pa.Array, fill):
    """(validity as a numpy bool array or None, the values as numpy with nulls as ``fill``)."""
    import numpy as np

    if arr.null_count:
        valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        return valid, pc.fill_null(arr, fill).to_numpy(zero_copy_only=False)
    return None, arr.to_numpy(zero_copy_only=False)


def _whole_pieces(whole, neg, valid) -> list:
    """The ``hi`` and ``lo`` pieces of non-negative integers ``whole`` < 10**8 (``neg``: a
    minus sign before them; ``valid`` False: null); ``lo`` alone when every ``hi`` text is
    empty (values below 10**4, no sign, no null)."""
    import numpy as np

    whole = whole.astype(np.int32)  # < 10**8: 32-bit arithmetic
    # a division by a scalar (numpy divides by a constant with a multiply and shifts): several
    # times faster than np.divmod
    hi = whole // np.int32(10000)
    lo = whole - hi * np.int32(10000)
    if neg is None and valid is None and not hi.any():
        return [_Pieces(("lo",), lo)]
    hi_c = hi + neg * _HI_NEG if neg is not None else hi
    lo += (hi > 0) * np.int32(_LO_PADDED)
    if valid is not None:
        hi_c[~valid] = _HI_NULL
        lo[~valid] = _LO_EMPTY
    return [_Pieces(("hi",), hi_c), _Pieces(("lo",), lo)]


def _int_pieces(arr: pa.Array, bounds: tuple[int, int] | None = None) -> list | None:
    """An integer column's text (Java's ``Long.toString``: an optional minus sign and the
    digits) as :class:`_Pieces` when every value is below 10**8 in absolute value; else None.
    ``bounds``: the column's (min, max) when known (a null-free column)."""
    import numpy as np

    if len(arr) == 0 or not pa.types.is_signed_integer(arr.type):
        return None
    if bounds is not None and arr.null_count == 0:
        lo, hi = bounds
        if lo <= -_PIECE_LIMIT or hi >= _PIECE_LIMIT:
            return None
        x = arr.to_numpy(zero_copy_only=False)
        if lo >= 0:
            return _whole_pieces(x, None, None)
        x = x.astype(np.int64, copy=False)  # np.abs of a narrower minimum wraps around
        neg = x < 0
        return _whole_pieces(np.abs(x), neg, None)
    valid, x = _valid_and_values(arr, 0)
    x = x.astype(np.int64, copy=False)
    if int(x.min()) <= -_PIECE_LIMIT or int(x.max()) >= _PIECE_LIMIT:
        return None
    neg = x < 0
    return _whole_pieces(np.abs(x), neg if neg.any() else None, valid)


def _double_pieces(arr: pa.Array) -> list | None:
    """A float/double column's FileDump text as :class:`_Pieces` when every value is zero
    (not -0.0) or in ``10**-3 <= |x| < 10**7`` AND is the double nearest to a decimal ``D`` of
    at most three places (amounts, measurements: the usual case); else None.

    Why the text is ``D`` with its trailing zeros dropped (at least one fraction digit): in
    that range Java prints the shortest decimal that rounds to ``x`` in plain notation
    (:func:`acidctl.orc.javafmt_double.format_double_array`'s argument), and ``D`` is it:
    the doubles there are closer than ``10**-3 · 2**-26`` apart, so ``D`` is the only decimal
    of at most 3 places rounding to ``x``, and a decimal with more places has at least as many
    significant digits as ``D`` unless it lies more than ``10**-3`` away. ``D`` is found
    exactly: ``m = rint(|x| · 10**K)`` and ``m / 10**K == |x|`` (both operands exact, the
    division correctly rounded: true iff ``m · 10**-K`` rounds to ``|x|``; a decimal this short
    is never a tie between two doubles)."""
    import numpy as np

    if pa.types.is_float32(arr.type):
        arr = arr.cast(pa.float64())  # FileDump widens a float to double first
    elif not pa.types.is_float64(arr.type):
        return None
    if len(arr) == 0:
        return None
    valid, x = _valid_and_values(arr, 1.0)
    lowest, highest = float(x.min()), float(x.max())  # NaN when there is one
    if lowest > 0:  # the usual column (amounts): positive, so no sign, -0.0 or NaN to look for
        if lowest < 0.001 or highest >= 1e7:
            return None
        ax, neg = x, None
    else:
        ax = np.abs(x)
        sign = np.signbit(x)
        with np.errstate(invalid="ignore"):
            if not (((ax >= 0.001) & (ax < 1e7)) | ((ax == 0.0) & ~sign)).all():  # NaN, inf: False
                return None
        neg = sign if sign.any() else None
    for k in (1, 2, 3):
        scale = float(10**k)
        m = np.rint(ax * scale)
        if (m / scale == ax).all():
            break
    else:
        return None
    m = m.astype(np.int64)
    whole = m // (10**k)  # a division by a scalar: several times faster than np.divmod
    frac = m - whole * (10**k)
    if valid is not None:
        frac[~valid] = 10**k
    return [*_whole_pieces(whole, neg, valid), _Pieces(("frac", k), frac)]


# -- the exact slow path over pyorc tuples ------------------------------------------------


def _py_value(v, td) -> str:
    if v is None:
        return "null"
    kind = _kind(td)
    if kind == "BOOLEAN":
        return "true" if v else "false"
    if kind in ("BYTE", "SHORT", "INT", "LONG"):
        return str(v)
    if kind in ("FLOAT", "DOUBLE"):
        return java_double_to_string(float(v))
    if kind in ("STRING", "VARCHAR"):
        return javafmt.json_string(v)
    if kind == "CHAR":
        return javafmt.json_string(v.rstrip(" "))
    if kind == "BINARY":
        return "[" + ",".join(str(b) for b in v) + "]"
    if kind == "DECIMAL":
        return '"' + javafmt.decimal_str(v) + '"'
    if kind == "DATE":
        return '"' + javafmt.java_date(v) + '"'
    if kind in ("TIMESTAMP", "TIMESTAMP_INSTANT"):
        return '"' + javafmt.java_timestamp(v[0], v[1]) + '"'
    if kind == "LIST":
        return "[" + ",".join(_py_value(x, td.type) for x in v) + "]"
    if kind == "MAP":
        items = v.items() if isinstance(v, dict) else v
        return (
            "["
            + ",".join('{"_key":%s,"_value":%s}' % (_py_value(k, td.key), _py_value(x, td.value)) for k, x in items)
            + "]"
        )
    if kind == "STRUCT":
        return (
            "{"
            + ",".join(javafmt.json_string(n) + ":" + _py_value(x, t) for (n, t), x in zip(td.fields.items(), v))
            + "}"
        )
    if kind == "UNION":
        return _py_value(v, _union_branch(v, td))
    raise NotImplementedError(f"ORC type {td} is not supported")


def _union_branch(v, td):
    # pyorc returns the active value only; pick the first alternative of a matching kind
    import datetime as dt
    import decimal

    want = {
        bool: ("BOOLEAN",),
        int: ("BYTE", "SHORT", "INT", "LONG"),
        float: ("FLOAT", "DOUBLE"),
        str: ("STRING", "VARCHAR", "CHAR"),
        bytes: ("BINARY",),
        decimal.Decimal: ("DECIMAL",),
        dt.date: ("DATE",),
        tuple: ("TIMESTAMP", "TIMESTAMP_INSTANT", "STRUCT"),
        list: ("LIST", "MAP"),
        dict: ("MAP",),
    }.get(type(v), ())
    for t in td.cont_types:
        if _kind(t) in want:
            return t
    return td.cont_types[0]


def python_converters():
    """pyorc converters giving timestamps as (seconds, nanos) and dates as day numbers, so no
    precision is lost to datetime and the hybrid calendar can be applied."""
    from pyorc.converters import ORCConverter
    from pyorc.enums import TypeKind

    class RawTimestamp(ORCConverter):
        @staticmethod
        def from_orc(seconds, nanoseconds, timezone):
            return (seconds, nanoseconds)

        @staticmethod
        def to_orc(obj, timezone):
            return obj

    class RawDate(ORCConverter):
        @staticmethod
        def from_orc(days):
            return days

        @staticmethod
        def to_orc(obj):
            return obj

    return {TypeKind.TIMESTAMP: RawTimestamp, TypeKind.TIMESTAMP_INSTANT: RawTimestamp, TypeKind.DATE: RawDate}


def render_rows_python(rows, fields: list[tuple[str, object]], positions: list[int]) -> list[str]:
    """The slow exact path: pyorc tuples → JSON texts (fields at ``positions`` of each tuple)."""
    out = []
    for row in rows:
        out.append(
            "{"
            + ",".join(javafmt.json_string(n) + ":" + _py_value(row[p], td) for (n, td), p in zip(fields, positions))
            + "}"
        )
    return out
