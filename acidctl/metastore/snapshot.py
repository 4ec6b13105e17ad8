"""A fresh reader's snapshot, computed from the metastore tables the way Hive computes it
(../shared/spec/metastore.md §7).

* :func:`read_txn_list` — ``ValidReadTxnList`` (Hive 3: ``NTXN_NEXT − 1`` and the TXNS rows;
  Hive 4: ``max(TXN_ID)``, committed rows skipped, young id gaps counted as open);
* :func:`read_write_id_list` — a table's ``ValidReaderWriteIdList`` (§7.2, including Hive 4's
  collapse when no committed write remains under the hwm);
* :func:`table_snapshot` — both, for ``state``, ``dump --merged`` and ``compact``.

The result types are the shared :class:`~acidctl.acid.writeids.TxnList` and
:class:`~acidctl.acid.writeids.WriteIdList`. Differences from Hive that the shared types cannot
carry: Hive 4 leaves READ_ONLY txns out of the exceptions but counts them for ``minOpenTxn``
(here they are simply left out). After a Hive 4 collapse Hive keeps ``minOpenWriteId`` above
the new hwm; ``WriteIdList.min_open_write_id`` carries it so the string is Hive's.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from acidctl.acid.writeids import LONG_MAX, TxnList, WriteIdList
from acidctl.errors import UsageError
from acidctl.metastore.connection import Metastore, connect, db_now_ms

OPEN_TXN_TIMEOUT_MS = 1000  # metastore.txn.opentxn.timeout default (§4.1)
TXN_TYPE_READ_ONLY = 2

TXN_TYPES = {
    0: "DEFAULT",
    1: "REPL_CREATED",
    2: "READ_ONLY",
    3: "COMPACTION",
    4: "MATER_VIEW_REBUILD",
    5: "SOFT_DELETE",
    6: "REBALANCE_COMPACTION",
}


@dataclasses.dataclass
class TxnRow:
    txn_id: int
    state: str  # 'o', 'a', 'c' (code); gaps are 'o'
    txn_type: int | None
    started: int | None
    synthetic: bool = False  # a Hive 4 young gap


def split_table_name(name: str) -> tuple[str, str]:
    """``db.table`` → lower-cased (db, table); ``table`` alone means ``default.table``."""
    s = name.strip().strip("`")
    if not s:
        raise UsageError("empty table name")
    if "." in s:
        db, tbl = s.split(".", 1)
    else:
        db, tbl = "default", s
    db, tbl = db.strip("`").lower(), tbl.strip("`").lower()
    if not db or not tbl or "." in tbl:
        raise UsageError(f"bad table name {name!r}: expected DB.TABLE")
    return db, tbl


# ---------------------------------------------------------------------------------------
# transactions
# ---------------------------------------------------------------------------------------


def h4_txn_rows(ms: Metastore, conn, *, now_ms: int, timeout_ms: int = OPEN_TXN_TIMEOUT_MS) -> tuple[int, list[TxnRow]]:
    """Hive 4's GetOpenTxnsListHandler walk: (hwm, non-committed rows + synthetic gap rows)."""
    import sqlalchemy as sa

    t = ms.tables.TXNS
    young_min = sa.select(sa.func.min(t.TXN_ID)).where(t.TXN_STARTED > now_ms - timeout_ms).scalar_subquery()
    lo = conn.execute(sa.select(sa.func.max(t.TXN_ID)).where(t.TXN_ID < young_min)).scalar()
    if lo is None:
        lo = conn.execute(sa.select(young_min)).scalar()
    hwm = conn.execute(sa.select(sa.func.max(t.TXN_ID))).scalar()
    cond = t.TXN_STATE != "c"
    if lo is not None:
        cond = sa.or_(cond, t.TXN_ID >= lo)
    type_col = t.TXN_TYPE if t.has("TXN_TYPE") else sa.literal(None)
    rows = conn.execute(sa.select(t.TXN_ID, t.TXN_STATE, type_col, t.TXN_STARTED).where(cond).order_by(t.TXN_ID)).all()
    out: list[TxnRow] = []
    boundary = -1
    for txn_id, state, ttype, started in rows:
        txn_id = int(txn_id)
        age = now_ms - int(started)
        if age < timeout_ms:
            boundary += 1
            while txn_id > boundary:
                out.append(TxnRow(boundary, "o", 0, None, synthetic=True))
                boundary += 1
        else:
            boundary = txn_id
        if state == "c":
            continue
        out.append(TxnRow(txn_id, state, ttype, int(started)))
    return (int(hwm) if hwm is not None else 0), out


def h3_txn_hwm(ms: Metastore, conn) -> int:
    import sqlalchemy as sa

    n = ms.tables.NEXT_TXN_ID
    nxt = conn.execute(sa.select(n.NTXN_NEXT)).scalar()
    if nxt is None:
        from acidctl.errors import UnsupportedSchema

        raise UnsupportedSchema("NEXT_TXN_ID has no row (not an initialised Hive 3 metastore)")
    return int(nxt) - 1


def read_txn_list(ms: Metastore, conn, *, now_ms: int | None = None, timeout_ms: int = OPEN_TXN_TIMEOUT_MS) -> TxnList:
    """The ValidReadTxnList a fresh reader gets (caller txn 0: hwm and all exceptions kept)."""
    import sqlalchemy as sa

    if ms.hive_version == 3:
        hwm = h3_txn_hwm(ms, conn)
        t = ms.tables.TXNS
        rows = conn.execute(sa.select(t.TXN_ID, t.TXN_STATE).where(t.TXN_ID <= hwm).order_by(t.TXN_ID)).all()
        return TxnList(
            hwm=hwm,
            open=tuple(int(r[0]) for r in rows if r[1] != "a"),
            aborted=tuple(int(r[0]) for r in rows if r[1] == "a"),
        )
    if now_ms is None:
        now_ms = db_now_ms(conn)
    hwm, rows = h4_txn_rows(ms, conn, now_ms=now_ms, timeout_ms=timeout_ms)
    open_ids = tuple(r.txn_id for r in rows if r.state != "a" and r.txn_type != TXN_TYPE_READ_ONLY)
    aborted = tuple(r.txn_id for r in rows if r.state == "a")
    return TxnList(hwm=hwm, open=open_ids, aborted=aborted)


# ---------------------------------------------------------------------------------------
# write ids
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass
class InvalidWriteId:
    write_id: int
    txn_id: int
    state: str  # "OPEN" or "ABORTED"

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def read_write_id_list(
    ms: Metastore, conn, db: str, table: str, txns: TxnList
) -> tuple[WriteIdList, list[InvalidWriteId]]:
    """§7.2: the table's ValidReaderWriteIdList for the reader whose txn list is ``txns``."""
    import sqlalchemy as sa

    db, table = db.lower(), table.lower()
    t2w, nwi = ms.tables.TXN_TO_WRITE_ID, ms.tables.NEXT_WRITE_ID
    where = (t2w.T2W_DATABASE == db, t2w.T2W_TABLE == table)
    hwm = conn.execute(sa.select(sa.func.max(t2w.T2W_WRITEID)).where(t2w.T2W_TXNID <= txns.hwm, *where)).scalar()
    if hwm is None or int(hwm) <= 0:
        hwm = conn.execute(sa.select(nwi.NWI_NEXT - 1).where(nwi.NWI_DATABASE == db, nwi.NWI_TABLE == table)).scalar()
        hwm = 0 if hwm is None else int(hwm)
    hwm = int(hwm)
    rows = conn.execute(
        sa.select(t2w.T2W_TXNID, t2w.T2W_WRITEID).where(t2w.T2W_WRITEID <= hwm, *where).order_by(t2w.T2W_WRITEID)
    ).all()
    invalid: list[InvalidWriteId] = []
    min_open = LONG_MAX
    found_valid = False
    for txn_id, write_id in rows:
        txn_id, write_id = int(txn_id), int(write_id)
        if _txn_valid(txns, txn_id):
            found_valid = True
            continue
        if txns.is_aborted(txn_id):
            invalid.append(InvalidWriteId(write_id, txn_id, "ABORTED"))
        else:
            invalid.append(InvalidWriteId(write_id, txn_id, "OPEN"))
            min_open = min(min_open, write_id)
    name = f"{db}.{table}"
    explicit_min: int | None = None
    if ms.hive_version >= 4 and not found_valid and invalid:
        first = invalid[0]
        hwm = first.write_id
        first = InvalidWriteId(first.write_id, first.txn_id, "OPEN" if first.write_id == min_open else "ABORTED")
        invalid = [first]
        if min_open != LONG_MAX and min_open != first.write_id:
            explicit_min = min_open
    open_ids = tuple(i.write_id for i in invalid if i.state == "OPEN")
    aborted = tuple(i.write_id for i in invalid if i.state == "ABORTED")
    wl = WriteIdList(table=name, hwm=hwm, open=open_ids, aborted=aborted, min_open_write_id=explicit_min)
    return wl, invalid


def _txn_valid(txns: TxnList, txn_id: int) -> bool:
    # Hive's isTxnValid: txn <= hwm and not an exception (txn 0 is never in TXN_TO_WRITE_ID)
    return txn_id <= txns.hwm and txns.is_valid(txn_id)


def table_snapshot(
    engine_or_url: Any, table: str, *, hive_version: Any = None, now_ms: int | None = None
) -> tuple[TxnList, WriteIdList]:
    """``(ValidReadTxnList, ValidReaderWriteIdList)`` of ``db.table`` for a fresh reader.

    ``engine_or_url`` is a SQLAlchemy Engine, a URL string or a :class:`Metastore`. Both lists
    are read in one read-only transaction. The table does not have to exist in TBLS (Hive's
    own call does not check either); a table nobody wrote gets ``db.table:0:LONG_MAX::``.
    """
    from acidctl.metastore import thrift

    if thrift.is_thrift(engine_or_url):
        return thrift.table_snapshot(engine_or_url, table.split("/", 1)[0])
    ms = connect(engine_or_url, hive_version=hive_version)
    db, tbl = split_table_name(table.split("/", 1)[0])
    with ms.read() as conn:
        txns = read_txn_list(ms, conn, now_ms=now_ms)
        wl, _ = read_write_id_list(ms, conn, db, tbl, txns)
    return txns, wl


@dataclasses.dataclass
class WriteIdReport:
    hive_version: int
    txn_list: TxnList
    write_ids: WriteIdList
    invalid: list[InvalidWriteId]
    txn_info: dict[int, dict]

    def to_dict(self) -> dict:
        return {
            "hive_version": self.hive_version,
            "table": self.write_ids.table,
            "valid_write_ids": str(self.write_ids),
            "valid_txns": str(self.txn_list),
            "write_id_list": self.write_ids.to_dict(),
            "txn_list": self.txn_list.to_dict(),
            "invalid_write_ids": [
                {**i.to_dict(), **{k: v for k, v in self.txn_info.get(i.txn_id, {}).items()}} for i in self.invalid
            ],
        }


def write_id_report(
    engine_or_url: Any, table: str, *, hive_version: Any = None, now_ms: int | None = None
) -> WriteIdReport:
    """Everything ``acidctl show write-ids`` prints: the lists plus one row per invalid id
    (over Thrift, Hive 3/4: the lists only — which txn wrote an invalid id is TXN_TO_WRITE_ID)."""
    from acidctl.metastore import thrift

    if thrift.is_thrift(engine_or_url):
        tms = thrift.connect_hive3(engine_or_url, hive_version=hive_version)
        db, tbl = split_table_name(table)
        tl, wl = thrift.table_snapshot(tms, f"{db}.{tbl}")
        return WriteIdReport(tms.hive_version, tl, wl, [], {})
    import sqlalchemy as sa

    ms = connect(engine_or_url, hive_version=hive_version)
    db, tbl = split_table_name(table)
    with ms.read() as conn:
        txns = read_txn_list(ms, conn, now_ms=now_ms)
        wl, invalid = read_write_id_list(ms, conn, db, tbl, txns)
        info: dict[int, dict] = {}
        ids = sorted({i.txn_id for i in invalid})
        if ids:
            t = ms.tables.TXNS
            for chunk in range(0, len(ids), 1000):
                part = ids[chunk : chunk + 1000]
                q = sa.select(t.TXN_ID, t.TXN_USER, t.TXN_HOST, t.TXN_STARTED).where(
                    t.TXN_ID.in_(sa.bindparam("ids", expanding=True))
                )
                for tid, user, host, started in conn.execute(q, {"ids": part}):
                    info[int(tid)] = {"user": user, "host": host, "startedtime": started}
    return WriteIdReport(ms.hive_version, txns, wl, invalid, info)
