"""`acidctl migrate --to iceberg` against a plain pyarrow read + Parquet write of the same rows,
on the same core, in the same run.

    python bench/migrate.py [--rows 4000000] [--deltas 3] [--buckets 4] [--deletes 100000] [--no-verify]
                            [--reps N]

1. Builds the table bench/compact.py builds (80 % of the rows in a compacted base over
   ``--buckets`` bucket files, ``--deltas`` insert deltas, delete deltas).
2. Baseline, one process: every data file of the snapshot read with pyarrow's ORC reader and
   written again as Parquet — no merge, no delete filter, no row ids, no catalog, no check.
3. ``acidctl migrate`` (the library: first load into a fresh SQLite catalog, one snapshot,
   then the verification that reads the target back and compares per-partition digests), and
   the same without the verification; rows/s of input and the ratio to the baseline (the
   issue's target: ≥ 50 %).

Everything runs pinned to one CPU (``os.sched_setaffinity``) so that pyarrow's and pyiceberg's
thread pools do not make the comparison one of core counts. ``--reps N``: the baseline and the
runs N times, interleaved, then the median of each (wall and CPU seconds) and the ratios of the
medians: on a shared machine one run's ratio swings by half. Timings are never asserted by tests.
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


def baseline(root: str, out: str) -> tuple[float, int]:
    import pyarrow.orc as po
    import pyarrow.parquet as pq

    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out, exist_ok=True)
    t0 = time.perf_counter()
    rows = n = 0
    for d, _, files in os.walk(root):
        for f in sorted(files):
            if not f.startswith("bucket_"):
                continue
            t = po.read_table(os.path.join(d, f))
            rows += t.num_rows
            pq.write_table(t, os.path.join(out, f"{n}.parquet"))
            n += 1
    return time.perf_counter() - t0, rows


def run_migrate(root: str, hwm: int, work: str, name: str, *, verify: bool) -> tuple[float, dict]:
    from acidctl.acid.writeids import WriteIdList
    from acidctl.fs import TableFS
    from acidctl.migrate.iceberg import IcebergBackend
    from acidctl.migrate.run import MigrateOptions, migrate
    from acidctl.migrate.source import open_source
    from acidctl.target import Target

    cat = os.path.join(work, f"{name}.db")
    for old in (cat, os.path.join(work, f"{name}-wh")):  # a fresh target every repetition
        shutil.rmtree(old, ignore_errors=True) if os.path.isdir(old) else os.path.exists(old) and os.remove(old)
    target = Target(
        tfs=TableFS(root),
        write_ids=WriteIdList.all_committed(hwm, table="bench.t"),
        txns=None,
        hive_version=3,
        source="--write-ids",
    )
    t0 = time.perf_counter()
    backend = IcebergBackend(f"sqlite:///{cat}", f"bench.{name}", warehouse=os.path.join(work, f"{name}-wh"))
    rep = migrate(open_source(target), backend, MigrateOptions(verify=verify), target_display=name, to="iceberg")
    return time.perf_counter() - t0, rep


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--deltas", type=int, default=3)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--deletes", type=int, default=None, help="delete events (default: 1.25 %% of the rows)")
    ap.add_argument("--no-verify", action="store_true", help="only the run without verification")
    ap.add_argument("--reps", type=int, default=1, help="repetitions, interleaved; medians reported")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    import pyarrow as pa

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    os.environ.setdefault("PYICEBERG_MAX_WORKERS", "1")
    work = tempfile.mkdtemp(prefix="acidctl-bench-migrate-")
    try:
        root = os.path.join(work, "t")
        t0 = time.perf_counter()
        deletes = args.deletes if args.deletes is not None else max(1, args.rows // 80)
        info = _build()(root, args.rows, args.deltas, args.buckets, deletes)
        print(
            f"table: {args.rows:,} rows ({args.deltas} deltas, {info['delete_events']:,} delete events), "
            f"{args.buckets} buckets; built in {time.perf_counter() - t0:.1f}s; one CPU"
        )
        t0 = time.perf_counter()
        import pyiceberg.catalog.sql  # noqa: F401  (start-up, reported apart: ~1 s)
        import pyiceberg.io.pyarrow  # noqa: F401

        import acidctl.migrate.run  # noqa: F401

        print(f"imports (pyiceberg, SQLAlchemy): {time.perf_counter() - t0:.2f}s, not counted below")
        runs = [("unverified", False)] + ([] if args.no_verify else [("verified", True)])
        times: dict[str, list[tuple[float, float]]] = {}
        rows_in = 0
        for rep in range(args.reps):
            c0 = time.process_time()
            tb, rows_in = baseline(root, os.path.join(work, "baseline"))
            times.setdefault("baseline", []).append((tb, time.process_time() - c0))
            if rep == 0:
                print(
                    f"baseline (pyarrow ORC read + Parquet write of every file): {tb:.2f}s, {rows_in / tb:,.0f} rows/s"
                )
            for name, verify in runs:
                c0 = time.process_time()
                tm, rep_doc = run_migrate(root, info["hwm"], work, name, verify=verify)
                times.setdefault(name, []).append((tm, time.process_time() - c0))
                c = rep_doc["committed"]
                print(
                    f"migrate --to iceberg ({name}): {tm:.2f}s, {rows_in / tm:,.0f} rows/s in, {c['rows_added']:,} rows "
                    f"in {c['files_added']} files; {tb / tm:.0%} of the baseline's throughput"
                )
        if args.reps > 1:
            import statistics

            med = {
                k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in times.items()
            }
            bw, bc = med["baseline"]
            print(f"medians of {args.reps} (wall s / CPU s; throughput ratio to the baseline, wall / CPU):")
            for k, (w, c) in med.items():
                print(f"  {k:10} {w:6.2f} / {c:6.2f}   {bw / w:4.0%} / {bc / c:4.0%}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
