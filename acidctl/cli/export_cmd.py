"""``acidctl export TABLE DEST``: the merged snapshot as plain Parquet/ORC files.

JSON document: ``source``, ``dest``, ``format``, ``compression``, ``write_ids``, ``engine``,
``with_row_id``, ``tasks``, ``publish`` (atomic | non-atomic), ``partitions``, ``files``, ``rows``,
``bytes``, ``bytes_in``, ``seconds``, [``spark_start_seconds``], ``outputs`` (partition, bucket,
file, rows, bytes), [``table``].
"""

from __future__ import annotations

from typing import Annotated, Optional

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


def export_command(
    ctx: typer.Context,
    table: Annotated[
        str,
        options.table_argument(
            "Table or partition directory, or DB.TABLE[/k=v] looked up in the metastore (its snapshot too)."
            + " "
            + TABLE_RULE
        ),
    ],
    dest: Annotated[
        str,
        typer.Argument(
            metavar="DEST", help="Directory to create (any filesystem acidctl reads); must not exist or be empty."
        ),
    ],
    fmt: Annotated[str, typer.Option("--format", metavar="parquet|orc", help="File format.")] = "parquet",
    compression: Annotated[
        Optional[str],
        typer.Option(
            "--compression",
            metavar="CODEC",
            help="Codec (default: snappy for Parquet, zlib for ORC — readable by every Hive).",
        ),
    ] = None,
    as_of: Annotated[
        Optional[int],
        typer.Option("--as-of", metavar="WRITEID", help="Export the snapshot as it was after this write id."),
    ] = None,
    partition: Annotated[
        Optional[list[str]],
        options.partition_option("Only this partition (repeatable; a prefix of nested keys selects all below)."),
    ] = None,
    with_row_id: Annotated[
        bool,
        typer.Option("--with-row-id", help="Add Hive's row__id struct (writeid, bucketid, rowid) as the first column."),
    ] = False,
    engine: Annotated[
        str,
        options.engine_option(
            "Run in this process, or one Spark task per partition and bucket (big tables).", choices="local|spark"
        ),
    ] = "local",
    master: Annotated[str, options.master_option("Spark master URL with --engine spark.")] = "local[*]",
    spark_conf: Annotated[
        Optional[list[str]], options.spark_conf_option("Spark configuration with --engine spark (repeatable).")
    ] = None,
    write_ids: options.WriteIds = None,
    assume_committed: options.AssumeCommitted = False,
    txns: options.Txns = None,
    hive_version: options.HiveVersion = None,
    input_format: Annotated[
        Optional[str],
        options.mm_input_format_option(
            "The table is insert-only and stores files of this format (a path target; DB.TABLE takes it from the metastore)."
        ),
    ] = None,
    mm_allow_originals: options.MMAllowOriginals = False,
):
    from acidctl.export import ExportOptions, export_table
    from acidctl.cli.targets import resolve, snapshot_as_of

    settings = ctx.obj
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

    mm = mm_context(target, fmt=input_format, allow_originals=mm_allow_originals)
    info = target.table
    columns = [c for c, _ in info.columns] if info is not None and getattr(info, "columns", None) else None
    opts = ExportOptions(
        format=fmt.lower(),
        compression=compression,
        with_row_id=with_row_id,
        partitions=list(partition) if partition else None,
        engine=engine.lower(),
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
    )
    if info is not None:
        report["table"] = info.full_name
    settings.output.emit(report, render_text, performed=True)


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
