"""``acidctl compact --master spark://...`` on a real standalone cluster (Master + one Worker on
loopback, started from the pip-installed pyspark): the executors are other JVMs whose Python
workers cannot see the editable install of acidctl, so the compaction only works if the driver
ships acidctl as a zip (``addPyFile``) and the executors import it from there.

The driver is a subprocess: this test session already hosts the local SparkSession of
tests/compact/conftest.py, and one JVM holds one SparkContext."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.compact.helpers import ALL, merged, nation_table, state_errors
from tests.spark_cluster import FAST_JVM, TIMEOUT, hidden_acidctl_python, standalone_cluster

pytestmark = pytest.mark.spark

#: the compaction itself: driver and executor JVM start-up, one task (~20 s on 2 busy cores)
DRIVER_TIMEOUT = 120


@pytest.fixture
def cluster(tmp_path):
    with standalone_cluster(tmp_path / "cluster", cores=1, memory="1g") as c:
        yield c


def _driver_env() -> dict:
    # a driver as an operator starts it: no Spark settings inherited from the test process
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.pop("PYTHONPATH", None)
    return env


def test_compact_on_a_standalone_cluster_ships_acidctl_to_the_executors(tmp_path, cluster):
    wids = f"db.t:4:{ALL}::"
    t = nation_table(tmp_path / "table")
    before = merged(t, wids)

    # the executors' Python: this venv's interpreter with the editable install hidden
    import_log = tmp_path / "executor-imports.log"
    py = hidden_acidctl_python(tmp_path / "py", import_log)
    deps = subprocess.run(
        [py, "-c", "import numpy, orjson, pyarrow, pyorc, fsspec, pyspark"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert deps.returncode == 0, deps.stderr
    # ... so without the shipped zip an executor cannot import acidctl, and the compaction fails
    bare = subprocess.run([py, "-c", "import acidctl"], cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT)
    assert bare.returncode != 0 and "No module named 'acidctl'" in bare.stderr, (bare.returncode, bare.stderr)
    import_log.unlink()

    cmd = [
        sys.executable,
        "-m",
        "acidctl",
        "-o",
        "json",
        "compact",
        "--major",
        "--master",
        cluster.url,
        "--spark-conf",
        f"spark.pyspark.python={py}",
        "--spark-conf",
        "spark.executor.memory=512m",
        "--spark-conf",
        "spark.cores.max=1",
        "--spark-conf",
        f"spark.local.dir={tmp_path / 'driver-local'}",
        "--spark-conf",
        f"spark.driver.extraJavaOptions={FAST_JVM}",
        "--spark-conf",
        f"spark.executor.extraJavaOptions={FAST_JVM}",
        "--write-ids",
        wids,
        str(t),
    ]
    try:
        r = subprocess.run(cmd, cwd=tmp_path, env=_driver_env(), capture_output=True, text=True, timeout=DRIVER_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"acidctl compact did not finish within {DRIVER_TIMEOUT} s\nstderr: {e.stderr}\n{cluster.logs()}")
    assert r.returncode == 0, f"exit {r.returncode}\nstderr: {r.stderr[-3000:]}\n{cluster.logs()}"
    doc = json.loads(r.stdout)

    # it ran on the cluster, as an application of the master
    assert doc["spark"]["master"] == cluster.url and cluster.url.startswith("spark://127.0.0.1:")
    st = cluster.status()
    apps = {a["id"] for a in st["completedapps"] + st["activeapps"]}
    assert doc["spark"]["app_id"] in apps
    assert doc["compacted"] == 1 and doc["partitions"][0]["output_dirs"] == ["base_0000004"]
    assert doc["partitions"][0]["rows_out"] == 23000

    # the executors' Python workers imported acidctl from the zip fetched into their work dir
    lines = [ln.split("\t") for ln in import_log.read_text().splitlines()] if import_log.exists() else []
    assert lines, f"no executor imported acidctl\n{cluster.logs()}"
    work = cluster.work_dir.resolve()
    for _pid, cwd, origin in lines:
        assert origin != "None", lines
        where = Path(os.path.normpath(os.path.join(cwd, origin)))
        assert where.parts[-3:] == ("acidctl.zip", "acidctl", "__init__.py"), lines
        assert where.is_relative_to(work) and where.parents[1].is_file(), (lines, work)

    # the merged read is unchanged, and state finds nothing wrong
    assert merged(t, wids) == before
    assert state_errors(t, wids) == []
    assert not [p for p in t.rglob(".acidctl*") if p.name != ".acidctl-published"]
