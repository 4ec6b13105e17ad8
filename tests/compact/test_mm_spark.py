"""Insert-only compaction on real Spark (the session-scoped local[2] fixture): every partition
one task, output and verification as in-process (tests/mm/test_mm_tables.py)."""

from __future__ import annotations

import pyarrow.parquet as pq

from acidctl.acid.writeids import WriteIdList
from acidctl.compact.runner import CompactOptions
from acidctl.fs import TableFS
from acidctl.formats.hivetypes import parse_columns
from acidctl.formats.storage import offline
from acidctl.mm.compact import compact_mm_table
from acidctl.mm.context import MMContext
from tests.mm import hivelayout as H


def test_mm_major_compaction_on_spark(tmp_path, spark):
    root = tmp_path / "t"
    for part, ids in (("ds=a", [1, 2]), ("ds=b", [3])):
        layout = {f"delta_{i:07d}_{i:07d}_0000": {"000000_0": [H.row(i)]} for i in ids}
        layout["delta_0000009_0000009_0000"] = {"000000_0": [H.row(99, name="open")]}
        H.build(root / part, "parquet", layout)
    ctx = MMContext(offline("parquet"), parse_columns(H.COLUMNS_SPEC))
    opts = CompactOptions(mode="major", reader=WriteIdList.parse("default.t:9:9:9:"), engine="spark")
    rep = compact_mm_table(TableFS(str(root)), opts, ctx, spark=spark)
    parts = {p["partition"]: p for p in rep["partitions"]}
    assert rep["spark"]["app_id"] == spark.sparkContext.applicationId
    # ds=b has one input only: nothing to compact (Hive 3: base + deltas <= 1)
    assert (parts["ds=a"]["status"], parts["ds=a"]["output_dirs"]) == ("compact", ["base_0000008"])
    assert parts["ds=b"]["status"] == "nothing"
    got = pq.read_table(root / "ds=a" / "base_0000008" / "000000_0", schema=H.ARROW).to_pylist()
    assert sorted(r["id"] for r in got) == [1, 2]
    assert (root / "ds=a" / "delta_0000009_0000009_0000").is_dir()
