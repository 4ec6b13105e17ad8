"""Merged reads against the results the fixtures' origin projects state, and the demo."""

from __future__ import annotations

import json
import shutil

import pytest

from tests import acidfiles
from tests.conftest import GOLDEN, REAL

ALL = "9223372036854775807"


def _rows(cli, path, snapshot, *extra):
    r = cli("-o", "json", "dump", "--merged", "--write-ids", snapshot, *extra, path)
    assert r.code == 0, r
    return [json.loads(x) for x in r.stdout.splitlines()]


@pytest.fixture
def nation_table(tmp_path):
    return acidfiles.nation_table(tmp_path)


def test_nation_with_two_delete_deltas_reads_23000_rows_without_5_and_19(cli, nation_table):
    rows = _rows(cli, nation_table, f"db.t:4:{ALL}::")
    assert len(rows) == 23000
    keys = [r["n_nationkey"] for r in rows]
    assert sorted(set(keys)) == [k for k in range(25) if k not in (5, 19)]
    assert all(keys.count(k) == 1000 for k in set(keys))
    assert keys == sorted(keys)  # in nation-key order, as the origin test reads them
    assert rows[0]["row__id"] == {"writeid": 2, "bucketid": 536870912, "rowid": 0}


def test_nation_delete_not_yet_committed_is_not_applied(cli, nation_table):
    # write id 4 still open: only ETHIOPIA (5) is gone
    rows = _rows(cli, nation_table, "db.t:4:4:4:")
    assert len(rows) == 24000 and 19 in {r["n_nationkey"] for r in rows}
    # write id 3 aborted: its deletes do not count either
    rows = _rows(cli, nation_table, f"db.t:4:{ALL}::3")
    assert len(rows) == 24000 and 5 in {r["n_nationkey"] for r in rows}


def test_nation_as_of_write_2_reads_everything(cli, nation_table):
    assert len(_rows(cli, nation_table, f"db.t:4:{ALL}::", "--as-of", "2")) == 25000


def test_original_file_with_delete_delta_reads_24_rows(cli, tmp_path):
    t = tmp_path / "t"
    shutil.copytree(REAL / "prestosql-qubole" / "fullacidNationTableWithOriginalFiles", t)
    rows = _rows(cli, t, f"db.t:10000001:{ALL}::")
    assert len(rows) == 24  # "One row is deleted so total number of rows should be 1 less"
    # synthetic ROW__IDs of 000000_0: (0, 536870912, 0..24), one of them deleted
    ids = [r["row__id"] for r in rows]
    assert all(i["writeid"] == 0 and i["bucketid"] == 536870912 for i in ids)
    assert len({i["rowid"] for i in ids}) == 24 and max(i["rowid"] for i in ids) <= 24


def test_dummy_id_originals_get_stated_synthetic_row_ids(cli, tmp_path):
    t = tmp_path / "t"
    shutil.copytree(REAL / "trino" / "dummy_id_data_orc", t)
    rows = _rows(cli, t, f"db.t:10000001:{ALL}::")
    # 19 rows: the 20 stored ids minus id 3 (rowId 2 of bucket 0)
    assert sorted(r["id"] for r in rows) == [0, 1, 4] + list(range(5, 21))
    by_id = {r["id"]: r["row__id"] for r in rows}
    # 000002_0_copy_2 starts at rowId 8 (stated by origin): its ids are 17..20
    assert [by_id[i]["rowid"] for i in (17, 18, 19, 20)] == [8, 9, 10, 11]
    assert by_id[17]["bucketid"] == 537001984
    # 000001_0 is the only file of bucket 1: rowIds 0..3
    assert [by_id[i]["rowid"] for i in (5, 6, 7, 8)] == [0, 1, 2, 3]


def test_qubole_dummy_id_deletes_ids_6_and_11(cli, tmp_path):
    t = tmp_path / "t"
    shutil.copytree(REAL / "prestosql-qubole" / "dummy_id_data_orc", t)
    rows = _rows(cli, t, f"db.t:2:{ALL}::")
    assert sorted(r["id"] for r in rows) == [0, 1, 3, 4, 5, 7, 8, 9, 10] + list(range(12, 21))


def test_hive23_seed_table(cli, tmp_path):
    t = tmp_path / "t"
    shutil.copytree(GOLDEN / "hive23_seed_table", t, ignore=shutil.ignore_patterns("_EXPECTED.md"))
    rows = _rows(cli, t, f"db.t:2:{ALL}::")
    assert [(r["_col0"], r["_col1"], r["_col2"]) for r in rows] == [
        (1, "Jerry", 5000),
        (3, "Kate", 6000),
        (2, "Tom", 7000),
    ]


def test_demo_warehouse_reads_the_seed_examples_final_rows(cli, tmp_path):
    assert cli("demo", tmp_path / "demo").code == 0
    wh = tmp_path / "demo" / "warehouse"
    rows = _rows(cli, wh / "employee", f"default.employee:3:{ALL}::")
    assert sorted((r["id"], r["name"], r["salary"]) for r in rows) == [
        (1, "Jerry", 5000),
        (2, "Tom", 7000),
        (4, "Mary", 9000),
    ]
    sales = _rows(cli, wh / "sales", f"default.sales:6:{ALL}::4")
    got = sorted((r["ds"], r["id"], r["amount"]) for r in sales)
    want = sorted(
        [("2025-12-31", i, str(i * 1.5).rstrip("0").rstrip(".")) for i in (1, 2, 4, 5, 6, 7)]
        + [("2026-01-01", 10, "99.99")]
        + [("2026-01-01", i, str(i * 1.5).rstrip("0").rstrip(".")) for i in (13, 14, 15, 16, 17, 18, 19, 21)]
    )
    assert got == want


def test_merged_needs_a_snapshot(cli, nation_table):
    r = cli("dump", "--merged", nation_table)
    assert r.code == 2 and "--write-ids" in r.stderr


def test_merged_not_enough_history_exit_7(cli, tmp_path, nation_table):
    # a compacted base above the lowest open write id: "Not enough history available"
    t = tmp_path / "h"
    (t / "base_0000020").mkdir(parents=True)
    (t / "base_0000020" / "_metadata_acid").write_text('{"thisFileVersion":"0","dataFormat":"compacted"}')
    shutil.copy(nation_table / "delta_0000002_0000002_0000" / "bucket_00000", t / "base_0000020" / "bucket_00000")
    r = cli("dump", "--merged", "--write-ids", "db.t:25:15:15:", t)
    assert r.code == 7
    assert "Not enough history available for (25,15).  Oldest available base:" in r.stderr
