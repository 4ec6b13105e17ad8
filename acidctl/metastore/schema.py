"""Hive's metastore tables as acidctl reads and (``metastore init``) creates them.

One description per table (../shared/spec/metastore.md §2–§3, §12, and the ``hive-schema-3.1.0``
/ ``hive-schema-4.0.0`` scripts of Hive's schematool for PostgreSQL and MySQL/MariaDB) is the single
source for both the query-side table clauses and the DDL: every column Hive has in the table,
its type per dialect, NOT NULL, defaults, primary keys, unique keys, indexes, foreign keys and
generated ids. SQLite has no Hive script; it gets the same columns with plain types (§12).

Identifier case follows §1.1:

* PostgreSQL, Hive 3: transaction tables and columns are unquoted in Hive's script, i.e.
  **lower-case** (``txns.txn_id``); Hive 4: quoted upper-case (``"TXNS"."TXN_ID"``); a few Hive 4
  index names stay unquoted (``tc_txnid_index``);
* metadata tables (``"DBS"``, ``"TBLS"``, ``"VERSION"``, ...) are quoted upper-case everywhere;
* MySQL/MariaDB and SQLite: the exact upper-case names.

SQLAlchemy quotes a name only when it is not all lower-case, which gives exactly these
spellings. This module imports SQLAlchemy; CLI modules import it inside command bodies only.

Notation. A column is ``(name, type, nullable, versions[, options])``: ``versions`` is "34"
(both), "3" or "4"; ``type`` and ``nullable`` may be a ``(hive3, hive4)`` pair and/or a dict
keyed by dialect (``"*"`` = every other dialect); ``options["default"]`` is a server default
(``FALSE`` is rendered per dialect); a table's ``mysql_bin`` gives its string columns MySQL's
``latin1_bin`` collation as Hive's MySQL script does (``bin=False`` on a column: not that one).
Type codes below.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import sqlalchemy as sa

# type codes: bigint, int, char(1), timestamp, text (MySQL MEDIUMTEXT), long text (MySQL
# LONGTEXT), binary (bytea / varbinary(2048)), boolean (MySQL bit(1)), varcharN
_B, _I, _C1, _TS, _TXT, _LTXT, _BIN, _BOOL = "bigint", "int", "char1", "timestamp", "text", "longtext", "binary", "bool"
#: Hive's PostgreSQL script says bigint where its MySQL script says int(11) (time stamps in
#: seconds, index positions, bucket counts)
_BI = {"postgresql": _B, "*": _I}
_FALSE = "FALSE"


def _v(n: int) -> str:
    return f"varchar{n}"


def _c(name: str, ctype: Any, nullable: Any = True, versions: str = "34", **options) -> tuple:
    return (name, ctype, nullable, versions, options)


def _nn(name: str, ctype: Any, versions: str = "34", **options) -> tuple:
    return _c(name, ctype, False, versions, **options)


def _ix(
    name: Any,
    cols: list[str],
    *,
    unique: bool = False,
    versions: str = "34",
    dialects: tuple = (),
    pg_lower: bool = False,
    using: str | None = None,
    constraint: bool = False,
) -> dict:
    """An index (``constraint=True``: a UNIQUE constraint, as Hive's metadata DDL declares them).
    ``name`` may be a dict keyed by dialect; ``dialects`` limits it to those dialects;
    ``pg_lower``: Hive 4's PostgreSQL script leaves this index name unquoted (lower-case)."""
    return dict(
        name=name,
        cols=cols,
        unique=unique,
        versions=versions,
        dialects=dialects,
        pg_lower=pg_lower,
        using=using,
        constraint=constraint,
    )


def _fk(cols: list[str], ref: str, ref_cols: list[str], versions: str = "34") -> dict:
    return dict(cols=cols, ref=ref, ref_cols=ref_cols, versions=versions)


# ---------------------------------------------------------------------------------------
# Transaction tables (§3)
# ---------------------------------------------------------------------------------------

TXN_TABLES: dict[str, dict[str, Any]] = {
    "TXNS": {
        "cols": [
            _nn("TXN_ID", _B),
            _nn("TXN_STATE", _C1),
            _nn("TXN_STARTED", _B),
            _nn("TXN_LAST_HEARTBEAT", _B),
            _nn("TXN_USER", _v(128)),
            _nn("TXN_HOST", _v(128)),
            _c("TXN_AGENT_INFO", _v(128)),
            _c("TXN_META_INFO", _v(128)),
            _c("TXN_HEARTBEAT_COUNT", _I),
            _c("TXN_TYPE", _I),
        ],
        "pk": ["TXN_ID"],
        # HIVE-23048: Postgres bigserial, MySQL AUTO_INCREMENT (SQLite: INTEGER PRIMARY KEY AUTOINCREMENT)
        "generated": {"TXN_ID": "4"},
        "versions": "34",
    },
    "TXN_COMPONENTS": {
        "cols": [
            _nn("TC_TXNID", _B),
            _nn("TC_DATABASE", _v(128)),
            _c("TC_TABLE", (_v(128), _v(256))),
            _c("TC_PARTITION", _v(767)),
            _nn("TC_OPERATION_TYPE", _C1),
            _c("TC_WRITEID", _B),
        ],
        "indexes": [_ix("TC_TXNID_INDEX", ["TC_TXNID"], pg_lower=True, using="hash")],
        "fks": [_fk(["TC_TXNID"], "TXNS", ["TXN_ID"])],
        "versions": "34",
    },
    "COMPLETED_TXN_COMPONENTS": {
        "cols": [
            _nn("CTC_TXNID", _B),
            _nn("CTC_DATABASE", _v(128)),
            _c("CTC_TABLE", _v(256)),
            _c("CTC_PARTITION", _v(767)),
            _nn("CTC_TIMESTAMP", _TS, default="CURRENT_TIMESTAMP"),
            _c("CTC_WRITEID", _B),
            _nn("CTC_UPDATE_DELETE", _C1),
        ],
        "indexes": [
            _ix(
                {"mysql": "COMPLETED_TXN_COMPONENTS_IDX", "*": "COMPLETED_TXN_COMPONENTS_INDEX"},
                ["CTC_DATABASE", "CTC_TABLE", "CTC_PARTITION"],
                pg_lower=True,
            )
        ],
        "versions": "34",
    },
    "NEXT_TXN_ID": {"cols": [_nn("NTXN_NEXT", _B, "3")], "versions": "3", "seed": [{"NTXN_NEXT": 1}]},
    "TXN_LOCK_TBL": {"cols": [_nn("TXN_LOCK", _B, "4")], "versions": "4", "seed": [{"TXN_LOCK": 1}]},
    "HIVE_LOCKS": {
        "cols": [
            _nn("HL_LOCK_EXT_ID", _B),
            _nn("HL_LOCK_INT_ID", _B),
            _nn("HL_TXNID", _B),
            _nn("HL_DB", _v(128)),
            _c("HL_TABLE", (_v(128), _v(256))),
            _c("HL_PARTITION", _v(767)),
            _nn("HL_LOCK_STATE", _C1),
            _nn("HL_LOCK_TYPE", _C1),
            _nn("HL_LAST_HEARTBEAT", _B),
            _c("HL_ACQUIRED_AT", _B),
            _nn("HL_USER", _v(128)),
            _nn("HL_HOST", _v(128)),
            _c("HL_HEARTBEAT_COUNT", _I),
            _c("HL_AGENT_INFO", _v(128)),
            _c("HL_BLOCKEDBY_EXT_ID", _B),
            _c("HL_BLOCKEDBY_INT_ID", _B),
        ],
        "pk": ["HL_LOCK_EXT_ID", "HL_LOCK_INT_ID"],
        "indexes": [
            _ix("HL_TXNID_INDEX", ["HL_TXNID"], dialects=("postgresql", "sqlite"), pg_lower=True, using="hash"),
            _ix("HIVE_LOCK_TXNID_INDEX", ["HL_TXNID"], dialects=("mysql",)),
            _ix("HL_TXNID_IDX", ["HL_TXNID"], dialects=("mysql",)),
        ],
        "versions": "34",
    },
    "NEXT_LOCK_ID": {"cols": [_nn("NL_NEXT", _B)], "versions": "34", "seed": [{"NL_NEXT": 1}]},
    "COMPACTION_QUEUE": {
        "cols": [
            _nn("CQ_ID", _B),
            _nn("CQ_DATABASE", _v(128)),
            _nn("CQ_TABLE", (_v(128), _v(256))),
            _c("CQ_PARTITION", _v(767)),
            _nn("CQ_STATE", _C1),
            _nn("CQ_TYPE", _C1),
            _c("CQ_TBLPROPERTIES", _v(2048)),
            _c("CQ_WORKER_ID", _v(128)),
            _c("CQ_ENQUEUE_TIME", _B, versions="4"),
            _c("CQ_START", _B),
            _c("CQ_RUN_AS", _v(128)),
            _c("CQ_HIGHEST_WRITE_ID", _B),
            _c("CQ_META_INFO", _BIN),
            _c("CQ_HADOOP_JOB_ID", _v(32)),
            _c("CQ_ERROR_MESSAGE", _TXT, versions="4"),
            _c("CQ_NEXT_TXN_ID", _B, versions="4"),
            _c("CQ_TXN_ID", _B, versions="4"),
            _c("CQ_COMMIT_TIME", _B, versions="4"),
            _c("CQ_INITIATOR_ID", _v(128), versions="4"),
            _c("CQ_INITIATOR_VERSION", _v(128), versions="4"),
            _c("CQ_WORKER_VERSION", _v(128), versions="4"),
            _c("CQ_CLEANER_START", _B, versions="4"),
            _nn("CQ_RETRY_RETENTION", _B, "4", default="0"),
            _c("CQ_POOL_NAME", _v(128), versions="4"),
            _c("CQ_NUMBER_OF_BUCKETS", _I, versions="4"),
            _c("CQ_ORDER_BY", _v(4000), versions="4"),
        ],
        "pk": ["CQ_ID"],
        "versions": "34",
    },
    "NEXT_COMPACTION_QUEUE_ID": {"cols": [_nn("NCQ_NEXT", _B)], "versions": "34", "seed": [{"NCQ_NEXT": 1}]},
    "COMPLETED_COMPACTIONS": {
        "cols": [
            _nn("CC_ID", _B),
            _nn("CC_DATABASE", _v(128)),
            _nn("CC_TABLE", (_v(128), _v(256))),
            _c("CC_PARTITION", _v(767)),
            _nn("CC_STATE", _C1),
            _nn("CC_TYPE", _C1),
            _c("CC_TBLPROPERTIES", _v(2048)),
            _c("CC_WORKER_ID", _v(128)),
            _c("CC_ENQUEUE_TIME", _B, versions="4"),
            _c("CC_START", _B),
            _c("CC_END", _B),
            _c("CC_RUN_AS", _v(128)),
            _c("CC_HIGHEST_WRITE_ID", _B),
            _c("CC_META_INFO", _BIN),
            _c("CC_HADOOP_JOB_ID", _v(32)),
            _c("CC_ERROR_MESSAGE", _TXT, versions="4"),
            _c("CC_NEXT_TXN_ID", _B, versions="4"),
            _c("CC_TXN_ID", _B, versions="4"),
            _c("CC_COMMIT_TIME", _B, versions="4"),
            _c("CC_INITIATOR_ID", _v(128), versions="4"),
            _c("CC_INITIATOR_VERSION", _v(128), versions="4"),
            _c("CC_WORKER_VERSION", _v(128), versions="4"),
            _c("CC_POOL_NAME", _v(128), versions="4"),
            _c("CC_NUMBER_OF_BUCKETS", _I, versions="4"),
            _c("CC_ORDER_BY", _v(4000), versions="4"),
        ],
        "pk": ["CC_ID"],
        # HIVE-21487 (Hive 4 only)
        "indexes": [_ix("COMPLETED_COMPACTIONS_RES", ["CC_DATABASE", "CC_TABLE", "CC_PARTITION"], versions="4")],
        "versions": "34",
    },
    "AUX_TABLE": {
        "cols": [_nn("MT_KEY1", _v(128)), _nn("MT_KEY2", _B), _c("MT_COMMENT", _v(255))],
        "pk": ["MT_KEY1", "MT_KEY2"],
        "versions": "34",
    },
    "WRITE_SET": {
        "cols": [
            _nn("WS_DATABASE", _v(128)),
            _nn("WS_TABLE", (_v(128), _v(256))),
            _c("WS_PARTITION", _v(767)),
            _nn("WS_TXNID", _B),
            _nn("WS_COMMIT_ID", _B),
            _nn("WS_OPERATION_TYPE", _C1),
        ],
        "versions": "34",
    },
    "TXN_TO_WRITE_ID": {
        "cols": [_nn("T2W_TXNID", _B), _nn("T2W_DATABASE", _v(128)), _nn("T2W_TABLE", _v(256)), _nn("T2W_WRITEID", _B)],
        "indexes": [
            _ix("TBL_TO_TXN_ID_IDX", ["T2W_DATABASE", "T2W_TABLE", "T2W_TXNID"], unique=True),
            _ix("TBL_TO_WRITE_ID_IDX", ["T2W_DATABASE", "T2W_TABLE", "T2W_WRITEID"], unique=True),
        ],
        "versions": "34",
    },
    "NEXT_WRITE_ID": {
        "cols": [_nn("NWI_DATABASE", _v(128)), _nn("NWI_TABLE", _v(256)), _nn("NWI_NEXT", _B)],
        "indexes": [_ix("NEXT_WRITE_ID_IDX", ["NWI_DATABASE", "NWI_TABLE"], unique=True)],
        "versions": "34",
    },
    "MIN_HISTORY_WRITE_ID": {
        "cols": [
            _nn("MH_TXNID", _B, "4"),
            _nn("MH_DATABASE", _v(128), "4"),
            _nn("MH_TABLE", _v(256), "4"),
            _nn("MH_WRITEID", _B, "4"),
        ],
        "fks": [_fk(["MH_TXNID"], "TXNS", ["TXN_ID"], "4")],
        "versions": "4",
    },
    "MIN_HISTORY_LEVEL": {
        "cols": [_nn("MHL_TXNID", _B), _nn("MHL_MIN_OPEN_TXNID", _B)],
        "pk": ["MHL_TXNID"],
        "indexes": [_ix("MIN_HISTORY_LEVEL_IDX", ["MHL_MIN_OPEN_TXNID"])],
        "versions": "34",
    },
    "MATERIALIZATION_REBUILD_LOCKS": {
        "cols": [
            _nn("MRL_TXN_ID", _B),
            _nn("MRL_DB_NAME", _v(128)),
            _nn("MRL_TBL_NAME", _v(256)),
            _nn("MRL_LAST_HEARTBEAT", _B),
        ],
        "pk": ["MRL_TXN_ID"],
        "versions": "34",
    },
    # HIVE-19267, in 3.1.0 already (its PostgreSQL script quotes this one upper-case, unlike
    # 3.1.0's other transaction tables; WNL_TABLE widened to 256 in 4.0.0)
    "TXN_WRITE_NOTIFICATION_LOG": {
        "cols": [
            _nn("WNL_ID", _B),
            _nn("WNL_TXNID", _B),
            _nn("WNL_WRITEID", _B),
            _nn("WNL_DATABASE", _v(128)),
            _nn("WNL_TABLE", (_v(128), _v(256))),
            _nn("WNL_PARTITION", _v(767)),
            _nn("WNL_TABLE_OBJ", _LTXT),
            _c("WNL_PARTITION_OBJ", _LTXT),
            _c("WNL_FILES", _LTXT),
            _nn("WNL_EVENT_TIME", _I),
        ],
        "pk": ["WNL_TXNID", "WNL_DATABASE", "WNL_TABLE", "WNL_PARTITION"],
        "quoted": True,
        "versions": "34",
    },
    "COMPACTION_METRICS_CACHE": {
        "cols": [
            _nn("CMC_DATABASE", _v(128), "4"),
            _nn("CMC_TABLE", _v(256), "4"),
            _c("CMC_PARTITION", _v(767), versions="4"),
            _nn("CMC_METRIC_TYPE", _v(128), "4"),
            _nn("CMC_METRIC_VALUE", _I, "4"),
            _nn("CMC_VERSION", _I, "4"),
        ],
        "versions": "4",
    },
    "REPL_TXN_MAP": {
        "cols": [_nn("RTM_REPL_POLICY", _v(256)), _nn("RTM_SRC_TXN_ID", _B), _nn("RTM_TARGET_TXN_ID", _B)],
        "pk": ["RTM_REPL_POLICY", "RTM_SRC_TXN_ID"],
        "versions": "34",
    },
}

# ---------------------------------------------------------------------------------------
# Metadata tables: quoted upper-case on every database (§1.1). The ones acidctl reads plus what
# they reference (CTLGS) and the sequences schematool seeds; every column of Hive's DDL.
# ---------------------------------------------------------------------------------------

META_TABLES: dict[str, dict[str, Any]] = {
    "VERSION": {
        "cols": [
            _nn("VER_ID", _B),
            _nn("SCHEMA_VERSION", _v(127)),
            _c("VERSION_COMMENT", _v(255), {"mysql": True, "*": False}),
        ],
        "pk": ["VER_ID"],
        "versions": "34",
    },
    "CTLGS": {
        "cols": [
            _nn("CTLG_ID", _B),
            _c("NAME", _v(256)),
            _c("DESC", _v(4000)),
            _nn("LOCATION_URI", _v(4000)),
            _c("CREATE_TIME", _BI, versions="4"),
        ],
        "pk": ["CTLG_ID"],
        "indexes": [_ix({"mysql": "UNIQUE_CATALOG", "*": "CTLGS_NAME_key"}, ["NAME"], unique=True, constraint=True)],
        # "The location is TBD. Hive will fix this when it starts"
        "seed": [{"CTLG_ID": 1, "NAME": "hive", "DESC": "Default catalog for Hive", "LOCATION_URI": "TBD"}],
        "versions": "34",
    },
    "DBS": {
        "mysql_bin": True,
        "cols": [
            _nn("DB_ID", _B),
            _c("DESC", _v(4000)),
            _nn("DB_LOCATION_URI", _v(4000)),
            _c("NAME", _v(128)),
            _c("OWNER_NAME", _v(128)),
            _c("OWNER_TYPE", _v(10)),
            # 3.1.0's PostgreSQL script: nullable without a default; its MySQL script and 4.0.0's
            # both: NOT NULL DEFAULT 'hive'
            _c(
                "CTLG_NAME",
                _v(256),
                {"postgresql": (True, False), "*": False},
                default={"postgresql": (None, "'hive'"), "*": "'hive'"},
                bin=False,
            ),
            _c("CREATE_TIME", _BI, versions="4"),
            _c("DB_MANAGED_LOCATION_URI", _v(4000), versions="4"),
            _nn("TYPE", _v(32), "4", default="'NATIVE'", bin=False),
            _c("DATACONNECTOR_NAME", _v(128), versions="4", bin=False),
            _c("REMOTE_DBNAME", _v(128), versions="4", bin=False),
        ],
        "pk": ["DB_ID"],
        "indexes": [_ix("UNIQUE_DATABASE", ["NAME", "CTLG_NAME"], unique=True, constraint=True)],
        "fks": [_fk(["CTLG_NAME"], "CTLGS", ["NAME"])],
        "versions": "34",
    },
    # database properties (Hive 4's Initiator reads no_auto_compaction here first, HIVE-26793)
    "DATABASE_PARAMS": {
        "mysql_bin": True,
        "cols": [_nn("DB_ID", _B), _nn("PARAM_KEY", _v(180)), _c("PARAM_VALUE", _v(4000))],
        "pk": ["DB_ID", "PARAM_KEY"],
        "indexes": [_ix("DATABASE_PARAMS_N49", ["DB_ID"])],
        "fks": [_fk(["DB_ID"], "DBS", ["DB_ID"])],
        "versions": "34",
    },
    "CDS": {"cols": [_nn("CD_ID", _B)], "pk": ["CD_ID"], "versions": "34"},
    "COLUMNS_V2": {
        "mysql_bin": True,
        "cols": [
            _nn("CD_ID", _B),
            _c("COMMENT", _v(4000)),
            _nn("COLUMN_NAME", _v(767)),
            _c("TYPE_NAME", _TXT, bin=False),
            _nn("INTEGER_IDX", _I),
        ],
        "pk": ["CD_ID", "COLUMN_NAME"],
        "indexes": [_ix("COLUMNS_V2_N49", ["CD_ID"], dialects=("mysql",))],
        "fks": [_fk(["CD_ID"], "CDS", ["CD_ID"])],
        "versions": "34",
    },
    "SERDES": {
        "mysql_bin": True,
        "cols": [
            _nn("SERDE_ID", _B),
            _c("NAME", _v(128)),
            _c("SLIB", _v(4000)),
            _c("DESCRIPTION", _v(4000)),
            _c("SERIALIZER_CLASS", _v(4000)),
            _c("DESERIALIZER_CLASS", _v(4000)),
            _c("SERDE_TYPE", _I),
        ],
        "pk": ["SERDE_ID"],
        "versions": "34",
    },
    "SERDE_PARAMS": {
        "mysql_bin": True,
        "cols": [_nn("SERDE_ID", _B), _nn("PARAM_KEY", _v(256)), _c("PARAM_VALUE", _TXT)],
        "pk": ["SERDE_ID", "PARAM_KEY"],
        "indexes": [_ix("SERDE_PARAMS_N49", ["SERDE_ID"])],
        "fks": [_fk(["SERDE_ID"], "SERDES", ["SERDE_ID"])],
        "versions": "34",
    },
    "SDS": {
        "mysql_bin": True,
        "cols": [
            _nn("SD_ID", _B),
            _c("CD_ID", _B),
            _c("INPUT_FORMAT", _v(4000)),
            _nn("IS_COMPRESSED", _BOOL),
            _nn("IS_STOREDASSUBDIRECTORIES", _BOOL),
            _c("LOCATION", _v(4000)),
            _nn("NUM_BUCKETS", _BI),
            _c("OUTPUT_FORMAT", _v(4000)),
            _c("SERDE_ID", _B),
        ],
        "pk": ["SD_ID"],
        "indexes": [_ix("SDS_N49", ["SERDE_ID"]), _ix("SDS_N50", ["CD_ID"])],
        "fks": [_fk(["SERDE_ID"], "SERDES", ["SERDE_ID"]), _fk(["CD_ID"], "CDS", ["CD_ID"])],
        "versions": "34",
    },
    "TBLS": {
        "mysql_bin": True,
        "cols": [
            _nn("TBL_ID", _B),
            _nn("CREATE_TIME", _BI),
            _c("DB_ID", _B),
            _nn("LAST_ACCESS_TIME", _BI),
            _c("OWNER", _v(767)),
            _c("OWNER_TYPE", _v(10)),
            _nn("RETENTION", _BI),
            _c("SD_ID", _B),
            _c("TBL_NAME", _v(256)),
            _c("TBL_TYPE", _v(128)),
            _c("VIEW_EXPANDED_TEXT", _TXT, bin=False),
            _c("VIEW_ORIGINAL_TEXT", _TXT, bin=False),
            _nn("IS_REWRITE_ENABLED", _BOOL, default=_FALSE),
            # HIVE-19532, 3.1.0 (upgrade-3.0.0-to-3.1.0: ALTER TABLE TBLS ADD WRITE_ID bigint DEFAULT 0)
            _c("WRITE_ID", _B, default="0"),
        ],
        "pk": ["TBL_ID"],
        "indexes": [
            _ix("UNIQUETABLE", ["TBL_NAME", "DB_ID"], unique=True, constraint=True),
            _ix("TBLS_N49", ["DB_ID"]),
            _ix("TBLS_N50", ["SD_ID"]),
        ],
        "fks": [_fk(["DB_ID"], "DBS", ["DB_ID"]), _fk(["SD_ID"], "SDS", ["SD_ID"])],
        "versions": "34",
    },
    "TABLE_PARAMS": {
        "mysql_bin": True,
        "cols": [_nn("TBL_ID", _B), _nn("PARAM_KEY", _v(256)), _c("PARAM_VALUE", _TXT)],
        "pk": ["TBL_ID", "PARAM_KEY"],
        "indexes": [_ix("TABLE_PARAMS_N49", ["TBL_ID"])],
        "fks": [_fk(["TBL_ID"], "TBLS", ["TBL_ID"])],
        "versions": "34",
    },
    "PARTITIONS": {
        "mysql_bin": True,
        "cols": [
            _nn("PART_ID", _B),
            _nn("CREATE_TIME", _BI),
            _nn("LAST_ACCESS_TIME", _BI),
            _c("PART_NAME", _v(767)),
            _c("SD_ID", _B),
            _c("TBL_ID", _B),
            _c("WRITE_ID", _B, default="0"),  # 3.1.0 as TBLS.WRITE_ID
        ],
        "pk": ["PART_ID"],
        "indexes": [
            _ix("UNIQUEPARTITION", ["PART_NAME", "TBL_ID"], unique=True, constraint=True),
            _ix("PARTITIONS_N49", ["TBL_ID"]),
            _ix("PARTITIONS_N50", ["SD_ID"]),
        ],
        "fks": [_fk(["TBL_ID"], "TBLS", ["TBL_ID"]), _fk(["SD_ID"], "SDS", ["SD_ID"])],
        "versions": "34",
    },
    "PARTITION_KEYS": {
        "mysql_bin": True,
        "cols": [
            _nn("TBL_ID", _B),
            _c("PKEY_COMMENT", _v(4000)),
            _nn("PKEY_NAME", _v(128)),
            _nn("PKEY_TYPE", _v(767)),
            _nn("INTEGER_IDX", _BI),
        ],
        "pk": ["TBL_ID", "PKEY_NAME"],
        "indexes": [_ix("PARTITION_KEYS_N49", ["TBL_ID"])],
        "fks": [_fk(["TBL_ID"], "TBLS", ["TBL_ID"])],
        "versions": "34",
    },
    "PARTITION_KEY_VALS": {
        "mysql_bin": True,
        "cols": [_nn("PART_ID", _B), _c("PART_KEY_VAL", _v(256)), _nn("INTEGER_IDX", _BI)],
        "pk": ["PART_ID", "INTEGER_IDX"],
        "indexes": [_ix("PARTITION_KEY_VALS_N49", ["PART_ID"])],
        "fks": [_fk(["PART_ID"], "PARTITIONS", ["PART_ID"])],
        "versions": "34",
    },
    "PARTITION_PARAMS": {
        "mysql_bin": True,
        # 3.1.0: varchar(4000); 4.0.0: text (MySQL MEDIUMTEXT)
        "cols": [_nn("PART_ID", _B), _nn("PARAM_KEY", _v(256)), _c("PARAM_VALUE", (_v(4000), _TXT))],
        "pk": ["PART_ID", "PARAM_KEY"],
        "indexes": [_ix("PARTITION_PARAMS_N49", ["PART_ID"])],
        "fks": [_fk(["PART_ID"], "PARTITIONS", ["PART_ID"])],
        "versions": "34",
    },
    "SEQUENCE_TABLE": {
        "mysql_bin": True,
        "cols": [_nn("SEQUENCE_NAME", _v(255)), _nn("NEXT_VAL", _B)],
        "pk": ["SEQUENCE_NAME"],
        "seed": [
            {"SEQUENCE_NAME": "org.apache.hadoop.hive.metastore.model.MNotificationLog", "NEXT_VAL": 1},
            # with TXN_WRITE_NOTIFICATION_LOG (3.1.0 and 4.0.0 scripts)
            {"SEQUENCE_NAME": "org.apache.hadoop.hive.metastore.model.MTxnWriteNotificationLog", "NEXT_VAL": 1},
        ],
        "versions": "34",
    },
    "NOTIFICATION_SEQUENCE": {
        "cols": [_nn("NNI_ID", _B), _nn("NEXT_EVENT_ID", _B)],
        "pk": ["NNI_ID"],
        "seed": [{"NNI_ID": 1, "NEXT_EVENT_ID": 1}],
        "versions": "34",
    },
}

#: ``VERSION`` row as schematool's init script writes it
SCHEMA_VERSIONS = {3: "3.1.0", 4: "4.0.0"}
VERSION_COMMENTS = {3: "Hive release version 3.1.0", 4: "Hive release version 4.0.0"}


def _has(versions: str, v: int) -> bool:
    return str(v) in versions


@dataclasses.dataclass(frozen=True)
class Flavor:
    """How one metastore database spells Hive's tables."""

    dialect: str  # "postgresql", "mysql" (also MariaDB) or "sqlite"
    hive_version: int  # 3 or 4
    txn_lower: bool  # transaction tables are lower-case (Postgres, Hive 3 style)
    schema_version: str | None = None

    @classmethod
    def default(cls, dialect: str, hive_version: int) -> "Flavor":
        return cls(
            dialect=dialect,
            hive_version=hive_version,
            txn_lower=(dialect == "postgresql" and hive_version == 3),
            schema_version=SCHEMA_VERSIONS.get(hive_version),
        )

    def lowered(self, table: str) -> bool:
        """Whether this database spells ``table`` and its columns in lower case."""
        return self.txn_lower and table in TXN_TABLES and not TXN_TABLES[table].get("quoted")

    def physical(self, table: str) -> str:
        """The table name as stored in this database."""
        return table.lower() if self.lowered(table) else table

    def column(self, table: str, col: str) -> str:
        return col.lower() if self.lowered(table) else col


class T:
    """A table clause whose columns are reached by Hive's upper-case names (``t.TXN_ID``)."""

    def __init__(self, name: str, clause: sa.TableClause, lower: bool):
        self.name = name
        self.clause = clause
        self._lower = lower

    def __getattr__(self, col: str):
        if col.startswith("_"):
            raise AttributeError(col)
        try:
            return self.clause.c[col.lower() if self._lower else col]
        except KeyError:
            raise AttributeError(f"{self.name}.{col}") from None

    def has(self, col: str) -> bool:
        return (col.lower() if self._lower else col) in self.clause.c


def _spec(table: str) -> dict:
    return TXN_TABLES.get(table) or META_TABLES[table]


def columns_for(table: str, hive_version: int) -> list[tuple]:
    return [c for c in _spec(table)["cols"] if _has(c[3], hive_version)]


def tables_for(hive_version: int) -> list[str]:
    names = [n for n, s in META_TABLES.items() if _has(s["versions"], hive_version)]
    names += [n for n, s in TXN_TABLES.items() if _has(s["versions"], hive_version)]
    return names


class Tables:
    """Query-side table clauses for one :class:`Flavor` (``tables.TXNS.TXN_ID``)."""

    def __init__(self, flavor: Flavor, present_columns: dict[str, set[str]] | None = None):
        self.flavor = flavor
        self._cache: dict[str, T] = {}
        self._present = present_columns

    def exists(self, table: str) -> bool:
        """Whether the connected database has ``table`` (a schema made by an older acidctl or
        a trimmed test schema may lack the tables acidctl only reads for extra facts)."""
        return self._present is None or table in self._present

    def __getattr__(self, table: str) -> T:
        if table.startswith("_"):
            raise AttributeError(table)
        if table not in self._cache:
            if table not in TXN_TABLES and table not in META_TABLES:
                raise AttributeError(table)
            f = self.flavor
            lower = f.lowered(table)
            cols = [c[0] for c in _spec(table)["cols"]]
            if self._present is not None and table in self._present:
                have = self._present[table]
                cols = [c for c in cols if c.upper() in have]
            else:
                cols = [c[0] for c in columns_for(table, f.hive_version)]
            clause = sa.table(f.physical(table), *[sa.column(f.column(table, c)) for c in cols])
            self._cache[table] = T(table, clause, lower)
        return self._cache[table]


# ---------------------------------------------------------------------------------------
# DDL (metastore init)
# ---------------------------------------------------------------------------------------


def pick(value: Any, hive_version: int, dialect: str) -> Any:
    """Resolve a per-dialect dict and/or a ``(hive3, hive4)`` pair of the table descriptions."""
    if isinstance(value, dict):
        value = value.get(dialect, value.get("*"))
    if isinstance(value, tuple):
        value = value[0] if hive_version == 3 else value[1]
    return value


def _sa_type(code: str, dialect: str, *, generated_pk: bool = False, collation: str | None = None):
    from sqlalchemy.dialects import mysql

    if code == _B:
        if generated_pk and dialect == "sqlite":
            return sa.Integer()  # INTEGER PRIMARY KEY = SQLite's rowid alias
        return sa.BigInteger()
    if code == _I:
        return sa.Integer()
    if code == _C1:
        return sa.CHAR(1)
    if code == _TS:
        return sa.TIMESTAMP()
    if code == _TXT:
        return mysql.MEDIUMTEXT(collation=collation) if dialect == "mysql" else sa.Text()
    if code == _LTXT:
        return mysql.LONGTEXT() if dialect == "mysql" else sa.Text()
    if code == _BIN:
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import BYTEA

            return BYTEA()
        return sa.VARBINARY(2048) if dialect == "mysql" else sa.LargeBinary()
    if code == _BOOL:
        if dialect == "mysql":
            return mysql.BIT(1)
        return sa.Boolean(create_constraint=False)
    if code.startswith("varchar"):
        return sa.String(int(code[7:]), collation=collation)
    raise ValueError(code)


def _default_sql(value: str, dialect: str) -> str:
    if value == _FALSE:
        return "false" if dialect == "postgresql" else "0"
    return value


def index_name(spec: dict, table: str, flavor: Flavor) -> str:
    """An index's name as stored: unquoted (lower-case) names where Hive's Postgres script
    leaves them unquoted — every Hive 3 transaction index, a few Hive 4 ones."""
    name = pick(spec["name"], flavor.hive_version, flavor.dialect)
    if flavor.dialect == "postgresql" and table in TXN_TABLES and (flavor.txn_lower or spec["pg_lower"]):
        return name.lower()
    return name


def generated_column(table: str, hive_version: int) -> str | None:
    """The column the database generates (Hive 4 ``TXNS.TXN_ID``), if any."""
    for col, vers in _spec(table).get("generated", {}).items():
        if _has(vers, hive_version):
            return col
    return None


def seed_rows(table: str, hive_version: int) -> list[dict]:
    """The rows schematool's init script inserts into ``table`` (besides ``VERSION``)."""
    out = []
    for row in _spec(table).get("seed", ()):
        if _has(row.get("_versions", "34"), hive_version):
            out.append({k: v for k, v in row.items() if not k.startswith("_")})
    return out


def build_metadata(flavor: Flavor) -> sa.MetaData:
    """SQLAlchemy ``MetaData`` with Hive's tables for ``flavor`` (used by ``metastore init``)."""
    md = sa.MetaData()
    v, d = flavor.hive_version, flavor.dialect
    names = tables_for(v)
    for name in names:
        spec = _spec(name)
        pk = list(spec.get("pk", ()))
        gen = generated_column(name, v)
        cols: list[sa.schema.SchemaItem] = []
        for cname, ctype, nullable, _vers, opts in columns_for(name, v):
            gen_pk = cname == gen
            kw: dict[str, Any] = {}
            default = pick(opts.get("default"), v, d)
            if default is not None:
                kw["server_default"] = sa.text(_default_sql(default, d))
            # Hive's MySQL script: most metadata name columns are latin1_bin (case-sensitive)
            coll = "latin1_bin" if (d == "mysql" and spec.get("mysql_bin") and opts.get("bin", True)) else None
            cols.append(
                sa.Column(
                    flavor.column(name, cname),
                    _sa_type(pick(ctype, v, d), d, generated_pk=gen_pk, collation=coll),
                    primary_key=cname in pk,
                    nullable=bool(pick(nullable, v, d)) and cname not in pk,
                    autoincrement=True if gen_pk else False,
                    **kw,
                )
            )
        for fk in spec.get("fks", ()):
            if _has(fk["versions"], v) and fk["ref"] in names:
                ref = flavor.physical(fk["ref"])
                cols.append(
                    sa.ForeignKeyConstraint(
                        [flavor.column(name, c) for c in fk["cols"]],
                        [f"{ref}.{flavor.column(fk['ref'], c)}" for c in fk["ref_cols"]],
                        # Hive's Postgres script declares the metadata foreign keys DEFERRABLE
                        deferrable=True if (d == "postgresql" and name in META_TABLES) else None,
                    )
                )
        kwargs: dict[str, Any] = {}
        if d == "mysql":
            kwargs.update(mysql_engine="InnoDB", mysql_charset="latin1")
        if gen and d == "sqlite":
            kwargs["sqlite_autoincrement"] = True  # never reuse a txn id, as a sequence does
        t = sa.Table(flavor.physical(name), md, *cols, **kwargs)
        for ix in spec.get("indexes", ()):
            if not _has(ix["versions"], v) or (ix["dialects"] and d not in ix["dialects"]):
                continue
            iname = index_name(ix, name, flavor)
            icols = [t.c[flavor.column(name, c)] for c in ix["cols"]]
            if ix["constraint"]:
                t.append_constraint(sa.UniqueConstraint(*icols, name=iname))
            else:
                ikw = {"postgresql_using": ix["using"]} if ix["using"] else {}
                sa.Index(iname, *icols, unique=ix["unique"], **ikw)
    return md


# Extra indexes acidctl recommends and `metastore init` creates (not part of Hive's DDL) —
# none: acidctl's queries use Hive's own indexes (see bench/show.py).


# =======================================================================================
# Hive 2.3 (issue #12 part 2) — a separate, self-contained addition keyed by version 2.
# Used only by acidctl.metastore.hive2 (2.3 metastores: `show`, snapshots, upgrade-check);
# nothing above reads it. The transaction tables of hive-txn-schema-2.3.0 (spec
# insert-only-and-hive2.md B.8): no TXN_TYPE, no write-id tables or columns, CQ/CC_HIGHEST_TXN_ID,
# nullable TC_TXNID/CTC_TXNID/HL_TXNID. Same identifier rules as Hive 3 (Postgres: unquoted,
# i.e. lower-case, transaction tables; quoted upper-case metadata tables).
# =======================================================================================

HIVE2_SCHEMA_VERSION = "2.3.0"

HIVE2_TXN_TABLES: dict[str, dict[str, Any]] = {
    "TXNS": {
        "cols": [
            ("TXN_ID", _B, False),
            ("TXN_STATE", _C1, False),
            ("TXN_STARTED", _B, False),
            ("TXN_LAST_HEARTBEAT", _B, False),
            ("TXN_USER", _v(128), False),
            ("TXN_HOST", _v(128), False),
            ("TXN_AGENT_INFO", _v(128), True),
            ("TXN_META_INFO", _v(128), True),
            ("TXN_HEARTBEAT_COUNT", _I, True),
        ],
        "pk": ["TXN_ID"],
    },
    "TXN_COMPONENTS": {
        "cols": [
            ("TC_TXNID", _B, True),
            ("TC_DATABASE", _v(128), False),
            ("TC_TABLE", _v(128), True),
            ("TC_PARTITION", _v(767), True),
            ("TC_OPERATION_TYPE", _C1, False),
        ]
    },
    "COMPLETED_TXN_COMPONENTS": {
        "cols": [
            ("CTC_TXNID", _B, True),
            ("CTC_DATABASE", _v(128), False),
            ("CTC_TABLE", _v(256), True),
            ("CTC_PARTITION", _v(767), True),
        ]
    },
    "NEXT_TXN_ID": {"cols": [("NTXN_NEXT", _B, False)]},
    "HIVE_LOCKS": {
        "cols": [
            ("HL_LOCK_EXT_ID", _B, False),
            ("HL_LOCK_INT_ID", _B, False),
            ("HL_TXNID", _B, True),
            ("HL_DB", _v(128), False),
            ("HL_TABLE", _v(128), True),
            ("HL_PARTITION", _v(767), True),
            ("HL_LOCK_STATE", _C1, False),
            ("HL_LOCK_TYPE", _C1, False),
            ("HL_LAST_HEARTBEAT", _B, False),
            ("HL_ACQUIRED_AT", _B, True),
            ("HL_USER", _v(128), False),
            ("HL_HOST", _v(128), False),
            ("HL_HEARTBEAT_COUNT", _I, True),
            ("HL_AGENT_INFO", _v(128), True),
            ("HL_BLOCKEDBY_EXT_ID", _B, True),
            ("HL_BLOCKEDBY_INT_ID", _B, True),
        ],
        "pk": ["HL_LOCK_EXT_ID", "HL_LOCK_INT_ID"],
    },
    "NEXT_LOCK_ID": {"cols": [("NL_NEXT", _B, False)]},
    "COMPACTION_QUEUE": {
        "cols": [
            ("CQ_ID", _B, False),
            ("CQ_DATABASE", _v(128), False),
            ("CQ_TABLE", _v(128), False),
            ("CQ_PARTITION", _v(767), True),
            ("CQ_STATE", _C1, False),
            ("CQ_TYPE", _C1, False),
            ("CQ_TBLPROPERTIES", _v(2048), True),
            ("CQ_WORKER_ID", _v(128), True),
            ("CQ_START", _B, True),
            ("CQ_RUN_AS", _v(128), True),
            ("CQ_HIGHEST_TXN_ID", _B, True),
            ("CQ_META_INFO", _BIN, True),
            ("CQ_HADOOP_JOB_ID", _v(32), True),
        ],
        "pk": ["CQ_ID"],
    },
    "NEXT_COMPACTION_QUEUE_ID": {"cols": [("NCQ_NEXT", _B, False)]},
    "COMPLETED_COMPACTIONS": {
        "cols": [
            ("CC_ID", _B, False),
            ("CC_DATABASE", _v(128), False),
            ("CC_TABLE", _v(128), False),
            ("CC_PARTITION", _v(767), True),
            ("CC_STATE", _C1, False),
            ("CC_TYPE", _C1, False),
            ("CC_TBLPROPERTIES", _v(2048), True),
            ("CC_WORKER_ID", _v(128), True),
            ("CC_START", _B, True),
            ("CC_END", _B, True),
            ("CC_RUN_AS", _v(128), True),
            ("CC_HIGHEST_TXN_ID", _B, True),
            ("CC_META_INFO", _BIN, True),
            ("CC_HADOOP_JOB_ID", _v(32), True),
        ],
        "pk": ["CC_ID"],
    },
    "AUX_TABLE": {
        "cols": [("MT_KEY1", _v(128), False), ("MT_KEY2", _B, False), ("MT_COMMENT", _v(255), True)],
        "pk": ["MT_KEY1", "MT_KEY2"],
    },
    "WRITE_SET": {
        "cols": [
            ("WS_DATABASE", _v(128), False),
            ("WS_TABLE", _v(128), False),
            ("WS_PARTITION", _v(767), True),
            ("WS_TXNID", _B, False),
            ("WS_COMMIT_ID", _B, False),
            ("WS_OPERATION_TYPE", _C1, False),
        ]
    },
}

#: metadata columns of META_TABLES (Hive 3 set) that a 2.3 schema lacks (catalogs: 3.0; WRITE_ID: 3.1)
HIVE2_META_ABSENT: dict[str, set[str]] = {"DBS": {"CTLG_NAME"}, "TBLS": {"WRITE_ID"}, "PARTITIONS": {"WRITE_ID"}}


def hive2_meta_columns(table: str) -> list[tuple]:
    """(name, type, nullable) of a metadata table in a Hive 2.3 schema."""
    absent = HIVE2_META_ABSENT.get(table, set())
    return [c[:3] for c in columns_for(table, 3) if c[0] not in absent]
