"""``acidctl migrate --add-files``: an insert-only Parquet table's files registered as Iceberg
data files as they are (no copy), only the files a Hive reader opens at the snapshot.

**Which files**: per partition, :func:`acidctl.mm.read.read_plan` (Hive's MM read,
insert-only-and-hive2.md A.5): the base and the deltas ``getAcidState`` picks for the
ValidWriteIdList — no aborted or open write, no obsolete directory, no hidden file (``_*``,
``.*``), no empty file; files in the partition directory only with ``--mm-allow-originals`` and
no base (Hive's ``hive.mm.allow.originals``).

**Which tables and files**: insert-only tables stored as Parquet only (a full-ACID table's ORC
files hold ACID events, not rows; ORC/Avro/text files are not Parquet). A file is registered
only if an Iceberg reader resolving its columns by name reads what Hive reads: no INT96 column
(Hive's default for timestamps: a wall clock Hive converted to UTC with the writer's zone;
Iceberg has no INT96), every column of the file one of the table's under its exact name (the
partition columns excepted: Hive's files never hold them), each of the table's Iceberg type
(pyiceberg's Arrow → Iceberg conversion of the file's schema; e.g. a timestamp with UTC
adjustment, in milliseconds or nanoseconds, or a string column stored as plain binary,
refuses). A table column the file lacks (a file written before ``ALTER TABLE ADD COLUMNS``)
reads as NULL in both (see :func:`check_file`). Anything else refuses in one line (exit 7)
saying that migrating without ``--add-files`` copies the rows.

**The commit**: ONE snapshot. First run: a fast append of every visible file. Catch-up: the
files visible now and not registered are appended and the registered files no longer visible
(an MM compaction's base or an INSERT OVERWRITE replaced them; a dropped partition) are removed
from the table in the same snapshot (an overwrite snapshot; the files themselves are Hive's and
never deleted). Nothing changed: no snapshot. The summary records ``acidctl.source-table`` /
``acidctl.source-write-ids`` as the copy path does.

Each data file's partition record comes from the partition directory's values (Hive's files
hold no partition columns), its statistics from the Parquet footer (pyiceberg's
``data_file_statistics_from_parquet_metadata``, the file's leaf columns mapped to field ids by
name). The table gets ``schema.name-mapping.default`` (as pyiceberg's ``Transaction.add_files``
sets it) so readers resolve the files' columns by name. List elements are also mapped under
``array_element``, the name Hive's Parquet writer gives them (``HiveSchemaConverter``): Iceberg
Java's ``ApplyNameMapping`` (apache/iceberg, parquet/.../ApplyNameMapping.java) looks a list
element up as ``element`` in current versions (``beforeElementField`` normalises the name) but
by its name in the file in older ones; pyiceberg always as ``element``. And the table
property ``acidctl.add-files=true``: a target is either registered or copied, never both (the
other way refuses, exit 6).

Verification is the copy path's: count + digest per touched partition, Hive's snapshot read by
acidctl vs the new Iceberg snapshot read by pyiceberg; a mismatch rolls the snapshot back.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from acidctl.errors import InvalidInputError, RefusedError, UsageError

if TYPE_CHECKING:
    from acidctl.migrate.backend import Backend
    from acidctl.migrate.run import MigrateOptions
    from acidctl.migrate.source import SourcePartition, SourceTable
    from acidctl.mm.read import MMFile

#: table property of an Iceberg target whose data files are Hive's own (``--add-files``)
ADD_FILES_PROPERTY = "acidctl.add-files"
NAME_MAPPING_PROPERTY = "schema.name-mapping.default"
#: Hive's Parquet writer names a list's element ``array_element`` (HiveSchemaConverter)
HIVE_LIST_ELEMENT = "array_element"
COPY_HINT = "migrate without --add-files copies the rows instead"


class NotRegistrable(InvalidInputError):
    """A file Iceberg cannot use as it is (exit 7): the copy path can."""


@dataclasses.dataclass
class _File:
    mf: MMFile
    url: str  # the data file's path in Iceberg (the file's URL)
    metadata: Any = None  # pyarrow.parquet.FileMetaData


@dataclasses.dataclass
class _Part:
    part: SourcePartition | None  # None: a partition Hive no longer has
    key: str
    values: dict[str, Any]
    add: list[_File] = dataclasses.field(default_factory=list)
    remove: list[Any] = dataclasses.field(default_factory=list)  # pyiceberg DataFiles


def check_source(src: SourceTable) -> None:
    """Insert-only Parquet tables only (one line otherwise, with the copy path as the way out)."""
    if src.mm is None and ("/" in src.name or ":" in src.name):
        # a path: nothing says it is insert-only unless --format does (DB.TABLE: the metastore)
        raise UsageError(
            f"--add-files registers the Parquet files of insert-only tables; {src.name} is read as a "
            "full-ACID table: a path is, unless --format names its insert-only storage",
            hint="if it is an insert-only Parquet table, add --format parquet; else " + COPY_HINT,
        )
    if src.mm is None:
        raise UsageError(
            f"--add-files registers the Parquet files of insert-only tables; {src.name} is full-ACID "
            "(its ORC files hold ACID events, not rows)",
            hint=COPY_HINT,
        )
    fmt = src.mm.storage.format
    if fmt != "parquet":
        raise UsageError(
            f"--add-files registers Parquet files; {src.name} stores {fmt.upper()} files, which Iceberg "
            "cannot use as they are",
            hint=COPY_HINT,
        )


def file_url(tfs, path: str) -> str:
    """The URL an Iceberg reader opens a file by: ``file://``, ``s3://``, ...; a file of a
    table on HDFS (read by acidctl through WebHDFS) by the table location's own scheme and
    authority, ``hdfs://nn:8020/...`` (:meth:`acidctl.fs.TableFS.hadoop_url`), as Java
    engines expect."""
    return tfs.hadoop_url(path)


def _read_metadata(tfs, f: _File):
    import pyarrow.parquet as pq

    try:
        with tfs.open(f.mf.path, "rb") as fh:
            return pq.read_metadata(fh)
    except Exception as e:
        raise NotRegistrable(
            f"--add-files: {f.url} is not a readable Parquet file ({str(e).splitlines()[0]})", hint=COPY_HINT
        ) from None


def _same_type(a, b) -> bool:
    """Iceberg types equal ignoring field ids and required flags (struct fields by name)."""
    from pyiceberg.types import ListType, MapType, StructType

    if isinstance(a, StructType) or isinstance(b, StructType):
        if not (isinstance(a, StructType) and isinstance(b, StructType)):
            return False
        fa = {f.name: f.field_type for f in a.fields}
        fb = {f.name: f.field_type for f in b.fields}
        return fa.keys() == fb.keys() and all(_same_type(fa[n], fb[n]) for n in fa)
    if isinstance(a, ListType) or isinstance(b, ListType):
        return isinstance(a, ListType) and isinstance(b, ListType) and _same_type(a.element_type, b.element_type)
    if isinstance(a, MapType) or isinstance(b, MapType):
        return (
            isinstance(a, MapType)
            and isinstance(b, MapType)
            and _same_type(a.key_type, b.key_type)
            and _same_type(a.value_type, b.value_type)
        )
    return a == b


def check_file(f: _File, md, data_fields: list) -> None:
    """Refuse (one line) a file an Iceberg reader would not read as the table's columns.
    ``data_fields``: the table's Iceberg fields without the partition columns."""
    from pyiceberg.io.pyarrow import _pyarrow_to_schema_without_ids

    for i in range(md.num_columns):
        col = md.schema.column(i)
        if col.physical_type == "INT96":
            raise NotRegistrable(
                f"--add-files: column {col.path} of {f.url} is an INT96 timestamp (Hive's default), "
                "which Iceberg cannot read",
                hint=COPY_HINT,
            )
    try:
        fschema = _pyarrow_to_schema_without_ids(md.schema.to_arrow_schema())
    except (TypeError, ValueError) as e:
        raise NotRegistrable(
            f"--add-files: {f.url} has a column type Iceberg maps differently ({str(e).splitlines()[0]})",
            hint=COPY_HINT,
        ) from None
    have = {fl.name: fl.field_type for fl in fschema.fields}
    want = {fl.name: fl.field_type for fl in data_fields}
    # The table's columns a file lacks (written before ALTER TABLE ADD COLUMNS) read as NULL,
    # in Hive as in Iceberg: Hive's Parquet reader resolves a table column by name unless
    # parquet.column.index.access is set (default false), and a column the file has not is
    # projected as an optional placeholder that reads NULL (apache/hive@012070c3,
    # ql/src/java/org/apache/hadoop/hive/ql/io/parquet/read/DataWritableReadSupport.java:
    # init(), getProjectedGroupFields()); Iceberg readers resolve the file's columns through
    # the name mapping and read a field no column maps to as NULL (the table's columns are
    # optional). A column of the file that is not the table's is still refused: Hive matches
    # names case-insensitively, the name mapping exactly, so the two readers would differ.
    extra = sorted(set(have) - set(want))
    if extra:
        raise NotRegistrable(
            f"--add-files: the columns of {f.url} do not match the table's (not in the table: {', '.join(extra)})",
            hint=COPY_HINT,
        )
    for name, t in want.items():
        if name in have and not _same_type(have[name], t):
            raise NotRegistrable(
                f"--add-files: column {name} of {f.url} is {have[name]} for Iceberg, the table's column is {t}",
                hint=COPY_HINT,
            )


def hive_name_mapping(schema) -> str:
    """The table's default name mapping (pyiceberg's, by column name) with every list element
    also known by Hive's name ``array_element``, as JSON."""
    from pyiceberg.schema import index_by_id
    from pyiceberg.types import ListType

    elements = {f.field_type.element_id for f in index_by_id(schema).values() if isinstance(f.field_type, ListType)}
    mapping = json.loads(schema.name_mapping.model_dump_json())

    def walk(fields: list[dict]) -> None:
        for fd in fields:
            if fd.get("field-id") in elements and HIVE_LIST_ELEMENT not in fd["names"]:
                fd["names"] = [*fd["names"], HIVE_LIST_ELEMENT]
            walk(fd.get("fields") or [])

    walk(mapping)
    return json.dumps(mapping, separators=(",", ":"))


def _leaf_ids(schema) -> list[int]:
    """Field ids of a schema's primitive leaves, depth first (the order of a Parquet file's
    leaf columns when ``schema`` follows the file's structure)."""
    from pyiceberg.types import ListType, MapType, StructType

    out: list[int] = []

    def visit(fid: int, t) -> None:
        if isinstance(t, StructType):
            for fl in t.fields:
                visit(fl.field_id, fl.field_type)
        elif isinstance(t, ListType):
            visit(t.element_id, t.element_type)
        elif isinstance(t, MapType):
            visit(t.key_id, t.key_type)
            visit(t.value_id, t.value_type)
        else:
            out.append(fid)

    for fl in schema.fields:
        visit(fl.field_id, fl.field_type)
    return out


def data_file(f: _File, meta, values: dict[str, Any]):
    """The pyiceberg DataFile of a checked file: statistics from its footer, the partition
    record from the partition directory's ``values``."""
    from pyiceberg.io.pyarrow import compute_statistics_plan, data_file_statistics_from_parquet_metadata
    from pyiceberg.io.pyarrow import pyarrow_to_schema
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.partitioning import PartitionFieldValue, PartitionKey
    from pyiceberg.table.name_mapping import parse_mapping_from_json
    from pyiceberg.typedef import Record

    md = f.metadata
    schema = meta.schema()
    mapping = parse_mapping_from_json(hive_name_mapping(schema))
    # the file's own structure with the table's field ids (by name): its leaves in file order
    fschema = pyarrow_to_schema(md.schema.to_arrow_schema(), name_mapping=mapping)
    ids = _leaf_ids(fschema)
    paths = {md.schema.column(i).path: ids[i] for i in range(md.num_columns)}
    stats = data_file_statistics_from_parquet_metadata(
        parquet_metadata=md,
        stats_columns=compute_statistics_plan(schema, meta.properties),
        parquet_column_mapping=paths,
    )
    spec = meta.spec()
    if spec.fields:
        fvs = [PartitionFieldValue(pf, values.get(schema.find_column_name(pf.source_id) or "")) for pf in spec.fields]
        partition = PartitionKey(field_values=fvs, partition_spec=spec, schema=schema).partition
    else:
        partition = Record()
    return DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=f.url,
        file_format=FileFormat.PARQUET,
        partition=partition,
        file_size_in_bytes=f.mf.size,
        sort_order_id=None,
        spec_id=meta.default_spec_id,
        equality_ids=None,
        key_metadata=None,
        **stats.to_serialized_dict(),
    )


def _partition_of(src: SourceTable, url: str, root_url: str) -> tuple[str, dict[str, Any]] | None:
    """(key, values) of the Hive partition a registered file lies in (from its path), None for
    a file outside the table."""
    from acidctl.acid.dirname import parse_acid_dir
    from acidctl.migrate.digest import partition_name
    from acidctl.migrate.types import partition_values

    if not url.startswith(root_url.rstrip("/") + "/"):
        return None
    comps = url[len(root_url.rstrip("/")) + 1 :].split("/")
    # the partition's own levels (an original file may lie in a subdirectory of its partition)
    levels = len(src.partition_keys) - (src.prefix.count("/") + 1 if src.prefix else 0) if src.partition_keys else None
    own: list[str] = []
    for c in comps[:-1]:
        if (levels is not None and len(own) >= levels) or parse_acid_dir(c) is not None or "=" not in c:
            break
        own.append(c)
    rel = "/".join(p for p in (src.prefix, "/".join(own)) if p) or None
    values = partition_values(rel, src.partition_keys)
    return partition_name(values), values


def migrate_files(
    src: SourceTable,
    backend: Backend,
    opts: MigrateOptions,
    *,
    target_display: str,
    to: str,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """One ``migrate --add-files`` run (see the module doc); the report of
    :func:`acidctl.migrate.run.migrate` with ``add_files`` true and per partition the files
    registered (``register``) and removed from the table (``unregister``)."""
    from pyiceberg.io.pyarrow import _pyarrow_to_schema_without_ids

    from acidctl.faults import fire
    from acidctl.migrate.backend import SOURCE_TABLE_KEY, SOURCE_WRITE_IDS_KEY
    from acidctl.migrate.run import _Planned, _ranges, _verify, report_head
    from acidctl.migrate.source import ensure_columns, list_partitions, new_write_ids
    from acidctl.migrate.types import target_schema
    from acidctl.mm.read import read_plan

    t0 = time.monotonic()
    if to != "iceberg":
        raise UsageError("--add-files is for --to iceberg (Iceberg data files can be Hive's Parquet files)")
    if opts.engine == "spark":
        raise UsageError("--add-files writes no data file: --engine spark does not apply")
    check_source(src)
    parts = list_partitions(src)
    ensure_columns(src, parts)
    schema = target_schema(src.columns, src.partition_keys, row_id=False)
    pcols = [k for k, _ in src.partition_keys]
    # the copy path's report head and refusals (acidctl.migrate.run.report_head), then the target's kind
    report, recorded = report_head(src, backend, to=to, target_display=target_display, row_id=False, opts=opts)
    report["add_files"] = True
    rec = recorded
    if recorded is not None:
        report["new_write_ids"] = _ranges(new_write_ids(recorded, src.snapshot))
        if not backend.registers_files():  # type: ignore[attr-defined]
            raise RefusedError(
                f"{target_display} holds copies of the rows (migrated without --add-files); it is left untouched",
                hint="run migrate without --add-files, or register the files into a new --target",
            )
    backend.ensure(schema, pcols, dry_run=opts.dry_run)

    # what a reader sees now vs what the table holds
    registered: dict[str, Any] = backend.data_files()  # type: ignore[attr-defined]
    data_fields = [fl for fl in _pyarrow_to_schema_without_ids(schema).fields if fl.name not in pcols]
    plan: dict[str, _Part] = {}
    visible: set[str] = set()
    for p in parts:
        pp = plan.setdefault(p.key, _Part(p, p.key, p.values))
        for mf in read_plan(p.listing, p.state, allow_originals=src.mm.allow_originals):
            f = _File(mf, file_url(src.tfs, mf.path))
            visible.add(f.url)
            if f.url not in registered:
                f.metadata = _read_metadata(src.tfs, f)
                check_file(f, f.metadata, data_fields)
                pp.add.append(f)
    root_url = file_url(src.tfs, src.tfs.root)
    for url, df in registered.items():
        if url in visible:
            continue
        where = _partition_of(src, url, root_url)
        if where is None:
            raise RefusedError(
                f"{target_display} holds {url}, which is not a file of {src.name}; it is left untouched",
                hint="register the files into a new --target",
            )
        key, values = where
        plan.setdefault(key, _Part(None, key, values)).remove.append(df)
    touched = [pp for pp in plan.values() if pp.add or pp.remove or rec is None]
    if rec is not None and not any(pp.add or pp.remove for pp in touched):
        report.update(up_to_date=True, partitions=[], committed=None, verified=None)
        report["seconds"] = round(time.monotonic() - t0, 3)
        return report
    report["up_to_date"] = False
    report["partitions"] = [
        {
            "partition": pp.key,
            "how": "register" if pp.part is not None else "drop",
            "delete_rows": sum(df.record_count for df in pp.remove) if pp.remove else None,
            "rows_added": sum(f.metadata.num_rows for f in pp.add),
            "files": len(pp.add),
            "register": [f.url for f in pp.add],
            "unregister": sorted(df.file_path for df in pp.remove),
        }
        for pp in touched
    ]
    if opts.dry_run:
        report.update(committed=None, verified=None, seconds=round(time.monotonic() - t0, 3))
        return report
    meta = backend.iceberg_metadata()  # type: ignore[attr-defined]
    adds = [data_file(f, meta, pp.values) for pp in touched for f in pp.add]
    removes = [df for pp in touched for df in pp.remove]
    props: dict[str, str] = {}
    if meta.properties.get(NAME_MAPPING_PROPERTY) is None:
        props[NAME_MAPPING_PROPERTY] = hive_name_mapping(meta.schema())
    if meta.properties.get(ADD_FILES_PROPERTY) != "true":
        props[ADD_FILES_PROPERTY] = "true"
    properties = {SOURCE_TABLE_KEY: src.name, SOURCE_WRITE_IDS_KEY: str(src.snapshot)}
    # verification reads the registered files back through acidctl's filesystem where
    # pyiceberg cannot open their URLs (hdfs://: pyiceberg's is libhdfs, acidctl's WebHDFS)
    backend.read_through(src.tfs)  # type: ignore[attr-defined]
    fire("migrate-add-files-before-commit", adds, removes)
    committed = backend.commit_files(adds, removes, properties, table_properties=props)  # type: ignore[attr-defined]
    report["committed"] = committed.to_dict()
    report["engine"] = "local"
    verified = None
    if opts.verify:
        planned = [_Planned(pp.part, pp.key, pp.values, "register" if pp.part else "drop") for pp in touched]
        verified = _verify(src, backend, schema, pcols, planned, committed, {}, opts, target_display)
    report.update(verified=verified, seconds=round(time.monotonic() - t0, 3))
    return report


def refuse_copy_into(backend: Backend, target_display: str) -> None:
    """A run without ``--add-files`` on a target whose data files are Hive's: refused (exit 6)."""
    registers = getattr(backend, "registers_files", None)
    if registers is not None and registers():
        raise RefusedError(
            f"{target_display} registers Hive's Parquet files (migrated with --add-files); it is left untouched",
            hint="run migrate with --add-files, or copy into a new --target",
        )
