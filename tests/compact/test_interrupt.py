"""Ctrl-C during a Spark compaction (issue #9), and during one in the local worker pool: the JVM and its children end, staging and lock
are removed, the table reads the same, stderr ends with one line ``acidctl: interrupted``, and
the exit code is 130 — at Spark start-up and while the tasks run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.acidfiles import B0, acid_file
from tests.compact.helpers import ALL, merged

ACIDCTL = str(Path(sys.executable).parent / "acidctl")
ROW = (
    "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
    "row:struct<id:int,name:string>>"
)
SNAP = f"db.t:3:{ALL}::"

pytestmark = pytest.mark.spark


def _orphan_jvms() -> set[int]:
    """SparkSubmit JVMs whose parent died (re-parented to init)."""
    out = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"SparkSubmit" in cmd and b"acidctl-compact" in cmd and ppid == 1:
            out.add(int(pid))
    return out


def _table(root: Path) -> Path:
    for w in (1, 2, 3):
        acid_file(
            root / f"delta_{w:07d}_{w:07d}_0000" / "bucket_00000",
            ROW,
            [(0, w, B0, r, w, (w * 10 + r, f"w{w}")) for r in range(20)],
        )
    return root


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _check(t: Path, before_files, before, p: subprocess.Popen, orphans_before: set[int]) -> None:
    _, err = p.communicate(timeout=120)
    err = err.decode()
    assert p.returncode == 130, err
    assert err.rstrip("\n").splitlines()[-1] == "acidctl: interrupted", err
    assert "Traceback" not in err and "py4j" not in err.lower(), err
    time.sleep(1)
    assert _orphan_jvms() - orphans_before == set()
    assert _files(t) == before_files  # no staging, no lock, nothing published
    assert merged(t, SNAP) == before


def test_ctrl_c_while_spark_starts(tmp_path):
    t = _table(tmp_path / "t")
    before_files, before, orphans = _files(t), merged(t, SNAP), _orphan_jvms()
    p = subprocess.Popen(
        [ACIDCTL, "compact", "--major", "--engine", "spark", "--write-ids", SNAP, str(t)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    time.sleep(1.5)  # the JVM is starting
    p.send_signal(signal.SIGINT)
    _check(t, before_files, before, p, orphans)


def test_ctrl_c_while_the_tasks_run(tmp_path):
    t = _table(tmp_path / "t")
    before_files, before, orphans = _files(t), merged(t, SNAP), _orphan_jvms()
    # the task itself delivers SIGINT to the driver when it starts (a real Ctrl-C mid-job)
    env = {**os.environ, "ACIDCTL_TEST_CRASH_AT": "int:task-start"}
    p = subprocess.Popen(
        [ACIDCTL, "compact", "--major", "--engine", "spark", "--write-ids", SNAP, str(t)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    _check(t, before_files, before, p, orphans)


def test_spark_is_quiet_by_default(tmp_path):
    """stderr is for acidctl's own lines: no Spark log4j banner or WARN lines (-v brings them back)."""
    t = _table(tmp_path / "t")
    r = subprocess.run(
        [ACIDCTL, "compact", "--major", "--engine", "spark", "--write-ids", SNAP, str(t)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    spark_lines = [ln for ln in r.stderr.splitlines() if "log4j" in ln or " WARN " in ln or "setLogLevel" in ln]
    assert spark_lines == [], r.stderr
    assert any(line.startswith("compacted:") for line in r.stdout.splitlines()), r.stdout  # wrapped under $COLUMNS


def test_ctrl_c_while_local_worker_processes_run(tmp_path):
    """The local pool: the driver stops its workers before removing the staging (nothing is
    written afterwards), and exits like the Spark engine does."""
    t = tmp_path / "t"
    for w in (1, 2, 3):
        for b in (0, 1):
            acid_file(
                t / f"delta_{w:07d}_{w:07d}_0000" / f"bucket_{b:05d}",
                ROW,
                [(0, w, (1 << 29) | (b << 16), r, w, (w * 10 + r, f"w{w}b{b}")) for r in range(20)],
            )
    before_files, before = _files(t), merged(t, SNAP)
    env = {**os.environ, "ACIDCTL_TEST_CRASH_AT": "int:task-start", "ACIDCTL_LOCAL_POOL_MIN_BYTES": "0"}
    p = subprocess.Popen(
        [ACIDCTL, "-o", "json", "compact", "--major", "--engine", "local", "--write-ids", SNAP, str(t)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    _, err = p.communicate(timeout=120)
    err = err.decode()
    assert p.returncode == 130, err
    assert err.rstrip("\n").splitlines()[-1] == "acidctl: interrupted", err
    assert "Traceback" not in err, err
    time.sleep(1)
    assert _files(t) == before_files
    assert merged(t, SNAP) == before


def test_local_pool_runs_and_reports_its_workers(tmp_path):
    import json

    t = tmp_path / "t"
    for b in (0, 1, 2):
        acid_file(
            t / "delta_0000001_0000001_0000" / f"bucket_{b:05d}",
            ROW,
            [(0, 1, (1 << 29) | (b << 16), r, 1, (r, f"b{b}")) for r in range(5)],
        )
    env = {**os.environ, "ACIDCTL_LOCAL_POOL_MIN_BYTES": "0"}
    r = subprocess.run(
        [ACIDCTL, "-o", "json", "compact", "--major", "--write-ids", "db.t:1:" + ALL + "::", str(t)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["engine"] == "local" and doc["engine_choice"]["requested"] == "auto"
    assert doc["engine_choice"]["workers"] == min(3, len(os.sched_getaffinity(0)))
    assert doc["summary"]["rows_out"] == 15
    assert merged(t, "db.t:1:" + ALL + "::") == {
        (None, 1, (1 << 29) | (b << 16), r): (r, f"b{b}") for b in (0, 1, 2) for r in range(5)
    }
