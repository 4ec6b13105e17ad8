"""Reading and rewriting an ORC file's tail (postscript + footer): user metadata and char/varchar types.

Why hand-written: pyarrow's ORC writer is the fast way to turn Arrow data into ORC (it writes
straight from Arrow buffers in C++), but it cannot set footer user metadata, and Hive needs
``hive.acid.key.index`` / ``hive.acid.stats`` / ``hive.acid.version`` there. No maintained
Python package exposes ORC's protobuf messages, and the edit needed is tiny: decompress the
footer, append ``UserMetadataItem`` fields (protobuf allows appending repeated fields), compress
it again and rewrite the postscript's ``footerLength``. Stripes are not touched. Only the
wire-format pieces used here are implemented (varints and length-delimited fields), following
ORC's ``orc_proto.proto`` (PostScript fields 1–8000, Footer field 3 ``stripes`` and field 5
``metadata``).

The same rewrite can also set the footer's column types (Footer field 4, ``Type`` messages)
from a template ORC type string. pyarrow's writer knows no char(n)/varchar(n) (Arrow has one
string type), so it writes such columns as STRING. ORC encodes STRING, VARCHAR and CHAR columns
identically (same streams, encodings and string statistics; writers pad char values and limit
varchar ones before encoding), so only the ``Type`` entry differs: kind STRING=7 becomes
VARCHAR=16 or CHAR=17 with field 4 ``maximumLength``. That is the only change made; any other
difference between the written types and the template is refused (:func:`retype`).
"""

from __future__ import annotations

import dataclasses
import re
import zlib
from typing import Any

from acidctl.errors import InvalidInputError

# ORC CompressionKind ids
NONE, ZLIB, SNAPPY, LZO, LZ4, ZSTD = range(6)

# ORC Type.Kind ids (orc_proto.proto; pyorc.TypeKind uses the same numbers)
(
    BOOLEAN,
    BYTE,
    SHORT,
    INT,
    LONG,
    FLOAT,
    DOUBLE,
    STRING,
    BINARY,
    TIMESTAMP,
    LIST,
    MAP,
    STRUCT,
    UNION,
    DECIMAL,
    DATE,
    VARCHAR,
    CHAR,
    TIMESTAMP_INSTANT,
) = range(19)
SCALAR_NAMES = {
    BOOLEAN: "boolean",
    BYTE: "tinyint",
    SHORT: "smallint",
    INT: "int",
    LONG: "bigint",
    FLOAT: "float",
    DOUBLE: "double",
    STRING: "string",
    BINARY: "binary",
    TIMESTAMP: "timestamp",
    DATE: "date",
    TIMESTAMP_INSTANT: "timestamp with local time zone",
}


def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _read_varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def parse_fields(buf: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) for a protobuf message: ints for varints, bytes for
    length-delimited fields."""
    i = 0
    out = []
    while i < len(buf):
        key, i = _read_varint(buf, i)
        field, wt = key >> 3, key & 7
        v: int | bytes
        if wt == 0:
            v, i = _read_varint(buf, i)
        elif wt == 2:
            n, i = _read_varint(buf, i)
            v = buf[i : i + n]
            i += n
        elif wt == 5:
            v = buf[i : i + 4]
            i += 4
        elif wt == 1:
            v = buf[i : i + 8]
            i += 8
        else:
            raise ValueError(f"unsupported protobuf wire type {wt}")
        out.append((field, wt, v))
    return out


def encode_fields(fields: list[tuple[int, int, Any]]) -> bytes:
    out = bytearray()
    for field, wt, v in fields:
        out += _varint(field << 3 | wt)
        if wt == 0:
            out += _varint(v)
        elif wt == 2:
            out += _varint(len(v)) + v
        else:
            out += v
    return bytes(out)


def decompress(data: bytes, kind: int) -> bytes:
    if kind == NONE:
        return data
    if kind != ZLIB:
        raise NotImplementedError(f"footer rewrite supports NONE and ZLIB, not codec {kind}")
    out = bytearray()
    i = 0
    while i < len(data):
        h = data[i] | data[i + 1] << 8 | data[i + 2] << 16
        i += 3
        n = h >> 1
        chunk = data[i : i + n]
        i += n
        out += chunk if h & 1 else zlib.decompress(chunk, -15)
    return bytes(out)


def compress(data: bytes, kind: int, block_size: int) -> bytes:
    if kind == NONE:
        return data
    if kind != ZLIB:
        raise NotImplementedError(f"footer rewrite supports NONE and ZLIB, not codec {kind}")
    out = bytearray()
    for off in range(0, len(data), block_size):
        raw = data[off : off + block_size]
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        comp = c.compress(raw) + c.flush()
        if len(comp) < len(raw):
            h = len(comp) << 1
            out += bytes((h & 0xFF, h >> 8 & 0xFF, h >> 16 & 0xFF)) + comp
        else:
            h = len(raw) << 1 | 1
            out += bytes((h & 0xFF, h >> 8 & 0xFF, h >> 16 & 0xFF)) + raw
    return bytes(out)


@dataclasses.dataclass
class Tail:
    postscript: list
    footer: bytes  # decompressed
    compression: int
    block_size: int
    footer_start: int  # offset of the compressed footer in the file
    ps_len: int

    def stripe_rows(self) -> list[int]:
        rows = []
        for field, wt, v in parse_fields(self.footer):
            if field == 3 and wt == 2:
                info = {f: val for f, _, val in parse_fields(v)}
                rows.append(int(info.get(5, 0)))
        return rows

    def types(self) -> list[OrcType]:
        """The footer's column types, in column-id order."""
        return [parse_type(v) for field, wt, v in parse_fields(self.footer) if field == 4 and wt == 2]

    def user_metadata(self) -> dict[str, bytes]:
        meta = {}
        for field, wt, v in parse_fields(self.footer):
            if field == 5 and wt == 2:
                item = {f: val for f, _, val in parse_fields(v)}
                meta[item.get(1, b"").decode()] = item.get(2, b"")
        return meta


def read_tail(data: bytes) -> Tail:
    ps_len = data[-1]
    ps = parse_fields(data[-1 - ps_len : -1])
    vals = {f: v for f, _, v in ps}
    footer_len = int(vals[1])
    kind = int(vals.get(2, NONE))
    block = int(vals.get(3, 256 * 1024))
    start = len(data) - 1 - ps_len - footer_len
    footer = decompress(data[start : start + footer_len], kind)
    return Tail(ps, footer, kind, block, start, ps_len)


def add_user_metadata(data: bytes, items: list[tuple[str, bytes]], *, orc_type: str | None = None) -> bytes:
    """The same ORC file with ``items`` appended to the footer's user metadata and, with
    ``orc_type``, its string columns retyped to that template's char/varchar (:func:`retype`):
    one tail rewrite for both."""
    tail = read_tail(data)
    body = tail.footer if orc_type is None else retype(tail.footer, parse_type_string(orc_type))
    extra = b"".join(encode_fields([(5, 2, encode_fields([(1, 2, k.encode()), (2, 2, v)]))]) for k, v in items)
    footer = compress(body + extra, tail.compression, tail.block_size)
    ps = [(f, wt, len(footer) if f == 1 else v) for f, wt, v in tail.postscript]
    ps_bytes = encode_fields(ps)
    if len(ps_bytes) > 255:
        raise ValueError("ORC postscript longer than 255 bytes")
    return data[: tail.footer_start] + footer + ps_bytes + bytes((len(ps_bytes),))


def _tail_bytes(f) -> tuple[int, bytes]:
    """(offset, bytes) of the footer + postscript + length byte of an open ORC file."""
    import os

    size = os.fstat(f.fileno()).st_size
    f.seek(max(0, size - 256))
    last = f.read()
    ps_len = last[-1]
    vals = {fn: v for fn, _, v in parse_fields(last[-1 - ps_len : -1])}
    n = 1 + ps_len + int(vals[1])
    f.seek(size - n)
    return size - n, f.read(n)


def add_user_metadata_file(path: str, items: list[tuple[str, bytes]], *, orc_type: str | None = None) -> Tail:
    """:func:`add_user_metadata` on a local file in place: only the tail is read, the file is
    truncated at the footer and the new footer + postscript appended. Returns the old tail.
    Nothing is changed when the retype is refused."""
    with open(path, "r+b") as f:
        start, tail_bytes = _tail_bytes(f)
        tail = read_tail(tail_bytes)
        new = add_user_metadata(tail_bytes, items, orc_type=orc_type)
        f.seek(start)
        f.truncate()
        f.write(new)
    return tail


def read_tail_file(path: str) -> Tail:
    """:func:`read_tail` of a local file, reading only its tail."""
    with open(path, "rb") as f:
        return read_tail(_tail_bytes(f)[1])


# -- column types ---------------------------------------------------------------------------
#
# A file's types are a list of ``Type`` messages in column-id order: the root (id 0) first,
# then each column's children depth-first (pre-order), each ``Type`` naming its children's ids
# in ``subtypes``. Two such lists describe the same tree shape exactly when, entry by entry,
# the kinds and the numbers of children agree.


@dataclasses.dataclass
class OrcType:
    """One ``Type`` message (Type fields 1-6); ``fields`` keeps the message as parsed, so
    fields this module does not know (``attributes``) survive a rewrite."""

    kind: int
    subtypes: list[int]
    field_names: list[str]
    maximum_length: int | None = None
    precision: int | None = None
    scale: int | None = None
    fields: list = dataclasses.field(default_factory=list)


def parse_type(buf: bytes) -> OrcType:
    """One serialized ``Type`` message."""
    fields = parse_fields(buf)
    t = OrcType(kind=0, subtypes=[], field_names=[], fields=fields)
    for field, wt, v in fields:
        if field == 1 and wt == 0:
            t.kind = v
        elif field == 2 and wt == 2:  # packed (as written)
            i = 0
            while i < len(v):
                n, i = _read_varint(v, i)
                t.subtypes.append(n)
        elif field == 2 and wt == 0:  # unpacked (allowed to readers by protobuf)
            t.subtypes.append(v)
        elif field == 3 and wt == 2:
            t.field_names.append(v.decode("utf-8", "replace"))
        elif field == 4 and wt == 0:
            t.maximum_length = v
        elif field == 5 and wt == 0:
            t.precision = v
        elif field == 6 and wt == 0:
            t.scale = v
    return t


def encode_type(t: OrcType) -> bytes:
    """``t.fields`` with the kind and ``maximumLength`` of ``t`` (the only fields retyped),
    in field-number order."""
    kept = [(f, wt, v) for f, wt, v in t.fields if f not in (1, 4)]
    new = [(1, 0, t.kind)] + ([(4, 0, t.maximum_length)] if t.maximum_length is not None else [])
    return encode_fields(sorted(kept + new, key=lambda x: x[0]))


def parse_type_string(text: str) -> list[OrcType]:
    """An ORC type string (``struct<a:int,b:varchar(10)>``) as the footer's list of types.
    Parsed by ORC C++ (pyorc), which also reads backquoted field names."""
    import pyorc

    try:
        td = pyorc.TypeDescription.from_string(text)
    except (ValueError, RuntimeError) as e:
        raise InvalidInputError(f"not an ORC type string: {text!r}: {e}") from None
    return types_of(td)


def types_of(td) -> list[OrcType]:
    """A pyorc ``TypeDescription`` as the footer's list of types (column-id order)."""
    out: list[OrcType] = []
    _flatten(td, out)
    return out


def _flatten(td, out: list[OrcType]) -> None:
    kind = int(td.kind)
    names: list[str] = []
    kids: list = []
    if kind == STRUCT:
        names, kids = list(td.fields), list(td.fields.values())
    elif kind == LIST:
        kids = [td.type]
    elif kind == MAP:
        kids = [td.key, td.value]
    elif kind == UNION:
        kids = list(td.cont_types)
    t = OrcType(
        kind=kind,
        subtypes=[],
        field_names=names,
        maximum_length=getattr(td, "max_length", None) if kind in (CHAR, VARCHAR) else None,
        precision=getattr(td, "precision", None) if kind == DECIMAL else None,
        scale=getattr(td, "scale", None) if kind == DECIMAL else None,
    )
    out.append(t)
    for kid in kids:
        t.subtypes.append(len(out))
        _flatten(kid, out)


def type_string(types: list[OrcType], i: int = 0) -> str:
    """The ORC type string of column ``i`` (and its children), field names quoted as ORC
    does (backquotes around names that are not ``[A-Za-z0-9_]+``)."""
    t = types[i]
    kids = [type_string(types, c) for c in t.subtypes]
    if t.kind == STRUCT:
        return "struct<" + ",".join(f"{_quote(n)}:{k}" for n, k in zip(t.field_names, kids)) + ">"
    if t.kind == LIST:
        return f"array<{kids[0]}>"
    if t.kind == MAP:
        return f"map<{kids[0]},{kids[1]}>"
    if t.kind == UNION:
        return "uniontype<" + ",".join(kids) + ">"
    if t.kind == DECIMAL:
        return f"decimal({t.precision},{t.scale})"
    if t.kind in (CHAR, VARCHAR):
        return f"{'char' if t.kind == CHAR else 'varchar'}({t.maximum_length})"
    return SCALAR_NAMES.get(t.kind, f"kind{t.kind}")


def _quote(name: str) -> str:
    if re.fullmatch(r"[A-Za-z0-9_]+", name):
        return name
    return "`" + name.replace("`", "``") + "`"


def column_names(types: list[OrcType]) -> list[str]:
    """A dotted name per column id (``row.name``; list elements ``_elem``, map ``_key`` and
    ``_value``, union variants ``_uN``), for messages."""
    names = [""] * len(types)
    for i, t in enumerate(types):
        if t.kind == STRUCT:
            labels = t.field_names
        elif t.kind == LIST:
            labels = ["_elem"]
        elif t.kind == MAP:
            labels = ["_key", "_value"]
        else:
            labels = [f"_u{k}" for k in range(len(t.subtypes))]
        for label, c in zip(labels, t.subtypes):
            if c < len(names):
                names[c] = f"{names[i]}.{label}" if names[i] else label
    return [n or "(root)" for n in names]


def _same_column(written: OrcType, template: OrcType) -> bool:
    if written.kind != template.kind or len(written.subtypes) != len(template.subtypes):
        return False
    if written.kind in (CHAR, VARCHAR):
        return written.maximum_length == template.maximum_length
    if written.kind == DECIMAL:
        return (written.precision, written.scale) == (template.precision, template.scale)
    return True


def retyped(written: list[OrcType], template: list[OrcType]) -> list[OrcType]:
    """``written`` with each STRING column the template has as VARCHAR(n)/CHAR(n) retyped to
    it. Field names stay the written ones (the data's names; only kinds and lengths come from
    the template). Any other difference raises :class:`InvalidInputError`: writing a schema
    other than the template's must not happen silently."""
    out = []
    for i, (w, t) in enumerate(zip(written, template)):
        if w.kind == STRING and t.kind in (CHAR, VARCHAR):
            out.append(dataclasses.replace(w, kind=t.kind, maximum_length=t.maximum_length))
        elif _same_column(w, t):
            out.append(w)
        else:
            raise InvalidInputError(
                f"cannot write column {column_names(written)[i]} as {type_string(template, i)}: the data "
                f"there is {type_string(written, i)}; only string columns may differ from the template "
                "(as char/varchar)"
            )
    if len(written) != len(template):  # not reached when every entry's arity agreed; a guard
        raise InvalidInputError(f"cannot write {type_string(template)}: the data is {type_string(written)}")
    return out


def retype(footer: bytes, template: list[OrcType]) -> bytes:
    """A decompressed footer with its types retyped to ``template`` (:func:`retyped`); every
    other footer field is kept as it was, in place."""
    fields = parse_fields(footer)
    written = [parse_type(v) for f, wt, v in fields if f == 4 and wt == 2]
    new = iter(encode_type(t) for t in retyped(written, template))
    return encode_fields([(f, wt, next(new)) if f == 4 and wt == 2 else (f, wt, v) for f, wt, v in fields])
