"""The hashed delete-key index of the merge kernel gives exactly what a plain Python set of
(originalTransaction, bucket, rowId) says — including keys whose hashes collide, and batch
after batch against the same delete table (the index is built once and cached)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from acidctl.acid import merge
from acidctl.acid.writeids import WriteIdList

keys = st.tuples(
    st.sampled_from([0, 1, 2, 5, 2**31, 2**40, -3]),
    st.sampled_from([536870912, 536936448, -1, 0]),
    st.sampled_from([0, 1, 2, 3, 7, 40, 2**32 - 1, 2**32, 2**50, -1]),
)


def _events(ks: list[tuple]) -> pa.Table:
    n = len(ks)
    return pa.table(
        {
            "operation": pa.array([0] * n, pa.int32()),
            "originalTransaction": pa.array([k[0] for k in ks], pa.int64()),
            "bucket": pa.array([k[1] for k in ks], pa.int32()),
            "rowId": pa.array([k[2] for k in ks], pa.int64()),
            "currentTransaction": pa.array([1] * n, pa.int64()),
            "row": pa.array([{"v": i} for i in range(n)], pa.struct([("v", pa.int64())])),
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


def _expected(ins: list[tuple], dels: list[tuple]) -> list[int]:
    gone = set(dels)
    return sorted((k, i) for i, k in enumerate(ins) if k not in gone)


def _got(t: pa.Table) -> list:
    return sorted(
        zip(
            zip(
                t.column("originalTransaction").to_pylist(),
                t.column("bucket").to_pylist(),
                t.column("rowId").to_pylist(),
            ),
            pc.struct_field(t.column("row"), "v").to_pylist(),
        )
    )


SNAP = WriteIdList.all_committed(10)


@settings(max_examples=60, deadline=None)
@given(st.lists(keys, max_size=60), st.lists(keys, min_size=1, max_size=30), st.integers(1, 4))
def test_batches_against_one_delete_table(ins, dels, parts):
    d = _dels(dels)
    ev = _events(ins)
    step = max(1, len(ins) // parts)
    got = []
    for off in range(0, len(ins), step):
        out = merge.apply(ev.slice(off, step), d, SNAP, sort=False)
        got += _got(out)
    # row values are positions within the whole insert list
    assert sorted(got) == _expected(ins, dels)


def test_colliding_hashes_fall_back_to_the_join(monkeypatch):
    monkeypatch.setattr(merge, "_hash", lambda ot, bk, rid: ot.view(np.uint64) & np.uint64(1))
    big = 2**40  # outside the packed range: the hashed index
    ins = [(big + 1, 0, r) for r in range(10)] + [(big + 2, 0, r) for r in range(10)]
    dels = [(big + 1, 0, 3), (big + 2, 0, 4), (big + 2, 0, 9)]
    assert merge.DeleteIndex.build(_dels(dels)) is None  # distinct keys, same hash
    assert _got(merge.apply(_events(ins), _dels(dels), SNAP)) == _expected(ins, dels)


def test_index_is_exact_when_hashes_of_live_rows_collide(monkeypatch):
    # every key hashes to its rowId: live keys share hashes with delete keys of other write ids
    monkeypatch.setattr(merge, "_hash", lambda ot, bk, rid: rid.view(np.uint64).copy())
    big = 2**40
    ins = [(big + w, 536870912, r) for w in (1, 2, 3) for r in range(5)]
    dels = [(big + 2, 536870912, 1), (big + 3, 536870912, 4), (big + 2, 536870912, 1)]
    assert merge.DeleteIndex.build(_dels(dels)).kind == "hashed"
    assert _got(merge.apply(_events(ins), _dels(dels), SNAP)) == _expected(ins, dels)


def test_keys_outside_the_packed_range_use_the_hashed_index():
    big = [(2**40, 536870912, 3), (1, 536870912, 2**33), (-5, -1, 7)]
    ins = big + [(1, 536870912, r) for r in range(6)] + [(2**40, 536870912, 4)]
    dels = big + [(1, 536870912, 2)]
    assert merge.DeleteIndex.build(_dels(dels)).kind == "hashed"
    assert merge.DeleteIndex.build(_dels([(1, 536870912, 2)])).kind == "packed"
    assert _got(merge.apply(_events(ins), _dels(dels), SNAP)) == _expected(ins, dels)
    # a packed index looked up with keys outside its range
    assert _got(merge.apply(_events(ins), _dels([(1, 536870912, 2)]), SNAP)) == _expected(ins, [(1, 536870912, 2)])
