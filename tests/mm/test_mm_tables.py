"""Insert-only tables end to end through the CLI: dump --merged, compact, clean, state, in every
format, on tables laid out as Hive writes them (tests/mm/hivelayout.py). Expected rows come
from the layout itself (what a Hive reader of the snapshot reads), never from acidctl."""

from __future__ import annotations

import io
import json
from decimal import Decimal

import pyarrow as pa
import pytest

from tests.mm import hivelayout as H

FORMATS = ["orc", "parquet", "avro", "text"]
METADATA_ACID = b'{"thisFileVersion":"0","dataFormat":"compacted"}'


def expected_rows():
    # base_1 (ids 1, 2), write 2 statements 0 and 1 (3..8, UNION ALL subdirectories included),
    # write 4 (9, 10); write 3 aborted, write 5 open
    return [
        H.row(1, amount=1.5, tags=["a", "b"]),
        H.row(2, name="two"),
        H.row(3, tags=[]),
        H.row(4, amount=-2.25),
        H.row(5, tags=[None, "x"]),
        H.row(6),
        H.row(7),
        H.row(8, name=None),
        H.row(9),
        H.row(10),
    ]


def norm(rows):
    out = []
    for r in rows:
        a = r["amount"]
        out.append((r["id"], r["name"], None if a is None else Decimal(str(a)).quantize(Decimal("0.01")), r["tags"]))
    return sorted(out, key=lambda x: x[0])


def merged(cli, root, wl, fmt, *extra):
    r = cli(
        "-o", "json", "dump", "--merged", root, "--format", fmt, "--columns", H.COLUMNS_SPEC, "--write-ids", wl, *extra
    )
    assert r.code == 0, r
    return [json.loads(x) for x in r.stdout.splitlines()]


def read_output(path, fmt):
    """The compacted file read with the format's own library and the table's schema."""
    data = path.read_bytes()
    if fmt == "orc":
        import pyarrow.orc as po

        return po.ORCFile(pa.BufferReader(data)).read().cast(H.ARROW).to_pylist()
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.read_table(pa.BufferReader(data), schema=H.ARROW).to_pylist()
    if fmt == "avro":
        import fastavro

        return list(fastavro.reader(io.BytesIO(data), reader_schema=fastavro.parse_schema(H.AVRO_SCHEMA)))
    raise AssertionError(fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_merged_read_skips_aborted_and_open_writes(tmp_path, cli, fmt):
    root, wl, _ = H.standard(tmp_path / "t", fmt)
    rows = merged(cli, root, wl, fmt)
    assert [list(r) for r in rows][0] == ["id", "name", "amount", "tags"]  # no row__id: MM rows have none
    assert norm(rows) == norm(expected_rows())


@pytest.mark.parametrize("fmt", FORMATS)
def test_major_compaction_hive3(tmp_path, cli, fmt):
    root, wl, _ = H.standard(tmp_path / "t", fmt)
    before = norm(merged(cli, root, wl, fmt))
    p = H.compact(cli, root, fmt, wl)["partitions"][0]
    # compactor list: hwm = lowest open (5) - 1 = 4; aborted 3 not read; open 5 never folded
    assert p["output_dirs"] == ["base_0000004"]
    assert p["input_dirs"] == [
        "base_0000001",
        "delta_0000002_0000002_0000",
        "delta_0000002_0000002_0001",
        "delta_0000004_0000004_0000",
    ]
    assert (p["rows_in"], p["rows_out"]) == (10, 10)
    assert p["aborted_dirs_dropped"] == ["delta_0000003_0000003_0000"]
    base = root / "base_0000004"
    assert sorted(x.name for x in base.iterdir()) == ["000000_0", "_metadata_acid"]
    assert (base / "_metadata_acid").read_bytes() == METADATA_ACID
    assert not (base / "_orc_acid_version").exists()
    assert (root / "delta_0000005_0000005_0000").is_dir()
    assert not [x for x in root.iterdir() if x.name.startswith(".acidctl-staging")]
    if fmt == "text":
        # byte-compatible with LazySimpleSerDe: the independent encoder's bytes, rows in reader order
        assert (base / "000000_0").read_bytes() == H.encode("text", expected_rows())
    else:
        assert norm(read_output(base / "000000_0", fmt)) == norm(expected_rows())
    assert norm(merged(cli, root, wl, fmt)) == before
    # clean: everything the base covers goes (the aborted delta too); the open write stays
    r = cli("-o", "json", "clean", root, "--format", fmt, "--write-ids", wl, "--min-age", "0", "--execute")
    assert r.code == 0, r
    left = sorted(x.name for x in root.iterdir() if not x.name.startswith("."))
    assert left == ["base_0000004", "delta_0000005_0000005_0000"]
    assert norm(merged(cli, root, wl, fmt)) == before
    # once write 5 commits, a reader sees its row on top of the base
    after5 = norm(merged(cli, root, "default.t:5:9223372036854775807::", fmt))
    assert after5 == sorted(before + norm([H.row(500, name="open")]), key=lambda x: x[0])


@pytest.mark.parametrize("fmt", ["parquet", "text"])
def test_hive4_major_and_minor(tmp_path, cli, fmt):
    root, wl, _ = H.standard(tmp_path / "t", fmt)
    before = norm(merged(cli, root, wl, fmt, "--hive-version", "4"))
    p = H.compact(cli, root, fmt, wl, "--hive-version", "4", "--visibility-txn", "20", mode="--minor")["partitions"][0]
    # MmMinorQueryCompactor: delta_<min of the current deltas>_<compactor hwm>_v<txn>, no marker
    assert p["output_dirs"] == ["delta_0000002_0000004_v0000020"]
    assert sorted(x.name for x in (root / "delta_0000002_0000004_v0000020").iterdir()) == ["000000_0"]
    assert p["rows_out"] == 8
    assert norm(merged(cli, root, wl, fmt, "--hive-version", "4")) == before
    p = H.compact(cli, root, fmt, wl, "--hive-version", "4", "--visibility-txn", "21")["partitions"][0]
    assert p["output_dirs"] == ["base_0000004_v0000021"]
    assert p["input_dirs"] == ["base_0000001", "delta_0000002_0000004_v0000020"]
    assert sorted(x.name for x in (root / "base_0000004_v0000021").iterdir()) == ["000000_0"]
    assert norm(merged(cli, root, wl, fmt, "--hive-version", "4")) == before


def test_hive3_has_no_minor_mm_compaction(tmp_path, cli):
    root, wl, _ = H.standard(tmp_path / "t", "parquet")
    r = cli("compact", "--minor", "--engine", "local", root, "--format", "parquet", "--write-ids", wl)
    assert r.code == 2 and "Hive 3 has no minor compaction of insert-only tables" in r.stderr
    assert r.stderr.count("\n") <= 2 and "Traceback" not in r.stderr


def test_file_in_partition_root_is_refused_not_lost(tmp_path, cli):
    root, wl, _ = H.standard(tmp_path / "t", "orc")
    (root / "000000_0").write_bytes(H.encode("orc", [H.row(77)]))
    r = cli("compact", "--major", "--engine", "local", root, "--format", "orc", "--write-ids", wl)
    assert r.code == 6, r
    assert "000000_0" in r.stderr
    assert not (root / "base_0000004").exists()
    assert not [x for x in root.iterdir() if x.name.startswith(".acidctl-staging")]


def test_nothing_to_compact_with_one_input(tmp_path, cli):
    H.build(tmp_path / "t", "orc", {"delta_0000001_0000001_0000": {"000000_0": [H.row(1)]}})
    doc = H.compact(cli, tmp_path / "t", "orc", "default.t:1:9223372036854775807::", columns=None)
    assert doc["nothing_to_compact"] is True
    assert sorted(x.name for x in (tmp_path / "t").iterdir() if not x.name.startswith(".")) == [
        "delta_0000001_0000001_0000"
    ]


def test_compressed_text_keeps_its_codec_and_extension(tmp_path, cli):
    import gzip

    root = tmp_path / "t"
    for w, ids in ((1, [1, 2]), (2, [3])):
        d = root / f"delta_{w:07d}_{w:07d}_0000"
        d.mkdir(parents=True)
        (d / "000000_0.gz").write_bytes(gzip.compress(H.encode("text", [H.row(i) for i in ids])))
    wl = "default.t:2:9223372036854775807::"
    H.compact(cli, root, "text", wl)
    out = root / "base_0000002" / "000000_0.gz"
    assert gzip.decompress(out.read_bytes()) == H.encode("text", [H.row(i) for i in (1, 2, 3)])


def test_text_serde_properties_escape_and_delimiter(tmp_path, cli):
    """ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' ESCAPED BY '\\\\' NULL DEFINED AS 'NULL':
    separators and the escape byte inside values are escaped; the NULL marker is compared before
    unescaping."""
    root = tmp_path / "t"
    (root / "delta_0000001_0000001_0000").mkdir(parents=True)
    (root / "delta_0000002_0000002_0000").mkdir(parents=True)
    (root / "delta_0000001_0000001_0000" / "000000_0").write_bytes(b"1,a\\,b\n2,NULL\n")
    (root / "delta_0000002_0000002_0000" / "000000_0").write_bytes(b"3,c\\\\d\n4,\\NULL\n")
    props = [
        "--serde-property",
        "field.delim=,",
        "--serde-property",
        "escape.delim=\\",
        "--serde-property",
        "serialization.null.format=NULL",
    ]
    wl = "default.t:2:9223372036854775807::"
    r = cli(
        "-o",
        "json",
        "dump",
        "--merged",
        root,
        "--format",
        "text",
        "--columns",
        "id:int,s:string",
        "--write-ids",
        wl,
        *props,
    )
    assert r.code == 0, r
    assert [json.loads(x) for x in r.stdout.splitlines()] == [
        {"id": 1, "s": "a,b"},
        {"id": 2, "s": None},
        {"id": 3, "s": "c\\d"},
        {"id": 4, "s": "NULL"},
    ]
    # the string "NULL" (LOAD DATA'd as \NULL) would be written as NULL, which reads as NULL: refused
    r = cli(
        "compact",
        "--major",
        "--engine",
        "local",
        root,
        "--format",
        "text",
        "--columns",
        "id:int,s:string",
        "--write-ids",
        wl,
        *props,
    )
    assert r.code == 6 and "NULL marker" in r.stderr, r
    assert not (root / "base_0000002").exists()
    (root / "delta_0000002_0000002_0000" / "000000_0").write_bytes(b"3,c\\\\d\n")
    H.compact(cli, root, "text", wl, *props, columns="id:int,s:string")
    assert (root / "base_0000002" / "000000_0").read_bytes() == b"1,a\\,b\n2,NULL\n3,c\\\\d\n"


def test_dump_plain_files(tmp_path, cli):
    p = tmp_path / "x.parquet"
    p.write_bytes(H.encode("parquet", [H.row(1, amount=2.5, tags=["q"])]))
    r = cli("-o", "json", "dump", p)
    assert r.code == 0, r
    # decimals print as FileDump prints them (quoted)
    assert json.loads(r.stdout) == {"id": 1, "name": "n1", "amount": "2.5", "tags": ["q"]}
    a = tmp_path / "x.avro"
    a.write_bytes(H.encode("avro", [H.row(2)]))
    assert json.loads(cli("-o", "json", "dump", a).stdout)["id"] == 2
    t = tmp_path / "x.txt"
    t.write_bytes(b"5\x01five\x01\\N\x01\n")
    r = cli("-o", "json", "dump", t, "--format", "text", "--columns", H.COLUMNS_SPEC)
    assert r.code == 0, r
    assert json.loads(r.stdout) == {"id": 5, "name": "five", "amount": None, "tags": []}


def test_state_deep_on_insert_only_files(tmp_path, cli):
    root, wl, _ = H.standard(tmp_path / "t", "orc")
    r = cli(
        "-o",
        "json",
        "state",
        "--deep",
        root,
        "--write-ids",
        wl,
        "--tblproperty",
        "transactional_properties=insert_only",
    )
    assert r.code == 0, r
    checks = {f["check"] for f in json.loads(r.stdout)["findings"]}
    assert not checks & {"F01", "F03", "F05", "M01"}
    assert "MM02" in checks  # the aborted delta
    (root / "delta_0000004_0000004_0000" / "bucket_00000").write_bytes(b"x")
    r = cli("-o", "json", "state", root, "--write-ids", wl, "--tblproperty", "transactional_properties=insert_only")
    assert r.code == 4
    assert "MM04" in {f["check"] for f in json.loads(r.stdout)["findings"]}


def test_unsupported_format_is_one_clear_error(tmp_path):
    from acidctl.formats.storage import UnsupportedFormat, detect_format

    with pytest.raises(UnsupportedFormat) as e:
        detect_format(
            "org.apache.hadoop.hive.serde2.columnar.ColumnarSerDe", "org.apache.hadoop.hive.ql.io.RCFileInputFormat"
        )
    assert e.value.exit_code == 7 and "\n" not in str(e.value)
    with pytest.raises(UnsupportedFormat):
        detect_format(
            "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", "org.apache.hadoop.mapred.SequenceFileInputFormat"
        )
    assert detect_format("org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe", None) == "parquet"


def test_partitioned_table_adds_partition_columns_and_compacts_each_partition(tmp_path, cli):
    root = tmp_path / "t"
    H.build(
        root / "ds=a",
        "parquet",
        {
            "delta_0000001_0000001_0000": {"000000_0": [H.row(1)]},
            "delta_0000003_0000003_0000": {"000000_0": [H.row(3)]},
        },
    )
    H.build(
        root / "ds=b",
        "parquet",
        {
            "delta_0000002_0000002_0000": {"000000_0": [H.row(2)]},
            "delta_0000002_0000002_0001": {"000000_0": [H.row(22)]},
        },
    )
    wl = "default.t:3:9223372036854775807::"
    r = cli(
        "-o", "json", "dump", "--merged", root, "--format", "parquet", "--columns", H.COLUMNS_SPEC, "--write-ids", wl
    )
    assert r.code == 0, r
    assert [(x["id"], x["ds"]) for x in map(json.loads, r.stdout.splitlines())] == [
        (1, "a"),
        (3, "a"),
        (2, "b"),
        (22, "b"),
    ]
    assert list(json.loads(r.stdout.splitlines()[0])) == ["id", "name", "amount", "tags", "ds"]
    before = r.stdout
    r = cli("-o", "json", "compact", "--major", "--engine", "local", root, "--format", "parquet", "--write-ids", wl)
    assert r.code == 0, r
    outs = {p["partition"]: p["output_dirs"] for p in json.loads(r.stdout)["partitions"]}
    # the compactor hwm (3) names every partition's base, as Hive 3's CompactorMR does
    assert outs == {"ds=a": ["base_0000003"], "ds=b": ["base_0000003"]}
    after = cli(
        "-o", "json", "dump", "--merged", root, "--format", "parquet", "--columns", H.COLUMNS_SPEC, "--write-ids", wl
    ).stdout
    assert after == before
