"""``acidctl initiator --once``: one Initiator cycle over the warehouse (operations.md §4).

For every transactional full-ACID table of the metastore (``--db GLOB`` narrows the databases)
and each of its partitions, in the order Hive's checks run:

1. ``no_auto_compaction=true`` (either case of the key) on the table → skip; on Hive 4 a
   ``no_auto_compaction`` database property decides whenever it is set (HIVE-26793);
2. an ``initiated``/``working`` request for the same db/table/partition → skip;
3. the failure threshold (``hive.compactor.initiator.failed.compacts.threshold``, 2) → a
   ``did not initiate`` / ``attempted`` history row (``markFailed`` with id 0) and skip —
   Hive 3: the newest N non-``a`` history rows are all ``f``; Hive 4: the newest N of the
   ``s``/``f`` rows are all ``f`` and the newest of them was enqueued less than
   ``metastore.compactor.initiator.failed.retry.time`` (7 days) ago;
4. the thresholds of :mod:`acidctl.acid.initiator` (the logic of ``state`` and
   ``compact --due``: delta count, delta/base size, aborted txns) on the compactor's view →
   MAJOR, MINOR or nothing;
5. enqueue through :func:`acidctl.metastore.queue.enqueue` (the ``CompactionScheduler``
   mutex; a request queued meanwhile is refused there, not duplicated), Hive 4 with initiator
   ``acidctl@<host>-<pid>`` and the table's pool;
6. at the end of the cycle, ``revokeTimedoutWorkers``: ``working`` requests older than
   ``hive.compactor.worker.timeout`` (24 h) go back to ``initiated``.

Hive 2.3 metastores (a :class:`~acidctl.metastore.hive2.Hive2Metastore`): the same cycle with
2.3's rules — the metastore's ValidTxnList as the snapshot, the failure threshold as Hive 3
(``checkFailedCompactions``), the aborted-txn trigger counting ``TXN_COMPONENTS`` rows of
aborted txns per partition (``findPotentialCompactions``' ``count(*)``), the request's run-as
user the owner of the partition's (table's) directory (``findUserToRunAs``), no pools and no
initiator id (2.3's queue has no such columns), and the cycle ends with 2.3's
``cleanEmptyAbortedTxns`` (aborted ``TXNS`` rows without components deleted).

Candidates are Hive's (:func:`find_candidates`, operations.md §4.2): partitions with
``COMPLETED_TXN_COMPONENTS`` rows, and on Hive 2.3/3 those with more than 1000 aborted-txn
components ("too many aborts" → MAJOR); every other partition is reported ``not-candidate``
without being looked at. Derived differences from Hive's Initiator: the cycle is a first cycle
each time (Hive 4 only revisits partitions written since its previous cycle start, which acidctl
does not store), and it runs under the ``Initiator`` mutex on PostgreSQL/MariaDB (on SQLite each
step is serialised anyway).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import logging
from typing import Any, Callable, Iterator

from acidctl.errors import AcidctlError
from acidctl.units import noun, plural

log = logging.getLogger("acidctl.initiator")

FAILED_THRESHOLD = 2  # hive.compactor.initiator.failed.compacts.threshold
FAILED_RETRY_MS = 7 * 86_400_000  # metastore.compactor.initiator.failed.retry.time


def threshold_blocked(
    ms,
    conn,
    db: str,
    table: str,
    partition: str | None,
    *,
    now: int,
    threshold: int = FAILED_THRESHOLD,
    retry_ms: int = FAILED_RETRY_MS,
) -> bool:
    """Operations.md §4.4 for the connected version."""
    import sqlalchemy as sa

    from acidctl.metastore.queue import partition_eq

    cc = ms.tables.COMPLETED_COMPACTIONS
    where = [cc.CC_DATABASE == db, cc.CC_TABLE == table, partition_eq(cc.CC_PARTITION, partition)]
    if ms.hive_version < 4:
        rows = conn.execute(
            sa.select(cc.CC_STATE).where(*where, cc.CC_STATE != "a").order_by(cc.CC_ID.desc()).limit(threshold)
        ).all()
        return len(rows) >= threshold and all(r[0] == "f" for r in rows)
    rows = conn.execute(
        sa.select(cc.CC_STATE, cc.CC_ENQUEUE_TIME)
        .where(*where, cc.CC_STATE.in_(["s", "f"]))
        .order_by(cc.CC_ID.desc())
        .limit(threshold)
    ).all()
    if len(rows) < threshold or not all(r[0] == "f" for r in rows):
        return False
    newest = max((int(r[1]) for r in rows if r[1] is not None), default=None)
    if retry_ms > 0 and newest is not None and newest + retry_ms < now:
        return False
    return True


def record_not_initiated(ms, db: str, table: str, partition: str | None, message: str, *, type_code: str = "i") -> int:
    """``markFailed`` with id 0: a new id from ``NEXT_COMPACTION_QUEUE_ID``, type MINOR when
    unknown, start = end = now, state ``a`` (operations.md §3.3 step 3). Returns the id."""
    from acidctl.metastore import queue, steps

    cc = ms.tables.COMPLETED_COMPACTIONS

    def step(conn):
        cc_id = queue.next_queue_id(ms, conn)
        now = steps.now_ms(conn)
        vals = dict(
            CC_ID=cc_id,
            CC_DATABASE=db,
            CC_TABLE=table,
            CC_PARTITION=partition,
            CC_STATE="a",
            CC_TYPE=type_code,
            CC_START=now,
            CC_END=now,
        )
        if cc.has("CC_ERROR_MESSAGE"):
            vals["CC_ERROR_MESSAGE"] = message
        queue.insert_history(ms, conn, vals)  # only these columns: the others keep their defaults
        return cc_id

    return steps.write_step(ms, step, name="record a compaction that did not initiate")


@contextlib.contextmanager
def initiator_mutex(ms) -> Iterator[None]:
    """Hold the ``Initiator`` AUX_TABLE row for the cycle on a connection of its own, as Hive's
    MutexAPI does (operations.md §1). SQLite: not taken (one writer at a time already)."""
    from acidctl.metastore import queue

    if ms.engine.dialect.name == "sqlite":
        yield
        return
    with ms.engine.connect() as conn:
        conn = conn.execution_options(isolation_level="READ COMMITTED")
        with conn.begin() as tx:
            queue.acquire_mutex(ms, conn, "Initiator")
            try:
                yield
            finally:
                tx.rollback()


def _tables(ms, db_glob: str | None) -> list[str]:
    import sqlalchemy as sa

    T = ms.tables
    with ms.read() as conn:
        rows = conn.execute(
            sa.select(T.DBS.NAME, T.TBLS.TBL_NAME)
            .select_from(T.TBLS.clause.join(T.DBS.clause, T.DBS.DB_ID == T.TBLS.DB_ID))
            .order_by(T.DBS.NAME, T.TBLS.TBL_NAME)
        ).all()
    return [f"{d}.{t}" for d, t in rows if not db_glob or fnmatch.fnmatchcase(d, db_glob.lower())]


ABORTED_THRESHOLD = 1000  # hive.compactor.abortedtxn.threshold (the candidate query's value)
NOT_WRITTEN = "not a candidate: no COMPLETED_TXN_COMPONENTS rows (nothing written since its last cleaned compaction)"


def find_candidates(ms, *, aborted_threshold: int = ABORTED_THRESHOLD) -> dict[tuple, int | None]:
    """The Initiator's candidates (operations.md §4.2) → for "too many aborts" entries the
    count of aborted-txn ``TXN_COMPONENTS`` rows, else None.

    Hive 2.3 / 3 (``findPotentialCompactions``): every distinct ``COMPLETED_TXN_COMPONENTS``
    (db, table, partition), plus every one with more than ``aborted_threshold`` component rows of
    aborted txns. Hive 4 (``FindPotentialCompactionsFunction``): the ``COMPLETED_TXN_COMPONENTS``
    ones; its aborted-txn candidates exist only with
    ``metastore.compactor.clean.aborts.using.cleaner=false`` (default true: the Cleaner removes
    aborted data, no compaction is asked for). acidctl stores no previous cycle start, so the
    Hive 4 filter on ``CTC_TIMESTAMP`` is that of a first cycle (no filter)."""
    import sqlalchemy as sa

    T = ms.tables
    ctc = T.COMPLETED_TXN_COMPONENTS
    out: dict[tuple, int | None] = {}
    with ms.read() as conn:
        for d, t, p in conn.execute(sa.select(ctc.CTC_DATABASE, ctc.CTC_TABLE, ctc.CTC_PARTITION).distinct()):
            out[(d, t, p)] = None
        if ms.hive_version < 4:
            tc, tx = T.TXN_COMPONENTS, T.TXNS
            q = (
                sa.select(tc.TC_DATABASE, tc.TC_TABLE, tc.TC_PARTITION, sa.func.count())
                .select_from(tc.clause.join(tx.clause, tc.TC_TXNID == tx.TXN_ID))
                .where(tx.TXN_STATE == "a")
                .group_by(tc.TC_DATABASE, tc.TC_TABLE, tc.TC_PARTITION)
                .having(sa.func.count() > aborted_threshold)
            )
            for d, t, p, n in conn.execute(q):
                out[(d, t, p)] = int(n)
    return out


def run_once(
    ms,
    *,
    table_fs: Callable[[str], Any],
    db_glob: str | None = None,
    failed_threshold: int = FAILED_THRESHOLD,
    failed_retry_ms: int = FAILED_RETRY_MS,
    dry_run: bool = False,
) -> list[dict]:
    """One cycle; one record per checked partition: table, partition, action
    [enqueued|queued|skipped|not-due|did-not-initiate|error], type, id, reasons.

    The stages (:class:`_Cycle`): under the Initiator's mutex, the candidates, then per table
    whether to look at it and its snapshot and listing, per partition a queued or blocked
    request, the recommendation and the request; at the end the cycle's housekeeping."""
    from acidctl.metastore import steps

    if not dry_run:
        steps.check_writable(ms, what="enqueue compactions")
    out: list[dict] = []
    with initiator_mutex(ms) if not dry_run else contextlib.nullcontext():
        candidates = find_candidates(ms)
        cycle = _Cycle(ms, table_fs, failed_threshold, failed_retry_ms, dry_run, candidates)
        for name in _tables(ms, db_glob):
            out.extend(cycle.table(name))
        if not dry_run:
            out.extend(_end_of_cycle(ms))
    log.info("initiator cycle: partitions checked: %d", len(out))
    return out


def _cycle_record(action: str, reason: str) -> dict:
    """A record of the cycle's housekeeping (no table)."""
    return {"table": None, "partition": None, "action": action, "id": None, "type": None, "reasons": [reason]}


def _end_of_cycle(ms) -> list[dict]:
    """Timed-out workers' requests back to initiated; Hive 2.3 also removes the aborted txns
    without components (2.3's Initiator ends every cycle with cleanEmptyAbortedTxns)."""
    from acidctl.metastore import queue

    out = []
    n = queue.revoke_timed_out_workers(ms)
    if ms.hive_version == 2:
        from acidctl.metastore.cleaner import clean_empty_aborted_txns

        gone = clean_empty_aborted_txns(ms)
        if gone:
            out.append(
                _cycle_record(
                    "removed-aborted-txns",
                    f"{noun(len(gone), 'aborted txn')} without components removed from TXNS: {', '.join(map(str, gone))}",
                )
            )
    if n:
        out.append(
            _cycle_record(
                "revoked", f"{plural(n, 'working request')} older than hive.compactor.worker.timeout back to initiated"
            )
        )
    return out


@dataclasses.dataclass
class _Cycle:
    """One Initiator cycle's decisions, table by table and partition by partition."""

    ms: Any
    table_fs: Callable[[str], Any]
    failed_threshold: int
    failed_retry_ms: int
    dry_run: bool
    candidates: dict

    def __post_init__(self) -> None:
        self.h2 = self.ms.hive_version == 2
        self.written = {(d, t) for d, t, _ in self.candidates}

    def table(self, name: str) -> list[dict]:
        """The table's records: one for a table the cycle leaves alone, else one per partition."""
        from acidctl.acid.initiator import Thresholds
        from acidctl.metastore import hive2 as ms2
        from acidctl.metastore.tables import resolve_table

        try:
            info = ms2.table_info(self.ms, name) if self.h2 else resolve_table(self.ms, name)
        except AcidctlError as e:
            return [{"table": name, "partition": None, "action": "error", "reasons": [str(e)]}]
        if not info.full_acid or not info.location:
            return []
        left = self.left_alone(name, info)
        if left is not None:
            return [left]
        try:
            tl, wl, tfs, listings = self.snapshot_and_listing(name, info)
        except AcidctlError as e:
            return [{"table": name, "partition": None, "action": "error", "reasons": [str(e)]}]
        thresholds = Thresholds.from_table_properties(info.params)
        out: list[dict] = []
        for lst in listings:
            rec: dict[str, Any] = {"table": name, "partition": lst.partition or None, "type": None, "id": None}
            rec["reasons"] = []
            out.append(rec)
            self.partition(rec, info, lst, tfs, wl, tl, thresholds)
        return out

    def left_alone(self, name: str, info) -> dict | None:
        """The record of a table Hive never looks at (not written) or skips (no_auto_compaction)."""
        if (info.db, info.table) not in self.written:  # Hive never looks at it: nothing to list
            rec0 = {"table": name, "partition": None, "type": None, "id": None, "action": "not-candidate"}
            return {**rec0, "reasons": [NOT_WRITTEN]}
        skip, level = info.no_auto_compaction_by
        if skip:
            why = f"no_auto_compaction=true on database {info.db}" if level == "database" else "no_auto_compaction=true"
            return {"table": name, "partition": None, "action": "skipped", "reasons": [why]}
        return None

    def snapshot_and_listing(self, name: str, info):
        """The table's snapshot (Hive 2.3: the ValidTxnList is the snapshot) and its listing."""
        from acidctl.acid.layout import list_table
        from acidctl.metastore import hive2 as ms2
        from acidctl.metastore.snapshot import table_snapshot
        from acidctl.target import location_url

        if self.h2:
            tl, wl = None, ms2.txn_list(self.ms).to_write_ids(table=name)
        else:
            tl, wl = table_snapshot(self.ms, name)
        tfs = self.table_fs(location_url(info.location))
        return tl, wl, tfs, list_table(tfs)

    def partition(self, rec: dict, info, lst, tfs, wl, tl, thresholds) -> None:
        """One partition's decision, into ``rec``."""
        part = rec["partition"]
        key = (info.db, info.table, part)
        if key not in self.candidates:
            rec.update(action="not-candidate", reasons=[NOT_WRITTEN])
            return
        queued, blocked = self.queued_or_blocked(info, part)
        if queued is not None:
            rec.update(action="queued", id=int(queued[0]), reasons=["a request is already initiated or working"])
            return
        if blocked:
            msg = (
                f"Compaction is not initiated since last {self.failed_threshold} consecutive compaction attempts failed"
            )
            rec.update(action="did-not-initiate", reasons=[msg])
            if not self.dry_run:
                rec["id"] = record_not_initiated(self.ms, info.db, info.table, part, msg)
            return
        r = self.recommendation(lst, wl, tl, thresholds, self.candidates[key])
        rec["reasons"] = list(r.reasons)
        if not r.due:
            rec["action"] = "not-due"
            return
        rec["type"] = r.type
        if self.dry_run:
            rec["action"] = "would-enqueue"
            return
        self.enqueue(rec, info, lst, tfs, r.type)

    def queued_or_blocked(self, info, part):
        """A request already initiated or working (its CQ_ID row), else whether the failed-
        compactions threshold blocks a new one; one read transaction."""
        import sqlalchemy as sa

        from acidctl.metastore import queue, steps

        ms, cq = self.ms, self.ms.tables.COMPACTION_QUEUE
        with ms.read() as conn:
            queued = conn.execute(
                sa.select(cq.CQ_ID).where(
                    cq.CQ_DATABASE == info.db,
                    cq.CQ_TABLE == info.table,
                    queue.partition_eq(cq.CQ_PARTITION, part),
                    cq.CQ_STATE.in_(["i", "w"]),
                )
            ).first()
            blocked = queued is None and threshold_blocked(
                ms,
                conn,
                info.db,
                info.table,
                part,
                now=steps.now_ms(conn),
                threshold=self.failed_threshold,
                retry_ms=self.failed_retry_ms,
            )
        return queued, blocked

    def recommendation(self, lst, wl, tl, thresholds, many):
        """The Initiator's recommendation. "too many aborts" (Hive 2.3/3) is decided by the
        candidate query with the global threshold (``many``); Hive 4 (aborts cleaned by the
        Cleaner) never asks for it."""
        from acidctl.acid.initiator import compactor_state, recommend

        hv = self.ms.hive_version
        cst = compactor_state(lst, wl, txns=tl, hive_version=hv)
        return recommend(
            cst,
            thresholds=dataclasses.replace(thresholds, aborted_txn=ABORTED_THRESHOLD)
            if many is not None
            else thresholds,
            hive_version=hv,
            aborted_txn_count=many,
        )

    def enqueue(self, rec: dict, info, lst, tfs, type_: str) -> None:
        from acidctl.compact.register import location_owner
        from acidctl.metastore import queue

        res = queue.enqueue(
            self.ms,
            info.db,
            info.table,
            partition=rec["partition"],
            type=type_,
            pool=(info.params or {}).get(queue.POOL_PROPERTY) or None,
            initiator_id=queue.process_id(),
            # 2.3's requestCompaction: runAs = findUserToRunAs(partition or table location)
            run_as=(location_owner(tfs, lst.path) or info.owner or None) if self.h2 else None,
        )
        rec.update(action="enqueued" if res.accepted else "queued", id=res.id if res.accepted else res.existing_id)
        if not res.accepted:
            rec["reasons"].append(res.message)
