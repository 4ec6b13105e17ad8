"""Connecting to a metastore database: URL resolution, engines, read-only transactions,
schema detection and error mapping.

* URL precedence: ``--metastore`` flag > ``ACIDCTL_METASTORE_URL`` > the config file profile
  (``~/.acidctl.toml`` or ``$ACIDCTL_CONFIG``): ``[profiles.NAME] metastore = "URL"``; without
  ``--profile`` the file's ``default_profile`` key, else a profile named ``default``.
  A top-level ``metastore = "URL"`` key is accepted as well.
* Every read runs inside :func:`read_only`: one database transaction that the server itself
  enforces as read-only (Postgres ``SET TRANSACTION READ ONLY``, MySQL/MariaDB ``SET
  TRANSACTION READ ONLY`` before the transaction starts, SQLite ``PRAGMA query_only``), with
  bound parameters only.
* Passwords never leave this module: URLs are rendered with ``hide_password=True``, driver
  messages go through :func:`acidctl.errors.redact`, and original exceptions are not chained.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
from pathlib import Path
from collections.abc import Iterator, Mapping
from typing import Any

from acidctl.errors import AcidctlError, MetastoreError, MetastoreUnavailable, UnsupportedSchema, UsageError, redact

log = logging.getLogger("acidctl.metastore")

SUPPORTED_DIALECTS = ("postgresql", "mysql", "sqlite")


# ---------------------------------------------------------------------------------------
# URL resolution
# ---------------------------------------------------------------------------------------


def config_path() -> Path:
    p = os.environ.get("ACIDCTL_CONFIG")
    return Path(p).expanduser() if p else Path("~/.acidctl.toml").expanduser()


def _load_config(path: Path) -> dict:
    import tomllib

    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, OSError) as e:
        raise UsageError(f"cannot read config file {path}: {e}") from None


def resolve_url(flag: str | None = None, *, profile: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The metastore URL: ``flag`` > ``ACIDCTL_METASTORE_URL`` > config file profile.

    Note: typer already maps ``ACIDCTL_METASTORE_URL`` onto ``--metastore``; the env lookup
    here serves library callers.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    if flag:
        return flag
    if environ.get("ACIDCTL_METASTORE_URL"):
        return environ["ACIDCTL_METASTORE_URL"]
    path = Path(environ["ACIDCTL_CONFIG"]).expanduser() if environ.get("ACIDCTL_CONFIG") else config_path()
    cfg = _load_config(path)
    profiles = cfg.get("profiles", {}) if isinstance(cfg.get("profiles", {}), dict) else {}
    name = profile or environ.get("ACIDCTL_PROFILE") or cfg.get("default_profile")
    if name:
        if name not in profiles and not path.exists():
            src = " (ACIDCTL_CONFIG)" if environ.get("ACIDCTL_CONFIG") else ""
            raise UsageError(
                f"profile {name!r}: config file {path}{src} does not exist",
                hint=f'create it with [profiles.{name}] metastore = "URL"',
            )
        if name not in profiles:
            raise UsageError(
                f"profile {name!r} not found in {path}", hint='define [profiles.%s] metastore = "URL"' % name
            )
        url = profiles[name].get("metastore") or profiles[name].get("metastore_url")
        if not url:
            raise UsageError(f"profile {name!r} in {path} has no 'metastore' URL")
        return url
    if "default" in profiles and profiles["default"].get("metastore"):
        return profiles["default"]["metastore"]
    if cfg.get("metastore"):
        return cfg["metastore"]
    raise UsageError(
        "no metastore given", hint="use --metastore URL, ACIDCTL_METASTORE_URL, or a profile in ~/.acidctl.toml"
    )


def profile_setting(key: str, *, profile: str | None = None, env: Mapping[str, str] | None = None) -> Any:
    """A key of the chosen profile (``[profiles.NAME] key = ...``), else top-level, else None.
    Unlike :func:`resolve_url` a missing file or profile is not an error here."""
    environ: Mapping[str, str] = os.environ if env is None else env
    path = Path(environ["ACIDCTL_CONFIG"]).expanduser() if environ.get("ACIDCTL_CONFIG") else config_path()
    cfg = _load_config(path)
    profiles = cfg.get("profiles", {}) if isinstance(cfg.get("profiles", {}), dict) else {}
    name = profile or environ.get("ACIDCTL_PROFILE") or cfg.get("default_profile") or "default"
    prof = profiles.get(name)
    if not isinstance(prof, dict):
        prof = {}
    if key in prof:
        return prof[key]
    return cfg.get(key)


def safe_url(url: Any) -> str:
    """The URL for messages: password hidden."""
    try:
        from sqlalchemy.engine import make_url

        # hide_password covers user:secret@ only; redact() also masks ?password=... and friends
        return redact(make_url(url).render_as_string(hide_password=True))
    except Exception:
        return redact(str(url))


# ---------------------------------------------------------------------------------------
# Engines
# ---------------------------------------------------------------------------------------


def _normalize_url(url: str):
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        u = make_url(url)
    except ArgumentError:
        raise UsageError(
            f"not a database URL: {redact(str(url))}",
            hint="e.g. postgresql+psycopg://hive@host/metastore, mysql+pymysql://..., sqlite:///path",
        ) from None
    backend = u.get_backend_name()
    if backend == "mariadb":
        u = u.set(drivername="mysql+pymysql")
    elif backend == "postgresql" and u.drivername == "postgresql":
        u = u.set(drivername="postgresql+psycopg")
    elif backend == "mysql" and u.drivername == "mysql":
        u = u.set(drivername="mysql+pymysql")
    if u.get_backend_name() not in SUPPORTED_DIALECTS:
        raise UsageError(
            f"unsupported metastore database {backend!r} in {safe_url(u)}",
            hint="supported: postgresql, mysql/mariadb, sqlite",
        )
    return u


def create_engine(url: Any, *, connect_timeout: int = 10, must_exist: bool = True):
    """A SQLAlchemy engine for ``url`` (string or URL). Does not connect."""
    import sqlalchemy as sa
    from sqlalchemy.exc import NoSuchModuleError

    u = _normalize_url(str(url) if not hasattr(url, "drivername") else url.render_as_string(hide_password=False))
    kw: dict[str, Any] = {}
    backend = u.get_backend_name()
    if backend == "postgresql":
        kw["connect_args"] = {"connect_timeout": connect_timeout, "application_name": "acidctl"}
        kw["connect_args"].update(_gss_defaults(u))
    elif backend == "mysql":
        kw["connect_args"] = {"connect_timeout": connect_timeout}
    elif backend == "sqlite":
        db = u.database
        if must_exist and db and db != ":memory:" and not db.startswith("file:") and not Path(db).exists():
            resolved, hint = sqlite_path_hint(u)
            raise MetastoreUnavailable(f"SQLite metastore {resolved or db} does not exist", hint=hint)
    # NullPool: engines made from a URL hold no connection between transactions, so library
    # calls with URL strings never leak server connections.
    from sqlalchemy.pool import NullPool

    kw["poolclass"] = NullPool
    try:
        return sa.create_engine(u, **kw)
    except NoSuchModuleError:
        raise UsageError(
            f"no driver for {safe_url(u)}", hint="install acidctl[postgres] (psycopg) or acidctl[mysql] (PyMySQL)"
        ) from None
    except ModuleNotFoundError as e:
        raise UsageError(f"database driver missing for {safe_url(u)}: {e.name}") from None


def _gss_defaults(u) -> dict[str, str]:
    """libpq's documented default ``gssencmode=prefer``, said explicitly unless the URL (or
    ``PGGSSENCMODE``) chooses: psycopg's binary wheels bundle a libpq whose compiled default is
    ``disable`` — it would not try GSSAPI encryption (a ``hostgssenc`` server refuses it while
    ``psql`` connects) and warns (RuntimeWarning) on every GSSAPI login that relied on the
    default. Without a Kerberos ticket libpq skips GSSAPI encryption, as ``psql`` does.
    ``krbsrvname`` (the server's service name, ``postgres`` by default) passes through the
    URL's query like every libpq parameter."""
    if "gssencmode" in u.query or os.environ.get("PGGSSENCMODE"):
        return {}
    return {"gssencmode": "prefer"}


def _login_failure(msg: str, url: Any) -> AcidctlError | None:
    """A Kerberos (GSSAPI) login the database refused, or one the driver cannot make, as one
    :class:`AuthenticationFailed` line; None for every other failure (a wrong password stays
    "cannot reach the metastore", exit 5)."""
    from acidctl.errors import AuthenticationFailed

    low = msg.lower()
    where = f" ({safe_url(url)})" if url is not None else ""
    if "auth_gssapi_client" in low:
        # MariaDB's GSSAPI plugin: PyMySQL has no GSSAPI authentication
        return AuthenticationFailed(
            f"the metastore database account{where} logs in with GSSAPI (auth_gssapi_client), "
            "which acidctl's MySQL/MariaDB driver (PyMySQL) cannot do",
            hint="give acidctl an account with a password (MariaDB: IDENTIFIED VIA gssapi OR "
            "mysql_native_password), or use the metastore's Thrift port (--metastore thrift://...)",
        )
    query = {}
    try:
        query = dict(getattr(url, "query", None) or {})
    except Exception:  # noqa: BLE001 - a URL we cannot read: no Kerberos context
        pass
    asked = "krbsrvname" in query or query.get("gssencmode") in ("prefer", "require")
    gss = "gssapi" in low or "kerberos" in low or "credential cache" in low
    # a hostgssenc-only server answers a client without a ticket "no pg_hba.conf entry ... no encryption"
    if gss or (asked and "no pg_hba.conf entry" in low and "no encryption" in low):
        from acidctl.kerberos import KINIT_HINT, host_hint, ticket_problem

        why = ticket_problem() or msg
        host = str(getattr(url, "host", "") or "")
        return AuthenticationFailed(
            f"Kerberos (GSSAPI) login to the metastore database{where} failed: {why}",
            hint=host_hint(host) or KINIT_HINT,
        )
    return None


def as_engine(engine_or_url: Any):
    """Accept an Engine, a Metastore, or a URL string."""
    if hasattr(engine_or_url, "engine") and hasattr(engine_or_url, "flavor"):
        return engine_or_url.engine
    if hasattr(engine_or_url, "connect") and hasattr(engine_or_url, "dialect"):
        return engine_or_url
    return create_engine(engine_or_url)


def sqlite_path_hint(url: Any) -> tuple[str | None, str | None]:
    """For a SQLite URL SQLite could not open: the file it tried (relative paths resolved against
    the current directory, as SQLite does) and a hint on ``sqlite:///rel`` vs ``sqlite:////abs``
    (new-user report #7: ``sqlite:///tmp/ms.db`` is ``./tmp/ms.db``)."""
    import os

    try:
        from sqlalchemy.engine import make_url

        u = make_url(str(url)) if not hasattr(url, "get_backend_name") else url
    except Exception:  # noqa: BLE001 - not a URL we can read: no hint
        return None, None
    if u.get_backend_name() != "sqlite" or not u.database or u.database == ":memory:":
        return None, None
    db = u.database
    resolved = os.path.abspath(db)
    parent = os.path.dirname(resolved)
    if not os.path.isabs(db):
        hint = (
            f"sqlite:///{db} is a path relative to the current directory ({resolved}); "
            f"an absolute path takes four slashes: sqlite:////{db.lstrip('/')} or sqlite:///$PWD/{db}"
        )
    elif not os.path.isdir(parent):
        hint = f"the directory {parent} does not exist"
    else:
        hint = f"check that {resolved} is readable and {parent} writable"
    return resolved, hint


def translate_error(e: BaseException, url: Any = None) -> AcidctlError:
    """A one-line, password-free AcidctlError for a DBAPI / SQLAlchemy error."""
    from sqlalchemy import exc

    where = f" ({safe_url(url)})" if url is not None else ""
    orig = getattr(e, "orig", None) or e
    msg = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    msg = redact(msg)
    if isinstance(e, exc.OperationalError) or isinstance(e, exc.InterfaceError) or isinstance(e, exc.TimeoutError):
        low = msg.lower()
        # SQLite reports a missing table as an OperationalError; on Postgres/MySQL an
        # OperationalError is a connection problem ("database x does not exist" included)
        if any(s in low for s in ("no such table", "no such column")):
            return UnsupportedSchema(f"metastore query failed{where}: {msg}")
        login = _login_failure(msg, url)
        if login is not None:
            return login
        if "unable to open database file" in low:
            resolved, hint = sqlite_path_hint(url)
            if resolved is not None:
                return MetastoreUnavailable(f"cannot reach the metastore{where}: {msg}: {resolved}", hint=hint)
        return MetastoreUnavailable(f"cannot reach the metastore{where}: {msg}")
    if isinstance(e, exc.ProgrammingError):
        return UnsupportedSchema(
            f"metastore query failed{where}: {msg}", hint="is this a Hive metastore of a supported version?"
        )
    if isinstance(e, exc.DBAPIError):
        return MetastoreError(f"metastore query failed{where}: {msg}")
    return MetastoreError(f"metastore error{where}: {msg}")


@contextlib.contextmanager
def db_errors(url: Any = None) -> Iterator[None]:
    """Turn SQLAlchemy/DBAPI errors raised inside the block into AcidctlErrors (no chaining)."""
    from sqlalchemy import exc

    try:
        yield
    except AcidctlError:
        raise
    except exc.SQLAlchemyError as e:
        err = translate_error(e, url)
    except OSError as e:
        err = MetastoreUnavailable(
            f"cannot reach the metastore{f' ({safe_url(url)})' if url is not None else ''}: {redact(str(e))}"
        )
    except TypeError as e:
        # a URL query option the DBAPI driver does not accept (pymysql's connect(**kwargs))
        if "keyword argument" not in str(e):
            raise
        err = UsageError(
            f"the metastore URL{f' ({safe_url(url)})' if url is not None else ''} has an option "
            f"the database driver does not accept: {redact(str(e))}"
        )
    else:
        return
    raise err from None


@contextlib.contextmanager
def read_only(engine) -> Iterator[Any]:
    """A connection inside one read-only database transaction (rolled back at the end)."""
    import sqlalchemy as sa

    name = engine.dialect.name
    with db_errors(engine.url):
        with engine.connect() as conn:
            if name == "postgresql":
                conn.execute(sa.text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"))
            elif name in ("mysql", "mariadb"):
                # applies to the next transaction, which the first SELECT below starts
                conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            elif name == "sqlite":
                conn.exec_driver_sql("PRAGMA query_only = ON")
            try:
                yield conn
            finally:
                try:
                    conn.rollback()
                    if name == "sqlite":
                        conn.exec_driver_sql("PRAGMA query_only = OFF")
                        conn.rollback()
                except Exception:  # pragma: no cover - connection already broken
                    pass


# ---------------------------------------------------------------------------------------
# Schema detection
# ---------------------------------------------------------------------------------------

_KEY_TXN = ("TXNS", "TXN_TO_WRITE_ID", "HIVE_LOCKS", "COMPACTION_QUEUE", "COMPLETED_COMPACTIONS")


def _table_names(conn) -> set[str]:
    import sqlalchemy as sa

    d = conn.dialect.name
    if d == "postgresql":
        rows = conn.execute(
            sa.text(
                "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relkind IN ('r', 'v', 'p') AND n.nspname = ANY (current_schemas(false))"
            )
        )
    elif d in ("mysql", "mariadb"):
        rows = conn.execute(sa.text("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()"))
    else:
        rows = conn.execute(sa.text("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"))
    return {r[0] for r in rows}


def _columns(conn, table: str) -> set[str]:
    """Upper-cased column names of one table (``table`` spelled as stored)."""
    return _all_columns(conn, [table]).get(table, set())


def _all_columns(conn, tables: list[str]) -> dict[str, set[str]]:
    """Upper-cased column names of several tables in one catalog query (SQLite: one pragma each),
    keyed by the table names as given. MySQL/MariaDB compare case-insensitively
    (``lower_case_table_names`` may have stored them lower-case)."""
    import sqlalchemy as sa

    d = conn.dialect.name
    out: dict[str, set[str]] = {t: set() for t in tables}
    if d == "postgresql":
        rows = (
            conn.execute(
                sa.text(
                    "SELECT c.relname, a.attname FROM pg_catalog.pg_attribute a "
                    "JOIN pg_catalog.pg_class c ON c.oid = a.attrelid "
                    "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE c.relname = ANY (:names) AND n.nspname = ANY (current_schemas(false)) "
                    "AND c.relkind IN ('r', 'v', 'p') AND a.attnum > 0 AND NOT a.attisdropped"
                ),
                {"names": list(tables)},
            )
            if tables
            else []
        )
        for rel, col in rows:
            if rel in out:
                out[rel].add(col.upper())
    elif d in ("mysql", "mariadb"):
        by_lower = {t.lower(): t for t in tables}
        rows = conn.execute(
            sa.text("SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = DATABASE()")
        )
        for rel, col in rows:
            t = by_lower.get(str(rel).lower())
            if t is not None:
                out[t].add(str(col).upper())
    else:
        for t in tables:
            out[t] = {r[0].upper() for r in conn.execute(sa.text("SELECT name FROM pragma_table_info(:t)"), {"t": t})}
    return out


def parse_hive_version(value: Any) -> int | None:
    if value is None or value == "" or value == "auto":
        return None
    s = str(value).strip()
    m = re.match(r"^(\d+)", s)
    if not m or m.group(1) not in ("3", "4"):
        raise UsageError(f"unsupported --hive-version {s!r}", hint="use 3 (3.1.x) or 4 (4.0.x)")
    return int(m.group(1))


def detect(conn, *, hive_version: int | None = None):
    """Work out the :class:`~acidctl.metastore.schema.Flavor` and the columns present."""
    import sqlalchemy as sa

    from acidctl.metastore.schema import Flavor, Tables

    dialect = conn.dialect.name
    if dialect == "mariadb":
        dialect = "mysql"
    names = _table_names(conn)
    upper = {n.upper() for n in names}
    if dialect == "postgresql":
        quoted = "TXNS" in names
        lower = "txns" in names
        txn_lower = lower and not quoted
        if not (quoted or lower):
            txn_lower = False
    else:
        txn_lower = False
    missing = [t for t in _KEY_TXN if t not in upper]
    if missing:
        raise UnsupportedSchema(
            f"not a Hive metastore with transaction tables: missing {', '.join(missing)}",
            hint="point --metastore at the metastore database, or create one with `acidctl metastore init`",
        )
    schema_version = None
    if "VERSION" in names or (dialect != "postgresql" and "VERSION" in upper):
        q = conn.dialect.identifier_preparer.quote
        row = conn.execute(sa.text("SELECT %s FROM %s" % (q("SCHEMA_VERSION"), q("VERSION")))).first()
        schema_version = row[0] if row else None
    detected: int | None = None
    if schema_version:
        m = re.match(r"^\s*(\d+)", str(schema_version))
        if m and m.group(1) in ("3", "4"):
            detected = int(m.group(1))
        elif hive_version is None:
            raise UnsupportedSchema(
                f"unsupported Hive metastore schema version {schema_version!r}",
                hint="acidctl supports Hive 3.1 and 4.0 metastores; override with --hive-version",
            )
    if detected is None:
        if "TXN_LOCK_TBL" in upper:
            detected = 4
        elif "NEXT_TXN_ID" in upper:
            detected = 3
    version = hive_version or detected
    if version is None:
        raise UnsupportedSchema(
            "cannot tell the Hive version of this metastore (no VERSION row)", hint="pass --hive-version 3 or 4"
        )
    flavor = Flavor(dialect=dialect, hive_version=version, txn_lower=txn_lower, schema_version=schema_version)
    # the columns each table really has: Hive's scripts may carry more (catalog columns of later or
    # vendor releases) or fewer (older releases) than acidctl's model; queries use what is there
    from acidctl.metastore.schema import META_TABLES, TXN_TABLES

    wanted = [
        t
        for t in list(TXN_TABLES) + list(META_TABLES)
        if flavor.physical(t) in names or (dialect == "mysql" and flavor.physical(t).upper() in upper)
    ]
    by_phys = _all_columns(conn, [flavor.physical(t) for t in wanted])
    present = {t: by_phys[flavor.physical(t)] for t in wanted if by_phys.get(flavor.physical(t))}
    return flavor, Tables(flavor, present)


@dataclasses.dataclass
class Metastore:
    """An engine plus what :func:`detect` found. Create with :func:`connect`."""

    engine: Any
    flavor: Any
    tables: Any
    url: Any

    @contextlib.contextmanager
    def read(self) -> Iterator[Any]:
        with read_only(self.engine) as conn:
            yield conn

    @property
    def hive_version(self) -> int:
        return self.flavor.hive_version

    def safe_url(self) -> str:
        return safe_url(self.url)


def connect(engine_or_url: Any, *, hive_version: Any = None) -> Metastore:
    """Open (lazily) and inspect a metastore. Raises MetastoreUnavailable / UnsupportedSchema."""
    from acidctl.metastore import thrift

    if thrift.is_thrift(engine_or_url):  # thrift://HOST:PORT: the metastore's Thrift API
        return thrift.connect_hive3(engine_or_url, hive_version=hive_version)  # type: ignore[return-value]
    if isinstance(engine_or_url, Metastore):
        if hive_version is None or parse_hive_version(hive_version) == engine_or_url.hive_version:
            return engine_or_url
        engine_or_url = engine_or_url.engine
    hv = parse_hive_version(hive_version)
    engine = as_engine(engine_or_url)
    log.info("metastore %s", safe_url(engine.url))
    with read_only(engine) as conn:
        flavor, tables = detect(conn, hive_version=hv)
    log.info(
        "metastore flavour: %s, Hive %d (schema %s)%s",
        flavor.dialect,
        flavor.hive_version,
        flavor.schema_version,
        ", lower-case transaction tables" if flavor.txn_lower else "",
    )
    return Metastore(engine=engine, flavor=flavor, tables=tables, url=engine.url)


def db_now_ms(conn) -> int:
    """The database clock in epoch ms (Hive compares ages against it, §5)."""
    import sqlalchemy as sa

    d = conn.dialect.name
    if d == "postgresql":
        q = "SELECT CAST(FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS BIGINT)"
    elif d in ("mysql", "mariadb"):
        q = "SELECT CAST(FLOOR(UNIX_TIMESTAMP(NOW(3)) * 1000) AS SIGNED)"
    else:
        q = "SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
    return int(conn.execute(sa.text(q)).scalar())
