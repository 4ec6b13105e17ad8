"""Reading a table snapshot: the files ``get_acid_state`` selects, merged bucket by bucket.

``read_partition`` yields one merged Arrow table per bucket id (ACID columns, sorted by key),
so a caller holds one bucket's live rows plus the partition's valid delete keys at a time.
Original (pre-ACID) files get Hive's synthetic ROW__IDs (orc-acid-files.md §10): write id 0
(or N for raw files under ``base_N``/``delta_N_N``), bucket property ``V1.encode(bucket from
the name, statement)``, row ids counted across the bucket's files in full-path order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generator, Iterator

import pyarrow as pa

from acidctl.acid import merge
from acidctl.acid.acidstate import AcidState, DirListing
from acidctl.acid.sourceplan import Source, plan_sources
from acidctl.acid.writeids import WriteIdList
from acidctl.fs import TableFS
from acidctl.orc import bucketcodec
from acidctl.orc.reader import OrcFile, key_column_stripes

if TYPE_CHECKING:
    import numpy as np


def read_events(tfs: TableFS, src: Source, *, columns: list[str] | None = None) -> pa.Table:
    """A file's events (all stripes) as an ACID table; raw files get synthetic row ids."""
    with OrcFile(tfs, src.path) as f:
        batches = [f.read_stripe_arrow(i) for i in range(f.num_stripes())]
        table = pa.Table.from_batches(batches) if batches else _arrow_schema_of(f).empty_table()
    if src.raw:
        return merge.with_synthetic_ids(
            table,
            write_id=src.write_id,
            bucket_property=bucketcodec.encode(src.bucket, src.statement),
            first_row_id=src.first_row_id,
        )
    return merge.normalise(table)


def _arrow_schema_of(f: OrcFile) -> pa.Schema:
    import pyarrow.orc as po

    return po.ORCFile(f._source).schema


def read_delete_keys(
    tfs: TableFS, deletes: list[Source], snapshot: WriteIdList, *, bucket: int | None = None
) -> pa.Table | None:
    """Valid delete keys of every delete file (only the key columns are read, stripe by stripe).

    ``bucket``: only the keys whose bucket property decodes to that bucket id are kept (per
    stripe), so a bucket's reader holds its own keys, not the partition's — for a caller whose
    insert events all decode to ``bucket`` (only those can match them)."""
    import numpy as np

    keys = []
    for src in deletes:
        for t in key_column_stripes(tfs, src.path):
            k = merge.delete_keys(t, snapshot)
            if bucket is None:
                keys.append(k)
                continue
            if not k.num_rows:
                continue
            bk = k.column("bucket")
            if bk.null_count:  # no bucket id to decode: kept (the merge compares the values)
                keys.append(k)
                continue
            _, ids, _ = bucketcodec.decode_fields(np.asarray(bk.to_numpy()))
            mine = ids == bucket
            if mine.all():
                keys.append(k)
            elif mine.any():
                keys.append(k.filter(pa.array(mine)))
    return pa.concat_tables(keys) if keys else None


def read_partition(tfs: TableFS, listing: DirListing, state: AcidState) -> Iterator[tuple[int, pa.Table]]:
    """(bucket id, merged live events) per bucket id, in bucket order."""
    inserts, deletes = plan_sources(tfs, listing, state)
    dkeys = read_delete_keys(tfs, deletes, state.write_ids)
    by_bucket: dict[int, list[Source]] = {}
    for s in inserts:
        by_bucket.setdefault(s.bucket, []).append(s)
    for bucket in sorted(by_bucket):
        tables = [read_events(tfs, s) for s in by_bucket[bucket]]
        tables = [t for t in tables if t.num_rows]
        if not tables:
            continue
        events = pa.concat_tables(tables, promote_options="permissive")
        yield bucket, merge.apply(events, dkeys, state.write_ids)


def row_type(tfs: TableFS, src: Source):
    """The ORC type of the table row in a source file (``row`` of an ACID file, or the whole
    schema of an original file)."""
    with OrcFile(tfs, src.path) as f:
        if f.is_acid:
            return list(f.schema.fields.values())[5]
        return f.schema


# -- streaming, in ROW__ID order ----------------------------------------------------------


class OutOfOrder(Exception):
    """An insert file is not in ROW__ID order (inside, or against what its directory name
    promises): the caller falls back to sorting what it has not printed yet."""


#: a key below every real key (base files: no lower bound from the name)
_LOWEST = (-(2**63), -(2**31), -(2**63))


def _lower_bound(src: Source) -> tuple[int, int, int]:
    """The smallest key the live insert events of ``src`` can have, from its name alone, so the
    streamed merge opens the file only when the output reaches that key: raw files carry
    exactly (write id, bucket property, first row id); an insert delta ``delta_x_y`` carries
    write ids x..y in ``originalTransaction`` (split-update: insert events are new rows);
    base files, anything."""
    from acidctl.acid.dirname import DeltaDir

    if src.raw:
        return (src.write_id, bucketcodec.encode(src.bucket, src.statement), src.first_row_id)
    parent = src.path.rstrip("/").rsplit("/", 2)[-2] if "/" in src.path else ""
    d = DeltaDir.parse(parent)
    if d is not None and not d.delete:
        return (d.min_write_id, _LOWEST[1], _LOWEST[2])
    return _LOWEST


class _SourceStream:
    """One insert file's live events in key order, a batch at a time."""

    def __init__(self, tfs: TableFS, src: Source, deletes, snapshot: WriteIdList, batch_rows: int):
        self.tfs, self.src, self.deletes, self.snapshot, self.batch_rows = tfs, src, deletes, snapshot, batch_rows
        self.lower = _lower_bound(src)
        self._it: Generator[pa.Table, None, None] | None = None
        self._file: OrcFile | None = None
        self._seen = 0  # raw files: rows read so far (synthetic row ids)
        self.last: tuple[int, int, int] | None = None  # last key handed out
        # (table, ot, bk, rid) not yet taken: the rows and their key columns as numpy arrays
        self.buf: tuple[pa.Table, np.ndarray, np.ndarray, np.ndarray] | None = None
        self.done = False

    def _batches(self) -> Generator[pa.Table, None, None]:
        f = OrcFile(self.tfs, self.src.path)
        self._file = f
        try:
            for b in f.iter_batches(batch_rows=self.batch_rows):
                yield pa.Table.from_batches([b])
        finally:
            f.close()
            self._file = None

    def close(self):
        if self._it is not None:
            self._it.close()

    def fill(self) -> bool:
        """Make ``buf`` hold live rows; False when the file is exhausted."""
        if self.buf is not None:
            return True
        if self.done:
            return False
        if self._it is None:
            self._it = self._batches()
        for t in self._it:
            n = t.num_rows
            if self.src.raw:
                t = merge.with_synthetic_ids(
                    t,
                    write_id=self.src.write_id,
                    bucket_property=bucketcodec.encode(self.src.bucket, self.src.statement),
                    first_row_id=self.src.first_row_id + self._seen,
                )
            else:
                t = merge.normalise(t)
            self._seen += n
            t = merge.apply(t, self.deletes, self.snapshot, sort=False)
            if not t.num_rows:
                continue
            ot, bk, rid = merge.key_arrays(t)
            first = (int(ot[0]), int(bk[0]), int(rid[0]))
            if not merge.keys_nondecreasing(ot, bk, rid) or first < (self.last or self.lower):
                raise OutOfOrder(self.src.path)
            self.buf = (t, ot, bk, rid)
            return True
        self.done = True
        return False

    def last_key(self) -> tuple[int, int, int]:
        assert self.buf is not None, "last_key() after a successful fill()"
        _, ot, bk, rid = self.buf
        return (int(ot[-1]), int(bk[-1]), int(rid[-1]))

    def take(self, bound) -> pa.Table | None:
        """The buffered rows with key ≤ ``bound`` (removed from the buffer)."""
        assert self.buf is not None, "take() after a successful fill()"
        t, ot, bk, rid = self.buf
        n = merge.count_keys(ot, bk, rid, bound, inclusive=True)
        if n == 0:
            return None
        self.last = (int(ot[n - 1]), int(bk[n - 1]), int(rid[n - 1]))
        if n == t.num_rows:
            self.buf = None
            return t
        self.buf = (t.slice(n), ot[n:], bk[n:], rid[n:])
        return t.slice(0, n)


#: stream_partition hands out tables of at most about this many bytes (wide rows: fewer rows)
OUT_BYTES = 8 << 20


def stream_partition(
    tfs: TableFS, listing: DirListing, state: AcidState, *, batch_rows: int = 65536
) -> Iterator[pa.Table]:
    """The partition's live events in ROW__ID order (originalTransaction, bucket, rowId), as
    tables of about ``batch_rows`` rows, streamed: a k-way merge of the insert files, each
    opened only when the output reaches the smallest key its name allows and read a batch at a
    time, against the partition's valid delete keys (held once, indexed).

    Memory: the delete keys plus one batch per file open at the same time. Raises
    :class:`OutOfOrder` when a file turns out not to be in key order (not written by Hive's
    rules); :func:`read_partition` plus a sort is the whole-partition path for that case.
    """
    inserts, deletes = plan_sources(tfs, listing, state)
    dkeys = read_delete_keys(tfs, deletes, state.write_ids)
    # files without a lower bound from their name (base files) are all open from the start:
    # smaller batches for those when there are many (32 buckets: the first row after 32 small
    # batches, not after 32 × 65,536 rows)
    unbounded = sum(1 for s in inserts if _lower_bound(s) == _LOWEST)
    first_rows = max(2048, batch_rows // max(1, unbounded))
    streams = sorted(
        (
            _SourceStream(tfs, s, dkeys, state.write_ids, first_rows if _lower_bound(s) == _LOWEST else batch_rows)
            for s in inserts
        ),
        key=lambda s: s.lower,
    )
    want = min(batch_rows, 4096)  # the first table small (time to first row), then full ones
    pending = list(reversed(streams))  # pop() gives the smallest lower bound
    active: list[_SourceStream] = []
    out: list[pa.Table] = []
    out_rows = out_bytes = 0
    try:
        while True:
            active = [s for s in active if s.fill()]
            while pending and (not active or pending[-1].lower <= min(s.last_key() for s in active)):
                s = pending.pop()
                if s.fill():
                    active.append(s)
            if not active:
                break
            bound = min(s.last_key() for s in active)
            parts = [p for p in (s.take(bound) for s in active) if p is not None]
            chunk = parts[0] if len(parts) == 1 else merge.sorted_concat(parts)
            out.append(chunk)
            out_rows += chunk.num_rows
            out_bytes += chunk.nbytes
            if out_rows >= want or out_bytes >= OUT_BYTES:
                yield _concat(out)
                out, out_rows, out_bytes = [], 0, 0
                want = batch_rows
        if out:
            yield _concat(out)
    finally:
        for s in streams:
            s.close()


def _concat(tables: list[pa.Table]) -> pa.Table:
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables, promote_options="permissive")
