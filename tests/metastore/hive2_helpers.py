"""Populate a Hive 2.3 metastore (created by acidctl.metastore.hive2.init_hive2) the way Hive 2.3
leaves it: DBS/TBLS/SDS/TABLE_PARAMS/PARTITION_KEYS/PARTITIONS rows, TXNS rows only for open and
aborted txns (committed ones are deleted, B.8), NEXT_TXN_ID = last txn + 1."""

from __future__ import annotations

import itertools

import sqlalchemy as sa

_ids = itertools.count(100)


def _tables(engine):
    from acidctl.metastore.hive2 import build_metadata

    d = engine.dialect.name
    md = build_metadata("mysql" if d == "mariadb" else d)
    return {t.name.upper(): t for t in md.tables.values()}, d == "postgresql"


def _ins(conn, tables, lower, name, **values):
    t = tables[name]
    txn = name not in ("DBS", "TBLS", "SDS", "TABLE_PARAMS", "PARTITION_KEYS", "PARTITIONS")
    conn.execute(t.insert().values({(k.lower() if lower and txn else k): v for k, v in values.items()}))


def add_table(url: str, db: str, name: str, location: str, params: dict, *, keys=(), partitions=(), columns=()) -> None:
    """``partitions``: [(PART_NAME, location)]; ``keys``: [(name, type)]; ``columns``: [(name,
    type)] as CDS/COLUMNS_V2 rows of the table's SDS row."""
    engine = sa.create_engine(url)
    tables, lower = _tables(engine)
    with engine.begin() as conn:
        db_row = conn.execute(sa.select(tables["DBS"].c.DB_ID).where(tables["DBS"].c.NAME == db)).first()
        if db_row is None:
            db_id = next(_ids)
            _ins(
                conn,
                tables,
                lower,
                "DBS",
                DB_ID=db_id,
                DB_LOCATION_URI="file:/tmp/w",
                NAME=db,
                OWNER_NAME="hive",
                OWNER_TYPE="USER",
            )
        else:
            db_id = db_row[0]
        sd = next(_ids)
        cd = {}
        if columns:
            cd = {"CD_ID": next(_ids)}
            _ins(conn, tables, lower, "CDS", **cd)
            for i, (c, t) in enumerate(columns):
                _ins(conn, tables, lower, "COLUMNS_V2", CD_ID=cd["CD_ID"], COLUMN_NAME=c, TYPE_NAME=t, INTEGER_IDX=i)
        _ins(
            conn,
            tables,
            lower,
            "SDS",
            SD_ID=sd,
            LOCATION=location,
            NUM_BUCKETS=2,
            IS_COMPRESSED=False,
            IS_STOREDASSUBDIRECTORIES=False,
            **cd,
        )
        tid = next(_ids)
        _ins(
            conn,
            tables,
            lower,
            "TBLS",
            TBL_ID=tid,
            CREATE_TIME=0,
            DB_ID=db_id,
            LAST_ACCESS_TIME=0,
            OWNER="hive",
            RETENTION=0,
            SD_ID=sd,
            TBL_NAME=name,
            TBL_TYPE="MANAGED_TABLE",
            IS_REWRITE_ENABLED=False,
        )
        for k, v in params.items():
            _ins(conn, tables, lower, "TABLE_PARAMS", TBL_ID=tid, PARAM_KEY=k, PARAM_VALUE=v)
        for i, (k, t) in enumerate(keys):
            _ins(conn, tables, lower, "PARTITION_KEYS", TBL_ID=tid, PKEY_NAME=k, PKEY_TYPE=t, INTEGER_IDX=i)
        for pname, ploc in partitions:
            psd = next(_ids)
            _ins(
                conn,
                tables,
                lower,
                "SDS",
                SD_ID=psd,
                LOCATION=ploc,
                NUM_BUCKETS=2,
                IS_COMPRESSED=False,
                IS_STOREDASSUBDIRECTORIES=False,
            )
            _ins(
                conn,
                tables,
                lower,
                "PARTITIONS",
                PART_ID=next(_ids),
                CREATE_TIME=0,
                LAST_ACCESS_TIME=0,
                PART_NAME=pname,
                SD_ID=psd,
                TBL_ID=tid,
            )
    engine.dispose()


def set_txns(url: str, states: dict[int, str], *, next_txn: int, components: dict[int, tuple[str, str]] = None) -> None:
    """TXNS rows for open ('o') / aborted ('a') txns, NEXT_TXN_ID, and TXN_COMPONENTS."""
    engine = sa.create_engine(url)
    tables, lower = _tables(engine)
    with engine.begin() as conn:
        conn.execute(tables["NEXT_TXN_ID"].update().values({("ntxn_next" if lower else "NTXN_NEXT"): next_txn}))
        for t, s in sorted(states.items()):
            _ins(
                conn,
                tables,
                lower,
                "TXNS",
                TXN_ID=t,
                TXN_STATE=s,
                TXN_STARTED=1700000000000 + t,
                TXN_LAST_HEARTBEAT=1700000000000 + t,
                TXN_USER="hive",
                TXN_HOST="h1",
            )
        for t, (db, tbl) in (components or {}).items():
            _ins(conn, tables, lower, "TXN_COMPONENTS", TC_TXNID=t, TC_DATABASE=db, TC_TABLE=tbl, TC_OPERATION_TYPE="u")
    engine.dispose()


def add_completed_components(url: str, rows: list[tuple[int, str, str, str | None]]) -> None:
    """``COMPLETED_TXN_COMPONENTS`` rows (txn, db, table, partition), as a committed write leaves
    them in 2.3 (no CTC_TIMESTAMP / CTC_WRITEID columns)."""
    engine = sa.create_engine(url)
    tables, lower = _tables(engine)
    with engine.begin() as conn:
        for t, db, tbl, part in rows:
            _ins(
                conn,
                tables,
                lower,
                "COMPLETED_TXN_COMPONENTS",
                CTC_TXNID=t,
                CTC_DATABASE=db,
                CTC_TABLE=tbl,
                CTC_PARTITION=part,
            )
    engine.dispose()


def add_compaction(
    url: str,
    *,
    queue: bool,
    cid: int,
    db: str,
    table: str,
    partition,
    state: str,
    ctype: str,
    start=None,
    end=None,
    worker=None,
    highest: int | None = None,
) -> None:
    engine = sa.create_engine(url)
    tables, lower = _tables(engine)
    with engine.begin() as conn:
        if queue:
            _ins(
                conn,
                tables,
                lower,
                "COMPACTION_QUEUE",
                CQ_ID=cid,
                CQ_DATABASE=db,
                CQ_TABLE=table,
                CQ_PARTITION=partition,
                CQ_STATE=state,
                CQ_TYPE=ctype,
                CQ_WORKER_ID=worker,
                CQ_START=start,
                CQ_HIGHEST_TXN_ID=highest,
            )
        else:
            _ins(
                conn,
                tables,
                lower,
                "COMPLETED_COMPACTIONS",
                CC_ID=cid,
                CC_DATABASE=db,
                CC_TABLE=table,
                CC_PARTITION=partition,
                CC_STATE=state,
                CC_TYPE=ctype,
                CC_WORKER_ID=worker,
                CC_START=start,
                CC_END=end,
                CC_HIGHEST_TXN_ID=highest,
            )
    engine.dispose()
