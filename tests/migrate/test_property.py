"""Random partitioned histories (tests/histories.py) migrated to Iceberg at several snapshots in
turn — writes open at one sync commit before a later one, major compactions + cleans between
syncs — each time the table read back with pyiceberg equals the reference model, and each
catch-up adds at most one snapshot (none when nothing is new)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from acidctl.acid.writeids import WriteIdList
from tests.histories import partitioned_histories
from tests.migrate.helpers import Recorder, iceberg_rows, migrate, snapshot_ids

pytest.importorskip("pyiceberg")

LONG = int(os.environ.get("ACIDCTL_PROPERTY_EXAMPLES", "0"))
EXAMPLES = LONG or 8
#: shrinking only in a long run (a failing example shrinks for minutes: every step migrates)
PHASES = [Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if LONG else [])


@st.composite
def plans(draw):
    h = draw(partitioned_histories)
    n = len(h.txns)
    stages = sorted(set(draw(st.lists(st.integers(1, n), min_size=1, max_size=3)) + [n]))
    final_open = {i + 1 for i, t in enumerate(h.txns) if t.state == "open"}
    aborted = {i + 1 for i, t in enumerate(h.txns) if t.state == "aborted"}
    committed = [i + 1 for i, t in enumerate(h.txns) if t.state == "committed"]
    lists, prev = [], 0
    for k in stages:
        late = draw(st.sets(st.sampled_from([w for w in committed if prev < w <= k] or [0]), max_size=2)) - {0}
        if k == n:
            late = set()  # the last sync sees the history's final states
        lists.append(
            WriteIdList(
                "db.t",
                k,
                tuple(sorted({w for w in final_open if w <= k} | late)),
                tuple(sorted(w for w in aborted if w <= k)),
            )
        )
        prev = k
    compact = draw(st.lists(st.booleans(), min_size=len(lists), max_size=len(lists)))
    return h, lists, compact


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not LONG,
    database=None,
    phases=PHASES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(plan=plans())
def test_random_histories_catch_up(plan, monkeypatch):
    h, lists, compact = plan
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "t"
        root.mkdir()
        rec = Recorder()
        rec.play(h, root, monkeypatch)
        if not any(f.is_file() and f.name.startswith(("bucket_", "0")) for f in root.rglob("*")):
            # no data file at all: a path has no columns to migrate (a one-line usage error)
            r, _ = migrate(root, lists[0], Path(tmp) / "c.db")
            assert r.code == 2 and "no columns" in r.stderr
            return
        cat = Path(tmp) / "cat" / "c.db"
        cat.parent.mkdir()
        partitioned = h.partitions > 1
        snaps = 0
        for i, wl in enumerate(lists):
            if i and compact[i]:  # compacted and cleaned since the last sync
                n = min(wl.min_open - 1, wl.hwm)
                if n > 0:
                    for part in rec.partitions() or {None}:
                        rec.compact(root, part, wl, n)
            r, rep = migrate(root, wl, cat)
            assert r.code == 0, r.stderr
            got = iceberg_rows(cat, partition="p" if partitioned else None)
            want = rec.table(wl)
            assert got == want, (i, str(wl))
            now = len(snapshot_ids(cat))
            assert now - snaps == (0 if rep["up_to_date"] else 1)
            snaps = now
