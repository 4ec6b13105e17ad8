"""The registered life cycle on Spark (SQLite metastore, Hive 4): ``acidctl compact`` runs on
Spark and registers the compaction with its committed compactor txn (``_v<txn>``), ``clean``
finishes it as Hive's Cleaner does (metastore.md §9.3): request ``succeeded``, the old
directories gone, the merged read unchanged."""

from __future__ import annotations

import json
import time

from acidctl.demo import build_demo
from acidctl.fs import TableFS
from acidctl.metastore.connection import connect
from acidctl.metastore.recorder import Recorder
from acidctl.metastore.snapshot import table_snapshot
from tests.compact.helpers import merged
from tests.metastore.test_cleaner import rows


def test_spark_compaction_then_clean(tmp_path, cli, spark):
    url = f"sqlite:///{tmp_path}/ms.db"
    build_demo(TableFS(str(tmp_path)), str(tmp_path / "demo"), metastore_url=url, hive_version=4)
    emp = tmp_path / "demo" / "warehouse" / "employee"
    ms = connect(url)
    tl, wl = table_snapshot(ms, "default.employee")
    before = merged(emp, wl, hive_version=4, txns=tl)
    r = cli(
        "-o",
        "json",
        "--metastore",
        url,
        "compact",
        "--major",
        "--engine",
        "spark",
        "--master",
        "local[2]",
        "default.employee",
    )
    assert r.code == 0, r
    reg = json.loads(r.stdout)["partitions"][0]["metastore"]
    base = f"base_0000003_v{reg['txn_id']:07d}"
    listing = sorted(p.name for p in emp.iterdir())
    assert base in listing and "delta_0000001_0000001_0000" in listing
    # the demo's open txn on sales (below CQ_NEXT_TXN_ID) holds the request back (HIVE-26704)
    r = cli("-o", "json", "--metastore", url, "clean", "--execute", "--min-age", "0", "default.employee")
    assert r.code == 0, r
    (c,) = json.loads(r.stdout)["compactions"]
    assert c["action"] == "held back" and c["held_by"][0]["kind"] == "open-txn"
    assert sorted(p.name for p in emp.iterdir()) == listing
    t = ms.tables.TXNS
    import sqlalchemy as sa

    with ms.read() as conn:
        open_txn = conn.execute(sa.select(t.TXN_ID).where(t.TXN_STATE == "o")).scalar()
    Recorder(url).commit_txn(open_txn)
    time.sleep(1.1)
    r = cli("-o", "json", "--metastore", url, "clean", "--execute", "--min-age", "0", "default.employee")
    assert r.code == 0, r
    (c,) = json.loads(r.stdout)["compactions"]
    assert c["action"] == "marked cleaned" and c["state"] == "succeeded"
    assert sorted(p.name for p in emp.iterdir() if not p.name.startswith(".")) == [base]
    assert [r for r in rows(ms, "COMPACTION_QUEUE") if r["CQ_TABLE"] == "employee"] == []
    (h,) = [r for r in rows(ms, "COMPLETED_COMPACTIONS") if r["CC_ID"] == reg["cq_id"]]
    assert (h["CC_STATE"], h["CC_TXN_ID"], h["CC_HIGHEST_WRITE_ID"]) == ("s", reg["txn_id"], 3)
    tl, wl = table_snapshot(ms, "default.employee")
    assert merged(emp, wl, hive_version=4, txns=tl) == before
