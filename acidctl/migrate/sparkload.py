"""``acidctl migrate --engine spark``: the data files of whole partitions (a first load, a
replaced partition) written in Spark tasks, one per partition × bucket, and committed once from
the driver (the backend adds the files as they are: ``PartitionChange.files``).

A task reads its bucket exactly as the local engine does (:func:`acidctl.migrate.source.bucket_tables`,
export's streamed merge), converts the rows to the target schema and writes one Parquet file in
the backend's file schema (Iceberg: with the field ids; Delta: without the partition columns,
which Delta keeps in the log) under the table's data location (``directory``: the backend's
directory of a partition's files); it returns the file's path, rows and the partition digest of
its rows (the Hive side of the verification). Insert-only partitions and catch-up row changes
stay on the driver.

Every task's file name is planned on the driver. A task refused with an acidctl error (e.g. a
nanosecond timestamp) reports it instead of failing the job; when any task failed, every
planned file is deleted before the error is raised (the backend never saw them), with its
acidctl error class (exit code) where the task raised one.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass
class LoadTask:
    """One partition × bucket (picklable: no open handles)."""

    export_task: Any  # acidctl.export.ExportTask (the bucket's sources)
    key: str
    values: dict
    schema: Any  # the target Arrow schema
    file_schema: Any  # the schema files are written in (the backend's)
    precision: str
    path: str  # the file to write
    partition_columns: list
    compression: str = "snappy"  # the table's write.parquet.compression-codec
    root: str = ""  # the table's location: emptied directories below it are removed on failure
    storage: dict = dataclasses.field(default_factory=dict)  # Delta's storage options (s3://)


def plan_tasks(
    src,
    part,
    schema,
    file_schema,
    location: str,
    *,
    precision: str,
    pcols: list,
    compression: str = "snappy",
    directory: Callable[[dict], str] | None = None,
    storage: dict | None = None,
) -> list[LoadTask]:
    """One task per bucket of ``part``; ``directory(values)``: where the partition's files go
    (default: Iceberg's ``<location>/data/<partition name>``)."""
    from acidctl.acid.read import plan_sources
    from acidctl.migrate.source import bucket_tasks

    inserts, deletes = plan_sources(src.tfs, part.listing, part.state)
    if directory is not None:
        where = directory(part.values).rstrip("/")
    else:
        where = f"{location.rstrip('/')}/data" + (f"/{part.key}" if part.key else "")
    out = []
    for task in bucket_tasks(src, part, inserts, deletes):
        b = task.bucket
        path = f"{where}/acidctl-{uuid.uuid4().hex}-b{b:05d}.parquet"
        out.append(
            LoadTask(
                task,
                part.key,
                part.values,
                schema,
                file_schema,
                precision,
                path,
                pcols,
                compression,
                location,
                dict(storage or {}),
            )
        )
    return out


def run_task(t: LoadTask) -> dict:
    """Write one bucket's rows; returns path (None: no row), rows and the digest partial."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from acidctl.acid.writeids import WriteIdList
    from acidctl.fs import TableFS
    from acidctl.migrate.digest import partition_digests
    from acidctl.migrate.source import bucket_tables, to_target

    e = t.export_task
    src = TableFS(e.source_url, e.source_options)
    fs, path = _filesystem(t.path, t.storage)
    writer = None
    rows = 0
    digests: list = []
    try:
        for flat in bucket_tables(src, e, WriteIdList.parse(e.write_ids)):
            batch = to_target(flat, t.schema, t.values, precision=t.precision)
            if not batch.num_rows:
                continue
            digests.append(partition_digests([batch], t.partition_columns))
            out = pa.Table.from_batches([batch]).select(t.file_schema.names).cast(t.file_schema)
            if writer is None:
                fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
                writer = pq.ParquetWriter(fs.open_output_stream(path), t.file_schema, compression=t.compression)
            writer.write_table(out)
            rows += batch.num_rows
    finally:
        if writer is not None:
            writer.close()
    return {"key": t.key, "path": t.path if rows else None, "rows": rows, "digests": digests}


def run_tasks(iterator):
    """Spark ``mapPartitions`` body: an acidctl error becomes the task's record (its partial
    file removed), so the driver raises it with its own class."""
    from acidctl.errors import AcidctlError

    for t in iterator:
        try:
            yield run_task(t)
        except AcidctlError as e:
            _delete(t.path, t.storage)
            yield {
                "key": t.key,
                "path": None,
                "rows": 0,
                "digests": [],
                "error": {"type": type(e).__name__, "module": type(e).__module__, "message": str(e), "hint": e.hint},
            }


def run(tasks: list[LoadTask], *, master: str, spark_conf: dict, spark=None) -> list[dict]:
    """Every task's record; on any failure the planned files are deleted, then it is raised."""
    from acidctl.compact.spark import get_or_create_session, run_tasks as spark_run

    session = spark or get_or_create_session(master, spark_conf)
    try:
        out = spark_run(session, tasks, body=run_tasks, job="acidctl migrate")
    except BaseException:
        discard(tasks)
        raise
    failed = next((m["error"] for m in out if m.get("error")), None)
    if failed is not None:
        discard(tasks)
        raise _reraise(failed)
    return out


def discard(tasks: list[LoadTask]) -> None:
    """Delete every planned file of ``tasks`` (best effort; a file nobody references harms no
    reader) and the local directories this left empty, up to the table's location."""
    import os

    dirs = set()
    for t in tasks:
        _delete(t.path, t.storage)
        dirs.add(t.path.rsplit("/", 1)[0])
    for d in sorted(dirs, key=len, reverse=True):
        root = tasks[0].root.rstrip("/")
        local = d[len("file://") :] if d.startswith("file://") else d
        lroot = root[len("file://") :] if root.startswith("file://") else root
        if "://" in local or not lroot or not local.startswith(lroot + "/"):
            continue
        while local.startswith(lroot + "/"):
            try:
                os.rmdir(local)  # only an empty one
            except OSError:
                break
            local = local.rsplit("/", 1)[0]


def _filesystem(path: str, storage: dict):
    """pyarrow's filesystem for a file of the target (Delta's storage options for ``s3://``)."""
    if storage:
        from acidctl.migrate.deltafiles import arrow_filesystem

        return arrow_filesystem(path, storage)
    import pyarrow.fs as pafs

    return pafs.FileSystem.from_uri(path)


def _delete(path: str, storage: dict) -> None:
    import pyarrow.fs as pafs

    try:
        fs, where = _filesystem(path, storage)
        if fs.get_file_info(where).type != pafs.FileType.NotFound:
            fs.delete_file(where)
    except Exception:
        pass


def _reraise(err: dict) -> Exception:
    import importlib

    from acidctl.errors import AcidctlError

    try:
        cls = getattr(importlib.import_module(err.get("module") or "acidctl.errors"), err["type"])
        if isinstance(cls, type) and issubclass(cls, AcidctlError):
            return cls(err["message"], hint=err.get("hint"))
    except Exception:
        pass
    return AcidctlError(err.get("message") or "a Spark task failed")
