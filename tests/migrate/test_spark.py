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
    r, rep = migrate(root, wl(7), cat)
    assert r.code == 0, r.stderr
    assert iceberg_rows(cat) == rec.table(wl(7))
