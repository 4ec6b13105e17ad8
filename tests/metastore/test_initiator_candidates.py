"""The Initiator's candidates (operations.md §4.2): only partitions that committed writes left in
``COMPLETED_TXN_COMPONENTS`` are looked at; Hive 3 adds those with more than
``hive.compactor.abortedtxn.threshold`` (1000) ``TXN_COMPONENTS`` rows of aborted txns ("too many
aborts" → MAJOR at once, §4.3 row 9); Hive 4 leaves aborted data to the Cleaner
(``metastore.compactor.clean.aborts.using.cleaner`` defaults to true) and never asks for it."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from acidctl.metastore.connection import connect
from acidctl.metastore.init import init_metastore
from acidctl.metastore.recorder import Recorder
from tests.metastore.helpers import cli_json, make_table


@pytest.mark.parametrize("hv", [3, 4])
def test_only_written_partitions_and_too_many_aborts_are_candidates(tmp_path, capsys, hv):
    url = f"sqlite:///{tmp_path}/ms.db"
    init_metastore(url, hive_version=hv)
    rec = Recorder(url)
    wh = tmp_path / "wh"
    # written (two committed inserts, deltas on disk) but below every threshold: a candidate, not due
    make_table(rec, wh, "c", "written")
    # the same directory tree, but the metastore never saw a committed write: not a candidate,
    # even with the delta-count threshold at 1 (the thresholds are never evaluated)
    loc = make_table(rec, wh, "c", "silent", writes=0)
    for w in (1, 2):
        src = wh / "c.db" / "written" / f"delta_{w:07d}_{w:07d}_0000"
        (loc / src.name).mkdir()
        for f in src.iterdir():
            (loc / src.name / f.name).write_bytes(f.read_bytes())
    # 1001 aborted txns, one component row each, on a table without committed writes
    make_table(rec, wh, "c", "aborty", writes=0)
    for _ in range(1001):
        txn = rec.open_txn("hive", "hivehost")
        rec.add_write(txn, "c", "aborty", operation="i")
        rec.abort_txn(txn)
    ms = connect(url)
    tp, tb = ms.tables.TABLE_PARAMS, ms.tables.TBLS
    eng = sa.create_engine(url)
    with eng.begin() as c:
        tid = c.execute(sa.select(tb.TBL_ID).where(tb.TBL_NAME == "silent")).scalar()
        c.execute(
            sa.insert(tp.clause).values(
                {
                    tp.TBL_ID.name: tid,
                    tp.PARAM_KEY.name: "compactorthreshold.hive.compactor.delta.num.threshold",
                    tp.PARAM_VALUE.name: "1",
                }
            )
        )
    eng.dispose()

    doc = cli_json(capsys, ["--metastore", url, "initiator", "--once", "--dry-run"])
    got = {c["table"]: (c["action"], c["type"]) for c in doc["checked"]}
    assert got["c.written"] == ("not-due", None)
    assert got["c.silent"] == ("not-candidate", None)
    if hv == 3:
        assert got["c.aborty"] == ("would-enqueue", "major")
    else:
        assert got["c.aborty"] == ("not-candidate", None)
