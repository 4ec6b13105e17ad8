"""``acidctl doctor``, ``acidctl why`` and ``acidctl metrics``: the warehouse at a glance.

``doctor`` JSON document (stable keys): ``hive_version``, ``summary`` (tables_checked,
partitions_checked, tables_skipped, directory_listings, seconds, open_txns, aborted_txns, locks,
compaction_queue, errors, warnings, info, by_code, worst), ``findings`` (each: code, severity,
title, subject, table, partition, path, message, evidence, fix) and ``partitions`` (per
partition: delta/delete-delta counts and bytes, base and obsolete bytes, the Initiator's
compaction type and the directories). Exit 4 when an error-level finding exists.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from acidctl.cli.main import app

_DB_HELP = "Only databases matching this glob (case-insensitive)."
_TABLE_HELP = "Only tables matching this glob (case-insensitive)."
_SINCE_HELP = ("Only list the directories of tables with metastore activity (a write, compaction or open/aborted "
               "txn) within AGE (30m, 6h, 2d); metastore-wide findings still cover everything.")


def _metastore(settings):
    from acidctl.errors import UsageError
    from acidctl.metastore.connection import connect, resolve_url

    try:
        url = resolve_url(settings.metastore_url, profile=settings.profile)
    except UsageError as e:
        raise UsageError(str(e), hint="doctor, why and metrics read the metastore: use --metastore URL") from None
    return connect(url)


@app.command("doctor", help="Check every ACID table and partition the metastore knows against its directories: "
                            "stuck transactions, compactions and locks, Cleaner and Initiator blocks, metastore "
                            "bloat, files vs metastore, reader compatibility. Each finding names its evidence and "
                            "the command that fixes it. Read-only. Exit 4 when an error-level finding exists.")
def doctor_command(
    ctx: typer.Context,
    db: Annotated[str, typer.Option("--db", metavar="GLOB", help=_DB_HELP)] = "*",
    table: Annotated[str, typer.Option("--table", metavar="GLOB", help=_TABLE_HELP)] = "*",
    since: Annotated[Optional[str], typer.Option("--since", metavar="AGE", help=_SINCE_HELP)] = None,
    workers: Annotated[int, typer.Option("--workers", min=1, max=256, help="Tables listed in parallel.")] = 8,
    html: Annotated[Optional[str], typer.Option("--html", metavar="FILE", help="Also write a self-contained HTML report (charts, sortable findings, timelines, compaction history) to FILE.")] = None,
):
    from acidctl.compact.clean import parse_age
    from acidctl.doctor.collect import collect
    from acidctl.doctor.findings import build_report, diagnose
    from acidctl.errors import ValidationFailed

    settings = ctx.obj
    since_s = parse_age(since) if since else None
    ms = _metastore(settings)
    scan = collect(ms, settings.table_fs, db_glob=db, table_glob=table, since_seconds=since_s, workers=workers)
    findings = diagnose(scan)
    report = build_report(scan, findings)
    if html:
        from acidctl.doctor.html import write_html

        write_html(html, report, scan.warehouse)
        settings.output.note(f"acidctl: HTML report written to {html}")
    settings.output.emit(report, render_doctor)
    errors = report["summary"]["errors"]
    if errors:
        raise ValidationFailed(f"{errors} error-level finding{'s' if errors != 1 else ''}")


def render_doctor(report: dict) -> str:
    from acidctl.cli.output import table

    s = report["summary"]
    lines = [f"acidctl doctor  (Hive {report['hive_version']} metastore)",
             f"checked {s['tables_checked']} ACID table(s), {s['partitions_checked']} partition(s) "
             f"({s['directory_listings']} directory listings, {s['seconds']:.2f}s); "
             f"{s['open_txns']} open txn(s), {s['aborted_txns']} aborted txn(s), {s['locks']} lock(s), "
             f"{s['compaction_queue']} queued compaction(s)"]
    if s["tables_skipped"]:
        lines.append(f"skipped (no activity within --since): {len(s['tables_skipped'])} table(s)")
    lines.append(f"findings: {s['errors']} error(s), {s['warnings']} warning(s), {s['info']} info")
    if s["worst"]:
        lines.append("worst:")
        for f in s["worst"]:
            lines.append(f"  {f['severity'].upper():5} {f['code']}: {f['subject']}: {f['title']}")
    for sev, title in (("error", "ERRORS"), ("warn", "WARNINGS"), ("info", "INFO")):
        group = [f for f in report["findings"] if f["severity"] == sev]
        if not group:
            continue
        lines.append("")
        lines.append(f"== {title} ({len(group)})")
        for f in group:
            lines.append(f"[{f['code']}] {f['subject']}: {f['message']}")
            if f["fix"]:
                lines.append(f"    fix: {f['fix']}")
    parts = [p for p in report["partitions"] if p["delta_count"] or p["delete_delta_count"] or p["obsolete_bytes"]]
    if parts:
        lines.append("")
        rows = [[p["table"] + (f"/{p['partition']}" if p["partition"] else ""), p["delta_count"], p["delta_bytes"],
                 p["delete_delta_count"], p["delete_delta_bytes"], p["base_bytes"], p["obsolete_bytes"],
                 p["compaction"] or ""] for p in parts[:50]]
        lines.append(table(rows, ["PARTITION", "DELTAS", "BYTES", "DELETE DELTAS", "BYTES", "BASE BYTES",
                                  "OBSOLETE BYTES", "DUE"]))
        if len(parts) > 50:
            lines.append(f"... {len(parts) - 50} more partition(s) in --output json")
    if not report["findings"]:
        lines.append("")
        lines.append("no findings")
    return "\n".join(lines)
