"""Crash safety: ``python -m acidctl compact`` is SIGKILLed (ACIDCTL_TEST_CRASH_AT) at every step;
each time the table reads the same afterwards (readers never list the hidden staging
directory), leftovers are reported, and a rerun succeeds — after ``clean --execute`` or by
breaking the stale lock and ignoring the leftovers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from acidctl.compact.lock import LOCK_NAME
from tests.compact.helpers import compact, demo_warehouse, merged, state_report

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]


def _run(args: list, crash: str | None, timeout: int = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACIDCTL_")}
    if crash:
        env["ACIDCTL_TEST_CRASH_AT"] = crash
    p = subprocess.Popen(
        [sys.executable, "-m", "acidctl", *map(str, args)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = p.communicate(timeout=timeout)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # a JVM or Python worker left behind
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(p.args, p.returncode, out, err.decode(errors="replace"))


def _leftovers(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob(".acidctl-*") if p.name != ".acidctl-published")


# (crash point, table, mode, engine, rerun after clean?)
POINTS = [
    ("after-lock", "sales", "major", "local", True),
    ("after-plan", "sales", "major", "local", False),
    ("task-start", "sales", "major", "local", True),
    ("task-before-write", "sales", "major", "spark", False),
    ("task-after-write", "employee", "minor", "spark", True),
    ("before-publish", "sales", "minor", "local", False),
    ("between-renames", "employee", "minor", "local", True),
    ("after-rename", "employee", "major", "local", False),
    ("after-publish", "sales", "major", "local", True),
    ("after-publish-all", "sales", "minor", "local", False),
    ("before-unlock", "employee", "major", "local", True),
]


@pytest.mark.parametrize("point,table,mode,engine,via_clean", POINTS, ids=[p[0] for p in POINTS])
def test_sigkill_at(tmp_path, spark, point, table, mode, engine, via_clean):
    wh, wids = demo_warehouse(tmp_path)
    root = wh / table
    wl = wids[table]
    before = merged(root, wl)
    # minor compactions of these tables write delta + delete_delta: two renames, allowed here
    # so that a crash between them can be tested (the refusal is in test_publish_safety.py)
    allow = ["--allow-non-atomic-publish"] if mode == "minor" else []
    r = _run(
        ["compact", f"--{mode}", *allow, "--engine", engine, "--master", "local[1]", "--write-ids", wl, root], point
    )
    assert r.returncode == -signal.SIGKILL, (r.returncode, r.stderr[-2000:])
    # the process never got to release its lock: the table's, or (a whole partitioned table's
    # run locks what its plan compacts) its partitions'
    locks = [p.name for p in root.glob(".acidctl-compact*.lock")]
    assert locks, list(root.iterdir())
    assert LOCK_NAME in locks or table == "sales"
    if point != "between-renames":
        assert merged(root, wl) == before
    rep = state_report(root, wl)
    if any(p.is_dir() for p in root.rglob(".acidctl-staging-*")):
        assert any(f["check"] == "D07" and "acidctl_staging" in f["message"] for f in rep["findings"])
    if point == "between-renames":  # the table reads wrong until finished: state says so
        assert merged(root, wl) != before
        assert any(
            f["check"] == "D07" and f["severity"] == "error" and "interrupted compaction publish" in f["message"]
            for f in rep["findings"]
        )
    # a plain rerun is refused: the lock is stale (exit 6)
    r2 = _run(["compact", f"--{mode}", *allow, "--engine", "local", "--write-ids", wl, root], None)
    assert r2.returncode == 6 and "stale" in r2.stderr, r2.stderr
    if via_clean:
        r3 = _run(["-o", "json", "clean", "--execute", "--min-age", "0", "--write-ids", wl, root], None)
        assert r3.returncode == 0, r3.stderr
        doc = json.loads(r3.stdout)
        assert any(i["kind"] == "stale-lock" for i in doc["items"])
        assert _leftovers(root) == []
        assert merged(root, wl) == before
        rep = compact(root, mode, wl, spark=spark)
    else:
        rep = compact(root, mode, wl, spark=spark, break_lock=True)
    assert merged(root, wl) == before
    assert [f for f in state_report(root, wl)["findings"] if f["severity"] == "error"] == []
    assert not list(root.glob(".acidctl-compact*.lock"))
    if point in ("between-renames",):
        assert rep["recovered"] or via_clean


@pytest.mark.parametrize("point", ["after-plan", "before-publish"])
def test_ctrl_c_leaves_nothing_behind(tmp_path, point):
    wh, wids = demo_warehouse(tmp_path)
    root, wl = wh / "sales", wids["sales"]
    before = merged(root, wl)
    tree = sorted(p for p in root.rglob("*"))
    r = _run(["compact", "--major", "--engine", "local", "--write-ids", wl, root], "int:" + point)
    assert r.returncode == 130, r.stderr
    assert sorted(p for p in root.rglob("*")) == tree  # staging removed, lock released
    assert merged(root, wl) == before
