"""``acidctl initiator --once`` on the demo warehouse (operations.md §4): thresholds flag a
partition (the expected type worked out from directory-state.md §8.2: no base and more deltas
than hive.compactor.delta.num.threshold → MAJOR), a queued request is not duplicated,
``no_auto_compaction`` skips the table, and the failed-compaction threshold writes a
"did not initiate"/"attempted" history row instead of a request."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa


def _sql(url, stmt, **kw):
    eng = sa.create_engine(url)
    with eng.begin() as c:
        rows = c.execute(sa.text(stmt), kw)
        out = [tuple(r) for r in rows] if rows.returns_rows else None
    eng.dispose()
    return out


def _set_param(url, table, key, value):
    tbl_id = _sql(url, "SELECT TBL_ID FROM TBLS WHERE TBL_NAME=:t", t=table)[0][0]
    _sql(url, "INSERT INTO TABLE_PARAMS (TBL_ID, PARAM_KEY, PARAM_VALUE) VALUES (:i, :k, :v)", i=tbl_id, k=key, v=value)


@pytest.mark.parametrize("hv", [3, 4])
def test_initiator_once(tmp_path, cli, hv):
    assert cli("demo", "--hive-version", str(hv), tmp_path / "demo").code == 0
    url = f"sqlite:///{tmp_path / 'demo' / 'metastore.db'}"
    # defaults (10 deltas): nothing is due; the demo's queued request 2 is reported, not duplicated
    r = cli("-o", "json", "--metastore", url, "initiator", "--once")
    assert r.code == 0, r
    doc = json.loads(r.stdout)
    acts = {(c["table"], c["partition"]): (c["action"], c["id"]) for c in doc["checked"]}
    assert acts[("default.sales", "ds=2025-12-31")] == ("queued", 2)
    assert acts[("default.sales", "ds=2026-01-01")][0] == "not-due"
    assert acts[("default.employee", None)][0] == "not-due"

    # ds=2026-01-01 has no base and 6 deltas in the compactor's view (hwm 6): with a threshold of
    # 1 it is due, and without a base the Initiator asks for MAJOR
    _set_param(url, "sales", "compactorthreshold.hive.compactor.delta.num.threshold", "1")
    r = cli("-o", "json", "--metastore", url, "initiator", "--once", "--db", "def*")
    doc = json.loads(r.stdout)
    (rec,) = [c for c in doc["checked"] if c["partition"] == "ds=2026-01-01"]
    assert (rec["action"], rec["type"], rec["id"]) == ("enqueued", "major", 3)
    row = _sql(url, "SELECT CQ_STATE, CQ_TYPE, CQ_PARTITION FROM COMPACTION_QUEUE WHERE CQ_ID=3")
    assert row == [("i", "a", "ds=2026-01-01")]
    if hv == 4:
        (init,) = _sql(url, "SELECT CQ_INITIATOR_ID FROM COMPACTION_QUEUE WHERE CQ_ID=3")[0]
        assert init.startswith("acidctl@")
    # a second cycle does not duplicate it
    r = cli("-o", "json", "--metastore", url, "initiator", "--once")
    doc = json.loads(r.stdout)
    (rec,) = [c for c in doc["checked"] if c["partition"] == "ds=2026-01-01"]
    assert (rec["action"], rec["id"]) == ("queued", 3)
    assert _sql(url, "SELECT COUNT(*) FROM COMPACTION_QUEUE")[0][0] == 2

    # two failed compactions in a row (threshold 2): the next cycle records "did not initiate"
    _sql(url, "DELETE FROM COMPACTION_QUEUE WHERE CQ_ID=3")
    for i, cc_id in enumerate((50, 51)):
        _sql(
            url,
            "INSERT INTO COMPLETED_COMPACTIONS (CC_ID, CC_DATABASE, CC_TABLE, CC_PARTITION, CC_STATE, CC_TYPE, "
            "CC_START, CC_END" + (", CC_ENQUEUE_TIME" if hv == 4 else "") + ") VALUES (:i, 'default', 'sales', "
            "'ds=2026-01-01', 'f', 'a', 1, 2" + (", :e" if hv == 4 else "") + ")",
            i=cc_id,
            e=10**13,
        )  # enqueued "in the future": inside Hive 4's 7-day retry window
    r = cli("-o", "json", "--metastore", url, "initiator", "--once")
    doc = json.loads(r.stdout)
    (rec,) = [c for c in doc["checked"] if c["partition"] == "ds=2026-01-01"]
    assert rec["action"] == "did-not-initiate"
    hist = _sql(url, "SELECT CC_ID, CC_STATE, CC_TYPE FROM COMPLETED_COMPACTIONS WHERE CC_ID=:i", i=rec["id"])
    # markFailed with id 0: a new id from NEXT_COMPACTION_QUEUE_ID (4), type MINOR, state 'a'
    assert hist == [(4, "a", "i")]
    assert _sql(url, "SELECT COUNT(*) FROM COMPACTION_QUEUE WHERE CQ_PARTITION='ds=2026-01-01'")[0][0] == 0

    # no_auto_compaction=true: the table is skipped
    _set_param(url, "sales", "no_auto_compaction", "true")
    r = cli("-o", "json", "--metastore", url, "initiator", "--once")
    doc = json.loads(r.stdout)
    assert [c["action"] for c in doc["checked"] if c["table"] == "default.sales"] == ["skipped"]
    # without --once: the same one cycle (report #22: --once is the only mode)
    again = json.loads(cli("-o", "json", "--metastore", url, "initiator").stdout)
    assert [c["action"] for c in again["checked"] if c["table"] == "default.sales"] == ["skipped"]
