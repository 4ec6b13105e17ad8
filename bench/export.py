"""`acidctl export` against a plain pyarrow read + write of the same files, in the same run.

    python bench/export.py [--rows 20000000] [--deltas 50] [--buckets 4] [--master local[*]] [--format parquet]

1. Builds the table bench/compact.py builds (80 % of the rows in a compacted base over
   ``--buckets`` bucket files, ``--deltas`` insert deltas, a delete delta after every 5th write).
2. Baseline, one process: every data file of the snapshot read with pyarrow and written again
   in the export format — no merge, no delete filter, no row-id handling, no verification:
   what "just copying the bytes through Arrow" costs.
3. ``export_table`` with ``--engine local`` and with ``--engine spark`` (a warm session: its
   start-up is reported separately), rows/s of input, and the ratio to the baseline.

Timings are never asserted by tests; this script only reports.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _build():
    spec = importlib.util.spec_from_file_location("bench_compact", os.path.join(ROOT, "bench", "compact.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build


def baseline(root: str, out: str, fmt: str) -> tuple[float, int]:
    import pyarrow.orc as po
    import pyarrow.parquet as pq

    os.makedirs(out, exist_ok=True)
    t0 = time.perf_counter()
    rows = 0
    n = 0
    for d, _, files in os.walk(root):
        for f in sorted(files):
            if not f.startswith("bucket_"):
                continue
            t = po.read_table(os.path.join(d, f))
            rows += t.num_rows
            dst = os.path.join(out, f"{n}.{fmt}")
            n += 1
            if fmt == "parquet":
                pq.write_table(t, dst)
            else:
                po.write_table(t, dst, compression="zlib")
    return time.perf_counter() - t0, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--deltas", type=int, default=50)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--deletes", type=int, default=None, help="delete events (default: 0.1 %% of the rows)")
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--format", default="parquet", choices=["parquet", "orc"])
    args = ap.parse_args()

    from acidctl.acid.writeids import WriteIdList
    from acidctl.compact.spark import get_or_create_session
    from acidctl.export import ExportOptions, export_table
    from acidctl.fs import TableFS

    work = tempfile.mkdtemp(prefix="acidctl-bench-export-")
    try:
        root = os.path.join(work, "t")
        t0 = time.perf_counter()
        deletes = args.deletes if args.deletes is not None else max(1, args.rows // 1000)
        info = _build()(root, args.rows, args.deltas, args.buckets, deletes)
        print(
            f"table: {args.rows:,} rows ({args.deltas} deltas, {info['delete_events']:,} delete events), "
            f"{args.buckets} buckets; built in {time.perf_counter() - t0:.1f}s"
        )
        wl = WriteIdList.all_committed(info["hwm"], table="bench.t")

        tb, rows_in = baseline(root, os.path.join(work, "baseline"), args.format)
        print(
            f"baseline (pyarrow read + {args.format} write of every file, no merge): {tb:.2f}s, "
            f"{rows_in / tb:,.0f} rows/s"
        )

        t0 = time.perf_counter()
        rep = export_table(TableFS(root), wl, os.path.join(work, "local"), ExportOptions(format=args.format))
        tl = time.perf_counter() - t0
        print(
            f"export --engine local: {tl:.2f}s, {rows_in / tl:,.0f} rows/s in, {rep['rows']:,} rows out; "
            f"{tb / tl:.2f}x the baseline's throughput"
        )

        t0 = time.perf_counter()
        spark = get_or_create_session(args.master, {"spark.ui.enabled": "false"})
        spark.sparkContext.parallelize(range(2), 2).mapPartitions(
            lambda it: [__import__("acidctl.export").__name__, __import__("pyarrow").__version__]
        ).collect()
        ts = time.perf_counter() - t0
        t0 = time.perf_counter()
        rep2 = export_table(
            TableFS(root),
            wl,
            os.path.join(work, "spark"),
            ExportOptions(format=args.format, engine="spark", master=args.master),
            spark=spark,
        )
        tx = time.perf_counter() - t0
        assert rep2["rows"] == rep["rows"]
        print(
            f"export --engine spark ({args.master}): start-up {ts:.2f}s, then {tx:.2f}s, "
            f"{rows_in / tx:,.0f} rows/s in; {tb / tx:.2f}x the baseline's throughput after start-up "
            f"({tb / (tx + ts):.2f}x with it)"
        )
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
