"""Metastore writes: who may write, on which schemas, and how one step runs.

Every write acidctl makes to a metastore database goes through :func:`write_step`, which is
how Hive's own TxnHandler runs each of its methods (../shared/spec/operations.md §1, §2.6):

* **one database transaction per step** — the whole step commits or nothing does;
* **READ COMMITTED**, set explicitly on the connection (Hive 3 sets it in ``getDbConn``; Hive 4
  relies on the driver default, which is READ COMMITTED on PostgreSQL; on MySQL/MariaDB we set it
  explicitly as Hive 3 does, so ``SELECT ... FOR UPDATE`` sees rows committed by other instances);
  SQLite has no Hive dialect: the step runs under ``BEGIN IMMEDIATE`` so it is serialised whole
  (operations.md §1, derived);
* **retry the whole step** on deadlock / serialisation failure (SQLSTATE 40001, 40P01; MySQL
  1213 deadlock and 1205 lock-wait timeout; SQLite "database is locked"), up to 10 times, waiting
  ``200 ms × n`` as Hive's deadlock retry does; any other error ends the step (rolled back).

Writes are refused (``RefusedError``, exit 6) unless the schema version is one acidctl writes
(``VERSION.SCHEMA_VERSION`` 3.1.x or 4.0.x for the Hive 3/4 steps, 2.3.x for the Hive 2.3 steps
run on a :class:`~acidctl.metastore.hive2.Hive2Metastore` — decided by the schema, not by who
created the database; reads work on more) and unless writes are allowed: the global ``--read-only`` flag
(``ACIDCTL_READ_ONLY=1``, profile key ``read_only = true``) forbids every metastore write.

Why a process-wide switch besides the per-connection flag: ``--read-only`` is a promise to the
operator that *no* code path writes, including ones reached through a :class:`Metastore` built
somewhere the flag was not threaded to. :func:`forbid_writes` is set once by the CLI's global
callback and checked by every step; library callers (and tests) pass ``read_only=`` instead.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from typing import Any, Callable, Iterator, TypeVar

from acidctl.errors import RefusedError

log = logging.getLogger("acidctl.metastore")

T = TypeVar("T")

#: schema versions acidctl writes to (``VERSION.SCHEMA_VERSION`` prefixes)
WRITABLE_SCHEMAS = ("3.1.", "4.0.")
#: what the Hive 2.3 steps (a :class:`~acidctl.metastore.hive2.Hive2Metastore`) write to; the
#: Hive 3/4 steps never accept it, nor the 2.3 steps a 3.1/4.0 schema
HIVE2_WRITABLE_SCHEMAS = ("2.3.",)
MAX_RETRIES = 10
RETRY_STEP_S = 0.2

_forbidden: dict[str, Any] = {"on": False, "why": "", "pending": None}


class MetastoreReadOnly(RefusedError):
    """A metastore write was attempted while writes are forbidden (``--read-only``)."""


def forbid_writes(why: str = "--read-only") -> None:
    """Forbid every metastore write in this process (the CLI's ``--read-only``)."""
    _forbidden.update(on=True, why=why, pending=None)


def forbid_writes_if(decide: Callable[[], bool], why: str = "--read-only") -> None:
    """Forbid writes when ``decide()`` says so, asked once, when a write is first checked (the
    CLI's profile key ``read_only``: the config file is then read only by commands that come to
    write to a metastore, not by ``--help`` or ``dump FILE``)."""
    _forbidden.update(on=False, why="", pending=(decide, why))


def allow_writes() -> None:
    """Undo :func:`forbid_writes` (tests running several CLI invocations in one process)."""
    _forbidden.update(on=False, why="", pending=None)


def writes_forbidden() -> bool:
    pending = _forbidden["pending"]
    if pending is not None:
        _forbidden["pending"] = None
        decide, why = pending
        if decide():
            _forbidden.update(on=True, why=why)
    return bool(_forbidden["on"])


def is_writable_schema(schema_version: Any, *, hive_version: int = 3) -> bool:
    """Whether acidctl writes to this schema version with the steps of ``hive_version`` (2: the
    Hive 2.3 protocol, 3/4: the Hive 3.1/4.0 one)."""
    s = str(schema_version or "").strip()
    allowed = HIVE2_WRITABLE_SCHEMAS if hive_version == 2 else WRITABLE_SCHEMAS
    return any(s.startswith(p) or s == p.rstrip(".") for p in allowed)


def check_writable(ms: Any, *, read_only: bool = False, what: str = "write to the metastore") -> str:
    """Refuse (exit 6) unless ``ms`` may be written: not read-only, SQLite/PostgreSQL/MySQL, and a
    schema version acidctl writes with ``ms``'s protocol (3.1.x, 4.0.x; a Hive 2.3 metastore
    object: 2.3.x only). Returns the schema version."""
    if read_only or writes_forbidden() or getattr(ms, "read_only", False):
        raise MetastoreReadOnly(
            f"refusing to {what}: metastore writes are disabled ({_forbidden['why'] or '--read-only'})",
            hint="drop --read-only (or ACIDCTL_READ_ONLY / the profile's read_only key) to allow it",
        )
    from acidctl.metastore import thrift

    if thrift.is_thrift(ms):  # the database's steps (Hive's TxnHandler) are not Thrift calls
        raise thrift.needs_database(f"{what} needs the metastore's database")
    hive2 = getattr(ms, "hive_version", None) == 2
    # a Hive2Metastore reads VERSION itself (its flavor is the 2.3 spelling, not the stored version)
    version = ms.schema_version if hive2 else getattr(ms.flavor, "schema_version", None)
    if not is_writable_schema(version, hive_version=2 if hive2 else 3):
        allowed = HIVE2_WRITABLE_SCHEMAS if hive2 else WRITABLE_SCHEMAS
        raise RefusedError(
            f"refusing to {what}: metastore schema version {version!r} is not one acidctl writes to "
            f"with the Hive {'2.3' if hive2 else '3.1/4.0'} protocol "
            f"({', '.join(p + 'x' for p in allowed)}); reading still works",
            hint="check VERSION.SCHEMA_VERSION (and --hive-version); use --read-only to inspect this metastore",
        )
    if ms.engine.dialect.name == "derby":  # pragma: no cover - no SQLAlchemy Derby dialect in use
        raise RefusedError("refusing to write to an embedded Derby metastore (Hive serialises it with JVM locks)")
    return str(version)


_RETRY_SQLSTATES = {"40001", "40P01"}
_RETRY_MYSQL_CODES = {1213, 1205}


def is_retryable(e: BaseException) -> bool:
    """Deadlock / serialisation failure / lock wait timeout: the whole step may run again."""
    orig = getattr(e, "orig", None) or e
    code = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if code in _RETRY_SQLSTATES:
        return True
    args = getattr(orig, "args", ())
    if args and isinstance(args[0], int) and args[0] in _RETRY_MYSQL_CODES:
        return True
    msg = str(orig).lower()
    return "database is locked" in msg or ("deadlock" in msg and "detected" in msg)


@contextlib.contextmanager
def _transaction(engine) -> Iterator[Any]:
    import sqlalchemy as sa

    name = engine.dialect.name
    if name == "sqlite":
        with engine.connect() as conn:
            # pysqlite's own BEGIN handling is off under SQLAlchemy's autobegin; issue
            # BEGIN IMMEDIATE ourselves so the step holds the write lock from its first read
            raw = conn.connection.driver_connection
            old = raw.isolation_level
            raw.isolation_level = None
            try:
                conn.exec_driver_sql("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    conn.exec_driver_sql("ROLLBACK")
                    raise
                conn.exec_driver_sql("COMMIT")
            finally:
                raw.isolation_level = old
        return
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="READ COMMITTED")
        with conn.begin():
            if name == "postgresql":
                conn.execute(sa.text("SET LOCAL lock_timeout = '60s'"))
            yield conn


def write_step(ms: Any, fn: Callable[[Any], T], *, name: str, read_only: bool = False, retries: int = MAX_RETRIES) -> T:
    """Run ``fn(conn)`` as one metastore write step (one DB transaction, READ COMMITTED, retried
    whole on deadlocks). ``fn`` must be safe to re-run: it reads what it needs inside the step."""
    from acidctl.metastore.connection import db_errors

    check_writable(ms, read_only=read_only, what=name)
    attempt = 0
    while True:
        try:
            with db_errors(ms.engine.url):
                try:
                    with _transaction(ms.engine) as conn:
                        result = fn(conn)
                    log.info("metastore step %s committed", name)
                    return result
                except Exception as e:
                    if attempt < retries and is_retryable(e):
                        raise _Retry(e) from None
                    raise
        except _Retry as r:
            attempt += 1
            log.info("metastore step %s: %s; retry %d of %d", name, type(r.cause).__name__, attempt, retries)
            time.sleep(RETRY_STEP_S * attempt)


class _Retry(Exception):
    def __init__(self, cause: BaseException):
        super().__init__(str(cause))
        self.cause = cause


def for_update(stmt: Any, conn: Any) -> Any:
    """``SELECT ... FOR UPDATE`` where Hive uses it (SQLite: the step already holds the lock)."""
    if conn.dialect.name == "sqlite":
        return stmt
    return stmt.with_for_update()


def now_ms(conn: Any) -> int:
    """The database clock in epoch ms, as Hive stamps every time column (metastore.md §5)."""
    from acidctl.metastore.connection import db_now_ms

    return db_now_ms(conn)


_VERSION_RE = re.compile(r"^(\d+)\.(\d+)")


def schema_major_minor(schema_version: Any) -> tuple[int, int] | None:
    m = _VERSION_RE.match(str(schema_version or ""))
    return (int(m.group(1)), int(m.group(2))) if m else None
