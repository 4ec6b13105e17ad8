"""Issue 21, rule 4: acidctl processes on different partitions of one table never block or fail
each other; on one partition the second one leaves it alone before claiming anything.

Two real ``acidctl worker --once`` processes drain 20 requests on 20 partitions of ONE table
(SQLite, PostgreSQL, MariaDB; Hive 3 and 4 schemas): every request ends ``ready for cleaning``,
none ``failed``, each partition gets exactly one new base, no acidctl lock file stays behind. A
worker meeting a partition another acidctl holds skips its request and leaves it ``initiated``
(worker id and start NULL), and takes it on a later run."""

from __future__ import annotations

import json
import threading

import pytest
import sqlalchemy as sa

from acidctl.compact.lock import TableLock
from acidctl.fs import TableFS
from acidctl.metastore import queue
from acidctl.metastore.connection import connect
from tests.metastore.helpers import json_result, make_table, run_cli, worker_process

N = 20


@pytest.fixture(autouse=True)
def _writes_allowed():
    from acidctl.metastore import steps

    yield
    steps.allow_writes()


def _queue_rows(ms) -> dict:
    cq = ms.tables.COMPACTION_QUEUE
    with ms.read() as c:
        return {
            int(r[0]): (r[1], r[2], r[3], r[4])
            for r in c.execute(sa.select(cq.CQ_ID, cq.CQ_PARTITION, cq.CQ_STATE, cq.CQ_WORKER_ID, cq.CQ_START))
        }


def _history(ms) -> list:
    cc = ms.tables.COMPLETED_COMPACTIONS
    with ms.read() as c:
        return [tuple(r) for r in c.execute(sa.select(cc.CC_ID, cc.CC_STATE))]


def test_two_workers_drain_one_tables_partitions(metastore, backend, hive_version, tmp_path):
    url, rec = metastore
    loc = make_table(rec, tmp_path / "wh", "conc", "events", partitions=N)
    ms = connect(url)
    ids = {queue.enqueue(ms, "conc", "events", partition=f"p={i}", type="major").id: f"p={i}" for i in range(N)}
    assert len(ids) == N
    procs = [worker_process(url, N) for _ in range(2)]
    outs = [json_result(p, timeout=900) for p in procs]
    recs = [r for o in outs for r in o["requests"]]
    # every request run exactly once, none failed or handed back
    assert sorted(r["cq_id"] for r in recs) == sorted(ids)
    assert {r["state"] for r in recs} == {"ready for cleaning"}, [r for r in recs if r["state"] != "ready for cleaning"]
    rows = _queue_rows(ms)
    assert {i: rows[i][1:3] for i in ids} == {i: ("r", None) for i in ids}
    assert _history(ms) == []  # nothing failed, nothing refused
    for i in range(N):
        bases = [d.name for d in (loc / f"p={i}").iterdir() if d.name.startswith("base_")]
        assert len(bases) == 1, (i, bases)
    assert not [f.name for f in loc.iterdir() if f.name.startswith(".acidctl-compact")]


def test_worker_skips_a_busy_partition_and_takes_it_later(metastore, backend, hive_version, tmp_path, capsys):
    url, rec = metastore
    loc = make_table(rec, tmp_path / "wh", "conc", "events", partitions=3)
    ms = connect(url)
    ids = {f"p={i}": queue.enqueue(ms, "conc", "events", partition=f"p={i}", type="major").id for i in range(3)}
    before = _queue_rows(ms)
    with TableLock(TableFS(str(loc)), command="compact", partition="p=1"):
        capsys.readouterr()
        code = run_cli(["-o", "json", "--metastore", url, "worker", "--once", "--engine", "local"])
        out = capsys.readouterr()
        assert code == 0, out.err
        done = {r["cq_id"]: r["state"] for r in json.loads(out.out)["requests"]}
        assert done == {ids["p=0"]: "ready for cleaning", ids["p=2"]: "ready for cleaning"}
        # p=1's request was never claimed: exactly as it was
        assert _queue_rows(ms)[ids["p=1"]] == before[ids["p=1"]] == ("p=1", "i", None, None)
        assert _history(ms) == []
    capsys.readouterr()
    code = run_cli(["-o", "json", "--metastore", url, "worker", "--once", "--engine", "local"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert [(r["cq_id"], r["state"]) for r in json.loads(out.out)["requests"]] == [(ids["p=1"], "ready for cleaning")]
    assert _history(ms) == []


def test_worker_and_compact_on_the_same_partition(metastore, backend, hive_version, tmp_path, capsys):
    """A worker holds p=0 (its lock) while `compact` is asked for p=0 and for p=1: the first
    refuses before claiming (exit 6, the worker's request untouched), the second runs."""
    url, rec = metastore
    loc = make_table(rec, tmp_path / "wh", "conc", "events", partitions=2)
    ms = connect(url)
    rid = queue.enqueue(ms, "conc", "events", partition="p=0", type="major").id
    started, release = threading.Event(), threading.Event()

    def holder():
        with TableLock(TableFS(str(loc)), command="worker", partition="p=0"):
            started.set()
            release.wait(60)

    t = threading.Thread(target=holder)
    t.start()
    try:
        assert started.wait(30)
        before = _queue_rows(ms)
        capsys.readouterr()
        code = run_cli(["--metastore", url, "compact", "--major", "--engine", "local", "conc.events/p=0"])
        err = capsys.readouterr().err
        assert code == 6 and "partition p=0 is locked by another acidctl worker" in err, err
        assert _queue_rows(ms) == before and _history(ms) == []
        code = run_cli(["--metastore", url, "compact", "--major", "--engine", "local", "conc.events/p=1"])
        err = capsys.readouterr().err
        assert code == 0, err
    finally:
        release.set()
        t.join()
    rows = _queue_rows(ms)
    assert rows[rid] == before[rid] == ("p=0", "i", None, None)
    assert [v[1] for k, v in rows.items() if v[0] == "p=1"] == ["r"]


def test_worker_warns_of_a_dead_runs_lock_and_clean_frees_it(metastore, backend, hive_version, tmp_path, capsys):
    """A lock left by a run that died (this host, process gone) holds its partition's request
    back: the worker says so with the command that recovers it, claims nothing there, and after
    that command the next worker run takes the request."""
    import socket
    import time

    url, rec = metastore
    loc = make_table(rec, tmp_path / "wh", "conc", "events", partitions=2)
    ms = connect(url)
    ids = {f"p={i}": queue.enqueue(ms, "conc", "events", partition=f"p={i}", type="major").id for i in range(2)}
    (loc / ".acidctl-compact.p=1.lock").write_text(
        json.dumps({"pid": 999999, "host": socket.gethostname(), "started": time.time() - 60, "token": "x"})
    )
    capsys.readouterr()
    code = run_cli(["--metastore", url, "worker", "--once", "--engine", "local"])
    out = capsys.readouterr()
    assert code == 0, out.err
    fix = "acidctl clean conc.events/p=1 --execute"
    assert f"compaction {ids['p=1']} (conc.events/p=1) waits: stale compaction lock" in out.err
    assert f"`{fix}`" in out.err
    assert _queue_rows(ms)[ids["p=1"]] == ("p=1", "i", None, None)
    code = run_cli(["--metastore", url, *fix.split()[1:]])
    assert code == 0, capsys.readouterr().err
    assert not (loc / ".acidctl-compact.p=1.lock").exists()
    capsys.readouterr()
    code = run_cli(["-o", "json", "--metastore", url, "worker", "--once", "--engine", "local"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert [(r["cq_id"], r["state"]) for r in json.loads(out.out)["requests"]] == [(ids["p=1"], "ready for cleaning")]
