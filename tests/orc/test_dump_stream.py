"""A large file is dumped from a stream of ORC row batches (``OrcFile.stream_batches``), so that
reading overlaps rendering even inside one stripe. From the first batch Arrow cannot hold
(timestamps outside 1677..2262) the dump goes on stripe by stripe from that very row, and must
print exactly what the row-at-a-time path prints (byte-identical to ORC Java's FileDump on every
golden file, tests/orc/test_dump_golden.py): no row twice, none left out."""

from __future__ import annotations

import datetime as dt

import pyorc
import pytest

import acidctl.dump as dumpmod
import acidctl.orc.reader as readermod
from acidctl.dump import DumpOptions, dump
from acidctl.fs import TableFS
from acidctl.orc.reader import OrcFile
from acidctl.orc.render import python_converters

ROW = "struct<id:int,ts:timestamp,s:string>"
ACID = "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,row:%s>" % ROW
N = 300
FAR = range(170, 175)  # year 2500: outside Arrow's nanoseconds, inside the Gregorian calendar
FAR_SECONDS = 16_725_225_600  # 2500-01-01 00:00:00 UTC


def _ts(i):
    return (FAR_SECONDS + i, i * 1000) if i in FAR else (1_600_000_000 + i, 0)


def _write(path, n=N, far=True):
    with open(path, "wb") as f:
        # stripes of 100 rows: the far rows sit in the middle of the second one
        with pyorc.Writer(
            f,
            ACID,
            converters=python_converters(),
            stripe_size=1,
            batch_size=100,
            compression=pyorc.CompressionKind.NONE,
        ) as w:
            for i in range(n):
                ts = _ts(i) if far else (1_600_000_000 + i, 0)
                w.write((1 if i % 3 == 1 else 0, 1, 536870912, i, 1, (i, ts, f"s{i}")))


@pytest.fixture
def streamed(monkeypatch):
    """Every file streamed (not only those above SMALL_FILE_ROWS), STREAM_ROWS rows at a time."""
    monkeypatch.setattr(readermod, "SMALL_FILE_ROWS", 0)

    def set_rows(n):
        monkeypatch.setattr(dumpmod, "STREAM_ROWS", n)

    return set_rows


def _dump(path, **opts):
    t = TableFS(str(path))
    return b"".join(bytes(c) for c in dump(t, t.root, DumpOptions(**opts), framing=True))


def _java_ts(secs, nanos):
    """java.sql.Timestamp.toString in UTC for a Gregorian date (Python's calendar is Java's after
    1582): the fraction without trailing zeros, at least one digit."""
    text = (dt.datetime(1970, 1, 1) + dt.timedelta(seconds=secs)).strftime("%Y-%m-%d %H:%M:%S")
    return text + "." + (f"{nanos:09d}".rstrip("0") or "0")


@pytest.mark.parametrize("stream_rows", [1, 7, 64, 1000])
def test_stream_falls_back_mid_stripe_without_losing_or_repeating_rows(tmp_path, streamed, stream_rows):
    streamed(stream_rows)
    path = tmp_path / "bucket_00000"
    _write(path)
    with OrcFile(TableFS(str(tmp_path)), str(path)) as orc:
        assert orc.num_stripes() > 1
    fast = _dump(path)
    assert fast == _dump(path, engine="python")
    lines = fast.decode().splitlines()
    rows = [ln for ln in lines if ln.startswith("{")]
    assert len(rows) == N
    for i in (0, 169, 170, 174, 175, N - 1):
        secs, nanos = _ts(i)
        assert f'"rowId":{i},' in rows[i]
        assert f'"ts":"{_java_ts(secs, nanos)}"' in rows[i]


@pytest.mark.parametrize("stream_rows", [5, 64])
@pytest.mark.parametrize(
    "opts",
    [{"limit": 172}, {"limit": 240}, {"operations": {1}}, {"operations": {0}, "limit": 150}, {"decode_bucket": True}],
)
def test_limit_and_filters_across_the_fallback(tmp_path, streamed, stream_rows, opts):
    streamed(stream_rows)
    path = tmp_path / "bucket_00000"
    _write(path)
    fast = _dump(path, **opts)
    assert fast == _dump(path, engine="python", **opts)
    rows = [ln for ln in fast.decode().splitlines() if ln.startswith("{")]
    if "limit" in opts:
        want = [i for i in range(N) if "operations" not in opts or (1 if i % 3 == 1 else 0) in opts["operations"]]
        assert len(rows) == min(opts["limit"], len(want))
    if opts.get("operations") == {1}:
        assert len(rows) == len([i for i in range(N) if i % 3 == 1])


def test_a_file_arrow_can_hold_is_never_read_stripe_by_stripe(tmp_path, streamed, monkeypatch):
    streamed(32)
    path = tmp_path / "bucket_00000"
    _write(path, far=False)
    want = _dump(path, engine="python")

    def refuse(*a, **k):
        raise AssertionError("read stripe by stripe")

    monkeypatch.setattr(OrcFile, "read_stripe_arrow", refuse)
    assert _dump(path) == want
