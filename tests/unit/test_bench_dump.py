"""The pure helpers of bench/dump.py's Java baseline (the benchmark itself is never run by tests)."""

import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_dump", os.path.join(ROOT, "bench", "dump.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# Two rows, then FileDump's separator (120 underscores, println'd: a blank line follows).
STREAM = b'{"a":1,"s":"x\\n{"}\n{"a":2,"s":null}\n' + b"_" * 120 + b"\n\n"


def counted(bench, chunks):
    c = bench.RowCounter()
    for ch in chunks:
        c.feed(ch)
    return c.rows, c.bytes


def test_counts_rows_not_separator_or_escaped_braces(bench):
    # "\\n{" inside a JSON string is an escaped backslash-n, not a line break
    assert counted(bench, [STREAM]) == (2, len(STREAM))


@pytest.mark.parametrize("cut", range(len(STREAM) + 1))
def test_any_chunking_counts_the_same(bench, cut):
    # a row that starts exactly at a chunk boundary is counted once
    assert counted(bench, [STREAM[:cut], b"", STREAM[cut:]]) == (2, len(STREAM))


def test_one_byte_chunks(bench):
    assert counted(bench, [STREAM[i : i + 1] for i in range(len(STREAM))]) == (2, len(STREAM))


def test_empty_stream(bench):
    assert counted(bench, []) == (0, 0)


def test_classpath_puts_classes_before_the_jar_wildcard(bench):
    assert bench.java_classpath("/j", "/c").split(os.pathsep) == ["/c", os.path.join("/j", "*")]


def test_ratios_pair_each_run_with_its_java_run(bench):
    # a loaded second run slows both: run by run 3.0x each time (crossing the runs would say 2.0-4.5x)
    assert bench._ratios([6.0, 9.0], [2.0, 3.0]) == "3.0x"
    assert bench._ratios([6.0, 8.0], [2.0, 1.0]) == "3.0-8.0x"
