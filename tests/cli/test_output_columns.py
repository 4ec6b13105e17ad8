"""``-o wide`` and ``-o custom-columns=...`` (kubectl's way of choosing text columns), through the
CLI on the demo warehouse, whose contents acidctl/demo.py documents (the expected rows below are
that description: originals, write 1's delete delta, write 2's delta; txn 7 aborted, txn 10
open and holding a lock on sales/ds=2026-01-01; a failed and an initiated major compaction)."""

from __future__ import annotations

import json
import re

import pytest


@pytest.fixture(scope="module")
def demo_url(tmp_path_factory):
    from tests.conftest import run_cli

    d = tmp_path_factory.mktemp("cols") / "demo"
    assert run_cli("-o", "json", "demo", str(d)).code == 0
    return f"sqlite:///{d / 'metastore.db'}"


def _tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every "simple" table of a text output: (header cells, rows of cells)."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if i and line and set(line) <= {"-", " "} and "--" in line:
            header = re.split(r"\s{2,}", lines[i - 1].strip())
            rows = []
            for row in lines[i + 1 :]:
                if not row.strip() or row.startswith("==") or re.match(r"[a-z]+: ", row):
                    break  # a blank line, a heading or a summary line ("summary: ...") ends it
                rows.append(re.split(r"\s{2,}", row.strip()))
            out.append((header, rows))
    return out


def test_state_columns_by_header_or_json_key_in_the_order_given(cli, demo_url):
    r = cli("--metastore", demo_url, "-o", "custom-columns=name,Role,write_ids", "state", "default.sales")
    assert r.code == 0, r
    tables = _tables(r.stdout)
    # one directory table per partition; the findings table has none of these columns
    assert [h for h, _ in tables] == [["NAME", "ROLE", "WRITE IDS"]] * 2
    first = {tuple(row) for row in tables[0][1]}
    assert first == {
        ("000000_0", "original"),
        ("000001_0", "original"),
        ("000001_0_copy_1", "original"),
        ("delete_delta_0000001_0000001_0000/", "delete delta", "1"),
        ("delta_0000002_0000002_0000/", "delta", "2"),
    }
    # the JSON key of a column whose header differs (READ# is read_order) chooses it too
    r = cli("--metastore", demo_url, "-o", "custom-columns=READ_ORDER,name", "state", "default.sales")
    assert r.code == 0 and _tables(r.stdout)[0][0] == ["READ#", "NAME"]


def test_json_is_unchanged_and_wide_is_the_wide_flag(cli, demo_url):
    plain = cli("--metastore", demo_url, "-o", "json", "state", "default.sales")
    again = cli("--metastore", demo_url, "-o", "JSON", "show", "compactions")
    assert plain.code == 0 and again.code == 0
    assert {p["partition"] for p in json.loads(plain.stdout)["partitions"]} == {"ds=2025-12-31", "ds=2026-01-01"}
    a = cli("--metastore", demo_url, "-o", "wide", "show", "compactions")
    b = cli("--metastore", demo_url, "--wide", "show", "compactions")
    assert a.code == b.code == 0 and a.stdout == b.stdout
    assert max(map(len, a.stdout.splitlines())) > 80  # Hive 3's ten columns, unwrapped


def test_show_commands_through_the_environment(cli, demo_url, monkeypatch):
    monkeypatch.setenv("ACIDCTL_OUTPUT", "custom-columns=state,transaction id")
    r = cli("--metastore", demo_url, "show", "transactions")
    assert r.code == 0, r
    [(header, rows)] = _tables(r.stdout)
    assert header == ["TRANSACTION STATE", "TRANSACTION ID"]  # one header style: UPPER CASE
    # Hive prints TxnState names; txn 13 = the demo's aborted insert into default.events
    assert sorted(map(tuple, rows)) == [("ABORTED", "13"), ("ABORTED", "7"), ("OPEN", "10")]
    monkeypatch.setenv("ACIDCTL_OUTPUT", "custom-columns=Table,PARTITION,transaction_id")
    r = cli("--metastore", demo_url, "show", "locks")
    assert r.code == 0, r
    assert _tables(r.stdout) == [(["TABLE", "PARTITION", "TRANSACTION ID"], [["sales", "ds=2026-01-01", "10"]])]
    monkeypatch.setenv("ACIDCTL_OUTPUT", "custom-columns=STATE,partition")
    r = cli("--metastore", demo_url, "show", "compactions")
    assert r.code == 0, r
    [(header, rows)] = _tables(r.stdout)
    assert header == ["STATE", "PARTITION"]
    assert sorted(map(tuple, rows)) == [("failed", "ds=2025-12-31"), ("initiated", "ds=2025-12-31")]


def test_doctor_partition_columns_by_json_key(cli, demo_url):
    # doctor's partition table: a column of -o wide chosen by its JSON key
    full = cli("--metastore", demo_url, "-o", "json", "doctor")
    cols = cli("--metastore", demo_url, "-o", "custom-columns=partition,delete_delta_bytes,compaction", "doctor")
    assert cols.code == full.code, cols
    [(header, rows)] = _tables(cols.stdout)
    assert header == ["PARTITION", "DELETE SIZE", "DUE"]
    by_part = {r[0]: r[1:] for r in rows}
    doc = json.loads(full.stdout)
    [p] = [p for p in doc["partitions"] if p["table"] == "default.sales" and p["partition"] == "ds=2025-12-31"]
    # write 1's delete delta is that partition's only delete delta; it is due for a major compaction
    # text shows the size in binary units (under 1 KiB: exact bytes); JSON the byte count
    assert p["delete_delta_bytes"] < 1024
    assert by_part["default.sales/ds=2025-12-31"] == [f"{p['delete_delta_bytes']} B", "major"]
    assert p["delete_delta_bytes"] > 0


def test_unknown_column_is_a_one_line_usage_error_naming_the_columns(cli, demo_url):
    r = cli("--metastore", demo_url, "-o", "custom-columns=name,colour", "state", "default.sales")
    assert r.code == 2 and r.stdout == ""
    [line] = r.stderr.splitlines()
    assert "'colour'" in line and "'name'" not in line
    for offered in ("NAME", "ROLE", "READ#", "read_order", "REASON", "WRITE IDS", "statement_id"):
        assert offered in line
    r = cli("--metastore", demo_url, "-o", "json", "-o", "custom-columns=", "show", "compactions")
    assert r.code == 2 and len(r.stderr.splitlines()) == 1
    r = cli("-o", "yaml", "show", "compactions")
    assert r.code == 2 and "custom-columns=" in r.stderr and len(r.stderr.splitlines()) == 1


def test_only_the_chosen_columns_are_fitted(cli, demo_url, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    r = cli("--metastore", demo_url, "-o", "custom-columns=name,reason", "state", "default.sales")
    assert r.code == 0
    table_lines = [x for x in r.stdout.splitlines() if not x.startswith(("==", "acidctl", "write ids"))]
    table_lines = [x for x in table_lines if not re.match(r"^[a-z]+:", x)]
    # a line may pass 80 only around a word that cannot fit (the test's deep tmp path)
    assert [x for x in table_lines if len(x) > 80 and not any(len(w) > 40 for w in x.split())] == []
    # NAME (34 wide) stays whole; REASON wraps into what is left (not into what the seven
    # other columns would take), no word lost
    assert "delete_delta_0000001_0000001_0000/" in r.stdout
    full = cli("--metastore", demo_url, "-o", "json", "state", "default.sales")
    words = set(r.stdout.split())
    for p in json.loads(full.stdout)["partitions"]:
        for e in p["entries"]:
            assert set(e["reason"].split()) <= words


def test_completion_offers_the_output_values():
    from acidctl.cli.main import _complete_output

    assert _complete_output("") == ["text", "json", "wide", "custom-columns="]
    assert _complete_output("c") == ["custom-columns="]


def test_compact_report_columns(cli, tmp_path):
    # a fresh demo (this test compacts it): demo.py's live rows per partition are the major
    # compaction's output: ds=2025-12-31 ids 1, 2, 4, 5, 6, 7 (write 1 deleted id 3);
    # ds=2026-01-01 ids 10..19 without 11, 12 (write 6), plus 21 (write 5); write 4 aborted
    assert cli("-o", "json", "demo", tmp_path / "demo").code == 0
    url = f"sqlite:///{tmp_path / 'demo' / 'metastore.db'}"
    r = cli(
        "--metastore",
        url,
        "-o",
        "custom-columns=partition,ROWS OUT,status",
        "compact",
        "--major",
        "--engine",
        "local",
        "default.sales",
    )
    assert r.code == 0, r
    [(header, rows)] = _tables(r.stdout)
    assert header == ["PARTITION", "ROWS OUT", "STATUS"]
    assert sorted(map(tuple, rows)) == [("ds=2025-12-31", "6", "compacted"), ("ds=2026-01-01", "9", "compacted")]


def test_a_bad_column_never_hides_the_report_of_work_done(cli, tmp_path):
    """The compaction has run when the report is rendered: an unknown column name is a warning
    on stderr and the whole report is printed, exit 0 (a read-only command exits 2 instead)."""
    assert cli("-o", "json", "demo", tmp_path / "demo").code == 0
    url = f"sqlite:///{tmp_path / 'demo' / 'metastore.db'}"
    r = cli("--metastore", url, "-o", "custom-columns=partition,nosuch", "compact", "--major", "--engine", "local")
    assert r.code == 2  # usage error before any work: no table given
    r = cli(
        "--metastore",
        url,
        "-o",
        "custom-columns=partition,nosuch",
        "compact",
        "--major",
        "--engine",
        "local",
        "default.sales",
    )
    assert r.code == 0, r
    assert "unknown column 'nosuch'" in r.stderr and "printing every column" in r.stderr
    header = _tables(r.stdout)[0][0]
    assert "PARTITION" in header and "ROWS OUT" in header and "STATUS" in header
    assert sorted(
        p.name
        for p in (tmp_path / "demo" / "warehouse" / "sales" / "ds=2025-12-31").iterdir()
        if p.name.startswith("base_")
    )
    r = cli("--metastore", url, "-o", "custom-columns=nosuch", "show", "compactions")
    assert r.code == 2 and r.stdout == ""
