"""A real Hive 2.3.10 metastore on a private PostgreSQL (tests/hive23/pgserver.py): its Thrift
API and its database both reachable, so Hive's own Initiator/Worker/Cleaner are the oracle for
the rows acidctl's Hive 2 registration writes (issue #24, "Finish what #12 left").

- ``show compactions`` through ``thrift://`` and through the database URL agree with each other
  and with the server's own ``show_compact``, for a request acidctl enqueued and Hive's Worker
  and Cleaner then took to ``succeeded``;
- the rows Hive 2.3's Worker/Cleaner (CompactionTxnHandler) leave in ``compaction_queue``,
  ``completed_compactions``, ``txn_components``, ``completed_txn_components`` and ``txns`` for
  one table's compaction equal what ``acidctl compact DB.TABLE --hive-version 2`` + ``clean
  --execute`` leave for an identical twin table — ids and times aside.
"""

from __future__ import annotations

import json
import random
import time

import pytest
import sqlalchemy as sa
from hive_metastore.ttypes import ShowCompactRequest

from tests.conftest import run_cli
from tests.hive2_histories import random_history
from tests.hive23 import plant
from tests.servers import unavailable


@pytest.fixture(scope="session")
def h23pg(tmp_path_factory):
    """Started lazily: only by the tests of this module (10–15 s), stopped at session end."""
    from tests.hive23.pgserver import Hive23Postgres, missing

    why = missing()
    if why:
        msg = f"no Hive 2.3 metastore on PostgreSQL here: {why}"
        unavailable(msg)
    server = Hive23Postgres(tmp_path_factory.mktemp("hive23pg"))
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pghms(h23pg):
    from tests.hive23.server import client

    c, transport = client(h23pg.hive)
    yield c
    transport.close()


def thrift_cli(server, *args):
    with server.hive.inside():
        return run_cli("--metastore", server.hive.url, *args)


def db_cli(server, *args):
    # the unix socket: no namespace needed
    return run_cli("--metastore", server.db_url, *args)


def js(r) -> dict:
    assert r.code == 0, r
    return json.loads(r.stdout)


def _history(seed: int):
    h = random_history(random.Random(seed), txns=6)
    # committed and aborted txns only (an open one would hold the Cleaner back)
    h.states = {t: ("aborted" if s == "open" else s) for t, s in h.states.items()}
    assert "aborted" in h.states.values() and "committed" in h.states.values()
    return h


def _wait_state(hms, db, t, states, timeout=60.0):
    deadline = time.monotonic() + timeout
    while True:
        rows = [e for e in hms.show_compact(ShowCompactRequest()).compacts if (e.dbname, e.tablename) == (db, t)]
        if rows and rows[-1].state in states:
            return rows
        if time.monotonic() > deadline:
            return rows
        time.sleep(0.3)


def _shown(doc) -> list[tuple]:
    return [
        (
            c["database"],
            c["table"],
            c["partition"],
            c["type"],
            c["state"],
            c["worker"],
            c["start_ms"],
            c["hadoop_job_id"],
        )
        for c in doc["compactions"]
    ]


def _server_shown(hms, db, t) -> list[tuple]:
    types = {1: "MINOR", 2: "MAJOR"}
    out = []
    for e in hms.show_compact(ShowCompactRequest()).compacts:
        if (e.dbname, e.tablename) == (db, t):
            out.append(
                (
                    e.dbname,
                    e.tablename,
                    e.partitionname,
                    types[e.type],
                    e.state,
                    e.workerid,
                    e.start,
                    e.hadoopJobId,
                )
            )
    return out


def test_show_compactions_thrift_and_database_agree(h23pg, pghms):
    db, t = "pgshow_db", "t"
    loc = plant.create_acid_table(pghms, db, t, h23pg.hive.warehouse)
    plant.play(pghms, _history(31), db, t, loc)
    # acidctl writes the request through the database as Hive's compact() does; Hive's Worker
    # must find it there (findNextToCompact) as if its own client had queued it
    doc = js(db_cli(h23pg, "-o", "json", "compact", "--enqueue", "--major", f"{db}.{t}"))
    assert doc["accepted"] and doc["message"] == f"Compaction enqueued with id {doc['id']}"
    (srv,) = [e for e in pghms.show_compact(ShowCompactRequest()).compacts if (e.dbname, e.tablename) == (db, t)]
    assert srv.id == doc["id"] and srv.type == 2
    assert srv.state in {"initiated", "working", "ready for cleaning"}

    rows = _wait_state(pghms, db, t, {"succeeded", "failed", "attempted"}, timeout=75)
    assert rows and rows[-1].state == "succeeded", h23pg.hive.log_tail()
    assert rows[-1].hadoopJobId  # Hive's Worker ran a (local) MapReduce job
    over_thrift = js(thrift_cli(h23pg, "-o", "json", "show", "compactions", f"{db}.{t}"))
    over_db = js(db_cli(h23pg, "-o", "json", "show", "compactions", f"{db}.{t}"))
    assert _shown(over_thrift) == _shown(over_db) == _server_shown(pghms, db, t)
    # the same request's times through both paths
    (a,), (b,) = over_thrift["compactions"], over_db["compactions"]
    assert a["duration_ms"] == b["duration_ms"] == rows[-1].endTime - rows[-1].start
    # 2.3's ShowCompactResponseElement has no highest txn id (Hive 4's IDL reads it as None); the
    # database has it, and the Worker's base is named by it (CQ/CC_HIGHEST_TXN_ID)
    assert rows[-1].hightestTxnId is None and a["highest_txn_id"] is None
    assert sorted(p.name for p in loc.iterdir() if not p.name.startswith(".")) == [f"base_{b['highest_txn_id']:07d}"]


# ----------------------------------------------------------------------------------------


def _engine(server):
    return sa.create_engine(server.db_url)


def _rows(server, db: str, t: str, txns: list[int], hwm: int | None = None) -> dict:
    """Every row one table's compaction can leave, with which columns are filled (ids, times
    and worker names aside: those differ between two runs by construction)."""
    eng = _engine(server)
    with eng.connect() as c:

        def q(sql, **kw):
            return [dict(r._mapping) for r in c.execute(sa.text(sql), kw)]

        cq = q("select * from compaction_queue where cq_database=:d and cq_table=:t", d=db, t=t)
        cc = q("select * from completed_compactions where cc_database=:d and cc_table=:t", d=db, t=t)
        tc = q("select * from txn_components where tc_database=:d and tc_table=:t", d=db, t=t)
        ctc = q("select * from completed_txn_components where ctc_database=:d and ctc_table=:t", d=db, t=t)
        tx = q("select * from txns where txn_id = any(:ids)", ids=txns)
    eng.dispose()
    first = min(txns)

    def shape(rows, *, ids=(), rel=()):
        out = []
        for r in rows:
            d = {}
            for k, v in sorted(r.items()):
                if k in ids:
                    continue
                if k.endswith("_table"):
                    assert v == t
                    d[k] = "TABLE"
                    continue
                if k.endswith("_highest_txn_id") and v is not None:
                    # 2.3's Worker records the high-water mark of its snapshot: every txn of the
                    # metastore, the twin's too
                    d[k] = "HWM" if v == hwm else v
                elif k in rel:
                    d[k] = None if v is None else v - first + 1  # the txn's place in the history
                elif isinstance(v, (int, float)) and k.endswith(("_start", "_end", "heartbeat", "started")):
                    d[k] = "set"
                elif k.endswith(("_worker_id", "_run_as", "_hadoop_job_id", "_user", "_host")):
                    d[k] = None if v is None else "set"
                else:
                    d[k] = bytes(v) if isinstance(v, memoryview) else v
            out.append(d)
        return sorted(out, key=repr)

    return {
        "compaction_queue": shape(cq, ids=("cq_id",)),
        "completed_compactions": shape(cc, ids=("cc_id",)),
        "txn_components": shape(tc, rel=("tc_txnid",)),
        "completed_txn_components": shape(ctc, rel=("ctc_txnid",)),
        "txns": shape(tx, rel=("txn_id",)),
    }


@pytest.mark.parametrize(("part", "kind"), [(None, "major"), ("ds=1", "minor")])
def test_queue_transitions_match_hives_worker_and_cleaner(h23pg, pghms, part, kind):
    db = f"pgq_{kind}_db"
    h = _history(41 if part is None else 45)
    keys = ["ds"] if part else []

    def make(t):
        loc = plant.create_acid_table(pghms, db, t, h23pg.hive.warehouse, partition_keys=keys)
        if part:
            loc = plant.add_partition(pghms, db, t, [part.split("=")[1]])
        return loc, plant.play(pghms, h, db, t, loc, partition=part)

    def target(t):
        return f"{db}.{t}" + (f"/{part}" if part else "")

    hive_loc, hive_h = make("by_hive")
    ours_loc, ours_h = make("by_acidctl")
    hive_txns, our_txns = sorted(hive_h.states), sorted(ours_h.states)
    before = {"hive": _rows(h23pg, db, "by_hive", hive_txns), "ours": _rows(h23pg, db, "by_acidctl", our_txns)}
    assert before["hive"] == before["ours"]  # the same history, planted the same way
    # Hive 2.3's commit keeps the aborted txns' TXN_COMPONENTS and moves the committed ones'
    assert {r["tc_txnid"] for r in before["hive"]["txn_components"]} == {
        t - min(hive_txns) + 1 for t, s in hive_h.states.items() if s == "aborted"
    }

    hwm = pghms.get_open_txns_info().txn_high_water_mark
    assert hwm == max(our_txns)
    # Hive: its client's compact2, then its own Worker and Cleaner
    doc = js(thrift_cli(h23pg, "-o", "json", "compact", "--enqueue", f"--{kind}", target("by_hive")))
    rows = _wait_state(pghms, db, "by_hive", {"succeeded", "failed", "attempted"}, timeout=75)
    assert rows and rows[-1].state == "succeeded" and rows[-1].id == doc["id"], h23pg.hive.log_tail()
    # then the Initiator's next cycle ends with cleanEmptyAbortedTxns (2.3's Initiator.run): the
    # aborted txns markCleaned emptied leave TXNS (bounded poll; its cycle is 2 s here)
    deadline = time.monotonic() + 30
    while True:
        hive_after = _rows(h23pg, db, "by_hive", hive_txns, hwm)
        if not hive_after["txns"] or time.monotonic() > deadline:
            break
        time.sleep(0.5)

    # acidctl: the same compaction of the twin through the database, registered as 2.3 does
    # (Hive's JVM frozen meanwhile: its Cleaner would otherwise take acidctl's 'r' row itself)
    assert pghms.get_open_txns_info().txn_high_water_mark == hwm
    with h23pg.hive_paused():
        r = db_cli(h23pg, "compact", target("by_acidctl"), f"--{kind}", "--hive-version", "2")
        assert r.code == 0, r
        mid = _rows(h23pg, db, "by_acidctl", our_txns, hwm)
        (q,) = mid["compaction_queue"]
        assert q["cq_state"] == "r" and q["cq_type"] == {"major": "a", "minor": "i"}[kind] and q["cq_worker_id"] is None
        r = db_cli(h23pg, "clean", target("by_acidctl"), "--execute", "--min-age", "0", "--hive-version", "2")
        assert r.code == 0, r
        ours_after = _rows(h23pg, db, "by_acidctl", our_txns, hwm)
    # the one column that differs by design: Hive's Worker records its MapReduce job
    # (setHadoopJobId); acidctl runs no MapReduce job and leaves it NULL
    (theirs,), (mine,) = hive_after["completed_compactions"], ours_after["completed_compactions"]
    assert theirs.pop("cc_hadoop_job_id") == "set" and mine.pop("cc_hadoop_job_id") is None

    for table in ("compaction_queue", "completed_compactions", "txn_components", "completed_txn_components", "txns"):
        assert ours_after[table] == hive_after[table], (table, ours_after[table], hive_after[table])
    # and what that is, from 2.3's CompactionTxnHandler: no queue row; one 's' history row
    assert hive_after["compaction_queue"] == []
    (cc,) = hive_after["completed_compactions"]
    assert cc["cc_state"] == "s" and cc["cc_type"] == {"major": "a", "minor": "i"}[kind]
    # the same directories
    hive_dirs = sorted(p.name for p in hive_loc.iterdir() if not p.name.startswith("."))
    our_dirs = sorted(p.name for p in ours_loc.iterdir() if not p.name.startswith("."))
    assert (
        [d.split("_")[0] for d in hive_dirs]
        == [d.split("_")[0] for d in our_dirs]
        == ["base" if kind == "major" else "delta"]
    )


def test_doctor_over_thrift_and_over_the_database_agree(h23pg, pghms):
    """The same planted Hive 2.3 state (tests/hive23/test_doctor_thrift_hive23.py's) judged
    through the Thrift API and through the metastore's database: the same counts, findings and
    directories; the database has the facts Thrift lacks, so nothing is skipped there and why's
    Initiator candidate rule is judged (a COMPLETED_TXN_COMPONENTS row per committed txn: 2.3's
    commitTxn moves each write component there, and no compaction of the table was cleaned)."""
    from hive_metastore.ttypes import AbortTxnsRequest

    from tests.hive23.test_doctor_thrift_hive23 import DB, _plant

    p = _plant(pghms, h23pg.hive)
    try:
        args = ("-o", "json", "doctor", "--db", DB)
        th = json.loads(thrift_cli(h23pg, *args).stdout)
        db = json.loads(db_cli(h23pg, *args).stdout)
        assert (th["metastore_source"], db["metastore_source"]) == ("thrift", "database")
        assert th["hive_version"] == db["hive_version"] == 2
        keys = ("open_txns", "aborted_txns", "locks", "compaction_queue", "tables_checked", "partitions_checked")
        assert {k: th["summary"][k] for k in keys} == {k: db["summary"][k] for k in keys}
        assert th["partitions"] == db["partitions"]
        skipped = {c["code"] for c in th["checks_skipped"] if not c["partial"]}
        assert db["checks_skipped"] == [] and skipped

        def findings(rep):
            return sorted(
                (
                    f["code"],
                    f["subject"],
                    json.dumps({k: v for k, v in f["evidence"].items() if "age" not in k}, sort_keys=True),
                )
                for f in rep["findings"]
                if f["code"] not in skipped and not f["code"].startswith("TXN_")  # ages differ by the call
            )

        assert findings(th) == findings(db)
        assert any(f["code"] == "CLEANER_BLOCKED_BY_LOCK" for f in db["findings"])
        committed = sum(1 for s in p["history"].states.values() if s == "committed")
        (part,) = js(db_cli(h23pg, "-o", "json", "why", f"{DB}.t"))["partitions"]
        (cand,) = [s for s in part["initiator"]["steps"] if s["rule"] == "candidate"]
        assert cand["outcome"] == "ok" and cand["values"]["completed_txn_components"] == committed
        (part,) = js(thrift_cli(h23pg, "-o", "json", "why", f"{DB}.t"))["partitions"]
        (cand,) = [s for s in part["initiator"]["steps"] if s["rule"] == "candidate"]
        assert cand["outcome"] == "unknown"
        # --since: a 2.3 schema records no CTC_TIMESTAMP, so when a table was written is unknown
        r = db_cli(h23pg, "doctor", "--since", "1h")
        assert r.code == 2 and "CTC_TIMESTAMP" in r.stderr, r
    finally:
        pghms.abort_txns(AbortTxnsRequest(txn_ids=[p["o1"]]))
