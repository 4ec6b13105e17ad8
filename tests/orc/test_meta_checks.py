"""`dump --meta` checks: each check is triggered by a file crafted to break exactly it."""

from __future__ import annotations

import pytest

from acidctl.fs import TableFS
from acidctl.orc.acidfile import parse_key_index
from acidctl.orc.meta import inspect_file
from tests.acidfiles import B0, events, good_metadata, write_raw

B1 = B0 + (1 << 16)  # bucket 1


def _inspect(path, **kw):
    t = TableFS(str(path))
    return inspect_file(t, t.root, **kw)


def _checks(report):
    return {(f.check, f.severity.value) for f in report.findings}


def test_correct_file_has_no_findings(tmp_path):
    t = events([(1, B0, i) for i in range(5)])
    r = _inspect(
        write_raw(tmp_path / "delta_0000001_0000001_0000" / "bucket_00000", t, good_metadata(t)),
        dir_kind="delta",
        dir_range=(1, 1),
    )
    assert r.findings == []
    assert r.is_acid and r.rows == 5
    assert r.key_index == [(1, B0, 4)]
    assert r.event_counts == {"inserts": 5, "updates": 0, "deletes": 0}


def test_missing_key_index_is_F03(tmp_path):
    t = events([(1, B0, 0)])
    meta = [m for m in good_metadata(t) if m[0] != "hive.acid.key.index"]
    assert ("F03", "error") in _checks(_inspect(write_raw(tmp_path / "bucket_00000", t, meta)))


def test_key_index_entry_count_must_equal_stripes_F04(tmp_path):
    t = events([(1, B0, 0), (1, B0, 1)])
    meta = [("hive.acid.key.index", "1,%d,0;1,%d,1;" % (B0, B0))] + good_metadata(t)[1:]
    r = _inspect(write_raw(tmp_path / "bucket_00000", t, meta))
    assert ("F04", "error") in _checks(r)
    assert "2 entries for 1 stripes" in r.findings[0].message


def test_key_index_entry_must_be_the_stripes_last_key_F04(tmp_path):
    t = events([(1, B0, 0), (1, B0, 1)])
    meta = [("hive.acid.key.index", "1,%d,0;" % B0)] + good_metadata(t)[1:]  # first key, not last
    r = _inspect(write_raw(tmp_path / "bucket_00000", t, meta))
    assert [(f.check, f.severity.value) for f in r.findings] == [("F04", "error")]
    assert "ends with key 1,536870912,1" in r.findings[0].message


def test_key_index_last_entry_needs_its_semicolon_F04(tmp_path):
    t = events([(1, B0, 0)])
    meta = [("hive.acid.key.index", "1,%d,0" % B0)] + good_metadata(t)[1:]
    assert ("F04", "error") in _checks(_inspect(write_raw(tmp_path / "bucket_00000", t, meta)))


def test_multi_stripe_key_index_is_checked_per_stripe(tmp_path):
    # small stripes: the writer-independent truth comes from the footer's stripe row counts
    n = 200_000
    t = events([(1, B0, i) for i in range(n)])
    path = write_raw(tmp_path / "bucket_00000", t, None, stripe_size=64 * 1024)
    r0 = _inspect(path)
    assert len(r0.stripes) > 1
    ends = []
    total = 0
    for s in r0.stripes:
        total += s.rows
        ends.append((1, B0, total - 1))
    good = "".join("%d,%d,%d;" % k for k in ends)
    write_raw(
        path,
        t,
        [("hive.acid.key.index", good), ("hive.acid.stats", f"{n},0,0"), ("hive.acid.version", "2")],
        stripe_size=64 * 1024,
    )
    assert _inspect(path).findings == []
    bad = "".join("%d,%d,%d;" % (k[0], k[1], k[2] - 1) for k in ends)  # every entry one short
    write_raw(
        path,
        t,
        [("hive.acid.key.index", bad), ("hive.acid.stats", f"{n},0,0"), ("hive.acid.version", "2")],
        stripe_size=64 * 1024,
    )
    assert ("F04", "error") in _checks(_inspect(path))


def test_wrong_stats_in_delete_delta_is_an_error_F05(tmp_path):
    t = events([(1, B0, 0), (1, B0, 1)], ops=[2, 2], ctxn=[3, 3])
    meta = [good_metadata(t)[0], ("hive.acid.stats", "0,0,0"), ("hive.acid.version", "2")]
    r = _inspect(
        write_raw(tmp_path / "delete_delta_0000003_0000003_0000" / "bucket_00000", t, meta),
        dir_kind="delete_delta",
        dir_range=(3, 3),
    )
    assert ("F05", "error") in _checks(r)


def test_wrong_stats_in_insert_delta_is_a_warning_F05(tmp_path):
    t = events([(1, B0, 0), (1, B0, 1)])
    meta = [good_metadata(t)[0], ("hive.acid.stats", "1,0,0"), ("hive.acid.version", "2")]
    assert ("F05", "warn") in _checks(_inspect(write_raw(tmp_path / "bucket_00000", t, meta)))


def test_missing_stats_is_a_warning_outside_delete_deltas_F05(tmp_path):
    # directory-state.md §9.4: F05 is an error in delete deltas, a warning elsewhere (new-user report)
    t = events([(1, B0, 0)])
    meta = [m for m in good_metadata(t) if m[0] != "hive.acid.stats"]
    path = write_raw(tmp_path / "delta_0000001_0000001_0000" / "bucket_00000", t, meta)
    assert ("F05", "warn") in _checks(_inspect(path, dir_kind="delta", dir_range=(1, 1)))
    assert ("F05", "error") not in _checks(_inspect(path, dir_kind="delta", dir_range=(1, 1)))


def test_missing_stats_in_a_delete_delta_is_an_error_F05(tmp_path):
    t = events([(1, B0, 0)], ops=[2], ctxn=[3])
    meta = [m for m in good_metadata(t) if m[0] != "hive.acid.stats"]
    path = write_raw(tmp_path / "delete_delta_0000003_0000003_0000" / "bucket_00000", t, meta)
    assert ("F05", "error") in _checks(_inspect(path, dir_kind="delete_delta", dir_range=(3, 3)))


def test_missing_acid_version_is_a_warning_F06(tmp_path):
    t = events([(1, B0, 0)])
    meta = [m for m in good_metadata(t) if m[0] != "hive.acid.version"]
    assert _checks(_inspect(write_raw(tmp_path / "bucket_00000", t, meta))) == {("F06", "warn")}


def test_unsorted_events_are_F08(tmp_path):
    t = events([(1, B0, 1), (1, B0, 0)])
    meta = [("hive.acid.key.index", "1,%d,0;" % B0)] + good_metadata(t)[1:]
    r = _inspect(write_raw(tmp_path / "bucket_00000", t, meta))
    assert ("F08", "error") in _checks(r)


def test_duplicate_keys_are_not_strictly_increasing_F08(tmp_path):
    t = events([(1, B0, 0), (1, B0, 0)])
    assert ("F08", "error") in _checks(_inspect(write_raw(tmp_path / "bucket_00000", t, good_metadata(t))))


def test_bucket_compares_as_signed_int_in_sort_order(tmp_path):
    # V0 bucket 3 sorts before every V1 value (small non-negative ints)
    t = events([(1, 3, 0), (1, B0, 0)])
    r = _inspect(write_raw(tmp_path / "x" / "somefile", t, good_metadata(t)))
    assert "F08" not in {c for c, _ in _checks(r)}
    assert ("F10", "warn") in _checks(r)  # V0 values: pre-Hive-3 data


def test_invalid_operation_code_is_an_error_F10(tmp_path):
    t = events([(1, B0, 0)], ops=[5])
    meta = [good_metadata(t)[0], ("hive.acid.stats", "0,0,0"), ("hive.acid.version", "2")]
    assert ("F10", "error") in _checks(_inspect(write_raw(tmp_path / "bucket_00000", t, meta)))


def test_update_events_are_acid_v1_warnings_F10(tmp_path):
    t = events([(1, B0, 0)], ops=[1])
    assert ("F10", "warn") in _checks(_inspect(write_raw(tmp_path / "bucket_00000", t, good_metadata(t))))


def test_bucket_property_must_match_file_name_F09(tmp_path):
    t = events([(1, B1, 0)])
    r = _inspect(write_raw(tmp_path / "bucket_00000", t, good_metadata(t)))
    assert ("F09", "error") in _checks(r)
    assert "events decode to bucket id [1] but" in r.findings[0].message
    assert _inspect(write_raw(tmp_path / "ok" / "bucket_00001", t, good_metadata(t))).findings == []


def test_invalid_bucket_codec_version_F09(tmp_path):
    t = events([(1, 1073741824, 0)])  # 0x40000000: version 2
    assert ("F09", "error") in _checks(_inspect(write_raw(tmp_path / "bucket_00000", t, good_metadata(t))))


def test_delete_event_in_wrong_bucket_file_is_F15(tmp_path):
    t = events([(1, B1, 0)], ops=[2], ctxn=[2])
    r = _inspect(
        write_raw(tmp_path / "delete_delta_0000002_0000002_0000" / "bucket_00000", t, good_metadata(t)),
        dir_kind="delete_delta",
        dir_range=(2, 2),
    )
    assert ("F15", "error") in _checks(r)


def test_row_field_names_must_be_lower_case_F02(tmp_path):
    t = events([(1, B0, 0)], names=("Id", "name"))
    assert ("F02", "error") in _checks(_inspect(write_raw(tmp_path / "bucket_00000", t, good_metadata(t))))


def test_colN_row_names_are_F02(tmp_path):
    t = events([(1, B0, 0)], names=("_col0", "_col1"))
    assert ("F02", "error") in _checks(_inspect(write_raw(tmp_path / "bucket_00000", t, good_metadata(t))))


def test_current_transaction_outside_directory_range_F12(tmp_path):
    t = events([(1, B0, 0)], ops=[2], ctxn=[9])
    r = _inspect(write_raw(tmp_path / "bucket_00000", t, good_metadata(t)), dir_kind="delete_delta", dir_range=(3, 3))
    assert ("F12", "error") in _checks(r)


def test_null_insert_and_nonnull_delete_F13(tmp_path):
    t = events([(1, B0, 0), (1, B0, 1)], ops=[0, 2], rows=[None, (1, "x")], ctxn=[1, 1])
    r = _inspect(write_raw(tmp_path / "bucket_00000", t, good_metadata(t)))
    assert [f.check for f in r.findings].count("F13") == 2


def test_insert_with_other_current_transaction_in_delta_F11(tmp_path):
    t = events([(1, B0, 0)], ctxn=[2])
    r = _inspect(write_raw(tmp_path / "bucket_00000", t, good_metadata(t)), dir_kind="delta", dir_range=(1, 2))
    assert ("F11", "warn") in _checks(r)


def test_key_index_without_acid_schema_is_F01(tmp_path):
    import pyarrow as pa

    t = pa.table({"id": [1, 2]})
    r = _inspect(write_raw(tmp_path / "000000_0", t, [("hive.acid.key.index", "1,536870912,1;")]))
    assert ("F01", "error") in _checks(r)


def test_original_file_has_no_findings_unless_acid_expected(tmp_path):
    import pyarrow as pa

    p = write_raw(tmp_path / "000000_0", pa.table({"id": [1, 2]}), None)
    assert _inspect(p).findings == []
    assert ("F01", "error") in _checks(_inspect(p, expect_acid=True))


def test_acid_names_are_matched_case_insensitively(tmp_path):
    t = events([(1, B0, 0)]).rename_columns(
        ["OPERATION", "originaltransaction", "Bucket", "rowid", "currenttransaction", "row"]
    )
    r = _inspect(write_raw(tmp_path / "bucket_00000", t, good_metadata(events([(1, B0, 0)]))))
    assert r.is_acid and r.findings == []


def test_parse_key_index():
    assert parse_key_index("") == []
    assert parse_key_index("2,536870912,4999;2,536870912,9999;") == [(2, B0, 4999), (2, B0, 9999)]
    with pytest.raises(ValueError):
        parse_key_index("1,2;")


def test_real_hive_files_pass_every_check():
    from tests.conftest import REAL

    for p in sorted(REAL.rglob("*")):
        if p.is_file() and p.name not in ("README.md", "_orc_acid_version"):
            r = _inspect(p)
            assert [f for f in r.findings if f.severity.value == "error"] == [], p


def test_checks_span_batches_inside_one_big_stripe(tmp_path):
    # one stripe of 200,000 rows is checked in bounded batches: the stripe's last key and an
    # order violation exactly at a batch boundary (rows 65,535 / 65,536) are still seen
    n = 200_000
    keys = [(1, B0, i) for i in range(n)]
    t = events(keys)
    r = _inspect(write_raw(tmp_path / "ok" / "bucket_00000", t, good_metadata(t)))
    assert len(r.stripes) == 1 and r.findings == []
    keys[65536] = (1, B0, 65535)  # equal to its predecessor: not strictly increasing
    t = events(keys)
    r = _inspect(write_raw(tmp_path / "bad" / "bucket_00000", t, good_metadata(t)))
    f08 = [f for f in r.findings if f.check == "F08"]
    assert len(f08) == 1 and "at row 65536" in f08[0].message
