"""``acidctl metastore init``: create Hive's metastore schema (as schematool does) in an empty database."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from acidctl.cli import options
from acidctl.metastore.init import DEFAULT_HIVE_VERSION

metastore_app = typer.Typer(
    name="metastore",
    help="Create a Hive metastore schema (3.1.0 or 4.0.0) in an empty database.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def register(app: typer.Typer) -> None:
    app.add_typer(metastore_app, name="metastore")


@metastore_app.command("init")
def init_cmd(
    ctx: typer.Context,
    url: Annotated[
        Optional[str],
        typer.Argument(
            metavar="URL", help="SQLAlchemy URL of an empty database (default: the global --metastore / profile)."
        ),
    ] = None,
    hive_version: options.SchemaHiveVersion = DEFAULT_HIVE_VERSION,  # the same default as `demo`
    warehouse: Annotated[
        Optional[str],
        typer.Option(
            "--warehouse",
            metavar="URI",
            help="Location of the default database (recorded, not created). Default: a warehouse directory beside a SQLite metastore file; file:/tmp/acidctl-warehouse for a database server.",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        options.dry_run_option(
            "Check that the database is reachable and has no metastore table, and list the tables that would be created; create nothing (not even a new SQLite file)."
        ),
    ] = False,
):
    """Create what Hive's schematool -initSchema creates for 3.1.0 / 4.0.0 (PostgreSQL,
    MySQL/MariaDB; SQLite hand-translated): the transaction tables and the metadata tables
    acidctl reads, with Hive's columns, keys, seed rows and VERSION row, plus the default
    database.

    Refuses (exit 6) a database that already has any of them.
    """
    from acidctl.metastore.connection import resolve_url
    from acidctl.metastore.init import init_metastore

    target = url or resolve_url(ctx.obj.metastore_url, profile=ctx.obj.profile)
    res = init_metastore(target, hive_version=hive_version, warehouse=warehouse, dry_run=dry_run)

    def text(r) -> str:
        from acidctl.cli.output import wrap

        if r.dry_run:
            return wrap(
                f"would create a Hive {r.schema_version} metastore ({len(r.tables)} tables) in {r.url} "
                f"(dry run; nothing is written): {', '.join(r.tables)}"
            )
        return wrap(
            f"created a Hive {r.schema_version} metastore ({len(r.tables)} tables) in {r.url}; "
            f"database default at {r.warehouse} (--warehouse)"
        )

    ctx.obj.output.emit(res.to_dict(), lambda _d: text(res), performed=not dry_run)
