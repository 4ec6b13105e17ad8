"""Connection handling: URL precedence, one-line errors with their exit codes, no passwords
anywhere (output, errors, -v tracebacks)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
import sqlalchemy as sa

from acidctl.errors import UsageError
from acidctl.metastore.connection import resolve_url
from tests.metastore.conftest import MY_PASSWORD, PG_PASSWORD, my_url, pg_url
from tests.metastore.helpers import run_cli


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(argv, env=None):
    e = dict(os.environ)
    e.pop("ACIDCTL_METASTORE_URL", None)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "acidctl"] + argv, capture_output=True, text=True, env=e, timeout=60)


# ---------------------------------------------------------------------------------------
# URL precedence: flag > env > config file
# ---------------------------------------------------------------------------------------


def test_url_precedence(tmp_path):
    cfg = tmp_path / "acidctl.toml"
    cfg.write_text(
        'default_profile = "prod"\n[profiles.prod]\nmetastore = "sqlite:///prod.db"\n'
        '[profiles.dev]\nmetastore = "sqlite:///dev.db"\n'
    )
    env = {"ACIDCTL_CONFIG": str(cfg)}
    assert resolve_url(None, env=env) == "sqlite:///prod.db"
    assert resolve_url(None, profile="dev", env=env) == "sqlite:///dev.db"
    assert (
        resolve_url(None, profile="dev", env={**env, "ACIDCTL_METASTORE_URL": "sqlite:///env.db"}) == "sqlite:///env.db"
    )
    assert (
        resolve_url("sqlite:///flag.db", env={**env, "ACIDCTL_METASTORE_URL": "sqlite:///env.db"})
        == "sqlite:///flag.db"
    )
    with pytest.raises(UsageError, match="profile 'nope'"):
        resolve_url(None, profile="nope", env=env)
    with pytest.raises(UsageError, match="no metastore"):
        resolve_url(None, env={"ACIDCTL_CONFIG": str(tmp_path / "missing.toml")})
    cfg2 = tmp_path / "b.toml"
    cfg2.write_text('[profiles.default]\nmetastore = "sqlite:///d.db"\n')
    assert resolve_url(None, env={"ACIDCTL_CONFIG": str(cfg2)}) == "sqlite:///d.db"


def test_cli_profile_from_config(tmp_path):
    db = tmp_path / "p.db"
    r = _run(["metastore", "init", f"sqlite:///{db}", "--hive-version", "3"])
    assert r.returncode == 0, r.stderr
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[profiles.lab]\nmetastore = "sqlite:///{db}"\n')
    r = _run(["--profile", "lab", "-o", "json", "show", "transactions"], env={"ACIDCTL_CONFIG": str(cfg)})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"hive_version": 3, "txn_high_water_mark": 0, "transactions": []}
    # env beats the config file
    r = _run(
        ["--profile", "lab", "show", "transactions"],
        env={"ACIDCTL_CONFIG": str(cfg), "ACIDCTL_METASTORE_URL": f"sqlite:///{tmp_path}/none.db"},
    )
    assert r.returncode == 5
    r = _run(["show", "locks"], env={"ACIDCTL_CONFIG": str(tmp_path / "nothing.toml")})
    assert r.returncode == 2 and "no metastore" in r.stderr


# ---------------------------------------------------------------------------------------
# failures: exit codes, one line, no password
# ---------------------------------------------------------------------------------------


def _one_line_no_secret(r, *secrets):
    for s in secrets:
        assert s not in r.stdout and s not in r.stderr
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, r.stderr
    return lines[0]


@pytest.mark.postgres
def test_pg_dead_server_and_wrong_password(pg_server):
    dead = f"postgresql+psycopg://hive:{PG_PASSWORD}@127.0.0.1:{_dead_port()}/metastore"
    r = _run(["--metastore", dead, "show", "transactions"])
    assert r.returncode == 5
    line = _one_line_no_secret(r, PG_PASSWORD)
    assert line.startswith("acidctl: error: cannot reach the metastore") and "hive:***@" in line
    bad = pg_url(pg_server, "postgres", password="wrong-Pw-123")
    r = _run(["-v", "--metastore", bad, "show", "locks"])
    assert r.returncode == 5
    assert "wrong-Pw-123" not in r.stderr and "wrong-Pw-123" not in r.stdout
    assert "password authentication failed" in r.stderr
    r = _run(["-o", "json", "--metastore", bad, "show", "locks"])
    err = json.loads(r.stderr.strip().splitlines()[-1])["error"]
    assert err["exit_code"] == 5 and err["type"] == "MetastoreUnavailable"
    assert "wrong-Pw-123" not in r.stderr


@pytest.mark.postgres
def test_pg_database_without_hive_tables(pg_server):
    r = _run(["--metastore", pg_url(pg_server, "postgres"), "show", "compactions"])
    assert r.returncode == 7
    line = _one_line_no_secret(r, PG_PASSWORD)
    assert "not a Hive metastore" in line


@pytest.mark.mysql
def test_mysql_dead_wrong_password_no_tables(mysql_server):
    dead = f"mysql+pymysql://hive:{MY_PASSWORD}@127.0.0.1:{_dead_port()}/metastore"
    r = _run(["--metastore", dead, "show", "transactions"])
    assert r.returncode == 5
    _one_line_no_secret(r, MY_PASSWORD)
    bad = my_url(mysql_server, "mysql", password="wrong-Pw-456")
    r = _run(["-v", "--metastore", bad, "show", "locks"])
    assert r.returncode == 5 and "Access denied" in r.stderr
    assert "wrong-Pw-456" not in r.stderr + r.stdout
    r = _run(["--metastore", my_url(mysql_server, "mysql"), "show", "locks"])
    assert r.returncode == 7
    _one_line_no_secret(r, MY_PASSWORD)


def test_sqlite_missing_and_empty(tmp_path):
    r = _run(["--metastore", f"sqlite:///{tmp_path}/missing.db", "show", "transactions"])
    assert r.returncode == 5
    e = tmp_path / "empty.db"
    sa.create_engine(f"sqlite:///{e}").connect().close()
    r = _run(["--metastore", f"sqlite:///{e}", "show", "transactions"])
    assert r.returncode == 7 and "not a Hive metastore" in r.stderr


def test_unsupported_schema_version(metastore, capsys):
    url, rec = metastore
    v = rec.T.VERSION
    with rec.engine.begin() as c:
        c.execute(sa.update(v.clause).values({v.SCHEMA_VERSION.name: "1.2.0"}))
    capsys.readouterr()
    assert run_cli(["--metastore", url, "show", "transactions"]) == 7
    err = capsys.readouterr().err
    assert "unsupported Hive metastore schema version '1.2.0'" in err
    # --hive-version overrides the detection
    assert run_cli(["--metastore", url, "show", "transactions", "--hive-version", str(rec.hive_version)]) == 0
    assert run_cli(["--metastore", url, "show", "transactions", "--hive-version", "2"]) == 2


def test_bad_urls(capsys):
    assert run_cli(["--metastore", "not a url", "show", "locks"]) == 2
    assert run_cli(["--metastore", "oracle://u:topsecret@h/x", "show", "locks"]) == 2
    err = capsys.readouterr().err
    assert "topsecret" not in err


def test_recorder_writes_by_schema_version_not_by_creator(tmp_path):
    """A database with Hive's own VERSION comment is written to (the schema version decides, §9–10);
    a schema version acidctl does not write to is refused (exit 6)."""
    from acidctl.errors import RefusedError
    from acidctl.metastore.init import init_metastore
    from acidctl.metastore.recorder import Recorder

    url = f"sqlite:///{tmp_path}/f.db"
    init_metastore(url, hive_version=4)
    eng = sa.create_engine(url)
    with eng.begin() as c:
        assert c.execute(sa.text('SELECT "VERSION_COMMENT" FROM "VERSION"')).scalar() == "Hive release version 4.0.0"
    assert Recorder(url).open_txn(now_ms=1) == 1
    with eng.begin() as c:
        c.execute(sa.text('UPDATE "VERSION" SET "SCHEMA_VERSION" = \'2.3.0\''))
    with pytest.raises(RefusedError, match="2.3.0"):
        Recorder(url, hive_version=4)
    eng.dispose()


def test_missing_server_binaries_fail_when_required(monkeypatch):
    """Without server binaries the fixtures skip, or fail under ACIDCTL_REQUIRE_SERVERS=1."""
    from _pytest.outcomes import Failed, Skipped

    from tests.metastore import conftest

    monkeypatch.delenv("ACIDCTL_REQUIRE_SERVERS", raising=False)
    with pytest.raises(Skipped, match="install-test-servers"):
        conftest._missing("PostgreSQL server binaries not found")
    monkeypatch.setenv("ACIDCTL_REQUIRE_SERVERS", "1")
    with pytest.raises(Failed, match="ACIDCTL_REQUIRE_SERVERS=1"):
        conftest._missing("PostgreSQL server binaries not found")
