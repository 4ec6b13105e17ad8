"""Reading and rewriting an ORC file's tail (postscript + footer) to add user metadata.

Why hand-written: pyarrow's ORC writer is the fast way to turn Arrow data into ORC (it writes
straight from Arrow buffers in C++), but it cannot set footer user metadata, and Hive needs
``hive.acid.key.index`` / ``hive.acid.stats`` / ``hive.acid.version`` there. No maintained
Python package exposes ORC's protobuf messages, and the edit needed is tiny: decompress the
footer, append ``UserMetadataItem`` fields (protobuf allows appending repeated fields), compress
it again and rewrite the postscript's ``footerLength``. Stripes are not touched. Only the
wire-format pieces used here are implemented (varints and length-delimited fields), following
ORC's ``orc_proto.proto`` (PostScript fields 1–8000, Footer field 3 ``stripes`` and field 5
``metadata``).
"""

from __future__ import annotations

import dataclasses
import zlib

# ORC CompressionKind ids
NONE, ZLIB, SNAPPY, LZO, LZ4, ZSTD = range(6)


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


def parse_fields(buf: bytes) -> list[tuple[int, int, object]]:
    """(field number, wire type, value) for a protobuf message: ints for varints, bytes for
    length-delimited fields."""
    i = 0
    out = []
    while i < len(buf):
        key, i = _read_varint(buf, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _read_varint(buf, i)
        elif wt == 2:
            n, i = _read_varint(buf, i)
            v = buf[i:i + n]
            i += n
        elif wt == 5:
            v = buf[i:i + 4]
            i += 4
        elif wt == 1:
            v = buf[i:i + 8]
            i += 8
        else:
            raise ValueError(f"unsupported protobuf wire type {wt}")
        out.append((field, wt, v))
    return out


def encode_fields(fields: list[tuple[int, int, object]]) -> bytes:
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
        chunk = data[i:i + n]
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
        raw = data[off:off + block_size]
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
    footer: bytes              # decompressed
    compression: int
    block_size: int
    footer_start: int          # offset of the compressed footer in the file
    ps_len: int

    def stripe_rows(self) -> list[int]:
        rows = []
        for field, wt, v in parse_fields(self.footer):
            if field == 3 and wt == 2:
                info = {f: val for f, _, val in parse_fields(v)}
                rows.append(int(info.get(5, 0)))
        return rows

    def user_metadata(self) -> dict[str, bytes]:
        meta = {}
        for field, wt, v in parse_fields(self.footer):
            if field == 5 and wt == 2:
                item = {f: val for f, _, val in parse_fields(v)}
                meta[item.get(1, b"").decode()] = item.get(2, b"")
        return meta


def read_tail(data: bytes) -> Tail:
    ps_len = data[-1]
    ps = parse_fields(data[-1 - ps_len:-1])
    vals = {f: v for f, _, v in ps}
    footer_len = int(vals[1])
    kind = int(vals.get(2, NONE))
    block = int(vals.get(3, 256 * 1024))
    start = len(data) - 1 - ps_len - footer_len
    footer = decompress(data[start:start + footer_len], kind)
    return Tail(ps, footer, kind, block, start, ps_len)


def add_user_metadata(data: bytes, items: list[tuple[str, bytes]]) -> bytes:
    """The same ORC file with ``items`` appended to the footer's user metadata."""
    tail = read_tail(data)
    extra = b"".join(encode_fields([(5, 2, encode_fields([(1, 2, k.encode()), (2, 2, v)]))])
                     for k, v in items)
    footer = compress(tail.footer + extra, tail.compression, tail.block_size)
    ps = [(f, wt, len(footer) if f == 1 else v) for f, wt, v in tail.postscript]
    ps_bytes = encode_fields(ps)
    if len(ps_bytes) > 255:
        raise ValueError("ORC postscript longer than 255 bytes")
    return data[:tail.footer_start] + footer + ps_bytes + bytes((len(ps_bytes),))


def _tail_bytes(f) -> tuple[int, bytes]:
    """(offset, bytes) of the footer + postscript + length byte of an open ORC file."""
    import os

    size = os.fstat(f.fileno()).st_size
    f.seek(max(0, size - 256))
    last = f.read()
    ps_len = last[-1]
    vals = {fn: v for fn, _, v in parse_fields(last[-1 - ps_len:-1])}
    n = 1 + ps_len + int(vals[1])
    f.seek(size - n)
    return size - n, f.read(n)


def add_user_metadata_file(path: str, items: list[tuple[str, bytes]]) -> Tail:
    """:func:`add_user_metadata` on a local file in place: only the tail is read, the file is
    truncated at the footer and the new footer + postscript appended. Returns the old tail."""
    with open(path, "r+b") as f:
        start, tail_bytes = _tail_bytes(f)
        tail = read_tail(tail_bytes)
        new = add_user_metadata(tail_bytes, items)
        f.seek(start)
        f.truncate()
        f.write(new)
    return tail


def read_tail_file(path: str) -> Tail:
    """:func:`read_tail` of a local file, reading only its tail."""
    with open(path, "rb") as f:
        return read_tail(_tail_bytes(f)[1])
