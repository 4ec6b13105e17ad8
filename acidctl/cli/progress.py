"""Progress lines on stderr for long-running commands, shown only to a person watching.

Hand-written rather than a progress-bar library: none is a dependency (typer-slim has no rich,
tqdm is not installed), and one ``\\r``-rewritten status line is all these commands need.
Printed only when stderr is a terminal, never in JSON mode, never with ``-q``; never on stdout.
"""

from __future__ import annotations

import time
from typing import Any, TextIO

#: seconds before the first status line (shorter runs print none) and between two updates
DELAY = 1.0
INTERVAL = 0.25


def progress_stream(settings: Any, *, rows_on_stdout: bool = False) -> TextIO | None:
    """stderr when progress may be printed there, else None: not in JSON mode, not with ``-q``,
    only to a terminal; with ``rows_on_stdout`` not when stdout is that terminal too (the status
    line would tear the rows)."""
    import sys

    if settings.output.json or getattr(settings, "quiet", False):
        return None
    err = settings.output.err
    try:
        if not err.isatty():
            return None
        if rows_on_stdout and sys.stdout.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return err


class StatusLine:
    """One status line rewritten in place (``\\r``), at most every ``interval`` seconds and only
    once ``delay`` seconds have passed (short runs print nothing); :meth:`done` clears it."""

    def __init__(
        self,
        err: TextIO,
        prefix: str,
        *,
        delay: float | None = None,
        interval: float | None = None,
        clock=time.monotonic,
    ):
        self.err = err
        self.prefix = prefix
        self.clock = clock
        self.start = clock()
        self.delay = DELAY if delay is None else delay
        self.interval = INTERVAL if interval is None else interval
        self.last = float("-inf")
        self.width = 0

    def update(self, text: str, *, force: bool = False) -> None:
        now = self.clock()
        if now - self.start < self.delay or (not force and now - self.last < self.interval):
            return
        self.last = now
        line = f"{self.prefix}: {text} ({now - self.start:.0f} s)"
        self.err.write("\r" + line.ljust(self.width))
        self.width = len(line)
        self.err.flush()

    def done(self) -> None:
        """Erase the line (if one was printed), so what follows starts on a clean line."""
        if self.width:
            self.err.write("\r" + " " * self.width + "\r")
            self.err.flush()
            self.width = 0


def spark_start_progress(settings: Any) -> None:
    """While a Spark session starts (seconds, before the first task), a status line
    ``acidctl: starting Spark (local[*]) (N s)`` on a terminal's stderr: registered with
    :data:`acidctl.compact.spark.START_LISTENERS` by the commands that may start Spark."""
    import sys

    err = progress_stream(settings)
    loaded = sys.modules.get("acidctl.compact.spark")
    if loaded is not None:  # an earlier invocation's listener (in-process runs) goes
        loaded.START_LISTENERS[:] = [f for f in loaded.START_LISTENERS if not getattr(f, "acidctl_cli", False)]
    if err is None:
        return
    import contextlib
    import threading

    from acidctl.compact import spark

    @contextlib.contextmanager
    def status(master: str):
        line = StatusLine(err, "acidctl", delay=0.5)
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(INTERVAL):
                line.update(f"starting Spark ({master})")

        t = threading.Thread(target=tick, name="acidctl-spark-start", daemon=True)
        t.start()
        try:
            yield
        finally:
            stop.set()
            t.join()
            line.done()

    status.acidctl_cli = True  # type: ignore[attr-defined]
    spark.START_LISTENERS.append(status)
