"""Helpers for the metastore tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acidctl.cli.main import main
from tests.acidfiles import B0, acid_file

ORC_TYPE = (
    "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
    "row:struct<id:int,name:string>>"
)


#: the checkout: processes started by tests import acidctl (and tests) from here
ROOT = Path(__file__).resolve().parents[2]


def acidctl_process(url: str, *args: str) -> subprocess.Popen:
    """``acidctl -o json --metastore URL ARGS`` in a process of its own, run from the checkout
    (stdout and stderr piped; no crash point inherited). :func:`json_result` waits for it."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("ACIDCTL_TEST_CRASH_AT", None)
    return subprocess.Popen(
        [sys.executable, "-m", "acidctl", "-o", "json", "--metastore", url, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )


def worker_process(url: str, max_requests: int) -> subprocess.Popen:
    """A real ``acidctl worker --once --engine local --max N`` on ``url``."""
    return acidctl_process(url, "worker", "--once", "--engine", "local", "--max", str(max_requests))


def json_result(p: subprocess.Popen, timeout: float):
    """The JSON document a process of :func:`acidctl_process` printed; it must exit 0."""
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, err.decode()
    return json.loads(out)


def run_cli(argv: list[str]) -> int:
    """Run ``acidctl argv`` in-process; returns the exit code (output via capsys)."""
    with pytest.raises(SystemExit) as ei:
        main(argv)
    return int(ei.value.code or 0)


def cli_json(capsys, argv: list[str]):
    capsys.readouterr()
    code = run_cli(["-o", "json"] + argv)
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def cli_text(capsys, argv: list[str]) -> str:
    capsys.readouterr()
    code = run_cli(argv)
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def table_rows(text: str) -> list[list[str]]:
    """Split a tabulate 'simple' table into cells (by the dashed separator's column spans)."""
    lines = text.rstrip("\n").splitlines()
    sep = next(i for i, l in enumerate(lines) if l.startswith("-") and set(l) <= {"-", " "})
    spans = []
    # column spans from the dashes
    i, n = 0, len(lines[sep])
    line = lines[sep]
    while i < n:
        if line[i] == "-":
            j = i
            while j < n and line[j] == "-":
                j += 1
            spans.append((i, j))
            i = j
        else:
            i += 1

    def cells(l):
        return [l[a : b if k < len(spans) - 1 else None].strip() for k, (a, b) in enumerate(spans)]

    return [cells(lines[sep - 1])] + [cells(l) for l in lines[sep + 1 :]]


def insert_row(rec, table: str, **vals) -> None:
    """One row into the metastore table ``table`` (a ``rec.T`` name; columns by their upper-case
    names), as given, in a transaction of its own: states no acidctl step writes."""
    import sqlalchemy as sa

    t = getattr(rec.T, table)
    with rec.engine.begin() as c:
        c.execute(sa.insert(t.clause).values({getattr(t, k).name: v for k, v in vals.items()}))


def insert_txn(rec, txn_id: int, state: str, started: int) -> None:
    """A ``TXNS`` row: ``state`` (c/o/a), started and last heartbeat at ``started``,
    user u on host h, a default txn (TXN_TYPE 0)."""
    insert_row(
        rec,
        "TXNS",
        TXN_ID=txn_id,
        TXN_STATE=state,
        TXN_STARTED=started,
        TXN_LAST_HEARTBEAT=started,
        TXN_USER="u",
        TXN_HOST="h",
        TXN_TYPE=0,
    )


def make_table(rec, wh: Path, db: str, name: str, writes: int = 2, *, partitions: int = 0) -> Path:
    """A full-ACID table with ``writes`` committed insert deltas (write ids 1..writes), recorded
    in the metastore as Hive records committed inserts. ``partitions`` > 0: partitioned by ``p``
    with ``writes`` deltas in each of ``p=0`` .. ``p=partitions-1`` (one write id per txn,
    allocated per table: partition i holds write ids i*writes+1 .. (i+1)*writes)."""
    loc = wh / f"{db}.db" / name
    loc.mkdir(parents=True)
    keys = [("p", "int")] if partitions else []
    rec.create_table(db, name, location=f"file:{loc}", columns=[("id", "int"), ("name", "string")], partition_keys=keys)
    for part in [f"p={i}" for i in range(partitions)] or [None]:
        where = loc / part if part else loc
        if part:
            rec.add_partition(db, name, part, location=f"file:{where}")
        for _ in range(writes):
            txn = rec.open_txn("hive", "hivehost")
            w = rec.add_write(txn, db, name, partition=part, operation="i")
            rec.commit_txn(txn)
            d = where / f"delta_{w:07d}_{w:07d}_0000"
            acid_file(d / "bucket_00000", ORC_TYPE, [(0, w, B0, 0, w, (w, f"r{w}"))])
            (d / "_orc_acid_version").write_bytes(b"2")
    return loc
