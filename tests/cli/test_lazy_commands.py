"""`acidctl CMD ...` imports only CMD's module (start-up counts in a 1M-row dump, issue #14);
`--help`, docgen and unknown commands still see every command, in the same order."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "data" / "fixtures" / "golden" / "invalid_utf8" / "bucket_00000"


def _names(app: typer.Typer) -> list[str]:
    """Top-level command names of a typer app, as the CLI spells them."""
    from typer.main import get_command

    return list(get_command(app).commands)  # type: ignore[attr-defined]


def test_owners_name_every_command_and_module():
    from acidctl.cli import main as climain

    # every command of the full CLI has owners, every owner is a command module, every module owns one
    assert sorted(_names(climain.app)) == sorted(climain.COMMAND_OWNERS)
    owners = {m for mods in climain.COMMAND_OWNERS.values() for m in mods}
    assert owners == set(climain.COMMAND_MODULES)


@pytest.mark.parametrize("command", ["dump", "state", "abort", "why", "upgrade-check", "metastore"])
def test_owners_alone_register_the_command(command):
    """Registering only a command's owners (on a fresh app) gives that command, whole."""
    from acidctl.cli import main as climain

    fresh = typer.Typer()
    fresh.callback()(lambda: None)
    for name in climain.COMMAND_OWNERS[command]:
        module = importlib.import_module(name)
        if hasattr(module, "register"):
            module.register(fresh)
    names = _names(fresh)
    assert command in names
    full = typer.main.get_command(climain.app).commands[command]  # type: ignore[attr-defined]
    mine = typer.main.get_command(fresh).commands[command]  # type: ignore[attr-defined]
    assert sorted(getattr(full, "commands", {})) == sorted(getattr(mine, "commands", {}))


@pytest.mark.parametrize(
    "argv,expected",
    [
        (["dump", "x"], "dump"),
        (["-o", "json", "dump", "x"], "dump"),
        (["--output=json", "state", "p"], "state"),
        (["-ojson", "dump"], "dump"),
        (["-vo", "json", "show", "locks"], "show"),
        (["-qv", "state"], "state"),
        (["--fs-option", "k=v", "--metastore", "sqlite:///m.db", "--profile", "p", "compact", "t"], "compact"),
        (["--read-only", "--wide", "doctor"], "doctor"),
        (["--", "dump"], "dump"),
        (["--help"], None),
        (["-o", "json"], None),
        ([], None),
    ],
)
def test_requested_command(argv, expected):
    from acidctl.cli.main import _requested_command

    assert _requested_command(argv) == expected


def test_dump_imports_no_other_command_module():
    code = (
        "import sys, json\n"
        "from acidctl.cli.main import main\n"
        "try:\n    main(['-o', 'json', 'dump', sys.argv[1]])\n"
        "except SystemExit as e:\n    code = e.code\n"
        "sys.stderr.write(json.dumps([code, sorted(sys.modules)]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", code, str(FIXTURE)], capture_output=True, env=env, cwd=ROOT, check=True)
    code, modules = json.loads(p.stderr.decode().splitlines()[-1])
    assert code == 0
    assert p.stdout.count(b"\n") == 15  # the fixture's 15 rows (tests/orc/test_dump_golden.py)
    commands = {m for m in modules if m.startswith("acidctl.cli.") and m.endswith("_cmd")}
    assert commands == {"acidctl.cli.dump_cmd"}
    assert not [m for m in modules if m.split(".")[0] in ("sqlalchemy", "pyspark", "jinja2", "tabulate")]


def _listed(help_text: str) -> list[str]:
    # the command list ends at the blank line before the epilog (the preview and global-option rules)
    block = help_text.split("Commands:")[1].split("\n\n")[0]
    return [line.split()[0] for line in block.splitlines() if line.strip()]


def test_help_after_one_command_lists_every_command_in_the_same_order():
    # one process: `state` first (only its module loaded), then --help: the listing of a
    # process that loaded everything at once
    code = (
        "import sys\n"
        "from acidctl.cli.main import main\n"
        "for argv in (['-o', 'json', 'state', sys.argv[1]], ['--help']):\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    after = subprocess.run(
        [sys.executable, "-c", code, str(FIXTURE.parent)], capture_output=True, env=env, cwd=ROOT, text=True
    )
    fresh = subprocess.run(
        [sys.executable, "-m", "acidctl", "--help"], capture_output=True, env=env, cwd=ROOT, text=True, check=True
    )
    from acidctl.cli import main as climain

    assert sorted(_listed(fresh.stdout)) == sorted(climain.COMMAND_OWNERS)
    assert _listed(after.stdout.split("Usage: acidctl")[1]) == _listed(fresh.stdout)


def test_unknown_command_is_a_usage_error_naming_it():
    r = run_cli("-o", "json", "dumpp", "x")
    assert r.code == 2
    assert "dumpp" in json.loads(r.stderr)["error"]["message"]
