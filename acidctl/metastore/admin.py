"""Hive's admin statements on the metastore tables, for Hive 3.1 and 4.0 alike
(../shared/spec/operations.md §6):

* :func:`abort_compactions` — ``ABORT COMPACTIONS id ...`` (Hive 4 ``AbortCompactionFunction``):
  only ``initiated`` requests are eligible; each one, in its own DB transaction, gets a history
  row ``x`` ("Compaction Aborted by Abort Comapction request." — Hive's spelling) and leaves the
  queue. Hive 3 has no ``x`` state: its ``show_compact`` leaves the state of such a row unset,
  which breaks Thrift SHOW COMPACTIONS and Hive 3's Initiator; so on Hive 3 the ``initiated``
  row is only deleted (the closest the Hive 3 rows allow; no history row). Hive 2.3 metastores
  (a :class:`~acidctl.metastore.hive2.Hive2Metastore`) are treated as Hive 3: 2.3 has neither
  ``ABORT COMPACTIONS`` nor an ``x`` state.
* :func:`unlock` — Thrift ``unlock(lockid)``: ``DELETE FROM HIVE_LOCKS WHERE HL_LOCK_EXT_ID=?
  AND (HL_TXNID=0 OR HL_LOCK_STATE='w')``; nothing deleted → no such lock is success
  (idempotent), a lock of a txn is refused.
* :func:`record_reverted` — ``revert`` of a registered compaction takes its ``ready for
  cleaning`` request out of the queue with Hive's ``markFailed`` step (§3.3) but records it in
  the state :data:`REVERTED_STATE` (``a``), which no failure threshold counts.

Dry runs read only; every write is one :func:`acidctl.metastore.steps.write_step`.
"""

from __future__ import annotations


from acidctl.errors import RefusedError, UsageError
from acidctl.metastore import queue
from acidctl.metastore.queries import LOCK_STATES, LOCK_TYPES, lock_row_columns
from acidctl.metastore.steps import for_update, now_ms, write_step

ABORT_MESSAGE = "Compaction Aborted by Abort Comapction request."  # sic, as Hive writes it


# ---------------------------------------------------------------------------------------
# ABORT COMPACTIONS
# ---------------------------------------------------------------------------------------


def _lookup(ms, ids: list[int]) -> dict[int, dict]:
    """Hive's union of COMPACTION_QUEUE and COMPLETED_COMPACTIONS by id."""
    import sqlalchemy as sa

    cq, cc = ms.tables.COMPACTION_QUEUE, ms.tables.COMPLETED_COMPACTIONS
    found: dict[int, dict] = {}
    with ms.read() as conn:
        for t, p in ((cc, "CC_"), (cq, "CQ_")):  # a queue row wins over a (stale) history row
            for r in conn.execute(
                sa.select(
                    getattr(t, p + "ID"),
                    getattr(t, p + "DATABASE"),
                    getattr(t, p + "TABLE"),
                    getattr(t, p + "PARTITION"),
                    getattr(t, p + "STATE"),
                    getattr(t, p + "TYPE"),
                ).where(getattr(t, p + "ID").in_(ids))
            ):
                found[int(r[0])] = {
                    "database": r[1],
                    "table": r[2],
                    "partition": r[3],
                    "state": r[4],
                    "type": r[5],
                    "in_queue": p == "CQ_",
                }
    return found


def _label(hive_version: int) -> str:
    return "2.3" if hive_version == 2 else str(hive_version)


def abort_compactions(ms, ids: list[int], *, execute: bool = False) -> dict:
    """``ABORT COMPACTIONS`` (dry run unless ``execute``). Returns ``{"hive_version", "executed",
    "compactions": [{compactionid, status (Success|Error|Eligible), message, database, table,
    partition, state}]}`` in the order the ids were given (duplicates once)."""
    if not ids:
        raise UsageError("give at least one compaction id")
    ids = list(dict.fromkeys(int(i) for i in ids))
    hv = ms.hive_version
    found = _lookup(ms, ids)
    out = []
    for i in ids:
        f = found.get(i)
        el = {
            "compactionid": i,
            "database": f and f["database"],
            "table": f and f["table"],
            "partition": f and f["partition"],
            "state": f and f["state"],
        }
        if f is None:
            el.update(status="Error", message="No Such Compaction Id Available")
        elif f["state"] != "i" or not f["in_queue"]:
            el.update(
                status="Error",
                message="Error while aborting compaction as compaction is in state-" + queue.state_name(f["state"], hv),
            )
        elif not execute:
            el.update(
                status="Eligible",
                message="would be aborted (dry run; --execute to abort)"
                + ("" if hv >= 4 else f"; Hive {_label(hv)}: the queue row is deleted, no history row"),
            )
        else:
            el.update(_abort_one(ms, i))
        out.append(el)
    return {"hive_version": hv, "executed": execute, "compactions": out}


def _abort_one(ms, cq_id: int) -> dict:
    import sqlalchemy as sa

    cq = ms.tables.COMPACTION_QUEUE
    h4 = ms.hive_version >= 4

    class _NotOne(Exception):
        pass

    def step(conn):
        # Hive checks the state outside the DB transaction; re-reading it under a row lock
        # here keeps a request a worker claimed in the meantime from being aborted
        row = conn.execute(for_update(sa.select(cq.clause).where(cq.CQ_ID == cq_id), conn)).mappings().first()
        if row is None:
            return {"status": "Error", "message": "No Such Compaction Id Available", "state": None}
        q = {k.upper(): v for k, v in row.items()}
        if q["CQ_STATE"] != "i":
            return {
                "status": "Error",
                "state": q["CQ_STATE"],
                "message": "Error while aborting compaction as compaction is in state-"
                + queue.state_name(q["CQ_STATE"], ms.hive_version),
            }
        if h4:
            queue.insert_history(ms, conn, queue.history_row(ms, q, state="x", end=now_ms(conn), error=ABORT_MESSAGE))
        n = conn.execute(sa.delete(cq.clause).where(cq.CQ_ID == cq_id)).rowcount
        if n != 1:
            raise _NotOne()
        return {
            "status": "Success",
            "state": "x" if h4 else None,
            "message": "Successfully aborted compaction"
            + ("" if h4 else f" (Hive {_label(ms.hive_version)}: queue row deleted, no history row)"),
        }

    try:
        return write_step(ms, step, name="abortCompaction")
    except _NotOne:
        return {
            "status": "Error",
            "message": "Error while aborting compaction: Unable to update compaction record in COMPACTION_QUEUE",
        }


# ---------------------------------------------------------------------------------------
# unlock
# ---------------------------------------------------------------------------------------


def _lock_rows(ms, conn, lock_id: int) -> list[dict]:
    import sqlalchemy as sa

    h = ms.tables.HIVE_LOCKS
    rows = conn.execute(
        sa.select(*lock_row_columns(h)).where(h.HL_LOCK_EXT_ID == lock_id).order_by(h.HL_LOCK_INT_ID)
    ).all()
    return [
        {
            "lockid": f"{int(r[0])}.{int(r[1])}",
            "txnid": int(r[2]),
            "database": r[3],
            "table": r[4],
            "partition": r[5],
            "lock_state": LOCK_STATES.get(r[6], r[6]),
            "lock_type": LOCK_TYPES.get(r[7], r[7]),
            "user": r[8],
            "host": r[9],
            "deleted": int(r[2]) == 0 or r[6] == "w",
        }
        for r in rows
    ]


def _refuse_txn_lock(lock_id: int, rows: list[dict]) -> None:
    txn = next(r["txnid"] for r in rows if r["txnid"])
    raise RefusedError(
        f"Unlocking locks associated with transaction not permitted: lock {lock_id} belongs to txn {txn}",
        # a command that acts as printed (abort previews without --execute), as doctor's fixes
        hint=f"a txn's locks go when it commits or aborts: acidctl abort transactions {txn} --execute",
    )


def unlock(ms, lock_id: int, *, execute: bool = False) -> dict:
    """Hive's ``unlock(lockid)`` (dry run unless ``execute``). Returns ``{"lock_id", "executed",
    "status" (unlocked|no such lock|would unlock), "locks": [rows before], "rows_deleted"}``;
    a lock of a txn (acquired) is refused (``RefusedError``, exit 6) as Hive refuses it."""
    from acidctl.metastore import thrift

    if thrift.is_thrift(ms):
        return thrift.unlock(ms, lock_id, execute=execute)
    import sqlalchemy as sa

    lock_id = int(lock_id)
    h = ms.tables.HIVE_LOCKS
    if not execute:
        with ms.read() as conn:
            rows = _lock_rows(ms, conn, lock_id)
        if rows and not any(r["deleted"] for r in rows):
            _refuse_txn_lock(lock_id, rows)
        return {
            "lock_id": lock_id,
            "executed": False,
            "locks": rows,
            "rows_deleted": sum(r["deleted"] for r in rows),
            "status": "would unlock" if rows else "no such lock",
        }

    class _Refused(Exception):
        def __init__(self, rows):
            self.rows = rows

    def step(conn):
        before = _lock_rows(ms, conn, lock_id)
        n = conn.execute(
            sa.delete(h.clause).where(h.HL_LOCK_EXT_ID == lock_id, sa.or_(h.HL_TXNID == 0, h.HL_LOCK_STATE == "w"))
        ).rowcount
        if n < 1:
            now = _lock_rows(ms, conn, lock_id)
            if now:
                raise _Refused(now)  # rolls the (empty) step back, as Hive does
        return before, n

    try:
        before, n = write_step(ms, step, name="unlock")
    except _Refused as r:
        if any(x["txnid"] for x in r.rows):
            _refuse_txn_lock(lock_id, r.rows)
        raise RefusedError(f"found lock {lock_id} in an unexpected state") from None
    return {
        "lock_id": lock_id,
        "executed": True,
        "locks": before,
        "rows_deleted": int(n),
        "status": "unlocked" if n else "no such lock",
    }


# ---------------------------------------------------------------------------------------
# revert's history row
# ---------------------------------------------------------------------------------------

#: The history state of a reverted compaction: ``a`` (Hive 3 "attempted", Hive 4 "did not
#: initiate"). Not ``f``: ``hive.compactor.initiator.failed.compacts.threshold`` counts ``f`` —
#: Hive 3's ``checkFailedCompactions`` takes the newest N rows with ``CC_STATE <> 'a'`` and
#: blocks when all are ``f``; Hive 4's Initiator (``TableOptimizer.foundCurrentOrFailedCompactions``)
#: keeps only ``s``/``f`` rows (operations.md §4.4) — so a revert recorded ``f`` pushed the
#: partition toward the threshold (Hive 2.3's ``checkFailedCompactions`` is 3.1's query). ``a`` is
#: the one state **both** versions leave out of the count
#: entirely: it neither counts as a failure nor resets an earlier failure streak the way an ``s``
#: (or, in Hive 4's TxnStore ``checkFailedCompactions``, a ``c``/``x``) row would, so the history
#: keeps the compaction (with its ids, write id and, Hive 4, the "reverted by acidctl revert"
#: message) without changing what the Initiator decides. Hive 4's Initiator also revisits a
#: partition whose newest history row is ``a`` or ``f`` (§4.2): after a revert the partition's
#: deltas are live again, so that is what should happen. ``c`` (refused) would be Hive 4 only and
#: means "nothing to compact"; ``x`` (aborted) exists only in later 4.0-line builds and is never
#: purged; ``s`` would claim a cleaning that did not happen.
REVERTED_STATE = "a"


def record_reverted(ms, cq_id: int, *, message: str, expect_state: str | None = None) -> dict:
    """Take a reverted compaction's request out of the queue into COMPLETED_COMPACTIONS as
    :data:`REVERTED_STATE`: :func:`queue.move_to_history` (the step of Hive's ``markFailed``,
    operations.md §3.3) in one DB transaction, with revert's check that the request is still in
    ``expect_state``. Returns ``{cq_id, state, message}``."""
    return write_step(
        ms,
        lambda conn: queue.move_to_history(ms, conn, cq_id, REVERTED_STATE, message, expect_state=expect_state),
        name="record the reverted compaction",
    )
