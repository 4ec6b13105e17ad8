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

from acidctl.errors import RefusedError, UnavailableError, UsageError
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


def catalog_type(uri: str) -> str:
    scheme = uri.split(":", 1)[0].lower()
    if scheme == "thrift":
        return "hive"
    if scheme in ("http", "https"):
        return "rest"
    return "sql"


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
        self.catalog_name = catalog_name
        self.table_properties = {**TABLE_PROPERTIES, **(table_properties or {})}
        self._props = props
        self._catalog: Any = None
        self._create: Any = None  # a staged CreateTableTransaction (committed with the first snapshot)
        self._created = False
        self._added_paths: list[str] = []

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
                raise UnavailableError(
                    f"cannot open the Iceberg catalog {self.uri}: {str(e).splitlines()[0]}"
                ) from None
        return self._catalog

    def _table(self):
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

        try:
            return self.catalog().load_table(self.identifier)
        except (NoSuchTableError, NoSuchNamespaceError):
            return None

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

        if self._create is not None:
            tx = self._create
            previous = None
        else:
            t = self._table()
            if t is None:
                raise RefusedError(f"Iceberg table {self.display} disappeared during the run")
            tx = t.transaction()
            snap = t.current_snapshot()
            previous = snap.snapshot_id if snap is not None else None
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
            raise RefusedError(
                f"Iceberg table {self.display} changed during the run (commit refused: {str(e).splitlines()[0]}); nothing was committed",
                hint="run migrate again",
            ) from None
        if self._create is not None:
            self._created = True
            self._create = None
        cur = table.current_snapshot()
        assert cur is not None
        return Committed(version=cur.snapshot_id, previous=previous, **stats)

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
                snap_update.append_data_file(df)
                self._added_paths.append(df.file_path)
                stats["files_added"] += 1
                if count_as_added:
                    stats["rows_added"] += df.record_count

        for b in batches:
            if not b.num_rows:
                continue
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
        from pyiceberg.io.pyarrow import parquet_file_to_data_file

        for p in paths:
            self._added_paths.append(p)
            df = parquet_file_to_data_file(tx._table.io, tx.table_metadata, p)
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
        wids = None
        if not c.replace and c.delete_row_ids is not None:
            wids = np.unique(c.delete_row_ids.column("writeid").to_numpy())
        for task in scan.plan_files():
            if c.replace:
                snap_update.delete_data_file(task.file)
                stats["files_removed"] += 1
                stats["rows_removed"] += task.file.record_count
                continue
            if wids is not None and not _may_hold(task.file, meta.schema(), wids):
                continue  # the file's row__id.writeid range holds no deleted row's write id
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

    def scan(self, version: int) -> Iterator[pa.RecordBatch]:
        t = self._table()
        if t is None:
            return iter(())
        return iter(t.scan(snapshot_id=version).to_arrow_batch_reader())

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
        return iter(t.scan(snapshot_id=version, row_filter=expr).to_arrow_batch_reader())

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


def _may_hold(data_file, schema, wids) -> bool:
    """Whether a data file's ``row__id.writeid`` bounds (its column statistics) can hold one of
    the sorted write ids ``wids``; True when the file has no bounds."""
    import numpy as np

    try:
        fid = schema.find_field("row__id.writeid").field_id
        lo_b = (data_file.lower_bounds or {}).get(fid)
        hi_b = (data_file.upper_bounds or {}).get(fid)
    except Exception:
        return True
    if lo_b is None or hi_b is None:
        return True
    lo = int.from_bytes(lo_b, "little", signed=True)
    hi = int.from_bytes(hi_b, "little", signed=True)
    i = int(np.searchsorted(wids, lo, side="left"))
    return i < len(wids) and int(wids[i]) <= hi


def check_available() -> None:
    """One line when pyiceberg is not installed."""
    try:
        import pyiceberg  # noqa: F401
    except ImportError as e:
        from acidctl.errors import MissingExtra

        raise MissingExtra(
            f"migrate --to iceberg needs pyiceberg ({e})", hint="pip install 'acidctl[iceberg]'"
        ) from None
