"""Compaction of insert-only tables as Hive does it (../shared/spec/insert-only-and-hive2.md A.6):
the rows of the base and the current deltas (compactor write-id list: aborted ids skipped, open
ones never folded) rewritten in the table's format, compression and SerDe properties.

* major, Hive 3: ``base_<compactor hwm>/000000_0`` + ``_metadata_acid`` (``CompactorMR.runMmCompaction``);
* major, Hive 4: ``base_<hwm>_v<compactor txn>/000000_0`` (``MmMajorQueryCompactor``), no marker;
* minor, Hive 4: the current deltas → ``delta_<min>_<hwm>_v<compactor txn>/000000_0``
  (``MmMinorQueryCompactor``); Hive 3 has no MM minor compaction (its minor request only deletes
  aborted deltas, which ``acidctl clean`` does here);
* file names as Hive's INSERT writes them: ``000000_0`` plus the codec extension for compressed text.

Aborted deltas are never read (their rows are dropped); they become obsolete under the new base
and ``clean`` removes them. Publication reuses :mod:`acidctl.compact.publish` (staged under a
hidden directory, verified, one rename; Hive 4 output stays hidden until its compactor txn
commits) and the nothing-lost rule of :mod:`acidctl.compact.coverage`: every reader-visible file
of what becomes obsolete was read, or the run refuses (files in the partition root — invisible
to Hive while ``hive.mm.allow.originals=false`` — included). Before publishing, the rows a
reader sees after the compaction (new output + what stays) are compared with the rows it sees
before, as a multiset of rendered rows.

Each partition is one task: on Spark (one application, one job for all partitions, the default)
or in-process with ``--engine local``.
"""

from __future__ import annotations

import dataclasses
import re
import time
import uuid

from acidctl.acid.acidstate import Kind, get_acid_state
from acidctl.acid.listing import ChildEntry, DirListing, FileInfo
from acidctl.acid.dirname import METADATA_FILE, is_hidden
from acidctl.compact import naming
from acidctl.compact import publish as pub
from acidctl.compact.report import finish_report, partition_record
from acidctl.compact.planner import (
    MAJOR,
    MINOR,
    METADATA_ACID,
    STAGING_PREFIX,
    OutputDir,
    PartitionPlan,
    output_visibility,
    refusal_error,
    valid_txns_with,
)
from acidctl.errors import InvalidAcidLayout, RefusedError, UsageError, WriteVerificationFailed
from acidctl.mm.read import MMFile, dir_files, read_plan
from acidctl.fs import join_path
from acidctl.units import plural

DATA_FILE = "000000_0"
#: how Hive names the file of a bucket (task id = bucket id): ``00000B_0``, with ``_copy_N``
#: after a name clash and an extension for compressed text or a merge (derived from
#: ``Utilities.getBucketIdFromFile`` / ``FileSinkOperator``; spec A.4)
BUCKET_FILE = re.compile(r"(\d+)_\d+(?:_copy_\d+)?(?:\..*)?")


def _bucket_or_minus_one(name: str) -> int:
    b = bucket_of(name)
    return -1 if b is None else b


def bucket_of(name: str) -> int | None:
    """The bucket a bucketed MM table's data file holds (its task id), None for another name."""
    m = BUCKET_FILE.fullmatch(name.rsplit("/", 1)[-1])
    return int(m.group(1)) if m else None


@dataclasses.dataclass
class MMWork:
    """What one partition's MM compaction reads and writes (kept beside the PartitionPlan)."""

    files: list[MMFile]
    output: OutputDir
    file_name: str = DATA_FILE
    aborted_dropped: list[str] = dataclasses.field(default_factory=list)
    verify_old: list[MMFile] = dataclasses.field(default_factory=list)
    verify_new: list[MMFile] = dataclasses.field(default_factory=list)
    #: bucketed table: the bucket count (one output file per bucket); 0 = unbucketed
    buckets: int = 0
    #: hive.mm.allow.originals=true (the reader's view includes originals while no base exists)
    allow_originals: bool = False


def check_table(ctx, *, mode: str, hive_version: int) -> None:
    """Refusals that hold for the whole table."""
    st = ctx.storage
    if st.bucket_count and st.bucket_count > 0:
        if st.sort_columns is None:
            raise RefusedError(
                f"bucketed insert-only table ({st.bucket_count} buckets) whose sort columns the metastore "
                "does not give (no SORT_COLS): Hive's compaction sorts each bucket file of a SORTED BY "
                "table, so acidctl cannot tell what to write"
            )
        if st.sort_columns:
            raise RefusedError(
                f"bucketed, sorted insert-only table (SORTED BY {', '.join(st.sort_columns)}): Hive's "
                "compaction writes each bucket file sorted by those columns with Hive's comparators; "
                "acidctl does not compact sorted tables"
            )
    if st.format == "text":
        from acidctl.formats.textfile import TextParams

        p = TextParams.from_properties(st.properties)
        if p.header_lines or p.footer_lines:
            raise RefusedError(
                "text table with skip.header.line.count/skip.footer.line.count > 0 (MM07): Hive's "
                "writers write no header, so readers would skip real rows of the compacted file"
            )
    if mode == MINOR and hive_version == 3:
        raise UsageError(
            "Hive 3 has no minor compaction of insert-only tables (its minor request only deletes "
            "aborted deltas): use --major, or `acidctl clean` to remove aborted deltas",
            hint="--hive-version 4 writes delta_<min>_<hwm>_v<txn> as MmMinorQueryCompactor does",
        )


def plan_partition(
    tfs, listing, ctx, *, mode: str, reader, txns, hive_version: int, visibility_txn=None, skip_unreadable: bool = False
) -> tuple[PartitionPlan, MMWork | None]:
    """One insert-only partition's plan and work, in stages: the reader's and the compactor's
    states (:func:`_mm_states`), the inputs (:func:`_mm_inputs`), the nothing-lost check
    (:func:`_mm_refused`), the output (:func:`_mm_output`) and the bucket-name check."""
    compactor = reader if reader.compactor else reader.for_compactor()
    part_path = listing.fs_path or listing.path
    plan = PartitionPlan(
        partition=listing.partition, path=part_path, display=listing.path, mode=mode, status="nothing", message=""
    )
    rstate, cstate = _mm_states(listing, reader, compactor, txns, hive_version)
    hwm = compactor.hwm
    deltas = [d for d in cstate.deltas if d.kind is Kind.DELTA]
    aborted = [
        c.name for c in cstate.aborted if c.kind is Kind.DELTA and c.max_write_id is not None and c.max_write_id <= hwm
    ]
    straddle = [c for c in cstate.not_visible if c.min_write_id is not None and c.min_write_id <= hwm]
    if straddle:
        raise RefusedError(
            f"{straddle[0].path} spans write ids on both sides of the compactor's high-water mark "
            f"{hwm} (an open write inside its range): nothing can be folded safely"
        )

    # hive.mm.allow.originals=true: without a base Hive's reader reads the originals too (A.5),
    # so the compaction's INSERT ... SELECT folds them into the new base (A.6.1 step 4 counts them)
    originals = (
        [MMFile(o.path, o.rel, "", o.size) for o in cstate.originals]
        if ctx.allow_originals and mode == MAJOR and cstate.base is None
        else []
    )
    chosen = _mm_inputs(plan, cstate, deltas, originals, mode)
    if chosen is None:
        return plan, None
    inputs, read_from = chosen
    files = [f for c in read_from for f in dir_files(part_path, c)] + originals
    by_name = {e.name: e for e in listing.entries}
    if _mm_refused(plan, listing, rstate, cstate, inputs, files, by_name, skip_unreadable):
        return plan, None
    v = output_visibility(visibility_txn, hive_version)
    out = _mm_output(listing, deltas, hwm, hive_version, v, mode, by_name)
    nb = ctx.storage.bucket_count if ctx.storage.bucket_count and ctx.storage.bucket_count > 0 else 0
    if nb:
        _check_bucket_names(listing, files, nb)
    staging_id = uuid.uuid4().hex[:12]
    plan.staging_id = staging_id
    plan.staging = join_path(part_path, STAGING_PREFIX + staging_id)
    plan.outputs = [out]
    plan.status = "compact"
    plan.message = f"{mode} compaction of {plural(len(inputs), 'input')} into {out.name}"
    work = MMWork(
        files=[f for f in files if f.size != 0],
        output=out,
        aborted_dropped=aborted,
        buckets=nb,
        allow_originals=ctx.allow_originals,
    )
    # the reader's view before, and after publication (the output taken from the staging area)
    work.verify_old = read_plan(listing, rstate, allow_originals=ctx.allow_originals)
    return plan, work


def _mm_states(listing, reader, compactor, txns, hive_version: int):
    """The reader's and the compactor's insert-only ``getAcidState``; a delete_delta refuses (MM05)."""
    rstate = get_acid_state(listing, reader, txns=txns, hive_version=hive_version, insert_only=True)
    rstate.require_snapshot()
    cstate = get_acid_state(listing, compactor, txns=txns, hive_version=hive_version, insert_only=True)
    if cstate.invalid:
        raise InvalidAcidLayout(f"{cstate.invalid[0].path}: {cstate.invalid[0].reason}")
    cstate.require_snapshot()
    for st in (rstate, cstate):
        for c in st.entries:
            if c.kind is Kind.DELETE_DELTA:
                raise InvalidAcidLayout(
                    f"{c.path}: a delete_delta directory in an insert-only table (MM05); nothing was written"
                )
    return rstate, cstate


def _mm_inputs(plan: PartitionPlan, cstate, deltas: list, originals: list, mode: str):
    """The input names and the directories read; None (and the plan's message) when there is
    nothing to compact (Hive 3: base + current deltas + originals <= 1; minor: < 2 deltas)."""
    if mode == MAJOR:
        n_inputs = (1 if cstate.base is not None else 0) + len(deltas) + len(originals)
        if not (deltas or originals) or n_inputs <= 1:  # Hive 3: base + current deltas + originals <= 1
            from acidctl.compact.planner import _why_nothing

            why = (
                "no current delta directories"
                if not (deltas or originals)
                else f"only one input ({(deltas[0].name if deltas else originals[0].child)})"
            )
            plan.message = "nothing to compact: " + _why_nothing(cstate, why)
            return None
        inputs = ([cstate.base.name] if cstate.base is not None else []) + [d.name for d in deltas]
        inputs += sorted({f.child.split("/", 1)[0] for f in originals})
        return inputs, ([cstate.base] if cstate.base is not None else []) + deltas
    if len(deltas) < 2:
        plan.message = "nothing to compact: fewer than two current delta directories"
        return None
    return [d.name for d in deltas], deltas


def _mm_refused(
    plan: PartitionPlan, listing, rstate, cstate, inputs: list[str], files: list, by_name: dict, skip_unreadable: bool
) -> bool:
    """Nothing lost: every input becomes obsolete, and so does everything the new output covers
    (major: the originals and the files in the partition root); one of those that is not read
    refuses the partition (``skip_unreadable``: listed as skipped)."""
    from acidctl.compact.coverage import reader_files, unread_files

    part_path = plan.path
    read_paths = {f.path for f in files}
    plan.read_paths = read_paths
    plan.input_files = {n: sorted([f.name, f.size] for f in reader_files(by_name[n])) for n in inputs}
    plan.inputs = inputs
    plan.input_bytes = sum(f.size for f in files)
    obsolete = set(inputs)
    if plan.mode == MAJOR:
        obsolete |= {o.rel.split("/", 1)[0] for o in list(rstate.originals) + list(cstate.originals)}
        obsolete |= {e.name for e in listing.entries if not e.is_dir and not is_hidden(e.name)}
    unread = unread_files(((n, by_name[n]) for n in sorted(obsolete) if n in by_name), read_paths, part_path)
    for u in unread:
        if "/" not in u["path"]:
            u["reason"] = (
                "a file in the partition root: invisible to Hive while hive.mm.allow.originals=false, "
                "but other engines read it; the new base would make it obsolete unread"
            )
            u["fix"] = (
                "move it into a delta directory (Hive's own conversion puts such files into "
                "delta_W_W_0000) or out of the table; or pass --skip-unreadable-files"
            )
    plan.obsoletes = sorted(obsolete)
    if not unread:
        return False
    if skip_unreadable:
        plan.skipped.extend(unread)
        return False
    plan.status = "refused"
    plan.refusals = unread
    plan.message = (
        f"refused: {plural(len(unread), 'file')} a reader could treat as data would become obsolete "
        f"without being read ({', '.join(u['path'] for u in unread[:3])})"
    )
    return True


def _mm_output(listing, deltas: list, hwm: int, hive_version: int, v: int, mode: str, by_name: dict) -> OutputDir:
    """The output directory: the one naming rule (acidctl.compact.naming): insert-only compaction
    is a query named after the compactor hwm (Hive 3 runMmCompaction, Hive 4
    MmMajor/MmMinorQueryCompactor); an existing one refuses."""
    ranges = [naming.DeltaRange(d.delta_dir.min_write_id, d.delta_dir.max_write_id) for d in deltas]
    named = naming.output_names(
        naming.MAJOR if mode == MAJOR else naming.MINOR,
        deltas=ranges,
        compactor_hwm=hwm,
        hive_version=hive_version,
        visibility=v,
        compactor=naming.QUERY_BASED,
        has_inserts=True,
    )
    assert named is not None
    if mode == MAJOR:
        out = OutputDir(
            named.names[0], "base", hwm, hwm, [], {} if hive_version == 4 else {METADATA_FILE: METADATA_ACID}
        )
    else:
        out = OutputDir(named.names[0], "delta", named.min_write_id, hwm, [], {})
    if out.name in by_name:
        raise RefusedError(
            f"{join_path(listing.path, out.name)} already exists; refusing to overwrite it",
            hint="inspect it with `acidctl state`; `acidctl clean` removes obsolete copies",
        )
    return out


def _check_bucket_names(listing, files: list, nb: int) -> None:
    """Hive writes bucket B's rows into the file of task B, so the files' names say where each
    row belongs; Hive's compaction re-hashes them into the same buckets (derived)."""
    bad = [f for f in files if f.size and not 0 <= _bucket_or_minus_one(f.path) < nb]
    if bad:
        f = bad[0]
        raise RefusedError(
            f"{join_path(listing.path, f.child, f.rel) if f.rel else join_path(listing.path, f.child)}: in a table of {nb} buckets a data file "
            "must be named by its bucket (00000B_0, as Hive's bucketed INSERT writes it); this "
            "one's rows cannot be placed without Hive's bucketing hash (a LOAD DATA file?); "
            "nothing was written"
        )


def _after_files(
    listing,
    plan: PartitionPlan,
    work: MMWork,
    written: list[str],
    *,
    reader,
    txns,
    hive_version,
    visibility: int | None,
) -> list[MMFile]:
    """The files a reader opens once the output is published (output files from the staging area)."""
    out = work.output
    files = tuple(FileInfo(p.rsplit("/", 1)[-1], 1) for p in written) + tuple(
        FileInfo(k, len(v)) for k, v in out.markers.items()
    )
    virtual = dataclasses.replace(
        listing,
        entries=tuple(listing.entries)
        + (ChildEntry(out.name, True, 0, None, tuple(sorted(files, key=lambda f: f.name)), (), dict(out.markers)),),
    )
    tl = valid_txns_with(txns, visibility) if hive_version == 4 else txns
    nstate = get_acid_state(virtual, reader, txns=tl, hive_version=hive_version, insert_only=True)
    nstate.require_snapshot()
    staged_dir = join_path(plan.staging, out.name)
    final_dir = join_path(plan.path, out.name)
    res = []
    for f in read_plan(virtual, nstate, allow_originals=work.allow_originals):
        if f.path.startswith(final_dir + "/"):
            f = dataclasses.replace(f, path=staged_dir + f.path[len(final_dir) :])
        res.append(f)
    return res


def row_digest(tfs, files: list[MMFile], storage, row_td, *, batch_rows: int | None = None) -> tuple[int, int]:
    """(rows, digest) of the rows of ``files`` as a multiset, read a piece at a time: the sum
    modulo 2**128 of a 128-bit BLAKE2b hash of each row's FileDump-style JSON text. Equal
    multisets give equal digests; row order does not matter (MM rows have no identity and
    Hive keeps no order). Why a sum of hashes rather than the sorted rows kept until now:
    the rows of a whole partition need not fit in memory; a collision needs two different
    multisets whose 128-bit sums agree."""
    import hashlib

    import pyarrow as pa

    from acidctl.formats.files import iter_tables
    from acidctl.orc import render

    fields = list(row_td.fields.items())
    n = total = 0
    for f in files:
        for t in iter_tables(tfs, f.path, storage, row_td, batch_rows=batch_rows):
            batch = pa.RecordBatch.from_arrays(
                [t.column(i).combine_chunks() for i in range(t.num_columns)], names=[n_ for n_, _ in fields]
            )
            for text in render.render_batch(batch, fields).to_pylist():
                raw = text if isinstance(text, bytes) else str(text).encode("utf-8")
                total += int.from_bytes(hashlib.blake2b(raw, digest_size=16).digest(), "big")
            n += t.num_rows
    return n, total % (1 << 128)


def run_partition(
    tfs, listing, plan: PartitionPlan, work: MMWork, ctx, *, reader, txns, hive_version: int, visibility: int | None
) -> dict:
    """Read the inputs a piece at a time (an ORC stripe, a Parquet/Avro/text batch) into the
    output file in the staging area, verify it; the metrics record. Memory holds a piece of
    input and the output writer's buffer (a Parquet row group at most), never the partition."""
    from acidctl.formats.files import OutputFile, choose_codec, extension, file_codec, iter_tables
    from acidctl.formats.hivetypes import orc_struct
    from acidctl.mm.read import infer_columns

    t0 = time.perf_counter()
    columns = ctx.columns or infer_columns(tfs, work.files, ctx.storage)
    if not columns:
        raise UsageError("no columns known for the table: give --columns name:type,...")
    row_td = orc_struct(columns)
    codecs, avro_schema = [], None
    for f in work.files:
        c, sch = file_codec(tfs, f.path, ctx.storage)
        codecs.append(c)
        avro_schema = sch or avro_schema
    codec = choose_codec(ctx.storage, codecs)
    ext = extension(ctx.storage, codec)
    name = DATA_FILE + ext
    # unbucketed: one file; bucketed: bucket B's input files into 00000B_0, every bucket a file
    # (Hive creates the missing ones empty, spec A.4)
    groups = (
        [(name, work.files)]
        if not work.buckets
        else [(f"{b:06d}_0{ext}", [f for f in work.files if bucket_of(f.path) == b]) for b in range(work.buckets)]
    )
    rows_in = bytes_out = 0
    written = []
    for fname, group in groups:
        path = join_path(plan.staging, work.output.name, fname)
        out = OutputFile(tfs, path, row_td, ctx.storage, codec=codec, avro_schema=avro_schema)
        try:
            for f in group:
                for t in iter_tables(tfs, f.path, ctx.storage, row_td):
                    out.write(t)
            bytes_out += out.close(empty=bool(work.buckets))
        except BaseException:
            out.abort()
            raise
        rows_in += out.rows
        if out.rows or work.buckets:
            written.append(path)
    # verify: the written file reads back to the same rows, and a reader's snapshot is unchanged
    rows_out = sum(t.num_rows for p in written for t in iter_tables(tfs, p, ctx.storage, row_td))
    if rows_out != rows_in:
        raise WriteVerificationFailed(f"{plan.display}: wrote {rows_in} rows but {rows_out} read back")
    before = row_digest(tfs, work.verify_old, ctx.storage, row_td)
    after = row_digest(
        tfs,
        _after_files(
            listing, plan, work, written, reader=reader, txns=txns, hive_version=hive_version, visibility=visibility
        ),
        ctx.storage,
        row_td,
    )
    if before != after:
        raise WriteVerificationFailed(
            f"{plan.display}: a reader's rows after the compaction differ from before "
            f"({before[0]} rows before, {after[0]} after); nothing was published"
        )
    return {
        "partition": plan.partition,
        "files_out": written,
        "rows_in": rows_in,
        "rows_out": rows_out,
        "delete_events_in": 0,
        "delete_events_out": 0,
        "deletes_applied": 0,
        "aborted_dropped": 0,
        "bytes_out": bytes_out,
        "seconds": round(time.perf_counter() - t0, 3),
        "verified_rows": after[0],
        "codec": codec,
        "file_name": name,
        "aborted_dirs_dropped": list(work.aborted_dropped),
    }


@dataclasses.dataclass
class MMTask:
    """One partition's work, shipped to a Spark executor (picklable: TableFS, listings and
    plans are plain data)."""

    tfs: object
    listing: object
    plan: PartitionPlan
    work: MMWork
    ctx: object
    reader: object
    txns: object
    hive_version: int
    visibility: int | None


def run_mm_task(task: MMTask) -> dict:
    """Executor side: run one partition; expected failures come back as data (re-raised typed
    by the driver), as :func:`acidctl.compact.task.run_bucket` does."""
    from acidctl.errors import AcidctlError

    try:
        return run_partition(
            task.tfs,
            task.listing,
            task.plan,
            task.work,
            task.ctx,
            reader=task.reader,
            txns=task.txns,
            hive_version=task.hive_version,
            visibility=task.visibility,
        )
    except AcidctlError as e:
        return {
            "partition": task.plan.partition,
            "error": {"type": type(e).__name__, "module": type(e).__module__, "message": str(e)},
        }


def run_mm_tasks(iterator):
    """Spark ``mapPartitions`` body: the metrics of each insert-only task."""
    for task in iterator:
        yield run_mm_task(task)


def _run_on_spark(spark, tasks: list[MMTask], progress=None) -> list[dict]:
    """All partitions in one Spark job (one RDD partition each), with the compaction's Ctrl-C
    handling (job group cancelled, clean interrupt) and failure mapping."""
    from acidctl.compact.spark import run_tasks

    return run_tasks(spark, tasks, progress=progress, body=run_mm_tasks, job="acidctl compact (insert-only)")


def compact_mm_table(
    tfs, opts, ctx, *, registrar=None, notes: list | None = None, progress=None, spark=None, locks=None
) -> dict:
    """``acidctl compact`` for an insert-only table (``opts``: :class:`acidctl.compact.runner.CompactOptions`;
    ``locks``: partition locks the caller holds, see :func:`acidctl.compact.runner.run_locks`).

    The stages: the locks and the recovery of interrupted publications, the plans
    (:func:`_plan_all`), the refusals and the registration (:func:`_claim`), the tasks
    (:func:`_run_tasks`), then staging checks and publication."""
    from acidctl.acid.layout import list_table
    from acidctl.compact.runner import run_locks, select_partitions

    notes = notes if notes is not None else []
    t0 = time.perf_counter()
    mode = opts.mode
    if mode is not None:
        check_table(ctx, mode=mode, hive_version=opts.hive_version)
    report: dict = {
        "path": tfs.display(tfs.root),
        "type": mode or "due",
        "hive_version": opts.hive_version,
        "write_ids": str(opts.reader),
        "compactor_write_ids": str(opts.reader.for_compactor()),
        "engine": opts.engine,
        "insert_only": True,
        "format": ctx.storage.format,
        "partitions": [],
        "recovered": [],
        "notes": notes,
    }
    lock = None
    plans: list[tuple[PartitionPlan, MMWork | None, DirListing]] = []
    published: set[str] = set()
    try:
        if not opts.dry_run:
            # inside the try: a Ctrl-C right after the lock file is written still releases it
            lock = run_locks(tfs, opts, locks)
            if locks is None:
                lock.acquire()
            for b in lock.broken:
                notes.append(f"broke the lock of {b.describe()}")
        listings = list_table(tfs)
        if not opts.dry_run:
            # only the partitions this run holds the locks of
            for lst in select_partitions(tfs, listings, opts.partitions):
                report["recovered"].extend(pub.recover(tfs, lst.fs_path or lst.path))
            if report["recovered"]:
                listings = list_table(tfs)

        # Hive 4 output is named after the compactor txn, opened only once the run goes ahead:
        # plan with a placeholder first, decide every refusal, then claim (acidctl.compact.register)
        deferred = registrar is not None and opts.hive_version == 4 and callable(opts.visibility_txn)
        plans.extend(_plan_all(tfs, listings, ctx, opts, placeholder=deferred))
        if opts.dry_run:
            return _dry_report(tfs, report, plans, opts, t0)
        work = _claim(tfs, listings, ctx, opts, plans, notes, registrar=registrar, deferred=deferred)
        metrics: dict = {}
        results = _run_tasks(
            tfs,
            ctx,
            opts,
            work,
            report,
            spark=spark,
            progress=progress,
            started=registrar.start if registrar is not None and work else None,
        )
        for (p, _, _), m in zip(work, results):
            metrics[p.partition] = m
            pub.check_staged(tfs, p, [m])
        for p, _, _ in work:
            pub.recheck_inputs(tfs, p, required=p.inputs)
        for p, _, _ in work:
            pub.publish_registered(tfs, p, published=published, registrar=registrar)
        report["message"] = "compacted" if work else "nothing to compact"
        return _finish(report, plans, metrics, t0)
    except BaseException as e:
        pub.discard_unpublished(tfs, [p for p, _, _ in plans], published, e, registrar=registrar)
        raise
    finally:
        if lock is not None:
            lock.release()


def _plan_all(tfs, listings, ctx, opts, *, placeholder: bool = False) -> list:
    """Every selected partition's plan and work (``--due``: the Initiator's recommendation
    decides the type, Hive 3 always major); ``placeholder`` names Hive 4 output with a stand-in
    txn until the compactor txn is opened."""
    from acidctl.acid.initiator import NONE, compactor_state, recommend
    from acidctl.compact.runner import not_due_plan, select_partitions

    out: list = []
    for lst in select_partitions(tfs, listings, opts.partitions):
        m = opts.mode
        rec = None
        if opts.due:
            cst = compactor_state(lst, opts.reader, txns=opts.txns, hive_version=opts.hive_version)
            r = recommend(
                cst,
                thresholds=opts.thresholds,
                insert_only=opts.hive_version == 3,
                hive_version=opts.hive_version,
            )
            rec = r.to_dict()
            if r.type == NONE:
                out.append((not_due_plan(lst, m, r), None, lst))
                continue
            m = m or r.type
            if opts.hive_version == 3:
                m = MAJOR
            check_table(ctx, mode=m, hive_version=opts.hive_version)
        vis = opts.visibility_txn
        if (opts.dry_run and opts.hive_version == 4 and not vis) or placeholder:
            vis = 9_999_999

        def lazy(v=vis, part=lst.partition, mm=m):
            return v(part, mm) if callable(v) else v

        p, w = plan_partition(
            tfs,
            lst,
            ctx,
            mode=m,
            reader=opts.reader,
            txns=opts.txns,
            hive_version=opts.hive_version,
            visibility_txn=lazy,
            skip_unreadable=opts.skip_unreadable_files,
        )
        p.recommendation = rec
        out.append((p, w, lst))
    return out


def _claim(tfs, listings, ctx, opts, plans: list, notes: list, *, registrar, deferred: bool) -> list:
    """The plans that run, once every plan-time refusal is decided; only then are the requests
    enqueued/claimed (no trace otherwise) and, Hive 4, the plans named ``_v<compactor txn>``
    (``plans`` replaced in place)."""
    refused = refusal_error([p for p, _, _ in plans])
    if refused is not None:
        raise refused
    for p, _, _ in plans:
        for sk in p.skipped:
            notes.append(f"skipped (--skip-unreadable-files): {p.display.rstrip('/')}/{sk['path']}: {sk['reason']}")
    work = [(p, w, lst) for p, w, lst in plans if p.runs]
    _publish_safety(tfs, opts, [p for p, _, _ in work])
    if registrar is not None and work:
        # every plan-time refusal is behind us: only now enqueue/claim (no trace otherwise)
        registrar.claim_all([(p.partition, p.mode) for p, _, _ in work])
        if deferred:
            plans[:] = _plan_all(tfs, listings, ctx, opts)  # the same plan, named _v<compactor txn>
            refused = refusal_error([p for p, _, _ in plans])
            if refused is not None:
                raise refused
            work = [(p, w, lst) for p, w, lst in plans if p.runs]
            _publish_safety(tfs, opts, [p for p, _, _ in work])
    # registrar.start() (the requests become "working") waits for the engine: _run_tasks
    return work


def _run_tasks(tfs, ctx, opts, work: list, report: dict, *, spark=None, progress=None, started=None) -> list:
    """Staging prepared, one task per partition, run on Spark or in this process; ``started()``
    once the engine is up, before the tasks run (a Spark session that cannot start hands the
    requests back instead of failing them: acidctl.compact.runner); the first task error is
    raised."""
    from acidctl.compact.runner import _reraise as reraise

    tasks = []
    for p, w, lst in work:
        assert w is not None  # plan_partition returns work for every plan that runs
        pub.prepare(tfs, p)
        vis = w.output.name.rsplit("_v", 1)[-1] if "_v" in w.output.name else None
        tasks.append(MMTask(tfs, lst, p, w, ctx, opts.reader, opts.txns, opts.hive_version, int(vis) if vis else None))
    if opts.engine == "spark" and tasks:
        from acidctl.compact.spark import get_or_create_session

        s0 = time.perf_counter()
        if spark is None:
            spark = get_or_create_session(opts.master, opts.spark_conf)
        report["spark"] = {
            "master": spark.sparkContext.master,
            "app_id": spark.sparkContext.applicationId,
            "startup_seconds": round(time.perf_counter() - s0, 3),
        }
        if started is not None:
            started()
        results = _run_on_spark(spark, tasks, progress)
    else:
        if started is not None:
            started()
        results = []
        for i, t in enumerate(tasks):
            results.append(run_mm_task(t))
            if progress is not None:
                progress(i + 1, len(tasks))
    for m in results:
        if "error" in m:
            raise reraise(m["error"])
    return results


def _publish_safety(tfs, opts, work: list) -> None:
    """Refuse (before anything is claimed or written) a publication readers could see half done."""
    hidden = opts.hive_version == 4 and opts.hidden_until_commit
    for p in work:
        p.publish, why = pub.safety(tfs, p, hidden_until_commit=hidden)
        if why and not opts.allow_non_atomic_publish:
            raise RefusedError(
                f"compaction of {p.partition or p.display} cannot be published atomically: {why}",
                hint="--allow-non-atomic-publish publishes anyway",
            )


def _finish(report: dict, plans, metrics: dict, t0: float) -> dict:
    rows = []
    for p, w, _ in plans:
        m = metrics.get(p.partition, {}) if p.runs else {}
        rows.append(
            partition_record(
                p,
                {
                    "files_out": [f.rsplit("/", 1)[-1] for f in m.get("files_out", [])],
                    "buckets": len(m.get("files_out", [])),
                    "rows_in": m.get("rows_in", 0),
                    "rows_out": m.get("rows_out", 0),
                    "delete_events_in": 0,
                    "delete_events_out": 0,
                    "deletes_applied": 0,
                    "aborted_dropped": 0,
                    "aborted_dirs_dropped": list(w.aborted_dropped) if w is not None and p.runs else [],
                    "bytes_in": p.input_bytes if p.runs else 0,
                    "bytes_out": m.get("bytes_out", 0),
                    "codec": m.get("codec"),
                    "verified_rows": m.get("verified_rows", 0),
                    "task_seconds": m.get("seconds", 0),
                },
                input_dirs=list(p.inputs) if p.runs else [],
            )
        )
    return finish_report(report, rows, t0)


def _dry_report(tfs, report: dict, plans, opts, t0: float) -> dict:
    refused = refusal_error([p for p, _, _ in plans])
    parts = []
    for p, w, _ in plans:
        d = p.to_dict()
        d["outputs"] = [o.replace("_v9999999", naming.VIS_PLACEHOLDER) for o in d["outputs"]]
        d["message"] = (d.get("message") or "").replace("_v9999999", naming.VIS_PLACEHOLDER)
        d["bytes_in"] = p.input_bytes
        d["publish"] = ""
        d["tasks"] = (
            [{"bucket": 0, "inserts": [tfs.display(f.path) for f in w.files], "deletes": []}] if w is not None else []
        )
        parts.append(d)
    work = [p for p, _, _ in plans if p.runs]
    report.update(
        {
            "dry_run": True,
            "partitions": parts,
            "refused": refused is not None,
            "message": "dry run: refused"
            if refused is not None
            else ("dry run: nothing to compact" if not work else "dry run: would compact"),
            "summary": {
                "partitions": len(plans),
                "would_compact": len(work),
                "bytes_in": sum(p.input_bytes for p in work),
                "refused": sum(1 for p, _, _ in plans if p.status == "refused"),
                "seconds": round(time.perf_counter() - t0, 3),
            },
        }
    )
    if refused is not None:
        report["refusal"] = str(refused)
    return report
