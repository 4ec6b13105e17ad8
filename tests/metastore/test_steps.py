"""Metastore write steps (acidctl/metastore/steps.py): who may write (schema version, read-only),
one database transaction per step, whole-step retry on deadlocks (operations.md §1, §2.6)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from acidctl.errors import ExitCode, RefusedError
from acidctl.metastore import steps
from acidctl.metastore.connection import connect
from tests.metastore.helpers import run_cli


def _set_version(url: str, version: str) -> None:
    eng = sa.create_engine(url)
    q = eng.dialect.identifier_preparer.quote
    with eng.begin() as c:
        c.execute(sa.text(f"UPDATE {q('VERSION')} SET {q('SCHEMA_VERSION')} = :v"), {"v": version})
    eng.dispose()


def _count_cq(conn, ms) -> int:
    t = ms.tables.COMPACTION_QUEUE
    return conn.execute(sa.select(sa.func.count()).select_from(t.clause)).scalar()


@pytest.mark.parametrize(
    "version,ok",
    [
        ("3.1.0", True),
        ("3.1.3000", True),
        ("4.0.0", True),
        ("4.0.1", True),
        ("2.3.0", False),
        ("4.1.0", False),
        ("3.0.0", False),
    ],
)
def test_schema_version_decides_writes(tmp_path, version, ok):
    url = f"sqlite:///{tmp_path}/ms.db"
    assert run_cli(["metastore", "init", url, "--hive-version", version[0] if version[0] in "34" else "3"]) == 0
    _set_version(url, version)
    ms = connect(url, hive_version=int(version[0]) if version[0] in "34" else 3)
    if ok:
        assert steps.check_writable(ms) == version
    else:
        with pytest.raises(RefusedError) as e:
            steps.check_writable(ms)
        assert e.value.exit_code == ExitCode.CONFLICT
        assert version in str(e.value)


def test_read_only_refuses_every_step(tmp_path):
    url = f"sqlite:///{tmp_path}/ms.db"
    assert run_cli(["metastore", "init", url, "--hive-version", "3"]) == 0
    ms = connect(url)
    ran = []
    with pytest.raises(steps.MetastoreReadOnly):
        steps.write_step(ms, lambda c: ran.append(1), name="test", read_only=True)
    steps.forbid_writes()
    try:
        with pytest.raises(steps.MetastoreReadOnly) as e:
            steps.write_step(ms, lambda c: ran.append(1), name="enqueue a compaction")
        assert "--read-only" in str(e.value)
    finally:
        steps.allow_writes()
    assert ran == []


def test_step_is_one_transaction_and_retries_deadlocks(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path}/ms.db"
    assert run_cli(["metastore", "init", url, "--hive-version", "3"]) == 0
    ms = connect(url)
    monkeypatch.setattr(steps, "RETRY_STEP_S", 0.0)
    cq = ms.tables.COMPACTION_QUEUE
    calls = []

    def insert_then_fail_once(conn):
        conn.execute(
            sa.insert(cq.clause).values(
                {
                    cq.CQ_ID.name: 7 + len(calls),
                    cq.CQ_DATABASE.name: "db",
                    cq.CQ_TABLE.name: "t",
                    cq.CQ_STATE.name: "i",
                    cq.CQ_TYPE.name: "a",
                }
            )
        )
        calls.append(1)
        if len(calls) == 1:
            raise sa.exc.OperationalError("INSERT", {}, Exception("database is locked"))
        return _count_cq(conn, ms)

    # the first attempt's insert was rolled back with it: exactly one row after the retry
    assert steps.write_step(ms, insert_then_fail_once, name="test") == 1
    assert len(calls) == 2

    def fail(conn):
        conn.execute(
            sa.insert(cq.clause).values(
                {
                    cq.CQ_ID.name: 99,
                    cq.CQ_DATABASE.name: "db",
                    cq.CQ_TABLE.name: "t",
                    cq.CQ_STATE.name: "i",
                    cq.CQ_TYPE.name: "a",
                }
            )
        )
        raise ValueError("boom")

    with pytest.raises(ValueError):
        steps.write_step(ms, fail, name="test")
    with ms.read() as conn:
        assert _count_cq(conn, ms) == 1


def test_cli_read_only_flag_env_and_profile(tmp_path, monkeypatch):
    from acidctl.cli import main as climain

    monkeypatch.setenv("ACIDCTL_CONFIG", str(tmp_path / "cfg.toml"))
    (tmp_path / "cfg.toml").write_text('[profiles.prod]\nmetastore = "sqlite:///x.db"\nread_only = true\n')
    for argv, env in ((["--read-only"], {}), ([], {"ACIDCTL_READ_ONLY": "1"}), (["--profile", "prod"], {})):
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        climain.app(args=argv + ["show", "--help"], prog_name="acidctl", standalone_mode=False)
        assert steps.writes_forbidden(), argv
        for k in env:
            monkeypatch.delenv(k)
        climain.app(args=["show", "--help"], prog_name="acidctl", standalone_mode=False)
        assert not steps.writes_forbidden()
