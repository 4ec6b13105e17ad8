"""Property: for random write histories (tests/histories.py) a minor and then a major compaction
keep the merged read equal to the reference model, and ``state`` finds no errors."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.compact.helpers import compact, merged, state_errors
from tests.histories import histories, partitioned_histories

pytestmark = pytest.mark.spark


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(h=histories)
def test_minor_then_major_keep_the_reference_model(spark, h):
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "t"
        root.mkdir()
        expected = h.play_table(root)
        snap = h.snapshot()
        wids = str(snap)
        assert merged(root, snap) == expected
        compact(root, "minor", wids, spark=spark)
        assert merged(root, snap) == expected
        assert state_errors(root, wids) == []
        compact(root, "major", wids, spark=spark)
        assert merged(root, snap) == expected
        assert state_errors(root, wids) == []
        # nothing is folded past the lowest open write id: once every open write commits, the
        # compacted table reads as the uncompacted files do
        if snap.open:
            from acidctl.acid.writeids import WriteIdList

            later = WriteIdList(table=snap.table, hwm=snap.hwm, aborted=snap.aborted)
            fresh = Path(d) / "fresh"
            fresh.mkdir()
            h.play(fresh)  # the same files, never compacted
            assert merged(root, later) == merged(fresh, later)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(h=histories)
def test_major_directly(spark, h):
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "t"
        root.mkdir()
        expected = h.play_table(root)
        wids = str(h.snapshot())
        compact(root, "major", wids, spark=spark)
        assert merged(root, h.snapshot()) == expected
        assert state_errors(root, wids) == []


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(h=partitioned_histories)
def test_partitioned_minor_then_major_in_one_application(spark, h):
    """Every partition of a partitioned table compacts in the same Spark job; partitions that
    have nothing to compact say so; the merged read of every partition stays the model's."""
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "t"
        root.mkdir()
        expected = h.play_table(root)
        snap = h.snapshot()
        wids = str(snap)
        assert merged(root, snap) == expected
        rep = compact(root, "minor", wids, spark=spark)
        assert len(rep["partitions"]) == max(h.partitions, 1)
        assert merged(root, snap) == expected
        assert state_errors(root, wids) == []
        rep = compact(root, "major", wids, spark=spark)
        assert {p["status"] for p in rep["partitions"]} <= {"compact", "nothing"}
        assert merged(root, snap) == expected
        assert state_errors(root, wids) == []
