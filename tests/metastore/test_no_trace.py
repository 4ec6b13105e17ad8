"""Issue 21, rule 3: a refused, dry-run or interrupted acidctl command leaves COMPACTION_QUEUE,
COMPLETED_COMPACTIONS, TXNS, HIVE_LOCKS (and NEXT_COMPACTION_QUEUE_ID, TXN_COMPONENTS) as it
found them; a request it claimed is handed back as Hive's ``revokeFromLocalWorkers`` resets it
(operations.md §3.4: ``CQ_STATE='i'``, ``CQ_WORKER_ID``/``CQ_START`` NULL, everything else kept),
one it enqueued itself is removed, and a Hive 4 compactor txn it opened is aborted as Hive's Worker
aborts one (§2.4: ``TXN_STATE='a'``, ``TXN_META_INFO='compaction transaction abort'``, its
HIVE_LOCKS row gone, its TXN_COMPONENTS ``c`` row left). On SQLite, PostgreSQL and MariaDB, with
Hive 3 and Hive 4 schemas, on the demo warehouse (acidctl/demo.py: ``default.sales`` has the
partitions ds=2025-12-31 and ds=2026-01-01, write 7 open)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from acidctl.demo import build_demo
from acidctl.fs import TableFS
from acidctl.metastore import queue
from acidctl.metastore.connection import connect
from tests.metastore.helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
P1, P2 = "ds=2025-12-31", "ds=2026-01-01"
TABLES = (
    "COMPACTION_QUEUE",
    "COMPLETED_COMPACTIONS",
    "TXNS",
    "HIVE_LOCKS",
    "NEXT_COMPACTION_QUEUE_ID",
    "TXN_COMPONENTS",
)


@pytest.fixture(autouse=True)
def _writes_allowed():
    from acidctl.metastore import steps

    yield
    steps.allow_writes()


def _rows(ms, table: str) -> list[dict]:
    t = getattr(ms.tables, table)
    with ms.read() as c:
        out = [{k.upper(): v for k, v in r.items()} for r in c.execute(sa.select(t.clause)).mappings()]
    return sorted(out, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def trace(ms) -> dict:
    return {t: _rows(ms, t) for t in TABLES}


def _cli(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    code = run_cli([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _demo(url: str, hv: int, tmp_path: Path) -> Path:
    build_demo(TableFS(str(tmp_path)), str(tmp_path / "demo"), metastore_url=url, hive_version=hv)
    return tmp_path / "demo" / "warehouse"


def _abort_txn_rows(ms, txn_id: int) -> list[tuple]:
    t = ms.tables.TXNS
    with ms.read() as c:
        return [
            tuple(r)
            for r in c.execute(sa.select(t.TXN_STATE, t.TXN_TYPE, t.TXN_META_INFO).where(t.TXN_ID == txn_id)).all()
        ]


# ---------------------------------------------------------------------------------------
# refusals decided at plan time: nothing is enqueued or claimed
# ---------------------------------------------------------------------------------------


def test_refused_minor_leaves_no_trace_and_never_reaches_the_threshold(empty_db, tmp_path, capsys):
    """Report #2: the Hive 3 demo's minor compaction of ds=2026-01-01 would write delta + delete_delta
    (two renames): refused (exit 6) — before enqueue/claim, so no 'failed' history row; repeated,
    a queued request of the partition is not touched either."""
    url = empty_db
    _demo(url, 3, tmp_path)
    ms = connect(url)
    before = trace(ms)
    for _ in range(3):  # the threshold is 2: three refusals would have blocked the Initiator
        code, out, err = _cli(
            capsys, "--metastore", url, "compact", "--minor", "--engine", "local", "default.sales", "--partition", P2
        )
        assert code == 6 and "cannot be published atomically" in err, err
        assert trace(ms) == before
    # with a request queued for the partition (compact --enqueue): still untouched
    code, out, err = _cli(capsys, "--metastore", url, "compact", "--enqueue", "--minor", f"default.sales/{P2}")
    assert code == 0, err
    queued = trace(ms)
    (req,) = [r for r in queued["COMPACTION_QUEUE"] if r["CQ_PARTITION"] == P2 and r["CQ_STATE"] == "i"]
    assert req["CQ_WORKER_ID"] is None and req["CQ_START"] is None
    code, out, err = _cli(
        capsys, "--metastore", url, "compact", "--minor", "--engine", "local", "default.sales", "--partition", P2
    )
    assert code == 6 and "cannot be published atomically" in err
    assert trace(ms) == queued
    assert [r for r in queued["COMPLETED_COMPACTIONS"] if r["CC_PARTITION"] == P2 and r["CC_STATE"] == "f"] == []


def test_busy_partition_refuses_before_claiming(empty_db, hive_version, tmp_path, capsys):
    """Another acidctl holds the partition's lock: `compact` of that partition refuses (exit 6)
    before anything is enqueued or claimed; the other partition compacts meanwhile."""
    from acidctl.compact.lock import TableLock

    url = empty_db
    wh = _demo(url, hive_version, tmp_path)
    ms = connect(url)
    before = trace(ms)
    with TableLock(TableFS(str(wh / "sales")), command="worker", partition=P2):
        code, out, err = _cli(
            capsys, "--metastore", url, "compact", "--major", "--engine", "local", "default.sales", "--partition", P2
        )
        assert code == 6 and f"partition {P2} is locked by another acidctl worker" in err, err
        assert trace(ms) == before
        # the whole table needs P2 too
        code, out, err = _cli(capsys, "--metastore", url, "compact", "--major", "--engine", "local", "default.sales")
        assert code == 6 and "locked by another acidctl worker" in err, err
        assert trace(ms) == before
        # a different partition of the same table is not blocked
        code, out, err = _cli(
            capsys,
            "-o",
            "json",
            "--metastore",
            url,
            "compact",
            "--major",
            "--engine",
            "local",
            "default.sales",
            "--partition",
            P1,
        )
        assert code == 0, err
        (p,) = json.loads(out)["partitions"]
        assert p["partition"] == P1 and p["metastore"]["state"] == "ready for cleaning"
    assert not [f for f in (wh / "sales").iterdir() if f.name.startswith(".acidctl-compact")]


# ---------------------------------------------------------------------------------------
# claimed, then refused: handed back
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("queued", [True, False], ids=["queued-request", "own-request"])
def test_a_request_held_by_another_worker_refuses_before_any_claim(empty_db, hive_version, tmp_path, capsys, queued):
    """`compact --major default.sales`: ds=2026-01-01's request is being worked on by a Hive
    worker. Refused (exit 6) before anything of this run is claimed or enqueued — also not
    ds=2025-12-31's request (queued, or the one acidctl would enqueue): every table as it was."""
    url = empty_db
    _demo(url, hive_version, tmp_path)
    ms = connect(url)
    busy = queue.enqueue(ms, "default", "sales", partition=P2, type="major").id
    assert queue.claim(ms, worker_id="hivehost-17", only_ids=[busy]).cq_id == busy
    # the demo queued a major request of ds=2025-12-31 (initiated)
    (mine,) = [r["CQ_ID"] for r in _rows(ms, "COMPACTION_QUEUE") if r["CQ_PARTITION"] == P1 and r["CQ_STATE"] == "i"]
    if not queued:  # no request: acidctl would enqueue its own
        cq = ms.tables.COMPACTION_QUEUE
        with ms.engine.begin() as c:
            c.execute(sa.delete(cq.clause).where(cq.CQ_ID == mine))
    before = trace(ms)
    code, out, err = _cli(capsys, "--metastore", url, "compact", "--major", "--engine", "local", "default.sales")
    assert code == 6 and f"compaction {busy} of default.sales/{P2} is being worked on by hivehost-17" in err, err
    assert trace(ms) == before


def test_ready_for_cleaning_request_with_the_same_hwm_refuses_cleanly(empty_db, tmp_path, capsys):
    """Hive 4's compact() refuses a new request while one of the partition is ready for cleaning
    with CQ_HIGHEST_WRITE_ID = the current compactor high-water mark (metastore.md §9.1). acidctl
    answered with an UnboundLocalError; now: exit 6 naming that compaction, nothing written."""
    from acidctl.metastore.snapshot import table_snapshot

    url = empty_db
    _demo(url, 4, tmp_path)
    ms = connect(url)
    _, wl = table_snapshot(ms, "default.employee")
    hwm = wl.for_compactor().hwm
    rid = queue.enqueue(ms, "default", "employee", type="major").id
    queue.claim(ms, worker_id="hivehost-3", only_ids=[rid])
    cq = ms.tables.COMPACTION_QUEUE
    with ms.engine.begin() as c:
        c.execute(sa.update(cq.clause).where(cq.CQ_ID == rid).values({cq.CQ_HIGHEST_WRITE_ID.name: hwm}))
    queue.mark_compacted(ms, rid)
    before = trace(ms)
    code, out, err = _cli(capsys, "--metastore", url, "compact", "--major", "--engine", "local", "default.employee")
    assert code == 6, err
    assert f"compaction {rid} of default.employee is ready for cleaning and already covers write id {hwm}" in err
    assert "Traceback" not in err and "InternalError" not in err
    assert len(err.strip().splitlines()) <= 2  # the error line (and its hint)
    assert trace(ms) == before


# ---------------------------------------------------------------------------------------
# compact --enqueue --dry-run, and a duplicate request
# ---------------------------------------------------------------------------------------


def test_enqueue_dry_run_writes_nothing_and_duplicates_print_once(empty_db, hive_version, tmp_path, capsys):
    url = empty_db
    _demo(url, hive_version, tmp_path)
    ms = connect(url)
    before = trace(ms)
    (ncq,) = before["NEXT_COMPACTION_QUEUE_ID"]
    code, out, err = _cli(
        capsys, "-o", "json", "--metastore", url, "compact", "--enqueue", "--dry-run", "--major", f"default.sales/{P2}"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["dry_run"] is True and doc["accepted"] is True and doc["id"] == ncq["NCQ_NEXT"]
    assert trace(ms) == before
    # the real run gets exactly that id
    code, out, err = _cli(
        capsys, "-o", "json", "--metastore", url, "compact", "--enqueue", "--major", f"default.sales/{P2}"
    )
    assert code == 0, err
    assert json.loads(out)["id"] == ncq["NCQ_NEXT"]
    queued = trace(ms)
    # a duplicate: refused the same way with or without --dry-run, one error line, nothing on stdout
    for extra in (["--dry-run"], []):
        code, out, err = _cli(
            capsys, "--metastore", url, "compact", "--enqueue", *extra, "--major", f"default.sales/{P2}"
        )
        assert code == 6 and out == ""
        lines = [ln for ln in err.splitlines() if ln.startswith("acidctl: error:")]
        assert len(lines) == 1 and str(ncq["NCQ_NEXT"]) in lines[0], err
        assert trace(ms) == queued


# ---------------------------------------------------------------------------------------
# interrupted before publication (a real process, SIGINT / SIGTERM)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("queued", [True, False], ids=["queued-request", "own-request"])
@pytest.mark.parametrize("signal_at", ["int:before-publish", "term:before-publish", "term:after-plan"])
def test_interrupted_compact_hands_back(tmp_path, hive_version, signal_at, queued):
    """Ctrl-C or SIGTERM of `acidctl compact` before publication: the staging is removed and the
    queue is as it was — a queued request back to 'i' as revokeFromLocalWorkers leaves it, a
    request acidctl enqueued itself deleted (its id stays consumed); Hive 4: the compactor txn
    aborted as Hive's Worker aborts one (its TXN_COMPONENTS 'c' row stays, as Hive leaves it)."""
    url = f"sqlite:///{tmp_path}/ms.db"
    wh = _demo(url, hive_version, tmp_path)
    ms = connect(url)
    # the demo queued a major request of ds=2025-12-31 (initiated)
    (rid,) = [r["CQ_ID"] for r in _rows(ms, "COMPACTION_QUEUE") if r["CQ_PARTITION"] == P1 and r["CQ_STATE"] == "i"]
    if not queued:
        cq = ms.tables.COMPACTION_QUEUE
        with ms.engine.begin() as c:
            c.execute(sa.delete(cq.clause).where(cq.CQ_ID == rid))
    before = trace(ms)
    (ncq,) = before["NEXT_COMPACTION_QUEUE_ID"]
    dirs = sorted(p.name for p in (wh / "sales" / P1).iterdir())
    env = dict(os.environ, PYTHONPATH=str(ROOT), ACIDCTL_TEST_CRASH_AT=signal_at)
    env.pop("ACIDCTL_TEST_DRIVER_PID", None)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "acidctl",
            "--metastore",
            url,
            "compact",
            "--major",
            "--engine",
            "local",
            f"default.sales/{P1}",
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 130, p.stderr
    after = trace(ms)
    assert sorted(x.name for x in (wh / "sales" / P1).iterdir()) == dirs
    assert after["COMPLETED_COMPACTIONS"] == before["COMPLETED_COMPACTIONS"]
    assert after["HIVE_LOCKS"] == before["HIVE_LOCKS"]
    if signal_at == "term:after-plan":  # before the claim: nothing at all
        assert after == before
        return
    if queued:
        assert after["NEXT_COMPACTION_QUEUE_ID"] == before["NEXT_COMPACTION_QUEUE_ID"]
        (row,) = [r for r in after["COMPACTION_QUEUE"] if r["CQ_ID"] == rid]
        assert (row["CQ_STATE"], row["CQ_WORKER_ID"], row["CQ_START"]) == ("i", None, None)
        others = [r for r in after["COMPACTION_QUEUE"] if r["CQ_ID"] != rid]
        assert others == [r for r in before["COMPACTION_QUEUE"] if r["CQ_ID"] != rid]
    else:
        assert after["COMPACTION_QUEUE"] == before["COMPACTION_QUEUE"]
        assert after["NEXT_COMPACTION_QUEUE_ID"] == [{"NCQ_NEXT": ncq["NCQ_NEXT"] + 1}]
    if hive_version == 3:
        assert after["TXNS"] == before["TXNS"] and after["TXN_COMPONENTS"] == before["TXN_COMPONENTS"]
    else:
        (txn,) = [t for t in after["TXNS"] if t not in before["TXNS"]]
        if queued:
            assert txn["TXN_ID"] == row["CQ_TXN_ID"]
        assert _abort_txn_rows(ms, txn["TXN_ID"]) == [("a", 3, "compaction transaction abort")]
        comps = [c for c in after["TXN_COMPONENTS"] if c not in before["TXN_COMPONENTS"]]
        assert [(c["TC_TXNID"], c["TC_PARTITION"], c["TC_OPERATION_TYPE"]) for c in comps] == [(txn["TXN_ID"], P1, "c")]


def test_killed_compact_is_revoked_by_the_next_run(tmp_path, hive_version):
    """SIGKILL before publication cannot clean up: the request stays 'working' under
    acidctl@<host>-<pid>. The next acidctl run on this host sees that process is gone and resets
    the request as Hive's revokeFromLocalWorkers does (operations.md §3.4), then runs it."""
    import socket

    url = f"sqlite:///{tmp_path}/ms.db"
    _demo(url, hive_version, tmp_path)
    ms = connect(url)
    (rid,) = [r["CQ_ID"] for r in _rows(ms, "COMPACTION_QUEUE") if r["CQ_PARTITION"] == P1 and r["CQ_STATE"] == "i"]
    argv = [
        sys.executable,
        "-m",
        "acidctl",
        "-o",
        "json",
        "--metastore",
        url,
        "compact",
        "--major",
        "--engine",
        "local",
    ]
    env = dict(os.environ, PYTHONPATH=str(ROOT), ACIDCTL_TEST_CRASH_AT="before-publish")
    env.pop("ACIDCTL_TEST_DRIVER_PID", None)
    p = subprocess.run([*argv, f"default.sales/{P1}"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode in (-9, 137), p.stderr
    (row,) = [r for r in _rows(ms, "COMPACTION_QUEUE") if r["CQ_ID"] == rid]
    assert row["CQ_STATE"] == "w" and row["CQ_WORKER_ID"].startswith(f"acidctl@{socket.gethostname()}-")
    env.pop("ACIDCTL_TEST_CRASH_AT")
    # its lock is stale too: refused until broken, still without touching the queue
    before = trace(ms)
    p = subprocess.run([*argv, f"default.sales/{P1}"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 6 and "stale compaction lock" in p.stdout + p.stderr
    assert trace(ms) == before
    p = subprocess.run(
        [*argv, "--break-lock", f"default.sales/{P1}"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr
    (part,) = json.loads(p.stdout)["partitions"]
    assert part["metastore"]["cq_id"] == rid and part["metastore"]["claimed_request"] is True
    (row,) = [r for r in _rows(ms, "COMPACTION_QUEUE") if r["CQ_ID"] == rid]
    assert row["CQ_STATE"] == "r" and row["CQ_WORKER_ID"] is None
