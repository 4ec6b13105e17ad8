"""The Cleaner side (acidctl/metastore/cleaner.py) on SQLite, PostgreSQL and MariaDB, Hive 3 and
4: ``markCleaned``'s exact row changes and what the Cleaner waits for, worked out from
operations.md §5 / metastore.md §9.3 (never from acidctl's own output)."""

from __future__ import annotations

import sqlalchemy as sa

from acidctl.metastore import cleaner
from acidctl.metastore.connection import connect, db_now_ms
from acidctl.metastore.recorder import LockComponent

OLD = 10_000  # ms: txns started this long ago are outside Hive 4's open-txn window


def rows(ms, table: str, order: str | None = None) -> list[dict]:
    t = getattr(ms.tables, table)
    q = sa.select(t.clause)
    if order:
        q = q.order_by(getattr(t, order))
    with ms.read() as c:
        return [{k.upper(): v for k, v in r.items()} for r in c.execute(q).mappings()]


def now(ms) -> int:
    with ms.read() as c:
        return db_now_ms(c)


def set_queue(ms, cq_id: int, **values) -> None:
    cq = ms.tables.COMPACTION_QUEUE
    with ms.engine.begin() as c:
        c.execute(
            sa.update(cq.clause).where(cq.CQ_ID == cq_id).values({getattr(cq, k).name: v for k, v in values.items()})
        )


def insert_queue(ms, **values) -> None:
    cq = ms.tables.COMPACTION_QUEUE
    with ms.engine.begin() as c:
        c.execute(sa.insert(cq.clause).values({getattr(cq, k).name: v for k, v in values.items()}))


def history(rec, hv: int):
    """A table db.t with writes on p=1 and p=2 (write ids in order of the calls):
    1 A committed p=1, 2 B aborted p=1, 3 C committed p=1, 4 D aborted p=1, 5 E committed p=2,
    6 F aborted p=2, 7 G committed p=1, 8 H open p=1. Returns the txn ids by letter."""
    t0 = None
    txns = {}
    with rec.ms.read() as c:
        t0 = db_now_ms(c) - OLD
    plan = [
        ("A", "p=1", "c"),
        ("B", "p=1", "a"),
        ("C", "p=1", "c"),
        ("D", "p=1", "a"),
        ("E", "p=2", "c"),
        ("F", "p=2", "a"),
        ("G", "p=1", "c"),
        ("H", "p=1", "o"),
    ]
    for i, (name, part, end) in enumerate(plan):
        txn = rec.open_txn("hive", "h", now_ms=t0 + i)
        rec.add_write(txn, "db", "t", partition=part, operation="i")
        if end == "c":
            rec.commit_txn(txn)
        elif end == "a":
            rec.abort_txn(txn)
        txns[name] = txn
    return txns


def test_mark_cleaned_rows(metastore, hive_version):
    url, rec = metastore
    ms = connect(url)
    txns = history(rec, hive_version)
    cq = rec.enqueue_compaction("db", "t", partition="p=1", compaction_type="major", run_as="hive")
    rec.mark_working(cq, worker_id="w-1")
    rec.mark_compacted(cq, highest_write_id=3)
    if hive_version == 4:
        set_queue(
            ms,
            cq,
            CQ_NEXT_TXN_ID=txns["H"],
            CQ_COMMIT_TIME=now(ms) - OLD,
            CQ_TXN_ID=txns["G"],
            CQ_ERROR_MESSAGE="earlier cleaner error",
            CQ_CLEANER_START=123,
        )
        # ABORT_TXN_CLEANUP retry rows (type 'c'): p=1's goes with the compaction, p=2's stays
        for i, part in ((900, "p=1"), (901, "p=2")):
            insert_queue(
                ms,
                CQ_ID=i,
                CQ_DATABASE="db",
                CQ_TABLE="t",
                CQ_PARTITION=part,
                CQ_STATE="r",
                CQ_TYPE="c",
                CQ_RETRY_RETENTION=300000,
                CQ_COMMIT_TIME=1,
            )
    before = {r["CQ_ID"]: r for r in rows(ms, "COMPACTION_QUEUE")}[cq]
    t_before = now(ms)
    res = cleaner.mark_cleaned(ms, cq, remove_empty_aborted_txns=False)  # Hive's own statements only
    t_after = now(ms)

    # queue: the request (and on Hive 4 p=1's retry row) gone
    left = sorted(r["CQ_ID"] for r in rows(ms, "COMPACTION_QUEUE"))
    assert left == ([901] if hive_version == 4 else [])
    # history: state 's', CC_END = db now, every other column from the queue row
    (h,) = [r for r in rows(ms, "COMPLETED_COMPACTIONS") if r["CC_ID"] == cq]
    assert h["CC_STATE"] == "s" and t_before <= h["CC_END"] <= t_after
    for c, v in h.items():
        if c not in ("CC_STATE", "CC_END"):
            assert v == before["CQ_" + c[3:]], c
    assert len(h) == (25 if hive_version == 4 else 14)
    if hive_version == 4:
        assert h["CC_ERROR_MESSAGE"] == "earlier cleaner error" and h["CC_TXN_ID"] == txns["G"]
    # COMPLETED_TXN_COMPONENTS: p=1 write ids 1 and 3 (<= 3) gone; 7 (above) and p=2's 5 stay
    ctc = sorted((r["CTC_PARTITION"], r["CTC_WRITEID"]) for r in rows(ms, "COMPLETED_TXN_COMPONENTS"))
    assert ctc == [("p=1", 7), ("p=2", 5)]
    # TXN_COMPONENTS: aborted B (write id 2 <= 3) gone; aborted D (4 > 3), F (p=2), open H stay
    tc = sorted((r["TC_TXNID"], r["TC_WRITEID"]) for r in rows(ms, "TXN_COMPONENTS"))
    assert tc == sorted([(txns["D"], 4), (txns["F"], 6), (txns["H"], 8)])
    assert res["aborted_txns"] == [txns["B"]]
    assert res["completed_txn_components_deleted"] == 2 and res["txn_components_deleted"] == 1
    # Hive's markCleaned statements leave TXNS alone; the housekeeping removes the emptied B only
    states = {r["TXN_ID"]: r["TXN_STATE"] for r in rows(ms, "TXNS")}
    assert states[txns["B"]] == "a" and states[txns["D"]] == "a" and res["aborted_txns_removed"] == []
    assert cleaner.remove_empty_aborted_txns(ms, [txns["B"], txns["D"]]) == [txns["B"]]
    states = {r["TXN_ID"]: r["TXN_STATE"] for r in rows(ms, "TXNS")}
    assert txns["B"] not in states and states[txns["D"]] == "a" and states[txns["F"]] == "a"


def test_mark_cleaned_unpartitioned_without_write_id(metastore, hive_version):
    """Highest write id 0/NULL: COMPLETED_TXN_COMPONENTS of the table go whole (no write-id
    term); aborted TXN_COMPONENTS stay (Hive 3: ``<= 0`` matches none; Hive 4 skips)."""
    url, rec = metastore
    ms = connect(url)
    a = rec.open_txn()
    rec.add_write(a, "db", "u")
    rec.commit_txn(a)
    b = rec.open_txn()
    rec.add_write(b, "db", "u")
    rec.abort_txn(b)
    cq = rec.enqueue_compaction("db", "u", compaction_type="minor")
    set_queue(ms, cq, CQ_STATE="r")
    cleaner.mark_cleaned(ms, cq)
    assert rows(ms, "COMPLETED_TXN_COMPONENTS") == []
    assert [r["TC_TXNID"] for r in rows(ms, "TXN_COMPONENTS")] == [b]
    assert [(r["CC_ID"], r["CC_STATE"], r["CC_TYPE"]) for r in rows(ms, "COMPLETED_COMPACTIONS")] == [(cq, "s", "i")]


def test_hive3_waits_for_locks_present_on_the_exact_partition(metastore, hive_version):
    if hive_version != 3:
        return _hive4_waits(metastore)
    url, rec = metastore
    ms = connect(url)
    cq = rec.enqueue_compaction("db", "t", partition="p=1")
    rec.mark_working(cq)
    rec.mark_compacted(cq, highest_write_id=5)
    txn = rec.open_txn()
    l_part = rec.lock(LockComponent("db", "t", "p=1", "shared_read"), txn_id=txn)
    rec.lock(LockComponent("db", "t", None, "shared_read"))  # table level: not related
    rec.lock(LockComponent("db", "t", "p=2", "exclusive"))  # another partition
    l_nontxn = rec.lock(LockComponent("DB", "T", "p=1", "shared_write"), state="waiting")
    reqs = cleaner.ready_requests(ms, "db", "t")
    assert [r["id"] for r in reqs] == [cq]
    waits = cleaner.cleaner_waits(ms, reqs)[cq]
    assert [(w["kind"], w["lock_id"], w["txn_id"]) for w in waits] == [("lock", l_part, txn), ("lock", l_nontxn, None)]
    rec.commit_txn(txn)  # its lock goes with it
    rec.unlock(l_nontxn)
    assert cleaner.cleaner_waits(ms, reqs)[cq] == []


def _hive4_waits(metastore):
    url, rec = metastore
    ms = connect(url)
    t0 = now(ms) - OLD
    reader = rec.open_txn(now_ms=t0)  # an old open txn anywhere
    comp = rec.open_txn(txn_type=3, now_ms=t0 + 1)  # the compactor txn
    cq = rec.enqueue_compaction("db", "t", partition="p=1")
    rec.mark_working(cq)
    rec.mark_compacted(cq, highest_write_id=5)
    cq2 = rec.enqueue_compaction("db", "t", partition="p=1")
    rec.mark_working(cq2)
    rec.mark_compacted(cq2, highest_write_id=9)
    set_queue(ms, cq, CQ_TXN_ID=comp)
    reqs = cleaner.ready_requests(ms, "db", "t")
    assert [r["id"] for r in reqs] == [cq, cq2]
    w = cleaner.cleaner_waits(ms, reqs)
    # the compactor txn is still open (markCompacted before commit): held back; cq2 waits for cq
    assert [x["kind"] for x in w[cq]] == ["compactor-txn-open"]
    assert [(x["kind"], x["cq_id"]) for x in w[cq2]] == [("earlier-request", cq)]
    with ms.engine.begin() as c:  # the commit as Hive 4 records it on the queue row
        t = ms.tables.TXNS
        c.execute(sa.update(t.clause).where(t.TXN_ID == comp).values({t.TXN_STATE.name: "c"}))
        mhl = ms.tables.MIN_HISTORY_LEVEL
        c.execute(sa.delete(mhl.clause).where(mhl.MHL_TXNID == comp))
    set_queue(ms, cq, CQ_NEXT_TXN_ID=comp, CQ_COMMIT_TIME=t0 + 2)
    reqs = cleaner.ready_requests(ms, "db", "t")
    w = cleaner.cleaner_waits(ms, reqs)
    # the older open txn is below CQ_NEXT_TXN_ID (HIVE-26704)
    assert [(x["kind"], x["txn_id"]) for x in w[cq]] == [("open-txn", reader)]
    rec.commit_txn(reader)
    reqs = cleaner.ready_requests(ms, "db", "t")
    w = cleaner.cleaner_waits(ms, reqs)
    assert w[cq] == [] and w[cq2] == []
    # retention: CQ_RETRY_RETENTION after the commit time
    set_queue(ms, cq, CQ_COMMIT_TIME=now(ms), CQ_RETRY_RETENTION=600_000)
    w = cleaner.cleaner_waits(ms, cleaner.ready_requests(ms, "db", "t"))
    # the minimum per partition is taken over the requests past their retention only: cq2 goes first
    assert [x["kind"] for x in w[cq]] == ["retention"] and w[cq2] == []
    # with minhistorywriteid: a reader's MIN_HISTORY_WRITE_ID at or below the highest write id
    set_queue(ms, cq, CQ_COMMIT_TIME=t0, CQ_RETRY_RETENTION=0)
    r2 = rec.open_txn(now_ms=t0 + 5)
    mh = ms.tables.MIN_HISTORY_WRITE_ID
    with ms.engine.begin() as c:
        c.execute(
            sa.insert(mh.clause).values(
                {mh.MH_TXNID.name: r2, mh.MH_DATABASE.name: "db", mh.MH_TABLE.name: "t", mh.MH_WRITEID.name: 5}
            )
        )
    w = cleaner.cleaner_waits(ms, cleaner.ready_requests(ms, "db", "t"), use_min_history_write_id=True)
    assert [(x["kind"], x["txn_id"], x["write_id"]) for x in w[cq]] == [("min-history-write-id", r2, 5)]


def test_cleaner_mutex(metastore, hive_version, backend):
    """acidctl cleans under Hive's ``Cleaner`` mutex (AUX_TABLE row locked FOR UPDATE, operations.md
    §1): while another instance holds it, acidctl waits and then gives up (exit 6); a missing
    row is created as ('Cleaner', 0)."""
    import time

    import pytest

    from acidctl.errors import LockConflict

    url, rec = metastore
    ms = connect(url)
    aux = ms.tables.AUX_TABLE
    with ms.engine.begin() as c:
        c.execute(sa.delete(aux.clause).where(aux.MT_KEY1 == "Cleaner"))
    with cleaner.cleaner_mutex(ms, wait_s=1):
        pass
    if backend == "sqlite":
        return  # no Hive on SQLite: every write step holds the whole database instead
    assert [(r["MT_KEY1"], r["MT_KEY2"]) for r in rows(ms, "AUX_TABLE") if r["MT_KEY1"] == "Cleaner"] == [
        ("Cleaner", 0)
    ]
    other = ms.engine.connect()
    tx = other.begin()
    other.execute(sa.select(aux.MT_KEY1).where(aux.MT_KEY1 == "Cleaner").with_for_update()).all()
    t0 = time.monotonic()
    with pytest.raises(LockConflict):
        with cleaner.cleaner_mutex(ms, wait_s=1):
            pass
    assert time.monotonic() - t0 >= 0.9
    tx.rollback()
    other.close()
    with cleaner.cleaner_mutex(ms, wait_s=1):
        pass


def test_mark_cleaned_removes_the_aborted_txns_it_emptied(metastore, hive_version):
    """metastore.md §9.3: markCleaned as a whole also removes the now-empty aborted TXNS rows
    (only those: an aborted txn with components left on another table or above the highest
    write id stays)."""
    url, rec = metastore
    ms = connect(url)
    txns = history(rec, hive_version)
    other = rec.open_txn(now_ms=now(ms) - OLD)
    rec.add_write(other, "db", "t", partition="p=1")  # write id 9
    rec.add_write(other, "db", "u")  # and another table
    rec.abort_txn(other)
    cq = rec.enqueue_compaction("db", "t", partition="p=1")
    rec.mark_working(cq)
    rec.mark_compacted(cq, highest_write_id=9)
    res = cleaner.mark_cleaned(ms, cq)
    assert res["aborted_txns"] == sorted([txns["B"], txns["D"], other])
    assert res["aborted_txns_removed"] == sorted([txns["B"], txns["D"]])
    states = {r["TXN_ID"]: r["TXN_STATE"] for r in rows(ms, "TXNS")}
    assert txns["B"] not in states and txns["D"] not in states
    assert states[other] == "a" and states[txns["F"]] == "a" and states[txns["H"]] == "o"
    assert sorted((r["TC_TXNID"], r["TC_TABLE"], r["TC_PARTITION"]) for r in rows(ms, "TXN_COMPONENTS")) == sorted(
        [(txns["F"], "t", "p=2"), (txns["H"], "t", "p=1"), (other, "u", None)]
    )
