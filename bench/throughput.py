"""The merged read against a bare pyarrow read of the same ORC files, on one core (issue #23).

    python bench/throughput.py [--rows 8000000] [--buckets 4] [--deltas 3] [--deletes 100000]
                               [--reps 5] [--cpu N] [--keep DIR] [--baseline SRC_DIR]

The table: bench/compact.py's generator (a compacted base with 80 % of the rows over
``--buckets`` bucket files, ``--deltas`` insert deltas, one delete delta with ``--deletes``
delete events of base rows).

Every measurement runs in a fresh child process pinned to ONE CPU (``os.sched_setaffinity``,
so acidctl's ``usable_cpus()`` is 1: ``dump`` renders in its own thread, ``export`` runs one
task at a time) with pyarrow's own thread pools limited to one thread on both sides
(``pa.set_cpu_count(1)``, ``pa.set_io_thread_count(1)``). The kinds, run interleaved
``--reps`` times (medians reported; the machine is shared, so the ratios of runs taken side by
side are what counts):

* ``bare``: ``pyarrow.orc.ORCFile(f).read()`` of every insert file (base and deltas): rows
  read per second, the floor of any reader;
* ``merged``: ``acidctl.acid.read.stream_partition``, the merged read under ``dump --merged``
  (and, per bucket, under ``export``): rows out per second, ratio to ``bare``;
* ``dump-inproc``: ``acidctl.merged.merged_rows`` written to /dev/null in the process: the
  merged read plus the JSON lines rendering (rendering's share = this minus ``merged``);
* ``dump``: ``acidctl -o json dump --merged ... > /dev/null`` end to end (interpreter start
  and imports included; acidctl byte-compiled beforehand, as installed, into a cache under
  the work directory, even where PYTHONDONTWRITEBYTECODE is set);
* ``bare-parquet``: ``bare`` plus ``pyarrow.parquet.write_table`` of each file's table;
* ``export``: ``export_table`` to Parquet (``--engine local``), ratio to ``bare-parquet``.

``--baseline SRC_DIR``: the same kinds (but ``bare``) also with acidctl imported from
``SRC_DIR`` (e.g. ``git archive main | tar -x -C /tmp/base``), interleaved with this tree.
Timings are never asserted by tests; this script only reports.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALL = "9223372036854775807"
KINDS = ["bare", "merged", "dump-inproc", "dump", "bare-parquet", "export"]


def _one_core(cpu: int) -> None:
    os.sched_setaffinity(0, {cpu})
    import pyarrow as pa

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)


def _insert_files(root: str) -> list[str]:
    out = []
    for d, _, files in os.walk(root):
        if os.path.basename(d).startswith("delete_delta_"):
            continue
        out += [os.path.join(d, f) for f in sorted(files) if f.startswith("bucket_")]
    return sorted(out)


def child(kind: str, root: str, hwm: int, out: str, cpu: int) -> None:
    """One measurement in this (fresh) process: prints "seconds cpu_seconds rows"."""
    _one_core(cpu)
    import pyarrow.dataset  # noqa: F401  (imports before the clock on both sides)
    import pyarrow.orc as po

    if kind not in ("bare", "bare-parquet"):
        import acidctl.acid.read  # noqa: F401
        import acidctl.export  # noqa: F401
        import acidctl.merged  # noqa: F401
        import acidctl.orc.render  # noqa: F401
    t0, c0 = time.perf_counter(), time.process_time()
    rows = 0
    if kind in ("bare", "bare-parquet"):
        import pyarrow.parquet as pq

        os.makedirs(out, exist_ok=True)
        for i, f in enumerate(_insert_files(root)):
            t = po.ORCFile(f).read()
            rows += t.num_rows
            if kind == "bare-parquet":
                pq.write_table(t, os.path.join(out, f"{i}.parquet"))
    else:
        from acidctl.acid.writeids import WriteIdList
        from acidctl.fs import TableFS

        wl = WriteIdList.all_committed(hwm, table="bench.t")
        if kind == "merged":
            from acidctl.acid.acidstate import get_acid_state
            from acidctl.acid.layout import list_table
            from acidctl.acid.read import stream_partition

            tfs = TableFS(root)
            for listing in list_table(tfs):
                for t in stream_partition(tfs, listing, get_acid_state(listing, wl)):
                    rows += t.num_rows
        elif kind == "dump-inproc":
            from acidctl.merged import MergedStats, merged_rows

            stats = MergedStats()
            with open(os.devnull, "wb") as sink:
                for block in merged_rows(TableFS(root), wl, stats=stats):
                    sink.write(block)
            rows = stats.rows
        elif kind == "export":
            from acidctl.export import ExportOptions, export_table

            rep = export_table(TableFS(root), wl, out, ExportOptions(format="parquet", engine="local"))
            rows = rep["rows"]
        else:
            raise SystemExit(f"unknown kind {kind}")
    import resource

    kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # export's worker processes, if any
    cpu_s = time.process_time() - c0 + kids.ru_utime + kids.ru_stime
    print(f"{time.perf_counter() - t0:.4f} {cpu_s:.4f} {rows}")


def _env(src: str, work: str) -> dict:
    """The environment of a run with acidctl from ``src``: its modules byte-compiled once, as
    an installed acidctl is (:func:`precompile`), the bytecode kept under ``work`` (the tree
    untouched). With PYTHONDONTWRITEBYTECODE set (as in CI), every end-to-end run compiled
    acidctl's imported modules from source: ~0.06 s of CPU a run (bench/README.md)."""
    env = {**os.environ, "PYTHONPATH": src}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(work, "pycache", src.strip("/").replace("/", "_"))
    return env


def precompile(src: str, work: str) -> None:
    """Byte-compile ``src``'s acidctl (and this script) into its cache under ``work``."""
    code = "import compileall, sys; compileall.compile_dir(sys.argv[1], quiet=1); compileall.compile_file(sys.argv[2], quiet=1)"
    subprocess.run(
        [sys.executable, "-c", code, os.path.join(src, "acidctl"), os.path.abspath(__file__)],
        check=True,
        env=_env(src, work),
    )


def measure(kind: str, src: str, root: str, hwm: int, work: str, cpu: int) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, rows) of one run of ``kind`` with acidctl from ``src``."""
    env = _env(src, work)
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    if kind == "dump":
        cmd = [sys.executable, "-m", "acidctl", "-o", "json", "dump", "--merged"]
        cmd += ["--write-ids", f"bench.t:{hwm}:{ALL}::", root]
        t0 = time.perf_counter()
        with open(os.devnull, "wb") as sink:
            # cwd=src: ``python -m`` puts the working directory first on sys.path
            p = subprocess.Popen(cmd, stdout=sink, env=env, cwd=src, preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
            _, status, ru = os.wait4(p.pid, 0)
        took = time.perf_counter() - t0
        if status:
            raise SystemExit(f"dump --merged failed (status {status})")
        return took, ru.ru_utime + ru.ru_stime, -1
    cmd = [sys.executable, os.path.abspath(__file__), "--child", kind, root, str(hwm), out, str(cpu)]
    got = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout.split()
    return float(got[0]), float(got[1]), int(got[2])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        kind, root, hwm, out, cpu = sys.argv[2:7]
        child(kind, root, int(hwm), out, int(cpu))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=8_000_000)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--deltas", type=int, default=3)
    ap.add_argument("--deletes", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    ap.add_argument("--keep", metavar="DIR", help="build the table here (reused when it exists)")
    ap.add_argument("--baseline", metavar="SRC_DIR", help="also measure acidctl from this source tree")
    ap.add_argument("--kinds", nargs="*", choices=KINDS, default=KINDS)
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="acidctl-bench-throughput-")
    root = os.path.join(work, "t")
    hwm_file = os.path.join(work, "hwm")
    try:
        if not os.path.exists(hwm_file):
            sys.path.insert(0, ROOT)
            sys.path.insert(0, os.path.join(ROOT, "bench"))
            import compact as gen  # bench/compact.py: the table generator

            t0 = time.perf_counter()
            info = gen.build_table(
                root, partitions=0, rows=args.rows, deltas=args.deltas, buckets=args.buckets, deletes=args.deletes
            )
            with open(hwm_file, "w") as f:
                f.write(str(info["hwm"]))
            print(f"built in {time.perf_counter() - t0:.1f}s")
        with open(hwm_file) as f:
            hwm = int(f.read())
        size = sum(os.path.getsize(f) for f in _insert_files(root))
        import pyarrow as pa

        print(
            f"table: {args.rows:,} rows, {args.buckets} buckets, {args.deltas} insert deltas, {args.deletes:,} "
            f"delete events; insert files {size / 2**20:.1f} MiB. One core (cpu {args.cpu}), "
            f"pa.set_cpu_count(1), pa.set_io_thread_count(1); python {sys.version.split()[0]}, pyarrow "
            f"{pa.__version__}; {args.reps} interleaved rounds, medians"
        )
        trees = [("this", ROOT)] + ([("baseline", os.path.abspath(args.baseline))] if args.baseline else [])
        for _, src in trees:
            precompile(src, work)
        runs: dict[tuple[str, str], list[tuple[float, float, int]]] = {}
        for rep in range(args.reps):
            for kind in args.kinds:
                for name, src in trees if kind not in ("bare", "bare-parquet") else trees[:1]:
                    runs.setdefault((name, kind), []).append(measure(kind, src, root, hwm, work, args.cpu))
            print(f"  round {rep + 1} done, load {os.getloadavg()[0]:.1f}", flush=True)
        med = {
            k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v), v[0][2])
            for k, v in runs.items()
        }
        rows_out = next((m[2] for (_, k), m in med.items() if k in ("merged", "dump-inproc") and m[2] > 0), args.rows)
        bare = med.get(("this", "bare"))
        bare_pq = med.get(("this", "bare-parquet"))
        print(
            f"{'tree':9} {'kind':13} {'wall s':>7} {'cpu s':>7} {'rows/s (wall)':>14} {'ratio wall':>10} {'ratio cpu':>9}"
        )
        for (name, kind), (w, c, n) in sorted(med.items(), key=lambda x: (KINDS.index(x[0][1]), x[0][0])):
            n = n if n > 0 else rows_out
            ref = bare_pq if kind in ("export", "bare-parquet") else bare
            rw = rc = ""
            if ref is not None:
                # rows/s ÷ the reference's rows/s: rows out of the merge against rows read
                rw = f"{(n / w) / (ref[2] / ref[0]):.2f}"
                rc = f"{(n / c) / (ref[2] / ref[1]):.2f}"
            print(f"{name:9} {kind:13} {w:7.2f} {c:7.2f} {n / w:14,.0f} {rw:>10} {rc:>9}")
        for name, _ in trees:
            d, m = med.get((name, "dump-inproc")), med.get((name, "merged"))
            if d and m:
                print(f"{name}: JSON rendering ≈ {d[1] - m[1]:.2f} s CPU of dump-inproc's {d[1]:.2f} s")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
