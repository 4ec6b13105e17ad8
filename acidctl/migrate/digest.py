"""Order-independent digests of rows per Hive partition: the verification of ``acidctl migrate``
(the Hive snapshot's rows vs the target's new snapshot read back).

A row's hash is the mix of a polynomial over its columns' value hashes, the columns in name
order (so column order does not matter; column names salt them): fixed-width values enter as
their bits, strings as a mixed polynomial of their 64-bit words, structs likewise by field name,
lists and maps with each element's position. A partition's digest is the row count plus two
independent 64-bit sums of the row hashes (mod 2**64): the same multiset of rows gives the same
digest whatever the batch split or row order. Values are normalised before hashing, so rows read
from Hive's ORC files and read back from Iceberg/Delta Parquet agree: string/large_string,
binary/large_binary, list/large_list and any list field name are one; timestamps of any unit are
nanoseconds; dates are days; floats are float64; structs and maps hash field by field; a null
hashes as a constant of its own.

Everything is vectorised with numpy over Arrow buffers (no pandas), :data:`CHUNK_ROWS` rows at a
time; strings and binaries are hashed a 64-bit word at a time (not a byte at a time), fixed-width
columns straight from their buffers. The digests are compared within one run only (never stored),
so the functions may change between versions.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from acidctl.migrate.types import DEFAULT_PARTITION

_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
_NULL = 0x5BD1E9955BD1E995
_GOLDEN = 0x9E3779B97F4A7C15
#: the multiplier of a row's (a struct's) polynomial over its columns' hashes (odd)
_ROW_BASE = 0xC2B2AE3D27D4EB4F


_BASE = 0x9E3779B97F4A7C15  # odd
_POWERS: list = []  # [B**k mod 2**64] for k below the longest value seen (in words)
#: byte masks of a value's last word: MASKS[r] keeps its r first (low) bytes
_MASKS: list = []
#: values whose remaining words a batch still hashes one at a time (long values, few left)
_FEW = 32


def _powers(n: int) -> np.ndarray:
    """B**k mod 2**64 for k = 0..n-1 (cached, grown by doubling)."""
    import numpy as np

    if not _POWERS or len(_POWERS[0]) < n:
        size = max(n, 64, 2 * len(_POWERS[0]) if _POWERS else 0)
        v = np.full(size, np.uint64(_BASE), dtype=np.uint64)
        v[0] = 1
        with np.errstate(over="ignore"):
            _POWERS[:] = [np.cumprod(v, dtype=np.uint64)]
    return _POWERS[0][:n]


def _masks() -> np.ndarray:
    import numpy as np

    if not _MASKS:
        _MASKS.append(np.array([(1 << (8 * r)) - 1 for r in range(8)] + [(1 << 64) - 1], dtype=np.uint64))
    return _MASKS[0]


def _mix(x: np.ndarray, *, owned: bool = False) -> np.ndarray:
    """splitmix64's finaliser, element-wise on uint64 (wrapping arithmetic); ``owned``: ``x``
    is a fresh uint64 array of the caller's, mixed in place."""
    import numpy as np

    if not owned or x.dtype != np.uint64 or not x.flags.writeable:
        x = x.astype(np.uint64, copy=True)
    t = np.empty_like(x)
    with np.errstate(over="ignore"):
        np.right_shift(x, np.uint64(30), out=t)
        x ^= t
        x *= np.uint64(_M1)
        np.right_shift(x, np.uint64(27), out=t)
        x ^= t
        x *= np.uint64(_M2)
        np.right_shift(x, np.uint64(31), out=t)
        x ^= t
    return x


@functools.lru_cache(maxsize=4096)
def _salt(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def _combine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    import numpy as np

    with np.errstate(over="ignore"):
        return _mix(a * np.uint64(31) + b + np.uint64(_GOLDEN), owned=True)


def _null_fill(h: np.ndarray, arr) -> np.ndarray:
    import numpy as np

    if arr.null_count:
        valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        h = np.where(valid, h, np.uint64(_NULL))
    return h


def _var_bytes_hash(arr, salt: int) -> np.ndarray:
    """Per value of a (large_)string/binary array: a hash of its bytes.

    A value's bytes are read as little-endian 64-bit words from its first byte (the last word
    zero-padded) and hashed as the polynomial sum of word_j * B**j (mod 2**64, B odd), then
    mixed with the length and the salt: the same bytes hash alike wherever they sit in a
    buffer. Values all of one length are read through strided views, word j of every value
    at once; else words are gathered for all values at once, word j of every value longer than 8*j bytes per step (a view of the
    buffer at every byte offset), and the few values still long after most are done are summed
    one at a time, so one huge value costs no step per word."""
    import numpy as np
    import pyarrow as pa

    import pyarrow.types as pt

    if not (pt.is_string(arr.type) or pt.is_binary(arr.type) or pt.is_large_string(arr.type)):
        arr = arr.cast(pa.large_binary())
    n = len(arr)
    bufs = arr.buffers()
    width = 8 if pt.is_large_string(arr.type) or pt.is_large_binary(arr.type) else 4
    offsets = np.frombuffer(bufs[1], dtype=np.int64 if width == 8 else np.int32, count=n + 1, offset=arr.offset * width)
    offsets = offsets.astype(np.int64)
    start, end = int(offsets[0]), int(offsets[-1])
    lengths = np.diff(offsets)
    sums = np.zeros(n, dtype=np.uint64)
    if end > start and bufs[2] is not None:
        size = end - start
        padded = np.zeros(size + 8, dtype=np.uint8)  # 8 bytes past the end: a whole last word
        padded[:size] = np.frombuffer(bufs[2], dtype=np.uint8, count=size, offset=start)
        # the 64-bit little-endian word starting at every byte offset (unaligned view)
        words = np.ndarray(shape=(size + 1,), dtype="<u8", buffer=padded, strides=(1,))
        same = int(lengths[0])
        if same * n == size and bool((lengths == same).all()):
            # every value of one length (codes, ids, dates as text): word j of all values is a
            # strided view (value i's at byte i*same + 8*j); the last one's bytes past the
            # value masked
            nw = (same + 7) >> 3
            powers = _powers(nw)
            with np.errstate(over="ignore"):
                for j in range(nw):
                    w = words[8 * j : 8 * j + same * (n - 1) + 1 : same]
                    if j == nw - 1:
                        w = w & _masks()[same - 8 * j]
                    sums += w * powers[j]
        else:
            _word_sums(sums, words, offsets[:-1] - start, lengths)
    with np.errstate(over="ignore"):  # one mix of (words' polynomial, length, salt): alike everywhere
        return _mix(sums + lengths.astype(np.uint64) * np.uint64(_GOLDEN) + np.uint64(salt), owned=True)


def _word_sums(sums: np.ndarray, words: np.ndarray, pos: np.ndarray, rem: np.ndarray) -> None:
    """``sums[i]`` += sum of word_j * B**j over the words of value i (starting at byte
    ``pos[i]`` of ``words``' buffer, ``rem[i]`` bytes long), wrapping."""
    import numpy as np

    masks = _masks()
    who = None  # the values still taking part (None: all)
    live = rem > 0
    if not live.all():
        who = np.flatnonzero(live)
        pos, rem = pos[who], rem[who]
    pos = pos.copy()
    rem = rem.copy()
    k = 0
    with np.errstate(over="ignore"):
        while len(pos):
            if len(pos) <= _FEW and int(rem.max()) > 8 * _FEW:
                # a few long values left: each one's remaining words at once
                ids = who if who is not None else np.arange(len(pos))
                for i, p, r in zip(ids.tolist(), pos.tolist(), rem.tolist()):
                    nw = (r + 7) >> 3
                    w = words[p : p + 8 * nw : 8].copy()
                    w[-1] &= masks[min(r - 8 * (nw - 1), 8)]
                    sums[i] += np.sum(w * _powers(k + nw)[k:], dtype=np.uint64)
                return
            w = words[pos]
            if int(rem.min()) < 8:
                w &= masks[np.minimum(rem, 8)]
            w *= _powers(k + 1)[k]
            if who is None:
                sums += w
            else:
                sums[who] += w
            pos += 8
            rem -= 8
            k += 1
            live = rem > 0
            if not live.all():
                who = np.flatnonzero(live) if who is None else who[live]
                pos, rem = pos[live], rem[live]


def _segment_sums(sums: np.ndarray, terms: np.ndarray, offsets: np.ndarray) -> None:
    """``sums[i]`` += the sum (wrapping) of ``terms`` of value i (``offsets``: n + 1 absolute)."""
    import numpy as np

    lengths = np.diff(offsets)
    nz = lengths > 0
    if nz.all():  # no empty value: no mask
        sums += np.add.reduceat(terms, offsets[:-1] - offsets[0])
    elif nz.any():
        sums[nz] += np.add.reduceat(terms, (offsets[:-1] - offsets[0])[nz])


def _hash_array(arr, salt: int) -> np.ndarray:
    """uint64 hash per value of ``arr`` (an Arrow Array), nulls included, normalised types."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.types as pt

    t = arr.type
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    if pt.is_dictionary(t):
        return _hash_array(arr.cast(t.value_type), salt)
    if pt.is_null(t):
        return np.full(n, _NULL, dtype=np.uint64)
    if pt.is_string(t) or pt.is_large_string(t) or pt.is_binary(t) or pt.is_large_binary(t):
        h = _var_bytes_hash(arr, salt)
    elif pt.is_fixed_size_binary(t):
        h = _var_bytes_hash(arr.cast(pa.binary()), salt)
    elif pt.is_struct(t):
        # the fields in name order (field order free), then mixed
        fields = sorted(range(t.num_fields), key=lambda i: t.field(i).name.lower())
        h = _polynomial(n, salt, ((arr.field(i), salt ^ _salt(t.field(i).name.lower())) for i in fields))
        h = _mix(h, owned=True)
    elif pt.is_map(t) or pt.is_list(t) or pt.is_large_list(t):
        offsets = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
        lengths = np.diff(offsets)
        start, end = int(offsets[0]), int(offsets[-1])
        flat = arr.values.slice(start, end - start)  # a map's values: its key/value entries
        h = _mix(lengths.astype(np.uint64) + np.uint64(salt), owned=True)
        sums = np.zeros(n, dtype=np.uint64)
        if end > start:
            inner = _hash_array(flat, salt ^ 0x1234567)
            owner = np.repeat(np.arange(n), lengths)
            pos = (np.arange(end - start, dtype=np.int64) - (offsets[:-1] - start)[owner]).astype(np.uint64)
            terms = _combine(inner, pos)
            _segment_sums(sums, terms, offsets)
        h = _combine(h, sums)
    else:
        # the bits themselves, salted (one value in 2**64 per column hashes like a null):
        # the row or struct holding them mixes
        h = _fixed_bits(arr) ^ np.uint64(salt)
    return _null_fill(h, arr)


def _polynomial(n: int, seed: int, values) -> np.ndarray:
    """sum of hash_i * R**(k-1-i) over the (array, salt) pairs ``values`` (k of them), plus
    seed * R**k, wrapping: each value's own coefficient, a single multiply-add a column."""
    import numpy as np

    h = np.full(n, np.uint64(seed), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for arr, salt in values:
            h *= np.uint64(_ROW_BASE)
            h += _hash_array(arr, salt)
    return h


def _fixed_bits(arr) -> np.ndarray:
    """A fixed-width array's values as uint64 bit patterns, normalised."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.types as pt

    t = arr.type
    if not arr.null_count and (pt.is_int64(t) or pt.is_float64(t) or pt.is_int32(t)):
        # the common cases straight from the Arrow buffer (no cast, no fill)
        dtype = np.int32 if pt.is_int32(t) else np.int64 if pt.is_int64(t) else np.float64
        v = np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr), offset=arr.offset * np.dtype(dtype).itemsize)
        if dtype is np.float64:
            return np.where(v == 0.0, 0.0, v).view(np.uint64)  # -0.0 == 0.0
        return v.astype(np.int64).view(np.uint64) if dtype is np.int32 else v.view(np.uint64)
    if pt.is_timestamp(t):
        factor = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}[t.unit]
        v = arr.cast(pa.int64()).fill_null(0).to_numpy()
        with np.errstate(over="ignore"):
            return (v * np.int64(factor)).view(np.uint64)
    if pt.is_date(t):
        return arr.cast(pa.date32()).cast(pa.int32()).fill_null(0).to_numpy().astype(np.int64).view(np.uint64)
    if pt.is_time(t) or pt.is_duration(t):
        return arr.cast(pa.int64()).fill_null(0).to_numpy().view(np.uint64)
    if pt.is_boolean(t):
        return arr.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint64)
    if pt.is_floating(t):
        v = arr.cast(pa.float64()).fill_null(0.0).to_numpy()
        v = np.where(v == 0.0, 0.0, v)  # -0.0 == 0.0
        return v.view(np.uint64)
    if pt.is_integer(t):
        return arr.cast(pa.int64()).fill_null(0).to_numpy().view(np.uint64)
    if pt.is_decimal(t):
        d = arr.cast(pa.decimal128(38, t.scale)).fill_null(0)
        words = np.frombuffer(d.buffers()[1], dtype=np.uint64, count=2 * len(d), offset=d.offset * 16)
        return _combine(words[0::2], words[1::2])
    raise TypeError(f"no digest for Arrow type {t}")


def row_hashes(batch, *, seed: int = 0) -> np.ndarray:
    """uint64 per row of ``batch`` (RecordBatch or Table), independent of column order."""
    import pyarrow as pa

    if isinstance(batch, pa.Table):
        batch = batch.combine_chunks()
        cols = [
            (
                batch.schema.field(i).name.lower(),
                batch.column(i).chunk(0) if batch.column(i).num_chunks else pa.array([], batch.schema.field(i).type),
            )
            for i in range(batch.num_columns)
        ]
    else:
        cols = [(batch.schema.field(i).name.lower(), batch.column(i)) for i in range(batch.num_columns)]
    # the columns in name order: the column order does not matter
    cols.sort(key=lambda c: c[0])
    h = _polynomial(batch.num_rows, seed, ((col, _salt(name) ^ seed) for name, col in cols))
    return _mix(h, owned=True)


def partition_name(values: dict[str, Any]) -> str:
    """Hive's partition name for typed values (FileUtils.makePartName: ``key=value`` escaped
    with escapePathName, ``__HIVE_DEFAULT_PARTITION__`` for null or empty), in key order."""
    from acidctl.metastore.tables import escape_path_name

    parts = []
    for k, v in values.items():
        parts.append(f"{escape_path_name(k.lower())}={escape_path_name(_value_text(v))}")
    return "/".join(parts)


def _value_text(v: Any) -> str:
    import datetime

    if v is None or v == "":
        return DEFAULT_PARTITION
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, datetime.datetime):
        text = v.strftime("%Y-%m-%d %H:%M:%S")
        return text + (f".{v.microsecond:06d}".rstrip("0") if v.microsecond else "")
    if isinstance(v, datetime.date):
        return v.isoformat()
    return str(v)


#: rows hashed at a time: the hashes' numpy temporaries (8 bytes a row) stay below glibc's
#: mmap threshold (128 KiB) and in cache; a 64k-row batch at once made every temporary a
#: fresh mapping: 1 GiB of page faults a 4M-row migrate (a third of its CPU, in the kernel)
CHUNK_ROWS = 8192


class _Acc:
    __slots__ = ("rows", "s1", "s2")

    def __init__(self):
        self.rows = 0
        self.s1 = 0
        self.s2 = 0


def partition_digests(
    batches: Iterable, partition_columns: list[str], *, only: set[str] | None = None
) -> dict[str, tuple[int, str]]:
    """Per Hive partition name (``""`` unpartitioned): (row count, digest hex) of the rows.
    ``only``: just these partitions (the others' rows are skipped unhashed)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    accs: dict[str, _Acc] = {}
    cols = [c.lower() for c in partition_columns]
    mask64 = (1 << 64) - 1

    def add(key: str, b) -> None:
        if only is not None and key not in only:
            return
        if not b.num_rows:
            accs.setdefault(key, _Acc())
            return
        a = accs.setdefault(key, _Acc())
        a.rows += b.num_rows
        for off in range(0, b.num_rows, CHUNK_ROWS):
            h = row_hashes(b.slice(off, CHUNK_ROWS), seed=1)
            with np.errstate(over="ignore"):
                a.s1 = (a.s1 + int(h.sum(dtype=np.uint64))) & mask64
                a.s2 = (a.s2 + int(_mix(h ^ np.uint64(0x51ED), owned=True).sum(dtype=np.uint64))) & mask64

    for b in batches:
        if isinstance(b, pa.Table):
            b = b.combine_chunks().to_batches()[0] if b.num_rows else pa.RecordBatch.from_pylist([], schema=b.schema)
        if not cols:
            add("", b)
            continue
        lower = [n.lower() for n in b.schema.names]
        idx = [lower.index(c) for c in cols]
        if not b.num_rows:
            continue
        single = all(pc.count_distinct(b.column(i), mode="all").as_py() == 1 for i in idx)
        if single:
            add(partition_name({c: b.column(i)[0].as_py() for c, i in zip(cols, idx)}), b)
            continue
        t = pa.Table.from_batches([b]).append_column("__acidctl_row", pa.array(np.arange(b.num_rows)))
        groups = t.group_by([b.schema.names[i] for i in idx], use_threads=False).aggregate([("__acidctl_row", "list")])
        for g in groups.to_pylist():
            rows = pa.array(g["__acidctl_row_list"])
            sub = b.take(rows)
            add(partition_name({c: g[b.schema.names[i]] for c, i in zip(cols, idx)}), sub)
    return {k: (a.rows, f"{a.s1:016x}{a.s2:016x}") for k, a in accs.items()}
