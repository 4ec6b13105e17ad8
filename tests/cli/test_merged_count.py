"""``dump --merged --count`` (new-user report: "a count-only mode for --merged"): the rows a reader
sees per partition and bucket, without printing them. Expected counts come from the demo's
documented writes (acidctl/demo.py: sales is bucketed by id into 2 buckets, bucket = id mod 2)
and from the insert-only layout of tests/mm/hivelayout.py, never from acidctl's output."""

from __future__ import annotations

import json

import pytest

from tests.mm import hivelayout as H

# demo sales, current snapshot (write 4 aborted, write 7 open):
# ds=2025-12-31: originals 2, 4 | 1, 3 | 5, write 1 deletes 3, write 2 inserts 6, 7
# ds=2026-01-01: write 3 inserts 10-19, write 5 updates 10 and inserts 21, write 6 deletes 11, 12
SALES = {
    "ds=2025-12-31": [1, 2, 4, 5, 6, 7],
    "ds=2026-01-01": [10, 13, 14, 15, 16, 17, 18, 19, 21],
}


def expected(ids_by_partition):
    out = []
    for part, ids in ids_by_partition.items():
        buckets = {}
        for i in ids:
            buckets[i % 2] = buckets.get(i % 2, 0) + 1
        out.append(
            {
                "partition": part,
                "rows": len(ids),
                "buckets": [{"bucket": b, "rows": n} for b, n in sorted(buckets.items())],
            }
        )
    return out


def count(cli, *args):
    r = cli("-o", "json", "dump", "--merged", "--count", *args)
    assert r.code == 0, r
    return json.loads(r.stdout)


def test_counts_per_partition_and_bucket(cli, demo):
    doc = count(cli, "default.sales")
    [t] = doc["targets"]
    assert t["table"] == "default.sales" and t["write_ids"] == "default.sales:7:7:7:4"
    assert t["partitions"] == expected(SALES)
    assert t["rows"] == doc["rows"] == 15


def test_counts_match_the_rows_dump_merged_prints(cli, demo):
    for spec in ("default.sales", "default.employee", "sales/ds=2026-01-01"):
        r = cli("-o", "json", "dump", "--merged", spec)
        assert r.code == 0, r
        assert count(cli, spec)["rows"] == len(r.stdout.splitlines())


def test_statement_ids_of_one_bucket_count_as_that_bucket(cli, demo):
    # employee is unbucketed: write 2's statement 1 re-inserts Tom as bucket property 536870913
    # (V1, bucket 0, statement 1); Jerry, Tom, Mary remain, all in bucket 0
    [t] = count(cli, "default.employee")["targets"]
    assert t["partitions"] == [{"partition": None, "rows": 3, "buckets": [{"bucket": 0, "rows": 3}]}]


def test_as_of_and_empty_partitions(cli, demo):
    # after write 1: the originals minus id 3; ds=2026-01-01 has nothing yet and is listed with 0
    [t] = count(cli, "default.sales", "--as-of", "1")["targets"]
    assert t["partitions"] == expected({"ds=2025-12-31": [1, 2, 4, 5], "ds=2026-01-01": []})
    assert t["rows"] == 4


def test_several_targets_and_a_total(cli, demo):
    doc = count(cli, "default.employee", "default.sales/ds=2025-12-31")
    assert [t["rows"] for t in doc["targets"]] == [3, 6] and doc["rows"] == 9
    assert doc["targets"][1]["partitions"] == expected({"ds=2025-12-31": SALES["ds=2025-12-31"]})


def test_text_output(cli, demo):
    r = cli("dump", "--merged", "--count", "default.sales")
    assert r.code == 0 and r.stderr == "", r
    lines = r.stdout.splitlines()
    assert lines[0].startswith("acidctl dump --merged --count ") and "default.sales:7:7:7:4" in lines[0]
    cells = [line.split() for line in lines[3:-1]]
    assert cells == [
        ["ds=2025-12-31", "0", "3"],
        ["ds=2025-12-31", "1", "3"],
        ["ds=2025-12-31", "all", "6"],
        ["ds=2026-01-01", "0", "4"],
        ["ds=2026-01-01", "1", "5"],
        ["ds=2026-01-01", "all", "9"],
    ]
    assert lines[-1] == "total: 15 rows in 2 partitions"
    # demo.py: employee is unpartitioned (one "partition", the table) and a reader sees 3 rows;
    # events (insert-only) shows rows 1-5 of writes 1 and 2, write 3 aborted
    assert (
        cli("dump", "--merged", "--count", "default.employee").stdout.splitlines()[-1] == "total: 3 rows in 1 partition"
    )
    assert (
        cli("dump", "--merged", "--count", "default.events").stdout.splitlines()[-1] == "total: 5 rows in 1 partition"
    )


def test_merged_rows_refuse_columns_instead_of_ignoring_them(cli, demo):
    """``--columns id,name`` picks columns of a file's events; a reader's rows (``--merged``) come
    whole, so naming columns there is a usage error, not an option silently ignored."""
    r = cli("dump", "--merged", "--columns", "id,name", "default.employee")
    assert r.code == 2 and r.stdout == "", r
    assert len(r.stderr.strip().splitlines()) == 1 and "--columns" in r.stderr
    root, _ = demo
    f = root / "warehouse" / "employee" / "delta_0000002_0000002_0001" / "bucket_00000"
    r = cli("-o", "json", "dump", "--columns", "id,name", str(f))
    assert r.code == 0, r
    # demo.py: write 2's second statement inserted (2, Tom, 7000) into bucket 1
    assert [json.loads(x)["row"] for x in r.stdout.splitlines()] == [{"id": 2, "name": "Tom"}]


@pytest.mark.parametrize("fmt", ["orc", "text"])
def test_insert_only_table(cli, tmp_path, fmt):
    root, wl, ids = H.standard(tmp_path / "t", fmt)
    doc = count(cli, root, "--format", fmt, "--columns", H.COLUMNS_SPEC, "--write-ids", wl)
    # every file of the layout is named 000000_0 (bucket 0); aborted write 3 and open write 5 unread
    assert doc["targets"][0]["partitions"] == [
        {"partition": None, "rows": len(ids), "buckets": [{"bucket": 0, "rows": len(ids)}]}
    ]


def test_count_needs_merged_and_takes_no_limit(cli, demo):
    r = cli("dump", "--count", "default.sales")
    assert r.code == 2 and "--count needs --merged" in r.stderr
    r = cli("dump", "--merged", "--count", "--limit", "3", "default.sales")
    assert r.code == 2 and "--limit" in r.stderr
