"""Major compaction: acidctl's default engine (auto), ``--engine spark`` and ``--engine local``
against the Arrow lower bound, on the same generated tables, in one run.

    python bench/compact.py [--rows 2000000] [--partitions-rows 50000] [--partitions 20]
                            [--deltas 10] [--deletes 100000] [--buckets 2] [--keep DIR]
                            [--only one|many] [--engines default,spark,local]

Two tables are generated (both: a compacted ``base_0000001`` holding 80 % of the rows,
``--deltas`` insert deltas sharing the other 20 %, and a delete delta after every 5th write;
``--deletes`` delete events in all, aimed at base rows in the bucket file of their target):

* one partition × ``--rows`` rows (default 2M, 10 deltas, 100k deletes: the shape issue #14
  measured Hive's CompactorMR on, 8.0 s on the 2-core CI machine);
* ``--partitions`` partitions × ``--partitions-rows`` rows (default 20 × 50k; Hive: one
  CompactorMR job per partition, 9.5 s each = 191 s there).

For each table, on a fresh copy each time, ``acidctl -o json compact --major`` runs end to end
as an operator runs it (a subprocess: interpreter, imports, planning, tasks, verification,
publication) with the default engine, ``--engine spark`` and ``--engine local``; the report
gives the engine auto chose and why, Spark's start-up separately, the task time and the peak
RSS per task. Two ratios to the bound are printed per run: end to end (the operator's wall
clock) and task throughput (rows in / the report's ``task_seconds``: the bound has no
interpreter start, imports, planning or publication, so this is the like-for-like view of the
work itself). The Arrow lower bound is one process doing only the work — pyarrow reads every
file (row struct flattened: Arrow joins cannot carry a struct column), anti-joins the delete
keys, sorts by ROW__ID and writes ORC — with no ACID metadata and no verification.

acidctl's modules are compiled to bytecode first (``__pycache__``, git-ignored), as an
installed package has them. Timings are never asserted by tests; this script only reports.
"""

from __future__ import annotations

import argparse
import json
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

V1 = 1 << 29
ALL = "9223372036854775807"


def _rows(ids: np.ndarray) -> pa.StructArray:
    rng = np.random.default_rng(int(ids[0]) if len(ids) else 0)
    names = pa.array([f"customer-{i % 100000:05d}" for i in ids.tolist()])
    amount = pa.array(np.round(rng.uniform(0, 10_000, len(ids)), 2))
    return pa.StructArray.from_arrays([pa.array(ids), names, amount], ["id", "name", "amount"])


def _acid(op, ot, bk, rid, ct, row) -> pa.Table:
    return pa.table(
        {
            "operation": pa.array(op, pa.int32()),
            "originalTransaction": pa.array(ot, pa.int64()),
            "bucket": pa.array(bk, pa.int32()),
            "rowId": pa.array(rid, pa.int64()),
            "currentTransaction": pa.array(ct, pa.int64()),
            "row": row,
        }
    )


def _write(path: str, table: pa.Table, *, stripe: int) -> None:
    from acidctl.orc.writer import encode_acid_file

    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(os.path.join(os.path.dirname(path), "_orc_acid_version"), "wb") as f:
        f.write(b"2")
    data, _ = encode_acid_file(table, stripe_size=stripe)
    with open(path, "wb") as f:
        f.write(data)


def build(root: str, rows: int, deltas: int, buckets: int, deletes: int, seed: int = 42) -> dict:
    from acidctl.orc.writer import BASE_STRIPE_SIZE, DELTA_STRIPE_SIZE

    rng = np.random.default_rng(seed)
    base_rows = int(rows * 0.8)
    per_bucket = [base_rows // buckets + (1 if b < base_rows % buckets else 0) for b in range(buckets)]
    next_id = 0
    base = os.path.join(root, "base_0000001")
    for b, n in enumerate(per_bucket):
        ids = np.arange(next_id, next_id + n, dtype=np.int64)
        next_id += n
        z = np.zeros(n, np.int64)
        _write(
            os.path.join(base, f"bucket_{b:05d}"),
            _acid(np.zeros(n, np.int32), z + 1, np.full(n, V1 | (b << 16), np.int32), np.arange(n), z + 1, _rows(ids)),
            stripe=BASE_STRIPE_SIZE,
        )
    with open(os.path.join(base, "_metadata_acid"), "wb") as f:
        f.write(b'{"thisFileVersion":"0","dataFormat":"compacted"}')
    delta_rows = rows - base_rows
    n_del_deltas = max(1, deltas // 5)
    events = 0
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
            _write(
                os.path.join(root, f"delta_{w:07d}_{w:07d}_0000", f"bucket_{b:05d}"),
                _acid(
                    np.zeros(m, np.int32), z + w, np.full(m, V1 | (b << 16), np.int32), np.arange(m), z + w, _rows(sel)
                ),
                stripe=DELTA_STRIPE_SIZE,
            )
        if (i + 1) % 5 == 0 or (deltas < 5 and i == deltas - 1):
            w += 1
            for b in range(buckets):
                m = max(1, min(per_bucket[b], deletes // (n_del_deltas * buckets)))
                rid = np.sort(rng.choice(per_bucket[b], size=m, replace=False))
                z = np.zeros(m, np.int64)
                null_rows = pa.array(
                    [None] * m, pa.struct([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64())])
                )
                _write(
                    os.path.join(root, f"delete_delta_{w:07d}_{w:07d}_0000", f"bucket_{b:05d}"),
                    _acid(np.full(m, 2, np.int32), z + 1, np.full(m, V1 | (b << 16), np.int32), rid, z + w, null_rows),
                    stripe=DELTA_STRIPE_SIZE,
                )
                events += m  # may repeat earlier deletes: counted as events, not rows
    return {"rows": rows, "delete_events": events, "hwm": w}


def build_table(root: str, *, partitions: int, rows: int, deltas: int, buckets: int, deletes: int) -> dict:
    """``partitions`` = 0: unpartitioned; else ``p=0..`` each of ``rows`` rows."""
    if not partitions:
        return build(root, rows, deltas, buckets, deletes)
    infos = [build(os.path.join(root, f"p={k}"), rows, deltas, buckets, deletes, seed=k) for k in range(partitions)]
    return {"rows": rows * partitions, "delete_events": sum(i["delete_events"] for i in infos), "hwm": infos[0]["hwm"]}


# -- the Arrow lower bound -------------------------------------------------------------------

KEYS = ["originalTransaction", "bucket", "rowId"]


def _leaf_dirs(root: str) -> list[str]:
    out = []
    for d, dirs, _ in os.walk(root):
        if any(x.startswith(("base_", "delta_", "delete_delta_")) for x in dirs):
            out.append(d)
            dirs[:] = []
    return sorted(out)


def arrow_bound(root: str, out_dir: str) -> tuple[float, int, int]:
    """One process, only the work: read (row struct flattened), anti-join, sort, write ORC.
    Returns (seconds, rows in, rows out)."""
    import pyarrow.orc as po

    t0 = time.perf_counter()
    rows_in = rows_out = 0
    os.makedirs(out_dir, exist_ok=True)
    for k, part in enumerate(_leaf_dirs(root)):
        by_bucket: dict = {}
        for d in sorted(os.listdir(part)):
            for f in sorted(os.listdir(os.path.join(part, d))):
                if f.startswith("bucket_"):
                    by_bucket.setdefault(f, {"ins": [], "del": []})["del" if d.startswith("delete_") else "ins"].append(
                        os.path.join(part, d, f)
                    )
        for name, srcs in sorted(by_bucket.items()):
            ins = pa.concat_tables([po.read_table(p).flatten() for p in srcs["ins"]])
            rows_in += ins.num_rows
            if srcs["del"]:
                dels = pa.concat_tables([po.read_table(p, columns=KEYS) for p in srcs["del"]])
                ins = ins.join(dels.group_by(KEYS).aggregate([]), KEYS, join_type="left anti")
            ins = ins.sort_by([(c, "ascending") for c in KEYS])
            po.write_table(ins, os.path.join(out_dir, f"{k}-{name}"), compression="zlib")
            rows_out += ins.num_rows
            del ins
    return time.perf_counter() - t0, rows_in, rows_out


# -- acidctl end to end ---------------------------------------------------------------------


def run_acidctl(table: str, hwm: int, engine: str | None) -> tuple[float, dict]:
    cmd = [
        sys.executable,
        "-m",
        "acidctl",
        "-o",
        "json",
        "compact",
        "--major",
        "--write-ids",
        f"bench.t:{hwm}:{ALL}::",
        table,
    ]
    if engine:
        cmd[6:6] = ["--engine", engine]
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    took = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"acidctl compact failed ({r.returncode}): {r.stderr.strip()}")
    return took, json.loads(r.stdout)


def compile_bytecode() -> str:
    """Compile acidctl's modules to ``__pycache__`` (as an installed package ships them), so
    that a run does not compile ~70 modules from source in the driver and again in the local
    engine's fork server (~0.2 s each, e.g. under ``PYTHONDONTWRITEBYTECODE=1``, where Python
    reads bytecode but never writes it). Returns a note for the output."""
    import compileall

    ok = compileall.compile_dir(os.path.join(ROOT, "acidctl"), quiet=1)
    return "acidctl bytecode compiled (as installed)" if ok else "acidctl bytecode: compileall failed"


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"


def bench_table(
    work: str,
    label: str,
    *,
    partitions: int,
    rows: int,
    deltas: int,
    buckets: int,
    deletes: int,
    hive_seconds: float | None,
    engines: tuple[str, ...] = ("default", "spark", "local"),
) -> None:
    src = os.path.join(work, label)
    t0 = time.perf_counter()
    info = build_table(src, partitions=partitions, rows=rows, deltas=deltas, buckets=buckets, deletes=deletes)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(src) for f in fs)
    print(
        f"\n== {label}: {info['rows']:,} rows, {max(partitions, 1)} partition(s) × {buckets} bucket(s), "
        f"{deltas} deltas, {info['delete_events']:,} delete events, {size / 2**20:.1f} MiB "
        f"(built in {time.perf_counter() - t0:.1f}s)"
    )
    tb, rin, rout = arrow_bound(src, os.path.join(work, label + "-arrow"))
    shutil.rmtree(os.path.join(work, label + "-arrow"), ignore_errors=True)
    print(
        f"  arrow lower bound (one process: read flattened + anti-join + sort + ORC write): {tb:6.2f}s  "
        f"{rin / tb:>12,.0f} rows/s"
    )
    results = {}
    for name, engine in (("default", None), ("spark", "spark"), ("local", "local")):
        if name not in engines:
            continue
        copy = os.path.join(work, f"{label}-{name}")
        shutil.copytree(src, copy)
        took, rep = run_acidctl(copy, info["hwm"], engine)
        shutil.rmtree(copy, ignore_errors=True)
        sm = rep["summary"]
        if sm["rows_out"] != rout:
            sys.exit(f"{name}: {sm['rows_out']} rows out, the Arrow bound wrote {rout}")
        results[name] = took
        parts = rep["partitions"]
        rss = max(p.get("peak_task_rss_bytes", 0) for p in parts)
        growth = max(p.get("peak_task_memory_bytes", 0) for p in parts)
        extra = ""
        if rep.get("spark"):
            extra = f"; spark start-up {rep['spark']['startup_seconds']:.2f}s"
        vs_hive = f", {hive_seconds / took:5.1f}× Hive" if hive_seconds else ""
        ts = rep["task_seconds"]
        print(
            f"  acidctl {name:<8} {took:6.2f}s end to end  {sm['rows_in'] / took:>12,.0f} rows/s  "
            f"{tb / took:4.2f}× the bound{vs_hive}  [{rep['engine_choice']['reason']}; tasks "
            f"{ts:.2f}s{extra}; peak task RSS {_mib(rss)} (+{_mib(growth)})]"
        )
        # the bound runs in-process with no start-up: beside the end-to-end ratio (an operator's
        # view: interpreter, imports, planning, publication included), the tasks' own
        # throughput (rows in / the report's task_seconds) against the bound's
        print(
            f"  acidctl {name:<8} {ts:6.2f}s tasks only   {sm['rows_in'] / ts:>12,.0f} rows/s  "
            f"{tb / ts:4.2f}× the bound (task throughput: rows in / task_seconds, vs the bound's rows in / its time)"
        )
    if hive_seconds:
        print(f"  Hive 2.3 CompactorMR on this shape (issue #14, 2-core CI machine): {hive_seconds:.1f}s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000, help="rows of the one-partition table")
    ap.add_argument("--partitions", type=int, default=20)
    ap.add_argument("--partitions-rows", type=int, default=50_000, help="rows per partition")
    ap.add_argument("--deltas", type=int, default=10)
    ap.add_argument(
        "--deletes",
        type=int,
        default=100_000,
        help="delete events of the one-partition table (the partitioned one: the same fraction)",
    )
    ap.add_argument("--buckets", type=int, default=2)
    ap.add_argument("--only", choices=["one", "many"], help="only one of the two tables")
    ap.add_argument(
        "--engines",
        default="default,spark,local",
        help="comma-separated runs to make: default, spark, local (e.g. default,local to skip Spark's start-up)",
    )
    ap.add_argument("--keep", metavar="DIR", help="build the tables in DIR and keep them")
    args = ap.parse_args()

    engines = tuple(e.strip() for e in args.engines.split(",") if e.strip())
    unknown = set(engines) - {"default", "spark", "local"}
    if unknown:
        ap.error(f"--engines: unknown {', '.join(sorted(unknown))}")
    work = args.keep or tempfile.mkdtemp(prefix="acidctl-bench-compact-")
    os.makedirs(work, exist_ok=True)
    print(
        f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; python {sys.version.split()[0]}, "
        f"pyarrow {pa.__version__}; {compile_bytecode()}"
    )
    try:
        if args.only in (None, "one"):
            bench_table(
                work,
                "one-partition",
                partitions=0,
                rows=args.rows,
                deltas=args.deltas,
                buckets=args.buckets,
                deletes=args.deletes,
                hive_seconds=8.0 if args.rows == 2_000_000 else None,
                engines=engines,
            )
        if args.only in (None, "many"):
            frac = args.deletes / max(1, args.rows)
            bench_table(
                work,
                "partitioned",
                partitions=args.partitions,
                rows=args.partitions_rows,
                deltas=args.deltas,
                buckets=args.buckets,
                deletes=int(args.partitions_rows * frac),
                hive_seconds=9.5 * args.partitions if args.partitions_rows == 50_000 else None,
                engines=engines,
            )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
