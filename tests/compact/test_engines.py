"""The same plan gives the same outputs, byte for byte, whichever engine runs the tasks: Spark,
the local worker pool (several processes), the local engine in this process, and ``auto`` on
either side of its threshold (issue #14). The contents are checked against the reference
model of tests/histories.py (nothing in it comes from acidctl)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from acidctl.compact import engine as eng
from acidctl.errors import UsageError
from tests.compact.helpers import compact, merged
from tests.histories import History, Statement, Txn


def _history() -> History:
    ins = lambda *v, p=0: Statement("insert", list(v), [], part=p)  # noqa: E731
    dele = lambda *k, p=0: Statement("delete", [], list(k), part=p)  # noqa: E731
    upd = lambda v, k, p=0: Statement("update", [v], [k], part=p)  # noqa: E731
    return History(
        buckets=3,
        partitions=3,
        originals=[3, 4, 5, 6, 7, 8],
        txns=[
            Txn("committed", [ins(10, 11, 12, 13, 14, 15), ins(20, 21, 22, p=1)]),
            Txn("committed", [ins(30, 31, 32, 33, p=2), dele(0, 4)]),
            Txn("aborted", [ins(40, 41, 42), dele(1, p=1)]),
            Txn("committed", [upd(50, 2), ins(51, 52, 53, p=1)]),
            Txn("committed", [dele(1, 3, p=2), ins(60, 61, 62, 63, 64, 65, 66, p=2)]),
            Txn("committed", [ins(70, 71, 72), upd(80, 0, p=1)]),
        ],
    )


def _outputs(root: Path) -> dict[str, bytes]:
    """Every file a reader sees (hidden bookkeeping such as publication records left out)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not any(x.startswith(".") for x in p.relative_to(root).parts)
    }


def _model(h: History, root: Path) -> dict:
    """{(partition, writeid, bucket, rowid): row} the reference model says readers see."""
    return {k: tuple(v) for k, v in h.play_table(root).items()}


@pytest.mark.spark
@pytest.mark.parametrize("mode", ["major", "minor"])
def test_every_engine_writes_the_same_bytes(tmp_path, spark, monkeypatch, mode):
    h = _history()
    src = tmp_path / "src"
    expected = _model(h, src)
    snap = h.snapshot()
    # every engine, including auto on both sides of its threshold, and the local pool even on
    # this small table (its floor lowered) next to the in-process path
    runs = {
        "spark": dict(engine="spark", spark=spark),
        "local-pool": dict(engine="local"),
        "local-inproc": dict(engine="local"),
        "auto-local": dict(engine="auto"),
        "auto-spark": dict(engine="auto", local_max_bytes=0, spark=spark),
    }
    reports, files = {}, {}
    for name, kw in runs.items():
        root = tmp_path / name
        shutil.copytree(src, root)
        monkeypatch.setattr(eng, "POOL_MIN_BYTES", 10**15 if name == "local-inproc" else 0)
        reports[name] = compact(root, mode, snap, **kw)
        files[name] = _outputs(root)
        assert merged(root, snap) == expected, name
    first = files["spark"]
    assert len(first) > len(_outputs(src))  # outputs were written
    for name in runs:
        assert files[name].keys() == first.keys(), name
        diff = [k for k in first if files[name][k] != first[k]]
        assert diff == [], (name, diff)
    tasks = sum(p["buckets"] for p in reports["spark"]["partitions"])
    assert tasks > 2
    assert {n: r["engine"] for n, r in reports.items()} == {
        "spark": "spark",
        "local-pool": "local",
        "local-inproc": "local",
        "auto-local": "local",
        "auto-spark": "spark",
    }
    assert reports["local-pool"]["engine_choice"]["workers"] == min(eng.cores(), tasks)
    assert reports["local-inproc"]["engine_choice"]["workers"] == 1
    assert reports["auto-local"]["engine_choice"]["requested"] == "auto"
    assert reports["auto-spark"]["engine_choice"]["local_max_bytes"] == 0
    assert "> 0 MiB (--local-max-bytes)" in reports["auto-spark"]["engine_choice"]["reason"]
    assert reports["auto-spark"]["spark"]["startup_seconds"] >= 0
    assert "spark" not in reports["auto-local"]


def test_auto_threshold_from_option_environment_default(monkeypatch):
    monkeypatch.delenv(eng.THRESHOLD_ENV, raising=False)
    mib = 2**20
    monkeypatch.setattr(eng, "cores", lambda: 3)
    default = 3 * eng.LOCAL_BYTES_PER_CORE  # per core
    c = eng.choose_engine("auto", bytes_in=default, tasks=4)
    assert (c.engine, c.local_max_bytes) == ("local", default)
    assert "(default: 24 MiB × 3 cores)" in c.reason
    assert eng.choose_engine("auto", bytes_in=default + 1, tasks=4).engine == "spark"
    monkeypatch.setenv(eng.THRESHOLD_ENV, "1G")
    c = eng.choose_engine("auto", bytes_in=600 * mib, tasks=4)
    assert (c.engine, c.local_max_bytes) == ("local", 2**30)
    assert eng.THRESHOLD_ENV in c.reason
    # the option wins over the environment
    c = eng.choose_engine("auto", bytes_in=600 * mib, tasks=4, threshold="512m")
    assert (c.engine, c.local_max_bytes) == ("spark", 512 * mib)
    # explicit engines ignore the threshold
    assert eng.choose_engine("local", bytes_in=10**13, tasks=4).engine == "local"
    assert eng.choose_engine("spark", bytes_in=0, tasks=1).engine == "spark"
    monkeypatch.setenv(eng.THRESHOLD_ENV, "lots")
    with pytest.raises(UsageError, match=eng.THRESHOLD_ENV):
        eng.choose_engine("auto", bytes_in=1, tasks=1)


@pytest.mark.parametrize(
    "text,n",
    [("0", 0), ("4096", 4096), ("256M", 256 * 2**20), ("2g", 2 * 2**30), ("1.5 GiB", 3 * 2**29), ("10kb", 10240)],
)
def test_parse_size(text, n):
    assert eng.parse_size(text) == n


@pytest.mark.parametrize("text", ["", "-1", "12X", "M", "1e9"])
def test_parse_size_rejects(text):
    with pytest.raises(UsageError):
        eng.parse_size(text)


def test_local_pool_workers_ignore_tiny_inputs(monkeypatch):
    monkeypatch.setattr(eng, "cores", lambda: 8)
    assert eng.choose_engine("local", bytes_in=eng.POOL_MIN_BYTES - 1, tasks=20).workers == 1
    assert eng.choose_engine("local", bytes_in=eng.POOL_MIN_BYTES, tasks=20).workers == 8
    assert eng.choose_engine("local", bytes_in=eng.POOL_MIN_BYTES, tasks=3).workers == 3


def test_cli_engine_choice_in_the_dry_run(cli, tmp_path):
    import json

    h = _history()
    h.play_table(tmp_path / "t")
    wl = str(h.snapshot())
    r = cli(
        "-o",
        "json",
        "compact",
        "--major",
        "--dry-run",
        "--local-max-bytes",
        "0",
        "--write-ids",
        wl,
        str(tmp_path / "t"),
    )
    assert r.code == 0, r
    doc = json.loads(r.stdout)
    assert (doc["engine"], doc["engine_choice"]["requested"], doc["engine_choice"]["local_max_bytes"]) == (
        "spark",
        "auto",
        0,
    )
    r = cli("-o", "json", "compact", "--major", "--dry-run", "--write-ids", wl, str(tmp_path / "t"))
    assert json.loads(r.stdout)["engine"] == "local"
    r = cli("compact", "--major", "--local-max-bytes", "lots", "--write-ids", wl, str(tmp_path / "t"))
    assert r.code == 2 and "--local-max-bytes" in r.stderr and "Traceback" not in r.stderr


def test_spark_session_conf_is_what_compaction_needs(monkeypatch):
    import logging

    from acidctl.compact.spark import session_conf

    monkeypatch.setattr(logging.getLogger(), "level", logging.WARNING)
    conf = session_conf("local[2]")
    assert conf["spark.ui.enabled"] == "false" and conf["spark.ui.showConsoleProgress"] == "false"
    assert conf["spark.sql.catalogImplementation"] == "in-memory"  # no Hive support
    assert conf["spark.eventLog.enabled"] == "false"
    assert conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert "log4j2.configurationFile" in conf["spark.driver.extraJavaOptions"]  # quiet unless -v
    assert session_conf("local[2]", {"spark.ui.enabled": "true"})["spark.ui.enabled"] == "true"


def test_a_memory_table_is_compacted_in_this_process(monkeypatch):
    monkeypatch.setattr(eng, "cores", lambda: 4)
    for requested in ("auto", "local"):
        c = eng.choose_engine(requested, bytes_in=10**12, tasks=8, protocol="memory")
        assert (c.engine, c.workers) == ("local", 1)
        assert "memory://" in c.reason
    assert eng.choose_engine("local", bytes_in=10**12, tasks=8, protocol="file").workers == 4
    assert eng.choose_engine("spark", bytes_in=1, tasks=1, protocol="memory").engine == "spark"
