"""``migrate --engine spark``: the first load's data files written in Spark tasks (one per
partition × bucket) and committed once from the driver; read back with pyiceberg."""

from __future__ import annotations

import pytest

from tests.compact.conftest import spark  # noqa: F401  (the session-scoped fixture, reused)
from tests.migrate import helpers
from tests.migrate.helpers import iceberg_rows, migrate, snapshot_ids
from tests.migrate.test_migrate_iceberg import _history, wl

pytest.importorskip("pyiceberg")


def test_spark_first_load_then_local_catch_up(spark, tmp_path, monkeypatch):  # noqa: F811
    rec = helpers.Recorder()
    root = tmp_path / "t"
    rec.play(_history(), root, monkeypatch)
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    r, rep = migrate(root, wl(4), cat, "--engine", "spark", "--master", "local[2]")
    assert r.code == 0, r.stderr
    assert rep["engine"] == "spark" and rep["verified"]["rows"] == len(rec.table(wl(4)))
    assert iceberg_rows(cat) == rec.table(wl(4))
    paths = {p for ps in helpers.data_files(cat).values() for p in ps}
    assert paths and all("/acidctl-" in p for p in paths)  # written by the tasks
    assert len(snapshot_ids(cat)) == 1
    # the tasks' files carry row__id metrics: one file per partition x bucket, so the bucket
    # ranges are narrow
    assert helpers.check_row_id_bounds(cat) == len(paths)

    # the catch-up reads only the files whose row__id ranges hold a deleted ROW__ID of their
    # partition (worked out from the planted events and the files' rows read with pyarrow)
    deleted = {
        part: [(e[1], e[2], e[3]) for e in evs if e[0] == 2 and 5 <= e[4] <= 7] for part, evs in rec.events.items()
    }
    before = helpers.data_files(cat)
    expected = helpers.files_holding(before, deleted)
    touched = {p for part, keys in deleted.items() if keys for p in before[part.split("=")[1]]}
    assert expected and expected < touched  # some files of the touched partitions can be skipped
    with helpers.files_read() as read:
        r, rep = migrate(root, wl(7), cat)
    assert r.code == 0, r.stderr
    assert set(read) == expected and len(read) == len(expected)
    assert iceberg_rows(cat) == rec.table(wl(7))
    helpers.check_row_id_bounds(cat)
