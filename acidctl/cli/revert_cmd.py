"""``acidctl revert TABLE[/PART]``: undo a compaction acidctl published (its outputs removed, the
inputs read again), as long as nothing it made obsolete has been cleaned. Dry run unless
``--execute`` (``--dry-run`` wins over it).

JSON document: ``path``, ``executed``, ``items`` (partition, path, type, outputs, inputs,
published_at (epoch s), revertible, reason, leftovers, [metastore]), [``table``], ``notes``.

Given as DB.TABLE, a compaction registered in the metastore (its ``ready for cleaning``
request) moves to history in state ``a`` ("attempted" / "did not initiate": no failure threshold
counts it; message "reverted by acidctl revert: ...") before its output is removed:
left ``ready for cleaning``, Hive's Cleaner would mark it cleaned and forget the aborted writes
the revert brought back. Refused under ``--read-only``.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from acidctl.cli.targets import TABLE_RULE

from acidctl.cli import options

HELP = (
    "Undo a compaction acidctl published: remove its output while every input is still on "
    "disk (refused once anything it made obsolete was cleaned). Dry run unless --execute." + " " + TABLE_RULE
)


def register(app: typer.Typer) -> None:
    app.command("revert", help=HELP)(revert_command)


def revert_command(
    ctx: typer.Context,
    table: Annotated[
        str,
        options.table_argument(
            "Table or partition directory, or DB.TABLE[/k=v] looked up in the metastore." + " " + TABLE_RULE
        ),
    ],
    output_dir: Annotated[
        Optional[str],
        typer.Option(
            "--dir",
            metavar="NAME",
            help="The compaction output directory to remove, e.g. base_0000002 (default: the newest compaction of each partition).",
        ),
    ] = None,
    partition: options.Partitions = None,
    execute: Annotated[bool, options.execute_option("Remove the output (default: only print the plan).")] = False,
    dry_run: options.DryRun = False,
    break_lock: Annotated[
        bool, typer.Option("--break-lock", help="Remove an existing (stale) compaction lock first.")
    ] = False,
):
    from acidctl.compact.revert import revert, revert_registered
    from acidctl.target import check_table_dir, names_table

    settings = ctx.obj
    notes: list[str] = []
    full_name = None
    if names_table(settings, table):
        from acidctl.cli.compact_cmd import resolve

        target, parts = resolve(settings, table, assume_committed=True)
        tfs = target.tfs
        if parts and partition:
            from acidctl.errors import UsageError

            raise UsageError("give the partition either in DB.TABLE/SPEC or with --partition, not both")
        partition = partition or parts
        full_name = target.table.full_name if target.table is not None else None
        report = revert_registered(
            tfs,
            target.metastore,
            db=target.table.db,
            table=target.table.table,
            partition=partition,
            output=output_dir,
            execute=execute and not dry_run,
            break_lock=break_lock,
        )
    else:
        tfs = settings.table_fs(table)
        check_table_dir(tfs)
        report = revert(
            tfs, partition=partition, output=output_dir, execute=execute and not dry_run, break_lock=break_lock
        )
        notes.append(
            "given as a path: a compaction registered in a metastore is not looked up; revert it as "
            "DB.TABLE so its ready-for-cleaning request is recorded as reverted"
        )
    report["notes"] = notes
    if full_name:
        report["table"] = full_name
    settings.output.emit(report, render_text, performed=True)


def render_text(report: dict) -> str:
    from acidctl.cli.output import Col, table, wrap

    head = "acidctl revert" + ("" if report["executed"] else " (dry run; --execute to remove the output)")
    lines = [wrap(f"{head} {report['path']}")]
    lines += [wrap(f"note: {n}") for n in report["notes"]]
    rows = [
        [
            i["partition"] or "(table)",
            i["type"],
            ", ".join(i["outputs"]),
            len(i["inputs"]),
            ("reverted" if report["executed"] else "revertible") if i["revertible"] else "refused",
            i["reason"]
            + (f"; compaction {i['metastore']['cq_id']}: {i['metastore']['action']}" if i.get("metastore") else ""),
        ]
        for i in report["items"]
    ]
    lines.append(
        table(
            rows,
            [
                Col("Partition"),
                Col("Type"),
                Col("Output", "outputs", text=True),  # names separated by ", ": wraps between names only
                Col("Inputs", wide=True),
                Col("State", "revertible"),
                Col("Reason", text=True),
            ],
            empty="Nothing to revert.",
        )
    )
    return "\n".join(lines)
