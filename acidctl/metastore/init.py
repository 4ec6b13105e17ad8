"""``acidctl metastore init``: create Hive's transaction tables plus the metadata tables acidctl
reads, for the embedded SQLite default, demos and tests.

Names, case and quoting follow metastore.md §1.1 (Postgres Hive 3: lower-case transaction
tables; everything else upper-case). Seed rows as Hive's scripts insert them: one row in each
sequence table (value 1), Hive 4's ``TXNS`` seed row ``(0, 'c', 0, 0, '', '')`` and
``TXN_LOCK_TBL`` row, a ``VERSION`` row, and the ``default`` database. Refuses (exit 6) to
touch a database that already has any of these tables.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from acidctl.errors import RefusedError, UsageError
from acidctl.metastore.connection import (create_engine, db_errors, parse_hive_version, safe_url,
                                          _table_names)

INIT_COMMENT = "acidctl metastore init"


@dataclasses.dataclass
class InitResult:
    url: str
    hive_version: int
    schema_version: str
    tables: list[str]

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def init_metastore(url_or_engine: Any, *, hive_version: Any, warehouse: str = "file:/tmp/acidctl-warehouse") -> InitResult:
    """Create the tables in an empty database. ``hive_version``: 3 or 4."""
    import sqlalchemy as sa

    from acidctl.metastore.schema import SCHEMA_VERSIONS, Flavor, build_metadata

    hv = parse_hive_version(hive_version)
    if hv is None:
        raise UsageError("--hive-version 3 or 4 is required")
    if hasattr(url_or_engine, "dialect"):
        engine = url_or_engine
    else:
        engine = create_engine(url_or_engine, must_exist=False)
    dialect = engine.dialect.name
    if dialect == "mariadb":
        dialect = "mysql"
    flavor = Flavor.default(dialect, hv)
    md = build_metadata(flavor)
    with db_errors(engine.url):
        with engine.connect() as conn:
            existing = {n.upper() for n in _table_names(conn)}
            clash = sorted(existing & {t.name.upper() for t in md.tables.values()})
            conn.rollback()
            if clash:
                raise RefusedError(
                    f"{safe_url(engine.url)} already has metastore tables ({', '.join(clash[:5])}"
                    f"{', ...' if len(clash) > 5 else ''}); refusing to touch it")
        with engine.begin() as conn:
            md.create_all(conn)
            T = {t.name.upper(): t for t in md.tables.values()}

            def ins(name: str, **values):
                t = T[name]
                conn.execute(t.insert().values({flavor.column(name, k): v for k, v in values.items()}))

            sv = SCHEMA_VERSIONS[hv]
            ins("VERSION", VER_ID=1, SCHEMA_VERSION=sv, VERSION_COMMENT=f"{INIT_COMMENT} (Hive {sv})")
            ins("NEXT_LOCK_ID", NL_NEXT=1)
            ins("NEXT_COMPACTION_QUEUE_ID", NCQ_NEXT=1)
            if hv == 3:
                ins("NEXT_TXN_ID", NTXN_NEXT=1)
            else:
                ins("TXN_LOCK_TBL", TXN_LOCK=1)
                if dialect == "mysql":
                    conn.exec_driver_sql("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')")
                ins("TXNS", TXN_ID=0, TXN_STATE="c", TXN_STARTED=0, TXN_LAST_HEARTBEAT=0,
                    TXN_USER="", TXN_HOST="")
            ins("DBS", DB_ID=1, DESC="Default Hive database", DB_LOCATION_URI=warehouse.rstrip("/"),
                NAME="default", OWNER_NAME="public", OWNER_TYPE="ROLE", CTLG_NAME="hive")
            for mutex in ("CheckLock", "Initiator", "Cleaner", "HouseKeeper", "CompactionHistory",
                          "WriteSetCleaner", "CompactionScheduler", "WriteIdAllocator",
                          "MaterializationRebuild"):
                ins("AUX_TABLE", MT_KEY1=mutex, MT_KEY2=0)
        if dialect == "postgresql" and hv == 4:
            # keep the generated TXN_ID sequence above the seed row
            with engine.begin() as conn:
                conn.execute(sa.text("SELECT setval(pg_get_serial_sequence('\"TXNS\"', 'TXN_ID'), 1, false)"))
    return InitResult(url=safe_url(engine.url), hive_version=hv, schema_version=SCHEMA_VERSIONS[hv],
                      tables=sorted(t.name for t in md.tables.values()))
