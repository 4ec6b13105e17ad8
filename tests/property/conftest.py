"""The metastore servers of tests/metastore/conftest.py (PostgreSQL, MariaDB) for the smaller
server run of the property test."""

from tests.metastore.conftest import mysql_server, pg_server  # noqa: F401
