"""The doctor's catalogue: a :class:`~acidctl.doctor.collect.Scan` in, findings out.

Pure functions (no filesystem, no database, ``now`` comes from the scan's database clock), so
every rule is testable with hand-made facts. Each finding has a stable ``code``, a severity, the
evidence (ids, ages, counts, paths) and, where one exists, the exact command that fixes it.
The rules replay operations.md §2–§5 and §7–§8 (Hive 3.1 and 4.0) and directory-state.md §7–§9;
limits default to the Hive defaults of operations.md §9.

Codes (``--output json`` ``findings[].code``):

=============================== =======================================================
TXN_NO_HEARTBEAT                open txn whose heartbeat is older than hive.txn.timeout
TXN_LONG_OPEN                   open txn older than 24 h (warn) / 72 h (error)
CLEANER_BLOCKED_BY_TXN          Hive 4: ready-for-cleaning rows held back by an open txn
CLEANER_BLOCKED_BY_LOCK         Hive 3: ready-for-cleaning rows waiting for locks
COMPACTION_WORKING_TOO_LONG     ``working`` longer than hive.compactor.worker.timeout
COMPACTION_INITIATED_TOO_LONG   ``initiated`` for 1 h (warn) / 12 h (error)
COMPACTION_CLEANING_TOO_LONG    ``ready for cleaning`` for more than 24 h
COMPACTION_ORPHANED             Hive 4: ``ready for cleaning`` whose compaction txn never committed
CLEANER_RETRYING                Hive 4: the Cleaner keeps failing on a compaction (retry backoff)
CLEANER_BACKLOG                 several ``ready for cleaning`` rows on one partition
INITIATOR_SKIPS_FAILED          failure threshold reached: the Initiator skips the partition
INITIATOR_SKIPS_NO_AUTO         compaction due but no_auto_compaction=true
COMPACTION_SUCCEEDED_NO_OUTPUT  newest succeeded compaction has no base/delta on disk
UNEXPLAINED_COMPACTED_DIR       compacted base/delta that no compaction row explains
WRITE_ID_ABOVE_HWM              directory write ids above the table's NEXT_WRITE_ID
LOCK_WAITING                    WAITING lock, with its blocker chain
LOCK_OF_FINISHED_TXN            lock of an aborted or committed txn
LOCK_EXPIRED                    lock outside a txn without heartbeat for hive.txn.timeout
COMPACTION_DUE                  the Initiator thresholds are met
ABORTED_PILE                    aborted txns on a partition (threshold, age)
OBSOLETE_WAITING                obsolete directories waiting for the Cleaner (``clean`` removes them now, or held back)
ABORTED_WAITING_COMPACTION      Hive 3: aborted deltas waiting for a compaction to cover them
OBSOLETE_UNREAD                 obsolete directories ``clean`` keeps: they hold files no compaction reads
SMALL_FILES                     many small data files read by every query
METASTORE_BLOAT                 COMPLETED_TXN_COMPONENTS / TXN_TO_WRITE_ID / WRITE_SET rows
LOCATION_MISSING                table or partition location does not exist
PARTITION_NOT_IN_METASTORE      partition directory the metastore does not list
LISTING_FAILED                  the directory cannot be listed or classified (storage error)
READER_TRINO / READER_SPARK / READER_HIVE3   layouts that break those engines (evidence.engines)
STATE_<check>                   other warn/error checks of ``acidctl state`` (directory-state.md §9)
=============================== =======================================================
"""

from __future__ import annotations

import dataclasses
import shlex
from typing import Any, Iterable

from acidctl.acid.dirname import PUBLISHED_DIR
from acidctl.units import noun, plural, size

from acidctl.findings import Severity

INFO, WARN, ERROR = Severity.INFO, Severity.WARN, Severity.ERROR
H = 3600.0
#: hive.compactor.worker.timeout as ``acidctl initiator --once``'s revokeTimedoutWorkers applies it
#: (acidctl.metastore.queue.WORKER_TIMEOUT_MS; kept here so the catalogue stays import-light)
WORKER_TIMEOUT_MS = 86_400_000


#: the figures of an Initiator recommendation (acid/initiator.py) the findings and ``why`` show
RECOMMENDATION_FIGURES = (
    "delta_count",
    "insert_delta_count",
    "delete_delta_count",
    "delta_bytes",
    "base_bytes",
    "ratio",
    "aborted_txn_count",
)


@dataclasses.dataclass(frozen=True)
class Limits:
    """Thresholds (Hive defaults, operations.md §9); seconds unless named otherwise."""

    txn_timeout: float = 300.0  # hive.txn.timeout
    open_txn_warn: float = 24 * H  # metastore.compactor.oldest.open.txn.threshold.warning
    open_txn_error: float = 72 * H
    worker_timeout: float = 86400.0  # hive.compactor.worker.timeout
    initiated_warn: float = 1 * H  # ...oldest.initiated.compaction.time.threshold.warning
    initiated_error: float = 12 * H
    uncleaned: float = 24 * H  # ...oldest.uncleaned.compaction.time.threshold
    aborted_age_warn: float = 24 * H  # ...oldest.uncleaned.aborted.txn.time.threshold.warning
    aborted_metrics: int = 1500  # metastore.acidmetrics.table.aborted.txns.threshold
    records_warn: int = 500_000  # ...completed.txn.components / txn.to.writeid .record.threshold
    records_error: int = 1_000_000
    failed_threshold: int = 2  # hive.compactor.initiator.failed.compacts.threshold
    failed_retry: float = 7 * 86400.0  # metastore.compactor.initiator.failed.retry.time (Hive 4)
    small_files: int = 100  # small data files in the current snapshot of a partition
    obsolete_grace: float = 1 * H  # obsolete directories younger than this: info only


#: Hive configuration keys (operations.md §9) → Limits fields; ``--conf KEY=VALUE`` sets them
CONF_KEYS = {
    "hive.txn.timeout": "txn_timeout",
    "metastore.txn.timeout": "txn_timeout",
    "hive.compactor.worker.timeout": "worker_timeout",
    "metastore.compactor.oldest.open.txn.threshold.warning": "open_txn_warn",
    "metastore.compactor.oldest.open.txn.threshold.error": "open_txn_error",
    "metastore.compactor.oldest.initiated.compaction.time.threshold.warning": "initiated_warn",
    "metastore.compactor.oldest.initiated.compaction.time.threshold.error": "initiated_error",
    "metastore.compactor.oldest.uncleaned.compaction.time.threshold": "uncleaned",
    "metastore.compactor.oldest.uncleaned.aborted.txn.time.threshold.warning": "aborted_age_warn",
    "metastore.acidmetrics.table.aborted.txns.threshold": "aborted_metrics",
    "metastore.compactor.completed.txn.components.record.threshold.warning": "records_warn",
    "metastore.compactor.completed.txn.components.record.threshold.error": "records_error",
    "hive.compactor.initiator.failed.compacts.threshold": "failed_threshold",
    "metastore.compactor.initiator.failed.retry.time": "failed_retry",
}


def limits_from_conf(conf: dict[str, str]) -> Limits:
    """``{"hive.txn.timeout": "600s", ...}`` → :class:`Limits` (durations: a number of seconds or
    30s/10m/12h/7d; counts: integers). Unknown keys are a usage error."""
    from acidctl.durations import parse_age
    from acidctl.errors import UsageError

    vals: dict[str, Any] = {}
    for k, v in conf.items():
        field = CONF_KEYS.get(k)
        if field is None:
            raise UsageError(f"unknown --conf key {k!r}", hint="known: " + ", ".join(sorted(CONF_KEYS)))
        default = getattr(Limits, field)
        try:
            vals[field] = int(v) if isinstance(default, int) else parse_age(v)
        except (ValueError, UsageError):
            raise UsageError(
                f"--conf {k}={v!r}: expected {'an integer' if isinstance(default, int) else 'a duration (600, 10m, 12h, 7d)'}"
            ) from None
    return dataclasses.replace(Limits(), **vals)


@dataclasses.dataclass
class DoctorFinding:
    code: str
    severity: Severity
    title: str
    table: str | None  # db.table (None: warehouse-wide)
    partition: str | None
    message: str
    evidence: dict
    fix: str | None = None
    path: str | None = None

    @property
    def subject(self) -> str:
        if self.table is None:
            return "warehouse"
        return self.table + (f"/{self.partition}" if self.partition else "")

    def to_dict(self) -> dict:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "title": self.title,
            "subject": self.subject,
            "table": self.table,
            "partition": self.partition,
            "path": self.path,
            "message": self.message,
            "evidence": self.evidence,
            "fix": self.fix,
        }


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------


def human_age(seconds: float | None) -> str:
    """An age as every text report writes durations (acidctl.units.duration: ``45s``, ``5m 3s``,
    ``2h 5m``, ``1d 3h``); whole seconds under a minute (metastore times are milliseconds)."""
    from acidctl.units import duration

    if seconds is None:
        return "unknown age"
    s = max(0.0, seconds)
    return duration(s if s >= 60 else round(s))


def _age(now_ms: int, ms: Any) -> float | None:
    if ms is None or int(ms) <= 0:
        return None
    return max(0.0, (now_ms - int(ms)) / 1000.0)


def spec_of(db: str, table: str, partition: str | None = None) -> str:
    return f"{db}.{table}" + (f"/{partition}" if partition else "")


def cmd(*words: str) -> str:
    """A shell-safe command line."""
    return " ".join(shlex.quote(str(w)) for w in words)


def fix_compact(db: str, table: str, partition: str | None, kind: str = "major") -> str:
    return cmd("acidctl", "compact", spec_of(db, table, partition), f"--{kind}")


#: ``clean``'s default ``--min-age`` (acidctl/cli/clean_cmd.py): younger candidates need ``--min-age 0``
DEFAULT_CLEAN_MIN_AGE = 3600.0


def fix_clean(db: str, table: str, partition: str | None = None, *, min_age_zero: bool = False) -> str:
    """``clean`` previews unless ``--execute``; its default ``--min-age 1h`` keeps what became
    obsolete within the hour, which Hive's Cleaner (no retention by default) would remove."""
    return cmd(
        "acidctl", "clean", spec_of(db, table, partition), "--execute", *(["--min-age", "0"] if min_age_zero else [])
    )


def fix_abort_txns(ids: Iterable[int]) -> str:
    """``abort transactions`` previews unless ``--execute``: a printed fix acts."""
    return cmd("acidctl", "abort", "transactions", *[str(i) for i in sorted(set(ids))], "--execute")


def fix_abort_compactions(ids: Iterable[int]) -> str:
    return cmd("acidctl", "abort", "compactions", *[str(i) for i in sorted(set(ids))], "--execute")


def fix_unlock(lock_id: int) -> str:
    """``unlock`` previews unless ``--execute`` (the grammar helper makes it preview by default)."""
    return cmd("acidctl", "unlock", str(lock_id), "--execute")


def _lock_fix(locks: list[dict]) -> str | None:
    """End what holds these locks: abort their txns, or unlock the one lock outside a txn."""
    ids = sorted({int(lk["HL_LOCK_EXT_ID"]) for lk in locks})
    txns = sorted({int(lk["HL_TXNID"]) for lk in locks if int(lk.get("HL_TXNID") or 0) > 0})
    if txns:
        return fix_abort_txns(txns)
    return fix_unlock(ids[0]) if len(ids) == 1 else None


def _part_sql(partition: str) -> str:
    from urllib.parse import unquote

    kv = []
    for p in partition.split("/"):
        k, _, v = p.partition("=")
        kv.append(f"{k}='{unquote(v)}'")
    return ", ".join(kv)


#: compaction state and type codes (CQ_STATE/CC_STATE, CQ_TYPE/CC_TYPE) by name; rows may lack
#: the code (None), which then stays as it is
STATES: dict[str | None, str] = {
    "i": "initiated",
    "w": "working",
    "r": "ready for cleaning",
    "f": "failed",
    "s": "succeeded",
    "a": "did not initiate",
    "c": "refused",
    "x": "aborted",
}
TYPES: dict[str | None, str] = {"a": "major", "i": "minor", "r": "rebalance", "c": "abort txn cleanup"}


def _norm_part(p: Any) -> str | None:
    return p if p else None


def queue_rows(wh) -> list[dict]:
    """COMPACTION_QUEUE rows with short keys (id, database, table, partition, state, type, ...)."""
    return wh.queue_short


def history_rows(wh) -> list[dict]:
    return wh.history_short


# ---------------------------------------------------------------------------------------
# the catalogue
# ---------------------------------------------------------------------------------------


#: the metastore facts (tables / columns) each check needs. A source that cannot read one of them
#: (a ``thrift://`` metastore, :attr:`~acidctl.doctor.facts.Warehouse.facts_unavailable`) does not
#: run the check: its findings are dropped, never judged on the empty field as if it were zero,
#: and the report names it (``checks_skipped``)
CHECK_NEEDS: dict[str, frozenset[str]] = {
    "ABORTED_PILE": frozenset({"TXN_COMPONENTS"}),
    "METASTORE_BLOAT": frozenset({"COMPLETED_TXN_COMPONENTS", "TXN_TO_WRITE_ID", "WRITE_SET", "TXN_COMPONENTS"}),
    "STATE_S11": frozenset({"TXN_COMPONENTS"}),
    "CLEANER_BLOCKED_BY_TXN": frozenset({"CQ_NEXT_TXN_ID", "MIN_HISTORY_LEVEL"}),
    "COMPACTION_ORPHANED": frozenset({"CQ_TXN_ID", "CQ_NEXT_TXN_ID"}),
    "CLEANER_RETRYING": frozenset({"CQ_RETRY_RETENTION", "CQ_COMMIT_TIME"}),
    "COMPACTION_SUCCEEDED_NO_OUTPUT": frozenset({"CQ_HIGHEST_WRITE_ID", "CQ_TXN_ID"}),
    "UNEXPLAINED_COMPACTED_DIR": frozenset({"CQ_HIGHEST_WRITE_ID", "CQ_TXN_ID"}),
}
#: checks that still run without one of these facts, on what is known, but one of whose
#: conditions needs it: their findings stand (each is true), their absence proves less, and the
#: report names what was not judged
PARTIAL_NEEDS: dict[str, tuple[frozenset[str], str]] = {
    "COMPACTION_DUE": (
        frozenset({"TXN_COMPONENTS"}),
        "the aborted-txn threshold (hive.compactor.abortedtxn.threshold)",
    ),
    "STATE_S04": (frozenset({"TXN_TO_WRITE_ID"}), "whether an open write id's txn stopped heartbeating"),
    "STATE_M05": (frozenset({"CQ_HIGHEST_WRITE_ID"}), "whether a base without _metadata_acid is a compaction's"),
    "OBSOLETE_WAITING": (frozenset({"CQ_HIGHEST_WRITE_ID"}), "which aborted deltas a ready compaction covers"),
}


def skipped_checks(wh) -> list[dict]:
    """The checks not run (``partial: false``) or run without one of their conditions
    (``partial: true``) because the source lacks a fact: ``[{code, needs, partial, detail}]``."""
    missing: frozenset[str] = getattr(wh, "facts_unavailable", frozenset())
    if not missing:
        return []
    out = []
    for code, needs in CHECK_NEEDS.items():
        lacking = sorted(needs & missing)
        if lacking:
            out.append({"code": code, "needs": lacking, "partial": False, "detail": None})
    for code, (needs, what) in PARTIAL_NEEDS.items():
        lacking = sorted(needs & missing)
        if code == "STATE_S04" and wh.hive_version == 2:
            continue  # Hive 2.3: the open write ids are the open txns themselves
        if lacking:
            out.append({"code": code, "needs": lacking, "partial": True, "detail": f"not judged: {what}"})
    return out


def diagnose(scan, *, limits: Limits | None = None) -> list[DoctorFinding]:
    """Every finding of the scan, most severe first (then code, subject); none of a check whose
    facts the source could not read (:func:`skipped_checks`)."""
    lim = limits or Limits()
    wh = scan.warehouse
    skipped = {c["code"] for c in skipped_checks(wh) if not c["partial"]}
    out: list[DoctorFinding] = []
    out += txn_findings(wh, lim)
    out += cleaner_findings(wh, lim)
    out += queue_findings(wh, lim)
    out += _many_ready(wh)
    out += initiator_findings(wh, scan, lim)
    out += lock_findings(wh, lim)
    out += bloat_findings(wh, scan, lim)
    for ps in scan.partitions:
        out += partition_findings(wh, scan, ps, lim)
    out = [f for f in out if f.code not in skipped]
    out.sort(key=lambda f: (-f.severity.rank, f.code, f.subject))
    return out


def txn_findings(wh, lim: Limits) -> list[DoctorFinding]:
    out = []
    for t in sorted(wh.open_txns, key=lambda x: x["txn_id"]):
        age = _age(wh.now_ms, t["started"])
        hb = _age(wh.now_ms, t["last_heartbeat"])
        ev = {
            "txn_id": t["txn_id"],
            "user": t["user"],
            "host": t["host"],
            "type": t["type"],
            "age_seconds": age,
            "heartbeat_age_seconds": hb,
            "agent_info": t.get("agent_info"),
        }
        repl = t["type"] == 1
        if hb is not None and hb > lim.txn_timeout and not repl:
            out.append(
                DoctorFinding(
                    "TXN_NO_HEARTBEAT",
                    ERROR if (age or 0) >= lim.open_txn_error else WARN,
                    f"txn {t['txn_id']} has not heartbeated for {human_age(hb)}",
                    None,
                    None,
                    f"open txn {t['txn_id']} ({t['user']}@{t['host']}, open {human_age(age)}) has no heartbeat for "
                    f"{human_age(hb)} > hive.txn.timeout {lim.txn_timeout:g}s: its client is gone and the timeout "
                    "reaper (AcidHouseKeeperService) is not running; it holds back the Cleaner and the Initiator",
                    ev,
                    fix_abort_txns([t["txn_id"]]),
                )
            )
        elif age is not None and age >= lim.open_txn_warn and not repl:
            sev = ERROR if age >= lim.open_txn_error else WARN
            out.append(
                DoctorFinding(
                    "TXN_LONG_OPEN",
                    sev,
                    f"txn {t['txn_id']} open for {human_age(age)}",
                    None,
                    None,
                    f"open txn {t['txn_id']} ({t['user']}@{t['host']}) has been open {human_age(age)} (still heartbeating); "
                    f"Hive 4 logs this at {human_age(lim.open_txn_warn)} (warn) / {human_age(lim.open_txn_error)} (error)",
                    ev,
                    fix_abort_txns([t["txn_id"]]),
                )
            )
    return out


def cleaner_watermark(wh) -> tuple[int | None, dict | None]:
    """Hive 4 ``MinOpenTxnIdWaterMark``-like: the lowest open txn (and its row)."""
    opens = sorted(wh.open_txns, key=lambda x: x["txn_id"])
    return (opens[0]["txn_id"], opens[0]) if opens else (None, None)


def blocked_by_txn(wh, row: dict) -> dict | None:
    """Hive 4 (§5.2, HIVE-26704): the open txn that keeps this ``r`` row from the Cleaner."""
    if wh.hive_version < 4 or row.get("state") != "r" or row.get("type") == "c":
        return None
    nxt = row.get("next_txn_id")
    low, t = cleaner_watermark(wh)
    mhl = wh.min_history_level
    if nxt is None:
        return None
    if low is not None and int(nxt) > low:
        return t
    if mhl is not None and int(nxt) > mhl and low is None:
        return {"txn_id": mhl, "user": None, "host": None, "state": "min_history_level", "started": None}
    return None


def blocking_locks(wh, row: dict) -> list[dict]:
    """Hive 3 (§5.1): locks on the same db, table and exact partition as an ``r`` row."""
    out = []
    for lk in wh.locks:
        if (
            str(lk.get("HL_DB") or "").lower() == row["database"]
            and str(lk.get("HL_TABLE") or "").lower() == row["table"]
            and _norm_part(lk.get("HL_PARTITION")) == row["partition"]
        ):
            out.append(lk)
    return out


def cleaner_findings(wh, lim: Limits) -> list[DoctorFinding]:
    out = []
    ready = [r for r in queue_rows(wh) if r["state"] == "r" and r.get("type") != "c"]
    if wh.hive_version >= 4:
        by_txn: dict[int, list[dict]] = {}
        txn_rows: dict[int, dict] = {}
        for r in ready:
            t = blocked_by_txn(wh, r)
            if t is not None:
                by_txn.setdefault(t["txn_id"], []).append(r)
                txn_rows[t["txn_id"]] = t
        for tid, rows in sorted(by_txn.items()):
            t = txn_rows[tid]
            age = _age(wh.now_ms, t.get("started"))
            tables = sorted({spec_of(r["database"], r["table"], r["partition"]) for r in rows})
            fix = fix_abort_txns([tid]) if t.get("state") == "o" else None
            out.append(
                DoctorFinding(
                    "CLEANER_BLOCKED_BY_TXN",
                    ERROR if (age or 0) >= lim.open_txn_warn else WARN,
                    f"open txn {tid} blocks the Cleaner for {plural(len(rows), 'compaction')}",
                    None,
                    None,
                    f"txn {tid} ({t.get('user')}@{t.get('host')}, open {human_age(age)}) is below CQ_NEXT_TXN_ID of "
                    f"{plural(len(rows), 'ready-for-cleaning compaction')} on {', '.join(tables[:5])}"
                    f"{' ...' if len(tables) > 5 else ''}: Hive 4's Cleaner waits for every txn below it (HIVE-26704)",
                    {
                        "txn_id": tid,
                        "user": t.get("user"),
                        "host": t.get("host"),
                        "age_seconds": age,
                        "compaction_ids": sorted(int(r["id"]) for r in rows),
                        "partitions": tables,
                    },
                    fix,
                )
            )
        for r in ready:
            if r.get("next_txn_id") is None and r.get("txn_id"):
                tx = wh.txns.get(int(r["txn_id"]))
                if tx is None or tx["state"] == "a":
                    st = "aborted" if tx else "gone"
                    out.append(
                        DoctorFinding(
                            "COMPACTION_ORPHANED",
                            ERROR,
                            f"compaction {r['id']} is ready for cleaning but its txn is {st}",
                            spec_of(r["database"], r["table"]),
                            r["partition"],
                            f"compaction {r['id']} was marked compacted but its compaction txn {r['txn_id']} is {st} "
                            "(the Worker died before committing, HIVE-29572): the Cleaner will never pick it and it "
                            "blocks newer compactions of the partition; Hive has no command for this (the proposed fix, "
                            "marking such rows failed, is not released), so only a metastore administrator can decide "
                            "to fail the row and discard its aborted output",
                            {"compaction_id": int(r["id"]), "txn_id": int(r["txn_id"]), "txn_state": st},
                            None,
                        )
                    )
    else:
        for r in ready:
            locks = blocking_locks(wh, r)
            if not locks:
                continue
            ids = sorted({int(lk["HL_LOCK_EXT_ID"]) for lk in locks})
            txns = sorted({int(lk["HL_TXNID"]) for lk in locks if int(lk["HL_TXNID"] or 0) > 0})
            fix = _lock_fix(locks)
            out.append(
                DoctorFinding(
                    "CLEANER_BLOCKED_BY_LOCK",
                    WARN,
                    f"compaction {r['id']} waits for {plural(len(ids), 'lock')}",
                    spec_of(r["database"], r["table"]),
                    r["partition"],
                    f"{hive_name(wh.hive_version)}'s Cleaner cleans compaction {r['id']} only once the locks it saw on the partition are gone: "
                    f"{noun(len(ids), 'lock')} {', '.join(map(str, ids))}"
                    + (f" of {noun(len(txns), 'txn')} {', '.join(map(str, txns))}" if txns else ""),
                    {"compaction_id": int(r["id"]), "lock_ids": ids, "txn_ids": txns},
                    fix,
                )
            )
    return out


def queue_findings(wh, lim: Limits) -> list[DoctorFinding]:
    out: list[DoctorFinding] = []
    for r in queue_rows(wh):
        tbl, part = spec_of(r["database"], r["table"]), r["partition"]
        ctype = TYPES.get(r.get("type"), r.get("type"))
        if r["state"] == "w":
            _working_too_long(out, wh, r, lim, tbl, part, ctype)
        elif r["state"] == "i":
            _initiated_too_long(out, wh, r, lim, tbl, part, ctype)
        elif r["state"] == "r" and r.get("type") != "c" and int(r.get("retry_retention") or 0) > 0:
            _cleaner_retrying(out, wh, r, lim, tbl, part, ctype)
        elif r["state"] == "r" and r.get("type") != "c":
            _cleaning_too_long(out, wh, r, lim, tbl, part, ctype)
    return out


def _working_too_long(out: list[DoctorFinding], wh, r: dict, lim: Limits, tbl: str, part, ctype) -> None:
    """COMPACTION_WORKING_TOO_LONG: a working request older than hive.compactor.worker.timeout (a dead worker)."""
    age = _age(wh.now_ms, r.get("start"))
    if age is not None and age > lim.worker_timeout:
        txn = r.get("txn_id")
        tx = wh.txns.get(int(txn)) if txn else None
        txn_open = bool(txn and tx is not None and tx["state"] == "o")
        # revokeTimedoutWorkers (acidctl initiator --once, at the end of its cycle) resets
        # working rows older than hive.compactor.worker.timeout (its default, 24 h) to
        # initiated; a still-open compaction txn of the dead worker is aborted first
        revoke = cmd("acidctl", "initiator", "--once", "--db", r["database"])
        fix = None
        if age * 1000 > WORKER_TIMEOUT_MS:
            fix = (fix_abort_txns([int(txn or 0)]) + " && " + revoke) if txn_open else revoke
        out.append(
            DoctorFinding(
                "COMPACTION_WORKING_TOO_LONG",
                ERROR,
                f"compaction {r['id']} working for {human_age(age)}",
                tbl,
                part,
                f"{ctype} compaction {r['id']} (worker {r.get('worker_id')}) has been working {human_age(age)} > "
                f"hive.compactor.worker.timeout {human_age(lim.worker_timeout)}: the worker is dead; the Initiator's "
                "revokeTimedoutWorkers would reset it to initiated"
                + (f"; its compaction txn {txn} is still open" if txn_open else "")
                + (
                    ""
                    if fix
                    else f"; `acidctl initiator --once` revokes only rows older than its own timeout "
                    f"({WORKER_TIMEOUT_MS // 3_600_000} h), so only a person can decide whether this worker "
                    "is dead (abort its compaction txn, or wait)"
                ),
                {
                    "compaction_id": int(r["id"]),
                    "worker_id": r.get("worker_id"),
                    "age_seconds": age,
                    "txn_id": int(txn) if txn else None,
                },
                fix,
            )
        )


def _initiated_too_long(out: list[DoctorFinding], wh, r: dict, lim: Limits, tbl: str, part, ctype) -> None:
    """COMPACTION_INITIATED_TOO_LONG: an initiated request no Worker takes."""
    age = _age(wh.now_ms, r.get("enqueue_time"))
    at_least = False
    if age is None:
        # Hive 3 records no enqueue time. Queue ids only grow, so the request is at least as
        # old as the earliest start of any compaction with a higher id (derived lower bound)
        later = [
            int(x["start"]) for x in queue_rows(wh) + history_rows(wh) if int(x["id"]) > int(r["id"]) and x.get("start")
        ]
        age = _age(wh.now_ms, min(later)) if later else None
        at_least = age is not None
    if age is not None and age >= lim.initiated_warn:
        sev = ERROR if age >= lim.initiated_error else WARN
        pool = r.get("pool_name")
        out.append(
            DoctorFinding(
                "COMPACTION_INITIATED_TOO_LONG",
                sev,
                f"compaction {r['id']} initiated {'at least ' if at_least else ''}{human_age(age)} ago",
                tbl,
                part,
                f"{ctype} compaction {r['id']} has waited {'at least ' if at_least else ''}{human_age(age)} for a worker"
                + (f" of pool {pool}" if pool else "")
                + ": no Worker runs (hive.compactor.worker.threads=0?); abort it, or run it with "
                + fix_compact(r["database"], r["table"], part, "major" if r.get("type") == "a" else "minor"),
                {
                    "compaction_id": int(r["id"]),
                    "age_seconds": age,
                    "age_is_lower_bound": at_least,
                    "type": ctype,
                    "pool": pool,
                },
                fix_abort_compactions([int(r["id"])]),
            )
        )


def _cleaner_retrying(out: list[DoctorFinding], wh, r: dict, lim: Limits, tbl: str, part, ctype) -> None:
    """CLEANER_RETRYING: Hive 4's Cleaner error loop on a ready-for-cleaning request."""
    # Hive 4 Cleaner error loop (§5.2 step 9, HIVE-25943): backoff, then 'failed' at the 6th error
    ret = int(r["retry_retention"])
    attempts = 1
    while (300_000 << attempts) <= ret:
        attempts += 1
    out.append(
        DoctorFinding(
            "CLEANER_RETRYING",
            WARN,
            f"the Cleaner keeps failing on compaction {r['id']}",
            tbl,
            part,
            f"the Cleaner failed {plural(attempts, 'time')} on compaction {r['id']} (retry retention {ret // 1000}s; after "
            f"5 retries the row becomes failed and its obsolete directories stay): {r.get('error_message') or 'no message'}; "
            "only a person can fix what makes it fail (the error names it)",
            {
                "compaction_id": int(r["id"]),
                "retry_retention_ms": ret,
                "attempts": attempts,
                "error": r.get("error_message"),
            },
            None,
        )
    )


def _cleaning_too_long(out: list[DoctorFinding], wh, r: dict, lim: Limits, tbl: str, part, ctype) -> None:
    """COMPACTION_CLEANING_TOO_LONG: ready for cleaning for long with nothing holding it back."""
    age = _age(wh.now_ms, r.get("commit_time") or r.get("start"))
    if (
        age is not None
        and age > lim.uncleaned
        and blocked_by_txn(wh, r) is None
        and (wh.hive_version >= 4 or not blocking_locks(wh, r))
    ):
        out.append(
            DoctorFinding(
                "COMPACTION_CLEANING_TOO_LONG",
                WARN,
                f"compaction {r['id']} ready for cleaning for {human_age(age)}",
                tbl,
                part,
                f"compaction {r['id']} has been ready for cleaning {human_age(age)} and nothing holds it back: "
                "is the Cleaner running (hive.compactor.initiator.on / metastore.compactor.cleaner.on)? "
                "`acidctl clean` does the Cleaner's work"
                + (f"; last error: {r.get('error_message')}" if r.get("error_message") else ""),
                {
                    "compaction_id": int(r["id"]),
                    "age_seconds": age,
                    "retry_retention": r.get("retry_retention"),
                    "error": r.get("error_message"),
                },
                fix_clean(r["database"], r["table"], part)
                if cleaner_hold(wh, r["database"], r["table"], part) is None
                else None,
            )
        )


def _many_ready(wh) -> list[DoctorFinding]:
    """Several ready-for-cleaning rows on one partition (§5.5, HIVE-25115): the Cleaner takes the
    lowest CQ_HIGHEST_WRITE_ID first; that row explains why the others wait."""
    out = []
    groups: dict[tuple, list[dict]] = {}
    for r in queue_rows(wh):
        if r["state"] == "r" and r.get("type") != "c":
            groups.setdefault((r["database"], r["table"], r["partition"]), []).append(r)
    for (db, table, part), rows in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or "")):
        if len(rows) < 2:
            continue
        rows.sort(key=lambda r: (int(r.get("highest_write_id") or 0), int(r["id"])))
        out.append(
            DoctorFinding(
                "CLEANER_BACKLOG",
                WARN,
                f"{len(rows)} compactions wait for the Cleaner on one partition",
                spec_of(db, table),
                part,
                f"{len(rows)} ready-for-cleaning compactions ({', '.join(str(r['id']) for r in rows)}): the Cleaner takes "
                f"the one with the lowest highest write id first (compaction {rows[0]['id']}); see `acidctl why "
                f"{spec_of(db, table, part)}` for what holds it back"
                + (
                    "; nothing does now: `acidctl clean` finishes them in that order"
                    if cleaner_hold(wh, db, table, part) is None
                    else "; only once that ends (the Cleaner findings name it) can they be cleaned"
                ),
                {"compaction_ids": [int(r["id"]) for r in rows], "first": int(rows[0]["id"])},
                fix_clean(db, table, part, min_age_zero=True) if cleaner_hold(wh, db, table, part) is None else None,
            )
        )
    return out


def failure_block(wh, db: str, table: str, partition: str | None, *, lim: Limits) -> dict | None:
    """§4.4: the failure threshold, Hive 3 (newest N non-``a`` history rows all ``f``) or Hive 4
    (newest N ``s``/``f`` rows all ``f``, unless the newest is older than the retry time)."""
    rows = sorted(wh.compactions_of(db, table, partition)[1], key=lambda r: -int(r["id"]))
    n = lim.failed_threshold
    if wh.hive_version >= 4:
        rows = [r for r in rows if r["state"] in ("s", "f")]
    else:
        rows = [r for r in rows if r["state"] != "a"]
    newest = rows[:n]
    if len(newest) < n or any(r["state"] != "f" for r in newest):
        return None
    info = {
        "failed_ids": [int(r["id"]) for r in newest],
        "threshold": n,
        "errors": [r.get("error_message") for r in newest if r.get("error_message")],
    }
    if wh.hive_version >= 4 and lim.failed_retry > 0:
        enq = max((int(r.get("enqueue_time") or 0) for r in newest), default=0)
        if enq and enq + lim.failed_retry * 1000 < wh.now_ms:
            return None
        info["retry_at_ms"] = enq + int(lim.failed_retry * 1000) if enq else None
    return info


def initiator_findings(wh, scan, lim: Limits) -> list[DoctorFinding]:
    out = []
    keys = set()
    for r in history_rows(wh):
        keys.add((r["database"], r["table"], r["partition"]))
    selected = {(t.db, t.table) for t in scan.tables}
    for db, table, part in sorted(keys, key=lambda k: (k[0], k[1], k[2] or "")):
        if (db, table) not in selected:
            continue
        blk = failure_block(wh, db, table, part, lim=lim)
        if blk is None:
            continue
        out.append(
            DoctorFinding(
                "INITIATOR_SKIPS_FAILED",
                WARN,
                "the Initiator skips this partition after failed compactions",
                spec_of(db, table),
                part,
                f"the newest {blk['threshold']} compactions ({', '.join(map(str, blk['failed_ids']))}) failed: "
                "hive.compactor.initiator.failed.compacts.threshold is reached and the Initiator records "
                "'did not initiate' instead of compacting"
                + (f"; last error: {blk['errors'][0]}" if blk["errors"] else "")
                + "; a manual compaction bypasses it",
                blk,
                fix_compact(db, table, part),
            )
        )
    return out


def lock_findings(wh, lim: Limits) -> list[DoctorFinding]:
    out = []
    by_ext: dict[int, list[dict]] = {}
    for lk in wh.locks:
        by_ext.setdefault(int(lk["HL_LOCK_EXT_ID"]), []).append(lk)
    for ext, comps in sorted(by_ext.items()):
        lk = comps[0]
        txn = int(lk.get("HL_TXNID") or 0)
        state = lk.get("HL_LOCK_STATE")
        where = (
            spec_of(lk.get("HL_DB") or "?", lk.get("HL_TABLE") or "*")
            if lk.get("HL_TABLE")
            else (lk.get("HL_DB") or "?")
        )
        part = _norm_part(lk.get("HL_PARTITION"))
        ev = {
            "lock_id": ext,
            "txn_id": txn or None,
            "state": "waiting" if state == "w" else "acquired",
            "type": lk.get("HL_LOCK_TYPE"),
            "user": lk.get("HL_USER"),
            "host": lk.get("HL_HOST"),
            "agent_info": lk.get("HL_AGENT_INFO"),
        }
        if txn and txn not in wh.txns or txn and wh.txns[txn]["state"] == "a":
            st = "aborted" if txn in wh.txns else "committed or gone"
            out.append(
                DoctorFinding(
                    "LOCK_OF_FINISHED_TXN",
                    ERROR,
                    f"lock {ext} belongs to txn {txn}, which is {st}",
                    where,
                    part,
                    f"lock {ext} ({ev['state']}) is held for txn {txn}, which is {st}: Hive removes a txn's locks when it "
                    "commits or aborts, so this row is left over and blocks conflicting lock requests; Hive's unlock() "
                    "refuses locks of txns, but ABORT TRANSACTIONS deletes the locks of every txn it lists, ended ones "
                    "included (TxnHandler.abortTxns), and so does `acidctl abort transactions`",
                    {**ev, "txn_state": st},
                    fix_abort_txns([txn]),
                )
            )
            continue
        if state == "w":
            chain = [ext]
            cur: dict | None = lk
            seen = {ext}
            while cur is not None and cur.get("HL_BLOCKEDBY_EXT_ID") is not None:
                b = int(cur["HL_BLOCKEDBY_EXT_ID"])
                if b in seen:
                    break
                chain.append(b)
                seen.add(b)
                cur = by_ext.get(b, [None])[0]
            root = by_ext.get(chain[-1], [None])[0] if len(chain) > 1 else None
            age = None
            if txn and txn in wh.txns:
                age = _age(wh.now_ms, wh.txns[txn]["started"])
            fix = None
            if root is not None:
                rtxn = int(root.get("HL_TXNID") or 0)
                fix = fix_abort_txns([rtxn]) if rtxn else fix_unlock(int(root["HL_LOCK_EXT_ID"]))
            sev = WARN if age is None or age < lim.txn_timeout else ERROR
            out.append(
                DoctorFinding(
                    "LOCK_WAITING",
                    sev,
                    f"lock {ext} is waiting" + (f" behind {chain[-1]}" if root is not None else ""),
                    where,
                    part,
                    f"lock {ext} ({ev['user']}@{ev['host']}) waits; blocker chain: "
                    + " -> ".join(map(str, chain))
                    + (
                        f"; the root {chain[-1]} belongs to txn {int(root.get('HL_TXNID') or 0)}"
                        if root is not None and root.get("HL_TXNID")
                        else ""
                    )
                    + ("" if root is not None else "; no blocker recorded"),
                    {**ev, "chain": chain, "age_seconds": age},
                    fix,
                )
            )
        elif not txn:
            hb = _age(wh.now_ms, lk.get("HL_LAST_HEARTBEAT"))
            if hb is not None and hb > lim.txn_timeout:
                out.append(
                    DoctorFinding(
                        "LOCK_EXPIRED",
                        WARN,
                        f"lock {ext} has not heartbeated for {human_age(hb)}",
                        where,
                        part,
                        f"lock {ext} outside any txn has no heartbeat for {human_age(hb)} > hive.txn.timeout: its client "
                        "is gone and the reaper is not running",
                        {**ev, "heartbeat_age_seconds": hb},
                        fix_unlock(ext),
                    )
                )
    return out


def bloat_findings(wh, scan, lim: Limits) -> list[DoctorFinding]:
    out = []

    def per_table(d: dict) -> dict:
        agg: dict[str, int] = {}
        for k, v in d.items():
            n = v["rows"] if isinstance(v, dict) else v
            name = f"{k[0]}.{k[1]}"
            agg[name] = agg.get(name, 0) + int(n)
        return dict(sorted(agg.items(), key=lambda kv: -kv[1]))

    checks = [
        (
            "COMPLETED_TXN_COMPONENTS",
            per_table(wh.completed_components),
            "rows go when the Cleaner marks a compaction cleaned (up to its highest write id)",
        ),
        (
            "TXN_TO_WRITE_ID",
            per_table(wh.txn_to_write_id),
            "the housekeeper deletes rows below the lowest open or aborted txn (one row per table is kept)",
        ),
        ("WRITE_SET", per_table(wh.write_set), "the housekeeper deletes rows older than the lowest open txn"),
    ]
    for name, tables, how in checks:
        total = sum(tables.values())
        if total < lim.records_warn:
            continue
        top = list(tables.items())[:10]
        first = top[0][0] if top else None
        fix = None
        if first and name == "COMPLETED_TXN_COMPONENTS":
            db, tbl = first.split(".", 1)
            fix = fix_compact(db, tbl, None)
        out.append(
            DoctorFinding(
                "METASTORE_BLOAT",
                ERROR if total >= lim.records_error else WARN,
                f"{name} holds {total} rows",
                None,
                None,
                f"{name} has {total} rows (Hive 4 warns at {lim.records_warn}, errors at {lim.records_error}); "
                f"{how}"
                + (f" ({wh.purgeable[name]} could go now)" if wh.purgeable.get(name) is not None else "")
                + "; largest: "
                + ", ".join(f"{t} {n}" for t, n in top[:5]),
                {
                    "table": name,
                    "rows": total,
                    "by_table": dict(top),
                    "purgeable_by_housekeeper": wh.purgeable.get(name),
                },
                fix,
            )
        )
    # aborted-txn components per partition above the metrics threshold
    for (db, tbl, part), v in sorted(
        wh.aborted_components.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or "")
    ):
        if v["rows"] > lim.aborted_metrics:
            out.append(
                DoctorFinding(
                    "METASTORE_BLOAT",
                    ERROR,
                    f"{v['rows']} TXN_COMPONENTS rows of aborted txns",
                    spec_of(db, tbl),
                    part,
                    f"{v['rows']} TXN_COMPONENTS rows of {v['txns']} aborted txns on this partition > "
                    f"metastore.acidmetrics.table.aborted.txns.threshold {lim.aborted_metrics}; they go when a compaction "
                    "of the partition is cleaned",
                    {"table": "TXN_COMPONENTS", "rows": v["rows"], "aborted_txns": v["txns"]},
                    fix_compact(db, tbl, part),
                )
            )
    return out


# reader-compatibility rules keyed by the directory check they refine
_READER_RULES = {
    "M01": (
        "READER_TRINO",
        WARN,
        "Trino and Impala",
        "a base/delta without _orc_acid_version: Trino falls back to the data files' metadata and rejects "
        "files without hive.acid.version >= 2; Hive reads it as ACID version 0, which Impala does not support",
    ),
    "M02": (
        "READER_HIVE3",
        ERROR,
        "Hive 3.1 and Trino",
        "an empty delta without _orc_acid_version: Hive 3.1 readers fail on it (trinodb/trino#5026)",
    ),
    "D11": (
        "READER_TRINO",
        WARN,
        "Trino and Hive 3's compactor",
        "bucket file names not matching bucket_NNNNN: Trino pairs delete deltas by file name and Hive 3's MR "
        "compactor throws 'Found a non-bucket file'",
    ),
    "M06": (
        "READER_TRINO",
        WARN,
        "Trino and Presto",
        "a streaming _flush_length side file: Presto/Trino do not honour it (prestodb/presto#4587)",
    ),
}


def partition_findings(wh, scan, ps, lim: Limits) -> list[DoctorFinding]:
    """One partition's findings, in this order: its location (nothing else is judged when it is
    missing or cannot be listed), the metastore's view of it, write ids above the high-water mark,
    a compaction due, aborted piles, obsolete bytes, small files, the compaction history against
    the disk, reader compatibility and the remaining state checks."""
    tbl = f"{ps.db}.{ps.table}"
    part = ps.partition
    out = _location_findings(ps, tbl, part)
    if out:
        return out
    out += _not_in_metastore_findings(ps, tbl, part)
    out += _above_hwm_findings(wh, ps, tbl, part)
    rec = ps.recommendation or {}
    out += _due_findings(wh, ps, tbl, part, rec)
    out += _aborted_pile_findings(wh, ps, tbl, part, rec, lim)
    # obsolete bytes waiting for the Cleaner: judged with clean's own decisions (ps.clean)
    out += _obsolete_findings(wh, ps, tbl, part, lim)
    out += _small_files_findings(wh, ps, tbl, part, lim)
    # compaction history vs disk
    out += _history_vs_disk(wh, ps, tbl, part)
    out += _reader_compat_findings(wh, ps, tbl, part)
    out += _state_check_findings(ps, tbl, part)
    return out


def _location_findings(ps, tbl: str, part) -> list[DoctorFinding]:
    """A location that does not exist or cannot be listed (one finding: nothing else can be judged)."""
    out: list[DoctorFinding] = []
    if not ps.exists:
        if part is None:
            fix = None
            msg = (
                f"the table's location {ps.path or '(none)'} does not exist: every query fails; recreate the "
                "directory or drop the table"
            )
        else:
            fix = cmd("beeline", "-e", f"ALTER TABLE {tbl} DROP IF EXISTS PARTITION ({_part_sql(part)})")
            msg = f"the partition's location {ps.path or '(none)'} does not exist: queries over it fail"
        out.append(
            DoctorFinding(
                "LOCATION_MISSING",
                ERROR,
                "location does not exist",
                tbl,
                part,
                msg + (f" ({ps.error})" if ps.error else ""),
                {"location": ps.path},
                fix,
                ps.path,
            )
        )
        return out
    if ps.error:
        # storage unreachable, permission denied, an unparseable layout: nothing else can be judged
        out.append(
            DoctorFinding(
                "LISTING_FAILED",
                ERROR,
                "cannot list or classify the directory",
                tbl,
                part,
                ps.error,
                {"path": ps.path},
                None,
                ps.path,
            )
        )
        return out
    return out


def _not_in_metastore_findings(ps, tbl: str, part) -> list[DoctorFinding]:
    """A partition directory the metastore does not list."""
    out: list[DoctorFinding] = []
    if not ps.in_metastore:
        out.append(
            DoctorFinding(
                "PARTITION_NOT_IN_METASTORE",
                WARN,
                "partition directory unknown to the metastore",
                tbl,
                part,
                f"{ps.path} holds partition {part}, which the metastore does not list: no query reads it and the "
                "Initiator never compacts it",
                {"path": ps.path},
                cmd("beeline", "-e", f"MSCK REPAIR TABLE {tbl}"),
                ps.path,
            )
        )
    return out


def _above_hwm_findings(wh, ps, tbl: str, part) -> list[DoctorFinding]:
    """Files vs the metastore: directories naming write ids above NEXT_WRITE_ID - 1."""
    out: list[DoctorFinding] = []
    # files vs metastore: write ids above NEXT_WRITE_ID
    nwi = wh.next_write_id.get((ps.db, ps.table))
    hwm = int(nwi) - 1 if nwi is not None else 0
    above = [d["name"] for d in ps.dirs if d["max_write_id"] is not None and hwm < d["max_write_id"] < 2**62]
    straddle = [
        d["name"] for d in ps.dirs if d["name"] in above and d["min_write_id"] is not None and d["min_write_id"] <= hwm
    ]
    if above:
        out.append(
            DoctorFinding(
                "WRITE_ID_ABOVE_HWM",
                ERROR,
                "directories above the table's write-id high-water mark",
                tbl,
                part,
                f"{len(above)} director{'y' if len(above) == 1 else 'ies'} ({', '.join(above[:5])}) name write ids above "
                f"NEXT_WRITE_ID - 1 = {hwm}: written without a write-id allocation, invisible to readers and unmanaged; "
                "the next allocations will collide with them"
                + (
                    f"; {', '.join(straddle[:3])} also span allocated write ids, so only a person can decide "
                    "what to keep of them (`acidctl clean --quarantine-above-hwm` moves the others aside)"
                    if straddle
                    else "; `acidctl clean --quarantine-above-hwm` moves them aside with a record"
                ),
                {"table_hwm": hwm, "dirs": above},
                None
                if straddle
                else cmd("acidctl", "clean", spec_of(ps.db, ps.table, part), "--quarantine-above-hwm", "--execute"),
                ps.path,
            )
        )
    return out


def _due_findings(wh, ps, tbl: str, part, rec: dict) -> list[DoctorFinding]:
    """A compaction due and not queued, or due but skipped (no_auto_compaction)."""
    out: list[DoctorFinding] = []
    t = wh.table(ps.db, ps.table)
    # compaction due / no_auto_compaction
    if rec.get("type") not in (None, "none"):
        kind = rec["type"]
        queued = [r for r in wh.compactions_of(ps.db, ps.table, part)[0] if r["state"] in ("i", "w")]
        ev = {k: rec.get(k) for k in ("type", *RECOMMENDATION_FIGURES)}
        ev["thresholds"] = rec.get("thresholds")
        ev["reasons"] = rec.get("reasons")
        no_auto, level = t.no_auto_compaction(wh.hive_version) if t is not None else (False, None)
        if no_auto:
            where = f"database {ps.db} sets" if level == "database" else "the table sets"
            out.append(
                DoctorFinding(
                    "INITIATOR_SKIPS_NO_AUTO",
                    WARN,
                    f"{kind} compaction due but no_auto_compaction=true",
                    tbl,
                    part,
                    f"{kind} compaction is due ({'; '.join(r for r in rec.get('reasons', []) if not r.startswith('no_auto'))}) "
                    f"but {where} no_auto_compaction=true: the Initiator never queues it",
                    ev,
                    fix_compact(ps.db, ps.table, part, kind),
                    ps.path,
                )
            )
        elif not queued:
            out.append(
                DoctorFinding(
                    "COMPACTION_DUE",
                    WARN,
                    f"{kind} compaction due",
                    tbl,
                    part,
                    f"{kind} compaction due: {'; '.join(rec.get('reasons', []))}",
                    ev,
                    fix_compact(ps.db, ps.table, part, kind),
                    ps.path,
                )
            )
    return out


def _aborted_pile_findings(wh, ps, tbl: str, part, rec: dict, lim: Limits) -> list[DoctorFinding]:
    """Aborted txns piling up on the partition (above the threshold or too old)."""
    out: list[DoctorFinding] = []
    # aborted piles
    ab = wh.aborted_components.get((ps.db, ps.table, part))
    if ab:
        age = _age(wh.now_ms, ab.get("oldest_started"))
        thr = (rec.get("thresholds") or {}).get("hive.compactor.abortedtxn.threshold", 1000)
        aborted_dirs = [d["name"] for d in ps.dirs if d["role"] == "aborted"]
        # §4.2: more than the threshold TXN_COMPONENTS rows of aborted txns makes a major due; Hive 4's
        # AcidMetricLogger warns at 24 h and 48 h alike (§8.3); above 1500 rows METASTORE_BLOAT is the error
        if ab["rows"] > thr or (age is not None and age >= lim.aborted_age_warn):
            sev = WARN
            pile_fix, pile_note = _compact_fix(wh, ps, part)
            if pile_fix is not None:
                if cleaner_hold(wh, ps.db, ps.table, part) is None and not blocking_locks(
                    wh, {"database": ps.db, "table": ps.table, "partition": part}
                ):
                    pile_fix += " && " + fix_clean(ps.db, ps.table, part, min_age_zero=True)
                else:
                    pile_fix, pile_note = (
                        None,
                        (
                            "; a compaction's Cleaner would be held back now (see the Cleaner findings), so only once that "
                            "ends can a compaction and `acidctl clean` remove them"
                        ),
                    )
            where = "partition" if part else "table"
            out.append(
                DoctorFinding(
                    "ABORTED_PILE",
                    sev,
                    f"{plural(ab['txns'], 'aborted txn')} not cleaned up",
                    tbl,
                    part,
                    f"{plural(ab['txns'], 'aborted txn')} ({plural(ab['rows'], 'TXN_COMPONENTS row')}, oldest {human_age(age)}) on this "
                    f"{where}; abortedtxn.threshold {thr}; {plural(len(aborted_dirs), 'aborted directory', 'aborted directories')} on disk"
                    f"; their TXN_COMPONENTS rows go when a compaction of the {where} is cleaned (markCleaned)"
                    + pile_note,
                    {
                        "aborted_txns": ab["txns"],
                        "rows": ab["rows"],
                        "oldest_age_seconds": age,
                        "aborted_dirs": aborted_dirs,
                        "threshold": thr,
                    },
                    pile_fix,
                    ps.path,
                )
            )
    return out


def _small_files_findings(wh, ps, tbl: str, part, lim: Limits) -> list[DoctorFinding]:
    """Too many small data files in the current snapshot."""
    out: list[DoctorFinding] = []
    # small files
    cur = [d for d in ps.dirs if d["role"] in ("base", "delta", "delete delta", "original")]
    small = sum(d["small_files"] for d in cur)
    if small >= lim.small_files:
        out.append(
            DoctorFinding(
                "SMALL_FILES",
                WARN,
                f"{small} small data files in the current snapshot",
                tbl,
                part,
                f"every query opens {small} data files smaller than 16 MiB; a major compaction rewrites them into one base"
                + _compact_fix(wh, ps, part)[1],
                {"small_files": small, "dirs": len(cur)},
                _compact_fix(wh, ps, part)[0],
                ps.path,
            )
        )
    return out


def _reader_compat_findings(wh, ps, tbl: str, part) -> list[DoctorFinding]:
    """Layouts some reader engine cannot read."""
    out: list[DoctorFinding] = []
    # reader compatibility + other directory checks
    for engine_code, sev, engines, paths, why in _reader_findings(ps):
        out.append(
            DoctorFinding(
                engine_code,
                sev,
                f"layout {engines} cannot read",
                tbl,
                part,
                f"{why}: {', '.join(paths[:5])}{' ...' if len(paths) > 5 else ''}" + _compact_fix(wh, ps, part)[1],
                {"engines": engines, "paths": paths},
                _compact_fix(wh, ps, part)[0],
                ps.path,
            )
        )
    return out


def _state_check_findings(ps, tbl: str, part) -> list[DoctorFinding]:
    """The state checks no finding above covers (each check and message once; INFO left out)."""
    out: list[DoctorFinding] = []
    covered = {"S02", "S03", "S09", "S10", "S11", "S13", "M01", "M02", "D11", "M06"}
    seen: set[tuple] = set()
    for f in ps.checks:
        if f.check in covered or f.severity is INFO:
            continue
        key = (f.check, f.message)
        if key in seen:
            continue
        seen.add(key)
        title = f.message if len(f.message) <= 80 else f.message[:77] + "..."
        out.append(
            DoctorFinding(
                f"STATE_{f.check}",
                f.severity,
                title,
                tbl,
                part,
                f.message,
                {"check": f.check, "path": f.path},
                None,
                f.path,
            )
        )
    return out


def cleaner_hold(wh, db: str, table: str, part: str | None) -> tuple[dict, str, str | None] | None:
    """The ready-for-cleaning row of a partition that Hive's Cleaner (and ``clean``) holds back,
    why, and the command that ends the hold (None: only a person can decide)."""
    rows = sorted(
        (r for r in wh.compactions_of(db, table, part)[0] if r["state"] == "r" and r.get("type") != "c"),
        key=lambda r: (int(r.get("highest_write_id") or 0), int(r["id"])),
    )
    waits = getattr(wh, "cleaner_waits", None)
    if waits is not None:
        for r in rows:
            w = waits.get(int(r["id"])) or []
            if not w:
                continue
            why = "; ".join(str(x.get("message")) for x in w)
            kinds = {x.get("kind") for x in w}
            txns = sorted({int(x["txn_id"]) for x in w if x.get("kind") == "open-txn" and x.get("txn_id")})
            locks = [lk for lk in wh.locks if int(lk["HL_LOCK_EXT_ID"]) in {x.get("lock_id") for x in w}]
            fix = None
            if kinds == {"open-txn"} and txns:
                fix = fix_abort_txns(txns)
            elif kinds == {"lock"} and locks:
                fix = _lock_fix(locks)
            return r, why, fix
        return None
    for r in rows:
        if wh.hive_version >= 4:
            t = blocked_by_txn(wh, r)
            if t is not None:
                fix = fix_abort_txns([t["txn_id"]]) if t.get("state") == "o" else None
                return r, f"open txn {t['txn_id']} is below its CQ_NEXT_TXN_ID (see CLEANER_BLOCKED_BY_TXN)", fix
        else:
            locks = blocking_locks(wh, r)
            if locks:
                ids = sorted({int(lk["HL_LOCK_EXT_ID"]) for lk in locks})
                return (
                    r,
                    f"{noun(len(ids), 'lock')} {', '.join(map(str, ids))} (see CLEANER_BLOCKED_BY_LOCK)",
                    _lock_fix(locks),
                )
    return None


def _obsolete_findings(wh, ps, tbl: str, part: str | None, lim: Limits) -> list[DoctorFinding]:
    """Obsolete and aborted directories, judged with ``clean``'s own decisions (``ps.clean``,
    :func:`acidctl.compact.clean.cleaner_decisions`), one finding per remedy so that each fix
    clears its finding:

    * OBSOLETE_WAITING: ``clean --execute`` removes them now (``--min-age 0`` when one is younger
      than clean's default hour) — or the Cleaner holds them back (no fix: the blocker's own
      finding names the command, and only a person decides to end someone's txn or lock);
    * ABORTED_WAITING_COMPACTION (Hive 3): aborted deltas no compaction covers yet; Hive 3's
      Cleaner removes them only once one does (directory-state.md §7.2): a major compaction,
      then ``clean``;
    * OBSOLETE_UNREAD: ``clean`` keeps them because they hold files no compaction reads."""
    obs = [d for d in ps.dirs if d["role"] in ("obsolete", "aborted")]
    if not obs:
        return []
    decided = {c["name"]: c for c in ps.clean}
    out: list[DoctorFinding] = []
    removable = [d for d in obs if decided.get(d["name"], {}).get("action") == "delete"]
    unread = [d for d in obs if "no compaction read" in decided.get(d["name"], {}).get("action", "")]
    other_kept = [d for d in obs if d["name"] in decided and d not in removable and d not in unread]
    uncovered = [d for d in obs if d["name"] not in decided]
    h3_aborted = [d for d in uncovered if d["role"] == "aborted" and wh.hive_version < 4]
    not_yet = [d for d in uncovered if d not in h3_aborted] + other_kept
    hold = cleaner_hold(wh, ps.db, ps.table, part)

    waiting = removable + ([] if removable else not_yet)
    if waiting:
        out.append(_waiting_finding(wh, ps, tbl, part, lim, decided, waiting, removable, not_yet, hold))
    if h3_aborted:
        out.append(_aborted_waiting_finding(wh, ps, tbl, part, lim, h3_aborted, hold))
    if unread:
        out.append(_unread_finding(wh, ps, tbl, part, decided, unread))
    return out


def _describe_dirs(wh, group: list[dict]) -> tuple[str, dict]:
    """``N directories (names; size, oldest age)`` and its evidence."""
    nbytes = sum(d["bytes"] for d in group)
    mt = [d["mtime"] for d in group if d["mtime"]]
    age = (wh.now_ms / 1000.0 - min(mt)) if mt else None
    names = [d["name"] for d in group]
    n = len(group)
    text = (
        f"{n} director{'y' if n == 1 else 'ies'} ({', '.join(names[:5])}{' ...' if n > 5 else ''}; "
        f"{size(nbytes)}, oldest {human_age(age)})"
    )
    return text, {"dirs": names, "bytes": nbytes, "oldest_age_seconds": age}


def _obsolete_severity(ev: dict, lim: Limits) -> Severity:
    age = ev["oldest_age_seconds"]
    return WARN if age is not None and age > lim.obsolete_grace else INFO


def _waiting_finding(
    wh, ps, tbl: str, part, lim: Limits, decided: dict, waiting: list, removable: list, not_yet: list, hold
) -> DoctorFinding:
    """OBSOLETE_WAITING: removable now, held back by the Cleaner, or not removable yet."""
    text, ev = _describe_dirs(wh, waiting)
    n = len(waiting)
    verb, them = ("is", "it") if n == 1 else ("are", "them")
    fix = None
    if removable and hold is not None:
        r, why, _hfix = hold
        msg = (
            f"{text} {verb} no longer read and wait{'s' if n == 1 else ''} for the Cleaner, which holds back "
            f"compaction {r['id']}: {why}; `acidctl clean` keeps {them} too until that ends, and only a person can "
            "decide to end it early (the blocker's own finding prints the command)"
        )
        ev["held_by_compaction"] = int(r["id"])
    elif removable:
        young = [
            c["name"]
            for c in ps.clean
            if c["name"] in ev["dirs"] and (c.get("age") is None or c["age"] < DEFAULT_CLEAN_MIN_AGE)
        ]
        msg = f"{text} {verb} no longer read and wait{'s' if n == 1 else ''} for the Cleaner; `acidctl clean` removes {them} now"
        fix = fix_clean(ps.db, ps.table, part, min_age_zero=bool(young))
    else:
        msg = (
            f"{text} {verb} no longer read by the current snapshot but not removable yet by the Cleaner's rules: "
            + "; ".join(
                f"{d['name']}: {decided[d['name']]['action']}"
                if d["name"] in decided
                else f"{d['name']}: not obsolete for the Cleaner's list"
                for d in waiting[:3]
            )
            + "; it becomes removable once the compaction covering it is cleaned (`acidctl why` shows the Cleaner)"
        )
    if removable and not_yet:
        msg += "; not yet removable: " + ", ".join(d["name"] for d in not_yet[:3])
    return DoctorFinding(
        "OBSOLETE_WAITING",
        _obsolete_severity(ev, lim),
        f"{plural(n, 'obsolete/aborted directory')} ({size(ev['bytes'])}) {'waits' if n == 1 else 'wait'} for the Cleaner",
        tbl,
        part,
        msg,
        ev,
        fix,
        ps.path,
    )


def hive_name(hive_version: int) -> str:
    """The release a metastore's rules are: ``Hive 2.3`` (the only Hive 2 acidctl reads), ``Hive 3``."""
    return "Hive 2.3" if hive_version == 2 else f"Hive {hive_version}"


def _aborted_waiting_finding(wh, ps, tbl: str, part, lim: Limits, h3_aborted: list, hold) -> DoctorFinding:
    """ABORTED_WAITING_COMPACTION (Hive 2.3 and 3): aborted deltas no compaction covers yet."""
    text, ev = _describe_dirs(wh, h3_aborted)
    n = len(h3_aborted)
    can_major = _major_would_write(wh, ps)
    # a compaction registered now would wait for the locks on the partition (Hive 3's Cleaner
    # records the locks it sees first and waits for them, operations.md §5.1)
    locks = blocking_locks(wh, {"database": ps.db, "table": ps.table, "partition": part})
    lock_ids = sorted({int(lk["HL_LOCK_EXT_ID"]) for lk in locks})
    msg = (
        f"{text}: aborted, never read; {hive_name(wh.hive_version)}'s Cleaner removes an aborted delta only once a compaction "
        "covers it (its list of obsolete directories comes from AcidUtils.getAcidState)"
    )
    fix = None
    if not can_major:
        msg += "; a major compaction would write nothing here now, so there is nothing to run until new data arrives"
    elif lock_ids or hold is not None:
        msg += (
            f"; the Cleaner of a compaction registered now would wait for {noun(len(lock_ids), 'lock')} "
            f"{', '.join(map(str, lock_ids))} on the partition, so only once "
            f"{'it is' if len(lock_ids) == 1 else 'they are'} released (or a person ends the txn) can a major "
            "compaction and `acidctl clean` remove it"
            if lock_ids
            else f"; compaction {hold[0]['id']} is held back first: {hold[1]}"
        )
    else:
        msg += "; a major compaction covers it, then `acidctl clean` removes it"
        fix = fix_compact(ps.db, ps.table, part) + " && " + fix_clean(ps.db, ps.table, part, min_age_zero=True)
    ev["lock_ids"] = lock_ids
    return DoctorFinding(
        "ABORTED_WAITING_COMPACTION",
        _obsolete_severity(ev, lim),
        f"{plural(n, 'aborted directory')} {'waits' if n == 1 else 'wait'} for a compaction to cover {'it' if n == 1 else 'them'}",
        tbl,
        part,
        msg,
        ev,
        fix,
        ps.path,
    )


def _unread_finding(wh, ps, tbl: str, part, decided: dict, unread: list) -> DoctorFinding:
    """OBSOLETE_UNREAD: ``clean`` keeps them because they hold files no compaction reads."""
    text, ev = _describe_dirs(wh, unread)
    return DoctorFinding(
        "OBSOLETE_UNREAD",
        WARN,
        "obsolete directories hold files no compaction reads",
        tbl,
        part,
        f"{text}: no longer read by Hive, but they hold files no compaction reads (other engines may read "
        "them): "
        + "; ".join(decided[d["name"]]["reason"] for d in unread[:2])
        + "; `acidctl clean` keeps them and only a person can decide whether their rows are elsewhere "
        "(`acidctl state --deep` lists the files)",
        ev,
        None,
        ps.path,
    )


def _reader_findings(ps) -> list[tuple]:
    groups: dict[str, list] = {}
    for f in ps.checks:
        rule = _READER_RULES.get(f.check)
        if rule is None:
            continue
        groups.setdefault(f.check, []).append(f.path)
    out = []
    for check, paths in sorted(groups.items()):
        code, sev, engines, why = _READER_RULES[check]
        out.append((code, sev, engines, sorted(set(paths)), why))
    nested = [d["name"] for d in ps.dirs if d.get("nested") and d["role"] != "obsolete"]
    if nested:
        out.append(
            (
                "READER_TRINO",
                WARN,
                "Trino and Hive 3",
                nested,
                "subdirectories inside a base/delta (e.g. HIVE_UNION_SUBDIR_n): Hive 3 and Trino read only the "
                "directory's own files and miss these rows (derived)",
            )
        )
    minor_dd = [
        d["name"]
        for d in ps.dirs
        if d["kind"] == "delete_delta"
        and d["role"] == "delete delta"
        and d["min_write_id"] is not None
        and d["max_write_id"] != d["min_write_id"]
        and d["statement_id"] is None
    ]
    if minor_dd:
        out.append(
            (
                "READER_TRINO",
                INFO,
                "older Trino",
                minor_dd,
                "minor-compacted delete deltas (delete_delta_a_b without statement id): Trino releases before "
                "trinodb/trino#4623 cannot pair them and return deleted rows",
            )
        )
    dds = [d["name"] for d in ps.dirs if d["role"] == "delete delta"]
    if dds:
        out.append(
            (
                "READER_SPARK",
                INFO,
                "Spark (without the Hive Warehouse Connector)",
                dds,
                "delete deltas: Spark's built-in ORC reader reads ACID files as plain ORC, cannot apply deletes "
                "and returns deleted rows (qubole/spark-acid#41)",
            )
        )
    return out


#: compaction states whose row may have written a directory: working (in flight), ready for
#: cleaning, succeeded, failed (Hive 3's Cleaner marks a compaction failed after its output was
#: written); never initiated, did not initiate, refused or aborted
_WROTE_STATES = ("w", "r", "s", "f")


def _dir_kind(d: dict) -> str | None:
    return {"base": "base", "delta": "delta", "delete_delta": "delete_delta"}.get(d["kind"])


def _explains(wh, rows: list[dict], d: dict, compactor: str) -> list[dict]:
    """The compaction rows that could have written directory ``d`` (acidctl.compact.naming)."""
    from acidctl.compact import naming

    kind = _dir_kind(d)
    if kind is None or d["max_write_id"] is None:
        return []
    return naming.explaining_rows(
        [r for r in rows if r.get("state") in _WROTE_STATES],
        kind=kind,
        max_write_id=int(d["max_write_id"]),
        visibility=d.get("visibility_txn") or None,
        hive_version=wh.hive_version,
        compactor=compactor,
    )


def _major_would_write(wh, ps) -> bool:
    from acidctl.compact import naming

    if ps.compactor is None:
        return True  # not known (hand-made facts): the compaction decides
    out, _ = naming.predict_from(ps.compactor, naming.MAJOR, hive_version=wh.hive_version)
    return out is not None


#: what a finding says when a major compaction would write nothing (``compact`` answers "nothing
#: to compact"), so no command can fix it
NOTHING_TO_COMPACT = (
    "; a major compaction would write nothing here now (acidctl.compact.naming.predict), so no command "
    "changes it until new data arrives: only a person can decide whether it matters"
)


def _compact_fix(wh, ps, part: str | None, kind: str = "major") -> tuple[str | None, str]:
    """(``acidctl compact ... --kind`` when that compaction would write something, else None;
    the text to add to the finding)."""
    if _major_would_write(wh, ps):
        return fix_compact(ps.db, ps.table, part, kind), ""
    return None, NOTHING_TO_COMPACT


def _history_vs_disk(wh, ps, tbl: str, part: str | None) -> list[DoctorFinding]:
    """Compaction rows vs the directories on disk, judged with the one naming rule
    (:mod:`acidctl.compact.naming`): a row explains a directory when the rule would have named
    that row's output so (MR compactor: its write ids at or below the row's highest write id;
    Hive 4: its ``_v`` suffix = the row's compaction txn)."""
    from acidctl.compact import naming

    out = []
    qrows, rows = wh.compactions_of(ps.db, ps.table, part)
    t = wh.table(ps.db, ps.table)
    insert_only = bool(t is not None and t.insert_only)
    compactor = naming.compactor_for(hive_version=wh.hive_version, insert_only=insert_only)
    every = list(qrows) + list(rows)
    dirs = [d for d in ps.dirs if _dir_kind(d) is not None]
    can_major = _major_would_write(wh, ps)
    succ = sorted((r for r in rows if r["state"] == "s" and r.get("highest_write_id")), key=lambda r: -int(r["id"]))
    if succ:
        r = succ[0]
        n = int(r["highest_write_id"])
        kind = r.get("type")
        mine = [d for d in dirs if r in _explains(wh, [r], d, compactor)]
        newer = [
            d
            for d in dirs
            if any(int(x["id"]) > int(r["id"]) for x in _explains(wh, every, d, compactor))
            or (d["kind"] == "base" and d["max_write_id"] is not None and d["max_write_id"] > n)
        ]
        if not mine and not newer:
            vis = f"_v{int(r['txn_id']):07d}" if wh.hive_version >= 4 and r.get("txn_id") else ""
            want = f"base_N{vis} (N <= {n})" if kind == "a" else f"delta_*_N{vis} (N <= {n})"
            out.append(
                DoctorFinding(
                    "COMPACTION_SUCCEEDED_NO_OUTPUT",
                    WARN,
                    f"succeeded compaction {r['id']} left nothing on disk",
                    tbl,
                    part,
                    f"compaction {r['id']} ({TYPES.get(kind, kind)}, highest write id {n}) succeeded but no {want} exists "
                    "and no newer compaction replaces it: its output was removed outside Hive"
                    + (
                        "; a new major compaction writes a base a newer history row explains"
                        if can_major
                        else "; there is nothing left to compact, so no command can make a newer row: only a "
                        "person can decide whether the data is complete (`acidctl state --deep` checks what is there); "
                        "the row goes when Hive purges the history (hive.compactor.history.retention.succeeded)"
                    ),
                    {"compaction_id": int(r["id"]), "highest_write_id": n, "type": TYPES.get(kind, kind)},
                    fix_compact(ps.db, ps.table, part) if can_major else None,
                    ps.path,
                )
            )
    for d in dirs:
        if d["role"] not in ("base", "delta", "delete delta"):
            continue
        compacted = (d["kind"] == "base" and (d.get("compacted") or d.get("visibility_txn"))) or (
            d["kind"] in ("delta", "delete_delta")
            and d["statement_id"] is None
            and d["min_write_id"] is not None
            and d["max_write_id"] != d["min_write_id"]
            and d.get("visibility_txn")
        )
        if not compacted or d["max_write_id"] is None or d["max_write_id"] <= 0:
            continue
        if _explains(wh, every, d, compactor):
            continue
        vis = d.get("visibility_txn")
        own = ps.published.get(d["name"])
        if own is not None:
            # acidctl's own compaction, run without registering it: its files were verified
            # before the rename; only Hive's history lacks the row (Safety rule 2: not damage)
            out.append(
                DoctorFinding(
                    "UNEXPLAINED_COMPACTED_DIR",
                    INFO,
                    f"{d['name']}: acidctl's compaction, not registered",
                    tbl,
                    part,
                    f"{d['name']} was written by `acidctl compact` without registering it in the metastore "
                    f"(--read-only, --no-register or a thrift:// metastore; its record is {PUBLISHED_DIR}/"
                    f"{d['name']}.json): no queue or history row explains it, which is expected; nothing to fix",
                    {"dir": d["name"], "write_id": d["max_write_id"], "visibility_txn": vis, "acidctl": own},
                    None,
                    ps.path,
                )
            )
            continue
        out.append(
            DoctorFinding(
                "UNEXPLAINED_COMPACTED_DIR",
                WARN,
                f"{d['name']}: no compaction explains it",
                tbl,
                part,
                f"{d['name']} is compactor output but no queue or history row could have written it "
                + (
                    f"(none with compaction txn {vis} and highest write id >= {d['max_write_id']})"
                    if wh.hive_version >= 4
                    else f"(none with highest write id >= {d['max_write_id']})"
                )
                + ": written by a compactor that did not register (or history was purged); "
                + (
                    "a registered major compaction replaces it"
                    if can_major
                    else "there is nothing else to compact, so no command replaces it: only a person can decide "
                    "whether to trust its writer (`acidctl state --deep` checks its files)"
                ),
                {"dir": d["name"], "write_id": d["max_write_id"], "visibility_txn": vis},
                fix_compact(ps.db, ps.table, part) if can_major else None,
                ps.path,
            )
        )
    return out


# ---------------------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------------------


def build_report(scan, findings: list[DoctorFinding]) -> dict:
    """The JSON document of ``acidctl doctor`` (stable keys)."""
    counts = {s.value: sum(1 for f in findings if f.severity is s) for s in Severity}
    wh = scan.warehouse
    by_code: dict[str, int] = {}
    for f in findings:
        by_code[f.code] = by_code.get(f.code, 0) + 1
    return {
        "hive_version": wh.hive_version,
        "summary": {
            "tables_checked": len(scan.tables),
            "partitions_checked": len(scan.partitions),
            "tables_skipped": scan.skipped_tables,
            "directory_listings": scan.listings,
            "seconds": round(scan.seconds, 3),
            "open_txns": len(wh.open_txns),
            "aborted_txns": len(wh.aborted_txns),
            "locks": len({int(lk["HL_LOCK_EXT_ID"]) for lk in wh.locks}),
            "compaction_queue": len(wh.queue),
            "errors": counts["error"],
            "warnings": counts["warn"],
            "info": counts["info"],
            "by_code": dict(sorted(by_code.items())),
            "worst": [f.to_dict() for f in findings[:5] if f.severity is not INFO],
            "oldest_open_txn": oldest_open_txn(wh),
        },
        "findings": [f.to_dict() for f in findings],
        "partitions": [_partition_summary(p) for p in scan.partitions],
        # where the facts came from, and the checks the source could not run (a thrift://
        # metastore's API returns no TXN_COMPONENTS, ...): an empty list is a full check
        "metastore_source": getattr(wh, "source", "database"),
        "facts_unavailable": sorted(getattr(wh, "facts_unavailable", ())),
        "checks_skipped": skipped_checks(wh),
    }


def oldest_open_txn(wh) -> dict | None:
    """The oldest open txn and everything it holds back: Hive 4 ready-for-cleaning rows above it
    (HIVE-26704), the tables whose write ids it keeps open (their compactor high-water mark stops
    below them), and MIN_HISTORY_LEVEL."""
    low, t = cleaner_watermark(wh)
    if t is None:
        return None
    blocked = [
        int(r["id"])
        for r in queue_rows(wh)
        if r["state"] == "r" and r.get("type") != "c" and blocked_by_txn(wh, r) is t
    ]
    tables = sorted(
        f"{d}.{tn}"
        for (d, tn), ids in wh.invalid_write_ids.items()
        if any(txn == low and st == "o" for _w, txn, st in ids)
    )
    return {
        "txn_id": low,
        "user": t["user"],
        "host": t["host"],
        "type": t["type"],
        "age_seconds": _age(wh.now_ms, t["started"]),
        "heartbeat_age_seconds": _age(wh.now_ms, t["last_heartbeat"]),
        "blocks_cleaning": blocked,
        "open_write_ids_on": tables,
        "min_history_level": wh.min_history_level,
    }


def _partition_summary(ps) -> dict:
    rec = ps.recommendation or {}
    cur = [d for d in ps.dirs if d["role"] in ("base", "delta", "delete delta", "original")]
    return {
        "table": f"{ps.db}.{ps.table}",
        "partition": ps.partition,
        "path": ps.path,
        "delta_count": sum(1 for d in cur if d["kind"] == "delta"),
        "delete_delta_count": sum(1 for d in cur if d["kind"] == "delete_delta"),
        "delta_bytes": sum(d["bytes"] for d in cur if d["kind"] == "delta"),
        "delete_delta_bytes": sum(d["bytes"] for d in cur if d["kind"] == "delete_delta"),
        "base_bytes": sum(d["bytes"] for d in cur if d["kind"] == "base"),
        "obsolete_bytes": sum(d["bytes"] for d in ps.dirs if d["role"] in ("obsolete", "aborted")),
        "directories": len(ps.dirs),
        "compaction": rec.get("type"),
    }
