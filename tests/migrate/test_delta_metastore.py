"""``acidctl migrate DB.TABLE --to delta``: the table and its snapshot from the demo's SQLite
metastore, read back with deltalake: partition columns and decimals typed per the metastore,
the insert-only table, a write open at the first run committed in the metastore and picked up
by the next run in one Delta commit."""

from __future__ import annotations

import decimal
import json
import os

import pytest

from tests.cli.conftest import demo  # noqa: F401  (the demo warehouse with its metastore)

pytest.importorskip("deltalake")
from deltalake import DeltaTable  # noqa: E402


def _migrate(cli, table, target):
    return cli("-o", "json", "migrate", table, "--to", "delta", "--target", str(target))


def test_metastore_table_first_load_and_late_commit(cli, demo, tmp_path):  # noqa: F811
    from acidctl.metastore.recorder import Recorder

    target = tmp_path / "sales"
    r = _migrate(cli, "default.sales", target)
    assert r.code == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["source"] == "default.sales" and rep["mode"] == "initial"
    dt = DeltaTable(str(target))
    types = {f["name"]: f["type"] for f in json.loads(dt.schema().to_json())["fields"]}
    assert {k: v for k, v in types.items() if k != "row__id"} == {
        "id": "integer",
        "item": "string",
        "amount": "decimal(10,2)",
        "ds": "string",
    }
    assert dt.metadata().partition_columns == ["ds"]
    rows = dt.to_pyarrow_table().to_pylist()
    # the demo's docstring: ds=2025-12-31 originals 1..5 less 3, writes 6 and 7; ds=2026-01-01
    # 10..19 less 11 and 12 (10 updated), 21; the aborted 100/101 and the open 200 are not read
    assert {(x["ds"], x["id"]) for x in rows} == {("2025-12-31", i) for i in (1, 2, 4, 5, 6, 7)} | {
        ("2026-01-01", i) for i in (10, 13, 14, 15, 16, 17, 18, 19, 21)
    }
    assert all(isinstance(x["amount"], (decimal.Decimal, type(None))) for x in rows)
    h = dt.history(1)[0]
    assert h["acidctl.source-table"] == "default.sales"
    assert h["acidctl.source-write-ids"].startswith("default.sales:7:7:7:")

    # txn 10 (write 7, id 200 in ds=2026-01-01) commits: the next run adds it in one commit
    Recorder(os.environ["ACIDCTL_METASTORE_URL"]).commit_txn(10)
    r = _migrate(cli, "default.sales", target)
    assert r.code == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["new_write_ids"] == "7" and [p["partition"] for p in rep["partitions"]] == ["ds=2026-01-01"]
    dt = DeltaTable(str(target))
    assert ("2026-01-01", 200) in {(x["ds"], x["id"]) for x in dt.to_pyarrow_table().to_pylist()}
    assert dt.version() == 1

    # the insert-only table: ids 1..5 (write 3 aborted), no row__id
    r = _migrate(cli, "default.events", tmp_path / "events")
    assert r.code == 0, r.stderr
    ev = DeltaTable(str(tmp_path / "events")).to_pyarrow_table()
    assert "row__id" not in ev.column_names
    assert sorted(ev.column("id").to_pylist()) == [1, 2, 3, 4, 5]
    # another table into the sales target: refused, untouched
    r = _migrate(cli, "default.employee", target)
    assert r.code == 6 and "default.sales" in r.stderr
    assert DeltaTable(str(target)).version() == 1
