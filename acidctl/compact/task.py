"""The function Spark runs on executors: compact one bucket of one partition.

:func:`run_bucket` reads the bucket's files through :class:`~acidctl.fs.TableFS`, merges them
with the Arrow kernel (:mod:`acidctl.acid.merge`), writes ``bucket_NNNNN`` with the ACID writer
into the staging directory, verifies the written file (``inspect_file``: no error findings, row
count), checks that the reader's merged snapshot of this bucket is the same before and after,
and returns a metrics dict. Memory is bounded by the bucket's rows and delete events.

* major: valid insert events minus valid deletes (aborted / deleted rows dropped), ROW__IDs and
  ``currentTransaction`` unchanged, operation 0;
* minor: valid insert events to the new delta, valid delete events (deduplicated by target key,
  the earliest deleting write kept) to the new delete delta, both in key order.

Expected failures are returned as ``{"error": {...}}`` records (the driver re-raises them with
their acidctl error class); anything else propagates as a Spark task failure.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time

CRASH_ENV = "ACIDCTL_TEST_CRASH_AT"


def crash_if(point: str, configured: str | None, driver_pid: int | None = None) -> None:
    """Test hook: SIGKILL the compaction (driver included) at ``point``; ``int:<point>``
    delivers SIGINT (Ctrl-C) to the driver instead."""
    if not configured:
        return
    if configured == "int:" + point:
        os.kill(driver_pid or os.getpid(), signal.SIGINT)
        time.sleep(0.5)  # let the signal arrive
        return
    if configured != point:
        return
    if driver_pid and driver_pid != os.getpid():
        try:
            os.kill(driver_pid, signal.SIGKILL)
        except OSError:
            pass
    os.kill(os.getpid(), signal.SIGKILL)
    os._exit(137)  # pragma: no cover


class _PeakRss:
    """Samples this process's resident set size while a task runs (Linux /proc; else 0)."""

    def __init__(self, interval: float = 0.02):
        self.interval = interval
        self.base = self.peak = _rss()
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, _rss())

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join(timeout=1)
        self.peak = max(self.peak, _rss())
        return False


def _rss() -> int:
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def run_tasks(tasks):
    """``mapPartitions`` body: one metrics dict per task."""
    for t in tasks:
        yield run_bucket(t)


def run_bucket(task) -> dict:
    from acidctl.errors import AcidctlError

    started = time.perf_counter()
    try:
        with _PeakRss() as mem:
            out = _run(task)
    except AcidctlError as e:
        return {"partition": task.partition, "bucket": task.bucket,
                "error": {"type": type(e).__name__, "module": type(e).__module__, "message": str(e)}}
    out["seconds"] = round(time.perf_counter() - started, 4)
    out["peak_rss_bytes"] = mem.peak
    out["task_memory_bytes"] = max(0, mem.peak - mem.base)
    return out


# -----------------------------------------------------------------------------------------

def _key(src):
    return (src.path, src.raw, src.write_id, src.statement, src.first_row_id)


class _Reader:
    """Reads sources once per task (compaction inputs are re-used by the verification)."""

    def __init__(self, tfs):
        self.tfs = tfs
        self.events: dict = {}
        self.bytes_read = 0

    def inserts(self, srcs, *, missing_ok: bool = False):
        import pyarrow as pa

        from acidctl.acid.read import read_events

        tables = []
        for s in srcs:
            k = _key(s)
            if k not in self.events:
                if missing_ok and not self.tfs.exists(s.path):
                    continue
                self.events[k] = read_events(self.tfs, s)
                self.bytes_read += self._size(s.path)
            t = self.events[k]
            if t.num_rows:
                tables.append(t)
        if not tables:
            return None
        return pa.concat_tables(tables, promote_options="permissive")

    def deletes(self, srcs, *, full: bool, missing_ok: bool = False):
        """Delete-file events: all six columns (``full``) or the five key columns."""
        import pyarrow as pa

        from acidctl.acid import merge
        from acidctl.orc.reader import OrcFile

        tables = []
        for s in srcs:
            k = ("full" if full else "keys",) + _key(s)
            alt = ("full",) + _key(s)
            if k not in self.events and alt in self.events:
                k = alt
            if k not in self.events:
                if missing_ok and not self.tfs.exists(s.path):
                    continue
                if full:
                    from acidctl.acid.read import read_events

                    self.events[k] = read_events(self.tfs, s)
                else:
                    parts = []
                    with OrcFile(self.tfs, s.path) as f:
                        cols = list(f.schema.fields)[:5]
                        for i in range(f.num_stripes()):
                            b = f.read_stripe_arrow(i, columns=cols)
                            parts.append(pa.Table.from_batches([b]).rename_columns(merge.ACID_COLUMNS[:5]))
                    self.events[k] = pa.concat_tables(parts) if parts else None
                self.bytes_read += self._size(s.path)
            t = self.events[k]
            if t is not None and t.num_rows:
                tables.append(t)
        if not tables:
            return None
        return pa.concat_tables(tables, promote_options="permissive")

    def _size(self, path: str) -> int:
        try:
            return self.tfs.info(path).size
        except Exception:
            return 0


def _rename_row(table, columns: list[str] | None, coln_only: bool = False):
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
            raise UsageError(f"--columns names {len(columns)} column(s) but the files have {len(old)}: {old}")
        new = [c.lower() for c in columns]
    else:
        new = [n.lower() for n in old]
    if new == old:
        return table
    fields = [pa.field(n, f.type, f.nullable) for n, f in zip(new, rt)]
    row = table.column("row")
    chunks = [pa.StructArray.from_arrays([c.field(i) for i in range(c.type.num_fields)], fields=fields,
                                         mask=c.is_null()) if len(c) else pa.array([], pa.struct(fields))
              for c in row.chunks]
    col = pa.chunked_array(chunks, type=pa.struct(fields))
    return table.set_column(table.schema.get_field_index("row"), "row", col)


def _check_bucket(table, bucket: int, what: str, path_hint: str) -> None:
    """Every event's bucket property decodes to this task's bucket (F09/F15)."""
    import numpy as np

    from acidctl.errors import InvalidAcidLayout

    if table is None or not table.num_rows:
        return
    bk = table.column("bucket").to_numpy().astype(np.int64) & 0xFFFFFFFF
    version = bk >> 29
    ids = np.where(version == 1, (bk >> 16) & 0xFFF, bk)
    bad = np.nonzero(ids != bucket)[0]
    if len(bad):
        i = int(bad[0])
        raise InvalidAcidLayout(f"{what} with bucket property {int(table.column('bucket')[i].as_py())} "
                                f"(bucket {int(ids[i])}) stored in bucket_{bucket:05d} of {path_hint}: "
                                "Hive would not apply it there (F09/F15); refusing to compact")


def _sort(table):
    return table.sort_by([("originalTransaction", "ascending"), ("bucket", "ascending"), ("rowId", "ascending")])


def _write(task, path: str, table, out_dir) -> dict:
    from acidctl.orc import writer

    stripe = writer.BASE_STRIPE_SIZE if out_dir.kind == "base" else writer.DELTA_STRIPE_SIZE
    data, info = writer.encode_acid_file(table, stripe_size=stripe)
    task.tfs.write_bytes(path, data)
    writer.verify(task.tfs, path, expected_rows=table.num_rows, dir_kind=out_dir.kind,
                  dir_range=(out_dir.min_write_id, out_dir.max_write_id))
    return {"rows": info.rows, "bytes": info.bytes, "stripes": info.stripes}


def _merged(reader, srcs, snapshot, columns, coln_only, *, missing_ok: bool):
    from acidctl.acid import merge

    ins_srcs, del_srcs = srcs
    ins = reader.inserts(ins_srcs, missing_ok=missing_ok)
    if ins is None:
        return None
    dels = reader.deletes(del_srcs, full=False, missing_ok=missing_ok)
    keys = merge.delete_keys(dels, snapshot) if dels is not None else None
    return _rename_row(merge.apply(ins, keys, snapshot), columns, coln_only)


def _same(a, b) -> bool:
    if a is None or b is None:
        return (a is None or a.num_rows == 0) and (b is None or b.num_rows == 0)
    if a.num_rows != b.num_rows:
        return False
    a = a.select(["originalTransaction", "bucket", "rowId", "currentTransaction", "row"])
    b = b.select(["originalTransaction", "bucket", "rowId", "currentTransaction", "row"])
    if a.equals(b):
        return True
    # NaN != NaN in Arrow's equality: compare Python values (slow path, only on mismatch)
    return _py(a) == _py(b)


def _py(t):
    import math

    def norm(v):
        if isinstance(v, float) and math.isnan(v):
            return "NaN"
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, list):
            return [norm(x) for x in v]
        return v

    return [norm(r) for r in t.to_pylist()]


def _run(task) -> dict:
    import pyarrow.compute as pc

    from acidctl.acid import merge
    from acidctl.errors import WriteVerificationFailed

    crash_if("task-start", task.crash_at, task.driver_pid)
    reader = _Reader(task.tfs)
    snap = task.compactor
    where = task.partition or "the table"
    m = {"partition": task.partition, "bucket": task.bucket, "rows_in": 0, "delete_events_in": 0,
         "rows_out": 0, "delete_events_out": 0, "deletes_applied": 0, "aborted_dropped": 0,
         "bytes_out": 0, "files_out": []}

    ins = reader.inserts(task.inserts)
    if ins is not None:
        m["rows_in"] = ins.num_rows
        _check_bucket(ins, task.bucket, "an insert event", where)
    dels = reader.deletes(task.deletes, full=task.mode == "minor")
    if dels is not None:
        m["delete_events_in"] = dels.num_rows
        _check_bucket(dels, task.bucket, "a delete event", where)

    out_ins = out_del = None
    if task.mode == "major":
        if ins is not None:
            valid = pc.and_(pc.equal(ins.column("operation"), 0),
                            merge.valid_mask(ins.column("currentTransaction"), snap))
            n_valid = pc.sum(valid.cast("int64")).as_py() or 0
            keys = merge.delete_keys(dels, snap) if dels is not None else None
            out_ins = _rename_row(merge.apply(ins, keys, snap), task.columns, task.columns_coln_only)
            m["aborted_dropped"] = ins.num_rows - n_valid
            m["deletes_applied"] = n_valid - out_ins.num_rows
    else:
        if ins is not None:
            keep = pc.and_(pc.equal(ins.column("operation"), 0),
                           merge.valid_mask(ins.column("currentTransaction"), snap))
            out_ins = _rename_row(_sort(ins.filter(keep)), task.columns, task.columns_coln_only)
            m["aborted_dropped"] += ins.num_rows - out_ins.num_rows
        if dels is not None:
            keep = pc.and_(pc.equal(dels.column("operation"), 2),
                           merge.valid_mask(dels.column("currentTransaction"), snap))
            d = dels.filter(keep)
            m["aborted_dropped"] += dels.num_rows - d.num_rows
            d = d.sort_by([("originalTransaction", "ascending"), ("bucket", "ascending"),
                           ("rowId", "ascending"), ("currentTransaction", "ascending")])
            out_del = _rename_row(_dedupe_keys(d), task.columns, task.columns_coln_only)

    crash_if("task-before-write", task.crash_at, task.driver_pid)
    if out_ins is not None and out_ins.num_rows and task.out_insert:
        w = _write(task, task.out_insert, out_ins, task.out_insert_dir)
        m["rows_out"] = w["rows"]
        m["bytes_out"] += w["bytes"]
        m["files_out"].append(task.out_insert)
    if out_del is not None and out_del.num_rows and task.out_delete:
        w = _write(task, task.out_delete, out_del, task.out_delete_dir)
        m["delete_events_out"] = w["rows"]
        m["bytes_out"] += w["bytes"]
        m["files_out"].append(task.out_delete)
    crash_if("task-after-write", task.crash_at, task.driver_pid)
    m["bytes_in"] = reader.bytes_read

    # the reader's merged snapshot of this bucket must not change (memory: drop what was
    # written and the cached inputs before the output is read back)
    del ins, dels, out_ins, out_del
    old = _merged(reader, task.verify_old, task.reader, task.columns, task.columns_coln_only, missing_ok=False)
    reader.events.clear()
    new = _merged(reader, task.verify_new, task.reader, task.columns, task.columns_coln_only, missing_ok=True)
    if not _same(old, new):
        raise WriteVerificationFailed(
            f"merged read of bucket {task.bucket} of {where} differs after compaction "
            f"({0 if old is None else old.num_rows} rows before, {0 if new is None else new.num_rows} after); "
            "nothing was published")
    m["verified_rows"] = 0 if old is None else old.num_rows
    return m


def _dedupe_keys(table):
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
