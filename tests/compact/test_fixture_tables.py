"""Major and minor compaction of every real fixture table and of the demo warehouse: the merged
read after equals the merged read before, ``state`` finds no errors, and the output is laid out
as Hive's compactor writes it (orc-acid-files.md §12)."""

from __future__ import annotations

import json

import pytest

from acidctl.acid.writeids import TxnList
from acidctl.fs import TableFS
from acidctl.orc.meta import inspect_file
from tests.compact.helpers import (
    ALL,
    compact,
    demo_warehouse,
    fixture_tables,
    merged,
    nation_table,
    new_dirs,
    state_errors,
)

pytestmark = pytest.mark.spark

METADATA = b'{"thisFileVersion":"0","dataFormat":"compacted"}'


def _check_outputs(root, dirs, *, hive_version=3, allow=()):
    for d in dirs:
        assert (d / "_orc_acid_version").read_bytes() == b"2"
        if d.name.startswith("base_") and hive_version == 3:
            assert (d / "_metadata_acid").read_bytes() == METADATA
        else:
            assert not (d / "_metadata_acid").exists()
        kind = "base" if d.name.startswith("base_") else "delete_delta" if d.name.startswith("delete_") else "delta"
        for f in d.iterdir():
            if f.name.startswith("_"):
                continue
            assert f.name.startswith("bucket_") and len(f.name) == len("bucket_00000")
            rep = inspect_file(TableFS(str(d)), str(f), dir_kind=kind, expect_acid=True, hive_version=hive_version)
            assert [x for x in rep.findings if x.severity.value != "info" and x.check not in allow] == [], rep.findings
            assert rep.compression == "ZLIB"
            assert rep.user_metadata["hive.acid.version"] == "2"


@pytest.mark.parametrize("mode", ["major", "minor"])
def test_every_fixture_table(tmp_path, spark, mode):
    for name, root, wids, cols in fixture_tables(tmp_path):
        before = merged(root, wids)
        dirs_before = {p for p in root.rglob("*") if p.is_dir()}
        rep = compact(root, mode, wids, spark=spark, columns=cols)
        after = merged(root, wids)
        assert after == before, name
        assert state_errors(root, wids) == [], name
        made = new_dirs(root, dirs_before)
        if rep["nothing_to_compact"]:
            assert made == [], name
        else:
            assert made, name
            # Hive 2.3's seed table carries V0 bucket values (F10 warning) that compaction keeps
            _check_outputs(root, made, allow={"F10"} if name == "hive23-seed" else ())
        assert not [p for p in root.rglob(".acidctl-*") if p.name != ".acidctl-published"], name


def test_nation_major_writes_base_4_with_23000_rows_and_kept_row_ids(tmp_path, spark):
    t = nation_table(tmp_path)
    compact(t, "major", f"db.t:4:{ALL}::", spark=spark)
    f = t / "base_0000004" / "bucket_00000"
    assert f.exists()
    rep = inspect_file(TableFS(str(t)), str(f))
    assert rep.rows == 23000  # 25,000 minus the 2 x 1,000 deleted (README §1)
    assert rep.user_metadata["hive.acid.stats"] == "23000,0,0"
    rows = merged(t, f"db.t:4:{ALL}::")
    # row ids 5000..5999 (ETHIOPIA) and 19000..19999 (ROMANIA) are gone, the rest unchanged
    ids = sorted(k[3] for k in rows)
    assert ids == [i for i in range(25000) if not (5000 <= i < 6000 or 19000 <= i < 20000)]
    assert {k[1:3] for k in rows} == {(2, 536870912)}


def test_open_write_id_is_never_folded(tmp_path, spark):
    t = nation_table(tmp_path)
    rep = compact(t, "major", "db.t:4:4:4:", spark=spark)
    # compactor hwm = 3: base_3 holds delta 2 minus delete delta 3; delete delta 4 stays outside
    assert rep["compactor_write_ids"].startswith("db.t:3:")
    assert (t / "base_0000003").is_dir() and not (t / "base_0000004").exists()
    assert merged(t, "db.t:4:4:4:") == merged(nation_table(tmp_path / "x"), "db.t:4:4:4:")
    # once 4 commits, its deletes still apply on top of the compacted base
    assert len(merged(t, f"db.t:4:{ALL}::")) == 23000


def test_originals_without_deltas_give_the_conversion_base(tmp_path, spark):
    from tests.compact.helpers import copy_real

    t = copy_real(tmp_path, "trino/dummy_id_data_orc")
    for d in t.glob("delete_delta_*"):
        import shutil

        shutil.rmtree(d)
    before = merged(t, f"db.t:1:{ALL}::")
    assert len(before) == 20
    compact(t, "major", f"db.t:1:{ALL}::", spark=spark)
    # Hive's CompactorMR would name it base_-9223372036854775808 (Long.MIN_VALUE); acidctl never
    # puts a negative write id in a name (issue #9): base_0 covers exactly the originals' write id 0
    base = t / "base_0000000"
    assert not (t / "base_-9223372036854775808").exists()
    assert sorted(p.name for p in base.iterdir()) == [
        "_metadata_acid",
        "_orc_acid_version",
        "bucket_00000",
        "bucket_00001",
        "bucket_00002",
    ]
    assert merged(t, f"db.t:1:{ALL}::") == before
    # the synthetic ROW__IDs are kept: 000002_0_copy_2 starts at rowId 8 of bucket 2
    assert {k[3] for k in before if k[2] == 537001984} == set(range(12))


def test_delete_deltas_only_major_makes_an_empty_base(tmp_path, spark):
    from tests.compact.helpers import copy_real

    t = copy_real(tmp_path, "trino/fullacid_delete_delta_test")
    compact(t, "major", f"db.t:7:{ALL}::", spark=spark)
    base = t / "base_0000007"
    assert sorted(p.name for p in base.iterdir()) == ["_metadata_acid", "_orc_acid_version"]


def test_hive4_names_with_visibility_txn(tmp_path, spark):
    t = nation_table(tmp_path)
    before = merged(t, f"db.t:4:{ALL}::")
    compact(t, "major", f"db.t:4:{ALL}::", spark=spark, hive_version=4, visibility_txn=17)
    assert (t / "base_0000004_v0000017").is_dir()
    assert not (t / "base_0000004_v0000017" / "_metadata_acid").exists()
    txns = TxnList.parse(f"20:{ALL}::")
    assert merged(t, f"db.t:4:{ALL}::", hive_version=4, txns=txns) == before
    # while the compactor txn is open, Hive 4 readers skip the new base
    assert merged(t, f"db.t:4:{ALL}::", hive_version=4, txns=TxnList.parse("20:17:17:")) == before
    assert state_errors(t, f"db.t:4:{ALL}::", hive_version=4, txns=f"20:{ALL}::") == []


def test_hive4_minor(tmp_path, spark):
    t = nation_table(tmp_path)
    before = merged(t, f"db.t:4:{ALL}::")
    compact(t, "minor", f"db.t:4:{ALL}::", spark=spark, hive_version=4, visibility_txn=9)
    assert (t / "delta_0000002_0000004_v0000009").is_dir()
    assert (t / "delete_delta_0000002_0000004_v0000009").is_dir()
    assert merged(t, f"db.t:4:{ALL}::", hive_version=4, txns=TxnList.parse(f"9:{ALL}::")) == before


@pytest.mark.parametrize("mode", ["major", "minor"])
def test_demo_warehouse(tmp_path, spark, mode):
    wh, wids = demo_warehouse(tmp_path)
    for name in ("employee", "sales"):
        root = wh / name
        before = merged(root, wids[name])
        rep = compact(root, mode, wids[name], spark=spark)
        assert merged(root, wids[name]) == before
        assert state_errors(root, wids[name]) == []
        assert rep["compacted"] >= 1
    if mode == "major":
        assert (wh / "sales" / "ds=2025-12-31" / "base_0000002").is_dir()
        # write 4 was aborted: its delta is covered and its rows dropped
        assert (wh / "sales" / "ds=2026-01-01" / "base_0000006").is_dir()
        assert (wh / "employee" / "base_0000003").is_dir()
    else:
        assert (wh / "employee" / "delta_0000001_0000003").is_dir()
        assert (wh / "employee" / "delete_delta_0000001_0000003").is_dir()
        # the partition with only originals + write 1 delete + write 2 insert: deltas 1..2
        assert (wh / "sales" / "ds=2025-12-31" / "delta_0000001_0000002").is_dir()


def test_cli_json_metrics_and_dump_meta(tmp_path, cli):
    """The CLI (local engine, no JVM) reports one metrics record per partition; dump --meta
    passes every produced file."""
    wh, wids = demo_warehouse(tmp_path)
    r = cli("-o", "json", "compact", "--major", "--engine", "local", "--write-ids", wids["sales"], wh / "sales")
    assert r.code == 0, r
    doc = json.loads(r.stdout)
    assert [p["partition"] for p in doc["partitions"]] == ["ds=2025-12-31", "ds=2026-01-01"]
    p2 = doc["partitions"][1]
    # ds=2026-01-01: 10 + 2 (aborted) + 1 + 1 inserted; 2 aborted dropped; ids 10 (old), 11, 12 deleted
    assert (p2["rows_in"], p2["aborted_dropped"], p2["deletes_applied"], p2["rows_out"]) == (14, 2, 3, 9)
    assert p2["output_dirs"] == ["base_0000006"] and p2["bytes_out"] > 0 and p2["bytes_in"] > 0
    for key in ("input_dirs", "seconds" if False else "task_seconds", "peak_task_memory_bytes"):
        assert key in p2
    r = cli("dump", "--meta", wh / "sales" / "ds=2026-01-01" / "base_0000006")
    assert r.code == 0 and "0 errors, 0 warnings" in r.stdout, r


def test_empty_files_are_ignored(tmp_path):
    """Hive's compactor ignores empty files (orc-acid-files.md §12.1)."""
    t = nation_table(tmp_path)
    (t / "delta_0000002_0000002_0000" / "bucket_00001").write_bytes(b"")
    compact(t, "major", f"db.t:4:{ALL}::")
    assert sorted(p.name for p in (t / "base_0000004").iterdir()) == [
        "_metadata_acid",
        "_orc_acid_version",
        "bucket_00000",
    ]
    assert len(merged(t, f"db.t:4:{ALL}::")) == 23000


def test_any_fsspec_filesystem_local_engine(tmp_path):
    """Everything goes through TableFS: a memory:// table compacts like a local one."""
    import dataclasses
    import uuid

    from acidctl.acid.writeids import WriteIdList
    from acidctl.errors import RefusedError
    from acidctl.compact.runner import CompactOptions, compact_table

    src = nation_table(tmp_path)
    tfs = TableFS(f"memory://acidctl-{uuid.uuid4().hex[:8]}/nation")
    for f in src.rglob("*"):
        if f.is_file():
            tfs.write_bytes(tfs.join(tfs.root, str(f.relative_to(src))), f.read_bytes())
    wl = WriteIdList.parse(f"db.t:4:{ALL}::")
    opts = CompactOptions(mode="major", reader=wl, engine="local")
    with pytest.raises(RefusedError, match="memory:// copies file by file"):
        compact_table(tfs, opts)  # memory:// "renames" by copying, like an object store
    assert not [e.name for e in tfs.ls(tfs.root) if e.name.startswith(".acidctl")]
    rep = compact_table(tfs, dataclasses.replace(opts, allow_non_atomic_publish=True))
    assert rep["partitions"][0]["rows_out"] == 23000
    assert rep["partitions"][0]["publish"] == "non-atomic"
    assert any("non-atomic publication" in n for n in rep["notes"])
    names = sorted(e.name for e in tfs.ls(tfs.root))
    assert "base_0000004" in names and not [n for n in names if n.startswith(".acidctl") and n != ".acidctl-published"]
    assert sorted(e.name for e in tfs.ls(tfs.join(tfs.root, "base_0000004"))) == [
        "_metadata_acid",
        "_orc_acid_version",
        "bucket_00000",
    ]
