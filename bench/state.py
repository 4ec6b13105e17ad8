"""Benchmark ``acidctl state`` on a partition with 10,000 delta directories.

Prints:

* the end-to-end wall time of ``acidctl -o json state DIR --assume-committed`` (a subprocess,
  interpreter start included) and of the text mode;
* the number of ``TableFS.ls`` calls one ``state`` run makes (counted in-process by wrapping
  ``TableFS.ls``): the target is one listing per directory level, i.e. 1 + number of
  base/delta directories;
* a baseline measured in the same run: a bare ``os.scandir`` walk of the same tree reading the
  same marker files, and the ratio of the in-process state run to it.

Then the merged-read throughput: bench/dump.py's table (2M rows) with a 5 % delete delta,
read through acidctl's merge kernel (bucket at a time, and streamed as ``dump --merged`` reads
it, with the time to its first table), against pyarrow reading the same files whole, and
``acidctl dump --merged`` end to end (rows/s rendered; time to the first line, also with
``--limit 10``). bench/merged.py covers other table shapes.

Usage: ``python bench/state.py [--deltas N] [--merged-rows N] [--keep DIR]``. Target: <= 1 s locally.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build(table: Path, n: int) -> None:
    table.mkdir(parents=True)
    base = table / "base_0000000"
    base.mkdir()
    (base / "bucket_00000").write_bytes(b"x" * 1000)
    (base / "_orc_acid_version").write_bytes(b"2")
    (base / "_metadata_acid").write_bytes(b'{"thisFileVersion":"0","dataFormat":"compacted"}')
    for i in range(1, n + 1):
        d = table / f"delta_{i:07d}_{i:07d}_0000"
        d.mkdir()
        (d / "bucket_00000").write_bytes(b"")
        (d / "_orc_acid_version").write_bytes(b"2")


def baseline(table: Path) -> float:
    t0 = time.perf_counter()
    for e in os.scandir(table):
        if e.is_dir():
            for f in os.scandir(e.path):
                f.stat()
                if f.name in ("_orc_acid_version", "_metadata_acid"):
                    with open(f.path, "rb") as fh:
                        fh.read()
    return time.perf_counter() - t0


def in_process(table: Path) -> tuple[float, int, dict]:
    sys.path.insert(0, str(ROOT))
    from acidctl.acid.report import build_report
    from acidctl.acid.writeids import WriteIdList
    from acidctl.fs import TableFS
    from acidctl.target import max_write_id_in_tree

    # --assume-committed: the snapshot as acidctl.target makes it (not counted: the report's
    # listing is what is measured)
    assumed = WriteIdList.all_committed(max_write_id_in_tree(TableFS(str(table))))

    calls = []
    orig = TableFS.ls

    def counting_ls(self, path):
        calls.append(path)
        return orig(self, path)

    TableFS.ls = counting_ls
    try:
        t0 = time.perf_counter()
        report = build_report(TableFS(str(table)), write_ids=assumed, assumed_committed=True, txns=None, hive_version=3)
        elapsed = time.perf_counter() - t0
    finally:
        TableFS.ls = orig
    return elapsed, len(calls), report


def subprocess_run(table: Path, mode: str) -> tuple[float, int]:
    cmd = [sys.executable, "-m", "acidctl", "-o", mode, "state", str(table), "--assume-committed"]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0, r.returncode


def merged_read_bench(tmp: Path, rows: int) -> None:
    """Merged-read throughput: a delta of ``rows`` rows (bench/dump.py's table) plus a delete
    delta removing 5 % of them, read through acidctl's merge, against pyarrow reading both
    files whole (no merge) in the same run."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    import numpy as np
    import pyarrow as pa
    import pyarrow.orc as po
    from dump import make_table

    from acidctl.acid.acidstate import get_acid_state
    from acidctl.acid.layout import list_table
    from acidctl.acid.read import read_partition, stream_partition
    from acidctl.acid.writeids import WriteIdList
    from acidctl.fs import TableFS
    from acidctl.orc.writer import write_acid_file

    table = tmp / "merged"
    ins, dels = table / "delta_0000001_0000001_0000", table / "delete_delta_0000002_0000002_0000"
    if not table.exists():
        ins.mkdir(parents=True)
        dels.mkdir(parents=True)
        t = make_table(rows)
        write_acid_file(TableFS(str(ins)), str(ins / "bucket_00000"), t, stripe_size=8 << 20)
        victims = np.arange(0, rows, 20, dtype=np.int64)  # 5 %
        n = len(victims)
        d = pa.table(
            {
                "operation": pa.array(np.full(n, 2, np.int32)),
                "originalTransaction": pa.array(np.ones(n, np.int64)),
                "bucket": pa.array(np.full(n, 536870912, np.int32)),
                "rowId": pa.array(victims),
                "currentTransaction": pa.array(np.full(n, 2, np.int64)),
                "row": pa.nulls(n, t.schema.field("row").type),
            }
        )
        write_acid_file(TableFS(str(dels)), str(dels / "bucket_00000"), d)
    snap = WriteIdList.parse("db.t:2:9223372036854775807::")
    t0 = time.perf_counter()
    tfs = TableFS(str(table))
    out = 0
    for lst in list_table(tfs):
        for _, tab in read_partition(tfs, lst, get_acid_state(lst, snap)):
            out += tab.num_rows
    ours = time.perf_counter() - t0
    # the streamed read behind dump --merged: rows/s and the time to its first table
    t0 = time.perf_counter()
    first = None
    streamed = 0
    for lst in list_table(tfs):
        for tab in stream_partition(tfs, lst, get_acid_state(lst, snap)):
            if first is None:
                first = time.perf_counter() - t0
            streamed += tab.num_rows
    stream_s = time.perf_counter() - t0
    assert streamed == out, (streamed, out)
    # end to end: acidctl dump --merged (rendered JSON to a pipe), and --limit 10
    e2e = {}
    for extra in ([], ["--limit", "10"]):
        cmd = [
            sys.executable,
            "-m",
            "acidctl",
            "-o",
            "json",
            "dump",
            "--merged",
            *extra,
            "--write-ids",
            "db.t:2:9223372036854775807::",
            str(table),
        ]
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE)
        first_line = None
        while True:
            chunk = p.stdout.read1(1 << 20)
            if not chunk:
                break
            if first_line is None:
                first_line = time.perf_counter() - t0
        p.wait()
        e2e[bool(extra)] = (first_line, time.perf_counter() - t0)
    t0 = time.perf_counter()
    base_rows = po.ORCFile(str(ins / "bucket_00000")).read().num_rows
    po.ORCFile(str(dels / "bucket_00000")).read()
    base = time.perf_counter() - t0
    print(
        f"merged read:                 {rows} rows - 5 % deletes -> {out} rows in {ours:.2f} s "
        f"({rows / ours / 1e6:.2f} M rows/s); pyarrow read-everything baseline {base:.2f} s "
        f"({base_rows / base / 1e6:.2f} M rows/s); ratio {ours / base:.2f}x the baseline's time"
    )
    print(
        f"streamed merged read:        {stream_s:.2f} s ({rows / stream_s / 1e6:.2f} M rows/s), "
        f"first table after {first:.3f} s"
    )
    print(
        f"acidctl dump --merged (e2e): {e2e[False][1]:.2f} s ({out / e2e[False][1] / 1e6:.2f} M rows/s rendered), "
        f"first line after {e2e[False][0]:.2f} s; --limit 10: first line after {e2e[True][0]:.2f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--deltas", type=int, default=10_000)
    ap.add_argument("--keep", help="build the table here and keep it")
    ap.add_argument("--repeat", type=int, default=3, help="end-to-end JSON runs (best is reported)")
    ap.add_argument("--merged-rows", type=int, default=2_000_000, help="rows of the merged-read table")
    args = ap.parse_args()
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="acidctl-bench-state-"))
    table = tmp / "t"
    try:
        if not table.exists():
            t0 = time.perf_counter()
            build(table, args.deltas)
            print(f"built {args.deltas} delta directories in {time.perf_counter() - t0:.2f} s")
        dirs = sum(1 for e in os.scandir(table) if e.is_dir())
        base_s = min(baseline(table) for _ in range(3))
        proc_s, ls_calls, report = in_process(table)
        runs = [subprocess_run(table, "json") for _ in range(args.repeat)]
        json_s, json_rc = min(runs)
        text_s, text_rc = subprocess_run(table, "text")
        cpu = os.times()
        child_cpu = (cpu.children_user + cpu.children_system) / (args.repeat + 1)
        p = report["partitions"][0]
        print(f"directories:                 {dirs} (+1 table root)")
        print(f"TableFS.ls calls:            {ls_calls} (target {dirs + 1}: one per directory level)")
        print(f"current deltas:              {len(p['snapshot']['read_order'])}; compaction {p['compaction']['type']}")
        print(f"baseline os.scandir walk:    {base_s:.3f} s")
        print(f"state in-process:            {proc_s:.3f} s  (ratio to baseline {proc_s / base_s:.1f}x)")
        print(
            f"acidctl -o json state (e2e): {json_s:.3f} s best of {args.repeat}  exit {json_rc}"
            f"  (all: {', '.join(f'{r[0]:.2f}' for r in runs)}; mean CPU per run {child_cpu:.2f} s)"
        )
        print(f"acidctl state text (e2e):    {text_s:.3f} s  exit {text_rc}")
        print(f"target <= 1 s end to end:    {'met' if json_s <= 1.0 else 'NOT met'}")
        merged_read_bench(tmp, args.merged_rows)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
