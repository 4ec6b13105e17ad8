"""``dump --merged`` streams (issue #14): the k-way merge of a partition's files gives exactly
the rows of the reference model (tests/histories.py, nothing from acidctl) in ROW__ID order,
whatever the batch size; ``--limit`` gives the first N of them; a file out of key order falls
back to the sorted whole-partition read; a partition given as a path keeps its columns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from acidctl.acid.acidstate import get_acid_state
from acidctl.acid.layout import list_table
from acidctl.acid.read import stream_partition
from acidctl.fs import TableFS
from tests.acidfiles import acid_file
from tests.histories import History, Statement, Txn, partitioned_histories

ALL = "9223372036854775807"
ROW = (
    "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
    "row:struct<id:int,name:string>>"
)
B0, B1 = 1 << 29, (1 << 29) | (1 << 16)


def _streamed(root: Path, snap, batch_rows: int) -> list[tuple]:
    out = []
    tfs = TableFS(str(root))
    for listing in list_table(tfs):
        state = get_acid_state(listing, snap)
        for t in stream_partition(tfs, listing, state, batch_rows=batch_rows):
            rows = t.column("row").combine_chunks()
            for o, b, r, i, n in zip(
                t.column("originalTransaction").to_pylist(),
                t.column("bucket").to_pylist(),
                t.column("rowId").to_pylist(),
                rows.field(0).to_pylist(),
                rows.field(1).to_pylist(),
            ):
                out.append((listing.partition, o, b, r, (i, n)))
    return out


def _expected(model: dict) -> list[tuple]:
    """The model's rows, partitions in path order, each in (writeid, bucket signed, rowid) order."""
    return [(*k, tuple(v)) for k, v in sorted(model.items(), key=lambda kv: (kv[0][0] or "", kv[0][1:]))]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(partitioned_histories)
def test_streamed_merge_is_the_model_in_row_id_order(tmp_path_factory, h: History):
    root = tmp_path_factory.mktemp("t")
    model = h.play_table(root)
    snap = h.snapshot()
    want = _expected(model)
    for batch_rows in (1, 2, 7, 65536):
        assert _streamed(root, snap, batch_rows) == want, batch_rows


def _many_files(root: Path) -> dict:
    """Two buckets, a base and interleaving deltas, deletes in both buckets: rows of different
    files alternate in ROW__ID order."""
    model = {}
    base = root / "base_0000002"
    for b, prop in ((0, B0), (1, B1)):
        ev = [(0, w, prop, r, w, (w * 100 + b * 10 + r, f"b{w}-{b}-{r}")) for w in (1, 2) for r in range(4)]
        acid_file(base / f"bucket_{b:05d}", ROW, ev)
        model.update({(w, prop, r): row for _, w, _, r, _, row in ev})
    (base / "_metadata_acid").write_text('{"thisFileVersion":"0","dataFormat":"compacted"}')
    for w in (3, 4, 5):
        for b, prop in ((0, B0), (1, B1)):
            ev = [(0, w, prop, r, w, (w * 100 + b * 10 + r, f"d{w}-{b}-{r}")) for r in range(3)]
            acid_file(root / f"delta_{w:07d}_{w:07d}_0000" / f"bucket_{b:05d}", ROW, ev)
            model.update({(w, prop, r): row for _, w, _, r, _, row in ev})
    dels = [(1, B0, 2), (2, B1, 0), (4, B0, 1), (5, B1, 2)]
    for b, prop in ((0, B0), (1, B1)):
        ev = [(2, o, p, r, 6, None) for o, p, r in dels if p == prop]
        acid_file(root / "delete_delta_0000006_0000006_0000" / f"bucket_{b:05d}", ROW, ev)
    for o, p, r in dels:
        del model[(o, p, r)]
    return model


def _cli_rows(cli, path, *extra) -> list[dict]:
    r = cli("-o", "json", "dump", "--merged", "--write-ids", f"db.t:6:{ALL}::", *extra, str(path))
    assert r.code == 0, r
    return [json.loads(x) for x in r.stdout.splitlines()]


def test_limit_gives_the_first_rows_in_row_id_order(cli, tmp_path):
    model = _many_files(tmp_path / "t")
    order = sorted(model)
    rows = _cli_rows(cli, tmp_path / "t")
    assert [(r["row__id"]["writeid"], r["row__id"]["bucketid"], r["row__id"]["rowid"]) for r in rows] == order
    assert [r["id"] for r in rows] == [model[k][0] for k in order]
    for n in (1, 5, 13):
        got = _cli_rows(cli, tmp_path / "t", "--limit", str(n))
        assert [r["id"] for r in got] == [model[k][0] for k in order[:n]]


def test_a_file_out_of_key_order_is_read_sorted(cli, tmp_path):
    t = tmp_path / "t"
    # rows inside the file not in rowId order (not Hive's), and a delta whose name promises
    # write ids >= 3 holding write id 1 events (a copy under the wrong name)
    acid_file(
        t / "delta_0000001_0000001_0000" / "bucket_00000", ROW, [(0, 1, B0, r, 1, (r, f"r{r}")) for r in (3, 0, 2, 1)]
    )
    acid_file(
        t / "delta_0000003_0000003_0000" / "bucket_00001", ROW, [(0, 1, B1, r, 1, (10 + r, f"s{r}")) for r in range(2)]
    )
    rows = _cli_rows(cli, t)
    assert [(r["row__id"]["writeid"], r["row__id"]["bucketid"], r["row__id"]["rowid"]) for r in rows] == [
        (1, B0, 0),
        (1, B0, 1),
        (1, B0, 2),
        (1, B0, 3),
        (1, B1, 0),
        (1, B1, 1),
    ]


@pytest.mark.parametrize("as_path", [True, False])
def test_partition_path_keeps_the_partition_column(cli, tmp_path, as_path):
    h = History(
        buckets=2,
        originals=[],
        partitions=2,
        txns=[Txn("committed", [Statement("insert", [1, 2, 3], [], part=0), Statement("insert", [4, 5], [], part=1)])],
    )
    root = tmp_path / "t"
    h.play_table(root)
    target = root / "p=1" if as_path else root
    r = cli("-o", "json", "dump", "--merged", "--write-ids", f"db.t:1:{ALL}::", str(target))
    assert r.code == 0, r
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    want = {("1", 4), ("1", 5)} | (set() if as_path else {("0", 1), ("0", 2), ("0", 3)})
    assert {(x["p"], x["id"]) for x in rows} == want
