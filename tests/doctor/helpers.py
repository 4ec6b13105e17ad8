"""Build a sick warehouse: directories on the local filesystem plus Hive-shaped metastore rows
written by the Recorder (the way Hive writes them, metastore.md §4/§9)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from acidctl.doctor.collect import collect
from acidctl.doctor.findings import Limits, diagnose
from acidctl.fs import TableFS
from acidctl.metastore.connection import connect, db_now_ms

H_MS = 3_600_000


def now_ms(rec) -> int:
    with rec.ms.read() as c:
        return db_now_ms(c)


def make_dirs(root: Path, names: dict) -> None:
    """``{"delta_0000001_0000001_0000": {"bucket_00000": 100}, ...}``: sizes in bytes; an
    ``_orc_acid_version`` holding ``2`` is added to every base/delta unless the spec says
    ``"_orc_acid_version": None``."""
    for d, files in names.items():
        p = root / d
        p.mkdir(parents=True, exist_ok=True)
        files = dict(files)
        ver = files.pop("_orc_acid_version", b"2")
        if ver is not None and d.startswith(("base_", "delta_", "delete_delta_")):
            (p / "_orc_acid_version").write_bytes(ver)
        for name, content in files.items():
            (p / name).parent.mkdir(parents=True, exist_ok=True)
            (p / name).write_bytes(content if isinstance(content, bytes) else b"x" * int(content))


def table(
    rec,
    root: Path,
    name: str,
    *,
    db: str = "db",
    partitions: dict | None = None,
    dirs: dict | None = None,
    params: dict | None = None,
    write_ids: int = 0,
    partition_keys=(("p", "string"),),
    location: Path | None = None,
) -> Path:
    """A transactional table; ``write_ids`` committed writes allocated (NEXT_WRITE_ID)."""
    loc = location or (root / f"{db}.db" / name)
    if partitions is not None:
        rec.create_table(
            db,
            name,
            location=f"file:{loc}",
            columns=[("id", "int")],
            partition_keys=list(partition_keys),
            params=params or {},
        )
        for pname, pdirs in partitions.items():
            if pdirs is not None:
                make_dirs(loc / pname, pdirs)
            rec.add_partition(db, name, pname, location=f"file:{loc / pname}")
    else:
        rec.create_table(db, name, location=f"file:{loc}", columns=[("id", "int")], params=params or {})
        loc.mkdir(parents=True, exist_ok=True)
        make_dirs(loc, dirs or {})
    for _ in range(write_ids):
        commit_write(rec, db, name)
    return loc


def commit_write(rec, db: str, name: str, partition: str | None = None, **kw) -> int:
    t = rec.open_txn(**kw)
    w = rec.add_write(t, db, name, partition=partition)
    rec.commit_txn(t)
    return w


def run(url, root=None, *, limits: Limits | None = None, now: int | None = None, **kw):
    """collect + diagnose through the library (what `acidctl doctor` runs)."""
    ms = connect(url)
    scan = collect(ms, lambda u: TableFS(u), now_ms=now, workers=4, **kw)
    return scan, diagnose(scan, limits=limits)


def codes(findings, code: str | None = None) -> list:
    return [f for f in findings if code is None or f.code == code]


def execute(rec, stmt) -> None:
    with rec.engine.begin() as c:
        c.execute(stmt)


def set_txn_state(rec, txn_id: int, state: str) -> None:
    t = rec.T.TXNS
    execute(rec, sa.update(t.clause).where(t.TXN_ID == txn_id).values({t.TXN_STATE.name: state}))


def abort_compaction(rec, cq_id: int) -> None:
    """What ``ABORT COMPACTIONS id`` does (operations.md §6.2): history ``x``, queue row deleted."""
    from acidctl.metastore.recorder import _WrappedTx

    with _WrappedTx(rec.engine) as conn:
        rec._move_to_completed(conn, cq_id, "x", db_now_ms(conn), "Compaction Aborted by Abort Comapction request.")


def compaction(
    rec, db, table, *, partition=None, kind="major", hw=1, state="s", start=None, enqueue=None, txn=None, commit=False
) -> int:
    """A compaction driven through its life cycle up to ``state`` (i, w, r, s, f)."""
    cq = rec.enqueue_compaction(db, table, partition=partition, compaction_type=kind, now_ms=enqueue)
    if state == "i":
        return cq
    rec.mark_working(cq, now_ms=start)
    if state == "w":
        return cq
    if state == "f":
        rec.mark_failed(cq, error_message="boom")
        return cq
    rec.mark_compacted(cq, highest_write_id=hw, txn_id=txn)
    if commit and txn is not None:
        rec.commit_txn(txn)
    if state == "s":
        rec.mark_cleaned(cq)
    return cq


def set_next_write_id(rec, db: str, name: str, nxt: int) -> None:
    """NEXT_WRITE_ID as if ``nxt - 1`` write ids had been allocated and committed (Hive 3 deletes
    committed TXNS rows; TXN_TO_WRITE_ID rows of committed txns do not change any snapshot)."""
    n = rec.T.NEXT_WRITE_ID
    execute(rec, sa.insert(n.clause).values({n.NWI_DATABASE.name: db, n.NWI_TABLE.name: name, n.NWI_NEXT.name: nxt}))
