"""``acidctl dump --merged``: a table's rows as a Hive reader returns them, with ROW__ID.

Each output line is ``{"row__id":{"writeid":..,"bucketid":..,"rowid":..},<columns>...,<partition
columns>...}`` (Hive prints ROW__ID with lower-case field names), rows ordered by ROW__ID within
each partition, partitions in path order. Values are rendered by the same FileDump-compatible
renderer as ``dump``.
"""

from __future__ import annotations

import dataclasses
from typing import Iterator

from acidctl.acid.writeids import TxnList, WriteIdList
from acidctl.fs import TableFS


@dataclasses.dataclass
class MergedStats:
    partitions: int = 0
    rows: int = 0


def _partition_values(partition: str | None) -> list[tuple[str, str]]:
    from urllib.parse import unquote

    if not partition:
        return []
    out = []
    for part in partition.split("/"):
        k, _, v = part.partition("=")
        out.append((unquote(k), unquote(v)))
    return out


def merged_rows(tfs: TableFS, snapshot: WriteIdList, *, txns: TxnList | None = None, hive_version: int = 3,
                limit: int | None = None, stats: MergedStats | None = None,
                partition: str | None = None) -> Iterator[bytes]:
    """JSON lines (bytes chunks) of the merged snapshot of every partition under ``tfs.root``.
    ``partition`` names the partition when ``tfs.root`` is itself one (``k=v/k2=v2``)."""
    import pyarrow as pa
    import pyorc

    from acidctl.acid.acidstate import get_acid_state
    from acidctl.acid.layout import list_table
    from acidctl.acid.read import plan_sources, read_partition, row_type
    from acidctl.dump import _to_bytes
    from acidctl.orc import render

    rowid_td = pyorc.Struct(writeid=pyorc.BigInt(), bucketid=pyorc.Int(), rowid=pyorc.BigInt())
    left = limit
    for listing in list_table(tfs):
        state = get_acid_state(listing, snapshot, txns=txns, hive_version=hive_version)
        state.require_snapshot()
        inserts, _ = plan_sources(tfs, listing, state)
        if not inserts:
            continue
        td = row_type(tfs, inserts[-1])
        if hive_version == 2:   # Hive 2.3's OrcRawRecordMerger (legacy update events)
            from acidctl.acid import hive2

            tables = [t for _, t in hive2.read_partition(tfs, listing, state)]
        else:
            tables = [t for _, t in read_partition(tfs, listing, state)]
        if stats is not None:
            stats.partitions += 1
        if not tables:
            continue
        events = pa.concat_tables(tables, promote_options="permissive")
        events = events.sort_by([("originalTransaction", "ascending"), ("bucket", "ascending"),
                                 ("rowId", "ascending")])
        if left is not None:
            events = events.slice(0, left)
            left -= events.num_rows
        row = events.column("row").combine_chunks()
        rowid = pa.StructArray.from_arrays(
            [events.column("originalTransaction").combine_chunks(), events.column("bucket").combine_chunks(),
             events.column("rowId").combine_chunks()], ["writeid", "bucketid", "rowid"])
        cols = [rowid] + [row.field(i) for i in range(row.type.num_fields)]
        fields = [("row__id", rowid_td)] + [(n, t) for n, t in td.fields.items()][:row.type.num_fields]
        pvals = _partition_values("/".join(p for p in (partition, listing.partition) if p))
        for k, v in pvals:
            cols.append(pa.array([v] * events.num_rows, pa.string()))
            fields.append((k, pyorc.String()))
        batch = pa.RecordBatch.from_arrays(cols, names=[n for n, _ in fields])
        if stats is not None:
            stats.rows += batch.num_rows
        from acidctl.dump import SLICE_ROWS

        for off in range(0, batch.num_rows, SLICE_ROWS):
            yield _to_bytes(render.render_batch(batch.slice(off, SLICE_ROWS), fields))
        if left is not None and left <= 0:
            return
