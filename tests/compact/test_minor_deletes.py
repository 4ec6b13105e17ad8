"""Minor compaction keeps delete events, drops aborted ones, and places each delete event in the
``bucket_N`` file of its target row's bucket (orc-acid-files.md §12.1, §14 #3)."""

from __future__ import annotations

from pathlib import Path

import pyorc
import pytest

from acidctl.orc import bucketcodec
from tests.compact.helpers import compact, merged, state_errors
from tests.histories import History, Statement, Txn

pytestmark = pytest.mark.spark


def _events(path: Path) -> list[tuple]:
    with open(path, "rb") as f:
        return [tuple(r[:5]) for r in pyorc.Reader(f)]


def _history() -> History:
    return History(
        buckets=3,
        originals=[100, 101, 102, 103, 104],
        txns=[
            Txn("committed", [Statement("insert", list(range(12)), [])]),
            Txn("committed", [Statement("delete", [], [0, 4, 7, 9])]),
            Txn("aborted", [Statement("delete", [], [1, 2, 3])]),
            Txn("committed", [Statement("update", [50, 51, 52], [3, 5]), Statement("delete", [], [2])]),
            Txn("committed", [Statement("insert", [60, 61], [])]),
        ],
    )


def test_delete_events_land_in_their_target_bucket(tmp_path, spark):
    root = tmp_path / "t"
    root.mkdir()
    h = _history()
    expected = h.play(root)
    snap = str(h.snapshot())
    # every valid delete event before compaction, from the files themselves
    want = set()
    for f in root.glob("delete_delta_*/bucket_*"):
        w = int(f.parent.name.split("_")[2])
        if w != 3:  # write 3 aborted
            want |= set(_events(f))
    assert want
    compact(root, "minor", snap, spark=spark)
    out = root / "delete_delta_0000001_0000005"
    assert out.is_dir() and (root / "delta_0000001_0000005").is_dir()
    got = set()
    for f in sorted(out.glob("bucket_*")):
        n = int(f.name.split("_")[1])
        evs = _events(f)
        assert evs == sorted(evs, key=lambda e: (e[1], e[2], e[3]))
        for op, ot, bk, rid, ct in evs:
            assert op == 2 and bucketcodec.decode(bk).bucket_id == n
            assert ct in (2, 4)  # deleting write ids kept (currentTransaction preserved)
        got |= set(evs)
    assert got == want
    # no aborted insert events either: write 3 only deleted, and its deletes are gone
    assert merged(root, snap) == {(None, *k): v for k, v in expected.items()}
    assert state_errors(root, snap) == []
