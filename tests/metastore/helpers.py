"""Helpers for the metastore tests."""

from __future__ import annotations

import json

import pytest

from acidctl.cli.main import main


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
