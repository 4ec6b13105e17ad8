"""The Hive 2.3 queue worked on Spark: two requests of a 2.3 metastore (a legacy table with
update events, compacted major; the split-update seed table's partition, compacted minor with
--allow-non-atomic-publish as Hive's CompactorMR publishes) claimed and run in one Spark
application, registered with 2.3's Worker protocol, then cleaned. Expected rows come from the
reference model of Hive 2's merge (tests/hive2_histories.py) and the spec (insert-only-and-hive2.md
B.7: the seed table's minor compaction gives delta_0000001_0000002 and delete_delta_0000001_0000002)."""

from __future__ import annotations

import os

import sqlalchemy as sa

from acidctl.compact import worker as w
from acidctl.fs import TableFS
from acidctl.metastore import cleaner, queue
from acidctl.metastore import hive2 as ms2
from tests.compact.test_hive2_compact import ALL, _read, _upgrade_metastore


def test_worker_runs_the_23_queue_in_one_spark_application(tmp_path, spark):
    url, h, root, part = _upgrade_metastore(tmp_path)
    ms = ms2.connect_hive2(url)
    assert queue.enqueue(ms, "sales", "legacy_t", type="major").id == 1
    assert queue.enqueue(ms, "sales", "split_t", partition="ds=a", type="minor").id == 2
    recs = w.run_cycle(
        ms,
        w.WorkerOptions(max=10, engine="spark", allow_non_atomic_publish=True),
        table_fs=lambda u: TableFS(u),
        spark=spark,
    )
    assert [(r["cq_id"], r["state"]) for r in recs] == [(1, "ready for cleaning"), (2, "ready for cleaning")]
    assert sorted(recs[1]["output_dirs"]) == ["delete_delta_0000001_0000002", "delta_0000001_0000002"]
    cq = ms.t("COMPACTION_QUEUE")
    with ms.read() as conn:
        rows = conn.execute(sa.select(cq.CQ_ID, cq.CQ_STATE, cq.CQ_HIGHEST_TXN_ID).order_by(cq.CQ_ID)).all()
    compactor_hwm = h.hwm  # nothing open in the history: the compactor list's hwm is NTXN_NEXT − 1
    assert [tuple(r) for r in rows] == [(1, "r", compactor_hwm), (2, "r", compactor_hwm)]
    assert _read(root, h.reader_list()) == h.expected()
    assert list(_read(part, f"2:{ALL}:")) == [(1, 0, 0), (1, 0, 2), (2, 0, 0)]
    # the Cleaner side: nothing holds them back; markCleaned moves both to 's'
    for cq_id, db, tbl in [(1, "sales", "legacy_t"), (2, "sales", "split_t")]:
        req = cleaner.ready_requests(ms, db, tbl)
        assert cleaner.cleaner_waits(ms, req) == {cq_id: []}
        cleaner.mark_cleaned(ms, cq_id)
    states = [(c["table"], c["state"]) for c in ms2.show_compactions(ms)["compactions"]]
    assert sorted(states) == [("legacy_t", "succeeded"), ("split_t", "succeeded")]
    assert any(n.startswith("base_") for n in os.listdir(root))
    ms.engine.dispose()
