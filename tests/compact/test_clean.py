"""``acidctl clean``: the dry run lists what Hive's Cleaner would remove (with reasons) and
deletes nothing; ``--execute`` deletes exactly that; reads are identical before and after; the
``--min-age`` guard and the current/compactor snapshots are honoured."""

from __future__ import annotations

import json
import time

import pytest

from acidctl.acid.writeids import WriteIdList
from acidctl.compact.clean import clean_table
from acidctl.fs import TableFS
from tests.compact.helpers import ALL, compact, demo_warehouse, merged, nation_table, state_errors


def _tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_dry_run_lists_with_reasons_and_execute_deletes(tmp_path, cli):
    wh, wids = demo_warehouse(tmp_path)
    root, wl = wh / "sales", wids["sales"]
    before = merged(root, wl)
    compact(root, "major", wl)
    tree = _tree(root)
    r = cli("-o", "json", "clean", "--min-age", "0", "--write-ids", wl, root)
    assert r.code == 0, r
    doc = json.loads(r.stdout)
    assert doc["executed"] is False and _tree(root) == tree
    got = {(i["path"].split("/sales/")[1], i["kind"], i["action"]) for i in doc["items"]}
    p1, p2 = "ds=2025-12-31", "ds=2026-01-01"
    assert got == {
        (f"{p1}/000000_0", "original", "delete"),
        (f"{p1}/000001_0", "original", "delete"),
        (f"{p1}/000001_0_copy_1", "original", "delete"),
        (f"{p1}/delete_delta_0000001_0000001_0000", "delete_delta", "delete"),
        (f"{p1}/delta_0000002_0000002_0000", "delta", "delete"),
        (f"{p2}/delta_0000003_0000003_0000", "delta", "delete"),
        (f"{p2}/delta_0000004_0000004_0000", "delta", "delete"),  # aborted, covered by base_6
        (f"{p2}/delta_0000005_0000005_0000", "delta", "delete"),
        (f"{p2}/delta_0000005_0000005_0001", "delta", "delete"),
        (f"{p2}/delete_delta_0000005_0000005_0000", "delete_delta", "delete"),
        (f"{p2}/delete_delta_0000006_0000006_0000", "delete_delta", "delete"),
    }
    reasons = {i["path"].split("/sales/")[1]: i["reason"] for i in doc["items"]}
    assert "base_0000002" in reasons[f"{p1}/000000_0"]
    assert reasons[f"{p2}/delta_0000004_0000004_0000"].startswith("aborted, covered")
    # text mode shows the same plan
    r = cli("clean", "--min-age", "0", "--write-ids", wl, root)
    assert "dry run" in r.stdout and "would delete 11 paths (" in r.stdout
    r = cli("-o", "json", "clean", "--execute", "--min-age", "0", "--write-ids", wl, root)
    assert r.code == 0
    assert sorted(p.name for p in (root / p1).iterdir() if not p.name.startswith(".")) == ["base_0000002"]
    # write 7 is above the snapshot (in flight): never a candidate
    assert sorted(p.name for p in (root / p2).iterdir() if not p.name.startswith(".")) == [
        "base_0000006",
        "delta_0000007_0000007_0000",
    ]
    assert merged(root, wl) == before
    assert state_errors(root, wl) == []


def test_min_age_guard(tmp_path):
    t = nation_table(tmp_path)
    wl = WriteIdList.parse(f"db.t:4:{ALL}::")
    compact(t, "minor", wl)
    tfs = TableFS(str(t))
    # everything was just made obsolete: the default 1h guard keeps it all
    rep = clean_table(tfs, reader=wl, min_age=3600, execute=True)
    assert rep["deleted"] == [] and rep["summary"]["kept_young"] == 3
    assert all(i["action"].startswith("keep") for i in rep["items"])
    # two hours later the same call deletes the three covered directories
    rep = clean_table(tfs, reader=wl, min_age=3600, execute=True, now=time.time() + 7200)
    assert sorted(p.split("/")[-1] for p in rep["deleted"]) == [
        "delete_delta_0000003_0000003_0000",
        "delete_delta_0000004_0000004_0000",
        "delta_0000002_0000002_0000",
    ]
    assert sorted(p.name for p in t.iterdir() if not p.name.startswith(".")) == [
        "delete_delta_0000002_0000004",
        "delta_0000002_0000004",
    ]
    assert len(merged(t, wl)) == 23000


def test_never_removes_what_a_snapshot_needs(tmp_path):
    t = nation_table(tmp_path)
    wl = WriteIdList.parse("db.t:4:4:4:")  # write 4 still open
    compact(t, "major", wl)  # base_3
    rep = clean_table(TableFS(str(t)), reader=wl, min_age=0, execute=True)
    left = sorted(p.name for p in t.iterdir() if not p.name.startswith("."))
    assert left == ["base_0000003", "delete_delta_0000004_0000004_0000"]
    assert {p.split("/")[-1] for p in rep["deleted"]} == {
        "delta_0000002_0000002_0000",
        "delete_delta_0000003_0000003_0000",
    }
    assert len(merged(t, f"db.t:4:{ALL}::")) == 23000


def test_staging_leftover_is_cleaned(tmp_path, cli):
    t = nation_table(tmp_path)
    junk = t / ".acidctl-staging-0123456789ab" / "base_0000004"
    junk.mkdir(parents=True)
    (junk / "bucket_00000").write_bytes(b"partial")
    r = cli("-o", "json", "clean", "--min-age", "0", "--write-ids", f"db.t:4:{ALL}::", t)
    items = json.loads(r.stdout)["items"]
    assert [(i["kind"], i["action"]) for i in items] == [("staging", "delete")]
    assert junk.exists()
    assert cli("clean", "--execute", "--min-age", "0", "--write-ids", f"db.t:4:{ALL}::", t).code == 0
    assert not (t / ".acidctl-staging-0123456789ab").exists()
    assert len(merged(t, f"db.t:4:{ALL}::")) == 23000


@pytest.mark.parametrize("args", [["--min-age", "soon"], []])
def test_usage_errors(tmp_path, cli, args):
    t = nation_table(tmp_path)
    if args:
        args = args + ["--write-ids", f"db.t:4:{ALL}::"]
    r = cli("clean", *args, t)
    assert r.code == 2
