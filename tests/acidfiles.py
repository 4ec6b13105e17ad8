"""Helpers that build ACID ORC files for tests, including deliberately broken ones."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pyorc

from acidctl.orc import footer

B0 = 536870912  # BucketCodec V1: bucket 0, statement 0


def events(keys, *, ops=None, ctxn=None, rows=None, names=("id", "name")) -> pa.Table:
    """An ACID table from a list of (originalTransaction, bucket, rowId) keys."""
    n = len(keys)
    ot = np.array([k[0] for k in keys], np.int64)
    bk = np.array([k[1] for k in keys], np.int32)
    rid = np.array([k[2] for k in keys], np.int64)
    op = np.array(ops if ops is not None else [0] * n, np.int32)
    ct = np.array(ctxn if ctxn is not None else ot, np.int64)
    if rows is None:
        rows = [None if o == 2 else (int(r), f"n{int(r)}") for o, r in zip(op, rid)]
    valid = [r is not None for r in rows]
    kids = [
        pa.array([r[i] if r is not None else None for r in rows], pa.int32() if i == 0 else pa.string())
        for i in range(2)
    ]
    row = pa.StructArray.from_arrays(kids, list(names), mask=pa.array([not v for v in valid]))
    return pa.table(
        {"operation": op, "originalTransaction": ot, "bucket": bk, "rowId": rid, "currentTransaction": ct, "row": row}
    )


def write_raw(
    path: Path, table: pa.Table, metadata: list[tuple[str, str]] | None, *, stripe_size: int = 64 << 20
) -> Path:
    """Write ``table`` as ORC with exactly ``metadata`` as user metadata (no checks at all)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sink = pa.BufferOutputStream()
    po.write_table(table, sink, compression="zlib", stripe_size=stripe_size)
    data = sink.getvalue().to_pybytes()
    if metadata:
        data = footer.add_user_metadata(data, [(k, v.encode()) for k, v in metadata])
    path.write_bytes(data)
    return path


def good_metadata(table: pa.Table) -> list[tuple[str, str]]:
    """What a correct single-stripe file carries, worked out from the events."""
    ops = table.column("operation").to_pylist()
    last = [table.column(c)[table.num_rows - 1].as_py() for c in ("originalTransaction", "bucket", "rowId")]
    return [
        ("hive.acid.key.index", "%d,%d,%d;" % tuple(last)),
        ("hive.acid.stats", "%d,%d,%d" % (ops.count(0), ops.count(1), ops.count(2))),
        ("hive.acid.version", "2"),
    ]


def nation_table(dst: Path, *, markers: bool = False, name: str = "nation") -> Path:
    """The table layout fixtures/real/README.md §1 describes for the 25,000-row nation file and
    its two delete deltas (write ids 2, 3, 4)."""
    import shutil

    from tests.conftest import REAL

    t = dst / name
    src = REAL / "trino"
    for d, f in (
        ("delta_0000002_0000002_0000", src / "nationFile25kRowsSortedOnNationKey" / "bucket_00000"),
        (
            "delete_delta_0000003_0000003_0000",
            src / "nation_delete_deltas" / "delete_delta_0000003_0000003_0000" / "bucket_00000",
        ),
        (
            "delete_delta_0000004_0000004_0000",
            src / "nation_delete_deltas" / "delete_delta_0000004_0000004_0000" / "bucket_00000",
        ),
    ):
        (t / d).mkdir(parents=True)
        shutil.copy(f, t / d / "bucket_00000")
        if markers:
            (t / d / "_orc_acid_version").write_bytes(b"2")
    return t


def acid_file(path: Path, orc_type: str, events: list[tuple]) -> Path:
    """An ACID file written by pyorc (ORC C++, independent of acidctl's writer): ``events`` are (op, owid, bucket, rowId, cwid, row)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    ops = [e[0] for e in events]
    buf = io.BytesIO()
    with pyorc.Writer(buf, orc_type, compression=pyorc.CompressionKind.ZLIB) as w:
        w.writerows(events)
        w.set_user_metadata(
            **{
                "hive.acid.key.index": ("%d,%d,%d;" % events[-1][1:4]).encode(),
                "hive.acid.stats": b"%d,%d,%d" % (ops.count(0), ops.count(1), ops.count(2)),
                "hive.acid.version": b"2",
            }
        )
    path.write_bytes(buf.getvalue())
    return path
