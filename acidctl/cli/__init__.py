"""The command line: a thin typer layer over the library (see DEVELOPING.md).

typer switches to rich rendering (escaped ``\\[env var: ...]`` help, rich tracebacks, ~1 s of
imports) as soon as ``rich`` is importable, and offers no setting to keep its plain Click
output; pyiceberg (the ``iceberg`` extra) pulls rich in. acidctl's help, errors and start-up must
not change with the extras installed, so typer is told here — before any command module imports
it — that rich is absent. Written by hand because typer decides this once, at import, from
``importlib.util.find_spec("rich")``.
"""

import typer.core
import typer.main

typer.core.HAS_RICH = False
typer.main.HAS_RICH = False


def _keep_argument_help() -> None:
    """click 8.5 gave ``Argument`` a ``help`` of its own: its constructor resets the help typer's
    ``TyperArgument`` set just before (so no TABLE/DEST help was ever shown), and its
    ``format_arguments`` prints a second "Positional arguments" section beside typer's
    "Arguments". Keep typer's one section, with the help restored. Written by hand: neither
    library offers a setting for it (typer-slim 0.20, click 8.5.1); a no-op on older click."""
    import click

    init = typer.core.TyperArgument.__init__

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        if getattr(self, "help", None) is None and kwargs.get("help"):
            self.help = kwargs["help"]

    typer.core.TyperArgument.__init__ = __init__  # type: ignore[method-assign]
    if hasattr(click.Command, "format_arguments"):
        click.Command.format_arguments = lambda self, ctx, formatter: None  # type: ignore[method-assign]


_keep_argument_help()
