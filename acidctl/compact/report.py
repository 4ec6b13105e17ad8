"""The ``compact`` report's partition records and summary, shared by full-ACID
(:mod:`acidctl.compact.runner`) and insert-only (:mod:`acidctl.mm.compact`) runs.

A record is the plan's fields (where, what ran, what was published, what became obsolete)
around the engine's own metrics (``body``: rows, bytes, buckets, ...), in that key order, so both
kinds of table print and serialise the same way.
"""

from __future__ import annotations

import time
from typing import Any

from acidctl.compact.planner import PartitionPlan


def partition_record(p: PartitionPlan, body: dict[str, Any], *, input_dirs: list[str]) -> dict[str, Any]:
    """One partition's record: the plan's fields, ``body`` (the engine's metrics) in the middle."""
    rec: dict[str, Any] = {
        "partition": p.partition,
        "path": p.display,
        "type": p.mode,
        "status": p.status,
        "message": p.message,
        "input_dirs": input_dirs,
        "output_dirs": [o.name for o in p.outputs] if p.runs else [],
        "published": list(p.published),
        **body,
        "publish": p.publish if p.runs else "",
        "obsoletes": list(p.obsoletes) if p.runs else [],
        "skipped_files": list(p.skipped),
    }
    if p.recommendation is not None:
        rec["recommendation"] = p.recommendation
    registration = getattr(p, "registration", None)  # set by acidctl.compact.register on registered runs
    if registration is not None:
        rec["metastore"] = registration
    return rec


def finish_report(report: dict[str, Any], rows: list[dict[str, Any]], t0: float) -> dict[str, Any]:
    """``report`` with its partition records, the compacted count and the summary."""
    report["partitions"] = rows
    done = [r for r in rows if r["status"] == "compact"]
    report["compacted"] = len(done)
    report["nothing_to_compact"] = not done
    report["summary"] = {
        "partitions": len(rows),
        "compacted": len(done),
        "rows_in": sum(r["rows_in"] for r in done),
        "rows_out": sum(r["rows_out"] for r in done),
        "bytes_in": sum(r["bytes_in"] for r in done),
        "bytes_out": sum(r["bytes_out"] for r in done),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    return report
