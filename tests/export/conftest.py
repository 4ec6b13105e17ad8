"""Export runs on the one Spark session the compaction tests share."""

from tests.compact.conftest import spark  # noqa: F401  (the session-scoped fixture, reused)
