"""``acidctl initiator [--once] [--db GLOB] [--dry-run]``: one Initiator cycle — enqueue what the Initiator
thresholds flag across the warehouse (library: :mod:`acidctl.compact.initiate`).

JSON document: ``checked`` (one record per table/partition: table, partition, action
[enqueued|queued|skipped|not-due|did-not-initiate|would-enqueue|error|revoked], type, id, reasons),
``summary`` (counts by action).
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from acidctl.cli import options
from acidctl.cli.commands import Commands

app = Commands()  # main calls register(app)
register = app.register


def _render(doc: dict) -> str:
    from acidctl.cli.output import Col, table

    rows = [
        [
            r["table"] or "",
            r.get("partition") or "",
            r["action"],
            r.get("type") or "",
            r.get("id") or "",
            "; ".join(r.get("reasons") or []),
        ]
        for r in doc["checked"]
        if r["action"] not in ("not-due",)
    ]
    cols = [
        Col("Table"),
        Col("Partition"),
        Col("Action"),
        Col("Type"),
        Col("ID"),
        Col("Why", "reasons", text=True),
    ]
    lines = [table(rows, cols, empty="Nothing to enqueue.")]
    lines.append(", ".join(f"{n} {k}" for k, n in sorted(doc["summary"].items())) or "no ACID tables found")
    return "\n".join(lines)


@app.command(
    "initiator",
    help="One Initiator cycle: enqueue a compaction for every partition the Initiator thresholds "
    "flag (honouring no_auto_compaction, queued requests and Hive's failed-compaction "
    "threshold).",
)
def initiator_command(
    ctx: typer.Context,
    once: Annotated[
        bool,
        typer.Option(
            "--once", help="Run one cycle and exit (the default and only mode: acidctl runs no Initiator daemon)."
        ),
    ] = False,
    db: Annotated[Optional[str], typer.Option("--db", metavar="GLOB", help="Only databases matching GLOB.")] = None,
    dry_run: Annotated[bool, options.dry_run_option("Show what would be enqueued; write nothing.")] = False,
):
    settings = ctx.obj
    from acidctl.compact.initiate import run_once
    from acidctl.metastore.connection import resolve_url
    from acidctl.metastore.hive2 import connect_any

    ms = connect_any(resolve_url(settings.metastore_url, profile=settings.profile))
    if dry_run:  # the dry run refuses what the real run would refuse (--read-only)
        from acidctl.metastore import steps

        steps.check_writable(ms, what="enqueue compactions")
    checked = run_once(ms, table_fs=settings.table_fs, db_glob=db, dry_run=dry_run)
    summary: dict = {}
    for r in checked:
        summary[r["action"]] = summary.get(r["action"], 0) + 1
    settings.output.emit({"checked": checked, "summary": summary}, _render, performed=not dry_run)
