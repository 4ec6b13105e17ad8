"""How Hive's compactor names its output: ONE rule, used by ``compact`` (planner, dry run),
``why`` (the WORKER line), ``doctor`` (which compaction row explains a directory), ``clean``
and ``revert``; and when it has nothing to compact (:func:`nothing_to_compact`, used by the
planner — so by ``compact`` and the worker — and by ``why`` and ``doctor`` through
:func:`predict`). Pure: no I/O, no metastore.

The rule, per Hive version and compactor (sources read at the cited commits):

* **Full-ACID tables, MR compactor** — Hive 3.1 ``CompactorMR`` (always) and Hive 4.0
  ``MRCompactor``, which ``CompactorFactory.getCompactor`` picks for full-ACID tables unless
  ``hive.compactor.crud.query.based=true`` (default **false**, operations.md §9) *and* the
  execution engine is Tez: ``launchCompactionJob`` sets ``MIN_TXN``/``MAX_TXN`` to the minimum
  ``minWriteId`` / maximum ``maxWriteId`` **over the current deltas it reads** (the
  ``getAcidState`` run with the compactor write-id list, whose ``isWriteIdRangeValid`` is ALL for
  every range at or below its hwm, so aborted-only deltas are read too), and the writers use
  ``minimumWriteId(MIN_TXN).maximumWriteId(MAX_TXN).statementId(-1)
  .visibilityTxnId(compactorTxnId)``. So: major ``base_<max>``, minor ``delta_<min>_<max>`` /
  ``delete_delta_<min>_<max>``; Hive 4 appends ``_v<compactor txn>`` (= ``CQ_TXN_ID``); Hive 3
  has no suffix. The name is *not* ``CQ_HIGHEST_WRITE_ID`` (the compactor list's hwm, which the
  Worker records): it can be lower, e.g. ``base_0000002`` for a compaction whose hwm is 6 when
  the partition's newest delta is 2.
  (``apache/hive@302e5726:ql/src/java/org/apache/hadoop/hive/ql/txn/compactor/MRCompactor.java``
  ``launchCompactionJob``, ``CompactorMap.getWriter``, ``CompactorOutputCommitter.commitJob``;
  ``apache/hive@0833b38f:.../CompactorFactory.java``; Hive 3: ``apache/hive@bfb55568:
  .../CompactorMR.java``; spec orc-acid-files.md §12.1.)
  Originals only (major, no delta): Hive names it ``base_-9223372036854775808``
  (``Long.MIN_VALUE``); acidctl writes ``base_0000000`` instead (never a negative write id in a
  name; ``base_0`` holds exactly the write id of original rows).
* **Full-ACID tables, Hive 4 query-based compactor** (``hive.compactor.crud.query.based=true`` on
  Tez): ``QueryCompactor.Util.getCompactionResultDir``: max = the compactor list's **hwm**, min =
  1 for a base, else the smallest min of the compacted deltas: ``base_<hwm>_v<txn>``,
  ``delta_<min>_<hwm>_v<txn>`` (orc-acid-files.md §12.2). acidctl does not write this way
  (``QUERY_BASED`` is only for recognising Hive's own output).
* **Insert-only tables**: Hive 3.1 ``CompactorMR.runMmCompaction`` renames its result to
  ``base_<compactor hwm>`` (major only; a minor request only removes aborted directories);
  Hive 4.0 always uses ``MmMajorQueryCompactor`` / ``MmMinorQueryCompactor`` (the query-based
  key and the engine are not consulted for insert-only tables): ``base_<hwm>_v<txn>``,
  ``delta_<min>_<hwm>_v<txn>`` (insert-only-and-hive2.md A.6.1, A.6.2).

In every case the compacted range ends at or below the compactor hwm, so a compaction row
(``CQ_HIGHEST_WRITE_ID`` = that hwm, ``CQ_TXN_ID`` = its txn on Hive 4) can have written a
directory exactly when :func:`row_explains` says so.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Sequence

MR = "mr"  # Hive 3 CompactorMR / Hive 4 MRCompactor (full ACID; Hive 4's default)
QUERY_BASED = "query"  # Hive 4 Major/MinorQueryCompactor, Mm*QueryCompactor; Hive 3 MM compaction
MAJOR = "major"
MINOR = "minor"

#: how a dry run / a prediction shows the Hive 4 suffix before the compactor txn exists
VIS_PLACEHOLDER = "_v<compaction txn>"


@dataclasses.dataclass(frozen=True)
class DeltaRange:
    """One current delta the compactor reads: its write-id range and whether it is a delete delta."""

    min_write_id: int
    max_write_id: int
    delete: bool = False
    compacted: bool = False  # no statement id (a compactor's or a single-statement writer's output)
    aborted: bool = False  # aborted-only, read by the MR compactor below its hwm


@dataclasses.dataclass(frozen=True)
class Output:
    """The compactor's output: the write-id range and the directory names (without the Hive 4
    suffix when ``visibility`` is 0 / None)."""

    kind: str  # "major" | "minor"
    min_write_id: int
    max_write_id: int
    names: tuple[str, ...]

    def to_dict(self) -> dict:
        return {
            "type": self.kind,
            "min_write_id": self.min_write_id,
            "max_write_id": self.max_write_id,
            "names": list(self.names),
        }


def compactor_for(*, hive_version: int, insert_only: bool, crud_query_based: bool = False) -> str:
    """Which compactor Hive runs (see the module doc): insert-only tables are always compacted
    by a query named after the compactor hwm; full-ACID tables by the MR compactor unless Hive 4
    runs the query-based one (``hive.compactor.crud.query.based=true`` on Tez)."""
    if insert_only:
        return QUERY_BASED
    if hive_version >= 4 and crud_query_based:
        return QUERY_BASED
    return MR


def _fmt(n: int) -> str:
    return f"{n:07d}" if n >= 0 else str(n)


def _suffix(visibility: int | str | None) -> str:
    if visibility is None or visibility == 0:
        return ""
    if isinstance(visibility, str):
        return visibility  # a placeholder such as VIS_PLACEHOLDER
    return f"_v{_fmt(int(visibility))}"


def output_range(
    kind: str, *, deltas: Sequence[DeltaRange], compactor_hwm: int, compactor: str = MR
) -> tuple[int, int] | None:
    """(min, max) write ids of the output, or None when Hive would write nothing (minor with no
    delta). Major with no delta (originals only, MR): max 0 (Hive: ``Long.MIN_VALUE``)."""
    if compactor == QUERY_BASED:
        if kind == MAJOR:
            return (1, compactor_hwm)
        if not deltas:
            return None
        return (min(d.min_write_id for d in deltas), compactor_hwm)
    if not deltas:
        return (0, 0) if kind == MAJOR else None
    return (min(d.min_write_id for d in deltas), max(d.max_write_id for d in deltas))


def output_names(
    kind: str,
    *,
    deltas: Sequence[DeltaRange],
    compactor_hwm: int,
    hive_version: int,
    visibility: int | str | None = None,
    compactor: str = MR,
    has_inserts: bool | None = None,
    has_deletes: bool | None = None,
) -> Output | None:
    """The directories a compaction of ``kind`` writes, or None when it writes nothing.

    ``deltas``: the current deltas the compactor reads (for the MR compactor including the
    aborted-only ones at or below its hwm). ``visibility``: the compactor txn (Hive 4 only; a
    string is used as is, e.g. :data:`VIS_PLACEHOLDER`). A minor compaction writes ``delta_``
    when it reads an insert delta (``has_inserts`` overrides) and ``delete_delta_`` when it reads
    a delete delta (``has_deletes`` overrides); Hive 3 insert-only minor writes nothing."""
    rng = output_range(kind, deltas=deltas, compactor_hwm=compactor_hwm, compactor=compactor)
    if rng is None:
        return None
    lo, hi = rng
    vis = _suffix(visibility) if hive_version >= 4 else ""
    if kind == MAJOR:
        return Output(MAJOR, hi, hi, (f"base_{_fmt(hi)}{vis}",))
    ins = has_inserts if has_inserts is not None else any(not d.delete for d in deltas)
    dels = has_deletes if has_deletes is not None else any(d.delete for d in deltas)
    names = []
    if ins:
        names.append(f"delta_{_fmt(lo)}_{_fmt(hi)}{vis}")
    if dels:
        names.append(f"delete_delta_{_fmt(lo)}_{_fmt(hi)}{vis}")
    if not names:
        return None
    return Output(MINOR, lo, hi, tuple(names))


def row_explains(
    row: dict, *, kind: str, max_write_id: int, visibility: int | None, hive_version: int, compactor: str = MR
) -> bool:
    """Could the compaction of queue/history ``row`` (short keys: ``type`` 'a'/'i'/'r',
    ``highest_write_id``, ``txn_id``) have written a directory named with ``max_write_id`` and
    ``visibility`` (its ``_v`` suffix, 0/None for none), of ``kind`` (``base`` / ``delta`` /
    ``delete_delta``)?

    * type: a major (or rebalance) writes a base; a minor writes deltas;
    * write ids: the MR compactor's max is the highest write id of the deltas it read, all at or
      below the row's ``CQ_HIGHEST_WRITE_ID`` (its hwm); query-based output is named exactly
      after the hwm; originals-only major: ``base_0``;
    * Hive 4: the ``_v`` suffix is the row's compaction txn (``CQ_TXN_ID``); Hive 3 output has no
      suffix. A row that records no highest write id (Hive 3 rows before the Worker set it) is
      matched on type (and txn) only."""
    rtype = row.get("type")
    if kind == "base" and rtype not in ("a", "r"):
        return False
    if kind in ("delta", "delete_delta") and rtype != "i":
        return False
    if hive_version >= 4:
        txn = row.get("txn_id")
        if not visibility or not txn or int(txn) != int(visibility):
            return False
    elif visibility:
        return False
    hw = row.get("highest_write_id")
    if hw is None or int(hw) <= 0:
        return True
    if compactor == QUERY_BASED:
        return max_write_id == int(hw)
    return max_write_id <= int(hw)


def explaining_rows(
    rows: Iterable[dict],
    *,
    kind: str,
    max_write_id: int,
    visibility: int | None,
    hive_version: int,
    compactor: str = MR,
) -> list[dict]:
    """The rows of :func:`row_explains`, newest first."""
    out = [
        r
        for r in rows
        if row_explains(
            r,
            kind=kind,
            max_write_id=max_write_id,
            visibility=visibility,
            hive_version=hive_version,
            compactor=compactor,
        )
    ]
    return sorted(out, key=lambda r: -int(r.get("id") or 0))


def nothing_to_compact(
    kind: str, *, deltas: Sequence[DeltaRange], has_base: bool, has_originals: bool, hive_version: int
) -> str:
    """Why a full-ACID compaction of ``kind`` has nothing to compact, or ``""`` when it has
    something. ONE rule: ``compact`` (the planner), the worker's claimed requests (through the
    planner), ``why`` and ``doctor`` (:func:`predict`) all decide with it.

    ``deltas``: the deltas the compactor reads (:func:`acidctl.compact.planner.compactor_deltas`),
    the aborted-only ones flagged ``aborted``.

    * **Hive 4** (``Worker.findNextCompactAndExecuteMR`` → ``isEnoughToCompact`` on the Worker's
      ``getAcidState``, ``apache/hive:ql/src/java/org/apache/hadoop/hive/ql/txn/compactor/
      Worker.java``; ``QueryCompactor.Util.isEnoughToCompact`` the same; operations.md §3.2 step
      6) counts ``dir.getCurrentDirectories()``, which holds no aborted-only delta (Hive 4's
      ``processDeltaDir`` puts those into ``abortedDirectories``, directory-state.md §3.2 step 5):
      major needs originals or at least 2 of base + current deltas; minor needs at least 2
      current deltas, and exactly 2 must not be one insert delta and one delete delta
      (``groupingBy(isDeleteDelta)``: ``deltaByType.size() != deltaCount``). Not enough → the
      Worker ``markCompacted`` when obsolete or aborted directories exist (the Cleaner removes
      them), else ``markRefused``.
    * **Hive 3.1** (``CompactorMR.run``, branch-3.1; the same text in ``lijufeng2016/
      HDP-hive3.1.0@ef49be71:ql/src/java/org/apache/hadoop/hive/ql/txn/compactor/
      CompactorMR.java``: ``if (parsedDeltas.size() == 0 && dir.getOriginalFiles().size() == 0)
      ... return``) skips only when there is no delta (aborted-only ones included: its compactor
      list reads them) and no original file, for either kind; the Worker then ``markCompacted``
      either way. Hive 2.3 likewise.
    * **acidctl's own addition (every version)**: a minor compaction whose deltas already are
      one compacted range (no statement id, every delta from ``lo`` to ``hi``) would only
      rewrite them under their own names (Hive 3 has no ``_v`` suffix: e.g. a lone
      ``delta_4_5`` whose write ids are all aborted): nothing to compact, never "already
      exists". Hive 3.1 would run its job into the existing name; acidctl does not."""
    if hive_version >= 4:
        current = [d for d in deltas if not d.aborted]
        if kind == MAJOR:
            if has_originals:
                return ""
            if not current:
                return "no delta files or original files found to compact"
            if len(current) == 1 and not has_base:
                return "a single current delta and no base or original files (Hive 4 compacts at least 2)"
            return ""
        if not current:
            return "no current delta directories"
        if len(current) == 1:
            return "a single current delta directory (Hive 4's minor compaction needs at least 2)"
        if len(current) == 2 and current[0].delete != current[1].delete:
            return "only one insert delta and one delete delta (Hive 4 does not compact that pair)"
    elif kind == MAJOR:
        if not deltas and not has_originals:
            return "no delta files or original files found to compact"
        return ""
    elif not deltas:
        return "no current delta directories"
    lo = min(d.min_write_id for d in deltas)
    hi = max(d.max_write_id for d in deltas)
    if all(d.min_write_id == lo and d.max_write_id == hi and d.compacted for d in deltas):
        return f"the current deltas already cover {lo}..{hi} as one range"
    return ""


def predict(
    kind: str,
    *,
    deltas: Sequence[DeltaRange],
    has_base: bool,
    has_originals: bool,
    compactor_hwm: int,
    hive_version: int,
    insert_only: bool = False,
    visibility: int | str | None = VIS_PLACEHOLDER,
) -> tuple[Output | None, str]:
    """What ``acidctl compact`` (and Hive's Worker) writes for a compaction of ``kind`` given the
    compactor's inputs (:func:`acidctl.compact.planner.compactor_deltas`), or (None, why
    nothing). The same conditions as the planners (``compact.planner.plan_partition``,
    ``mm.compact``): MR major needs a delta or originals; MR minor needs deltas that are not
    already one compacted range; insert-only major needs two inputs with at least one delta,
    insert-only minor two deltas (Hive 3: no insert-only minor at all)."""
    if insert_only:
        ds = [d for d in deltas if not d.delete and not d.aborted]
        if kind == MAJOR:
            if not ds or len(ds) + (1 if has_base else 0) <= 1:
                return None, "nothing to compact: fewer than two inputs"
        elif hive_version < 4:
            return None, "Hive 3 has no insert-only minor compaction (a minor request only removes aborted deltas)"
        elif len(ds) < 2:
            return None, "nothing to compact: fewer than two current delta directories"
        out = output_names(
            kind,
            deltas=ds,
            compactor_hwm=compactor_hwm,
            hive_version=hive_version,
            visibility=visibility,
            compactor=QUERY_BASED,
            has_inserts=True,
        )
        return out, ""
    why_not = nothing_to_compact(
        kind, deltas=deltas, has_base=has_base, has_originals=has_originals, hive_version=hive_version
    )
    if why_not:
        return None, f"nothing to compact: {why_not}"
    out = output_names(
        kind, deltas=deltas, compactor_hwm=compactor_hwm, hive_version=hive_version, visibility=visibility
    )
    return out, ""


def predict_from(
    compactor: dict, kind: str, *, hive_version: int, visibility: int | str | None = VIS_PLACEHOLDER
) -> tuple[Output | None, str]:
    """:func:`predict` from the plain-data view ``doctor``'s collector records per partition
    (``acidctl.doctor.collect.compactor_inputs``)."""
    deltas = [
        DeltaRange(
            int(d["min_write_id"]),
            int(d["max_write_id"]),
            bool(d.get("delete")),
            bool(d.get("compacted")),
            bool(d.get("aborted")),
        )
        for d in compactor.get("deltas", [])
    ]
    return predict(
        kind,
        deltas=deltas,
        has_base=compactor.get("base") is not None,
        has_originals=bool(compactor.get("originals")),
        compactor_hwm=int(compactor["hwm"]),
        hive_version=hive_version,
        insert_only=bool(compactor.get("insert_only")),
        visibility=visibility,
    )
