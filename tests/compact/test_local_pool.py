"""The local engine's fork server started before planning (acidctl.compact.local.prestart):
when the runner starts it, and that a started server is the one the pool then uses."""

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


def test_prestarted_server_serves_the_pool():
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
