"""The metastore fixtures of tests/metastore (SQLite, and the real PostgreSQL and MariaDB
servers that conftest starts; Hive 3.1 and 4 schemas via ``metastore init``)."""

from tests.metastore.conftest import (  # noqa: F401
    backend,
    empty_db,
    hive_version,
    metastore,
    mysql_server,
    pg_server,
)
