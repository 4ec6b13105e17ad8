"""Hive transactions as one more metastore instance writes them (../shared/spec/operations.md §2).

* :func:`open_compaction_txn` — Hive 4 ``openTxns`` of one COMPACTION txn (``TXN_TYPE`` 3):
  shared ``TXN_LOCK_TBL`` lock, the ``MIN_HISTORY_LEVEL`` low-water mark computed *before* the
  insert, a database-generated ``TXN_ID``, and the 1 s ``metastore.txn.opentxn.timeout`` window
  (a step that took longer deletes its rows and is retried, the id stays burnt) (§2.1, §2.2);
* :func:`commit_compaction_txn` — Hive 4 ``commitTxn`` of a COMPACTION txn: exclusive txn lock,
  ``CQ_NEXT_TXN_ID = MAX(TXN_ID)``, ``CQ_COMMIT_TIME``, its ``TXN_COMPONENTS`` (incl. the ``c``
  row) and ``HIVE_LOCKS`` deleted, ``TXN_STATE='c'``; nothing copied to
  ``COMPLETED_TXN_COMPONENTS``, no ``WRITE_SET`` (§2.3);
* :func:`abort_txns` / :func:`abort_txn` — ``AbortTxnsFunction`` (Hive 4, with the reason in
  ``TXN_META_INFO``) and Hive 3's ``abortTxns`` (§2.4);
* :func:`heartbeat_txn` and :class:`Heartbeat` — ``TXN_LAST_HEARTBEAT = <db now>`` for an open
  txn, from a background thread while a compaction runs (§2.5).

Every call is one :func:`acidctl.metastore.steps.write_step` (one DB transaction, READ
COMMITTED, whole-step retry on deadlocks), so it refuses on ``--read-only`` and on schema
versions acidctl does not write.
"""

from __future__ import annotations

import dataclasses
import logging
import socket
import threading
import time
from typing import Iterable

from acidctl.errors import NotFoundError, RefusedError, UsageError
from acidctl.metastore import steps

log = logging.getLogger("acidctl.metastore")

TXN_TYPE_DEFAULT = 0
TXN_TYPE_COMPACTION = 3
TXN_TYPE_SOFT_DELETE = 5
OPEN_TXN_TIMEOUT_MS = 1000  # metastore.txn.opentxn.timeout (operations.md §9)
TXN_TIMEOUT_S = 300  # hive.txn.timeout / metastore.txn.timeout
MAX_OPEN_TXNS = 100_000  # hive.max.open.txns
OPEN_RETRIES = 10  # hive.hmshandler.retry.attempts (the "manual retry" of §2.1 step 8)

# TxnErrorMsg texts Hive 4 stores in TXN_META_INFO (operations.md §2.4)
ABORT_QUERY = "abort by query command"
ABORT_COMPACTION_TXN = "compaction transaction abort"


class TxnNotOpen(RefusedError):
    """The txn is aborted, committed or missing where an open one was needed."""


def _require_h4(ms, what: str) -> None:
    if ms.hive_version < 4:
        raise RefusedError(f"{what}: Hive 3 has no compaction txn (its Worker runs without one)")


def _table_present(ms, conn, name: str) -> bool:
    """Whether the physical table exists (MIN_HISTORY_LEVEL / MIN_HISTORY_WRITE_ID are only
    written where the schema has them). Cached on the Metastore object."""
    from acidctl.metastore.connection import _table_names

    cache = ms.__dict__.setdefault("_acidctl_present_tables", None)
    if cache is None:
        cache = {n.upper() for n in _table_names(conn)}
        ms.__dict__["_acidctl_present_tables"] = cache
    return name.upper() in cache


def lock_txn_table(conn, ms, *, exclusive: bool) -> None:
    """Hive 4's txn lock (operations.md §2.2): held until the DB transaction ends. SQLite: the
    step already runs under ``BEGIN IMMEDIATE`` (the whole database is locked)."""
    import sqlalchemy as sa

    d = conn.dialect.name
    if d == "sqlite":
        return
    lt = ms.tables.TXN_LOCK_TBL
    if d == "postgresql":
        q = conn.dialect.identifier_preparer.quote
        conn.execute(sa.text(f"LOCK TABLE {q(lt.clause.name)} IN {'EXCLUSIVE' if exclusive else 'SHARE'} MODE"))
    else:
        # MySQL/MariaDB: SELECT ... LOCK IN SHARE MODE / FOR UPDATE (Hive avoids LOCK TABLES,
        # which a commit does not release)
        conn.execute(sa.select(lt.TXN_LOCK).with_for_update(read=not exclusive)).all()


def _min_open_watermark(ms, conn, now: int, timeout_ms: int) -> int:
    """MinOpenTxnIdWaterMarkFunction: min(lowest open txn, highest txn older than the open-txn
    timeout + 1) (operations.md §2.1 step 3)."""
    import sqlalchemy as sa

    t = ms.tables.TXNS
    min_open = conn.execute(sa.select(sa.func.min(t.TXN_ID)).where(t.TXN_STATE == "o")).scalar()
    low = conn.execute(sa.select(sa.func.max(t.TXN_ID)).where(t.TXN_STARTED < now - timeout_ms)).scalar()
    cands = [int(min_open)] if min_open is not None else []
    cands.append(int(low) + 1 if low is not None else 0)
    return min(cands)


def _insert_txn(ms, conn, values: dict) -> int:
    import sqlalchemy as sa

    t = ms.tables.TXNS
    stmt = sa.insert(t.clause).values({getattr(t, k).name: v for k, v in values.items()})
    if conn.dialect.name == "postgresql":
        return int(conn.execute(stmt.returning(t.TXN_ID)).scalar())
    res = conn.execute(stmt)
    pk = res.inserted_primary_key
    if pk and pk[0] is not None:
        return int(pk[0])
    return int(res.lastrowid)


@dataclasses.dataclass
class OpenedTxn:
    txn_id: int
    started: int
    min_history: int | None  # MHL_MIN_OPEN_TXNID written (None: no MIN_HISTORY_LEVEL table)
    attempts: int


def open_compaction_txn(
    ms,
    *,
    user: str,
    host: str | None = None,
    txn_type: int = TXN_TYPE_COMPACTION,
    timeout_ms: int = OPEN_TXN_TIMEOUT_MS,
    read_only: bool = False,
) -> OpenedTxn:
    """Hive 4 ``openTxns`` of one txn of ``txn_type`` (COMPACTION by default), §2.1 steps 1–5, 8."""
    import sqlalchemy as sa

    _require_h4(ms, "open a compaction txn")
    host = host or socket.gethostname()
    t = ms.tables.TXNS

    def step(conn):
        n_open = conn.execute(sa.select(sa.func.count()).select_from(t.clause).where(t.TXN_STATE == "o")).scalar()
        if int(n_open or 0) >= MAX_OPEN_TXNS:
            raise RefusedError(f"maximum allowed number of open transactions ({MAX_OPEN_TXNS}) has been reached")
        lock_txn_table(conn, ms, exclusive=False)
        t0 = time.monotonic()
        now = steps.now_ms(conn)
        mhl = _table_present(ms, conn, "MIN_HISTORY_LEVEL")
        water = _min_open_watermark(ms, conn, now, timeout_ms) if mhl else None
        txn_id = _insert_txn(
            ms,
            conn,
            dict(
                TXN_STATE="o", TXN_STARTED=now, TXN_LAST_HEARTBEAT=now, TXN_USER=user, TXN_HOST=host, TXN_TYPE=txn_type
            ),
        )
        if mhl:
            h = ms.tables.MIN_HISTORY_LEVEL
            conn.execute(sa.insert(h.clause).values({h.MHL_TXNID.name: txn_id, h.MHL_MIN_OPEN_TXNID.name: water}))
        if (time.monotonic() - t0) * 1000 >= timeout_ms:
            # too slow for the readers' young-gap rule: delete what we inserted, commit, retry
            conn.execute(sa.delete(t.clause).where(t.TXN_ID == txn_id))
            if mhl:
                h = ms.tables.MIN_HISTORY_LEVEL
                conn.execute(sa.delete(h.clause).where(h.MHL_TXNID == txn_id))
            return None
        return OpenedTxn(txn_id, now, water, 0)

    for attempt in range(1, OPEN_RETRIES + 1):
        got = steps.write_step(ms, step, name="open a compaction txn", read_only=read_only)
        if got is not None:
            got.attempts = attempt
            log.info("opened txn %d (type %d)", got.txn_id, txn_type)
            return got
        log.info("openTxns took longer than %d ms; txn deleted, retry %d", timeout_ms, attempt)
    raise RefusedError(
        f"could not open a txn within metastore.txn.opentxn.timeout ({timeout_ms} ms) in {OPEN_RETRIES} attempts"
    )


def _txn_state(ms, conn, txn_id: int) -> str | None:
    import sqlalchemy as sa

    t = ms.tables.TXNS
    return conn.execute(sa.select(t.TXN_STATE).where(t.TXN_ID == txn_id)).scalar()


def _delete_min_history(ms, conn, txn_ids: list[int]) -> None:
    import sqlalchemy as sa

    if _table_present(ms, conn, "MIN_HISTORY_LEVEL"):
        h = ms.tables.MIN_HISTORY_LEVEL
        conn.execute(sa.delete(h.clause).where(h.MHL_TXNID.in_(txn_ids)))
    if ms.hive_version >= 4 and _table_present(ms, conn, "MIN_HISTORY_WRITE_ID"):
        w = ms.tables.MIN_HISTORY_WRITE_ID
        conn.execute(sa.delete(w.clause).where(w.MH_TXNID.in_(txn_ids)))


def lock_for_compaction(
    ms,
    txn_id: int,
    db: str,
    table: str,
    partition: str | None,
    *,
    user: str,
    host: str | None = None,
    agent_info: str = "acidctl worker",
    read_only: bool = False,
) -> int:
    """The Hive 4 Worker's lock (operations.md §3.2 step 3): a SHARED_READ lock owned by the
    compactor txn on the table or partition, which must be acquired at once. Two DB transactions
    as Hive's ``lock()``: enqueue (``NEXT_LOCK_ID`` under ``SELECT ... FOR UPDATE``, the
    ``HIVE_LOCKS`` row waiting, ``HL_LAST_HEARTBEAT`` 0 inside a txn), then ``checkLock`` under the
    ``CheckLock`` mutex: a SHARED_READ conflicts only with an EXCLUSIVE lock on the same database,
    table or partition held by a lower lock id. Acquired → ``a`` with ``HL_ACQUIRED_AT``; otherwise
    the request is removed and :class:`RefusedError` raised (the Worker then fails the request).
    Released by the commit or abort of the txn. Returns the lock id."""
    import sqlalchemy as sa

    from acidctl.metastore import queue

    _require_h4(ms, "lock for a compaction")
    host = host or socket.gethostname()
    T = ms.tables
    hl, nl, t = T.HIVE_LOCKS, T.NEXT_LOCK_ID, T.TXNS
    db, table = db.lower(), table.lower()

    def enqueue(conn):
        if (
            conn.execute(
                steps.for_update(sa.select(t.TXN_ID).where(t.TXN_ID == txn_id, t.TXN_STATE == "o"), conn)
            ).first()
            is None
        ):
            raise TxnNotOpen(f"transaction {txn_id} is not open")
        ext = conn.execute(steps.for_update(sa.select(nl.NL_NEXT), conn)).scalar()
        conn.execute(sa.update(nl.clause).values({nl.NL_NEXT.name: int(ext) + 1}))
        vals = dict(
            HL_LOCK_EXT_ID=int(ext),
            HL_LOCK_INT_ID=1,
            HL_TXNID=txn_id,
            HL_DB=db,
            HL_TABLE=table,
            HL_PARTITION=partition,
            HL_LOCK_STATE="w",
            HL_LOCK_TYPE="r",
            HL_LAST_HEARTBEAT=0,
            HL_USER=user,
            HL_HOST=host,
            HL_AGENT_INFO=agent_info,
        )
        conn.execute(sa.insert(hl.clause).values({getattr(hl, k).name: v for k, v in vals.items()}))
        return int(ext)

    ext = steps.write_step(ms, enqueue, name="enqueue the compaction lock", read_only=read_only)

    def check(conn):
        queue.acquire_mutex(ms, conn, "CheckLock")
        if partition is None:  # a table lock meets every lock on the table or its partitions
            on_table = hl.HL_TABLE == table
        else:
            on_table = sa.and_(hl.HL_TABLE == table, sa.or_(hl.HL_PARTITION.is_(None), hl.HL_PARTITION == partition))
        same = [
            hl.HL_DB == db,
            hl.HL_LOCK_EXT_ID < ext,
            hl.HL_LOCK_TYPE == "e",
            sa.or_(hl.HL_TABLE.is_(None), on_table),
        ]
        blocker = conn.execute(
            sa.select(hl.HL_LOCK_EXT_ID, hl.HL_LOCK_INT_ID).where(*same).order_by(hl.HL_LOCK_EXT_ID)
        ).first()
        if blocker is not None:
            conn.execute(sa.delete(hl.clause).where(hl.HL_LOCK_EXT_ID == ext))
            return blocker
        now = steps.now_ms(conn)
        conn.execute(
            sa.update(hl.clause)
            .where(hl.HL_LOCK_EXT_ID == ext)
            .values({hl.HL_LOCK_STATE.name: "a", hl.HL_ACQUIRED_AT.name: now})
        )
        return None

    blocker = steps.write_step(ms, check, name="acquire the compaction lock", read_only=read_only)
    if blocker is not None:
        where = f"{db}.{table}" + (f"/{partition}" if partition else "")
        raise RefusedError(
            f"{where} is locked exclusively (lock {blocker[0]}.{blocker[1]}); the compaction "
            "cannot take its shared lock"
        )
    return ext


@dataclasses.dataclass
class CommitResult:
    txn_id: int
    commit_id: int | None  # MAX(TXN_ID) at commit (CQ_NEXT_TXN_ID); None: was already committed
    commit_time: int | None
    already_committed: bool = False


def commit_compaction_txn(ms, txn_id: int, *, read_only: bool = False) -> CommitResult:
    """Hive 4 ``commitTxn`` of a COMPACTION (or SOFT_DELETE) txn, operations.md §2.3."""
    import sqlalchemy as sa

    _require_h4(ms, "commit a compaction txn")
    T = ms.tables
    t = T.TXNS

    def step(conn):
        row = conn.execute(
            steps.for_update(sa.select(t.TXN_TYPE).where(t.TXN_ID == txn_id, t.TXN_STATE == "o"), conn)
        ).first()
        if row is None:
            st = _txn_state(ms, conn, txn_id)
            if st == "c":
                return CommitResult(txn_id, None, None, already_committed=True)
            if st is None:
                raise NotFoundError(f"no such transaction {txn_id}")
            raise TxnNotOpen(f"transaction {txn_id} is already aborted; it cannot be committed")
        ttype = row[0]
        if ttype not in (TXN_TYPE_COMPACTION, TXN_TYPE_SOFT_DELETE):
            raise RefusedError(f"transaction {txn_id} is of type {ttype}: acidctl commits only its compaction txns")
        lock_txn_table(conn, ms, exclusive=True)
        commit_id = int(conn.execute(sa.select(sa.func.max(t.TXN_ID))).scalar())
        now = steps.now_ms(conn)
        tc, hl, cq = T.TXN_COMPONENTS, T.HIVE_LOCKS, T.COMPACTION_QUEUE
        conn.execute(sa.delete(tc.clause).where(tc.TC_TXNID == txn_id))
        conn.execute(sa.delete(hl.clause).where(hl.HL_TXNID == txn_id))
        conn.execute(sa.update(t.clause).where(t.TXN_ID == txn_id).values({t.TXN_STATE.name: "c"}))
        conn.execute(
            sa.update(cq.clause)
            .where(cq.CQ_TXN_ID == txn_id)
            .values({cq.CQ_NEXT_TXN_ID.name: commit_id, cq.CQ_COMMIT_TIME.name: now})
        )
        _delete_min_history(ms, conn, [txn_id])
        return CommitResult(txn_id, commit_id, now)

    res = steps.write_step(ms, step, name="commit the compaction txn", read_only=read_only)
    log.info("committed txn %d (CQ_NEXT_TXN_ID %s)", txn_id, res.commit_id)
    return res


def _abort_rows(ms, conn, ids: list[int], reason: str | None) -> int:
    """The row changes of Hive's abortTxns for one version (operations.md §2.4); returns the
    number of TXNS rows moved from ``o`` to ``a``."""
    import sqlalchemy as sa

    T = ms.tables
    t, hl = T.TXNS, T.HIVE_LOCKS
    ids = sorted(set(int(i) for i in ids))
    if ms.hive_version >= 4:
        _delete_min_history(ms, conn, ids)
        vals = {t.TXN_STATE.name: "a"}
        if reason is not None:
            vals[t.TXN_META_INFO.name] = reason
        n = conn.execute(sa.update(t.clause).where(t.TXN_STATE == "o", t.TXN_ID.in_(ids)).values(vals)).rowcount
        conn.execute(sa.delete(hl.clause).where(hl.HL_TXNID.in_(ids)))
        mrl = T.MATERIALIZATION_REBUILD_LOCKS
        conn.execute(sa.delete(mrl.clause).where(mrl.MRL_TXN_ID.in_(ids)))
        # REPL_TXN_MAP rows of these txns go too; marking a replicated database
        # repl.incompatible (Hive does it for REPL_CREATED txns) is not done by acidctl
        rtm = T.REPL_TXN_MAP
        conn.execute(sa.delete(rtm.clause).where(rtm.RTM_TARGET_TXN_ID.in_(ids)))
        return int(n)
    n = conn.execute(
        sa.update(t.clause).where(t.TXN_STATE == "o", t.TXN_ID.in_(ids)).values({t.TXN_STATE.name: "a"})
    ).rowcount
    _delete_min_history(ms, conn, ids)
    conn.execute(sa.delete(hl.clause).where(hl.HL_TXNID.in_(ids)))
    return int(n)


def abort_txns(ms, txn_ids: Iterable[int], *, reason: str = ABORT_QUERY, read_only: bool = False) -> int:
    """``ABORT TRANSACTIONS`` (Hive 4 ``abortTxns``, Hive 3 ``abortTxns`` non-strict): every listed
    txn still open becomes aborted; returns how many did."""
    import sqlalchemy as sa

    ids = sorted(set(int(i) for i in txn_ids))
    if not ids:
        return 0
    t = ms.tables.TXNS

    def step(conn):
        if ms.hive_version >= 4:
            # Hive 4 selects the open, non-READ_ONLY rows FOR UPDATE (to type its notifications)
            conn.execute(steps.for_update(sa.select(t.TXN_ID).where(t.TXN_ID.in_(ids), t.TXN_STATE == "o"), conn)).all()
        return _abort_rows(ms, conn, ids, reason)

    return steps.write_step(ms, step, name="abort transactions", read_only=read_only)


def finished_txn_locks(ms, txn_ids: Iterable[int]) -> dict[int, list[int]]:
    """``{txn id: [lock ids]}`` of HIVE_LOCKS rows left behind by listed txns that are no longer
    open (aborted, committed or gone). Hive's ABORT TRANSACTIONS deletes the locks of **every**
    listed txn, open or not (operations.md §2.4: Hive 3's non-strict ``abortTxns`` and Hive 4's
    ``AbortTxnsFunction`` run ``DELETE FROM HIVE_LOCKS WHERE HL_TXNID IN (...)`` for the whole
    list), so ``abort transactions`` removes these leftovers too."""
    import sqlalchemy as sa

    ids = sorted(set(int(i) for i in txn_ids))
    if not ids:
        return {}
    t, hl = ms.tables.TXNS, ms.tables.HIVE_LOCKS
    with ms.read() as conn:
        open_ids = {int(r[0]) for r in conn.execute(sa.select(t.TXN_ID).where(t.TXN_ID.in_(ids), t.TXN_STATE == "o"))}
        rows = conn.execute(
            sa.select(hl.HL_TXNID, hl.HL_LOCK_EXT_ID).where(hl.HL_TXNID.in_([i for i in ids if i not in open_ids]))
        ).all()
    out: dict[int, list[int]] = {}
    for txn, lock in rows:
        out.setdefault(int(txn), [])
        if int(lock) not in out[int(txn)]:
            out[int(txn)].append(int(lock))
    return {k: sorted(v) for k, v in sorted(out.items())}


def abort_txn(ms, txn_id: int, *, reason: str = ABORT_COMPACTION_TXN, read_only: bool = False) -> bool:
    """Hive's single ``abortTxn``: the TXNS row locked first; already aborted = no-op (False);
    committed or missing raises."""
    import sqlalchemy as sa

    t = ms.tables.TXNS

    def step(conn):
        row = conn.execute(
            steps.for_update(sa.select(t.TXN_ID).where(t.TXN_ID == txn_id, t.TXN_STATE == "o"), conn)
        ).first()
        if row is None:
            st = _txn_state(ms, conn, txn_id)
            if st == "a":
                return False
            if st is None and ms.hive_version < 4:
                raise NotFoundError(f"no such transaction {txn_id} (Hive 3 deletes committed txns)")
            if st is None:
                raise NotFoundError(f"no such transaction {txn_id}")
            raise TxnNotOpen(f"transaction {txn_id} is already committed; it cannot be aborted")
        return _abort_rows(ms, conn, [txn_id], reason) == 1

    return steps.write_step(ms, step, name="abort a transaction", read_only=read_only)


def heartbeat_txn(ms, txn_id: int, *, read_only: bool = False) -> None:
    """``UPDATE TXNS SET TXN_LAST_HEARTBEAT = <db now> WHERE TXN_ID=? AND TXN_STATE='o'``;
    raises :class:`TxnNotOpen` when no open row matched (aborted, e.g. by the timeout reaper)."""
    import sqlalchemy as sa

    t = ms.tables.TXNS

    def step(conn):
        now = steps.now_ms(conn)
        n = conn.execute(
            sa.update(t.clause).where(t.TXN_ID == txn_id, t.TXN_STATE == "o").values({t.TXN_LAST_HEARTBEAT.name: now})
        ).rowcount
        if n != 1:
            st = _txn_state(ms, conn, txn_id)
            raise TxnNotOpen(f"transaction {txn_id} is {'aborted' if st == 'a' else 'not open' if st else 'missing'}")

    steps.write_step(ms, step, name="heartbeat", read_only=read_only)


class Heartbeat:
    """Heartbeats one txn from a daemon thread (operations.md §2.5: Hive's
    CompactionHeartbeatService beats first after ``txn.timeout/4``, then every ``txn.timeout/2``;
    acidctl beats every ``interval_s``, default ``txn.timeout/4`` = 75 s, well inside the
    timeout). ``lost`` is set when the txn was found no longer open."""

    def __init__(self, ms, txn_id: int, *, interval_s: float = TXN_TIMEOUT_S / 4):
        if interval_s <= 0:
            raise UsageError("heartbeat interval must be positive")
        self.ms, self.txn_id, self.interval = ms, txn_id, interval_s
        self._stop = threading.Event()
        self.lost: str | None = None
        self.beats = 0
        self._thread = threading.Thread(target=self._run, name=f"acidctl-heartbeat-{txn_id}", daemon=True)

    def start(self) -> "Heartbeat":
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                heartbeat_txn(self.ms, self.txn_id)
                self.beats += 1
            except TxnNotOpen as e:
                self.lost = str(e)
                log.warning("heartbeat of txn %d: %s", self.txn_id, e)
                return
            except Exception as e:  # a transient database error: try again next interval
                log.warning("heartbeat of txn %d failed: %s", self.txn_id, e)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def __enter__(self) -> "Heartbeat":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@dataclasses.dataclass
class TxnRowInfo:
    txn_id: int
    state: str
    started: int
    last_heartbeat: int
    user: str
    host: str
    txn_type: int | None
    age_ms: int

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def select_txns(
    ms, *, txn_ids: Iterable[int] | None = None, older_than_ms: int | None = None
) -> tuple[list[TxnRowInfo], list[int]]:
    """What ``abort transactions`` would abort: open txns among ``txn_ids`` (all open ones when
    not given) started more than ``older_than_ms`` ago (database clock). Returns (open rows,
    listed ids that are not open)."""
    import sqlalchemy as sa

    t = ms.tables.TXNS
    ids = sorted(set(int(i) for i in txn_ids)) if txn_ids else None
    type_col = t.TXN_TYPE if t.has("TXN_TYPE") else sa.literal(None)
    with ms.read() as conn:
        now = steps.now_ms(conn)
        q = sa.select(
            t.TXN_ID, t.TXN_STATE, t.TXN_STARTED, t.TXN_LAST_HEARTBEAT, t.TXN_USER, t.TXN_HOST, type_col
        ).where(t.TXN_STATE == "o")
        if ids is not None:
            q = q.where(t.TXN_ID.in_(ids))
        if older_than_ms is not None:
            q = q.where(t.TXN_STARTED < now - older_than_ms)
        rows = conn.execute(q.order_by(t.TXN_ID)).all()
    out = [TxnRowInfo(int(r[0]), r[1], int(r[2]), int(r[3]), r[4], r[5], r[6], now - int(r[2])) for r in rows]
    missing = [] if ids is None else [i for i in ids if i not in {o.txn_id for o in out}]
    return out, missing


def parse_age(text: str) -> int:
    """``500ms``, ``90s``, ``15m``, ``2h``, ``3d`` (or plain seconds) → milliseconds
    (:func:`acidctl.durations.parse_age`, the one age parser)."""
    from acidctl.durations import parse_age as seconds

    return int(round(seconds(text) * 1000))
