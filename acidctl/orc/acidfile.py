"""The ACID ORC file vocabulary, in one place (../shared/spec/orc-acid-files.md §2, §7).

What the writer (:mod:`acidctl.orc.writer`) produces and the checks (:mod:`acidctl.orc.meta`)
and compaction (:mod:`acidctl.compact`) expect: the six top-level fields with Hive's names and
ORC types, the ``hive.acid.*`` user metadata keys, the key index (one ``owid,bucket,rowId;``
entry per stripe, the stripe's **last** key, every entry terminated by ``;``), the event
statistics (``inserts,updates,deletes``, exact) and the strict key order.

Nothing heavy is imported at module level (numpy only inside the array functions), so
importing the vocabulary costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

# the six top-level fields, as Hive's writer names them (readers match them case-insensitively)
ACID_NAMES = ("operation", "originalTransaction", "bucket", "rowId", "currentTransaction", "row")
# their ORC types (the sixth is the table's row struct)
ACID_ORC_TYPES = ("int", "bigint", "int", "bigint", "bigint")

KEY_INDEX = "hive.acid.key.index"
ACID_STATS = "hive.acid.stats"
ACID_VERSION = "hive.acid.version"
# the value of hive.acid.version (and of the _orc_acid_version marker file) Hive 3/4 write
ACID_FORMAT_VERSION = b"2"

Key = tuple[int, int, int]


def acid_type_string(row_type: str) -> str:
    """The ORC type string of an ACID file whose ``row`` has the ORC type ``row_type``."""
    fields = ",".join(f"{n}:{t}" for n, t in zip(ACID_NAMES, ACID_ORC_TYPES))
    return f"struct<{fields},row:{row_type}>"


# -- key index -------------------------------------------------------------------------------


def encode_key_index(ot: np.ndarray, bk: np.ndarray, rid: np.ndarray, stripe_rows: list[int]) -> str:
    """``hive.acid.key.index`` for events (ot, bk, rid) written in stripes of ``stripe_rows``
    rows: the key of each non-empty stripe's last row."""
    out = []
    end = 0
    for n in stripe_rows:
        end += n
        if n:
            out.append("%d,%d,%d;" % (ot[end - 1], bk[end - 1], rid[end - 1]))
    return "".join(out)


def parse_key_index(text: str) -> list[Key]:
    """``owid,bucket,rowId;`` entries; raises ValueError on malformed text."""
    if not text:
        return []
    parts = text.split(";")
    if parts[-1] == "":
        parts.pop()
    out = []
    for part in parts:
        fields = part.split(",")
        if len(fields) != 3:
            raise ValueError(part)
        out.append((int(fields[0]), int(fields[1]), int(fields[2])))
    return out


def signed_bucket(value: int) -> int:
    """A bucket property as Java's signed int (the key order compares it signed)."""
    return value - (1 << 32) if value >= 1 << 31 else value


# -- event statistics ------------------------------------------------------------------------

Stats = tuple[int, int, int]


def event_stats(op: np.ndarray) -> Stats:
    """(inserts, updates, deletes): operation codes 0, 1, 2."""
    return int((op == 0).sum()), int((op == 1).sum()), int((op == 2).sum())


def format_acid_stats(stats: Stats) -> str:
    return "%d,%d,%d" % stats


def parse_acid_stats(text: str) -> dict[str, int]:
    """``inserts,updates,deletes``; raises ValueError on malformed text."""
    ins, upd, dele = (int(x) for x in text.split(","))
    return {"inserts": ins, "updates": upd, "deletes": dele}


def acid_user_metadata(key_index: str, stats: Stats) -> list[tuple[str, bytes]]:
    """The user metadata every written ACID file carries, in Hive's order."""
    return [
        (KEY_INDEX, key_index.encode()),
        (ACID_STATS, format_acid_stats(stats).encode()),
        (ACID_VERSION, ACID_FORMAT_VERSION),
    ]


# -- key order -------------------------------------------------------------------------------


def check_sorted(ot: np.ndarray, bk: np.ndarray, rid: np.ndarray) -> int | None:
    """Index of the first event not strictly greater than its predecessor by
    (originalTransaction, bucket, rowId), or None. ``bk`` must hold the signed values."""
    if len(ot) < 2:
        return None
    inc = (ot[1:] > ot[:-1]) | (
        (ot[1:] == ot[:-1]) & ((bk[1:] > bk[:-1]) | ((bk[1:] == bk[:-1]) & (rid[1:] > rid[:-1])))
    )
    if inc.all():
        return None
    return int(inc.argmin()) + 1


class KeyOrder:
    """Strict key order across successive batches: :meth:`first_break` returns the index (in
    the batch) of the first event not greater than its predecessor (the previous batch's last
    event included), or None, and remembers the batch's last key."""

    def __init__(self) -> None:
        self.last: Key | None = None

    def first_break(self, ot: np.ndarray, bk: np.ndarray, rid: np.ndarray) -> int | None:
        if not len(ot):
            return None
        if self.last is not None:
            import numpy as np

            at = check_sorted(
                np.concatenate([[self.last[0]], ot]),
                np.concatenate([[self.last[1]], bk]),
                np.concatenate([[self.last[2]], rid]),
            )
            at = None if at is None else at - 1
        else:
            at = check_sorted(ot, bk, rid)
        if at is None:
            self.last = (int(ot[-1]), int(bk[-1]), int(rid[-1]))
        return at
