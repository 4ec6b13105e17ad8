"""``acidctl doctor``, ``acidctl why`` and ``acidctl metrics``: the warehouse at a glance.

``doctor`` JSON document (stable keys): ``hive_version``, ``summary`` (tables_checked,
partitions_checked, tables_skipped, directory_listings, seconds, open_txns, aborted_txns, locks,
compaction_queue, errors, warnings, info, by_code, worst, oldest_open_txn), ``findings`` (each: code, severity,
title, subject, table, partition, path, message, evidence, fix) and ``partitions`` (per
partition: delta/delete-delta counts and bytes, base and obsolete bytes, number of
directories, the Initiator's compaction type), ``metastore_source`` (database | thrift),
``facts_unavailable`` and ``checks_skipped`` (the checks the source's facts could not support,
acidctl.doctor.findings.skipped_checks; empty on a Hive 3/4 database). Exit 4 when an
error-level finding exists.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from acidctl.cli import options
from acidctl.cli.options import parse_kv
from acidctl.cli.output import wrap
from acidctl.units import plural, size

_DB_HELP = "Only databases matching this glob (case-insensitive)."
_TABLE_HELP = "Only tables matching this glob (case-insensitive)."
_CONF_HELP = (
    "A Hive setting that differs from the default, repeatable: hive.txn.timeout, "
    "hive.compactor.worker.timeout, hive.compactor.initiator.failed.compacts.threshold, "
    "metastore.compactor.initiator.failed.retry.time and the metastore.compactor.*/acidmetrics "
    "thresholds (durations as 600, 10m, 12h, 7d)."
)
_SINCE_HELP = (
    "Only list the directories of tables with metastore activity (a write, compaction or open/aborted "
    "txn) within AGE (30m, 6h, 2d); metastore-wide findings still cover everything."
)

DOCTOR_HELP = (
    "Check every ACID table and partition the metastore knows against its directories: "
    "stuck transactions, compactions and locks, Cleaner and Initiator blocks, metastore "
    "bloat, files vs metastore, reader compatibility. Each finding names its evidence and "
    "the command that fixes it. Read-only. Exit 4 when an error-level finding exists."
)

WHY_HELP = (
    "Replay Hive's decisions about one table or partition, step by step with the numbers: "
    "would the Initiator queue it now and why not, what the Worker would produce, what the "
    "Cleaner can remove and what holds it back. Hive 2.3, 3.1 and 4 rules. Read-only."
)

METRICS_HELP = (
    "The gauges Hive 4's AcidMetricService exports (open/aborted txns and their ages, "
    "initiated/working/ready-for-cleaning compactions and their ages, locks, "
    "COMPLETED_TXN_COMPONENTS and TXN_TO_WRITE_ID rows, per-table delta counts), computed "
    "from the metastore for Hive 2.3, 3.1 and 4, in the Prometheus text format (or JSON with "
    "-o json)."
)


def register(app: typer.Typer) -> None:
    app.command("doctor", help=DOCTOR_HELP)(doctor_command)
    app.command("why", help=WHY_HELP)(why_command)
    app.command("metrics", help=METRICS_HELP)(metrics_command)


def _metastore(settings):
    from acidctl.errors import UsageError
    from acidctl.metastore.connection import connect, resolve_url

    try:
        url = resolve_url(settings.metastore_url, profile=settings.profile)
    except UsageError as e:
        raise UsageError(str(e), hint="doctor, why and metrics read the metastore: use --metastore URL") from None
    from acidctl.metastore import thrift

    if thrift.is_thrift(url):
        # what the Thrift API offers (acidctl.doctor.thrift_facts); the checks needing the rest
        # are named as skipped in the report
        return thrift.connect(url)
    from acidctl.metastore.hive2 import connect_hive2, is_hive2

    if is_hive2(url):  # a Hive 2.3 metastore database (acidctl.doctor.facts.read_warehouse_hive2)
        return connect_hive2(url)
    return connect(url)


def doctor_command(
    ctx: typer.Context,
    db: Annotated[str, typer.Option("--db", metavar="GLOB", help=_DB_HELP)] = "*",
    table: Annotated[str, typer.Option("--table", metavar="GLOB", help=_TABLE_HELP)] = "*",
    since: Annotated[Optional[str], typer.Option("--since", metavar="AGE", help=_SINCE_HELP)] = None,
    workers: Annotated[
        Optional[int],
        typer.Option(
            "--workers",
            metavar="N",
            min=1,
            max=256,
            help="Tables listed in parallel (default: 8 on remote filesystems, the number of cores on local disks).",
        ),
    ] = None,
    html: Annotated[
        Optional[str],
        typer.Option(
            "--html",
            metavar="FILE",
            help="Also write a self-contained HTML report (charts, sortable findings, timelines, compaction history) to FILE.",
        ),
    ] = None,
    conf: Annotated[Optional[list[str]], typer.Option("--conf", metavar="KEY=VALUE", help=_CONF_HELP)] = None,
    dry_run: Annotated[
        bool, options.dry_run_option("With --html: render the report but write no file (doctor writes nothing else).")
    ] = False,
):
    from acidctl.durations import parse_age
    from acidctl.doctor.collect import collect
    from acidctl.doctor.findings import build_report, diagnose, limits_from_conf
    from acidctl.errors import ValidationFailed

    settings = ctx.obj
    limits = limits_from_conf(parse_kv(conf, "--conf"))
    since_s = parse_age(since) if since else None
    ms = _metastore(settings)
    scan = collect(ms, settings.table_fs, db_glob=db, table_glob=table, since_seconds=since_s, workers=workers)
    findings = diagnose(scan, limits=limits)
    report = build_report(scan, findings)
    if html and dry_run:
        from acidctl.doctor.html import render_html

        _check_writable(html)
        n = len(render_html(report, scan).encode())
        settings.output.note(f"acidctl: dry run: would write the HTML report ({size(n)}) to {html}; nothing written")
    elif html:
        from acidctl.doctor.html import write_html

        write_html(html, report, scan)
        settings.output.note(f"acidctl: HTML report written to {html}")
    settings.output.emit(report, render_doctor)
    errors = report["summary"]["errors"]
    if errors:
        raise ValidationFailed(f"{errors} error-level finding{'s' if errors != 1 else ''}")


def render_doctor(report: dict) -> str:
    from acidctl.cli.output import Col, table
    from acidctl.units import duration, size

    s = report["summary"]
    lines = [
        f"acidctl doctor  (Hive {report['hive_version']} metastore)",
        wrap(
            f"checked {plural(s['tables_checked'], 'ACID table')}, {plural(s['partitions_checked'], 'partition')} "
            f"({plural(s['directory_listings'], 'directory listing')}, {duration(s['seconds'])}); "
            f"{plural(s['open_txns'], 'open txn')}, {plural(s['aborted_txns'], 'aborted txn')}, "
            f"{plural(s['locks'], 'lock')}, {plural(s['compaction_queue'], 'queued compaction')}"
        ),
    ]
    if s["tables_skipped"]:
        lines.append(f"skipped (no activity within --since): {plural(len(s['tables_skipped']), 'table')}")
    o = s.get("oldest_open_txn")
    if o:
        from acidctl.doctor.findings import human_age

        held = []
        if o["blocks_cleaning"]:
            held.append(f"{plural(len(o['blocks_cleaning']), 'compaction')} waiting for the Cleaner")
        if o["open_write_ids_on"]:
            held.append(
                "open write ids on "
                + ", ".join(o["open_write_ids_on"][:5])
                + (" ..." if len(o["open_write_ids_on"]) > 5 else "")
            )
        lines.append(
            wrap(
                f"oldest open txn: {o['txn_id']} ({o['user']}@{o['host']}, open {human_age(o['age_seconds'])})"
                + (f"; holds back {'; '.join(held)}" if held else "")
            )
        )
    lines.append(f"findings: {plural(s['errors'], 'error')}, {plural(s['warnings'], 'warning')}, {s['info']} info")
    skipped = report.get("checks_skipped") or []
    if skipped:
        full = [c["code"] for c in skipped if not c["partial"]]
        part = [c["code"] for c in skipped if c["partial"]]
        lines.append(
            wrap(
                f"not checked ({', '.join(sorted({f for c in skipped for f in c['needs']}))} not offered by the "
                f"{'Thrift API' if report.get('metastore_source') == 'thrift' else 'metastore'}): "
                + ", ".join(full)
                + (f"; partly: {', '.join(part)}" if part else "")
            )
        )
    if s["worst"]:
        lines.append("worst:")
        for f in s["worst"]:
            lines.append(wrap(f"  {f['severity'].upper():5} {f['code']}: {f['subject']}: {f['title']}", indent=" " * 8))
    for sev, title in (("error", "ERRORS"), ("warn", "WARNINGS"), ("info", "INFO")):
        group = [f for f in report["findings"] if f["severity"] == sev]
        if not group:
            continue
        lines.append("")
        lines.append(f"== {title} ({len(group)})")
        for f in group:
            lines.append(wrap(f"[{f['code']}] {f['subject']}: {f['message']}"))
            if f["fix"]:
                # a command to copy: each command on one line; a line ending in `&&` continues in
                # every POSIX shell, so the lines paste as the one command line JSON's "fix" has
                lines.append("    fix: " + " &&\n         ".join(f["fix"].split(" && ")))
    parts = [p for p in report["partitions"] if p["delta_count"] or p["delete_delta_count"] or p["obsolete_bytes"]]
    if parts:
        lines.append("")
        rows = [
            [
                p["table"] + (f"/{p['partition']}" if p["partition"] else ""),
                p["delta_count"],
                size(p["delta_bytes"]),
                p["delete_delta_count"],
                size(p["delete_delta_bytes"]),
                size(p["base_bytes"]),
                size(p["obsolete_bytes"]),
                p["compaction"] or "",
            ]
            for p in parts[:50]
        ]
        lines.append(
            table(
                rows,
                [
                    Col("Partition"),
                    Col("Deltas", "delta_count"),
                    Col("Delta Size", "delta_bytes", wide=True),
                    Col("Delete Deltas", "delete_delta_count"),
                    Col("Delete Size", "delete_delta_bytes", wide=True),
                    Col("Base Size", "base_bytes"),
                    Col("Obsolete", "obsolete_bytes"),
                    Col("Due", "compaction"),
                ],
            )
        )
        if len(parts) > 50:
            lines.append(f"... {plural(len(parts) - 50, 'more partition', 'more partitions')} in --output json")
    if not report["findings"]:
        lines.append("")
        lines.append("no findings" + (" by the checks that ran" if skipped else ""))
    return "\n".join(lines)


def _refuse_path(spec: str) -> None:
    """``why`` replays the metastore's decisions, so it names a table; a directory answered
    "empty table name". Say so, with the name Hive's warehouse layout gives the path."""
    from acidctl.errors import UsageError
    from acidctl.target import table_name_from_path

    if not (spec.startswith(("/", "./", "../", "~")) or "://" in spec or spec.startswith("file:")):
        return
    guess = table_name_from_path(spec)
    parts = [p for p in spec.rstrip("/").split("/") if "=" in p]
    name = guess + ("/" + "/".join(parts) if parts else "") if guess else None
    raise UsageError(
        f"why takes a table the metastore knows (DB.TABLE[/k=v]), not a path: {spec}",
        hint=f"if that is the table's directory: acidctl why {name}" if name else "give DB.TABLE[/k=v]",
    )


def why_command(
    ctx: typer.Context,
    spec: Annotated[
        str,
        typer.Argument(
            metavar="DB.TABLE[/PART]", help="The table (every partition) or one partition, e.g. db.sales/ds=2026-01-01."
        ),
    ],
    conf: Annotated[Optional[list[str]], typer.Option("--conf", metavar="KEY=VALUE", help=_CONF_HELP)] = None,
):
    from acidctl.doctor.collect import scan_table
    from acidctl.doctor.facts import read_warehouse
    from acidctl.doctor.findings import limits_from_conf
    from acidctl.doctor.why import replay
    from acidctl.errors import NotFoundError, TableNotFound
    from acidctl.metastore.tables import split_spec

    settings = ctx.obj
    limits = limits_from_conf(parse_kv(conf, "--conf"))
    _refuse_path(spec)
    db, tbl, part = split_spec(spec)
    ms = _metastore(settings)
    wh = read_warehouse(ms)
    t = wh.table(db, tbl)
    if t is None:
        raise TableNotFound(f"table {db}.{tbl} not found in the metastore")
    scans = scan_table(wh, t, settings.table_fs, txns=wh.txn_list())
    if part is not None:
        scans = [p for p in scans if p.partition == part]
        if not scans:
            raise NotFoundError(f"partition {part} of {db}.{tbl} is neither in the metastore nor on disk")
    out = {
        "table": t.full_name,
        "spec": spec,
        "hive_version": wh.hive_version,
        "partitions": [replay(wh, t, ps, limits=limits) for ps in scans if ps.exists and not ps.error],
    }
    missing = [ps for ps in scans if not ps.exists or ps.error]
    out["unreadable"] = [
        {"partition": ps.partition, "path": ps.path, "error": ps.error or "location does not exist"} for ps in missing
    ]
    settings.output.emit(out, render_why)


def render_why(out: dict) -> str:
    lines = [f"acidctl why {out['spec']}  (Hive {out['hive_version']} rules)"]
    for p in out["partitions"]:
        lines.append("")
        lines.append(wrap(f"== {p['table']}" + (f"/{p['partition']}" if p["partition"] else "") + f"  ({p['path']})"))
        for comp in ("initiator", "worker", "cleaner"):
            c = p[comp]
            lines.append(wrap(f"{comp.upper()}: {c['verdict']}"))
            for i, s in enumerate(c["steps"], 1):
                mark = {"ok": "ok  ", "stop": "STOP", "note": "note", "unknown": "????"}[s["outcome"]]
                lines.append(wrap(f"  {i}. [{mark}] {s['rule']}: {s['detail']}", indent="          "))
    for u in out["unreadable"]:
        lines.append(wrap(f"cannot replay {u['partition'] or out['table']}: {u['error']} ({u['path']})"))
    return "\n".join(lines)


def _check_writable(path: str) -> None:
    """What writing ``path`` would fail on, for a dry run (the real run's exit 5)."""
    import os

    from acidctl.errors import StorageUnavailable

    d = os.path.dirname(os.path.abspath(path)) or "."
    if not os.path.isdir(d):
        raise StorageUnavailable(f"cannot write {path}: No such file or directory")
    if not os.access(d, os.W_OK):
        raise StorageUnavailable(f"cannot write {path}: Permission denied")


def metrics_command(
    ctx: typer.Context,
    deltas: Annotated[
        bool,
        typer.Option(
            "--deltas",
            help="Compute the per-table delta gauges from the directories (any Hive version) instead of Hive 4's COMPACTION_METRICS_CACHE.",
        ),
    ] = False,
    db: Annotated[
        str, typer.Option("--db", metavar="GLOB", help="With --deltas: only databases matching this glob.")
    ] = "*",
    table: Annotated[
        str, typer.Option("--table", metavar="GLOB", help="With --deltas: only tables matching this glob.")
    ] = "*",
    textfile: Annotated[
        Optional[str],
        typer.Option(
            "--textfile",
            metavar="FILE",
            help="Write the Prometheus text to FILE atomically (for node_exporter's textfile collector) instead of stdout.",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        options.dry_run_option("With --textfile: compute the metrics but write no file (metrics writes nothing else)."),
    ] = False,
):
    from acidctl.doctor.metrics import compute, prometheus_text

    settings = ctx.obj
    ms = _metastore(settings)
    if deltas:
        from acidctl.doctor.collect import collect

        scan = collect(ms, settings.table_fs, db_glob=db, table_glob=table)
        result = compute(scan.warehouse, scan.partitions)
    else:
        from acidctl.doctor.facts import read_warehouse

        result = compute(read_warehouse(ms))
    for n in result["notes"]:  # why a per-table gauge may have no samples; which gauges are not exported
        if deltas or n.startswith("not exported"):
            settings.output.note(f"note: {n}")
    if textfile:
        import os

        from acidctl.errors import StorageUnavailable
        from acidctl.fs import local_temp_file

        d = os.path.dirname(os.path.abspath(textfile))
        text = prometheus_text(result)
        if dry_run:
            _check_writable(textfile)
            settings.output.note(
                f"acidctl: dry run: would write {plural(text.count(chr(10)), 'line')} of metrics to {textfile}; nothing written"
            )
            return
        try:
            fd, tmp = local_temp_file(prefix=".acidctl-metrics-", suffix=".tmp", dir=d)
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, textfile)  # node_exporter must never read a half-written file
        except OSError as e:
            raise StorageUnavailable(f"cannot write {textfile}: {e.strerror or e}") from None
        settings.output.note(f"acidctl: metrics written to {textfile}")
        return
    settings.output.emit(result, lambda r: _fit_help(prometheus_text(r)))


def _fit_help(text: str) -> str:
    """On a terminal (or with ``$COLUMNS``), long ``# HELP`` lines continue on ``#   `` comment
    lines (which Prometheus parsers skip), so the exposition fits the screen and stays valid;
    pipes, files (``--textfile``) and ``-o wide`` keep Prometheus's one line per HELP."""
    import textwrap

    from acidctl.cli.output import terminal_width

    limit = terminal_width()
    if not limit:
        return text
    out = []
    for line in text.splitlines():
        if line.startswith("# HELP ") and len(line) > limit:
            out.extend(
                textwrap.wrap(
                    line,
                    width=max(limit, 40),
                    subsequent_indent="#   ",
                    break_long_words=False,
                    break_on_hyphens=False,
                )
            )
        else:
            out.append(line)
    return "\n".join(out) + "\n"
