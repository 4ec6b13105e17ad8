"""``acidctl migrate DB.TABLE``: the table and its snapshot from the metastore (the demo's SQLite
metastore), partition columns and decimals typed per the metastore, insert-only tables; a write
open at the first run commits in the metastore and the next run picks it up."""

from __future__ import annotations

import decimal
import json
import os

import pytest

from tests.cli.conftest import demo  # noqa: F401  (the demo warehouse with its metastore)
from tests.migrate import helpers

pytest.importorskip("pyiceberg")


def _migrate(cli, table, cat, ident):
    return cli("-o", "json", "migrate", table, *helpers.iceberg_target(cat, ident))


def test_metastore_table_first_load_and_late_commit(cli, demo, tmp_path):  # noqa: F811
    from acidctl.metastore.recorder import Recorder

    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    r = _migrate(cli, "default.sales", cat, "ns.sales")
    assert r.code == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["source"] == "default.sales" and rep["mode"] == "initial"
    t = helpers.load(cat, "ns.sales")
    types = {f.name: str(f.field_type) for f in t.schema().fields}
    assert types == {
        "row__id": types["row__id"],
        "id": "int",
        "item": "string",
        "amount": "decimal(10, 2)",
        "ds": "string",
    }
    rows = t.scan().to_arrow().to_pylist()
    ids = {(r["ds"], r["id"]) for r in rows}
    # the demo's docstring: ds=2025-12-31 originals 1..5 less 3, writes 6 and 7; ds=2026-01-01
    # 10..19 less 11 and 12 (10 updated), 21; the aborted 100/101 and the open 200 are not read
    assert ids == {("2025-12-31", i) for i in (1, 2, 4, 5, 6, 7)} | {
        ("2026-01-01", i) for i in (10, 13, 14, 15, 16, 17, 18, 19, 21)
    }
    assert all(isinstance(r["amount"], (decimal.Decimal, type(None))) for r in rows)
    summary = t.current_snapshot().summary.additional_properties
    assert summary["acidctl.source-table"] == "default.sales"
    assert summary["acidctl.source-write-ids"].startswith("default.sales:7:7:7:")

    # txn 10 (write 7, id 200 in ds=2026-01-01) commits: the next run adds it in one snapshot
    Recorder(os.environ["ACIDCTL_METASTORE_URL"]).commit_txn(10)
    r = _migrate(cli, "default.sales", cat, "ns.sales")
    assert r.code == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["new_write_ids"] == "7" and [p["partition"] for p in rep["partitions"]] == ["ds=2026-01-01"]
    t = helpers.load(cat, "ns.sales")
    assert (("2026-01-01", 200)) in {(r["ds"], r["id"]) for r in t.scan().to_arrow().to_pylist()}
    assert len(t.snapshots()) == 2

    # the insert-only table: ids 1..5 (write 3 aborted), no row__id
    r = _migrate(cli, "default.events", cat, "ns.events")
    assert r.code == 0, r.stderr
    ev = helpers.load(cat, "ns.events")
    assert "row__id" not in ev.schema().column_names
    assert sorted(r["id"] for r in ev.scan().to_arrow().to_pylist()) == [1, 2, 3, 4, 5]
    # another table into ns.sales: refused, untouched
    r = _migrate(cli, "default.employee", cat, "ns.sales")
    assert r.code == 6 and "default.sales" in r.stderr
