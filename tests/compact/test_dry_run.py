"""``compact --dry-run``: the full plan, nothing written (files, lock, staging, metastore)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.acidfiles import B0, acid_file
from tests.compact.helpers import ALL

ROW = (
    "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
    "row:struct<id:int,name:string>>"
)


def _snapshot(root: Path) -> dict[str, str]:
    """Every path under root (files and directories, hidden ones included) with its content hash."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(root.rglob("*"))
    }


def test_dry_run_on_the_demo_writes_nothing_not_even_to_the_metastore(tmp_path, cli):
    assert cli("demo", tmp_path).code == 0
    ms = f"sqlite:///{tmp_path}/metastore.db"
    before = _snapshot(tmp_path)
    r = cli("-o", "json", "--metastore", ms, "compact", "--dry-run", "--major", "default.sales")
    assert r.code == 0, r
    assert _snapshot(tmp_path) == before  # warehouse files and metastore.db byte for byte
    doc = json.loads(r.stdout)
    assert doc["dry_run"] is True and doc["refused"] is False
    parts = {p["partition"]: p for p in doc["partitions"]}
    # the demo's 2026-01-01 partition: deltas 3..6 (5 has two statements), deletes in 5 and 6
    p = parts["ds=2026-01-01"]
    assert p["outputs"] == ["base_0000006"] and p["publish"] == "atomic"
    assert set(p["obsoletes"]) == set(p["inputs"])
    assert sorted(t["bucket"] for t in p["tasks"]) == [0, 1]
    assert all(f.endswith(("bucket_00000", "bucket_00001")) for t in p["tasks"] for f in t["inserts"] + t["deletes"])
    assert doc["summary"]["would_compact"] == 2 and doc["summary"]["bytes_in"] > 0
    # a real run afterwards produces exactly the planned names
    real = cli("-o", "json", "--metastore", ms, "compact", "--major", "--engine", "local", "default.sales")
    assert real.code == 0, real
    assert {q["partition"]: q["output_dirs"] for q in json.loads(real.stdout)["partitions"]} == {
        q["partition"]: q["outputs"] for q in doc["partitions"]
    }


def test_dry_run_shows_refusals_and_exits_6(tmp_path, cli):
    t = tmp_path / "t"
    acid_file(t / "delta_0000001_0000001" / "bucket_00000", ROW, [(0, 1, B0, 0, 1, (1, "a"))])
    acid_file(t / "delta_0000002_0000002" / "stray.orc", ROW, [(0, 2, B0, 0, 2, (2, "b"))])
    before = _snapshot(tmp_path)
    r = cli("-o", "json", "compact", "--dry-run", "--major", "--write-ids", f"db.t:2:{ALL}::", t)
    assert r.code == 6, r
    assert _snapshot(tmp_path) == before
    doc = json.loads(r.stdout)
    assert doc["refused"] is True
    (p,) = doc["partitions"]
    assert p["status"] == "refused" and [x["path"] for x in p["refusals"]] == ["delta_0000002_0000002/stray.orc"]
    assert "stray.orc" in json.loads(r.stderr)["error"]["message"]
    text = cli("compact", "--dry-run", "--major", "--write-ids", f"db.t:2:{ALL}::", t)
    assert text.code == 6 and "REFUSED delta_0000002_0000002/stray.orc" in text.stdout


def test_dry_run_hive4_names_the_output_without_a_txn(tmp_path, cli):
    t = tmp_path / "t"
    for w in (1, 2):
        acid_file(t / f"delta_{w:07d}_{w:07d}_0000" / "bucket_00000", ROW, [(0, w, B0, 0, w, (w, "x"))])
    r = cli(
        "-o",
        "json",
        "compact",
        "--dry-run",
        "--minor",
        "--hive-version",
        "4",
        "--txns",
        "5:9223372036854775807::",
        "--write-ids",
        f"db.t:2:{ALL}::",
        t,
    )
    assert r.code == 0, r
    assert json.loads(r.stdout)["partitions"][0]["outputs"] == ["delta_0000001_0000002_v<compaction txn>"]
    assert not list(t.glob(".acidctl*")) and not list(tmp_path.rglob(".acidctl*"))
