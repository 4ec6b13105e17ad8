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
    keep = pc.and_(pc.equal(events.column("operation"), 2),
                   valid_mask(events.column("currentTransaction"), snapshot))
    return events.filter(keep).select(KEY)


def apply(inserts: pa.Table, deletes: pa.Table | None, snapshot: WriteIdList, *,
          sort: bool = True) -> pa.Table:
    """Valid insert events of ``inserts`` not deleted by ``deletes`` (a key table)."""
    keep = pc.and_(pc.equal(inserts.column("operation"), 0),
                   valid_mask(inserts.column("currentTransaction"), snapshot))
    live = inserts.filter(keep)
    if deletes is not None and deletes.num_rows and live.num_rows:
        # Acero joins cannot carry struct columns: semi-join the keys plus a row index to find
        # the deleted rows, then filter with a mask (keeps the order; cheaper than a take).
        keys = live.select(KEY).append_column("__i", pa.array(np.arange(live.num_rows, dtype=np.int64)))
        hit = keys.join(deletes, keys=KEY, join_type="left semi", use_threads=False)
        if hit.num_rows:
            mask = np.ones(live.num_rows, dtype=bool)
            mask[hit.column("__i").to_numpy()] = False
            live = live.filter(pa.array(mask))
    if sort and live.num_rows and not _is_sorted(live):
        live = live.sort_by([(k, "ascending") for k in KEY])
    return live


def _is_sorted(t: pa.Table) -> bool:
    """Already in key order (one file, or files read in key order)?"""
    ot = t.column("originalTransaction").to_numpy()
    bk = t.column("bucket").to_numpy().astype(np.int64)
    rid = t.column("rowId").to_numpy()
    if len(ot) < 2:
        return True
    ge = (ot[1:] > ot[:-1]) | ((ot[1:] == ot[:-1]) & ((bk[1:] > bk[:-1]) | ((bk[1:] == bk[:-1]) & (rid[1:] >= rid[:-1]))))
    return bool(ge.all())


def merge(insert_tables: list[pa.Table], delete_tables: list[pa.Table], snapshot: WriteIdList) -> pa.Table:
    """The merged snapshot of one bucket (or any set of files)."""
    deletes = None
    keys = [delete_keys(normalise(t), snapshot) for t in delete_tables if t.num_rows]
    if keys:
        deletes = pa.concat_tables(keys)
    if not insert_tables:
        return pa.table({c: pa.array([], t) for c, t in zip(ACID_COLUMNS[:5],
                         [pa.int32(), pa.int64(), pa.int32(), pa.int64(), pa.int64()])})
    inserts = pa.concat_tables([normalise(t) for t in insert_tables], promote_options="permissive")
    return apply(inserts, deletes, snapshot)


def with_synthetic_ids(rows: pa.Table, *, write_id: int, bucket_property: int, first_row_id: int) -> pa.Table:
    """An original (non-ACID) file's rows as insert events with Hive's synthetic ROW__IDs."""
    n = rows.num_rows
    row = pa.StructArray.from_arrays([rows.column(i).combine_chunks() for i in range(rows.num_columns)],
                                     fields=list(rows.schema)) if rows.num_columns else \
        pa.array([{}] * n, pa.struct([]))
    return pa.table({
        "operation": pa.array([0] * n, pa.int32()),
        "originalTransaction": pa.array([write_id] * n, pa.int64()),
        "bucket": pa.array([bucket_property] * n, pa.int32()),
        "rowId": pa.array(range(first_row_id, first_row_id + n), pa.int64()),
        "currentTransaction": pa.array([write_id] * n, pa.int64()),
        "row": row,
    })
