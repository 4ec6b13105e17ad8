"""The doctor's rules on hand-made facts: no filesystem, no database.

Each expectation is worked out from operations.md (§4.4 failure threshold per version, §8.3
thresholds, §6.3 unlock predicate) and the facts written here."""

from __future__ import annotations

from acidctl.doctor.collect import PartitionScan, Scan
from acidctl.doctor.facts import TableRow, Warehouse
from acidctl.doctor.findings import Limits, diagnose, failure_block
from acidctl.findings import Finding, Severity

NOW = 1_900_000_000_000
H = 3_600_000
D = 24 * H


def wh(**kw) -> Warehouse:
    base = dict(
        hive_version=4,
        now_ms=NOW,
        tables=[TableRow("db", "t", 1, "file:/w/t", {"transactional": "true"}, [], {})],
        txns={},
        txn_hwm=100,
        aborted_components={},
        completed_components={},
        write_set={},
        txn_to_write_id={},
        invalid_write_ids={},
        next_write_id={("db", "t"): 11},
        locks=[],
        queue=[],
        history=[],
        min_history_level=None,
        min_history_write_id={},
        initiator_last_cycle_ms=None,
        metrics_cache=[],
    )
    base.update(kw)
    return Warehouse(**base)


def scan(w, parts=()) -> Scan:
    return Scan(warehouse=w, tables=w.tables, partitions=list(parts))


def cc(i, state, *, enqueue=NOW - H, part=None):
    return {
        "CC_ID": i,
        "CC_DATABASE": "db",
        "CC_TABLE": "t",
        "CC_PARTITION": part,
        "CC_STATE": state,
        "CC_TYPE": "a",
        "CC_ENQUEUE_TIME": enqueue,
        "CC_START": enqueue,
        "CC_END": enqueue,
        "CC_HIGHEST_WRITE_ID": None,
    }


def test_failure_threshold_versions():
    lim = Limits()
    # newest first: 5 f, 4 a (did not initiate), 3 f, 2 s
    rows = [cc(2, "s"), cc(3, "f"), cc(4, "a"), cc(5, "f")]
    # Hive 3 skips 'a' rows: newest non-a are 5 f, 3 f → blocked
    assert failure_block(wh(hive_version=3, history=rows), "db", "t", None, lim=lim)["failed_ids"] == [5, 3]
    # Hive 4 keeps only s/f: 5 f, 3 f → blocked too; a refused 'c' row in between changes nothing
    rows4 = rows + [cc(6, "c")]
    assert failure_block(wh(history=rows4), "db", "t", None, lim=lim)["failed_ids"] == [5, 3]
    # ... while Hive 3 counts the 'c' row as a non-failure (newest non-a: 6 c, 5 f)
    assert failure_block(wh(hive_version=3, history=rows4), "db", "t", None, lim=lim) is None
    # Hive 4 retries once the newest failure is older than the retry time (7 days)
    old = [cc(2, "s"), cc(3, "f", enqueue=NOW - 9 * D), cc(5, "f", enqueue=NOW - 8 * D)]
    assert failure_block(wh(history=old), "db", "t", None, lim=lim) is None
    assert failure_block(wh(hive_version=3, history=old), "db", "t", None, lim=lim)["failed_ids"] == [5, 3]
    # a partition's rows do not count for another
    assert (
        failure_block(wh(history=[cc(3, "f", part="p=1"), cc(5, "f", part="p=2")]), "db", "t", "p=1", lim=lim) is None
    )


def _txn(i, started, hb, **kw):
    return {
        "txn_id": i,
        "state": "o",
        "started": started,
        "last_heartbeat": hb,
        "user": "u",
        "host": "h",
        "type": 0,
        "meta_info": None,
        "agent_info": None,
        **kw,
    }


def test_open_txn_levels():
    txns = {
        1: _txn(1, NOW - 25 * H, NOW),
        2: _txn(2, NOW - 73 * H, NOW),
        3: _txn(3, NOW - 2 * H, NOW - 10 * 60_000),
        4: _txn(4, NOW - 23 * H, NOW),
        5: _txn(5, NOW - 80 * H, NOW - 80 * H, type=1),
    }
    f = diagnose(scan(wh(txns=txns)))
    got = {(x.code, x.evidence["txn_id"], x.severity.value) for x in f}
    # 24 h warn / 72 h error (metastore.compactor.oldest.open.txn.threshold.*); 10 min without
    # heartbeat > hive.txn.timeout (300 s); txn 4 (23 h) is fine; replication txn 5 is exempt
    assert got == {("TXN_LONG_OPEN", 1, "warn"), ("TXN_LONG_OPEN", 2, "error"), ("TXN_NO_HEARTBEAT", 3, "warn")}


def _lock(ext, *, txn=0, state="a", blocked=None, hb=NOW):
    return {
        "HL_LOCK_EXT_ID": ext,
        "HL_LOCK_INT_ID": 1,
        "HL_TXNID": txn,
        "HL_DB": "db",
        "HL_TABLE": "t",
        "HL_PARTITION": None,
        "HL_LOCK_STATE": state,
        "HL_LOCK_TYPE": "r",
        "HL_LAST_HEARTBEAT": hb,
        "HL_ACQUIRED_AT": NOW if state == "a" else None,
        "HL_USER": "u",
        "HL_HOST": "h",
        "HL_BLOCKEDBY_EXT_ID": blocked,
        "HL_BLOCKEDBY_INT_ID": 1 if blocked else None,
    }


def test_lock_chain_to_a_txn():
    txns = {7: _txn(7, NOW - 60_000, NOW)}
    locks = [_lock(10, txn=7), _lock(11, state="w", blocked=10), _lock(12, state="w", blocked=11)]
    f = [x for x in diagnose(scan(wh(txns=txns, locks=locks))) if x.code == "LOCK_WAITING"]
    chains = {x.evidence["lock_id"]: (x.evidence["chain"], x.fix) for x in f}
    # the root of both chains is lock 10 of open txn 7: abort the txn (unlock refuses txn locks)
    assert chains == {
        11: ([11, 10], "acidctl abort transactions 7 --execute"),
        12: ([12, 11, 10], "acidctl abort transactions 7 --execute"),
    }


def test_acquired_lock_of_committed_txn_is_released_by_abort_transactions():
    # Hive's unlock() refuses locks of txns (§6.3), but ABORT TRANSACTIONS deletes the locks of
    # every txn it lists, ended ones included (operations.md §2.4)
    f = [x for x in diagnose(scan(wh(locks=[_lock(20, txn=9)]))) if x.code == "LOCK_OF_FINISHED_TXN"]
    assert len(f) == 1 and f[0].fix == "acidctl abort transactions 9 --execute" and f[0].severity is Severity.ERROR
    assert f[0].evidence["txn_state"] == "committed or gone"


def test_bloat_thresholds_and_reader_rules():
    w = wh(
        completed_components={("db", "t", None): {"rows": 600_000, "newest": None}},
        txn_to_write_id={("db", "t"): 1_200_000},
    )
    bl = {x.evidence["table"]: x.severity.value for x in diagnose(scan(w)) if x.code == "METASTORE_BLOAT"}
    # 500 000 warn, 1 000 000 error (...record.threshold.warning/error)
    assert bl == {"COMPLETED_TXN_COMPONENTS": "warn", "TXN_TO_WRITE_ID": "error"}
    ps = PartitionScan(
        "db",
        "t",
        None,
        "/w/t",
        dirs=[],
        recommendation={"type": "none"},
        checks=[Finding("M02", Severity.ERROR, "/w/t/delta_0000003_0000003_0000", "empty delta")],
    )
    f = [x for x in diagnose(scan(wh(), [ps])) if x.code.startswith("READER_")]
    assert [(x.code, x.evidence["engines"], x.severity.value) for x in f] == [
        ("READER_HIVE3", "Hive 3.1 and Trino", "error")
    ]
    assert f[0].fix == "acidctl compact db.t --major"


def test_small_files_and_obsolete_levels():
    d = lambda name, role, kind, small, files, mtime: {  # noqa: E731
        "name": name,
        "kind": kind,
        "role": role,
        "min_write_id": 1,
        "max_write_id": 1,
        "statement_id": 0,
        "visibility_txn": None,
        "bytes": 10 * files,
        "files": files,
        "small_files": small,
        "has_version_file": True,
        "nested": False,
        "mtime": mtime,
        "compacted": None,
    }
    now_s = NOW / 1000
    ps = PartitionScan(
        "db",
        "t",
        "p=1",
        "/w/t/p=1",
        recommendation={"type": "none"},
        dirs=[
            d("delta_0000001_0000001_0000", "delta", "delta", 60, 60, now_s),
            d("delta_0000002_0000002_0000", "delta", "delta", 40, 40, now_s),
            d("delta_0000000_0000000_0000", "obsolete", "delta", 5, 5, now_s - 600),
        ],
    )
    f = {x.code: x for x in diagnose(scan(wh(), [ps]))}
    # 60 + 40 small files in the current snapshot reach the limit of 100; the obsolete one does not count
    assert f["SMALL_FILES"].evidence == {"small_files": 100, "dirs": 2}
    assert f["SMALL_FILES"].fix == "acidctl compact db.t/p=1 --major"
    # obsolete for 10 min < 1 h: info only
    assert f["OBSOLETE_WAITING"].severity is Severity.INFO and f["OBSOLETE_WAITING"].evidence["bytes"] == 50
    # one directory: "it", not "them"
    assert "is no longer read" in f["OBSOLETE_WAITING"].message and "them" not in f["OBSOLETE_WAITING"].message
    ps.dirs[1]["small_files"] = 39
    assert "SMALL_FILES" not in {x.code for x in diagnose(scan(wh(), [ps]))}


def test_why_hive4_no_write_since_last_initiator_cycle():
    from acidctl.doctor.why import initiator

    t = TableRow("db", "t", 1, "file:/w/t", {"transactional": "true"}, [], {})
    ps = PartitionScan(
        "db",
        "t",
        None,
        "/w/t",
        recommendation={"type": "minor", "reasons": ["11 current deltas > 10"], "thresholds": {}},
    )
    ctc = {("db", "t", None): {"rows": 11, "newest": NOW - 2 * H}}
    # the previous cycle started 1 h ago, the newest write is 2 h old: Hive 4 does not look again (§4.2)
    w = wh(tables=[t], completed_components=ctc, initiator_last_cycle_ms=NOW - H)
    steps = initiator(w, t, ps, Limits())["steps"]
    assert steps[0]["rule"] == "candidate" and steps[0]["outcome"] == "stop"
    assert "no write since the Initiator's previous cycle" in steps[0]["detail"]
    # ... unless the newest compaction failed
    w = wh(tables=[t], completed_components=ctc, initiator_last_cycle_ms=NOW - H, history=[cc(3, "f")])
    assert initiator(w, t, ps, Limits())["steps"][0]["outcome"] == "ok"
    # Hive 3 has no such filter
    w = wh(hive_version=3, tables=[t], completed_components=ctc, initiator_last_cycle_ms=NOW - H)
    res = initiator(w, t, ps, Limits())
    assert res["steps"][0]["outcome"] == "ok" and res["verdict"] == "the Initiator would request a MINOR compaction now"


def test_aborted_pile_levels():
    def pile(rows, age_h):
        w = wh(aborted_components={("db", "t", None): {"rows": rows, "txns": rows, "oldest_started": NOW - age_h * H}})
        ps = PartitionScan(
            "db",
            "t",
            None,
            "/w/t",
            recommendation={"type": "none", "thresholds": {"hive.compactor.abortedtxn.threshold": 1000}},
        )
        return [(x.code, x.severity.value) for x in diagnose(scan(w, [ps])) if x.table == "db.t"]

    assert pile(10, 1) == []  # young and few: nothing
    assert pile(1001, 1) == [("ABORTED_PILE", "warn")]  # > hive.compactor.abortedtxn.threshold
    assert pile(10, 25) == [("ABORTED_PILE", "warn")]  # oldest >= 24 h
    assert sorted(pile(1501, 50)) == [("ABORTED_PILE", "warn"), ("METASTORE_BLOAT", "error")]  # > 1500 rows


def _cq(i, state, *, hw=None, part=None, retention=0, error=None, commit=NOW - H):
    return {
        "CQ_ID": i,
        "CQ_DATABASE": "db",
        "CQ_TABLE": "t",
        "CQ_PARTITION": part,
        "CQ_STATE": state,
        "CQ_TYPE": "a",
        "CQ_HIGHEST_WRITE_ID": hw,
        "CQ_START": commit,
        "CQ_COMMIT_TIME": commit,
        "CQ_NEXT_TXN_ID": 5,
        "CQ_TXN_ID": 4,
        "CQ_RETRY_RETENTION": retention,
        "CQ_ERROR_MESSAGE": error,
    }


def test_cleaner_retry_and_backlog():
    # retention 1200 s = 2^2 x 300 s: the third consecutive Cleaner error (§5.2 step 9)
    w = wh(queue=[_cq(7, "r", hw=5, retention=1_200_000, error="Permission denied"), _cq(8, "r", hw=3)])
    f = {x.code: x for x in diagnose(scan(w))}
    assert f["CLEANER_RETRYING"].evidence["attempts"] == 3 and "Permission denied" in f["CLEANER_RETRYING"].message
    # two 'r' rows on the partition: the lower highest write id (compaction 8) goes first
    assert f["CLEANER_BACKLOG"].evidence == {"compaction_ids": [8, 7], "first": 8}


def test_hive3_initiated_age_lower_bound():
    # Hive 3: no CQ_ENQUEUE_TIME; compaction 9 (a higher id) started 5 h ago, so 4 waits >= 5 h
    q = [dict(_cq(4, "i"), CQ_START=None, CQ_COMMIT_TIME=None)]
    h = [dict(cc(9, "s"), CC_START=NOW - 5 * H)]
    f = [x for x in diagnose(scan(wh(hive_version=3, queue=q, history=h))) if x.code == "COMPACTION_INITIATED_TOO_LONG"]
    assert len(f) == 1 and f[0].evidence["age_is_lower_bound"] is True
    assert abs(f[0].evidence["age_seconds"] - 5 * 3600) < 1 and f[0].severity is Severity.WARN
    # nothing enqueued after it: no age to judge
    assert [x for x in diagnose(scan(wh(hive_version=3, queue=q))) if x.code == "COMPACTION_INITIATED_TOO_LONG"] == []


def test_no_message_points_users_at_the_projects_spec_files():
    """Findings speak Hive's names (classes, JIRAs), never the project's own spec files, which a
    user does not have (docstrings may cite them)."""
    import ast
    import re
    from pathlib import Path

    import acidctl.doctor.findings as f

    tree = ast.parse(Path(f.__file__).read_text())
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    texts = [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
    ]
    assert texts and not [t for t in texts if re.search(r"\b[\w-]+\.md\b", t)]
