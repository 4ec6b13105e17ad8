"""One ``acidctl migrate`` run: plan (first load or catch-up), one commit, verification.

**First run** (the target has no snapshot recorded by acidctl): the target is created (schema
from :mod:`acidctl.migrate.types`, identity partitioning on the partition columns) and every
partition's snapshot rows are loaded in ONE commit.

**Catch-up** (the target's current snapshot records ``acidctl.source-table`` and
``acidctl.source-write-ids``): another source table → :class:`RefusedError` (exit 6), the target
untouched. NV = the write ids valid now and not valid in the recorded ValidWriteIdList (a write
open at the last run may commit later with a lower id). No NV and no dropped partition → no
commit ("up to date"; also when no NV write left a directory in the table, e.g. a DELETE that
matched nothing: the recorded list then stays, and the next run looks at those ids again). Else,
per partition with a directory that may hold an NV write id:

* full-ACID (Hive 3/4) with ``row__id``: inserts = the snapshot's rows whose ROW__ID write id is in
  NV (only the files that can hold them are read); deletes = the delete events of NV writes on
  rows of earlier writes (originalWriteId ∉ NV), matched by partition + ROW__ID. Where the
  snapshot's base holds NV write ids (a major compaction folded their delete events away, or an
  INSERT OVERWRITE replaced the rows) the partition's ROW__IDs are compared instead with the
  target's (inserts = source − target, deletes = target − source);
* insert-only tables (no ROW__ID): the rows of the NV deltas' files are appended; a partition
  whose base holds NV write ids is replaced;
* Hive 2.3 tables (an update keeps its ROW__ID) and ``--no-row-id`` targets: the partition is
  replaced;
* a run the target commits as files it writes itself (``backend.writes_own_files``: Delta with
  a negative decimal partition value) cannot hold row-level deletes: partitions with deleted
  rows are replaced.

Partitions the source no longer has (dropped) are removed from the target (a whole-table run).
All partitions' changes go into ONE ``backend.commit``, recording the new ValidWriteIdList.

**Verification**: per touched partition, the row count and the order-independent digest
(:mod:`acidctl.migrate.digest`) of the Hive snapshot's rows and of the target's new snapshot
must agree; otherwise the commit is rolled back (``backend.rollback``) and the run fails naming
the partition (:class:`WriteVerificationFailed`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any

from acidctl.errors import RefusedError, UsageError, WriteVerificationFailed
from acidctl.migrate.backend import SOURCE_TABLE_KEY, SOURCE_WRITE_IDS_KEY, Backend, PartitionChange
from acidctl.migrate.source import SourcePartition, SourceTable


@dataclasses.dataclass
class MigrateOptions:
    row_id: bool = True  # False: --no-row-id
    timestamp_precision: str = "error"  # or "us": truncate (--timestamp-precision us)
    dry_run: bool = False
    verify: bool = True
    engine: str = "local"  # local | spark (whole partitions' files written in Spark tasks)
    master: str = "local[*]"
    spark_conf: dict = dataclasses.field(default_factory=dict)
    spark: Any = None  # an existing SparkSession (tests, benches)
    add_files: bool = False  # --add-files: register Hive's Parquet files (acidctl/migrate/addfiles.py)


@dataclasses.dataclass
class _Planned:
    part: SourcePartition | None  # None: a partition Hive no longer has
    key: str
    values: dict[str, Any]
    how: str  # load | rows | compare | replace | drop
    deletes: Any = None  # writeid/bucketid/rowid table
    exclude: Any = None  # compare: the target's row ids (inserts = source − target)


def report_head(src, backend, *, to: str, target_display: str, row_id: bool, opts) -> tuple[dict, Any]:
    """The report's first keys and the target's recorded snapshot (None: a first load), after the
    refusals every kind of run shares (exit 6, target untouched): a target recorded from another
    table, or from a newer snapshot of this one."""
    from acidctl.acid.writeids import WriteIdList

    rec = backend.recorded()
    report: dict[str, Any] = {
        "source": src.name,
        "target": target_display,
        "to": to,
        "write_ids": str(src.snapshot),
        "recorded_write_ids": rec.write_ids if rec else None,
        "mode": "initial" if rec is None else "catch-up",
        "row_id": row_id,
        "dry_run": opts.dry_run,
    }
    if rec is None:
        return report, None
    if rec.source_table.lower() not in {n.lower() for n in (src.name, *src.aliases)}:
        raise RefusedError(
            f"{target_display} was migrated from {rec.source_table}, not {src.name}; it is left untouched",
            hint="choose another --target for this table",
        )
    recorded = WriteIdList.parse(rec.write_ids)
    if recorded.hwm > src.snapshot.hwm:
        raise RefusedError(
            f"{target_display} records a newer snapshot of {src.name} (high-water mark {recorded.hwm}) "
            f"than the one read now ({src.snapshot.hwm}); it is left untouched"
        )
    return report, recorded


def migrate(
    src: SourceTable,
    backend: Backend,
    opts: MigrateOptions,
    *,
    target_display: str,
    to: str,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Run one migration of ``src`` into ``backend``; returns the report (see the CLI)."""
    from acidctl.migrate import addfiles

    if opts.add_files:
        return addfiles.migrate_files(src, backend, opts, target_display=target_display, to=to, progress=progress)
    addfiles.refuse_copy_into(backend, target_display)
    from acidctl.faults import fire
    from acidctl.migrate.source import (
        anti_keys,
        base_covers,
        ensure_columns,
        list_partitions,
        new_write_ids,
        nv_deletes,
        partition_changed,
        source_keys,
    )
    from acidctl.migrate.types import target_schema

    t0 = time.monotonic()
    parts = list_partitions(src)
    try:
        ensure_columns(src, parts)
    except UsageError:
        # a path whose snapshot has no data file (all deleted and compacted): the columns the
        # target was created with, when the backend can tell them
        known = getattr(backend, "table_schema", None)
        have = known() if known is not None else None
        if have is None:
            raise
        pnames = {k for k, _ in src.partition_keys}
        src.columns = [(f.name, f.type) for f in have if f.name != "row__id" and f.name not in pnames]
    row_id = opts.row_id and src.mm is None
    schema = target_schema(
        src.columns, src.partition_keys, row_id=row_id, small_ints=bool(getattr(backend, "small_ints", False))
    )
    pcols = [k for k, _ in src.partition_keys]
    report, recorded = report_head(src, backend, to=to, target_display=target_display, row_id=row_id, opts=opts)
    backend.ensure(schema, pcols, dry_run=opts.dry_run)
    planned: list[_Planned] = []
    nv_arr = None
    if recorded is None:
        planned = [_Planned(p, p.key, p.values, "load") for p in parts]
    else:
        nv = new_write_ids(recorded, src.snapshot)
        report["new_write_ids"] = _ranges(nv)
        hive2 = src.hive_version == 2
        for p in parts:
            if not nv.size or not partition_changed(p, nv):
                continue
            if hive2 or not row_id:
                if src.mm is not None and not base_covers(p, nv):
                    planned.append(_Planned(p, p.key, p.values, "rows"))
                else:
                    planned.append(_Planned(p, p.key, p.values, "replace"))
            elif base_covers(p, nv):
                target_ids = backend.row_ids(p.values)
                deletes = anti_keys(target_ids, source_keys(src, p))
                planned.append(_Planned(p, p.key, p.values, "compare", deletes=deletes, exclude=target_ids))
            else:
                planned.append(_Planned(p, p.key, p.values, "rows", deletes=nv_deletes(src, p, nv)))
        if src.whole_table:
            have = {p.key for p in parts}
            from acidctl.migrate.digest import partition_name

            for values in backend.partitions():
                key = partition_name({k: values.get(k) for k in pcols})
                if key not in have:
                    planned.append(_Planned(None, key, {k: values.get(k) for k in pcols}, "drop"))
        own = getattr(backend, "writes_own_files", None)
        if own is not None and any(own(pl.values) for pl in planned):
            # the target commits this run as files it writes itself (add/remove actions: Delta
            # with a negative decimal partition value), which cannot also hold row-level
            # deletes (a MERGE): partitions with deleted rows are replaced whole instead
            for pl in planned:
                if pl.deletes is not None and pl.deletes.num_rows:
                    pl.how, pl.deletes, pl.exclude = "replace", None, None
        if not planned:  # no NV write id, or none that left a directory in the table: no commit
            report.update(
                up_to_date=True,
                partitions=[],
                committed=None,
                verified=None,
                seconds=round(time.monotonic() - t0, 3),
            )
            return report
        nv_arr = nv
    report["up_to_date"] = False
    report["partitions"] = [
        {
            "partition": pl.key,
            "how": pl.how,
            "delete_rows": int(pl.deletes.num_rows) if pl.deletes is not None else None,
            "rows_added": None,
            "files": _file_count(src, pl),
        }
        for pl in planned
    ]
    if opts.dry_run:
        report.update(committed=None, verified=None, seconds=round(time.monotonic() - t0, 3))
        return report
    digests: dict[str, list] = {}  # hive side of "load": counted as the rows go by
    added: dict[str, int] = {}

    def rows_of(pl: _Planned) -> Iterator:
        from acidctl.migrate.source import partition_rows

        if pl.part is None:
            return
        if pl.how == "load" or pl.how == "replace":
            it = partition_rows(src, pl.part, schema, precision=opts.timestamp_precision)
        elif pl.how == "compare":
            it = partition_rows(src, pl.part, schema, precision=opts.timestamp_precision, exclude=pl.exclude)
        else:
            it = partition_rows(src, pl.part, schema, precision=opts.timestamp_precision, nv=nv_arr)
        tee = opts.verify and pl.how in ("load", "replace")
        for b in it:
            added[pl.key] = added.get(pl.key, 0) + b.num_rows
            if tee:
                digests.setdefault(pl.key, []).append(_digest_one(b, pcols))
            if progress:
                progress(pl.key)
            yield b

    files: dict[str, list[str]] = {}
    spark_keys: set[str] = set()
    if opts.engine == "spark":
        spark_keys = _spark_load(src, backend, schema, pcols, planned, opts, files, digests, added)
    changes = [
        PartitionChange(
            key=pl.key,
            values=pl.values,
            inserts=iter(()) if pl.key in spark_keys else rows_of(pl),
            delete_row_ids=pl.deletes if pl.deletes is not None and pl.deletes.num_rows else None,
            replace=pl.how in ("replace", "drop"),
            files=files.get(pl.key, []),
        )
        for pl in planned
    ]
    report["engine"] = "spark" if spark_keys else "local"  # where the data files were written
    fire("migrate-before-commit", changes)
    properties = {SOURCE_TABLE_KEY: src.name, SOURCE_WRITE_IDS_KEY: str(src.snapshot)}
    committed = backend.commit(changes, properties)
    report["committed"] = committed.to_dict()
    for entry in report["partitions"]:
        entry["rows_added"] = added.get(entry["partition"], 0)
    verified = None
    if opts.verify:
        verified = _verify(src, backend, schema, pcols, planned, committed, digests, opts, target_display)
    report.update(verified=verified, seconds=round(time.monotonic() - t0, 3))
    return report


def _spark_load(src, backend, schema, pcols, planned, opts, files, digests, added) -> set[str]:
    """Whole partitions (load, replace) of an ACID table written in Spark tasks; returns their keys."""
    from acidctl.migrate import sparkload

    target = getattr(backend, "spark_target", None)
    if target is None:
        raise UsageError("--engine spark is not supported for this target")
    whole = [pl for pl in planned if pl.part is not None and pl.how in ("load", "replace")]
    if src.mm is not None or not whole:
        return set()
    if not getattr(backend, "spark_with_row_changes", True) and any(pl.how in ("rows", "compare") for pl in planned):
        return set()  # Delta: row-level changes are one MERGE, which cannot add files written elsewhere
    location, file_schema, codec = target()
    tasks = [
        t
        for pl in whole
        for t in sparkload.plan_tasks(
            src,
            pl.part,
            schema,
            file_schema,
            location,
            precision=opts.timestamp_precision,
            pcols=pcols,
            compression="none" if codec == "uncompressed" else codec,
            directory=getattr(backend, "spark_directory", None),
            storage=backend.spark_storage() if hasattr(backend, "spark_storage") else None,
        )
    ]
    for m in sparkload.run(tasks, master=opts.master, spark_conf=opts.spark_conf, spark=opts.spark):
        if m["path"]:
            files.setdefault(m["key"], []).append(m["path"])
        digests.setdefault(m["key"], []).extend(m["digests"])
        added[m["key"]] = added.get(m["key"], 0) + m["rows"]
    return {pl.key for pl in whole}


def _digest_one(batch, pcols: list[str]):
    from acidctl.migrate.digest import partition_digests

    return partition_digests([batch], pcols)


def _merge(parts: list[dict]) -> dict[str, tuple[int, str]]:
    """Per-batch digests summed (a digest is two sums mod 2**64 and a count)."""
    acc: dict[str, list[int]] = {}
    for d in parts:
        for k, (n, h) in d.items():
            a = acc.setdefault(k, [0, 0, 0])
            a[0] += n
            a[1] = (a[1] + int(h[:16], 16)) % (1 << 64)
            a[2] = (a[2] + int(h[16:], 16)) % (1 << 64)
    return {k: (a[0], f"{a[1]:016x}{a[2]:016x}") for k, a in acc.items()}


def _verify(src, backend, schema, pcols, planned, committed, tee_digests, opts, target_display) -> dict:
    """Row counts and digests of the touched partitions: the Hive snapshot vs the target."""
    from acidctl.migrate.digest import partition_digests
    from acidctl.migrate.source import partition_rows

    touched = {pl.key for pl in planned}
    hive: dict[str, tuple[int, str]] = {}
    for pl in planned:
        if pl.part is None:
            continue
        if pl.how in ("load", "replace"):
            d = _merge(tee_digests.get(pl.key, []))
        else:
            d = partition_digests(partition_rows(src, pl.part, schema, precision=opts.timestamp_precision), pcols)
        hive.update(d)
    scan_some = getattr(backend, "scan_partitions", None)
    if scan_some is not None and pcols and any(pl.how != "load" for pl in planned):
        # a catch-up: only the touched partitions are read back
        batches = scan_some(committed.version, [pl.values for pl in planned])
    else:
        batches = backend.scan(committed.version)
    target = partition_digests(batches, pcols, only=touched)
    empty = (0, None)
    for key in sorted(touched):
        h = hive.get(key, empty)
        t = target.get(key, empty)
        if h[0] == 0 and t[0] == 0:
            continue
        if h != t:
            what = f"{h[0]} rows in Hive, {t[0]} in the target" if h[0] != t[0] else "the rows differ (digest)"
            undo = backend.rollback(committed)
            tail = "the commit was rolled back" if undo is None else f"the commit stays: {undo}"
            if undo is None and getattr(backend, "restored_version", None) is not None:
                tail += f" (by a new Delta commit, version {backend.restored_version})"
            raise WriteVerificationFailed(
                f"migrate verification failed for partition {key or '(table)'} of {target_display}: {what}; {tail}"
            )
    return {"partitions": len(touched), "rows": sum(h[0] for h in hive.values())}


def _file_count(src: SourceTable, pl: _Planned) -> int | None:
    """The source's data files a partition's plan reads (the snapshot's, for --dry-run)."""
    if pl.part is None:
        return 0
    try:
        if src.mm is not None:
            from acidctl.mm.read import read_plan

            return len(read_plan(pl.part.listing, pl.part.state, allow_originals=src.mm.allow_originals))
        from acidctl.acid.sourceplan import plan_sources

        ins, dels = plan_sources(src.tfs, pl.part.listing, pl.part.state)
        return len(ins) + len(dels)
    except Exception:  # a count for the report only
        return None


def _ranges(ids) -> str:
    """``1-3,7`` for the sorted ids."""
    out: list[str] = []
    start = prev = -2
    for w in (int(x) for x in ids):
        if start == -2:
            start = prev = w
        elif w == prev + 1:
            prev = w
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = w
    if start != -2:
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ",".join(out)


def check_engine(engine: str) -> str:
    """``auto`` and ``local`` run in this process (streamed, bounded memory); ``spark`` writes
    whole partitions' data files in Spark tasks (one per partition × bucket) and commits once
    from the driver."""
    e = (engine or "auto").lower()
    if e not in ("auto", "local", "spark"):
        raise UsageError(f"--engine must be auto, local or spark, not {engine!r}")
    return "spark" if e == "spark" else "local"


def make_backend(
    to: str,
    target: str,
    *,
    catalog: str | None = None,
    catalog_name: str = "acidctl",
    catalog_properties: dict[str, str] | None = None,
    warehouse: str | None = None,
    fs_options: dict | None = None,
    table_properties: dict[str, str] | None = None,
    delta_timestamp: str | None = None,
    dry_run: bool = False,
) -> Backend:
    """The target of ``--to iceberg|delta`` (each format's library imported only here)."""
    if to != "delta" and delta_timestamp:
        raise UsageError("--delta-timestamp is for --to delta")
    if to == "iceberg":
        from acidctl.migrate.iceberg import IcebergBackend, check_available

        check_available()
        if not catalog and not (catalog_properties or {}).get("uri"):
            raise UsageError(
                "--to iceberg needs --catalog URI", hint="e.g. --catalog sqlite:////abs/catalog.db --warehouse DIR"
            )
        return IcebergBackend(
            catalog or (catalog_properties or {})["uri"],
            target,
            catalog_name=catalog_name,
            properties=catalog_properties,
            warehouse=warehouse,
            table_properties=table_properties,
            dry_run=dry_run,
        )
    if to == "delta":
        if catalog or warehouse or catalog_properties or table_properties:
            raise UsageError(
                "--catalog, --catalog-property, --warehouse and --table-property are for --to iceberg; "
                "Delta's --target is a path"
            )
        try:
            import deltalake  # noqa: F401
        except ImportError as e:
            from acidctl.errors import MissingExtra

            raise MissingExtra(
                f"migrate --to delta needs deltalake ({e})", hint="pip install 'acidctl[delta]'"
            ) from None
        from acidctl.migrate.delta import DeltaBackend

        return DeltaBackend(target, dict(fs_options or {}), timestamp=delta_timestamp or "ntz")
    raise UsageError(f"--to must be iceberg or delta, not {to!r}")
