"""``acidctl state PATH``: which directories a Hive reader uses, why, and what is wrong.

The snapshot comes from the metastore (``DB.TABLE``), ``--write-ids`` (Hive's ValidWriteIdList
string) or ``--assume-committed`` (every write id named by a directory is committed; printed
loudly) — :func:`acidctl.target.resolve_target`. The report is built by
:func:`acidctl.acid.report.build_report`; this module parses options and renders it.

JSON document (stable keys): ``path``, ``hive_version``, ``write_ids`` (+ ``assumed``), ``txns``
(+ ``assumed``; null under Hive 3 without ``--txns``), ``hive2_txns`` (only under ``--hive-version 2``:
the snapshot as Hive 2's ValidTxnList), ``assumptions`` (list of strings),
``partitions`` (each: ``partition``, ``path``, ``entries`` [one per child: name, path, kind, role,
reason, is_dir, min/max_write_id, statement_id, visibility_txn, compacted, read_order (from 0),
file_count, bytes, mtime (epoch ms, as ``show`` and the metastore)], ``snapshot``, ``roles``
(counts), ``compaction`` (the Initiator's recommendation), ``findings`` (counts by severity)),
``findings`` (every finding: check, severity, path, message), ``summary``, ``table`` and
``snapshot_source``.

Default rules are Hive 3.1 (``--hive-version 3``): they are the stricter ones for names (a
``_vM`` directory is an error, D02, because every Hive 3 reader fails on it). Use
``--hive-version 4`` for Hive 4 tables; ``--txns`` then gives the ValidTxnList that decides
whether ``_vM`` compactor output is visible (without it every visibility txn counts as
committed, and the output says so).
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from acidctl.cli.targets import TABLE_RULE

from acidctl.cli import options
from acidctl.units import plural

HELP = (
    "Classify a table or partition directory the way Hive's getAcidState does (base, deltas, obsolete, "
    "aborted, not visible yet, originals) and run the directory checks D01-D12, M01-M08, S01-S14." + " " + TABLE_RULE
)


def entry_columns():
    """The directory table (JSON: ``partitions[].entries[]``). The default view is what a
    person reads first; ``-o wide`` adds the write-id range (JSON ``min_write_id`` ..
    ``max_write_id``; ``-o custom-columns`` takes ``write_ids``), statement id, visibility txn
    and file count."""
    from acidctl.cli.output import Col

    return [
        Col("Role", text=True),  # words ("not visible yet"), never a name
        Col("Name"),
        Col("Read#", "read_order"),
        Col("Write IDs", "write_ids", wide=True),
        Col("Stmt", "statement_id", wide=True),
        Col("Vis Txn", "visibility_txn", wide=True),
        Col("Files", "file_count", wide=True),
        Col("Size", "bytes"),
        Col("Reason", text=True),
    ]


def register(app: typer.Typer) -> None:
    app.command("state", help=HELP)(state_command)


def state_command(
    ctx: typer.Context,
    path: Annotated[
        str,
        options.table_argument(
            "Table or partition directory (local path, file://, hdfs://, s3://, memory://), or DB.TABLE[/key=value] looked up in the metastore (its snapshot too)."
            + " "
            + TABLE_RULE
        ),
    ],
    write_ids: options.WriteIds = None,
    assume_committed: options.AssumeCommitted = False,
    txns: options.Txns = None,
    hive_version: options.HiveVersion = None,
    deep: Annotated[
        bool,
        typer.Option(
            "--deep",
            help="Also open the files read: ORC footers and ACID metadata (checks F00-F16; insert-only tables: their plain files).",
        ),
    ] = False,
    partition: options.Partitions = None,
    tblproperty: Annotated[
        Optional[list[str]],
        typer.Option(
            "--tblproperty",
            metavar="KEY=VALUE",
            help="Table property, repeatable (e.g. transactional_properties=insert_only, no_auto_compaction=true; compactorthreshold.SETTING=N overrides Hive's SETTING, e.g. hive.compactor.delta.num.threshold, for this table).",
        ),
    ] = None,
    grace_hours: Annotated[
        float,
        typer.Option("--grace-hours", metavar="HOURS", help="Age after which hidden leftovers (D07) are warnings."),
    ] = 24.0,
    mm_allow_originals: options.MMAllowOriginals = False,
):
    from acidctl.errors import ValidationFailed
    from acidctl.cli.targets import resolve

    settings = ctx.obj
    target = resolve(
        settings,
        path,
        write_ids=write_ids,
        assume_committed=assume_committed,
        txns=txns,
        hive_version=hive_version,
        # one partition: the target is its directory; several: the table, its report filtered
        partition=partition[0] if partition and len(partition) == 1 else None,
    )
    inspect_file = _deep_hook() if deep else None
    props = {**target.properties, **options.parse_kv(tblproperty, "--tblproperty")}
    facts = None
    from acidctl.metastore.thrift import is_thrift

    # the (M) facts read the metastore's tables: a thrift:// metastore does not return them
    if (
        target.table is not None
        and target.metastore is not None
        and target.hive_version != 2
        and not is_thrift(target.metastore)
    ):
        from acidctl.metastore.facts import facts_for_partition, table_facts

        tf = table_facts(target.metastore, target.table.db, target.table.table)
        base_part = getattr(target.table, "partition", None)

        def facts(partition, tf=tf, base_part=base_part):
            name = "/".join(p for p in (base_part, partition) if p) or None
            return facts_for_partition(tf, name, hive_version=target.hive_version, txns=target.txns)

    from acidctl.acid.report import build_report

    # the ValidTxnList when one is known (--txns, or Hive 4's from the metastore); Hive 3 rules
    # ignore it, and the metastore's Hive 3 txn list is not shown
    known_txns = target.txns if txns or (target.source == "metastore" and target.hive_version == 4) else None
    report = build_report(
        target.tfs,
        write_ids=target.write_ids,
        assumed_committed=assume_committed,
        txns=known_txns,
        hive_version=target.hive_version,
        table_properties=props,
        grace_seconds=grace_hours * 3600.0,
        inspect_file=inspect_file,
        facts=facts,
        mm_storage=_mm_storage(target) if deep else None,
        mm_allow_originals=mm_allow_originals,
        only_partitions=list(partition) if partition and len(partition) > 1 else None,
    )
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
        raise UsageError(
            f"--deep is not available in this build: acidctl.orc.meta.inspect_file cannot be imported ({e})",
            hint="run without --deep for the directory checks",
        ) from None
    return inspect_file


# =========================================================================================
# text rendering
# =========================================================================================


def _delta_dirs(n: int) -> str:
    return plural(n, "delta directory", "delta directories")


def _fmt_bytes(n: float) -> str:
    from acidctl.units import size

    return size(n)


def _wid_range(e: dict) -> str:
    lo, hi = e["min_write_id"], e["max_write_id"]
    if lo is None:
        return ""
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _section_title(p: dict) -> str:
    """``partition k=v`` for a partition (also when the path given is a partition directory
    itself), else ``table``."""
    import posixpath

    from acidctl.acid.dirname import is_partition_dir

    if p["partition"]:
        return f"partition {p['partition']}"
    leaf = posixpath.basename(p["path"].rstrip("/"))
    return f"partition {leaf}" if is_partition_dir(leaf) else "table"


def _relative(path: str, root: str) -> str:
    """A finding's path under the table as the header shows it (``.`` for the table itself);
    paths elsewhere stay whole. Text only: JSON keeps full paths."""
    root = root.rstrip("/")
    if path.rstrip("/") == root:
        return "."
    return path[len(root) + 1 :] if path.startswith(root + "/") else path


def render_text(report: dict) -> str:
    from acidctl.cli.output import table, wrap
    from acidctl.units import ratio as fmt_ratio

    lines = [wrap(f"acidctl state {report['path']}  (Hive {report['hive_version']} reader rules)")]
    wl = report["write_ids"]
    assumed = "   [ASSUMED]" if wl["assumed"] else ""
    if report.get("hive2_txns"):
        # Hive 2 has no write ids: its snapshot is the ValidTxnList (a write-id list made from
        # it names no table, ``null:...``, when the target is a path)
        lines.append(
            wrap(f"txns: {report['hive2_txns']}{assumed}   (Hive 2 ValidTxnList: txn ids name the directories)")
        )
    else:
        lines.append(wrap(f"write ids: {wl['string']}{assumed}"))
    if report["txns"] is not None:
        lines.append(
            wrap(f"txns:      {report['txns']['string']}" + ("   [ASSUMED]" if report["txns"]["assumed"] else ""))
        )
    for a in report["assumptions"]:
        lines.append(wrap(f"!! ASSUMED: {a}"))
    for p in report["partitions"]:
        lines.append("")
        lines.append(wrap(f"== {_section_title(p)}: {p['path']}"))
        rows = []
        for e in p["entries"]:
            rows.append(
                [
                    e["role"],
                    e["name"] + ("/" if e["is_dir"] else ""),
                    "" if e["read_order"] is None else e["read_order"],
                    _wid_range(e),
                    "" if e["statement_id"] is None else e["statement_id"],
                    "" if e["visibility_txn"] is None else e["visibility_txn"],
                    "" if e["file_count"] is None else e["file_count"],
                    _fmt_bytes(e["bytes"]),
                    e["reason"],
                ]
            )
        lines.append(table(rows, entry_columns(), empty="(empty directory)"))
        s, c = p["snapshot"], p["compaction"]
        t = c["thresholds"]
        lines.append("")
        if s["not_enough_history"]:
            lines.append(f"snapshot:   UNREADABLE: {s['not_enough_history']}")
        elif s["base"]:
            lines.append(
                f"snapshot:   base {s['base']} ({_fmt_bytes(s['base_bytes'])}) + {_delta_dirs(len(s['read_order']))}"
            )
        elif s["original_count"]:
            lines.append(
                f"snapshot:   no base; {plural(s['original_count'], 'original file')} ({_fmt_bytes(s['original_bytes'])}) "
                f"+ {_delta_dirs(len(s['read_order']))}"
            )
        else:
            lines.append(f"snapshot:   no base; {_delta_dirs(len(s['read_order']))}")
        for err in s["reader_errors"]:
            lines.append(f"            READERS FAIL: {err}")
        lines.append(
            f"deltas:     {s['delta_count']} insert ({_fmt_bytes(s['delta_bytes'])}), "
            f"{s['delete_delta_count']} delete ({_fmt_bytes(s['delete_delta_bytes'])})"
        )
        ratio = fmt_ratio(c["ratio"])
        lines.append(
            wrap(
                f"initiator:  {plural(c['delta_count'], 'delta')} vs threshold {t['hive.compactor.delta.num.threshold']}; "
                f"delta/base {ratio} vs {t['hive.compactor.delta.pct.threshold']:g}  (compactor snapshot)",
                indent="            ",
            )
        )
        lines.append(
            wrap(
                f"compaction: {c['type'].upper()}" + (" - " + "; ".join(c["reasons"]) if c["reasons"] else ""),
                indent="            ",
            )
        )
    lines.append("")
    if report["findings"]:
        # prose lines, as doctor prints findings: a path (often longer than half a terminal)
        # stays whole on its line and only the message wraps
        for f in report["findings"]:
            lines.append(
                wrap(f"{f['severity'].upper()} {f['check']} {_relative(f['path'], report['path'])}: {f['message']}")
            )
    else:
        lines.append("no findings")
    sm = report["summary"]
    lines.append(
        wrap(
            f"summary: {plural(sm['partitions'], 'partition')}, {plural(sm['errors'], 'error')}, "
            f"{plural(sm['warnings'], 'warning')}, "
            f"{sm['info']} info; compaction due: {', '.join(sm['compaction_due']) or 'none'}"
        )
    )
    return "\n".join(lines)
