"""Initiator thresholds and minor vs major (directory-state.md §8)."""

import pytest

from acidctl.acid.initiator import Thresholds, compactor_state, recommend
from acidctl.acid.writeids import WriteIdList
from acidctl.errors import UsageError

from .helpers import COMPACTED, build_listing


def _deltas(n, size=10, start=1):
    return {f"delta_{i:07d}_{i:07d}_0000/": {"bucket_00000": size} for i in range(start, start + n)}


def _state(spec, wl="db.t:100:9223372036854775807::", hv=3):
    return compactor_state(build_listing("/t", spec), WriteIdList.parse(wl), hive_version=hv)


def test_defaults_and_table_overrides():
    t = Thresholds()
    assert (t.delta_num, t.delta_pct, t.aborted_txn) == (10, 0.1, 1000)
    t2 = Thresholds.from_table_properties(
        {
            "compactorthreshold.hive.compactor.delta.num.threshold": "20",
            "compactorthreshold.hive.compactor.delta.pct.threshold": "0.5",
            "compactorthreshold.hive.compactor.abortedtxn.threshold": "7",
            "unrelated": "x",
        }
    )
    assert (t2.delta_num, t2.delta_pct, t2.aborted_txn) == (20, 0.5, 7)
    assert t2.source["hive.compactor.delta.num.threshold"] == "table"
    with pytest.raises(UsageError):
        Thresholds.from_table_properties({"compactorthreshold.hive.compactor.delta.num.threshold": "many"})


def test_ten_deltas_is_not_enough_eleven_is_minor():
    base = {"base_0000000/": {"bucket_00000": 10**9, "_metadata_acid": COMPACTED}}
    assert recommend(_state({**base, **_deltas(10)})).type == "none"
    r = recommend(_state({**base, **_deltas(11)}))
    assert r.type == "minor" and r.delta_count == 11 and not r.no_base
    assert "11 current deltas > hive.compactor.delta.num.threshold 10" in r.reasons[0]
    t = Thresholds.from_table_properties({"compactorthreshold.hive.compactor.delta.num.threshold": "11"})
    assert recommend(_state({**base, **_deltas(11)}), thresholds=t).type == "none"


def test_no_base_means_major():
    r = recommend(_state(_deltas(11)))
    assert r.type == "major" and r.no_base and r.base_bytes == 0


def test_size_ratio_major():
    # sizes are whole directories (Hive's sumDirSize): no marker files here to keep the sums round
    base = {"base_0000000/": {"bucket_00000": 1000}}
    assert recommend(_state({**base, **_deltas(2, size=50)})).type == "none"  # 100/1000 = 0.1, not >
    r = recommend(_state({**base, **_deltas(2, size=51)}))
    assert r.type == "major" and r.ratio == pytest.approx(0.102)


def test_originals_count_as_base_size():
    r = recommend(_state({"000000_0": 1000, **_deltas(1, size=50)}))
    assert r.base_bytes == 1000 and r.type == "none"


def test_insert_only_always_major():
    base = {"base_0000000/": {"bucket_00000": 10**9}}
    assert recommend(_state({**base, **_deltas(11)}), insert_only=True).type == "major"


def test_aborted_txn_count():
    base = {"base_0000000/": {"bucket_00000": 10**9}}
    assert recommend(_state(base), aborted_txn_count=1000).type == "none"
    r = recommend(_state(base), aborted_txn_count=1001)
    assert r.type == "major"


def test_compactor_view_stops_below_lowest_open_write_id():
    # write id 5 open: the compactor list's hwm is 4, deltas 5.. are not counted
    base = {"base_0000000/": {"bucket_00000": 10**9}}
    r = recommend(_state({**base, **_deltas(15)}, wl="db.t:15:5:5:"))
    assert r.delta_count == 4 and r.type == "none"


def test_hive4_multi_base():
    spec = {"base_0000001_v0000010/": {"bucket_00000": 10}, "base_0000002_v0000011/": {"bucket_00000": 10}}
    assert recommend(_state(spec, hv=4)).type == "major"
    assert recommend(_state(spec, hv=4), hive_version=3).type == "none"


def test_ratio_compared_in_float32():
    # 100000001/1000000000 > 0.1 in double, but equal to 0.1f in Java float arithmetic
    base = {"base_0000000/": {"bucket_00000": 1000000000}}
    r = recommend(_state({**base, "delta_0000001_0000001_0000/": {"bucket_00000": 100000001}}))
    assert r.ratio > 0.1 and r.type == "none"


def test_no_auto_compaction_noted():
    r = recommend(_state(_deltas(1)), no_auto_compaction=True)
    assert r.auto_compaction_disabled and "no_auto_compaction" in r.reasons[0]
