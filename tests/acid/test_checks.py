"""Directory checks D01-D11, M01-M08, S01-S14 (directory-state.md §9.1-§9.3)."""

import struct

import pytest

from acidctl.acid.acidstate import get_acid_state
from acidctl.acid.checks import (
    MetastoreFacts,
    check_markers,
    check_names,
    check_partition,
    check_snapshot,
)
from acidctl.acid.initiator import compactor_state, recommend
from acidctl.acid.writeids import TxnList, WriteIdList
from acidctl.findings import Severity, has_errors

from .helpers import COMPACTED, acid_dir, build_listing, listing

NOW = 1_700_000_000.0
E, W, I = Severity.ERROR, Severity.WARN, Severity.INFO


def ids(findings):
    return sorted({(f.check, f.severity) for f in findings})


def only(findings, check):
    return [f for f in findings if f.check == check]


def _names(spec, hv=3, **kw):
    return check_names(build_listing("/t", spec, mtime=kw.pop("mtime", NOW)), hive_version=hv, now=NOW, **kw)


def test_clean_table_has_no_findings():
    lst = build_listing(
        "/t", {"base_0000001/": acid_dir(data=10000, compacted=True), "delta_0000002_0000002_0000/": acid_dir(data=10)}
    )
    st = get_acid_state(lst, WriteIdList.all_committed(2))
    rec = recommend(compactor_state(lst, WriteIdList.all_committed(2)))
    assert check_partition(lst, st, hive_version=3, recommendation=rec, now=NOW) == []


def test_d01_unparseable():
    f = _names({"delta_1/": {}, "base_x/": {}, "delete_delta_a_b/": {}})
    assert [x.check for x in f] == ["D01", "D01", "D01"] and all(x.severity is E for x in f)


def test_d02_visibility_under_hive3_only():
    spec = {"base_0000005_v0000010/": acid_dir()}
    assert ids(_names(spec, hv=3)) == [("D02", E)]
    assert _names(spec, hv=4) == []


def test_d03_same_range_different_visibility():
    spec = {
        "delta_0000001_0000005_v0000010/": acid_dir(),
        "delta_0000001_0000005_v0000020/": acid_dir(),
        "delete_delta_0000001_0000005_v0000010/": acid_dir(),
    }
    assert ids(_names(spec, hv=4)) == [("D03", E)]


def test_d04_non_nesting_overlap():
    lst = listing("delta_0000005_0000010", "delta_0000008_0000015")
    st = get_acid_state(lst, WriteIdList.all_committed(15))
    assert [d.name for d in st.deltas] == ["delta_0000005_0000010", "delta_0000008_0000015"]
    f = only(check_snapshot(st, now=NOW), "D04")
    assert len(f) == 1 and f[0].severity is E and "8..10 appear twice" in f[0].message
    # nested ranges and the delete/insert pair are fine
    ok = get_acid_state(
        listing("delta_0000005_0000010", "delete_delta_0000005_0000010", "delta_0000006_0000006_0000"),
        WriteIdList.all_committed(10),
    )
    assert only(check_snapshot(ok, now=NOW), "D04") == []


def test_d05_d06():
    f = _names(
        {"delta_0000001_0000001_0002/": acid_dir(), "delta_1_1/": acid_dir(), "base_-9223372036854775808/": acid_dir()}
    )
    assert ids(f) == [("D05", I), ("D06", I)]


def test_d07_leftovers_by_age():
    old = _names(
        {
            "_tmp_abc/": None,
            ".hive-staging_x/": None,
            "_task_tmp.-ext/": None,
            ".acidctl-staging-1/": None,
            "_SUCCESS": 0,
        },
        mtime=NOW - 2 * 86400,
    )
    assert [(x.check, x.severity) for x in old] == [("D07", W)] * 4
    young = _names({"_tmp_abc/": None}, mtime=NOW - 60)
    assert ids(young) == [("D07", I)]
    unknown = check_names(build_listing("/t", {"_tmp_abc/": None}), hive_version=3, now=NOW)
    assert ids(unknown) == [("D07", I)]


def test_d08_original_directory():
    assert ids(_names({"HIVE_UNION_SUBDIR_1/": {"000000_0": 5}})) == [("D08", I)]


def test_d09_unexpected_base_file():
    f = _names({"base_0000001/": acid_dir(**{"part-0000.orc": 5, "000000_0": 5})})
    assert [(x.check, x.severity, x.path) for x in f] == [("D09", E, "/t/base_0000001/part-0000.orc")]


def test_d10_unexpected_delta_file():
    f = _names(
        {
            "delta_0000001_0000001_0000/": acid_dir(**{"notes.txt": 5, "000000_0": 5}),
            "delete_delta_0000001_0000001_0000/": acid_dir(**{"000000_0": 5}),
        }
    )
    assert sorted((x.check, x.path) for x in f) == [
        ("D10", "/t/delete_delta_0000001_0000001_0000/000000_0"),
        ("D10", "/t/delta_0000001_0000001_0000/notes.txt"),
    ]


def test_d11_bucket_name():
    spec = {"delta_0000001_0000001_0000/": acid_dir(bucket_0=5, bucket_00001_2=5)}
    assert ids(_names(spec)) == [("D11", W)]
    assert ids(_names(spec, for_compaction=True)) == [("D11", E)]


def test_m01_m02_missing_version():
    lst = build_listing(
        "/t",
        {
            "delta_0000001_0000001_0000/": acid_dir(version=None),
            "delta_0000002_0000002_0000/": {},
            "delete_delta_0000003_0000003_0000/": {"_orc_acid_version": b"2"},
        },
    )
    f = check_markers(lst, hive_version=3)
    assert [(x.check, x.severity, x.path) for x in f] == [
        ("M01", W, "/t/delta_0000001_0000001_0000"),
        ("M02", E, "/t/delta_0000002_0000002_0000"),
    ]


@pytest.mark.parametrize("content", [b"1", b"2\n", b"", b"22"])
def test_m03_version_content(content):
    lst = build_listing("/t", {"delta_0000001_0000001_0000/": acid_dir(version=content)})
    assert ids(check_markers(lst, hive_version=3)) == [("M03", E)]


@pytest.mark.parametrize(
    "content,hv,bad",
    [
        (COMPACTED, 3, False),
        (b'{"thisFileVersion":"0","dataFormat":"truncated"}', 4, False),
        (b'{"thisFileVersion":"0","dataFormat":"truncated"}', 3, True),
        (b'{"thisFileVersion":"1","dataFormat":"compacted"}', 4, True),
        (b'{"thisFileVersion":"0","dataFormat":"weird"}', 4, True),
        (b"not json", 3, True),
    ],
)
def test_m04_metadata(content, hv, bad):
    lst = build_listing("/t", {"base_0000001/": acid_dir(_metadata_acid=content)})
    assert bool(only(check_markers(lst, hive_version=hv), "M04")) == bad


def test_m05_hive3_base_without_metadata():
    lst = build_listing("/t", {"base_0000007/": acid_dir(), "base_-9223372036854775808/": acid_dir()})
    assert ids(check_markers(lst, hive_version=3)) == [("M05", I)]
    assert ids(check_markers(lst, hive_version=4)) == []
    facts = MetastoreFacts(compaction_highest_write_ids=frozenset({7}))
    assert ids(check_markers(lst, hive_version=3, facts=facts)) == [("M05", W)]


def test_m06_m07_m08_side_files():
    good = struct.pack(">q", 0) + struct.pack(">q", 1234)
    lst = build_listing(
        "/t",
        {
            "delta_0000001_0000005/": acid_dir(bucket_00000_flush_length=good),
            "delta_0000006_0000010/": acid_dir(bucket_00000_flush_length=b"\x00\x00"),
            "delta_0000011_0000015/": acid_dir(bucket_00000_flush_length=good + b"\x01"),
            "delta_0000016_0000020/": acid_dir(bucket_00000_flush_length=struct.pack(">q", -1)),
        },
    )
    f = check_markers(lst, hive_version=3)
    got = sorted((x.check, x.path.split("/")[2]) for x in f)
    assert got == [
        ("M06", "delta_0000001_0000005"),
        ("M06", "delta_0000006_0000010"),
        ("M06", "delta_0000011_0000015"),
        ("M06", "delta_0000016_0000020"),
        ("M07", "delta_0000006_0000010"),
        ("M07", "delta_0000016_0000020"),
        ("M08", "delta_0000006_0000010"),
        ("M08", "delta_0000011_0000015"),
    ]
    m07 = only(f, "M07")[0]
    assert "found but is not readable.  Consider waiting or orcfiledump --recover" in m07.message


def _snapshot(lst, wl, hv=3, txns=None, facts=None, known_txns=None):
    st = get_acid_state(lst, wl, hive_version=hv, txns=txns)
    rec = recommend(
        compactor_state(lst, wl, hive_version=hv, txns=txns),
        aborted_txn_count=facts.aborted_txn_count if facts else None,
    )
    return check_snapshot(st, recommendation=rec, facts=facts, txns=known_txns, now=NOW)


def test_s01_s02_s12():
    lst = listing("base_0000020", "base_0000010", compacted={"base_0000020", "base_0000010"})
    f = _snapshot(lst, WriteIdList.parse("db.t:25:15:15:"))
    # base_20 is unusable for this reader (not obsolete): nothing for the Cleaner
    assert ids(f) == [("S12", I)]
    f1 = _snapshot(lst, WriteIdList.all_committed(25))
    assert ("S12", I) in ids(f1) and ("S02", I) in ids(f1)
    f2 = _snapshot(listing("base_0000020", compacted={"base_0000020"}), WriteIdList.parse("db.t:25:15:15:"))
    s01 = only(f2, "S01")
    assert s01[0].severity is E and s01[0].message.startswith("Not enough history available for (25,15).")


def test_s02_warn_with_cleaner_backlog():
    lst = listing("base_0000020", "base_0000010")
    f = _snapshot(lst, WriteIdList.all_committed(20), facts=MetastoreFacts(cleaner_backlog_seconds=3 * 86400))
    assert ("S02", W) in ids(f)


def test_s03_s04():
    lst = build_listing(
        "/t",
        {
            n + "/": acid_dir()
            for n in ("delta_0000001_0000001_0000", "delta_0000002_0000002_0000", "delta_0000003_0000003_0000")
        },
        mtime=NOW - 3 * 86400,
    )
    f = _snapshot(lst, WriteIdList.parse("db.t:3:3:3:2"))
    assert ("S03", W) in ids(f) and ("S04", I) in ids(f)
    assert "1 aborted-only delta directory, oldest 3d old" in only(f, "S03")[0].message
    stale = _snapshot(lst, WriteIdList.parse("db.t:3:3:3:2"), facts=MetastoreFacts(stale_open_write_ids=frozenset({3})))
    assert ("S04", W) in ids(stale)


def test_s05_s06_need_a_known_txn_list():
    lst = listing("base_0000001_v0000010", "delta_0000002_0000003_v0000020")
    tl = TxnList.parse("30:10:10:20")
    f = _snapshot(lst, WriteIdList.all_committed(3), hv=4, txns=tl, known_txns=tl)
    assert ("S05", I) in ids(f) and ("S06", W) in ids(f)
    assert not ({"S05", "S06"} & {x.check for x in _snapshot(lst, WriteIdList.all_committed(3), hv=4, txns=tl)})


def test_s07_s08_s14():
    f = _snapshot(build_listing("/t", {"000000_0": 5}), WriteIdList.all_committed(0))
    assert ("S07", I) in ids(f)
    f2 = _snapshot(listing("base_-9223372036854775808", extra={"000000_0": 5}), WriteIdList.all_committed(0))
    assert ("S08", I) in ids(f2) and ("S14", I) in ids(f2)


def test_s09_s10_s11():
    spec = {"base_0000000/": {"bucket_00000": 100}}
    spec.update({f"delta_{i:07d}_{i:07d}_0000/": {"bucket_00000": 10} for i in range(1, 12)})
    f = _snapshot(
        build_listing("/t", spec), WriteIdList.all_committed(11), facts=MetastoreFacts(aborted_txn_count=1001)
    )
    assert {("S09", W), ("S10", W), ("S11", W)} <= set(ids(f))


def test_s13_write_ids_above_table_hwm():
    lst = listing("delta_0000001_0000001_0000", "delta_0000009_0000009_0000")
    f = _snapshot(lst, WriteIdList.all_committed(9), facts=MetastoreFacts(table_hwm=5))
    s13 = only(f, "S13")
    assert len(s13) == 1 and s13[0].path == "/t/delta_0000009_0000009_0000" and has_errors(s13)


def test_check_partition_orders_errors_first_and_uses_facts_hive_version():
    lst = listing("base_0000005_v0000010", "delta_0000006_0000006_0000")
    st = get_acid_state(lst, WriteIdList.all_committed(6), hive_version=4)
    f = check_partition(lst, st, hive_version=4, facts=MetastoreFacts(hive_version=3), now=NOW)
    assert f[0].check == "D02" and f[0].severity is E
