"""Registering a command module's commands without importing :mod:`acidctl.cli.main`.

A module that declares its commands with decorators creates ``app = Commands()`` and
``register = app.register``; the decorators record the commands and ``main`` replays them on
the real typer app by calling ``register(app)`` (so no command module imports ``main``, and
``main`` imports them: no import cycle). Modules may instead define ``register(app)`` by hand.
"""

from __future__ import annotations

from typing import Any, Callable


class Commands:
    """Records ``@app.command(...)`` declarations for a later :meth:`register`."""

    def __init__(self) -> None:
        self._declared: list[tuple[tuple, dict, Callable]] = []

    def command(self, *args: Any, **kwargs: Any) -> Callable[[Callable], Callable]:
        def record(fn: Callable) -> Callable:
            self._declared.append((args, kwargs, fn))
            return fn

        return record

    def register(self, app) -> None:
        for args, kwargs, fn in self._declared:
            app.command(*args, **kwargs)(fn)
