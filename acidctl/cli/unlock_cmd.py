"""``acidctl unlock LOCKID``: Hive's ``unlock(lockid)`` on ``HIVE_LOCKS`` (operations.md §6.3).
Dry run unless ``--execute`` (it deletes rows: acidctl's preview rule); ``--dry-run`` wins.

Deletes exactly the rows Hive deletes: those of the lock that belong to no txn, or are still
waiting. A lock held by a txn is refused (exit 6), as Hive refuses it ("Unlocking locks
associated with transaction not permitted"): it goes when its txn commits or aborts. An unknown
lock id is not an error (Hive's unlock is idempotent); the result says "no such lock".

JSON document: ``lock_id``, ``executed``, ``status`` [unlocked|would unlock|no such lock],
``rows_deleted``, ``locks`` (lockid, txnid, database, table, partition, lock_state, lock_type,
user, host, deleted).
"""

from __future__ import annotations

from typing import Annotated

import typer

from acidctl.cli import options
from acidctl.units import plural

HELP = (
    "Release a lock that belongs to no transaction (Hive's unlock); locks of a transaction are "
    "refused. Dry run unless --execute (--dry-run wins)."
)


def register(app: typer.Typer) -> None:
    app.command("unlock", help=HELP)(unlock_command)


def unlock_command(
    ctx: typer.Context,
    lock_id: Annotated[
        str,
        typer.Argument(
            metavar="LOCKID",
            help="The lock id as SHOW LOCKS prints it (1, or 1.1: the lock with every component, as Hive's unlock releases it).",
        ),
    ],
    execute: Annotated[
        bool, options.execute_option("Delete the lock rows (default: only show the rows that would be deleted).")
    ] = False,
    dry_run: options.DryRun = False,
):
    from acidctl.metastore.admin import unlock
    from acidctl.metastore.connection import connect, resolve_url

    s = ctx.obj
    from acidctl.metastore import thrift

    ext_id = parse_lock_id(lock_id)
    url = resolve_url(s.metastore_url, profile=s.profile)
    ms = thrift.connect(url) if thrift.is_thrift(url) else connect(url)  # thrift: Hive's unlock call
    if execute and dry_run:  # it refuses what the real run would refuse
        from acidctl.metastore import steps

        if thrift.is_thrift(ms):
            thrift.check_writable("unlock")
        else:
            steps.check_writable(ms, what="unlock")
    s.output.emit(unlock(ms, ext_id, execute=execute and not dry_run), render_text, performed=True)


def parse_lock_id(text: str) -> int:
    """``1`` or ``1.1`` (SHOW LOCKS' ``extId.intId``) → the external lock id ``1``: Hive's
    unlock(lockid) takes the external id and releases every component of the lock."""
    import re

    from acidctl.errors import UsageError

    m = re.fullmatch(r"\s*(\d+)(?:\.\d+)?\s*", text)
    if not m:
        raise UsageError(f"LOCKID must be a lock id as SHOW LOCKS prints it (1 or 1.1), not {text!r}")
    return int(m.group(1))


def render_text(report: dict) -> str:
    from acidctl.cli.output import Col, table

    head = f"acidctl unlock {report['lock_id']}" + ("" if report["executed"] else " (dry run; --execute to unlock)")
    lines = [head]
    if report["locks"]:
        rows = [
            [
                r["lockid"],
                r["database"],
                r["table"] or "NULL",
                r["partition"] or "NULL",
                r["lock_state"],
                r["lock_type"],
                r["txnid"] or "NULL",
                r["user"],
                r["host"],
                ("deleted" if report["executed"] else "delete") if r["deleted"] else "kept",
            ]
            for r in report["locks"]
        ]
        lines.append(
            table(
                rows,
                [
                    Col("Lock ID", "lockid"),
                    Col("Database"),
                    Col("Table"),
                    Col("Partition"),
                    Col("State", "lock_state"),
                    Col("Type", "lock_type"),
                    Col("Transaction ID", "txnid", wide=True),
                    Col("User", wide=True),
                    Col("Hostname", "host", wide=True),
                    Col("Action", "deleted"),
                ],
            )
        )
    verb = {
        "unlocked": f"unlocked: {plural(report['rows_deleted'], 'row')} deleted",
        "would unlock": f"would delete {plural(report['rows_deleted'], 'row')}",
        "no such lock": f"no lock with id {report['lock_id']}: nothing to unlock",
    }[report["status"]]
    lines.append(verb)
    return "\n".join(lines)
