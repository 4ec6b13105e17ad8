"""What a Hive reader reads from an insert-only partition (``HiveInputFormat.processPathsForMmRead``,
../shared/spec/insert-only-and-hive2.md A.5) and the rows it returns.

``getAcidState`` picks the base and the current deltas exactly as for full-ACID tables (aborted,
open and not-yet-visible write ids skipped; Hive 4 ``_vM`` visibility). Every non-hidden file in
those directories is read, at any depth (UNION ALL writes ``HIVE_UNION_SUBDIR_n/`` below a delta).
Files directly in the partition (originals) are read only without a base and only when the
cluster runs with ``hive.mm.allow.originals=true`` (default false: they are invisible).

``dump --merged`` prints each row as ``SELECT *`` returns it: the table's columns then the
partition columns, as a JSON object, values rendered like ``dump``'s FileDump-compatible
output. There is no ``row__id``: MM rows have no stored identity (Hive has no ROW__ID for them),
so printing one would invent it.
"""

from __future__ import annotations

import dataclasses
from typing import Iterator

from acidctl.acid.acidstate import Kind
from acidctl.acid.dirname import FLUSH_LENGTH_SUFFIX, is_hidden_path
from acidctl.errors import InvalidAcidLayout
from acidctl.fs import join_path


@dataclasses.dataclass
class MMFile:
    path: str  # full filesystem path
    child: str  # the base/delta directory (or the original file's name)
    rel: str  # relative to the child directory ("" for an original file)
    size: int


def dir_files(part_path: str, c) -> list[MMFile]:
    """Every reader-visible file of one base/delta directory (nested ones included), in name order."""
    out = []
    for f in sorted(tuple(c.entry.files) + tuple(c.entry.nested), key=lambda f: f.name):
        if is_hidden_path(f.name) or f.name.endswith(FLUSH_LENGTH_SUFFIX):
            continue
        out.append(MMFile(join_path(part_path, c.name, f.name), c.name, f.name, f.size))
    return out


def read_plan(listing, state, *, allow_originals: bool = False) -> list[MMFile]:
    """The files a Hive reader opens for this snapshot, in reader order (base, then deltas in
    Hive's order, then originals when allowed); zero-length files are skipped (no rows)."""
    part = listing.fs_path or listing.path
    for c in state.deltas:
        if c.kind is Kind.DELETE_DELTA:
            raise InvalidAcidLayout(f"{c.path}: a delete_delta directory in an insert-only table (MM05)")
    out: list[MMFile] = []
    for c in ([state.base] if state.base is not None else []) + list(state.deltas):
        out.extend(dir_files(part, c))
    if allow_originals and state.base is None:
        out.extend(MMFile(o.path, o.rel, "", o.size) for o in state.originals)
    return [f for f in out if f.size != 0]


def infer_columns(tfs, files: list[MMFile], storage):
    """Columns from the first data file of a self-describing format (ORC, Parquet, Avro)."""
    from acidctl.errors import UsageError
    from acidctl.mm.plain import file_columns

    if storage.format == "text":
        raise UsageError("a text table given as a path needs its columns: --columns name:type,...")
    if not files:
        return None
    return file_columns(tfs, files[0].path, storage.format)


def merged_rows(
    tfs,
    snapshot,
    ctx,
    *,
    txns=None,
    hive_version: int = 3,
    limit: int | None = None,
    partition: str | None = None,
    allow_originals: bool = False,
    stats=None,
) -> Iterator[bytes]:
    """JSON lines (bytes) of the rows a Hive reader returns, every partition under ``tfs.root``."""

    from acidctl.acid.acidstate import get_acid_state
    from acidctl.acid.layout import list_table
    from acidctl.orc.lines import SLICE_ROWS, to_bytes
    from acidctl.formats.files import iter_tables
    from acidctl.formats.hivetypes import orc_struct
    from acidctl.merged import _path_partition, partition_batch, partition_values
    from acidctl.orc import render

    if partition is None:  # a partition given as a path prints its partition columns too
        partition = _path_partition(tfs)
    left = limit
    columns = ctx.columns
    for listing in list_table(tfs):
        state = get_acid_state(listing, snapshot, txns=txns, hive_version=hive_version, insert_only=True)
        state.require_snapshot()
        files = read_plan(listing, state, allow_originals=allow_originals)
        if stats is not None:
            stats.partitions += 1
        if not files:
            continue
        if columns is None:
            columns = infer_columns(tfs, files, ctx.storage)
        row_td = orc_struct(columns)
        fields = list(row_td.fields.items())
        pvals = partition_values("/".join(p for p in (partition, listing.partition) if p))
        # a piece at a time (an ORC stripe, at most 65,536 other rows): a file need not fit in memory
        for t in (t for f in files for t in iter_tables(tfs, f.path, ctx.storage, row_td)):
            if left is not None:
                t = t.slice(0, max(left, 0))
                left -= t.num_rows
            if t.num_rows == 0:
                if left is not None and left <= 0:
                    return
                continue
            cols = [t.column(i).combine_chunks() for i in range(t.num_columns)]
            batch, fl = partition_batch(cols, fields, pvals, t.num_rows, stats)
            for off in range(0, batch.num_rows, SLICE_ROWS):
                yield to_bytes(render.render_batch(batch.slice(off, SLICE_ROWS), fl))
            if left is not None and left <= 0:
                return


def merged_counts(
    tfs,
    snapshot,
    ctx,
    *,
    txns=None,
    hive_version: int = 3,
    partition: str | None = None,
    allow_originals: bool = False,
    progress=None,
):
    """:func:`merged_rows` counted instead of rendered (:func:`acidctl.merged.merged_counts`):
    one :class:`acidctl.merged.PartitionCount` per partition; a file's bucket is the one its
    name carries (``000001_0``, ``bucket_00001``), None for other names. Each file is read, not
    only its footer: text and Avro files have no row count to trust."""
    from acidctl.acid.acidstate import get_acid_state
    from acidctl.acid.dirname import BucketFile, OriginalFile
    from acidctl.acid.layout import list_table
    from acidctl.formats.files import iter_tables
    from acidctl.formats.hivetypes import orc_struct
    from acidctl.merged import PartitionCount, _path_partition

    if partition is None:
        partition = _path_partition(tfs)
    columns = ctx.columns
    listings = list_table(tfs)
    for i, listing in enumerate(listings):
        state = get_acid_state(listing, snapshot, txns=txns, hive_version=hive_version, insert_only=True)
        state.require_snapshot()
        rec = PartitionCount("/".join(p for p in (partition, listing.partition) if p) or None)
        files = read_plan(listing, state, allow_originals=allow_originals)
        if files and columns is None:
            columns = infer_columns(tfs, files, ctx.storage)
        row_td = orc_struct(columns) if files else None
        for f in files:
            name = f.path.rsplit("/", 1)[-1]
            named = OriginalFile.parse(name) or BucketFile.parse(name)
            bucket = named.bucket if named is not None else None
            # streamed a piece at a time, as merged_rows reads (a file need not fit in memory)
            for t in iter_tables(tfs, f.path, ctx.storage, row_td):
                rec.add(bucket, t.num_rows)
            if progress is not None:
                progress(rec, i, len(listings))
        yield rec
