"""Compaction of Hive 2.3 (ACID v1) tables, written as Hive 2.3's ``CompactorMR`` writes it.

(../shared/spec/insert-only-and-hive2.md B.5–B.7.) The planner (:mod:`acidctl.compact.planner`)
chooses inputs and names exactly as for Hive 3 once ``getAcidState`` runs with Hive 2.3 rules
(``base_<max txn>``, ``delta_<min>_<max>`` / ``delete_delta_<min>_<max>`` without statement id
or ``_v``), but with no marker file at all (no ``_orc_acid_version``, no ``_metadata_acid``).
This module is the bucket task that replaces :func:`acidctl.compact.task._run` for them:

* events are merged as ``OrcRawRecordMerger`` does (:mod:`acidctl.acid.hive2`): key ASC,
  currentTransaction DESC, statement DESC, events of txns the compactor list does not accept
  skipped first;
* **major** (collapse on): the winning event of each row if it is an insert (0) or update (1),
  written **unchanged** (ROW__ID, currentTransaction and operation kept — a legacy table's base
  can hold op-1 events, as Hive 2.3's does); rows whose winner is a delete are gone;
* **minor** (collapse off): every valid event, only events of the same row *and* txn collapsed
  (highest statement id wins); ``delta_`` inputs (legacy: ops 0, 1 and 2) → the delta output,
  ``delete_delta_`` inputs (split-update) → the delete delta output; several events of one row
  are written in merge order (currentTransaction DESC);
* files: plain bucket ids as read, ``hive.acid.key.index`` without the last stripe's entry (ORC
  1.3.4's writer calls the callback before the last stripe: a one-stripe file has an empty
  index) and exact ``hive.acid.stats``, no ``hive.acid.version``; major ZLIB (the job's default
  ``orc.compress``), minor uncompressed with 16 MiB stripes (B.5.3); ORC file version 0.12.

Publication: staged and renamed exactly as Hive 3 output (:mod:`acidctl.compact.publish`):
a major compaction and a legacy minor compaction (one ``delta_`` directory) are *atomic*; a
split-update minor compaction (``delta_`` + ``delete_delta_``) is *non-atomic* and refused
without ``--allow-non-atomic-publish``, as for Hive 3. Nothing is registered in a 2.3 metastore.

Memory: a bucket streams (:mod:`acidctl.acid.hive2stream`, the windowed merge shared with the
merged reads). Each source file (Hive's merger assumes, and Hive's writers produce, events in
key order) is read a stripe at a time; the events of all
sources whose (originalTransaction, bucket, rowId) lies below the smallest last key any
unfinished source has buffered form a *window*: no later event can fall before it, so the
window's merge is that part of the bucket's merge, written as it comes. A bucket the windows
cannot take — a source out of key order, or two events with fully equal merge keys, whose
order Hive 2.3 decides by its merger's state (:func:`acidctl.acid.hive2.merge_order`) — is redone
whole in memory (metrics ``path`` ``whole``). The output bytes are those of a one-shot write.

Nothing lost: every event read is counted (``rows_in`` = row-carrying events, incl. legacy
update/delete events; ``deletes_applied`` = valid events superseded by a newer version or a
delete; ``aborted_dropped``; ``invisible_dropped`` makes the runner refuse), and before the task
returns, the reader's Hive 2 merged read of this bucket is compared before and after.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from acidctl.acid import hive2stream

if TYPE_CHECKING:
    import pyarrow as pa

#: B.5.3: CompactorMR's minor output writer (16 MiB stripes, no compression)
MINOR_STRIPE_SIZE = 16 << 20
MAJOR_STRIPE_SIZE = 64 << 20


def run_bucket(task) -> dict:
    """The Hive 2.3 bucket task: one metrics record (errors propagate to
    :func:`acidctl.compact.task.run_bucket`, which turns expected ones into error records)."""
    from acidctl.compact import metrics as mx

    from acidctl.faults import crash_point

    started = time.perf_counter()
    crash_point("task-start")
    _refuse_two_originals(task)
    m = mx.new_metrics(task, mx.STREAM)
    try:
        _compact_streaming(task, m)
    except hive2stream.Unstreamable:
        m.clear()
        m.update(mx.new_metrics(task, mx.WHOLE))
        _compact(task, m)
    crash_point("task-after-write")
    try:
        m["verified_rows"] = _verify_streaming(task)
    except hive2stream.Unstreamable:
        m["verified_rows"] = _verify(task)
    m["seconds"] = round(time.perf_counter() - started, 4)
    return m


class _Out:
    """An output file written as :func:`encode_hive2_file` writes it, a window at a time: the
    events are handed to the ORC writer in whole multiples of its 1,024-row batch (so the file
    is the one-shot file), the key index and stats computed as for the one-shot file."""

    def __init__(self, task, path: str, srcs, *, major: bool, counter: str):
        from acidctl.compact import sources
        from acidctl.orc import writer

        self.task = task
        self.path = path
        self.counter = counter
        self.pending: list = []
        self.pending_rows = 0
        self.schema = None
        self.w = writer.AcidFileWriter(
            task.tfs,
            path,
            orc_type=sources.output_type(task.tfs, srcs),
            compression="ZLIB" if major else "NONE",
            stripe_size=MAJOR_STRIPE_SIZE if major else MINOR_STRIPE_SIZE,
            hive2=True,
        )

    def write(self, table) -> None:
        import pyarrow as pa

        from acidctl.formats.files import BATCH_ROWS, ORC_WRITER_BATCH

        if table is None or not table.num_rows:
            return
        if self.schema is None:
            self.schema = table.schema
        elif not table.schema.equals(self.schema):
            try:
                table = table.cast(self.schema)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
                raise hive2stream.Unstreamable(hive2stream.SCHEMA, "windows differ in schema") from None
        self.pending.append(table)
        self.pending_rows += table.num_rows
        if self.pending_rows >= BATCH_ROWS:
            self._flush(self.pending_rows // ORC_WRITER_BATCH * ORC_WRITER_BATCH)

    def _flush(self, n: int) -> None:
        import pyarrow as pa

        if not n:
            return
        t = pa.concat_tables(self.pending)
        self.pending = [t.slice(n)] if n < t.num_rows else []
        self.pending_rows = t.num_rows - n
        if self.w.rows == 0:
            from acidctl.faults import crash_point

            crash_point("task-before-write")
        self.w.write(t.slice(0, n).combine_chunks())

    def close(self, m: dict) -> None:
        from acidctl.compact import metrics as mx
        from acidctl.errors import WriteVerificationFailed
        from acidctl.orc.reader import OrcFile

        self._flush(self.pending_rows)
        info = self.w.close()
        if info is None:
            return
        with OrcFile(self.task.tfs, self.path) as f:
            if f.rows != info.rows:
                raise WriteVerificationFailed(f"{self.path}: wrote {info.rows} events, the file holds {f.rows}")
        mx.count_written(m, self.counter, self.path, info.rows, info.bytes)

    def abort(self) -> None:
        self.w.abort()


def _compact_streaming(task, m: dict) -> None:
    """:func:`_compact`, a window at a time."""
    import numpy as np
    import pyarrow as pa

    from acidctl.acid import hive2
    from acidctl.compact import transform

    where = task.partition or "the table"
    snap = task.compactor
    major = task.mode == "major"
    ins_c = hive2stream.source_cursors(task.tfs, task.inserts, deletes=False, side=0)
    del_c = hive2stream.source_cursors(task.tfs, task.deletes, deletes=major, side=1)
    outs = []
    try:
        if major:
            out = _Out(task, task.out_insert, task.inserts, major=True, counter="rows_out") if task.out_insert else None
            outs = [out] if out else []
            cursors = ins_c + del_c
            for w in hive2stream.windows(cursors):
                ins, ins_stmt = hive2stream.side_events(w, 0, cursors)
                dels, del_stmt = hive2stream.side_events(w, 1, cursors)
                hive2stream.refuse_tied_keys((ins, ins_stmt), (dels, del_stmt))
                del_valid = None
                if dels is not None:
                    m["delete_events_in"] += dels.num_rows
                    transform.check_bucket(dels, task.bucket, "a delete event", where)
                    del_valid = _classify(dels, snap, m, carrying=False)
                if ins is None:
                    continue
                m["rows_in"] += ins.num_rows
                transform.check_bucket(ins, task.bucket, "an event", where)
                ins_valid = _classify(ins, snap, m, carrying=True)
                names = ("originalTransaction", "bucket", "rowId", "currentTransaction", "operation")
                cols = [ins.column(c).to_numpy(zero_copy_only=False) for c in names]
                stmt, valid = ins_stmt, ins_valid
                if dels is not None:
                    cols = [
                        np.concatenate([a, dels.column(c).to_numpy(zero_copy_only=False)]) for a, c in zip(cols, names)
                    ]
                    stmt = np.concatenate([stmt, del_stmt])
                    valid = np.concatenate([valid, del_valid])
                ot, bk, rid, cur, op = cols
                win = hive2.winners(ot, bk.astype(np.int64), rid, cur, stmt, valid, op)
                keep = win[(win < ins.num_rows) & np.isin(op[win], (0, 1))]
                kept = ins.take(pa.array(keep, pa.int64()))
                m["deletes_applied"] += int(ins_valid.sum()) - kept.num_rows
                if out is not None:
                    out.write(transform.rename_row(kept, task.columns, task.columns_coln_only))
        else:
            # one merger over every delta (as CompactorMR's raw reader); each event goes to the
            # output of its side
            cursors = ins_c + del_c
            sides = []
            for path, srcs, counter in (
                (task.out_insert, task.inserts, "rows_out"),
                (task.out_delete, task.deletes, "delete_events_out"),
            ):
                o = _Out(task, path, srcs, major=False, counter=counter) if path else None
                sides.append(o)
                if o is not None:
                    outs.append(o)
            for w in hive2stream.windows(cursors):
                parts = [hive2stream.side_events(w, 0, cursors), hive2stream.side_events(w, 1, cursors)]
                hive2stream.refuse_tied_keys(*parts)
                for side, (t, stmt) in enumerate(parts):
                    if t is None:
                        continue
                    m["delete_events_in" if side else "rows_in"] += t.num_rows
                    transform.check_bucket(t, task.bucket, "a delete event" if side else "an event", where)
                    valid = _classify(t, snap, m, carrying=not side)
                    o = sides[side]
                    if o is not None:
                        o.write(
                            transform.rename_row(_minor_events(t, stmt, valid), task.columns, task.columns_coln_only)
                        )
        for o in outs:
            o.close(m)
    except BaseException:
        for o in outs:
            o.abort()
            if task.tfs.exists(o.path):
                task.tfs.rm(o.path)
        raise


def _verify_streaming(task) -> int:
    """:func:`_verify`, both sides a window at a time, compared in key order."""
    from acidctl.compact import transform
    from acidctl.compact.verification import compare_streams
    from acidctl.errors import WriteVerificationFailed

    def named(windows):
        # the output's row struct may carry the table's column names (--columns, or a DB.TABLE
        # target's: CompactorMR names them so): compare both sides under the output's names
        for w in windows:
            yield transform.rename_row(w, task.columns, task.columns_coln_only)

    equal, n_old, n_new = compare_streams(
        named(hive2stream.merged_windows(task.tfs, task.verify_old[0], task.verify_old[1], task.reader)),
        named(
            hive2stream.merged_windows(task.tfs, task.verify_new[0], task.verify_new[1], task.reader, missing_ok=True)
        ),
    )
    if n_old != n_new:
        raise WriteVerificationFailed(
            f"bucket {task.bucket} of {task.partition or 'the table'}: the reader sees "
            f"{n_old} rows before and {n_new} after; nothing was published"
        )
    if not equal:
        raise WriteVerificationFailed(
            f"bucket {task.bucket} of {task.partition or 'the table'}: the reader's rows "
            "differ after the compaction; nothing was published"
        )
    return n_old


def _refuse_two_originals(task) -> None:
    raw = [s.path for s in task.inserts if s.raw]
    if len(raw) > 1:
        from acidctl.errors import RefusedError

        # Hive 2 numbers synthetic row ids per file (B.6): two originals of one bucket share ROW__IDs
        raise RefusedError(
            f"bucket {task.bucket} of {task.partition or 'the table'} has {len(raw)} original files "
            f"({', '.join(raw[:3])}): Hive 2.3 gives their rows the same ROW__IDs, so they cannot be "
            "merged without loss; nothing was written",
            hint="compact it with --hive-version 3 rules after the upgrade",
        )


def _events(task, srcs, *, deletes: bool, missing_ok: bool = False):
    """(events, statement ids, reader ranks) of ``srcs`` concatenated (Nones when there is no
    event; ranks: :func:`acidctl.acid.hive2.source_ranks` over the task's sources);
    ``missing_ok``: skip planned outputs no event was written to."""
    import posixpath

    import numpy as np
    import pyarrow as pa

    from acidctl.acid import hive2

    tables, stmts, ranks = [], [], []
    rank = hive2.source_ranks([s.path for s in list(task.inserts) + list(task.deletes)] + [s.path for s in srcs])
    for s in srcs:
        if missing_ok and not task.tfs.exists(s.path):
            continue
        t = hive2.read_delete_events(task.tfs, s) if deletes else hive2.read_file_events(task.tfs, s)
        if t.num_rows:
            tables.append(t)
            stmts.append(
                np.full(t.num_rows, hive2.statement_of(posixpath.basename(posixpath.dirname(s.path))), dtype=np.int64)
            )
            ranks.append(np.full(t.num_rows, rank[s.path], dtype=np.int64))
    if not tables:
        return None, None, None
    return pa.concat_tables(tables, promote_options="permissive"), np.concatenate(stmts), np.concatenate(ranks)


def _classify(t, snap, m: dict, *, carrying: bool):
    """Valid-for-the-compactor mask of ``t``; counts aborted and invisible events in ``m``."""
    import numpy as np

    cur = t.column("currentTransaction").to_numpy(zero_copy_only=False)
    above = cur > snap.hwm
    aborted = ~above & np.isin(cur, np.asarray(snap.aborted, dtype=np.int64))
    m["invisible_dropped"] += int(above.sum())
    if carrying:
        m["aborted_dropped"] += int(aborted.sum())
    return ~(above | aborted)


def _compact(task, m: dict) -> None:
    import numpy as np
    import pyarrow as pa

    from acidctl.acid import hive2
    from acidctl.compact import transform

    where = task.partition or "the table"
    snap = task.compactor
    ins, ins_stmt, ins_src = _events(task, task.inserts, deletes=False)
    dels, del_stmt, del_src = _events(task, task.deletes, deletes=task.mode == "major")
    if ins is not None:
        m["rows_in"] = ins.num_rows
        transform.check_bucket(ins, task.bucket, "an event", where)
    if dels is not None:
        m["delete_events_in"] = dels.num_rows
        transform.check_bucket(dels, task.bucket, "a delete event", where)
    ins_valid = _classify(ins, snap, m, carrying=True) if ins is not None else None
    del_valid = _classify(dels, snap, m, carrying=False) if dels is not None else None

    if task.mode == "major":
        out = None
        if ins is not None:
            cols = [
                ins.column(c).to_numpy(zero_copy_only=False)
                for c in ("originalTransaction", "bucket", "rowId", "currentTransaction", "operation")
            ]
            stmt = ins_stmt
            valid = ins_valid
            src = ins_src
            if dels is not None:
                cols = [
                    np.concatenate([a, dels.column(c).to_numpy(zero_copy_only=False)])
                    for a, c in zip(cols, ("originalTransaction", "bucket", "rowId", "currentTransaction", "operation"))
                ]
                stmt = np.concatenate([stmt, del_stmt])
                valid = np.concatenate([valid, del_valid])
                src = np.concatenate([src, del_src])
            ot, bk, rid, cur, op = cols
            assert stmt is not None and valid is not None  # set whenever ins is
            # one merger over the base and every delta (CompactorMR's raw reader), equal keys
            # resolved as its TreeMap does
            win = hive2.winners(ot, bk.astype(np.int64), rid, cur, stmt, valid, src=src)
            keep = win[(win < ins.num_rows) & np.isin(op[win], (0, 1))]
            out = ins.take(pa.array(keep, pa.int64()))
            assert ins_valid is not None  # set whenever ins is
            m["deletes_applied"] = int(ins_valid.sum()) - out.num_rows
        _write(task, m, transform.rename_row(out, task.columns, task.columns_coln_only), delete=False)
        return
    out_ins, out_del = _minor_whole(ins, ins_stmt, ins_valid, ins_src, dels, del_stmt, del_valid, del_src)
    _write(task, m, transform.rename_row(out_ins, task.columns, task.columns_coln_only), delete=False)
    _write(task, m, transform.rename_row(out_del, task.columns, task.columns_coln_only), delete=True)


def _minor_events(t, stmt, valid):
    """Minor compaction (collapse off): every valid event, in merge order. Hive 2.3's merger
    does not collapse several events of one row in one txn here: its ``isSameRow`` test
    compares with ``prevKey``, which only the collapsing branch sets
    (``OrcRawRecordMerger.next``)."""
    import numpy as np
    import pyarrow as pa

    from acidctl.acid import hive2

    ot, bk, rid, cur = (
        t.column(c).to_numpy(zero_copy_only=False)
        for c in ("originalTransaction", "bucket", "rowId", "currentTransaction")
    )
    order = hive2.winners(ot, bk.astype(np.int64), rid, cur, stmt, valid, collapse=False)
    return t.take(pa.array(order, pa.int64()))


def _minor_whole(ins, ins_stmt, ins_valid, ins_src, dels, del_stmt, del_valid, del_src):
    """Minor compaction of a whole bucket: one merger over every delta, as CompactorMR's raw
    reader (insert and delete deltas together; each returned event then goes to the delete
    writer or the insert writer by its side), equal merge keys resolved as Hive 2.3's TreeMap
    does. Returns (insert events, delete events)."""
    import numpy as np
    import pyarrow as pa

    from acidctl.acid import hive2

    sides = [
        (t, st, v, sr) for t, st, v, sr in ((ins, ins_stmt, ins_valid, ins_src), (dels, del_stmt, del_valid, del_src))
    ]
    present = [x for x in sides if x[0] is not None]
    if not present:
        return None, None
    names = ("originalTransaction", "bucket", "rowId", "currentTransaction")
    ot, bk, rid, cur = (
        np.concatenate([x[0].column(c).to_numpy(zero_copy_only=False).astype(np.int64) for x in present]) for c in names
    )
    stmt = np.concatenate([x[1] for x in present])
    valid = np.concatenate([x[2] for x in present]).astype(bool)
    src = np.concatenate([x[3] for x in present])
    order = hive2.winners(ot, bk, rid, cur, stmt, valid, src=src, collapse=False)
    n_ins = ins.num_rows if ins is not None else 0
    out_ins = ins.take(pa.array(order[order < n_ins], pa.int64())) if ins is not None else None
    out_del = dels.take(pa.array(order[order >= n_ins] - n_ins, pa.int64())) if dels is not None else None
    return out_ins, out_del


def encode_hive2_file(
    table, *, compression: str, stripe_size: int, orc_type: str | None = None
) -> tuple[bytes, str, tuple]:
    """ORC bytes of an event table as Hive 2.3 writes it: (data, key index, stats)."""
    import numpy as np

    from acidctl.orc import footer as orcfooter
    from acidctl.orc.acidfile import ACID_STATS, KEY_INDEX, encode_key_index, event_stats, format_acid_stats
    from acidctl.orc.writer import arrow_orc_bytes

    data = arrow_orc_bytes(table, compression, stripe_size)
    ot = table.column("originalTransaction").to_numpy()
    bk = table.column("bucket").to_numpy().astype(np.int64)
    rid = table.column("rowId").to_numpy()
    stripe_rows = orcfooter.read_tail(data).stripe_rows()
    # Hive 2.3 (ORC 1.3.4) never records the last stripe's key (B.5.2)
    entries = encode_key_index(ot, bk, rid, stripe_rows).split(";")[:-1]
    key_index = "".join(e + ";" for e in entries[:-1])
    stats = event_stats(table.column("operation").to_numpy())
    data = orcfooter.add_user_metadata(
        data, [(KEY_INDEX, key_index.encode()), (ACID_STATS, format_acid_stats(stats).encode())], orc_type=orc_type
    )
    return data, key_index, stats


def _write(task, m: dict, table, *, delete: bool) -> None:
    from acidctl.compact import metrics as mx
    from acidctl.compact import sources
    from acidctl.errors import WriteVerificationFailed
    from acidctl.orc.reader import OrcFile

    if delete:
        path, srcs, counter = task.out_delete, task.deletes, "delete_events_out"
    else:
        path, srcs, counter = task.out_insert, task.inserts, "rows_out"
    if table is None or not table.num_rows or not path:
        return
    major = task.mode == "major"
    from acidctl.faults import crash_point

    crash_point("task-before-write")
    data, _, _ = encode_hive2_file(
        table,
        compression="ZLIB" if major else "NONE",
        stripe_size=MAJOR_STRIPE_SIZE if major else MINOR_STRIPE_SIZE,
        orc_type=sources.output_type(task.tfs, srcs),
    )
    task.tfs.write_bytes(path, data)
    with OrcFile(task.tfs, path) as f:
        if f.rows != table.num_rows:
            raise WriteVerificationFailed(f"{path}: wrote {table.num_rows} events, the file holds {f.rows}")
    mx.count_written(m, counter, path, table.num_rows, len(data))


def _merged(task, srcs, *, missing_ok: bool = False) -> "pa.Table":
    """The reader's Hive 2 merged rows of this bucket from (inserts, deletes) sources."""
    import pyarrow as pa

    from acidctl.acid import hive2

    ins, ins_stmt, ins_src = _events(task, srcs[0], deletes=False, missing_ok=missing_ok)
    dels, del_stmt, del_src = _events(task, srcs[1], deletes=True, missing_ok=missing_ok)
    if ins is None:
        return pa.table({"originalTransaction": pa.array([], pa.int64())})
    return hive2.collapse(
        ins, ins_stmt, dels, del_stmt, task.reader, insert_src=ins_src, delete_src=del_src, split_update=bool(srcs[1])
    )


def _verify(task) -> int:
    """The reader's merged snapshot of this bucket is the same before and after; else refuse."""
    from acidctl.errors import WriteVerificationFailed

    old, new = _merged(task, task.verify_old), _merged(task, task.verify_new, missing_ok=True)
    if old.num_rows != new.num_rows:
        raise WriteVerificationFailed(
            f"bucket {task.bucket} of {task.partition or 'the table'}: the reader sees "
            f"{old.num_rows} rows before and {new.num_rows} after; nothing was published"
        )
    if not old.num_rows:
        return 0
    for c in ("originalTransaction", "bucket", "rowId", "currentTransaction", "row"):
        a, b = old.column(c).combine_chunks(), new.column(c).combine_chunks()
        if a.equals(b):
            continue
        # types may differ only in Arrow details (e.g. a struct's field nullability): compare values
        if a.to_pylist() != b.to_pylist():
            raise WriteVerificationFailed(
                f"bucket {task.bucket} of {task.partition or 'the table'}: column {c} of "
                "the reader's rows differs after the compaction; nothing was published"
            )
    return old.num_rows
