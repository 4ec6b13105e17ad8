"""`acidctl export` against a plain pyarrow read + write of the same files, in the same run.

    python bench/export.py [--rows 20000000] [--deltas 50] [--buckets 4] [--master local[*]] [--format parquet]
    python bench/export.py --single-bucket --rows 5000000 [--format parquet]

1. Builds the table bench/compact.py builds (80 % of the rows in a compacted base over
   ``--buckets`` bucket files, ``--deltas`` insert deltas, a delete delta after every 5th write).
2. Baseline, one process: every data file of the snapshot read with pyarrow and written again
   in the export format — no merge, no delete filter, no row-id handling, no verification:
   what "just copying the bytes through Arrow" costs.
3. ``export_table`` with ``--engine local`` and with ``--engine spark`` (a warm session: its
   start-up is reported separately), rows/s of input, and the ratio to the baseline.

``--single-bucket`` (issue #14): the table in one bucket, exported by ``--engine local`` twice,
each in a fresh child process — streamed (the default) and with the whole-bucket merge (the
path before the streamed one, forced through the ``export-acid-stream`` test hook) — reporting
wall time and peak RSS (``VmHWM``) of each, the files compared byte for byte.

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


def _child(root: str, dest: str, hwm: int, fmt: str, whole: bool) -> None:
    """One export in this (fresh) process; prints seconds and peak RSS in MiB."""
    import contextlib
    import resource

    from acidctl import faults
    from acidctl.acid import hive2stream
    from acidctl.acid.writeids import WriteIdList
    from acidctl.export import ExportOptions, export_table
    from acidctl.fs import TableFS

    def force(task):
        raise hive2stream.Unstreamable("bench", "whole-bucket merge asked by the bench")

    ctx = faults.hooks({"export-acid-stream": force}) if whole else contextlib.nullcontext()
    t0 = time.perf_counter()
    with ctx:
        rep = export_table(
            TableFS(root), WriteIdList.all_committed(hwm, table="bench.t"), dest, ExportOptions(format=fmt)
        )
    t = time.perf_counter() - t0
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the parent (which built the
    # table), the mm's high-water mark starts afresh
    with open("/proc/self/status") as f:
        hwm_kib = next((int(line.split()[1]) for line in f if line.startswith("VmHWM:")), None)
    if hwm_kib is None:  # not Linux
        hwm_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"{t:.3f} {hwm_kib / 1024:.0f} {rep['rows']}")


def single_bucket(args) -> None:
    import filecmp
    import subprocess

    work = tempfile.mkdtemp(prefix="acidctl-bench-export1-")
    try:
        root = os.path.join(work, "t")
        t0 = time.perf_counter()
        deletes = args.deletes if args.deletes is not None else max(1, args.rows // 1000)
        info = _build()(root, args.rows, args.deltas, 1, deletes)
        print(
            f"table: {args.rows:,} rows in one bucket ({args.deltas} deltas, {info['delete_events']:,} delete "
            f"events), {sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs) / 2**20:.0f}"
            f" MiB; built in {time.perf_counter() - t0:.1f}s; load {os.getloadavg()[0]:.1f}"
        )
        got = {}
        for name, whole in (("whole-bucket (before)", True), ("streamed", False), ("whole-bucket (before)", True)):
            dest = os.path.join(work, "whole" if whole else "streamed")
            shutil.rmtree(dest, ignore_errors=True)
            cmd = [
                sys.executable,
                __file__,
                "--child",
                root,
                dest,
                str(info["hwm"]),
                args.format,
                "1" if whole else "0",
            ]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split()
            secs, rss, rows = float(out[0]), int(out[1]), int(out[2])
            got.setdefault(name, []).append((secs, rss))
            print(f"  {name:22s} {secs:6.2f}s  peak RSS {rss:5d} MiB  {rows:,} rows out  load {os.getloadavg()[0]:.1f}")
        a, b = os.path.join(work, "whole"), os.path.join(work, "streamed")
        files = sorted(os.listdir(b))
        same = filecmp.cmpfiles(a, b, files, shallow=False)[0] == files
        print(f"  files byte-identical: {same}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        root, dest, hwm, fmt, whole = sys.argv[2:7]
        _child(root, dest, int(hwm), fmt, whole == "1")
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--deltas", type=int, default=50)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--deletes", type=int, default=None, help="delete events (default: 0.1 %% of the rows)")
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--format", default="parquet", choices=["parquet", "orc"])
    ap.add_argument("--single-bucket", action="store_true", help="streamed vs whole-bucket: time and peak RSS")
    args = ap.parse_args()
    if args.single_bucket:
        single_bucket(args)
        return

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
