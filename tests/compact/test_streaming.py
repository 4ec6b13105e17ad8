"""The streaming task path (acidctl/compact/task.py): taken when a bucket's insert sources are
in key order, falls back to the whole-bucket path otherwise, and writes the same events as the
whole-bucket path (checked on random histories, the fixture tables and multi-stripe inputs)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pytest
from hypothesis import HealthCheck, given, settings

from acidctl.acid.read import Source, read_events
from acidctl.compact import sources
from acidctl.compact import task as task_mod
from acidctl.fs import TableFS
from acidctl.orc import footer, writer
from acidctl.orc.reader import OrcFile
from tests.compact.helpers import compact, fixture_tables, merged, state_errors
from tests.histories import V1, _write_acid, histories

P0 = V1 | 0  # bucket 0, statement 0
METRICS = ("rows_in", "delete_events_in", "rows_out", "delete_events_out", "deletes_applied", "aborted_dropped")


class _Paths:
    """Records which path each task took; ``force_whole`` disables streaming."""

    def __init__(self, monkeypatch, *, force_whole=False):
        self.taken = []
        real = task_mod._run

        def run(t):
            out = task_mod._run_whole(t) if force_whole else real(t)
            self.taken.append(out["path"])  # the task's metrics say which path ran
            return out

        monkeypatch.setattr(task_mod, "_run", run)


def _outputs(root: Path) -> dict:
    """{relative path of every bucket file: its events} of the table's current directories."""
    out = {}
    tfs = TableFS(str(root))
    for f in sorted(root.rglob("bucket_*")):
        if any(p.startswith(".") for p in f.relative_to(root).parts):
            continue
        out[str(f.relative_to(root))] = read_events(tfs, Source(str(f), 0))
    return out


def _metrics(rep) -> list:
    return [{k: p[k] for k in METRICS} for p in rep["partitions"]]


def _both(monkeypatch, build, mode, wids, **kw):
    """Compact two copies, streaming allowed / forced whole; return (paths taken, reports, outputs)."""
    with monkeypatch.context() as mp:
        paths = _Paths(mp)
        ra = compact(build("a"), mode, wids, **kw)
    with monkeypatch.context() as mp:
        _Paths(mp, force_whole=True)
        rb = compact(build("b"), mode, wids, **kw)
    return paths.taken, ra, rb


def _assert_same_outputs(a: Path, b: Path):
    oa, ob = _outputs(a), _outputs(b)
    assert sorted(oa) == sorted(ob)
    for k in oa:
        assert oa[k].equals(ob[k]), k
    assert not [p for p in a.rglob(".*") if p.is_file() and p.name.startswith(".bucket_")]


# -- (a) which path ----------------------------------------------------------------------------


def _events(ot, rids, ct=None, op=0, bucket=P0):
    return [(op, ot, bucket, r, ct if ct is not None else ot, (int(r), f"r{r}")) for r in rids]


def _ordinary(root: Path) -> Path:
    _write_acid(root / "base_0000001" / "bucket_00000", _events(1, range(10)))
    _write_acid(root / "delta_0000002_0000002_0000" / "bucket_00000", _events(2, range(5)))
    _write_acid(root / "delta_0000003_0000003_0000" / "bucket_00000", _events(3, range(3)))
    _write_acid(
        root / "delete_delta_0000004_0000004_0000" / "bucket_00000", [(2, 1, P0, 4, 4, None), (2, 2, P0, 1, 4, None)]
    )
    return root


def _overlapping(root: Path) -> Path:
    # delta 2 holds an event keyed below delta 1's last key: the ranges overlap
    _write_acid(root / "delta_0000001_0000001_0000" / "bucket_00000", _events(1, [0, 1, 10]))
    _write_acid(root / "delta_0000002_0000002_0000" / "bucket_00000", _events(1, [5], ct=2) + _events(2, [0]))
    return root


def _unsorted_inside(root: Path) -> Path:
    # first and last keys look fine, but the file is not sorted inside
    _write_acid(root / "delta_0000001_0000001_0000" / "bucket_00000", _events(1, [0, 1]))
    d = root / "delta_0000002_0000002_0000"
    d.mkdir(parents=True)
    (d / "_orc_acid_version").write_bytes(b"2")
    ev = _events(2, [0, 7, 3, 9])
    t = pa.table(
        {
            "operation": pa.array([e[0] for e in ev], pa.int32()),
            "originalTransaction": pa.array([e[1] for e in ev], pa.int64()),
            "bucket": pa.array([e[2] for e in ev], pa.int32()),
            "rowId": pa.array([e[3] for e in ev], pa.int64()),
            "currentTransaction": pa.array([e[4] for e in ev], pa.int64()),
            "row": pa.StructArray.from_arrays(
                [pa.array([e[5][0] for e in ev], pa.int32()), pa.array([e[5][1] for e in ev])], ["id", "name"]
            ),
        }
    )
    po.write_table(t, str(d / "bucket_00000"))
    return root


@pytest.mark.parametrize("mode", ["major", "minor"])
@pytest.mark.parametrize("build,expect", [(_ordinary, "stream"), (_overlapping, "whole"), (_unsorted_inside, "whole")])
def test_path_taken_and_same_result(tmp_path, monkeypatch, mode, build, expect):
    wids = "db.t:4:9223372036854775807::"
    roots = {}

    def make(n):
        roots[n] = build(tmp_path / n)
        return roots[n]

    taken, ra, rb = _both(monkeypatch, make, mode, wids, engine="local")
    if expect == "whole" and mode == "minor" and build is _ordinary:
        expect = "stream"
    assert taken and set(taken) == {expect}
    assert _metrics(ra) == _metrics(rb)
    _assert_same_outputs(roots["a"], roots["b"])
    assert merged(roots["a"], wids) == merged(roots["b"], wids)


def test_original_files_stream_with_synthetic_ids(tmp_path, monkeypatch):
    """Original (raw) files stream with synthetic row ids counted across files; an ACID-named
    directory holding a plain (non-ACID) ORC file cannot stream and is read whole."""
    wids = "db.t:4:9223372036854775807::"

    def raw(root):
        for name, ids in (("000000_0", [1, 2, 3]), ("000000_0_copy_1", [4, 5])):
            root.mkdir(parents=True, exist_ok=True)
            po.write_table(pa.table({"id": pa.array(ids, pa.int32())}), str(root / name))
        return root

    roots = {}
    taken, ra, rb = _both(monkeypatch, lambda n: roots.setdefault(n, raw(tmp_path / n)), "major", wids, engine="local")
    assert taken == ["stream"]
    _assert_same_outputs(roots["a"], roots["b"])
    # synthetic ids: write id 0, bucket 0, rows 0..4 in file order (orc-acid-files.md: originals)
    [out] = [v for k, v in _outputs(roots["a"]).items() if k.startswith("base_")]
    assert out.column("rowId").to_pylist() == [0, 1, 2, 3, 4]
    assert [r["id"] for r in out.column("row").to_pylist()] == [1, 2, 3, 4, 5]

    tfs = TableFS(str(tmp_path))
    plain = tmp_path / "p" / "delta_0000001_0000001_0000" / "bucket_00000"
    plain.parent.mkdir(parents=True)
    po.write_table(pa.table({"id": pa.array([1], pa.int32())}), str(plain))
    with pytest.raises(task_mod.transform.NotStreamable):
        list(sources.stream_events(tfs, [Source(str(plain), 0)]))


# -- (b) random histories and fixture tables ---------------------------------------------------


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(h=histories)
def test_random_histories_same_as_whole_bucket(monkeypatch, h):
    with tempfile.TemporaryDirectory() as d:
        roots = {}

        def make(n):
            roots[n] = Path(d) / n
            roots[n].mkdir()
            h.play(roots[n])
            return roots[n]

        snap = h.snapshot()
        wids = str(snap)
        taken, ra, rb = _both(monkeypatch, make, "minor", wids, engine="local")
        assert _metrics(ra) == _metrics(rb)
        _assert_same_outputs(roots["a"], roots["b"])
        for mode in ("major",):
            with monkeypatch.context() as mp:
                p = _Paths(mp)
                ra = compact(roots["a"], mode, wids, engine="local")
            with monkeypatch.context() as mp:
                _Paths(mp, force_whole=True)
                rb = compact(roots["b"], mode, wids, engine="local")
            taken += p.taken
            assert _metrics(ra) == _metrics(rb)
            _assert_same_outputs(roots["a"], roots["b"])
        assert state_errors(roots["a"], wids) == []
        # histories are written as Hive writes them: every task streams
        assert set(taken) <= {"stream"}


@pytest.mark.parametrize("mode", ["major", "minor"])
def test_fixture_tables_same_as_whole_bucket(tmp_path, monkeypatch, mode):
    a = fixture_tables(tmp_path / "a")
    b = fixture_tables(tmp_path / "b")
    for (name, ra_root, wids, cols), (_, rb_root, _, _) in zip(a, b):
        with monkeypatch.context() as mp:
            p = _Paths(mp)
            ra = compact(ra_root, mode, wids, engine="local", columns=cols)
        with monkeypatch.context() as mp:
            _Paths(mp, force_whole=True)
            rb = compact(rb_root, mode, wids, engine="local", columns=cols)
        assert _metrics(ra) == _metrics(rb), name
        _assert_same_outputs(ra_root, rb_root)
        if p.taken:
            assert "stream" in p.taken, name


# -- (c) multi-stripe input and output -------------------------------------------------------


def _big(root: Path, n: int, stripe: int) -> Path:
    rng = np.random.default_rng(7)

    def table(ot, rids, ct, op=0, rows=True):
        m = len(rids)
        row = (
            pa.StructArray.from_arrays(
                [pa.array(rids.astype(np.int32)), pa.array([f"name-{i}-{'x' * (i % 17)}" for i in rids.tolist()])],
                ["id", "name"],
            )
            if rows
            else pa.array([None] * m, pa.struct([("id", pa.int32()), ("name", pa.string())]))
        )
        return pa.table(
            {
                "operation": pa.array(np.full(m, op, np.int32)),
                "originalTransaction": pa.array(np.full(m, ot, np.int64)),
                "bucket": pa.array(np.full(m, P0, np.int32)),
                "rowId": pa.array(rids.astype(np.int64)),
                "currentTransaction": pa.array(np.full(m, ct, np.int64)),
                "row": row,
            }
        )

    def put(rel, t):
        p = root / rel / "bucket_00000"
        p.parent.mkdir(parents=True, exist_ok=True)
        (p.parent / "_orc_acid_version").write_bytes(b"2")
        writer.write_acid_file(TableFS(str(p.parent)), str(p), t, stripe_size=stripe)

    put("base_0000001", table(1, np.arange(n), 1))
    put("delta_0000002_0000002_0000", table(2, np.arange(n // 2), 2))
    put("delta_0000003_0000003_0000", table(3, np.arange(n // 4), 3))  # aborted below
    dels = np.sort(rng.choice(n, size=n // 50, replace=False))
    put("delete_delta_0000004_0000004_0000", table(1, dels, 4, op=2, rows=False))
    return root


@pytest.mark.parametrize("mode", ["major", "minor"])
def test_multi_stripe_streams_and_key_index_matches(tmp_path, monkeypatch, mode):
    stripe = 64 << 10
    wids = "db.t:4:9223372036854775807::3"
    roots = {}

    def make(n):
        roots[n] = _big(tmp_path / n, 60_000, stripe)
        return roots[n]

    with OrcFile(TableFS(str(tmp_path)), str(make("probe") / "base_0000001" / "bucket_00000")) as f:
        assert f.num_stripes() > 1
    monkeypatch.setattr(writer, "BASE_STRIPE_SIZE", stripe)
    monkeypatch.setattr(writer, "DELTA_STRIPE_SIZE", stripe)
    taken, ra, rb = _both(monkeypatch, make, mode, wids, engine="local")
    assert set(taken) == {"stream"}
    assert _metrics(ra) == _metrics(rb)
    _assert_same_outputs(roots["a"], roots["b"])
    assert merged(roots["a"], wids) == merged(roots["b"], wids) == merged(roots["probe"], wids)
    outs = [
        p
        for p in roots["a"].rglob("bucket_00000")
        if p.parent.name in ("base_0000004", "delta_0000002_0000004", "delete_delta_0000002_0000004")
    ]
    assert len(outs) == (1 if mode == "major" else 2), sorted(str(p) for p in roots["a"].rglob("bucket_*"))
    for p in outs:
        tail = footer.read_tail_file(str(p))
        counts = tail.stripe_rows()
        with OrcFile(TableFS(str(p.parent)), str(p)) as f:
            if p.parent.name.startswith("base_"):
                assert len(counts) > 1
            lasts = []
            for i in range(f.num_stripes()):
                b = f.read_stripe_arrow(i, columns=["originalTransaction", "bucket", "rowId"])
                lasts.append("%d,%d,%d;" % tuple(b.column(j)[b.num_rows - 1].as_py() for j in range(3)))
            assert f.user_metadata["hive.acid.key.index"].decode() == "".join(lasts)
            ev = read_events(TableFS(str(p.parent)), Source(str(p), 0))
            ops = ev.column("operation").to_numpy()
            assert (
                f.user_metadata["hive.acid.stats"].decode()
                == f"{(ops == 0).sum()},{(ops == 1).sum()},{(ops == 2).sum()}"
            )


def test_streaming_writer_equals_encode(tmp_path):
    n = 50_000
    t = pa.table(
        {
            "operation": pa.array(np.zeros(n, np.int32)),
            "originalTransaction": pa.array(np.ones(n, np.int64)),
            "bucket": pa.array(np.full(n, P0, np.int32)),
            "rowId": pa.array(np.arange(n)),
            "currentTransaction": pa.array(np.ones(n, np.int64)),
            "row": pa.StructArray.from_arrays(
                [pa.array(np.arange(n)), pa.array(np.random.default_rng(1).random(n))], ["id", "x"]
            ),
        }
    )
    tfs = TableFS(str(tmp_path))
    path = str(tmp_path / "d" / "bucket_00000")
    with writer.AcidFileWriter(tfs, path, stripe_size=32 << 10) as w:
        for b in t.to_batches(max_chunksize=7000):
            w.write(b)
        info = w.close()
    assert info.rows == n and info.stripes > 1 and info.stats == (n, 0, 0)
    assert info.key_index.endswith(f"1,{P0},{n - 1};") and info.key_index.count(";") == info.stripes
    assert read_events(tfs, Source(path, 0)).equals(t)
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["bucket_00000"]
    # out of order across batches: refused, nothing left behind
    with pytest.raises(Exception, match="strictly increasing"):
        with writer.AcidFileWriter(tfs, str(tmp_path / "e" / "bucket_00000")) as w:
            w.write(t.slice(10, 5))
            w.write(t.slice(0, 5))
    assert list((tmp_path / "e").iterdir()) == []


def test_batches_fall_back_to_stripes(tmp_path, monkeypatch):
    import pyarrow.dataset as ds

    root = _big(tmp_path / "t", 20_000, 32 << 10)
    path = str(root / "base_0000001" / "bucket_00000")
    tfs = TableFS(str(root))
    whole = read_events(tfs, Source(path, 0))
    monkeypatch.setattr(sources, "BATCH_ROWS", 3000)
    with OrcFile(tfs, path) as f:
        assert f.num_stripes() > 1
        fast = list(sources.batches(f))
    assert max(b.num_rows for b in fast) <= 3000

    class Broken:
        def make_fragment(self, src):
            raise OSError("no dataset reader")

    monkeypatch.setattr(ds, "OrcFileFormat", Broken)
    with OrcFile(tfs, path) as f:
        slow = list(sources.batches(f))
    assert max(b.num_rows for b in slow) <= 3000
    for got in (fast, slow):
        assert pa.Table.from_batches(got).rename_columns(whole.column_names).equals(whole)


def _acid_table(ot: int, rids, *, x: float = 0.5, int_id: bool = True) -> pa.Table:
    n = len(rids)
    ids = pa.array(np.asarray(rids, np.int64)) if int_id else pa.array([str(r) for r in rids])
    return pa.table(
        {
            "operation": pa.array(np.zeros(n, np.int32)),
            "originalTransaction": pa.array(np.full(n, ot, np.int64)),
            "bucket": pa.array(np.full(n, P0, np.int32)),
            "rowId": pa.array(np.asarray(rids, np.int64)),
            "currentTransaction": pa.array(np.full(n, ot, np.int64)),
            "row": pa.StructArray.from_arrays([ids, pa.array(np.full(n, x))], ["id", "x"]),
        }
    )


def test_coalesced_groups_small_tables_in_order():
    """Small tables are grouped up to the row target, in order, with nothing lost or
    duplicated; a table of another schema starts a group of its own."""
    small = [_acid_table(w, range(10 * w, 10 * w + 7)) for w in range(1, 9)]  # 8 × 7 rows
    other = _acid_table(9, range(3), int_id=False)  # row.id is a string: another schema
    tail = [_acid_table(10, range(5)), _acid_table(11, range(5))]
    got = list(sources.coalesced(iter(small + [other] + tail), rows=20))
    # 7+7+7 reaches 20: three groups of three, three, two, then the string one, then the tail
    assert [t.num_rows for t in got] == [21, 21, 14, 3, 10]
    assert [t.schema.field("row").type.field("id").type for t in got] == [pa.int64()] * 3 + [pa.string(), pa.int64()]
    assert pa.concat_tables(got[:3]).to_pylist() == pa.concat_tables(small).to_pylist()
    assert got[3].to_pylist() == other.to_pylist()
    assert got[4].to_pylist() == pa.concat_tables(tail).to_pylist()
    big = _acid_table(1, range(50))
    assert [t.num_rows for t in sources.coalesced(iter([big, big.slice(0, 1)]), rows=20)] == [50, 1]
    assert list(sources.coalesced(iter([]))) == []


def test_writer_writes_a_many_chunk_table_as_its_chunks(tmp_path):
    """A table of several chunks (small deltas grouped by sources.coalesced) is written byte
    for byte as writing its chunks one by one (stripe boundaries are decided per batch given
    to ORC's writer); one ORC write call of the whole table cuts other stripes."""
    import pyarrow.orc as po

    rng = np.random.default_rng(7)
    sizes = [3 * n for n in (2500, 700, 4100, 333, 3000, 1999, 5000, 801)]
    chunks, start = [], 0
    for n in sizes:
        t = _acid_table(1, range(start, start + n), x=0.0)
        t = t.set_column(
            5,
            "row",
            pa.StructArray.from_arrays([t["row"].combine_chunks().field(0), pa.array(rng.random(n))], ["id", "x"]),
        )
        chunks.append(t)
        start += n
    tfs = TableFS(str(tmp_path))
    stripe = 32 << 10

    def written(name, pieces):
        path = str(tmp_path / name / "bucket_00000")
        with writer.AcidFileWriter(tfs, path, stripe_size=stripe) as w:
            for p in pieces:
                w.write(p)
            info = w.close()
        return (tmp_path / name / "bucket_00000").read_bytes(), info

    one_by_one, info = written("a", chunks)
    grouped, _ = written("b", [pa.concat_tables(chunks)])
    assert info.stripes > 1
    assert grouped == one_by_one
    # the oracle that the per-chunk write matters: ORC's writer given the whole table at once
    # cuts the stripes elsewhere than given the chunks one by one

    def stripes(pieces):
        sink = pa.BufferOutputStream()
        w = po.ORCWriter(
            sink,
            stripe_size=stripe,
            compression="zlib",
            file_version="0.12",
            compression_block_size=256 * 1024,
            row_index_stride=10000,
        )
        for p in pieces:
            w.write(p)
        w.close()
        return po.ORCFile(pa.BufferReader(sink.getvalue())).nstripes, sink.getvalue().to_pybytes()

    assert stripes(chunks) != stripes([pa.concat_tables(chunks)])
