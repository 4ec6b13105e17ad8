"""Which engine runs the bucket tasks of a compaction (``--engine auto|local|spark``), and why.

``auto`` (the default) runs the tasks on this machine — a pool of worker processes, one per
core, across buckets and partitions, running the very task function Spark runs
(:func:`acidctl.compact.task.run_bucket`) — when the input is small enough to be compacted
before a Spark application could even start; above that, Spark.

The threshold is input bytes (the compressed ORC files the tasks read, as the planner sums
them), per core: ``LOCAL_BYTES_PER_CORE`` × cores. Measured with ``bench/compact.py`` on the
2-core CI machine: Spark's start-up (session, then the Python workers of the first job) takes
7-8.5 s, and the local path compacts about 3 MiB of such input per second per core (2M rows,
12.8 MiB: 2.1 s of tasks on two cores), so about 22 MiB per core are done before Spark has
started. On one machine the local pool is never slower than ``local[*]`` Spark (the same
tasks on the same cores, plus start-up); above the threshold Spark is chosen for what it
adds — a cluster (``--master``), task retries, memory isolation per executor.
``--local-max-bytes`` or ``ACIDCTL_LOCAL_MAX_BYTES`` overrides it (``512M``, ``2G``, plain
bytes).
"""

from __future__ import annotations

import dataclasses
import os
import re

from acidctl.errors import UsageError
from acidctl.machine import usable_cpus

AUTO, LOCAL, SPARK = "auto", "local", "spark"
ENGINES = (AUTO, LOCAL, SPARK)

#: environment override of the auto threshold (same syntax as ``--local-max-bytes``)
THRESHOLD_ENV = "ACIDCTL_LOCAL_MAX_BYTES"
#: ``auto`` runs locally up to this many input bytes per core (see the module docstring)
LOCAL_BYTES_PER_CORE = 24 * 2**20


def default_local_max_bytes() -> int:
    return LOCAL_BYTES_PER_CORE * cores()


#: below this many input bytes the local engine runs the tasks in this process (no worker pool)
POOL_MIN_BYTES = 2 * 2**20
#: environment override of ``POOL_MIN_BYTES`` (bytes; 0: always a pool when there are 2+ tasks)
POOL_MIN_ENV = "ACIDCTL_LOCAL_POOL_MIN_BYTES"


def pool_min_bytes() -> int:
    """Input bytes from which the local engine starts a worker pool (:data:`POOL_MIN_BYTES`,
    or ``$ACIDCTL_LOCAL_POOL_MIN_BYTES``)."""
    return int(os.environ.get(POOL_MIN_ENV) or POOL_MIN_BYTES)


_UNITS = {
    "": 1,
    "b": 1,
    "k": 2**10,
    "kb": 2**10,
    "kib": 2**10,
    "m": 2**20,
    "mb": 2**20,
    "mib": 2**20,
    "g": 2**30,
    "gb": 2**30,
    "gib": 2**30,
    "t": 2**40,
    "tb": 2**40,
    "tib": 2**40,
}


def parse_size(text: str, what: str = "--local-max-bytes") -> int:
    """``"512M"`` → 536870912 (binary units, case-insensitive; plain numbers are bytes)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(text))
    unit = m and _UNITS.get(m.group(2).lower())
    if not m or unit is None:
        raise UsageError(f"{what} expects a size such as 268435456, 256M or 2G, not {text!r}")
    return int(float(m.group(1)) * unit)


def cores() -> int:
    """Cores this process may run on (the CPU affinity mask, which containers narrow)."""
    return usable_cpus()


@dataclasses.dataclass
class EngineChoice:
    engine: str  # local | spark (what runs)
    requested: str  # auto | local | spark (what was asked for)
    reason: str
    bytes_in: int
    local_max_bytes: int | None  # the auto threshold (None unless auto)
    workers: int = 1  # local: worker processes (1: in this process)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def local_max_bytes(option: int | str | None = None) -> tuple[int, str]:
    """The auto threshold and where it came from (option, environment, default)."""
    if option is not None:
        return (option if isinstance(option, int) else parse_size(option)), "--local-max-bytes"
    env = os.environ.get(THRESHOLD_ENV)
    if env:
        return parse_size(env, THRESHOLD_ENV), THRESHOLD_ENV
    return default_local_max_bytes(), f"default: {LOCAL_BYTES_PER_CORE >> 20} MiB × {cores()} cores"


#: filesystems only this process sees (fsspec's memory://): no worker process, no Spark
PROCESS_LOCAL_PROTOCOLS = ("memory",)


def choose_engine(
    requested: str,
    *,
    bytes_in: int,
    tasks: int,
    threshold: int | str | None = None,
    master: str = "local[*]",
    protocol: str = "file",
) -> EngineChoice:
    """Decide which engine runs ``tasks`` bucket tasks reading ``bytes_in`` bytes (the outputs
    are the same, byte for byte, whichever engine runs). ``auto`` with a cluster ``master``
    (anything but ``local[...]``) is Spark: naming a cluster is asking for it. A table on a
    filesystem only this process sees (``protocol`` memory) is compacted in this process."""
    if requested not in ENGINES:
        raise UsageError(f"--engine must be auto, local or spark, not {requested!r}")
    if protocol in PROCESS_LOCAL_PROTOCOLS and requested != SPARK:
        return EngineChoice(
            LOCAL,
            requested,
            f"{requested}: a {protocol}:// table is visible to this process only: compacted in this process",
            bytes_in,
            None,
            1,
        )
    # below POOL_MIN_BYTES one process is sooner: starting the worker pool (a fork server that
    # imports pyarrow) costs about what a second core would save
    workers = max(1, min(cores(), tasks)) if bytes_in >= pool_min_bytes() else 1
    mib = bytes_in / 2**20
    if requested == LOCAL:
        return EngineChoice(LOCAL, LOCAL, f"--engine local ({_where(workers)})", bytes_in, None, workers)
    if requested == SPARK:
        return EngineChoice(SPARK, SPARK, "--engine spark", bytes_in, None, 1)
    limit, source = local_max_bytes(threshold)
    if not master.startswith("local"):
        return EngineChoice(SPARK, AUTO, f"auto: --master {master} names a cluster: Spark", bytes_in, limit, 1)
    if bytes_in <= limit:
        why = (
            f"auto: {mib:.1f} MiB of input ≤ {limit / 2**20:.0f} MiB ({source}): compacted locally "
            f"({_where(workers)}) sooner than Spark could start"
        )
        return EngineChoice(LOCAL, AUTO, why, bytes_in, limit, workers)
    why = f"auto: {mib:.1f} MiB of input > {limit / 2**20:.0f} MiB ({source}): Spark"
    return EngineChoice(SPARK, AUTO, why, bytes_in, limit, 1)


def _where(workers: int) -> str:
    return f"{workers} worker processes" if workers > 1 else "in this process"
