"""Issue #9, "errors, interrupts and secrets": each case as a new user met it, with the exit code
the README documents and one plain line on stderr."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.acidfiles import B0, acid_file

ACIDCTL = str(Path(sys.executable).parent / "acidctl")
ROW = (
    "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
    "row:struct<id:int,name:string>>"
)
ALL = "9223372036854775807"
# root bypasses file permissions through CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH: without them in
# the bounding set, a root process obeys permissions like any user (the tests run as root)
NO_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"] if os.geteuid() == 0 else []


def _table(root: Path, n: int = 3) -> Path:
    for w in range(1, n + 1):
        acid_file(
            root / f"delta_{w:07d}_{w:07d}_0000" / "bucket_00000",
            ROW,
            [(0, w, B0, r, w, (w * 10 + r, f"w{w}")) for r in range(50)],
        )
    return root


def _run(*args, pre=(), **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACIDCTL_")}
    return subprocess.run([*pre, ACIDCTL, *map(str, args)], capture_output=True, text=True, env=env, timeout=120, **kw)


def test_dump_into_a_closed_pipe_exits_0(tmp_path):
    t = _table(tmp_path / "t")
    p = subprocess.Popen([ACIDCTL, "dump", str(t)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = p.stdout.readline()
    p.stdout.close()  # `| head -1`
    rc = p.wait(timeout=60)
    err = p.stderr.read().decode()
    assert json.loads(first)["operation"] == 0
    assert rc == 0 and err == "", (rc, err)


@pytest.mark.skipif(not shutil.which("setpriv"), reason="setpriv (util-linux) is needed to drop root's DAC override")
def test_unreadable_file_and_directory_exit_5(tmp_path):
    t = _table(tmp_path / "t")
    f = t / "delta_0000001_0000001_0000" / "bucket_00000"
    f.chmod(0)
    r = _run("dump", f, pre=NO_DAC)
    assert r.returncode == 5 and r.stderr.strip() == f"acidctl: error: permission denied: {f}", r
    d = t / "delta_0000002_0000002_0000"
    d.chmod(0)
    for args in (
        ["state", "--write-ids", f"db.t:3:{ALL}::", t],
        ["dump", "--merged", "--write-ids", f"db.t:3:{ALL}::", t],
    ):
        r = _run(*args, pre=NO_DAC)
        assert r.returncode == 5, r
        assert (
            len(r.stderr.strip().splitlines()) == 1 and "permission denied" in r.stderr and "Traceback" not in r.stderr
        )


@pytest.mark.skipif(not shutil.which("setpriv"), reason="setpriv (util-linux) is needed to drop root's DAC override")
def test_read_only_table_compaction_exit_5_and_nothing_written(tmp_path):
    t = _table(tmp_path / "w" / "t")
    for p in [t, *t.iterdir()]:
        p.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP)
    before = sorted(str(p) for p in t.rglob("*"))
    r = _run("compact", "--major", "--engine", "local", "--write-ids", f"db.t:3:{ALL}::", t, pre=NO_DAC)
    assert r.returncode == 5 and "permission denied" in r.stderr and "Traceback" not in r.stderr, r
    assert sorted(str(p) for p in t.rglob("*")) == before


SECRET = "Sekr3t-Qp9"


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql+psycopg://hive@127.0.0.1:1/ms?password={SECRET}&sslmode=disable",
        f"postgresql+psycopg://hive@127.0.0.1:1/ms?sslmode=disable&passwd={SECRET}",
        f"mysql+pymysql://hive:{SECRET}@127.0.0.1:1/ms",
        f"mysql+pymysql://hive@127.0.0.1:1/ms?PASSWORD={SECRET}",
        f"postgresql+psycopg://hive@127.0.0.1:1/ms?sslpassword={SECRET}",
    ],
)
def test_no_secret_at_any_verbosity(url):
    for extra in ([], ["-v"], ["-v", "-o", "json"]):
        r = _run(*extra, "--metastore", url, "show", "transactions")
        assert r.returncode in (2, 5, 7), r  # unreachable, or an option the driver rejects
        assert SECRET not in r.stderr and SECRET not in r.stdout, (extra, r.stderr)


@pytest.mark.parametrize(
    "wl,text",
    [
        ("db.t:99999999999999999999:9223372036854775807::", "out of range"),
        ("db.t:-1:9223372036854775807::", "out of range"),
        ("db.t:3:9223372036854775807:1,99999999999999999999:", "out of range"),
        ("db.t:3:9223372036854775807::0", "out of range"),
    ],
)
def test_bad_write_id_lists_exit_2(tmp_path, cli, wl, text):
    t = _table(tmp_path / "t")
    r = cli("state", "--write-ids", wl, t)
    assert r.code == 2 and text in r.stderr, r


def test_write_id_list_of_another_table(tmp_path, cli):
    assert cli("demo", tmp_path).code == 0
    ms = f"sqlite:///{tmp_path}/metastore.db"
    r = cli("--metastore", ms, "state", "--write-ids", f"default.other:3:{ALL}::", "default.employee")
    assert r.code == 2 and "names table default.other, not default.employee" in r.stderr, r
    p = cli("state", "--write-ids", f"default.other:3:{ALL}::", tmp_path / "warehouse" / "employee")
    assert p.code == 0 and "warning: --write-ids names table default.other" in p.stderr, p


@pytest.mark.parametrize(
    "args",
    [
        ["write-ids", "default.nosuch"],
        ["compactions", "default.nosuch"],
        ["locks", "default.nosuch"],
        ["compactions", "nosuchdb"],
    ],
)
def test_show_on_a_missing_table_exits_3(tmp_path, cli, args):
    assert cli("demo", tmp_path).code == 0
    r = cli("--metastore", f"sqlite:///{tmp_path}/metastore.db", "show", *args)
    assert r.code == 3 and "not found in the metastore" in r.stderr and r.stdout == "", r


def test_unreachable_spark_master_fails_fast(tmp_path):
    import socket
    import time

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t = _table(tmp_path / "t")
    t0 = time.monotonic()
    r = _run("compact", "--major", "--write-ids", f"db.t:3:{ALL}::", "--master", f"spark://127.0.0.1:{port}", t)
    assert r.returncode == 5, r
    assert f"Spark master spark://127.0.0.1:{port} is unreachable" in r.stderr and "Java" not in r.stderr
    assert time.monotonic() - t0 < 30
    assert not [p for p in t.rglob(".acidctl*")]


def test_hive4_names_read_with_hive3_rules_say_how_to_read_them(tmp_path, cli):
    t = _table(tmp_path / "t", n=2)
    (t / "delta_0000001_0000001_0000").rename(t / "delta_0000001_0000001_v0000009")
    r = cli("dump", "--merged", "--write-ids", f"db.t:2:{ALL}::", t)
    assert r.code == 7 and "--hive-version 4" in r.stderr, r
    ok = cli(
        "-o",
        "json",
        "dump",
        "--merged",
        "--hive-version",
        "4",
        "--txns",
        f"20:{ALL}::",
        "--write-ids",
        f"db.t:2:{ALL}::",
        t,
    )
    assert ok.code == 0 and len(ok.stdout.splitlines()) == 100, ok


def test_as_of_beyond_the_high_watermark_exits_2(tmp_path, cli):
    t = _table(tmp_path / "t", n=2)
    r = cli("dump", "--merged", "--as-of", "99", "--write-ids", f"db.t:2:{ALL}::", t)
    assert r.code == 2 and "beyond the snapshot's high-water mark 2" in r.stderr, r
