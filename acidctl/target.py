"""What a table command operates on: a directory, a snapshot, and where both came from.

``state``, ``dump --merged``, ``compact`` and ``clean`` accept either a path (any fsspec URL)
or ``DB.TABLE[/key=value...]``. A table name is looked up in the metastore (location, table
properties) and its snapshot is computed there the way Hive computes it; ``--write-ids`` /
``--txns`` override the snapshot, ``--assume-committed`` replaces it for offline inspection and
is always reported as an assumption. Under ``--hive-version 2`` ``--txns`` is Hive 2.3's
ValidTxnList and *is* the snapshot (txn ids are write ids; :mod:`acidctl.acid.hive2`).
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any

from acidctl.acid.writeids import TxnList, WriteIdList
from acidctl.errors import PathNotFound, UsageError
from acidctl.fs import TableFS

_TABLE_NAME = re.compile(r"^[A-Za-z0-9_]+\.[A-Za-z0-9_]+(/.+)?$")
#: ``NAME`` or ``NAME/k=v[/k=v...]``: Hive's unqualified table name (``default.NAME``)
_BARE_NAME = re.compile(r"^[A-Za-z0-9_]+(/[^/=]+=[^/]*)*/?$")


@dataclasses.dataclass
class Target:
    tfs: TableFS
    write_ids: WriteIdList
    txns: TxnList | None
    hive_version: int
    source: str  # metastore | --write-ids | --assume-committed
    table: Any = None  # metastore TableInfo when looked up
    properties: dict[str, str] = dataclasses.field(default_factory=dict)
    assumptions: list[str] = dataclasses.field(default_factory=list)
    metastore: Any = None  # the connected Metastore, when used
    warnings: list[str] = dataclasses.field(default_factory=list)  # printed on stderr by commands
    notes: list[str] = dataclasses.field(default_factory=list)  # informational, stderr in text mode

    @property
    def display(self) -> str:
        return self.tfs.display(self.tfs.root)

    @property
    def source_name(self) -> str:
        """How reports name what was read (``migrate``'s recorded source, ``changes``):
        ``db.table`` (lower case) when the table came from the metastore, else the path."""
        return self.table.full_name.lower() if self.table is not None else self.display.rstrip("/")

    def to_dict(self) -> dict:
        return {
            "path": self.display,
            "table": self.table.full_name if self.table else None,
            "partition": getattr(self.table, "partition", None),
            "snapshot_source": self.source,
            "write_ids": str(self.write_ids),
            "txns": str(self.txns) if self.txns else None,
            "hive_version": self.hive_version,
            "assumptions": self.assumptions,
        }


def is_table_name(spec: str, *, bare: bool = False) -> bool:
    """``db.table[/k=v]`` that is not an existing local path and has no URL scheme; with
    ``bare`` (a metastore is configured) also ``NAME[/k=v...]``, which means ``default.NAME``
    as in Hive. An existing path always wins."""
    if "://" in spec or os.path.exists(spec):
        return False
    return bool(_TABLE_NAME.match(spec)) or (bare and bool(_BARE_NAME.match(spec)))


def names_table(settings, spec: str) -> bool:
    """The one rule for every command's TABLE argument: ``DB.TABLE[/PART]``, or a bare
    ``NAME[/PART]`` (= ``default.NAME``) when a metastore is configured, that is not an
    existing local path and has no URL scheme; anything else is a path."""
    if is_table_name(spec):
        return True
    return is_table_name(spec, bare=True) and _metastore_url(settings) is not None


def location_url(location: str) -> str:
    """SDS.LOCATION as an fsspec URL (Hive writes ``file:/path`` for local warehouses)."""
    if location.startswith("file:") and not location.startswith("file://"):
        return "file://" + "/" + location[len("file:") :].lstrip("/")
    return location


def table_name_from_path(root: str) -> str | None:
    """``db.table`` a path names in Hive's warehouse layout: ``<warehouse>/<db>.db/<table>``
    (``default``'s tables sit at the warehouse root), partition directories (``k=v``) below the
    table skipped. None when the path has no table directory component."""
    parts = [p for p in root.split("://", 1)[-1].rstrip("/").split("/") if p]
    while parts and "=" in parts[-1]:
        parts.pop()
    if not parts:
        return None
    db = parts[-2][: -len(".db")] if len(parts) > 1 and parts[-2].endswith(".db") and len(parts[-2]) > 3 else "default"
    return f"{db}.{parts[-1]}".lower()


def check_table_dir(tfs: TableFS) -> None:
    """The root must be a table or partition directory (not a file, not a base/delta)."""
    import posixpath

    from acidctl.acid.dirname import parse_acid_dir
    from acidctl.errors import NotATable

    if not tfs.info(tfs.root).is_dir:
        raise NotATable(
            f"{tfs.display(tfs.root)} is a file, not a table or partition directory",
            hint="use `acidctl dump` for files",
        )
    if parse_acid_dir(posixpath.basename(tfs.root.rstrip("/"))) is not None:
        raise NotATable(
            f"{tfs.display(tfs.root)} is a base/delta directory, not a table or partition",
            hint="pass the directory that contains it",
        )


def max_write_id_in_tree(tfs: TableFS) -> int:
    """The highest write id any base/delta directory name mentions, in every partition.
    Lists only the table and partition levels (never the insides of base/delta directories)."""
    from acidctl.acid.dirname import is_hidden, is_partition_dir, parse_acid_dir

    hi = 0
    stack = [tfs.root]
    while stack:
        for e in tfs.subdirs(stack.pop()):
            if is_hidden(e.name):
                continue
            d = parse_acid_dir(e.name)
            if d is not None:
                hi = max(hi, d.max_write_id)
            elif is_partition_dir(e.name):
                stack.append(e.path)
    return hi


def _metastore_url(settings) -> str | None:
    from acidctl.metastore.connection import resolve_url

    try:
        return resolve_url(settings.metastore_url, profile=settings.profile)
    except UsageError:
        return None


def resolve_target(
    settings,
    spec: str,
    *,
    write_ids: str | None = None,
    assume_committed: bool = False,
    txns: str | None = None,
    hive_version: int | None = None,
    partition: str | None = None,
) -> Target:
    """Resolve ``spec`` and the snapshot options into a :class:`Target`, in stages: a path that
    is a metastore table's location becomes that table, a table is looked up
    (:func:`_from_metastore`), the directory is checked (:func:`_check_dir`), then the snapshot
    (:func:`_snapshot_from_options`, :func:`_visibility_txns`) and its table name."""
    if write_ids and assume_committed:
        raise UsageError("give either --write-ids or --assume-committed, not both")
    if hive_version not in (None, 2, 3, 4):
        raise UsageError("--hive-version must be 2, 3 or 4")
    table = ms = None
    source = None
    wl = tl = None
    props: dict[str, str] = {}
    assumptions: list[str] = []
    warnings: list[str] = []
    notes: list[str] = []
    by_location = None
    if not names_table(settings, spec) and not (write_ids or assume_committed or (hive_version == 2 and txns)):
        # a path without a snapshot: the metastore table at that location, when one is configured
        by_location = _table_at_path(settings, spec, partition=partition, hive_version=hive_version)
        if by_location is not None:
            notes.append(f"{spec} is {by_location} in the metastore: its snapshot and properties come from there")
            spec, partition = by_location, None
    if by_location is not None or names_table(settings, spec):
        ms, table, hive_version, tl, wl = _from_metastore(
            settings,
            spec,
            partition=partition,
            hive_version=hive_version,
            given=bool(write_ids or assume_committed),
            txns_given=bool(txns),
        )
        if wl is not None:
            source = "metastore"
        if not table.path:
            raise UsageError(f"{table.full_name} has no location in the metastore")
        tfs = settings.table_fs(location_url(table.path))
        props = {k: v for k, v in (table.params or {}).items()}
    else:
        if partition:
            from acidctl.acid.dirname import partition_keys_lower

            spec = spec.rstrip("/") + "/" + partition_keys_lower(partition)
        tfs = settings.table_fs(spec)
    _check_dir(tfs, table, spec)
    hive_version = hive_version or 3
    if hive_version == 2 and txns and not (write_ids or assume_committed):
        # Hive 2.3: the ValidTxnList is the snapshot (txn ids are the directories' ids)
        from acidctl.acid.hive2 import Hive2TxnList

        wl = Hive2TxnList.parse(txns).to_write_ids()
        return Target(
            tfs=tfs,
            write_ids=wl,
            txns=None,
            hive_version=2,
            source="--txns",
            table=table,
            properties=props,
            assumptions=assumptions,
            metastore=ms,
            warnings=warnings,
        )
    if write_ids or assume_committed or wl is None:
        wl, source = _snapshot_from_options(
            settings, tfs, table, write_ids, assume_committed, hive_version, assumptions, warnings
        )
    tl = _visibility_txns(hive_version, txns, tl, assumptions)
    assert source is not None  # set wherever wl is (metastore, --write-ids, --assume-committed)
    return Target(
        tfs=tfs,
        write_ids=_named_list(wl, table, tfs),
        txns=tl,
        hive_version=hive_version,
        source=source,
        table=table,
        properties=props,
        assumptions=assumptions,
        metastore=ms,
        warnings=warnings,
        notes=notes,
    )


def _from_metastore(settings, spec: str, *, partition, hive_version, given: bool, txns_given: bool):
    """The metastore, the table (Hive 2.3 when its schema is, or ``--hive-version 2`` says so),
    the Hive version, and the table's snapshot (txn list, write-id list) unless ``given`` by
    the options (None, None then)."""
    url = _metastore_url(settings)
    if url is None:
        raise UsageError(
            f"{spec!r} looks like DB.TABLE but no metastore is configured",
            hint="use --metastore URL (or ACIDCTL_METASTORE_URL), or give the table's path",
        )
    from acidctl.metastore.snapshot import table_snapshot
    from acidctl.metastore.tables import resolve_table

    tl = wl = None
    ms = None if hive_version == 2 else _connect_or_hive2(url, hive_version)
    if ms is None:
        # a Hive 2.3 metastore (acidctl.metastore.hive2): its ValidTxnList is the snapshot
        from acidctl.metastore import hive2 as ms2

        ms = ms2.require_hive2(url) if hive_version == 2 else ms2.connect_hive2(url)
        # (a Hive 3/4 metastore's TXNS does not give txn-id snapshots: require_hive2 refuses it)
        table = ms2.table_info(ms, spec, partition=partition)
        if not (given or txns_given):
            wl = ms2.txn_list(ms).to_write_ids(table=table.full_name)
        return ms, table, 2, tl, wl
    table = resolve_table(ms, spec, partition=partition)
    hive_version = hive_version or ms.hive_version
    if not given:
        tl, wl = table_snapshot(ms, table.full_name)
    return ms, table, hive_version, tl, wl


def _check_dir(tfs: TableFS, table, spec: str) -> None:
    """The table directory exists; a missing bare NAME hints at configuring a metastore."""
    try:
        check_table_dir(tfs)
    except PathNotFound as e:
        if table is None and is_table_name(spec, bare=True):
            raise PathNotFound(
                str(e),
                hint=f"to name a table, configure a metastore (--metastore URL or ACIDCTL_METASTORE_URL); "
                f"{spec.split('/', 1)[0]} then means default.{spec.split('/', 1)[0]}",
            ) from None
        raise


def _snapshot_from_options(
    settings, tfs: TableFS, table, write_ids, assume_committed: bool, hive_version: int, assumptions, warnings
) -> tuple[WriteIdList, str]:
    """The write-id list ``--write-ids`` or ``--assume-committed`` gives, and its source; a path
    with neither (nor the metastore's) has no snapshot (UsageError)."""
    if write_ids:
        wl = WriteIdList.parse(write_ids)
        _check_list_table(wl, table, tfs, warnings)
        return wl, "--write-ids"
    if assume_committed:
        hwm = max_write_id_in_tree(tfs)
        assumptions.append(
            f"every write id named by a directory (1..{hwm}) is committed; no open or aborted "
            "write ids (--assume-committed)"
        )
        return WriteIdList.all_committed(hwm), "--assume-committed"
    hint = (
        "give --write-ids LIST (Hive's ValidWriteIdList, e.g. db.t:14:9223372036854775807::) or "
        "--assume-committed" + (" or --txns (Hive 2's ValidTxnList)" if hive_version == 2 else "")
    )
    if _metastore_url(settings) is not None:
        hint += ", or name the table as DB.TABLE to read its snapshot from the metastore (no table there is located at this path)"
    raise UsageError("no snapshot for a path", hint=hint)


def _visibility_txns(hive_version: int, txns: str | None, tl: TxnList | None, assumptions: list[str]):
    """The txn list deciding which ``_vM`` directories are visible (Hive 2.3 has none)."""
    if hive_version == 2:
        if txns:
            raise UsageError("--txns and --write-ids/--assume-committed are alternatives under --hive-version 2")
        return None  # Hive 2.3 has no visibility suffixes
    if txns:
        return TxnList.parse(txns)
    if tl is None and hive_version == 4:
        assumptions.append("no --txns given: every _vM visibility txn is treated as committed")
        return TxnList.all_committed()
    return tl


def _named_list(wl: WriteIdList, table, tfs: TableFS) -> WriteIdList:
    """A ValidWriteIdList names its table (db.table:hwm:...): Hive's own lists always do, and a
    list printed as "null:7:..." is useless as --write-ids for another tool; for a path the name
    comes from the warehouse layout (the table name only, nothing else is read from it:
    _check_list_table compares no more than the directory name)."""
    if wl.table is None:
        name = table.full_name if table is not None else table_name_from_path(tfs.root)
        if name is not None:
            return dataclasses.replace(wl, table=name)
    return wl


def _table_at_path(settings, spec: str, *, partition: str | None, hive_version: int | None) -> str | None:
    """``db.table[/part]`` of the Hive 3/4 metastore table located at the path ``spec`` (or an
    ancestor, for a partition directory), or None: no metastore configured, none reachable or
    of a version acidctl reads, or no table there (the path is then just a path)."""
    from acidctl.errors import AcidctlError

    url = _metastore_url(settings)
    if url is None or hive_version == 2:
        return None
    path = spec if "://" in spec else os.path.abspath(spec)
    if partition:
        path = path.rstrip("/") + "/" + partition.strip("/")
    try:
        from acidctl.metastore.connection import connect
        from acidctl.metastore.tables import table_at

        return table_at(connect(url, hive_version=hive_version), path)
    except AcidctlError:
        return None


def _connect_or_hive2(url: str, hive_version: int | None):
    """The connected Hive 3/4 metastore, or None when detection refuses it because it is a
    Hive 2.x one (checked only then: no extra round trip for Hive 3/4 metastores)."""
    from acidctl.errors import UnsupportedSchema
    from acidctl.metastore.connection import connect

    try:
        return connect(url, hive_version=hive_version)
    except UnsupportedSchema:
        from acidctl.metastore.hive2 import is_hive2

        if hive_version is None and is_hive2(url):
            return None
        raise


def _check_list_table(wl: WriteIdList, table, tfs: TableFS, warnings: list[str]) -> None:
    """A ValidWriteIdList names its table: one for another table is a mistake (exit 2 for a
    DB.TABLE target; a warning for a path, whose directory name may differ from the table's)."""
    if not wl.table:
        return
    if table is not None:
        if wl.table.lower() != table.full_name.lower():
            raise UsageError(f"--write-ids names table {wl.table}, not {table.full_name}")
        return
    import posixpath

    parts = [p for p in tfs.root.rstrip("/").split("/") if p and "=" not in p]
    name = parts[-1].lower() if parts else ""
    if name and wl.table.split(".")[-1].lower() != name:
        warnings.append(
            f"--write-ids names table {wl.table}, but the directory is {posixpath.basename(tfs.root) or tfs.root}"
        )
