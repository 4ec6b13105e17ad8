"""``acidctl dump --merged`` over varied table shapes: steady-state rows/s, time to the first
row, and peak RSS, end to end (a subprocess writing to a pipe, as an operator runs it).

    python bench/merged.py [--rows 2000000] [--only SHAPE ...] [--keep DIR]

Shapes (each: a base holding 80 % of the rows, insert deltas with the rest, delete deltas
removing about 5 % of the base; tables built with bench/compact.py's generator):

* ``one-bucket``: 1 bucket, 1 delta (bench/state.py's shape);
* ``many-buckets``: 32 buckets;
* ``many-partitions``: 40 partitions × 2 buckets;
* ``wide-strings``: 1 KiB strings in every row (rows / 8);
* ``many-deltas``: 4 buckets, 40 deltas (8 delete deltas) per partition.

Baseline in the same run: pyarrow reading every insert file of the table whole (no merge, no
rendering) — the floor of any reader. Timings are never asserted by tests; this only reports.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import compact as gen  # noqa: E402  (bench/compact.py: the table generator)

ALL = "9223372036854775807"


def _wide_rows(ids: np.ndarray) -> pa.StructArray:
    pad = "x" * 1000
    names = pa.array([f"customer-{i:09d}-{pad}" for i in ids.tolist()])
    return pa.StructArray.from_arrays(
        [pa.array(ids), names, pa.array(ids.astype(np.float64) / 7)], ["id", "name", "amount"]
    )


SHAPES = {
    "one-bucket": dict(partitions=0, buckets=1, deltas=1),
    "many-buckets": dict(partitions=0, buckets=32, deltas=5),
    "many-partitions": dict(partitions=40, buckets=2, deltas=5),
    "wide-strings": dict(partitions=0, buckets=2, deltas=5, wide=True),
    "many-deltas": dict(partitions=0, buckets=4, deltas=40),
}


def build(root: str, rows: int, shape: dict) -> dict:
    rows_of = rows // 8 if shape.get("wide") else rows
    parts = shape["partitions"]
    per = rows_of // max(1, parts)
    deletes = int(per * 0.8 * 0.05)
    orig = gen._rows
    if shape.get("wide"):
        gen._rows = _wide_rows
    try:
        return gen.build_table(
            root, partitions=parts, rows=per, deltas=shape["deltas"], buckets=shape["buckets"], deletes=deletes
        )
    finally:
        gen._rows = orig


def arrow_floor(root: str) -> tuple[float, int]:
    import pyarrow.orc as po

    t0 = time.perf_counter()
    n = 0
    for d, _, files in os.walk(root):
        if "/delete_delta_" in d + "/" or os.path.basename(d).startswith("delete_delta_"):
            continue
        for f in files:
            if f.startswith("bucket_"):
                n += po.ORCFile(os.path.join(d, f)).read().num_rows
    return time.perf_counter() - t0, n


def run(root: str, hwm: int, limit: int | None = None) -> tuple[float, float, int, int, int]:
    """(seconds to the first line, seconds in all, lines, bytes, peak RSS bytes)."""
    cmd = [
        sys.executable,
        "-m",
        "acidctl",
        "-o",
        "json",
        "dump",
        "--merged",
        "--write-ids",
        f"bench.t:{hwm}:{ALL}::",
        root,
    ]
    if limit is not None:
        cmd[6:6] = ["--limit", str(limit)]
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env)
    first = None
    lines = size = 0
    while True:
        chunk = p.stdout.read1(1 << 20)
        if not chunk:
            break
        if first is None:
            first = time.perf_counter() - t0
        lines += chunk.count(b"\n")
        size += len(chunk)
    _, status, ru = os.wait4(p.pid, 0)
    took = time.perf_counter() - t0
    if status != 0:
        sys.exit(f"dump --merged failed on {root} (status {status})")
    return first or took, took, lines, size, ru.ru_maxrss * 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--only", nargs="*", choices=list(SHAPES))
    ap.add_argument("--keep", metavar="DIR")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="acidctl-bench-merged-")
    print(f"machine: {os.cpu_count()} cores; python {sys.version.split()[0]}, pyarrow {pa.__version__}")
    print(
        f"{'shape':<16} {'rows out':>10} {'MiB in':>7} {'total s':>8} {'rows/s':>11} {'MB/s out':>9} "
        f"{'1st row s':>9} {'limit 10 s':>10} {'peak RSS':>9} {'floor rows/s':>13}"
    )
    try:
        for name in args.only or SHAPES:
            root = os.path.join(work, name)
            if not os.path.exists(root):
                info = build(root, args.rows, SHAPES[name])
                hwm = info["hwm"]
                with open(os.path.join(work, name + ".hwm"), "w") as f:
                    f.write(str(hwm))
            else:
                with open(os.path.join(work, name + ".hwm")) as f:
                    hwm = int(f.read())
            size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs)
            floor_s, floor_rows = arrow_floor(root)
            first, took, lines, nbytes, rss = run(root, hwm)
            lim_first, _, lim_lines, _, _ = run(root, hwm, limit=10)
            assert lim_lines == 10, lim_lines
            print(
                f"{name:<16} {lines:>10,} {size / 2**20:>7.1f} {took:>8.2f} {lines / took:>11,.0f} "
                f"{nbytes / took / 1e6:>9.1f} {first:>9.2f} {lim_first:>10.2f} {rss / 2**20:>7.0f}Mi "
                f"{floor_rows / floor_s:>13,.0f}"
            )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
