"""Collect what the doctor rules look at: the metastore facts and, for every ACID table and
partition they name, the directory listing classified as Hive's readers, Initiator and Cleaner
see it.

Directory listings run in a bounded thread pool (one task per table, ``workers`` at a time)
over any filesystem :class:`acidctl.fs.TableFS` supports; every ``ls`` call is counted (the
figure ``bench/doctor.py`` reports). Nothing is written.

The result (:class:`Scan`) is plain data: per partition the directories with their roles, sizes
and write-id ranges, the Initiator's recommendation and the directory checks of
``acidctl state`` (directory-state.md §9), so that :mod:`acidctl.doctor.findings` stays pure.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import threading
import types
import time
from typing import Any, Callable

from acidctl.acid.dirname import PUBLISHED_DIR
from acidctl.acid.writeids import TxnList
from acidctl.doctor.facts import TableRow, Warehouse
from acidctl.findings import Finding
from acidctl.units import plural

#: default number of tables listed at the same time
DEFAULT_WORKERS = 8
#: a data file smaller than this counts as a small file (HDFS block-size thinking: 16 MiB)
SMALL_FILE_BYTES = 16 << 20


@dataclasses.dataclass
class PartitionScan:
    db: str
    table: str
    partition: str | None
    path: str
    exists: bool = True
    in_metastore: bool = True
    on_disk: bool = True
    dirs: list[dict] = dataclasses.field(default_factory=list)
    recommendation: dict | None = None
    checks: list[Finding] = dataclasses.field(default_factory=list)
    max_write_id_on_disk: int = 0
    error: str | None = None
    #: what the compactor reads (acidctl.compact.planner.compactor_deltas on the compactor's
    #: getAcidState): ``why`` names the output from it with acidctl.compact.naming
    compactor: dict | None = None
    #: what ``clean --execute --min-age 0`` would do with each obsolete/aborted directory
    #: (acidctl.compact.clean.cleaner_decisions, with the partition's ready-for-cleaning rows,
    #: before any hold): ``[{"name", "action", "reason", "age"}]``
    clean: list = dataclasses.field(default_factory=list)
    #: outputs of acidctl's own publications in this partition (``.acidctl-published/``
    #: records, acidctl.compact.publish): output directory name → the record's type and time
    published: dict = dataclasses.field(default_factory=dict)

    @property
    def spec(self) -> str:
        """``db.table[/part]``: how commands name this partition."""
        return f"{self.db}.{self.table}" + (f"/{self.partition}" if self.partition else "")

    def to_dict(self) -> dict:
        return {
            "db": self.db,
            "table": self.table,
            "partition": self.partition,
            "path": self.path,
            "exists": self.exists,
            "in_metastore": self.in_metastore,
            "on_disk": self.on_disk,
            "dirs": self.dirs,
            "recommendation": self.recommendation,
            "checks": [f.to_dict() for f in self.checks],
            "max_write_id_on_disk": self.max_write_id_on_disk,
            "error": self.error,
            "compactor": self.compactor,
            "clean": self.clean,
            "published": self.published,
        }


@dataclasses.dataclass
class Scan:
    warehouse: Warehouse
    tables: list[TableRow]  # the ACID tables selected
    partitions: list[PartitionScan]
    listings: int = 0  # TableFS.ls calls
    seconds: float = 0.0
    skipped_tables: list[str] = dataclasses.field(default_factory=list)  # --since


def select_tables(wh: Warehouse, *, db_glob: str = "*", table_glob: str = "*") -> list[TableRow]:
    """The transactional tables whose names match the globs (case-insensitive, like Hive names)."""
    out = []
    for t in wh.tables:
        if not t.transactional:
            continue
        if fnmatch.fnmatchcase(t.db, db_glob.lower()) and fnmatch.fnmatchcase(t.table, table_glob.lower()):
            out.append(t)
    return out


def require_selection(wh: Warehouse, tables: list[TableRow], *, db_glob: str, table_glob: str) -> None:
    """``--db`` / ``--table`` that select no ACID table are not found (exit 3), as ``show tables
    DB`` is: a typo in a monitoring job must not read as a clean warehouse. Without either
    (the whole warehouse) an empty metastore is a pass."""
    from acidctl.errors import TableNotFound

    if tables or (db_glob == "*" and table_glob == "*"):
        return
    what = " ".join(f"{opt} {g!r}" for opt, g in (("--db", db_glob), ("--table", table_glob)) if g != "*")
    other = sum(
        1
        for t in wh.tables
        if fnmatch.fnmatchcase(t.db, db_glob.lower()) and fnmatch.fnmatchcase(t.table, table_glob.lower())
    )
    raise TableNotFound(
        f"no ACID table matches {what} in the metastore"
        + (f" ({plural(other, 'non-transactional table')} {'does' if other == 1 else 'do'})" if other else ""),
        hint="acidctl show tables lists the ACID tables",
    )


def recent_activity_ms(wh: Warehouse) -> dict[tuple, int]:
    """(db, table) → the newest metastore trace of the table: a completed write, a queue or
    history row, an aborted txn or an open/aborted txn holding one of its write ids."""
    out: dict[tuple, int] = {}

    def see(key, ms):
        if ms:
            out[key] = max(out.get(key, 0), int(ms))

    for (d, tn, _p), v in wh.completed_components.items():
        see((d, tn), v.get("newest"))
    for r in wh.queue_short + wh.history_short:
        for k in ("start", "end", "enqueue_time", "commit_time"):
            see((r["database"], r["table"]), r.get(k))
    for (d, tn, _p), v in wh.aborted_components.items():
        see((d, tn), v.get("oldest_started"))
    for key, ids in wh.invalid_write_ids.items():
        for _w, txn, _s in ids:
            tx = wh.txns.get(txn) if txn else None
            if tx:
                see(key, tx["last_heartbeat"] or tx["started"])
    return out


def collect(
    ms,
    table_fs: Callable[[str], Any],
    *,
    db_glob: str = "*",
    table_glob: str = "*",
    since_seconds: float | None = None,
    workers: int | None = None,
    now_ms: int | None = None,
    grace_seconds: float = 86400.0,
) -> Scan:
    """Read the metastore (:func:`acidctl.doctor.facts.read_warehouse`) and list every selected
    ACID table. ``table_fs(url)`` builds a :class:`~acidctl.fs.TableFS` (the CLI passes
    ``settings.table_fs`` so ``--fs-option`` applies)."""
    from concurrent.futures import ThreadPoolExecutor

    from acidctl.doctor.facts import read_warehouse

    t0 = time.perf_counter()
    wh = read_warehouse(ms, now_ms=now_ms)
    tables = select_tables(wh, db_glob=db_glob, table_glob=table_glob)
    require_selection(wh, tables, db_glob=db_glob, table_glob=table_glob)
    skipped: list[str] = []
    if since_seconds is not None:
        if not wh.has("COMPLETED_TXN_COMPONENTS"):
            # writes are not known (Thrift): skipping the tables without queue or txn activity
            # would pass what was never looked at
            from acidctl.errors import NeedsDatabase

            raise NeedsDatabase(
                "not possible over a Thrift metastore: --since needs COMPLETED_TXN_COMPONENTS (when each "
                "table was last written), which the Thrift API does not return",
                hint="leave out --since (every table is listed), or point --metastore at the metastore's database",
            )
        if not wh.has("CTC_TIMESTAMP"):
            from acidctl.errors import UsageError

            raise UsageError(
                "--since needs CTC_TIMESTAMP (when each table was last written), which a Hive 2.3 metastore "
                "does not record",
                hint="leave out --since: every table is listed",
            )
        keep = []
        activity = recent_activity_ms(wh)
        for t in tables:
            act = activity.get((t.db, t.table))
            if act is not None and act >= wh.now_ms - since_seconds * 1000:
                keep.append(t)
            else:
                skipped.append(t.full_name)
        tables = keep
    txns = wh.txn_list()
    if workers is None:
        workers = auto_workers(tables)
    parts: list[PartitionScan] = []
    listings = 0
    global _JOB
    _JOB = (wh, tables, table_fs, txns, grace_seconds)
    # the scan allocates millions of small, acyclic objects (listing entries, classified
    # directories): the cyclic GC's generation-0 passes over them cost 10-25 % of the CPU time
    # and free nothing, so collect rarely while it runs (forked workers inherit the setting)
    import gc

    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], 50_000), *thresholds[1:])
    try:
        chunks = _chunks(len(tables), workers)
        if workers > 1 and len(tables) >= 2 * workers and _is_local(tables) and _can_fork():
            # local disks: listing and classifying are CPU-bound Python, so processes (forked:
            # they inherit the facts read above, nothing is pickled on the way in) are what
            # actually runs in parallel; threads would only take turns on the GIL
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
                results = list(pool.map(_scan_chunk, chunks))
        elif workers > 1 and len(tables) > 1:
            # remote filesystems: threads overlap the listing round trips
            with ThreadPoolExecutor(max_workers=workers) as pool:
                results = list(pool.map(_scan_chunk, [[i] for i in range(len(tables))]))
        else:
            results = [_scan_chunk(list(range(len(tables))))]
    finally:
        _JOB = None
        gc.set_threshold(*thresholds)
    for res, n in results:
        parts.extend(res)
        listings += n
    parts.sort(key=lambda p: (p.db, p.table, p.partition or ""))
    return Scan(
        warehouse=wh,
        tables=tables,
        partitions=parts,
        listings=listings,
        seconds=time.perf_counter() - t0,
        skipped_tables=skipped,
    )


#: (warehouse, tables, table_fs, txns, grace_seconds) of the collect() call running now
_JOB: tuple[Warehouse, list[TableRow], Callable[[str], Any], TxnList, float] | None = None


def _scan_chunk(indices: list[int]) -> tuple[list[PartitionScan], int]:
    if _JOB is None:  # only collect() runs chunks, with _JOB set for the call
        raise RuntimeError("_scan_chunk outside collect()")
    wh, tables, table_fs, txns, grace = _JOB
    counter = _Counter()
    out: list[PartitionScan] = []
    for i in indices:
        out.extend(scan_table(wh, tables[i], table_fs, counter=counter, txns=txns, grace_seconds=grace))
    return out, counter.n


def _chunks(n: int, workers: int) -> list[list[int]]:
    """Table indices in interleaved chunks (about 4 per worker), order restored by the caller's
    ``map``: neighbouring tables spread over the workers."""
    k = max(1, min(n, workers * 4))
    return [list(range(j, n, k)) for j in range(k) if j < n]


def _is_local(tables: list[TableRow]) -> bool:
    return all((t.location or "").startswith(("file:", "/")) for t in tables)


def _can_fork() -> bool:
    import multiprocessing
    import os

    return hasattr(os, "fork") and "fork" in multiprocessing.get_all_start_methods()


def auto_workers(tables: list[TableRow]) -> int:
    """Threads for listing: ``DEFAULT_WORKERS`` on remote filesystems (the threads overlap
    network latency); on local disks the work is CPU-bound Python, where more threads than
    cores this process may run on (its affinity mask) only add GIL contention."""
    from acidctl.machine import usable_cpus

    return max(1, min(DEFAULT_WORKERS, usable_cpus())) if _is_local(tables) else DEFAULT_WORKERS


class _Counter:
    def __init__(self):
        self.n = 0
        self._lock = threading.Lock()

    def wrap(self, tfs):
        ls = tfs.ls

        def counted(path):
            with self._lock:
                self.n += 1
            return ls(path)

        tfs.ls = counted  # instance attribute: list_table calls tfs.ls(...)
        return tfs


def scan_table(
    wh: Warehouse, t: TableRow, table_fs, *, counter: _Counter | None = None, txns=None, grace_seconds: float = 86400.0
) -> list[PartitionScan]:
    """Every partition of one table: listed on disk and/or named by the metastore."""
    from acidctl.acid.layout import list_partition, list_table
    from acidctl.errors import AcidctlError
    from acidctl.target import location_url

    counter = counter or _Counter()
    if not t.location:
        return [PartitionScan(t.db, t.table, None, "", exists=False, error="the table has no location")]
    try:
        tfs = counter.wrap(table_fs(location_url(t.location)))
    except AcidctlError as e:
        return [PartitionScan(t.db, t.table, None, t.location, error=str(e))]
    root = tfs.root
    try:
        exists = tfs.exists(root)
    except AcidctlError as e:
        return [PartitionScan(t.db, t.table, None, tfs.display(root), error=str(e))]
    if not exists:
        return [PartitionScan(t.db, t.table, None, tfs.display(root), exists=False)]
    try:
        listings = list_table(tfs)
    except AcidctlError as e:
        return [PartitionScan(t.db, t.table, None, tfs.display(root), error=str(e))]
    partitioned = bool(t.partition_keys)
    wl = wh.write_id_list(t.db, t.table)
    out: list[PartitionScan] = []
    seen: set[str | None] = set()
    for lst in listings:
        part = lst.partition
        if partitioned and part is None:
            # a partitioned table whose root holds data directly (or nothing yet)
            if not lst.entries:
                continue
        seen.add(part)
        in_ms = (part in t.partitions) if partitioned else True
        out.append(_classify(wh, t, lst, txns=txns, in_metastore=in_ms, grace_seconds=grace_seconds, wl=wl, tfs=tfs))
    if partitioned:
        for pname, ploc in sorted(t.partitions.items()):
            if pname in seen:
                continue
            if not ploc:
                out.append(PartitionScan(t.db, t.table, pname, "", exists=False, error="no location"))
                continue
            try:
                ptfs = counter.wrap(table_fs(location_url(ploc)))
                if not ptfs.exists(ptfs.root):
                    out.append(PartitionScan(t.db, t.table, pname, ptfs.display(ptfs.root), exists=False))
                    continue
                lst = list_partition(ptfs, ptfs.root, partition=pname)
            except AcidctlError as e:
                out.append(PartitionScan(t.db, t.table, pname, ploc, error=str(e)))
                continue
            out.append(
                _classify(wh, t, lst, txns=txns, in_metastore=True, grace_seconds=grace_seconds, wl=wl, tfs=ptfs)
            )
    return out


def _classify(
    wh: Warehouse, t: TableRow, lst, *, txns, in_metastore: bool, grace_seconds: float, wl=None, tfs=None
) -> PartitionScan:
    from acidctl.acid.acidstate import Kind, get_acid_state
    from acidctl.acid.checks import MetastoreFacts, check_partition
    from acidctl.acid.initiator import Thresholds, compactor_state, recommend
    from acidctl.errors import AcidctlError

    ps = PartitionScan(t.db, t.table, lst.partition, lst.path, in_metastore=in_metastore)
    hv = wh.hive_version
    wl = wl if wl is not None else wh.write_id_list(t.db, t.table)
    key = (t.db, t.table, lst.partition)
    ab = wh.aborted_components.get(key, {})
    try:
        st = get_acid_state(lst, wl, txns=txns if hv == 4 else None, hive_version=hv, insert_only=t.insert_only)
        cst = compactor_state(lst, wl, txns=txns if hv == 4 else None, hive_version=hv)
        thresholds = Thresholds.from_table_properties(t.params)
        rec = recommend(
            cst,
            thresholds=thresholds,
            insert_only=t.insert_only,
            hive_version=hv,
            aborted_txn_count=ab.get("txns", 0),
            no_auto_compaction=t.no_auto_compaction(hv)[0],
        )
    except AcidctlError as e:
        ps.error = str(e)
        return ps
    ps.recommendation = rec.to_dict()
    try:
        ps.compactor = compactor_inputs(
            lst, wl, txns=txns if hv == 4 else None, hive_version=hv, insert_only=t.insert_only
        )
    except AcidctlError:
        ps.compactor = None
    highest = wh.highest_write_ids(t.db, t.table)
    stale = stale_open_write_ids(wh, t)
    facts = MetastoreFacts(
        hive_version=hv,
        table_hwm=wl.hwm,
        # unknown (None: check S11 not run) where TXN_COMPONENTS cannot be read (Thrift)
        aborted_txn_count=ab.get("txns", 0) if wh.has("TXN_COMPONENTS") else None,
        compaction_highest_write_ids=highest,
        txns=txns,
        stale_open_write_ids=stale,
    )
    try:
        ps.checks = check_partition(
            lst,
            st,
            hive_version=hv,
            recommendation=rec,
            facts=facts,
            txns=txns,
            now=wh.now_ms / 1000.0,
            grace_seconds=grace_seconds,
        )
        if hv == 2:  # as `state` does (acid/report.py): what Hive 2.3 writes is not damage (B.3)
            from acidctl.acid.hive2 import hive2_findings

            ps.checks = hive2_findings(ps.checks)
        if t.insert_only:  # as `state` does (acid/report.py): no M01 etc. for MM data (spec A.4)
            from acidctl.mm.checks import NOT_FOR_MM

            ps.checks = [f for f in ps.checks if f.check not in NOT_FOR_MM]
    except AcidctlError as e:
        ps.error = str(e)
    try:
        ps.clean = clean_preview(wh, t, lst, wl, txns=txns if hv == 4 else None, tfs=tfs)
    except AcidctlError:
        ps.clean = []
    # acidctl's own publications: a compaction run without registering it (--read-only,
    # --no-register, a thrift:// metastore) is acidctl's work, not an unknown compactor's
    if tfs is not None and any(e.name.rstrip("/") == PUBLISHED_DIR for e in lst.entries):
        from acidctl.compact.publish import read_records

        try:
            for r in read_records(tfs, lst.fs_path or lst.path):
                for name in r.get("outputs") or []:
                    ps.published.setdefault(name, {"type": r.get("type"), "time": r.get("time")})
        except (OSError, AcidctlError):
            pass  # unreadable records: the directories are judged as anyone's
    base_bytes = st.base.bytes if st.base is not None else 0
    for c in st.entries:
        if c.kind in (Kind.HIDDEN,):
            continue
        acid_dir = c.kind in (Kind.BASE, Kind.DELTA, Kind.DELETE_DELTA)
        files = [f for f in c.entry.data_files() if not f.name.endswith("_flush_length")] if c.entry.is_dir else []
        ps.dirs.append(
            {
                "name": c.name,
                "kind": c.kind.value,
                "role": c.role.value,
                "min_write_id": c.min_write_id,
                "max_write_id": c.max_write_id,
                "statement_id": c.statement_id,
                "visibility_txn": c.visibility,
                "bytes": c.bytes,
                "files": len(files),
                "small_files": sum(1 for f in files if f.size < SMALL_FILE_BYTES),
                "has_version_file": c.entry.has_file("_orc_acid_version") if c.entry.is_dir else None,
                "nested": bool(c.entry.nested or c.entry.subdirs) if acid_dir else False,
                "mtime": c.entry.mtime,
                "compacted": c.compacted,
            }
        )
        if c.max_write_id is not None and c.max_write_id > ps.max_write_id_on_disk and c.max_write_id < 2**62:
            ps.max_write_id_on_disk = c.max_write_id
    ps.dirs.sort(key=lambda d: (d["min_write_id"] if d["min_write_id"] is not None else -1, d["name"]))
    ps.recommendation["base_bytes_reader"] = base_bytes
    return ps


def stale_open_write_ids(wh: Warehouse, t: TableRow) -> frozenset[int]:
    """Open write ids of the table whose txn has not heartbeated for 5 minutes (check S04). Hive
    2.3: the open txns themselves (txn ids are write ids). A txn of 0 is one the source did not
    name (Thrift's get_valid_write_ids): never judged stale."""
    cutoff = wh.now_ms - 300_000
    if wh.hive_version == 2:
        return frozenset(i for i, x in wh.txns.items() if x["state"] == "o" and x["last_heartbeat"] < cutoff)
    return frozenset(
        w
        for w, txn, s in wh.invalid_write_ids.get((t.db, t.table), [])
        if s == "o" and txn and wh.txns.get(txn, {}).get("last_heartbeat", 0) < cutoff
    )


def compactor_inputs(lst, wl, *, txns, hive_version: int, insert_only: bool) -> dict:
    """The compactor's view of one partition, as plain data: its hwm, the deltas it reads (the
    planner's :func:`~acidctl.compact.planner.compactor_deltas`: aborted-only ones below the hwm
    included), whether it has a base / originals."""
    from acidctl.acid.acidstate import Kind, get_acid_state
    from acidctl.compact.planner import compactor_deltas

    cwl = wl if wl.compactor else wl.for_compactor()
    cst = get_acid_state(lst, cwl, txns=txns, hive_version=hive_version, insert_only=insert_only)
    if insert_only:
        deltas = [d for d in cst.deltas if d.kind is Kind.DELTA]
    else:
        deltas = compactor_deltas(cst)
    aborted = {c.name for c in cst.aborted}
    return {
        "hwm": cwl.hwm,
        "deltas": [
            {
                "name": d.name,
                "min_write_id": d.min_write_id,
                "max_write_id": d.max_write_id,
                "delete": d.kind is Kind.DELETE_DELTA,
                "compacted": d.statement_id is None,
                "aborted": d.name in aborted,
            }
            for d in deltas
        ],
        "base": cst.base.name if cst.base is not None else None,
        "originals": sorted({o.rel.split("/", 1)[0] for o in cst.originals}),
        "insert_only": insert_only,
    }


def clean_preview(wh: Warehouse, t: TableRow, lst, wl, *, txns, tfs=None) -> list[dict]:
    """``clean``'s own decisions for one partition (:func:`acidctl.compact.clean.cleaner_decisions`)
    with ``--min-age 0`` and the registered compactions ready for cleaning there, so that doctor
    and why promise exactly what ``clean --execute`` does."""
    from acidctl.compact.clean import cleaner_decisions, original_check

    qrows, _ = wh.compactions_of(t.db, t.table, lst.partition)
    # a row whose highest write id the source did not give (Thrift) covers nothing here: the
    # aborted deltas it may cover are kept, never promised removable
    ready = [
        int(r["highest_write_id"])
        for r in qrows
        if r.get("state") == "r" and r.get("type") != "c" and r.get("highest_write_id") is not None
    ]
    upto = {lst.partition: max(ready)} if ready else None
    # insert-only: which files a compaction reads depends only on hive.mm.allow.originals (default false)
    mm = types.SimpleNamespace(allow_originals=False) if t.insert_only else None
    got = cleaner_decisions(
        lst,
        reader=wl,
        txns=txns,
        hive_version=wh.hive_version,
        min_age=0.0,
        now=wh.now_ms / 1000.0,
        insert_only=mm,
        aborted_upto=upto,
        original_unreadable=original_check(tfs, lst.fs_path or lst.path) if tfs is not None else None,
    )
    return [{"name": d["name"], "action": d["action"], "reason": d["reason"], "age": d["age"]} for d in got["items"]]
