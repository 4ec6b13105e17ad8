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
