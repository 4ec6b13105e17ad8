"""``acidctl demo``: build the local demo warehouse."""

from __future__ import annotations

from typing import Annotated

import typer

from acidctl.cli import options
from acidctl.metastore.init import DEFAULT_HIVE_VERSION


def register(app: typer.Typer) -> None:
    app.command("demo")(demo_command)


def demo_command(
    ctx: typer.Context,
    directory: Annotated[str, typer.Argument(metavar="DIR", help="A new (or empty) directory for the warehouse.")],
    hive_version: options.SchemaHiveVersion = DEFAULT_HIVE_VERSION,  # the same default as `metastore init`
    dry_run: options.DryRun = False,
):
    """Create a local warehouse with Hive ACID tables laid out as Hive writes them (the
    directories, names, markers and ACID metadata are Hive's; the ORC files are written by ORC C++
    through pyarrow, not by ORC Java), and record their transactions, write ids, a lock and
    compaction history in a metastore the demo creates: a new SQLite database DIR/metastore.db,
    or with --metastore URL on the command line an empty database (refused before anything is
    written when it holds metastore tables). An exported ACIDCTL_METASTORE_URL is never written
    into: the demo uses DIR/metastore.db and prints its next commands with an explicit
    --metastore.

    Tables: default.employee (full ACID, unpartitioned), default.sales (full ACID, partitioned,
    bucketed, converted from a non-ACID table, an aborted and an open write) and default.events
    (insert-only). On a local DIR also a Hive 2.3 metastore DIR/hive2/metastore.db with
    default.legacy_employee (ACID v1, as Hive 2.3 writes it) for upgrade-check and the Hive 2
    rules."""
    from click.core import ParameterSource

    from acidctl.demo import build_demo, demo_metastore

    settings = ctx.obj
    tfs = settings.table_fs(directory)
    # --metastore on the command line, or ACIDCTL_METASTORE_URL (typer maps it onto the option)
    given = settings.metastore_url
    flag = given if ctx.find_root().get_parameter_source("metastore") == ParameterSource.COMMANDLINE else None
    url, note = demo_metastore(tfs, tfs.root, flag=flag, exported=None if flag else given)
    if note:
        settings.output.warn(note)
    if dry_run:
        return _dry_run(settings, tfs, hive_version, url, explicit=flag is not None)
    result = build_demo(tfs, tfs.root, metastore_url=flag, hive_version=hive_version)
    settings.output.emit(result, _text, performed=True)


def _dry_run(settings, tfs, hive_version: int, url: str | None, *, explicit: bool) -> None:
    """The checks of the real run (DIR new or empty; a given metastore empty and reachable), no write."""
    from acidctl.demo import _safe, require_new_dir

    require_new_dir(tfs, tfs.root)
    if explicit:
        from acidctl.metastore.init import init_metastore

        init_metastore(url, hive_version=hive_version, dry_run=True)
    doc = {
        "dry_run": True,
        "warehouse": tfs.display(tfs.join(tfs.root, "warehouse")),
        "metastore": _safe(url),
        "hive_version": hive_version,
    }
    from acidctl.cli.output import wrap

    settings.output.emit(
        doc,
        lambda d: wrap(
            f"acidctl demo --dry-run: would create the demo warehouse {d['warehouse']} and record it in "
            f"{d['metastore'] or 'no metastore'} (Hive {d['hive_version']}); nothing is written"
        ),
    )


def _text(d: dict) -> str:
    from acidctl.cli.output import Col, table, wrap

    rows = []
    for t in d["tables"]:
        for w in t["writes"]:
            rows.append((t["table"], w["write_id"], w["state"], w["statement"]))
    lines = [
        f"Demo warehouse: {d['warehouse']}",
        f"Metastore:      {d['metastore']} (Hive {d['hive_version']})",
        "",
        table(rows, [Col("Table"), Col("Write ID", "write_id"), Col("State"), Col("What", "statement", text=True)]),
        "",
    ]
    for t in d["tables"]:
        lines.append(wrap(f"{t['table']}: {t['location']}  (snapshot: --write-ids {t['write_ids']})"))
    if d.get("commands"):
        lines += ["", wrap("Next (an explicit --metastore: it wins over ACIDCTL_METASTORE_URL and profiles):")]
        lines += [f"  {c}" for c in d["commands"]]  # commands to paste: one line each
    if d.get("hive2"):
        h2 = d["hive2"]
        lines += ["", f"Hive 2.3 metastore: {h2['metastore']}"]
        lines += [
            wrap(f"{t['table']}: {t['location']}  (ACID v1, txns 1-2 committed, 3 aborted)") for t in h2["tables"]
        ]
    return "\n".join(lines)
