"""The local engine: the bucket tasks of a compaction in worker processes on this machine, one
per core, across buckets and partitions — the same :func:`acidctl.compact.task.run_bucket`
that Spark runs, on the same picklable :class:`~acidctl.compact.planner.BucketTask`, so the
outputs are the same byte for byte.

Processes, not threads: the task's merge, accounting and verification hold the GIL for part of
the time. ``forkserver``, not ``fork``: pyarrow's thread pools and allocator in the driver
(which has already read footers when planning) are not safe to fork; the server imports
acidctl's task module and pyarrow once and forks every worker from that clean state.

One task, or one core: the task runs in this process (no pool to start).

Workers ignore SIGINT: Ctrl-C reaches the whole foreground process group, and the driver alone
decides — it stops the workers (SIGTERM, then waits for them) before the runner removes the
staging directories, so no worker writes into a removed directory.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

#: modules the fork server imports once (each worker starts with them loaded)
PRELOAD = [
    "acidctl.compact.task",
    "acidctl.acid.merge",
    "acidctl.acid.read",
    "acidctl.orc.writer",
    "acidctl.orc.meta",
    "acidctl.orc.render",  # pyorc's converters, for every task's footer reads
    "pyarrow",
    "pyarrow.compute",
    "pyarrow.orc",
    "pyorc",
    "numpy",
    # imported lazily by every task's first np.unique / first pyarrow kernel call (~10 ms per
    # worker otherwise); a module missing here is skipped by the fork server
    "numpy.ma",
    "dateutil.relativedelta",
]


#: what the console script ``acidctl`` imports (see :func:`preload`)
SCRIPT_PRELOAD = ["acidctl.cli.main"]


def preload() -> list[str]:
    """The fork server's preload list: :data:`PRELOAD`, plus :data:`SCRIPT_PRELOAD` when this
    process runs a script (the ``acidctl`` console script; not ``python -m acidctl``, whose
    ``__main__`` has a module spec): multiprocessing makes every worker re-run the main script
    as ``__mp_main__`` before its first task, which imports the CLI (typer, click: ~80 ms of
    CPU per worker, after planning, on the critical path); imported once by the server, which
    runs while the driver plans, the workers inherit it."""
    import sys

    main = sys.modules.get("__main__")
    if getattr(main, "__spec__", None) is None and getattr(main, "__file__", None):
        return PRELOAD + SCRIPT_PRELOAD
    return list(PRELOAD)


def _context():
    import multiprocessing

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(preload())
    return ctx


#: the fork server :func:`prestart` started that no worker pool has used yet (None: none)
_prestarted: int | None = None


def _server_pid() -> int | None:
    from multiprocessing import forkserver

    return getattr(forkserver._forkserver, "_forkserver_pid", None)


def prestart() -> None:
    """Start the fork server now, without waiting for it: its imports (pyarrow, pyorc, numpy:
    ~0.25 s of CPU, bench/compact.py) then run on another core while the driver reads the
    metastore, lists and plans, instead of between planning and the first task. Called before
    it is known whether a worker pool will run; :func:`stop_prestarted` ends a server no pool
    used (Spark chosen, the tasks run in this process, an error, Ctrl-C)."""
    global _prestarted
    from multiprocessing import forkserver

    if cores() < 2:
        return  # one core: no pool (acidctl.compact.engine.choose_engine)
    _context()  # sets the preload list the server is started with
    before = _server_pid()
    forkserver.ensure_running()
    if _server_pid() != before:
        _prestarted = _server_pid()


def stop_prestarted() -> None:
    """End the fork server :func:`prestart` started if no worker pool has used it: unused, it
    would keep a core busy importing and then hold ~100 MiB until the driver exits (through a
    whole Spark job, say). Killed, not asked to stop: a server still importing reads its
    "alive" pipe only after its imports. (``ForkServer._stop``: Python 3.11 has no public way
    to stop the fork server; CPython's own tests use it.)"""
    global _prestarted
    pid, _prestarted = _prestarted, None
    if pid is None:
        return
    from multiprocessing import forkserver

    server = forkserver._forkserver
    if getattr(server, "_forkserver_pid", None) != pid:
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    server._stop()  # type: ignore[attr-defined]  # closes the pipe, reaps the process, removes the socket


def cores() -> int:
    from acidctl.compact.engine import cores as n

    return n()


def _worker_init() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _task_size(t) -> int:
    """Rough size of a task (for scheduling the largest first): its input files' sizes."""
    import os

    n = 0
    for s in list(t.inserts) + list(t.deletes):
        try:
            n += os.path.getsize(s.path) if "://" not in s.path else 0
        except OSError:
            pass
    return n


def run_tasks(tasks: list, *, workers: int, progress=None) -> list[dict]:
    """Run every task; the metrics records in task order."""
    from acidctl.compact.task import run_bucket

    if workers <= 1 or len(tasks) <= 1:
        out = []
        for i, t in enumerate(tasks):
            out.append(run_bucket(t))
            if progress is not None:
                progress(i + 1, len(tasks))
        return out
    return _run_pool(tasks, workers, progress, run_bucket)


def _run_pool(tasks: list, workers: int, progress, fn) -> list[dict]:
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    from acidctl.compact.spark import TaskFailed
    from acidctl.errors import AuthenticationFailed

    global _prestarted
    _prestarted = None  # the pool forks its workers from it: kept (it ends with the driver)

    # largest first: the last task to start is a small one, so the cores finish together
    order = sorted(range(len(tasks)), key=lambda i: -_task_size(tasks[i]))
    results: list = [None] * len(tasks)
    import functools

    from acidctl.fs import current_umask, run_in_umask

    # the forkserver may have started under another umask (prestart): each task runs with the
    # driver's current one (acidctl.fs: one permission rule for everything acidctl creates)
    fn = functools.partial(run_in_umask, current_umask(), fn)
    ex = ProcessPoolExecutor(max_workers=workers, mp_context=_context(), initializer=_worker_init)
    try:
        pending = {ex.submit(fn, tasks[i]): i for i in order}
        done_n = 0
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                i = pending.pop(f)
                try:
                    results[i] = f.result()
                except AuthenticationFailed:  # a worker's token rejected: the same one line as in the driver
                    raise
                except BrokenProcessPool:
                    raise TaskFailed(
                        "a local worker process died (killed, or out of memory); nothing was published",
                        hint="rerun with --engine spark, or on a machine with more memory",
                    )
                except Exception as e:
                    raise TaskFailed(
                        f"local task failed: {type(e).__name__}: {str(e)[:400]}",
                        hint="rerun with -v; nothing was published",
                    ) from e
                done_n += 1
                if progress is not None:
                    progress(done_n, len(tasks))
        ex.shutdown(wait=True)
        return results
    except BaseException:
        _stop(ex)
        raise


@contextlib.contextmanager
def interrupts_deferred():
    """A second Ctrl-C (or SIGTERM) arriving inside the block is held until it ends, then
    raised as the handler before would have: a clean-up that stops workers or removes staging
    directories is not cut off half-way (every worker calls the driver's SIGINT at once when the
    terminal's Ctrl-C reaches them all; a user presses it twice). Main thread only (the only
    one Python runs signal handlers in); elsewhere the block runs as is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    sigs = (signal.SIGINT, signal.SIGTERM)
    old = {sig: signal.signal(sig, lambda n, _f: held.append(n)) for sig in sigs}
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
        if held:
            h = old[held[0]]
            if callable(h):
                h(held[0], None)
            elif h == signal.SIG_DFL:
                os.kill(os.getpid(), held[0])  # the default action (SIGTERM: end the process)


def _stop(ex) -> None:
    """Cancel what has not started and end the running workers (SIGTERM, then SIGKILL) before
    returning, so nothing writes into the staging directories the caller removes next; a
    second interrupt waits until they are gone (:func:`interrupts_deferred`).
    (Python 3.14 has ``ProcessPoolExecutor.terminate_workers``; 3.11 has no public way to reach
    the worker processes, hence ``_processes``.)"""
    with interrupts_deferred():
        _end_workers(ex)


def _end_workers(ex) -> None:
    procs = list((getattr(ex, "_processes", None) or {}).values())
    ex.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        try:
            p.terminate()
        except Exception:
            pass
    deadline = time.monotonic() + 5
    for p in procs:
        try:
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()
                p.join(1)
        except Exception:
            pass
