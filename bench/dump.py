"""Throughput of `acidctl dump` against a naive Python baseline measured in the same run.

    python bench/dump.py [--rows 2000000] [--keep DIR]

1. Writes an ACID file of N rows (`row struct<id:bigint,name:string,amount:double,
   active:boolean,day:date>`) with acidctl's writer, and times the writer against pyorc's
   row-at-a-time writer on the same data (the writer choice in acidctl/orc/writer.py).
2. Times `acidctl dump -o json FILE > /dev/null` end to end (a subprocess, so start-up is
   included) and the naive baseline: pyarrow read -> to_pylist() -> json.dumps per row.
   Prints rows/s and the ratio (target >= 12x).
3. Peak RSS of the dump subprocess for N/2 and N rows: it must not grow with the file
   (stripes are streamed).
Timings are never asserted by tests; this script only reports.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def make_table(n: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    rng = np.random.default_rng(7)
    names = pa.array([f"customer-{i % 100000:05d}" for i in ids.tolist()])
    amount = np.round(rng.uniform(0, 10_000, n), 2)
    row = pa.StructArray.from_arrays(
        [pa.array(ids), names, pa.array(amount), pa.array(ids % 3 == 0),
         pa.array((ids % 3650).astype(np.int32) + 18000, pa.date32())],
        ["id", "name", "amount", "active", "day"])
    return pa.table({
        "operation": pa.array(np.zeros(n, np.int32)),
        "originalTransaction": pa.array(np.ones(n, np.int64)),
        "bucket": pa.array(np.full(n, 536870912, np.int32)),
        "rowId": pa.array(ids),
        "currentTransaction": pa.array(np.ones(n, np.int64)),
        "row": row,
    })


def write_file(path: str, n: int) -> float:
    from acidctl.fs import TableFS
    from acidctl.orc.writer import write_acid_file

    t = make_table(n)
    t0 = time.perf_counter()
    write_acid_file(TableFS(os.path.dirname(path)), path, t, stripe_size=8 << 20)
    return time.perf_counter() - t0


def pyorc_write(path: str, n: int) -> float:
    import pyorc

    from acidctl.orc.render import python_converters

    t = make_table(n)
    rows = t.to_pylist()
    t0 = time.perf_counter()
    schema = ("struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
              "row:struct<id:bigint,name:string,amount:double,active:boolean,day:date>>")
    epoch = dt.date(1970, 1, 1)
    with open(path, "wb") as f, pyorc.Writer(f, schema, converters=python_converters()) as w:
        for r in rows:
            x = r["row"]
            w.write((r["operation"], r["originalTransaction"], r["bucket"], r["rowId"], r["currentTransaction"],
                     (x["id"], x["name"], x["amount"], x["active"], (x["day"] - epoch).days)))
    return time.perf_counter() - t0


def run_dump(path: str) -> tuple[float, int]:
    code = ("import resource, sys\n"
            "from acidctl.cli.main import main\n"
            "try:\n    main(['-o', 'json', 'dump', sys.argv[1]])\n"
            "except SystemExit:\n    pass\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n")
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        p = subprocess.run([sys.executable, "-c", code, path], stdout=devnull, stderr=subprocess.PIPE,
                           check=True, cwd=ROOT)
    return time.perf_counter() - t0, int(p.stderr.decode().strip().splitlines()[-1])


def naive(path: str) -> float:
    import pyarrow.orc as po

    t0 = time.perf_counter()
    table = po.ORCFile(path).read()
    with open(os.devnull, "w") as out:
        for row in table.to_pylist():
            out.write(json.dumps(row, default=str) + "\n")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--keep")
    args = ap.parse_args()
    n = args.rows
    d = args.keep or tempfile.mkdtemp(prefix="acidctl-bench-")
    os.makedirs(d, exist_ok=True)
    big, half = os.path.join(d, "bucket_00000"), os.path.join(d, "half", "bucket_00000")
    os.makedirs(os.path.dirname(half), exist_ok=True)

    w = write_file(big, n)
    write_file(half, n // 2)
    small = max(n // 10, 1000)
    w_small = write_file(os.path.join(d, "small.orc"), small)
    w_pyorc = pyorc_write(os.path.join(d, "pyorc.orc"), small)
    print(f"writer: {n} rows in {w:.2f} s ({n / w / 1e6:.2f} M rows/s, includes verification); "
          f"on {small} rows acidctl {w_small:.3f} s vs pyorc row writer {w_pyorc:.3f} s "
          f"({w_pyorc / w_small:.1f}x)")

    ours, rss = run_dump(big)
    _, rss_half = run_dump(half)
    base = naive(big)
    print(f"dump:   acidctl {n / ours / 1e6:.2f} M rows/s ({ours:.2f} s end to end), "
          f"naive pyarrow->to_pylist->json.dumps {n / base / 1e6:.3f} M rows/s ({base:.2f} s)")
    print(f"ratio:  {base / ours:.1f}x the naive baseline (target >= 12x)")
    print(f"memory: peak RSS {rss_half / 1024:.0f} MiB for {n // 2} rows, {rss / 1024:.0f} MiB for {n} rows "
          f"(stripes are streamed: should not double)")


if __name__ == "__main__":
    main()
