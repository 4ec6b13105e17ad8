"""The source of ``acidctl migrate``: a Hive table's snapshot (Hive 3/4 full-ACID, insert-only,
Hive 2.3), read per partition × bucket with bounded memory through export's machinery
(:func:`acidctl.export._streamed_bucket` / ``_whole_bucket`` and the Hive 2 windowed merge; one
bucket's delete keys plus a read batch held), as record batches in the target schema.

Also what a catch-up needs from the source: which partitions hold a directory with a write id
of NV (valid now, not valid at the last run), the rows of NV write ids, and the delete events
of NV write ids on rows of earlier ones.

Insert-only tables have no ROW__ID (Hive gives their rows none): their target has no ``row__id``
column; a catch-up appends the rows of the files of NV deltas, and replaces a partition whose
current base holds an NV write id (INSERT OVERWRITE, compaction).
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from acidctl.errors import InvalidInputError, UsageError
from acidctl.migrate.types import ROW_ID, convert_column, hive_arrow_type, partition_arrays, partition_values

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from acidctl.acid.writeids import WriteIdList


@dataclasses.dataclass
class SourceTable:
    """A resolved source table (see :func:`open_source`)."""

    tfs: Any  # TableFS of the table (or the one partition named)
    snapshot: WriteIdList
    txns: Any
    hive_version: int
    name: str  # recorded as acidctl.source-table: db.table (lower case) or the path
    columns: list[tuple[str, pa.DataType]]  # the table's columns, acidctl's in-memory types
    partition_keys: list[tuple[str, pa.DataType]]
    column_names: list[str] | None  # metastore names (files may say _colN)
    mm: Any = None  # acidctl.mm.context.MMContext of an insert-only table
    prefix: str | None = None  # the partition DB.TABLE/PART names (only it is migrated)
    #: other names a target recorded from this table may carry (the table's path when it is
    #: named DB.TABLE, so a migration started from the path continues under the name)
    aliases: tuple[str, ...] = ()
    mm_columns: list | None = None  # insert-only: the Hive columns (hivetypes.Column) its files are read as

    @property
    def whole_table(self) -> bool:
        return self.prefix is None


@dataclasses.dataclass
class SourcePartition:
    rel: str | None  # partition path relative to the table (k=v/...), None unpartitioned
    listing: Any
    state: Any
    values: dict[str, Any]

    @property
    def key(self) -> str:
        from acidctl.migrate.digest import partition_name

        return partition_name(self.values)


def open_source(target, *, file_format: str | None = None, allow_originals: bool = False) -> SourceTable:
    """The source table of a resolved :class:`acidctl.target.Target`."""
    from acidctl.mm.context import mm_context

    info = target.table
    mm = mm_context(target, fmt=file_format, allow_originals=allow_originals)
    name = target.source_name  # db.table (lower case) or the path: changes names its source so too
    cols: list[tuple[str, pa.DataType]] = []
    keys: list[tuple[str, pa.DataType]] = []
    names = None
    if info is not None and getattr(info, "columns", None):
        cols = [(n.lower(), hive_arrow_type(t, where=n.lower())) for n, t in info.columns]
        names = [n.lower() for n, _ in info.columns]
    if info is not None:
        keys = [(n.lower(), hive_arrow_type(t, where=n.lower())) for n, t in info.partition_keys or []]
    elif mm is not None and mm.columns:
        from acidctl.formats.hivetypes import arrow_type, orc_struct

        td = orc_struct(mm.columns)
        cols = [(n, arrow_type(t, where=n)) for n, t in td.fields.items()]
    mm_columns = None
    if mm is not None and info is not None and getattr(info, "columns", None):
        from acidctl.formats.hivetypes import Column

        mm_columns = [Column(n.lower(), t.lower()) for n, t in info.columns]
    path = target.tfs.display(target.tfs.root).rstrip("/")
    return SourceTable(
        aliases=(path,) if path != name else (),
        mm_columns=mm_columns,
        tfs=target.tfs,
        snapshot=target.write_ids,
        txns=target.txns,
        hive_version=target.hive_version,
        name=name,
        columns=cols,
        partition_keys=keys,
        column_names=names,
        mm=mm,
        prefix=getattr(info, "partition", None),
    )


def list_partitions(src: SourceTable) -> list[SourcePartition]:
    """Every partition of the snapshot with its reader state (Hive's errors raised as Hive would)."""
    import pyarrow as pa

    from acidctl.acid.acidstate import get_acid_state
    from acidctl.acid.layout import list_table

    out = []
    for listing in list_table(src.tfs):
        rel = "/".join(p for p in (src.prefix, listing.partition) if p) or None
        state = get_acid_state(
            listing, src.snapshot, txns=src.txns, hive_version=src.hive_version, insert_only=src.mm is not None
        )
        state.require_snapshot()
        if rel and not src.partition_keys:  # a path: partition keys from the directory names, strings
            src.partition_keys = [(p.split("=", 1)[0].lower(), pa.string()) for p in rel.split("/")]
        out.append(SourcePartition(rel, listing, state, partition_values(rel, src.partition_keys)))
    return out


def ensure_columns(src: SourceTable, parts: list[SourcePartition]) -> None:
    """A table given as a path: its columns from the first data file."""
    if src.columns:
        return
    if src.mm is not None:
        from acidctl.formats.hivetypes import arrow_type, orc_struct
        from acidctl.mm.read import infer_columns, read_plan

        for p in parts:
            files = read_plan(p.listing, p.state, allow_originals=src.mm.allow_originals)
            if files:
                src.mm_columns = infer_columns(src.tfs, files, src.mm.storage)
                td = orc_struct(src.mm_columns)
                src.columns = [(n, arrow_type(t, where=n)) for n, t in td.fields.items()]
                return
        raise UsageError("no columns known for the table (no data file): give --columns name:type,...")
    from acidctl.acid.read import plan_sources, row_type
    from acidctl.formats.hivetypes import arrow_type

    from acidctl.acid.acidstate import Kind
    from acidctl.acid.dirname import BucketFile
    from acidctl.acid.sourceplan import Source
    from acidctl.fs import join_path

    def found(s: Source) -> bool:
        td = row_type(src.tfs, s)
        src.columns = [(n.lower(), arrow_type(t, where=n)) for n, t in td.fields.items()]
        return True

    for p in parts:
        inserts, _ = plan_sources(src.tfs, p.listing, p.state)
        if inserts and found(inserts[0]):
            return
    for p in parts:  # a snapshot without rows: any insert file on disk (an open or aborted write's)
        for c in p.state.entries:
            if c.kind not in (Kind.DELTA, Kind.BASE):
                continue
            for f in c.entry.data_files():
                m = BucketFile.parse(f.name.rsplit("/", 1)[-1])
                if (
                    m is not None
                    and f.size
                    and found(
                        Source(join_path(join_path(p.listing.fs_path or p.listing.path, c.name), f.name), m.bucket)
                    )
                ):
                    return
    raise UsageError("no columns known for the table (no data file): name it DB.TABLE to take them from the metastore")


# -- catch-up: what changed ----------------------------------------------------------------


def new_write_ids(recorded: WriteIdList, now: WriteIdList) -> np.ndarray:
    """NV: the write ids valid in ``now`` and not valid in ``recorded`` (sorted int64): every id
    above the recorded high-water mark, and those open at the recorded run that committed since
    (a write open then may commit later with a lower id than others seen)."""
    import numpy as np

    low = [w for w in recorded.open if w <= now.hwm and now.is_valid(w)]
    high = np.arange(recorded.hwm + 1, now.hwm + 1, dtype=np.int64)
    if now.open or now.aborted:  # ids above the old hwm that are open or aborted now
        high = high[~np.isin(high, np.array(list(now.open) + list(now.aborted), dtype=np.int64))]
    return np.unique(np.concatenate([np.array(low, dtype=np.int64), high]))


def _dir_range(name: str) -> tuple[int, int] | None:
    """(lowest, highest) write id a base/delta directory name can hold (a base: 0..N)."""
    from acidctl.acid.dirname import BaseDir, DeltaDir, parse_acid_dir

    d = parse_acid_dir(name)
    if isinstance(d, BaseDir):
        return (0, d.max_write_id)
    if isinstance(d, DeltaDir):
        return (d.min_write_id, d.max_write_id)
    return None


def _holds(rng: tuple[int, int] | None, nv: np.ndarray) -> bool:
    import numpy as np

    if rng is None or not nv.size:
        return False
    i = int(np.searchsorted(nv, rng[0], side="left"))
    return i < nv.size and int(nv[i]) <= rng[1]


def partition_changed(part: SourcePartition, nv: np.ndarray) -> bool:
    """A directory of the partition (any: current, obsolete, aborted) may hold an NV write id."""
    return any(_holds(_dir_range(c.name), nv) for c in part.state.entries)


def base_covers(part: SourcePartition, nv: np.ndarray) -> bool:
    """The snapshot's base holds NV write ids: their delete events may be folded away
    (major compaction) or the base replaced the rows (INSERT OVERWRITE) — compare row ids."""
    base = part.state.base
    return base is not None and _holds(_dir_range(base.name), nv)


def _src_dir(path: str) -> str:
    return posixpath.basename(posixpath.dirname(path.rstrip("/")))


# -- rows ------------------------------------------------------------------------------------


def partition_rows(
    src: SourceTable,
    part: SourcePartition,
    schema: pa.Schema,
    *,
    precision: str,
    nv: np.ndarray | None = None,
    exclude: pa.Table | None = None,
) -> Iterator[pa.RecordBatch]:
    """The partition's snapshot rows in the target ``schema``, a bucket (and a read batch) at a
    time. ``nv``: only the rows whose ROW__ID write id is in NV (only the files that can hold
    them are read). ``exclude``: a writeid/bucketid/rowid table of rows to leave out."""
    for t in _flat_tables(src, part, nv=nv):
        if nv is not None and ROW_ID in t.column_names:
            t = t.filter(_in(t.column(ROW_ID).combine_chunks().field("writeid"), nv))
        if exclude is not None and exclude.num_rows and t.num_rows:
            t = _anti(t, exclude)
        if t.num_rows:
            yield to_target(t, schema, part.values, precision=precision)


def _in(arr, ids: np.ndarray):
    import numpy as np
    import pyarrow as pa

    return pa.array(np.isin(np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.int64), ids))


def row_id_table(t: pa.Table) -> pa.Table:
    """writeid/bucketid/rowid columns of a flattened table's ``row__id``."""
    import pyarrow as pa

    rid = t.column(ROW_ID).combine_chunks()
    return pa.table(
        {
            "writeid": rid.field("writeid").cast(pa.int64()),
            "bucketid": rid.field("bucketid").cast(pa.int32()),
            "rowid": rid.field("rowid").cast(pa.int64()),
        }
    )


def _anti(t: pa.Table, exclude: pa.Table) -> pa.Table:
    """Rows of ``t`` whose row__id is not in ``exclude``."""
    import numpy as np
    import pyarrow as pa

    keys = row_id_table(t).append_column("__i", pa.array(np.arange(t.num_rows, dtype=np.int64)))
    kept = keys.join(exclude, ["writeid", "bucketid", "rowid"], join_type="left anti", use_threads=False)
    idx = np.sort(kept.column("__i").to_numpy())
    return t.take(pa.array(idx))


def anti_keys(a: pa.Table, b: pa.Table) -> pa.Table:
    """Row ids of ``a`` not in ``b`` (both writeid/bucketid/rowid)."""
    if not b.num_rows or not a.num_rows:
        return a
    return a.join(b, ["writeid", "bucketid", "rowid"], join_type="left anti", use_threads=False)


_COLN = re.compile(r"^_col\d+$")


def to_target(t: pa.Table, schema: pa.Schema, values: dict[str, Any], *, precision: str) -> pa.RecordBatch:
    """A flattened merged table (``row__id``, the row's columns) as a batch of the target schema:
    columns by name (by position when the file names them ``_colN``), missing ones null (files
    written before ALTER TABLE ADD COLUMNS), partition columns from ``values``."""
    import pyarrow as pa

    t = t.combine_chunks()
    names = [n.lower() for n in t.column_names]
    data = [n for n in names if n != ROW_ID]
    positional = bool(data) and all(_COLN.match(n) for n in data)
    table_cols = [f.name for f in schema if f.name != ROW_ID and f.name not in values]
    by_name = dict(zip(names, t.columns))
    if positional:
        for i, n in enumerate(data):
            if i < len(table_cols):
                by_name[table_cols[i]] = by_name[n]
    n = t.num_rows
    parts = dict(zip(values, partition_arrays(values, schema, n)))
    arrays = []
    for f in schema:
        if f.name in parts:
            arrays.append(parts[f.name])
            continue
        col = by_name.get(f.name)
        if col is None:
            arrays.append(pa.nulls(n, type=f.type))
            continue
        arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        arrays.append(convert_column(arr, f.type, where=f.name, timestamp_precision=precision))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _flat_tables(src: SourceTable, part: SourcePartition, *, nv: np.ndarray | None) -> Iterator[pa.Table]:
    """The partition's live rows, flattened (``row__id`` first for ACID tables), per bucket."""

    if src.mm is not None:
        yield from _mm_tables(src, part, nv=nv)
        return
    from acidctl.acid.read import plan_sources

    inserts, deletes = plan_sources(src.tfs, part.listing, part.state)
    if nv is not None:
        inserts = [
            s
            for s in inserts
            if _holds(_dir_range(_src_dir(s.path)), nv) or (s.raw and _holds((s.write_id, s.write_id), nv))
        ]
    for task in bucket_tasks(src, part, inserts, deletes):
        yield from bucket_tables(src.tfs, task, src.snapshot)


def bucket_tasks(src: SourceTable, part: SourcePartition, inserts: list, deletes: list) -> list:
    """One export task per bucket of the partition (export's reader: the merged rows with
    ``row__id``, no file written), for the driver and for Spark tasks alike."""
    from acidctl.export import ExportTask

    return [
        ExportTask(
            source_url=src.tfs.url,
            source_options=dict(src.tfs.options),
            partition=part.rel,
            bucket=b,
            inserts=[s for s in inserts if s.bucket == b],
            deletes=list(deletes),
            write_ids=str(src.snapshot),
            dest_url="",
            dest_options={},
            out_rel="",
            format="parquet",
            compression="none",
            with_row_id=True,
            column_names=src.column_names,
            hive_version=src.hive_version,
        )
        for b in sorted({s.bucket for s in inserts})
    ]


def bucket_tables(tfs, task, snapshot) -> Iterator[pa.Table]:
    """One bucket's live rows, flattened with ``row__id``: export's streamed merge; where it
    turns out not to stream (a file out of key order, differing schemas) the whole-bucket merge,
    less the rows already handed out (a ROW__ID is unique within a bucket)."""
    import pyarrow as pa

    from acidctl import export
    from acidctl.acid import hive2, hive2stream
    from acidctl.compact.transform import NotInOrder
    from acidctl.orc.reader import ArrowNotRepresentable

    def flat(tables):
        for t in tables:
            if t is not None and t.num_rows:
                yield export._flatten(t, with_row_id=True, column_names=task.column_names)

    if task.hive_version == 2:
        deletes = [d for d in task.deletes if d.bucket == task.bucket]
        hive2.refuse_two_originals(task.inserts)

        def streamed():
            return flat(
                hive2stream.merged_windows(tfs, task.inserts, deletes, snapshot, batch_rows=export.HIVE2_WRITE_ROWS)
            )

        def whole():
            return flat([hive2.merge_sources(tfs, task.inserts, deletes, snapshot)])

        unstreamable: tuple[type[BaseException], ...] = (hive2stream.Unstreamable,)
    else:

        def streamed():
            return export._streamed_bucket(tfs, task, snapshot)

        def whole():
            return export._whole_bucket(tfs, task, snapshot)

        unstreamable = (hive2stream.Unstreamable, NotInOrder)
    seen: list = []  # the row__id columns handed out (tables of them built only when needed)
    try:
        try:
            for t in streamed():
                seen.append(t.column(ROW_ID))
                yield t
        except unstreamable:
            done = pa.concat_tables([row_id_table(pa.table({ROW_ID: c})) for c in seen]) if seen else None
            for t in whole():
                if done is not None and done.num_rows:
                    t = _anti(t, done)
                if t.num_rows:
                    yield t
    except ArrowNotRepresentable as e:
        where = f"{task.partition}/bucket {task.bucket}" if task.partition else f"bucket {task.bucket}"
        raise InvalidInputError(f"cannot migrate {where}: {str(e).splitlines()[0]}") from None


def _mm_tables(src: SourceTable, part: SourcePartition, *, nv: np.ndarray | None) -> Iterator[pa.Table]:
    """An insert-only partition's rows (no ROW__ID), a file piece at a time; ``nv``: only the
    files of deltas holding NV write ids."""
    from acidctl.formats.files import iter_tables
    from acidctl.formats.hivetypes import orc_struct
    from acidctl.mm.read import read_plan

    files = read_plan(part.listing, part.state, allow_originals=src.mm.allow_originals)
    if nv is not None:
        files = [f for f in files if _holds(_dir_range(f.child), nv)]
    columns = src.mm.columns or src.mm_columns
    if not columns:
        raise UsageError("no columns known for the insert-only table: give --columns name:type,...")
    row_td = orc_struct(columns)
    for mf in files:
        yield from iter_tables(src.tfs, mf.path, src.mm.storage, row_td)


def nv_deletes(src: SourceTable, part: SourcePartition, nv: np.ndarray) -> pa.Table:
    """Row ids deleted by NV writes on rows of earlier writes (delete events still on disk:
    operation 2, currentTransaction ∈ NV, originalTransaction ∉ NV), as writeid/bucketid/rowid."""
    import numpy as np
    import pyarrow as pa

    from acidctl.acid.read import plan_sources
    from acidctl.orc.reader import key_column_stripes

    _, deletes = plan_sources(src.tfs, part.listing, part.state)
    out = []
    for d in deletes:
        if not _holds(_dir_range(_src_dir(d.path)), nv):
            continue
        for t in key_column_stripes(src.tfs, d.path):
            op = t.column("operation").to_numpy(zero_copy_only=False)
            cur = np.asarray(t.column("currentTransaction").to_numpy(zero_copy_only=False), dtype=np.int64)
            orig = np.asarray(t.column("originalTransaction").to_numpy(zero_copy_only=False), dtype=np.int64)
            keep = (op == 2) & np.isin(cur, nv) & ~np.isin(orig, nv)
            if keep.any():
                k = t.filter(pa.array(keep))
                out.append(
                    pa.table(
                        {
                            "writeid": k.column("originalTransaction").cast(pa.int64()),
                            "bucketid": k.column("bucket").cast(pa.int32()),
                            "rowid": k.column("rowId").cast(pa.int64()),
                        }
                    )
                )
    if not out:
        return empty_keys()
    return pa.concat_tables(out).group_by(["writeid", "bucketid", "rowid"], use_threads=False).aggregate([])


def empty_keys() -> pa.Table:
    import pyarrow as pa

    return pa.table(
        {"writeid": pa.array([], pa.int64()), "bucketid": pa.array([], pa.int32()), "rowid": pa.array([], pa.int64())}
    )


def source_keys(src: SourceTable, part: SourcePartition) -> pa.Table:
    """Every live row id of the partition (a full merged read, rows dropped as they come)."""
    import pyarrow as pa

    keys = [row_id_table(t) for t in _flat_tables(src, part, nv=None) if t.num_rows]
    return pa.concat_tables(keys) if keys else empty_keys()
