"""Random partitioned histories (tests/histories.py) migrated to Delta at several snapshots in
turn (the plans of tests/migrate/test_property.py: writes open at one sync committed before a
later one, major compactions + cleans between syncs): each time the table read back with
deltalake equals the reference model, and each run adds exactly one Delta version (none when
nothing is new)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.migrate.helpers import Recorder
from tests.migrate.test_migrate_delta import delta_rows, migrate
from tests.migrate.test_property import EXAMPLES, LONG, PHASES, plans

pytest.importorskip("deltalake")
from deltalake import DeltaTable  # noqa: E402


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not LONG,
    database=None,
    phases=PHASES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(plan=plans())
def test_random_histories_catch_up_in_delta(plan, monkeypatch):
    h, lists, compact = plan
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "t"
        root.mkdir()
        rec = Recorder()
        rec.play(h, root, monkeypatch)
        if not any(f.is_file() and f.name.startswith(("bucket_", "0")) for f in root.rglob("*")):
            return  # no data file: nothing has columns (test_property covers the refusal)
        target = Path(tmp) / "delta"
        partitioned = h.partitions > 1
        versions = 0
        for i, wl in enumerate(lists):
            if i and compact[i]:  # compacted and cleaned since the last sync
                n = min(wl.min_open - 1, wl.hwm)
                if n > 0:
                    for part in rec.partitions() or {None}:
                        rec.compact(root, part, wl, n)
            # (compacted down to an empty base, a path table's columns come from the target's
            # table_schema())
            r, rep = migrate(root, wl, target)
            assert r.code == 0, r.stderr
            assert delta_rows(target, partition="p" if partitioned else None) == rec.table(wl), (i, str(wl))
            dt = DeltaTable(str(target))
            now = dt.version() + 1
            assert now - versions == (0 if rep["up_to_date"] else 1)
            assert dt.history(1)[0]["acidctl.source-write-ids"] == str(wl) or rep["up_to_date"]
            versions = now
