"""``compact --hive-version 2``: Hive 2.3 CompactorMR output, on the 2.3.10-written fixture (its
_EXPECTED.md records what Hive 2.3's own CompactorMR wrote) and on random legacy / split-update
histories checked against the reference model of tests/hive2_histories.py; local and Spark."""

from __future__ import annotations

import random

import pyarrow.orc as po
import pytest

from acidctl.acid.acidstate import get_acid_state
from acidctl.acid.hive2 import Hive2TxnList, read_partition
from acidctl.acid.layout import list_table
from acidctl.compact.runner import CompactOptions, compact_table
from acidctl.errors import WriteVerificationFailed
from acidctl.fs import TableFS
from tests.compact.helpers import hive23_table
from tests.conftest import run_cli
from tests.hive2_histories import random_history, write_table

ALL = "9223372036854775807"


def _events(path):
    import pyorc

    with open(path, "rb") as f:
        r = pyorc.Reader(f)
        meta = dict(r.user_metadata)
        return [tuple(x) for x in r], meta, r.compression


def _compact(root, txns, mode, *, engine="local", spark=None):
    wl = Hive2TxnList.parse(txns).to_write_ids()
    opts = CompactOptions(mode=mode, reader=wl, hive_version=2, engine=engine, allow_non_atomic_publish=True)
    return compact_table(TableFS(str(root)), opts, spark=spark)


def _read(root, txns):
    tfs = TableFS(str(root))
    out = {}
    for lst in list_table(tfs):
        st = get_acid_state(lst, Hive2TxnList.parse(txns).to_write_ids(), hive_version=2)
        for _, t in read_partition(tfs, lst, st):
            for k, row in zip(
                zip(*(t.column(c).to_pylist() for c in ("originalTransaction", "bucket", "rowId"))),
                t.column("row").to_pylist(),
            ):
                out[k] = row
    return out


def test_fixture_major_is_compactormrs_base(tmp_path):
    import pyorc

    t = hive23_table(tmp_path)
    r = run_cli("compact", "--major", "--engine", "local", "--hive-version", "2", "--txns", f"2:{ALL}:", t)
    assert r.code == 0, r.stderr
    base = t / "base_0000002"
    assert sorted(p.name for p in base.iterdir()) == ["bucket_00000"]  # no _orc_acid_version, no _metadata_acid
    events, meta, compression = _events(base / "bucket_00000")
    # _EXPECTED.md: 3 rows, original ROW__IDs kept, stats 3,0,0
    assert events == [
        (0, 1, 0, 0, 1, (1, "Jerry", 5000)),
        (0, 1, 0, 2, 1, (3, "Kate", 6000)),
        (0, 2, 0, 0, 2, (2, "Tom", 7000)),
    ]
    assert meta == {"hive.acid.key.index": b"", "hive.acid.stats": b"3,0,0"}
    assert compression == pyorc.CompressionKind.ZLIB
    # clean under Hive 2 rules accepts the Hive 2 key index and removes the three deltas
    r = run_cli("clean", "--hive-version", "2", "--txns", f"2:{ALL}:", "--min-age", "0", "--execute", t)
    assert r.code == 0, r.stdout + r.stderr
    assert sorted(p.name for p in t.iterdir() if not p.name.startswith(".")) == ["_orc_acid_version", "base_0000002"]
    assert list(_read(t, f"2:{ALL}:")) == [(1, 0, 0), (1, 0, 2), (2, 0, 0)]


def test_fixture_minor_is_compactormrs_deltas(tmp_path):
    import pyorc

    t = hive23_table(tmp_path)
    rep = _compact(t, f"2:{ALL}:", "minor")
    assert rep["partitions"][0]["status"] == "compact"
    ins, imeta, icomp = _events(t / "delta_0000001_0000002" / "bucket_00000")
    dels, dmeta, _ = _events(t / "delete_delta_0000001_0000002" / "bucket_00000")
    assert [e[1:4] for e in ins] == [(1, 0, 0), (1, 0, 1), (1, 0, 2), (2, 0, 0)] and {e[0] for e in ins} == {0}
    assert dels == [(2, 1, 0, 1, 2, None)]
    assert imeta == {"hive.acid.key.index": b"", "hive.acid.stats": b"4,0,0"}
    assert dmeta["hive.acid.stats"] == b"0,0,1" and icomp == pyorc.CompressionKind.NONE
    assert sorted(p.name for p in (t / "delta_0000001_0000002").iterdir()) == ["bucket_00000"]


def test_hive3_rules_still_refuse_legacy_update_events(tmp_path):
    rng = random.Random(5)
    h = random_history(rng, mode="legacy", txns=6)
    while not any(op == 1 for s in h.stmts if h.valid(s.txn) for op, _, _ in s.events):
        h = random_history(rng, mode="legacy", txns=6)
    root = write_table(h, tmp_path / "t")
    r = run_cli(
        "compact",
        "--major",
        "--engine",
        "local",
        "--write-ids",
        f"db.t:{h.compactor_hwm()}:{ALL}::",
        "--columns",
        "a,b",
        root,
    )
    assert r.code == 6 and "ACID v1" in r.stderr, r.stdout + r.stderr
    assert not any(p.name.startswith("base_") for p in root.iterdir())


def _row_touched_twice_in_a_txn(h) -> bool:
    seen = set()
    for st in h.stmts:
        for _, key, _ in st.events:
            if (st.txn, key) in seen:
                return True
        seen |= {(st.txn, key) for _, key, _ in st.events}
    return False


@pytest.mark.parametrize("mode", ["legacy", "split-update"])
@pytest.mark.parametrize("seed", range(8))
def test_random_histories_major_then_minor(tmp_path, mode, seed):
    rng = random.Random(1000 + seed)
    h = random_history(rng, mode=mode, txns=rng.randint(3, 8))
    root = write_table(h, tmp_path / "t")
    reader = h.reader_list()
    before = _read(root, reader)
    assert before == h.expected()
    kind = rng.choice(["major", "minor"])
    try:
        rep = _compact(root, reader, kind)
    except WriteVerificationFailed:
        # a split-update minor compaction drops statement ids: a row inserted and deleted by two
        # statements of one txn then has an insert and a delete with equal merge keys, which
        # Hive 2.3's merger resolves by its state (a reader may even be dropped), so the
        # reader's rows would change; acidctl refuses (Hive 2.3's SQL has one statement per txn)
        assert kind == "minor" and mode == "split-update" and _row_touched_twice_in_a_txn(h)
        assert _read(root, reader) == before
        return
    assert rep["partitions"][0]["status"] in ("compact", "nothing")
    assert _read(root, reader) == before
    if kind == "major" and rep["partitions"][0]["status"] == "compact":
        top = max(s.txn for s in h.stmts if s.txn <= h.compactor_hwm())
        base = root / f"base_{top:07d}"
        got = {}
        for f in sorted(base.iterdir()):
            events, meta, _ = _events(f)
            assert "hive.acid.version" not in meta
            ops = [e[0] for e in events]
            assert meta["hive.acid.stats"] == f"{ops.count(0)},{ops.count(1)},{ops.count(2)}".encode()
            for op, ot, b, rid, cur, row in events:
                got[(ot, b, rid)] = (op, cur, None if row is None else {"_col0": row[0], "_col1": row[1]})
        # events kept unchanged: a legacy update stays an op-1 event with its txn (B.7)
        assert got == h.expected_events(h.compactor_hwm())


def test_spark_engine_major_on_a_legacy_history(tmp_path, spark):
    rng = random.Random(77)
    h = random_history(rng, mode="legacy", txns=8, buckets=3)
    root = write_table(h, tmp_path / "t")
    rep = _compact(root, h.reader_list(), "major", engine="spark", spark=spark)
    assert rep["partitions"][0]["status"] == "compact"
    assert _read(root, h.reader_list()) == h.expected()
    assert not list(root.glob("base_*/_*"))  # no marker files
    for f in root.glob("base_*/bucket_*"):
        assert po.ORCFile(str(f)).nrows > 0


def _upgrade_metastore(tmp_path):
    """A Hive 2.3 metastore with a legacy table (random history with updates) and the
    split-update fixture as a partition."""
    import shutil

    from acidctl.metastore.hive2 import init_hive2
    from tests.conftest import GOLDEN
    from tests.metastore.hive2_helpers import add_table, set_txns

    url = f"sqlite:///{tmp_path}/ms.db"
    init_hive2(url)
    seed = 0
    while True:
        h = random_history(random.Random(seed), mode="legacy", txns=7, buckets=2)
        if (
            h.valid(1)
            and h.valid(2)
            and "open" not in h.states.values()
            and any(op == 1 for s in h.stmts if h.valid(s.txn) for op, _, _ in s.events)
        ):
            break
        seed += 1
    root = write_table(h, tmp_path / "w" / "legacy_t")
    add_table(url, "sales", "legacy_t", f"file:{root}", {"transactional": "true"})
    part = tmp_path / "w" / "split_t" / "ds=a"
    shutil.copytree(GOLDEN / "hive23_seed_table", part, ignore=shutil.ignore_patterns("_EXPECTED.md"))
    add_table(
        url,
        "sales",
        "split_t",
        f"file:{tmp_path}/w/split_t",
        {"transactional": "true", "transactional_properties": "default"},
        keys=[("ds", "string")],
        partitions=[("ds=a", f"file:{part}")],
    )
    set_txns(url, {t: "a" for t, s in h.states.items() if s == "aborted"}, next_txn=h.hwm + 1)
    return url, h, root, part


def test_upgrade_check_execute_local_signs_off(tmp_path):
    import json

    url, h, root, part = _upgrade_metastore(tmp_path)
    r = run_cli("--metastore", url, "-o", "json", "upgrade-check", "--execute", "--engine", "local")
    assert r.code == 0, r.stdout + r.stderr
    d = json.loads(r.stdout)
    assert d["ready"] and d["summary"]["compact"] == 0 and d["commands"] == []
    assert sorted(run["table"] for run in d["executed"]["runs"]) == ["sales.legacy_t", "sales.split_t"]
    for p in d["partitions"]:
        assert len(p["current"]) == 1 and p["current"][0].startswith("base_")
    reader = h.reader_list()
    assert _read(root, reader) == h.expected()
    assert list(_read(part, f"2:{ALL}:")) == [(1, 0, 0), (1, 0, 2), (2, 0, 0)]


def test_upgrade_check_execute_runs_one_spark_application(tmp_path, spark):
    from acidctl.cli.main import Settings
    from acidctl.upgrade import check, execute

    url, h, root, part = _upgrade_metastore(tmp_path)
    settings = Settings(output=None)
    before = check(settings, url)
    assert not before["ready"] and before["summary"]["compact"] == 2
    done = execute(settings, url, before, engine="spark", spark=spark)
    assert done["spark_applications"] == [spark.sparkContext.applicationId]
    assert done["after"]["ready"]
    assert _read(root, h.reader_list()) == h.expected()


def _plain_orc(path, rows):
    import pyorc

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f, pyorc.Writer(f, "struct<_col0:int,_col1:string>") as w:
        for r in rows:
            w.write(r)


def _acid_orc(path, events):
    import pyorc

    from tests.hive2_histories import ACID_TYPE

    path.parent.mkdir(parents=True, exist_ok=True)
    ops = [e[0] for e in events]
    with open(path, "wb") as f, pyorc.Writer(f, ACID_TYPE) as w:
        for e in events:
            w.write(e)
        w.set_user_metadata(
            **{"hive.acid.key.index": b"", "hive.acid.stats": f"{ops.count(0)},{ops.count(1)},{ops.count(2)}".encode()}
        )


def test_originals_get_hive2_row_ids_and_compact(tmp_path):
    """B.6: original rows are (0, bucket from the name, row number within the file); a legacy
    update of (0,1,1) by txn 1 and a delete of (0,0,0) by txn 2 apply to exactly those rows."""
    t = tmp_path / "t"
    _plain_orc(t / "000000_0", [(10, "a"), (11, "b")])
    _plain_orc(t / "000001_0", [(20, "c"), (21, "d")])
    _acid_orc(t / "delta_0000001_0000001_0000" / "bucket_00001", [(1, 0, 1, 1, 1, (99, "D"))])
    _acid_orc(t / "delta_0000002_0000002_0000" / "bucket_00000", [(2, 0, 0, 0, 2, None)])
    want = {
        (0, 0, 1): {"_col0": 11, "_col1": "b"},
        (0, 1, 0): {"_col0": 20, "_col1": "c"},
        (0, 1, 1): {"_col0": 99, "_col1": "D"},
    }
    assert _read(t, f"2:{ALL}:") == want
    rep = _compact(t, f"2:{ALL}:", "major")
    assert [p["output_dirs"] for p in rep["partitions"]] == [["base_0000002"]]
    assert _read(t, f"2:{ALL}:") == want
    events, meta, _ = _events(t / "base_0000002" / "bucket_00001")
    assert events == [(0, 0, 1, 0, 0, (20, "c")), (1, 0, 1, 1, 1, (99, "D"))]  # the update stays op 1
    assert meta["hive.acid.stats"] == b"1,1,0"


def test_two_originals_of_one_bucket_are_refused(tmp_path):
    t = tmp_path / "t"
    _plain_orc(t / "000000_0", [(1, "a")])
    _plain_orc(t / "000000_1", [(2, "b")])
    _acid_orc(t / "delta_0000001_0000001_0000" / "bucket_00000", [(0, 1, 0, 0, 1, (3, "c"))])
    r = run_cli("compact", "--major", "--engine", "local", "--hive-version", "2", "--txns", f"1:{ALL}:", t)
    assert r.code == 6 and "same ROW__IDs" in r.stderr, r.stderr
    assert not list(t.glob("base_*"))


def test_hive2_key_index_lacks_the_last_stripe():
    """B.5.2: one entry per stripe except the last, each the stripe's last key (oracle: the
    stripes as pyorc reads them)."""
    import io

    import pyarrow as pa
    import pyorc

    from acidctl.compact.hive2 import encode_hive2_file

    n = 200_000
    row = pa.StructArray.from_arrays(
        [pa.array(range(n), pa.int32()), pa.array([f"v{i}" * 20 for i in range(n)])], names=["_col0", "_col1"]
    )
    table = pa.table(
        {
            "operation": pa.array([0] * n, pa.int32()),
            "originalTransaction": pa.array([1] * n, pa.int64()),
            "bucket": pa.array([0] * n, pa.int32()),
            "rowId": pa.array(range(n), pa.int64()),
            "currentTransaction": pa.array([1] * n, pa.int64()),
            "row": row,
        }
    )
    data, key_index, stats = encode_hive2_file(table, compression="NONE", stripe_size=1 << 20)
    r = pyorc.Reader(io.BytesIO(data))
    lasts, end = [], 0
    for i in range(r.num_of_stripes):
        end += len(r.read_stripe(i))
        lasts.append(f"1,0,{end - 1};")
    assert r.num_of_stripes > 2
    assert key_index == "".join(lasts[:-1]) and stats == (n, 0, 0)
    assert dict(r.user_metadata) == {"hive.acid.key.index": key_index.encode(), "hive.acid.stats": f"{n},0,0".encode()}


def test_two_originals_of_one_bucket_are_not_read_partially(tmp_path):
    t = tmp_path / "t"
    _plain_orc(t / "000000_0", [(1, "a")])
    _plain_orc(t / "000000_0_copy_1", [(2, "b")])
    r = run_cli("dump", "--merged", "--hive-version", "2", "--txns", f"1:{ALL}:", t)
    assert r.code == 7 and "same ROW__IDs" in r.stderr and r.stdout == "", r.stderr
    r = run_cli("dump", "--merged", "--write-ids", f"db.t:1:{ALL}::", t)  # Hive 3 numbers across files
    assert r.code == 0 and len(r.stdout.splitlines()) == 2


@pytest.mark.parametrize("point", ["task-before-write", "task-after-write", "before-publish"])
def test_sigkill_during_a_hive2_compaction_changes_nothing(tmp_path, point):
    """The Hive 2 task stages like every compaction: killed at any step, the table reads the
    same and no base appears; a rerun breaking the stale lock publishes the base."""
    from tests.compact.test_crash import _run

    rng = random.Random(42)
    h = random_history(rng, mode="legacy", txns=7)
    root = write_table(h, tmp_path / "t")
    reader = h.reader_list()
    before = _read(root, reader)
    r = _run(["compact", "--major", "--engine", "local", "--hive-version", "2", "--txns", reader, root], point)
    assert r.returncode == -9, r.stderr[-2000:]
    assert _read(root, reader) == before == h.expected()
    assert not list(root.glob("base_*"))
    r = _run(
        ["compact", "--major", "--engine", "local", "--hive-version", "2", "--txns", reader, "--break-lock", root], None
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert _read(root, reader) == h.expected() and len(list(root.glob("base_*"))) == 1


def _big_history(mode: str, seed: int):
    """A random history whose statements also insert thousands of rows per bucket, so every
    file holds many stripes (written with tiny stripes) and the task many windows."""
    rng = random.Random(seed)
    h = random_history(rng, mode=mode, txns=6, buckets=2)
    for s in h.stmts:
        if h.states[s.txn] != "committed":
            continue
        for b in range(2):
            used = [k[2] for _, k, _ in s.events if k[0] == s.txn and k[1] == b]
            first = max(used, default=-1) + 1
            for i in range(3000):
                row = {"_col0": i % 97, "_col1": "row %d of txn %d" % (i * 7919 % 3001, s.txn)}
                s.events.append((0, (s.txn, b, first + i), row))
    return h


@pytest.mark.parametrize("mode", ["legacy", "split-update"])
@pytest.mark.parametrize("kind", ["major", "minor"])
def test_buckets_of_many_stripes_stream(tmp_path, monkeypatch, mode, kind):
    """Several multi-stripe files per bucket go through the windowed merge (the whole-bucket
    path must not run) and the result is the reference model's (tests/hive2_histories.py)."""
    import acidctl.compact.hive2 as C
    from acidctl.formats import files as F

    def whole(task, m):
        raise AssertionError("the whole-bucket path ran")

    monkeypatch.setattr(C, "_compact", whole)
    monkeypatch.setattr(F, "BATCH_ROWS", 2048)  # the output writer flushes many times too
    h = _big_history(mode, 31 if mode == "legacy" else 32)
    root = write_table(h, tmp_path / "t", stripe_size=2048)
    stripes = sorted(po.ORCFile(str(f)).nstripes for f in root.glob("delta_*/bucket_*"))
    assert stripes[-3] > 3  # several files of many stripes
    reader = h.reader_list()
    rep = _compact(root, reader, kind)
    p = rep["partitions"][0]
    assert p["status"] == "compact"
    assert _read(root, reader) == h.expected()
    if kind == "major":
        top = max(s.txn for s in h.stmts if s.txn <= h.compactor_hwm())
        got = {}
        for f in sorted((root / f"base_{top:07d}").iterdir()):
            events, meta, _ = _events(f)
            assert [e[:4] for e in events] == sorted(e[:4] for e in events)  # written in key order
            for op, ot, b, rid, cur, row in events:
                got[(ot, b, rid)] = (op, cur, None if row is None else {"_col0": row[0], "_col1": row[1]})
        assert got == h.expected_events(h.compactor_hwm())
    else:
        # minor: every valid event of the compacted deltas, once (collapse off)
        hwm = h.compactor_hwm()
        want = sorted(
            (op, *key, s.txn)
            for s in h.stmts
            if h.valid(s.txn, hwm)
            for op, key, _ in s.events
            if not (mode == "split-update" and op == 2)
        )
        got = []
        for f in sorted(root.glob(f"delta_*_{hwm:07d}/bucket_*")):
            got += [e[:5] for e in _events(f)[0]]
        assert sorted(got) == want


def test_a_source_out_of_key_order_is_compacted_whole(tmp_path, monkeypatch):
    """A delta file whose events are not in key order cannot be merged window by window: the
    task redoes the bucket whole, with the same result (the reference model's)."""
    import pyorc

    import acidctl.compact.hive2 as C
    from tests.hive2_histories import ACID_TYPE

    ran = []
    real = C._compact
    monkeypatch.setattr(C, "_compact", lambda task, m: (ran.append(task.bucket), real(task, m))[1])
    h = _big_history("legacy", 31)
    root = write_table(h, tmp_path / "t", stripe_size=2048)
    hwm = h.compactor_hwm()
    f = max(
        (g for g in root.glob("delta_*/bucket_00000") if h.valid(int(g.parent.name.split("_")[1]), hwm)),
        key=lambda p: p.stat().st_size,
    )
    events, meta, _ = _events(f)
    with open(f, "wb") as out, pyorc.Writer(out, ACID_TYPE, stripe_size=2048, batch_size=250) as w:
        for e in reversed(events):
            w.write(e)
        w.set_user_metadata(**meta)
    reader = h.reader_list()
    _compact(root, reader, "major")
    assert ran == [0]
    top = max(s.txn for s in h.stmts if s.txn <= h.compactor_hwm())
    got = {}
    for g in sorted((root / f"base_{top:07d}").iterdir()):
        for op, ot, b, rid, cur, row in _events(g)[0]:
            got[(ot, b, rid)] = (op, cur, None if row is None else {"_col0": row[0], "_col1": row[1]})
    assert got == h.expected_events(h.compactor_hwm())


# Equal merge keys. Expected results are worked out by hand from Apache Hive 2.3's
# ql/src/java/org/apache/hadoop/hive/ql/io/orc/OrcRawRecordMerger.java: ReaderKey.compareTo
# returns 0 when (originalTransaction, bucket, rowId, currentTransaction, statementId) are all
# equal; the constructor adds each reader with TreeMap.put (an equal key *replaces* the earlier
# reader, which is then never read); next() keeps the primary reader while its new key is not
# greater than the smallest other key (so on equal keys the primary's event comes first) and
# collapses to the first event per (originalTransaction, bucket, rowId). Readers of a split-update
# table: one merger per insert file (added first, as the base reader) with the delete deltas
# (OrcInputFormat.getReader); CompactorMR: one merger, deltas in getAcidState order
# (delete_delta_1_2 before delta_1_2). Such keys arise after a minor compaction (no statement
# ids) of a txn that inserted and deleted a row; today acidctl put the delete first.

SPLIT = {"transactional": "true", "transactional_properties": "default"}


def _row(op, rid, text=None):
    return (op, 2, 0, rid, 2, None if text is None else (rid, text))


def _tied_table(root, inserts, deletes):
    _acid_orc(root / "delta_0000001_0000002" / "bucket_00000", inserts)
    _acid_orc(root / "delete_delta_0000001_0000002" / "bucket_00000", deletes)
    return root


def test_equal_keys_the_insert_file_leads_so_the_row_survives(tmp_path):
    """Reader: the insert file's first key (2,0,0) is smaller, it is primary; its next key
    (2,0,1) equals the delete's, so it stays primary and returns I1 first: the delete of
    (2,0,1) collapses away. CompactorMR (delete_delta added first, delta second, different
    first keys): the same order I0, I1, D, I2 → the base keeps all three rows."""
    root = _tied_table(tmp_path / "t", [_row(0, 0, "a"), _row(0, 1, "b"), _row(0, 2, "c")], [_row(2, 1)])
    before = _read(root, "2:9223372036854775807:")
    assert sorted(before) == [(2, 0, 0), (2, 0, 1), (2, 0, 2)]
    rep = _compact(root, "2:9223372036854775807:", "major")
    assert rep["partitions"][0]["status"] == "compact"
    events, _, _ = _events(root / "base_0000002" / "bucket_00000")
    assert [e[:5] for e in events] == [(0, 2, 0, 0, 2), (0, 2, 0, 1, 2), (0, 2, 0, 2, 2)]
    assert _read(root, "2:9223372036854775807:") == before


def test_equal_first_keys_drop_a_whole_reader(tmp_path):
    """Reader: the insert file and the delete file start with the same key, so TreeMap.put of
    the delete reader replaces the insert file's reader: the merger returns no row at all, not
    even (2,0,2). CompactorMR adds delete_delta_1_2 first and delta_1_2 second: the delete
    reader is the one replaced, so its output would hold (2,0,1) and (2,0,2) — which a reader
    then sees, unlike before: acidctl's before/after check refuses, nothing is written."""
    root = _tied_table(tmp_path / "t", [_row(0, 1, "b"), _row(0, 2, "c")], [_row(2, 1)])
    assert _read(root, "2:9223372036854775807:") == {}
    with pytest.raises(WriteVerificationFailed, match="0 rows before and 2 after"):
        _compact(root, "2:9223372036854775807:", "major")
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == [
        "delete_delta_0000001_0000002",
        "delta_0000001_0000002",
    ]


def test_merge_order_replays_the_treemap():
    """merge_order on two readers, worked out from the code: reader 0 = [K1, K3], reader 1 =
    [K1', K2] with K1 == K1' (whole key): the constructor's second put replaces reader 0, so
    only reader 1's events come back."""
    import numpy as np

    from acidctl.acid.hive2 import merge_order, winners

    ot = np.array([2, 2, 2, 2])
    bk = np.array([0, 0, 0, 0])
    rid = np.array([1, 3, 1, 2])
    cur = np.array([2, 2, 2, 2])
    stmt = np.zeros(4, dtype=np.int64)
    src = np.array([0, 0, 1, 1])
    assert merge_order(ot, bk, rid, cur, stmt, src).tolist() == [2, 3]
    # different first keys: reader 0 = [1, 2], reader 1 = [2]: primary 0 keeps going on the
    # equal key (2) before reader 1 gets its turn
    ot, bk, cur, stmt = np.full(3, 2), np.zeros(3, dtype=np.int64), np.full(3, 2), np.zeros(3, dtype=np.int64)
    rid, src = np.array([1, 2, 2]), np.array([0, 0, 1])
    assert merge_order(ot, bk, rid, cur, stmt, src).tolist() == [0, 1, 2]
    valid = np.ones(3, dtype=bool)
    assert winners(ot, bk, rid, cur, stmt, valid, src=src).tolist() == [0, 1]
    assert winners(ot, bk, rid, cur, stmt, valid, src=src, collapse=False).tolist() == [0, 1, 2]
