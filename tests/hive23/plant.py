"""Plant state in the real Hive 2.3 metastore as a Hive 2 client does, through its Thrift API
(pyiceberg's bindings): databases, bucketed transactional tables and partitions
(``create_table`` with ``transactional=true``), txns opened, locked, committed and aborted —
and the deltas of those txns written in Hive 2.3's format by tests/hive2_histories.py."""

from __future__ import annotations

import dataclasses
import getpass
import socket
from urllib.parse import urlsplit
from pathlib import Path

from hive_metastore.ttypes import (
    AbortTxnsRequest,
    CommitTxnRequest,
    Database,
    FieldSchema,
    LockComponent,
    LockLevel,
    LockRequest,
    LockType,
    OpenTxnRequest,
    Partition,
    SerDeInfo,
    StorageDescriptor,
    Table,
)

from tests.hive2_histories import History, Stmt, write_table

ORC_IN = "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"
ORC_OUT = "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat"
ORC_SERDE = "org.apache.hadoop.hive.ql.io.orc.OrcSerde"
USER = getpass.getuser()
HOST = socket.gethostname()


def ensure_db(c, db: str, warehouse: Path) -> None:
    if db not in c.get_all_databases():
        c.create_database(Database(name=db, locationUri=f"file://{warehouse}/{db}.db", parameters={}))


def create_acid_table(c, db: str, name: str, warehouse: Path, *, partition_keys=(), buckets: int = 2) -> Path:
    """A Hive 2 ACID table (2.3's TransactionalValidationListener wants it bucketed and ORC)."""
    ensure_db(c, db, warehouse)
    loc = warehouse / f"{db}.db" / name
    sd = StorageDescriptor(
        cols=[FieldSchema("a", "int", None), FieldSchema("b", "string", None)],
        location=f"file://{loc}",
        inputFormat=ORC_IN,
        outputFormat=ORC_OUT,
        compressed=False,
        numBuckets=buckets,
        serdeInfo=SerDeInfo(name=None, serializationLib=ORC_SERDE, parameters={}),
        bucketCols=["a"],
        sortCols=[],
        parameters={},
    )
    t = Table(
        tableName=name,
        dbName=db,
        owner=USER,
        createTime=0,
        lastAccessTime=0,
        retention=0,
        sd=sd,
        partitionKeys=[FieldSchema(k, "string", None) for k in partition_keys],
        parameters={"transactional": "true", "no_auto_compaction": "true"},
        tableType="MANAGED_TABLE",
    )
    c.create_table(t)
    return loc


def add_partition(c, db: str, name: str, values: list[str]) -> Path:
    t = c.get_table(db, name)
    sd = dataclasses.replace(t.sd) if dataclasses.is_dataclass(t.sd) else _copy_sd(t.sd)
    sub = "/".join(f"{k.name}={v}" for k, v in zip(t.partitionKeys, values, strict=True))
    sd.location = f"{t.sd.location}/{sub}"
    c.add_partition(
        Partition(values=values, dbName=db, tableName=name, createTime=0, lastAccessTime=0, sd=sd, parameters={})
    )
    return Path(urlsplit(sd.location).path)  # Hive stores file:/PATH


def _copy_sd(sd):
    import copy

    return copy.deepcopy(sd)


def open_txns(c, n: int) -> list[int]:
    return list(c.open_txns(OpenTxnRequest(num_txns=n, user=USER, hostname=HOST)).txn_ids)


def lock(c, txn: int | None, db: str, table: str | None, partition: str | None = None, *, kind=LockType.SHARED_WRITE):
    """One lock component as a Hive 2 client asks for it; returns the LockResponse."""
    level = LockLevel.PARTITION if partition else (LockLevel.TABLE if table else LockLevel.DB)
    comp = LockComponent(type=kind, level=level, dbname=db, tablename=table, partitionname=partition)
    # 2.3's IDL: operationType UPDATE and isAcid (field 7; isTransactional in Hive 4's) make the
    # commit record TXN_COMPONENTS/COMPLETED_TXN_COMPONENTS for the table
    comp.operationType = 3
    comp.isTransactional = True
    return c.lock(LockRequest(component=[comp], txnid=txn, user=USER, hostname=HOST))


def renumber(h: History, first: int) -> History:
    """``h`` with txn t (1..n) renamed ``first + t - 1`` (the metastore's own ids)."""
    m = lambda t: first + t - 1  # noqa: E731
    stmts = [Stmt(m(s.txn), s.stmt, [(op, (m(k[0]), k[1], k[2]), row) for op, k, row in s.events]) for s in h.stmts]
    return History(h.mode, stmts, {m(t): st for t, st in h.states.items()}, m(h.hwm))


def play(c, h: History, db: str, table: str, root: Path, *, partition: str | None = None) -> History:
    """Run h's txns in the metastore one after the other as Hive 2 DML does (open, shared-write
    lock, then commit or abort as ``h`` says; open ones stay open with their lock), and write
    their deltas under ``root``. Returns ``h`` renumbered to the metastore's txn ids (the
    metastore must give consecutive ids: nobody else opens txns meanwhile)."""
    ids = []
    for i, t in enumerate(sorted(h.states)):
        (tid,) = open_txns(c, 1)
        ids.append(tid)
        assert tid == ids[0] + i, ids
        lock(c, tid, db, table, partition)
        if h.states[t] == "committed":
            c.commit_txn(CommitTxnRequest(txnid=tid))
        elif h.states[t] == "aborted":
            c.abort_txns(AbortTxnsRequest(txn_ids=[tid]))
    h = renumber(h, ids[0])
    write_table(h, root)
    return h
