"""``migrate --add-files``: insert-only Parquet tables laid out as Hive writes them (aborted and
open writes, obsolete directories, stray and hidden files, partitioned and not) registered as
Iceberg data files without copying, read back with pyiceberg; the expected rows and files are
worked out from the planted layout (insert-only-and-hive2.md A.5: base + current deltas of
valid write ids, hidden and partition-root files invisible), never from acidctl."""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import run_cli
from tests.migrate import helpers

pytest.importorskip("pyiceberg")

#: Hive's Parquet schema for (id int, name string, amount decimal(10,2), tags array<string>):
#: lists written with Hive's element name (HiveSchemaConverter: ``array_element``)
HIVE_SCHEMA = pa.schema(
    [
        ("id", pa.int32()),
        ("name", pa.string()),
        ("amount", pa.decimal128(10, 2)),
        ("tags", pa.list_(pa.field("array_element", pa.string()))),
    ]
)


def row(i: int, tags=None) -> dict:
    return {"id": i, "name": f"n{i}", "amount": Decimal(i) / 4, "tags": tags}


def write(path: Path, rows: list[dict], schema: pa.Schema = HIVE_SCHEMA, **kw) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path, use_compliant_nested_type=False, **kw)
    return path


def migrate_args(root: Path | str, cat: Path, wl: str, *extra: str, ident: str = "ns.t", fmt: str = "parquet"):
    """``migrate`` of the insert-only ``fmt`` table ``root`` at ``wl`` into ``ident`` of the catalog ``cat``."""
    return ["migrate", str(root), "--format", fmt, "--write-ids", wl, *helpers.iceberg_target(cat, ident), *extra]


def migrate(root: Path, cat: Path, wl: str, *extra: str, ident: str = "ns.t"):
    r = run_cli("-o", "json", *migrate_args(root, cat, wl, *extra, ident=ident))
    return r, (json.loads(r.stdout) if r.code == 0 and r.stdout.strip() else None)


def rows_of(cat: Path, ident: str = "ns.t") -> list[tuple]:
    out = []
    for r in helpers.load(cat, ident).scan().to_arrow().to_pylist():
        out.append((r.get("p"), r["id"], r["name"], r["amount"], r["tags"]))
    return sorted(out, key=lambda x: (str(x[0]), x[1]))


def expected(part_rows: dict) -> list[tuple]:
    out = [(p, r["id"], r["name"], r["amount"], r["tags"]) for p, rows in part_rows.items() for r in rows]
    return sorted(out, key=lambda x: (str(x[0]), x[1]))


def files_of(cat: Path, ident: str = "ns.t") -> set[str]:
    return {t.file.file_path for t in helpers.load(cat, ident).scan().plan_files()}


def url(p: Path) -> str:
    return "file://" + str(p)


def plant(d: Path, part: str | None) -> tuple[dict, list[Path]]:
    """One partition's history: INSERT OVERWRITE base_1 (with an obsolete delta 1 below it),
    write 2 (two statements, a _copy_1, a UNION ALL subdirectory, a hidden file and an empty
    file), write 3 aborted, write 4 committed, write 5 open, a stray file in the partition
    directory. Returns ({partition value: visible rows}, the visible files)."""
    tag = part or ""
    b = 1000 if part == "b" else 0
    vis: list[Path] = []
    rows: list[dict] = []

    def put(rel: str, rs: list[dict], visible: bool) -> None:
        p = write(d / rel, rs)
        if visible:
            vis.append(p)
            rows.extend(rs)

    put("delta_0000001_0000001_0000/000000_0", [row(b + 90, ["obsolete"])], False)
    put("base_0000001/000000_0", [row(b + 1, ["a", tag]), row(b + 2)], True)
    put("delta_0000002_0000002_0000/000000_0", [row(b + 3, []), row(b + 4)], True)
    put("delta_0000002_0000002_0000/000000_0_copy_1", [row(b + 5, [None, "x"])], True)
    put("delta_0000002_0000002_0001/HIVE_UNION_SUBDIR_1/000000_0", [row(b + 6)], True)
    put("delta_0000002_0000002_0001/_hidden", [row(b + 91)], False)
    put("delta_0000002_0000002_0001/.hidden", [row(b + 92)], False)
    (d / "delta_0000002_0000002_0001" / "000001_0").write_bytes(b"")  # an empty bucket file
    put("delta_0000003_0000003_0000/000000_0", [row(b + 93)], False)  # aborted
    put("delta_0000004_0000004_0000/000000_0", [row(b + 7), row(b + 8)], True)
    put("delta_0000005_0000005_0000/000000_0", [row(b + 94)], False)  # open
    put("000000_0", [row(b + 95)], False)  # stray: an original file, invisible to an MM reader
    return {part: rows}, vis


WL5 = "default.t:5:5:5:3"


@pytest.mark.parametrize("partitioned", [False, True])
def test_first_load_registers_exactly_the_visible_files(tmp_path, partitioned):
    root = tmp_path / "t"
    want: dict = {}
    files: list[Path] = []
    for part in ("a", "b") if partitioned else (None,):
        rows, vis = plant(root / f"p={part}" if part else root, part)
        want.update(rows)
        files += vis
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    r, rep = migrate(root, cat, WL5, "--add-files")
    assert r.code == 0, r.stderr
    assert rep["add_files"] is True and rep["verified"]["rows"] == 8 * len(want)
    assert rows_of(cat) == expected(want)
    # no copies: the table's data files are the Hive files themselves, nothing under the warehouse
    assert files_of(cat) == {url(p) for p in files}
    assert not [p for p in helpers.warehouse(cat).rglob("*") if p.suffix == ".parquet"]
    t = helpers.load(cat)
    assert len(t.snapshots()) == 1
    summary = t.current_snapshot().summary.additional_properties
    assert summary["acidctl.source-write-ids"] == WL5
    assert summary["acidctl.source-table"] == str(root)
    assert "schema.name-mapping.default" in t.properties
    assert "row__id" not in t.schema().column_names
    if partitioned:
        from pyiceberg.expressions import EqualTo

        got = t.scan(row_filter=EqualTo("p", "b")).to_arrow().column("id").to_pylist()
        assert sorted(got) == [1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008]
        # the partition record of every data file is its directory's value
        for task in t.scan().plan_files():
            assert f"/p={task.file.partition[0]}/" in task.file.file_path


def test_dry_run_lists_the_files_and_writes_nothing(tmp_path):
    root = tmp_path / "t"
    _, vis = plant(root, None)
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    r, rep = migrate(root, cat, WL5, "--add-files", "--dry-run")
    assert r.code == 0, r.stderr
    assert sorted(rep["partitions"][0]["register"]) == sorted(url(p) for p in vis)
    assert rep["committed"] is None
    assert helpers_table_missing(cat)
    text = run_cli(*migrate_args(root, cat, WL5, "--add-files", "--dry-run"))
    assert text.code == 0, text.stderr
    for p in vis:
        assert f"register {url(p)}" in text.stdout


def helpers_table_missing(cat: Path) -> bool:
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    try:
        helpers.load(cat)
    except (NoSuchTableError, NoSuchNamespaceError):
        return True
    return False


def test_catch_up_after_inserts_and_an_mm_compaction_is_one_snapshot(tmp_path):
    """Partition a gets write 6 (an insert); partition b is major-compacted at write 6 (Hive 3:
    base_6 with _metadata_acid, the old directories still there until the Cleaner runs); write 5
    (open at the first sync) committed in between, a lower id than 6."""
    root = tmp_path / "t"
    a_rows, _ = plant(root / "p=a", "a")
    b_rows, _ = plant(root / "p=b", "b")
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    r, _ = migrate(root, cat, WL5, "--add-files")
    assert r.code == 0, r.stderr
    first = helpers.load(cat).current_snapshot().snapshot_id

    new_a = write(root / "p=a" / "delta_0000006_0000006_0000" / "000000_0", [row(9), row(10)])
    # b's compaction at hwm 6 holds every row a reader of ids <= 6 sees (write 5 now committed)
    b_now = b_rows["b"] + [row(1094)]
    base = root / "p=b" / "base_0000006"
    compacted = write(base / "000000_0", b_now)
    (base / "_metadata_acid").write_text('{"thisFileVersion":"0","dataFormat":"compacted"}')
    wl = "default.t:6:9223372036854775807::3"
    r, rep = migrate(root, cat, wl, "--add-files")
    assert r.code == 0, r.stderr
    t = helpers.load(cat)
    snaps = t.snapshots()
    assert len(snaps) == 2 and snaps[-1].parent_snapshot_id == first
    a_now = a_rows["a"] + [row(94), row(9), row(10)]  # write 5 of a became visible too
    assert rows_of(cat) == expected({"a": a_now, "b": b_now})
    # b: only the compacted base; a: its files + write 5's and write 6's deltas
    got = files_of(cat)
    assert {f for f in got if "/p=b/" in f} == {url(compacted)}
    assert url(new_a) in got and url(root / "p=a" / "delta_0000005_0000005_0000" / "000000_0") in got
    by = {p["partition"]: p for p in rep["partitions"]}
    assert len(by["p=b"]["unregister"]) == 5 and by["p=b"]["register"] == [url(compacted)]
    assert rep["committed"]["files_removed"] == 5 and rep["verified"]["partitions"] == 2
    summary = t.current_snapshot().summary.additional_properties
    assert summary["acidctl.source-write-ids"] == wl

    # nothing new: no snapshot
    r, rep = migrate(root, cat, wl, "--add-files")
    assert r.code == 0 and rep["up_to_date"] is True
    assert len(helpers.load(cat).snapshots()) == 2


def registered(tmp_path: Path) -> tuple[Path, Path]:
    """An unpartitioned table planted (:func:`plant`) and registered by a first ``--add-files``
    load at WL5: (its root, the catalog)."""
    root = tmp_path / "t"
    plant(root, None)
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    assert migrate(root, cat, WL5, "--add-files")[0].code == 0
    return root, cat


def test_insert_overwrite_replaces_the_registered_files(tmp_path):
    root, cat = registered(tmp_path)
    ow = write(root / "base_0000006" / "000000_0", [row(600), row(601)])
    r, rep = migrate(root, cat, "default.t:6:9223372036854775807::3", "--add-files")
    assert r.code == 0, r.stderr
    assert rows_of(cat) == expected({None: [row(600), row(601)]})
    assert files_of(cat) == {url(ow)}
    assert rep["committed"]["rows_removed"] == 8


def test_int96_timestamps_are_refused(tmp_path):
    root = tmp_path / "t"
    s = pa.schema([("id", pa.int32()), ("ts", pa.timestamp("ns"))])
    write(
        root / "delta_0000001_0000001_0000" / "000000_0",
        [{"id": 1, "ts": 1_700_000_000_000_000_000}],
        s,
        use_deprecated_int96_timestamps=True,
    )
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    r, _ = migrate(root, cat, "default.t:1:9223372036854775807::", "--add-files")
    assert r.code == 7, r.stderr
    assert "INT96" in r.stderr and "ts" in r.stderr and "without --add-files" in r.stderr
    assert len(r.stderr.strip().splitlines()) <= 2  # the line and its hint, no traceback
    assert helpers_table_missing(cat)
    # the copy path takes the same table
    r, _ = migrate(root, cat, "default.t:1:9223372036854775807::")
    assert r.code == 0, r.stderr


def test_int64_microsecond_timestamps_are_registered(tmp_path):
    import datetime

    root = tmp_path / "t"
    s = pa.schema([("id", pa.int32()), ("ts", pa.timestamp("us"))])
    ts = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456)
    f = write(root / "delta_0000001_0000001_0000" / "000000_0", [{"id": 1, "ts": ts}], s)
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    r, _ = migrate(root, cat, "default.t:1:9223372036854775807::", "--add-files")
    assert r.code == 0, r.stderr
    assert helpers.load(cat).scan().to_arrow().to_pylist() == [{"id": 1, "ts": ts}]
    assert files_of(cat) == {url(f)}


_S0 = [("id", pa.int32()), ("name", pa.string())]


@pytest.mark.parametrize(
    "fields,what",
    [
        (_S0 + [("extra", pa.int32())], "not in the table: extra"),
        ([("id", pa.int64()), ("name", pa.string())], "column id"),
        ([("id", pa.int32()), ("name", pa.binary())], "column name"),
        ([("ID", pa.int32()), ("name", pa.string())], "not in the table: ID"),
    ],
)
def test_files_not_matching_the_table_are_refused(tmp_path, fields, what):
    """The table's columns come from the first file (a path); a later file differs."""
    root = tmp_path / "t"
    write(root / "delta_0000001_0000001_0000" / "000000_0", [{"id": 1, "name": "a"}], pa.schema(_S0))
    write(root / "delta_0000002_0000002_0000" / "000000_0", [], pa.schema(fields))
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    r, _ = migrate(root, cat, "default.t:2:9223372036854775807::", "--add-files")
    assert r.code == 7, r.stderr
    assert what in r.stderr and "delta_0000002_0000002_0000/000000_0" in r.stderr
    assert "without --add-files" in r.stderr


def test_utc_adjusted_timestamps_are_refused(tmp_path):
    """Hive's timestamp is a wall clock (Iceberg timestamp); a file whose INT64 timestamp is
    UTC-adjusted reads as timestamptz in Iceberg."""
    root = tmp_path / "t"
    write(
        root / "delta_0000001_0000001_0000" / "000000_0",
        [{"id": 1, "ts": None}],
        pa.schema([("id", pa.int32()), ("ts", pa.timestamp("us"))]),
    )
    write(
        root / "delta_0000002_0000002_0000" / "000000_0",
        [{"id": 2, "ts": None}],
        pa.schema([("id", pa.int32()), ("ts", pa.timestamp("us", tz="UTC"))]),
    )
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    r, _ = migrate(root, cat, "default.t:2:9223372036854775807::", "--add-files")
    assert r.code == 7 and "column ts" in r.stderr and "timestamptz" in r.stderr, r.stderr


def test_other_storage_and_full_acid_tables_are_refused(tmp_path):
    from tests.mm import hivelayout

    root, wl, _ = hivelayout.standard(tmp_path / "orc", "orc")
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    r = run_cli(*migrate_args(root, cat, wl, "--add-files", fmt="orc"))
    assert r.code == 2 and "ORC" in r.stderr and "without --add-files" in r.stderr
    acid = tmp_path / "acid"
    helpers.late_commit_history().play_table(acid)
    r, _ = helpers.migrate(acid, helpers.late_commit_wl(7), cat, "--add-files", target="ns.acid")
    assert r.code == 2 and "full-ACID" in r.stderr, r.stderr
    r = run_cli(
        "migrate",
        str(root),
        "--format",
        "parquet",
        "--write-ids",
        wl,
        "--to",
        "delta",
        "--target",
        str(tmp_path / "d"),
        "--add-files",
    )
    assert r.code == 2 and "--to iceberg" in r.stderr


def test_a_target_is_either_registered_or_copied(tmp_path):
    root = tmp_path / "t"
    plant(root, None)
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    assert migrate(root, cat, WL5, ident="ns.copy")[0].code == 0
    r, _ = migrate(root, cat, "default.t:6:9223372036854775807::3", "--add-files", ident="ns.copy")
    assert r.code == 6 and "without --add-files" in r.stderr
    assert migrate(root, cat, WL5, "--add-files", ident="ns.reg")[0].code == 0
    r, _ = migrate(root, cat, "default.t:6:9223372036854775807::3", ident="ns.reg")
    assert r.code == 6 and "--add-files" in r.stderr
    assert len(helpers.load(cat, "ns.reg").snapshots()) == 1


def test_a_verification_failure_rolls_back_and_leaves_hives_files(tmp_path):
    """A file lost on its way into the commit: the partition's count and digest disagree, the
    run fails naming it, the snapshot is undone, and no Hive file is deleted."""
    from acidctl import faults

    root = tmp_path / "t"
    _, vis_a = plant(root / "p=a", "a")
    _, vis_b = plant(root / "p=b", "b")
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()

    def lose_a_file(adds, removes):
        adds[:] = [df for df in adds if "/p=b/delta_0000004" not in df.file_path]

    with faults.hooks({"migrate-add-files-before-commit": lose_a_file}):
        r, _ = migrate(root, cat, WL5, "--add-files")
    assert r.code == 1 and "partition p=b" in r.stderr and "rolled back" in r.stderr, r.stderr
    assert helpers_table_missing(cat)  # the table this run created is dropped again
    assert all(p.exists() for p in vis_a + vis_b)
    assert migrate(root, cat, WL5, "--add-files")[0].code == 0
    first = helpers.load(cat).current_snapshot().snapshot_id
    write(root / "p=b" / "delta_0000006_0000006_0000" / "000000_0", [row(1010)])
    wl = "default.t:6:5:5:3"
    with faults.hooks({"migrate-add-files-before-commit": lambda adds, removes: adds.clear()}):
        r, _ = migrate(root, cat, wl, "--add-files")
    assert r.code == 1 and "partition p=b" in r.stderr and "rolled back" in r.stderr, r.stderr
    assert helpers.load(cat).current_snapshot().snapshot_id == first
    r, rep = migrate(root, cat, wl, "--add-files")
    assert r.code == 0, r.stderr
    assert rep["partitions"][0]["register"] == [url(root / "p=b" / "delta_0000006_0000006_0000" / "000000_0")]
    assert 1010 in {x[1] for x in rows_of(cat)}


def test_a_dropped_partition_leaves_the_table(tmp_path):
    import shutil

    root = tmp_path / "t"
    plant(root / "p=a", "a")
    b_rows, vis_b = plant(root / "p=b", "b")
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    assert migrate(root, cat, WL5, "--add-files")[0].code == 0
    shutil.rmtree(root / "p=a")  # ALTER TABLE DROP PARTITION (no write id)
    r, rep = migrate(root, cat, WL5, "--add-files")
    assert r.code == 0, r.stderr
    assert [(p["partition"], p["how"], len(p["unregister"])) for p in rep["partitions"]] == [("p=a", "drop", 5)]
    assert rows_of(cat) == expected(b_rows)
    assert files_of(cat) == {url(p) for p in vis_b}
    assert len(helpers.load(cat).snapshots()) == 2


def test_the_name_mapping_knows_hives_list_element_name(tmp_path):
    _, cat = registered(tmp_path)
    t = helpers.load(cat)
    mapping = {m["names"][0]: m for m in json.loads(t.properties["schema.name-mapping.default"])}
    element = t.schema().find_field("tags").field_type.element_id
    assert mapping["tags"]["fields"] == [{"names": ["element", "array_element"], "field-id": element}]
    assert mapping["id"] == {"names": ["id"], "field-id": t.schema().find_field("id").field_id}


def test_a_table_on_s3_is_registered_by_its_s3_urls(tmp_path, monkeypatch):
    """The source on S3 (moto): the data files are registered as s3:// URLs, which pyiceberg
    (the verification, and this test) reads through the catalog's S3 properties."""
    pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    from tests.migrate.moto_s3 import moto_s3_process

    local = tmp_path / "t"
    rows, vis = plant(local, None)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    with moto_s3_process() as endpoint:
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        s3.create_bucket(Bucket="lake")
        for p in local.rglob("*"):
            if p.is_file():
                s3.upload_file(str(p), "lake", f"t/{p.relative_to(local).as_posix()}")
        props = [
            f"s3.endpoint={endpoint}",
            "s3.access-key-id=testing",
            "s3.secret-access-key=testing",
            "s3.region=us-east-1",
        ]
        r = run_cli(
            "--fs-option", f"endpoint_url={endpoint}", "-o", "json",
            *migrate_args("s3://lake/t", cat, WL5, "--add-files", *[a for p in props for a in ("--catalog-property", p)]),
        )  # fmt: skip
        assert r.code == 0, r.stderr
        assert json.loads(r.stdout)["verified"]["rows"] == 8
        from pyiceberg.catalog import load_catalog

        c = load_catalog(
            "acidctl",
            uri=f"sqlite:///{cat}",
            type="sql",
            warehouse=f"file://{helpers.warehouse(cat)}",
            **dict(p.split("=", 1) for p in props),
        )
        t = c.load_table("ns.t")
        assert {task.file.file_path for task in t.scan().plan_files()} == {
            f"s3://lake/t/{p.relative_to(local).as_posix()}" for p in vis
        }
        got = sorted((None, r["id"], r["name"], r["amount"], r["tags"]) for r in t.scan().to_arrow().to_pylist())
        assert got == expected(rows)


def test_a_table_given_as_an_hdfs_path_is_registered_by_its_hdfs_urls(tmp_path):
    """``hdfs://host:port/t`` given on the command line (WebHDFS on that port:
    tests/webhdfs_server.py): the visible files (the same as locally, :func:`plant`) are
    registered as ``hdfs://host:port/t/...`` (the URL given, not webhdfs://), verified through
    WebHDFS; read back here with pyiceberg, its hdfs:// URLs mapped onto the server's
    directory by a FileIO of this test's own."""
    from pyiceberg.io.pyarrow import PyArrowFileIO

    from tests.webhdfs_server import WebHDFS

    hdfs_root = tmp_path / "hdfs"
    rows, vis = plant(hdfs_root / "t", None)
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    with WebHDFS(str(hdfs_root)) as server:
        base = f"hdfs://127.0.0.1:{server.port}/"
        r = run_cli("-o", "json", *migrate_args(server.url("/t"), cat, WL5, "--add-files"))
        assert r.code == 0, r.stderr
        assert json.loads(r.stdout)["verified"]["rows"] == 8

    class ServerIO(PyArrowFileIO):
        def new_input(self, location: str):
            if location.startswith(base):
                location = f"file://{hdfs_root}/" + location[len(base) :]
            return super().new_input(location)

    t = helpers.load(cat)
    t.io = ServerIO(t.io.properties)
    assert sorted(t.inspect.files().column("file_path").to_pylist()) == sorted(
        base + p.relative_to(hdfs_root).as_posix() for p in vis
    )
    got = sorted((None, r["id"], r["name"], r["amount"], r["tags"]) for r in t.scan().to_arrow().to_pylist())
    assert got == expected(rows)


def test_originals_are_registered_only_with_mm_allow_originals_and_no_base(tmp_path):
    """hive.mm.allow.originals=true (spec A.5): a partition without a base reads its own files
    and original directories too; once an INSERT OVERWRITE base exists they are gone."""
    root = tmp_path / "t"
    orig = write(root / "p=a" / "000000_0", [row(1)])
    orig_dir = write(root / "p=a" / "old" / "000000_0", [row(2)])
    d1 = write(root / "p=a" / "delta_0000001_0000001_0000" / "000000_0", [row(3)])
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    wl1 = "default.t:1:9223372036854775807::"
    assert migrate(root, cat, wl1, "--add-files", ident="ns.strict")[0].code == 0
    assert files_of(cat, "ns.strict") == {url(d1)}
    r, _ = migrate(root, cat, wl1, "--add-files", "--mm-allow-originals")
    assert r.code == 0, r.stderr
    assert files_of(cat) == {url(orig), url(orig_dir), url(d1)}
    assert [x[1] for x in rows_of(cat)] == [1, 2, 3]
    ow = write(root / "p=a" / "base_0000002" / "000000_0", [row(4)])
    r, rep = migrate(root, cat, "default.t:2:9223372036854775807::", "--add-files", "--mm-allow-originals")
    assert r.code == 0, r.stderr
    assert [(p["partition"], p["how"]) for p in rep["partitions"]] == [("p=a", "register")]
    assert files_of(cat) == {url(ow)} and [x[1] for x in rows_of(cat)] == [4]


class MMHistory:
    """A random insert-only history over two partitions, with its own reader model (spec A.5:
    the largest valid base — an INSERT OVERWRITE base if its write committed, a compacted one if
    below the lowest open write id — plus the committed deltas above it)."""

    def __init__(self, root: Path, rnd):
        self.root, self.rnd = root, rnd
        self.state: dict[int, str] = {}  # write id -> committed | aborted | open
        self.dirs: dict[str, list[tuple[str, int, bool, Path, list[dict]]]] = {"a": [], "b": []}
        self.next_id = 1

    def _write_id(self, state: str) -> int:
        w = self.next_id
        self.next_id += 1
        self.state[w] = state
        return w

    def step(self) -> None:
        part = self.rnd.choice("ab")
        kind = self.rnd.choices(["insert", "overwrite", "compact", "resolve"], [6, 1, 2, 2])[0]
        d = self.root / f"p={part}"
        if kind == "resolve":
            for w, s in self.state.items():
                if s == "open":
                    self.state[w] = self.rnd.choice(["committed", "aborted"])
                    return
            kind = "insert"
        if kind == "compact":
            h = min([w for w, s in self.state.items() if s == "open"], default=self.next_id) - 1
            name = f"base_{h:07d}"
            if h < 1 or any(x[0] == name for x in self.dirs[part]):
                return
            rows = self.rows(part, self.wl(upto=h))
            f = write(d / name / "000000_0", rows)
            (d / name / "_metadata_acid").write_text('{"thisFileVersion":"0","dataFormat":"compacted"}')
            self.dirs[part].append((name, h, True, f, rows))
            return
        # an INSERT OVERWRITE commits: an open or aborted base_W is "not enough history" for a
        # Hive 3 reader (directory-state.md §3.1 step 6; Hive holds an exclusive lock meanwhile)
        state = "committed" if kind == "overwrite" else self.rnd.choices(["committed", "aborted", "open"], [6, 1, 2])[0]
        w = self._write_id(state)
        rows = [row(w * 100 + i + (5000 if part == "b" else 0)) for i in range(self.rnd.randint(1, 3))]
        name = f"base_{w:07d}" if kind == "overwrite" else f"delta_{w:07d}_{w:07d}_0000"
        self.dirs[part].append((name, w, False, write(d / name / "000000_0", rows), rows))

    def wl(self, upto: int | None = None) -> str:
        hwm = self.next_id - 1 if upto is None else upto
        opn = sorted(w for w, s in self.state.items() if s == "open" and w <= hwm)
        ab = sorted(w for w, s in self.state.items() if s == "aborted" and w <= hwm)
        return f"default.t:{hwm}:{opn[0] if opn else 9223372036854775807}:{','.join(map(str, opn))}:{','.join(map(str, ab))}"

    def _visible(self, part: str, wl: str) -> list[tuple]:
        _, hwm_s, _, opn_s, ab_s = wl.split(":")
        hwm = int(hwm_s)
        bad = {int(x) for x in (opn_s + "," + ab_s).split(",") if x}
        ok = lambda w: w <= hwm and w not in bad  # noqa: E731
        min_open = min((int(x) for x in opn_s.split(",") if x), default=hwm + 1)
        bases = [x for x in self.dirs[part] if x[0].startswith("base_") and (x[1] < min_open if x[2] else ok(x[1]))]
        base = max(bases, key=lambda x: x[1], default=None)
        n = base[1] if base else 0
        deltas = [x for x in self.dirs[part] if x[0].startswith("delta_") and x[1] > n and ok(x[1])]
        return ([base] if base else []) + deltas

    def rows(self, part: str, wl: str) -> list[dict]:
        return [r for x in self._visible(part, wl) for r in x[4]]

    def files(self, wl: str) -> set[str]:
        return {url(x[3]) for p in "ab" for x in self._visible(p, wl)}


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_random_insert_only_histories_stay_registered(tmp_path, seed):
    import random

    h = MMHistory(tmp_path / "t", random.Random(seed))
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    for p in "ab":  # both partitions exist from the start
        write(h.root / f"p={p}" / "delta_0000001_0000001_0000" / "000000_0", [row(1 if p == "a" else 5001)])
        h.dirs[p].append(
            (
                "delta_0000001_0000001_0000",
                1,
                False,
                h.root / f"p={p}/delta_0000001_0000001_0000/000000_0",
                [row(1 if p == "a" else 5001)],
            )
        )
    h.state[1], h.next_id = "committed", 2
    snapshots = 0
    for _sync in range(5):
        for _ in range(h.rnd.randint(1, 4)):
            h.step()
        wl = h.wl()
        r, rep = migrate(h.root, cat, wl, "--add-files")
        assert r.code == 0, r.stderr
        snapshots += 0 if rep["up_to_date"] else 1
        assert files_of(cat) == h.files(wl)
        assert rows_of(cat) == expected({p: h.rows(p, wl) for p in "ab"})
        assert len(helpers.load(cat).snapshots()) == snapshots


@pytest.mark.parametrize("state", ["no file", "empty file"])
def test_dry_run_creates_no_catalog(tmp_path, state):
    """A dry run into an SQLite catalog that does not exist yet (or holds none of pyiceberg's
    tables) leaves it as it was: no file created, no table created in it."""
    import sqlite3

    root = tmp_path / "t"
    plant(root, None)
    cat = tmp_path / "cat" / "c.db"
    cat.parent.mkdir()
    if state == "empty file":
        sqlite3.connect(cat).close()
    before = cat.read_bytes() if cat.exists() else None
    r, rep = migrate(root, cat, WL5, "--dry-run")
    assert r.code == 0, r.stderr
    assert rep["committed"] is None and rep["mode"] == "initial"
    assert (cat.read_bytes() if cat.exists() else None) == before
    assert sorted(os.listdir(cat.parent)) == sorted(["c.db"] if before is not None else [])
