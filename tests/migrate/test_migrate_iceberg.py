"""``acidctl migrate --to iceberg``: first load and catch-ups read back with pyiceberg, compared
with the reference model of tests/migrate/helpers.py (Hive's reader rule over the events a
history wrote)."""

from __future__ import annotations


import pytest

from acidctl.acid.writeids import WriteIdList
from tests.histories import History, Statement, Txn
from tests.migrate import helpers
from tests.migrate.helpers import Recorder, iceberg_rows, migrate, snapshot_ids

pytest.importorskip("pyiceberg")


_history = helpers.late_commit_history
wl = helpers.late_commit_wl


@pytest.fixture
def table(tmp_path, monkeypatch):
    rec = Recorder()
    root = tmp_path / "t"
    final = rec.play(_history(), root, monkeypatch)
    # the reference model agrees with the history's own model at the end
    assert rec.table(wl(7)) == {(k[0].split("=")[1], *k[1:], *v) for k, v in final.items()}
    return root, rec, tmp_path / "cat" / "catalog.db"


def test_first_load_then_catch_up_with_late_commit(table):
    root, rec, cat = table
    cat.parent.mkdir()
    first = wl(4, open_=())
    r, rep = migrate(root, first, cat)
    assert r.code == 0, r.stderr
    assert rep["mode"] == "initial" and rep["verified"]["rows"] == len(rec.table(first))
    assert iceberg_rows(cat) == rec.table(first)
    t = helpers.load(cat)
    assert [f.name for f in t.schema().fields] == ["row__id", "id", "name", "p"]
    assert [t.schema().find_column_name(f.source_id) for f in t.spec().fields] == ["p"]
    assert t.properties["write.parquet.compression-codec"] == "snappy"
    assert t.properties["write.parquet.dict-size-bytes"] == "262144"
    summary = t.current_snapshot().summary.additional_properties
    assert summary["acidctl.source-write-ids"] == str(first)
    assert summary["acidctl.source-table"].endswith("/t")

    # second sync: 5 was open, 6 committed; 7 not yet allocated
    second = wl(6, open_=(5,))
    r, rep = migrate(root, second, cat)
    assert r.code == 0, r.stderr
    assert iceberg_rows(cat) == rec.table(second)
    files_before = helpers.data_files(cat)

    # third: 5 committed (lower than 6, seen before), 7 committed in p=1 only
    third = wl(7)
    r, rep = migrate(root, third, cat)
    assert r.code == 0, r.stderr
    assert rep["new_write_ids"] == "5,7"
    assert iceberg_rows(cat) == rec.table(third)
    assert len(snapshot_ids(cat)) == 3
    summary = helpers.load(cat).current_snapshot().summary.additional_properties
    assert summary["acidctl.source-write-ids"] == str(third)
    assert rep["verified"]["partitions"] == len({p["partition"] for p in rep["partitions"]})
    del files_before

    # nothing new: no snapshot, exit 0
    r, rep = migrate(root, third, cat)
    assert r.code == 0 and rep["up_to_date"] and rep["committed"] is None
    assert len(snapshot_ids(cat)) == 3


def test_unchanged_partition_keeps_its_files(table):
    root, rec, cat = table
    cat.parent.mkdir()
    assert migrate(root, wl(6), cat)[0].code == 0
    before = helpers.data_files(cat)
    r, rep = migrate(root, wl(7), cat)  # write 7 touches p=1 only
    assert r.code == 0, r.stderr
    assert [p["partition"] for p in rep["partitions"]] == ["p=1"]
    after = helpers.data_files(cat)
    assert after["0"] == before["0"]
    assert after["1"] > before["1"]  # an insert only: files added, none rewritten
    assert iceberg_rows(cat) == rec.table(wl(7))


def test_compaction_between_syncs_compares_row_ids(table):
    root, rec, cat = table
    cat.parent.mkdir()
    assert migrate(root, wl(4), cat)[0].code == 0
    # writes 5 and 6 (with their deletes) compacted into base_6 and cleaned in both partitions
    for part in ("p=0", "p=1"):
        rec.compact(root, part, wl(6), 6)
    assert not any(d.name.startswith("delete_delta_0000005") for d in (root / "p=1").iterdir())
    r, rep = migrate(root, wl(7), cat)
    assert r.code == 0, r.stderr
    assert {p["how"] for p in rep["partitions"]} == {"compare"}
    assert iceberg_rows(cat) == rec.table(wl(7))
    assert len(snapshot_ids(cat)) == 2  # still one snapshot for the catch-up


def test_other_source_table_is_refused(table, tmp_path):
    root, rec, cat = table
    cat.parent.mkdir()
    assert migrate(root, wl(4), cat)[0].code == 0
    other = tmp_path / "other"
    Recorder().play(
        History(buckets=1, originals=[], txns=[Txn("committed", [Statement("insert", [1], [])])]),
        other,
        pytest.MonkeyPatch(),
    )
    before = snapshot_ids(cat)
    r, _ = migrate(other, WriteIdList("db.other", 1), cat)
    assert r.code == 6
    assert "migrated from" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert snapshot_ids(cat) == before


def test_dry_run_writes_nothing(table):
    root, rec, cat = table
    cat.parent.mkdir()
    r, rep = migrate(root, wl(4), cat, "--dry-run")
    assert r.code == 0, r.stderr
    assert rep["dry_run"] and rep["committed"] is None
    assert sorted(p["partition"] for p in rep["partitions"]) == ["p=0", "p=1"]
    from pyiceberg.exceptions import NoSuchTableError

    with pytest.raises(NoSuchTableError):
        helpers.load(cat)


def test_verification_failure_rolls_back(table):
    from acidctl import faults

    root, rec, cat = table
    cat.parent.mkdir()
    assert migrate(root, wl(4), cat)[0].code == 0
    before = helpers.load(cat).current_snapshot().snapshot_id

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
        r, _ = migrate(root, wl(7), cat)
    assert r.code == 1
    assert "partition p=0" in r.stderr and "rolled back" in r.stderr
    t = helpers.load(cat)
    assert t.current_snapshot().snapshot_id == before
    assert iceberg_rows(cat) == rec.table(wl(4))
    # the next run catches up from the recorded snapshot
    r, rep = migrate(root, wl(7), cat)
    assert r.code == 0, r.stderr
    assert iceberg_rows(cat) == rec.table(wl(7))


def test_unpartitioned_and_no_row_id(tmp_path, monkeypatch):
    rec = Recorder()
    h = _history()
    h.partitions = 1
    root = tmp_path / "u"
    rec.play(h, root, monkeypatch)
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    assert migrate(root, wl(5, open_=()), cat)[0].code == 0
    assert iceberg_rows(cat, partition=None) == rec.table(wl(5))
    r, rep = migrate(root, wl(7), cat)
    assert r.code == 0, r.stderr
    assert iceberg_rows(cat, partition=None) == rec.table(wl(7))

    cat2 = tmp_path / "cat2" / "c.db"
    cat2.parent.mkdir()
    assert (
        migrate(root, wl(5), cat2, "--no-row-id", "--table-property", "write.parquet.compression-codec=zstd")[0].code
        == 0
    )
    assert helpers.load(cat2).properties["write.parquet.compression-codec"] == "zstd"
    r, rep = migrate(root, wl(7), cat2, "--no-row-id")
    assert r.code == 0, r.stderr
    assert {p["how"] for p in rep["partitions"]} == {"replace"}
    got = helpers.load(cat2).scan().to_arrow()
    assert "row__id" not in got.column_names
    assert sorted(zip(got["id"].to_pylist(), got["name"].to_pylist())) == sorted(
        v for *_, v in [(k, r) for k, r in rec.rows(wl(7), None).items()]
    )


@pytest.mark.parametrize("kind", ["--major", "--minor"])
def test_acidctl_compaction_and_clean_between_syncs(table, kind):
    """Between two syncs the table is compacted and cleaned by acidctl's own compactor (Hive's
    layout: a base, or delta_x_y / delete_delta_x_y holding several writes)."""
    from tests.conftest import run_cli

    root, rec, cat = table
    cat.parent.mkdir()
    assert migrate(root, wl(4), cat)[0].code == 0
    extra = ["--allow-non-atomic-publish"] if kind == "--minor" else []
    r = run_cli("compact", str(root), "--write-ids", str(wl(6)), kind, "--engine", "local", *extra)
    assert r.code == 0, r.stderr
    r = run_cli("clean", str(root), "--write-ids", str(wl(6)), "--min-age", "0", "--execute")
    assert r.code == 0, r.stderr
    names = {d.name for d in (root / "p=0").iterdir()}
    assert not any(n.startswith("delta_0000005_0000005") for n in names)  # folded away
    r, rep = migrate(root, wl(7), cat)
    assert r.code == 0, r.stderr
    assert iceberg_rows(cat) == rec.table(wl(7))
    assert len(snapshot_ids(cat)) == 2
    if kind == "--major":
        assert {p["how"] for p in rep["partitions"]} == {"compare"}


def test_dropped_partition_is_removed(table):
    import shutil

    root, rec, cat = table
    cat.parent.mkdir()
    assert migrate(root, wl(7), cat)[0].code == 0
    before = helpers.data_files(cat)
    shutil.rmtree(root / "p=1")  # ALTER TABLE DROP PARTITION (p='1') of a managed table
    r, rep = migrate(root, wl(7), cat)
    assert r.code == 0, r.stderr
    assert [(p["partition"], p["how"]) for p in rep["partitions"]] == [("p=1", "drop")]
    assert iceberg_rows(cat) == {row for row in rec.table(wl(7)) if row[0] == "0"}
    assert helpers.data_files(cat) == {"0": before["0"]}
    r, rep = migrate(root, wl(7), cat)
    assert rep["up_to_date"]


def test_file_out_of_key_order_migrates_each_row_once(tmp_path):
    """delta_1 in key order, then delta_2 written out of key order: the streamed read hands
    delta_1's live rows on, meets delta_2 and falls back to the whole-bucket merge, leaving out
    the rows already handed on (by ROW__ID, unique within a bucket). The target holds every
    live row once (orc-acid-files.md §5: delta_1's rows 0-9 less the deleted 3, delta_2's rows
    0-5 less the deleted 4) and the verification passes."""
    from tests.export.test_export_stream import B0, out_of_key_order_table

    root = out_of_key_order_table(tmp_path / "t")
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    r, rep = migrate(root, WriteIdList(table="db.t", hwm=3), cat)
    assert r.code == 0, r.stderr
    assert rep["verified"] == {"partitions": 1, "rows": 14}
    expected = {(None, 1, B0, i, i, f"r{i}") for i in range(10) if i != 3}
    expected |= {(None, 2, B0, r, 100 + r, f"r{100 + r}") for r in range(6) if r != 4}
    got = helpers.load(cat).scan().to_arrow()
    assert got.num_rows == 14
    assert iceberg_rows(cat, partition=None) == expected
