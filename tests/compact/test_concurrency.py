"""Writes that land while a compaction runs stay visible, and two compactions of one table
never run at once (the lock: exit 6)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from acidctl.compact.lock import LOCK_NAME, TableLock
from acidctl.errors import LockConflict
from acidctl.fs import TableFS
from acidctl.orc.writer import write_acid_file
from tests.acidfiles import events
from tests.compact.helpers import ALL, compact, merged, nation_table, state_errors

B0 = 536870912


def _write(dirpath, table):
    dirpath.mkdir(parents=True)
    (dirpath / "_orc_acid_version").write_bytes(b"2")
    write_acid_file(TableFS(str(dirpath)), str(dirpath / "bucket_00000"), table)


@pytest.mark.spark
@pytest.mark.parametrize("mode", ["major", "minor"])
def test_writes_during_compaction_are_visible_afterwards(tmp_path, spark, mode):
    t = nation_table(tmp_path)
    seen = {}

    def concurrent_writes(plans):
        # write 5 inserts two rows, write 6 deletes rowId 0 (ALGERIA) and one of write 5's rows
        _write(t / "delta_0000005_0000005_0000", events([(5, B0, 0), (5, B0, 1)]))
        _write(
            t / "delete_delta_0000006_0000006_0000",
            events([(2, B0, 0), (5, B0, 1)], ops=[2, 2], ctxn=[6, 6], rows=[None, None]),
        )
        seen["planned"] = [o.name for p in plans for o in p.outputs]

    compact(t, mode, f"db.t:4:{ALL}::", spark=spark, hooks={"before-publish": concurrent_writes})
    assert seen["planned"] == (
        ["base_0000004"] if mode == "major" else ["delta_0000002_0000004", "delete_delta_0000002_0000004"]
    )
    rows = merged(t, f"db.t:6:{ALL}::")
    keys = {k[1:] for k in rows}
    assert (5, B0, 0) in keys and (5, B0, 1) not in keys and (2, B0, 0) not in keys
    assert len(rows) == 23000 - 1 + 1
    assert state_errors(t, f"db.t:6:{ALL}::") == []
    # the snapshot as of write 4 is the compaction's and reads as before
    assert len(merged(t, f"db.t:6:{ALL}::".replace(":6:", ":4:"))) == 23000


def test_second_compaction_is_refused_while_one_runs(tmp_path, cli):
    t = nation_table(tmp_path)
    with TableLock(TableFS(str(t)), command="compact"):
        r = cli("-o", "json", "compact", "--major", "--engine", "local", "--write-ids", f"db.t:4:{ALL}::", t)
        assert r.code == 6
        err = json.loads(r.stderr)["error"]
        assert err["type"] == "LockConflict" and f"pid {os.getpid()}" in err["message"]
        with pytest.raises(LockConflict):
            compact(t, "major", f"db.t:4:{ALL}::")
        # clean --execute is refused too; the dry run just reports
        assert cli("clean", "--execute", "--write-ids", f"db.t:4:{ALL}::", t).code == 6
        assert cli("clean", "--write-ids", f"db.t:4:{ALL}::", t).code == 0
    assert not (t / LOCK_NAME).exists()
    assert cli("compact", "--major", "--engine", "local", "--write-ids", f"db.t:4:{ALL}::", t).code == 0


def test_stale_lock_is_reported_and_broken_on_request(tmp_path, cli):
    t = nation_table(tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    import socket
    import time

    (t / LOCK_NAME).write_text(
        json.dumps(
            {"pid": dead.pid, "host": socket.gethostname(), "started": time.time(), "token": "x", "command": "compact"}
        )
    )
    r = cli("compact", "--major", "--engine", "local", "--write-ids", f"db.t:4:{ALL}::", t)
    assert r.code == 6 and "stale" in r.stderr and "--break-lock" in r.stderr
    assert not (t / "base_0000004").exists()
    r = cli("compact", "--major", "--engine", "local", "--break-lock", "--write-ids", f"db.t:4:{ALL}::", t)
    assert r.code == 0, r
    assert (t / "base_0000004").is_dir() and not (t / LOCK_NAME).exists()


def test_lock_on_a_memory_filesystem_is_exclusive():
    tfs = TableFS("memory://acidctl-lock-test/t")
    tfs.makedirs(tfs.root)
    a = TableLock(tfs).acquire()
    with pytest.raises(LockConflict):
        TableLock(tfs).acquire()
    a.release()
    TableLock(tfs).acquire().release()


def test_a_partition_path_takes_the_table_lock(tmp_path, cli):
    from tests.compact.helpers import demo_warehouse

    wh, wids = demo_warehouse(tmp_path)
    with TableLock(TableFS(str(wh / "sales")), command="compact"):
        r = cli("compact", "--major", "--engine", "local", "--write-ids", wids["sales"], wh / "sales" / "ds=2026-01-01")
        assert r.code == 6 and "locked" in r.stderr
    r = cli("compact", "--major", "--engine", "local", "--write-ids", wids["sales"], wh / "sales" / "ds=2026-01-01")
    assert r.code == 0, r
    assert (wh / "sales" / "ds=2026-01-01" / "base_0000006").is_dir()
    assert not (wh / "sales" / "ds=2026-01-01" / LOCK_NAME).exists()


def test_ctrl_c_while_the_lock_is_written_leaves_no_lock(tmp_path, monkeypatch):
    """Ctrl-C lands after the exclusive create, during the fsync: the lock is not held, so the
    file must not stay behind (it would block the next run as a 'stale lock')."""
    from acidctl.compact import lock as lock_mod
    from acidctl.fs import TableFS

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(lock_mod.os, "fsync", interrupted)
    lk = TableLock(TableFS(str(tmp_path)), command="compact")
    with pytest.raises(KeyboardInterrupt):
        lk.acquire()
    assert not lk.held and not (tmp_path / LOCK_NAME).exists()
    monkeypatch.undo()
    with TableLock(TableFS(str(tmp_path)), command="compact") as again:  # the next run gets it
        assert again.held and (tmp_path / LOCK_NAME).exists()
    assert not (tmp_path / LOCK_NAME).exists()


def test_ctrl_c_right_after_the_lock_file_is_written_leaves_no_lock(tmp_path, monkeypatch):
    """Ctrl-C lands after the lock file is complete and closed but before ``acquire`` returns
    (so before the caller's try/finally): the file carries this run's token and goes too."""
    from acidctl.compact import lock as lock_mod
    from acidctl.fs import TableFS

    real_close = os.close

    def close_then_interrupted(fd):
        real_close(fd)
        raise KeyboardInterrupt

    monkeypatch.setattr(lock_mod.os, "close", close_then_interrupted)
    lk = TableLock(TableFS(str(tmp_path)), command="compact")
    with pytest.raises(KeyboardInterrupt):
        lk.acquire()
    monkeypatch.undo()
    assert not lk.held and not (tmp_path / LOCK_NAME).exists()


def test_an_interrupted_acquire_never_removes_another_runs_lock(tmp_path, monkeypatch):
    """The cleanup after an interrupted acquire removes only a file with its own token."""
    from acidctl.compact import lock as lock_mod
    from acidctl.fs import TableFS

    other = TableLock(TableFS(str(tmp_path)), command="compact").acquire()

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(lock_mod, "read_lock", interrupted)
    lk = TableLock(TableFS(str(tmp_path)), command="compact")
    with pytest.raises(KeyboardInterrupt):
        lk.acquire()
    monkeypatch.undo()
    assert (tmp_path / LOCK_NAME).exists()
    assert json.loads((tmp_path / LOCK_NAME).read_text())["token"] == other.token
    other.release()


# ---------------------------------------------------------------------------------------
# per-partition locks (issue 21): different partitions side by side, overlapping scopes refuse
# ---------------------------------------------------------------------------------------


def test_partition_locks_conflict_only_when_scopes_overlap(tmp_path):
    from acidctl.compact.lock import LockSet, all_locks, lock_name

    tfs = TableFS(str(tmp_path))
    a = TableLock(tfs, partition="ds=1/hr=1").acquire()
    b = TableLock(tfs, partition="ds=1/hr=2").acquire()  # a sibling: fine
    c = TableLock(tfs, partition="ds=2").acquire()  # another partition: fine
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [".acidctl-compact.ds=1%2Fhr=1.lock", ".acidctl-compact.ds=1%2Fhr=2.lock", ".acidctl-compact.ds=2.lock"]
    )
    assert lock_name("ds=1/hr=1") == ".acidctl-compact.ds=1%2Fhr=1.lock"
    for scope in (None, "ds=1", "ds=1/hr=1"):  # the table, an ancestor, the same partition
        with pytest.raises(LockConflict, match="locked by another acidctl compact"):
            TableLock(tfs, partition=scope).acquire()
    # a refused attempt leaves no file of its own
    assert len(list(tmp_path.iterdir())) == 3
    assert [lk.partition for lk in all_locks(tfs)] == ["ds=1/hr=1", "ds=1/hr=2", "ds=2"]
    # a set is all or none: ds=3 is free, ds=2 is not → neither is held afterwards
    with pytest.raises(LockConflict):
        LockSet(tfs, ["ds=3", "ds=2"]).acquire()
    assert not (tmp_path / ".acidctl-compact.ds=3.lock").exists()
    for lk in (a, b, c):
        lk.release()
    assert list(tmp_path.iterdir()) == []
    with TableLock(tfs):  # the table, once no partition is held
        with pytest.raises(LockConflict, match=r"partition ds=2 is locked by another acidctl compact \(table\)"):
            TableLock(tfs, partition="ds=2").acquire()
    assert list(tmp_path.iterdir()) == []


def test_stale_partition_lock_is_reported_and_broken(tmp_path, cli):
    from acidctl.compact.lock import all_locks

    tfs = TableFS(str(tmp_path))
    (tmp_path / ".acidctl-compact.ds=1.lock").write_text(
        json.dumps({"pid": 999999, "host": socket.gethostname(), "started": time.time() - 60, "token": "x"})
    )
    (lk,) = all_locks(tfs)
    assert lk.partition == "ds=1" and lk.stale
    # a whole-table lock meets it: stale, refused with the hint
    with pytest.raises(LockConflict, match="stale compaction lock"):
        TableLock(tfs).acquire()
    # break_stale (clean --execute) removes only stale ones; break_lock removes it too
    t = TableLock(tfs, break_stale=True).acquire()
    assert [b.partition for b in t.broken_all] == ["ds=1"]
    t.release()
    assert list(tmp_path.iterdir()) == []


def test_whole_table_run_locks_only_the_partitions_it_compacts(tmp_path, cli):
    """`compact --major TABLE` while another run holds one partition: the run compacts the other
    partition (it locks only what it compacts) and leaves the held one alone; a partition the
    run would compact but another process holds still refuses the run (exit 6)."""
    from tests.compact.helpers import demo_warehouse

    wh, wids = demo_warehouse(tmp_path)
    tfs = TableFS(str(wh / "sales"))
    held, other = "ds=2026-01-01", "ds=2025-12-31"
    before = set(os.listdir(wh / "sales" / held))
    with TableLock(tfs, command="worker", partition=held):
        # both partitions need a major compaction: the held one is in the plan -> refused
        r = cli("compact", "--major", "--engine", "local", "--write-ids", wids["sales"], wh / "sales")
        assert r.code == 6 and held in r.stderr, r
        assert set(os.listdir(wh / "sales" / held)) == before
        assert not [n for n in os.listdir(wh / "sales" / other) if n.startswith("base_")]
        # --due: only ds=2025-12-31 is due (its originals; tests/doctor/test_one_model.py) -> runs
        r = cli("compact", "--due", "--engine", "local", "--write-ids", wids["sales"], wh / "sales")
        assert r.code == 0, r
        assert (wh / "sales" / other / "base_0000002").is_dir()
    assert set(os.listdir(wh / "sales" / held)) == before
    assert not [n for n in os.listdir(wh / "sales") if n.startswith(".acidctl-compact")]
