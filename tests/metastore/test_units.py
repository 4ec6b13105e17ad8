"""Pure helpers: ages, timestamps, codes, Hive encodings (no database)."""

from __future__ import annotations

import pytest

from acidctl.cli.show_cmd import fmt_ms
from acidctl.durations import parse_age
from acidctl.errors import UsageError
from acidctl.metastore.queries import (
    _parse_order,
    _split_id,
    compaction_state_text,
    parse_compaction_state,
    parse_compaction_type,
)
from acidctl.metastore.recorder import stringable_map
from acidctl.metastore.schema import Flavor, columns_for
from acidctl.acid.writeids import WriteIdList
from acidctl.metastore.snapshot import split_table_name


def test_parse_age_in_seconds():
    """One unit for every command: seconds (show converts to the metastore's milliseconds)."""
    assert parse_age("90s") == 90
    assert parse_age("10m") == 600
    assert parse_age("2h") == 7200
    assert parse_age("1d") == 86_400
    assert parse_age("500ms") == 0.5
    assert parse_age("3") == 3
    assert parse_age("0") == 0
    for bad in ("soon", "", "-1s", "5w"):
        with pytest.raises(UsageError):
            parse_age(bad)


def test_fmt_ms_is_utc():
    assert fmt_ms(0) == "1970-01-01 00:00:00.000"
    assert fmt_ms(1_700_000_000_123) == "2023-11-14 22:13:20.123"
    assert fmt_ms(None, missing="NULL") == "NULL"


def test_codes():
    assert parse_compaction_type("MAJOR") == "a" and parse_compaction_type("minor") == "i"
    assert parse_compaction_type("rebalance") == "r" and parse_compaction_type("abort_txn_cleanup") == "c"
    assert parse_compaction_state("ready for cleaning") == ["r"]
    assert parse_compaction_state("did not initiate") == ["a"] == parse_compaction_state("attempted")
    assert parse_compaction_state("refused") == ["c"]
    assert compaction_state_text("a", 3) == "attempted" and compaction_state_text("a", 4) == "did not initiate"
    with pytest.raises(UsageError):
        parse_compaction_state("exploded")
    assert _split_id("node1.example.com-17") == ("node1.example.com", "17")
    assert _split_id("hms-host-manual") == ("hms-host", "manual")
    assert _split_id(None) == (None, None)
    assert _parse_order("starttime desc, compactionid") == [("CC_START", True), ("CC_ID", False)]
    assert _parse_order("duration") == [("CC_END", False)]
    with pytest.raises(UsageError):
        _parse_order("compactionid sideways")
    with pytest.raises(UsageError):
        _parse_order('"CC_ID"; DROP TABLE x')


def test_stringable_map():
    # Hive's StringableMap: <n>:<klen>:<key><vlen>:<val>...
    assert (
        stringable_map({"compactor.mapreduce.map.memory.mb": "2048"}) == "1:33:compactor.mapreduce.map.memory.mb4:2048"
    )  # key is 33 chars


def test_names():
    assert split_table_name("Sales.Orders") == ("sales", "orders")
    assert split_table_name("`db`.`t`") == ("db", "t")
    assert split_table_name("t") == ("default", "t")
    with pytest.raises(UsageError):
        split_table_name("a.b.c")
    pg3 = Flavor.default("postgresql", 3)
    assert pg3.physical("TXNS") == "txns" and pg3.physical("DBS") == "DBS"
    assert Flavor.default("postgresql", 4).physical("TXNS") == "TXNS"
    assert Flavor.default("mysql", 3).physical("TXNS") == "TXNS"
    assert len(columns_for("COMPACTION_QUEUE", 3)) == 13 and len(columns_for("COMPACTION_QUEUE", 4)) == 26
    assert len(columns_for("COMPLETED_COMPACTIONS", 3)) == 14 and len(columns_for("COMPLETED_COMPACTIONS", 4)) == 25


def test_hive_write_id_list_keeps_min_open():
    wl = WriteIdList(table="db.t", hwm=3, open=(), aborted=(3,), min_open_write_id=5)
    assert str(wl) == "db.t:3:5::3"
    assert wl.is_valid(2) and not wl.is_valid(3) and not wl.is_valid(4)
    assert wl.to_dict()["min_open_write_id"] == 5
