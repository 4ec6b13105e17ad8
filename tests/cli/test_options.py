"""CLI plumbing (issue #13): one --hive-version type everywhere, click's usage errors as one
line with exit 2 (a JSON error object in -o json), and no command module importing main."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

CLI = Path(__file__).resolve().parents[2] / "acidctl" / "cli"


@pytest.mark.parametrize("given,expected", [("3", 3), ("4", 4), ("3.1.3", 3), ("4.0.1", 4), ("auto", None)])
def test_hive_version_type_accepts_versions(given, expected):
    from acidctl.cli.options import HIVE_VERSION

    assert HIVE_VERSION.convert(given, None, None) == expected


def test_reader_hive_version_takes_hive_2():
    from acidctl.cli.options import HIVE_VERSION, READER_HIVE_VERSION

    assert READER_HIVE_VERSION.convert("2.3.10", None, None) == 2
    assert READER_HIVE_VERSION.convert("4", None, None) == 4
    with pytest.raises(Exception):
        HIVE_VERSION.convert("2", None, None)


@pytest.mark.parametrize("argv", [
    ["state", "/nonexistent", "--assume-committed", "--hive-version", "5"],
    ["dump", "--merged", "--assume-committed", "--hive-version", "1", "/nonexistent"],
    ["show", "transactions", "--hive-version", "2"],
    ["show", "transactions", "--hive-version", "x"],
    ["demo", "--hive-version", "5", "/nonexistent"],
    ["metastore", "init", "sqlite://", "--hive-version", "3.2.x"],
])
def test_bad_hive_version_is_a_one_line_usage_error(argv):
    r = run_cli(*argv)
    assert r.code == 2, r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("acidctl: error: ") and "--hive-version" in lines[0], r.stderr
    assert "see 'acidctl " in lines[0]


def test_usage_error_json():
    r = run_cli("-o", "json", "state", "--no-such-option", "x")
    assert r.code == 2
    err = json.loads(r.stderr)["error"]
    assert err["type"] == "UsageError" and err["exit_code"] == 2 and "--no-such-option" in err["message"]
    assert err["hint"] == "see 'acidctl state --help'"


def test_no_command_module_imports_main():
    """main imports the command modules; none imports main back (no import cycle)."""
    from acidctl.cli.main import COMMAND_MODULES

    offenders = []
    for name in COMMAND_MODULES:
        path = CLI / (name.rsplit(".", 1)[1] + ".py")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "acidctl.cli.main":
                offenders.append(path.name)
            elif isinstance(node, ast.ImportFrom) and node.module == "acidctl.cli" and any(
                    a.name == "main" for a in node.names):
                offenders.append(path.name)
    assert offenders == []


def test_global_options_do_not_leak_between_runs(tmp_path):
    """-o json in one run does not make the next run's errors JSON (no module-level state)."""
    assert run_cli("-o", "json", "state", str(tmp_path / "missing"), "--assume-committed").code != 0
    r = run_cli("state", str(tmp_path / "missing"), "--assume-committed")
    assert r.code != 0 and r.stderr.startswith("acidctl: error: "), r.stderr
