"""The session's real Hive 2.3.10 metastore (tests/hive23/server.py): started once per pytest
session (each xdist worker its own, each in its own network namespace, so all bind 9083),
stopped at its end; skipped with the reason when Java, the jars or namespaces are missing here
(failed instead under ``ACIDCTL_REQUIRE_SERVERS=1``)."""

from __future__ import annotations


import pytest

from tests.hive23.server import Hive23, missing
from tests.servers import unavailable


@pytest.fixture(scope="session")
def hive23(tmp_path_factory):
    why = missing()
    if why:
        msg = f"no Hive 2.3 metastore here: {why}"
        unavailable(msg)
    server = Hive23(tmp_path_factory.mktemp("hive23"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def hms(hive23):
    """A Thrift client (pyiceberg's bindings) of that metastore, connected in its namespace."""
    from tests.hive23.server import client

    c, transport = client(hive23)
    yield c
    transport.close()
