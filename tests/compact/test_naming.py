"""The compactor's output names (acidctl.compact.naming), worked out from Hive's source:

* MR compactor (Hive 3.1 CompactorMR, Hive 4.0 MRCompactor — the default for full-ACID tables,
  hive.compactor.crud.query.based=false): MRCompactor.launchCompactionJob sets MIN_TXN/MAX_TXN to
  the min minWriteId / max maxWriteId over the current deltas read; CompactorMap.getWriter writes
  base_/delta_ with statementId -1 and visibilityTxnId = the compactor txn (Hive 4).
* query-based (Hive 4 Major/MinorQueryCompactor on Tez with crud.query.based=true; every
  insert-only compaction, Hive 3 runMmCompaction included): named after the compactor hwm.
"""

from __future__ import annotations

from acidctl.compact import naming
from acidctl.compact.naming import MAJOR, MINOR, DeltaRange as D

# the Hive 3 demo's ds=2025-12-31: originals + delete_delta_1_1 + delta_2_2, write id 7 open
# (compactor hwm 6): CompactorMR's MAX_TXN is 2, not the hwm
DEMO_A = [D(1, 1, delete=True), D(2, 2)]
# ds=2026-01-01: delta_3, aborted delta_4 (read by the compactor: ValidCompactorWriteIdList's
# isWriteIdRangeValid is ALL at or below the hwm), delta_5 (two statements), delete deltas 5, 6
DEMO_B = [D(3, 3), D(4, 4, aborted=True), D(5, 5), D(5, 5), D(5, 5, delete=True), D(6, 6, delete=True)]


def names(kind, deltas, *, hwm=6, hv=3, vis=None, compactor=naming.MR, **kw):
    out = naming.output_names(
        kind, deltas=deltas, compactor_hwm=hwm, hive_version=hv, visibility=vis, compactor=compactor, **kw
    )
    return None if out is None else list(out.names)


def test_mr_major_is_named_after_the_deltas_read_not_the_hwm():
    assert names(MAJOR, DEMO_A) == ["base_0000002"]
    assert names(MAJOR, DEMO_B) == ["base_0000006"]
    assert names(MAJOR, [D(3, 3), D(4, 4, aborted=True)], hwm=9) == ["base_0000004"]
    # Hive 4: the same range, _v<compactor txn>; Hive 3 never has a suffix
    assert names(MAJOR, DEMO_A, hv=4, vis=11) == ["base_0000002_v0000011"]
    assert names(MAJOR, DEMO_A, hv=3, vis=11) == ["base_0000002"]
    # before the txn exists (dry run, why): a readable placeholder, never a fake number
    assert names(MAJOR, DEMO_A, hv=4, vis=naming.VIS_PLACEHOLDER) == ["base_0000002_v<compaction txn>"]


def test_mr_major_of_originals_only():
    # Hive: MAX_TXN stays Long.MIN_VALUE (base_-9223372036854775808); acidctl writes base_0000000
    assert names(MAJOR, []) == ["base_0000000"]


def test_mr_minor_range_and_kinds():
    ds = [D(1, 1), D(2, 2, delete=True), D(3, 5)]
    assert names(MINOR, ds, hwm=9) == ["delta_0000001_0000005", "delete_delta_0000001_0000005"]
    assert names(MINOR, [D(2, 3), D(4, 4)], hv=4, vis=20) == ["delta_0000002_0000004_v0000020"]
    assert names(MINOR, [D(2, 2, delete=True), D(4, 4, delete=True)]) == ["delete_delta_0000002_0000004"]
    assert names(MINOR, []) is None


def test_query_based_is_named_after_the_hwm():
    q = naming.QUERY_BASED
    assert names(MAJOR, DEMO_A, hwm=6, hv=4, vis=11, compactor=q) == ["base_0000006_v0000011"]
    assert names(MINOR, [D(3, 3), D(5, 5)], hwm=6, hv=4, vis=11, compactor=q) == ["delta_0000003_0000006_v0000011"]
    # Hive 3 insert-only major: base_<compactor hwm>, no suffix
    assert names(MAJOR, [D(1, 1), D(2, 2)], hwm=4, hv=3, compactor=q) == ["base_0000004"]


def test_which_compactor_hive_runs():
    # CompactorFactory.getCompactor (Hive 4.0): insert-only → Mm*QueryCompactor always;
    # full ACID → MRCompactor unless crud.query.based (default false) on Tez
    assert naming.compactor_for(hive_version=3, insert_only=False) == naming.MR
    assert naming.compactor_for(hive_version=4, insert_only=False) == naming.MR
    assert naming.compactor_for(hive_version=4, insert_only=False, crud_query_based=True) == naming.QUERY_BASED
    assert naming.compactor_for(hive_version=3, insert_only=False, crud_query_based=True) == naming.MR
    assert naming.compactor_for(hive_version=3, insert_only=True) == naming.QUERY_BASED
    assert naming.compactor_for(hive_version=4, insert_only=True) == naming.QUERY_BASED


def test_a_row_explains_what_it_could_have_written():
    major6 = {"id": 2, "type": "a", "highest_write_id": 6, "txn_id": 11}

    def ex(row, kind="base", wid=2, vis=None, hv=3, compactor=naming.MR):
        return naming.row_explains(
            row, kind=kind, max_write_id=wid, visibility=vis, hive_version=hv, compactor=compactor
        )

    # the report's case: compaction 2 (hwm 6) wrote base_0000002 (Hive 3) / base_0000002_v11 (Hive 4)
    assert ex(major6)
    assert ex(major6, hv=4, vis=11)
    assert not ex(major6, hv=4, vis=12)  # another compaction's txn
    assert not ex(major6, hv=4, vis=None)
    assert not ex(major6, wid=7)  # above the row's hwm: no compactor read write id 7
    assert not ex(major6, kind="delta")  # a major writes a base
    assert not ex(major6, hv=3, vis=11)  # Hive 3 output has no suffix
    minor = {"id": 3, "type": "i", "highest_write_id": 6}
    assert ex(minor, kind="delete_delta", wid=5) and not ex(minor, kind="base")
    # query-based output is named exactly after the hwm
    assert ex(major6, wid=6, compactor=naming.QUERY_BASED) and not ex(major6, compactor=naming.QUERY_BASED)
    rows = [major6, {"id": 5, "type": "a", "highest_write_id": 3}, minor]
    assert [
        r["id"] for r in naming.explaining_rows(rows, kind="base", max_write_id=2, visibility=None, hive_version=3)
    ] == [5, 2]


def test_predict_matches_the_planners_nothing_rules():
    p = naming.predict
    out, _ = p(MAJOR, deltas=DEMO_A, has_base=False, has_originals=True, compactor_hwm=6, hive_version=3)
    assert out is not None and out.names == ("base_0000002",)
    out, why = p(MAJOR, deltas=[], has_base=True, has_originals=False, compactor_hwm=6, hive_version=3)
    assert out is None and "no delta files or original files" in why
    out, why = p(
        MINOR, deltas=[D(1, 4, compacted=True)], has_base=False, has_originals=False, compactor_hwm=6, hive_version=3
    )
    assert out is None and "already cover 1..4" in why
    # an aborted delta inside the range still makes a minor worth running (the Cleaner needs it covered)
    out, _ = p(
        MINOR,
        deltas=[D(1, 4, compacted=True), D(5, 5, aborted=True)],
        has_base=False,
        has_originals=False,
        compactor_hwm=6,
        hive_version=3,
    )
    assert out is not None and out.names == ("delta_0000001_0000005",)
    # insert-only: Hive 3 has no minor; Hive 4 names after the hwm
    out, _ = p(
        MINOR,
        deltas=[D(1, 1), D(2, 2)],
        has_base=False,
        has_originals=False,
        compactor_hwm=3,
        hive_version=3,
        insert_only=True,
    )
    assert out is None
    out, _ = p(
        MINOR,
        deltas=[D(1, 1), D(2, 2)],
        has_base=False,
        has_originals=False,
        compactor_hwm=3,
        hive_version=4,
        insert_only=True,
    )
    assert out is not None and out.names == ("delta_0000001_0000003_v<compaction txn>",)
