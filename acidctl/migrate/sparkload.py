"""``acidctl migrate --engine spark``: the data files of whole partitions (a first load, a
replaced partition) written in Spark tasks, one per partition × bucket, and committed once from
the driver (the backend adds the files as they are: ``PartitionChange.files``).

A task reads its bucket exactly as the local engine does (:func:`acidctl.migrate.source.bucket_tables`,
export's streamed merge), converts the rows to the target schema and writes one Parquet file in
the backend's file schema (Iceberg: with the field ids) under the table's data location; it
returns the file's path, rows and the partition digest of its rows (the Hive side of the
verification). Insert-only partitions and catch-up row changes stay on the driver.
"""

from __future__ import annotations

import dataclasses
import uuid
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


def plan_tasks(
    src, part, schema, file_schema, location: str, *, precision: str, pcols: list, compression: str = "snappy"
) -> list[LoadTask]:
    from acidctl.acid.read import plan_sources
    from acidctl.migrate.source import bucket_tasks

    inserts, deletes = plan_sources(src.tfs, part.listing, part.state)
    out = []
    for task in bucket_tasks(src, part, inserts, deletes):
        b = task.bucket
        sub = f"{part.key}/" if part.key else ""
        path = f"{location.rstrip('/')}/data/{sub}acidctl-{uuid.uuid4().hex}-b{b:05d}.parquet"
        out.append(LoadTask(task, part.key, part.values, schema, file_schema, precision, path, pcols, compression))
    return out


def run_task(t: LoadTask) -> dict:
    """Write one bucket's rows; returns path (None: no row), rows and the digest partial."""
    import pyarrow as pa
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    from acidctl.acid.writeids import WriteIdList
    from acidctl.fs import TableFS
    from acidctl.migrate.digest import partition_digests
    from acidctl.migrate.source import bucket_tables, to_target

    e = t.export_task
    src = TableFS(e.source_url, e.source_options)
    fs, path = pafs.FileSystem.from_uri(t.path)
    writer = None
    rows = 0
    digests: list = []
    try:
        for flat in bucket_tables(src, e, WriteIdList.parse(e.write_ids)):
            batch = to_target(flat, t.schema, t.values, precision=t.precision)
            if not batch.num_rows:
                continue
            digests.append(partition_digests([batch], t.partition_columns))
            out = pa.Table.from_batches([batch]).cast(t.file_schema)
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
    """Spark ``mapPartitions`` body."""
    for t in iterator:
        yield run_task(t)


def run(tasks: list[LoadTask], *, master: str, spark_conf: dict, spark=None) -> list[dict]:
    from acidctl.compact.spark import get_or_create_session, run_tasks as spark_run

    session = spark or get_or_create_session(master, spark_conf)
    return spark_run(session, tasks, body=run_tasks, job="acidctl migrate")
