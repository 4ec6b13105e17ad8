"""Which files a snapshot reads, in Hive's read order (:func:`plan_sources`): the part of
:mod:`acidctl.acid.read` that needs no pyarrow, so that compaction's driver plans every
partition without importing pyarrow and numpy (~0.45 s of a run's start, bench/compact.py);
the reading itself stays in :mod:`acidctl.acid.read`, which re-exports both names.
"""

from __future__ import annotations

import dataclasses

from acidctl.acid.acidstate import AcidState, DirListing, Kind
from acidctl.acid.dirname import BucketFile, OriginalFile
from acidctl.fs import TableFS, join_path


@dataclasses.dataclass
class Source:
    """One data file to read, with what is needed to turn it into ACID events."""

    path: str
    bucket: int
    raw: bool = False  # original layout: synthetic row ids
    write_id: int = 0  # for raw files
    statement: int = 0
    first_row_id: int = 0  # for raw files: row ids already used in this bucket


def _fs_base(listing: DirListing) -> str:
    return listing.fs_path or listing.path


def plan_sources(tfs: TableFS, listing: DirListing, state: AcidState) -> tuple[list[Source], list[Source]]:
    """(insert sources, delete sources) of the snapshot, in Hive's read order."""
    base_path = _fs_base(listing)
    inserts: list[Source] = []
    deletes: list[Source] = []
    raw_rows: dict[int, int] = {}

    def add_raw(path: str, name: str, write_id: int, stmt: int):
        m = OriginalFile.parse(name.rsplit("/", 1)[-1])
        bucket = m.bucket if m else 0
        first = raw_rows.get(bucket, 0)
        from acidctl.orc.reader import OrcFile  # pyarrow: only for original files

        with OrcFile(tfs, path) as f:
            raw_rows[bucket] = first + f.rows
            if f.is_acid:  # an ACID file in an original position (e.g. Trino's 00000_0)
                inserts.append(Source(path, bucket))
                raw_rows[bucket] = first
                return
        inserts.append(Source(path, bucket, raw=True, write_id=write_id, statement=stmt, first_row_id=first))

    if state.base is not None:
        entry = state.base.entry
        files = sorted(f.name for f in entry.data_files())
        bdir = join_path(base_path, state.base.name)
        wid = state.base.max_write_id or 0
        for name in files:
            m = BucketFile.parse(name.rsplit("/", 1)[-1])
            path = join_path(bdir, name)
            if m:
                inserts.append(Source(path, m.bucket))
            else:
                add_raw(path, name, wid, 0)  # LOAD DATA into a base / conversion base
    else:
        for ref in state.originals:
            add_raw(join_path(base_path, ref.rel), ref.rel, 0, 0)
    for d in state.deltas:
        ddir = join_path(base_path, d.name)
        for f in sorted(d.entry.data_files(), key=lambda f: f.name):
            leaf = f.name.rsplit("/", 1)[-1]
            m = BucketFile.parse(leaf)
            if d.kind is Kind.DELETE_DELTA:
                if m:
                    deletes.append(Source(join_path(ddir, f.name), m.bucket))
            elif m:
                inserts.append(Source(join_path(ddir, f.name), m.bucket))
            elif OriginalFile.parse(leaf):  # LOAD DATA into a delta: raw files with write id N
                add_raw(join_path(ddir, f.name), f.name, d.min_write_id or 0, max(d.statement_id or 0, 0))
    return inserts, deletes
