"""``doctor``, ``why`` and ``metrics`` over ``thrift://`` against the real Hive 2.3.10 metastore
(tests/hive23/server.py), with Hive's own Worker and Cleaner moving the queue.

Planted as a Hive 2 client plants it (tests/hive23/plant.py): a Hive 2 table with deltas on disk
(txn ids in their names), an aborted txn, an open txn holding a shared-write lock on that table,
a major compaction of it that Hive's Worker compacts and Hive's Cleaner then holds back (2.3's
Cleaner waits for the locks it saw, operations.md §5.1: a queue row ``ready for cleaning``), and
a finished compaction of a second, empty table. Every expected answer comes from the plant and
the server's own Thrift answers (get_open_txns_info, show_locks, show_compact), never from acidctl.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

from hive_metastore.ttypes import (
    AbortTxnsRequest,
    CompactionRequest,
    CompactionType,
    ShowCompactRequest,
    ShowLocksRequest,
    TxnState,
)

from tests.conftest import run_cli
from tests.hive2_histories import random_history
from tests.hive23 import plant

DB = "doc_db"
FINISHED = ("succeeded", "failed", "attempted")


def cli(server, *args):
    with server.inside():
        return run_cli("--metastore", server.url, *args)


def _rows(hms, table: str) -> list:
    return [e for e in hms.show_compact(ShowCompactRequest()).compacts if (e.dbname, e.tablename) == (DB, table)]


def _wait(hms, hive23, table: str, states: tuple[str, ...], timeout: float = 150) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = _rows(hms, table)
        if rows and rows[-1].state in states:
            return rows[-1]
        time.sleep(0.5)
    raise AssertionError(f"compaction of {DB}.{table} not {states}: {_rows(hms, table)}\n{hive23.log_tail()}")


def _plant(hms, hive23):
    """The state of the module docstring; returns what was planted."""
    wh = hive23.warehouse
    loc = plant.create_acid_table(hms, DB, "t", wh)
    h = random_history(random.Random(7), txns=5)
    h.states = {t: ("aborted" if s == "open" else s) for t, s in h.states.items()}
    h = plant.play(hms, h, DB, "t", loc)
    plant.create_acid_table(hms, DB, "done", wh)
    hms.compact2(CompactionRequest(dbname=DB, tablename="done", type=CompactionType.MAJOR))
    (a1,) = plant.open_txns(hms, 1)
    plant.lock(hms, a1, DB, "t")
    hms.abort_txns(AbortTxnsRequest(txn_ids=[a1]))
    (o1,) = plant.open_txns(hms, 1)
    lock_id = plant.lock(hms, o1, DB, "t").lockid
    hms.compact2(CompactionRequest(dbname=DB, tablename="t", type=CompactionType.MAJOR))
    done = _wait(hms, hive23, "done", FINISHED)
    ready = _wait(hms, hive23, "t", ("ready for cleaning",))
    return {"loc": loc, "history": h, "a1": a1, "o1": o1, "lock_id": lock_id, "done": done, "ready": ready}


def _server(hms) -> dict:
    info = hms.get_open_txns_info()
    states = {t.id: TxnState._VALUES_TO_NAMES[t.state] for t in info.open_txns}
    locks = hms.show_locks(ShowLocksRequest()).locks or []
    compacts = hms.show_compact(ShowCompactRequest()).compacts or []
    return {"info": info, "states": states, "locks": locks, "compacts": compacts}


def _dir_bytes(d: Path) -> int:
    return sum(f.stat().st_size for f in d.rglob("*") if f.is_file())


def test_doctor_why_metrics_on_what_was_planted(hive23, hms):
    p = _plant(hms, hive23)
    o1, lock_id, loc = p["o1"], p["lock_id"], p["loc"]
    try:
        time.sleep(1.5)  # o1 never heartbeats: older than the 1 s txn timeout given below
        srv = _server(hms)
        opens = sorted(t for t, s in srv["states"].items() if s == "OPEN")
        aborted = sorted(t for t, s in srv["states"].items() if s == "ABORTED")
        assert o1 in opens and p["a1"] in aborted
        queue = [e for e in srv["compacts"] if e.state in ("initiated", "working", "ready for cleaning")]
        # Hive 2.3's major compaction (CompactorMR): base_<highest txn of the deltas it read>, all
        # of them below the lowest open txn (B.5) — a1 wrote no delta
        on_disk = sorted(x.name for x in loc.iterdir() if not x.name.startswith((".", "_")))
        deltas = [n for n in on_disk if n.startswith(("delta_", "delete_delta_"))]
        top = max(int(n.split("_")[-2]) for n in deltas)
        assert top < o1 and f"base_{top:07d}" in on_disk, (on_disk, hive23.log_tail())
        # premise of the skipped checks: 2.3's show_compact gives no highest txn id
        no_highest = any(e.hightestTxnId is None for e in srv["compacts"])

        r = cli(hive23, "-o", "json", "doctor", "--db", DB, "--conf", "hive.txn.timeout=1s")
        rep = json.loads(r.stdout)
        assert r.code == (4 if rep["summary"]["errors"] else 0), r
        assert (rep["hive_version"], rep["metastore_source"]) == (2, "thrift")
        s = rep["summary"]
        assert (s["open_txns"], s["aborted_txns"]) == (len(opens), len(aborted))
        assert s["locks"] == len({e.lockid for e in srv["locks"]})
        assert s["compaction_queue"] == len(queue)
        assert s["tables_checked"] == 2 and s["oldest_open_txn"]["txn_id"] == min(opens)
        by = {}
        for f in rep["findings"]:
            by.setdefault(f["code"], []).append(f)
        # every open txn older than the 1 s timeout has no heartbeat (none was sent)
        assert {f["evidence"]["txn_id"] for f in by["TXN_NO_HEARTBEAT"]} == set(opens)
        assert next(f for f in by["TXN_NO_HEARTBEAT"] if f["evidence"]["txn_id"] == o1)["fix"] == (
            f"acidctl abort transactions {o1} --execute"
        )
        # 2.3's Cleaner (as Hive 3's, §5.1) waits for the locks on the partition: o1's
        (blocked,) = [f for f in by["CLEANER_BLOCKED_BY_LOCK"] if f["subject"] == f"{DB}.t"]
        assert blocked["evidence"] == {"compaction_id": p["ready"].id, "lock_ids": [lock_id], "txn_ids": [o1]}
        # the deltas the base covers wait for the Cleaner
        (obs,) = [f for f in by["OBSOLETE_WAITING"] if f["subject"] == f"{DB}.t"]
        assert sorted(obs["evidence"]["dirs"]) == sorted(deltas)
        part = next(x for x in rep["partitions"] if x["table"] == f"{DB}.t")
        assert (part["delta_count"], part["delete_delta_count"]) == (0, 0)
        assert part["obsolete_bytes"] == sum(_dir_bytes(loc / n) for n in deltas)
        # what the Thrift API does not give is not checked, and said so; never a finding from it
        assert {"TXN_COMPONENTS", "COMPLETED_TXN_COMPONENTS", "TXN_TO_WRITE_ID"} <= set(rep["facts_unavailable"])
        assert ("CQ_HIGHEST_WRITE_ID" in rep["facts_unavailable"]) == no_highest
        assert not {"CQ_NEXT_TXN_ID", "MIN_HISTORY_LEVEL"} & set(rep["facts_unavailable"])  # Hive 4 only
        skipped = {c["code"]: c for c in rep["checks_skipped"]}
        assert {"ABORTED_PILE", "METASTORE_BLOAT"} <= {k for k, c in skipped.items() if not c["partial"]}
        assert skipped["COMPACTION_DUE"]["partial"] and "STATE_S04" not in skipped  # Hive 2: txns are write ids
        assert "CLEANER_BLOCKED_BY_TXN" not in skipped
        for code, c in skipped.items():
            if not c["partial"]:
                assert code not in by, code
        if no_highest:
            # the empty table's compaction succeeded and left nothing: whether that is a lost output
            # needs its highest txn id, so the check is skipped, not passed
            assert "COMPACTION_SUCCEEDED_NO_OUTPUT" in skipped and "UNEXPLAINED_COMPACTED_DIR" in skipped

        # --since skips tables not written lately: when they were written is not known over Thrift
        since = cli(hive23, "doctor", "--db", DB, "--since", "1h")
        assert since.code == 10 and "--since" in since.stderr and since.stderr.count("\n") == 1, since

        text = cli(hive23, "doctor", "--db", DB, "--conf", "hive.txn.timeout=1s")
        assert text.code == r.code
        (line,) = [x for x in text.stdout.splitlines() if x.startswith("not checked (")]
        assert "Thrift API" in line and "ABORTED_PILE" in line
        assert "ABORTED_PILE" in text.stdout.split("not checked (", 1)[1].split("\n\n", 1)[0]

        # why: the Initiator's candidate rule is not judged; the table's no_auto_compaction (plant
        # sets it) stops it; the Cleaner waits for o1's lock
        w = json.loads(cli(hive23, "-o", "json", "why", f"{DB}.t").stdout)
        (wp,) = w["partitions"]
        steps = {s["rule"]: s for s in wp["initiator"]["steps"]}
        assert steps["candidate"]["outcome"] == "unknown" and "TXN_COMPONENTS" in steps["candidate"]["detail"]
        assert steps["no_auto_compaction"]["outcome"] == "stop"
        assert wp["initiator"]["verdict"] == "table property no_auto_compaction=true"
        cl = {s["rule"]: s for s in wp["cleaner"]["steps"]}
        assert cl["locks"]["outcome"] == "stop" and cl["locks"]["values"]["lock_ids"] == [lock_id]
        wt = cli(hive23, "why", f"{DB}.t")
        assert wt.code == 0 and "[????] candidate" in wt.stdout, wt

        # metrics: measured gauges from the server's answers; unavailable ones absent, not 0
        m = json.loads(cli(hive23, "-o", "json", "metrics").stdout)
        g = m["gauges"]
        assert g["num_open_non_repl_transactions"] == len(opens)
        assert g["oldest_open_non_repl_txn_id"] == min(opens)
        assert g["num_aborted_transactions"] == len(aborted)
        assert g["oldest_aborted_txn_id"] == (min(aborted) if aborted else 0)
        assert g["num_locks"] == len(srv["locks"])
        newest: dict = {}
        for e in srv["compacts"]:
            k = (e.dbname, e.tablename, e.partitionname)
            if k not in newest or e.id > newest[k].id:
                newest[k] = e
        assert g["compaction_num_ready_for_cleaning"] == sum(
            1 for e in newest.values() if e.state == "ready for cleaning"
        )
        assert g["compaction_num_succeeded"] == sum(1 for e in newest.values() if e.state == "succeeded")
        for gone in ("compaction_num_txn_to_writeid", "compaction_num_completed_txn_components"):
            assert gone not in g and gone in m["unavailable"]
        assert "tables_with_x_aborted_transactions" in m["unavailable"]
        prom = cli(hive23, "metrics")
        assert prom.code == 0 and "not exported" in prom.stderr
        from prometheus_client.parser import text_string_to_metric_families

        fams = {f.name: f for f in text_string_to_metric_families(prom.stdout)}
        assert "compaction_num_txn_to_writeid" not in fams and "num_locks" in fams
        assert fams["num_locks"].samples[0].value == len(srv["locks"])
        assert "# acidctl: compaction_num_txn_to_writeid not exported" in prom.stdout
    finally:
        hms.abort_txns(AbortTxnsRequest(txn_ids=[o1]))
