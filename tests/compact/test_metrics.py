"""The per-task peak RSS (acidctl/compact/metrics.py): a task that touches N MiB reports at
least N MiB of growth, and — where the kernel's peak can be reset — an earlier, larger peak of
the same worker process is not reported again."""

from __future__ import annotations

import mmap

import pytest

from acidctl.compact.metrics import PeakRss, peak_rss, rss

MIB = 1 << 20


def _touch(n_mib: int) -> mmap.mmap:
    """n MiB made resident, in a mapping of its own (unmapped by ``close()`` whatever the
    allocator's state in a long test process)."""
    m = mmap.mmap(-1, n_mib * MIB)
    for off in range(0, n_mib * MIB, 4096):
        m[off] = 1
    return m


def test_growth_of_a_task_is_measured():
    with PeakRss() as m:
        a = _touch(64)  # still held when the task ends: measured by either method
    a.close()
    assert m.peak - m.base >= 60 * MIB
    assert m.peak >= rss()


def test_an_earlier_peak_is_not_reported_again():
    a = _touch(256)
    a.close()
    before = peak_rss()
    with PeakRss() as m:
        b = _touch(16)
        b.close()
    if not m._hwm:
        pytest.skip("the kernel's peak RSS cannot be reset here (the sampling thread measures)")
    assert before >= 256 * MIB
    assert 12 * MIB <= m.peak - m.base < 200 * MIB
    assert m.peak < before
