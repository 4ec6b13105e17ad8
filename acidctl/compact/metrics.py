"""The per-task metrics record of a compaction task, and the memory sampling behind it.

One shape for both task paths (streaming and whole-bucket); ``path`` says which one ran. The
runner sums the records per partition (:func:`acidctl.compact.runner._finish`).
"""

from __future__ import annotations

import os
import threading

STREAM = "stream"  # the bucket's inputs were streamed in key order
WHOLE = "whole"  # every input of the bucket in one Arrow table


def new_metrics(task, path: str) -> dict:
    """The metrics record of ``task`` (a :class:`~acidctl.compact.planner.BucketTask`) taking
    ``path`` (:data:`STREAM` or :data:`WHOLE`)."""
    return {
        "partition": task.partition,
        "bucket": task.bucket,
        "path": path,
        "rows_in": 0,
        "delete_events_in": 0,
        "rows_out": 0,
        "delete_events_out": 0,
        "deletes_applied": 0,
        "aborted_dropped": 0,
        "invisible_dropped": 0,
        "other_events_dropped": 0,
        "bytes_out": 0,
        "files_out": [],
    }


def count_written(m: dict, counter: str, path: str, rows: int, size: int) -> None:
    """Count one written output file in ``m`` (``counter``: rows_out or delete_events_out)."""
    m[counter] = rows
    m["bytes_out"] += size
    m["files_out"].append(path)


def error_record(task, e: Exception) -> dict:
    """An expected failure as a record (the driver re-raises it with its acidctl error class)."""
    return {
        "partition": task.partition,
        "bucket": task.bucket,
        "error": {"type": type(e).__name__, "module": type(e).__module__, "message": str(e)},
    }


class PeakRss:
    """This process's peak resident set size while a task runs (Linux /proc; else 0).

    Where the kernel lets a process reset its own peak (``/proc/self/clear_refs`` ← 5, Linux
    4.0+), the peak is the kernel's ``VmHWM`` since the reset: exact, and with no sampling
    thread — a thread started and joined per task costs a few ms of wall time when the cores
    are busy (bench/compact.py, many small buckets). Otherwise a thread samples the RSS every
    ``interval`` seconds. (The reset also lowers what getrusage reports as this process's
    maximum RSS: a task's worker reports per task.)"""

    def __init__(self, interval: float = 0.02):
        self.interval = interval
        self.base = self.peak = rss()
        self._hwm = _reset_peak()
        self._stop = threading.Event()
        self._t = None if self._hwm else threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, rss())

    def __enter__(self):
        if self._t is not None:
            self._t.start()
        return self

    def __exit__(self, *exc):
        if self._t is not None:
            self._stop.set()
            self._t.join(timeout=1)
        self.peak = max(self.peak, rss(), peak_rss() if self._hwm else 0)
        return False


def _reset_peak() -> bool:
    """Reset the kernel's peak RSS of this process (True when it could)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return peak_rss() > 0
    except OSError:
        return False


def peak_rss() -> int:
    """The kernel's peak resident set size of this process (``VmHWM``) in bytes; 0 where
    /proc does not say."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def rss() -> int:
    """This process's resident set size in bytes (0 where /proc is not available)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
