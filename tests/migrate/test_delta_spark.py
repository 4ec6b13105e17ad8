"""``migrate --to delta --engine spark``: whole partitions' Parquet files written by Spark tasks
(local mode, the session-scoped fixture) and committed once from the driver as Delta add /
remove actions. Read back with deltalake and pyarrow (the log's JSON itself), never with
acidctl, against the reference model of tests/migrate/helpers.py and against what deltalake
writes for the same snapshot through the local engine."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

import pyarrow as pa
import pytest

from acidctl.acid.writeids import WriteIdList
from tests.compact.conftest import spark  # noqa: F401  (the session-scoped fixture, reused)
from tests.conftest import run_cli
from tests.migrate import helpers
from tests.migrate.helpers import Recorder
from tests.migrate.test_migrate_delta import delta_rows, migrate, s3_server  # noqa: F401

pytest.importorskip("deltalake")
from deltalake import DeltaTable  # noqa: E402

wl = helpers.late_commit_wl
SPARK = ("--engine", "spark", "--master", "local[2]")


def _log(target: Path, version: int) -> list[dict]:
    return [json.loads(x) for x in (target / "_delta_log" / f"{version:020d}.json").read_text().splitlines() if x]


def _adds(target: Path, version: int) -> list[dict]:
    return [a["add"] for a in _log(target, version) if "add" in a]


def _on_disk(target: Path) -> set[str]:
    """Every Parquet file under the table directory, relative."""
    return {p.relative_to(target).as_posix() for p in target.rglob("*.parquet")}


def _current(target: Path) -> set[str]:
    return {urllib.parse.unquote(a["path"]) for a in pa.table(DeltaTable(str(target)).get_add_actions()).to_pylist()}


def _no_float_bounds(stats: str, floats=("f", "d")) -> dict:
    s = json.loads(stats)
    for k in ("minValues", "maxValues"):
        for f in floats:
            s[k].pop(f, None)
    return s


@pytest.fixture
def table(tmp_path, monkeypatch):
    rec = Recorder()
    root = tmp_path / "t"
    rec.play(helpers.late_commit_history(), root, monkeypatch)
    return root, rec, tmp_path / "delta" / "t"


def test_first_load_in_spark_then_catch_up_after_writes_and_a_compaction(spark, table, tmp_path):  # noqa: F811
    root, rec, target = table
    r, rep = migrate(root, wl(4), target, *SPARK)
    assert r.code == 0, r.stderr
    assert rep["engine"] == "spark" and rep["verified"]["rows"] == len(rec.table(wl(4)))
    dt = DeltaTable(str(target))
    assert dt.version() == 0 and len(dt.history()) == 1
    h = dt.history()[0]
    assert h["acidctl.source-write-ids"] == str(wl(4)) and h["acidctl.source-table"].endswith("/t")
    assert delta_rows(target) == rec.table(wl(4))
    adds = _adds(target, 0)
    assert adds and not any("remove" in a for a in _log(target, 0))
    for a in adds:
        # the tasks' files, in deltalake's partition directories (inside the first load's own
        # directory, as the local first load's), the partition value the directory's
        path = urllib.parse.unquote(a["path"])
        prefix, part, name = path.split("/")
        assert prefix.startswith("acidctl-load-") and name.startswith("acidctl-") and name.endswith(".parquet")
        assert part == f"p={a['partitionValues']['p']}"
        assert (target / path).stat().st_size == a["size"]
    # statistics: each file's row count and row__id bounds are its rows' (read with pyarrow)
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    total = 0
    for a in adds:
        s = json.loads(a["stats"])
        rid = pq.read_table(target / urllib.parse.unquote(a["path"])).column("row__id").combine_chunks()
        assert s["numRecords"] == len(rid) > 0
        total += len(rid)
        for f in ("writeid", "bucketid", "rowid"):
            mm = pc.min_max(rid.field(f)).as_py()
            assert (s["minValues"]["row__id"][f], s["maxValues"]["row__id"][f]) == (mm["min"], mm["max"])
            assert s["nullCount"]["row__id"][f] == 0
    assert total == len(rec.table(wl(4)))
    # the same schema, partitioning and protocol as deltalake's own table of the snapshot
    local = tmp_path / "local"
    assert migrate(root, wl(4), local)[0].code == 0
    lt = DeltaTable(str(local))
    assert dt.schema().to_json() == lt.schema().to_json()
    assert dt.protocol() == lt.protocol() and dt.metadata().partition_columns == ["p"]

    # more writes (5 commits late, 6, 7) and a compaction of 5 and 6 with their delete events:
    # row-level changes are one MERGE in this process (Delta cannot mix it with added files)
    for part in ("p=0", "p=1"):
        rec.compact(root, part, wl(6), 6)
    r, rep = migrate(root, wl(7), target, *SPARK)
    assert r.code == 0, r.stderr
    assert rep["engine"] == "local" and {p["how"] for p in rep["partitions"]} == {"compare"}
    assert delta_rows(target) == rec.table(wl(7))
    dt = DeltaTable(str(target))
    assert dt.version() == 1 and dt.history(1)[0]["acidctl.source-write-ids"] == str(wl(7))


def test_replaced_partitions_are_removed_and_added_in_one_commit(spark, table):  # noqa: F811
    from acidctl import faults

    root, rec, target = table

    def rows(w):
        return sorted((p, i, n) for (p, *_k, i, n) in rec.table(w))

    def got():
        t = DeltaTable(str(target)).to_pyarrow_table()
        return sorted(zip(t["p"].to_pylist(), t["id"].to_pylist(), t["name"].to_pylist()))

    r, rep = migrate(root, wl(4), target, "--no-row-id", *SPARK)
    assert r.code == 0, r.stderr
    first = _current(target)
    at4 = rows(wl(4))  # before the model folds the compaction in
    assert got() == at4

    # a failure after the tasks wrote their files (one vanishes before the commit): nothing
    # committed, every file of the run deleted, the table as it was
    written: list[str] = []

    def lose_a_file(changes):
        paths = [p for c in changes for p in c.files]
        written.extend(paths)
        Path(paths[0]).unlink()

    with faults.hooks({"migrate-before-commit": lose_a_file}):
        r, _ = migrate(root, wl(7), target, "--no-row-id", *SPARK)
    assert r.code == 5 and "nothing was committed" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert written and not any(Path(p).exists() for p in written)
    assert DeltaTable(str(target)).version() == 0 and _current(target) == first == _on_disk(target)

    # a file lost on its way to the commit: verification fails, a RESTORE commit brings version
    # 0 back (its acidctl record too); no file of the failed run is referenced by it
    def drop_a_file(changes):
        for c in changes:
            if c.files:
                c.files = c.files[1:]
                return

    with faults.hooks({"migrate-before-commit": drop_a_file}):
        r, _ = migrate(root, wl(7), target, "--no-row-id", *SPARK)
    assert r.code == 1 and "rolled back" in r.stderr
    dt = DeltaTable(str(target))
    assert dt.version() == 2 and dt.history(1)[0]["operation"] == "RESTORE"
    assert dt.history(1)[0]["acidctl.source-write-ids"] == str(wl(4))
    assert _current(target) == first and got() == at4

    # the compaction in between changes nothing for whole partitions
    for part in ("p=0", "p=1"):
        rec.compact(root, part, wl(6), 6)
    r, rep = migrate(root, wl(7), target, "--no-row-id", *SPARK)
    assert r.code == 0, r.stderr
    assert rep["engine"] == "spark" and {p["how"] for p in rep["partitions"]} == {"replace"}
    assert got() == rows(wl(7))
    dt = DeltaTable(str(target))
    assert dt.version() == 3 and dt.history(1)[0]["acidctl.source-write-ids"] == str(wl(7))
    log = _log(target, 3)
    removed = {urllib.parse.unquote(a["remove"]["path"]) for a in log if "remove" in a}
    replaced = {p["partition"] for p in rep["partitions"]}
    assert removed == {f for f in first if f.split("/")[1] in replaced}
    added = {urllib.parse.unquote(a["path"]) for a in _adds(target, 3)}
    assert added and all(f.split("/")[0] in replaced and f.split("/")[1].startswith("acidctl-") for f in added)
    assert _current(target) == (first - removed) | added
    # the previous version still reads as its snapshot
    t0 = DeltaTable(str(target), version=0).to_pyarrow_table()
    assert sorted(zip(t0["p"].to_pylist(), t0["id"].to_pylist(), t0["name"].to_pylist())) == at4


def test_typed_partitions_refused_then_loaded_as_deltalake_would(spark, tmp_path):  # noqa: F811
    from tests.migrate.test_types import _rows, _write

    root = tmp_path / "typed"
    _write(root / "p=0", _rows())
    _write(root / "p=1", _rows(nanos=789))
    target = tmp_path / "delta"
    w = WriteIdList("db.typed", 1)
    # p=1's nanosecond refuses the run after p=0's task wrote its file: exit 7 as in this
    # process, nothing left behind
    r, _ = migrate(root, w, target, *SPARK)
    assert r.code == 7 and "column ts" in r.stderr and "--timestamp-precision us" in r.stderr
    assert not DeltaTable.is_deltatable(str(target))
    assert not target.exists() or not any(target.iterdir())

    opts = ("--timestamp-precision", "us", "--delta-timestamp", "utc")
    # another writer creates a table there while the tasks write: refused (exit 6), its table
    # untouched, the run's files and directory gone
    from deltalake import write_deltalake

    from acidctl import faults

    def someone_creates(changes):
        write_deltalake(str(target), pa.table({"x": [1]}))

    with faults.hooks({"migrate-before-commit": someone_creates}):
        r, _ = migrate(root, w, target, *opts, *SPARK)
    assert r.code == 6 and "another writer created the table" in r.stderr
    assert DeltaTable(str(target)).version() == 0 and DeltaTable(str(target)).to_pyarrow_table().num_rows == 1
    assert not [p.name for p in target.iterdir() if p.name.startswith("acidctl")]
    assert _on_disk(target) == _current(target) and len(_current(target)) == 1
    import shutil

    shutil.rmtree(target)
    r, rep = migrate(root, w, target, *opts, *SPARK)
    assert r.code == 0, r.stderr
    assert rep["engine"] == "spark"
    local = tmp_path / "local"
    assert migrate(root, w, local, *opts)[0].code == 0
    dt, lt = DeltaTable(str(target)), DeltaTable(str(local))
    assert dt.schema().to_json() == lt.schema().to_json() and dt.protocol() == lt.protocol()
    key = "row__id"
    assert sorted(dt.to_pyarrow_table().to_pylist(), key=lambda x: (x["p"], x[key]["rowid"])) == sorted(
        lt.to_pyarrow_table().to_pylist(), key=lambda x: (x["p"], x[key]["rowid"])
    )
    # per partition: deltalake's partition values and statistics (acidctl gives no float bounds)
    ours = {a["partitionValues"]["p"]: a for a in _adds(target, 0)}
    theirs = {a["partitionValues"]["p"]: a for a in _adds(local, 0)}
    assert ours.keys() == theirs.keys() == {"0", "1"}
    for p in ours:
        assert _no_float_bounds(ours[p]["stats"]) == _no_float_bounds(theirs[p]["stats"])


def test_spark_tasks_write_to_s3(spark, table, s3_server):  # noqa: F811
    """The Delta target on S3 (moto, its endpoint and keys from --fs-option): the tasks write
    through the same storage options as deltalake, a replacing catch-up removes and adds."""
    boto3 = pytest.importorskip("boto3")
    boto3.client(
        "s3", endpoint_url=s3_server, region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s"
    ).create_bucket(Bucket="lake")
    root, rec, _ = table
    url = "s3://lake/db/t"
    fs_opts = ("--fs-option", f"endpoint_url={s3_server}", "--fs-option", "key=k", "--fs-option", "secret=s")
    for w in (wl(4), wl(7)):
        r = run_cli(
            *fs_opts, "-o", "json", "migrate", str(root), "--write-ids", str(w), "--to", "delta", "--target", url,
            "--no-row-id", *SPARK,
        )  # fmt: skip
        assert r.code == 0, r.stderr
        assert json.loads(r.stdout)["engine"] == "spark"
    so = {"AWS_ENDPOINT_URL": s3_server, "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1",
          "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}  # fmt: skip
    dt = DeltaTable(url, storage_options=so)
    assert dt.version() == 1 and dt.history(1)[0]["acidctl.source-write-ids"] == str(wl(7))
    t = dt.to_pyarrow_table()
    assert sorted(zip(t["p"].to_pylist(), t["id"].to_pylist(), t["name"].to_pylist())) == sorted(
        (p, i, n) for (p, *_k, i, n) in rec.table(wl(7))
    )
    paths = [urllib.parse.unquote(a["path"]) for a in pa.table(dt.get_add_actions()).to_pylist()]
    assert paths and all(p.split("/")[-1].startswith("acidctl-") for p in paths)
