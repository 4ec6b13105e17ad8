"""The local engine's fork server started before planning (acidctl.compact.local.prestart):
when the runner (a path target) or the command (a metastore table) starts it, that a started
server is the one the pool then uses, and that a server no pool used is ended — Spark
chosen, the tasks run in this process, an error, Ctrl-C — leaving no process behind."""

import os

import pytest

from acidctl.acid.writeids import WriteIdList
from acidctl.compact import engine, local
from acidctl.compact.runner import CompactOptions, _may_run_local_pool
from acidctl.fs import TableFS
from tests.acid.helpers import acid_dir, build_listing

BIG = engine.POOL_MIN_BYTES  # a listing of this many bytes may get a pool


def _listings(bucket_bytes: int):
    return [
        build_listing("/t", {"base_0000001/": acid_dir(data=bucket_bytes), "delta_0000002_0000002_0000/": acid_dir()})
    ]


def _opts(**kw):
    return CompactOptions(mode="major", reader=WriteIdList.all_committed(2, "db.t"), **kw)


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(engine, "cores", lambda: 2)
    monkeypatch.delenv(engine.POOL_MIN_ENV, raising=False)


def test_prestart_only_when_a_pool_may_run(two_cores, tmp_path):
    tfs = TableFS(str(tmp_path))
    big, small = _listings(BIG), _listings(BIG // 4)
    assert _may_run_local_pool(tfs, _opts(), big)  # auto, local master, enough bytes
    assert _may_run_local_pool(tfs, _opts(engine="local"), big)
    assert not _may_run_local_pool(tfs, _opts(), small)  # choose_engine keeps it in this process
    assert not _may_run_local_pool(tfs, _opts(engine="spark"), big)
    assert not _may_run_local_pool(tfs, _opts(master="spark://h:7077"), big)  # auto with a cluster: Spark
    assert _may_run_local_pool(tfs, _opts(engine="local", master="spark://h:7077"), big)
    assert not _may_run_local_pool(TableFS("memory://prestart-t"), _opts(engine="local"), big)


def test_prestart_one_core(monkeypatch, tmp_path):
    monkeypatch.setattr(engine, "cores", lambda: 1)
    assert not _may_run_local_pool(TableFS(str(tmp_path)), _opts(engine="local"), _listings(BIG))


def test_pool_min_env_moves_the_threshold(two_cores, monkeypatch, tmp_path):
    monkeypatch.setenv(engine.POOL_MIN_ENV, str(BIG * 10))
    assert not _may_run_local_pool(TableFS(str(tmp_path)), _opts(), _listings(BIG))


def test_prestarted_server_serves_the_pool(two_cores):
    """prestart() returns at once and leaves a running fork server; the pool's workers are
    then forked by that same server (children of it, not of this process)."""
    from multiprocessing import forkserver

    local.prestart()
    server = forkserver._forkserver._forkserver_pid
    assert server is not None and server != os.getpid()
    local.prestart()  # idempotent
    assert forkserver._forkserver._forkserver_pid == server
    parents = local._run_pool([_NoInputs(), _NoInputs()], 2, None, _parent_pid)
    assert parents == [server, server]


class _NoInputs:
    inserts: list = []
    deletes: list = []


def _parent_pid(_task) -> int:
    return os.getppid()


@pytest.fixture
def no_server():
    """No fork server running when the test starts (an earlier test's pool may have left one:
    a server a pool used is kept for the driver's life)."""
    from multiprocessing import forkserver

    local.stop_prestarted()
    forkserver._forkserver._stop()
    yield


def _server() -> int | None:
    from multiprocessing import forkserver

    return forkserver._forkserver._forkserver_pid


def _gone(pid: int) -> bool:
    """The process no longer exists (ended and reaped: not a zombie child of this one)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _small_table(root) -> str:
    from tests.histories import V1, _write_acid

    _write_acid(
        root / "delta_0000001_0000001_0000" / "bucket_00000", [(0, 1, V1, i, 1, (i, f"r{i}")) for i in range(20)]
    )
    _write_acid(root / "delete_delta_0000002_0000002_0000" / "bucket_00000", [(2, 1, V1, 3, 2, None)])
    return "db.t:2:9223372036854775807::"


class _Boom(Exception):
    pass


def _raise(exc):
    def hook(*_a):
        raise exc

    return hook


@pytest.mark.parametrize(
    ("hooks", "raises"),
    [
        ({}, None),  # one small bucket: run in this process, no pool
        ({"after-plan": _raise(_Boom("planned, then failed"))}, _Boom),
        ({"after-plan": _raise(KeyboardInterrupt())}, KeyboardInterrupt),
    ],
)
def test_unused_prestarted_server_is_ended(two_cores, no_server, tmp_path, hooks, raises):
    from tests.compact.helpers import compact

    wids = _small_table(tmp_path)
    local.prestart()  # as the command does for a metastore table, before the size is known
    pid = _server()
    assert pid is not None and not _gone(pid)
    if raises is None:
        rep = compact(tmp_path, "major", wids, engine="local")
        assert rep["engine_choice"]["workers"] == 1 and rep["summary"]["rows_out"] == 19
    else:
        with pytest.raises(raises):
            compact(tmp_path, "major", wids, engine="local", hooks=hooks)
    assert _gone(pid) and _server() is None
    assert not (tmp_path / ".acidctl-compact.lock").exists()  # lock released


def test_prestarted_server_ended_when_spark_is_chosen(two_cores, no_server, tmp_path, spark):
    """auto above its threshold runs Spark: the fork server is ended before the Spark job."""
    from tests.compact.helpers import compact

    wids = _small_table(tmp_path)
    local.prestart()
    pid = _server()
    assert pid is not None
    seen = []
    rep = compact(
        tmp_path,
        "major",
        wids,
        spark=spark,
        engine="auto",
        local_max_bytes=1,
        hooks={"before-publish": lambda _p: seen.append(_gone(pid))},
    )
    assert rep["engine"] == "spark" and rep["summary"]["rows_out"] == 19
    assert seen == [True] and _server() is None


def test_metastore_target_prestarts_and_ends_the_unused_server(two_cores, no_server, tmp_path, cli):
    """``compact DB.TABLE``: the fork server is started before the metastore is read; the demo
    table is small (its tasks run in this process), so it is ended, and nothing is left."""
    import json

    from acidctl import faults

    assert cli("demo", tmp_path / "demo").code == 0
    url = f"sqlite:///{tmp_path / 'demo' / 'metastore.db'}"
    started = []
    with faults.hooks({"after-plan": lambda _plans: started.append(_server())}):
        r = cli("-o", "json", "--metastore", url, "compact", "--major", "--engine", "local", "default.sales")
    assert r.code == 0, r
    assert json.loads(r.stdout)["engine_choice"]["workers"] == 1
    assert len(started) == 1 and started[0] is not None  # running while the runner planned
    assert _gone(started[0]) and _server() is None


def test_preload_adds_the_cli_for_a_script_main(monkeypatch):
    """The console script ``acidctl`` (a script ``__main__``) is re-run by every worker as
    ``__mp_main__``: the fork server imports what it imports once; ``python -m acidctl`` (a
    ``__main__`` with a module spec) is not re-run, so nothing is added."""
    import importlib.machinery
    import sys
    import types

    script = types.ModuleType("__main__")
    script.__file__ = "/usr/bin/acidctl"
    script.__spec__ = None
    monkeypatch.setitem(sys.modules, "__main__", script)
    assert local.preload() == local.PRELOAD + ["acidctl.cli.main"]

    as_module = types.ModuleType("__main__")
    as_module.__file__ = "/x/acidctl/__main__.py"
    as_module.__spec__ = importlib.machinery.ModuleSpec("acidctl.__main__", None)
    monkeypatch.setitem(sys.modules, "__main__", as_module)
    assert local.preload() == local.PRELOAD


def test_a_second_interrupt_waits_for_the_clean_up():
    """Ctrl-C inside interrupts_deferred() (as when every local worker signals the driver at
    once, or a user presses it twice) does not cut the block short: it is raised when it ends."""
    import os
    import signal
    import time

    from acidctl.compact.local import interrupts_deferred

    steps = []
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in acidctl (xdist may differ)
    try:
        with pytest.raises(KeyboardInterrupt):
            with interrupts_deferred():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.2)  # a signal is handled here, at the latest
                steps.append("finished")
        assert steps == ["finished"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
        with interrupts_deferred():  # nothing held: nothing raised
            steps.append("quiet")
        assert steps == ["finished", "quiet"]
    finally:
        signal.signal(signal.SIGINT, before)
