"""Hive 2.3's compaction protocol written by acidctl on a 2.3 metastore (SQLite, real PostgreSQL
and MariaDB): the exact rows after each step, worked out from Hive 2.3's TxnHandler.compact and
CompactionTxnHandler (findNextToCompact, setRunAs, setCompactionHighestTxnId, markCompacted,
markFailed, findReadyToClean, markCleaned, cleanEmptyAbortedTxns, revokeTimedoutWorkers) and its
Cleaner's findRelatedLocks (insert-only-and-hive2.md B.2, B.8). Plus the refusals: --read-only,
the Hive 3/4 steps on a 2.3 schema and the 2.3 steps on a 3.1 one."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa

from acidctl.errors import RefusedError
from acidctl.metastore import cleaner, queue, steps
from acidctl.metastore import hive2 as ms2
from tests.metastore.hive2_helpers import add_table

CQ_COLS = [
    "CQ_ID",
    "CQ_DATABASE",
    "CQ_TABLE",
    "CQ_PARTITION",
    "CQ_STATE",
    "CQ_TYPE",
    "CQ_TBLPROPERTIES",
    "CQ_WORKER_ID",
    "CQ_START",
    "CQ_RUN_AS",
    "CQ_HIGHEST_TXN_ID",
    "CQ_META_INFO",
    "CQ_HADOOP_JOB_ID",
]


def _rows(ms, name, order):
    t = ms.t(name)
    with ms.read() as conn:
        rows = conn.execute(sa.select(t.clause).order_by(*[getattr(t, c) for c in order])).mappings().all()
    return [{k.upper(): v for k, v in r.items()} for r in rows]


def _scalar(ms, name, col):
    t = ms.t(name)
    with ms.read() as conn:
        return conn.execute(sa.select(getattr(t, col))).scalar()


def _insert(ms, name, **values):
    t = ms.t(name)
    with ms.engine.begin() as conn:
        conn.execute(sa.insert(t.clause).values({getattr(t, k).name: v for k, v in values.items()}))


@pytest.fixture
def ms(empty_db):
    ms2.init_hive2(empty_db)
    add_table(
        empty_db,
        "db",
        "t",
        "file:/tmp/nowhere/t",
        {"transactional": "true"},
        keys=[("p", "int")],
        partitions=[("p=1", "file:/tmp/nowhere/t/p=1"), ("p=2", "file:/tmp/nowhere/t/p=2")],
    )
    m = ms2.connect_hive2(empty_db)
    yield m
    m.engine.dispose()


def _near_now(ms_value, t0, t1):
    # the database clock (getDbTime) on this machine, in epoch ms
    return int(t0 * 1000) - 5000 <= int(ms_value) <= int(t1 * 1000) + 5000


def test_enqueue_claim_mark_compacted_rows(ms):
    # TxnHandler.compact (2.3): NCQ_NEXT taken, duplicate check on i/w rows of the same
    # db/table/partition, insert (cq_id, db, table, partition, 'i', type) — no run-as, no
    # properties for ALTER TABLE ... COMPACT
    r1 = queue.enqueue(ms, "db", "t", partition="p=1", type="major")
    assert (r1.id, r1.state, r1.accepted) == (1, "initiated", True)
    assert _scalar(ms, "NEXT_COMPACTION_QUEUE_ID", "NCQ_NEXT") == 2
    # the duplicate answers with the queued id, not accepted; Hive's id increment is rolled back
    dup = queue.enqueue(ms, "db", "t", partition="p=1", type="minor")
    assert (dup.id, dup.state, dup.accepted) == (1, "initiated", False)
    assert _scalar(ms, "NEXT_COMPACTION_QUEUE_ID", "NCQ_NEXT") == 2
    r2 = queue.enqueue(ms, "db", "t", partition="p=2", type="minor", run_as="alice")
    assert (r2.id, r2.accepted) == (2, True)
    rows = _rows(ms, "COMPACTION_QUEUE", ["CQ_ID"])
    assert [[r[c] for c in CQ_COLS] for r in rows] == [
        [1, "db", "t", "p=1", "i", "a", None, None, None, None, None, None, None],
        [2, "db", "t", "p=2", "i", "i", None, None, None, "alice", None, None, None],
    ]

    # findNextToCompact: the conditional update sets 'w', the worker id and CQ_START = db now
    t0 = time.time()
    got = queue.claim(ms, worker_id="host-1-7")
    t1 = time.time()
    assert (got.cq_id, got.type, got.partition, got.state) == (1, "major", "p=1", "w")
    row = _rows(ms, "COMPACTION_QUEUE", ["CQ_ID"])[0]
    assert (row["CQ_STATE"], row["CQ_WORKER_ID"]) == ("w", "host-1-7")
    assert _near_now(row["CQ_START"], t0, t1)
    start = row["CQ_START"]

    # the Worker: setRunAs (CQ_RUN_AS was NULL), then setCompactionHighestTxnId
    queue.set_run_as(ms, 1, "hive")
    queue.set_highest_txn_id(ms, 1, 7)
    row = _rows(ms, "COMPACTION_QUEUE", ["CQ_ID"])[0]
    assert (row["CQ_RUN_AS"], row["CQ_HIGHEST_TXN_ID"], row["CQ_STATE"]) == ("hive", 7, "w")

    # markCompacted: 'r' and CQ_WORKER_ID = NULL; nothing else changes
    queue.mark_compacted(ms, 1)
    row = _rows(ms, "COMPACTION_QUEUE", ["CQ_ID"])[0]
    assert [row[c] for c in CQ_COLS] == [1, "db", "t", "p=1", "r", "a", None, None, start, "hive", 7, None, None]

    # findReadyToClean (2.3 reads CQ_HIGHEST_TXN_ID)
    ready = cleaner.ready_requests(ms, "db", "t")
    assert [(r["id"], r["partition"], r["type"], r["run_as"], r["highest_write_id"]) for r in ready] == [
        (1, "p=1", "a", "hive", 7)
    ]


def test_mark_failed_moves_the_row_to_history(ms):
    queue.enqueue(ms, "db", "t", partition="p=2", type="minor")
    queue.claim(ms, worker_id="w")
    queue.set_highest_txn_id(ms, 1, 4)
    start = _rows(ms, "COMPACTION_QUEUE", ["CQ_ID"])[0]["CQ_START"]
    t0 = time.time()
    queue.mark_failed(ms, 1, message="boom")  # 2.3 has no CC_ERROR_MESSAGE: the message is not kept
    t1 = time.time()
    assert _rows(ms, "COMPACTION_QUEUE", ["CQ_ID"]) == []
    (cc,) = _rows(ms, "COMPLETED_COMPACTIONS", ["CC_ID"])
    end = cc.pop("CC_END")
    assert _near_now(end, t0, t1)
    assert cc == {
        "CC_ID": 1,
        "CC_DATABASE": "db",
        "CC_TABLE": "t",
        "CC_PARTITION": "p=2",
        "CC_STATE": "f",
        "CC_TYPE": "i",
        "CC_TBLPROPERTIES": None,
        "CC_WORKER_ID": "w",
        "CC_START": start,
        "CC_RUN_AS": None,
        "CC_HIGHEST_TXN_ID": 4,
        "CC_META_INFO": None,
        "CC_HADOOP_JOB_ID": None,
    }
    r = ms2.show_compactions(ms)["compactions"]
    assert [(c["partition"], c["type"], c["state"], c["highest_txn_id"]) for c in r] == [("p=2", "MINOR", "failed", 4)]


def test_mark_cleaned_rows(ms):
    queue.enqueue(ms, "db", "t", partition="p=1", type="major")
    queue.claim(ms, worker_id="w")
    queue.set_run_as(ms, 1, "hive")
    queue.set_highest_txn_id(ms, 1, 7)
    queue.mark_compacted(ms, 1)
    # committed txns' components (TXNS rows are gone: 2.3 deletes committed txns)
    for txn, part in [(3, "p=1"), (8, "p=1"), (4, "p=2")]:
        _insert(ms, "COMPLETED_TXN_COMPONENTS", CTC_TXNID=txn, CTC_DATABASE="db", CTC_TABLE="t", CTC_PARTITION=part)
    # txn 2 aborted (only p=1), 5 aborted (p=1 and p=2), 9 aborted above the highest txn id, 6 open
    for txn, state in [(2, "a"), (5, "a"), (6, "o"), (9, "a")]:
        _insert(
            ms, "TXNS", TXN_ID=txn, TXN_STATE=state, TXN_STARTED=1, TXN_LAST_HEARTBEAT=1, TXN_USER="u", TXN_HOST="h"
        )
    for txn, part in [(2, "p=1"), (5, "p=1"), (5, "p=2"), (9, "p=1"), (6, "p=1")]:
        _insert(
            ms, "TXN_COMPONENTS", TC_TXNID=txn, TC_DATABASE="db", TC_TABLE="t", TC_PARTITION=part, TC_OPERATION_TYPE="u"
        )
    start = _rows(ms, "COMPACTION_QUEUE", ["CQ_ID"])[0]["CQ_START"]

    t0 = time.time()
    res = cleaner.mark_cleaned(ms, 1)
    t1 = time.time()
    assert _rows(ms, "COMPACTION_QUEUE", ["CQ_ID"]) == []
    (cc,) = _rows(ms, "COMPLETED_COMPACTIONS", ["CC_ID"])
    assert _near_now(cc.pop("CC_END"), t0, t1)
    assert cc == {
        "CC_ID": 1,
        "CC_DATABASE": "db",
        "CC_TABLE": "t",
        "CC_PARTITION": "p=1",
        "CC_STATE": "s",
        "CC_TYPE": "a",
        "CC_TBLPROPERTIES": None,
        "CC_WORKER_ID": None,
        "CC_START": start,
        "CC_RUN_AS": "hive",
        "CC_HIGHEST_TXN_ID": 7,
        "CC_META_INFO": None,
        "CC_HADOOP_JOB_ID": None,
    }
    # COMPLETED_TXN_COMPONENTS of p=1 with CTC_TXNID <= 7 deleted (txn 3); 8 and p=2 stay
    ctc = _rows(ms, "COMPLETED_TXN_COMPONENTS", ["CTC_TXNID"])
    assert [(r["CTC_TXNID"], r["CTC_PARTITION"]) for r in ctc] == [(4, "p=2"), (8, "p=1")]
    # aborted txns <= 7 with components on p=1: 2 and 5 -> their p=1 components deleted
    tc = _rows(ms, "TXN_COMPONENTS", ["TC_TXNID", "TC_PARTITION"])
    assert [(r["TC_TXNID"], r["TC_PARTITION"]) for r in tc] == [(5, "p=2"), (6, "p=1"), (9, "p=1")]
    # cleanEmptyAbortedTxns: txn 2 has no component left; 5 still has p=2's
    assert [(r["TXN_ID"], r["TXN_STATE"]) for r in _rows(ms, "TXNS", ["TXN_ID"])] == [(5, "a"), (6, "o"), (9, "a")]
    assert (res["aborted_txns"], res["aborted_txns_removed"]) == ([2, 5], [2])
    assert (res["completed_txn_components_deleted"], res["txn_components_deleted"]) == (1, 2)
    r = ms2.show_compactions(ms)["compactions"]
    assert [(c["partition"], c["type"], c["state"]) for c in r] == [("p=1", "MAJOR", "succeeded")]


def test_mark_cleaned_without_highest_txn_id_takes_everything(ms):
    # a request compacted before 2.0 has CQ_HIGHEST_TXN_ID NULL: no txn-id term at all
    queue.enqueue(ms, "db", "t", partition=None, type="major")
    queue.claim(ms, worker_id="w")
    queue.mark_compacted(ms, 1)
    for txn in (3, 50):
        _insert(ms, "COMPLETED_TXN_COMPONENTS", CTC_TXNID=txn, CTC_DATABASE="db", CTC_TABLE="t", CTC_PARTITION="p=1")
    _insert(ms, "TXNS", TXN_ID=60, TXN_STATE="a", TXN_STARTED=1, TXN_LAST_HEARTBEAT=1, TXN_USER="u", TXN_HOST="h")
    _insert(
        ms, "TXN_COMPONENTS", TC_TXNID=60, TC_DATABASE="db", TC_TABLE="t", TC_PARTITION="p=1", TC_OPERATION_TYPE="d"
    )
    res = cleaner.mark_cleaned(ms, 1)
    assert _rows(ms, "COMPLETED_TXN_COMPONENTS", ["CTC_TXNID"]) == []
    assert _rows(ms, "TXN_COMPONENTS", ["TC_TXNID"]) == []
    assert _rows(ms, "TXNS", ["TXN_ID"]) == []
    assert res["aborted_txns_removed"] == [60]


def test_cleaner_waits_for_locks_on_the_exact_names(ms):
    queue.enqueue(ms, "db", "t", partition="p=1", type="major")
    queue.claim(ms, worker_id="w")
    queue.mark_compacted(ms, 1)
    req = cleaner.ready_requests(ms, "db", "t")
    assert cleaner.cleaner_waits(ms, req) == {1: []}
    # 2.3's findRelatedLocks compares db and table with equals(): 'DB' is another database
    for ext, db, part in [(1, "DB", "p=1"), (2, "db", "p=2"), (3, "db", "p=1")]:
        _insert(
            ms,
            "HIVE_LOCKS",
            HL_LOCK_EXT_ID=ext,
            HL_LOCK_INT_ID=1,
            HL_TXNID=None,  # a lock outside a txn: NULL in 2.3
            HL_DB=db,
            HL_TABLE="t",
            HL_PARTITION=part,
            HL_LOCK_STATE="a",
            HL_LOCK_TYPE="r",
            HL_LAST_HEARTBEAT=1,
            HL_USER="u",
            HL_HOST="h",
        )
    waits = cleaner.cleaner_waits(ms, req)[1]
    assert [(w["lock_id"], w["txn_id"]) for w in waits] == [(3, None)]


def test_revoke_timed_out_workers(ms):
    queue.enqueue(ms, "db", "t", partition="p=1", type="major")
    queue.claim(ms, worker_id="w")
    queue.set_highest_txn_id(ms, 1, 3)
    t = ms.t("COMPACTION_QUEUE")
    with ms.engine.begin() as conn:
        conn.execute(sa.update(t.clause).values({t.CQ_START.name: 1000}))
    assert queue.revoke_timed_out_workers(ms) == 1
    row = _rows(ms, "COMPACTION_QUEUE", ["CQ_ID"])[0]
    assert [row[c] for c in ("CQ_STATE", "CQ_WORKER_ID", "CQ_START", "CQ_HIGHEST_TXN_ID")] == ["i", None, None, 3]


def test_read_only_forbids_every_step(ms):
    with pytest.raises(steps.MetastoreReadOnly):
        queue.enqueue(ms, "db", "t", partition="p=1", read_only=True)
    steps.forbid_writes()
    try:
        with pytest.raises(steps.MetastoreReadOnly):
            queue.enqueue(ms, "db", "t", partition="p=1")
        with pytest.raises(steps.MetastoreReadOnly):
            cleaner.mark_cleaned(ms, 1)
    finally:
        steps.allow_writes()
    assert _rows(ms, "COMPACTION_QUEUE", ["CQ_ID"]) == []


def test_hive3_steps_refuse_a_23_schema_and_back(empty_db, tmp_path):
    import dataclasses

    from acidctl.errors import UnsupportedSchema
    from acidctl.metastore.connection import connect
    from acidctl.metastore.init import init_metastore

    ms2.init_hive2(empty_db)
    with pytest.raises(UnsupportedSchema):  # the Hive 3/4 code paths do not even connect
        connect(empty_db, hive_version=3)

    url31 = f"sqlite:///{tmp_path}/h31.db"
    init_metastore(url31, hive_version=3)
    ms3 = connect(url31)
    with pytest.raises(RefusedError):
        queue.set_highest_txn_id(ms3, 1, 1)  # a Hive 2.3 step on a Hive 3 metastore
    # a Hive 3 metastore object whose VERSION says 2.3.0: the 3.1/4.0 steps refuse to write
    fake = dataclasses.replace(ms3, flavor=dataclasses.replace(ms3.flavor, schema_version="2.3.0"))
    with pytest.raises(RefusedError, match="2.3.0"):
        queue.enqueue(fake, "db", "t", partition=None)
    # ... and the 2.3 steps refuse a 3.1 schema
    h2 = ms2.Hive2Metastore(url31)
    with pytest.raises(RefusedError, match="3.1"):
        queue.enqueue(h2, "db", "t", partition=None)
    ms3.engine.dispose()
    h2.engine.dispose()
    assert not steps.is_writable_schema("2.3.0") and steps.is_writable_schema("2.3.0", hive_version=2)
    assert not steps.is_writable_schema("3.1.0", hive_version=2)


def test_claims_and_enqueues_race_safely(ms, backend):
    """Two acidctl claimers and a hand-written Hive 2.3 findNextToCompact (select the 'i' rows,
    then ``UPDATE ... WHERE cq_id = ? AND cq_state = 'i'`` per row) share 12 requests: each is
    claimed exactly once. Four concurrent enqueues of one partition: the CompactionScheduler
    mutex lets exactly one in."""
    import threading

    for i in range(12):
        assert queue.enqueue(ms, "db", f"t{i}", partition=None, type="major").id == i + 1
    claimed: dict[str, list[int]] = {"a1": [], "a2": [], "hive": []}

    def acidctl_worker(name):
        while (req := queue.claim(ms, worker_id=name)) is not None:
            claimed[name].append(req.cq_id)

    def hive_worker():
        eng = sa.create_engine(ms.engine.url, isolation_level="READ COMMITTED")
        cq = ms.t("COMPACTION_QUEUE")
        try:
            while True:
                with eng.begin() as c:
                    ids = [r[0] for r in c.execute(sa.select(cq.CQ_ID).where(cq.CQ_STATE == "i"))]
                    got = None
                    for i in ids:
                        upd = sa.update(cq.clause).where(cq.CQ_ID == i, cq.CQ_STATE == "i")
                        vals = {cq.CQ_WORKER_ID.name: "hivehost-3", cq.CQ_START.name: 1, cq.CQ_STATE.name: "w"}
                        if c.execute(upd.values(vals)).rowcount == 1:
                            got = i
                            break
                if got is None:
                    return
                claimed["hive"].append(int(got))
        finally:
            eng.dispose()

    threads = [threading.Thread(target=acidctl_worker, args=(n,)) for n in ("a1", "a2")]
    if backend != "sqlite":  # Hive has no SQLite dialect (READ COMMITTED does not exist there)
        threads.append(threading.Thread(target=hive_worker))
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    all_ids = claimed["a1"] + claimed["a2"] + claimed["hive"]
    assert sorted(all_ids) == list(range(1, 13))
    rows = _rows(ms, "COMPACTION_QUEUE", ["CQ_ID"])
    owner = {i: n for n, ids in claimed.items() for i in ids}
    assert all(r["CQ_STATE"] == "w" for r in rows)
    assert {r["CQ_ID"]: r["CQ_WORKER_ID"] for r in rows} == {
        i: ("hivehost-3" if n == "hive" else n) for i, n in owner.items()
    }

    results = []

    def enq():
        results.append(queue.enqueue(ms, "db", "t", partition="p=9", type="minor"))

    threads = [threading.Thread(target=enq) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sorted(r.accepted for r in results) == [False, False, False, True]
    assert {r.id for r in results} == {13}
    assert _scalar(ms, "NEXT_COMPACTION_QUEUE_ID", "NCQ_NEXT") == 14
