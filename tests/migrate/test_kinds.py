"""Insert-only and Hive 2.3 tables migrated to Iceberg and caught up, read back with pyiceberg
against the tests' own layouts and reference models (tests/mm/hivelayout.py,
tests/hive2_histories.py)."""

from __future__ import annotations

import random

import pytest

from tests import hive2_histories as h2
from tests.conftest import run_cli
from tests.migrate import helpers
from tests.mm import hivelayout

pytest.importorskip("pyiceberg")


def _ids(cat, ident):
    return sorted(r["id"] for r in helpers.load(cat, ident).scan().to_arrow().to_pylist())


def _migrate(root, cat, ident, *args):
    return run_cli("-o", "json", "migrate", str(root), *helpers.iceberg_target(cat, ident), *args)


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_insert_only_first_load_catch_up_and_overwrite(tmp_path, fmt):
    import json

    root, final, ids = hivelayout.standard(tmp_path / "mm", fmt)
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    # first sync before writes 3..5: base_1 + write 2
    r = _migrate(root, cat, "ns.mm", "--format", fmt, "--write-ids", "default.t:2:9223372036854775807::")
    assert r.code == 0, r.stderr
    assert _ids(cat, "ns.mm") == [1, 2, 3, 4, 5, 6, 7, 8]
    assert "row__id" not in helpers.load(cat, "ns.mm").schema().column_names
    # write 3 aborted, 4 committed, 5 open: only write 4's files are appended
    r = _migrate(root, cat, "ns.mm", "--format", fmt, "--write-ids", final)
    assert r.code == 0, r.stderr
    rep = json.loads(r.stdout)
    assert [p["how"] for p in rep["partitions"]] == ["rows"]
    assert _ids(cat, "ns.mm") == ids
    # write 5 commits, then INSERT OVERWRITE (write 6): the partition is replaced
    hivelayout.build(root, fmt, {"base_0000006": {"000000_0": [hivelayout.row(600), hivelayout.row(601)]}})
    r = _migrate(root, cat, "ns.mm", "--format", fmt, "--write-ids", "default.t:6:9223372036854775807::3")
    assert r.code == 0, r.stderr
    assert [p["how"] for p in json.loads(r.stdout)["partitions"]] == ["replace"]
    assert _ids(cat, "ns.mm") == [600, 601]
    assert len(helpers.snapshot_ids(cat, "ns.mm")) == 3


@pytest.mark.parametrize("mode", ["legacy", "split-update"])
def test_hive2_first_load_and_catch_up(tmp_path, mode):
    h = h2.random_history(random.Random(7 if mode == "legacy" else 11), mode=mode, txns=8)
    root = h2.write_table(h, tmp_path / "t2")
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()

    def rows():
        out = set()
        for r in helpers.load(cat, "ns.h2").scan().to_arrow().to_pylist():
            k = r["row__id"]
            out.add(((k["writeid"], k["bucketid"], k["rowid"]), r["_col0"], r["_col1"]))
        return out

    def expected(hwm):
        return {(k, v["_col0"], v["_col1"]) for k, v in h.expected(hwm).items()}

    for hwm in (4, 8):
        r = _migrate(root, cat, "ns.h2", "--hive-version", "2", "--txns", h.reader_list(hwm))
        assert r.code == 0, r.stderr
        assert rows() == expected(hwm)
