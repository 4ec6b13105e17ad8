"""``acidctl abort compactions ID...``: Hive 4's ``ABORT COMPACTIONS`` on the metastore tables
(operations.md §6.2), offered for Hive 3.1 too. Dry run unless ``--execute``.

Only ``initiated`` requests can be aborted. Hive 4: each moves to the history as ``aborted``
(``x``, error message "Compaction Aborted by Abort Comapction request." as Hive spells it);
Hive 3 has no aborted state, so its ``initiated`` row is deleted without a history row.

JSON document: ``hive_version``, ``executed``, ``compactions`` (compactionid, status
[Success|Error|Eligible], message, database, table, partition, state). Exit 3 when every
failing id is unknown, 6 when an id is in another state, else 0.
"""

from __future__ import annotations

from typing import Annotated

import typer

from acidctl.cli import options
from acidctl.cli.abort_cmd import abort_app
from acidctl.units import plural


@abort_app.command(
    "compactions",
    help="Abort initiated compaction requests (Hive 4 ABORT COMPACTIONS; on Hive 3 the "
    "queue row is deleted). Dry run unless --execute (--dry-run wins).",
)
def abort_compactions_command(
    ctx: typer.Context,
    ids: Annotated[list[int], typer.Argument(metavar="ID...", help="Compaction ids (SHOW COMPACTIONS' CompactionId).")],
    execute: Annotated[bool, options.execute_option("Abort them (default: only show what would happen).")] = False,
    dry_run: options.DryRun = False,
):
    from acidctl.errors import NotFoundError, RefusedError
    from acidctl.metastore.admin import abort_compactions
    from acidctl.metastore.connection import resolve_url
    from acidctl.metastore.hive2 import connect_any

    s = ctx.obj
    ms = connect_any(resolve_url(s.metastore_url, profile=s.profile))
    if execute and dry_run:  # it refuses what the real run would refuse
        from acidctl.metastore import steps

        steps.check_writable(ms, what="abort compactions")
    report = abort_compactions(ms, ids, execute=execute and not dry_run)
    s.output.emit(report, render_text, performed=True)
    errors = [c for c in report["compactions"] if c["status"] == "Error"]
    if errors:
        what = f"{len(errors)} of {plural(len(report['compactions']), 'compaction')} not aborted"
        if all(c["state"] is None for c in errors):
            raise NotFoundError(f"{what}: no such compaction id")
        raise RefusedError(f"{what} (only initiated requests can be aborted)")


def render_text(report: dict) -> str:
    from acidctl.cli.output import Col, table

    head = "acidctl abort compactions" + ("" if report["executed"] else " (dry run; --execute to abort)")
    rows = [[c["compactionid"], c["status"], c["message"]] for c in report["compactions"]]
    return (
        head
        + "\n"
        + table(
            rows,
            [Col("Compaction ID", "compactionid"), Col("Status"), Col("Message", text=True)],
            empty="No compactions given.",
        )
    )
