"""Property test: random histories of open/write/commit/abort recorded the way Hive records
them, against a model written straight from the spec's definitions (§6, §7): a write id is
valid iff its txn committed; the txn hwm is the highest txn id; open and aborted write ids are
the exceptions. Histories keep at least one committed write under the hwm so Hive 4's collapse
rule (tested by hand in test_snapshot.py) does not apply."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acidctl.acid.writeids import LONG_MAX
from acidctl.metastore.init import init_metastore
from acidctl.metastore.recorder import Recorder
from acidctl.metastore.snapshot import table_snapshot

OLD = 1_600_000_000_000
_n = itertools.count()

ops = st.lists(
    st.tuples(st.sampled_from(["commit", "abort", "open"]), st.sampled_from(["a", "b"]), st.booleans()),
    min_size=1,
    max_size=12,
)


@pytest.mark.parametrize("hv", [3, 4])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=ops)
def test_snapshot_matches_model(tmp_path, hv, history):
    url = f"sqlite:///{tmp_path}/m{next(_n)}.db"
    init_metastore(url, hive_version=hv)
    rec = Recorder(url)
    # first txn: a committed write to both tables (keeps the Hive 4 collapse rule out of play)
    t0 = rec.open_txn(now_ms=OLD)
    rec.add_write(t0, "db", "a")
    rec.add_write(t0, "db", "b")
    rec.commit_txn(t0)
    model = {"a": [(1, "c")], "b": [(1, "c")]}  # table -> [(write id, fate)]
    txn_fate = {t0: "c"}
    for fate, tbl, write in history:
        txn = rec.open_txn(now_ms=OLD)
        if write:
            wid = rec.add_write(txn, "db", tbl)
            model[tbl].append((wid, fate[0]))
        if fate == "commit":
            rec.commit_txn(txn)
        elif fate == "abort":
            rec.abort_txn(txn)
        txn_fate[txn] = fate[0]
    hwm = max(txn_fate)
    open_t = sorted(t for t, f in txn_fate.items() if f == "o")
    aborted_t = sorted(t for t, f in txn_fate.items() if f == "a")
    txns, _ = table_snapshot(rec.ms, "db.a")
    assert (txns.hwm, txns.open, txns.aborted) == (hwm, tuple(open_t), tuple(aborted_t))
    for tbl in ("a", "b"):
        _, wl = table_snapshot(rec.ms, f"db.{tbl}")
        ws = model[tbl]
        w_open = [w for w, f in ws if f == "o"]
        w_ab = [w for w, f in ws if f == "a"]
        exp = "db.%s:%d:%d:%s:%s" % (
            tbl,
            max(w for w, _ in ws),
            min(w_open) if w_open else LONG_MAX,
            ",".join(map(str, w_open)),
            ",".join(map(str, w_ab)),
        )
        assert str(wl) == exp
    rec.engine.dispose()
