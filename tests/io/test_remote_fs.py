"""dump, state, merged reads and the demo over HDFS (WebHDFS wire protocol) and S3.

No real HDFS can run here: tests/webhdfs_server.py speaks the WebHDFS REST protocol over a
local directory, NameNode→DataNode redirects included. S3 runs against moto's S3-compatible
server on loopback."""

from __future__ import annotations

import json

import pytest

from tests.conftest import REAL
from tests.webhdfs_server import WebHDFS

ALL = "9223372036854775807"
NATION = REAL / "trino" / "nationFile25kRowsSortedOnNationKey" / "bucket_00000"


@pytest.fixture
def hdfs(tmp_path):
    root = tmp_path / "hdfs"
    root.mkdir()
    with WebHDFS(str(root)) as server:
        yield server


def _nation(root):
    from tests.acidfiles import nation_table

    return nation_table(root / "warehouse", markers=True)


def test_dump_over_webhdfs_equals_local(cli, hdfs, tmp_path):
    t = _nation(tmp_path / "hdfs")
    local = cli("dump", t / "delta_0000002_0000002_0000" / "bucket_00000")
    remote = cli("dump", hdfs.url("/warehouse/nation/delta_0000002_0000002_0000/bucket_00000"))
    assert remote.code == 0, remote
    assert remote.stdout_bytes == local.stdout_bytes
    assert hdfs.ops["OPEN"] >= 1


def test_state_over_webhdfs_lists_each_directory_once(cli, hdfs, tmp_path):
    _nation(tmp_path / "hdfs")
    r = cli("-o", "json", "state", "--write-ids", f"db.t:4:{ALL}::", hdfs.url("/warehouse/nation"))
    assert r.code == 0, r
    roles = {e["name"]: e["role"] for p in json.loads(r.stdout)["partitions"] for e in p["entries"]}
    assert roles == {
        "delta_0000002_0000002_0000": "delta",
        "delete_delta_0000003_0000003_0000": "delete delta",
        "delete_delta_0000004_0000004_0000": "delete delta",
    }
    assert hdfs.ops["LISTSTATUS"] == 1 + 3  # the table and each child directory, once


def test_merged_read_over_webhdfs(cli, hdfs, tmp_path):
    _nation(tmp_path / "hdfs")
    r = cli("-o", "json", "dump", "--merged", "--write-ids", f"db.t:4:{ALL}::", hdfs.url("/warehouse/nation"))
    assert r.code == 0, r
    keys = {json.loads(x)["n_nationkey"] for x in r.stdout.splitlines()}
    assert len(r.stdout.splitlines()) == 23000 and keys == set(range(25)) - {5, 19}


def test_demo_written_over_webhdfs_reads_back(cli, hdfs):
    assert cli("demo", hdfs.url("/demo")).code == 0
    r = cli(
        "-o",
        "json",
        "dump",
        "--merged",
        "--write-ids",
        f"default.employee:3:{ALL}::",
        hdfs.url("/demo/warehouse/employee"),
    )
    assert sorted(json.loads(x)["name"] for x in r.stdout.splitlines()) == ["Jerry", "Mary", "Tom"]
    assert hdfs.ops["CREATE"] > 0


def test_webhdfs_delegation_token_and_proxy_user_reach_every_namenode_request(cli, hdfs, tmp_path):
    """Secured clusters without the hdfs (HdfsCLI) package: `--fs-option token=...` (a
    delegation token), `user=` and `proxy_to=` are fsspec WebHDFS arguments; WebHDFS's REST
    API names them `delegation`, `user.name` and `doas` on every NameNode request (a token
    carries the user itself: fsspec refuses it together with `user`/`proxy_to`)."""
    t = _nation(tmp_path / "hdfs")
    local = cli("dump", t / "delta_0000002_0000002_0000" / "bucket_00000")
    r = cli(
        "--fs-option", "token=TOKEN-abc", "dump", hdfs.url("/warehouse/nation/delta_0000002_0000002_0000/bucket_00000")
    )
    assert r.code == 0, r
    assert r.stdout_bytes == local.stdout_bytes
    assert hdfs.credentials and {c[2] for c in hdfs.credentials} == {"TOKEN-abc"}
    hdfs.credentials.clear()
    r = cli(
        "--fs-option",
        "user=hive",
        "--fs-option",
        "proxy_to=etl",
        "-o",
        "json",
        "state",
        "--write-ids",
        f"db.t:4:{ALL}::",
        hdfs.url("/warehouse/nation"),
    )
    assert r.code == 0, r
    assert hdfs.credentials and {(c[1], c[3]) for c in hdfs.credentials} == {("hive", "etl")}


def test_missing_path_over_webhdfs_exit_3(cli, hdfs):
    r = cli("dump", hdfs.url("/nope/bucket_00000"))
    assert r.code == 3 and "no such file" in r.stderr
    assert f"no such file or directory: {hdfs.url('/nope/bucket_00000')}" in r.stderr  # the URL as given


def test_dead_namenode_exit_5(cli):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    r = cli("dump", f"hdfs://127.0.0.1:{port}/x/bucket_00000")
    assert r.code == 5 and "unavailable" in r.stderr and "Traceback" not in r.stderr
    # names the URL as given (the host too), not the bare path
    assert f"storage unavailable for hdfs://127.0.0.1:{port}/x/bucket_00000:" in r.stderr


# -- S3 ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def s3_server():
    moto_server = pytest.importorskip("moto.server")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def _s3_nation(s3_server, tmp_path, monkeypatch, bucket: str):
    """The nation table uploaded to ``s3://BUCKET/nation``: (boto3 client, local copy)."""
    boto3 = pytest.importorskip("boto3")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    s3 = boto3.client("s3", endpoint_url=s3_server)
    s3.create_bucket(Bucket=bucket)
    t = _nation(tmp_path / "local")
    for p in t.rglob("*"):
        if p.is_file():
            s3.upload_file(str(p), bucket, "nation/" + str(p.relative_to(t)))
    return s3, t


def test_dump_and_merged_read_over_s3(cli, s3_server, tmp_path, monkeypatch):
    s3, t = _s3_nation(s3_server, tmp_path, monkeypatch, "warehouse")
    opt = ["--fs-option", f"endpoint_url={s3_server}"]
    local = cli("dump", t / "delta_0000002_0000002_0000" / "bucket_00000")
    remote = cli(*opt, "dump", "s3://warehouse/nation/delta_0000002_0000002_0000/bucket_00000")
    assert remote.code == 0, remote
    assert remote.stdout_bytes == local.stdout_bytes
    r = cli(*opt, "-o", "json", "dump", "--merged", "--write-ids", f"db.t:4:{ALL}::", "s3://warehouse/nation")
    assert r.code == 0, r
    assert len(r.stdout.splitlines()) == 23000


# -- compaction on remote stores --------------------------------------------------------------


def _merged_rows(cli, *args) -> list[str]:
    r = cli("-o", "json", *args)
    assert r.code == 0, r
    return sorted(r.stdout.splitlines())


def test_compact_over_webhdfs_publishes_with_one_rename(cli, hdfs, tmp_path):
    """HDFS renames a directory atomically: a major compaction is published without any opt-in,
    by one RENAME call, and every staged byte travels over the wire protocol."""
    _nation(tmp_path / "hdfs")
    url, wl = hdfs.url("/warehouse/nation"), f"db.t:4:{ALL}::"
    before = _merged_rows(cli, "dump", "--merged", "--write-ids", wl, url)
    renames = hdfs.ops["RENAME"]
    r = cli("-o", "json", "compact", "--major", "--engine", "local", "--write-ids", wl, url)
    assert r.code == 0, r
    p = json.loads(r.stdout)["partitions"][0]
    assert p["publish"] == "atomic" and p["output_dirs"] == ["base_0000004"]
    assert hdfs.ops["RENAME"] - renames == 1
    base = tmp_path / "hdfs" / "warehouse" / "nation" / "base_0000004"
    assert sorted(x.name for x in base.iterdir()) == ["_metadata_acid", "_orc_acid_version", "bucket_00000"]
    assert not [p for p in (tmp_path / "hdfs").rglob(".acidctl*") if p.name != ".acidctl-published"]
    assert _merged_rows(cli, "dump", "--merged", "--write-ids", wl, url) == before
    r = cli("-o", "json", "state", "--write-ids", wl, url)
    assert r.code == 0 and json.loads(r.stdout)["summary"]["errors"] == 0, r


def test_compact_over_s3_needs_the_non_atomic_opt_in(cli, s3_server, tmp_path, monkeypatch):
    """S3 has no rename: moving base_N copies file by file, so a reader could list a half-copied
    base. Refused by default (exit 6, nothing written); with --allow-non-atomic-publish the
    output is copied (data first, markers last) and reads the same."""
    s3, _ = _s3_nation(s3_server, tmp_path, monkeypatch, "compact")

    def keys():
        return sorted(o["Key"] for o in s3.list_objects_v2(Bucket="compact").get("Contents", []))

    opt = ["--fs-option", f"endpoint_url={s3_server}"]
    url, wl = "s3://compact/nation", f"db.t:4:{ALL}::"
    before_keys = keys()
    before = _merged_rows(cli, *opt, "dump", "--merged", "--write-ids", wl, url)
    r = cli(*opt, "compact", "--major", "--engine", "local", "--write-ids", wl, url)
    assert r.code == 6, r
    assert "s3:// copies file by file" in r.stderr and "--allow-non-atomic-publish" in r.stderr
    assert keys() == before_keys
    r = cli(
        *opt,
        "-o",
        "json",
        "compact",
        "--major",
        "--allow-non-atomic-publish",
        "--engine",
        "local",
        "--write-ids",
        wl,
        url,
    )
    assert r.code == 0, r
    assert json.loads(r.stdout)["partitions"][0]["publish"] == "non-atomic"
    new = sorted(set(keys()) - set(before_keys))
    assert new == [
        "nation/.acidctl-published/base_0000004.json",
        "nation/base_0000004/_metadata_acid",
        "nation/base_0000004/_orc_acid_version",
        "nation/base_0000004/bucket_00000",
    ]
    assert _merged_rows(cli, *opt, "dump", "--merged", "--write-ids", wl, url) == before


def test_hdfs_location_with_the_rpc_port_reads_through_the_webhdfs_port_and_maps_back(hdfs, tmp_path):
    """Hive's locations name the NameNode's RPC port (hdfs://nn:8020/...); ``--fs-option
    port=`` names WebHDFS's HTTP port, which is the one contacted. Hadoop clients' URLs of the
    files keep the location's scheme and authority with the same path (hadoop_url), and map
    back to the path (hadoop_path); webhdfs:// URLs keep theirs, local paths become file://."""
    from acidctl.fs import TableFS

    (tmp_path / "hdfs" / "w" / "t").mkdir(parents=True)
    (tmp_path / "hdfs" / "w" / "t" / "f").write_bytes(b"abc")
    tfs = TableFS("hdfs://127.0.0.1:8020/w/t", {"port": hdfs.port})
    assert [e.name for e in tfs.ls(tfs.root)] == ["f"]
    assert tfs.read_bytes(tfs.root + "/f") == b"abc"
    assert tfs.hadoop_url(tfs.root + "/f") == "hdfs://127.0.0.1:8020/w/t/f"
    assert tfs.hadoop_path("hdfs://127.0.0.1:8020/w/t/f") == "/w/t/f"
    assert tfs.hadoop_path(f"hdfs://127.0.0.1:{hdfs.port}/w/t/f") is None
    web = TableFS(f"webhdfs://127.0.0.1:{hdfs.port}/w/t")
    assert web.hadoop_url(web.root + "/f") == f"webhdfs://127.0.0.1:{hdfs.port}/w/t/f"
    assert TableFS(str(tmp_path)).hadoop_url(str(tmp_path / "x")) == f"file://{tmp_path}/x"
