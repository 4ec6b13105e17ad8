"""``--dry-run`` on every command that writes (issue 22, report #11): it prints what it would do,
writes nothing — no file under the demo directory created, changed or removed (listing, size,
mtime), no row of any metastore table changed — and exits with the code the real run exits with
(the real run on a fresh demo of its own, so both start from the same state).

Commands that delete or abort preview unless ``--execute``; ``--dry-run`` wins over it, so the
dry run is the real command line plus ``--dry-run``.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import run_cli


def _files(root: Path) -> dict:
    """Every path under root → (is_dir, size, mtime_ns); the directory itself included."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [""] + dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            out[str(p.relative_to(root))] = (p.is_dir(), 0 if p.is_dir() else st.st_size, st.st_mtime_ns)
    return out


def _rows(db: Path) -> dict:
    """Every row of every table of the SQLite metastore, sorted."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {n: sorted(map(repr, con.execute(f'SELECT * FROM "{n}"').fetchall())) for n in names}
    finally:
        con.close()


def _demo(where: Path) -> tuple[Path, str]:
    r = run_cli("-o", "json", "demo", where)
    assert r.code == 0, r
    return where, f"sqlite:///{where / 'metastore.db'}"


#: (name, the real command line with {dir} for the demo directory, preparation run on both demos
#: first); the dry run adds --dry-run. Expected codes are worked out from the demo (its history:
#: README "The demo warehouse"), so a dry run that exits 0 where the real run fails is caught.
CASES = [
    ("compact major", ["compact", "--major", "default.sales", "--partition", "ds=2025-12-31"], [], 0),
    # Hive 3 cannot publish a minor compaction writing delta and delete_delta atomically: refused
    ("compact minor refused", ["compact", "--minor", "default.sales", "--engine", "local"], [], 6),
    ("worker", ["worker", "--engine", "local"], [], 0),
    ("initiator", ["initiator"], [], 0),
    ("export", ["export", "default.sales", "{dir}/exported", "--to", "orc"], [], 0),
    ("export to an existing dir", ["export", "default.sales", "{dir}/warehouse"], [], 6),
    ("changes to parquet", ["changes", "default.sales", "--from-write-id", "5", "--to", "parquet", "{dir}/ch"], [], 0),
    (
        "changes to an existing dir",
        ["changes", "default.sales", "--from-write-id", "5", "--to", "parquet", "{dir}/warehouse"],
        [],
        6,
    ),
    ("migrate to delta", ["migrate", "default.sales", "--to", "delta", "--target", "{dir}/delta"], [], 0),
    ("metastore init new", ["metastore", "init", "sqlite:///{dir}/new.db"], [], 0),
    ("metastore init existing", ["metastore", "init", "sqlite:///{dir}/metastore.db"], [], 6),
    ("demo", ["demo", "{dir}/second"], [], 0),
    ("demo into a non-empty dir", ["demo", "{dir}/warehouse"], [], 6),
    (
        "demo recorded in a used metastore",
        ["--metastore", "sqlite:///{dir}/metastore.db", "demo", "{dir}/third"],
        [],
        6,
    ),
    ("clean", ["clean", "default.sales", "--min-age", "0", "--execute"], [["compact", "--major", "default.sales"]], 0),
    ("revert", ["revert", "default.sales", "--execute"], [["compact", "--major", "default.sales"]], 0),
    ("revert nothing", ["revert", "default.employee", "--execute"], [], 3),
    ("abort transactions", ["abort", "transactions", "10", "--execute"], [], 0),
    ("abort compactions", ["abort", "compactions", "2", "--execute"], [], 0),
    ("abort a failed compaction", ["abort", "compactions", "1", "--execute"], [], 6),
    # the demo's lock 1 belongs to the open txn 10: refused as Hive refuses it
    ("unlock a lock of a txn", ["unlock", "1", "--execute"], [], 6),
    # once txn 10 is aborted its lock is gone: no such lock (Hive's unlock is idempotent)
    ("unlock no lock", ["unlock", "1", "--execute"], [["abort", "transactions", "10", "--execute"]], 0),
    ("unlock refused under --read-only", ["--read-only", "unlock", "1", "--execute"], [], 6),
    # the demo is a Hive 3 metastore: upgrade-check needs a Hive 2 one (usage error)
    ("upgrade-check", ["upgrade-check", "--execute"], [], 2),
]


def _run(args: list[str], root: Path, url: str):
    # demo makes its own metastore unless --metastore is given
    given = ["--metastore", url] if "demo" not in args else []
    return run_cli(*given, *[a.replace("{dir}", str(root)) for a in args])


@pytest.mark.parametrize("name,args,prepare,code", CASES, ids=[c[0] for c in CASES])
def test_dry_run_writes_nothing_and_exits_as_the_real_run(tmp_path, name, args, prepare, code):
    real_root, real_url = _demo(tmp_path / "real")
    dry_root, dry_url = _demo(tmp_path / "dry")
    for step in prepare:
        assert _run(step, real_root, real_url).code == 0
        assert _run(step, dry_root, dry_url).code == 0

    files, rows = _files(dry_root), _rows(dry_root / "metastore.db")
    dry = _run(args + ["--dry-run"], dry_root, dry_url)
    assert _files(dry_root) == files, (name, dry)
    assert _rows(dry_root / "metastore.db") == rows, (name, dry)

    real_files, real_rows = _files(real_root), _rows(real_root / "metastore.db")
    real = _run(args, real_root, real_url)
    assert real.code == code, (name, real)
    assert dry.code == real.code, (name, dry, real)
    if code == 0:
        assert dry.stdout.strip(), name  # the dry run says what it would do
        # and the real run did write something (so the comparison above could fail)
        wrote = _files(real_root) != real_files or _rows(real_root / "metastore.db") != real_rows
        # (on the demo the Initiator finds nothing new to enqueue: the due partition is queued)
        assert wrote or name in ("unlock no lock", "initiator"), name


def test_dry_run_wins_over_execute_in_every_deleting_command():
    """--execute and --dry-run together: the dry run (one rule: the case list above gives both)."""
    deleting = {"clean", "revert", "abort", "unlock", "upgrade-check"}
    assert {c[1][0] for c in CASES if "--execute" in c[1]} | {"unlock"} >= deleting


def test_every_writing_command_accepts_dry_run():
    """Every command of the preview rule has the one --dry-run option."""
    import click
    import typer

    from acidctl.cli.main import app

    root = typer.main.get_command(app)
    writing = [
        ("compact",),
        ("worker",),
        ("initiator",),
        ("export",),
        ("changes",),
        ("migrate",),
        ("metastore", "init"),
        ("demo",),
        ("clean",),
        ("revert",),
        ("abort", "transactions"),
        ("abort", "compactions"),
        ("unlock",),
        ("upgrade-check",),
    ]
    for path in writing:
        cmd: click.Command = root
        for p in path:
            cmd = cmd.commands[p]  # type: ignore[attr-defined]
        opts = {o for p in cmd.params if isinstance(p, click.Option) for o in p.opts}
        assert "--dry-run" in opts, path
    # every command's case is in CASES (the metastore subcommand as its group)
    assert {p[0] for p in writing} <= {c[1][0] for c in CASES} | {"--read-only"} | {"abort", "metastore"}


def test_worker_dry_run_names_the_request_and_what_it_would_write(tmp_path):
    """The demo queues one request: compaction 2, major, default.sales/ds=2025-12-31 (README "The
    demo warehouse"). The dry run names it, the state it would get and the base it would write,
    claims nothing (the request stays initiated) and plans it as compact --dry-run does."""
    import json

    root, url = _demo(tmp_path / "d")
    r = run_cli("--metastore", url, "-o", "json", "worker", "--dry-run")
    assert r.code == 0, r
    doc = json.loads(r.stdout)
    [req] = doc["requests"]
    assert (req["cq_id"], req["table"], req["partition"], req["type"]) == (2, "default.sales", "ds=2025-12-31", "major")
    assert req["state"] == "would be ready for cleaning" and doc["dry_run"] is True
    plan = json.loads(
        run_cli(
            "--metastore", url, "-o", "json", "compact", "--major", "default.sales/ds=2025-12-31", "--dry-run"
        ).stdout
    )
    [p] = plan["partitions"]
    assert req["output_dirs"] == p["outputs"] and req["plan"]["inputs"] == p["inputs"]
    con = sqlite3.connect(root / "metastore.db")
    assert con.execute("SELECT CQ_STATE FROM COMPACTION_QUEUE WHERE CQ_ID = 2").fetchone() == ("i",)
    con.close()
    # no request of a matching database: nothing to claim
    r = run_cli("--metastore", url, "-o", "json", "worker", "--dry-run", "--db", "nomatch*")
    assert r.code == 0 and json.loads(r.stdout)["requests"] == []
