"""The target protocol of ``acidctl migrate``: what the run (acidctl/migrate/run.py) asks of an
Iceberg or Delta table. A backend never reads Hive; the run never touches the target's files.

Rules every backend follows:

* :meth:`Backend.commit` is **one** snapshot (Iceberg) / **one** commit (Delta) with every
  partition's changes, carrying ``properties`` (``acidctl.source-table``,
  ``acidctl.source-write-ids``) where :meth:`Backend.recorded` finds them again;
* rows are matched by partition values + ``row__id`` (a ROW__ID is unique only within a
  partition): ``PartitionChange.delete_row_ids`` lists rows of that partition only;
* partitions not in ``changes`` keep their files untouched;
* rows handed to the backend are already in the target schema (:mod:`acidctl.migrate.types`),
  partition columns included as columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pyarrow as pa

#: keys of the Iceberg snapshot summary / Delta commit metadata recording the source
SOURCE_TABLE_KEY = "acidctl.source-table"
SOURCE_WRITE_IDS_KEY = "acidctl.source-write-ids"
#: also recorded: the acidctl version and the row__id choice (informational)
ROW_ID_KEY = "acidctl.row-id"


@dataclass(frozen=True)
class Recorded:
    """What the target's current snapshot/version records about its source."""

    source_table: str  # acidctl.source-table ("db.table" lower case, or the table path)
    write_ids: str  # acidctl.source-write-ids: the ValidWriteIdList string
    version: int  # Iceberg snapshot id / Delta version


@dataclass
class PartitionChange:
    """One partition's changes in a commit."""

    key: str  # Hive partition name "ds=2024-01-01/h=3" ("" unpartitioned)
    values: dict[str, Any]  # typed partition column values (None for Hive's default partition)
    inserts: Iterable[pa.RecordBatch]  # rows to add, in the target schema
    delete_row_ids: (
        pa.Table | None
    )  # columns writeid:int64, bucketid:int32, rowid:int64: rows of THIS partition to remove
    replace: bool = False  # drop every current row of the partition first
    #: Parquet files already written in the backend's file schema (``--engine spark``: only
    #: for a backend with ``spark_target()``), added as they are, besides ``inserts``
    files: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Committed:
    """What :meth:`Backend.commit` did."""

    version: int  # the new snapshot id / version
    previous: int | None  # the one before (None: the table was empty / just created)
    files_added: int
    files_removed: int
    rows_added: int
    rows_removed: int

    def to_dict(self) -> dict:
        return {
            "version": self.version,
            "previous": self.previous,
            "files_added": self.files_added,
            "files_removed": self.files_removed,
            "rows_added": self.rows_added,
            "rows_removed": self.rows_removed,
        }


class Backend(Protocol):
    """A target table (Iceberg or Delta)."""

    def recorded(self) -> Recorded | None:
        """The source recorded by the current snapshot; None: no target table yet."""
        ...

    def ensure(self, schema: pa.Schema, partition_columns: list[str], *, dry_run: bool) -> None:
        """Create namespace/table when missing; refuse (RefusedError) an incompatible existing schema.
        ``dry_run``: check only, create nothing."""
        ...

    def partitions(self) -> list[dict[str, Any]]:
        """The typed partition values of every partition the current snapshot holds rows of
        (``[{}]`` for an unpartitioned table with rows; ``[]`` empty): a catch-up removes the
        partitions Hive no longer has (``PartitionChange(replace=True)`` without inserts)."""
        ...

    def row_ids(self, values: dict[str, Any]) -> pa.Table:
        """Current row__id of one partition (columns writeid, bucketid, rowid): the fallback comparison."""
        ...

    def commit(self, changes: list[PartitionChange], properties: dict[str, str]) -> Committed:
        """ONE snapshot / ONE commit; ``properties`` include acidctl.source-table and acidctl.source-write-ids."""
        ...

    def scan(self, version: int) -> Iterator[pa.RecordBatch]:
        """The rows of that version, for verification."""
        ...

    def rollback(self, committed: Committed) -> str | None:
        """Undo ``committed``; None when done, else one line telling the user what to do."""
        ...
