"""The merge kernel: base/delta insert events + delete events → the rows a reader sees.

Pure functions over Arrow tables with the six ACID columns (no filesystem, no Spark), as
orc-acid-files.md §5 defines the semantics for split-update (Hive 3/4):

* an event counts only if its ``currentTransaction`` is valid for the reader's write-id list
  (committed, ≤ hwm, not open or aborted);
* an insert event survives unless a valid delete event has the same
  (originalTransaction, bucket, rowId);
* the result is ordered by (originalTransaction, bucket as signed int, rowId).

Everything is vectorised with Arrow compute and hash joins; memory is bounded by the delete
events of the bucket being merged plus that bucket's insert rows.
"""

from __future__ import annotations

import bisect
import weakref

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acidctl.acid.writeids import WriteIdList

KEY = ["originalTransaction", "bucket", "rowId"]
ACID_COLUMNS = ["operation", "originalTransaction", "bucket", "rowId", "currentTransaction", "row"]


def valid_mask(write_ids: pa.Array, snapshot: WriteIdList) -> pa.Array:
    """isWriteIdValid for every element: ≤ hwm and neither open nor aborted."""
    mask = pc.less_equal(write_ids, pa.scalar(snapshot.hwm, pa.int64()))
    exceptions = snapshot.exceptions
    if exceptions:
        mask = pc.and_(mask, pc.invert(pc.is_in(write_ids, value_set=pa.array(exceptions, pa.int64()))))
    return pc.fill_null(mask, False)


def normalise(table: pa.Table) -> pa.Table:
    """The six ACID columns under their canonical names (files may use any letter case)."""
    lower = {n.lower(): i for i, n in enumerate(table.column_names)}
    cols = [table.column(lower[c.lower()]) for c in ACID_COLUMNS]
    return pa.table(cols, names=ACID_COLUMNS)


def delete_keys(events: pa.Table, snapshot: WriteIdList) -> pa.Table:
    """The keys deleted by the valid delete events among ``events`` (any ACID event table)."""
    events = events.select(["operation", *KEY, "currentTransaction"])
    keep = pc.and_(pc.equal(events.column("operation"), 2), valid_mask(events.column("currentTransaction"), snapshot))
    return events.filter(keep).select(KEY)


def apply(inserts: pa.Table, deletes: pa.Table | None, snapshot: WriteIdList, *, sort: bool = True) -> pa.Table:
    """Valid insert events of ``inserts`` not deleted by ``deletes`` (a key table)."""
    mask = live_mask(inserts, deletes, snapshot)
    live = inserts if mask is None else inserts.filter(pa.array(mask))  # one copy, or none
    if sort and live.num_rows and not _is_sorted(live):
        live = live.sort_by([(k, "ascending") for k in KEY])
    return live


def live_mask(inserts: pa.Table, deletes: pa.Table | None, snapshot: WriteIdList) -> np.ndarray | None:
    """Which events of ``inserts`` a reader sees: valid insert events (``operation`` 0, a
    valid ``currentTransaction``) whose key ``deletes`` (a key table) does not hold. None:
    every event (the caller keeps its table as it is, no copy). The delete keys are looked up
    for every event of ``inserts``, so the caller filters once, not once for the valid events
    and again for the deleted ones."""
    n = inserts.num_rows
    if n and _all_valid_inserts(inserts, snapshot):
        mask = None
    else:
        keep = pc.and_(
            pc.equal(inserts.column("operation"), 0), valid_mask(inserts.column("currentTransaction"), snapshot)
        )
        mask = None if _all_true(keep) else np.asarray(keep.to_numpy(zero_copy_only=False), dtype=bool)
    if mask is not None and not mask.any():
        return mask
    if deletes is not None and deletes.num_rows and n:
        index = _index_of(deletes)
        deleted = index.deleted(inserts) if index is not None else None
        if deleted is None:
            deleted = _deleted_by_join(inserts, deletes)
        if deleted.any():
            mask = ~deleted if mask is None else mask & ~deleted
    return mask


def count_keys(ot: np.ndarray, bk: np.ndarray, rid: np.ndarray, bound: tuple, *, inclusive: bool) -> int:
    """How many leading keys of the key-sorted arrays are below ``bound`` (``inclusive``: ≤ it):
    binary searches per key column, not a pass over the arrays (a large buffer can stay while
    many bounds pass)."""
    o, b, r = bound
    lo, hi = int(np.searchsorted(ot, o, side="left")), int(np.searchsorted(ot, o, side="right"))
    if lo == hi:
        return lo
    blo = lo + int(np.searchsorted(bk[lo:hi], b, side="left"))
    bhi = lo + int(np.searchsorted(bk[lo:hi], b, side="right"))
    if blo == bhi:
        return blo
    return blo + int(np.searchsorted(rid[blo:bhi], r, side="right" if inclusive else "left"))


def _all_valid_inserts(inserts: pa.Table, snapshot: WriteIdList) -> bool:
    """Is every event of ``inserts`` a valid insert event (the usual batch: one write's
    inserts)? Decided from the two columns' minimum and maximum (two passes, where the mask
    takes four kernels and a copy): operation 0 throughout, and no write id in
    currentTransaction's range is above the hwm or an exception. False: not known, the
    caller computes the mask."""
    op, ct = inserts.column("operation"), inserts.column("currentTransaction")
    if op.null_count or ct.null_count:
        return False
    ops = pc.min_max(op)
    if ops["min"].as_py() != 0 or ops["max"].as_py() != 0:
        return False
    cts = pc.min_max(ct)
    lo, hi = cts["min"].as_py(), cts["max"].as_py()
    if hi > snapshot.hwm:
        return False
    exceptions = snapshot.exceptions  # sorted
    i = bisect.bisect_left(exceptions, lo)
    return i == len(exceptions) or exceptions[i] > hi


def _all_true(mask) -> bool:
    return bool(pc.all(mask).as_py()) if len(mask) else False


def _deleted_by_join(live: pa.Table, deletes: pa.Table) -> np.ndarray:
    """Acero joins cannot carry struct columns: semi-join the keys plus a row index to find
    the deleted rows (a mask, which keeps the order)."""
    keys = live.select(KEY).append_column("__i", pa.array(np.arange(live.num_rows, dtype=np.int64)))
    hit = keys.join(deletes, keys=KEY, join_type="left semi", use_threads=False)
    mask = np.zeros(live.num_rows, dtype=bool)
    if hit.num_rows:
        mask[hit.column("__i").to_numpy()] = True
    return mask


class DeleteIndex:
    """The delete keys of a bucket, prepared once, for every batch merged against them.

    A hash join rebuilds its hash table from the delete keys on every call, and the streamed
    paths (compaction, its verification, ``dump --merged``) merge one batch at a time against the
    same keys: that rebuild was most of the merge time. numpy has no multi-column hash set, so
    this is by hand, exact in both forms:

    * packed (the usual case: write ids in [0, 2^31), row ids in [0, 2^32)): each distinct
      (originalTransaction, bucket) pair gets its rank among the delete keys' pairs, and a key
      becomes ``rank << 32 | rowId`` — order-preserving, so a batch in key order (as files are)
      is looked up with ``searchsorted`` on sorted needles, which stays in cache;
    * hashed (anything else): one 64-bit hash per key, every hit confirmed on the three key
      values; built only when no two distinct delete keys share a hash (else the join is used).
    """

    def __init__(self, kind: str, arrays: tuple):
        self.kind, self.arrays = kind, arrays

    @classmethod
    def build(cls, deletes: pa.Table) -> DeleteIndex | None:
        cols = _key_arrays(deletes)
        if cols is None:
            return None
        ot, bk, rid = cols
        if _packable(ot, rid):
            pairs = np.unique(_pair(ot, bk))
            if len(pairs) < 2**31:
                return cls("packed", (pairs, np.unique(_packed(np.searchsorted(pairs, _pair(ot, bk)), rid))))
        h = _hash(ot, bk, rid)
        order = np.lexsort((rid, bk, ot, h))
        h, ot, bk, rid = h[order], ot[order], bk[order], rid[order]
        if len(h) > 1:
            same_h = h[1:] == h[:-1]
            same_key = (ot[1:] == ot[:-1]) & (bk[1:] == bk[:-1]) & (rid[1:] == rid[:-1])
            if (same_h & ~same_key).any():
                return None  # a true hash collision: the join handles it
            keep = np.concatenate(([True], ~same_key))
            h, ot, bk, rid = h[keep], ot[keep], bk[keep], rid[keep]
        return cls("hashed", (h, ot, bk, rid))

    def deleted(self, live: pa.Table) -> np.ndarray | None:
        """Mask of the rows of ``live`` whose key is deleted (None: use the join)."""
        cols = _key_arrays(live)
        if cols is None:
            return None
        ot, bk, rid = cols
        if self.kind == "packed":
            one = self._one_pair(ot, bk, rid)
            if one is not None:
                return one
            pairs, keys = self.arrays
            ok = (ot >= 0) & (ot < 2**31) & (rid >= 0) & (rid < 2**32)
            p = _pair(np.where(ok, ot, 0), bk)
            r = np.minimum(np.searchsorted(pairs, p), len(pairs) - 1)
            ok &= pairs[r] == p
            if not ok.any():  # no (writeid, bucket) of the batch has a delete (an insert delta)
                return ok
            k = _packed(r, np.where(ok, rid, 0))
            pos = np.minimum(np.searchsorted(keys, k), len(keys) - 1)
            return ok & (keys[pos] == k)
        hs, ots, bks, rids = self.arrays
        h = _hash(ot, bk, rid)
        pos = np.minimum(np.searchsorted(hs, h), len(hs) - 1)
        return (hs[pos] == h) & (ots[pos] == ot) & (bks[pos] == bk) & (rids[pos] == rid)

    def _one_pair(self, ot: np.ndarray, bk: np.ndarray, rid: np.ndarray) -> np.ndarray | None:
        """:meth:`deleted` of a batch whose rows share one (originalTransaction, bucket) and
        have strictly increasing row ids (a batch of a file in key order, the usual case): the
        delete keys of that pair in the batch's row-id range, searched for in the batch (a
        few hundred binary searches instead of one per row). None: not such a batch."""
        n = len(ot)
        if n == 0:
            return None
        o, b = int(ot[0]), int(bk[0])
        if not (0 <= o < 2**31) or ot.min() != o or ot.max() != o or bk.min() != b or bk.max() != b:
            return None
        if n > 1 and not (rid[1:] > rid[:-1]).all():
            return None
        mask = np.zeros(n, dtype=bool)
        lo_r, hi_r = int(rid[0]), int(rid[-1])
        if hi_r < 0 or lo_r >= 2**32:
            return mask  # no packed key has such a row id
        pairs, keys = self.arrays
        p = (o << 32) | (b & 0xFFFFFFFF)
        r = int(np.searchsorted(pairs, p))
        if r == len(pairs) or int(pairs[r]) != p:
            return mask  # no delete of this (writeid, bucket)
        lo = int(np.searchsorted(keys, (r << 32) | max(lo_r, 0), side="left"))
        hi = int(np.searchsorted(keys, (r << 32) | min(hi_r, 2**32 - 1), side="right"))
        if lo == hi:
            return mask
        wanted = keys[lo:hi] & 0xFFFFFFFF
        pos = np.searchsorted(rid, wanted)  # wanted ≤ rid[-1]: every position is in the batch
        mask[pos[rid[pos] == wanted]] = True
        return mask


def _packable(ot: np.ndarray, rid: np.ndarray) -> bool:
    return bool(len(ot)) and ot.min() >= 0 and ot.max() < 2**31 and rid.min() >= 0 and rid.max() < 2**32


def _pair(ot: np.ndarray, bk: np.ndarray) -> np.ndarray:
    """(writeid in [0, 2^31), bucket as 32 unsigned bits) → one int64, order-preserving per writeid."""
    return (ot << 32) | (bk & 0xFFFFFFFF)


def _packed(rank: np.ndarray, rid: np.ndarray) -> np.ndarray:
    return (rank.astype(np.int64) << 32) | rid


def _key_arrays(t: pa.Table):
    out = []
    for k in KEY:
        c = t.column(k)
        if c.null_count:
            return None
        out.append(np.asarray(c.to_numpy(), dtype=np.int64))
    return out


def _hash(ot: np.ndarray, bk: np.ndarray, rid: np.ndarray) -> np.ndarray:
    """splitmix64-style mixing of the three key values into one uint64 (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        h = ot.view(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        h ^= bk.view(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F)
        h ^= rid.view(np.uint64) * np.uint64(0x165667B19E3779F9)
        h ^= h >> np.uint64(33)
        h *= np.uint64(0xFF51AFD7ED558CCD)
        h ^= h >> np.uint64(29)
    return h


#: the index of each delete-key table seen (the same table is merged with batch after batch),
#: by id(); the entry goes when the table does (pa.Table is not hashable: no WeakKeyDictionary)
_INDEXES: dict = {}
_NO_INDEX = object()


def _forget(key: int):
    def drop(_ref: object) -> None:
        _INDEXES.pop(key, None)

    return drop


def _index_of(deletes: pa.Table) -> DeleteIndex | None:
    key = id(deletes)
    got = _INDEXES.get(key)
    if got is None or got[0]() is not deletes:
        index = DeleteIndex.build(deletes) or _NO_INDEX
        got = (weakref.ref(deletes, _forget(key)), index)
        _INDEXES[key] = got
    index = got[1]
    return index if isinstance(index, DeleteIndex) else None


def _is_sorted(t: pa.Table) -> bool:
    """Already in key order (one file, or files read in key order)?"""
    ot = t.column("originalTransaction").to_numpy()
    bk = t.column("bucket").to_numpy().astype(np.int64)
    rid = t.column("rowId").to_numpy()
    return keys_nondecreasing(ot, bk, rid)


def sorted_concat(tables: list[pa.Table]) -> pa.Table:
    """``tables`` concatenated (types promoted as needed) and put in key order; Arrow's sort is
    stable, so events of equal keys keep their order."""
    t = pa.concat_tables(tables, promote_options="permissive")
    return t.sort_by([(k, "ascending") for k in KEY])


def key_arrays(t: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The key columns (originalTransaction, bucket, rowId) of ``t`` as int64 arrays (columns
    without nulls)."""
    ot, bk, rid = (np.asarray(t.column(k).to_numpy(), np.int64) for k in KEY)
    return ot, bk, rid


def keys_nondecreasing(ot, bk, rid) -> bool:
    """Do the keys never go down (equal keys allowed)?"""
    if len(ot) < 2:
        return True
    if ot[0] == ot[-1] and bk[0] == bk[-1]:
        # with equal ends, nondecreasing means one (originalTransaction, bucket) pair: three
        # comparisons instead of the general expression's eleven array operations
        return bool((ot == ot[0]).all() and (bk == bk[0]).all() and (rid[1:] >= rid[:-1]).all())
    ge = (ot[1:] > ot[:-1]) | (
        (ot[1:] == ot[:-1]) & ((bk[1:] > bk[:-1]) | ((bk[1:] == bk[:-1]) & (rid[1:] >= rid[:-1])))
    )
    return bool(ge.all())


def merge(insert_tables: list[pa.Table], delete_tables: list[pa.Table], snapshot: WriteIdList) -> pa.Table:
    """The merged snapshot of one bucket (or any set of files)."""
    deletes = None
    keys = [delete_keys(normalise(t), snapshot) for t in delete_tables if t.num_rows]
    if keys:
        deletes = pa.concat_tables(keys)
    if not insert_tables:
        return pa.table(
            {
                c: pa.array([], t)
                for c, t in zip(ACID_COLUMNS[:5], [pa.int32(), pa.int64(), pa.int32(), pa.int64(), pa.int64()])
            }
        )
    inserts = pa.concat_tables([normalise(t) for t in insert_tables], promote_options="permissive")
    return apply(inserts, deletes, snapshot)


def with_synthetic_ids(rows: pa.Table, *, write_id: int, bucket_property: int, first_row_id: int) -> pa.Table:
    """An original (non-ACID) file's rows as insert events with Hive's synthetic ROW__IDs."""
    n = rows.num_rows
    row = (
        pa.StructArray.from_arrays(
            [rows.column(i).combine_chunks() for i in range(rows.num_columns)], fields=list(rows.schema)
        )
        if rows.num_columns
        else pa.array([{}] * n, pa.struct([]))
    )
    return pa.table(
        {
            "operation": pa.array([0] * n, pa.int32()),
            "originalTransaction": pa.array([write_id] * n, pa.int64()),
            "bucket": pa.array([bucket_property] * n, pa.int32()),
            "rowId": pa.array(range(first_row_id, first_row_id + n), pa.int64()),
            "currentTransaction": pa.array([write_id] * n, pa.int64()),
            "row": row,
        }
    )
