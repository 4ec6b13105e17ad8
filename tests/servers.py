"""What the tests do when a server or tool they need is not installed here."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def unavailable(msg: str) -> NoReturn:
    """Skip the test, or fail it under ``ACIDCTL_REQUIRE_SERVERS=1`` (``make test`` and CI set
    it: there every server must run, so a missing one is a broken setup, not a skip)."""
    if os.environ.get("ACIDCTL_REQUIRE_SERVERS") == "1":
        pytest.fail(msg + "; ACIDCTL_REQUIRE_SERVERS=1", pytrace=False)
    pytest.skip(msg)
