"""Timestamps outside Arrow's 1677..2262 (nanoseconds): the stripe is read column-wise all the
same (Arrow for the other columns, pyorc for the timestamp ones) and must print exactly what
the row-at-a-time path prints — that path is byte-identical to ORC Java's FileDump on every
golden file (tests/orc/test_dump_golden.py)."""

from __future__ import annotations

import pyorc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import acidctl.dump as dumpmod
from acidctl.dump import DumpOptions, dump
from acidctl.fs import TableFS
from acidctl.orc.render import python_converters

ROW = "struct<id:int,ts:timestamp,s:string,tl:timestamp with local time zone,li:array<int>>"
ACID = "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,row:%s>" % ROW
# years 0001..9999 and beyond, both sides of 1582 (Julian) and of Arrow's range
secs = st.integers(-70_000_000_000, 260_000_000_000) | st.sampled_from(
    [-62135596800, -12219292800, -12219292801, -9_223_372_037, 9_223_372_036, 0, 253402300799]
)
ts = st.none() | st.tuples(secs, st.integers(0, 999_999_999))
row = st.tuples(
    st.none() | st.integers(-5, 5),
    ts,
    st.none() | st.text(max_size=4),
    ts,
    st.none() | st.lists(st.integers(0, 3), max_size=2),
)


def _both(path):
    t = TableFS(str(path))
    fast = b"".join(bytes(c) for c in dump(t, t.root, DumpOptions(), framing=True))
    slow = b"".join(bytes(c) for c in dump(t, t.root, DumpOptions(engine="python"), framing=True))
    return fast, slow


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.none() | row, min_size=1, max_size=30))
def test_acid_file_with_far_timestamps(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("ts") / "bucket_00000"
    with open(path, "wb") as f:
        with pyorc.Writer(f, ACID, converters=python_converters()) as w:
            for i, r in enumerate(rows):
                w.write((2 if r is None else 0, 1, 536870912, i, 1, r))
    fast, slow = _both(path)
    assert fast == slow


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(row, min_size=1, max_size=30))
def test_original_file_with_far_timestamps(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("ts") / "000000_0"
    with open(path, "wb") as f:
        with pyorc.Writer(f, ROW, converters=python_converters()) as w:
            w.writerows(rows)
    fast, slow = _both(path)
    assert fast == slow


def test_far_timestamps_take_the_column_wise_path(tmp_path, monkeypatch):
    """Not the row-at-a-time path: the rows of a stripe with a year-1 timestamp are rendered
    column-wise (the Python path is never called)."""
    path = tmp_path / "bucket_00000"
    with open(path, "wb") as f:
        with pyorc.Writer(f, ACID, converters=python_converters()) as w:
            w.write((0, 1, 536870912, 0, 1, (1, (-62135596800, 5), "x", (0, 0), [1])))
            w.write((0, 1, 536870912, 1, 1, (2, (1_700_000_000, 0), "y\n", None, None)))
    called = []
    monkeypatch.setattr(dumpmod, "_python_stripe", lambda *a, **k: called.append(1) or iter(()))
    t = TableFS(str(path))
    out = b"".join(bytes(c) for c in dump(t, t.root, DumpOptions(), framing=False)).decode()
    assert called == []
    lines = out.splitlines()
    # Java prints pre-1582 instants in the Julian calendar: proleptic 0001-01-01 is Julian 0001-01-03
    assert '"ts":"0001-01-03 00:00:00.000000005"' in lines[0] and '"tl":"1970-01-01 00:00:00.0"' in lines[0]
    assert '"ts":"2023-11-14 22:13:20.0"' in lines[1] and '"tl":null' in lines[1] and '"s":"y\\n"' in lines[1]


@settings(max_examples=40, deadline=None)
@given(
    parts=st.lists(st.tuples(secs, st.integers(0, 999_999_999) | st.sampled_from([0, 1, 10**8])), max_size=40),
    gregorian=st.booleans(),
)
def test_timestamp_text_is_javas_for_any_range(parts, gregorian):
    """The vectorised Timestamp.toString (numpy's calendar arithmetic and fixed-width layout for
    years of up to 4 digits, Arrow string joins beyond) against the scalar port of
    java.sql.Timestamp.toString (byte-identical to FileDump on every golden file)."""
    import numpy as np

    from acidctl.orc import javafmt, render

    if gregorian:  # 1582-10-15 .. 9999-12-31: every value on the casts' side
        parts = [(min(max(s, -12219292800), 253402300799), n) for s, n in parts]
    s = np.array([p[0] for p in parts], dtype=np.int64)
    n = np.array([p[1] for p in parts], dtype=np.int64)
    mask = np.array([i % 5 == 3 for i in range(len(parts))], dtype=bool)
    got = render._timestamp_text(s, n, mask).to_pylist()
    assert got == [None if m else javafmt.java_timestamp(a, b) for (a, b), m in zip(parts, mask)]


#: Arrow's nanosecond range ends, either side of the epoch, whole seconds, one nanosecond
ARROW_EDGES = [
    -(2**63),  # 1677-09-21 00:12:43.145224192
    2**63 - 1,  # 2262-04-11 23:47:16.854775807
    -1,
    0,
    1,
    -1_000_000_000,
    999_999_999,
    1_000_000_000,
    -12219292800 * 10**9 + 10**9 * 86400 * 365 * 100,  # 1682, Gregorian
    1_700_000_000_123_000_000,
]


@pytest.mark.parametrize("tz", [None, "UTC"])
def test_arrow_range_timestamps_print_as_java_does(tz):
    """Timestamps Arrow holds (the fast path: Arrow's own cast, the fraction trimmed as Java
    does) against the scalar port of java.sql.Timestamp.toString, nulls and a slice included."""
    import pyarrow as pa

    from acidctl.orc import javafmt, render

    values = ARROW_EDGES + [None] + [v // 7 for v in ARROW_EDGES]
    arr = pa.array(values, pa.timestamp("ns", tz=tz))
    for a, vals in ((arr, values), (arr.slice(3), values[3:])):
        want = [None if v is None else javafmt.java_timestamp(v // 10**9, v % 10**9) for v in vals]
        assert render._s_timestamp(a, None).to_pylist() == want
    assert render._s_timestamp(pa.array([-(2**63)], pa.timestamp("ns")), None).to_pylist() == [
        "1677-09-21 00:12:43.145224192"
    ]
    whole = pa.array([0, 86_400 * 10**9, None], pa.timestamp("ns", tz=tz))  # every value whole seconds
    assert render._s_timestamp(whole, None).to_pylist() == ["1970-01-01 00:00:00.0", "1970-01-02 00:00:00.0", None]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-800_000, 3_200_000), min_size=1, max_size=30))
def test_dates_of_any_year_print_as_java_does(days):
    """java.sql.Date.toString of day numbers (Julian before 1582-10-15, era years, 5-digit
    years) against the scalar port (golden-backed)."""
    from acidctl.orc import javafmt, render

    days = days + [javafmt.GREGORIAN_CUTOVER_DAY, javafmt.GREGORIAN_CUTOVER_DAY - 1, -719162, -719163]
    assert render._java_date_text(days).to_pylist() == [javafmt.java_date(d) for d in days]


# -- a large split stripe: all but its first tenth read by a child process (acidctl.orc.tsparts)


def _far_rows(n):
    """Rows with far timestamps (pre-1582, year 2500), nulls of every level, and the other
    columns Arrow reads."""
    out = []
    for i in range(n):
        if i % 97 == 5:
            out.append(None)  # a delete event: row null
            continue
        ts = None if i % 13 == 3 else ((-60_000_000_000 if i % 2 else 16_725_225_600) + i * 7919, (i * 37) % 10**9)
        tl = None if i % 11 == 4 else (i * 86400, 0)
        out.append((i, ts, f"s{i}" if i % 5 else None, tl, [i] if i % 3 else None))
    return out


def _write_far(path, rows):
    with open(path, "wb") as f:
        with pyorc.Writer(f, ACID, converters=python_converters()) as w:
            for i, r in enumerate(rows):
                w.write((2 if r is None else 0, 1, 536870912, i, 1, r))


@pytest.fixture
def child_reads(monkeypatch):
    """The child process used for any stripe part (not only large ones), on any machine."""
    from acidctl.orc import tsparts

    monkeypatch.setattr(tsparts, "CHILD_MIN_ROWS", 1)
    monkeypatch.setattr(dumpmod, "_usable_cpus", lambda: 2)
    started = []
    real = tsparts.Child

    class Spy(real):  # type: ignore[misc, valid-type]
        def __init__(self, *a, **k):
            started.append(a)
            super().__init__(*a, **k)

    monkeypatch.setattr(tsparts, "Child", Spy)
    return started


@pytest.mark.parametrize("split_rows", [7, 1000])
def test_a_child_process_reads_most_of_a_split_stripe(tmp_path, child_reads, monkeypatch, split_rows):
    monkeypatch.setattr(dumpmod, "SPLIT_ROWS", split_rows)
    path = tmp_path / "bucket_00000"
    _write_far(path, _far_rows(400))
    fast, slow = _both(path)
    assert child_reads and child_reads[0][3] == 40  # rows 40.. (all but a tenth) in the child
    assert fast == slow
    lines = [ln for ln in fast.decode().splitlines() if ln.startswith("{")]
    assert len(lines) == 400
    # row 200: 2500-01-01 (16_725_225_600 s) + 200 * 7919 s = 18 days 07:56:40; 200 * 37 ns
    assert '"ts":"2500-01-19 07:56:40.0000074"' in lines[200]


@pytest.mark.parametrize("blocks_before_failing", [0, 1, 3])
def test_a_failed_child_leaves_its_rows_to_this_process(tmp_path, child_reads, monkeypatch, blocks_before_failing):
    """The child stops (dies, says something unexpected) after some blocks: this process reads
    the rest from the first row it did not get."""
    import itertools

    from acidctl.orc import tsparts

    real = tsparts.Child.blocks
    monkeypatch.setattr(tsparts.Child, "blocks", lambda self: itertools.islice(real(self), blocks_before_failing))
    monkeypatch.setattr(dumpmod, "SPLIT_ROWS", 50)
    path = tmp_path / "bucket_00000"
    _write_far(path, _far_rows(300))
    fast, slow = _both(path)
    assert child_reads
    assert fast == slow
    assert fast.count(b"\n{") + fast.startswith(b"{") == 300


def test_a_child_that_cannot_run_leaves_its_rows_to_this_process(tmp_path, child_reads, monkeypatch):
    """A child that exits at once without a word (here: /bin/false in place of Python) prints
    nothing; every row is printed all the same."""
    import sys

    monkeypatch.setattr(sys, "executable", "/bin/false")
    path = tmp_path / "bucket_00000"
    _write_far(path, _far_rows(300))
    fast, slow = _both(path)
    assert child_reads
    assert fast == slow


def test_limit_within_the_first_tenth_starts_no_child(tmp_path, child_reads):
    path = tmp_path / "bucket_00000"
    _write_far(path, _far_rows(300))
    t = TableFS(str(path))
    out = b"".join(bytes(c) for c in dump(t, t.root, DumpOptions(limit=20), framing=False))
    assert out.count(b"\n") == 20
    assert child_reads == []


def test_a_child_process_reads_an_original_file_too(tmp_path, child_reads):
    path = tmp_path / "000000_0"
    rows = [r for r in _far_rows(300) if r is not None]
    with open(path, "wb") as f:
        with pyorc.Writer(f, ROW, converters=python_converters()) as w:
            w.writerows(rows)
    fast, slow = _both(path)
    assert child_reads
    assert fast == slow
