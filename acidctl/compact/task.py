"""The function Spark runs on executors: compact one bucket of one partition.

:func:`run_bucket` reads the bucket's files (:mod:`~acidctl.compact.sources`), keeps the events
that go to the output (:mod:`~acidctl.compact.transform`), writes ``bucket_NNNNN`` with the ACID
writer into the staging directory (which verifies the written file: no error findings, row
count), checks that the reader's merged snapshot of this bucket is the same before and after
(:mod:`~acidctl.compact.verification`), and returns a metrics record
(:mod:`~acidctl.compact.metrics`; ``path`` says which of the two paths below ran).

Memory: when the bucket's insert sources hold increasing, disjoint key ranges (as Hive writes
them) the task streams — sources in order, each read in batches, merged against the bucket's
valid delete keys (held in memory), written with the streaming ACID writer through a local
temporary file, and verified by comparing the old and new merged reads batch by batch — so a
task holds the delete keys plus a few batches (and ORC's per-stripe buffers). Otherwise it
falls back to the whole-bucket path (every input in one Arrow table), which is also used when
a file turns out not to be sorted inside.

Output files get the ORC types of the newest input of their kind (insert sources for the
base/delta, delete sources for the delete delta; :func:`~acidctl.compact.sources.output_type`):
char(n)/varchar(n) are kept although the data passes through Arrow, which knows only strings.

Expected failures are returned as ``{"error": {...}}`` records (the driver re-raises them with
their acidctl error class); anything else propagates as a Spark task failure. Crash points
for the tests: :mod:`acidctl.faults`.
"""

from __future__ import annotations

import time

from acidctl.compact import metrics as mx
from acidctl.compact import sources, transform, verification
from acidctl.faults import crash_point


def run_tasks(tasks):
    """``mapPartitions`` body: one metrics dict per task."""
    for t in tasks:
        yield run_bucket(t)


def run_bucket(task) -> dict:
    from acidctl.errors import AcidctlError

    started = time.perf_counter()
    try:
        with mx.PeakRss() as mem:
            out = _run(task)
    except AcidctlError as e:
        return mx.error_record(task, e)
    out["seconds"] = round(time.perf_counter() - started, 4)
    out["peak_rss_bytes"] = mem.peak
    out["task_memory_bytes"] = max(0, mem.peak - mem.base)
    return out


def _run(task) -> dict:
    """Streaming when the bucket's live insert events come in key order (the usual case), else
    the whole-bucket path; Hive 2.3 tables: :mod:`acidctl.compact.hive2`."""
    if getattr(task, "hive_version", 3) == 2:
        from acidctl.compact import hive2

        return hive2.run_bucket(task)
    # optimistic: the order is checked on the live events while streaming, and a bucket that
    # turns out not to be in order (sources overlapping or unsorted inside, or not ACID files)
    # is redone whole — nothing was moved into place (no probe up front: acidctl.compact.sources)
    try:
        return _run_streaming(task)
    except transform.NotInOrder:
        pass
    return _run_whole(task)


def _stripe_size(out_dir) -> int:
    from acidctl.orc import writer

    return writer.BASE_STRIPE_SIZE if out_dir.kind == "base" else writer.DELTA_STRIPE_SIZE


def _write_output(task, m: dict, table, *, delete: bool) -> None:
    """Write the bucket's insert/base (``delete=False``) or delete output file from ``table``
    and count it in the metrics ``m``; nothing when there is no row or no such output."""
    from acidctl.orc import writer

    if delete:
        path, out_dir, srcs, counter = task.out_delete, task.out_delete_dir, task.deletes, "delete_events_out"
    else:
        path, out_dir, srcs, counter = task.out_insert, task.out_insert_dir, task.inserts, "rows_out"
    if table is None or not table.num_rows or not path:
        return
    data, info = writer.encode_acid_file(
        table, orc_type=sources.output_type(task.tfs, srcs), stripe_size=_stripe_size(out_dir)
    )
    task.tfs.write_bytes(path, data)
    writer.verify(
        task.tfs,
        path,
        expected_rows=table.num_rows,
        dir_kind=out_dir.kind,
        dir_range=(out_dir.min_write_id, out_dir.max_write_id),
    )
    mx.count_written(m, counter, path, info.rows, info.bytes)


def _run_whole(task) -> dict:
    crash_point("task-start")
    reader = sources.SourceReader(task.tfs)
    snap = task.compactor
    where = task.partition or "the table"
    m = mx.new_metrics(task, mx.WHOLE)
    cols, coln = task.columns, task.columns_coln_only

    ins = reader.inserts(task.inserts)
    if ins is not None:
        m["rows_in"] = ins.num_rows
        transform.check_bucket(ins, task.bucket, "an insert event", where)
    dels = reader.deletes(task.deletes, full=task.mode == "minor")
    if dels is not None:
        m["delete_events_in"] = dels.num_rows
        transform.check_bucket(dels, task.bucket, "a delete event", where)

    major = task.mode == "major"
    out_ins = out_del = None
    if ins is not None:
        from acidctl.acid import merge

        keys = merge.delete_keys(dels, snap) if major and dels is not None else None
        out_ins = transform.rename_row(transform.live_inserts(ins, keys, snap, m, major=major, sort=True), cols, coln)
    if not major and dels is not None:
        out_del = transform.minor_deletes(dels, snap, m, cols, coln)

    crash_point("task-before-write")
    _write_output(task, m, out_ins, delete=False)
    _write_output(task, m, out_del, delete=True)
    crash_point("task-after-write")
    m["bytes_in"] = reader.bytes_read

    # the reader's merged snapshot of this bucket must not change (memory: drop what was
    # written and the cached inputs before the output is read back)
    del ins, dels, out_ins, out_del
    m["verified_rows"] = verification.refuse_if_changed(task, verification.verify_whole(task, reader))
    return m


def _run_streaming(task) -> dict:
    from acidctl.orc import writer

    crash_point("task-start")
    snap = task.compactor
    where = task.partition or "the table"
    m = mx.new_metrics(task, mx.STREAM)
    cols, coln = task.columns, task.columns_coln_only
    major = task.mode == "major"

    # delete events: in memory (the allowed bound). Their bucket check is reported after the
    # inserts', as the whole-bucket path does.
    del_error: list[Exception] = []
    dels_full = None

    def seen_delete(t):
        m["delete_events_in"] += t.num_rows
        if not del_error:
            try:
                transform.check_bucket(t, task.bucket, "a delete event", where)
            except Exception as e:  # AcidctlError, raised below
                del_error.append(e)

    # the verification's old side from the batches read here (inputs read once), when the
    # reader's sources of the bucket are the compaction's
    held = verification.HeldOldSide(task) if verification.HeldOldSide.applies(task) else None

    def seen_delete_stripe(t):
        seen_delete(t)
        if held is not None:
            held.delete_stripe(t)

    keys = None
    if major:
        keys = sources.stream_delete_keys(task.tfs, task.deletes, snap, on_stripe=seen_delete_stripe)
        if held is not None and held.shared:
            held.use_keys(keys)
    else:
        reader = sources.SourceReader(task.tfs)
        dels_full = reader.deletes(task.deletes, full=True)
        reader.events.clear()
        if dels_full is not None:
            seen_delete(dels_full)

    order = transform.StreamOrder()
    schema = transform.SameSchema()
    out_dir = task.out_insert_dir
    w = (
        writer.AcidFileWriter(
            task.tfs,
            task.out_insert,
            orc_type=sources.output_type(task.tfs, task.inserts),
            stripe_size=_stripe_size(out_dir),
            # the file's checks run on the verification's read of it (PendingVerify below)
            verify_file=False,
        )
        if task.out_insert
        else None
    )
    written = None
    try:
        for t in sources.coalesced(sources.stream_events(task.tfs, task.inserts)):
            m["rows_in"] += t.num_rows
            transform.check_bucket(t, task.bucket, "an insert event", where)
            # the reader's merge of the batch (the verification's old side), which is the
            # compaction's own major merge when both lists find the same write ids valid
            kernel = held.add(t) if held is not None else None
            shared = kernel if held is not None and held.shared else None
            live = transform.live_inserts(t, keys, snap, m, major=major, sort=False, merged=shared)
            order.check(live)
            live = transform.rename_row(live, cols, coln)
            schema.check(live)
            if w is not None and live.num_rows:
                w.write(live)
        if del_error:
            raise del_error[0]

        out_del = None
        if dels_full is not None:
            out_del = transform.minor_deletes(dels_full, snap, m, cols, coln)
        dels_full = None

        crash_point("task-before-write")
        if w is not None:
            written = w.close()
    finally:
        if w is not None:
            w.abort()
    pending = {}
    if written is not None:
        pending[task.out_insert] = writer.PendingVerify(
            task.tfs,
            task.out_insert,
            expected_rows=written.rows,
            dir_kind=out_dir.kind,
            dir_range=(out_dir.min_write_id, out_dir.max_write_id),
        )
        mx.count_written(m, "rows_out", task.out_insert, written.rows, written.bytes)
    _write_output(task, m, out_del, delete=True)
    del out_del, keys
    crash_point("task-after-write")
    m["bytes_in"] = sources.input_bytes(task)
    m["verified_rows"] = verification.refuse_if_changed(task, verification.verify_streaming(task, held, pending))
    return m
