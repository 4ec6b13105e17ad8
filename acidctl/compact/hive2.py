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

Nothing lost: every event read is counted (``rows_in`` = row-carrying events, incl. legacy
update/delete events; ``deletes_applied`` = valid events superseded by a newer version or a
delete; ``aborted_dropped``; ``invisible_dropped`` makes the runner refuse), and before the task
returns, the reader's Hive 2 merged read of this bucket is compared before and after.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

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
    m = mx.new_metrics(task, "hive2")
    _compact(task, m)
    crash_point("task-after-write")
    m["verified_rows"] = _verify(task)
    m["seconds"] = round(time.perf_counter() - started, 4)
    return m


def _events(task, srcs, *, deletes: bool, missing_ok: bool = False):
    """(events, statement ids) of ``srcs`` concatenated (None when there is no event);
    ``missing_ok``: skip planned outputs no event was written to."""
    import posixpath

    import numpy as np
    import pyarrow as pa

    from acidctl.acid import hive2

    tables, stmts = [], []
    for s in srcs:
        if missing_ok and not task.tfs.exists(s.path):
            continue
        t = hive2.read_delete_events(task.tfs, s) if deletes else hive2.read_file_events(task.tfs, s)
        if t.num_rows:
            tables.append(t)
            stmts.append(
                np.full(t.num_rows, hive2.statement_of(posixpath.basename(posixpath.dirname(s.path))), dtype=np.int64)
            )
    if not tables:
        return None, None
    return pa.concat_tables(tables, promote_options="permissive"), np.concatenate(stmts)


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
    raw = [s.path for s in task.inserts if s.raw]
    if len(raw) > 1:
        from acidctl.errors import RefusedError

        # Hive 2 numbers synthetic row ids per file (B.6): two originals of one bucket share ROW__IDs
        raise RefusedError(
            f"bucket {task.bucket} of {where} has {len(raw)} original files ({', '.join(raw[:3])}): "
            "Hive 2.3 gives their rows the same ROW__IDs, so they cannot be merged without loss; "
            "nothing was written",
            hint="compact it with --hive-version 3 rules after the upgrade",
        )
    ins, ins_stmt = _events(task, task.inserts, deletes=False)
    dels, del_stmt = _events(task, task.deletes, deletes=task.mode == "major")
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
            if dels is not None:
                cols = [
                    np.concatenate([a, dels.column(c).to_numpy(zero_copy_only=False)])
                    for a, c in zip(cols, ("originalTransaction", "bucket", "rowId", "currentTransaction", "operation"))
                ]
                stmt = np.concatenate([stmt, del_stmt])
                valid = np.concatenate([valid, del_valid])
            ot, bk, rid, cur, op = cols
            assert stmt is not None and valid is not None  # set whenever ins is
            win = hive2.winners(ot, bk.astype(np.int64), rid, cur, stmt, valid, op)
            keep = win[(win < ins.num_rows) & np.isin(op[win], (0, 1))]
            out = ins.take(pa.array(keep, pa.int64()))
            assert ins_valid is not None  # set whenever ins is
            m["deletes_applied"] = int(ins_valid.sum()) - out.num_rows
        _write(task, m, transform.rename_row(out, task.columns, task.columns_coln_only), delete=False)
        return
    out_ins = _minor_events(ins, ins_stmt, ins_valid) if ins is not None else None
    out_del = _minor_events(dels, del_stmt, del_valid) if dels is not None else None
    _write(task, m, transform.rename_row(out_ins, task.columns, task.columns_coln_only), delete=False)
    _write(task, m, transform.rename_row(out_del, task.columns, task.columns_coln_only), delete=True)


def _minor_events(t, stmt, valid):
    """Minor compaction (collapse off): the valid events in merge order, one per (row, txn) —
    the highest statement id's."""
    import numpy as np
    import pyarrow as pa

    ot, bk, rid, cur = (
        t.column(c).to_numpy(zero_copy_only=False)
        for c in ("originalTransaction", "bucket", "rowId", "currentTransaction")
    )
    order = np.lexsort((-stmt, -cur.astype(np.int64), rid, bk.astype(np.int64), ot))
    order = order[valid[order]]
    if len(order) > 1:
        a, b, r, c = ot[order], bk[order], rid[order], cur[order]
        first = np.ones(len(order), dtype=bool)
        first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1]) | (r[1:] != r[:-1]) | (c[1:] != c[:-1])
        order = order[first]
    return t.take(pa.array(order, pa.int64()))


def encode_hive2_file(
    table, *, compression: str, stripe_size: int, orc_type: str | None = None
) -> tuple[bytes, str, tuple]:
    """ORC bytes of an event table as Hive 2.3 writes it: (data, key index, stats)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.orc as po

    from acidctl.orc import footer as orcfooter
    from acidctl.orc.acidfile import ACID_STATS, KEY_INDEX, encode_key_index, event_stats, format_acid_stats
    from acidctl.orc.writer import COMPRESSIONS

    sink = pa.BufferOutputStream()
    po.write_table(
        table,
        sink,
        compression=COMPRESSIONS[compression],
        stripe_size=stripe_size,
        file_version="0.12",
        compression_block_size=256 * 1024,
        row_index_stride=10000,
    )
    data = sink.getvalue().to_pybytes()
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

    ins, ins_stmt = _events(task, srcs[0], deletes=False, missing_ok=missing_ok)
    dels, del_stmt = _events(task, srcs[1], deletes=True, missing_ok=missing_ok)
    if ins is None:
        return pa.table({"originalTransaction": pa.array([], pa.int64())})
    return hive2.collapse(ins, ins_stmt, dels, del_stmt, task.reader)


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
