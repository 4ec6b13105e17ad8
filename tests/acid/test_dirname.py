"""Directory/file name grammar (directory-state.md §1)."""

import pytest
from hypothesis import given, strategies as st

from acidctl.acid import dirname as dn
from acidctl.acid.dirname import (
    BaseDir,
    BucketFile,
    DeltaDir,
    FlushLengthFile,
    HiddenEntry,
    HiddenKind,
    OriginalFile,
    UnionSubdir,
    hive3_parses,
    parse_name,
)
from acidctl.acid.writeids import LONG_MAX, LONG_MIN


# -- examples from the spec ---------------------------------------------------------------


def test_base_plain():
    b = BaseDir.parse("base_0000005")
    assert b == BaseDir(5) and b.visibility == 0 and not b.has_visibility_suffix
    assert b.format() == "base_0000005"


def test_base_visibility():
    b = BaseDir.parse("base_0000003_v0000019")
    assert (b.write_id, b.visibility) == (3, 19)
    assert b.format() == "base_0000003_v0000019"


def test_conversion_base():
    b = BaseDir.parse("base_-9223372036854775808")
    assert b.write_id == LONG_MIN and b.is_conversion_base and not b.short_padding
    assert BaseDir(LONG_MIN).format() == "base_-9223372036854775808"


def test_v0_means_no_suffix_but_round_trips():
    b = BaseDir.parse("base_0000005_v0000000")
    assert b == BaseDir(5)
    assert b.format() == "base_0000005_v0000000"
    assert BaseDir(5).format() == "base_0000005"


@pytest.mark.parametrize(
    "name,expect",
    [
        ("delta_0000001_0000001_0000", DeltaDir(1, 1, 0)),
        ("delta_0000006_0000010", DeltaDir(6, 10)),
        ("delete_delta_0000008_0000008_0000", DeltaDir(8, 8, 0, delete=True)),
        ("delta_0000001_0000002_v0000025", DeltaDir(1, 2, visibility=25)),
        ("delete_delta_0000001_0000002_v0000025", DeltaDir(1, 2, visibility=25, delete=True)),
        ("delta_0000001_0000001_0003_v0000025", DeltaDir(1, 1, 3, visibility=25)),
        ("delete_delta_10000001_10000001_0000", DeltaDir(10000001, 10000001, 0, delete=True)),
        ("delta_1_2", DeltaDir(1, 2)),
    ],
)
def test_delta_examples(name, expect):
    d = DeltaDir.parse(name)
    assert d == expect
    assert d.format() == name


def test_statement_absent_is_minus_one():
    assert DeltaDir.parse("delta_0000006_0000010").statement_id == -1
    assert not DeltaDir.parse("delta_0000006_0000010").has_statement


def test_width_is_a_minimum():
    assert DeltaDir(10000001, 10000001, 0, delete=True).format() == "delete_delta_10000001_10000001_0000"
    assert BucketFile(100000).format() == "bucket_100000"
    assert DeltaDir(1, 1, 12345).format() == "delta_0000001_0000001_12345"


def test_fresh_objects_use_hive_widths():
    assert DeltaDir(1, 1, 0).format() == "delta_0000001_0000001_0000"
    assert DeltaDir(6, 10, visibility=7).format() == "delta_0000006_0000010_v0000007"
    assert BaseDir(3, 19).format() == "base_0000003_v0000019"
    assert BucketFile(3).format() == "bucket_00003"
    assert BucketFile(3, 1).format() == "bucket_00003_1"


def test_short_padding_remembered():
    assert DeltaDir.parse("delta_1_2").short_padding
    assert not DeltaDir.parse("delta_0000001_0000002").short_padding
    assert BaseDir.parse("base_5").short_padding
    assert DeltaDir.parse("delta_1_2") == DeltaDir(1, 2)  # widths do not take part in equality


@pytest.mark.parametrize(
    "name",
    [
        "base_",
        "base_x",
        "base_5_v",
        "base_5_vx",
        "base_5_6",
        "base_5_v1_v2",
        "base_-0",
        "delta_",
        "delta_5",
        "delta_5_",
        "delta_a_b",
        "delta_1_2_x",
        "delta_1_2_3_4",
        "delta_1_2_v",
        "delete_delta_1",
        "delta_1_2_99999999999",
        "base_99999999999999999999",
    ],
)
def test_unparseable(name):
    assert dn.parse_acid_dir(name) is None


def test_hive3_parses():
    assert hive3_parses("delta_0000001_0000001_0000")
    assert hive3_parses("base_0000005")
    assert not hive3_parses("base_0000005_v0000010")
    assert not hive3_parses("delta_0000001_0000002_v0000025")
    assert not hive3_parses("delta_x")


def test_bucket_files():
    assert BucketFile.parse("bucket_00000") == BucketFile(0)
    b = BucketFile.parse("bucket_00002_1")
    assert (b.bucket, b.attempt) == (2, 1) and b.canonical
    assert not BucketFile.parse("bucket_0").canonical
    assert BucketFile.parse("bucket_x") is None
    assert BucketFile.parse("bucket_00000_flush_length") is None
    assert dn.is_strict_bucket_name("bucket_00000") and dn.is_strict_bucket_name("bucket_00000_12")
    assert not dn.is_strict_bucket_name("bucket_0")


def test_flush_length():
    f = FlushLengthFile.parse("bucket_00000_flush_length")
    assert f.data_file == "bucket_00000" and f.format() == "bucket_00000_flush_length"
    assert FlushLengthFile.parse("_flush_length") is None
    assert FlushLengthFile.parse("bucket_00000") is None


def test_original_files():
    o = OriginalFile.parse("000002_0_copy_2")
    assert (o.bucket, o.task, o.copy) == (2, 0, 2) and o.format() == "000002_0_copy_2"
    assert OriginalFile.parse("000000_0") == OriginalFile(0, 0)
    assert OriginalFile.parse("00000_0").bucket == 0  # Trino's acid_version_hive_3/00000_0
    assert OriginalFile(1, 0).format() == "000001_0"
    assert OriginalFile.parse("part-0000.orc") is None


def test_union_subdir():
    assert UnionSubdir.parse("HIVE_UNION_SUBDIR_1") == UnionSubdir(1)
    assert UnionSubdir(12).format() == "HIVE_UNION_SUBDIR_12"
    assert UnionSubdir.parse("HIVE_UNION_SUBDIR_") is None


@pytest.mark.parametrize(
    "name,kind",
    [
        ("_orc_acid_version", HiddenKind.ORC_ACID_VERSION),
        ("_metadata_acid", HiddenKind.METADATA_ACID),
        ("_tmp_6b0e-uuid", HiddenKind.TMP),
        ("_tmp.000000_0", HiddenKind.TMP),
        ("_task_tmp.-ext-10000", HiddenKind.TASK_TMP),
        (".hive-staging_hive_2020-01-01", HiddenKind.HIVE_STAGING),
        (".acidctl-staging-1234", HiddenKind.ACIDCTL_STAGING),
        ("_SUCCESS", HiddenKind.SUCCESS),
        (".DS_Store", HiddenKind.OTHER),
    ],
)
def test_hidden(name, kind):
    h = HiddenEntry.parse(name)
    assert h.kind is kind and h.format() == name
    assert kind.leftover == (
        kind in (HiddenKind.TMP, HiddenKind.TASK_TMP, HiddenKind.HIVE_STAGING, HiddenKind.ACIDCTL_STAGING)
    )


def test_parse_name_dispatch():
    assert isinstance(parse_name("base_0000001", is_dir=True), BaseDir)
    assert isinstance(parse_name("delete_delta_0000001_0000001_0000", is_dir=True), DeltaDir)
    assert parse_name("delta_bad", is_dir=True) is None
    assert isinstance(parse_name("HIVE_UNION_SUBDIR_1", is_dir=True), UnionSubdir)
    assert parse_name("other", is_dir=True) is None
    assert isinstance(parse_name("bucket_00000", is_dir=False), BucketFile)
    assert isinstance(parse_name("bucket_00000_flush_length", is_dir=False), FlushLengthFile)
    assert isinstance(parse_name("000000_0", is_dir=False), OriginalFile)
    assert isinstance(parse_name("_orc_acid_version", is_dir=False), HiddenEntry)
    assert dn.is_partition_dir("p=1") and dn.is_partition_dir("ds=2020-01-01")
    assert not dn.is_partition_dir("_p=1") and not dn.is_partition_dir("base_1")


# -- properties ---------------------------------------------------------------------------

wid = st.integers(min_value=0, max_value=LONG_MAX)
small_wid = st.integers(min_value=0, max_value=10**9)
stmt = st.integers(min_value=-1, max_value=2**31 - 1)
vis = st.integers(min_value=0, max_value=LONG_MAX)


@st.composite
def deltas(draw):
    lo = draw(wid)
    hi = draw(st.integers(min_value=lo, max_value=LONG_MAX))
    return DeltaDir(lo, hi, draw(stmt), draw(vis), draw(st.booleans()))


bases = st.builds(BaseDir, st.one_of(wid, st.just(LONG_MIN)), vis)
buckets = st.builds(BucketFile, st.integers(0, 2**31 - 1), st.one_of(st.none(), st.integers(0, 10**6)))
originals = st.builds(
    OriginalFile, st.integers(0, 2**31 - 1), st.integers(0, 10**6), st.one_of(st.none(), st.integers(0, 10**6))
)


@given(st.one_of(deltas(), bases, buckets, originals, st.builds(UnionSubdir, st.integers(0, 10**6))))
def test_parse_format_roundtrip_objects(obj):
    assert type(obj).parse(obj.format()) == obj


def _digits(draw, lo, hi, min_width):
    n = draw(st.integers(lo, hi))
    w = draw(st.integers(min_width, min_width + 3))
    return "%0*d" % (w, n)


@st.composite
def canonical_names(draw):
    kind = draw(st.sampled_from(["base", "delta", "delete_delta", "bucket", "orig"]))
    if kind == "base":
        n = draw(
            st.one_of(
                st.just("-9223372036854775808"), st.builds(lambda v, w: "%0*d" % (w, v), small_wid, st.integers(1, 10))
            )
        )
        s = "base_" + n
        if draw(st.booleans()):
            s += "_v" + "%0*d" % (draw(st.integers(1, 10)), draw(small_wid))
        return s
    if kind in ("delta", "delete_delta"):
        lo = draw(small_wid)
        hi = draw(st.integers(lo, lo + 1000))
        s = f"{kind}_" + "%0*d" % (draw(st.integers(1, 10)), lo) + "_" + "%0*d" % (draw(st.integers(1, 10)), hi)
        if draw(st.booleans()):
            s += "_" + "%0*d" % (draw(st.integers(1, 6)), draw(st.integers(0, 9999)))
        if draw(st.booleans()):
            s += "_v" + "%0*d" % (draw(st.integers(1, 10)), draw(small_wid))
        return s
    if kind == "bucket":
        s = "bucket_" + "%0*d" % (draw(st.integers(1, 6)), draw(st.integers(0, 4095)))
        if draw(st.booleans()):
            s += "_" + str(draw(st.integers(0, 99)))
        return s
    s = "%0*d" % (draw(st.integers(1, 6)), draw(st.integers(0, 4095))) + "_" + str(draw(st.integers(0, 9)))
    if draw(st.booleans()):
        s += "_copy_" + str(draw(st.integers(1, 99)))
    return s


@given(canonical_names())
def test_format_parse_roundtrip_names(name):
    obj = parse_name(name, is_dir=not name[0].isdigit() and not name.startswith("bucket_"))
    assert obj is not None, name
    assert obj.format() == name
