"""``acidctl dump --merged`` over varied table shapes: steady-state rows/s, time to the first
row, and peak RSS, end to end (a subprocess writing to a pipe, as an operator runs it).

    python bench/merged.py [--rows 2000000] [--only SHAPE ...] [--keep DIR]

Shapes (each: a base holding 80 % of the rows, insert deltas with the rest, delete deltas
removing about 5 % of the base; tables built with bench/compact.py's generator):

* ``one-bucket``: 1 bucket, 1 delta (bench/state.py's shape);
* ``many-buckets``: 32 buckets;
* ``many-partitions``: 40 partitions × 2 buckets;
* ``wide-strings``: 1 KiB strings in every row (rows / 8);
* ``many-deltas``: 4 buckets, 40 deltas (8 delete deltas) per partition;
* ``hive2-legacy``: a Hive 2.3 legacy table read with ``--hive-version 2``: 4 buckets, a base
  of 80 % of the rows (written as Hive 2.3's compactor writes it), 5 deltas each holding
  inserts of new rows plus legacy update (op 1) and delete (op 2) events of base rows (about
  2 % and 1 % of the base each). Also measured on the same table: ``hive2-whole``, the merge
  before it streamed (every bucket merged whole, the partition concatenated and sorted;
  ``acidctl.merged._hive2_tables`` replaced in the benchmark's process).

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
    "hive2-legacy": dict(partitions=0, buckets=4, deltas=5, hive2=True),
}


def build_hive2(root: str, rows: int, *, buckets: int, deltas: int, seed: int = 42) -> dict:
    """A Hive 2.3 legacy table (see the module docstring): plain bucket ids, txn ids, files
    encoded as Hive 2.3 writes them (acidctl.compact.hive2.encode_hive2_file)."""
    from acidctl.compact.hive2 import encode_hive2_file

    def write(path: str, t: pa.Table, stripe: int) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        data, _, _ = encode_hive2_file(t, compression="ZLIB", stripe_size=stripe)
        with open(path, "wb") as f:
            f.write(data)

    rng = np.random.default_rng(seed)
    base_rows = int(rows * 0.8)
    per_bucket = base_rows // buckets
    next_id = 0
    for b in range(buckets):
        ids = np.arange(next_id, next_id + per_bucket, dtype=np.int64)
        next_id += per_bucket
        z = np.zeros(per_bucket, np.int64)
        t = gen._acid(
            np.zeros(per_bucket, np.int32),
            z + 1,
            np.full(per_bucket, b, np.int32),
            np.arange(per_bucket),
            z + 1,
            gen._rows(ids),
        )
        write(os.path.join(root, "base_0000001", f"bucket_{b:05d}"), t, 64 << 20)
    per_delta = (rows - base_rows) // deltas // buckets
    alive = [np.ones(per_bucket, bool) for _ in range(buckets)]  # never update a deleted row
    for i in range(deltas):
        txn = i + 2
        for b in range(buckets):
            touched = rng.choice(np.flatnonzero(alive[b]), size=int(per_bucket * 0.03), replace=False)
            upd, dele = np.sort(touched[: len(touched) * 2 // 3]), np.sort(touched[len(touched) * 2 // 3 :])
            alive[b][dele] = False
            new = np.arange(next_id, next_id + per_delta, dtype=np.int64)
            next_id += per_delta
            n_u, n_d, n_i = len(upd), len(dele), per_delta
            rid = np.concatenate([upd, dele, np.arange(n_i)])
            ot = np.concatenate([np.ones(n_u + n_d, np.int64), np.full(n_i, txn, np.int64)])
            op = np.concatenate([np.ones(n_u, np.int32), np.full(n_d, 2, np.int32), np.zeros(n_i, np.int32)])
            ids = np.concatenate([upd + b * per_bucket, np.zeros(n_d, np.int64), new])
            row = gen._rows(ids)
            valid = np.concatenate([np.ones(n_u, bool), np.zeros(n_d, bool), np.ones(n_i, bool)])
            row = pa.StructArray.from_arrays(row.flatten(), fields=list(row.type), mask=pa.array(~valid))
            order = np.lexsort((rid, ot))
            t = gen._acid(
                op[order],
                ot[order],
                np.full(len(rid), b, np.int32),
                rid[order],
                np.full(len(rid), txn, np.int64),
                row.take(pa.array(order)),
            )
            write(os.path.join(root, f"delta_{txn:07d}_{txn:07d}_0000", f"bucket_{b:05d}"), t, 8 << 20)
    return {"rows": rows, "hwm": deltas + 1}


#: the merge before it streamed (every bucket whole, the partition sorted), run in the
#: benchmark's subprocess in place of acidctl.merged._hive2_tables
WHOLE_HIVE2 = """
import sys
import pyarrow as pa
import acidctl.merged as m
from acidctl.acid import hive2

def whole(tfs, listing, state):
    tables = [t for _, t in hive2.read_partition(tfs, listing, state)]
    if tables:
        events = pa.concat_tables(tables, promote_options="permissive")
        yield events.sort_by([("originalTransaction", "ascending"), ("bucket", "ascending"), ("rowId", "ascending")])

m._hive2_tables = whole
from acidctl.cli.main import main
main(sys.argv[1:])
"""


def build(root: str, rows: int, shape: dict) -> dict:
    if shape.get("hive2"):
        return build_hive2(root, rows, buckets=shape["buckets"], deltas=shape["deltas"])
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


def run(
    root: str, hwm: int, limit: int | None = None, *, hive2: bool = False, whole: bool = False
) -> tuple[float, float, int, int, int]:
    """(seconds to the first line, seconds in all, lines, bytes, peak RSS bytes); ``hive2``:
    ``--hive-version 2`` (``whole``: with the merge before it streamed, :data:`WHOLE_HIVE2`)."""
    snap = ["--hive-version", "2", "--txns", f"{hwm}:{ALL}:"] if hive2 else ["--write-ids", f"bench.t:{hwm}:{ALL}::"]
    lim = ["--limit", str(limit)] if limit is not None else []
    prog = ["-c", WHOLE_HIVE2] if whole else ["-m", "acidctl"]
    cmd = [sys.executable, *prog, "-o", "json", "dump", "--merged", *lim, *snap, root]
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
            hive2 = bool(SHAPES[name].get("hive2"))
            for label, whole in [(name, False)] + ([("hive2-whole", True)] if hive2 else []):
                first, took, lines, nbytes, rss = run(root, hwm, hive2=hive2, whole=whole)
                lim_first, _, lim_lines, _, _ = run(root, hwm, limit=10, hive2=hive2, whole=whole)
                assert lim_lines == 10, lim_lines
                print(
                    f"{label:<16} {lines:>10,} {size / 2**20:>7.1f} {took:>8.2f} {lines / took:>11,.0f} "
                    f"{nbytes / took / 1e6:>9.1f} {first:>9.2f} {lim_first:>10.2f} {rss / 2**20:>7.0f}Mi "
                    f"{floor_rows / floor_s:>13,.0f}"
                )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
