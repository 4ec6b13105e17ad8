"""``clean --trash``: obsolete directories are moved (full path kept under the trash root), never
deleted; the dry run lists every path with byte totals."""

from __future__ import annotations

import json

from tests.acidfiles import B0, acid_file
from tests.compact.helpers import ALL, merged
from tests.webhdfs_server import WebHDFS

ROW = (
    "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
    "row:struct<id:int,name:string>>"
)
SNAP = f"db.t:2:{ALL}::"


def _compacted(root):
    for w in (1, 2):
        acid_file(
            root / f"delta_{w:07d}_{w:07d}_0000" / "bucket_00000",
            ROW,
            [(0, w, B0, r, w, (w * 10 + r, f"w{w}")) for r in range(3)],
        )
    acid_file(
        root / "base_0000002" / "bucket_00000",
        ROW,
        [(0, w, B0, r, w, (w * 10 + r, f"w{w}")) for w in (1, 2) for r in range(3)],
    )
    (root / "base_0000002" / "_metadata_acid").write_bytes(b'{"thisFileVersion":"0","dataFormat":"compacted"}')
    (root / "base_0000002" / "_orc_acid_version").write_bytes(b"2")
    return root


def test_trash_moves_with_the_full_path_and_never_overwrites(tmp_path, cli):
    t = _compacted(tmp_path / "w" / "t")
    trash = tmp_path / "trash"
    want = merged(t, SNAP)
    d1 = (t / "delta_0000001_0000001_0000" / "bucket_00000").read_bytes()
    dry = cli("-o", "json", "clean", "--min-age", "0", "--trash", trash, "--write-ids", SNAP, t)
    assert dry.code == 0, dry
    doc = json.loads(dry.stdout)
    assert {i["path"].rsplit("/", 1)[-1] for i in doc["items"] if i["action"] == "move to trash"} == {
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
    }
    assert doc["summary"]["bytes_by_kind"]["delta"] == sum(i["bytes"] for i in doc["items"])
    assert not trash.exists()
    r = cli("-o", "json", "clean", "--execute", "--min-age", "0", "--trash", trash, "--write-ids", SNAP, t)
    assert r.code == 0, r
    moved = trash / str(t).lstrip("/") / "delta_0000001_0000001_0000" / "bucket_00000"
    assert moved.read_bytes() == d1
    assert not (t / "delta_0000001_0000001_0000").exists() and merged(t, SNAP) == want
    # the same names again: a suffix, nothing overwritten
    acid_file(t / "delta_0000001_0000001_0000" / "bucket_00000", ROW, [(0, 1, B0, 0, 1, (99, "again"))])
    assert cli("clean", "--execute", "--min-age", "0", "--trash", trash, "--write-ids", SNAP, t).code == 0
    assert moved.read_bytes() == d1
    assert (trash / str(t).lstrip("/") / "delta_0000001_0000001_0000.1" / "bucket_00000").is_file()


def test_trash_on_another_filesystem_is_refused(tmp_path, cli):
    t = _compacted(tmp_path / "t")
    r = cli("clean", "--execute", "--min-age", "0", "--trash", "s3://bucket/trash", "--write-ids", SNAP, t)
    assert r.code == 2 and "another filesystem" in r.stderr, r
    assert (t / "delta_0000001_0000001_0000").is_dir()
    r = cli("clean", "--execute", "--min-age", "0", "--trash", "hdfs", "--write-ids", SNAP, t)
    assert r.code == 2 and "HDFS" in r.stderr


def test_hadoop_trash_over_webhdfs(tmp_path, cli, monkeypatch):
    root = tmp_path / "hdfs"
    _compacted(root / "warehouse" / "t")
    monkeypatch.setenv("HADOOP_USER_NAME", "hive")
    with WebHDFS(str(root)) as server:
        url = server.url("/warehouse/t")
        r = cli("-o", "json", "clean", "--execute", "--min-age", "0", "--trash", "hdfs", "--write-ids", SNAP, url)
        assert r.code == 0, r
        doc = json.loads(r.stdout)
    dest = root / "user" / "hive" / ".Trash" / "Current" / "warehouse" / "t" / "delta_0000002_0000002_0000"
    assert (dest / "bucket_00000").is_file()
    assert sorted(doc["trashed"]) == sorted(i["path"] for i in doc["items"] if i["kind"] == "delta")
    assert not (root / "warehouse" / "t" / "delta_0000002_0000002_0000").exists()
