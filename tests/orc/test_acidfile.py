"""The ACID file vocabulary (acidctl/orc/acidfile.py) against orc-acid-files.md: key index
entries ``owid,bucket,rowId;`` (one per stripe, the stripe's last key), stats
``inserts,updates,deletes``, the strict (originalTransaction, signed bucket, rowId) order."""

import numpy as np
import pytest

from acidctl.orc import acidfile

B0 = 536870912  # V1 bucket 0 statement 0 (spec essential 1)


def test_key_index_is_each_stripes_last_key():
    ot = np.array([1, 1, 2, 2, 3])
    bk = np.array([B0] * 5)
    rid = np.array([0, 1, 0, 1, 0])
    # stripes of 2, 0 (skipped: no last row) and 3 rows
    text = acidfile.encode_key_index(ot, bk, rid, [2, 0, 3])
    assert text == f"1,{B0},1;3,{B0},0;"
    assert acidfile.parse_key_index(text) == [(1, B0, 1), (3, B0, 0)]


@pytest.mark.parametrize("bad", ["1,2;", "1,2,x;", "1,2,3,4;"])
def test_parse_key_index_refuses_malformed(bad):
    with pytest.raises(ValueError):
        acidfile.parse_key_index(bad)


def test_stats_and_metadata():
    op = np.array([0, 0, 2, 1, 0])
    assert acidfile.event_stats(op) == (3, 1, 1)
    assert acidfile.parse_acid_stats("3,1,1") == {"inserts": 3, "updates": 1, "deletes": 1}
    meta = dict(acidfile.acid_user_metadata("1,2,3;", (3, 1, 1)))
    assert meta == {"hive.acid.key.index": b"1,2,3;", "hive.acid.stats": b"3,1,1", "hive.acid.version": b"2"}


def test_acid_type_string_names_the_six_fields():
    assert acidfile.acid_type_string("struct<a:int>") == (
        "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
        "row:struct<a:int>>"
    )


def test_check_sorted_compares_bucket_signed():
    neg = acidfile.signed_bucket(0xF0000000)
    assert neg < 0 and acidfile.signed_bucket(B0) == B0
    ot = np.array([1, 1, 1])
    assert acidfile.check_sorted(ot, np.array([neg, B0, B0]), np.array([5, 0, 1])) is None
    assert acidfile.check_sorted(ot, np.array([B0, B0, B0]), np.array([0, 1, 1])) == 2  # duplicate key


def test_key_order_across_batches():
    order = acidfile.KeyOrder()
    assert order.first_break(np.array([1, 2]), np.array([B0, B0]), np.array([0, 0])) is None
    assert order.last == (2, B0, 0)
    # the next batch's first event equals the previous batch's last: index 0 breaks the order
    assert order.first_break(np.array([2, 3]), np.array([B0, B0]), np.array([0, 0])) == 0
    assert order.first_break(np.array([]), np.array([]), np.array([])) is None
