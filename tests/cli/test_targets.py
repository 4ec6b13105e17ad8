"""What a command's TABLE argument names (new-user report: `state employee` was a path while
`show write-ids employee` meant `default.employee`), and the snapshot string a target prints
(`--assume-committed` printed `null:7:...`).

The rule, as Hive resolves an unqualified name: an existing path wins; else ``DB.TABLE[/PART]``
is a metastore table; else a bare ``NAME[/PART]`` is ``default.NAME`` when a metastore is
configured; anything else is a path."""

from __future__ import annotations

import json

import pytest

from tests.acidfiles import B0, acid_file

LONG_MAX = "9223372036854775807"  # Hive's minOpenWriteId when nothing is open
# the demo (acidctl/demo.py docstring): sales write 4 aborted, write 7 open; employee 1..3 committed
SALES = "default.sales:7:7:7:4"
EMPLOYEE = f"default.employee:3:{LONG_MAX}::"
ROW = (
    "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
    "row:struct<id:int,name:string>>"
)


def _timeless(doc):
    """``doc`` without timings (two runs differ only there)."""
    if isinstance(doc, dict):
        return {k: _timeless(v) for k, v in doc.items() if "seconds" not in k}
    if isinstance(doc, list):
        return [_timeless(v) for v in doc]
    return doc


def _json(r):
    assert r.code == 0, r
    return json.loads(r.stdout)


@pytest.mark.parametrize("argv", [["state"], ["dump", "--merged"], ["compact", "--dry-run", "--major"]])
def test_a_bare_name_is_the_default_database_table_when_a_metastore_is_configured(
    cli, demo, argv, monkeypatch, tmp_path
):
    monkeypatch.chdir(tmp_path)  # no ./sales here
    bare = cli("-o", "json", *argv, "sales")
    full = cli("-o", "json", *argv, "default.sales")
    assert bare.code == full.code == 0, (bare, full)
    if argv[0] == "dump":
        assert bare.stdout == full.stdout
    elif argv[0] == "state":
        assert _state_shape(json.loads(bare.stdout)) == _state_shape(json.loads(full.stdout))
        assert json.loads(bare.stdout)["table"] == "default.sales"
    else:
        assert _timeless(json.loads(bare.stdout)) == _timeless(json.loads(full.stdout))
        assert json.loads(bare.stdout)["table"] == "default.sales"


def _state_shape(doc):
    """What a state report says about the table (not the ages in its messages)."""
    return (
        doc["table"],
        doc["snapshot_source"],
        doc["write_ids"]["string"],
        [(p["path"], [(e["name"], e["role"], e["reason"]) for e in p["entries"]]) for p in doc["partitions"]],
        sorted((f["check"], f["path"]) for f in doc["findings"]),
    )


def test_every_command_reads_the_same_snapshot_for_a_bare_name(cli, demo, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert cli("show", "write-ids", "sales").stdout.strip() == SALES
    doc = _json(cli("-o", "json", "state", "sales"))
    assert (doc["table"], doc["snapshot_source"], doc["write_ids"]["string"]) == ("default.sales", "metastore", SALES)
    doc = _json(cli("-o", "json", "state", "employee"))
    assert doc["write_ids"]["string"] == EMPLOYEE
    # with a partition, as DB.TABLE/PART
    rows = [json.loads(x) for x in cli("-o", "json", "dump", "--merged", "sales/ds=2025-12-31").stdout.splitlines()]
    assert sorted(r["id"] for r in rows) == [1, 2, 4, 5, 6, 7]


def test_an_existing_path_wins_over_the_table_name(cli, demo, monkeypatch, tmp_path):
    # ./sales exists here but is not the table's location: it is that directory, not default.sales
    acid_file(tmp_path / "sales" / "delta_0000001_0000001_0000" / "bucket_00000", ROW, [(0, 1, B0, 0, 1, (1, "a"))])
    monkeypatch.chdir(tmp_path)
    r = cli("-o", "json", "state", "sales")
    assert r.code == 2 and "no snapshot for a path" in r.stderr  # a path has no snapshot of its own
    doc = _json(cli("-o", "json", "state", "sales", "--assume-committed"))
    assert doc["table"] is None and doc["snapshot_source"] == "--assume-committed"
    assert doc["path"] == str(tmp_path / "sales")


def test_a_bare_name_without_a_metastore_is_a_missing_path_with_a_hint(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = cli("state", "employee", "--assume-committed")
    assert r.code == 3, r
    [line] = r.stderr.strip().splitlines()
    assert "no such file or directory" in line and "default.employee" in line and "--metastore" in line


def test_enqueue_takes_a_bare_name(cli, demo, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    doc = _json(cli("-o", "json", "compact", "--enqueue", "employee", "--major"))
    assert doc["accepted"] is True
    comps = _json(cli("-o", "json", "show", "compactions"))
    rows = comps["compactions"] if isinstance(comps, dict) else comps
    assert [(c["dbname"], c["tabname"], c["type"], c["state"]) for c in rows if c["tabname"] == "employee"] == [
        ("default", "employee", "MAJOR", "initiated")
    ]


# -- the snapshot string ---------------------------------------------------------------------


def test_assume_committed_prints_a_valid_write_id_list_for_a_table(cli, demo):
    root, _ = demo
    # highest write id in sales' directory names: delta_0000007_0000007_0000; nothing open
    want = f"default.sales:7:{LONG_MAX}::"
    for spec in (
        "default.sales",
        str(root / "warehouse" / "sales"),
        str(root / "warehouse" / "sales" / "ds=2026-01-01"),
    ):
        doc = _json(cli("-o", "json", "state", spec, "--assume-committed"))
        assert doc["write_ids"]["string"] == want and doc["write_ids"]["table"] == "default.sales"
        text = cli("state", spec, "--assume-committed").stdout
        assert f"write ids: {want}" in text and "null:" not in text


def test_a_path_below_a_database_directory_names_that_database(cli, tmp_path):
    t = tmp_path / "warehouse" / "mydb.db" / "t"
    for w in (1, 2, 3):
        acid_file(t / f"delta_{w:07d}_{w:07d}_0000" / "bucket_00000", ROW, [(0, w, B0, 0, w, (w, f"w{w}"))])
    doc = _json(cli("-o", "json", "state", t, "--assume-committed"))
    assert doc["write_ids"]["string"] == f"mydb.t:3:{LONG_MAX}::"
    # the printed list is a valid --write-ids for the same table: no "another table" warning
    r = cli("-o", "json", "dump", "--merged", t, "--write-ids", doc["write_ids"]["string"])
    assert r.code == 0 and r.stderr == "", r
    assert sorted(json.loads(x)["id"] for x in r.stdout.splitlines()) == [1, 2, 3]
    # a list given without its table gets the table's name, as Hive's lists always carry one
    doc = _json(cli("-o", "json", "state", t, "--write-ids", f"2:{LONG_MAX}::"))
    assert doc["write_ids"]["string"] == f"mydb.t:2:{LONG_MAX}::"


# -- a path with a metastore configured (new-user report: "With --metastore given, looking a
#    table up by its path, so a path gets the real snapshot")


def test_a_path_gets_the_metastore_snapshot_of_the_table_located_there(cli, demo):
    root, _ = demo
    wh = root / "warehouse"
    for spec, name in [
        (wh / "sales", "default.sales"),
        (f"file://{wh}/sales/", "default.sales"),
        (wh / "sales" / "ds=2026-01-01", "default.sales/ds=2026-01-01"),
        (wh / "employee", "default.employee"),
    ]:
        r = cli("-o", "json", "state", spec)
        assert r.code == 0, (spec, r)
        doc = json.loads(r.stdout)
        assert (doc["table"], doc["snapshot_source"]) == (name.split("/")[0], "metastore"), spec
        assert doc["write_ids"]["string"] == (SALES if name.startswith("default.sales") else EMPLOYEE)
        assert _state_shape(doc) == _state_shape(_json(cli("-o", "json", "state", name)))
    r = cli("state", wh / "sales")
    assert r.code == 0 and "is default.sales in the metastore" in r.stderr, r
    # the rows a reader sees: write 4 aborted and write 7 open are not read through a path either
    by_path = cli("-o", "json", "dump", "--merged", wh / "sales" / "ds=2026-01-01").stdout
    assert by_path == cli("-o", "json", "dump", "--merged", "default.sales/ds=2026-01-01").stdout


def test_an_explicit_snapshot_keeps_the_path_a_path(cli, demo):
    root, _ = demo
    doc = _json(cli("-o", "json", "state", root / "warehouse" / "sales", "--assume-committed"))
    assert (doc["table"], doc["snapshot_source"]) == (None, "--assume-committed")


def test_a_path_no_table_is_located_at_still_needs_a_snapshot(cli, demo, tmp_path):
    t = tmp_path / "elsewhere" / "t"
    acid_file(t / "delta_0000001_0000001_0000" / "bucket_00000", ROW, [(0, 1, B0, 0, 1, (1, "a"))])
    r = cli("state", t)
    assert r.code == 2 and "no snapshot for a path" in r.stderr and "no table there" in r.stderr, r
