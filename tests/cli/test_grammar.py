"""One grammar (issue 22, new-user report #9-#14, #17, #22-#24): global options anywhere, no
command option shadowing a global one, one ``--engine``, ``--partition`` repeatable, short
command summaries, help that never splits a word, one "Did you mean".

The ``--dry-run`` of every writing command is tests/cli/test_dry_run.py.
"""

from __future__ import annotations

import json
import sqlite3

import click
import pytest

from tests.conftest import run_cli

#: every option of the top-level callback (acidctl/cli/main.py ``_global``)
GLOBALS = {"-o", "--output", "-v", "--verbose", "-q", "--quiet", "--fs-option", "--metastore", "--profile"}
GLOBALS |= {"--wide", "--read-only", "--version"}


def _root() -> click.Group:
    import typer

    from acidctl.cli.main import app

    return typer.main.get_command(app)  # type: ignore[return-value]


def _walk(cmd: click.Command, path: tuple[str, ...] = ()):
    yield path, cmd
    if isinstance(cmd, click.Group):
        for name, sub in cmd.commands.items():
            yield from _walk(sub, path + (name,))


def _option_names(cmd: click.Command) -> set[str]:
    return {n for p in cmd.params if isinstance(p, click.Option) for n in [*p.opts, *p.secondary_opts]}


def test_the_global_options_are_the_callbacks_options():
    """GLOBALS above is the real list: a new global option must be added to the tests too."""
    assert _option_names(_root()) == GLOBALS


def test_no_command_option_has_the_name_of_a_global_one():
    """Report #13: ``revert --output NAME`` shadowed ``-o/--output``, ``show write-ids --verbose``
    the global ``-v``. With global options accepted after the command, a clash would make the
    position decide the meaning: none may exist, in any command or subcommand."""
    clashes = {}
    for path, cmd in _walk(_root()):
        if not path:
            continue
        shared = _option_names(cmd) & GLOBALS
        if shared:
            clashes[" ".join(path)] = sorted(shared)
    assert clashes == {}


def test_renamed_options():
    root = _root()
    assert "--dir" in _option_names(root.commands["revert"])
    assert "--each-id" in _option_names(root.commands["show"].commands["write-ids"])  # type: ignore[attr-defined]
    export = {p.name: p for p in root.commands["export"].params}
    assert export["to"].opts == ["--to"] and list(export["to"].type.choices) == ["parquet", "orc"]  # type: ignore[attr-defined]
    assert export["file_format"].opts == ["--format"]  # the table's own files, as in dump/compact/clean
    assert export["input_format"].hidden  # the old spelling, kept hidden


@pytest.mark.parametrize("command", ["compact", "worker", "export", "upgrade-check"])
def test_engine_is_one_option(command):
    """Report #12: --engine had four meanings; now auto|local|spark with default auto everywhere."""
    [p] = [p for p in _root().commands[command].params if p.name == "engine"]
    assert p.default == "auto" and list(p.type.choices) == ["auto", "local", "spark"]  # type: ignore[attr-defined]
    [m] = [p for p in _root().commands[command].params if p.name == "master"]
    assert m.metavar == "URL"


def test_partition_is_repeatable_wherever_it_is_accepted():
    for path, cmd in _walk(_root()):
        for p in cmd.params:
            if isinstance(p, click.Option) and "--partition" in p.opts:
                assert p.multiple, " ".join(path)
    # accepted wherever DB.TABLE/PART is (clean), and the usage line says so
    clean = _root().commands["clean"]
    assert "--partition" in _option_names(clean)
    assert [p.metavar for p in clean.params if isinstance(p, click.Argument)] == ["PATH|DB.TABLE[/PART]"]


# -- global options in any position -------------------------------------------------------


def _stable(text: str) -> str:
    """Output without what changes from one second to the next (ages such as "1212 s old")."""
    import re

    return re.sub(r"\b\d+(\.\d+)? ?[smhd]\b", "N s", text)


def _canonical(args: list[str]):
    r = run_cli(*args)
    return r.code, _stable(r.stdout)


def _positions(command: list[str], opt: list[str]) -> list[list[str]]:
    """Every place a global option can go: before the command, after each word of it, at the end."""
    out = []
    for i in range(len(command) + 1):
        out.append(command[:i] + opt + command[i:])
    return out


def test_global_options_in_every_position(demo):
    """Report #14: ``acidctl state T -o json`` failed with "No such option '-o'". Every global
    option works anywhere after the command and subcommand, with the same result as before it."""
    root, _ = demo
    url = f"sqlite:///{root / 'metastore.db'}"
    commands = [
        ["state", "default.sales"],
        ["show", "compactions", "default.sales"],
        ["show", "write-ids", "default.sales"],
        ["dump", "--merged", "--count", "default.employee"],
    ]
    options = [
        ["-o", "json"],
        ["--output=json"],
        ["-ojson"],
        ["--metastore", url],
        ["--metastore=" + url],
        ["-v"],
        ["-q"],
        ["--wide"],
        ["--read-only"],
        ["--fs-option", "auto_mkdir=false"],
        ["-vq"],
    ]
    for command in commands:
        for opt in options:
            want = _canonical(opt + command)
            assert want[0] in (0, 4), (opt, command, want)
            for args in _positions(command, opt):
                got = run_cli(*args)
                assert (got.code, _stable(got.stdout)) == want, (args, got)


def test_each_global_option_takes_effect_after_the_command(demo, tmp_path, monkeypatch):
    root, _ = demo
    url = f"sqlite:///{root / 'metastore.db'}"
    # -o json after the command and after the subcommand
    assert json.loads(run_cli("state", "default.sales", "-o", "json").stdout)["table"] == "default.sales"
    assert "compactions" in json.loads(run_cli("show", "compactions", "-o", "json").stdout)
    assert "compactions" in json.loads(run_cli("show", "-o", "json", "compactions").stdout)
    # --metastore after the command (no environment variable)
    monkeypatch.delenv("ACIDCTL_METASTORE_URL")
    r = run_cli("show", "write-ids", "default.sales", "--metastore", url)
    assert r.code == 0 and r.stdout.strip() == "default.sales:7:7:7:4", r
    # --profile after the command: the config file's metastore
    cfg = tmp_path / "acidctl.toml"
    cfg.write_text(f'[profiles.demo]\nmetastore = "{url}"\n')
    monkeypatch.setenv("ACIDCTL_CONFIG", str(cfg))
    r = run_cli("show", "write-ids", "default.sales", "--profile", "demo")
    assert r.code == 0 and r.stdout.strip() == "default.sales:7:7:7:4", r
    monkeypatch.setenv("ACIDCTL_METASTORE_URL", url)
    # -v after the command: show write-ids then lists each open/aborted write id (as --each-id)
    assert "WRITE ID" in run_cli("show", "write-ids", "default.sales", "-v").stdout
    assert "WRITE ID" in run_cli("show", "write-ids", "default.sales", "--each-id").stdout
    assert "WRITE ID" not in run_cli("show", "write-ids", "default.sales").stdout
    # --read-only after the command: a metastore write is refused (exit 6), nothing aborted
    r = run_cli("abort", "compactions", "2", "--execute", "--read-only")
    assert r.code == 6 and "read-only" in r.stderr, r
    assert "initiated" in run_cli("show", "compactions", "--id", "2").stdout
    # --fs-option after the command reaches the filesystem (an unknown key of the local fs fails)
    r = run_cli("state", str(root / "warehouse" / "employee"), "--assume-committed", "--fs-option", "nosuch=1")
    r0 = run_cli("--fs-option", "nosuch=1", "state", str(root / "warehouse" / "employee"), "--assume-committed")
    assert (r.code, r.stdout) == (r0.code, r0.stdout)
    # --version anywhere
    assert run_cli("state", "--version").stdout.startswith("acidctl ")


def test_double_dash_ends_option_parsing(demo):
    """After ``--`` nothing is moved: ``-o`` is the PATH argument (not found, exit 3)."""
    r = run_cli("state", "--assume-committed", "--", "-o")
    assert r.code == 3 and "-o" in r.stderr and not r.stdout.startswith("{"), r


def test_a_command_options_value_is_never_taken_for_a_global_option(demo):
    """``--user -v``: -v is the value of --user (a user named -v: no transaction), not -v."""
    r = run_cli("-o", "json", "show", "transactions", "--user", "-v")
    assert r.code == 0, r
    assert json.loads(r.stdout)["transactions"] == []
    # and in a group: --each-id's place is taken by nothing; `write-ids -q` keeps -q global
    r = run_cli("show", "write-ids", "-q", "default.sales")
    assert r.code == 0 and r.stdout.strip() == "default.sales:7:7:7:4", r


# -- small items -----------------------------------------------------------------------------


@pytest.mark.parametrize("args,suggestion", [(["stat", "x"], "state"), (["show", "lock"], "locks")])
def test_did_you_mean_once(args, suggestion):
    """Report #9: "Did you mean 'state'? Did you mean 'state'?" (click and typer both added it)."""
    r = run_cli(*args)
    assert r.code == 2
    assert r.stderr.count("Did you mean") == 1 and f"Did you mean '{suggestion}'?" in r.stderr, r


def _help(*args: str, columns: int = 80) -> str:
    import os

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(columns)
    try:
        r = run_cli(*args, "--help")
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    assert r.code == 0, r
    return r.stdout


def test_top_level_help_has_a_whole_summary_per_command():
    """Report #23: summaries were cut mid-phrase ("exactly as `hive..."). Each command has one
    short line that fits 80 columns."""
    from acidctl.cli.main import SUMMARIES

    def listed(*group: str) -> list[str]:
        return _help(*group).split("Commands:\n", 1)[1].split("\n\n", 1)[0].splitlines()

    root = _root()
    groups = [name for name, c in root.commands.items() if isinstance(c, click.Group)]
    want = set(root.commands) | {f"{g} {c}" for g in groups for c in root.commands[g].commands}  # type: ignore[attr-defined]
    assert set(SUMMARIES) == want
    for group in [(), *[(g,) for g in groups]]:
        for line in listed(*group):
            name = " ".join([*group, line.split()[0]])
            assert line.split(None, 1)[1] == SUMMARIES[name], line
            assert len(line) <= 80 and "..." not in line


def test_top_level_help_states_the_rules_and_the_config_file():
    text = " ".join(_help().split())
    assert "only print their plan unless --execute" in text and "act unless --dry-run" in text
    assert "Every command that writes anything accepts --dry-run" in text
    assert "before or after the command" in text
    assert "ACIDCTL_CONFIG" in text  # report #22


@pytest.mark.parametrize("columns", [80, 60])
def test_help_never_splits_a_word(columns):
    """Report #24: ``co`` / ``mpactorthreshold.hive.compactor.delta.num.th`` / ``reshold=20``.
    Every word of every option's help appears whole in every command's --help."""
    for path, cmd in _walk(_root()):
        text = _help(*path, columns=columns)
        shown = set(text.split())
        for p in cmd.params:
            if isinstance(p, click.Option) and p.help and not p.hidden:
                missing = [w for w in p.help.split() if w not in shown]
                assert not missing, (path, p.name, missing)


def test_state_deep_help_names_the_checks():
    p = [p for p in _root().commands["state"].params if p.name == "deep"][0]
    assert "F00-F16" in p.help  # type: ignore[operator]


def test_initiator_runs_one_cycle_without_once(demo):
    """Report #22: plain ``acidctl initiator`` said "give --once" although it is the only mode."""
    r = run_cli("-o", "json", "initiator", "--dry-run")
    assert r.code == 0, r
    assert "checked" in json.loads(r.stdout)
    r2 = run_cli("-o", "json", "initiator", "--once", "--dry-run")
    assert r2.code == 0 and json.loads(r2.stdout)["summary"] == json.loads(r.stdout)["summary"]


def test_doctor_glob_matching_nothing_is_not_found(demo):
    """Report #17: ``doctor --db 'sales*'`` matching no database passed silently (exit 0)."""
    r = run_cli("doctor", "--db", "sales*")
    assert r.code == 3 and r.stderr.count("\n") == 1 and "no ACID table matches --db 'sales*'" in r.stderr, r
    assert run_cli("doctor", "--table", "nosuch").code == 3
    assert run_cli("doctor", "--db", "def*").code in (0, 4)  # the demo's default database: checked


def test_state_keeps_every_partition(demo):
    """Report #13: ``state --partition A --partition B`` silently showed only B."""
    r = run_cli("-o", "json", "state", "default.sales", "--partition", "ds=2025-12-31", "--partition", "ds=2026-01-01")
    assert r.code in (0, 4), r
    assert [p["partition"] for p in json.loads(r.stdout)["partitions"]] == ["ds=2025-12-31", "ds=2026-01-01"]
    one = run_cli("-o", "json", "state", "default.sales", "--partition", "ds=2026-01-01")
    assert [p["partition"] for p in json.loads(one.stdout)["partitions"]] in (["ds=2026-01-01"], [None])
    assert run_cli("state", "default.sales", "--partition", "ds=2025-12-31", "--partition", "ds=1999").code == 3


def test_show_compactions_with_two_partitions(demo):
    root, _ = demo
    con = sqlite3.connect(root / "metastore.db")
    want = sorted(
        r[0] for r in con.execute("SELECT CQ_ID FROM COMPACTION_QUEUE UNION SELECT CC_ID FROM COMPLETED_COMPACTIONS")
    )
    con.close()
    r = run_cli(
        "-o",
        "json",
        "show",
        "compactions",
        "default.sales",
        "--partition",
        "ds=2025-12-31",
        "--partition",
        "ds=2026-01-01",
    )
    assert r.code == 0, r
    assert sorted(c["compactionid"] for c in json.loads(r.stdout)["compactions"]) == want


def test_clean_accepts_partitions(demo):
    """Report #13: ``clean --partition`` was "No such option"."""
    root, _ = demo
    assert run_cli("compact", "--major", "default.sales", "--engine", "local").code == 0
    every = run_cli("-o", "json", "clean", "default.sales", "--min-age", "0")
    assert {i["partition"] for i in json.loads(every.stdout)["items"]} == {"ds=2025-12-31", "ds=2026-01-01"}
    r = run_cli("-o", "json", "clean", "default.sales", "--min-age", "0", "--partition", "ds=2026-01-01")
    assert r.code == 0, r
    items = json.loads(r.stdout)["items"]
    assert items and {i["partition"] for i in items} == {"ds=2026-01-01"}
    assert run_cli("clean", "default.sales", "--partition", "ds=1999").code == 3
    assert run_cli("clean", "default.sales/ds=2026-01-01", "--partition", "ds=2026-01-01").code == 2


def test_export_input_format_is_a_deprecated_alias(demo, tmp_path):
    root, _ = demo
    r = run_cli("export", "default.sales", tmp_path / "o", "--input-format", "orc", "--dry-run")
    # the table is full ACID: --format (its files' format) applies to insert-only tables only
    assert r.code == 2 and "--format applies to insert-only tables" in r.stderr
    assert r.stderr.count("--input-format is deprecated; use --format") == 1, r


def test_every_argument_with_help_shows_it_once_in_help():
    """typer-slim 0.20 + click 8.5: click's Argument constructor dropped typer's argument help (no
    TABLE/DEST/LOCKID help was ever shown) and click printed a second "Positional arguments"
    section once it was restored. Each documented argument's help appears in its command's
    --help, in one "Arguments" section."""
    seen = 0
    for path, cmd in _walk(_root()):
        if isinstance(cmd, click.Group):
            continue
        args = [p for p in cmd.params if isinstance(p, click.Argument)]
        if not args:
            continue
        r = run_cli(*path, "--help")
        assert r.code == 0, path
        assert "Positional arguments" not in r.stdout, path
        assert r.stdout.count("Arguments:") == 1, (path, r.stdout)
        for a in args:
            if a.help:
                seen += 1
                first = a.help.split()[0]
                section = r.stdout.split("Arguments:", 1)[1].split("Options:", 1)[0]
                assert first in section, (path, a.name, section)
    assert seen >= 5  # TABLE of the table commands, DEST, LOCKID, ...
