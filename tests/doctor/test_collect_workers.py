"""doctor's listing pool on local disks is sized by the CPUs this process may run on (its
affinity mask, as the local compaction engine), not by the machine's core count."""

from __future__ import annotations

import os
import types

import pytest

from acidctl.doctor import collect


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity")
def test_local_listing_pool_follows_the_affinity_mask():
    local = [types.SimpleNamespace(location="file:/tmp/x")]
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(before)})
        assert collect.auto_workers(local) == 1
    finally:
        os.sched_setaffinity(0, before)
    assert collect.auto_workers(local) == max(1, min(collect.DEFAULT_WORKERS, len(before)))
    remote = [types.SimpleNamespace(location="hdfs://nn:8020/x")]
    assert collect.auto_workers(remote) == collect.DEFAULT_WORKERS
