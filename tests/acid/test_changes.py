"""``acidctl changes`` against an independent model of the event log: tests/histories.py replays
random histories and logs, per committed transaction, which rows it deleted (with their values)
and which it inserted (with their ROW__IDs); nothing in the expectations comes from acidctl.

The documented rules checked here: the write ids of --from-write-id A .. --to-write-id B (default
the high-water mark) that are committed in the snapshot; order by write id, deletes before
inserts, partition, ROW__ID; a delete carries the deleted row's values; --key pairs a delete and
an insert of one write id and partition with equal key values (the n-th with the n-th); minor
compactions keep the events; after a major compaction into base_N, exit 6 naming N + 1.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from tests.histories import History, Statement, Txn, histories, partitioned_histories
from tests.histories import histories_of

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))


def expected(log: list, lo: int, hi: int, *, key: bool = False) -> list[dict]:
    """The change rows the documented rules give for the model's event log."""
    rank = {"delete": 0, "insert": 1}
    evs = sorted(
        (e for e in log if lo <= e[1] <= hi),
        key=lambda e: (e[1], rank[e[0]], e[2] or "", e[3]),
    )
    out = []
    for kind, w, part, (ot, bk, rid), (v, name) in evs:
        d: dict = {"_change_type": kind, "_commit_version": w, "row__id": {"writeid": ot, "bucketid": bk, "rowid": rid}}
        if part is not None:
            d["p"] = part.split("=", 1)[1]
        d.update(id=v, name=name)
        out.append(d)
    if key:  # within a write id and a partition, the n-th delete and the n-th insert of an id pair up
        waiting: dict = {}
        for d in out:
            if d["_change_type"] == "delete":
                waiting.setdefault((d["_commit_version"], d.get("p"), d["id"]), []).append(d)
        for d in out:
            k = (d["_commit_version"], d.get("p"), d["id"])
            if d["_change_type"] == "insert" and waiting.get(k):
                waiting[k].pop(0)["_change_type"] = "update_preimage"
                d["_change_type"] = "update_postimage"
    return out


def lines(stdout: str) -> list[dict]:
    return [json.loads(x) for x in stdout.splitlines() if x.strip()]


def play(h: History) -> tuple[Path, list, str]:
    root = Path(tempfile.mkdtemp(prefix="chg-")) / "t"
    root.mkdir()
    log: list = []
    h.play_table(root, log=log)
    return root, log, str(h.snapshot())


def _range(data, h: History) -> tuple[int, int | None]:
    hwm = len(h.txns)
    lo = data.draw(st.integers(1, hwm), label="from")
    hi = data.draw(st.one_of(st.none(), st.integers(lo, hwm)), label="to")
    return lo, hi


@pytest.mark.parametrize("strategy", [histories, partitioned_histories], ids=["unpartitioned", "partitioned"])
def test_changes_match_the_event_log(cli, strategy):
    @SETTINGS
    @given(h=strategy, data=st.data(), key=st.booleans())
    def run(h, data, key):
        root, log, snap = play(h)
        try:
            lo, hi = _range(data, h)
            args = ["changes", str(root), "--from-write-id", str(lo), "--write-ids", snap]
            if hi is not None:
                args += ["--to-write-id", str(hi)]
            if key:
                args += ["--key", "ID"]  # any letter case
            args += ["--hive-version", data.draw(st.sampled_from(["3", "4"]), label="hive")]
            part = data.draw(st.one_of(st.none(), st.integers(0, h.partitions - 1)), label="--partition")
            if h.partitions > 1 and part is not None:
                args += ["--partition", f"p={part}"]
                log = [e for e in log if e[2] == f"p={part}"]
            r = cli(*args)
            assert r.code == 0, r
            assert lines(r.stdout) == expected(log, lo, hi if hi is not None else len(h.txns), key=key)
        finally:
            shutil.rmtree(root.parent)

    run()


def _compactor_hwm(h: History) -> int:
    """The compactor's high-water mark (spec essential 13): below the lowest open write id."""
    opened = [i + 1 for i, t in enumerate(h.txns) if t.state == "open"]
    return min(opened) - 1 if opened else len(h.txns)


@SETTINGS
@given(h=partitioned_histories, data=st.data())
def test_changes_survive_minor_compaction_and_clean(h, data):
    from tests.conftest import run_cli as cli

    root, log, snap = play(h)
    try:
        r = cli("compact", "--minor", "--engine", "local", "--allow-non-atomic-publish", "--write-ids", snap, str(root))
        assert r.code == 0, r
        r = cli("clean", "--execute", "--min-age", "0", "--write-ids", snap, str(root))
        assert r.code == 0, r
        lo, hi = _range(data, h)
        args = ["changes", str(root), "--from-write-id", str(lo), "--write-ids", snap]
        if hi is not None:
            args += ["--to-write-id", str(hi)]
        r = cli(*args)
        assert r.code == 0, r
        assert lines(r.stdout) == expected(log, lo, hi if hi is not None else len(h.txns))
    finally:
        shutil.rmtree(root.parent)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(h=histories)
def test_major_compaction_refuses_with_the_lowest_derivable_write_id(h):
    from tests.conftest import run_cli as cli

    root, log, snap = play(h)
    try:
        r = cli("compact", "--major", "--engine", "local", "--write-ids", snap, str(root))
        assert r.code == 0, r
        assert cli("clean", "--execute", "--min-age", "0", "--write-ids", snap, str(root)).code == 0
        bases = [p.name for p in root.iterdir() if p.name.startswith("base_")]
        hwm = len(h.txns)
        if not bases:  # nothing to compact: every event is still there
            r = cli("changes", str(root), "--from-write-id", "1", "--write-ids", snap)
            assert r.code == 0, r
            assert lines(r.stdout) == expected(log, 1, hwm)
            return
        assert len(bases) == 1
        n = int(bases[0].split("_")[1])  # base_N: the events of write ids ≤ N are folded into it
        assert n <= _compactor_hwm(h)  # never an open write id (spec essential 13)
        committed = [i + 1 for i, t in enumerate(h.txns) if t.state == "committed"]
        r = cli("changes", str(root), "--from-write-id", "1", "--write-ids", snap)
        if any(w <= n for w in committed):
            assert r.code == 6, r
            assert len(r.stderr.strip().splitlines()) <= 2  # the message (and its hint)
            assert f"changes can be derived from write id {n + 1} on" in r.stderr
        else:  # no committed write id inside the base: nothing was lost
            assert r.code == 0, r
            assert lines(r.stdout) == expected(log, 1, hwm)
        if n + 1 <= hwm:  # from N + 1 on: the events above the base, deletes of base rows too
            r = cli("changes", str(root), "--from-write-id", str(n + 1), "--write-ids", snap)
            assert r.code == 0, r
            assert lines(r.stdout) == expected(log, n + 1, hwm)
    finally:
        shutil.rmtree(root.parent)


def test_an_update_pairs_with_key_and_carries_the_old_values(tmp_path, cli):
    # write id 1 inserts ids 5 and 6 (bucket 1 of 2 for 5, 0 for 6); write id 2 updates the
    # first visible row in key order (ROW__ID (1, bucket 0, 0): id 6) to id 6 again; write id
    # 3 aborted; write id 4 deletes id 5
    h = History(
        buckets=2,
        originals=[],
        txns=[
            Txn("committed", [Statement("insert", [5, 6], [])]),
            Txn("committed", [Statement("update", [6], [0])]),
            Txn("aborted", [Statement("delete", [], [0])]),
            Txn("committed", [Statement("delete", [], [0])]),
        ],
    )
    h.play_table(tmp_path)
    b0, b1 = 1 << 29, (1 << 29) | (1 << 16)
    r = cli("changes", str(tmp_path), "--from-write-id", "2", "--write-ids", str(h.snapshot()), "--key", "id")
    assert r.code == 0, r
    assert lines(r.stdout) == [
        {
            "_change_type": "update_preimage",
            "_commit_version": 2,
            "row__id": {"writeid": 1, "bucketid": b0, "rowid": 0},
            "id": 6,
            "name": "w1s0-6",
        },
        {
            "_change_type": "update_postimage",
            "_commit_version": 2,
            "row__id": {"writeid": 2, "bucketid": b0, "rowid": 0},
            "id": 6,
            "name": "w2s0-6",
        },
        {
            "_change_type": "delete",
            "_commit_version": 4,
            "row__id": {"writeid": 1, "bucketid": b1, "rowid": 0},
            "id": 5,
            "name": "w1s0-5",
        },
    ]
    # without --key: a delete and an insert; the exact JSON line text of dump --merged's renderer
    r = cli("changes", str(tmp_path), "--from-write-id", "2", "--to-write-id", "2", "--write-ids", str(h.snapshot()))
    assert r.stdout.splitlines() == [
        '{"_change_type":"delete","_commit_version":2,"row__id":{"writeid":1,"bucketid":536870912,"rowid":0},"id":6,"name":"w1s0-6"}',
        '{"_change_type":"insert","_commit_version":2,"row__id":{"writeid":2,"bucketid":536870912,"rowid":0},"id":6,"name":"w2s0-6"}',
    ]


@pytest.mark.parametrize(
    "args,code,text",
    [
        (["--from-write-id", "0"], 2, "--from-write-id must be ≥ 1, not 0"),
        (["--from-write-id", "2", "--to-write-id", "1"], 2, "--to-write-id 1 is below --from-write-id 2"),
        (
            ["--from-write-id", "4"],
            2,
            "--from-write-id 4 is beyond the snapshot's high-water mark 2: the next write id is 3",
        ),
        (
            ["--from-write-id", "1", "--to-write-id", "9"],
            2,
            "--to-write-id 9 is beyond the snapshot's high-water mark 2",
        ),
        (["--from-write-id", "1", "--key", "nope"], 2, "--key nope"),
        (["--from-write-id", "1", "--to", "parquet"], 2, "DEST"),
        (["--from-write-id", "1", "--hive-version", "2", "--txns", "2:9223372036854775807"], 7, "Hive 2"),
    ],
)
def test_usage_errors(tmp_path, cli, args, code, text):
    h = History(buckets=1, originals=[], txns=[Txn("committed", [Statement("insert", [1], [])])] * 2)
    h.play_table(tmp_path / "t")
    snap = [] if "--txns" in args else ["--write-ids", str(h.snapshot())]
    r = cli("changes", str(tmp_path / "t"), *args, *snap)
    assert r.code == code, r
    assert text in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1  # one line, a hint in it


@SETTINGS
@given(h=partitioned_histories, key=st.booleans())
def test_parquet_output_reads_back_as_the_event_log(h, key):
    from tests.conftest import run_cli as cli

    root, log, snap = play(h)
    dest = root.parent / "out"
    try:
        args = ["-o", "json", "changes", str(root), str(dest), "--to", "parquet", "--from-write-id", "1"]
        r = cli(*args, "--write-ids", snap, *(["--key", "id"] if key else []))
        assert r.code == 0, r
        doc = json.loads(r.stdout)
        want = expected(log, 1, len(h.txns), key=key)
        assert doc["rows"] == len(want) and doc["publish"] == "atomic"
        t = pq.read_table(str(dest))
        got = t.to_pylist()
        for g, w in zip(got, want):
            if "p" not in w:
                g.pop("p", None)
        assert got == want
        assert t.schema.field("_commit_version").type == "int64"
        # DEST exists now: refused, nothing touched
        r = cli(*args, "--write-ids", snap)
        assert r.code == 6 and "never overwrites" in r.stderr
        assert sorted(p.name for p in root.parent.iterdir()) == ["out", "t"]  # no staging left
    finally:
        shutil.rmtree(root.parent)


def test_insert_only_rows_by_their_directorys_write_id(tmp_path, cli):
    from tests.mm.hivelayout import standard

    root, snap, _ = standard(tmp_path / "t", "orc")
    # base_1 (INSERT OVERWRITE), write 2 (two statements, a _copy_1 file, UNION ALL
    # subdirectories), 3 aborted, 4 committed, 5 open: inserts only, no ROW__ID, reader order
    r = cli("changes", str(root), "--from-write-id", "2", "--write-ids", snap, "--format", "orc")
    assert r.code == 0, r
    got = [(d["_change_type"], d["_commit_version"], d["row__id"], d["id"]) for d in lines(r.stdout)]
    assert got == [("insert", 2, None, i) for i in (3, 4, 5, 6, 7, 8)] + [
        ("insert", 4, None, 9),
        ("insert", 4, None, 10),
    ]
    # the base's write id: its truncation is no row event
    r = cli("changes", str(root), "--from-write-id", "1", "--write-ids", snap, "--format", "orc")
    assert r.code == 6 and "changes can be derived from write id 2 on" in r.stderr
    # a minor-compacted insert-only delta keeps no write id per row
    shutil.copytree(root / "delta_0000004_0000004_0000", root / "delta_0000006_0000007")
    snap7 = "default.t:7:5:5:3"
    r = cli("changes", str(root), "--from-write-id", "7", "--write-ids", snap7, "--format", "orc")
    assert r.code == 6 and "changes can be derived from write id 8 on" in r.stderr
    r = cli("changes", str(root), "--from-write-id", "4", "--to-write-id", "5", "--write-ids", snap7, "--format", "orc")
    assert [d["id"] for d in lines(r.stdout)] == [9, 10]


@SETTINGS
@given(h=partitioned_histories, data=st.data())
def test_events_of_a_write_id_set_per_partition(h, data):
    """The library call ``migrate`` uses: the events of an arbitrary set of write ids, per
    partition, as ACID-shaped Arrow tables (deletes with and without the deleted rows)."""
    from acidctl.acid.changes import WriteIdSet, table_events
    from acidctl.fs import TableFS

    root, log, _ = play(h)
    try:
        hwm = len(h.txns)
        ids = data.draw(st.sets(st.integers(1, hwm)), label="ids")
        snapshot = h.snapshot()
        with_rows = data.draw(st.booleans(), label="with_deleted_rows")
        got_ins, got_del = set(), set()
        for ev in table_events(TableFS(str(root)), snapshot, WriteIdSet.of(ids), with_deleted_rows=with_rows):
            for d in ev.inserts.to_pylist():
                assert d["operation"] == 0
                key = (d["originalTransaction"], d["bucket"], d["rowId"])
                got_ins.add((d["currentTransaction"], ev.partition, key, (d["row"]["id"], d["row"]["name"])))
            for d in ev.deletes.to_pylist():
                assert d["operation"] == 2
                key = (d["originalTransaction"], d["bucket"], d["rowId"])
                row = (d["row"]["id"], d["row"]["name"]) if with_rows else d["row"]
                got_del.add((d["currentTransaction"], ev.partition, key, row))
        want = [e for e in log if e[1] in ids]
        assert got_ins == {(w, p, k, r) for kind, w, p, k, r in want if kind == "insert"}
        assert got_del == {(w, p, k, r if with_rows else None) for kind, w, p, k, r in want if kind == "delete"}
    finally:
        shutil.rmtree(root.parent)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(h=partitioned_histories, key=st.booleans(), rows=st.integers(1, 5))
def test_streamed_in_small_pieces_gives_the_same_rows(h, key, rows):
    """The rows come group by group (write id, kind, partition), rendered in slices and written
    as Parquet row groups and files as they come: with slices, row groups and files of a few
    rows, the JSON lines and the Parquet files still hold exactly the event log's rows, in
    order, every file but the last full."""
    import acidctl.acid.changes as changes
    import acidctl.orc.lines as orc_lines
    from tests.conftest import run_cli as cli

    root, log, snap = play(h)
    want = expected(log, 1, len(h.txns), key=key)
    saved = orc_lines.SLICE_ROWS, changes.PARQUET_GROUP_ROWS, changes.PARQUET_FILE_ROWS
    orc_lines.SLICE_ROWS, changes.PARQUET_GROUP_ROWS, changes.PARQUET_FILE_ROWS = rows, rows, 2 * rows + 1
    try:
        args = ["changes", str(root), "--from-write-id", "1", "--write-ids", snap, *(["--key", "id"] if key else [])]
        r = cli(*args)
        assert r.code == 0, r
        assert lines(r.stdout) == want
        dest = root.parent / "out"
        r = cli("-o", "json", *args[:2], str(dest), "--to", "parquet", *args[2:])
        assert r.code == 0, r
        doc = json.loads(r.stdout)
        files = sorted(dest.iterdir())
        assert [f.name for f in files] == [o["file"] for o in doc["outputs"]]
        sizes = [pq.ParquetFile(f).metadata.num_rows for f in files]
        assert sum(sizes) == doc["rows"] == len(want)
        assert all(n == 2 * rows + 1 for n in sizes[:-1]) and (sizes[-1] or len(want) == 0)
        got = pq.read_table(str(dest)).to_pylist()
        for g, w in zip(got, want):
            if "p" not in w:
                g.pop("p", None)
        assert got == want
        counts = {k: sum(1 for w in want if w["_change_type"] == k) for k in doc["changes"]}
        assert doc["changes"] == counts
    finally:
        orc_lines.SLICE_ROWS, changes.PARQUET_GROUP_ROWS, changes.PARQUET_FILE_ROWS = saved
        shutil.rmtree(root.parent)


_PEAK = """
import sys, pyarrow as pa
import acidctl.acid.changes as changes, acidctl.orc.lines as orc_lines
from acidctl.cli.main import main
orc_lines.SLICE_ROWS = changes.PARQUET_GROUP_ROWS = 2048
try:
    main(sys.argv[1:])
except SystemExit as e:
    assert not e.code, e.code
sys.stderr.write(f"PEAK {pa.default_memory_pool().max_memory()}\\n")
"""


@pytest.mark.parametrize(
    "to_parquet,minor", [(False, False), (True, False), (False, True)], ids=["json-lines", "parquet", "minor-compacted"]
)
def test_memory_stays_bounded_over_a_long_range(tmp_path, to_parquet, minor):
    """60 write ids of 1,000 inserted rows each, then 20 that update or delete some: the Arrow
    memory peak of a fresh process printing (or writing) every change row stays far below the
    size of the range's change rows as one Arrow table (what the command held before it
    streamed: about 5 times that). Slices and row groups of 2,048 rows, so the bound shows
    with a range a test can afford. ``minor-compacted``: the same after a minor compaction
    (one ``delta_1_80`` and one ``delete_delta_1_80`` holding every write id's events, the
    delete delta's read once and parked on local disk by write id), its files rewritten in
    small stripes (as Hive's 64 MiB stripes are small to a large range): memory is a stripe."""
    import subprocess
    import sys

    import pyarrow as pa

    txns = [Txn("committed", [Statement("insert", list(range(i * 1000, i * 1000 + 1000)), [])]) for i in range(60)]
    txns += [
        Txn("committed", [Statement("update" if i % 2 else "delete", [7] * 50, list(range(0, 5000, 100)))])
        for i in range(20)
    ]
    h = History(buckets=2, originals=[], txns=txns)
    log: list = []
    h.play_table(tmp_path / "t", log=log)
    want = expected(log, 1, len(txns))
    data = pa.Table.from_pylist(want).nbytes
    args = ["changes", str(tmp_path / "t"), "--from-write-id", "1", "--write-ids", str(h.snapshot())]
    if minor:
        from tests.conftest import run_cli as cli

        snap = str(h.snapshot())
        r = cli("compact", "--minor", "--engine", "local", "--allow-non-atomic-publish", "--write-ids", snap, args[1])
        assert r.code == 0, r
        assert cli("clean", "--execute", "--min-age", "0", "--write-ids", snap, args[1]).code == 0
        compacted = sorted(p for p in (tmp_path / "t").iterdir() if p.name.startswith("de"))
        assert [p.name for p in compacted] == ["delete_delta_0000001_0000080", "delta_0000001_0000080"]
        import pyarrow.orc as po

        from acidctl.orc.writer import encode_acid_file

        # stripes of a few thousand rows (as Hive's 64 MiB stripes are to a large range)
        for f in (f for d in compacted for f in d.glob("bucket_*")):
            orc, written = encode_acid_file(po.read_table(str(f)), stripe_size=4096, compression="NONE")
            f.write_bytes(orc)
        assert written.stripes >= 10
    if to_parquet:
        args = ["changes", str(tmp_path / "t"), str(tmp_path / "out"), "--to", "parquet", *args[2:]]
    r = subprocess.run([sys.executable, "-c", _PEAK, *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    peak = int(r.stderr.split("PEAK ")[1])
    if to_parquet:
        assert pq.read_table(str(tmp_path / "out")).num_rows == len(want)
    else:
        assert len(r.stdout.splitlines()) == len(want)
    assert data > 3_000_000
    assert peak < data / 4, (peak, data)


def test_deleted_rows_are_looked_up_in_the_stripes_the_key_index_names(tmp_path, cli, monkeypatch):
    """A delete's values come from the file holding its row; with ``hive.acid.key.index`` (each
    stripe's last key, orc-acid-files.md) only the stripes whose key range holds a deleted
    ROW__ID are read, as Hive 4 filters delete events with it — the values stay the same."""
    from acidctl.orc import reader
    from acidctl.orc.writer import encode_acid_file
    from tests.acidfiles import B0, events

    n = 20000
    base = tmp_path / "t" / "base_0000001"
    base.mkdir(parents=True)
    data, written = encode_acid_file(events([(1, B0, i) for i in range(n)]), stripe_size=4096, compression="NONE")
    assert written.stripes >= 10
    (base / "bucket_00000").write_bytes(data)
    dd = tmp_path / "t" / "delete_delta_0000002_0000002_0000"
    dd.mkdir()
    gone = [5, 12345, n - 1]
    data, _ = encode_acid_file(events([(1, B0, i) for i in gone], ops=[2] * 3, ctxn=[2] * 3))
    (dd / "bucket_00000").write_bytes(data)
    for d in (base, dd):
        (d / "_orc_acid_version").write_bytes(b"2")
    reads: list[int] = []
    orig = reader.OrcFile.read_stripe_arrow

    def counted(self, index, columns=None):
        if self.path.endswith("base_0000001/bucket_00000"):
            reads.append(index)
        return orig(self, index, columns)

    monkeypatch.setattr(reader.OrcFile, "read_stripe_arrow", counted)
    r = cli("changes", str(tmp_path / "t"), "--from-write-id", "2", "--write-ids", "default.t:2:9223372036854775807::")
    assert r.code == 0, r
    assert [(d["_change_type"], d["row__id"]["rowid"], d["id"], d["name"]) for d in lines(r.stdout)] == [
        ("delete", i, i, f"n{i}") for i in gone
    ]
    # each of the (at most 3) stripes holding a deleted row: its key columns, then its rows
    assert 2 <= len(set(reads)) <= 3 and len(reads) == 2 * len(set(reads))


def test_a_minor_compacted_delete_delta_is_read_once_for_the_range(tmp_path, cli, monkeypatch):
    """A minor-compacted ``delete_delta_2_5`` is sorted by the deleted rows' ROW__IDs
    (orc-acid-files.md), so each of its stripes holds delete events of several write ids; the
    change rows come write id by write id, yet the file is opened once and each stripe read
    once for the whole range (it was opened once per write id it holds); so is each stripe of
    the compacted ``delta_2_5`` (sorted by write id), the one spanning two write ids too, and of
    the file the deleted rows' values come from (looked up a slice of delete events at a time,
    moving forward through it). The rows still follow
    the rules: write id order, deletes (with the deleted row's values) before inserts, ROW__ID
    order; write id 4 aborted (its events left out by the compactor)."""
    import pyarrow.orc as po

    from acidctl.orc import reader
    from acidctl.orc.writer import encode_acid_file
    from tests.acidfiles import B0, events

    n = 20000
    root = tmp_path / "t"

    def put(dirname: str, table) -> Path:
        d = root / dirname
        d.mkdir(parents=True)
        (d / "_orc_acid_version").write_bytes(b"2")
        data, written = encode_acid_file(table, stripe_size=4096, compression="NONE")
        (d / "bucket_00000").write_bytes(data)
        return d / "bucket_00000"

    d1 = put("delta_0000001_0000001_0000", events([(1, B0, i) for i in range(n)]))
    committed = (2, 3, 5)
    # write id 2 + (i // 2) % 3 deletes every second row of write 1: the ids interleave by key
    deleted = {i: committed[(i // 2) % 3] for i in range(0, n, 2)}
    dd = put(
        "delete_delta_0000002_0000005",
        events(
            [(1, B0, i) for i in sorted(deleted)], ops=[2] * len(deleted), ctxn=[deleted[i] for i in sorted(deleted)]
        ),
    )
    # the compacted inserts: m rows per committed write id, sorted by ROW__ID (= by write id):
    # most stripes hold one write id, those at a change of write id two
    m = 7000
    ins = [(w, B0, j) for w in committed for j in range(m)]
    di = put("delta_0000002_0000005", events(ins, rows=[(10_000 * w + j, f"w{w}-{j}") for w, _, j in ins]))
    f = po.ORCFile(str(dd))
    assert f.nstripes >= 3
    mixed = [len(set(f.read_stripe(i).column("currentTransaction").to_pylist())) for i in range(f.nstripes)]
    assert all(k >= 2 for k in mixed), mixed  # every stripe mixes write ids
    fi = po.ORCFile(str(di))
    ids_in = [set(fi.read_stripe(i).column("currentTransaction").to_pylist()) for i in range(fi.nstripes)]
    assert sum(len(x) == 1 for x in ids_in) >= 3 and sum(len(x) > 1 for x in ids_in) >= 1, ids_in

    opened: list[str] = []
    stripes: list[tuple[str, int, bool]] = []  # (file, stripe, whole or some columns)
    init, read = reader.OrcFile.__init__, reader.OrcFile.read_stripe_arrow

    def counted_init(self, tfs, path, **kw):
        opened.append(path)
        init(self, tfs, path, **kw)

    def counted_read(self, index, columns=None):
        stripes.append((self.path, index, columns is None))
        return read(self, index, columns)

    import acidctl.acid.changes as changes

    monkeypatch.setattr(changes, "FILL_ROWS", 1000)  # deleted rows looked up 1,000 at a time
    monkeypatch.setattr(reader.OrcFile, "__init__", counted_init)
    monkeypatch.setattr(reader.OrcFile, "read_stripe_arrow", counted_read)
    snap = "default.t:5:9223372036854775807::4"
    for lo, hi in ((2, 5), (3, 3), (3, 5)):
        opened.clear()
        stripes.clear()
        r = cli("changes", str(root), "--from-write-id", str(lo), "--to-write-id", str(hi), "--write-ids", snap)
        assert r.code == 0, r
        want = []
        for w in (w for w in committed if lo <= w <= hi):
            want += [("delete", w, (1, i), (i, f"n{i}")) for i in sorted(deleted) if deleted[i] == w]
            want += [("insert", w, (w, j), (10_000 * w + j, f"w{w}-{j}")) for j in range(m)]
        got = [
            (
                d["_change_type"],
                d["_commit_version"],
                (d["row__id"]["writeid"], d["row__id"]["rowid"]),
                (d["id"], d["name"]),
            )
            for d in lines(r.stdout)
        ]
        assert got == want
        assert opened.count(str(dd)) == 1, opened
        reads = [i for p, i, whole in stripes if p == str(dd)]
        assert sorted(reads) == list(range(f.nstripes)), reads  # each stripe once, whole
        # the insert delta: each stripe's write ids read once; each stripe holding a wanted
        # write id read whole once (now when it spans several, else when its write id comes)
        ct_reads = sorted(i for p, i, whole in stripes if p == str(di) and not whole)
        assert ct_reads == list(range(fi.nstripes)), ct_reads
        whole = sorted(i for p, i, whole in stripes if p == str(di) and whole)
        assert whole == [i for i, ids in enumerate(ids_in) if any(lo <= w <= hi for w in ids)], whole
        # the deleted rows' values: write 1's file opened once, each stripe's keys and rows read
        # at most once (the look-ups of all the range's write ids move forward through it)
        assert opened.count(str(d1)) == 1, opened
        for whole in (False, True):
            reads = [i for p, i, w in stripes if p == str(d1) and w is whole]
            assert len(reads) == len(set(reads)) and len(reads) >= 3, reads


def test_events_gone_names_the_lowest_derivable_write_id_and_a_range_that_works(tmp_path, cli):
    """Exit 6, one line (message and hint), naming N + 1 after a major compaction into
    base_N; the hint is a command line that works: from N + 1 (with a --to-write-id that
    reaches it when the asked range ended below it; a poll when the base holds every id)."""
    h = History(buckets=1, originals=[], txns=[Txn("committed", [Statement("insert", [i], [])]) for i in range(4)])
    root = tmp_path / "t"
    log: list = []
    h.play_table(root, log=log)
    snap = str(h.snapshot())  # db.t:4:...
    r = cli("compact", "--major", "--engine", "local", "--write-ids", "db.t:2:9223372036854775807::", str(root))
    assert r.code == 0, r
    assert cli("clean", "--execute", "--min-age", "0", "--write-ids", snap, str(root)).code == 0
    assert sorted(p.name for p in root.iterdir() if p.name.startswith("base_")) == ["base_0000002"]
    for args, hint in (
        (["--from-write-id", "1"], "use --from-write-id 3)"),
        (["--from-write-id", "2", "--to-write-id", "4"], "use --from-write-id 3)"),
        (["--from-write-id", "1", "--to-write-id", "2"], "use --from-write-id 3 (and --to-write-id 3 or higher))"),
    ):
        r = cli("changes", str(root), *args, "--write-ids", snap)
        assert r.code == 6, r
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
        assert "base_0000002 holds the events of write ids up to 2" in r.stderr
        assert "changes can be derived from write id 3 on" in r.stderr and r.stderr.strip().endswith(hint)
    r = cli("changes", str(root), "--from-write-id", "3", "--write-ids", snap)
    assert r.code == 0 and lines(r.stdout) == expected(log, 3, 4)
    r = cli("compact", "--major", "--engine", "local", "--write-ids", snap, str(root))
    assert r.code == 0, r
    r = cli("changes", str(root), "--from-write-id", "3", "--write-ids", snap)
    assert r.code == 6 and r.stderr.strip().endswith("(--from-write-id 5 polls for what comes next)"), r
    r = cli("changes", str(root), "--from-write-id", "5", "--write-ids", snap)
    assert r.code == 0 and r.stdout == ""


def _snapshot_diffs(h: History) -> list:
    """The model the change rows are checked against, from the reference model's snapshots
    only (not its event log): committed write id ``w``'s events are the set differences of
    the snapshots after write ids ≤ w - 1 and ≤ w, keyed by partition + ROW__ID — a row in
    the earlier one only was deleted by ``w`` (with its values there), a row in the later one
    only was inserted by ``w``; an update is both. Open and aborted ids change no snapshot."""
    out: list = []
    before = History(h.buckets, h.originals, [], h.partitions).play_table(None)
    for w in range(1, len(h.txns) + 1):
        after = History(h.buckets, h.originals, h.txns[:w], h.partitions).play_table(None)
        out += [("delete", w, k[0], k[1:], before[k]) for k in before.keys() - after.keys()]
        out += [("insert", w, k[0], k[1:], after[k]) for k in after.keys() - before.keys()]
        before = after
    return out


def _write_ids_of(name: str) -> int:
    """The write id of a ``delta_w_w_s`` / ``delete_delta_w_w_s`` directory History wrote."""
    return int(name.split("_")[-3])


#: longer histories (3-8 write ids), so that compactions fall between writes
_staged_histories = histories_of(min_txns=3, max_txns=8, max_originals=4, partitioned=True)


#: ``ACIDCTL_PROPERTY_EXAMPLES=N``: a long run, with shrinking (every step compacts: a failing
#: example shrinks for minutes, so a short run reports it unshrunk)
_LONG = int(os.environ.get("ACIDCTL_PROPERTY_EXAMPLES", "0"))


@settings(
    max_examples=_LONG or 25,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if _LONG else []),
)
@given(h=_staged_histories, data=st.data(), key=st.booleans())
def test_changes_equal_snapshot_differences_across_compactions_in_between(h, data, key):
    """Random histories (inserts, updates, deletes, aborted and open writes; 1-3 partitions)
    written in stages with a minor or major compaction (and a clean) between them, as Hive's
    compactor runs while writers go on: minor compactions leave ``delta_x_y`` and
    ``delete_delta_x_y`` whose stripes mix write ids. ``changes --from-write-id A
    --to-write-id B`` (with or without ``--key``) for A < B from the lowest write id still on
    disk equals the snapshot differences (:func:`_snapshot_diffs`); from below it, exit 6
    names it when a committed id of the range is in a base."""
    from tests.conftest import run_cli as cli

    n = len(h.txns)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, n), min_size=1, max_size=2), label="compact after write id")))
    kinds = [data.draw(st.sampled_from(["--minor", "--minor", "--major"]), label=f"after {c}") for c in cuts]
    scratch = Path(tempfile.mkdtemp(prefix="chg-"))
    root = scratch / "t"
    try:
        (scratch / "all").mkdir()
        h.play_table(scratch / "all")
        full = h.snapshot()

        def stage(lo: int, hi: int) -> None:  # write ids lo < w ≤ hi (and the originals first)
            for src in [scratch / "all", *sorted((scratch / "all").glob("p=*"))]:
                dst = root / src.relative_to(scratch / "all")
                dst.mkdir(parents=True, exist_ok=True)
                for p in src.iterdir():
                    if p.name.startswith(("delta_", "delete_delta_")):
                        if lo < _write_ids_of(p.name) <= hi:
                            shutil.copytree(p, dst / p.name)
                    elif p.is_file() and lo == 0:
                        shutil.copy(p, dst / p.name)

        done = 0
        for c, kind in zip(cuts, kinds):
            stage(done, c)
            done = c
            snap = str(full.as_of(c))  # the compactor's snapshot at that time
            extra = ["--allow-non-atomic-publish"] if kind == "--minor" else []
            r = cli("compact", kind, "--engine", "local", *extra, "--write-ids", snap, str(root))
            if r.code == 6 and "already exists" in r.stderr:  # a lone delta_x_y re-compacted into its own name:
                continue  # refused for safety, untouched (not this test's subject)
            assert r.code == 0, r
            r = cli("clean", "--execute", "--min-age", "0", "--write-ids", snap, str(root))
            assert r.code == 0, r
        stage(done, n)
        bases = [
            int(m[1]) for p in root.rglob("base_*") if p.is_dir() and (m := re.fullmatch(r"base_(\d+)(_v\d+)?", p.name))
        ]
        gone = max(bases, default=0)  # write ids ≤ gone are folded into a base somewhere
        if gone >= n:
            event("every write id in a base")
            return
        mixed = [p for p in root.rglob("delete_delta_*") if len(set(p.name.split("_")[2:4])) > 1]
        event(f"compacted delete deltas: {bool(mixed)}; base up to {gone and 'some id'}")
        model = _snapshot_diffs(h)
        lo = data.draw(st.integers(gone + 1, n), label="A")
        hi = data.draw(st.integers(lo, n), label="B")
        args = ["changes", str(root), "--from-write-id", str(lo), "--to-write-id", str(hi), "--write-ids", str(full)]
        r = cli(*args, *(["--key", "id"] if key else []))
        assert r.code == 0, r
        assert lines(r.stdout) == expected(model, lo, hi, key=key)
        committed = [w for w in range(1, gone + 1) if h.txns[w - 1].state == "committed"]
        if committed:  # from the lowest committed id in a base: exit 6 naming gone + 1
            r = cli("changes", str(root), "--from-write-id", str(committed[0]), "--write-ids", str(full))
            assert r.code == 6 and f"changes can be derived from write id {gone + 1} on" in r.stderr, r
    finally:
        shutil.rmtree(scratch)


def test_the_temporary_file_of_a_compacted_delete_delta_is_removed_or_its_failure_one_line(tmp_path, cli, monkeypatch):
    """The events a minor-compacted delete delta holds wait in a temporary directory under
    $TMPDIR while the range is printed, and are gone after; a $TMPDIR where nothing can be
    written is one line, exit 5 (storage unavailable), naming it."""
    import tempfile

    from acidctl.orc.writer import encode_acid_file
    from tests.acidfiles import B0, events

    root = tmp_path / "t"
    for name, table in (
        ("delta_0000001_0000001_0000", events([(1, B0, i) for i in range(4)])),
        ("delete_delta_0000002_0000003", events([(1, B0, i) for i in (0, 1, 3)], ops=[2] * 3, ctxn=[3, 2, 3])),
    ):
        (root / name).mkdir(parents=True)
        (root / name / "_orc_acid_version").write_bytes(b"2")
        (root / name / "bucket_00000").write_bytes(encode_acid_file(table)[0])
    args = ["changes", str(root), "--from-write-id", "2", "--write-ids", "default.t:3:9223372036854775807::"]
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    r = cli(*args)
    assert r.code == 0, r
    assert [(d["_commit_version"], d["id"]) for d in lines(r.stdout)] == [(2, 1), (3, 0), (3, 3)]
    assert list(tmp.iterdir()) == []
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-dir"))
    r = cli(*args)
    assert r.code == 5 and r.stdout == "", r
    assert len(r.stderr.strip().splitlines()) == 1 and f"temporary file in {tmp_path / 'no-such-dir'}" in r.stderr


@pytest.mark.parametrize("fill_rows", [1, 1 << 16], ids=["one-at-a-time", "default"])
def test_deleted_rows_of_files_before_and_after_a_new_column(tmp_path, cli, monkeypatch, fill_rows):
    """A compacted ``delete_delta_3_4`` deletes rows of write 1 (written before ALTER TABLE ADD
    COLUMNS extra) and of write 2 (with it): each delete carries its row's values, ``extra``
    null for the older rows, whichever rows are looked up together."""
    import pyarrow as pa

    import acidctl.acid.changes as changes
    from acidctl.orc.writer import encode_acid_file
    from tests.acidfiles import B0, events

    root = tmp_path / "t"

    def put(name: str, table) -> None:
        d = root / name
        d.mkdir(parents=True)
        (d / "_orc_acid_version").write_bytes(b"2")
        (d / "bucket_00000").write_bytes(encode_acid_file(table)[0])

    put("delta_0000001_0000001_0000", events([(1, B0, i) for i in range(4)]))
    t2 = events([(2, B0, i) for i in range(4)])
    row = t2.column("row").combine_chunks()
    extra = pa.array([f"x{i}" for i in range(4)])
    put(
        "delta_0000002_0000002_0000",
        t2.set_column(5, "row", pa.StructArray.from_arrays([*row.flatten(), extra], ["id", "name", "extra"])),
    )
    keys = [(1, B0, 0), (1, B0, 2), (2, B0, 1), (2, B0, 3)]
    put("delete_delta_0000003_0000004", events(keys, ops=[2] * 4, ctxn=[3, 4, 4, 3]))
    monkeypatch.setattr(changes, "FILL_ROWS", fill_rows)
    r = cli("changes", str(root), "--from-write-id", "3", "--write-ids", "default.t:4:9223372036854775807::")
    assert r.code == 0, r
    got = [
        (d["_commit_version"], d["row__id"]["writeid"], d["row__id"]["rowid"], d["id"], d["name"], d["extra"])
        for d in lines(r.stdout)
    ]
    assert got == [
        (3, 1, 0, 0, "n0", None),
        (3, 2, 3, 3, "n3", "x3"),
        (4, 1, 2, 2, "n2", None),
        (4, 2, 1, 1, "n1", "x1"),
    ]
