"""The Delta Lake target of ``acidctl migrate`` (issue #23), through ``deltalake`` (delta-rs).

Where the table may live: a local path or ``file://`` URL, and ``s3://`` / ``s3a://`` (the
options are acidctl's ``--fs-option`` s3fs names, translated to deltalake's, see
:func:`delta_storage_options`). Refused with one line: ``hdfs://`` / ``webhdfs://`` (acidctl's
``hdfs://`` is WebHDFS on the NameNode's HTTP port; deltalake's is HDFS's RPC protocol, a
different endpoint: the two cannot name the same thing), ``memory://`` (deltalake's in-memory
store is not the one acidctl reads) and anything else.

Commits (every one carries ``acidctl.source-table`` / ``acidctl.source-write-ids`` as Delta
commit metadata, ``CommitProperties(custom_metadata=...)``, found again at the top level of
``DeltaTable.history()``):

* first load: the table is created by the one commit (version 0) that holds the rows (staged,
  see Memory below; ``partition_by`` = the partition columns);
* catch-up: ONE ``MERGE``. The source stream carries the inserts (every column, flag false) and
  the delete keys (partition values + ``row__id``, flag true, other columns null) of every
  changed partition; ``ON`` = flag AND ``row__id`` fields equal AND every partition column
  ``IS NOT DISTINCT FROM`` (Hive's default partition is a null value); ``WHEN MATCHED DELETE``;
  ``WHEN NOT MATCHED AND NOT flag INSERT``; partitions with ``replace`` drop every current row
  through ``WHEN NOT MATCHED BY SOURCE AND <those partitions> DELETE``. A target-only conjunct
  naming the changed partitions lets delta-rs skip every other partition's files (only files
  with a deleted row are rewritten; untouched files stay in the table). A catch-up whose rows
  change nothing (the MERGE then commits nothing) records its write ids with an empty append:
  still one commit.

``--engine spark`` (:mod:`acidctl.migrate.sparkload`): the Spark tasks write the Parquet files
of whole partitions (a first load, replaced partitions of a Hive 2 / ``--no-row-id`` /
INSERT OVERWRITE catch-up) into the partition directories deltalake would use
(:func:`DeltaBackend.spark_directory`; a first load's inside ``acidctl-load-<id>/``), without
the partition columns; the driver commits them ONCE (:meth:`DeltaBackend._commit_files`): add
actions with partition values, size, modification time and statistics from each footer
(:mod:`acidctl.migrate.deltafiles`) and, on an existing table, remove actions for every current
file of the replaced or dropped partitions — ``create_table_with_add_actions`` for a new table,
``create_write_transaction(mode="append")`` otherwise (same schema, protocol and commit
metadata as the local engine's). A catch-up with row-level changes (inserts and deletes by
``row__id``) cannot be both a MERGE and added files: it runs as the MERGE above, in this
process. A run that fails before or at its commit deletes the files its tasks wrote; one killed
outright leaves files no version references (invisible to readers, removed by ``VACUUM``).

Negative decimal partition values (``p=-1.50``): deltalake 1.6 spells them wrongly
(``-1.-50``) and commits a log it cannot load again
(:func:`acidctl.migrate.deltafiles.deltalake_misspells`); every commit of a run touching such a
partition (:meth:`DeltaBackend.writes_own_files`) is made of files acidctl writes
(``_write_inserts``) and add/remove actions with the protocol's values, the ``--engine spark``
commit above; row-level deletes cannot go in it, so the run replaces those partitions whole.

Delta commits are atomic (a log entry ``_delta_log/NNN.json`` created with put-if-absent): a
failed write leaves no commit, at most orphan data files in the table directory that no
version references (``VACUUM`` removes them after the retention period). A concurrent commit
to the same table between our read and our commit fails ours (delta-rs's conflict checker):
exit 6, nothing committed.

Memory: delta-rs keeps one open Parquet file per partition until a write ends, so the first
load writes whole partitions about ``STAGING_GROUP_ROWS`` rows at a time into a staging Delta
table inside the target (``acidctl-load-<id>/``, its log removed afterwards; the data files stay
there: Delta readers find files through the log's paths and partition values, never by listing)
and creates the target with all their add actions in one commit. A catch-up's MERGE still writes
all its partitions in one go (a catch-up touching very many partitions at once holds their open
files).

Timestamps: Hive's ``timestamp`` has no zone. ``timestamp="ntz"`` (the default) writes Delta
``timestamp_ntz``, which needs reader version 3 / writer version 7 (table feature
``timestampNtz``: Spark 3.4+ / Delta 2.4+, Trino's Delta Lake connector since 2023, trinodb/trino#17502, DuckDB's delta extension);
``timestamp="utc"`` writes Delta ``timestamp`` (reader 1 / writer 2, every reader) holding
Hive's wall-clock value as a UTC instant (Spark shows it in its session time zone: set
``spark.sql.session.timeZone=UTC`` to see Hive's values). Delta keeps microseconds: values with
a sub-microsecond part are the run's business (:func:`acidctl.migrate.types.convert_column`).
"""

from __future__ import annotations

import concurrent.futures
import json
import math
import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from acidctl.errors import (
    AcidctlError,
    ConflictError,
    InvalidInputError,
    RefusedError,
    StorageUnavailable,
    UsageError,
)
from acidctl.migrate.backend import (
    SOURCE_TABLE_KEY,
    SOURCE_WRITE_IDS_KEY,
    Committed,
    PartitionChange,
    Recorded,
)
from acidctl.migrate.types import ROW_ID, ROW_ID_FIELDS

if TYPE_CHECKING:
    import pyarrow as pa

TIMESTAMP_MODES = ("ntz", "utc")

#: operations of other writers that change no row: a catch-up looks past them for the last
#: commit acidctl recorded (Delta's OPTIMIZE/VACUUM keep the data; delta-rs and Spark names)
NEUTRAL_OPERATIONS = frozenset(
    {
        "OPTIMIZE",
        "VACUUM START",
        "VACUUM END",
        "SET TBLPROPERTIES",
        "UNSET TBLPROPERTIES",
        "ADD CONSTRAINT",
        "DROP CONSTRAINT",
        "UPGRADE PROTOCOL",
        "ADD FEATURE",
        "SET TABLE NAME",
        "SET TABLE DESCRIPTION",
        "CHANGE COLUMN",
        "SET COLUMN METADATA",
    }
)
#: commit metadata of the DELETE that undoes a first load whose verification failed: the table
#: then records no snapshot (``recorded()`` is None) and the next run loads it anew
EMPTIED_KEY = "acidctl.emptied"
#: how far back :meth:`DeltaBackend.recorded` looks past neutral commits
HISTORY_LOOKBACK = 100

#: the directory (in the target) of a first load's staging table: its data files stay there
STAGING_PREFIX = "acidctl-load-"

#: rows after which a first load's staging write ends (at the end of a partition): deltalake
#: keeps each partition's file of a write open in memory until the write ends
STAGING_GROUP_ROWS = 1_000_000

#: the merge source's flag column: true = a delete key, false = a row to insert
FLAG = "__acidctl_delete"

#: the Parquet codec of the files ``--engine spark`` writes (deltalake's own default)
SPARK_CODEC = "snappy"
#: footers of Spark-written files read at a time by the committing driver
FOOTER_READERS = 8

_LOCAL_SCHEMES = ("", "file")
_S3_SCHEMES = ("s3", "s3a")


def check_timestamp_mode(value: str | None) -> str:
    v = (value or "ntz").lower()
    if v not in TIMESTAMP_MODES:
        raise UsageError(
            f"--delta-timestamp must be ntz (Delta timestamp_ntz, reader 3 / writer 7) or utc "
            f"(Delta timestamp, Hive's value as a UTC instant), not {value!r}"
        )
    return v


def table_uri(path: str) -> str:
    """The URI deltalake is given for ``path``; refuses (one line) what the Delta target cannot
    live on."""
    scheme = path.split("://", 1)[0].lower() if "://" in path else ""
    if scheme in _LOCAL_SCHEMES:
        local = path[len("file://") :] if scheme == "file" else path
        return os.path.abspath(os.path.expanduser(local))
    if scheme in _S3_SCHEMES:
        return path.rstrip("/")
    if scheme in ("hdfs", "webhdfs", "swebhdfs"):
        raise UsageError(
            f"a Delta target on {scheme}:// is not supported: acidctl reaches HDFS through WebHDFS, "
            "deltalake only through HDFS's RPC protocol; give a local (or mounted) path or s3://"
        )
    raise UsageError(f"a Delta target on {scheme}:// is not supported: give a local path, file:// or s3://")


def delta_storage_options(uri: str, fs_options: dict[str, Any] | None) -> dict[str, str]:
    """acidctl's ``--fs-option`` (s3fs's names) as deltalake storage options: ``endpoint_url``
    (``AWS_ALLOW_HTTP`` too for ``http://``), ``key``, ``secret``, ``token``, ``region`` /
    ``client_kwargs.region_name``, ``anon``; other keys are passed on unchanged (deltalake's own
    names, e.g. ``AWS_REGION``). Credentials not given are found by deltalake as by the AWS SDK
    (environment, profile, instance role)."""
    opts = dict(fs_options or {})
    out: dict[str, str] = {}
    if "://" not in uri:
        return {}  # a local table: fsspec's local options mean nothing to deltalake
    renames = {
        "endpoint_url": "AWS_ENDPOINT_URL",
        "key": "AWS_ACCESS_KEY_ID",
        "secret": "AWS_SECRET_ACCESS_KEY",
        "token": "AWS_SESSION_TOKEN",
        "region": "AWS_REGION",
        "region_name": "AWS_REGION",
    }
    for k, v in opts.items():
        if k == "client_kwargs" and isinstance(v, dict):
            if v.get("region_name"):
                out["AWS_REGION"] = str(v["region_name"])
            if v.get("endpoint_url"):
                out["AWS_ENDPOINT_URL"] = str(v["endpoint_url"])
            continue
        if k == "anon":
            if str(v).lower() in ("1", "true", "yes"):
                out["AWS_SKIP_SIGNATURE"] = "true"
            continue
        out[renames.get(k, str(k))] = str(v)
    endpoint = out.get("AWS_ENDPOINT_URL", os.environ.get("AWS_ENDPOINT_URL", ""))
    if endpoint.lower().startswith("http://"):
        out.setdefault("AWS_ALLOW_HTTP", "true")
    if "AWS_REGION" not in out and not os.environ.get("AWS_REGION") and not os.environ.get("AWS_DEFAULT_REGION"):
        # deltalake wants a region even for an S3-compatible endpoint (s3fs does not)
        out["AWS_REGION"] = "us-east-1"
    return out


# -- types ---------------------------------------------------------------------------------


def delta_type(t: pa.DataType, mode: str) -> pa.DataType:
    """The Arrow type written for the run's target type ``t``: timestamps become UTC instants
    under ``mode="utc"`` (Delta ``timestamp``), else stay zone-less (``timestamp_ntz``)."""
    import pyarrow as pa
    import pyarrow.types as pt

    if mode != "utc":
        return t
    if pt.is_timestamp(t):
        return pa.timestamp("us", tz="UTC")
    if pt.is_struct(t):
        return pa.struct([t.field(i).with_type(delta_type(t.field(i).type, mode)) for i in range(t.num_fields)])
    if pt.is_map(t):
        return pa.map_(
            t.key_field.with_type(delta_type(t.key_type, mode)), t.item_field.with_type(delta_type(t.item_type, mode))
        )
    if pt.is_list(t) or pt.is_large_list(t):
        return pa.list_(t.value_field.with_type(delta_type(t.value_type, mode)))
    return t


def _ntz_type(t: pa.DataType) -> pa.DataType:
    """``t`` with every timestamp zone-less (the inverse of :func:`delta_type`)."""
    import pyarrow as pa
    import pyarrow.types as pt

    if pt.is_timestamp(t):
        return pa.timestamp("us")
    if pt.is_struct(t):
        return pa.struct([t.field(i).with_type(_ntz_type(t.field(i).type)) for i in range(t.num_fields)])
    if pt.is_map(t):
        return pa.map_(t.key_field.with_type(_ntz_type(t.key_type)), t.item_field.with_type(_ntz_type(t.item_type)))
    if pt.is_list(t) or pt.is_large_list(t):
        return pa.list_(t.value_field.with_type(_ntz_type(t.value_type)))
    return t


def delta_schema(schema: pa.Schema, mode: str) -> pa.Schema:
    import pyarrow as pa

    return pa.schema([f.with_type(delta_type(f.type, mode)) for f in schema])


def _cast_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch``'s columns, by name, in ``schema``'s order and types (a safe cast: the run
    already converted the values; this only changes representation, e.g. a zone)."""
    import pyarrow as pa

    if batch.schema.equals(schema):
        return batch
    cols = []
    for f in schema:
        i = batch.schema.get_field_index(f.name)
        if i < 0:
            raise InvalidInputError(f"Delta target: the rows have no column {f.name}")
        col = batch.column(i)
        cols.append(col if col.type.equals(f.type) else col.cast(f.type))
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def _schema_json(schema) -> Any:
    """A Delta schema's JSON without nullability and field metadata (what a target must agree on)."""

    def strip(node):
        if isinstance(node, dict):
            return {
                k: strip(v)
                for k, v in node.items()
                if k not in ("nullable", "metadata", "containsNull", "valueContainsNull")
            }
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(json.loads(schema.to_json()))


# -- SQL of the MERGE --------------------------------------------------------------------------


def _ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _literal(value: Any, t: pa.DataType) -> str | None:
    """``value`` of type ``t`` as a DataFusion SQL literal, None where no exact spelling is known
    (then no predicate names it: the MERGE scans more, never less)."""
    import datetime
    import decimal

    import pyarrow.types as pt

    if isinstance(value, bool) and pt.is_boolean(t):
        return "TRUE" if value else "FALSE"
    if pt.is_integer(t) and isinstance(value, int) and not isinstance(value, bool):
        return f"CAST({int(value)} AS {_INT_SQL.get(str(t), 'BIGINT')})"
    if (pt.is_string(t) or pt.is_large_string(t)) and isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if pt.is_date32(t) and isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return f"CAST('{value.isoformat()}' AS DATE)"
    if pt.is_decimal(t) and isinstance(value, (decimal.Decimal, int)):
        return f"CAST('{decimal.Decimal(value)}' AS DECIMAL({t.precision}, {t.scale}))"
    if pt.is_floating(t) and isinstance(value, (float, int)) and math.isfinite(value):
        # repr round-trips a double; a float32 partition value compares as REAL
        return f"CAST('{float(value)!r}' AS {'REAL' if pt.is_float32(t) else 'DOUBLE'})"
    if pt.is_timestamp(t) and isinstance(value, datetime.datetime):
        value = _naive(value)
        # a zone-less literal: DataFusion compares it with a UTC column as a UTC instant,
        # which is what the utc mode stored
        return f"CAST('{value.isoformat(timespec='microseconds')}' AS TIMESTAMP)"
    return None


_INT_SQL = {"int8": "TINYINT", "int16": "SMALLINT", "int32": "INT", "int64": "BIGINT"}


def _partition_predicate(alias: str, values: dict[str, Any], schema: pa.Schema) -> str | None:
    """``alias``'s partition columns equal to ``values`` (a null value: ``IS NULL``); None when
    a value has no exact literal; ``TRUE`` for an unpartitioned table."""
    terms = []
    for name, value in values.items():
        col = f"{alias}.{_ident(name)}" if alias else _ident(name)
        if value is None:
            terms.append(f"({col} IS NULL)")
            continue
        lit = _literal(value, schema.field(name).type)
        if lit is None:
            return None
        terms.append(f"({col} = {lit})")
    return "(" + " AND ".join(terms) + ")" if terms else "TRUE"


def _any_of(predicates: list[str | None]) -> str | None:
    if any(p is None for p in predicates):
        return None
    if "TRUE" in predicates:
        return "TRUE"
    return "(" + " OR ".join(p for p in predicates if p) + ")" if predicates else None


class DeltaBackend:
    """A Delta Lake table as a migration target (:class:`acidctl.migrate.backend.Backend`).

    ``path``: where the table lives (see the module's doc); ``storage_options``: acidctl's
    ``--fs-option`` values; ``timestamp``: ``ntz`` (Delta ``timestamp_ntz``) or ``utc``."""

    #: Delta has byte and short: Hive's tinyint/smallint keep their width (types.target_type)
    small_ints = True
    #: ``--engine spark``: a commit holding Spark-written files (add/remove actions) cannot also
    #: hold row-level changes (a MERGE): a catch-up with any runs in this process
    spark_with_row_changes = False

    def __init__(self, path: str, storage_options: dict[str, Any] | None = None, *, timestamp: str = "ntz"):
        self.path = path
        self.uri = table_uri(path)
        self.fs_options = dict(storage_options or {})
        self.options = delta_storage_options(self.uri, storage_options)
        self.timestamp = check_timestamp_mode(timestamp)
        self._schema: pa.Schema | None = None  # the run's target schema (ensure)
        self._partition_columns: list[str] | None = None
        #: the version of the RESTORE commit :meth:`rollback` made (None: none made)
        self.restored_version: int | None = None
        #: ``--engine spark``: where this run's files go below the table (a first load:
        #: ``acidctl-load-<id>/``, like the local first load's; a catch-up: the table itself)
        self._spark_prefix: str | None = None

    # -- table access ----------------------------------------------------------------------
    def _table(self, version: int | None = None):
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            return DeltaTable(self.uri, version=version, storage_options=self.options)
        except TableNotFoundError:
            if version is not None:
                raise InvalidInputError(f"Delta table {self.path}: no version {version}") from None
            return None
        except OSError as e:
            raise StorageUnavailable(f"Delta table {self.path}: {_text(e)}", hint=_credentials_hint(e)) from None
        except Exception as e:  # deltalake's DeltaError family: unreachable store, bad options
            raise _mapped(e, f"Delta table {self.path}") from None

    # -- Backend -----------------------------------------------------------------------------
    def recorded(self) -> Recorded | None:
        """The source recorded by the newest commit of acidctl's; commits after it that change no
        row (OPTIMIZE, VACUUM, table properties) are looked past; any other one refuses (exit 6)."""
        dt = self._table()
        if dt is None:
            return None
        version = dt.version()
        for entry in dt.history(HISTORY_LOOKBACK):
            if str(entry.get(EMPTIED_KEY, "")).lower() == "true":
                return None  # a first load rolled back: the table holds no snapshot yet
            if SOURCE_TABLE_KEY in entry and SOURCE_WRITE_IDS_KEY in entry:
                return Recorded(
                    source_table=str(entry[SOURCE_TABLE_KEY]),
                    write_ids=str(entry[SOURCE_WRITE_IDS_KEY]),
                    version=version,
                )
            op = str(entry.get("operation", "?"))
            if op not in NEUTRAL_OPERATIONS:
                raise RefusedError(
                    f"Delta table {self.path}: version {entry.get('version', '?')} ({op}) was not "
                    "written by acidctl migrate, so what it holds is not a Hive snapshot acidctl "
                    "can catch up from; migrate to a new target"
                )
        raise RefusedError(
            f"Delta table {self.path} records no acidctl source in its last {HISTORY_LOOKBACK} "
            "commits (not written by acidctl migrate); migrate to a new target"
        )

    def ensure(self, schema: pa.Schema, partition_columns: list[str], *, dry_run: bool) -> None:
        """Remember the target schema; an existing table must have the same columns, types and
        partition columns (else exit 6). A missing table is created by the first
        :meth:`commit` (one commit with the rows), so ``dry_run`` and not change nothing here; a
        directory holding files but no Delta table is refused."""
        from deltalake import Schema as DeltaSchema

        if FLAG in schema.names:
            raise InvalidInputError(f"column {FLAG} is reserved by the Delta target of acidctl migrate")
        self._schema = schema
        self._partition_columns = list(partition_columns)
        dt = self._table()
        if dt is None:
            self._refuse_foreign_files()
            return
        want = _schema_json(DeltaSchema.from_arrow(delta_schema(schema, self.timestamp)))
        have = _schema_json(dt.schema())
        if want != have:
            raise RefusedError(
                f"Delta table {self.path}: its columns differ from the source's "
                f"({_first_difference(have, want)}); migrate to a new target"
            )
        have_parts = [c.lower() for c in dt.metadata().partition_columns]
        if have_parts != [c.lower() for c in partition_columns]:
            raise RefusedError(
                f"Delta table {self.path} is partitioned by {have_parts or 'nothing'}, "
                f"the source by {list(partition_columns) or 'nothing'}; migrate to a new target"
            )

    def _refuse_foreign_files(self) -> None:
        from acidctl.errors import NotFoundError
        from acidctl.fs import TableFS

        try:
            fs = TableFS(self.uri, self.fs_options)
            entries = fs.ls(fs.root)
        except NotFoundError:
            return
        except AcidctlError:
            return  # deltalake will say what is wrong with the location when it writes
        if any(not e.name.startswith(STAGING_PREFIX) for e in entries):
            raise RefusedError(
                f"{self.path} holds files but no Delta table: give an empty or new directory as --target"
            )

    def table_schema(self) -> pa.Schema | None:
        """The existing table's columns in the run's types (None: no table): the columns of a
        source given as a path whose snapshot has no data file left. Timestamps come back
        zone-less whatever ``--delta-timestamp`` wrote."""
        import pyarrow as pa

        dt = self._table()
        if dt is None:
            return None
        return pa.schema([f.with_type(_ntz_type(f.type)) for f in pa.schema(dt.schema().to_arrow())])

    def partitions(self) -> list[dict[str, Any]]:
        """The typed partition values of every partition the current version has rows in, from
        the add actions of the log (no data file is read); ``[{}]`` / ``[]`` unpartitioned."""
        import pyarrow as pa

        dt = self._table()
        if dt is None:
            return []
        cols = list(dt.metadata().partition_columns)
        actions = pa.table(dt.get_add_actions(flatten=True))
        if actions.num_rows == 0:
            return []
        counts = actions.column("num_records").to_pylist() if "num_records" in actions.column_names else None
        keep = [i for i in range(actions.num_rows) if counts is None or counts[i] is None or counts[i] > 0]
        if not cols:
            return [{}] if keep else []
        columns = {c: actions.column(f"partition.{c}").to_pylist() for c in cols}
        seen: dict[tuple, dict[str, Any]] = {}
        for i in keep:
            values = {c: _naive(columns[c][i]) for c in cols}
            seen.setdefault(tuple(values[c] for c in cols), values)
        return list(seen.values())

    def row_ids(self, values: dict[str, Any]) -> pa.Table:
        """The ``row__id`` fields (writeid, bucketid, rowid) of the current rows of one partition."""
        import pyarrow as pa
        import pyarrow.compute as pc

        out_schema = pa.schema([pa.field(n, getattr(pa, t)()) for n, t in ROW_ID_FIELDS])
        dt = self._table()
        if dt is None:
            return out_schema.empty_table()
        if ROW_ID not in [f.name for f in pa.schema(dt.schema().to_arrow())]:
            raise InvalidInputError(f"Delta table {self.path} has no {ROW_ID} column (migrated with --no-row-id)")
        arrow_schema = pa.schema(dt.schema().to_arrow())
        # the predicate prunes files; the mask below decides (a value without a literal scans all)
        pred = _partition_predicate("", values, arrow_schema) if values else None
        reader = dt.scan(columns=[ROW_ID, *values.keys()], predicate=pred if pred != "TRUE" else None)
        parts = []
        for batch in pa.RecordBatchReader.from_stream(reader):
            mask = None
            for name, value in values.items():
                col = batch.column(batch.schema.get_field_index(name))
                m = (
                    pc.is_null(col)
                    if value is None
                    else pc.fill_null(pc.equal(col, pa.scalar(value, type=col.type)), False)
                )
                mask = m if mask is None else pc.and_(mask, m)
            rid = batch.column(batch.schema.get_field_index(ROW_ID))
            if mask is not None:
                rid = rid.filter(mask)
            parts.append(
                pa.record_batch(
                    [rid.field(n).cast(out_schema.field(n).type) for n, _ in ROW_ID_FIELDS], schema=out_schema
                )
            )
        return pa.Table.from_batches(parts, schema=out_schema)

    def commit(self, changes: list[PartitionChange], properties: dict[str, str]) -> Committed:
        """ONE Delta commit with every change, carrying ``properties`` as commit metadata."""
        from deltalake import CommitProperties

        if SOURCE_TABLE_KEY not in properties or SOURCE_WRITE_IDS_KEY not in properties:
            raise ValueError("a Delta commit of acidctl migrate records its source table and write ids")
        cp = CommitProperties(custom_metadata={str(k): str(v) for k, v in properties.items()})
        if any(c.files for c in changes) or any(self.writes_own_files(c.values) for c in changes):
            return self._commit_files(changes, cp)
        dt = self._table()
        if dt is None:
            return self._first_load(changes, cp)
        return self._catch_up(dt, changes, cp)

    def writes_own_files(self, values: dict[str, Any]) -> bool:
        """Whether a change to the partition ``values`` must not be written by deltalake: a
        negative decimal partition value, which deltalake 1.6 spells wrongly and which then
        breaks the whole table (:func:`acidctl.migrate.deltafiles.deltalake_misspells`). A run
        touching such a partition writes its data files itself and commits them as add/remove
        actions with the protocol's partition values (:meth:`_commit_files`, the
        ``--engine spark`` commit); that commit cannot also be a MERGE, so the run replaces
        partitions with deleted rows whole (:func:`acidctl.migrate.run.migrate`). After
        :meth:`ensure`."""
        from acidctl.migrate.deltafiles import deltalake_misspells

        if not values:
            return False
        schema = self._target_schema()
        return any(deltalake_misspells(v, schema.field(k).type) for k, v in values.items())

    # -- --engine spark: files written elsewhere, committed as add/remove actions ---------------

    def _file_schema(self) -> pa.Schema:
        """The data files' schema: the table's columns without the partition columns (Delta
        keeps partition values in the log, not in the files)."""
        import pyarrow as pa

        schema = self._target_schema()
        parts = set(self._partition_columns or [])
        return pa.schema([f for f in schema if f.name not in parts])

    def spark_target(self) -> tuple[str, pa.Schema, str]:
        """(the table's location, the files' Arrow schema, the Parquet codec) for data files
        written by Spark tasks (``PartitionChange.files``, committed by :meth:`commit`). After
        :meth:`ensure`. Refused (exit 6) for a table whose files deltalake would have to write
        differently or check: column mapping (physical column names), CHECK constraints (a
        neutral ``ADD CONSTRAINT`` since the last run)."""
        dt = self._table()
        if dt is not None:
            config = dict(dt.metadata().configuration or {})
            mapping = str(config.get("delta.columnMapping.mode") or "none").lower()
            constraints = sorted(k[len("delta.constraints.") :] for k in config if k.startswith("delta.constraints."))
            why = (
                f"column mapping ({mapping})"
                if mapping != "none"
                else f"CHECK constraint {', '.join(constraints)}"
                if constraints
                else None
            )
            if why:
                raise RefusedError(
                    f"Delta table {self.path} has {why}: --engine spark writes plain Parquet files that "
                    "deltalake would have to write or check itself",
                    hint="run migrate without --engine spark",
                )
        return self.uri, self._file_schema(), SPARK_CODEC

    def spark_storage(self) -> dict[str, str]:
        """The storage options the Spark tasks write with (deltalake's names, see
        :func:`acidctl.migrate.deltafiles.arrow_filesystem`)."""
        return dict(self.options)

    def spark_directory(self, values: dict[str, Any]) -> str:
        """Where the files of the partition ``values`` go: ``col=value/...`` as deltalake names
        it, inside ``acidctl-load-<id>/`` on a first load (a run that dies before its commit
        then leaves nothing that makes the directory look like a foreign one, see
        :meth:`ensure`), else in the table directory."""
        import uuid

        from acidctl.migrate.deltafiles import partition_directory

        if self._spark_prefix is None:
            self._spark_prefix = "" if self._table() is not None else f"{STAGING_PREFIX}{uuid.uuid4().hex[:16]}"
        rel = partition_directory(values, list(self._partition_columns or []), self._target_schema())
        return "/".join(x for x in (self.uri.rstrip("/"), self._spark_prefix, rel) if x)

    def _commit_files(self, changes: list[PartitionChange], cp) -> Committed:
        """ONE commit of files written elsewhere: an add action per file (partition values,
        size, modification time, statistics from its footer) and, on an existing table, a
        remove action per current file of every replaced or dropped partition. A new table is
        created by that commit (``create_table_with_add_actions``), an existing one gets an
        append transaction (``create_write_transaction``: no metadata or protocol change).
        Rows handed over as ``inserts`` as well are written here into the same directories.
        Nothing committed (any failure): every file of the run is deleted."""
        import time

        from deltalake.transaction import RemoveAction

        from acidctl.migrate.deltafiles import add_action, partition_strings

        for c in changes:
            if c.delete_row_ids is not None and c.delete_row_ids.num_rows:
                raise ValueError(f"partition {c.key or '(table)'}: row deletes cannot go with files written elsewhere")
        schema = self._target_schema()
        parts = list(self._partition_columns or [])
        file_schema = self._file_schema()
        root = self.uri.rstrip("/")
        written = [p for c in changes for p in c.files]
        rels = [p[len(root) + 1 :] for p in written if p.startswith(root + "/")]
        raised = _Raised()
        try:
            try:
                dt = self._table()
                if self._spark_prefix:
                    # planned as a new table: created by this commit, or refused if another
                    # writer created it meanwhile (never appended to someone else's table)
                    dt = None
                previous = dt.version() if dt is not None else None
                todo = []
                for c in changes:
                    extra = self._write_inserts(raised.watch(iter(c.inserts)), c.values, schema, file_schema)
                    written.extend(extra)
                    rels.extend(p[len(root) + 1 :] for p in extra)
                    for path in [*c.files, *extra]:
                        if not path.startswith(root + "/"):
                            raise ValueError(f"{path} is not inside the Delta table {self.path}")
                        todo.append((path, path[len(root) + 1 :], c.values))
                # one footer read per file (a few requests each on S3): a few at a time
                with concurrent.futures.ThreadPoolExecutor(max_workers=FOOTER_READERS) as pool:
                    done = list(
                        pool.map(lambda x: add_action(x[0], x[1], x[2], parts, schema, file_schema, self.options), todo)
                    )
                adds = [a for a, _ in done]
                rows_added = sum(n for _, n in done)
                removes: list = []
                rows_removed = 0
                replaced = [c.values for c in changes if c.replace]
                if dt is not None and replaced:
                    now = int(time.time() * 1000)
                    for rel, size, values, n in _current_files(dt, replaced):
                        removes.append(
                            RemoveAction(
                                path=rel,
                                data_change=True,
                                deletion_timestamp=now,
                                size=size,
                                partition_values=partition_strings(values, parts, schema),
                            )
                        )
                        rows_removed += n
                if dt is None:
                    self._create_with(adds, schema, parts, cp)
                else:
                    dt.create_write_transaction(
                        [*adds, *removes], mode="append", schema=dt.schema(), partition_by=parts or None,
                        commit_properties=cp,
                    )  # fmt: skip
            except AcidctlError:
                raise
            except Exception as e:
                raised.reraise()
                raise _mapped(e, f"Delta table {self.path}: the commit failed, nothing was committed") from None
        except BaseException:
            if not self._referenced(rels):  # e.g. a failure after the commit (its hooks): keep them
                self._discard(written)
            raise
        dt = self._table()
        assert dt is not None
        return Committed(
            version=dt.version(),
            previous=previous,
            files_added=len(adds),
            files_removed=len(removes),
            rows_added=rows_added,
            rows_removed=rows_removed,
        )

    def _create_with(self, adds: list, schema: pa.Schema, parts: list[str], cp) -> None:
        """The table created by ONE commit of the add actions ``adds`` (``mode="error"``: refused
        if a table appeared there meanwhile)."""
        from deltalake import Schema as DeltaSchema
        from deltalake.transaction import create_table_with_add_actions

        create_table_with_add_actions(
            self.uri,
            DeltaSchema.from_arrow(schema),
            adds,
            mode="error",
            partition_by=parts or None,
            storage_options=self.options,
            commit_properties=cp,
        )

    def _write_inserts(self, batches: Iterator[pa.RecordBatch], values, schema, file_schema) -> list[str]:
        """Rows of a partition written as one Parquet file in its Spark directory; its path
        (none: no row)."""
        import uuid

        import pyarrow as pa
        import pyarrow.parquet as pq

        from acidctl.migrate.deltafiles import arrow_filesystem

        path = f"{self.spark_directory(values)}/acidctl-{uuid.uuid4().hex}-local.parquet"
        writer = None
        try:
            for b in batches:
                if not b.num_rows:
                    continue
                if writer is None:
                    fs, where = arrow_filesystem(path, self.options)
                    fs.create_dir(where.rsplit("/", 1)[0], recursive=True)
                    writer = pq.ParquetWriter(fs.open_output_stream(where), file_schema, compression=SPARK_CODEC)
                t = pa.Table.from_batches([_cast_batch(b, schema)]).select(file_schema.names).cast(file_schema)
                writer.write_table(t)
        finally:
            if writer is not None:
                writer.close()
        return [path] if writer is not None else []

    def _referenced(self, rels: list[str]) -> bool:
        """Whether the table's current version holds one of these files (relative paths as on
        disk); True when that cannot be told (a file deleted under a version is a broken table,
        one left over harms nobody)."""
        import urllib.parse

        import pyarrow as pa

        if not rels:
            return False
        try:
            dt = self._table()
            if dt is None:
                return False
            current = {urllib.parse.unquote(p) for p in pa.table(dt.get_add_actions()).column("path").to_pylist()}
        except Exception:
            return True
        return any(r in current for r in rels)

    def _discard(self, paths: list[str]) -> None:
        """Delete files of this run that no commit references, and a first load's directory."""
        from acidctl.migrate.deltafiles import arrow_filesystem

        for p in paths:
            try:
                fs, where = arrow_filesystem(p, self.options)
                fs.delete_file(where)
            except Exception:
                pass
        if self._spark_prefix:
            from acidctl.fs import TableFS, join_path

            fs = TableFS(self.uri, self.fs_options)
            _remove_quietly(fs, join_path(fs.root, self._spark_prefix))

    def _target_schema(self, dt=None) -> pa.Schema:
        import pyarrow as pa

        if self._schema is not None:
            return delta_schema(self._schema, self.timestamp)
        if dt is None:
            raise ValueError("ensure() was not called before the first commit")
        return pa.schema(dt.schema().to_arrow())

    def _first_load(self, changes: list[PartitionChange], cp) -> Committed:
        """The table created by ONE commit holding every row, written with bounded memory:
        whole partitions, about STAGING_GROUP_ROWS rows at a time, are written (and their files
        closed) by a ``write_deltalake`` each into a staging Delta table inside the target directory (``acidctl-load-<id>/``); the add
        actions of the staging log, copied verbatim (partition values, statistics) with their
        paths prefixed, then create the target table in one commit
        (``create_table_with_add_actions``), and the staging log is removed. One write of all
        partitions at once would keep every partition's file open in memory until the end."""
        import uuid

        import pyarrow as pa
        from deltalake import write_deltalake

        from acidctl.fs import TableFS, join_path

        for c in changes:
            if c.delete_row_ids is not None and c.delete_row_ids.num_rows:
                raise ValueError(f"partition {c.key or '(table)'}: deletes on a Delta table that does not exist yet")
        schema = self._target_schema()
        parts = list(self._partition_columns or [])
        prefix = f"{STAGING_PREFIX}{uuid.uuid4().hex[:16]}"
        staging = join_path(self.uri, prefix)
        counted = [0]
        fs = TableFS(self.uri, self.fs_options)

        pending = iter(changes)
        more = [True]

        def group() -> Iterator[pa.RecordBatch]:
            """Whole partitions, until STAGING_GROUP_ROWS rows have gone by (small partitions
            share a write, a big one has its own)."""
            n = 0
            while n < STAGING_GROUP_ROWS:
                c = next(pending, None)
                if c is None:
                    more[0] = False
                    return
                for b in c.inserts:
                    b = _cast_batch(b, schema)
                    counted[0] += b.num_rows
                    n += b.num_rows
                    yield b

        raised = _Raised()
        try:
            try:
                first = True
                while first or more[0]:
                    write_deltalake(
                        staging,
                        pa.RecordBatchReader.from_batches(schema, raised.watch(group())),
                        partition_by=parts or None,
                        mode="error" if first else "append",
                        storage_options=self.options,
                    )
                    first = False
                adds = _staged_adds(fs, join_path(fs.root, prefix), prefix)
                self._create_with(adds, schema, parts, cp)
            except Exception as e:
                raised.reraise()
                raise _mapped(e, f"Delta table {self.path}: the first commit failed, nothing was committed") from None
        except BaseException:
            _remove_quietly(fs, join_path(fs.root, prefix))  # files no version references
            raise
        _remove_quietly(fs, join_path(fs.root, prefix, "_delta_log"))
        dt = self._table()
        assert dt is not None
        return Committed(
            version=dt.version(),
            previous=None,
            files_added=len(adds),
            files_removed=0,
            rows_added=counted[0],
            rows_removed=0,
        )

    def _catch_up(self, dt, changes: list[PartitionChange], cp) -> Committed:
        import pyarrow as pa
        from deltalake import write_deltalake

        previous = dt.version()
        schema = self._target_schema(dt)
        arrow_names = set(schema.names)
        parts = list(
            self._partition_columns if self._partition_columns is not None else dt.metadata().partition_columns
        )
        has_row_id = ROW_ID in arrow_names
        src_schema = schema.append(pa.field(FLAG, pa.bool_()))
        for c in changes:
            if set(c.values) != set(parts):
                raise ValueError(
                    f"partition {c.key!r}: values {sorted(c.values)} are not the partition columns {parts}"
                )
            if not has_row_id and c.delete_row_ids is not None and c.delete_row_ids.num_rows:
                raise InvalidInputError(
                    f"Delta table {self.path} has no {ROW_ID} column: deleted rows cannot be matched "
                    "(catch up by replacing partitions)"
                )
        if changes and all(c.replace and (c.delete_row_ids is None or not c.delete_row_ids.num_rows) for c in changes):
            bare = _any_of([_partition_predicate("", c.values, schema) for c in changes])
            if bare is not None:
                return self._replace_partitions(dt, changes, cp, schema, bare)

        counted = {"inserts": 0, "deletes": 0}

        def source() -> Iterator[pa.RecordBatch]:
            for c in changes:
                if c.delete_row_ids is not None and c.delete_row_ids.num_rows:
                    for b in c.delete_row_ids.to_batches():
                        counted["deletes"] += b.num_rows
                        yield _delete_batch(b, c.values, src_schema)
                for b in c.inserts:
                    b = _cast_batch(b, schema)
                    counted["inserts"] += b.num_rows
                    yield pa.RecordBatch.from_arrays(
                        [*b.columns, pa.repeat(pa.scalar(False), b.num_rows)], schema=src_schema
                    )

        on = [f"s.{_ident(FLAG)}"]
        if has_row_id:
            on += [f"(t.{_ident(ROW_ID)}.{_ident(n)} = s.{_ident(ROW_ID)}.{_ident(n)})" for n, _ in ROW_ID_FIELDS]
        else:
            on.append("FALSE")
        on += [f"(t.{_ident(p)} IS NOT DISTINCT FROM s.{_ident(p)})" for p in parts]
        touched = _any_of([_partition_predicate("t", c.values, schema) for c in changes])
        if touched and touched != "TRUE":
            on.insert(0, touched)  # lets delta-rs skip the files of every other partition
        replaced = [c for c in changes if c.replace]
        raised = _Raised()
        try:
            merger = dt.merge(
                pa.RecordBatchReader.from_batches(src_schema, raised.watch(source())),
                " AND ".join(on),
                source_alias="s",
                target_alias="t",
                streamed_exec=True,
                commit_properties=cp,
            )
            merger = merger.when_matched_delete().when_not_matched_insert(
                {_ident(n): f"s.{_ident(n)}" for n in schema.names}, predicate=f"NOT s.{_ident(FLAG)}"
            )
            if replaced:
                which = _any_of([_partition_predicate("t", c.values, schema) for c in replaced])
                if which is None:
                    raise InvalidInputError(
                        f"Delta table {self.path}: cannot name partition "
                        f"{next(c.key for c in replaced if _partition_predicate('t', c.values, schema) is None)} "
                        "in a predicate (its partition column's type has no exact SQL literal)"
                    )
                merger = merger.when_not_matched_by_source_delete(None if which == "TRUE" else which)
            metrics = merger.execute()
        except AcidctlError:
            raise
        except Exception as e:
            raised.reraise()
            raise _mapped(e, f"Delta table {self.path}: the catch-up MERGE failed, nothing was committed") from None
        dt = self._table()
        assert dt is not None
        version = dt.version()
        if version == previous:
            # nothing matched and nothing to insert: the MERGE committed nothing; the new write
            # ids are still recorded, by an empty append (one commit all the same)
            try:
                write_deltalake(
                    dt,
                    pa.RecordBatchReader.from_batches(schema, iter(())),
                    mode="append",
                    commit_properties=cp,
                )
            except Exception as e:
                raise _mapped(
                    e, f"Delta table {self.path}: recording the write ids failed, nothing was committed"
                ) from None
            dt = self._table()
            assert dt is not None
            return Committed(dt.version(), previous, 0, 0, 0, 0)
        return Committed(
            version=version,
            previous=previous,
            files_added=int(metrics.get("num_target_files_added", 0)),
            files_removed=int(metrics.get("num_target_files_removed", 0)),
            rows_added=int(metrics.get("num_target_rows_inserted", 0)),
            rows_removed=int(metrics.get("num_target_rows_deleted", 0)),
        )

    def _replace_partitions(
        self, dt, changes: list[PartitionChange], cp, schema: pa.Schema, predicate: str
    ) -> Committed:
        """Every change replaces its partition (Hive 2 tables, ``--no-row-id``, INSERT
        OVERWRITE): one overwrite commit whose predicate names those partitions, so the files of
        the replaced partitions are removed whole without being read (a MERGE's ``NOT MATCHED BY
        SOURCE`` would read every file of the table)."""
        import pyarrow as pa
        from deltalake import write_deltalake

        previous = dt.version()
        removed_files, removed_rows = _files_in(dt, [c.values for c in changes])
        counted = [0]

        def batches() -> Iterator[pa.RecordBatch]:
            for c in changes:
                for b in c.inserts:
                    b = _cast_batch(b, schema)
                    counted[0] += b.num_rows
                    yield b

        raised = _Raised()
        try:
            write_deltalake(
                dt,
                pa.RecordBatchReader.from_batches(schema, raised.watch(batches())),
                mode="overwrite",
                predicate=None if predicate == "TRUE" else predicate,
                commit_properties=cp,
            )
        except Exception as e:
            raised.reraise()
            raise _mapped(e, f"Delta table {self.path}: replacing partitions failed, nothing was committed") from None
        dt = self._table()
        assert dt is not None
        version = dt.version()
        metrics = _commit_metrics(dt, version)
        return Committed(
            version=version,
            previous=previous,
            files_added=int(metrics.get("num_added_files", 0)),
            files_removed=int(metrics.get("num_removed_files", removed_files)),
            rows_added=counted[0],
            rows_removed=removed_rows,
        )

    def scan(self, version: int) -> Iterator[pa.RecordBatch]:
        """The rows of ``version``, streamed, in the run's target schema (``ensure``) where known."""
        import pyarrow as pa

        dt = self._table(version)
        reader = pa.RecordBatchReader.from_stream(dt.scan())
        schema = self._schema
        for batch in reader:
            yield _cast_batch(batch, schema) if schema is not None else batch

    def rollback(self, committed: Committed) -> str | None:
        """Undo ``committed`` by a new commit (its version in :attr:`restored_version`): a
        RESTORE to the version before it, carrying that version's acidctl metadata, so the next
        run catches up from there; a first load (the table was created by ``committed``) is
        undone by a DELETE of every row marked ``acidctl.emptied``, after which the next run loads
        anew. Refused, with what to do instead, when the table has moved on since."""
        from deltalake import CommitProperties

        dt = self._table()
        if dt is None:
            return f"the Delta table {self.path} is gone"
        if dt.version() != committed.version:
            return (
                f"the Delta table {self.path} has moved on to version {dt.version()} since version "
                f"{committed.version}: restore version {committed.previous} yourself "
                f"(RESTORE TABLE ... TO VERSION AS OF {committed.previous}) if nothing else depends on it"
            )
        if committed.previous is None:
            try:
                dt.delete(commit_properties=CommitProperties(custom_metadata={EMPTIED_KEY: "true"}))
            except Exception as e:
                return (
                    f"emptying the Delta table {self.path} failed ({_mapped(e, 'delete')}): it holds an "
                    "unverified first load, delete it before running migrate again"
                )
            dt = self._table()
            self.restored_version = dt.version() if dt is not None else None
            return None
        meta = {}
        for entry in dt.history(committed.version - committed.previous + HISTORY_LOOKBACK):
            if int(entry.get("version", -1)) > committed.previous:
                continue
            if str(entry.get(EMPTIED_KEY, "")).lower() == "true":
                meta = {EMPTIED_KEY: "true"}
                break
            if SOURCE_TABLE_KEY in entry and SOURCE_WRITE_IDS_KEY in entry:
                meta = {
                    SOURCE_TABLE_KEY: str(entry[SOURCE_TABLE_KEY]),
                    SOURCE_WRITE_IDS_KEY: str(entry[SOURCE_WRITE_IDS_KEY]),
                }
                break
        try:
            dt.restore(committed.previous, commit_properties=CommitProperties(custom_metadata=meta) if meta else None)
        except Exception as e:
            return f"restoring the Delta table {self.path} to version {committed.previous} failed ({_mapped(e, 'restore')}): restore it yourself"
        dt = self._table()
        self.restored_version = dt.version() if dt is not None else None
        return None


def _files_in(dt, partitions: list[dict[str, Any]]) -> tuple[int, int]:
    """(files, rows) of the current version in these partitions (from the log's add actions)."""
    import pyarrow as pa

    actions = pa.table(dt.get_add_actions(flatten=True))
    if actions.num_rows == 0:
        return 0, 0
    cols = list(dt.metadata().partition_columns)
    wanted = {tuple(_naive(v.get(c)) for c in cols) for v in partitions}
    values = [[_naive(x) for x in actions.column(f"partition.{c}").to_pylist()] for c in cols]
    counts = (
        actions.column("num_records").to_pylist() if "num_records" in actions.column_names else [0] * actions.num_rows
    )
    files = rows = 0
    for i in range(actions.num_rows):
        if tuple(v[i] for v in values) in wanted:
            files += 1
            rows += int(counts[i] or 0)
    return files, rows


def _current_files(dt, partitions: list[dict[str, Any]]) -> list[tuple[str, int, dict[str, Any], int]]:
    """(path relative to the table as on disk, size, typed partition values, rows) of the current
    version's files in these partitions (the log's add actions; its paths are URL-encoded)."""
    import urllib.parse

    import pyarrow as pa

    actions = pa.table(dt.get_add_actions(flatten=True))
    if actions.num_rows == 0:
        return []
    cols = list(dt.metadata().partition_columns)
    wanted = {tuple(_naive(v.get(c)) for c in cols) for v in partitions}
    values = {c: [_naive(x) for x in actions.column(f"partition.{c}").to_pylist()] for c in cols}
    paths = actions.column("path").to_pylist()
    sizes = actions.column("size_bytes").to_pylist()
    counts = (
        actions.column("num_records").to_pylist() if "num_records" in actions.column_names else [0] * actions.num_rows
    )
    out = []
    for i in range(actions.num_rows):
        v = {c: values[c][i] for c in cols}
        if tuple(v[c] for c in cols) in wanted:
            out.append((urllib.parse.unquote(paths[i]), int(sizes[i]), v, int(counts[i] or 0)))
    return out


def _staged_adds(fs, staging_root: str, prefix: str) -> list:
    """The add actions of every commit of the staging table at ``staging_root`` (its log read
    as written: partition values and statistics stay Delta's own strings), their paths under
    ``prefix/`` of the target. The log's paths are URL-encoded; ``AddAction`` takes them
    decoded (deltalake encodes them again)."""
    import urllib.parse

    from deltalake.transaction import AddAction

    log = staging_root.rstrip("/") + "/_delta_log"
    adds = []
    for e in sorted(fs.ls(log), key=lambda e: e.name):
        if not (e.name.endswith(".json") and e.name[:-5].isdigit()):
            continue
        for line in fs.read_bytes(e.path).decode().splitlines():
            if not line.strip():
                continue
            action = json.loads(line)
            add = action.get("add")
            if add is None:
                continue
            adds.append(
                AddAction(
                    path=f"{prefix}/{urllib.parse.unquote(add['path'])}",
                    size=int(add["size"]),
                    partition_values=dict(add.get("partitionValues") or {}),
                    modification_time=int(add["modificationTime"]),
                    data_change=True,
                    stats=add.get("stats") or "{}",
                )
            )
    return adds


def _remove_quietly(fs, path: str) -> None:
    try:
        fs.rm(path, recursive=True)
    except Exception:
        pass


class _Raised:
    """What the rows' own iterator raised while deltalake consumed it: deltalake wraps it in its
    own error ("Python exception: ..."); the original (e.g. a refused nanosecond timestamp, exit
    7) is what the user must see."""

    def __init__(self) -> None:
        self.error: BaseException | None = None

    def watch(self, it: Iterator[Any]) -> Iterator[Any]:
        try:
            yield from it
        except BaseException as e:
            self.error = e
            raise

    def reraise(self) -> None:
        if self.error is not None:
            raise self.error.with_traceback(None)


def _naive(value: Any) -> Any:
    """A UTC timestamp (the utc mode's) as the run's zone-less value."""
    import datetime

    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return value


def _delete_batch(keys: pa.RecordBatch, values: dict[str, Any], src_schema: pa.Schema) -> pa.RecordBatch:
    """Delete keys of one partition as merge source rows: row__id, the partition values, flag
    true, every other column null."""
    import pyarrow as pa

    n = keys.num_rows
    rid_type = src_schema.field(ROW_ID).type
    rid = pa.StructArray.from_arrays(
        [keys.column(keys.schema.get_field_index(name)).cast(rid_type.field(name).type) for name, _ in ROW_ID_FIELDS],
        fields=[rid_type.field(name) for name, _ in ROW_ID_FIELDS],
    )
    cols = []
    for f in src_schema:
        if f.name == ROW_ID:
            cols.append(rid)
        elif f.name == FLAG:
            cols.append(pa.repeat(pa.scalar(True), n))
        elif f.name in values:
            v = values[f.name]
            cols.append(pa.nulls(n, type=f.type) if v is None else pa.repeat(pa.scalar(v, type=f.type), n))
        else:
            cols.append(pa.nulls(n, type=f.type))
    return pa.RecordBatch.from_arrays(cols, schema=src_schema)


def _commit_metrics(dt, version: int) -> dict:
    for entry in dt.history(5):
        if int(entry.get("version", -1)) == version:
            return dict(entry.get("operationMetrics") or {})
    return {}


def _first_difference(have: Any, want: Any) -> str:
    hf = {f["name"]: f["type"] for f in have.get("fields", [])}
    wf = {f["name"]: f["type"] for f in want.get("fields", [])}
    for name in wf:
        if name not in hf:
            return f"no column {name}"
        if hf[name] != wf[name]:
            return f"column {name} is {json.dumps(hf[name])}, the source's {json.dumps(wf[name])}"
    for name in hf:
        if name not in wf:
            return f"extra column {name}"
    return "column order"


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _text(e: Exception) -> str:
    """delta-rs's error text as one plain line: its cause chain is coloured (``\x1b[31m↳\x1b[0m``)
    and may span lines."""
    text = _ANSI.sub("", str(e)).replace("↳", "->")
    return " ".join(text.split()) or type(e).__name__


def _credentials_hint(e: Exception) -> str | None:
    """An S3 store without credentials: the AWS SDK's chain ends at the instance metadata
    service (IMDS), which says nothing about acidctl's options."""
    t = str(e).lower()
    if "credentials" in t or "imds" in t:
        return (
            "no credentials for the store: give its access key, secret key and endpoint as the "
            "--fs-option keys key, secret and endpoint_url, or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        )
    return None


def _mapped(e: Exception, what: str) -> AcidctlError:
    """deltalake's exceptions as acidctl's: a concurrent commit → exit 6; storage → exit 5."""
    from deltalake.exceptions import CommitFailedError, DeltaProtocolError

    text = _text(e)
    if isinstance(e, CommitFailedError):
        return ConflictError(f"{what}: another writer committed to the table meanwhile ({text}); run again")
    if "already exists" in text.lower():  # created by another writer while this run wrote its files
        return ConflictError(f"{what}: another writer created the table meanwhile ({text})")
    if isinstance(e, DeltaProtocolError):
        return RefusedError(f"{what}: {text}")
    if isinstance(e, OSError) or any(
        s in text.lower()
        for s in (
            "connection",
            "dns error",
            "timed out",
            "permission denied",
            "access denied",
            "no such bucket",
            "nosuchbucket",
        )
    ):
        return StorageUnavailable(f"{what}: {text}", hint=_credentials_hint(e))
    return AcidctlError(f"{what}: {text}")
