"""``acidctl clean TABLE``: what Hive's Cleaner would remove, plus acidctl's own leftovers.

Dry run by default: prints every candidate with the reason and what would happen to it;
``--execute`` deletes (and finishes publications a crash interrupted). ``--min-age`` keeps
anything obsolete for less than that long (default 1h, like Hive's retention).

JSON document: ``path``, ``hive_version``, ``write_ids``, ``min_age_seconds``, ``executed``,
``items`` (partition, path, kind [base|delta|delete_delta|original|staging|stale-lock|
interrupted-publish], reason, age_seconds, bytes, is_dir, action [delete|complete|keep (younger
than --min-age)|keep (held back)|...]), ``deleted``/``completed`` (with --execute), ``notes``,
``summary``, ``skipped_partitions`` (snapshot unreadable). For DB.TABLE with a metastore also ``compactions`` (the table's ``ready for
cleaning`` requests: cq_id, partition, type, highest_write_id, txn_id, next_txn_id, held_by
[{kind: lock|open-txn|young-txn|min-history-level|min-history-write-id|retention|
earlier-request|compactor-txn-open|compactor-txn-aborted, txn_id, lock_id, message, ...}],
action [mark cleaned|marked cleaned|held back|stays ready for cleaning|already finished], reason, state,
[mark_cleaned]), ``metastore_writes`` and, after markCleaned, ``aborted_txns_removed``.

A registered request is finished (Hive's markCleaned, history ``succeeded``) only when nothing
holds it back (Hive 3: locks on its partition; Hive 4: open txns below CQ_NEXT_TXN_ID,
MIN_HISTORY_LEVEL, retention) and nothing obsolete is left in its partition; held back, its
partition's obsolete data is kept.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from acidctl.cli.targets import TABLE_RULE

from acidctl.cli import options
from acidctl.cli.commands import Commands
from acidctl.units import plural

app = Commands()  # main calls register(app)
register = app.register


# clean_command's options (declared here so that the command reads as its grammar)
_Table = Annotated[
    str,
    options.table_argument("Table or partition directory, or DB.TABLE[/k=v] looked up in the metastore. " + TABLE_RULE),
]
_Partition = Annotated[Optional[list[str]], options.partition_option("Clean only this partition (repeatable).")]
_MinAge = Annotated[
    str,
    typer.Option("--min-age", metavar="AGE", help="Keep anything obsolete for less than AGE (0, 30s, 10m, 1h, 2d)."),
]
_WriteIds = Annotated[
    Optional[str],
    options.write_ids_option("The reader's ValidWriteIdList; nothing it (or the compactor list) reads is removed."),
]
_Txns = Annotated[
    Optional[str],
    options.txns_option(
        "Hive 4 ValidTxnList for _vM visibility; with --hive-version 2 the snapshot (Hive 2's ValidTxnList)."
    ),
]
_HiveVersion = Annotated[
    Optional[int],
    options.hive_version_option(
        "Cleaner rules: 3 (default), 4 (also every aborted directory) or 2 (Hive 2.3: as 3, txn ids)."
    ),
]
_Trash = Annotated[
    Optional[str],
    typer.Option(
        "--trash",
        metavar="DIR|hdfs",
        help="Move obsolete directories and files under DIR (their full path kept below it) instead of deleting them; 'hdfs' uses Hadoop's trash (/user/<user>/.Trash/Current). Same filesystem as the table.",
    ),
]
_TableIsQuiescent = Annotated[
    bool,
    typer.Option(
        "--table-is-quiescent",
        help="With --assume-committed and --execute: state that nothing writes to the table and every write id in its directory names is committed.",
    ),
]
_MinHistoryWriteId = Annotated[
    bool,
    typer.Option(
        "--min-history-write-id",
        help="Hive 4 with metastore.txn.use.minhistorywriteid=true: a registered compaction waits for the table's MIN_HISTORY_WRITE_ID instead of the global min open txn.",
    ),
]
_QuarantineAboveHwm = Annotated[
    bool,
    typer.Option(
        "--quarantine-above-hwm",
        help="Instead of cleaning: move directories whose write ids are all above the table's high-water mark (NEXT_WRITE_ID - 1; never allocated, invisible to readers) under --trash DIR or the table's hidden .acidctl-quarantine/, each with a JSON record. Needs DB.TABLE with a metastore.",
    ),
]


@app.command(
    "clean",
    help="Remove obsolete and covered aborted directories (as Hive's Cleaner does) and acidctl's "
    "leftovers (.acidctl-staging-*, stale lock). Dry run unless --execute (--dry-run wins). " + TABLE_RULE,
)
def clean_command(
    ctx: typer.Context,
    table: _Table,
    partition: _Partition = None,
    execute: Annotated[bool, options.execute_option("Delete (default: only print the plan).")] = False,
    dry_run: options.DryRun = False,
    min_age: _MinAge = "1h",
    write_ids: _WriteIds = None,
    assume_committed: options.AssumeCommittedOffline = False,
    txns: _Txns = None,
    hive_version: _HiveVersion = None,
    trash: _Trash = None,
    table_is_quiescent: _TableIsQuiescent = False,
    file_format: Annotated[Optional[str], options.mm_format_option()] = None,
    serde_property: Annotated[Optional[list[str]], options.serde_property_option()] = None,
    min_history_write_id: _MinHistoryWriteId = False,
    mm_allow_originals: options.MMAllowOriginals = False,
    quarantine_above_hwm: _QuarantineAboveHwm = False,
):
    from acidctl.cli.compact_cmd import resolve
    from acidctl.compact.prepare import require_real_snapshot
    from acidctl.compact.clean import clean_target
    from acidctl.durations import parse_age

    settings = ctx.obj
    age = parse_age(min_age)
    target, parts = resolve(
        settings, table, write_ids=write_ids, assume_committed=assume_committed, txns=txns, hive_version=hive_version
    )
    if partition:
        if parts:
            from acidctl.errors import UsageError

            raise UsageError("give the partition either in DB.TABLE/SPEC or with --partition, not both")
        from acidctl.errors import PathNotFound
        from acidctl.fs import join_path

        parts = [p.strip("/") for p in partition]
        for p in parts:
            if not target.tfs.exists(join_path(target.tfs.root, p)):
                raise PathNotFound(f"no partition {p} in {target.tfs.display(target.tfs.root)}")
    if execute:  # also with --dry-run: it refuses what the real run would refuse
        require_real_snapshot(target, quiescent=table_is_quiescent, what="clean --execute")
    execute = execute and not dry_run
    notes = [f"ASSUMED: {a}" for a in target.assumptions]
    for n in notes:
        settings.output.note(n)
    from acidctl.mm.context import mm_context, parse_serde_properties  # insert-only tables (issue #12)

    mm = mm_context(
        target,
        fmt=file_format,
        serde_properties=parse_serde_properties(serde_property),
        allow_originals=mm_allow_originals,
    )
    report = clean_target(
        target,
        partitions=set(parts) if parts else None,
        min_age=age,
        execute=execute,
        trash=trash,
        insert_only=mm,
        quarantine=quarantine_above_hwm,
        use_min_history_write_id=min_history_write_id,
        notes=notes,
    )
    settings.output.emit(report, render_text, performed=True)


def render_text(report: dict) -> str:
    from acidctl.cli.output import Col, table, wrap
    from acidctl.units import duration, size

    verb = "move" if report.get("quarantine") is not None else "delete"
    head = "acidctl clean" + ("" if report["executed"] else f" (dry run; --execute to {verb})")
    lines = [
        wrap(f"{head} {report['path']}"),
        wrap(f"write ids: {report['write_ids']}   min age: {duration(report['min_age_seconds'])}"),
    ]
    for n in report["notes"]:
        lines.append(wrap(f"note: {n}"))
    root = report["path"].rstrip("/") + "/"

    def rel(path: str) -> str:  # under the table named in the heading (JSON keeps full paths)
        return path[len(root) :] if path.startswith(root) else path

    if report["items"]:
        import posixpath

        # one table per partition directory (headed by it), each path under it: a partition
        # spec plus a directory name would leave too little of 80 columns for the reason
        groups: dict[str, list] = {}
        for i in report["items"]:
            r = rel(i["path"])
            part, name = posixpath.split(r) if not posixpath.isabs(r) else ("", r)
            groups.setdefault(part, []).append(
                [i["action"], i["kind"], name, duration(i["age_seconds"]), size(i["bytes"]), i["reason"]]
            )
        cols = [
            Col("Action", text=True),  # words ("keep (held back)"), never a name
            Col("Kind", wide=True),
            Col("Path"),
            Col("Age", "age_seconds", wide=True),
            Col("Size", "bytes", wide=True),
            Col("Reason", text=True),
        ]
        for part, rows in groups.items():
            if part or len(groups) > 1:
                lines.append(f"== {part or '(table)'}/")
            lines.append(table(rows, cols))
    else:
        lines.append("nothing to clean")
    s = report["summary"]
    if report.get("trash"):
        lines.append(wrap(f"trash: {report['trash']}"))
    for i in report.get("items", []):
        if i.get("trashed_to"):
            lines.append(wrap(f"moved {i['path']} -> {i['trashed_to']}"))
    if report.get("compactions"):
        rows = [
            [c["cq_id"], c["partition"] or "(table)", c["type"], c["highest_write_id"], c["action"], c["reason"]]
            for c in report["compactions"]
        ]
        requests = table(
            rows,
            # Hive 2.3 records a txn id there (CQ_HIGHEST_TXN_ID): name it so
            [
                Col("ID", "cq_id"),
                Col("Partition"),
                Col("Type"),
                Col(
                    "Highest TxnId" if report.get("hive_version") == 2 else "Highest WriteId",
                    "highest_write_id",
                ),
                Col("Action", text=True),  # words ("stays ready for cleaning"), never a name
                Col("Reason", text=True),
            ],
        )
        if requests:  # -o custom-columns may leave the table out, and its title with it
            lines += ["compaction requests (ready for cleaning):", requests]
    if report.get("quarantine") is not None:
        verb = "moved" if report["executed"] else "would move"
        lines.append(
            f"{verb} {plural(s['trash'], 'directory')} to {report['quarantine']}; {s['kept_unsafe']} kept (see REASON)"
        )
        return "\n".join(lines)
    verb = "deleted" if report["executed"] else "would delete"
    if s.get("bytes_by_kind"):
        lines.append("bytes by kind: " + ", ".join(f"{k} {size(v)}" for k, v in sorted(s["bytes_by_kind"].items())))
    moved = (
        f", {'moved' if report['executed'] else 'would move'} {s.get('trash', 0)} to trash"
        if report.get("trash")
        else ""
    )
    lines.append(
        wrap(
            f"{verb} {plural(s['delete'], 'path')}{moved} ({size(s['bytes'])}); {s['kept_young']} kept (younger than --min-age); "
            f"{plural(s['complete'], 'interrupted publication')} to finish"
            + (f"; {s['kept_unsafe']} kept for safety (see REASON)" if s.get("kept_unsafe") else "")
        )
    )
    return "\n".join(lines)
