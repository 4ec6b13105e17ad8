"""The merge kernel's live-row mask (one filter for invalid and deleted events) against a plain
Python model of orc-acid-files.md §5: an insert event counts when its operation is 0 (insert)
and its currentTransaction is valid for the reader's write-id list (≤ hwm, neither open nor
aborted), and survives unless a valid delete event holds its (originalTransaction, bucket,
rowId). Also: export's streamed bucket hands a batch without a removed row on without copying
its values, and filters a batch with removed rows once."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from acidctl.acid import merge
from acidctl.acid.writeids import WriteIdList
from acidctl.export import _flatten, _flatten_live

# hwm 6, write ids 3 (open) and 5 (aborted) are exceptions
SNAPSHOT = WriteIdList(table="db.t", hwm=6, open=(3,), aborted=(5,))
VALID = {1, 2, 4, 6}

events = st.lists(
    st.tuples(
        st.sampled_from([0, 0, 0, 1, 2]),  # operation
        st.sampled_from([1, 2, 4]),  # originalTransaction
        st.sampled_from([536870912, 536936448]),  # bucket
        st.integers(0, 30),  # rowId
        st.sampled_from([1, 2, 3, 4, 5, 6, 7]),  # currentTransaction
    ),
    max_size=60,
)
deletes = st.lists(
    st.tuples(st.sampled_from([1, 2, 4]), st.sampled_from([536870912, 536936448]), st.integers(0, 30)),
    max_size=20,
)


def _table(ev: list[tuple]) -> pa.Table:
    n = len(ev)
    return pa.table(
        {
            "operation": pa.array([e[0] for e in ev], pa.int32()),
            "originalTransaction": pa.array([e[1] for e in ev], pa.int64()),
            "bucket": pa.array([e[2] for e in ev], pa.int32()),
            "rowId": pa.array([e[3] for e in ev], pa.int64()),
            "currentTransaction": pa.array([e[4] for e in ev], pa.int64()),
            "row": pa.array(
                [{"v": i, "s": f"r{i}"} for i in range(n)], pa.struct([("v", pa.int64()), ("s", pa.string())])
            ),
        }
    )


def _dels(ks: list[tuple]) -> pa.Table:
    return pa.table(
        {
            "originalTransaction": pa.array([k[0] for k in ks], pa.int64()),
            "bucket": pa.array([k[1] for k in ks], pa.int32()),
            "rowId": pa.array([k[2] for k in ks], pa.int64()),
        }
    )


def _model(ev: list[tuple], dels: list[tuple]) -> list[bool]:
    gone = set(dels)
    return [e[0] == 0 and e[4] in VALID and (e[1], e[2], e[3]) not in gone for e in ev]


@settings(max_examples=200, deadline=None)
@given(events, deletes)
def test_live_mask_is_the_model(ev, dels):
    t = _table(ev)
    d = _dels(dels) if dels else None
    want = _model(ev, dels)
    mask = merge.live_mask(t, d, SNAPSHOT)
    if mask is None:
        assert all(want) and len(want) > 0
    else:
        assert mask.tolist() == want
    # apply: the same rows (sort=False keeps the events' order)
    got = merge.apply(t, d, SNAPSHOT, sort=False).column("row").combine_chunks().field("v").to_pylist()
    assert got == [i for i, w in enumerate(want) if w]


def test_live_mask_none_when_nothing_is_removed():
    ev = [(0, 1, 536870912, r, 1) for r in range(5)]
    # a delete of another bucket's row and of a row id not present
    assert merge.live_mask(_table(ev), _dels([(1, 536936448, 0), (1, 536870912, 9)]), SNAPSHOT) is None
    assert merge.live_mask(_table(ev), None, SNAPSHOT) is None


def test_flatten_live_without_removed_rows_shares_the_values():
    ev = [(0, 1, 536870912, r, 1) for r in range(100)]
    t = _table(ev)
    out, keys = _flatten_live(t, None, with_row_id=True, column_names=None)
    assert [k.tolist() for k in keys] == [[1] * 100, [536870912] * 100, list(range(100))]
    assert out.column_names == ["row__id", "v", "s"]
    row = t.column("row").chunk(0)
    # the row's value buffers are handed on as they are (no copy)
    assert out.column("s").chunk(0).buffers()[2].address == row.field("s").buffers()[2].address
    assert out.column("v").chunk(0).buffers()[1].address == row.field("v").buffers()[1].address
    assert out.column("row__id").to_pylist() == [{"writeid": 1, "bucketid": 536870912, "rowid": r} for r in range(100)]


@settings(max_examples=100, deadline=None)
@given(events, deletes)
def test_flatten_live_is_flatten_of_the_filtered_events(ev, dels):
    t = _table(ev)
    d = _dels(dels) if dels else None
    mask = merge.live_mask(t, d, SNAPSHOT)
    live = t if mask is None else t.filter(pa.array(mask))
    for names in (None, ["A", "B"]):
        for with_row_id in (True, False):
            want = _flatten(live, with_row_id=with_row_id, column_names=names)
            if mask is not None and not mask.any():
                continue  # the stream skips such a batch
            got, keys = _flatten_live(t, mask, with_row_id=with_row_id, column_names=names)
            assert [k.tolist() for k in keys] == [live.column(k).to_pylist() for k in merge.KEY]
            assert got.column_names == want.column_names
            assert got.to_pylist() == want.to_pylist()
            assert got.schema == want.schema
