"""The ``acidctl state`` report: for every partition, the reader's view (``get_acid_state``),
the Initiator's recommendation and every check's findings, as one JSON-ready dict with stable
keys (documented in :mod:`acidctl.cli.state_cmd`, which only renders it)."""

from __future__ import annotations

import functools
import gc
import time
from typing import Callable, ParamSpec, TypeVar

from acidctl.acid.acidstate import AcidState, Kind, classify_names, get_acid_state, visibility_txns_in_names
from acidctl.acid.checks import check_partition, check_publications, check_table_lock
from acidctl.acid.dirname import PUBLISHED_DIR
from acidctl.acid.initiator import NO_AUTO_COMPACTION, Thresholds, compactor_state, recommend
from acidctl.acid.layout import list_table
from acidctl.acid.listing import DirListing
from acidctl.acid.writeids import TxnList, WriteIdList
from acidctl.findings import Finding, Severity


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _gc_paused(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run ``fn`` with the cyclic garbage collector off: a report of a big partition builds ~10
    listing/classification objects per directory, none of them in a cycle, and the collector's
    passes over them cost 5-10 % of ``state`` on 10,000 directories (bench/state.py). Reference
    counting still frees everything; the collector's previous state is restored."""

    @functools.wraps(fn)
    def paused(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return paused


@_gc_paused
def build_report(
    tfs,
    *,
    write_ids: WriteIdList,
    txns: TxnList | None,
    hive_version: int,
    assumed_committed: bool = False,
    table_properties: dict[str, str] | None = None,
    grace_seconds: float = 86400.0,
    inspect_file: Callable | None = None,
    now: float | None = None,
    facts=None,
    mm_storage=None,
    mm_allow_originals: bool = False,
    only_partitions: list[str] | None = None,
) -> dict:
    """Everything ``acidctl state`` prints, as a JSON-ready dict with stable keys.

    ``write_ids``: the reader's snapshot (``assumed_committed``: it was made up by
    ``--assume-committed``, the output says so); ``txns``: the ValidTxnList when known (given
    or from the metastore) — without it Hive 4 rules treat every visibility txn as committed,
    and say so; ``inspect_file``: :func:`acidctl.orc.meta.inspect_file` for ``--deep``;
    ``facts``: MetastoreFacts for every partition, or a function of the partition name;
    ``mm_storage``: an insert-only table's storage (format, SerDe) for ``--deep``
    (:mod:`acidctl.mm.checks` replaces the full-ACID file checks there); ``mm_allow_originals``:
    the cluster's ``hive.mm.allow.originals`` (originals read while there is no base);
    ``only_partitions``: only these partitions (``k=v[/k2=v2]``, a prefix selects all below; each must
    match one, else PathNotFound)."""
    from acidctl.errors import UsageError

    from acidctl.target import check_table_dir

    now = time.time() if now is None else now
    props = table_properties or {}
    check_table_dir(tfs)
    root_entries: list = []
    listings = list_table(tfs, root_entries=root_entries)
    if only_partitions:
        listings = _selected(tfs, listings, only_partitions)

    wl = write_ids
    tl, assumptions = _snapshot_assumptions(wl, txns, hive_version, assumed_committed, listings)

    thresholds = Thresholds.from_table_properties(props)
    insert_only = props.get("transactional_properties", "").lower() == "insert_only"
    if mm_allow_originals and not insert_only:
        raise UsageError("--mm-allow-originals applies to insert-only tables (transactional_properties=insert_only)")
    no_auto = props.get(NO_AUTO_COMPACTION, "").lower() == "true"

    partitions = []
    all_findings: list[Finding] = []
    for lst in listings:
        pfacts = facts(lst.partition) if callable(facts) else facts
        names = classify_names(lst)  # one sort and parse of every name for both runs
        st = get_acid_state(lst, wl, txns=tl, hive_version=hive_version, insert_only=insert_only, names=names)
        cst = compactor_state(lst, wl, txns=tl, hive_version=hive_version, names=names)
        rec = recommend(
            cst,
            thresholds=thresholds,
            insert_only=insert_only,
            hive_version=hive_version,
            no_auto_compaction=no_auto,
            aborted_txn_count=getattr(pfacts, "aborted_txn_count", None),
        )
        findings = _partition_findings(
            tfs,
            lst,
            st,
            rec,
            pfacts,
            hive_version=hive_version,
            txns=txns,
            now=now,
            grace_seconds=grace_seconds,
            insert_only=insert_only,
            props=props,
            inspect_file=inspect_file,
            mm_storage=mm_storage,
            mm_allow_originals=mm_allow_originals,
        )
        all_findings.extend(findings)
        partitions.append(_partition(lst, st, rec, findings))
        if insert_only:
            # what Hive's MM reader reads of the originals (spec A.5): only without a base, and
            # only with hive.mm.allow.originals=true
            partitions[-1]["snapshot"]["originals_read"] = bool(mm_allow_originals and st.base is None and st.originals)

    # the table directory's own listing: the root of the table (a partition given as TABLE/PART
    # has its locks in the table directory, which all_locks lists itself)
    from acidctl.compact.lock import table_root

    same_root = table_root(tfs.root) == tfs.root
    all_findings.extend(check_table_lock(tfs, entries=root_entries if same_root else None))
    counts = {s.value: sum(1 for f in all_findings if f.severity is s) for s in Severity}
    return {
        "path": tfs.display(tfs.root),
        "hive_version": hive_version,
        "write_ids": dict(wl.to_dict(), assumed=bool(assumed_committed)),
        **({"hive2_txns": _hive2_txns(wl)} if hive_version == 2 else {}),
        "txns": (dict(tl.to_dict(), assumed=txns is None) if tl is not None else None),
        "assumptions": assumptions,
        "partitions": partitions,
        "findings": [f.to_dict() for f in all_findings],
        "summary": {
            "partitions": len(partitions),
            "errors": counts["error"],
            "warnings": counts["warn"],
            "info": counts["info"],
            "compaction_due": [p["partition"] or p["path"] for p in partitions if p["compaction"]["type"] != "none"],
            "unreadable": [p["partition"] or p["path"] for p in partitions if not p["snapshot"]["readable"]],
        },
    }


def _snapshot_assumptions(
    wl: WriteIdList, txns: TxnList | None, hive_version: int, assumed_committed: bool, listings: list
) -> tuple[TxnList | None, list[str]]:
    """The txn list the rules use (Hive 4 without ``--txns``: every visibility txn committed) and
    what the report must say it assumed."""
    assumptions: list[str] = []
    if assumed_committed:
        assumptions.append(
            f"every write id named by a directory (1..{wl.hwm}) is committed; no open or aborted "
            "write ids (--assume-committed). Obsolete/aborted/not-visible roles are NOT "
            "those of a real reader."
        )
    tl = txns
    if txns is not None:
        if hive_version == 3:
            assumptions.append("--txns is ignored by Hive 3 rules (no visibility suffixes in Hive 3)")
    elif hive_version == 4:
        tl = TxnList.all_committed()
        if visibility_txns_in_names(listings):
            assumptions.append("no --txns given: every _vM visibility txn is treated as committed")
    return tl, assumptions


def _partition_findings(
    tfs,
    lst,
    st,
    rec,
    pfacts,
    *,
    hive_version: int,
    txns,
    now: float,
    grace_seconds: float,
    insert_only: bool,
    props: dict,
    inspect_file,
    mm_storage,
    mm_allow_originals: bool,
) -> list[Finding]:
    """One partition's findings: the directory checks and acidctl's publications, insert-only
    tables' own checks (MM01-MM08), ``--deep``'s file checks, Hive 2.3's view of them; sorted by
    severity where more than one source adds to them."""
    findings = check_partition(
        lst,
        st,
        hive_version=hive_version,
        recommendation=rec,
        facts=pfacts,
        txns=txns,
        now=now,
        grace_seconds=grace_seconds,
    )
    findings += check_publications(tfs, lst)
    if insert_only:  # insert-only tables: MM01-MM08, and --deep opens plain files (acidctl.mm.checks)
        from acidctl.mm import checks as mm_checks

        findings = [f for f in findings if f.check not in mm_checks.NOT_FOR_MM]
        findings += mm_checks.directory_findings(
            lst, st, properties=props, now=now, grace_seconds=grace_seconds, allow_originals=mm_allow_originals
        )
    if inspect_file is not None:
        if insert_only:
            from acidctl.mm import checks as mm_deep

            extra = mm_deep.deep_findings(
                tfs, lst, st, storage=mm_storage, hive_version=hive_version, allow_originals=mm_allow_originals
            )
        else:
            extra = deep_findings(tfs, lst, st, inspect_file, hive_version=hive_version)
        findings = sorted(findings + extra, key=lambda f: (-f.severity.rank, f.check, f.path))
    if hive_version == 2:
        from acidctl.acid.hive2 import hive2_findings

        findings = sorted(hive2_findings(findings), key=lambda f: (-f.severity.rank, f.check, f.path))
    return findings


def _selected(tfs, listings: list[DirListing], wanted: list[str]) -> list[DirListing]:
    """The listings of the partitions ``wanted`` names (key names in any case, as Hive's)."""
    from acidctl.acid.dirname import partition_keys_lower
    from acidctl.errors import PathNotFound

    def parts(spec: str | None) -> list[str]:
        return partition_keys_lower(spec.strip("/")).split("/") if spec else []

    keep = []
    for w in wanted:
        want = parts(w)
        hits = [lst for lst in listings if parts(lst.partition)[: len(want)] == want]
        if not hits:
            raise PathNotFound(f"no partition {w} in {tfs.display(tfs.root)}")
        keep += [lst for lst in hits if lst not in keep]
    return [lst for lst in listings if lst in keep]


def _in_read_order(entries: list[dict]) -> list[dict]:
    """Entries as a reader reads them, each with its place (``read_order``, 0 first): the base,
    or the originals sorted by path (spec directory-state.md §3.1 step 7: that order fixes their
    synthetic ROW__IDs), then the current deltas in Hive's order (step 4); then everything the
    reader does not read (``read_order`` None), by name."""
    first = sorted((e for e in entries if e["role"] in ("base", "original")), key=lambda e: e.get("path") or e["name"])
    deltas = sorted(
        (e for e in entries if e["role"] not in ("base", "original") and e["read_order"] is not None),
        key=lambda e: e["read_order"],
    )
    unread = sorted(
        (e for e in entries if e["role"] not in ("base", "original") and e["read_order"] is None),
        key=lambda e: e["name"],
    )
    for i, e in enumerate(first + deltas):
        e["read_order"] = i
    return first + deltas + unread


def _partition(lst: DirListing, st: AcidState, rec, findings: list[Finding]) -> dict:
    ins = [c for c in st.deltas if c.kind is Kind.DELTA]
    dels = [c for c in st.deltas if c.kind is Kind.DELETE_DELTA]
    # acidctl's publication records (revert's bookkeeping) are no entry of the partition
    shown = [c for c in st.entries if c.name != PUBLISHED_DIR]
    roles: dict[str, int] = {}
    for c in shown:
        roles[c.role.value] = roles.get(c.role.value, 0) + 1
    entries = [c.to_dict() for c in shown]
    # --deep opened the originals: an ACID one (F16) is read with its own ROW__IDs, say so in its row
    acid_originals = {f.path.rstrip("/").rsplit("/", 1)[-1] for f in findings if f.check == "F16"}
    for e in entries:
        if e["kind"] == "original_file" and e["role"] == "original" and e["name"] in acid_originals:
            e["reason"] = "ACID file in an original position: read with its own ROW__IDs and write ids (F16)"
    entries = _in_read_order(entries)
    return {
        "partition": lst.partition,
        "path": lst.path,
        "entries": entries,
        "snapshot": {
            "base": st.base.name if st.base else None,
            "base_write_id": st.base_write_id,
            "base_bytes": st.base.bytes if st.base else 0,
            "deltas": [c.name for c in ins],
            "delete_deltas": [c.name for c in dels],
            "read_order": [c.name for c in st.deltas],
            "originals": [o.to_dict() for o in st.originals],
            "delta_count": len(ins),
            "delta_bytes": sum(c.bytes for c in ins),
            "delete_delta_count": len(dels),
            "delete_delta_bytes": sum(c.bytes for c in dels),
            "original_count": len(st.originals),
            "original_bytes": sum(o.size for o in st.originals),
            "aborted_write_ids": list(st.aborted_write_ids),
            "has_uncompacted_aborts": st.has_uncompacted_aborts,
            "not_enough_history": st.not_enough_history,
            "reader_errors": list(st.reader_errors),
            "readable": not st.not_enough_history and not st.reader_errors,
        },
        "roles": roles,
        "compaction": rec.to_dict(),
        "findings": {s.value: sum(1 for f in findings if f.severity is s) for s in Severity},
    }


def deep_findings(tfs, lst: DirListing, st: AcidState, inspect_file: Callable, *, hive_version: int = 3) -> list:
    """``--deep``: the ORC file checks (F01-F16) on every data file the reader would open."""
    import inspect as _inspect

    from acidctl.acid.dirname import OriginalFile
    from acidctl.errors import AcidctlError

    try:
        accepted = set(_inspect.signature(inspect_file).parameters)
    except (TypeError, ValueError):
        accepted = set()
    base = lst.fs_path or lst.path
    jobs = []  # (path, kwargs)
    for c in ([st.base] if st.base else []) + list(st.deltas):
        kind = {Kind.BASE: "base", Kind.DELTA: "delta", Kind.DELETE_DELTA: "delete_delta"}[c.kind]
        for f in c.entry.data_files():
            if f.name.endswith("_flush_length") or "/" in f.name:
                continue
            raw = OriginalFile.parse(f.name) is not None  # LOAD DATA file: may lack ACID columns
            jobs.append(
                (
                    tfs.join(base, c.name, f.name),
                    {
                        "statistics": False,
                        "dir_kind": kind,
                        "dir_range": (c.min_write_id, c.max_write_id),
                        "expect_acid": None if raw else True,
                        "hive_version": hive_version,
                    },
                )
            )
    for o in st.originals:
        jobs.append(
            (
                tfs.join(base, o.rel),
                {"statistics": False, "dir_kind": None, "expect_acid": False, "hive_version": hive_version},
            )
        )
    out = []
    for path, kwargs in jobs:
        try:
            res = inspect_file(tfs, path, **{k: v for k, v in kwargs.items() if k in accepted})
        except AcidctlError as e:
            out.append(Finding("F00", Severity.ERROR, tfs.display(path), f"cannot read the ORC file: {e}"))
            continue
        items = getattr(res, "findings", res) or []
        # the side file (M06) is already reported by the directory checks
        out.extend(x for x in items if isinstance(x, Finding) and x.check != "M06")
        if kwargs.get("expect_acid") is False and getattr(res, "is_acid", False):
            # one interpretation everywhere: the merged read and compaction use such a file's own
            # ROW__IDs and write ids (as Trino writes 00000_0 files), not synthetic ones
            out.append(
                Finding(
                    "F16",
                    Severity.WARN,
                    tfs.display(path),
                    "an ACID file in an original position: read with its own ROW__IDs and write ids "
                    "(not write id 0); rows of write ids the snapshot does not cover are not visible, "
                    "and compaction refuses them",
                )
            )
    return out


def _hive2_txns(wl: WriteIdList) -> str:
    """Under Hive 2 rules the snapshot in Hive 2's own ValidTxnList form."""
    from acidctl.acid.hive2 import Hive2TxnList

    return str(Hive2TxnList.from_write_ids(wl))
