"""The one local Spark session every compaction test shares (session-scoped, local[2], UI off)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from acidctl.compact.spark import get_or_create_session

    s = get_or_create_session(
        "local[2]", {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g"}
    )
    yield s
    s.stop()
