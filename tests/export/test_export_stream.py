"""`acidctl export` of Hive 3/4 buckets, streamed (issue #14): the files equal, byte for byte,
the whole-bucket merge's (forced with the ``export-acid-stream`` test hook); the rows equal
what the spec's merge rules give, worked out by arithmetic or by the reference model of
tests/histories.py; a many-stripe bucket reaches the writer a read batch at a time; a file out
of key order makes the bucket's export fall back to the whole-bucket merge."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings

from acidctl import faults
from acidctl.acid import hive2stream
from acidctl.acid.writeids import WriteIdList
from acidctl.export import WRITE_ROWS, ExportOptions, export_table
from acidctl.fs import TableFS
from acidctl.orc.writer import write_acid_file
from tests.acidfiles import good_metadata, write_raw
from tests.export.test_export import read_export
from tests.histories import partitioned_histories, prop

B0, B0S1, B1 = prop(0, 0), prop(0, 1), prop(1, 0)


def _force_whole(task):
    raise hive2stream.Unstreamable("test", "whole-bucket merge asked by the test")


def export(root: Path, dest: Path, snapshot, *, whole: bool = False, seen: dict | None = None, **kw) -> dict:
    """export_table; ``whole``: the whole-bucket merge for every bucket; ``seen``: lists of the
    row counts the merge handed to the writer ("merged") and the writer wrote ("write")."""
    hooks: dict = {}
    if whole:
        hooks["export-acid-stream"] = _force_whole
    if seen is not None:
        seen.setdefault("merged", [])
        seen.setdefault("write", [])
        hooks["export-merged"] = seen["merged"].append
        hooks["export-write"] = seen["write"].append
        seen.setdefault("fallback", [])
        hooks["export-whole-bucket"] = seen["fallback"].append
    with faults.hooks(hooks):
        return export_table(TableFS(str(root)), snapshot, str(dest), ExportOptions(**kw))


def file_bytes(dest: Path) -> dict[str, bytes]:
    return {str(p.relative_to(dest)): p.read_bytes() for p in sorted(dest.rglob("*")) if p.is_file()}


def _acid(path: Path, ops, ot, bk, rid, ct, ids=None, *, stripe_size: int = 64 << 20) -> None:
    """One ACID file from key arrays (row: id = ``ids`` or rowId, name = "r<id>"; none for deletes)."""
    n = len(rid)
    ops = np.broadcast_to(np.asarray(ops, np.int32), n)
    ids = np.asarray(rid if ids is None else ids, np.int64)
    names = pa.array([f"r{i}" for i in ids.tolist()], pa.string())
    row = pa.StructArray.from_arrays([pa.array(ids.astype(np.int32)), names], ["id", "name"], mask=pa.array(ops == 2))
    t = pa.table(
        {
            "operation": pa.array(ops),
            "originalTransaction": pa.array(np.broadcast_to(np.asarray(ot, np.int64), n)),
            "bucket": pa.array(np.broadcast_to(np.asarray(bk, np.int32), n)),
            "rowId": pa.array(np.asarray(rid, np.int64)),
            "currentTransaction": pa.array(np.broadcast_to(np.asarray(ct, np.int64), n)),
            "row": row,
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.parent / "_orc_acid_version").write_bytes(b"2")
    write_acid_file(TableFS(str(path.parent)), str(path), t, stripe_size=stripe_size)


BASE_ROWS = 150_000  # beyond the reader's small-file size: ORC's row reader, many batches


def build_history(root: Path) -> tuple[WriteIdList, dict]:
    """base_2 (write ids 1 and 2, many stripes) + a two-statement delta 3 + aborted write 4
    (inserts and a delete of base row 0) + delete delta 5 (every 7th row of write id 1, a row
    of each of delta 3's statements, a row of bucket 1) over two buckets. Returns the snapshot
    and the expected {(writeid, bucket, rowid): (id, name)}, by arithmetic."""
    n1 = BASE_ROWS - 1000
    rid = np.concatenate([np.arange(n1), np.arange(1000)])
    ot = np.concatenate([np.full(n1, 1), np.full(1000, 2)])
    _acid(root / "base_0000002/bucket_00000", 0, ot, B0, rid, ot, stripe_size=64 << 10)
    _acid(root / "base_0000002/bucket_00001", 0, [1] * 10, B1, np.arange(10), 1)
    _acid(root / "delta_0000003_0000003_0000/bucket_00000", 0, 3, B0, np.arange(50), 3, ids=np.arange(50) + 10_000)
    _acid(root / "delta_0000003_0000003_0001/bucket_00000", 0, 3, B0S1, np.arange(30), 3, ids=np.arange(30) + 20_000)
    _acid(root / "delta_0000004_0000004_0000/bucket_00000", 0, 4, B0, np.arange(5), 4, ids=np.arange(5) + 30_000)
    _acid(root / "delete_delta_0000004_0000004_0000/bucket_00000", 2, 1, B0, [0], 4)
    dels = np.arange(0, n1, 7)
    _acid(root / "delete_delta_0000005_0000005_0000/bucket_00000", 2, 1, B0, dels, 5)
    _acid(root / "delete_delta_0000005_0000005_0001/bucket_00000", 2, [3, 3], [B0, B0S1], [4, 29], 5)
    _acid(root / "delete_delta_0000005_0000005_0000/bucket_00001", 2, 1, B1, [3], 5)

    expected = {}
    gone = set(dels.tolist())
    for i in range(n1):
        if i not in gone:
            expected[(1, B0, i)] = (i, f"r{i}")
    for i in range(1000):
        expected[(2, B0, i)] = (i, f"r{i}")
    for i in range(50):
        if i != 4:
            expected[(3, B0, i)] = (10_000 + i, f"r{10_000 + i}")
    for i in range(29):  # row 29 deleted
        expected[(3, B0S1, i)] = (20_000 + i, f"r{20_000 + i}")
    for i in range(10):
        if i != 3:
            expected[(1, B1, i)] = (i, f"r{i}")
    return WriteIdList(table="db.t", hwm=5, open=(), aborted=(4,)), expected


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    root = tmp_path_factory.mktemp("hist") / "t"
    snapshot, expected = build_history(root)
    return root, snapshot, expected


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
@pytest.mark.parametrize("with_row_id", [True, False])
def test_streamed_equals_whole_bucket_byte_for_byte(history, tmp_path, fmt, with_row_id):
    root, snapshot, expected = history
    seen: dict = {}
    rep = export(root, tmp_path / "s", snapshot, seen=seen, format=fmt, with_row_id=with_row_id)
    export(root, tmp_path / "w", snapshot, whole=True, format=fmt, with_row_id=with_row_id)
    streamed, whole = file_bytes(tmp_path / "s"), file_bytes(tmp_path / "w")
    assert sorted(streamed) == [f"bucket_00000.{fmt}", f"bucket_00001.{fmt}"]
    assert streamed == whole
    assert rep["rows"] == len(expected)
    # streamed: no table of the merge bigger than a read batch
    assert max(seen["merged"]) <= 65536 and sum(seen["merged"]) == len(expected)
    assert seen["fallback"] == []
    if with_row_id:
        got = read_export(tmp_path / "s", fmt)
        assert got == {(None, *k): v for k, v in expected.items()}
        # ROW__ID order within each file (the spec's sort: writeid, bucket, rowid)
        keys = [k[1:] for k in got]
        assert keys == sorted(keys, key=lambda k: ((k[1] >> 16) & 0xFFF, k))  # bucket_00000 first


def test_many_stripe_bucket_reaches_the_writer_a_batch_at_a_time(tmp_path, monkeypatch):
    """Rows held: what the merge hands the writer per call is at most a read batch, the writer
    writes pieces of at most WRITE_ROWS; the whole-bucket reader is never used."""
    import acidctl.acid.read as R

    def no_whole_read(*a, **k):
        raise AssertionError("the whole-bucket path read a file")

    root = tmp_path / "t"
    n = 300_000
    _acid(root / "base_0000001/bucket_00000", 0, 1, B0, np.arange(n), 1, stripe_size=64 << 10)
    _acid(root / "delete_delta_0000002_0000002_0000/bucket_00000", 2, 1, B0, np.arange(0, n, 2), 2)
    monkeypatch.setattr(R, "read_events", no_whole_read)
    seen: dict = {}
    rep = export(root, tmp_path / "o", WriteIdList(table="db.t", hwm=2), seen=seen, with_row_id=True)
    assert rep["rows"] == n // 2
    assert len(seen["merged"]) >= n // 65536 and max(seen["merged"]) <= 65536
    assert sum(seen["write"]) == n // 2 and max(seen["write"]) <= WRITE_ROWS
    got = read_export(tmp_path / "o")
    assert list(got) == [(None, 1, B0, i) for i in range(1, n, 2)]


def out_of_key_order_table(root):
    """delta_1 (rows 0-9) in key order, delta_2 (rows 0-5) written out of key order, and a delete
    delta of delta_1's row 3 and delta_2's row 4; ids 0-9 and 100-105, names ``r<id>``."""
    _acid(root / "delta_0000001_0000001_0000/bucket_00000", 0, 1, B0, np.arange(10), 1)
    order = [5, 1, 4, 0, 3, 2]
    t = pa.table(
        {
            "operation": pa.array([0] * 6, pa.int32()),
            "originalTransaction": pa.array([2] * 6, pa.int64()),
            "bucket": pa.array([B0] * 6, pa.int32()),
            "rowId": pa.array(order, pa.int64()),
            "currentTransaction": pa.array([2] * 6, pa.int64()),
            "row": pa.StructArray.from_arrays(
                [pa.array([100 + r for r in order], pa.int32()), pa.array([f"r{100 + r}" for r in order])],
                ["id", "name"],
            ),
        }
    )
    (root / "delta_0000002_0000002_0000").mkdir()
    write_raw(root / "delta_0000002_0000002_0000/bucket_00000", t, good_metadata(t))
    _acid(root / "delete_delta_0000003_0000003_0000/bucket_00000", 2, [1, 2], B0, [3, 4], 3)
    return root


def test_file_out_of_key_order_falls_back_to_the_whole_bucket_merge(tmp_path):
    """delta_1 in order, then delta_2 written out of key order (no checks): the stream has
    already handed delta_1's rows to the writer when it meets delta_2; the file is written again
    from the whole merge, whose rows are sorted by key (orc-acid-files.md §5)."""
    root = out_of_key_order_table(tmp_path / "t")
    seen: dict = {}
    for fmt in ("parquet", "orc"):
        seen = {}
        export(root, tmp_path / fmt, WriteIdList(table="db.t", hwm=3), seen=seen, with_row_id=True, format=fmt)
        # streamed delta_1's 9 live rows, then the whole merge's 9 + 5
        assert seen["merged"] == [9, 14]
        assert seen["fallback"] == ["insert events out of key order"]
        expected = {(None, 1, B0, i): (i, f"r{i}") for i in range(10) if i != 3}
        expected.update({(None, 2, B0, r): (100 + r, f"r{100 + r}") for r in range(6) if r != 4})
        got = read_export(tmp_path / fmt, fmt)
        assert got == expected and list(got) == sorted(expected)
        export(root, tmp_path / f"w{fmt}", WriteIdList(table="db.t", hwm=3), whole=True, with_row_id=True, format=fmt)
        assert file_bytes(tmp_path / fmt) == file_bytes(tmp_path / f"w{fmt}")
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(h=partitioned_histories)
def test_random_histories_streamed_equal_model_and_whole_merge(h):
    """Random histories (originals, multi-statement transactions, aborted and open write ids,
    deletes and updates, 1-3 buckets and partitions): the streamed export holds the reference
    model's rows and equals the whole-bucket export byte for byte."""
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "t"
        root.mkdir()
        expected = h.play_table(root)
        for fmt in ("parquet", "orc"):
            seen: dict = {}
            export(root, Path(d) / f"s{fmt}", h.snapshot(), with_row_id=True, format=fmt, seen=seen)
            assert seen["fallback"] == []  # files written by Hive's rules stream
            export(root, Path(d) / f"w{fmt}", h.snapshot(), whole=True, with_row_id=True, format=fmt)
            assert read_export(Path(d) / f"s{fmt}", fmt) == expected
            assert file_bytes(Path(d) / f"s{fmt}") == file_bytes(Path(d) / f"w{fmt}")


def test_row_id_digest_does_not_depend_on_chunks():
    """The verification's digest of the row__id column is the same however the rows are
    chunked (written in pieces, read back by batches / stripes), and differs for another order."""
    from acidctl.export import _KeyDigest

    rid = pa.StructArray.from_arrays(
        [pa.array(np.arange(10), pa.int64()), pa.array([B0] * 10, pa.int32()), pa.array(np.arange(10), pa.int64())],
        ["writeid", "bucketid", "rowid"],
    )
    a, b, c = _KeyDigest(), _KeyDigest(), _KeyDigest()
    a.add(rid)
    b.add(pa.chunked_array([rid.slice(0, 3), rid.slice(3, 4), rid.slice(7)]))
    c.add(pa.chunked_array([rid.slice(5), rid.slice(0, 5)]))
    assert a.hexdigest() == b.hexdigest() != c.hexdigest()


FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixtures"


def _fixture_tables(tmp: Path) -> dict[str, Path]:
    """Table directories made of the fixtures: Trino's Hive-written nation file (5 stripes) with
    its delete deltas; Hive-written original files of three buckets with ``_copy_N`` files and a
    delete delta; pyorc's every-ORC-type file and its 300,000-row 8-stripe file as bases."""
    import shutil

    from tests.compact.helpers import nation_table

    out = {"nation": nation_table(tmp)}
    dummy = tmp / "dummy"
    shutil.copytree(FIXTURES / "real" / "trino" / "dummy_id_data_orc", dummy)
    out["originals"] = dummy
    for name in ("alltypes", "alltypes_multistripe"):
        base = tmp / name / "base_0000001"
        base.mkdir(parents=True)
        shutil.copy(FIXTURES / "golden" / name / "bucket_00000", base / "bucket_00000")
        out[name] = tmp / name
    return out


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_fixture_tables_streamed_equal_whole_bucket(tmp_path, fmt):
    """Real files (Hive-written, every ORC type, many stripes, originals): the streamed export
    writes the whole-bucket merge's bytes, or both fail with the same one-line error (a
    uniontype has no Parquet equivalent)."""
    from acidctl.errors import AcidctlError

    snapshot = WriteIdList.all_committed(20_000_000, table="db.t")
    for name, root in _fixture_tables(tmp_path / "src").items():
        got = []
        for whole in (False, True):
            dest = tmp_path / f"{name}-{fmt}-{whole}"
            try:
                rep = export(root, dest, snapshot, whole=whole, with_row_id=True, format=fmt)
                got.append(("ok", rep["rows"], file_bytes(dest)))
            except AcidctlError as e:
                got.append(("error", type(e).__name__, str(e)))
        assert got[0] == got[1], name
        if name == "nation":
            assert got[0][1] == 23000  # stated by the fixture's origin


def test_year_one_timestamp_is_a_one_line_error(tmp_path, cli):
    """The every-type fixture holds 0001-01-01 timestamps, which Arrow's nanosecond timestamps
    cannot hold: exit 7 (invalid input) with one line naming the bucket, not a traceback, and
    nothing left beside DEST (it was a traceback)."""
    root = _fixture_tables(tmp_path / "src")["alltypes"]
    r = cli("export", root, tmp_path / "out", "--write-ids", "db.alltypes:20:9223372036854775807::", "--to", "orc")
    assert r.code == 7, r
    assert "Traceback" not in r.stderr and "cannot export bucket 0" in r.stderr
    assert "out of range" in r.stderr.splitlines()[0] and "error" in r.stderr.splitlines()[0]
    assert not (tmp_path / "out").exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_event_of_another_bucket_mid_stream_falls_back_without_crashing(tmp_path):
    """The 8-stripe fixture's bucket_00000 holds 200,000 events of bucket 0, then 100,000 of
    bucket 1 (spec F09): the stream has written pieces to an open ORC writer when it meets
    them; the writer is closed before its file (an ORC writer closed by the garbage collector
    after its file aborts the process) and the whole merge writes the bucket: the file's
    300,000 keys, sorted (orc-acid-files.md §5; all inserts, no deletes)."""
    import pyarrow.orc as po

    root = _fixture_tables(tmp_path / "src")["alltypes_multistripe"]
    f = po.read_table(root / "base_0000001" / "bucket_00000")
    keys = sorted(zip(*(f.column(c).to_pylist() for c in ("originalTransaction", "bucket", "rowId"))))
    seen: dict = {}
    for fmt in ("orc", "parquet"):
        seen = {}
        rep = export(
            root, tmp_path / fmt, WriteIdList.all_committed(2, table="db.t"), seen=seen, with_row_id=True, format=fmt
        )
        assert rep["rows"] == 300_000
        assert seen["merged"][-1] == 300_000 and sum(seen["merged"][:-1]) >= WRITE_ROWS
        assert seen["fallback"] == ["an insert event of another bucket than 0"]
        assert [k[1:] for k in read_export(tmp_path / fmt, fmt)] == keys


def test_insert_only_export_failing_after_rows_were_written_does_not_abort(tmp_path, cli):
    """An insert-only table whose second file is not ORC: the ORC output has rows in it when
    the read fails; the writer is closed before its file (else the process aborts), the
    error is one line and nothing is left beside DEST."""
    from tests.mm import hivelayout as H

    root = H.build(
        tmp_path / "t",
        "orc",
        {
            "delta_0000001_0000001_0000": {"000000_0": [H.row(1), H.row(2)]},
            "delta_0000002_0000002_0000": {"000000_0": [H.row(3)]},
        },
    )
    (root / "delta_0000002_0000002_0000" / "000000_0").write_bytes(b"ORC" + b"\0" * 64)
    r = cli(
        "export",
        root,
        tmp_path / "out",
        "--to",
        "orc",
        "--format",
        "orc",
        "--write-ids",
        "default.t:2:9223372036854775807::",
    )
    assert r.code == 7, r
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
