"""Format readers: columns matched as Hive matches them, wrong or ACID files refused with one line."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.orc as po

from acidctl.formats.files import choose_codec
from acidctl.formats.storage import Storage
from tests.mm import hivelayout as H


def test_orc_coln_names_are_matched_by_position_and_missing_columns_are_null(tmp_path, cli):
    d = tmp_path / "t" / "delta_0000001_0000001_0000"
    d.mkdir(parents=True)
    po.write_table(pa.table({"_col0": pa.array([7], pa.int32()), "_col1": ["x"]}), str(d / "000000_0"))
    r = cli(
        "-o",
        "json",
        "dump",
        "--merged",
        tmp_path / "t",
        "--format",
        "orc",
        "--columns",
        "id:int,name:string,extra:bigint",
        "--write-ids",
        "default.t:1:9223372036854775807::",
    )
    assert r.code == 0, r
    assert json.loads(r.stdout) == {"id": 7, "name": "x", "extra": None}


def test_names_match_case_insensitively(tmp_path, cli):
    d = tmp_path / "t" / "delta_0000001_0000001_0000"
    d.mkdir(parents=True)
    po.write_table(pa.table({"NAME": ["y"], "Id": pa.array([3], pa.int32())}), str(d / "000000_0"))
    r = cli(
        "-o",
        "json",
        "dump",
        "--merged",
        tmp_path / "t",
        "--format",
        "orc",
        "--columns",
        "id:int,name:string",
        "--write-ids",
        "default.t:1:9223372036854775807::",
    )
    assert json.loads(r.stdout) == {"id": 3, "name": "y"}


def test_a_file_of_another_format_is_one_line_exit_7(tmp_path, cli):
    H.build(tmp_path / "t", "parquet", {"delta_0000001_0000001_0000": {"000000_0": [H.row(1)]}})
    r = cli(
        "dump",
        "--merged",
        tmp_path / "t",
        "--format",
        "orc",
        "--columns",
        H.COLUMNS_SPEC,
        "--write-ids",
        "default.t:1:9223372036854775807::",
    )
    assert r.code == 7
    assert r.stderr.count("\n") == 1 and "not a readable ORC file" in r.stderr and "parquet" in r.stderr


def test_an_acid_event_file_in_an_insert_only_table_is_refused(tmp_path, cli):
    from tests.conftest import REAL

    acid = REAL / "prestosql-qubole" / "fullacid_basefile_singleCol_singleRow.orc"
    d = tmp_path / "t" / "delta_0000001_0000001_0000"
    d.mkdir(parents=True)
    (d / "000000_0").write_bytes(acid.read_bytes())
    r = cli(
        "dump",
        "--merged",
        tmp_path / "t",
        "--format",
        "orc",
        "--columns",
        "col:int",
        "--write-ids",
        "default.t:1:9223372036854775807::",
    )
    assert r.code == 7 and "ACID event file" in r.stderr


def test_output_codec_table_property_then_inputs_then_hive_default():
    assert choose_codec(Storage("orc", {"orc.compress": "snappy"}), ["ZLIB"]) == "SNAPPY"
    assert choose_codec(Storage("orc", {}), ["LZ4", "LZ4", "ZLIB"]) == "LZ4"
    assert choose_codec(Storage("orc", {}), []) == "ZLIB"
    assert choose_codec(Storage("parquet", {}), []) is None
    assert choose_codec(Storage("avro", {"avro.output.codec": "snappy"}), ["null"]) == "snappy"
    assert choose_codec(Storage("text", {}), ["gzip"]) == "gzip"


def test_merged_read_of_a_path_without_format_hints_at_insert_only(tmp_path, cli):
    H.build(tmp_path / "t", "parquet", {"delta_0000001_0000001_0000": {"000000_0": [H.row(1)]}})
    r = cli("dump", "--merged", tmp_path / "t", "--write-ids", "default.t:1:9223372036854775807::")
    assert r.code == 7 and "--format" in r.stderr and "Traceback" not in r.stderr


def test_avro_schema_that_is_not_a_record_is_a_one_line_error():
    """avro.schema.literal must be a JSON record (an object): anything else is UnsupportedSchema
    (exit 7), never a traceback from json or a missing .get."""
    import pyarrow as pa
    import pytest

    from acidctl.errors import UnsupportedSchema
    from acidctl.formats import avrofile
    from acidctl.formats.hivetypes import Column, orc_struct

    row_td = orc_struct([Column("id", "int")])
    table = pa.table({"id": pa.array([1], pa.int32())})
    for bad in ('["null", "int"]', "{not json"):
        with pytest.raises(UnsupportedSchema) as e:
            avrofile.write(table, row_td, schema=bad, codec=None)
        assert "\n" not in str(e.value)
