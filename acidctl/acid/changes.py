"""Change events of a table between two snapshots (``acidctl changes``), and the events of any
set of write ids (what ``migrate``'s catch-up needs).

The event model (orc-acid-files.md, split-update, Hive 3/4): write id ``w`` inserted a row when
an insert event (operation 0) with ``currentTransaction = w`` is in a ``delta_*`` of the
snapshot's read set (its ROW__ID is ``(w, bucket, rowId)``), and deleted a row when a delete
event (operation 2) with ``currentTransaction = w`` in a ``delete_delta_*`` points at the row's
ROW__ID; an UPDATE is both in one write id. Minor compaction keeps every event with its
``originalTransaction`` / ``currentTransaction`` (``delta_x_y``, ``delete_delta_x_y``; aborted
events dropped), so changes are derivable across minor compactions. Major compaction folds the
events of write ids ≤ N into ``base_N`` (deleted rows gone, delete events gone): events of those
write ids are no longer on disk, and asking for them raises :class:`EventsGone` naming N + 1 —
never a silent gap. The same holds for an INSERT OVERWRITE ``base_N`` (its truncation is not a
row event) and for insert-only tables.

Which write ids: :class:`WriteIdSet` — ``between(snapshot, A, B)`` is every write id ``w`` with
``A ≤ w ≤ B`` valid in the snapshot (committed: open and aborted ids never appear);
``of(ids)`` an explicit set (only the valid ones count). An event counts only when its
``currentTransaction`` is in the set and valid in the snapshot.

Planning (:func:`plan_changes`: which files may hold events of the set, per partition; no file
read) and reading (:func:`partition_events`: the events as ACID-shaped Arrow tables, delete
events carrying the deleted row's values, found wherever the row lives: a base, an older delta,
a minor-compacted delta, an original file) are separate; :func:`change_rows` turns
events into change rows (``_change_type``, ``_commit_version``, ``row__id``, partition columns,
columns), streamed in the documented order, optionally paired into updates by a key.

Order of change rows: by write id (``_commit_version``), then deletes before inserts within a
write id (as Hive applies them: a reader applies a write id's delete events to the rows before
it), then partition (path order), then ROW__ID (writeid, bucketid, rowid).

Insert-only tables: only inserts, attributed to the write id of the ``delta_w_w`` directory
their file is in; ``row__id`` is null (Hive gives insert-only rows no ROW__ID). A
minor-compacted insert-only ``delta_x_y`` (x < y) no longer says which write id wrote which row:
wanted ids in x..y raise :class:`EventsGone` with y + 1, as a ``base_N`` does with N + 1.

Hive 2 (ACID v1) tables are refused (their updates are in-place events, not delete + insert).

Memory: :func:`table_events` holds one partition's events at a time. :func:`change_rows`
streams: it indexes which files (and, for a minor-compacted delta, which stripes) hold the
events of each (write id, kind, partition) from names and the ``currentTransaction`` column,
then reads one such group at a time in the documented order (with ``--key``: one write id at
a time, its deletes and inserts pair up), so the change rows of the whole range are never
held; JSON lines and Parquet row groups are written as the groups come. Every stripe of a
minor-compacted delta is read once for the range: a compacted delete delta (any stripe may hold
every write id's events) is read while indexing, its events parked by write id in a local
temporary file until their write id comes (:class:`_Spill`), not read again for each write id
it holds; so are the stripes of a compacted insert delta that span several write ids.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from acidctl.acid.writeids import TxnList, WriteIdList
from acidctl.errors import InvalidInputError, RefusedError, StorageUnavailable, UsageError

if TYPE_CHECKING:
    import pyarrow as pa

    from acidctl.acid.acidstate import AcidState, DirListing
    from acidctl.acid.sourceplan import Source
    from acidctl.fs import TableFS

INSERT, DELETE = "insert", "delete"
PREIMAGE, POSTIMAGE = "update_preimage", "update_postimage"
#: the change row's own columns, before the partition columns and the table's columns
META_COLUMNS = ("_change_type", "_commit_version", "row__id")


class EventsGone(RefusedError):
    """Events of wanted write ids are no longer on disk (folded into a base, or into an
    insert-only minor-compacted delta): ``lowest`` is the lowest write id from which changes
    can still be derived (every partition's)."""

    def __init__(self, message: str, *, lowest: int, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.lowest = lowest


@dataclasses.dataclass(frozen=True)
class WriteIdSet:
    """The write ids whose events are wanted: ``lo ≤ w ≤ hi``, minus ``exclude``, and (when
    ``only`` is given) in ``only``. Validity in the snapshot is checked separately."""

    lo: int
    hi: int
    exclude: frozenset[int] = frozenset()
    only: frozenset[int] | None = None

    @classmethod
    def between(cls, snapshot: WriteIdList, lo: int, hi: int | None = None) -> WriteIdSet:
        """Every write id ``lo ≤ w ≤ hi`` (default: the snapshot's high-water mark) valid in
        ``snapshot``."""
        hi = snapshot.hwm if hi is None else hi
        return cls(lo, hi, frozenset(w for w in snapshot.exceptions if lo <= w <= hi))

    @classmethod
    def of(cls, ids: Iterable[int]) -> WriteIdSet:
        """Exactly these write ids (e.g. the ids valid now and not in an older snapshot)."""
        s = frozenset(int(w) for w in ids)
        return cls(min(s, default=1), max(s, default=0), only=s)

    def __contains__(self, w: object) -> bool:
        if not isinstance(w, int) or not self.lo <= w <= self.hi or w in self.exclude:
            return False
        return self.only is None or w in self.only

    @property
    def empty(self) -> bool:
        return self.hi < self.lo or (self.only is not None and not self.only)

    def lowest(self, snapshot: WriteIdList) -> int | None:
        """The smallest wanted id valid in ``snapshot`` (None: none)."""
        ids = sorted(self.only) if self.only is not None else range(self.lo, self.hi + 1)
        for w in ids:
            if w in self and snapshot.is_valid(w):
                return w
            if w > snapshot.hwm:
                break
        return None

    def overlaps(self, lo: int, hi: int) -> bool:
        """May a directory covering write ids lo..hi hold events of the set?"""
        if hi < self.lo or lo > self.hi:
            return False
        if self.only is not None:
            return any(lo <= w <= hi for w in self.only)
        return True

    def mask(self, write_ids: pa.ChunkedArray | pa.Array, snapshot: WriteIdList) -> pa.Array:
        """Element-wise: in the set and valid in ``snapshot``."""
        import pyarrow as pa
        import pyarrow.compute as pc

        from acidctl.acid.merge import valid_mask

        m = pc.and_(
            pc.greater_equal(write_ids, pa.scalar(self.lo, pa.int64())),
            pc.less_equal(write_ids, pa.scalar(self.hi, pa.int64())),
        )
        m = pc.and_(m, valid_mask(write_ids, snapshot))
        if self.exclude:
            m = pc.and_(m, pc.invert(pc.is_in(write_ids, value_set=pa.array(sorted(self.exclude), pa.int64()))))
        if self.only is not None:
            m = pc.and_(m, pc.is_in(write_ids, value_set=pa.array(sorted(self.only), pa.int64())))
        return pc.fill_null(m, False)


def wanted_range(snapshot: WriteIdList, lo: int, hi: int | None) -> WriteIdSet:
    """``--from-write-id lo [--to-write-id hi]`` checked against ``snapshot`` (usage errors,
    exit 2, worded as ``--as-of``'s): lo ≥ 1; lo ≤ hwm + 1 (hwm + 1 is a poll that finds
    nothing new yet, exit 0); hi (default: the high-water mark) ≤ hwm and ≥ lo."""
    if lo < 1:
        raise UsageError(f"--from-write-id must be ≥ 1, not {lo}")
    if lo > snapshot.hwm + 1:
        raise UsageError(
            f"--from-write-id {lo} is beyond the snapshot's high-water mark {snapshot.hwm}: the next write id "
            f"is {snapshot.hwm + 1}, from which nothing is new yet",
            hint="a poll passes the last write id it read + 1",
        )
    if hi is not None and hi > snapshot.hwm:
        raise UsageError(
            f"--to-write-id {hi} is beyond the snapshot's high-water mark {snapshot.hwm}",
            hint=f"use --to-write-id {snapshot.hwm} or lower, or leave it out for the high-water mark",
        )
    if hi is not None and hi < lo:
        raise UsageError(f"--to-write-id {hi} is below --from-write-id {lo}")
    return WriteIdSet.between(snapshot, lo, hi)


@dataclasses.dataclass
class PartitionPlan:
    """One partition's files that may hold events of the wanted write ids (from names alone)."""

    partition: str | None  # k=v[/k2=v2] (with the DB.TABLE/PART prefix), None: unpartitioned
    listing: DirListing
    state: AcidState
    inserts: list[Source] = dataclasses.field(default_factory=list)  # insert events of wanted ids
    deletes: list[Source] = dataclasses.field(default_factory=list)  # delete events of wanted ids
    lookup: list[Source] = dataclasses.field(default_factory=list)  # every insert source (deleted rows)
    mm_files: list[tuple[int, Any]] = dataclasses.field(default_factory=list)  # insert-only: (write id, MMFile)


def _dir_range(src: Source) -> tuple[int, int] | None:
    """(min, max) write id of the delta directory a source is in; None for a base or an
    original file in the partition itself."""
    from acidctl.acid.dirname import DeltaDir, is_partition_dir, parse_acid_dir

    # the nearest ACID directory above the file (a file may sit in a subdirectory of a delta,
    # e.g. HIVE_UNION_SUBDIR_n)
    for name in reversed(src.path.rstrip("/").split("/")[:-1][-3:]):
        if is_partition_dir(name):
            return None
        d = parse_acid_dir(name)
        if d is None:
            continue
        return (d.min_write_id, d.max_write_id) if isinstance(d, DeltaDir) else None
    return None


def _selected(partition: str | None, wanted: list[str] | None) -> bool:
    from acidctl.export import _partition_selected

    return _partition_selected(partition, wanted)


def _check_partitions_exist(tfs: TableFS, partitions: list[str] | None, listed: list[str | None]) -> None:
    from acidctl.export import check_partitions_exist

    check_partitions_exist(tfs, partitions, listed)


def plan_changes(
    tfs: TableFS,
    snapshot: WriteIdList,
    wanted: WriteIdSet,
    *,
    txns: TxnList | None = None,
    hive_version: int = 3,
    partitions: list[str] | None = None,
    partition_prefix: str | None = None,
    insert_only: bool = False,
) -> list[PartitionPlan]:
    """Per partition (listing order), the files that may hold events of ``wanted``. Raises
    :class:`EventsGone` when some partition's read set no longer holds events of a wanted
    write id (a ``base_N`` with N ≥ the lowest wanted valid id; insert-only: also a minor-
    compacted ``delta_x_y`` spanning one), naming the lowest write id from which changes can
    be derived in every partition; nothing is read before that check."""
    from acidctl.acid.acidstate import Kind, get_acid_state
    from acidctl.acid.layout import list_table
    from acidctl.acid.sourceplan import plan_sources

    if hive_version == 2:
        raise InvalidInputError(
            "changes reads Hive 3/4 (ACID v2) tables; a Hive 2 (ACID v1) table's updates are in-place events",
            hint="upgrade the table to Hive 3 (major compaction, acidctl upgrade-check), or use acidctl export",
        )
    lowest = wanted.lowest(snapshot)
    plans: list[PartitionPlan] = []
    gone: list[tuple[int, str]] = []  # (lowest derivable id, why) per partition
    listed: list[str | None] = []
    for listing in list_table(tfs):
        rel = "/".join(p for p in (partition_prefix, listing.partition) if p) or None
        listed.append(rel)
        if not _selected(rel, partitions):
            continue
        state = get_acid_state(listing, snapshot, txns=txns, hive_version=hive_version, insert_only=insert_only)
        state.require_snapshot()
        where = rel or "the table"
        if lowest is not None and state.base is not None:
            n = state.base.max_write_id or 0
            if n >= lowest:
                gone.append((n + 1, f"{where}: {state.base.name} holds the events of write ids up to {n}"))
        plan = PartitionPlan(rel, listing, state)
        plans.append(plan)
        if insert_only:
            from acidctl.mm.read import dir_files

            part = listing.fs_path or listing.path
            for c in state.deltas:
                if c.kind is Kind.DELETE_DELTA:
                    raise InvalidInputError(f"{c.path}: a delete_delta directory in an insert-only table (MM05)")
                lo, hi = c.min_write_id or 0, c.max_write_id or 0
                if not wanted.overlaps(lo, hi):
                    continue
                if lo != hi:
                    if lowest is not None and any(w in wanted and snapshot.is_valid(w) for w in range(lo, hi + 1)):
                        gone.append(
                            (hi + 1, f"{where}: {c.name} holds rows of write ids {lo}..{hi} without their write ids")
                        )
                    continue
                plan.mm_files.extend((lo, f) for f in dir_files(part, c) if f.size)
            continue
        if lowest is None:
            continue
        inserts, deletes = plan_sources(tfs, listing, state)
        plan.lookup = inserts
        for s in inserts:
            r = _dir_range(s)
            if r is not None and wanted.overlaps(*r):
                plan.inserts.append(s)
        for s in deletes:
            r = _dir_range(s)
            if r is not None and wanted.overlaps(*r):
                plan.deletes.append(s)
    _check_partitions_exist(tfs, partitions, listed)
    if gone:
        at, why = max(gone)
        if at > snapshot.hwm:  # every write id of the snapshot is in a base
            hint = f"--from-write-id {at} polls for what comes next"
        elif at > wanted.hi:  # the whole range is gone
            hint = f"use --from-write-id {at} (and --to-write-id {at} or higher)"
        else:
            hint = f"use --from-write-id {at}"
        raise EventsGone(
            f"the events of write ids below {at} are no longer on disk ({why}); "
            f"changes can be derived from write id {at} on",
            lowest=at,
            hint=hint,
        )
    return plans


@dataclasses.dataclass
class PartitionEvents:
    """One partition's events of the wanted write ids, as ACID-shaped tables (``operation``,
    ``originalTransaction``, ``bucket``, ``rowId``, ``currentTransaction``, ``row``):
    ``inserts`` the insert events, ``deletes`` the delete events with ``row`` holding the deleted
    row's values (ROW__ID = the deleted row's). ``row_type`` is the row's ORC type (pyorc) for
    rendering. Insert-only tables: ``inserts`` holds the rows with ``currentTransaction`` = the
    directory's write id and null ROW__ID columns; ``deletes`` is empty."""

    partition: str | None
    inserts: pa.Table
    deletes: pa.Table
    row_type: Any


def partition_events(
    tfs: TableFS,
    plan: PartitionPlan,
    snapshot: WriteIdList,
    wanted: WriteIdSet,
    *,
    mm: Any = None,
    with_deleted_rows: bool = True,
) -> PartitionEvents | None:
    """The events of ``wanted`` in one planned partition (None: the partition has none).
    ``mm``: the insert-only context (:class:`acidctl.mm.context.MMContext`) of an insert-only
    table. ``with_deleted_rows=False``: delete events keep their null ``row`` (no look-up of
    the deleted rows, for a caller that needs only their ROW__IDs)."""
    if mm is not None:
        return _mm_events(tfs, plan, mm)
    import pyarrow as pa
    import pyarrow.compute as pc

    from acidctl.acid.read import read_events, row_type

    def events(sources, op):
        out = []
        for s in sources:
            t = read_events(tfs, s)
            keep = pc.and_(pc.equal(t.column("operation"), op), wanted.mask(t.column("currentTransaction"), snapshot))
            t = t.filter(keep)
            if t.num_rows:
                out.append(t)
        return out

    ins = events(plan.inserts, 0)
    dels = events(plan.deletes, 2)
    if not ins and not dels:
        return None
    td = row_type(tfs, plan.lookup[-1]) if plan.lookup else None
    inserts = pa.concat_tables(ins, promote_options="permissive") if ins else None
    deletes = None
    if dels:
        deletes = pa.concat_tables(dels, promote_options="permissive")
        if with_deleted_rows:
            deletes = _with_deleted_rows(tfs, plan, deletes, snapshot)
        if td is None:  # only a base/originals hold rows (no insert file in the read set: impossible)
            raise InvalidInputError(f"{plan.partition or 'the table'}: delete events without any insert file")
    if inserts is None:
        inserts = deletes.schema.empty_table()  # type: ignore[union-attr]
    if deletes is None:
        deletes = inserts.schema.empty_table()
    if inserts.schema != deletes.schema:
        unified = pa.unify_schemas([inserts.schema, deletes.schema], promote_options="permissive")
        inserts, deletes = inserts.cast(unified), deletes.cast(unified)
    return PartitionEvents(plan.partition, inserts, deletes, td)


def _with_deleted_rows(
    tfs: TableFS, plan: PartitionPlan, deletes: pa.Table, snapshot: WriteIdList, *, files: _OpenFiles | None = None
) -> pa.Table:
    """``deletes`` (delete events) with ``row`` = the values of the row each one deletes, looked
    up among the valid insert events of the partition's read set: only the files of the
    targets' bucket ids whose names allow the targets' write ids (a delete event goes into the
    bucket file of its target's bucket id, orc-acid-files.md). ``files``: keep the ORC files
    open and their last stripe read across calls (:class:`_OpenFiles`)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from acidctl.acid import merge
    from acidctl.acid.read import read_events
    from acidctl.orc import bucketcodec

    ot = deletes.column("originalTransaction").to_numpy()
    bk = deletes.column("bucket").to_numpy()
    rid = deletes.column("rowId").to_numpy()
    _, bucket_ids, _ = bucketcodec.decode_fields(np.asarray(bk))
    want_buckets = set(int(b) for b in bucket_ids)
    want_ot = sorted(set(int(o) for o in ot))
    found: dict[tuple[int, int, int], tuple[int, int]] = {}  # key -> (table index, row)
    tables: list[pa.Table] = []
    targets = sorted(set(zip(ot.tolist(), bk.tolist(), rid.tolist())))
    ot_set = pa.array(want_ot, pa.int64())
    rid_set = pa.array(sorted(set(int(r) for r in rid)), pa.int64())
    for s in plan.lookup:
        if s.bucket not in want_buckets:
            continue
        r = _dir_range(s)
        if r is not None and not any(r[0] <= o <= r[1] for o in want_ot):
            continue

        def keep(t: pa.Table) -> pa.Array:
            return pc.and_(
                pc.and_(pc.equal(t.column("operation"), 0), merge.valid_mask(t.column("currentTransaction"), snapshot)),
                pc.and_(
                    pc.is_in(t.column("originalTransaction"), value_set=ot_set),
                    pc.is_in(t.column("rowId"), value_set=rid_set),
                ),
            )

        if s.raw:  # original files: synthetic ROW__IDs (read.read_events)
            t = read_events(tfs, s)
            t = t.filter(keep(t))
        else:
            t = _matching_stripes(tfs, s, keep, targets=targets, files=files)
        if not t.num_rows:
            continue
        i = len(tables)
        tables.append(t)
        for j, k in enumerate(
            zip(
                t.column("originalTransaction").to_pylist(),
                t.column("bucket").to_pylist(),
                t.column("rowId").to_pylist(),
            )
        ):
            found.setdefault(k, (i, j))
    pieces = []
    for k in zip(ot.tolist(), bk.tolist(), rid.tolist()):
        at = found.get(k)
        if at is None:
            raise InvalidInputError(
                f"{plan.partition or 'the table'}: a delete event points at ROW__ID "
                f"{{writeid {k[0]}, bucketid {k[1]}, rowid {k[2]}}}, which no file of the snapshot holds"
            )
        pieces.append(at)
    rows = pa.concat_tables(tables, promote_options="permissive").column("row") if tables else None
    offsets = np.cumsum([0] + [t.num_rows for t in tables])
    idx = pa.array([int(offsets[i]) + j for i, j in pieces], pa.int64())
    taken = rows.take(idx) if rows is not None else pa.nulls(0)
    col = deletes.schema.get_field_index("row")
    return deletes.set_column(col, pa.field("row", taken.type), taken)


def _deleted_rows(
    tfs: TableFS, plan: PartitionPlan, deletes: pa.Table, snapshot: WriteIdList, *, files: _OpenFiles | None = None
) -> pa.Table:
    """:func:`_with_deleted_rows` for ``changes``' groups (and spilled stripes)."""
    if not plan.lookup:  # only a base/originals hold rows (no insert file in the read set: impossible)
        raise InvalidInputError(f"{plan.partition or 'the table'}: delete events without any insert file")
    return _with_deleted_rows(tfs, plan, deletes, snapshot, files=files)


def _stripes_holding(f: Any, targets: list[tuple[int, int, int]]) -> list[int] | None:
    """The stripes of an open ACID file whose key range can hold one of ``targets`` (sorted
    ROW__IDs), from ``hive.acid.key.index`` (each stripe's last key; the file is sorted by
    ROW__ID, orc-acid-files.md): stripe i holds the keys after stripe i-1's last up to its own.
    None when the index is missing, malformed or does not name every stripe (then every
    stripe's key columns are read)."""
    import bisect

    from acidctl.orc.acidfile import KEY_INDEX, parse_key_index

    meta = f._arrow_file().metadata or {}
    raw = meta.get(KEY_INDEX.encode())
    try:
        index = parse_key_index(raw.decode()) if raw is not None else None
    except (UnicodeDecodeError, ValueError):
        return None
    if index is None or len(index) != f.num_stripes():
        return None
    out = []
    prev: tuple[int, int, int] | None = None
    for i, last in enumerate(index):
        j = bisect.bisect_right(targets, prev) if prev is not None else 0
        if j < len(targets) and targets[j] <= last:
            out.append(i)
        prev = last
    return out


class _OpenFiles:
    """ORC files kept open across the look-ups of one compacted delete delta's deleted rows,
    done stripe by stripe of it (its events in ROW__ID order, so the look-ups move forward
    through each insert file): each file is opened once, and the last stripe read of each (its
    key columns, and its rows when read) is kept, so a stripe that holds the targets of
    several delete stripes is read once. Memory: one stripe per open file (the insert files of
    the targets' buckets in one partition). :meth:`close` closes them."""

    def __init__(self, tfs: TableFS) -> None:
        self.tfs = tfs
        self._open: dict[str, Any] = {}
        self._last: dict[str, tuple[int, Any, Any]] = {}  # path -> (stripe, key columns, rows or None)

    def open(self, path: str) -> Any:
        from acidctl.orc.reader import OrcFile

        f = self._open.get(path)
        if f is None:
            f = self._open[path] = OrcFile(self.tfs, path, arrow_footer=True)
        return f

    def stripe(self, f: Any, i: int, *, keys: bool) -> pa.Table:
        """Stripe ``i`` of ``f``: its five key columns (``keys``) or all of it, normalised."""
        import pyarrow as pa

        from acidctl.acid import merge
        from acidctl.orc.acidfile import ACID_NAMES

        at, k, rows = self._last.get(f.path, (-1, None, None))
        if at != i:
            k = rows = None
        if keys:
            if k is None:
                cols = f.top_names()[:5]
                k = pa.Table.from_batches([f.read_stripe_arrow(i, columns=cols)]).rename_columns(list(ACID_NAMES[:5]))
            self._last[f.path] = (i, k, rows)
            return k
        if rows is None:
            rows = merge.normalise(pa.Table.from_batches([f.read_stripe_arrow(i)]))
        self._last[f.path] = (i, k, rows)
        return rows

    def close(self) -> None:
        for f in self._open.values():
            f.close()
        self._open, self._last = {}, {}


def _matching_stripes(
    tfs: TableFS,
    src: Source,
    keep,
    *,
    targets: list[tuple[int, int, int]] | None = None,
    files: _OpenFiles | None = None,
) -> pa.Table:
    """The events of an ACID file for which ``keep`` (a mask function over an ACID table) is
    true: each stripe's key columns are read first, its rows only when a key matches. With
    ``targets`` (the sorted ROW__IDs looked for), only the stripes whose key range can hold
    one are read at all (:func:`_stripes_holding`). ``files``: the file stays open there, its
    last stripe kept (:class:`_OpenFiles`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = []
    own = files is None
    cache = _OpenFiles(tfs) if files is None else files
    try:
        f = cache.open(src.path)
        stripes = _stripes_holding(f, targets) if targets else None
        for i in range(f.num_stripes()) if stripes is None else stripes:
            mask = keep(cache.stripe(f, i, keys=True))
            if not pc.any(mask).as_py():
                continue
            out.append(cache.stripe(f, i, keys=False).filter(mask))
    finally:
        if own:
            cache.close()
    if not out:
        return pa.table({n: pa.array([], pa.int64()) for n in ("originalTransaction", "bucket", "rowId")})
    return pa.concat_tables(out, promote_options="permissive")


def _mm_events(tfs: TableFS, plan: PartitionPlan, mm: Any) -> PartitionEvents | None:
    """Insert-only: the rows of the wanted write ids' delta files, in file order."""
    from acidctl.formats.hivetypes import orc_struct
    from acidctl.mm.read import infer_columns

    if not plan.mm_files:
        return None
    columns = mm.columns or infer_columns(tfs, [f for _, f in plan.mm_files], mm.storage)
    row_td = orc_struct(columns)
    inserts = _mm_rows(tfs, plan.mm_files, row_td, mm.storage)
    if inserts is None:
        return None
    return PartitionEvents(plan.partition, inserts, inserts.schema.empty_table(), row_td)


def _mm_rows(tfs: TableFS, files: list[tuple[int, Any]], row_td: Any, storage: Any) -> pa.Table | None:
    """Insert-only: the rows of ``files`` ((write id, MMFile) pairs) as insert events with that
    write id and null ROW__ID columns, in file order (None: no rows)."""
    import pyarrow as pa

    from acidctl.formats.files import iter_tables

    parts = []
    for w, f in files:
        for t in iter_tables(tfs, f.path, storage, row_td):
            n = t.num_rows
            if not n:
                continue
            row = pa.StructArray.from_arrays(
                [t.column(i).combine_chunks() for i in range(t.num_columns)], fields=list(t.schema)
            )
            parts.append(
                pa.table(
                    {
                        "operation": pa.array([0] * n, pa.int32()),
                        "originalTransaction": pa.nulls(n, pa.int64()),
                        "bucket": pa.nulls(n, pa.int32()),
                        "rowId": pa.nulls(n, pa.int64()),
                        "currentTransaction": pa.array([w] * n, pa.int64()),
                        "row": row,
                    }
                )
            )
    return pa.concat_tables(parts, promote_options="permissive") if parts else None


def table_events(
    tfs: TableFS,
    snapshot: WriteIdList,
    wanted: WriteIdSet,
    *,
    txns: TxnList | None = None,
    hive_version: int = 3,
    partitions: list[str] | None = None,
    partition_prefix: str | None = None,
    mm: Any = None,
    with_deleted_rows: bool = True,
) -> Iterator[PartitionEvents]:
    """:func:`plan_changes` (refusing before anything is read) then :func:`partition_events`
    for each partition that has events of ``wanted``, in listing order. Memory: one
    partition's events of ``wanted`` at a time (plus, for the deleted rows' values, the
    matching rows of the files of the deleted rows' buckets)."""
    plans = plan_changes(
        tfs,
        snapshot,
        wanted,
        txns=txns,
        hive_version=hive_version,
        partitions=partitions,
        partition_prefix=partition_prefix,
        insert_only=mm is not None,
    )
    for plan in plans:
        ev = partition_events(tfs, plan, snapshot, wanted, mm=mm, with_deleted_rows=with_deleted_rows)
        if ev is not None:
            yield ev


# -- change rows, streamed -----------------------------------------------------------------


def _row_id_type():
    import pyarrow as pa

    return pa.struct([("writeid", pa.int64()), ("bucketid", pa.int32()), ("rowid", pa.int64())])


@dataclasses.dataclass
class _Piece:
    """Where one group's events are: a source file, and which of its stripes hold events of
    the group's write id (None: every stripe; a raw file is always read whole); or, for a
    minor-compacted delete delta, the record batches of the :class:`_Spill` holding them."""

    source: Source
    stripes: list[int] | None = None
    spilled: list[tuple[int, int]] | None = None  # the _Spill's (file, batch) of this source holding them


#: delete events whose deleted rows are looked up at a time when a compacted delete delta is
#: spilled (:meth:`_Spill.add`)
FILL_ROWS = 1 << 16


class _Spill:
    """The events of minor-compacted deltas' stripes that hold several wanted write ids, read
    once for the whole range: a compacted delete delta (``delete_delta_x_y``, x < y) is sorted
    by the deleted rows' ROW__IDs (orc-acid-files.md), so any stripe may hold events of every
    write id in x..y (every stripe of it comes here); a compacted insert delta is sorted by
    write id, so only a stripe spanning write ids does. The change rows come write id by
    write id: such a stripe is read once, its events of the wanted write ids split by write id
    into a local temporary Arrow IPC file (one record batch per stripe and write id; LZ4 when
    Arrow has it), which each write id's group then reads back memory-mapped — memory stays one
    stripe, and the file is read once instead of once per write id it holds. Removed by
    :meth:`close` (and when the object is collected)."""

    def __init__(self) -> None:
        self.dir: str | None = None
        self._paths: dict[str, list[str]] = {}  # source path -> its spill files
        self._n = 0
        self._readers: dict[str, Any] = {}  # spill file -> open IPC reader
        self._maps: list[Any] = []
        self._finalizer: Any = None

    def _new_file(self) -> str:
        import os
        import shutil
        import tempfile
        import weakref

        if self.dir is None:
            try:
                self.dir = tempfile.mkdtemp(prefix="acidctl-changes-")
            except OSError as e:
                raise self._failed(e, tempfile.gettempdir()) from None
            self._finalizer = weakref.finalize(self, shutil.rmtree, self.dir, True)
        self._n += 1
        return os.path.join(self.dir, f"{self._n:06d}.arrow")

    @staticmethod
    def _failed(e: OSError, where: str) -> StorageUnavailable:
        """A temporary file that cannot be written (no room, no such directory): one line,
        exit 5, naming where."""
        return StorageUnavailable(
            f"cannot write changes' temporary file in {where}: {e.strerror or e}",
            hint="point TMPDIR at a local directory with room for the compacted delete events of the range",
        )

    def add(self, src: Source, f: Any, stripes: Iterable[int], keep, fill=None) -> dict[int, list[tuple[int, int]]]:
        """Read ``stripes`` of ``src`` (open as ``f``, an :class:`~acidctl.orc.reader.OrcFile`)
        whole, one at a time, keep the events ``keep`` (a mask function over an ACID table)
        selects, ``fill`` them (delete events: the deleted rows' values), spill them by
        ``currentTransaction``; returns {write id: [(spill file, batch)]} (a new spill file
        when the filled rows' type changes, e.g. rows of files before and after an ALTER
        TABLE ADD COLUMNS)."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        from acidctl.acid import merge

        out: dict[int, list[tuple[int, int]]] = {}
        paths = self._paths.setdefault(src.path, [])
        writer = None
        schema = None
        n = 0
        opts = pa.ipc.IpcWriteOptions(compression="lz4" if pa.Codec.is_available("lz4_frame") else None)

        def close() -> None:
            if writer is not None:
                try:
                    writer.close()
                except OSError as e:
                    raise self._failed(e, self.dir or "") from None

        try:
            for i in stripes:
                t = merge.normalise(pa.Table.from_batches([f.read_stripe_arrow(i)]))
                t = t.filter(keep(t))
                if not t.num_rows:
                    continue
                # filled a slice at a time (a stripe may hold millions of delete events: memory
                # stays a slice's deleted rows; the slices move forward through the files)
                step = FILL_ROWS if fill is not None else t.num_rows
                for piece in (t.slice(k, step) for k in range(0, t.num_rows, step)):
                    if fill is not None:
                        piece = fill(piece)
                    # by write id, stable (ROW__ID order within a write id kept)
                    piece = piece.take(pc.sort_indices(piece.column("currentTransaction")))
                    ct = piece.column("currentTransaction").to_numpy()
                    cuts = np.flatnonzero(np.diff(ct)) + 1
                    try:
                        if writer is None or schema != piece.schema:
                            close()
                            paths.append(self._new_file())
                            schema = piece.schema
                            writer = pa.ipc.new_file(paths[-1], schema, options=opts)
                            n = 0
                        for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), len(ct)]):
                            for batch in piece.slice(a, b - a).combine_chunks().to_batches():
                                writer.write_batch(batch)
                                out.setdefault(int(ct[a]), []).append((len(paths) - 1, n))
                                n += 1
                    except OSError as e:
                        raise self._failed(e, self.dir or "") from None
        finally:
            close()
        return out

    def batches(self, src: Source, refs: list[tuple[int, int]]) -> list[pa.RecordBatch]:
        import pyarrow as pa

        out = []
        for k, i in refs:
            path = self._paths[src.path][k]
            reader = self._readers.get(path)
            if reader is None:
                m = pa.memory_map(path)
                self._maps.append(m)
                reader = self._readers[path] = pa.ipc.open_file(m)
            out.append(reader.get_batch(i))
        return out

    def close(self) -> None:
        for m in self._maps:
            m.close()
        self._maps, self._readers = [], {}
        if self._finalizer is not None:
            self._finalizer()


@dataclasses.dataclass
class _Group:
    """The events of one write id, one kind and one partition: the unit read at a time."""

    write_id: int
    rank: int  # 0: deletes, 1: inserts (the documented order)
    pidx: int  # the partition's index in the plan (listing order)
    pieces: list[_Piece] = dataclasses.field(default_factory=list)
    mm_files: list[Any] = dataclasses.field(default_factory=list)


def _index_groups(
    tfs: TableFS, plans: list[PartitionPlan], snapshot: WriteIdList, wanted: WriteIdSet, spill: _Spill
) -> list[_Group]:
    """Every (write id, kind, partition) that has events of ``wanted``, in the documented
    order, with the files (and stripes) holding them. Read from names alone except for a
    minor-compacted ``delta_x_y`` (x < y) or a raw file. Every stripe is read once for the
    range: a compacted delete delta is sorted by the deleted rows' ROW__IDs, so any stripe may
    hold every write id's events: it is read here and its events of ``wanted`` kept in
    ``spill`` (:class:`_Spill`) by write id. A compacted insert delta is sorted by write id:
    its ``currentTransaction`` column is read here, stripe by stripe; a stripe of one wanted
    write id is read when that write id's group comes, one holding several is read here and
    spilled."""
    import pyarrow.compute as pc

    from acidctl.acid.read import read_events
    from acidctl.orc.reader import OrcFile

    groups: dict[tuple[int, int, int], _Group] = {}

    def group(w: int, rank: int, pidx: int) -> _Group:
        g = groups.get((w, rank, pidx))
        if g is None:
            g = groups[(w, rank, pidx)] = _Group(w, rank, pidx)
        return g

    def ids_of(col) -> list[int]:
        col = col.filter(wanted.mask(col, snapshot))
        return sorted(int(w) for w in pc.unique(col).to_pylist())

    def deleted_rows(plan: PartitionPlan, files: _OpenFiles):
        def fill(t):
            return _deleted_rows(tfs, plan, t, snapshot, files=files)

        return fill

    def events_of(op: int):
        def keep(t):
            return pc.and_(pc.equal(t.column("operation"), op), wanted.mask(t.column("currentTransaction"), snapshot))

        return keep

    for pidx, plan in enumerate(plans):
        for w, f in plan.mm_files:
            group(w, 1, pidx).mm_files.append(f)
        for rank, sources in ((0, plan.deletes), (1, plan.inserts)):
            for s in sources:
                r = _dir_range(s)
                if r is not None and r[0] == r[1] and not s.raw:  # one write id's delta
                    if r[0] in wanted and snapshot.is_valid(r[0]):
                        group(r[0], rank, pidx).pieces.append(_Piece(s))
                    continue
                if s.raw:
                    for w in ids_of(read_events(tfs, s, columns=None).column("currentTransaction")):
                        group(w, rank, pidx).pieces.append(_Piece(s))
                    continue
                if rank == 0:  # a minor-compacted delete delta: read once, spilled by write id with
                    # the deleted rows' values, looked up stripe by stripe of it (in ROW__ID order:
                    # each insert file opened once, each of its stripes read once)
                    files = _OpenFiles(tfs)
                    try:
                        with OrcFile(tfs, s.path, arrow_footer=True) as f:
                            spilled = spill.add(
                                s, f, range(f.num_stripes()), events_of(2), fill=deleted_rows(plan, files)
                            )
                    finally:
                        files.close()
                    for w, at in spilled.items():
                        group(w, rank, pidx).pieces.append(_Piece(s, spilled=at))
                    continue
                # a compacted insert delta is sorted by write id: a stripe of one wanted write id
                # is read when its group comes; one holding several is read now and spilled
                single: dict[int, list[int]] = {}
                with OrcFile(tfs, s.path, arrow_footer=True) as f:
                    ct = f.top_names()[4]
                    mixed = []
                    for i in range(f.num_stripes()):
                        ids = ids_of(f.read_stripe_arrow(i, columns=[ct]).column(0))
                        if len(ids) == 1:
                            single.setdefault(ids[0], []).append(i)
                        elif ids:
                            mixed.append(i)
                    spilled = spill.add(s, f, mixed, events_of(0)) if mixed else {}
                for w in sorted(single.keys() | spilled.keys()):
                    if w in single:
                        group(w, rank, pidx).pieces.append(_Piece(s, single[w]))
                    if w in spilled:
                        group(w, rank, pidx).pieces.append(_Piece(s, spilled=spilled[w]))
    return [groups[k] for k in sorted(groups)]


def _group_events(tfs: TableFS, g: _Group, spill: _Spill, fill=None) -> pa.Table | None:
    """The group's events (ACID-shaped), in ROW__ID order (stable: file order among equal keys);
    ``fill`` completes the events read from files here (delete events: the deleted rows'
    values), the spilled ones were completed when spilled."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from acidctl.acid import merge
    from acidctl.acid.read import read_events
    from acidctl.orc.reader import OrcFile

    op = 2 if g.rank == 0 else 0
    out = []

    def keep(t: pa.Table) -> None:
        t = t.filter(pc.and_(pc.equal(t.column("operation"), op), pc.equal(t.column("currentTransaction"), g.write_id)))
        if t.num_rows:
            out.append(t)

    for piece in g.pieces:
        if piece.spilled is not None:
            continue
        if piece.source.raw:
            keep(read_events(tfs, piece.source))
            continue
        with OrcFile(tfs, piece.source.path, arrow_footer=True) as f:
            for i in range(f.num_stripes()) if piece.stripes is None else piece.stripes:
                keep(merge.normalise(pa.Table.from_batches([f.read_stripe_arrow(i)])))
    if out and fill is not None:
        out = [fill(pa.concat_tables(out, promote_options="permissive"))]
    for piece in g.pieces:
        if piece.spilled is not None:  # batches of several spill files may differ in row type
            for b in spill.batches(piece.source, piece.spilled):
                keep(pa.Table.from_batches([b]))
    if not out:
        return None
    t = pa.concat_tables(out, promote_options="permissive")
    return t.sort_by([("originalTransaction", "ascending"), ("bucket", "ascending"), ("rowId", "ascending")])


@dataclasses.dataclass
class ChangeRows:
    """The change rows of a range, streamed: :meth:`tables` yields Arrow tables
    (:data:`META_COLUMNS`, partition columns as strings, the table's columns) in the documented
    order, reading one group at a time; ``fields`` is each column's ORC type (pyorc), for the
    ``dump --merged`` renderer; ``counts`` (rows per change type) and ``rows`` grow as the
    tables are consumed.

    Memory: without ``key``, one (write id, kind, partition) group's events at a time (plus the
    stripe being read, and for deletes the matching rows of the files of the deleted rows'
    buckets); with ``key``, one write id's events of every partition (the pairing needs a write
    id's deletes and inserts together). Never the whole range. The events of compacted deltas'
    stripes that hold several write ids wait in a local temporary file (:class:`_Spill`) until
    their write id comes; :meth:`tables` is one pass, which removes it at its end."""

    fields: list[tuple[str, Any]]
    empty_schema: pa.Schema
    groups: list[_Group]
    counts: dict[str, int]
    _read: Any  # _Group -> pa.Table | None (change rows of the group, with "__part")
    _key: list[str] | None = None
    _spill: _Spill | None = None

    @property
    def rows(self) -> int:
        return sum(self.counts.values())

    def tables(self) -> Iterator[pa.Table]:
        if self._spill is None:
            yield from self._tables()
            return
        try:
            yield from self._tables()
        finally:
            self._spill.close()

    def _tables(self) -> Iterator[pa.Table]:
        import pyarrow as pa
        import pyarrow.compute as pc

        names = [n for n, _ in self.fields]

        def done(t: pa.Table) -> pa.Table:
            t = t.select([n for n in names if n in t.column_names])
            if t.num_rows:
                for d in pc.value_counts(t.column("_change_type")).to_pylist():
                    self.counts[d["values"]] += d["counts"]
            return t

        if not self._key:
            for g in self.groups:
                t = self._read(g)
                if t is not None:
                    yield done(t)
            return
        at = 0
        while at < len(self.groups):
            w = self.groups[at].write_id
            pieces = []
            while at < len(self.groups) and self.groups[at].write_id == w:
                t = self._read(self.groups[at])
                if t is not None:
                    pieces.append(t)
                at += 1
            if pieces:
                t = pa.concat_tables(pieces, promote_options="permissive")
                yield done(_pair(t, self._key + ["__part"]))


def change_rows(
    tfs: TableFS,
    snapshot: WriteIdList,
    wanted: WriteIdSet,
    *,
    txns: TxnList | None = None,
    hive_version: int = 3,
    partitions: list[str] | None = None,
    partition_prefix: str | None = None,
    mm: Any = None,
    key: list[str] | None = None,
    partition_keys: list[str] | None = None,
) -> ChangeRows:
    """The change rows of ``wanted``, streamed (:class:`ChangeRows`), in the documented order
    (write id, deletes before inserts, partition in listing order, ROW__ID). Plans first
    (:func:`plan_changes`: :class:`EventsGone` before anything is read) and checks ``key``
    (column names, table or partition columns, any letter case); the events are read as the
    rows are consumed. With ``key``, within one write id a delete and an insert with equal key
    values become ``update_preimage`` / ``update_postimage``: the n-th delete and the n-th
    insert of a key in the same partition (in that order) pair up, the rest stay delete /
    insert (a Hive UPDATE never moves a row to another partition)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyorc

    from acidctl.acid.read import row_type
    from acidctl.merged import partition_values

    plans = plan_changes(
        tfs,
        snapshot,
        wanted,
        txns=txns,
        hive_version=hive_version,
        partitions=partitions,
        partition_prefix=partition_prefix,
        insert_only=mm is not None,
    )
    spill = _Spill()
    groups = _index_groups(tfs, plans, snapshot, wanted, spill)
    rid_t = _row_id_type()
    rid_td = pyorc.Struct(writeid=pyorc.BigInt(), bucketid=pyorc.Int(), rowid=pyorc.BigInt())
    pkeys = list(partition_keys or [])
    with_events = sorted({g.pidx for g in groups})
    for pidx in with_events:
        for k, _ in partition_values(plans[pidx].partition):
            if k not in pkeys:
                pkeys.append(k)
    row_tds: dict[int, Any] = {}  # the row's ORC type per partition (index) with events

    def row_td(pidx: int) -> Any:
        if pidx not in row_tds:
            plan = plans[pidx]
            if mm is not None:
                from acidctl.formats.hivetypes import orc_struct
                from acidctl.mm.read import infer_columns

                cols = mm.columns or infer_columns(tfs, [f for _, f in plan.mm_files], mm.storage)
                row_tds[pidx] = orc_struct(cols)
            else:
                row_tds[pidx] = row_type(tfs, plan.lookup[-1]) if plan.lookup else None
        return row_tds[pidx]

    # the columns: the row type of the last partition with events (none: of the last one)
    order = list(reversed(with_events)) or list(reversed(range(len(plans))))
    td = next((t for t in (row_td(p) for p in order) if t is not None), None)
    row_fields = list(td.fields.items()) if td is not None else []
    fields = (
        [("_change_type", pyorc.String()), ("_commit_version", pyorc.BigInt()), ("row__id", rid_td)]
        + [(k, pyorc.String()) for k in pkeys]
        + row_fields
    )
    key_cols = _key_columns(key, [n for n, _ in fields]) if key and (td is not None or groups) else None
    empty = pa.schema(
        [("_change_type", pa.string()), ("_commit_version", pa.int64()), ("row__id", rid_t)]
        + [(k, pa.string()) for k in pkeys]
    )
    if not groups:
        fields = fields[: len(empty)]

    def read(g: _Group) -> pa.Table | None:
        plan = plans[g.pidx]
        if mm is not None:
            t = _mm_rows(tfs, [(g.write_id, f) for f in g.mm_files], row_td(g.pidx), mm.storage)
        else:
            fill = (lambda t: _deleted_rows(tfs, plan, t, snapshot)) if g.rank == 0 else None
            t = _group_events(tfs, g, spill, fill)
        if t is None:
            return None
        n = t.num_rows
        pvals = dict(partition_values(plan.partition))
        row = t.column("row").combine_chunks()
        rid = t.column("rowId").combine_chunks()
        rowid = pa.StructArray.from_arrays(
            [
                t.column("originalTransaction").combine_chunks().cast(pa.int64()),
                t.column("bucket").combine_chunks().cast(pa.int32()),
                rid.cast(pa.int64()),
            ],
            fields=list(rid_t),
            mask=pc.is_null(rid) if rid.null_count else None,
        )
        cols: dict[str, Any] = {
            "_change_type": pa.array([DELETE if g.rank == 0 else INSERT] * n, pa.string()),
            "_commit_version": t.column("currentTransaction").combine_chunks().cast(pa.int64()),
            "row__id": rowid,
        }
        for k in pkeys:
            cols[k] = pa.array([pvals.get(k)] * n, pa.string())
        for i, (name, _) in enumerate(row_fields[: row.type.num_fields]):
            cols[name] = row.field(i)
        cols["__part"] = pa.array([g.pidx] * n, pa.int32())
        return pa.table(cols)

    counts = {k: 0 for k in (INSERT, DELETE, PREIMAGE, POSTIMAGE)}
    return ChangeRows(fields, empty, groups, counts, read, key_cols, spill)


def _coalesced(tables: Iterable[pa.Table], rows: int) -> Iterator[pa.Table]:
    """``tables`` joined into tables of at least ``rows`` rows (but the last), so that tiny
    groups are rendered or written together."""
    import pyarrow as pa

    buf: list[pa.Table] = []
    n = 0
    for t in tables:
        buf.append(t)
        n += t.num_rows
        if n >= rows:
            yield pa.concat_tables(buf, promote_options="permissive") if len(buf) > 1 else buf[0]
            buf, n = [], 0
    if n:
        yield pa.concat_tables(buf, promote_options="permissive") if len(buf) > 1 else buf[0]


def _key_columns(key: list[str], names: list[str]) -> list[str]:
    lower = {n.lower(): n for n in names if n not in META_COLUMNS}
    out = []
    for k in key:
        k = k.strip()
        if not k:
            continue
        if k.lower() not in lower:
            raise UsageError(f"--key {k}: no such column (columns: {', '.join(lower.values())})")
        out.append(lower[k.lower()])
    if not out:
        raise UsageError("--key needs at least one column name")
    return out


def _pair(table: pa.Table, key: list[str]) -> pa.Table:
    """Within each write id, the n-th delete and the n-th insert with equal ``key`` values (in
    the table's order; ``key`` includes the partition's index) become update_preimage /
    update_postimage."""
    import pyarrow as pa

    kinds = table.column("_change_type").to_pylist()
    wids = table.column("_commit_version").to_pylist()
    keys = list(zip(*(table.column(k).to_pylist() for k in key)))
    pending: dict[tuple, list[int]] = {}
    for i, (kind, w, k) in enumerate(zip(kinds, wids, keys)):
        if kind == DELETE:
            pending.setdefault((w, k), []).append(i)
    for i, (kind, w, k) in enumerate(zip(kinds, wids, keys)):
        if kind == INSERT:
            waiting = pending.get((w, k))
            if waiting:
                kinds[waiting.pop(0)] = PREIMAGE
                kinds[i] = POSTIMAGE
    return table.set_column(0, "_change_type", pa.array(kinds, pa.string()))


def render_lines(rows: ChangeRows) -> Iterator[bytes]:
    """JSON lines of the change rows, rendered as ``dump --merged`` renders rows, as they are
    read."""
    from acidctl.orc import render
    from acidctl.orc.lines import SLICE_ROWS

    for t in _coalesced(rows.tables(), SLICE_ROWS):
        for batch in t.to_batches(max_chunksize=SLICE_ROWS):
            if batch.num_rows:
                # the same bytes as lines_bytes(render_batch(..., terminator="\n")), laid out by one take
                yield render.render_lines(batch, rows.fields)


#: rows per Parquet file written by :func:`write_parquet`
PARQUET_FILE_ROWS = 1 << 20
#: rows per Parquet row group (what :func:`write_parquet` holds before writing)
PARQUET_GROUP_ROWS = 1 << 16


def _conform(t: pa.Table, schema: pa.Schema) -> pa.Table:
    """``t`` with ``schema``'s columns (a missing one all null), cast to its types."""
    import pyarrow as pa

    extra = [n for n in t.column_names if schema.get_field_index(n) < 0]
    if extra:
        raise InvalidInputError(
            f"the change rows cannot be written as one Parquet schema: partitions differ in columns ({', '.join(extra)})"
        )
    if t.schema == schema:
        return t
    cols = [t.column(f.name) if f.name in t.column_names else pa.nulls(t.num_rows, f.type) for f in schema]
    try:
        return pa.table(cols, names=schema.names).cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise InvalidInputError(f"the change rows cannot be written as one Parquet schema: {e}") from None


def write_parquet(rows: ChangeRows, dest_url: str, *, dest_options: dict | None = None, dry_run: bool = False) -> dict:
    """The change rows as Parquet files ``DEST/part-NNNNN.parquet`` (at most
    :data:`PARQUET_FILE_ROWS` rows each, in the change order: file name order, then row
    order), written in row groups of :data:`PARQUET_GROUP_ROWS` as the rows are read, staged
    beside DEST and published with one rename as ``export`` publishes
    (:func:`acidctl.export.published`; DEST must not exist or be empty). The schema is the
    first rows'; later rows are conformed to it. Each file is read back (row count) before
    publication. Returns what was written. ``dry_run``: the same checks (DEST, the events still on
    disk, the rows conformed to one schema) and the planned files with their row counts (bytes
    null), nothing written."""
    import posixpath

    import pyarrow as pa
    import pyarrow.parquet as pq

    from acidctl.errors import WriteVerificationFailed
    from acidctl.export import prepare_dest, published
    from acidctl.fs import TableFS

    dest = TableFS(dest_url, dest_options)
    try:
        final, staging = prepare_dest(dest)  # checks DEST, writes nothing
    except RefusedError:  # export's wording names export
        raise RefusedError(
            f"{dest.display(dest.root.rstrip('/'))} exists and is not empty; changes --to parquet never overwrites",
            hint="choose a new DEST or remove the old one first",
        ) from None
    outputs: list[dict] = []
    schema: pa.Schema | None = None
    if dry_run:
        total = 0
        for t in rows.tables():
            schema = schema or t.schema
            _conform(t, schema)
            total += t.num_rows
        for i, start in enumerate(range(0, max(total, 1), PARQUET_FILE_ROWS)):
            n = min(PARQUET_FILE_ROWS, total - start)
            outputs.append({"file": f"part-{i:05d}.parquet", "rows": n, "bytes": None})
        return {
            "dest": dest.display(final),
            "format": "parquet",
            "publish": "atomic" if dest.atomic_rename else "non-atomic",
            "dry_run": True,
            "files": len(outputs),
            "outputs": outputs,
        }

    class _File:
        def __init__(self, schema: pa.Schema):
            self.name = f"part-{len(outputs):05d}.parquet"
            self.path = posixpath.join(staging, self.name)
            self.rows = 0
            self.f = dest.open(self.path, "wb")
            try:
                self.w = pq.ParquetWriter(self.f, schema)
            except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:  # e.g. a uniontype column
                self.f.close()
                raise InvalidInputError(f"the change rows cannot be written as Parquet: {e}") from None

        def write(self, t: pa.Table) -> None:
            try:
                self.w.write_table(t, row_group_size=PARQUET_GROUP_ROWS)
            except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:  # e.g. a uniontype column
                raise InvalidInputError(f"the change rows cannot be written as Parquet: {e}") from None
            self.rows += t.num_rows

        def close(self) -> None:
            self.w.close()
            self.f.close()
            with dest.open(self.path, "rb") as f:
                n = pq.ParquetFile(f).metadata.num_rows
            if n != self.rows:
                raise WriteVerificationFailed(f"{dest.display(self.path)}: {n} rows read back, {self.rows} written")
            outputs.append({"file": self.name, "rows": self.rows, "bytes": dest.info(self.path).size})

    with published(dest, final, staging):
        cur: _File | None = None
        try:
            for t in _coalesced(rows.tables(), PARQUET_GROUP_ROWS):
                schema = schema or t.schema
                t = _conform(t, schema)
                off = 0
                while off < t.num_rows:
                    if cur is None:
                        cur = _File(schema)
                    piece = t.slice(off, PARQUET_FILE_ROWS - cur.rows)
                    cur.write(piece)
                    off += piece.num_rows
                    if cur.rows == PARQUET_FILE_ROWS:
                        cur.close()
                        cur = None
            if cur is None and not outputs:  # no change rows: one empty file
                cur = _File(rows.empty_schema)
            if cur is not None:
                cur.close()
                cur = None
        finally:
            if cur is not None:  # failed: the staging directory goes
                cur.f.close()
    return {
        "dest": dest.display(final),
        "format": "parquet",
        "publish": "atomic" if dest.atomic_rename else "non-atomic",
        "files": len(outputs),
        "outputs": outputs,
    }
