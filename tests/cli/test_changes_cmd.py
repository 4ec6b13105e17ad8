"""``acidctl changes DB.TABLE`` on the demo warehouse (snapshot and table from its metastore):
the expectations are the demo's own history as ``acidctl demo`` documents it (write ids and
what each did), not acidctl's output."""

from __future__ import annotations

import json


def _events(stdout: str) -> list[tuple]:
    return [
        (d["_change_type"], d["_commit_version"], d.get("ds"), d["id"])
        for d in (json.loads(x) for x in stdout.splitlines())
    ]


def test_sales_changes_from_the_metastore(demo, cli):
    # sales: 5 = UPDATE id 10 + INSERT id 21, 6 = DELETE ids 11, 12, 7 open (never shown)
    r = cli("changes", "default.sales", "--from-write-id", "5")
    assert r.code == 0, r
    assert sorted(_events(r.stdout)) == sorted(
        [
            ("delete", 5, "2026-01-01", 10),
            ("insert", 5, "2026-01-01", 10),
            ("insert", 5, "2026-01-01", 21),
            ("delete", 6, "2026-01-01", 11),
            ("delete", 6, "2026-01-01", 12),
        ]
    )
    # order: write id, deletes first; --key pairs the update
    r = cli("changes", "default.sales/ds=2026-01-01", "--from-write-id", "5", "--to-write-id", "5", "--key", "id")
    assert _events(r.stdout) == [
        ("update_preimage", 5, "2026-01-01", 10),
        ("update_postimage", 5, "2026-01-01", 10),
        ("insert", 5, "2026-01-01", 21),
    ]
    # 1 = DELETE id 3 (an original row), 4 aborted: the range 1..4 holds 1, 2 and 3's events
    r = cli("changes", "default.sales", "--from-write-id", "1", "--to-write-id", "4")
    got = _events(r.stdout)
    assert got[0] == ("delete", 1, "2025-12-31", 3)
    assert {e[1] for e in got} == {1, 2, 3} and len(got) == 1 + 2 + 10


def test_hive2_tables_are_refused(demo, cli):
    root, _ = demo
    r = cli(
        "changes",
        str(root / "hive2" / "warehouse" / "legacy_employee"),
        "--from-write-id",
        "1",
        "--hive-version",
        "2",
        "--txns",
        "3:3:3",
    )
    assert r.code == 7 and "Hive 2" in r.stderr and "Traceback" not in r.stderr


def test_the_parquet_report_names_its_source_as_migrate_does(demo, cli, tmp_path, monkeypatch):
    """``source`` is what ``migrate`` records as ``acidctl.source-table``: ``db.table`` (lower
    case, whatever case it was typed in) when the table came from the metastore (also when
    given by its path, which the metastore knows), else the path; a DB.TABLE/PART target adds
    ``partition`` (and the text head names it)."""
    root, _ = demo
    path = str(root / "warehouse" / "sales")
    cases = [("default.sales", [], "default.sales"), ("DEFAULT.Sales", [], "default.sales")]
    cases += [(path, [], "default.sales"), (path, ["--assume-committed"], path)]
    for spec, snap, want in cases:
        if snap:  # no metastore: a path and an assumed snapshot
            monkeypatch.delenv("ACIDCTL_METASTORE_URL")
        args = ["-o", "json", "changes", spec, str(tmp_path / "out"), "--to", "parquet", "--from-write-id", "5"]
        r = cli(*args, "--dry-run", *snap)
        assert r.code == 0, r
        doc = json.loads(r.stdout)
        m = cli("-o", "json", "migrate", spec, "--to", "delta", "--target", str(tmp_path / "delta"), "--dry-run", *snap)
        assert m.code == 0, m
        assert doc["source"] == json.loads(m.stdout)["source"] == want
        assert "partition" not in doc and "table" not in doc
    monkeypatch.setenv("ACIDCTL_METASTORE_URL", f"sqlite:///{root / 'metastore.db'}")
    part = "default.sales/ds=2026-01-01"
    r = cli(
        "-o", "json", "changes", part, str(tmp_path / "out"), "--to", "parquet", "--from-write-id", "5", "--dry-run"
    )
    doc = json.loads(r.stdout)
    assert (doc["source"], doc["partition"]) == ("default.sales", "ds=2026-01-01")
    r = cli("changes", part, str(tmp_path / "out"), "--to", "parquet", "--from-write-id", "5")
    assert r.code == 0, r
    assert r.stdout.startswith(f"acidctl changes {part} -> {tmp_path / 'out'}  (write ids 5..")


def test_errors_are_worded_as_exports_for_the_same_situation(demo, cli, tmp_path):
    """An unknown partition (exit 3) and an unknown table or metastore partition (exit 3): one
    line, the same text as ``export`` gives for the same TABLE and --partition."""
    for table, extra in (
        ("default.sales", ["--partition", "ds=1999"]),
        ("default.sales/ds=1999", []),
        ("default.nosuch", []),
    ):
        r = cli("changes", table, "--from-write-id", "1", *extra)
        e = cli("export", table, str(tmp_path / "out"), *extra)
        assert r.code == e.code == 3, (r, e)
        assert r.stderr == e.stderr and len(r.stderr.strip().splitlines()) == 1
    assert (
        "--partition ds=1999: no such partition directory in"
        in cli("changes", "default.sales", "--from-write-id", "1", "--partition", "ds=1999").stderr
    )
