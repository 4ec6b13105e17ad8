"""Reading a table snapshot: the files ``get_acid_state`` selects, merged bucket by bucket.

``read_partition`` yields one merged Arrow table per bucket id (ACID columns, sorted by key),
so a caller holds one bucket's live rows plus the partition's valid delete keys at a time.
Original (pre-ACID) files get Hive's synthetic ROW__IDs (orc-acid-files.md §10): write id 0
(or N for raw files under ``base_N``/``delta_N_N``), bucket property ``V1.encode(bucket from
the name, statement)``, row ids counted across the bucket's files in full-path order.
"""

from __future__ import annotations

import dataclasses
from typing import Iterator

import pyarrow as pa

from acidctl.acid import merge
from acidctl.acid.acidstate import AcidState, DirListing, Kind
from acidctl.acid.dirname import BucketFile, OriginalFile
from acidctl.acid.writeids import WriteIdList
from acidctl.fs import TableFS
from acidctl.orc import bucketcodec
from acidctl.orc.reader import OrcFile



@dataclasses.dataclass
class Source:
    """One data file to read, with what is needed to turn it into ACID events."""

    path: str
    bucket: int
    raw: bool = False               # original layout: synthetic row ids
    write_id: int = 0               # for raw files
    statement: int = 0
    first_row_id: int = 0           # for raw files: row ids already used in this bucket


def _fs_base(listing: DirListing) -> str:
    return listing.fs_path or listing.path


def _join(*parts: str) -> str:
    return "/".join(p.rstrip("/") for p in parts if p)


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
        bdir = _join(base_path, state.base.name)
        wid = state.base.max_write_id or 0
        for name in files:
            m = BucketFile.parse(name.rsplit("/", 1)[-1])
            path = _join(bdir, name)
            if m:
                inserts.append(Source(path, m.bucket))
            else:
                add_raw(path, name, wid, 0)   # LOAD DATA into a base / conversion base
    else:
        for ref in state.originals:
            add_raw(_join(base_path, ref.rel), ref.rel, 0, 0)
    for d in state.deltas:
        ddir = _join(base_path, d.name)
        for f in sorted(d.entry.data_files(), key=lambda f: f.name):
            leaf = f.name.rsplit("/", 1)[-1]
            m = BucketFile.parse(leaf)
            if d.kind is Kind.DELETE_DELTA:
                if m:
                    deletes.append(Source(_join(ddir, f.name), m.bucket))
            elif m:
                inserts.append(Source(_join(ddir, f.name), m.bucket))
            elif OriginalFile.parse(leaf):   # LOAD DATA into a delta: raw files with write id N
                add_raw(_join(ddir, f.name), f.name, d.min_write_id or 0, max(d.statement_id or 0, 0))
    return inserts, deletes


def read_events(tfs: TableFS, src: Source, *, columns: list[str] | None = None) -> pa.Table:
    """A file's events (all stripes) as an ACID table; raw files get synthetic row ids."""
    with OrcFile(tfs, src.path) as f:
        batches = [f.read_stripe_arrow(i) for i in range(f.num_stripes())]
        schema = None if batches else _arrow_schema_of(f)
    table = pa.Table.from_batches(batches) if batches else schema.empty_table()
    if src.raw:
        return merge.with_synthetic_ids(table, write_id=src.write_id,
                                        bucket_property=bucketcodec.encode(src.bucket, src.statement),
                                        first_row_id=src.first_row_id)
    return merge.normalise(table)


def _arrow_schema_of(f: OrcFile) -> pa.Schema:
    import pyarrow.orc as po

    return po.ORCFile(f._source).schema


def read_delete_keys(tfs: TableFS, deletes: list[Source], snapshot: WriteIdList) -> pa.Table | None:
    """Valid delete keys of every delete file (only the key columns are read)."""
    keys = []
    for src in deletes:
        with OrcFile(tfs, src.path) as f:
            top = list(f.schema.fields)
            cols = top[:5]
            for i in range(f.num_stripes()):
                b = f.read_stripe_arrow(i, columns=cols)
                t = pa.Table.from_batches([b]).rename_columns(merge.ACID_COLUMNS[:5])
                keys.append(merge.delete_keys(t, snapshot))
    return pa.concat_tables(keys) if keys else None


def read_partition(tfs: TableFS, listing: DirListing, state: AcidState) -> Iterator[tuple[int, pa.Table]]:
    """(bucket id, merged live events) per bucket id, in bucket order."""
    inserts, deletes = plan_sources(tfs, listing, state)
    dkeys = read_delete_keys(tfs, deletes, state.write_ids)
    by_bucket: dict[int, list[Source]] = {}
    for s in inserts:
        by_bucket.setdefault(s.bucket, []).append(s)
    for bucket in sorted(by_bucket):
        tables = [read_events(tfs, s) for s in by_bucket[bucket]]
        tables = [t for t in tables if t.num_rows]
        if not tables:
            continue
        events = pa.concat_tables(tables, promote_options="permissive")
        yield bucket, merge.apply(events, dkeys, state.write_ids)


def row_type(tfs: TableFS, src: Source):
    """The ORC type of the table row in a source file (``row`` of an ACID file, or the whole
    schema of an original file)."""
    with OrcFile(tfs, src.path) as f:
        if f.is_acid:
            return list(f.schema.fields.values())[5]
        return f.schema
