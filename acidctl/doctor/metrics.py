"""``acidctl metrics``: the gauges of Hive 4's ``AcidMetricService`` (operations.md §8.1),
computed from the metastore tables so that Hive 3.1 sites get them too.

Pure: :func:`compute` takes a :class:`~acidctl.doctor.facts.Warehouse` (and optionally the
partition scans, for the delta gauges) and returns ``{"gauges": {name: value},
"maps": {name: {label: value}}, "notes": [...]}``; :func:`prometheus_text` renders it in the
Prometheus text exposition format with ``prometheus_client`` (for node_exporter's textfile
collector). Gauge names are Hive's.

Hive 3 differences (derived): Hive 3 records no ``CQ_ENQUEUE_TIME``, ``CQ_COMMIT_TIME`` or
``CQ_CLEANER_START``, so the ages that need them are 0 there, except the oldest
ready-for-cleaning age, which falls back to ``CQ_START`` (when the worker took the row).
"""

from __future__ import annotations

import re

STATE_GAUGES = {
    "i": "compaction_num_initiated",
    "w": "compaction_num_working",
    "r": "compaction_num_ready_for_cleaning",
    "f": "compaction_num_failed",
    "s": "compaction_num_succeeded",
    "a": "compaction_num_did_not_initiate",
    "c": "compaction_num_refused",
}

DELTA_NUM_THRESHOLD = 100  # metastore.deltametrics.delta.num.threshold
OBSOLETE_NUM_THRESHOLD = 100  # metastore.deltametrics.obsolete.delta.num.threshold
DELTA_PCT_THRESHOLD = 0.01  # metastore.deltametrics.delta.pct.threshold
ABORTED_TXNS_THRESHOLD = 1500  # metastore.acidmetrics.table.aborted.txns.threshold


#: the metastore facts each gauge needs: a gauge whose fact the source cannot read (a
#: ``thrift://`` metastore, :attr:`~acidctl.doctor.facts.Warehouse.facts_unavailable`) is not
#: exported — an absent series, as Prometheus users expect of a value nobody measured, never a 0
#: pretending to be one — and ``unavailable`` / a ``# acidctl:`` comment line names it
GAUGE_NEEDS: dict[str, frozenset[str]] = {
    "compaction_num_txn_to_writeid": frozenset({"TXN_TO_WRITE_ID"}),
    "compaction_num_completed_txn_components": frozenset({"COMPLETED_TXN_COMPONENTS"}),
    "tables_with_x_aborted_transactions": frozenset({"TXN_COMPONENTS"}),
    "oldest_ready_for_cleaning_age_in_sec": frozenset({"CQ_COMMIT_TIME"}),
    "compaction_pools_initiated_item_count": frozenset({"CQ_POOL_NAME"}),
    "compaction_pools_working_item_count": frozenset({"CQ_POOL_NAME"}),
    "compaction_pools_oldest_enqueue_age_in_sec": frozenset({"CQ_POOL_NAME"}),
    "compaction_pools_oldest_working_age_in_sec": frozenset({"CQ_POOL_NAME"}),
}
#: the gauges that tell replication txns from the others (TXN_TYPE = 1); Hive 2.3 has no
#: replication txns (no TXN_TYPE), so there every open txn is a non-replication one
TXN_TYPE_GAUGES = (
    "num_open_repl_transactions",
    "oldest_open_repl_txn_id",
    "oldest_open_repl_txn_age_in_sec",
    "num_open_non_repl_transactions",
    "oldest_open_non_repl_txn_id",
    "oldest_open_non_repl_txn_age_in_sec",
)
#: the per-table delta gauges read from Hive 4's COMPACTION_METRICS_CACHE (without --deltas)
DELTA_MAPS = ("compaction_num_active_deltas", "compaction_num_small_deltas", "compaction_num_obsolete_deltas")


def _host(worker_id: str | None) -> str | None:
    """``<hostname>-<thread id>`` → hostname (the ids Hive writes, operations.md §3.1)."""
    if not worker_id:
        return None
    return re.sub(r"-\d+$", "", str(worker_id))


def _age_s(now_ms: int, ms) -> int:
    return max(0, int((now_ms - int(ms)) / 1000)) if ms else 0


def compute(
    wh, partitions=None, *, delta_threshold: int = DELTA_NUM_THRESHOLD, obsolete_threshold: int = OBSOLETE_NUM_THRESHOLD
) -> dict:
    from acidctl.doctor.findings import history_rows, queue_rows

    now = wh.now_ms
    q, h = queue_rows(wh), history_rows(wh)
    g: dict[str, int] = {}
    maps: dict[str, dict[str, int]] = {}
    notes: list[str] = []
    # newest row (highest id, queue or history) per db/table/partition
    newest: dict[tuple, dict] = {}
    for r in q + h:
        k = (r["database"], r["table"], r["partition"])
        if k not in newest or int(r["id"]) > int(newest[k]["id"]):
            newest[k] = r
    for code, name in STATE_GAUGES.items():
        g[name] = sum(1 for r in newest.values() if r["state"] == code)
    init = [r for r in q if r["state"] == "i"]
    work = [r for r in q if r["state"] == "w"]
    ready = [r for r in q if r["state"] == "r"]
    g["compaction_oldest_enqueue_age_in_sec"] = max((_age_s(now, r.get("enqueue_time")) for r in init), default=0)
    g["compaction_oldest_working_age_in_sec"] = max((_age_s(now, r.get("start")) for r in work), default=0)
    g["compaction_oldest_cleaning_age_in_sec"] = max(
        (_age_s(now, r.get("cleaner_start")) for r in ready if (r.get("cleaner_start") or 0) > 0), default=0
    )
    inits = {
        _host(r.get("initiator_id"))
        for r in newest.values()
        if r.get("initiator_id") and not str(r["initiator_id"]).endswith("manual")
    }
    g["compaction_num_initiators"] = len(inits - {None})
    g["compaction_num_workers"] = len(
        {_host(r.get("worker_id")) for r in newest.values() if r.get("worker_id")} - {None}
    )
    g["compaction_num_initiator_versions"] = len({r.get("initiator_version") for r in newest.values()} - {None})
    g["compaction_num_worker_versions"] = len({r.get("worker_version") for r in newest.values()} - {None})
    for name, rows, col in (
        ("compaction_pools_initiated_item_count", init, None),
        ("compaction_pools_working_item_count", work, None),
        ("compaction_pools_oldest_enqueue_age_in_sec", init, "enqueue_time"),
        ("compaction_pools_oldest_working_age_in_sec", work, "start"),
    ):
        m: dict[str, int] = {}
        for r in rows:
            pool = r.get("pool_name") or "default"
            m[pool] = max(m.get(pool, 0), _age_s(now, r.get(col))) if col else m.get(pool, 0) + 1
        maps[name] = m
    # the metrics SQL (§8.1)
    g["compaction_num_txn_to_writeid"] = sum(wh.txn_to_write_id.values())
    g["compaction_num_completed_txn_components"] = sum(v["rows"] for v in wh.completed_components.values())
    repl = [t for t in wh.open_txns if t["type"] == 1]
    nonrepl = [t for t in wh.open_txns if t["type"] is not None and t["type"] != 1]
    if wh.hive_version == 2:  # no TXN_TYPE in 2.3: no replication txns
        nonrepl = list(wh.open_txns)
    for prefix, txns in (("open_repl", repl), ("open_non_repl", nonrepl), ("aborted", wh.aborted_txns)):
        oldest = min(txns, key=lambda t: t["txn_id"]) if txns else None
        first = min((t["started"] for t in txns), default=None)
        name = "transactions"
        g[f"num_{prefix}_{name}"] = len(txns)
        g[f"oldest_{prefix}_txn_id"] = oldest["txn_id"] if oldest else 0
        g[f"oldest_{prefix}_txn_age_in_sec"] = _age_s(now, first) if first else 0
    g["num_locks"] = len(wh.locks)
    acq = [int(lk["HL_ACQUIRED_AT"]) for lk in wh.locks if lk.get("HL_ACQUIRED_AT")]
    g["oldest_lock_age_in_sec"] = _age_s(now, min(acq)) if acq else 0
    if wh.hive_version >= 4:
        ct = [int(r["commit_time"]) for r in ready if r.get("commit_time")]
    else:
        ct = [int(r["start"]) for r in ready if r.get("start")]
        notes.append(
            "Hive 3 has no CQ_COMMIT_TIME: oldest_ready_for_cleaning_age_in_sec uses CQ_START; "
            "no CQ_ENQUEUE_TIME or CQ_CLEANER_START: those ages are 0"
        )
    g["oldest_ready_for_cleaning_age_in_sec"] = _age_s(now, min(ct)) if ct else 0
    g["tables_with_x_aborted_transactions"] = sum(
        1 for v in wh.aborted_components.values() if v["rows"] > ABORTED_TXNS_THRESHOLD
    )
    # delta gauges: Hive 4's cache, or computed from the directories (--deltas)
    active: dict[str, int] = {}
    small: dict[str, int] = {}
    obsolete: dict[str, int] = {}
    if partitions is not None:
        for ps in partitions:
            key = f"{ps.db}.{ps.table}" + (f"/{ps.partition}" if ps.partition else "")
            cur = [d for d in ps.dirs if d["role"] in ("delta", "delete delta")]
            base = sum(d["bytes"] for d in ps.dirs if d["role"] == "base")
            n_small = sum(1 for d in cur if base > 0 and d["bytes"] / base < DELTA_PCT_THRESHOLD)
            n_obs = sum(1 for d in ps.dirs if d["role"] == "obsolete" and d["kind"] in ("delta", "delete_delta"))
            if len(cur) >= delta_threshold:
                active[key] = len(cur)
            if n_small >= delta_threshold:
                small[key] = n_small
            if n_obs >= obsolete_threshold:
                obsolete[key] = n_obs
    else:
        for r in wh.metrics_cache:
            key = f"{r['CMC_DATABASE']}.{r['CMC_TABLE']}" + (f"/{r['CMC_PARTITION']}" if r.get("CMC_PARTITION") else "")
            target = {
                "HIVE_ACID_NUM_DELTAS": active,
                "HIVE_ACID_NUM_SMALL_DELTAS": small,
                "HIVE_ACID_NUM_OBSOLETE_DELTAS": obsolete,
            }.get(r["CMC_METRIC_TYPE"])
            if target is not None:
                target[key] = int(r["CMC_METRIC_VALUE"])
    if partitions is not None and not (active or small or obsolete):
        notes.append(
            f"no table or partition has {delta_threshold} or more current or small delta directories "
            f"(metastore.deltametrics.delta.num.threshold) or {obsolete_threshold} or more obsolete ones: "
            "the per-table delta gauges have no samples"
        )
    maps["compaction_num_active_deltas"] = active
    maps["compaction_num_small_deltas"] = small
    maps["compaction_num_obsolete_deltas"] = obsolete
    unavailable = _unavailable(wh, from_cache=partitions is None)
    for name in unavailable:
        g.pop(name, None)
        maps.pop(name, None)
    if unavailable:
        notes.append(
            f"not exported ({', '.join(sorted({f for v in unavailable.values() for f in v}))} not offered by "
            f"{'the Thrift API' if getattr(wh, 'source', '') == 'thrift' else 'the metastore'}): "
            + ", ".join(sorted(unavailable))
            + ("; --deltas computes the per-table delta gauges from the directories" if partitions is None else "")
        )
    return {
        "hive_version": wh.hive_version,
        "now_ms": now,
        "gauges": g,
        "maps": maps,
        "notes": notes,
        "delta_source": "directories" if partitions is not None else "COMPACTION_METRICS_CACHE",
        "unavailable": {k: sorted(v) for k, v in sorted(unavailable.items())},
    }


def _unavailable(wh, *, from_cache: bool) -> dict[str, frozenset[str]]:
    """gauge → the facts it needs that ``wh``'s source could not read."""
    missing: frozenset[str] = getattr(wh, "facts_unavailable", frozenset())
    out: dict[str, frozenset[str]] = {}
    if not missing:
        return out
    needs = dict(GAUGE_NEEDS)
    if wh.hive_version < 4:
        # Hive 2/3 never had CQ_COMMIT_TIME or pools: the start time and the one pool are the rule there
        needs.pop("oldest_ready_for_cleaning_age_in_sec")
        for k in [k for k in needs if k.startswith("compaction_pools_")]:
            needs.pop(k)
    if wh.hive_version >= 3:
        needs.update({k: frozenset({"TXN_TYPE"}) for k in TXN_TYPE_GAUGES})
    if from_cache:
        needs.update({k: frozenset({"COMPACTION_METRICS_CACHE"}) for k in DELTA_MAPS})
    for name, facts in needs.items():
        lacking = facts & missing
        if lacking:
            out[name] = frozenset(lacking)
    return out


#: what each gauge means (spec operations.md §8.1, from Hive's AcidMetricService and
#: MetricsInfoHandler); the Prometheus ``# HELP`` line
HELP = {
    "compaction_num_initiated": "Partitions or tables whose newest compaction request is initiated (queued, not yet picked up)",
    "compaction_num_working": "Partitions or tables whose newest compaction request is being worked on by a Worker",
    "compaction_num_ready_for_cleaning": "Partitions or tables whose newest compaction waits for the Cleaner",
    "compaction_num_failed": "Partitions or tables whose newest compaction failed",
    "compaction_num_succeeded": "Partitions or tables whose newest compaction succeeded (cleaned)",
    "compaction_num_did_not_initiate": "Partitions or tables whose newest compaction attempt did not initiate",
    "compaction_num_refused": "Partitions or tables whose newest compaction request was refused",
    "compaction_oldest_enqueue_age_in_sec": "Seconds since the oldest initiated compaction request was enqueued (0: none)",
    "compaction_oldest_working_age_in_sec": "Seconds since the oldest working compaction started (0: none)",
    "compaction_oldest_cleaning_age_in_sec": "Seconds since the Cleaner started on the oldest ready-for-cleaning compaction (0: none)",
    "compaction_num_initiators": "Distinct hosts that initiated the newest compaction requests (manual ones excluded)",
    "compaction_num_workers": "Distinct Worker hosts of the newest compaction requests",
    "compaction_num_initiator_versions": "Distinct Hive versions of the Initiators of the newest compaction requests",
    "compaction_num_worker_versions": "Distinct Hive versions of the Workers of the newest compaction requests",
    "compaction_num_txn_to_writeid": "Rows in TXN_TO_WRITE_ID (txn to write id mappings not yet cleaned up)",
    "compaction_num_completed_txn_components": "Rows in COMPLETED_TXN_COMPONENTS (committed writes the Initiator has not yet considered)",
    "num_open_repl_transactions": "Open replication transactions",
    "oldest_open_repl_txn_id": "Id of the oldest open replication transaction (0: none)",
    "oldest_open_repl_txn_age_in_sec": "Seconds since the oldest open replication transaction started (0: none)",
    "num_open_non_repl_transactions": "Open transactions other than replication ones",
    "oldest_open_non_repl_txn_id": "Id of the oldest open non-replication transaction (0: none)",
    "oldest_open_non_repl_txn_age_in_sec": "Seconds since the oldest open non-replication transaction started (0: none)",
    "num_aborted_transactions": "Aborted transactions still recorded in TXNS",
    "oldest_aborted_txn_id": "Id of the oldest aborted transaction still recorded (0: none)",
    "oldest_aborted_txn_age_in_sec": "Seconds since the oldest aborted transaction started (0: none)",
    "num_locks": "Rows in HIVE_LOCKS (acquired and waiting locks)",
    "oldest_lock_age_in_sec": "Seconds since the oldest acquired lock was acquired (0: none)",
    "oldest_ready_for_cleaning_age_in_sec": "Seconds since the oldest compaction waiting for the Cleaner was committed (0: none)",
    "tables_with_x_aborted_transactions": "Tables or partitions with more than 1500 aborted-transaction components (metastore.acidmetrics.table.aborted.txns.threshold)",
    "compaction_pools_initiated_item_count": "Initiated compaction requests per compaction pool",
    "compaction_pools_working_item_count": "Working compaction requests per compaction pool",
    "compaction_pools_oldest_enqueue_age_in_sec": "Seconds since the oldest initiated request of each pool was enqueued",
    "compaction_pools_oldest_working_age_in_sec": "Seconds since the oldest working request of each pool started",
    "compaction_num_active_deltas": "Current delta directories per table or partition, for those with at least 100 (metastore.deltametrics.delta.num.threshold)",
    "compaction_num_small_deltas": "Delta directories under 1% of the base size per table or partition, for those with at least 100",
    "compaction_num_obsolete_deltas": "Obsolete delta directories waiting for the Cleaner per table or partition, for those with at least 100 (metastore.deltametrics.obsolete.delta.num.threshold)",
}


_MAP_LABEL = {
    "compaction_pools_initiated_item_count": "pool",
    "compaction_pools_working_item_count": "pool",
    "compaction_pools_oldest_enqueue_age_in_sec": "pool",
    "compaction_pools_oldest_working_age_in_sec": "pool",
    "compaction_num_active_deltas": "table",
    "compaction_num_small_deltas": "table",
    "compaction_num_obsolete_deltas": "table",
}


def prometheus_text(result: dict) -> str:
    """The Prometheus text exposition format (``prometheus_client.generate_latest``)."""
    from prometheus_client import CollectorRegistry, Gauge, generate_latest

    reg = CollectorRegistry()
    # comment lines (not HELP/TYPE) are skipped by every Prometheus parser: they say why a gauge
    # has no series here instead of a made-up 0
    head = "".join(
        f"# acidctl: {name} not exported: needs {', '.join(facts)}, not offered by this metastore source\n"
        for name, facts in (result.get("unavailable") or {}).items()
    )
    for name, value in result["gauges"].items():
        Gauge(name, HELP.get(name, f"Hive ACID metric {name}"), registry=reg).set(value)
    for name, m in result["maps"].items():
        label = _MAP_LABEL.get(name, "key")
        gauge = Gauge(name, HELP.get(name, f"Hive ACID metric {name} per {label}"), [label], registry=reg)
        for k, v in sorted(m.items()):
            gauge.labels(k).set(v)
    return head + generate_latest(reg).decode()
