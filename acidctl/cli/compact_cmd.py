"""``acidctl compact --major|--minor TABLE``: Hive-compatible compaction on Spark.

TABLE is a table or partition directory (local, file://, hdfs://, s3://, memory://) or, with a
metastore configured, ``DB.TABLE[/k=v...]`` (looked up with
:func:`acidctl.metastore.tables.resolve_table`). The snapshot comes from ``--write-ids``,
``--assume-committed`` or the metastore; the compactor list derived from it never folds an open
write id. All selected partitions and buckets run in one job: worker processes on this machine
(``--engine local``, or ``auto`` for small inputs) or one Spark application.
This module parses the options and renders; what the run is (options, notes, registration,
the aborted-txn counts of ``--due``) is decided by :mod:`acidctl.compact.prepare`.

JSON document: ``path``, ``type``, ``hive_version``, ``write_ids``, ``compactor_write_ids``,
``engine`` (local|spark: what ran; the requested one when nothing ran), ``engine_choice`` (engine, requested, reason, bytes_in,
local_max_bytes, workers), ``spark`` (master, app_id, startup_seconds), ``task_seconds``, ``message``, ``nothing_to_compact``,
``compacted``, ``recovered`` (interrupted publications finished first), ``notes``,
``partitions`` (one metrics record each: partition, path, type, status
[compact|nothing|not-due], message, input_dirs, output_dirs, published, buckets, rows_in,
delete_events_in, rows_out, delete_events_out, deletes_applied, aborted_dropped, bytes_in,
bytes_out, task_seconds, peak_task_memory_bytes, verified_rows, publish [atomic|hidden-until-commit|
non-atomic], [recommendation], [metastore]),
``summary``.
"""

from __future__ import annotations

import contextlib

from typing import Annotated, Optional

import typer

from acidctl.cli.targets import TABLE_RULE

from acidctl.cli.commands import Commands
from acidctl.cli import options
from acidctl.units import plural
from acidctl.cli.options import parse_kv


def resolve(settings, spec: str, **kw):
    """:func:`acidctl.target.resolve_target`, with a DB.TABLE/PARTITION target widened to the
    table directory plus a partition filter (the lock lives at the table root)."""
    from acidctl.cli.targets import resolve as resolve_and_tell
    from acidctl.target import location_url

    target = resolve_and_tell(settings, spec, **kw)
    parts = []
    t = target.table
    if t is not None and t.partition and t.location:
        target.tfs = settings.table_fs(location_url(t.location))
        parts = [t.partition]
    return target, parts


class _Progress:
    """Buckets done while the tasks run, then partitions published: one status line on stderr
    (terminals only), rewritten in place and erased when the run ends (:meth:`done`), so the
    report starts on a clean screen; runs under a second print none (acidctl.cli.progress)."""

    def __init__(self, err, **kw):
        from acidctl.cli.progress import StatusLine

        self.line = StatusLine(err, "acidctl: compact", **kw)

    def __call__(self, done: int, total: int) -> None:
        self.line.update(f"buckets {done}/{total} done", force=done >= total)

    def partition(self, done: int, total: int, name) -> None:
        self.line.update(f"partitions {done}/{total} published ({name or 'table'})", force=True)

    def done(self) -> None:
        self.line.done()


def _progress(settings):
    from acidctl.cli.progress import progress_stream

    err = progress_stream(settings)  # stderr, a terminal, not JSON mode, no -q
    return None if err is None else _Progress(err)


app = Commands()  # main calls register(app)
register = app.register


# compact_command's options (declared here so that the command reads as its grammar)
_Table = Annotated[
    str,
    options.table_argument(
        "Table or partition directory, or DB.TABLE[/k=v] looked up in the metastore (location, snapshot, properties)."
        + " "
        + TABLE_RULE
    ),
]
_Minor = Annotated[
    bool, typer.Option("--minor", help="Minor compaction: deltas -> delta_min_max + delete_delta_min_max.")
]
_Due = Annotated[
    bool,
    typer.Option(
        "--due",
        help="Only partitions the Initiator thresholds flag (without --major/--minor: the type it recommends).",
    ),
]
_Partition = Annotated[Optional[list[str]], options.partition_option("Compact only this partition (repeatable).")]
_WriteIds = Annotated[
    Optional[str],
    options.write_ids_option(
        "The reader's ValidWriteIdList db.table:hwm:minOpenWriteId:open:aborted; the compactor list (hwm = lowest open - 1) is derived from it."
    ),
]
_Txns = Annotated[
    Optional[str],
    options.txns_option(
        "Hive 4 ValidTxnList deciding which _vM directories are visible; with --hive-version 2 the snapshot (Hive 2's hwm:minOpenTxn[:exception]*)."
    ),
]
_HiveVersion = Annotated[
    Optional[int],
    options.hive_version_option(
        "Output for Hive 3 (base_N + _metadata_acid, default), Hive 4 (_v<compactor txn>) or Hive 2.3 (CompactorMR's files: no markers, legacy update events merged); default: the metastore's version, else 3."
    ),
]
_VisibilityTxn = Annotated[
    Optional[int],
    typer.Option(
        "--visibility-txn",
        metavar="M",
        help="Hive 4 without a metastore: the committed COMPACTION txn that names the output (_vM).",
    ),
]
_Columns = Annotated[
    Optional[str],
    typer.Option(
        "--columns",
        metavar="A,B,...",
        help=(
            "Full-ACID: one name per column of the files, in their order, for the output's row struct "
            "(renames, selects nothing; written lower-case as Hive does); default: the metastore's names "
            "for _colN, else the files' names. Insert-only table given as a path: name:type,... is its schema."
        ),
    ),
]
_Tblproperty = Annotated[
    Optional[list[str]],
    typer.Option(
        "--tblproperty",
        metavar="KEY=VALUE",
        help="Table property for --due thresholds, repeatable: compactorthreshold.SETTING=N overrides Hive's SETTING for this table (SETTING e.g. hive.compactor.delta.num.threshold).",
    ),
]
_NoRegister = Annotated[bool, typer.Option("--no-register", help="Do not record the compaction in the metastore.")]
_BreakLock = Annotated[bool, typer.Option("--break-lock", help="Remove an existing (stale) compaction lock first.")]
_DryRun = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Print the full plan (partitions, inputs per bucket, output names, what becomes obsolete, bytes in, refusals with reasons) and write nothing: no lock, no staging, no metastore. Exit 6 when the compaction would be refused.",
    ),
]
_SkipUnreadableFiles = Annotated[
    bool,
    typer.Option(
        "--skip-unreadable-files",
        help="Compact even when a directory the output makes obsolete holds a file some reader could treat as data and the compaction cannot read (e.g. delta_1_2/streaming.orc); the report lists each as skipped and clean never deletes its directory. Refused by default (exit 6).",
    ),
]
_TableIsQuiescent = Annotated[
    bool,
    typer.Option(
        "--table-is-quiescent",
        help="With --assume-committed: state that nothing writes to the table and every write id in its directory names is committed, so the assumed snapshot may drive a write (recorded in the report).",
    ),
]
_Enqueue = Annotated[
    bool,
    typer.Option(
        "--enqueue",
        help="Do not compact: queue a request for DB.TABLE[/PART] (= ALTER TABLE ... COMPACT) for acidctl worker or Hive's workers; prints 'Compaction enqueued with id N'. A request already queued for the partition is refused as Hive refuses it (exit 6).",
    ),
]
_Pool = Annotated[
    Optional[str],
    typer.Option(
        "--pool",
        metavar="NAME",
        help="With --enqueue on Hive 4: the compaction pool (default: the table's hive.compactor.worker.pool property).",
    ),
]
_FileFormat = Annotated[
    Optional[str],
    options.mm_format_option(options.MM_FORMAT_HELP + " Use --columns name:type,... for its columns."),
]
_AllowNonAtomicPublish = Annotated[
    bool,
    options.allow_non_atomic_publish_option(
        "Publish even when readers could see it half done: a Hive 3 minor compaction writing both delta_x_y and delete_delta_x_y (two renames), or an object store whose rename copies. Refused by default (exit 6).",
    ),
]


@app.command(
    "compact",
    help="Major or minor compaction of a table or its partitions, written exactly as Hive's "
    "compactor writes it (base_N / delta_min_max / delete_delta_min_max), run on Spark, "
    "verified, and published with a rename. " + TABLE_RULE,
)
def compact_command(
    ctx: typer.Context,
    table: _Table,
    major: Annotated[bool, typer.Option("--major", help="Major compaction: base + deltas -> base_N.")] = False,
    minor: _Minor = False,
    due: _Due = False,
    partition: _Partition = None,
    write_ids: _WriteIds = None,
    assume_committed: options.AssumeCommittedOffline = False,
    txns: _Txns = None,
    hive_version: _HiveVersion = None,
    visibility_txn: _VisibilityTxn = None,
    columns: _Columns = None,
    tblproperty: _Tblproperty = None,
    master: options.Master = "local[*]",
    spark_conf: options.SparkConf = None,
    engine: options.Engine = options.ENGINE_DEFAULT,
    local_max_bytes: options.LocalMaxBytes = None,
    no_register: _NoRegister = False,
    break_lock: _BreakLock = False,
    dry_run: _DryRun = False,
    skip_unreadable_files: _SkipUnreadableFiles = False,
    table_is_quiescent: _TableIsQuiescent = False,
    enqueue: _Enqueue = False,
    pool: _Pool = None,
    file_format: _FileFormat = None,
    serde_property: Annotated[Optional[list[str]], options.serde_property_option()] = None,
    mm_allow_originals: options.MMAllowOriginals = False,
    allow_non_atomic_publish: _AllowNonAtomicPublish = False,
):
    from acidctl.errors import RefusedError, UsageError

    settings = ctx.obj
    from acidctl.cli.progress import spark_start_progress

    spark_start_progress(settings)  # a status line while a Spark session starts (terminal only)
    if major and minor:
        raise UsageError("give --major or --minor, not both")
    if not (major or minor or due):
        raise UsageError("give --major or --minor (or --due)")
    from acidctl.compact.engine import parse_size

    engine = engine.lower()
    if enqueue:
        if partition:
            # one request names one partition (ALTER TABLE ... PARTITION (...) COMPACT); --partition
            # was ignored here before (new-user pass 4)
            if len(partition) > 1:
                raise UsageError("--enqueue queues one request: give one --partition (run it once per partition)")
            if "/" in table:
                raise UsageError("give the partition either in DB.TABLE/SPEC or with --partition, not both")
            table = f"{table}/{partition[0]}"
        return _enqueue(
            settings, table, major=major, minor=minor, due=due, pool=pool, hive_version=hive_version, dry_run=dry_run
        )
    if pool is not None:
        raise UsageError("--pool applies to --enqueue")
    from acidctl.compact.prepare import CompactArgs, prepare_compaction

    args = CompactArgs(
        mode="major" if major else "minor" if minor else None,
        due=due,
        partitions=partition,
        columns=columns,
        tblproperty=tblproperty,
        file_format=file_format,
        serde_property=serde_property,
        mm_allow_originals=mm_allow_originals,
        table_is_quiescent=table_is_quiescent,
        no_register=no_register,
        visibility_txn=visibility_txn,
        engine=engine,
        local_max_bytes=parse_size(local_max_bytes) if local_max_bytes is not None else None,
        master=master,
        spark_conf=parse_kv(spark_conf, "--spark-conf"),
        break_lock=break_lock,
        allow_non_atomic_publish=allow_non_atomic_publish,
        skip_unreadable_files=skip_unreadable_files,
        dry_run=dry_run,
    )
    _prestart_local_engine(ctx, settings, table, args)
    target, spec_parts = resolve(
        settings, table, write_ids=write_ids, assume_committed=assume_committed, txns=txns, hive_version=hive_version
    )
    run = prepare_compaction(target, args, spec_parts=spec_parts, metastore_configured=bool(settings.metastore_url))
    for n in run.notes:
        settings.output.note(n)
    progress = _progress(settings)
    try:
        with _sigterm_interrupts():
            report = run.run(progress=progress)
    finally:
        if progress is not None:
            progress.done()
    if not dry_run:
        settings.output.emit(report, render_text, performed=True)
        return
    settings.output.emit(report, render_dry_run)
    if report["refused"]:
        raise RefusedError(
            report.get("refusal") or "the compaction would be refused (see the plan)",
            hint=report.get("refusal_hint"),
        )


def _prestart_local_engine(ctx: typer.Context, settings, table: str, args) -> None:
    """A metastore table: the local engine's fork server imports (~0.25 s of CPU) on another
    core while the metastore is read (snapshot, table, registration) — before the size of the
    input is known; the runner ends it when no worker pool runs, and so does leaving the
    command (insert-only tables, errors before the runner, Ctrl-C); a path target starts it
    after listing, knowing the size."""
    if args.dry_run or args.engine == "spark" or not args.master.startswith("local"):
        return
    from acidctl.target import names_table

    if names_table(settings, table):
        from acidctl.compact.local import prestart, stop_prestarted

        prestart()
        ctx.call_on_close(stop_prestarted)


@contextlib.contextmanager
def _sigterm_interrupts():
    """SIGTERM during the run is handled as Ctrl-C: the runner removes its staging and the
    registrar hands the requests back (the no-trace rule), instead of the process just ending."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt(f"{signal.Signals(signum).name} received")

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _enqueue(
    settings, spec: str, *, major: bool, minor: bool, due: bool, pool, hive_version=None, dry_run: bool = False
) -> None:
    """``--enqueue`` (with ``--dry-run``: what it would enqueue, nothing written, the same exit
    code). A refused (duplicate) request is one error line on stderr, exit 6 — not also a
    document on stdout."""
    from acidctl.errors import RefusedError, UsageError
    from acidctl.metastore.connection import resolve_url
    from acidctl.metastore.hive2 import connect_any
    from acidctl.metastore.queue import enqueue_for
    from acidctl.target import names_table

    if due or not (major or minor):
        raise UsageError("--enqueue needs --major or --minor")
    if not names_table(settings, spec):
        raise UsageError(f"--enqueue takes DB.TABLE[/PART], not a path ({spec!r})")
    url = resolve_url(settings.metastore_url, profile=settings.profile)
    # the metastore's own protocol: Hive 2.3 when its schema is 2.x (or --hive-version 2 says so)
    kind = "major" if major else "minor"
    ms = connect_any(url, hive_version=hive_version)
    doc = enqueue_for(ms, spec, type=kind, pool=pool, dry_run=dry_run)
    if not doc["accepted"]:
        raise RefusedError(doc["message"])
    if dry_run:
        where = doc["table"] + (f"/{doc['partition']}" if doc["partition"] else "")
        doc["message"] = f"dry run: would enqueue a {kind} compaction of {where} (id {doc['id']}); nothing written"
        settings.output.emit(doc, lambda d: d["message"])
        return
    settings.output.emit(doc, lambda d: d["message"], performed=True)


def render_dry_run(report: dict) -> str:
    """Every partition's plan; every name whole (files under the partition named in its
    heading; JSON keeps full paths). Lines wrap between words on a terminal."""
    from acidctl.cli.output import wrap

    lines = [
        wrap(
            f"acidctl compact --dry-run {report['path']}  (Hive {report['hive_version']}, {report['type']}; "
            "nothing is written)"
        ),
        wrap(f"write ids: {report['write_ids']}   compactor: {report['compactor_write_ids']}"),
    ]
    if report.get("engine_choice"):
        lines.append(wrap(_engine_line(report["engine_choice"], would=True), indent="        "))
    for n in report.get("notes", []):
        lines.append(wrap(f"note: {n}"))
    for p in report["partitions"]:
        status = "would compact" if p["status"] == "compact" else p["status"]
        lines.append(
            wrap(f"== {'partition ' + p['partition'] if p['partition'] else 'table'}: {status} — {p['message']}")
        )
        if p["status"] not in ("compact", "refused"):
            continue
        root = (p.get("path") or "").rstrip("/") + "/"

        def rel(path: str, root: str = root) -> str:
            return path[len(root) :] if root != "/" and path.startswith(root) else path

        ind = "      "
        lines.append(wrap(f"   inputs ({_bytes(p['bytes_in'])}): {', '.join(p['inputs']) or '-'}", indent=ind))
        lines.append(wrap(f"   outputs: {', '.join(p['outputs']) or '-'}   publish: {p['publish'] or '-'}", indent=ind))
        plan = _request_plan(report, p) if p["status"] == "compact" else None
        if plan:
            lines.append(wrap(f"   {plan}", indent=ind))
        lines.append(wrap(f"   becomes obsolete: {', '.join(p['obsoletes']) or '-'}", indent=ind))
        for t in p["tasks"]:
            lines.append(
                f"   bucket {t['bucket']}: {plural(len(t['inserts']), 'insert file')}, {plural(len(t['deletes']), 'delete file')}"
            )
            lines.extend(f"     {rel(f)}" for f in t["inserts"] + t["deletes"])
        for r in p["refusals"]:
            lines.append(wrap(f"   REFUSED {rel(r['path'])}: {r['reason']} — {r['fix']}", indent=ind))
        for r in p["skipped"]:
            lines.append(wrap(f"   skipped {rel(r['path'])}: {r['reason']}", indent=ind))
    sm = report["summary"]
    lines.append(
        wrap(
            f"{report['message']}: {sm['would_compact']} of {plural(sm['partitions'], 'partition')}, "
            f"{_bytes(sm['bytes_in'])} in, {sm['refused']} refused"
        )
    )
    return "\n".join(lines)


def _request_plan(report: dict, p: dict) -> str | None:
    """The dry run's metastore line for a partition that would be compacted."""
    queued = report.get("queued_requests")
    if queued is None:
        return None
    q = queued.get(p["partition"] or "")
    if q is None:
        return "metastore: would register a new compaction request"
    if q["state"] == "working":
        return f"metastore: request {q['id']} is being worked on: a real run would be refused"
    if q["type"].lower() != (p.get("type") or "").lower():
        return f"metastore: a queued {q['type']} request ({q['id']}) would refuse this {p['type']} run"
    return f"metastore: would claim queued request {q['id']} ({q['type']}, initiated)"


def _bytes(n: float) -> str:
    from acidctl.units import size

    return size(n)


def _engine_line(choice: dict, *, would: bool = False) -> str:
    """``engine: local — auto: 11.0 KiB of input ≤ 48.0 MiB local limit, 1 worker`` from the
    engine choice's facts (one level of words, no nested parentheses)."""
    verb = "would run" if would else "ran"
    head = f"engine: {verb} {choice['engine']}"
    if choice["requested"] == "auto" and choice.get("local_max_bytes"):
        cmp = "≤" if choice["engine"] == "local" else ">"
        tail = f"auto: {_bytes(choice['bytes_in'])} of input {cmp} {_bytes(choice['local_max_bytes'])} local limit"
        if choice["engine"] == "local":
            w = choice.get("workers", 1)
            tail += ", in this process" if w == 1 else f", {w} worker processes"
        return f"{head} — {tail}"
    return f"{head} — {choice['reason']}"


#: a finished partition's STATUS word in the text report (JSON keeps the plan's ``status``)
_DONE = {"compact": "compacted"}


def _request(p: dict) -> str:
    """Which metastore request the run claimed or registered (JSON ``metastore.cq_id``)."""
    m = p.get("metastore")
    if not m or m.get("cq_id") is None:
        return ""
    return f"{'claimed' if m.get('claimed_request') else 'registered'} {m['cq_id']}"


def render_text(report: dict) -> str:
    from acidctl.cli.output import Col, table, wrap
    from acidctl.units import duration

    lines = [
        wrap(f"acidctl compact {report['path']}  (Hive {report['hive_version']}, {report['type']})"),
        wrap(f"write ids: {report['write_ids']}   compactor: {report['compactor_write_ids']}"),
    ]
    if report.get("engine_choice"):
        lines.append(wrap(_engine_line(report["engine_choice"]), indent="        "))
    if report.get("spark"):
        s = report["spark"]
        lines.append(f"spark: {s['master']} ({s['app_id']}), session ready in {duration(s['startup_seconds'])}")
    for r in report.get("recovered", []):
        lines.append(wrap(f"recovered: {r['action']} {r['path']}"))
    rows = []
    for p in report["partitions"]:
        rows.append(
            [
                p["partition"] or "(table)",
                p["type"],
                _DONE.get(p["status"], p["status"]),
                len(p["input_dirs"]),
                ", ".join(p["output_dirs"]) or p["message"],
                p["buckets"],
                p["rows_in"],
                p["rows_out"],
                p["deletes_applied"],
                p["aborted_dropped"],
                p["delete_events_out"],
                _bytes(p["bytes_in"]),
                _bytes(p["bytes_out"]),
                duration(p["task_seconds"]),
                _request(p),
            ]
        )
    lines.append(
        table(
            rows,
            [
                Col("Partition"),
                Col("Type", wide=True),
                Col("Status"),
                Col("Inputs", "input_dirs", wide=True),
                Col("Output", "output_dirs", text=True),  # names separated by ", ": wraps between names only
                Col("Buckets", wide=True),
                Col("Rows In"),
                Col("Rows Out"),
                Col("Deleted", "deletes_applied", wide=True),
                Col("Aborted", "aborted_dropped", wide=True),
                Col("Delete Events Out", wide=True),
                Col("Size In", "bytes_in", wide=True),
                Col("Size Out", "bytes_out", wide=True),
                Col("Time", "task_seconds"),
                Col("Request", "metastore"),
            ],
            empty="No partitions.",
        )
    )
    sm = report["summary"]
    lines.append(
        wrap(
            f"{report['message']}: {sm['compacted']} of {plural(sm['partitions'], 'partition')}, "
            f"{plural(sm['rows_in'], 'row')} in, {plural(sm['rows_out'], 'row')} out, {_bytes(sm['bytes_in'])} in, "
            f"{_bytes(sm['bytes_out'])} out, {duration(sm['seconds'])}"
        )
    )
    return "\n".join(lines)
