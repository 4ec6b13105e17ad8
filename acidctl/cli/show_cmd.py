"""``acidctl show transactions|locks|compactions|write-ids|tables``: Hive's SHOW commands, read
directly from the metastore database (no HiveServer2, no Thrift)."""

from __future__ import annotations

import datetime as _dt
from typing import Annotated, Optional

import typer

from acidctl.cli import options
from acidctl.cli.output import Col, table as render_table
from acidctl.errors import UnsupportedSchema, UsageError

show_app = typer.Typer(
    name="show",
    help="Show transactions, locks, compactions, write-id snapshots and ACID tables from the metastore.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def register(app: typer.Typer) -> None:
    app.add_typer(show_app, name="show")


NO_VAL = " --- "

HiveVersionOpt = options.MetastoreHiveVersion


def _metastore(ctx: typer.Context) -> str:
    from acidctl.metastore.connection import resolve_url

    s = ctx.obj
    return resolve_url(getattr(s, "metastore_url", None), profile=getattr(s, "profile", None))


def fmt_ms(v: Optional[int], *, missing: str = "") -> str:
    """Epoch ms → ``YYYY-MM-DD HH:MM:SS.mmm`` (UTC)."""
    if v is None:
        return missing
    try:
        t = _dt.datetime.fromtimestamp(int(v) / 1000, tz=_dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return str(v)
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{t.microsecond // 1000:03d}"


def _none(v, missing: str) -> str:
    return missing if v is None or v == "" else str(v)


def _require(ctx: typer.Context, db: Optional[str], table: Optional[str], hive_version) -> None:
    """Exit 3 for an unknown database or table (as ``state`` does) instead of an empty result.
    Called only when the result is empty: rows of a table the metastore still records in its
    transaction tables (dropped since, or written by a tool that keeps no TBLS row) are shown."""
    if db:
        from acidctl.metastore.tables import require_exists

        require_exists(_metastore(ctx), db, table, hive_version=hive_version)


def _target(target: Optional[str]) -> tuple[Optional[str], Optional[str], Optional[str]]:
    """DB, DB.TABLE or DB.TABLE/k=v → (db, table, partition)."""
    if not target:
        return None, None, None
    from acidctl.metastore.tables import normalize_partition

    name, _, part = target.partition("/")
    name = name.strip().strip("`")
    if "." in name:
        db, tbl = name.split(".", 1)
        return db.strip("`").lower(), tbl.strip("`").lower(), normalize_partition(part) if part else None
    if part:
        raise UsageError("a partition needs DB.TABLE")
    return name.lower(), None, None


def _partition(target_part: Optional[str], opt: Optional[list[str]], table: Optional[str]) -> Optional[str | list[str]]:
    """The partition filter: DB.TABLE/SPEC's, or every ``--partition`` (repeatable)."""
    from acidctl.metastore.tables import normalize_partition

    if opt:
        if target_part:
            raise UsageError("give the partition either as DB.TABLE/SPEC or with --partition")
        if not table:
            raise UsageError("--partition needs DB.TABLE")
        parts = [normalize_partition(p) or p for p in opt]
        return parts[0] if len(parts) == 1 else parts
    return target_part


# ---------------------------------------------------------------------------------------


@show_app.command("transactions")
def transactions_cmd(
    ctx: typer.Context,
    state: Annotated[
        Optional[list[str]], typer.Option("--state", metavar="open|aborted", help="open or aborted (repeatable).")
    ] = None,
    user: Annotated[
        Optional[str], typer.Option("--user", metavar="USER", help="Only transactions of this user.")
    ] = None,
    older_than: Annotated[
        Optional[str],
        typer.Option(
            "--older-than",
            metavar="AGE",
            help="Only transactions started at least AGE ago (30s, 10m, 2h, 1d), by the database clock.",
        ),
    ] = None,
    limit: Annotated[
        Optional[int], typer.Option("--limit", metavar="N", min=0, help="At most N rows (lowest ids first).")
    ] = None,
    hive_version: HiveVersionOpt = None,
):
    """SHOW TRANSACTIONS: open and aborted transactions (Hive 4: also young id gaps)."""
    from acidctl.durations import parse_age
    from acidctl.metastore.queries import show_transactions

    try:
        rep = show_transactions(
            _metastore(ctx),
            states=state,
            user=user,
            min_age_ms=round(parse_age(older_than) * 1000) if older_than else None,
            limit=limit,
            hive_version=hive_version,
        )
    except UnsupportedSchema:
        if not _is_hive2(ctx):
            raise
        return _hive2_transactions(ctx, state=state, user=user, older_than=older_than, limit=limit)

    def text(r) -> str:
        rows = [
            [
                t["txnid"],
                t["state"],
                fmt_ms(t["startedtime"]),
                fmt_ms(t["lastheartbeattime"]),
                _none(t["user"], ""),
                _none(t["host"], ""),
            ]
            for t in r.transactions
        ]
        return render_table(
            rows,
            [
                Col("Transaction ID", "txnid"),
                Col("Transaction State", "state"),
                Col("Started Time", "startedtime"),
                Col("Last Heartbeat Time", "lastheartbeattime", wide=True),
                Col("User"),
                Col("Hostname", "host"),
            ],
            empty="No transactions.",
        )

    ctx.obj.output.emit(rep.to_dict(), lambda _d: text(rep))


@show_app.command("locks")
def locks_cmd(
    ctx: typer.Context,
    target: Annotated[
        Optional[str], typer.Argument(metavar="[DB[.TABLE]]", help="Only locks on this database or table.")
    ] = None,
    partition: Annotated[
        Optional[list[str]], options.partition_option("Partition, e.g. ds=2024-01-01/hr=1 (repeatable).")
    ] = None,
    txn: Annotated[Optional[int], typer.Option("--txn", metavar="ID", help="Only locks of this transaction.")] = None,
    extended: Annotated[
        bool, typer.Option("--extended", help="Add heartbeat count and the owning transaction's state and heartbeat.")
    ] = False,
    hive_version: HiveVersionOpt = None,
):
    """SHOW LOCKS: Hive's 13 columns, acquired before waiting."""
    from acidctl.metastore.queries import show_locks

    db, tbl, tpart = _target(target)
    part = _partition(tpart, partition, tbl)
    try:
        rep = show_locks(
            _metastore(ctx), db=db, table=tbl, partition=part, txn_id=txn, extended=extended, hive_version=hive_version
        )
    except UnsupportedSchema:
        if not _is_hive2(ctx):
            raise
        raise UsageError(
            "show locks is not supported on Hive 2.3 metastores yet",
            hint="use SHOW LOCKS in Hive 2, or `acidctl show transactions`",
        ) from None
    if not rep.locks:
        _require(ctx, db, tbl, hive_version)

    def text(r) -> str:
        # the default view: what is locked, how and by which transaction; -o wide: Hive's 13
        # columns (and --extended's three)
        cols = [
            Col("Lock ID", "lockid"),
            Col("Database"),
            Col("Table"),
            Col("Partition"),
            Col("State", "lock_state"),
            Col("Blocked By", wide=True),
            Col("Type", "lock_type"),
            Col("Transaction ID"),
            Col("Last Heartbeat", wide=True),
            Col("Acquired At", wide=True),
            Col("User", wide=True),
            Col("Hostname", wide=True),
            Col("Agent Info", wide=True, text=True),
        ]
        if r.extended:
            cols += [Col("Heartbeat Count", wide=True), Col("Txn State"), Col("Txn Last Heartbeat", wide=True)]
        rows = []
        for k in r.locks:
            hb = k["last_heartbeat"]
            row = [
                k["lockid"],
                k["database"],
                _none(k["table"], "NULL"),
                _none(k["partition"], "NULL"),
                k["lock_state"],
                k["blocked_by"] or "",
                k["lock_type"],
                _none(k["transaction_id"], "NULL"),
                fmt_ms(hb) if hb else "0",
                fmt_ms(k["acquired_at"], missing="NULL"),
                k["user"],
                k["hostname"],
                _none(k["agent_info"], "NULL"),
            ]
            if r.extended:
                row += [
                    _none(k["heartbeat_count"], "NULL"),
                    _none(k.get("txn_state"), "NULL"),
                    fmt_ms(k.get("txn_last_heartbeat"), missing="NULL"),
                ]
            rows.append(row)
        return render_table(rows, cols, empty="No locks.")

    ctx.obj.output.emit(rep.to_dict(), lambda _d: text(rep))


@show_app.command("compactions")
def compactions_cmd(
    ctx: typer.Context,
    target: Annotated[
        Optional[str], typer.Argument(metavar="[DB[.TABLE]]", help="Only compactions of this database or table.")
    ] = None,
    partition: Annotated[
        Optional[list[str]], options.partition_option("Partition, e.g. ds=2024-01-01/hr=1 (repeatable).")
    ] = None,
    ctype: Annotated[
        Optional[list[str]],
        typer.Option("--type", metavar="TYPE", help="major, minor, rebalance, abort_txn_cleanup (repeatable)."),
    ] = None,
    state: Annotated[
        Optional[list[str]],
        typer.Option(
            "--state",
            metavar="STATE",
            help="initiated, working, 'ready for cleaning', succeeded, failed, 'did not initiate'/attempted, refused, aborted (repeatable).",
        ),
    ] = None,
    pool: Annotated[
        Optional[str],
        typer.Option(
            "--pool",
            metavar="NAME",
            help="Compaction pool, compared literally as Hive 4 does (rows without a pool show as 'default' but do not match it; Hive 3 has no pools).",
        ),
    ] = None,
    cid: Annotated[Optional[int], typer.Option("--id", metavar="N", help="Only compaction N.")] = None,
    order_by: Annotated[
        Optional[str],
        typer.Option("--order-by", metavar="COLS", help="e.g. 'starttime desc, compactionid' (output column names)."),
    ] = None,
    limit: Annotated[
        Optional[int],
        typer.Option("--limit", metavar="N", min=0, help="At most N rows of the order (0: all, as Hive 4)."),
    ] = None,
    hive_version: HiveVersionOpt = None,
):
    """SHOW COMPACTIONS: queue and history together, with Hive 4's filters (on Hive 3 too)."""
    from acidctl.metastore.queries import show_compactions

    db, tbl, tpart = _target(target)
    part = _partition(tpart, partition, tbl)
    try:
        rep = show_compactions(
            _metastore(ctx),
            db=db,
            table=tbl,
            partition=part,
            types=ctype,
            states=state,
            pool=pool,
            compaction_id=cid,
            order_by=order_by,
            limit=limit,
            hive_version=hive_version,
        )
    except UnsupportedSchema:
        if not _is_hive2(ctx):
            raise
        if pool or cid is not None or order_by:
            raise UsageError("--pool, --id and --order-by do not exist in Hive 2.3 (no compaction id, no pools)")
        return _hive2_compactions(ctx, db=db, table=tbl, partition=part, types=ctype, states=state, limit=limit)
    if not rep.compactions:
        _require(ctx, db, tbl, hive_version)

    def text(r) -> str:
        columns = COMPACTION_COLUMNS[3 if r.hive_version == 3 else 4]
        rows = [[cell(c) for _, cell in columns] for c in r.compactions]
        return render_table(rows, [col for col, _ in columns], empty="No compactions.")

    ctx.obj.output.emit(rep.to_dict(), lambda _d: text(rep))


def _raw(key: str):
    return lambda c: c[key]


def _nv(key: str):
    """NO_VAL for NULL or empty, as Hive's ``ShowCompactionsOperation`` prints missing values."""
    return lambda c: NO_VAL if c[key] is None or c[key] == "" else str(c[key])


def _tv(key: str):
    """A time in ms, NO_VAL for NULL or 0."""
    return lambda c: NO_VAL if not c[key] else fmt_ms(c[key])


def _dur(text: str) -> str:
    """Hive's Duration(ms) cell in acidctl's duration units (NO_VAL stays)."""
    from acidctl.units import duration_ms

    return duration_ms(int(text)) if text.lstrip("-").isdigit() else text


_LEADING = (
    (Col("ID", "compactionid"), _raw("compactionid")),
    (Col("Database", "dbname"), _raw("dbname")),
    (Col("Table", "tabname"), _raw("tabname")),
    (Col("Partition", "partname"), _nv("partname")),
    (Col("Type"), _raw("type")),
    (Col("State", text=True), _raw("state")),  # words ("ready for cleaning"), never a name
)

#: SHOW COMPACTIONS as Hive 3.1 and Hive 4.0 print it (Hive's column names, UPPER CASE; the
#: duration in acidctl's units): (column, cell of a row dict) per column; the default view is the
#: leading six and the start time, ``-o wide`` every column. The JSON key also names the column
#: for ``-o custom-columns``.
COMPACTION_COLUMNS = {
    3: _LEADING
    + (
        (Col("Worker", wide=True), _nv("worker")),
        (Col("Start Time", "starttime"), _tv("starttime")),
        (Col("Duration", wide=True), lambda c: _dur(_nv("duration")(c))),
        (Col("HadoopJobId", wide=True), _nv("hadoopjobid")),
    ),
    4: _LEADING
    + (
        (Col("Worker host", wide=True), _nv("workerhost")),
        (Col("Worker", "workerid", wide=True), _nv("workerid")),
        (Col("Enqueue Time", "enqueuetime", wide=True), _tv("enqueuetime")),
        (Col("Start Time", "starttime"), _tv("starttime")),
        (Col("Duration", wide=True), lambda c: _dur(hive4_duration(c))),
        (Col("HadoopJobId", wide=True), _nv("hadoopjobid")),
        (Col("Error message", "errormessage", wide=True, text=True), _nv("errormessage")),
        (Col("Initiator host", "initiatorhost", wide=True), _nv("initiatorhost")),
        (Col("Initiator", "initiatorid", wide=True), _nv("initiatorid")),
        (Col("Pool name", "poolname", wide=True), _raw("poolname")),
        (Col("TxnId", wide=True), lambda c: zero(c["txnid"])),
        (Col("Next TxnId", "nexttxnid", wide=True), lambda c: zero(c["nexttxnid"])),
        (
            Col("Commit Time", "committime", wide=True),
            lambda c: "0" if c["committime"] is None else fmt_ms(c["committime"]),
        ),
        # Hive 4 fills the response's old highest-*txn*-id field, never the highest write id it
        # prints: the cell is always NO_VAL (JSON has the real value)
        (Col("Highest WriteId", "hightestwriteid", wide=True), lambda c: NO_VAL),
    ),
}


#: states whose rows live in COMPACTION_QUEUE (Hive selects -1 as their end time)
_QUEUE_STATES = {"initiated", "working", "ready for cleaning"}


def zero(v) -> str:
    """Hive 4 reads TxnId / Next TxnId with ``ResultSet.getLong``: NULL prints 0."""
    return "0" if v is None else str(v)


def hive4_duration(c: dict) -> str:
    """Hive 4's Duration(ms) cell: NO_VAL for queue rows, else end - start with a NULL read as 0
    (``getLong``), so an aborted compaction that never started prints its end time."""
    if c["state"] in _QUEUE_STATES and c["endtime"] is None:
        return NO_VAL
    return str((c["endtime"] or 0) - (c["starttime"] or 0))


@show_app.command("tables")
def tables_cmd(
    ctx: typer.Context,
    db: Annotated[
        str,
        typer.Argument(metavar="[DB]", help="Database name or glob (default: every database)."),
    ] = "*",
    table: Annotated[str, typer.Option("--table", metavar="GLOB", help="Only tables matching this glob.")] = "*",
    hive_version: HiveVersionOpt = None,
):
    """The ACID tables (transactional=true) of a database: full ACID or insert-only, partition keys
    and count, buckets, location. `acidctl doctor --db DB` checks them all."""
    from acidctl.metastore.tables import list_acid_tables

    rows = list_acid_tables(_metastore(ctx), db_glob=db, table_glob=table, hive_version=hive_version)

    def text(rs) -> str:
        return render_table(
            [
                [
                    r["table"],
                    "insert-only" if r["kind"] == "insert_only" else "full ACID",
                    ",".join(r["partition_keys"]),
                    r["partitions"] if r["partition_keys"] else "",
                    _none(r["buckets"], ""),
                    _none(r["location"], ""),
                ]
                for r in rs
            ],
            [
                Col("Table"),
                Col("Kind"),
                Col("Partitioned By", "partition_keys"),
                Col("Partitions"),
                Col("Buckets"),
                Col("Location", wide=True),
            ],
            empty="No ACID tables.",
        )

    ctx.obj.output.emit({"tables": rows}, lambda d: text(d["tables"]))


@show_app.command("write-ids")
def write_ids_cmd(
    ctx: typer.Context,
    table: Annotated[str, typer.Argument(metavar="DB.TABLE", help="The table.")],
    each_id: Annotated[
        bool, typer.Option("--each-id", help="One row per open/aborted write id (also with the global -v).")
    ] = False,
    hive_version: HiveVersionOpt = None,
):
    """The table's ValidReaderWriteIdList for a fresh reader, as Hive computes it (a bare TABLE
    means default.TABLE, as in every command)."""
    from acidctl.metastore.snapshot import write_id_report

    from acidctl.metastore.snapshot import split_table_name

    try:
        rep = write_id_report(_metastore(ctx), table, hive_version=hive_version)
    except UnsupportedSchema:
        if not _is_hive2(ctx):
            raise
        return _hive2_write_ids(ctx, table)
    if rep.write_ids.hwm == 0 and not rep.write_ids.exceptions:
        _require(ctx, *split_table_name(table), hive_version)  # no write ever: does the table exist?
    verbose = each_id or bool(getattr(ctx.obj, "verbose", False))

    def text(r) -> str:
        lines = [str(r.write_ids)]
        if verbose:
            lines.append(f"txns: {r.txn_list}")
            rows = []
            for i in r.invalid:
                info = r.txn_info.get(i.txn_id, {})
                rows.append(
                    [i.write_id, i.txn_id, i.state, _none(info.get("user"), ""), fmt_ms(info.get("startedtime"))]
                )
            if rows:
                lines.append("")
                lines.append(
                    render_table(
                        rows,
                        [
                            Col("Write ID", "write_id"),
                            Col("Transaction ID", "txn_id"),
                            Col("State"),
                            Col("User"),
                            Col("Started Time", "startedtime"),
                        ],
                    )
                )
        return "\n".join(lines)

    ctx.obj.output.emit(rep.to_dict(), lambda _d: text(rep))


# -- Hive 2.3 metastores (issue #12 part 2; acidctl.metastore.hive2) ---------------------


def _is_hive2(ctx: typer.Context) -> bool:
    """Whether the metastore that Hive 3/4 detection refused is a Hive 2.x one."""
    from acidctl.metastore.hive2 import is_hive2

    return is_hive2(_metastore(ctx))


def _hive2_transactions(ctx: typer.Context, *, state, user, older_than, limit) -> None:
    """Hive 2.3 SHOW TRANSACTIONS: the same 6 columns; open and aborted TXNS rows ≤ hwm."""
    from acidctl.metastore.hive2 import show_transactions

    if older_than:
        raise UsageError("--older-than is not supported on Hive 2.3 metastores")
    rep = show_transactions(_metastore(ctx))
    want = {x.strip().upper() for x in state or ()}
    rows = [t for t in rep["transactions"] if (not want or t["state"] in want) and (not user or t["user"] == user)]
    rep["transactions"] = rows[:limit] if limit is not None else rows

    def text(d) -> str:
        return render_table(
            [
                [
                    t["txn_id"],
                    t["state"],
                    fmt_ms(t["started_ms"]),
                    fmt_ms(t["last_heartbeat_ms"]),
                    _none(t["user"], ""),
                    _none(t["host"], ""),
                ]
                for t in d["transactions"]
            ],
            [
                Col("Transaction ID", "txn_id"),
                Col("Transaction State", "state"),
                Col("Started Time", "started_ms"),
                Col("Last Heartbeat Time", "last_heartbeat_ms", wide=True),
                Col("User"),
                Col("Hostname", "host"),
            ],
            empty="No transactions.",
        )

    ctx.obj.output.emit(rep, text)


def _hive2_compactions(ctx: typer.Context, *, db, table, partition, types, states, limit) -> None:
    """Hive 2.3 SHOW COMPACTIONS: 9 columns, no CompactionId; missing values ' --- '."""
    from acidctl.metastore.hive2 import show_compactions

    rep = show_compactions(_metastore(ctx))
    tset = {x.strip().upper() for x in types or ()}
    sset = {x.strip().lower() for x in states or ()}
    rows = [
        c
        for c in rep["compactions"]
        if (not db or (c["database"] or "").lower() == db)
        and (not table or (c["table"] or "").lower() == table)
        and (not partition or c["partition"] in ([partition] if isinstance(partition, str) else partition))
        and (not tset or c["type"] in tset)
        and (not sset or c["state"] in sset)
    ]
    rep["compactions"] = rows[:limit] if limit is not None else rows

    def text(d) -> str:
        nv = lambda v: NO_VAL if v is None or v == "" else str(v)  # noqa: E731
        return render_table(
            [
                [
                    c["database"],
                    c["table"],
                    nv(c["partition"]),
                    c["type"],
                    c["state"],
                    nv(c["worker"]),
                    NO_VAL if not c["start_ms"] else fmt_ms(c["start_ms"]),
                    _dur(nv(c["duration_ms"])),
                    nv(c["hadoop_job_id"]),
                ]
                for c in d["compactions"]
            ],
            [
                Col("Database"),
                Col("Table"),
                Col("Partition"),
                Col("Type"),
                Col("State", text=True),
                Col("Worker", wide=True),
                Col("Start Time", "start_ms"),
                Col("Duration", "duration_ms", wide=True),
                Col("HadoopJobId", "hadoop_job_id", wide=True),
            ],
            empty="No compactions.",
        )

    ctx.obj.output.emit(rep, text)


def _hive2_write_ids(ctx: typer.Context, table: str) -> None:
    """Hive 2.3 has no write ids: a table's snapshot is the global ValidTxnList (txn ids)."""
    from acidctl.metastore.hive2 import find_table, txn_list

    url = _metastore(ctx)
    t = find_table(url, table)
    tl = txn_list(url)
    rep = {"hive_version": 2, "table": t.full_name, "txns": str(tl), "write_ids": str(tl.to_write_ids(t.full_name))}
    ctx.obj.output.emit(rep, lambda d: f"{d['txns']}   (Hive 2.3: no write ids; txn ids name the directories)")
