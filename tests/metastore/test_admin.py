"""``acidctl abort compactions`` and ``acidctl unlock`` (acidctl/metastore/admin.py) on SQLite,
PostgreSQL and MariaDB, Hive 3 and 4: exactly the rows Hive's ``abortCompactions`` / ``unlock``
change and their refusals (operations.md §6.2, §6.3)."""

from __future__ import annotations

import json

import pytest

from acidctl.errors import ExitCode, RefusedError
from acidctl.metastore import admin
from acidctl.metastore.connection import connect
from acidctl.metastore.recorder import LockComponent
from tests.metastore.helpers import run_cli
from tests.metastore.test_cleaner import now, rows


def _queue(ms):
    return {r["CQ_ID"]: r for r in rows(ms, "COMPACTION_QUEUE")}


def test_abort_compactions(metastore, hive_version, capsys):
    url, rec = metastore
    ms = connect(url)
    init = rec.enqueue_compaction("db", "t", partition="p=1", compaction_type="minor", pool="pool1", run_as="u1")
    work = rec.enqueue_compaction("db", "t", partition="p=2")
    rec.mark_working(work)
    done = rec.enqueue_compaction("db", "t", partition="p=3")
    rec.mark_working(done)
    rec.mark_failed(done, error_message="boom")
    before = _queue(ms)

    # dry run: nothing changes; the same verdicts Hive gives
    capsys.readouterr()
    code = run_cli(["-o", "json", "--metastore", url, "abort", "compactions", str(init), str(work), str(done), "999"])
    doc = json.loads(capsys.readouterr().out)
    assert code == ExitCode.CONFLICT
    got = {c["compactionid"]: (c["status"], c["message"]) for c in doc["compactions"]}
    assert got[init][0] == "Eligible"
    assert got[work] == ("Error", "Error while aborting compaction as compaction is in state-WORKING")
    assert got[done] == ("Error", "Error while aborting compaction as compaction is in state-FAILED")
    assert got[999] == ("Error", "No Such Compaction Id Available")
    assert _queue(ms) == before

    t0 = now(ms)
    res = admin.abort_compactions(ms, [init, 999], execute=True)
    t1 = now(ms)
    assert [(c["compactionid"], c["status"]) for c in res["compactions"]] == [(init, "Success"), (999, "Error")]
    assert res["compactions"][0]["message"].startswith("Successfully aborted compaction")
    q = _queue(ms)
    assert sorted(q) == [work] and q[work] == before[work]
    hist = {r["CC_ID"]: r for r in rows(ms, "COMPLETED_COMPACTIONS")}
    if hive_version == 4:
        h = hist[init]
        assert h["CC_STATE"] == "x" and t0 <= h["CC_END"] <= t1
        assert h["CC_ERROR_MESSAGE"] == "Compaction Aborted by Abort Comapction request."
        for c, v in h.items():
            if c not in ("CC_STATE", "CC_END", "CC_ERROR_MESSAGE"):
                assert v == before[init]["CQ_" + c[3:]], c
        assert (h["CC_POOL_NAME"], h["CC_TYPE"], h["CC_RUN_AS"]) == ("pool1", "i", "u1")
    else:
        # Hive 3 knows no aborted state: the initiated row is deleted, no history row
        assert init not in hist
    assert sorted(hist) == sorted([done] + ([init] if hive_version == 4 else []))
    # an id given twice is handled once; unknown ids alone exit 3
    assert run_cli(["--metastore", url, "abort", "compactions", "12345", "12345"]) == ExitCode.NOT_FOUND


def test_unlock(metastore, hive_version, capsys):
    url, rec = metastore
    ms = connect(url)
    free = rec.lock([LockComponent("db", "t", "p=1", "exclusive"), LockComponent("db", "u")])
    txn = rec.open_txn()
    held = rec.lock(LockComponent("db", "t", "p=2", "shared_read"), txn_id=txn)
    txn2 = rec.open_txn()
    waiting = rec.lock(LockComponent("db", "t", "p=2", "exclusive"), txn_id=txn2, state="waiting", blocked_by=(held, 1))

    def ids():
        return sorted((r["HL_LOCK_EXT_ID"], r["HL_LOCK_INT_ID"]) for r in rows(ms, "HIVE_LOCKS"))

    all_locks = ids()
    assert all_locks == [(free, 1), (free, 2), (held, 1), (waiting, 1)]
    # dry run: both components of the free lock would go, nothing is deleted
    capsys.readouterr()
    assert run_cli(["-o", "json", "--metastore", url, "unlock", "--dry-run", str(free)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "would unlock" and doc["rows_deleted"] == 2 and ids() == all_locks
    # a lock held by a txn: refused as Hive refuses it, nothing deleted
    assert run_cli(["--metastore", url, "unlock", "--execute", str(held)]) == ExitCode.CONFLICT
    assert "Unlocking locks associated with transaction not permitted" in capsys.readouterr().err
    with pytest.raises(RefusedError):
        admin.unlock(ms, held)
    assert ids() == all_locks
    # a waiting lock of a txn may be unlocked (HL_LOCK_STATE = 'w')
    assert admin.unlock(ms, waiting, execute=True)["rows_deleted"] == 1
    # preview unless --execute (acidctl's rule for commands that delete): nothing deleted
    assert run_cli(["--metastore", url, "unlock", str(free)]) == 0 and len(ids()) == 3
    # the id as SHOW LOCKS prints it (extId.intId) names the lock: every component goes, as
    # Hive's unlock(extLockId) releases them
    assert run_cli(["--metastore", url, "unlock", "--execute", f"{free}.2"]) == 0
    assert ids() == [(held, 1)]
    capsys.readouterr()
    assert run_cli(["--metastore", url, "unlock", "1.x"]) == ExitCode.USAGE
    assert "LOCKID" in capsys.readouterr().err
    # unknown id: Hive's unlock is idempotent
    res = admin.unlock(ms, 4242, execute=True)
    assert (res["status"], res["rows_deleted"]) == ("no such lock", 0)
    # the txn's lock goes when the txn ends, not by unlock
    rec.commit_txn(txn)
    assert ids() == []


def test_read_only_refuses_admin_writes(metastore, hive_version):
    url, rec = metastore
    cq = rec.enqueue_compaction("db", "t")
    lock = rec.lock(LockComponent("db", "t"))
    assert (
        run_cli(["--read-only", "--metastore", url, "abort", "compactions", "--execute", str(cq)]) == ExitCode.CONFLICT
    )
    assert run_cli(["--read-only", "--metastore", url, "unlock", "--execute", str(lock)]) == ExitCode.CONFLICT
    # --dry-run exits as the real run would (refused), and writes nothing either
    assert (
        run_cli(["--read-only", "--metastore", url, "unlock", "--execute", "--dry-run", str(lock)]) == ExitCode.CONFLICT
    )
    ms = connect(url)
    assert [r["CQ_ID"] for r in rows(ms, "COMPACTION_QUEUE")] == [cq]
    assert [r["HL_LOCK_EXT_ID"] for r in rows(ms, "HIVE_LOCKS")] == [lock]
    # previews only read: allowed
    assert run_cli(["--read-only", "--metastore", url, "unlock", "--dry-run", str(lock)]) == 0
    assert run_cli(["--read-only", "--metastore", url, "unlock", str(lock)]) == 0
