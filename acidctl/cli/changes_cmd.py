"""``acidctl changes TABLE --from-write-id A [--to-write-id B]``: the change events between two
snapshots (:mod:`acidctl.acid.changes`).

Default output: JSON lines on stdout, one object per event, ``{"_change_type": ...,
"_commit_version": WRITEID, "row__id": {...}, <partition columns>, <columns>}`` (values as
``dump --merged`` renders them). ``--to parquet DEST``: Parquet files published as ``export``
publishes; the JSON document then has ``source``, ``dest``, ``format``, ``publish``,
``write_ids``, ``from_write_id``, ``to_write_id``, ``rows``, ``changes`` (rows per change type),
[``partition``], ``files``, ``outputs`` (file, rows, bytes). ``source`` names the table as
``migrate`` does (``db.table`` from the metastore, lower case; else the path).
"""

from __future__ import annotations

from typing import Annotated, Optional

import click
import typer

from acidctl.cli import options
from acidctl.cli.targets import TABLE_RULE

HELP = (
    "Print the change events (inserts and deletes, with the deleted rows' values) of the committed write "
    "ids A..B of a snapshot, as JSON lines or Parquet files: write id order, deletes before inserts within "
    "a write id, then partition and ROW__ID. --key pairs an update's delete and insert. Exit 6 names the "
    "lowest write id still derivable when a major compaction folded the events away." + " " + TABLE_RULE
)


def register(app: typer.Typer) -> None:
    app.command("changes", help=HELP)(changes_command)


_Table = options.SnapshotTable
_Dest = Annotated[
    Optional[str],
    typer.Argument(metavar="[DEST]", help="With --to parquet: the directory to create (must not exist or be empty)."),
]
_From = Annotated[
    int,
    typer.Option(
        "--from-write-id", metavar="A", help="The first write id whose changes are printed (≥ 1).", show_default=False
    ),
]
_ToWid = Annotated[
    Optional[int],
    typer.Option(
        "--to-write-id",
        metavar="B",
        help="The last write id (default: the snapshot's high-water mark); open and aborted ids in A..B never appear.",
    ),
]
_Key = Annotated[
    Optional[str],
    typer.Option(
        "--key",
        metavar="COL,...",
        help="Within one write id, a delete and an insert with equal values of these columns become "
        "update_preimage / update_postimage (Delta's change data feed names); without it an UPDATE "
        "shows as a delete and an insert.",
    ),
]
_To = Annotated[
    Optional[str],
    typer.Option(
        "--to",
        metavar="parquet",
        click_type=click.Choice(["parquet"], case_sensitive=False),
        help="Write Parquet files into DEST (a new or empty directory) instead of JSON lines on stdout (staged, published with one rename).",
    ),
]
_Partition = Annotated[
    Optional[list[str]],
    options.partition_option("Only this partition (repeatable; a prefix of nested keys selects all below)."),
]


def changes_command(
    ctx: typer.Context,
    table: _Table,
    dest: _Dest = None,
    from_write_id: _From = ...,  # type: ignore[assignment]
    to_write_id: _ToWid = None,
    key: _Key = None,
    to: _To = None,
    partition: _Partition = None,
    write_ids: options.WriteIds = None,
    assume_committed: options.AssumeCommitted = False,
    txns: options.Txns = None,
    hive_version: options.HiveVersion = None,
    file_format: Annotated[Optional[str], options.mm_format_option()] = None,
    dry_run: Annotated[
        bool,
        options.dry_run_option(
            "With --to parquet: read the changes and print the files that would be written (rows "
            "per file), write nothing; exit as the real run would."
        ),
    ] = False,
):
    from acidctl.acid.changes import change_rows, render_lines, wanted_range, write_parquet
    from acidctl.cli.targets import resolve
    from acidctl.errors import UsageError
    from acidctl.merged import _path_partition
    from acidctl.mm.context import mm_context

    settings = ctx.obj
    if (to is None) != (dest is None):
        raise UsageError("--to parquet and DEST go together (without both: JSON lines on stdout)")
    if to is None:
        settings.output.rows_only("changes", hint="--to parquet DEST writes Parquet files instead")
    target = resolve(
        settings,
        table,
        warn_assumptions=True,
        write_ids=write_ids,
        assume_committed=assume_committed,
        txns=txns,
        hive_version=hive_version,
    )
    snapshot = target.write_ids
    wanted = wanted_range(snapshot, from_write_id, to_write_id)
    mm = mm_context(target, fmt=file_format)
    info = target.table
    prefix = getattr(info, "partition", None) or _path_partition(target.tfs)
    keys = [k for k in key.split(",")] if key is not None else None
    pkeys = [k for k, _ in (getattr(info, "partition_keys", None) or [])] or None
    rows = change_rows(
        target.tfs,
        snapshot,
        wanted,
        txns=target.txns,
        hive_version=target.hive_version,
        partitions=list(partition) if partition else None,
        partition_prefix=prefix,
        mm=mm,
        key=keys,
        partition_keys=pkeys,
    )
    if to is None:
        for chunk in render_lines(rows):
            settings.output.write_bytes(chunk)
        return
    written = write_parquet(rows, dest, dest_options=settings.fs_options, dry_run=dry_run)  # type: ignore[arg-type]
    report = {
        "source": target.source_name,  # as migrate names it: db.table, or the path
        "write_ids": str(snapshot),
        "from_write_id": wanted.lo,
        "to_write_id": wanted.hi,
        "rows": rows.rows,
        "changes": rows.counts,
    }
    if getattr(info, "partition", None):  # DB.TABLE/PART: only that partition's changes
        report["partition"] = info.partition
    report.update(written)
    settings.output.emit(report, render_text, performed=not dry_run)


def render_text(r: dict) -> str:
    from acidctl.cli.output import Col, table, wrap
    from acidctl.units import plural, size

    dry = r.get("dry_run")
    lines = [
        wrap(
            f"acidctl changes{' --dry-run' if dry else ''} {r['source']}"
            + (f"/{r['partition']}" if r.get("partition") else "")
            + f" -> {r['dest']}  (write ids "
            f"{r['from_write_id']}..{r['to_write_id']}, publish {r['publish']}{'; nothing is written' if dry else ''})"
        ),
        wrap(f"snapshot: {r['write_ids']}"),
    ]
    rows = [[o["file"], o["rows"], "" if o["bytes"] is None else size(o["bytes"])] for o in r["outputs"]]
    lines.append(table(rows, [Col("File"), Col("Rows"), Col("Size", "bytes")], empty="No files written."))
    counts = ", ".join(f"{k} {n}" for k, n in r["changes"].items() if n)  # by change type: insert 3
    lines.append(
        wrap(
            f"{'would write' if dry else 'wrote'} {plural(r['rows'], 'change row')} in {plural(r['files'], 'file')}"
            + (f" ({counts})" if counts else "")
        )
    )
    return "\n".join(lines)
