"""`acidctl why` and `acidctl metrics` on Hive 3.1/4 metastores (SQLite, PostgreSQL, MariaDB).

Expected values are worked out from the rows written here and the rules of operations.md
§4.3/§4.4 (Initiator order, failure threshold), §5.1/§5.2 (Cleaner blockers), §8.1 (gauges)."""

from __future__ import annotations

import json

from prometheus_client.parser import text_string_to_metric_families

from acidctl.metastore.recorder import LockComponent
from tests.doctor.helpers import H_MS, commit_write, compaction, now_ms, set_next_write_id, table
from tests.metastore.helpers import run_cli

B = {"bucket_00000": 100}


def _why(capsys, url, spec):
    capsys.readouterr()
    code = run_cli(["--metastore", url, "-o", "json", "why", spec])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def _stops(component):
    return [s["rule"] for s in component["steps"] if s["outcome"] == "stop"]


def test_why_initiator_and_cleaner(metastore, hive_version, tmp_path, capsys):
    url, rec = metastore
    deltas = {f"delta_{w:07d}_{w:07d}_0000": B for w in range(1, 12)}
    table(rec, tmp_path, "w", partitions={"p=1": deltas, "p=2": {"delta_0000001_0000001_0000": B}})
    for _ in range(11):
        commit_write(rec, "db", "w", partition="p=1")
    # p=1: 11 deltas > 10 → the Initiator would request MAJOR (no base)
    out = _why(capsys, url, "db.w/p=1")
    [p] = out["partitions"]
    ini = p["initiator"]
    assert _stops(ini) == [] and "would request a MAJOR" in ini["verdict"]
    th = [s for s in ini["steps"] if s["rule"] == "thresholds"][0]
    assert th["values"]["delta_count"] == 11 and th["values"]["thresholds"]["hive.compactor.delta.num.threshold"] == 10
    # the rule order of §4.3: Hive 3 checks no_auto_compaction before the queue, Hive 4 after
    rules = [s["rule"] for s in ini["steps"]]
    if hive_version == 3:
        assert rules[:4] == ["candidate", "no_auto_compaction", "queued", "failed threshold"]
    else:
        assert rules[:4] == ["candidate", "queued", "failed threshold", "no_auto_compaction"]
    wk = p["worker"]
    assert [s for s in wk["steps"] if s["rule"] == "output"][0]["values"]["outputs"][0].startswith("base_0000011")
    # p=2: nothing was written there (no COMPLETED_TXN_COMPONENTS): not a candidate
    [p2] = _why(capsys, url, "db.w/p=2")["partitions"]
    assert _stops(p2["initiator"])[0] == "candidate"

    # two failures: the threshold stops it; a queued request stops it first in Hive 4's order
    compaction(rec, "db", "w", partition="p=1", state="f")
    compaction(rec, "db", "w", partition="p=1", state="f")
    [p] = _why(capsys, url, "db.w/p=1")["partitions"]
    assert _stops(p["initiator"])[0] == "failed threshold"

    # Cleaner: a ready-for-cleaning compaction held back (Hive 4: open txn below CQ_NEXT_TXN_ID;
    # Hive 3: a lock on the partition)
    x = rec.open_txn(user="etl", host="h1")
    if hive_version == 4:
        ctxn = rec.open_txn(txn_type=3)
        compaction(rec, "db", "w", partition="p=1", state="r", hw=11, txn=ctxn, commit=True)
    else:
        rec.lock(LockComponent("db", "w", "p=1", "shared_read"), txn_id=x)
        compaction(rec, "db", "w", partition="p=1", state="r", hw=11)
    [p] = _why(capsys, url, "db.w/p=1")["partitions"]
    cl = p["cleaner"]
    if hive_version == 4:
        st = [s for s in cl["steps"] if s["rule"] == "open txn"][0]
        assert st["outcome"] == "stop" and st["values"]["txn_id"] == x
    else:
        st = [s for s in cl["steps"] if s["rule"] == "locks"][0]
        assert st["outcome"] == "stop" and len(st["values"]["lock_ids"]) == 1
    rec.abort_txn(x)
    if hive_version == 4:
        # why asks clean's own cleaner_waits: Hive 4's Cleaner counts txns younger than
        # metastore.txn.opentxn.timeout (1 s) as open, and the compaction txn just committed
        import time

        time.sleep(1.1)
    [p] = _why(capsys, url, "db.w/p=1")["partitions"]
    assert _stops(p["cleaner"]) == [] and "can clean" in p["cleaner"]["verdict"]
    # text rendering names the components in order
    capsys.readouterr()
    assert run_cli(["--metastore", url, "why", "db.w"]) == 0
    text = capsys.readouterr().out
    assert text.index("INITIATOR:") < text.index("WORKER:") < text.index("CLEANER:")
    assert "== db.w/p=1" in text and "== db.w/p=2" in text


def test_why_unknown_table(metastore, capsys):
    url, _ = metastore
    assert run_cli(["--metastore", url, "why", "db.nope"]) == 3


def test_metrics(metastore, hive_version, tmp_path, capsys):
    url, rec = metastore
    table(rec, tmp_path, "m", partitions={"p=1": {}, "p=2": {}, "p=3": {}})
    now = now_ms(rec)
    # newest row per partition: p=1 succeeded (after a failure), p=2 working, p=3 initiated
    compaction(rec, "db", "m", partition="p=1", state="f")
    compaction(rec, "db", "m", partition="p=1", state="s")
    compaction(rec, "db", "m", partition="p=2", state="w", start=now - 2 * H_MS)
    compaction(rec, "db", "m", partition="p=3", state="i", enqueue=now - 3 * H_MS)
    o1 = rec.open_txn(now_ms=now - 5 * H_MS)
    rec.open_txn(now_ms=now - 1 * H_MS)
    a = rec.open_txn(now_ms=now - 7 * H_MS)
    rec.add_write(a, "db", "m", partition="p=1")
    rec.abort_txn(a)
    for _ in range(3):
        commit_write(rec, "db", "m", partition="p=2")
    rec.lock(LockComponent("db", "m"), now_ms=now - 600_000)
    capsys.readouterr()
    assert run_cli(["--metastore", url, "-o", "json", "metrics"]) == 0
    g = json.loads(capsys.readouterr().out)["gauges"]
    assert (
        g["compaction_num_succeeded"],
        g["compaction_num_working"],
        g["compaction_num_initiated"],
        g["compaction_num_failed"],
    ) == (1, 1, 1, 0)
    assert g["num_open_non_repl_transactions"] == 2 and g["oldest_open_non_repl_txn_id"] == o1
    assert abs(g["oldest_open_non_repl_txn_age_in_sec"] - 5 * 3600) <= 120
    assert g["num_aborted_transactions"] == 1 and g["oldest_aborted_txn_id"] == a
    assert g["compaction_num_completed_txn_components"] == 3
    assert g["compaction_num_txn_to_writeid"] == 4  # 3 committed + 1 aborted write
    assert g["num_locks"] == 1 and abs(g["oldest_lock_age_in_sec"] - 600) <= 120
    assert abs(g["compaction_oldest_working_age_in_sec"] - 7200) <= 120
    # Hive 3 records no enqueue time (the gauge stays 0 there)
    expect_enqueue = 3 * 3600 if hive_version == 4 else 0
    assert abs(g["compaction_oldest_enqueue_age_in_sec"] - expect_enqueue) <= 120

    # the Prometheus text parses and carries the same values
    capsys.readouterr()
    assert run_cli(["--metastore", url, "metrics"]) == 0
    fams = {f.name: f for f in text_string_to_metric_families(capsys.readouterr().out)}
    assert fams["compaction_num_working"].samples[0].value == 1.0
    assert fams["num_aborted_transactions"].samples[0].value == 1.0
    pools = {s.labels["pool"]: s.value for s in fams["compaction_pools_initiated_item_count"].samples}
    assert pools == {"default": 1.0}

    # --textfile writes the same document atomically
    target = tmp_path / "acid.prom"
    assert run_cli(["--metastore", url, "metrics", "--textfile", str(target)]) == 0
    fams2 = {f.name: f for f in text_string_to_metric_families(target.read_text())}
    assert fams2["num_locks"].samples[0].value == 1.0
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".acidctl-metrics-")] == []
    # a directory that does not exist: one-line storage error, exit 5
    capsys.readouterr()
    assert run_cli(["--metastore", url, "metrics", "--textfile", str(tmp_path / "nope" / "x.prom")]) == 5
    assert capsys.readouterr().err.startswith("acidctl: error: cannot write")


def test_metrics_delta_gauges_from_directories(metastore, tmp_path, capsys):
    url, rec = metastore
    deltas = {f"delta_{w:07d}_{w:07d}_0000": B for w in range(1, 101)}
    table(rec, tmp_path, "d", dirs=deltas)
    set_next_write_id(rec, "db", "d", 101)
    table(rec, tmp_path, "e", dirs={"delta_0000001_0000001_0000": B}, write_ids=1)
    capsys.readouterr()
    assert run_cli(["--metastore", url, "-o", "json", "metrics", "--deltas"]) == 0
    m = json.loads(capsys.readouterr().out)["maps"]
    # 100 current deltas reach metastore.deltametrics.delta.num.threshold (100); db.e's 1 does not
    assert m["compaction_num_active_deltas"] == {"db.d": 100}
    assert m["compaction_num_obsolete_deltas"] == {}
