"""``AcidUtils.getAcidState`` for Hive 3.1 and Hive 4, as pure logic over a listing model.

(../shared/spec/directory-state.md §3–§6.) The input is a :class:`DirListing`: the children of
one table/partition directory (name, is_dir, size, mtime), and for child directories the files
inside them plus the contents of the small marker files (``_orc_acid_version``,
``_metadata_acid``, ``*_flush_length``) already read. :mod:`acidctl.acid.layout` builds it from
a :class:`~acidctl.fs.TableFS` (the model: :mod:`acidctl.acid.listing`).

:func:`get_acid_state` returns an :class:`AcidState`: the chosen base, the current deltas in
Hive's read order, the originals (sorted by full path), and a classification of **every** child
with a one-line reason. Hive's "Not enough history available" is reported in
``AcidState.not_enough_history`` and raised by :meth:`AcidState.require_snapshot` (for readers
that need the snapshot) as :class:`~acidctl.errors.SnapshotUnavailable`.

Hive-version differences implemented here (spec §4):

* Hive 3 cannot parse ``_vM`` names (the directory is *invalid*, every Hive 3 reader fails);
  Hive 4 skips a directory whose visibility txn is not committed in the ``ValidTxnList``
  (aborted txn → *aborted*).
* compacted base: Hive 3 only via ``_metadata_acid``; Hive 4 via ``_vM`` (M > 0) or
  ``_metadata_acid``.
* ``isValidBase``: Hive 4 admits any base with ``N <= minOpenWriteId`` when something is open.
* an INSERT OVERWRITE base of an aborted write id is an *aborted* directory in Hive 4.
* "Not enough history" in Hive 4 only when the oldest (visible) base is a compacted base.
* Hive 2.3 (``hive_version=2``, insert-only-and-hive2.md B.4): the list holds txn ids (see
  :mod:`acidctl.acid.hive2`); no ``_metadata_acid``, so ``isValidBase`` judges every base.
"""

from __future__ import annotations

import dataclasses
import enum
import posixpath
from typing import Iterable

from acidctl.acid.dirname import (
    METADATA_FILE,
    BaseDir,
    DeltaDir,
    HiddenEntry,
    OriginalFile,
    delta_read_order,
    has_acid_prefix,
    is_hidden,
    is_hidden_path,
    parse_acid_dir,
)
from acidctl.acid.listing import ChildEntry, DirListing, epoch_ms
from acidctl.acid.markers import metadata_of
from acidctl.acid.writeids import LONG_MAX, LONG_MIN, RangeResponse, TxnList, WriteIdList
from acidctl.errors import InvalidAcidLayout, SnapshotUnavailable, UsageError
from acidctl.units import plural

NOT_ENOUGH_HISTORY = "Not enough history available for ({0},{1}).  Oldest available base: {2}"


# =========================================================================================
# result model
# =========================================================================================


class Role(str, enum.Enum):
    BASE = "base"
    DELTA = "delta"
    DELETE_DELTA = "delete delta"
    OBSOLETE = "obsolete"
    ABORTED = "aborted"
    NOT_VISIBLE = "not visible yet"
    UNUSABLE = "unusable base"
    ORIGINAL = "original"
    IGNORED = "ignored"
    INVALID = "invalid"

    @property
    def current(self) -> bool:
        return self in (Role.BASE, Role.DELTA, Role.DELETE_DELTA, Role.ORIGINAL)


class Kind(str, enum.Enum):
    BASE = "base"
    DELTA = "delta"
    DELETE_DELTA = "delete_delta"
    ORIGINAL_FILE = "original_file"
    ORIGINAL_DIR = "original_dir"
    HIDDEN = "hidden"
    UNPARSEABLE = "unparseable"


@dataclasses.dataclass
class Classified:
    """One child of the directory with its role for this reader and why."""

    name: str
    path: str
    kind: Kind
    role: Role
    reason: str
    entry: ChildEntry
    parsed: BaseDir | DeltaDir | None = None
    compacted: bool | None = None  # bases only
    read_order: int | None = None  # current deltas: position in Hive's order

    @property
    def base_dir(self) -> BaseDir:
        """The parsed name of a base (only for ``Kind.BASE``)."""
        assert isinstance(self.parsed, BaseDir), self.name
        return self.parsed

    @property
    def delta_dir(self) -> DeltaDir:
        """The parsed name of a (delete) delta (only for delta kinds)."""
        assert isinstance(self.parsed, DeltaDir), self.name
        return self.parsed

    @property
    def min_write_id(self) -> int | None:
        return self.parsed.min_write_id if self.parsed is not None else None

    @property
    def max_write_id(self) -> int | None:
        return self.parsed.max_write_id if self.parsed is not None else None

    @property
    def statement_id(self) -> int | None:
        if isinstance(self.parsed, DeltaDir) and self.parsed.statement_id >= 0:
            return self.parsed.statement_id
        return None

    @property
    def visibility(self) -> int | None:
        if self.parsed is not None and self.parsed.visibility:
            return self.parsed.visibility
        return None

    @property
    def file_count(self) -> int:
        return len(self.entry.files) if self.entry.is_dir else 1

    @property
    def bytes(self) -> int:
        return self.entry.total_bytes

    def to_dict(self) -> dict:
        d, e = self.parsed, self.entry
        return {
            "name": self.name,
            "path": self.path,
            "kind": self.kind.value,
            "role": self.role.value,
            "reason": self.reason,
            "is_dir": e.is_dir,
            "min_write_id": d.min_write_id if d is not None else None,
            "max_write_id": d.max_write_id if d is not None else None,
            "statement_id": self.statement_id,
            "visibility_txn": (d.visibility or None) if d is not None else None,
            "compacted": self.compacted,
            "read_order": self.read_order,
            "file_count": (len(e.files) if e.is_dir else 1) if e.listed else None,
            "bytes": e.total_bytes,
            "mtime": epoch_ms(e.mtime),
        }


@dataclasses.dataclass(frozen=True)
class OriginalRef:
    """An original file the reader uses (synthetic ROW__IDs, write id 0)."""

    path: str  # full path
    rel: str  # relative to the partition directory
    size: int
    bucket: int | None  # from the name (``000002_0`` → 2); None if the name does not match

    def to_dict(self) -> dict:
        return {"path": self.path, "rel": self.rel, "size": self.size, "bucket": self.bucket}


@dataclasses.dataclass
class AcidState:
    path: str
    partition: str | None
    hive_version: int
    write_ids: WriteIdList
    txns: TxnList | None
    entries: list[Classified]  # every child, in name order
    base: Classified | None
    deltas: list[Classified]  # current deltas and delete deltas, Hive's read order
    originals: list[OriginalRef]  # current originals, sorted by full path
    obsolete: list[Classified]
    aborted: list[Classified]
    not_visible: list[Classified]
    unusable: list[Classified]
    invalid: list[Classified]
    ignored: list[Classified]
    aborted_write_ids: tuple[int, ...] = ()  # Hive 4: ids of aborted directories
    has_uncompacted_aborts: bool = False  # Hive 4: a current delta spans aborted ids
    not_enough_history: str | None = None  # Hive's message, if a reader would get it
    reader_errors: list[str] = dataclasses.field(default_factory=list)  # other reasons readers fail

    # -- convenience -----------------------------------------------------------------------
    @property
    def insert_deltas(self) -> list[Classified]:
        return [c for c in self.deltas if c.kind is Kind.DELTA]

    @property
    def delete_deltas(self) -> list[Classified]:
        return [c for c in self.deltas if c.kind is Kind.DELETE_DELTA]

    @property
    def base_write_id(self) -> int | None:
        return self.base.base_dir.write_id if self.base is not None else None

    def by_role(self, role: Role) -> list[Classified]:
        return [c for c in self.entries if c.role is role]

    def get(self, name: str) -> Classified:
        for c in self.entries:
            if c.name == name:
                return c
        raise KeyError(name)

    def require_snapshot(self) -> "AcidState":
        """Raise what a Hive reader would raise for this directory; else return self."""
        if self.not_enough_history:
            bases = [c for c in self.entries if c.kind is Kind.BASE and c.parsed is not None]
            hint = None
            if bases:  # the oldest base: this directory is readable from its write id on
                oldest = min(bases, key=lambda c: c.base_dir.write_id)
                n = oldest.base_dir.write_id
                hint = (
                    f"a compaction folded the write ids up to {n} into {oldest.name}: this directory "
                    f"can only be read as of write id {n} or later"
                )
            raise SnapshotUnavailable(self.not_enough_history, hint=hint)
        if self.reader_errors:
            hint = None
            if self.hive_version != 4 and any(
                c.role is Role.INVALID and c.parsed is not None and c.parsed.has_visibility_suffix for c in self.entries
            ):
                hint = "the _vM names were written by Hive 4: pass --hive-version 4 (and --txns for their visibility)"
            raise InvalidAcidLayout(self.reader_errors[0], hint=hint)
        return self

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "partition": self.partition,
            "hive_version": self.hive_version,
            "base": self.base.name if self.base else None,
            "base_write_id": self.base_write_id,
            "deltas": [c.name for c in self.deltas],
            "originals": [o.to_dict() for o in self.originals],
            "obsolete": [c.name for c in self.obsolete],
            "aborted": [c.name for c in self.aborted],
            "not_visible": [c.name for c in self.not_visible],
            "unusable": [c.name for c in self.unusable],
            "invalid": [c.name for c in self.invalid],
            "aborted_write_ids": list(self.aborted_write_ids),
            "has_uncompacted_aborts": self.has_uncompacted_aborts,
            "not_enough_history": self.not_enough_history,
            "reader_errors": list(self.reader_errors),
            "entries": [c.to_dict() for c in self.entries],
        }


# =========================================================================================
# getAcidState
# =========================================================================================


def delta_sort_key(c: Classified):
    """``ParsedDelta.compareTo``: min ASC, max DESC, statement ASC (−1 first), then path."""
    return (*delta_read_order(c.delta_dir), c.path)


def _range_text(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo}..{hi}"


def _why_not_valid(wl: WriteIdList, lo: int, hi: int) -> str:
    """Explain a NONE range: which ids are open, aborted or above the high-water mark."""
    parts = []
    if hi > wl.hwm:
        parts.append(
            f"above the high-water mark {wl.hwm}"
            if lo > wl.hwm
            else f"{_range_text(max(lo, wl.hwm + 1), hi)} above the high-water mark {wl.hwm}"
        )
    top = min(hi, wl.hwm)
    if lo <= top:
        import bisect

        o = wl.open[bisect.bisect_left(wl.open, lo) : bisect.bisect_right(wl.open, top)]
        a = wl.aborted[bisect.bisect_left(wl.aborted, lo) : bisect.bisect_right(wl.aborted, top)]
        if o:
            parts.append(("open write id " if len(o) == 1 else "open write ids ") + _ids_text(o))
        if a:
            parts.append(("aborted write id " if len(a) == 1 else "aborted write ids ") + _ids_text(a))
    return "; ".join(parts) or "no committed write id in range"


def _ids_text(ids: tuple[int, ...], limit: int = 5) -> str:
    s = ",".join(map(str, ids[:limit]))
    return s + (f",... ({len(ids)} in all)" if len(ids) > limit else "")


@dataclasses.dataclass
class _Scan:
    """What the stages of :func:`get_acid_state` hand on to each other."""

    wl: WriteIdList
    tx: TxnList
    hive_version: int
    entries: list[Classified] = dataclasses.field(default_factory=list)  # every child, name order
    bases: list[Classified] = dataclasses.field(default_factory=list)
    working: list[Classified] = dataclasses.field(default_factory=list)  # candidate deltas
    original_files: list[Classified] = dataclasses.field(default_factory=list)
    original_dirs: list[Classified] = dataclasses.field(default_factory=list)
    reader_errors: list[str] = dataclasses.field(default_factory=list)
    aborted_ids: list[int] = dataclasses.field(default_factory=list)
    has_uncompacted_aborts: bool = False
    compacted_cache: dict[str, bool] = dataclasses.field(default_factory=dict)

    @property
    def h4(self) -> bool:
        return self.hive_version == 4

    def is_compacted(self, c: Classified, *, hive_reads: bool = True) -> bool:
        """A compacted base (Hive 4: ``_vM`` with M > 0; both: ``_metadata_acid``). Reading an
        unreadable ``_metadata_acid`` is a reader error when Hive reads it (``hive_reads``)."""
        if self.hive_version == 2:
            return False  # Hive 2.3 has no _metadata_acid: every base is judged alike (B.4)
        if c.name not in self.compacted_cache:
            md = metadata_of(c.entry)
            problem = md.problem(self.hive_version) if md is not None else None
            by_suffix = self.h4 and c.base_dir.visibility > 0
            if problem and hive_reads and not by_suffix:
                # MetaDataFile.isCompacted throws while choosing the base
                self.reader_errors.append(f"{c.path}/{METADATA_FILE}: {problem}")
            self.compacted_cache[c.name] = by_suffix or (md is not None and md.compacted)
        return self.compacted_cache[c.name]


def get_acid_state(
    listing: DirListing,
    write_ids: WriteIdList,
    *,
    txns: TxnList | None = None,
    hive_version: int = 3,
    ignore_empty_files: bool = True,
    insert_only: bool = False,
    names: list[NamedChild] | None = None,
) -> AcidState:
    """Hive's reader directory selection for one table/partition directory.

    ``write_ids``: the reader's ValidWriteIdList (or a compactor list, ``for_compactor()``).
    ``txns``: Hive 4's ValidTxnList for ``_vM`` visibility; ``None`` under Hive 4 means every
    visibility txn is treated as committed (Hive itself would refuse: "No ValidTxnList").
    ``ignore_empty_files``: readers pass true (zero-length originals are skipped); the Initiator
    passes false. ``insert_only``: Hive 3 then also tracks aborted deltas (insert-only
    compaction path); it does not change the selection. ``names``: :func:`classify_names` of
    this same listing, when the caller runs several snapshots over it.

    Stages (spec §3–§6): :func:`_classify` every child, :func:`_choose_base`,
    :func:`_not_enough_history`, :func:`_originals` (only without a base), :func:`_walk_deltas`.
    """
    if hive_version not in (2, 3, 4):
        raise UsageError(f"hive version must be 2, 3 or 4, not {hive_version!r}")
    scan = _Scan(write_ids, txns if txns is not None else TxnList.all_committed(), hive_version)
    _classify(
        scan,
        classify_names(listing) if names is None else names,
        ignore_empty_files=ignore_empty_files,
        insert_only=insert_only,
    )
    best, oldest = _choose_base(scan)
    not_enough = _not_enough_history(scan, best, oldest)
    originals = _originals(scan, best, listing, ignore_empty_files=ignore_empty_files)
    deltas = _walk_deltas(scan, best)
    if hive_version == 2:
        _say_txn_ids(scan.entries)

    def pick(role):
        return [c for c in scan.entries if c.role is role]

    return AcidState(
        path=listing.path,
        partition=listing.partition,
        hive_version=hive_version,
        write_ids=write_ids,
        txns=txns,
        entries=scan.entries,
        base=best,
        deltas=deltas,
        originals=originals,
        obsolete=pick(Role.OBSOLETE),
        aborted=pick(Role.ABORTED),
        not_visible=pick(Role.NOT_VISIBLE),
        unusable=pick(Role.UNUSABLE),
        invalid=pick(Role.INVALID),
        ignored=pick(Role.IGNORED),
        aborted_write_ids=tuple(sorted(set(scan.aborted_ids))),
        has_uncompacted_aborts=scan.has_uncompacted_aborts,
        not_enough_history=not_enough,
        reader_errors=scan.reader_errors,
    )


@dataclasses.dataclass(frozen=True)
class NamedChild:
    """What a child's name alone says (no snapshot involved): its path, kind and parsed name,
    or for a hidden child the reason. Computed once per listing by :func:`classify_names` and
    shared by every :func:`get_acid_state` run over it (reader, compactor, cleaner lists)."""

    entry: ChildEntry
    path: str
    kind: Kind
    parsed: BaseDir | DeltaDir | None = None
    reason: str = ""


def _say_txn_ids(entries: list[Classified]) -> None:
    """Hive 2.3 names directories by txn ids (its reader's list is a ValidTxnList): the reasons,
    written once for write ids, say so."""
    for c in entries:
        if c.reason:
            c.reason = c.reason.replace("write id", "txn id")


def classify_names(listing: DirListing) -> list[NamedChild]:
    """Step 1's snapshot-independent half for every child of ``listing``, in name order (the
    HDFS listing order): hidden, original file or directory, unparseable, base, delta or delete
    delta. Pass the result as ``names=`` to several :func:`get_acid_state` runs over the same
    listing to list, sort and parse once (``acidctl state`` runs the reader's and the
    compactor's)."""
    out: list[NamedChild] = []
    child_path = listing.child_path
    for e in sorted(listing.entries, key=lambda x: x.name):
        name = e.name
        p = child_path(name)
        if is_hidden(name):
            h = HiddenEntry.parse(name)
            what = h.kind.value if h is not None else "other"
            out.append(NamedChild(e, p, Kind.HIDDEN, None, f"hidden ({what}); never listed by readers"))
        elif not e.is_dir:
            out.append(NamedChild(e, p, Kind.ORIGINAL_FILE))
        elif not has_acid_prefix(name):
            out.append(NamedChild(e, p, Kind.ORIGINAL_DIR))
        else:
            parsed = parse_acid_dir(name)
            if parsed is None:
                msg = f"cannot parse directory name {name} (Hive throws NumberFormatException for the whole directory)"
                out.append(NamedChild(e, p, Kind.UNPARSEABLE, None, msg))
            elif isinstance(parsed, BaseDir):
                out.append(NamedChild(e, p, Kind.BASE, parsed))
            else:
                out.append(NamedChild(e, p, Kind.DELETE_DELTA if parsed.delete else Kind.DELTA, parsed))
    return out


def _classify(scan: _Scan, names: list[NamedChild], *, ignore_empty_files: bool, insert_only: bool) -> None:
    """Steps 1/2: every child (name order = HDFS listing order) gets a kind and a first role;
    bases, candidate deltas and originals are collected for the next stages."""
    wl, tx, h4 = scan.wl, scan.tx, scan.h4
    append = scan.entries.append
    for n in names:
        e, p, kind, parsed = n.entry, n.path, n.kind, n.parsed
        if kind is Kind.HIDDEN:
            append(Classified(e.name, p, Kind.HIDDEN, Role.IGNORED, n.reason, e))
            continue
        if kind is Kind.ORIGINAL_FILE:
            c = Classified(e.name, p, Kind.ORIGINAL_FILE, Role.ORIGINAL, "", e)
            append(c)
            if ignore_empty_files and e.size == 0:
                c.role, c.reason = Role.IGNORED, "empty original file (readers skip zero-length files)"
            else:
                scan.original_files.append(c)
            continue
        if kind is Kind.ORIGINAL_DIR:
            c = Classified(e.name, p, Kind.ORIGINAL_DIR, Role.ORIGINAL, "", e)
            append(c)
            scan.original_dirs.append(c)
            continue
        if parsed is None:
            append(Classified(e.name, p, Kind.UNPARSEABLE, Role.INVALID, n.reason, e))
            scan.reader_errors.append(f"{p}: {n.reason}")
            continue
        c = Classified(e.name, p, kind, Role.IGNORED, "", e, parsed)
        append(c)
        if not h4 and parsed.has_visibility_suffix:
            c.role = Role.INVALID
            c.reason = "visibility suffix _v is Hive 4 only: Hive 3 readers fail with NumberFormatException"
            scan.reader_errors.append(f"{p}: {c.reason}")
            continue
        if h4 and not tx.is_valid(parsed.visibility):  # isDirUsable
            if tx.is_aborted(parsed.visibility):
                c.role, c.reason = (
                    Role.ABORTED,
                    f"visibility txn {parsed.visibility} aborted (failed compaction output)",
                )
            else:
                c.role, c.reason = Role.NOT_VISIBLE, f"visibility txn {parsed.visibility} not committed for this reader"
            continue
        if kind is Kind.BASE:
            scan.bases.append(c)
            continue
        lo, hi = parsed.min_write_id, parsed.max_write_id
        ra = wl.range_aborted(lo, hi)
        if ra is RangeResponse.ALL:
            # Hive 4: abortedDirectories; Hive 3 full-ACID: the range is NONE and the reader
            # skips it (tracked as aborted only for insert-only tables)
            c.role = Role.ABORTED
            c.reason = f"every write id aborted ({_range_text(lo, hi)})"
            if h4 or insert_only:
                scan.aborted_ids.extend(range(lo, hi + 1))  # ALL aborted: at most len(aborted) ids
            continue
        if ra is RangeResponse.SOME:
            scan.has_uncompacted_aborts = True
        if wl.range_valid(lo, hi) is RangeResponse.NONE:
            c.role = Role.NOT_VISIBLE
            c.reason = "no committed write id: " + _why_not_valid(wl, lo, hi)
            continue
        scan.working.append(c)


def _valid_base(scan: _Scan, c: Classified) -> bool:
    """``isValidBase``: a conversion base always; Hive 4's shortcut below the lowest open id;
    a compacted base when every id up to N is committed; an INSERT OVERWRITE base when N is."""
    wl = scan.wl
    n = c.base_dir.write_id
    if n == LONG_MIN:
        return True
    if scan.hive_version == 2:  # Hive 2.3: isValidBase for every base (insert-only-and-hive2.md B.4)
        return wl.is_valid_base(n)
    if scan.h4 and wl.min_open != LONG_MAX and n <= wl.min_open:  # HIVE-22754 shortcut
        return True
    if scan.is_compacted(c):
        return wl.is_valid_base(n)
    return wl.is_valid(n)


def _choose_base(scan: _Scan) -> tuple[Classified | None, Classified | None]:
    """Steps 3.2 / 4.3: (the base the reader uses, the oldest base); the others get their role."""
    wl, tx, h4 = scan.wl, scan.tx, scan.h4
    best: Classified | None = None
    oldest: Classified | None = None
    for c in scan.bases:
        n = c.base_dir.write_id
        if oldest is None or oldest.base_dir.write_id > n:
            oldest = c
        if h4:
            if not scan.is_compacted(c) and wl.is_aborted(n):
                c.role, c.reason = Role.ABORTED, f"INSERT OVERWRITE by aborted write id {n}"
                scan.aborted_ids.append(n)
                continue
            candidate = (
                best is None
                or best.base_dir.write_id < n
                or (best.base_dir.write_id == n and scan.is_compacted(c) and tx.is_valid(c.base_dir.visibility))
            )
            if candidate:
                if _valid_base(scan, c):
                    if best is not None:
                        best.role, best.reason = Role.OBSOLETE, f"superseded by {c.name}"
                    best = c
                else:
                    _unusable_base(c, wl, scan.is_compacted(c), h4, scan.hive_version == 2)
            else:
                assert best is not None  # not a candidate: a base at least as new is chosen
                c.role, c.reason = Role.OBSOLETE, f"superseded by {best.name}"
        else:
            if best is None:
                if _valid_base(scan, c):
                    best = c
                else:
                    _unusable_base(c, wl, scan.is_compacted(c), h4, scan.hive_version == 2)
            elif best.base_dir.write_id < n:
                if _valid_base(scan, c):
                    best.role, best.reason = Role.OBSOLETE, f"superseded by {c.name}"
                    best = c
                else:
                    _unusable_base(c, wl, scan.is_compacted(c), h4, scan.hive_version == 2)
            else:
                c.role, c.reason = Role.OBSOLETE, f"superseded by {best.name}"

    if best is not None:
        best.role = Role.BASE
        best.compacted = scan.is_compacted(best, hive_reads=False)
        best.reason = (
            "current base ("
            + (
                "conversion base"
                if best.base_dir.write_id == LONG_MIN
                else "Hive 2.3 base"
                if scan.hive_version == 2
                else "compacted"
                if best.compacted
                else "INSERT OVERWRITE"
            )
            + ")"
        )
    for c in scan.bases:
        if c.compacted is None:
            c.compacted = scan.is_compacted(c, hive_reads=False)
    return best, oldest


def _not_enough_history(scan: _Scan, best: Classified | None, oldest: Classified | None) -> str | None:
    """Step 6: Hive's "Not enough history" message when there are bases but none is usable
    (Hive 4: only when the oldest base is a compacted one)."""
    if oldest is not None and best is None and (not scan.h4 or scan.is_compacted(oldest)):
        exc = scan.wl.exceptions
        return NOT_ENOUGH_HISTORY.format(scan.wl.hwm, exc[0] if exc else "x", oldest.path)
    return None


def _originals(
    scan: _Scan, best: Classified | None, listing: DirListing, *, ignore_empty_files: bool
) -> list[OriginalRef]:
    """Step 3: the original files read (sorted by full path) — none when there is a base,
    which makes every original obsolete."""
    originals: list[OriginalRef] = []
    if best is not None:
        for c in scan.original_files + scan.original_dirs:
            c.role = Role.OBSOLETE
            c.reason = f"original {'file' if c.kind is Kind.ORIGINAL_FILE else 'directory'} superseded by {best.name}"
        return originals
    for c in scan.original_files:
        # the listing does not open files: one with the ACID schema keeps its own ROW__IDs in
        # merged reads and compaction (state --deep names it, F16)
        c.reason = "original file (write id 0, synthetic ROW__IDs; an ACID file keeps its own)"
        originals.append(OriginalRef(c.path, c.name, c.entry.size, _bucket_of(c.name)))
    for c in scan.original_dirs:
        used = 0
        for f in c.entry.files:
            if is_hidden_path(f.name) or (ignore_empty_files and f.size == 0):
                continue
            rel = c.name + "/" + f.name
            originals.append(OriginalRef(listing.child_path(rel), rel, f.size, _bucket_of(posixpath.basename(f.name))))
            used += 1
        c.reason = f"original directory: {plural(used, 'file')} read as write id 0"
    originals.sort(key=lambda o: o.path)
    return originals


def _walk_deltas(scan: _Scan, best: Classified | None) -> list[Classified]:
    """Steps 4/5: the candidate deltas in Hive's order, walked from the base's write id: each
    one read, covered (obsolete) or skipped as not visible; returns the current ones in read
    order (``read_order`` set)."""
    wl = scan.wl
    working = sorted(scan.working, key=delta_sort_key)
    current = best.base_dir.write_id if best is not None else 0
    last_stmt = -1
    prev: Classified | None = None
    cover = best
    deltas: list[Classified] = []
    for c in working:
        d = c.delta_dir
        if d.max_write_id > current:
            if wl.range_valid(current + 1, d.max_write_id) is not RangeResponse.NONE:
                deltas.append(c)
                current, last_stmt, prev, cover = d.max_write_id, d.statement_id, c, c
                c.reason = (
                    "read: write id " if d.min_write_id == d.max_write_id else "read: write ids "
                ) + _range_text(d.min_write_id, d.max_write_id)
                if wl.range_valid(d.min_write_id, d.max_write_id) is not RangeResponse.ALL:
                    # first-use report: say which ids inside the range the reader skips
                    c.reason += " (events of " + _why_not_valid(wl, d.min_write_id, d.max_write_id) + " skipped)"
            else:
                c.role = Role.NOT_VISIBLE
                c.reason = (
                    f"write ids {_range_text(current + 1, d.max_write_id)} not committed "
                    f"({_why_not_valid(wl, current + 1, d.max_write_id)}); the rest is covered"
                )
                continue
        elif d.max_write_id == current and last_stmt >= 0:
            deltas.append(c)
            prev = c
            c.reason = f"read: another statement of write id {d.max_write_id}"
        elif (
            prev is not None
            and d.max_write_id == prev.delta_dir.max_write_id
            and d.min_write_id == prev.delta_dir.min_write_id
            and d.statement_id == prev.delta_dir.statement_id
        ):
            c.reason = f"read: same range as {prev.name}"
            deltas.append(c)
            prev = c
        else:
            c.role = Role.OBSOLETE
            c.reason = f"covered by {cover.name}" if cover is not None else "covered"
            continue
        c.role = Role.DELETE_DELTA if c.kind is Kind.DELETE_DELTA else Role.DELTA
    for i, c in enumerate(deltas):
        c.read_order = i
    return deltas


def _unusable_base(c: Classified, wl: WriteIdList, compacted: bool, h4: bool, h2: bool = False) -> None:
    n = c.base_dir.write_id
    if h2:
        c.role = Role.UNUSABLE
        c.reason = (
            f"Hive 2.3 base needs txn {n} below the lowest open txn "
            f"({wl.min_open if wl.min_open != LONG_MAX else 'none'}) and <= the high-water mark {wl.hwm}"
        )
        return
    if compacted:
        c.role = Role.UNUSABLE
        c.reason = (
            f"compacted base needs every write id <= {n} committed "
            f"(lowest open {wl.min_open if wl.open else 'none'}, high-water mark {wl.hwm})"
        )
    elif wl.is_aborted(n):
        c.role = Role.ABORTED
        c.reason = f"INSERT OVERWRITE by aborted write id {n}; readers ignore it"
    else:
        c.role = Role.NOT_VISIBLE
        c.reason = f"INSERT OVERWRITE by write id {n}, not committed for this reader"


def _bucket_of(name: str) -> int | None:
    o = OriginalFile.parse(name)
    return o.bucket if o is not None else None


def visibility_txns_in_names(listings: Iterable[DirListing]) -> list[int]:
    out = set()
    for lst in listings:
        for e in lst.entries:
            if e.is_dir and not is_hidden(e.name):
                d = parse_acid_dir(e.name)
                if d is not None and d.visibility:
                    out.add(d.visibility)
    return sorted(out)
