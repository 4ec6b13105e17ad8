"""CLI plumbing (issue #13): one --hive-version type everywhere, click's usage errors as one
line with exit 2 (a JSON error object in -o json), and no command module importing main."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from tests.conftest import REAL, run_cli

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


@pytest.mark.parametrize(
    "argv",
    [
        ["state", "/nonexistent", "--assume-committed", "--hive-version", "5"],
        ["dump", "--merged", "--assume-committed", "--hive-version", "1", "/nonexistent"],
        ["show", "transactions", "--hive-version", "2"],
        ["show", "transactions", "--hive-version", "x"],
        ["demo", "--hive-version", "5", "/nonexistent"],
        ["metastore", "init", "sqlite://", "--hive-version", "3.2.x"],
        ["compact", "--major", "--assume-committed", "--hive-version", "5", "/nonexistent"],
        ["clean", "/nonexistent", "--assume-committed", "--hive-version", "1"],
    ],
)
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
            elif (
                isinstance(node, ast.ImportFrom)
                and node.module == "acidctl.cli"
                and any(a.name == "main" for a in node.names)
            ):
                offenders.append(path.name)
    assert offenders == []


def test_global_options_do_not_leak_between_runs(tmp_path):
    """-o json in one run does not make the next run's errors JSON (no module-level state)."""
    assert run_cli("-o", "json", "state", str(tmp_path / "missing"), "--assume-committed").code != 0
    r = run_cli("state", str(tmp_path / "missing"), "--assume-committed")
    assert r.code != 0 and r.stderr.startswith("acidctl: error: "), r.stderr


def test_metastore_init_defaults_to_hive_3_like_demo(tmp_path):
    """One default Hive version: `demo`, `state` rules and `metastore init` all default to 3.1."""
    r = run_cli("-o", "json", "metastore", "init", f"sqlite:///{tmp_path / 'ms.db'}")
    assert r.code == 0, r
    assert json.loads(r.stdout)["schema_version"].startswith("3.1")


def test_fs_options_are_typed_key_values():
    from acidctl.cli.options import parse_fs_options
    from acidctl.errors import UsageError

    assert parse_fs_options(["anon=true", "port=9870", "endpoint_url=http://h:1/x=y", "n=-3"]) == {
        "anon": True,
        "port": 9870,
        "endpoint_url": "http://h:1/x=y",
        "n": -3,
    }
    with pytest.raises(UsageError):
        parse_fs_options(["novalue"])


@pytest.mark.parametrize("given,expected", [("3.1.3", 3), ("4.0.1", 4), ("2.3.9", 2)])
@pytest.mark.parametrize(
    "command",
    [
        ["clean", "--min-age", "0"],
        ["compact", "--dry-run", "--major", "--table-is-quiescent"],
    ],
)
def test_compact_and_clean_take_the_shared_hive_version_type(tmp_path, command, given, expected):
    """compact and clean parse --hive-version as every other table command does: a Hive release
    names its major version (before, they took only a bare int)."""
    import shutil

    table = tmp_path / "nation"
    shutil.copytree(REAL / "trino" / "nation_delete_deltas", table)
    r = run_cli("-o", "json", *command, "--assume-committed", "--hive-version", given, str(table))
    assert r.code == 0, r
    assert json.loads(r.stdout)["hive_version"] == expected


@pytest.mark.parametrize(
    "command,text",
    [
        ("compact", "the compactor list (hwm = lowest open - 1) is derived from it"),
        ("clean", "Cleaner rules: 3 (default)"),
    ],
)
def test_compact_and_clean_keep_their_own_snapshot_help(command, text):
    r = run_cli(command, "--help")
    assert r.code == 0
    assert text in " ".join(r.stdout.split()), r.stdout


def _params(*path: str) -> dict:
    """The click parameters of ``acidctl PATH...`` by flag."""
    import typer

    from acidctl.cli.main import app

    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]  # type: ignore[attr-defined]
    return {p.opts[0]: p for p in cmd.params}


@pytest.mark.parametrize("command", ["compact", "export", "worker", "upgrade-check"])
def test_spark_options_are_declared_once(command):
    """--engine / --master / --spark-conf: one flag, metavar and type in every Spark command
    (cli/options.py); only the engines offered and the help wording are the command's."""
    p = _params(command)
    assert p["--master"].metavar == "URL" and p["--master"].default == "local[*]"
    assert p["--spark-conf"].metavar == "KEY=VALUE" and p["--spark-conf"].multiple
    assert p["--engine"].metavar == "auto|local|spark" and p["--engine"].default == "auto"


@pytest.mark.parametrize("command", [["compact", "--major", "--engine", "spark", "."], ["worker", "--once"]])
def test_bad_spark_conf_is_the_same_one_line_usage_error(tmp_path, command):
    r = run_cli("--metastore", f"sqlite:///{tmp_path / 'none.db'}", *command, "--spark-conf", "novalue")
    assert r.code == 2, r
    assert r.stderr.strip() == "acidctl: error: --spark-conf expects KEY=VALUE, got 'novalue'"


def test_data_columns_of_dump_and_compact_say_what_they_do():
    """dump --columns selects row columns, compact --columns renames the row struct: different
    meanings, each declared with its own precise help (both take name:type,... for insert-only)."""
    dump, compact = _params("dump")["--columns"].help, _params("compact")["--columns"].help
    assert "Only these columns" in dump and "any case" in dump
    assert "renames, selects nothing" in compact
    assert "name:type" in dump and "name:type" in compact


def test_config_file_is_read_only_by_commands_that_write_to_a_metastore(tmp_path, monkeypatch):
    """The profile key read_only is looked up when a metastore write is first checked: with a
    config file that does not parse, commands that never write work, and a write still honours
    (here: fails on) the file — one line, exit 2, nothing written."""
    cfg = tmp_path / "broken.toml"
    cfg.write_text("[profiles.prod\nread_only = tru\n")
    monkeypatch.setenv("ACIDCTL_CONFIG", str(cfg))
    nation = REAL / "trino" / "nationFile25kRowsSortedOnNationKey" / "bucket_00000"
    assert run_cli("--help").code == 0
    dumped = run_cli("-o", "json", "dump", "-n", "1", str(nation))
    assert dumped.code == 0 and json.loads(dumped.stdout)["row"]["n_nationkey"] == 0, dumped
    state = run_cli("-o", "json", "state", "--assume-committed", str(REAL / "trino" / "nation_delete_deltas"))
    assert state.code == 0, state
    monkeypatch.delenv("ACIDCTL_CONFIG")
    assert run_cli("-o", "json", "demo", str(tmp_path / "demo")).code == 0
    url = f"sqlite:///{tmp_path / 'demo' / 'metastore.db'}"
    monkeypatch.setenv("ACIDCTL_CONFIG", str(cfg))
    # a read of the metastore does not need the key either
    assert run_cli("--metastore", url, "show", "transactions").code == 0
    # demo.py: transaction 10 is open; aborting it is a write: the broken file is reported
    r = run_cli("--metastore", url, "abort", "transactions", "10", "--execute")
    assert (
        r.code == 2
        and r.stderr.startswith("acidctl: error: cannot read config file")
        and len(r.stderr.splitlines()) == 1
    )
    monkeypatch.delenv("ACIDCTL_CONFIG")
    txns = json.loads(run_cli("--metastore", url, "-o", "json", "show", "transactions").stdout)["transactions"]
    assert {(t["txnid"], t["state"]) for t in txns} >= {(10, "OPEN")}
