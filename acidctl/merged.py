"""``acidctl dump --merged``: a table's rows as a Hive reader returns them, with ROW__ID.

Each output line is ``{"row__id":{"writeid":..,"bucketid":..,"rowid":..},<columns>...,<partition
columns>...}`` (Hive prints ROW__ID with lower-case field names), rows ordered by ROW__ID within
each partition, partitions in path order. Values are rendered by the same FileDump-compatible
renderer as ``dump``.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterator

from acidctl.acid.writeids import TxnList, WriteIdList
from acidctl.fs import TableFS


@dataclasses.dataclass
class MergedStats:
    partitions: int = 0
    rows: int = 0


def partition_values(partition: str | None) -> list[tuple[str, str]]:
    from urllib.parse import unquote

    if not partition:
        return []
    out = []
    for part in partition.split("/"):
        k, _, v = part.partition("=")
        out.append((unquote(k), unquote(v)))
    return out


def partition_batch(
    cols: list, fields: list, pvals: list[tuple[str, str]], num_rows: int, stats: MergedStats | None = None
):
    """The rows' columns plus one string column per partition key (Hive prints partition
    columns after the row's, as strings), as a RecordBatch and its render fields; counted in
    ``stats``. Shared by the full-ACID and insert-only merged reads."""
    import pyarrow as pa
    import pyorc

    cols = list(cols) + [pa.array([v] * num_rows, pa.string()) for _, v in pvals]
    fields = list(fields) + [(k, pyorc.String()) for k, _ in pvals]
    batch = pa.RecordBatch.from_arrays(cols, names=[name for name, _ in fields])
    if stats is not None:
        stats.rows += batch.num_rows
    return batch, fields


def _path_partition(tfs: TableFS) -> str | None:
    """``k=v[/k2=v2]``: the trailing partition directories of a partition *path* (so a partition
    given as a path prints its partition columns, as ``DB.TABLE/k=v`` does)."""
    from acidctl.acid.dirname import is_partition_dir

    parts = []
    for name in reversed(tfs.root.rstrip("/").split("/")):
        if not is_partition_dir(name):
            break
        parts.append(name)
    return "/".join(reversed(parts)) or None


def merged_rows(
    tfs: TableFS,
    snapshot: WriteIdList,
    *,
    txns: TxnList | None = None,
    hive_version: int = 3,
    limit: int | None = None,
    stats: MergedStats | None = None,
    partition: str | None = None,
) -> Iterator[bytes]:
    """JSON lines (bytes chunks) of the merged snapshot of every partition under ``tfs.root``.
    ``partition`` names the partition when ``tfs.root`` is itself one (``k=v/k2=v2``; default:
    taken from the path).

    Streamed: each partition's insert files are merged in ROW__ID order a batch at a time
    (:func:`acidctl.acid.read.stream_partition`), so the first line comes after the first batch
    and memory is bounded by the partition's delete keys plus a batch per open file. A
    partition with a file not in key order (not written by Hive's rules) is read whole and
    sorted instead, when that is found before any of its rows was printed."""
    import pyorc

    from acidctl.acid.acidstate import get_acid_state
    from acidctl.acid.layout import list_table
    from acidctl.acid.read import plan_sources, row_type

    rowid_td = pyorc.Struct(writeid=pyorc.BigInt(), bucketid=pyorc.Int(), rowid=pyorc.BigInt())
    if partition is None:
        partition = _path_partition(tfs)
    left = [limit] if limit is not None else None
    for listing in list_table(tfs):
        state = get_acid_state(listing, snapshot, txns=txns, hive_version=hive_version)
        state.require_snapshot()
        inserts, _ = plan_sources(tfs, listing, state)
        if not inserts:
            continue
        if stats is not None:
            stats.partitions += 1
        td = row_type(tfs, inserts[-1])
        pvals = partition_values("/".join(p for p in (partition, listing.partition) if p))
        live = _hive2_tables(tfs, listing, state) if hive_version == 2 else _live_tables(tfs, listing, state)
        yield from _render(live, td, rowid_td, pvals, left, stats)
        if left is not None and left[0] <= 0:
            return


@dataclasses.dataclass
class PartitionCount:
    """Rows a reader sees in one partition (``partition`` None: the table itself), per bucket id
    (decoded from ROW__ID.bucketid; insert-only tables: from the file name, None when it has none)."""

    partition: str | None
    rows: int = 0
    buckets: dict[int | None, int] = dataclasses.field(default_factory=dict)

    def add(self, bucket: int | None, n: int) -> None:
        if n:
            self.buckets[bucket] = self.buckets.get(bucket, 0) + n
            self.rows += n

    def to_dict(self) -> dict:
        order = sorted(self.buckets, key=lambda b: (b is None, b or 0))
        return {
            "partition": self.partition,
            "rows": self.rows,
            "buckets": [{"bucket": b, "rows": self.buckets[b]} for b in order],
        }


def count_summary(counts: list[PartitionCount]) -> dict:
    """``{"rows": total, "partitions": [...]}`` of :func:`merged_counts`' records."""
    return {"rows": sum(c.rows for c in counts), "partitions": [c.to_dict() for c in counts]}


def merged_counts(
    tfs: TableFS,
    snapshot: WriteIdList,
    *,
    txns: TxnList | None = None,
    hive_version: int = 3,
    partition: str | None = None,
    progress: Callable[[PartitionCount, int, int], None] | None = None,
) -> Iterator[PartitionCount]:
    """What :func:`merged_rows` would print, counted instead of rendered: one record per
    partition (every partition the listing finds, empty ones with 0 rows), rows per bucket.

    Streamed as :func:`merged_rows` (the same merge, a batch at a time, nothing rendered).
    ``progress(record so far, partition index, partition count)`` is called after each batch."""
    import pyarrow.compute as pc

    from acidctl.acid.acidstate import get_acid_state
    from acidctl.acid.layout import list_table
    from acidctl.acid.read import plan_sources
    from acidctl.orc.bucketcodec import decode_array

    if partition is None:
        partition = _path_partition(tfs)
    listings = list_table(tfs)
    for i, listing in enumerate(listings):
        state = get_acid_state(listing, snapshot, txns=txns, hive_version=hive_version)
        state.require_snapshot()
        rec = PartitionCount("/".join(p for p in (partition, listing.partition) if p) or None)
        inserts, _ = plan_sources(tfs, listing, state)
        if inserts:
            live = _hive2_tables(tfs, listing, state) if hive_version == 2 else _live_tables(tfs, listing, state)
            for events in live:
                if events.num_rows == 0:
                    continue
                counted = pc.value_counts(events.column("bucket").combine_chunks())
                values = counted.field("values").to_numpy(zero_copy_only=False)
                _, ids = decode_array(values)  # statement ids of one bucket are one bucket
                for b, n in zip(ids.tolist(), counted.field("counts").to_pylist()):
                    rec.add(int(b), int(n))
                if progress is not None:
                    progress(rec, i, len(listings))
        if progress is not None:
            progress(rec, i, len(listings))
        yield rec


def _hive2_tables(tfs, listing, state):
    """Hive 2.3's OrcRawRecordMerger (legacy update events): the partition's live rows in key
    order, streamed (:func:`acidctl.acid.hive2stream.stream_partition`). Where the windows
    cannot merge (a file out of key order, equal merge keys: B.6), the partition is merged
    bucket by bucket whole and sorted; when rows were already handed out, the rest follows
    from the whole merge after the last key handed out — unless a file out of key order could
    have changed those rows, or the whole merge disagrees with them (then the read stops with
    an error: never a silently different result)."""
    from acidctl.acid import hive2, hive2stream
    from acidctl.acid.merge import sorted_concat
    from acidctl.errors import InvalidInputError

    given = 0
    last = None
    try:
        for t in hive2stream.stream_partition(tfs, listing, state):
            if t.num_rows:
                given += t.num_rows
                last = hive2stream.last_key(t)
            yield t
        return
    except hive2stream.Unstreamable as e:
        if given and e.reason == hive2stream.ORDER:
            raise _out_of_order(
                tfs.display(e.path) if e.path else "a file", "compact the partition with --hive-version 2"
            ) from None
        reason = str(e)
    tables = [t for _, t in hive2.read_partition(tfs, listing, state)]
    if not tables:
        return
    events = sorted_concat(tables)
    if last is not None:
        done = hive2stream.count_through(events, last)
        if done != given:
            raise InvalidInputError(
                f"{listing.path or 'the table'}: "
                f"the whole-bucket merge ({reason}) gives {done} rows up to the last printed "
                f"ROW__ID {last}, {given} were printed; the rest is not printed",
                hint="compact the partition with --hive-version 2, then dump it again",
            )
        events = events.slice(done)
    yield events


def _live_tables(tfs, listing, state):
    """The partition's live events in key order: streamed, or (a file out of key order found
    before anything was yielded) the whole partition sorted."""
    from acidctl.acid.merge import sorted_concat
    from acidctl.acid.read import OutOfOrder, read_partition, stream_partition

    started = False
    try:
        for t in stream_partition(tfs, listing, state):
            started = True
            yield t
        return
    except OutOfOrder as e:
        if started:
            raise _out_of_order(tfs.display(str(e)), "compact the partition") from None
    tables = [t for _, t in read_partition(tfs, listing, state)]
    if tables:
        yield sorted_concat(tables)


def _out_of_order(where: str, compact: str):
    """The error of a file found out of ROW__ID order after rows were printed (``compact``:
    the command that fixes it)."""
    from acidctl.errors import InvalidInputError

    return InvalidInputError(
        f"{where} is not in ROW__ID order (not written by Hive's rules); "
        "the rows printed so far are in order, the rest cannot be streamed",
        hint=f"{compact} (compaction writes key order), then dump it again",
    )


def _render(tables, td, rowid_td, pvals, left, stats):
    """Render each table of live events as JSON lines (with more than one usable CPU, slices on
    the render pool while the next table is read and merged; on one, in this thread)."""
    import pyarrow as pa

    from acidctl.dump import _in_order
    from acidctl.orc.lines import SLICE_BYTES, SLICE_ROWS
    from acidctl.orc import render

    from acidctl.errors import AcidctlError

    failed: list[AcidctlError] = []

    def batches():
        it = iter(tables)
        while True:
            # the limit checked before the next table is asked for: --limit N reads no table more
            if left is not None and left[0] <= 0:
                return
            try:
                events = next(it, None)
            except AcidctlError as e:
                # the rows already handed to the render pool are printed first, then the error
                failed.append(e)
                return
            if events is None:
                return
            if left is not None:
                events = events.slice(0, left[0])
                left[0] -= events.num_rows
            row = events.column("row").combine_chunks()
            rowid = pa.StructArray.from_arrays(
                [
                    events.column("originalTransaction").combine_chunks(),
                    events.column("bucket").combine_chunks(),
                    events.column("rowId").combine_chunks(),
                ],
                ["writeid", "bucketid", "rowid"],
            )
            cols = [rowid] + [row.field(i) for i in range(row.type.num_fields)]
            fields = [("row__id", rowid_td)] + [(n, t) for n, t in td.fields.items()][: row.type.num_fields]
            batch, fields = partition_batch(cols, fields, pvals, events.num_rows, stats)
            # slices of at most SLICE_ROWS rows and about SLICE_BYTES bytes (wide rows)
            step = min(SLICE_ROWS, max(256, SLICE_BYTES * batch.num_rows // max(1, batch.nbytes)))
            for off in range(0, batch.num_rows, step):
                yield batch.slice(off, step), fields

    def render_slice(item):
        # the rows' pieces laid out by one take, newline included (render.render_lines)
        return render.render_lines(*item)

    yield from _in_order(render_slice, batches())
    if failed:
        raise failed[0]
