"""What this machine lets acidctl use."""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """The CPUs this process may run on (the CPU affinity mask: ``taskset``, cgroup cpusets,
    containers), not the machine's count; at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)
