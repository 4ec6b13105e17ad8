"""Hive's snapshot lists: ValidReaderWriteIdList, ValidCompactorWriteIdList, ValidReadTxnList.

Pure data and predicates, exactly as Hive's storage-api defines them
(../shared/spec/directory-state.md §2, ../shared/spec/metastore.md §6):

* ``db.table:hwm:minOpenWriteId:open,...:aborted,...`` (minOpenWriteId = Long.MAX_VALUE when
  nothing is open; empty lists leave the field empty, so "no exceptions" ends in ``::``);
* ``hwm:minOpenTxn:open,...:aborted,...`` for transactions.

Open and aborted ids are kept apart (two sorted tuples) rather than as Hive's exceptions array
plus bitset; the predicates give the same answers.
"""

from __future__ import annotations

import bisect
import dataclasses
import enum
import functools

from acidctl.errors import UsageError

LONG_MAX = 9223372036854775807
LONG_MIN = -9223372036854775808


class RangeResponse(str, enum.Enum):
    NONE = "NONE"
    SOME = "SOME"
    ALL = "ALL"


def _ids(text: str, what: str, src: str) -> tuple[int, ...]:
    if not text:
        return ()
    try:
        ids = tuple(sorted(int(x) for x in text.split(",")))
    except ValueError:
        raise UsageError(f"bad {what} list {text!r} in {src!r}") from None
    for i in ids:
        _in_range(i, f"{what} write id", src, low=1)
    return ids


def _in_range(v: int, what: str, src: str, *, low: int) -> int:
    """Write ids are Java longs: reject what Hive could never have written (a negative high
    watermark, ids beyond Long.MAX_VALUE) instead of failing later with an overflow."""
    if not low <= v <= LONG_MAX:
        raise UsageError(f"bad write-id list {src!r}: {what} {v} is out of range ({low}..{LONG_MAX})")
    return v


@dataclasses.dataclass(frozen=True)
class WriteIdList:
    """A table's ValidReaderWriteIdList (or, with ``compactor=True``, ValidCompactorWriteIdList)."""

    table: str | None
    hwm: int
    open: tuple[int, ...] = ()
    aborted: tuple[int, ...] = ()
    compactor: bool = False
    #: Hive's minOpenWriteId when it is not simply the smallest open id: a compactor list has
    #: no open ids but keeps the table's lowest open write id (``createValidCompactWriteIdList``).
    #: None = derived from ``open``.
    min_open_write_id: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "open", tuple(sorted(self.open)))
        object.__setattr__(self, "aborted", tuple(sorted(self.aborted)))
        if set(self.open) & set(self.aborted):
            raise UsageError("a write id cannot be both open and aborted")

    # -- construction ----------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> "WriteIdList":
        """Parse Hive's string form. ``table`` may be omitted (``hwm:min:open:aborted``)."""
        s = text.strip()
        parts = s.split(":")
        if len(parts) == 5:
            table = None if parts[0] in ("", "null") else parts[0]
            parts = parts[1:]
        elif len(parts) == 4:
            table = None
        elif len(parts) == 2 and parts[1] == "" or len(parts) == 1:
            # "hwm" alone: everything up to hwm committed
            table, parts = None, [parts[0], str(LONG_MAX), "", ""]
        else:
            raise UsageError(f"bad write-id list {text!r}: expected db.table:hwm:minOpen:open:aborted")
        try:
            hwm = int(parts[0])
            min_open = int(parts[1]) if parts[1] else LONG_MAX
        except ValueError:
            raise UsageError(f"bad write-id list {text!r}: hwm and minOpenWriteId must be integers") from None
        _in_range(hwm, "high-water mark", text, low=0)
        _in_range(min_open, "minOpenWriteId", text, low=1)
        open_ids = _ids(parts[2], "open", text)
        aborted = _ids(parts[3], "aborted", text)
        if open_ids and min_open != open_ids[0] and min_open != LONG_MAX:
            raise UsageError(f"bad write-id list {text!r}: minOpenWriteId {min_open} is not the smallest open id")
        # readFromString keeps minOpenWriteId as written: without open ids it can still be set
        # (compactor lists, Hive 4's collapsed lists)
        explicit = min_open if (not open_ids and min_open != LONG_MAX) else None
        return cls(table=table, hwm=hwm, open=open_ids, aborted=aborted, min_open_write_id=explicit)

    @classmethod
    def all_committed(cls, hwm: int, table: str | None = None) -> "WriteIdList":
        return cls(table=table, hwm=hwm)

    # -- Hive's string ---------------------------------------------------------------
    @property
    def min_open(self) -> int:
        if self.min_open_write_id is not None:
            return self.min_open_write_id
        return self.open[0] if self.open else LONG_MAX

    def __str__(self) -> str:
        body = "%d:%d:%s:%s" % (
            self.hwm,
            self.min_open,
            ",".join(map(str, self.open)),
            ",".join(map(str, self.aborted)),
        )
        return f"{self.table if self.table else 'null'}:{body}"

    def to_dict(self) -> dict:
        return {
            "table": self.table,
            "hwm": self.hwm,
            "min_open_write_id": self.min_open,
            "open": list(self.open),
            "aborted": list(self.aborted),
            "compactor": self.compactor,
            "string": str(self),
        }

    # -- predicates (storage-api) ---------------------------------------------------------
    @functools.cached_property
    def exceptions(self) -> tuple[int, ...]:
        # cached: range_valid asks for it once per delta directory; sorting the open and
        # aborted ids each time made a walk over n deltas O(n * k log k)
        return tuple(sorted(self.open + self.aborted))

    def is_valid(self, w: int) -> bool:
        """isWriteIdValid: committed for this reader."""
        if w > self.hwm:
            return False
        return not (_contains(self.open, w) or _contains(self.aborted, w))

    def is_aborted(self, w: int) -> bool:
        return _contains(self.aborted, w)

    def is_open(self, w: int) -> bool:
        return _contains(self.open, w) or w > self.hwm

    def is_valid_base(self, w: int) -> bool:
        """The list's isValidBase: ``w < minOpenWriteId and w <= hwm``."""
        return w < self.min_open and w <= self.hwm

    def range_valid(self, lo: int, hi: int) -> RangeResponse:
        """isWriteIdRangeValid(min, max)."""
        if self.compactor:
            return RangeResponse.ALL if self.hwm >= hi else RangeResponse.NONE
        if lo > self.hwm:
            return RangeResponse.NONE
        exc = self.exceptions
        if exc and exc[0] > hi:
            return RangeResponse.ALL
        count = max(0, hi - self.hwm) + _count_between(exc, lo, hi)
        if count == 0:
            return RangeResponse.ALL
        if count == hi - lo + 1:
            return RangeResponse.NONE
        return RangeResponse.SOME

    def range_aborted(self, lo: int, hi: int) -> RangeResponse:
        """isWriteIdRangeAborted(min, max)."""
        if self.hwm < lo:
            return RangeResponse.NONE
        n = _count_between(self.aborted, lo, hi)
        if n == 0:
            return RangeResponse.NONE
        if n == hi - lo + 1:
            return RangeResponse.ALL
        return RangeResponse.SOME

    # -- variants --------------------------------------------------------------------
    def for_compactor(self) -> "WriteIdList":
        """ValidCompactorWriteIdList: hwm = lowest open − 1; only aborted ids ≤ hwm remain."""
        hwm = min(self.hwm, self.min_open - 1) if self.open else self.hwm
        return WriteIdList(
            table=self.table,
            hwm=hwm,
            open=(),
            aborted=tuple(a for a in self.aborted if a <= hwm),
            compactor=True,
            min_open_write_id=self.min_open if self.open else None,
        )

    def for_cleaner(self, highest_write_id: int) -> "WriteIdList":
        """Hive 3 Cleaner list: hwm = the compaction's highest write id, no exceptions."""
        return WriteIdList(table=self.table, hwm=highest_write_id)

    def as_of(self, write_id: int) -> "WriteIdList":
        """The same snapshot cut at ``write_id`` (for ``--as-of``). Beyond the high-water mark
        there is nothing to cut: refused, so that a typo does not silently read the present."""
        if write_id > self.hwm:
            raise UsageError(
                f"--as-of {write_id} is beyond the snapshot's high-water mark {self.hwm}",
                hint=f"use --as-of {self.hwm} or lower",
            )
        if write_id < 0:
            raise UsageError(f"--as-of {write_id}: write ids are not negative")
        hwm = min(self.hwm, write_id)
        return WriteIdList(
            table=self.table,
            hwm=hwm,
            open=tuple(x for x in self.open if x <= hwm),
            aborted=tuple(x for x in self.aborted if x <= hwm),
        )


@dataclasses.dataclass(frozen=True)
class TxnList:
    """ValidReadTxnList: ``hwm:minOpenTxn:open,...:aborted,...``."""

    hwm: int
    open: tuple[int, ...] = ()
    aborted: tuple[int, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "open", tuple(sorted(self.open)))
        object.__setattr__(self, "aborted", tuple(sorted(self.aborted)))

    @classmethod
    def parse(cls, text: str) -> "TxnList":
        parts = text.strip().split(":")
        if len(parts) != 4:
            raise UsageError(f"bad txn list {text!r}: expected hwm:minOpenTxn:open:aborted")
        try:
            hwm = int(parts[0])
        except ValueError:
            raise UsageError(f"bad txn list {text!r}") from None
        return cls(hwm=hwm, open=_ids(parts[2], "open", text), aborted=_ids(parts[3], "aborted", text))

    @classmethod
    def all_committed(cls) -> "TxnList":
        return cls(hwm=LONG_MAX)

    @property
    def min_open(self) -> int:
        return self.open[0] if self.open else LONG_MAX

    def __str__(self) -> str:
        return "%d:%d:%s:%s" % (
            self.hwm,
            self.min_open,
            ",".join(map(str, self.open)),
            ",".join(map(str, self.aborted)),
        )

    def to_dict(self) -> dict:
        return {
            "hwm": self.hwm,
            "min_open_txn": self.min_open,
            "open": list(self.open),
            "aborted": list(self.aborted),
            "string": str(self),
        }

    def is_valid(self, txn: int) -> bool:
        """isTxnValid; txn 0 (no visibility suffix) is always valid."""
        if txn == 0:
            return True
        return txn <= self.hwm and not (_contains(self.open, txn) or _contains(self.aborted, txn))

    def is_aborted(self, txn: int) -> bool:
        return _contains(self.aborted, txn)


def _contains(sorted_ids: tuple[int, ...], x: int) -> bool:
    i = bisect.bisect_left(sorted_ids, x)
    return i < len(sorted_ids) and sorted_ids[i] == x


def _count_between(sorted_ids: tuple[int, ...], lo: int, hi: int) -> int:
    return bisect.bisect_right(sorted_ids, hi) - bisect.bisect_left(sorted_ids, lo)
