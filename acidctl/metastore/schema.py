"""Hive's metastore tables as acidctl reads (and, for ``metastore init``, creates) them.

One column list per table and Hive version (../shared/spec/metastore.md §2–§3) is the single
source for both the query-side table clauses and the DDL. Identifier case follows §1.1:

* PostgreSQL, Hive 3: transaction tables and columns are unquoted, i.e. **lower-case**
  (``txns.txn_id``); Hive 4: quoted upper-case (``"TXNS"."TXN_ID"``);
* metadata tables (``"DBS"``, ``"TBLS"``, ``"VERSION"``, ...) are quoted upper-case everywhere;
* MySQL/MariaDB and SQLite: the exact upper-case names.

SQLAlchemy quotes a name only when it is not all lower-case, which gives exactly these
spellings. This module imports SQLAlchemy; CLI modules import it inside command bodies only.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import sqlalchemy as sa

# (name, type, nullable) — a type is one of the short codes below; "pk" marks a primary key.
_B, _I, _C1, _TS, _TXT, _BIN, _BOOL = "bigint", "int", "char1", "timestamp", "text", "binary", "bool"


def _v(n: int) -> str:
    return f"varchar{n}"


# ---------------------------------------------------------------------------------------
# Transaction tables (§3). Each entry: list of (column, type, nullable, versions)
# versions: "34" both, "3" Hive 3 only, "4" Hive 4 only. Width differences as (h3, h4).
# ---------------------------------------------------------------------------------------

TXN_TABLES: dict[str, dict[str, Any]] = {
    "TXNS": {
        "cols": [
            ("TXN_ID", _B, False, "34"),
            ("TXN_STATE", _C1, False, "34"),
            ("TXN_STARTED", _B, False, "34"),
            ("TXN_LAST_HEARTBEAT", _B, False, "34"),
            ("TXN_USER", _v(128), False, "34"),
            ("TXN_HOST", _v(128), False, "34"),
            ("TXN_AGENT_INFO", _v(128), True, "34"),
            ("TXN_META_INFO", _v(128), True, "34"),
            ("TXN_HEARTBEAT_COUNT", _I, True, "34"),
            ("TXN_TYPE", _I, True, "34"),
        ],
        "pk": ["TXN_ID"],
        "versions": "34",
    },
    "TXN_COMPONENTS": {
        "cols": [
            ("TC_TXNID", _B, False, "34"),
            ("TC_DATABASE", _v(128), False, "34"),
            ("TC_TABLE", (_v(128), _v(256)), True, "34"),
            ("TC_PARTITION", _v(767), True, "34"),
            ("TC_OPERATION_TYPE", _C1, False, "34"),
            ("TC_WRITEID", _B, True, "34"),
        ],
        "indexes": [("TC_TXNID_INDEX", ["TC_TXNID"], False)],
        "versions": "34",
    },
    "COMPLETED_TXN_COMPONENTS": {
        "cols": [
            ("CTC_TXNID", _B, False, "34"),
            ("CTC_DATABASE", _v(128), False, "34"),
            ("CTC_TABLE", _v(256), True, "34"),
            ("CTC_PARTITION", _v(767), True, "34"),
            ("CTC_TIMESTAMP", _TS, False, "34"),
            ("CTC_WRITEID", _B, True, "34"),
            ("CTC_UPDATE_DELETE", _C1, False, "34"),
        ],
        "indexes": [("COMPLETED_TXN_COMPONENTS_INDEX", ["CTC_DATABASE", "CTC_TABLE", "CTC_PARTITION"], False)],
        "versions": "34",
    },
    "NEXT_TXN_ID": {"cols": [("NTXN_NEXT", _B, False, "3")], "versions": "3"},
    "TXN_LOCK_TBL": {"cols": [("TXN_LOCK", _B, False, "4")], "versions": "4"},
    "HIVE_LOCKS": {
        "cols": [
            ("HL_LOCK_EXT_ID", _B, False, "34"),
            ("HL_LOCK_INT_ID", _B, False, "34"),
            ("HL_TXNID", _B, False, "34"),
            ("HL_DB", _v(128), False, "34"),
            ("HL_TABLE", (_v(128), _v(256)), True, "34"),
            ("HL_PARTITION", _v(767), True, "34"),
            ("HL_LOCK_STATE", _C1, False, "34"),
            ("HL_LOCK_TYPE", _C1, False, "34"),
            ("HL_LAST_HEARTBEAT", _B, False, "34"),
            ("HL_ACQUIRED_AT", _B, True, "34"),
            ("HL_USER", _v(128), False, "34"),
            ("HL_HOST", _v(128), False, "34"),
            ("HL_HEARTBEAT_COUNT", _I, True, "34"),
            ("HL_AGENT_INFO", _v(128), True, "34"),
            ("HL_BLOCKEDBY_EXT_ID", _B, True, "34"),
            ("HL_BLOCKEDBY_INT_ID", _B, True, "34"),
        ],
        "pk": ["HL_LOCK_EXT_ID", "HL_LOCK_INT_ID"],
        "indexes": [("HL_TXNID_INDEX", ["HL_TXNID"], False)],
        "versions": "34",
    },
    "NEXT_LOCK_ID": {"cols": [("NL_NEXT", _B, False, "34")], "versions": "34"},
    "COMPACTION_QUEUE": {
        "cols": [
            ("CQ_ID", _B, False, "34"),
            ("CQ_DATABASE", _v(128), False, "34"),
            ("CQ_TABLE", (_v(128), _v(256)), False, "34"),
            ("CQ_PARTITION", _v(767), True, "34"),
            ("CQ_STATE", _C1, False, "34"),
            ("CQ_TYPE", _C1, False, "34"),
            ("CQ_TBLPROPERTIES", _v(2048), True, "34"),
            ("CQ_WORKER_ID", _v(128), True, "34"),
            ("CQ_ENQUEUE_TIME", _B, True, "4"),
            ("CQ_START", _B, True, "34"),
            ("CQ_RUN_AS", _v(128), True, "34"),
            ("CQ_HIGHEST_WRITE_ID", _B, True, "34"),
            ("CQ_META_INFO", _BIN, True, "34"),
            ("CQ_HADOOP_JOB_ID", _v(32), True, "34"),
            ("CQ_ERROR_MESSAGE", _TXT, True, "4"),
            ("CQ_NEXT_TXN_ID", _B, True, "4"),
            ("CQ_TXN_ID", _B, True, "4"),
            ("CQ_COMMIT_TIME", _B, True, "4"),
            ("CQ_INITIATOR_ID", _v(128), True, "4"),
            ("CQ_INITIATOR_VERSION", _v(128), True, "4"),
            ("CQ_WORKER_VERSION", _v(128), True, "4"),
            ("CQ_CLEANER_START", _B, True, "4"),
            ("CQ_RETRY_RETENTION", _B, False, "4"),
            ("CQ_POOL_NAME", _v(128), True, "4"),
            ("CQ_NUMBER_OF_BUCKETS", _I, True, "4"),
            ("CQ_ORDER_BY", _v(4000), True, "4"),
        ],
        "pk": ["CQ_ID"],
        "defaults": {"CQ_RETRY_RETENTION": "0"},
        "versions": "34",
    },
    "NEXT_COMPACTION_QUEUE_ID": {"cols": [("NCQ_NEXT", _B, False, "34")], "versions": "34"},
    "COMPLETED_COMPACTIONS": {
        "cols": [
            ("CC_ID", _B, False, "34"),
            ("CC_DATABASE", _v(128), False, "34"),
            ("CC_TABLE", (_v(128), _v(256)), False, "34"),
            ("CC_PARTITION", _v(767), True, "34"),
            ("CC_STATE", _C1, False, "34"),
            ("CC_TYPE", _C1, False, "34"),
            ("CC_TBLPROPERTIES", _v(2048), True, "34"),
            ("CC_WORKER_ID", _v(128), True, "34"),
            ("CC_ENQUEUE_TIME", _B, True, "4"),
            ("CC_START", _B, True, "34"),
            ("CC_END", _B, True, "34"),
            ("CC_RUN_AS", _v(128), True, "34"),
            ("CC_HIGHEST_WRITE_ID", _B, True, "34"),
            ("CC_META_INFO", _BIN, True, "34"),
            ("CC_HADOOP_JOB_ID", _v(32), True, "34"),
            ("CC_ERROR_MESSAGE", _TXT, True, "4"),
            ("CC_NEXT_TXN_ID", _B, True, "4"),
            ("CC_TXN_ID", _B, True, "4"),
            ("CC_COMMIT_TIME", _B, True, "4"),
            ("CC_INITIATOR_ID", _v(128), True, "4"),
            ("CC_INITIATOR_VERSION", _v(128), True, "4"),
            ("CC_WORKER_VERSION", _v(128), True, "4"),
            ("CC_POOL_NAME", _v(128), True, "4"),
            ("CC_NUMBER_OF_BUCKETS", _I, True, "4"),
            ("CC_ORDER_BY", _v(4000), True, "4"),
        ],
        "pk": ["CC_ID"],
        # HIVE-21487 (Hive 4 only)
        "indexes": [("COMPLETED_COMPACTIONS_RES", ["CC_DATABASE", "CC_TABLE", "CC_PARTITION"], False, "4")],
        "versions": "34",
    },
    "AUX_TABLE": {
        "cols": [("MT_KEY1", _v(128), False, "34"), ("MT_KEY2", _B, False, "34"),
                 ("MT_COMMENT", _v(255), True, "34")],
        "pk": ["MT_KEY1", "MT_KEY2"],
        "versions": "34",
    },
    "WRITE_SET": {
        "cols": [
            ("WS_DATABASE", _v(128), False, "34"),
            ("WS_TABLE", (_v(128), _v(256)), False, "34"),
            ("WS_PARTITION", _v(767), True, "34"),
            ("WS_TXNID", _B, False, "34"),
            ("WS_COMMIT_ID", _B, False, "34"),
            ("WS_OPERATION_TYPE", _C1, False, "34"),
        ],
        "versions": "34",
    },
    "TXN_TO_WRITE_ID": {
        "cols": [("T2W_TXNID", _B, False, "34"), ("T2W_DATABASE", _v(128), False, "34"),
                 ("T2W_TABLE", _v(256), False, "34"), ("T2W_WRITEID", _B, False, "34")],
        "indexes": [("TBL_TO_TXN_ID_IDX", ["T2W_DATABASE", "T2W_TABLE", "T2W_TXNID"], True),
                    ("TBL_TO_WRITE_ID_IDX", ["T2W_DATABASE", "T2W_TABLE", "T2W_WRITEID"], True)],
        "versions": "34",
    },
    "NEXT_WRITE_ID": {
        "cols": [("NWI_DATABASE", _v(128), False, "34"), ("NWI_TABLE", _v(256), False, "34"),
                 ("NWI_NEXT", _B, False, "34")],
        "indexes": [("NEXT_WRITE_ID_IDX", ["NWI_DATABASE", "NWI_TABLE"], True)],
        "versions": "34",
    },
    "MIN_HISTORY_LEVEL": {
        "cols": [("MHL_TXNID", _B, False, "34"), ("MHL_MIN_OPEN_TXNID", _B, False, "34")],
        "pk": ["MHL_TXNID"],
        "indexes": [("MIN_HISTORY_LEVEL_IDX", ["MHL_MIN_OPEN_TXNID"], False)],
        "versions": "34",
    },
    "MIN_HISTORY_WRITE_ID": {
        "cols": [("MH_TXNID", _B, False, "4"), ("MH_DATABASE", _v(128), False, "4"),
                 ("MH_TABLE", _v(256), False, "4"), ("MH_WRITEID", _B, False, "4")],
        "versions": "4",
    },
    "MATERIALIZATION_REBUILD_LOCKS": {
        "cols": [("MRL_TXN_ID", _B, False, "34"), ("MRL_DB_NAME", _v(128), False, "34"),
                 ("MRL_TBL_NAME", _v(256), False, "34"), ("MRL_LAST_HEARTBEAT", _B, False, "34")],
        "pk": ["MRL_TXN_ID"],
        "versions": "34",
    },
    "TXN_WRITE_NOTIFICATION_LOG": {
        "cols": [("WNL_ID", _B, False, "4"), ("WNL_TXNID", _B, False, "4"), ("WNL_WRITEID", _B, False, "4"),
                 ("WNL_DATABASE", _v(128), False, "4"), ("WNL_TABLE", _v(256), False, "4"),
                 ("WNL_PARTITION", _v(767), False, "4"), ("WNL_TABLE_OBJ", _TXT, False, "4"),
                 ("WNL_PARTITION_OBJ", _TXT, True, "4"), ("WNL_FILES", _TXT, True, "4"),
                 ("WNL_EVENT_TIME", _I, False, "4")],
        "pk": ["WNL_TXNID", "WNL_DATABASE", "WNL_TABLE", "WNL_PARTITION"],
        "versions": "4",
    },
    "COMPACTION_METRICS_CACHE": {
        "cols": [("CMC_DATABASE", _v(128), False, "4"), ("CMC_TABLE", _v(256), False, "4"),
                 ("CMC_PARTITION", _v(767), True, "4"), ("CMC_METRIC_TYPE", _v(128), False, "4"),
                 ("CMC_METRIC_VALUE", _I, False, "4"), ("CMC_VERSION", _I, False, "4")],
        "versions": "4",
    },
    "REPL_TXN_MAP": {
        "cols": [("RTM_REPL_POLICY", _v(256), False, "34"), ("RTM_SRC_TXN_ID", _B, False, "34"),
                 ("RTM_TARGET_TXN_ID", _B, False, "34")],
        "pk": ["RTM_REPL_POLICY", "RTM_SRC_TXN_ID"],
        "versions": "34",
    },
}

# Metadata tables: quoted upper-case on every database (§1.1). Only the columns acidctl reads
# or `metastore init` needs (a subset of Hive's DDL, same names and types).
META_TABLES: dict[str, dict[str, Any]] = {
    "VERSION": {
        "cols": [("VER_ID", _B, False, "34"), ("SCHEMA_VERSION", _v(127), False, "34"),
                 ("VERSION_COMMENT", _v(255), True, "34")],
        "pk": ["VER_ID"], "versions": "34",
    },
    "DBS": {
        "cols": [("DB_ID", _B, False, "34"), ("DESC", _v(4000), True, "34"),
                 ("DB_LOCATION_URI", _v(4000), False, "34"), ("NAME", _v(128), True, "34"),
                 ("OWNER_NAME", _v(128), True, "34"), ("OWNER_TYPE", _v(10), True, "34"),
                 ("CTLG_NAME", _v(256), False, "34"),
                 ("DB_MANAGED_LOCATION_URI", _v(4000), True, "4")],
        "pk": ["DB_ID"],
        "indexes": [("UNIQUE_DATABASE", ["NAME", "CTLG_NAME"], True)],
        "defaults": {"CTLG_NAME": "'hive'"},
        "versions": "34",
    },
    "CDS": {"cols": [("CD_ID", _B, False, "34")], "pk": ["CD_ID"], "versions": "34"},
    "COLUMNS_V2": {
        "cols": [("CD_ID", _B, False, "34"), ("COMMENT", _v(4000), True, "34"),
                 ("COLUMN_NAME", _v(767), False, "34"), ("TYPE_NAME", _TXT, True, "34"),
                 ("INTEGER_IDX", _I, False, "34")],
        "pk": ["CD_ID", "COLUMN_NAME"], "versions": "34",
    },
    "SDS": {
        "cols": [("SD_ID", _B, False, "34"), ("CD_ID", _B, True, "34"),
                 ("INPUT_FORMAT", _v(4000), True, "34"), ("IS_COMPRESSED", _BOOL, False, "34"),
                 ("IS_STOREDASSUBDIRECTORIES", _BOOL, False, "34"), ("LOCATION", _v(4000), True, "34"),
                 ("NUM_BUCKETS", _I, False, "34"), ("OUTPUT_FORMAT", _v(4000), True, "34"),
                 ("SERDE_ID", _B, True, "34")],
        "pk": ["SD_ID"], "versions": "34",
    },
    "TBLS": {
        "cols": [("TBL_ID", _B, False, "34"), ("CREATE_TIME", _I, False, "34"),
                 ("DB_ID", _B, True, "34"), ("LAST_ACCESS_TIME", _I, False, "34"),
                 ("OWNER", _v(767), True, "34"), ("OWNER_TYPE", _v(10), True, "34"),
                 ("RETENTION", _I, False, "34"), ("SD_ID", _B, True, "34"),
                 ("TBL_NAME", _v(256), True, "34"), ("TBL_TYPE", _v(128), True, "34"),
                 ("VIEW_EXPANDED_TEXT", _TXT, True, "34"), ("VIEW_ORIGINAL_TEXT", _TXT, True, "34"),
                 ("IS_REWRITE_ENABLED", _BOOL, False, "34"), ("WRITE_ID", _B, True, "4")],
        "pk": ["TBL_ID"],
        "indexes": [("UNIQUETABLE", ["TBL_NAME", "DB_ID"], True)],
        "versions": "34",
    },
    "TABLE_PARAMS": {
        "cols": [("TBL_ID", _B, False, "34"), ("PARAM_KEY", _v(256), False, "34"),
                 ("PARAM_VALUE", _TXT, True, "34")],
        "pk": ["TBL_ID", "PARAM_KEY"], "versions": "34",
    },
    "PARTITIONS": {
        "cols": [("PART_ID", _B, False, "34"), ("CREATE_TIME", _I, False, "34"),
                 ("LAST_ACCESS_TIME", _I, False, "34"), ("PART_NAME", _v(767), True, "34"),
                 ("SD_ID", _B, True, "34"), ("TBL_ID", _B, True, "34"), ("WRITE_ID", _B, True, "4")],
        "pk": ["PART_ID"],
        "indexes": [("UNIQUEPARTITION", ["PART_NAME", "TBL_ID"], True)],
        "versions": "34",
    },
    "PARTITION_KEYS": {
        "cols": [("TBL_ID", _B, False, "34"), ("PKEY_COMMENT", _v(4000), True, "34"),
                 ("PKEY_NAME", _v(128), False, "34"), ("PKEY_TYPE", _v(767), False, "34"),
                 ("INTEGER_IDX", _I, False, "34")],
        "pk": ["TBL_ID", "PKEY_NAME"], "versions": "34",
    },
    "PARTITION_PARAMS": {
        "cols": [("PART_ID", _B, False, "34"), ("PARAM_KEY", _v(256), False, "34"),
                 ("PARAM_VALUE", _TXT, True, "34")],
        "pk": ["PART_ID", "PARAM_KEY"], "versions": "34",
    },
}

SCHEMA_VERSIONS = {3: "3.1.0", 4: "4.0.0"}


def _has(versions: str, v: int) -> bool:
    return str(v) in versions


@dataclasses.dataclass(frozen=True)
class Flavor:
    """How one metastore database spells Hive's tables."""

    dialect: str            # "postgresql", "mysql" (also MariaDB) or "sqlite"
    hive_version: int       # 3 or 4
    txn_lower: bool         # transaction tables are lower-case (Postgres, Hive 3 style)
    schema_version: str | None = None

    @classmethod
    def default(cls, dialect: str, hive_version: int) -> "Flavor":
        return cls(dialect=dialect, hive_version=hive_version,
                   txn_lower=(dialect == "postgresql" and hive_version == 3),
                   schema_version=SCHEMA_VERSIONS.get(hive_version))

    def physical(self, table: str) -> str:
        """The table name as stored in this database."""
        if table in TXN_TABLES and self.txn_lower:
            return table.lower()
        return table

    def column(self, table: str, col: str) -> str:
        if table in TXN_TABLES and self.txn_lower:
            return col.lower()
        return col


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

    def __getattr__(self, table: str) -> T:
        if table.startswith("_"):
            raise AttributeError(table)
        if table not in self._cache:
            if table not in TXN_TABLES and table not in META_TABLES:
                raise AttributeError(table)
            f = self.flavor
            lower = table in TXN_TABLES and f.txn_lower
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

def _sa_type(code: str | tuple, hive_version: int, dialect: str, *, generated_pk: bool = False):
    from sqlalchemy.dialects import mysql

    if isinstance(code, tuple):
        code = code[0] if hive_version == 3 else code[1]
    if code == _B:
        if generated_pk and dialect == "sqlite":
            return sa.Integer()          # INTEGER PRIMARY KEY = SQLite's rowid alias
        return sa.BigInteger()
    if code == _I:
        return sa.Integer()
    if code == _C1:
        return sa.CHAR(1)
    if code == _TS:
        return sa.TIMESTAMP()
    if code == _TXT:
        return mysql.MEDIUMTEXT() if dialect == "mysql" else sa.Text()
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
        return sa.String(int(code[7:]))
    raise ValueError(code)


def build_metadata(flavor: Flavor) -> sa.MetaData:
    """SQLAlchemy ``MetaData`` with Hive's tables for ``flavor`` (used by ``metastore init``)."""
    md = sa.MetaData()
    v, d = flavor.hive_version, flavor.dialect
    for name in tables_for(v):
        spec = _spec(name)
        pk = set(spec.get("pk", ()))
        defaults = spec.get("defaults", {})
        generated = name == "TXNS" and v == 4
        cols = []
        for cname, ctype, nullable, _vers in columns_for(name, v):
            gen_pk = generated and cname == "TXN_ID"
            kw: dict[str, Any] = {}
            if cname in defaults:
                kw["server_default"] = sa.text(defaults[cname])
            if ctype == _TS:
                kw["server_default"] = sa.text("CURRENT_TIMESTAMP")
            if ctype == _BOOL and not nullable:
                kw["server_default"] = sa.text("0" if d == "mysql" else ("false" if d == "postgresql" else "0"))
            cols.append(sa.Column(flavor.column(name, cname), _sa_type(ctype, v, d, generated_pk=gen_pk),
                                  primary_key=cname in pk, nullable=nullable and cname not in pk,
                                  autoincrement=True if gen_pk else False, **kw))
        kwargs: dict[str, Any] = {}
        if d == "mysql":
            kwargs.update(mysql_engine="InnoDB", mysql_charset="latin1")
        t = sa.Table(flavor.physical(name), md, *cols, **kwargs)
        for idx in spec.get("indexes", ()):
            iname, icols, unique = idx[0], idx[1], idx[2]
            if len(idx) > 3 and not _has(idx[3], v):
                continue
            phys = iname.lower() if (name in TXN_TABLES and flavor.txn_lower) else iname
            sa.Index(phys, *[t.c[flavor.column(name, c)] for c in icols], unique=unique)
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
    "TXNS": {"cols": [("TXN_ID", _B, False), ("TXN_STATE", _C1, False), ("TXN_STARTED", _B, False),
                      ("TXN_LAST_HEARTBEAT", _B, False), ("TXN_USER", _v(128), False),
                      ("TXN_HOST", _v(128), False), ("TXN_AGENT_INFO", _v(128), True),
                      ("TXN_META_INFO", _v(128), True), ("TXN_HEARTBEAT_COUNT", _I, True)],
             "pk": ["TXN_ID"]},
    "TXN_COMPONENTS": {"cols": [("TC_TXNID", _B, True), ("TC_DATABASE", _v(128), False),
                                ("TC_TABLE", _v(128), True), ("TC_PARTITION", _v(767), True),
                                ("TC_OPERATION_TYPE", _C1, False)]},
    "COMPLETED_TXN_COMPONENTS": {"cols": [("CTC_TXNID", _B, True), ("CTC_DATABASE", _v(128), False),
                                          ("CTC_TABLE", _v(256), True), ("CTC_PARTITION", _v(767), True)]},
    "NEXT_TXN_ID": {"cols": [("NTXN_NEXT", _B, False)]},
    "HIVE_LOCKS": {"cols": [("HL_LOCK_EXT_ID", _B, False), ("HL_LOCK_INT_ID", _B, False), ("HL_TXNID", _B, True),
                            ("HL_DB", _v(128), False), ("HL_TABLE", _v(128), True), ("HL_PARTITION", _v(767), True),
                            ("HL_LOCK_STATE", _C1, False), ("HL_LOCK_TYPE", _C1, False),
                            ("HL_LAST_HEARTBEAT", _B, False), ("HL_ACQUIRED_AT", _B, True),
                            ("HL_USER", _v(128), False), ("HL_HOST", _v(128), False),
                            ("HL_HEARTBEAT_COUNT", _I, True), ("HL_AGENT_INFO", _v(128), True),
                            ("HL_BLOCKEDBY_EXT_ID", _B, True), ("HL_BLOCKEDBY_INT_ID", _B, True)],
                   "pk": ["HL_LOCK_EXT_ID", "HL_LOCK_INT_ID"]},
    "NEXT_LOCK_ID": {"cols": [("NL_NEXT", _B, False)]},
    "COMPACTION_QUEUE": {"cols": [("CQ_ID", _B, False), ("CQ_DATABASE", _v(128), False), ("CQ_TABLE", _v(128), False),
                                  ("CQ_PARTITION", _v(767), True), ("CQ_STATE", _C1, False), ("CQ_TYPE", _C1, False),
                                  ("CQ_TBLPROPERTIES", _v(2048), True), ("CQ_WORKER_ID", _v(128), True),
                                  ("CQ_START", _B, True), ("CQ_RUN_AS", _v(128), True),
                                  ("CQ_HIGHEST_TXN_ID", _B, True), ("CQ_META_INFO", _BIN, True),
                                  ("CQ_HADOOP_JOB_ID", _v(32), True)],
                         "pk": ["CQ_ID"]},
    "NEXT_COMPACTION_QUEUE_ID": {"cols": [("NCQ_NEXT", _B, False)]},
    "COMPLETED_COMPACTIONS": {"cols": [("CC_ID", _B, False), ("CC_DATABASE", _v(128), False),
                                       ("CC_TABLE", _v(128), False), ("CC_PARTITION", _v(767), True),
                                       ("CC_STATE", _C1, False), ("CC_TYPE", _C1, False),
                                       ("CC_TBLPROPERTIES", _v(2048), True), ("CC_WORKER_ID", _v(128), True),
                                       ("CC_START", _B, True), ("CC_END", _B, True), ("CC_RUN_AS", _v(128), True),
                                       ("CC_HIGHEST_TXN_ID", _B, True), ("CC_META_INFO", _BIN, True),
                                       ("CC_HADOOP_JOB_ID", _v(32), True)],
                              "pk": ["CC_ID"]},
    "AUX_TABLE": {"cols": [("MT_KEY1", _v(128), False), ("MT_KEY2", _B, False), ("MT_COMMENT", _v(255), True)],
                  "pk": ["MT_KEY1", "MT_KEY2"]},
    "WRITE_SET": {"cols": [("WS_DATABASE", _v(128), False), ("WS_TABLE", _v(128), False),
                           ("WS_PARTITION", _v(767), True), ("WS_TXNID", _B, False), ("WS_COMMIT_ID", _B, False),
                           ("WS_OPERATION_TYPE", _C1, False)]},
}

#: metadata columns of META_TABLES (Hive 3 set) that a 2.3 schema lacks (catalogs: 3.0)
HIVE2_META_ABSENT: dict[str, set[str]] = {"DBS": {"CTLG_NAME"}}


def hive2_meta_columns(table: str) -> list[tuple]:
    """(name, type, nullable) of a metadata table in a Hive 2.3 schema."""
    absent = HIVE2_META_ABSENT.get(table, set())
    return [c[:3] for c in columns_for(table, 3) if c[0] not in absent]
