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
