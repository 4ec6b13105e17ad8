"""``acidctl compact`` / ``clean`` command lines: options, messages, exit codes, the metastore."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.compact.helpers import ALL, demo_warehouse, merged, nation_table, state_errors

ROOT = Path(__file__).resolve().parents[2]


def test_help_does_not_import_spark_or_arrow():
    code = (
        "import sys; from acidctl.cli.main import main\n"
        "try:\n    main(['compact', '--help'])\nexcept SystemExit:\n    pass\n"
        "try:\n    main(['clean', '--help'])\nexcept SystemExit:\n    pass\n"
        "bad = [m for m in ('pyspark', 'pyarrow', 'pyorc', 'sqlalchemy') if m in sys.modules]\n"
        "print('IMPORTED', bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "--major" in out and "--execute" in out
    assert out.strip().endswith("IMPORTED []")


def test_nothing_to_compact_exits_0_with_a_message(tmp_path, cli):
    t = nation_table(tmp_path)
    assert cli("compact", "--major", "--engine", "local", "--write-ids", f"db.t:4:{ALL}::", t).code == 0
    r = cli("-o", "json", "compact", "--major", "--engine", "local", "--write-ids", f"db.t:4:{ALL}::", t)
    assert r.code == 0, r
    doc = json.loads(r.stdout)
    assert doc["nothing_to_compact"] is True and doc["message"] == "nothing to compact"
    assert doc["partitions"][0]["status"] == "nothing"
    assert "no delta files or original files" in doc["partitions"][0]["message"]
    r = cli("compact", "--minor", "--engine", "local", "--write-ids", f"db.t:4:{ALL}::", t)
    assert r.code == 0 and "nothing to compact" in r.stdout


@pytest.mark.parametrize(
    "args,code,text",
    [
        (["--major", "--minor"], 2, "not both"),
        ([], 2, "--major or --minor"),
        (["--major"], 2, "snapshot"),
        (["--major", "--write-ids", f"db.t:4:{ALL}::", "--hive-version", "4"], 2, "--visibility-txn"),
        (["--major", "--write-ids", f"db.t:4:{ALL}::", "--partition", "ds=1"], 3, "partition ds=1 not found"),
        (["--major", "--write-ids", "db.t:x"], 2, "write-id list"),
        (["--major", "--write-ids", f"db.t:4:{ALL}::", "--engine", "flink"], 2, "--engine"),
    ],
)
def test_usage_errors(tmp_path, cli, args, code, text):
    t = nation_table(tmp_path)
    r = cli("compact", "--engine", "local", *args, t) if "--engine" not in args else cli("compact", *args, t)
    assert r.code == code, r
    assert text in r.stderr
    assert not list(t.rglob("base_*")) and not list(t.rglob(".acidctl*"))


def test_partition_selection_and_due(tmp_path, cli):
    wh, wids = demo_warehouse(tmp_path)
    sales, wl = wh / "sales", wids["sales"]
    r = cli(
        "-o",
        "json",
        "compact",
        "--major",
        "--engine",
        "local",
        "--partition",
        "ds=2026-01-01",
        "--write-ids",
        wl,
        sales,
    )
    assert r.code == 0, r
    doc = json.loads(r.stdout)
    assert [p["partition"] for p in doc["partitions"]] == ["ds=2026-01-01"]
    assert not list((sales / "ds=2025-12-31").glob("base_*"))
    # the Initiator's defaults (10 deltas, ratio 0.1) do not flag the other partition ...
    r = cli("-o", "json", "compact", "--due", "--engine", "local", "--write-ids", wl, sales)
    doc = json.loads(r.stdout)
    status = {p["partition"]: p["status"] for p in doc["partitions"]}
    # ds=2025-12-31: originals (base bytes) + 2 deltas -> ratio > 0.1 -> major
    assert status["ds=2025-12-31"] == "compact" and doc["partitions"][0]["type"] == "major"
    assert status["ds=2026-01-01"] == "not-due"
    assert (sales / "ds=2025-12-31" / "base_0000002").is_dir()


def test_due_counts_aborted_txns_from_the_metastore(tmp_path, cli):
    """The Initiator's third trigger (directory-state.md §8): more aborted txns touching a
    partition than hive.compactor.abortedtxn.threshold → major. Only the metastore knows the
    count: the demo's sales ds=2026-01-01 has one aborted txn (txn 7, write 4)."""
    assert cli("demo", tmp_path / "demo").code == 0
    url = f"sqlite:///{tmp_path / 'demo' / 'metastore.db'}"
    wh = tmp_path / "demo" / "warehouse"
    prop = "compactorthreshold.hive.compactor.abortedtxn.threshold"
    # threshold 1: one aborted txn is not more than 1 -> ds=2026-01-01 not due (2 deltas, small)
    r = cli(
        "-o",
        "json",
        "--metastore",
        url,
        "compact",
        "--due",
        "--engine",
        "local",
        "--no-register",
        "--tblproperty",
        f"{prop}=1",
        "default.sales/ds=2026-01-01",
    )
    assert r.code == 0, r
    p = json.loads(r.stdout)["partitions"][0]
    assert (p["status"], p["recommendation"]["aborted_txn_count"]) == ("not-due", 1)
    assert not list((wh / "sales" / "ds=2026-01-01").glob("base_*"))
    # threshold 0: due, major, for that reason
    r = cli(
        "-o",
        "json",
        "--metastore",
        url,
        "compact",
        "--due",
        "--engine",
        "local",
        "--no-register",
        "--tblproperty",
        f"{prop}=0",
        "default.sales",
    )
    assert r.code == 0, r
    parts = {p["partition"]: p for p in json.loads(r.stdout)["partitions"]}
    p = parts["ds=2026-01-01"]
    assert (p["status"], p["type"]) == ("compact", "major")
    assert p["recommendation"]["reasons"] == ["1 aborted txns > hive.compactor.abortedtxn.threshold 0"]
    assert parts["ds=2025-12-31"]["recommendation"]["aborted_txn_count"] == 0
    assert (wh / "sales" / "ds=2026-01-01" / "base_0000006").is_dir()


def test_demo_by_table_name_records_the_compaction(tmp_path, cli):
    """``acidctl demo DIR`` records its writes in DIR/metastore.db; ``compact default.sales``
    takes location and snapshot from it (write 7 open: compactor hwm 6) and records the
    compaction the way Hive 3's worker does (queue row ready for cleaning, highest write id)."""
    import sqlalchemy as sa

    assert cli("demo", tmp_path / "demo").code == 0
    url = f"sqlite:///{tmp_path / 'demo' / 'metastore.db'}"
    wh = tmp_path / "demo" / "warehouse"
    before = merged(wh / "sales", "default.sales:7:7:7:4")
    r = cli("-o", "json", "--metastore", url, "compact", "--major", "--engine", "local", "default.sales")
    assert r.code == 0, r
    doc = json.loads(r.stdout)
    assert doc["table"] == "default.sales"
    assert doc["compactor_write_ids"].startswith("default.sales:6:")
    outs = {p["partition"]: p["output_dirs"] for p in doc["partitions"]}
    assert outs == {"ds=2025-12-31": ["base_0000002"], "ds=2026-01-01": ["base_0000006"]}
    assert merged(wh / "sales", "default.sales:7:7:7:4") == before
    eng = sa.create_engine(url)
    with eng.connect() as c:
        rows = c.execute(
            sa.text(
                "SELECT CQ_ID, CQ_PARTITION, CQ_STATE, CQ_TYPE, CQ_HIGHEST_WRITE_ID, CQ_WORKER_ID "
                "FROM COMPACTION_QUEUE WHERE CQ_TABLE='sales' ORDER BY CQ_PARTITION"
            )
        ).all()
    assert [(p, st, ty, hw, w) for _, p, st, ty, hw, w in rows] == [
        ("ds=2025-12-31", "r", "a", 6, None),
        ("ds=2026-01-01", "r", "a", 6, None),
    ]
    # the demo's queued major request for ds=2025-12-31 (id 2) was claimed, not duplicated
    claimed = {p["partition"]: p["metastore"] for p in doc["partitions"]}
    assert claimed["ds=2025-12-31"]["claimed_request"] is True
    r = cli("-o", "json", "--metastore", url, "show", "compactions", "--table", "sales")
    if r.code == 0:
        states = [c["state"] for c in json.loads(r.stdout)["compactions"] if c["tabname"] == "sales"]
        assert states.count("ready for cleaning") == 2
    # --no-register leaves the queue alone; nothing left to compact anyway
    r = cli("--metastore", url, "compact", "--major", "--engine", "local", "--no-register", "default.sales")
    assert r.code == 0 and "nothing to compact" in r.stdout
    assert state_errors(wh / "sales", "default.sales:7:7:7:4") == []


def test_hive4_demo_compaction_uses_a_committed_compactor_txn(tmp_path, cli):
    """Hive 4 (metastore.md §9.2): a compactor txn of type COMPACTION names the output
    (``_v<txn>``), is recorded on the queue row with a TXN_COMPONENTS ``c`` row, and committed
    after publication (CQ_NEXT_TXN_ID and CQ_COMMIT_TIME set)."""
    import sqlalchemy as sa

    assert cli("demo", "--hive-version", "4", tmp_path / "demo").code == 0
    url = f"sqlite:///{tmp_path / 'demo' / 'metastore.db'}"
    r = cli("-o", "json", "--metastore", url, "compact", "--minor", "--engine", "local", "default.employee")
    assert r.code == 0, r
    doc = json.loads(r.stdout)
    reg = doc["partitions"][0]["metastore"]
    txn = reg["txn_id"]
    # two renames, but invisible until the compactor txn commits: no --allow-non-atomic-publish
    assert doc["partitions"][0]["publish"] == "hidden-until-commit"
    assert doc["partitions"][0]["output_dirs"] == [
        f"delta_0000001_0000003_v{txn:07d}",
        f"delete_delta_0000001_0000003_v{txn:07d}",
    ]
    eng = sa.create_engine(url)
    with eng.connect() as c:
        st, ty = c.execute(sa.text("SELECT TXN_STATE, TXN_TYPE FROM TXNS WHERE TXN_ID=:t"), {"t": txn}).one()
        cq = c.execute(
            sa.text(
                "SELECT CQ_STATE, CQ_TXN_ID, CQ_HIGHEST_WRITE_ID, CQ_NEXT_TXN_ID, CQ_COMMIT_TIME "
                "FROM COMPACTION_QUEUE WHERE CQ_ID=:i"
            ),
            {"i": reg["cq_id"]},
        ).one()
    assert (st, ty) == ("c", 3)
    assert cq[0] == "r" and cq[1] == txn and cq[2] == 3 and cq[3] is not None and cq[4] is not None
    # a Hive 4 reader with the metastore's snapshot sees the same rows, through the new delta
    r = cli("-o", "json", "--metastore", url, "dump", "--merged", "default.employee")
    assert r.code == 0, r
    names = sorted(json.loads(x)["name"] for x in r.stdout.splitlines())
    assert names == ["Jerry", "Mary", "Tom"]
    r = cli("-o", "json", "--metastore", url, "state", "default.employee")
    assert r.code == 0, r
    st = json.loads(r.stdout)
    assert st["partitions"][0]["snapshot"]["read_order"] == [
        f"delete_delta_0000001_0000003_v{txn:07d}",
        f"delta_0000001_0000003_v{txn:07d}",
    ]
