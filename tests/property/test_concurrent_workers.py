"""Rule 4 of issue 21: acidctl processes on different partitions never block or fail each other;
on one partition the second one waits or refuses before claiming anything.

Two acidctl workers (``acidctl.compact.worker.run_cycle``, what ``worker --once`` runs, each
with its own worker id) start on requests of two partitions of one table and are held at the
same point of their runs (the ``after-plan`` test hook, after each took whatever lock it takes)
until both got there, so they really overlap: both requests must end ``ready for cleaning``,
each partition with its new base, and no compaction recorded ``failed``. On SQLite and on the
PostgreSQL / MariaDB servers of tests/metastore/conftest.py, Hive 3 and Hive 4.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from acidctl import faults
from acidctl.fs import TableFS
from acidctl.metastore.connection import connect
from acidctl.metastore.init import init_metastore
from acidctl.metastore.recorder import Recorder
from tests.acidfiles import B0, acid_file
from tests.metastore.helpers import ORC_TYPE

BACKENDS = [
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("mysql", marks=pytest.mark.mysql),
]


def _url(backend: str, request, tmp_path: Path) -> str:
    if backend == "sqlite":
        return f"sqlite:///{tmp_path}/ms.db"
    from tests.metastore.conftest import my_create_db, pg_create_db

    if backend == "postgres":
        return pg_create_db(request.getfixturevalue("pg_server"))
    return my_create_db(request.getfixturevalue("mysql_server"))


def partitioned_table(url: str, hive_version: int, wh: Path, parts=("p=0", "p=1")) -> tuple[Recorder, Path]:
    """db.t partitioned by p; each partition two committed insert deltas (Hive's rows)."""
    init_metastore(url, hive_version=hive_version, warehouse=f"file:{wh}")
    rec = Recorder(url)
    loc = wh / "db.db" / "t"
    loc.mkdir(parents=True)
    rec.create_table(
        "db", "t", location=f"file:{loc}", columns=[("id", "int"), ("name", "string")], partition_keys=[("p", "string")]
    )
    for p in parts:
        rec.add_partition("db", "t", p, location=f"file:{loc / p}")
    for p in parts:
        for _ in range(2):
            txn = rec.open_txn("hive", "hivehost")
            w = rec.add_write(txn, "db", "t", partition=p, operation="i")
            rec.commit_txn(txn)
            d = loc / p / f"delta_{w:07d}_{w:07d}_0000"
            acid_file(d / "bucket_00000", ORC_TYPE, [(0, w, B0, 0, w, (w, f"r{w}"))])
            (d / "_orc_acid_version").write_bytes(b"2")
    return rec, loc


def _rows(rec, name: str, *cols):
    t = getattr(rec.T, name)
    with rec.engine.connect() as c:
        return [tuple(r) for r in c.execute(sa.select(*[getattr(t, x) for x in cols]))]


@pytest.mark.parametrize("hive_version", [3, 4])
@pytest.mark.parametrize("backend", BACKENDS)
def test_two_workers_on_different_partitions_both_succeed(backend, hive_version, request, tmp_path):
    from acidctl.compact import worker as w

    url = _url(backend, request, tmp_path)
    rec, loc = partitioned_table(url, hive_version, tmp_path / "wh")
    ids = {p: rec.enqueue_compaction("db", "t", partition=p, compaction_type="major") for p in ("p=0", "p=1")}

    both_planned = threading.Barrier(2, timeout=10)

    def hold(_plans):
        try:
            both_planned.wait()
        except threading.BrokenBarrierError:
            pass  # the other worker never got here: it failed or is blocked (asserted below)

    results: dict[str, list] = {}
    errors: dict[str, BaseException] = {}

    def worker(n: int):
        ms = connect(url)
        opts = w.WorkerOptions(max=1, engine="local", worker_id=f"acidctl@test-worker-{n}")
        try:
            results[opts.worker_id] = w.run_cycle(ms, opts, table_fs=lambda u: TableFS(u))
        except BaseException as e:  # reported below
            errors[opts.worker_id] = e
        finally:
            ms.engine.dispose()

    with faults.hooks({"after-plan": hold}):
        threads = [threading.Thread(target=worker, args=(n,)) for n in (1, 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    assert not errors, errors
    recs = [r for rs in results.values() for r in rs]
    assert sorted(r["cq_id"] for r in recs) == sorted(ids.values()), recs
    states = {r["partition"]: r["state"] for r in recs}
    assert states == {"p=0": "ready for cleaning", "p=1": "ready for cleaning"}, recs
    # each worker ran one request: they overlapped, neither waited for the other to finish
    assert all(len(rs) == 1 for rs in results.values()), results
    for p in ("p=0", "p=1"):
        assert any(d.name.startswith("base_") for d in (loc / p).iterdir()), p
    assert [r for r in _rows(rec, "COMPLETED_COMPACTIONS", "CC_ID", "CC_STATE") if r[1] == "f"] == []
    assert sorted(_rows(rec, "COMPACTION_QUEUE", "CQ_ID", "CQ_STATE")) == sorted((i, "r") for i in ids.values())
    rec.engine.dispose()


@pytest.mark.parametrize("hive_version", [3, 4])
@pytest.mark.parametrize("backend", BACKENDS)
def test_second_compaction_of_one_partition_refuses_before_claiming(backend, hive_version, request, tmp_path):
    """While a worker compacts p=0, ``compact --major db.t/p=0`` refuses (exit 6) or waits, and
    leaves COMPACTION_QUEUE, COMPLETED_COMPACTIONS, TXNS and HIVE_LOCKS as it found them."""
    from acidctl.compact import worker as w
    from tests.conftest import run_cli
    from tests.property.warehouse import RULE3_TABLES

    url = _url(backend, request, tmp_path)
    rec, loc = partitioned_table(url, hive_version, tmp_path / "wh")
    cq = rec.enqueue_compaction("db", "t", partition="p=0", compaction_type="major")
    planned, go = threading.Event(), threading.Event()

    def hold(_plans):
        planned.set()
        go.wait(60)

    out: dict = {}

    def worker():
        ms = connect(url)
        try:
            out["records"] = w.run_cycle(
                ms, w.WorkerOptions(max=1, engine="local", worker_id="acidctl@test-worker-1"), table_fs=TableFS
            )
        except BaseException as e:
            out["error"] = e
        finally:
            ms.engine.dispose()

    def dump():
        res = {}
        with rec.engine.connect() as c:
            for name in RULE3_TABLES:
                t = getattr(rec.T, name)
                res[name] = sorted((tuple(r) for r in c.execute(sa.select(t.clause))), key=repr)
        return res

    with faults.hooks({"after-plan": hold}):
        t = threading.Thread(target=worker)
        t.start()
        # a second run that waits for the first (also allowed) is let through after a while
        release = threading.Timer(15, go.set)
        try:
            assert planned.wait(60), "the worker never reached its plan"
            before = dump()
            release.start()
            r = run_cli("--metastore", url, "compact", "--major", "db.t/p=0")
            waited = go.is_set()
            after = dump()
        finally:
            release.cancel()
            go.set()
            t.join(timeout=120)
    if waited and r.code == 0:
        pass  # it waited for the worker, then found its work done or did it after
    else:
        assert r.code == 6, r
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
        assert after == before
    assert "error" not in out, out
    assert [x["state"] for x in out["records"]] == ["ready for cleaning"], out
    if not waited:
        assert _rows(rec, "COMPACTION_QUEUE", "CQ_ID", "CQ_STATE") == [(cq, "r")]
    rec.engine.dispose()
