"""``acidctl metastore init``: create the metastore schema Hive's schematool creates
(``-initSchema`` with ``hive-schema-3.1.0.<db>.sql`` / ``hive-schema-4.0.0.<db>.sql``) for every table
acidctl reads or writes, on PostgreSQL, MySQL/MariaDB and (hand-translated, metastore.md §12) SQLite.

Names, case and quoting follow metastore.md §1.1 (Postgres Hive 3: lower-case transaction
tables; everything else upper-case); columns, types, keys and indexes come from
:mod:`acidctl.metastore.schema`. Rows: the ones Hive's init script inserts (one row in each
sequence table, value 1; Hive 4's ``TXNS`` seed row ``(0, 'c', 0, 0, '', '')`` and its
``TXN_LOCK_TBL`` row; the ``hive`` catalog; ``SEQUENCE_TABLE`` / ``NOTIFICATION_SEQUENCE``) and the
``VERSION`` row exactly as schematool writes it (``'Hive release version 4.0.0'``) — plus the
``default`` database that HMS itself creates on its first start (``--warehouse`` is its
location; by default a ``warehouse`` directory beside a SQLite metastore file, see
:func:`default_warehouse`). ``AUX_TABLE`` starts empty, as with schematool: Hive inserts a mutex row the first
time it takes that mutex. Refuses (exit 6) to touch a database that already has any of these
tables.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from acidctl.errors import RefusedError
from acidctl.metastore.connection import create_engine, db_errors, parse_hive_version, safe_url, _table_names

#: the ``--hive-version`` of ``metastore init`` and ``demo`` when none is given (one default for
#: both: the demo warehouse is laid out as Hive 3 writes it). Light module: CLI modules import it.
DEFAULT_HIVE_VERSION = 3

#: no longer written: databases are told apart by their schema version, not by who created them
INIT_COMMENT = "acidctl metastore init"


@dataclasses.dataclass
class InitResult:
    url: str
    hive_version: int
    schema_version: str
    tables: list[str]
    dry_run: bool = False
    #: DB_LOCATION_URI of the ``default`` database
    warehouse: str = ""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def init_metastore(
    url_or_engine: Any,
    *,
    hive_version: Any = None,
    warehouse: str | None = None,
    dry_run: bool = False,
) -> InitResult:
    """Create the tables in an empty database. ``hive_version``: 3 or 4. ``dry_run``: the same
    checks (reachable, no metastore table in it) and the tables it would create; nothing is
    written — a SQLite file that does not exist yet is not created (only its directory checked).
    ``warehouse``: the default database's location (None: :func:`default_warehouse`)."""
    from acidctl.metastore.schema import (
        SCHEMA_VERSIONS,
        VERSION_COMMENTS,
        Flavor,
        build_metadata,
        seed_rows,
        tables_for,
    )

    hv = parse_hive_version(hive_version)
    if hv is None:
        hv = DEFAULT_HIVE_VERSION
    if hasattr(url_or_engine, "dialect"):
        engine = url_or_engine
    else:
        engine = create_engine(url_or_engine, must_exist=False)
    dialect = engine.dialect.name
    if dialect == "mariadb":
        dialect = "mysql"
    flavor = Flavor.default(dialect, hv)
    md = build_metadata(flavor)
    result = InitResult(
        url=safe_url(engine.url),
        hive_version=hv,
        schema_version=SCHEMA_VERSIONS[hv],
        tables=sorted(t.name for t in md.tables.values()),
        dry_run=dry_run,
        warehouse=(warehouse if warehouse is not None else default_warehouse(engine.url)).rstrip("/"),
    )
    if dry_run and dialect == "sqlite" and _new_sqlite_file(engine.url.database):
        return result  # connecting would create the file: it is new, hence empty
    if not dry_run:
        create_sqlite_file(engine)
    with db_errors(engine.url):
        with engine.connect() as conn:
            existing = {n.upper() for n in _table_names(conn)}
            clash = sorted(existing & {t.name.upper() for t in md.tables.values()})
            conn.rollback()
            if clash:
                raise RefusedError(
                    f"{safe_url(engine.url)} already has metastore tables ({', '.join(clash[:5])}"
                    f"{', ...' if len(clash) > 5 else ''}); refusing to touch it"
                )
        if dry_run:
            return result
        with engine.begin() as conn:
            if dialect == "mysql":
                # as Hive's MySQL script: the seed TXNS row keeps TXN_ID 0 (AUTO_INCREMENT column)
                conn.exec_driver_sql("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')")
            md.create_all(conn)
            T = {t.name.upper(): t for t in md.tables.values()}

            def ins(name: str, **values):
                t = T[name]
                conn.execute(t.insert().values({flavor.column(name, k): v for k, v in values.items()}))

            for name in tables_for(hv):
                for row in seed_rows(name, hv):
                    ins(name, **row)
            if hv == 4:
                ins("TXNS", TXN_ID=0, TXN_STATE="c", TXN_STARTED=0, TXN_LAST_HEARTBEAT=0, TXN_USER="", TXN_HOST="")
            # what HMS's first start adds (HMSHandler.createDefaultDB), so tables can be registered
            ins(
                "DBS",
                DB_ID=1,
                DESC="Default Hive database",
                DB_LOCATION_URI=result.warehouse,
                NAME="default",
                OWNER_NAME="public",
                OWNER_TYPE="ROLE",
                CTLG_NAME="hive",
            )
            # last step of Hive's init script
            ins("VERSION", VER_ID=1, SCHEMA_VERSION=SCHEMA_VERSIONS[hv], VERSION_COMMENT=VERSION_COMMENTS[hv])
    return result


#: the default database's location when the metastore is not a SQLite file
FALLBACK_WAREHOUSE = "file:/tmp/acidctl-warehouse"


def default_warehouse(url: Any) -> str:
    """Where ``metastore init`` puts the ``default`` database when ``--warehouse`` is not given:
    a ``warehouse`` directory beside a SQLite metastore file (``sqlite:////srv/ms/metastore.db``
    → ``file:/srv/ms/warehouse``, a relative path resolved against the current directory as
    SQLite resolves it), as ``acidctl demo`` lays out its warehouse; for a database server or an
    in-memory SQLite database, which have no directory of their own, ``file:/tmp/acidctl-warehouse``.
    Nothing is created there (HMS's createDefaultDB records the location only)."""
    import os

    from sqlalchemy.engine import make_url

    u = make_url(str(url)) if not hasattr(url, "get_backend_name") else url
    db = u.database
    if u.get_backend_name() != "sqlite" or not db or db == ":memory:" or db.startswith("file:"):
        return FALLBACK_WAREHOUSE
    return "file:" + os.path.join(os.path.dirname(os.path.abspath(db)), "warehouse")


def _new_sqlite_file(db: str | None) -> bool:
    """A SQLite database path that does not exist yet (True), or an in-memory/URI/existing one.
    Its directory must exist, as SQLite's open would require (else the error the real run gets)."""
    import os

    from acidctl.errors import MetastoreUnavailable

    if db is None or not _is_new_file(db):
        return False
    parent = os.path.dirname(os.path.abspath(db))
    if not os.path.isdir(parent):
        raise MetastoreUnavailable(
            f"cannot reach the metastore (sqlite:///{db}): unable to open database file ({parent} does not exist)"
        )
    return True


def _is_new_file(db: str) -> bool:
    """A SQLite database named by a plain path that does not exist yet (not in-memory, not a URI)."""
    import os

    return bool(db) and db != ":memory:" and not db.startswith("file:") and not os.path.exists(db)


def create_sqlite_file(engine) -> None:
    """A new SQLite metastore file is created by acidctl's one file rule (acidctl.fs: 0666 minus
    the umask, the directory's group) rather than by SQLite (0644 minus the umask), so a umask
    of 002 gives a group-writable metastore as it gives group-writable data; SQLite's journal
    and WAL files copy the database file's mode."""
    from acidctl.fs import open_local_new

    db = engine.url.database if engine.dialect.name == "sqlite" else None
    if db is None or not _is_new_file(db):
        return
    try:
        open_local_new(db, "ab").close()
    except OSError:
        pass  # SQLite reports it with its own error on connect
