"""The function Spark runs on executors: compact one bucket of one partition.

:func:`run_bucket` reads the bucket's files through :class:`~acidctl.fs.TableFS`, merges them
with the Arrow kernel (:mod:`acidctl.acid.merge`), writes ``bucket_NNNNN`` with the ACID writer
into the staging directory, verifies the written file (``inspect_file``: no error findings, row
count), checks that the reader's merged snapshot of this bucket is the same before and after,
and returns a metrics dict.

Memory: when the bucket's insert sources hold increasing, disjoint key ranges (as Hive writes
them) the task streams — sources in order, each read in batches, merged against the bucket's
valid delete keys (held in memory), written with the streaming ACID writer through a local
temporary file, and verified by comparing the old and new merged reads batch by batch — so a
task holds the delete keys plus a few batches (and ORC's per-stripe buffers). Otherwise it
falls back to the whole-bucket path (every input in one Arrow table), which is also used when
a file turns out not to be sorted inside.

* major: valid insert events minus valid deletes (aborted / deleted rows dropped), ROW__IDs and
  ``currentTransaction`` unchanged, operation 0;
* minor: valid insert events to the new delta, valid delete events (deduplicated by target key,
  the earliest deleting write kept) to the new delete delta, both in key order.

Output files get the ORC types of the newest input of their kind (insert sources for the
base/delta, delete sources for the delete delta; :func:`_output_type`): char(n)/varchar(n) are
kept although the data passes through Arrow, which knows only strings.

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


def _write(task, path: str, table, out_dir, orc_type: str | None) -> dict:
    from acidctl.orc import writer

    stripe = writer.BASE_STRIPE_SIZE if out_dir.kind == "base" else writer.DELTA_STRIPE_SIZE
    data, info = writer.encode_acid_file(table, orc_type=orc_type, stripe_size=stripe)
    task.tfs.write_bytes(path, data)
    writer.verify(task.tfs, path, expected_rows=table.num_rows, dir_kind=out_dir.kind,
                  dir_range=(out_dir.min_write_id, out_dir.max_write_id))
    return {"rows": info.rows, "bytes": info.bytes, "stripes": info.stripes}


def _write_output(task, m: dict, table, *, delete: bool) -> None:
    """Write the bucket's insert/base (``delete=False``) or delete output file from ``table``
    and count it in the metrics ``m``; nothing when there is no row or no such output."""
    if delete:
        path, out_dir, srcs, counter = task.out_delete, task.out_delete_dir, task.deletes, "delete_events_out"
    else:
        path, out_dir, srcs, counter = task.out_insert, task.out_insert_dir, task.inserts, "rows_out"
    if table is None or not table.num_rows or not path:
        return
    w = _write(task, path, table, out_dir, _output_type(task.tfs, srcs))
    m[counter] = w["rows"]
    m["bytes_out"] += w["bytes"]
    m["files_out"].append(path)


def _output_type(tfs, srcs) -> str | None:
    """The ORC type string an output made from ``srcs`` is written with: the newest source's
    (highest write id, then statement, then Hive's read order), None without sources.

    Why: the data is read through Arrow, which has no char(n)/varchar(n), so the written file
    would say ``string``; Hive's compactor writes the table's types, and the newest file
    carries the table's current ones. Only kinds and lengths are taken from it (field names
    come from the written data, after ``_rename_row``). Raw (original) files hold the row
    alone: their type is wrapped in the ACID struct."""
    from acidctl.orc import footer
    from acidctl.orc.acidfile import acid_type_string
    from acidctl.orc.reader import OrcFile

    if not srcs:
        return None
    newest = max(enumerate(srcs), key=lambda p: (*_write_id(p[1]), p[0]))[1]
    with OrcFile(tfs, newest.path) as f:
        text = footer.type_string(footer.types_of(f.schema))
    return acid_type_string(text) if newest.raw else text


def _write_id(src) -> tuple[int, int]:
    """(write id, statement) of a source: raw files carry theirs, ACID files are named by their
    directory (``base_N``: N; ``delta_M_N_S``: N, S); 0 when the directory is not an ACID one."""
    from acidctl.acid.dirname import BaseDir, parse_acid_dir

    if src.raw:
        return src.write_id, src.statement
    d = parse_acid_dir(src.path.rstrip("/").rsplit("/", 2)[-2]) if "/" in src.path else None
    if d is None:
        return 0, 0
    if isinstance(d, BaseDir):
        return d.write_id, 0
    return d.max_write_id, max(d.statement_id or 0, 0)


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
    """Streaming when the bucket's insert sources are in key order (the usual case), else
    the whole-bucket path."""
    global LAST_PATH
    if _in_key_order(task.tfs, task.inserts):
        try:
            out = _run_streaming(task)
            LAST_PATH = "stream"
            return out
        except _NotInOrder:
            pass   # an input file not sorted inside: nothing was moved into place
    LAST_PATH = "whole"
    return _run_whole(task)



def _new_metrics(task) -> dict:
    """The per-task metrics record (one shape for both task paths)."""
    return {"partition": task.partition, "bucket": task.bucket, "rows_in": 0, "delete_events_in": 0,
            "rows_out": 0, "delete_events_out": 0, "deletes_applied": 0, "aborted_dropped": 0,
            "invisible_dropped": 0, "other_events_dropped": 0, "bytes_out": 0, "files_out": []}


def _account(t, snap, m: dict, *, inserts: bool):
    """Count why events of ``t`` are not carried over, and return the mask of the valid ones.

    Nothing may be dropped silently (issue #9): an event is either valid for the compactor's
    list, or of an **aborted** write id (≤ hwm, in the aborted list: Hive drops those), or of a
    write id the compactor cannot see (> hwm: open or not yet allocated — ``invisible_dropped``,
    which makes the runner refuse the compaction), or of another operation than the one the
    output holds (``other_events_dropped``: e.g. ACID v1 update events — also refused).
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


def _run_whole(task) -> dict:
    import pyarrow.compute as pc

    from acidctl.acid import merge
    from acidctl.errors import WriteVerificationFailed

    crash_if("task-start", task.crash_at, task.driver_pid)
    reader = _Reader(task.tfs)
    snap = task.compactor
    where = task.partition or "the table"
    m = _new_metrics(task)

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
            valid = _account(ins, snap, m, inserts=True)
            n_valid = pc.sum(valid.cast("int64")).as_py() or 0
            keys = merge.delete_keys(dels, snap) if dels is not None else None
            out_ins = _rename_row(merge.apply(ins, keys, snap), task.columns, task.columns_coln_only)
            m["deletes_applied"] = n_valid - out_ins.num_rows
    else:
        if ins is not None:
            keep = _account(ins, snap, m, inserts=True)
            out_ins = _rename_row(_sort(ins.filter(keep)), task.columns, task.columns_coln_only)
        if dels is not None:
            out_del = _minor_deletes(dels, snap, m, task.columns, task.columns_coln_only)

    crash_if("task-before-write", task.crash_at, task.driver_pid)
    _write_output(task, m, out_ins, delete=False)
    _write_output(task, m, out_del, delete=True)
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


def _minor_deletes(dels, snap, m: dict, columns, coln_only):
    """Minor compaction's delete output: valid delete events in key order, one per key (the
    earliest deleting write); aborted ones are counted in ``m``."""


    keep = _account(dels, snap, m, inserts=False)
    d = dels.filter(keep)
    d = d.sort_by([("originalTransaction", "ascending"), ("bucket", "ascending"),
                   ("rowId", "ascending"), ("currentTransaction", "ascending")])
    return _rename_row(_dedupe_keys(d), columns, coln_only)


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


# -- streaming ------------------------------------------------------------------------------
#
# Within a bucket, Hive's insert sources (originals or the base, then the insert deltas in
# write-id/statement order) normally hold increasing, disjoint key ranges. Then the merged
# bucket is the concatenation of each source's live events, stripe by stripe, and a task needs
# in memory only the bucket's valid delete keys plus a few stripes. Each source's first and
# last key are read up front (synthetic ids of original files are known from the row counts;
# ACID files: the key columns of their first and last non-empty stripe); the live rows are
# checked again while streaming (strictly increasing), and any surprise (an unsorted file)
# aborts the temporary output and falls back to the whole-bucket path.

LAST_PATH: str | None = None   # "stream" | "whole": the path the last task in this process took


class _NotInOrder(Exception):
    """The streamed events are not strictly increasing: use the whole-bucket path."""


def _source_range(tfs, src):
    """(first key, last key) of a source's events, None for an empty source, or "?" when the
    file cannot be judged cheaply (not an ACID file, unreadable key columns)."""
    from acidctl.orc import bucketcodec
    from acidctl.orc.reader import OrcFile

    with OrcFile(tfs, src.path) as f:
        if src.raw:
            n = f.rows
            if not n:
                return None
            bp = bucketcodec.encode(src.bucket, src.statement)
            bp = bp - (1 << 32) if bp >= 1 << 31 else bp
            return (src.write_id, bp, src.first_row_id), (src.write_id, bp, src.first_row_id + n - 1)
        if not f.is_acid:
            return "?"
        if not f.rows:
            return None
        names = list(f.schema.fields)[1:4]
        first = next(_batches(f, columns=names, batch_rows=1024), None)
        if first is None:
            return None
        last = _key_index_last(f)
        if last is None:
            # no usable key index: the last key from a scan of the key columns (bounded memory)
            for b in _batches(f, columns=names):
                last = tuple(b.column(i)[b.num_rows - 1].as_py() for i in range(3))
        return tuple(first.column(i)[0].as_py() for i in range(3)), last


def _key_index_last(f):
    """The last key of an ACID file from its ``hive.acid.key.index`` (the last stripe's last
    key), or None when it is missing or malformed. A wrong index cannot produce wrong output:
    the streamed events are checked again while they are written."""
    raw = f.user_metadata.get("hive.acid.key.index")
    if not raw:
        return None
    try:
        entries = [e for e in raw.decode().split(";") if e]
        if len(entries) != sum(1 for s in f.stripes() if s.rows):
            return None
        ot, bk, rid = (int(x) for x in entries[-1].split(","))
    except (UnicodeDecodeError, ValueError):
        return None
    bk = bk - (1 << 32) if bk >= 1 << 31 else bk
    return ot, bk, rid


def _in_key_order(tfs, srcs, *, missing_ok: bool = False) -> bool:
    """Do the sources' key ranges increase strictly, without overlapping?"""
    prev = None
    for s in srcs:
        if missing_ok and not tfs.exists(s.path):
            continue
        r = _source_range(tfs, s)
        if r is None:
            continue
        if r == "?" or any(v is None for v in r[0] + r[1]):
            return False
        if r[0] > r[1] or (prev is not None and not prev < r[0]):
            return False
        prev = r[1]
    return True


def _stream_events(tfs, srcs, *, missing_ok: bool = False):
    """Every source's events, one stripe at a time, as ACID tables (raw files get their
    synthetic row ids counted across stripes); empty stripes are skipped."""
    import pyarrow as pa

    from acidctl.acid import merge
    from acidctl.orc import bucketcodec
    from acidctl.orc.reader import OrcFile

    for s in srcs:
        if missing_ok and not tfs.exists(s.path):
            continue
        with OrcFile(tfs, s.path) as f:
            pos = s.first_row_id
            bp = bucketcodec.encode(s.bucket, s.statement) if s.raw else None
            for b in _batches(f):
                t = pa.Table.from_batches([b])
                if s.raw:
                    t = merge.with_synthetic_ids(t, write_id=s.write_id, bucket_property=bp, first_row_id=pos)
                    pos += t.num_rows
                else:
                    t = merge.normalise(t)
                yield t


BATCH_ROWS = 65536


def _batches(f, *, columns=None, batch_rows=None):
    """A file's rows (or ``columns``) as record batches of at most :data:`BATCH_ROWS` rows
    (:meth:`acidctl.orc.reader.OrcFile.iter_batches`)."""
    return f.iter_batches(columns=columns, batch_rows=batch_rows or BATCH_ROWS)


class _Order:
    """Raises :class:`_NotInOrder` unless the keys of successive tables strictly increase."""

    def __init__(self):
        self.last = None

    def check(self, t) -> None:
        import numpy as np

        from acidctl.orc.acidfile import check_sorted

        if not t.num_rows:
            return
        ot = t.column("originalTransaction").to_numpy()
        bk = t.column("bucket").to_numpy().astype(np.int64)
        rid = t.column("rowId").to_numpy()
        if self.last is not None:
            ot = np.concatenate([[self.last[0]], ot])
            bk = np.concatenate([[self.last[1]], bk])
            rid = np.concatenate([[self.last[2]], rid])
        if check_sorted(ot, bk, rid) is not None:
            raise _NotInOrder()
        self.last = (int(ot[-1]), int(bk[-1]), int(rid[-1]))


class _SameSchema:
    """Raises :class:`_NotInOrder` when a table's schema differs from the first one's (the
    whole-bucket path unifies them with a permissive concatenation)."""

    def __init__(self):
        self.schema = None

    def check(self, t) -> None:
        s = t.schema.remove_metadata()
        if self.schema is None:
            self.schema = s
        elif not s.equals(self.schema):
            raise _NotInOrder()


def _stream_delete_keys(tfs, srcs, snapshot, *, missing_ok: bool = False, on_stripe=None):
    """The valid delete keys of ``srcs`` (key columns read stripe by stripe; only valid keys
    are kept); ``on_stripe(table)`` sees each stripe's five key columns."""
    import pyarrow as pa

    from acidctl.acid import merge
    from acidctl.orc.reader import OrcFile

    keys = []
    for s in srcs:
        if missing_ok and not tfs.exists(s.path):
            continue
        with OrcFile(tfs, s.path) as f:
            cols = list(f.schema.fields)[:5]
            for i in range(f.num_stripes()):
                b = f.read_stripe_arrow(i, columns=cols)
                t = pa.Table.from_batches([b]).rename_columns(merge.ACID_COLUMNS[:5])
                if on_stripe is not None:
                    on_stripe(t)
                k = merge.delete_keys(t, snapshot)
                if k.num_rows:
                    keys.append(k)
    return pa.concat_tables(keys).combine_chunks() if keys else None


def _writer_for(task, path, out_dir, orc_type: str | None):
    from acidctl.orc import writer

    stripe = writer.BASE_STRIPE_SIZE if out_dir.kind == "base" else writer.DELTA_STRIPE_SIZE
    return writer.AcidFileWriter(task.tfs, path, orc_type=orc_type, stripe_size=stripe, verify_kind=out_dir.kind,
                                 verify_range=(out_dir.min_write_id, out_dir.max_write_id))


def _input_bytes(task) -> int:
    seen = set()
    total = 0
    for s in list(task.inserts) + list(task.deletes):
        if _key(s) in seen:
            continue
        seen.add(_key(s))
        try:
            total += task.tfs.info(s.path).size
        except Exception:
            pass
    return total


def _run_streaming(task) -> dict:
    import pyarrow.compute as pc

    from acidctl.acid import merge

    crash_if("task-start", task.crash_at, task.driver_pid)
    snap = task.compactor
    where = task.partition or "the table"
    m = _new_metrics(task)
    cols, coln = task.columns, task.columns_coln_only

    # delete events: in memory (the allowed bound). Their bucket check is reported after the
    # inserts', as the whole-bucket path does.
    del_error = []
    dels_full = None

    def seen_delete(t):
        m["delete_events_in"] += t.num_rows
        if not del_error:
            try:
                _check_bucket(t, task.bucket, "a delete event", where)
            except Exception as e:  # AcidctlError, raised below
                del_error.append(e)

    if task.mode == "major":
        keys = _stream_delete_keys(task.tfs, task.deletes, snap, on_stripe=seen_delete)
    else:
        keys = None
        reader = _Reader(task.tfs)
        dels_full = reader.deletes(task.deletes, full=True)
        reader.events.clear()
        if dels_full is not None:
            seen_delete(dels_full)

    order = _Order()
    schema = _SameSchema()
    w = _writer_for(task, task.out_insert, task.out_insert_dir,
                    _output_type(task.tfs, task.inserts)) if task.out_insert else None
    written = None
    try:
        for t in _stream_events(task.tfs, task.inserts):
            m["rows_in"] += t.num_rows
            _check_bucket(t, task.bucket, "an insert event", where)
            if task.mode == "major":
                valid = _account(t, snap, m, inserts=True)
                n_valid = pc.sum(valid.cast("int64")).as_py() or 0
                live = merge.apply(t, keys, snap, sort=False)
                m["deletes_applied"] += n_valid - live.num_rows
            else:
                keep = _account(t, snap, m, inserts=True)
                live = t.filter(keep)
            order.check(live)
            live = _rename_row(live, cols, coln)
            schema.check(live)
            if w is not None and live.num_rows:
                w.write(live)
        if del_error:
            raise del_error[0]

        out_del = None
        if dels_full is not None:
            out_del = _minor_deletes(dels_full, snap, m, cols, coln)
        dels_full = None

        crash_if("task-before-write", task.crash_at, task.driver_pid)
        if w is not None:
            written = w.close()
    finally:
        if w is not None:
            w.abort()
    if written is not None:
        m["rows_out"] = written.rows
        m["bytes_out"] += written.bytes
        m["files_out"].append(task.out_insert)
    _write_output(task, m, out_del, delete=True)
    del out_del, keys
    crash_if("task-after-write", task.crash_at, task.driver_pid)
    m["bytes_in"] = _input_bytes(task)

    same, n_old, n_new = _verify_streaming(task)
    if not same:
        from acidctl.errors import WriteVerificationFailed

        raise WriteVerificationFailed(
            f"merged read of bucket {task.bucket} of {where} differs after compaction "
            f"({n_old} rows before, {n_new} after); nothing was published")
    m["verified_rows"] = n_old
    return m


def _merged_stream(tfs, srcs, snapshot, columns, coln_only, *, missing_ok: bool):
    """The merged read of one bucket as a sequence of tables (the whole-bucket read as one
    table when the sources are not in key order)."""
    from acidctl.acid import merge

    ins_srcs, del_srcs = srcs
    if not _in_key_order(tfs, ins_srcs, missing_ok=missing_ok):
        t = _merged(_Reader(tfs), srcs, snapshot, columns, coln_only, missing_ok=missing_ok)
        if t is not None:
            yield t
        return
    keys = loaded = None
    order = _Order()
    schema = _SameSchema()
    for t in _stream_events(tfs, ins_srcs, missing_ok=missing_ok):
        if not loaded:
            keys = _stream_delete_keys(tfs, del_srcs, snapshot, missing_ok=missing_ok)
            loaded = True
        live = merge.apply(t, keys, snapshot, sort=False)
        order.check(live)
        live = _rename_row(live, columns, coln_only)
        schema.check(live)
        yield live


def _compare_streams(a, b) -> tuple[bool, int, int]:
    """(equal, rows of a, rows of b) for two sequences of tables, aligned slice by slice."""
    na = nb = 0
    same = True
    ta = tb = None
    oa = ob = 0
    while True:
        while ta is None or oa >= ta.num_rows:
            ta, oa = next(a, None), 0
            if ta is None:
                break
            na += ta.num_rows
        while tb is None or ob >= tb.num_rows:
            tb, ob = next(b, None), 0
            if tb is None:
                break
            nb += tb.num_rows
        if ta is None or tb is None:
            if ta is not None or tb is not None:
                same = False
            for t in a:
                na += t.num_rows
            for t in b:
                nb += t.num_rows
            return same, na, nb
        k = min(ta.num_rows - oa, tb.num_rows - ob)
        if same and not _same(ta.slice(oa, k), tb.slice(ob, k)):
            same = False
        oa += k
        ob += k


def _verify_streaming(task) -> tuple[bool, int, int]:
    """The reader's merged snapshot of the bucket before and after, compared in key order
    without holding either (falls back to whole-bucket reads when a side is not in order)."""
    args = (task.reader, task.columns, task.columns_coln_only)
    try:
        return _compare_streams(_merged_stream(task.tfs, task.verify_old, *args, missing_ok=False),
                                _merged_stream(task.tfs, task.verify_new, *args, missing_ok=True))
    except _NotInOrder:
        pass
    old = _merged(_Reader(task.tfs), task.verify_old, *args, missing_ok=False)
    n_old = 0 if old is None else old.num_rows
    new = _merged(_Reader(task.tfs), task.verify_new, *args, missing_ok=True)
    return _same(old, new), n_old, 0 if new is None else new.num_rows
