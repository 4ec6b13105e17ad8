"""A new user's pass over ``migrate``, ``changes`` and the snapshot options (2026-11-27): what
tripped them up, each checked on what the user sees (the demo warehouse, its metastore)."""

from __future__ import annotations

import json
import re

import click

import pytest

from tests.cli.conftest import demo  # noqa: F401
from tests.cli.test_grammar import _help, _root, _walk

WIDTH = 80


def test_every_help_fits_80_columns():
    """``--write-ids``' grammar was one 48-character token in a 46-column help cell (82-column
    lines in dump, export, changes, migrate --help), ``--tblproperty``'s example key
    ``compactorthreshold.hive.compactor.delta.num.threshold=20`` another (92-column lines in
    compact and state --help). Every line of every --help fits 80 columns."""
    for path, _cmd in _walk(_root()):
        wide = [line for line in _help(*path, columns=WIDTH).splitlines() if len(line) > WIDTH]
        assert not wide, (path, wide)


def test_migrate_up_to_date_fits_80_columns(cli, demo, tmp_path, monkeypatch):  # noqa: F811
    pytest.importorskip("deltalake")
    args = ["migrate", "default.employee", "--to", "delta", "--target", str(tmp_path / "d")]
    r = cli(*args)
    assert r.code == 0, r
    # the text says where the data files were written (JSON "engine"), as compact's report does
    assert "engine: local (data files written by this process)" in r.stdout, r
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    r = cli(*args)
    assert r.code == 0, r
    assert "up to date" in r.stdout
    for line in r.stdout.splitlines():
        # a line may be longer only for one word (a path) that no line can hold
        assert len(line) <= WIDTH or max(map(len, line.split())) > WIDTH - 8, line


def test_snapshot_before_a_compacted_base_says_how_far_back(cli, demo):  # noqa: F811
    """The demo's ds=2025-12-31 gets base_0000002 from a major compaction (it reads write ids 1
    and 2; Hive's MR compactor names the base after the highest one). ``--as-of 1`` is older:
    Hive's "Not enough history" message, plus a hint naming the base and the write id from which
    the directory reads again — not dump's hint about insert-only tables (default.sales is a
    full-ACID table the metastore knows)."""
    r = cli("compact", "--major", "default.sales/ds=2025-12-31")
    assert r.code == 0, r
    r = cli("-o", "json", "dump", "--merged", "default.sales", "--as-of", "1")
    assert r.code == 7, r
    err = json.loads(r.stdout or r.stderr)["error"]
    assert err["message"].startswith("Not enough history available for (1,x).")
    assert "base_0000002" in err["hint"] and "write id 2 or later" in err["hint"]
    assert "insert-only" not in err["hint"]
    # the hint's promise holds for that partition
    r = cli("dump", "--merged", "default.sales/ds=2025-12-31", "--as-of", "2")
    assert r.code == 0, r
    # the text error is one line, the hint in it
    r = cli("migrate", "default.sales", "--to", "delta", "--target", "/nonexistent/x", "--as-of", "1", "--dry-run")
    assert r.code == 7 and len(r.stderr.strip().splitlines()) == 1 and "base_0000002" in r.stderr


def test_changes_partition_that_does_not_exist_is_not_found(cli, demo):  # noqa: F811
    """``changes --partition ds=2099`` printed nothing and exited 0 (as if nothing changed);
    ``state --partition`` says "not found" (exit 3). The demo's sales partitions are
    ds=2025-12-31 and ds=2026-01-01; employee is unpartitioned."""
    r = cli("changes", "default.sales", "--from-write-id", "6", "--partition", "ds=2099")
    assert r.code == 3 and r.stdout == "", r
    assert "ds=2099" in r.stderr and "ds=2025-12-31, ds=2026-01-01" in r.stderr
    r = cli("changes", "default.employee", "--from-write-id", "1", "--partition", "ds=2026-01-01")
    assert r.code == 3 and "no partition directories" in r.stderr, r
    # one good, one bad: still refused before any line is printed
    r = cli("changes", "default.sales", "--from-write-id", "6", "--partition", "ds=2026-01-01", "--partition", "ds=1")
    assert r.code == 3 and r.stdout == "", r
    # a real partition (any key case) still prints write id 6's two deletes (ids 11, 12)
    for spec in ("ds=2026-01-01", "DS=2026-01-01"):
        r = cli("changes", "default.sales", "--from-write-id", "6", "--partition", spec)
        assert r.code == 0, r
        rows = [json.loads(x) for x in r.stdout.splitlines()]
        assert sorted((x["_change_type"], x["id"]) for x in rows) == [("delete", 11), ("delete", 12)]


def test_export_partition_that_does_not_exist_is_not_found(cli, demo, tmp_path):  # noqa: F811
    """``export --partition ds=2099`` exported 0 rows and exited 0; as ``changes`` and ``state``:
    exit 3 naming the partitions there are, and DEST is not created."""
    dest = tmp_path / "out"
    r = cli("export", "default.sales", str(dest), "--to", "parquet", "--partition", "ds=2099")
    assert r.code == 3, r
    assert "ds=2099" in r.stderr and "ds=2025-12-31, ds=2026-01-01" in r.stderr
    assert not dest.exists()
    r = cli("export", "default.sales", str(dest), "--to", "parquet", "--partition", "DS=2026-01-01")
    assert r.code == 0, r
    assert sorted(p.parent.name for p in dest.rglob("*.parquet")) == ["ds=2026-01-01"] * 2


def test_write_ids_help_names_the_grammar_whole():
    text = _help("changes")
    assert re.search(r"db\.table:hwm:minOpenWriteId:OPEN:ABORTED", text)


def test_no_option_shows_a_click_type_name_as_its_value():
    """``--limit INTEGER RANGE``, ``--workers INTEGER RANGE``, ``--state TEXT``, ``--user TEXT``,
    ``--grace-hours FLOAT``, ``--profile TEXT``: every other option names its value (N, AGE, GLOB,
    a|b|c)."""
    names = {"INTEGER", "TEXT", "FLOAT", "RANGE", "BOOLEAN", "FILENAME"}
    for path, cmd in _walk(_root()):
        for p in cmd.params:
            if not p.param_type_name == "option" or p.hidden or getattr(p, "is_flag", False):
                continue
            rec = p.get_help_record(click.Context(cmd))
            assert rec is not None
            assert not set(re.split(r"[^A-Z]+", rec[0])) & names, (path, rec[0])


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_thrift_metastore_is_one_line(monkeypatch):
    """thrift's own logger printed ``Could not connect to any of [...]`` through Python's
    last-resort handler above the one-line error. In a fresh process (no test logging
    handlers), stderr is exactly the error line; with -v the library's record is shown, prefixed."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("pyiceberg")
    url = f"thrift://127.0.0.1:{_closed_port()}"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env.pop("ACIDCTL_METASTORE_URL", None)
    for cmd in (["show", "tables"], ["doctor"]):
        p = subprocess.run(
            [sys.executable, "-m", "acidctl", "--metastore", url, *cmd], capture_output=True, text=True, env=env
        )
        assert p.returncode == 5, p
        assert p.stderr.splitlines() == [p.stderr.strip()] and p.stderr.startswith("acidctl: error: cannot reach"), p
    p = subprocess.run(
        [sys.executable, "-m", "acidctl", "-v", "--metastore", url, "show", "tables"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert p.returncode == 5 and "acidctl: thrift.transport.TSocket: Could not connect" in p.stderr, p


def test_acidctl_own_warnings_still_print(cli, demo, capsys):  # noqa: F811
    """What acidctl logs at WARNING (a compaction it could not hand back, ...) is still shown
    without -v, prefixed and redacted; a library's records are not."""
    import logging

    r = cli("show", "tables")
    assert r.code == 0
    logging.getLogger("acidctl.compact").warning("could not hand back compaction %d: %s", 7, "postgresql://u:pw@h/db")
    logging.getLogger("somelibrary").warning("library noise")
    err = capsys.readouterr().err
    assert "acidctl: warning: could not hand back compaction 7: postgresql://u:***@h/db" in err, err
    assert "library noise" not in err


def test_doctor_after_a_hive4_compaction_fits_and_writes_ages_one_way(cli, tmp_path, monkeypatch):
    """After ``compact --due`` on a Hive 4 demo, the open txn 10 holds the Cleaner back
    (HIVE-26704): doctor's "worst:" line was 90 columns (not wrapped), and one report wrote the
    same txn's age as ``open 7 s`` and ``age 8s``. Every age is now written as the other text
    reports write durations: tokens ``parse_age`` reads back (``45s``, ``5m 3s``)."""
    from acidctl.durations import parse_age

    root = tmp_path / "h4"
    r = cli("demo", root, "--hive-version", "4")
    assert r.code == 0, r
    monkeypatch.setenv("ACIDCTL_METASTORE_URL", f"sqlite:///{root / 'metastore.db'}")
    r = cli("compact", "--due", "default.sales")
    assert r.code == 0, r
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    r = cli("doctor")
    assert r.code == 0, r
    assert "CLEANER_BLOCKED_BY_TXN" in r.stdout and "worst:" in r.stdout
    for line in r.stdout.splitlines():
        assert len(line) <= WIDTH or max(map(len, line.split())) > WIDTH - 8, line
    text = " ".join(r.stdout.split())
    ages = re.findall(r"(?<![-\w])(?:open|age|oldest) (\d+(?:\.\d+)?\s?[a-z]+(?: \d+[a-z]+)?)", text)
    assert len(ages) >= 3, text
    for age in ages:
        for token in age.split():
            parse_age(token)  # raises on "7 s", "12 min", "1.5 h"


def test_hive2_doctor_and_why_name_hive_2_3(cli, demo):  # noqa: F811
    """The demo's Hive 2.3 metastore: default.legacy_employee (unpartitioned) has the aborted
    txn 3 and its delta_0000003_0000003_0000. doctor and why said "Hive 3's Cleaner" about it and
    ABORTED_PILE said "on this partition" of a table without partitions."""
    root, _ = demo
    url = f"sqlite:///{root / 'hive2' / 'metastore.db'}"
    # the demo's aborted txn starts when the demo is built: an age threshold of 0 makes it a pile
    age = "metastore.compactor.oldest.uncleaned.aborted.txn.time.threshold.warning=0"
    r = cli("-o", "json", "--metastore", url, "doctor", "--conf", age)
    assert r.code == 0, r
    found = {f["code"]: f for f in json.loads(r.stdout)["findings"]}
    waiting = found["ABORTED_WAITING_COMPACTION"]["message"]
    assert "delta_0000003_0000003_0000" in waiting and "Hive 2.3's Cleaner" in waiting, waiting
    pile = found["ABORTED_PILE"]["message"]
    assert "on this table" in pile and "partition" not in pile, pile
    r = cli("--metastore", url, "why", "default.legacy_employee")
    assert r.code == 0, r
    text = " ".join(r.stdout.split())
    assert "Hive 2.3's Cleaner removes an aborted delta" in text and "Hive 3's" not in text, text


def test_changes_to_parquet_has_a_dry_run(cli, demo, tmp_path):  # noqa: F811
    """The preview rule: every command that writes accepts --dry-run, writes nothing and exits as
    the real run would; ``changes --to parquet DEST`` writes files but had no --dry-run. The demo's
    write ids 5 and 6 of default.sales: write 5 updates id 10 (a delete and an insert) and
    inserts id 21; write 6 deletes ids 11 and 12 — 5 change rows, 2 inserts and 3 deletes."""
    import pyarrow.parquet as pq

    dest = tmp_path / "ch"
    args = ["changes", "default.sales", "--from-write-id", "5", "--to-write-id", "6", "--to", "parquet", str(dest)]
    r = cli("-o", "json", *args, "--dry-run")
    assert r.code == 0, r
    doc = json.loads(r.stdout)
    assert (
        doc["dry_run"] is True
        and doc["rows"] == 5
        and {k: n for k, n in doc["changes"].items() if n} == {"insert": 2, "delete": 3}
    )
    assert [(o["file"], o["rows"]) for o in doc["outputs"]] == [("part-00000.parquet", 5)]
    assert not dest.exists() and not [p for p in tmp_path.iterdir() if "acidctl" in p.name]
    r = cli(*args, "--dry-run")
    assert r.code == 0 and "would write 5 change rows in 1 file" in r.stdout and "nothing is written" in r.stdout, r
    # the real run writes what the dry run said
    r = cli(*args)
    assert r.code == 0, r
    assert pq.read_table(dest / "part-00000.parquet").num_rows == 5
    # DEST now exists: the dry run refuses as the real run does, in changes' own words
    for extra in (["--dry-run"], []):
        r = cli(*args, *extra)
        assert r.code == 6 and "changes --to parquet never overwrites" in r.stderr and "export" not in r.stderr, r
    # events a compaction folded away: the dry run exits 6 as the real run would
    assert cli("compact", "--major", "default.sales/ds=2026-01-01").code == 0
    r = cli(*args[:-1], str(tmp_path / "other"), "--dry-run")
    assert r.code == 6 and "--from-write-id" in r.stderr, r


def test_delta_on_s3_without_credentials_is_one_plain_line(demo, tmp_path):  # noqa: F811
    """``migrate --to delta --target s3://...`` with no credentials: delta-rs's error is a
    coloured cause chain (``\\x1b[31m↳\\x1b[0m``), and its env_logger printed WARN lines of the
    AWS SDK above it. One plain line (exit 5, storage unavailable) that says how to give the
    keys. (IMDS disabled: the SDK's chain then ends without a network call.)"""
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("deltalake")
    root, _ = demo
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k not in ("RUST_LOG", "COLUMNS")}
    env.update(
        PYTHONPATH=str(Path(__file__).resolve().parents[2]),
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        ACIDCTL_METASTORE_URL=f"sqlite:///{root / 'metastore.db'}",
    )
    p = subprocess.run(
        [sys.executable, "-m", "acidctl", "migrate", "default.sales", "--to", "delta", "--target", "s3://nobucket/t"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 5, p
    assert len(p.stderr.splitlines()) == 1 and "\x1b" not in p.stderr, p.stderr
    assert p.stderr.startswith("acidctl: error: Delta table s3://nobucket/t:") and "--fs-option" in p.stderr


@pytest.fixture
def short_dir():
    """A short directory under /tmp (pytest's own paths alone are ~60 characters)."""
    import shutil
    import tempfile
    from pathlib import Path

    d = Path(tempfile.mkdtemp(prefix="nu", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_demo_fits_80_columns_but_its_commands_stay_whole(cli, short_dir, monkeypatch):
    """``acidctl demo`` printed 88-113-column lines (each table's location and snapshot, the dry
    run's sentence). They wrap; the "Next" commands stay one line each, to paste."""
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    tmp_path = short_dir
    r = cli("demo", tmp_path / "d")
    assert r.code == 0, r
    lines = r.stdout.splitlines()
    commands = [x for x in lines if x.startswith("  acidctl --metastore ")]
    assert len(commands) == 4 and all(
        x.split()[-1] in ("tables", "default.employee", "default.sales", "doctor") for x in commands
    )
    for line in lines:
        assert len(line) <= WIDTH or line in commands, line
    text = " ".join(r.stdout.split())
    assert (
        "default.sales: "
        + str(tmp_path / "d" / "warehouse" / "sales")
        + " (snapshot: --write-ids default.sales:7:7:7:4)"
        in text
    )
    r = cli("demo", "--dry-run", tmp_path / "e")
    assert r.code == 0 and all(len(x) <= WIDTH for x in r.stdout.splitlines()), r


def test_a_masked_token_keeps_the_message_separator(cli, demo):  # noqa: F811
    """``--catalog http://host/?token=abc`` unreachable: the error read ``...?token=***
    HTTPConnectionPool(...)`` — the mask took the ``:`` that separates the URL from the cause."""
    pytest.importorskip("pyiceberg")
    url = f"http://127.0.0.1:{_closed_port()}/?token=abcdef123"
    r = cli("migrate", "default.sales", "--to", "iceberg", "--catalog", url, "--target", "a.b")
    assert r.code == 5, r
    assert "abcdef123" not in r.stderr and "?token=***: " in r.stderr, r


def test_top_level_help_lists_migrate_and_changes_under_dry_run():
    """The preview rule names the commands that create something; migrate and changes --to
    parquet write and take --dry-run too."""
    text = " ".join(_help(columns=200).split())
    rule = text.split("Commands that create something (", 1)[1].split(")", 1)[0]
    assert "migrate" in rule and "changes --to parquet" in rule, rule


def test_why_given_a_path_names_the_table_to_ask_about(cli, demo):  # noqa: F811
    """``why DIR`` answered "empty table name" (exit 2). It still refuses (why replays the
    metastore's decisions about a table), naming the table Hive's layout gives the directory —
    and that hint, pasted, works."""
    root, _ = demo
    r = cli("why", str(root / "warehouse" / "sales" / "ds=2026-01-01"))
    assert r.code == 2 and "not a path" in r.stderr, r
    cmd = r.stderr.rsplit("acidctl why ", 1)[1].rstrip(")\n")
    assert cmd == "default.sales/ds=2026-01-01"
    r = cli("why", cmd)
    assert r.code == 0 and "== default.sales/ds=2026-01-01" in r.stdout, r


def test_migrate_engine_spark_asks_for_the_spark_start_status_line(cli, demo, tmp_path, monkeypatch):  # noqa: F811
    """Report #21's status line while a Spark session starts (compact, worker, export,
    upgrade-check) was not wired for migrate: ``--engine spark`` sat silent for the seconds the
    session takes. (The line itself is tests/cli/test_progress.py's.)"""
    from acidctl.cli import progress

    calls = []
    monkeypatch.setattr(progress, "spark_start_progress", lambda settings: calls.append(settings))
    args = ["migrate", "default.employee", "--to", "delta", "--target", str(tmp_path / "d"), "--dry-run"]
    assert cli(*args).code == 0 and calls == []  # the local engine starts no Spark
    assert cli(*args, "--engine", "spark").code == 0 and len(calls) == 1


def test_add_files_on_a_path_says_to_give_format(cli, tmp_path):
    """A path to an insert-only Parquet table, without --format: nothing says it is insert-only,
    so it is read as full-ACID — the refusal said it *is* full-ACID with "ORC files holding ACID
    events" (the files are Parquet). It names --format now, and with it the run goes ahead."""
    pytest.importorskip("pyiceberg")
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = tmp_path / "t" / "delta_0000001_0000001_0000"
    d.mkdir(parents=True)
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int32())}), d / "000000_0")
    args = ["migrate", str(tmp_path / "t"), "--assume-committed", "--to", "iceberg", "--add-files"]
    args += ["--catalog", f"sqlite:///{tmp_path / 'c.db'}", "--warehouse", str(tmp_path / "wh"), "--target", "n.t"]
    r = cli(*args, "--dry-run")
    assert r.code == 2 and "add --format parquet" in r.stderr and "ORC" not in r.stderr, r
    r = cli("-o", "json", *args, "--format", "parquet", "--dry-run")
    assert r.code == 0, r
    assert [p["register"] for p in json.loads(r.stdout)["partitions"]] == [[f"file://{d / '000000_0'}"]]


def test_changes_from_a_write_id_that_cannot_exist_yet(cli, demo):  # noqa: F811
    """default.sales' snapshot has high-water mark 7. ``--from-write-id 8`` is a poll that finds
    nothing new (empty, exit 0); ``--from-write-id 9`` names a write id past one that does not
    exist yet — printed nothing and exited 0, while ``--to-write-id 9`` was already exit 2."""
    r = cli("changes", "default.sales", "--from-write-id", "8")
    assert r.code == 0 and r.stdout == "", r
    r = cli("changes", "default.sales", "--from-write-id", "9")
    assert r.code == 2 and "high-water mark 7" in r.stderr and "next write id is 8" in r.stderr, r
    assert cli("changes", "default.sales", "--from-write-id", "5", "--to-write-id", "9").code == 2


def test_custom_columns_on_json_lines_is_a_usage_error(cli, demo):  # noqa: F811
    """``-o custom-columns`` was silently ignored by the commands that print rows as JSON lines
    (``dump``, ``dump --merged``, ``changes`` without ``--to``): exit 2 before anything is
    printed; the tables of ``dump --merged --count`` still take it."""
    root, _ = demo
    delta = root / "warehouse" / "employee" / "delta_0000002_0000002_0001"
    for args in (
        ["dump", "--merged", "default.employee"],
        ["dump", str(delta)],
        ["changes", "default.sales", "--from-write-id", "5"],
    ):
        r = cli("-o", "custom-columns=id", *args)
        assert r.code == 2 and r.stdout == "", (args, r)
        assert "does not apply" in r.stderr and "JSON lines" in r.stderr, r
    r = cli("-o", "custom-columns=bucket,rows", "dump", "--merged", "--count", "default.sales")
    assert r.code == 0, r
    assert ["BUCKET", "ROWS"] in [line.split() for line in r.stdout.splitlines()], r.stdout
    r = cli("-o", "wide", "dump", "--merged", "default.employee")  # wide: the same rows
    assert r.code == 0 and len(r.stdout.splitlines()) == 3, r
