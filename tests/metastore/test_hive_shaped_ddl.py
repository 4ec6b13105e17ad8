"""Metastores created with hand-written DDL the way Hive's schema scripts spell it (not by
`acidctl metastore init`): Postgres Hive 3 creates the transaction tables UNQUOTED (so they
are lower-case) and the metadata tables quoted upper-case; MySQL uses plain upper-case names.
Rows are inserted with unquoted SQL as Hive 3's TxnHandler sends it (metastore.md §1.1)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from acidctl.metastore.connection import connect
from acidctl.metastore.queries import show_compactions, show_locks, show_transactions
from acidctl.metastore.snapshot import table_snapshot
from tests.metastore.conftest import my_create_db, pg_create_db

HIVE3_TXN_DDL = [
    "CREATE TABLE TXNS (TXN_ID bigint PRIMARY KEY, TXN_STATE char(1) NOT NULL, TXN_STARTED bigint NOT NULL,"
    " TXN_LAST_HEARTBEAT bigint NOT NULL, TXN_USER varchar(128) NOT NULL, TXN_HOST varchar(128) NOT NULL,"
    " TXN_AGENT_INFO varchar(128), TXN_META_INFO varchar(128), TXN_HEARTBEAT_COUNT integer, TXN_TYPE integer)",
    "CREATE TABLE TXN_COMPONENTS (TC_TXNID bigint NOT NULL, TC_DATABASE varchar(128) NOT NULL, TC_TABLE varchar(128),"
    " TC_PARTITION varchar(767) DEFAULT NULL, TC_OPERATION_TYPE char(1) NOT NULL, TC_WRITEID bigint)",
    "CREATE TABLE COMPLETED_TXN_COMPONENTS (CTC_TXNID bigint NOT NULL, CTC_DATABASE varchar(128) NOT NULL,"
    " CTC_TABLE varchar(256), CTC_PARTITION varchar(767), CTC_TIMESTAMP timestamp DEFAULT CURRENT_TIMESTAMP NOT NULL,"
    " CTC_WRITEID bigint, CTC_UPDATE_DELETE char(1) NOT NULL)",
    "CREATE TABLE NEXT_TXN_ID (NTXN_NEXT bigint NOT NULL)",
    "INSERT INTO NEXT_TXN_ID VALUES(1)",
    "CREATE TABLE HIVE_LOCKS (HL_LOCK_EXT_ID bigint NOT NULL, HL_LOCK_INT_ID bigint NOT NULL, HL_TXNID bigint NOT NULL,"
    " HL_DB varchar(128) NOT NULL, HL_TABLE varchar(128), HL_PARTITION varchar(767) DEFAULT NULL,"
    " HL_LOCK_STATE char(1) NOT NULL, HL_LOCK_TYPE char(1) NOT NULL, HL_LAST_HEARTBEAT bigint NOT NULL,"
    " HL_ACQUIRED_AT bigint, HL_USER varchar(128) NOT NULL, HL_HOST varchar(128) NOT NULL,"
    " HL_HEARTBEAT_COUNT integer, HL_AGENT_INFO varchar(128), HL_BLOCKEDBY_EXT_ID bigint,"
    " HL_BLOCKEDBY_INT_ID bigint, PRIMARY KEY(HL_LOCK_EXT_ID, HL_LOCK_INT_ID))",
    "CREATE TABLE NEXT_LOCK_ID (NL_NEXT bigint NOT NULL)",
    "INSERT INTO NEXT_LOCK_ID VALUES(1)",
    "CREATE TABLE COMPACTION_QUEUE (CQ_ID bigint PRIMARY KEY, CQ_DATABASE varchar(128) NOT NULL,"
    " CQ_TABLE varchar(128) NOT NULL, CQ_PARTITION varchar(767), CQ_STATE char(1) NOT NULL, CQ_TYPE char(1) NOT NULL,"
    " CQ_TBLPROPERTIES varchar(2048), CQ_WORKER_ID varchar(128), CQ_START bigint, CQ_RUN_AS varchar(128),"
    " CQ_HIGHEST_WRITE_ID bigint, CQ_META_INFO {blob}, CQ_HADOOP_JOB_ID varchar(32))",
    "CREATE TABLE NEXT_COMPACTION_QUEUE_ID (NCQ_NEXT bigint NOT NULL)",
    "INSERT INTO NEXT_COMPACTION_QUEUE_ID VALUES(1)",
    "CREATE TABLE COMPLETED_COMPACTIONS (CC_ID bigint PRIMARY KEY, CC_DATABASE varchar(128) NOT NULL,"
    " CC_TABLE varchar(128) NOT NULL, CC_PARTITION varchar(767), CC_STATE char(1) NOT NULL, CC_TYPE char(1) NOT NULL,"
    " CC_TBLPROPERTIES varchar(2048), CC_WORKER_ID varchar(128), CC_START bigint, CC_END bigint,"
    " CC_RUN_AS varchar(128), CC_HIGHEST_WRITE_ID bigint, CC_META_INFO {blob}, CC_HADOOP_JOB_ID varchar(32))",
    "CREATE TABLE TXN_TO_WRITE_ID (T2W_TXNID bigint NOT NULL, T2W_DATABASE varchar(128) NOT NULL,"
    " T2W_TABLE varchar(256) NOT NULL, T2W_WRITEID bigint NOT NULL)",
    "CREATE TABLE NEXT_WRITE_ID (NWI_DATABASE varchar(128) NOT NULL, NWI_TABLE varchar(256) NOT NULL,"
    " NWI_NEXT bigint NOT NULL)",
    "CREATE TABLE AUX_TABLE (MT_KEY1 varchar(128) NOT NULL, MT_KEY2 bigint NOT NULL, MT_COMMENT varchar(255),"
    " PRIMARY KEY(MT_KEY1, MT_KEY2))",
    "CREATE TABLE WRITE_SET (WS_DATABASE varchar(128) NOT NULL, WS_TABLE varchar(128) NOT NULL,"
    " WS_PARTITION varchar(767), WS_TXNID bigint NOT NULL, WS_COMMIT_ID bigint NOT NULL,"
    " WS_OPERATION_TYPE char(1) NOT NULL)",
    "CREATE TABLE MIN_HISTORY_LEVEL (MHL_TXNID bigint NOT NULL, MHL_MIN_OPEN_TXNID bigint NOT NULL,"
    " PRIMARY KEY(MHL_TXNID))",
]

# what Hive 3 did for: txn 1 committed w1 (row deleted), txn 2 aborted w2, txn 3 open w3
HIVE3_ROWS = [
    "UPDATE NEXT_TXN_ID SET NTXN_NEXT = 4",
    "INSERT INTO TXNS (TXN_ID, TXN_STATE, TXN_STARTED, TXN_LAST_HEARTBEAT, TXN_USER, TXN_HOST, TXN_TYPE)"
    " VALUES (2, 'a', 1600000000000, 1600000000000, 'hive', 'hs2', 0)",
    "INSERT INTO TXNS (TXN_ID, TXN_STATE, TXN_STARTED, TXN_LAST_HEARTBEAT, TXN_USER, TXN_HOST, TXN_TYPE)"
    " VALUES (3, 'o', 1600000001000, 1600000002000, 'hive', 'hs2', 0)",
    "INSERT INTO TXN_TO_WRITE_ID (T2W_TXNID, T2W_DATABASE, T2W_TABLE, T2W_WRITEID) VALUES (1, 'db', 't', 1)",
    "INSERT INTO TXN_TO_WRITE_ID (T2W_TXNID, T2W_DATABASE, T2W_TABLE, T2W_WRITEID) VALUES (2, 'db', 't', 2)",
    "INSERT INTO TXN_TO_WRITE_ID (T2W_TXNID, T2W_DATABASE, T2W_TABLE, T2W_WRITEID) VALUES (3, 'db', 't', 3)",
    "INSERT INTO NEXT_WRITE_ID (NWI_DATABASE, NWI_TABLE, NWI_NEXT) VALUES ('db', 't', 4)",
    "INSERT INTO HIVE_LOCKS (HL_LOCK_EXT_ID, HL_LOCK_INT_ID, HL_TXNID, HL_DB, HL_TABLE, HL_PARTITION, HL_LOCK_STATE,"
    " HL_LOCK_TYPE, HL_LAST_HEARTBEAT, HL_ACQUIRED_AT, HL_USER, HL_HOST) VALUES"
    " (1, 1, 3, 'db', 't', NULL, 'a', 'w', 0, 1600000001500, 'hive', 'hs2')",
    "INSERT INTO COMPLETED_COMPACTIONS (CC_ID, CC_DATABASE, CC_TABLE, CC_STATE, CC_TYPE, CC_WORKER_ID, CC_START,"
    " CC_END, CC_HIGHEST_WRITE_ID) VALUES (1, 'db', 't', 's', 'i', 'w1-3', 1600000000000, 1600000004000, 1)",
]


def _build(url: str, meta_quote: str):
    eng = sa.create_engine(url)
    blob = "bytea" if eng.dialect.name == "postgresql" else "varbinary(2048)"
    q = meta_quote
    with eng.begin() as c:
        c.exec_driver_sql(
            f"CREATE TABLE {q}VERSION{q} ({q}VER_ID{q} bigint, {q}SCHEMA_VERSION{q} varchar(127) NOT NULL,"
            f" {q}VERSION_COMMENT{q} varchar(255) NOT NULL, PRIMARY KEY ({q}VER_ID{q}))"
        )
        c.exec_driver_sql(
            f"INSERT INTO {q}VERSION{q} ({q}VER_ID{q}, {q}SCHEMA_VERSION{q}, {q}VERSION_COMMENT{q})"
            " VALUES (1, '3.1.0', 'Hive release version 3.1.0')"
        )
        for stmt in HIVE3_TXN_DDL + HIVE3_ROWS:
            c.exec_driver_sql(stmt.replace("{blob}", blob))
    return eng


def _check(url):
    ms = connect(url)
    assert ms.hive_version == 3
    txns, wl = table_snapshot(url, "db.t")
    # hwm 3; TXNS {2:'a', 3:'o'} -> "3:3:3:2"; w1 committed (txn 1 absent), w2 aborted, w3 open
    assert str(txns) == "3:3:3:2"
    assert str(wl) == "db.t:3:3:3:2"
    rep = show_transactions(url)
    assert [(t["txnid"], t["state"]) for t in rep.transactions] == [(2, "ABORTED"), (3, "OPEN")]
    locks = show_locks(url).locks
    assert [(l["lockid"], l["lock_type"], l["transaction_id"]) for l in locks] == [("1.1", "SHARED_WRITE", 3)]
    comps = show_compactions(url, db="db", table="t").compactions
    assert [(c["compactionid"], c["type"], c["state"], c["duration"], c["worker"]) for c in comps] == [
        (1, "MINOR", "succeeded", 4000, "w1-3")
    ]
    return ms


def _record_and_check(url):
    """The recorder (demo/test tool) writes into a database built by Hive's DDL, not by acidctl:
    the schema version (3.1.0, Hive's own VERSION comment) decides. Txn 4 writes db.t (write id
    4, NEXT_WRITE_ID was 4) and commits: Hive 3 deletes its TXNS row, so hwm 4 with 2 aborted
    and 3 open stays "4:3:3:2", and the write-id list becomes db.t:4:3:3:2."""
    from acidctl.metastore.recorder import Recorder

    rec = Recorder(url)
    txn = rec.open_txn(user="hive", host="h", now_ms=1600000009000)
    assert txn == 4
    assert rec.add_write(txn, "db", "t") == 4
    rec.commit_txn(txn)
    txns, wl = table_snapshot(url, "db.t")
    assert str(txns) == "4:3:3:2" and str(wl) == "db.t:4:3:3:2"
    rec.engine.dispose()


@pytest.mark.postgres
def test_postgres_hive3_unquoted_lowercase(pg_server):
    url = pg_create_db(pg_server)
    eng = _build(url, '"')
    with eng.connect() as c:
        names = {r[0] for r in c.exec_driver_sql("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    assert "txns" in names and "TXNS" not in names and "VERSION" in names
    ms = _check(url)
    assert ms.flavor.txn_lower
    _record_and_check(url)
    eng.dispose()


@pytest.mark.postgres
def test_postgres_cdp_style_quoted_tables_with_lowercase_views(pg_server):
    """CDP: quoted upper-case tables plus lower-case compatibility views: use the quoted ones."""
    url = pg_create_db(pg_server)
    eng = _build(url, '"')
    with eng.begin() as c:
        c.exec_driver_sql('ALTER TABLE txns RENAME TO "TXNS"')
        for col in (
            "txn_id",
            "txn_state",
            "txn_started",
            "txn_last_heartbeat",
            "txn_user",
            "txn_host",
            "txn_agent_info",
            "txn_meta_info",
            "txn_heartbeat_count",
            "txn_type",
        ):
            c.exec_driver_sql(f'ALTER TABLE "TXNS" RENAME COLUMN {col} TO "{col.upper()}"')
        c.exec_driver_sql('CREATE VIEW txns AS SELECT "TXN_ID" txn_id, "TXN_STATE" txn_state FROM "TXNS"')
    ms = connect(url)
    assert not ms.flavor.txn_lower and ms.tables.TXNS.clause.name == "TXNS"
    eng.dispose()


@pytest.mark.mysql
def test_mysql_hive3_script_names(mysql_server):
    url = my_create_db(mysql_server)
    eng = _build(url, "")
    _check(url)
    _record_and_check(url)
    eng.dispose()


def test_sqlite_hive3_script_names(tmp_path):
    url = f"sqlite:///{tmp_path}/h3.db"
    eng = _build(url, '"')
    _check(url)
    _record_and_check(url)
    eng.dispose()


@pytest.mark.parametrize("hive_version", [4], ids=["hive4"])
def test_detect_with_extra_and_missing_columns(empty_db, backend, hive_version):
    """A real schema differs from acidctl's model: later releases add catalog columns
    (4.3.0: ``HL_CATALOG ... NOT NULL DEFAULT 'hive'``) and tables, older ones lack columns.
    Detection reads what is there; reads and the recorder keep working."""
    from acidctl.metastore.init import init_metastore
    from acidctl.metastore.recorder import LockComponent, Recorder

    init_metastore(empty_db, hive_version=hive_version)
    eng = sa.create_engine(empty_db)
    q = eng.dialect.identifier_preparer.quote
    with eng.begin() as c:
        c.exec_driver_sql(f"ALTER TABLE {q('HIVE_LOCKS')} ADD {q('HL_CATALOG')} varchar(128) DEFAULT 'hive' NOT NULL")
        c.exec_driver_sql(f"CREATE TABLE {q('SOMETHING_NEWER')} ({q('X')} int)")
        c.exec_driver_sql(f"ALTER TABLE {q('COMPACTION_QUEUE')} DROP COLUMN {q('CQ_ORDER_BY')}")
    ms = connect(empty_db)
    assert ms.hive_version == 4 and not ms.tables.COMPACTION_QUEUE.has("CQ_ORDER_BY")
    assert ms.tables.COMPLETED_COMPACTIONS.has("CC_ORDER_BY")
    rec = Recorder(empty_db)
    txn = rec.open_txn(now_ms=1600000000000)
    rec.lock(LockComponent("db", "t", None, "shared_write"), txn_id=txn, user="hive", host="h")
    assert [(lk["lockid"], lk["transaction_id"]) for lk in show_locks(empty_db).locks] == [("1.1", txn)]
    cid = rec.enqueue_compaction("db", "t", compaction_type="major", now_ms=1600000000000)
    assert [c["compactionid"] for c in show_compactions(empty_db).compactions] == [cid]
    rec.engine.dispose()
    eng.dispose()
