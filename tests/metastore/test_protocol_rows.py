"""The Worker side of Hive's write protocol (acidctl/metastore/txns.py, queue.py): the exact rows
each step leaves, on SQLite, PostgreSQL and MariaDB, Hive 3 and Hive 4 schemas. Expected values
are worked out from ../shared/spec/operations.md §2–§3 and metastore.md §9 (never read back
from acidctl's output)."""

from __future__ import annotations

import socket
import time

import pytest
import sqlalchemy as sa

from acidctl.errors import RefusedError
from acidctl.metastore import queue, txns
from acidctl.metastore.connection import connect, db_now_ms
from acidctl.metastore.recorder import LockComponent


@pytest.fixture(autouse=True)
def _writes_allowed():
    """A ``--read-only`` CLI run forbids writes process-wide; library calls of later tests must
    not inherit it."""
    from acidctl.metastore import steps

    yield
    steps.allow_writes()


def _ms(url):
    return connect(url)


def _now(ms) -> int:
    with ms.engine.connect() as c:
        return db_now_ms(c)


def _rows(ms, table: str, *cols, where=None, order=None):
    t = getattr(ms.tables, table)
    q = sa.select(*[getattr(t, c) for c in cols])
    if where is not None:
        q = q.where(where(t))
    if order:
        q = q.order_by(*[getattr(t, o) for o in order])
    with ms.engine.connect() as c:
        return [tuple(r) for r in c.execute(q).all()]


def _exec(ms, fn):
    with ms.engine.begin() as c:
        fn(c, ms.tables)


# ---------------------------------------------------------------------------------------
# enqueue (compact2)
# ---------------------------------------------------------------------------------------


def test_enqueue_rows_and_duplicates(metastore, hive_version):
    url, rec = metastore
    ms = _ms(url)
    t0 = _now(ms)
    r = queue.enqueue(ms, "Db1", "T1", partition="ds=1", type="major", pool="etl" if hive_version == 4 else None)
    t1 = _now(ms)
    # NEXT_COMPACTION_QUEUE_ID starts at 1 (schema seed): the first request is id 1, NCQ_NEXT 2
    assert (r.id, r.state, r.accepted) == (1, "initiated", True)
    assert r.message == "Compaction enqueued with id 1"
    assert _rows(ms, "NEXT_COMPACTION_QUEUE_ID", "NCQ_NEXT") == [(2,)]
    base = [
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
        "CQ_HIGHEST_WRITE_ID",
        "CQ_HADOOP_JOB_ID",
    ]
    # names lower-cased as ALTER TABLE ... COMPACT stores them
    assert _rows(ms, "COMPACTION_QUEUE", *base) == [
        (1, "db1", "t1", "ds=1", "i", "a", None, None, None, None, None, None)
    ]
    if hive_version == 4:
        (row,) = _rows(
            ms,
            "COMPACTION_QUEUE",
            "CQ_ENQUEUE_TIME",
            "CQ_INITIATOR_ID",
            "CQ_INITIATOR_VERSION",
            "CQ_POOL_NAME",
            "CQ_TXN_ID",
            "CQ_NEXT_TXN_ID",
            "CQ_COMMIT_TIME",
            "CQ_WORKER_VERSION",
            "CQ_RETRY_RETENTION",
            "CQ_CLEANER_START",
            "CQ_ERROR_MESSAGE",
            "CQ_NUMBER_OF_BUCKETS",
            "CQ_ORDER_BY",
        )
        assert t0 <= row[0] <= t1
        assert row[1] == f"{socket.gethostname()}-manual"
        assert row[2].startswith("acidctl")
        assert row[3:] == ("etl", None, None, None, None, 0, None, None, None, None)

    # the same partition again: Hive 3 answers with the queued id, Hive 4 refuses with id -1
    d = queue.enqueue(ms, "db1", "t1", partition="ds=1", type="minor")
    assert d.accepted is False and d.existing_id == 1
    if hive_version == 3:
        assert (d.id, d.state) == (1, "initiated")
    else:
        assert (d.id, d.state) == (-1, "refused")
        assert d.message == "Compaction is already scheduled with state='INITIATED' and id=1"
    assert _rows(ms, "NEXT_COMPACTION_QUEUE_ID", "NCQ_NEXT") == [(2,)]
    # another partition and the unpartitioned table are not duplicates
    assert queue.enqueue(ms, "db1", "t1", partition="ds=2", type="minor").id == 2
    assert queue.enqueue(ms, "db1", "t1", type="minor").id == 3
    assert _rows(ms, "COMPACTION_QUEUE", "CQ_ID", "CQ_PARTITION", "CQ_TYPE", order=["CQ_ID"]) == [
        (1, "ds=1", "a"),
        (2, "ds=2", "i"),
        (3, None, "i"),
    ]

    # a request that is ready for cleaning: Hive 4 also refuses it when its highest write id is
    # the table's current compactor hwm (no writes to db1.t1: hwm 0); Hive 3 enqueues
    _exec(
        ms,
        lambda c, T: c.execute(
            sa.update(T.COMPACTION_QUEUE.clause)
            .where(T.COMPACTION_QUEUE.CQ_ID == 1)
            .values({T.COMPACTION_QUEUE.CQ_STATE.name: "r", T.COMPACTION_QUEUE.CQ_HIGHEST_WRITE_ID.name: 0})
        ),
    )
    r2 = queue.enqueue(ms, "db1", "t1", partition="ds=1", type="major")
    if hive_version == 3:
        assert (r2.id, r2.accepted) == (4, True)
    else:
        assert (r2.id, r2.state, r2.accepted) == (-1, "refused", False)
        assert r2.message == "Compaction is already scheduled with state='READY_FOR_CLEANING' and id=1"


def test_enqueue_ids_continue_from_next_compaction_queue_id(metastore, hive_version):
    url, rec = metastore
    ms = _ms(url)
    _exec(
        ms,
        lambda c, T: c.execute(
            sa.update(T.NEXT_COMPACTION_QUEUE_ID.clause).values({T.NEXT_COMPACTION_QUEUE_ID.NCQ_NEXT.name: 41})
        ),
    )
    assert queue.enqueue(ms, "db", "t", type="minor").id == 41
    assert _rows(ms, "NEXT_COMPACTION_QUEUE_ID", "NCQ_NEXT") == [(42,)]


# ---------------------------------------------------------------------------------------
# claim (findNextToCompact)
# ---------------------------------------------------------------------------------------


def test_claim_conditional_update_and_pools(metastore, hive_version):
    url, rec = metastore
    ms = _ms(url)
    a = queue.enqueue(ms, "db", "a", type="major").id
    b = queue.enqueue(ms, "db", "b", type="minor", pool="etl" if hive_version == 4 else None).id
    c = queue.enqueue(ms, "other", "c", type="major").id
    t0 = _now(ms)
    got = queue.claim(ms, worker_id="w-one", worker_version="v1")
    t1 = _now(ms)
    assert got.cq_id == a and got.type == "major" and got.state == "w"
    (row,) = _rows(ms, "COMPACTION_QUEUE", "CQ_STATE", "CQ_WORKER_ID", "CQ_START", where=lambda t: t.CQ_ID == a)
    assert row[:2] == ("w", "w-one") and t0 <= row[2] <= t1
    if hive_version == 4:
        assert _rows(ms, "COMPACTION_QUEUE", "CQ_WORKER_VERSION", where=lambda t: t.CQ_ID == a) == [("v1",)]
        # default pool: the pooled request b is skipped until the pool timeout passes
        got2 = queue.claim(ms, worker_id="w-two")
        assert got2.cq_id == c
        assert queue.claim(ms, worker_id="w-two") is None
        got3 = queue.claim(ms, worker_id="w-pool", pool="etl")
        assert got3.cq_id == b
    else:
        # --db glob narrows the candidates
        assert queue.claim(ms, worker_id="w-two", db_glob="oth*").cq_id == c
        assert queue.claim(ms, worker_id="w-two").cq_id == b
    assert queue.claim(ms, worker_id="w-three") is None
    # the claimed rows were not taken twice
    assert sorted(_rows(ms, "COMPACTION_QUEUE", "CQ_ID", "CQ_STATE")) == [(a, "w"), (b, "w"), (c, "w")]


@pytest.mark.parametrize("hive_version", [4], ids=["hive4"], indirect=True)
def test_default_pool_takes_old_pooled_requests(metastore, hive_version):
    url, rec = metastore
    ms = _ms(url)
    b = queue.enqueue(ms, "db", "b", type="minor", pool="etl").id
    assert queue.claim(ms, worker_id="w") is None
    _exec(
        ms,
        lambda c, T: c.execute(
            sa.update(T.COMPACTION_QUEUE.clause).values({T.COMPACTION_QUEUE.CQ_ENQUEUE_TIME.name: 1000})
        ),
    )
    assert queue.claim(ms, worker_id="w").cq_id == b


def test_claim_skips_a_request_another_worker_took(metastore, hive_version):
    """The update is conditional on CQ_STATE='i': a row already 'w' is never claimed again."""
    url, rec = metastore
    ms = _ms(url)
    a = queue.enqueue(ms, "db", "a", type="major").id
    rec.mark_working(a, worker_id="hivehost-7")  # Hive's own worker took it
    assert queue.claim(ms, worker_id="acidctl") is None
    assert _rows(ms, "COMPACTION_QUEUE", "CQ_WORKER_ID") == [("hivehost-7",)]


def test_release_returns_the_request(metastore, hive_version):
    url, rec = metastore
    ms = _ms(url)
    a = queue.enqueue(ms, "db", "a", type="major").id
    queue.claim(ms, worker_id="me")
    assert queue.release(ms, a, worker_id="someone-else") is False
    assert queue.release(ms, a, worker_id="me") is True
    assert _rows(ms, "COMPACTION_QUEUE", "CQ_STATE", "CQ_WORKER_ID", "CQ_START") == [("i", None, None)]
    assert queue.claim(ms, worker_id="again").cq_id == a


# ---------------------------------------------------------------------------------------
# worker state updates and history rows
# ---------------------------------------------------------------------------------------


def test_hive3_highest_write_id_and_mark_compacted(metastore, hive_version):
    url, rec = metastore
    ms = _ms(url)
    a = queue.enqueue(ms, "db", "a", type="major").id
    queue.claim(ms, worker_id="me")
    if hive_version == 4:
        # updateCompactorState needs the queue row
        with pytest.raises(RefusedError):
            queue.update_compactor_state(ms, 999, txn_id=1, highest_write_id=1, run_as="x")
        return
    queue.set_highest_write_id(ms, a, 17)
    queue.set_run_as(ms, a, "etl")
    queue.mark_compacted(ms, a)
    assert _rows(ms, "COMPACTION_QUEUE", "CQ_STATE", "CQ_WORKER_ID", "CQ_HIGHEST_WRITE_ID", "CQ_RUN_AS") == [
        ("r", None, 17, "etl")
    ]
    # Hive 3 has no compactor txn and no TXN_COMPONENTS row for the compaction
    assert _rows(ms, "TXN_COMPONENTS", "TC_TXNID") == []
    with pytest.raises(RefusedError):
        queue.mark_refused(ms, a)


# markRefused (state 'c') is Hive 4's: Hive 3 has only failed
@pytest.mark.parametrize(
    ("outcome", "hive_version"),
    [("failed", 3), ("failed", 4), ("refused", 4)],
    ids=["failed-hive3", "failed-hive4", "refused-hive4"],
    indirect=["hive_version"],
)
def test_mark_failed_and_refused_move_the_row_to_history(metastore, hive_version, outcome):
    url, rec = metastore
    ms = _ms(url)
    a = queue.enqueue(ms, "db", "a", partition="p=1", type="minor", run_as="etl", properties={"k": "v"}).id
    queue.claim(ms, worker_id="me", worker_version="wv")
    if hive_version == 4:
        queue.update_compactor_state(ms, a, txn_id=0, highest_write_id=9, run_as="etl")
    else:
        queue.set_highest_write_id(ms, a, 9)
    (start,) = _rows(ms, "COMPACTION_QUEUE", "CQ_START")[0]
    t0 = _now(ms)
    if outcome == "failed":
        queue.mark_failed(ms, a, message="boom: disk full")
    else:
        queue.mark_refused(ms, a, message="nothing to do")
    t1 = _now(ms)
    assert _rows(ms, "COMPACTION_QUEUE", "CQ_ID") == []
    h3 = [
        "CC_ID",
        "CC_DATABASE",
        "CC_TABLE",
        "CC_PARTITION",
        "CC_STATE",
        "CC_TYPE",
        "CC_TBLPROPERTIES",
        "CC_WORKER_ID",
        "CC_START",
        "CC_RUN_AS",
        "CC_HIGHEST_WRITE_ID",
        "CC_META_INFO",
        "CC_HADOOP_JOB_ID",
    ]
    (row,) = _rows(ms, "COMPLETED_COMPACTIONS", *h3)
    code = "f" if outcome == "failed" else "c"
    assert row == (a, "db", "a", "p=1", code, "i", "1:1:k1:v", "me", start, "etl", 9, None, None)
    (end,) = _rows(ms, "COMPLETED_COMPACTIONS", "CC_END")[0]
    assert t0 <= end <= t1
    if hive_version == 4:
        (r4,) = _rows(
            ms,
            "COMPLETED_COMPACTIONS",
            "CC_ERROR_MESSAGE",
            "CC_WORKER_VERSION",
            "CC_TXN_ID",
            "CC_INITIATOR_ID",
            "CC_NEXT_TXN_ID",
            "CC_COMMIT_TIME",
        )
        assert r4 == (
            "boom: disk full" if outcome == "failed" else "nothing to do",
            "wv",
            0,
            f"{socket.gethostname()}-manual",
            None,
            None,
        )


def test_revert_record_refuses_other_states_and_is_not_a_failure(metastore, hive_version):
    """revert's record (admin.record_reverted = the markFailed step with expect_state 'r'): a
    request not ready for cleaning is refused and left exactly as it was; one that is moves to
    history as 'a' — the state neither Hive 3's checkFailedCompactions (CC_STATE <> 'a') nor Hive
    4's Initiator (only s/f rows) counts toward the failure threshold (operations.md §4.4)."""
    from acidctl.metastore.admin import record_reverted as fail_compaction

    url, rec = metastore
    ms = _ms(url)
    a = queue.enqueue(ms, "db", "a", partition="p=1", type="major").id
    before = _rows(ms, "COMPACTION_QUEUE", "CQ_ID", "CQ_STATE", "CQ_WORKER_ID", "CQ_START")
    with pytest.raises(RefusedError, match="is in state INITIATED, not READY_FOR_CLEANING"):
        fail_compaction(ms, a, message="reverted", expect_state="r")
    assert _rows(ms, "COMPACTION_QUEUE", "CQ_ID", "CQ_STATE", "CQ_WORKER_ID", "CQ_START") == before
    assert _rows(ms, "COMPLETED_COMPACTIONS", "CC_ID") == []
    queue.claim(ms, worker_id="me", worker_version="wv")
    queue.mark_compacted(ms, a)
    assert fail_compaction(ms, a, message="reverted", expect_state="r") == {
        "cq_id": a,
        "state": "a",
        "message": "reverted",
    }
    assert _rows(ms, "COMPACTION_QUEUE", "CQ_ID") == []
    assert _rows(ms, "COMPLETED_COMPACTIONS", "CC_ID", "CC_STATE", "CC_WORKER_ID") == [(a, "a", None)]


# ---------------------------------------------------------------------------------------
# Hive 4 compaction txn: open, updateCompactorState, commit
# ---------------------------------------------------------------------------------------


def test_open_compaction_txn_rows(metastore, hive_version):
    url, rec = metastore
    ms = _ms(url)
    if hive_version == 3:
        with pytest.raises(RefusedError):
            txns.open_compaction_txn(ms, user="etl")
        return
    committed = rec.open_txn("hive", "h1")  # id 1, committed: no open txn remains
    rec.commit_txn(committed)
    t0 = _now(ms)
    o = txns.open_compaction_txn(ms, user="etl", host="wk1")
    t1 = _now(ms)
    assert o.txn_id == committed + 1  # generated by the database
    (row,) = _rows(
        ms,
        "TXNS",
        "TXN_STATE",
        "TXN_STARTED",
        "TXN_LAST_HEARTBEAT",
        "TXN_USER",
        "TXN_HOST",
        "TXN_AGENT_INFO",
        "TXN_META_INFO",
        "TXN_HEARTBEAT_COUNT",
        "TXN_TYPE",
        where=lambda t: t.TXN_ID == o.txn_id,
    )
    assert row[0] == "o" and row[1] == row[2] and t0 <= row[1] <= t1
    assert row[3:] == ("etl", "wk1", None, None, None, 3)
    # MIN_HISTORY_LEVEL: computed before the insert = min(no open txn, (max id older than 1 s) + 1).
    # The committed txn 1 is younger than 1 s, the seed row 0 is old: 0 + 1 = 1 (not the new id)
    assert _rows(ms, "MIN_HISTORY_LEVEL", "MHL_TXNID", "MHL_MIN_OPEN_TXNID") == [(o.txn_id, 1)]
    # a COMPACTION txn never allocates a write id
    assert _rows(ms, "TXN_TO_WRITE_ID", "T2W_TXNID") == []
    # the young committed txn 1 still bounds the next one: min(lowest open, max id older than 1 s (0) + 1) = 1
    o2 = txns.open_compaction_txn(ms, user="etl")
    assert _rows(ms, "MIN_HISTORY_LEVEL", "MHL_MIN_OPEN_TXNID", where=lambda t: t.MHL_TXNID == o2.txn_id) == [(1,)]
    # once every row is older than the timeout, the lowest open txn decides: min(o, max id + 1) = o
    _exec(
        ms,
        lambda c, T: c.execute(
            sa.update(T.TXNS.clause).values({T.TXNS.TXN_STARTED.name: T.TXNS.TXN_STARTED - 3_600_000})
        ),
    )
    o3 = txns.open_compaction_txn(ms, user="etl")
    assert o3.txn_id == o2.txn_id + 1
    assert _rows(ms, "MIN_HISTORY_LEVEL", "MHL_MIN_OPEN_TXNID", where=lambda t: t.MHL_TXNID == o3.txn_id) == [
        (o.txn_id,)
    ]


@pytest.mark.parametrize("hive_version", [4], ids=["hive4"], indirect=True)
def test_open_txn_slower_than_the_timeout_is_deleted_and_retried(metastore, backend, hive_version, monkeypatch):
    """operations.md §2.1 step 8: an openTxns that took ≥ metastore.txn.opentxn.timeout deletes its
    rows and retries; the burnt id is never reused."""
    url, rec = metastore
    ms = _ms(url)
    clock = {"slow": 2}
    real = time.monotonic

    def fake():
        # the first two attempts each take 5 s on the stopwatch
        if clock["slow"] > 0:
            clock["n"] = clock.get("n", 0) + 1
            if clock["n"] % 2 == 0:
                clock["slow"] -= 1
                return real() + 5
        return real()

    monkeypatch.setattr(txns.time, "monotonic", fake)
    o = txns.open_compaction_txn(ms, user="etl")
    assert o.attempts == 3
    # ids 1 and 2 were burnt: only the seed row and the third attempt's row exist (SQLite's
    # AUTOINCREMENT, like a sequence, never hands out a deleted id again)
    want = 3
    assert _rows(ms, "TXNS", "TXN_ID", order=["TXN_ID"]) == [(0,), (want,)]
    assert o.txn_id == want
    assert _rows(ms, "MIN_HISTORY_LEVEL", "MHL_TXNID") == [(want,)]


def test_commit_compaction_txn_rows(metastore, hive_version):
    url, rec = metastore
    ms = _ms(url)
    if hive_version == 3:
        with pytest.raises(RefusedError):
            txns.commit_compaction_txn(ms, 1)
        return
    writer = rec.open_txn("hive", "h")  # a write txn, committed normally
    rec.add_write(writer, "db", "a", operation="i")
    rec.commit_txn(writer)
    ctc_before = _rows(ms, "COMPLETED_TXN_COMPONENTS", "CTC_TXNID", "CTC_WRITEID")
    a = queue.enqueue(ms, "db", "a", type="major").id
    queue.claim(ms, worker_id="me")
    o = txns.open_compaction_txn(ms, user="etl")
    queue.update_compactor_state(ms, a, txn_id=o.txn_id, highest_write_id=1, run_as="etl")
    assert _rows(
        ms, "TXN_COMPONENTS", "TC_TXNID", "TC_DATABASE", "TC_TABLE", "TC_PARTITION", "TC_WRITEID", "TC_OPERATION_TYPE"
    ) == [(o.txn_id, "db", "a", None, 1, "c")]
    rec.lock(LockComponent("db", "a", lock_type="shared_read"), txn_id=o.txn_id)
    later = rec.open_txn("hive", "h2")  # opened after the compactor: MAX(TXN_ID)
    queue.mark_compacted(ms, a)
    t0 = _now(ms)
    res = txns.commit_compaction_txn(ms, o.txn_id)
    t1 = _now(ms)
    assert res.commit_id == later
    assert _rows(ms, "TXNS", "TXN_STATE", where=lambda t: t.TXN_ID == o.txn_id) == [("c",)]
    assert _rows(ms, "TXN_COMPONENTS", "TC_TXNID") == []
    assert _rows(ms, "HIVE_LOCKS", "HL_TXNID") == []
    # nothing copied to COMPLETED_TXN_COMPONENTS, no WRITE_SET
    assert _rows(ms, "COMPLETED_TXN_COMPONENTS", "CTC_TXNID", "CTC_WRITEID") == ctc_before
    assert _rows(ms, "WRITE_SET", "WS_TXNID") == []
    assert _rows(ms, "MIN_HISTORY_LEVEL", "MHL_TXNID") == [(later,)]
    (cq,) = _rows(
        ms, "COMPACTION_QUEUE", "CQ_STATE", "CQ_TXN_ID", "CQ_NEXT_TXN_ID", "CQ_COMMIT_TIME", "CQ_HIGHEST_WRITE_ID"
    )
    assert cq[:3] == ("r", o.txn_id, later) and t0 <= cq[3] <= t1 and cq[4] == 1
    # idempotent; an aborted txn cannot be committed
    assert txns.commit_compaction_txn(ms, o.txn_id).already_committed
    o2 = txns.open_compaction_txn(ms, user="etl")
    txns.abort_txn(ms, o2.txn_id)
    with pytest.raises(txns.TxnNotOpen):
        txns.commit_compaction_txn(ms, o2.txn_id)


@pytest.mark.parametrize("hive_version", [4], ids=["hive4"], indirect=True)
def test_commit_refuses_a_txn_that_is_not_a_compaction(metastore, hive_version):
    url, rec = metastore
    ms = _ms(url)
    w = rec.open_txn("hive", "h")
    with pytest.raises(RefusedError):
        txns.commit_compaction_txn(ms, w)
    assert _rows(ms, "TXNS", "TXN_STATE", where=lambda t: t.TXN_ID == w) == [("o",)]


# ---------------------------------------------------------------------------------------
# abort and heartbeat
# ---------------------------------------------------------------------------------------


def test_abort_txns_rows(metastore, hive_version):
    url, rec = metastore
    ms = _ms(url)
    a = rec.open_txn("hive", "h")
    rec.add_write(a, "db", "t", operation="i")
    rec.lock(LockComponent("db", "t", lock_type="shared_write"), txn_id=a)
    b = rec.open_txn("hive", "h")
    c = rec.open_txn("hive", "h")
    rec.commit_txn(c)
    n = txns.abort_txns(ms, [b, a, c, 999])
    assert n == 2
    states = dict(_rows(ms, "TXNS", "TXN_ID", "TXN_STATE"))
    assert states[a] == "a" and states[b] == "a"
    if hive_version == 4:
        assert states[c] == "c"
        assert dict(_rows(ms, "TXNS", "TXN_ID", "TXN_META_INFO"))[a] == "abort by query command"
    else:
        assert c not in states  # Hive 3 deleted it at commit
        assert dict(_rows(ms, "TXNS", "TXN_ID", "TXN_META_INFO"))[a] is None
    assert _rows(ms, "HIVE_LOCKS", "HL_TXNID") == []
    # components and write ids stay for the Cleaner
    assert _rows(ms, "TXN_COMPONENTS", "TC_TXNID", "TC_OPERATION_TYPE") == [(a, "i")]
    assert _rows(ms, "TXN_TO_WRITE_ID", "T2W_TXNID") == [(a,)]
    assert _rows(ms, "MIN_HISTORY_LEVEL", "MHL_TXNID") == []
    # a second abort changes nothing
    assert txns.abort_txns(ms, [a, b]) == 0


def test_abort_single_txn(metastore, hive_version):
    url, rec = metastore
    ms = _ms(url)
    a = rec.open_txn("hive", "h")
    assert txns.abort_txn(ms, a) is True
    assert txns.abort_txn(ms, a) is False
    if hive_version == 4:
        assert _rows(ms, "TXNS", "TXN_META_INFO", where=lambda t: t.TXN_ID == a) == [("compaction transaction abort",)]
        c = rec.open_txn("hive", "h")
        rec.commit_txn(c)
        with pytest.raises(txns.TxnNotOpen):
            txns.abort_txn(ms, c)


def test_heartbeat(metastore, hive_version):
    url, rec = metastore
    ms = _ms(url)
    a = rec.open_txn("hive", "h")
    _exec(
        ms,
        lambda c, T: c.execute(
            sa.update(T.TXNS.clause).where(T.TXNS.TXN_ID == a).values({T.TXNS.TXN_LAST_HEARTBEAT.name: 5})
        ),
    )
    t0 = _now(ms)
    txns.heartbeat_txn(ms, a)
    t1 = _now(ms)
    (hb, cnt) = _rows(ms, "TXNS", "TXN_LAST_HEARTBEAT", "TXN_HEARTBEAT_COUNT", where=lambda t: t.TXN_ID == a)[0]
    assert t0 <= hb <= t1
    assert cnt in (0, None)  # not incremented (the recorder wrote 0)
    # the background heartbeat keeps beating until stopped, and notices an aborted txn
    with txns.Heartbeat(ms, a, interval_s=0.05) as beat:
        time.sleep(0.6)
    assert beat.beats >= 2 and beat.lost is None
    txns.abort_txns(ms, [a])
    with pytest.raises(txns.TxnNotOpen):
        txns.heartbeat_txn(ms, a)
    beat = txns.Heartbeat(ms, a, interval_s=0.05).start()
    time.sleep(0.5)
    beat.stop()
    assert beat.lost and "aborted" in beat.lost


def test_select_txns_for_abort(metastore, hive_version):
    url, rec = metastore
    ms = _ms(url)
    now = _now(ms)
    old = rec.open_txn("hive", "h", now_ms=now - 3_600_000)
    young = rec.open_txn("hive", "h")
    rows, missing = txns.select_txns(ms, older_than_ms=600_000)
    assert [r.txn_id for r in rows] == [old]
    rows, missing = txns.select_txns(ms, txn_ids=[young, 12345])
    assert [r.txn_id for r in rows] == [young] and missing == [12345]
    assert txns.parse_age("15m") == 900_000 and txns.parse_age("2h") == 7_200_000 and txns.parse_age("30") == 30_000


def test_abort_transactions_cli(metastore, hive_version, capsys):
    """``acidctl abort transactions``: a dry run by default, ``--execute`` aborts (ABORT
    TRANSACTIONS = abortTxns with 'abort by query command')."""
    from tests.metastore.helpers import cli_json, run_cli

    url, rec = metastore
    ms = _ms(url)
    now = _now(ms)
    old = rec.open_txn("hive", "h", now_ms=now - 7_200_000)
    young = rec.open_txn("hive", "h")
    doc = cli_json(capsys, ["--metastore", url, "abort", "transactions", "--older-than", "1h"])
    assert doc["dry_run"] is True and [t["txn_id"] for t in doc["transactions"]] == [old] and doc["aborted"] == 0
    assert dict(_rows(ms, "TXNS", "TXN_ID", "TXN_STATE"))[old] == "o"
    doc = cli_json(capsys, ["--metastore", url, "abort", "transactions", str(old), str(young), "999", "--execute"])
    assert doc["aborted"] == 2 and doc["not_open"] == [999]
    states = dict(_rows(ms, "TXNS", "TXN_ID", "TXN_STATE"))
    assert states[old] == states[young] == "a"
    capsys.readouterr()
    assert run_cli(["--metastore", url, "abort", "transactions"]) == 2
    assert run_cli(["--read-only", "--metastore", url, "abort", "transactions", str(old), "--execute"]) == 6


def test_compaction_lock_rows_and_conflict(metastore, hive_version):
    """The Hive 4 Worker's SHARED_READ lock owned by its compactor txn (operations.md §3.2)."""
    url, rec = metastore
    ms = _ms(url)
    if hive_version == 3:
        with pytest.raises(RefusedError):
            txns.lock_for_compaction(ms, 1, "db", "t", None, user="etl")
        return
    o = txns.open_compaction_txn(ms, user="etl", host="wk")
    t0 = _now(ms)
    ext = txns.lock_for_compaction(ms, o.txn_id, "db", "t", "p=1", user="etl", host="wk")
    t1 = _now(ms)
    assert ext == 1  # NEXT_LOCK_ID starts at 1
    assert _rows(ms, "NEXT_LOCK_ID", "NL_NEXT") == [(2,)]
    (row,) = _rows(
        ms,
        "HIVE_LOCKS",
        "HL_LOCK_EXT_ID",
        "HL_LOCK_INT_ID",
        "HL_TXNID",
        "HL_DB",
        "HL_TABLE",
        "HL_PARTITION",
        "HL_LOCK_STATE",
        "HL_LOCK_TYPE",
        "HL_LAST_HEARTBEAT",
        "HL_USER",
        "HL_HOST",
        "HL_BLOCKEDBY_EXT_ID",
    )
    assert row == (1, 1, o.txn_id, "db", "t", "p=1", "a", "r", 0, "etl", "wk", None)
    (acq,) = _rows(ms, "HIVE_LOCKS", "HL_ACQUIRED_AT")[0]
    assert t0 <= acq <= t1
    # an EXCLUSIVE lock on the table (e.g. DROP TABLE) blocks the shared lock of a later request
    rec.lock(LockComponent("db", "u", lock_type="exclusive"))  # ext 2
    o2 = txns.open_compaction_txn(ms, user="etl")
    with pytest.raises(RefusedError):
        txns.lock_for_compaction(ms, o2.txn_id, "db", "u", "p=1", user="etl")
    assert _rows(ms, "HIVE_LOCKS", "HL_TXNID", where=lambda t: t.HL_TXNID == o2.txn_id) == []
    # another table is not affected; the commit releases the lock
    assert txns.lock_for_compaction(ms, o2.txn_id, "db", "v", None, user="etl") == 4
    txns.commit_compaction_txn(ms, o.txn_id)
    assert _rows(ms, "HIVE_LOCKS", "HL_TXNID", where=lambda t: t.HL_TXNID == o.txn_id) == []


def test_revoke_timed_out_workers_and_mutex_row_created(metastore, hive_version):
    url, rec = metastore
    ms = _ms(url)
    # a real Hive schema has no AUX_TABLE rows until a mutex is first taken: enqueue creates
    # (CompactionScheduler, 0) on demand
    _exec(ms, lambda c, T: c.execute(sa.delete(T.AUX_TABLE.clause)))
    a = queue.enqueue(ms, "db", "a", type="major").id
    b = queue.enqueue(ms, "db", "b", type="major").id
    assert _rows(ms, "AUX_TABLE", "MT_KEY1", "MT_KEY2") == [("CompactionScheduler", 0)]
    queue.claim(ms, worker_id="old-worker")
    queue.claim(ms, worker_id="new-worker")
    txn = None
    if hive_version == 4:  # a real compactor txn (TXN_COMPONENTS.TC_TXNID references TXNS)
        txn = txns.open_compaction_txn(ms, user="etl").txn_id
        queue.update_compactor_state(ms, a, txn_id=txn, highest_write_id=5, run_as="etl")
    now = _now(ms)
    _exec(
        ms,
        lambda c, T: c.execute(
            sa.update(T.COMPACTION_QUEUE.clause)
            .where(T.COMPACTION_QUEUE.CQ_ID == a)
            .values({T.COMPACTION_QUEUE.CQ_START.name: now - 90_000_000})
        ),
    )
    assert queue.revoke_timed_out_workers(ms) == 1
    rows = dict((r[0], r[1:]) for r in _rows(ms, "COMPACTION_QUEUE", "CQ_ID", "CQ_STATE", "CQ_WORKER_ID", "CQ_START"))
    assert rows[a] == ("i", None, None) and rows[b][:2] == ("w", "new-worker")
    if hive_version == 4:  # not cleared by the revoke
        assert _rows(ms, "COMPACTION_QUEUE", "CQ_TXN_ID", "CQ_HIGHEST_WRITE_ID", where=lambda t: t.CQ_ID == a) == [
            (txn, 5)
        ]
