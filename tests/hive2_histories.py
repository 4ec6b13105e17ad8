"""Random Hive 2.3 (ACID v1) table histories written as Hive 2.3 writes them, and a reference
model of what a Hive 2.3 reader returns — written from ../shared/spec/insert-only-and-hive2.md
(B.1, B.3, B.5, B.6), not from acidctl's code.

Files are written with pyorc directly (not acidctl's writer): plain bucket ids (BucketCodec V0),
``row`` fields named ``_col0``/``_col1``, user metadata ``hive.acid.key.index`` (empty: one
stripe, the last stripe's entry missing as in Hive 2.3) and ``hive.acid.stats``, no
``hive.acid.version``, no ``_orc_acid_version`` in the deltas.

Legacy mode (B.1): INSERT writes op-0 events, UPDATE one op-1 event that keeps the row's
(originalTransaction, bucket, rowId), DELETE one op-2 event, all into
``delta_T_T_SSSS/bucket_N``. Split-update: DELETE into ``delete_delta_T_T_SSSS``, UPDATE = delete
event there + an op-0 insert with a new row id in ``delta_T_T_SSSS``.

The model: the snapshot is the state after applying, in txn order and statement order, every
statement of the txns the reader's list says are valid — a serial history, which is what the
merge rule "first valid event by currentTransaction DESC, statement DESC wins" reproduces.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

ROW_TYPE = "struct<_col0:int,_col1:string>"
ACID_TYPE = (
    f"struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,row:{ROW_TYPE}>"
)
LONG_MAX = 9223372036854775807


@dataclasses.dataclass
class Stmt:
    txn: int
    stmt: int
    #: (op, key, row) with key = (originalTransaction, bucket, rowId); row None for deletes
    events: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class History:
    mode: str  # legacy | split-update
    stmts: list[Stmt]
    states: dict[int, str]  # txn → committed | aborted | open
    hwm: int

    def reader_list(self, hwm: int | None = None) -> str:
        """Hive 2's ValidTxnList of a reader at high-water mark ``hwm`` (B.2)."""
        hwm = self.hwm if hwm is None else hwm
        exc = sorted(t for t, s in self.states.items() if s != "committed" and t <= hwm)
        opens = [t for t, s in self.states.items() if s == "open" and t <= hwm]
        return f"{hwm}:{min(opens) if opens else LONG_MAX}:" + ":".join(map(str, exc))

    def valid(self, t: int, hwm: int | None = None) -> bool:
        hwm = self.hwm if hwm is None else hwm
        return t <= hwm and self.states.get(t) == "committed"

    def expected(self, hwm: int | None = None) -> dict:
        """{(originalTransaction, bucket, rowId): row} a Hive 2.3 reader returns."""
        return {k: row for k, (_, _, row) in self.expected_events(hwm).items()}

    def expected_events(self, hwm: int | None = None) -> dict:
        """{key: (operation, currentTransaction, row)} of the event that last wrote each live
        row — what a Hive 2.3 major compaction keeps unchanged (B.7)."""
        live: dict = {}
        for s in sorted(self.stmts, key=lambda s: (s.txn, s.stmt)):
            if not self.valid(s.txn, hwm):
                continue
            for op, key, row in s.events:
                if op == 2:
                    live.pop(key, None)
                else:
                    live[key] = (op, s.txn, row)
        return live

    def compactor_hwm(self) -> int:
        """B.2 compactor list: hwm = lowest open txn − 1 (or the hwm)."""
        opens = [t for t, s in self.states.items() if s == "open"]
        return min(opens) - 1 if opens else self.hwm


def random_history(rng: random.Random, *, mode: str = "legacy", txns: int = 8, buckets: int = 2) -> History:
    """Txns 1..txns, each committed (mostly), aborted or open; one or two statements each with
    inserts, updates and deletes of rows a writer can see (committed rows and its own)."""
    committed: dict = {}  # key -> row, what later writers see
    stmts: list[Stmt] = []
    states: dict[int, str] = {}
    next_row: dict = {}  # (txn, bucket) -> next row id
    for t in range(1, txns + 1):
        state = rng.choices(["committed", "aborted", "open"], [6, 2, 1])[0]
        states[t] = state
        view = dict(committed)
        for sid in range(rng.choice([1, 1, 2])):
            st = Stmt(t, sid)
            touched = set()
            for _ in range(rng.randint(1, 4)):
                what = rng.choice(["insert", "insert", "update", "delete"]) if view else "insert"
                if what == "insert":
                    b = rng.randrange(buckets)
                    rid = next_row.get((t, b), 0)
                    next_row[(t, b)] = rid + 1
                    key, row = (t, b, rid), {"_col0": rng.randint(-50, 50), "_col1": rng.choice(["a", "b", None, "ü"])}
                    st.events.append((0, key, row))
                    view[key] = row
                    touched.add(key)
                    continue
                choices = [k for k in view if k not in touched]
                if not choices:
                    continue
                key = rng.choice(sorted(choices))
                touched.add(key)
                if what == "delete":
                    st.events.append((2, key, None))
                    view.pop(key)
                elif mode == "legacy":
                    row = {"_col0": rng.randint(100, 200), "_col1": "u%d" % t}
                    st.events.append((1, key, row))
                    view[key] = row
                else:  # split-update: delete + insert with a new row id
                    b = key[1]
                    rid = next_row.get((t, b), 0)
                    next_row[(t, b)] = rid + 1
                    row = {"_col0": rng.randint(100, 200), "_col1": "u%d" % t}
                    st.events.append((2, key, None))
                    st.events.append((0, (t, b, rid), row))
                    view.pop(key)
                    view[(t, b, rid)] = row
                    touched.add((t, b, rid))
            if st.events:
                stmts.append(st)
        if state == "committed":
            committed = view
    return History(mode, stmts, states, txns)


def _write_orc(path: Path, events: list, txn: int, *, stripe_size: int | None = None) -> None:
    import pyorc

    events = sorted(events, key=lambda e: e[1])
    ins = sum(1 for e in events if e[0] == 0)
    upd = sum(1 for e in events if e[0] == 1)
    dels = sum(1 for e in events if e[0] == 2)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        # a small stripe_size: uncompressed (ORC's stripe check counts compressed bytes)
        kw = {"stripe_size": stripe_size, "batch_size": 250} if stripe_size else {}
        kind = pyorc.CompressionKind.NONE if stripe_size else pyorc.CompressionKind.ZLIB
        with pyorc.Writer(f, ACID_TYPE, compression=kind, **kw) as w:
            for op, (ot, b, rid), row in events:
                w.write((op, ot, b, rid, txn, None if row is None else (row["_col0"], row["_col1"])))
            w.set_user_metadata(**{"hive.acid.key.index": b"", "hive.acid.stats": f"{ins},{upd},{dels}".encode()})


#: one event file written as Hive 2.3 writes it: ``(path, [(op, key, row)], txn, stripe_size=)``
write_events_file = _write_orc


def write_table(h: History, root: Path, *, stripe_size: int | None = None) -> Path:
    """The directories and bucket files Hive 2.3's DML would leave (aborted and open txns'
    deltas included: Hive 2 keeps them on disk)."""
    root.mkdir(parents=True, exist_ok=True)
    for s in h.stmts:
        name = f"{s.txn:07d}_{s.txn:07d}_{s.stmt:04d}"
        by_dir: dict = {}
        for op, key, row in s.events:
            d = "delete_delta_" if (op == 2 and h.mode == "split-update") else "delta_"
            by_dir.setdefault((d, key[1]), []).append((op, key, row))
        for (d, b), evs in by_dir.items():
            _write_orc(root / (d + name) / f"bucket_{b:05d}", evs, s.txn, stripe_size=stripe_size)
    return root
