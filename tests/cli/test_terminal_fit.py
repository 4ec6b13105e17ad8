"""Every command's default text view at 80 columns (report #6, issue 22 "Terminal fit"):

* every line fits 80 columns, unless it holds a word (a path) too long for any line: that word
  is never split;
* every identifier the command reports in JSON (names, paths, partition specs, ids) that the
  unwrapped default view (a pipe) shows appears unbroken on one line of the 80-column text too;
* headers are never split inside a word;
* every column of the default view names the JSON key of the same value (the declaration
  ``Col(header, key)``), and that key is in the command's ``-o json`` document.

Run on demo warehouses (``acidctl demo``, Hive 3 and Hive 4) and on a Hive 2.3 metastore for
``upgrade-check``. The rules come from the issue, not from acidctl's output."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.conftest import run_cli

WIDTH = 80

#: JSON keys whose values are identifiers a terminal must never split
ID_KEYS = {
    "name",
    "path",
    "partition",
    "table",
    "location",
    "file",
    "dest",
    "source",
    "input_dirs",
    "output_dirs",
    "outputs",
    "inputs",
    "obsoletes",
    "txnid",
    "txn_id",
    "lockid",
    "lock_id",
    "compactionid",
    "cq_id",
    "partname",
    "tabname",
    "dbname",
    "subject",
    "fix",
    "base",
    "deltas",
    "delete_deltas",
}


def _short_root(tmp_path_factory, name: str) -> Path:
    """A short directory (pytest's own paths alone are ~60 characters): headings name paths."""
    d = Path(tempfile.mkdtemp(prefix="af", dir="/tmp"))
    return d / name


@pytest.fixture(scope="module")
def roots():
    made = []

    def make(hive_version: int) -> tuple[Path, str]:
        d = Path(tempfile.mkdtemp(prefix="af", dir="/tmp"))
        made.append(d)
        root = d / f"h{hive_version}"
        r = run_cli("-o", "json", "demo", str(root), "--hive-version", str(hive_version))
        assert r.code == 0, r
        return root, f"sqlite:///{root / 'metastore.db'}"

    yield make
    for d in made:
        shutil.rmtree(d, ignore_errors=True)


def _identifiers(doc) -> set[str]:
    out: set[str] = set()

    def walk(v, key=None):
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, k)
        elif isinstance(v, list):
            for x in v:
                walk(x, key)
        elif key in ID_KEYS and v is not None and not isinstance(v, bool):
            s = str(v)
            if s and " " not in s:
                out.add(s)

    walk(doc)
    return out


def _json_keys(doc) -> set[str]:
    out: set[str] = set()

    def walk(v):
        if isinstance(v, dict):
            for k, x in v.items():
                out.add(str(k))
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(doc)
    return out


def _headers(text: str) -> list[list[str]]:
    """The header lines of each "simple" table (the lines above the dashes)."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if i and line.strip() and set(line) <= {"-", " "} and "--" in line:
            j = i - 1
            block = []
            # headers print in UPPER CASE: the lines above the dashes that are all upper case
            while j >= 0 and lines[j].strip() and lines[j] == lines[j].upper() and not (set(lines[j]) <= {"-", " "}):
                block.insert(0, lines[j])
                j -= 1
                if len(block) > 4:
                    break
            out.append(block)
    return out


def check(args: list[str], monkeypatch, *, codes=(0,)) -> None:
    from acidctl.cli import output

    monkeypatch.delenv("COLUMNS", raising=False)
    js = run_cli("-o", "json", *args)
    assert js.code in codes, js
    doc = json.loads(js.stdout) if js.stdout.strip() and js.stdout.lstrip()[0] in "[{" else None
    wide = run_cli("-o", "wide", *args)
    plain = run_cli(*args)  # a pipe: the same default view, nothing wrapped
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    output.shown_columns().clear()
    narrow = run_cli(*args)
    shown = list(output.shown_columns())
    monkeypatch.delenv("COLUMNS")
    assert narrow.code == js.code == wide.code == plain.code, (narrow, js)
    lines = narrow.stdout.splitlines()
    for line in lines:
        if len(line) > WIDTH:
            # only a line with a word (a path, a command to copy) too long for any line may be
            # longer: that word is never split
            assert max(map(len, line.split())) > WIDTH - 8, f"{args}: {len(line)} columns: {line!r}"
    # identifiers that the unwrapped default view shows are whole on one line of the narrow text
    if doc is not None:
        for ident in _identifiers(doc):
            if ident in plain.stdout:
                assert any(ident in line for line in lines), f"{args}: {ident!r} split in\n{narrow.stdout}"
    # headers: every header word is a word of the declared header (never split inside a word)
    declared = {w for table in shown for h, _ in table for w in h.split()}
    for block in _headers(narrow.stdout):
        for line in block:
            for word in re.split(r"\s+", line.strip()):
                assert word in declared, f"{args}: header fragment {word!r} in {block}"
    # every default-view column names a JSON key of the same command's -o json
    if doc is not None:
        keys = _json_keys(doc)
        for table in shown:
            for header, key in table:
                if header in ("PROPERTY", "VALUE") and key in ("property", "value"):
                    continue  # dump --meta's facts: one row per JSON key (File version = format_version ...)
                assert key in keys, f"{args}: column {header} declares JSON key {key!r}, not in the JSON"


READ_ONLY = [
    ["state", "default.sales"],
    ["state", "default.employee"],
    ["show", "transactions"],
    ["show", "transactions", "--older-than", "100d"],
    ["show", "locks"],
    ["show", "locks", "--extended"],
    ["show", "compactions"],
    ["show", "write-ids", "default.sales", "--verbose"],
    ["show", "tables"],
    ["compact", "default.sales", "--major", "--dry-run"],
    ["clean", "default.sales", "--min-age", "0"],
    ["doctor"],
    ["why", "default.sales"],
    ["why", "default.employee"],
    ["abort", "transactions", "--older-than", "0"],
    ["abort", "compactions", "2"],
    ["unlock", "1", "--dry-run"],  # the demo's lock belongs to txn 10: refused, nothing printed
    ["initiator", "--once", "--dry-run"],
    ["metrics"],
    ["metrics", "--deltas"],
]


@pytest.mark.parametrize("hive_version", [3, 4])
def test_read_only_commands_fit_80_columns(roots, hive_version, monkeypatch):
    root, url = roots(hive_version)
    monkeypatch.setenv("ACIDCTL_METASTORE_URL", url)
    for args in READ_ONLY:
        if args[0] == "state" and hive_version == 4:
            args = [*args, "--hive-version", "4"]
        codes = (0, 4) if args[0] in ("state", "doctor") else (6,) if args[0] == "unlock" else (0,)
        check(args, monkeypatch, codes=codes)
    meta = sorted((root / "warehouse" / "sales").rglob("bucket_00001"))
    check(["dump", "--meta", str(meta[0])], monkeypatch)


@pytest.mark.parametrize("hive_version", [3, 4])
def test_commands_that_write_fit_80_columns(roots, hive_version, monkeypatch, tmp_path):
    root, url = roots(hive_version)
    monkeypatch.setenv("ACIDCTL_METASTORE_URL", url)
    # one run each (the JSON and wide runs of ``check`` repeat it: each is a dry run or finds
    # nothing left to do, which is a report of its own)
    from acidctl.cli import output

    monkeypatch.setenv("COLUMNS", str(WIDTH))
    output.shown_columns().clear()
    extra = ["--allow-non-atomic-publish"] if hive_version == 3 else []
    r = run_cli("compact", "default.sales", "--major", "--engine", "local", *extra)
    assert r.code == 0, r
    for line in r.stdout.splitlines():
        assert len(line) <= WIDTH or max(map(len, line.split())) > WIDTH - 8, line
    shown = list(output.shown_columns())
    assert shown and all(k != "task_seconds" or h == "TIME" for t in shown for h, k in t)
    monkeypatch.delenv("COLUMNS")
    check(["revert", "default.sales"], monkeypatch)
    check(["export", "default.sales", str(tmp_path / "out"), "--dry-run"], monkeypatch, codes=(0, 2))
    r = run_cli("export", "default.employee", str(tmp_path / "exp"))
    assert r.code == 0, r
    check(["clean", "default.sales", "--min-age", "0"], monkeypatch)


def test_upgrade_check_fits_80_columns(monkeypatch):
    from acidctl.metastore import hive2 as ms2
    from tests.conftest import GOLDEN
    from tests.metastore.hive2_helpers import add_table, set_txns

    d = Path(tempfile.mkdtemp(prefix="af", dir="/tmp"))
    try:
        url = f"sqlite:///{d}/ms.db"
        ms2.init_hive2(url)
        t = d / "w" / "seed"
        shutil.copytree(GOLDEN / "hive23_seed_table", t, ignore=shutil.ignore_patterns("_EXPECTED.md"))
        add_table(url, "db", "seed", f"file:{t}", {"transactional": "true", "transactional_properties": "default"})
        set_txns(url, {}, next_txn=3)
        monkeypatch.setenv("ACIDCTL_METASTORE_URL", url)
        check(["upgrade-check"], monkeypatch, codes=(4,))
        check(["show", "transactions"], monkeypatch)
        check(["show", "compactions"], monkeypatch)
        check(["state", "db.seed"], monkeypatch, codes=(0, 4))
    finally:
        shutil.rmtree(d, ignore_errors=True)
