"""Fixtures of the CLI tests: the demo warehouse with its SQLite metastore configured."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def demo(cli, tmp_path, monkeypatch):
    """(demo root, demo's JSON report); ``ACIDCTL_METASTORE_URL`` points at its metastore."""
    r = cli("-o", "json", "demo", tmp_path / "demo")
    assert r.code == 0, r
    doc = json.loads(r.stdout)
    monkeypatch.setenv("ACIDCTL_METASTORE_URL", f"sqlite:///{tmp_path / 'demo' / 'metastore.db'}")
    return tmp_path / "demo", doc
