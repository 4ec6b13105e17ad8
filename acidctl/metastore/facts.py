"""What ``acidctl state DB.TABLE`` needs from the metastore beyond the snapshot: the facts
behind the (M) checks of directory-state.md §9 — table high-water mark (S13), aborted txns per
partition (S11), compactions' highest write ids (M05), open write ids with stale heartbeats
(S04) and the age of the oldest compaction waiting for the Cleaner (S02).

All reads in one read-only transaction, bound parameters only.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from acidctl.metastore.connection import Metastore, db_now_ms

TXN_TIMEOUT_MS = 300_000  # hive.txn.timeout default


@dataclasses.dataclass
class TableFacts:
    table_hwm: int | None
    aborted_txns_by_partition: dict[str | None, int]
    compaction_highest_write_ids: frozenset[int]
    stale_open_write_ids: frozenset[int]
    cleaner_backlog_seconds: dict[str | None, float]


def table_facts(ms: Metastore, db: str, table: str, *, timeout_ms: int = TXN_TIMEOUT_MS) -> TableFacts:
    import sqlalchemy as sa

    db, table = db.lower(), table.lower()
    T = ms.tables
    with ms.read() as conn:
        try:
            now = db_now_ms(conn)
        except Exception:
            now = int(time.time() * 1000)
        nwi = T.NEXT_WRITE_ID
        nxt = conn.execute(sa.select(nwi.NWI_NEXT).where(nwi.NWI_DATABASE == db, nwi.NWI_TABLE == table)).scalar()
        table_hwm = int(nxt) - 1 if nxt is not None else None

        tc, tx = T.TXN_COMPONENTS, T.TXNS
        q = (
            sa.select(tc.TC_PARTITION, sa.func.count(sa.distinct(tc.TC_TXNID)))
            .select_from(tc.clause.join(tx.clause, tc.TC_TXNID == tx.TXN_ID))
            .where(tc.TC_DATABASE == db, tc.TC_TABLE == table, tx.TXN_STATE == "a")
            .group_by(tc.TC_PARTITION)
        )
        aborted = {p: int(n) for p, n in conn.execute(q)}

        t2w = T.TXN_TO_WRITE_ID
        q = (
            sa.select(t2w.T2W_WRITEID)
            .select_from(t2w.clause.join(tx.clause, t2w.T2W_TXNID == tx.TXN_ID))
            .where(
                t2w.T2W_DATABASE == db,
                t2w.T2W_TABLE == table,
                tx.TXN_STATE == "o",
                tx.TXN_LAST_HEARTBEAT < now - timeout_ms,
            )
        )
        stale = frozenset(int(w) for (w,) in conn.execute(q))

        highest: set[int] = set()
        backlog: dict[str | None, float] = {}
        cq = T.COMPACTION_QUEUE
        for part, state, hw, start in conn.execute(
            sa.select(cq.CQ_PARTITION, cq.CQ_STATE, cq.CQ_HIGHEST_WRITE_ID, cq.CQ_START).where(
                cq.CQ_DATABASE == db, cq.CQ_TABLE == table
            )
        ):
            if hw is not None:
                highest.add(int(hw))
            if state == "r" and start is not None:
                age = max(0.0, (now - int(start)) / 1000.0)
                backlog[part] = max(backlog.get(part, 0.0), age)
        cc = T.COMPLETED_COMPACTIONS
        for (hw,) in conn.execute(
            sa.select(cc.CC_HIGHEST_WRITE_ID).where(
                cc.CC_DATABASE == db, cc.CC_TABLE == table, cc.CC_HIGHEST_WRITE_ID.is_not(None)
            )
        ):
            highest.add(int(hw))
    return TableFacts(table_hwm, aborted, frozenset(highest), stale, backlog)


def facts_for_partition(facts: TableFacts, partition: str | None, *, hive_version: int, txns: Any):
    """The :class:`acidctl.acid.checks.MetastoreFacts` of one partition."""
    from acidctl.acid.checks import MetastoreFacts

    return MetastoreFacts(
        hive_version=hive_version,
        table_hwm=facts.table_hwm,
        aborted_txn_count=facts.aborted_txns_by_partition.get(partition, 0),
        compaction_highest_write_ids=facts.compaction_highest_write_ids,
        txns=txns,
        stale_open_write_ids=facts.stale_open_write_ids,
        cleaner_backlog_seconds=facts.cleaner_backlog_seconds.get(partition),
    )
