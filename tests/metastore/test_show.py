"""`acidctl show transactions|locks|compactions` against Hive-shaped rows (metastore.md §4, §8).

Rows are written by the Recorder the way Hive writes them (or inserted directly where Hive's
code path is not modelled); expected values are decoded by hand from the spec's tables."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from acidctl.metastore.recorder import LockComponent
from tests.metastore.helpers import cli_json, cli_text, insert_txn, run_cli, table_rows

T0 = 1_700_000_000_000  # 2023-11-14 22:13:20.000 UTC


# ---------------------------------------------------------------------------------------
# SHOW TRANSACTIONS
# ---------------------------------------------------------------------------------------


def _txns(rec):
    t1 = rec.open_txn(user="alice", host="h1", now_ms=T0)
    rec.add_write(t1, "db", "t")
    rec.commit_txn(t1)
    t2 = rec.open_txn(user="bob", host="h2", now_ms=T0 + 1000)
    rec.add_write(t2, "db", "t")
    rec.abort_txn(t2)
    t3 = rec.open_txn(user="carol", host="h3", now_ms=T0 + 2000)
    return t1, t2, t3


def test_show_transactions(metastore, hive_version, capsys):
    url, rec = metastore
    _txns(rec)
    doc = cli_json(capsys, ["--metastore", url, "show", "transactions"])
    # committed txn 1 is not shown (Hive 3: deleted; Hive 4: 'c' skipped); 2 aborted, 3 open
    assert [(t["txnid"], t["state"], t["user"], t["host"], t["startedtime"]) for t in doc["transactions"]] == [
        (2, "ABORTED", "bob", "h2", T0 + 1000),
        (3, "OPEN", "carol", "h3", T0 + 2000),
    ]
    assert doc["transactions"][0]["lastheartbeattime"] == T0 + 1000
    assert doc["txn_high_water_mark"] == 3
    text = cli_text(capsys, ["--metastore", url, "-o", "wide", "show", "transactions"])
    rows = table_rows(text)
    # -o wide: Hive's columns (headers in acidctl's one style, UPPER CASE)
    assert rows[0] == ["TRANSACTION ID", "TRANSACTION STATE", "STARTED TIME", "LAST HEARTBEAT TIME", "USER", "HOSTNAME"]
    assert rows[1] == ["2", "ABORTED", "2023-11-14 22:13:21.000", "2023-11-14 22:13:21.000", "bob", "h2"]
    assert rows[2][:2] == ["3", "OPEN"]
    # filters pushed into SQL
    d = cli_json(capsys, ["--metastore", url, "show", "transactions", "--state", "open"])
    assert [t["txnid"] for t in d["transactions"]] == [3]
    d = cli_json(capsys, ["--metastore", url, "show", "transactions", "--user", "bob"])
    assert [t["txnid"] for t in d["transactions"]] == [2]
    d = cli_json(capsys, ["--metastore", url, "show", "transactions", "--limit", "1"])
    assert [t["txnid"] for t in d["transactions"]] == [2]
    d = cli_json(capsys, ["--metastore", url, "show", "transactions", "--older-than", "1d"])
    assert [t["txnid"] for t in d["transactions"]] == [2, 3]  # T0 is 2023: older than a day


@pytest.mark.parametrize("hive_version", [4], ids=["hive4"])
def test_show_transactions_hive4_gaps(metastore, hive_version):
    from acidctl.metastore.queries import show_transactions

    url, rec = metastore
    insert_txn(rec, 1, "c", T0)
    insert_txn(rec, 4, "o", T0 + 5000)
    rep = show_transactions(url, now_ms=T0 + 5100)
    # row 4 is 100 ms old: ids 2 and 3 (between rows 1 and 4) are synthetic open txns without user
    assert [(t["txnid"], t["state"], t["user"], t["synthetic"]) for t in rep.transactions] == [
        (2, "OPEN", None, True),
        (3, "OPEN", None, True),
        (4, "OPEN", "u", False),
    ]
    rep = show_transactions(url, now_ms=T0 + 9000)
    assert [t["txnid"] for t in rep.transactions] == [4]


# ---------------------------------------------------------------------------------------
# SHOW LOCKS
# ---------------------------------------------------------------------------------------


def _locks(rec):
    txn = rec.open_txn(user="alice", host="h1", now_ms=T0)
    e1 = rec.lock(
        [LockComponent("DB", "T", None, "shared_write")],
        txn_id=txn,
        user="alice",
        host="h1",
        agent_info="hive_20231114",
        now_ms=T0,
    )
    e2 = rec.lock(
        [LockComponent("db", "t2", "ds=1", "shared_read"), LockComponent("db", "t2", "ds=2", "shared_read")],
        user="bob",
        host="h2",
        now_ms=T0 + 10,
    )
    e3 = rec.lock(
        LockComponent("db", "t", None, "exclusive"),
        user="carol",
        host="h3",
        state="waiting",
        blocked_by=(e1, 1),
        now_ms=T0 + 20,
    )
    return txn, e1, e2, e3


def test_show_locks(metastore, hive_version, capsys):
    url, rec = metastore
    txn, e1, e2, e3 = _locks(rec)
    assert (e1, e2, e3) == (1, 2, 3)
    doc = cli_json(capsys, ["--metastore", url, "show", "locks"])
    locks = doc["locks"]
    # acquired before waiting; among acquired SHARED_READ (lock 2) before SHARED_WRITE (lock 1)
    assert [l["lockid"] for l in locks] == ["2.1", "2.2", "1.1", "3.1"]
    l1 = locks[2]
    assert l1 == {
        **l1,
        "database": "db",
        "table": "t",
        "partition": None,
        "lock_state": "ACQUIRED",
        "blocked_by": None,
        "lock_type": "SHARED_WRITE",
        "transaction_id": txn,
        "last_heartbeat": 0,
        "acquired_at": T0,
        "user": "alice",
        "hostname": "h1",
        "agent_info": "hive_20231114",
    }
    l2 = locks[0]
    assert (l2["partition"], l2["transaction_id"], l2["last_heartbeat"], l2["lock_type"]) == (
        "ds=1",
        None,
        T0 + 10,
        "SHARED_READ",
    )
    l3 = locks[3]
    assert (l3["lock_state"], l3["lock_type"], l3["blocked_by"], l3["acquired_at"]) == (
        "WAITING",
        "EXCLUSIVE",
        "1.1",
        None,
    )
    rows = table_rows(cli_text(capsys, ["--metastore", url, "-o", "wide", "show", "locks"]))
    assert rows[0] == [
        "LOCK ID",
        "DATABASE",
        "TABLE",
        "PARTITION",
        "STATE",
        "BLOCKED BY",
        "TYPE",
        "TRANSACTION ID",
        "LAST HEARTBEAT",
        "ACQUIRED AT",
        "USER",
        "HOSTNAME",
        "AGENT INFO",
    ]
    assert rows[3] == [
        "1.1",
        "db",
        "t",
        "NULL",
        "ACQUIRED",
        "",
        "SHARED_WRITE",
        str(txn),
        "0",
        "2023-11-14 22:13:20.000",
        "alice",
        "h1",
        "hive_20231114",
    ]
    assert rows[4] == [
        "3.1",
        "db",
        "t",
        "NULL",
        "WAITING",
        "1.1",
        "EXCLUSIVE",
        "NULL",
        "2023-11-14 22:13:20.020",
        "NULL",
        "carol",
        "h3",
        "NULL",
    ]
    # filters
    d = cli_json(capsys, ["--metastore", url, "show", "locks", "db.t"])
    assert [l["lockid"] for l in d["locks"]] == ["1.1", "3.1"]
    d = cli_json(capsys, ["--metastore", url, "show", "locks", "DB.T2", "--partition", "ds=2"])
    assert [l["lockid"] for l in d["locks"]] == ["2.2"]
    d = cli_json(capsys, ["--metastore", url, "show", "locks", "db"])
    assert len(d["locks"]) == 4
    d = cli_json(capsys, ["--metastore", url, "show", "locks", "--extended", "--txn", str(txn)])
    assert [(l["lockid"], l["txn_state"], l["txn_last_heartbeat"]) for l in d["locks"]] == [("1.1", "OPEN", T0)]
    # committing the txn releases its lock (Hive deletes HIVE_LOCKS rows at commit)
    rec.commit_txn(txn)
    d = cli_json(capsys, ["--metastore", url, "show", "locks"])
    assert [l["lockid"] for l in d["locks"]] == ["2.1", "2.2", "3.1"]


# ---------------------------------------------------------------------------------------
# SHOW COMPACTIONS
# ---------------------------------------------------------------------------------------


def _compactions(rec, hv):
    # 1: cleaned (succeeded): enqueued T0, worked T0+1000..., cleaned at T0+5000
    c1 = rec.enqueue_compaction("db", "t", compaction_type="major", now_ms=T0)
    rec.mark_working(c1, worker_id="node1.example-7", now_ms=T0 + 1000)
    rec.mark_compacted(c1, highest_write_id=4)
    rec.mark_cleaned(c1, now_ms=T0 + 5000)
    # 2: failed: minor on partition, started T0+2000, failed at T0+2500
    c2 = rec.enqueue_compaction("db", "p", partition="ds=1", compaction_type="minor", now_ms=T0 + 100)
    rec.mark_working(c2, worker_id="node2-3", now_ms=T0 + 2000)
    rec.mark_failed(c2, error_message="boom", now_ms=T0 + 2500)
    # 3: ready for cleaning (queue), started T0+3000
    c3 = rec.enqueue_compaction("db", "t", compaction_type="minor", pool="etl", now_ms=T0 + 200)
    rec.mark_working(c3, worker_id="node1.example-8", now_ms=T0 + 3000)
    rec.mark_compacted(c3, highest_write_id=6)
    # 4: initiated (queue), never started
    c4 = rec.enqueue_compaction("other", "u", compaction_type="major", now_ms=T0 + 300)
    # 5: 'a' (attempted / did not initiate), history row written directly
    vals = dict(
        CC_ID=5, CC_DATABASE="db", CC_TABLE="t", CC_STATE="a", CC_TYPE="a", CC_START=T0 + 4000, CC_END=T0 + 4000
    )
    rec.add_completed_compactions([vals])
    return c1, c2, c3, c4


def test_show_compactions(metastore, backend, hive_version, capsys):
    url, rec = metastore
    assert _compactions(rec, hive_version) == (1, 2, 3, 4)
    doc = cli_json(capsys, ["--metastore", url, "show", "compactions"])
    cs = {c["compactionid"]: c for c in doc["compactions"]}
    if hive_version == 3:
        # Hive 3 has no order; acidctl: greatest(end, start, commit) desc: 1 (T0+5000), 5 (T0+4000),
        # 3 (T0+3000), 2 (T0+2500), then 4 (no activity)
        order = lambda ids: sorted(ids, key=[1, 5, 3, 2, 4].index)  # noqa: E731
    else:
        # Hive 4's ORDER BY: no row has a commit time, so the CASE key is NULL everywhere and
        # "CC_ENQUEUE_TIME" asc decides: 1 (T0), 2, 3, 4 (T0+300); 5 has a NULL enqueue time,
        # last on PostgreSQL (NULLs sort high), first on MySQL/MariaDB and SQLite
        seq = [1, 2, 3, 4, 5] if backend == "postgres" else [5, 1, 2, 3, 4]
        order = lambda ids: sorted(ids, key=seq.index)  # noqa: E731
    assert [c["compactionid"] for c in doc["compactions"]] == order([1, 2, 3, 4, 5])
    a_text = "attempted" if hive_version == 3 else "did not initiate"
    assert [(cs[i]["type"], cs[i]["state"]) for i in (1, 2, 3, 4, 5)] == [
        ("MAJOR", "succeeded"),
        ("MINOR", "failed"),
        ("MINOR", "ready for cleaning"),
        ("MAJOR", "initiated"),
        ("MAJOR", a_text),
    ]
    assert cs[1]["starttime"] == T0 + 1000 and cs[1]["endtime"] == T0 + 5000 and cs[1]["duration"] == 4000
    assert cs[1]["hightestwriteid"] == 4
    assert cs[2]["partname"] == "ds=1" and cs[2]["duration"] == 500
    assert cs[3]["duration"] is None and cs[3]["endtime"] is None  # queue rows have no end
    assert cs[4]["starttime"] is None and cs[4]["worker"] is None
    if hive_version == 4:
        assert cs[1]["enqueuetime"] == T0 and cs[1]["poolname"] == "default"
        assert cs[3]["poolname"] == "etl"
        assert (cs[1]["initiatorhost"], cs[1]["initiatorid"]) == ("localhost", "manual")
        assert cs[2]["errormessage"] == "boom"
        assert (cs[2]["workerhost"], cs[2]["workerid"]) == ("node2", "3")
    rows = table_rows(cli_text(capsys, ["--metastore", url, "-o", "wide", "show", "compactions"]))
    if hive_version == 3:
        assert rows[0] == [
            "ID",
            "DATABASE",
            "TABLE",
            "PARTITION",
            "TYPE",
            "STATE",
            "WORKER",
            "START TIME",
            "DURATION",
            "HADOOPJOBID",
        ]
        # worker cleared by markCompacted; missing values print " --- "
        assert rows[1] == ["1", "db", "t", "---", "MAJOR", "succeeded", "---", "2023-11-14 22:13:21.000", "4s", "---"]
        assert rows[5] == ["4", "other", "u", "---", "MAJOR", "initiated", "---", "---", "---", "---"]
    else:
        assert rows[0] == [
            "ID",
            "DATABASE",
            "TABLE",
            "PARTITION",
            "TYPE",
            "STATE",
            "WORKER HOST",
            "WORKER",
            "ENQUEUE TIME",
            "START TIME",
            "DURATION",
            "HADOOPJOBID",
            "ERROR MESSAGE",
            "INITIATOR HOST",
            "INITIATOR",
            "POOL NAME",
            "TXNID",
            "NEXT TXNID",
            "COMMIT TIME",
            "HIGHEST WRITEID",
        ]
        # TxnId / Next TxnId / Commit Time NULL print 0 (Hive's getLong); Highest WriteId never set
        row2 = next(r for r in rows[1:] if r[0] == "2")
        assert row2 == [
            "2",
            "db",
            "p",
            "ds=1",
            "MINOR",
            "failed",
            "node2",
            "3",
            "2023-11-14 22:13:20.100",
            "2023-11-14 22:13:22.000",
            "500ms",  # Duration(ms) 500, in acidctl's one duration style
            "---",
            "boom",
            "localhost",
            "manual",
            "default",
            "0",
            "0",
            "0",
            "---",
        ]

    # filters
    def ids(argv):
        return [
            c["compactionid"]
            for c in cli_json(capsys, ["--metastore", url, "show", "compactions"] + argv)["compactions"]
        ]

    assert ids(["db.t"]) == order([1, 3, 5])
    assert ids(["db"]) == order([1, 2, 3, 5])
    assert ids(["db.p", "--partition", "ds=1"]) == [2]
    assert ids(["--type", "minor"]) == order([2, 3])
    assert ids(["--state", "ready for cleaning"]) == [3]
    assert ids(["--state", "succeeded", "--state", "failed"]) == [1, 2]
    assert ids(["--state", a_text]) == [5]
    assert ids(["--id", "4"]) == [4]
    assert ids(["--limit", "2"]) == order([1, 2, 3, 4, 5])[:2]
    assert ids(["--limit", "0"]) == order([1, 2, 3, 4, 5])  # LIMIT 0: no limit, as Hive 4
    assert ids(["--order-by", "compactionid desc"]) == [5, 4, 3, 2, 1]
    assert ids(["--order-by", "compactionid", "--limit", "3"]) == [1, 2, 3]
    assert ids(["db.t", "--order-by", "starttime desc", "--limit", "2"]) == [5, 3]
    if hive_version == 4:
        assert ids(["--pool", "etl"]) == [3]
        # Hive 4 compares CC_POOL_NAME = 'default' literally: NULL pools (shown as default) do not match
        assert ids(["--pool", "default"]) == []
    else:
        assert ids(["--pool", "etl"]) == []
    capsys.readouterr()
    assert run_cli(["--metastore", url, "show", "compactions", "--type", "huge"]) == 2
    assert run_cli(["--metastore", url, "show", "compactions", "--order-by", "x; drop table"]) == 2


def test_mark_cleaned_cleans_components(metastore, hive_version):
    """markCleaned removes COMPLETED_TXN_COMPONENTS and aborted TXN_COMPONENTS up to the
    highest write id, then the empty aborted TXNS rows (§9.3)."""
    from acidctl.metastore.snapshot import table_snapshot

    url, rec = metastore
    t1 = rec.open_txn(now_ms=T0)
    rec.add_write(t1, "db", "t")
    rec.commit_txn(t1)
    t2 = rec.open_txn(now_ms=T0)
    rec.add_write(t2, "db", "t")
    rec.abort_txn(t2)
    _, wl = table_snapshot(url, "db.t")
    assert str(wl) == "db.t:2:9223372036854775807::2"
    c = rec.enqueue_compaction("db", "t", now_ms=T0)
    rec.mark_working(c, now_ms=T0)
    rec.mark_compacted(c, highest_write_id=2)
    rec.mark_cleaned(c, now_ms=T0 + 1)
    with rec.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(rec.T.COMPLETED_TXN_COMPONENTS.clause)).scalar() == 0
        assert conn.execute(sa.select(sa.func.count()).select_from(rec.T.TXN_COMPONENTS.clause)).scalar() == 0
        states = [r[0] for r in conn.execute(sa.select(rec.T.TXNS.TXN_STATE))]
    assert "a" not in states
