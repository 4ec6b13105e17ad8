"""Helpers for the metastore tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acidctl.cli.main import main
from tests.acidfiles import B0, acid_file

ORC_TYPE = (
    "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
    "row:struct<id:int,name:string>>"
)


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


def make_table(rec, wh: Path, db: str, name: str, writes: int = 2) -> Path:
    """A full-ACID table with ``writes`` committed insert deltas (write ids 1..writes), recorded
    in the metastore as Hive records committed inserts."""
    loc = wh / f"{db}.db" / name
    loc.mkdir(parents=True)
    rec.create_table(db, name, location=f"file:{loc}", columns=[("id", "int"), ("name", "string")])
    for _ in range(writes):
        txn = rec.open_txn("hive", "hivehost")
        w = rec.add_write(txn, db, name, operation="i")
        rec.commit_txn(txn)
        d = loc / f"delta_{w:07d}_{w:07d}_0000"
        acid_file(d / "bucket_00000", ORC_TYPE, [(0, w, B0, 0, w, (w, f"r{w}"))])
        (d / "_orc_acid_version").write_bytes(b"2")
    return loc
