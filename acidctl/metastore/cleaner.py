"""The Cleaner side of Hive's compaction protocol: which ``ready for cleaning`` requests Hive's
Cleaner would clean now (and what holds the others back), and the rows it changes when it is
done (../shared/spec/operations.md §5, metastore.md §9.3).

* :func:`ready_requests` — the ``r`` compaction rows of a table (Hive 4's abort-cleanup retry
  rows, ``CQ_TYPE='c'``, are not compactions and are left out, as Hive's ``ReadyToCleanHandler``
  does);
* :func:`cleaner_waits` — per request, what the Cleaner waits for. **Hive 3** (§5.1): the
  ``HIVE_LOCKS`` present when it first saw the request on the same database, table (both
  ignoring case) and exact partition (acidctl runs once, so "first saw" is now: every such lock holds the request back;
  the next run proceeds once they are gone). **Hive 4** (§5.2): the delayed-cleanup retention
  and ``CQ_RETRY_RETENTION`` after ``CQ_COMMIT_TIME``; ``CQ_NEXT_TXN_ID`` against the min open
  txn watermark (any open txn below it anywhere blocks, HIVE-26704) — or, with
  ``metastore.txn.use.minhistorywriteid``, ``CQ_HIGHEST_WRITE_ID`` against the table's lowest
  ``MIN_HISTORY_WRITE_ID``; the snapshot watermark ``min(minOpenTxn, MIN(MHL_MIN_OPEN_TXNID))``
  that must make the compactor txn's ``_v`` output visible; and only the request with the
  lowest ``CQ_HIGHEST_WRITE_ID`` of a partition goes first;
* :func:`cleaner_mutex` — Hive's ``Cleaner`` mutex (``AUX_TABLE``), held while cleaning;
* :func:`mark_cleaner_start` / :func:`clear_cleaner_start` — Hive 4's ``CQ_CLEANER_START``;
* :func:`mark_cleaned` — Hive's ``markCleaned`` for 3.1 and 4.0 (§5.4), one write step,
  followed in the same step by the removal of the aborted ``TXNS`` rows it emptied (§9.3; in
  Hive the housekeeping that follows: Hive 3 ``cleanEmptyAbortedTxns``, Hive 4
  ``AcidTxnCleanerService``); :func:`remove_empty_aborted_txns` does that part alone.

Every write is one :func:`acidctl.metastore.steps.write_step`.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Iterator

from acidctl.errors import NotFoundError, RefusedError
from acidctl.metastore import queue
from acidctl.metastore.steps import for_update, now_ms, write_step
from acidctl.units import duration_ms

LONG_MAX = 9223372036854775807
OPEN_TXN_TIMEOUT_MS = 1000  # metastore.txn.opentxn.timeout (operations.md §9)

#: COMPACTION_QUEUE columns read for a request (Hive 4 adds the rest when present)
_REQ_COLS = (
    "CQ_ID",
    "CQ_DATABASE",
    "CQ_TABLE",
    "CQ_PARTITION",
    "CQ_STATE",
    "CQ_TYPE",
    "CQ_HIGHEST_WRITE_ID",
    "CQ_HIGHEST_TXN_ID",
    "CQ_RUN_AS",
    "CQ_START",
    "CQ_WORKER_ID",
    "CQ_TXN_ID",
    "CQ_NEXT_TXN_ID",
    "CQ_COMMIT_TIME",
    "CQ_RETRY_RETENTION",
    "CQ_CLEANER_START",
    "CQ_ERROR_MESSAGE",
)


def _int(v) -> int | None:
    return None if v is None else int(v)


def ready_requests(ms, db: str, table: str, *, partitions: list[str | None] | None = None) -> list[dict]:
    """The ``ready for cleaning`` compaction requests of ``db.table`` (optionally only those
    partitions), ordered by partition, highest write id, id. Plain dicts keyed by lower-case
    column names without the ``cq_`` prefix."""
    import sqlalchemy as sa

    cq = ms.tables.COMPACTION_QUEUE
    cols = [getattr(cq, c) for c in _REQ_COLS if cq.has(c)]
    q = sa.select(*cols).where(
        cq.CQ_STATE == "r", sa.func.lower(cq.CQ_DATABASE) == db.lower(), sa.func.lower(cq.CQ_TABLE) == table.lower()
    )
    if cq.has("CQ_TYPE"):
        q = q.where(cq.CQ_TYPE != "c")
    with ms.read() as conn:
        rows = conn.execute(q).all()
    out = []
    for r in rows:
        d = {c[3:].lower(): v for c, v in zip([c for c in _REQ_COLS if cq.has(c)], r)}
        if "highest_txn_id" in d:  # Hive 2.3: txn ids name the directories (its findReadyToClean)
            d["highest_write_id"] = d.pop("highest_txn_id")
        for k in (
            "id",
            "highest_write_id",
            "txn_id",
            "next_txn_id",
            "commit_time",
            "retry_retention",
            "start",
            "cleaner_start",
        ):
            if k in d:
                d[k] = _int(d[k])
        if partitions is not None and d["partition"] not in partitions:
            continue
        out.append(d)
    out.sort(key=lambda d: (d["partition"] or "", d["highest_write_id"] or 0, d["id"]))
    return out


# ---------------------------------------------------------------------------------------
# what the Cleaner waits for
# ---------------------------------------------------------------------------------------


def _same(a: str | None, b: str | None, *, ignore_case: bool = True) -> bool:
    """Hive 3.1's ``Cleaner.findRelatedLocks``: both NULL, or equal — database and table names
    ignoring case, partition names exactly ("leave partition name as is")."""
    if a is None or b is None:
        return a is None and b is None
    return a.lower() == b.lower() if ignore_case else a == b


def _h3_waits(ms, conn, requests: list[dict]) -> dict[int, list[dict]]:
    """Hive 3.1 and 2.3 Cleaners: the locks on the request's database/table/partition. 2.3's
    ``findRelatedLocks`` compares database and table names exactly (``equals``), 3.1's ignoring
    case; 2.3's ``HL_TXNID`` may be NULL (a lock outside a txn)."""
    import sqlalchemy as sa

    from acidctl.metastore.queries import lock_row_columns

    h = ms.tables.HIVE_LOCKS
    exact = ms.hive_version == 2
    dbs = {r["database"].lower() for r in requests}
    rows = conn.execute(
        sa.select(*lock_row_columns(h), h.HL_ACQUIRED_AT)
        .where(sa.func.lower(h.HL_DB).in_(dbs))
        .order_by(h.HL_LOCK_EXT_ID, h.HL_LOCK_INT_ID)
    ).all()
    out: dict[int, list[dict]] = {}
    for r in requests:
        seen: set[int] = set()
        waits = []
        for ext, _int_id, txn, hdb, htbl, hpart, st, ty, user, host, acq in rows:
            if not (
                _same(hdb, r["database"], ignore_case=not exact)
                and _same(htbl, r["table"], ignore_case=not exact)
                and _same(hpart, r["partition"], ignore_case=False)
            ):
                continue
            if int(ext) in seen:
                continue
            seen.add(int(ext))
            txn = int(txn or 0)
            waits.append(
                {
                    "kind": "lock",
                    "lock_id": int(ext),
                    "txn_id": int(txn) or None,
                    "lock_state": {"a": "ACQUIRED", "w": "WAITING"}.get(st, st),
                    "lock_type": ty,
                    "user": user,
                    "host": host,
                    "message": f"lock {int(ext)}"
                    + (f" of txn {int(txn)}" if int(txn) else "")
                    + f" ({user}@{host}) was present when the Cleaner saw the request",
                }
            )
        out[r["id"]] = waits
    return out


def _min_open_txn(ms, conn, now: int, timeout_ms: int) -> tuple[int, dict | None, int]:
    """Hive 4's ``MinOpenTxnIdWaterMark``: ``min(MIN(open TXN_ID) or +inf, low boundary + 1)``
    where the low boundary is the highest txn started before ``now - opentxn.timeout``. Returns
    (watermark, the oldest open txn row or None, low boundary)."""
    import sqlalchemy as sa

    t = ms.tables.TXNS
    row = conn.execute(
        sa.select(t.TXN_ID, t.TXN_USER, t.TXN_HOST, t.TXN_STARTED, t.TXN_TYPE)
        .where(t.TXN_STATE == "o")
        .order_by(t.TXN_ID)
        .limit(1)
    ).first()
    low = conn.execute(sa.select(sa.func.max(t.TXN_ID)).where(t.TXN_STARTED < now - timeout_ms)).scalar()
    low = int(low or 0)
    oldest = None
    if row is not None:
        oldest = {
            "txn_id": int(row[0]),
            "user": row[1],
            "host": row[2],
            "started": _int(row[3]),
            "age_ms": None if row[3] is None else now - int(row[3]),
            "txn_type": _int(row[4]),
        }
    mo = oldest["txn_id"] if oldest else LONG_MAX
    return min(mo, low + 1), oldest, low


@dataclasses.dataclass
class _H4View:
    """What Hive 4's Cleaner reads once per run before judging requests: the time, the txn
    watermark (oldest open txn, lowest txn below it), MIN_HISTORY_LEVEL's lowest row (when MIN_HISTORY_WRITE_ID
    is off), the compactor txns' states and MIN_HISTORY_WRITE_ID's lowest write id per table."""

    now: int
    watermark: int
    oldest: dict | None
    low: int
    mhl_min: int | None
    mhl_txn: int | None
    txn_states: dict[int, str]
    mh_rows: dict[tuple[str, str], tuple[int, int]]
    open_txn_timeout_ms: int
    use_min_history_write_id: bool

    @property
    def snap_wm(self) -> int:
        return self.watermark if self.mhl_min is None else min(self.watermark, self.mhl_min)

    @classmethod
    def read(cls, ms, conn, requests: list[dict], *, use_min_history_write_id: bool, open_txn_timeout_ms: int):
        import sqlalchemy as sa

        T = ms.tables
        now = now_ms(conn)
        watermark, oldest, low = _min_open_txn(ms, conn, now, open_txn_timeout_ms)
        mhl_min = mhl_txn = None
        if not use_min_history_write_id:
            mhl = T.MIN_HISTORY_LEVEL
            r = conn.execute(
                sa.select(mhl.MHL_MIN_OPEN_TXNID, mhl.MHL_TXNID)
                .order_by(mhl.MHL_MIN_OPEN_TXNID, mhl.MHL_TXNID)
                .limit(1)
            ).first()
            if r is not None:
                mhl_min, mhl_txn = int(r[0]), int(r[1])
        txn_states: dict[int, str] = {}
        ids = {r["txn_id"] for r in requests if r.get("txn_id")}
        if ids:
            t = T.TXNS
            txn_states = {int(a): b for a, b in conn.execute(sa.select(t.TXN_ID, t.TXN_STATE).where(t.TXN_ID.in_(ids)))}
        mh_rows: dict[tuple[str, str], tuple[int, int]] = {}
        if use_min_history_write_id and ms.tables.MIN_HISTORY_WRITE_ID.has("MH_WRITEID"):
            mh = T.MIN_HISTORY_WRITE_ID
            for txn, dbn, tbl, wid in conn.execute(sa.select(mh.MH_TXNID, mh.MH_DATABASE, mh.MH_TABLE, mh.MH_WRITEID)):
                k = (dbn.lower(), tbl.lower())
                if k not in mh_rows or int(wid) < mh_rows[k][0]:
                    mh_rows[k] = (int(wid), int(txn))
        return cls(
            now,
            watermark,
            oldest,
            low,
            mhl_min,
            mhl_txn,
            txn_states,
            mh_rows,
            open_txn_timeout_ms,
            use_min_history_write_id,
        )

    def retention_wait(self, r: dict, retention_ms: int) -> dict | None:
        """Not yet past its retention (commit time + CQ_RETRY_RETENTION + the retention)."""
        ct, rr, now = r.get("commit_time"), r.get("retry_retention") or 0, self.now
        if ct is None or ct < now - rr - retention_ms:
            return None
        return {
            "kind": "retention",
            "until_ms": ct + rr + retention_ms,
            "message": f"retention: not before {(ct + rr + retention_ms - now) / 1000:.1f}s from now "
            f"(commit time + CQ_RETRY_RETENTION {rr} ms + retention {retention_ms} ms)",
        }

    def reader_wait(self, r: dict) -> dict | None:
        """A reader that may still need the obsolete files: MIN_HISTORY_WRITE_ID's lowest write
        id of the table, else an open (or too young) txn below CQ_NEXT_TXN_ID."""
        if self.use_min_history_write_id:
            m = self.mh_rows.get((r["database"].lower(), r["table"].lower()))
            hw = r.get("highest_write_id") or 0
            if m is None or hw < m[0]:
                return None
            return {
                "kind": "min-history-write-id",
                "txn_id": m[1],
                "write_id": m[0],
                "message": f"txn {m[1]} still reads write id {m[0]} of the table "
                f"(MIN_HISTORY_WRITE_ID), not above highest write id {hw}",
            }
        nxt, oldest = r.get("next_txn_id"), self.oldest
        if nxt is None or nxt <= self.watermark:
            return None
        if oldest is not None and oldest["txn_id"] < nxt and oldest["txn_id"] == self.watermark:
            age = oldest["age_ms"]
            return {
                "kind": "open-txn",
                **oldest,
                "message": f"open txn {oldest['txn_id']} ({oldest['user']}@{oldest['host']}, "
                f"{'age ' + duration_ms(round(age, -3)) if age is not None else ''}) "
                f"is below CQ_NEXT_TXN_ID {nxt}",
            }
        return {
            "kind": "young-txn",
            "txn_id": self.low + 1,
            "message": f"txns above {self.low} opened less than {self.open_txn_timeout_ms} ms ago "
            f"(CQ_NEXT_TXN_ID {nxt})",
        }

    def compactor_txn_wait(self, txn: int, waits: list[dict]) -> dict | None:
        """The request's compactor txn: still open, aborted, or not yet below the cleaner
        watermark (only a request the ready-to-clean query returned gets this far in Hive)."""
        st = self.txn_states.get(txn)
        if st == "o":
            return {
                "kind": "compactor-txn-open",
                "txn_id": txn,
                "message": f"the compactor txn {txn} is still open (the worker has not committed)",
            }
        if st == "a":
            return {
                "kind": "compactor-txn-aborted",
                "txn_id": txn,
                "message": f"the compactor txn {txn} was aborted: its output is invisible "
                "(HIVE-29572); abort or fail this request instead of cleaning",
            }
        if (
            self.use_min_history_write_id
            or txn < self.snap_wm
            or any(w["kind"] in ("open-txn", "young-txn") for w in waits)
        ):
            return None
        oldest, mhl_min = self.oldest, self.mhl_min
        holder = (
            self.mhl_txn
            if (mhl_min is not None and mhl_min <= self.watermark)
            else (oldest["txn_id"] if oldest is not None and oldest["txn_id"] == self.watermark else None)
        )
        if holder is None:
            return {
                "kind": "young-txn",
                "txn_id": self.low + 1,
                "message": f"txns above {self.low} opened less than {self.open_txn_timeout_ms} ms ago; "
                f"the compactor txn {txn} is not yet below the cleaner watermark",
            }
        return {
            "kind": "min-history-level",
            "txn_id": holder,
            "message": f"txn {holder} may still read below the compactor txn {txn} "
            f"(cleaner watermark {self.snap_wm}: MIN_HISTORY_LEVEL / min open txn)",
        }


def _h4_waits(
    ms, conn, requests: list[dict], *, retention_ms: int, use_min_history_write_id: bool, open_txn_timeout_ms: int
) -> dict[int, list[dict]]:
    """What each request waits for under Hive 4's Cleaner (:class:`_H4View`'s stages), then
    :func:`_earlier_request_waits`."""
    view = _H4View.read(
        ms, conn, requests, use_min_history_write_id=use_min_history_write_id, open_txn_timeout_ms=open_txn_timeout_ms
    )
    out: dict[int, list[dict]] = {}
    for r in requests:
        waits: list[dict] = []
        for w in (view.retention_wait(r, retention_ms), view.reader_wait(r)):
            if w is not None:
                waits.append(w)
        txn = r.get("txn_id")
        if txn is not None:
            w = view.compactor_txn_wait(txn, waits)
            if w is not None:
                waits.append(w)
        out[r["id"]] = waits
    _earlier_request_waits(requests, out)
    return out


def _earlier_request_waits(requests: list[dict], out: dict[int, list[dict]]) -> None:
    """Hive 4 cleans only the lowest highest-write-id request per partition at a time
    (ReadyToCleanHandler: the minimum is taken over the requests past their retention, before
    the txn watermark filter); within one acidctl run the next one may follow once it is done."""
    by_part: dict[Any, list[dict]] = {}
    for r in requests:
        if not any(w["kind"] == "retention" for w in out[r["id"]]):
            by_part.setdefault(r["partition"], []).append(r)
    for rows in by_part.values():
        blocked_by = None
        for r in sorted(rows, key=lambda d: (d.get("highest_write_id") or 0, d["id"])):
            if blocked_by is not None:
                out[r["id"]].append(
                    {
                        "kind": "earlier-request",
                        "cq_id": blocked_by,
                        "message": f"compaction {blocked_by} of the same partition (lower highest "
                        "write id) is cleaned first",
                    }
                )
            elif out[r["id"]]:
                blocked_by = r["id"]


def cleaner_waits(
    ms,
    requests: list[dict],
    *,
    retention_ms: int = 0,
    use_min_history_write_id: bool = False,
    open_txn_timeout_ms: int = OPEN_TXN_TIMEOUT_MS,
) -> dict[int, list[dict]]:
    """``{cq_id: [what holds it back, ...]}`` — an empty list means Hive's Cleaner would clean it
    now. ``retention_ms``: Hive 4's ``hive.compactor.cleaner.retention.time.seconds`` when
    delayed cleanup is on (default off: 0)."""
    if not requests:
        return {}
    with ms.read() as conn:
        if ms.hive_version < 4:
            return _h3_waits(ms, conn, requests)
        return _h4_waits(
            ms,
            conn,
            requests,
            retention_ms=retention_ms,
            use_min_history_write_id=use_min_history_write_id,
            open_txn_timeout_ms=open_txn_timeout_ms,
        )


# ---------------------------------------------------------------------------------------
# the Cleaner mutex
# ---------------------------------------------------------------------------------------

MUTEX_KEY = "Cleaner"


@contextlib.contextmanager
def cleaner_mutex(ms, *, wait_s: int = 60) -> Iterator[None]:
    """Hold Hive's ``Cleaner`` mutex (operations.md §1) while cleaning, so acidctl and Hive's own
    Cleaners (one per HMS) never clean at the same time: in its own DB transaction on its own
    connection, ``SELECT MT_COMMENT, MT_KEY2 FROM AUX_TABLE WHERE MT_KEY1='Cleaner' [AND
    MT_KEY2=0 on Hive 3] FOR UPDATE``; a missing row is inserted as ``('Cleaner', 0)`` (a
    concurrent insert's duplicate key is tolerated) and selected again; released by rollback.
    Waits up to ``wait_s`` for a Cleaner holding it (then ``LockConflict``, exit 6). SQLite has
    no Hive and each write step already holds the whole database: no mutex there."""
    import sqlalchemy as sa
    from sqlalchemy import exc

    from acidctl.errors import LockConflict
    from acidctl.metastore.connection import db_errors
    from acidctl.metastore.steps import check_writable, is_retryable

    check_writable(ms, what="take the Cleaner mutex")
    if ms.engine.dialect.name == "sqlite":
        yield
        return
    aux = ms.tables.AUX_TABLE
    cond = [aux.MT_KEY1 == MUTEX_KEY]
    if ms.hive_version < 4:  # Hive 2.3 and 3.1: MT_KEY2 = 0
        cond.append(aux.MT_KEY2 == 0)
    q = sa.select(aux.MT_COMMENT, aux.MT_KEY2).where(*cond).with_for_update()
    with db_errors(ms.engine.url):
        conn = ms.engine.connect().execution_options(isolation_level="READ COMMITTED")
    tx = None
    try:
        with db_errors(ms.engine.url):
            for attempt in (1, 2):
                tx = conn.begin()
                if ms.engine.dialect.name == "postgresql":
                    conn.execute(sa.text(f"SET LOCAL lock_timeout = '{int(wait_s)}s'"))
                else:
                    conn.execute(sa.text(f"SET SESSION innodb_lock_wait_timeout = {int(wait_s)}"))
                try:
                    if conn.execute(q).first() is not None:
                        break
                    conn.execute(sa.insert(aux.clause).values({aux.MT_KEY1.name: MUTEX_KEY, aux.MT_KEY2.name: 0}))
                    tx.commit()
                except exc.IntegrityError:
                    tx.rollback()  # another instance inserted it first
                except exc.DBAPIError as e:
                    tx.rollback()
                    if is_retryable(e) or "lock" in str(e).lower():
                        raise LockConflict(
                            "another Cleaner holds the metastore's Cleaner mutex (AUX_TABLE); try again later"
                        ) from None
                    raise
            else:
                raise LockConflict("could not take the metastore's Cleaner mutex (AUX_TABLE row missing)")
        try:
            yield
        finally:
            try:
                tx.rollback()
            except Exception:
                pass
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------
# writes
# ---------------------------------------------------------------------------------------


def mark_cleaner_start(ms, cq_id: int) -> bool:
    """Hive 4 ``markCleanerStart``: ``CQ_CLEANER_START = now`` on the ``r`` row. No-op on Hive 3."""
    if ms.hive_version < 4:
        return False
    import sqlalchemy as sa

    cq = ms.tables.COMPACTION_QUEUE

    def step(conn):
        return (
            conn.execute(
                sa.update(cq.clause)
                .where(cq.CQ_ID == cq_id, cq.CQ_STATE == "r")
                .values({cq.CQ_CLEANER_START.name: now_ms(conn)})
            ).rowcount
            == 1
        )

    return write_step(ms, step, name="markCleanerStart")


def clear_cleaner_start(ms, cq_id: int) -> bool:
    """Hive 4 ``clearCleanerStart``: ``CQ_CLEANER_START = -1`` (the row stays ``r``)."""
    if ms.hive_version < 4:
        return False
    import sqlalchemy as sa

    cq = ms.tables.COMPACTION_QUEUE

    def step(conn):
        return (
            conn.execute(sa.update(cq.clause).where(cq.CQ_ID == cq_id).values({cq.CQ_CLEANER_START.name: -1})).rowcount
            == 1
        )

    return write_step(ms, step, name="clearCleanerStart")


def _history_columns(ms) -> list[str]:
    cc = ms.tables.COMPLETED_COMPACTIONS
    return [c.name.upper() for c in cc.clause.columns]


def _scope(db_col, table_col, part_col, db: str, table: str, part: str | None) -> list:
    """``db = ? AND table = ? [AND partition = ?]``: the rows of one table or partition that
    markCleaned removes (Hive omits the partition term for a table-level request)."""
    cond = [db_col == db, table_col == table]
    if part is not None:
        cond.append(part_col == part)
    return cond


def mark_cleaned(ms, cq_id: int, *, remove_empty_aborted_txns: bool = True) -> dict:
    """Hive's ``markCleaned`` (operations.md §5.4), one DB transaction:

    Hive 3: read the row, delete it, insert the history row ``s`` (``CC_END`` = db now), delete
    the partition's ``COMPLETED_TXN_COMPONENTS`` up to the highest write id (the write-id term
    only when it is non-zero), select the aborted txns with components on the table/partition
    with ``TC_WRITEID <= highest`` and delete those components.

    Hive 4: ``INSERT INTO COMPLETED_COMPACTIONS ... SELECT`` (state ``s``, ``CC_END`` = db now,
    every other ``CC_*`` from ``CQ_*``), delete the row and every ``ABORT_TXN_CLEANUP`` retry row
    (``CQ_TYPE='c'``) of the table/partition, ``COMPLETED_TXN_COMPONENTS`` as Hive 3, and the
    aborted txns' ``TXN_COMPONENTS`` with ``TC_WRITEID <= highest`` (only when it is non-zero).

    Then, in the same step unless ``remove_empty_aborted_txns=False``, the aborted ``TXNS``
    rows this left without any ``TXN_COMPONENTS`` (metastore.md §9.3; in Hive this is the
    housekeeping that follows: Hive 3 ``cleanEmptyAbortedTxns``, Hive 4's TxnCleaner, whose
    guards — never the highest ``TXN_ID``, never a txn started within the open-txn timeout —
    apply on Hive 4).

    Hive 2.3 (:func:`_mark_cleaned_h2`): as Hive 3 with txn ids — ``CQ_HIGHEST_TXN_ID`` caps
    ``CTC_TXNID`` and the aborted txns' ids, both terms only when it is non-zero.

    Returns what changed: ``{"cq_id", "history_state", "queue_rows_deleted",
    "completed_txn_components_deleted", "txn_components_deleted", "aborted_txns",
    "aborted_txns_removed"}``.
    """
    import sqlalchemy as sa

    if ms.hive_version == 2:
        return _mark_cleaned_h2(ms, cq_id, remove_empty_aborted_txns=remove_empty_aborted_txns)
    T = ms.tables
    cq, ctc, tc = T.COMPACTION_QUEUE, T.COMPLETED_TXN_COMPONENTS, T.TXN_COMPONENTS
    h4 = ms.hive_version >= 4

    def step(conn: sa.Connection) -> dict[str, Any]:
        # Hive reads the row without a lock; the DELETE below is what must hit exactly one row
        row = conn.execute(sa.select(cq.clause).where(cq.CQ_ID == cq_id)).mappings().first()
        if row is None:
            raise NotFoundError(f"compaction {cq_id} is not in COMPACTION_QUEUE (already cleaned or failed?)")
        r = {k.upper(): v for k, v in row.items()}
        db, tbl, part = r["CQ_DATABASE"], r["CQ_TABLE"], r["CQ_PARTITION"]
        hw = int(r["CQ_HIGHEST_WRITE_ID"] or 0)
        now = now_ms(conn)
        if h4:  # Hive 4's INSERT ... SELECT, column by column
            deleted = _h4_move_to_history(ms, conn, cq_id, db, tbl, part, now)
        else:
            deleted = conn.execute(sa.delete(cq.clause).where(cq.CQ_ID == cq_id)).rowcount
            if deleted != 1:
                raise NotFoundError(f"compaction {cq_id} could not be deleted from COMPACTION_QUEUE")
            queue.insert_history(ms, conn, queue.history_row(ms, r, state="s", end=now))
        # COMPLETED_TXN_COMPONENTS of the partition up to the highest write id
        cond = _scope(ctc.CTC_DATABASE, ctc.CTC_TABLE, ctc.CTC_PARTITION, db, tbl, part)
        if hw != 0:
            cond.append(ctc.CTC_WRITEID <= hw)
        n_ctc = conn.execute(sa.delete(ctc.clause).where(*cond)).rowcount
        # aborted txns' TXN_COMPONENTS up to the highest write id
        tcond = _scope(tc.TC_DATABASE, tc.TC_TABLE, tc.TC_PARTITION, db, tbl, part)
        aborted_ids, n_tc = _aborted_components_up_to(ms, conn, tcond, hw)
        removed = _remove_empty_aborted(ms, conn, aborted_ids) if remove_empty_aborted_txns else []
        return {
            "cq_id": cq_id,
            "history_state": "s",
            "queue_rows_deleted": int(deleted),
            "completed_txn_components_deleted": int(n_ctc),
            "txn_components_deleted": int(n_tc),
            "aborted_txns": aborted_ids,
            "aborted_txns_removed": removed,
            "highest_write_id": hw,
            "end": now,
        }

    return write_step(ms, step, name="markCleaned")


def _h4_move_to_history(ms, conn, cq_id: int, db: str, tbl: str, part, now: int) -> int:
    """Hive 4's ``INSERT INTO COMPLETED_COMPACTIONS ... SELECT`` (state ``s``, ``CC_END`` = now,
    every other ``CC_*`` from ``CQ_*``), then the row and the partition's ``ABORT_TXN_CLEANUP``
    retry rows deleted; the number of queue rows deleted."""
    import sqlalchemy as sa

    cq, cc = ms.tables.COMPACTION_QUEUE, ms.tables.COMPLETED_COMPACTIONS
    hist_cols = _history_columns(ms)
    sel = []
    for c in hist_cols:
        if c == "CC_STATE":
            sel.append(sa.literal("s"))
        elif c == "CC_END":
            sel.append(sa.literal(now, sa.BigInteger()))
        else:
            sel.append(getattr(cq, "CQ_" + c[3:]))
    conn.execute(
        sa.insert(cc.clause).from_select([getattr(cc, c) for c in hist_cols], sa.select(*sel).where(cq.CQ_ID == cq_id))
    )
    pcond = sa.true() if part is None else cq.CQ_PARTITION == part
    return conn.execute(
        sa.delete(cq.clause).where(
            sa.or_(cq.CQ_ID == cq_id, sa.and_(cq.CQ_DATABASE == db, cq.CQ_TABLE == tbl, cq.CQ_TYPE == "c", pcond))
        )
    ).rowcount


def _aborted_components_up_to(ms, conn, tcond: list, hw: int) -> tuple[list[int], int]:
    """The aborted txns with components on the table/partition up to the highest write id, and
    how many of those ``TXN_COMPONENTS`` rows were deleted (Hive 4: only when it is non-zero)."""
    import sqlalchemy as sa

    tc, t = ms.tables.TXN_COMPONENTS, ms.tables.TXNS
    aborted_ids: list[int] = []
    n_tc = 0
    if ms.hive_version >= 4:
        if hw != 0:
            aborted_ids = sorted(
                {
                    int(x)
                    for (x,) in conn.execute(
                        sa.select(tc.TC_TXNID).where(
                            *tcond,
                            tc.TC_WRITEID <= hw,
                            tc.TC_TXNID.in_(sa.select(t.TXN_ID).where(t.TXN_STATE == "a")),
                        )
                    )
                }
            )
            n_tc = conn.execute(
                sa.delete(tc.clause).where(
                    tc.TC_TXNID.in_(sa.select(t.TXN_ID).where(t.TXN_STATE == "a")), *tcond, tc.TC_WRITEID <= hw
                )
            ).rowcount
    else:
        aborted_ids = sorted(
            {
                int(x)
                for (x,) in conn.execute(
                    sa.select(t.TXN_ID)
                    .distinct()
                    .select_from(t.clause.join(tc.clause, tc.TC_TXNID == t.TXN_ID))
                    .where(t.TXN_STATE == "a", *tcond, tc.TC_WRITEID <= hw)
                )
            }
        )
        if aborted_ids:
            n_tc = conn.execute(sa.delete(tc.clause).where(tc.TC_TXNID.in_(aborted_ids), *tcond)).rowcount
    return aborted_ids, n_tc


def _mark_cleaned_h2(ms, cq_id: int, *, remove_empty_aborted_txns: bool) -> dict:
    """Hive 2.3's ``CompactionTxnHandler.markCleaned``, statement for statement: read the row,
    delete it, insert the ``s`` history row (``CC_END`` = db now, ``CC_HIGHEST_TXN_ID`` from
    ``CQ_HIGHEST_TXN_ID``), delete the partition's ``COMPLETED_TXN_COMPONENTS`` (``CTC_TXNID <=
    highest`` when highest is non-zero), select the aborted txns with components on the
    table/partition (``TXN_ID <= highest`` when non-zero) and delete those components. Then the
    emptied aborted ``TXNS`` rows, as 2.3's ``cleanEmptyAbortedTxns`` removes them."""
    import sqlalchemy as sa

    T = ms.tables
    cq, ctc, tc, t = T.COMPACTION_QUEUE, T.COMPLETED_TXN_COMPONENTS, T.TXN_COMPONENTS, T.TXNS

    def step(conn: sa.Connection) -> dict[str, Any]:
        row = conn.execute(sa.select(cq.clause).where(cq.CQ_ID == cq_id)).mappings().first()
        if row is None:
            raise NotFoundError(f"compaction {cq_id} is not in COMPACTION_QUEUE (already cleaned or failed?)")
        r = {k.upper(): v for k, v in row.items()}
        db, tbl, part = r["CQ_DATABASE"], r["CQ_TABLE"], r["CQ_PARTITION"]
        hw = int(r["CQ_HIGHEST_TXN_ID"] or 0)
        now = now_ms(conn)
        if conn.execute(sa.delete(cq.clause).where(cq.CQ_ID == cq_id)).rowcount != 1:
            raise NotFoundError(f"compaction {cq_id} could not be deleted from COMPACTION_QUEUE")
        queue.insert_history(ms, conn, queue.history_row(ms, r, state="s", end=now))
        cond = _scope(ctc.CTC_DATABASE, ctc.CTC_TABLE, ctc.CTC_PARTITION, db, tbl, part)
        if hw != 0:
            cond.append(ctc.CTC_TXNID <= hw)
        n_ctc = conn.execute(sa.delete(ctc.clause).where(*cond)).rowcount
        tcond = _scope(tc.TC_DATABASE, tc.TC_TABLE, tc.TC_PARTITION, db, tbl, part)
        acond = [t.TXN_STATE == "a", *tcond] + ([t.TXN_ID <= hw] if hw != 0 else [])
        aborted_ids = sorted(
            int(x)
            for (x,) in conn.execute(
                sa.select(t.TXN_ID)
                .distinct()
                .select_from(t.clause.join(tc.clause, tc.TC_TXNID == t.TXN_ID))
                .where(*acond)
            )
        )
        n_tc = 0
        if aborted_ids:
            n_tc = conn.execute(sa.delete(tc.clause).where(tc.TC_TXNID.in_(aborted_ids), *tcond)).rowcount
        removed = _remove_empty_aborted(ms, conn, aborted_ids) if remove_empty_aborted_txns else []
        return {
            "cq_id": cq_id,
            "history_state": "s",
            "queue_rows_deleted": 1,
            "completed_txn_components_deleted": int(n_ctc),
            "txn_components_deleted": int(n_tc),
            "aborted_txns": aborted_ids,
            "aborted_txns_removed": removed,
            "highest_write_id": hw,
            "end": now,
        }

    return write_step(ms, step, name="markCleaned")


def clean_empty_aborted_txns(ms) -> list[int]:
    """Hive 2.3's ``cleanEmptyAbortedTxns`` (its Initiator, at the end of every cycle): every
    aborted ``TXNS`` row whose id is ``NOT IN (SELECT TC_TXNID FROM TXN_COMPONENTS)`` is deleted —
    the same ``NOT IN``, so a NULL ``TC_TXNID`` (possible in 2.3's Postgres schema) makes it
    delete nothing, as in Hive. Returns the ids deleted."""
    import sqlalchemy as sa

    if ms.hive_version != 2:
        raise RefusedError("cleanEmptyAbortedTxns over every txn is Hive 2.3's step here")
    t, tc = ms.tables.TXNS, ms.tables.TXN_COMPONENTS

    def step(conn) -> list[int]:
        q = sa.select(t.TXN_ID).where(t.TXN_ID.not_in(sa.select(tc.TC_TXNID)), t.TXN_STATE == "a")
        ids = sorted(int(x) for (x,) in conn.execute(q))
        if ids:
            conn.execute(sa.delete(t.clause).where(t.TXN_ID.in_(ids)))
        return ids

    return write_step(ms, step, name="cleanEmptyAbortedTxns")


def remove_empty_aborted_txns(ms, txn_ids: list[int]) -> list[int]:
    """Delete the aborted ``TXNS`` rows among ``txn_ids`` that no ``TXN_COMPONENTS`` row
    references any more — what Hive 3's ``cleanEmptyAbortedTxns`` and Hive 4's
    ``cleanEmptyAbortedAndCommittedTxns`` do for them (Hive 4 never deletes the row with the
    highest ``TXN_ID`` nor one started within ``metastore.txn.opentxn.timeout``). Limited to the
    given ids (the txns a :func:`mark_cleaned` just emptied). Returns the ids deleted."""
    if not txn_ids:
        return []
    return write_step(ms, lambda conn: _remove_empty_aborted(ms, conn, txn_ids), name="cleanEmptyAbortedTxns")


def _remove_empty_aborted(ms, conn, txn_ids: list[int]) -> list[int]:
    import sqlalchemy as sa

    if not txn_ids:
        return []
    T = ms.tables
    t, tc = T.TXNS, T.TXN_COMPONENTS
    cond = [
        t.TXN_ID.in_(list(txn_ids)),
        t.TXN_STATE == "a",
        t.TXN_ID.not_in(sa.select(tc.TC_TXNID).where(tc.TC_TXNID.in_(list(txn_ids)))),
    ]
    if ms.hive_version >= 4:
        mx = conn.execute(sa.select(sa.func.max(t.TXN_ID))).scalar()
        cond += [t.TXN_ID < int(mx or 0), t.TXN_STARTED < now_ms(conn) - OPEN_TXN_TIMEOUT_MS]
    ids = sorted(int(x) for (x,) in conn.execute(for_update(sa.select(t.TXN_ID).where(*cond), conn)))
    if ids:
        conn.execute(sa.delete(t.clause).where(t.TXN_ID.in_(ids), t.TXN_STATE == "a"))
    return ids
