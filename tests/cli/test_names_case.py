"""Every place a user names a data column matches it case-insensitively, as Hive does (column
names are case-insensitive; Hive writes partition directories with lower-case keys,
FileUtils.makePartName): ``--columns`` of dump on ORC originals and Parquet files, and partition
keys in ``--partition`` of state, compact and export. (ACID ORC rows: tests/cli/test_dump_cli.py;
insert-only schemas: tests/mm/test_formats.py.)"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from tests.conftest import run_cli

    d = tmp_path_factory.mktemp("case") / "demo"
    assert run_cli("-o", "json", "demo", str(d)).code == 0
    return d


def _rows(text: str) -> list[dict]:
    return [json.loads(x) for x in text.splitlines() if x.strip()]


@pytest.mark.parametrize("name", ["ID", "id", "Id"])
def test_dump_columns_of_original_orc_and_parquet_files(tmp_path, cli, name):
    data = pa.table({"Id": pa.array([3, 4], pa.int32()), "NAME": ["x", "y"]})
    po.write_table(data, str(tmp_path / "000000_0"))
    pq.write_table(data, str(tmp_path / "part.parquet"))
    orc = cli("-o", "json", "dump", "--columns", name, tmp_path / "000000_0")
    assert orc.code == 0, orc
    assert _rows(orc.stdout) == [{"Id": 3}, {"Id": 4}]  # the file's own spelling of the name
    parquet = cli("-o", "json", "dump", "--columns", name, tmp_path / "part.parquet")
    assert parquet.code == 0, parquet
    assert [list(r.values()) for r in _rows(parquet.stdout)] == [[3], [4]]


def test_export_partition_key_in_any_case(demo, cli, tmp_path):
    # demo.py: ds=2025-12-31 holds originals with ids 1..5, write 1 deletes id 3, write 2 adds 6, 7
    url = f"sqlite:///{demo / 'metastore.db'}"
    r = cli("--metastore", url, "-o", "json", "export", "--partition", "DS=2025-12-31", "default.sales", tmp_path / "x")
    assert r.code == 0, r
    doc = json.loads(r.stdout)
    assert (doc["partitions"], doc["rows"]) == (1, 6)
    got = pq.read_table(str(tmp_path / "x" / "ds=2025-12-31")).column("id").to_pylist()
    assert sorted(got) == [1, 2, 4, 5, 6, 7]


def test_compact_partition_key_in_any_case(demo, cli):
    url = f"sqlite:///{demo / 'metastore.db'}"
    r = cli(
        "--metastore",
        url,
        "-o",
        "json",
        "compact",
        "--dry-run",
        "--major",
        "--partition",
        "Ds=2025-12-31",
        "default.sales",
    )
    assert r.code == 0, r
    assert [p["partition"] for p in json.loads(r.stdout)["partitions"]] == ["ds=2025-12-31"]


def test_state_partition_key_in_any_case(demo, cli):
    r = cli("-o", "json", "state", "--assume-committed", "--partition", "DS=2026-01-01", demo / "warehouse" / "sales")
    assert r.code == 0, r
    assert json.loads(r.stdout)["path"].endswith("/sales/ds=2026-01-01")


def test_insert_only_compact_partition_key_in_any_case(tmp_path, cli):
    from tests.mm import hivelayout as H

    root = tmp_path / "t"
    H.build(root / "ds=a", "parquet", {"delta_0000001_0000001_0000": {"000000_0": [H.row(1)]}})
    H.build(
        root / "ds=b",
        "parquet",
        {
            "delta_0000002_0000002_0000": {"000000_0": [H.row(2)]},
            "delta_0000002_0000002_0001": {"000000_0": [H.row(22)]},
        },
    )
    wl = "default.t:2:9223372036854775807::"
    args = ("compact", "--major", "--engine", "local", "--format", "parquet", "--write-ids", wl)
    r = cli("-o", "json", *args, "--partition", "DS=b", root)
    assert r.code == 0, r
    # the compactor hwm (2) names the base (insert-only-and-hive2.md A.6); ds=a is not touched
    assert [(p["partition"], p["output_dirs"]) for p in json.loads(r.stdout)["partitions"]] == [
        ("ds=b", ["base_0000002"])
    ]
    assert sorted(x.name for x in (root / "ds=a").iterdir()) == ["delta_0000001_0000001_0000"]
    # a partition that is not there: exit 3, naming the ones there are (as full-ACID runs do)
    r = cli(*args, "--partition", "ds=c", root)
    assert r.code == 3 and "partitions: ds=a, ds=b" in r.stderr, r
