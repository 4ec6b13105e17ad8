"""Whether a command's target is an insert-only table, and the format and columns to use.

With ``DB.TABLE`` the metastore decides (``transactional_properties=insert_only``; format and
SerDe properties from SDS/SERDES/SERDE_PARAMS/TABLE_PARAMS; columns from COLUMNS_V2). For a
path, ``--format`` says the table is insert-only; columns come from ``--columns name:type,...``
or, for the self-describing formats (ORC, Parquet, Avro), from the first data file read.
"""

from __future__ import annotations

import dataclasses

from acidctl.errors import UsageError
from acidctl.formats.hivetypes import Column, is_typed_spec, parse_columns
from acidctl.formats.storage import Storage, lookup, offline


@dataclasses.dataclass
class MMContext:
    storage: Storage
    columns: list[Column] | None  # None: take them from the first data file
    partition_keys: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    #: the cluster's ``hive.mm.allow.originals`` (spec A.5): originals read while no base exists
    allow_originals: bool = False

    def to_dict(self) -> dict:
        return {
            "storage": self.storage.to_dict(),
            "columns": [{"name": c.name, "type": c.type} for c in self.columns or []],
            "allow_originals": self.allow_originals,
        }


def parse_serde_properties(pairs) -> dict[str, str]:
    """``KEY=VALUE`` pairs; values are kept verbatim (a separator may be a space or a tab)."""
    out = {}
    for pair in pairs or ():
        k, sep, v = pair.partition("=")
        if not sep or not k.strip():
            raise UsageError(f"--serde-property expects KEY=VALUE, got {pair!r}")
        out[k.strip()] = v
    return out


def mm_context(
    target,
    *,
    fmt: str | None = None,
    columns: str | None = None,
    serde_properties: dict[str, str] | None = None,
    allow_originals: bool = False,
) -> MMContext | None:
    """The MM context of a resolved :class:`acidctl.target.Target`, or None for a full-ACID one."""
    info = target.table
    typed = parse_columns(columns) if is_typed_spec(columns) else None
    if info is not None:
        if not info.insert_only:
            if allow_originals:
                raise UsageError(f"--mm-allow-originals applies to insert-only tables; {info.full_name} is full-ACID")
            if fmt:
                raise UsageError(f"--format applies to insert-only tables; {info.full_name} is full-ACID")
            return None
        storage = lookup(target.metastore, info)
        if serde_properties:
            storage.properties.update(serde_properties)
        cols = typed or [Column(n.lower(), t.lower()) for n, t in info.columns] or None
        return MMContext(storage, cols, list(info.partition_keys), allow_originals=allow_originals)
    if fmt is None:
        if allow_originals and not insert_only_props(target):
            raise UsageError("--mm-allow-originals applies to insert-only tables")
        if serde_properties:
            raise UsageError("--serde-property applies to insert-only tables: give --format too")
        if (target.properties.get("transactional_properties") or "").strip().lower() == "insert_only":
            raise UsageError("an insert-only table given as a path needs --format orc|parquet|avro|text")
        return None
    props = dict(target.properties or {})
    return MMContext(offline(fmt, serde_properties, props), typed, allow_originals=allow_originals)


def insert_only_props(target) -> bool:
    return (target.properties.get("transactional_properties") or "").strip().lower() == "insert_only"
