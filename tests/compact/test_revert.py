"""``acidctl revert``: undo a published compaction while its inputs are still on disk."""

from __future__ import annotations

import json

from tests.acidfiles import B0, acid_file
from tests.compact.helpers import ALL, merged

ROW = (
    "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
    "row:struct<id:int,name:string>>"
)
SNAP = f"db.t:3:{ALL}::"


def _table(tmp_path):
    t = tmp_path / "t"
    for w in (1, 2, 3):
        acid_file(
            t / f"delta_{w:07d}_{w:07d}_0000" / "bucket_00000",
            ROW,
            [(0, w, B0, r, w, (w * 10 + r, f"w{w}")) for r in range(3)],
        )
    acid_file(t / "delete_delta_0000003_0000003_0000" / "bucket_00000", ROW, [(2, 1, B0, 1, 3, None)])
    return t


def _files(root):
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".acidctl" not in str(p.relative_to(root))
    }


def test_revert_restores_the_tree_and_the_read(tmp_path, cli):
    t = _table(tmp_path)
    before_files, before = _files(t), merged(t, SNAP)
    assert len(before) == 8
    assert cli("compact", "--major", "--engine", "local", "--write-ids", SNAP, t).code == 0
    assert (t / "base_0000003").is_dir() and merged(t, SNAP) == before
    dry = cli("-o", "json", "revert", t)
    assert dry.code == 0, dry
    doc = json.loads(dry.stdout)
    assert doc["executed"] is False and (t / "base_0000003").is_dir()
    (item,) = doc["items"]
    assert item["outputs"] == ["base_0000003"] and item["revertible"] is True
    assert item["inputs"] == [
        "delete_delta_0000003_0000003_0000",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000003_0000003_0000",
    ]
    r = cli("-o", "json", "revert", "--execute", t)
    assert r.code == 0, r
    assert _files(t) == before_files and not (t / "base_0000003").exists()
    assert merged(t, SNAP) == before
    assert not list((t / ".acidctl-published").glob("*.json"))
    assert not (t / ".acidctl-published").exists()  # no empty bookkeeping directory left behind
    assert cli("revert", t).code == 3  # nothing left to revert


def test_revert_refused_once_inputs_were_cleaned(tmp_path, cli):
    t = _table(tmp_path)
    assert cli("compact", "--major", "--engine", "local", "--write-ids", SNAP, t).code == 0
    assert cli("clean", "--execute", "--min-age", "0", "--write-ids", SNAP, t).code == 0
    assert not (t / "delta_0000001_0000001_0000").exists()
    r = cli("revert", "--execute", t)
    # report #18: the compaction was published, and revert says why it cannot undo it (an
    # input was cleaned), not that nothing was published (the record stays while its output does)
    assert r.code == 6, r
    assert "has been cleaned: the rows exist only in the output now" in r.stderr, r
    assert "no compaction published" not in r.stderr
    assert (t / "base_0000003").is_dir()
    # the record is acidctl's bookkeeping: not a row of `state`
    doc = json.loads(cli("-o", "json", "state", "--write-ids", SNAP, t).stdout)
    names = [e["name"] for p in doc["partitions"] for e in p["entries"]]
    assert ".acidctl-published" not in names and "base_0000003" in names


def test_revert_refused_when_an_input_changed(tmp_path, cli):
    t = _table(tmp_path)
    assert cli("compact", "--major", "--engine", "local", "--write-ids", SNAP, t).code == 0
    (t / "delta_0000002_0000002_0000" / "bucket_00000").unlink()
    r = cli("revert", "--execute", t)
    assert r.code == 6 and "delta_0000002_0000002_0000 changed" in r.stderr, r
    assert (t / "base_0000003").is_dir()


def test_revert_refused_after_a_later_compaction_consumed_the_output(tmp_path, cli):
    t = _table(tmp_path)
    assert (
        cli("compact", "--minor", "--engine", "local", "--allow-non-atomic-publish", "--write-ids", SNAP, t).code == 0
    )
    acid_file(t / "delta_0000004_0000004_0000" / "bucket_00000", ROW, [(0, 4, B0, 0, 4, (40, "w4"))])
    assert cli("compact", "--major", "--engine", "local", "--write-ids", f"db.t:4:{ALL}::", t).code == 0
    r = cli("revert", "--dir", "delta_0000001_0000003", t)
    assert r.code == 6 and "compacted again" in r.stderr, r
    # the newest one can be reverted, then the older one
    assert cli("revert", "--execute", "--dir", "base_0000004", t).code == 0
    assert cli("revert", "--execute", "--dir", "delta_0000001_0000003", t).code == 0
    assert sorted(p.name for p in t.iterdir() if not p.name.startswith(".")) == [
        "delete_delta_0000003_0000003_0000",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000003_0000003_0000",
        "delta_0000004_0000004_0000",
    ]


def test_a_revert_that_died_after_hiding_the_output_leaves_the_table_as_before(tmp_path, cli):
    t = _table(tmp_path)
    before = merged(t, SNAP)
    assert cli("compact", "--major", "--engine", "local", "--write-ids", SNAP, t).code == 0
    # simulate the crash point between the hide-rename and the delete
    (t / "base_0000003").rename(t / ".acidctl-reverting-base_0000003")
    assert merged(t, SNAP) == before
    st = cli("-o", "json", "state", "--write-ids", SNAP, t)
    assert any(f["check"] == "D07" for f in json.loads(st.stdout)["findings"])
    c = cli("-o", "json", "clean", "--execute", "--min-age", "0", "--write-ids", SNAP, t)
    assert c.code == 0, c
    assert not (t / ".acidctl-reverting-base_0000003").exists()
    assert merged(t, SNAP) == before and (t / "delta_0000001_0000001_0000").is_dir()
