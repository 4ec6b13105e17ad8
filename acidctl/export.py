"""``acidctl export``: a table's merged snapshot as plain Parquet or ORC files.

Spark without Hive ACID support, DuckDB, pandas and Flink cannot read ACID tables (they see
every insert and delete event of every delta). Export writes what a Hive reader sees — the same
plan and merge as ``dump --merged`` (acidctl/acid/read.py, acidctl/acid/merge.py) — as plain
files any engine reads:

* one file per partition × bucket, ``DEST/<k=v>/.../bucket_NNNNN.<parquet|orc>``, partition
  directories named exactly as the table's (Hive-escaped ``key=value``), so engines that
  discover Hive-style partitions (Spark, DuckDB, pyarrow.dataset, Trino's hive connector) read
  the partition columns from the path; the files hold the table's columns only;
* ``--with-row-id`` adds Hive's ``row__id`` struct (writeid, bucketid, rowid) as the first column;
* rows in ROW__ID order within each file; buckets whose live rows are all deleted write nothing;
* memory per task (Hive 3/4): the bucket's valid delete keys (key columns only, read stripe by
  stripe, only the bucket's kept) plus a read batch and a write piece (:data:`WRITE_ROWS`): the
  insert events stream in Hive's read order, merged and written as they come; a bucket whose
  files cannot stream (out of key order, differing schemas) is merged whole, as before, and the
  file is the same byte for byte either way. Hive 2: a window at a time
  (:mod:`acidctl.acid.hive2stream`); insert-only: a piece at a time.

Nothing is lost and nothing half-written is left for a reader: every file is written into a
hidden staging directory beside DEST (``.DEST.acidctl-export-<id>``), read back (row count,
schema and, with ``row__id``, a digest of the row ids in order) and only then the staging directory is renamed to DEST — one atomic rename on local
filesystems and HDFS; on object stores a copy, reported as ``publish: non-atomic``. DEST must not
exist (or be an empty directory): export never overwrites anything. The source table is only
read.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import posixpath
import time
import uuid
from typing import Any, Iterator

from acidctl.errors import InvalidInputError, RefusedError, UsageError

log = logging.getLogger("acidctl.export")

FORMATS = {"parquet": "parquet", "orc": "orc"}
#: default codecs: Parquet's usual snappy; ORC ZLIB, which every Hive (3.1 bundles ORC 1.5,
#: which cannot read ZSTD) and Impala can read
DEFAULT_COMPRESSION = {"parquet": "snappy", "orc": "zlib"}
#: the codecs each pyarrow writer accepts
CODECS = {
    "parquet": ("none", "snappy", "gzip", "brotli", "lz4", "zstd"),
    "orc": ("uncompressed", "snappy", "zlib", "lz4", "zstd"),
}
ROW_ID_FIELDS = (("writeid", "int64"), ("bucketid", "int32"), ("rowid", "int64"))


@dataclasses.dataclass
class ExportTask:
    """One partition × bucket: everything an executor needs (picklable, no open handles)."""

    source_url: str
    source_options: dict
    partition: str | None  # relative partition path, Hive-escaped (k=v/k2=v2)
    bucket: int
    inserts: list  # acidctl.acid.read.Source, in read order
    deletes: list  # every delete file of the partition
    write_ids: str  # the reader's ValidWriteIdList
    dest_url: str
    dest_options: dict
    out_rel: str  # path of the file under the staging directory
    format: str
    compression: str
    with_row_id: bool
    column_names: list[str] | None  # table column names from the metastore (files may say _colN)
    hive_version: int = 3  # 2: Hive 2.3's merge (acidctl.acid.hive2: legacy update events)
    #: insert-only table: its acidctl.mm.context.MMContext, and the files a reader reads
    #: (acidctl.mm.read.read_plan); the rows are copied a piece at a time
    mm: Any = None
    mm_files: list | None = None


@dataclasses.dataclass
class ExportOptions:
    format: str = "parquet"
    compression: str | None = None
    with_row_id: bool = False
    partitions: list[str] | None = None  # only these partitions (k=v[/k2=v2] prefixes)
    engine: str = "auto"  # auto | local | spark (acidctl.compact.engine.choose_engine)
    local_max_bytes: int | str | None = None  # the auto threshold (--local-max-bytes)
    master: str = "local[*]"
    spark_conf: dict = dataclasses.field(default_factory=dict)
    column_names: list[str] | None = None
    #: an insert-only table's acidctl.mm.context.MMContext (plain files, no ROW__ID)
    insert_only: Any = None


def _check_options(opts: ExportOptions) -> None:
    if opts.format not in FORMATS:
        raise UsageError(f"--format must be parquet or orc, not {opts.format!r}")
    if opts.compression and opts.compression.lower() not in CODECS[opts.format]:
        raise UsageError(
            f"--compression for {opts.format} must be one of {', '.join(CODECS[opts.format])}, not {opts.compression!r}"
        )
    if opts.engine not in ("auto", "local", "spark"):
        raise UsageError(f"--engine must be auto, local or spark, not {opts.engine!r}")
    if opts.insert_only is not None and opts.with_row_id:
        raise UsageError("--with-row-id: rows of an insert-only table have no ROW__ID")


def _partition_selected(partition: str | None, wanted: list[str] | None) -> bool:
    if not wanted:
        return True
    if partition is None:
        return False
    from acidctl.acid.dirname import partition_keys_lower

    parts = partition_keys_lower(partition).split("/")
    return any(parts[: len(w.strip("/").split("/"))] == partition_keys_lower(w).split("/") for w in wanted)


def check_partitions_exist(tfs, partitions: list[str] | None, listed: list[str | None]) -> None:
    """A ``--partition`` that selects no partition directory is a typo, not an empty result:
    exit 3 naming it (as ``state --partition`` does), with the partitions there are."""
    from acidctl.errors import NotFoundError

    for spec in partitions or []:
        if any(_partition_selected(rel, [spec]) for rel in listed):
            continue
        names = [r for r in listed if r]
        shown = ", ".join(names[:5]) + (f", ... ({len(names)} in all)" if len(names) > 5 else "")
        raise NotFoundError(
            f"--partition {spec}: no such partition directory in {tfs.display(tfs.root)}",
            hint=f"its partitions: {shown}" if names else "the table has no partition directories",
        )


def plan_export(
    tfs,
    snapshot,
    dest,
    opts: ExportOptions,
    *,
    txns=None,
    hive_version: int = 3,
    partition_prefix: str | None = None,
    staging: str,
) -> list[ExportTask]:
    """The tasks of an export: one per partition × bucket id of the snapshot's insert files."""
    from acidctl.acid.acidstate import get_acid_state
    from acidctl.acid.layout import list_table
    from acidctl.acid.read import plan_sources

    tasks = []
    compression = (opts.compression or DEFAULT_COMPRESSION[opts.format]).lower()
    listings = list(list_table(tfs))
    rels = ["/".join(p for p in (partition_prefix, x.partition) if p) or None for x in listings]
    check_partitions_exist(tfs, opts.partitions, rels)
    for listing, rel in zip(listings, rels):
        if not _partition_selected(rel, opts.partitions):
            continue
        mm = opts.insert_only
        state = get_acid_state(listing, snapshot, txns=txns, hive_version=hive_version, insert_only=mm is not None)
        state.require_snapshot()
        if mm is not None:  # insert-only: one file per partition, every file a Hive reader reads
            from acidctl.mm.read import read_plan

            files = read_plan(listing, state, allow_originals=mm.allow_originals)
            if files:
                tasks.append(
                    ExportTask(
                        source_url=tfs.url,
                        source_options=dict(tfs.options),
                        partition=rel,
                        bucket=0,
                        inserts=[],
                        deletes=[],
                        write_ids=str(snapshot),
                        dest_url=dest.url,
                        dest_options=dict(dest.options),
                        out_rel=posixpath.join(staging, rel or "", f"000000_0.{opts.format}"),
                        format=opts.format,
                        compression=compression,
                        with_row_id=False,
                        column_names=None,
                        hive_version=hive_version,
                        mm=mm,
                        mm_files=files,
                    )
                )
            continue
        inserts, deletes = plan_sources(tfs, listing, state)
        buckets = sorted({s.bucket for s in inserts})
        for b in buckets:
            out_rel = posixpath.join(rel or "", f"bucket_{b:05d}.{opts.format}")
            tasks.append(
                ExportTask(
                    source_url=tfs.url,
                    source_options=dict(tfs.options),
                    partition=rel,
                    bucket=b,
                    inserts=[s for s in inserts if s.bucket == b],
                    deletes=list(deletes),
                    write_ids=str(snapshot),
                    dest_url=dest.url,
                    dest_options=dict(dest.options),
                    out_rel=posixpath.join(staging, out_rel),
                    format=opts.format,
                    compression=compression,
                    with_row_id=opts.with_row_id,
                    column_names=opts.column_names,
                    hive_version=hive_version,
                )
            )
    return tasks


def _flatten(merged, *, with_row_id: bool, column_names: list[str] | None):
    """Merged ACID events → a plain table: (row__id,) then the row struct's fields."""
    return _flat(merged, None, with_row_id=with_row_id, column_names=column_names)[0]


def _flat(events, mask, *, with_row_id: bool, column_names: list[str] | None):
    """The plain table of the events ``mask`` selects (None: all of them, no copy) — the key
    columns and the row's columns filtered together, once — and the selected events'
    (originalTransaction int64, bucket int32, rowId int64) arrays."""
    import pyarrow as pa

    from acidctl.acid import merge

    def one(c):
        return c.chunk(0) if c.num_chunks == 1 else c.combine_chunks()

    row = one(events.column("row"))
    fields = [row.type.field(i) for i in range(row.type.num_fields)]
    names = [f.name for f in fields]
    if column_names and len(column_names) == len(names):
        # original files written before the table was ACID may name their columns _col0..;
        # the metastore's names are the table's
        names = [c.lower() for c in column_names]
    # the struct's own nulls (never set by Hive for inserts) would hide child values: keep children
    cols = [one(events.column(k)) for k in merge.KEY] + [row.field(i) for i in range(len(fields))]
    if mask is not None:
        cols = (
            pa.RecordBatch.from_arrays(cols, names=[f"c{i}" for i in range(len(cols))]).filter(pa.array(mask)).columns
        )
    ot, bk, rid = cols[0].cast(pa.int64()), cols[1].cast(pa.int32()), cols[2].cast(pa.int64())
    arrays = cols[3:]
    if with_row_id:
        arrays.insert(0, pa.StructArray.from_arrays([ot, bk, rid], [n for n, _ in ROW_ID_FIELDS]))
        names.insert(0, "row__id")
    return pa.Table.from_arrays(arrays, names=names), (ot, bk, rid)


def run_task(task: ExportTask) -> dict:
    """Read, merge, write and read back one partition × bucket. Returns its metrics."""
    from acidctl.acid.writeids import WriteIdList
    from acidctl.fs import TableFS

    t0 = time.monotonic()
    src = TableFS(task.source_url, task.source_options)
    dst = TableFS(task.dest_url, task.dest_options)
    snapshot = WriteIdList.parse(task.write_ids)
    if task.mm is not None:
        return _run_mm_task(task, src, dst, t0)
    bytes_in = sum(src.info(s.path).size for s in task.inserts)
    metrics: dict[str, Any] = {
        "partition": task.partition,
        "bucket": task.bucket,
        "rows": 0,
        "file": None,
        "bytes": 0,
        "bytes_in": bytes_in,
    }
    from acidctl.orc.reader import ArrowNotRepresentable

    try:
        if task.hive_version == 2:  # Hive 2.3: OrcRawRecordMerger's collapse, streamed
            return _run_hive2_task(task, src, dst, snapshot, metrics, t0)
        return _run_acid_task(task, src, dst, snapshot, metrics, t0)
    except ArrowNotRepresentable as e:  # was a traceback
        where = f"{task.partition}/bucket {task.bucket}" if task.partition else f"bucket {task.bucket}"
        raise InvalidInputError(
            f"cannot export {where}: {str(e).splitlines()[0]}",
            hint="Arrow holds timestamps of years 1677-2262 only; export the other partitions with --partition",
        ) from None


def _run_acid_task(task: ExportTask, src, dst, snapshot, metrics: dict, t0: float) -> dict:
    """A Hive 3/4 bucket, streamed (:func:`_streamed_bucket`: the bucket's valid delete keys
    held, the insert events read a batch at a time, merged and written as they come); a bucket
    that cannot stream (a file out of key order, files differing in schema, an event of another
    bucket) is written again from the whole-bucket merge (:func:`_whole_bucket`), which is what
    the streamed path's output equals byte for byte when it streams."""
    from acidctl.acid import hive2stream
    from acidctl.compact.transform import NotInOrder

    return _export_bucket(
        task,
        dst,
        metrics,
        t0,
        streamed=lambda: _streamed_bucket(src, task, snapshot),
        whole=lambda: _whole_bucket(src, task, snapshot),
        unstreamable=(hive2stream.Unstreamable, NotInOrder),
    )


def _export_bucket(task: ExportTask, dst, metrics: dict, t0: float, *, streamed, whole, unstreamable) -> dict:
    """One bucket's file: ``streamed()``'s tables written as they come; when they raise one of
    ``unstreamable`` (possibly after rows were written) the half file is removed and
    ``whole()``'s tables are written instead. Then the file read back and verified."""
    from acidctl.faults import fire

    path = posixpath.normpath(dst.join(dst.root, task.out_rel))
    try:
        written = _write_tables(dst, path, streamed(), task.format, task.compression)
    except unstreamable as e:
        log.info("export %s bucket %d: whole-bucket merge (%s)", task.partition or "", task.bucket, e)
        fire("export-whole-bucket", str(e))
        if dst.exists(path):
            dst.rm(path)
        written = _write_tables(dst, path, whole(), task.format, task.compression)
    if not written.rows:
        return metrics
    _verify(dst, path, task.format, written)
    metrics.update(
        rows=written.rows, file=task.out_rel, bytes=dst.info(path).size, seconds=round(time.monotonic() - t0, 3)
    )
    return metrics


def _whole_bucket(src, task: ExportTask, snapshot):
    """The bucket merged whole (every insert file read, concatenated, merged with the
    partition's valid delete keys, sorted): at most one flattened table."""
    import pyarrow as pa

    from acidctl.acid import merge
    from acidctl.acid.read import read_delete_keys, read_events
    from acidctl.faults import fire

    dkeys = read_delete_keys(src, task.deletes, snapshot)
    tables = [t for t in (read_events(src, s) for s in task.inserts) if t.num_rows]
    if not tables:
        return
    merged = merge.apply(pa.concat_tables(tables, promote_options="permissive"), dkeys, snapshot)
    if merged.num_rows:
        fire("export-merged", merged.num_rows)
        yield _flatten(merged, with_row_id=task.with_row_id, column_names=task.column_names)


def _streamed_bucket(src, task: ExportTask, snapshot):
    """The bucket's live rows, flattened, a read batch at a time: the insert events in Hive's
    read order (:func:`acidctl.compact.sources.stream_events`, raw files with their synthetic
    row ids) against the bucket's valid delete keys (held once, indexed by the merge kernel).

    The whole-bucket merge returns the concatenated live events unchanged when they are in key
    order (``merge.apply`` sorts only what is out of order, with a stable sort), so this
    stream is that output as long as (checked as it goes, else
    :class:`~acidctl.acid.hive2stream.Unstreamable`, possibly after tables were yielded):

    * the live events do not decrease in key (``merge._is_sorted``'s order, equal keys allowed:
      a stable sort keeps them where they are);
    * every non-empty batch has the first one's schema (the whole merge concatenates with
      permissive promotion, which would change types);
    * every insert event's bucket property decodes to the task's bucket (only those keys are
      held: :func:`acidctl.acid.read.read_delete_keys` with ``bucket``)."""
    from acidctl.acid import hive2stream, merge
    from acidctl.acid.read import read_delete_keys
    from acidctl.compact.sources import stream_events
    from acidctl.faults import fire

    fire("export-acid-stream", task)
    keys = read_delete_keys(src, task.deletes, snapshot, bucket=task.bucket)
    schema = None
    last: tuple[int, ...] | None = None
    for t in stream_events(src, task.inserts):
        if schema is None:
            schema = t.schema.remove_metadata()
        elif not t.schema.remove_metadata().equals(schema):
            raise hive2stream.Unstreamable(hive2stream.SCHEMA, "insert files differ in schema")
        if not _all_of_bucket(t.column("bucket"), task.bucket):
            raise hive2stream.Unstreamable("bucket", f"an insert event of another bucket than {task.bucket}")
        # the live rows' mask (None: every row), applied once to the flattened columns: a
        # batch without a deleted row is handed on without a copy
        if any(t.column(k).null_count for k in merge.KEY):  # not Hive's: the whole-bucket merge
            raise hive2stream.Unstreamable("keys", "insert events with null keys")
        mask = merge.live_mask(t, keys, snapshot)
        if mask is not None and not mask.any():
            continue
        flat, (ot, bk, rid) = _flatten_live(t, mask, with_row_id=task.with_row_id, column_names=task.column_names)
        n = len(ot)
        first = (int(ot[0]), int(bk[0]), int(rid[0]))
        if (last is not None and first < last) or not merge.keys_nondecreasing(ot, bk, rid):
            raise hive2stream.Unstreamable(hive2stream.ORDER, "insert events out of key order")
        last = (int(ot[-1]), int(bk[-1]), int(rid[-1]))
        fire("export-merged", n)
        yield flat


def _flatten_live(events, mask, *, with_row_id: bool, column_names: list[str] | None):
    """:func:`_flat` of the events ``mask`` selects, with their (originalTransaction, bucket,
    rowId) as int64 numpy arrays (for the order checks)."""
    import numpy as np

    table, (ot, bk, rid) = _flat(events, mask, with_row_id=with_row_id, column_names=column_names)
    return table, (ot.to_numpy(), np.asarray(bk.to_numpy(), dtype=np.int64), rid.to_numpy())


def _all_of_bucket(bk, bucket: int) -> bool:
    """Does every bucket property of ``bk`` (an Arrow column) decode to ``bucket``? A file's
    events usually share one property: then one value is decoded, not every row's."""
    import numpy as np
    import pyarrow.compute as pc

    from acidctl.orc import bucketcodec

    if bk.null_count:
        return False
    if not len(bk):
        return True
    lo_hi = pc.min_max(bk)
    lo, hi = lo_hi["min"].as_py(), lo_hi["max"].as_py()
    values = np.array([lo], dtype=np.int64) if lo == hi else np.asarray(bk.to_numpy())
    return not (bucketcodec.decode_fields(values)[1] != bucket).any()


#: Hive 2 export: rows per merged window asked of the windowed merge (written in pieces of
#: :data:`WRITE_ROWS`)
HIVE2_WRITE_ROWS = 65536


def _run_hive2_task(task: ExportTask, src, dst, snapshot, metrics: dict, t0: float) -> dict:
    """A Hive 2.3 bucket (:mod:`acidctl.acid.hive2`): merged a window at a time
    (:func:`acidctl.acid.hive2stream.merged_windows`, about a piece per source file in memory)
    and written as it comes; a bucket the windows cannot take (a file out of key order, equal
    merge keys) is written again from the whole-bucket merge."""
    from acidctl.acid import hive2, hive2stream

    deletes = [d for d in task.deletes if d.bucket == task.bucket]
    hive2.refuse_two_originals(task.inserts)

    def flat(tables):
        for t in tables:
            if t is not None and t.num_rows:
                yield _flatten(t, with_row_id=task.with_row_id, column_names=task.column_names)

    return _export_bucket(
        task,
        dst,
        metrics,
        t0,
        streamed=lambda: flat(
            hive2stream.merged_windows(src, task.inserts, deletes, snapshot, batch_rows=HIVE2_WRITE_ROWS)
        ),
        whole=lambda: flat([hive2.merge_sources(src, task.inserts, deletes, snapshot)]),
        unstreamable=(hive2stream.Unstreamable,),
    )


#: rows per write into a plain file: every file is written in pieces of exactly this many rows
#: (the last one fewer), each one contiguous Arrow chunk, whatever sizes the merge hands out —
#: one Parquet row group / one ORC writer call per piece. So the bytes of a file depend on its
#: rows only: a streamed bucket and the same bucket merged whole write identical files.
WRITE_ROWS = 65536


@dataclasses.dataclass
class Written:
    """What :func:`_write_tables` wrote: rows, schema, and with a ``row__id`` column a digest
    of its fields in row order (checked against the file read back by :func:`_verify`)."""

    rows: int
    schema: Any
    digest: str | None


class _KeyDigest:
    """BLAKE2b of each ``row__id`` field's values in row order (one hasher per field: the
    digest of a column does not depend on how its rows were chunked)."""

    def __init__(self):
        import hashlib

        self._h = [hashlib.blake2b(digest_size=16) for _ in ROW_ID_FIELDS]

    def add(self, rid) -> None:
        """``rid``: a struct array (or chunked) of the row__id fields."""
        import numpy as np
        import pyarrow as pa

        chunks = rid.chunks if isinstance(rid, pa.ChunkedArray) else [rid]
        for c in chunks:
            if isinstance(c, pa.StructArray) and len(c):
                for h, (name, dtype) in zip(self._h, ROW_ID_FIELDS):
                    h.update(np.ascontiguousarray(c.field(name).to_numpy(zero_copy_only=False).astype(dtype)).data)

    def hexdigest(self) -> str:
        return "".join(h.hexdigest() for h in self._h)


def _write_tables(dst, path: str, tables, fmt: str, compression: str) -> Written:
    """``tables`` written to one file as they come, in pieces of :data:`WRITE_ROWS` rows (later
    tables cast to the first one's schema); no file when there is no row. Raises
    :class:`~acidctl.acid.hive2stream.Unstreamable` when a table cannot take the first one's
    schema. Holds at most one piece plus one incoming table."""
    import pyarrow as pa

    from acidctl.acid import hive2stream
    from acidctl.faults import fire

    writer = None
    schema = None
    rows = 0
    pending: list = []
    pending_rows = 0
    digest: _KeyDigest | None = None

    def write(f, t) -> None:
        nonlocal writer
        t = t.combine_chunks()
        if writer is None:
            writer = _plain_writer(f.open(), schema, fmt, compression)
        if digest is not None:
            digest.add(t.column("row__id"))
        fire("export-write", t.num_rows)
        if fmt == "parquet":
            writer.write_table(t)
        else:
            writer.write(t)

    def flush(f, *, last: bool) -> None:
        nonlocal pending, pending_rows
        if not pending or (not last and pending_rows < WRITE_ROWS):
            return
        t = pending[0] if len(pending) == 1 else pa.concat_tables(pending)
        off = 0
        while t.num_rows - off >= WRITE_ROWS:
            write(f, t.slice(off, WRITE_ROWS))
            off += WRITE_ROWS
        rest = t.slice(off) if off else t
        if last and rest.num_rows:
            write(f, rest)
            rest = rest.slice(rest.num_rows)
        pending = [rest] if rest.num_rows else []
        pending_rows = rest.num_rows

    try:
        with _Lazy(dst, path) as f:
            try:
                for t in tables:
                    if not t.num_rows:
                        continue
                    if schema is None:
                        schema = t.schema
                        if "row__id" in schema.names:
                            digest = _KeyDigest()
                    elif not t.schema.equals(schema):
                        try:
                            t = t.cast(schema)
                        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
                            raise hive2stream.Unstreamable(
                                hive2stream.SCHEMA, "merged windows differ in schema"
                            ) from None
                    pending.append(t)
                    pending_rows += t.num_rows
                    rows += t.num_rows
                    flush(f, last=False)
                flush(f, last=True)
            except BaseException:
                # closed while its file is open: an ORC writer left to the garbage collector
                # writes its tail into the closed file and aborts the process (the half file
                # is removed by the caller)
                if writer is not None:
                    try:
                        writer.close()
                    except Exception:  # the first error is the one to report
                        pass
                raise
            if writer is not None:
                writer.close()
    except pa.ArrowException as e:
        raise InvalidInputError(
            f"cannot write {fmt}: {str(e).splitlines()[0]}",
            hint="uniontype columns have no Parquet equivalent; try --format orc",
        ) from None
    return Written(rows, schema, digest.hexdigest() if digest is not None else None)


def _verify(dst, path: str, fmt: str, written: Written) -> None:
    """The file read back: its row count and column names, and with row ids the digest of the
    ``row__id`` column (read alone, a batch / stripe at a time), must be what was written."""
    rows, schema = _read_back(dst, path, fmt)
    problem = None
    if rows != written.rows:
        problem = f"wrote {written.rows} rows, read back {rows}"
    elif schema.names != written.schema.names:
        problem = f"wrote columns {written.schema.names}, read back {schema.names}"
    elif written.digest is not None and _read_back_digest(dst, path, fmt) != written.digest:
        problem = "the row ids read back differ from those written"
    if problem:
        raise InvalidInputError(f"export verification failed for {dst.display(path)}: {problem}")


def _read_back_digest(dst, path: str, fmt: str) -> str:
    d = _KeyDigest()
    with dst.open(path, "rb") as f:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            for b in pq.ParquetFile(f).iter_batches(columns=["row__id"], use_threads=False):
                d.add(b.column(0))
        else:
            import pyarrow.orc as po

            o = po.ORCFile(f)
            for i in range(o.nstripes):
                d.add(o.read_stripe(i, columns=["row__id"]).column(0))
    return d.hexdigest()


def _run_mm_task(task: ExportTask, src, dst, t0: float) -> dict:
    """An insert-only partition: its files' rows, a piece at a time, into one output file."""
    import pyarrow as pa

    from acidctl.formats.files import iter_tables
    from acidctl.formats.hivetypes import arrow_type, orc_struct
    from acidctl.mm.read import infer_columns

    files = task.mm_files or []
    metrics: dict[str, Any] = {
        "partition": task.partition,
        "bucket": 0,
        "rows": 0,
        "file": None,
        "bytes": 0,
        "bytes_in": sum(f.size for f in files),
    }
    columns = task.mm.columns or infer_columns(src, files, task.mm.storage)
    if not columns:
        raise UsageError("no columns known for the table: give --columns name:type,...")
    row_td = orc_struct(columns)
    schema = pa.schema([pa.field(n, arrow_type(td, where=n)) for n, td in row_td.fields.items()])
    path = posixpath.normpath(dst.join(dst.root, task.out_rel))
    writer = None
    rows = 0
    try:
        with _Lazy(dst, path) as f:
            try:
                for mf in files:
                    for t in iter_tables(src, mf.path, task.mm.storage, row_td):
                        if writer is None:
                            writer = _plain_writer(f.open(), schema, task.format, task.compression)
                        if task.format == "parquet":
                            writer.write_table(t)
                        else:
                            writer.write(t)
                        rows += t.num_rows
            except BaseException:
                if writer is not None:  # before its file closes (see _write_tables)
                    try:
                        writer.close()
                    except Exception:
                        pass
                raise
            if writer is not None:
                writer.close()
    except pa.ArrowException as e:
        raise InvalidInputError(f"cannot write {task.format}: {str(e).splitlines()[0]}") from None
    if writer is None:
        return metrics
    back, back_schema = _read_back(dst, path, task.format)
    if back != rows or back_schema.names != schema.names:
        raise InvalidInputError(
            f"export verification failed for {dst.display(path)}: wrote {rows} rows, read back {back}"
        )
    metrics.update(rows=rows, file=task.out_rel, bytes=dst.info(path).size, seconds=round(time.monotonic() - t0, 3))
    return metrics


class _Lazy:
    """An output file opened on first use (no file for a partition without rows)."""

    def __init__(self, dst, path: str):
        self.dst, self.path, self.fh = dst, path, None

    def open(self):
        if self.fh is None:
            self.dst.makedirs(posixpath.dirname(self.path))
            self.fh = self.dst.open(self.path, "wb")
        return self.fh

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.fh is not None:
            self.fh.close()
        return False


def _plain_writer(f, schema, fmt: str, compression: str):
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.ParquetWriter(f, schema, compression=compression)
    import pyarrow.orc as po

    return po.ORCWriter(f, compression=compression)


def _read_back(dst, path: str, fmt: str):
    if fmt == "parquet":
        import pyarrow.parquet as pq

        with dst.open(path, "rb") as f:
            md = pq.ParquetFile(f)
            return md.metadata.num_rows, md.schema_arrow
    import pyarrow.orc as po

    with dst.open(path, "rb") as f:
        o = po.ORCFile(f)
        return o.nrows, o.schema


def run_tasks(iterator):
    """Spark ``mapPartitions`` body: the metrics of each task."""
    for task in iterator:
        yield run_task(task)


@contextlib.contextmanager
def published(dest, final: str, staging: str) -> Iterator[None]:
    """Files written inside the block into ``staging`` (created here) become ``final`` with one
    rename when the block succeeds (an empty ``final`` directory is replaced); on any failure
    the staging directory is removed and nothing is published. ``final, staging`` come from
    :func:`prepare_dest`. Shared by ``export`` and ``changes --to parquet``."""
    dest.makedirs(staging)
    try:
        yield
        if dest.exists(final):  # an empty directory: replaced by the staging directory
            dest.rm(final, recursive=True)
        dest.rename(staging, final)
    except BaseException:
        try:
            dest.rm(staging, recursive=True)
        except Exception:  # pragma: no cover - best effort; the staging name is hidden
            log.warning("could not remove %s", dest.display(staging))
        raise


def prepare_dest(dest) -> tuple[str, str]:
    """(final path, staging path) for DEST (a TableFS at DEST); refuse to overwrite anything."""
    return _prepare_dest(dest)


def _prepare_dest(dest) -> tuple[str, str]:
    """(final path, staging path) for DEST; refuse to overwrite anything."""
    final = dest.root.rstrip("/")
    if dest.exists(final):
        if not dest.isdir(final) or dest.ls(final):
            raise RefusedError(
                f"{dest.display(final)} exists and is not empty; export never overwrites",
                hint="choose a new DEST or remove the old export first",
            )
    parent, name = posixpath.split(final)
    staging = posixpath.join(parent, f".{name}.acidctl-export-{uuid.uuid4().hex[:12]}")
    return final, staging


def export_table(
    tfs,
    snapshot,
    dest_url: str,
    opts: ExportOptions,
    *,
    dest_options: dict | None = None,
    txns=None,
    hive_version: int = 3,
    partition_prefix: str | None = None,
    spark=None,
    progress=None,
    dry_run: bool = False,
) -> dict:
    """Export the snapshot of the table/partition at ``tfs`` to ``dest_url``. Returns the report.
    ``dry_run``: the same checks (options, DEST, the snapshot) and the planned ``outputs``
    (rows and bytes null), nothing written."""
    from acidctl.fs import TableFS

    _check_options(opts)
    t0 = time.monotonic()
    dest = TableFS(dest_url, dest_options)
    final, staging = _prepare_dest(dest)
    staging_rel = posixpath.relpath(staging, dest.root)
    tasks = plan_export(
        tfs,
        snapshot,
        dest,
        opts,
        txns=txns,
        hive_version=hive_version,
        partition_prefix=partition_prefix,
        staging=staging_rel,
    )
    report: dict[str, Any] = {
        "source": tfs.display(tfs.root),
        "dest": dest.display(final),
        "format": opts.format,
        "compression": (opts.compression or DEFAULT_COMPRESSION[opts.format]).lower(),
        "write_ids": str(snapshot),
        "engine": opts.engine,
        "with_row_id": opts.with_row_id,
        "tasks": len(tasks),
    }
    engine = _engine_for(tfs, tasks, opts)
    report["engine"] = engine.engine
    report["engine_choice"] = engine.to_dict()
    if dry_run:
        report.update(
            dry_run=True,
            publish="atomic" if dest.atomic_rename else "non-atomic",
            partitions=len({t.partition or "" for t in tasks}),
            files=len(tasks),
            rows=None,
            bytes=None,
            bytes_in=engine.bytes_in,
            seconds=round(time.monotonic() - t0, 3),
            outputs=[
                {
                    "partition": t.partition,
                    "bucket": t.bucket,
                    "file": _final_rel(t.out_rel, staging_rel),
                    "rows": None,
                    "bytes": None,
                }
                for t in tasks
            ],
        )
        return report
    with published(dest, final, staging):
        if engine.engine == "spark" and tasks:
            from acidctl.compact.spark import get_or_create_session, run_tasks as spark_run

            t1 = time.monotonic()
            session = spark or get_or_create_session(opts.master, opts.spark_conf)
            report["spark_start_seconds"] = round(time.monotonic() - t1, 3)
            metrics = spark_run(session, tasks, progress=progress, body=run_tasks, job="acidctl export")
        else:
            metrics = []
            for i, task in enumerate(tasks):
                metrics.append(run_task(task))
                if progress:
                    progress(i + 1, len(tasks))
    files = [m for m in metrics if m.get("file")]
    parts = sorted({m["partition"] or "" for m in metrics})
    report.update(
        publish="atomic" if dest.atomic_rename else "non-atomic",
        partitions=len(parts),
        files=len(files),
        rows=sum(m["rows"] for m in metrics),
        bytes=sum(m["bytes"] for m in metrics),
        bytes_in=sum(m["bytes_in"] for m in metrics),
        seconds=round(time.monotonic() - t0, 3),
        outputs=[
            {
                "partition": m["partition"],
                "bucket": m["bucket"],
                "file": _final_rel(m["file"], staging_rel),
                "rows": m["rows"],
                "bytes": m["bytes"],
            }
            for m in files
        ],
    )
    return report


def _engine_for(tfs, tasks: list[ExportTask], opts: ExportOptions):
    """Which engine runs the tasks (``auto``: by the input bytes, as compact decides)."""
    from acidctl.compact.engine import choose_engine

    bytes_in = 0
    if opts.engine == "auto":  # sizes only where they decide something
        # every file once (a partition's delete files are read by each of its buckets' tasks)
        acid = {s.path for t in tasks for s in t.inserts + t.deletes}
        bytes_in = sum(tfs.info(p).size for p in acid) + sum(f.size for t in tasks for f in t.mm_files or ())
    return choose_engine(
        opts.engine,
        bytes_in=bytes_in,
        tasks=len(tasks),
        threshold=opts.local_max_bytes,
        master=opts.master,
        protocol=tfs.protocol,
    )


def _final_rel(rel: str, staging_rel: str) -> str:
    return os.path.relpath(rel, staging_rel) if rel.startswith(staging_rel) else rel
