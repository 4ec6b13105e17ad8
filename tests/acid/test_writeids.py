"""WriteIdList / TxnList predicates (directory-state.md §2, storage-api definitions)."""

import pytest
from hypothesis import given, strategies as st

from acidctl.acid.writeids import LONG_MAX, RangeResponse as R, TxnList, WriteIdList
from acidctl.errors import UsageError

EX = WriteIdList.parse("db.t:14:12:12:13")  # spec §5


def test_parse_and_string():
    assert (EX.table, EX.hwm, EX.open, EX.aborted, EX.min_open) == ("db.t", 14, (12,), (13,), 12)
    assert str(EX) == "db.t:14:12:12:13"
    all_c = WriteIdList.parse("db.t:4:9223372036854775807::")
    assert all_c.min_open == LONG_MAX and str(all_c) == "db.t:4:9223372036854775807::"
    assert WriteIdList.parse("25:15:15:").hwm == 25
    # minOpenWriteId without open ids (compactor / Hive 4 collapsed lists) is kept as written
    kept = WriteIdList.parse("db.t:11:12::10")
    assert kept.min_open == 12 and str(kept) == "db.t:11:12::10"
    assert WriteIdList.parse("db.t:11:12::10") == WriteIdList.parse("db.t:20:12:12,17:10,13").for_compactor().__class__(
        "db.t", 11, (), (10,), min_open_write_id=12
    )


def test_parse_errors():
    for bad in ("db.t:x:1::", "a:b", "db.t:10:3:4:", "db.t:10:5:5:5"):
        with pytest.raises(UsageError):
            WriteIdList.parse(bad)


def test_point_predicates():
    assert EX.is_valid(11) and EX.is_valid(14)
    assert not EX.is_valid(12) and not EX.is_valid(13) and not EX.is_valid(15)
    assert EX.is_aborted(13) and not EX.is_aborted(12)
    assert EX.is_valid_base(11) and not EX.is_valid_base(12) and not EX.is_valid_base(5 + 10)


def test_range_valid_spec_cases():
    # spec §5: (12,12) NONE, (13,13) NONE, (6,10) ALL, (12,14) SOME
    assert EX.range_valid(12, 12) is R.NONE
    assert EX.range_valid(13, 13) is R.NONE
    assert EX.range_valid(6, 10) is R.ALL
    assert EX.range_valid(12, 14) is R.SOME
    assert EX.range_valid(15, 20) is R.NONE  # min > hwm
    assert EX.range_valid(11, 15) is R.SOME


def test_range_valid_no_exceptions_counts_ids_above_hwm():
    # Hive only short-cuts to ALL when an exception exists and lies above the range
    wl = WriteIdList.all_committed(5)
    assert wl.range_valid(3, 8) is R.SOME
    assert wl.range_valid(3, 5) is R.ALL


def test_range_aborted():
    assert EX.range_aborted(13, 13) is R.ALL
    assert EX.range_aborted(12, 13) is R.SOME
    assert EX.range_aborted(1, 11) is R.NONE
    assert EX.range_aborted(15, 16) is R.NONE  # hwm < min


def test_compactor_list():
    wl = WriteIdList.parse("db.t:20:12:12,17:10,13")
    c = wl.for_compactor()
    assert c.compactor and c.hwm == 11 and c.open == () and c.aborted == (10,)
    assert c.min_open == 12  # createValidCompactWriteIdList keeps minOpenWriteId
    assert c.range_valid(5, 11) is R.ALL and c.range_valid(5, 12) is R.NONE
    assert c.is_valid_base(11) and not c.is_valid_base(12)
    nothing_open = WriteIdList.parse("db.t:20:9223372036854775807::10").for_compactor()
    assert nothing_open.hwm == 20 and nothing_open.min_open == LONG_MAX


def test_cleaner_and_as_of():
    wl = WriteIdList.parse("db.t:20:12:12:13")
    assert wl.for_cleaner(15) == WriteIdList("db.t", 15)
    cut = wl.as_of(12)
    assert cut.hwm == 12 and cut.open == (12,) and cut.aborted == ()
    assert wl.as_of(20) == WriteIdList("db.t", 20, open=(12,), aborted=(13,))
    for beyond in (21, -1):
        try:
            wl.as_of(beyond)
        except UsageError:
            continue
        raise AssertionError(f"as_of({beyond}) accepted")


def test_txn_list():
    tl = TxnList.parse("100:50:50,60:70")
    assert tl.is_valid(0) and tl.is_valid(49) and not tl.is_valid(50) and not tl.is_valid(70)
    assert not tl.is_valid(101) and tl.is_aborted(70) and not tl.is_aborted(50)
    assert str(tl) == "100:50:50,60:70"
    assert TxnList.all_committed().is_valid(10**12)
    with pytest.raises(UsageError):
        TxnList.parse("1:2")


@st.composite
def lists(draw):
    hwm = draw(st.integers(0, 40))
    ids = draw(st.lists(st.integers(1, max(hwm, 1)), unique=True, max_size=10)) if hwm else []
    ids = [i for i in ids if i <= hwm]
    flags = draw(st.lists(st.booleans(), min_size=len(ids), max_size=len(ids)))
    return WriteIdList(
        "db.t", hwm, tuple(i for i, f in zip(ids, flags) if f), tuple(i for i, f in zip(ids, flags) if not f)
    )


def _range_valid_reference(wl, lo, hi):
    """Hive's isWriteIdRangeValid, transcribed loop for loop."""
    if lo > wl.hwm:
        return R.NONE
    exc = sorted(wl.open + wl.aborted)
    if exc and exc[0] > hi:
        return R.ALL
    count = max(0, hi - wl.hwm) + sum(1 for x in exc if lo <= x <= hi)
    if count == 0:
        return R.ALL
    if count == hi - lo + 1:
        return R.NONE
    return R.SOME


@given(lists(), st.integers(0, 45), st.integers(0, 10))
def test_range_valid_matches_reference(wl, lo, span):
    assert wl.range_valid(lo, lo + span) is _range_valid_reference(wl, lo, lo + span)


@given(lists())
def test_string_roundtrip(wl):
    assert WriteIdList.parse(str(wl)) == wl
