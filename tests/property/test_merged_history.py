"""Property: for random histories the merged read equals the reference model."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from acidctl.acid.acidstate import get_acid_state
from acidctl.acid.layout import list_table
from acidctl.acid.read import read_partition
from acidctl.fs import TableFS
from tests.histories import histories


def merged(root: Path, snapshot) -> dict:
    t = TableFS(str(root))
    out = {}
    for listing in list_table(t):
        state = get_acid_state(listing, snapshot).require_snapshot()
        for _, tab in read_partition(t, listing, state):
            rows = tab.column("row").combine_chunks()
            for o, b, r, i, n in zip(
                tab.column("originalTransaction").to_pylist(),
                tab.column("bucket").to_pylist(),
                tab.column("rowId").to_pylist(),
                rows.field(0).to_pylist(),
                rows.field(1).to_pylist(),
            ):
                assert (o, b, r) not in out
                out[(o, b, r)] = (i, n)
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(h=histories)
def test_merged_read_equals_reference_model(h):
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "t"
        root.mkdir()
        expected = h.play(root)
        assert merged(root, h.snapshot()) == expected


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(h=histories)
def test_as_of_reads_the_prefix_of_the_history(h):
    """Cutting the snapshot at write id k equals playing only the first k transactions."""
    from tests.histories import History

    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "t"
        root.mkdir()
        h.play(root)
        for k in range(0, len(h.txns) + 1):
            prefix = History(h.buckets, h.originals, h.txns[:k])
            assert merged(root, h.snapshot().as_of(k)) == prefix.play(None)
