"""Hive 2.3 metastores (ACID v1): detection, schema creation, snapshots, SHOW and table lists.

(../shared/spec/insert-only-and-hive2.md B.2, B.8, B.9, C.) A 2.3 schema has no write ids:
``TXNS`` keeps only open (``o``) and aborted (``a``) txns — a committed txn's row is deleted —,
``NEXT_TXN_ID.NTXN_NEXT − 1`` is the high-water mark, and compactions record
``CQ_HIGHEST_TXN_ID`` / ``CC_HIGHEST_TXN_ID``. Table definitions live in the Hive 2.3 block of
:mod:`acidctl.metastore.schema`; identifier case as Hive 3 (Postgres: lower-case transaction
tables, quoted upper-case metadata tables).

Kept apart from :mod:`acidctl.metastore.connection` (Hive 3/4 detection): :func:`is_hive2`
reads ``VERSION.SCHEMA_VERSION`` (``2.x``) or, without a VERSION row, looks for the 2.3-only
``CQ_HIGHEST_TXN_ID`` column. Everything here reads in one read-only transaction per call.

Writes: :class:`Hive2Metastore` is what the write steps of :mod:`acidctl.metastore.queue`,
:mod:`acidctl.metastore.cleaner` and :mod:`acidctl.compact.initiate` take to write Hive 2.3's own
protocol (its ``TxnHandler.compact``, ``CompactionTxnHandler`` and Cleaner); :func:`connect_any`
picks it for a 2.x schema. Writes are allowed on a ``2.3.x`` schema only.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from typing import Any

from acidctl.acid.hive2 import Hive2TxnList, from_states
from acidctl.errors import RefusedError, TableNotFound, UsageError
from acidctl.metastore.connection import (
    _columns,
    _table_names,
    as_engine,
    create_engine,
    db_errors,
    read_only,
    safe_url,
)
from acidctl.metastore.queries import COMPACTION_STATES_H3

INIT_COMMENT = "acidctl metastore init"
#: 2.3 AUX_TABLE mutex names (B.8)
MUTEXES = (
    "Initiator",
    "Cleaner",
    "HouseKeeper",
    "CompactionHistory",
    "CheckLock",
    "WriteSetCleaner",
    "CompactionScheduler",
)
TXN_STATES = {"o": "OPEN", "a": "ABORTED"}
#: SHOW COMPACTIONS state texts of 2.3 (B.9): the same as Hive 3.1's
COMPACTION_STATES = COMPACTION_STATES_H3
COMPACTION_TYPES = {"a": "MAJOR", "i": "MINOR"}
#: SHOW COMPACTIONS column headers in Hive 2.3 (9 columns, no CompactionId)
COMPACTION_HEADERS = [
    "Database",
    "Table",
    "Partition",
    "Type",
    "State",
    "Worker",
    "Start Time",
    "Duration(ms)",
    "HadoopJobId",
]


def _dialect(engine) -> str:
    d = engine.dialect.name
    return "mysql" if d == "mariadb" else d


def _flavor(dialect: str):
    from acidctl.metastore.schema import HIVE2_SCHEMA_VERSION, Flavor

    return Flavor(
        dialect=dialect, hive_version=2, txn_lower=dialect == "postgresql", schema_version=HIVE2_SCHEMA_VERSION
    )


def build_metadata(dialect: str):
    """SQLAlchemy MetaData of a Hive 2.3 metastore (2.3 transaction tables + metadata tables)."""
    import sqlalchemy as sa

    from acidctl.metastore.schema import _BOOL, HIVE2_TXN_TABLES, META_TABLES, _sa_type, hive2_meta_columns, pick

    f = _flavor(dialect)
    md = sa.MetaData()
    specs = [(n, [c[:3] for c in hive2_meta_columns(n)], META_TABLES[n].get("pk", [])) for n in META_TABLES]
    specs += [(n, s["cols"], s.get("pk", [])) for n, s in HIVE2_TXN_TABLES.items()]
    for name, cols, pk in specs:
        columns = []
        for cname, ctype, nullable in cols:
            # the 3.1 metadata descriptions may differ per dialect: the 2.3 tables are read as 3.1's
            ctype, nullable = pick(ctype, 3, dialect), pick(nullable, 3, dialect)
            kw: dict[str, Any] = {}
            if ctype == _BOOL and not nullable:
                kw["server_default"] = sa.text("false" if dialect == "postgresql" else "0")
            columns.append(
                sa.Column(
                    f.column(name, cname),
                    _sa_type(ctype, dialect),
                    primary_key=cname in pk,
                    nullable=nullable and cname not in pk,
                    autoincrement=False,
                    **kw,
                )
            )
        kwargs: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "latin1"} if dialect == "mysql" else {}
        sa.Table(f.physical(name), md, *columns, **kwargs)
    return md


def init_hive2(url_or_engine: Any, *, warehouse: str = "file:/tmp/acidctl-warehouse", txn_only: bool = False) -> dict:
    """Create a Hive 2.3 metastore schema in an empty database (tests, demos): the tables,
    the sequence rows (1), ``VERSION`` 2.3.0, the ``default`` database and the mutex rows.

    ``txn_only``: only what ``hive-txn-schema-2.3.0.<db>.sql`` creates — the transaction tables
    (on PostgreSQL unquoted, i.e. lower-case: ``txns``, ``compaction_queue``, ...) and their
    sequence rows, no ``VERSION``/``DBS`` row — for a real 2.3 metastore whose DataNucleus
    (``datanucleus.schema.autoCreateAll``) creates the metadata tables itself, since 2.3's
    ``TxnDbUtil.prepDb`` is Derby-only SQL."""
    from acidctl.metastore.schema import HIVE2_SCHEMA_VERSION

    from acidctl.metastore.init import create_sqlite_file

    engine = url_or_engine if hasattr(url_or_engine, "dialect") else create_engine(url_or_engine, must_exist=False)
    create_sqlite_file(engine)  # by acidctl's file rule (umask, group), as metastore init does
    dialect = _dialect(engine)
    f = _flavor(dialect)
    md = build_metadata(dialect)
    if txn_only:
        from acidctl.metastore.schema import HIVE2_TXN_TABLES

        keep = {f.physical(n) for n in HIVE2_TXN_TABLES}
        for t in [t for t in md.tables.values() if t.name not in keep]:
            md.remove(t)
    with db_errors(engine.url):
        with engine.connect() as conn:
            clash = sorted({n.upper() for n in _table_names(conn)} & {t.upper() for t in md.tables})
            conn.rollback()
        if clash:
            raise RefusedError(
                f"{safe_url(engine.url)} already has metastore tables ({', '.join(clash[:5])}); refusing to touch it"
            )
        with engine.begin() as conn:
            md.create_all(conn)
            tables = {t.name.upper(): t for t in md.tables.values()}

            def ins(name: str, **values):
                conn.execute(tables[name].insert().values({f.column(name, k): v for k, v in values.items()}))

            ins("NEXT_TXN_ID", NTXN_NEXT=1)
            ins("NEXT_LOCK_ID", NL_NEXT=1)
            ins("NEXT_COMPACTION_QUEUE_ID", NCQ_NEXT=1)
            if txn_only:
                return {
                    "url": safe_url(engine.url),
                    "hive_version": 2,
                    "schema_version": HIVE2_SCHEMA_VERSION,
                    "tables": sorted(md.tables),
                }
            ins(
                "VERSION",
                VER_ID=1,
                SCHEMA_VERSION=HIVE2_SCHEMA_VERSION,
                VERSION_COMMENT=f"{INIT_COMMENT} (Hive {HIVE2_SCHEMA_VERSION})",
            )
            ins(
                "DBS",
                DB_ID=1,
                DESC="Default Hive database",
                DB_LOCATION_URI=warehouse.rstrip("/"),
                NAME="default",
                OWNER_NAME="public",
                OWNER_TYPE="ROLE",
            )
            for m in MUTEXES:
                ins("AUX_TABLE", MT_KEY1=m, MT_KEY2=0)
    return {
        "url": safe_url(engine.url),
        "hive_version": 2,
        "schema_version": HIVE2_SCHEMA_VERSION,
        "tables": sorted(md.tables),
    }


def is_hive2(engine_or_url: Any) -> bool:
    """Whether the database holds a Hive 2.x metastore schema."""
    from acidctl.metastore import thrift

    if thrift.is_thrift(engine_or_url):
        return thrift.connect(engine_or_url).hive_version == 2
    import re

    import sqlalchemy as sa

    engine = as_engine(engine_or_url)
    with db_errors(engine.url), read_only(engine) as conn:
        names = _table_names(conn)
        upper = {n.upper() for n in names}
        if "VERSION" in upper:
            phys = "VERSION" if "VERSION" in names else next(n for n in names if n.upper() == "VERSION")
            q = conn.dialect.identifier_preparer.quote
            row = conn.execute(sa.text("SELECT %s FROM %s" % (q("SCHEMA_VERSION"), q(phys)))).first()
            if row and row[0]:
                return bool(re.match(r"^\s*2\.", str(row[0])))
        if "COMPACTION_QUEUE" not in upper:
            return False
        phys = "compaction_queue" if "compaction_queue" in names else "COMPACTION_QUEUE"
        return "CQ_HIGHEST_TXN_ID" in _columns(conn, phys)


class Hive2Metastore:
    """A connected Hive 2.3 metastore (table clauses spelled for its dialect).

    It answers the few attributes the shared write steps of :mod:`acidctl.metastore.queue` use
    (``hive_version`` 2, ``tables.<NAME>``, ``read()``, ``schema_version``), so the steps Hive
    2.3 runs exactly as Hive 3 does (``compact``, ``findNextToCompact``, ``setRunAs``,
    ``markCompacted``, ``markFailed``, the revokes) are the same functions; the 2.3-only ones
    are 2.3 branches there and in :mod:`acidctl.metastore.cleaner`. Writes are allowed on a ``2.3.x`` schema only
    (:func:`acidctl.metastore.steps.check_writable`)."""

    hive_version = 2
    read_only = False

    def __init__(self, engine_or_url: Any):
        self.engine = as_engine(engine_or_url)
        self.url = self.engine.url
        self.dialect = _dialect(self.engine)
        self.flavor = _flavor(self.dialect)
        self.tables = _Hive2Tables(self)
        self._schema_version: Any = None

    @property
    def schema_version(self) -> str | None:
        """``VERSION.SCHEMA_VERSION`` as stored (read once): what decides whether acidctl writes."""
        if self._schema_version is None:
            import sqlalchemy as sa

            v = self.t("VERSION")
            with db_errors(self.engine.url), self.read() as conn:
                try:
                    row = conn.execute(sa.select(v.SCHEMA_VERSION)).first()
                except Exception:  # no VERSION table (detected by CQ_HIGHEST_TXN_ID alone)
                    row = None
            self._schema_version = str(row[0]) if row and row[0] is not None else ""
        return self._schema_version or None

    def t(self, name: str):
        """A table clause whose columns are reached by Hive's upper-case names."""
        import sqlalchemy as sa

        from acidctl.metastore.schema import HIVE2_TXN_TABLES, T, hive2_meta_columns

        cols = (
            [c[0] for c in HIVE2_TXN_TABLES[name]["cols"]]
            if name in HIVE2_TXN_TABLES
            else [c[0] for c in hive2_meta_columns(name)]
        )
        f = self.flavor
        clause = sa.table(f.physical(name), *[sa.column(f.column(name, c)) for c in cols])
        return T(name, clause, f.txn_lower and name in HIVE2_TXN_TABLES)

    def read(self):
        return read_only(self.engine)

    def safe_url(self) -> str:
        return safe_url(self.engine.url)


class _Hive2Tables:
    """``ms.tables.COMPACTION_QUEUE`` for a :class:`Hive2Metastore` (as :class:`Tables` does for 3/4)."""

    def __init__(self, ms: Hive2Metastore):
        self._ms = ms
        self._cache: dict[str, Any] = {}

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._cache:
            from acidctl.metastore.schema import HIVE2_TXN_TABLES, META_TABLES

            if name not in HIVE2_TXN_TABLES and name not in META_TABLES:
                raise AttributeError(f"{name} is not a Hive 2.3 metastore table")
            self._cache[name] = self._ms.t(name)
        return self._cache[name]


def connect_hive2(engine_or_url: Any) -> Hive2Metastore:
    from acidctl.metastore import thrift

    if thrift.is_thrift(engine_or_url):
        return thrift.connect_hive2(engine_or_url)  # type: ignore[return-value]
    return engine_or_url if isinstance(engine_or_url, Hive2Metastore) else Hive2Metastore(engine_or_url)


# =========================================================================================
# snapshots (B.2)
# =========================================================================================


def _txn_rows(ms: Hive2Metastore, conn) -> tuple[int, list]:
    import sqlalchemy as sa

    nt, tx = ms.t("NEXT_TXN_ID"), ms.t("TXNS")
    nxt = conn.execute(sa.select(nt.NTXN_NEXT)).scalar()
    rows = conn.execute(
        sa.select(tx.TXN_ID, tx.TXN_STATE, tx.TXN_STARTED, tx.TXN_LAST_HEARTBEAT, tx.TXN_USER, tx.TXN_HOST).order_by(
            tx.TXN_ID
        )
    ).all()
    return (int(nxt) - 1 if nxt is not None else 0), rows


def txn_list(engine_or_url: Any) -> Hive2TxnList:
    """``getOpenTxns``: hwm = NTXN_NEXT − 1, exceptions = every TXNS row ≤ hwm (open and aborted)."""
    from acidctl.metastore import thrift

    if thrift.is_thrift(engine_or_url):
        return thrift.txn_list(engine_or_url)
    ms = connect_hive2(engine_or_url)
    with db_errors(ms.engine.url), ms.read() as conn:
        hwm, rows = _txn_rows(ms, conn)
    return from_states(hwm, {int(r[0]): r[1] for r in rows})


# =========================================================================================
# SHOW TRANSACTIONS / SHOW COMPACTIONS (B.9)
# =========================================================================================


def show_transactions(engine_or_url: Any) -> dict:
    """Every TXNS row with TXN_ID ≤ hwm (open and aborted; committed ones are deleted in 2.3)."""
    from acidctl.metastore import thrift

    if thrift.is_thrift(engine_or_url):
        return thrift.hive2_show_transactions(engine_or_url)
    ms = connect_hive2(engine_or_url)
    with db_errors(ms.engine.url), ms.read() as conn:
        hwm, rows = _txn_rows(ms, conn)
    out = [
        {
            "txn_id": int(r[0]),
            "state": TXN_STATES.get(r[1], r[1]),
            "started_ms": r[2],
            "last_heartbeat_ms": r[3],
            "user": r[4],
            "host": r[5],
        }
        for r in rows
        if int(r[0]) <= hwm
    ]
    return {"hive_version": 2, "txn_high_water_mark": hwm, "transactions": out}


def show_compactions(engine_or_url: Any, *, now_ms: int | None = None) -> dict:
    """COMPACTION_QUEUE then COMPLETED_COMPACTIONS rows (2.3's UNION ALL; no id column)."""
    from acidctl.metastore import thrift

    if thrift.is_thrift(engine_or_url):
        return thrift.hive2_show_compactions(engine_or_url)
    import sqlalchemy as sa

    ms = connect_hive2(engine_or_url)
    q, c = ms.t("COMPACTION_QUEUE"), ms.t("COMPLETED_COMPACTIONS")
    with db_errors(ms.engine.url), ms.read() as conn:
        queued = conn.execute(
            sa.select(
                q.CQ_DATABASE,
                q.CQ_TABLE,
                q.CQ_PARTITION,
                q.CQ_TYPE,
                q.CQ_STATE,
                q.CQ_WORKER_ID,
                q.CQ_START,
                sa.null(),
                q.CQ_HADOOP_JOB_ID,
                q.CQ_HIGHEST_TXN_ID,
            )
        ).all()
        done = conn.execute(
            sa.select(
                c.CC_DATABASE,
                c.CC_TABLE,
                c.CC_PARTITION,
                c.CC_TYPE,
                c.CC_STATE,
                c.CC_WORKER_ID,
                c.CC_START,
                c.CC_END,
                c.CC_HADOOP_JOB_ID,
                c.CC_HIGHEST_TXN_ID,
            )
        ).all()
    rows = []
    for r, finished in [(r, False) for r in queued] + [(r, True) for r in done]:
        duration = (int(r[7]) - int(r[6])) if finished and r[6] is not None and r[7] is not None else None
        rows.append(
            {
                "database": r[0],
                "table": r[1],
                "partition": r[2],
                "type": COMPACTION_TYPES.get(r[3], r[3]),
                "state": COMPACTION_STATES.get(r[4], r[4]),
                "worker": r[5],
                "start_ms": r[6],
                "duration_ms": duration,
                "hadoop_job_id": r[8],
                "highest_txn_id": r[9],
            }
        )
    return {"hive_version": 2, "compactions": rows}


# =========================================================================================
# tables (for DB.TABLE targets and upgrade-check)
# =========================================================================================


@dataclasses.dataclass
class Hive2Table:
    db: str
    table: str
    location: str | None
    params: dict[str, str]
    partition_keys: list[tuple[str, str]]  # (name, type) in order
    partitions: list[tuple[str, str | None]]  # (PART_NAME, location)
    #: (name, type) of the table's columns (COLUMNS_V2 of its SDS row), in order: the names Hive
    #: 2.3's CompactorMR gives a compacted file's row struct (observed on 2.3.10's Worker:
    #: ``_col0``/``_col1`` deltas → ``row:struct<a:int,b:string>``; tests/hive23)
    columns: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    @property
    def full_name(self) -> str:
        return f"{self.db}.{self.table}"

    @property
    def transactional_value(self) -> str | None:
        return self.params.get("transactional")

    def to_dict(self) -> dict:
        return {
            "table": self.full_name,
            "location": self.location,
            "params": dict(self.params),
            "partition_keys": [list(k) for k in self.partition_keys],
            "partitions": [p for p, _ in self.partitions],
        }


def list_tables(engine_or_url: Any, *, db_glob: str = "*", transactional_only: bool = True) -> list[Hive2Table]:
    """Tables of databases matching ``db_glob`` (case-insensitive), with their parameters,
    partition keys and partitions; ``transactional_only``: ``transactional`` equal to ``true``
    ignoring case (C.5 step 1)."""
    from acidctl.metastore import thrift

    if thrift.is_thrift(engine_or_url):
        return thrift.list_tables(engine_or_url, db_glob=db_glob, transactional_only=transactional_only)
    import sqlalchemy as sa

    ms = connect_hive2(engine_or_url)
    d, t, s, p, pk, pp = (ms.t(n) for n in ("DBS", "TBLS", "SDS", "TABLE_PARAMS", "PARTITION_KEYS", "PARTITIONS"))
    ps = ms.t("SDS")
    pat = db_glob.lower()
    with db_errors(ms.engine.url), ms.read() as conn:
        tabs = conn.execute(
            sa.select(t.TBL_ID, d.NAME, t.TBL_NAME, s.LOCATION)
            .select_from(t.clause.join(d.clause, t.DB_ID == d.DB_ID).outerjoin(s.clause, t.SD_ID == s.SD_ID))
            .order_by(d.NAME, t.TBL_NAME)
        ).all()
        tabs = [r for r in tabs if fnmatch.fnmatchcase((r[1] or "").lower(), pat)]
        ids = [r[0] for r in tabs]
        params: dict[int, dict[str, str]] = {}
        keys: dict[int, list] = {}
        parts: dict[int, list] = {}
        if ids:
            for tid, k, v in conn.execute(sa.select(p.TBL_ID, p.PARAM_KEY, p.PARAM_VALUE).where(p.TBL_ID.in_(ids))):
                params.setdefault(tid, {})[k] = v
            for tid, name, typ, _ in conn.execute(
                sa.select(pk.TBL_ID, pk.PKEY_NAME, pk.PKEY_TYPE, pk.INTEGER_IDX)
                .where(pk.TBL_ID.in_(ids))
                .order_by(pk.TBL_ID, pk.INTEGER_IDX)
            ):
                keys.setdefault(tid, []).append((name, typ))
            for tid, name, loc in conn.execute(
                sa.select(pp.TBL_ID, pp.PART_NAME, ps.LOCATION)
                .select_from(pp.clause.outerjoin(ps.clause, pp.SD_ID == ps.SD_ID))
                .where(pp.TBL_ID.in_(ids))
                .order_by(pp.TBL_ID, pp.PART_NAME)
            ):
                parts.setdefault(tid, []).append((name, loc))
    cols = _table_columns(ms, ids) if ids else {}
    out = []
    for tid, db, name, loc in tabs:
        prm = params.get(tid, {})
        if transactional_only and (prm.get("transactional") or "").strip().lower() != "true":
            continue
        out.append(Hive2Table(db, name, loc, prm, keys.get(tid, []), parts.get(tid, []), cols.get(tid, [])))
    return out


def _table_columns(ms: Hive2Metastore, ids: list) -> dict[int, list[tuple[str, str]]]:
    """{TBL_ID: [(COLUMN_NAME, TYPE_NAME)]} in INTEGER_IDX order; {} where the schema has no
    COLUMNS_V2 (a transaction-only test schema): the files' own names are kept then."""
    import sqlalchemy as sa

    t, s, cv = ms.t("TBLS"), ms.t("SDS"), ms.t("COLUMNS_V2")
    out: dict[int, list[tuple[str, str]]] = {}
    try:
        with ms.read() as conn:
            for tid, name, typ, _ in conn.execute(
                sa.select(t.TBL_ID, cv.COLUMN_NAME, cv.TYPE_NAME, cv.INTEGER_IDX)
                .select_from(t.clause.join(s.clause, t.SD_ID == s.SD_ID).join(cv.clause, cv.CD_ID == s.CD_ID))
                .where(t.TBL_ID.in_(ids))
                .order_by(t.TBL_ID, cv.INTEGER_IDX)
            ):
                out.setdefault(tid, []).append((name, typ))
    except sa.exc.DBAPIError:
        return {}
    return out


def find_table(engine_or_url: Any, full_name: str) -> Hive2Table:
    from acidctl.metastore import thrift

    if thrift.is_thrift(engine_or_url):
        return thrift.find_table(engine_or_url, full_name)
    db, _, name = full_name.partition(".")
    for t in list_tables(engine_or_url, db_glob=db, transactional_only=False):
        if t.table.lower() == name.lower():
            return t
    raise TableNotFound(f"table {full_name} not found in the Hive 2.3 metastore")


def pending_compactions(engine_or_url: Any) -> dict[tuple[str, str, str | None], list[dict]]:
    """COMPACTION_QUEUE rows by (db, table, partition) — lower-case db and table."""
    rows = show_compactions(engine_or_url)["compactions"]
    out: dict = {}
    for r in rows:
        if r["state"] in ("initiated", "working", "ready for cleaning"):
            out.setdefault(((r["database"] or "").lower(), (r["table"] or "").lower(), r["partition"]), []).append(r)
    return out


def open_txn_components(engine_or_url: Any) -> dict[tuple[str, str], list[int]]:
    """Open txns touching each (db, table) (TXN_COMPONENTS of TXNS rows in state 'o')."""
    import sqlalchemy as sa

    ms = connect_hive2(engine_or_url)
    tc, tx = ms.t("TXN_COMPONENTS"), ms.t("TXNS")
    with db_errors(ms.engine.url), ms.read() as conn:
        rows = conn.execute(
            sa.select(tc.TC_DATABASE, tc.TC_TABLE, tc.TC_TXNID)
            .select_from(tc.clause.join(tx.clause, tc.TC_TXNID == tx.TXN_ID))
            .where(tx.TXN_STATE == "o")
        ).all()
    out: dict = {}
    for db, tbl, txn in rows:
        out.setdefault(((db or "").lower(), (tbl or "").lower()), []).append(int(txn))
    return {k: sorted(set(v)) for k, v in out.items()}


def aborted_components_by_partition(engine_or_url: Any, db: str, table: str) -> dict[str | None, int]:
    """The count 2.3's ``findPotentialCompactions`` compares with ``hive.compactor.abortedtxn.threshold``:
    ``TXN_COMPONENTS`` rows of aborted txns per partition (``count(*)`` grouped by
    db/table/partition, as Hive writes it — a txn with several components counts several times)."""
    import sqlalchemy as sa

    ms = connect_hive2(engine_or_url)
    tc, tx = ms.t("TXN_COMPONENTS"), ms.t("TXNS")
    with db_errors(ms.engine.url), ms.read() as conn:
        rows = conn.execute(
            sa.select(tc.TC_PARTITION, sa.func.count())
            .select_from(tc.clause.join(tx.clause, tc.TC_TXNID == tx.TXN_ID))
            .where(tx.TXN_STATE == "a", tc.TC_DATABASE == db, tc.TC_TABLE == table)
            .group_by(tc.TC_DATABASE, tc.TC_TABLE, tc.TC_PARTITION)
        ).all()
    return {p: int(n) for p, n in rows}


def require_hive2(engine_or_url: Any) -> Hive2Metastore:
    from acidctl.metastore import thrift

    if thrift.is_thrift(engine_or_url):
        return thrift.connect_hive2(engine_or_url, require=True)  # type: ignore[return-value]
    if not is_hive2(engine_or_url):
        raise UsageError(
            "this command needs a Hive 2.x metastore (VERSION 2.x, CQ_HIGHEST_TXN_ID)",
            hint="point --metastore at the Hive 2 cluster's metastore database",
        )
    return connect_hive2(engine_or_url)


def connect_any(url_or_engine: Any, *, hive_version: Any = None):
    """The metastore the queue/Cleaner steps run on: a Hive 2.3 one (:class:`Hive2Metastore`,
    detected by VERSION 2.x or ``CQ_HIGHEST_TXN_ID``, or asked for with ``hive_version`` 2) or a
    Hive 3/4 :class:`~acidctl.metastore.connection.Metastore`."""
    from acidctl.metastore import thrift

    if thrift.is_thrift(url_or_engine):
        return thrift.connect(url_or_engine, hive_version=hive_version)
    from acidctl.metastore.connection import connect

    hv = str(hive_version).strip() if hive_version not in (None, "", "auto") else None
    if hv is not None and hv.startswith("2"):
        return require_hive2(url_or_engine)
    if hv is None and is_hive2(url_or_engine):
        return connect_hive2(url_or_engine)
    return connect(url_or_engine, hive_version=hive_version)


def table_info(engine_or_url: Any, spec: str, *, partition: str | None = None):
    """``db.table[/k=v]`` of a Hive 2.3 metastore as a :class:`~acidctl.metastore.tables.TableInfo`
    (what ``state``/``dump``/``compact`` targets carry); the columns from COLUMNS_V2: Hive 2.3's
    writers name the row fields ``_colN``, its compactor by the table's columns."""
    from acidctl.metastore import thrift

    if thrift.is_thrift(engine_or_url):
        return thrift.table_info(engine_or_url, spec, partition=partition)
    from acidctl.errors import NotFoundError
    from acidctl.metastore.tables import TableInfo, split_spec

    db, name, part = split_spec(spec)
    if partition:
        from acidctl.metastore.tables import normalize_partition

        if part:
            raise UsageError("give the partition either in DB.TABLE/SPEC or with --partition, not both")
        part = normalize_partition(partition)
    t = find_table(engine_or_url, f"{db}.{name}")
    ploc = None
    if part:
        found = [loc for p, loc in t.partitions if p == part]
        if not found:
            raise NotFoundError(f"partition {part} of {t.full_name} not found in the Hive 2.3 metastore")
        ploc = found[0]
    return TableInfo(
        db=t.db,
        table=t.table,
        tbl_id=0,
        table_type=None,
        owner=None,
        location=t.location,
        input_format=None,
        output_format=None,
        bucket_count=-1,
        params=dict(t.params),
        partition_keys=list(t.partition_keys),
        columns=list(t.columns),
        partition=part,
        partition_location=ploc,
        partitions=[p for p, _ in t.partitions],
        hive_version=2,
    )
