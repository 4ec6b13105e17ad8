"""``acidctl state PATH``: which directories a Hive reader uses, why, and what is wrong.

The snapshot comes from ``--write-ids`` (Hive's ValidWriteIdList string) or
``--assume-committed`` (every write id named by a directory is committed; printed loudly).
Reading the snapshot from the metastore is not wired into this command yet.

JSON document (stable keys): ``path``, ``hive_version``, ``write_ids`` (+ ``assumed``), ``txns``
(+ ``assumed``; null under Hive 3 without ``--txns``), ``assumptions`` (list of strings),
``partitions`` (each: ``partition``, ``path``, ``entries`` [one per child: name, path, kind, role,
reason, is_dir, min/max_write_id, statement_id, visibility_txn, compacted, read_order,
file_count, bytes, mtime], ``snapshot``, ``roles`` (counts), ``compaction`` (the Initiator's
recommendation), ``findings`` (counts by severity)), ``findings`` (every finding: check,
severity, path, message) and ``summary``.

Default rules are Hive 3.1 (``--hive-version 3``): they are the stricter ones for names (a
``_vM`` directory is an error, D02, because every Hive 3 reader fails on it). Use
``--hive-version 4`` for Hive 4 tables; ``--txns`` then gives the ValidTxnList that decides
whether ``_vM`` compactor output is visible (without it every visibility txn counts as
committed, and the output says so).
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from acidctl.cli.main import app, parse_kv

_WRITE_IDS_HELP = ("The reader's ValidWriteIdList: db.table:hwm:minOpenWriteId:open,...:aborted,... "
                   "(e.g. db.t:14:12:12:13; 'db.t:14:9223372036854775807::' = all committed up to 14).")
_ASSUME_HELP = ("Treat every write id named by a directory as committed (no open or aborted ids). "
                "For offline inspection only; the output says so.")
_TXNS_HELP = ("Hive 4 ValidTxnList hwm:minOpenTxn:open,...:aborted,... deciding whether _vM directories are "
              "visible (default: every visibility txn committed).")
_HV_HELP = ("Reader rules: 3 (Hive 3.1, default; a _v directory is error D02) or 4 (Hive 4: _vM visibility, "
            "aborted directories, isValidBase shortcut).")


@app.command("state", help="Classify a table or partition directory the way Hive's getAcidState does "
                           "(base, deltas, obsolete, aborted, not visible yet, originals) and run the "
                           "directory checks D01-D11, M01-M08, S01-S14.")
def state_command(
    ctx: typer.Context,
    path: Annotated[str, typer.Argument(metavar="PATH|DB.TABLE[/PART]", help="Table or partition directory (local path, file://, hdfs://, s3://, memory://), or DB.TABLE[/key=value] looked up in the metastore (its snapshot too).")],
    write_ids: Annotated[Optional[str], typer.Option("--write-ids", metavar="LIST", help=_WRITE_IDS_HELP)] = None,
    assume_committed: Annotated[bool, typer.Option("--assume-committed", help=_ASSUME_HELP)] = False,
    txns: Annotated[Optional[str], typer.Option("--txns", metavar="LIST", help=_TXNS_HELP)] = None,
    hive_version: Annotated[Optional[int], typer.Option("--hive-version", metavar="3|4", help=_HV_HELP)] = None,
    deep: Annotated[bool, typer.Option("--deep", help="Also open ORC footers of the files read (checks F01-F15).")] = False,
    partition: Annotated[Optional[str], typer.Option("--partition", metavar="K=V[/K=V]", help="Only this partition.")] = None,
    tblproperty: Annotated[Optional[list[str]], typer.Option("--tblproperty", metavar="KEY=VALUE",
                                                             help="Table property, repeatable (e.g. compactorthreshold.hive.compactor.delta.num.threshold=20, transactional_properties=insert_only, no_auto_compaction=true).")] = None,
    grace_hours: Annotated[float, typer.Option("--grace-hours", help="Age after which hidden leftovers (D07) are warnings.")] = 24.0,
):
    from acidctl.errors import ValidationFailed
    from acidctl.target import resolve_target

    settings = ctx.obj
    target = resolve_target(settings, path, write_ids=write_ids, assume_committed=assume_committed, txns=txns,
                            hive_version=hive_version, partition=partition)
    for w in target.warnings:
        settings.output.note("acidctl: warning: " + w)
    inspect_file = _deep_hook() if deep else None
    props = {**target.properties, **parse_kv(tblproperty, "--tblproperty")}
    facts = None
    if target.table is not None and target.metastore is not None:
        from acidctl.metastore.facts import facts_for_partition, table_facts

        tf = table_facts(target.metastore, target.table.db, target.table.table)
        base_part = getattr(target.table, "partition", None)

        def facts(partition, tf=tf, base_part=base_part):
            name = "/".join(p for p in (base_part, partition) if p) or None
            return facts_for_partition(tf, name, hive_version=target.hive_version, txns=target.txns)
    report = build_report(target.tfs, write_ids=None if assume_committed else str(target.write_ids),
                          assume_committed=assume_committed,
                          txns=str(target.txns) if target.txns is not None and (
                              txns or (target.source == "metastore" and target.hive_version == 4)) else None,
                          hive_version=target.hive_version, table_properties=props,
                          grace_seconds=grace_hours * 3600.0, inspect_file=inspect_file, facts=facts,
                          mm_storage=_mm_storage(target) if deep else None)
    report["table"] = target.table.full_name if target.table else None
    report["snapshot_source"] = target.source
    for note in report["assumptions"]:
        settings.output.warn("ASSUMED: " + note)
    settings.output.emit(report, render_text)
    errors = report["summary"]["errors"]
    if errors:
        raise ValidationFailed(f"{errors} error-level finding{'s' if errors != 1 else ''} in {report['path']}")


def _mm_storage(target):
    """An insert-only metastore table's storage format (for --deep); None otherwise."""
    t = target.table
    if t is None or target.metastore is None or not t.insert_only:
        return None
    from acidctl.formats.storage import lookup

    return lookup(target.metastore, t)


def _deep_hook():
    """``--deep``: ``acidctl.orc.meta.inspect_file(tfs, path)`` (written separately).

    HOOK: the ORC footer checks F01–F15 live in acidctl.orc.meta; until that module exists
    --deep fails with a usage error instead of pretending to check anything.
    """
    from acidctl.errors import UsageError

    try:
        from acidctl.orc.meta import inspect_file  # noqa: PLC0415
    except ImportError as e:
        raise UsageError(f"--deep is not available in this build: acidctl.orc.meta.inspect_file cannot be imported ({e})",
                         hint="run without --deep for the directory checks") from None
    return inspect_file


# =========================================================================================
# report (plain data; used by both renderers)
# =========================================================================================

def build_report(tfs, *, write_ids: str | None, assume_committed: bool, txns: str | None,
                 hive_version: int, table_properties: dict[str, str] | None = None,
                 grace_seconds: float = 86400.0, inspect_file=None, now: float | None = None,
                 facts=None, mm_storage=None) -> dict:
    """Everything ``acidctl state`` prints, as a JSON-ready dict with stable keys."""
    import time

    from acidctl.acid.acidstate import (
        Kind, get_acid_state, max_write_id_in_names, visibility_txns_in_names,
    )
    from acidctl.acid.checks import check_partition
    from acidctl.acid.initiator import NO_AUTO_COMPACTION, Thresholds, compactor_state, recommend
    from acidctl.acid.layout import list_table
    from acidctl.acid.writeids import TxnList, WriteIdList
    from acidctl.findings import Finding, Severity

    now = time.time() if now is None else now
    props = table_properties or {}
    from acidctl.target import check_table_dir

    check_table_dir(tfs)
    listings = list_table(tfs)

    assumptions: list[str] = []
    if assume_committed:
        hwm = max_write_id_in_names(listings)
        wl = WriteIdList.all_committed(hwm)
        assumptions.append(f"every write id named by a directory (1..{hwm}) is committed; no open or aborted "
                           "write ids (--assume-committed). Obsolete/aborted/not-visible roles are NOT "
                           "those of a real reader.")
    else:
        wl = WriteIdList.parse(write_ids)
    tl = None
    txns_known = None
    if txns:
        tl = TxnList.parse(txns)
        txns_known = tl
        if hive_version == 3:
            assumptions.append("--txns is ignored by Hive 3 rules (no visibility suffixes in Hive 3)")
    elif hive_version == 4:
        tl = TxnList.all_committed()
        if visibility_txns_in_names(listings):
            assumptions.append("no --txns given: every _vM visibility txn is treated as committed")

    thresholds = Thresholds.from_table_properties(props)
    insert_only = props.get("transactional_properties", "").lower() == "insert_only"
    no_auto = props.get(NO_AUTO_COMPACTION, "").lower() == "true"

    partitions = []
    all_findings: list[Finding] = []
    for lst in listings:
        # ``facts``: MetastoreFacts for every partition, or a function of the partition name
        pfacts = facts(lst.partition) if callable(facts) else facts
        st = get_acid_state(lst, wl, txns=tl, hive_version=hive_version, insert_only=insert_only)
        cst = compactor_state(lst, wl, txns=tl, hive_version=hive_version)
        rec = recommend(cst, thresholds=thresholds, insert_only=insert_only, hive_version=hive_version,
                        no_auto_compaction=no_auto,
                        aborted_txn_count=getattr(pfacts, "aborted_txn_count", None))
        findings = check_partition(lst, st, hive_version=hive_version, recommendation=rec, facts=pfacts,
                                   txns=txns_known, now=now, grace_seconds=grace_seconds)
        findings += _publish_findings(tfs, lst)
        if insert_only:   # insert-only tables: MM01-MM07, and --deep opens plain files (acidctl.mm.checks)
            from acidctl.mm.checks import NOT_FOR_MM, deep_findings, directory_findings

            findings = [f for f in findings if f.check not in NOT_FOR_MM]
            findings += directory_findings(lst, st, properties=props, now=now, grace_seconds=grace_seconds)
        if inspect_file is not None:
            extra = (deep_findings(tfs, lst, st, storage=mm_storage, hive_version=hive_version) if insert_only
                     else _run_deep(tfs, lst, st, inspect_file, hive_version=hive_version))
            findings = sorted(findings + extra, key=lambda f: (-f.severity.rank, f.check, f.path))
        all_findings.extend(findings)
        ins = [c for c in st.deltas if c.kind is Kind.DELTA]
        dels = [c for c in st.deltas if c.kind is Kind.DELETE_DELTA]
        roles: dict[str, int] = {}
        for c in st.entries:
            roles[c.role.value] = roles.get(c.role.value, 0) + 1
        partitions.append({
            "partition": lst.partition,
            "path": lst.path,
            "entries": [c.to_dict() for c in st.entries],
            "snapshot": {
                "base": st.base.name if st.base else None,
                "base_write_id": st.base_write_id,
                "base_bytes": st.base.bytes if st.base else 0,
                "deltas": [c.name for c in ins],
                "delete_deltas": [c.name for c in dels],
                "read_order": [c.name for c in st.deltas],
                "originals": [o.to_dict() for o in st.originals],
                "delta_count": len(ins), "delta_bytes": sum(c.bytes for c in ins),
                "delete_delta_count": len(dels), "delete_delta_bytes": sum(c.bytes for c in dels),
                "original_count": len(st.originals), "original_bytes": sum(o.size for o in st.originals),
                "aborted_write_ids": list(st.aborted_write_ids),
                "has_uncompacted_aborts": st.has_uncompacted_aborts,
                "not_enough_history": st.not_enough_history,
                "reader_errors": list(st.reader_errors),
                "readable": not st.not_enough_history and not st.reader_errors,
            },
            "roles": roles,
            "compaction": rec.to_dict(),
            "findings": {s.value: sum(1 for f in findings if f.severity is s) for s in Severity},
        })

    all_findings.extend(_lock_findings(tfs))
    counts = {s.value: sum(1 for f in all_findings if f.severity is s) for s in Severity}
    return {
        "path": tfs.display(tfs.root),
        "hive_version": hive_version,
        "write_ids": dict(wl.to_dict(), assumed=bool(assume_committed)),
        "txns": (dict(tl.to_dict(), assumed=txns is None) if tl is not None else None),
        "assumptions": assumptions,
        "partitions": partitions,
        "findings": [f.to_dict() for f in all_findings],
        "summary": {
            "partitions": len(partitions),
            "errors": counts["error"], "warnings": counts["warn"], "info": counts["info"],
            "compaction_due": [p["partition"] or p["path"] for p in partitions if p["compaction"]["type"] != "none"],
            "unreadable": [p["partition"] or p["path"] for p in partitions if not p["snapshot"]["readable"]],
        },
    }


def _publish_findings(tfs, lst) -> list:
    """D07 (error) for a non-atomic publication a crash interrupted half way: until it is
    finished, readers see some outputs without the others (a wrong snapshot)."""
    from acidctl.compact.planner import STAGING_PREFIX

    if not any(e.name.startswith(STAGING_PREFIX) for e in lst.entries):
        return []
    from acidctl.compact.publish import interrupted
    from acidctl.findings import Finding, Severity

    out = []
    for it in interrupted(tfs, lst.fs_path or lst.path):
        if it["partial"]:
            out.append(Finding("D07", Severity.ERROR, it["display"],
                               f"interrupted compaction publish: {', '.join(it['published'])} published, "
                               f"{', '.join(it['staged'])} still staged; readers see a wrong snapshot until "
                               "`acidctl compact` or `acidctl clean --execute` finishes it"))
    return out


def _lock_findings(tfs) -> list:
    """D07 for acidctl's own compaction lock at the table root: a compaction running now
    (info) or a stale lock left by one that died (warn; `clean --execute` removes it)."""
    from acidctl.compact.lock import lock_path, read_lock
    from acidctl.findings import Finding, Severity

    info = read_lock(tfs, lock_path(tfs))
    if info is None:
        return []
    if info.stale:
        return [Finding("D07", Severity.WARN, info.path,
                        f"stale compaction lock ({info.describe()}): the compaction died; "
                        "`acidctl clean --execute` removes it")]
    return [Finding("D07", Severity.INFO, info.path, f"a compaction holds the table lock ({info.describe()})")]


def _run_deep(tfs, lst, st, inspect_file, *, hive_version: int = 3) -> list:
    """Call the ORC inspection hook on every data file the reader would open (F01-F15)."""
    import inspect as _inspect

    from acidctl.acid.acidstate import Kind
    from acidctl.acid.dirname import OriginalFile
    from acidctl.errors import AcidctlError
    from acidctl.findings import Finding, Severity

    try:
        accepted = set(_inspect.signature(inspect_file).parameters)
    except (TypeError, ValueError):
        accepted = set()
    base = lst.fs_path or lst.path
    jobs = []   # (path, kwargs)
    for c in ([st.base] if st.base else []) + list(st.deltas):
        kind = {Kind.BASE: "base", Kind.DELTA: "delta", Kind.DELETE_DELTA: "delete_delta"}[c.kind]
        for f in c.entry.data_files():
            if f.name.endswith("_flush_length") or "/" in f.name:
                continue
            raw = OriginalFile.parse(f.name) is not None   # LOAD DATA file: may lack ACID columns
            jobs.append((tfs.join(base, c.name, f.name),
                         {"statistics": False, "dir_kind": kind,
                          "dir_range": (c.min_write_id, c.max_write_id),
                          "expect_acid": None if raw else True, "hive_version": hive_version}))
    for o in st.originals:
        jobs.append((tfs.join(base, o.rel), {"statistics": False, "dir_kind": None, "expect_acid": False,
                                             "hive_version": hive_version}))
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
            out.append(Finding("F16", Severity.WARN, tfs.display(path),
                               "an ACID file in an original position: read with its own ROW__IDs and write ids "
                               "(not write id 0); rows of write ids the snapshot does not cover are not visible, "
                               "and compaction refuses them"))
    return out


# =========================================================================================
# text rendering
# =========================================================================================

def _fmt_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0
    return str(n)


def _wid_range(e: dict) -> str:
    lo, hi = e["min_write_id"], e["max_write_id"]
    if lo is None:
        return ""
    return str(lo) if lo == hi else f"{lo}-{hi}"


def render_text(report: dict) -> str:
    from acidctl.cli.output import table

    lines = [f"acidctl state {report['path']}  (Hive {report['hive_version']} reader rules)"]
    wl = report["write_ids"]
    lines.append(f"write ids: {wl['string']}" + ("   [ASSUMED]" if wl["assumed"] else ""))
    if report["txns"] is not None:
        lines.append(f"txns:      {report['txns']['string']}" + ("   [ASSUMED]" if report["txns"]["assumed"] else ""))
    for a in report["assumptions"]:
        lines.append(f"!! ASSUMED: {a}")
    for p in report["partitions"]:
        lines.append("")
        title = f"partition {p['partition']}" if p["partition"] else "table"
        lines.append(f"== {title}: {p['path']}")
        rows = []
        for e in p["entries"]:
            rows.append([e["role"], e["name"] + ("/" if e["is_dir"] else ""),
                         "" if e["read_order"] is None else e["read_order"] + 1, _wid_range(e),
                         "" if e["statement_id"] is None else e["statement_id"],
                         "" if e["visibility_txn"] is None else e["visibility_txn"],
                         "" if e["file_count"] is None else e["file_count"], e["bytes"], e["reason"]])
        lines.append(table(rows, ["ROLE", "NAME", "READ#", "WRITE IDS", "STMT", "VIS TXN", "FILES", "BYTES", "REASON"]))
        s, c = p["snapshot"], p["compaction"]
        t = c["thresholds"]
        lines.append("")
        if s["not_enough_history"]:
            lines.append(f"snapshot:   UNREADABLE: {s['not_enough_history']}")
        elif s["base"]:
            lines.append(f"snapshot:   base {s['base']} ({_fmt_bytes(s['base_bytes'])}) + {len(s['read_order'])} delta dir(s)")
        elif s["original_count"]:
            lines.append(f"snapshot:   no base; {s['original_count']} original file(s) ({_fmt_bytes(s['original_bytes'])}) "
                         f"+ {len(s['read_order'])} delta dir(s)")
        else:
            lines.append(f"snapshot:   no base; {len(s['read_order'])} delta dir(s)")
        for err in s["reader_errors"]:
            lines.append(f"            READERS FAIL: {err}")
        lines.append(f"deltas:     {s['delta_count']} insert ({_fmt_bytes(s['delta_bytes'])}), "
                     f"{s['delete_delta_count']} delete ({_fmt_bytes(s['delete_delta_bytes'])})")
        ratio = "n/a" if c["ratio"] is None else f"{c['ratio']:.3g}"
        lines.append(f"initiator:  {c['delta_count']} deltas vs threshold {t['hive.compactor.delta.num.threshold']}; "
                     f"delta/base {ratio} vs {t['hive.compactor.delta.pct.threshold']:g}  (compactor snapshot)")
        lines.append(f"compaction: {c['type'].upper()}" + (" - " + "; ".join(c["reasons"]) if c["reasons"] else ""))
    lines.append("")
    if report["findings"]:
        rows = [[f["severity"].upper(), f["check"], f["path"], f["message"]] for f in report["findings"]]
        lines.append(table(rows, ["SEVERITY", "CHECK", "PATH", "MESSAGE"]))
    else:
        lines.append("no findings")
    sm = report["summary"]
    lines.append(f"summary: {sm['partitions']} partition(s), {sm['errors']} error(s), {sm['warnings']} warning(s), "
                 f"{sm['info']} info; compaction due: {', '.join(sm['compaction_due']) or 'none'}")
    return "\n".join(lines)
