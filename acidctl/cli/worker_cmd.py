"""``acidctl worker [--once | --daemon] [--dry-run]``: claim ``initiated`` compaction requests with Hive's
conditional update and run them in one Spark application (library:
:mod:`acidctl.compact.worker`).

JSON document (``--once``): ``worker_id``, ``requests`` (one record each: cq_id, table,
partition, type, state [ready for cleaning|refused|failed|released], message, output_dirs,
txn_id, seconds), ``summary`` (counts by state). ``--daemon`` writes one line (JSON: one JSON
object) per request as it finishes. ``--dry-run``: the same document with ``dry_run: true``,
the requests a cycle would claim, each with the state it would get (``would be ...``),
``output_dirs`` and ``plan`` (the compaction's dry-run plan of its partition).
"""

from __future__ import annotations

import signal
import sys
from typing import Annotated, Optional

import typer

from acidctl.cli.commands import Commands
from acidctl.cli import options
from acidctl.cli.options import parse_kv

app = Commands()  # main calls register(app)
register = app.register


def _install_stop_handlers(stop, settings):
    """First SIGTERM/SIGINT: finish the request in flight, then stop; second: interrupt it."""
    old = {}

    def handler(signum, frame):
        if stop.is_set():
            raise KeyboardInterrupt
        name = signal.Signals(signum).name
        stop.set(f"{name} received")
        settings.output.note(
            f"acidctl worker: {name}: finishing the request in flight, then stopping (again to abandon it)"
        )

    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            old[sig] = signal.signal(sig, handler)
        except ValueError:  # not the main thread (tests calling main() from a thread)
            pass
    return old


def _render_once(doc: dict) -> str:
    from acidctl.cli.output import wrap
    from acidctl.compact.worker import request_line

    lines = [wrap(request_line(r)) for r in doc["requests"]] or ["no initiated compaction requests to claim"]
    if doc.get("dry_run"):
        lines.insert(0, "acidctl worker --dry-run (nothing is claimed or written)")
    s = doc["summary"]
    if doc["requests"]:
        lines.append(", ".join(f"{n} {k}" for k, n in sorted(s.items())))
    return "\n".join(lines)


# worker_command's options (declared here so that the command reads as its grammar)
_Once = Annotated[bool, typer.Option("--once", help="One cycle: claim up to --max requests, run them, exit (default).")]
_Daemon = Annotated[
    bool,
    typer.Option(
        "--daemon",
        help="Poll the queue until SIGTERM/Ctrl-C (the request in flight finishes; a second signal abandons it, leaving it claimable again).",
    ),
]
_Pool = Annotated[
    Optional[str],
    typer.Option(
        "--pool",
        metavar="NAME",
        help="Hive 4: claim only requests of this pool (default pool: unpooled requests and pooled ones older than 12 h).",
    ),
]
_Db = Annotated[
    Optional[str],
    typer.Option("--db", metavar="GLOB", help="Claim only requests of databases matching GLOB (e.g. 'sales_*')."),
]
_Poll = Annotated[
    float, typer.Option("--poll", metavar="SECONDS", help="With --daemon: seconds between queue checks when idle.")
]
_AllowNonAtomicPublish = Annotated[
    bool,
    options.allow_non_atomic_publish_option(
        "Publish requests whose output readers could see half done (a Hive 3 minor compaction writing delta and delete_delta), as Hive's compactor does; such requests fail otherwise.",
    ),
]
_DryRun = Annotated[
    bool,
    options.dry_run_option(
        "Print the requests one cycle would claim, in order, and what each would write (the compaction plan) or the state it would get; claim nothing, write nothing."
    ),
]


@app.command(
    "worker",
    help="Run Hive's compaction queue: claim initiated requests (Hive's conditional update, safe "
    "next to Hive's own workers), compact them (--engine: on this machine or in one Spark "
    "application) and move each to ready for cleaning / refused / failed with the error message.",
)
def worker_command(
    ctx: typer.Context,
    once: _Once = False,
    daemon: _Daemon = False,
    max_requests: Annotated[int, typer.Option("--max", metavar="N", help="Claim at most N requests per cycle.")] = 10,
    pool: _Pool = None,
    db: _Db = None,
    master: options.Master = "local[*]",
    spark_conf: options.SparkConf = None,
    engine: options.Engine = options.ENGINE_DEFAULT,
    local_max_bytes: options.LocalMaxBytes = None,
    poll: _Poll = 30.0,
    allow_non_atomic_publish: _AllowNonAtomicPublish = False,
    dry_run: _DryRun = False,
):
    from acidctl.errors import UsageError

    settings = ctx.obj
    from acidctl.cli.progress import spark_start_progress

    spark_start_progress(settings)  # a status line while a Spark session starts (terminal only)
    if once and daemon:
        raise UsageError("give --once or --daemon, not both")
    if max_requests < 1:
        raise UsageError("--max must be at least 1")
    if poll <= 0:
        raise UsageError("--poll must be positive")
    engine = engine.lower()
    conf = parse_kv(spark_conf, "--spark-conf")

    from acidctl.compact import worker as w
    from acidctl.metastore import queue, steps
    from acidctl.metastore.connection import resolve_url
    from acidctl.metastore.hive2 import connect_any

    ms = connect_any(resolve_url(settings.metastore_url, profile=settings.profile))
    steps.check_writable(ms, what="run compaction requests")
    opts = w.WorkerOptions(
        max=max_requests,
        pool=pool,
        db_glob=db,
        engine=engine,
        local_max_bytes=local_max_bytes,
        master=master,
        spark_conf=conf,
        allow_non_atomic_publish=allow_non_atomic_publish,
        poll_s=poll,
        worker_id=queue.process_id(),
    )
    if dry_run:
        plans = w.plan_cycle(ms, opts, table_fs=settings.table_fs)
        counts: dict[str, int] = {}
        for r in plans:
            counts[r["state"]] = counts.get(r["state"], 0) + 1
        doc = {"worker_id": opts.worker_id, "dry_run": True, "requests": plans, "summary": counts}
        settings.output.emit(doc, _render_once)
        return
    stop = w.StopFlag()
    old = _install_stop_handlers(stop, settings)
    session: dict = {}
    records: list[dict] = []

    def one_line(rec: dict) -> None:
        if settings.output.json:
            settings.output.jsonl([rec])
        else:
            settings.output.emit(rec, w.request_line, performed=True)

    try:
        if not daemon:
            records = w.run_cycle(ms, opts, table_fs=settings.table_fs, stop=stop, session=session)
            _warn_stale(settings, session, set())
        else:
            settings.output.note(f"acidctl worker {opts.worker_id}: polling every {poll:g}s (SIGTERM/Ctrl-C stops)")
            told: set = set()
            while not stop.is_set():
                got = w.run_cycle(ms, opts, table_fs=settings.table_fs, stop=stop, session=session, on_request=one_line)
                _warn_stale(settings, session, told)
                records.extend(got)
                if not got:
                    stop.wait(poll)
    finally:
        w.stop_session(session)
        if engine == "auto" and "pyspark" in sys.modules:
            # the runner started the one shared session on demand (get_or_create reuses it)
            from pyspark.sql import SparkSession

            from acidctl.compact.spark import stop_session

            active = SparkSession.getActiveSession()
            if active is not None:
                stop_session(active)
        for sig, h in old.items():
            signal.signal(sig, h)
    summary: dict = {}
    for r in records:
        summary[r["state"]] = summary.get(r["state"], 0) + 1
    if daemon:
        settings.output.note(
            "acidctl worker: stopped; "
            + (", ".join(f"{n} {k}" for k, n in sorted(summary.items())) or "no requests run")
        )
        return
    settings.output.emit(
        {"worker_id": opts.worker_id, "requests": records, "summary": summary}, _render_once, performed=True
    )


def _warn_stale(settings, session: dict, told: set) -> None:
    """One warning per request a dead run's lock holds up (a polling worker says it once)."""
    lines = session.get("stale_locks", [])
    for line in lines:
        if line not in told:
            told.add(line)
            settings.output.warn(line)
    lines.clear()
