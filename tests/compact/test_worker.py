"""``compact --enqueue`` → ``acidctl worker`` → the new base in ``state`` and the request
``ready for cleaning`` (metastore.md §9.2); Hive 4's ``_v<txn>`` output invisible to readers until
the compactor txn commits; abort and interruption paths. The expected directory names come from
the demo's history (acidctl/demo.py: ``default.sales`` write 7 open, so the compactor hwm is 6 —
directory-state.md / README essentials 13)."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from acidctl.compact import worker as w
from acidctl.metastore import queue, txns
from acidctl.metastore.connection import connect
from acidctl.fs import TableFS


@pytest.fixture(autouse=True)
def _writes_allowed():
    """A ``--read-only`` CLI run forbids writes process-wide; library calls of later tests must
    not inherit it."""
    from acidctl.metastore import steps

    yield
    steps.allow_writes()


def _url(tmp_path):
    return f"sqlite:///{tmp_path / 'demo' / 'metastore.db'}"


def _merged(cli, url, table):
    r = cli("-o", "json", "--metastore", url, "dump", "--merged", table)
    assert r.code == 0, r
    return sorted(r.stdout.splitlines())


def _snapshot(cli, url, table, partition=None) -> dict:
    r = cli("-o", "json", "--metastore", url, "state", table)
    assert r.code == 0, r
    parts = json.loads(r.stdout)["partitions"]
    (p,) = [p for p in parts if (p["partition"] or None) == partition]
    return p["snapshot"]


def _read_order(cli, url, table, partition=None):
    return _snapshot(cli, url, table, partition)["read_order"]


def _queue(url):
    eng = sa.create_engine(url)
    with eng.connect() as c:
        rows = c.execute(
            sa.text(
                "SELECT CQ_ID, CQ_PARTITION, CQ_STATE, CQ_TYPE, CQ_HIGHEST_WRITE_ID, CQ_WORKER_ID "
                "FROM COMPACTION_QUEUE ORDER BY CQ_ID"
            )
        ).all()
    eng.dispose()
    return [tuple(r) for r in rows]


def _sql_rows(url, q, **kw):
    eng = sa.create_engine(url)
    with eng.connect() as c:
        rows = c.execute(sa.text(q), kw).all()
    eng.dispose()
    return [tuple(r) for r in rows]


@pytest.mark.parametrize("hv", [3, 4])
def test_enqueue_then_worker_on_spark(tmp_path, cli, spark, hv):
    assert cli("demo", "--hive-version", str(hv), tmp_path / "demo").code == 0
    url = _url(tmp_path)
    before = _merged(cli, url, "default.sales")
    r = cli("-o", "json", "--metastore", url, "compact", "--enqueue", "default.sales/ds=2026-01-01", "--major")
    assert r.code == 0, r
    doc = json.loads(r.stdout)
    # the demo queued ids 1 (failed) and 2: the next id is 3
    assert (doc["id"], doc["state"], doc["accepted"]) == (3, "initiated", True)
    assert doc["message"] == "Compaction enqueued with id 3"
    # a second request for the same partition is refused (exit 6), as Hive refuses it
    r = cli("-o", "json", "--metastore", url, "compact", "--enqueue", "default.sales/ds=2026-01-01", "--minor")
    assert r.code == 6 and r.stdout == ""  # the refusal once: the error document on stderr
    assert json.loads(r.stderr)["error"]["message"] == (
        "Compaction already enqueued with id 3; State is initiated"
        if hv == 3
        else "Compaction is already scheduled with state='INITIATED' and id=3"
    )

    ms = connect(url)
    recs = w.run_cycle(ms, w.WorkerOptions(max=10, engine="spark"), table_fs=lambda u: TableFS(u), spark=spark)
    # both queued requests (the demo's id 2 and ours) ran in the one Spark application
    assert [(x["cq_id"], x["partition"], x["state"]) for x in recs] == [
        (2, "ds=2025-12-31", "ready for cleaning"),
        (3, "ds=2026-01-01", "ready for cleaning"),
    ]
    by_id = {x["cq_id"]: x for x in recs}
    base = "base_0000006" if hv == 3 else f"base_0000006_v{by_id[3]['txn_id']:07d}"
    assert by_id[3]["output_dirs"] == [base]
    snap = _snapshot(cli, url, "default.sales", "ds=2026-01-01")
    assert snap["base"] == base and snap["read_order"] == []
    assert _merged(cli, url, "default.sales") == before
    q = {row[0]: row for row in _queue(url)}
    # CQ_HIGHEST_WRITE_ID = the table's compactor hwm (write ids are per table): 6 for both
    assert q[2][2:] == ("r", "a", 6, None) and q[3][2:] == ("r", "a", 6, None)
    r = cli("-o", "json", "--metastore", url, "show", "compactions", "default.sales")
    assert r.code == 0, r
    states = {c["compactionid"]: c["state"] for c in json.loads(r.stdout)["compactions"]}
    assert states[2] == states[3] == "ready for cleaning"


@pytest.mark.parametrize("hv", [3, 4])
def test_end_to_end_enqueue_worker_clean(tmp_path, cli, spark, hv):
    """enqueue → worker (Spark) → ready for cleaning → clean → succeeded, the old directories
    gone and the merged read unchanged. The demo leaves txn 10 open (default.sales write 7); on
    Hive 4 one open txn below CQ_NEXT_TXN_ID holds every Cleaner back (operations.md §5.2), so it
    is aborted first with ``abort transactions``."""
    assert cli("demo", "--hive-version", str(hv), tmp_path / "demo").code == 0
    url = _url(tmp_path)
    emp = tmp_path / "demo" / "warehouse" / "employee"
    before = _merged(cli, url, "default.employee")
    old_dirs = sorted(p.name for p in emp.iterdir() if p.name.startswith(("delta_", "delete_delta_")))
    assert cli("--metastore", url, "compact", "--enqueue", "default.employee", "--major").code == 0
    recs = w.run_cycle(
        connect(url),
        w.WorkerOptions(max=10, engine="spark", db_glob="default"),
        table_fs=lambda u: TableFS(u),
        spark=spark,
    )
    (rec,) = [x for x in recs if x["table"] == "default.employee"]
    assert rec["state"] == "ready for cleaning"
    # employee's writes 1..3 are all committed: the compactor hwm is 3
    base = "base_0000003" if hv == 3 else f"base_0000003_v{rec['txn_id']:07d}"
    assert rec["output_dirs"] == [base]
    assert _snapshot(cli, url, "default.employee")["base"] == base
    if hv == 4:
        r = cli("-o", "json", "--metastore", url, "abort", "transactions", "--older-than", "0", "--execute")
        assert r.code == 0, r
        assert [t["txn_id"] for t in json.loads(r.stdout)["transactions"]] == [10]
        # the Cleaner's low-water mark counts txns younger than metastore.txn.opentxn.timeout
        # (1 s) as possibly open (operations.md §2.1 step 3): let the compactor txn age past it
        import time

        time.sleep(1.2)
    r = cli("--metastore", url, "clean", "default.employee", "--execute", "--min-age", "0")
    assert r.code == 0, r
    assert all(not (emp / d).exists() for d in old_dirs) and (emp / base).is_dir(), r.stdout
    assert _merged(cli, url, "default.employee") == before
    r = cli("-o", "json", "--metastore", url, "show", "compactions", "default.employee")
    assert r.code == 0, r
    assert {c["compactionid"]: c["state"] for c in json.loads(r.stdout)["compactions"]}[rec["cq_id"]] == "succeeded"


def test_hive4_output_invisible_until_the_compactor_txn_commits(tmp_path, cli, monkeypatch):
    assert cli("demo", "--hive-version", "4", tmp_path / "demo").code == 0
    url = _url(tmp_path)
    before_rows = _merged(cli, url, "default.employee")
    before_order = _read_order(cli, url, "default.employee")
    assert cli("--metastore", url, "compact", "--enqueue", "default.employee", "--minor").code == 0
    seen = {}
    real_commit = txns.commit_compaction_txn

    def commit(ms, txn_id, **kw):
        # published and marked compacted, compactor txn still open: readers must not see it
        seen["before"] = (_read_order(cli, url, "default.employee"), _merged(cli, url, "default.employee"), _queue(url))
        res = real_commit(ms, txn_id, **kw)
        seen["after"] = (_read_order(cli, url, "default.employee"), _merged(cli, url, "default.employee"))
        return res

    monkeypatch.setattr("acidctl.compact.register.txns.commit_compaction_txn", commit)
    ms = connect(url)
    recs = w.run_cycle(ms, w.WorkerOptions(max=10, engine="local"), table_fs=lambda u: TableFS(u))
    (emp,) = [x for x in recs if x["table"] == "default.employee"]
    txn = emp["txn_id"]
    outs = [f"delta_0000001_0000003_v{txn:07d}", f"delete_delta_0000001_0000003_v{txn:07d}"]
    assert emp["output_dirs"] == outs and emp["state"] == "ready for cleaning"
    order, rows, q = seen["before"]
    assert order == before_order and rows == before_rows
    (row,) = [r for r in q if r[0] == emp["cq_id"]]
    assert row[2] == "r"  # markCompacted happens before the commit
    order, rows = seen["after"]
    assert order == [outs[1], outs[0]] and rows == before_rows
    eng = sa.create_engine(url)
    with eng.connect() as c:
        st, ty = c.execute(sa.text("SELECT TXN_STATE, TXN_TYPE FROM TXNS WHERE TXN_ID=:t"), {"t": txn}).one()
        nxt, ctime = c.execute(
            sa.text("SELECT CQ_NEXT_TXN_ID, CQ_COMMIT_TIME FROM COMPACTION_QUEUE WHERE CQ_ID=:i"), {"i": emp["cq_id"]}
        ).one()
        ctc = c.execute(
            sa.text("SELECT COUNT(*) FROM COMPLETED_TXN_COMPONENTS WHERE CTC_TXNID=:t"), {"t": txn}
        ).scalar()
    eng.dispose()
    assert (st, ty) == ("c", 3) and nxt >= txn and ctime is not None and ctc == 0


def test_failure_marks_failed_and_aborts_the_compactor_txn(tmp_path, cli, monkeypatch):
    assert cli("demo", "--hive-version", "4", tmp_path / "demo").code == 0
    url = _url(tmp_path)
    assert cli("--metastore", url, "compact", "--enqueue", "default.employee", "--minor").code == 0

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr("acidctl.compact.publish.publish", boom)
    ms = connect(url)
    recs = w.run_cycle(ms, w.WorkerOptions(max=10, engine="local", db_glob="default"), table_fs=lambda u: TableFS(u))
    (emp,) = [x for x in recs if x["table"] == "default.employee"]
    assert emp["state"] == "failed" and "disk full" in emp["message"]
    eng = sa.create_engine(url)
    with eng.connect() as c:
        cc = c.execute(
            sa.text("SELECT CC_STATE, CC_ERROR_MESSAGE, CC_TXN_ID FROM COMPLETED_COMPACTIONS WHERE CC_ID=:i"),
            {"i": emp["cq_id"]},
        ).one()
        st, meta = c.execute(sa.text("SELECT TXN_STATE, TXN_META_INFO FROM TXNS WHERE TXN_ID=:t"), {"t": cc[2]}).one()
        comp = c.execute(sa.text("SELECT TC_OPERATION_TYPE FROM TXN_COMPONENTS WHERE TC_TXNID=:t"), {"t": cc[2]}).all()
    eng.dispose()
    assert cc[0] == "f" and "disk full" in cc[1]
    assert (st, meta) == ("a", "compaction transaction abort")
    assert [tuple(x) for x in comp] == [("c",)]  # the aborted compactor's c row stays for the Cleaner
    # nothing of the failed run is visible
    assert not [p for p in (tmp_path / "demo" / "warehouse" / "employee").iterdir() if "_v" in p.name]


def test_stop_claims_nothing_more(tmp_path, cli):
    """A stop request after the first request: the worker claims one request at a time, so the
    next one was never touched — still initiated, no worker, no start — claimable by anyone."""
    assert cli("demo", tmp_path / "demo").code == 0
    url = _url(tmp_path)
    assert cli("--metastore", url, "compact", "--enqueue", "default.employee", "--minor").code == 0
    initiated = [r for r in _queue(url) if r[2] == "i"]
    assert len(initiated) >= 2
    ms = connect(url)
    stop = w.StopFlag()
    done = []

    def after_first(rec):
        done.append(rec)
        stop.set("SIGTERM received")

    recs = w.run_cycle(
        ms, w.WorkerOptions(max=10, engine="local"), table_fs=lambda u: TableFS(u), stop=stop, on_request=after_first
    )
    assert [x["state"] for x in recs] == ["ready for cleaning"]
    assert recs[0]["cq_id"] == initiated[0][0]  # Hive's order: lowest id first
    # the others exactly as they were: initiated, no worker
    assert [r for r in _queue(url) if r[2] == "i"] == initiated[1:]
    assert queue.claim(ms, worker_id="next").cq_id == initiated[1][0]


@pytest.mark.parametrize("hv", [3, 4])
def test_worker_cli_once_and_missing_table(tmp_path, cli, hv):
    assert cli("demo", "--hive-version", str(hv), tmp_path / "demo").code == 0
    url = _url(tmp_path)
    ms = connect(url)
    gone = queue.enqueue(ms, "default", "no_such_table", type="major").id
    r = cli("-o", "json", "--metastore", url, "worker", "--once", "--engine", "local", "--max", "1", "--db", "nomatch*")
    assert r.code == 0, r
    assert json.loads(r.stdout)["requests"] == []
    r = cli("-o", "json", "--metastore", url, "worker", "--once", "--engine", "local")
    assert r.code == 0, r
    doc = json.loads(r.stdout)
    by_id = {x["cq_id"]: x for x in doc["requests"]}
    if hv == 4:  # Hive 4's Worker refuses a request whose table is gone
        assert by_id[gone]["state"] == "refused" and "Unable to find table" in by_id[gone]["message"]
        assert doc["summary"]["refused"] == 1
    else:  # Hive 3's assumes it was dropped: markCleaned, straight to the history as succeeded
        assert by_id[gone]["state"] == "succeeded" and "dropped" in by_id[gone]["message"]
        assert gone not in [row[0] for row in _queue(url)]
        hist = _sql_rows(url, "SELECT CC_ID, CC_STATE FROM COMPLETED_COMPACTIONS WHERE CC_ID = :i", i=gone)
        assert hist == [(gone, "s")]
    r = cli("--read-only", "--metastore", url, "worker", "--once", "--engine", "local")
    assert r.code == 6


def test_daemon_stops_gracefully_on_sigterm(tmp_path, cli):
    """``worker --daemon`` polls, writes one line per request, and on SIGTERM stops (exit 0) with
    the queue left consistent; a request enqueued later is still there for the next worker."""
    import signal
    import time

    from tests.metastore.helpers import acidctl_process

    assert cli("demo", "--hive-version", "4", tmp_path / "demo").code == 0
    url = _url(tmp_path)
    p = acidctl_process(url, "worker", "--daemon", "--engine", "local", "--poll", "0.2")
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            if any(r[0] == 2 and r[2] == "r" for r in _queue(url)):
                break
            time.sleep(0.2)
        assert cli("--metastore", url, "compact", "--enqueue", "default.employee", "--minor").code == 0
        while time.time() < deadline:
            if all(r[2] == "r" for r in _queue(url)):
                break
            time.sleep(0.2)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err.decode()
    lines = [json.loads(x) for x in out.decode().splitlines()]
    assert [(x["cq_id"], x["state"]) for x in lines] == [(2, "ready for cleaning"), (3, "ready for cleaning")]
    assert [r[2] for r in _queue(url)] == ["r", "r"]


@pytest.mark.parametrize("hv", [3, 4])
def test_read_only_compact_and_no_register(tmp_path, cli, hv):
    """``--read-only`` forbids every metastore write: a Hive 3 compaction runs unregistered (and
    says so), a Hive 4 one is refused (its output needs a compactor txn); ``--no-register`` skips
    registration for one run. The queue and TXNS are untouched either way."""
    assert cli("demo", "--hive-version", str(hv), tmp_path / "demo").code == 0
    url = _url(tmp_path)
    q0 = _queue(url)
    eng = sa.create_engine(url)
    with eng.connect() as c:
        t0 = c.execute(sa.text("SELECT COUNT(*) FROM TXNS")).scalar()
    r = cli(
        "--read-only", "-o", "json", "--metastore", url, "compact", "--major", "--engine", "local", "default.employee"
    )
    if hv == 3:
        assert r.code == 0, r
        assert any("not registered" in n for n in json.loads(r.stdout)["notes"])
    else:
        assert r.code == 6, r
        assert not [p for p in (tmp_path / "demo" / "warehouse" / "employee").iterdir() if p.name.startswith("base")]
    vis = ["--visibility-txn", "3"] if hv == 4 else []  # Hive 4: a committed txn of the demo names the output
    r = cli(
        "-o",
        "json",
        "--metastore",
        url,
        "compact",
        "--major",
        "--engine",
        "local",
        "--no-register",
        *vis,
        "default.sales",
    )
    assert r.code == 0, r
    with eng.connect() as c:
        assert c.execute(sa.text("SELECT COUNT(*) FROM TXNS")).scalar() == t0
    eng.dispose()
    assert _queue(url) == q0
    # --visibility-txn with registration on is a usage error (acidctl opens its own txn)
    if hv == 4:
        r = cli(
            "--metastore", url, "compact", "--minor", "--engine", "local", "--visibility-txn", "3", "default.employee"
        )
        assert r.code == 2


@pytest.mark.parametrize("hv", [3, 4])
def test_nothing_to_compact(tmp_path, cli, hv):
    """A claimed request with nothing to compact (operations.md §3.2 step 6): while the previous
    compaction's obsolete directories are still there, Hive 4 marks it compacted (for the
    Cleaner); once they are gone it is refused. Hive 3 always marks it compacted. The Hive 4
    compactor txn is committed either way."""
    assert cli("demo", "--hive-version", str(hv), tmp_path / "demo").code == 0
    url = _url(tmp_path)
    ms = connect(url)
    opts = w.WorkerOptions(max=10, engine="local", db_glob="default")

    def run_employee():
        # the Cleaner's markCleaned would take the 'r' row out of the queue; Hive 4 refuses a new
        # request while an 'r' row at the same compactor hwm is there (test-only SQL)
        eng = sa.create_engine(url)
        with eng.begin() as c:
            c.execute(sa.text("DELETE FROM COMPACTION_QUEUE WHERE CQ_TABLE='employee' AND CQ_STATE='r'"))
        eng.dispose()
        assert cli("--metastore", url, "compact", "--enqueue", "default.employee", "--major").code == 0
        recs = [x for x in w.run_cycle(ms, opts, table_fs=lambda u: TableFS(u)) if x["table"] == "default.employee"]
        assert len(recs) == 1
        return recs[0]

    first = run_employee()
    assert first["state"] == "ready for cleaning" and first["output_dirs"]
    second = run_employee()  # obsolete deltas still on disk
    assert second["state"] == "ready for cleaning" and second["output_dirs"] == []
    # the Cleaner's part (test-only): remove the directories the first base made obsolete
    import shutil

    for d in (tmp_path / "demo" / "warehouse" / "employee").iterdir():
        if d.is_dir() and d.name.startswith(("delta_", "delete_delta_")):
            shutil.rmtree(d)
    third = run_employee()
    if hv == 3:
        assert third["state"] == "ready for cleaning"
    else:
        assert third["state"] == "refused"
        eng = sa.create_engine(url)
        with eng.connect() as c:
            cc = c.execute(
                sa.text("SELECT CC_STATE, CC_ERROR_MESSAGE, CC_TXN_ID FROM COMPLETED_COMPACTIONS WHERE CC_ID=:i"),
                {"i": third["cq_id"]},
            ).one()
            st = c.execute(sa.text("SELECT TXN_STATE FROM TXNS WHERE TXN_ID=:t"), {"t": cc[2]}).scalar()
        eng.dispose()
        assert cc[0] == "c" and cc[1] == queue.NOTHING_TO_COMPACT and st == "c"


def test_compactor_txn_is_heartbeated_while_the_compaction_runs(tmp_path, cli, monkeypatch):
    """operations.md §2.5: the compactor txn's TXN_LAST_HEARTBEAT moves while the job runs (here
    every 0.1 s during a publication slowed to 1 s), so Hive's reaper never aborts it."""
    import time

    from acidctl.compact import publish

    assert cli("demo", "--hive-version", "4", tmp_path / "demo").code == 0
    url = _url(tmp_path)
    assert cli("--metastore", url, "compact", "--enqueue", "default.employee", "--minor").code == 0
    real = publish.publish

    def slow(*a, **k):
        time.sleep(1.0)
        return real(*a, **k)

    monkeypatch.setattr("acidctl.compact.publish.publish", slow)
    ms = connect(url)
    recs = w.run_cycle(ms, w.WorkerOptions(max=10, engine="local", heartbeat_s=0.1), table_fs=lambda u: TableFS(u))
    (emp,) = [x for x in recs if x["table"] == "default.employee"]
    assert emp["state"] == "ready for cleaning"
    eng = sa.create_engine(url)
    with eng.connect() as c:
        started, beat = c.execute(
            sa.text("SELECT TXN_STARTED, TXN_LAST_HEARTBEAT FROM TXNS WHERE TXN_ID=:t"), {"t": emp["txn_id"]}
        ).one()
    eng.dispose()
    assert beat - started >= 500


def test_interrupt_abandons_the_request_in_flight(tmp_path, cli, monkeypatch):
    """A second Ctrl-C/SIGTERM interrupts the request in flight: nothing is published, the Hive 4
    compactor txn is aborted ('compaction transaction abort') and the request is back in
    ``initiated`` (claimable again), as are the claimed requests not yet started."""
    assert cli("demo", "--hive-version", "4", tmp_path / "demo").code == 0
    url = _url(tmp_path)
    assert cli("--metastore", url, "compact", "--enqueue", "default.employee", "--minor").code == 0

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr("acidctl.compact.publish.publish", interrupted)
    ms = connect(url)
    with pytest.raises(KeyboardInterrupt):
        w.run_cycle(ms, w.WorkerOptions(max=10, engine="local"), table_fs=lambda u: TableFS(u))
    rows = _queue(url)
    assert [(r[0], r[2], r[5]) for r in rows] == [(2, "i", None), (3, "i", None)]
    eng = sa.create_engine(url)
    with eng.connect() as c:
        compactor = c.execute(sa.text("SELECT TXN_STATE, TXN_META_INFO FROM TXNS WHERE TXN_TYPE=3")).all()
    eng.dispose()
    assert [tuple(x) for x in compactor] == [("a", "compaction transaction abort")]
    for d in ("employee", "sales/ds=2025-12-31"):
        assert not [p for p in (tmp_path / "demo" / "warehouse" / d).iterdir() if "_v" in p.name]
    assert queue.claim(ms, worker_id="next").cq_id == 2
