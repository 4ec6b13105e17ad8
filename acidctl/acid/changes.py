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
a minor-compacted delta, an original file) are separate; :func:`change_table` turns decoded
events into change rows (``_change_type``, ``_commit_version``, ``row__id``, partition columns,
columns), in the documented order, optionally paired into updates by a key.

Order of change rows: by write id (``_commit_version``), then deletes before inserts within a
write id (as Hive applies them: a reader applies a write id's delete events to the rows before
it), then partition (path order), then ROW__ID (writeid, bucketid, rowid).

Insert-only tables: only inserts, attributed to the write id of the ``delta_w_w`` directory
their file is in; ``row__id`` is null (Hive gives insert-only rows no ROW__ID). A
minor-compacted insert-only ``delta_x_y`` (x < y) no longer says which write id wrote which row:
wanted ids in x..y raise :class:`EventsGone` with y + 1, as a ``base_N`` does with N + 1.

Hive 2 (ACID v1) tables are refused (their updates are in-place events, not delete + insert).

Memory: :func:`table_events` holds one partition's events at a time; :func:`change_rows` sorts
every partition's events of the range together (the order crosses partitions), so the change
rows of the whole range are held once.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from acidctl.acid.writeids import TxnList, WriteIdList
from acidctl.errors import InvalidInputError, RefusedError, UsageError

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
    for listing in list_table(tfs):
        rel = "/".join(p for p in (partition_prefix, listing.partition) if p) or None
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
    if gone:
        at, why = max(gone)
        raise EventsGone(
            f"the events of write ids below {at} are no longer on disk ({why}); "
            f"changes can be derived from write id {at} on",
            lowest=at,
            hint=f"use --from-write-id {at}",
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


def _with_deleted_rows(tfs: TableFS, plan: PartitionPlan, deletes: pa.Table, snapshot: WriteIdList) -> pa.Table:
    """``deletes`` (delete events) with ``row`` = the values of the row each one deletes, looked
    up among the valid insert events of the partition's read set: only the files of the
    targets' bucket ids whose names allow the targets' write ids (a delete event goes into the
    bucket file of its target's bucket id, orc-acid-files.md)."""
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
            t = _matching_stripes(tfs, s, keep)
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


def _matching_stripes(tfs: TableFS, src: Source, keep) -> pa.Table:
    """The events of an ACID file for which ``keep`` (a mask function over an ACID table) is
    true: each stripe's key columns are read first, its rows only when a key matches."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from acidctl.acid import merge
    from acidctl.orc.acidfile import ACID_NAMES
    from acidctl.orc.reader import OrcFile

    out = []
    with OrcFile(tfs, src.path, arrow_footer=True) as f:
        cols = f.top_names()[:5]
        for i in range(f.num_stripes()):
            keys = pa.Table.from_batches([f.read_stripe_arrow(i, columns=cols)]).rename_columns(list(ACID_NAMES[:5]))
            mask = keep(keys)
            if not pc.any(mask).as_py():
                continue
            t = merge.normalise(pa.Table.from_batches([f.read_stripe_arrow(i)]))
            out.append(t.filter(mask))
    if not out:
        return pa.table({n: pa.array([], pa.int64()) for n in ("originalTransaction", "bucket", "rowId")})
    return pa.concat_tables(out, promote_options="permissive")


def _mm_events(tfs: TableFS, plan: PartitionPlan, mm: Any) -> PartitionEvents | None:
    """Insert-only: the rows of the wanted write ids' delta files, in file order."""
    import pyarrow as pa

    from acidctl.formats.files import iter_tables
    from acidctl.formats.hivetypes import orc_struct
    from acidctl.mm.read import infer_columns

    if not plan.mm_files:
        return None
    columns = mm.columns or infer_columns(tfs, [f for _, f in plan.mm_files], mm.storage)
    row_td = orc_struct(columns)
    parts = []
    for w, f in plan.mm_files:
        for t in iter_tables(tfs, f.path, mm.storage, row_td):
            if not t.num_rows:
                continue
            n = t.num_rows
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
    if not parts:
        return None
    inserts = pa.concat_tables(parts, promote_options="permissive")
    return PartitionEvents(plan.partition, inserts, inserts.schema.empty_table(), row_td)


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


# -- change rows ---------------------------------------------------------------------------


def _row_id_type():
    import pyarrow as pa

    return pa.struct([("writeid", pa.int64()), ("bucketid", pa.int32()), ("rowid", pa.int64())])


@dataclasses.dataclass
class ChangeRows:
    """The change rows as one Arrow table (:data:`META_COLUMNS`, partition columns as strings,
    the table's columns) and each column's ORC type (pyorc), for the ``dump --merged`` renderer."""

    table: pa.Table
    fields: list[tuple[str, Any]]

    @property
    def counts(self) -> dict[str, int]:
        import pyarrow.compute as pc

        vc = pc.value_counts(self.table.column("_change_type")).to_pylist() if self.table.num_rows else []
        out = {k: 0 for k in (INSERT, DELETE, PREIMAGE, POSTIMAGE)}
        out.update({d["values"]: d["counts"] for d in vc})
        return out


def change_rows(
    events: list[PartitionEvents], *, key: list[str] | None = None, partition_keys: list[str] | None = None
) -> ChangeRows:
    """Change rows of the decoded events of every partition, in the documented order (write id,
    deletes before inserts, partition in the given order, ROW__ID). With ``key`` (column names,
    table or partition columns, any letter case), within one write id a delete and an insert
    with equal key values become ``update_preimage`` / ``update_postimage``: the n-th delete
    and the n-th insert of a key in the same partition (in that order) pair up, the rest stay
    delete / insert (a Hive UPDATE never moves a row to another partition)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyorc

    from acidctl.merged import partition_values

    rid_t = _row_id_type()
    rid_td = pyorc.Struct(writeid=pyorc.BigInt(), bucketid=pyorc.Int(), rowid=pyorc.BigInt())
    pkeys = list(partition_keys or [])
    for ev in events:
        for k, _ in partition_values(ev.partition):
            if k not in pkeys:
                pkeys.append(k)
    td = next((ev.row_type for ev in reversed(events) if ev.row_type is not None), None)
    row_fields = list(td.fields.items()) if td is not None else []
    pieces = []
    for pidx, ev in enumerate(events):
        pvals = dict(partition_values(ev.partition))
        for kind, rank, t in ((DELETE, 0, ev.deletes), (INSERT, 1, ev.inserts)):
            n = t.num_rows
            if not n:
                continue
            row = t.column("row").combine_chunks()
            rowid = pa.StructArray.from_arrays(
                [
                    t.column("originalTransaction").combine_chunks().cast(pa.int64()),
                    t.column("bucket").combine_chunks().cast(pa.int32()),
                    t.column("rowId").combine_chunks().cast(pa.int64()),
                ],
                fields=list(rid_t),
                mask=pc.is_null(t.column("rowId").combine_chunks()) if t.column("rowId").null_count else None,
            )
            cols: dict[str, Any] = {
                "_change_type": pa.array([kind] * n, pa.string()),
                "_commit_version": t.column("currentTransaction").combine_chunks().cast(pa.int64()),
                "row__id": rowid,
            }
            for k in pkeys:
                cols[k] = pa.array([pvals.get(k)] * n, pa.string())
            for i, (name, _) in enumerate(row_fields[: row.type.num_fields]):
                cols[name] = row.field(i)
            cols["__rank"] = pa.array([rank] * n, pa.int8())
            cols["__part"] = pa.array([pidx] * n, pa.int32())
            cols["__ot"] = t.column("originalTransaction").combine_chunks().cast(pa.int64())
            cols["__bk"] = t.column("bucket").combine_chunks().cast(pa.int32())
            cols["__rid"] = t.column("rowId").combine_chunks().cast(pa.int64())
            pieces.append(pa.table(cols))
    fields = (
        [("_change_type", pyorc.String()), ("_commit_version", pyorc.BigInt()), ("row__id", rid_td)]
        + [(k, pyorc.String()) for k in pkeys]
        + row_fields
    )
    names = [n for n, _ in fields]
    if not pieces:
        empty = pa.schema(
            [("_change_type", pa.string()), ("_commit_version", pa.int64()), ("row__id", rid_t)]
            + [(k, pa.string()) for k in pkeys]
        )
        return ChangeRows(empty.empty_table(), fields[: len(empty)])
    table = pa.concat_tables(pieces, promote_options="permissive")
    table = table.sort_by([(c, "ascending") for c in ("_commit_version", "__rank", "__part", "__ot", "__bk", "__rid")])
    if key:
        table = _pair(table, _key_columns(key, names) + ["__part"])
    return ChangeRows(table.select(names), fields)


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
    """JSON lines of the change rows, rendered as ``dump --merged`` renders rows."""
    from acidctl.orc import render
    from acidctl.orc.lines import SLICE_ROWS

    for batch in rows.table.to_batches(max_chunksize=SLICE_ROWS):
        if batch.num_rows:
            # the same bytes as lines_bytes(render_batch(..., terminator="\n")), laid out by one take
            yield render.render_lines(batch, rows.fields)


#: rows per Parquet file written by :func:`write_parquet`
PARQUET_FILE_ROWS = 1 << 20


def write_parquet(rows: ChangeRows, dest_url: str, *, dest_options: dict | None = None) -> dict:
    """The change rows as Parquet files ``DEST/part-NNNNN.parquet`` (at most
    :data:`PARQUET_FILE_ROWS` rows each, in the change order: file name order, then row
    order), staged beside DEST and published with one rename as ``export`` publishes
    (:func:`acidctl.export.published`; DEST must not exist or be empty). Each file is read
    back (row count) before publication. Returns what was written."""
    import posixpath

    import pyarrow as pa
    import pyarrow.parquet as pq

    from acidctl.errors import WriteVerificationFailed
    from acidctl.export import prepare_dest, published
    from acidctl.fs import TableFS

    dest = TableFS(dest_url, dest_options)
    final, staging = prepare_dest(dest)
    t = rows.table
    outputs = []
    with published(dest, final, staging):
        for i, off in enumerate(range(0, max(t.num_rows, 1), PARQUET_FILE_ROWS)):
            piece = t.slice(off, PARQUET_FILE_ROWS)
            name = f"part-{i:05d}.parquet"
            path = posixpath.join(staging, name)
            try:
                with dest.open(path, "wb") as f:
                    pq.write_table(piece, f)
            except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:  # e.g. a uniontype column
                raise InvalidInputError(f"the change rows cannot be written as Parquet: {e}") from None
            with dest.open(path, "rb") as f:
                n = pq.ParquetFile(f).metadata.num_rows
            if n != piece.num_rows:
                raise WriteVerificationFailed(f"{dest.display(path)}: {n} rows read back, {piece.num_rows} written")
            outputs.append({"file": name, "rows": piece.num_rows, "bytes": dest.info(path).size})
    return {
        "dest": dest.display(final),
        "format": "parquet",
        "publish": "atomic" if dest.atomic_rename else "non-atomic",
        "files": len(outputs),
        "outputs": outputs,
    }
