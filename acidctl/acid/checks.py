"""Directory-level validation checks for ``acidctl state`` (../shared/spec/directory-state.md §9).

* :func:`check_names` — D01–D11 (names and layout; D04 needs the snapshot and lives in
  :func:`check_snapshot`);
* :func:`check_markers` — M01–M08 (``_orc_acid_version``, ``_metadata_acid``, side files);
* :func:`check_snapshot` — S01–S14, D04 and D12 (the reader's snapshot, the Initiator's view);
* :func:`check_partition` — all of the above for one partition.

Checks marked (M) in the spec run only when the caller passes :class:`MetastoreFacts`; a
finding whose warn/info level depends on a metastore fact uses the info level without it.
All functions are pure: ``now`` is passed in for the age-based rules.
"""

from __future__ import annotations

import dataclasses
import re
import struct
import time
from typing import Iterable, Iterator

from acidctl.acid.acidstate import AcidState, Classified, Kind, Role
from acidctl.acid.listing import ChildEntry, DirListing
from acidctl.acid.markers import MetadataAcid
from acidctl.acid.dirname import (
    BaseDir,
    DeltaDir,
    FLUSH_LENGTH_SUFFIX,
    HiddenEntry,
    METADATA_FILE,
    ORC_ACID_VERSION_FILE,
    OriginalFile,
    has_acid_prefix,
    is_hidden,
    is_hidden_path,
    is_strict_bucket_name,
    parse_acid_dir,
)
from acidctl.acid.initiator import ABORTED_KEY, DELTA_NUM_KEY, DELTA_PCT_KEY, Recommendation
from acidctl.acid.writeids import LONG_MIN, RangeResponse, TxnList
from acidctl.findings import Finding, Severity
from acidctl.units import duration as fmt_duration
from acidctl.units import ratio as fmt_ratio
from acidctl.units import plural

DEFAULT_GRACE_SECONDS = 24 * 3600.0

INFO, WARN, ERROR = Severity.INFO, Severity.WARN, Severity.ERROR


@dataclasses.dataclass(frozen=True)
class MetastoreFacts:
    """Facts only the metastore knows; every field optional (None / empty = unknown)."""

    hive_version: int | None = None
    table_hwm: int | None = None  # NEXT_WRITE_ID − 1 (S13)
    aborted_txn_count: int | None = None  # aborted txns on the partition (S11)
    compaction_highest_write_ids: frozenset[int] = frozenset()  # CQ_HIGHEST_WRITE_ID values (M05)
    txns: TxnList | None = None  # for S05/S06
    stale_open_write_ids: frozenset[int] = frozenset()  # open write ids whose txn heartbeat is too old (S04)
    cleaner_backlog_seconds: float | None = None  # age of the oldest 'r' queue row (S02)


def _f(check: str, sev: Severity, path: str, msg: str) -> Finding:
    return Finding(check, sev, path, msg)


def _age(mtime: float | None, now: float) -> float | None:
    return None if mtime is None else max(0.0, now - mtime)


def _human_age(seconds: float | None) -> str:
    """An age the way every report writes durations (acidctl.units.duration: ``35s``, ``2h 5m``,
    ``3d``), whole seconds under a minute (was ``35 s``, ``3.0 days``: new-user report #26)."""
    if seconds is None:
        return "age unknown"
    return f"{fmt_duration(round(seconds) if seconds < 60 else seconds)} old"


# =========================================================================================
# D: names and layout
# =========================================================================================


def check_names(
    listing: DirListing,
    *,
    hive_version: int,
    now: float | None = None,
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
    for_compaction: bool = False,
) -> list[Finding]:
    """D01–D03, D05–D11 for one table/partition directory listing."""
    now = time.time() if now is None else now
    out: list[Finding] = []
    groups: dict[tuple, list[tuple[str, DeltaDir]]] = {}
    for e in sorted(listing.entries, key=lambda x: x.name):
        p = listing.child_path(e.name)
        if is_hidden(e.name):
            h = HiddenEntry.parse(e.name)
            if h is not None and h.kind.leftover:
                age = _age(e.mtime, now)
                sev = WARN if age is not None and age > grace_seconds else INFO
                out.append(
                    _f(
                        "D07",
                        sev,
                        p,
                        f"hidden leftover {h.kind.value} entry ({_human_age(age)}): "
                        "ignored by readers, usually a failed job or compaction",
                    )
                )
            continue
        if not e.is_dir:
            continue
        if not has_acid_prefix(e.name):
            out.append(
                _f(
                    "D08",
                    INFO,
                    p,
                    "non-ACID subdirectory: read as original files (write id 0) "
                    "while no base exists, obsolete otherwise",
                )
            )
            continue
        d = parse_acid_dir(e.name)
        if d is None:
            out.append(
                _f(
                    "D01",
                    ERROR,
                    p,
                    f"{e.name} starts with an ACID prefix but does not parse: "
                    "Hive throws NumberFormatException for the whole directory",
                )
            )
            continue
        if d.has_visibility_suffix and hive_version == 3:
            out.append(
                _f(
                    "D02",
                    ERROR,
                    p,
                    f"visibility suffix _v{d.visibility} is Hive 4 only: every Hive 3 "
                    "reader of this directory fails with NumberFormatException (a Hive 4 table: "
                    "check it with --hive-version 4)",
                )
            )
        if isinstance(d, DeltaDir):
            if d.statement_id > 0:
                out.append(_f("D05", INFO, p, f"statement id {d.statement_id}: multi-statement transaction"))
            groups.setdefault((d.delete, d.min_write_id, d.max_write_id, d.statement_id), []).append((e.name, d))
        if d.short_padding:
            out.append(
                _f(
                    "D06",
                    INFO,
                    p,
                    "write id written with fewer than 7 digits: parses, but current "
                    "Hive never writes it (old streaming or test data)",
                )
            )
        out.extend(_check_dir_files(listing, e, d, for_compaction=for_compaction, now=now, grace_seconds=grace_seconds))
    for key, members in groups.items():
        vis = {d.visibility for _, d in members}
        if len(vis) > 1:
            names = ", ".join(n for n, _ in members)
            out.append(
                _f(
                    "D03",
                    ERROR,
                    listing.child_path(members[0][0]),
                    f"same range and statement with different _v suffixes ({names}): all are read, "
                    "rows are duplicated; usually a compaction that ran twice",
                )
            )
    return out


_EXPECTED_FILE = re.compile(r"bucket_[0-9]{5}(?:_[0-9]+)?|_orc_acid_version|_metadata_acid")


def _check_dir_files(
    listing: DirListing, e: ChildEntry, d, *, for_compaction: bool, now: float, grace_seconds: float
) -> list[Finding]:
    out: list[Finding] = []
    p = listing.child_path(e.name)
    is_base = isinstance(d, BaseDir)
    for sub in e.subdirs:
        if is_hidden(sub):
            h = HiddenEntry.parse(sub)
            if h is not None and h.kind.leftover:
                out.append(_f("D07", INFO, f"{p}/{sub}", f"hidden leftover {h.kind.value} directory inside {e.name}"))
            continue
        if is_base:
            out.append(_f("D09", WARN, f"{p}/{sub}", f"unexpected subdirectory inside base {e.name}"))
        else:
            out.append(
                _f("D10", WARN, f"{p}/{sub}", f"unexpected subdirectory inside {e.name}: ignored by Hive readers")
            )
    for f in e.files:
        if _EXPECTED_FILE.fullmatch(f.name):
            continue  # fast path: canonical bucket files and markers
        fp = f"{p}/{f.name}"
        if is_hidden_path(f.name):
            h = HiddenEntry.parse(f.name.split("/")[0])
            if h is not None and h.kind.leftover:
                out.append(_f("D07", INFO, fp, f"hidden leftover {h.kind.value} file inside {e.name}"))
            continue
        name = f.name
        if name.startswith("bucket_"):
            if name.endswith(FLUSH_LENGTH_SUFFIX):
                if is_base:
                    out.append(
                        _f(
                            "D09",
                            ERROR,
                            fp,
                            "streaming side file inside a base: Hive reads every non-hidden base file as data",
                        )
                    )
                continue
            if not is_strict_bucket_name(name):
                out.append(
                    _f(
                        "D11",
                        ERROR if for_compaction else WARN,
                        fp,
                        "bucket file name does not match bucket_\\d{5}[_attempt]: the Hive 3 compactor "
                        "throws 'Found a non-bucket file that we thought matched the bucket pattern!'",
                    )
                )
            continue
        if OriginalFile.parse(name) is not None and not (isinstance(d, DeltaDir) and d.delete):
            continue  # LOAD DATA raw file (original-file naming) in a base or insert delta
        if is_base:
            out.append(
                _f(
                    "D09",
                    ERROR,
                    fp,
                    f"unexpected file {name} inside base {e.name}: Hive reads every non-hidden base file as data",
                )
            )
        else:
            out.append(
                _f(
                    "D10",
                    WARN,
                    fp,
                    f"unexpected file {name} inside {e.name}: not a bucket_N file, silently ignored by Hive readers",
                )
            )
    return out


# =========================================================================================
# M: markers and side files
# =========================================================================================


def check_markers(listing: DirListing, *, hive_version: int, facts: MetastoreFacts | None = None) -> list[Finding]:
    """M01–M08 for the base/delta directories of one listing."""
    out: list[Finding] = []
    for e in sorted(listing.entries, key=lambda x: x.name):
        if not e.is_dir or is_hidden(e.name) or not e.listed:
            continue
        d = parse_acid_dir(e.name)
        if d is None:
            continue
        p = listing.child_path(e.name)
        file_names = {f.name for f in e.files}
        data = [f for f in e.data_files() if not f.name.endswith(FLUSH_LENGTH_SUFFIX)]
        has_version = ORC_ACID_VERSION_FILE in file_names
        if not has_version:
            if data:
                out.append(
                    _f(
                        "M01",
                        WARN,
                        p,
                        "no _orc_acid_version: Hive treats the ACID version as 0, Trino falls back to file metadata",
                    )
                )
            elif isinstance(d, DeltaDir):
                out.append(
                    _f(
                        "M02",
                        ERROR,
                        p,
                        "empty delta directory without _orc_acid_version: Hive 3.1 "
                        "fails on it (trinodb/trino#5026); delete the directory",
                    )
                )
        else:
            content = e.markers.get(ORC_ACID_VERSION_FILE)
            if content is not None and content != b"2":
                out.append(
                    _f(
                        "M03",
                        ERROR,
                        f"{p}/{ORC_ACID_VERSION_FILE}",
                        f"_orc_acid_version content {content[:16]!r} is not exactly '2'",
                    )
                )
        if METADATA_FILE in file_names:
            content = e.markers.get(METADATA_FILE)
            if content is not None:
                problem = MetadataAcid.parse(content).problem(hive_version)
                if problem:
                    out.append(
                        _f("M04", ERROR, f"{p}/{METADATA_FILE}", f"_metadata_acid {problem}: Hive throws on read")
                    )
        elif isinstance(d, BaseDir) and hive_version == 3 and not d.has_visibility_suffix and d.write_id != LONG_MIN:
            hw = facts.compaction_highest_write_ids if facts else frozenset()
            if d.write_id in hw:
                out.append(
                    _f(
                        "M05",
                        WARN,
                        p,
                        f"base without _metadata_acid, but a compaction's highest write id "
                        f"is {d.write_id}: Hive 3 treats compactor output as an INSERT "
                        "OVERWRITE base (weaker validity rule)",
                    )
                )
            else:
                out.append(
                    _f(
                        "M05",
                        INFO,
                        p,
                        "base without _metadata_acid: Hive 3 treats it as an INSERT "
                        "OVERWRITE base (valid once its write id is committed)",
                    )
                )
        for f in e.files:
            if "/" in f.name or not f.name.endswith(FLUSH_LENGTH_SUFFIX):
                continue
            fp = f"{p}/{f.name}"
            out.append(
                _f(
                    "M06",
                    WARN,
                    fp,
                    "streaming side file present: a writer is active or died; readers "
                    "use the logical length it records",
                )
            )
            content = e.markers.get(f.name)
            if content is None:
                continue
            n = len(content) // 8
            last = struct.unpack(">q", content[(n - 1) * 8 : n * 8])[0] if n else None
            if last is None or last < 0:
                out.append(
                    _f(
                        "M07",
                        ERROR,
                        fp,
                        f"{fp} found but is not readable.  Consider waiting or "
                        "orcfiledump --recover (no complete non-negative 8-byte length)",
                    )
                )
            if len(content) % 8:
                out.append(
                    _f(
                        "M08",
                        INFO,
                        fp,
                        f"side file length {len(content)} is not a multiple of 8: the last partial value is ignored",
                    )
                )
    return out


# =========================================================================================
# S: snapshot state (+ D04)
# =========================================================================================


def check_snapshot(
    state: AcidState,
    *,
    recommendation: Recommendation | None = None,
    facts: MetastoreFacts | None = None,
    txns: TxnList | None = None,
    now: float | None = None,
) -> list[Finding]:
    """S01–S14 (the (M) ones when ``facts`` are given) and D04.

    ``recommendation``: the Initiator's view (S09/S10). ``txns``: a ValidTxnList the caller
    really knows (not an assumption) for S05/S06; ``facts.txns`` is used otherwise.
    """
    now = time.time() if now is None else now
    facts = facts or MetastoreFacts()
    out: list[Finding] = []
    if state.not_enough_history:
        out.append(_f("S01", ERROR, state.path, state.not_enough_history))
    out.extend(_check_overlaps(state.deltas))  # D04: non-nesting overlap among the deltas read
    out.extend(_obsolete_waiting(state, facts))
    out.extend(_aborted_deltas(state, now))
    out.extend(_open_deltas(state, facts))
    out.extend(_visibility(state, txns or facts.txns))
    out.extend(_originals(state))
    if recommendation is not None:
        out.extend(_compaction_due(state.path, recommendation, facts))
    out.extend(_bases(state))
    out.extend(_above_hwm(state, facts))
    return out


def _obsolete_waiting(state: AcidState, facts: MetastoreFacts) -> Iterator[Finding]:
    """S02: obsolete entries awaiting the Cleaner (a warning once the Cleaner is behind)."""
    if not state.obsolete:
        return
    backlog = facts.cleaner_backlog_seconds
    sev = WARN if backlog is not None and backlog > DEFAULT_GRACE_SECONDS else INFO
    n = len(state.obsolete)
    yield _f("S02", sev, state.path, f"{n} obsolete entr{'y' if n == 1 else 'ies'} awaiting the Cleaner")


def _aborted_deltas(state: AcidState, now: float) -> Iterator[Finding]:
    """S03: deltas holding nothing but aborted write ids."""
    aborted = [
        c
        for c in state.aborted
        if c.kind in (Kind.DELTA, Kind.DELETE_DELTA)
        and state.write_ids.range_aborted(c.delta_dir.min_write_id, c.delta_dir.max_write_id) is RangeResponse.ALL
    ]
    if not aborted:
        return
    ages = [a for a in (_age(c.entry.mtime, now) for c in aborted) if a is not None]
    oldest = f", oldest {_human_age(max(ages))}" if ages else ""
    yield _f(
        "S03",
        WARN,
        state.path,
        f"{len(aborted)} aborted-only delta director"
        f"{'y' if len(aborted) == 1 else 'ies'}{oldest}: garbage until compacted and cleaned",
    )


def _open_deltas(state: AcidState, facts: MetastoreFacts) -> Iterator[Finding]:
    """S04: deltas of open write ids (a warning when their txn's heartbeat is stale)."""
    wl = state.write_ids
    open_deltas = [
        c
        for c in state.not_visible
        if c.kind in (Kind.DELTA, Kind.DELETE_DELTA) and any(wl.is_open(w) for w in _sample_ids(c))
    ]
    if not open_deltas:
        return
    stale = [c for c in open_deltas if any(w in facts.stale_open_write_ids for w in _sample_ids(c))]
    if stale:
        yield _f(
            "S04",
            WARN,
            state.path,
            f"{plural(len(stale), 'delta')} of open write ids whose txn heartbeat is older than hive.txn.timeout",
        )
    else:
        yield _f("S04", INFO, state.path, f"{plural(len(open_deltas), 'delta')} of open write ids: in-flight writes")


def _visibility(state: AcidState, tl: TxnList | None) -> Iterator[Finding]:
    """S05/S06: ``_vM`` directories whose compaction txn is still open or aborted."""
    if tl is None:
        return
    for c in state.entries:
        v = c.visibility
        if v is None or c.role is Role.INVALID:
            continue
        if tl.is_aborted(v):
            yield _f(
                "S06",
                WARN,
                c.path,
                f"visibility txn {v} aborted: failed compaction output, removed by the Hive 4 Cleaner",
            )
        elif not tl.is_valid(v):
            yield _f("S05", INFO, c.path, f"visibility txn {v} still open: compaction in flight, invisible")


def _originals(state: AcidState) -> Iterator[Finding]:
    """S07/S08 (original files with or without a base) and the foreign-format originals."""
    has_originals = any(
        c.kind in (Kind.ORIGINAL_FILE, Kind.ORIGINAL_DIR) and c.role is not Role.IGNORED for c in state.entries
    )
    if has_originals and state.base is None:
        yield _f(
            "S07",
            INFO,
            state.path,
            f"{plural(len(state.originals), 'original file')} and no base: converted table "
            "not yet major-compacted; synthetic ROW__IDs in use",
        )
    elif has_originals:
        yield _f("S08", INFO, state.path, "original files alongside a usable base: obsolete, awaiting the Cleaner")
    if state.base is None:
        yield from _foreign_originals(state)


def _compaction_due(root: str, r: Recommendation, facts: MetastoreFacts) -> Iterator[Finding]:
    """S09-S11: the Initiator's thresholds."""
    t = r.thresholds
    if r.delta_count > t.delta_num:
        yield _f(
            "S09",
            WARN,
            root,
            f"{r.delta_count} current deltas > {DELTA_NUM_KEY} {t.delta_num}: "
            f"{'major' if r.no_base else 'minor'} compaction due",
        )
    if r.ratio_exceeded:
        yield _f(
            "S10",
            WARN,
            root,
            f"delta/base size ratio {fmt_ratio(r.ratio)} > {DELTA_PCT_KEY} {t.delta_pct:g}: major compaction due",
        )
    if facts.aborted_txn_count is not None and facts.aborted_txn_count > t.aborted_txn:
        yield _f(
            "S11",
            WARN,
            root,
            f"{facts.aborted_txn_count} aborted txns > {ABORTED_KEY} {t.aborted_txn}: major compaction due",
        )


def _bases(state: AcidState) -> Iterator[Finding]:
    """S12 (several bases) and S14 (the conversion base)."""
    bases = [c for c in state.entries if c.kind is Kind.BASE and c.role is not Role.INVALID]
    if len(bases) > 1:
        yield _f("S12", INFO, state.path, f"{len(bases)} bases: older ones are obsolete")
    for c in bases:
        if c.base_dir.write_id == LONG_MIN:
            yield _f("S14", INFO, c.path, "conversion base (first major compaction after converting to ACID)")


def _above_hwm(state: AcidState, facts: MetastoreFacts) -> Iterator[Finding]:
    """S13: directories with write ids above the table's high-water mark."""
    if facts.table_hwm is None:
        return
    for c in state.entries:
        if (
            c.kind in (Kind.BASE, Kind.DELTA, Kind.DELETE_DELTA)
            and c.max_write_id is not None
            and c.max_write_id > facts.table_hwm
        ):
            yield _f(
                "S13",
                ERROR,
                c.path,
                f"write id {c.max_write_id} above the table's high-water mark "
                f"{facts.table_hwm}: written without a write-id allocation",
            )


def _foreign_originals(state: AcidState) -> list[Finding]:
    """D12: original files the reader reads as ORC whose name says they are something else
    (:func:`acidctl.acid.dirname.foreign_extension`)."""
    from acidctl.acid.dirname import foreign_extension

    out = []
    for o in state.originals:
        ext = foreign_extension(o.rel)
        if ext is not None:
            out.append(
                _f(
                    "D12",
                    ERROR,
                    o.path,
                    f"a .{ext} file where readers expect ORC (an original file, read while the "
                    "partition has no base): every query of the partition fails on it; move it out",
                )
            )
    return out


def _sample_ids(c: Classified) -> Iterable[int]:
    lo, hi = c.delta_dir.min_write_id, c.delta_dir.max_write_id
    if hi - lo <= 64:
        return range(lo, hi + 1)
    return (lo, hi)


def _check_overlaps(deltas: list[Classified]) -> list[Finding]:
    out = []
    ordered = sorted(deltas, key=lambda c: (c.delta_dir.min_write_id, -c.delta_dir.max_write_id, c.name))
    reach: DeltaDir | None = None
    reach_name = ""
    for c in ordered:
        d = c.delta_dir
        if (
            reach is not None
            and d.min_write_id <= reach.max_write_id
            and (d.min_write_id, d.max_write_id) != (reach.min_write_id, reach.max_write_id)
        ):
            out.append(
                _f(
                    "D04",
                    ERROR,
                    c.path,
                    f"range {d.min_write_id}..{d.max_write_id} overlaps "
                    f"{reach_name} without nesting: both are read, write ids "
                    f"{d.min_write_id}..{min(d.max_write_id, reach.max_write_id)} appear twice",
                )
            )
        if reach is None or d.max_write_id > reach.max_write_id:
            reach, reach_name = d, c.name
    return out


def check_partition(
    listing: DirListing,
    state: AcidState,
    *,
    hive_version: int,
    recommendation: Recommendation | None = None,
    facts: MetastoreFacts | None = None,
    txns: TxnList | None = None,
    now: float | None = None,
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
    for_compaction: bool = False,
) -> list[Finding]:
    """Every directory-level check for one partition, sorted by severity (errors first) then path."""
    hv = facts.hive_version if facts is not None and facts.hive_version else hive_version
    found = (
        check_names(listing, hive_version=hv, now=now, grace_seconds=grace_seconds, for_compaction=for_compaction)
        + check_markers(listing, hive_version=hv, facts=facts)
        + check_snapshot(state, recommendation=recommendation, facts=facts, txns=txns, now=now)
    )
    return sorted(found, key=lambda f: (-f.severity.rank, f.check, f.path))


# -- D07 from acidctl's own compaction state (staging publications, the table lock) ----------


def check_publications(tfs, listing: DirListing) -> list[Finding]:
    """D07 (error) for a non-atomic publication a crash interrupted half way: until it is
    finished, readers see some outputs without the others (a wrong snapshot)."""
    from acidctl.acid.dirname import STAGING_PREFIX

    if not any(e.name.startswith(STAGING_PREFIX) for e in listing.entries):
        return []
    from acidctl.compact.publish import interrupted

    out = []
    for it in interrupted(tfs, listing.fs_path or listing.path):
        if it["partial"]:
            out.append(
                Finding(
                    "D07",
                    ERROR,
                    it["display"],
                    f"interrupted compaction publish: {', '.join(it['published'])} published, "
                    f"{', '.join(it['staged'])} still staged; readers see a wrong snapshot until "
                    "`acidctl compact` or `acidctl clean --execute` finishes it",
                )
            )
    return out


def check_table_lock(tfs, entries=None) -> list[Finding]:
    """D07 for acidctl's own compaction locks in the table directory (the table's and each
    partition's): a compaction running now (info) or a stale lock left by one that died (warn;
    `clean --execute` removes it)."""
    from acidctl.compact.lock import all_locks

    out = []
    for info in all_locks(tfs, entries=entries):
        if info.stale:
            out.append(
                Finding(
                    "D07",
                    WARN,
                    info.path,
                    f"stale compaction lock ({info.describe()}): the compaction died; `acidctl clean --execute` removes it",
                )
            )
        else:
            out.append(Finding("D07", INFO, info.path, f"a compaction holds the {info.scope} lock ({info.describe()})"))
    return out
