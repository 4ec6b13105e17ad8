"""Throughput of `acidctl dump` against a naive Python baseline measured in the same run.

    python bench/dump.py [--rows 2000000] [--shape-rows 200000] [--repeat K] [--no-java] [--keep DIR]

1. Writes an ACID file of N rows (`row struct<id:bigint,name:string,amount:double,
   active:boolean,day:date>`) with acidctl's writer, and times the writer against pyorc's
   row-at-a-time writer on the same data (the writer choice in acidctl/orc/writer.py).
2. Times `acidctl dump -o json FILE > /dev/null` end to end (a subprocess, so start-up is
   included) and the naive baseline: pyarrow read -> to_pylist() -> json.dumps per row.
   Prints rows/s and the ratio (target >= 12x).
3. Peak RSS of the dump subprocess for N/2 and N rows: it must not grow with the file
   (stripes are streamed).
4. Data shapes (``--shape-rows`` rows each, written by pyorc): the simple 3-column row, every
   ORC type, strings with escapes, invalid UTF-8, timestamps outside 1677..2262, decimals,
   nested types, unions — `acidctl dump` end to end (rows/s, MB/s of JSON printed) against
   the naive Python baseline (pyorc rows -> json.dumps). ``--only-shapes [SHAPE ...]`` runs
   only these.
5. The Java baseline, in the same run, for the N-row file and every shape: ORC's FileDump
   ``-d`` (``orc-tools data``) row by row, ported in bench/java/PrintData.java (orc-tools is not
   installed here), compiled with ``javac`` against the ORC/Hadoop/gson jars pyspark ships and
   run end to end (``java -cp ... PrintData FILE``, JVM start included, as an operator's
   FileDump run is). Its row count is checked against acidctl's, and acidctl's speed-up over it
   is printed (issue #14: >= 4x on the simple 3-column schema, >= 3x on every ORC type, >= 1x on
   every shape). Without ``java``/``javac`` only the Python baseline runs (said so).
   ``--repeat K`` times each dump K times and prints the range.
Timings are never asserted by tests; this script only reports.
"""

from __future__ import annotations

import argparse
import datetime as dt
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


def make_table(n: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    rng = np.random.default_rng(7)
    names = pa.array([f"customer-{i % 100000:05d}" for i in ids.tolist()])
    amount = np.round(rng.uniform(0, 10_000, n), 2)
    row = pa.StructArray.from_arrays(
        [
            pa.array(ids),
            names,
            pa.array(amount),
            pa.array(ids % 3 == 0),
            pa.array((ids % 3650).astype(np.int32) + 18000, pa.date32()),
        ],
        ["id", "name", "amount", "active", "day"],
    )
    return pa.table(
        {
            "operation": pa.array(np.zeros(n, np.int32)),
            "originalTransaction": pa.array(np.ones(n, np.int64)),
            "bucket": pa.array(np.full(n, 536870912, np.int32)),
            "rowId": pa.array(ids),
            "currentTransaction": pa.array(np.ones(n, np.int64)),
            "row": row,
        }
    )


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
    schema = (
        "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
        "row:struct<id:bigint,name:string,amount:double,active:boolean,day:date>>"
    )
    epoch = dt.date(1970, 1, 1)
    with open(path, "wb") as f, pyorc.Writer(f, schema, converters=python_converters()) as w:
        for r in rows:
            x = r["row"]
            w.write(
                (
                    r["operation"],
                    r["originalTransaction"],
                    r["bucket"],
                    r["rowId"],
                    r["currentTransaction"],
                    (x["id"], x["name"], x["amount"], x["active"], (x["day"] - epoch).days),
                )
            )
    return time.perf_counter() - t0


def run_dump(path: str) -> tuple[float, int]:
    code = (
        "import resource, sys\n"
        "from acidctl.cli.main import main\n"
        "try:\n    main(['-o', 'json', 'dump', sys.argv[1]])\n"
        "except SystemExit:\n    pass\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    )
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        p = subprocess.run(
            [sys.executable, "-c", code, path], stdout=devnull, stderr=subprocess.PIPE, check=True, cwd=ROOT
        )
    return time.perf_counter() - t0, int(p.stderr.decode().strip().splitlines()[-1])


def naive(path: str) -> float:
    import pyarrow.orc as po

    t0 = time.perf_counter()
    table = po.ORCFile(path).read()
    with open(os.devnull, "w") as out:
        for row in table.to_pylist():
            out.write(json.dumps(row, default=str) + "\n")
    return time.perf_counter() - t0


# -- data shapes ---------------------------------------------------------------------------

ACID = "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,row:%s>"


def _shape_rows(shape: str, n: int):
    """(row ORC type, a function i -> row values) of each shape (pyorc's Python values, with
    acidctl's raw converters: dates as day numbers, timestamps as (seconds, nanos))."""
    import decimal

    if shape == "simple-3-columns":
        return "struct<id:bigint,name:string,amount:double>", lambda i: (
            i,
            f"customer-{i % 100000:05d}",
            round(i * 0.37 % 10000, 2),
        )
    if shape == "every-type":
        t = (
            "struct<b:boolean,ti:tinyint,si:smallint,i:int,l:bigint,f:float,d:double,dec:decimal(12,4),"
            "s:string,c:char(4),v:varchar(6),bin:binary,dt:date,ts:timestamp,li:array<int>,m:map<string,double>,"
            "st:struct<x:int,y:string>,u:uniontype<int,string>>"
        )
        return t, lambda i: (
            i % 2 == 0,
            i % 100,
            i % 30000,
            i,
            i * 1000003,
            i / 4,
            i / 8,
            decimal.Decimal(i) / 10000,
            f"s{i}",
            "ab",
            f"v{i % 999}",
            b"\x01\x02",
            i % 20000,
            (1_600_000_000 + i, (i * 7919) % 10**9),
            [i, i + 1],
            {f"k{i % 5}": i / 2},
            (i, f"y{i}"),
            i if i % 2 else f"u{i}",
        )
    if shape == "strings-with-escapes":
        return "struct<s:string>", lambda i: (f'say "hi" {i}\n\tpath\\{i}\x01',)
    if shape == "far-timestamps":
        return "struct<id:int,ts:timestamp>", lambda i: (i, (-60_000_000_000 + i * 1_234_567, i % 10**9))
    if shape == "decimals":
        return "struct<a:decimal(10,2),b:decimal(38,18)>", lambda i: (
            decimal.Decimal(i) / 100,
            decimal.Decimal(i * 7919) / 10**18 + i,
        )
    if shape == "nested":
        return (
            "struct<l:array<struct<a:int,b:string>>,m:map<string,array<int>>>",
            lambda i: ([(i, f"b{i}"), (i + 1, None)], {f"k{i % 7}": [i, i * 2]}),
        )
    if shape == "long-doubles":
        # 16-17 significant digits (measurements, i / 7) in 1e-3..1e7: vectorised (Java's
        # pre-19 Double.toString prints the shortest digits there; javafmt_double)
        return "struct<x:double>", lambda i: (i / 7,)
    if shape == "e-notation-doubles":
        # the same digits at 1e-9 and 1e12 scale: Java's E-notation, laid out from the
        # shortest digits value by value (integral values and powers of two: the exact port)
        return "struct<x:double,y:double>", lambda i: (i / 7 * 1e-9, i / 7 * 1e12 + 0.5)
    if shape == "unions":
        return "struct<u:uniontype<int,string,double>>", lambda i: ((i, f"s{i}", i / 4)[i % 3],)
    raise ValueError(shape)


SHAPES = [
    "simple-3-columns",
    "every-type",
    "strings-with-escapes",
    "invalid-utf8",
    "far-timestamps",
    "decimals",
    "nested",
    "unions",
    "long-doubles",
    "e-notation-doubles",
]


def write_shape(path: str, shape: str, n: int) -> None:
    import pyorc

    from acidctl.orc.render import python_converters

    if shape == "invalid-utf8":
        # 1 value in 50 not valid UTF-8: pyorc refuses such strings, Arrow's ORC writer keeps bytes
        import pyarrow.orc as po

        vals = [(b"bad-\xff\xfe-%d" % i) if i % 50 == 0 else ("name-%d-\u00e9t\u00e9" % i).encode() for i in range(n)]
        s = pa.array(vals, pa.binary()).view(pa.string())
        z = np.zeros(n, np.int64)
        po.write_table(
            pa.table(
                {
                    "operation": pa.array(np.zeros(n, np.int32)),
                    "originalTransaction": pa.array(z + 1),
                    "bucket": pa.array(np.full(n, 536870912, np.int32)),
                    "rowId": pa.array(np.arange(n)),
                    "currentTransaction": pa.array(z + 1),
                    "row": pa.StructArray.from_arrays([s], ["s"]),
                }
            ),
            path,
            compression="zlib",
        )
        return
    row_t, fn = _shape_rows(shape, n)
    with (
        open(path, "wb") as f,
        pyorc.Writer(f, ACID % row_t, converters=python_converters(), stripe_size=64 << 20) as w,
    ):
        for i in range(n):
            w.write((0, 1, 536870912, i, 1, fn(i)))


def _default(v):
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _naive_converters():
    from acidctl.orc.render import python_converters

    return python_converters()


def naive_pyorc(path: str) -> float:
    """The naive Python baseline: pyorc rows -> json.dumps, one row at a time (pyarrow's
    to_pylist, with strings as bytes, where pyorc refuses invalid UTF-8)."""
    import pyorc

    t0 = time.perf_counter()
    try:
        with open(path, "rb") as f, open(os.devnull, "w") as out:
            for row in pyorc.Reader(f, struct_repr=pyorc.StructRepr.DICT, converters=_naive_converters()):
                out.write(json.dumps(row, default=_default) + "\n")
    except UnicodeDecodeError:
        import pyarrow.orc as po

        t0 = time.perf_counter()
        t = po.read_table(path).flatten()
        t = pa.table(
            {n: (c.cast(pa.binary()) if c.type == pa.string() else c) for n, c in zip(t.column_names, t.columns)}
        )
        with open(os.devnull, "w") as out:
            for row in t.to_pylist():
                out.write(json.dumps(row, default=_default) + "\n")
    return time.perf_counter() - t0


class RowCounter:
    """Counts the JSON rows of a FileDump-style stream fed in arbitrary chunks: lines that start
    with ``{`` (every row of an ACID or struct-typed file is a JSON object; FileDump's separator
    and blank lines are not), across chunk boundaries."""

    def __init__(self) -> None:
        self.rows = 0
        self.bytes = 0
        self._at_line_start = True

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        self.bytes += len(chunk)
        self.rows += chunk.count(b"\n{") + (self._at_line_start and chunk[:1] == b"{")
        self._at_line_start = chunk[-1:] == b"\n"


def _piped(cmd: list[str], what: str, **kw) -> tuple[float, RowCounter]:
    """Run ``cmd`` end to end with stdout read through a pipe (the same for acidctl and Java):
    (seconds, rows and bytes printed)."""
    count = RowCounter()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    assert p.stdout is not None
    while True:
        chunk = p.stdout.read1(1 << 20)
        if not chunk:
            break
        count.feed(chunk)
    err = p.stderr.read() if p.stderr is not None else b""
    if p.wait() != 0:
        sys.exit(f"{what} failed:\n{err.decode(errors='replace')[-2000:]}")
    return time.perf_counter() - t0, count


def dump_pipe(path: str) -> tuple[float, int, int]:
    """acidctl -o json dump PATH end to end: (seconds, bytes printed, rows printed)."""
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    took, count = _piped(
        [sys.executable, "-m", "acidctl", "-o", "json", "dump", path], f"acidctl dump {path}", env=env, cwd=ROOT
    )
    return took, count.bytes, count.rows


# -- the Java baseline (bench/java/PrintData.java) -----------------------------------------


def pyspark_jars() -> str | None:
    """The jars directory of the installed pyspark (ORC core, Hadoop client, gson), found
    without importing pyspark."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    jars = os.path.join(list(spec.submodule_search_locations)[0], "jars")
    return jars if os.path.isdir(jars) else None


def java_classpath(jars: str, classes: str) -> str:
    """``classes`` then every jar of ``jars`` (Java's own ``dir/*`` wildcard)."""
    return os.pathsep.join([classes, os.path.join(jars, "*")])


def compile_java(workdir: str) -> str | None:
    """Compile bench/java/PrintData.java into ``workdir``; its run classpath, or None (with
    the reason printed) when java/javac or pyspark's jars are missing."""
    missing = [tool for tool in ("java", "javac") if shutil.which(tool) is None]
    jars = pyspark_jars()
    if missing or jars is None:
        why = f"{' and '.join(missing)} not on PATH" if missing else "pyspark's jars directory not found"
        print(f"java baseline: skipped ({why}); only the naive Python baseline runs")
        return None
    classes = os.path.join(workdir, "java-classes")
    os.makedirs(classes, exist_ok=True)
    src = os.path.join(ROOT, "bench", "java", "PrintData.java")
    cp = java_classpath(jars, classes)
    p = subprocess.run(
        ["javac", "-nowarn", "-d", classes, "-cp", cp, src], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    if p.returncode != 0:
        print(f"java baseline: skipped (javac failed: {p.stdout.decode(errors='replace').strip()[-500:]})")
        return None
    return cp


def java_dump(cp: str, path: str) -> tuple[float, int, int]:
    """``java -cp ... PrintData PATH`` end to end, JVM start included: (seconds, bytes, rows)."""
    took, count = _piped(["java", "-cp", cp, "PrintData", path], f"java PrintData {path}")
    return took, count.bytes, count.rows


def _ratios(theirs: list[float], ours: list[float]) -> str:
    """The speed-up of each run over the Java run right after it, as ``lo-hi x``: on a shared
    machine the load moves between runs, and adjacent runs see the same load."""
    r = [t / o for t, o in zip(theirs, ours)]
    return f"{min(r):.1f}x" if max(r) - min(r) < 0.05 else f"{min(r):.1f}-{max(r):.1f}x"


def _span(xs: list[float]) -> str:
    return f"{min(xs):.2f}" if len(xs) == 1 or max(xs) - min(xs) < 0.005 else f"{min(xs):.2f}-{max(xs):.2f}"


def shapes(d: str, n: int, only: list[str] | None, java_cp: str | None, repeat: int) -> None:
    base_name = "naive: pyorc rows -> json.dumps" + ("; java: ORC FileDump -d port" if java_cp else "")
    print(f"\nshapes ({n:,} rows each; {base_name}; times in s, min-max of {repeat}):")
    head = f"  {'shape':<22} {'acidctl s':>11} {'rows/s':>11} {'MB/s':>7} {'naive s':>8} {'ratio':>6}"
    print(head + (f" {'java s':>11} {'vs java':>13}" if java_cp else "") + "  (vs java: run by run)")
    for shape in only or SHAPES:
        path = os.path.join(d, f"shape-{shape}.orc")
        if not os.path.exists(path):
            write_shape(path, shape, n)
        ours, jav = [], []
        for _ in range(repeat):
            took, size, rows = dump_pipe(path)
            ours.append(took)
            if java_cp:
                jt, _, jrows = java_dump(java_cp, path)
                jav.append(jt)
                if jrows != rows or rows != n:
                    sys.exit(f"{shape}: acidctl printed {rows} rows, java {jrows}, file has {n}")
        base = naive_pyorc(path)
        best = min(ours)
        line = (
            f"  {shape:<22} {_span(ours):>11} {n / best:>11,.0f} {size / best / 1e6:>7.1f} {base:>8.2f}"
            f" {base / best:>5.1f}x"
        )
        if java_cp:
            line += f" {_span(jav):>11} {_ratios(jav, ours):>13}"
        print(line)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--shape-rows", type=int, default=200_000, help="rows of each data shape file")
    ap.add_argument("--only-shapes", nargs="*", choices=SHAPES, help="only the shapes (no N-row run)")
    ap.add_argument("--repeat", type=int, default=1, help="time each dump this many times (range printed)")
    ap.add_argument("--no-java", action="store_true", help="skip the Java FileDump baseline")
    ap.add_argument("--keep")
    args = ap.parse_args()
    d = args.keep or tempfile.mkdtemp(prefix="acidctl-bench-")
    os.makedirs(d, exist_ok=True)
    print(f"load: {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} cores")
    java_cp = None if args.no_java else compile_java(d)
    if args.only_shapes is not None:
        shapes(d, args.shape_rows, args.only_shapes, java_cp, args.repeat)
        return
    n = args.rows
    big, half = os.path.join(d, "bucket_00000"), os.path.join(d, "half", "bucket_00000")
    os.makedirs(os.path.dirname(half), exist_ok=True)

    w = write_file(big, n)
    write_file(half, n // 2)
    small = max(n // 10, 1000)
    w_small = write_file(os.path.join(d, "small.orc"), small)
    w_pyorc = pyorc_write(os.path.join(d, "pyorc.orc"), small)
    print(
        f"writer: {n} rows in {w:.2f} s ({n / w / 1e6:.2f} M rows/s, includes verification); "
        f"on {small} rows acidctl {w_small:.3f} s vs pyorc row writer {w_pyorc:.3f} s "
        f"({w_pyorc / w_small:.1f}x)"
    )

    ours, rss = run_dump(big)
    _, rss_half = run_dump(half)
    base = naive(big)
    print(
        f"dump:   acidctl {n / ours / 1e6:.2f} M rows/s ({ours:.2f} s end to end), "
        f"naive pyarrow->to_pylist->json.dumps {n / base / 1e6:.3f} M rows/s ({base:.2f} s)"
    )
    print(f"ratio:  {base / ours:.1f}x the naive baseline (target >= 12x)")
    if java_cp:
        piped, jav = [], []
        for _ in range(args.repeat):
            took, _, rows = dump_pipe(big)
            jt, _, jrows = java_dump(java_cp, big)
            if rows != n or jrows != n:
                sys.exit(f"{n}-row file: acidctl printed {rows} rows, java {jrows}")
            piped.append(took)
            jav.append(jt)
        print(
            f"java:   ORC FileDump -d port {_span(jav)} s vs acidctl {_span(piped)} s (both through a pipe): "
            f"{_ratios(jav, piped)} Java"
        )
    print(
        f"memory: peak RSS {rss_half / 1024:.0f} MiB for {n // 2} rows, {rss / 1024:.0f} MiB for {n} rows "
        f"(stripes are streamed: should not double)"
    )
    shapes(d, args.shape_rows, None, java_cp, args.repeat)


if __name__ == "__main__":
    main()
