"""Metastore databases built the way Hive's schematool builds them, not by `acidctl metastore init`.

The statements below transcribe the tables acidctl reads or writes from Hive's own init scripts,
table by table and column by column in the scripts' order, with their types, NOT NULLs,
defaults, keys, indexes and seed rows:

* ``standalone-metastore/src/main/sql/{postgres,mysql}/hive-schema-3.1.0.*.sql`` (branch-3.1),
* ``standalone-metastore/metastore-server/src/main/sql/{postgres,mysql}/hive-schema-4.0.0.*.sql``.

They are transcribed (the scripts themselves are not copied into this repository). The text is
written once in the PostgreSQL spelling of the scripts; :func:`statements` renders it for a
dialect the way the scripts differ:

* PostgreSQL 3.1.0 leaves the transaction tables unquoted (so lower-case) and quotes the
  metadata tables and ``TXN_WRITE_NOTIFICATION_LOG``; 4.0.0 quotes every table and column
  but leaves a few index names unquoted (``tc_txnid_index``, ``hl_txnid_index``,
  ``completed_txn_components_index``);
* MySQL: plain upper-case names, ``ENGINE=InnoDB DEFAULT CHARSET=latin1``, ``bit(1)`` for
  boolean, ``mediumtext``/``longtext`` for text, ``varbinary(2048)`` for bytea, ``int(11)``
  where the PostgreSQL script says bigint for time stamps in seconds and positions, 4.0.0's
  ``TXN_ID bigint PRIMARY KEY AUTO_INCREMENT`` (PostgreSQL: ``bigserial``), the
  ``HIVE_LOCK_TXNID_INDEX`` key plus ``HL_TXNID_IDX`` on HIVE_LOCKS (PostgreSQL: one hash index);
  the script's ``SET SQL_MODE='NO_AUTO_VALUE_ON_ZERO'`` header is kept (4.0.0 inserts TXN_ID 0).

Adaptations (what the driver cannot run as the scripts do): one statement per ``execute``; the
psql header (``SET client_encoding`` ...) and MySQL's ``/*!40101 ... */`` save/restore lines are
left out, except NO_AUTO_VALUE_ON_ZERO; ``NOTIFICATION_SEQUENCE``'s
``INSERT ... SELECT 1,1 WHERE NOT EXISTS`` is a plain INSERT into the empty table; tables
acidctl never touches (privileges, statistics, functions, resource plans, schemas registry,
scheduled queries, ...) are left out; foreign keys only where the transaction protocol depends
on them (TXN_COMPONENTS → TXNS, MIN_HISTORY_WRITE_ID → TXNS) and those among the metadata tables
a table lookup joins. MySQL's ``latin1_bin`` collations of the metadata columns are not
reproduced (they change comparisons of names, which acidctl matches exactly anyway).
"""

from __future__ import annotations

import re

# -- metadata tables (quoted upper-case on PostgreSQL in both versions) ----------------------

_META_3 = [
    """CREATE TABLE VERSION (VER_ID bigint, SCHEMA_VERSION varchar(127) NOT NULL,
       VERSION_COMMENT varchar(255) NOT NULL, PRIMARY KEY (VER_ID))""",
    """CREATE TABLE CTLGS (CTLG_ID bigint PRIMARY KEY, NAME varchar(256) UNIQUE, DESC varchar(4000),
       LOCATION_URI varchar(4000) NOT NULL)""",
    """CREATE TABLE DBS (DB_ID bigint NOT NULL, DESC varchar(4000) DEFAULT NULL,
       DB_LOCATION_URI varchar(4000) NOT NULL, NAME varchar(128) DEFAULT NULL,
       OWNER_NAME varchar(128) DEFAULT NULL, OWNER_TYPE varchar(10) DEFAULT NULL, CTLG_NAME varchar(256),
       PRIMARY KEY (DB_ID), CONSTRAINT UNIQUE_DATABASE UNIQUE (NAME, CTLG_NAME))""",
    """CREATE TABLE DATABASE_PARAMS (DB_ID bigint NOT NULL, PARAM_KEY varchar(180) NOT NULL,
       PARAM_VALUE varchar(4000) DEFAULT NULL, PRIMARY KEY (DB_ID, PARAM_KEY))""",
    "CREATE TABLE CDS (CD_ID bigint NOT NULL, PRIMARY KEY (CD_ID))",
    """CREATE TABLE COLUMNS_V2 (CD_ID bigint NOT NULL, COMMENT varchar(4000), COLUMN_NAME varchar(767) NOT NULL,
       TYPE_NAME text, INTEGER_IDX integer NOT NULL, PRIMARY KEY (CD_ID, COLUMN_NAME))""",
    """CREATE TABLE SERDES (SERDE_ID bigint NOT NULL, NAME varchar(128) DEFAULT NULL,
       SLIB varchar(4000) DEFAULT NULL, DESCRIPTION varchar(4000), SERIALIZER_CLASS varchar(4000),
       DESERIALIZER_CLASS varchar(4000), SERDE_TYPE integer, PRIMARY KEY (SERDE_ID))""",
    """CREATE TABLE SERDE_PARAMS (SERDE_ID bigint NOT NULL, PARAM_KEY varchar(256) NOT NULL,
       PARAM_VALUE text DEFAULT NULL, PRIMARY KEY (SERDE_ID, PARAM_KEY))""",
    """CREATE TABLE SDS (SD_ID bigint NOT NULL, INPUT_FORMAT varchar(4000) DEFAULT NULL,
       IS_COMPRESSED boolean NOT NULL, LOCATION varchar(4000) DEFAULT NULL, NUM_BUCKETS bigint NOT NULL,
       OUTPUT_FORMAT varchar(4000) DEFAULT NULL, SERDE_ID bigint, CD_ID bigint,
       IS_STOREDASSUBDIRECTORIES boolean NOT NULL, PRIMARY KEY (SD_ID))""",
    """CREATE TABLE TBLS (TBL_ID bigint NOT NULL, CREATE_TIME bigint NOT NULL, DB_ID bigint,
       LAST_ACCESS_TIME bigint NOT NULL, OWNER varchar(767) DEFAULT NULL, OWNER_TYPE varchar(10) DEFAULT NULL,
       RETENTION bigint NOT NULL, SD_ID bigint, TBL_NAME varchar(256) DEFAULT NULL,
       TBL_TYPE varchar(128) DEFAULT NULL, VIEW_EXPANDED_TEXT text, VIEW_ORIGINAL_TEXT text,
       IS_REWRITE_ENABLED boolean NOT NULL DEFAULT false{WRITE_ID}, PRIMARY KEY (TBL_ID),
       CONSTRAINT UNIQUETABLE UNIQUE (TBL_NAME, DB_ID))""",
    """CREATE TABLE TABLE_PARAMS (TBL_ID bigint NOT NULL, PARAM_KEY varchar(256) NOT NULL,
       PARAM_VALUE text DEFAULT NULL, PRIMARY KEY (TBL_ID, PARAM_KEY))""",
    """CREATE TABLE PARTITIONS (PART_ID bigint NOT NULL, CREATE_TIME bigint NOT NULL,
       LAST_ACCESS_TIME bigint NOT NULL, PART_NAME varchar(767) DEFAULT NULL, SD_ID bigint, TBL_ID bigint{WRITE_ID},
       PRIMARY KEY (PART_ID), CONSTRAINT UNIQUEPARTITION UNIQUE (PART_NAME, TBL_ID))""",
    """CREATE TABLE PARTITION_KEYS (TBL_ID bigint NOT NULL, PKEY_COMMENT varchar(4000) DEFAULT NULL,
       PKEY_NAME varchar(128) NOT NULL, PKEY_TYPE varchar(767) NOT NULL, INTEGER_IDX bigint NOT NULL,
       PRIMARY KEY (TBL_ID, PKEY_NAME))""",
    """CREATE TABLE PARTITION_KEY_VALS (PART_ID bigint NOT NULL, PART_KEY_VAL varchar(256) DEFAULT NULL,
       INTEGER_IDX bigint NOT NULL, PRIMARY KEY (PART_ID, INTEGER_IDX))""",
    """CREATE TABLE PARTITION_PARAMS (PART_ID bigint NOT NULL, PARAM_KEY varchar(256) NOT NULL,
       PARAM_VALUE {PP_VALUE} DEFAULT NULL, PRIMARY KEY (PART_ID, PARAM_KEY))""",
    """CREATE TABLE SEQUENCE_TABLE (SEQUENCE_NAME varchar(255) NOT NULL, NEXT_VAL bigint NOT NULL,
       PRIMARY KEY (SEQUENCE_NAME))""",
    """CREATE TABLE NOTIFICATION_SEQUENCE (NNI_ID bigint NOT NULL, NEXT_EVENT_ID bigint NOT NULL,
       PRIMARY KEY (NNI_ID))""",
    "ALTER TABLE DBS ADD CONSTRAINT DBS_FK1 FOREIGN KEY (CTLG_NAME) REFERENCES CTLGS (NAME)",
    "ALTER TABLE TBLS ADD CONSTRAINT TBLS_DB_ID_fkey FOREIGN KEY (DB_ID) REFERENCES DBS (DB_ID)",
    "ALTER TABLE TBLS ADD CONSTRAINT TBLS_SD_ID_fkey FOREIGN KEY (SD_ID) REFERENCES SDS (SD_ID)",
    "ALTER TABLE PARTITIONS ADD CONSTRAINT PARTITIONS_TBL_ID_fkey FOREIGN KEY (TBL_ID) REFERENCES TBLS (TBL_ID)",
    "ALTER TABLE PARTITIONS ADD CONSTRAINT PARTITIONS_SD_ID_fkey FOREIGN KEY (SD_ID) REFERENCES SDS (SD_ID)",
]

#: what 4.0.0 adds to the 3.1.0 metadata tables above
#: 3.1.0 already (HIVE-19532; upgrade-3.0.0-to-3.1.0 adds them)
_WRITE_ID = ", WRITE_ID bigint DEFAULT 0"
_META_4_ALTER = [
    "ALTER TABLE CTLGS ADD CREATE_TIME bigint",
    "ALTER TABLE DBS ADD CREATE_TIME bigint",
    "ALTER TABLE DBS ADD DB_MANAGED_LOCATION_URI varchar(4000)",
    "ALTER TABLE DBS ADD TYPE varchar(32) DEFAULT 'NATIVE' NOT NULL",
    "ALTER TABLE DBS ADD DATACONNECTOR_NAME varchar(128)",
    "ALTER TABLE DBS ADD REMOTE_DBNAME varchar(128)",
]

# -- transaction tables ----------------------------------------------------------------------

_TXN_3 = [
    """CREATE TABLE TXNS (TXN_ID bigint PRIMARY KEY, TXN_STATE char(1) NOT NULL, TXN_STARTED bigint NOT NULL,
       TXN_LAST_HEARTBEAT bigint NOT NULL, TXN_USER varchar(128) NOT NULL, TXN_HOST varchar(128) NOT NULL,
       TXN_AGENT_INFO varchar(128), TXN_META_INFO varchar(128), TXN_HEARTBEAT_COUNT integer, TXN_TYPE integer)""",
    """CREATE TABLE TXN_COMPONENTS (TC_TXNID bigint NOT NULL REFERENCES TXNS (TXN_ID),
       TC_DATABASE varchar(128) NOT NULL, TC_TABLE varchar(128), TC_PARTITION varchar(767) DEFAULT NULL,
       TC_OPERATION_TYPE char(1) NOT NULL, TC_WRITEID bigint)""",
    "CREATE INDEX TC_TXNID_INDEX ON TXN_COMPONENTS USING hash (TC_TXNID)",
    """CREATE TABLE COMPLETED_TXN_COMPONENTS (CTC_TXNID bigint NOT NULL, CTC_DATABASE varchar(128) NOT NULL,
       CTC_TABLE varchar(256), CTC_PARTITION varchar(767),
       CTC_TIMESTAMP timestamp DEFAULT CURRENT_TIMESTAMP NOT NULL, CTC_WRITEID bigint,
       CTC_UPDATE_DELETE char(1) NOT NULL)""",
    """CREATE INDEX COMPLETED_TXN_COMPONENTS_INDEX ON COMPLETED_TXN_COMPONENTS USING btree
       (CTC_DATABASE, CTC_TABLE, CTC_PARTITION)""",
    "CREATE TABLE NEXT_TXN_ID (NTXN_NEXT bigint NOT NULL)",
    "INSERT INTO NEXT_TXN_ID VALUES(1)",
    """CREATE TABLE HIVE_LOCKS (HL_LOCK_EXT_ID bigint NOT NULL, HL_LOCK_INT_ID bigint NOT NULL,
       HL_TXNID bigint NOT NULL, HL_DB varchar(128) NOT NULL, HL_TABLE varchar(128),
       HL_PARTITION varchar(767) DEFAULT NULL, HL_LOCK_STATE char(1) NOT NULL, HL_LOCK_TYPE char(1) NOT NULL,
       HL_LAST_HEARTBEAT bigint NOT NULL, HL_ACQUIRED_AT bigint, HL_USER varchar(128) NOT NULL,
       HL_HOST varchar(128) NOT NULL, HL_HEARTBEAT_COUNT integer, HL_AGENT_INFO varchar(128),
       HL_BLOCKEDBY_EXT_ID bigint, HL_BLOCKEDBY_INT_ID bigint, PRIMARY KEY(HL_LOCK_EXT_ID, HL_LOCK_INT_ID))""",
    "CREATE INDEX HL_TXNID_INDEX ON HIVE_LOCKS USING hash (HL_TXNID)",
    "CREATE TABLE NEXT_LOCK_ID (NL_NEXT bigint NOT NULL)",
    "INSERT INTO NEXT_LOCK_ID VALUES(1)",
    """CREATE TABLE COMPACTION_QUEUE (CQ_ID bigint PRIMARY KEY, CQ_DATABASE varchar(128) NOT NULL,
       CQ_TABLE varchar(128) NOT NULL, CQ_PARTITION varchar(767), CQ_STATE char(1) NOT NULL,
       CQ_TYPE char(1) NOT NULL, CQ_TBLPROPERTIES varchar(2048), CQ_WORKER_ID varchar(128), CQ_START bigint,
       CQ_RUN_AS varchar(128), CQ_HIGHEST_WRITE_ID bigint, CQ_META_INFO bytea, CQ_HADOOP_JOB_ID varchar(32))""",
    "CREATE TABLE NEXT_COMPACTION_QUEUE_ID (NCQ_NEXT bigint NOT NULL)",
    "INSERT INTO NEXT_COMPACTION_QUEUE_ID VALUES(1)",
    """CREATE TABLE COMPLETED_COMPACTIONS (CC_ID bigint PRIMARY KEY, CC_DATABASE varchar(128) NOT NULL,
       CC_TABLE varchar(128) NOT NULL, CC_PARTITION varchar(767), CC_STATE char(1) NOT NULL,
       CC_TYPE char(1) NOT NULL, CC_TBLPROPERTIES varchar(2048), CC_WORKER_ID varchar(128), CC_START bigint,
       CC_END bigint, CC_RUN_AS varchar(128), CC_HIGHEST_WRITE_ID bigint, CC_META_INFO bytea,
       CC_HADOOP_JOB_ID varchar(32))""",
    """CREATE TABLE AUX_TABLE (MT_KEY1 varchar(128) NOT NULL, MT_KEY2 bigint NOT NULL, MT_COMMENT varchar(255),
       PRIMARY KEY(MT_KEY1, MT_KEY2))""",
    """CREATE TABLE WRITE_SET (WS_DATABASE varchar(128) NOT NULL, WS_TABLE varchar(128) NOT NULL,
       WS_PARTITION varchar(767), WS_TXNID bigint NOT NULL, WS_COMMIT_ID bigint NOT NULL,
       WS_OPERATION_TYPE char(1) NOT NULL)""",
    """CREATE TABLE TXN_TO_WRITE_ID (T2W_TXNID bigint NOT NULL, T2W_DATABASE varchar(128) NOT NULL,
       T2W_TABLE varchar(256) NOT NULL, T2W_WRITEID bigint NOT NULL)""",
    "CREATE UNIQUE INDEX TBL_TO_TXN_ID_IDX ON TXN_TO_WRITE_ID (T2W_DATABASE, T2W_TABLE, T2W_TXNID)",
    "CREATE UNIQUE INDEX TBL_TO_WRITE_ID_IDX ON TXN_TO_WRITE_ID (T2W_DATABASE, T2W_TABLE, T2W_WRITEID)",
    """CREATE TABLE NEXT_WRITE_ID (NWI_DATABASE varchar(128) NOT NULL, NWI_TABLE varchar(256) NOT NULL,
       NWI_NEXT bigint NOT NULL)""",
    "CREATE UNIQUE INDEX NEXT_WRITE_ID_IDX ON NEXT_WRITE_ID (NWI_DATABASE, NWI_TABLE)",
    """CREATE TABLE MIN_HISTORY_LEVEL (MHL_TXNID bigint NOT NULL, MHL_MIN_OPEN_TXNID bigint NOT NULL,
       PRIMARY KEY(MHL_TXNID))""",
    "CREATE INDEX MIN_HISTORY_LEVEL_IDX ON MIN_HISTORY_LEVEL (MHL_MIN_OPEN_TXNID)",
    """CREATE TABLE MATERIALIZATION_REBUILD_LOCKS (MRL_TXN_ID bigint NOT NULL, MRL_DB_NAME varchar(128) NOT NULL,
       MRL_TBL_NAME varchar(256) NOT NULL, MRL_LAST_HEARTBEAT bigint NOT NULL, PRIMARY KEY(MRL_TXN_ID))""",
    """CREATE TABLE REPL_TXN_MAP (RTM_REPL_POLICY varchar(256) NOT NULL, RTM_SRC_TXN_ID bigint NOT NULL,
       RTM_TARGET_TXN_ID bigint NOT NULL, PRIMARY KEY (RTM_REPL_POLICY, RTM_SRC_TXN_ID))""",
    """CREATE TABLE "TXN_WRITE_NOTIFICATION_LOG" ("WNL_ID" bigint NOT NULL, "WNL_TXNID" bigint NOT NULL,
       "WNL_WRITEID" bigint NOT NULL, "WNL_DATABASE" varchar(128) NOT NULL, "WNL_TABLE" varchar(128) NOT NULL,
       "WNL_PARTITION" varchar(767) NOT NULL, "WNL_TABLE_OBJ" longtext NOT NULL, "WNL_PARTITION_OBJ" longtext,
       "WNL_FILES" longtext, "WNL_EVENT_TIME" integer NOT NULL,
       PRIMARY KEY ("WNL_TXNID", "WNL_DATABASE", "WNL_TABLE", "WNL_PARTITION"))""",
]

_TXN_4 = [
    """CREATE TABLE TXNS (TXN_ID bigserial PRIMARY KEY, TXN_STATE char(1) NOT NULL, TXN_STARTED bigint NOT NULL,
       TXN_LAST_HEARTBEAT bigint NOT NULL, TXN_USER varchar(128) NOT NULL, TXN_HOST varchar(128) NOT NULL,
       TXN_AGENT_INFO varchar(128), TXN_META_INFO varchar(128), TXN_HEARTBEAT_COUNT integer, TXN_TYPE integer)""",
    """INSERT INTO TXNS (TXN_ID, TXN_STATE, TXN_STARTED, TXN_LAST_HEARTBEAT, TXN_USER, TXN_HOST)
       VALUES(0, 'c', 0, 0, '', '')""",
    """CREATE TABLE TXN_COMPONENTS (TC_TXNID bigint NOT NULL REFERENCES TXNS (TXN_ID),
       TC_DATABASE varchar(128) NOT NULL, TC_TABLE varchar(256), TC_PARTITION varchar(767) DEFAULT NULL,
       TC_OPERATION_TYPE char(1) NOT NULL, TC_WRITEID bigint)""",
    "CREATE INDEX tc_txnid_index ON TXN_COMPONENTS USING hash (TC_TXNID)",
    """CREATE TABLE COMPLETED_TXN_COMPONENTS (CTC_TXNID bigint NOT NULL, CTC_DATABASE varchar(128) NOT NULL,
       CTC_TABLE varchar(256), CTC_PARTITION varchar(767),
       CTC_TIMESTAMP timestamp DEFAULT CURRENT_TIMESTAMP NOT NULL, CTC_WRITEID bigint,
       CTC_UPDATE_DELETE char(1) NOT NULL)""",
    """CREATE INDEX completed_txn_components_index ON COMPLETED_TXN_COMPONENTS USING btree
       (CTC_DATABASE, CTC_TABLE, CTC_PARTITION)""",
    "CREATE TABLE TXN_LOCK_TBL (TXN_LOCK bigint NOT NULL)",
    "INSERT INTO TXN_LOCK_TBL VALUES(1)",
    """CREATE TABLE HIVE_LOCKS (HL_LOCK_EXT_ID bigint NOT NULL, HL_LOCK_INT_ID bigint NOT NULL,
       HL_TXNID bigint NOT NULL, HL_DB varchar(128) NOT NULL, HL_TABLE varchar(256),
       HL_PARTITION varchar(767) DEFAULT NULL, HL_LOCK_STATE char(1) NOT NULL, HL_LOCK_TYPE char(1) NOT NULL,
       HL_LAST_HEARTBEAT bigint NOT NULL, HL_ACQUIRED_AT bigint, HL_USER varchar(128) NOT NULL,
       HL_HOST varchar(128) NOT NULL, HL_HEARTBEAT_COUNT integer, HL_AGENT_INFO varchar(128),
       HL_BLOCKEDBY_EXT_ID bigint, HL_BLOCKEDBY_INT_ID bigint, PRIMARY KEY(HL_LOCK_EXT_ID, HL_LOCK_INT_ID))""",
    "CREATE INDEX hl_txnid_index ON HIVE_LOCKS USING hash (HL_TXNID)",
    "CREATE TABLE NEXT_LOCK_ID (NL_NEXT bigint NOT NULL)",
    "INSERT INTO NEXT_LOCK_ID VALUES(1)",
    """CREATE TABLE COMPACTION_QUEUE (CQ_ID bigint PRIMARY KEY, CQ_DATABASE varchar(128) NOT NULL,
       CQ_TABLE varchar(256) NOT NULL, CQ_PARTITION varchar(767), CQ_STATE char(1) NOT NULL,
       CQ_TYPE char(1) NOT NULL, CQ_TBLPROPERTIES varchar(2048), CQ_WORKER_ID varchar(128),
       CQ_ENQUEUE_TIME bigint, CQ_START bigint, CQ_RUN_AS varchar(128), CQ_HIGHEST_WRITE_ID bigint,
       CQ_META_INFO bytea, CQ_HADOOP_JOB_ID varchar(32), CQ_ERROR_MESSAGE text, CQ_NEXT_TXN_ID bigint,
       CQ_TXN_ID bigint, CQ_COMMIT_TIME bigint, CQ_INITIATOR_ID varchar(128), CQ_INITIATOR_VERSION varchar(128),
       CQ_WORKER_VERSION varchar(128), CQ_CLEANER_START bigint, CQ_RETRY_RETENTION bigint NOT NULL DEFAULT 0,
       CQ_POOL_NAME varchar(128), CQ_NUMBER_OF_BUCKETS integer, CQ_ORDER_BY varchar(4000))""",
    "CREATE TABLE NEXT_COMPACTION_QUEUE_ID (NCQ_NEXT bigint NOT NULL)",
    "INSERT INTO NEXT_COMPACTION_QUEUE_ID VALUES(1)",
    """CREATE TABLE COMPLETED_COMPACTIONS (CC_ID bigint PRIMARY KEY, CC_DATABASE varchar(128) NOT NULL,
       CC_TABLE varchar(256) NOT NULL, CC_PARTITION varchar(767), CC_STATE char(1) NOT NULL,
       CC_TYPE char(1) NOT NULL, CC_TBLPROPERTIES varchar(2048), CC_WORKER_ID varchar(128),
       CC_ENQUEUE_TIME bigint, CC_START bigint, CC_END bigint, CC_RUN_AS varchar(128),
       CC_HIGHEST_WRITE_ID bigint, CC_META_INFO bytea, CC_HADOOP_JOB_ID varchar(32), CC_ERROR_MESSAGE text,
       CC_NEXT_TXN_ID bigint, CC_TXN_ID bigint, CC_COMMIT_TIME bigint, CC_INITIATOR_ID varchar(128),
       CC_INITIATOR_VERSION varchar(128), CC_WORKER_VERSION varchar(128), CC_POOL_NAME varchar(128),
       CC_NUMBER_OF_BUCKETS integer, CC_ORDER_BY varchar(4000))""",
    """CREATE INDEX COMPLETED_COMPACTIONS_RES ON COMPLETED_COMPACTIONS (CC_DATABASE, CC_TABLE, CC_PARTITION)""",
    """CREATE TABLE COMPACTION_METRICS_CACHE (CMC_DATABASE varchar(128) NOT NULL, CMC_TABLE varchar(256) NOT NULL,
       CMC_PARTITION varchar(767), CMC_METRIC_TYPE varchar(128) NOT NULL, CMC_METRIC_VALUE integer NOT NULL,
       CMC_VERSION integer NOT NULL)""",
    """CREATE TABLE AUX_TABLE (MT_KEY1 varchar(128) NOT NULL, MT_KEY2 bigint NOT NULL, MT_COMMENT varchar(255),
       PRIMARY KEY(MT_KEY1, MT_KEY2))""",
    """CREATE TABLE WRITE_SET (WS_DATABASE varchar(128) NOT NULL, WS_TABLE varchar(256) NOT NULL,
       WS_PARTITION varchar(767), WS_TXNID bigint NOT NULL, WS_COMMIT_ID bigint NOT NULL,
       WS_OPERATION_TYPE char(1) NOT NULL)""",
    """CREATE TABLE TXN_TO_WRITE_ID (T2W_TXNID bigint NOT NULL, T2W_DATABASE varchar(128) NOT NULL,
       T2W_TABLE varchar(256) NOT NULL, T2W_WRITEID bigint NOT NULL)""",
    "CREATE UNIQUE INDEX TBL_TO_TXN_ID_IDX ON TXN_TO_WRITE_ID (T2W_DATABASE, T2W_TABLE, T2W_TXNID)",
    "CREATE UNIQUE INDEX TBL_TO_WRITE_ID_IDX ON TXN_TO_WRITE_ID (T2W_DATABASE, T2W_TABLE, T2W_WRITEID)",
    """CREATE TABLE NEXT_WRITE_ID (NWI_DATABASE varchar(128) NOT NULL, NWI_TABLE varchar(256) NOT NULL,
       NWI_NEXT bigint NOT NULL)""",
    "CREATE UNIQUE INDEX NEXT_WRITE_ID_IDX ON NEXT_WRITE_ID (NWI_DATABASE, NWI_TABLE)",
    """CREATE TABLE MIN_HISTORY_WRITE_ID (MH_TXNID bigint NOT NULL REFERENCES TXNS (TXN_ID),
       MH_DATABASE varchar(128) NOT NULL, MH_TABLE varchar(256) NOT NULL, MH_WRITEID bigint NOT NULL)""",
    """CREATE TABLE MIN_HISTORY_LEVEL (MHL_TXNID bigint NOT NULL, MHL_MIN_OPEN_TXNID bigint NOT NULL,
       PRIMARY KEY(MHL_TXNID))""",
    "CREATE INDEX MIN_HISTORY_LEVEL_IDX ON MIN_HISTORY_LEVEL (MHL_MIN_OPEN_TXNID)",
    """CREATE TABLE MATERIALIZATION_REBUILD_LOCKS (MRL_TXN_ID bigint NOT NULL, MRL_DB_NAME varchar(128) NOT NULL,
       MRL_TBL_NAME varchar(256) NOT NULL, MRL_LAST_HEARTBEAT bigint NOT NULL, PRIMARY KEY(MRL_TXN_ID))""",
    """CREATE TABLE REPL_TXN_MAP (RTM_REPL_POLICY varchar(256) NOT NULL, RTM_SRC_TXN_ID bigint NOT NULL,
       RTM_TARGET_TXN_ID bigint NOT NULL, PRIMARY KEY (RTM_REPL_POLICY, RTM_SRC_TXN_ID))""",
    """CREATE TABLE TXN_WRITE_NOTIFICATION_LOG (WNL_ID bigint NOT NULL, WNL_TXNID bigint NOT NULL,
       WNL_WRITEID bigint NOT NULL, WNL_DATABASE varchar(128) NOT NULL, WNL_TABLE varchar(256) NOT NULL,
       WNL_PARTITION varchar(767) NOT NULL, WNL_TABLE_OBJ longtext NOT NULL, WNL_PARTITION_OBJ longtext,
       WNL_FILES longtext, WNL_EVENT_TIME integer NOT NULL,
       PRIMARY KEY (WNL_TXNID, WNL_DATABASE, WNL_TABLE, WNL_PARTITION))""",
]

#: tables whose DDL :func:`statements` creates, per version
SCHEMA_VERSIONS = {3: "3.1.0", 4: "4.0.0"}

_KEYWORDS = {
    "CREATE",
    "TABLE",
    "PRIMARY",
    "KEY",
    "NOT",
    "NULL",
    "DEFAULT",
    "REFERENCES",
    "INDEX",
    "ON",
    "UNIQUE",
    "USING",
    "CURRENT_TIMESTAMP",
    "INSERT",
    "INTO",
    "VALUES",
    "ALTER",
    "ADD",
    "CONSTRAINT",
    "FOREIGN",
}

#: PostgreSQL-bigint columns Hive's MySQL script declares int(11)/mediumint (seconds, positions)
_MYSQL_INT = {
    ("TBLS", "CREATE_TIME"),
    ("TBLS", "LAST_ACCESS_TIME"),
    ("TBLS", "RETENTION"),
    ("PARTITIONS", "CREATE_TIME"),
    ("PARTITIONS", "LAST_ACCESS_TIME"),
    ("PARTITION_KEYS", "INTEGER_IDX"),
    ("PARTITION_KEY_VALS", "INTEGER_IDX"),
    ("SDS", "NUM_BUCKETS"),
    ("DBS", "CREATE_TIME"),
    ("CTLGS", "CREATE_TIME"),
}


def _table_of(stmt: str) -> str:
    m = re.search(r"(?:TABLE|ON)\s+\"?([A-Z_0-9]+)", stmt)
    return m.group(1) if m else ""


def _quote_all(stmt: str) -> str:
    """Quote every upper-case identifier (PostgreSQL: keeps them upper-case)."""
    return re.sub(
        r"(?<![\"'\w])([A-Z][A-Z0-9_]*)(?![\"'\w])",
        lambda m: m.group(1) if m.group(1) in _KEYWORDS else f'"{m.group(1)}"',
        stmt,
    )


def _mysql(stmt: str) -> str:
    table = _table_of(stmt)
    s = stmt.replace('"', "")
    s = s.replace("bigserial PRIMARY KEY", "bigint PRIMARY KEY AUTO_INCREMENT")
    # inline REFERENCES is ignored by MySQL: the script's FOREIGN KEY clause instead
    m = re.search(r"(\w+) bigint NOT NULL REFERENCES (\w+) \((\w+)\)", s)
    if m:
        s = s.replace(m.group(0), f"{m.group(1)} bigint NOT NULL")
        s = s[: s.rindex(")")] + f", FOREIGN KEY ({m.group(1)}) REFERENCES {m.group(2)} ({m.group(3)}))"
    # the MySQL script's VERSION: `VERSION_COMMENT` VARCHAR(255) (nullable)
    s = s.replace("VERSION_COMMENT varchar(255) NOT NULL", "VERSION_COMMENT varchar(255)")
    s = s.replace(" USING hash", "").replace(" USING btree", "")
    s = s.replace("bytea", "varbinary(2048)").replace("longtext", "longtext")
    s = re.sub(r"\btext\b", "mediumtext", s)
    s = s.replace("boolean NOT NULL DEFAULT false", "bit(1) NOT NULL DEFAULT 0").replace("boolean", "bit(1)")
    s = re.sub(r"\bDESC\b", "`DESC`", s)
    s = re.sub(r"\bCOMMENT varchar", "`COMMENT` varchar", s)
    for t, col in _MYSQL_INT:
        if t == table:
            s = re.sub(rf"\b{col} bigint\b", f"{col} int(11)", s)
    if table == "HIVE_LOCKS" and s.startswith("CREATE TABLE"):
        s = s[: s.rindex(")")] + ", KEY HIVE_LOCK_TXNID_INDEX (HL_TXNID))"
    if table == "HIVE_LOCKS" and "INDEX" in s and s.startswith("CREATE INDEX"):
        s = "CREATE INDEX HL_TXNID_IDX ON HIVE_LOCKS (HL_TXNID)"
    if table == "COMPLETED_TXN_COMPONENTS" and s.startswith("CREATE INDEX"):
        s = "CREATE INDEX COMPLETED_TXN_COMPONENTS_IDX ON COMPLETED_TXN_COMPONENTS (CTC_DATABASE, CTC_TABLE, CTC_PARTITION) USING BTREE"
    if s.startswith("CREATE INDEX") and table == "TXN_COMPONENTS":
        s = "CREATE INDEX TC_TXNID_INDEX ON TXN_COMPONENTS (TC_TXNID)"
    if s.startswith("CREATE TABLE"):
        s += " ENGINE=InnoDB DEFAULT CHARSET=latin1"
    return s


def statements(hive_version: int, dialect: str) -> list[str]:
    """Hive's init script for ``hive_version`` (3 or 4) as statements for ``dialect``
    ("postgresql" or "mysql"), seed rows and the VERSION row included."""
    meta = [
        s.replace("{WRITE_ID}", _WRITE_ID).replace("{PP_VALUE}", "text" if hive_version == 4 else "varchar(4000)")
        for s in _META_3
    ]
    if hive_version == 4:
        meta += _META_4_ALTER
    seeds = [
        "INSERT INTO CTLGS (CTLG_ID, NAME, DESC, LOCATION_URI) VALUES (1, 'hive', 'Default catalog for Hive', 'TBD')",
        "INSERT INTO SEQUENCE_TABLE (SEQUENCE_NAME, NEXT_VAL) VALUES"
        " ('org.apache.hadoop.hive.metastore.model.MNotificationLog', 1)",
        "INSERT INTO NOTIFICATION_SEQUENCE (NNI_ID, NEXT_EVENT_ID) VALUES (1, 1)",
        "INSERT INTO SEQUENCE_TABLE (SEQUENCE_NAME, NEXT_VAL) VALUES"
        " ('org.apache.hadoop.hive.metastore.model.MTxnWriteNotificationLog', 1)",
    ]
    if hive_version == 4 or dialect == "mysql":
        # 3.1.0's MySQL script and 4.0.0's both: NOT NULL DEFAULT 'hive' (3.1.0 PostgreSQL: nullable)
        meta = [s.replace("CTLG_NAME varchar(256),", "CTLG_NAME varchar(256) NOT NULL DEFAULT 'hive',") for s in meta]
    txn = _TXN_4 if hive_version == 4 else _TXN_3
    v = SCHEMA_VERSIONS[hive_version]
    version = (
        f"INSERT INTO VERSION (VER_ID, SCHEMA_VERSION, VERSION_COMMENT) VALUES (1, '{v}', 'Hive release version {v}')"
    )
    out = []
    if dialect == "mysql":
        out.append("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')")
        out += [_mysql(" ".join(s.split())) for s in meta + seeds + txn + [version]]
        return out
    for s in meta + seeds + [version]:
        out.append(_quote_all(" ".join(s.split())))
    for s in txn:
        s = " ".join(s.split()).replace("longtext", "text")
        out.append(_quote_all(s) if hive_version == 4 else s)
    return out
