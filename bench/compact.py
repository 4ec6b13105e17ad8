"""Major compaction on Spark against a single-process Arrow baseline measured in the same run.

    python bench/compact.py [--rows 20000000] [--deltas 50] [--buckets 4] [--master local[*]] [--keep DIR]

1. Builds a table of N rows: a compacted ``base_0000001`` holding 80% of the rows in
   ``--buckets`` bucket files, ``--deltas`` insert deltas (write ids 2..) sharing the other 20%,
   and a delete delta after every 5th write deleting 0.1% of the base rows each (aimed at the
   bucket files of their target rows, as Hive writes them).
2. Spark start-up: ``get_or_create_session`` plus a first job that starts the Python workers
   and imports pyarrow in them — reported separately.
3. Steady state: ``compact_table(--major)`` on that warm session (plan, one task per bucket,
   write, per-task verification — file checks and a before/after merged read of the bucket —
   and publish), rows/s.
4. Baseline, same data, one process: for each bucket read every file with pyarrow, anti-join
   the delete keys, sort, write the ACID file (``merge.apply`` + ``encode_acid_file``) — no
   verification, no Spark. Prints both throughputs and the ratio.
5. Peak memory per task: the largest resident-set growth any task saw (sampled in the task).

Timings are never asserted by tests; this script only reports.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

V1 = 1 << 29


def _rows(ids: np.ndarray) -> pa.StructArray:
    rng = np.random.default_rng(int(ids[0]) if len(ids) else 0)
    names = pa.array([f"customer-{i % 100000:05d}" for i in ids.tolist()])
    amount = pa.array(np.round(rng.uniform(0, 10_000, len(ids)), 2))
    return pa.StructArray.from_arrays([pa.array(ids), names, amount], ["id", "name", "amount"])


def _acid(op, ot, bk, rid, ct, row) -> pa.Table:
    return pa.table({"operation": pa.array(op, pa.int32()), "originalTransaction": pa.array(ot, pa.int64()),
                     "bucket": pa.array(bk, pa.int32()), "rowId": pa.array(rid, pa.int64()),
                     "currentTransaction": pa.array(ct, pa.int64()), "row": row})


def _write(path: str, table: pa.Table, *, stripe: int) -> None:
    from acidctl.orc.writer import encode_acid_file

    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(os.path.join(os.path.dirname(path), "_orc_acid_version"), "wb") as f:
        f.write(b"2")
    data, _ = encode_acid_file(table, stripe_size=stripe)
    with open(path, "wb") as f:
        f.write(data)


def build(root: str, rows: int, deltas: int, buckets: int) -> dict:
    from acidctl.orc.writer import BASE_STRIPE_SIZE, DELTA_STRIPE_SIZE

    rng = np.random.default_rng(42)
    base_rows = int(rows * 0.8)
    per_bucket = [base_rows // buckets + (1 if b < base_rows % buckets else 0) for b in range(buckets)]
    next_id = 0
    base = os.path.join(root, "base_0000001")
    for b, n in enumerate(per_bucket):
        ids = np.arange(next_id, next_id + n, dtype=np.int64)
        next_id += n
        z = np.zeros(n, np.int64)
        _write(os.path.join(base, f"bucket_{b:05d}"),
               _acid(np.zeros(n, np.int32), z + 1, np.full(n, V1 | (b << 16), np.int32), np.arange(n), z + 1,
                     _rows(ids)), stripe=BASE_STRIPE_SIZE)
    with open(os.path.join(base, "_metadata_acid"), "wb") as f:
        f.write(b'{"thisFileVersion":"0","dataFormat":"compacted"}')
    delta_rows = rows - base_rows
    deleted = 0
    w = 1
    for i in range(deltas):
        w += 1
        n = delta_rows // deltas + (1 if i < delta_rows % deltas else 0)
        ids = np.arange(next_id, next_id + n, dtype=np.int64)
        next_id += n
        bks = ids % buckets
        for b in range(buckets):
            sel = ids[bks == b]
            m = len(sel)
            if not m:
                continue
            z = np.zeros(m, np.int64)
            _write(os.path.join(root, f"delta_{w:07d}_{w:07d}_0000", f"bucket_{b:05d}"),
                   _acid(np.zeros(m, np.int32), z + w, np.full(m, V1 | (b << 16), np.int32), np.arange(m), z + w,
                         _rows(sel)), stripe=DELTA_STRIPE_SIZE)
        if (i + 1) % 5 == 0:
            w += 1
            for b in range(buckets):
                m = max(1, per_bucket[b] // 1000)
                rid = np.sort(rng.choice(per_bucket[b], size=m, replace=False))
                z = np.zeros(m, np.int64)
                null_rows = pa.array([None] * m, pa.struct([("id", pa.int64()), ("name", pa.string()),
                                                            ("amount", pa.float64())]))
                _write(os.path.join(root, f"delete_delta_{w:07d}_{w:07d}_0000", f"bucket_{b:05d}"),
                       _acid(np.full(m, 2, np.int32), z + 1, np.full(m, V1 | (b << 16), np.int32), rid, z + w,
                             null_rows), stripe=DELTA_STRIPE_SIZE)
                deleted += m   # may repeat earlier deletes: counted as events, not rows
    return {"rows": rows, "base_rows": base_rows, "delta_rows": delta_rows, "delete_events": deleted,
            "hwm": w, "buckets": buckets}


def baseline(root: str, hwm: int, out_dir: str) -> tuple[float, int]:
    """One process: read + anti-join + sort + write, bucket by bucket (no verification)."""
    from acidctl.acid import merge
    from acidctl.acid.acidstate import get_acid_state
    from acidctl.acid.layout import list_table
    from acidctl.acid.read import plan_sources, read_delete_keys, read_events
    from acidctl.acid.writeids import WriteIdList
    from acidctl.fs import TableFS
    from acidctl.orc.writer import BASE_STRIPE_SIZE, encode_acid_file

    t0 = time.perf_counter()
    tfs = TableFS(root)
    wl = WriteIdList.all_committed(hwm)
    (listing,) = list_table(tfs)
    state = get_acid_state(listing, wl)
    ins, dels = plan_sources(tfs, listing, state)
    out_rows = 0
    os.makedirs(out_dir, exist_ok=True)
    for b in sorted({s.bucket for s in ins}):
        events = pa.concat_tables([read_events(tfs, s) for s in ins if s.bucket == b])
        keys = read_delete_keys(tfs, [s for s in dels if s.bucket == b], wl)
        live = merge.apply(events, keys, wl)
        data, info = encode_acid_file(live, stripe_size=BASE_STRIPE_SIZE)
        with open(os.path.join(out_dir, f"bucket_{b:05d}"), "wb") as f:
            f.write(data)
        out_rows += info.rows
    return time.perf_counter() - t0, out_rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--deltas", type=int, default=50)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--keep", metavar="DIR", help="build the table in DIR and keep it")
    args = ap.parse_args()

    from acidctl.acid.writeids import WriteIdList
    from acidctl.compact.runner import CompactOptions, compact_table
    from acidctl.compact.spark import get_or_create_session
    from acidctl.fs import TableFS

    work = args.keep or tempfile.mkdtemp(prefix="acidctl-bench-compact-")
    root = os.path.join(work, "t")
    os.makedirs(root, exist_ok=True)
    t0 = time.perf_counter()
    info = build(root, args.rows, args.deltas, args.buckets)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs)
    print(f"table: {info['rows']:,} rows ({info['base_rows']:,} in the base, {info['delta_rows']:,} in "
          f"{args.deltas} deltas), {info['delete_events']:,} delete events, {args.buckets} buckets, "
          f"{size / 2**20:.1f} MiB; built in {time.perf_counter() - t0:.1f}s")

    t0 = time.perf_counter()
    spark = get_or_create_session(args.master)
    t_session = time.perf_counter() - t0
    t1 = time.perf_counter()
    spark.sparkContext.parallelize(range(args.buckets), args.buckets).mapPartitions(
        lambda it: [__import__("acidctl.compact.task").__name__, __import__("pyarrow").__version__]).collect()
    t_workers = time.perf_counter() - t1
    print(f"spark start-up ({args.master}): session {t_session:.2f}s + first job (Python workers, acidctl/pyarrow "
          f"imports) {t_workers:.2f}s = {t_session + t_workers:.2f}s")

    base_dir = os.path.join(work, "baseline-out")
    tb, brows = baseline(root, info["hwm"], base_dir)
    shutil.rmtree(base_dir, ignore_errors=True)

    wl = WriteIdList.all_committed(info["hwm"], table="bench.t")
    t0 = time.perf_counter()
    rep = compact_table(TableFS(root), CompactOptions(mode="major", reader=wl, engine="spark", master=args.master),
                        spark=spark)
    tc = time.perf_counter() - t0
    p = rep["partitions"][0]
    assert p["rows_out"] == brows, (p["rows_out"], brows)
    rows_in = p["rows_in"]
    print(f"spark major compaction (steady state): {tc:.2f}s, {rows_in / tc:,.0f} rows/s in, "
          f"{p['rows_out']:,} rows out -> {', '.join(p['output_dirs'])}; tasks {rep['task_seconds']:.2f}s "
          f"(includes per-task verification: file checks + before/after merged read)")
    print(f"baseline (one process, pyarrow read + anti-join + sort + write, no verification): {tb:.2f}s, "
          f"{rows_in / tb:,.0f} rows/s")
    print(f"ratio spark/baseline throughput: {tb / tc:.2f}x (start-up excluded); "
          f"with start-up: {tb / (tc + t_session + t_workers):.2f}x")
    print(f"peak memory per task: {p['peak_task_memory_bytes'] / 2**20:.0f} MiB RSS growth "
          f"(largest of {p['buckets']} tasks; {rows_in / p['buckets']:,.0f} input rows per task), "
          f"peak task RSS {rep['partitions'][0].get('peak_task_rss_bytes', 0) / 2**20:.0f} MiB")
    spark.stop()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
