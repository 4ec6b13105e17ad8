"""acidctl.dump._in_order: rendering on a thread pool only when the process may use more
than one CPU (taskset / cpusets), results in order either way."""

from __future__ import annotations

import os
import threading

import pytest

from acidctl import dump

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux CPU affinity")


def _run(items):
    where = []

    def fn(x):
        where.append(threading.current_thread() is threading.main_thread())
        return x * 2

    return list(dump._in_order(fn, iter(items))), where


def test_one_usable_cpu_renders_in_the_calling_thread():
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(before)})
    try:
        out, where = _run(range(50))
    finally:
        os.sched_setaffinity(0, before)
    assert out == [2 * i for i in range(50)]
    assert all(where)


def test_several_usable_cpus_render_on_the_pool_in_order(monkeypatch):
    # two usable CPUs as the affinity mask would report them (a thread pool runs on any
    # machine, so this holds on a one-core one too)
    monkeypatch.setattr(dump, "_usable_cpus", lambda: 2)
    out, where = _run(range(50))
    assert out == [2 * i for i in range(50)]
    assert not any(where)
