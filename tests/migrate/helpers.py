"""Shared helpers of the migrate tests: the reference model of a snapshot from the events a
history wrote (Hive's reader rule: an insert event of a valid write id, not deleted by a delete
event of a valid write id), Hive's major compaction + clean written by hand, and the Iceberg
table read back with pyiceberg (never with acidctl)."""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

from acidctl.acid.writeids import WriteIdList
from tests import histories
from tests.conftest import run_cli


class Recorder:
    """The events a tests.histories.History writes, per partition (captured from its writer)."""

    def __init__(self):
        self.events: dict[str | None, list[tuple]] = {}  # partition -> (op, owt, bprop, rid, cwt, row)
        self.originals: dict[str | None, dict[tuple, tuple]] = {}

    def play(self, h: histories.History, root: Path, monkeypatch) -> dict:
        real_acid, real_orig = histories._write_acid, histories._write_original

        def acid(path: Path, events):
            part = path.parent.parent.relative_to(root).as_posix()
            self.events.setdefault(None if part == "." else part, []).extend(events)
            real_acid(path, events)

        def orig(path: Path, rows):
            part = path.parent.relative_to(root).as_posix()
            b = int(path.name.split("_")[0])
            got = self.originals.setdefault(None if part == "." else part, {})
            for i, r in enumerate(rows):
                got[(0, histories.prop(b, 0), i)] = r
            real_orig(path, rows)

        monkeypatch.setattr(histories, "_write_acid", acid)
        monkeypatch.setattr(histories, "_write_original", orig)
        try:
            return h.play_table(root)
        finally:
            monkeypatch.setattr(histories, "_write_acid", real_acid)
            monkeypatch.setattr(histories, "_write_original", real_orig)

    def partitions(self) -> set:
        return set(self.events) | set(self.originals)

    def rows(self, wl: WriteIdList, part: str | None) -> dict[tuple, tuple]:
        """{(writeid, bucketid, rowid): (id, name)} a Hive reader with ``wl`` sees in ``part``."""
        live = dict(self.originals.get(part, {}))
        evs = self.events.get(part, [])
        for op, owt, b, rid, cwt, row in evs:
            if op == 0 and wl.is_valid(cwt):
                live[(owt, b, rid)] = row
        for op, owt, b, rid, cwt, _ in evs:
            if op == 2 and wl.is_valid(cwt):
                live.pop((owt, b, rid), None)
        return live

    def table(self, wl: WriteIdList) -> set[tuple]:
        """Every row as (partition value or None, writeid, bucketid, rowid, id, name)."""
        out = set()
        for part in self.partitions():
            pv = part.split("=", 1)[1] if part else None
            for k, r in self.rows(wl, part).items():
                out.add((pv, *k, *r))
        return out

    def compact(self, root: Path, part: str | None, wl: WriteIdList, n: int) -> None:
        """Hive's major compaction at write id ``n`` (below the list's lowest open id) followed
        by the Cleaner: ``base_n`` holds the rows a reader of ids ≤ n sees, with their
        ROW__IDs; every delta, delete delta and original file at or below n is removed; the
        events above n stay."""
        assert n < wl.min_open
        d = root / part if part else root
        upto = WriteIdList(wl.table, n, (), tuple(a for a in wl.aborted if a <= n))
        rows = self.rows(upto, part)
        by_bucket: dict[int, list] = {}
        for (owt, b, rid), r in rows.items():
            by_bucket.setdefault((b >> 16) & 0xFFF, []).append((0, owt, b, rid, owt, r))
        for child in list(d.iterdir()):
            name = child.name
            if name.startswith(("delta_", "delete_delta_")):
                hi = int(name.split("_")[-2] if name.startswith("delete_") else name.split("_")[2])
                if hi <= n:
                    shutil.rmtree(child)
            elif name.startswith("base_") or (child.is_file() and name[0].isdigit()):
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        base = d / f"base_{n:07d}"
        base.mkdir(parents=True)
        # the compactor's marker: a compacted base (not an INSERT OVERWRITE one), valid even
        # when write n itself was aborted
        (base / "_metadata_acid").write_text('{"thisFileVersion":"0","dataFormat":"compacted"}')
        for b, evs in sorted(by_bucket.items()):
            histories._write_acid(base / f"bucket_{b:05d}", evs)
        # the model: the base's rows replace everything at or below n (always visible after)
        self.originals[part] = dict(rows)
        self.events[part] = [e for e in self.events.get(part, []) if e[4] > n]


def migrate(root: Path, wl: WriteIdList | str, cat: Path, *extra: str, target: str = "ns.t"):
    """``acidctl -o json migrate`` into the SQLite catalog ``cat``; (result, report or None)."""
    r = run_cli("-o", "json", "migrate", str(root), "--write-ids", str(wl), *iceberg_target(cat, target), *extra)
    report = json.loads(r.stdout) if r.code == 0 and r.stdout.strip() else None
    return r, report


def iceberg_target(cat: Path, ident: str = "ns.t") -> list[str]:
    """``migrate``'s options naming the Iceberg table ``ident`` of the SQLite catalog ``cat``,
    with its warehouse (:func:`warehouse`)."""
    return ["--to", "iceberg", "--catalog", f"sqlite:///{cat}", "--warehouse", str(warehouse(cat)), "--target", ident]


def warehouse(cat: Path) -> Path:
    """The Iceberg warehouse of the SQLite catalog ``cat``: next to it."""
    return cat.parent / "warehouse"


def load(cat: Path, ident: str = "ns.t", name: str = "acidctl"):
    from pyiceberg.catalog import load_catalog

    c = load_catalog(name, uri=f"sqlite:///{cat}", type="sql", warehouse=f"file://{warehouse(cat)}")
    return c.load_table(ident)


def iceberg_rows(cat: Path, ident: str = "ns.t", *, partition: str | None = "p") -> set[tuple]:
    t = load(cat, ident)
    out = set()
    for r in t.scan().to_arrow().to_pylist():
        rid = r["row__id"]
        out.add(
            (r.get(partition) if partition else None, rid["writeid"], rid["bucketid"], rid["rowid"], r["id"], r["name"])
        )
    return out


def snapshot_ids(cat: Path, ident: str = "ns.t") -> list[int]:
    return [s.snapshot_id for s in load(cat, ident).snapshots()]


def data_files(cat: Path, ident: str = "ns.t") -> dict[str, set]:
    """Current data file paths by partition value."""
    out: dict[str, set] = {}
    for task in load(cat, ident).scan().plan_files():
        key = str(task.file.partition[0]) if len(task.file.partition) else ""
        out.setdefault(key, set()).add(task.file.file_path)
    return out


def late_commit_history() -> histories.History:
    """Two partitions, two buckets, originals 1-3; write 3 is aborted; write 5 is open at a first
    sync and commits before a later one, after writes 6 and 7 (a lower id than ids the first
    sync already saw)."""
    H, S, T = histories.History, histories.Statement, histories.Txn
    return H(
        buckets=2,
        originals=[1, 2, 3],
        partitions=2,
        txns=[
            T("committed", [S("insert", [10, 11, 12], [], 0), S("insert", [13], [], 1)]),
            T("committed", [S("update", [20], [0], 1)]),
            T("aborted", [S("insert", [30], [], 0)]),
            T("committed", [S("delete", [], [1], 0)]),
            T("committed", [S("insert", [50, 51], [], 0), S("delete", [], [0], 1)]),
            T("committed", [S("update", [60], [2], 0)]),
            T("committed", [S("insert", [70], [], 1)]),
        ],
    )


def late_commit_wl(hwm: int, open_=(), aborted=(3,)) -> WriteIdList:
    """A reader's list of :func:`late_commit_history`'s table ``db.t`` at ``hwm``."""
    return WriteIdList("db.t", hwm, tuple(open_), tuple(a for a in aborted if a <= hwm))


ROW_ID_FIELDS = {"writeid": 8, "bucketid": 4, "rowid": 8}  # Iceberg long / int: bytes of a bound


def row_id_ranges(path: str) -> dict[str, tuple[int, int, int]]:
    """{field: (min, max, rows)} of the ``row__id`` fields of one Parquet data file, read with
    pyarrow (not with acidctl)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    rid = pq.read_table(path.removeprefix("file://"), columns=["row__id"]).column("row__id").combine_chunks()
    out = {}
    for name in ROW_ID_FIELDS:
        col = rid.field(name)
        mm = pc.min_max(col).as_py()
        out[name] = (mm["min"], mm["max"], len(col))
    return out


def check_row_id_bounds(cat: Path, ident: str = "ns.t") -> int:
    """Every current data file's manifest metrics of ``row__id.*`` (pyiceberg's DataFile) equal
    the min/max/count of the file's rows; returns the number of files checked."""
    t = load(cat, ident)
    schema = t.schema()
    files = [task.file for task in t.scan().plan_files()]
    for df in files:
        got = row_id_ranges(df.file_path)
        assert got["writeid"][2] == df.record_count
        for name, width in ROW_ID_FIELDS.items():
            fid = schema.find_field(f"row__id.{name}").field_id
            lo, hi = df.lower_bounds[fid], df.upper_bounds[fid]
            assert len(lo) == len(hi) == width, (name, lo, hi)
            bounds = (int.from_bytes(lo, "little", signed=True), int.from_bytes(hi, "little", signed=True))
            assert bounds == got[name][:2], (df.file_path, name, bounds, got[name])
            assert df.value_counts[fid] == got[name][2]
            assert df.null_value_counts[fid] == 0
    return len(files)


def files_holding(files: dict[str, set], deleted: dict[str | None, list[tuple]]) -> set[str]:
    """Of ``files`` (:func:`data_files`), those whose ``row__id`` ranges (:func:`row_id_ranges`,
    read with pyarrow) hold one of the deleted keys ``(writeid, bucketid, rowid)`` of their
    partition (``deleted``: ``"p=V"`` → keys): the files a catch-up's copy-on-write must read."""
    out = set()
    names = ("writeid", "bucketid", "rowid")
    for part, keys in deleted.items():
        for p in files.get(part.split("=")[1], ()):
            rng = row_id_ranges(p)
            if any(all(rng[n][0] <= k[i] <= rng[n][1] for i, n in enumerate(names)) for k in keys):
                out.add(p)
    return out


@contextlib.contextmanager
def files_read() -> Iterator[list[str]]:
    """The data files pyiceberg's scans read (``ArrowScan.to_table``) inside the block, in order."""
    import pytest
    from pyiceberg.io.pyarrow import ArrowScan

    read: list[str] = []
    real = ArrowScan.to_table

    def counting(self, tasks):
        tasks = list(tasks)
        read.extend(t.file.file_path for t in tasks)
        return real(self, tasks)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ArrowScan, "to_table", counting)
        yield read
