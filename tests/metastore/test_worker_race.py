"""Two ``acidctl worker --once`` processes and a scripted "Hive worker" race Hive's conditional
claim (operations.md §3.1) for 20 queued requests on a real PostgreSQL / MariaDB metastore: every
request is claimed by exactly one of them, and each of the tables acidctl claimed is compacted
exactly once (one new base, the merged read unchanged)."""

from __future__ import annotations

import threading
import time

import pytest
import sqlalchemy as sa

from acidctl.metastore import queue
from acidctl.metastore.connection import connect
from tests.metastore.helpers import json_result, make_table, worker_process

N = 20


def hive_worker(url: str, hive_version: int, claimed: list, stop: threading.Event) -> None:
    """Hive's findNextToCompact, written out by hand (not acidctl's code): select the initiated
    rows, then the conditional update per row until one succeeds; repeat."""
    eng = sa.create_engine(url, isolation_level="READ COMMITTED")
    ms = connect(url)
    cq = ms.tables.COMPACTION_QUEUE
    try:
        while not stop.is_set():
            with eng.begin() as c:
                ids = [r[0] for r in c.execute(sa.select(cq.CQ_ID).where(cq.CQ_STATE == "i").order_by(cq.CQ_ID))]
                got = None
                for i in ids:
                    n = c.execute(
                        sa.update(cq.clause)
                        .where(cq.CQ_ID == i, cq.CQ_STATE == "i")
                        .values(
                            {
                                cq.CQ_WORKER_ID.name: "hivehost-17",
                                cq.CQ_START.name: int(time.time() * 1000),
                                cq.CQ_STATE.name: "w",
                            }
                        )
                    ).rowcount
                    if n == 1:
                        got = i
                        break
            if got is None:
                if not ids:
                    return
            else:
                claimed.append(got)
                # "compacting": about as long as an acidctl worker takes for one of these tables, so
                # the race stays fair now that acidctl takes one request at a time (each behind its
                # partition lock) instead of a batch
                time.sleep(0.5)
    finally:
        eng.dispose()


def _wait_for_lock_waiters(url: str, backend: str, n: int, timeout: float = 120.0) -> None:
    """Until ``n`` sessions wait for a row lock (PostgreSQL: pg_stat_activity; MariaDB:
    information_schema.INNODB_TRX)."""
    eng = sa.create_engine(url)
    q = (
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
        if backend == "postgres"
        else "SELECT count(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'"
    )
    deadline = time.time() + timeout
    try:
        while time.time() < deadline:
            with eng.connect() as c:
                if c.execute(sa.text(q)).scalar() >= n:
                    return
            time.sleep(0.1)
        raise AssertionError(f"the claimers did not all reach the queue within {timeout}s")
    finally:
        eng.dispose()


@pytest.mark.parametrize(
    "backend", [pytest.param("postgres", marks=pytest.mark.postgres), pytest.param("mysql", marks=pytest.mark.mysql)]
)
def test_two_acidctl_workers_and_a_hive_worker_claim_each_request_once(metastore, backend, hive_version, tmp_path):
    url, rec = metastore
    wh = tmp_path / "wh"
    locs = {}
    for i in range(N):
        locs[f"t{i:02d}"] = make_table(rec, wh, "race", f"t{i:02d}")
    ms = connect(url)
    ids = {queue.enqueue(ms, "race", name, type="major").id: name for name in locs}
    assert len(ids) == N

    hive_claimed: list[int] = []
    stop = threading.Event()
    # hold every queue row's lock until all three claimers are waiting on it, so they start their
    # conditional updates at the same moment (a real race, not one after the other)
    blocker = sa.create_engine(url, isolation_level="READ COMMITTED")
    cq = ms.tables.COMPACTION_QUEUE
    with blocker.connect() as bc:
        tx = bc.begin()
        bc.execute(sa.select(cq.CQ_ID).with_for_update()).all()
        procs = [worker_process(url, N) for _ in range(2)]
        t = threading.Thread(target=hive_worker, args=(url, hive_version, hive_claimed, stop))
        t.start()
        _wait_for_lock_waiters(url, backend, 3)
        tx.rollback()
    blocker.dispose()
    outs = [json_result(p, timeout=600) for p in procs]
    stop.set()
    t.join(timeout=60)

    by_worker = [[r["cq_id"] for r in o["requests"]] for o in outs]
    everyone = by_worker[0] + by_worker[1] + hive_claimed
    # every request claimed exactly once, by exactly one worker
    assert sorted(everyone) == sorted(ids)
    assert len(set(everyone)) == len(everyone)
    assert outs[0]["worker_id"] != outs[1]["worker_id"]
    # all three took part in the race
    assert all(len(b) >= 1 for b in by_worker) and len(hive_claimed) >= 1, (by_worker, hive_claimed)

    eng = sa.create_engine(url)
    cq = ms.tables.COMPACTION_QUEUE
    with eng.connect() as c:
        rows = {
            r[0]: (r[1], r[2], r[3])
            for r in c.execute(sa.select(cq.CQ_ID, cq.CQ_STATE, cq.CQ_WORKER_ID, cq.CQ_HIGHEST_WRITE_ID))
        }
    eng.dispose()
    for w, o in zip(by_worker, outs):
        for r in o["requests"]:
            assert r["state"] == "ready for cleaning", r
    for cq_id, name in ids.items():
        loc = locs[name]
        bases = sorted(p.name for p in loc.iterdir() if p.name.startswith("base_"))
        if cq_id in hive_claimed:
            # the scripted Hive worker holds it: acidctl never touched the table
            assert rows[cq_id][:2] == ("w", "hivehost-17") and bases == []
            continue
        assert rows[cq_id] == ("r", None, 2)  # markCompacted, compactor hwm 2
        # compacted exactly once: one base over write ids 1..2 (Hive 4: named by its compactor txn)
        assert len(bases) == 1 and bases[0].startswith("base_0000002")
        assert (bases[0] == "base_0000002") == (hive_version == 3)


def test_initiator_once_on_every_backend(metastore, hive_version, tmp_path, capsys):
    """``initiator --once`` under the Initiator mutex (PostgreSQL/MariaDB): a table with two
    deltas, no base and hive.compactor.delta.num.threshold=1 is due for MAJOR (directory-state.md
    §8.2: no base → major); a no_auto_compaction table is skipped; the next cycle sees the queued
    request and enqueues nothing."""
    from tests.metastore.helpers import cli_json

    url, rec = metastore
    wh = tmp_path / "wh"
    make_table(rec, wh, "ini", "due")
    make_table(rec, wh, "ini", "quiet")
    make_table(rec, wh, "ini", "manual")
    eng = sa.create_engine(url)
    ms = connect(url)
    tp, tb = ms.tables.TABLE_PARAMS, ms.tables.TBLS
    with eng.begin() as c:
        ids = dict(c.execute(sa.select(tb.TBL_NAME, tb.TBL_ID)).all())
        c.execute(
            sa.insert(tp.clause).values(
                {
                    tp.TBL_ID.name: ids["due"],
                    tp.PARAM_KEY.name: "compactorthreshold.hive.compactor.delta.num.threshold",
                    tp.PARAM_VALUE.name: "1",
                }
            )
        )
        c.execute(
            sa.insert(tp.clause).values(
                {tp.TBL_ID.name: ids["manual"], tp.PARAM_KEY.name: "NO_AUTO_COMPACTION", tp.PARAM_VALUE.name: "TRUE"}
            )
        )
    eng.dispose()
    doc = cli_json(capsys, ["--metastore", url, "initiator", "--once", "--db", "ini"])
    acts = {c["table"]: (c["action"], c.get("type"), c.get("id")) for c in doc["checked"]}
    assert acts == {
        "ini.due": ("enqueued", "major", 1),
        "ini.quiet": ("not-due", None, None),
        "ini.manual": ("skipped", None, None),
    }
    cq = ms.tables.COMPACTION_QUEUE
    eng = sa.create_engine(url)
    with eng.connect() as c:
        rows = [tuple(r) for r in c.execute(sa.select(cq.CQ_ID, cq.CQ_DATABASE, cq.CQ_TABLE, cq.CQ_STATE, cq.CQ_TYPE))]
    eng.dispose()
    assert rows == [(1, "ini", "due", "i", "a")]
    doc = cli_json(capsys, ["--metastore", url, "initiator", "--once"])
    assert {c["table"]: c["action"] for c in doc["checked"]}["ini.due"] == "queued"


def test_compact_claims_the_queued_request_on_every_backend(metastore, hive_version, tmp_path, capsys):
    """``compact DB.TABLE`` on SQLite/PostgreSQL/MariaDB: the request someone queued
    (``ALTER TABLE ... COMPACT``, here Hive's own enqueue shape via the recorder) is claimed, not
    duplicated, and ends ``ready for cleaning`` with the compactor hwm (2); Hive 4 through a
    committed COMPACTION txn that names the output and has left no TXN_COMPONENTS / HIVE_LOCKS /
    COMPLETED_TXN_COMPONENTS rows behind; a table without a request gets a manual one."""
    from tests.metastore.helpers import cli_json

    url, rec = metastore
    wh = tmp_path / "wh"
    loc = make_table(rec, wh, "db1", "queued")
    loc2 = make_table(rec, wh, "db1", "fresh")
    queued = rec.enqueue_compaction("db1", "queued", compaction_type="major")
    ms = connect(url)
    eng = sa.create_engine(url)
    T = ms.tables
    with eng.connect() as c:
        ctc_before = c.execute(sa.select(sa.func.count()).select_from(T.COMPLETED_TXN_COMPONENTS.clause)).scalar()
    doc = cli_json(capsys, ["--metastore", url, "compact", "--major", "--engine", "local", "db1.queued"])
    (p,) = doc["partitions"]
    m = p["metastore"]
    assert (m["cq_id"], m["claimed_request"], m["state"], m["highest_write_id"]) == (
        queued,
        True,
        "ready for cleaning",
        2,
    )
    doc2 = cli_json(capsys, ["--metastore", url, "compact", "--major", "--engine", "local", "db1.fresh"])
    m2 = doc2["partitions"][0]["metastore"]
    assert m2["claimed_request"] is False and m2["cq_id"] == queued + 1
    cq = T.COMPACTION_QUEUE
    with eng.connect() as c:
        rows = [
            tuple(r)
            for r in c.execute(
                sa.select(cq.CQ_ID, cq.CQ_TABLE, cq.CQ_STATE, cq.CQ_HIGHEST_WRITE_ID, cq.CQ_WORKER_ID).order_by(
                    cq.CQ_ID
                )
            )
        ]
        assert rows == [(queued, "queued", "r", 2, None), (queued + 1, "fresh", "r", 2, None)]
        if hive_version == 4:
            for mm in (m, m2):
                txn = mm["txn_id"]
                st, ty = c.execute(sa.select(T.TXNS.TXN_STATE, T.TXNS.TXN_TYPE).where(T.TXNS.TXN_ID == txn)).one()
                assert (st, ty) == ("c", 3)
                nxt = c.execute(sa.select(cq.CQ_NEXT_TXN_ID).where(cq.CQ_TXN_ID == txn)).scalar()
                assert nxt is not None and nxt >= txn
            assert c.execute(sa.select(sa.func.count()).select_from(T.TXN_COMPONENTS.clause)).scalar() == 0
            assert c.execute(sa.select(sa.func.count()).select_from(T.HIVE_LOCKS.clause)).scalar() == 0
            assert doc["partitions"][0]["output_dirs"] == [f"base_0000002_v{m['txn_id']:07d}"]
        else:
            assert doc["partitions"][0]["output_dirs"] == ["base_0000002"]
        assert (
            c.execute(sa.select(sa.func.count()).select_from(T.COMPLETED_TXN_COMPONENTS.clause)).scalar() == ctc_before
        )
    eng.dispose()
    assert (loc / doc["partitions"][0]["output_dirs"][0]).is_dir() and (
        loc2 / doc2["partitions"][0]["output_dirs"][0]
    ).is_dir()
