"""Hive 2.3's merge (:mod:`acidctl.acid.hive2`), streamed: a window of key order at a time.

(../shared/spec/insert-only-and-hive2.md B.6.) Hive's writers write, and ``OrcRawRecordMerger``
assumes, every event file in key order (originalTransaction, bucket, rowId). Each source file
is read a piece at a time (a stripe, or up to ``batch_rows`` rows through
:meth:`acidctl.orc.reader.OrcFile.iter_batches`); the events of all sources whose key lies
below the smallest last key an unfinished source has buffered form a *window*: no later event
can fall before it, so every event of a row key is in one window and the window's merge is
that part of the whole merge. Used by the merged reads (:func:`stream_partition`: ``dump
--merged``, its ``--count``, ``export``) and by the Hive 2 compaction
(:mod:`acidctl.compact.hive2`), which imports it (never the reverse).

Why by hand: a k-way merge of sorted Arrow pieces with Hive 2.3's window rule; neither Arrow
nor a library merges sorted record-batch streams.

What the windows cannot take raises :class:`Unstreamable` and the caller redoes the bucket (or
partition) whole with :func:`acidctl.acid.hive2.merge_sources`, which sorts what is out of
order and replays the merger's state where keys tie:

* a source out of key order (``reason`` ``order``);
* two events of one bucket with the whole merge key equal (originalTransaction, bucket,
  rowId, currentTransaction, statement): Hive 2.3's merger orders those by its ``TreeMap``'s
  state (:func:`acidctl.acid.hive2.merge_order`), which a window does not know (``ties``);
* pieces whose Arrow schemas cannot be put together (``schema``).

Memory: one piece per source plus the events buffered up to the window bound.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Iterable, Iterator

if TYPE_CHECKING:
    import pyarrow as pa

    from acidctl.acid.acidstate import AcidState
    from acidctl.acid.listing import DirListing
    from acidctl.acid.sourceplan import Source
    from acidctl.acid.writeids import WriteIdList
    from acidctl.fs import TableFS

#: the smallest piece :func:`stream_partition` reads from a file by default (ORC's reader
#: decodes 8,192 rows at a time for large files anyway)
MIN_PIECE_ROWS = 4096

#: reasons of :class:`Unstreamable`
ORDER, TIES, SCHEMA = "order", "ties", "schema"


class Unstreamable(Exception):
    """Events the windowed merge does not take (``reason``: :data:`ORDER`, :data:`TIES`,
    :data:`SCHEMA`); the caller merges whole."""

    def __init__(self, reason: str, message: str, path: str | None = None):
        super().__init__(message)
        self.reason = reason
        self.path = path


class Cursor:
    """One source's events being merged: the buffered, not yet windowed part of its stream.
    ``side`` 0: row-carrying events, 1: delete-file events; ``bucket``: the file's bucket id
    (one merger per bucket)."""

    def __init__(self, pieces: Iterable["pa.Table"], stmt: int, side: int, *, bucket: int = 0, path: str = ""):
        self.pieces = iter(pieces)
        self.stmt = stmt
        self.side = side
        self.bucket = bucket
        self.path = path
        self.buf: "pa.Table | None" = None
        self.keys: tuple = ()
        self.done = False
        self.last: tuple | None = None  # the last key seen, for the order check across pieces

    def pull(self) -> bool:
        """Buffer the next non-empty piece; False when the source has no more."""
        import numpy as np
        import pyarrow as pa

        from acidctl.acid.merge import key_arrays, keys_nondecreasing

        for t in self.pieces:
            if not t.num_rows:
                continue
            k = key_arrays(t)
            first = (int(k[0][0]), int(k[1][0]), int(k[2][0]))
            if not keys_nondecreasing(*k) or (self.last is not None and first < self.last):
                raise Unstreamable(ORDER, f"{self.path or 'a source'} is not in key order", self.path)
            self.last = (int(k[0][-1]), int(k[1][-1]), int(k[2][-1]))
            if self.buf is None:
                self.buf, self.keys = t, k
            else:
                try:
                    self.buf = pa.concat_tables([self.buf, t])
                except pa.ArrowInvalid:
                    raise Unstreamable(SCHEMA, "pieces of one source differ in schema", self.path) from None
                self.keys = tuple(np.concatenate([a, b]) for a, b in zip(self.keys, k))
            return True
        self.done = True
        return False

    def close(self) -> None:
        close = getattr(self.pieces, "close", None)
        if close is not None:
            close()

    def last_key(self) -> tuple:
        return (int(self.keys[0][-1]), int(self.keys[1][-1]), int(self.keys[2][-1]))

    def take(self, bound: tuple | None) -> "pa.Table | None":
        """The buffered events whose key is below ``bound`` (all with None), removed from the
        buffer; None when there is none."""
        if self.buf is None:
            return None
        if bound is None:
            n = self.buf.num_rows
        else:
            from acidctl.acid.merge import count_keys

            ot, bk, rid = self.keys
            n = count_keys(ot, bk, rid, bound, inclusive=False)
        if not n:
            return None
        out = self.buf.slice(0, n)
        if n == self.buf.num_rows:
            self.buf, self.keys = None, ()
        else:
            self.buf = self.buf.slice(n)
            self.keys = tuple(a[n:] for a in self.keys)
        return out


Window = list  # per cursor: (events, statement id) or None


def windows(cursors: list[Cursor]) -> Iterator[Window]:
    """Per window, ``[(table, stmt) or None per cursor]``: every event below the smallest last
    key an unfinished source has buffered, so all events of a row key fall in one window and
    windows come in key order. Memory: about one piece per source."""
    while True:
        for c in cursors:
            if c.buf is None and not c.done:
                c.pull()
        live = [c for c in cursors if c.buf is not None]
        if not live:
            return
        pending = [c for c in live if not c.done]
        bound = min((c.last_key() for c in pending), default=None)
        parts = [c.take(bound) for c in cursors]
        if all(p is None for p in parts):
            # every buffered event sits at the bound: read further where it ends
            for c in pending:
                if c.last_key() == bound:
                    c.pull()
            continue
        yield [(p, c.stmt) if p is not None else None for p, c in zip(parts, cursors)]


def source_pieces(tfs: "TableFS", src: "Source", *, deletes: bool, batch_rows: int | None = None):
    """One source's events a piece at a time, as :func:`acidctl.acid.hive2.read_file_events`
    (``deletes``: :func:`~acidctl.acid.hive2.read_delete_events`, the five key columns only)
    reads them whole: a stripe at a time, or (``batch_rows``) at most that many rows at a time.
    Original files numbered on across pieces (Hive 2: from 0 in each file)."""
    import pyarrow as pa

    from acidctl.acid.merge import ACID_COLUMNS, normalise, with_synthetic_ids
    from acidctl.orc.reader import OrcFile

    with OrcFile(tfs, src.path) as f:
        acid = f.is_acid
        cols = list(f.schema.fields)[:5] if deletes else None
        if batch_rows is None:
            batches: Iterable = (f.read_stripe_arrow(i, columns=cols) for i in range(f.num_stripes()))
        else:
            batches = f.iter_batches(columns=cols, batch_rows=batch_rows)
        pos = 0
        for b in batches:
            t = pa.Table.from_batches([b])
            if deletes:
                yield t.rename_columns(ACID_COLUMNS[:5])
            elif src.raw and not acid:
                yield with_synthetic_ids(t, write_id=0, bucket_property=src.bucket, first_row_id=pos)
                pos += t.num_rows
            else:
                yield normalise(t)


def source_cursors(
    tfs: "TableFS",
    srcs: list,
    *,
    deletes: bool,
    side: int,
    missing_ok: bool = False,
    batch_rows: int | None = None,
) -> list[Cursor]:
    """A :class:`Cursor` per source (``missing_ok``: planned files that do not exist skipped)."""
    from acidctl.acid import hive2

    out = []
    for s in srcs:
        if missing_ok and not tfs.exists(s.path):
            continue
        stmt = hive2.statement_of(posixpath.basename(posixpath.dirname(s.path)))
        pieces = source_pieces(tfs, s, deletes=deletes, batch_rows=batch_rows)
        out.append(Cursor(pieces, stmt, side, bucket=s.bucket, path=s.path))
    return out


def side_events(window: Window, side: int, cursors: list[Cursor], bucket: int | None = None):
    """(events, statement ids) of one side of a window (``bucket``: of that bucket's files
    only), in source order; (None, None) when there is none."""
    import numpy as np
    import pyarrow as pa

    tables, stmts = [], []
    for part, c in zip(window, cursors):
        if part is None or c.side != side or (bucket is not None and c.bucket != bucket):
            continue
        t, stmt = part
        tables.append(t)
        stmts.append(np.full(t.num_rows, stmt, dtype=np.int64))
    if not tables:
        return None, None
    try:
        t = pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        raise Unstreamable(SCHEMA, "sources differ in schema") from None
    return t, np.concatenate(stmts)


def refuse_tied_keys(*parts) -> None:
    """Raise :class:`Unstreamable` when two events of ``parts`` ((events, statement ids) pairs)
    share the whole merge key (originalTransaction, bucket, rowId, currentTransaction,
    statement): Hive 2.3's merger orders those by its state, which only the whole-bucket path
    replays."""
    import numpy as np

    from acidctl.acid.merge import key_arrays

    cols: list[list] = [[], [], [], [], []]
    for t, stmt in parts:
        if t is None or not t.num_rows:
            continue
        for i, a in enumerate(key_arrays(t)):
            cols[i].append(a)
        cols[3].append(t.column("currentTransaction").to_numpy(zero_copy_only=False).astype(np.int64))
        cols[4].append(np.asarray(stmt, dtype=np.int64))
    if not cols[0]:
        return
    k = [np.concatenate(c) for c in cols]
    if len(k[0]) < 2:
        return
    order = np.lexsort(tuple(reversed(k)))
    same = np.ones(len(order) - 1, dtype=bool)
    for a in k:
        a = a[order]
        same &= a[1:] == a[:-1]
    if same.any():
        raise Unstreamable(TIES, "equal merge keys")


def collapse_window(ins, ins_stmt, dels, del_stmt, snapshot: "WriteIdList", *, split_update: bool) -> "pa.Table":
    """One bucket's part of a window merged as :func:`acidctl.acid.hive2.collapse` merges the
    whole bucket (``split_update``: the bucket has delete files, so each insert file is its
    merger's base reader, statement 0). Ties are refused with the statement ids the whole merge
    compares, so without them both take the same key-order path."""
    import numpy as np

    from acidctl.acid import hive2

    refuse_tied_keys((ins, np.zeros_like(ins_stmt) if split_update else ins_stmt), (dels, del_stmt))
    return hive2.collapse(ins, ins_stmt, dels, del_stmt, snapshot, split_update=split_update)


def merged_windows(
    tfs: "TableFS",
    inserts: list,
    deletes: list,
    snapshot: "WriteIdList",
    *,
    missing_ok: bool = False,
    batch_rows: int | None = None,
) -> Iterator["pa.Table"]:
    """The merged rows of one bucket's sources (as :func:`acidctl.acid.hive2.merge_sources`
    returns them), a window at a time; raises :class:`Unstreamable`."""
    cursors = source_cursors(
        tfs, inserts, deletes=False, side=0, missing_ok=missing_ok, batch_rows=batch_rows
    ) + source_cursors(tfs, deletes, deletes=True, side=1, missing_ok=missing_ok, batch_rows=batch_rows)
    try:
        for w in windows(cursors):
            ins, ins_stmt = side_events(w, 0, cursors)
            dels, del_stmt = side_events(w, 1, cursors)
            if ins is not None:
                yield collapse_window(ins, ins_stmt, dels, del_stmt, snapshot, split_update=bool(deletes))
    finally:
        for c in cursors:
            c.close()


def stream_partition(
    tfs: "TableFS",
    listing: "DirListing",
    state: "AcidState",
    *,
    batch_rows: int = 65536,
    piece_rows: int | None = None,
) -> Iterator["pa.Table"]:
    """The partition's merged rows under Hive 2.3's rules, in key order (originalTransaction,
    bucket, rowId) across its buckets — the order :func:`acidctl.acid.read.stream_partition`
    gives Hive 3 reads — as tables of about ``batch_rows`` rows (the first one small, for the
    time to the first row). One merger per bucket (files ``bucket_N``), all buckets' windows
    cut at one bound, each window's bucket results put in key order. Raises
    :class:`Unstreamable` (possibly after tables were yielded) and, for two original files in
    one bucket, :class:`~acidctl.errors.InvalidAcidLayout` before reading anything.

    Memory: a piece of at most ``piece_rows`` rows per source file (default: ``batch_rows``
    rows shared by all the files, at least :data:`MIN_PIECE_ROWS` each), plus what the current
    window holds; never a whole bucket."""
    import pyarrow as pa

    from acidctl.acid import hive2
    from acidctl.acid.sourceplan import plan_sources

    inserts, deletes = plan_sources(tfs, listing, state)
    by_bucket: dict[int, tuple[list, list]] = {}
    for s in inserts:
        by_bucket.setdefault(s.bucket, ([], []))[0].append(s)
    for s in deletes:
        if s.bucket in by_bucket:  # a bucket without row-carrying files returns nothing
            by_bucket[s.bucket][1].append(s)
    for ins, _ in by_bucket.values():
        hive2.refuse_two_originals(ins)
    n_files = sum(len(i) + len(d) for i, d in by_bucket.values())
    piece = piece_rows or max(MIN_PIECE_ROWS, batch_rows // max(1, n_files))
    cursors: list[Cursor] = []
    for b in sorted(by_bucket):
        ins, dels = by_bucket[b]
        cursors += source_cursors(tfs, ins, deletes=False, side=0, batch_rows=piece)
        cursors += source_cursors(tfs, dels, deletes=True, side=1, batch_rows=piece)
    split = {b: bool(d) for b, (_, d) in by_bucket.items()}
    want = min(batch_rows, 4096)  # the first table small (time to first row), then full ones
    out: list[pa.Table] = []
    out_rows = 0
    try:
        for w in windows(cursors):
            parts = []
            for b in sorted({c.bucket for part, c in zip(w, cursors) if part is not None and c.side == 0}):
                ins, ins_stmt = side_events(w, 0, cursors, b)
                dels, del_stmt = side_events(w, 1, cursors, b)
                t = collapse_window(ins, ins_stmt, dels, del_stmt, state.write_ids, split_update=split[b])
                if t.num_rows:
                    parts.append(t)
            if not parts:
                continue
            if len(parts) > 1:
                from acidctl.acid.merge import sorted_concat

                chunk = sorted_concat(parts)
            else:
                chunk = parts[0]
            out.append(chunk)
            out_rows += chunk.num_rows
            if out_rows >= want:
                yield out[0] if len(out) == 1 else pa.concat_tables(out, promote_options="permissive")
                out, out_rows, want = [], 0, batch_rows
        if out:
            yield out[0] if len(out) == 1 else pa.concat_tables(out, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        raise Unstreamable(SCHEMA, "windows differ in schema") from None
    finally:
        for c in cursors:
            c.close()


def count_through(t: "pa.Table", last: tuple) -> int:
    """How many leading rows of ``t`` (in key order) have a key ≤ ``last``."""
    from acidctl.acid.merge import count_keys, key_arrays

    if not t.num_rows:
        return 0
    return count_keys(*key_arrays(t), last, inclusive=True)


def last_key(t: "pa.Table") -> tuple:
    from acidctl.acid.merge import KEY

    ot, bk, rid = (t.column(c)[t.num_rows - 1].as_py() for c in KEY)
    return (int(ot), int(bk), int(rid))
