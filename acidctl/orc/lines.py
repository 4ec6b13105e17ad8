"""JSON lines as byte blocks: the slicing and framing every row printer shares.

``dump`` (ACID ORC files), ``dump --merged``, insert-only reads and plain data files all render
Arrow slices with :mod:`acidctl.orc.render` and write the result as one block; this module holds
what they share, so that none of them reaches into another's private helpers.
"""

from __future__ import annotations

#: what ORC's Java FileDump prints after each file
SEPARATOR = b"_" * 120 + b"\n\n"

# Rendering works on slices of a stripe: Arrow's string kernels are several times faster on
# buffers that stay in cache (bench/dump.py), and slices bound the memory of rendered text.
SLICE_ROWS = 32768
#: ... and of at most about this many bytes (wide rows: fewer rows per slice)
SLICE_BYTES = 4 << 20


def to_bytes(rendered):
    """The rows as one newline-terminated UTF-8 block, without copying row by row."""
    import pyarrow.compute as pc

    return lines_bytes(pc.binary_join_element_wise(rendered, "\n", ""))


def lines_bytes(lines):
    """The data of a string array whose values end with a newline, as one block (no copy)."""
    if len(lines) == 0:
        return b""
    import numpy as np

    bufs = lines.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int32 if lines.type == "string" else np.int64)
    start, end = int(offsets[lines.offset]), int(offsets[lines.offset + len(lines)])
    return memoryview(bufs[2])[start:end]


def json_literal(s: str) -> str:
    """``s`` as a JSON string literal, escaped as Java's FileDump escapes it."""
    from acidctl.orc.javafmt import json_string

    return json_string(s)
