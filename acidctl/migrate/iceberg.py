"""The Iceberg target of ``acidctl migrate``, through pyiceberg (no JVM).

* ``--catalog URI``: a pyiceberg SQL catalog (any SQLAlchemy URL; ``sqlite:////abs/catalog.db``
  is the embedded one), ``thrift://`` a Hive metastore catalog, ``http(s)://`` a REST catalog;
  ``--catalog-property KEY=VALUE`` adds pyiceberg catalog properties; ``--catalog-name`` is the
  name the catalog keys its tables by (Iceberg's JDBC catalog: ``iceberg_tables.catalog_name``;
  Spark's / Trino's catalog must be configured with the same name to see them).
* A missing namespace is created; a missing table is created in the same catalog commit as its
  first snapshot (``create_table_transaction``: schema, identity partition spec, data files).
* Every commit is **one** snapshot: ``fast_append`` when nothing is removed, else one
  ``overwrite`` snapshot (``Transaction.update_snapshot().overwrite()``) that deletes the data
  files holding removed rows and adds their rewritten survivors (copy-on-write, only the files
  with removed rows; other partitions' manifests are kept as they are) and the new rows' files.
* Every data file acidctl writes (the local writer, a rewrite's survivors, a Spark task's file)
  carries Iceberg column metrics for ``row__id.writeid`` / ``bucketid`` / ``rowid`` (bounds,
  value and null counts, from the Parquet footer: :func:`row_id_metrics`; pyiceberg records
  none for nested fields), so a catch-up's copy-on-write reads only the files whose ranges hold
  a deleted ROW__ID (:func:`_may_hold`) — and engines reading the table can prune by them.
* The snapshot summary records ``acidctl.source-table`` / ``acidctl.source-write-ids``.
* Rollback: the table's current snapshot set back to the previous one (the snapshot stays in
  the history); a table this run created is dropped again.
"""

from __future__ import annotations

import datetime
import decimal
import itertools
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from acidctl.errors import AcidctlError, RefusedError, UnavailableError, UsageError
from acidctl.migrate.backend import SOURCE_TABLE_KEY, SOURCE_WRITE_IDS_KEY, Committed, PartitionChange, Recorded

if TYPE_CHECKING:
    import pyarrow as pa

#: properties of a table migrate creates (``--table-property`` adds or overrides): Parquet with
#: snappy, Spark's and pyarrow's default (Iceberg's zstd writes at about half the speed, files
#: about half the size); dictionary pages of up to 256 KiB (Iceberg's default 2 MiB): columns
#: of many distinct values (ids, names) fall back to plain encoding after a few thousand values
#: instead of being hashed value by value through most of a row group — about a third less
#: write CPU, files ~5 % larger (bench/migrate.py); few-valued columns are dictionary-encoded
#: as before
TABLE_PROPERTIES = {"write.parquet.compression-codec": "snappy", "write.parquet.dict-size-bytes": str(256 << 10)}
#: rows handed to pyiceberg's writer at a time (one or more data files each; bounded memory)
WRITE_BYTES = 128 << 20
#: a data file being filled ends where the rows move on to another bucket (the stream comes a
#: bucket at a time, each roughly in write id order) once it holds this much: a big table's
#: files then hold one bucket each, narrow ``row__id`` ranges that a catch-up's copy-on-write
#: prunes by (:func:`_may_hold`), as ``--engine spark`` writes one file per bucket; a small
#: table's partition still becomes one file
BUCKET_SPLIT_BYTES = WRITE_BYTES // 4


#: the three kinds of ``--catalog`` (for the refusal of anything else)
CATALOG_FORMS = (
    "an SQLAlchemy URL (sqlite:////abs/catalog.db, postgresql+psycopg://...), thrift://HOST:PORT or http(s)://REST"
)


def catalog_type(uri: str) -> str:
    """pyiceberg's catalog type for ``--catalog``: ``hive`` (thrift://), ``rest`` (http(s)://) or
    ``sql`` for a URL SQLAlchemy has a dialect for; anything else is a usage error (exit 2)
    rather than an SQL catalog that then asks for --warehouse."""
    scheme = uri.split(":", 1)[0].lower() if "://" in uri else ""
    if scheme == "thrift":
        return "hive"
    if scheme in ("http", "https"):
        return "rest"
    try:
        from sqlalchemy.engine import make_url

        make_url(uri).get_dialect()  # SQLAlchemy's own dialect registry decides what is SQL
    except Exception:  # noqa: BLE001 - ArgumentError, NoSuchModuleError, a missing driver
        raise UsageError(f"--catalog {uri!r} is not a catalog acidctl can open", hint=f"give {CATALOG_FORMS}") from None
    return "sql"


def _no_catalog_tables(e: BaseException) -> bool:
    """Whether an SQL error says pyiceberg's catalog tables are missing (SQLite "no such table",
    PostgreSQL "relation ... does not exist", MySQL "Table ... doesn't exist")."""
    text = str(e).lower()
    return "iceberg_tables" in text or "iceberg_namespace_properties" in text


def _warehouse_url(warehouse: str) -> str:
    if "://" in warehouse:
        return warehouse
    return "file://" + os.path.abspath(warehouse)


def _literal(v: Any) -> Any:
    if isinstance(v, (datetime.date, datetime.datetime, decimal.Decimal)):
        return v.isoformat() if not isinstance(v, decimal.Decimal) else str(v)
    return v


class IcebergBackend:
    """An Iceberg table in a pyiceberg catalog (see the module doc)."""

    def __init__(
        self,
        catalog_uri: str,
        target: str,
        *,
        catalog_name: str = "acidctl",
        properties: dict[str, str] | None = None,
        warehouse: str | None = None,
        table_properties: dict[str, str] | None = None,
        dry_run: bool = False,
    ):
        parts = [p for p in target.split(".") if p]
        if len(parts) < 2:
            raise UsageError(f"--target must be NAMESPACE.NAME, not {target!r}")
        self.identifier = tuple(parts)
        self.namespace = tuple(parts[:-1])
        self.uri = catalog_uri
        props: dict[str, str] = {"uri": catalog_uri, "type": catalog_type(catalog_uri)}
        if warehouse:
            props["warehouse"] = _warehouse_url(warehouse)
        props.update(properties or {})
        if props["type"] == "sql" and "warehouse" not in props:
            raise UsageError("an SQL catalog needs --warehouse DIR (where the table's files go)")
        #: a dry run opens the catalog read-only: an SQL catalog's tables are not created
        #: (pyiceberg creates them on load) and a SQLite file that does not exist is not opened
        #: (SQLite would create it): there is no table to find in either
        self.dry_run = dry_run
        if dry_run and props["type"] == "sql":
            props["init_catalog_tables"] = "false"
        self.catalog_name = catalog_name
        self.table_properties = {**TABLE_PROPERTIES, **(table_properties or {})}
        self._props = props
        self._catalog: Any = None
        self._create: Any = None  # a staged CreateTableTransaction (committed with the first snapshot)
        self._created = False
        self._added_paths: list[str] = []
        self._read_through: Any = None  # a TableFS whose hdfs:// files scans read (read_through)

    # -- catalog and table -------------------------------------------------------------------

    @property
    def display(self) -> str:
        return ".".join(self.identifier)

    def catalog(self):
        if self._catalog is None:
            from pyiceberg.catalog import load_catalog

            try:
                self._catalog = load_catalog(self.catalog_name, **self._props)
            except Exception as e:  # driver errors, bad URLs, unreachable servers
                raise self._unavailable(e) from None
        return self._catalog

    def _unavailable(self, e: BaseException) -> UnavailableError:
        """Exit 5 naming the catalog (and, for SQLite, the file it tried and the four-slash rule)."""
        from acidctl.metastore.connection import sqlite_path_hint

        resolved, hint = sqlite_path_hint(self.uri) if self._props.get("type") == "sql" else (None, None)
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        return UnavailableError(
            f"cannot open the Iceberg catalog {self.uri}" + (f" ({resolved})" if resolved else "") + f": {why}",
            hint=hint,
        )

    def _missing_sqlite_file(self) -> bool:
        from acidctl.metastore.connection import sqlite_path_hint

        resolved, _ = sqlite_path_hint(self.uri) if self._props.get("type") == "sql" else (None, None)
        return resolved is not None and not os.path.exists(resolved)

    def _table(self):
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

        if self.dry_run and self._missing_sqlite_file():
            return None
        try:
            return self.catalog().load_table(self.identifier)
        except (NoSuchTableError, NoSuchNamespaceError):
            return None
        except AcidctlError:
            raise
        except Exception as e:  # pyiceberg's Hive catalog connects here, lazily: unreachable → exit 5
            if self.dry_run and type(e).__module__.startswith("sqlalchemy") and _no_catalog_tables(e):
                return None  # a dry run on an SQL database without pyiceberg's tables yet
            if type(e).__module__.startswith(("thrift", "sqlalchemy", "requests", "urllib3")) or isinstance(e, OSError):
                raise self._unavailable(e) from None
            raise

    # -- the protocol --------------------------------------------------------------------------

    def recorded(self) -> Recorded | None:
        t = self._table()
        if t is None:
            return None
        snap = t.current_snapshot()
        if snap is None:
            return None
        props = snap.summary.additional_properties if snap.summary is not None else {}
        if SOURCE_TABLE_KEY not in props or SOURCE_WRITE_IDS_KEY not in props:
            raise RefusedError(
                f"Iceberg table {self.display}'s current snapshot was not written by acidctl migrate "
                f"(no {SOURCE_TABLE_KEY} in its summary); it is left untouched",
                hint="choose another --target",
            )
        return Recorded(props[SOURCE_TABLE_KEY], props[SOURCE_WRITE_IDS_KEY], snap.snapshot_id)

    def ensure(self, schema: pa.Schema, partition_columns: list[str], *, dry_run: bool) -> None:
        from pyiceberg.exceptions import NamespaceAlreadyExistsError

        t = self._table()
        if t is not None:
            self._check_compatible(t, schema, partition_columns)
            return
        if dry_run:
            return
        try:
            self.catalog().create_namespace(self.namespace)
        except NamespaceAlreadyExistsError:
            pass
        tx = self.catalog().create_table_transaction(self.identifier, schema=schema, properties=self.table_properties)
        if partition_columns:
            with tx.update_spec() as spec:
                for c in partition_columns:
                    spec.add_identity(c)
        self._create = tx

    def _check_compatible(self, t, schema: pa.Schema, partition_columns: list[str]) -> None:
        from pyiceberg.io.pyarrow import _check_pyarrow_schema_compatible

        try:
            _check_pyarrow_schema_compatible(t.schema(), schema, format_version=t.metadata.format_version)
        except ValueError as e:
            raise RefusedError(
                f"Iceberg table {self.display} has another schema than the source's: {str(e).splitlines()[0]}",
                hint="migrate into a new --target",
            ) from None
        have = [t.schema().find_column_name(f.source_id) for f in t.spec().fields]
        if [h.lower() for h in have if h] != [c.lower() for c in partition_columns]:
            raise RefusedError(
                f"Iceberg table {self.display} is partitioned by {have or 'nothing'}, the source by "
                f"{partition_columns or 'nothing'}",
                hint="migrate into a new --target",
            )

    def table_schema(self) -> pa.Schema | None:
        """The existing table's columns as Arrow (None: no table): the columns of a source
        given as a path whose snapshot has no data file left."""
        t = self._table()
        return t.schema().as_arrow() if t is not None else None

    def _filter(self, values: dict[str, Any]):
        from pyiceberg.expressions import AlwaysTrue, And, EqualTo, IsNull

        expr: Any = AlwaysTrue()
        for k, v in values.items():
            e = IsNull(k) if v is None else EqualTo(k, _literal(v))  # type: ignore[call-arg,arg-type]
            expr = e if isinstance(expr, AlwaysTrue) else And(expr, e)
        return expr

    def partitions(self) -> list[dict[str, Any]]:
        t = self._table()
        if t is None or t.current_snapshot() is None:
            return []
        cols = [t.schema().find_column_name(f.source_id) for f in t.spec().fields]
        if not cols:
            return [{}] if any(True for _ in t.scan().plan_files()) else []
        fields = [(f.name, t.schema().find_column_name(f.source_id)) for f in t.spec().fields]
        try:  # the manifests' partition summaries (no data file read)
            got = t.inspect.partitions().column("partition").to_pylist()
            return [{col: rec.get(name) for name, col in fields} for rec in got]
        except Exception:  # an older spec or a type inspect cannot render: read the columns
            pass
        seen: dict[tuple, dict[str, Any]] = {}
        for b in t.scan(selected_fields=tuple(cols)).to_arrow_batch_reader():
            for row in b.select(cols).to_pylist() if b.num_rows else []:
                seen.setdefault(tuple(row[c] for c in cols), {c: row[c] for c in cols})
        return list(seen.values())

    def row_ids(self, values: dict[str, Any]) -> pa.Table:
        import pyarrow as pa

        from acidctl.migrate.source import empty_keys

        t = self._table()
        if t is None or t.current_snapshot() is None:
            return empty_keys()
        got = t.scan(row_filter=self._filter(values), selected_fields=("row__id",)).to_arrow()
        rid = got.column("row__id").combine_chunks() if got.num_rows else None
        if rid is None:
            return empty_keys()
        return pa.table(
            {
                "writeid": rid.field("writeid").cast(pa.int64()),
                "bucketid": rid.field("bucketid").cast(pa.int32()),
                "rowid": rid.field("rowid").cast(pa.int64()),
            }
        )

    def commit(self, changes: list[PartitionChange], properties: dict[str, str]) -> Committed:
        from pyiceberg.exceptions import CommitFailedException

        tx, previous = self._transaction()
        removing = any(c.replace or (c.delete_row_ids is not None and c.delete_row_ids.num_rows) for c in changes)
        update = tx.update_snapshot(snapshot_properties=properties)
        producer = update.overwrite() if removing and previous is not None else update.fast_append()
        stats = {"files_added": 0, "files_removed": 0, "rows_added": 0, "rows_removed": 0}
        counter = itertools.count(0)
        self._added_paths = []
        try:
            with producer as snap_update:
                for c in changes:
                    if previous is not None and (
                        c.replace or (c.delete_row_ids is not None and c.delete_row_ids.num_rows)
                    ):
                        self._remove(tx, snap_update, c, stats, counter)
                    self._write(tx, snap_update, c.inserts, stats, counter, count_as_added=True)
                    self._attach(tx, snap_update, c.files, stats)
            table = tx.commit_transaction()
        except BaseException as e:
            # nothing committed: the data files written so far are referenced by nothing
            self._delete_added()
            if not isinstance(e, CommitFailedException):
                raise
            raise self._commit_refused(e) from None
        return Committed(version=self._committed(table), previous=previous, **stats)

    def _transaction(self) -> tuple[Any, int | None]:
        """The transaction this run commits in (the staged creation of a table it creates) and the
        snapshot it follows (None: a new table, or one without snapshots)."""
        if self._create is not None:
            return self._create, None
        t = self._table()
        if t is None:
            raise RefusedError(f"Iceberg table {self.display} disappeared during the run")
        snap = t.current_snapshot()
        return t.transaction(), snap.snapshot_id if snap is not None else None

    def _commit_refused(self, e: Exception) -> RefusedError:
        """The catalog refused the commit (someone else committed first): nothing was committed."""
        return RefusedError(
            f"Iceberg table {self.display} changed during the run (commit refused: {str(e).splitlines()[0]}); nothing was committed",
            hint="run migrate again",
        )

    def _committed(self, table) -> int:
        """The snapshot ``table``'s commit made; a table this run staged exists from now on."""
        if self._create is not None:
            self._created = True
            self._create = None
        cur = table.current_snapshot()
        assert cur is not None
        return cur.snapshot_id

    # -- --add-files (acidctl/migrate/addfiles.py): Hive's own Parquet files as data files ----

    def registers_files(self) -> bool:
        """The table's data files are Hive's own (``migrate --add-files`` made it)."""
        from acidctl.migrate.addfiles import ADD_FILES_PROPERTY

        t = self._table()
        return t is not None and t.metadata.properties.get(ADD_FILES_PROPERTY) == "true"

    def data_files(self) -> dict[str, Any]:
        """The current snapshot's data files by path (pyiceberg DataFiles)."""
        t = self._table() if self._create is None else None
        if t is None or t.current_snapshot() is None:
            return {}
        return {task.file.file_path: task.file for task in t.scan().plan_files()}

    def iceberg_metadata(self):
        """The table's metadata (the staged one of a table this run creates); after :meth:`ensure`."""
        return self._create.table_metadata if self._create is not None else self._table().metadata

    def commit_files(
        self, adds: list, removes: list, properties: dict[str, str], *, table_properties: dict[str, str]
    ) -> Committed:
        """ONE snapshot adding the DataFiles ``adds`` and removing ``removes`` (files nobody
        wrote here: never deleted, also not on failure), with ``table_properties`` set in the
        same catalog commit."""
        from pyiceberg.exceptions import CommitFailedException

        tx, previous = self._transaction()
        self._added_paths = []  # rollback and failures delete nothing: the files are Hive's
        if table_properties:
            tx.set_properties(**table_properties)
        update = tx.update_snapshot(snapshot_properties=properties)
        producer = update.overwrite() if removes and previous is not None else update.fast_append()
        try:
            with producer as snap_update:
                for df in removes:
                    snap_update.delete_data_file(df)
                for df in adds:
                    snap_update.append_data_file(df)
            table = tx.commit_transaction()
        except CommitFailedException as e:
            raise self._commit_refused(e) from None
        return Committed(
            version=self._committed(table),
            previous=previous,
            files_added=len(adds),
            files_removed=len(removes),
            rows_added=sum(df.record_count for df in adds),
            rows_removed=sum(df.record_count for df in removes),
        )

    def _write(self, tx, snap_update, batches, stats: dict, counter, *, count_as_added: bool) -> None:
        """``batches`` written as data files (pyiceberg's writer, a bounded piece at a time)."""
        import pyarrow as pa
        from pyiceberg.io.pyarrow import _dataframe_to_data_files

        pending: list = []
        size = 0

        def flush() -> None:
            nonlocal pending, size
            if not pending:
                return
            table = pa.Table.from_batches(pending)
            pending, size = [], 0
            for df in _dataframe_to_data_files(
                table_metadata=tx.table_metadata,
                df=table,
                io=tx._table.io,
                write_uuid=snap_update.commit_uuid,
                counter=counter,
            ):
                self._added_paths.append(df.file_path)
                _add_row_id_metrics(df, _footer(tx._table.io, df.file_path), tx.table_metadata.schema())
                snap_update.append_data_file(df)
                stats["files_added"] += 1
                if count_as_added:
                    stats["rows_added"] += df.record_count

        bucket = None
        for b in batches:
            if not b.num_rows:
                continue
            now = _first_bucket(b)
            if pending and now != bucket and size >= BUCKET_SPLIT_BYTES:
                flush()
            bucket = now
            pending.append(b)
            size += b.nbytes
            if size >= WRITE_BYTES:
                flush()
        flush()

    def spark_target(self) -> tuple[str, pa.Schema, str]:
        """(the table's location, the Arrow schema with Iceberg field ids, the Parquet codec) for
        data files written elsewhere (Spark tasks) and added by :meth:`commit`
        (``PartitionChange.files``). After :meth:`ensure`."""
        from pyiceberg.io.pyarrow import schema_to_pyarrow

        meta = self._create.table_metadata if self._create is not None else self._table().metadata
        codec = meta.properties.get("write.parquet.compression-codec", "zstd")
        return meta.location, schema_to_pyarrow(meta.schema(), include_field_ids=True), codec

    def _attach(self, tx, snap_update, paths: list[str], stats: dict) -> None:
        for p in paths:
            self._added_paths.append(p)
            df = _parquet_data_file(tx._table.io, tx.table_metadata, p)
            snap_update.append_data_file(df)
            stats["files_added"] += 1
            stats["rows_added"] += df.record_count

    def _remove(self, tx, snap_update, c: PartitionChange, stats: dict, counter) -> None:
        """Drop the partition's files (``replace``) or rewrite those holding deleted rows."""
        import numpy as np
        import pyarrow as pa
        from pyiceberg.expressions import AlwaysTrue
        from pyiceberg.io.pyarrow import ArrowScan

        from acidctl.migrate.source import row_id_table

        meta = tx.table_metadata
        io = tx._table.io
        scan = tx._table.scan(row_filter=self._filter(c.values))
        deleted = None
        if not c.replace and c.delete_row_ids is not None:
            deleted = _deleted_keys(c.delete_row_ids)
        for task in scan.plan_files():
            if c.replace:
                snap_update.delete_data_file(task.file)
                stats["files_removed"] += 1
                stats["rows_removed"] += task.file.record_count
                continue
            if deleted is not None and not _may_hold(task.file, meta.schema(), deleted):
                continue  # the file's row__id ranges hold no deleted ROW__ID: not read
            df = ArrowScan(
                table_metadata=meta, io=io, projected_schema=meta.schema(), row_filter=AlwaysTrue()
            ).to_table(tasks=[task])
            if not df.num_rows:
                continue
            keys = row_id_table(df).append_column("__i", pa.array(np.arange(df.num_rows, dtype=np.int64)))
            hit = keys.join(c.delete_row_ids, ["writeid", "bucketid", "rowid"], join_type="inner", use_threads=False)
            if not hit.num_rows:
                continue
            drop = np.zeros(df.num_rows, dtype=bool)
            drop[hit.column("__i").to_numpy()] = True
            snap_update.delete_data_file(task.file)
            stats["files_removed"] += 1
            stats["rows_removed"] += int(drop.sum())
            survivors = df.filter(pa.array(~drop))
            if survivors.num_rows:
                self._write(tx, snap_update, survivors.to_batches(), stats, counter, count_as_added=False)

    def read_through(self, tfs) -> None:
        """Data files on ``tfs``'s HDFS (``--add-files``: Hive's files, registered as
        ``hdfs://nn:8020/...``) are read back by :meth:`scan` through acidctl's filesystem
        (WebHDFS, with the run's ``--fs-option``): pyiceberg opens ``hdfs://`` with libhdfs,
        a JVM and the NameNode's RPC port, none of which acidctl has."""
        from acidctl.fs import WEBHDFS_PROTOCOLS

        if tfs.protocol in WEBHDFS_PROTOCOLS:
            self._read_through = tfs

    def _for_reads(self, t):
        """``t`` whose FileIO reads :meth:`read_through`'s files through acidctl's filesystem."""
        if self._read_through is not None:
            t.io = _through(t.io, self._read_through)
        return t

    def scan(self, version: int) -> Iterator[pa.RecordBatch]:
        t = self._table()
        if t is None:
            return iter(())
        return iter(self._for_reads(t).scan(snapshot_id=version).to_arrow_batch_reader())

    def scan_partitions(self, version: int, values: list[dict[str, Any]]) -> Iterator[pa.RecordBatch]:
        """The rows of ``version`` in these partitions only (verification of a catch-up reads
        the partitions it touched, not the table)."""
        from pyiceberg.expressions import AlwaysFalse, Or

        t = self._table()
        if t is None or not values:
            return iter(())
        expr: Any = AlwaysFalse()
        for v in values:
            e = self._filter(v)
            expr = e if isinstance(expr, AlwaysFalse) else Or(expr, e)
        return iter(self._for_reads(t).scan(snapshot_id=version, row_filter=expr).to_arrow_batch_reader())

    def rollback(self, committed: Committed) -> str | None:
        try:
            if committed.previous is None:
                if self._created:
                    self.catalog().drop_table(self.identifier)
                    self._delete_added()
                    return None
                return f"set Iceberg table {self.display} back to before snapshot {committed.version} by hand"
            t = self._table()
            if t is None:
                return f"Iceberg table {self.display} is gone; nothing to roll back"
            with t.manage_snapshots() as ms:
                ms.rollback_to_snapshot(committed.previous)
            return None
        except Exception as e:  # report, do not hide the verification failure
            return (
                f"roll Iceberg table {self.display} back to snapshot {committed.previous} by hand "
                f"(rollback failed: {str(e).splitlines()[0]})"
            )

    def _delete_added(self) -> None:
        try:
            if not self._added_paths:
                return
            io = self.catalog()._load_file_io(location=self._added_paths[0])
            for p in self._added_paths:
                io.delete(p)
        except Exception:  # best effort: unreferenced files harm no reader
            pass


def _through(io, tfs):
    """A pyiceberg FileIO: ``io``, except that files under ``tfs``'s Hadoop URL prefix
    (:meth:`acidctl.fs.TableFS.hadoop_url`) are opened through ``tfs``; it writes and deletes
    nothing of them."""
    from pyiceberg.io import FileIO, InputFile

    class _Input(InputFile):
        def __init__(self, location: str, path: str):
            super().__init__(location)
            self._path = path

        def __len__(self) -> int:
            return tfs.info(self._path).size

        def exists(self) -> bool:
            return tfs.exists(self._path)

        def open(self, seekable: bool = True):
            return tfs.open(self._path, "rb")

    class _ThroughIO(FileIO):
        def new_input(self, location: str):
            path = tfs.hadoop_path(location)
            return io.new_input(location) if path is None else _Input(location, path)

        def new_output(self, location: str):
            if tfs.hadoop_path(location) is not None:
                raise ValueError(f"{location} is Hive's file: acidctl writes none")
            return io.new_output(location)

        def delete(self, location) -> None:
            where = location if isinstance(location, str) else location.location
            if tfs.hadoop_path(where) is not None:
                raise ValueError(f"{where} is Hive's file: acidctl deletes none")
            io.delete(location)

    return _ThroughIO(io.properties)


#: the nested ``row__id`` fields (Parquet path ``row__id.<name>``) whose column metrics acidctl
#: records itself, and their Parquet physical types
ROW_ID_FIELDS = {"writeid": "INT64", "bucketid": "INT32", "rowid": "INT64"}


def _first_bucket(batch) -> int | None:
    """The raw ``row__id.bucketid`` of a batch's first row (a batch comes from one bucket)."""
    i = batch.schema.get_field_index("row__id")
    if i < 0:
        return None
    v = batch.column(i).field("bucketid")[0].as_py()
    return None if v is None else int(v)


def _footer(io, path: str):
    """The Parquet footer (``pyarrow.parquet.FileMetaData``) of a data file."""
    import pyarrow.parquet as pq

    with io.new_input(path).open() as f:
        return pq.read_metadata(f)


def _parquet_data_file(io, table_metadata, path: str):
    """A Parquet file written elsewhere (a Spark task of acidctl/migrate/sparkload.py) as a
    DataFile with its metrics, the ``row__id`` fields' bounds included: pyiceberg's
    ``parquet_file_to_data_file`` with the footer read once."""
    from pyiceberg.io.pyarrow import (
        _check_pyarrow_schema_compatible,
        compute_statistics_plan,
        data_file_statistics_from_parquet_metadata,
        parquet_path_to_id_mapping,
    )
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat

    footer = _footer(io, path)
    schema = table_metadata.schema()
    _check_pyarrow_schema_compatible(
        schema, footer.schema.to_arrow_schema(), format_version=table_metadata.format_version
    )
    statistics = data_file_statistics_from_parquet_metadata(
        parquet_metadata=footer,
        stats_columns=compute_statistics_plan(schema, table_metadata.properties),
        parquet_column_mapping=parquet_path_to_id_mapping(schema),
    )
    df = DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=statistics.partition(table_metadata.spec(), schema),
        file_size_in_bytes=len(io.new_input(path)),
        sort_order_id=None,
        spec_id=table_metadata.default_spec_id,
        equality_ids=None,
        key_metadata=None,
        **statistics.to_serialized_dict(),
    )
    _add_row_id_metrics(df, footer, schema)
    return df


def row_id_metrics(footer, schema) -> dict[int, tuple[int, int, bytes | None, bytes | None]]:
    """{field id: (value count, null count, lower bound, upper bound)} of the ``row__id``
    fields from the Parquet footer's column chunk statistics (path ``row__id.writeid`` etc.);
    bounds in Iceberg's single-value serialization (little-endian 8-byte long / 4-byte int),
    None where a row group has values but no min/max (no bound can be claimed then). A field
    missing from the schema or the file (``--no-row-id``) is left out.

    pyiceberg (0.12, ``PyArrowStatisticsCollector.primitive``) downgrades the metrics mode of
    every nested column (a name with a dot) to ``counts``, whatever the table's
    ``write.metadata.metrics.column.row__id.writeid`` / ``write.metadata.metrics.default``
    say, so its data files never carry bounds for ``row__id.*``: acidctl fills them in from
    the same footer statistics, as Iceberg's Java writer records them for struct fields
    (``ParquetMetrics``)."""
    from pyiceberg.conversions import to_bytes

    ids: dict[str, tuple[int, Any]] = {}
    for name in ROW_ID_FIELDS:
        try:
            f = schema.find_field(f"row__id.{name}")
        except ValueError:
            continue
        ids[f"row__id.{name}"] = (f.field_id, f.field_type)
    if not ids:
        return {}
    acc: dict[str, list] = {}  # path -> [values, nulls, min, max, bounds valid]
    pos = {footer.schema.column(i).path: i for i in range(footer.num_columns)}
    for path in ids:
        if path not in pos:
            continue
        a = acc[path] = [0, 0, None, None, True]
        for r in range(footer.num_row_groups):
            col = footer.row_group(r).column(pos[path])
            a[0] += col.num_values
            st = col.statistics if col.is_stats_set else None
            if st is None or not st.has_null_count:
                a[4] = False  # nothing known about this row group
                continue
            a[1] += st.null_count
            if st.null_count == col.num_values:
                continue  # only nulls: no value to bound
            if not st.has_min_max or st.physical_type != ROW_ID_FIELDS[path.split(".", 1)[1]]:
                a[4] = False
                continue
            a[2] = st.min if a[2] is None else min(a[2], st.min)
            a[3] = st.max if a[3] is None else max(a[3], st.max)
    out: dict[int, tuple[int, int, bytes | None, bytes | None]] = {}
    for path, (values, nulls, lo, hi, valid) in acc.items():
        fid, ftype = ids[path]
        bounded = valid and lo is not None
        out[fid] = (
            values,
            nulls,
            to_bytes(ftype, int(lo)) if bounded else None,
            to_bytes(ftype, int(hi)) if bounded else None,
        )
    return out


def _add_row_id_metrics(df, footer, schema) -> None:
    """Merge :func:`row_id_metrics` into a DataFile's metrics (what pyiceberg computed for the
    other columns stays). Recorded whatever the table's metrics modes say: a catch-up's
    copy-on-write prunes by them."""
    got = row_id_metrics(footer, schema)
    if not got:
        return
    # DataFile's fields are read-only properties over a positional record (pyiceberg.manifest:
    # value_counts = 7, null_value_counts = 8, lower_bounds = 10, upper_bounds = 11)
    slots = {"value_counts": 7, "null_value_counts": 8, "lower_bounds": 10, "upper_bounds": 11}
    maps = {name: dict(getattr(df, name) or {}) for name in slots}
    for fid, (values, nulls, lo, hi) in got.items():
        maps["value_counts"][fid] = values
        maps["null_value_counts"][fid] = nulls
        for name, b in (("lower_bounds", lo), ("upper_bounds", hi)):
            if b is None:
                maps[name].pop(fid, None)
            else:
                maps[name][fid] = b
    for name, i in slots.items():
        df[i] = maps[name]
        assert getattr(df, name) is maps[name]


def _deleted_keys(delete_row_ids) -> dict[str, Any]:
    """The deleted ROW__IDs as numpy arrays ``writeid`` / ``bucketid`` / ``rowid``, sorted by
    write id (for :func:`_may_hold`)."""
    import numpy as np

    w = delete_row_ids.column("writeid").to_numpy()
    order = np.argsort(w, kind="stable")
    return {name: delete_row_ids.column(name).to_numpy()[order] for name in ROW_ID_FIELDS}


def _bounds(data_file, schema, name: str) -> tuple[int, int] | None:
    """A data file's (lower, upper) bound of ``row__id.<name>``, None when it has none."""
    try:
        fid = schema.find_field(f"row__id.{name}").field_id
    except ValueError:
        return None
    lo = (data_file.lower_bounds or {}).get(fid)
    hi = (data_file.upper_bounds or {}).get(fid)
    if lo is None or hi is None:
        return None
    return int.from_bytes(lo, "little", signed=True), int.from_bytes(hi, "little", signed=True)


def _may_hold(data_file, schema, keys: dict[str, Any]) -> bool:
    """Whether a data file's ``row__id`` bounds (its column metrics, :func:`row_id_metrics`) can
    hold one of the deleted ROW__IDs ``keys`` (:func:`_deleted_keys`): a deleted key whose
    write id, bucket id and row id each lie in the file's range; True when the file has no
    ``row__id.writeid`` bounds (a file acidctl did not write: read it)."""
    import numpy as np

    w = _bounds(data_file, schema, "writeid")
    if w is None:
        return True
    wids = keys["writeid"]
    i = int(np.searchsorted(wids, w[0], side="left"))
    j = int(np.searchsorted(wids, w[1], side="right"))
    if i >= j:
        return False
    hit = np.ones(j - i, dtype=bool)
    for name in ("bucketid", "rowid"):
        b = _bounds(data_file, schema, name)
        if b is not None:
            v = keys[name][i:j]
            hit &= (v >= b[0]) & (v <= b[1])
    return bool(hit.any())


def check_available() -> None:
    """One line when pyiceberg is not installed."""
    try:
        import pyiceberg  # noqa: F401
    except ImportError as e:
        from acidctl.errors import MissingExtra

        raise MissingExtra(
            f"migrate --to iceberg needs pyiceberg ({e})", hint="pip install 'acidctl[iceberg]'"
        ) from None
