"""resolve_table / TableInfo, read-only transactions."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from acidctl.errors import NotFoundError, TableNotFound, UsageError
from acidctl.metastore.connection import connect
from acidctl.metastore.tables import normalize_partition, resolve_table, resolve_with_snapshot, split_spec


def _table(rec):
    rec.create_table(
        "Sales",
        "Orders",
        location="hdfs://nn:8020/warehouse/sales.db/orders",
        columns=[("id", "bigint"), ("Amount", "decimal(10,2)"), ("note", "string")],
        partition_keys=[("ds", "string"), ("hr", "int")],
        buckets=4,
        params={
            "compactorthreshold.hive.compactor.delta.num.threshold": "4",
            "NO_AUTO_COMPACTION": "TRUE",
            "numFiles": "7",
        },
    )
    rec.add_partition("sales", "orders", "ds=2024-01-01/hr=1")
    rec.add_partition("sales", "orders", "ds=2024-01-01/hr=2", location="s3a://b/elsewhere")
    rec.create_table("default", "plain", location="file:/tmp/wh/plain", transactional=False)
    rec.create_table("default", "mm", location="file:/tmp/wh/mm", insert_only=True)


def test_resolve_table(metastore):
    url, rec = metastore
    _table(rec)
    info = resolve_table(url, "SALES.orders")
    assert info.full_name == "sales.orders"
    assert info.location == "hdfs://nn:8020/warehouse/sales.db/orders" == info.path
    assert info.transactional and info.full_acid and not info.insert_only
    assert info.transactional_properties is None
    assert info.no_auto_compaction
    assert info.compactor_thresholds == {"compactorthreshold.hive.compactor.delta.num.threshold": "4"}
    assert info.partition_keys == [("ds", "string"), ("hr", "int")]
    assert info.columns == [("id", "bigint"), ("amount", "decimal(10,2)"), ("note", "string")]
    assert info.bucket_count == 4
    assert info.params["numFiles"] == "7"
    assert info.table_type == "MANAGED_TABLE"
    p = resolve_table(rec.ms, "sales.orders/ds=2024-01-01/hr=1")
    assert p.partition == "ds=2024-01-01/hr=1"
    assert p.path == "hdfs://nn:8020/warehouse/sales.db/orders/ds=2024-01-01/hr=1"
    p2 = resolve_table(rec.engine, "sales.orders", partition="ds='2024-01-01', hr=2", list_partitions=True)
    assert p2.path == "s3a://b/elsewhere"
    assert p2.partitions == ["ds=2024-01-01/hr=1", "ds=2024-01-01/hr=2"]
    d = p2.to_dict()
    assert d["no_auto_compaction"] is True and d["partition_keys"][0] == {"name": "ds", "type": "string"}
    mm = resolve_table(url, "mm")  # no db -> default
    assert mm.transactional and mm.insert_only and not mm.full_acid
    plain = resolve_table(url, "default.plain")
    assert not plain.transactional and not plain.partitioned
    with pytest.raises(TableNotFound, match="table sales.nope"):
        resolve_table(url, "sales.nope")
    with pytest.raises(TableNotFound, match="database nodb"):
        resolve_table(url, "nodb.orders")
    with pytest.raises(NotFoundError, match="partition"):
        resolve_table(url, "sales.orders/ds=1999-01-01/hr=1")
    with pytest.raises(UsageError):
        resolve_table(url, "default.plain/ds=1")


def test_read_only_transactions(metastore):
    """Every read runs in a transaction the database itself makes read-only."""
    url, rec = metastore
    ms = connect(url)
    t = ms.tables.NEXT_LOCK_ID
    with pytest.raises(Exception) as ei:
        with ms.read() as conn:
            conn.execute(sa.update(t.clause).values({t.NL_NEXT.name: 99}))
    assert "read" in str(ei.value).lower()  # "read-only transaction" / "readonly database"
    with ms.read() as conn:
        assert conn.execute(sa.select(t.NL_NEXT)).scalar() == 1
    # a caller's own engine is left writable afterwards
    rec.lock([__import__("acidctl.metastore.recorder", fromlist=["LockComponent"]).LockComponent("db", "t")], now_ms=1)


def test_partition_spec_parsing():
    assert normalize_partition("ds=2024-01-01/hr=1") == "ds=2024-01-01/hr=1"
    assert normalize_partition("DS='a b',HR=2") == "ds=a b/hr=2"
    assert normalize_partition("PARTITION (ds='x:y')") == "ds=x%3Ay"
    assert normalize_partition("ds=x%3Ay") == "ds=x%3Ay"
    assert split_spec("Db.Tbl/ds=1") == ("db", "tbl", "ds=1")
    assert split_spec("tbl") == ("default", "tbl", None)
    with pytest.raises(UsageError):
        normalize_partition("ds")


def test_resolve_with_snapshot(metastore):
    url, rec = metastore
    _table(rec)
    t = rec.open_txn(now_ms=1_600_000_000_000)
    rec.add_write(t, "sales", "orders", partition="ds=2024-01-01/hr=1")
    info, txns, wl = resolve_with_snapshot(url, "Sales.Orders/ds=2024-01-01/hr=1")
    assert info.path.endswith("/ds=2024-01-01/hr=1")
    # one open txn (id 1) that holds write id 1 of sales.orders
    assert str(txns) == "1:1:1:" and str(wl) == "sales.orders:1:1:1:"


def test_table_at_a_location(metastore):
    """A path → the table whose SDS.LOCATION it is (the spellings Hive records), a partition
    directory below it → that partition; other paths → None."""
    from acidctl.metastore.tables import table_at

    url, rec = metastore
    _table(rec)
    assert table_at(url, "hdfs://nn:8020/warehouse/sales.db/orders") == "sales.orders"
    assert table_at(url, "hdfs://nn:8020/warehouse/sales.db/orders/") == "sales.orders"
    assert table_at(url, "hdfs://nn:8020/warehouse/sales.db/orders/ds=2024-01-01/hr=1") == (
        "sales.orders/ds=2024-01-01/hr=1"
    )
    # recorded as file:/tmp/wh/mm; given as a local path or file:// URL
    assert table_at(url, "/tmp/wh/mm") == "default.mm"
    assert table_at(url, "file:///tmp/wh/mm") == "default.mm"
    assert table_at(url, "/tmp/wh/plain") == "default.plain"  # found; whether it is ACID is the caller's check
    assert table_at(url, "hdfs://nn:8020/warehouse/sales.db/orders/not_a_partition") is None
    assert table_at(url, "hdfs://nn:8020/warehouse/sales.db") is None
    assert table_at(url, "/tmp/wh/mm/delta_0000001_0000001_0000") is None


def test_list_acid_tables(metastore):
    from acidctl.metastore.tables import list_acid_tables

    url, rec = metastore
    _table(rec)
    got = list_acid_tables(url)
    # sales.orders: full ACID, PARTITIONED BY (ds, hr), 2 partitions, 4 buckets; default.plain is not ACID
    assert [(t["table"], t["kind"], t["partition_keys"], t["partitions"], t["buckets"]) for t in got] == [
        ("default.mm", "insert_only", [], 0, None),
        ("sales.orders", "full", ["ds", "hr"], 2, 4),
    ]
    assert got[1]["location"] == "hdfs://nn:8020/warehouse/sales.db/orders"
    assert [t["table"] for t in list_acid_tables(url, db_glob="SALES")] == ["sales.orders"]
    assert [t["table"] for t in list_acid_tables(url, db_glob="*", table_glob="m*")] == ["default.mm"]
    with pytest.raises(TableNotFound):
        list_acid_tables(url, db_glob="nosuchdb")
    assert list_acid_tables(url, db_glob="nosuch*") == []
