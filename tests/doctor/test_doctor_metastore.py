"""`acidctl doctor` on a sick warehouse: SQLite, PostgreSQL and MariaDB metastores of Hive 3.1
and 4 shape (``metastore init``), rows written by the Recorder the way Hive writes them.

For every condition of issue #11: the finding appears with its evidence and fix command, and
after the fix (or the row change the fix command makes, operations.md §2.4/§6) it disappears.
Expected values are worked out from the rows written here and the spec's rules."""

from __future__ import annotations

import sqlalchemy as sa

from acidctl.doctor.findings import Limits
from acidctl.metastore.recorder import LockComponent
from tests.doctor.helpers import (
    H_MS,
    abort_compaction,
    codes,
    commit_write,
    compaction,
    execute,
    make_dirs,
    now_ms,
    run,
    set_txn_state,
    table,
)
from tests.acidfiles import acid_file

B = {"bucket_00000": 100}
ORC_TYPE = "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,row:struct<id:int>>"


def test_transactions_and_cleaner(metastore, hive_version, tmp_path):
    url, rec = metastore
    table(rec, tmp_path, "t", partitions={"p=1": {"delta_0000001_0000001_0000": B}}, write_ids=1)
    now = now_ms(rec)
    # txn X: opened 2 h ago, last heartbeat 2 h ago (> hive.txn.timeout 300 s)
    x = rec.open_txn(user="etl", host="h1", now_ms=now - 2 * H_MS)
    if hive_version == 4:
        # a compaction that committed after X opened: CQ_NEXT_TXN_ID > X (operations.md §2.3)
        ctxn = rec.open_txn(txn_type=3)
        cq = compaction(rec, "db", "t", partition="p=1", hw=1, state="r", txn=ctxn, commit=True)
    else:
        # Hive 3's Cleaner waits for the locks on the partition (§5.1): X holds one
        rec.lock(LockComponent("db", "t", "p=1", "shared_read"), txn_id=x)
        cq = compaction(rec, "db", "t", partition="p=1", hw=1, state="r")
    # txn Y: open 30 h, heartbeating (opened after the compaction: it does not block it)
    y = rec.open_txn(user="bi", host="h2", now_ms=now - 30 * H_MS)
    rec.heartbeat(y, now_ms=now)

    scan, f = run(url, now=now)
    from acidctl.doctor.findings import oldest_open_txn

    o = oldest_open_txn(scan.warehouse)
    assert o["txn_id"] == x and o["blocks_cleaning"] == ([cq] if hive_version == 4 else [])
    nohb = codes(f, "TXN_NO_HEARTBEAT")
    assert [d.evidence["txn_id"] for d in nohb] == [x]
    assert nohb[0].fix == f"acidctl abort transactions {x} --execute"
    assert 7100 <= nohb[0].evidence["heartbeat_age_seconds"] <= 7300
    long = codes(f, "TXN_LONG_OPEN")
    assert [d.evidence["txn_id"] for d in long] == [y] and long[0].severity.value == "warn"
    assert long[0].fix == f"acidctl abort transactions {y} --execute"
    if hive_version == 4:
        blk = codes(f, "CLEANER_BLOCKED_BY_TXN")
        assert len(blk) == 1 and blk[0].evidence["txn_id"] == x and blk[0].evidence["compaction_ids"] == [cq]
        assert blk[0].evidence["partitions"] == ["db.t/p=1"]
        assert blk[0].fix == f"acidctl abort transactions {x} --execute"
    else:
        blk = codes(f, "CLEANER_BLOCKED_BY_LOCK")
        assert len(blk) == 1 and blk[0].evidence["txn_ids"] == [x] and blk[0].evidence["compaction_id"] == cq
        assert blk[0].fix == f"acidctl abort transactions {x} --execute"

    # the fix: abort X (what `acidctl abort transactions X` does: state 'a', locks deleted)
    rec.abort_txn(x)
    rec.abort_txn(y)
    _, f = run(url, now=now)
    for code in ("TXN_NO_HEARTBEAT", "TXN_LONG_OPEN", "CLEANER_BLOCKED_BY_TXN", "CLEANER_BLOCKED_BY_LOCK"):
        assert codes(f, code) == [], code


def test_compaction_queue(metastore, hive_version, tmp_path):
    url, rec = metastore
    parts = {f"p={i}": {"delta_0000001_0000001_0000": B} for i in range(1, 6)}
    table(rec, tmp_path, "q", partitions=parts, write_ids=1)
    now = now_ms(rec)
    working = compaction(rec, "db", "q", partition="p=1", state="w", start=now - 25 * H_MS)
    initiated = compaction(rec, "db", "q", partition="p=2", state="i", enqueue=now - 2 * H_MS)
    cleaning = compaction(rec, "db", "q", partition="p=3", state="r", hw=1, start=now - 30 * H_MS)
    f1 = compaction(rec, "db", "q", partition="p=4", state="f", kind="minor")
    f2 = compaction(rec, "db", "q", partition="p=4", state="f", kind="minor")

    _, f = run(url, now=now)
    w = codes(f, "COMPACTION_WORKING_TOO_LONG")
    assert [x.evidence["compaction_id"] for x in w] == [working] and w[0].partition == "p=1"
    assert w[0].severity.value == "error"
    c = codes(f, "COMPACTION_CLEANING_TOO_LONG")
    assert [x.evidence["compaction_id"] for x in c] == [cleaning]
    s = codes(f, "INITIATOR_SKIPS_FAILED")
    assert len(s) == 1 and s[0].partition == "p=4" and s[0].evidence["failed_ids"] == [f2, f1]
    assert s[0].fix == "acidctl compact db.q/p=4 --major"
    i = codes(f, "COMPACTION_INITIATED_TOO_LONG")
    if hive_version == 4:
        # Hive 4 records CQ_ENQUEUE_TIME: 2 h >= 1 h (warn) and < 12 h (error)
        assert [x.evidence["compaction_id"] for x in i] == [initiated] and i[0].severity.value == "warn"
        assert i[0].fix == f"acidctl abort compactions {initiated} --execute"
    else:
        # Hive 3 keeps no enqueue time; compaction `cleaning` has a higher id and started 30 h ago,
        # so the request has waited at least 30 h (>= 12 h: error)
        assert [x.evidence["compaction_id"] for x in i] == [initiated] and i[0].severity.value == "error"
        assert i[0].evidence["age_is_lower_bound"] is True and abs(i[0].evidence["age_seconds"] - 30 * 3600) <= 120

    # the fixes (row changes as Hive makes them): the worker's row fails, the Cleaner marks
    # the 'r' row cleaned, ABORT COMPACTIONS moves the 'i' row to history 'x', and a
    # successful (cleaned) compaction ends the failure run
    rec.mark_failed(working, error_message="revoked")
    rec.mark_cleaned(cleaning)
    abort_compaction(rec, initiated)
    compaction(rec, "db", "q", partition="p=4", state="s", hw=1)
    _, f = run(url, now=now)
    for code in (
        "COMPACTION_WORKING_TOO_LONG",
        "COMPACTION_CLEANING_TOO_LONG",
        "INITIATOR_SKIPS_FAILED",
        "COMPACTION_INITIATED_TOO_LONG",
    ):
        assert codes(f, code) == [], code


def test_orphaned_ready_for_cleaning_hive4(metastore, hive_version, tmp_path):
    url, rec = metastore
    if hive_version != 4:
        return
    table(rec, tmp_path, "o", dirs={"delta_0000001_0000001_0000": B}, write_ids=1)
    ctxn = rec.open_txn(txn_type=3)
    cq = compaction(rec, "db", "o", state="r", hw=1, txn=ctxn)
    rec.abort_txn(ctxn)  # the worker died: its txn was aborted, never committed
    _, f = run(url)
    o = codes(f, "COMPACTION_ORPHANED")
    assert len(o) == 1 and o[0].evidence == {"compaction_id": cq, "txn_id": ctxn, "txn_state": "aborted"}
    rec.mark_failed(cq)
    _, f = run(url)
    assert codes(f, "COMPACTION_ORPHANED") == []


def test_locks(metastore, tmp_path):
    url, rec = metastore
    table(rec, tmp_path, "l", dirs={"delta_0000001_0000001_0000": B}, write_ids=1)
    now = now_ms(rec)
    a = rec.lock(LockComponent("db", "l", None, "exclusive"), now_ms=now)  # fresh, no txn
    b = rec.lock(LockComponent("db", "l", None, "shared_read"), state="waiting", blocked_by=(a, 1), now_ms=now)
    old = rec.lock(LockComponent("db", "x", None, "shared_read"), now_ms=now - H_MS)  # expired
    t = rec.open_txn()
    dead = rec.lock(LockComponent("db", "y", None, "shared_read"), txn_id=t, state="waiting")
    set_txn_state(rec, t, "a")  # aborted without its locks removed

    _, f = run(url, now=now)
    wt = codes(f, "LOCK_WAITING")
    assert len(wt) == 1 and wt[0].evidence["chain"] == [b, a] and wt[0].fix == f"acidctl unlock {a} --execute"
    ex = codes(f, "LOCK_EXPIRED")
    assert [x.evidence["lock_id"] for x in ex] == [old] and ex[0].fix == f"acidctl unlock {old} --execute"
    fin = codes(f, "LOCK_OF_FINISHED_TXN")
    assert [x.evidence["lock_id"] for x in fin] == [dead] and fin[0].fix == f"acidctl abort transactions {t} --execute"
    assert fin[0].evidence["txn_state"] == "aborted"

    # the fixes: unlock (the §6.3 predicate); Hive then grants the waiting lock
    rec.unlock(a)
    h = rec.T.HIVE_LOCKS
    execute(
        rec,
        sa.update(h.clause)
        .where(h.HL_LOCK_EXT_ID == b)
        .values({h.HL_LOCK_STATE.name: "a", h.HL_ACQUIRED_AT.name: now, h.HL_BLOCKEDBY_EXT_ID.name: None}),
    )
    rec.unlock(old)
    from tests.metastore.helpers import run_cli

    assert run_cli(["--metastore", url] + fin[0].fix.split()[1:]) == 0  # exactly as printed
    _, f = run(url, now=now)
    for code in ("LOCK_WAITING", "LOCK_EXPIRED", "LOCK_OF_FINISHED_TXN"):
        assert codes(f, code) == [], code


def test_files_versus_metastore(metastore, hive_version, tmp_path):
    url, rec = metastore
    # write ids above NEXT_WRITE_ID: 2 allocated, delta_5 on disk
    table(rec, tmp_path, "above", dirs={"delta_0000001_0000001_0000": B, "delta_0000005_0000005_0000": B}, write_ids=2)
    # a partition location that is gone, a partition directory the metastore does not list
    loc = table(rec, tmp_path, "parts", partitions={"p=1": {"delta_0000001_0000001_0000": B}}, write_ids=1)
    rec.add_partition("db", "parts", "p=2", location=f"file:{loc / 'p=2'}")  # never created
    (loc / "p=9" / "delta_0000001_0000001_0000").mkdir(parents=True)
    (loc / "p=9" / "delta_0000001_0000001_0000" / "bucket_00000").write_bytes(b"x" * 10)
    # a table whose location does not exist
    rec.create_table("db", "gone", location=f"file:{tmp_path / 'nowhere'}", columns=[("id", "int")])
    # a succeeded major compaction up to write id 3 with no base_0000003 on disk
    table(
        rec,
        tmp_path,
        "noout",
        dirs={"delta_0000001_0000001_0000": B, "delta_0000002_0000002_0000": B, "delta_0000003_0000003_0000": B},
        write_ids=3,
    )
    cq_noout = compaction(rec, "db", "noout", hw=3, state="s")
    # a compacted base no compaction row explains
    unexp = table(rec, tmp_path, "unexp", dirs={}, write_ids=2)
    bdir = {"bucket_00000": 100}
    if hive_version == 4:
        ctxn = rec.open_txn(txn_type=3)  # a committed compaction txn names the output (_vM)
        rec.commit_txn(ctxn)
        base = f"base_0000002_v{ctxn:07d}"
    else:
        base = "base_0000002"
        bdir["_metadata_acid"] = b'{"thisFileVersion":"0","dataFormat":"compacted"}'
    make_dirs(unexp, {base: bdir})
    # obsolete directories waiting for the Cleaner (an INSERT OVERWRITE base covers them)
    # (a real ORC file in the base: `acidctl clean` verifies the covering output reads)
    obs = table(rec, tmp_path, "obs", dirs={"delta_0000001_0000001_0000": B, "base_0000002": {}}, write_ids=2)
    acid_file(obs / "base_0000002" / "bucket_00000", ORC_TYPE, [(0, 2, 536870912, 0, 2, (1,))])
    # reader compatibility: a delta without _orc_acid_version (Trino), nested directories
    table(
        rec,
        tmp_path,
        "rd",
        dirs={
            "delta_0000001_0000001_0000": {"bucket_00000": 10, "_orc_acid_version": None},
            "delta_0000002_0000002_0000": {"bucket_00000": 10, "HIVE_UNION_SUBDIR_1/bucket_00000": 5},
        },
        write_ids=2,
    )
    (tmp_path / "db.db" / "rd" / "delta_0000002_0000002_0000" / "bucket_00000").unlink()
    # aborted txns on a partition, the oldest 30 h old
    table(rec, tmp_path, "ab", dirs={"delta_0000001_0000001_0000": B, "delta_0000002_0000002_0000": B}, write_ids=1)
    now = now_ms(rec)
    t = rec.open_txn(now_ms=now - 30 * H_MS)
    rec.add_write(t, "db", "ab")
    rec.abort_txn(t)

    scan, f = run(url, now=now)
    by = {(x.code, x.table, x.partition) for x in f}
    a = codes(f, "WRITE_ID_ABOVE_HWM")
    assert (
        len(a) == 1
        and a[0].table == "db.above"
        and a[0].evidence == {"table_hwm": 2, "dirs": ["delta_0000005_0000005_0000"]}
    )
    assert ("LOCATION_MISSING", "db.parts", "p=2") in by and ("LOCATION_MISSING", "db.gone", None) in by
    lm = [x for x in f if x.code == "LOCATION_MISSING" and x.partition == "p=2"][0]
    assert lm.fix == "beeline -e 'ALTER TABLE db.parts DROP IF EXISTS PARTITION (p='\"'\"'2'\"'\"')'"
    nm = codes(f, "PARTITION_NOT_IN_METASTORE")
    assert [(x.table, x.partition) for x in nm] == [("db.parts", "p=9")]
    assert nm[0].fix == "beeline -e 'MSCK REPAIR TABLE db.parts'"
    no = codes(f, "COMPACTION_SUCCEEDED_NO_OUTPUT")
    assert len(no) == 1 and no[0].evidence["compaction_id"] == cq_noout and no[0].evidence["highest_write_id"] == 3
    un = codes(f, "UNEXPLAINED_COMPACTED_DIR")
    assert [(x.table, x.evidence["dir"]) for x in un] == [("db.unexp", base)]
    ob = sorted(codes(f, "OBSOLETE_WAITING") + codes(f, "ABORTED_WAITING_COMPACTION"), key=lambda x: x.table)
    # db.ab's aborted delta: Hive 4's Cleaner removes it directly; Hive 3's only once a compaction
    # covers it (directory-state.md §7.2)
    assert [(x.table, x.code, x.evidence["dirs"]) for x in ob] == [
        (
            "db.ab",
            "OBSOLETE_WAITING" if hive_version == 4 else "ABORTED_WAITING_COMPACTION",
            ["delta_0000002_0000002_0000"],
        ),
        ("db.obs", "OBSOLETE_WAITING", ["delta_0000001_0000001_0000"]),
    ]
    # 100 data bytes + the 1-byte _orc_acid_version (every file of the directory counts, like sumDirSize)
    assert ob[1].evidence["bytes"] == 101 and ob[1].fix == "acidctl clean db.obs --execute --min-age 0"
    tr = [x for x in codes(f, "READER_TRINO") if x.table == "db.rd"]
    assert {tuple(x.evidence["paths"]) for x in tr} == {
        (str(tmp_path / "db.db" / "rd" / "delta_0000001_0000001_0000"),),
        ("delta_0000002_0000002_0000",),
    }
    ab = codes(f, "ABORTED_PILE")
    assert len(ab) == 1 and ab[0].table == "db.ab" and ab[0].evidence["aborted_txns"] == 1
    assert ab[0].evidence["aborted_dirs"] == ["delta_0000002_0000002_0000"]

    # the fixes
    for _ in range(3):
        commit_write(rec, "db", "above")  # write ids 3..5 allocated
    p = rec.T.PARTITIONS
    execute(rec, sa.delete(p.clause).where(p.PART_NAME == "p=2"))  # ALTER TABLE ... DROP PARTITION
    rec.add_partition("db", "parts", "p=9", location=f"file:{loc / 'p=9'}")  # MSCK REPAIR TABLE
    commit_write(rec, "db", "noout")  # write id 4, then a compaction that wrote base_4
    make_dirs(tmp_path / "db.db" / "noout", {"base_0000004": B})
    # the compaction registered (Hive 4: the row's compaction txn is the base's _v suffix,
    # acidctl.compact.naming.row_explains)
    compaction(rec, "db", "unexp", hw=2, state="s", txn=ctxn if hive_version == 4 else None)
    make_dirs(tmp_path / "db.db" / "ab", {"base_0000002": B})
    cq = compaction(rec, "db", "ab", hw=2, state="r")  # compaction + Cleaner purge the aborted rows
    rec.mark_cleaned(cq)
    import shutil

    shutil.rmtree(tmp_path / "db.db" / "ab" / "delta_0000002_0000002_0000")
    from tests.metastore.helpers import run_cli

    assert run_cli(["--metastore", url, "clean", "db.obs", "--execute", "--min-age", "0"]) == 0
    _, f = run(url, now=now)
    left = {(x.code, x.table, x.partition) for x in f}
    for key in [
        ("WRITE_ID_ABOVE_HWM", "db.above", None),
        ("LOCATION_MISSING", "db.parts", "p=2"),
        ("PARTITION_NOT_IN_METASTORE", "db.parts", "p=9"),
        ("COMPACTION_SUCCEEDED_NO_OUTPUT", "db.noout", None),
        ("UNEXPLAINED_COMPACTED_DIR", "db.unexp", None),
        ("OBSOLETE_WAITING", "db.obs", None),
        ("ABORTED_PILE", "db.ab", None),
        ("ABORTED_WAITING_COMPACTION", "db.ab", None),
    ]:
        assert key not in left, key


def test_metastore_bloat(metastore, tmp_path):
    url, rec = metastore
    table(rec, tmp_path, "big", dirs={"delta_0000001_0000001_0000": B}, write_ids=0)
    for _ in range(6):
        commit_write(rec, "db", "big")
    table(rec, tmp_path, "small", dirs={}, write_ids=1)
    lim = Limits(records_warn=5, records_error=100, aborted_metrics=1)
    t1, t2 = rec.open_txn(), rec.open_txn()
    rec.add_write(t1, "db", "big")
    rec.add_write(t2, "db", "big")
    rec.abort_txn(t1)
    rec.abort_txn(t2)
    _, f = run(url, limits=lim)
    bl = {x.evidence["table"]: x for x in codes(f, "METASTORE_BLOAT")}
    # 6 + 1 committed writes → 7 COMPLETED_TXN_COMPONENTS and TXN_TO_WRITE_ID rows (+2 aborted)
    assert bl["COMPLETED_TXN_COMPONENTS"].evidence["rows"] == 7
    assert bl["COMPLETED_TXN_COMPONENTS"].evidence["by_table"] == {"db.big": 6, "db.small": 1}
    assert bl["COMPLETED_TXN_COMPONENTS"].fix == "acidctl compact db.big --major"
    assert bl["TXN_TO_WRITE_ID"].evidence["rows"] == 9
    # the 7 committed writes' rows are below the lowest aborted txn t1: the housekeeper may purge them
    assert bl["TXN_TO_WRITE_ID"].evidence["purgeable_by_housekeeper"] == 7
    assert bl["TXN_COMPONENTS"].evidence == {"table": "TXN_COMPONENTS", "rows": 2, "aborted_txns": 2}
    # compacting and cleaning db.big up to write id 8 purges its rows (markCleaned, §5.4)
    cq = compaction(rec, "db", "big", hw=8, state="r")
    rec.mark_cleaned(cq)
    _, f = run(url, limits=lim)
    bl = {x.evidence["table"]: x for x in codes(f, "METASTORE_BLOAT")}
    assert "COMPLETED_TXN_COMPONENTS" not in bl and "TXN_COMPONENTS" not in bl


def test_no_secret_in_any_output(metastore, tmp_path, capsys):
    """The metastore password appears nowhere: text, JSON, HTML, errors (wrong password too)."""
    from tests.metastore.conftest import MY_PASSWORD, PG_PASSWORD
    from tests.metastore.helpers import run_cli

    url, rec = metastore
    table(rec, tmp_path, "s", dirs={"delta_0000001_0000001_0000": B}, write_ids=1)
    html = tmp_path / "r.html"
    outputs = []
    for argv in (["doctor"], ["-o", "json", "doctor", "--html", str(html)], ["why", "db.s"], ["metrics"]):
        capsys.readouterr()
        run_cli(["--metastore", url] + argv)
        o = capsys.readouterr()
        outputs += [o.out, o.err]
    outputs.append(html.read_text())
    for secret in (PG_PASSWORD, MY_PASSWORD):
        for wrong in (secret, secret + "x"):
            bad = url.replace(secret, wrong + "x") if secret in url else None
            if bad:
                capsys.readouterr()
                assert run_cli(["--metastore", bad, "doctor"]) == 5
                o = capsys.readouterr()
                outputs += [o.out, o.err]
        assert not any(secret in text for text in outputs)
