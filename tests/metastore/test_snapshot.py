"""Write-id snapshots computed the way Hive computes them (metastore.md §6, §7).

Expected strings are worked out by hand from the spec in the comments of each test."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from acidctl.acid.writeids import LONG_MAX
from acidctl.metastore.snapshot import table_snapshot
from tests.metastore.helpers import cli_json, cli_text, insert_row, insert_txn

OLD = 1_600_000_000_000  # an old epoch-ms start time (way past the 1 s gap window)


def _set(rec, table, **vals):
    t = getattr(rec.T, table)
    with rec.engine.begin() as c:
        c.execute(sa.update(t.clause).values({getattr(t, k).name: v for k, v in vals.items()}))


def _scenario(rec):
    """t1 writes w1 and commits, t2 writes w2 and aborts, t3 writes w3 and stays open,
    t4 writes w4 and commits (all to db.t)."""
    ids = []
    for action in ("commit", "abort", "open", "commit"):
        txn = rec.open_txn(user="alice", host="h1", now_ms=OLD)
        rec.add_write(txn, "DB", "T", operation="i")
        if action == "commit":
            rec.commit_txn(txn)
        elif action == "abort":
            rec.abort_txn(txn)
        ids.append(txn)
    return ids


def test_basic_snapshot(metastore, hive_version):
    url, rec = metastore
    assert _scenario(rec) == [1, 2, 3, 4]
    # Hive 3: committed TXNS rows are deleted; TXNS = {2:'a', 3:'o'}, NTXN_NEXT = 5 -> hwm 4.
    # Hive 4: TXNS = {0:'c', 1:'c', 2:'a', 3:'o', 4:'c'}; hwm = max(TXN_ID) = 4, no young rows.
    # Both: txn list "4:3:3:2"; write ids: max(T2W_WRITEID | txn <= 4) = 4;
    # w1 (t1 valid), w2 (t2 aborted), w3 (t3 open), w4 (t4 valid) -> "db.t:4:3:3:2".
    with rec.engine.connect() as c:
        t = rec.T.TXNS
        states = dict(c.execute(sa.select(t.TXN_ID, t.TXN_STATE)).all())
    if hive_version == 3:
        assert states == {2: "a", 3: "o"}
    else:
        assert states == {0: "c", 1: "c", 2: "a", 3: "o", 4: "c"}
    txns, wl = table_snapshot(rec.ms, "db.t")
    assert str(txns) == "4:3:3:2"
    assert str(wl) == "db.t:4:3:3:2"
    assert wl.is_valid(1) and not wl.is_valid(2) and not wl.is_valid(3) and wl.is_valid(4)
    assert wl.is_aborted(2) and wl.is_open(3)
    # an unknown table: nobody wrote it -> hwm 0, nothing open
    _, wl2 = table_snapshot(url, "db.other")
    assert str(wl2) == f"db.other:0:{LONG_MAX}::"


@pytest.mark.parametrize("hive_version", [3], ids=["hive3"])
def test_committed_txns_missing_from_txns_hive3(metastore, hive_version):
    """Hive 3: a T2W row whose txn is absent from TXNS (and <= hwm) is committed."""
    url, rec = metastore
    # rows as Hive 3 leaves them after txns 5..7 committed and 8 aborted: no TXNS rows for 5..7
    _set(rec, "NEXT_TXN_ID", NTXN_NEXT=9)
    insert_row(rec, "NEXT_WRITE_ID", NWI_DATABASE="db", NWI_TABLE="t", NWI_NEXT=5)
    for txn, wid in ((5, 1), (6, 2), (7, 3), (8, 4)):
        insert_row(rec, "TXN_TO_WRITE_ID", T2W_TXNID=txn, T2W_DATABASE="db", T2W_TABLE="t", T2W_WRITEID=wid)
    insert_txn(rec, 8, "a", OLD)
    insert_row(rec, "TXN_COMPONENTS", TC_TXNID=8, TC_DATABASE="db", TC_TABLE="t", TC_OPERATION_TYPE="i", TC_WRITEID=4)
    txns, wl = table_snapshot(url, "DB.T")
    # hwm = 9 - 1 = 8; TXNS has only 8 'a' -> "8:LONG_MAX::8"
    assert str(txns) == f"8:{LONG_MAX}::8"
    # write hwm 4; w1..w3 committed (txns absent), w4 aborted
    assert str(wl) == f"db.t:4:{LONG_MAX}::4"


def test_hwm_with_no_write_ids_yet(metastore, hive_version):
    """TXN_TO_WRITE_ID cleaned (or never filled below the txn hwm): hwm = NWI_NEXT - 1."""
    url, rec = metastore
    if hive_version == 3:
        _set(rec, "NEXT_TXN_ID", NTXN_NEXT=20)
    insert_row(rec, "NEXT_WRITE_ID", NWI_DATABASE="db", NWI_TABLE="c", NWI_NEXT=6)
    _, wl = table_snapshot(url, "db.c")
    assert str(wl) == f"db.c:5:{LONG_MAX}::"
    # an open txn that has the next write id allocated but is above... (Hive 3: txn hwm 19)
    txn = rec.open_txn(now_ms=OLD)
    wid = rec.allocate_write_id(txn, "db", "c")
    assert wid == 6
    _, wl = table_snapshot(url, "db.c")
    # max(T2W_WRITEID | txn <= hwm) = 6 (the open txn is <= hwm); w6 open
    assert str(wl) == "db.c:6:6:6:"


def test_aborted_vs_open_write_ids(metastore, hive_version, capsys):
    url, rec = metastore
    t1 = rec.open_txn(user="bob", now_ms=OLD)
    rec.add_write(t1, "db", "x")  # w1 committed
    rec.commit_txn(t1)
    t2 = rec.open_txn(user="bob", now_ms=OLD)
    rec.add_write(t2, "db", "x")  # w2 open
    t3 = rec.open_txn(user="carol", now_ms=OLD)
    rec.add_write(t3, "db", "x")  # w3 aborted
    rec.abort_txn(t3)
    t4 = rec.open_txn(user="dave", now_ms=OLD)
    rec.add_write(t4, "db", "x")  # w4 aborted
    rec.abort_txn(t4)
    t5 = rec.open_txn(user="erin", now_ms=OLD)
    rec.add_write(t5, "db", "x")  # w5 committed
    rec.commit_txn(t5)
    # txn list: hwm 5, open {2}, aborted {3,4} -> "5:2:2:3,4"; write ids "db.x:5:2:2:3,4"
    txns, wl = table_snapshot(url, "db.x")
    assert str(txns) == "5:2:2:3,4"
    assert str(wl) == "db.x:5:2:2:3,4"
    out = cli_text(capsys, ["--metastore", url, "show", "write-ids", "db.x"])
    assert out.strip() == "db.x:5:2:2:3,4"
    doc = cli_json(capsys, ["--metastore", url, "show", "write-ids", "db.x"])
    assert doc["valid_write_ids"] == "db.x:5:2:2:3,4"
    assert doc["write_id_list"]["open"] == [2] and doc["write_id_list"]["aborted"] == [3, 4]
    assert [(r["write_id"], r["txn_id"], r["state"], r["user"]) for r in doc["invalid_write_ids"]] == [
        (2, 2, "OPEN", "bob"),
        (3, 3, "ABORTED", "carol"),
        (4, 4, "ABORTED", "dave"),
    ]
    assert doc["invalid_write_ids"][0]["startedtime"] == OLD
    verbose = cli_text(capsys, ["--metastore", url, "show", "write-ids", "db.x", "--each-id"])
    lines = verbose.splitlines()
    assert lines[0] == "db.x:5:2:2:3,4"
    assert any(l.split()[:4] == ["3", "3", "ABORTED", "carol"] for l in lines)
    assert "2020-09-13 12:26:40.000" in verbose  # OLD in UTC
    # the global -v gives the same rows
    verbose2 = cli_text(capsys, ["-v", "--metastore", url, "show", "write-ids", "db.x"])
    assert verbose2 == verbose


@pytest.mark.parametrize("hive_version", [4], ids=["hive4"])
def test_hive4_gap_handling(metastore, hive_version):
    """Hive 4: ids missing between rows younger than 1 s are open; older gaps are committed."""
    url, rec = metastore
    now = 1_700_000_000_000
    # TXNS: 0 'c' (seed, old), 1 'c' old, 2 'o' old, [3, 4 missing], 5 'o' young (started now-100)
    insert_txn(rec, 1, "c", OLD)
    insert_txn(rec, 2, "o", OLD)
    insert_txn(rec, 5, "o", now - 100)
    txns, _ = table_snapshot(url, "db.t", now_ms=now)
    # row 5 is young: previous row id 2, so 3 and 4 are open gaps -> open {2,3,4,5}
    assert str(txns) == "5:2:2,3,4,5:"
    # 2 s later row 5 is old: the gap 3..4 counts as committed
    txns, _ = table_snapshot(url, "db.t", now_ms=now + 2_000)
    assert str(txns) == "5:2:2,5:"
    # a write of gap txn 4 is not visible to the young-window reader
    insert_row(rec, "TXN_TO_WRITE_ID", T2W_TXNID=4, T2W_DATABASE="db", T2W_TABLE="g", T2W_WRITEID=1)
    insert_row(rec, "TXN_TO_WRITE_ID", T2W_TXNID=1, T2W_DATABASE="db", T2W_TABLE="g", T2W_WRITEID=2)
    insert_row(rec, "NEXT_WRITE_ID", NWI_DATABASE="db", NWI_TABLE="g", NWI_NEXT=3)
    _, wl = table_snapshot(url, "db.g", now_ms=now)
    assert str(wl) == "db.g:2:1:1:"
    _, wl = table_snapshot(url, "db.g", now_ms=now + 2_000)
    assert str(wl) == f"db.g:2:{LONG_MAX}::"


@pytest.mark.parametrize("hive_version", [4], ids=["hive4"])
def test_hive4_read_only_txn_not_an_exception(metastore, hive_version):
    url, rec = metastore
    rec.open_txn(txn_type=2, now_ms=OLD)  # READ_ONLY
    t2 = rec.open_txn(now_ms=OLD)
    txns, _ = table_snapshot(url, "db.t")
    assert txns.hwm == 2 and txns.open == (t2,)


def _collapse_rows(rec, hive_version, first_state):
    """Only invalid writes remain in TXN_TO_WRITE_ID (committed rows already cleaned):
    first_state='a': w3 by aborted txn 7, w5 by open txn 9; 'o': w2 by open txn 8, w4 by aborted txn 7."""
    if hive_version == 3:
        _set(rec, "NEXT_TXN_ID", NTXN_NEXT=10)
    else:
        insert_txn(rec, 6, "c", OLD)
    rows = [(7, "a", 3), (9, "o", 5)] if first_state == "a" else [(8, "o", 2), (7, "a", 4)]
    for txn, st, wid in rows:
        insert_txn(rec, txn, st, OLD)
        insert_row(rec, "TXN_TO_WRITE_ID", T2W_TXNID=txn, T2W_DATABASE="db", T2W_TABLE="t", T2W_WRITEID=wid)
    if hive_version == 4 and first_state == "o":
        insert_txn(rec, 9, "c", OLD)
    insert_row(rec, "NEXT_WRITE_ID", NWI_DATABASE="db", NWI_TABLE="t", NWI_NEXT=6)


def test_collapse_lowest_aborted(metastore, hive_version):
    url, rec = metastore
    _collapse_rows(rec, hive_version, "a")
    _, wl = table_snapshot(url, "db.t")
    if hive_version == 3:
        # no collapse: hwm 5, w3 aborted, w5 open
        assert str(wl) == "db.t:5:5:5:3"
    else:
        # Hive 4 collapse: hwm = lowest invalid (3), exceptions [3] aborted, minOpenWriteId stays 5
        assert str(wl) == "db.t:3:5::3"
        assert wl.hwm == 3 and wl.aborted == (3,) and wl.open == ()
        assert not wl.is_valid(3) and wl.is_valid(2) and not wl.is_valid(4)


def test_collapse_lowest_open(metastore, hive_version):
    url, rec = metastore
    _collapse_rows(rec, hive_version, "o")
    _, wl = table_snapshot(url, "db.t")
    if hive_version == 3:
        # write hwm = max(T2W_WRITEID) = 4 (rows w2, w4); w2 open, w4 aborted
        assert str(wl) == "db.t:4:2:2:4"
    else:
        # collapse to the lowest invalid write id 2, which is the lowest open one -> not aborted
        assert str(wl) == "db.t:2:2:2:"
