"""``migrate --add-files DB.TABLE``: an insert-only Parquet table from the metastore (Parquet
SerDe, typed partition columns, its snapshot from the transaction tables) registered in Iceberg,
then compacted by ``acidctl compact --major`` (the table's own format) and caught up in one
snapshot; after ``clean`` deleted the replaced files, Iceberg still reads every row."""

from __future__ import annotations

import datetime
import json
import time

import pytest

from tests.metastore.conftest import backend, empty_db, hive_version, metastore  # noqa: F401  (fixtures)
from tests.migrate import helpers
from tests.migrate.test_add_files import HIVE_SCHEMA, row, write
from tests.mm.test_mm_metastore import add_storage

pytest.importorskip("pyiceberg")

PARQUET_SERDE = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"
PARQUET_INPUT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat"
PARQUET_OUTPUT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"
COLUMNS = [("id", "int"), ("name", "string"), ("amount", "decimal(10,2)"), ("tags", "array<string>")]


def _partitions_like_the_table(url: str) -> None:
    """Every SDS row (the partitions' own) with the table's Parquet SerDe and formats."""
    import sqlalchemy as sa

    eng = sa.create_engine(url)
    sds = sa.table("SDS", sa.column("SERDE_ID"), sa.column("INPUT_FORMAT"), sa.column("OUTPUT_FORMAT"))
    with eng.begin() as c:
        c.execute(sds.update().values(SERDE_ID=1, INPUT_FORMAT=PARQUET_INPUT, OUTPUT_FORMAT=PARQUET_OUTPUT))
    eng.dispose()


def _migrate(cli, url, cat, *extra):
    return cli(
        "-o",
        "json",
        "--metastore",
        url,
        "migrate",
        "default.pq",
        *helpers.iceberg_target(cat, "ns.pq"),
        "--add-files",
        *extra,
    )


def _rows(cat) -> set[tuple]:
    t = helpers.load(cat, "ns.pq")
    return {(r["ds"], r["h"], r["id"]) for r in t.scan().to_arrow().to_pylist()}


def _files(cat) -> set[str]:
    return {t.file.file_path for t in helpers.load(cat, "ns.pq").scan().plan_files()}


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_metastore_parquet_table_registered_compacted_and_caught_up(tmp_path, cli, metastore, hive_version):  # noqa: F811
    url, rec = metastore
    root = tmp_path / "wh" / "pq"
    rec.create_table(
        "default",
        "pq",
        location=f"file:{root}",
        columns=COLUMNS,
        partition_keys=[("ds", "date"), ("h", "int")],
        insert_only=True,
    )
    parts = ["ds=2024-01-01/h=3", "ds=2024-01-02/h=4"]
    for p in parts:
        rec.add_partition("default", "pq", p)
    add_storage(url, "pq", slib=PARQUET_SERDE, input_format=PARQUET_INPUT, output_format=PARQUET_OUTPUT, params={})
    _partitions_like_the_table(url)
    d1, d2 = datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)
    # write id: (state, partition, rows)
    writes = {
        1: ("commit", parts[0], [1, 2]),
        2: ("commit", parts[1], [3]),
        3: ("abort", parts[0], [30]),
        4: ("commit", parts[0], [4]),
        5: ("open", parts[1], [50]),
    }
    txns = {}
    for w, (state, p, ids) in writes.items():
        txn = rec.open_txn()
        assert rec.add_write(txn, "default", "pq", partition=p) == w
        write(root / p / f"delta_{w:07d}_{w:07d}_0000" / "000000_0", [row(i) for i in ids], HIVE_SCHEMA)
        if state == "commit":
            rec.commit_txn(txn)
        elif state == "abort":
            rec.abort_txn(txn)
        txns[w] = txn
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    r = _migrate(cli, url, cat)
    assert r.code == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["source"] == "default.pq" and rep["verified"]["rows"] == 4
    assert _rows(cat) == {(d1, 3, 1), (d1, 3, 2), (d1, 3, 4), (d2, 4, 3)}
    t = helpers.load(cat, "ns.pq")
    assert {f.name: str(f.field_type) for f in t.schema().fields}["ds"] == "date"
    assert _files(cat) == {
        f"file://{root}/{parts[0]}/delta_0000001_0000001_0000/000000_0",
        f"file://{root}/{parts[0]}/delta_0000004_0000004_0000/000000_0",
        f"file://{root}/{parts[1]}/delta_0000002_0000002_0000/000000_0",
    }
    # Iceberg prunes by the partition records it was given (date as days, int)
    from pyiceberg.expressions import EqualTo

    assert [r["id"] for r in t.scan(row_filter=EqualTo("h", 4)).to_arrow().to_pylist()] == [3]

    # write 5 commits; write 6 inserts into the first partition; then a major compaction of it
    rec.commit_txn(txns[5])
    txn = rec.open_txn()
    assert rec.add_write(txn, "default", "pq", partition=parts[0]) == 6
    write(root / parts[0] / "delta_0000006_0000006_0000" / "000000_0", [row(6)], HIVE_SCHEMA)
    rec.commit_txn(txn)
    r = cli("-o", "json", "--metastore", url, "compact", "--major", "--engine", "local", f"default.pq/{parts[0]}")
    assert r.code == 0, r.stderr
    out_dir = json.loads(r.stdout)["partitions"][0]["output_dirs"][0]
    r = _migrate(cli, url, cat)
    assert r.code == 0, r.stderr
    rep = json.loads(r.stdout)
    want = {(d1, 3, 1), (d1, 3, 2), (d1, 3, 4), (d1, 3, 6), (d2, 4, 3), (d2, 4, 50)}
    assert _rows(cat) == want
    t = helpers.load(cat, "ns.pq")
    assert len(t.snapshots()) == 2
    files = _files(cat)
    assert {f for f in files if parts[0] in f} == {
        f"file://{p}" for p in (root / parts[0] / out_dir).rglob("*") if p.is_file() and not p.name.startswith("_")
    }
    assert f"file://{root}/{parts[1]}/delta_0000005_0000005_0000/000000_0" in files
    assert rep["committed"]["files_removed"] == 2
    # the Cleaner removes the replaced deltas: Iceberg no longer lists them, every row still reads
    if hive_version == 4:
        time.sleep(1.1)  # Hive 4's Cleaner: no txn younger than its 1 s open-txn window
    r = cli("--metastore", url, "clean", "default.pq", "--min-age", "0", "--execute")
    assert r.code == 0, r.stderr
    assert not (root / parts[0] / "delta_0000001_0000001_0000").exists()
    assert _rows(cat) == want
    r = _migrate(cli, url, cat)
    assert r.code == 0 and json.loads(r.stdout)["up_to_date"] is True


#: the table after ``ALTER TABLE pq ADD COLUMNS (note string, score bigint)``
ADDED = [("note", "string"), ("score", "bigint")]


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_files_written_before_add_columns_read_the_new_columns_as_null(tmp_path, cli, metastore):  # noqa: F811
    """A file written before ``ALTER TABLE ADD COLUMNS`` lacks the new trailing columns: Hive's
    Parquet reader resolves columns by name and reads NULL for a column the file lacks
    (DataWritableReadSupport), Iceberg's name mapping reads NULL for a field no column maps to.
    The file is registered as it is; pyiceberg reads NULL there and the new file's values, and
    acidctl's verification (Hive's read vs pyiceberg's) agrees. A file whose new column has
    another type is still refused."""
    import pyarrow as pa

    url, rec = metastore
    root = tmp_path / "wh" / "pq"
    rec.create_table("default", "pq", location=f"file:{root}", columns=COLUMNS + ADDED, insert_only=True)
    add_storage(url, "pq", slib=PARQUET_SERDE, input_format=PARQUET_INPUT, output_format=PARQUET_OUTPUT, params={})
    _partitions_like_the_table(url)
    new_schema = pa.schema([*HIVE_SCHEMA, ("note", pa.string()), ("score", pa.int64())])
    old = root / "delta_0000001_0000001_0000" / "000000_0"
    new = root / "delta_0000002_0000002_0000" / "000000_0"
    for w, (path, rows, schema) in enumerate(
        [
            (old, [row(1), row(2, ["t"])], HIVE_SCHEMA),
            (new, [{**row(3), "note": "x", "score": 7}, {**row(4), "note": None, "score": None}], new_schema),
        ],
        start=1,
    ):
        txn = rec.open_txn()
        assert rec.add_write(txn, "default", "pq") == w
        write(path, rows, schema)
        rec.commit_txn(txn)
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    r = cli(
        "-o", "json", "--metastore", url, "migrate", "default.pq", *helpers.iceberg_target(cat, "ns.pq"), "--add-files"
    )
    assert r.code == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["verified"] == {"partitions": 1, "rows": 4}
    t = helpers.load(cat, "ns.pq")
    assert {task.file.file_path for task in t.scan().plan_files()} == {f"file://{old}", f"file://{new}"}
    got = sorted((r["id"], r["tags"], r["note"], r["score"]) for r in t.scan().to_arrow().to_pylist())
    assert got == [(1, None, None, None), (2, ["t"], None, None), (3, None, "x", 7), (4, None, None, None)]

    # write 3: a file whose new column is a string where the table says bigint: refused
    txn = rec.open_txn()
    assert rec.add_write(txn, "default", "pq") == 3
    bad = root / "delta_0000003_0000003_0000" / "000000_0"
    bad_schema = pa.schema([*HIVE_SCHEMA, ("score", pa.string())])
    write(bad, [{**row(5), "score": "7"}], bad_schema)
    rec.commit_txn(txn)
    r = cli(
        "-o", "json", "--metastore", url, "migrate", "default.pq", *helpers.iceberg_target(cat, "ns.pq"), "--add-files"
    )
    assert r.code == 7, r.stderr
    assert "column score" in r.stderr and "delta_0000003_0000003_0000/000000_0" in r.stderr
    assert len(helpers.load(cat, "ns.pq").snapshots()) == 1


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_hdfs_table_files_are_registered_by_the_locations_hdfs_urls(tmp_path, cli, metastore):  # noqa: F811
    """A table whose SDS.LOCATION is ``hdfs://nn:8020/...`` (the NameNode's RPC port, never
    contacted) read through WebHDFS (``--fs-option port=`` the HTTP port; tests/webhdfs_server.py):
    its files are registered under the location's own scheme and authority, the path part as
    on HDFS, as Spark's and Trino's Iceberg readers open them. acidctl's verification reads them
    back through WebHDFS (pyiceberg opens hdfs:// with libhdfs, which is not here); this test
    reads the table with pyiceberg, its hdfs:// URLs mapped onto the server's directory by a
    FileIO of its own. A catch-up compares the same URLs: an unchanged table is up to date, a
    new write registers one file and removes none."""
    from pyiceberg.io.pyarrow import PyArrowFileIO

    from tests.webhdfs_server import WebHDFS

    url, rec = metastore
    hdfs_root = tmp_path / "hdfs"
    hdfs_root.mkdir()
    location = "hdfs://127.0.0.1:8020/wh/pq"
    rec.create_table(
        "default", "pq", location=location, columns=COLUMNS, partition_keys=[("ds", "date")], insert_only=True
    )
    part = "ds=2024-01-01"
    rec.add_partition("default", "pq", part)
    add_storage(url, "pq", slib=PARQUET_SERDE, input_format=PARQUET_INPUT, output_format=PARQUET_OUTPUT, params={})
    _partitions_like_the_table(url)

    def commit_write(w: int, ids: list[int]) -> str:
        txn = rec.open_txn()
        assert rec.add_write(txn, "default", "pq", partition=part) == w
        rel = f"wh/pq/{part}/delta_{w:07d}_{w:07d}_0000/000000_0"
        write(hdfs_root / rel, [row(i) for i in ids], HIVE_SCHEMA)
        rec.commit_txn(txn)
        return "hdfs://127.0.0.1:8020/" + rel

    first = [commit_write(1, [1, 2]), commit_write(2, [3])]
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()

    class ServerIO(PyArrowFileIO):
        """hdfs://127.0.0.1:8020/X read from the server's directory (this test's own mapping)."""

        def new_input(self, location: str):
            if location.startswith("hdfs://127.0.0.1:8020/"):
                location = f"file://{hdfs_root}/" + location[len("hdfs://127.0.0.1:8020/") :]
            return super().new_input(location)

    def table():
        t = helpers.load(cat, "ns.pq")
        t.io = ServerIO(t.io.properties)
        return t

    with WebHDFS(str(hdfs_root)) as server:

        def run():
            return cli(
                "-o", "json", "--metastore", url, "--fs-option", f"port={server.port}",
                "migrate", "default.pq", *helpers.iceberg_target(cat, "ns.pq"), "--add-files",
            )  # fmt: skip

        r = run()
        assert r.code == 0, r.stderr
        rep = json.loads(r.stdout)
        assert rep["verified"] == {"partitions": 1, "rows": 3}
        assert rep["partitions"][0]["register"] == sorted(first)
        t = table()
        paths = t.inspect.files().column("file_path").to_pylist()
        assert sorted(paths) == sorted(first)
        assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [1, 2, 3]

        r = run()
        assert r.code == 0 and json.loads(r.stdout)["up_to_date"] is True, r.stderr

        third = commit_write(3, [4])
        r = run()
        assert r.code == 0, r.stderr
        rep = json.loads(r.stdout)
        assert rep["committed"]["files_added"] == 1 and rep["committed"]["files_removed"] == 0
        assert rep["verified"]["rows"] == 4
        t = table()
        assert sorted(t.inspect.files().column("file_path").to_pylist()) == sorted([*first, third])
        assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [1, 2, 3, 4]
        assert server.ops["OPEN"] > 0
