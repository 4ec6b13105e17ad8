"""What a compaction task does to the events it read, before writing them.

* major: valid insert events minus valid deletes (aborted / deleted rows dropped), ROW__IDs and
  ``currentTransaction`` unchanged, operation 0;
* minor: valid insert events to the new delta, valid delete events (deduplicated by target key,
  the earliest deleting write kept) to the new delete delta, both in key order.

"Valid" is one mask (:func:`valid_mask`) that also counts every event it drops, by reason, in
the task's metrics: nothing is dropped silently (issue #9).
"""

from __future__ import annotations

import re
from acidctl.units import plural


class NotInOrder(Exception):
    """The streamed events are not strictly increasing: use the whole-bucket path."""


class NotStreamable(NotInOrder):
    """A source the streaming path cannot read (neither an ACID file nor an original file
    read as one): use the whole-bucket path."""


def valid_mask(t, snap, m: dict, *, inserts: bool):
    """The mask of the events of ``t`` carried over, counting in ``m`` why the others are not.

    An event is either valid for the compactor's list, or of an **aborted** write id (≤ hwm, in
    the aborted list: Hive drops those — ``aborted_dropped``), or of a write id the compactor
    cannot see (> hwm: open or not yet allocated — ``invisible_dropped``, which makes the runner
    refuse the compaction), or of another operation than the one the output holds
    (``other_events_dropped``: e.g. ACID v1 update events — also refused).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    op = t.column("operation")
    cur = t.column("currentTransaction")
    kind = pc.equal(op, 0 if inserts else 2)
    above = pc.fill_null(pc.greater(cur, pa.scalar(snap.hwm, pa.int64())), True)
    if snap.aborted:
        aborted = pc.and_(pc.invert(above), pc.is_in(cur, value_set=pa.array(snap.aborted, pa.int64())))
    else:
        aborted = pc.and_(above, pc.invert(above))  # all false, nulls kept false
    valid = pc.and_(kind, pc.invert(pc.or_(above, aborted)))

    def count(mask) -> int:
        return int(pc.sum(pc.fill_null(mask, False).cast("int64")).as_py() or 0)

    m["other_events_dropped"] += t.num_rows - count(kind)
    m["invisible_dropped"] += count(pc.and_(kind, above))
    m["aborted_dropped"] += count(pc.and_(kind, aborted))
    return pc.fill_null(valid, False)


def live_inserts(t, keys, snap, m: dict, *, major: bool, sort: bool, merged=None):
    """The insert events of ``t`` that go to the output: the valid ones (:func:`valid_mask`),
    and for major compaction without the rows ``keys`` (the valid delete keys) delete, counted
    as ``deletes_applied``. ``sort``: put the result in key order (the streaming path reads
    sources already in order). ``merged``: ``merge.apply(t, keys, snap, sort=False)`` when the
    caller has it already (the verification's old side under the same write-id validity:
    :class:`acidctl.compact.verification.HeldOldSide`)."""
    import pyarrow.compute as pc

    from acidctl.acid import merge

    valid = valid_mask(t, snap, m, inserts=True)
    if not major:
        live = t.filter(valid)
        return sort_events(live) if sort else live
    n_valid = pc.sum(valid.cast("int64")).as_py() or 0
    live = merged if merged is not None and not sort else merge.apply(t, keys, snap, sort=sort)
    m["deletes_applied"] += n_valid - live.num_rows
    return live


def minor_deletes(dels, snap, m: dict, columns, coln_only):
    """Minor compaction's delete output: valid delete events in key order, one per key (the
    earliest deleting write); aborted ones are counted in ``m``."""
    keep = valid_mask(dels, snap, m, inserts=False)
    d = dels.filter(keep)
    d = d.sort_by(
        [
            ("originalTransaction", "ascending"),
            ("bucket", "ascending"),
            ("rowId", "ascending"),
            ("currentTransaction", "ascending"),
        ]
    )
    return rename_row(dedupe_keys(d), columns, coln_only)


def dedupe_keys(table):
    """Keep the first event per (originalTransaction, bucket, rowId) of a key-sorted table."""
    import numpy as np

    if table.num_rows < 2:
        return table
    ot = table.column("originalTransaction").to_numpy()
    bk = table.column("bucket").to_numpy()
    rid = table.column("rowId").to_numpy()
    dup = (ot[1:] == ot[:-1]) & (bk[1:] == bk[:-1]) & (rid[1:] == rid[:-1])
    if not dup.any():
        return table
    keep = np.concatenate([[True], ~dup])
    return table.filter(keep)


def sort_events(table):
    return table.sort_by([("originalTransaction", "ascending"), ("bucket", "ascending"), ("rowId", "ascending")])


def rename_row(table, columns: list[str] | None, coln_only: bool = False):
    """``row`` fields named by the lower-case Hive column names (or ``columns``, in order;
    with ``coln_only`` only when the files name them ``_colN``)."""
    import pyarrow as pa

    from acidctl.errors import UsageError

    if table is None:
        return None
    rt = table.schema.field("row").type
    old = [f.name for f in rt]
    if columns is not None and coln_only and not all(re.fullmatch(r"_col\d+", n) for n in old):
        columns = None
    if columns is not None:
        if len(columns) != len(old):
            raise UsageError(f"--columns names {plural(len(columns), 'column')} but the files have {len(old)}: {old}")
        new = [c.lower() for c in columns]
    else:
        new = [n.lower() for n in old]
    if new == old:
        return table
    fields = [pa.field(n, f.type, f.nullable) for n, f in zip(new, rt)]
    row = table.column("row")
    chunks = [
        pa.StructArray.from_arrays([c.field(i) for i in range(c.type.num_fields)], fields=fields, mask=c.is_null())
        if len(c)
        else pa.array([], pa.struct(fields))
        for c in row.chunks
    ]
    col = pa.chunked_array(chunks, type=pa.struct(fields))
    return table.set_column(table.schema.get_field_index("row"), "row", col)


def check_bucket(table, bucket: int, what: str, path_hint: str) -> None:
    """Every event's bucket property decodes to this task's bucket (F09/F15)."""
    import numpy as np

    from acidctl.errors import InvalidAcidLayout
    from acidctl.orc.bucketcodec import decode_array

    if table is None or not table.num_rows:
        return
    _, ids = decode_array(table.column("bucket").to_numpy())
    bad = np.nonzero(ids != bucket)[0]
    if len(bad):
        i = int(bad[0])
        raise InvalidAcidLayout(
            f"{what} with bucket property {int(table.column('bucket')[i].as_py())} "
            f"(bucket {int(ids[i])}) stored in bucket_{bucket:05d} of {path_hint}: "
            "Hive would not apply it there (F09/F15); refusing to compact"
        )


class StreamOrder:
    """Raises :class:`NotInOrder` unless the keys of successive tables strictly increase."""

    def __init__(self):
        from acidctl.orc.acidfile import KeyOrder

        self._order = KeyOrder()

    def check(self, t) -> None:
        import numpy as np

        if not t.num_rows:
            return
        ot = t.column("originalTransaction").to_numpy()
        bk = t.column("bucket").to_numpy().astype(np.int64)
        rid = t.column("rowId").to_numpy()
        if self._order.first_break(ot, bk, rid) is not None:
            raise NotInOrder()


class SameSchema:
    """Raises :class:`NotInOrder` when a table's schema differs from the first one's (the
    whole-bucket path unifies them with a permissive concatenation)."""

    def __init__(self):
        self.schema = None

    def check(self, t) -> None:
        s = t.schema.remove_metadata()
        if self.schema is None:
            self.schema = s
        elif not s.equals(self.schema):
            raise NotInOrder()
