"""``acidctl migrate --to delta --target PATH`` end to end on small Hive-3 tables written by
tests/histories.py: first load, catch-ups (a late commit, a compaction + clean in between), the
refusals, the rollback of a failed verification. The Delta table is read back with deltalake
(``DeltaTable(...).to_pyarrow_table()``, ``history()``), never with acidctl, and compared with
the reference model of tests/migrate/helpers.py (Hive's reader rule over the events written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acidctl.acid.writeids import WriteIdList
from tests.conftest import run_cli
from tests.histories import History, Statement, Txn
from tests.migrate import helpers
from tests.migrate.helpers import Recorder

pytest.importorskip("deltalake")
from deltalake import DeltaTable  # noqa: E402


_history = helpers.late_commit_history
wl = helpers.late_commit_wl


def migrate(root: Path, w, target: Path, *extra: str):
    r = run_cli(
        "-o", "json", "migrate", str(root), "--write-ids", str(w), "--to", "delta", "--target", str(target), *extra
    )
    return r, (json.loads(r.stdout) if r.code == 0 and r.stdout.strip() else None)


def delta_rows(target: Path, *, partition: str | None = "p", version: int | None = None) -> set[tuple]:
    """(partition value, writeid, bucketid, rowid, id, name) of every row, read by deltalake."""
    t = DeltaTable(str(target), version=version).to_pyarrow_table()
    out = set()
    for r in t.to_pylist():
        rid = r["row__id"]
        out.add(
            (r[partition] if partition else None, rid["writeid"], rid["bucketid"], rid["rowid"], r["id"], r["name"])
        )
    assert len(out) == t.num_rows
    return out


def files(target: Path, part: str) -> set[str]:
    return {f for f in DeltaTable(str(target)).file_uris() if f"/{part}/" in f}


@pytest.fixture
def table(tmp_path, monkeypatch):
    rec = Recorder()
    root = tmp_path / "t"
    rec.play(_history(), root, monkeypatch)
    return root, rec, tmp_path / "delta" / "t"


def test_first_load_then_catch_ups_are_one_commit_each(table):
    root, rec, target = table
    first = wl(4)
    r, rep = migrate(root, first, target)
    assert r.code == 0, r.stderr
    assert rep["mode"] == "initial" and rep["verified"]["rows"] == len(rec.table(first))
    dt = DeltaTable(str(target))
    assert dt.version() == 0
    assert dt.metadata().partition_columns == ["p"]
    assert [f.name for f in dt.schema().fields] == ["row__id", "id", "name", "p"]
    (h,) = dt.history()
    assert h["acidctl.source-write-ids"] == str(first) and h["acidctl.source-table"].endswith("/t")
    assert delta_rows(target) == rec.table(first)

    second = wl(6, open_=(5,))
    r, rep = migrate(root, second, target)
    assert r.code == 0, r.stderr
    assert delta_rows(target) == rec.table(second)
    dt = DeltaTable(str(target))
    assert dt.version() == 1
    assert dt.history(1)[0]["operation"] == "MERGE"
    assert dt.history(1)[0]["acidctl.source-write-ids"] == str(second)

    # 5 commits late (lower than 6, seen before) and 7 lands in p=1
    third = wl(7)
    r, rep = migrate(root, third, target)
    assert r.code == 0, r.stderr
    assert rep["new_write_ids"] == "5,7"
    assert delta_rows(target) == rec.table(third)
    assert DeltaTable(str(target)).version() == 2
    # every version still reads as its snapshot
    assert delta_rows(target, version=0) == rec.table(first)
    assert delta_rows(target, version=1) == rec.table(second)

    # nothing new: no commit, exit 0
    r, rep = migrate(root, third, target)
    assert r.code == 0 and rep["up_to_date"] and rep["committed"] is None
    assert DeltaTable(str(target)).version() == 2


def test_an_unchanged_partition_keeps_its_files(table):
    root, rec, target = table
    assert migrate(root, wl(6), target)[0].code == 0
    before = files(target, "p=0")
    r, rep = migrate(root, wl(7), target)  # write 7 touches p=1 only
    assert r.code == 0, r.stderr
    assert [p["partition"] for p in rep["partitions"]] == ["p=1"]
    assert files(target, "p=0") == before
    assert delta_rows(target) == rec.table(wl(7))


def test_catch_up_after_a_compaction_compares_row_ids_in_one_commit(table):
    root, rec, target = table
    assert migrate(root, wl(4), target)[0].code == 0
    # writes 5 and 6 (their delete events too) compacted into base_6 and cleaned
    for part in ("p=0", "p=1"):
        rec.compact(root, part, wl(6), 6)
    assert not any(d.name.startswith("delete_delta_0000005") for d in (root / "p=1").iterdir())
    r, rep = migrate(root, wl(7), target)
    assert r.code == 0, r.stderr
    assert {p["how"] for p in rep["partitions"]} == {"compare"}
    assert delta_rows(target) == rec.table(wl(7))
    dt = DeltaTable(str(target))
    assert dt.version() == 1 and dt.history(1)[0]["acidctl.source-write-ids"] == str(wl(7))


def test_other_source_table_and_foreign_writes_are_refused(table, tmp_path):
    root, rec, target = table
    assert migrate(root, wl(4), target)[0].code == 0
    other = tmp_path / "other"
    Recorder().play(
        History(buckets=1, originals=[], txns=[Txn("committed", [Statement("insert", [1], [])])]),
        other,
        pytest.MonkeyPatch(),
    )
    r, _ = migrate(other, WriteIdList("db.other", 1), target)
    assert r.code == 6 and "migrated from" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert DeltaTable(str(target)).version() == 0
    # someone else deleted rows in the target: its content is no Hive snapshot any more
    DeltaTable(str(target)).delete("p = '0'")
    r, _ = migrate(root, wl(7), target)
    assert r.code == 6 and "not written by acidctl" in r.stderr and "DELETE" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert DeltaTable(str(target)).version() == 1


def test_dry_run_creates_and_commits_nothing(table):
    root, rec, target = table
    r, rep = migrate(root, wl(4), target, "--dry-run")
    assert r.code == 0, r.stderr
    assert rep["dry_run"] and rep["committed"] is None
    assert not target.exists()
    assert migrate(root, wl(4), target)[0].code == 0
    loaded = delta_rows(target)
    assert loaded == rec.table(wl(4))
    # a catch-up's dry run (after a compaction: it compares the target's ROW__IDs) plans, commits nothing
    for part in ("p=0", "p=1"):
        rec.compact(root, part, wl(6), 6)
    r, rep = migrate(root, wl(7), target, "--dry-run")
    assert r.code == 0, r.stderr
    assert rep["mode"] == "catch-up" and rep["committed"] is None
    assert {p["how"] for p in rep["partitions"]} == {"compare"}
    assert DeltaTable(str(target)).version() == 0 and delta_rows(target) == loaded


def test_verification_failure_restores_the_previous_version(table):
    from acidctl import faults

    root, rec, target = table
    assert migrate(root, wl(4), target)[0].code == 0

    def lose_a_row(changes):  # a row lost on its way to the target
        for c in changes:
            if c.key == "p=0":
                rows = c.inserts

                def dropped(rows=rows):
                    first = True
                    for b in rows:
                        if first and b.num_rows:
                            first = False
                            b = b.slice(1)
                        yield b

                c.inserts = dropped()

    with faults.hooks({"migrate-before-commit": lose_a_row}):
        r, _ = migrate(root, wl(7), target)
    assert r.code == 1
    assert "partition p=0" in r.stderr and "rolled back" in r.stderr
    dt = DeltaTable(str(target))
    # version 1 is the bad MERGE, version 2 the RESTORE to version 0 (with its record)
    assert dt.version() == 2 and dt.history(1)[0]["operation"] == "RESTORE"
    assert dt.history(1)[0]["acidctl.source-write-ids"] == str(wl(4))
    assert delta_rows(target) == rec.table(wl(4))
    # the next run catches up from the restored record
    r, rep = migrate(root, wl(7), target)
    assert r.code == 0, r.stderr
    assert rep["recorded_write_ids"] == str(wl(4))
    assert delta_rows(target) == rec.table(wl(7))


def test_unpartitioned_and_no_row_id(tmp_path, monkeypatch):
    rec = Recorder()
    h = _history()
    h.partitions = 1
    root = tmp_path / "u"
    rec.play(h, root, monkeypatch)
    target = tmp_path / "d1"
    assert migrate(root, wl(5), target)[0].code == 0
    assert delta_rows(target, partition=None) == rec.table(wl(5))
    r, rep = migrate(root, wl(7), target)
    assert r.code == 0, r.stderr
    assert delta_rows(target, partition=None) == rec.table(wl(7))
    assert DeltaTable(str(target)).metadata().partition_columns == []

    target2 = tmp_path / "d2"
    assert migrate(root, wl(5), target2, "--no-row-id")[0].code == 0
    r, rep = migrate(root, wl(7), target2, "--no-row-id")
    assert r.code == 0, r.stderr
    assert {p["how"] for p in rep["partitions"]} == {"replace"}
    got = DeltaTable(str(target2)).to_pyarrow_table()
    assert "row__id" not in got.column_names
    assert DeltaTable(str(target2)).version() == 1
    assert sorted(zip(got["id"].to_pylist(), got["name"].to_pylist())) == sorted(rec.rows(wl(7), None).values())


def test_unsupported_target_location_is_one_line(table):
    root, _, _ = table
    r, _ = migrate(root, wl(4), Path("x"), "--target", "hdfs://nn:9870/w/t")
    assert r.code == 2 and "WebHDFS" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def _ids(target: Path) -> list[int]:
    return sorted(DeltaTable(str(target)).to_pyarrow_table().column("id").to_pylist())


def test_insert_only_first_load_catch_up_and_overwrite(tmp_path):
    from tests.mm import hivelayout

    root, final, ids = hivelayout.standard(tmp_path / "mm", "parquet")
    target = tmp_path / "delta"
    r, _ = migrate(root, "default.t:2:9223372036854775807::", target, "--format", "parquet")
    assert r.code == 0, r.stderr
    assert _ids(target) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert "row__id" not in DeltaTable(str(target)).to_pyarrow_table().column_names
    # write 3 aborted, 4 committed, 5 open: only write 4's files are added
    r, rep = migrate(root, final, target, "--format", "parquet")
    assert r.code == 0, r.stderr
    assert [p["how"] for p in rep["partitions"]] == ["rows"]
    assert _ids(target) == ids
    # INSERT OVERWRITE (write 6) after 5 commits: the partition is replaced, in one commit
    hivelayout.build(root, "parquet", {"base_0000006": {"000000_0": [hivelayout.row(600), hivelayout.row(601)]}})
    r, rep = migrate(root, "default.t:6:9223372036854775807::3", target, "--format", "parquet")
    assert r.code == 0, r.stderr
    assert [p["how"] for p in rep["partitions"]] == ["replace"]
    assert _ids(target) == [600, 601]
    assert DeltaTable(str(target)).version() == 2


def test_hive2_first_load_and_catch_up(tmp_path):
    import random

    from tests import hive2_histories as h2

    h = h2.random_history(random.Random(11), mode="split-update", txns=8)
    root = h2.write_table(h, tmp_path / "t2")
    target = tmp_path / "delta"
    for version, hwm in enumerate((4, 8)):
        r = run_cli(
            "-o", "json", "migrate", str(root), "--to", "delta", "--target", str(target),
            "--hive-version", "2", "--txns", h.reader_list(hwm),
        )  # fmt: skip
        assert r.code == 0, r.stderr
        got = set()
        for x in DeltaTable(str(target)).to_pyarrow_table().to_pylist():
            k = x["row__id"]
            got.add(((k["writeid"], k["bucketid"], k["rowid"]), x["_col0"], x["_col1"]))
        assert got == {(k, v["_col0"], v["_col1"]) for k, v in h.expected(hwm).items()}
        assert DeltaTable(str(target)).version() == version


@pytest.fixture
def s3_server():
    pytest.importorskip("moto.server")
    from tests.migrate.moto_s3 import moto_s3_process

    with moto_s3_process() as endpoint:
        yield endpoint


def test_migrate_to_s3(table, s3_server, monkeypatch):
    """The Delta target on S3 (moto), its options from --fs-option; the source stays local."""
    boto3 = pytest.importorskip("boto3")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1").create_bucket(Bucket="lake")
    root, rec, _ = table
    url = "s3://lake/db/t"
    for w in (wl(4), wl(7)):
        r = run_cli(
            "--fs-option", f"endpoint_url={s3_server}", "-o", "json", "migrate", str(root),
            "--write-ids", str(w), "--to", "delta", "--target", url,
        )  # fmt: skip
        assert r.code == 0, r.stderr
    so = {"AWS_ENDPOINT_URL": s3_server, "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1"}
    t = DeltaTable(url, storage_options=so)
    assert t.version() == 1 and t.history(1)[0]["acidctl.source-write-ids"] == str(wl(7))
    got = {
        (x["p"], x["row__id"]["writeid"], x["row__id"]["bucketid"], x["row__id"]["rowid"], x["id"], x["name"])
        for x in t.to_pyarrow_table().to_pylist()
    }
    assert got == rec.table(wl(7))


def test_a_first_load_failing_verification_is_emptied_and_loaded_again(table):
    from acidctl import faults

    root, rec, target = table

    def lose_a_row(changes):
        for c in changes:
            if c.key == "p=1":
                rows = c.inserts
                c.inserts = (b.slice(1) if i == 0 else b for i, b in enumerate(rows))

    with faults.hooks({"migrate-before-commit": lose_a_row}):
        r, _ = migrate(root, wl(4), target)
    assert r.code == 1 and "partition p=1" in r.stderr and "rolled back" in r.stderr
    dt = DeltaTable(str(target))
    assert dt.version() == 1 and dt.to_pyarrow_table().num_rows == 0
    r, rep = migrate(root, wl(4), target)
    assert r.code == 0, r.stderr
    assert rep["mode"] == "initial"
    assert delta_rows(target) == rec.table(wl(4))
    r, rep = migrate(root, wl(7), target)
    assert r.code == 0 and rep["mode"] == "catch-up"
    assert delta_rows(target) == rec.table(wl(7))
