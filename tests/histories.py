"""Random write histories of a Hive ACID table, written the way Hive 3 writes them, and a
simple reference model of what a reader must see.

A history is a list of transactions (write ids 1..N in order), each committed, aborted or still
open, each made of statements that insert, update or delete rows. It is written to disk as
Hive's split-update writers would (one ``delta_w_w_SSSS/bucket_N`` per statement and bucket with
row ids counted per writer, delete events in ``delete_delta_w_w_SSSS/bucket_N`` of the target
row's bucket), optionally on top of pre-ACID original files. The reference model is a plain
dict from ROW__ID to row values, changed only by committed transactions — nothing in it comes
from acidctl's code.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po
from hypothesis import strategies as st

from acidctl.acid.writeids import WriteIdList
from acidctl.fs import TableFS
from acidctl.orc.writer import write_acid_file

V1 = 1 << 29


def prop(bucket: int, stmt: int) -> int:
    return V1 | (bucket << 16) | stmt


@dataclasses.dataclass
class Statement:
    kind: str  # insert | delete | update
    values: list[int]  # insert/update: new values; delete: ignored
    picks: list[int]  # delete/update: indexes into the visible rows (mod len)
    part: int = 0  # partition index (mod History.partitions)


@dataclasses.dataclass
class Txn:
    state: str  # committed | aborted | open
    statements: list[Statement]


@dataclasses.dataclass
class History:
    buckets: int
    originals: list[int]  # values of pre-ACID rows (empty: none)
    txns: list[Txn]
    partitions: int = 1  # > 1: a table partitioned by p=0..partitions-1

    def snapshot(self, table: str = "db.t") -> WriteIdList:
        return WriteIdList(
            table=table,
            hwm=len(self.txns),
            open=tuple(i + 1 for i, t in enumerate(self.txns) if t.state == "open"),
            aborted=tuple(i + 1 for i, t in enumerate(self.txns) if t.state == "aborted"),
        )

    # -- the reference model -------------------------------------------------------------
    def play_table(self, root: Path | None = None, log: list | None = None) -> dict[tuple, tuple[int, str]]:
        """Write the whole table (partition directories ``p=K`` when partitioned) and return
        {(partition or None, writeid, bucket, rowid): row}. Write ids are table-wide: a
        transaction's statements each go to one partition; partitions are independent.
        ``log``: gets the committed event log, ``(kind, writeid, partition or None, ROW__ID,
        row)`` per event (see :meth:`play`)."""
        if self.partitions <= 1:
            part_log: list = []
            got = self.play(root, log=part_log)
            if log is not None:
                log.extend((kind, w, None, key, row) for kind, w, key, row in part_log)
            return {(None, *k): v for k, v in got.items()}
        out = {}
        for k in range(self.partitions):
            name = f"p={k}"
            part_log = []
            got = self.play(root / name if root is not None else None, part=k, log=part_log)
            if log is not None:
                log.extend((kind, w, name, key, row) for kind, w, key, row in part_log)
            if root is not None:
                (root / name).mkdir(parents=True, exist_ok=True)
            out.update({(name, *key): v for key, v in got.items()})
        return out

    def play(
        self, root: Path | None = None, part: int | None = None, log: list | None = None
    ) -> dict[tuple[int, int, int], tuple[int, str]]:
        """Write the history under ``root`` (when given) and return the committed state; with
        ``part``, only the statements of that partition (statement ids kept). ``log`` gets the
        events of the committed transactions, in the order they happen: ``("delete", w,
        ROW__ID, the deleted row)`` and ``("insert", w, ROW__ID, row)``."""
        visible: dict[tuple[int, int, int], tuple[int, str]] = {}
        if self.originals:
            per_bucket: dict[int, list] = {}
            for v in self.originals:
                per_bucket.setdefault(v % self.buckets, []).append((v, f"orig-{v}"))
            for b, rows in sorted(per_bucket.items()):
                if root is not None:
                    _write_original(root / f"{b:06d}_0", rows)
                for i, r in enumerate(rows):
                    visible[(0, prop(b, 0), i)] = r
        for w, txn in enumerate(self.txns, start=1):
            after = dict(visible)
            taken: set = set()
            events: list = []
            for s, stmt in enumerate(txn.statements):
                if part is not None and stmt.part % self.partitions != part:
                    continue
                inserts: dict[int, list] = {}
                deletes: dict[int, list] = {}
                if stmt.kind in ("delete", "update"):
                    keys = [k for k in sorted(visible) if k not in taken]
                    for p in stmt.picks:
                        if not keys:
                            break
                        k = keys.pop(p % len(keys))
                        taken.add(k)
                        b = (k[1] >> 16) & 0xFFF
                        deletes.setdefault(b, []).append((2, k[0], k[1], k[2], w, None))
                        after.pop(k, None)
                        events.append(("delete", w, k, visible[k]))
                if stmt.kind in ("insert", "update"):
                    for v in stmt.values:
                        b = v % self.buckets
                        rid = len(inserts.get(b, []))
                        row = (v, f"w{w}s{s}-{v}")
                        inserts.setdefault(b, []).append((0, w, prop(b, s), rid, w, row))
                        after[(w, prop(b, s), rid)] = row
                        events.append(("insert", w, (w, prop(b, s), rid), row))
                if root is not None:
                    for b, ev in inserts.items():
                        _write_acid(root / f"delta_{w:07d}_{w:07d}_{s:04d}" / f"bucket_{b:05d}", ev)
                    for b, ev in deletes.items():
                        _write_acid(root / f"delete_delta_{w:07d}_{w:07d}_{s:04d}" / f"bucket_{b:05d}", ev)
            if txn.state == "committed":
                visible = after
                if log is not None:
                    log.extend(events)
        return visible


def _row_struct(rows):
    ids = pa.array([None if r is None else r[0] for r in rows], pa.int32())
    names = pa.array([None if r is None else r[1] for r in rows], pa.string())
    return pa.StructArray.from_arrays([ids, names], ["id", "name"], mask=pa.array([r is None for r in rows]))


def _write_acid(path: Path, events: list[tuple]):
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.parent / "_orc_acid_version").write_bytes(b"2")
    events = sorted(events, key=lambda e: (e[1], e[2], e[3]))
    t = pa.table(
        {
            "operation": pa.array([e[0] for e in events], pa.int32()),
            "originalTransaction": pa.array([e[1] for e in events], pa.int64()),
            "bucket": pa.array([e[2] for e in events], pa.int32()),
            "rowId": pa.array([e[3] for e in events], pa.int64()),
            "currentTransaction": pa.array([e[4] for e in events], pa.int64()),
            "row": _row_struct([e[5] for e in events]),
        }
    )
    write_acid_file(TableFS(str(path.parent)), str(path), t)


def _write_original(path: Path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    po.write_table(
        pa.table(
            {"id": pa.array([r[0] for r in rows], pa.int32()), "name": pa.array([r[1] for r in rows], pa.string())}
        ),
        str(path),
    )


values = st.lists(st.integers(0, 1000), min_size=1, max_size=6)
statements = st.builds(
    Statement,
    kind=st.sampled_from(["insert", "delete", "update"]),
    values=values,
    picks=st.lists(st.integers(0, 50), min_size=1, max_size=3),
    part=st.integers(0, 2),
)
txns = st.builds(
    Txn,
    state=st.sampled_from(["committed", "committed", "committed", "aborted", "open"]),
    statements=st.lists(statements, min_size=1, max_size=2),
)


def histories_of(*, min_txns: int = 1, max_txns: int = 6, max_originals: int = 6, partitioned: bool = False):
    """Random :class:`History` values: 1-3 buckets, up to ``max_originals`` original rows,
    ``min_txns``..``max_txns`` transactions, 1-3 partitions when ``partitioned``."""
    extra = {"partitions": st.integers(1, 3)} if partitioned else {}
    return st.builds(
        History,
        buckets=st.integers(1, 3),
        originals=st.one_of(st.just([]), st.lists(st.integers(0, 1000), min_size=1, max_size=max_originals)),
        txns=st.lists(txns, min_size=min_txns, max_size=max_txns),
        **extra,
    )


histories = histories_of()
#: the same, on tables partitioned into 1-3 partitions
partitioned_histories = histories_of(max_originals=4, partitioned=True)
