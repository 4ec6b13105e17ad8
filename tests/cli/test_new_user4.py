"""A new data-platform engineer's first hour with acidctl (new-user pass 4, 2026-11-27): the
README's tour on a fresh demo, then `doctor` / `why`, the grammar promises (README "Safety",
exit codes) and the shipped completions. One test per thing that tripped the pass up.
"""

from __future__ import annotations

import os
import re
import shlex

from tests.conftest import run_cli


def _names(root, part):
    p = root / "warehouse" / "sales" / part
    return {n for n in os.listdir(p) if not n.startswith((".", "_"))}


def test_why_cleaner_command_runs_as_printed(demo):
    """`why`'s CLEANER line quoted `acidctl clean --execute --min-age 0` without the table: run as
    printed it is a usage error (exit 2). It names the partition now and removes what it says."""
    root, _ = demo
    assert run_cli("compact", "--due", "default.sales").code == 0
    r = run_cli("why", "default.sales/ds=2025-12-31")
    assert r.code == 0, r
    text = " ".join(r.stdout.split())  # undo the wrapping at the terminal width
    m = re.search(r"CLEANER: .*?`(acidctl clean [^`]*)` removes ((?:[\w.-]+, )*[\w.-]+)", text)
    assert m, r.stdout
    words = shlex.split(m.group(1))
    assert words[:3] == ["acidctl", "clean", "default.sales/ds=2025-12-31"]
    # the demo's ds=2025-12-31 (tests/cli/test_demo.py): three original files, delete_delta_1_1 and
    # delta_2_2, all read by the major compaction into base_0000002
    said = set(m.group(2).split(", "))
    assert said == {
        "000000_0",
        "000001_0",
        "000001_0_copy_1",
        "delete_delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
    }
    assert said <= _names(root, "ds=2025-12-31")
    r = run_cli(*words[1:])
    assert r.code == 0, r
    assert _names(root, "ds=2025-12-31") == {"base_0000002"}


def _u06(h2) -> str:
    import json

    r = run_cli("-o", "json", "upgrade-check", "--metastore", h2)
    doc = json.loads(r.stdout)
    msgs = [f["message"] for p in doc["partitions"] for f in p["findings"] if f["check"] == "U06"]
    assert len(msgs) == 1, doc
    return msgs[0]


def test_upgrade_check_u06_clean_command_runs_as_printed(demo):
    """U06 said `acidctl clean --hive-version 2` removes the leftovers: no table (exit 2), and on
    the demo's Hive 2 table the leftover is an aborted delta no compaction covers, which clean
    keeps (Hive 2's Cleaner lists only what getAcidState calls obsolete). Now: before the major
    compaction it says the compaction comes first; after it, the printed clean removes them."""
    root, _ = demo
    h2 = f"sqlite:///{root / 'hive2' / 'metastore.db'}"
    table = root / "hive2" / "warehouse" / "legacy_employee"
    before = _u06(h2)
    assert "delta_0000003_0000003_0000" in before and "major compaction" in before
    assert "acidctl clean" not in before
    # clean indeed keeps the uncovered aborted delta (so the old advice did nothing)
    assert run_cli("clean", "default.legacy_employee", "--metastore", h2, "--min-age", "0", "--execute").code == 0
    assert (table / "delta_0000003_0000003_0000").is_dir()

    assert run_cli("compact", "default.legacy_employee", "--major", "--metastore", h2).code == 0
    after = _u06(h2)
    m = re.search(r"`(acidctl clean [^`]*)`", after)
    assert m, after
    r = run_cli(*shlex.split(m.group(1))[1:], "--metastore", h2)
    assert r.code == 0, r
    # txns 1-2 committed, 3 aborted (the demo): the major compaction wrote base_0000003 covering all
    assert {n for n in os.listdir(table) if not n.startswith(("_", "."))} == {"base_0000003"}


def test_unlock_refusal_hint_acts_as_printed(demo):
    """`unlock 1` on the demo (lock 1 is txn 10's: its open insert into ds=2026-01-01) is refused
    as Hive refuses it; the hint's command used to be the preview `abort transactions 10` and sat
    in nested parentheses. Run as printed, it now ends the txn and with it the lock."""
    import json

    before = json.loads(run_cli("-o", "json", "show", "locks").stdout)["locks"]
    assert [(lk["lock_ext_id"], lk["transaction_id"]) for lk in before] == [(1, 10)]
    r = run_cli("unlock", "1")
    assert r.code == 6 and r.stdout == "", r
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert r.stderr.count("(") == 1, r.stderr  # the hint's own parentheses only
    m = re.search(r"(acidctl abort transactions 10 --execute)\)$", r.stderr.strip())
    assert m, r.stderr
    assert run_cli(*shlex.split(m.group(1))[1:]).code == 0
    assert [lk["transaction_id"] for lk in json.loads(run_cli("-o", "json", "show", "locks").stdout)["locks"]] == []


def test_clean_requests_table_fits_80_columns(demo, monkeypatch):
    """The README's order: `compact --due default.sales`, then `clean default.sales` (default
    --min-age 1h: a dry run). Compaction 2 stays ready for cleaning, and its ACTION words did not
    wrap, so the table was 95 columns wide. The terminal-fit rules (tests/cli/test_terminal_fit.py)
    now hold."""
    from tests.cli.test_terminal_fit import check

    assert run_cli("compact", "--due", "default.sales").code == 0

    check(["clean", "default.sales"], monkeypatch)


def _queue(root) -> list[tuple]:
    import sqlite3

    with sqlite3.connect(root / "metastore.db") as c:
        return c.execute(
            'SELECT "CQ_ID", "CQ_TABLE", "CQ_PARTITION", "CQ_TYPE", "CQ_STATE" FROM "COMPACTION_QUEUE" ORDER BY 1'
        ).fetchall()


def test_enqueue_takes_partition_option(demo):
    """`compact --enqueue --major default.sales --partition ds=2026-01-01` refused with "default.sales
    is partitioned" (--partition was ignored by --enqueue; with DB.TABLE/PART it was silently
    dropped). Now it queues that partition's request as DB.TABLE/PART does; two --partition or
    both spellings at once are one-line usage errors (exit 2) that write nothing."""
    root, _ = demo
    before = _queue(root)
    for args, code in (
        (["--partition", "ds=2026-01-01", "--partition", "ds=2025-12-31"], 2),
        (["--partition", "ds=2026-01-01", "--dry-run"], 0),
    ):
        r = run_cli("compact", "--enqueue", "--major", "default.sales", *args)
        assert r.code == code, r
        assert _queue(root) == before
    r = run_cli("compact", "--enqueue", "--major", "default.sales/ds=2025-12-31", "--partition", "ds=2026-01-01")
    assert r.code == 2 and r.stderr.count("\n") == 1, r
    assert _queue(root) == before
    r = run_cli("compact", "--enqueue", "--major", "default.sales", "--partition", "ds=2026-01-01")
    assert r.code == 0, r
    (new,) = [q for q in _queue(root) if q not in before]
    # Hive's codes (metastore.md): CQ_TYPE 'a' = major, CQ_STATE 'i' = initiated
    assert new[1:] == ("sales", "ds=2026-01-01", "a", "i")


def _doctor_findings(code: str) -> list[dict]:
    import json

    r = run_cli("-o", "json", "doctor")
    assert r.code in (0, 4), r
    return [f for f in json.loads(r.stdout)["findings"] if f["code"] == code]


def test_doctor_does_not_warn_about_acidctl_unregistered_compaction(demo):
    """`compact --read-only` publishes unregistered (docs/reference.md: as over thrift://), and
    doctor then warned UNEXPLAINED_COMPACTED_DIR "written by a compactor that did not register"
    with a fix that compacts again: acidctl's own work flagged (README Safety rule 2). The
    publication record says whose it is: an info, no fix. Without the record (a stranger's
    base) the warning stays."""
    root, _ = demo
    r = run_cli("--read-only", "compact", "--major", "default.employee")
    assert r.code == 0, r
    # employee's deltas hold write ids 1-3, all committed (the demo): the major compaction's base
    base = root / "warehouse" / "employee" / "base_0000003"
    assert base.is_dir()
    (f,) = _doctor_findings("UNEXPLAINED_COMPACTED_DIR")
    assert (f["subject"], f["severity"], f["fix"]) == ("default.employee", "info", None)
    assert ".acidctl-published/base_0000003.json" in f["message"]
    (base.parent / ".acidctl-published" / "base_0000003.json").unlink()
    (f,) = _doctor_findings("UNEXPLAINED_COMPACTED_DIR")
    assert (f["subject"], f["severity"]) == ("default.employee", "warn")


# -- shell completions of migrate and changes (the shipped scripts, in real bash and zsh) ------

from tests.cli.test_completions import (  # noqa: E402
    ENGINE_CHOICES,
    OUTPUT_CHOICES,
    _bash_complete,
    _zsh,
    shell_env,  # noqa: F401 (the module-scoped fixture)
)


def _declared(command: str, prefix: str) -> set[str]:
    """Option names of ``acidctl COMMAND`` starting with ``prefix``, from the CLI's declarations
    (the command's own and the global ones, which are accepted after the command too)."""
    import typer

    from acidctl.cli.main import app

    root = typer.main.get_command(app)
    params = list(root.commands[command].params) + list(root.params)  # type: ignore[attr-defined]
    return {o for p in params for o in p.opts if o.startswith(prefix) and o != "--version"}


def _choices(command: str, option: str) -> set[str]:
    import typer

    from acidctl.cli.main import app

    root = typer.main.get_command(app)
    (p,) = [p for p in root.commands[command].params if option in p.opts]  # type: ignore[attr-defined]
    return set((p.metavar or "").split("|"))


def test_bash_completes_migrate_and_changes(shell_env):  # noqa: F811
    b = lambda *w: _bash_complete(shell_env, ["acidctl", *w])  # noqa: E731
    assert b("mig") == ["migrate"] and b("cha") == ["changes"]
    assert (
        set(b("migrate", "default.sales", "--ta")) == _declared("migrate", "--ta") == {"--target", "--table-property"}
    )
    assert set(b("changes", "default.sales", "--fr")) == _declared("changes", "--fr") == {"--from-write-id"}
    assert set(b("migrate", "default.sales", "--to", "")) == {"iceberg", "delta"}
    assert set(b("migrate", "default.sales", "--engine", "")) == ENGINE_CHOICES
    assert set(b("migrate", "default.sales", "--delta-timestamp", "")) == _choices("migrate", "--delta-timestamp")
    # a one-choice metavar (`--timestamp-precision us`) completed nothing
    assert b("migrate", "default.sales", "--timestamp-precision", "") == ["us"]
    assert b("migrate", "default.sales", "--warehouse", "") == ["<files>"]
    assert set(b("changes", "default.sales", "--to", "")) == {"parquet"}
    assert set(b("changes", "default.sales", "--hive-version", "")) == {"2", "3", "4"}
    assert set(b("changes", "default.sales", "--from-write-id", "5", "-o", "")) == OUTPUT_CHOICES


def test_zsh_completes_migrate_and_changes(shell_env):  # noqa: F811
    for line, expected in (
        ("acidctl migrate default.sales --to \t", {"iceberg", "delta"}),
        (
            "acidctl migrate default.sales --timestamp-precision \t",
            {"acidctl migrate default.sales --timestamp-precision us"},
        ),
        ("acidctl changes default.sales --from-w\t", {"acidctl changes default.sales --from-write-id"}),
    ):
        zsh = _zsh(shell_env)
        try:
            zsh.type(line)
            screen = zsh.read_until(re.escape(sorted(expected)[-1]))
            assert all(e in screen for e in expected), screen
        finally:
            zsh.close()


def test_doctor_html_and_metrics_textfile_accept_dry_run(demo, tmp_path):
    """README: "Every command that writes accepts --dry-run: it prints what it would do, writes
    nothing, and exits with the code the real run would". `doctor --html FILE` and `metrics
    --textfile FILE` write a file but answered `No such option '--dry-run'` (exit 2)."""
    html, prom = tmp_path / "r.html", tmp_path / "m.prom"
    for args, path in ((["doctor", "--html", html], html), (["metrics", "--textfile", prom], prom)):
        r = run_cli(*args, "--dry-run")
        assert r.code == 0, r
        assert not path.exists() and "would write" in r.stderr and "nothing written" in r.stderr
        bad = tmp_path / "no-such-dir" / path.name
        dry, real = run_cli(*args[:-1], bad, "--dry-run"), run_cli(*args[:-1], bad)
        assert dry.code == real.code == 5, (dry, real)  # storage unavailable, as the real run
        assert not bad.parent.exists()
        assert run_cli(*args).code == 0 and path.exists()


def test_profile_in_a_missing_config_file_says_the_file_is_missing(tmp_path, monkeypatch):
    """`ACIDCTL_CONFIG=/typo.toml acidctl --profile prod ...` said "profile 'prod' not found in
    /typo.toml": the file itself does not exist, which is what to fix."""
    monkeypatch.delenv("ACIDCTL_METASTORE_URL", raising=False)
    missing = tmp_path / "typo.toml"
    monkeypatch.setenv("ACIDCTL_CONFIG", str(missing))
    r = run_cli("--profile", "prod", "show", "tables")
    assert r.code == 2 and r.stderr.count("\n") == 1, r
    assert f"config file {missing} (ACIDCTL_CONFIG) does not exist" in r.stderr
    missing.write_text('[profiles.other]\nmetastore = "sqlite:////nowhere.db"\n')
    r = run_cli("--profile", "prod", "show", "tables")
    assert r.code == 2 and f"profile 'prod' not found in {missing}" in r.stderr, r


def _compaction_rows(root) -> tuple[list, list]:
    import sqlite3

    with sqlite3.connect(root / "metastore.db") as c:
        q = c.execute('SELECT * FROM "COMPACTION_QUEUE" ORDER BY 1').fetchall()
        h = c.execute('SELECT * FROM "COMPLETED_COMPACTIONS" ORDER BY 1').fetchall()
    return q, h


def test_spark_that_cannot_start_leaves_no_failed_compaction(demo):
    """`compact --engine spark` with a wrong or unreachable --master registered the compaction,
    then marked it failed: two such typos and Hive's Initiator stops compacting the table
    (hive.compactor.initiator.failed.compacts.threshold, as `why` then says). A Spark session
    that cannot start is not a failed compaction: the request is handed back, the queue and
    history stay as they were (README Safety rule 3). A master Spark rejects outright
    (SparkSubmit: yarn, or spark/k8s/local URLs) is a usage error said before any JVM starts,
    not the JVM's stack trace."""
    root, _ = demo
    before = _compaction_rows(root)
    for table in ("default.employee", "default.events"):  # full ACID and insert-only
        r = run_cli("compact", "--major", table, "--engine", "spark", "--master", "nonsense://x")
        assert r.code == 2 and r.stderr.count("\n") == 1 and "--master" in r.stderr, r
        r = run_cli("compact", "--major", table, "--engine", "spark", "--master", "spark://127.0.0.1:1")
        assert r.code == 5 and r.stderr.count("\n") == 1, r
        assert _compaction_rows(root) == before
    assert "failed threshold: fewer than 2 consecutive failures" in run_cli("why", "default.employee").stdout


def test_no_command_prints_the_help_not_a_flattened_error_line():
    """`acidctl` alone (the first thing a new user types) and `acidctl show` printed the whole
    help squeezed into one `acidctl: error: Usage: ... Options: ...` line of ~2,800 characters.
    Now: the help as --help prints it (on stderr, exit 2: no command is a usage error, as
    Click says); with -o json the one-line JSON error."""
    for args in ([], ["show"]):
        r = run_cli(*args)
        help_text = run_cli(*args, "--help").stdout
        assert r.code == 2 and r.stdout == "", r
        assert r.stderr.rstrip("\n") == help_text.rstrip("\n") and "\nCommands:\n" in r.stderr
        j = run_cli("-o", "json", *args)
        assert j.code == 2 and j.stderr.count("\n") == 1, j
        assert '"exit_code":2' in j.stderr


def test_compact_progress_leaves_no_lines_on_the_terminal(demo):
    """On a terminal `compact --due default.sales` (the README's example, ~0.2 s) left
    "acidctl: compact: buckets 2/2 done" and "... partitions 1/1 published" above its report,
    though progress lines are meant to be one status line, none for runs under a second, erased
    at the end (acidctl.cli.progress). Now compact's progress is that status line."""
    from tests.cli.test_progress import run as run_on_tty

    code, out, err = run_on_tty("compact", "--due", "default.sales")
    assert code == 0 and "compacted" in out
    assert "\n" not in err, err  # nothing left on the screen: at most a line rewritten and erased
    visible = err.rsplit("\r", 1)[-1] if "\r" in err else err
    assert visible.strip() == ""


def test_prose_never_splits_a_quantity_from_its_unit(monkeypatch):
    """doctor at 80 columns printed "(delta_0000003_0000003_0000; 325" / "B, oldest 13s)": the
    wrap of prose lines broke between a size and its unit (and could between "5m" and "3s")."""
    from acidctl.cli.output import wrap

    monkeypatch.setenv("COLUMNS", "80")
    for qty in ("325 B", "1.7 KiB", "3m 13s"):
        # the quantity's first word ends at column 80 (or before), its unit starts after it
        line = "y" * 76 + " " + qty + ", oldest 13s) is no longer read"
        lines = wrap(line).splitlines()
        assert all(len(x) <= 80 for x in lines)
        assert any(qty in x for x in lines), lines
        assert " ".join(x.strip() for x in lines) == line  # nothing else changed
