"""`acidctl dump` through the CLI: options, framing, exit codes, one-line errors."""

from __future__ import annotations

import json
import shutil

from tests.conftest import GOLDEN, REAL

SEP = "_" * 120
NATION = REAL / "trino" / "nationFile25kRowsSortedOnNationKey" / "bucket_00000"
SINGLE = REAL / "prestosql-qubole" / "fullacid_basefile_singleCol_singleRow.orc"


def test_single_row_file_matches_origin_line(cli):
    # the exact line stated by the origin project (fixtures/real/README.md §8)
    r = cli("dump", SINGLE)
    assert r.code == 0, r
    assert r.stdout == (
        '{"operation":0,"originalTransaction":2,"bucket":536870912,"rowId":0,'
        '"currentTransaction":2,"row":{"col":2}}\n' + SEP + "\n\n"
    )
    assert r.stderr == ""


def test_json_mode_prints_bare_json_lines(cli):
    r = cli("-o", "json", "dump", SINGLE)
    assert r.code == 0
    assert r.stdout.count("\n") == 1 and json.loads(r.stdout)["row"] == {"col": 2}


def test_limit_counts_rows_across_stripes(cli):
    r = cli("-o", "json", "dump", "--limit", "7", NATION)
    lines = r.stdout.splitlines()
    assert len(lines) == 7
    assert [json.loads(x)["rowId"] for x in lines] == list(range(7))


def test_columns_restrict_row_fields(cli):
    r = cli("-o", "json", "dump", "--columns", "n_name", "-n", "1", NATION)
    row = json.loads(r.stdout)
    assert list(row) == ["operation", "originalTransaction", "bucket", "rowId", "currentTransaction", "row"]
    assert list(row["row"]) == ["n_name"]


def test_columns_match_case_insensitively_as_hive_names_do(cli):
    upper = cli("-o", "json", "dump", "--columns", "N_Name", "-n", "2", NATION)
    lower = cli("-o", "json", "dump", "--columns", "n_name", "-n", "2", NATION)
    assert upper.code == 0 and upper.stdout == lower.stdout
    assert list(json.loads(upper.stdout.splitlines()[0])["row"]) == ["n_name"]  # the file's own spelling


def test_unknown_column_is_a_usage_error(cli):
    r = cli("dump", "--columns", "nope", NATION)
    assert r.code == 2
    assert "no such column" in r.stderr and "Traceback" not in r.stderr


def test_decode_bucket(cli):
    # 537001984 = V1, bucket 2, statement 0 (fixtures/real/README.md §5)
    r = cli(
        "-o",
        "json",
        "dump",
        "--decode-bucket",
        REAL / "trino" / "acid_version_validation" / "acid_version_hive_3" / "00000_0",
    )
    row = json.loads(r.stdout)
    assert row["bucket"] == 537001984
    assert row["bucketDecoded"] == {"version": 1, "bucketId": 2, "statementId": 0}


def test_decode_bucket_statement_id(cli):
    # alltypes holds 537001985: bucket 2, statement 1
    r = cli(
        "-o",
        "json",
        "dump",
        "--decode-bucket",
        "--row-id",
        "3,537001985,0",
        "--columns",
        "c_int",
        GOLDEN / "alltypes" / "bucket_00000",
    )
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["bucketDecoded"] for x in rows] == [{"version": 1, "bucketId": 2, "statementId": 1}]


def test_filter_by_operation(cli):
    r = cli("-o", "json", "dump", "--operation", "delete", "--columns", "c_int", GOLDEN / "alltypes" / "bucket_00000")
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    # alltypes: exactly one delete event, key (1, 536870912, 23), row NULL
    assert [(x["operation"], x["originalTransaction"], x["bucket"], x["rowId"], x["row"]) for x in rows] == [
        (2, 1, 536870912, 23, None)
    ]


def test_filter_by_row_id(cli):
    r = cli("-o", "json", "dump", "--row-id", "2,536870912,12345", NATION)
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(rows) == 1 and rows[0]["rowId"] == 12345


def test_filtered_dump_frames_only_files_with_a_match(cli):
    """--row-id / --operation: a file without a matching event prints nothing, not even
    FileDump's separator (first-use report); an unfiltered dump still frames every file."""
    alltypes = GOLDEN / "alltypes" / "bucket_00000"
    r = cli("dump", "--row-id", "2,536870912,12345", alltypes, NATION)
    assert r.code == 0, r
    assert r.stdout.count(SEP) == 1
    rows = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    assert [(x["originalTransaction"], x["bucket"], x["rowId"]) for x in rows] == [(2, 536870912, 12345)]
    # alltypes holds exactly one delete event; the nation file only inserts
    r = cli("dump", "--operation", "delete", NATION, alltypes)
    assert r.code == 0, r
    assert r.stdout.count(SEP) == 1 and r.stdout.index(SEP) > r.stdout.index('"operation":2')
    r = cli("dump", "--limit", "1", NATION, alltypes)
    assert r.stdout.count(SEP) == 1  # --limit 1: the second file is never opened
    r = cli("dump", "--columns", "c_int", alltypes, alltypes)
    assert r.stdout.count(SEP) == 2


def test_meta_of_a_directory_without_data_files_fails_as_dump_does(cli, tmp_path):
    """`dump --meta emptydir` and `dump emptydir` both exit 7 with one line (first-use report)."""
    (tmp_path / "empty").mkdir()
    for args in (["dump", "--meta"], ["dump"]):
        r = cli(*args, tmp_path / "empty")
        assert r.code == 7, r
        assert r.stderr.count("\n") == 1 and "no data files under" in r.stderr


def test_bad_row_id_is_a_usage_error(cli):
    r = cli("dump", "--row-id", "1,2", NATION)
    assert r.code == 2 and "WRITEID,BUCKET,ROWID" in r.stderr


def test_directory_dump_is_in_reader_order_with_paths(cli, tmp_path):
    table = tmp_path / "t"
    shutil.copytree(REAL / "prestosql-qubole" / "dummy_id_data_orc", table)
    r = cli("-o", "json", "dump", table)
    assert r.code == 0, r
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    files = []
    for x in rows:
        if not files or files[-1] != x["_path"]:
            files.append(x["_path"])
    names = [f[len(str(table)) + 1 :] for f in files]
    # originals first (path order), then deltas by write id; hidden _orc_acid_version skipped
    assert names == [
        "000000_0",
        "000001_0",
        "000002_0",
        "000002_0_copy_1",
        "000002_0_copy_2",
        "delete_delta_0000001_0000001_0000/bucket_00001",
        "delete_delta_0000002_0000002_0000/bucket_00002",
    ]
    assert len(rows) == 20 + 2
    assert list(rows[0])[0] == "_path"


def test_directory_dump_text_mode_frames_each_file(cli, tmp_path):
    table = tmp_path / "t"
    shutil.copytree(REAL / "trino" / "nation_delete_deltas", table)
    r = cli("dump", "--no-path", table)
    assert r.stdout.count(SEP + "\n\n") == 2
    assert r.stdout.count("\n{") + 1 == 2000


def test_missing_file_exit_3(cli, tmp_path):
    r = cli("dump", tmp_path / "nope")
    assert r.code == 3
    assert r.stderr.startswith("acidctl: error: no such file or directory") and r.stderr.count("\n") == 1


def test_missing_file_json_error_on_stderr(cli, tmp_path):
    r = cli("-o", "json", "dump", tmp_path / "nope")
    assert r.code == 3 and r.stdout == ""
    err = json.loads(r.stderr)
    assert err["error"]["type"] == "PathNotFound" and err["error"]["exit_code"] == 3


def test_non_orc_file_exit_7(cli, tmp_path):
    p = tmp_path / "bucket_00000"
    p.write_bytes(b"this is not an ORC file at all")
    r = cli("dump", p)
    assert r.code == 7 and "not a readable ORC file" in r.stderr and "Traceback" not in r.stderr


def test_truncated_file_exit_7(cli, tmp_path):
    p = tmp_path / "bucket_00000"
    p.write_bytes(NATION.read_bytes()[:5000])
    r = cli("dump", p)
    assert r.code == 7 and "not a readable ORC file" in r.stderr


def test_empty_file_exit_7(cli, tmp_path):
    p = tmp_path / "bucket_00000"
    p.write_bytes(b"")
    r = cli("dump", p)
    assert r.code == 7 and "empty" in r.stderr


def test_directory_without_data_files_exit_7(cli, tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "_orc_acid_version").write_bytes(b"2")
    r = cli("dump", tmp_path / "d")
    assert r.code == 7 and "no data files" in r.stderr


def test_require_acid_refuses_original_file(cli):
    r = cli("dump", "--require-acid", REAL / "trino" / "dummy_id_data_orc" / "000000_0")
    assert r.code == 7 and "not an ACID file" in r.stderr


def test_meta_ok_exit_0_and_json(cli):
    r = cli("-o", "json", "dump", "--meta", NATION)
    assert r.code == 0, r
    d = json.loads(r.stdout)
    f = d["files"][0]
    assert f["rows"] == 25000 and len(f["stripes"]) == 5
    assert f["key_index"] == [
        [2, 536870912, 4999],
        [2, 536870912, 9999],
        [2, 536870912, 14999],
        [2, 536870912, 19999],
        [2, 536870912, 24999],
    ]
    assert f["acid_stats"] == {"inserts": 25000, "updates": 0, "deletes": 0}
    assert d["summary"] == {"files": 1, "errors": 0, "warnings": 0}


def test_meta_with_error_findings_exits_4(cli, tmp_path):
    from tests.acidfiles import B0, events, write_raw

    t = events([(1, B0, 0)])
    p = write_raw(tmp_path / "bucket_00000", t, [("hive.acid.stats", "1,0,0")])
    r = cli("dump", "--meta", p)
    assert r.code == 4
    assert "F03" in r.stdout and "error" in r.stdout
    assert r.stderr.strip().startswith("acidctl: error:")


def test_meta_text_lists_stripes_and_metadata(cli):
    r = cli("dump", "--meta", NATION)
    assert r.code == 0
    assert "hive.acid.key.index" in r.stdout and "2,536870912,24999" in r.stdout
    assert "ACID checks: no findings" in r.stdout


def test_flush_length_side_file_limits_the_readable_length(cli, tmp_path):
    import struct

    d = tmp_path / "delta_0000001_0000002"
    d.mkdir()
    data = NATION.read_bytes()
    # a streaming writer appended garbage after its last flush at the full length
    (d / "bucket_00000").write_bytes(data + b"\x00garbage-after-flush")
    (d / "bucket_00000_flush_length").write_bytes(struct.pack(">qq", 0, len(data)))
    r = cli("-o", "json", "dump", "-n", "1", d / "bucket_00000")
    assert r.code == 0, r
    assert json.loads(r.stdout)["rowId"] == 0
    m = cli("-o", "json", "dump", "--meta", d / "bucket_00000")
    f = json.loads(m.stdout)["files"][0]
    assert f["length"] == len(data) and f["file_length"] == len(data) + 20
    assert any(x["check"] == "M06" for x in f["findings"])


def test_unreadable_flush_length_side_file_exit_7(cli, tmp_path):
    d = tmp_path / "delta_0000001_0000002"
    d.mkdir()
    (d / "bucket_00000").write_bytes(NATION.read_bytes())
    (d / "bucket_00000_flush_length").write_bytes(b"\x00\x01")
    r = cli("dump", d / "bucket_00000")
    assert r.code == 7 and "not readable" in r.stderr


def test_help_and_version(cli):
    assert cli("--version").stdout.startswith("acidctl ")
    r = cli("dump", "--help")
    assert r.code == 0 and "--decode-bucket" in r.stdout


def test_a_bad_file_among_several_is_reported_and_the_rest_dumped(cli, tmp_path):
    """As Java FileDump does: report the unreadable file, go on, and say so in the exit code."""
    bad = tmp_path / "bad.orc"
    bad.write_bytes(b"not an orc file")
    one = cli("-o", "json", "dump", NATION).stdout.splitlines()
    r = cli("-o", "json", "dump", NATION, bad, NATION)
    assert r.code == 7, r
    assert len(r.stdout.splitlines()) == 2 * len(one) == 50000
    assert json.loads(r.stderr.strip())["error"]["type"] == "CorruptOrcFile" and str(bad) in r.stderr
