"""Table lookup: ``resolve_table(engine_or_url, "db.table[/part=value...]") -> TableInfo``.

Reads DBS, TBLS, SDS, PARTITIONS, PARTITION_KEYS, TABLE_PARAMS and COLUMNS_V2 (quoted
upper-case on every database, metastore.md §1.1) in one read-only transaction, so that
``state``, ``dump --merged`` and ``compact`` can accept ``DB.TABLE`` instead of a path.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from acidctl.errors import NotFoundError, TableNotFound, UsageError
from acidctl.metastore.connection import Metastore, connect
from acidctl.metastore.snapshot import split_table_name

# Hive's FileUtils.escapePathName character set (partition names in PART_NAME are escaped)
_ESCAPE = set("\"#%'*/:=?\\\x7f{[]^")


def escape_path_name(value: str) -> str:
    out = []
    for ch in value:
        if ord(ch) < 0x20 or ch in _ESCAPE:
            out.append("%%%02X" % ord(ch))
        else:
            out.append(ch)
    return "".join(out)


_ESCAPED = re.compile(r"%[0-9A-Fa-f]{2}")


def normalize_partition(spec: str | None) -> str | None:
    """``ds=2020-01-01/hr=1``, ``ds='x',hr=1`` or ``ds=x hr=1`` → Hive's PART_NAME form
    (keys lower-case, values escaped like Hive's ``escapePathName``)."""
    if spec is None:
        return None
    s = spec.strip()
    if s.upper().startswith("PARTITION"):
        s = s[len("PARTITION") :].strip()
    s = s.strip("()")
    if not s:
        return None
    parts = [p.strip() for p in re.split(r"[/,]", s) if p.strip()]
    out = []
    for p in parts:
        if "=" not in p:
            raise UsageError(f"bad partition spec {spec!r}: expected key=value[/key=value...]")
        k, v = p.split("=", 1)
        k, v = k.strip().strip("`").lower(), v.strip()
        if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
            v = v[1:-1]
        if not _ESCAPED.search(v):
            v = escape_path_name(v)
        out.append(f"{k}={v}")
    return "/".join(out)


def split_spec(spec: str) -> tuple[str, str, str | None]:
    """``db.table[/k=v...]`` → (db, table, partition name or None)."""
    name, _, part = spec.strip().partition("/")
    db, tbl = split_table_name(name)
    return db, tbl, normalize_partition(part) if part else None


def _truthy(v: str | None) -> bool:
    return v is not None and v.strip().lower() == "true"


@dataclasses.dataclass
class TableInfo:
    db: str
    table: str
    tbl_id: int
    table_type: str | None
    owner: str | None
    location: str | None  # the table's location (SDS.LOCATION)
    input_format: str | None
    output_format: str | None
    bucket_count: int  # SDS.NUM_BUCKETS (-1 = not bucketed)
    params: dict[str, str]
    partition_keys: list[tuple[str, str]]  # (name, type) in order
    columns: list[tuple[str, str]]  # (name, type) in order, from COLUMNS_V2
    partition: str | None = None  # PART_NAME when a partition was asked for
    partition_location: str | None = None
    partitions: list[str] | None = None  # with list_partitions=True
    hive_version: int | None = None
    db_params: dict[str, str] = dataclasses.field(default_factory=dict)  # DATABASE_PARAMS

    @property
    def full_name(self) -> str:
        return f"{self.db}.{self.table}"

    @property
    def path(self) -> str | None:
        """Where the data of the requested table or partition lives."""
        return self.partition_location if self.partition else self.location

    @property
    def transactional(self) -> bool:
        return _truthy(self.params.get("transactional"))

    @property
    def transactional_properties(self) -> str | None:
        return self.params.get("transactional_properties")

    @property
    def insert_only(self) -> bool:
        return (self.transactional_properties or "").strip().lower() == "insert_only"

    @property
    def full_acid(self) -> bool:
        return self.transactional and not self.insert_only

    @property
    def no_auto_compaction(self) -> bool:
        """Whether Hive's Initiator skips this table (the database property decides on Hive 4)."""
        return self.no_auto_compaction_by[0]

    @property
    def no_auto_compaction_by(self) -> tuple[bool, str | None]:
        from acidctl.acid.initiator import no_auto_compaction

        return no_auto_compaction(self.params, self.db_params, hive_version=self.hive_version or 3)

    @property
    def compactor_thresholds(self) -> dict[str, str]:
        """``compactorthreshold.*`` table properties (Initiator overrides), as stored."""
        return {k: v for k, v in self.params.items() if k.startswith("compactorthreshold.")}

    @property
    def partitioned(self) -> bool:
        return bool(self.partition_keys)

    def to_dict(self) -> dict:
        return {
            "db": self.db,
            "table": self.table,
            "full_name": self.full_name,
            "tbl_id": self.tbl_id,
            "table_type": self.table_type,
            "owner": self.owner,
            "location": self.location,
            "partition": self.partition,
            "partition_location": self.partition_location,
            "path": self.path,
            "input_format": self.input_format,
            "output_format": self.output_format,
            "bucket_count": self.bucket_count,
            "transactional": self.transactional,
            "transactional_properties": self.transactional_properties,
            "insert_only": self.insert_only,
            "no_auto_compaction": self.no_auto_compaction,
            "no_auto_compaction_source": self.no_auto_compaction_by[1],
            "database_params": dict(self.db_params),
            "compactor_thresholds": self.compactor_thresholds,
            "params": dict(self.params),
            "partition_keys": [{"name": n, "type": t} for n, t in self.partition_keys],
            "columns": [{"name": n, "type": t} for n, t in self.columns],
            "partitions": self.partitions,
            "hive_version": self.hive_version,
        }


def resolve_table(
    engine_or_url: Any,
    spec: str,
    *,
    partition: str | None = None,
    list_partitions: bool = False,
    hive_version: Any = None,
) -> TableInfo:
    """Look up ``db.table`` (optionally ``/k=v/...`` or ``partition="k=v/..."``).

    Raises :class:`TableNotFound` (exit 3) for an unknown database or table and
    :class:`NotFoundError` for an unknown partition.
    """
    from acidctl.metastore import thrift

    if thrift.is_thrift(engine_or_url):
        return thrift.table_info(engine_or_url, spec, partition=partition)
    import sqlalchemy as sa

    ms: Metastore = connect(engine_or_url, hive_version=hive_version)
    db, tbl, part = split_spec(spec)
    if partition:
        if part:
            raise UsageError("give the partition either in DB.TABLE/SPEC or with --partition, not both")
        part = normalize_partition(partition)
    T = ms.tables
    dbs, tbls, sds = T.DBS, T.TBLS, T.SDS
    with ms.read() as conn:
        q = (
            sa.select(
                tbls.TBL_ID,
                tbls.DB_ID,
                tbls.TBL_TYPE,
                tbls.OWNER,
                sds.LOCATION,
                sds.INPUT_FORMAT,
                sds.OUTPUT_FORMAT,
                sds.NUM_BUCKETS,
                sds.CD_ID,
            )
            .select_from(
                tbls.clause.join(dbs.clause, dbs.DB_ID == tbls.DB_ID).outerjoin(sds.clause, sds.SD_ID == tbls.SD_ID)
            )
            .where(dbs.NAME == db, tbls.TBL_NAME == tbl)
        )
        row = conn.execute(q).first()
        if row is None:
            have_db = conn.execute(sa.select(dbs.DB_ID).where(dbs.NAME == db)).first()
            if have_db is None:
                raise TableNotFound(f"database {db} not found in the metastore")
            raise TableNotFound(f"table {db}.{tbl} not found in the metastore")
        tbl_id, db_id, ttype, owner, location, inf, outf, nb, cd_id = row
        db_params: dict[str, str] = {}
        if T.exists("DATABASE_PARAMS"):
            dp = T.DATABASE_PARAMS
            db_params = {
                k: (v if v is not None else "")
                for k, v in conn.execute(sa.select(dp.PARAM_KEY, dp.PARAM_VALUE).where(dp.DB_ID == db_id))
            }
        tp = T.TABLE_PARAMS
        params = {
            k: (v if v is not None else "")
            for k, v in conn.execute(sa.select(tp.PARAM_KEY, tp.PARAM_VALUE).where(tp.TBL_ID == tbl_id))
        }
        pk = T.PARTITION_KEYS
        pkeys = [
            (n, t)
            for n, t in conn.execute(
                sa.select(pk.PKEY_NAME, pk.PKEY_TYPE).where(pk.TBL_ID == tbl_id).order_by(pk.INTEGER_IDX)
            )
        ]
        cols: list[tuple[str, str]] = []
        if cd_id is not None:
            c2 = T.COLUMNS_V2
            cols = [
                (n, t)
                for n, t in conn.execute(
                    sa.select(c2.COLUMN_NAME, c2.TYPE_NAME).where(c2.CD_ID == cd_id).order_by(c2.INTEGER_IDX)
                )
            ]
        info = TableInfo(
            db=db,
            table=tbl,
            tbl_id=int(tbl_id),
            table_type=ttype,
            owner=owner,
            location=location,
            input_format=inf,
            output_format=outf,
            bucket_count=int(nb) if nb is not None else -1,
            params=params,
            partition_keys=pkeys,
            columns=cols,
            hive_version=ms.hive_version,
            db_params=db_params,
        )
        parts = T.PARTITIONS
        if part:
            if not pkeys:
                raise UsageError(f"table {db}.{tbl} is not partitioned")
            prow = conn.execute(
                sa.select(parts.PART_NAME, sds.LOCATION)
                .select_from(parts.clause.outerjoin(sds.clause, sds.SD_ID == parts.SD_ID))
                .where(parts.TBL_ID == tbl_id, parts.PART_NAME == part)
            ).first()
            if prow is None:
                raise NotFoundError(f"partition {part} of {db}.{tbl} not found in the metastore")
            info.partition, info.partition_location = prow[0], prow[1]
        if list_partitions and pkeys:
            info.partitions = [
                r[0]
                for r in conn.execute(
                    sa.select(parts.PART_NAME).where(parts.TBL_ID == tbl_id).order_by(parts.PART_NAME)
                )
            ]
    return info


def resolve_with_snapshot(
    engine_or_url: Any, spec: str, *, partition: str | None = None, hive_version: Any = None, now_ms: int | None = None
):
    """``(TableInfo, TxnList, WriteIdList)`` for ``db.table[/k=v...]`` — what ``state``,
    ``dump --merged`` and ``compact`` need to accept ``DB.TABLE``."""
    from acidctl.metastore.snapshot import table_snapshot

    ms = connect(engine_or_url, hive_version=hive_version)
    info = resolve_table(ms, spec, partition=partition)
    txns, wl = table_snapshot(ms, info.full_name, now_ms=now_ms)
    return info, txns, wl


def require_exists(engine_or_url: Any, db: str, table: str | None = None, *, hive_version: Any = None) -> None:
    """Raise :class:`TableNotFound` (exit 3) when the database (or table) is unknown: a typo
    must not read as "no compactions" or "no locks"."""
    from acidctl.metastore import thrift

    if thrift.is_thrift(engine_or_url):
        return thrift.require_exists(engine_or_url, db, table)
    import sqlalchemy as sa

    if table is not None:
        resolve_table(engine_or_url, f"{db}.{table}", hive_version=hive_version)
        return
    ms: Metastore = connect(engine_or_url, hive_version=hive_version)
    dbs = ms.tables.DBS
    with ms.read() as conn:
        if conn.execute(sa.select(dbs.DB_ID).where(dbs.NAME == db.lower())).first() is None:
            raise TableNotFound(f"database {db} not found in the metastore")


def location_forms(path: str) -> list[str]:
    """The spellings SDS.LOCATION may use for ``path``: Hive records local warehouses as
    ``file:/x`` (sometimes ``file:///x``), other filesystems as full URLs; with and without a
    trailing slash."""
    p = path.rstrip("/") or "/"
    if "://" in p and not p.startswith("file://"):
        bases = [p]
    else:
        local = p[len("file://") :] if p.startswith("file://") else p
        local = "/" + local.lstrip("/")
        bases = [local, "file:" + local, "file://" + local]
    return [f for b in bases for f in (b, b + "/")]


def table_at(engine_or_url: Any, path: str) -> str | None:
    """``db.table[/k=v...]`` of the metastore table whose location is ``path`` or, for a partition
    directory, an ancestor of it (the ``k=v`` levels below it name the partition); None when no
    table has that location. One query on SDS.LOCATION (indexed by nothing, but matched by
    equality on a handful of spellings)."""
    import sqlalchemy as sa

    ms: Metastore = connect(engine_or_url)
    T = ms.tables
    parts = (path.rstrip("/") or "/").split("/")
    candidates: dict[str, str | None] = {}  # location spelling -> partition below it
    for depth in range(0, len(parts)):
        tail = parts[len(parts) - depth :] if depth else []
        if tail and "=" not in tail[0]:
            break
        head = "/".join(parts[: len(parts) - depth])
        for form in location_forms(head):
            candidates[form] = "/".join(tail) or None
    q = (
        sa.select(T.DBS.NAME, T.TBLS.TBL_NAME, T.SDS.LOCATION)
        .select_from(
            T.TBLS.clause.join(T.DBS.clause, T.DBS.DB_ID == T.TBLS.DB_ID).join(
                T.SDS.clause, T.SDS.SD_ID == T.TBLS.SD_ID
            )
        )
        .where(T.SDS.LOCATION.in_(list(candidates)))
    )
    with ms.read() as conn:
        rows = conn.execute(q).all()
    if not rows:
        return None
    # the deepest location wins (a table nested inside another's directory)
    db, tbl, loc = max(rows, key=lambda r: len(r[2].rstrip("/")))
    part = candidates[loc]
    return f"{db}.{tbl}" + (f"/{part}" if part else "")


def list_acid_tables(
    engine_or_url: Any, *, db_glob: str = "*", table_glob: str = "*", hive_version: Any = None
) -> list[dict]:
    """The transactional tables (``transactional=true``) whose names match the globs
    (case-insensitive, as Hive names): ``{"table", "kind" (full|insert_only), "partition_keys",
    "partitions", "buckets", "location"}``, sorted by name. A database named without a glob
    character that does not exist raises :class:`TableNotFound` (exit 3)."""
    from acidctl.metastore import thrift

    if thrift.is_thrift(engine_or_url):
        return thrift.list_acid_tables(engine_or_url, db_glob=db_glob, table_glob=table_glob, hive_version=hive_version)
    import fnmatch

    import sqlalchemy as sa

    ms: Metastore = connect(engine_or_url, hive_version=hive_version)
    T = ms.tables
    dbs, tbls, sds, tp, pk, parts = T.DBS, T.TBLS, T.SDS, T.TABLE_PARAMS, T.PARTITION_KEYS, T.PARTITIONS
    db_glob, table_glob = db_glob.lower(), table_glob.lower()
    with ms.read() as conn:
        if not any(c in db_glob for c in "*?["):
            if conn.execute(sa.select(dbs.DB_ID).where(dbs.NAME == db_glob)).first() is None:
                raise TableNotFound(f"database {db_glob} not found in the metastore")
        rows = conn.execute(
            sa.select(dbs.NAME, tbls.TBL_NAME, tbls.TBL_ID, sds.LOCATION, sds.NUM_BUCKETS).select_from(
                tbls.clause.join(dbs.clause, dbs.DB_ID == tbls.DB_ID).outerjoin(sds.clause, sds.SD_ID == tbls.SD_ID)
            )
        ).all()
        rows = [
            r
            for r in rows
            if fnmatch.fnmatchcase(r[0].lower(), db_glob) and fnmatch.fnmatchcase(r[1].lower(), table_glob)
        ]
        ids = [int(r[2]) for r in rows]
        params: dict[int, dict[str, str]] = {}
        keys: dict[int, list[str]] = {}
        counts: dict[int, int] = {}
        if ids:
            for tid, k, v in conn.execute(
                sa.select(tp.TBL_ID, tp.PARAM_KEY, tp.PARAM_VALUE).where(
                    tp.TBL_ID.in_(ids), tp.PARAM_KEY.in_(["transactional", "transactional_properties"])
                )
            ):
                params.setdefault(int(tid), {})[k] = (v or "").strip().lower()
            for tid, name in conn.execute(
                sa.select(pk.TBL_ID, pk.PKEY_NAME).where(pk.TBL_ID.in_(ids)).order_by(pk.TBL_ID, pk.INTEGER_IDX)
            ):
                keys.setdefault(int(tid), []).append(name)
            for tid, n in conn.execute(
                sa.select(parts.TBL_ID, sa.func.count()).where(parts.TBL_ID.in_(ids)).group_by(parts.TBL_ID)
            ):
                counts[int(tid)] = int(n)
    out = []
    for db, tbl, tid, loc, nb in rows:
        p = params.get(int(tid), {})
        if p.get("transactional") != "true":
            continue
        out.append(
            {
                "table": f"{db}.{tbl}",
                "kind": "insert_only" if p.get("transactional_properties") == "insert_only" else "full",
                "partition_keys": keys.get(int(tid), []),
                "partitions": counts.get(int(tid), 0),
                "buckets": int(nb) if nb is not None and int(nb) > 0 else None,
                "location": loc,
            }
        )
    return sorted(out, key=lambda t: t["table"])
