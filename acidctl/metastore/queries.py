"""What SHOW TRANSACTIONS / SHOW LOCKS / SHOW COMPACTIONS show, read straight from the
metastore tables (../shared/spec/metastore.md §8). Filters, order and limits are pushed into
SQL; results are plain dicts with Hive's schema names as keys, decoded codes and epoch-ms
timestamps (``None`` where Hive prints ``NULL`` or `` --- ``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable

from acidctl.errors import UsageError
from acidctl.metastore.connection import Metastore, connect, db_now_ms
from acidctl.metastore.snapshot import TXN_TYPES, h3_txn_hwm, h4_txn_rows

NO_VAL = " --- "  # MetaStoreUtils.NO_VAL

TXN_STATES = {"o": "OPEN", "a": "ABORTED", "c": "COMMITTED"}
LOCK_STATES = {"a": "ACQUIRED", "w": "WAITING"}
LOCK_TYPES = {"r": "SHARED_READ", "w": "SHARED_WRITE", "e": "EXCLUSIVE", "x": "EXCL_WRITE"}
# order in SHOW LOCKS: less restrictive first (LockTypeComparator)
LOCK_TYPE_RANK = {"r": 1, "w": 2, "x": 3, "e": 4}


def lock_row_columns(h) -> list:
    """HIVE_LOCKS columns the writers read back a lock with (unlock's refusal, the Cleaner's
    waits), in this order: ext id, int id, txn, db, table, partition, state, type, user, host."""
    return [
        h.HL_LOCK_EXT_ID,
        h.HL_LOCK_INT_ID,
        h.HL_TXNID,
        h.HL_DB,
        h.HL_TABLE,
        h.HL_PARTITION,
        h.HL_LOCK_STATE,
        h.HL_LOCK_TYPE,
        h.HL_USER,
        h.HL_HOST,
    ]


def txn_type_name(code: int | None) -> str:
    """A TXN_TYPE code as Hive's word (``DEFAULT`` for NULL, as Hive 3 rows have no type)."""
    if code is None:
        return "DEFAULT"
    return TXN_TYPES.get(code, str(code))


COMPACTION_TYPES = {"a": "MAJOR", "i": "MINOR", "r": "REBALANCE", "c": "ABORT_TXN_CLEANUP"}
COMPACTION_STATES_H3 = {
    "i": "initiated",
    "w": "working",
    "r": "ready for cleaning",
    "f": "failed",
    "s": "succeeded",
    "a": "attempted",
}
COMPACTION_STATES_H4 = {
    "i": "initiated",
    "w": "working",
    "r": "ready for cleaning",
    "f": "failed",
    "s": "succeeded",
    "a": "did not initiate",
    "c": "refused",
    "x": "aborted",
}


def compaction_state_text(code: str | None, hive_version: int) -> str | None:
    if code is None:
        return None
    table = COMPACTION_STATES_H3 if hive_version == 3 else COMPACTION_STATES_H4
    return table.get(code, code)


def parse_compaction_type(value: str) -> str:
    v = value.strip().lower().replace("-", "_")
    for code, name in COMPACTION_TYPES.items():
        if v in (name.lower(), code):
            return code
    raise UsageError(f"unknown compaction type {value!r}", hint="one of: major, minor, rebalance, abort_txn_cleanup")


def parse_compaction_state(value: str) -> list[str]:
    v = " ".join(value.strip().lower().replace("_", " ").replace("-", " ").split())
    if v in COMPACTION_STATES_H4 and len(v) == 1:
        return [v]
    codes = {c for c, t in COMPACTION_STATES_H4.items() if t == v}
    codes |= {c for c, t in COMPACTION_STATES_H3.items() if t == v}
    if v in ("ready", "cleaning"):
        codes.add("r")
    if not codes:
        names = sorted(set(COMPACTION_STATES_H4.values()) | {"attempted"})
        raise UsageError(f"unknown compaction state {value!r}", hint="one of: " + ", ".join(names))
    return sorted(codes)


def _split_id(worker: str | None) -> tuple[str | None, str | None]:
    """MetaStoreUtils.getHostFromId / getThreadIdFromId: split at the last '-'."""
    if worker is None:
        return None, None
    i = worker.rfind("-")
    if i < 0:
        return worker, None
    return worker[:i], worker[i + 1 :]


# ---------------------------------------------------------------------------------------
# SHOW TRANSACTIONS
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass
class TxnsReport:
    hive_version: int
    txn_high_water_mark: int
    transactions: list[dict]

    def to_dict(self) -> dict:
        return {
            "hive_version": self.hive_version,
            "txn_high_water_mark": self.txn_high_water_mark,
            "transactions": self.transactions,
        }


def show_transactions(
    engine_or_url: Any,
    *,
    states: Iterable[str] | None = None,
    user: str | None = None,
    min_age_ms: int | None = None,
    limit: int | None = None,
    hive_version: Any = None,
    now_ms: int | None = None,
) -> TxnsReport:
    """Open and aborted transactions (Hive 4: plus young id gaps as synthetic open rows).

    ``states``: subset of {"open", "aborted"}; ``min_age_ms``: only txns started at least that
    long ago (database clock); ``limit``: first N by transaction id.
    """
    from acidctl.metastore import thrift

    if thrift.is_thrift(engine_or_url):
        return thrift.show_transactions(
            engine_or_url, states=states, user=user, min_age_ms=min_age_ms, limit=limit, hive_version=hive_version
        )
    import sqlalchemy as sa

    ms: Metastore = connect(engine_or_url, hive_version=hive_version)
    codes = None
    if states:
        codes = set()
        for s in states:
            s2 = s.strip().lower()
            if s2 in ("o", "open"):
                codes.add("o")
            elif s2 in ("a", "aborted"):
                codes.add("a")
            else:
                raise UsageError(f"unknown transaction state {s!r}", hint="open or aborted")
    if limit is not None and limit < 0:
        raise UsageError("--limit must be >= 0")
    t = ms.tables.TXNS
    with ms.read() as conn:
        now = now_ms if now_ms is not None else db_now_ms(conn)
        conds = []
        gaps: list[int] = []
        if ms.hive_version == 3:
            hwm = h3_txn_hwm(ms, conn)
            conds.append(t.TXN_ID <= hwm)
        else:
            hwm, rows = h4_txn_rows(ms, conn, now_ms=now)
            conds.append(t.TXN_STATE.in_(["o", "a"]))
            if not user and not min_age_ms and (codes is None or "o" in codes):
                gaps = [r.txn_id for r in rows if r.synthetic]
        if codes is not None:
            conds.append(t.TXN_STATE.in_(sorted(codes)))
        if user:
            conds.append(t.TXN_USER == user)
        if min_age_ms:
            conds.append(t.TXN_STARTED <= now - int(min_age_ms))
        cols = [
            t.TXN_ID,
            t.TXN_STATE,
            t.TXN_STARTED,
            t.TXN_LAST_HEARTBEAT,
            t.TXN_USER,
            t.TXN_HOST,
            t.TXN_AGENT_INFO,
            t.TXN_TYPE if t.has("TXN_TYPE") else sa.literal(None),
            t.TXN_HEARTBEAT_COUNT,
        ]
        q = sa.select(*cols).where(*conds).order_by(t.TXN_ID)
        if limit is not None:
            q = q.limit(limit)
        rows_out = []
        for tid, st, started, hb, u, host, agent, ttype, hbc in conn.execute(q):
            rows_out.append(
                {
                    "txnid": int(tid),
                    "state": TXN_STATES.get(st, st),
                    "startedtime": _int(started),
                    "lastheartbeattime": _int(hb),
                    "user": u,
                    "host": host,
                    "agentinfo": agent,
                    "type": TXN_TYPES.get(ttype) if ttype is not None else None,
                    "heartbeatcount": _int(hbc),
                    "synthetic": False,
                }
            )
    for g in gaps:
        rows_out.append(
            {
                "txnid": g,
                "state": "OPEN",
                "startedtime": None,
                "lastheartbeattime": None,
                "user": None,
                "host": None,
                "agentinfo": None,
                "type": "DEFAULT",
                "heartbeatcount": None,
                "synthetic": True,
            }
        )
    rows_out.sort(key=lambda r: r["txnid"])
    if limit is not None:
        rows_out = rows_out[:limit]
    return TxnsReport(ms.hive_version, hwm, rows_out)


def _int(v) -> int | None:
    return None if v is None else int(v)


# ---------------------------------------------------------------------------------------
# SHOW LOCKS
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass
class LocksReport:
    hive_version: int
    locks: list[dict]
    extended: bool = False

    def to_dict(self) -> dict:
        # shallow on purpose: dataclasses.asdict deep-copies every row (slow for 10^4 locks)
        return {"hive_version": self.hive_version, "extended": self.extended, "locks": self.locks}


def show_locks(
    engine_or_url: Any,
    *,
    db: str | None = None,
    table: str | None = None,
    partition: str | list[str] | None = None,
    txn_id: int | None = None,
    extended: bool = False,
    hive_version: Any = None,
) -> LocksReport:
    """HIVE_LOCKS rows in SHOW LOCKS order: acquired before waiting, then lock type (less
    restrictive first), external id, internal id."""
    from acidctl.metastore import thrift

    if thrift.is_thrift(engine_or_url):  # show_locks answers on every Hive version
        return thrift.show_locks(
            engine_or_url,
            db=db,
            table=table,
            partition=partition,
            txn_id=txn_id,
            extended=extended,
            hive_version=hive_version,
        )
    import sqlalchemy as sa

    ms: Metastore = connect(engine_or_url, hive_version=hive_version)
    h = ms.tables.HIVE_LOCKS
    conds = []
    if db:
        conds.append(h.HL_DB == db.lower())
    if table:
        conds.append(h.HL_TABLE == table.lower())
    if partition:  # one partition or several (show locks --partition, repeatable)
        conds.append(h.HL_PARTITION.in_([partition] if isinstance(partition, str) else list(partition)))
    if txn_id is not None:
        conds.append(h.HL_TXNID == txn_id)
    rank = sa.case({k: v for k, v in LOCK_TYPE_RANK.items()}, value=h.HL_LOCK_TYPE, else_=9)
    state_rank = sa.case((h.HL_LOCK_STATE == "a", 0), else_=1)
    cols = [
        h.HL_LOCK_EXT_ID,
        h.HL_LOCK_INT_ID,
        h.HL_DB,
        h.HL_TABLE,
        h.HL_PARTITION,
        h.HL_LOCK_STATE,
        h.HL_BLOCKEDBY_EXT_ID,
        h.HL_BLOCKEDBY_INT_ID,
        h.HL_LOCK_TYPE,
        h.HL_TXNID,
        h.HL_LAST_HEARTBEAT,
        h.HL_ACQUIRED_AT,
        h.HL_USER,
        h.HL_HOST,
        h.HL_AGENT_INFO,
        h.HL_HEARTBEAT_COUNT,
    ]
    src: Any = h.clause
    if extended:
        t = ms.tables.TXNS
        cols += [t.TXN_STATE, t.TXN_LAST_HEARTBEAT]
        src = h.clause.outerjoin(t.clause, t.TXN_ID == h.HL_TXNID)
    q = sa.select(*cols).select_from(src).where(*conds).order_by(state_rank, rank, h.HL_LOCK_EXT_ID, h.HL_LOCK_INT_ID)
    out = []
    with ms.read() as conn:
        for r in conn.execute(q):
            ext, intid, hdb, htab, hpart, st, bext, bint, ltype, txn, hb, acq, u, host, agent, hbc = r[:16]
            d = {
                "lockid": f"{ext}.{intid}",
                "lock_ext_id": int(ext),
                "lock_int_id": int(intid),
                "database": hdb,
                "table": htab,
                "partition": hpart,
                "lock_state": LOCK_STATES.get(st, st),
                "blocked_by": f"{bext}.{bint}" if bext is not None else None,
                "lock_type": LOCK_TYPES.get(ltype, ltype),
                "transaction_id": int(txn) if txn else None,
                "last_heartbeat": _int(hb),
                "acquired_at": int(acq) if acq else None,
                "user": u,
                "hostname": host,
                "agent_info": agent,
                "heartbeat_count": _int(hbc),
            }
            if extended:
                d["txn_state"] = TXN_STATES.get(r[16], r[16]) if r[16] is not None else None
                d["txn_last_heartbeat"] = _int(r[17])
            out.append(d)
    return LocksReport(ms.hive_version, out, extended)


# ---------------------------------------------------------------------------------------
# SHOW COMPACTIONS
# ---------------------------------------------------------------------------------------

# output column name -> CC_ column (Hive 4 ShowCompactionsAnalyzer mapping)
ORDER_COLUMNS = {
    "compactionid": "CC_ID",
    "id": "CC_ID",
    "dbname": "CC_DATABASE",
    "database": "CC_DATABASE",
    "tabname": "CC_TABLE",
    "table": "CC_TABLE",
    "partname": "CC_PARTITION",
    "partition": "CC_PARTITION",
    "type": "CC_TYPE",
    "state": "CC_STATE",
    "enqueuetime": "CC_ENQUEUE_TIME",
    "starttime": "CC_START",
    "poolname": "CC_POOL_NAME",
    "nexttxnid": "CC_NEXT_TXN_ID",
    "hadoopjobid": "CC_HADOOP_JOB_ID",
    "workerhost": "CC_WORKER_ID",
    "workerid": "CC_WORKER_ID",
    "duration": "CC_END",
    "endtime": "CC_END",
    "txnid": "CC_TXN_ID",
    "committime": "CC_COMMIT_TIME",
    "highestwriteid": "CC_HIGHEST_WRITE_ID",
    "hightestwriteid": "CC_HIGHEST_WRITE_ID",
    "errormessage": "CC_ERROR_MESSAGE",
    "initiatorid": "CC_INITIATOR_ID",
    "initiatorhost": "CC_INITIATOR_ID",
    "runas": "CC_RUN_AS",
}

# (union column, COMPACTION_QUEUE column or None, COMPLETED_COMPACTIONS column)
_UNION = [
    ("CC_ID", "CQ_ID", "CC_ID"),
    ("CC_DATABASE", "CQ_DATABASE", "CC_DATABASE"),
    ("CC_TABLE", "CQ_TABLE", "CC_TABLE"),
    ("CC_PARTITION", "CQ_PARTITION", "CC_PARTITION"),
    ("CC_STATE", "CQ_STATE", "CC_STATE"),
    ("CC_TYPE", "CQ_TYPE", "CC_TYPE"),
    ("CC_WORKER_ID", "CQ_WORKER_ID", "CC_WORKER_ID"),
    ("CC_ENQUEUE_TIME", "CQ_ENQUEUE_TIME", "CC_ENQUEUE_TIME"),
    ("CC_START", "CQ_START", "CC_START"),
    ("CC_END", None, "CC_END"),
    ("CC_RUN_AS", "CQ_RUN_AS", "CC_RUN_AS"),
    ("CC_HIGHEST_WRITE_ID", "CQ_HIGHEST_WRITE_ID", "CC_HIGHEST_WRITE_ID"),
    ("CC_HADOOP_JOB_ID", "CQ_HADOOP_JOB_ID", "CC_HADOOP_JOB_ID"),
    ("CC_ERROR_MESSAGE", "CQ_ERROR_MESSAGE", "CC_ERROR_MESSAGE"),
    ("CC_INITIATOR_ID", "CQ_INITIATOR_ID", "CC_INITIATOR_ID"),
    ("CC_POOL_NAME", "CQ_POOL_NAME", "CC_POOL_NAME"),
    ("CC_TXN_ID", "CQ_TXN_ID", "CC_TXN_ID"),
    ("CC_NEXT_TXN_ID", "CQ_NEXT_TXN_ID", "CC_NEXT_TXN_ID"),
    ("CC_COMMIT_TIME", "CQ_COMMIT_TIME", "CC_COMMIT_TIME"),
]


@dataclasses.dataclass
class CompactionsReport:
    hive_version: int
    compactions: list[dict]

    def to_dict(self) -> dict:
        return {"hive_version": self.hive_version, "compactions": self.compactions}


def _parse_order(order_by: str | None) -> list[tuple[str, bool]]:
    if not order_by:
        return []
    out = []
    for item in order_by.split(","):
        words = item.split()
        if not words:
            continue
        name = words[0].lower()
        desc = False
        if len(words) > 1:
            if words[1].lower() not in ("asc", "desc") or len(words) > 2:
                raise UsageError(f"bad --order-by item {item.strip()!r}: expected COLUMN [ASC|DESC]")
            desc = words[1].lower() == "desc"
        col = ORDER_COLUMNS.get(name)
        if col is None:
            cand = "CC_" + name.upper()
            if cand not in {u[0] for u in _UNION}:
                raise UsageError(
                    f"unknown --order-by column {words[0]!r}",
                    hint="e.g. compactionid, dbname, tabname, partname, enqueuetime, starttime, duration, committime",
                )
            col = cand
        out.append((col, desc))
    return out


def _branch(ms: Metastore, queue: bool, filters: dict, sel_limit: int | None, order):
    import sqlalchemy as sa

    t = ms.tables.COMPACTION_QUEUE if queue else ms.tables.COMPLETED_COMPACTIONS
    cols = []
    for name, cq, cc in _UNION:
        src = cq if queue else cc
        if src is not None and t.has(src):
            cols.append(getattr(t, src).label(name))
        elif queue and name == "CC_END":
            # Hive 4's ShowCompactHandler selects -1 as the queue rows' end time
            cols.append(sa.cast(sa.literal(-1), sa.BigInteger()).label(name))
        else:
            cols.append(
                sa.cast(
                    sa.null(),
                    sa.BigInteger()
                    if name
                    not in (
                        "CC_ERROR_MESSAGE",
                        "CC_INITIATOR_ID",
                        "CC_POOL_NAME",
                        "CC_WORKER_ID",
                        "CC_RUN_AS",
                        "CC_HADOOP_JOB_ID",
                        "CC_DATABASE",
                        "CC_TABLE",
                        "CC_PARTITION",
                        "CC_STATE",
                        "CC_TYPE",
                    )
                    else sa.String(),
                ).label(name)
            )
    p = "CQ_" if queue else "CC_"
    conds = []
    c = lambda n: getattr(t, p + n)  # noqa: E731
    if filters.get("id") is not None:
        conds.append(c("ID") == filters["id"])
    if filters.get("db"):
        conds.append(c("DATABASE") == filters["db"])
    if filters.get("table"):
        conds.append(c("TABLE") == filters["table"])
    if filters.get("partition"):
        part = filters["partition"]
        conds.append(c("PARTITION").in_([part] if isinstance(part, str) else list(part)))
    if filters.get("types"):
        conds.append(c("TYPE").in_(filters["types"]))
    if filters.get("states"):
        conds.append(c("STATE").in_(filters["states"]))
    pool = filters.get("pool")
    if pool is not None:
        if t.has(p + "POOL_NAME") and ms.hive_version >= 4:
            # Hive 4 compares literally ("CC_POOL_NAME" = :poolName): --pool default finds only rows
            # whose pool is the string 'default', not the NULL/empty pool that *displays* as default
            conds.append(c("POOL_NAME") == pool)
        elif t.has(p + "POOL_NAME"):
            if pool == "default":
                conds.append(sa.or_(c("POOL_NAME").is_(None), c("POOL_NAME") == "", c("POOL_NAME") == "default"))
            else:
                conds.append(c("POOL_NAME") == pool)
        elif pool != "default":
            conds.append(sa.false())
    q = sa.select(*cols).where(*conds)
    if sel_limit is not None:
        # top-N per branch first (each branch can use its own index); the union is re-sorted
        q = q.order_by(*order(t, p, queue)).limit(sel_limit)
    return q


def _nulls_last(col, desc: bool):
    """ORDER BY items putting NULLs last in either direction, the same on every database."""
    import sqlalchemy as sa

    return [sa.case((col.is_(None), 1), else_=0).asc(), col.desc() if desc else col.asc()]


def hive4_recent_first(end, start, commit):
    """Hive 4's ``TxnQueries.SHOW_COMPACTION_ORDERBY_CLAUSE`` key (sorted DESC): ``CASE WHEN end >
    start AND end > commit THEN end WHEN start > commit THEN start ELSE commit END``. It is NULL
    whenever the commit time is NULL (every comparison with NULL is unknown); where such rows
    sort is the database's own NULL order (PostgreSQL: first in DESC; MySQL/MariaDB, SQLite:
    last), exactly as Hive's query sorts them on that database."""
    import sqlalchemy as sa

    return sa.case((sa.and_(end > start, end > commit), end), (start > commit, start), else_=commit)


def _greatest(dialect: str, *cols):
    import sqlalchemy as sa

    args = [sa.func.coalesce(x, -1) for x in cols]
    if dialect == "sqlite":
        return sa.func.max(*args)
    return sa.func.greatest(*args)


def show_compactions(
    engine_or_url: Any,
    *,
    db: str | None = None,
    table: str | None = None,
    partition: str | list[str] | None = None,
    types: Iterable[str] | None = None,
    states: Iterable[str] | None = None,
    pool: str | None = None,
    compaction_id: int | None = None,
    order_by: str | None = None,
    limit: int | None = None,
    hive_version: Any = None,
) -> CompactionsReport:
    """COMPACTION_QUEUE ∪ COMPLETED_COMPACTIONS with Hive 4's filters (on Hive 3 too).

    ``types``: names or codes (major, minor, rebalance, abort_txn_cleanup); ``states``: state
    texts or codes (``ready for cleaning``, ``succeeded``, ``r``...); default order: most recent
    activity first, then enqueue time, then id — on Hive 4 exactly Hive's own ORDER BY
    (:func:`hive4_recent_first`: rows without a commit time have a NULL key and sort where the
    database puts NULLs), on Hive 3 (whose SHOW COMPACTIONS has no order) the greatest of end,
    start and commit time. ``pool``: on Hive 4 compared literally, as Hive does. ``limit``: the
    first N rows of that order; 0 means no limit, as in Hive 4.
    """
    from acidctl.metastore import thrift

    if thrift.is_thrift(engine_or_url):
        return thrift.show_compactions(
            engine_or_url,
            db=db,
            table=table,
            partition=partition,
            types=types,
            states=states,
            limit=limit or None,
            hive_version=hive_version,
            pool=pool,
            id=compaction_id,
            order_by=order_by,
        )
    import sqlalchemy as sa

    ms: Metastore = connect(engine_or_url, hive_version=hive_version)
    if limit is not None and limit < 0:
        raise UsageError("--limit must be >= 0")
    if not limit:
        limit = None  # as Hive 4: LIMIT 0 (or none) means every row
    filters = {
        "id": compaction_id,
        "db": db.lower() if db else None,
        "table": table.lower() if table else None,
        "partition": partition,
        "types": sorted({parse_compaction_type(x) for x in types}) if types else None,
        "states": sorted({c for x in states for c in parse_compaction_state(x)}) if states else None,
        "pool": pool,
    }
    order_spec = _parse_order(order_by)
    dialect = ms.flavor.dialect
    # Hive 4 sorts with its own CASE (when the schema has the commit time it needs)
    hive4 = (
        ms.hive_version >= 4
        and ms.tables.COMPLETED_COMPACTIONS.has("CC_COMMIT_TIME")
        and ms.tables.COMPACTION_QUEUE.has("CQ_COMMIT_TIME")
    )

    def order(t, p, queue):
        """ORDER BY for one branch (its own column names; absent columns are constants and skipped)."""

        def col(union_name):
            src = dict((u[0], (u[1] if queue else u[2])) for u in _UNION)[union_name]
            if src is None or not t.has(src):
                return None
            return getattr(t, src)

        if order_spec:
            return [x for c, d in ((col(n), d) for n, d in order_spec) if c is not None for x in _nulls_last(c, d)] + [
                col("CC_ID").asc()
            ]
        if hive4:
            end = col("CC_END") if col("CC_END") is not None else sa.literal(-1)
            return [
                hive4_recent_first(end, col("CC_START"), col("CC_COMMIT_TIME")).desc(),
                col("CC_ENQUEUE_TIME").asc(),
                col("CC_ID").asc(),
            ]
        recent = [c for c in (col("CC_END"), col("CC_START"), col("CC_COMMIT_TIME")) if c is not None]
        out = [(_greatest(dialect, *recent) if len(recent) > 1 else sa.func.coalesce(recent[0], -1)).desc()]
        if col("CC_ENQUEUE_TIME") is not None:
            out.append(col("CC_ENQUEUE_TIME").asc())
        return out + [col("CC_ID").asc()]

    q1 = _branch(ms, True, filters, limit, order)
    q2 = _branch(ms, False, filters, limit, order)
    if limit is not None:
        q1, q2 = q1.subquery().select(), q2.subquery().select()
    u = sa.union_all(q1, q2).subquery("c")
    if order_spec:
        ob = [x for n, d in order_spec for x in _nulls_last(u.c[n], d)] + [u.c.CC_ID.asc()]
    elif hive4:
        ob = [
            hive4_recent_first(u.c.CC_END, u.c.CC_START, u.c.CC_COMMIT_TIME).desc(),
            u.c.CC_ENQUEUE_TIME.asc(),
            u.c.CC_ID.asc(),
        ]
    else:
        ob = [
            _greatest(dialect, u.c.CC_END, u.c.CC_START, u.c.CC_COMMIT_TIME).desc(),
            u.c.CC_ENQUEUE_TIME.asc(),
            u.c.CC_ID.asc(),
        ]
    q = sa.select(u).order_by(*ob)
    if limit is not None:
        q = q.limit(limit)
    out = []
    with ms.read() as conn:
        for r in conn.execute(q).mappings():
            out.append(_compaction_row(r, ms.hive_version))
    return CompactionsReport(ms.hive_version, out)


def _compaction_row(r, hive_version) -> dict:
    """One SHOW COMPACTIONS row, with Hive 4's column names."""
    worker_host, worker = _split_id(r["CC_WORKER_ID"])
    init_host, init = _split_id(r["CC_INITIATOR_ID"])
    start, end = _int(r["CC_START"]), _int(r["CC_END"])
    return {
        "compactionid": int(r["CC_ID"]),
        "dbname": r["CC_DATABASE"],
        "tabname": r["CC_TABLE"],
        "partname": r["CC_PARTITION"],
        "type": COMPACTION_TYPES.get(r["CC_TYPE"], r["CC_TYPE"]),
        "state": compaction_state_text(r["CC_STATE"], hive_version),
        "worker": r["CC_WORKER_ID"],
        "workerhost": worker_host,
        "workerid": worker,
        "enqueuetime": _int(r["CC_ENQUEUE_TIME"]),
        "starttime": start if start else None,
        "endtime": end if end and end > 0 else None,
        "duration": (end - start) if (start and end and end > 0) else None,
        "hadoopjobid": r["CC_HADOOP_JOB_ID"],
        "errormessage": r["CC_ERROR_MESSAGE"],
        "initiatorhost": init_host,
        "initiatorid": init,
        "poolname": r["CC_POOL_NAME"] or "default",
        "txnid": _int(r["CC_TXN_ID"]),
        "nexttxnid": _int(r["CC_NEXT_TXN_ID"]),
        "committime": _int(r["CC_COMMIT_TIME"]),
        "hightestwriteid": _int(r["CC_HIGHEST_WRITE_ID"]),
        "runas": r["CC_RUN_AS"],
    }
