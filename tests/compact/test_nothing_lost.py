"""Issue #9: a compaction never makes unread data obsolete, every row is accounted for, an
assumed snapshot never drives a write, and ``clean --execute`` re-verifies before deleting.

The inputs are written by pyorc (ORC C++), not by acidctl's writer; expectations come from the
rules (Hive's reader reads ``bucket_N`` files only, Impala every non-hidden file; write ids above
the compactor's high watermark are neither committed nor aborted)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from tests.acidfiles import B0, acid_file
from tests.compact.helpers import ALL, merged

ROW = (
    "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
    "row:struct<id:int,name:string>>"
)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _delta(root: Path, lo: int, hi: int, name: str = "bucket_00000", n: int = 3, start: int = 0) -> Path:
    return acid_file(
        root / f"delta_{lo:07d}_{hi:07d}" / name,
        ROW,
        [
            (0, w, B0, start + i, w, (start + i, f"r{start + i}"))
            for i, w in enumerate([lo + (i % (hi - lo + 1)) for i in range(n)])
        ],
    )


def _impala_streaming_table(tmp_path: Path) -> Path:
    """Impala's test layout: a Hive Streaming file kept under its own name in a delta (4 rows),
    next to an ordinary delta."""
    t = tmp_path / "t"
    acid_file(
        t / "delta_0000001_0000002" / "streaming.orc",
        ROW,
        [
            (0, 1, B0, 0, 1, (1, "a")),
            (0, 1, B0, 1, 1, (2, "b")),
            (0, 2, B0, 0, 2, (3, "c")),
            (0, 2, B0, 1, 2, (4, "d")),
        ],
    )
    _delta(t, 3, 3)
    return t


def test_unread_streaming_file_refuses_major_and_writes_nothing(tmp_path, cli):
    t = _impala_streaming_table(tmp_path)
    before = _tree(t)
    r = cli("-o", "json", "compact", "--major", "--engine", "local", "--write-ids", f"db.t:3:{ALL}::", t)
    assert r.code == 6, r
    err = json.loads(r.stderr)["error"]
    assert "delta_0000001_0000002/streaming.orc" in err["message"]
    assert "rename" in err["hint"] and "--skip-unreadable-files" in err["hint"]
    assert _tree(t) == before and not list(t.glob(".acidctl*"))


def test_unread_streaming_file_refuses_minor(tmp_path, cli):
    t = _impala_streaming_table(tmp_path)
    before = _tree(t)
    r = cli("compact", "--minor", "--engine", "local", "--write-ids", f"db.t:3:{ALL}::", t)
    assert r.code == 6 and "streaming.orc" in r.stderr, r
    assert _tree(t) == before


def test_skip_unreadable_files_lists_them_and_clean_keeps_their_directory(tmp_path, cli):
    t = _impala_streaming_table(tmp_path)
    r = cli(
        "-o",
        "json",
        "compact",
        "--major",
        "--engine",
        "local",
        "--skip-unreadable-files",
        "--write-ids",
        f"db.t:3:{ALL}::",
        t,
    )
    assert r.code == 0, r
    doc = json.loads(r.stdout)
    p = doc["partitions"][0]
    assert [s["path"] for s in p["skipped_files"]] == ["delta_0000001_0000002/streaming.orc"]
    assert (t / "base_0000003").is_dir()
    c = cli("-o", "json", "clean", "--execute", "--min-age", "0", "--write-ids", f"db.t:3:{ALL}::", t)
    assert c.code == 0, c
    cdoc = json.loads(c.stdout)
    # the delta with the unread file stays; the ordinary delta the base read is removed
    assert (t / "delta_0000001_0000002" / "streaming.orc").is_file()
    assert not (t / "delta_0000003_0000003").exists()
    kept = [i for i in cdoc["items"] if i["path"].endswith("delta_0000001_0000002")]
    assert kept and kept[0]["action"].startswith("keep") and "streaming.orc" in kept[0]["reason"]


def test_nested_file_in_a_delta_is_not_made_obsolete_unread(tmp_path, cli):
    t = tmp_path / "t"
    _delta(t, 1, 1)
    _delta(t, 2, 2)
    os.makedirs(t / "delta_0000002_0000002" / "HIVE_UNION_SUBDIR_1")
    shutil.copy(
        t / "delta_0000002_0000002" / "bucket_00000",
        t / "delta_0000002_0000002" / "HIVE_UNION_SUBDIR_1" / "bucket_00000",
    )
    r = cli("compact", "--major", "--engine", "local", "--write-ids", f"db.t:2:{ALL}::", t)
    assert r.code == 6 and "HIVE_UNION_SUBDIR_1/bucket_00000" in r.stderr, r
    assert not list(t.glob("base_*"))


def test_empty_and_hidden_files_do_not_block(tmp_path, cli):
    t = tmp_path / "t"
    _delta(t, 1, 1)
    _delta(t, 2, 2)
    (t / "delta_0000002_0000002" / "empty.orc").write_bytes(b"")
    (t / "delta_0000002_0000002" / "_tmp_leftover").write_bytes(b"xx")
    (t / "delta_0000002_0000002" / ".crc").write_bytes(b"xx")
    r = cli("compact", "--major", "--engine", "local", "--write-ids", f"db.t:2:{ALL}::", t)
    assert r.code == 0, r
    assert (t / "base_0000002").is_dir()


def test_acid_file_at_the_root_above_the_watermark_is_refused_not_dropped(tmp_path, cli):
    """Write ids 1..3 with a high watermark of 0 are not aborted: refuse, name no negative base."""
    t = tmp_path / "t"
    acid_file(t / "bucket_00000", ROW, [(0, w, B0, 0, w, (w, f"r{w}")) for w in (1, 2, 3)])
    before = _tree(t)
    r = cli("compact", "--major", "--engine", "local", "--write-ids", f"db.t:0:{ALL}::", t)
    assert r.code == 6, r
    assert "above the compactor's high-water mark" in r.stderr and "ABORTED" not in r.stderr
    assert _tree(t) == before
    assert not list(t.glob("base_*")) and not list(t.glob(".acidctl*"))
    c = cli("-o", "json", "clean", "--execute", "--min-age", "0", "--write-ids", f"db.t:0:{ALL}::", t)
    assert c.code == 0 and (t / "bucket_00000").is_file()
    # state says the same: an ACID file in an original position, read with its own write ids
    st = cli("-o", "json", "state", "--deep", "--write-ids", f"db.t:0:{ALL}::", t)
    assert [f["severity"] for f in json.loads(st.stdout)["findings"] if f["check"] == "F16"] == ["warn"], st


def test_nothing_to_compact_names_the_open_write_id(tmp_path, cli):
    t = tmp_path / "t"
    _delta(t, 1, 2)
    r = cli("-o", "json", "compact", "--major", "--engine", "local", "--write-ids", "db.t:2:2:2:", t)
    assert r.code == 0, r
    msg = json.loads(r.stdout)["partitions"][0]["message"]
    assert "delta_0000001_0000002 spans write id 2" in msg and "high-water mark 1" in msg
    assert not list(t.glob("base_*"))


def test_assumed_snapshot_never_drives_a_write(tmp_path, cli):
    t = tmp_path / "t"
    _delta(t, 1, 1)
    _delta(t, 2, 2)
    _delta(t, 3, 3)  # say 2 is aborted and 3 is open: --assume-committed cannot know
    before = _tree(t)
    r = cli("compact", "--major", "--engine", "local", "--assume-committed", t)
    assert r.code == 2 and "assumed snapshot" in r.stderr, r
    assert _tree(t) == before
    c = cli("clean", "--execute", "--assume-committed", t)
    assert c.code == 2 and "assumed snapshot" in c.stderr, c
    assert cli("clean", "--assume-committed", t).code == 0  # the dry run only reads
    q = cli("-o", "json", "compact", "--major", "--engine", "local", "--assume-committed", "--table-is-quiescent", t)
    assert q.code == 0, q
    doc = json.loads(q.stdout)
    assert doc["assumed_quiescent"] is True and doc["snapshot_source"] == "--assume-committed"
    assert any("--table-is-quiescent" in n for n in doc["notes"])
    assert (
        cli("compact", "--major", "--engine", "local", "--table-is-quiescent", "--write-ids", f"db.t:3:{ALL}::", t).code
        == 2
    )


def test_clean_keeps_directories_whose_covering_output_is_unreadable(tmp_path, cli):
    """A base someone else wrote covers the deltas; its bucket file is truncated: nothing the base
    covers is deleted."""
    t = tmp_path / "t"
    _delta(t, 1, 1)
    _delta(t, 2, 2, start=10)
    snap = f"db.t:2:{ALL}::"
    want = merged(t, snap)
    assert cli("compact", "--major", "--engine", "local", "--write-ids", snap, t).code == 0
    b = t / "base_0000002" / "bucket_00000"
    b.write_bytes(b.read_bytes()[:-20])
    c = cli("-o", "json", "clean", "--execute", "--min-age", "0", "--write-ids", snap, t)
    assert c.code == 0, c
    assert (t / "delta_0000001_0000001" / "bucket_00000").is_file()
    assert (t / "delta_0000002_0000002" / "bucket_00000").is_file()
    doc = json.loads(c.stdout)
    assert all("re-verification failed" in i["action"] for i in doc["items"] if i["kind"] == "delta"), doc
    # once the base is gone again, the deltas still hold every row
    shutil.rmtree(t / "base_0000002")
    assert merged(t, snap) == want
