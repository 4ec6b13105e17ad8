"""Registering acidctl's compactions in the metastore with Hive's own Worker protocol
(../shared/spec/metastore.md §9.2, §10; operations.md §2–§3), through
:mod:`acidctl.metastore.queue` and :mod:`acidctl.metastore.txns` — one Hive step = one DB
transaction.

Per compacted partition (a :class:`Registrar` serves one table):

* the request: one already queued for the partition (``ALTER TABLE ... COMPACT``, the Initiator,
  ``compact --enqueue``) is **claimed** with the conditional update; otherwise acidctl enqueues
  one (initiator ``<host>-manual``, as a manual request) and claims it. A request a worker is
  ``working`` on refuses the run;
* Hive 4: a COMPACTION txn is opened (it names the output ``_v<txn>``), heartbeated from a
  background thread while the compaction runs, holds a SHARED_READ lock on the table/partition,
  and is recorded with ``updateCompactorState`` (queue row + ``TXN_COMPONENTS`` ``c`` row);
  Hive 3: ``setCompactionHighestWriteId`` (and ``setRunAs``); Hive 2.3 (a
  :class:`~acidctl.metastore.hive2.Hive2Metastore`): ``setRunAs`` then
  ``setCompactionHighestTxnId`` (the compactor ValidTxnList's hwm), no txn and no lock;
* after publication ``markCompacted`` (``ready for cleaning``) and, Hive 4, the commit of the
  compactor txn — the output stays invisible to Hive 4 readers until that commit;
* on failure **of a run that started** (:meth:`Registrar.start`: the bucket tasks are about to
  run) ``markFailed`` with the error message and, Hive 4, the txn aborted
  (``compaction transaction abort``), as Hive's Worker does;
* a claimed request with nothing to compact: Hive 4 ``markRefused`` and commit, Hive 3
  ``markCompacted`` (as their Workers do; Hive 2.3's CompactorMR runs the job anyway and marks
  it compacted).

**No trace** (issue 21): the runners decide every refusal they can at plan time (coverage,
atomic publication, locks) **before** :meth:`Registrar.claim_all` enqueues or claims anything.
A run that stops between the claim and :meth:`Registrar.start`, or is interrupted (Ctrl-C,
SIGTERM) before publication, hands its requests back (:meth:`Registrar.hand_back_all`): a
request that was already queued goes back to ``initiated`` exactly as Hive's
``revokeFromLocalWorkers`` resets it (worker id and start cleared; ``CQ_TXN_ID``,
``CQ_HIGHEST_WRITE_ID``, ``CQ_RUN_AS``, worker version kept), a request this run enqueued itself
is deleted again, and a Hive 4 compactor txn already opened is aborted as Hive's Worker aborts an
unused one (``TXN_META_INFO`` ``compaction transaction abort``; its ``TXN_COMPONENTS`` ``c`` row, if
written, stays until a Cleaner covers it, as Hive leaves it). Nothing lands in
COMPLETED_COMPACTIONS, so no refusal counts toward
``hive.compactor.initiator.failed.compacts.threshold``.

:func:`registration_for` decides whether a ``compact`` run registers (``--no-register``,
``--dry-run``, ``--read-only``, the schema version) — the CLI only passes its options.
"""

from __future__ import annotations

import dataclasses
import getpass
import logging
import sys
from typing import Callable

from acidctl.errors import NeedsDatabase, RefusedError, UsageError
from acidctl.metastore import queue, steps, txns

log = logging.getLogger("acidctl.compact")


@dataclasses.dataclass
class _Entry:
    request: queue.Request
    claimed: bool  # an existing request was claimed (not enqueued by this run)
    txn_id: int | None = None
    heartbeat: txns.Heartbeat | None = None
    # claimed (not started) | working | ready for cleaning | refused | failed | released | withdrawn
    state: str = "claimed"


class Registrar:
    def __init__(
        self,
        ms,
        db: str,
        table: str,
        *,
        compactor_hwm: int,
        run_as: str | None = None,
        worker_id: str | None = None,
        requests: dict | None = None,
        heartbeat_s: float = txns.TXN_TIMEOUT_S / 4,
    ):
        self.ms = ms
        self.db, self.table = db.lower(), table.lower()
        self.hwm = int(compactor_hwm)
        self.hive_version = ms.hive_version
        self.run_as = run_as or getpass.getuser()
        self.worker_id = worker_id or queue.process_id()
        self.heartbeat_s = heartbeat_s
        self.entries: dict = {}
        # requests a worker already claimed, by partition
        self._preclaimed: dict = dict(requests or {})

    # -- the request ---------------------------------------------------------------------
    def _queued(self, partition, mode: str) -> int | None:
        """The ``initiated`` request of this partition (if any); refuse when a worker holds it
        or when it asks for the other compaction type."""
        import sqlalchemy as sa

        cq = self.ms.tables.COMPACTION_QUEUE
        with self.ms.read() as conn:
            rows = conn.execute(
                sa.select(cq.CQ_ID, cq.CQ_STATE, cq.CQ_TYPE, cq.CQ_WORKER_ID)
                .where(
                    cq.CQ_DATABASE == self.db,
                    cq.CQ_TABLE == self.table,
                    queue.partition_eq(cq.CQ_PARTITION, partition),
                    cq.CQ_STATE.in_(["i", "w"]),
                )
                .order_by(cq.CQ_ID)
            ).all()
        ours = {e.request.cq_id for e in self.entries.values()}
        where = f"{self.db}.{self.table}{'/' + partition if partition else ''}"
        for cq_id, st, ty, worker in rows:
            if int(cq_id) in ours:
                continue
            if st == "w":
                raise RefusedError(
                    f"compaction {cq_id} of {where} is being worked on by {worker}",
                    hint="wait for it (acidctl show compactions), or pass --no-register",
                )
            want = queue.TYPE_CODES[mode]
            if ty != want:
                raise RefusedError(
                    f"a {queue.TYPE_NAMES.get(ty, ty)} compaction of {where} is already queued "
                    f"(id {cq_id}); this run would duplicate it",
                    hint=f"run `acidctl worker` (or compact --{queue.TYPE_NAMES.get(ty, ty)}) to do the queued request",
                )
            return int(cq_id)
        return None

    def claim_all(self, items) -> None:
        """After every plan-time check passed (the runner calls it once with the ``(partition,
        mode)`` of each partition that will run): claim (or enqueue and claim) the requests, as
        Hive's Worker claims before it compacts. Refused for one partition → the requests claimed
        for the others are handed back (:meth:`hand_back_all`) and nothing stays behind."""
        items = list(items)
        # a request a killed acidctl on this host left 'working' would refuse this run
        queue.revoke_dead_local_workers(self.ms)
        for partition, mode in items:  # read only: refuse before claiming any of them
            self._precheck(partition, mode)
        try:
            for partition, mode in items:
                self._begin(partition, mode)
        except BaseException:
            self.hand_back_all()
            raise

    def check(self, partition, mode: str) -> None:
        """One partition's :meth:`claim_all`."""
        self.claim_all([(partition, mode)])

    def start(self) -> None:
        """The bucket tasks are about to run: from now on a failure is a failed compaction
        (``markFailed``, as Hive's Worker records it); before, it is handed back."""
        for e in self.entries.values():
            if e.state == "claimed":
                e.state = "working"

    def _precheck(self, partition, mode: str) -> None:
        """What would refuse the claim of ``partition``, read without writing: a request a worker
        holds or one of the other type (:meth:`_queued`), and — when acidctl would enqueue one —
        Hive 4's refusal of a new request while one is ready for cleaning with the same highest
        write id (metastore.md §9.1). The claim checks again under the mutex."""
        import sqlalchemy as sa

        if partition in self._preclaimed or partition in self.entries:
            return
        if self._queued(partition, mode) is not None or self.hive_version < 4:
            return
        cq = self.ms.tables.COMPACTION_QUEUE
        with self.ms.read() as conn:
            row = conn.execute(
                sa.select(cq.CQ_ID).where(
                    cq.CQ_DATABASE == self.db,
                    cq.CQ_TABLE == self.table,
                    queue.partition_eq(cq.CQ_PARTITION, partition),
                    cq.CQ_STATE == "r",
                    cq.CQ_HIGHEST_WRITE_ID == self.hwm,
                )
            ).first()
        if row is not None:
            raise self._ready_refusal(partition, int(row[0]), self.hwm, None)

    def _ready_refusal(self, partition, cq_id: int, hwm, message: str | None) -> RefusedError:
        where = f"{self.db}.{self.table}{'/' + partition if partition else ''}"
        msg = message or f"Compaction is already scheduled with state='READY_FOR_CLEANING' and id={cq_id}"
        return RefusedError(
            f"compaction {cq_id} of {where} is ready for cleaning and already covers write id {hwm}; "
            f"Hive refuses a new request: {msg}",
            hint="let the Cleaner finish it (acidctl clean --execute, or Hive's Cleaner) and run again",
        )

    def _claim(self, partition, mode: str) -> tuple[queue.Request, bool]:
        if partition in self._preclaimed:
            return self._preclaimed.pop(partition), True
        where = f"{self.db}.{self.table}{'/' + partition if partition else ''}"
        for _ in range(3):
            cq_id = self._queued(partition, mode)
            claimed = cq_id is not None
            if cq_id is None:
                res = queue.enqueue(self.ms, self.db, self.table, partition=partition, type=mode, run_as=self.run_as)
                if not res.accepted:
                    if res.existing_id is None:  # neither accepted nor naming the request that blocks it
                        raise RefusedError(f"could not enqueue the compaction of {where}: {res.message}")
                    blocking = queue.get_request(self.ms, res.existing_id)
                    if blocking is not None and blocking.state == "r":
                        # Hive 4's compact(): a request ready for cleaning that already covers
                        # the compactor high-water mark refuses a new one (metastore.md §9.1)
                        raise self._ready_refusal(partition, res.existing_id, blocking.highest_write_id, res.message)
                    continue  # an initiated/working request appeared meanwhile: look again
                cq_id, claimed = res.id, False
            req = queue.claim(
                self.ms, worker_id=self.worker_id, only_ids=[cq_id], types=(queue.TYPE_CODES[mode],), any_pool=True
            )
            if req is not None:
                return req, claimed
        raise RefusedError(
            f"could not claim a compaction request for {where}: another worker keeps taking it",
            hint="wait for it (acidctl show compactions)",
        )

    def _begin(self, partition, mode: str) -> _Entry:
        e = self.entries.get(partition)
        if e is not None:
            return e
        req, claimed = self._claim(partition, mode)
        e = self.entries[partition] = _Entry(req, claimed)
        try:
            if self.hive_version >= 4:
                opened = txns.open_compaction_txn(self.ms, user=self.run_as)
                e.txn_id = opened.txn_id
                e.heartbeat = txns.Heartbeat(self.ms, e.txn_id, interval_s=self.heartbeat_s).start()
                txns.lock_for_compaction(self.ms, e.txn_id, req.db, req.table, req.partition, user=self.run_as)
                queue.update_compactor_state(
                    self.ms, req.cq_id, txn_id=e.txn_id, highest_write_id=self.hwm, run_as=req.run_as or self.run_as
                )
            elif self.hive_version == 2:
                # Hive 2.3's Worker: setRunAs (when the request has none), then
                # setCompactionHighestTxnId with the compactor ValidTxnList's hwm; no txn, no lock
                if req.run_as is None:
                    queue.set_run_as(self.ms, req.cq_id, self.run_as)
                queue.set_highest_txn_id(self.ms, req.cq_id, self.hwm)
            else:
                queue.set_highest_write_id(self.ms, req.cq_id, self.hwm)
                if req.run_as is None:
                    queue.set_run_as(self.ms, req.cq_id, self.run_as)
        except BaseException:
            self._hand_back(e)  # nothing ran: not a failed compaction
            raise
        log.info(
            "compaction %d of %s: claimed%s",
            req.cq_id,
            req.display,
            f", compactor txn {e.txn_id}" if e.txn_id is not None else "",
        )
        return e

    # -- the runner's callbacks ------------------------------------------------------------
    def visibility(self, partition, mode: str) -> int:
        """Hive 4: the compactor txn that names this partition's output (``_v<txn>``)."""
        txn = self._begin(partition, mode).txn_id
        assert txn is not None, "Hive 4 compactions always open a compactor txn"
        return txn

    def before_publish(self, plan) -> None:
        e = self._begin(plan.partition, plan.mode)
        if e.heartbeat is not None and e.heartbeat.lost:
            raise RefusedError(
                f"compactor txn {e.txn_id} was aborted while the compaction ran ({e.heartbeat.lost}); not publishing"
            )

    def published(self, plan) -> None:
        e = self._begin(plan.partition, plan.mode)
        queue.mark_compacted(self.ms, e.request.cq_id)
        commit = None
        if e.txn_id is not None:
            self._stop_heartbeat(e)
            commit = txns.commit_compaction_txn(self.ms, e.txn_id)
        e.state = "ready for cleaning"
        plan.registration = self._record(e, commit)

    def failed(self, plan, message: str) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            return  # interrupted, not failed: run_registered hands the request back
        if exc is not None and str(exc) and message == type(exc).__name__:
            message = f"{type(exc).__name__}: {exc}"  # the runner passes only the class name
        e = self.entries.get(plan.partition)
        if e is not None and e.state == "working":  # not started: handed back by run_registered
            self._fail(e, message)
            plan.registration = self._record(e)

    # -- the worker's ----------------------------------------------------------------------
    def nothing_to_compact(self, partition, mode: str, *, cleaning_only: bool = False) -> dict:
        """A claimed request with nothing to compact: Hive 4 opens its txn, then ``markCompacted``
        when obsolete or aborted directories are left for the Cleaner (``cleaning_only``), else
        ``markRefused``, and commits either way (operations.md §3.2 step 6); Hive 3
        ``markCompacted`` (its Cleaner then finishes the request)."""
        e = self._begin(partition, mode)
        commit = None
        if self.hive_version >= 4 and cleaning_only:
            queue.mark_compacted(self.ms, e.request.cq_id)
            self._stop_heartbeat(e)
            assert e.txn_id is not None
            commit = txns.commit_compaction_txn(self.ms, e.txn_id)
            e.state = "ready for cleaning"
        elif self.hive_version >= 4:
            queue.mark_refused(self.ms, e.request.cq_id, message=queue.NOTHING_TO_COMPACT)
            self._stop_heartbeat(e)
            assert e.txn_id is not None
            commit = txns.commit_compaction_txn(self.ms, e.txn_id)
            e.state = "refused"
        else:
            queue.mark_compacted(self.ms, e.request.cq_id)
            e.state = "ready for cleaning"
        return self._record(e, commit)

    def fail_all(self, message: str) -> None:
        """The run ended early with an error: requests whose compaction started → failed (txn
        aborted), as Hive's Worker records a failed run; requests claimed but not started (a
        refusal found before the tasks ran) are handed back (:meth:`hand_back_all`)."""
        for e in self.entries.values():
            if e.state == "working":
                self._fail(e, message)
        self.hand_back_all()

    def hand_back_all(self) -> None:
        """Interrupted, or stopped before the run started: leave the queue as this run found it.
        A request that was queued before goes back to ``initiated`` (``revokeFromLocalWorkers``
        for one row: ``CQ_WORKER_ID``/``CQ_START`` cleared, the rest kept); a request this run
        enqueued itself is deleted; a Hive 4 compactor txn opened for it is aborted as Hive's
        Worker aborts one it does not use (``compaction transaction abort``)."""
        for e in self.entries.values():
            self._hand_back(e)
        for part, req in list(self._preclaimed.items()):
            try:
                queue.release(self.ms, req.cq_id, worker_id=self.worker_id)
            except Exception as ex:
                log.warning("could not hand back compaction %d: %s", req.cq_id, ex)
            self.entries[part] = _Entry(req, True, state="released")
        self._preclaimed.clear()

    def _hand_back(self, e: _Entry) -> None:
        if e.state not in ("claimed", "working"):
            return
        self._stop_heartbeat(e)
        if e.txn_id is not None:
            try:
                txns.abort_txn(self.ms, e.txn_id, reason=txns.ABORT_COMPACTION_TXN)
            except Exception as ex:  # the timeout reaper aborts it after hive.txn.timeout
                log.warning("could not abort compactor txn %d: %s", e.txn_id, ex)
        try:
            if e.claimed:
                queue.release(self.ms, e.request.cq_id, worker_id=self.worker_id)
                e.state = "released"
            else:
                queue.withdraw(self.ms, e.request.cq_id, worker_id=self.worker_id)
                e.state = "withdrawn"
        except Exception as ex:  # keep the original error; Hive's revokeTimedoutWorkers resets it
            log.warning("could not hand back compaction %d: %s", e.request.cq_id, ex)

    #: the old name (a stopping worker abandons what it claimed)
    abandon_all = hand_back_all

    def state_of(self, partition) -> str:
        """Where this run left the request of ``partition``: ``claimed`` (preclaimed, never
        begun), ``released``, ``withdrawn``, ``working``, ``ready for cleaning``, ``refused``,
        ``failed``, or ``none``."""
        e = self.entries.get(partition)
        if e is not None:
            return e.state
        return "claimed" if partition in self._preclaimed else "none"

    def close(self) -> None:
        for e in self.entries.values():
            self._stop_heartbeat(e)

    # -- helpers -------------------------------------------------------------------------
    def _stop_heartbeat(self, e: _Entry) -> None:
        if e.heartbeat is not None:
            e.heartbeat.stop()
            e.heartbeat = None

    def _fail(self, e: _Entry, message: str) -> None:
        if e.state not in ("claimed", "working"):
            return
        self._stop_heartbeat(e)
        e.state = "failed"
        try:
            queue.mark_failed(self.ms, e.request.cq_id, message=message[:4000])
        except Exception as ex:  # keep the original error; the row stays 'w' for Hive's revoke
            log.warning("could not mark compaction %d failed: %s", e.request.cq_id, ex)
        if e.txn_id is not None:
            try:
                txns.abort_txn(self.ms, e.txn_id, reason=txns.ABORT_COMPACTION_TXN)
            except Exception as ex:  # the timeout reaper aborts it after hive.txn.timeout
                log.warning("could not abort compactor txn %d: %s", e.txn_id, ex)

    def _record(self, e: _Entry, commit=None) -> dict:
        rec = {
            "cq_id": e.request.cq_id,
            "txn_id": e.txn_id,
            "state": e.state,
            "highest_write_id": self.hwm,
            "claimed_request": e.claimed,
        }
        if commit is not None and commit.commit_id is not None:
            rec["next_txn_id"] = commit.commit_id
        return rec


def location_owner(tfs, path: str | None = None) -> str | None:
    """Hive 2.3's Worker ``findUserToRunAs``: the owner of the table's (or partition's) directory
    — what it records with ``setRunAs`` for a request without one. None when the filesystem does
    not say (object stores); the caller falls back to the table owner, then the current user."""
    path = path or tfs.root
    try:
        if tfs.protocol in ("file", "local"):
            import os
            import pwd

            return pwd.getpwuid(os.stat(path).st_uid).pw_name
        owner = tfs.fs.info(path).get("owner")  # WebHDFS/HDFS FileStatus owner
        return str(owner) if owner else None
    except (OSError, KeyError, ValueError):
        return None
    except Exception as e:  # a remote error: the run-as user is not worth failing the run for
        log.info("no owner for %s: %s", path, e)
        return None


@dataclasses.dataclass
class Registration:
    """What :func:`registration_for` decided for one ``compact`` run."""

    registrar: Registrar | None
    visibility_txn: int | Callable | None
    hidden_until_commit: bool
    notes: list


def registration_for(
    target,
    *,
    no_register: bool = False,
    dry_run: bool = False,
    visibility_txn: int | None = None,
    metastore_configured: bool = False,
    heartbeat_s: float = txns.TXN_TIMEOUT_S / 4,
) -> Registration:
    """Whether and how a ``compact`` run registers in the metastore. Writes are on by default
    where the compaction needs them (a DB.TABLE target on a 3.1.x/4.0.x schema, or a 2.3.x one
    with the Hive 2.3 protocol); ``--no-register`` skips them for one run; ``--read-only`` or
    another schema version leaves a Hive 2.3/3 compaction unregistered (noted) and refuses a Hive
    4 one, whose output needs a compactor txn."""
    info, ms, hv = target.table, target.metastore, target.hive_version
    notes: list[str] = []
    if dry_run:
        return Registration(None, visibility_txn, False, notes)
    if info is None or ms is None:
        if metastore_configured and not no_register:
            notes.append("not registered in the metastore: give the table as DB.TABLE to record the compaction")
        return Registration(None, visibility_txn, False, notes)
    if no_register:
        notes.append("not registered in the metastore (--no-register)")
        return Registration(None, visibility_txn, False, notes)
    if hv >= 3 and visibility_txn is not None:
        raise UsageError(
            "--visibility-txn names the output of an unregistered compaction; with a metastore "
            "acidctl opens its own compactor txn",
            hint="drop --visibility-txn, or add --no-register to use a txn you committed yourself",
        )
    try:
        steps.check_writable(ms, what="register the compaction")
    except (RefusedError, NeedsDatabase) as e:  # NeedsDatabase: a thrift:// metastore
        if hv >= 4:
            raise RefusedError(
                f"a Hive 4 compaction needs a compactor txn: {e}",
                hint="allow metastore writes, or pass --no-register with --visibility-txn M "
                "(a committed COMPACTION txn)",
            ) from None
        notes.append(f"not registered in the metastore: {e}")
        return Registration(None, None, False, notes)
    wl = target.write_ids
    reg = Registrar(
        ms,
        info.db,
        info.table,
        compactor_hwm=wl.for_compactor().hwm,
        run_as=(location_owner(target.tfs) if hv == 2 else None) or info.owner or None,
        heartbeat_s=heartbeat_s,
    )
    if hv >= 4:
        return Registration(reg, reg.visibility, True, notes)
    return Registration(reg, None, False, notes)


def run_registered(tfs, opts, *args, registrar: Registrar | None, compact_fn=None, **kw) -> dict:
    """:func:`acidctl.compact.runner.compact_table` (or ``compact_fn``, e.g. the insert-only
    runner, called as ``compact_fn(tfs, opts, *args, registrar=..., **kw)``) with the
    registrar's bookkeeping around it: a run that failed after its tasks started marks its
    requests failed (compactor txns aborted); one refused before that, or interrupted (Ctrl-C,
    SIGTERM), hands them back (:meth:`Registrar.hand_back_all`); heartbeats always stop."""
    if compact_fn is None:
        from acidctl.compact.runner import compact_table as compact_fn

    try:
        return compact_fn(tfs, opts, *args, registrar=registrar, **kw)
    except BaseException as e:
        if registrar is not None:
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                registrar.hand_back_all()
            else:
                from acidctl.errors import AcidctlError

                registrar.fail_all(str(e) if isinstance(e, AcidctlError) else f"{type(e).__name__}: {e}")
        raise
    finally:
        if registrar is not None:
            registrar.close()
