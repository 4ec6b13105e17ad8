"""getAcidState for Hive 3.1 and Hive 4 (directory-state.md §3-§6)."""

import pytest
from hypothesis import given, settings, strategies as st

from acidctl.acid.acidstate import (
    classify_names,
    DirListing,
    Kind,
    Role,
    delta_sort_key,
    get_acid_state,
)
from acidctl.acid.writeids import LONG_MIN, RangeResponse, TxnList, WriteIdList
from acidctl.errors import InvalidAcidLayout, SnapshotUnavailable, UsageError

from .helpers import EXAMPLE, acid_dir, build_listing, listing, names, roles

ALL_COMMITTED = lambda hwm: WriteIdList.all_committed(hwm, "db.t")  # noqa: E731

# -- §5 worked example ----------------------------------------------------------------------


@pytest.mark.parametrize("hv", [3, 4])
def test_worked_example(hv):
    lst = listing(*EXAMPLE, compacted={"base_0000002", "base_0000005"})
    st_ = get_acid_state(lst, WriteIdList.parse("db.t:14:12:12:13"), hive_version=hv, txns=TxnList.all_committed())
    assert st_.base.name == "base_0000005" and st_.base.compacted
    assert names(st_.deltas) == [
        "delete_delta_0000006_0000010",
        "delta_0000006_0000010",
        "delta_0000011_0000011_0000",
        "delta_0000014_0000014_0000",
    ]
    assert sorted(names(st_.obsolete)) == sorted(
        [
            "base_0000002",
            "delta_0000001_0000001_0000",
            "delta_0000006_0000006_0000",
            "delta_0000007_0000007_0000",
            "delete_delta_0000008_0000008_0000",
        ]
    )
    r = roles(st_)
    assert r["delta_0000012_0000012_0000"] == "not visible yet"  # open
    assert r["delta_0000013_0000013_0000"] == "aborted"  # aborted
    assert st_.not_enough_history is None and st_.reader_errors == []
    assert st_.originals == []
    assert [c.read_order for c in st_.deltas] == [0, 1, 2, 3]
    if hv == 4:
        assert st_.aborted_write_ids == (13,)
    # the delete/insert pair of the same range are both read, the other deltas are covered
    assert st_.get("delta_0000006_0000010").reason.startswith("read: same range as delete_delta_0000006_0000010")


def test_worked_example_sort_order():
    lst = listing(*EXAMPLE, compacted={"base_0000002", "base_0000005"})
    st_ = get_acid_state(lst, WriteIdList.parse("db.t:14:12:12:13"))
    wl = st_.write_ids
    working = [
        c
        for c in st_.entries
        if c.kind in (Kind.DELTA, Kind.DELETE_DELTA)
        and wl.range_valid(c.min_write_id, c.max_write_id) is not RangeResponse.NONE
    ]
    assert names(sorted(working, key=delta_sort_key)) == [
        "delta_0000001_0000001_0000",
        "delete_delta_0000006_0000010",
        "delta_0000006_0000010",
        "delta_0000006_0000006_0000",
        "delta_0000007_0000007_0000",
        "delete_delta_0000008_0000008_0000",
        "delta_0000011_0000011_0000",
        "delta_0000014_0000014_0000",
    ]


def test_sort_example_wider_first():
    lst = listing("delta_0000051_0000060", "delta_0000011_0000020", "delta_0000005_0000010", "delta_0000005_0000020")
    st_ = get_acid_state(lst, ALL_COMMITTED(60))
    ordered = sorted((c for c in st_.entries), key=delta_sort_key)
    assert names(ordered) == [
        "delta_0000005_0000020",
        "delta_0000005_0000010",
        "delta_0000011_0000020",
        "delta_0000051_0000060",
    ]
    assert names(st_.deltas) == ["delta_0000005_0000020", "delta_0000051_0000060"]
    assert sorted(names(st_.obsolete)) == ["delta_0000005_0000010", "delta_0000011_0000020"]


# -- Not enough history -------------------------------------------------------------------


def test_not_enough_history_hive3():
    lst = listing("base_0000020", "delta_0000021_0000021_0000", compacted={"base_0000020"})
    st_ = get_acid_state(lst, WriteIdList.parse("db.t:25:15:15:"), hive_version=3)
    assert st_.base is None
    assert st_.not_enough_history == (
        "Not enough history available for (25,15).  Oldest available base: /t/base_0000020"
    )
    assert roles(st_)["base_0000020"] == "unusable base"
    with pytest.raises(SnapshotUnavailable, match=r"\(25,15\)"):
        st_.require_snapshot()


def test_not_enough_history_exception_is_first_exception_or_x():
    lst = listing("base_0000020", compacted={"base_0000020"})
    st_ = get_acid_state(lst, WriteIdList.parse("db.t:10:9223372036854775807::"))
    assert st_.not_enough_history.startswith("Not enough history available for (10,x).")
    # smallest exception may be an aborted id
    st2 = get_acid_state(lst, WriteIdList.parse("db.t:25:15:15:3"))
    assert "(25,3)" in st2.not_enough_history


def test_not_enough_history_hive4_visible_vs_invisible_compactor_base():
    lst = listing("base_0000020_v0000030", "delta_0000010_0000010_0000", "delta_0000021_0000021_0000")
    wl = WriteIdList.parse("db.t:25:15:15:")
    visible = get_acid_state(lst, wl, hive_version=4, txns=TxnList.parse("40:40::"))
    assert visible.not_enough_history == (
        "Not enough history available for (25,15).  Oldest available base: /t/base_0000020_v0000030"
    )
    invisible = get_acid_state(lst, wl, hive_version=4, txns=TxnList.parse("40:30:30:"))
    assert invisible.not_enough_history is None
    assert roles(invisible)["base_0000020_v0000030"] == "not visible yet"
    assert names(invisible.deltas) == ["delta_0000010_0000010_0000", "delta_0000021_0000021_0000"]


# -- Hive 3 vs Hive 4 differences ---------------------------------------------------------


def test_compacted_base_without_metadata_acid_is_iow_in_hive3():
    wl = WriteIdList.parse("db.t:25:15:15:")
    with_md = listing("base_0000020", "delta_0000021_0000021_0000", compacted={"base_0000020"})
    without = listing("base_0000020", "delta_0000021_0000021_0000")
    a = get_acid_state(with_md, wl, hive_version=3)
    b = get_acid_state(without, wl, hive_version=3)
    assert a.base is None and a.not_enough_history
    # no _metadata_acid: Hive 3 applies the INSERT OVERWRITE rule isWriteIdValid(20) -> usable
    assert b.base.name == "base_0000020" and not b.base.compacted and b.not_enough_history is None
    assert b.base.reason == "current base (INSERT OVERWRITE)"
    # Hive 4 marks compactor output with _vM instead
    c = get_acid_state(listing("base_0000020_v0000030", "delta_0000021_0000021_0000"), wl, hive_version=4)
    assert c.base is None and c.not_enough_history


def test_visibility_suffix_hive3_invalid_hive4_by_txn():
    lst = listing(
        "base_0000005",
        "delta_0000006_0000006_0000",
        "delta_0000007_0000007_0000",
        "delta_0000006_0000007_v0000040",
        compacted={"base_0000005"},
    )
    wl = ALL_COMMITTED(7)
    h3 = get_acid_state(lst, wl, hive_version=3)
    assert roles(h3)["delta_0000006_0000007_v0000040"] == "invalid"
    assert h3.reader_errors and "NumberFormatException" in h3.reader_errors[0]
    with pytest.raises(InvalidAcidLayout):
        h3.require_snapshot()
    assert names(h3.deltas) == ["delta_0000006_0000006_0000", "delta_0000007_0000007_0000"]

    open_ = get_acid_state(lst, wl, hive_version=4, txns=TxnList.parse("50:40:40:"))
    assert roles(open_)["delta_0000006_0000007_v0000040"] == "not visible yet"
    assert names(open_.deltas) == ["delta_0000006_0000006_0000", "delta_0000007_0000007_0000"]

    committed = get_acid_state(lst, wl, hive_version=4, txns=TxnList.parse("50:9223372036854775807::"))
    assert names(committed.deltas) == ["delta_0000006_0000007_v0000040"]
    assert sorted(names(committed.obsolete)) == ["delta_0000006_0000006_0000", "delta_0000007_0000007_0000"]

    aborted = get_acid_state(lst, wl, hive_version=4, txns=TxnList.parse("50:9223372036854775807::40"))
    assert roles(aborted)["delta_0000006_0000007_v0000040"] == "aborted"
    assert "visibility txn 40 aborted" in aborted.get("delta_0000006_0000007_v0000040").reason


def test_hive4_without_txn_list_treats_visibility_as_committed():
    lst = listing("base_0000005_v0000009")
    st_ = get_acid_state(lst, ALL_COMMITTED(5), hive_version=4, txns=None)
    assert st_.base.name == "base_0000005_v0000009" and st_.base.compacted


def test_base_equal_to_min_open_write_id():
    wl = WriteIdList.parse("db.t:20:15:15:")
    # Hive 4 HIVE-22754 shortcut: N <= minOpenWriteId is valid, even N == minOpen
    h4 = get_acid_state(listing("base_0000015_v0000030"), wl, hive_version=4)
    assert h4.base.name == "base_0000015_v0000030"
    # Hive 3 compacted base: needs N < minOpenWriteId
    h3 = get_acid_state(listing("base_0000015", compacted={"base_0000015"}), wl, hive_version=3)
    assert h3.base is None and h3.not_enough_history
    # above the lowest open id: unusable in both
    h4b = get_acid_state(listing("base_0000016_v0000030"), wl, hive_version=4)
    assert h4b.base is None and h4b.not_enough_history
    assert roles(h4b)["base_0000016_v0000030"] == "unusable base"


def test_aborted_insert_overwrite_base():
    lst = listing(
        "delta_0000001_0000001_0000", "delta_0000002_0000002_0000", "base_0000003", "delta_0000004_0000004_0000"
    )
    wl = WriteIdList.parse("db.t:4:9223372036854775807::3")
    h4 = get_acid_state(lst, wl, hive_version=4)
    assert roles(h4)["base_0000003"] == "aborted"
    assert 3 in h4.aborted_write_ids
    assert h4.base is None and h4.not_enough_history is None
    assert names(h4.deltas) == [
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000004_0000004_0000",
    ]
    # Hive 3: the IOW base is not usable (isWriteIdValid(3) false) and it is the only base,
    # so the reader gets "Not enough history"
    h3 = get_acid_state(lst, wl, hive_version=3)
    assert roles(h3)["base_0000003"] == "aborted"
    assert h3.not_enough_history == ("Not enough history available for (4,3).  Oldest available base: /t/base_0000003")


def test_not_enough_history_only_for_compacted_bases_in_hive4():
    lst = listing("base_0000020", "delta_0000010_0000010_0000")  # IOW base of open write id 20
    wl = WriteIdList.parse("db.t:25:15:15,20:")
    h3 = get_acid_state(lst, wl, hive_version=3)
    assert h3.not_enough_history is not None
    h4 = get_acid_state(lst, wl, hive_version=4)
    assert h4.not_enough_history is None
    assert roles(h4)["base_0000020"] == "not visible yet"
    assert names(h4.deltas) == ["delta_0000010_0000010_0000"]


def test_hive4_compactor_base_beats_iow_base_of_same_write_id():
    lst = listing("base_0000005", "base_0000005_v0000020")
    for order in (lst.entries, tuple(reversed(lst.entries))):
        st_ = get_acid_state(DirListing("/t", order), ALL_COMMITTED(5), hive_version=4)
        assert st_.base.name == "base_0000005_v0000020"
        assert names(st_.obsolete) == ["base_0000005"]


# -- deltas -------------------------------------------------------------------------------


def test_multi_statement_deltas():
    lst = listing(
        "delta_0000005_0000005_0000",
        "delta_0000005_0000005_0001",
        "delete_delta_0000005_0000005_0001",
        "delta_0000005_0000005_0002",
    )
    st_ = get_acid_state(lst, ALL_COMMITTED(5))
    assert names(st_.deltas) == [
        "delta_0000005_0000005_0000",
        "delete_delta_0000005_0000005_0001",
        "delta_0000005_0000005_0001",
        "delta_0000005_0000005_0002",
    ]
    assert "another statement" in st_.get("delta_0000005_0000005_0002").reason
    # after a minor compaction of write id 5 (no statement id) the per-statement deltas are obsolete
    lst2 = listing(
        "delta_0000005_0000005",
        "delete_delta_0000005_0000005",
        "delta_0000005_0000005_0000",
        "delta_0000005_0000005_0001",
        "delete_delta_0000005_0000005_0001",
    )
    st2 = get_acid_state(lst2, ALL_COMMITTED(5))
    assert names(st2.deltas) == ["delete_delta_0000005_0000005", "delta_0000005_0000005"]
    assert len(st2.obsolete) == 3


def test_delete_delta_pairs_and_wider_delta_obsoletes_delete_delta():
    lst = listing(
        "delta_0000030_0000050",
        "delete_delta_0000040_0000040_0000",
        "delta_0000040_0000040_0000",
        "delete_delta_0000051_0000051_0000",
        "delta_0000051_0000051_0000",
    )
    st_ = get_acid_state(lst, ALL_COMMITTED(51))
    assert names(st_.deltas) == [
        "delta_0000030_0000050",
        "delete_delta_0000051_0000051_0000",
        "delta_0000051_0000051_0000",
    ]
    assert roles(st_)["delete_delta_0000040_0000040_0000"] == "obsolete"
    assert st_.get("delete_delta_0000040_0000040_0000").reason == "covered by delta_0000030_0000050"
    assert [c.role for c in st_.deltas] == [Role.DELTA, Role.DELETE_DELTA, Role.DELTA]


def test_trino_fullacid_delete_delta_test_classification():
    """fixtures/real/README.md §4 (derived): the suffix-less copy is taken, _0000 is obsolete."""
    lst = build_listing(
        "/t",
        {
            "delete_delta_0000004_0000004/": {"bucket_00000": 646},
            "delete_delta_0000004_0000004_0000/": {"bucket_00000": 646},
            "delete_delta_0000007_0000007_0000/": {"bucket_00000": 655},
        },
    )
    st_ = get_acid_state(lst, ALL_COMMITTED(7))
    assert names(st_.deltas) == ["delete_delta_0000004_0000004", "delete_delta_0000007_0000007_0000"]
    assert names(st_.obsolete) == ["delete_delta_0000004_0000004_0000"]
    assert st_.get("delete_delta_0000004_0000004_0000").reason == "covered by delete_delta_0000004_0000004"


def test_partially_visible_delta_skipped_silently_not_obsolete():
    lst = listing("base_0000005", "delta_0000003_0000008", compacted={"base_0000005"})
    wl = WriteIdList.parse("db.t:8:6:6,7,8:")
    st_ = get_acid_state(lst, wl)
    # compacted base 5 < lowest open 6: usable; delta 3..8 is SOME valid, but 6..8 are all open
    assert st_.base.name == "base_0000005"
    c = st_.get("delta_0000003_0000008")
    assert c.role is Role.NOT_VISIBLE and "6..8" in c.reason


def test_aborted_and_open_deltas_hive3():
    lst = listing(
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000003_0000004",
        "delta_0000005_0000005_0000",
    )
    wl = WriteIdList.parse("db.t:4:3:3:2,4")
    st_ = get_acid_state(lst, wl, hive_version=3)
    r = roles(st_)
    assert r["delta_0000002_0000002_0000"] == "aborted"
    assert r["delta_0000003_0000004"] == "not visible yet"  # 3 open, 4 aborted: NONE but not all aborted
    assert r["delta_0000005_0000005_0000"] == "not visible yet"  # above hwm
    assert "above the high-water mark 4" in st_.get("delta_0000005_0000005_0000").reason
    assert names(st_.deltas) == ["delta_0000001_0000001_0000"]
    assert st_.aborted_write_ids == ()  # Hive 3 full-ACID does not track them


def test_hive4_uncompacted_aborts():
    lst = listing("delta_0000001_0000003")
    st_ = get_acid_state(lst, WriteIdList.parse("db.t:3:9223372036854775807::2"), hive_version=4)
    assert st_.has_uncompacted_aborts and names(st_.deltas) == ["delta_0000001_0000003"]


# -- bases --------------------------------------------------------------------------------


def test_newest_valid_base_wins_and_older_are_obsolete():
    lst = listing(
        "base_0000001", "base_0000010", "base_0000005", compacted={"base_0000001", "base_0000010", "base_0000005"}
    )
    st_ = get_acid_state(lst, ALL_COMMITTED(10))
    assert st_.base.name == "base_0000010"
    assert sorted(names(st_.obsolete)) == ["base_0000001", "base_0000005"]
    assert st_.get("base_0000005").reason == "superseded by base_0000010"


def test_conversion_base():
    lst = listing("base_-9223372036854775808", "delta_0000001_0000001_0000", extra={"000000_0": 10})
    st_ = get_acid_state(lst, WriteIdList.parse("db.t:1:1:1:"))
    assert st_.base.parsed.write_id == LONG_MIN
    assert "conversion base" in st_.base.reason
    assert roles(st_)["000000_0"] == "obsolete"
    assert roles(st_)["delta_0000001_0000001_0000"] == "not visible yet"


def test_bad_metadata_acid_is_a_reader_error():
    lst = build_listing(
        "/t", {"base_0000005/": acid_dir(_metadata_acid=b'{"thisFileVersion":"1","dataFormat":"compacted"}')}
    )
    st_ = get_acid_state(lst, ALL_COMMITTED(5))
    assert any("Unexpected Meta Data version: 1" in e for e in st_.reader_errors)


# -- originals ----------------------------------------------------------------------------


def test_originals_sorted_by_full_path_when_no_base():
    lst = build_listing(
        "/t",
        {
            "000002_0_copy_2": 743,
            "000000_0": 730,
            "000002_0": 741,
            "000001_0": 730,
            "000002_0_copy_1": 768,
            "empty_0": 0,
            "HIVE_UNION_SUBDIR_1/": {"000000_0": 5, "_tmp.x": 3, "nested/": {"000001_0": 7}},
            "delete_delta_10000001_10000001_0000/": {"bucket_00000": 760},
        },
    )
    st_ = get_acid_state(lst, ALL_COMMITTED(10000001))
    assert [o.rel for o in st_.originals] == [
        "000000_0",
        "000001_0",
        "000002_0",
        "000002_0_copy_1",
        "000002_0_copy_2",
        "HIVE_UNION_SUBDIR_1/000000_0",
        "HIVE_UNION_SUBDIR_1/nested/000001_0",
    ]
    assert [o.bucket for o in st_.originals] == [0, 1, 2, 2, 2, 0, 1]
    assert roles(st_)["empty_0"] == "ignored"
    assert roles(st_)["HIVE_UNION_SUBDIR_1"] == "original"
    assert names(st_.deltas) == ["delete_delta_10000001_10000001_0000"]
    # the Initiator does not ignore empty files
    st2 = get_acid_state(lst, ALL_COMMITTED(10000001), ignore_empty_files=False)
    assert "empty_0" in [o.rel for o in st2.originals]


def test_originals_obsolete_with_base():
    lst = listing("base_0000003", extra={"000000_0": 10, "HIVE_UNION_SUBDIR_1/": {"000000_0": 5}})
    st_ = get_acid_state(lst, ALL_COMMITTED(3))
    assert st_.originals == []
    assert roles(st_)["000000_0"] == "obsolete" and roles(st_)["HIVE_UNION_SUBDIR_1"] == "obsolete"


def test_plain_file_named_like_a_delta_is_an_original():
    lst = build_listing("/t", {"delta_0000001_0000001_0000": 5})
    st_ = get_acid_state(lst, ALL_COMMITTED(1))
    assert st_.entries[0].kind is Kind.ORIGINAL_FILE and len(st_.originals) == 1


def test_hidden_and_unparseable():
    lst = build_listing(
        "/t",
        {
            "_tmp_123/": None,
            ".hive-staging_x/": None,
            "_orc_acid_version": b"2",
            "delta_x_y/": {},
            "delta_0000001_0000001_0000/": acid_dir(),
        },
    )
    st_ = get_acid_state(lst, ALL_COMMITTED(1))
    r = roles(st_)
    assert r["_tmp_123"] == r[".hive-staging_x"] == r["_orc_acid_version"] == "ignored"
    assert r["delta_x_y"] == "invalid"
    with pytest.raises(InvalidAcidLayout, match="delta_x_y"):
        st_.require_snapshot()


def test_bad_hive_version():
    with pytest.raises(UsageError):
        get_acid_state(listing(), ALL_COMMITTED(1), hive_version=5)  # 2 = Hive 2.3 rules (tests/acid/test_hive2.py)


def test_assumed_watermark_is_the_highest_write_id_named(tmp_path):
    """--assume-committed's hwm (acidctl.target): every partition, hidden and malformed names aside."""
    from acidctl.fs import TableFS
    from acidctl.target import max_write_id_in_tree

    for d in (
        "p=1/base_0000003",
        "p=1/delta_0000004_0000009",
        "p=2/delta_bad",
        "p=2/delta_0000002_0000011",
        ".hive-staging/delta_0000050_0000050",
        "p=2/_tmp.delta_0000060_0000060",
    ):
        (tmp_path / d).mkdir(parents=True)
    assert max_write_id_in_tree(TableFS(str(tmp_path))) == 11


# -- properties ---------------------------------------------------------------------------


@st.composite
def scenario(draw):
    hv = draw(st.sampled_from([3, 4]))
    spec = {}
    for _ in range(draw(st.integers(0, 3))):
        n = draw(st.integers(1, 20))
        v = draw(st.sampled_from([0, 0, 31, 32])) if hv == 4 else 0
        name = f"base_{n:07d}" + (f"_v{v:07d}" if v else "")
        spec[name + "/"] = acid_dir(compacted=draw(st.booleans()))
    for _ in range(draw(st.integers(0, 14))):
        lo = draw(st.integers(1, 20))
        hi = draw(st.sampled_from([lo, lo, lo + draw(st.integers(0, 6))]))
        stmt = draw(st.sampled_from([-1, 0, 0, 1]))
        v = draw(st.sampled_from([0, 0, 0, 31, 33])) if hv == 4 and stmt == -1 else 0
        pre = "delete_delta_" if draw(st.booleans()) else "delta_"
        name = f"{pre}{lo:07d}_{hi:07d}" + (f"_{stmt:04d}" if stmt >= 0 else "") + (f"_v{v:07d}" if v else "")
        spec[name + "/"] = acid_dir()
    if draw(st.booleans()):
        spec["000000_0"] = 10
    hwm = draw(st.integers(0, 22))
    exc = sorted(draw(st.sets(st.integers(1, max(hwm, 1)), max_size=6))) if hwm else []
    flags = [draw(st.booleans()) for _ in exc]
    wl = WriteIdList(
        "db.t", hwm, tuple(x for x, f in zip(exc, flags) if f), tuple(x for x, f in zip(exc, flags) if not f)
    )
    txns = draw(st.sampled_from(["40:31:31:", "40:40::33", "40:9223372036854775807::"]))
    return hv, build_listing("/t", spec), wl, TxnList.parse(txns), draw(st.randoms())


@settings(max_examples=300, deadline=None)
@given(scenario())
def test_invariants(sc):
    hv, lst, wl, txns, rnd = sc
    st_ = get_acid_state(lst, wl, txns=txns, hive_version=hv)
    # every entry classified exactly once
    assert sorted(names(st_.entries)) == sorted(e.name for e in lst.entries)
    role_lists = (st_.obsolete, st_.aborted, st_.not_visible, st_.unusable, st_.invalid, st_.ignored)
    seen = names(st_.deltas) + ([st_.base.name] if st_.base else []) + [n for l in role_lists for n in names(l)]
    seen += [c.name for c in st_.entries if c.role is Role.ORIGINAL]
    assert sorted(seen) == sorted(names(st_.entries))
    assert {c.name for c in st_.entries if c.role in (Role.DELTA, Role.DELETE_DELTA)} == set(names(st_.deltas))
    assert sum(1 for c in st_.entries if c.role is Role.BASE) == (1 if st_.base else 0)
    # current deltas are in Hive's order
    assert st_.deltas == sorted(st_.deltas, key=delta_sort_key)
    # no current delta is covered by the base; each has committed ids
    b = st_.base_write_id if st_.base else 0
    for c in st_.deltas:
        assert c.max_write_id > b
        assert wl.range_valid(c.min_write_id, c.max_write_id) is not RangeResponse.NONE
        assert c.min_write_id <= c.max_write_id
        if hv == 4:
            assert txns.is_valid(c.parsed.visibility)
        else:
            assert not c.parsed.has_visibility_suffix
    # the base is valid for the reader
    if st_.base is not None and st_.base_write_id != LONG_MIN:
        n = st_.base_write_id
        assert wl.is_valid(n) or (st_.base.compacted and wl.is_valid_base(n)) or (hv == 4 and n <= wl.min_open)
    # an obsolete delta is covered by the base or by a current delta
    for c in st_.obsolete:
        if c.kind in (Kind.DELTA, Kind.DELETE_DELTA):
            assert c.max_write_id <= b or any(
                d.min_write_id <= c.min_write_id and d.max_write_id >= c.max_write_id for d in st_.deltas
            )
    # originals only without a base
    assert not (st_.base and st_.originals)
    # independent of listing order
    entries = list(lst.entries)
    rnd.shuffle(entries)
    again = get_acid_state(DirListing(lst.path, tuple(entries)), wl, txns=txns, hive_version=hv)
    assert again.to_dict() == st_.to_dict()


@settings(max_examples=60)
@given(scenario())
def test_shared_name_classification(sc):
    """classify_names once, then the reader's and the compactor's runs over it (in either order,
    as `state` and the planner do): each the same as a run that parses the listing itself."""
    hv, lst, wl, txns, _ = sc
    shared = classify_names(lst)
    assert [n.entry.name for n in shared] == sorted(e.name for e in lst.entries)
    for reader, ignore_empty in ((wl.for_compactor(), False), (wl, True)):
        got = get_acid_state(lst, reader, txns=txns, hive_version=hv, ignore_empty_files=ignore_empty, names=shared)
        alone = get_acid_state(lst, reader, txns=txns, hive_version=hv, ignore_empty_files=ignore_empty)
        assert got.to_dict() == alone.to_dict()
