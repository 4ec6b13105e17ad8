"""``acidctl demo``: build the local demo warehouse."""

from __future__ import annotations

from typing import Annotated

import typer

from acidctl.cli.main import app


@app.command("demo")
def demo_command(
    ctx: typer.Context,
    directory: Annotated[str, typer.Argument(metavar="DIR", help="A new (or empty) directory for the warehouse.")],
):
    """Create a local warehouse with two Hive 3 ACID tables laid out exactly as Hive writes them."""
    from acidctl.demo import build_demo

    settings = ctx.obj
    tfs = settings.table_fs(directory)
    result = build_demo(tfs, tfs.root)
    settings.output.emit(result, _text)


def _text(d: dict) -> str:
    from acidctl.cli.output import table

    rows = []
    for t in d["tables"]:
        for w in t["writes"]:
            rows.append((t["table"], w["write_id"], w["state"], w["statement"]))
    lines = [f"Demo warehouse: {d['warehouse']}", "", table(rows, ["table", "write id", "state", "what"]), ""]
    for t in d["tables"]:
        lines.append(f"{t['table']}: {t['location']}  (snapshot: --write-ids {t['write_ids']})")
    return "\n".join(lines)
