"""Compactions registered in a Hive 2.3 metastore end to end, through the CLI, on SQLite and real
PostgreSQL/MariaDB servers: ``compact --enqueue`` → ``worker --once`` → ``clean`` →
``succeeded`` in SHOW COMPACTIONS' 2.3 layout; ``compact DB.TABLE`` registering by default;
``--read-only``; ``upgrade-check --execute`` registering, cleaning and verifying.

Expected values come from the spec (insert-only-and-hive2.md B.2, B.7: the seed table's major
compaction observed with Hive 2.3.10's CompactorMR gives ``base_0000002`` with the rows of ROW__ID
(1,0,0), (1,0,2), (2,0,0); the compactor ValidTxnList with nothing open has hwm = NTXN_NEXT − 1)
and Hive 2.3's CompactionTxnHandler (the rows each step leaves)."""

from __future__ import annotations

import json
import os
import pwd
import shutil

import sqlalchemy as sa

from acidctl.metastore import hive2 as ms2
from tests.conftest import GOLDEN, run_cli
from tests.metastore.hive2_helpers import add_table, set_txns

SEED_ROWS = [((1, 0, 0), "Jerry"), ((1, 0, 2), "Kate"), ((2, 0, 0), "Tom")]  # _EXPECTED.md / B.7


def _seed(tmp_path, url, *, partitioned=False):
    ms2.init_hive2(url)
    root = tmp_path / "w" / "seed"
    d = root / "ds=a" if partitioned else root
    shutil.copytree(GOLDEN / "hive23_seed_table", d, ignore=shutil.ignore_patterns("_EXPECTED.md"))
    add_table(
        url,
        "db",
        "seed",
        f"file:{root}",
        {"transactional": "true", "transactional_properties": "default"},
        keys=[("ds", "string")] if partitioned else (),
        partitions=[("ds=a", f"file:{d}")] if partitioned else (),
    )
    set_txns(url, {}, next_txn=3)  # txns 1 and 2 committed (deleted from TXNS in 2.3)
    return d


def _merged(url, spec="db.seed"):
    r = run_cli("--metastore", url, "dump", "--merged", spec)
    assert r.code == 0, r.stderr
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    return [((x["row__id"]["writeid"], x["row__id"]["bucketid"], x["row__id"]["rowid"]), x["_col1"]) for x in rows]


def _queue(url):
    ms = ms2.connect_hive2(url)
    t = ms.t("COMPACTION_QUEUE")
    with ms.read() as conn:
        rows = conn.execute(sa.select(t.clause).order_by(t.CQ_ID)).mappings().all()
    ms.engine.dispose()
    return [{k.upper(): v for k, v in r.items()} for r in rows]


def _history(url):
    ms = ms2.connect_hive2(url)
    t = ms.t("COMPLETED_COMPACTIONS")
    with ms.read() as conn:
        rows = conn.execute(sa.select(t.clause).order_by(t.CC_ID)).mappings().all()
    ms.engine.dispose()
    return [{k.upper(): v for k, v in r.items()} for r in rows]


def test_enqueue_worker_clean_end_to_end(empty_db, tmp_path):
    url = empty_db
    d = _seed(tmp_path, url, partitioned=True)
    assert _merged(url) == SEED_ROWS
    r = run_cli("--metastore", url, "-o", "json", "compact", "--enqueue", "--major", "db.seed/ds=a")
    assert r.code == 0, r.stderr
    assert (json.loads(r.stdout)["id"], json.loads(r.stdout)["accepted"]) == (1, True)
    (q,) = _queue(url)
    assert (q["CQ_STATE"], q["CQ_TYPE"], q["CQ_PARTITION"], q["CQ_RUN_AS"]) == ("i", "a", "ds=a", None)

    if os.geteuid() == 0:  # the partition directory owned by someone else than who runs acidctl
        os.chown(d, pwd.getpwnam("nobody").pw_uid, -1)
    r = run_cli("--metastore", url, "-o", "json", "worker", "--once", "--engine", "local")
    assert r.code == 0, r.stdout + r.stderr
    (q,) = _queue(url)
    # markCompacted: 'r', no worker; setCompactionHighestTxnId: the compactor list's hwm = 3 - 1;
    # setRunAs: 2.3's findUserToRunAs takes the owner of the partition's directory
    owner = pwd.getpwuid(os.stat(d).st_uid).pw_name
    assert (q["CQ_STATE"], q["CQ_WORKER_ID"], q["CQ_HIGHEST_TXN_ID"], q["CQ_RUN_AS"]) == ("r", None, 2, owner)
    assert q["CQ_START"] is not None
    assert "base_0000002" in os.listdir(d)
    assert _merged(url) == SEED_ROWS

    r = run_cli("--metastore", url, "-o", "json", "show", "compactions")
    assert [(c["partition"], c["type"], c["state"]) for c in json.loads(r.stdout)["compactions"]] == [
        ("ds=a", "MAJOR", "ready for cleaning")
    ]

    # the dry run's text names the 2.3 column for what it is: a txn id (CQ_HIGHEST_TXN_ID)
    r = run_cli("--metastore", url, "--wide", "clean", "--min-age", "0", "db.seed")
    assert r.code == 0, r.stdout + r.stderr
    head = next(ln for ln in r.stdout.splitlines() if ln.startswith("ID "))
    assert "HIGHEST TXNID" in head and "WRITEID" not in head
    r = run_cli("--metastore", url, "-o", "json", "clean", "--execute", "--min-age", "0", "db.seed")
    assert r.code == 0, r.stdout + r.stderr
    assert [c["action"] for c in json.loads(r.stdout)["compactions"]] == ["marked cleaned"]
    assert sorted(x for x in os.listdir(d) if not x.startswith(("_", "."))) == ["base_0000002"]
    assert _queue(url) == []
    (cc,) = _history(url)
    assert (cc["CC_ID"], cc["CC_STATE"], cc["CC_TYPE"], cc["CC_PARTITION"], cc["CC_HIGHEST_TXN_ID"]) == (
        1,
        "s",
        "a",
        "ds=a",
        2,
    )
    assert cc["CC_START"] == q["CQ_START"] and cc["CC_END"] >= cc["CC_START"] and cc["CC_RUN_AS"] == owner

    r = run_cli("--metastore", url, "show", "compactions")
    assert r.code == 0, r.stderr
    lines = [x.split() for x in r.stdout.splitlines() if x.strip()]
    assert lines[0][:5] == ["DATABASE", "TABLE", "PARTITION", "TYPE", "STATE"] and "ID" not in lines[0]
    assert lines[2][:5] == ["db", "seed", "ds=a", "MAJOR", "succeeded"]
    assert _merged(url) == SEED_ROWS


def test_compact_registers_by_default_and_read_only_does_not(empty_db, tmp_path):
    url = empty_db
    d = _seed(tmp_path, url)
    r = run_cli("--metastore", url, "--read-only", "compact", "--major", "--engine", "local", "db.seed")
    assert r.code == 0, r.stderr
    assert "not registered in the metastore" in r.stderr and "--read-only" in r.stderr
    assert _queue(url) == [] and _history(url) == []
    shutil.rmtree(d / "base_0000002")

    r = run_cli("--metastore", url, "-o", "json", "compact", "--major", "--engine", "local", "db.seed")
    assert r.code == 0, r.stdout + r.stderr
    (p,) = json.loads(r.stdout)["partitions"]
    assert p["metastore"]["state"] == "ready for cleaning" and p["metastore"]["txn_id"] is None
    (q,) = _queue(url)
    assert (q["CQ_ID"], q["CQ_STATE"], q["CQ_TYPE"], q["CQ_PARTITION"], q["CQ_HIGHEST_TXN_ID"]) == (
        1,
        "r",
        "a",
        None,
        2,
    )
    # a second request of the same table while this one waits for the Cleaner is a new one (2.3's
    # duplicate check looks at 'i'/'w' rows only)
    r = run_cli("--metastore", url, "-o", "json", "compact", "--enqueue", "--minor", "db.seed")
    assert r.code == 0 and json.loads(r.stdout)["id"] == 2
    # --read-only forbids the Cleaner's markCleaned too: directories cleaned, queue untouched
    r = run_cli("--metastore", url, "--read-only", "-o", "json", "clean", "--execute", "--min-age", "0", "db.seed")
    assert r.code == 0, r.stderr
    assert [c["action"] for c in json.loads(r.stdout)["compactions"]] == ["stays ready for cleaning"]
    assert [q["CQ_STATE"] for q in _queue(url)] == ["r", "i"]
    r = run_cli("--metastore", url, "--read-only", "compact", "--enqueue", "--major", "db.seed")
    assert r.code == 6


def test_upgrade_check_execute_registers_cleans_and_verifies(empty_db, tmp_path):
    url = empty_db
    d = _seed(tmp_path, url, partitioned=True)
    # --dry-run first: the compactions it would run, nothing written, the code of the real run
    before = (sorted(os.listdir(d)), _queue(url), _history(url))
    r = run_cli("--metastore", url, "-o", "json", "upgrade-check", "--execute", "--engine", "local", "--dry-run")
    assert r.code == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["dry_run"] and json.loads(r.stdout)["commands"]
    assert (sorted(os.listdir(d)), _queue(url), _history(url)) == before
    r = run_cli("--metastore", url, "-o", "json", "upgrade-check", "--execute", "--engine", "local")
    assert r.code == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    ex = doc["executed"]
    assert doc["ready"] and ex["registered"] and ex["only_bases"] == []
    assert [run["compaction_ids"] for run in ex["runs"]] == [[1]]
    assert [c["state"] for c in ex["cleaned"][0]["compactions"]] == ["succeeded"]
    assert sorted(x for x in os.listdir(d) if not x.startswith(("_", "."))) == ["base_0000002"]
    assert _queue(url) == []
    assert [(c["CC_STATE"], c["CC_TYPE"], c["CC_PARTITION"], c["CC_HIGHEST_TXN_ID"]) for c in _history(url)] == [
        ("s", "a", "ds=a", 2)
    ]
    assert _merged(url) == SEED_ROWS


def test_initiator_once_on_a_23_metastore(empty_db, tmp_path):
    url = empty_db
    _seed(tmp_path, url, partitioned=True)
    # a second table over the same files, with the delta-count threshold lowered to 2: 3 deltas and
    # no base → MAJOR (2.3's determineCompactionType: too many deltas without a base)
    lowered = tmp_path / "w" / "low"
    shutil.copytree(GOLDEN / "hive23_seed_table", lowered, ignore=shutil.ignore_patterns("_EXPECTED.md"))
    add_table(
        url,
        "db",
        "low",
        f"file:{lowered}",
        {"transactional": "true", "compactorthreshold.hive.compactor.delta.num.threshold": "2"},
    )
    if os.geteuid() == 0:  # owned by someone else than who runs acidctl
        os.chown(lowered, pwd.getpwnam("nobody").pw_uid, -1)
    # aborted txn 40 without components, 41 with one (on another table): the cycle's
    # cleanEmptyAbortedTxns deletes 40 only
    set_txns(url, {40: "a", 41: "a"}, next_txn=42, components={41: ("db", "other")})
    # the Initiator's candidates are what committed writes left in COMPLETED_TXN_COMPONENTS
    # (findPotentialCompactions): both tables were written by txns 1 and 2; db.other never
    from tests.metastore.hive2_helpers import add_completed_components

    add_completed_components(url, [(t, "db", n, p) for t in (1, 2) for n, p in (("seed", "ds=a"), ("low", None))])
    r = run_cli("--metastore", url, "-o", "json", "initiator", "--once")
    assert r.code == 0, r.stdout + r.stderr
    got = {(c["table"], c["partition"]): (c["action"], c.get("type")) for c in json.loads(r.stdout)["checked"]}
    assert got == {
        ("db.low", None): ("enqueued", "major"),
        ("db.seed", "ds=a"): ("not-due", None),
        (None, None): ("removed-aborted-txns", None),
    }
    assert [t["txn_id"] for t in ms2.show_transactions(url)["transactions"]] == [41]
    (q,) = _queue(url)
    assert (q["CQ_ID"], q["CQ_TABLE"], q["CQ_PARTITION"], q["CQ_STATE"], q["CQ_TYPE"]) == (1, "low", None, "i", "a")
    # 2.3's requestCompaction sets runAs: the owner of the table's directory (findUserToRunAs)
    assert q["CQ_RUN_AS"] == pwd.getpwuid(os.stat(lowered).st_uid).pw_name
    # the next cycle finds the request initiated and does not add another
    r = run_cli("--metastore", url, "-o", "json", "initiator", "--once")
    got = {(c["table"], c["partition"]): c["action"] for c in json.loads(r.stdout)["checked"]}
    assert got[("db.low", None)] == "queued" and len(_queue(url)) == 1
    # two failed attempts in a row (checkFailedCompactions, threshold 2): markFailed with id 0 —
    # a new id from NEXT_COMPACTION_QUEUE_ID, state 'a', type MINOR, start = end
    from tests.metastore.hive2_helpers import add_compaction

    for cid in (7, 8):
        add_compaction(url, queue=False, cid=cid, db="db", table="seed", partition="ds=a", state="f", ctype="a")
    r = run_cli("--metastore", url, "-o", "json", "initiator", "--once")
    got = {(c["table"], c["partition"]): c for c in json.loads(r.stdout)["checked"]}
    assert got[("db.seed", "ds=a")]["action"] == "did-not-initiate" and got[("db.seed", "ds=a")]["id"] == 2
    att = [c for c in _history(url) if c["CC_STATE"] == "a"]
    assert [(c["CC_ID"], c["CC_TABLE"], c["CC_PARTITION"], c["CC_TYPE"]) for c in att] == [(2, "seed", "ds=a", "i")]
    assert att[0]["CC_START"] == att[0]["CC_END"] is not None


def test_revert_and_abort_compactions_on_a_23_metastore(empty_db, tmp_path):
    url = empty_db
    d = _seed(tmp_path, url)
    r = run_cli("--metastore", url, "compact", "--major", "--engine", "local", "db.seed")
    assert r.code == 0, r.stderr
    r = run_cli("--metastore", url, "revert", "--execute", "db.seed")
    assert r.code == 0, r.stdout + r.stderr
    assert "base_0000002" not in os.listdir(d)
    # revert moves the request to history as 'a' (attempted): 2.3's checkFailedCompactions, like
    # 3.1's, skips CC_STATE 'a' rows, so a revert never counts toward the failure threshold
    assert _queue(url) == []
    assert [(c["CC_ID"], c["CC_STATE"], c["CC_HIGHEST_TXN_ID"]) for c in _history(url)] == [(1, "a", 2)]
    assert _merged(url) == SEED_ROWS
    r = run_cli("--metastore", url, "compact", "--enqueue", "--minor", "db.seed")
    assert r.code == 0
    r = run_cli("--metastore", url, "-o", "json", "abort", "compactions", "--execute", "2")
    assert r.code == 0, r.stderr
    assert [c["status"] for c in json.loads(r.stdout)["compactions"]] == ["Success"]
    assert _queue(url) == [] and len(_history(url)) == 1  # as on Hive 3: the row deleted, no history


def test_hive_version_must_match_the_metastore_for_writes(tmp_path):
    from acidctl.metastore.init import init_metastore

    url2 = f"sqlite:///{tmp_path}/h23.db"
    _seed(tmp_path, url2)
    r = run_cli("--metastore", url2, "compact", "--enqueue", "--major", "--hive-version", "3", "db.seed")
    assert r.code != 0 and _queue(url2) == [], r.stdout + r.stderr
    r = run_cli("--metastore", url2, "compact", "--enqueue", "--major", "--hive-version", "2", "db.seed")
    assert r.code == 0 and [q["CQ_ID"] for q in _queue(url2)] == [1], r.stderr
    url3 = f"sqlite:///{tmp_path}/h31.db"
    init_metastore(url3, hive_version=3)
    r = run_cli("--metastore", url3, "compact", "--enqueue", "--major", "--hive-version", "2", "default.t")
    assert r.code == 2 and "Hive 2.x metastore" in r.stderr


def test_compact_due_counts_aborted_components_as_23(tmp_path):
    url = f"sqlite:///{tmp_path}/h23.db"
    ms2.init_hive2(url)
    d = tmp_path / "w" / "seed"
    shutil.copytree(GOLDEN / "hive23_seed_table", d, ignore=shutil.ignore_patterns("_EXPECTED.md"))
    props = {"transactional": "true", "compactorthreshold.hive.compactor.abortedtxn.threshold": "1"}
    add_table(url, "db", "seed", f"file:{d}", props)
    # txn 5 aborted with two components on the table: findPotentialCompactions' count(*) is 2 > 1
    set_txns(url, {5: "a"}, next_txn=6, components={5: ("db", "seed")})
    ms = ms2.connect_hive2(url)
    t = ms.t("TXN_COMPONENTS")
    with ms.engine.begin() as conn:
        conn.execute(
            sa.insert(t.clause).values(
                {t.TC_TXNID.name: 5, t.TC_DATABASE.name: "db", t.TC_TABLE.name: "seed", t.TC_OPERATION_TYPE.name: "i"}
            )
        )
    ms.engine.dispose()
    r = run_cli("--metastore", url, "-o", "json", "compact", "--due", "--dry-run", "db.seed")
    assert r.code == 0, r.stderr
    (p,) = json.loads(r.stdout)["partitions"]
    assert p["recommendation"]["type"] == "major"
    assert any("2 aborted txns > hive.compactor.abortedtxn.threshold 1" in x for x in p["recommendation"]["reasons"])


def test_upgrade_check_execute_read_only_keeps_locked_partitions(empty_db, tmp_path):
    url = empty_db
    d = _seed(tmp_path, url)
    ms = ms2.connect_hive2(url)
    h = ms.t("HIVE_LOCKS")
    lock = {
        "HL_LOCK_EXT_ID": 1,
        "HL_LOCK_INT_ID": 1,
        "HL_TXNID": 0,
        "HL_DB": "db",
        "HL_TABLE": "seed",
        "HL_PARTITION": None,
        "HL_LOCK_STATE": "a",
        "HL_LOCK_TYPE": "r",
        "HL_LAST_HEARTBEAT": 1,
        "HL_USER": "u",
        "HL_HOST": "h",
    }
    with ms.engine.begin() as conn:
        conn.execute(sa.insert(h.clause).values({getattr(h, k).name: v for k, v in lock.items()}))
    ms.engine.dispose()
    r = run_cli("--metastore", url, "--read-only", "-o", "json", "upgrade-check", "--execute", "--engine", "local")
    # compacted (a base is current), but a reader holds a lock: the old deltas stay → not verified
    assert r.code == 4, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert not doc["executed"]["registered"] and _queue(url) == [] and _history(url) == []
    (left,) = doc["executed"]["only_bases"]
    assert left["current"] == ["base_0000002"] and sorted(left["leftover"]) == [
        "delete_delta_0000002_0000002_0000",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
    ]
    assert "delta_0000001_0000001_0000" in os.listdir(d)
    assert _merged(url) == SEED_ROWS
