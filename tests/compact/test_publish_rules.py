"""Pure rules behind publication and cluster set-up: which stores rename atomically, when a
plan's publication is atomic, and which Spark masters keep the driver on loopback."""

from __future__ import annotations

import pytest

from acidctl.compact.planner import OutputDir, PartitionPlan
from acidctl.compact.publish import ATOMIC, HIDDEN, NON_ATOMIC, safety
from acidctl.compact.spark import _loopback_master, session_conf
from acidctl.fs import TableFS


class _FS:
    def __init__(self, protocol, atomic):
        self.protocol, self.atomic_rename = protocol, atomic


def _plan(*kinds):
    outs = [OutputDir(f"{k}_0000001_0000002", k, 1, 2, [0], {}) for k in kinds]
    return PartitionPlan(None, "/t", "/t", "minor", "compact", "", outputs=outs)


@pytest.mark.parametrize(
    "url,atomic",
    [
        ("/tmp/x", True),
        ("file:///tmp/x", True),
        ("memory://b/t", False),
    ],
)
def test_atomic_rename_by_store(url, atomic):
    assert TableFS(url).atomic_rename is atomic


def test_safety_rules():
    local, s3 = _FS("file", True), _FS("s3", False)
    assert safety(local, _plan("base"), hidden_until_commit=False) == (ATOMIC, None)
    assert safety(local, _plan("delta"), hidden_until_commit=False) == (ATOMIC, None)
    mode, why = safety(local, _plan("delta", "delete_delta"), hidden_until_commit=False)
    assert mode == NON_ATOMIC and "2 renames" in why
    mode, why = safety(s3, _plan("base"), hidden_until_commit=False)
    assert mode == NON_ATOMIC and "s3:// copies" in why
    # Hive 4 output behind an open compactor txn: invisible until the commit, on any store
    assert safety(s3, _plan("delta", "delete_delta"), hidden_until_commit=True) == (HIDDEN, None)


@pytest.mark.parametrize(
    "master,loopback",
    [
        ("spark://127.0.0.1:7077", True),
        ("spark://localhost:7077", True),
        ("spark://127.0.0.1:7077,127.0.0.2:7077", True),
        ("spark://m:7077", False),
        ("spark://127.0.0.1:7077,m2:7077", False),
        ("yarn", False),
        ("local[*]", False),
    ],
)
def test_loopback_masters(master, loopback):
    assert _loopback_master(master) is loopback
    conf = session_conf(master)
    on_loopback = conf.get("spark.driver.host") == "127.0.0.1"
    assert on_loopback is (loopback or master.startswith("local"))
