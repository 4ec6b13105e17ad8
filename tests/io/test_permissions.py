"""Every file and directory acidctl creates has the mode Hive's writers would give it (issue 21,
rule 5: what acidctl writes is readable by whoever could read what it replaced).

Locally a JVM creates a file with 0666 and a directory with 0777, both minus the process umask
(java.io.FileOutputStream / File.mkdirs → open(2)/mkdir(2)): 0644/0755 under umask 022,
0640/0750 under 027, 0664/0775 under 002. The expected modes below are that rule written out,
not what acidctl printed. On HDFS the NameNode decides: WebHDFS CREATE/MKDIRS without a
``permission`` parameter get 644/755 minus ``fs.permissions.umask-mode``
(hadoop-hdfs WebHdfsFileSystem / NamenodeWebHdfsMethods: PermissionParam's default), so acidctl
must send none. New local entries take their parent directory's group, as HDFS gives a new
inode its parent's group."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.compact.conftest import spark  # noqa: F401  (the session-scoped Spark fixture)
from tests.webhdfs_server import WebHDFS

#: umask → (file mode, directory mode) of a file/directory a JVM creates
MODES = {0o022: (0o644, 0o755), 0o027: (0o640, 0o750), 0o002: (0o664, 0o775)}


@pytest.fixture(params=sorted(MODES), ids=lambda m: f"umask{m:03o}")
def umask(request):
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _wrong_modes(root: Path, umask: int) -> list[str]:
    """Every entry under ``root`` (itself included) whose mode is not the rule's."""
    fmode, dmode = MODES[umask]
    bad = []
    for p in [root, *root.rglob("*")]:
        st = os.lstat(p)
        want = dmode if stat.S_ISDIR(st.st_mode) else fmode
        if stat.S_IMODE(st.st_mode) != want:
            bad.append(f"{p.relative_to(root.parent)}: {stat.S_IMODE(st.st_mode):04o} (want {want:04o})")
    return bad


def _entries(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_compact_revert_clean_export_follow_the_umask(cli, tmp_path, umask, monkeypatch):
    """demo → compact (a partition of two buckets on the local engine's worker processes, a
    one-bucket table in-process) → revert --execute → compact again → clean --execute --trash
    → export: every file and directory created on the way (bucket files, markers, publication
    records, the reverted output moved aside, trash, export output, the SQLite metastore) has
    the umask's mode; under umask 022 none is 0600 as the mkstemp'd ORC files were."""
    monkeypatch.setenv("ACIDCTL_LOCAL_POOL_MIN_BYTES", "0")  # the two buckets in two worker processes
    root = tmp_path / "demo"
    assert cli("demo", root).code == 0
    ms = ("--metastore", f"sqlite:///{root / 'metastore.db'}")
    wh = root / "warehouse"
    before = _entries(wh)
    r = cli(
        *ms, "-o", "json", "compact", "--major", "--engine", "local", "default.sales", "--partition", "ds=2026-01-01"
    )
    assert r.code == 0, r
    r = cli(*ms, "-o", "json", "compact", "--major", "--engine", "local", "default.employee")
    assert r.code == 0, r
    created = _entries(wh) - before
    assert any(n.startswith("sales/ds=2026-01-01/base_") and "bucket_0000" in n for n in created), created
    assert any(n.startswith("employee/base_") and n.endswith("bucket_00000") for n in created), created
    assert _wrong_modes(root, umask) == []

    r = cli(*ms, "revert", "--execute", "default.employee")
    assert r.code == 0, r
    r = cli(*ms, "compact", "--major", "--engine", "local", "default.employee")
    assert r.code == 0, r
    trash = tmp_path / "trash"
    r = cli(*ms, "-o", "json", "clean", "--execute", "--min-age", "0", "--trash", trash, "default.employee")
    assert r.code == 0, r
    assert trash.is_dir() and any(p.is_file() for p in trash.rglob("*")), "nothing was moved to the trash"
    out = tmp_path / "export"
    r = cli(*ms, "export", "default.sales", out)
    assert r.code == 0, r
    assert any(p.is_file() for p in out.rglob("*"))
    assert _wrong_modes(root, umask) == []
    assert _wrong_modes(trash, umask) == []
    assert _wrong_modes(out, umask) == []


def test_doctor_outputs_and_metastore_init_follow_the_umask(cli, tmp_path, umask):
    root = tmp_path / "demo"
    assert cli("demo", root).code == 0
    ms = ("--metastore", f"sqlite:///{root / 'metastore.db'}")
    reports = tmp_path / "reports"
    reports.mkdir()
    os.chmod(reports, MODES[umask][1])
    assert cli(*ms, "metrics", "--textfile", reports / "acid.prom").code == 0
    r = cli(*ms, "doctor", "--html", reports / "doctor.html")
    assert (reports / "doctor.html").exists(), r
    r = cli("metastore", "init", "--hive-version", "4", "--url", f"sqlite:///{reports / 'hms.db'}")
    if r.code == 2:  # the URL as the global option
        r = cli("--metastore", f"sqlite:///{reports / 'hms.db'}", "metastore", "init", "--hive-version", "4")
    assert r.code == 0, r
    assert sorted(p.name for p in reports.iterdir()) == ["acid.prom", "doctor.html", "hms.db"]
    assert _wrong_modes(reports, umask) == []
    assert _wrong_modes(root, umask) == []


def test_lock_file_follows_the_umask(tmp_path, umask):
    from acidctl.compact.lock import TableLock
    from acidctl.fs import TableFS

    t = tmp_path / "t"
    t.mkdir()
    os.chmod(t, MODES[umask][1])
    with TableLock(TableFS(str(t))) as lock:
        assert stat.S_IMODE(os.stat(lock.path).st_mode) == MODES[umask][0]


def test_new_entries_take_the_partition_directory_group(cli, tmp_path):
    """A compaction's output gets the group of the partition it replaces files in (HDFS: a
    new inode's group is its parent's), not the process's primary group."""
    if os.getuid() != 0 and len(set(os.getgroups()) - {os.getegid()}) == 0:
        pytest.skip("needs root or a second group to hand a directory to")
    other = 4242 if os.getuid() == 0 else sorted(set(os.getgroups()) - {os.getegid()})[0]
    assert other != os.getegid()
    root = tmp_path / "demo"
    assert cli("demo", root).code == 0
    part = root / "warehouse" / "sales" / "ds=2026-01-01"
    for p in [part, *part.rglob("*")]:
        os.chown(p, -1, other)
    before = _entries(part)
    r = cli(
        "--metastore",
        f"sqlite:///{root / 'metastore.db'}",
        "compact",
        "--major",
        "--engine",
        "local",
        "default.sales",
        "--partition",
        "ds=2026-01-01",
    )
    assert r.code == 0, r
    new = _entries(part) - before
    assert new
    assert {n: os.stat(part / n).st_gid for n in new} == {n: other for n in new}


@pytest.mark.usefixtures("spark")
def test_spark_executors_write_with_the_drivers_umask(cli, tmp_path):
    """The session (and its Python workers) started under the test process's umask; the
    compaction runs under 027: the executors' files get 0640, not the umask they started with."""
    root = tmp_path / "demo"
    old = os.umask(0o027)
    try:
        assert cli("demo", root).code == 0
        r = cli(
            "--metastore",
            f"sqlite:///{root / 'metastore.db'}",
            "-o",
            "json",
            "compact",
            "--major",
            "--engine",
            "spark",
            "default.sales",
            "--partition",
            "ds=2026-01-01",
        )
    finally:
        os.umask(old)
    assert r.code == 0, r
    assert json.loads(r.stdout)["partitions"][0]["output_dirs"]
    assert _wrong_modes(root, 0o027) == []


# -- HDFS (WebHDFS wire protocol) -----------------------------------------------------------


@pytest.fixture
def hdfs(tmp_path):
    root = tmp_path / "hdfs"
    root.mkdir()
    with WebHDFS(str(root)) as server:
        yield server


def test_webhdfs_creates_carry_no_permission_and_get_the_namenode_default(cli, hdfs, tmp_path):
    """demo and a compaction over WebHDFS: no CREATE or MKDIRS request carries ``permission``
    (nor ``unmaskedpermission``), so the NameNode gives 644/755 minus its umask-mode (022 in
    the test server: 644/755) whatever this process's umask (027 here)."""
    from tests.acidfiles import nation_table

    nation_table(tmp_path / "hdfs" / "warehouse", markers=True)
    old = os.umask(0o027)
    try:
        assert cli("demo", hdfs.url("/demo")).code == 0
        url, wl = hdfs.url("/warehouse/nation"), "db.t:4:9223372036854775807::"
        r = cli("-o", "json", "compact", "--major", "--engine", "local", "--write-ids", wl, url)
    finally:
        os.umask(old)
    assert r.code == 0, r
    creates = [(op, q) for op, q in hdfs.requests if op in ("CREATE", "MKDIRS")]
    assert {op for op, _ in creates} == {"CREATE", "MKDIRS"}
    assert [q for _, q in creates if "permission" in q or "unmaskedpermission" in q] == []
    assert any(op == "CREATE" and q["path"].endswith("bucket_00000") and "/nation/" in q["path"] for op, q in creates)
    assert _wrong_modes(tmp_path / "hdfs" / "demo", 0o022) == []
    assert _wrong_modes(tmp_path / "hdfs" / "warehouse" / "nation" / "base_0000004", 0o022) == []


def test_insert_only_and_hive2_compactions_follow_the_umask(cli, tmp_path, umask):
    """The other two writers: an insert-only table's compaction (plain files through the
    format writers) and Hive 2.3's CompactorMR-shaped compaction."""
    from tests.compact.helpers import hive23_table
    from tests.mm import hivelayout as H

    root, wl, _ = H.standard(tmp_path / "mm", "orc")
    before = _entries(root)
    r = cli(
        "compact",
        "--major",
        "--engine",
        "local",
        root,
        "--format",
        "orc",
        "--columns",
        H.COLUMNS_SPEC,
        "--write-ids",
        wl,
    )
    assert r.code == 0, r
    new = _entries(root) - before
    assert any(n.startswith("base_0000004/") for n in new), new
    assert _wrong_modes(root / "base_0000004", umask) == []

    t = hive23_table(tmp_path / "h2")
    before = _entries(t)
    r = cli("compact", "--major", "--engine", "local", "--hive-version", "2", "--txns", "2:9223372036854775807:", t)
    assert r.code == 0, r
    new = sorted(_entries(t) - before)
    assert new and all(not _wrong_modes(t / n, umask) for n in new), new
