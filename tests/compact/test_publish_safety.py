"""Publication is atomic or refused: a compaction whose output a reader could see half published
(Hive 3 minor with both delta and delete_delta = two renames; an object store whose rename
copies) is refused with exit 6 before anything is written, unless --allow-non-atomic-publish.
An interrupted non-atomic publication is finished by the next compact / clean --execute."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from acidctl import faults
from acidctl.acid.writeids import WriteIdList
from acidctl.compact import publish as pub
from acidctl.compact.runner import CompactOptions, compact_table
from acidctl.errors import RefusedError
from acidctl.fs import TableFS
from tests.acidfiles import B0, events, good_metadata, write_raw
from tests.compact.helpers import ALL, demo_warehouse, merged, nation_table, state_errors


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_hive3_minor_with_deletes_is_refused_by_default(tmp_path, cli):
    wh, wids = demo_warehouse(tmp_path)
    root, wl = wh / "employee", wids["employee"]
    before_tree, before = _tree(root), merged(root, wl)
    r = cli("compact", "--minor", "--engine", "local", "--write-ids", wl, root)
    assert r.code == 6, r
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert "cannot be published atomically" in lines[0] and "2 renames" in lines[0]
    assert "--allow-non-atomic-publish" in r.stderr and "Traceback" not in r.stderr
    assert _tree(root) == before_tree  # nothing written: no staging, no lock, no output
    assert merged(root, wl) == before
    # JSON mode: the error as a JSON object, same exit code
    r = cli("-o", "json", "compact", "--minor", "--engine", "local", "--write-ids", wl, root)
    assert r.code == 6 and json.loads(r.stderr.strip().splitlines()[-1])["error"]["type"] == "RefusedError"


def test_allowed_non_atomic_publish_reports_it(tmp_path, cli):
    wh, wids = demo_warehouse(tmp_path)
    root, wl = wh / "employee", wids["employee"]
    before = merged(root, wl)
    r = cli(
        "-o", "json", "compact", "--minor", "--allow-non-atomic-publish", "--engine", "local", "--write-ids", wl, root
    )
    assert r.code == 0, r
    doc = json.loads(r.stdout)
    p = doc["partitions"][0]
    assert p["publish"] == "non-atomic"
    assert sorted(p["output_dirs"]) == ["delete_delta_0000001_0000003", "delta_0000001_0000003"]
    assert any(n.startswith("non-atomic publication") for n in doc["notes"])
    assert merged(root, wl) == before
    assert state_errors(root, wl) == []


def test_single_output_publications_are_atomic(tmp_path, cli):
    # major: one base directory
    t = nation_table(tmp_path / "a")
    r = cli("-o", "json", "compact", "--major", "--engine", "local", "--write-ids", f"db.t:4:{ALL}::", t)
    assert r.code == 0, r
    assert json.loads(r.stdout)["partitions"][0]["publish"] == "atomic"
    # minor over insert deltas only: one delta directory
    t = tmp_path / "b" / "t"
    for w in (1, 2, 3):
        ev = events([(w, B0, i) for i in range(4)])
        write_raw(t / f"delta_{w:07d}_{w:07d}_0000" / "bucket_00000", ev, good_metadata(ev))
    wl = f"db.t:3:{ALL}::"
    before = merged(t, wl)
    r = cli("-o", "json", "compact", "--minor", "--engine", "local", "--write-ids", wl, t)
    assert r.code == 0, r
    p = json.loads(r.stdout)["partitions"][0]
    assert p["publish"] == "atomic" and p["output_dirs"] == ["delta_0000001_0000003"]
    assert merged(t, wl) == before


def test_refusal_covers_every_selected_partition_before_any_work(tmp_path):
    wh, wids = demo_warehouse(tmp_path)
    root, wl = wh / "sales", wids["sales"]
    before_tree = _tree(root)
    opts = CompactOptions(mode="minor", reader=WriteIdList.parse(wl), engine="local")
    with pytest.raises(RefusedError, match=r"and 1 more partition"):
        compact_table(TableFS(str(root)), opts)
    assert _tree(root) == before_tree


def _memory_nation(tmp_path) -> TableFS:
    src = nation_table(tmp_path)
    tfs = TableFS(f"memory://acidctl-{uuid.uuid4().hex[:8]}/nation")
    for f in src.rglob("*"):
        if f.is_file():
            tfs.write_bytes(tfs.join(tfs.root, str(f.relative_to(src))), f.read_bytes())
    return tfs


def _memory_merged(tfs, wl) -> list:
    from acidctl.acid.acidstate import get_acid_state
    from acidctl.acid.layout import list_table
    from acidctl.acid.read import read_partition

    rows = []
    for lst in list_table(tfs):
        st = get_acid_state(lst, wl, hive_version=3).require_snapshot()
        for _, tab in read_partition(tfs, lst, st):
            rows += list(
                zip(
                    tab.column("originalTransaction").to_pylist(),
                    tab.column("rowId").to_pylist(),
                    tab.column("row").to_pylist(),
                )
            )
    return sorted(rows, key=lambda r: (r[0], r[1]))


def test_interrupted_copy_publication_is_finished_by_recover(tmp_path):
    """On a store whose rename copies (memory:// stands in for S3), a crash in the middle of
    copying base_N leaves a partial base_N and the full staged copy; ``recover`` (run by the
    next compact and by clean --execute) copies again and removes the staging directory."""
    tfs = _memory_nation(tmp_path)
    wl = WriteIdList.parse(f"db.t:4:{ALL}::")
    before = _memory_merged(tfs, wl)
    saved = {}

    def keep_staging(plans):  # copy of the verified staging area, to rebuild the crash state
        st = plans[0].staging
        for e in tfs.fs.find(st):
            saved[e] = tfs.fs.cat_file(e)

    with faults.hooks({"before-publish": keep_staging}):
        rep = compact_table(tfs, CompactOptions(mode="major", reader=wl, engine="local", allow_non_atomic_publish=True))
    base = tfs.join(tfs.root, rep["partitions"][0]["output_dirs"][0])
    # the state a crash during the copy leaves: manifest says publishing, target half copied
    for path, data in saved.items():
        tfs.write_bytes(path, data)
    staging = next(p for p in saved if p.endswith(pub.MANIFEST)).rsplit("/", 1)[0]
    m = json.loads(tfs.read_bytes(tfs.join(staging, pub.MANIFEST)))
    m["state"] = "publishing"
    tfs.write_bytes(tfs.join(staging, pub.MANIFEST), json.dumps(m).encode())
    tfs.rm(tfs.join(base, "bucket_00000"))
    assert sorted(e.name for e in tfs.ls(base)) == ["_metadata_acid", "_orc_acid_version"]

    it = pub.interrupted(tfs, tfs.root)
    assert len(it) == 1 and it[0]["partial"]
    actions = pub.recover(tfs, tfs.root)
    assert [a["action"] for a in actions] == ["complete publish"]
    assert sorted(e.name for e in tfs.ls(base)) == ["_metadata_acid", "_orc_acid_version", "bucket_00000"]
    assert not [e for e in tfs.ls(tfs.root) if e.name.startswith(".acidctl") and e.name != ".acidctl-published"]
    assert _memory_merged(tfs, wl) == before
