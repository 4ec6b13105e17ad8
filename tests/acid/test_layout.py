"""TableFS directory → listing model, one ls per directory level (real fixtures copied to tmp)."""

import shutil
from pathlib import Path

import pytest

from acidctl.acid.acidstate import get_acid_state
from acidctl.acid.checks import check_markers
from acidctl.acid import layout
from acidctl.acid.layout import list_partition, list_table
from acidctl.acid.writeids import WriteIdList
from acidctl.fs import TableFS

from tests.conftest import REAL

from .helpers import COMPACTED

FIXTURES = REAL


@pytest.fixture
def counted(monkeypatch):
    calls = {"ls": [], "read": []}
    orig_ls, orig_read = TableFS.ls, layout._read_small

    def ls(self, path):
        calls["ls"].append(path)
        return orig_ls(self, path)

    def read_small(tfs, path):
        calls["read"].append(path)
        return orig_read(tfs, path)

    monkeypatch.setattr(TableFS, "ls", ls)
    monkeypatch.setattr(layout, "_read_small", read_small)
    return calls


def mk(root: Path, spec: dict):
    for name, value in spec.items():
        p = root / name
        if isinstance(value, dict):
            p.mkdir(parents=True, exist_ok=True)
            mk(p, value)
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(value if isinstance(value, bytes) else b"x" * value)


def test_unpartitioned_one_ls_per_level(tmp_path, counted):
    t = tmp_path / "t"
    mk(
        t,
        {
            "base_0000001": {"bucket_00000": 40, "_orc_acid_version": b"2", "_metadata_acid": COMPACTED},
            "delta_0000002_0000002_0000": {
                "bucket_00000": 7,
                "_orc_acid_version": b"2",
                "bucket_00000_flush_length": b"\0" * 8,
            },
            "delete_delta_0000002_0000002_0000": {"bucket_00000": 3, "_orc_acid_version": b"2"},
            "_tmp_123": {"junk": {"deeper": 5}},
            ".hive-staging_x": {"a": 1},
            "HIVE_UNION_SUBDIR_1": {"000000_0": 5, "sub": {"000001_0": 6}, "_hidden": {"x": 1}},
            "000000_0": 9,
        },
    )
    tfs = TableFS(str(t))
    [lst] = list_table(tfs)
    # root, base, 2 deltas, union dir and its non-hidden subdir: 6 listings; hidden dirs never listed
    assert len(counted["ls"]) == 6
    assert sorted(Path(p).name for p in counted["ls"]) == sorted(
        [
            "t",
            "base_0000001",
            "delta_0000002_0000002_0000",
            "delete_delta_0000002_0000002_0000",
            "HIVE_UNION_SUBDIR_1",
            "sub",
        ]
    )
    # only marker files were read
    assert sorted(Path(p).name for p in counted["read"]) == [
        "_metadata_acid",
        "_orc_acid_version",
        "_orc_acid_version",
        "_orc_acid_version",
        "bucket_00000_flush_length",
    ]
    by = {e.name: e for e in lst.entries}
    assert lst.partition is None and lst.path == str(t) and lst.fs_path == str(t)
    assert by["base_0000001"].markers == {"_orc_acid_version": b"2", "_metadata_acid": COMPACTED}
    assert by["base_0000001"].total_bytes == 40 + 1 + len(COMPACTED)
    assert not by["_tmp_123"].listed and by["_tmp_123"].files == ()
    assert [f.name for f in by["HIVE_UNION_SUBDIR_1"].files] == ["000000_0", "sub/000001_0"]
    assert by["000000_0"].size == 9 and not by["000000_0"].is_dir
    st = get_acid_state(lst, WriteIdList.all_committed(2))
    assert st.base.name == "base_0000001" and st.base.compacted
    assert [d.name for d in st.deltas] == ["delete_delta_0000002_0000002_0000", "delta_0000002_0000002_0000"]


def test_threaded_listing_is_identical(tmp_path, counted):
    t = tmp_path / "t"
    mk(t, {f"delta_{i:07d}_{i:07d}_0000": {"bucket_00000": i, "_orc_acid_version": b"2"} for i in range(1, 30)})
    mk(t, {"HIVE_UNION_SUBDIR_1": {"000000_0": 5}, "000000_0": 3})
    tfs = TableFS(str(t))
    seq = list_partition(tfs, str(t), workers=1)
    n_seq = len(counted["ls"])
    par = list_partition(tfs, str(t), workers=4)
    assert par == seq and len(counted["ls"]) == 2 * n_seq == 2 * 31


def test_partitioned_table(tmp_path, counted):
    t = tmp_path / "t"
    mk(
        t,
        {
            "p=1": {
                "q=a": {"delta_0000001_0000001_0000": {"bucket_00000": 1, "_orc_acid_version": b"2"}},
                "q=b": {"delta_0000002_0000002_0000": {"bucket_00000": 1, "_orc_acid_version": b"2"}},
            },
            "p=2": {"q=a": {"base_0000003": {"bucket_00000": 1}}},
            "_tmp_x": {"a": 1},
            ".hive-staging_1": {"b": 1},
        },
    )
    listings = list_table(TableFS(str(t)))
    assert [lst.partition for lst in listings] == ["p=1/q=a", "p=1/q=b", "p=2/q=a"]
    assert listings[0].path == str(t / "p=1" / "q=a")
    # root + p=1 + p=2 + 3 leaf partitions + 3 acid dirs
    assert len(counted["ls"]) == 9


def test_partition_dir_given_directly(tmp_path):
    t = tmp_path / "t" / "p=1"
    mk(t, {"delta_0000001_0000001_0000": {"bucket_00000": 1}})
    [lst] = list_table(TableFS(str(t)))
    assert lst.partition is None and [e.name for e in lst.entries] == ["delta_0000001_0000001_0000"]


def test_key_value_dirs_next_to_acid_dirs_are_originals(tmp_path):
    t = tmp_path / "t"
    mk(t, {"delta_0000001_0000001_0000": {"bucket_00000": 1}, "k=v": {"000000_0": 3}})
    [lst] = list_table(TableFS(str(t)))
    assert {e.name for e in lst.entries} == {"delta_0000001_0000001_0000", "k=v"}


def test_memory_filesystem():
    tfs = TableFS("memory://acidctl-layout-test/t")
    tfs.write_bytes("/acidctl-layout-test/t/delta_0000001_0000001_0000/bucket_00000", b"abc")
    tfs.write_bytes("/acidctl-layout-test/t/delta_0000001_0000001_0000/_orc_acid_version", b"2")
    try:
        [lst] = list_table(tfs)
        assert lst.path.startswith("memory://")
        [e] = lst.entries
        assert e.markers == {"_orc_acid_version": b"2"} and e.total_bytes == 4
    finally:
        tfs.rm("/acidctl-layout-test", recursive=True)


# -- the real fixtures (copied; never written in place) --------------------------------------


def test_trino_fullacid_delete_delta_test(tmp_path):
    t = tmp_path / "t"
    shutil.copytree(FIXTURES / "trino" / "fullacid_delete_delta_test", t)
    [lst] = list_table(TableFS(str(t)))
    sizes = {e.name: e.total_bytes for e in lst.entries}
    assert sizes == {
        "delete_delta_0000004_0000004": 646,
        "delete_delta_0000004_0000004_0000": 646,
        "delete_delta_0000007_0000007_0000": 655,
    }
    st = get_acid_state(lst, WriteIdList.parse("db.t:7:9223372036854775807::"))
    # README §4 (derived): statement -1 sorts first and is taken, _0000 is obsolete
    assert [d.name for d in st.deltas] == ["delete_delta_0000004_0000004", "delete_delta_0000007_0000007_0000"]
    assert [c.name for c in st.obsolete] == ["delete_delta_0000004_0000004_0000"]
    # no _orc_acid_version anywhere in the Trino copies: M01 for each directory
    assert [f.check for f in check_markers(lst, hive_version=3)] == ["M01"] * 3


def test_qubole_dummy_id_data_orc(tmp_path):
    t = tmp_path / "t"
    shutil.copytree(FIXTURES / "prestosql-qubole" / "dummy_id_data_orc", t)
    [lst] = list_table(TableFS(str(t)))
    st = get_acid_state(lst, WriteIdList.parse("db.t:2:9223372036854775807::"))
    assert st.base is None
    assert [(o.rel, o.size, o.bucket) for o in st.originals] == [
        ("000000_0", 730, 0),
        ("000001_0", 730, 1),
        ("000002_0", 741, 2),
        ("000002_0_copy_1", 768, 2),
        ("000002_0_copy_2", 743, 2),
    ]
    assert [d.name for d in st.deltas] == ["delete_delta_0000001_0000001_0000", "delete_delta_0000002_0000002_0000"]
    assert check_markers(lst, hive_version=3) == []  # real _orc_acid_version files, content "2"
    by = {e.name: e for e in lst.entries}
    assert by["delete_delta_0000001_0000001_0000"].markers == {"_orc_acid_version": b"2"}


def test_trino_original_files_with_eight_digit_write_id(tmp_path):
    t = tmp_path / "t"
    shutil.copytree(FIXTURES / "trino" / "fullacidNationTableWithOriginalFiles", t)
    [lst] = list_table(TableFS(str(t)))
    st = get_acid_state(lst, WriteIdList.all_committed(10000001))
    assert [(o.rel, o.size) for o in st.originals] == [("000000_0", 1780)]
    assert [d.name for d in st.deltas] == ["delete_delta_10000001_10000001_0000"]
    assert st.deltas[0].max_write_id == 10000001


def test_nation_layout_assembled(tmp_path):
    """README §1: the insert file under delta_2, the two delete deltas 3 and 4."""
    t = tmp_path / "t"
    (t / "delta_0000002_0000002_0000").mkdir(parents=True)
    shutil.copy(
        FIXTURES / "trino" / "nationFile25kRowsSortedOnNationKey" / "bucket_00000",
        t / "delta_0000002_0000002_0000" / "bucket_00000",
    )
    for d in ("delete_delta_0000003_0000003_0000", "delete_delta_0000004_0000004_0000"):
        shutil.copytree(FIXTURES / "trino" / "nation_delete_deltas" / d, t / d)
    [lst] = list_table(TableFS(str(t)))
    st = get_acid_state(lst, WriteIdList.parse("db.t:4:9223372036854775807::"))
    assert [(d.name, d.bytes) for d in st.deltas] == [
        ("delta_0000002_0000002_0000", 11406),
        ("delete_delta_0000003_0000003_0000", 873),
        ("delete_delta_0000004_0000004_0000", 882),
    ]


def test_subdirs_and_max_write_id_in_tree(tmp_path):
    """TableFS.subdirs: the directories only (symlinks to directories followed, as ls does),
    sorted; the highest write id of every partition's directory names, hidden ones skipped."""
    import os

    from acidctl.target import max_write_id_in_tree

    mk(
        tmp_path / "t",
        {
            "p=1": {"delta_0000003_0000007_0000": {"bucket_00000": 1}, "base_0000002": {"bucket_00000": 1}, "_tmp": {}},
            "p=2": {
                "delete_delta_0000009_0000009_0000": {"bucket_00000": 1},
                ".hive-staging_x": {"delta_0000099_0000099_0000": {}},
                "delta_0000050_0000050_0000.tmp": {},
            },
            "000000_0": 3,
        },
    )
    os.symlink(tmp_path / "t" / "p=1", tmp_path / "t" / "p=3")
    tfs = TableFS(str(tmp_path / "t"))
    names = [e.name for e in tfs.subdirs(str(tmp_path / "t"))]
    assert names == ["p=1", "p=2", "p=3"]
    assert [e.name for e in tfs.subdirs(str(tmp_path / "t" / "p=2"))] == sorted(
        n for n in os.listdir(tmp_path / "t" / "p=2") if (tmp_path / "t" / "p=2" / n).is_dir()
    )
    # p=1: 7 (delta 3..7); p=2: 9 (the hidden staging dir's 99 and a non-ACID name don't count)
    assert max_write_id_in_tree(tfs) == 9


def test_subdirs_remote():
    tfs = TableFS("memory://acidctl-subdirs-test/t")
    tfs.write_bytes("/acidctl-subdirs-test/t/delta_0000004_0000004_0000/bucket_00000", b"abc")
    tfs.write_bytes("/acidctl-subdirs-test/t/_orc_acid_version_not_a_dir", b"2")
    try:
        from acidctl.target import max_write_id_in_tree

        assert [e.name for e in tfs.subdirs("/acidctl-subdirs-test/t")] == ["delta_0000004_0000004_0000"]
        assert max_write_id_in_tree(tfs) == 4
    finally:
        tfs.rm("/acidctl-subdirs-test", recursive=True)


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 4097, 70_000, layout.MAX_MARKER_BYTES, layout.MAX_MARKER_BYTES + 1])
def test_marker_read_sizes(tmp_path, size):
    """Local marker reads start small and read on: any size up to the limit comes back whole,
    a bigger file its first MAX_MARKER_BYTES + 1 bytes (what the M checks need to see it is too
    big), the same as one read of that many bytes."""
    data = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
    p = tmp_path / "_orc_acid_version"
    p.write_bytes(data + b"tail" * 4)
    expected = (data + b"tail" * 4)[: layout.MAX_MARKER_BYTES + 1]
    assert layout._read_small(TableFS(str(tmp_path)), str(p)) == expected
    assert layout._read_small(TableFS(str(tmp_path)), str(tmp_path / "gone")) is None
