"""``acidctl dump``: rows of ACID ORC files as FileDump JSON lines, or their metadata."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from acidctl.cli import options


def register(app: typer.Typer) -> None:
    app.command("dump")(dump_command)


# dump_command's options (declared here so that the command reads as its grammar)
_Paths = Annotated[
    list[str],
    typer.Argument(
        metavar="FILE|DIR...",
        help="ORC files, or table/partition directories (walked in reader order); with --merged also DB.TABLE[/key=value] from the metastore (with a metastore configured, a bare NAME that is not a path means default.NAME).",
    ),
]
_Meta = Annotated[
    bool,
    typer.Option(
        "--meta",
        help="Print file metadata (stripes, schema, statistics, user metadata) and run the ACID checks instead of rows.",
    ),
]
_Columns = Annotated[
    Optional[str],
    typer.Option(
        "--columns",
        metavar="COL,...",
        help=(
            "Only these columns of `row` (top-level columns for original files), named in any case as Hive "
            "names are; for insert-only data given as a path, name:type,... is the table's schema instead."
        ),
    ),
]
_DecodeBucket = Annotated[
    bool,
    typer.Option("--decode-bucket", help="Add bucketDecoded {version, bucketId, statementId} to every ACID row."),
]
_Operation = Annotated[
    Optional[list[str]],
    typer.Option("--operation", metavar="insert|update|delete", help="Only events of this operation (repeatable)."),
]
_RowId = Annotated[
    Optional[list[str]],
    typer.Option(
        "--row-id",
        metavar="WRITEID,BUCKET,ROWID",
        help="Only the events with this row id (repeatable); BUCKET is the encoded property, e.g. 536870912.",
    ),
]
_WithPath = Annotated[
    Optional[bool],
    typer.Option(
        "--with-path/--no-path",
        help='Prefix each row with "_path" (default: on when more than one file is dumped).',
    ),
]
_RequireAcid = Annotated[bool, typer.Option("--require-acid", help="Fail (exit 7) on a file without the ACID schema.")]
_Merged = Annotated[
    bool,
    typer.Option(
        "--merged",
        help="Print the table's current rows as a Hive reader sees them, each with its row__id (PATH is a table or partition directory).",
    ),
]
_Count = Annotated[
    bool,
    typer.Option(
        "--count",
        help="With --merged: count the rows a reader sees, per partition and bucket and in total, instead of printing them (streamed; nothing rendered).",
    ),
]
_AsOf = Annotated[
    Optional[int],
    typer.Option("--as-of", metavar="WRITEID", help="With --merged: read the snapshot as it was after this write id."),
]
_FileFormat = Annotated[
    Optional[str],
    options.mm_format_option(
        "Insert-only data: the files' format (a path given with --merged is then an insert-only table; DB.TABLE takes it from the metastore). With --columns name:type,... for text."
    ),
]
_SerdeProperty = Annotated[
    Optional[list[str]],
    options.serde_property_option(
        "With --format text: a LazySimpleSerDe property (field.delim, escape.delim, serialization.null.format, ...), repeatable."
    ),
]


def dump_command(
    ctx: typer.Context,
    paths: _Paths,
    meta: _Meta = False,
    limit: Annotated[
        Optional[int], typer.Option("--limit", "-n", metavar="N", min=0, help="Stop after N rows in total.")
    ] = None,
    columns: _Columns = None,
    decode_bucket: _DecodeBucket = False,
    operation: _Operation = None,
    row_id: _RowId = None,
    with_path: _WithPath = None,
    require_acid: _RequireAcid = False,
    merged: _Merged = False,
    count: _Count = False,
    write_ids: options.WriteIds = None,
    assume_committed: options.AssumeCommitted = False,
    txns: options.Txns = None,
    hive_version: options.HiveVersion = None,
    as_of: _AsOf = None,
    file_format: _FileFormat = None,
    serde_property: _SerdeProperty = None,
    mm_allow_originals: options.MMAllowOriginals = False,
):
    """Print ORC rows as JSON lines, exactly as `hive --orcfiledump -d` / `orc-tools data` do.

    Text mode (default) frames each file as FileDump does (a line of 120 underscores and an
    empty line after its rows); `-o json` prints bare JSON lines. With --meta, prints
    metadata and findings; exit code 4 when a check fails with severity error. The snapshot
    options (--write-ids, --assume-committed, --txns, --hive-version) apply with --merged.
    With --merged a target may also be DB.TABLE[/k=v], or a bare NAME (= default.NAME) when a
    metastore is configured; an existing path always wins. --count counts instead of printing.
    """
    from acidctl.errors import UsageError

    settings = ctx.obj
    out = settings.output
    if meta:
        from acidctl.cli.meta_view import run_meta

        run_meta(settings, paths)
        return
    if count and not merged:
        raise UsageError("--count needs --merged (it counts the rows a reader sees)")
    if count and limit is not None:
        raise UsageError("--count counts every row: drop --limit")
    if merged and columns and ":" not in columns:
        # a reader's rows come whole: --columns NAME,... picks columns of ORC files' events only
        # (with --merged it is an insert-only table's name:type schema), so say so, not ignore it
        raise UsageError(
            "--columns NAME,... picks columns of the files' rows, not of --merged rows (with --merged "
            "it gives a path's insert-only schema as name:type,...); use -o json and jq, or export"
        )
    if not count:
        out.rows_only(
            "dump --merged" if merged else "dump",
            hint="--count prints a table of counts; pick fields with jq"
            if merged
            else "--columns NAME,... narrows the rows",
        )
    if merged:
        # each target resolved lazily, one at a time, by whichever of the two reads runs
        reads = _merged_targets(
            settings,
            paths,
            write_ids=write_ids,
            assume_committed=assume_committed,
            txns=txns,
            hive_version=hive_version,
            as_of=as_of,
            file_format=file_format,
            columns=columns,
            serde_property=serde_property,
            mm_allow_originals=mm_allow_originals,
        )
        if count:
            _count(settings, reads)
        else:
            _merged(settings, reads, limit=limit)
        return
    if mm_allow_originals:
        raise UsageError("--mm-allow-originals applies to --merged reads of insert-only tables")
    if file_format or serde_property or (columns and ":" in columns):
        from acidctl.mm.plain import dump_paths  # insert-only data files (issue #12)

        for chunk in dump_paths(
            settings,
            paths,
            file_format=file_format,
            columns=columns,
            serde_property=serde_property,
            limit=limit,
            with_path=with_path,
            framing=not out.json,
        ):
            out.write_bytes(chunk)
        return
    _dump_files(
        settings,
        paths,
        limit=limit,
        columns=columns,
        decode_bucket=decode_bucket,
        operation=operation,
        row_id=row_id,
        with_path=with_path,
        require_acid=require_acid,
    )


def _dump_files(
    settings, paths, *, limit, columns, decode_bucket: bool, operation, row_id, with_path, require_acid: bool
) -> None:
    """The rows of ORC files (a directory: its data files in reader order), FileDump's way; a bad
    file is reported at once and the dump goes on, the exit code says it."""
    from acidctl.acid.datafiles import list_data_files
    from acidctl.dump import OPERATIONS, DumpOptions, dump, parse_row_id
    from acidctl.errors import InvalidInputError, UsageError

    out = settings.output
    ops = None
    if operation:
        try:
            ops = {OPERATIONS[o.lower()] for o in operation}
        except KeyError as e:
            raise UsageError(f"--operation must be insert, update or delete, not {e.args[0]!r}") from None
    opts = DumpOptions(
        limit=limit,
        columns=[c.strip() for c in columns.split(",") if c.strip()] if columns else None,
        decode_bucket=decode_bucket,
        operations=ops,
        row_ids=[parse_row_id(r) for r in row_id] if row_id else None,
        require_acid=require_acid,
    )
    targets = []
    for p in paths:
        tfs = settings.table_fs(p)
        targets.append((tfs, tfs.root, tfs.info(tfs.root).is_dir))
    if with_path is None:
        many = len(targets) > 1 or any(is_dir and len(list_data_files(t, r)) > 1 for t, r, is_dir in targets)
        opts.with_path = many
    else:
        opts.with_path = with_path
    budget = [limit] if limit is not None else None
    errors: list = []

    def bad_file(e) -> None:  # reported at once; the dump goes on, the exit code says it
        out.error(e)
        errors.append(e)

    for tfs, root, _ in targets:
        try:
            for chunk in dump(tfs, root, opts, framing=not out.json, budget=budget, on_error=bad_file):
                out.write_bytes(chunk)
        except InvalidInputError as e:  # nothing to dump under one of several roots
            if len(targets) == 1:
                raise
            bad_file(e)
    if errors:
        raise typer.Exit(int(errors[0].exit_code))


def _merged_targets(
    settings,
    paths,
    *,
    write_ids,
    assume_committed,
    txns,
    hive_version,
    as_of,
    file_format,
    columns,
    serde_property,
    mm_allow_originals: bool,
):
    """Each target of ``dump --merged`` (rows or ``--count``) resolved once: ``(target, the
    snapshot as of --as-of, the partition named by DB.TABLE/PART, the insert-only context or
    None)``."""
    from acidctl.cli.targets import resolve, snapshot_as_of
    from acidctl.mm.context import mm_context, parse_serde_properties

    for p in paths:
        target = resolve(
            settings,
            p,
            warn_assumptions=True,
            write_ids=write_ids,
            assume_committed=assume_committed,
            txns=txns,
            hive_version=hive_version,
        )
        mm = mm_context(
            target,
            fmt=file_format,
            columns=columns,
            serde_properties=parse_serde_properties(serde_property),
            allow_originals=mm_allow_originals,
        )
        yield target, snapshot_as_of(target, as_of), getattr(target.table, "partition", None), mm


def _merged(settings, targets, *, limit):
    from acidctl.cli.progress import StatusLine, progress_stream
    from acidctl.errors import InvalidInputError
    from acidctl.merged import merged_rows

    budget = [limit] if limit is not None else None
    err = progress_stream(settings, rows_on_stdout=True)
    for target, snapshot, partition, mm in targets:
        left = None if budget is None else budget[0]
        if mm is not None:  # insert-only table: plain rows, no row__id (acidctl.mm.read)
            from acidctl.mm.read import merged_rows as mm_rows

            chunks = mm_rows(
                target.tfs,
                snapshot,
                mm,
                txns=target.txns,
                hive_version=target.hive_version,
                limit=left,
                partition=partition,
                allow_originals=mm.allow_originals,
            )
        else:
            chunks = merged_rows(
                target.tfs,
                snapshot,
                txns=target.txns,
                hive_version=target.hive_version,
                limit=left,
                partition=partition,
            )
        status = StatusLine(err, f"acidctl: dump --merged {target.display}") if err is not None else None
        rows = 0
        counting = budget is not None or status is not None  # else rows are not counted (6 % of a run)
        try:
            for chunk in chunks:
                settings.output.write_bytes(chunk)  # a view of the rendered rows, not copied
                if not counting:
                    continue
                n = bytes(chunk).count(b"\n")
                rows += n
                if budget is not None:
                    budget[0] -= n
                if status is not None:
                    status.update(f"{rows:,} rows")
        except InvalidInputError as e:
            # the insert-only hint is for a path only: the metastore already said what DB.TABLE is
            if mm is not None or getattr(e, "hint", None) or target.table is not None:
                raise
            raise type(e)(
                str(e),
                hint="an insert-only table keeps plain data files: give --format "
                "orc|parquet|avro|text (and --columns name:type,...), or DB.TABLE "
                "with a metastore",
            ) from None
        finally:
            if status is not None:
                status.done()
        if budget is not None and budget[0] <= 0:
            return


def _count(settings, targets):
    """``dump --merged --count``: the rows of each target counted per partition and bucket
    (acidctl.merged.merged_counts), one document for all targets."""
    from acidctl.cli.progress import StatusLine, progress_stream
    from acidctl.merged import count_summary, merged_counts

    err = progress_stream(settings)
    docs = []
    for target, snapshot, partition, mm in targets:
        status = StatusLine(err, f"acidctl: dump --merged --count {target.display}") if err is not None else None
        counted = [0]  # rows of the partitions finished

        def progress(rec, i, n, status=status, counted=counted):
            if status is not None:
                status.update(f"partition {i + 1}/{n}, {counted[0] + rec.rows:,} rows")

        kw = dict(txns=target.txns, hive_version=target.hive_version, partition=partition, progress=progress)
        if mm is not None:
            from acidctl.mm.read import merged_counts as mm_counts

            records = mm_counts(target.tfs, snapshot, mm, allow_originals=mm.allow_originals, **kw)
        else:
            records = merged_counts(target.tfs, snapshot, **kw)
        recs = []
        try:
            for rec in records:
                recs.append(rec)
                counted[0] += rec.rows
        finally:
            if status is not None:
                status.done()
        docs.append(
            {
                "path": target.display,
                "table": target.table.full_name if target.table is not None else None,
                "write_ids": str(snapshot),
                "snapshot_source": target.source,
                **count_summary(recs),
            }
        )
    settings.output.emit({"rows": sum(d["rows"] for d in docs), "targets": docs}, render_count)


def render_count(doc: dict) -> str:
    from acidctl.cli.output import Col, table, wrap
    from acidctl.units import noun, plural

    out = []
    for t in doc["targets"]:
        out.append(wrap(f"acidctl dump --merged --count {t['path']}  (snapshot {t['write_ids']})"))
        rows = []
        for p in t["partitions"]:
            name = p["partition"] or "(table)"
            for b in p["buckets"]:
                rows.append([name, "-" if b["bucket"] is None else b["bucket"], f"{b['rows']:,}"])
            if len(p["buckets"]) != 1:
                rows.append([name, "all", f"{p['rows']:,}"])
        out.append(table(rows, [Col("Partition"), Col("Bucket"), Col("Rows")], empty="No rows."))
        rows_total = f"{t['rows']:,} {noun(t['rows'], 'row')}"
        out.append(f"total: {rows_total} in {plural(len(t['partitions']), 'partition')}")
    if len(doc["targets"]) > 1:
        out.append(f"all: {doc['rows']:,} {noun(doc['rows'], 'row')}")
    return "\n".join(out)
