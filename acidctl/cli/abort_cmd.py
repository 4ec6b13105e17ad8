"""``acidctl abort ...``: Hive 4's ABORT statements, for Hive 3.1 and 4.0 metastores alike.

``abort_app`` is the shared ``abort`` sub-app (``register(app)`` adds it to the CLI): this module
holds ``abort transactions``; ``abort compactions`` is added onto the same ``abort_app`` by its
own module (which must be imported before ``main`` replays the registrations).

``abort transactions`` JSON document: ``dry_run``, ``older_than_ms``, ``transactions`` (the open
txns it aborts / would abort: txn_id, state, started, last_heartbeat, user, host, txn_type,
age_ms), ``not_open`` (listed ids that are not open), ``aborted`` (TXNS rows changed; 0 in a dry
run), ``locks_of_finished_txns`` (``{txn: [lock ids]}`` left behind by listed txns that already
ended: released with ``--execute``, as Hive's ABORT TRANSACTIONS releases them).
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from acidctl.cli import options
from acidctl.units import noun, plural

abort_app = typer.Typer(
    name="abort", help="Abort transactions (and compactions) as Hive's ABORT statements do.", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    app.add_typer(abort_app, name="abort")


def _render(doc: dict) -> str:
    from acidctl.cli.output import Col, table
    from acidctl.metastore.queries import txn_type_name
    from acidctl.units import duration_ms

    rows = [
        [t["txn_id"], t["user"], t["host"], txn_type_name(t["txn_type"]), duration_ms(t["age_ms"])]
        for t in doc["transactions"]
    ]
    cols = [Col("Transaction ID", "txn_id"), Col("User"), Col("Host"), Col("Type", "txn_type"), Col("Age", "age_ms")]
    lines = [table(rows, cols, empty="No open transactions match.")]
    if doc["not_open"]:
        lines.append("not open (nothing to abort): " + ", ".join(str(i) for i in doc["not_open"]))
    left = doc.get("locks_of_finished_txns") or {}
    if left:
        what = ", ".join(f"{noun(len(v), 'lock')} {', '.join(map(str, v))} of txn {k}" for k, v in left.items())
        lines.append(("would release " if doc["dry_run"] else "released ") + what + " (the txn already ended)")
    if doc["dry_run"]:
        lines.append(
            f"dry run: would abort {plural(len(doc['transactions']), 'transaction')}; add --execute to abort them"
        )
    else:
        lines.append(f"aborted {plural(doc['aborted'], 'transaction')}")
    return "\n".join(lines)


@abort_app.command(
    "transactions",
    help="ABORT TRANSACTIONS: open txns become aborted (their locks released, what "
    "they wrote left for the Cleaner). Dry run unless --execute (--dry-run wins).",
)
def abort_transactions(
    ctx: typer.Context,
    txn_ids: Annotated[Optional[list[int]], typer.Argument(metavar="[TXNID]...", help="Transaction ids.")] = None,
    older_than: Annotated[
        Optional[str],
        typer.Option(
            "--older-than",
            metavar="AGE",
            help="Only open txns started more than AGE ago (90s, 15m, 2h, 3d; database clock); without ids: every such txn.",
        ),
    ] = None,
    execute: Annotated[bool, options.execute_option("Abort them (default: show what would be aborted).")] = False,
    dry_run: options.DryRun = False,
):
    from acidctl.errors import UsageError
    from acidctl.metastore import txns
    from acidctl.metastore.connection import connect, resolve_url

    settings = ctx.obj
    if not txn_ids and older_than is None:
        raise UsageError("give transaction ids and/or --older-than AGE")
    age = txns.parse_age(older_than) if older_than is not None else None
    url = resolve_url(settings.metastore_url, profile=settings.profile)
    from acidctl.metastore import thrift

    if thrift.is_thrift(url):  # abort_txns
        if execute:  # also with --dry-run: it refuses what the real run would refuse
            thrift.check_writable("abort transactions")
        doc = thrift.abort_transactions(url, list(txn_ids or ()), older_than_ms=age, execute=execute and not dry_run)
        settings.output.emit(doc, _render, performed=True)
        return
    ms = connect(url)
    if execute:  # also with --dry-run: it refuses what the real run would refuse
        from acidctl.metastore import steps

        steps.check_writable(ms, what="abort transactions")
    execute = execute and not dry_run
    rows, missing = txns.select_txns(ms, txn_ids=txn_ids or None, older_than_ms=age)
    # locks left behind by listed txns that already ended go too, as Hive's ABORT TRANSACTIONS does
    leftover = txns.finished_txn_locks(ms, missing) if missing else {}
    aborted = 0
    if execute and (rows or leftover):
        aborted = txns.abort_txns(ms, [r.txn_id for r in rows] + list(leftover), reason=txns.ABORT_QUERY)
    doc = {
        "dry_run": not execute,
        "older_than_ms": age,
        "transactions": [r.to_dict() for r in rows],
        "not_open": missing,
        "aborted": aborted,
        "locks_of_finished_txns": {str(k): v for k, v in leftover.items()},
    }
    settings.output.emit(doc, _render, performed=True)
