"""Everything ``doctor``, ``why`` and ``metrics`` need from the metastore, read in one pass.

One read-only database transaction (:meth:`Metastore.read`), a fixed number of queries whatever
the size of the warehouse (no query per table), bound parameters only. The result is plain data
(:class:`Warehouse`) so that the finding rules in :mod:`acidctl.doctor.findings` are pure and
testable without a database.

Kept apart from :mod:`acidctl.metastore.queries` (the SHOW queries) on purpose: these are
aggregate reads over whole tables (counts per table/partition), not per-row listings.

Write-id lists are derived here from ``TXN_TO_WRITE_ID`` rows of open and aborted txns and the
table's ``NEXT_WRITE_ID`` (metastore.md §7.2 without the per-table round trips): a write id
whose txn is neither open nor aborted is committed. Hive 4's "collapse" of a list without any
committed id below its hwm and young txn-id gaps are not modelled (derived simplification; only
the reader snapshot of a table that is being written this very second can differ).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
from typing import Any

from acidctl.acid.writeids import TxnList, WriteIdList
from acidctl.metastore.connection import Metastore, db_now_ms

Key = tuple  # (db, table) or (db, table, partition)


@dataclasses.dataclass
class TableRow:
    db: str
    table: str
    tbl_id: int
    location: str | None
    params: dict[str, str]
    partition_keys: list[str]
    partitions: dict[str, str | None]  # PART_NAME → location
    db_params: dict[str, str] = dataclasses.field(default_factory=dict)  # DATABASE_PARAMS

    @property
    def full_name(self) -> str:
        return f"{self.db}.{self.table}"

    @property
    def transactional(self) -> bool:
        return (self.params.get("transactional") or "").strip().lower() == "true"

    @property
    def insert_only(self) -> bool:
        return (self.params.get("transactional_properties") or "").strip().lower() == "insert_only"

    def param(self, key: str) -> str | None:
        """A table property, key compared case-insensitively (Hive reads both spellings)."""
        if key in self.params:
            return self.params[key]
        low = key.lower()
        for k, v in self.params.items():
            if k.lower() == low:
                return v
        return None

    def flag(self, key: str) -> bool:
        return (self.param(key) or "").strip().lower() == "true"

    def no_auto_compaction(self, hive_version: int) -> tuple[bool, str | None]:
        """(skipped by the Initiator, deciding level ``database``/``table``/None)."""
        from acidctl.acid.initiator import no_auto_compaction

        return no_auto_compaction(self.params, self.db_params, hive_version=hive_version)


@dataclasses.dataclass
class Warehouse:
    """The metastore side of the warehouse; every time in epoch ms of the database clock."""

    hive_version: int
    now_ms: int
    tables: list[TableRow]
    txns: dict[int, dict]  # open and aborted TXNS rows by id
    txn_hwm: int
    aborted_components: dict[Key, dict]  # (db, table, part) → rows, txns, oldest_started
    completed_components: dict[Key, dict]  # (db, table, part) → rows, newest (ms or None)
    write_set: dict[Key, int]  # (db, table) → rows
    txn_to_write_id: dict[Key, int]  # (db, table) → rows
    invalid_write_ids: dict[Key, list[tuple[int, int, str]]]  # (db, table) → (write id, txn, 'o'|'a')
    next_write_id: dict[Key, int]  # (db, table) → NWI_NEXT
    locks: list[dict]  # HIVE_LOCKS rows (upper-case column names)
    queue: list[dict]  # COMPACTION_QUEUE rows
    history: list[dict]  # COMPLETED_COMPACTIONS rows
    min_history_level: int | None  # MIN(MHL_MIN_OPEN_TXNID)
    min_history_write_id: dict[Key, int]  # Hive 4: (db, table) → MIN(MH_WRITEID)
    initiator_last_cycle_ms: int | None  # Hive 4: AUX_TABLE 'Initiator' MT_KEY2
    metrics_cache: list[dict]  # Hive 4 COMPACTION_METRICS_CACHE rows
    purgeable: dict = dataclasses.field(default_factory=dict)  # table → rows the housekeeper would delete
    #: ``{cq_id: [what holds it back]}`` for every ready-for-cleaning row, from
    #: :func:`acidctl.metastore.cleaner.cleaner_waits` — the very function ``clean`` asks, so doctor
    #: and why hold back exactly what ``clean`` holds back (None: not read, e.g. hand-made facts)
    cleaner_waits: dict | None = None
    #: metastore facts this source cannot give (a ``thrift://`` metastore: TXN_COMPONENTS,
    #: COMPLETED_TXN_COMPONENTS, ...; :mod:`acidctl.doctor.thrift_facts`): their fields are empty
    #: because *unknown*, not because zero; the rules needing them are skipped and said so
    facts_unavailable: frozenset[str] = frozenset()
    #: ``database`` or ``thrift``: where the facts were read
    source: str = "database"

    def has(self, fact: str) -> bool:
        """Was ``fact`` (a metastore table or column name) read, so that an empty field means none?"""
        return fact not in self.facts_unavailable

    def table(self, db: str, table: str) -> TableRow | None:
        return self._table_index.get((db, table))

    @functools.cached_property
    def _table_index(self) -> dict:
        return {(t.db, t.table): t for t in self.tables}

    @functools.cached_property
    def queue_short(self) -> list[dict]:
        """COMPACTION_QUEUE rows with short lower-case keys (id, database, table, partition, ...)."""
        return [_short(r, "CQ_") for r in self.queue]

    @functools.cached_property
    def history_short(self) -> list[dict]:
        return [_short(r, "CC_") for r in self.history]

    @functools.cached_property
    def _compaction_index(self) -> dict:
        idx: dict[tuple, tuple[list, list]] = {}
        for r in self.queue_short:
            idx.setdefault((r["database"], r["table"], r["partition"]), ([], []))[0].append(r)
        for r in self.history_short:
            idx.setdefault((r["database"], r["table"], r["partition"]), ([], []))[1].append(r)
        return idx

    def compactions_of(self, db: str, table: str, partition: str | None) -> tuple[list[dict], list[dict]]:
        """(queue rows, history rows) of one partition (or unpartitioned table)."""
        return self._compaction_index.get((db, table, partition), ([], []))

    @functools.cached_property
    def _table_highest(self) -> dict:
        out: dict[tuple, set] = {}
        for r in self.queue_short + self.history_short:
            if r.get("highest_write_id") is not None:
                out.setdefault((r["database"], r["table"]), set()).add(int(r["highest_write_id"]))
        return out

    def highest_write_ids(self, db: str, table: str) -> frozenset[int]:
        """Every CQ_/CC_HIGHEST_WRITE_ID of the table (queue and history)."""
        return frozenset(self._table_highest.get((db, table), ()))

    @property
    def open_txns(self) -> list[dict]:
        return [t for t in self.txns.values() if t["state"] == "o"]

    @property
    def aborted_txns(self) -> list[dict]:
        return [t for t in self.txns.values() if t["state"] == "a"]

    def txn_list(self) -> TxnList:
        """The ValidReadTxnList of a fresh reader (open and aborted ids as exceptions)."""
        ids = sorted(self.txns)
        return TxnList(
            hwm=self.txn_hwm,
            open=tuple(i for i in ids if self.txns[i]["state"] == "o" and i <= self.txn_hwm),
            aborted=tuple(i for i in ids if self.txns[i]["state"] == "a" and i <= self.txn_hwm),
        )

    def write_id_list(self, db: str, table: str) -> WriteIdList:
        """The table's ValidReaderWriteIdList (hwm = NEXT_WRITE_ID − 1); on Hive 2.3 the
        ValidTxnList as one (txn ids are the write ids, insert-only-and-hive2.md B.2)."""
        if self.hive_version == 2:
            from acidctl.acid.hive2 import from_states

            states = {i: t["state"] for i, t in self.txns.items()}
            return from_states(self.txn_hwm, states).to_write_ids(table=f"{db}.{table}")
        nxt = self.next_write_id.get((db, table))
        hwm = int(nxt) - 1 if nxt is not None else 0
        inv = [x for x in self.invalid_write_ids.get((db, table), []) if x[0] <= hwm]
        return WriteIdList(
            table=f"{db}.{table}",
            hwm=hwm,
            open=tuple(sorted(w for w, _, s in inv if s == "o")),
            aborted=tuple(sorted(w for w, _, s in inv if s == "a")),
        )


def _short(r: dict, pre: str) -> dict:
    out = {k[len(pre) :].lower(): v for k, v in r.items() if k.startswith(pre)}
    out["partition"] = out.get("partition") or None
    out["database"] = str(out.get("database") or "").lower()
    out["table"] = str(out.get("table") or "").lower()
    out["source"] = "queue" if pre == "CQ_" else "history"
    return out


def _ms(v: Any) -> int | None:
    """A TIMESTAMP column value (datetime, or text on SQLite) as epoch ms (UTC assumed)."""
    if v is None:
        return None
    if isinstance(v, (int, float)):
        return int(v)
    if isinstance(v, str):
        try:
            v = _dt.datetime.fromisoformat(v.strip())
        except ValueError:
            return None
    if isinstance(v, _dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=_dt.timezone.utc)
        return int(v.timestamp() * 1000)
    return None


def _rows(conn, table) -> list[dict]:
    import sqlalchemy as sa

    return [{k.upper(): v for k, v in r.items()} for r in conn.execute(sa.select(table.clause)).mappings()]


def read_warehouse(ms: Metastore, *, now_ms: int | None = None) -> Warehouse:
    """Read every fact the doctor rules use (one read-only transaction), in stages: the tables and
    partitions, the open and aborted transactions, the components and write ids, then the locks,
    the compaction queue and history. A ``thrift://`` metastore: what its API offers
    (:func:`acidctl.doctor.thrift_facts.read_warehouse_thrift`), the rest named unavailable."""
    from acidctl.metastore import thrift

    if thrift.is_thrift(ms):
        from acidctl.doctor.thrift_facts import read_warehouse_thrift

        return read_warehouse_thrift(ms, now_ms=now_ms)
    if ms.hive_version == 2:
        return read_warehouse_hive2(ms, now_ms=now_ms)
    with ms.read() as conn:
        now = int(now_ms) if now_ms is not None else db_now_ms(conn)
        tables = _read_tables(ms, conn)
        txns, txn_hwm = _read_txns(ms, conn)
        components = _read_components(ms, conn, txns)
        queues = _read_locks_and_compactions(ms, conn)
    return Warehouse(
        cleaner_waits=_cleaner_waits(ms, queues["queue"]),
        hive_version=ms.hive_version,
        now_ms=now,
        tables=sorted(tables.values(), key=lambda x: (x.db, x.table)),
        txns=txns,
        txn_hwm=txn_hwm,
        **components,
        **queues,
    )


def _read_tables(ms: Metastore, conn) -> dict[int, TableRow]:
    """Tables with their database's parameters, their own parameters, partition keys and partitions."""
    import sqlalchemy as sa

    T = ms.tables
    # -- tables, partitions --------------------------------------------------------
    dbs, tbls, sds = T.DBS, T.TBLS, T.SDS
    trows = conn.execute(
        sa.select(dbs.NAME, tbls.TBL_NAME, tbls.TBL_ID, sds.LOCATION, dbs.DB_ID).select_from(
            tbls.clause.join(dbs.clause, dbs.DB_ID == tbls.DB_ID).outerjoin(sds.clause, sds.SD_ID == tbls.SD_ID)
        )
    ).all()
    db_params: dict[int, dict[str, str]] = {}
    if not hasattr(T, "exists") or T.exists("DATABASE_PARAMS"):  # a Hive 2.3 schema always has it
        dp = T.DATABASE_PARAMS
        for did, k, v in conn.execute(sa.select(dp.DB_ID, dp.PARAM_KEY, dp.PARAM_VALUE)):
            db_params.setdefault(int(did), {})[k] = v if v is not None else ""
    tables: dict[int, TableRow] = {}
    for dbn, tn, tid, loc, did in trows:
        tables[int(tid)] = TableRow(
            str(dbn).lower(), str(tn).lower(), int(tid), loc, {}, [], {}, db_params.get(int(did), {})
        )
    tp = T.TABLE_PARAMS
    for tid, k, v in conn.execute(sa.select(tp.TBL_ID, tp.PARAM_KEY, tp.PARAM_VALUE)):
        if int(tid) in tables:
            tables[int(tid)].params[k] = v if v is not None else ""
    pk = T.PARTITION_KEYS
    for tid, name in conn.execute(sa.select(pk.TBL_ID, pk.PKEY_NAME).order_by(pk.TBL_ID, pk.INTEGER_IDX)):
        if int(tid) in tables:
            tables[int(tid)].partition_keys.append(name)
    parts = T.PARTITIONS
    for tid, pname, loc in conn.execute(
        sa.select(parts.TBL_ID, parts.PART_NAME, sds.LOCATION).select_from(
            parts.clause.outerjoin(sds.clause, sds.SD_ID == parts.SD_ID)
        )
    ):
        if int(tid) in tables:
            tables[int(tid)].partitions[pname] = loc
    return tables


def read_warehouse_hive2(ms, *, now_ms: int | None = None) -> Warehouse:
    """The facts of a Hive 2.3 metastore database (:class:`acidctl.metastore.hive2.Hive2Metastore`,
    hive-txn-schema-2.3.0, insert-only-and-hive2.md B.8) in one read-only transaction. Txn ids are
    the write ids there (B.2): no TXN_TO_WRITE_ID / NEXT_WRITE_ID / MIN_HISTORY_LEVEL to read (none
    exist: zero rows, not unknown), the table's high-water mark is the txn one, and
    CQ/CC_HIGHEST_TXN_ID is the compaction's highest id. COMPLETED_TXN_COMPONENTS has no
    CTC_TIMESTAMP in 2.3: when a table was last written is unknown (``CTC_TIMESTAMP``)."""
    import sqlalchemy as sa

    T = ms.tables
    with ms.read() as conn:
        now = int(now_ms) if now_ms is not None else db_now_ms(conn)
        tables = _read_tables(ms, conn)
        txns, txn_hwm = _read_txns(ms, conn)
        ctc = T.COMPLETED_TXN_COMPONENTS
        aborted = _aborted_components(ms, conn)
        completed = {
            (d, tn, part): {"rows": int(n), "newest": None}
            for d, tn, part, n in conn.execute(
                sa.select(ctc.CTC_DATABASE, ctc.CTC_TABLE, ctc.CTC_PARTITION, sa.func.count()).group_by(
                    ctc.CTC_DATABASE, ctc.CTC_TABLE, ctc.CTC_PARTITION
                )
            )
        }
        write_set = _write_set(ms, conn)
        purge_ws = _write_set_purgeable(ms, conn, txns, write_set)
        locks = _rows(conn, T.HIVE_LOCKS)
        queue = [_highest(r, "CQ_") for r in _rows(conn, T.COMPACTION_QUEUE)]
        history = [_highest(r, "CC_") for r in _rows(conn, T.COMPLETED_COMPACTIONS)]
    return Warehouse(
        cleaner_waits=_cleaner_waits(ms, queue),
        hive_version=2,
        now_ms=now,
        tables=sorted(tables.values(), key=lambda x: (x.db, x.table)),
        txns=txns,
        txn_hwm=txn_hwm,
        aborted_components=aborted,
        completed_components=completed,
        write_set=write_set,
        txn_to_write_id={},
        invalid_write_ids={},
        next_write_id={(x.db, x.table): txn_hwm + 1 for x in tables.values() if x.transactional},
        locks=locks,
        queue=queue,
        history=history,
        min_history_level=None,
        min_history_write_id={},
        initiator_last_cycle_ms=None,
        metrics_cache=[],
        purgeable={"TXN_TO_WRITE_ID": 0, "WRITE_SET": purge_ws},
        facts_unavailable=frozenset({"CTC_TIMESTAMP"}),
    )


def _highest(r: dict, pre: str) -> dict:
    """A 2.3 queue/history row with its ``*_HIGHEST_TXN_ID`` under the name the rules read."""
    out = dict(r)
    out[pre + "HIGHEST_WRITE_ID"] = out.pop(pre + "HIGHEST_TXN_ID", None)
    return out


def _read_txns(ms: Metastore, conn) -> tuple[dict[int, dict], int]:
    """The open and aborted txns, and the txn high-water mark."""
    import sqlalchemy as sa

    T = ms.tables
    # -- transactions ---------------------------------------------------------------
    t = T.TXNS
    cols = [
        t.TXN_ID,
        t.TXN_STATE,
        t.TXN_STARTED,
        t.TXN_LAST_HEARTBEAT,
        t.TXN_USER,
        t.TXN_HOST,
        t.TXN_TYPE if t.has("TXN_TYPE") else sa.literal(None),
        t.TXN_META_INFO if t.has("TXN_META_INFO") else sa.literal(None),
        t.TXN_AGENT_INFO if t.has("TXN_AGENT_INFO") else sa.literal(None),
    ]
    txns: dict[int, dict] = {}
    for tid, st, started, hb, user, host, ttype, meta, agent in conn.execute(
        sa.select(*cols).where(t.TXN_STATE.in_(["o", "a"]))
    ):
        txns[int(tid)] = {
            "txn_id": int(tid),
            "state": st,
            "started": int(started or 0),
            "last_heartbeat": int(hb or 0),
            "user": user,
            "host": host,
            "type": int(ttype) if ttype is not None else None,
            "meta_info": meta,
            "agent_info": agent,
        }
    if ms.hive_version in (2, 3):
        nxt = conn.execute(sa.select(T.NEXT_TXN_ID.NTXN_NEXT)).scalar()
        txn_hwm = int(nxt) - 1 if nxt is not None else 0
    else:
        mx = conn.execute(sa.select(sa.func.max(t.TXN_ID))).scalar()
        txn_hwm = int(mx) if mx is not None else 0
    return txns, txn_hwm


def _read_components(ms: Metastore, conn, txns: dict[int, dict]) -> dict:
    """TXN_COMPONENTS of aborted txns, COMPLETED_TXN_COMPONENTS, WRITE_SET, TXN_TO_WRITE_ID (and
    its invalid write ids), what the housekeeper would purge, NEXT_WRITE_ID: Warehouse fields."""
    import sqlalchemy as sa

    T = ms.tables
    t = T.TXNS
    # -- components ---------------------------------------------------------------
    aborted = _aborted_components(ms, conn)
    ctc = T.COMPLETED_TXN_COMPONENTS
    completed: dict[Key, dict] = {}
    q = sa.select(
        ctc.CTC_DATABASE, ctc.CTC_TABLE, ctc.CTC_PARTITION, sa.func.count(), sa.func.max(ctc.CTC_TIMESTAMP)
    ).group_by(ctc.CTC_DATABASE, ctc.CTC_TABLE, ctc.CTC_PARTITION)
    for dbn, tn, part, n, newest in conn.execute(q):
        completed[(dbn, tn, part)] = {"rows": int(n), "newest": _ms(newest)}
    write_set = _write_set(ms, conn)
    t2w = T.TXN_TO_WRITE_ID
    t2w_counts = {
        (d, tn): int(n)
        for d, tn, n in conn.execute(
            sa.select(t2w.T2W_DATABASE, t2w.T2W_TABLE, sa.func.count()).group_by(t2w.T2W_DATABASE, t2w.T2W_TABLE)
        )
    }
    invalid: dict[Key, list] = {}
    for d, tn, txn, wid, st in conn.execute(
        sa.select(t2w.T2W_DATABASE, t2w.T2W_TABLE, t2w.T2W_TXNID, t2w.T2W_WRITEID, t.TXN_STATE)
        .select_from(t2w.clause.join(t.clause, t2w.T2W_TXNID == t.TXN_ID))
        .where(t.TXN_STATE.in_(["o", "a"]))
    ):
        invalid.setdefault((d, tn), []).append((int(wid), int(txn), st))
    # what the housekeeper would purge now (operations.md §2.5/§2.7, derived): TXN_TO_WRITE_ID
    # rows below the lowest open or aborted txn, WRITE_SET rows below the lowest open txn
    low_any = min(txns) if txns else None
    purge_t2w = (
        int(
            conn.execute(sa.select(sa.func.count()).select_from(t2w.clause).where(t2w.T2W_TXNID < low_any)).scalar()
            or 0
        )
        if low_any is not None
        else sum(t2w_counts.values())
    )
    purge_ws = _write_set_purgeable(ms, conn, txns, write_set)
    nwi = T.NEXT_WRITE_ID
    next_wid = {(d, tn): int(n) for d, tn, n in conn.execute(sa.select(nwi.NWI_DATABASE, nwi.NWI_TABLE, nwi.NWI_NEXT))}
    return {
        "aborted_components": aborted,
        "completed_components": completed,
        "write_set": write_set,
        "txn_to_write_id": t2w_counts,
        "invalid_write_ids": invalid,
        "next_write_id": next_wid,
        "purgeable": {"TXN_TO_WRITE_ID": purge_t2w, "WRITE_SET": purge_ws},
    }


def _aborted_components(ms: Metastore, conn) -> dict[Key, dict]:
    """TXN_COMPONENTS of aborted txns per (db, table, partition): rows, txns, oldest_started."""
    import sqlalchemy as sa

    t, tc = ms.tables.TXNS, ms.tables.TXN_COMPONENTS
    q = (
        sa.select(
            tc.TC_DATABASE,
            tc.TC_TABLE,
            tc.TC_PARTITION,
            sa.func.count(),
            sa.func.count(sa.distinct(tc.TC_TXNID)),
            sa.func.min(t.TXN_STARTED),
        )
        .select_from(tc.clause.join(t.clause, tc.TC_TXNID == t.TXN_ID))
        .where(t.TXN_STATE == "a")
        .group_by(tc.TC_DATABASE, tc.TC_TABLE, tc.TC_PARTITION)
    )
    return {
        (dbn, tn, part): {
            "rows": int(n),
            "txns": int(ntx),
            "oldest_started": int(oldest) if oldest is not None else None,
        }
        for dbn, tn, part, n, ntx, oldest in conn.execute(q)
    }


def _write_set(ms: Metastore, conn) -> dict[Key, int]:
    """WRITE_SET rows per (db, table)."""
    import sqlalchemy as sa

    ws = ms.tables.WRITE_SET
    return {
        (d, tn): int(n)
        for d, tn, n in conn.execute(
            sa.select(ws.WS_DATABASE, ws.WS_TABLE, sa.func.count()).group_by(ws.WS_DATABASE, ws.WS_TABLE)
        )
    }


def _write_set_purgeable(ms: Metastore, conn, txns: dict[int, dict], write_set: dict[Key, int]) -> int:
    """The WRITE_SET rows the housekeeper would purge now (operations.md §2.5/§2.7, derived): those
    below the lowest open txn (``txns``), all of them (``write_set``'s count) when none is open."""
    import sqlalchemy as sa

    ws = ms.tables.WRITE_SET
    low_open = min((i for i, x in txns.items() if x["state"] == "o"), default=None)
    if low_open is None:
        return sum(write_set.values())
    return int(
        conn.execute(sa.select(sa.func.count()).select_from(ws.clause).where(ws.WS_COMMIT_ID < low_open)).scalar() or 0
    )


def _read_locks_and_compactions(ms: Metastore, conn) -> dict:
    """HIVE_LOCKS, the compaction queue and history, MIN_HISTORY_LEVEL, and on Hive 4
    MIN_HISTORY_WRITE_ID, the Initiator's last cycle and the metrics cache: Warehouse fields."""
    import sqlalchemy as sa

    T = ms.tables
    # -- locks, compactions --------------------------------------------------------
    locks = _rows(conn, T.HIVE_LOCKS)
    queue = _rows(conn, T.COMPACTION_QUEUE)
    history = _rows(conn, T.COMPLETED_COMPACTIONS)
    mhl = conn.execute(sa.select(sa.func.min(T.MIN_HISTORY_LEVEL.MHL_MIN_OPEN_TXNID))).scalar()
    mhw: dict[Key, int] = {}
    last_cycle = None
    cache: list[dict] = []
    if ms.hive_version >= 4:
        m = T.MIN_HISTORY_WRITE_ID
        mhw = {
            (d, tn): int(w)
            for d, tn, w in conn.execute(
                sa.select(m.MH_DATABASE, m.MH_TABLE, sa.func.min(m.MH_WRITEID)).group_by(m.MH_DATABASE, m.MH_TABLE)
            )
        }
        aux = T.AUX_TABLE
        v = conn.execute(sa.select(aux.MT_KEY2).where(aux.MT_KEY1 == "Initiator")).scalar()
        last_cycle = int(v) if v else None
        cache = _rows(conn, T.COMPACTION_METRICS_CACHE)
    return {
        "locks": locks,
        "queue": queue,
        "history": history,
        "min_history_level": int(mhl) if mhl is not None else None,
        "min_history_write_id": mhw,
        "initiator_last_cycle_ms": last_cycle,
        "metrics_cache": cache,
    }


def _cleaner_waits(ms: Metastore, queue: list[dict]) -> dict | None:
    """What holds back each ready-for-cleaning row, asked exactly as ``clean`` asks it."""
    from acidctl.metastore import cleaner

    tables = sorted(
        {
            (str(r.get("CQ_DATABASE") or "").lower(), str(r.get("CQ_TABLE") or "").lower())
            for r in queue
            if r.get("CQ_STATE") == "r" and r.get("CQ_TYPE") != "c"
        }
    )
    out: dict = {}
    try:
        for db, table in tables:
            reqs = cleaner.ready_requests(ms, db, table)
            out.update(cleaner.cleaner_waits(ms, reqs))
    except Exception:  # a schema the Cleaner model cannot read: fall back to the findings' own rules
        return None
    return {int(k): v for k, v in out.items()}
