"""The delete index's batch fast path (one (originalTransaction, bucket) per batch, row ids
increasing: the delete keys of the batch's range searched for in the batch) marks exactly the
rows a plain Python set of delete keys marks, and agrees with the general per-row lookup."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from acidctl.acid import merge


def _keys(ot, bk, rid) -> pa.Table:
    return pa.table(
        {
            "originalTransaction": pa.array(ot, pa.int64()),
            "bucket": pa.array(bk, pa.int32()),
            "rowId": pa.array(rid, pa.int64()),
        }
    )


pairs = st.sampled_from([(1, 536870912), (1, 536936448), (7, 536870912), (0, -1), (2**31 - 1, 0)])


@given(
    pairs,
    st.lists(st.integers(0, 300) | st.sampled_from([2**32 - 1, 2**32, 2**40]), min_size=1, max_size=80, unique=True),
    st.lists(st.tuples(pairs, st.integers(0, 320)), max_size=60),
)
@settings(max_examples=400, deadline=None)
def test_one_pair_batches_match_a_set(pair, rids, deletes):
    rids = sorted(rids)
    o, b = pair
    n = len(rids)
    dels = _keys([d[0][0] for d in deletes], [d[0][1] for d in deletes], [d[1] for d in deletes])
    want = np.array([((o, b, r) in {(p[0], p[1], x) for p, x in deletes}) for r in rids], dtype=bool)
    index = merge.DeleteIndex.build(dels) if deletes else None
    if index is None:
        return
    batch = _keys([o] * n, [b] * n, rids)
    ot, bk, rid = merge.key_arrays(batch)
    fast = index._one_pair(ot, bk, rid)
    got = index.deleted(batch)
    assert got is not None
    assert got.tolist() == want.tolist()
    if index.kind == "packed":
        assert fast is not None and fast.tolist() == want.tolist()


def test_one_pair_declines_batches_it_does_not_cover():
    index = merge.DeleteIndex.build(_keys([1, 1], [536870912, 536870912], [3, 5]))
    assert index is not None and index.kind == "packed"
    two_pairs = merge.key_arrays(_keys([1, 2], [536870912, 536870912], [3, 4]))
    assert index._one_pair(*two_pairs) is None
    not_increasing = merge.key_arrays(_keys([1, 1, 1], [536870912] * 3, [3, 3, 5]))
    assert index._one_pair(*not_increasing) is None
    # the general path still answers them exactly
    assert index.deleted(_keys([1, 1, 1], [536870912] * 3, [3, 3, 5])).tolist() == [True, True, True]
    assert index.deleted(_keys([1, 2], [536870912, 536870912], [3, 4])).tolist() == [True, False]
