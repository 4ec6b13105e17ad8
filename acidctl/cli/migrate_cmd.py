"""``acidctl migrate TABLE --to iceberg|delta --target ...``: the table's snapshot into an Iceberg
or Delta table, and on every later run what changed since (acidctl/migrate/run.py).

JSON document: ``source``, ``target``, ``to``, ``write_ids``, ``recorded_write_ids``, ``mode``
(initial | catch-up), ``row_id``, ``dry_run``, ``up_to_date``, [``new_write_ids``],
``partitions`` (partition, how, delete_rows, rows_added, files), ``committed`` (version,
previous, files_added, files_removed, rows_added, rows_removed; null when nothing was
committed), ``verified`` (partitions, rows), ``seconds``. With ``--add-files``: ``add_files``
true and per partition ``register`` / ``unregister`` (the data files' paths added to / removed
from the Iceberg table; how ``register``, or ``drop`` for a partition Hive no longer has).
"""

from __future__ import annotations

from typing import Annotated, Optional

import click
import typer

from acidctl.cli import options
from acidctl.cli.targets import TABLE_RULE

HELP = (
    "Copy a table's current rows (as a Hive reader sees them, with ROW__IDs) into an Apache Iceberg "
    "table (pyiceberg catalog) or a Delta table, in one commit; run it again to apply what changed "
    "since (by write id, one commit), verified per partition. " + TABLE_RULE
)


def register(app: typer.Typer) -> None:
    app.command("migrate", help=HELP)(migrate_command)


_Table = options.SnapshotTable
_To = Annotated[
    str,
    typer.Option(
        "--to",
        metavar="iceberg|delta",
        click_type=click.Choice(["iceberg", "delta"], case_sensitive=False),
        help="Target table format.",
    ),
]
_Target = Annotated[
    str,
    typer.Option(
        "--target",
        metavar="NAMESPACE.NAME|PATH",
        help="Iceberg: the table in the catalog (created when missing); Delta: the table's directory.",
    ),
]
_Catalog = Annotated[
    Optional[str],
    typer.Option(
        "--catalog",
        metavar="URI",
        help="Iceberg catalog (required with --to iceberg): an SQL catalog's SQLAlchemy URL (e.g. "
        "sqlite:////abs/catalog.db), thrift://host:9083 (Hive metastore) or http(s):// (REST).",
    ),
]
_CatalogName = Annotated[
    str,
    typer.Option(
        "--catalog-name",
        metavar="NAME",
        help="Name the catalog keys its tables by; Spark's/Trino's Iceberg catalog must use the same name.",
    ),
]
_CatalogProperty = Annotated[
    Optional[list[str]],
    typer.Option("--catalog-property", metavar="KEY=VALUE", help="pyiceberg catalog property (repeatable)."),
]
_TableProperty = Annotated[
    Optional[list[str]],
    typer.Option(
        "--table-property",
        metavar="KEY=VALUE",
        help="Iceberg table property of a table migrate creates (repeatable; defaults "
        "write.parquet.compression-codec=snappy, write.parquet.dict-size-bytes=262144).",
    ),
]
_Warehouse = Annotated[
    Optional[str],
    typer.Option(
        "--warehouse",
        metavar="DIR",
        help="Where an SQL catalog's new tables put their files (required with an SQL --catalog; a path or URL).",
    ),
]
_NoRowId = Annotated[
    bool,
    typer.Option(
        "--no-row-id",
        help="No row__id column (catch-up then rewrites every changed partition whole).",
    ),
]
_AddFiles = Annotated[
    bool,
    typer.Option(
        "--add-files",
        help="Insert-only Parquet tables, --to iceberg: register the Parquet files a Hive reader sees "
        "as the Iceberg table's data files, without copying (refused where Iceberg cannot read them "
        "as they are, e.g. INT96 timestamps); catch-up registers new files and removes replaced ones.",
    ),
]
_TimestampPrecision = Annotated[
    Optional[str],
    typer.Option(
        "--timestamp-precision",
        metavar="us",
        help="Truncate timestamps to microseconds (Iceberg/Delta hold no nanoseconds); without it a "
        "timestamp with a sub-microsecond part refuses naming its column.",
    ),
]
_DeltaTimestamp = Annotated[
    Optional[str],
    typer.Option(
        "--delta-timestamp",
        metavar="ntz|utc",
        click_type=click.Choice(["ntz", "utc"], case_sensitive=False),
        help="Delta: Hive timestamps as timestamp_ntz (default; readers need Delta reader 3 / writer 7) "
        "or as timestamp holding the value as a UTC instant (every reader).",
    ),
]
_AsOf = Annotated[
    Optional[int],
    typer.Option("--as-of", metavar="WRITEID", help="Migrate the snapshot as it was after this write id."),
]
_DryRun = Annotated[
    bool,
    options.dry_run_option(
        "Print the plan (partitions, how each changes, rows to delete, files to read) and write nothing."
    ),
]

_Engine = Annotated[
    str,
    options.engine_option(
        "Where the data files are written. auto (default) and local: in this process, streamed per "
        "partition and bucket with bounded memory; spark: whole partitions' files (first load, "
        "replaced partitions) written in Spark tasks (--master), committed once from this process "
        "(Delta: a catch-up with row-level changes is one MERGE in this process)."
    ),
]


def migrate_command(
    ctx: typer.Context,
    table: _Table,
    to: _To,
    target: _Target,
    catalog: _Catalog = None,
    catalog_name: _CatalogName = "acidctl",
    catalog_property: _CatalogProperty = None,
    warehouse: _Warehouse = None,
    table_property: _TableProperty = None,
    no_row_id: _NoRowId = False,
    add_files: _AddFiles = False,
    timestamp_precision: _TimestampPrecision = None,
    delta_timestamp: _DeltaTimestamp = None,
    as_of: _AsOf = None,
    engine: _Engine = options.ENGINE_DEFAULT,
    master: options.Master = "local[*]",
    spark_conf: options.SparkConf = None,
    write_ids: options.WriteIds = None,
    assume_committed: options.AssumeCommitted = False,
    txns: options.Txns = None,
    hive_version: options.HiveVersion = None,
    file_format: Annotated[Optional[str], options.mm_format_option()] = None,
    mm_allow_originals: options.MMAllowOriginals = False,
    dry_run: _DryRun = False,
):
    from acidctl.cli.targets import resolve, snapshot_as_of
    from acidctl.keyvalue import parse_kv
    from acidctl.migrate.run import MigrateOptions, check_engine, make_backend, migrate
    from acidctl.migrate.source import open_source
    from acidctl.migrate.types import check_precision

    settings = ctx.obj
    if not settings.verbose:
        import os

        # delta-rs logs through env_logger (read when deltalake is imported), WARN by default: the
        # AWS SDK's region/IMDS probing printed three long "[... WARN aws_config::imds::region]"
        # lines above the one-line error; -v or an exported RUST_LOG shows them
        os.environ.setdefault("RUST_LOG", "error")
    precision = check_precision(timestamp_precision)
    engine = check_engine(engine)
    if engine == "spark":
        from acidctl.cli.progress import spark_start_progress

        spark_start_progress(settings)  # a status line while a Spark session starts (terminal only)
    backend = make_backend(
        to.lower(),
        target,
        catalog=catalog,
        catalog_name=catalog_name,
        catalog_properties=parse_kv(catalog_property, "--catalog-property"),
        warehouse=warehouse,
        fs_options=settings.fs_options,
        table_properties=parse_kv(table_property, "--table-property"),
        delta_timestamp=delta_timestamp,
        dry_run=dry_run,
    )
    resolved = resolve(
        settings,
        table,
        warn_assumptions=True,
        write_ids=write_ids,
        assume_committed=assume_committed,
        txns=txns,
        hive_version=hive_version,
    )
    resolved.write_ids = snapshot_as_of(resolved, as_of)
    src = open_source(resolved, file_format=file_format, allow_originals=mm_allow_originals)
    report = migrate(
        src,
        backend,
        MigrateOptions(
            row_id=not no_row_id,
            timestamp_precision=precision,
            dry_run=dry_run,
            engine=engine,
            master=master,
            spark_conf=parse_kv(spark_conf, "--spark-conf"),
            add_files=add_files,
        ),
        target_display=getattr(backend, "display", target),
        to=to.lower(),
    )
    settings.output.emit(report, render_text, performed=not dry_run and bool(report.get("committed")))


def render_text(r: dict) -> str:
    from acidctl.cli.output import Col, table, wrap
    from acidctl.units import duration, plural

    head = (
        f"acidctl migrate{' --dry-run' if r['dry_run'] else ''} {r['source']} -> {r['to']} {r['target']}  ({r['mode']})"
    )
    lines = [wrap(head), wrap(f"snapshot: {r['write_ids']}")]
    if r.get("recorded_write_ids"):
        lines.append(wrap(f"recorded: {r['recorded_write_ids']}"))
    if r.get("up_to_date"):
        lines.append(wrap("up to date: no write since the recorded snapshot changed the table; nothing committed"))
        return "\n".join(lines)
    if r.get("new_write_ids"):
        lines.append(wrap(f"new write ids: {r['new_write_ids']}"))
    rows = [
        [
            p["partition"] or "(table)",
            p["how"],
            "" if p["rows_added"] is None else p["rows_added"],
            "" if p["delete_rows"] is None else p["delete_rows"],
            "" if p["files"] is None else p["files"],
        ]
        for p in r["partitions"]
    ]
    cols = [
        Col("Partition"),
        Col("How"),
        Col("Rows added", "rows_added"),
        Col("Deletes", "delete_rows"),
        Col("Files read", "files"),
    ]
    lines.append(table(rows, cols, empty="No partition changes."))
    c = r.get("committed")
    if r["dry_run"]:
        for p in r["partitions"]:  # --add-files: the files themselves
            lines.extend(f"register {u}" for u in p.get("register", []))
            lines.extend(f"remove   {u}" for u in p.get("unregister", []))
        lines.append(f"would change {plural(len(r['partitions']), 'partition')}; nothing written")
    elif c:
        if r.get("engine"):  # where the data files were written (--engine spark: local when no task ran)
            where = "Spark tasks" if r["engine"] == "spark" else "this process"
            lines.append(f"engine: {r['engine']} (data files written by {where})")
        prev = f" (previous {c['previous']})" if c["previous"] is not None else ""
        lines.append(
            wrap(
                f"committed version {c['version']}{prev}: +{plural(c['rows_added'], 'row')}, "
                f"-{plural(c['rows_removed'], 'row')}, {plural(c['files_added'], 'file')} added, "
                f"{c['files_removed']} removed, {duration(r['seconds'])}"
            )
        )
        v = r.get("verified")
        if v:
            lines.append(
                f"verified: {plural(v['partitions'], 'partition')}, {plural(v['rows'], 'row')} agree (count and digest)"
            )
    return "\n".join(lines)
