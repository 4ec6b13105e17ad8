"""Hive 2.3 (ACID v1) rules: its ValidTxnList, its table modes and OrcRawRecordMerger's merge.

(../shared/spec/insert-only-and-hive2.md Part B.) Hive 2 has no write ids: directory names and
the ``originalTransaction`` / ``currentTransaction`` fields hold **txn ids**, and a reader's
snapshot is a ``ValidTxnList`` ``hwm:minOpenTxn[:exception]*`` whose exceptions mix open and
aborted txns (B.2). :class:`Hive2TxnList` parses it and turns it into the
:class:`~acidctl.acid.writeids.WriteIdList` the rest of acidctl works with (txn ids used as
write ids): every predicate Hive 2 uses (``isTxnValid``, ``isValidBase``, ``isTxnRangeValid``)
gives the same answer on it. Exceptions below ``minOpenTxn`` can only be aborted; the others
are kept as open (Hive 2 cannot tell, so neither can we — never folded by a compaction).

Merging (B.6): events are ordered by (originalTransaction, bucket, rowId) ascending, then
currentTransaction **descending**, then the statement id of their directory **descending**;
events whose currentTransaction is not valid are skipped first; the first remaining event of
each row wins (operation 0 or 1: its row is the row; 2: the row is gone). This one rule covers
legacy tables (update events, op 1, inside ``delta_`` directories; an update keeps the row's
ROW__ID) and split-update tables. Original files: synthetic ROW__ID (0, plain bucket id, row
number **within the file**).

:func:`merge_sources` / :func:`read_partition` merge a bucket whole in memory: the path for what
the streamed merge (:mod:`acidctl.acid.hive2stream`, used by reads, export and compaction)
cannot take — files out of key order, equal merge keys.
"""

from __future__ import annotations

import dataclasses
import posixpath
from typing import TYPE_CHECKING, Iterator

from acidctl.acid.writeids import LONG_MAX, WriteIdList
from acidctl.errors import UsageError

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from acidctl.acid.acidstate import AcidState
    from acidctl.acid.listing import DirListing
    from acidctl.fs import TableFS

LEGACY = "legacy"
SPLIT_UPDATE = "split-update"


def table_mode(properties: dict[str, str] | None) -> str:
    """B.1: ``transactional_properties`` absent or ``legacy`` → legacy; ``default`` → split-update
    (Hive 2.3 stores the value lower-cased; compared ignoring case)."""
    value = next((v for k, v in (properties or {}).items() if k.lower() == "transactional_properties"), None)
    if value is None or value.strip().lower() in ("", LEGACY):
        return LEGACY
    if value.strip().lower() == "default":
        return SPLIT_UPDATE
    raise UsageError(f"transactional_properties={value!r} is not a Hive 2.3 full-ACID mode (default or legacy)")


@dataclasses.dataclass(frozen=True)
class Hive2TxnList:
    """Hive 2.3's ``ValidReadTxnList`` (B.2)."""

    hwm: int
    min_open: int = LONG_MAX
    exceptions: tuple[int, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "exceptions", tuple(sorted(set(self.exceptions))))

    @classmethod
    def parse(cls, text: str | None) -> "Hive2TxnList":
        """``hwm:minOpenTxn[:exc]*``; a null or empty string means everything is valid. Java's
        ``split(":")`` drops trailing empty fields, so ``2:9223372036854775807:`` has none."""
        s = (text or "").strip()
        if not s:
            return cls(hwm=LONG_MAX)
        parts = s.split(":")
        while parts and parts[-1] == "":
            parts.pop()
        if len(parts) < 2:
            raise UsageError(
                f"bad Hive 2 txn list {text!r}: expected hwm:minOpenTxn[:exception]*",
                hint="e.g. 2:9223372036854775807: (all committed up to 2) or 5:4:3:4",
            )
        try:
            nums = [int(p) for p in parts]
        except ValueError:
            raise UsageError(
                f"bad Hive 2 txn list {text!r}: every field must be an integer "
                "(Hive 3's comma lists are not Hive 2's format)"
            ) from None
        hwm, min_open, exc = nums[0], nums[1], nums[2:]
        if hwm < 0 or min_open < 1 or any(not 1 <= x <= hwm for x in exc):
            raise UsageError(f"bad Hive 2 txn list {text!r}: ids must be ≥ 1 and exceptions ≤ the high-water mark")
        if min_open != LONG_MAX and min_open > hwm + 1:
            raise UsageError(f"bad Hive 2 txn list {text!r}: minOpenTxn {min_open} is above the high-water mark")
        return cls(hwm=hwm, min_open=min_open, exceptions=tuple(exc))

    def __str__(self) -> str:
        return f"{self.hwm}:{self.min_open}:" + ":".join(map(str, self.exceptions))

    def to_dict(self) -> dict:
        return {
            "hwm": self.hwm,
            "min_open_txn": self.min_open,
            "exceptions": list(self.exceptions),
            "string": str(self),
        }

    # -- Hive 2's predicates (ValidReadTxnList) ------------------------------------------
    def is_valid(self, t: int) -> bool:
        return t <= self.hwm and t not in self.exceptions

    def is_valid_base(self, t: int) -> bool:
        return t < self.min_open and t <= self.hwm

    # -- as the write-id list the rest of acidctl uses ----------------------------------------
    def to_write_ids(self, table: str | None = None) -> WriteIdList:
        """The same snapshot as a WriteIdList (txn ids as write ids): exceptions below
        ``minOpenTxn`` are aborted, the others open; ``minOpenTxn`` kept as given."""
        aborted = tuple(x for x in self.exceptions if x < self.min_open)
        open_ids = tuple(x for x in self.exceptions if x >= self.min_open)
        explicit = None
        if self.min_open != LONG_MAX and (not open_ids or open_ids[0] != self.min_open):
            # the reader's own open txn is not among its exceptions (B.2): keep minOpenTxn
            explicit = self.min_open
        return WriteIdList(table=table, hwm=self.hwm, open=open_ids, aborted=aborted, min_open_write_id=explicit)

    @classmethod
    def from_write_ids(cls, wl: WriteIdList) -> "Hive2TxnList":
        """The Hive 2 string of a snapshot held as a WriteIdList (inverse of :meth:`to_write_ids`)."""
        return cls(hwm=wl.hwm, min_open=wl.min_open, exceptions=wl.exceptions)

    def for_compactor(self, table: str | None = None) -> WriteIdList:
        """``createValidCompactTxnList``: hwm = lowest open txn − 1 (or the hwm), only the
        aborted txns ≤ that hwm as exceptions."""
        hwm = min(self.hwm, self.min_open - 1)
        return WriteIdList(table=table, hwm=hwm, aborted=tuple(x for x in self.exceptions if x <= hwm), compactor=True)


def from_states(hwm: int, states: dict[int, str], *, own_txn: int | None = None) -> Hive2TxnList:
    """The metastore's list (``getOpenTxns``): ``states`` = {txn id: 'o'|'a'} of the TXNS rows
    (committed txns are deleted in 2.3), hwm = NTXN_NEXT − 1; a reader drops its own txn."""
    exc = [t for t in states if t <= hwm and t != own_txn]
    opens = [t for t, s in states.items() if s == "o" and t <= hwm]
    return Hive2TxnList(hwm=hwm, min_open=min(opens) if opens else LONG_MAX, exceptions=tuple(exc))


# =========================================================================================
# OrcRawRecordMerger
# =========================================================================================


def statement_of(dir_name: str) -> int:
    """The statement id the merger gives a directory's events: the delta's suffix, 0 for bases,
    originals and deltas without suffix (``ParsedDelta.getStatementId``)."""
    from acidctl.acid.dirname import DeltaDir, parse_acid_dir

    d = parse_acid_dir(dir_name)
    if isinstance(d, DeltaDir):
        return max(d.statement_id, 0)
    return 0


def reader_rank(path: str) -> tuple:
    """Where a source file's reader enters ``OrcRawRecordMerger``'s constructor: the base (or
    original) file first, then one file per delta directory in ``getAcidState``'s order —
    min ASC, max DESC, statement ASC with none first, then the path (so ``delete_delta_x_y``
    before ``delta_x_y``; Hive 2.3 ``ParsedDelta.compareTo``)."""
    from acidctl.acid.dirname import DeltaDir, parse_acid_dir

    parent = posixpath.dirname(path)
    d = parse_acid_dir(posixpath.basename(parent))
    if not isinstance(d, DeltaDir):
        return (0, 0, 0, 0, "")
    return (1, d.min_write_id, -d.max_write_id, d.statement_id if d.statement_id is not None else -1, parent)


def source_ranks(paths: list[str]) -> dict[str, int]:
    """Each source file's place among the merger's readers (:func:`reader_rank`), as 0, 1, ..."""
    order = sorted(set(paths), key=lambda p: (reader_rank(p), p))
    return {p: i for i, p in enumerate(order)}


def has_equal_keys(ot, bk, rid, cur, stmt) -> bool:
    """Whether two events share the whole merge key (originalTransaction, bucket, rowId,
    currentTransaction, statement): only then does the order of Hive 2.3's merger depend on
    more than the key (:func:`merge_order`). Sources are taken to be in key order, as Hive's
    writers write them and its merger assumes (a source out of order is sorted here, where
    Hive's merger would return its events out of order)."""
    import numpy as np

    if len(ot) < 2:
        return False
    k = (ot, np.asarray(bk, dtype=np.int64), rid, -np.asarray(cur, dtype=np.int64), -np.asarray(stmt, dtype=np.int64))
    order = np.lexsort(tuple(reversed(k)))
    same = np.ones(len(order) - 1, dtype=bool)
    for a in k:
        a = np.asarray(a)[order]
        same &= a[1:] == a[:-1]
    return bool(same.any())


def merge_order(ot, bk, rid, cur, stmt, src) -> "np.ndarray":
    """Indices of the events in the order Hive 2.3's ``OrcRawRecordMerger`` returns them, its
    ``TreeMap<ReaderKey, ReaderPair>`` replayed (``src``: each event's reader, by rank in the
    constructor; a reader's events in array order). Apache Hive 2.3
    ``ql/src/java/org/apache/hadoop/hive/ql/io/orc/OrcRawRecordMerger.java``:

    * ``ReaderKey.compareTo``: (originalTransaction, bucket, rowId) ASC, then
      currentTransaction DESC, then statementId DESC; **0** when all five are equal;
    * constructor: ``readers.put(key, pair)`` for each reader in turn — a ``TreeMap.put`` with
      an equal key replaces the value, so the earlier reader is dropped and never read;
    * ``next``: the primary reader keeps going while its new key is **not greater** than the
      smallest other key (``compareTo(secondaryKey) > 0`` switches), so on equal keys the
      current primary's event comes first; when it switches it is put back — again replacing
      (dropping) a reader whose current key is equal — and the smallest entry becomes primary.

    Why by hand: this replays one Java class's data-structure behaviour, which no library has."""
    import heapq

    import numpy as np

    n = len(ot)
    idx_by_src: dict[int, np.ndarray] = {}
    for s_ in np.unique(src):
        idx_by_src[int(s_)] = np.flatnonzero(src == s_)
    pos = {s_: 0 for s_ in idx_by_src}
    o, b, r, c, st = (np.asarray(x, dtype=np.int64).tolist() for x in (ot, bk, rid, cur, stmt))
    lists = {s_: a.tolist() for s_, a in idx_by_src.items()}

    def key(s_: int) -> tuple:
        i = lists[s_][pos[s_]]
        return (o[i], b[i], r[i], -c[i], -st[i])

    owner: dict[tuple, int] = {}
    heap: list[tuple] = []

    def put(s_: int) -> None:
        k = key(s_)
        if k not in owner:
            heapq.heappush(heap, k)
        owner[k] = s_  # TreeMap.put: an equal key's reader is replaced

    for s_ in sorted(idx_by_src):
        put(s_)
    out: list[int] = []
    if not heap:
        return np.asarray(out, dtype=np.int64)
    primary: int | None = owner.pop(heapq.heappop(heap))
    while primary is not None:
        out.append(lists[primary][pos[primary]])
        pos[primary] += 1
        done = pos[primary] >= len(lists[primary])
        if done or (heap and key(primary) > heap[0]):
            if not done:
                put(primary)
            primary = owner.pop(heapq.heappop(heap)) if heap else None
    del n
    return np.asarray(out, dtype=np.int64)


def returned(order, ot, bk, rid, cur, valid, *, collapse: bool) -> "np.ndarray":
    """The events ``OrcRawRecordMerger.next`` returns from the merge ``order``: events of
    invalid txns skipped first; with ``collapse`` (reads, major compaction) only the first
    event of each (originalTransaction, bucket, rowId). Without it (minor compaction) every
    valid event: the multi-statement ``isSameRow`` collapse compares with ``prevKey``, which
    only the collapsing branch ever sets, so it never fires (same file and method)."""
    import numpy as np

    order = order[np.asarray(valid)[order]]
    if not collapse or len(order) < 2:
        return order
    a, b, r = ot[order], bk[order], rid[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1]) | (r[1:] != r[:-1])
    return order[first]


def winners(
    ot: "np.ndarray",
    bucket: "np.ndarray",
    rid: "np.ndarray",
    cur: "np.ndarray",
    stmt: "np.ndarray",
    valid: "np.ndarray",
    op: "np.ndarray | None" = None,
    *,
    src: "np.ndarray | None" = None,
    collapse: bool = True,
) -> "np.ndarray":
    """Indices of the events the merger returns, in its order: among the ``valid`` events the
    first by (ot, bucket, rowId) ASC, currentTransaction DESC, statement DESC (``collapse``:
    one per row key). ``src``: each event's reader rank (:func:`reader_rank` order); with it,
    events whose whole merge key is equal are resolved exactly as Hive 2.3's merger does
    (:func:`merge_order`); without it the stable sort decides. ``op``
    is unused (kept for callers)."""
    import numpy as np

    del op
    bucket = np.asarray(bucket, dtype=np.int64)
    if src is not None and has_equal_keys(ot, bucket, rid, cur, stmt):
        order = merge_order(ot, bucket, rid, cur, stmt, src)
    else:
        order = np.lexsort((-stmt.astype(np.int64), -cur.astype(np.int64), rid, bucket, ot))
    return returned(order, ot, bucket, rid, cur, valid, collapse=collapse)


def collapse(
    inserts: "pa.Table",
    insert_stmt: "np.ndarray",
    deletes: "pa.Table | None",
    delete_stmt: "np.ndarray | None",
    snapshot: WriteIdList,
    *,
    insert_src: "np.ndarray | None" = None,
    delete_src: "np.ndarray | None" = None,
    split_update: bool = False,
) -> "pa.Table":
    """The merged rows of one bucket: ``inserts`` are the events that carry rows (ACID columns,
    any operation — legacy deltas hold 0, 1 and 2), ``deletes`` the key columns plus
    ``operation``/``currentTransaction`` of delete files (split-update). Rows whose winning
    event is an insert or an update, in key order, events unchanged.

    ``insert_src``/``delete_src``: each event's reader rank (:func:`reader_rank`), to resolve
    equal merge keys as Hive 2.3's reader does: a legacy table is one merger (base + every
    delta); a split-update table one merger per insert file with the delete deltas
    (``OrcInputFormat.getReader``); the rows kept are then returned in key order."""
    import numpy as np
    import pyarrow as pa

    from acidctl.acid.merge import valid_mask

    def cols(t):
        return [
            t.column(c).to_numpy(zero_copy_only=False)
            for c in ("originalTransaction", "bucket", "rowId", "currentTransaction", "operation")
        ]

    n = inserts.num_rows
    parts = [cols(inserts)]
    stmts = [np.asarray(insert_stmt, dtype=np.int64)]
    valids = [valid_mask(inserts.column("currentTransaction"), snapshot).to_numpy(zero_copy_only=False)]
    srcs = [insert_src] if insert_src is not None else None
    has_dels = deletes is not None and deletes.num_rows
    if has_dels:
        assert deletes is not None
        parts.append(cols(deletes))
        stmts.append(np.asarray(delete_stmt, dtype=np.int64))
        valids.append(valid_mask(deletes.column("currentTransaction"), snapshot).to_numpy(zero_copy_only=False))
        if srcs is not None:
            srcs.append(delete_src if delete_src is not None else np.zeros(deletes.num_rows, dtype=np.int64))
    ot, bk, rid, cur, op = (np.concatenate([p[i] for p in parts]) for i in range(5))
    bk = bk.astype(np.int64)
    stmt = np.concatenate(stmts)
    if split_update:
        stmt[:n] = 0  # each insert file is its merger's base reader, whose statement id is 0
    valid = np.concatenate(valids).astype(bool)
    src = np.concatenate(srcs) if srcs is not None else None
    if src is not None and split_update and has_equal_keys(ot, bk, rid, cur, stmt):
        # one merger per insert file, each with every delete file; rows kept in key order
        keep_parts = []
        del_idx = np.arange(n, len(ot))
        for s_ in np.unique(src[:n]):
            mine = np.flatnonzero(src[:n] == s_)
            idx = np.concatenate([mine, del_idx])
            # the insert file is the merger's base reader: added first, statement id 0
            sub_src = np.concatenate([np.full(len(mine), -1, dtype=np.int64), src[del_idx]])
            w = winners(ot[idx], bk[idx], rid[idx], cur[idx], stmt[idx], valid[idx], src=sub_src)
            w = idx[w]
            keep_parts.append(w[(w < n) & np.isin(op[w], (0, 1))])
        keep = np.concatenate(keep_parts) if keep_parts else np.zeros(0, dtype=np.int64)
        keep = keep[np.lexsort((-cur[keep].astype(np.int64), rid[keep], bk[keep], ot[keep]))]
        return inserts.take(pa.array(keep, pa.int64()))
    win = winners(ot, bk, rid, cur, stmt, valid, src=src)
    keep = win[(win < n) & np.isin(op[win], (0, 1))]
    return inserts.take(pa.array(keep, pa.int64()))


def _raw_events(table: "pa.Table", bucket: int) -> "pa.Table":
    """An original file's rows with Hive 2's synthetic ROW__IDs: (0, plain bucket id, row
    number within this file) — Hive 2 does not count across the bucket's files (B.6)."""
    from acidctl.acid.merge import with_synthetic_ids

    return with_synthetic_ids(table, write_id=0, bucket_property=bucket, first_row_id=0)


def read_file_events(tfs: "TableFS", src) -> "pa.Table":
    """One source (:class:`acidctl.acid.read.Source`) as ACID events under Hive 2's rules."""
    import pyarrow as pa

    from acidctl.acid.merge import normalise
    from acidctl.acid.read import _arrow_schema_of
    from acidctl.orc.reader import OrcFile

    with OrcFile(tfs, src.path) as f:
        batches = [f.read_stripe_arrow(i) for i in range(f.num_stripes())]
        table = pa.Table.from_batches(batches) if batches else _arrow_schema_of(f).empty_table()
        acid = f.is_acid
    if src.raw and not acid:
        return _raw_events(table, src.bucket)
    return normalise(table)


def read_delete_events(tfs: "TableFS", src) -> "pa.Table":
    """A delete file's operation and key columns (its ``row`` is null)."""
    import pyarrow as pa

    from acidctl.acid.merge import ACID_COLUMNS
    from acidctl.orc.reader import OrcFile

    with OrcFile(tfs, src.path) as f:
        cols = list(f.schema.fields)[:5]
        batches = [
            pa.Table.from_batches([f.read_stripe_arrow(i, columns=cols)]).rename_columns(ACID_COLUMNS[:5])
            for i in range(f.num_stripes())
        ]
    if not batches:
        return pa.table(
            {
                c: pa.array([], t)
                for c, t in zip(ACID_COLUMNS[:5], [pa.int32(), pa.int64(), pa.int32(), pa.int64(), pa.int64()])
            }
        )
    return pa.concat_tables(batches)


def _statement_of_file(path: str) -> int:
    return statement_of(posixpath.basename(posixpath.dirname(path)))


def refuse_two_originals(inserts: list) -> None:
    """Two original files of one bucket are refused: Hive 2.3 numbers each one's rows from 0
    (B.6) and its merger silently returns one row per duplicated ROW__ID — never reproduced
    here."""
    raw = [s.path for s in inserts if s.raw]
    if len(raw) > 1:
        from acidctl.errors import InvalidAcidLayout

        raise InvalidAcidLayout(
            f"bucket {inserts[0].bucket} has {len(raw)} original files ({', '.join(raw[:3])}): "
            "Hive 2.3 gives their rows the same ROW__IDs and returns only one row per id",
            hint="read with --hive-version 3 rules (rows numbered across the files)",
        )


def merge_sources(tfs: "TableFS", inserts: list, deletes: list, snapshot: WriteIdList) -> "pa.Table | None":
    """The merged rows of one bucket's sources (:class:`acidctl.acid.read.Source`): row-carrying
    files and delete files; None when no file holds an event. Two original files of the bucket
    are refused: Hive 2.3 numbers each one's rows from 0 (B.6) and its merger silently returns
    one row per duplicated ROW__ID — never reproduced here."""
    import numpy as np
    import pyarrow as pa

    refuse_two_originals(inserts)
    rank = source_ranks([s.path for s in list(inserts) + list(deletes)])
    tables, stmts, srcs = [], [], []
    for s in inserts:
        t = read_file_events(tfs, s)
        if t.num_rows:
            tables.append(t)
            stmts.append(np.full(t.num_rows, _statement_of_file(s.path), dtype=np.int64))
            srcs.append(np.full(t.num_rows, rank[s.path], dtype=np.int64))
    if not tables:
        return None
    dtables, dstmts, dsrcs = [], [], []
    for s in deletes:
        t = read_delete_events(tfs, s)
        if t.num_rows:
            dtables.append(t)
            dstmts.append(np.full(t.num_rows, _statement_of_file(s.path), dtype=np.int64))
            dsrcs.append(np.full(t.num_rows, rank[s.path], dtype=np.int64))
    events = pa.concat_tables(tables, promote_options="permissive")
    dels = pa.concat_tables(dtables) if dtables else None
    return collapse(
        events,
        np.concatenate(stmts),
        dels,
        np.concatenate(dstmts) if dstmts else None,
        snapshot,
        insert_src=np.concatenate(srcs),
        delete_src=np.concatenate(dsrcs) if dsrcs else None,
        # delete files exist only in split-update tables (a legacy table is one merger)
        split_update=bool(deletes),
    )


def read_partition(tfs: "TableFS", listing: "DirListing", state: "AcidState") -> Iterator[tuple[int, "pa.Table"]]:
    """(bucket id, merged rows) per bucket, as Hive 2.3's reader returns them (ROW__ID order),
    each bucket merged whole (:func:`acidctl.acid.hive2stream.stream_partition` streams)."""
    from acidctl.acid.read import plan_sources

    inserts, deletes = plan_sources(tfs, listing, state)
    by_bucket: dict[int, tuple[list, list]] = {}
    for s in inserts:
        by_bucket.setdefault(s.bucket, ([], []))[0].append(s)
    for s in deletes:
        by_bucket.setdefault(s.bucket, ([], []))[1].append(s)
    for bucket in sorted(by_bucket):
        merged = merge_sources(tfs, *by_bucket[bucket], state.write_ids)
        if merged is not None:
            yield bucket, merged


# =========================================================================================
# state: findings that describe what Hive 2.3 itself writes
# =========================================================================================

#: checks whose subject is normal in Hive 2.3 files (B.3, B.5): no ``_orc_acid_version`` in
#: deltas (M01), ``_colN`` row fields (F02), a key index without the last stripe's entry (F04),
#: no ``hive.acid.version`` (F06), V0 bucket values and legacy update events (F10)
HIVE2_NORMAL = frozenset({"M01", "F02", "F04", "F06", "F10"})
#: how check M03 quotes the content of Hive 2's ``_orc_acid_version``
HIVE2_VERSION_FILE = repr(b"\x00\x00\x00\x00")


def hive2_findings(findings: list) -> list:
    """``findings`` with those of :data:`HIVE2_NORMAL` lowered to INFO, saying why: under
    Hive 2.3 rules they describe what Hive 2.3 writes, not damage."""
    from acidctl.findings import Severity

    def normal(f) -> bool:
        # M03 on Hive 2's own _orc_acid_version: 4 bytes, a big-endian int 0 (B.3)
        return f.check in HIVE2_NORMAL or (f.check == "M03" and HIVE2_VERSION_FILE in f.message)

    return [
        dataclasses.replace(f, severity=Severity.INFO, message=f.message + " (what Hive 2.3 writes)")
        if normal(f) and f.severity is not Severity.INFO
        else f
        for f in findings
    ]
