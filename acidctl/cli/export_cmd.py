"""``acidctl export TABLE DEST``: the merged snapshot as plain Parquet/ORC files.

``--to`` names the format written, ``--format`` the table's own files (insert-only tables given
as a path), as in every command; ``--input-format`` is the deprecated spelling of ``--format``.

JSON document: ``source``, ``dest``, ``format`` (the --to format), ``compression``, ``write_ids``, ``engine``,
``with_row_id``, ``tasks``, ``publish`` (atomic | non-atomic), ``partitions``, ``files``, ``rows``,
``bytes``, ``bytes_in``, ``seconds``, [``spark_start_seconds``], ``engine_choice``, ``outputs``
(partition, bucket, file, rows, bytes), [``table``]; ``--dry-run``: ``dry_run`` true, the planned
``outputs`` with rows and bytes null.
"""

from __future__ import annotations

from typing import Annotated, Optional

import click
import typer

from acidctl.cli.targets import TABLE_RULE

from acidctl.cli import options

HELP = (
    "Write a table's current rows (as a Hive reader sees them) as plain Parquet or ORC files that any "
    "engine reads: one file per partition and bucket, Hive-style k=v partition directories. DEST must not "
    "exist; published with one rename." + " " + TABLE_RULE
)


def register(app: typer.Typer) -> None:
    app.command("export", help=HELP)(export_command)


# export_command's options (declared here so that the command reads as its grammar)
_Table = options.SnapshotTable
_Dest = Annotated[
    str,
    typer.Argument(
        metavar="DEST", help="Directory to create (any filesystem acidctl reads); must not exist or be empty."
    ),
]
_To = Annotated[
    Optional[str],
    typer.Option(
        "--to",
        metavar="parquet|orc",
        click_type=click.Choice(["parquet", "orc"], case_sensitive=False),
        help="Format of the files written (default parquet).",
    ),
]
_Compression = Annotated[
    Optional[str],
    typer.Option(
        "--compression",
        metavar="CODEC",
        help="Codec (default: snappy for Parquet, zlib for ORC — readable by every Hive).",
    ),
]
_AsOf = Annotated[
    Optional[int],
    typer.Option("--as-of", metavar="WRITEID", help="Export the snapshot as it was after this write id."),
]
_Partition = Annotated[
    Optional[list[str]],
    options.partition_option("Only this partition (repeatable; a prefix of nested keys selects all below)."),
]
_WithRowId = Annotated[
    bool,
    typer.Option("--with-row-id", help="Add Hive's row__id struct (writeid, bucketid, rowid) as the first column."),
]
_InputFormat = Annotated[
    Optional[str], options.deprecated_option("--input-format", replaced_by="--format (the table's own files)")
]
_DryRun = Annotated[
    bool,
    options.dry_run_option(
        "Check DEST and the snapshot and print the files that would be written (partition, bucket, name) and the engine; write nothing."
    ),
]


def export_command(
    ctx: typer.Context,
    table: _Table,
    dest: _Dest,
    to: _To = None,
    compression: _Compression = None,
    as_of: _AsOf = None,
    partition: _Partition = None,
    with_row_id: _WithRowId = False,
    engine: options.Engine = options.ENGINE_DEFAULT,
    local_max_bytes: options.LocalMaxBytes = None,
    master: options.Master = "local[*]",
    spark_conf: options.SparkConf = None,
    write_ids: options.WriteIds = None,
    assume_committed: options.AssumeCommitted = False,
    txns: options.Txns = None,
    hive_version: options.HiveVersion = None,
    file_format: Annotated[Optional[str], options.mm_format_option()] = None,
    input_format: _InputFormat = None,
    mm_allow_originals: options.MMAllowOriginals = False,
    dry_run: _DryRun = False,
):
    from acidctl.export import ExportOptions, export_table
    from acidctl.cli.targets import resolve, snapshot_as_of

    settings = ctx.obj
    from acidctl.cli.progress import spark_start_progress

    spark_start_progress(settings)  # a status line while a Spark session starts (terminal only)
    if input_format is not None:
        options.deprecated(settings, "--input-format", "--format")
        if file_format is not None and file_format != input_format:
            from acidctl.errors import UsageError

            raise UsageError("give --format (the table's files) once; --input-format is its old name")
        file_format = input_format
    elif to is None and file_format is not None and file_format.lower() in ("parquet", "orc"):
        # before 0.2 export's --format was the output format (now --to): say so once
        settings.output.note(
            f"acidctl: warning: --format {file_format} names the table's own files (an insert-only table); "
            "the format written is --to (default parquet)"
        )
    target = resolve(
        settings,
        table,
        warn_assumptions=True,
        write_ids=write_ids,
        assume_committed=assume_committed,
        txns=txns,
        hive_version=hive_version,
    )
    snapshot = snapshot_as_of(target, as_of)
    from acidctl.mm.context import mm_context  # insert-only tables (issue #12)

    mm = mm_context(target, fmt=file_format, allow_originals=mm_allow_originals)
    info = target.table
    columns = [c for c, _ in info.columns] if info is not None and getattr(info, "columns", None) else None
    opts = ExportOptions(
        format=(to or "parquet").lower(),
        compression=compression,
        with_row_id=with_row_id,
        partitions=list(partition) if partition else None,
        engine=engine.lower(),
        local_max_bytes=local_max_bytes,
        master=master,
        spark_conf=options.parse_kv(spark_conf, "--spark-conf"),
        column_names=columns,
        insert_only=mm,
    )
    report = export_table(
        target.tfs,
        snapshot,
        dest,
        opts,
        dest_options=settings.fs_options,
        txns=target.txns,
        hive_version=target.hive_version,
        partition_prefix=getattr(info, "partition", None),
        dry_run=dry_run,
    )
    if info is not None:
        report["table"] = info.full_name
    settings.output.emit(report, render_dry_run if dry_run else render_text, performed=not dry_run)


def render_dry_run(r: dict) -> str:
    from acidctl.cli.output import Col, table, wrap
    from acidctl.units import plural

    lines = [
        wrap(
            f"acidctl export --dry-run {r['source']} -> {r['dest']}  ({r['format']}, {r['compression']}, "
            f"engine {r['engine']}, publish {r['publish']}; nothing is written)"
        ),
        wrap(f"snapshot: {r['write_ids']}"),
    ]
    rows = [[o["partition"] or "(table)", o["bucket"], o["file"]] for o in r["outputs"]]
    if rows:
        lines.append(table(rows, [Col("Partition"), Col("Bucket"), Col("File")]))
    lines.append(f"would write {plural(r['files'], 'file')} from {plural(r['partitions'], 'partition')}")
    return "\n".join(lines)


def render_text(r: dict) -> str:
    from acidctl.cli.output import Col, table, wrap
    from acidctl.units import duration, plural, size

    lines = [
        wrap(
            f"acidctl export {r['source']} -> {r['dest']}  ({r['format']}, {r['compression']}, "
            f"engine {r['engine']}, publish {r['publish']})"
        ),
        f"snapshot: {r['write_ids']}",
    ]
    rows = [[o["partition"] or "(table)", o["bucket"], o["file"], o["rows"], size(o["bytes"])] for o in r["outputs"]]
    cols = [Col("Partition"), Col("Bucket"), Col("File"), Col("Rows"), Col("Size", "bytes")]
    lines.append(table(rows, cols, empty="No files written."))
    lines.append(
        wrap(
            f"exported {plural(r['rows'], 'row')} in {plural(r['files'], 'file')} from "
            f"{plural(r['partitions'], 'partition')}, {size(r['bytes'])}, {duration(r['seconds'])}"
        )
    )
    return "\n".join(lines)
