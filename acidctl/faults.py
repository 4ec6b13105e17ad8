"""Test fault injection, in one place and off unless an environment variable turns it on.

Two kinds, both used only by the test suite:

* **crash points** (``ACIDCTL_TEST_CRASH_AT=<point>``): :func:`crash_point` SIGKILLs the
  compaction — the driver included when it runs in a Spark task — at the named step
  (``after-lock``, ``task-start``, ``task-before-write``, …; see :mod:`acidctl.compact.runner`);
  ``int:<point>`` delivers SIGINT (a Ctrl-C) to the driver instead (``term:<point>``: SIGTERM). The driver's pid reaches the
  Spark tasks through ``ACIDCTL_TEST_DRIVER_PID``, which the first crash point on the driver
  sets before any Spark session starts (executors inherit the driver's environment in local
  mode, the only one the crash tests use).
* **hooks** (``ACIDCTL_TEST_FAULTS=1``, set by :func:`hooks`): a test runs a function of its own
  at a named step of the driver (``after-plan``, ``before-publish``), e.g. to write to the table
  concurrently. :func:`fire` does nothing unless the variable is set.

Production code calls :func:`crash_point` and :func:`fire` at its steps and nothing else; with
neither variable set both return at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from typing import Callable, Iterator

CRASH_ENV = "ACIDCTL_TEST_CRASH_AT"
DRIVER_PID_ENV = "ACIDCTL_TEST_DRIVER_PID"
HOOKS_ENV = "ACIDCTL_TEST_FAULTS"

_hooks: dict[str, Callable] = {}


def crash_point(point: str) -> None:
    """SIGKILL (or SIGINT / SIGTERM the driver, for ``int:<point>`` / ``term:<point>``) when
    ``point`` is the configured one."""
    configured = os.environ.get(CRASH_ENV)
    if not configured:
        return
    # the first call is on the driver (``after-lock`` precedes the Spark session)
    driver_pid = int(os.environ.setdefault(DRIVER_PID_ENV, str(os.getpid())))
    if configured in ("int:" + point, "term:" + point):
        sig = signal.SIGINT if configured.startswith("int:") else signal.SIGTERM
        handler = signal.getsignal(sig)
        if driver_pid == os.getpid() and threading.current_thread() is threading.main_thread() and callable(handler):
            # the driver is this thread: its handler runs here and now, as the signal's would.
            # A signal sent to oneself is handled at the next bytecode boundary, which may fall
            # inside a gc callback (hypothesis installs one) that swallows the KeyboardInterrupt
            handler(sig, sys._getframe())
            return
        os.kill(driver_pid, sig)
        time.sleep(0.5)  # let the signal arrive
        return
    if configured != point:
        return
    if driver_pid != os.getpid():
        try:
            os.kill(driver_pid, signal.SIGKILL)
        except OSError:
            pass
    os.kill(os.getpid(), signal.SIGKILL)
    os._exit(137)  # pragma: no cover


def fire(point: str, *args) -> None:
    """Run the test hook registered for ``point`` (only while :func:`hooks` is active)."""
    if os.environ.get(HOOKS_ENV) != "1":
        return
    hook = _hooks.get(point)
    if hook is not None:
        hook(*args)


@contextlib.contextmanager
def hooks(named: dict[str, Callable]) -> Iterator[None]:
    """Register ``{point: function}`` for the block and turn hooks on (tests only)."""
    saved_env, saved = os.environ.get(HOOKS_ENV), dict(_hooks)
    _hooks.update(named)
    os.environ[HOOKS_ENV] = "1"
    try:
        yield
    finally:
        _hooks.clear()
        _hooks.update(saved)
        if saved_env is None:
            os.environ.pop(HOOKS_ENV, None)
        else:
            os.environ[HOOKS_ENV] = saved_env
