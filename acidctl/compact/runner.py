"""``compact_table``: lock, plan, run the bucket tasks (one Spark application), verify,
publish, record — the library behind ``acidctl compact``.

Order of events (each step is a crash point for ``ACIDCTL_TEST_CRASH_AT``):

1. take acidctl's locks of the partitions it compacts (the whole table when no partition is
   named; :mod:`acidctl.compact.lock`) (``after-lock``);
2. finish publications an earlier crash interrupted (:func:`acidctl.compact.publish.recover`);
3. list the table once and plan every selected partition (``after-plan``);
4. create the staging directories and markers; run all tasks of all partitions in ONE Spark
   job (``task-start``, ``task-before-write``, ``task-after-write`` run in the tasks);
5. check the staged directories against the task metrics (each task has already verified its
   file with ``inspect_file`` and compared the merged read of its bucket before/after)
   (``before-publish``);
6. publish partition by partition (``between-renames``, ``after-rename``, ``after-publish``
   after the first partition);
7. record the compaction in the metastore when a recorder is given; release the lock
   (``before-unlock``).

Any failure before step 6 removes the staging directories of this run; a SIGKILL leaves them
(hidden, ignored by readers) for ``acidctl clean``.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Callable

from acidctl import faults
from acidctl.acid.dirname import partition_keys_lower
from acidctl.compact import publish as pub
from acidctl.compact.engine import SPARK, choose_engine
from acidctl.compact.lock import LockSet
from acidctl.compact.planner import MAJOR, MINOR, PartitionPlan, plan_partition, refusal_error
from acidctl.compact.report import finish_report, partition_record
from acidctl.errors import NotFoundError, UsageError
from acidctl.units import noun, plural

if TYPE_CHECKING:
    from acidctl.acid.initiator import Thresholds
    from acidctl.acid.writeids import TxnList, WriteIdList


@dataclasses.dataclass
class CompactOptions:
    mode: str | None  # major | minor | None (with due: the Initiator's choice)
    reader: WriteIdList  # the reader's snapshot
    txns: TxnList | None = None  # Hive 4 visibility
    hive_version: int = 3
    partitions: list[str] | None = None
    #: is the table partitioned, as the metastore says (None: not known without listing it)
    partitioned: bool | None = None
    due: bool = False
    thresholds: Thresholds | None = None  # the Initiator's (None: Hive's defaults)
    aborted_txn_counts: dict | None = None  # metastore: aborted txns per partition (None: unknown)
    insert_only: bool = False
    visibility_txn: int | Callable | None = None
    columns: list[str] | None = None
    columns_coln_only: bool = False  # rename only row fields named _colN (metastore names)
    engine: str = "auto"  # auto | spark | local (acidctl.compact.engine)
    local_max_bytes: int | str | None = None  # auto: the input size up to which local runs (None: env/default)
    master: str = "local[*]"
    spark_conf: dict | None = None
    break_lock: bool = False
    allow_non_atomic_publish: bool = False  # publish even when readers could see it half done
    skip_unreadable_files: bool = False  # compact without reader-visible files it cannot read (listed)
    dry_run: bool = False  # plan only: no lock, no staging, no recovery, no metastore
    hidden_until_commit: bool = False  # Hive 4: the _v<txn> output's txn commits after publishing


def _normalize_partition(spec: str) -> str:
    """``--partition`` as the directory Hive names (keys lower-case: Hive column names are
    case-insensitive); the listings are keyed the same way (:func:`_by_partition`)."""
    parts = [p.strip() for p in spec.strip().strip("/").split("/") if p.strip()]
    for p in parts:
        if "=" not in p:
            raise UsageError(f"--partition expects k=v[/k2=v2], got {spec!r}")
    return partition_keys_lower("/".join(parts))


def _by_partition(listings: list) -> dict:
    """Listings by partition name with lower-case keys (None: an unpartitioned table)."""
    return {partition_keys_lower(lst.partition) if lst.partition else lst.partition: lst for lst in listings}


def select_partitions(tfs, listings: list, partitions: list[str] | None) -> list:
    """The listings ``--partition`` names, in the order given (every listing without it); keys in
    any case. Shared by full-ACID and insert-only runs. NotFoundError naming the partitions there are."""
    if not partitions:
        return listings
    by_name = _by_partition(listings)
    wanted = [_normalize_partition(p) for p in partitions]
    missing = [p for p in wanted if p not in by_name]
    if missing:
        raise NotFoundError(
            f"partition {missing[0]} not found under {tfs.display(tfs.root)}",
            hint="partitions: " + (", ".join(str(k) for k in by_name) or "none (unpartitioned)"),
        )
    return [by_name[p] for p in wanted]


def not_due_plan(lst, mode: str | None, recommendation) -> PartitionPlan:
    """The plan of a partition ``--due`` leaves alone (the Initiator recommends nothing)."""
    from acidctl.acid.initiator import NONE

    return PartitionPlan(
        lst.partition,
        lst.fs_path or lst.path,
        lst.path,
        mode or NONE,
        "not-due",
        "not due: " + "; ".join(recommendation.reasons),
        recommendation=recommendation.to_dict(),
    )


def lock_scopes(tfs, partitions: list[str] | None) -> list[str | None]:
    """The partitions (``None``: the whole table) a run on ``tfs.root`` locks: the ``--partition``
    ones, the partition a partition path names, or the whole table."""
    from acidctl.compact.lock import scope

    return scope(tfs, [_normalize_partition(p) for p in partitions] if partitions else None)


def run_locks(tfs, opts, locks: LockSet | None) -> LockSet:
    """The locks of this run: ``locks`` a caller holds already (``acidctl worker`` locks a
    partition before it claims its request) — they must cover the run — or a new set: the
    ``--partition`` ones, or on a whole partitioned table the partitions a first plan (read
    only) says run (:func:`_planned_scopes`), so that a worker compacting another partition is
    no conflict. An unpartitioned table the metastore knows as one is locked whole without
    that first plan (it would list the table only to find no partition)."""
    scopes = lock_scopes(tfs, opts.partitions)
    if locks is None:
        if scopes == [None] and not opts.partitions and opts.partitioned is not False:
            scopes = _planned_scopes(tfs, opts) or scopes
        return LockSet(tfs, scopes, command="compact", break_lock=opts.break_lock)
    missing = [s for s in scopes if not locks.covers(s)]
    if missing:
        raise UsageError(f"internal: the caller's locks do not cover {missing[0] or 'the table'}")
    return locks


def _planned_scopes(tfs, opts) -> list[str | None] | None:
    """The partitions a run over a whole partitioned table would compact, from a plan made
    without any lock (it writes nothing), or None (unpartitioned, nothing to run, or the plan
    fails: the run then locks the whole table and plans again under it). The plan made under
    the locks must stay inside them (:func:`_check_locked`)."""
    from acidctl.acid.layout import list_table
    from acidctl.errors import AcidctlError

    try:
        listings = list_table(tfs)
        if not any(lst.partition for lst in listings):
            return None
        runs = [p.partition for p in _plan_all(tfs, opts, listings, placeholder=True) if p.runs]
    except AcidctlError:
        return None
    return list(runs) if runs and all(runs) else None


def _covered(tfs, lock: LockSet, partition: str | None) -> bool:
    """Whether ``lock`` covers a partition named relative to ``tfs.root`` (a partition path's
    run names its own partition ``None``)."""
    return lock.covers(lock_scopes(tfs, [partition] if partition else None)[0])


def _check_locked(tfs, lock: LockSet, plans: list) -> None:
    """A partition that became due between the first plan and the one under the locks (a write
    landed in between) is not compacted unlocked: the run refuses before it writes anything."""
    from acidctl.errors import LockConflict

    for p in plans:
        if p.runs and not _covered(tfs, lock, p.partition):
            raise LockConflict(
                f"{p.partition or 'the table'} became due while this run was planning (a write "
                "landed meanwhile); nothing was written: run the command again"
            )


def compact_table(
    tfs,
    opts: CompactOptions,
    *,
    spark=None,
    progress=None,
    registrar=None,
    notes: list | None = None,
    locks: LockSet | None = None,
) -> dict:
    """Compact the table (or the selected partitions) under ``tfs.root``; returns the report.
    ``locks``: partition locks the caller already holds (see :func:`run_locks`)."""
    from acidctl.acid.layout import list_table

    if opts.mode not in (MAJOR, MINOR, None):
        raise UsageError(f"compaction type must be major or minor, not {opts.mode!r}")
    if opts.mode is None and not opts.due:
        raise UsageError("give --major or --minor (or --due to let the Initiator thresholds decide)")
    notes = notes if notes is not None else []
    crash = faults.crash_point
    t0 = time.perf_counter()
    report: dict = {
        "path": tfs.display(tfs.root),
        "type": opts.mode or "due",
        "hive_version": opts.hive_version,
        "write_ids": str(opts.reader),
        "compactor_write_ids": str(opts.reader.for_compactor()),
        "engine": opts.engine,
        "partitions": [],
        "recovered": [],
        "notes": notes,
    }
    if opts.dry_run:
        return _dry_run(tfs, opts, report, notes, t0)
    lock = run_locks(tfs, opts, locks)
    plans: list[PartitionPlan] = []
    published: set[str] = set()
    own_session: list = []  # the Spark session this run started (stopped on Ctrl-C)
    try:
        # inside the try: a Ctrl-C right after the lock file is written still releases it
        if locks is None:
            lock.acquire()
        for b in lock.broken:
            notes.append(f"broke the lock of {b.describe()}")
        crash("after-lock")
        listings = list_table(tfs)
        if _may_run_local_pool(tfs, opts, listings):
            from acidctl.compact.local import prestart

            prestart()
        # only the partitions this run holds the locks of (another run may be publishing elsewhere)
        for lst in select_partitions(tfs, listings, opts.partitions):
            if _covered(tfs, lock, lst.partition):
                report["recovered"].extend(pub.recover(tfs, lst.fs_path or lst.path))
        if report["recovered"]:
            listings = list_table(tfs)
        # Hive 4 output is named after the compactor txn, which is opened only once the run is
        # known to go ahead: plan with a placeholder first, decide every refusal, then claim
        deferred = registrar is not None and opts.hive_version == 4 and callable(opts.visibility_txn)
        plans.extend(_plan_all(tfs, opts, listings, placeholder=deferred))
        _check_locked(tfs, lock, plans)
        faults.fire("after-plan", plans)
        crash("after-plan")

        refused = refusal_error(plans)
        if refused is not None:
            raise refused
        for p in plans:
            for sk in p.skipped:
                notes.append(f"skipped (--skip-unreadable-files): {p.display.rstrip('/')}/{sk['path']}: {sk['reason']}")
        work = [p for p in plans if p.runs]
        report["summary"] = {}
        if not work:
            report["message"] = "nothing to compact"
            return _finish(report, plans, {}, t0)
        _check_publish_safety(tfs, work, opts, notes)
        if registrar is not None:
            # every plan-time refusal is behind us: only now enqueue/claim (no trace otherwise)
            registrar.claim_all([(p.partition, p.mode) for p in work])
            if deferred:
                plans[:] = _plan_all(tfs, opts, listings)  # the same plan, named _v<compactor txn>
                refused = refusal_error(plans)
                if refused is not None:
                    raise refused
                work = [p for p in plans if p.runs]
                _check_publish_safety(tfs, work, opts, [])

        # the requests become "working" (a failure from here on is a failed compaction) only
        # when the tasks start: a Spark session that cannot start (a wrong --master, no Java)
        # hands them back instead of leaving failed rows that stop Hive's Initiator (report #2)
        metrics = _run_tasks(
            tfs,
            opts,
            work,
            report,
            spark=spark,
            progress=progress,
            own_session=own_session,
            started=registrar.start if registrar is not None else None,
        )
        by_part: dict = {}
        for m in metrics:
            by_part.setdefault(m["partition"], []).append(m)
        _check_accounting(work, by_part)
        for p in work:
            pub.check_staged(tfs, p, by_part.get(p.partition, []))
        faults.fire("before-publish", plans)
        crash("before-publish")
        for p in work:
            pub.recheck_inputs(tfs, p, required=p.obsoletes)
        for i, p in enumerate(work):
            pub.publish_registered(tfs, p, published=published, registrar=registrar)
            if progress is not None and hasattr(progress, "partition"):
                progress.partition(i + 1, len(work), p.partition)
            if i == 0:
                crash("after-publish")
        crash("after-publish-all")
        report["message"] = "compacted"
        return _finish(report, plans, by_part, t0)
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt) and own_session:
            from acidctl.compact.spark import stop_session

            stop_session(own_session[0])  # the JVM ends before acidctl does
        from acidctl.compact.local import interrupts_deferred

        with interrupts_deferred():  # a second Ctrl-C does not cut the staging's removal short
            pub.discard_unpublished(tfs, plans, published, e, registrar=registrar)
        raise
    finally:
        _stop_prestarted()  # nothing ran in it (nothing to compact, an error, Ctrl-C)
        crash("before-unlock")
        lock.release()  # a caller's locks stay held (LockSet(owned=False))


def _run_tasks(
    tfs, opts: CompactOptions, work: list, report: dict, *, spark, progress, own_session: list, started=None
) -> list:
    """Staging prepared, the engine chosen (``report``: engine, engine_choice, spark,
    task_seconds) and every bucket task run on it; a Spark session this run starts goes into
    ``own_session``; ``started()`` is called once the engine is up, just before the tasks run;
    the first task error is raised."""
    for p in work:
        pub.prepare(tfs, p)
    tasks = [t for p in work for t in p.tasks]
    choice = choose_engine(
        opts.engine,
        bytes_in=sum(p.input_bytes for p in work),
        tasks=len(tasks),
        threshold=opts.local_max_bytes,
        master=opts.master,
        protocol=tfs.protocol,
    )
    report["engine"] = choice.engine
    report["engine_choice"] = choice.to_dict()
    if choice.engine == SPARK or choice.workers <= 1 or len(tasks) <= 1:
        _stop_prestarted()  # no worker pool: not through the Spark job
    run_t0 = time.perf_counter()
    if choice.engine == SPARK and tasks:
        from acidctl.compact.spark import get_or_create_session, run_tasks

        s0 = time.perf_counter()
        if spark is None:
            spark = get_or_create_session(opts.master, opts.spark_conf)
            own_session.append(spark)
        report["spark"] = {
            "master": spark.sparkContext.master,
            "app_id": spark.sparkContext.applicationId,
            "startup_seconds": round(time.perf_counter() - s0, 3),
        }
        run_t0 = time.perf_counter()
        if started is not None:
            started()
        metrics = run_tasks(spark, tasks, progress=progress)
    else:
        from acidctl.compact.local import run_tasks as run_local

        if started is not None:
            started()
        metrics = run_local(tasks, workers=choice.workers, progress=progress)
    report["task_seconds"] = round(time.perf_counter() - run_t0, 3)
    for m in metrics:
        if "error" in m:
            raise _reraise(m["error"])
    return metrics


def _stop_prestarted() -> None:
    import sys

    local = sys.modules.get("acidctl.compact.local")  # not imported: nothing was started
    if local is not None:
        local.stop_prestarted()


def _may_run_local_pool(tfs, opts: CompactOptions, listings: list) -> bool:
    """Could this run use local worker processes, so that their fork server is worth starting
    before planning? Not for ``--engine spark``, a cluster master under auto, a process-local
    filesystem, one core, or less on disk than :func:`choose_engine` runs a pool for (the
    listed bytes bound the input bytes from above)."""
    from acidctl.compact.engine import LOCAL, PROCESS_LOCAL_PROTOCOLS, cores, pool_min_bytes

    if opts.engine == SPARK or tfs.protocol in PROCESS_LOCAL_PROTOCOLS or cores() < 2:
        return False
    if opts.engine != LOCAL and not opts.master.startswith("local"):
        return False
    listed = sum(e.total_bytes for lst in listings for e in lst.entries)
    return listed >= pool_min_bytes()


def _plan_all(tfs, opts: CompactOptions, listings: list, *, placeholder: bool = False) -> list[PartitionPlan]:
    """Plan every selected partition (the Initiator's choice with ``due``). ``placeholder``: name
    Hive 4 output with :data:`DRY_RUN_TXN` instead of asking for the compactor txn."""
    from acidctl.acid.initiator import NONE, compactor_state, recommend

    plans: list[PartitionPlan] = []
    for lst in select_partitions(tfs, listings, opts.partitions):
        mode = opts.mode
        rec = None
        if opts.due:
            cst = compactor_state(lst, opts.reader, txns=opts.txns, hive_version=opts.hive_version)
            aborted = opts.aborted_txn_counts.get(lst.partition, 0) if opts.aborted_txn_counts is not None else None
            r = recommend(
                cst,
                thresholds=opts.thresholds,
                insert_only=opts.insert_only,
                hive_version=opts.hive_version,
                aborted_txn_count=aborted,
            )
            rec = r.to_dict()
            if r.type == NONE:
                plans.append(not_due_plan(lst, mode, r))
                continue
            mode = mode or r.type
        if mode is None:  # CompactOptions: a mode, or due (which chose one above)
            raise UsageError("give --major or --minor (or --due)")
        vis = opts.visibility_txn
        if (opts.dry_run and opts.hive_version == 4 and not vis) or placeholder:
            vis = DRY_RUN_TXN
        p = plan_partition(
            tfs,
            lst,
            mode=mode,
            reader=opts.reader,
            txns=opts.txns,
            hive_version=opts.hive_version,
            visibility_txn=_LazyVis(vis, lst.partition, mode),
            columns=opts.columns,
            columns_coln_only=opts.columns_coln_only,
            skip_unreadable=opts.skip_unreadable_files,
        )
        p.recommendation = rec
        plans.append(p)
    return plans


#: a dry run names Hive 4 output with a placeholder compactor txn (shown as ``_v<txn>``)
DRY_RUN_TXN = 9_999_999


def _dry_run(tfs, opts: CompactOptions, report: dict, notes: list, t0: float) -> dict:
    """The full plan without writing anything: no lock, no staging, no recovery, no metastore."""
    from acidctl.acid.layout import list_table

    listings = list_table(tfs)
    pending = [it["display"] for lst in listings for it in pub.interrupted(tfs, lst.fs_path or lst.path)]
    if pending:
        notes.append(
            f"{noun(len(pending), 'interrupted publication')} the next compact or clean --execute finishes first: "
            + ", ".join(pending)
        )
    plans = _plan_all(tfs, opts, listings)
    refused = refusal_error(plans)
    work = [p for p in plans if p.runs]
    for p in work:
        p.publish, why = pub.safety(tfs, p, hidden_until_commit=opts.hive_version == 4 and opts.hidden_until_commit)
        if why and not opts.allow_non_atomic_publish:
            p.refusals.append(
                {
                    "path": "",
                    "reason": f"cannot be published atomically: {why}",
                    "fix": "--major, or --allow-non-atomic-publish",
                }
            )
    from acidctl.compact.naming import VIS_PLACEHOLDER

    placeholder = f"_v{DRY_RUN_TXN:07d}"
    parts = []
    for p in plans:
        d = p.to_dict()
        # report #8: the placeholder txn never shows; the name says what the suffix will be
        d["outputs"] = [o.replace(placeholder, VIS_PLACEHOLDER) for o in d["outputs"]]
        d["message"] = (d.get("message") or "").replace(placeholder, VIS_PLACEHOLDER)
        d["bytes_in"] = p.input_bytes
        d["publish"] = p.publish
        d["tasks"] = [
            {
                "bucket": t.bucket,
                "inserts": [tfs.display(s.path) for s in t.inserts],
                "deletes": [tfs.display(s.path) for s in t.deletes],
            }
            for t in p.tasks
        ]
        parts.append(d)
    any_refused = refused is not None or any(p.refusals for p in work)
    choice = choose_engine(
        opts.engine,
        bytes_in=sum(p.input_bytes for p in work),
        tasks=sum(len(p.tasks) for p in work),
        threshold=opts.local_max_bytes,
        master=opts.master,
        protocol=tfs.protocol,
    )
    report["engine"] = choice.engine
    report["engine_choice"] = choice.to_dict()
    report.update(
        {
            "dry_run": True,
            "partitions": parts,
            "refused": any_refused,
            "message": "dry run: refused"
            if any_refused
            else ("dry run: nothing to compact" if not work else "dry run: would compact"),
            "summary": {
                "partitions": len(plans),
                "would_compact": len(work),
                "bytes_in": sum(p.input_bytes for p in work),
                "refused": sum(1 for p in plans if p.status == "refused" or p.refusals),
                "seconds": round(time.perf_counter() - t0, 3),
            },
        }
    )
    if refused is not None:
        report["refusal"] = str(refused)
        report["refusal_hint"] = refused.hint
    return report


def _check_accounting(work: list[PartitionPlan], by_part: dict) -> None:
    """Every row read is accounted for (issue #9), else refuse before publication.

    rows out = rows in − deleted − rows of aborted write ids; rows of write ids the compactor
    cannot see (above its high-water mark: open, or not allocated yet) and events of another
    kind than the output holds (ACID v1 update events) are never dropped or folded: they make
    the compaction refuse. Zero rows out from non-empty input is refused unless every row is
    accounted for by deletes or real aborts.
    """
    from acidctl.errors import RefusedError

    for p in work:
        ms = by_part.get(p.partition, [])
        where = f"partition {p.partition}" if p.partition else p.display
        invisible = sum(m.get("invisible_dropped", 0) for m in ms)
        other = sum(m.get("other_events_dropped", 0) for m in ms)
        if invisible:
            raise RefusedError(
                f"{p.mode} compaction of {where} refused: {plural(invisible, 'event')} {'carries' if invisible == 1 else 'carry'} write ids above the "
                f"compactor's high-water mark (open, or not allocated yet), so they are neither committed nor "
                f"aborted and must not be dropped or folded; nothing was published",
                hint="check the snapshot (--write-ids / the metastore): an ACID file outside a delta directory "
                "holds rows of write ids the snapshot does not know",
            )
        if other:
            raise RefusedError(
                f"{p.mode} compaction of {where} refused: {plural(other, 'event')} of an operation the output cannot "
                "hold (e.g. ACID v1 update events); nothing was published",
                hint="compact it with Hive 2's own compactor before upgrading, or inspect with `acidctl dump --meta`",
            )
        rows_in = sum(m["rows_in"] for m in ms)
        rows_out = sum(m["rows_out"] for m in ms)
        accounted = sum(m["deletes_applied"] + m["aborted_dropped"] for m in ms)
        if p.mode == MAJOR and rows_out != rows_in - accounted:
            raise RefusedError(
                f"major compaction of {where} refused: {rows_in} rows in, {rows_out} out, but only "
                f"{accounted} deleted or aborted; nothing was published"
            )
        if rows_in and not rows_out and rows_in != accounted and p.mode == MAJOR:
            raise RefusedError(f"major compaction of {where} refused: {rows_in} rows in and none out")


def _check_publish_safety(tfs, work: list[PartitionPlan], opts: CompactOptions, notes: list) -> None:
    """Refuse (before anything is written) a publication a reader could see half done, unless
    the user allowed it; see :mod:`acidctl.compact.publish`."""
    from acidctl.errors import RefusedError

    hidden = opts.hive_version == 4 and opts.hidden_until_commit
    unsafe = []
    for p in work:
        p.publish, why = pub.safety(tfs, p, hidden_until_commit=hidden)
        if why:
            unsafe.append((p, why))
    if not unsafe:
        return
    p, why = unsafe[0]
    where = f"partition {p.partition}" if p.partition else p.display
    if not opts.allow_non_atomic_publish:
        more = f" (and {plural(len(unsafe) - 1, 'more partition')})" if len(unsafe) > 1 else ""
        raise RefusedError(
            f"{opts.mode or p.mode} compaction of {where}{more} cannot be published atomically: {why}",
            hint="--major writes one directory; --allow-non-atomic-publish publishes anyway, as Hive 3's "
            "compactor does: a reader in between, or a crash, sees a wrong snapshot until the next "
            "compact or clean --execute finishes it",
        )
    for p, why in unsafe:
        notes.append(f"non-atomic publication of {p.partition or p.display} (allowed): {why}")


class _LazyVis:
    """The compactor txn of a partition, asked for only when it has something to compact."""

    def __init__(self, vis, partition, mode):
        self.vis, self.partition, self.mode = vis, partition, mode

    def __call__(self):
        if callable(self.vis):
            return self.vis(self.partition, self.mode)
        return self.vis


def _reraise(err: dict) -> Exception:
    import importlib

    from acidctl.errors import AcidctlError as Base

    try:
        cls = getattr(importlib.import_module(err.get("module", "acidctl.errors")), err["type"])
        if isinstance(cls, type) and issubclass(cls, Base):
            return cls(err["message"])
    except Exception:
        pass
    return Base(err.get("message", "task failed"))


def _finish(report: dict, plans: list[PartitionPlan], by_part: dict, t0: float) -> dict:
    rows = []
    for p in plans:
        ms = by_part.get(p.partition, []) if p.runs else []
        rows.append(
            partition_record(
                p,
                {
                    "buckets": len(p.tasks) if p.runs else 0,
                    "rows_in": sum(m["rows_in"] for m in ms),
                    "delete_events_in": sum(m["delete_events_in"] for m in ms),
                    "rows_out": sum(m["rows_out"] for m in ms),
                    "delete_events_out": sum(m["delete_events_out"] for m in ms),
                    "deletes_applied": sum(m["deletes_applied"] for m in ms),
                    "aborted_dropped": sum(m["aborted_dropped"] for m in ms),
                    "invisible_dropped": sum(m.get("invisible_dropped", 0) for m in ms),
                    "bytes_in": p.input_bytes if p.runs else 0,
                    "bytes_out": sum(m["bytes_out"] for m in ms),
                    "task_seconds": round(sum(m.get("seconds", 0) for m in ms), 3),
                    "peak_task_memory_bytes": max((m.get("task_memory_bytes", 0) for m in ms), default=0),
                    "peak_task_rss_bytes": max((m.get("peak_rss_bytes", 0) for m in ms), default=0),
                    "verified_rows": sum(m.get("verified_rows", 0) for m in ms),
                },
                input_dirs=list(p.inputs),
            )
        )
    return finish_report(report, rows, t0)
