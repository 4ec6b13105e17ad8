"""``acidctl abort ...``: Hive's ABORT statements (sub-commands register on :data:`abort_app`).

Minimal placeholder from the admin branch: the protocol branch owns this module (``abort
transactions``); ``abort compactions`` lives in :mod:`acidctl.cli.abort_compactions_cmd`.
"""

from __future__ import annotations

import typer

from acidctl.cli.main import app

abort_app = typer.Typer(name="abort", help="Hive's ABORT TRANSACTIONS / ABORT COMPACTIONS on the metastore tables "
                                           "(dry run unless --execute).", no_args_is_help=True)
app.add_typer(abort_app)
