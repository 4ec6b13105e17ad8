"""The migrate command's plumbing: pyiceberg/deltalake/rich stay out of every other command's
start-up and of --help; missing options and extras are one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]


def _modules(argv: list[str]) -> tuple[int, list[str], str]:
    code = (
        "import sys, json\n"
        "from acidctl.cli.main import main\n"
        "try:\n    main(json.loads(sys.argv[1]))\n"
        "except SystemExit as e:\n    code = e.code\n"
        "sys.stderr.write(json.dumps([code, sorted(sys.modules)]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", code, json.dumps(argv)], capture_output=True, env=env, cwd=ROOT)
    got_code, modules = json.loads(p.stderr.decode().splitlines()[-1])
    return got_code, modules, p.stdout.decode()


def test_help_imports_no_target_library():
    code, modules, out = _modules(["--help"])
    assert code in (0, None)
    assert "migrate" in out
    heavy = ("pyiceberg", "deltalake", "rich", "pyarrow", "acidctl.migrate")
    assert not [m for m in modules if m.split(".")[0] in heavy or m.startswith("acidctl.migrate")]


def test_migrate_help_imports_no_target_library():
    code, modules, out = _modules(["migrate", "--help"])
    assert code in (0, None)
    assert "--catalog-name" in out and "[required]" in out  # typer's plain rendering (no rich)
    assert not [m for m in modules if m.split(".")[0] in ("pyiceberg", "deltalake", "rich", "pyarrow")]


def test_iceberg_without_catalog_is_a_usage_error(tmp_path):
    (tmp_path / "t").mkdir()
    r = run_cli("migrate", str(tmp_path / "t"), "--assume-committed", "--to", "iceberg", "--target", "ns.t")
    assert r.code == 2
    assert "--catalog" in r.stderr and "Traceback" not in r.stderr


def test_bad_target_name_and_precision(tmp_path):
    (tmp_path / "t").mkdir()
    args = ["migrate", str(tmp_path / "t"), "--assume-committed", "--to", "iceberg", "--catalog", "sqlite:////x.db"]
    r = run_cli(*args, "--warehouse", str(tmp_path), "--target", "nodot")
    assert r.code == 2 and "NAMESPACE.NAME" in r.stderr
    r = run_cli(*args, "--warehouse", str(tmp_path), "--target", "ns.t", "--timestamp-precision", "ms")
    assert r.code == 2 and "--timestamp-precision" in r.stderr


def test_catalog_that_is_no_catalog_is_a_usage_error(tmp_path):
    """A new user's pass: ``--catalog foo://x`` answered "an SQL catalog needs --warehouse"."""
    (tmp_path / "t").mkdir()
    r = run_cli(
        "migrate", str(tmp_path / "t"), "--assume-committed", "--to", "iceberg", "--target", "ns.t",
        "--catalog", "foo://x", "--warehouse", str(tmp_path / "wh"),
    )  # fmt: skip
    assert r.code == 2, r
    assert "--catalog 'foo://x' is not a catalog" in r.stderr and "thrift://HOST:PORT" in r.stderr


def test_unreachable_or_unopenable_catalog_is_exit_5(tmp_path, monkeypatch):
    """An unreachable Hive catalog failed lazily inside pyiceberg (exit 1, "a bug"); a SQLite
    catalog in a directory that does not exist says which file it tried and the four-slash rule."""
    import socket

    (tmp_path / "t").mkdir()
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = ["migrate", str(tmp_path / "t"), "--assume-committed", "--to", "iceberg", "--target", "ns.t"]
    r = run_cli(*base, "--catalog", f"thrift://127.0.0.1:{port}")
    assert r.code == 5, r
    assert f"cannot open the Iceberg catalog thrift://127.0.0.1:{port}" in r.stderr and "Traceback" not in r.stderr
    monkeypatch.chdir(tmp_path)
    r = run_cli(*base, "--catalog", "sqlite:///nodir/cat.db", "--warehouse", str(tmp_path / "wh"))
    assert r.code == 5, r
    assert str(tmp_path / "nodir" / "cat.db") in r.stderr and "sqlite:////nodir/cat.db" in r.stderr
