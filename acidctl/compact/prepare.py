"""What one ``compact`` run is, decided from the parsed command line and the resolved target:
the runner's options, the notes, the insert-only context and the metastore registration, as
plain data (:class:`CompactRun`). ``acidctl compact`` parses and renders only (issue 22); the
decisions live here, where ``why``, ``doctor`` and the tests reach them.

The stages, in the order the command always took them (the first error wins, as before):
the snapshot (an assumed one never drives a write unless stated quiescent), the table
(transactional), the insert-only context, the table properties, the partitions, the column
names, the registration, the aborted-txn counts ``--due`` needs, then the options themselves.

No pyarrow, Spark or SQLAlchemy at import time (the CLI imports this lazily anyway).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from acidctl.errors import RefusedError, UsageError
from acidctl.keyvalue import parse_kv

if TYPE_CHECKING:
    from acidctl.compact.runner import CompactOptions


QUIESCENT_NOTE = (
    "--table-is-quiescent: the user stated that the table is quiescent and every write id "
    "in its directory names is committed"
)
NO_AUTO_COMPACTION_NOTE = "no_auto_compaction is set: the Initiator would skip this table; --due compacts anyway"


@dataclasses.dataclass
class CompactArgs:
    """``acidctl compact``'s parsed options (no target, no settings)."""

    mode: str | None = None  # major | minor | None (with due: the Initiator's choice)
    due: bool = False
    partitions: list[str] | None = None  # --partition (the target's own partition goes separately)
    columns: str | None = None  # --columns as typed
    tblproperty: list[str] | None = None  # --tblproperty KEY=VALUE as typed
    file_format: str | None = None
    serde_property: list[str] | None = None
    mm_allow_originals: bool = False
    table_is_quiescent: bool = False
    no_register: bool = False
    visibility_txn: int | None = None
    engine: str = "auto"
    local_max_bytes: int | None = None
    master: str = "local[*]"
    spark_conf: dict | None = None
    break_lock: bool = False
    allow_non_atomic_publish: bool = False
    skip_unreadable_files: bool = False
    dry_run: bool = False


@dataclasses.dataclass
class CompactRun:
    """One prepared run: the runner's options, the notes (shown before the run and kept in the
    report), the insert-only context (None: full-ACID) and the registrar (None: unregistered)."""

    target: Any
    options: CompactOptions
    notes: list[str]
    mm: Any = None
    registrar: Any = None
    no_register: bool = False

    def run(self, progress=None) -> dict:
        """The compaction (its plan with ``dry_run``), registered around it; the report with
        the snapshot's source and the table (and, on a dry run, the queued requests)."""
        from acidctl.compact.register import run_registered

        tfs, kw = self.target.tfs, {"progress": progress, "registrar": self.registrar, "notes": self.notes}
        if self.mm is not None:
            from acidctl.mm.compact import compact_mm_table

            report = run_registered(tfs, self.options, self.mm, compact_fn=compact_mm_table, **kw)
        else:
            report = run_registered(tfs, self.options, **kw)
        return self.finish(report)

    def finish(self, report: dict) -> dict:
        target, info = self.target, self.target.table
        report["snapshot_source"] = target.source
        report["assumed_quiescent"] = target.source == "--assume-committed"
        if info is not None:
            report["table"] = info.full_name
        if self.options.dry_run:
            url = target.metastore
            if info is not None and url is not None and not self.no_register and target.hive_version != 2:
                report["queued_requests"] = queued_requests(url, info.db, info.table)
        return report


def require_real_snapshot(target, *, quiescent: bool, what: str) -> None:
    """An assumed snapshot (``--assume-committed``) never drives a write (issue #9): writing on
    it folds open and aborted write ids as if committed. Refused (exit 2) unless the user states
    with ``--table-is-quiescent`` that the assumption holds."""
    assumed = target.source == "--assume-committed"
    if assumed and not quiescent:
        raise UsageError(
            f"{what} refuses to write on an assumed snapshot (--assume-committed treats every write "
            "id in the directory names as committed, which folds open and aborted writes)",
            hint="give the real snapshot (DB.TABLE with a metastore, or --write-ids), or add "
            "--table-is-quiescent if nothing writes to the table and every write id is committed",
        )
    if quiescent and not assumed:
        raise UsageError("--table-is-quiescent only applies with --assume-committed")


def snapshot_notes(target, *, quiescent: bool) -> list[str]:
    """The snapshot's notes (its assumptions; the user's quiescence statement), after
    :func:`require_real_snapshot`."""
    require_real_snapshot(target, quiescent=quiescent, what="compact")
    notes = [f"ASSUMED: {a}" for a in target.assumptions]
    if target.source == "--assume-committed":
        notes.append(QUIESCENT_NOTE)
    return notes


def check_transactional(info) -> None:
    if info is not None and not info.transactional:
        raise RefusedError(f"{info.full_name} is not a transactional table")


def select_partitions(given: list[str] | None, spec_parts: list[str]) -> list[str]:
    """``--partition`` or the target's own partition (DB.TABLE/SPEC), never both."""
    parts = list(given or [])
    if spec_parts:
        if parts:
            raise UsageError("give the partition either in DB.TABLE/SPEC or with --partition, not both")
        parts = spec_parts
    return parts


def column_names(columns: str | None, info) -> tuple[list[str] | None, bool]:
    """The output's row-struct names and whether they rename ``_colN`` fields only: ``--columns``
    as given, else the metastore's names (files with their own names keep them)."""
    col_list = [c.strip() for c in columns.split(",")] if columns else None
    if col_list is None and info is not None and info.columns:
        return [n for n, _ in info.columns], True
    return col_list, False


def aborted_txn_counts(target, *, due: bool) -> dict | None:
    """The Initiator's third trigger for ``--due`` (more aborted txns than the threshold →
    major): aborted txns per partition from the metastore; None without one (unknown). Hive
    2.3's ``findPotentialCompactions`` counts the aborted txns' components."""
    info, url = target.table, target.metastore
    if not due or info is None or url is None:
        return None
    if target.hive_version == 2:
        from acidctl.metastore.hive2 import aborted_components_by_partition

        return aborted_components_by_partition(url, info.db, info.table)
    from acidctl.metastore.facts import table_facts

    return table_facts(url, info.db, info.table).aborted_txns_by_partition


def prepare_compaction(
    target, args: CompactArgs, *, spec_parts: list[str] | None = None, metastore_configured: bool = False
) -> CompactRun:
    """The run ``acidctl compact`` makes of ``args`` on ``target`` (see the module's stages)."""
    from acidctl.acid.initiator import NO_AUTO_COMPACTION, Thresholds
    from acidctl.compact.register import registration_for
    from acidctl.compact.runner import CompactOptions
    from acidctl.mm.context import mm_context, parse_serde_properties  # insert-only tables (issue #12)

    info = target.table
    notes = snapshot_notes(target, quiescent=args.table_is_quiescent)
    props = dict(target.properties)
    check_transactional(info)
    mm = mm_context(
        target,
        fmt=args.file_format,
        columns=args.columns,
        serde_properties=parse_serde_properties(args.serde_property),
        allow_originals=args.mm_allow_originals,
    )
    props.update(parse_kv(args.tblproperty, "--tblproperty"))
    parts = select_partitions(args.partitions, spec_parts or [])
    col_list, coln_only = column_names(None if mm is not None else args.columns, info)
    reg = registration_for(
        target,
        no_register=args.no_register,
        dry_run=args.dry_run,
        visibility_txn=args.visibility_txn,
        metastore_configured=metastore_configured,
    )
    notes.extend(reg.notes)
    opts = CompactOptions(
        mode=args.mode,
        reader=target.write_ids,
        txns=target.txns,
        hive_version=target.hive_version,
        partitions=parts or None,
        # the whole table (not a DB.TABLE/PART target), from the metastore: no listing needed
        partitioned=bool(info.partition_keys) if info is not None and not info.partition else None,
        due=args.due,
        thresholds=Thresholds.from_table_properties(props),
        aborted_txn_counts=aborted_txn_counts(target, due=args.due),
        insert_only=mm is not None,
        visibility_txn=reg.visibility_txn,
        columns=col_list,
        columns_coln_only=coln_only,
        engine=args.engine,
        local_max_bytes=args.local_max_bytes,
        master=args.master,
        spark_conf=args.spark_conf,
        break_lock=args.break_lock,
        allow_non_atomic_publish=args.allow_non_atomic_publish,
        hidden_until_commit=reg.hidden_until_commit,
        skip_unreadable_files=args.skip_unreadable_files,
        dry_run=args.dry_run,
    )
    if NO_AUTO_COMPACTION in {k.lower() for k in props} and args.due:
        notes.append(NO_AUTO_COMPACTION_NOTE)
    return CompactRun(target, opts, notes, mm=mm, registrar=reg.registrar, no_register=args.no_register)


def queued_requests(url, db: str, table: str) -> dict:
    """The table's initiated or working requests by partition ("" for the table), as SHOW
    COMPACTIONS reads them: what a real run would claim (an initiated request of the same type)
    or be refused by (acidctl.compact.register)."""
    from acidctl.metastore.queries import show_compactions

    rep = show_compactions(url, db=db, table=table, states=["initiated", "working"])
    out: dict = {}
    for c in sorted(rep.compactions, key=lambda c: c["compactionid"]):
        out.setdefault(c["partname"] or "", {"id": c["compactionid"], "type": c["type"], "state": c["state"]})
    return out
