"""End to end on SQLite, PostgreSQL and MariaDB, Hive 3 and 4: the demo warehouse compacted with
``acidctl compact`` (registered in the metastore) → ``clean`` → the request ``succeeded``, the
old directories gone, the merged read unchanged. The demo leaves txn 10 open on
``sales/ds=2026-01-01`` with a lock: the Cleaner is held back by it (Hive 3: the lock on that
partition; Hive 4: the open txn below CQ_NEXT_TXN_ID blocks every request, HIVE-26704) until
it ends (operations.md §5)."""

from __future__ import annotations

import json
import time

import sqlalchemy as sa

from acidctl.demo import build_demo
from acidctl.fs import TableFS
from acidctl.metastore.connection import connect
from tests.compact.helpers import merged, state_errors
from tests.metastore.helpers import run_cli
from tests.metastore.test_cleaner import rows

P1, P2 = "ds=2025-12-31", "ds=2026-01-01"


def _cli(capsys, *argv) -> tuple[int, dict | None]:
    capsys.readouterr()
    code = run_cli(["-o", "json", *map(str, argv)])
    out = capsys.readouterr()
    try:
        return code, json.loads(out.out)
    except ValueError:
        return code, {"stderr": out.err}


def _dirs(p):
    return sorted(x.name for x in p.iterdir() if not x.name.startswith("."))


def _open_txn(ms) -> int:
    t = ms.tables.TXNS
    with ms.read() as c:
        return int(c.execute(sa.select(t.TXN_ID).where(t.TXN_STATE == "o")).scalar())


def test_compact_register_clean(empty_db, hive_version, tmp_path, capsys):
    url = empty_db
    build_demo(TableFS(str(tmp_path)), str(tmp_path / "demo"), metastore_url=url, hive_version=hive_version)
    wh = tmp_path / "demo" / "warehouse"
    snap = "default.sales:7:7:7:4"
    before = merged(wh / "sales", snap, hive_version=hive_version)
    code, doc = _cli(capsys, "--metastore", url, "compact", "--major", "--engine", "local", "default.sales")
    assert code == 0, doc
    reg = {p["partition"]: p["metastore"] for p in doc["partitions"]}
    cq = {p: reg[p]["cq_id"] for p in (P1, P2)}
    ms = connect(url)
    if hive_version == 4:
        time.sleep(1.1)  # Hive 4's Cleaner ignores txns younger than metastore.txn.opentxn.timeout
    # a reader of the current snapshot: what it reads must not change
    tl = None
    if hive_version == 4:
        from acidctl.metastore.snapshot import table_snapshot

        tl, _ = table_snapshot(ms, "default.sales")
    # dry run: what would happen to the queue rows; nothing changes
    code, doc = _cli(capsys, "--metastore", url, "clean", "--min-age", "0", "default.sales")
    assert code == 0, doc
    acts = {c["partition"]: (c["cq_id"], c["action"]) for c in doc["compactions"]}
    open_txn = _open_txn(ms)
    if hive_version == 3:
        # only ds=2026-01-01 has the open txn's lock
        assert acts == {P1: (cq[P1], "mark cleaned"), P2: (cq[P2], "held back")}
        (held,) = [c for c in doc["compactions"] if c["partition"] == P2]
        assert [(w["kind"], w["txn_id"]) for w in held["held_by"]] == [("lock", open_txn)]
    else:
        assert acts == {P1: (cq[P1], "held back"), P2: (cq[P2], "held back")}
        for c in doc["compactions"]:
            assert [(w["kind"], w["txn_id"]) for w in c["held_by"]] == [("open-txn", open_txn)]
    assert {r["CQ_ID"]: r["CQ_STATE"] for r in rows(ms, "COMPACTION_QUEUE") if r["CQ_TABLE"] == "sales"} == {
        cq[P1]: "r",
        cq[P2]: "r",
    }
    p2_dirs = _dirs(wh / "sales" / P2)

    # execute while held back: only what no held-back request covers goes
    code, doc = _cli(capsys, "--metastore", url, "clean", "--execute", "--min-age", "0", "default.sales")
    assert code == 0, doc
    assert _dirs(wh / "sales" / P2) == p2_dirs  # held back: all kept
    q = {r["CQ_ID"]: r for r in rows(ms, "COMPACTION_QUEUE")}
    hist = {r["CC_ID"]: r for r in rows(ms, "COMPLETED_COMPACTIONS")}
    if hive_version == 3:
        assert _dirs(wh / "sales" / P1) == ["base_0000002"]
        assert cq[P1] not in q and hist[cq[P1]]["CC_STATE"] == "s"
        assert q[cq[P2]]["CQ_STATE"] == "r"
    else:
        assert cq[P1] in q and cq[P2] in q
        assert q[cq[P1]]["CQ_CLEANER_START"] is None  # never started: held back before it
    assert merged(wh / "sales", snap, hive_version=hive_version, txns=tl) == before

    # the open txn ends (aborted, as its writer went away): the Cleaner proceeds
    from acidctl.metastore.recorder import Recorder

    Recorder(url).abort_txn(open_txn)
    if hive_version == 4:
        time.sleep(1.1)
        # nothing holds the requests back now, but --min-age (1h by default) keeps the directories
        # the compaction just made obsolete: the requests stay ready for cleaning, and Hive 4's
        # markCleanerStart is undone the way its verify step undoes it (CQ_CLEANER_START = -1)
        code, doc = _cli(capsys, "--metastore", url, "clean", "--execute", "default.sales")
        assert code == 0, doc
        assert {c["action"] for c in doc["compactions"]} == {"stays ready for cleaning"}
        q = {r["CQ_ID"]: r for r in rows(ms, "COMPACTION_QUEUE")}
        assert q[cq[P1]]["CQ_STATE"] == q[cq[P2]]["CQ_STATE"] == "r"
        assert q[cq[P1]]["CQ_CLEANER_START"] == q[cq[P2]]["CQ_CLEANER_START"] == -1
    t2w = ms.tables.TXN_TO_WRITE_ID
    with ms.read() as c:
        txn_of = dict(c.execute(sa.select(t2w.T2W_WRITEID, t2w.T2W_TXNID).where(t2w.T2W_TABLE == "sales")).all())
    code, doc = _cli(capsys, "--metastore", url, "clean", "--execute", "--min-age", "0", "default.sales")
    assert code == 0, doc
    acts = {c["partition"]: c["action"] for c in doc["compactions"]}
    assert set(acts.values()) == {"marked cleaned"}
    # the aborted txn of write 4 lost its last component (4 <= 6): its TXNS row goes; write 7's stays
    assert doc["aborted_txns_removed"] == [txn_of[4]]
    txn_states = {r["TXN_ID"]: r["TXN_STATE"] for r in rows(ms, "TXNS")}
    assert txn_of[4] not in txn_states and txn_states[txn_of[7]] == "a"
    q = {r["CQ_ID"] for r in rows(ms, "COMPACTION_QUEUE")}
    hist = {r["CC_ID"]: r for r in rows(ms, "COMPLETED_COMPACTIONS")}
    assert cq[P1] not in q and cq[P2] not in q
    assert hist[cq[P1]]["CC_STATE"] == "s" and hist[cq[P2]]["CC_STATE"] == "s"
    base = "base_0000006" + (f"_v{reg[P2]['txn_id']:07d}" if hive_version == 4 else "")
    # everything the base covers is gone; write 7 (now aborted) is above the compaction's highest
    # write id 6, where Hive's Cleaner caps its list (Hive 4 removes aborted directories only
    # below it): it stays, kept for a later compaction's Cleaner
    assert _dirs(wh / "sales" / P2) == sorted([base, "delta_0000007_0000007_0000"])
    (kept,) = [i for i in doc["items"] if i["path"].endswith("delta_0000007_0000007_0000")] or [None]
    assert hive_version == 3 and kept is None or kept["action"] == "keep (above the highest write id)"
    assert _dirs(wh / "sales" / P1) == ["base_0000002" + (f"_v{reg[P1]['txn_id']:07d}" if hive_version == 4 else "")]
    # COMPLETED_TXN_COMPONENTS of sales up to write id 6 pruned; aborted write 4 (<= 6) forgotten
    assert [r for r in rows(ms, "COMPLETED_TXN_COMPONENTS") if r["CTC_TABLE"] == "sales"] == []
    tc = [(r["TC_TABLE"], r["TC_WRITEID"]) for r in rows(ms, "TXN_COMPONENTS")]
    assert ("sales", 4) not in tc and ("sales", 7) in tc
    # SHOW COMPACTIONS: succeeded
    code, doc = _cli(capsys, "--metastore", url, "show", "compactions")
    assert code == 0
    st = {c["compactionid"]: c["state"] for c in doc["compactions"]}
    assert st[cq[P1]] == st[cq[P2]] == "succeeded"
    # the merged read (write 7 now aborted) is what it was
    after_snap = "default.sales:7:9223372036854775807::4,7"
    if hive_version == 4:
        from acidctl.metastore.snapshot import table_snapshot

        tl, _ = table_snapshot(ms, "default.sales")
    assert merged(wh / "sales", after_snap, hive_version=hive_version, txns=tl) == before
    assert (
        state_errors(wh / "sales", after_snap, hive_version=hive_version, txns=str(tl) if tl is not None else None)
        == []
    )


def test_read_only_cleans_directories_but_not_the_queue(empty_db, hive_version, tmp_path, capsys):
    url = empty_db
    build_demo(TableFS(str(tmp_path)), str(tmp_path / "demo"), metastore_url=url, hive_version=hive_version)
    wh = tmp_path / "demo" / "warehouse"
    code, doc = _cli(capsys, "--metastore", url, "compact", "--major", "--engine", "local", "default.employee")
    assert code == 0, doc
    cq = doc["partitions"][0]["metastore"]["cq_id"]
    if hive_version == 4:
        time.sleep(1.1)
    code, doc = _cli(
        capsys, "--read-only", "--metastore", url, "clean", "--execute", "--min-age", "0", "default.employee"
    )
    assert code == 0, doc
    (c,) = doc["compactions"]
    ms = connect(url)
    if hive_version == 3:  # Hive 3: no lock on employee; Hive 4: the sales txn blocks everything
        assert c["action"] == "stays ready for cleaning" and doc["metastore_writes"] is False
        assert _dirs(wh / "employee") == ["base_0000003"]
    else:
        assert c["action"] == "held back"
    assert {r["CQ_ID"]: r["CQ_STATE"] for r in rows(ms, "COMPACTION_QUEUE")}[cq] == "r"


def test_revert_of_a_registered_compaction_marks_it_failed(empty_db, hive_version, tmp_path, capsys):
    url = empty_db
    build_demo(TableFS(str(tmp_path)), str(tmp_path / "demo"), metastore_url=url, hive_version=hive_version)
    wh = tmp_path / "demo" / "warehouse"
    before_dirs = _dirs(wh / "sales" / P1)
    code, doc = _cli(capsys, "--metastore", url, "compact", "--major", "--engine", "local", "default.sales")
    assert code == 0, doc
    cq = {p["partition"]: p["metastore"]["cq_id"] for p in doc["partitions"]}
    ms = connect(url)
    queue = lambda: {r["CQ_ID"]: r["CQ_STATE"] for r in rows(ms, "COMPACTION_QUEUE")}  # noqa: E731
    # --read-only: the request could not leave 'ready for cleaning': refused, nothing changes
    code, doc = _cli(capsys, "--read-only", "--metastore", url, "revert", "--execute", f"default.sales/{P1}")
    assert code == 6 and queue()[cq[P1]] == "r" and _dirs(wh / "sales" / P1) != before_dirs
    # dry run says what would happen to the request
    code, doc = _cli(capsys, "--metastore", url, "revert", f"default.sales/{P1}")
    assert code == 0, doc
    assert doc["items"][0]["metastore"] == {
        "cq_id": cq[P1],
        "state_before": "ready for cleaning",
        "action": "would record as reverted",
    }
    code, doc = _cli(capsys, "--metastore", url, "revert", "--execute", f"default.sales/{P1}")
    assert code == 0, doc
    assert _dirs(wh / "sales" / P1) == before_dirs
    q = queue()
    assert cq[P1] not in q and q[cq[P2]] == "r"
    (h,) = [r for r in rows(ms, "COMPLETED_COMPACTIONS") if r["CC_ID"] == cq[P1]]
    # "a": neither Hive 3 (CC_STATE <> 'a') nor Hive 4 (s/f only) counts it toward the threshold
    assert h["CC_STATE"] == "a" and h["CC_PARTITION"] == P1 and h["CC_HIGHEST_WRITE_ID"] == 6
    if hive_version == 4:
        assert h["CC_ERROR_MESSAGE"].startswith("reverted by acidctl revert: base_0000002_v")
    # a later clean finds no registered request for the partition: its inputs stay readable
    p2 = _dirs(wh / "sales" / P2)
    code, doc = _cli(capsys, "--metastore", url, "clean", "--execute", "--min-age", "0", f"default.sales/{P1}")
    assert code == 0 and doc["compactions"] == []
    assert _dirs(wh / "sales" / P2) == p2  # DB.TABLE/PART cleans that partition only
    assert _dirs(wh / "sales" / P1) == before_dirs


ORC_T = (
    "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
    "row:struct<id:int,name:string>>"
)


def test_uncovered_aborted_delta_goes_before_mark_cleaned(tmp_path, capsys):
    """Hive 3: write 1 aborted, 2 and 3 committed; a minor compaction writes delta_2_3 and leaves
    the aborted delta_1_1 uncovered. markCleaned (highest write id 3) forgets txn 1's
    TXN_COMPONENTS and its then-empty TXNS row goes: write id 1 would read as committed. So the
    registered clean deletes the aborted delta (Hive 4's Cleaner deletes every aborted one)
    before finishing the request, and the read is unchanged."""
    from acidctl.metastore.init import init_metastore
    from acidctl.metastore.recorder import Recorder
    from tests.acidfiles import B0, acid_file

    url = f"sqlite:///{tmp_path}/ms.db"
    t = tmp_path / "t"
    for w in (1, 2, 3, 4, 5):
        acid_file(t / f"delta_{w:07d}_{w:07d}_0000" / "bucket_00000", ORC_T, [(0, w, B0, 0, w, (w, f"n{w}"))])
    # writes 4 and 5 were compacted too, by a compaction not registered: delta_4_5
    acid_file(
        t / "delta_0000004_0000005" / "bucket_00000", ORC_T, [(0, 4, B0, 0, 4, (4, "n4")), (0, 5, B0, 0, 5, (5, "n5"))]
    )
    init_metastore(url, hive_version=3)
    rec = Recorder(url)
    rec.create_table("db", "t", location=f"file:{t}", columns=[("id", "int"), ("name", "string")])
    txns = []
    for end in ("a", "c", "c", "c", "c"):
        x = rec.open_txn()
        rec.add_write(x, "db", "t")
        (rec.abort_txn if end == "a" else rec.commit_txn)(x)
        txns.append(x)
    snap = "db.t:5:9223372036854775807::1"
    before = merged(t, snap)
    assert sorted(before.values()) == [(2, "n2"), (3, "n3"), (4, "n4"), (5, "n5")]
    # a minor compaction whose output starts at the first valid delta (acidctl's own spans the
    # aborted id, delta_1_3; another compactor's need not): delta_2_3 written by hand
    acid_file(
        t / "delta_0000002_0000003" / "bucket_00000", ORC_T, [(0, 2, B0, 0, 2, (2, "n2")), (0, 3, B0, 0, 3, (3, "n3"))]
    )
    assert merged(t, snap) == before
    cq = rec.enqueue_compaction("db", "t", compaction_type="minor")
    rec.mark_working(cq)
    rec.mark_compacted(cq, highest_write_id=3)
    code, doc = _cli(capsys, "--metastore", url, "clean", "--execute", "--min-age", "0", "db.t")
    assert code == 0, doc
    assert [c["action"] for c in doc["compactions"]] == ["marked cleaned"]
    # Hive's Cleaner caps its list at the request's highest write id 3: delta_4_4 and delta_5_5,
    # obsolete only through the newer delta_4_5, stay (they do not keep the request open)
    assert _dirs(t) == [
        "delta_0000002_0000003",
        "delta_0000004_0000004_0000",
        "delta_0000004_0000005",
        "delta_0000005_0000005_0000",
    ]
    kept = {i["path"].rsplit("/", 1)[-1]: i["action"] for i in doc["items"] if i["action"].startswith("keep")}
    assert kept == {
        "delta_0000004_0000004_0000": "keep (above the highest write id)",
        "delta_0000005_0000005_0000": "keep (above the highest write id)",
    }
    ms = connect(url)
    assert [r["TXN_ID"] for r in rows(ms, "TXNS")] == []  # txn 1 emptied and removed
    assert rows(ms, "TXN_COMPONENTS") == []
    assert merged(t, "db.t:5:9223372036854775807::") == before  # write 1 now counts as committed: gone


def test_unreadable_partition_keeps_the_request(tmp_path, capsys):
    """A partition whose snapshot cannot be read (here: only base_5 on disk, the metastore's
    write-id high-water mark is 3 — "not enough history") is skipped by clean, so its request
    cannot be verified clean: it stays ready for cleaning."""
    from acidctl.metastore.init import init_metastore
    from acidctl.metastore.recorder import Recorder
    from tests.acidfiles import B0, acid_file

    url = f"sqlite:///{tmp_path}/ms.db"
    t = tmp_path / "t"
    acid_file(t / "base_0000005" / "bucket_00000", ORC_T, [(0, 5, B0, 0, 5, (5, "n5"))])
    init_metastore(url, hive_version=3)
    rec = Recorder(url)
    rec.create_table("db", "t", location=f"file:{t}", columns=[("id", "int"), ("name", "string")])
    for _ in range(3):
        x = rec.open_txn()
        rec.add_write(x, "db", "t")
        rec.commit_txn(x)
    cq = rec.enqueue_compaction("db", "t")
    rec.mark_working(cq)
    rec.mark_compacted(cq, highest_write_id=3)
    code, doc = _cli(capsys, "--metastore", url, "clean", "--execute", "--min-age", "0", "db.t")
    assert code == 0, doc
    (c,) = doc["compactions"]
    assert c["action"] == "stays ready for cleaning" and "skipped" in c["reason"]
    assert doc["skipped_partitions"] == [None]
    assert [r["CQ_STATE"] for r in rows(connect(url), "COMPACTION_QUEUE")] == ["r"]
