"""Hive's compaction queue, written the way Hive's own metastore code writes it
(../shared/spec/metastore.md §9, operations.md §1, §3).

* :func:`enqueue` — ``ALTER TABLE ... COMPACT`` / Thrift ``compact2``: under the
  ``CompactionScheduler`` mutex, duplicate check, id from ``NEXT_COMPACTION_QUEUE_ID`` and an
  ``initiated`` row. Hive 3 (``TxnHandler.compact``): an ``i``/``w`` row of the same
  db/table/partition is returned with ``accepted=false``; the id is taken under ``SELECT ... FOR
  UPDATE``. Hive 4 (``CompactFunction``): also an ``r`` row whose ``CQ_HIGHEST_WRITE_ID`` equals the
  current compactor high-water mark counts; the answer is id ``-1``, state ``refused`` and the
  message Hive writes; the id is allocated by compare-and-set; the row carries enqueue time,
  initiator id/version and pool;
* :func:`claim` — ``findNextToCompact``: candidates (Hive 4: by ``CQ_ID``, pools as §3.1), each
  tried with the conditional ``UPDATE ... WHERE CQ_ID = ? AND CQ_STATE = 'i'`` until one updates
  one row — so acidctl never races Hive's workers or another acidctl;
* :func:`set_highest_write_id` / :func:`set_run_as` (Hive 3), :func:`set_highest_txn_id` (Hive
  2.3's ``setCompactionHighestTxnId``) and :func:`update_compactor_state` (Hive 4, with the
  ``TXN_COMPONENTS`` ``c`` row);
* :func:`mark_compacted` (``r``), :func:`mark_refused` (Hive 4 ``c``), :func:`mark_failed`
  (``f``): the last two move the row to ``COMPLETED_COMPACTIONS`` (error message kept where
  the schema has the column);
* :func:`release` — give a claimed request back (``w`` → ``i``), as Hive's
  ``revokeFromLocalWorkers`` does for one row: what a stopping worker does with a request it
  claimed but did not start; :func:`withdraw` — delete a request acidctl enqueued itself and
  did not run.

Each function is one :func:`acidctl.metastore.steps.write_step`.

Hive 2.3 (a :class:`~acidctl.metastore.hive2.Hive2Metastore`, ``hive_version`` 2): its
``TxnHandler.compact``, ``findNextToCompact``, ``setRunAs``, ``markCompacted``, ``markFailed``
(no error-message column), ``revokeFromLocalWorkers`` and ``revokeTimedoutWorkers`` write the same
rows as Hive 3's (insert-only-and-hive2.md B.8; checked against 2.3's CompactionTxnHandler), so
the same functions run them; only the highest id differs (:func:`set_highest_txn_id`).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import logging
import os
import socket
from typing import Any

from acidctl.errors import NotFoundError, RefusedError, UsageError
from acidctl.metastore import steps

log = logging.getLogger("acidctl.metastore")

TYPE_CODES = {"major": "a", "minor": "i"}
TYPE_NAMES = {"a": "major", "i": "minor", "r": "rebalance", "c": "abort_txn_cleanup"}
STATE_RESPONSE = {"i": "initiated", "w": "working", "r": "ready for cleaning"}
# Hive 4 CompactionState enum names (CompactFunction's refusal message uses them)
STATE_ENUM = {"i": "INITIATED", "w": "WORKING", "r": "READY_FOR_CLEANING"}
POOL_PROPERTY = "hive.compactor.worker.pool"
POOL_TIMEOUT_MS = 12 * 3600 * 1000  # hive.compactor.worker.pool.timeout
NOTHING_TO_COMPACT = "None of the compaction thresholds met, compaction request is refused!"


def acidctl_version() -> str:
    try:
        from acidctl import __version__

        return f"acidctl-{__version__}"
    except Exception:  # pragma: no cover
        return "acidctl"


def manual_initiator_id() -> str:
    """``<hostname>-manual``: what Hive 4 records for an ``ALTER TABLE ... COMPACT``."""
    return f"{socket.gethostname()}-manual"


def process_id() -> str:
    """Worker/initiator id of this process: ``acidctl@<host>-<pid>`` — it cannot prefix-match a
    Hive hostname, so Hive's ``revokeFromLocalWorkers(<host>)`` never resets acidctl's rows
    (operations.md §3.4)."""
    return f"acidctl@{socket.gethostname()}-{os.getpid()}"


def compaction_type_code(value: str) -> str:
    v = str(value).lower()
    if v in TYPE_CODES:
        return TYPE_CODES[v]
    if v in TYPE_NAMES and v in ("a", "i"):
        return v
    raise UsageError(f"compaction type must be major or minor, not {value!r}")


# ---------------------------------------------------------------------------------------
# the AUX_TABLE mutex
# ---------------------------------------------------------------------------------------


def acquire_mutex(ms, conn, key: str) -> None:
    """Hive's ``MutexAPI.acquireLock(key)``, held until this DB transaction ends (operations.md §1):
    Hive 4 locks ``WHERE MT_KEY1=?`` (``MT_KEY2`` holds a timestamp there), Hive 3
    ``WHERE MT_KEY1=? AND MT_KEY2=0``; a missing row is inserted (a concurrent duplicate insert is
    tolerated) and selected again. Hive takes it on a second connection; here it is taken in the
    step's own transaction, which excludes the same holders for the same span."""
    import sqlalchemy as sa

    a = ms.tables.AUX_TABLE
    cond = [a.MT_KEY1 == key]
    if ms.hive_version < 4:
        cond.append(a.MT_KEY2 == 0)
    q = steps.for_update(sa.select(a.MT_COMMENT, a.MT_KEY2).where(*cond), conn)
    if conn.execute(q).first() is not None:
        return
    try:
        with conn.begin_nested():
            conn.execute(sa.insert(a.clause).values({a.MT_KEY1.name: key, a.MT_KEY2.name: 0}))
    except Exception as e:  # another instance inserted it first
        if "duplicate" not in str(e).lower() and "unique" not in str(e).lower():
            raise
    conn.execute(q).first()


# ---------------------------------------------------------------------------------------
# requests
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass
class Request:
    """One COMPACTION_QUEUE row as the worker needs it."""

    cq_id: int
    db: str
    table: str
    partition: str | None
    type: str  # major | minor | rebalance | abort_txn_cleanup
    state: str  # code
    properties: str | None = None
    run_as: str | None = None
    pool: str | None = None
    worker_id: str | None = None
    txn_id: int | None = None
    highest_write_id: int | None = None

    @property
    def full_name(self) -> str:
        return f"{self.db}.{self.table}"

    @property
    def display(self) -> str:
        return self.full_name + (f"/{self.partition}" if self.partition else "")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _request(ms, row) -> Request:
    r = {k.upper(): v for k, v in row.items()}
    return Request(
        cq_id=int(r["CQ_ID"]),
        db=r["CQ_DATABASE"],
        table=r["CQ_TABLE"],
        partition=r["CQ_PARTITION"],
        type=TYPE_NAMES.get(r["CQ_TYPE"], r["CQ_TYPE"]),
        state=r["CQ_STATE"],
        properties=r.get("CQ_TBLPROPERTIES"),
        run_as=r.get("CQ_RUN_AS"),
        pool=r.get("CQ_POOL_NAME"),
        worker_id=r.get("CQ_WORKER_ID"),
        txn_id=r.get("CQ_TXN_ID"),
        # Hive 2.3 records CQ_HIGHEST_TXN_ID: its txn ids are what its directories are named by
        highest_write_id=r.get("CQ_HIGHEST_WRITE_ID", r.get("CQ_HIGHEST_TXN_ID")),
    )


def get_request(ms, cq_id: int, conn=None) -> Request | None:
    import sqlalchemy as sa

    cq = ms.tables.COMPACTION_QUEUE

    def q(c):
        row = c.execute(sa.select(cq.clause).where(cq.CQ_ID == cq_id)).mappings().first()
        return _request(ms, row) if row is not None else None

    if conn is not None:
        return q(conn)
    with ms.read() as c:
        return q(c)


def partition_eq(col, partition):
    return col.is_(None) if partition is None else col == partition


@dataclasses.dataclass
class EnqueueResult:
    id: int
    state: str
    accepted: bool
    message: str | None = None
    existing_id: int | None = None  # the queued request that made this one a duplicate

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _next_queue_id_h3(ms, conn) -> int:
    """Hive 3 ``generateCompactionQueueId``: ``SELECT NCQ_NEXT ... FOR UPDATE``, then ``+ 1``."""
    import sqlalchemy as sa

    n = ms.tables.NEXT_COMPACTION_QUEUE_ID
    cur = conn.execute(steps.for_update(sa.select(n.NCQ_NEXT), conn)).scalar()
    if cur is None:
        raise NotFoundError("NEXT_COMPACTION_QUEUE_ID has no row")
    conn.execute(sa.update(n.clause).values({n.NCQ_NEXT.name: int(cur) + 1}))
    return int(cur)


def _next_queue_id_h4(ms, conn) -> int:
    """Hive 4 ``GenerateCompactionQueueIdFunction``: read ``NCQ_NEXT``, then
    ``UPDATE ... SET NCQ_NEXT = id + 1 WHERE NCQ_NEXT = id``, retried until it updates a row."""
    import sqlalchemy as sa

    n = ms.tables.NEXT_COMPACTION_QUEUE_ID
    for _ in range(1000):
        cur = conn.execute(sa.select(n.NCQ_NEXT)).scalar()
        if cur is None:
            raise NotFoundError("NEXT_COMPACTION_QUEUE_ID has no row")
        cur = int(cur)
        if conn.execute(sa.update(n.clause).where(n.NCQ_NEXT == cur).values({n.NCQ_NEXT.name: cur + 1})).rowcount == 1:
            return cur
    raise RefusedError("could not allocate a compaction id (NEXT_COMPACTION_QUEUE_ID keeps changing)")


def next_queue_id(ms, conn) -> int:
    return _next_queue_id_h4(ms, conn) if ms.hive_version >= 4 else _next_queue_id_h3(ms, conn)


def _compactor_hwm(ms, conn, db: str, table: str) -> int:
    """The table's current compactor high-water mark (Hive 4's duplicate check)."""
    from acidctl.metastore.snapshot import read_txn_list, read_write_id_list

    txns = read_txn_list(ms, conn)
    wl, _ = read_write_id_list(ms, conn, db, table, txns)
    return wl.for_compactor().hwm


def enqueue(
    ms,
    db: str,
    table: str,
    *,
    partition: str | None = None,
    type: str = "major",
    pool: str | None = None,
    initiator_id: str | None = None,
    initiator_version: str | None = None,
    run_as: str | None = None,
    properties: dict | None = None,
    read_only: bool = False,
    dry_run: bool = False,
) -> EnqueueResult:
    """Put a compaction request into the queue exactly as the connected Hive version does.
    ``dry_run``: the same answer (a duplicate is refused the same way) read without writing —
    no mutex, no row, ``NEXT_COMPACTION_QUEUE_ID`` not consumed; ``id`` is the id the request
    would get now."""
    import sqlalchemy as sa

    ct = compaction_type_code(type)
    db, table = db.lower(), table.lower()
    cq = ms.tables.COMPACTION_QUEUE
    h4 = ms.hive_version >= 4
    tblprops = stringable_map(properties) if properties else None

    def step(conn: sa.Connection) -> EnqueueResult:
        if not dry_run:
            acquire_mutex(ms, conn, "CompactionScheduler")
        where = [cq.CQ_DATABASE == db, cq.CQ_TABLE == table, partition_eq(cq.CQ_PARTITION, partition)]
        if h4:
            hwm = _compactor_hwm(ms, conn, db, table)
            dup = sa.or_(cq.CQ_STATE.in_(["i", "w"]), sa.and_(cq.CQ_STATE == "r", cq.CQ_HIGHEST_WRITE_ID == hwm))
        else:
            dup = cq.CQ_STATE.in_(["i", "w"])
        row = conn.execute(sa.select(cq.CQ_ID, cq.CQ_STATE).where(dup, *where)).first()
        if row is not None:
            eid, st = int(row[0]), str(row[1])  # CQ_STATE is CHAR(1) NOT NULL
            if h4:
                return EnqueueResult(
                    -1,
                    "refused",
                    False,
                    f"Compaction is already scheduled with state='{STATE_ENUM.get(st, st)}' and id={eid}",
                    existing_id=eid,
                )
            return EnqueueResult(
                eid,
                STATE_RESPONSE.get(st, st),
                False,
                f"Compaction already enqueued with id {eid}; State is {STATE_RESPONSE.get(st, st)}",
                existing_id=eid,
            )
        if dry_run:
            n = ms.tables.NEXT_COMPACTION_QUEUE_ID
            nxt = conn.execute(sa.select(n.NCQ_NEXT)).scalar()
            if nxt is None:
                raise NotFoundError("NEXT_COMPACTION_QUEUE_ID has no row")
            return EnqueueResult(int(nxt), "initiated", True, f"Compaction would be enqueued with id {int(nxt)}")
        cq_id = next_queue_id(ms, conn)
        vals: dict[str, Any] = dict(
            CQ_ID=cq_id,
            CQ_DATABASE=db,
            CQ_TABLE=table,
            CQ_PARTITION=partition,
            CQ_STATE="i",
            CQ_TYPE=ct,
            CQ_TBLPROPERTIES=tblprops,
            CQ_RUN_AS=run_as,
        )
        if h4:
            vals.update(
                CQ_POOL_NAME=pool,
                CQ_NUMBER_OF_BUCKETS=None,
                CQ_ORDER_BY=None,
                CQ_INITIATOR_ID=initiator_id or manual_initiator_id(),
                CQ_INITIATOR_VERSION=initiator_version or acidctl_version(),
                CQ_HIGHEST_WRITE_ID=None,
                CQ_TXN_ID=None,
                CQ_ENQUEUE_TIME=steps.now_ms(conn),
            )
        conn.execute(sa.insert(cq.clause).values({getattr(cq, k).name: v for k, v in vals.items()}))
        return EnqueueResult(cq_id, "initiated", True, f"Compaction enqueued with id {cq_id}")

    if dry_run:
        with ms.read() as conn:
            return step(conn)
    res = steps.write_step(ms, step, name="enqueue a compaction", read_only=read_only)
    log.info("enqueue %s.%s%s %s: %s", db, table, "/" + partition if partition else "", type, res.message)
    return res


# ---------------------------------------------------------------------------------------
# the worker side
# ---------------------------------------------------------------------------------------


def claim(
    ms,
    *,
    worker_id: str,
    worker_version: str | None = None,
    pool: str | None = None,
    pool_timeout_ms: int = POOL_TIMEOUT_MS,
    db_glob: str | None = None,
    only_ids: list[int] | None = None,
    types: tuple[str, ...] = ("a", "i"),
    any_pool: bool = False,
    read_only: bool = False,
) -> Request | None:
    """``findNextToCompact``: claim one ``initiated`` request with the conditional update
    (operations.md §3.1); None when there is none left. ``db_glob`` / ``only_ids`` / ``types``
    narrow the candidates (acidctl runs major and minor compactions only); ``any_pool`` ignores
    pools (``compact`` claiming the request of the partition it was asked to compact)."""
    import sqlalchemy as sa

    cq = ms.tables.COMPACTION_QUEUE
    h4 = ms.hive_version >= 4

    def step(conn):
        now = steps.now_ms(conn)
        for req in _candidates(
            ms,
            conn,
            now,
            pool=pool,
            pool_timeout_ms=pool_timeout_ms,
            db_glob=db_glob,
            only_ids=only_ids,
            types=types,
            any_pool=any_pool,
        ):
            vals = {cq.CQ_WORKER_ID.name: worker_id, cq.CQ_START.name: now, cq.CQ_STATE.name: "w"}
            if h4:
                vals[cq.CQ_WORKER_VERSION.name] = worker_version or acidctl_version()
            n = conn.execute(
                sa.update(cq.clause).where(cq.CQ_ID == req.cq_id, cq.CQ_STATE == "i").values(vals)
            ).rowcount
            if n == 1:
                req.state, req.worker_id = "w", worker_id
                return req
        return None

    got = steps.write_step(ms, step, name="claim a compaction request", read_only=read_only)
    if got is not None:
        log.info("claimed compaction %d (%s %s)", got.cq_id, got.display, got.type)
    return got


def claimable(ms, *, limit: int, pool: str | None = None, db_glob: str | None = None) -> list[Request]:
    """The first ``limit`` requests :func:`claim` would claim one after another (``worker
    --dry-run``), read without writing anything."""
    return candidates(ms, pool=pool, db_glob=db_glob)[:limit]


def _candidates(
    ms,
    conn,
    now: int,
    *,
    pool: str | None,
    pool_timeout_ms: int,
    db_glob: str | None,
    only_ids: list[int] | None = None,
    types: tuple[str, ...] = ("a", "i"),
    any_pool: bool = False,
) -> list[Request]:
    """``findNextToCompact``'s candidates, in its order (operations.md §3.1)."""
    import sqlalchemy as sa

    cq = ms.tables.COMPACTION_QUEUE
    q = sa.select(cq.clause)
    if any_pool:
        q = q.where(cq.CQ_STATE == "i")
    elif ms.hive_version >= 4:
        if pool:
            q = q.where(cq.CQ_STATE == "i", cq.CQ_POOL_NAME == pool)
        else:
            # Hive's SQL has no parentheses here: old rows in any state come back too and the
            # conditional update filters them out
            q = q.where(
                sa.or_(
                    sa.and_(cq.CQ_STATE == "i", cq.CQ_POOL_NAME.is_(None)),
                    cq.CQ_ENQUEUE_TIME < now - pool_timeout_ms,
                )
            )
    else:
        q = q.where(cq.CQ_STATE == "i")
    if only_ids is not None:
        q = q.where(cq.CQ_ID.in_(list(only_ids)))
    out = []
    for row in conn.execute(q.order_by(cq.CQ_ID)).mappings().all():
        req = _request(ms, row)
        if row_type(row) not in types:
            continue
        if db_glob and not fnmatch.fnmatchcase(req.db, db_glob.lower()):
            continue
        out.append(req)
    return out


def candidates(
    ms,
    *,
    pool: str | None = None,
    pool_timeout_ms: int = POOL_TIMEOUT_MS,
    db_glob: str | None = None,
    types: tuple[str, ...] = ("a", "i"),
) -> list[Request]:
    """The requests :func:`claim` would try, in its order, read without claiming any (``acidctl
    worker`` first checks that a candidate's partition is free, then claims that one request)."""
    with ms.read() as conn:
        now = steps.now_ms(conn)
        return [
            r
            for r in _candidates(
                ms,
                conn,
                now,
                pool=pool,
                pool_timeout_ms=pool_timeout_ms,
                db_glob=db_glob,
                only_ids=None,
                types=types,
                any_pool=False,
            )
            if r.state == "i"
        ]


def row_type(row) -> str:
    return {k.upper(): v for k, v in row.items()}["CQ_TYPE"]


def _update_one(ms, cq_id: int, values: dict, *, name: str, read_only: bool, state: str | None = None) -> None:
    import sqlalchemy as sa

    cq = ms.tables.COMPACTION_QUEUE

    def step(conn):
        cond = [cq.CQ_ID == cq_id]
        if state is not None:
            cond.append(cq.CQ_STATE == state)
        n = conn.execute(
            sa.update(cq.clause).where(*cond).values({getattr(cq, k).name: v for k, v in values.items()})
        ).rowcount
        if n != 1:
            raise RefusedError(
                f"{name}: compaction {cq_id} is not in the queue"
                + (f" in state {STATE_RESPONSE.get(state, state)}" if state else "")
            )

    steps.write_step(ms, step, name=name, read_only=read_only)


def set_highest_write_id(ms, cq_id: int, highest_write_id: int, *, read_only: bool = False) -> None:
    """Hive 3 ``setCompactionHighestWriteId``: ``CQ_HIGHEST_WRITE_ID`` = the compactor hwm."""
    if ms.hive_version == 2:
        raise RefusedError("setCompactionHighestWriteId is Hive 3's; Hive 2.3 uses setCompactionHighestTxnId")
    _update_one(
        ms,
        cq_id,
        {"CQ_HIGHEST_WRITE_ID": int(highest_write_id)},
        name="set the compaction's highest write id",
        read_only=read_only,
    )


def set_highest_txn_id(ms, cq_id: int, highest_txn_id: int, *, read_only: bool = False) -> None:
    """Hive 2.3 ``setCompactionHighestTxnId``: ``CQ_HIGHEST_TXN_ID`` = the high-water mark of the
    compactor's ValidTxnList (lowest open txn − 1); no row updated is an error in Hive too
    (``IllegalStateException``)."""
    if ms.hive_version != 2:
        raise RefusedError("setCompactionHighestTxnId is Hive 2.3's; Hive 3 uses setCompactionHighestWriteId")
    _update_one(
        ms,
        cq_id,
        {"CQ_HIGHEST_TXN_ID": int(highest_txn_id)},
        name="set the compaction's highest txn id",
        read_only=read_only,
    )


def set_run_as(ms, cq_id: int, user: str, *, read_only: bool = False) -> None:
    """Hive 3 ``setRunAs`` (the Worker calls it when ``CQ_RUN_AS`` is NULL)."""
    _update_one(ms, cq_id, {"CQ_RUN_AS": user}, name="set the compaction's run-as user", read_only=read_only)


def update_compactor_state(
    ms, cq_id: int, *, txn_id: int, highest_write_id: int, run_as: str | None, read_only: bool = False
) -> None:
    """Hive 4 ``updateCompactorState``: ``CQ_HIGHEST_WRITE_ID``, ``CQ_RUN_AS``, ``CQ_TXN_ID`` on the
    queue row and the compactor txn's ``TXN_COMPONENTS`` row with operation ``c`` (metastore.md
    §9.2 step 3)."""
    import sqlalchemy as sa

    if ms.hive_version < 4:
        raise RefusedError("updateCompactorState is Hive 4's; Hive 3 uses setCompactionHighestWriteId")
    T = ms.tables
    cq, tc = T.COMPACTION_QUEUE, T.TXN_COMPONENTS

    def step(conn):
        n = conn.execute(
            sa.update(cq.clause)
            .where(cq.CQ_ID == cq_id)
            .values(
                {
                    cq.CQ_HIGHEST_WRITE_ID.name: int(highest_write_id),
                    cq.CQ_RUN_AS.name: run_as,
                    cq.CQ_TXN_ID.name: int(txn_id),
                }
            )
        ).rowcount
        if n != 1:
            raise RefusedError(f"compaction {cq_id} is not in the queue")
        row = conn.execute(sa.select(cq.CQ_DATABASE, cq.CQ_TABLE, cq.CQ_PARTITION).where(cq.CQ_ID == cq_id)).first()
        conn.execute(
            sa.insert(tc.clause).values(
                {
                    tc.TC_TXNID.name: int(txn_id),
                    tc.TC_DATABASE.name: row[0],
                    tc.TC_TABLE.name: row[1],
                    tc.TC_PARTITION.name: row[2],
                    tc.TC_WRITEID.name: int(highest_write_id),
                    tc.TC_OPERATION_TYPE.name: "c",
                }
            )
        )

    steps.write_step(ms, step, name="update the compactor state", read_only=read_only)


def mark_compacted(ms, cq_id: int, *, read_only: bool = False) -> None:
    """``markCompacted``: ``CQ_STATE='r'``, ``CQ_WORKER_ID=NULL`` (exactly one row)."""
    _update_one(
        ms, cq_id, {"CQ_STATE": "r", "CQ_WORKER_ID": None}, name="mark the compaction compacted", read_only=read_only
    )


#: ``history_row(error=KEEP)``: the history row keeps the queue row's error message
KEEP: Any = object()


def history_row(ms, q: dict, *, state: str, end: int, error: Any = KEEP) -> dict:
    """A COMPLETED_COMPACTIONS row from a queue row (``q``: upper-case ``CQ_`` names), as every
    Hive method that moves a request to history builds it: each ``CC_*`` from the same-named
    ``CQ_*`` (``CQ_CLEANER_START`` and ``CQ_RETRY_RETENTION`` have no ``CC_`` column), then the
    state, ``CC_END`` and — where the schema has the column and ``error`` is given — the
    error message. Used by markFailed/markRefused, abortCompactions and markCleaned."""
    cc = ms.tables.COMPLETED_COMPACTIONS
    out: dict[str, Any] = {}
    for col in cc.clause.columns:
        c = col.name.upper()
        if c == "CC_STATE":
            out[c] = state
        elif c == "CC_END":
            out[c] = end
        elif c == "CC_ERROR_MESSAGE" and error is not KEEP:
            out[c] = error
        else:
            out[c] = q.get("CQ_" + c[3:])
    return out


def insert_history(ms, conn, values: dict) -> None:
    """INSERT one :func:`history_row` into COMPLETED_COMPACTIONS."""
    import sqlalchemy as sa

    cc = ms.tables.COMPLETED_COMPACTIONS
    conn.execute(sa.insert(cc.clause).values({getattr(cc, k).name: v for k, v in values.items()}))


#: Hive 4 ``CompactionState`` names, as its error messages print them
STATE_NAMES = {
    "i": "INITIATED",
    "w": "WORKING",
    "r": "READY_FOR_CLEANING",
    "f": "FAILED",
    "s": "SUCCEEDED",
    "a": "DID_NOT_INITIATE",
    "c": "REFUSED",
    "x": "ABORTED",
}


def state_name(code: str | None, hive_version: int) -> str:
    """A queue/history state code as Hive's messages name it (Hive 3 calls ``a`` ATTEMPTED)."""
    if code == "a" and hive_version == 3:
        return "ATTEMPTED"
    return STATE_NAMES.get(code or "", str(code))


def move_to_history(ms, conn, cq_id: int, state: str, message: str | None, *, expect_state: str | None = None) -> dict:
    """The step of ``markFailed`` / ``markRefused`` (``updateStatus``; operations.md §3.3), inside
    one DB transaction: read the queue row (FOR UPDATE), delete it, insert its history row in
    ``state`` with ``CC_END`` = db now and (Hive 4; Hive 3 has no ``CC_ERROR_MESSAGE``) the
    message. ``expect_state``: refuse unless the row is in that queue state (revert's check that
    the request is still ``ready for cleaning``). Returns ``{cq_id, state, message}``."""
    import sqlalchemy as sa

    cq = ms.tables.COMPACTION_QUEUE
    row = conn.execute(steps.for_update(sa.select(cq.clause).where(cq.CQ_ID == cq_id), conn)).mappings().first()
    if row is None:
        raise NotFoundError(f"compaction {cq_id} is not in COMPACTION_QUEUE")
    q = {k.upper(): v for k, v in row.items()}
    if expect_state is not None and q["CQ_STATE"] != expect_state:
        raise RefusedError(
            f"compaction {cq_id} is in state {state_name(q['CQ_STATE'], ms.hive_version)}, "
            f"not {state_name(expect_state, ms.hive_version)}"
        )
    conn.execute(sa.delete(cq.clause).where(cq.CQ_ID == cq_id))
    insert_history(ms, conn, history_row(ms, q, state=state, end=steps.now_ms(conn), error=message))
    return {"cq_id": cq_id, "state": state, "message": message}


def mark_failed(
    ms, cq_id: int, *, message: str | None = None, expect_state: str | None = None, read_only: bool = False
) -> dict:
    """``markFailed``: the row moves to history as ``f`` (Hive 4 keeps the error message);
    ``expect_state``: only from that queue state (else :class:`RefusedError`, nothing written)."""
    return steps.write_step(
        ms,
        lambda conn: move_to_history(ms, conn, cq_id, "f", message, expect_state=expect_state),
        name="mark the compaction failed",
        read_only=read_only,
    )


def mark_refused(ms, cq_id: int, *, message: str | None = NOTHING_TO_COMPACT, read_only: bool = False) -> None:
    """Hive 4 ``markRefused``: the row moves to history as ``c`` (refused)."""
    if ms.hive_version < 4:
        raise RefusedError("markRefused is Hive 4's (Hive 3 has no refused state)")
    steps.write_step(
        ms,
        lambda conn: move_to_history(ms, conn, cq_id, "c", message),
        name="mark the compaction refused",
        read_only=read_only,
    )


def release(ms, cq_id: int, *, worker_id: str, read_only: bool = False) -> bool:
    """Give back a request this worker claimed but did not start: ``w`` → ``i`` with worker and
    start cleared (``revokeFromLocalWorkers`` for one row). False if it was not ours any more."""
    import sqlalchemy as sa

    cq = ms.tables.COMPACTION_QUEUE

    def step(conn):
        return (
            conn.execute(
                sa.update(cq.clause)
                .where(cq.CQ_ID == cq_id, cq.CQ_STATE == "w", cq.CQ_WORKER_ID == worker_id)
                .values({cq.CQ_WORKER_ID.name: None, cq.CQ_START.name: None, cq.CQ_STATE.name: "i"})
            ).rowcount
            == 1
        )

    return steps.write_step(ms, step, name="release a claimed compaction", read_only=read_only)


def withdraw(ms, cq_id: int, *, worker_id: str, read_only: bool = False) -> bool:
    """Delete a request this worker enqueued itself, claimed and did not run (the no-trace rule:
    a refused or interrupted ``compact`` leaves the queue as it found it). Only the row still
    ``working`` under this worker id goes; False if it was not ours any more. Its id stays
    consumed in ``NEXT_COMPACTION_QUEUE_ID``, as every id Hive hands out does."""
    import sqlalchemy as sa

    cq = ms.tables.COMPACTION_QUEUE

    def step(conn):
        return (
            conn.execute(
                sa.delete(cq.clause).where(cq.CQ_ID == cq_id, cq.CQ_STATE == "w", cq.CQ_WORKER_ID == worker_id)
            ).rowcount
            == 1
        )

    return steps.write_step(ms, step, name="withdraw an unstarted compaction request", read_only=read_only)


def revoke_dead_local_workers(ms, *, read_only: bool = False) -> list[int]:
    """``revokeFromLocalWorkers`` for acidctl's own dead processes: ``working`` requests whose
    worker id is ``acidctl@<this host>-<pid>`` (:func:`process_id`) of a process that no longer
    runs go back to ``initiated`` with worker and start cleared — Hive's update (operations.md
    §3.4), narrowed to those exact worker ids, so a live acidctl or any Hive worker is never
    touched. What a SIGKILLed ``compact``/``worker`` left; their Hive 4 compactor txns are left
    to the timeout reaper, as Hive leaves a dead worker's. Returns the ids revoked."""
    import sqlalchemy as sa

    from acidctl.compact.lock import pid_alive

    cq = ms.tables.COMPACTION_QUEUE
    prefix = f"acidctl@{socket.gethostname()}-"
    with ms.read() as conn:
        rows = conn.execute(
            sa.select(cq.CQ_ID, cq.CQ_WORKER_ID).where(cq.CQ_STATE == "w", cq.CQ_WORKER_ID.like(prefix + "%"))
        ).all()
    dead = []
    for cq_id, worker in rows:
        pid = str(worker)[len(prefix) :]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            dead.append((int(cq_id), str(worker)))
    if not dead:
        return []

    def step(conn):
        out = []
        for cq_id, worker in dead:
            n = conn.execute(
                sa.update(cq.clause)
                .where(cq.CQ_ID == cq_id, cq.CQ_STATE == "w", cq.CQ_WORKER_ID == worker)
                .values({cq.CQ_WORKER_ID.name: None, cq.CQ_START.name: None, cq.CQ_STATE.name: "i"})
            ).rowcount
            if n == 1:
                out.append(cq_id)
        return out

    got = steps.write_step(ms, step, name="revoke dead acidctl workers", read_only=read_only)
    for cq_id in got:
        log.info("compaction %d: its acidctl worker on this host is gone; back to initiated", cq_id)
    return got


WORKER_TIMEOUT_MS = 86_400_000  # hive.compactor.worker.timeout


def revoke_timed_out_workers(ms, *, timeout_ms: int = WORKER_TIMEOUT_MS, read_only: bool = False) -> int:
    """``revokeTimedoutWorkers`` (the Initiator, every cycle): ``working`` rows started more than
    ``timeout_ms`` ago go back to ``initiated`` with worker and start cleared; ``CQ_TXN_ID``,
    ``CQ_HIGHEST_WRITE_ID``, worker version and run-as stay (operations.md §3.4)."""
    import sqlalchemy as sa

    cq = ms.tables.COMPACTION_QUEUE

    def step(conn):
        now = steps.now_ms(conn)
        return int(
            conn.execute(
                sa.update(cq.clause)
                .where(cq.CQ_STATE == "w", cq.CQ_START < now - timeout_ms)
                .values({cq.CQ_WORKER_ID.name: None, cq.CQ_START.name: None, cq.CQ_STATE.name: "i"})
            ).rowcount
        )

    return steps.write_step(ms, step, name="revoke timed-out workers", read_only=read_only)


def stringable_map(props: dict) -> str:
    """Hive's StringableMap encoding: ``<n>:<klen>:<key><vlen>:<val>...`` (metastore.md §3.6).
    Hand-written: no Python library implements this Hive-private format."""
    out = [f"{len(props)}:"]
    for k, v in props.items():
        k, v = str(k), str(v)
        out.append(f"{len(k)}:{k}{len(v)}:{v}")
    return "".join(out)


def enqueue_for(
    ms, spec: str, *, type: str, pool: str | None = None, read_only: bool = False, dry_run: bool = False
) -> dict:
    """``ALTER TABLE DB.TABLE [PARTITION (...)] COMPACT 'major'|'minor' [POOL 'p']`` for
    ``DB.TABLE[/k=v...]``: the table (and partition) must exist; a partitioned table needs its
    partition (Hive 3 requires it; Hive 4 would check every partition with the Initiator logic —
    ``acidctl initiator --once`` does that). The pool defaults to the table's
    ``hive.compactor.worker.pool`` property (Hive 4). Returns the response as a dict."""
    from acidctl.metastore import thrift

    if thrift.is_thrift(ms):  # compact2, after checking the table exists
        return thrift.enqueue_for(ms, spec, type=type, pool=pool, dry_run=dry_run)
    if ms.hive_version == 2:
        from acidctl.metastore.hive2 import table_info

        info = table_info(ms, spec)
    else:
        from acidctl.metastore.tables import resolve_table

        info = resolve_table(ms, spec)
    if info.partitioned and not info.partition:
        raise UsageError(
            f"{info.full_name} is partitioned: give the partition as {info.full_name}/k=v",
            hint="acidctl initiator --once enqueues the partitions the thresholds flag",
        )
    if not info.transactional:
        raise RefusedError(f"{info.full_name} is not a transactional table")
    if ms.hive_version >= 4 and pool is None:
        pool = (info.params or {}).get(POOL_PROPERTY) or None
    elif ms.hive_version < 4 and pool is not None:
        raise UsageError(f"--pool needs a Hive 4 metastore (Hive {ms.hive_version} has no compaction pools)")
    res = enqueue(
        ms, info.db, info.table, partition=info.partition, type=type, pool=pool, read_only=read_only, dry_run=dry_run
    )
    doc = res.to_dict()
    doc.update(
        table=info.full_name,
        partition=info.partition,
        type=str(type).lower(),
        pool=pool,
        hive_version=ms.hive_version,
        dry_run=dry_run,
    )
    return doc
