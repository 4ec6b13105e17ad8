"""The vectorised bucket-property decoder agrees with the scalar codec (Hive's BucketCodec:
V1 = 1<<29 | id<<16 | stmt, V0 = the id itself, other versions invalid)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from acidctl.orc import bucketcodec


def test_decode_array_known_values():
    vals = np.array([536870912, (1 << 29) | (7 << 16) | 3, 5, -1], dtype=np.int32)
    version, ids = bucketcodec.decode_array(vals)
    assert version.tolist() == [1, 1, 0, 7]
    assert ids[:3].tolist() == [0, 7, 5]


@settings(max_examples=60)
@given(st.lists(st.integers(-(1 << 31), (1 << 31) - 1), min_size=1, max_size=20))
def test_decode_array_matches_decode(values):
    version, ids = bucketcodec.decode_array(np.array(values, dtype=np.int64))
    for v, ver, i in zip(values, version, ids):
        d = bucketcodec.decode(v)
        assert d.version == ver
        if d.bucket_id is not None:
            assert d.bucket_id == i
