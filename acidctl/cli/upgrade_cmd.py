"""``acidctl upgrade-check``: are a Hive 2 metastore's ACID tables ready for the Hive 3 upgrade?

Library: :mod:`acidctl.upgrade`. JSON document (stable keys): ``metastore`` (password masked),
``checked_at``, ``db``, ``txns`` / ``compactor_txns`` (Hive 2 ValidTxnLists), ``ready``,
``summary`` {tables, partitions, ready, compact, blocked, error, errors, bytes_to_compact},
``tables`` [{table, mode, findings, partitions, location}], ``partitions`` [{table, partition,
path, mode, status, reasons, preupgrade_tool, current, blocked_by, leftover, files, findings,
bytes, command}], ``commands`` (the ``ALTER TABLE ... COMPACT 'major';`` lines); with
``--execute`` also ``executed`` {runs (with compaction_ids), spark_applications, registered,
cleaned [{table, deleted, compactions}], only_bases (compacted partitions left with anything but
one base: empty = verified)} and the document describes the state **after** the compactions and
their cleaning. Exit 0 when every partition is ready (and, with --execute, holds only its base),
4 when not (the report says why), 2/3/5 as usual.
"""

from __future__ import annotations

from typing import Annotated

import typer

from acidctl.cli import options
from acidctl.units import plural
from acidctl.cli.options import parse_kv

HELP = (
    "Check every ACID table of a Hive 2 metastore for the Hive 3 upgrade: any delta left needs a major "
    "compaction (the ALTER TABLE ... COMPACT 'major' lines are printed); --execute runs them (--engine) with "
    "Hive 2.3 output, registered in the metastore as Hive 2.3's Worker does, cleans them and checks that only bases remain."
)


def register(app: typer.Typer) -> None:
    app.command("upgrade-check", help=HELP)(upgrade_check_command)


def upgrade_check_command(
    ctx: typer.Context,
    db: Annotated[
        str,
        typer.Option("--db", metavar="GLOB", help="Only databases matching GLOB (case-insensitive, e.g. 'sales*')."),
    ] = "*",
    execute: Annotated[
        bool,
        options.execute_option("Run the needed major compactions (--engine), clean them and check again."),
    ] = False,
    dry_run: Annotated[
        bool,
        options.dry_run_option(
            "With --execute: print the check and the compactions --execute would run; write nothing, and exit as --execute would (0 unless a partition is blocked or unreadable)."
        ),
    ] = False,
    engine: options.Engine = options.ENGINE_DEFAULT,
    local_max_bytes: options.LocalMaxBytes = None,
    master: options.Master = "local[*]",
    spark_conf: options.SparkConf = None,
):
    from acidctl.errors import ValidationFailed
    from acidctl.metastore.connection import resolve_url
    from acidctl.upgrade import check
    from acidctl.upgrade import execute as run

    settings = ctx.obj
    from acidctl.cli.progress import spark_start_progress

    spark_start_progress(settings)  # a status line while a Spark session starts (terminal only)
    engine = engine.lower()
    url = resolve_url(getattr(settings, "metastore_url", None), profile=getattr(settings, "profile", None))
    report = check(settings, url, db_glob=db)
    if execute and dry_run:
        # what --execute would do: compact the partitions marked compact; it ends ready unless a
        # partition is blocked or unreadable (those --execute does not change)
        s = report["summary"]
        report = dict(report, dry_run=True)
        settings.output.emit(report, _text)
        if s["blocked"] or s["error"] or s["errors"]:
            raise ValidationFailed(
                f"--execute would not make it ready for the Hive 3 upgrade: {s['blocked']} blocked, "
                f"{s['error']} unreadable, {plural(s['errors'], 'error finding')}"
            )
        return
    if execute:
        done = run(
            settings,
            url,
            report,
            master=master,
            spark_conf=parse_kv(spark_conf, "--spark-conf"),
            engine=engine,
            local_max_bytes=local_max_bytes,
        )
        for n in done["notes"]:
            settings.output.note(n)
        report = dict(
            done["after"],
            executed={k: done[k] for k in ("runs", "spark_applications", "registered", "cleaned", "only_bases")},
        )
    settings.output.emit(report, _text, performed=True)
    left = (report.get("executed") or {}).get("only_bases") or []
    if report["ready"] and left:
        raise ValidationFailed(
            f"compacted, but {plural(len(left), 'partition')} still {'holds' if len(left) == 1 else 'hold'} more than one base: "
            + ", ".join(f"{x['table']}/{x['partition'] or '(table)'}" for x in left[:5])
        )
    if not report["ready"]:
        s = report["summary"]
        raise ValidationFailed(
            f"not ready for the Hive 3 upgrade: {plural(s['compact'], 'partition')} to compact, "
            f"{s['blocked']} blocked, {s['error']} unreadable, {plural(s['errors'], 'error finding')}"
        )


def _text(r: dict) -> str:
    from acidctl.cli.output import Col, table, wrap

    lines = [
        wrap(f"acidctl upgrade-check  {r['metastore']}  (databases {r['db']!r}, {r['checked_at']})"),
        wrap(f"txns: {r['txns']}   compactor: {r['compactor_txns']}"),
    ]
    if "executed" in r:
        ex = r["executed"]
        for run in ex["runs"]:
            ids = [str(i) for i in run.get("compaction_ids") or [] if i is not None]
            lines.append(
                wrap(
                    f"compacted {run['table']}: {', '.join(p or '(table)' for p in run['compacted']) or 'nothing'}"
                    f" ({run['rows_in']} rows in, {run['rows_out']} out)"
                    + (f"; registered as compaction {', '.join(ids)}" if ids else "")
                )
            )
        for c in ex.get("cleaned") or []:
            done = [x for x in c["compactions"] if x.get("state") == "succeeded"]
            lines.append(
                wrap(
                    f"cleaned {c['table']}: {plural(len(c['deleted']), 'obsolete path')} deleted"
                    + (f", {plural(len(done), 'compaction')} succeeded" if done else "")
                )
            )
        for x in ex.get("only_bases") or []:
            lines.append(
                wrap(
                    f"NOT ONLY A BASE: {x['table']}/{x['partition'] or '(table)'}: "
                    f"{', '.join(x['current'] + x['leftover'])}"
                )
            )
    rows = [
        [
            p["table"],
            p["partition"] or "",
            p["mode"],
            p["status"].upper(),
            "yes" if p["preupgrade_tool"] else "",
            ", ".join(p["current"]) or "-",
            "; ".join(p["reasons"]),
        ]
        for p in r["partitions"]
    ]
    lines += [
        "",
        table(
            rows,
            [
                Col("Table"),
                Col("Partition"),
                Col("Mode"),
                Col("Status"),
                Col("PreUpgradeTool", "preupgrade_tool", wide=True),
                Col("Current", text=True, wide=True),  # names separated by ", "
                Col("Why", "reasons", text=True),
            ],
            empty="No ACID tables.",
        ),
    ]
    finds = [
        [f["severity"].upper(), f["check"], t["table"], "", f["message"]] for t in r["tables"] for f in t["findings"]
    ]
    finds += [
        [f["severity"].upper(), f["check"], p["table"], p["partition"] or "", f["message"]]
        for p in r["partitions"]
        for f in p["findings"]
    ]
    if finds:
        cols = [Col("Severity"), Col("Check"), Col("Table"), Col("Partition"), Col("Message", text=True)]
        lines += ["", table(finds, cols)]
    if r["commands"]:
        head = "-- run on the Hive 2 cluster (or: acidctl upgrade-check --execute)"
        if r.get("dry_run"):
            head = f"-- dry run: --execute would run {plural(len(r['commands']), 'compaction')}; nothing is written"
        lines += ["", head] + r["commands"]
    s = r["summary"]
    lines.append("")
    lines.append(
        wrap(
            ("READY for the Hive 3 upgrade: " if r["ready"] else "NOT READY: ")
            + f"{plural(s['tables'], 'table')}, {plural(s['partitions'], 'partition')}: {s['ready']} ready, "
            f"{s['compact']} to compact, {s['blocked']} blocked, {s['error']} unreadable; "
            f"{plural(s['errors'], 'error finding')}"
        )
    )
    return "\n".join(lines)
