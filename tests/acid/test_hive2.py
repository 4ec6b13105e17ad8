"""Hive 2.3 (ACID v1) rules: ValidTxnList, getAcidState, OrcRawRecordMerger's merge.

Oracles: the Hive 2.3.10-written fixture table and its _EXPECTED.md (rows Hive 2.3's own reader
returned), the spec's observed round trips (insert-only-and-hive2.md B.2, B.4), and the
reference model of tests/hive2_histories.py for random legacy and split-update histories.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acidctl.acid.acidstate import get_acid_state
from acidctl.acid.hive2 import Hive2TxnList, read_partition, table_mode
from acidctl.acid.layout import list_table
from acidctl.errors import UsageError
from acidctl.fs import TableFS
from tests.compact.helpers import hive23_table
from tests.conftest import run_cli
from tests.hive2_histories import random_history, write_table

ALL = "9223372036854775807"


# -- ValidTxnList (B.2) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,valid,invalid",
    [
        (f"2:{ALL}:", [1, 2], [3]),
        ("2:2:2", [1], [2, 3]),
        ("2:1:1:2", [], [1, 2]),
        ("3:3:2", [1, 3], [2, 4]),  # txn 3's own view: itself valid (B.2 observed)
        ("", [1, 10**12], []),  # null / empty: everything valid
    ],
)
def test_valid_txn_list_predicates(text, valid, invalid):
    tl = Hive2TxnList.parse(text)
    wl = tl.to_write_ids()
    for t in valid:
        assert tl.is_valid(t) and wl.is_valid(t), (text, t)
    for t in invalid:
        assert not tl.is_valid(t) and not wl.is_valid(t), (text, t)


@pytest.mark.parametrize("text", [f"2:{ALL}:", "2:2:2", "2:1:1:2", "3:3:2:3"])
def test_round_trip(text):
    assert str(Hive2TxnList.parse(text)) == text


def test_compactor_list_is_hives():
    # B.2 observed: 1 committed, 2 aborted, 3 open → metastore list 3:3:2:3, compactor 2:MAX:2
    c = Hive2TxnList.parse("3:3:2:3").for_compactor()
    assert (c.hwm, c.aborted, c.open, c.compactor) == (2, (2,), (), True)


@pytest.mark.parametrize("bad", ["x:1:", "5", "2:9223372036854775807::3,4:", "2:1:7"])
def test_bad_lists_are_usage_errors(bad):
    with pytest.raises(UsageError):
        Hive2TxnList.parse(bad)


def test_table_mode():
    assert table_mode({}) == "legacy"
    assert table_mode({"transactional_properties": "legacy"}) == "legacy"
    assert table_mode({"transactional_properties": "DEFAULT"}) == "split-update"
    with pytest.raises(UsageError):
        table_mode({"transactional_properties": "insert_only"})


# -- getAcidState and reads on the fixture (B.4, _EXPECTED.md) --------------------------------


@pytest.mark.parametrize(
    "text,deltas",
    [
        (
            f"2:{ALL}:",
            ["delta_0000001_0000001_0000", "delete_delta_0000002_0000002_0000", "delta_0000002_0000002_0000"],
        ),
        (f"1:{ALL}:", ["delta_0000001_0000001_0000"]),
        (f"2:{ALL}:2", ["delta_0000001_0000001_0000"]),
        ("2:2:2", ["delta_0000001_0000001_0000"]),
        ("2:1:1:2", []),
    ],
)
def test_fixture_directories(tmp_path, text, deltas):
    (lst,) = list_table(TableFS(str(hive23_table(tmp_path))))
    st = get_acid_state(lst, Hive2TxnList.parse(text).to_write_ids(), hive_version=2)
    assert [d.name for d in st.deltas] == deltas and st.base is None


AFTER = [((1, 0, 0), [1, "Jerry", 5000]), ((1, 0, 2), [3, "Kate", 6000]), ((2, 0, 0), [2, "Tom", 7000])]
BEFORE = [((1, 0, 0), [1, "Jerry", 5000]), ((1, 0, 1), [2, "Tom", 8000]), ((1, 0, 2), [3, "Kate", 6000])]


@pytest.mark.parametrize(
    "text,expected",
    [
        (f"2:{ALL}:", AFTER),
        (f"2:{ALL}:2", BEFORE),
        (f"1:{ALL}:", BEFORE),
        ("2:2:2", BEFORE),
    ],
)
def test_fixture_dump_merged_is_hive23s_read(tmp_path, text, expected):
    t = hive23_table(tmp_path)
    r = run_cli("dump", "--merged", "--hive-version", "2", "--txns", text, t)
    assert r.code == 0, r.stderr
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    got = [
        (
            (d["row__id"]["writeid"], d["row__id"]["bucketid"], d["row__id"]["rowid"]),
            [d["_col0"], d["_col1"], d["_col2"]],
        )
        for d in rows
    ]
    assert got == expected


def test_fixture_base_validity(tmp_path):
    """A Hive 2 base (no _metadata_acid) is usable iff N < minOpenTxn and N <= hwm (B.2)."""
    t = hive23_table(tmp_path)
    (t / "base_0000002").mkdir()
    (lst,) = list_table(TableFS(str(t)))
    st = get_acid_state(lst, Hive2TxnList.parse(f"2:{ALL}:").to_write_ids(), hive_version=2)
    assert st.base is not None and st.base.name == "base_0000002" and st.deltas == []
    assert {c.name for c in st.obsolete} == {
        "delta_0000001_0000001_0000",
        "delete_delta_0000002_0000002_0000",
        "delta_0000002_0000002_0000",
    }
    # txn 1 open: base_2 is not below the lowest open txn (Hive 3 would judge it as an
    # INSERT OVERWRITE base of a committed write id and use it)
    st = get_acid_state(lst, Hive2TxnList.parse("2:1:1").to_write_ids(), hive_version=2)
    assert st.base is None and st.not_enough_history


def test_state_under_hive2_rules_has_no_errors_for_hive23_files(tmp_path):
    t = hive23_table(tmp_path)
    r = run_cli("-o", "json", "state", "--deep", "--hive-version", "2", "--txns", f"2:{ALL}:", t)
    assert r.code == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["hive_version"] == 2 and rep["summary"]["errors"] == 0
    assert rep["hive2_txns"] == f"2:{ALL}:"
    # the wrong stats of the update's insert file (B.5.2) stay a warning
    assert [f["check"] for f in rep["findings"] if f["severity"] == "warn"] == ["F05"]


# -- random histories against the reference model ----------------------------------------------


def _read(root, text):
    tfs = TableFS(str(root))
    out = {}
    for lst in list_table(tfs):
        st = get_acid_state(lst, Hive2TxnList.parse(text).to_write_ids(), hive_version=2)
        st.require_snapshot()
        for _, t in read_partition(tfs, lst, st):
            keys = list(zip(*(t.column(c).to_pylist() for c in ("originalTransaction", "bucket", "rowId"))))
            assert keys == sorted(keys), "rows must come in ROW__ID order"
            for k, row in zip(keys, t.column("row").to_pylist()):
                assert k not in out
                out[k] = row
    return out


@pytest.mark.parametrize("mode", ["legacy", "split-update"])
@pytest.mark.parametrize("seed", range(12))
def test_random_histories_read_as_hive2s_merge(tmp_path, mode, seed):
    rng = random.Random(seed * 31 + (mode == "legacy"))
    h = random_history(rng, mode=mode, txns=rng.randint(3, 9))
    root = write_table(h, tmp_path / "t")
    for hwm in sorted({h.hwm, rng.randint(1, h.hwm)}):
        assert _read(root, h.reader_list(hwm)) == h.expected(hwm), (seed, hwm, h.reader_list(hwm))


def test_reason_names_the_ids_skipped_inside_a_read_delta(tmp_path):
    """First-use report: REASON "read: write ids 1..2" must not hide that 1 is aborted."""
    t = tmp_path / "t"
    (t / "delta_0000001_0000002").mkdir(parents=True)
    (t / "delta_0000003_0000003_0000").mkdir()
    (lst,) = list_table(TableFS(str(t)))
    st = get_acid_state(lst, Hive2TxnList.parse(f"3:{ALL}:1").to_write_ids(), hive_version=2)
    # Hive 2.3 names directories by txn ids: the reasons say txn ids
    assert st.get("delta_0000001_0000002").reason == "read: txn ids 1..2 (events of aborted txn id 1 skipped)"
    assert st.get("delta_0000003_0000003_0000").reason == "read: txn id 3"


@pytest.mark.parametrize("seed", range(3))
def test_export_of_a_legacy_history_is_hive2s_snapshot(tmp_path, seed):
    import pyarrow.parquet as pq

    rng = random.Random(500 + seed)
    h = random_history(rng, mode="legacy", txns=7)
    root = write_table(h, tmp_path / "t")
    r = run_cli("export", "--hive-version", "2", "--txns", h.reader_list(), "--with-row-id", root, tmp_path / "out")
    assert r.code == 0, r.stderr
    got = {}
    for f in sorted((tmp_path / "out").rglob("*.parquet")):
        for d in pq.read_table(f).to_pylist():
            rid = d.pop("row__id")
            got[(rid["writeid"], rid["bucketid"], rid["rowid"])] = d
    assert got == h.expected()


def test_hive2_version_file_in_a_delta_is_not_an_error_under_hive2_rules(tmp_path):
    """B.3: Hive Streaming leaves Hive 2's 4-byte _orc_acid_version (int 0) in the directory."""
    t = hive23_table(tmp_path)
    (t / "delta_0000001_0000001_0000" / "_orc_acid_version").write_bytes(b"\0\0\0\0")
    r = run_cli("-o", "json", "state", "--hive-version", "2", "--txns", f"2:{ALL}:", t)
    assert r.code == 0, r.stdout
    m03 = [f for f in json.loads(r.stdout)["findings"] if f["check"] == "M03"]
    assert [f["severity"] for f in m03] == ["info"]
    (t / "delta_0000001_0000001_0000" / "_orc_acid_version").write_bytes(b"7")
    r = run_cli("-o", "json", "state", "--hive-version", "2", "--txns", f"2:{ALL}:", t)
    assert r.code == 4  # any other content stays an error


def _spec_range(hwm, exc, lo, hi):
    """isTxnRangeValid as B.2 states it."""
    if lo > hwm:
        return "NONE"
    if exc and exc[0] > hi:
        return "ALL"
    count = max(0, hi - hwm) + sum(1 for x in exc if lo <= x <= hi)
    return "ALL" if count == 0 else "NONE" if count == hi - lo + 1 else "SOME"


@settings(max_examples=150, deadline=None)
@given(hwm=st.integers(0, 30), data=st.data())
def test_txn_list_predicates_match_the_spec(hwm, data):
    exc = sorted(data.draw(st.sets(st.integers(1, max(hwm, 1)), max_size=6))) if hwm else []
    opens = [x for x in exc if data.draw(st.booleans())]
    min_open = min(opens) if opens else ALL
    text = f"{hwm}:{min_open}:" + ":".join(map(str, exc))
    tl = Hive2TxnList.parse(text)
    assert str(tl) == text
    wl = tl.to_write_ids()
    lo = data.draw(st.integers(1, 35))
    hi = data.draw(st.integers(lo, 40))
    assert wl.range_valid(lo, hi).value == _spec_range(hwm, exc, lo, hi)
    for t in range(1, 35):
        assert wl.is_valid(t) == (t <= hwm and t not in exc)
        assert wl.is_valid_base(t) == (t < int(min_open) and t <= hwm)
    c = tl.for_compactor()
    chwm = min(hwm, int(min_open) - 1)
    assert (c.hwm, c.aborted) == (chwm, tuple(x for x in exc if x <= chwm))
