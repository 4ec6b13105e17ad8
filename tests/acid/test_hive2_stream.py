"""Hive 2.3 merged reads, streamed (acidctl/acid/hive2stream.py): ``dump --merged --hive-version
2`` (rows, ``--count``, ``--limit``) and its whole-bucket fallbacks.

Oracles, neither of them acidctl's code:

* :func:`b6_merge` — B.6 of ../shared/spec/insert-only-and-hive2.md replayed over the event
  files themselves (read with pyorc): per bucket, events of valid txns sorted by
  (originalTransaction, bucket, rowId) ASC, currentTransaction DESC, statement DESC (statement
  from the directory name, 0 without suffix or for bases); the first event per row wins, op 0/1
  keeps its row, op 2 drops it; rows listed in key order. (Split-update merges each insert file
  with the delete files on its own; Hive's writers never put one ROW__ID in two insert files,
  so on their files that is the same as one merge per bucket.)
* the serial replay of tests/hive2_histories.py (``History.expected``).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acidctl.acid import hive2stream
from acidctl.acid.acidstate import get_acid_state
from acidctl.acid.hive2 import Hive2TxnList
from acidctl.acid.layout import list_table
from acidctl.errors import ExitCode
from acidctl.fs import TableFS
from tests.conftest import run_cli
from tests.hive2_histories import ACID_TYPE, random_history, write_events_file, write_table

ALL = "9223372036854775807"


# -- the oracle -------------------------------------------------------------------------------


def _stmt_of(dirname: str) -> int:
    m = re.fullmatch(r"(?:delete_)?delta_\d+_\d+_(\d+)", dirname)
    return int(m.group(1)) if m else 0


def b6_merge(root: Path, valid) -> list:
    """[((originalTransaction, bucket, rowId), (col0, col1))] in key order: B.6 over every
    ``bucket_N`` file under ``root`` (the tables here have no obsolete directory)."""
    import pyorc

    by_bucket: dict = {}
    for f in sorted(root.glob("*/bucket_*")):
        with open(f, "rb") as fh:
            for op, ot, b, rid, cur, row in pyorc.Reader(fh):
                if valid(cur):
                    by_bucket.setdefault(f.name, []).append(((ot, b, rid), -cur, -_stmt_of(f.parent.name), op, row))
    out = []
    for events in by_bucket.values():
        seen = set()
        for key, _, _, op, row in sorted(events, key=lambda e: e[:3]):
            if key in seen:
                continue
            seen.add(key)
            if op in (0, 1):
                out.append((key, tuple(row)))
    return sorted(out, key=lambda kv: kv[0])


def _snapshot(root, text):
    (lst,) = list_table(TableFS(str(root)))
    st_ = get_acid_state(lst, Hive2TxnList.parse(text).to_write_ids(), hive_version=2)
    return lst, st_.require_snapshot()


def _streamed(root, text, **kw) -> list:
    lst, st_ = _snapshot(root, text)
    got = []
    for t in hive2stream.stream_partition(TableFS(str(root)), lst, st_, **kw):
        rows = t.column("row").combine_chunks()
        vals = zip(rows.field(0).to_pylist(), rows.field(1).to_pylist())
        keys = zip(*(t.column(c).to_pylist() for c in ("originalTransaction", "bucket", "rowId")))
        got += [(k, v) for k, v in zip(keys, vals)]
    return got


def _dumped(root, text, *extra) -> list:
    r = run_cli("dump", "--merged", "--hive-version", "2", "--txns", text, *extra, root)
    assert r.code == 0, r.stderr
    out = []
    for line in r.stdout.splitlines():
        d = json.loads(line)
        rid = d["row__id"]
        out.append(((rid["writeid"], rid["bucketid"], rid["rowid"]), (d["_col0"], d["_col1"])))
    return out


# -- a hand-built legacy table: base + deltas with update events + deletes ----------------------


def _row(i):
    return {"_col0": i, "_col1": f"r{i}"}


def _legacy_table(root: Path, *, rows: int = 6, stripe_size: int | None = None) -> Path:
    """base_0000001: rows 0..rows-1 in buckets 0 and 1 (written by txn 1); txn 2 updates
    (1,0,1) and (1,1,0) (op 1, ROW__ID kept); txn 3 deletes (1,0,2) (op 2) and inserts
    (3,0,0); txn 4 (aborted) updates (1,0,0) and deletes (1,1,1); txn 5 updates (1,0,1) again
    in statement 1 after statement 0 inserted (5,1,0)."""
    for b in (0, 1):
        write_events_file(
            root / "base_0000001" / f"bucket_{b:05d}",
            [(0, (1, b, i), _row(100 * b + i)) for i in range(rows)],
            1,
            stripe_size=stripe_size,
        )
    write_events_file(root / "delta_0000002_0000002_0000/bucket_00000", [(1, (1, 0, 1), _row(-1))], 2)
    write_events_file(root / "delta_0000002_0000002_0000/bucket_00001", [(1, (1, 1, 0), _row(-2))], 2)
    write_events_file(
        root / "delta_0000003_0000003_0000/bucket_00000", [(2, (1, 0, 2), None), (0, (3, 0, 0), _row(30))], 3
    )
    write_events_file(root / "delta_0000004_0000004_0000/bucket_00000", [(1, (1, 0, 0), _row(-4))], 4)
    write_events_file(root / "delta_0000004_0000004_0000/bucket_00001", [(2, (1, 1, 1), None)], 4)
    write_events_file(root / "delta_0000005_0000005_0000/bucket_00001", [(0, (5, 1, 0), _row(50))], 5)
    write_events_file(root / "delta_0000005_0000005_0001/bucket_00000", [(1, (1, 0, 1), _row(-5))], 5)
    return root


def test_hand_built_legacy_table_in_key_order_across_buckets(tmp_path):
    """Worked out from B.6 by hand: txn 4 is aborted (its update and delete do not count), txn
    5's update of (1,0,1) is newer than txn 2's, the update keeps the ROW__ID; rows of bucket 0
    and 1 interleave by originalTransaction first."""
    t = _legacy_table(tmp_path / "t")
    text = "5:9223372036854775807:4"
    want = [
        ((1, 0, 0), (0, "r0")),
        ((1, 0, 1), (-5, "r-5")),
        ((1, 0, 3), (3, "r3")),
        ((1, 0, 4), (4, "r4")),
        ((1, 0, 5), (5, "r5")),
        ((1, 1, 0), (-2, "r-2")),
        ((1, 1, 1), (101, "r101")),
        ((1, 1, 2), (102, "r102")),
        ((1, 1, 3), (103, "r103")),
        ((1, 1, 4), (104, "r104")),
        ((1, 1, 5), (105, "r105")),
        ((3, 0, 0), (30, "r30")),
        ((5, 1, 0), (50, "r50")),
    ]
    assert _dumped(t, text) == want
    assert b6_merge(t, lambda c: c <= 5 and c != 4) == want
    # a reader before txn 3: txn 2's versions, nothing deleted
    assert [k for k, _ in _dumped(t, "2:9223372036854775807:")] == [(1, 0, i) for i in range(6)] + [
        (1, 1, i) for i in range(6)
    ]
    r = run_cli("-o", "json", "dump", "--merged", "--count", "--hive-version", "2", "--txns", text, t)
    assert r.code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["rows"] == 13
    assert doc["targets"][0]["partitions"][0]["buckets"] == [{"bucket": 0, "rows": 6}, {"bucket": 1, "rows": 7}]


def test_many_stripes_stream_and_match_the_oracle(tmp_path):
    t = _legacy_table(tmp_path / "t", rows=3000, stripe_size=2048)
    text = "5:9223372036854775807:4"
    want = b6_merge(t, lambda c: c <= 5 and c != 4)
    assert len(want) == 2 * 3000 - 1 + 2
    for piece in (7, 250, None):
        assert _streamed(t, text, piece_rows=piece, batch_rows=1000) == want
    assert _dumped(t, text) == want


# -- --limit reads a little, memory holds a little ---------------------------------------------


def _count_stripe_reads(monkeypatch) -> list:
    from acidctl.orc.reader import OrcFile

    reads: list = []
    real = OrcFile.read_stripe_arrow

    def counting(self, index, columns=None):
        reads.append((self.path, index))
        return real(self, index, columns=columns)

    monkeypatch.setattr(OrcFile, "read_stripe_arrow", counting)
    return reads


def test_limit_1_does_not_read_the_whole_bucket(tmp_path, monkeypatch):
    import pyarrow.orc as po

    t = _legacy_table(tmp_path / "t", rows=20000, stripe_size=2048)
    stripes = po.ORCFile(str(t / "base_0000001/bucket_00000")).nstripes
    assert stripes > 40
    reads = _count_stripe_reads(monkeypatch)
    got = _dumped(t, "5:9223372036854775807:4", "--limit", "1")
    assert got == [((1, 0, 0), (0, "r0"))]
    base_reads = [i for p, i in reads if p.endswith("base_0000001/bucket_00000")]
    # the first piece of each file (MIN_PIECE_ROWS rows: a few stripes), never the bucket
    assert 0 < len(base_reads) < stripes // 4, (len(base_reads), stripes)


def test_rows_held_stay_bounded(tmp_path, monkeypatch):
    """The rows buffered by the merge (all sources) plus the window never approach a bucket."""
    t = _legacy_table(tmp_path / "t", rows=20000, stripe_size=2048)
    held: list[int] = []
    real = hive2stream.windows

    def watching(cursors):
        for w in real(cursors):
            buffered = sum(c.buf.num_rows for c in cursors if c.buf is not None)
            window = sum(p[0].num_rows for p in w if p is not None)
            held.append(buffered + window)
            yield w

    monkeypatch.setattr(hive2stream, "windows", watching)
    got = _streamed(t, "5:9223372036854775807:4", piece_rows=1000, batch_rows=4096)
    assert len(got) == 2 * 20000 - 1 + 2
    assert len(held) > 30
    # 9 files, a piece of at most 1,000 rows each (a stripe of ~250 rows read past it at most)
    assert max(held) <= 9 * 1250, max(held)


# -- random histories (hypothesis) --------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    mode=st.sampled_from(["legacy", "split-update"]),
    buckets=st.integers(1, 3),
    piece=st.integers(1, 5),
    data=st.data(),
)
def test_random_histories_stream_as_b6_and_the_serial_model(tmp_path_factory, seed, mode, buckets, piece, data):
    rng = random.Random(seed)
    h = random_history(rng, mode=mode, txns=rng.randint(2, 9), buckets=buckets)
    root = write_table(h, tmp_path_factory.mktemp("h2") / "t")
    if not h.stmts:
        return
    hwm = data.draw(st.integers(1, h.hwm))
    text = h.reader_list(hwm)
    want = b6_merge(root, lambda c: h.valid(c, hwm))
    got = _streamed(root, text, piece_rows=piece, batch_rows=3)
    assert got == want
    assert {k: {"_col0": v[0], "_col1": v[1]} for k, v in got} == h.expected(hwm)


# -- what the windows cannot take ---------------------------------------------------------------


def _rewrite_reversed(path: Path, *, stripe_size: int = 2048) -> None:
    import pyorc

    with open(path, "rb") as fh:
        r = pyorc.Reader(fh)
        events = list(r)
        meta = dict(r.user_metadata)
    with open(path, "wb") as out, pyorc.Writer(out, ACID_TYPE, stripe_size=stripe_size, batch_size=250) as w:
        for e in reversed(events):
            w.write(e)
        w.set_user_metadata(**meta)


def test_a_file_out_of_key_order_is_merged_whole_before_anything_is_printed(tmp_path):
    t = _legacy_table(tmp_path / "t", rows=50)
    _rewrite_reversed(t / "base_0000001/bucket_00000")
    text = "5:9223372036854775807:4"
    want = b6_merge(t, lambda c: c <= 5 and c != 4)  # the oracle sorts: order within a file is free
    assert _dumped(t, text) == want


def test_a_file_out_of_order_found_after_rows_were_printed_stops_with_one_line(tmp_path):
    """The disorder sits far into a file: the rows before it were printed in order; the read
    stops (exit 7, one line) rather than print a different merge."""
    import pyorc

    t = _legacy_table(tmp_path / "t", rows=50000)
    f = t / "base_0000001/bucket_00001"
    with open(f, "rb") as fh:
        r = pyorc.Reader(fh)
        events = list(r)
        meta = dict(r.user_metadata)
    events[45000:] = reversed(events[45000:])
    with open(f, "wb") as out, pyorc.Writer(out, ACID_TYPE) as w:
        for e in events:
            w.write(e)
        w.set_user_metadata(**meta)
    r = run_cli("dump", "--merged", "--hive-version", "2", "--txns", "5:9223372036854775807:4", t)
    assert r.code == ExitCode.INVALID_INPUT, r.stderr
    assert "not in ROW__ID order" in r.stderr and "bucket_00001" in r.stderr
    assert len(r.stderr.strip().splitlines()) <= 2  # the message and its hint
    keys = [tuple(json.loads(x)["row__id"].values()) for x in r.stdout.splitlines()]
    assert keys and keys == sorted(keys)


def test_equal_merge_keys_fall_back_to_the_whole_merge(tmp_path):
    """Two events with the whole merge key equal (here: one file holding the same update
    twice): the windows refuse, the partition is merged whole as Hive 2.3's merger does it —
    one reader returns its events in file order and the collapse keeps the first of the row
    (OrcRawRecordMerger.next), so the file's first version wins."""
    t = _legacy_table(tmp_path / "t")
    write_events_file(
        t / "delta_0000002_0000002_0000/bucket_00000", [(1, (1, 0, 1), _row(-1)), (1, (1, 0, 1), _row(-9))], 2
    )
    lst, st_ = _snapshot(t, "2:9223372036854775807:")
    with pytest.raises(hive2stream.Unstreamable) as e:
        list(hive2stream.stream_partition(TableFS(str(t)), lst, st_))
    assert e.value.reason == hive2stream.TIES
    got = _dumped(t, "2:9223372036854775807:")
    assert [k for k, _ in got] == [(1, 0, i) for i in range(6)] + [(1, 1, i) for i in range(6)]
    assert dict(got)[(1, 0, 1)] == (-1, "r-1")


def test_stream_partition_yields_tables_in_key_order_with_the_first_one_small(tmp_path):
    t = _legacy_table(tmp_path / "t", rows=20000, stripe_size=2048)
    lst, st_ = _snapshot(t, "5:9223372036854775807:4")
    sizes = [x.num_rows for x in hive2stream.stream_partition(TableFS(str(t)), lst, st_, batch_rows=16384)]
    assert sizes[0] <= 8192 and sum(sizes) == 2 * 20000 + 1


# -- export ---------------------------------------------------------------------------------------


def _exported(out: Path) -> list:
    import pyarrow.parquet as pq

    got = []
    for f in sorted(out.rglob("*.parquet")):
        for d in pq.read_table(f).to_pylist():
            rid = d.pop("row__id")
            got.append(((rid["writeid"], rid["bucketid"], rid["rowid"]), (d["_col0"], d["_col1"])))
    return sorted(got, key=lambda kv: kv[0])


def test_export_streams_each_bucket(tmp_path, monkeypatch):
    """Export of a many-stripe Hive 2 table: the windowed merge only (the whole-bucket merge
    must not run), the rows B.6's."""
    import acidctl.acid.hive2 as H
    import acidctl.export as E

    def whole(*a, **k):
        raise AssertionError("the whole-bucket merge ran")

    monkeypatch.setattr(H, "merge_sources", whole)
    monkeypatch.setattr(E, "HIVE2_WRITE_ROWS", 1000)  # many writes into one file
    t = _legacy_table(tmp_path / "t", rows=3000, stripe_size=2048)
    text = "5:9223372036854775807:4"
    r = run_cli("export", "--hive-version", "2", "--txns", text, "--with-row-id", t, tmp_path / "out")
    assert r.code == 0, r.stderr
    assert _exported(tmp_path / "out") == b6_merge(t, lambda c: c <= 5 and c != 4)


def test_export_of_tied_keys_is_the_whole_merge(tmp_path):
    t = _legacy_table(tmp_path / "t")
    write_events_file(
        t / "delta_0000002_0000002_0000/bucket_00000", [(1, (1, 0, 1), _row(-1)), (1, (1, 0, 1), _row(-9))], 2
    )
    r = run_cli("export", "--hive-version", "2", "--txns", "2:9223372036854775807:", "--with-row-id", t, tmp_path / "o")
    assert r.code == 0, r.stderr
    got = _exported(tmp_path / "o")
    assert [k for k, _ in got] == [(1, 0, i) for i in range(6)] + [(1, 1, i) for i in range(6)]
    assert dict(got)[(1, 0, 1)] == (-1, "r-1")  # the file's first version (see the dump test)


def test_split_update_files_larger_than_a_small_file_stream(tmp_path, monkeypatch):
    """Files beyond the reader's small-file size (read through ORC's row reader, not stripe by
    stripe): a split-update base of 300,000 rows, a delete delta removing every third row, an
    insert delta. Expected rows by arithmetic: the base's rows not deleted, then the inserts."""
    import numpy as np
    import pyarrow as pa

    import acidctl.acid.hive2 as H
    from acidctl.compact.hive2 import encode_hive2_file
    from acidctl.orc.reader import SMALL_FILE_ROWS

    def whole(*a, **k):
        raise AssertionError("the whole-bucket merge ran")

    monkeypatch.setattr(H, "merge_sources", whole)
    n = 300_000
    assert n > SMALL_FILE_ROWS

    def events(op, ot, rid, cur, vals):
        m = len(rid)
        row = pa.StructArray.from_arrays(
            [pa.array(vals, pa.int32()), pa.array([f"r{v}" for v in vals])],
            ["_col0", "_col1"],
            mask=pa.array(np.full(m, op == 2)),
        )
        return pa.table(
            {
                "operation": pa.array(np.full(m, op), pa.int32()),
                "originalTransaction": pa.array(np.full(m, ot), pa.int64()),
                "bucket": pa.array(np.zeros(m), pa.int32()),
                "rowId": pa.array(rid, pa.int64()),
                "currentTransaction": pa.array(np.full(m, cur), pa.int64()),
                "row": row,
            }
        )

    def write(rel, t):
        p = tmp_path / "t" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(encode_hive2_file(t, compression="ZLIB", stripe_size=1 << 20)[0])

    rid = np.arange(n)
    write("base_0000001/bucket_00000", events(0, 1, rid, 1, rid % 1000))
    gone = rid[rid % 3 == 0]
    write("delete_delta_0000002_0000002_0000/bucket_00000", events(2, 1, gone, 2, np.zeros(len(gone), int)))
    write("delta_0000002_0000002_0000/bucket_00000", events(0, 2, np.arange(10), 2, np.arange(10) + 5000))
    t = tmp_path / "t"
    got = _streamed(t, "2:9223372036854775807:", batch_rows=50_000)
    kept = rid[rid % 3 != 0]
    want = [((1, 0, int(r)), (int(r % 1000), f"r{r % 1000}")) for r in kept]
    want += [((2, 0, i), (5000 + i, f"r{5000 + i}")) for i in range(10)]
    assert got == want


def test_original_files_stream_with_hive2_row_ids(tmp_path):
    """B.6: original rows are (0, bucket from the name, row number within the file); a legacy
    update of (0,1,1) by txn 1 and a delete of (0,0,0) by txn 2 apply to exactly those rows; the
    rows come in key order across the two buckets."""
    from tests.compact.test_hive2_compact import _acid_orc, _plain_orc

    t = tmp_path / "t"
    _plain_orc(t / "000000_0", [(10, "a"), (11, "b")])
    _plain_orc(t / "000001_0", [(20, "c"), (21, "d")])
    _acid_orc(t / "delta_0000001_0000001_0000" / "bucket_00001", [(1, 0, 1, 1, 1, (99, "D"))])
    _acid_orc(t / "delta_0000002_0000002_0000" / "bucket_00000", [(2, 0, 0, 0, 2, None)])
    want = [((0, 0, 1), (11, "b")), ((0, 1, 0), (20, "c")), ((0, 1, 1), (99, "D"))]
    assert _streamed(t, f"2:{ALL}:", piece_rows=1) == want
    assert _dumped(t, f"2:{ALL}:") == want
    # two original files of one bucket: refused before anything is read (exit 7)
    _plain_orc(t / "000000_1", [(30, "e")])
    r = run_cli("dump", "--merged", "--hive-version", "2", "--txns", f"2:{ALL}:", t)
    assert r.code == ExitCode.INVALID_INPUT and "same ROW__IDs" in r.stderr and not r.stdout, r.stderr


def test_equal_merge_keys_found_after_rows_were_printed_continue_from_the_whole_merge(tmp_path):
    """The tie sits in bucket 1, found after the first rows were handed out: the rest comes
    from the whole merge, every row exactly once, in key order, the tied row's first version."""
    t = _legacy_table(tmp_path / "t", rows=20000, stripe_size=2048)
    write_events_file(
        t / "delta_0000002_0000002_0000/bucket_00001",
        [(1, (1, 1, 0), _row(-2)), (1, (1, 1, 15000), _row(-7)), (1, (1, 1, 15000), _row(-8))],
        2,
    )
    text = "5:9223372036854775807:4"
    lst, st_ = _snapshot(t, text)
    given = 0
    with pytest.raises(hive2stream.Unstreamable):
        for x in hive2stream.stream_partition(TableFS(str(t)), lst, st_):
            given += x.num_rows
    assert given > 0  # rows were handed out (and printed by dump) before the tie was met
    got = _dumped(t, text)
    keys = [k for k, _ in got]
    assert keys == sorted(set(keys)) and len(keys) == 2 * 20000 - 1 + 2
    assert dict(got)[(1, 1, 15000)] == (-7, "r-7")
    assert dict(got)[(1, 0, 1)] == (-5, "r-5") and (1, 0, 2) not in dict(got)
