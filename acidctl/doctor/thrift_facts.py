"""The doctor's facts (:class:`~acidctl.doctor.facts.Warehouse`) from a ``thrift://`` metastore.

What the metastore's Thrift API returns is read in a bounded number of calls, whatever the size
of the warehouse (operations.md §11, metastore.md §8.3):

* ``get_all_databases``, then per database ``get_database`` (its parameters:
  ``no_auto_compaction``), ``get_all_tables`` and ``get_table_objects_by_name`` in batches of
  :data:`TABLE_BATCH` names (``get_table`` per table only where the server lacks the batch call);
  ``get_partitions`` once per partitioned *transactional* table (other tables' partitions are
  never looked at by doctor, why or metrics);
* ``get_open_txns_info``: the open and aborted txns with started / heartbeat / user / host and the
  txn high-water mark;
* ``show_locks``: HIVE_LOCKS-shaped rows;
* ``show_compact``: the queue (initiated, working, ready for cleaning) and the history (every
  other state);
* Hive 3/4: one ``get_valid_write_ids`` for every transactional table (open and aborted write ids,
  the high-water mark as ``NEXT_WRITE_ID − 1``). Hive 2.3 has no write ids: its txn ids are the
  write ids (insert-only-and-hive2.md B.2), so the table's list is the ValidTxnList
  (:meth:`Warehouse.write_id_list`) and ``NEXT_WRITE_ID`` stands for ``NTXN_NEXT``.

What the API does not return is named in :attr:`Warehouse.facts_unavailable` (:data:`NEVER`
always, :data:`HIVE4_QUEUE` on Hive 4, ``CQ_HIGHEST_WRITE_ID`` when a row lacks it), never left
empty as if it had been read as zero: the rules needing such a fact are skipped and said so
(:data:`acidctl.doctor.findings.CHECK_NEEDS`, :data:`acidctl.doctor.metrics.GAUGE_NEEDS`).

Ages use this machine's clock (there is no database clock to ask over Thrift).
"""

from __future__ import annotations

import time
from typing import Any

from acidctl.doctor.facts import TableRow, Warehouse
from acidctl.metastore.queries import COMPACTION_STATES_H3, COMPACTION_STATES_H4, LOCK_STATES, LOCK_TYPES
from acidctl.metastore.thrift import LOCK_STATE_NAMES, LOCK_TYPE_NAMES

#: table names per ``get_table_objects_by_name`` call
TABLE_BATCH = 100

#: metastore facts no Thrift call returns, on every Hive version
NEVER = frozenset(
    {
        "TXN_COMPONENTS",  # aborted txns per table/partition
        "COMPLETED_TXN_COMPONENTS",  # committed writes the Initiator has not considered
        "WRITE_SET",
        "TXN_TO_WRITE_ID",  # row counts, and which txn holds an open/aborted write id
        "TXN_TYPE",  # get_open_txns_info's TxnInfo has no type (replication txns)
    }
)
#: Hive 4 facts missing from show_compact's element in the bindings (pyiceberg's IDL stops at
#: cleanerStart: no poolName, nextTxnId, txnId, commitTime, retry retention) and tables no call reads
HIVE4_QUEUE = frozenset(
    {
        "CQ_TXN_ID",
        "CQ_NEXT_TXN_ID",
        "CQ_COMMIT_TIME",
        "CQ_RETRY_RETENTION",
        "CQ_POOL_NAME",
        "MIN_HISTORY_LEVEL",
        "MIN_HISTORY_WRITE_ID",
        "AUX_TABLE",  # the Initiator's last cycle
        "COMPACTION_METRICS_CACHE",
    }
)

#: show_compact's state texts (2.3/3: CompactionInfo; 4: TxnStore's *_RESPONSE) → the state codes:
#: the SHOW COMPACTIONS tables of both versions read backwards ("attempted" and "did not initiate"
#: are both 'a')
STATE_CODES = {name: code for states in (COMPACTION_STATES_H3, COMPACTION_STATES_H4) for code, name in states.items()}
QUEUE_STATES = frozenset({"i", "w", "r"})
#: CompactionType → CQ_TYPE (MINOR 1, MAJOR 2; Hive 4: REBALANCE 3, ABORT_TXN_CLEANUP 4)
TYPE_CODES = {1: "i", 2: "a", 3: "r", 4: "c"}
#: Thrift's LockState / LockType values → HIVE_LOCKS codes, through the names both tables give
#: (ABORT and NOT_ACQUIRED are no stored state: they stay as the number)
LOCK_STATE_CODES = {
    enum: code for enum, name in LOCK_STATE_NAMES.items() for code, n in LOCK_STATES.items() if n == name
}
LOCK_TYPE_CODES = {enum: code for enum, name in LOCK_TYPE_NAMES.items() for code, n in LOCK_TYPES.items() if n == name}


def read_warehouse_thrift(ms, *, now_ms: int | None = None) -> Warehouse:
    """Every fact the Thrift API offers, as the :class:`Warehouse` the doctor rules read."""
    from acidctl.metastore import thrift

    hv = ms.hive_version
    tables = read_tables(ms)
    hwm, infos = thrift._open_txns_info(ms)
    txns = txns_from(infos)
    now = int(now_ms) if now_ms is not None else int(time.time() * 1000)
    locks = [lock_row(e) for e in thrift._lock_elements(ms)]
    queue, history = compaction_rows(thrift._compact_elements(ms), hive_version=hv)
    acid = [t for t in tables if t.transactional]
    if hv >= 3:
        invalid, nwi = read_write_ids(ms, acid, hwm, txns)
    else:  # Hive 2.3: txn ids are the write ids; the table's hwm is the txn hwm
        invalid, nwi = {}, {(t.db, t.table): hwm + 1 for t in acid}
    return warehouse_from(
        hive_version=hv,
        now_ms=now,
        tables=tables,
        txns=txns,
        txn_hwm=hwm,
        locks=locks,
        queue=queue,
        history=history,
        invalid_write_ids=invalid,
        next_write_id=nwi,
    )


def warehouse_from(
    *,
    hive_version: int,
    now_ms: int,
    tables: list[TableRow],
    txns: dict[int, dict],
    txn_hwm: int,
    locks: list[dict],
    queue: list[dict],
    history: list[dict],
    invalid_write_ids: dict,
    next_write_id: dict,
) -> Warehouse:
    """The Warehouse of what a Thrift metastore answered, with the facts it could not answer named."""
    missing = set(NEVER)
    if hive_version >= 4:
        missing |= HIVE4_QUEUE
    if any(r.get("CQ_HIGHEST_WRITE_ID") is None for r in queue) or any(
        r.get("CC_HIGHEST_WRITE_ID") is None for r in history
    ):
        missing.add("CQ_HIGHEST_WRITE_ID")
    return Warehouse(
        hive_version=hive_version,
        now_ms=now_ms,
        tables=sorted(tables, key=lambda x: (x.db, x.table)),
        txns=txns,
        txn_hwm=txn_hwm,
        aborted_components={},
        completed_components={},
        write_set={},
        txn_to_write_id={},
        invalid_write_ids=invalid_write_ids,
        next_write_id=next_write_id,
        locks=locks,
        queue=queue,
        history=history,
        min_history_level=None,
        min_history_write_id={},
        initiator_last_cycle_ms=None,
        metrics_cache=[],
        purgeable={},
        cleaner_waits=None,
        facts_unavailable=frozenset(missing),
        source="thrift",
    )


# -- tables ----------------------------------------------------------------------------------


def read_tables(ms) -> list[TableRow]:
    """Every table of every database with its parameters, partition keys, its database's
    parameters and, for transactional partitioned tables, its partitions."""
    from acidctl.errors import UnsupportedSchema

    out: list[TableRow] = []
    for db in sorted(ms.call("get_all_databases") or []):
        dbo = ms.call("get_database", db)
        db_params = {k: v if v is not None else "" for k, v in (dbo.parameters or {}).items()}
        names = sorted(ms.call("get_all_tables", db) or [])
        objs: list[Any] = []
        for i in range(0, len(names), TABLE_BATCH):
            chunk = names[i : i + TABLE_BATCH]
            try:
                objs.extend(ms.call("get_table_objects_by_name", db, chunk) or [])
            except UnsupportedSchema:  # a server without the batch call
                objs.extend(ms.call("get_table", db, n) for n in chunk)
        for t in objs:
            row = table_row(t, db_params)
            if row.transactional and row.partition_keys:
                row.partitions = partitions_of(ms, t)
            out.append(row)
    return sorted(out, key=lambda x: (x.db, x.table))


def table_row(t: Any, db_params: dict[str, str]) -> TableRow:
    """A Thrift ``Table`` as a :class:`TableRow` (no TBL_ID over Thrift: 0)."""
    sd = t.sd
    return TableRow(
        db=str(t.dbName).lower(),
        table=str(t.tableName).lower(),
        tbl_id=0,
        location=sd.location if sd else None,
        params={k: v if v is not None else "" for k, v in (t.parameters or {}).items()},
        partition_keys=[k.name for k in (t.partitionKeys or [])],
        partitions={},
        db_params=dict(db_params),
    )


def partitions_of(ms, t: Any) -> dict[str, str | None]:
    """PART_NAME → location of every partition (``get_partitions``; names escaped as Hive's
    ``makePartName`` does)."""
    from acidctl.metastore.tables import escape_path_name

    keys = [k.name for k in (t.partitionKeys or [])]
    out: dict[str, str | None] = {}
    for p in ms.call("get_partitions", t.dbName, t.tableName, -1) or []:
        name = "/".join(f"{escape_path_name(k)}={escape_path_name(v)}" for k, v in zip(keys, p.values, strict=False))
        out[name] = p.sd.location if p.sd else None
    return out


# -- transactions, locks, compactions --------------------------------------------------------


def txns_from(infos: list) -> dict[int, dict]:
    """``TxnInfo`` of get_open_txns_info → TXNS-like rows of the open and aborted txns (the type
    is not returned: None)."""
    from acidctl.metastore.thrift import _state_code

    out: dict[int, dict] = {}
    for t in infos:
        st = _state_code(t.state)
        if st not in ("o", "a"):
            continue
        out[int(t.id)] = {
            "txn_id": int(t.id),
            "state": st,
            "started": int(t.startedTime or 0),
            "last_heartbeat": int(t.lastHeartbeatTime or 0),
            "user": t.user,
            "host": t.hostname,
            "type": None,
            "meta_info": t.metaInfo,
            "agent_info": t.agentInfo,
        }
    return out


def lock_row(e: Any) -> dict:
    """A ``ShowLocksResponseElement`` as a HIVE_LOCKS row (upper-case column names, state and
    type codes as stored)."""
    return {
        "HL_LOCK_EXT_ID": int(e.lockid),
        "HL_LOCK_INT_ID": int(e.lockIdInternal) if e.lockIdInternal is not None else 1,
        "HL_TXNID": int(e.txnid or 0),
        "HL_DB": e.dbname,
        "HL_TABLE": e.tablename,
        "HL_PARTITION": e.partname,
        "HL_LOCK_STATE": LOCK_STATE_CODES.get(e.state, str(e.state)),
        "HL_LOCK_TYPE": LOCK_TYPE_CODES.get(e.type, str(e.type)),
        "HL_LAST_HEARTBEAT": int(e.lastheartbeat or 0),
        "HL_ACQUIRED_AT": int(e.acquiredat) if e.acquiredat else None,
        "HL_USER": e.user,
        "HL_HOST": e.hostname,
        "HL_HEARTBEAT_COUNT": e.heartbeatCount,
        "HL_AGENT_INFO": e.agentInfo,
        "HL_BLOCKEDBY_EXT_ID": int(e.blockedByExtId) if e.blockedByExtId else None,
        "HL_BLOCKEDBY_INT_ID": int(e.blockedByIntId) if e.blockedByIntId else None,
    }


def compaction_rows(elements: list, *, hive_version: int) -> tuple[list[dict], list[dict]]:
    """``ShowCompactResponseElement`` s → (COMPACTION_QUEUE rows, COMPLETED_COMPACTIONS rows),
    split by state: initiated / working / ready for cleaning are queue rows, every other state
    (succeeded, failed, attempted / did not initiate, refused, aborted) history rows. Columns the
    element lacks are absent (``.get`` → None), never 0."""
    queue: list[dict] = []
    history: list[dict] = []
    for e in elements:
        code = STATE_CODES.get(str(e.state or "").strip().lower())
        if code is None:
            continue
        pre = "CQ_" if code in QUEUE_STATES else "CC_"
        end = e.endTime if e.endTime not in (None, -1, 0) else None
        row = {
            "ID": e.id,
            "DATABASE": e.dbname,
            "TABLE": e.tablename,
            "PARTITION": e.partitionname,
            "STATE": code,
            "TYPE": TYPE_CODES.get(e.type, str(e.type)) if e.type is not None else None,
            "WORKER_ID": e.workerid,
            "START": int(e.start) if e.start else None,
            "RUN_AS": e.runAs,
            # Hive 3/4: the highest *write* id (sic: hightestTxnId); Hive 2.3: the highest txn id
            "HIGHEST_WRITE_ID": int(e.hightestTxnId) if e.hightestTxnId else None,
            "META_INFO": e.metaInfo,
            "HADOOP_JOB_ID": e.hadoopJobId,
            "ERROR_MESSAGE": e.errorMessage,
            "ENQUEUE_TIME": int(e.enqueueTime) if e.enqueueTime else None,
            "WORKER_VERSION": e.workerVersion,
            "INITIATOR_ID": e.initiatorId,
            "INITIATOR_VERSION": e.initiatorVersion,
            "CLEANER_START": int(e.cleanerStart) if e.cleanerStart else None,
        }
        if pre == "CC_":
            row["END"] = int(end) if end is not None else None
        (queue if pre == "CQ_" else history).append({pre + k: v for k, v in row.items()})
    queue.sort(key=lambda r: int(r["CQ_ID"] or 0))
    history.sort(key=lambda r: int(r["CC_ID"] or 0))
    return queue, history


# -- write ids (Hive 3/4) --------------------------------------------------------------------


def read_write_ids(ms, tables: list[TableRow], txn_hwm: int, txns: dict[int, dict]) -> tuple[dict, dict]:
    """One ``get_valid_write_ids`` for every transactional table, with the reader's ValidTxnList
    built from the same ``get_open_txns_info`` answer (what HiveTxnManager does)."""
    if not tables:
        return {}, {}
    from hive_metastore.ttypes import GetValidWriteIdsRequest

    from acidctl.acid.writeids import TxnList

    ids = sorted(txns)
    tl = TxnList(
        hwm=txn_hwm,
        open=tuple(i for i in ids if txns[i]["state"] == "o" and i <= txn_hwm),
        aborted=tuple(i for i in ids if txns[i]["state"] == "a" and i <= txn_hwm),
    )
    names = [f"{t.db}.{t.table}" for t in tables]
    r = ms.call("get_valid_write_ids", GetValidWriteIdsRequest(fullTableNames=names, validTxnList=str(tl)))
    return write_ids_from(list(r.tblValidWriteIds or []))


def write_ids_from(answers: list) -> tuple[dict, dict]:
    """``TableValidWriteIds`` → (invalid write ids per (db, table) as ``(write id, 0, 'o'|'a')``
    — which txn holds a write id is not returned: 0 —, NEXT_WRITE_ID = hwm + 1)."""
    invalid: dict[tuple, list] = {}
    nwi: dict[tuple, int] = {}
    for tv in answers:
        db, _, table = str(tv.fullTableName).lower().partition(".")
        bits = tv.abortedBits or b""
        inv = [int(w) for w in tv.invalidWriteIds or []]
        # abortedBits: java.util.BitSet.toByteArray (little-endian bit order, metastore.md §7.2)
        rows = [(w, 0, "a" if i // 8 < len(bits) and bits[i // 8] >> (i % 8) & 1 else "o") for i, w in enumerate(inv)]
        if rows:
            invalid[(db, table)] = rows
        nwi[(db, table)] = int(tv.writeIdHighWaterMark) + 1
    return invalid, nwi
