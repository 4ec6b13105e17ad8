"""The Thrift answers → :class:`~acidctl.doctor.facts.Warehouse` conversion for Hive 3/4-shaped
answers (no Hive 3/4 server is available here: the bindings' structs are built by hand as
metastore.md §11 describes each field), the bounded number of calls, and the rule that a check
needing a fact the source could not read is skipped and named, never passed.

The real Hive 2.3 server's answers are covered by tests/hive23/test_doctor_thrift_hive23.py."""

from __future__ import annotations

import dataclasses

from hive_metastore.ttypes import (
    Database,
    FieldSchema,
    Partition,
    ShowCompactResponse,
    ShowCompactResponseElement,
    ShowLocksResponse,
    ShowLocksResponseElement,
    GetOpenTxnsInfoResponse,
    GetValidWriteIdsResponse,
    StorageDescriptor,
    Table,
    TableValidWriteIds,
    TxnInfo,
    TxnState,
)

from acidctl.doctor import thrift_facts as tf
from acidctl.doctor.collect import PartitionScan, Scan
from acidctl.doctor.facts import TableRow
from acidctl.doctor.findings import diagnose, build_report
from acidctl.doctor.metrics import compute, prometheus_text

NOW = 1_900_000_000_000
H = 3_600_000


def el(i, state, *, type=2, part=None, highest=None, **kw) -> ShowCompactResponseElement:
    return ShowCompactResponseElement(
        dbname="db", tablename="t", partitionname=part, type=type, state=state, id=i, hightestTxnId=highest, **kw
    )


def test_show_compact_split_by_state_hive4():
    elements = [
        el(1, "succeeded", highest=4, start=NOW - 3 * H, endTime=NOW - 2 * H, workerid="h-1", initiatorId="h-7"),
        el(2, "did not initiate", type=1, endTime=NOW - H),
        el(3, "refused", highest=5, errorMessage="no"),
        el(4, "failed", highest=6, endTime=NOW),
        el(5, "aborted"),
        el(6, "ready for cleaning", highest=8, start=NOW - H, cleanerStart=NOW - 10),
        el(7, "working", part="p=1", highest=9, start=NOW - 2 * H, workerid="h-2", workerVersion="4.0.1"),
        el(8, "initiated", part="p=2", enqueueTime=NOW - 5 * H, initiatorId="h-manual"),
    ]
    queue, history = tf.compaction_rows(list(reversed(elements)), hive_version=4)
    # initiated / working / ready for cleaning are COMPACTION_QUEUE rows, in id order
    assert [(r["CQ_ID"], r["CQ_STATE"]) for r in queue] == [(6, "r"), (7, "w"), (8, "i")]
    # every other state is history (§4.5 codes: attempted/did not initiate 'a', refused 'c', aborted 'x')
    assert [(r["CC_ID"], r["CC_STATE"]) for r in history] == [(1, "s"), (2, "a"), (3, "c"), (4, "f"), (5, "x")]
    # CompactionType MAJOR 2 → 'a', MINOR 1 → 'i'; hightestTxnId holds the highest write id
    assert (history[0]["CC_TYPE"], history[1]["CC_TYPE"], history[0]["CC_HIGHEST_WRITE_ID"]) == ("a", "i", 4)
    assert (history[0]["CC_END"], history[0]["CC_WORKER_ID"], history[0]["CC_INITIATOR_ID"]) == (
        NOW - 2 * H,
        "h-1",
        "h-7",
    )
    assert queue[0]["CQ_CLEANER_START"] == NOW - 10 and queue[2]["CQ_ENQUEUE_TIME"] == NOW - 5 * H
    assert queue[1]["CQ_PARTITION"] == "p=1" and queue[1]["CQ_WORKER_VERSION"] == "4.0.1"
    # what the element does not carry is absent, not 0
    assert "CQ_NEXT_TXN_ID" not in queue[0] and "CQ_COMMIT_TIME" not in queue[0]
    assert queue[2]["CQ_HIGHEST_WRITE_ID"] is None and queue[2]["CQ_START"] is None


def test_locks_txns_and_write_ids():
    lk = ShowLocksResponseElement(
        lockid=12,
        dbname="db",
        tablename="t",
        partname="p=1",
        state=2,
        type=3,
        txnid=40,
        lastheartbeat=0,
        acquiredat=None,
        user="u",
        hostname="h",
        blockedByExtId=11,
        blockedByIntId=1,
        lockIdInternal=2,
    )
    row = tf.lock_row(lk)
    # HIVE_LOCKS codes (metastore.md: state a/w, type r/w/e/x)
    assert (row["HL_LOCK_EXT_ID"], row["HL_LOCK_INT_ID"], row["HL_LOCK_STATE"], row["HL_LOCK_TYPE"]) == (
        12,
        2,
        "w",
        "e",
    )
    assert (row["HL_TXNID"], row["HL_PARTITION"], row["HL_BLOCKEDBY_EXT_ID"], row["HL_ACQUIRED_AT"]) == (
        40,
        "p=1",
        11,
        None,
    )
    txns = tf.txns_from(
        [
            TxnInfo(id=40, state=TxnState.OPEN, user="u", hostname="h", startedTime=NOW - H, lastHeartbeatTime=NOW),
            TxnInfo(id=41, state=TxnState.ABORTED, user="v", hostname="g", startedTime=NOW - 2 * H),
            TxnInfo(id=42, state=TxnState.COMMITTED, user="w", hostname="k"),
        ]
    )
    assert sorted(txns) == [40, 41]
    assert (txns[40]["state"], txns[40]["started"], txns[40]["last_heartbeat"], txns[40]["type"]) == (
        "o",
        NOW - H,
        NOW,
        None,  # the type is not returned: unknown, not DEFAULT
    )
    assert txns[41]["state"] == "a"
    # TableValidWriteIds: invalid ids 3, 5, 7 with abortedBits = BitSet{0, 2} (bytes little-endian):
    # 3 and 7 aborted, 5 open; hwm 9 → NEXT_WRITE_ID 10
    tv = TableValidWriteIds(
        fullTableName="DB.T", writeIdHighWaterMark=9, invalidWriteIds=[3, 5, 7], minOpenWriteId=5, abortedBits=b"\x05"
    )
    inv, nwi = tf.write_ids_from([tv])
    assert nwi == {("db", "t"): 10}
    assert inv == {("db", "t"): [(3, 0, "a"), (5, 0, "o"), (7, 0, "a")]}
    w = tf.warehouse_from(
        hive_version=4,
        now_ms=NOW,
        tables=[TableRow("db", "t", 0, "file:/w/t", {"transactional": "true"}, [], {})],
        txns=txns,
        txn_hwm=42,
        locks=[row],
        queue=[],
        history=[],
        invalid_write_ids=inv,
        next_write_id=nwi,
    )
    wl = w.write_id_list("db", "t")
    assert (wl.hwm, wl.open, wl.aborted) == (9, (5,), (3, 7))


def _thrift_wh(hive_version=4, **kw):
    base = dict(
        hive_version=hive_version,
        now_ms=NOW,
        tables=[TableRow("db", "t", 0, "file:/w/t", {"transactional": "true"}, [], {})],
        txns={
            40: {
                "txn_id": 40,
                "state": "o",
                "started": NOW - H,
                "last_heartbeat": NOW,
                "user": "u",
                "host": "h",
                "type": None,
            }
        },
        txn_hwm=50,
        locks=[],
        queue=[],
        history=[],
        invalid_write_ids={},
        next_write_id={("db", "t"): 11},
    )
    base.update(kw)
    return tf.warehouse_from(**base)


def test_hive4_rules_needing_the_compaction_txn_are_skipped_not_passed():
    # a ready-for-cleaning row as show_compact gives it on Hive 4: no CQ_NEXT_TXN_ID / CQ_TXN_ID
    queue, _ = tf.compaction_rows([el(6, "ready for cleaning", highest=8, start=NOW - H)], hive_version=4)
    w = _thrift_wh(queue=queue)
    assert {"CQ_NEXT_TXN_ID", "CQ_TXN_ID", "MIN_HISTORY_LEVEL", "TXN_COMPONENTS"} <= w.facts_unavailable
    assert "CQ_HIGHEST_WRITE_ID" not in w.facts_unavailable  # every row carries one
    # On a database, open txn 40 below CQ_NEXT_TXN_ID would be CLEANER_BLOCKED_BY_TXN (§5.2); here
    # nothing can be said: no finding, and the check is named as not run
    sc = Scan(warehouse=w, tables=w.tables, partitions=[])
    found = diagnose(sc)
    assert not [f for f in found if f.code in ("CLEANER_BLOCKED_BY_TXN", "COMPACTION_ORPHANED")]
    rep = build_report(sc, found)
    skipped = {c["code"]: c for c in rep["checks_skipped"]}
    assert skipped["CLEANER_BLOCKED_BY_TXN"] == {
        "code": "CLEANER_BLOCKED_BY_TXN",
        "needs": ["CQ_NEXT_TXN_ID", "MIN_HISTORY_LEVEL"],
        "partial": False,
        "detail": None,
    }
    assert {"COMPACTION_ORPHANED", "CLEANER_RETRYING", "ABORTED_PILE", "METASTORE_BLOAT"} <= set(skipped)
    assert skipped["STATE_S04"]["partial"] and skipped["COMPACTION_DUE"]["partial"]
    assert rep["metastore_source"] == "thrift"
    # Hive 3 over Thrift has every queue column Hive 3 has: only the never-offered facts are missing
    w3 = _thrift_wh(hive_version=3, queue=queue)
    assert w3.facts_unavailable == tf.NEVER
    assert "CLEANER_BLOCKED_BY_TXN" not in {
        c["code"] for c in build_report(Scan(w3, w3.tables, []), [])["checks_skipped"]
    }


def test_a_rule_needing_an_unavailable_fact_is_skipped_not_passed():
    """The same warehouse read from a database (TXN_COMPONENTS known to hold nothing) passes
    ABORTED_PILE; read over Thrift (TXN_COMPONENTS unknown) the check is not run and is named —
    the report never reads as if it had passed."""
    ps = PartitionScan(
        "db",
        "t",
        None,
        "/w/t",
        recommendation={"type": "none", "thresholds": {"hive.compactor.abortedtxn.threshold": 1}},
    )
    w = _thrift_wh()
    db_like = dataclasses.replace(w, facts_unavailable=frozenset(), source="database")
    db_rep = build_report(Scan(db_like, db_like.tables, [ps]), diagnose(Scan(db_like, db_like.tables, [ps])))
    th_rep = build_report(Scan(w, w.tables, [ps]), diagnose(Scan(w, w.tables, [ps])))
    assert db_rep["checks_skipped"] == [] and db_rep["facts_unavailable"] == []
    assert "ABORTED_PILE" in {c["code"] for c in th_rep["checks_skipped"] if not c["partial"]}
    assert "TXN_COMPONENTS" in th_rep["facts_unavailable"]
    # a finding of a skipped check is dropped even if a rule produced one from the empty field
    w2 = _thrift_wh(hive_version=3)
    w2.aborted_components[("db", "t", None)] = {"rows": 5, "txns": 5, "oldest_started": NOW - 48 * H}
    assert [f.code for f in diagnose(Scan(w2, w2.tables, [ps])) if f.code == "ABORTED_PILE"] == []


def test_metrics_omit_what_thrift_cannot_measure():
    from prometheus_client.parser import text_string_to_metric_families

    q, h = tf.compaction_rows(
        [el(1, "succeeded", highest=3, endTime=NOW - H), el(2, "initiated", enqueueTime=NOW - 2 * H)], hive_version=4
    )
    w = _thrift_wh(queue=q, history=h)
    m = compute(w)
    g = m["gauges"]
    # measured: from show_compact and get_open_txns_info / show_locks
    assert (g["compaction_num_initiated"], g["compaction_num_succeeded"]) == (1, 0)
    assert g["compaction_oldest_enqueue_age_in_sec"] == 2 * 3600
    assert g["num_locks"] == 0 and g["num_aborted_transactions"] == 0
    # not measurable over Thrift: absent (not 0), and named
    for name in (
        "compaction_num_txn_to_writeid",
        "compaction_num_completed_txn_components",
        "tables_with_x_aborted_transactions",
        "num_open_non_repl_transactions",  # TXN_TYPE: replication txns cannot be told apart
        "oldest_ready_for_cleaning_age_in_sec",  # Hive 4's CQ_COMMIT_TIME
    ):
        assert name not in g and name in m["unavailable"], name
    assert "compaction_pools_initiated_item_count" not in m["maps"]
    assert "compaction_num_active_deltas" not in m["maps"]  # COMPACTION_METRICS_CACHE
    text = prometheus_text(m)
    names = {f.name for f in text_string_to_metric_families(text)}
    assert "compaction_num_initiated" in names and "compaction_num_txn_to_writeid" not in names
    assert "# acidctl: compaction_num_txn_to_writeid not exported: needs TXN_TO_WRITE_ID" in text
    # Hive 2.3 has no replication txns (no TXN_TYPE): every open txn is a non-replication one
    m2 = compute(_thrift_wh(hive_version=2))
    assert m2["gauges"]["num_open_non_repl_transactions"] == 1 and m2["gauges"]["oldest_open_non_repl_txn_id"] == 40


class _Recording:
    """A stand-in for ThriftMetastore.call answering with hand-built structs, counting calls."""

    hive_version = 4

    def __init__(self, tables_per_db: dict[str, list[Table]]):
        self.tables = tables_per_db
        self.calls: list[tuple] = []

    def call(self, name, *args):
        self.calls.append((name, args))
        if name == "get_all_databases":
            return list(self.tables)
        if name == "get_database":
            return Database(name=args[0], parameters={"no_auto_compaction": "true"} if args[0] == "b" else {})
        if name == "get_all_tables":
            return [t.tableName for t in self.tables[args[0]]]
        if name == "get_table_objects_by_name":
            return [t for t in self.tables[args[0]] if t.tableName in args[1]]
        if name == "get_partitions":
            return [
                Partition(values=["1"], sd=StorageDescriptor(location="file:/w/a/p=1")),
                Partition(values=["a:b"], sd=StorageDescriptor(location="file:/w/a/p=a%3Ab")),
            ]
        if name == "get_open_txns_info":
            return GetOpenTxnsInfoResponse(txn_high_water_mark=7, open_txns=[])
        if name == "show_locks":
            return ShowLocksResponse(locks=[])
        if name == "show_compact":
            return ShowCompactResponse(compacts=[])
        if name == "get_valid_write_ids":
            return GetValidWriteIdsResponse(
                tblValidWriteIds=[
                    TableValidWriteIds(fullTableName=n, writeIdHighWaterMark=2, invalidWriteIds=[], abortedBits=b"")
                    for n in args[0].fullTableNames
                ]
            )
        raise AssertionError(name)


def _table(db, name, *, acid=True, part=False):
    return Table(
        dbName=db,
        tableName=name,
        sd=StorageDescriptor(location=f"file:/w/{db}/{name}"),
        parameters={"transactional": "true"} if acid else {},
        partitionKeys=[FieldSchema("p", "string", None)] if part else [],
    )


def test_round_trips_are_bounded():
    many = [_table("a", f"t{i:03d}", acid=i % 2 == 0) for i in range(150)]
    ms = _Recording(
        {
            "a": many + [_table("a", "zpart", part=True), _table("a", "zplain", acid=False, part=True)],
            "b": [_table("b", "x")],
        }
    )
    w = tf.read_warehouse_thrift(ms, now_ms=NOW)
    counts: dict[str, int] = {}
    for name, _ in ms.calls:
        counts[name] = counts.get(name, 0) + 1
    # per database: get_database, get_all_tables, one get_table_objects_by_name per 100 names;
    # get_partitions only for the partitioned transactional table; one call each for the rest
    assert counts == {
        "get_all_databases": 1,
        "get_database": 2,
        "get_all_tables": 2,
        "get_table_objects_by_name": 3,
        "get_partitions": 1,
        "get_open_txns_info": 1,
        "show_locks": 1,
        "show_compact": 1,
        "get_valid_write_ids": 1,
    }
    (req,) = [a[0] for n, a in ms.calls if n == "get_valid_write_ids"]
    acid = sorted(f"{t.db}.{t.table}" for t in w.tables if t.transactional)
    assert sorted(req.fullTableNames) == acid and len(acid) == 75 + 1 + 1
    assert req.validTxnList == "7:9223372036854775807::"  # ValidReadTxnList of no open/aborted txn
    zp = w.table("a", "zpart")
    assert zp is not None and zp.partition_keys == ["p"]
    assert zp.partitions == {"p=1": "file:/w/a/p=1", "p=a%3Ab": "file:/w/a/p=a%3Ab"}
    x = w.table("b", "x")
    assert x is not None and x.db_params == {"no_auto_compaction": "true"} and x.no_auto_compaction(4)[0]
    assert w.write_id_list("b", "x").hwm == 2 and w.txn_hwm == 7


def test_why_says_what_it_could_not_judge_hive4():
    """Hive 4's Cleaner waits for the open txns below CQ_NEXT_TXN_ID (§5.2): over Thrift that
    column is not returned, so the step is ``unknown`` — not an ``ok`` "no open txn below" — and
    the Initiator's candidate rule (COMPLETED_TXN_COMPONENTS) likewise."""
    from acidctl.doctor.why import replay

    queue, _ = tf.compaction_rows([el(6, "ready for cleaning", highest=8, start=NOW - H)], hive_version=4)
    w = _thrift_wh(queue=queue)
    t = w.tables[0]
    ps = PartitionScan(
        "db",
        "t",
        None,
        "/w/t",
        recommendation={"type": "minor", "reasons": ["11 deltas > 10"], "thresholds": {}},
        dirs=[
            {"name": "delta_0000001_0000001_0000", "kind": "delta", "role": "obsolete", "bytes": 10},
        ],
        clean=[{"name": "delta_0000001_0000001_0000", "action": "delete", "reason": "obsolete", "age": 7200.0}],
    )
    out = replay(w, t, ps)
    cand = out["initiator"]["steps"][0]
    assert (cand["rule"], cand["outcome"]) == ("candidate", "unknown")
    assert cand["values"]["needs"] == ["COMPLETED_TXN_COMPONENTS", "TXN_COMPONENTS"]
    assert out["initiator"]["verdict"].startswith("the Initiator would request a MINOR compaction now, unless")
    steps = {s["rule"]: s for s in out["cleaner"]["steps"]}
    assert steps["compaction txn"]["outcome"] == "unknown" and "open txn" not in steps
    assert not any(s["outcome"] == "ok" and "CQ_NEXT_TXN_ID" in s["detail"] for s in out["cleaner"]["steps"])
