"""Shared fixtures: paths to the copied fixtures, CLI runner, isolation of user config."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest
from tests.servers import unavailable

DATA = Path(__file__).parent / "data"
FIXTURES = DATA / "fixtures"
GOLDEN = FIXTURES / "golden"
REAL = FIXTURES / "real"


@pytest.fixture(autouse=True)
def _isolate_env(monkeypatch, tmp_path_factory):
    """No user config or ACIDCTL_* variables leak into tests."""
    for k in list(os.environ):
        if k.startswith("ACIDCTL_"):
            monkeypatch.delenv(k, raising=False)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ACIDCTL_CONFIG", str(home / ".acidctl.toml"))
    monkeypatch.setenv("TZ", "UTC")
    # text tables are fitted to $COLUMNS (pytest-xdist workers inherit one): tests that parse
    # text read full lines unless they set COLUMNS themselves
    monkeypatch.delenv("COLUMNS", raising=False)
    # and no process-wide write switch a `--read-only` CLI run sets (steps.forbid_writes outlives the
    # invocation; the recorder and every write step check it)
    # nor the renderer's per-invocation layout (`--wide`, `-o custom-columns=...`)
    from acidctl.cli.output import set_columns, set_wide
    from acidctl.metastore import steps

    steps.allow_writes()
    set_wide(False)
    set_columns(None)
    yield
    steps.allow_writes()
    set_wide(False)
    set_columns(None)


class Result:
    def __init__(self, code: int, out: bytes, err: str):
        self.code = code
        self.stdout_bytes = out
        self.stdout = out.decode("utf-8", "replace")
        self.stderr = err

    def __repr__(self):
        return f"Result(code={self.code}, stdout={self.stdout[:200]!r}, stderr={self.stderr[:500]!r})"


class _BytesStdout(io.TextIOWrapper):
    pass


def run_cli(*args: str) -> Result:
    """Run ``acidctl ARGS`` in-process, capturing stdout as bytes and stderr as text."""
    from acidctl.cli import main as climain

    out_buf = io.BytesIO()
    out = io.TextIOWrapper(out_buf, encoding="utf-8", newline="", write_through=True)
    err = io.StringIO()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        climain.main([str(a) for a in args])
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    finally:
        try:
            out.flush()
        except ValueError:
            pass
        sys.stdout, sys.stderr = old
    return Result(code, out_buf.getvalue(), err.getvalue())


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(scope="session")
def kdc():
    """A throwaway MIT KDC on 127.0.0.1 (tests/kerberos/realm.py), one per session: realm
    ACIDCTL.TEST, user ``alice`` with a keytab and a ticket in a per-session ticket cache.
    Processes speak Kerberos only with ``kdc.env()`` set (use the ``kerberos_env`` fixture of
    tests/kerberos, or pass it to subprocesses). Skips (fails under ACIDCTL_REQUIRE_SERVERS=1)
    without Debian's krb5-kdc / krb5-user (scripts/install-test-servers.sh)."""
    from tests.kerberos.realm import Realm, missing_kdc_binaries

    missing = missing_kdc_binaries()
    if missing:
        msg = f"MIT Kerberos binaries missing: {', '.join(missing)} (install with scripts/install-test-servers.sh)"
        unavailable(msg)
    realm = Realm()
    try:
        realm.start()
        yield realm
    finally:
        realm.stop()
