"""``acidctl demo``: a small local warehouse laid out exactly as Hive 3 writes it.

Table ``default.employee (id int, name string, salary int)`` (unbucketed, one writer):

* write 1 — ``INSERT`` (1,Jerry,5000), (2,Tom,8000), (3,Kate,6000)
  → ``delta_0000001_0000001_0000/bucket_00000`` rows (1, 536870912, 0..2)
* write 2 — ``MERGE`` from ``employee_update`` (2,Tom,7000), (4,Mary,9000): its insert clause
  (statement 0) adds Mary → ``delta_0000002_0000002_0000``; its update clause (statement 1)
  deletes Tom's row (1, 536870912, 1) → ``delete_delta_0000002_0000002_0001`` and re-inserts
  Tom with 7000 as (2, 536870913, 0) → ``delta_0000002_0000002_0001``
* write 3 — ``DELETE`` Kate (1, 536870912, 2) → ``delete_delta_0000003_0000003_0000``

Final rows: Jerry 5000, Tom 7000, Mary 9000.

Table ``default.sales (id int, item string, amount decimal(10,2)) PARTITIONED BY (ds string)
CLUSTERED BY (id) INTO 2 BUCKETS`` with ``bucketing_version=1`` (bucket = id mod 2), converted
from a non-ACID table:

* ``ds=2025-12-31`` holds pre-ACID originals ``000000_0`` (ids 2, 4), ``000001_0`` (1, 3) and
  ``000001_0_copy_1`` (5); write 1 deletes id 3 by its synthetic row id (0, 536936448, 1);
  write 2 inserts ids 6 and 7 (one file per bucket).
* ``ds=2026-01-01``: write 3 inserts ids 10–19; write 4 (txn aborted) inserted 100 and 101 and
  left its delta behind; write 5 is a two-statement transaction: statement 0 updates id 10's
  amount, statement 1 inserts id 21; write 6 deletes ids 11 and 12.

Table ``default.events (id int, kind string)``, insert-only (``transactional_properties=
insert_only``), plain ORC files ``delta_W_W_0000/000000_0`` as Hive 3 writes them (no
``_orc_acid_version``): write 1 inserts ids 1–3, write 2 ids 4 and 5, write 3 (txn aborted)
id 99, its delta left behind (txns 11–13).

On a local filesystem, also a Hive 2.3 metastore ``DIR/hive2/metastore.db`` with one ACID v1
table, ``default.legacy_employee`` (see :func:`_build_hive2`), for ``upgrade-check`` and the
Hive 2 reader rules.

Write ids are per table, as in Hive. Every directory gets ``_orc_acid_version`` (``2``).

The writes are recorded in a metastore database (by default the embedded SQLite file
``DIR/metastore.db``, created with ``metastore init``) the way Hive records them: one
transaction per write (txns 1–3 for employee, 4–9 for sales; txn 7 = sales write 4 aborted),
TXN_TO_WRITE_ID / NEXT_WRITE_ID, TXN_COMPONENTS, the tables, their properties and partitions.
Transaction 10 is still open: it is inserting into ``sales`` partition ``ds=2026-01-01`` as
write 7 (its delta is on disk, invisible to readers) and holds a shared-write lock on that
partition; the compaction history holds a failed major compaction of ``ds=2025-12-31`` and a
new request for it in the queue.
"""

from __future__ import annotations

import dataclasses
import decimal
import time
from typing import Any

from acidctl.errors import RefusedError
from acidctl.fs import TableFS
from acidctl.metastore.init import DEFAULT_HIVE_VERSION
from acidctl.orc import bucketcodec

ORIGINAL_SCHEMA_NOTE = "original (pre-ACID) files carry the plain table schema and no ACID metadata"


@dataclasses.dataclass
class Column:
    name: str
    hive_type: str


@dataclasses.dataclass
class DemoTable:
    db: str
    name: str
    columns: list[Column]
    partition_keys: list[str] = dataclasses.field(default_factory=list)
    buckets: int | None = None
    bucket_column: str | None = None
    properties: dict[str, str] = dataclasses.field(default_factory=dict)
    writes: list[dict] = dataclasses.field(default_factory=list)  # write id, txn outcome, dirs
    expected: dict[str, list[tuple]] = dataclasses.field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"{self.db}.{self.name}"

    def to_dict(self) -> dict:
        return {
            "table": self.full_name,
            "columns": [dataclasses.asdict(c) for c in self.columns],
            "partition_keys": self.partition_keys,
            "buckets": self.buckets,
            "properties": self.properties,
            "writes": self.writes,
            "expected_rows": {k: [list(map(_plain, r)) for r in v] for k, v in self.expected.items()},
        }


def _plain(v):
    return str(v) if isinstance(v, decimal.Decimal) else v


def _arrow_type(hive_type: str):
    import pyarrow as pa

    if hive_type == "int":
        return pa.int32()
    if hive_type == "string":
        return pa.string()
    if hive_type.startswith("decimal("):
        p, s = hive_type[8:-1].split(",")
        return pa.decimal128(int(p), int(s))
    raise ValueError(hive_type)


class _Writer:
    """Writes Hive-shaped delta directories for one table (and keeps the expected contents)."""

    def __init__(self, tfs: TableFS, root: str, table: DemoTable):
        self.tfs = tfs
        self.root = root
        self.table = table
        self.location = tfs.join(root, f"{table.name}")
        tfs.makedirs(self.location)

    def part_dir(self, partition: str | None) -> str:
        d = self.location if partition is None else self.tfs.join(self.location, partition)
        self.tfs.makedirs(d)
        return d

    def bucket_of(self, row: tuple) -> int:
        if not self.table.buckets:
            return 0  # unbucketed: one writer, task 0
        if self.table.bucket_column is None:
            raise ValueError(f"demo table {self.table.name} has buckets but no bucket column")
        idx = [c.name for c in self.table.columns].index(self.table.bucket_column)
        return (row[idx] & 0x7FFFFFFF) % self.table.buckets  # bucketing_version 1 hash of an int

    def _acid_dir(self, partition, kind: str, write_id: int, stmt: int) -> str:
        d = self.tfs.join(self.part_dir(partition), f"{kind}_{write_id:07d}_{write_id:07d}_{stmt:04d}")
        self.tfs.makedirs(d)
        self.tfs.write_bytes(self.tfs.join(d, "_orc_acid_version"), b"2")
        return d

    def _row_struct(self, rows: list[tuple | None]):
        import pyarrow as pa

        kids = [
            pa.array([None if r is None else r[i] for r in rows], _arrow_type(c.hive_type))
            for i, c in enumerate(self.table.columns)
        ]
        return pa.StructArray.from_arrays(
            kids, [c.name for c in self.table.columns], mask=pa.array([r is None for r in rows])
        )

    def _write(self, directory: str, bucket: int, events: list[tuple]):
        import pyarrow as pa

        from acidctl.orc.writer import DELTA_STRIPE_SIZE, write_acid_file

        events.sort(key=lambda e: (e[1], e[2], e[3]))
        table = pa.table(
            {
                "operation": pa.array([e[0] for e in events], pa.int32()),
                "originalTransaction": pa.array([e[1] for e in events], pa.int64()),
                "bucket": pa.array([e[2] for e in events], pa.int32()),
                "rowId": pa.array([e[3] for e in events], pa.int64()),
                "currentTransaction": pa.array([e[4] for e in events], pa.int64()),
                "row": self._row_struct([e[5] for e in events]),
            }
        )
        return write_acid_file(
            self.tfs, self.tfs.join(directory, f"bucket_{bucket:05d}"), table, stripe_size=DELTA_STRIPE_SIZE
        )

    def insert(self, write_id: int, rows: list[tuple], *, partition: str | None = None, stmt: int = 0):
        """INSERT: one file per bucket; returns {row: row id} for later updates/deletes."""
        by_bucket: dict[int, list[tuple]] = {}
        for r in rows:
            by_bucket.setdefault(self.bucket_of(r), []).append(r)
        d = self._acid_dir(partition, "delta", write_id, stmt)
        ids = {}
        for b, rs in sorted(by_bucket.items()):
            prop = bucketcodec.encode(b, stmt)
            ev = [(0, write_id, prop, i, write_id, r) for i, r in enumerate(rs)]
            self._write(d, b, ev)
            ids.update({r: (write_id, prop, i) for i, r in enumerate(rs)})
        return d, ids

    def delete(
        self, write_id: int, row_ids: list[tuple[int, int, int]], *, partition: str | None = None, stmt: int = 0
    ):
        """DELETE: each event goes into bucket_N of the target row's decoded bucket id."""
        d = self._acid_dir(partition, "delete_delta", write_id, stmt)
        by_bucket: dict[int, list[tuple]] = {}
        for otxn, prop, rid in row_ids:
            bucket_id = bucketcodec.decode(prop).bucket_id
            if bucket_id is None:  # the demo only writes V1 properties (bucketcodec.encode)
                raise ValueError(f"not a V0/V1 bucket property: {prop}")
            by_bucket.setdefault(bucket_id, []).append((2, otxn, prop, rid, write_id, None))
        for b, ev in sorted(by_bucket.items()):
            self._write(d, b, ev)
        return d

    def originals(self, partition: str | None, files: dict[str, list[tuple]], *, subdir: str | None = None):
        """Plain ORC files: the table schema, no ACID metadata, as a non-transactional Hive wrote
        them (pre-ACID originals) or as Hive writes an insert-only table's files (``subdir``:
        ``delta_W_W_SSSS`` / ``base_W``, no ``_orc_acid_version``, spec A.4)."""
        import pyarrow as pa
        import pyarrow.orc as po

        d = self.part_dir(partition)
        if subdir is not None:
            d = self.tfs.join(d, subdir)
            self.tfs.makedirs(d)
        for name, rows in files.items():
            t = pa.table(
                {
                    c.name: pa.array([r[i] for r in rows], _arrow_type(c.hive_type))
                    for i, c in enumerate(self.table.columns)
                }
            )
            sink = pa.BufferOutputStream()
            po.write_table(t, sink, compression="zlib")
            self.tfs.write_bytes(self.tfs.join(d, name), sink.getvalue().to_pybytes())


def build_demo(
    tfs: TableFS, root: str, *, metastore_url: str | None = None, hive_version: int = DEFAULT_HIVE_VERSION
) -> dict[str, Any]:
    """Create the demo warehouse under ``root`` (which must be empty or absent) and record it
    in a metastore the demo creates: ``metastore_url`` (an empty database: the demo creates
    the schema, and refuses before writing anything when the database has metastore tables),
    by default a new SQLite file ``root/metastore.db`` on local filesystems. The demo never
    writes into a metastore it did not create; the CLI passes ``metastore_url`` only when
    ``--metastore`` is on the command line (:func:`demo_metastore`)."""
    require_new_dir(tfs, root)
    if metastore_url is not None:  # refuse before the first file: a database that is not empty
        from acidctl.metastore.init import init_metastore

        init_metastore(metastore_url, hive_version=hive_version, dry_run=True)
    tfs.makedirs(root)
    warehouse = tfs.join(root, "warehouse")
    tfs.makedirs(warehouse)

    employee = DemoTable(
        "default",
        "employee",
        [Column("id", "int"), Column("name", "string"), Column("salary", "int")],
        properties={"transactional": "true"},
    )
    w = _Writer(tfs, warehouse, employee)
    _, ids = w.insert(1, [(1, "Jerry", 5000), (2, "Tom", 8000), (3, "Kate", 6000)])
    employee.writes.append({"write_id": 1, "state": "committed", "statement": "INSERT"})
    w.insert(2, [(4, "Mary", 9000)], stmt=0)
    w.delete(2, [ids[(2, "Tom", 8000)]], stmt=1)
    w.insert(2, [(2, "Tom", 7000)], stmt=1)
    employee.writes.append({"write_id": 2, "state": "committed", "statement": "MERGE (stmt 0 insert, stmt 1 update)"})
    w.delete(3, [ids[(3, "Kate", 6000)]])
    employee.writes.append({"write_id": 3, "state": "committed", "statement": "DELETE Kate"})
    employee.expected[""] = [(1, "Jerry", 5000), (2, "Tom", 7000), (4, "Mary", 9000)]

    D = decimal.Decimal
    sales = DemoTable(
        "default",
        "sales",
        [Column("id", "int"), Column("item", "string"), Column("amount", "decimal(10,2)")],
        partition_keys=["ds"],
        buckets=2,
        bucket_column="id",
        properties={"transactional": "true", "bucketing_version": "1"},
    )
    s = _Writer(tfs, warehouse, sales)
    row = lambda i: (i, f"item-{i:03d}", D(i) * D("1.50"))  # noqa: E731
    p1, p2 = "ds=2025-12-31", "ds=2026-01-01"
    s.originals(p1, {"000000_0": [row(2), row(4)], "000001_0": [row(1), row(3)], "000001_0_copy_1": [row(5)]})
    # synthetic row ids: bucket 1 files in path order: 000001_0 (rows 0, 1), _copy_1 (row 2)
    s.delete(1, [(0, bucketcodec.encode(1, 0), 1)], partition=p1)  # id 3
    sales.writes.append({"write_id": 1, "state": "committed", "partition": p1, "statement": f"DELETE id 3 ({p1})"})
    s.insert(2, [row(6), row(7)], partition=p1)
    sales.writes.append({"write_id": 2, "state": "committed", "partition": p1, "statement": f"INSERT ids 6, 7 ({p1})"})
    _, ids3 = s.insert(3, [row(i) for i in range(10, 20)], partition=p2)
    sales.writes.append({"write_id": 3, "state": "committed", "partition": p2, "statement": f"INSERT ids 10-19 ({p2})"})
    s.insert(4, [row(100), row(101)], partition=p2)
    sales.writes.append(
        {"write_id": 4, "state": "aborted", "partition": p2, "statement": f"INSERT ids 100, 101 ({p2}), txn aborted"}
    )
    s.delete(5, [ids3[row(10)]], partition=p2, stmt=0)
    s.insert(5, [(10, "item-010", D("99.99"))], partition=p2, stmt=0)
    s.insert(5, [row(21)], partition=p2, stmt=1)
    sales.writes.append(
        {
            "write_id": 5,
            "state": "committed",
            "partition": p2,
            "statement": f"UPDATE id 10 (stmt 0); INSERT id 21 (stmt 1) ({p2})",
        }
    )
    s.delete(6, [ids3[row(11)], ids3[row(12)]], partition=p2)
    sales.writes.append(
        {"write_id": 6, "state": "committed", "partition": p2, "statement": f"DELETE ids 11, 12 ({p2})"}
    )
    s.insert(7, [row(200)], partition=p2)  # txn 10, still open: invisible to readers
    sales.writes.append(
        {"write_id": 7, "state": "open", "partition": p2, "statement": f"INSERT id 200 ({p2}), txn still open"}
    )
    sales.expected[p1] = sorted([row(1), row(2), row(4), row(5), row(6), row(7)])
    sales.expected[p2] = sorted([(10, "item-010", D("99.99"))] + [row(i) for i in (13, 14, 15, 16, 17, 18, 19, 21)])

    events = DemoTable(
        "default",
        "events",
        [Column("id", "int"), Column("kind", "string")],
        properties={"transactional": "true", "transactional_properties": "insert_only"},
    )
    e = _Writer(tfs, warehouse, events)
    kinds = ("click", "view", "buy")
    ev = lambda i: (i, kinds[i % 3])  # noqa: E731
    e.originals(None, {"000000_0": [ev(i) for i in (1, 2, 3)]}, subdir="delta_0000001_0000001_0000")
    events.writes.append({"write_id": 1, "state": "committed", "statement": "INSERT ids 1-3"})
    e.originals(None, {"000000_0": [ev(i) for i in (4, 5)]}, subdir="delta_0000002_0000002_0000")
    events.writes.append({"write_id": 2, "state": "committed", "statement": "INSERT ids 4, 5"})
    e.originals(None, {"000000_0": [ev(99)]}, subdir="delta_0000003_0000003_0000")
    events.writes.append({"write_id": 3, "state": "aborted", "statement": "INSERT id 99, txn aborted"})
    events.expected[""] = [ev(i) for i in (1, 2, 3, 4, 5)]

    tables = [employee, sales, events]
    metastore_url = metastore_url or default_metastore_url(tfs, root)
    if metastore_url is not None:
        _record(metastore_url, tfs, warehouse, tables, hive_version)
    result: dict[str, Any] = {
        "metastore": _safe(metastore_url),
        "hive_version": hive_version,
        "warehouse": tfs.display(warehouse),
        "tables": [
            t.to_dict() | {"location": tfs.display(tfs.join(warehouse, t.name)), "write_ids": _write_id_list(t)}
            for t in tables
        ],
        "commands": next_commands(metastore_url),
    }
    if tfs.protocol in ("file", "local"):
        result["hive2"] = _build_hive2(tfs, tfs.join(root, "hive2"))
    return result


def require_new_dir(tfs: TableFS, root: str) -> None:
    """The demo writes only into a new (or empty) directory (also checked by ``demo --dry-run``)."""
    if tfs.exists(root) and tfs.isdir(root) and tfs.ls(root):
        raise RefusedError(f"{tfs.display(root)} is not empty; the demo writes only into a new directory")


def demo_metastore(tfs: TableFS, root: str, *, flag: str | None, exported: str | None) -> tuple[str | None, str | None]:
    """(the metastore URL the demo records into, a note for the user or None).

    ``flag``: ``--metastore`` given on the command line — honoured (an empty database; the
    demo creates the schema in it). ``exported``: a URL that came from the environment
    (``ACIDCTL_METASTORE_URL``) — never written into: it names the metastore the user works
    with, not one the demo made, so the demo records into its own new SQLite file
    ``root/metastore.db`` (none on a remote filesystem) and says so; the commands it prints
    carry an explicit ``--metastore`` (:func:`next_commands`), which wins over the exported
    URL in that shell."""
    if flag is not None:
        return flag, None
    url = default_metastore_url(tfs, root)
    if exported is None or _same_sqlite(exported, url):
        return url, None
    where = (
        f"its own new metastore {_safe(url)}"
        if url
        else "no metastore (on a remote DIR: --metastore URL of an empty database)"
    )
    return url, (
        f"ACIDCTL_METASTORE_URL ({_safe(exported)}) is not used: the demo never writes into a metastore it did not "
        f"create; it records into {where}"
    )


def _same_sqlite(a: str, b: str | None) -> bool:
    """Do two URLs name the same SQLite file (e.g. the README's export of DIR/metastore.db)?"""
    import os.path

    if b is None or not a.startswith("sqlite:///") or not b.startswith("sqlite:///"):
        return False
    return os.path.realpath(a[len("sqlite:///") :]) == os.path.realpath(b[len("sqlite:///") :])


def next_commands(url: str | None) -> list[str]:
    """Commands to try on the demo, with an explicit ``--metastore`` so that they read the
    demo's metastore whatever the shell exports (``ACIDCTL_METASTORE_URL``, a profile)."""
    if url is None:
        return []
    import shlex

    ms = f"acidctl --metastore {shlex.quote(_safe(url) or url)}"
    return [
        f"{ms} show tables",
        f"{ms} dump --merged default.employee",
        f"{ms} state default.sales",
        f"{ms} doctor",
    ]


def default_metastore_url(tfs: TableFS, root: str) -> str | None:
    """Without --metastore: a new SQLite file ``root/metastore.db`` on local filesystems."""
    return "sqlite:///" + tfs.join(root, "metastore.db") if tfs.protocol in ("file", "local") else None


def _safe(url: str | None) -> str | None:
    if url is None:
        return None
    from acidctl.metastore.connection import safe_url

    return safe_url(url)


def _location(tfs: TableFS, path: str) -> str:
    # Hive stores local warehouse locations as file:/path
    return "file:" + path if tfs.protocol in ("file", "local") else tfs.display(path)


def _record(url: str, tfs: TableFS, warehouse: str, tables: list[DemoTable], hive_version: int) -> None:
    """Record the demo's tables, transactions, locks and compactions as Hive would have."""
    from acidctl.metastore.init import init_metastore
    from acidctl.metastore.recorder import LockComponent, Recorder

    init_metastore(url, hive_version=hive_version, warehouse=_location(tfs, warehouse))
    rec = Recorder(url, hive_version=hive_version)
    ops = {"INSERT": "i", "DELETE": "d", "UPDATE": "u", "MERGE": "u"}
    for t in tables:
        loc = tfs.join(warehouse, t.name)
        params = dict(t.properties)
        rec.create_table(
            t.db,
            t.name,
            location=_location(tfs, loc),
            columns=[(c.name, c.hive_type) for c in t.columns],
            partition_keys=[(k, "string") for k in t.partition_keys],
            params=params,
            buckets=t.buckets or -1,
        )
        for pname in sorted(p for p in t.expected if p):
            rec.add_partition(t.db, t.name, pname, location=_location(tfs, tfs.join(loc, pname)))
    open_txn = None
    for t in tables:
        for w in t.writes:
            txn = rec.open_txn(user="hive", host="demo-host", agent_info="acidctl demo")
            part = w.get("partition")
            op = ops.get(w["statement"].split()[0], "i")
            rec.add_write(txn, t.db, t.name, partition=part, operation=op)
            if w["state"] == "committed":
                rec.commit_txn(txn)
            elif w["state"] == "aborted":
                rec.abort_txn(txn)
            else:
                open_txn = (txn, t, part)
    if open_txn is not None:
        txn, t, part = open_txn
        rec.lock(
            LockComponent(t.db, t.name, part, "shared_write"),
            txn_id=txn,
            user="hive",
            host="demo-host",
            agent_info="acidctl demo",
        )
    cq = rec.enqueue_compaction("default", "sales", partition="ds=2025-12-31", compaction_type="major")
    rec.mark_working(cq, worker_id="demo-host-1")
    rec.mark_failed(cq, error_message="demo: worker lost its container")
    rec.enqueue_compaction("default", "sales", partition="ds=2025-12-31", compaction_type="major")


def _write_id_list(t: DemoTable) -> str:
    from acidctl.acid.writeids import WriteIdList

    hwm = max(w["write_id"] for w in t.writes)
    aborted = tuple(w["write_id"] for w in t.writes if w["state"] == "aborted")
    open_ids = tuple(w["write_id"] for w in t.writes if w["state"] == "open")
    return str(WriteIdList(table=t.full_name, hwm=hwm, open=open_ids, aborted=aborted))


#: the Hive 2.3 table's writes (ROW__ID = (originalTransaction, bucket, rowId)); its rows are
#: (id, name, salary), named _col0.._col2 in the files as Hive 2.3's FileSinkOperator names them
HIVE2_ROW_TYPE = "struct<_col0:int,_col1:string,_col2:int>"


def _build_hive2(tfs: TableFS, root: str) -> dict[str, Any]:
    """A Hive 2.3 (ACID v1) table in its own Hive 2.3 metastore ``root/metastore.db`` (one
    metastore database holds one schema version, so the Hive 2 table cannot share the Hive 3
    demo's): ``default.legacy_employee (id int, name string, salary int)``,
    ``transactional_properties=default`` (split update), laid out as the Hive 2.3.10 seed table of
    the spec's fixtures (insert-only-and-hive2.md B.1): txn 1 INSERTs Jerry, Tom, Kate; txn 2
    UPDATEs Tom's salary (a delete event of (1,0,1) in ``delete_delta_0000002_0000002_0000`` and
    the new row (2,0,0) in ``delta_0000002_0000002_0000``); txn 3 INSERTs Mary and aborts (its
    delta stays, as Hive 2 leaves it). Plain bucket ids (no BucketCodec), no ``hive.acid.version``,
    ``_orc_acid_version`` once at table level. In the metastore, as 2.3 leaves it: committed
    txns only in COMPLETED_TXN_COMPONENTS, the aborted one in TXNS/TXN_COMPONENTS,
    NEXT_TXN_ID 4."""
    import io

    import pyorc
    import sqlalchemy as sa

    from acidctl.metastore import hive2 as ms2

    warehouse = tfs.join(root, "warehouse")
    loc = tfs.join(warehouse, "legacy_employee")
    tfs.makedirs(loc)
    tfs.write_bytes(tfs.join(loc, "_orc_acid_version"), b"\x00\x00\x00\x00")  # as Hive 2.3.10 wrote it
    acid_type = (
        "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,"
        f"currentTransaction:bigint,row:{HIVE2_ROW_TYPE}>"
    )
    files: dict[str, list[tuple[int, int, int, int, int, tuple | None]]] = {
        "delta_0000001_0000001_0000": [
            (0, 1, 0, 0, 1, (1, "Jerry", 5000)),
            (0, 1, 0, 1, 1, (2, "Tom", 8000)),
            (0, 1, 0, 2, 1, (3, "Kate", 6000)),
        ],
        "delete_delta_0000002_0000002_0000": [(2, 1, 0, 1, 2, None)],
        "delta_0000002_0000002_0000": [(0, 2, 0, 0, 2, (2, "Tom", 7000))],
        "delta_0000003_0000003_0000": [(0, 3, 0, 0, 3, (4, "Mary", 9000))],
    }
    for dirname, events in files.items():
        d = tfs.join(loc, dirname)
        tfs.makedirs(d)
        stats = [sum(1 for e in events if e[0] == op) for op in (0, 1, 2)]
        buf = io.BytesIO()
        with pyorc.Writer(buf, acid_type, compression=pyorc.CompressionKind.ZLIB) as w:
            for event in events:
                w.write(event)
            # one stripe: Hive 2.3 leaves the last stripe's key-index entry out (spec B.1)
            w.set_user_metadata(**{"hive.acid.key.index": b"", "hive.acid.stats": ",".join(map(str, stats)).encode()})
        tfs.write_bytes(tfs.join(d, "bucket_00000"), buf.getvalue())

    url = "sqlite:///" + tfs.join(root, "metastore.db")
    ms2.init_hive2(url, warehouse=_location(tfs, warehouse))
    engine = sa.create_engine(url)
    md = ms2.build_metadata("sqlite")
    T = {t.name.upper(): t for t in md.tables.values()}
    with engine.begin() as conn:

        def ins(name: str, **values: Any) -> None:
            conn.execute(T[name].insert().values(values))

        ins("SDS", SD_ID=1, LOCATION=_location(tfs, loc), NUM_BUCKETS=1, IS_COMPRESSED=False,
            IS_STOREDASSUBDIRECTORIES=False,
            INPUT_FORMAT="org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
            OUTPUT_FORMAT="org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat")  # fmt: skip
        ins("TBLS", TBL_ID=1, CREATE_TIME=0, DB_ID=1, LAST_ACCESS_TIME=0, OWNER="hive", RETENTION=0, SD_ID=1,
            TBL_NAME="legacy_employee", TBL_TYPE="MANAGED_TABLE", IS_REWRITE_ENABLED=False)  # fmt: skip
        for k, v in {"transactional": "true", "transactional_properties": "default"}.items():
            ins("TABLE_PARAMS", TBL_ID=1, PARAM_KEY=k, PARAM_VALUE=v)
        for txn in (1, 2):
            ins("COMPLETED_TXN_COMPONENTS", CTC_TXNID=txn, CTC_DATABASE="default", CTC_TABLE="legacy_employee")
        started = int(time.time() * 1000)  # as the Hive 3 demo's txns: doctor's ages start at 0
        ins("TXNS", TXN_ID=3, TXN_STATE="a", TXN_STARTED=started, TXN_LAST_HEARTBEAT=started, TXN_USER="hive",
            TXN_HOST="demo-host")  # fmt: skip
        ins("TXN_COMPONENTS", TC_TXNID=3, TC_DATABASE="default", TC_TABLE="legacy_employee", TC_OPERATION_TYPE="i")
        conn.execute(T["NEXT_TXN_ID"].update().values(NTXN_NEXT=4))
    engine.dispose()
    return {
        "metastore": _safe(url),
        "hive_version": 2,
        "warehouse": tfs.display(warehouse),
        "tables": [
            {
                "table": "default.legacy_employee",
                "location": tfs.display(loc),
                "transactional_properties": "default",
                "txns": {"1": "committed", "2": "committed", "3": "aborted"},
                "expected_rows": [[1, "Jerry", 5000], [2, "Tom", 7000], [3, "Kate", 6000]],
            }
        ],
    }
