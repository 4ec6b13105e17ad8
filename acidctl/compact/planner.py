"""Compaction planning on the driver: which directories each partition compacts, the output
names, and one :class:`BucketTask` per partition × bucket with every file listed up front.

Rules (../shared/spec/orc-acid-files.md §12.3, directory-state.md §2/§3):

* inputs come from ``getAcidState`` run with the **compactor** write-id list (hwm = lowest open
  write id − 1, only aborted ids as exceptions; a delta reaching past the hwm is excluded whole),
  empty files ignored. Deltas whose write ids are all aborted (at or below the hwm, above the
  base) are read as well, as Hive 3's MR compactor does: their events are dropped and the
  output's range covers them, so the Cleaner can remove them afterwards;
* major: the base (or all originals when there is none) + every current delta → ``base_N``
  (N = the highest write id of the compacted deltas; originals only: ``base_0`` — never Hive's
  ``base_-9223372036854775808``: no negative write id in a name);
* minor: the current deltas only → ``delta_min_max`` / ``delete_delta_min_max`` (no statement id);
* Hive 4 adds ``_v<compactor txn>``;
* Hive 2.3 (``hive_version=2``): the same names, no marker files, and the tasks merge and
  write as Hive 2.3's CompactorMR (:mod:`acidctl.compact.hive2`).

Each task also carries the sources of the **reader's** snapshot for its bucket before and after
the compaction (the new directories taken from the staging area), so the task can check that a
merged read of the new snapshot equals the old one before anything is published.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any, Callable

from acidctl.acid.acidstate import AcidState, Kind, delta_sort_key, get_acid_state
from acidctl.acid.listing import ChildEntry, DirListing, FileInfo
from acidctl.acid.dirname import METADATA_FILE, ORC_ACID_VERSION_FILE, STAGING_PREFIX
from acidctl.acid.writeids import TxnList, WriteIdList
from acidctl.errors import InvalidAcidLayout, RefusedError, UsageError
from acidctl.fs import join_path
from acidctl.units import plural

MAJOR, MINOR = "major", "minor"
METADATA_ACID = b'{"thisFileVersion":"0","dataFormat":"compacted"}'
ORC_ACID_VERSION = b"2"


@dataclasses.dataclass
class OutputDir:
    """A directory the compaction creates (``kind``: base | delta | delete_delta)."""

    name: str
    kind: str
    min_write_id: int
    max_write_id: int
    buckets: list[int]
    markers: dict[str, bytes]

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "min_write_id": self.min_write_id,
            "max_write_id": self.max_write_id,
            "buckets": list(self.buckets),
        }


@dataclasses.dataclass
class BucketTask:
    """Everything one executor task needs (picklable; no driver state)."""

    tfs: object  # TableFS
    partition: str | None
    bucket: int
    mode: str
    compactor: WriteIdList
    reader: WriteIdList
    inserts: list  # read.Source, compactor inputs of this bucket
    deletes: list
    out_insert: str | None  # staging path of the insert/base file
    out_delete: str | None  # staging path of the delete file (minor)
    out_insert_dir: OutputDir | None
    out_delete_dir: OutputDir | None
    verify_old: tuple[list, list]  # reader snapshot before: (inserts, deletes) of this bucket
    verify_new: tuple[list, list]  # reader snapshot after (staging paths for new files)
    columns: list[str] | None = None
    columns_coln_only: bool = False
    hive_version: int = 3  # 2: Hive 2.3 CompactorMR output (acidctl.compact.hive2)


@dataclasses.dataclass
class PartitionPlan:
    partition: str | None
    path: str  # filesystem path of the partition directory
    display: str
    mode: str
    status: str  # compact | nothing | not-due
    message: str
    inputs: list[str] = dataclasses.field(default_factory=list)
    input_bytes: int = 0
    outputs: list[OutputDir] = dataclasses.field(default_factory=list)
    staging: str | None = None
    tasks: list[BucketTask] = dataclasses.field(default_factory=list)
    recommendation: dict | None = None
    staging_id: str | None = None
    publish: str = ""  # atomic | hidden-until-commit | non-atomic (set by the runner)
    published: list[str] = dataclasses.field(default_factory=list)  # paths renamed in (set by the runner)
    refusals: list[dict] = dataclasses.field(default_factory=list)  # unread files (status "refused")
    skipped: list[dict] = dataclasses.field(default_factory=list)  # unread files, --skip-unreadable-files
    obsoletes: list[str] = dataclasses.field(default_factory=list)  # children the output makes obsolete
    read_paths: set[str] = dataclasses.field(default_factory=set)  # every file the tasks read
    input_files: dict[str, list] = dataclasses.field(default_factory=dict)  # child -> [[file, size]] (revert)

    @property
    def runs(self) -> bool:
        return self.status == "compact"

    def to_dict(self) -> dict:
        return {
            "partition": self.partition,
            "path": self.display,
            "type": self.mode,
            "status": self.status,
            "message": self.message,
            "inputs": list(self.inputs),
            "outputs": [o.name for o in self.outputs],
            "buckets": len(self.tasks),
            "recommendation": self.recommendation,
            "obsoletes": list(self.obsoletes),
            "refusals": list(self.refusals),
            "skipped": list(self.skipped),
        }


def covered_aborted(cstate: AcidState) -> list:
    """Aborted-only deltas above the base and at or below the compactor hwm (Hive 3's MR
    compactor reads them and drops their events)."""
    base_wid = cstate.base.base_dir.write_id if cstate.base is not None else 0
    hwm = cstate.write_ids.hwm
    out = []
    for c in cstate.aborted:
        if c.kind not in (Kind.DELTA, Kind.DELETE_DELTA) or c.parsed is None or c.parsed.visibility:
            continue
        lo, hi = c.parsed.min_write_id, c.parsed.max_write_id
        if lo <= base_wid or hi > hwm:
            continue
        if any(d.delta_dir.min_write_id <= lo and d.delta_dir.max_write_id >= hi for d in cstate.deltas):
            continue  # already inside a current (compacted) delta's range
        out.append(c)

    # an aborted delta inside a wider aborted one is obsolete in the compactor's own walk (Hive 3's
    # compactor list reads aborted-only deltas as working deltas, and findBestWorkingDeltas drops
    # a range inside the one before it): reading both would name the output after the wider one,
    # e.g. delta_4_5 again beside delta_5_5_0000 (directory-state.md §3.1)
    def inside(c, o) -> bool:
        a, b = c.parsed, o.parsed
        if o is c or not (b.min_write_id <= a.min_write_id and b.max_write_id >= a.max_write_id):
            return False
        wider = (b.min_write_id, b.max_write_id) != (a.min_write_id, a.max_write_id)
        return wider or (a.statement_id >= 0 and b.statement_id < 0)

    return [c for c in out if not any(inside(c, o) for o in out)]


def compactor_deltas(cstate: AcidState, extras: list | None = None) -> list:
    """The deltas the compactor reads, in Hive's order: the current deltas of its ``getAcidState``
    plus the aborted-only ones at or below its hwm (:func:`covered_aborted`). Their write-id
    range names the output (:mod:`acidctl.compact.naming`); ``why`` predicts from the same list."""
    extras = covered_aborted(cstate) if extras is None else extras
    return sorted(list(cstate.deltas) + extras, key=delta_sort_key)


def valid_txns_with(txns: TxnList | None, visibility_txn: int | None) -> TxnList | None:
    """The txn list a reader has once the compactor txn committed."""
    if txns is None or not visibility_txn:
        return txns
    return TxnList(
        hwm=max(txns.hwm, visibility_txn),
        open=tuple(t for t in txns.open if t != visibility_txn),
        aborted=tuple(t for t in txns.aborted if t != visibility_txn),
    )


def output_visibility(visibility_txn, hive_version: int) -> int:
    """The ``_vM`` suffix of a compaction's output: 0 under Hive 3; under Hive 4 the compactor
    txn (``visibility_txn``, or a function giving it: the metastore opens it only when output
    is written), which must be given."""
    if hive_version != 4:
        return 0
    v = visibility_txn() if callable(visibility_txn) else visibility_txn
    if not v or int(v) <= 0:
        raise UsageError(
            "Hive 4 compaction output is named _v<compactor txn>: pass --visibility-txn M "
            "(a committed txn of type COMPACTION) or connect a metastore",
            hint="or use --hive-version 3 for Hive 3 naming",
        )
    return int(v)


def plan_partition(
    tfs,
    listing: DirListing,
    *,
    mode: str,
    reader: WriteIdList,
    txns: TxnList | None,
    hive_version: int,
    visibility_txn: int | Callable[[], int | None] | None = None,
    columns: list[str] | None = None,
    columns_coln_only: bool = False,
    skip_unreadable: bool = False,
) -> PartitionPlan:
    """The plan for one partition (``status`` "nothing" when there is nothing to compact,
    "refused" when the output would make obsolete a file it does not read — see
    :mod:`acidctl.compact.coverage`; ``skip_unreadable`` lists those files as skipped instead).

    The stages (:class:`_Planner`): the reader's and the compactor's states, the inputs (major
    or minor), the nothing-lost check of the inputs, the output names, the reader's sources
    before and after (verification), what becomes obsolete (checked again), the bucket tasks."""
    from acidctl.acid.sourceplan import plan_sources

    p = _Planner(tfs, listing, mode, reader, txns, hive_version, skip_unreadable)
    plan = p.plan
    rstate, cstate = p.states()
    extras = covered_aborted(cstate)
    deltas = compactor_deltas(cstate, extras)
    inp = p.major_inputs(cstate, deltas, extras) if mode == MAJOR else p.minor_inputs(cstate, deltas, extras)
    if inp is None:
        return plan
    sizes = _file_sizes(listing, p.part_path)
    istate, not_orc = _without_unreadable_originals(tfs, listing, inp.state)
    inserts, deletes = _non_empty(plan_sources(tfs, listing, istate), sizes)
    if p.inputs_refused(inp.names, inserts, deletes, not_orc):
        return plan
    vis = output_visibility(visibility_txn, hive_version)
    ins_by: dict[int, list] = {}
    del_by: dict[int, list] = {}
    for s in inserts:
        ins_by.setdefault(s.bucket, []).append(s)
    for s in deletes:
        del_by.setdefault(s.bucket, []).append(s)
    out = p.outputs(inp, cstate, deltas, vis, ins_by, del_by)
    p.refuse_existing(out.dirs)
    staging_id = uuid.uuid4().hex[:12]
    staging = join_path(p.part_path, STAGING_PREFIX + staging_id)
    ver = p.verification(rstate, not_orc, out.dirs, sizes, vis, staging)
    if p.obsoletes_refused(ver, rstate, cstate, out.dirs, inp.names):
        plan.outputs = out.dirs
        return plan
    plan.tasks.extend(p.bucket_tasks(out, ins_by, del_by, ver, staging, columns, columns_coln_only))
    plan.status = "compact"
    plan.inputs = inp.names
    plan.input_bytes = inp.bytes
    plan.outputs = out.dirs
    plan.staging = staging
    plan.staging_id = staging_id
    plan.message = f"{mode} compaction of {plural(len(inp.names), 'input')} into {', '.join(o.name for o in out.dirs)}"
    return plan


@dataclasses.dataclass
class _Inputs:
    """What one partition's compaction reads: the compactor's state narrowed to its inputs, their
    names and size, the marker files of the output, and the write ids that name it."""

    state: AcidState
    names: list[str]
    bytes: int
    markers: dict
    top: int = 0  # major: base_<top>
    lo: int = 0  # minor: delta_<lo>_<hi>
    hi: int = 0


@dataclasses.dataclass
class _Outputs:
    dirs: list[OutputDir]
    insert: OutputDir | None  # where inserts go (major: the base)
    delete: OutputDir | None  # where delete events go (minor only)
    buckets: list[int]


@dataclasses.dataclass
class _Verification:
    """The reader's sources before and after publication (the new directories read from the
    staging area), and the snapshot after on the virtual listing with the outputs."""

    old_ins: list
    old_del: list
    new_ins: list
    new_del: list
    virtual: DirListing
    nstate: AcidState


@dataclasses.dataclass
class _Planner:
    """The stages of :func:`plan_partition` for one partition, writing into :attr:`plan`."""

    tfs: Any
    listing: DirListing
    mode: str
    reader: WriteIdList
    txns: TxnList | None
    hive_version: int
    skip_unreadable: bool
    plan: PartitionPlan = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.compactor = self.reader if self.reader.compactor else self.reader.for_compactor()
        self.part_path = self.listing.fs_path or self.listing.path
        self.plan = PartitionPlan(
            partition=self.listing.partition,
            path=self.part_path,
            display=self.listing.path,
            mode=self.mode,
            status="nothing",
            message="",
        )
        self.by_name = {e.name: e for e in self.listing.entries}

    def states(self) -> tuple[AcidState, AcidState]:
        """The reader's and the compactor's ``getAcidState`` (each a complete snapshot)."""
        listing, txns, hv = self.listing, self.txns, self.hive_version
        rstate = get_acid_state(listing, self.reader, txns=txns, hive_version=hv)
        rstate.require_snapshot()
        cstate = get_acid_state(listing, self.compactor, txns=txns, hive_version=hv)
        if cstate.invalid:
            raise InvalidAcidLayout(f"{cstate.invalid[0].path}: {cstate.invalid[0].reason}")
        cstate.require_snapshot()
        return rstate, cstate

    def _nothing(self, kind: str, cstate: AcidState, deltas: list, extras: list) -> bool:
        """The one "nothing to compact" rule (:func:`acidctl.compact.naming.nothing_to_compact`,
        which ``why`` and ``doctor`` judge with too), into the plan's message; ``extras``: the
        aborted-only deltas among ``deltas`` (:func:`covered_aborted`)."""
        from acidctl.compact import naming

        aborted = {id(c) for c in extras}
        ranges = [
            naming.DeltaRange(
                d.min_write_id, d.max_write_id, d.kind is Kind.DELETE_DELTA, d.statement_id is None, id(d) in aborted
            )
            for d in deltas
        ]
        why = naming.nothing_to_compact(
            kind,
            deltas=ranges,
            has_base=cstate.base is not None,
            has_originals=bool(cstate.originals),
            hive_version=self.hive_version,
        )
        if not why:
            return False
        self.plan.message = "nothing to compact: " + (_why_nothing(cstate, why) if not deltas else why)
        return True

    def major_inputs(self, cstate: AcidState, deltas: list, extras: list) -> _Inputs | None:
        """The base (or the originals) and every delta; None (and the plan's message) when
        there is nothing to compact."""
        if self._nothing(MAJOR, cstate, deltas, extras):
            return None
        # originals only: Hive's CompactorMR names it base_-9223372036854775808 (Long.MIN_VALUE);
        # acidctl never writes a negative write id into a name (issue #9): base_0 holds exactly
        # the write id of original rows and is a valid base for every reader
        top = max((d.max_write_id for d in deltas), default=0)
        markers = {ORC_ACID_VERSION_FILE: ORC_ACID_VERSION}
        if self.hive_version != 4:
            markers[METADATA_FILE] = METADATA_ACID
        if self.hive_version == 2:
            markers = {}  # Hive 2.3's CompactorMR writes no marker file (insert-only-and-hive2.md B.7)
        names = (
            ([cstate.base.name] if cstate.base is not None else [])
            + [o.rel for o in cstate.originals]
            + [d.name for d in deltas]
        )
        size = (
            (cstate.base.bytes if cstate.base is not None else 0)
            + sum(o.size for o in cstate.originals)
            + sum(d.bytes for d in deltas)
        )
        return _Inputs(dataclasses.replace(cstate, deltas=deltas), names, size, markers, top=top)

    def minor_inputs(self, cstate: AcidState, deltas: list, extras: list) -> _Inputs | None:
        """The current deltas only; None (and the plan's message) when there is nothing to
        compact (:func:`acidctl.compact.naming.nothing_to_compact`)."""
        if self._nothing(MINOR, cstate, deltas, extras):
            return None
        lo = min(d.min_write_id for d in deltas)
        hi = max(d.max_write_id for d in deltas)
        return _Inputs(
            dataclasses.replace(cstate, base=None, originals=[], deltas=deltas),
            [d.name for d in deltas],
            sum(d.bytes for d in deltas),
            {} if self.hive_version == 2 else {ORC_ACID_VERSION_FILE: ORC_ACID_VERSION},
            lo=lo,
            hi=hi,
        )

    def inputs_refused(self, inputs: list[str], inserts: list, deletes: list, not_orc: list[dict]) -> bool:
        """Nothing lost: every input becomes obsolete, so every reader-visible file in an input
        must be read (checked before anything is named, written or registered; re-checked on the
        reader's snapshot after publication, and again by the runner right before publishing)."""
        from acidctl.compact.coverage import reader_files, unread_files

        plan, by_name = self.plan, self.by_name
        read_paths = {src.path for src in inserts} | {src.path for src in deletes}
        input_children = sorted({i.split("/", 1)[0] for i in inputs})
        plan.read_paths = read_paths
        plan.input_files = {n: sorted([f.name, f.size] for f in reader_files(by_name[n])) for n in input_children}
        unread = unread_files(((n, by_name[n]) for n in input_children), read_paths, self.part_path)
        # an original that is no ORC file (a stray extra.csv): Hive's readers fail on it (D12)
        unread = not_orc + [u for u in unread if u["path"] not in {b["path"] for b in not_orc}]
        return _refuse_unread(plan, unread, inputs, self.skip_unreadable)

    def outputs(self, inp: _Inputs, cstate: AcidState, deltas: list, vis: int, ins_by: dict, del_by: dict) -> _Outputs:
        """The output directories: the one rule of acidctl.compact.naming (Hive's MR compactor:
        the range of the deltas read, not the compactor hwm)."""
        from acidctl.compact import naming

        ranges = [naming.DeltaRange(d.min_write_id, d.max_write_id, d.kind is Kind.DELETE_DELTA) for d in deltas]
        hwm, hv = cstate.write_ids.hwm, self.hive_version
        if self.mode == MAJOR:
            named = naming.output_names(naming.MAJOR, deltas=ranges, compactor_hwm=hwm, hive_version=hv, visibility=vis)
            assert named is not None and named.max_write_id == inp.top
            base_out = OutputDir(named.names[0], "base", inp.top, inp.top, sorted(ins_by), inp.markers)
            return _Outputs([base_out], base_out, None, sorted(ins_by))
        has_ins = any(d.kind is Kind.DELTA for d in deltas) or bool(ins_by)
        has_del = any(d.kind is Kind.DELETE_DELTA for d in deltas) or bool(del_by)
        named = naming.output_names(
            naming.MINOR,
            deltas=ranges,
            compactor_hwm=hwm,
            hive_version=hv,
            visibility=vis,
            has_inserts=has_ins,
            has_deletes=has_del,
        )
        lo, hi = inp.lo, inp.hi
        assert named is not None and (named.min_write_id, named.max_write_id) == (lo, hi)
        names = iter(named.names)
        out_ins = OutputDir(next(names), "delta", lo, hi, sorted(ins_by), inp.markers) if has_ins else None
        out_del = OutputDir(next(names), "delete_delta", lo, hi, sorted(del_by), inp.markers) if has_del else None
        dirs = [o for o in (out_ins, out_del) if o is not None]
        return _Outputs(dirs, out_ins, out_del, sorted(set(ins_by) | set(del_by)))

    def refuse_existing(self, outputs: list[OutputDir]) -> None:
        existing = {e.name for e in self.listing.entries}
        for o in outputs:
            if o.name in existing:
                raise RefusedError(
                    f"{join_path(self.listing.path, o.name)} already exists; refusing to overwrite it",
                    hint="inspect it with `acidctl state`; `acidctl clean` removes obsolete copies",
                )

    def verification(
        self, rstate: AcidState, not_orc: list[dict], outputs: list[OutputDir], sizes: dict, vis: int, staging: str
    ) -> _Verification:
        """The reader's snapshot before and after, for verification."""
        from acidctl.acid.sourceplan import plan_sources

        tfs, listing, txns, hv = self.tfs, self.listing, self.txns, self.hive_version
        if not_orc:  # skipped (--skip-unreadable-files): the reader's rows before are the others'
            skipped = {b["path"] for b in not_orc}
            rstate = dataclasses.replace(rstate, originals=[o for o in rstate.originals if o.rel not in skipped])
        old_ins, old_del = _non_empty(plan_sources(tfs, listing, rstate), sizes)
        virtual = _with_outputs(listing, outputs)
        nstate = get_acid_state(
            virtual, self.reader, txns=valid_txns_with(txns, vis or None) if hv == 4 else txns, hive_version=hv
        )
        nstate.require_snapshot()
        new_ins, new_del = _non_empty(plan_sources(tfs, virtual, nstate), sizes)
        remap = {join_path(self.part_path, o.name) + "/": join_path(staging, o.name) + "/" for o in outputs}

        def moved(src):
            for prefix, target in remap.items():
                if src.path.startswith(prefix):
                    return dataclasses.replace(src, path=target + src.path[len(prefix) :])
            return src

        return _Verification(
            old_ins, old_del, [moved(s) for s in new_ins], [moved(s) for s in new_del], virtual, nstate
        )

    def obsoletes_refused(
        self, ver: _Verification, rstate: AcidState, cstate: AcidState, outputs: list[OutputDir], inputs: list[str]
    ) -> bool:
        """What the published output makes obsolete for readers (and for Hive's Cleaner list),
        into the plan; refused when one of those holds a file nothing reads."""
        from acidctl.compact.coverage import unread_files

        plan, by_name = self.plan, self.by_name
        top_id = max(o.max_write_id for o in outputs)
        clstate = get_acid_state(
            ver.virtual,
            WriteIdList(table=self.reader.table, hwm=max(top_id, 0)),
            txns=ver.nstate.txns,
            hive_version=self.hive_version,
        )
        was_live = {c.name for st in (rstate, cstate) for c in st.entries if c.role.current}
        now_obsolete = {c.name for c in ver.nstate.obsolete} | {c.name for c in clstate.obsolete}
        plan.obsoletes = sorted((was_live & now_obsolete) | set(plan.input_files))
        return _refuse_unread(
            plan,
            unread_files(((n, by_name[n]) for n in plan.obsoletes if n in by_name), plan.read_paths, self.part_path),
            inputs,
            self.skip_unreadable,
        )

    def bucket_tasks(
        self,
        out: _Outputs,
        ins_by: dict,
        del_by: dict,
        ver: _Verification,
        staging: str,
        columns: list[str] | None,
        columns_coln_only: bool,
    ) -> list[BucketTask]:
        """One task per bucket, with the reader's sources before and after for its check."""

        def by_bucket(srcs, b):
            return [s for s in srcs if s.bucket == b]

        out_ins, out_del = out.insert, out.delete
        return [
            BucketTask(
                tfs=self.tfs,
                partition=self.listing.partition,
                bucket=b,
                mode=self.mode,
                compactor=self.compactor,
                reader=self.reader,
                inserts=ins_by.get(b, []),
                deletes=del_by.get(b, []),
                out_insert=join_path(staging, out_ins.name, f"bucket_{b:05d}") if out_ins is not None else None,
                out_delete=join_path(staging, out_del.name, f"bucket_{b:05d}") if out_del is not None else None,
                out_insert_dir=out_ins,
                out_delete_dir=out_del,
                verify_old=(by_bucket(ver.old_ins, b), by_bucket(ver.old_del, b)),
                verify_new=(by_bucket(ver.new_ins, b), by_bucket(ver.new_del, b)),
                columns=columns,
                columns_coln_only=columns_coln_only,
                hive_version=self.hive_version,
            )
            for b in out.buckets
        ]


def _without_unreadable_originals(tfs, listing: DirListing, state: AcidState) -> tuple[AcidState, list[dict]]:
    """``state`` without the original files that are no readable ORC file, and those as unread
    files (``{"path", "bytes", "reason", "fix"}``, as :func:`acidctl.compact.coverage.unread_files`):
    the plan refuses them in one line, or skips them with ``--skip-unreadable-files``. Only
    when reading the sources fails are the originals opened one by one."""
    from acidctl.acid.sourceplan import plan_sources
    from acidctl.errors import CorruptOrcFile

    if state.base is not None or not state.originals:
        return state, []
    try:
        plan_sources(tfs, listing, dataclasses.replace(state, deltas=[]))
        return state, []
    except CorruptOrcFile:
        pass
    from acidctl.orc.reader import OrcFile

    bad, good = [], []
    for ref in state.originals:
        try:
            if ref.size:
                with OrcFile(tfs, ref.path) as f:
                    f.rows  # noqa: B018 - the footer must parse
            good.append(ref)
        except CorruptOrcFile as e:
            why = str(e).rsplit(": ", 1)[-1]
            bad.append(
                {
                    "path": ref.rel,
                    "bytes": ref.size,
                    "reason": f"not a readable ORC file ({why}): every Hive query of the partition fails on it (D12)",
                    "fix": f"move {ref.rel} out of the table",
                }
            )
    return dataclasses.replace(state, originals=good), bad


def _refuse_unread(plan: PartitionPlan, unread: list[dict], inputs: list[str], skip: bool) -> bool:
    """Mark the plan refused for ``unread`` files (True), or record them as skipped."""
    if not unread:
        return False
    if skip:
        known = {u["path"] for u in plan.skipped}
        plan.skipped.extend(u for u in unread if u["path"] not in known)
        return False
    plan.status = "refused"
    plan.refusals = unread
    plan.inputs = inputs
    plan.message = (
        f"refused: {plural(len(unread), 'file')} a reader could treat as data would become obsolete "
        f"without being read ({', '.join(u['path'] for u in unread[:3])}"
        f"{', ...' if len(unread) > 3 else ''})"
    )
    return True


def _why_nothing(cstate: AcidState, default: str) -> str:
    """The real reason a partition has nothing to compact (e.g. a delta spanning an open write id)."""
    hwm = cstate.write_ids.hwm
    held = [c for c in cstate.not_visible if c.max_write_id is not None]
    if held:
        c = held[0]
        return (
            f"{c.name} spans write id {c.max_write_id}, above the compactor's high-water mark {hwm} "
            f"(an open or uncommitted write: never folded)" + (f" and {len(held) - 1} more" if len(held) > 1 else "")
        )
    if cstate.base is not None:
        return f"{default} above the current base {cstate.base.name}"
    return default


def refusal_error(plans: list[PartitionPlan]) -> RefusedError | None:
    """One error naming every refused partition's unread files (None when nothing is refused)."""
    refused = [p for p in plans if p.status == "refused"]
    if not refused:
        return None
    files = [(p, r) for p in refused for r in p.refusals]
    shown = "; ".join(f"{join_path(p.display, r['path'])}: {r['reason']}" for p, r in files[:5])
    more = f" (and {len(files) - 5} more)" if len(files) > 5 else ""
    return RefusedError(
        f"compaction refused: {plural(len(files), 'file')} a reader could treat as data would become obsolete without "
        f"being read: {shown}{more}; nothing was written",
        hint="move each out of the table (or rename it to a bucket_N name if it is ACID data of that bucket); "
        "--skip-unreadable-files compacts without them (clean then keeps their directories)",
    )


def _file_sizes(listing: DirListing, part_path: str) -> dict[str, int]:
    out = {}
    for e in listing.entries:
        if e.is_dir:
            for f in e.files:
                out[join_path(part_path, e.name, f.name)] = f.size
        else:
            out[join_path(part_path, e.name)] = e.size
    return out


def _non_empty(pair, sizes: dict[str, int]):
    """Drop zero-length files (the compactor ignores empty files; they are not ORC)."""
    ins, dels = pair
    keep = lambda s: sizes.get(s.path, 1) != 0  # noqa: E731  (new outputs are not in the listing)
    return [s for s in ins if keep(s)], [s for s in dels if keep(s)]


def _with_outputs(listing: DirListing, outputs: list[OutputDir]) -> DirListing:
    """The listing as it will look once the outputs are published."""
    extra = []
    for o in outputs:
        files = [FileInfo(f"bucket_{b:05d}", 1) for b in o.buckets]
        files += [FileInfo(k, len(v)) for k, v in o.markers.items()]
        extra.append(ChildEntry(o.name, True, 0, None, tuple(sorted(files, key=lambda f: f.name)), (), dict(o.markers)))
    return dataclasses.replace(listing, entries=tuple(listing.entries) + tuple(extra))
