"""Timestamp columns as ORC stores them, (seconds, nanos), read by pyorc: for the stripes whose
timestamps Arrow cannot hold (outside 1677..2262 in nanoseconds; ``acidctl.dump`` reads every
other column with Arrow).

pyorc builds one Python object per value under the GIL (~1 µs a timestamp: half of a far-
timestamp dump's CPU, bench/dump.py), so a large stripe is read by two processes at once: this
one reads the first rows while a child process (:func:`start_child`, ``python -c`` importing
only pyorc and this module) reads the rest and streams them back as raw arrays, block by block,
so that this process renders them as they come. Whatever goes wrong in the child, this process
reads the rows it did not get itself.

Rows come as :class:`Block`: the validity of the ACID ``row`` struct (None: every row present,
or an original file) and, per timestamp column, (valid or None, seconds, nanos) numpy arrays.
"""

from __future__ import annotations

import dataclasses
import operator
import os
import subprocess
import sys
from itertools import repeat
from typing import Any

#: a stripe part is given to a child process from this many rows on (below, its start costs
#: more than it saves)
CHILD_MIN_ROWS = 131072


class _SliceTimestamp:
    """A pyorc converter keeping a timestamp as ``slice(seconds, nanos, tz)``: ``slice`` is a
    builtin called from C with exactly the converter's three arguments, so no Python frame runs
    per value (a Python ``from_orc`` cost 0.4 s a million values); ``.start`` / ``.stop`` are
    read back by ``operator.attrgetter`` in C as well."""

    from_orc = slice

    @staticmethod
    def to_orc(*args):  # pragma: no cover - never written through
        raise NotImplementedError


def converters() -> dict:
    from pyorc.enums import TypeKind

    return {TypeKind.TIMESTAMP: _SliceTimestamp, TypeKind.TIMESTAMP_INSTANT: _SliceTimestamp}


def open_stripe(source, index: int, columns: list[str], first_row: int):
    """pyorc's reader of ``columns`` of stripe ``index``, at row ``first_row`` of the stripe."""
    import pyorc

    source.seek(0)
    stripe = pyorc.Reader(source, column_names=columns, converters=converters()).read_stripe(index)
    if first_row:
        stripe.seek(first_row)
    return stripe


@dataclasses.dataclass
class Block:
    rows: int
    row_valid: Any  # numpy bool array, or None: every row present
    columns: list  # per timestamp column: (valid bool array or None, seconds int64, nanos int64)


def _raw(rows: list, acid: bool, ncols: int) -> tuple[bytes | None, list]:
    """pyorc rows → (row validity bytes or None, [(valid bytes or None, seconds, nanos)]) with
    seconds/nanos as ``array('q')``: C-level loops only (``map``), no numpy (the child does not
    import it)."""
    from array import array

    n = len(rows)
    row_valid = None
    if acid:
        inner = list(map(operator.itemgetter(0), rows))
        if inner.count(None):
            row_valid = bytes(map(operator.is_not, inner, repeat(None)))
            empty = (None,) * ncols
            inner = [empty if x is None else x for x in inner]
    else:
        inner = rows
    cols = []
    zero = slice(0, 0)
    for j in range(ncols):
        values = list(map(operator.itemgetter(j), inner))
        valid = None
        if values.count(None):
            valid = bytes(map(operator.is_not, values, repeat(None)))
            values = [zero if v is None else v for v in values]
        secs = array("q", map(operator.attrgetter("start"), values))
        nanos = array("q", map(operator.attrgetter("stop"), values))
        assert len(secs) == n
        cols.append((valid, secs, nanos))
    return row_valid, cols


def _block(n: int, row_valid, cols) -> Block:
    import numpy as np

    def flags(b):
        return None if b is None else np.frombuffer(b, dtype=np.bool_)

    return Block(
        n,
        flags(row_valid),
        [(flags(v), np.frombuffer(s, dtype=np.int64), np.frombuffer(ns, dtype=np.int64)) for v, s, ns in cols],
    )


def read_block(stripe, count: int, acid: bool, ncols: int) -> Block:
    """The next ``count`` rows (fewer at the stripe's end) of a pyorc stripe."""
    rows = stripe.read(count)
    row_valid, cols = _raw(rows, acid, ncols)
    return _block(len(rows), row_valid, cols)


# -- the child process -----------------------------------------------------------------------


def _encode(n: int, row_valid, cols) -> bytes:
    out = [n.to_bytes(8, "little"), b"\1" if row_valid is not None else b"\0", row_valid or b""]
    for valid, secs, nanos in cols:
        out += [b"\1" if valid is not None else b"\0", valid or b"", secs.tobytes(), nanos.tobytes()]
    return b"".join(out)


def _decode(data: bytes, acid: bool, ncols: int) -> Block:
    n = int.from_bytes(data[:8], "little")
    pos = 8

    def take(size):
        nonlocal pos
        part = data[pos : pos + size]
        if len(part) != size:
            raise ValueError("short child output")
        pos += size
        return part

    def flags():
        return take(n) if take(1) == b"\1" else None

    row_valid = flags()
    cols = [(flags(), take(8 * n), take(8 * n)) for _ in range(ncols)]
    if pos != len(data) or (row_valid is not None and not acid):
        raise ValueError("unexpected child output")
    return _block(n, row_valid, cols)


def child_main(argv: list[str]) -> None:
    """``python -c`` entry: PATH STRIPE FIRST_ROW COUNT CHUNK ACID COLUMN... → the rows on stdout
    as blocks of CHUNK rows, each an 8-byte length and its encoding (:func:`_encode`)."""
    path, index, first, count, chunk = argv[0], int(argv[1]), int(argv[2]), int(argv[3]), int(argv[4])
    acid, columns = argv[5] == "1", argv[6:]
    out = sys.stdout.buffer
    with open(path, "rb") as f:
        stripe = open_stripe(f, index, columns, first)
        done = 0
        while done < count:
            rows = stripe.read(min(chunk, count - done))
            if not rows:
                break
            data = _encode(len(rows), *_raw(rows, acid, len(columns)))
            out.write(len(data).to_bytes(8, "little"))
            out.write(data)
            out.flush()
            done += len(rows)


class Child:
    """Rows [first, first + count) of a stripe read by a child process, handed over as they
    come (:meth:`blocks`)."""

    def __init__(self, path: str, index: int, columns: list[str], first: int, count: int, acid: bool, chunk: int):
        self.count, self.acid, self.ncols = count, acid, len(columns)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
        code = "import sys; from acidctl.orc.tsparts import child_main; child_main(sys.argv[1:])"
        args = [path, str(index), str(first), str(count), str(chunk), "1" if acid else "0", *columns]
        self.proc: subprocess.Popen | None = subprocess.Popen(
            [sys.executable, "-c", code, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )

    def blocks(self):
        """The child's rows in order, a block at a time (reading the pipe releases the GIL:
        rendering goes on meanwhile). Ends early, without an error, when the child fails or
        says something unexpected: the caller reads the rows it did not get itself."""
        proc = self.proc
        if proc is None or proc.stdout is None:
            return
        got = 0
        try:
            while got < self.count:
                head = proc.stdout.read(8)
                if len(head) != 8:
                    return
                block = _decode(proc.stdout.read(int.from_bytes(head, "little")), self.acid, self.ncols)
                if not block.rows or got + block.rows > self.count:
                    return
                got += block.rows
                yield block
        except (OSError, ValueError):
            return
        finally:
            self.cancel()

    def cancel(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


def start_child(
    path: str | None, index: int, columns: list[str], first: int, count: int, acid: bool, chunk: int
) -> Child | None:
    """A child process reading rows [first, first + count) of the stripe, when worth it: a
    local file (the child opens ``path``) and at least CHILD_MIN_ROWS rows. The caller decides
    whether a second CPU is there to run it."""
    if path is None or count < CHILD_MIN_ROWS or not sys.executable:
        return None
    try:
        return Child(path, index, columns, first, count, acid, chunk)
    except OSError:
        return None
