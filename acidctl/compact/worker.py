"""``acidctl worker``: run Hive's compaction queue on Spark, as one more Worker
(../shared/spec/operations.md §3, metastore.md §9.2).

One cycle (:func:`run_cycle`) runs up to ``max`` ``initiated`` requests one after another, in
**one** Spark application, through the compaction runner, each registered by
:class:`acidctl.compact.register.Registrar`. A request is taken as Hive's Worker takes one
(:func:`acidctl.metastore.queue.claim`'s conditional update — never racing Hive's own workers or
another acidctl), but only after acidctl's lock of its partition (:mod:`acidctl.compact.lock`)
was taken: a request whose partition another acidctl process is compacting is **skipped** and
left ``initiated`` for later (it never becomes a failed compaction), so acidctl workers on
different partitions of one table run side by side and never fail each other.

* table or partition missing → Hive 4 ``refused`` (``markRefused``); Hive 2.3/3 ``succeeded``
  (``markCleaned``: their Workers assume it was dropped and move on);
* not transactional → Hive 4 ``refused``, Hive 2.3/3 ``failed`` with the reason;
* insert-only (MM) tables are compacted in their own format (:mod:`acidctl.mm.compact`), as
  ``compact DB.TABLE`` does;
* compacted → ``ready for cleaning`` (Hive 4: after the compactor txn committed);
* nothing to compact → Hive 4 ``refused``, Hive 3 ``ready for cleaning`` (as their Workers do);
* Hive 2.3 metastores (a :class:`~acidctl.metastore.hive2.Hive2Metastore`): the same, with the
  ValidTxnList as the snapshot, ``setCompactionHighestTxnId`` and CompactorMR-shaped output
  (:mod:`acidctl.compact.hive2`);
* any error → ``failed`` with the error message (Hive 4: compactor txn aborted).

A request acidctl refuses before its compaction starts (e.g. output that could not be published
atomically) is handed back (``w`` → ``i``, as ``revokeFromLocalWorkers`` does) for Hive's workers,
and this process does not take it again.

A stop request (SIGTERM, Ctrl-C: :class:`StopFlag`) lets the request in flight finish and claims
nothing more. A second interrupt abandons the request in flight safely: its staging is removed by
the runner, its compactor txn aborted and the request released (claimable again).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import Callable

from acidctl.errors import AcidctlError, NotFoundError
from acidctl.metastore import queue

log = logging.getLogger("acidctl.worker")


class StopFlag:
    """Set by the signal handlers; checked between requests."""

    def __init__(self):
        self._ev = threading.Event()
        self.reason: str | None = None

    def set(self, reason: str = "stop requested") -> None:
        self.reason = reason
        self._ev.set()

    def is_set(self) -> bool:
        return self._ev.is_set()

    def wait(self, seconds: float) -> bool:
        return self._ev.wait(seconds)


@dataclasses.dataclass
class WorkerOptions:
    max: int = 10
    pool: str | None = None
    db_glob: str | None = None
    engine: str = "auto"
    local_max_bytes: int | str | None = None  # --engine auto: the input size up to which it runs locally
    master: str = "local[*]"
    spark_conf: dict | None = None
    allow_non_atomic_publish: bool = False
    heartbeat_s: float = 75.0
    poll_s: float = 30.0
    worker_id: str | None = None


def request_line(rec: dict) -> str:
    where = rec["table"] + (f"/{rec['partition']}" if rec.get("partition") else "")
    out = f" ({', '.join(rec['output_dirs'])})" if rec.get("output_dirs") else ""
    msg = f": {rec['message']}" if rec.get("message") and rec["state"] != "ready for cleaning" else ""
    from acidctl.units import duration

    return f"compaction {rec['cq_id']} {where} {rec['type']}: {rec['state']}{out}{msg} [{duration(rec['seconds'])}]"


def claim_batch(ms, opts: WorkerOptions, worker_id: str, stop: StopFlag | None = None) -> list[queue.Request]:
    """Claim up to ``opts.max`` requests without partition locks (tests and tools; the worker
    itself claims one at a time with :func:`claim_next`)."""
    got: list[queue.Request] = []
    while len(got) < opts.max and not (stop and stop.is_set()):
        req = queue.claim(ms, worker_id=worker_id, pool=opts.pool, db_glob=opts.db_glob)
        if req is None:
            break
        got.append(req)
    return got


def partition_locks(ms, req: queue.Request, table_fs: Callable[[str], object]):
    """acidctl's lock of the request's partition (of the table, unpartitioned), not yet taken;
    None when the table cannot be resolved (the run then answers for the request)."""
    from acidctl.compact.lock import LockSet
    from acidctl.compact.runner import lock_scopes
    from acidctl.target import location_url

    try:
        if ms.hive_version == 2:
            from acidctl.metastore.hive2 import table_info

            info = table_info(ms, req.full_name, partition=req.partition)
        else:
            from acidctl.metastore.tables import resolve_table

            info = resolve_table(ms, req.full_name, partition=req.partition)
        if not info.location:
            return None
        tfs = table_fs(location_url(info.location))
    except AcidctlError:
        return None
    return LockSet(tfs, lock_scopes(tfs, [req.partition] if req.partition else None), command="worker", owned=False)


def claim_next(
    ms,
    opts: WorkerOptions,
    worker_id: str,
    *,
    table_fs: Callable[[str], object],
    skip: set | None = None,
    busy: set | None = None,
    stale: list | None = None,
):
    """The next request this worker can run, claimed, with its partition lock held: ``(request,
    locks)``, or None. Candidates come in Hive's order; one whose partition another acidctl
    process holds is left ``initiated`` (added to ``busy``) and the next one is tried; ``skip``:
    ids not to take; ``stale``: gets one line per request held up by a dead run's lock. The lock
    is taken before the conditional update, so a conflict never claims anything."""
    from acidctl.errors import LockConflict

    skip = skip if skip is not None else set()
    busy = busy if busy is not None else set()
    for cand in queue.candidates(ms, pool=opts.pool, db_glob=opts.db_glob):
        if cand.cq_id in skip or cand.cq_id in busy:
            continue
        locks = partition_locks(ms, cand, table_fs)
        if locks is not None:
            try:
                locks.acquire()
            except LockConflict as e:
                busy.add(cand.cq_id)
                if e.stale and stale is not None:
                    # a run that died left its lock: the request waits until `clean --execute`
                    # recovers the partition (it finishes or discards what the run left)
                    stale.append(
                        f"compaction {cand.cq_id} ({cand.display}) waits: {e}; "
                        f"`acidctl clean {cand.display} --execute` recovers the partition"
                    )
                log.info("compaction %d (%s): partition busy, left for later: %s", cand.cq_id, cand.display, e)
                continue
        try:
            req = queue.claim(ms, worker_id=worker_id, pool=opts.pool, db_glob=opts.db_glob, only_ids=[cand.cq_id])
        except BaseException:
            if locks is not None:
                locks.release(force=True)
            raise
        if req is not None:
            return req, locks
        if locks is not None:  # another worker took it first
            locks.release(force=True)
    return None


def run_cycle(
    ms,
    opts: WorkerOptions,
    *,
    table_fs: Callable[[str], object],
    spark=None,
    stop: StopFlag | None = None,
    on_request: Callable[[dict], None] | None = None,
    session: dict | None = None,
) -> list[dict]:
    """Claim and run up to ``opts.max`` requests, one at a time; one record per request.
    ``session`` holds the Spark session across cycles (``{"spark": ...}``; created on first
    need) and the ids this process handed back (not taken again)."""
    worker_id = opts.worker_id or queue.process_id()
    records: list[dict] = []
    session = session if session is not None else {}
    if spark is not None:
        session["spark"] = spark
    skip: set = session.setdefault("handed_back", set())
    busy: set = set()
    stale: list = session.setdefault("stale_locks", [])
    # requests a killed acidctl process on this host left 'working' (Hive's revokeFromLocalWorkers)
    queue.revoke_dead_local_workers(ms)
    while len(records) < opts.max and not (stop is not None and stop.is_set()):
        got = claim_next(ms, opts, worker_id, table_fs=table_fs, skip=skip, busy=busy, stale=stale)
        if got is None:
            break
        req, locks = got
        try:
            rec = run_request(ms, req, opts, worker_id=worker_id, table_fs=table_fs, session=session, locks=locks)
        finally:
            if locks is not None:
                locks.release(force=True)
        if rec["state"] == HANDED_BACK:
            skip.add(req.cq_id)
        records.append(rec)
        if on_request:
            on_request(rec)
    return records


#: the record state of a request refused before its compaction started and given back
HANDED_BACK = "handed back"


def _record(req: queue.Request, state: str, message: str | None, seconds: float, **kw) -> dict:
    rec = {
        "cq_id": req.cq_id,
        "table": req.full_name,
        "partition": req.partition,
        "type": req.type,
        "state": state,
        "message": message,
        "output_dirs": [],
        "txn_id": None,
        "seconds": round(seconds, 3),
    }
    rec.update(kw)
    return rec


def _spark_for(opts: WorkerOptions, session: dict):
    if opts.engine != "spark":
        return None
    if session.get("spark") is None:
        from acidctl.compact.spark import get_or_create_session

        session["spark"] = get_or_create_session(opts.master, opts.spark_conf)
        session["own"] = True
    return session["spark"]


def run_request(
    ms,
    req: queue.Request,
    opts: WorkerOptions,
    *,
    worker_id: str,
    table_fs: Callable[[str], object],
    session: dict,
    locks=None,
) -> dict:
    """Compact one claimed request and move it to its next state (see the module docstring)."""
    from acidctl.compact.register import Registrar, run_registered
    from acidctl.metastore.snapshot import table_snapshot
    from acidctl.metastore.tables import resolve_table
    from acidctl.target import location_url

    t0 = time.perf_counter()
    hv = ms.hive_version

    def refuse(message: str) -> dict:
        if hv >= 4:
            queue.mark_refused(ms, req.cq_id, message=message)
            return _record(req, "refused", message, time.perf_counter() - t0)
        queue.mark_failed(ms, req.cq_id, message=message)
        return _record(req, "failed", message, time.perf_counter() - t0)

    try:
        if hv == 2:
            from acidctl.metastore.hive2 import table_info

            info = table_info(ms, req.full_name, partition=req.partition)
        else:
            info = resolve_table(ms, req.full_name, partition=req.partition)
    except NotFoundError as e:
        if hv >= 4:
            return refuse(f"Unable to find table or partition: {e}")
        # Hive 2.3/3.1's Worker: "assuming it was dropped and moving on" → markCleaned
        from acidctl.metastore.cleaner import mark_cleaned

        mark_cleaned(ms, req.cq_id)
        return _record(req, "succeeded", f"{e}: assuming it was dropped (marked cleaned)", time.perf_counter() - t0)
    except AcidctlError as e:
        queue.mark_failed(ms, req.cq_id, message=str(e))
        return _record(req, "failed", str(e), time.perf_counter() - t0)
    if not info.transactional or not info.location:
        why = "not a transactional table" if not info.transactional else "no location in the metastore"
        return refuse(f"{info.full_name}: {why}")
    mm = None
    if info.insert_only:  # insert-only (MM) table: compacted in its own format (acidctl.mm)
        if hv == 2:
            return refuse(f"{info.full_name}: insert-only tables do not exist in Hive 2.3")
        try:
            mm = _mm_context(ms, info)
        except AcidctlError as e:
            return refuse(f"{info.full_name}: {e}")
    if req.type not in ("major", "minor"):
        return refuse(f"{req.type} compaction is not supported by acidctl")
    reg = None
    try:
        if hv == 2:  # Hive 2.3: the ValidTxnList is the snapshot (txn ids name the directories)
            from acidctl.metastore.hive2 import txn_list

            tl, wl = None, txn_list(ms).to_write_ids(table=info.full_name)
        else:
            tl, wl = table_snapshot(ms, info.full_name)
        tfs = table_fs(location_url(info.location))
        reg = Registrar(
            ms,
            info.db,
            info.table,
            compactor_hwm=wl.for_compactor().hwm,
            run_as=req.run_as or (_run_as_2(info, tfs, table_fs) if hv == 2 else None) or info.owner or None,
            worker_id=worker_id,
            requests={req.partition: req},
            heartbeat_s=opts.heartbeat_s,
        )
        copts = _compact_options(req, info, wl, tl, hv, opts, mm=mm, visibility_txn=reg.visibility if hv >= 4 else None)
        if mm is not None:
            from acidctl.mm.compact import compact_mm_table

            report = run_registered(
                tfs, copts, mm, compact_fn=compact_mm_table, registrar=reg, spark=_spark_for(opts, session), locks=locks
            )
        else:
            report = run_registered(tfs, copts, registrar=reg, spark=_spark_for(opts, session), locks=locks)
    except KeyboardInterrupt:
        if reg is not None:
            reg.abandon_all()
        else:
            queue.release(ms, req.cq_id, worker_id=worker_id)
        raise
    except Exception as e:
        msg = str(e) if isinstance(e, AcidctlError) else f"{type(e).__name__}: {e}"
        if reg is None:
            queue.mark_failed(ms, req.cq_id, message=msg)
        elif reg.state_of(req.partition) in ("released", "claimed"):
            # refused before the compaction started: given back, not a failed compaction
            log.info("compaction %d handed back: %s", req.cq_id, msg)
            return _record(req, HANDED_BACK, msg, time.perf_counter() - t0)
        log.info("compaction %d failed: %s", req.cq_id, msg)
        return _record(req, "failed", msg, time.perf_counter() - t0)
    return _outcome(req, report, reg, tfs, wl, tl, hv, t0)


def _mm_context(ms, info):
    """An insert-only table's context: its storage (format, SerDe) and columns."""
    from acidctl.formats.hivetypes import Column
    from acidctl.formats.storage import lookup
    from acidctl.mm.context import MMContext

    return MMContext(
        lookup(ms, info),
        [Column(n.lower(), t.lower()) for n, t in info.columns] or None,
        list(info.partition_keys),
    )


def _outcome(req, report: dict, reg, tfs, wl, tl, hv: int, t0: float) -> dict:
    """The request's record after the run: its partition compacted (the registrar moved it on),
    or nothing to compact (the request refused or compacted as Hive's Worker does)."""
    parts = [p for p in report["partitions"] if p["partition"] == req.partition] or report["partitions"]
    p = parts[0] if parts else None
    if p is not None and p["status"] == "compact":
        m = p.get("metastore") or {}
        return _record(
            req,
            m.get("state", "ready for cleaning"),
            report.get("message"),
            time.perf_counter() - t0,
            output_dirs=p["output_dirs"],
            txn_id=m.get("txn_id"),
            rows_in=p["rows_in"],
            rows_out=p["rows_out"],
        )
    try:
        m = reg.nothing_to_compact(
            req.partition, req.type, cleaning_only=_left_for_cleaner(tfs, req.partition, wl, tl, hv)
        )
    finally:
        reg.close()
    return _record(
        req, m["state"], p["message"] if p else "nothing to compact", time.perf_counter() - t0, txn_id=m.get("txn_id")
    )


def _compact_options(req, info, wl, tl, hv: int, opts: WorkerOptions, *, mm, visibility_txn, dry_run: bool = False):
    """The runner's options for one request (the run, or with ``dry_run`` its plan)."""
    from acidctl.acid.initiator import Thresholds
    from acidctl.compact.runner import CompactOptions

    cols = [n for n, _ in info.columns] if info.columns and mm is None else None
    return CompactOptions(
        mode=req.type,
        reader=wl,
        txns=tl,
        hive_version=hv,
        partitions=[req.partition] if req.partition else None,
        thresholds=Thresholds.from_table_properties(info.params),
        visibility_txn=visibility_txn,
        hidden_until_commit=hv >= 4,
        columns=cols,
        columns_coln_only=cols is not None,
        engine=opts.engine,
        local_max_bytes=opts.local_max_bytes,
        master=opts.master,
        spark_conf=opts.spark_conf,
        allow_non_atomic_publish=opts.allow_non_atomic_publish,
        insert_only=mm is not None,
        dry_run=dry_run,
    )


def plan_cycle(ms, opts: WorkerOptions, *, table_fs: Callable[[str], object]) -> list[dict]:
    """``worker --dry-run``: the requests one cycle would claim (:func:`acidctl.metastore.queue.claimable`,
    in claim order) and, for each, what the run would write (the compaction's dry-run plan) or
    the state it would move the request to without compacting. Reads only: no claim, no lock,
    no staging, no metastore row."""
    from acidctl.compact.register import run_registered
    from acidctl.metastore.snapshot import table_snapshot
    from acidctl.metastore.tables import resolve_table
    from acidctl.target import location_url

    hv = ms.hive_version
    out = []
    for req in queue.claimable(ms, limit=opts.max, pool=opts.pool, db_glob=opts.db_glob):
        t0 = time.perf_counter()

        def would(state: str, message: str | None, **kw) -> dict:
            return _record(req, "would be " + state, message, time.perf_counter() - t0, **kw)

        try:
            if hv == 2:
                from acidctl.metastore.hive2 import table_info, txn_list

                info = table_info(ms, req.full_name, partition=req.partition)
                tl, wl = None, txn_list(ms).to_write_ids(table=info.full_name)
            else:
                info = resolve_table(ms, req.full_name, partition=req.partition)
                tl, wl = table_snapshot(ms, info.full_name)
        except NotFoundError as e:
            out.append(would("refused" if hv >= 4 else "succeeded", f"{e}"))
            continue
        except AcidctlError as e:
            out.append(would("failed", str(e)))
            continue
        if not info.transactional or not info.location:
            why = "not a transactional table" if not info.transactional else "no location in the metastore"
            out.append(would("refused" if hv >= 4 else "failed", f"{info.full_name}: {why}"))
            continue
        if req.type not in ("major", "minor"):
            out.append(would("refused" if hv >= 4 else "failed", f"{req.type} compaction is not supported by acidctl"))
            continue
        mm = None
        try:
            if info.insert_only:
                from acidctl.formats.hivetypes import Column
                from acidctl.formats.storage import lookup
                from acidctl.mm.context import MMContext

                mm = MMContext(
                    lookup(ms, info),
                    [Column(n.lower(), t.lower()) for n, t in info.columns] or None,
                    list(info.partition_keys),
                )
            tfs = table_fs(location_url(info.location))
            copts = _compact_options(req, info, wl, tl, hv, opts, mm=mm, visibility_txn=None, dry_run=True)
            if mm is not None:
                from acidctl.mm.compact import compact_mm_table

                plan = run_registered(tfs, copts, mm, compact_fn=compact_mm_table, registrar=None)
            else:
                plan = run_registered(tfs, copts, registrar=None)
        except AcidctlError as e:
            out.append(would("failed", str(e)))
            continue
        parts = [p for p in plan["partitions"] if p["partition"] == req.partition] or plan["partitions"]
        p = parts[0] if parts else None
        if plan.get("refused"):
            out.append(would("failed", plan.get("refusal") or (p or {}).get("message"), plan=p))
        elif p is not None and p["status"] == "compact":
            out.append(would("ready for cleaning", None, output_dirs=list(p["outputs"]), plan=p))
        else:
            # as the run (_outcome → Registrar.nothing_to_compact): Hive 4 marks it compacted when
            # obsolete or aborted directories are left for the Cleaner, else refused
            cleaning = hv < 4 or _left_for_cleaner(tfs, req.partition, wl, tl, hv)
            out.append(
                would("ready for cleaning" if cleaning else "refused", p["message"] if p else "nothing to compact")
            )
    return out


def _run_as_2(info, tfs, table_fs) -> str | None:
    """Hive 2.3's ``findUserToRunAs(sd.getLocation(), t)``: the owner of the partition's directory
    (of the table's, unpartitioned)."""
    from acidctl.compact.register import location_owner
    from acidctl.target import location_url

    if info.partition_location:
        return location_owner(table_fs(location_url(info.partition_location)))
    return location_owner(tfs)


def _left_for_cleaner(tfs, partition, wl, tl, hv) -> bool:
    """Obsolete or aborted directories in the compactor's view of the partition: Hive 4's Worker
    then marks the request compacted (for the Cleaner) instead of refusing it."""
    from acidctl.acid.initiator import compactor_state
    from acidctl.acid.layout import list_table

    try:
        for lst in list_table(tfs):
            if (lst.partition or None) == partition:
                st = compactor_state(lst, wl, txns=tl, hive_version=hv)
                return bool(st.obsolete or st.aborted)
    except AcidctlError:
        return False
    return False


def stop_session(session: dict) -> None:
    if session.get("own") and session.get("spark") is not None:
        from acidctl.compact.spark import stop_session as stop

        stop(session["spark"])
    session.clear()
